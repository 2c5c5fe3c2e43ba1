#!/bin/bash
# ps-lite's test_benchmark workload: psb (server and worker over memif, one
# core each) against the kernel-socket baseline (psb-ksrv + psb-kbench over
# loopback UDP, one core each), in the same invocation. Prints medians of
# several runs and the psb/baseline ratios; writes JSON and Markdown. With --pslite DIR (a
# ps-lite checkout, built in a scratch directory: ps-lite's code never enters the tree) ps-lite
# itself runs the same workload beside them (tests/pslite/bench_pushpull.cc: its scheduler,
# its server on the server's CPU and the worker on the worker's, ZeroMQ/TCP on loopback), and
# the tables add psb/ps-lite; with the extras, 1 MB PUSH_PULL goodput is also shown as a
# fraction of the machine's `a += b` (psb-aggbench, same invocation), the bound for a server
# that sums every byte it is pushed.
#
#   scripts/bench/pushpull.sh [--quick] [--runs N] [--seconds S]
#                             [--sizes "64 4096 ..."] [--modes "1 2 3"] [--pslite DIR]
#                             [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

# shellcheck source=../../config/pushpull-bench.conf
. config/pushpull-bench.conf
EXTRAS=1
PSLITE_DIR=
BENCH_OPTS=([--runs]=RUNS [--seconds]=SECONDS_PER_RUN [--sizes]=SIZES [--modes]=MODES [--out]=OUT
	[--pslite]=PSLITE_DIR)
# shellcheck disable=SC2016  # evaluated where the flag stands
BENCH_FLAGS=([--quick]='RUNS=$QUICK_RUNS SECONDS_PER_RUN=$QUICK_SECONDS SIZES=$QUICK_SIZES
	MODES=$QUICK_MODES EXTRAS=0' [--no-extras]='EXTRAS=0')
bench_options pushpull.sh "$@"
AGGBENCH=$BUILD/app/psb-aggbench/psb-aggbench
bench_built "$PSB" "$KSRV" "$KBENCH" "$AGGBENCH"
bench_out pushpull
bench_scratch psbb

CORES=$(nproc)
SRV_CPU=0
WK_CPU=$(( CORES > 1 ? 1 : 0 ))

# psb_run TAG LEN MODE KEYS [extra worker args...]: one psb server + worker over memif.
psb_run() {
	local tag=$1 len=$2 mode=$3 keys=$4
	shift 4
	bench_memif "psb run $tag" "$PSB" "$SECONDS_PER_RUN" "$OUT/raw/$tag.json" --async $SRV_CPU \
		$WK_CPU --len "$len" --mode "$mode" --keys "$keys" "$@"
}

# kernel_run TAG LEN MODE KEYS [extra args...]: psb-ksrv + psb-kbench over loopback.
kernel_run() {
	local tag=$1 len=$2 mode=$3 keys=$4 port=$((20000 + n)) spid
	shift 4
	n=$((n + 1))
	taskset -c $SRV_CPU "$KSRV" --ip 127.0.0.1 --port $port --async --seg-size 8932 \
		> "$TMP/srv.log" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	sleep 0.2
	bench_against "kernel run $tag" $spid "$SECONDS_PER_RUN" taskset -c $WK_CPU "$KBENCH" \
		--server 127.0.0.1:$port --async --seg-size 8932 --keys "$keys" \
		--duration "$SECONDS_PER_RUN" --results "$OUT/raw/$tag.json" "$@" "$len" 1000000000 "$mode"
}

echo "psb push/pull benchmark: $RUNS runs of ${SECONDS_PER_RUN}s per point; server on cpu $SRV_CPU, worker on cpu $WK_CPU"
echo "results in $OUT"
bench_about "$BUILD" "server cpu $SRV_CPU, worker cpu $WK_CPU (psb -l, kernel baseline taskset -c); psb over memif (psb on hugepages while free, as by default), kernel baseline over loopback UDP" \
	"$COMMAND" > "$OUT/ABOUT.txt"
PSLITE_REAL=
if [ -n "$PSLITE_DIR" ]; then
	bench_pslite "$PSLITE_DIR"
	echo "$PSLITE_ABOUT; it runs the same sizes and modes (its scheduler, its server on cpu $SRV_CPU, the worker on cpu $WK_CPU, ZeroMQ/TCP on loopback)" >> "$OUT/ABOUT.txt"
fi
bench_plan "sizes=[$SIZES]" "modes=[$MODES]" "runs=$RUNS"
systems=$([ -n "$PSLITE_REAL" ] && echo 3 || echo 2)
total=$(( $(echo $SIZES | wc -w) * $(echo $MODES | wc -w) * RUNS * systems ))
for size in $SIZES; do
	for mode in $MODES; do
		for r in $(seq "$RUNS"); do
			psb_run "psb-$size-$mode-$r" "$size" "$mode" "$KEYS"
			bench_progress $total runs
			kernel_run "kernel-$size-$mode-$r" "$size" "$mode" "$KEYS"
			bench_progress $total runs
			if [ -n "$PSLITE_REAL" ]; then
				bench_pslite_job "$OUT/raw/pslite-$size-$mode-$r.json" "$size" "$mode" \
					"$KEYS" "$SECONDS_PER_RUN" $SRV_CPU $WK_CPU
				bench_progress $total runs
			fi
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
	"$AGGBENCH" --mb 64 --runs "$RUNS" --json "$OUT/raw/aggbench.json" > "$OUT/raw/aggbench.txt"
fi

# the summary comes from the raw data alone (check_docs.py makes it again from them)
bench_finish pushpull
