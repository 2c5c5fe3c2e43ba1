#!/bin/bash
# pcap replay of the passthrough: psb on a wire port (pcap) and an exception port toward the
# host (pcap). In on the wire: psb-rocegen's RoCE traffic for the host (every opcode kind,
# v1, v2 over IPv4 and IPv6, losses, retransmissions, bad ICRCs, malformed RoCE) and the rest
# a host hears (ARP, ICMP, neighbour discovery, TCP, UDP, LLDP), with psb's own traffic
# among it (ARP and ICMP for psb, psb ECHO requests). In from the host: its answers.
#  - every frame not psb's comes out toward the host byte for byte, in order, and every
#    frame of the host's out of the wire port the same; psb answers its own and passes none
#    of them to the host;
#  - every counter exact: per queue pair and the totals as psb-rocegen's scenario says
#    (from the stats file, the same rows the control plane shows), frames and bytes each way;
#  - a table of 8 queue pairs under 100 more: evicted, counted, every frame in the totals;
#  - accounting off: the same bytes pass, nothing is counted; the queue for the host is what
#    --exception-queue says, and one not a power of 2 is refused.
set -euo pipefail
PSB=$1 GEN=$2 COMPARE=$3 LIBPY=$4
DIR=$(mktemp -d /tmp/psb-pt-XXXXXX)
PREFIX=psbpt-$$
cleanup() {
	rm -rf "$DIR" "/var/run/dpdk/$PREFIX"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# psb ROCE_QPS EXTRA...: one run over $DIR/in.pcap and $DIR/h.pcap
run_psb() {
	local qps=$1; shift
	rm -f "$DIR/wout.pcap" "$DIR/hout.pcap" "$DIR/st.json"
	if ! timeout 60 "$PSB" --role server --ip 198.18.0.1 --mac 02:00:00:00:00:01 \
		--port "pcap:$DIR/in.pcap:$DIR/wout.pcap" \
		--exception "pcap:$DIR/h.pcap:$DIR/hout.pcap" --roce-qps "$qps" --echo \
		--mtu 9000 -l 0 --no-huge --mbufs 8192 --idle-exit 400 --file-prefix "$PREFIX" \
		--stats-file "$DIR/st.json" --ctl none "$@" > "$DIR/psb.log" 2>&1; then
		cat "$DIR/psb.log" >&2
		fail "psb did not pass the traffic through and exit 0"
	fi
	grep -q "passthrough: exception port pcap:$DIR/h.pcap" "$DIR/psb.log" ||
		fail "psb did not say what it passes where: $(grep -i pass "$DIR/psb.log")"
	grep -q "at most $qps RoCE queue pairs" "$DIR/psb.log" ||
		fail "psb did not print its queue pair budget"
}

# psb's own traffic among the host's: ARP and ICMP echo for 198.18.0.1, psb ECHO requests
mix() {
	PYTHONPATH=$LIBPY python3 - "$DIR" <<'PY'
import socket, struct, sys
import psbframe as pf
d = sys.argv[1]

frames = pf.read_pcap

peer_mac, psb_mac = "02:18:00:00:00:03", "02:00:00:00:00:01"
arp = (b"\xff" * 6 + pf.mac(peer_mac) + b"\x08\x06" +
       struct.pack("!HHBBH", 1, 0x0800, 6, 4, 1) + pf.mac(peer_mac) +
       socket.inet_aton("198.18.0.3") + b"\0" * 6 + socket.inet_aton("198.18.0.1"))
arp += b"\0" * (60 - len(arp))
icmp = struct.pack("!BBHHH", 8, 0, 0, 0x77, 1) + b"psb" * 10
icmp = icmp[:2] + struct.pack("!H", pf.csum(icmp)) + icmp[4:]
ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(icmp), 0, 0x4000, 64, 1, 0,
                 socket.inet_aton("198.18.0.3"), socket.inet_aton("198.18.0.1"))
ip = ip[:10] + struct.pack("!H", pf.csum(ip)) + ip[12:]
ping = pf.mac(psb_mac) + pf.mac(peer_mac) + b"\x08\x00" + ip + icmp
own = [arp, ping]
for i in range(6):
    own.append(pf.udp_frame(psb_mac, peer_mac, "198.18.0.3", "198.18.0.1", 40000 + i,
                            pf.UDP_PORT, pf.hdr(pf.ECHO, req=i + 1, total=16, seg_len=16,
                                                seg_size=16) + bytes(range(16))))
w = frames(d + "/w.pcap")
out, k = [], 0
for i, f in enumerate(w):
    if i % 15 == 7 and k < len(own):
        out.append(own[k])
        k += 1
    out.append(f)
out += own[k:]
pf.write_pcap(d + "/in.pcap", out)
open(d + "/own.txt", "w").write("%d\n" % len(own))
PY
}

# every frame not psb's toward the host and every host frame to the wire, byte for byte
check_bytes() {
	PYTHONPATH=$LIBPY python3 - "$DIR" <<'PY'
import json, sys
import psbframe as pf
d = sys.argv[1]

frames = pf.read_pcap

psb_mac = bytes.fromhex("020000000001")
w, h = frames(d + "/w.pcap"), frames(d + "/h.pcap")
hout, wout = frames(d + "/hout.pcap"), frames(d + "/wout.pcap")
own = int(open(d + "/own.txt").read())
assert hout == w, "toward the host: %d frames, %d expected, first difference at %s" % (
    len(hout), len(w), next((i for i, (a, b) in enumerate(zip(hout, w)) if a != b), "end"))
mine = [f for f in wout if f[6:12] == psb_mac]
theirs = [f for f in wout if f[6:12] != psb_mac]
assert theirs == h, "to the wire: %d host frames, %d expected" % (len(theirs), len(h))
# psb answered its own: the ARP reply, the ICMP echo reply, 6 ECHO responses
assert len(mine) == own, "psb answered %d of its %d frames" % (len(mine), own)
assert any(f[12:14] == b"\x08\x06" and f[21] == 2 for f in mine), "no ARP reply"
assert any(f[12:14] == b"\x08\x00" and f[23] == 1 and f[34] == 0 for f in mine), "no ICMP reply"
st = json.load(open(d + "/st.json"))
rx = next(r for r in st["roles"] if r["role"] == "rx")
pt = st["passthrough"]
assert rx["to_host"] == len(w), (rx["to_host"], len(w))
assert sum(rx["drops"].values()) == 0, rx["drops"]
assert pt["to_host_pkts"] == len(w) and pt["to_host_bytes"] == sum(map(len, w)), pt
assert pt["from_host_pkts"] == len(h) and pt["from_host_bytes"] == sum(map(len, h)), pt
assert pt["host_dropped"] == 0, pt
json.dump(pt["roce_qp"], open(d + "/qp.json", "w"))
print("bytes: %d frames toward the host, %d to the wire, %d answered by psb" %
      (len(hout), len(theirs), len(mine)))
PY
}

"$GEN" --wire "$DIR/w.pcap" --host "$DIR/h.pcap" --expect "$DIR/e.json" --repeat 4 >/dev/null
mix
run_psb 1024
check_bytes || fail "the bytes passed are not the bytes given"
python3 "$COMPARE" "$DIR/e.json" "$DIR/qp.json" || fail "the counters are not the scenario's"
python3 - "$DIR/qp.json" "$DIR/e.json" <<'PY' || fail "the passthrough's figures"
import json, sys
q, e = (json.load(open(p)) for p in sys.argv[1:3])
t = q["totals"]
assert q["accounting"] is True and q["cap"] == 1024 and q["tracked"] == len(e["qps"]), q
assert t["qp_evicted"] == 0 and t["qp_tracked"] == len(e["qps"]), t
PY

# 100 more queue pairs into a table of 8
"$GEN" --wire "$DIR/w.pcap" --host "$DIR/h.pcap" --expect "$DIR/e.json" --churn 100 >/dev/null
mix
run_psb 8
check_bytes || fail "with a table of 8: the bytes passed are not the bytes given"
python3 - "$DIR/qp.json" "$DIR/e.json" <<'PY' || fail "eviction"
import json, sys
q, e = (json.load(open(p)) for p in sys.argv[1:3])
t, et = q["totals"], e["totals"]
assert t["qp_new"] == et["qp_new"] and t["qp_evicted"] == et["qp_new"] - 8, t
assert t["qp_tracked"] == 8 and q["tracked"] == 8 and len(q["qps"]) == 8, q
for k in ("v1", "v2_ip4", "v2_ip6", "bytes", "malformed", "icrc_bad", "ops", "naks"):
    assert t[k] == et[k], (k, t[k], et[k])
print("eviction: %d queue pairs into 8, %d evicted, totals whole" % (t["qp_new"], t["qp_evicted"]))
PY

# accounting off: the same frames pass, nothing counted
"$GEN" --wire "$DIR/w.pcap" --host "$DIR/h.pcap" --expect "$DIR/e.json" >/dev/null
mix
run_psb 1024 --no-roce-accounting --exception-queue 64
check_bytes || fail "accounting off: the bytes passed are not the bytes given"
grep -q "64 frames queued for the host (--exception-queue)" "$DIR/psb.log" ||
	fail "psb did not print its queue for the host"
if "$PSB" --role server --ip 198.18.0.1 --port null --exception null:sink \
	--exception-queue 100 --no-huge > "$DIR/bad.log" 2>&1; then
	fail "an exception queue of 100 frames was taken"
fi
grep -q "node.exception_queue: 100 is not a power of 2" "$DIR/bad.log" ||
	fail "the refusal did not name node.exception_queue: $(tail -1 "$DIR/bad.log")"
python3 - "$DIR/qp.json" <<'PY' || fail "accounting off still counted"
import json, sys
q = json.load(open(sys.argv[1]))
t = q["totals"]
assert q["accounting"] is False and q["tracked"] == 0 and q["qps"] == [], q
assert t["v1"] + t["v2_ip4"] + t["v2_ip6"] + t["malformed"] == 0, t
PY
echo PASS
