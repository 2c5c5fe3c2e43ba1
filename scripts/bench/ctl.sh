#!/bin/bash
# Does reading counters slow the data plane, and how fast does psb answer under full load?
#
# A psb server and a psb worker over memif (one core each) run ps-lite's PUSH_PULL flat out.
# 1. Paired windows inside one experiment: windows without and with monitoring alternate
#    (ABBA). Monitoring = psb-scrape reading every export of both processes at 10 Hz
#    (control-socket counters, DPDK telemetry's sections, the Prometheus page) while both
#    write their counters file at 10 Hz. Prints the median ratio of the worker's requests/s
#    with/without (bootstrap 95 % interval), what serving the scrape cost each process's
#    lcore (psb's own control-plane cycle counters), and psb-scrape's CPU time.
# 2. Under the same load: status on an open control socket, on a fresh connection, and a
#    whole `psbctl status` process (with /bin/true started the same way as the floor);
#    then the same with --yield 0, to show what yielding the CPU buys.
#
#   scripts/bench/ctl.sh [--pairs N] [--window S] [--len BYTES] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

PAIRS=60
WINDOW=1
LEN=4096
BENCH_OPTS=([--pairs]=PAIRS [--window]=WINDOW [--len]=LEN [--out]=OUT)
bench_options ctl.sh "$@"
bench_built "$PSB" "$PSBCTL"
# the scraper is this tree's, whichever psb $BUILD holds (provenance.sh)
SCRAPE=$(bench_scraper ctl.sh)
bench_out ctl
{
	bench_about "$BUILD" "server lcore 0, worker lcore 1, memif (psb on hugepages while free, as by default); psb-scrape unpinned" \
		"$COMMAND"
	bench_scraper_about "$SCRAPE"
} > "$OUT/ABOUT.txt"
bench_scratch psbc
. scripts/bench/pair.sh

# pushpull_doc SECONDS: the worker's experiment.
pushpull_doc() {
	cat > "$TMP/exp.json" <<EOF
{"name": "ctlbench", "kind": "pushpull", "pushpull": {"len": $LEN, "repeat": 1000000000000,
 "duration": "${1}s", "keys": 40}, "output": {"dir": "results", "overwrite": true,
 "log_every": "0s", "counters_file": "counters.jsonl", "counters_every": "3600s"}}
EOF
}
# both keep a counters file, written only while monitored (ctl_paired.py sets the period)
cat > "$TMP/serve.json" <<EOF
{"name": "ctlbench-serve", "kind": "serve", "output": {"dir": "results",
 "overwrite": true, "counters_file": "serve-counters.jsonl", "counters_every": "3600s"}}
EOF

# 1. Paired windows.
echo "monitoring vs goodput: $PAIRS pairs of ${WINDOW}s windows, $LEN B PUSH_PULL, async" >&2
start_pair
pushpull_doc "$(python3 -c "print(int($PAIRS * 2 * ($WINDOW + 0.2) + 30))")"
"$PSBCTL" --ctl "$WCTL" start "$TMP/exp.json" > /dev/null
sleep 2
scripts/bench/ctl_paired.py --pairs "$PAIRS" --window "$WINDOW" --scrape "$SCRAPE" \
	--ctl "$WCTL" --ctl "$SCTL" "ctl:$WCTL" "ctl:$SCTL" \
	"tel:/var/run/dpdk/$WP/dpdk_telemetry.v2" "tel:/var/run/dpdk/$SP/dpdk_telemetry.v2" \
	"http:127.0.0.1:$WPROM" "http:127.0.0.1:$SPROM" > "$OUT/raw/paired.json"
"$PSBCTL" --ctl "$WCTL" stop > /dev/null || true
stop_pair

# 2. Status latency under full load, with the default --yield and with --yield 0.
latency() {	# latency TAG EXTRA...
	local tag=$1
	shift
	start_pair "$@"
	pushpull_doc 60
	"$PSBCTL" --ctl "$WCTL" start "$TMP/exp.json" > /dev/null
	sleep 2
	# what the worker's control plane counted meanwhile (throttled_passes: its share spent)
	"$PSBCTL" --ctl "$WCTL" --json counters control > "$OUT/raw/status-$tag-control-0.json"
	python3 - "$WCTL" "$PSBCTL" > "$OUT/raw/status-$tag.json" <<'PY'
import json, socket, subprocess, sys, time
path, psbctl = sys.argv[1], sys.argv[2]

def status(f):
    f.write('{"cmd":"status"}\n')
    f.flush()
    r = json.loads(f.readline())
    assert r["ok"] and r["experiment"]["state"] == "running", r

def timed(fn, n, pause=0.005):
    v = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        v.append((time.perf_counter() - t0) * 1e3)
        time.sleep(pause)
    return v

s = socket.socket(socket.AF_UNIX); s.connect(path); f = s.makefile("rw")
def fresh():
    c = socket.socket(socket.AF_UNIX); c.connect(path)
    status(c.makefile("rw")); c.close()
run = lambda argv: subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
res = {"socket_status": timed(lambda: status(f), 1000),
       "fresh_connection_status": timed(fresh, 300),
       "psbctl_status": timed(lambda: run([psbctl, "--ctl", path, "status"]), 200, 0.01),
       "bin_true": timed(lambda: run(["/bin/true"]), 200, 0.01)}
def pct(v, p):
    v = sorted(v); return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]
print(json.dumps({k: {"n": len(v), "p50_ms": pct(v, 50), "p90_ms": pct(v, 90),
                      "p99_ms": pct(v, 99), "max_ms": max(v)} for k, v in res.items()}))
PY
	"$PSBCTL" --ctl "$WCTL" --json counters control > "$OUT/raw/status-$tag-control-1.json"
	"$PSBCTL" --ctl "$WCTL" stop > /dev/null || true
	stop_pair
}
echo "status latency under full load (default --yield, then --yield 0)" >&2
latency yield
latency noyield --yield 0

# the summary comes from the raw data alone (check_docs.py makes it again from them)
bench_plan "len=$LEN"
bench_finish ctl
echo "results in $OUT"
