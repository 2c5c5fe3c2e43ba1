#!/bin/bash
# The ps-lite job across "hosts": a scheduler, two servers and two workers, each in its own
# network namespace on one Linux bridge, PUSH_PULL in sync rounds with default settings, at
# several value sizes. psb (af_packet ports, started by DMLC_* alone) against the same job on
# kernel UDP sockets (psb-ksrv servers and psb-kbench workers, the client library; the
# scheduler is psb's in both), runs interleaved. Every run must end with exact sums. Prints,
# per size, the median job goodput (both workers) of each and the median of the per-pair
# ratios psb/kernel with a bootstrap 95 % interval; writes raw results, summary.json,
# summary.md and ABOUT.txt.
#
#   scripts/bench/job.sh [--runs N] [--sizes "4096 65536 1048576 4194304"] [--mtu N]
#                        [--bytes B] [--out DIR]
#
# --mtu is the bridge's and every interface's (default 9000: jumbo frames); --bytes the value
# bytes each worker pushes per run (iterations = bytes / (len x 80 keys), at least 3).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh
. tests/sys/bridge.sh

RUNS=5
SIZES="4096 65536 1048576 4194304"
MTU=9000
BYTES=$((320 << 20))
BENCH_OPTS=([--runs]=RUNS [--sizes]=SIZES [--mtu]=MTU [--bytes]=BYTES [--out]=OUT)
bench_options job.sh "$@"
[ "$(id -u)" = 0 ] || { echo "job.sh: needs root (namespaces, a bridge, af_packet)" >&2; exit 1; }
bench_built "$PSB" "$KSRV" "$KBENCH"
bench_out job
BR=psbjo$$
NODES=(0 1 2 3 4)
bench_scratch psbjo
bench_cleanup() {
	pkill -9 -f -- "--file-prefix $BENCH_PREFIX-" 2>/dev/null || true
	wait 2>/dev/null || true
	bridge_down "$BR" "pjo$$" "po$$" "${NODES[@]}"
}

bridge_up "$BR" "pjo$$" "po$$" "${NODES[@]}" || { echo "job.sh: cannot build the testbed" >&2; exit 1; }
bridge_mtu "$BR" "pjo$$" "po$$" "$MTU" "${NODES[@]}"
NET=198.18.14
ip_of() { case $1 in 0) echo $NET.1 ;; 1) echo $NET.2 ;; 2) echo $NET.3 ;; 3) echo $NET.10 ;; 4) echo $NET.11 ;; esac; }
SEG=$(( (MTU - 68) & ~3 ))	# value bytes per datagram at this MTU, as psb cuts them
KEYS=80				# 40 per server, ps-lite's benchmark

# node N CMD...: run CMD in node N's namespace, bounded; log in $TMP/nN.log
node() {
	local n=$1
	shift
	ip netns exec "pjo$$-$n" timeout -k 5 300 "$@" > "$TMP/n$n.log" 2>&1 &
	PIDS+=($!)
}
psb_node() {	# psb_node N ROLE ARGS...
	local n=$1 role=$2 host=""
	shift 2
	[ "$role" = scheduler ] || host=$(ip_of "$n")
	dmlc_exec "pjo$$" "po$$" "$n" "$role" $NET.1 "$host" 2 2 timeout -k 5 300 "$PSB" \
		--file-prefix "$BENCH_PREFIX-$n" "$@" > "$TMP/n$n.log" 2>&1 &
	PIDS+=($!)
}
addrs() {	# addrs add|flush: kernel addresses on the nodes' interfaces (kernel jobs only)
	local n
	for n in 1 2 3 4; do
		if [ "$1" = add ]; then
			ip netns exec "pjo$$-$n" ip addr add "$(ip_of "$n")/24" dev "po$$a$n"
		else
			ip netns exec "pjo$$-$n" ip addr flush dev "po$$a$n"
		fi
	done
}
# finish: wait for the workers, end the others; 0 when both workers exited 0
finish() {
	local rc=0 i
	wait "${PIDS[3]}" || rc=1
	wait "${PIDS[4]}" || rc=1
	for i in 0 1 2; do kill -TERM "${PIDS[$i]}" 2>/dev/null || true; done
	for i in 0 1 2; do wait "${PIDS[$i]}" 2>/dev/null || true; done
	PIDS=()
	return $rc
}
keep_logs() { local n; for n in "${NODES[@]}"; do cp "$TMP/n$n.log" "$OUT/raw/$1-n$n.log"; done; }

run_psb() {	# run_psb TAG LEN REPEAT
	local tag=$1 len=$2 repeat=$3
	psb_node 0 scheduler
	psb_node 1 server
	psb_node 2 server
	psb_node 3 worker --verify --results "$OUT/raw/$tag-w0.json" "$len" "$repeat"
	psb_node 4 worker --verify --results "$OUT/raw/$tag-w1.json" "$len" "$repeat"
	finish || { echo "job.sh: $tag failed (logs in $OUT/raw/$tag-n*.log)" >&2; keep_logs "$tag"; }
}
run_kernel() {	# run_kernel TAG LEN REPEAT
	local tag=$1 len=$2 repeat=$3
	addrs add
	psb_node 0 scheduler
	node 1 "$KSRV" --ip "$(ip_of 1)" --scheduler $NET.1 --sync --seg-size $SEG -q
	node 2 "$KSRV" --ip "$(ip_of 2)" --scheduler $NET.1 --sync --seg-size $SEG -q
	node 3 "$KBENCH" --scheduler $NET.1 --sync --seg-size $SEG --verify -q \
		--results "$OUT/raw/$tag-w0.json" "$len" "$repeat" 1
	node 4 "$KBENCH" --scheduler $NET.1 --sync --seg-size $SEG --verify -q \
		--results "$OUT/raw/$tag-w1.json" "$len" "$repeat" 1
	finish || { echo "job.sh: $tag failed (logs in $OUT/raw/$tag-n*.log)" >&2; keep_logs "$tag"; }
	addrs flush
}

{
	bench_about "$BUILD" "psb's default (started by DMLC_* alone); 5 processes (scheduler, 2 servers, 2 workers) share $(nproc) cores" \
		"$COMMAND"
	echo "testbed 5 namespaces on one bridge, MTU $MTU; psb: af_packet, DMLC_* only, default" \
		"settings; kernel: psb-ksrv + psb-kbench, UDP datagrams of $SEG value bytes;" \
		"scheduler psb's in both; PUSH_PULL sync, $KEYS keys per worker, --verify"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"

bench_plan "sizes=[$SIZES]" "runs=$RUNS"
total=$(( $(echo $SIZES | wc -w) * RUNS * 2 ))
for len in $SIZES; do
	repeat=$(( BYTES / (len * KEYS) ))
	[ $repeat -ge 3 ] || repeat=3
	for r in $(seq "$RUNS"); do
		for w in $(bench_abba "$r" psb kernel); do
			"run_$w" "$w-$len-$r" "$len" "$repeat"
			bench_progress $total jobs
		done
	done
done
echo >&2

# the summary comes from the raw data alone (check_docs.py makes it again from them)
bench_finish job
