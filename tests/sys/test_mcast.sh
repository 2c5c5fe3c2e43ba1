#!/bin/bash
# psb's reliable multicast between ordinary processes on the namespace testbed
# (scripts/testbed.sh): a psb-mcast sender and three kernel-socket receivers, one with no
# loss, one losing 3 % of what arrives and one losing 5 % that joins after the first
# versions went (nftables drops in their namespaces), and a fifth host multicasting junk
# and forged packets to the same group meanwhile. Every receiver must end holding the last
# version, whole, its CRC and every byte checked; the lossy ones repaired by parity.
#
# usage: test_mcast.sh PATH/psb-mcast TESTBED-SCRIPT. Needs root and nft; 77 without.
set -uo pipefail
MC=$1
TB=$2
NAME=m$$
NAME=${NAME:0:8}
GROUP=239.18.0.1:7000
COUNT=12
. "$(dirname "$0")/testbed_env.sh"

testbed_up 5
drop 2 3 7000
drop 3 5 7000

recv() {	# recv HOST: a receiver on HOST in the background
	on "$1" timeout -k 2 40 "$MC" recv --local "$("$TB" addr "$1")" --group "$GROUP" \
		--expect $COUNT --max-time 30 --json "$DIR/r$1.json" > "$DIR/r$1.log" 2>&1 &
	PIDS+=($!)
}
recv 1
recv 2
sleep 0.3
on 0 timeout -k 2 60 "$MC" send --local "$("$TB" addr 0):7001" --group "$GROUP" \
	--count $COUNT --data-size 3MB --push-frequency 0.1 --linger 1 --json "$DIR/s.json" \
	> "$DIR/s.log" 2>&1 &
SENDER=$!
PIDS+=($SENDER)
sleep 0.35
recv 3
# junk and forged packets to the group from host 4, while the versions stream
on 4 python3 - "${GROUP%:*}" "${GROUP#*:}" <<'PY' || fail "the forger failed"
import random, socket, struct, sys
g, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
rnd = random.Random(5)
for i in range(300):
    if i % 3 == 0:
        pkt = bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(1, 200)))
    else:
        # a well-formed DATA packet of another session, for versions 1..12
        vid, total, seg = rnd.randrange(1, 13), 3000000, 8932
        nseg = (total + seg - 1) // seg
        hdr = struct.pack(">HBBIIIQIHHIHH", 0x504D, 2, 1, 0xBAD5E55, vid, nseg, total,
                          0, 64, seg, 0, seg, 0)
        pkt = hdr + bytes(seg)
    s.sendto(pkt, (g, port))
PY
wait "$SENDER" || fail "the sender exited with $?"
for h in 1 2 3; do
	wait "${PIDS[$((h - 1))]}" || true
done
python3 - "$DIR" $COUNT <<'PY' || fail "checks"
import json, sys
d, count = sys.argv[1], int(sys.argv[2])
s = json.load(open(f"{d}/s.json"))
assert s["published"] == count and s["sent_whole"] == count, s
for h in (1, 2, 3):
    r = json.load(open(f"{d}/r{h}.json"))
    assert r["ok"] and r["held"] == count and r["bytes_differ"] == 0 and r["crc_fail"] == 0, (h, r)
    if h in (2, 3):
        assert r["decoded_groups"] > 0 and r["nacks"] > 0, (h, r)
assert s["nacks"] > 0 and s["repair_parity_pkts"] > 0, s
print(f"multicast: 3 receivers hold version {count} checked; sender repairs "
      f"{s['repair_parity_pkts']} parity + {s['repair_data_pkts']} data packets for {s['nacks']} NACKs")
PY
grep -q "forged [1-9]" "$DIR/r1.log" || fail "receiver 1 counted no forged packets: $(tail -n 1 "$DIR/r1.log")"
grep -q "malformed [1-9]" "$DIR/r1.log" || fail "receiver 1 counted no malformed packets"
grep -q "late joins\|holds version" "$DIR/r3.log" || fail "receiver 3 printed no summary"
echo "test_mcast: ok"
