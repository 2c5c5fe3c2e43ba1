#!/bin/bash
# ps-lite's test_benchmark workload: psb (server and worker over memif, one
# core each) against the kernel-socket baseline (psb-ksrv + psb-kbench over
# loopback UDP, one core each), in the same invocation. Prints medians of
# several runs and the psb/baseline ratios; writes JSON and Markdown.
#
#   scripts/bench/pushpull.sh [--quick] [--runs N] [--seconds S]
#                             [--sizes "64 4096 ..."] [--modes "1 2 3"] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/provenance.sh
COMMAND="scripts/bench/pushpull.sh $*"

# shellcheck source=../../config/pushpull-bench.conf
. config/pushpull-bench.conf
OUT=""
EXTRAS=1
BUILD=${PSB_BUILD:-build}

while [ $# -gt 0 ]; do
	case "$1" in
	--quick) RUNS=$QUICK_RUNS; SECONDS_PER_RUN=$QUICK_SECONDS; SIZES=$QUICK_SIZES
		MODES=$QUICK_MODES; EXTRAS=0 ;;
	--runs) RUNS=$2; shift ;;
	--seconds) SECONDS_PER_RUN=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--modes) MODES=$2; shift ;;
	--out) OUT=$2; shift ;;
	--no-extras) EXTRAS=0 ;;
	-h|--help) sed -n '2,9p' "$0"; exit 0 ;;
	*) echo "pushpull.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done

PSB=$BUILD/app/psb/psb
KSRV=$BUILD/app/psb-ksrv/psb-ksrv
KBENCH=$BUILD/app/psb-ksrv/psb-kbench
AGGBENCH=$BUILD/app/psb-aggbench/psb-aggbench
for b in "$PSB" "$KSRV" "$KBENCH" "$AGGBENCH"; do
	[ -x "$b" ] || { echo "pushpull.sh: $b not built (run: meson setup $BUILD && ninja -C $BUILD)" >&2; exit 1; }
done
[ -n "$OUT" ] || OUT=results/pushpull-$(date +%Y%m%d-%H%M%S)
if [ -e "$OUT/summary.json" ] || [ -d "$OUT/raw" ]; then
	echo "pushpull.sh: $OUT already holds results; give another --out (or remove it)" >&2
	exit 2
fi
mkdir -p "$OUT"
TMP=$(mktemp -d /tmp/psb-bench-XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$TMP" /var/run/dpdk/psbb-$$-*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

CORES=$(nproc)
SRV_CPU=0
WK_CPU=$(( CORES > 1 ? 1 : 0 ))
n=0

# psb_run TAG LEN MODE KEYS [extra worker args...]: one psb server + worker over memif.
psb_run() {
	local tag=$1 len=$2 mode=$3 keys=$4; shift 4
	local sock=$TMP/m$n.sock res=$OUT/raw/$tag.json
	n=$((n + 1))
	mkdir -p "$OUT/raw"
	"$PSB" --role server --port "memif:server:$sock" --ip 198.18.0.1 --async -l $SRV_CPU \
		--file-prefix "psbb-$$-s$n" -q > "$TMP/srv.log" 2>&1 &
	local spid=$!
	PIDS+=($spid)
	local i
	# the server's control socket appears once its port runs
	for i in $(seq 50); do [ -S "/var/run/dpdk/psbb-$$-s$n/psb.ctl" ] && break; sleep 0.1; done
	if ! timeout $((SECONDS_PER_RUN + 60)) "$PSB" --role worker --port "memif:client:$sock" \
		--ip 198.18.0.2 --server 198.18.0.1 --async -l $WK_CPU --file-prefix "psbb-$$-w$n" \
		--len "$len" --repeat 1000000000 --mode "$mode" --keys "$keys" \
		--duration "$SECONDS_PER_RUN" --results "$res" -q "$@" > "$TMP/wk.log" 2>&1; then
		echo "psb run $tag failed:" >&2
		cat "$TMP/wk.log" "$TMP/srv.log" >&2
		exit 1
	fi
	kill -TERM $spid 2>/dev/null || true
	wait $spid 2>/dev/null || true
}

# kernel_run TAG LEN MODE KEYS [extra args...]: psb-ksrv + psb-kbench over loopback.
kernel_run() {
	local tag=$1 len=$2 mode=$3 keys=$4; shift 4
	local port=$((20000 + n)) res=$OUT/raw/$tag.json
	n=$((n + 1))
	mkdir -p "$OUT/raw"
	taskset -c $SRV_CPU "$KSRV" --ip 127.0.0.1 --port $port --async --seg-size 8932 \
		> "$TMP/ksrv.log" 2>&1 &
	local spid=$!
	PIDS+=($spid)
	sleep 0.2
	if ! timeout $((SECONDS_PER_RUN + 60)) taskset -c $WK_CPU "$KBENCH" \
		--server 127.0.0.1:$port --async --seg-size 8932 --keys "$keys" \
		--duration "$SECONDS_PER_RUN" --results "$res" "$@" "$len" 1000000000 "$mode" \
		> "$TMP/kb.log" 2>&1; then
		echo "kernel run $tag failed:" >&2
		cat "$TMP/kb.log" "$TMP/ksrv.log" >&2
		exit 1
	fi
	kill -TERM $spid 2>/dev/null || true
	wait $spid 2>/dev/null || true
}

echo "psb push/pull benchmark: $RUNS runs of ${SECONDS_PER_RUN}s per point; server on cpu $SRV_CPU, worker on cpu $WK_CPU"
echo "results in $OUT"
{
	echo "revision $(bench_revision "$BUILD")"
	bench_machine
	echo "pinning server cpu $SRV_CPU, worker cpu $WK_CPU; psb over memif, kernel baseline over loopback UDP"
	echo "command $COMMAND"
} > "$OUT/ABOUT.txt"
total=$(( $(echo $SIZES | wc -w) * $(echo $MODES | wc -w) * RUNS * 2 ))
done_runs=0
for size in $SIZES; do
	for mode in $MODES; do
		for r in $(seq "$RUNS"); do
			psb_run "psb-$size-$mode-$r" "$size" "$mode" "$KEYS"
			kernel_run "kernel-$size-$mode-$r" "$size" "$mode" "$KEYS"
			done_runs=$((done_runs + 2))
			printf '\r  %d/%d runs' $done_runs $total >&2
		done
	done
done
echo >&2

if [ $EXTRAS = 1 ]; then
	echo "latency (64 B, one key, one request at a time) and pipelined 64 B rate..." >&2
	for r in $(seq "$RUNS"); do
		for mode in 2 3; do
			psb_run "lat-psb-$mode-$r" 64 "$mode" 1
			kernel_run "lat-kernel-$mode-$r" 64 "$mode" 1
		done
		psb_run "rate-psb-$r" 64 1 "$RATE_KEYS"
		kernel_run "rate-kernel-$r" 64 1 "$RATE_KEYS"
	done
	"$AGGBENCH" --mb 64 --runs "$RUNS" --json "$OUT/aggbench.json" > "$OUT/aggbench.txt"
fi

RATE_KEYS=$RATE_KEYS python3 - "$OUT" "$RUNS" "$SIZES" "$MODES" "$EXTRAS" <<'PY'
import json, os, statistics, sys
out, runs, sizes, modes, extras = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5] == "1"
names = {"0": "PUSH_THEN_PULL", "1": "PUSH_PULL", "2": "PUSH_ONLY", "3": "PULL_ONLY"}

def load(tag):
    return [json.load(open(f"{out}/raw/{tag}-{r}.json")) for r in range(1, runs + 1)]

def med(rs, f):
    return statistics.median(f(x) for x in rs)

def human(n):
    for u, d in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= d and n % d == 0:
            return f"{n // d} {u}"
    return f"{n} B"

rows, summary = [], {"runs": runs, "points": []}
hdr = ("size", "mode", "psb Gbps", "kernel Gbps", "ratio", "psb p50 us", "psb p99 us", "kernel p50 us", "kernel p99 us")
for size in sizes:
    for mode in modes:
        p, k = load(f"psb-{size}-{mode}"), load(f"kernel-{size}-{mode}")
        pt = {
            "size": int(size), "mode": int(mode), "mode_name": names[mode],
            "psb_gbps": med(p, lambda x: x["goodput_gbps"]),
            "kernel_gbps": med(k, lambda x: x["goodput_gbps"]),
            "psb_p50_us": med(p, lambda x: x["rtt_us"]["p50"]), "psb_p99_us": med(p, lambda x: x["rtt_us"]["p99"]),
            "kernel_p50_us": med(k, lambda x: x["rtt_us"]["p50"]), "kernel_p99_us": med(k, lambda x: x["rtt_us"]["p99"]),
            "psb_failed": sum(x["failed"] for x in p), "psb_retries": sum(x["retries"] for x in p),
        }
        pt["ratio"] = pt["psb_gbps"] / pt["kernel_gbps"] if pt["kernel_gbps"] else float("inf")
        summary["points"].append(pt)
        rows.append((human(int(size)), f"{mode} {names[mode]}", f"{pt['psb_gbps']:.2f}", f"{pt['kernel_gbps']:.2f}",
                     f"{pt['ratio']:.1f}x", f"{pt['psb_p50_us']:.1f}", f"{pt['psb_p99_us']:.1f}",
                     f"{pt['kernel_p50_us']:.1f}", f"{pt['kernel_p99_us']:.1f}"))

def table(hdr, rows):
    w = [max(len(str(r[i])) for r in [hdr] + rows) for i in range(len(hdr))]
    line = lambda r: "| " + " | ".join(str(c).rjust(w[i]) for i, c in enumerate(r)) + " |"
    return "\n".join([line(hdr), "|" + "|".join("-" * (x + 2) for x in w) + "|"] + [line(r) for r in rows])

text = ["## Goodput (ps-lite formula: 8 x len x keys x iterations / time), median of %d runs, 40 keys" % runs, "", table(hdr, rows), ""]
if extras:
    lrows = []
    for mode in ("2", "3"):
        p, k = load(f"lat-psb-{mode}"), load(f"lat-kernel-{mode}")
        d = {"mode": names[mode],
             "psb_p50_us": med(p, lambda x: x["rtt_us"]["p50"]), "psb_p99_us": med(p, lambda x: x["rtt_us"]["p99"]),
             "kernel_p50_us": med(k, lambda x: x["rtt_us"]["p50"]), "kernel_p99_us": med(k, lambda x: x["rtt_us"]["p99"])}
        summary.setdefault("latency", []).append(d)
        lrows.append((names[mode], f"{d['psb_p50_us']:.1f}", f"{d['psb_p99_us']:.1f}", f"{d['kernel_p50_us']:.1f}", f"{d['kernel_p99_us']:.1f}"))
    text += ["## Round trip of one 64 B request at a time (us), median of runs", "",
             table(("request", "psb p50", "psb p99", "kernel p50", "kernel p99"), lrows), ""]
    p, k = load("rate-psb"), load("rate-kernel")
    rate = {"psb_ops": med(p, lambda x: x["requests_per_s"]), "kernel_ops": med(k, lambda x: x["requests_per_s"])}
    summary["rate_64b"] = rate
    text += ["## 64 B PUSHPULL requests per second, %s keys in flight, one server core" % os.environ.get("RATE_KEYS", "256"), "",
             table(("", "psb", "kernel", "ratio"), [("requests/s", f"{rate['psb_ops']:,.0f}", f"{rate['kernel_ops']:,.0f}",
                    f"{rate['psb_ops'] / rate['kernel_ops']:.1f}x")]), ""]
    agg = json.load(open(f"{out}/aggbench.json"))
    summary["aggbench"] = agg
    text += ["## Server-side summation vs a plain `a += b` loop (one core, GB/s of gradient input)", "",
             "```", open(f"{out}/aggbench.txt").read().rstrip(), "```", ""]
md = "\n".join(text)
print(md)
with open(f"{out}/summary.md.tmp", "w") as f:
    f.write(md + "\n")
os.replace(f"{out}/summary.md.tmp", f"{out}/summary.md")
with open(f"{out}/summary.json.tmp", "w") as f:
    json.dump(summary, f, indent=2)
os.replace(f"{out}/summary.json.tmp", f"{out}/summary.json")
PY
