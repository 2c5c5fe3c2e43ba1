#!/bin/bash
# psb on af_packet over a veth, a kernel client in a network namespace: spoofed BYEs from the
# namespace change nothing (the client's pushes are still answered), the client's own BYE is
# accepted and pauses nothing; then the kernel's drops on psb's packet socket, provoked by
# stopping psb under a flood, are counted and add up: kernel_packets = ipackets + kernel_drops.
#
# usage: test_bye_afpacket.sh PATH/psb PATH/psb-kbench PATH/psbctl
#
# Needs root (namespace, veth); exits 77 (skip) without. Everything it makes is named after
# its PID and removed on exit, whatever the outcome.
set -u

source "$(dirname "$0")/netns.sh"

psb=${1:?usage: test_bye_afpacket.sh PATH/psb PATH/psb-kbench PATH/psbctl}
kbench=${2:?usage: test_bye_afpacket.sh PATH/psb PATH/psb-kbench PATH/psbctl}
psbctl=${3:?usage: test_bye_afpacket.sh PATH/psb PATH/psb-kbench PATH/psbctl}

ns=psbb-$$		# network namespace
vr=psbbr$$		# root side of the veth (psb's port), no address; <= 15 chars
vn=psbbn$$		# namespace side, 198.18.9.2/24
prefix=psbb$$		# DPDK runtime prefix
server_ip=198.18.9.1
client_ip=198.18.9.2
flood=3000		# frames sent while psb is stopped, past its socket's ring (said at start)

psb_pid=
tmp=

log() {
	echo "test_bye_afpacket: $*"
}

fail() {
	echo "test_bye_afpacket: FAIL: $*" >&2
	[ -n "$tmp" ] && [ -f "$tmp/psb.log" ] && tail -n 20 "$tmp/psb.log" >&2
	exit 1
}

skip() {
	echo "test_bye_afpacket: SKIP: $*"
	exit 77
}

trap netns_cleanup EXIT
trap 'exit 1' INT TERM

for x in "$psb" "$kbench" "$psbctl"; do [ -x "$x" ] || fail "no executable at '$x'"; done
netns_add "$ns"

tmp=$(mktemp -d /tmp/psb-bye.XXXXXX) || fail "mktemp failed"
netns_up "$ns" "$vr" "$vn" "$client_ip/24" || fail "cannot set up the namespace"
# nothing from the namespace but what the test sends
ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$vn.disable_ipv6=1"
psb_mac=$(cat "/sys/class/net/$vr/address")
client_mac=$(ip netns exec "$ns" cat "/sys/class/net/$vn/address")

# send KIND SRC_MAC SRC_IP DST_MAC DST_IP DST_PORT [COUNT]: raw frames (from port 9430) out
# of $vn, KIND bye (a psb BYE) or udp (a datagram of 64 zero bytes)
send() {
	ip netns exec "$ns" env PYTHONPATH="$test_lib" python3 - "$vn" "$@" <<'EOF'
import socket, sys
import psbframe as pf

ifname, kind, smac, sip, dmac, dip, dport = sys.argv[1:8]
count = int(sys.argv[8]) if len(sys.argv) > 8 else 1
# psb header: magic, version 1, type BYE, everything else 0
payload = pf.hdr(pf.BYE) if kind == "bye" else bytes(64)
frame = pf.udp_frame(dmac, smac, sip, dip, pf.UDP_PORT, int(dport), payload)
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((ifname, 0))
for _ in range(count):
    s.send(frame)
EOF
}

# bench TAG: the kernel client pushes and pulls 4 keys 5 times; every request answered
bench() {
	timeout 60 ip netns exec "$ns" "$kbench" --server "$server_ip" --async --keys 4 \
		--max-retries 250 -q 4096 5 0 >"$tmp/bench-$1.log" 2>&1 ||
		{ cat "$tmp/bench-$1.log" >&2; fail "$1: psb did not answer the client's requests"; }
}

# counters FILTER: psb's counters under FILTER as JSON
counters() {
	"$psbctl" -p "$prefix" --json counters "$1" |
		python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["counters"]))'
}

log "starting psb on af_packet:$vr ($server_ip)"
"$psb" --role server --port "af_packet:$vr" --ip "$server_ip" --num-workers 1 --async -l 0 \
	--file-prefix "$prefix" -v >"$tmp/psb.log" 2>&1 &
psb_pid=$!
for ((i = 0; i < 300; i++)); do
	kill -0 "$psb_pid" 2>/dev/null || fail "psb exited during start-up"
	[ -S "/var/run/dpdk/$prefix/psb.ctl" ] && break
	sleep 0.1
done
[ -S "/var/run/dpdk/$prefix/psb.ctl" ] || fail "psb's control socket did not appear in 30 s"

bench before
log "client answered; now spoofed BYEs"
send bye "02:00:00:00:66:66" "$client_ip" "$psb_mac" "$server_ip" 9430	# forged MAC
send bye "02:00:00:00:99:99" 198.18.9.99 "$psb_mac" "$server_ip" 9430	# unknown peer
send bye "02:00:00:00:66:66" "$client_ip" ff:ff:ff:ff:ff:ff 255.255.255.255 9430
send bye "$client_mac" "$client_ip" "$psb_mac" "$server_ip" 9431		# not the data port
bench after-spoofed
send bye "$client_mac" "$client_ip" ff:ff:ff:ff:ff:ff 255.255.255.255 9430	# the client's own
bench after-bye
counters roles.rx0 >"$tmp/rx.json" || fail "psbctl counters failed"
python3 - "$tmp/rx.json" <<'EOF' || fail "BYE counters"
import json, sys
rx = json.load(open(sys.argv[1]))
print("rx0: byes %d, bye_ignored %d" % (rx["byes"], rx["bye_ignored"]))
assert rx["byes"] == 1 and rx["bye_ignored"] == 4, rx
EOF

ring=$(sed -n 's/.*kernel rings of \([0-9]*\) frames each way.*/\1/p' "$tmp/psb.log")
[ -n "$ring" ] || fail "psb did not say how large its af_packet rings are"
flood=$((ring + 3000))
log "stopping psb under a flood of $flood frames (its ring holds $ring)"
kill -STOP "$psb_pid"
send udp "$client_mac" "$client_ip" "$psb_mac" "$server_ip" 9999 "$flood"
kill -CONT "$psb_pid"
# the kernel's counts and DPDK's must meet once psb emptied the ring (a stray frame between
# the two reads can part them: read again)
ok=0
for ((i = 0; i < 40; i++)); do
	sleep 0.25
	counters ports.0 >"$tmp/port.json" || fail "psbctl counters failed"
	if python3 - "$tmp/port.json" "$flood" "$ring" <<'EOF'; then
import json, sys
p = json.load(open(sys.argv[1]))
flood, ring = int(sys.argv[2]), int(sys.argv[3])
# imissed: what DPDK 22.11's af_packet PMD reports of these (nothing)
print("port: ipackets %d, kernel_packets %d, kernel_drops %d, imissed %d"
      % (p["ipackets"], p["kernel_packets"], p["kernel_drops"], p["imissed"]))
sys.exit(0 if p["kernel_drops"] >= flood - ring and
         p["kernel_packets"] == p["ipackets"] + p["kernel_drops"] else 1)
EOF
		ok=1
		break
	fi
done
[ $ok = 1 ] || fail "the kernel's drops are not counted, or do not add up with ipackets"
bench after-flood

log "stopping psb"
kill -TERM "$psb_pid"
for ((i = 0; i < 150; i++)); do kill -0 "$psb_pid" 2>/dev/null || break; sleep 0.1; done
kill -0 "$psb_pid" 2>/dev/null && fail "psb did not exit within 15 s of SIGTERM"
wait "$psb_pid"
rc=$?
psb_pid=
[ $rc -eq 0 ] || fail "psb exited with $rc"
# the closing report says what the kernel dropped, which DPDK's "missed" does not
drops=$(sed -n 's/^port 0 (.*): the kernel dropped \([0-9]*\) of \([0-9]*\) frames.*/\1/p' "$tmp/psb.log")
[ -n "$drops" ] && [ "$drops" -ge $((flood - ring)) ] ||
	fail "the closing report does not name the kernel's drops (said '$drops', flood $flood, ring $ring)"
log "PASS"
