#!/bin/bash
# A BYE on a memif link whose peer then does not leave: psb (server side) pauses the port,
# and the pause ends by itself once PSB_BYE_PAUSE_NS passed with the link up; what the
# peer sends after it is answered. The peer is dpdk-testpmd forwarding a generated pcap
# (a push and a BYE) into memif; replaying it shows the port polled again.
#
# usage: test_bye_memif.sh PATH/psb PATH/psbctl
source "$(dirname "$0")/../export/common.sh" "${1:?usage: test_bye_memif.sh PATH/psb PATH/psbctl}"
PSBCTL=${2:?usage: test_bye_memif.sh PATH/psb PATH/psbctl}
TESTPMD=${DPDK_TESTPMD:-dpdk-testpmd}
command -v "$TESTPMD" >/dev/null || fail "$TESTPMD not found (package dpdk-dev)"

# The peer's frames: a push of key 1 and its BYE, both from 198.18.0.2 (02:00:00:00:00:02).
PYTHONPATH="$HERE/../lib" python3 - "$DIR/in.pcap" <<'EOF'
import struct, sys
import psbframe as pf

def frame(dmac, dip, mtype, key, req, value):
    n = len(value)
    h = pf.hdr(mtype, req=req, key=key, total=n, seg_len=n, seg_size=n if n else 1432)
    return pf.udp_frame(dmac, "02:00:00:00:00:02", "198.18.0.2", dip, 9432, pf.UDP_PORT,
                        h + value)

pf.write_pcap(sys.argv[1], [
    frame("02:00:00:00:00:01", "198.18.0.1", 0x01, 1, 1, struct.pack("<4f", 1, 2, 3, 4)),
    frame("ff:ff:ff:ff:ff:ff", "255.255.255.255", pf.BYE, 0, 0, b"")])
EOF

start_psb server --role server --port "memif:server:$DIR/m.sock" --ip 198.18.0.1 \
	--mac 02:00:00:00:00:01 --async --num-workers 1 -l 0 --no-huge --file-prefix "$TAG-s" -v
SPID=$LAST_PID
for _ in $(seq 300); do alive $SPID; [ -S "$RUNDIR/$TAG-s/psb.ctl" ] && break; sleep 0.1; done
[ -S "$RUNDIR/$TAG-s/psb.ctl" ] || fail "psb's control socket did not appear within 30 s"

# get PATH: one counter of psb's; wait_for PATH VALUE SECONDS WHAT: until it is VALUE
get() { ctl_get "$TAG-s" "$1"; }
wait_for() { ctl_wait $SPID "$TAG-s" eq "$@"; }

mkfifo "$DIR/testpmd.in"
"$TESTPMD" -l 0,1 --no-huge -m 256 --no-pci --file-prefix "$TAG-t" \
	--vdev "net_pcap0,rx_pcap=$DIR/in.pcap,tx_pcap=$DIR/out.pcap" \
	--vdev "net_memif0,role=client,socket=$DIR/m.sock,socket-abstract=no" \
	-- -i --no-flush-rx --total-num-mbufs=2048 <"$DIR/testpmd.in" >"$DIR/testpmd.log" 2>&1 &
PIDS+=($!)
exec 3>"$DIR/testpmd.in"
wait_for ports.0.paused false 20 "the memif link did not come up"

# The push, then the BYE: the port pauses, and with the link up the pause ends by itself.
echo start >&3
wait_for roles.rx0.byes 1 10 "the BYE was not accepted"
wait_for ports.0.paused false 10 "the port stayed paused while its link stayed up"
wait_for ports.0.bye_pauses 1 5 "the BYE did not pause the memif port"
wait_for ports.0.bye_pause_expiries 1 5 "the pause did not end by time"
wait_for store.push 1 5 "the push was not served"

# The peer sends the same again: the push (a retry now) is answered, the BYE pauses anew.
printf '%s\n' stop 'port stop 0' 'port start 0' start >&3
wait_for store.retries_answered 1 10 "the push after the pause was not answered"
wait_for ports.0.bye_pauses 2 10 "the second BYE did not pause the port"
wait_for ports.0.bye_pause_expiries 2 10 "the second pause did not end"
# The shard's answers each went out (tx_pkts = the port's opackets) or were dropped for the
# paused port, once.
get roles >"$DIR/roles.json"
get ports.0 >"$DIR/port.json"
python3 - "$DIR/roles.json" "$DIR/port.json" <<'EOF' || fail "the answers are not accounted once"
import json, sys
r, p = (json.load(open(f)) for f in sys.argv[1:3])
tx, srv = r["tx0"], r["server0"]
print("server0 queued %d; tx0 sent %d (port: %d), dropped for the paused port %d"
      % (srv["tx_pkts"], tx["tx_pkts"], p["opackets"], tx["paused_drops"]))
assert srv["tx_pkts"] == 2 and tx["tx_pkts"] == p["opackets"], (srv, tx, p)
assert tx["tx_pkts"] + tx["paused_drops"] + srv["tx_ring_full"] == srv["tx_pkts"], (srv, tx)
EOF
echo "memif: a BYE without leaving paused the port for a while, never for good"
