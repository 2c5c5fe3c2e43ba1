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
# and over memif, the stream coming from another process on the other CPU (--gen-cpu:
# dpdk-testpmd io-forwarding the replay into a memif server):
#   memif-acct, memif-noacct  psb as the memif client, as above; in the same window, the
#                             share of the frames the generator read that entered the memif
#                             ring (its statistics of each second: port 0's RX, port 1's TX),
#                             the rest having found the ring full, psb behind;
#   memif-port                dpdk-testpmd as the memif client, receiving only: what the
#                             port itself delivers (its Rx-pps).
# And psb-rocecost: lib/roce alone on the same frames, what parsing, the ICRC (in place and by
# the reference) and all of the accounting take per frame.
# Prints medians and the paired ratios with their bootstrap 95 % intervals: frames/s with
# accounting on (target >= 10 M/s for small frames), the cost of accounting (on against off,
# target <= 15 %) from memory and over memif, and for 4 KB frames over memif the share psb
# took of what the generator offered with accounting on against the share without, paired
# (keeping up: >= 0.99; psb without accounting leaves about 1 % too, and the generator's own
# rate varies several times between runs here, so a ratio of rates cannot say it). The cost
# over memif is psb's only while psb sets the rate: when psb without accounting took 0.9 or
# more of what the generator offered, the summary says it was not measured. The replayed
# stream's PSNs start over at each pass, so its frames count as retransmissions: the same
# work.
#
#   scripts/bench/passthrough.sh [--pairs N] [--seconds S] [--cpu N] [--gen-cpu N] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

PAIRS=7
SECS=3
CPU=1
GEN_CPU=0
BENCH_OPTS=([--pairs]=PAIRS [--seconds]=SECS [--cpu]=CPU [--gen-cpu]=GEN_CPU [--out]=OUT)
bench_options passthrough.sh "$@"
# over memif the rates come from the generator's statistics, a block a second: a run must
# span two of them
[[ "$SECS" =~ ^[0-9]+$ ]] && [ "$SECS" -ge 2 ] ||
	{ echo "passthrough.sh: --seconds: a whole number, at least 2 (got '$SECS')" >&2; exit 2; }
GEN=$BUILD/app/psb-rocegen/psb-rocegen
COST=$BUILD/app/psb-rocegen/psb-rocecost
TESTPMD=$(command -v dpdk-testpmd || true)
[ -n "$TESTPMD" ] || { echo "passthrough.sh: dpdk-testpmd not found (scripts/setup.sh)" >&2; exit 1; }
bench_built "$PSB" "$PSBCTL" "$GEN" "$COST"
bench_out passthrough
bench_scratch pt
{
	bench_about "$BUILD" "CPU $CPU for every run (psb -l $CPU; testpmd's two lcores on it); the memif generator on CPU $GEN_CPU" \
		"$COMMAND"
	echo "workload psb-rocegen --flood N --qps 64: RC ACKs (62 B) and RC WRITE_MIDDLEs" \
		"(4154 B); $PAIRS rounds of $SECS s runs, acct, noacct and the ports alone, from" \
		"memory and over memif, in rotating order"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"

"$GEN" --wire "$TMP/small.pcap" --host "$TMP/h.pcap" --expect "$TMP/e.json" --flood 4096 \
	--qps 64 --max-payload 0 >/dev/null
"$GEN" --wire "$TMP/large.pcap" --host "$TMP/h.pcap" --expect "$TMP/e.json" --flood 1024 \
	--qps 64 --max-payload 4096 >/dev/null

# gen_start SIZE: the memif generator, testpmd io-forwarding the replay to a memif server
gen_start() {
	rm -f "$TMP/m.sock"
	# its statistics of each second written as they come, to be read during the run
	stdbuf -oL "$TESTPMD" --lcores "0@$GEN_CPU,1@$GEN_CPU" --no-huge -m 1024 --no-pci \
		--file-prefix "$BENCH_PREFIX-gen" \
		--vdev "net_pcap0,rx_pcap=$TMP/$1.pcap,tx_pcap=/dev/null,infinite_rx=1" \
		--vdev "net_memif0,role=server,socket=$TMP/m.sock,socket-abstract=no,bsize=9216,rsize=11" \
		-- --forward-mode=io --nb-cores=1 --total-num-mbufs=32768 --mbuf-size=9216 \
		--stats-period 1 >"$TMP/gen.log" 2>&1 </dev/null &
	GEN_PID=$!
	PIDS+=("$GEN_PID")
	# its port started, not only its socket made: a client that connects before stays down
	for ((i = 0; i < 100; i++)); do
		grep -q "packet forwarding - ports" "$TMP/gen.log" && sleep 0.5 && return
		sleep 0.1
	done
	cat "$TMP/gen.log" >&2
	exit 1
}

gen_stop() {
	kill "$GEN_PID" 2>/dev/null || true
	wait "$GEN_PID" 2>/dev/null || true
}

# psb_run MODE SIZE OUT: psb passing the stream through for SECS; its rate from its counters
psb_run() {
	local mode=$1 size=$2 out=$3 extra=() a b t0 t1 i port k0=0 k1=0
	port="pcap:$TMP/$size.pcap:/dev/null:loop"
	case $mode in *noacct) extra=(--no-roce-accounting) ;; esac
	case $mode in memif-*) port="memif:client:$TMP/m.sock"; gen_start "$size" ;; esac
	rm -f "$TMP/c.sock"
	"$PSB" --role server --ip 198.18.0.1 --port "$port" \
		--exception null:sink -l "$CPU" --no-huge --file-prefix "$BENCH_PREFIX-psb" \
		--ctl "$TMP/c.sock" --mtu 9000 "${extra[@]}" >"$TMP/psb.log" 2>&1 &
	local pid=$!
	PIDS+=("$pid")
	for ((i = 0; i < 100; i++)); do [ -S "$TMP/c.sock" ] && break; sleep 0.1; done
	[ -S "$TMP/c.sock" ] || { cat "$TMP/psb.log" >&2; exit 1; }
	# frames flowing (a memif link comes up some time after the socket), then a second more
	for ((i = 0; i < 100; i++)); do
		"$PSBCTL" --ctl "$TMP/c.sock" counters passthrough.to_host_pkts |
			grep -qv ' 0$' && break
		sleep 0.1
	done
	sleep 1
	# over memif, the generator's statistics blocks written so far, before and after
	k0=$(grep -c "Port statistics" "$TMP/gen.log" 2>/dev/null || true)
	a=$("$PSBCTL" --ctl "$TMP/c.sock" --json counters passthrough)
	t0=$(date +%s.%N)
	sleep "$SECS"
	b=$("$PSBCTL" --ctl "$TMP/c.sock" --json counters passthrough)
	t1=$(date +%s.%N)
	k1=$(grep -c "Port statistics" "$TMP/gen.log" 2>/dev/null || true)
	"$PSBCTL" --ctl "$TMP/c.sock" quit >/dev/null
	wait "$pid" || true
	case $mode in memif-*) gen_stop ;; esac
	python3 - "$mode" "$size" "$t0" "$t1" "$out" "$a" "$b" "$TMP/gen.log" "$k0" "$k1" <<'PY'
import json, re, sys
mode, size, t0, t1, out = sys.argv[1:6]
a, b = (json.loads(x)["counters"] for x in sys.argv[6:8])
wall = float(t1) - float(t0)
gen = {}
if mode.startswith("memif-"):
    # what the generator read from its replay (port 0's RX) and what entered the memif
    # ring (port 1's TX; the rest found the ring full: psb behind), between the last blocks
    # of its statistics before and after the measurement
    k0, k1 = int(sys.argv[9]), int(sys.argv[10])
    blocks = open(sys.argv[8]).read().split("Port statistics")[1:]
    if k0 < 1 or k1 <= k0 or len(blocks) < k1:
        sys.exit("memif generator: statistics blocks %d..%d of %d" % (k0, k1, len(blocks)))
    def cum(blk, port, what):
        return int(re.search(r"NIC statistics for port %d.*?%s:\s+(\d+)" % (port, what),
                             blk, re.S).group(1))
    offered = cum(blocks[k1 - 1], 0, "RX-packets") - cum(blocks[k0 - 1], 0, "RX-packets")
    entered = cum(blocks[k1 - 1], 1, "TX-packets") - cum(blocks[k0 - 1], 1, "TX-packets")
    rates = [cum(blk, 0, "Rx-pps") for blk in blocks[k0:k1]]
    gen = {"gen_offered": offered, "gen_entered": entered, "gen_blocks": k1 - k0,
           "share": entered / offered if offered else 0.0,
           "offered_mpps": sum(rates) / len(rates) / 1e6}
pkts = b["to_host_pkts"] - a["to_host_pkts"]
byts = b["to_host_bytes"] - a["to_host_bytes"]
json.dump({"mode": mode, "size": size, "wall_s": wall, "pkts": pkts, "bytes": byts,
           "mpps": pkts / wall / 1e6, "gbps": byts * 8 / wall / 1e9,
           "icrc_bad": b["icrc_bad"], "qp_tracked": b["qp_tracked"],
           "roce": sum(b["roce_frames"].values()), "host_dropped": b["host_dropped"], **gen},
          open(out, "w"), indent=1)
PY
}

# testpmd_run MODE SIZE OUT: testpmd, its rate from its statistics of each second:
#   testpmd     the replay io-forwarded into a null port (port 1's Tx-pps);
#   memif-port  the memif generator's stream received and dropped (port 0's Rx-pps)
testpmd_run() {
	local mode=$1 size=$2 out=$3 args
	if [ "$mode" = testpmd ]; then
		args=(--vdev "net_pcap0,rx_pcap=$TMP/$size.pcap,tx_pcap=/dev/null,infinite_rx=1"
			--vdev net_null0,no-rx=1 -- --forward-mode=io --max-pkt-len=9200)
	else
		gen_start "$size"
		args=(--vdev "net_memif0,role=client,socket=$TMP/m.sock,socket-abstract=no"
			-- --forward-mode=rxonly)
	fi
	timeout $((SECS + 15)) "$TESTPMD" --lcores "0@$CPU,1@$CPU" --no-huge -m 1024 --no-pci \
		--file-prefix "$BENCH_PREFIX-tpmd" "${args[@]}" --nb-cores=1 --stats-period 1 \
		--total-num-mbufs=16384 --mbuf-size=9216 >"$TMP/tpmd.log" 2>&1 || true
	[ "$mode" = testpmd ] || gen_stop
	python3 - "$mode" "$size" "$TMP/tpmd.log" "$out" "$SECS" "$TMP/$size.pcap" <<'PY'
import json, re, struct, sys
mode, size, log, out, secs = sys.argv[1:5] + [int(sys.argv[5])]
# every frame of a stream is as long as the first (a null port counts no bytes)
flen = struct.unpack("<IIII", open(sys.argv[6], "rb").read()[24:40])[2]
text = open(log).read()
if mode == "testpmd":
    pat = r"NIC statistics for port 1.*?Tx-pps:\s+(\d+)"
else:
    pat = r"NIC statistics for port 0.*?Rx-pps:\s+(\d+)"
rates = [int(p) for p in re.findall(pat, text, re.S)]
if len(rates) < secs + 2:
    sys.exit("testpmd: %d periods of statistics (%s)" % (len(rates), log))
pps = sorted(rates[2:])
json.dump({"mode": mode, "size": size, "periods": len(pps), "frame_len": flen,
           "mpps": pps[len(pps) // 2] / 1e6, "gbps": pps[len(pps) // 2] * flen * 8 / 1e9},
          open(out, "w"), indent=1)
PY
}

# where the time of accounting goes: lib/roce alone on the same frames, in memory, on CPU
for size in small large; do
	taskset -c "$CPU" "$COST" --rounds "$PAIRS" "$TMP/$size.pcap" >"$OUT/raw/cost-$size.json"
done

total=$((PAIRS * 12))
for p in $(seq "$PAIRS"); do
	case $((p % 3)) in
	1) order="acct noacct testpmd memif-acct memif-noacct memif-port" ;;
	2) order="noacct testpmd acct memif-noacct memif-port memif-acct" ;;
	0) order="testpmd acct noacct memif-port memif-acct memif-noacct" ;;
	esac
	for size in small large; do
		for m in $order; do
			if [ "$m" = testpmd ] || [ "$m" = memif-port ]; then
				testpmd_run "$m" "$size" "$OUT/raw/$m-$size-$p.json"
			else
				psb_run "$m" "$size" "$OUT/raw/$m-$size-$p.json"
			fi
			bench_progress $total runs
		done
	done
done
echo >&2
bench_finish passthrough
