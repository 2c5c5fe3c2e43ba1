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
bench_about "$BUILD" "server cpu $SRV_CPU, worker cpu $WK_CPU (psb -l, kernel baseline taskset -c); psb over memif (psb on hugepages while free, as by default), kernel baseline over loopback UDP" \
	"$COMMAND" > "$OUT/ABOUT.txt"
mkdir -p "$OUT/raw"
python3 -c 'import json, sys; print(json.dumps({"sizes": sys.argv[1].split(), "modes": sys.argv[2].split(), "runs": int(sys.argv[3])}))' \
	"$SIZES" "$MODES" "$RUNS" > "$OUT/raw/plan.json"
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

# the summary comes from the raw data alone (check_docs.py makes it again from them)
python3 scripts/bench/summarize.py pushpull "$OUT"
