#!/bin/bash
# Can a hostile control-plane client slow the data plane? psb's answer is its limits
# (docs/CONTROL.md, Limits); this measures what they leave of the worker's goodput.
#
# A psb server and a psb worker over memif (one core each, run to completion: the main
# lcore is the data plane's) run ps-lite's PUSH_PULL flat out. For each process (the worker,
# then the server: the worker's goodput depends on both) and each hostile behaviour, paired
# windows without and with the hostile client alternate (ABBA):
#   pipeline  a client writing status requests back to back on the control socket
#   noread    a client asking for counters and never reading the replies
#   files     a client loading a FIFO, /dev/zero, a directory and an oversized file
#   trickle   48 HTTP connections trickling or withholding their request, and an honest
#             scrape with a 2 s timeout every 0.5 s
# Prints per process and behaviour the median ratio of the worker's goodput with / without
# (bootstrap 95 % interval, range), the control plane's share of the lcore, the hostile
# client's own CPU, what psb counted, and the honest scrapes. Goal: >= 0.90 everywhere.
#
#   scripts/bench/ctl_hostile.sh [--pairs N] [--window S] [--len BYTES]
#                                [--behaviours pipeline,noread,files,trickle]
#                                [--targets worker,server] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

PAIRS=10
WINDOW=1
LEN=4096
BEHAVIOURS=pipeline,noread,files,trickle
TARGETS=worker,server
BENCH_OPTS=([--pairs]=PAIRS [--window]=WINDOW [--len]=LEN [--behaviours]=BEHAVIOURS
	[--targets]=TARGETS [--out]=OUT)
bench_options ctl_hostile.sh "$@"
bench_built "$PSB" "$PSBCTL"
bench_out ctl-hostile
bench_about "$BUILD" "server lcore 0, worker lcore 1, memif (psb on hugepages while free, as by default); hostile clients unpinned" \
	"$COMMAND" > "$OUT/ABOUT.txt"
bench_plan "len=$LEN"
bench_scratch psbh
. scripts/bench/pair.sh

# What the hostile files client loads; big.json is over the default node.file_max (1 MiB).
mkfifo "$TMP/fifo"
mkdir "$TMP/dir"
python3 -c 'import sys; open(sys.argv[1], "w").write("{}" + " " * (2 << 20))' "$TMP/big.json"
cat > "$TMP/serve.json" <<EOF
{"name": "hostile-serve", "kind": "serve", "output": {"dir": "results", "overwrite": true}}
EOF
start_pair
NT=$(tr ',' '\n' <<<"$TARGETS" | grep -c .)
NB=$(tr ',' '\n' <<<"$BEHAVIOURS" | grep -c .)
DURATION=$(python3 -c "print(int($NT * $NB * $PAIRS * 2 * ($WINDOW + 0.6) + 60))")
cat > "$TMP/exp.json" <<EOF
{"name": "hostile", "kind": "pushpull", "pushpull": {"len": $LEN, "repeat": 1000000000000,
 "duration": "${DURATION}s", "keys": 40}, "output": {"dir": "results", "overwrite": true,
 "log_every": "0s"}}
EOF
"$PSBCTL" --ctl "$WCTL" start "$TMP/exp.json" > /dev/null
sleep 2

ARGS=()
for t in $(tr ',' ' ' <<<"$TARGETS"); do
	case "$t" in
	worker) ARGS+=(--target "worker:$WCTL:$WPROM") ;;
	server) ARGS+=(--target "server:$SCTL:$SPROM") ;;
	*) echo "ctl_hostile.sh: unknown target $t (worker, server)" >&2; exit 2 ;;
	esac
done
echo "hostile clients vs goodput: $PAIRS pairs of ${WINDOW}s windows per process and" \
	"behaviour, $LEN B PUSH_PULL flat out, async" >&2
scripts/bench/ctl_hostile.py windows --pairs "$PAIRS" --window "$WINDOW" --worker "$WCTL" \
	--behaviours "$BEHAVIOURS" --files "$TMP" "${ARGS[@]}" > "$OUT/raw/windows.json"
"$PSBCTL" --ctl "$WCTL" --json counters control > "$OUT/raw/worker-control.json"
"$PSBCTL" --ctl "$SCTL" --json counters control > "$OUT/raw/server-control.json"
stop_pair

# the summary comes from the raw data alone (check_docs.py makes it again from them)
bench_finish ctl_hostile
echo "results in $OUT"
