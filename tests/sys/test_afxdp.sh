#!/bin/bash
# psb on af_xdp ports over a veth: a psb server on the root side answers a kernel-socket
# client exactly (sync sums checked), then a psb worker on af_xdp in the namespace; psb says
# at start which kernel ports are fast here, segments to the port's MTU, and an MTU XDP
# cannot take is refused with what to do. The interface is put back as psb found it.
#
# usage: test_afxdp.sh PATH/psb PATH/psb-kbench
#
# Needs root (namespace, veth) and a kernel with AF_XDP sockets; exits 77 (skip) without.
# Everything it makes is named after its PID and removed on exit, whatever the outcome.
set -u

source "$(dirname "$0")/netns.sh"

psb=${1:?usage: test_afxdp.sh PATH/psb PATH/psb-kbench}
kbench=${2:?usage: test_afxdp.sh PATH/psb PATH/psb-kbench}

ns=psbx-$$		# network namespace
vr=psbxr$$		# root side of the veth (the server's port), no address; <= 15 chars
vn=psbxn$$		# namespace side, 198.18.9.2/24
prefix=psbx$$		# DPDK runtime prefix of the server
server_ip=198.18.9.1
client_ip=198.18.9.2
mtu=3000		# within what XDP takes on a veth (3500)
len=65536		# value bytes: 23 segments of a 3000-byte MTU

psb_pid=
tmp=

log() {
	echo "test_afxdp: $*"
}

fail() {
	echo "test_afxdp: FAIL: $*" >&2
	[ -n "$tmp" ] && [ -f "$tmp/psb.log" ] && tail -n 20 "$tmp/psb.log" >&2
	exit 1
}

skip() {
	echo "test_afxdp: SKIP: $*"
	exit 77
}

cleanup() {
	local rc=$?
	pkill -KILL -f -- "--file-prefix ${prefix}w" 2>/dev/null
	rm -rf "/var/run/dpdk/${prefix}w"
	netns_cleanup
	exit $rc
}

trap cleanup EXIT
trap 'exit 1' INT TERM

for x in "$psb" "$kbench"; do [ -x "$x" ] || fail "no executable at '$x'"; done
python3 -c 'import socket; socket.socket(44, socket.SOCK_RAW).close()' 2>/dev/null ||
	skip "this kernel makes no AF_XDP sockets"
netns_add "$ns"
tmp=$(mktemp -d /tmp/psb-afxdp.XXXXXX) || fail "mktemp failed"
netns_up "$ns" "$vr" "$vn" "$client_ip/24" || fail "cannot set up the namespace"
ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$vn.disable_ipv6=1"
ip link set "$vr" mtu $mtu || fail "cannot set the MTU of $vr"
ip -n "$ns" link set "$vn" mtu $mtu || fail "cannot set the MTU of $vn"

# server: start psb on af_xdp:$vr; its log in $tmp/psb.log
server() {
	"$psb" --role server --port "af_xdp:$vr" --ip "$server_ip" --num-workers 1 --sync -l 0 \
		--file-prefix "$prefix" -v >"$tmp/psb.log" 2>&1 &
	psb_pid=$!
	for ((i = 0; i < 300; i++)); do
		kill -0 "$psb_pid" 2>/dev/null || return 1
		[ -S "/var/run/dpdk/$prefix/psb.ctl" ] && return 0
		sleep 0.1
	done
	fail "psb's control socket did not appear in 30 s"
}

log "starting psb on af_xdp:$vr ($server_ip, MTU $mtu)"
server || fail "psb exited during start-up"
grep -q "this host's kernel ports: fast: af_xdp" "$tmp/psb.log" ||
	fail "psb did not say at start that af_xdp is fast here"
grep -q "port 0: af_xdp:$vr (net_af_xdp), MTU $mtu" "$tmp/psb.log" ||
	fail "psb did not bring the af_xdp port up with the interface's MTU $mtu"
grep -q "MTU $mtu, segment 2932 B" "$tmp/psb.log" ||
	fail "psb does not segment to the port's MTU"

log "a kernel-socket client: PUSH_PULL of $len B, sums checked"
timeout 60 ip netns exec "$ns" "$kbench" --server "$server_ip" --sync --keys 4 --verify \
	--max-retries 250 -q "$len" 10 1 >"$tmp/kbench.log" 2>&1 ||
	{ cat "$tmp/kbench.log" >&2; fail "the kernel client's run failed over af_xdp"; }

# worker TAG: a psb worker on af_xdp:$vn, PUSH_PULL of $len B, sums checked
worker() {
	timeout -k 5 60 ip netns exec "$ns" "$psb" --role worker --port "af_xdp:$vn" \
		--ip "$client_ip" --server "$server_ip" --rank 0 --num-workers 1 --sync -l 1 \
		--no-huge --file-prefix "${prefix}w" --keys 4 --len $len --repeat 10 --mode 1 \
		--verify --results "$tmp/w-$1.json" >"$tmp/w-$1.log" 2>&1 ||
		{ tail -n 20 "$tmp/w-$1.log" >&2; fail "$1: the psb worker's run over af_xdp failed"; }
	python3 - "$tmp/w-$1.json" <<'EOF' || fail "$1: the psb worker's results"
import json, sys
r = json.load(open(sys.argv[1]))
w = r["workers"][0] if "workers" in r else r
print("worker: %s" % {k: w[k] for k in ("iterations", "verify_errors", "failed", "goodput_gbps")})
assert w["iterations"] == 10 and w["verify_errors"] == 0 and w["failed"] == 0, w
EOF
}

log "a psb worker on af_xdp:$vn: PUSH_PULL of $len B, sums checked"
worker "mtu$mtu"
pid_stop "$psb_pid"
psb_pid=

log "MTU 3500 on both sides: psb takes what one umem chunk holds, says so, and segments to it"
ip link set "$vr" mtu 3500
ip -n "$ns" link set "$vn" mtu 3500
server || fail "psb exited during start-up at MTU 3500"
cap=$(sed -n 's/.*AF_XDP carries frames of at most \([0-9]*\) bytes of IP here.*has MTU 3500.*/\1/p' \
	"$tmp/psb.log")
[ -n "$cap" ] && [ "$cap" -lt 3500 ] && [ "$cap" -ge 3000 ] ||
	fail "psb did not say how much of the MTU AF_XDP carries"
grep -q "MTU $cap, segment $(( (cap - 68) & ~3 )) B" "$tmp/psb.log" ||
	fail "psb does not segment to what AF_XDP carries ($cap)"
worker mtu3500
pid_stop "$psb_pid"
psb_pid=

log "the veth's peer with MTU 9000: XDP refuses it, psb says what to do"
ip -n "$ns" link set "$vn" mtu 9000
server && fail "psb came up on af_xdp with a peer XDP cannot take"
grep -q "peer whose MTU is more than 3500" "$tmp/psb.log" ||
	fail "psb did not say that the veth's peer MTU is too large"
log "and its own MTU 9000 too"
ip link set "$vr" mtu 9000
server && fail "psb came up on af_xdp with an MTU XDP cannot take"
grep -q "whose MTU 9000 is more than XDP without multi-buffer takes" "$tmp/psb.log" ||
	fail "psb did not say that the interface's MTU is too large"
[ "$(cat /sys/class/net/$vr/mtu)" = 9000 ] || fail "psb changed the interface's MTU"
[ $(( $(cat /sys/class/net/$vr/flags) & 0x100 )) = 0 ] ||
	fail "psb left $vr promiscuous"
psb_pid=
log "PASS"
