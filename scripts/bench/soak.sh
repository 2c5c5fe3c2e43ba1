#!/bin/bash
# A day unattended, compressed: a psb server and a psb worker over memif (one core each) run
# PUSH_PULL with --verify flat out for --minutes, while psb-scrape reads every export of
# both at 10 Hz, both write their counters files at 10 Hz (moved to .1 at 16 MiB), the
# worker's figures are reset every 10 s and its rate is set live every 7 s; --no-huge, so
# that all of psb's memory shows in its resident set. Every --sample seconds it records each
# process's resident memory, open descriptors and counters-file bytes (rotated ones
# included); before each reset, the worker's requests, failures and verify errors. Prints,
# per process, where each figure started and ended and its slope per hour (least squares
# after the first minute: start-up allocations are not a leak); every window must have
# exact sums. Writes samples.csv and windows.csv (in raw.tar.xz), summary.json, summary.md,
# ABOUT.txt.
#
#   scripts/bench/soak.sh [--minutes M] [--sample S] [--len BYTES] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

MINUTES=10
SAMPLE=1
LEN=4096
BENCH_OPTS=([--minutes]=MINUTES [--sample]=SAMPLE [--len]=LEN [--out]=OUT)
bench_options soak.sh "$@"
[[ "$MINUTES" =~ ^[0-9]+$ ]] && [ "$MINUTES" -ge 2 ] ||
	{ echo "soak.sh: --minutes: a whole number, at least 2 (got '$MINUTES')" >&2; exit 2; }
[[ "$SAMPLE" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
	{ echo "soak.sh: --sample: seconds (got '$SAMPLE')" >&2; exit 2; }
bench_built "$PSB" "$PSBCTL"
# the scraper is this tree's, whichever psb $BUILD holds (provenance.sh)
SCRAPE=$(bench_scraper soak.sh)
bench_out soak
{
	bench_about "$BUILD" "server lcore 0, worker lcore 1; psb-scrape and the samplers unpinned" \
		"$COMMAND"
	bench_scraper_about "$SCRAPE"
	echo "load memif, server lcore 0, worker lcore 1, --no-huge; $LEN B PUSH_PULL async, 40 keys," \
		"--verify; psb-scrape 10 Hz of every export of both; counters files 10 Hz (16 MiB);" \
		"worker reset_state" \
		"every 10 s, pushpull.rate set every 7 s"
} > "$OUT/ABOUT.txt"
bench_scratch psbk
. scripts/bench/pair.sh

SECS=$((MINUTES * 60))
cat > "$TMP/serve.json" <<EOF
{"name": "soak-serve", "kind": "serve", "output": {"dir": "results", "overwrite": true,
 "counters_file": "serve-counters.jsonl", "counters_every": "100ms", "counters_max": "16MiB"}}
EOF
cat > "$TMP/exp.json" <<EOF
{"name": "soak", "kind": "pushpull", "pushpull": {"len": $LEN, "repeat": 1000000000000,
 "duration": "$((SECS + 5))s", "keys": 40, "verify": true},
 "output": {"dir": "results", "overwrite": true, "log_every": "0s",
 "counters_file": "counters.jsonl", "counters_every": "100ms", "counters_max": "16MiB"}}
EOF

echo "soak: $MINUTES min of $LEN B PUSH_PULL with scrapes, resets and live sets" >&2
# without hugepages: all of psb's memory, DPDK's heap included, is in its resident set
start_pair --no-huge
"$PSBCTL" --ctl "$WCTL" start "$TMP/exp.json" > /dev/null
"$SCRAPE" --hz 10 --seconds "$SECS" "ctl:$WCTL" "ctl:$SCTL" \
	"tel:/var/run/dpdk/$WP/dpdk_telemetry.v2" "tel:/var/run/dpdk/$SP/dpdk_telemetry.v2" \
	"http:127.0.0.1:$WPROM" "http:127.0.0.1:$SPROM" > "$OUT/raw/scrape.json" &
SCRAPE_PID=$!
PIDS+=("$SCRAPE_PID")

# sample T: one CSV line per process: time, rss_kb, fds, counters-file bytes (with .1)
sample() {
	local who pid f rss fds bytes x
	for who in server worker; do
		if [ $who = server ]; then pid=$SPID f=$TMP/results/serve-counters.jsonl
		else pid=$WPID f=$TMP/results/counters.jsonl; fi
		rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$pid/status" 2>/dev/null) ||
			{ echo "soak.sh: the $who (pid $pid) is gone" >&2; exit 1; }
		fds=$(find "/proc/$pid/fd" -mindepth 1 -maxdepth 1 2>/dev/null | wc -l)
		bytes=0
		for x in "$f" "$f.1"; do
			[ -f "$x" ] && bytes=$((bytes + $(stat -c %s "$x")))
		done
		echo "$1,$who,$rss,$fds,$bytes"
	done >> "$OUT/raw/samples.csv"
}

echo "t_s,process,rss_kb,fds,counters_file_bytes" > "$OUT/raw/samples.csv"
echo "t_s,requests,retries,failed,verify_errors" > "$OUT/raw/windows.csv"
t0=$(date +%s.%N)
next_reset=10
next_set=7
rates=(2Gbps 0 500Mbps 0)
nset=0
while :; do
	t=$(python3 -c "print(round($(date +%s.%N) - $t0, 3))")
	sample "$t"
	tt=${t%.*}
	[ "$tt" -ge "$SECS" ] && break
	if [ "$tt" -ge $next_reset ]; then
		# the window's figures before they are reset: requests, failed, verify errors
		"$PSBCTL" --ctl "$WCTL" --json counters experiment.pushpull | python3 -c '
import json, sys
c = json.load(sys.stdin)["counters"]
print("%s,%d,%d,%d,%d" % (sys.argv[1], c["requests"], c["retries"], c["failed"], c["verify_errors"]))' \
			"$t" >> "$OUT/raw/windows.csv" || { echo "soak.sh: counters failed" >&2; exit 1; }
		"$PSBCTL" --ctl "$WCTL" reset_state > /dev/null || { echo "soak.sh: reset_state failed" >&2; exit 1; }
		next_reset=$((next_reset + 10))
	fi
	if [ "$tt" -ge $next_set ]; then
		"$PSBCTL" --ctl "$WCTL" set pushpull.rate "${rates[$((nset % 4))]}" > /dev/null ||
			{ echo "soak.sh: set pushpull.rate failed" >&2; exit 1; }
		nset=$((nset + 1))
		next_set=$((next_set + 7))
	fi
	[ $((tt % 60)) -eq 0 ] && [ "$tt" -gt 0 ] && echo "  $((tt / 60))/$MINUTES min" >&2
	sleep "$SAMPLE"
done
wait $SCRAPE_PID || { echo "soak.sh: psb-scrape failed" >&2; exit 1; }
"$PSBCTL" --ctl "$WCTL" --json stop > "$OUT/raw/stop.json" || true
cp "$TMP/results/soak/result.json" "$OUT/raw/result.json" 2>/dev/null ||
	{ echo "soak.sh: the worker wrote no results" >&2; exit 1; }
stop_pair

# the summary comes from the raw data alone (check_docs.py makes it again from them)
bench_finish soak
