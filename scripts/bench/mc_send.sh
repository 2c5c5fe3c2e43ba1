#!/bin/bash
# How fast one core segments, paces and hands out parameter versions (the CRC32C of each
# included): psb's multicast sender into packet buffers (a copy of every packet, as a
# driver's transmit path makes) against the same sender into kernel UDP sockets (sendmsg,
# as psb-mcast does between ordinary processes), in alternating runs of --seconds each,
# 10 MB versions back to back, paced at --rate Gbit/s. Prints the medians, the paired ratio
# with its bootstrap 95 % interval; the figure asked for is >= 3 GB/s of data on one core.
# This is the sender's ceiling on this machine without a NIC: the state machine and the
# copy, not yet psb's sender role on DPDK.
#
#   scripts/bench/mc_send.sh [--pairs N] [--seconds S] [--rate GBITS] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

PAIRS=10
SECS=2
RATE=100
BENCH_OPTS=([--pairs]=PAIRS [--seconds]=SECS [--rate]=RATE [--out]=OUT)
bench_options mc_send.sh "$@"
MC=$BUILD/app/psb-mcast/psb-mcast
bench_built "$MC"
bench_out mc_send
{
	bench_about "$BUILD" "none (one process at a time, unpinned)" "$COMMAND"
	echo "workload 10000000 B versions back to back, 8932 B segments, paced at $RATE Gbit/s;" \
		"$PAIRS pairs of $SECS s runs, copy and udp sinks alternating (A B B A)"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"

total=$((PAIRS * 2))
for p in $(seq "$PAIRS"); do
	for w in $(bench_abba "$p" copy udp); do
		"$MC" bench --sink "$w" --seconds "$SECS" --rate "$RATE" --json "$OUT/raw/$w-$p.json" \
			> /dev/null
		bench_progress $total runs
	done
done
echo >&2
python3 scripts/bench/summarize.py mc_send "$OUT"
