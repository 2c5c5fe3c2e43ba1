#!/bin/bash
# Does reading counters slow the data plane? psb server and worker over memif (one core
# each) run ps-lite's PUSH_PULL at full speed, alternately without and with a 10 Hz scrape
# of every export of both processes (DPDK telemetry /psb/counters, the control socket's
# counters, the Prometheus endpoint, and a JSON-lines counters file written every 0.1 s).
# Prints the median goodput of each and their ratio; then the same comparison inside one
# long run, 2 s windows with and without the scrape alternating (paired ratios). Then, under
# the same full load, the latency of status requests on the control socket and of whole
# `psbctl status` calls.
#
#   scripts/bench/ctl.sh [--runs N] [--seconds S] [--len BYTES] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."

RUNS=7
SECS=4
LEN=4096
OUT=""
BUILD=${PSB_BUILD:-build}
while [ $# -gt 0 ]; do
	case "$1" in
	--runs) RUNS=$2; shift ;;
	--seconds) SECS=$2; shift ;;
	--len) LEN=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h|--help) sed -n '2,11p' "$0"; exit 0 ;;
	*) echo "ctl.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
PSB=$BUILD/app/psb/psb
PSBCTL=$BUILD/app/psbctl/psbctl
for b in "$PSB" "$PSBCTL"; do
	[ -x "$b" ] || { echo "ctl.sh: $b not built (meson setup $BUILD && ninja -C $BUILD)" >&2; exit 1; }
done
[ -n "$OUT" ] || OUT=results/ctl-$(date +%Y%m%d-%H%M%S)
[ -e "$OUT/summary.json" ] && { echo "ctl.sh: $OUT already holds results" >&2; exit 2; }
mkdir -p "$OUT/raw"
TMP=$(mktemp -d /tmp/psb-ctlbench-XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP" /var/run/dpdk/psbc-$$-*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
n=0

# start_pair SCRAPE: server on cpu 0, worker on cpu 1; the worker waits for "start".
start_pair() {
	local scrape=$1 extra_s=() extra_w=()
	n=$((n + 1))
	SOCK=$TMP/m$n.sock
	SP=psbc-$$-s$n
	WP=psbc-$$-w$n
	if [ "$scrape" = 1 ]; then
		SPROM=$(free_port)
		WPROM=$(free_port)
		extra_s=(--prometheus "127.0.0.1:$SPROM" --counters-file "$TMP/s$n.jsonl" --counters-every 0.1)
		extra_w=(--prometheus "127.0.0.1:$WPROM" --counters-file "$TMP/w$n.jsonl" --counters-every 0.1)
	fi
	"$PSB" --port "memif:server:$SOCK" --ip 198.18.0.1 --async -l 0 --file-prefix "$SP" \
		--ctl "$TMP/s$n.ctl" -q "${extra_s[@]}" > "$TMP/srv$n.log" 2>&1 &
	PIDS+=($!)
	SPID=$!
	# the control socket appears once the port runs
	for _ in $(seq 50); do [ -S "$TMP/s$n.ctl" ] && break; sleep 0.1; done
	"$PSB" --role worker --port "memif:client:$SOCK" --ip 198.18.0.2 --server 198.18.0.1 \
		--async -l 1 --file-prefix "$WP" --ctl "$TMP/w$n.ctl" --wait -q "${extra_w[@]}" \
		> "$TMP/wk$n.log" 2>&1 &
	PIDS+=($!)
	WPID=$!
	for _ in $(seq 50); do [ -S "$TMP/w$n.ctl" ] && break; sleep 0.1; done
}

stop_pair() {
	"$PSBCTL" --ctl "$TMP/w$n.ctl" quit >/dev/null 2>&1 || kill -TERM $WPID 2>/dev/null || true
	wait $WPID 2>/dev/null || true
	kill -TERM $SPID 2>/dev/null || true
	wait $SPID 2>/dev/null || true
}

# The experiment each run starts on the worker.
cat > "$TMP/exp.json" <<EOF
{"name": "ctlbench", "kind": "pushpull", "pushpull": {"len": $LEN, "repeat": 1000000000,
 "duration": "${SECS}s", "keys": 40}, "output": {"dir": "$TMP/results", "overwrite": true,
 "log_every": "0s"}}
EOF

one_run() {	# one_run SCRAPE TAG
	local scrape=$1 tag=$2 spid=""
	start_pair "$scrape"
	if [ "$scrape" = 1 ]; then
		scripts/bench/ctl_scrape.py "$TMP/w$n.ctl" "$TMP/s$n.ctl" "/var/run/dpdk/$WP/dpdk_telemetry.v2" \
			"/var/run/dpdk/$SP/dpdk_telemetry.v2" "$WPROM" "$SPROM" > "$TMP/scrape$n.log" 2>&1 &
		spid=$!
		PIDS+=($spid)
	fi
	"$PSBCTL" --ctl "$TMP/w$n.ctl" start "$TMP/exp.json" --wait > "$TMP/start$n.log" 2>&1 ||
		{ cat "$TMP/start$n.log" "$TMP/wk$n.log" >&2; exit 1; }
	if [ -n "$spid" ]; then
		kill $spid 2>/dev/null || true
		wait $spid 2>/dev/null || true
		SCRAPES=$(tail -1 "$TMP/scrape$n.log")
		[ "${SCRAPES:-0}" -ge $((SECS * 8)) ] ||
			{ echo "scraper managed only ${SCRAPES:-0} rounds:" >&2; cat "$TMP/scrape$n.log" >&2; exit 1; }
	fi
	cp "$TMP/results/ctlbench/result.json" "$OUT/raw/$tag.json"
	stop_pair
}

echo "counter scraping vs goodput: $RUNS runs of ${SECS}s each way, $LEN B PUSH_PULL, async"
for r in $(seq "$RUNS"); do
	one_run 0 "plain-$r"
	one_run 1 "scraped-$r"
	printf '\r  %d/%d' "$r" "$RUNS" >&2
done
echo >&2

# Paired windows inside one run: the same two processes alternate 2 s windows without and
# with the scrape (order swapped every pair), so the VM's run-to-run modes cancel out.
PAIRS=${PAIRS:-12}
start_pair 1
sed -e "s/\"duration\": \"${SECS}s\"/\"duration\": \"$((PAIRS * 4 + 10))s\"/" "$TMP/exp.json" \
	> "$TMP/paired.json"
"$PSBCTL" --ctl "$TMP/w$n.ctl" start "$TMP/paired.json" > /dev/null
sleep 1
scripts/bench/ctl_scrape.py "$TMP/w$n.ctl" "$TMP/s$n.ctl" "/var/run/dpdk/$WP/dpdk_telemetry.v2" \
	"/var/run/dpdk/$SP/dpdk_telemetry.v2" "$WPROM" "$SPROM" --paired "$PAIRS" > "$OUT/raw/paired.json"
"$PSBCTL" --ctl "$TMP/w$n.ctl" stop > /dev/null || true
stop_pair

# status latency under full load: one long run, control-socket round trips and psbctl calls.
start_pair 0
sed -e "s/\"duration\": \"${SECS}s\"/\"duration\": \"30s\"/" "$TMP/exp.json" > "$TMP/long.json"
"$PSBCTL" --ctl "$TMP/w$n.ctl" start "$TMP/long.json" > /dev/null
sleep 1
python3 - "$TMP/w$n.ctl" "$PSBCTL" > "$OUT/raw/status-latency.json" <<'PY'
import json, socket, subprocess, sys, time
path, psbctl = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX); s.connect(path); f = s.makefile("rw")
rtt = []
for i in range(1000):
    t0 = time.perf_counter()
    f.write('{"cmd":"status"}\n'); f.flush()
    r = json.loads(f.readline())
    rtt.append((time.perf_counter() - t0) * 1e3)
    assert r["ok"] and r["experiment"]["state"] == "running", r
    time.sleep(0.005)
calls = []
for i in range(100):
    t0 = time.perf_counter()
    subprocess.run([psbctl, "--ctl", path, "status"], check=True, stdout=subprocess.DEVNULL)
    calls.append((time.perf_counter() - t0) * 1e3)
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
out = {k: {"n": len(v), "p50_ms": pct(v, 50), "p99_ms": pct(v, 99), "max_ms": max(v)}
       for k, v in (("socket_status", rtt), ("psbctl_status", calls))}
print(json.dumps(out))
PY
"$PSBCTL" --ctl "$TMP/w$n.ctl" stop > /dev/null || true
stop_pair

python3 - "$OUT" "$RUNS" "$SECS" "$LEN" <<'PY'
import json, os, statistics, sys
out, runs, secs, length = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
g = {"plain": [], "scraped": []}
for k in g:
    for r in range(1, runs + 1):
        d = json.load(open(os.path.join(out, "raw", "%s-%d.json" % (k, r))))
        g[k].append(d["rows"][0]["goodput_gbps"])
med = {k: statistics.median(v) for k, v in g.items()}
lat = json.load(open(os.path.join(out, "raw", "status-latency.json")))
paired = json.load(open(os.path.join(out, "raw", "paired.json")))
summary = {"len": int(length), "seconds": float(secs), "runs": runs, "goodput_gbps": g,
           "median_gbps": med, "ratio": med["scraped"] / med["plain"], "paired": paired,
           "status_latency": lat}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
lines = ["| | median goodput (Gbps) | runs |", "|---|---|---|",
         "| no scraping | %.2f | %s |" % (med["plain"], " ".join("%.1f" % x for x in g["plain"])),
         "| 10 Hz scrape of every export | %.2f | %s |" % (med["scraped"], " ".join("%.1f" % x for x in g["scraped"])),
         "| ratio scraped / plain | **%.3f** | |" % summary["ratio"], "",
         "| paired 2 s windows in one run (%d pairs) | median ratio with / without scrape |" % paired["pairs"],
         "|---|---|",
         "| requests/s, scrape on vs off | **%.4f** (pairs: %s) |" % (paired["median_pair_ratio"],
             " ".join("%.3f" % x for x in paired["pair_ratios"])), "",
         "| under full load | n | p50 (ms) | p99 (ms) | max (ms) |", "|---|---|---|---|---|"]
for k, label in (("socket_status", "status request on the control socket"),
                 ("psbctl_status", "`psbctl status` (whole process)")):
    v = lat[k]
    lines.append("| %s | %d | %.3f | %.3f | %.3f |" % (label, v["n"], v["p50_ms"], v["p99_ms"], v["max_ms"]))
open(os.path.join(out, "summary.md"), "w").write("\n".join(lines) + "\n")
print("\n".join(lines))
PY
echo "results in $OUT"
