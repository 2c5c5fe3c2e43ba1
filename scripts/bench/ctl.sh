#!/bin/bash
# Does reading counters slow the data plane, and how fast does psb answer under full load?
#
# A psb server and a psb worker over memif (one core each) run ps-lite's PUSH_PULL flat out.
# 1. Paired windows inside one experiment: windows without and with monitoring alternate
#    (ABBA). Monitoring = psb-scrape reading every export of both processes at 10 Hz
#    (control-socket counters, DPDK telemetry /psb/counters, the Prometheus page) while both
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
. scripts/bench/provenance.sh
COMMAND="scripts/bench/ctl.sh $*"

PAIRS=60
WINDOW=1
LEN=4096
OUT=""
BUILD=${PSB_BUILD:-build}
while [ $# -gt 0 ]; do
	case "$1" in
	--pairs) PAIRS=$2; shift ;;
	--window) WINDOW=$2; shift ;;
	--len) LEN=$2; shift ;;
	--out) OUT=$2; shift ;;
	-h|--help) sed -n '2,16p' "$0"; exit 0 ;;
	*) echo "ctl.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
PSB=$BUILD/app/psb/psb
PSBCTL=$BUILD/app/psbctl/psbctl
SCRAPE=$BUILD/app/psb-scrape/psb-scrape
for b in "$PSB" "$PSBCTL" "$SCRAPE"; do
	[ -x "$b" ] || { echo "ctl.sh: $b not built (meson setup $BUILD && ninja -C $BUILD)" >&2; exit 1; }
done
[ -n "$OUT" ] || OUT=results/ctl-$(date +%Y%m%d-%H%M%S)
[ -e "$OUT/summary.json" ] && { echo "ctl.sh: $OUT already holds results" >&2; exit 2; }
mkdir -p "$OUT/raw"
{
	echo "revision $(bench_revision "$BUILD")"
	bench_machine
	echo "command $COMMAND"
} > "$OUT/ABOUT.txt"
NAME=ctl.sh
TAG=psbc
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
	"$PSBCTL" --ctl "$WCTL" stop > /dev/null || true
	stop_pair
}
echo "status latency under full load (default --yield, then --yield 0)" >&2
latency yield
latency noyield --yield 0

python3 - "$OUT" "$LEN" <<'PY'
import json, os, sys
out, length = sys.argv[1], int(sys.argv[2])
p = json.load(open(os.path.join(out, "raw", "paired.json")))
lat = {t: json.load(open(os.path.join(out, "raw", "status-%s.json" % t))) for t in ("yield", "noyield")}
sc = p["scraper"]
summary = {"len": length, "paired": {k: v for k, v in p.items() if k != "windows"},
           "status_latency": lat}
json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
names = ["worker", "server"]
L = ["| monitoring: every export of both processes at %d Hz | |" % p["hz"], "|---|---|",
     "| worker requests/s, windows without (median) | %.0f |" % p["requests_per_s"]["off"],
     "| worker requests/s, windows with (median) | %.0f |" % p["requests_per_s"]["on"],
     "| paired ratio with / without, median of %d pairs of %g s [95%% CI] | **%.3f** [%.3f, %.3f] |"
     % (p["pairs"], p["window_s"], p["median_ratio"], p["ci95"][0], p["ci95"][1])]
for i, nm in enumerate(names):
    L.append("| %s lcore time serving the control plane, without → with | %.2f %% → %.2f %% |"
             % (nm, p["control_pct"]["off"][i], p["control_pct"]["on"][i]))
L.append("| psb-scrape's own CPU (%d rounds of %d requests) | %.2f %% of one CPU |"
         % (sc["rounds"], len(p["targets"]), 100.0 * sc["cpu_s"] / (p["pairs"] * p["window_s"])))
L += ["", "| under full load | --yield | n | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) |",
      "|---|---|---|---|---|---|---|"]
for key, label in (("socket_status", "status on an open control socket"),
                   ("fresh_connection_status", "status on a fresh connection"),
                   ("psbctl_status", "`psbctl status` (whole process)"),
                   ("bin_true", "`/bin/true` started the same way (floor)")):
    for tag, y in (("yield", "200 µs"), ("noyield", "0 (never)")):
        v = lat[tag][key]
        L.append("| %s | %s | %d | %.3f | %.3f | %.3f | %.3f |" %
                 (label, y, v["n"], v["p50_ms"], v["p90_ms"], v["p99_ms"], v["max_ms"]))
open(os.path.join(out, "summary.md"), "w").write("\n".join(L) + "\n")
print("\n".join(L))
PY
echo "results in $OUT"
