#!/bin/bash
# How fast one core segments, paces and hands out parameter versions (the CRC32C of each
# included), in rotating runs of --seconds each, paced at --rate Gbit/s:
#   copy  psb's multicast sender into packet buffers (a copy of every packet, as a driver's
#         transmit path makes), 10 MB versions back to back (psb-mcast bench);
#   udp   the same sender into kernel UDP sockets (sendmsg, as psb-mcast does between
#         ordinary processes);
#   dpdk  psb itself: the trainer role on DPDK into a null port (null:sink), making a 10 MB
#         version every 2 ms (5 GB/s offered) on the same core (fill and CRC32C) and sending
#         it through the tx role, all on one lcore; its one worker's join comes from a pcap
#         port. The data rate is the slope of its sent bytes (experiment.trainer.data_bytes)
#         over the run.
# Prints the medians, the paired ratios against udp with their bootstrap 95 % intervals;
# the figure asked for is >= 3 GB/s of data on one core, into a null or pcap sink.
#
#   scripts/bench/mc_send.sh [--pairs N] [--seconds S] [--rate GBITS] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

PAIRS=10
SECS=2
RATE=100
PUSH_MS=2	# dpdk: a 10 MB version this often (5 GB/s offered)
BENCH_OPTS=([--pairs]=PAIRS [--seconds]=SECS [--rate]=RATE [--out]=OUT)
bench_options mc_send.sh "$@"
MC=$BUILD/app/psb-mcast/psb-mcast
bench_built "$MC" "$PSB"
bench_out mc_send
bench_scratch mcsend
{
	bench_about "$BUILD" "none (one process at a time, unpinned)" "$COMMAND"
	echo "workload 10000000 B versions, 8932 B segments, paced at $RATE Gbit/s;" \
		"$PAIRS rounds of $SECS s runs, copy, udp and dpdk sinks in rotating order;" \
		"copy and udp: versions back to back; dpdk: a version made every $PUSH_MS ms"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"

# The trainer's one worker joins from a pcap file; its versions go to the null port.
python3 - "$TMP/join.pcap" <<'PY'
import struct, sys
def csum(h):
    s = sum(struct.unpack(">10H", h))
    s = (s >> 16) + (s & 0xffff)
    return ~(s + (s >> 16)) & 0xffff
join = struct.pack(">HBBIIIIIQQQ", 0x5354, 1, 1, 0, 0, 0, 0, 0, 4713, 0, 0)
udp = struct.pack(">HHHH", 7402, 7401, 8 + len(join), 0) + join
ip = bytearray(struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0x4000, 64, 17, 0,
                           bytes([198, 18, 0, 1]), bytes([198, 18, 0, 9])))
ip[10:12] = struct.pack(">H", csum(bytes(ip)))
frame = b"\x02\0\0\0\0\x09" + b"\x02\0\0\0\0\x01" + b"\x08\x00" + bytes(ip) + udp
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 65535, 1))
    f.write(struct.pack("<IIII", 0, 1, len(frame), len(frame)) + frame)
PY
cat > "$TMP/trainer.json" <<EOF
{"name": "sink", "kind": "staleness",
 "node": {"role": "trainer", "ip": "198.18.0.9", "mac": "02:00:00:00:00:09",
          "ports": ["null:sink", "pcap:$TMP/join.pcap:/dev/null"], "mtu": 9000,
          "file_prefix": "$BENCH_PREFIX"},
 "staleness": {"mode": "multicast", "port": 7401, "group": "239.18.0.9", "group_port": 7400,
               "workers": 1, "key": 4713, "data_size": 10, "push_frequency": "${PUSH_MS}ms",
               "max_version": 1000000000, "max_time": "${SECS}s", "rate": "${RATE}Gbps",
               "post_frequency": "1s", "end_timeout": "100ms"},
 "output": {"dir": "res", "overwrite": true, "counters_file": "c.jsonl",
            "counters_every": "100ms"}}
EOF

# dpdk_run JSON: psb's trainer role into the null port; its rate from the counters file.
# The run ends failed by design (a sink has no worker to hold the final version).
dpdk_run() {
	rm -rf "$TMP/res"
	python3 - "$PSB" "$TMP" "$1" "$RATE" "$PUSH_MS" <<'PY'
import json, subprocess, sys
psb, tmp, out, rate, push_ms = sys.argv[1:]
log = open(tmp + "/psb.log", "w")
rc = subprocess.run([psb, "--config", tmp + "/trainer.json", "--output-dir", tmp,
                     "--ctl", "none"], stdout=log, stderr=subprocess.STDOUT, timeout=120).returncode
lines = [json.loads(l)["counters"] for l in open(tmp + "/res/c.jsonl")]
pts = [(c["node"]["uptime_s"], c["experiment"]["trainer"]) for c in lines
       if "trainer" in c.get("experiment", {})]
run = [(t, f) for t, f in pts if f["running"]]
if rc != 1 or len(run) < 5:
    sys.exit("psb's trainer into the null port: exit %d, %d points (%s/psb.log)" %
             (rc, len(run), tmp))
(t0, a), (t1, b) = run[1], run[-1]
last = pts[-1][1]
wall = t1 - t0
data = b["data_bytes"] - a["data_bytes"]
json.dump({"sink": "dpdk", "data_size": 10000000, "rate_bps": int(float(rate) * 1e9),
           "push_ms_period": float(push_ms), "offered_gb_per_s": 10.0 / float(push_ms),
           "wall_ns": int(wall * 1e9), "data_bytes": data, "gb_per_s": data / wall / 1e9,
           # its lcore polls: the whole of one core, whatever it does
           "gb_per_cpu_s": data / wall / 1e9,
           "published": last["published"], "superseded": last["superseded"],
           "pushes": last["pushes"], "late_pushes": last["late_pushes"],
           "push_ms": last["push_ms_mean"], "data_pkts": last["data_pkts"]},
          open(out, "w"), indent=1)
PY
}

total=$((PAIRS * 3))
for p in $(seq "$PAIRS"); do
	# each sink first, second and last as often as the others
	case $((p % 3)) in
	1) order="copy udp dpdk" ;;
	2) order="udp dpdk copy" ;;
	0) order="dpdk copy udp" ;;
	esac
	for w in $order; do
		if [ "$w" = dpdk ]; then
			dpdk_run "$OUT/raw/$w-$p.json"
		else
			"$MC" bench --sink "$w" --seconds "$SECS" --rate "$RATE" \
				--json "$OUT/raw/$w-$p.json" > /dev/null
		fi
		bench_progress $total runs
	done
done
echo >&2
bench_finish mc_send
