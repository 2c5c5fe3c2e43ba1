#!/bin/bash
# A host that sends faster than the wire takes: its frames use at most half of psb's
# transmit ring, the rest wait in the exception port (counted, host_held), and none is lost
# to a full ring; once the wire takes again, they flow. The wire is a memif link whose peer
# (dpdk-testpmd, receiving only) is stopped, so that psb's transmit backs up; the host
# replays its frames without end.
#
# usage: test_host_share.sh PATH/psb PATH/psbctl
source "$(dirname "$0")/../export/common.sh" "${1:?usage: test_host_share.sh PATH/psb PATH/psbctl}"
PSBCTL=${2:?usage: test_host_share.sh PATH/psb PATH/psbctl}
TESTPMD=${DPDK_TESTPMD:-dpdk-testpmd}
command -v "$TESTPMD" >/dev/null || fail "$TESTPMD not found (package dpdk-dev)"

# The host's frames: UDP from 198.18.0.3 (the host behind psb) to a peer on the wire.
PYTHONPATH="$HERE/../lib" python3 - "$DIR/host.pcap" <<'EOF'
import sys
import psbframe as pf

pf.write_pcap(sys.argv[1], [pf.udp_frame("02:00:00:00:00:02", "02:00:00:00:00:03",
                                         "198.18.0.3", "198.18.0.2", 5000, 6000 + i,
                                         bytes(200)) for i in range(64)])
EOF

start_psb server --role server --port "memif:server:$DIR/m.sock" --ip 198.18.0.1 \
	--mac 02:00:00:00:00:01 --exception "pcap:$DIR/host.pcap:$DIR/to-host.pcap:loop" \
	-l 0 --no-huge --file-prefix "$TAG-s"
SPID=$LAST_PID
for _ in $(seq 300); do alive $SPID; [ -S "$RUNDIR/$TAG-s/psb.ctl" ] && break; sleep 0.1; done
[ -S "$RUNDIR/$TAG-s/psb.ctl" ] || fail "psb's control socket did not appear within 30 s"
grep -q "the host's frames use at most half of the transmit ring's 8192 places" \
	"$DIR/server.log" || fail "the host's share is not said at start"

# get PATH: one counter of psb's; wait_for PATH VALUE SECONDS WHAT: until it is VALUE;
# wait_more PATH THAN SECONDS WHAT: until it is above THAN
get() { ctl_get "$TAG-s" "$1"; }
wait_for() { ctl_wait $SPID "$TAG-s" eq "$@"; }
wait_more() { ctl_wait $SPID "$TAG-s" gt "$@"; }

mkfifo "$DIR/testpmd.in"
"$TESTPMD" -l 0,1 --no-huge -m 256 --no-pci --file-prefix "$TAG-t" \
	--vdev "net_memif0,role=client,socket=$DIR/m.sock,socket-abstract=no" \
	-- -i --forward-mode=rxonly --total-num-mbufs=2048 <"$DIR/testpmd.in" \
	>"$DIR/testpmd.log" 2>&1 &
TPID=$!
PIDS+=("$TPID")
exec 3>"$DIR/testpmd.in"
echo start >&3
wait_for ports.0.paused false 30 "the memif link did not come up"
wait_more passthrough.from_host_pkts $(($(get passthrough.from_host_pkts) + 10000)) 20 \
	"the host's frames did not reach the wire"

# The wire stops taking: the host's frames stop at half the ring and wait.
kill -STOP "$TPID"
wait_more passthrough.host_held 1000 10 "the host's frames were not held"
sleep 1
held=$(get passthrough.from_host_pkts)
sleep 0.5
[ "$(get passthrough.from_host_pkts)" = "$held" ] ||
	fail "the host's frames kept coming with the wire stopped"
get roles >"$DIR/roles.json"
python3 - "$DIR/roles.json" <<'EOF' || fail "the host's frames took more than half the transmit ring"
import json, sys
r = json.load(open(sys.argv[1]))
pt, tx = r["passthrough0"], r["tx0"]
# none lost to a full ring; what psb took from the host and did not send (or drop while the
# link was down) waits in the ring, half of its 8192 places, and in the tx role's backlog
# (up to 256): without the limit the ring would hold 8191
assert pt["tx_ring_full"] == 0 and tx["tx_ring_full"] == 0, (pt, tx)
waiting = pt["tx_pkts"] - tx["tx_pkts"] - tx["paused_drops"]
assert 4096 - 64 <= waiting <= 4096 + 256, (waiting, pt, tx)
print("held: %d of the host's frames waiting in psb" % waiting)
EOF
# The wire takes again: so does the host.
kill -CONT "$TPID"
wait_more passthrough.from_host_pkts $((held + 10000)) 20 "the host's frames did not flow again"
stop_psb $SPID
echo "PASS"
