#!/bin/bash
# The ps-lite job across "hosts": a scheduler, S servers and W workers, each in its own
# network namespace on one Linux bridge, PUSH_PULL in sync rounds with default settings, at
# several value sizes. psb (started by DMLC_* alone, on af_packet or af_xdp ports) against the
# same job on kernel UDP sockets (psb-ksrv servers and psb-kbench workers, the client library;
# the scheduler is psb's in both) and, given a ps-lite checkout, against ps-lite itself over
# ZeroMQ/TCP (tests/pslite/bench_pushpull.cc built against it), runs interleaved. psb's and
# the kernel's runs must end with exact sums. Prints, per size, the median job goodput (all
# workers) of each, per worker too, and the medians of the per-run ratios psb/kernel and
# psb/ps-lite with bootstrap 95 % intervals; writes raw results, summary.json, summary.md
# and ABOUT.txt.
#
#   scripts/bench/job.sh [--runs N] [--sizes "4096 65536 1048576 4194304"] [--mtu N]
#                        [--bytes B] [--servers S] [--workers W] [--port af_packet|af_xdp]
#                        [--loss PCT] [--pslite DIR] [--out DIR]
#
# --mtu is the bridge's and every interface's (default 9000: jumbo frames; with --port af_xdp
# at most 3500, what XDP takes on a veth, for every system of the run alike); --bytes the
# value bytes each worker pushes per run (iterations = bytes / (len x keys), at least 3);
# --servers and --workers the job's shape (default 2 and 2; 40 keys per server, ps-lite's
# benchmark); --loss drops PCT % of the frames each way on the first server's link, on the
# bridge (nftables), whatever they carry; --pslite a ps-lite checkout, built in a scratch
# directory with Debian's ZeroMQ and protobuf (ps-lite is not packaged; fetch it beforehand).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh
. tests/sys/bridge.sh

RUNS=5
SIZES="4096 65536 1048576 4194304"
MTU=9000
BYTES=$((320 << 20))
SERVERS=2
WORKERS=2
PORT=af_packet
LOSS=0
PSLITE_DIR=
BENCH_OPTS=([--runs]=RUNS [--sizes]=SIZES [--mtu]=MTU [--bytes]=BYTES [--out]=OUT
	[--servers]=SERVERS [--workers]=WORKERS [--port]=PORT [--loss]=LOSS [--pslite]=PSLITE_DIR)
bench_options job.sh "$@"
[ "$(id -u)" = 0 ] || { echo "job.sh: needs root (namespaces, a bridge, af_packet)" >&2; exit 1; }
case $PORT in af_packet|af_xdp) ;; *) echo "job.sh: --port af_packet or af_xdp, not '$PORT'" >&2; exit 2 ;; esac
[[ $SERVERS =~ ^[1-7]$ ]] || { echo "job.sh: --servers 1 to 7, not '$SERVERS'" >&2; exit 2; }
[[ $WORKERS =~ ^[1-8]$ ]] || { echo "job.sh: --workers 1 to 8, not '$WORKERS'" >&2; exit 2; }
[[ $LOSS =~ ^[0-9]+(\.[0-9])?$ ]] && [ "${LOSS%.*}" -lt 50 ] ||
	{ echo "job.sh: --loss a percentage below 50 with at most one decimal, not '$LOSS'" >&2; exit 2; }
if [ $PORT = af_xdp ] && [ "$MTU" -gt 3500 ]; then
	echo "job.sh: --port af_xdp: MTU $MTU lowered to 3500, what XDP takes on a veth (every system of the run)" >&2
	MTU=3500
fi
if [ $LOSS != 0 ] && ! command -v nft >/dev/null; then
	echo "job.sh: --loss needs nftables (scripts/setup.sh installs it)" >&2
	exit 1
fi
bench_built "$PSB" "$KSRV" "$KBENCH"
bench_out job
BR=psbjo$$
NODES=($(seq 0 $((SERVERS + WORKERS))))
SRV=($(seq 1 "$SERVERS"))
WRK=($(seq $((SERVERS + 1)) $((SERVERS + WORKERS))))
LOSS_TABLE=psbjo$$
bench_scratch psbjo
bench_cleanup() {
	pkill -9 -f -- "--file-prefix $BENCH_PREFIX-" 2>/dev/null || true
	for n in "${NODES[@]}"; do ip netns pids "pjo$$-$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true; done
	wait 2>/dev/null || true
	[ "$LOSS" = 0 ] || nft delete table bridge "$LOSS_TABLE" 2>/dev/null || true
	bridge_down "$BR" "pjo$$" "po$$" "${NODES[@]}"
}

PSLITE_REAL=
[ -z "$PSLITE_DIR" ] || bench_pslite "$PSLITE_DIR"

bridge_up "$BR" "pjo$$" "po$$" "${NODES[@]}" || { echo "job.sh: cannot build the testbed" >&2; exit 1; }
bridge_mtu "$BR" "pjo$$" "po$$" "$MTU" "${NODES[@]}"
# ps-lite's scheduler talks to itself at its own address, which takes a loopback that is up
for n in "${NODES[@]}"; do ip -n "pjo$$-$n" link set lo up; done
NET=198.18.14
# the scheduler .1, servers .2 on, workers .10 on
ip_of() { if [ "$1" = 0 ]; then echo $NET.1; elif [ "$1" -le "$SERVERS" ]; then echo $NET.$(($1 + 1)); else echo $NET.$((10 + $1 - SERVERS - 1)); fi; }
SEG=$(( (MTU - 68) & ~3 ))	# value bytes per datagram at this MTU, as psb cuts them
KEYS=$((40 * SERVERS))		# 40 per server, ps-lite's benchmark
if [ "$LOSS" != 0 ]; then
	# PCT % of the frames through the first server's bridge port, each way: numgen draws
	# 0..999 per frame
	per_mille=$(python3 -c "print(round($LOSS * 10))")
	nft add table bridge "$LOSS_TABLE"
	nft add chain bridge "$LOSS_TABLE" lossy '{ type filter hook forward priority 0; }'
	nft add rule bridge "$LOSS_TABLE" lossy iifname "po$$b1" numgen random mod 1000 '<' "$per_mille" counter drop
	nft add rule bridge "$LOSS_TABLE" lossy oifname "po$$b1" numgen random mod 1000 '<' "$per_mille" counter drop
fi

# node N CMD...: run CMD in node N's namespace, bounded; log in $TMP/nN.log
node() {
	local n=$1
	shift
	ip netns exec "pjo$$-$n" timeout -k 5 300 "$@" > "$TMP/n$n.log" 2>&1 &
	PIDS+=($!)
}
psb_node() {	# psb_node N ROLE ARGS...
	local n=$1 role=$2 host="" port=()
	shift 2
	[ "$role" = scheduler ] || host=$(ip_of "$n")
	[ $PORT = af_packet ] || port=(--port "$PORT:po$$a$n")
	dmlc_exec "pjo$$" "po$$" "$n" "$role" $NET.1 "$host" "$SERVERS" "$WORKERS" timeout -k 5 300 \
		"$PSB" --file-prefix "$BENCH_PREFIX-$n" "${port[@]}" "$@" > "$TMP/n$n.log" 2>&1 &
	PIDS+=($!)
}
pslite_node() {	# pslite_node N ROLE ARGS...: the ps-lite program, with ps-lite's own variables
	local n=$1 role=$2
	shift 2
	DMLC_EXTRA="DMLC_PS_ROOT_PORT=9091" dmlc_exec "pjo$$" "po$$" "$n" "$role" $NET.1 \
		"$(ip_of "$n")" "$SERVERS" "$WORKERS" timeout -k 5 300 "$PSLITE_REAL" "$@" \
		> "$TMP/n$n.log" 2>&1 &
	PIDS+=($!)
}
addrs() {	# addrs add|flush NODE...: kernel addresses on the nodes' interfaces
	local op=$1 n
	shift
	for n in "$@"; do
		if [ "$op" = add ]; then
			ip netns exec "pjo$$-$n" ip addr add "$(ip_of "$n")/24" dev "po$$a$n"
		else
			ip netns exec "pjo$$-$n" ip addr flush dev "po$$a$n"
		fi
	done
}
# finish: wait for the workers, end the others; 0 when every worker exited 0
finish() {
	local rc=0 i
	for i in "${WRK[@]}"; do wait "${PIDS[$i]}" || rc=1; done
	for i in 0 "${SRV[@]}"; do kill -TERM "${PIDS[$i]}" 2>/dev/null || true; done
	for i in 0 "${SRV[@]}"; do wait "${PIDS[$i]}" 2>/dev/null || true; done
	PIDS=()
	return $rc
}
keep_logs() { local n; for n in "${NODES[@]}"; do cp "$TMP/n$n.log" "$OUT/raw/$1-n$n.log"; done; }
failed() { echo "job.sh: $1 failed (logs in $OUT/raw/$1-n*.log)" >&2; keep_logs "$1"; }

run_psb() {	# run_psb TAG LEN REPEAT
	local tag=$1 len=$2 repeat=$3 n w=0
	psb_node 0 scheduler
	for n in "${SRV[@]}"; do psb_node "$n" server; done
	for n in "${WRK[@]}"; do
		psb_node "$n" worker --verify --results "$OUT/raw/$tag-w$w.json" "$len" "$repeat"
		w=$((w + 1))
	done
	finish || failed "$tag"
}
run_kernel() {	# run_kernel TAG LEN REPEAT
	local tag=$1 len=$2 repeat=$3 n w=0
	addrs add "${SRV[@]}" "${WRK[@]}"
	psb_node 0 scheduler
	for n in "${SRV[@]}"; do
		node "$n" "$KSRV" --ip "$(ip_of "$n")" --scheduler $NET.1 --sync --seg-size $SEG -q
	done
	for n in "${WRK[@]}"; do
		node "$n" "$KBENCH" --scheduler $NET.1 --sync --seg-size $SEG --verify -q \
			--results "$OUT/raw/$tag-w$w.json" "$len" "$repeat" 1
		w=$((w + 1))
	done
	finish || failed "$tag"
	addrs flush "${SRV[@]}" "${WRK[@]}"
}
run_pslite() {	# run_pslite TAG LEN REPEAT: ps-lite's own scheduler, servers and workers
	local tag=$1 len=$2 repeat=$3 n w=0 rc=0
	addrs add "${NODES[@]}"
	pslite_node 0 scheduler "$len" 1 "$KEYS" 0 "$repeat"
	for n in "${SRV[@]}"; do pslite_node "$n" server "$len" 1 "$KEYS" 0 "$repeat"; done
	for n in "${WRK[@]}"; do pslite_node "$n" worker "$len" 1 "$KEYS" 0 "$repeat"; done
	finish || rc=1
	for n in "${WRK[@]}"; do
		pslite_json "$TMP/n$n.log" "$OUT/raw/$tag-w$w.json" || rc=1
		w=$((w + 1))
	done
	[ $rc = 0 ] || failed "$tag"
	addrs flush "${NODES[@]}"
}
# pslite_json LOG OUT: the ps-lite program's goodput line as a worker's results
pslite_json() {
	python3 - "$1" "$2" <<'PY'
import json, re, sys
m = re.search(r"mode (\d+): (\d+) x (\d+) keys of (\d+) B in ([\d.e+-]+) s, goodput ([\d.e+-]+) Gbps",
              open(sys.argv[1]).read())
if not m:
    sys.exit("the ps-lite program printed no goodput line (%s)" % sys.argv[1])
mode, it, keys, length, secs, gbps = m.groups()
json.dump({"tool": "pslite", "mode": int(mode), "iterations": int(it), "keys": int(keys),
           "len": int(length), "elapsed_s": float(secs), "goodput_gbps": float(gbps),
           "retries": 0, "failed": 0, "verify_errors": 0}, open(sys.argv[2], "w"))
PY
}

SYSTEMS="psb kernel"
[ -z "$PSLITE_REAL" ] || SYSTEMS="psb kernel pslite"
{
	bench_about "$BUILD" "psb's default (started by DMLC_* alone); $((1 + SERVERS + WORKERS)) processes (scheduler, $SERVERS server(s), $WORKERS worker(s)) share $(nproc) cores" \
		"$COMMAND"
	echo "testbed $((1 + SERVERS + WORKERS)) namespaces on one bridge, MTU $MTU" \
		"$([ "$LOSS" = 0 ] || echo "with $LOSS % of the frames dropped each way on the first server's link"); psb: $PORT," \
		"DMLC_* only, default settings; kernel: psb-ksrv + psb-kbench, UDP datagrams of $SEG" \
		"value bytes; scheduler psb's in both; PUSH_PULL sync, $KEYS keys per worker, --verify" \
		"$([ -z "$PSLITE_REAL" ] || echo "; pslite: ps-lite's scheduler, servers and workers over ZeroMQ/TCP, the same iterations (no sync rounds, sums not checked)")"
	[ -z "$PSLITE_REAL" ] || echo "$PSLITE_ABOUT"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"

bench_plan "sizes=[$SIZES]" "runs=$RUNS" "servers=$SERVERS" "workers=$WORKERS" "port=$PORT" \
	"loss=$LOSS" "mtu=$MTU" "systems=[$SYSTEMS]"
nsys=$(echo $SYSTEMS | wc -w)
total=$(( $(echo $SIZES | wc -w) * RUNS * nsys ))
for len in $SIZES; do
	repeat=$(( BYTES / (len * KEYS) ))
	[ $repeat -ge 3 ] || repeat=3
	for r in $(seq "$RUNS"); do
		# rotate the order so that no system always runs first
		order=$(echo $SYSTEMS | tr ' ' '\n' | awk -v r="$r" -v n="$nsys" '{ a[NR] = $0 }
			END { for (i = 0; i < n; i++) print a[(i + r - 1) % n + 1] }')
		for w in $order; do
			"run_$w" "$w-$len-$r" "$len" "$repeat"
			bench_progress $total jobs
		done
	done
done
echo >&2
if [ "$LOSS" != 0 ]; then
	nft list table bridge "$LOSS_TABLE" > "$OUT/raw/loss.nft" 2>/dev/null || true
fi

# the summary comes from the raw data alone (check_docs.py makes it again from them)
bench_finish job
