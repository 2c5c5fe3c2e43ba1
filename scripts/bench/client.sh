#!/bin/bash
# What a user's own code gets from psb over kernel UDP sockets: ps-lite's benchmark (PUSH_PULL
# of --keys keys of --len bytes, each iteration waited for) against psb-ksrv on loopback
# (CPU 0), the worker on CPU 1, from
#   kbench  psb-kbench, psb's own engine (the kernel-socket baseline of the benchmarks);
#   capi    psb-apibench, through the client API (psb/client.h, libpsb);
#   pslite  a ps-lite program (tests/pslite/bench_pushpull.cc) through psb's ps-lite header;
#   python  python3 -m psb.bench, through the psb package with numpy arrays;
# the last three over kernel UDP (PSB_TRANSPORT=udp) and again over shared memory
# (capi-shm, pslite-shm, python-shm: PSB_TRANSPORT=shm, psb-ksrv's shared-memory slots);
# and one key's 64 B request at a time (round trips) from capi and python over UDP. Runs of
# --seconds each, a fresh server each, in rotating order, --pairs rounds. Prints the medians
# and the paired ratios (capi/kbench, pslite/capi, python/capi, and each client's shared
# memory over its UDP) with their bootstrap 95 % intervals, and python's round trip less
# capi's; the figures asked for: capi within 5 % of kbench, pslite at least 95 % of capi,
# python within 10 % of capi and its 64 B round trip within 10 us of capi's, the C and
# Python clients over shared memory at least 3x their own UDP goodput.
#
# With --pslite DIR, a checkout of ps-lite (it is not packaged; its code is built in a scratch
# directory and never enters the tree): the same ps-lite program compiled against ps-lite
# itself (ZeroMQ over TCP, its own scheduler and servers, the program's summing handler on
# the server) runs beside it in each round, and its ratio to psb's is printed. Debian's
# protobuf-compiler and libprotobuf-dev are installed for it when missing.
#
#   scripts/bench/client.sh [--pairs N] [--seconds S] [--len BYTES] [--keys N] [--out DIR]
#                           [--pslite DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

PAIRS=10
SECS=3
LEN=1048576
KEYS=40
PSLITE_DIR=
BENCH_OPTS=([--pairs]=PAIRS [--seconds]=SECS [--len]=LEN [--keys]=KEYS [--out]=OUT
	[--pslite]=PSLITE_DIR)
bench_options client.sh "$@"
APIBENCH=$BUILD/app/psb-apibench/psb-apibench
PSLITE=$BUILD/tests/pslite/pslite_bench_pushpull
PYDIR=$BUILD/python
bench_built "$KSRV" "$KBENCH" "$APIBENCH" "$PSLITE"
PY=/usr/bin/python3
PYTHONPATH=$PYDIR "$PY" -c 'import numpy, psb' 2>/dev/null ||
	{ echo "$NAME: the psb package or numpy does not import ($PY, $PYDIR)" >&2; exit 1; }
if [ -n "$PSLITE_DIR" ]; then
	[ -f "$PSLITE_DIR/src/meta.proto" ] && [ -f "$PSLITE_DIR/include/ps/ps.h" ] ||
		{ echo "$NAME: --pslite $PSLITE_DIR is not a ps-lite checkout (src/meta.proto, include/ps/ps.h)" >&2; exit 2; }
fi
bench_out client
bench_scratch client
{
	bench_about "$BUILD" "psb-ksrv on CPU 0, the worker on CPU 1" "$COMMAND"
	echo "workload ps-lite's benchmark, PUSH_PULL of $KEYS keys of $LEN B, each iteration" \
		"waited for, $SECS s a run; and one key's 64 B PUSH_PULL at a time; kbench, capi," \
		"pslite and python over UDP, capi, pslite and python over shared memory, in" \
		"rotating order, a fresh psb-ksrv (async) each run, $PAIRS rounds"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"
bench_plan pairs="$PAIRS" seconds="$SECS" len="$LEN" keys="$KEYS"

# ps-lite itself, from the checkout given, and the same program built against it
REAL=
if [ -n "$PSLITE_DIR" ]; then
	bench_pslite "$PSLITE_DIR"
	REAL=$PSLITE_REAL
	echo "$PSLITE_ABOUT" >> "$OUT/ABOUT.txt"
fi

# server: psb-ksrv on CPU 0 hosting a scheduler (the ps-lite program joins through it);
# sets SPORT, SCHED and SPID
server() {
	rm -f "$TMP/ready"
	taskset -c 0 "$KSRV" --ip 127.0.0.1 --port 0 --scheduler-port 0 --num-workers 1 --async \
		--ready-file "$TMP/ready" --duration $((SECS + 60)) -q > "$TMP/srv.log" 2>&1 &
	SPID=$!
	PIDS+=("$SPID")
	for _ in $(seq 200); do [ -s "$TMP/ready" ] && break; sleep 0.05; done
	read -r SPORT SCHED < "$TMP/ready" || { cat "$TMP/srv.log" >&2; exit 1; }
}

# run TOOL LEN MODE OUT: one run of TOOL against a fresh server, its JSON result in OUT; a
# TOOL-shm reaches the server over shared memory, the others over UDP (PSB_TRANSPORT)
run() {
	local tool=$1 len=$2 mode=$3 out=$4
	export PSB_TRANSPORT=udp
	case $tool in *-shm) PSB_TRANSPORT=shm; tool=${tool%-shm} ;; esac
	server
	case $tool in
	kbench)
		bench_against "psb-kbench" "$SPID" "$SECS" taskset -c 1 "$KBENCH" \
			--server "127.0.0.1:$SPORT" --async --keys "$KEYS" --duration "$SECS" -q \
			--results "$out" "$len" 1000000000 "$mode" ;;
	capi)
		bench_against "psb-apibench" "$SPID" "$SECS" taskset -c 1 "$APIBENCH" \
			--servers "127.0.0.1:$SPORT" --keys "$KEYS" --seconds "$SECS" --results "$out" \
			"$len" 1 "$mode" ;;
	python)
		bench_against "psb.bench" "$SPID" "$SECS" env PYTHONPATH="$PYDIR" taskset -c 1 "$PY" \
			-m psb.bench --servers "127.0.0.1:$SPORT" --keys "$KEYS" --seconds "$SECS" \
			--results "$out" "$len" "$mode" ;;
	pslite)
		bench_against "the ps-lite program" "$SPID" "$SECS" env DMLC_ROLE=worker \
			DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT="$SCHED" DMLC_NUM_WORKER=1 \
			DMLC_NUM_SERVER=1 taskset -c 1 "$PSLITE" "$len" "$mode" "$KEYS" "$SECS"
		bench_pslite_goodput pslite "$TMP/wk.log" "$out" ;;
	esac
	unset PSB_TRANSPORT
}

tools=(kbench capi pslite python capi-shm pslite-shm python-shm)
total=$((PAIRS * 9))
[ -z "$REAL" ] || total=$((PAIRS * 10))
for p in $(seq "$PAIRS"); do
	# each tool first as often as the others
	shift_by=$(((p - 1) % ${#tools[@]}))
	order=("${tools[@]:$shift_by}" "${tools[@]:0:$shift_by}")
	for t in "${order[@]}"; do
		run "$t" "$LEN" 1 "$OUT/raw/$t-$p.json"
		bench_progress $total runs
	done
	for t in $(bench_abba "$p" capi python); do
		run "$t" 64 4 "$OUT/raw/rtt-$t-$p.json"
		bench_progress $total runs
	done
	if [ -n "$REAL" ]; then
		bench_pslite_job "$OUT/raw/pslite-real-$p.json" "$LEN" 1 "$KEYS" "$SECS" 0 1
		bench_progress $total runs
	fi
done
echo >&2
bench_finish client
