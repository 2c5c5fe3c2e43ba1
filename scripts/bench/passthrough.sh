#!/bin/bash
# How fast one core passes RoCE through psb to the host, with and without per-QP accounting,
# against DPDK's own forwarding between the same ports. In rotating runs of --seconds each,
# all on one CPU (--cpu), for two streams psb-rocegen writes (--flood): RC ACKs of 62 bytes
# (the smallest RoCEv2 frame) and RC WRITE_MIDDLEs of 4154 bytes (4 KB of payload), each over
# 64 queue pairs with PSNs in order:
#   acct     psb, the wire port replaying the stream from memory (pcap:F:/dev/null:loop),
#            the exception port a null sink; every frame parsed, its ICRC checked and
#            counted on its queue pair; rx, passthrough and tx roles on one lcore. Its rate
#            is the slope of passthrough.to_host_pkts;
#   noacct   the same with --no-roce-accounting: passed, not counted;
#   testpmd  dpdk-testpmd io-forwarding the same replay into a null port on the same CPU:
#            what the ports themselves move (its Tx-pps).
# Prints medians and the paired ratios with their bootstrap 95 % intervals: frames/s with
# accounting on (target >= 10 M/s for small frames), the cost of accounting (on against off,
# target <= 15 %), and psb against the ports' own rate for 4 KB frames (keeping up).
#
#   scripts/bench/passthrough.sh [--pairs N] [--seconds S] [--cpu N] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

PAIRS=7
SECS=3
CPU=1
BENCH_OPTS=([--pairs]=PAIRS [--seconds]=SECS [--cpu]=CPU [--out]=OUT)
bench_options passthrough.sh "$@"
GEN=$BUILD/app/psb-rocegen/psb-rocegen
TESTPMD=$(command -v dpdk-testpmd || true)
[ -n "$TESTPMD" ] || { echo "passthrough.sh: dpdk-testpmd not found (scripts/setup.sh)" >&2; exit 1; }
bench_built "$PSB" "$PSBCTL" "$GEN"
bench_out passthrough
bench_scratch pt
{
	bench_about "$BUILD" "CPU $CPU for every run (psb -l $CPU; testpmd's two lcores on it)" \
		"$COMMAND"
	echo "workload psb-rocegen --flood 4096 --qps 64: RC ACKs (62 B) and RC WRITE_MIDDLEs" \
		"(4154 B); $PAIRS rounds of $SECS s runs, acct, noacct and testpmd in rotating order"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"

"$GEN" --wire "$TMP/small.pcap" --host "$TMP/h.pcap" --expect "$TMP/e.json" --flood 4096 \
	--qps 64 --max-payload 0 >/dev/null
"$GEN" --wire "$TMP/large.pcap" --host "$TMP/h.pcap" --expect "$TMP/e.json" --flood 1024 \
	--qps 64 --max-payload 4096 >/dev/null

# psb_run MODE SIZE OUT: psb passing the stream through for SECS; its rate from its counters
psb_run() {
	local mode=$1 size=$2 out=$3 extra=() a b t0 t1 i
	[ "$mode" = noacct ] && extra=(--no-roce-accounting)
	rm -f "$TMP/c.sock"
	"$PSB" --role server --ip 198.18.0.1 --port "pcap:$TMP/$size.pcap:/dev/null:loop" \
		--exception null:sink -l "$CPU" --no-huge --file-prefix "$BENCH_PREFIX-psb" \
		--ctl "$TMP/c.sock" --mtu 9000 "${extra[@]}" >"$TMP/psb.log" 2>&1 &
	local pid=$!
	PIDS+=("$pid")
	for ((i = 0; i < 100; i++)); do [ -S "$TMP/c.sock" ] && break; sleep 0.1; done
	[ -S "$TMP/c.sock" ] || { cat "$TMP/psb.log" >&2; exit 1; }
	sleep 1
	a=$("$PSBCTL" --ctl "$TMP/c.sock" --json counters passthrough)
	t0=$(date +%s.%N)
	sleep "$SECS"
	b=$("$PSBCTL" --ctl "$TMP/c.sock" --json counters passthrough)
	t1=$(date +%s.%N)
	"$PSBCTL" --ctl "$TMP/c.sock" quit >/dev/null
	wait "$pid" || true
	python3 - "$mode" "$size" "$t0" "$t1" "$out" "$a" "$b" <<'PY'
import json, sys
mode, size, t0, t1, out = sys.argv[1:6]
a, b = (json.loads(x)["counters"] for x in sys.argv[6:8])
wall = float(t1) - float(t0)
pkts = b["to_host_pkts"] - a["to_host_pkts"]
byts = b["to_host_bytes"] - a["to_host_bytes"]
json.dump({"mode": mode, "size": size, "wall_s": wall, "pkts": pkts, "bytes": byts,
           "mpps": pkts / wall / 1e6, "gbps": byts * 8 / wall / 1e9,
           "icrc_bad": b["icrc_bad"], "qp_tracked": b["qp_tracked"],
           "roce": sum(b["roce_frames"].values()), "host_dropped": b["host_dropped"]},
          open(out, "w"), indent=1)
PY
}

# testpmd_run SIZE OUT: the same replay io-forwarded into a null port; its Tx-pps
testpmd_run() {
	local size=$1 out=$2
	timeout $((SECS + 8)) "$TESTPMD" --lcores "0@$CPU,1@$CPU" --no-huge -m 1024 --no-pci \
		--file-prefix "$BENCH_PREFIX-tpmd" \
		--vdev "net_pcap0,rx_pcap=$TMP/$size.pcap,tx_pcap=/dev/null,infinite_rx=1" \
		--vdev net_null0,no-rx=1 -- --forward-mode=io --nb-cores=1 --stats-period 1 \
		--total-num-mbufs=16384 --mbuf-size=9216 --max-pkt-len=9200 \
		>"$TMP/tpmd.log" 2>&1 || true
	python3 - "$size" "$TMP/tpmd.log" "$out" "$SECS" "$TMP/$size.pcap" <<'PY'
import json, re, struct, sys
size, log, out, secs = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
# every frame of a stream is as long as the first (testpmd's null port counts no bytes)
flen = struct.unpack("<IIII", open(sys.argv[5], "rb").read()[24:40])[2]
text = open(log).read()
# each period's stats: port 1 (the null port) Tx-pps and Tx-bps
blocks = re.findall(r"NIC statistics for port 1.*?Tx-pps:\s+(\d+)\s+Tx-bps:\s+(\d+)", text, re.S)
if len(blocks) < secs + 2:
    sys.exit("testpmd: %d periods of statistics (%s)" % (len(blocks), log))
pps = sorted(int(p) for p, _ in blocks[2:])
json.dump({"mode": "testpmd", "size": size, "periods": len(pps), "frame_len": flen,
           "mpps": pps[len(pps) // 2] / 1e6, "gbps": pps[len(pps) // 2] * flen * 8 / 1e9},
          open(out, "w"), indent=1)
PY
}

total=$((PAIRS * 6))
for p in $(seq "$PAIRS"); do
	case $((p % 3)) in
	1) order="acct noacct testpmd" ;;
	2) order="noacct testpmd acct" ;;
	0) order="testpmd acct noacct" ;;
	esac
	for size in small large; do
		for m in $order; do
			if [ "$m" = testpmd ]; then
				testpmd_run "$size" "$OUT/raw/$m-$size-$p.json"
			else
				psb_run "$m" "$size" "$OUT/raw/$m-$size-$p.json"
			fi
			bench_progress $total runs
		done
	done
done
echo >&2
python3 scripts/bench/summarize.py passthrough "$OUT"
