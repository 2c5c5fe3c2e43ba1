# Shared by the af_packet tests (sourced): a network namespace joined to the root namespace
# by a veth pair whose root side is psb's port, and the removal of all of it. A test names
# them in ns, vr and vn, psb's pid in psb_pid, its DPDK prefix in prefix, a temp dir in tmp.

# These tests are about the network between namespaces: a client of psb's library there
# takes UDP, not the shared memory a psb server of this host offers (the same file system).
export PSB_TRANSPORT=udp

# netns_add NS: the namespace, or skip (the test's skip, status 77) where it cannot be made
# (not root, no iproute2, no python3 to send or read with).
netns_add() {
	[ "$(id -u)" -eq 0 ] || skip "needs root (creates a network namespace and a veth pair)"
	command -v ip >/dev/null 2>&1 || skip "iproute2 'ip' not found"
	command -v python3 >/dev/null 2>&1 || skip "python3 not found"
	ip netns add "$1" 2>/dev/null ||
		skip "cannot create a network namespace ('ip netns add' failed)"
}

# netns_up NS VR VN ADDR/LEN: move VN into NS (which exists) with ADDR/LEN, its peer VR stays
# here for psb: up, no address, no IPv6 chatter. 0, or 1 with the reason on stderr.
netns_up() {
	local ns=$1 vr=$2 vn=$3 addr=$4
	ip link add "$vr" type veth peer name "$vn" ||
		{ echo "cannot create veth pair $vr/$vn" >&2; return 1; }
	ip link set "$vn" netns "$ns" || { echo "cannot move $vn into $ns" >&2; return 1; }
	sysctl -qw "net.ipv6.conf.$vr.disable_ipv6=1" ||
		{ echo "cannot disable IPv6 on $vr" >&2; return 1; }
	ip link set "$vr" up || { echo "cannot bring $vr up" >&2; return 1; }
	ip -n "$ns" link set lo up
	ip -n "$ns" addr add "$addr" dev "$vn" || { echo "cannot address $vn" >&2; return 1; }
	ip -n "$ns" link set "$vn" up || { echo "cannot bring $vn up" >&2; return 1; }
}

# netns_down NS VR: whatever still runs inside NS (a hung client) goes with it, and the veth.
netns_down() {
	if ip netns list 2>/dev/null | grep -qw "$1"; then
		ip netns pids "$1" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
		ip netns del "$1" 2>/dev/null
	fi
	ip link del "$2" 2>/dev/null
}

# pid_stop PID: SIGTERM (and SIGCONT, should it be stopped), SIGKILL after 5 s; reaped.
pid_stop() {
	local i
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 0
	kill -TERM "$1" 2>/dev/null
	kill -CONT "$1" 2>/dev/null
	for ((i = 0; i < 50; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# The EXIT trap: psb, the namespace, the veth, psb's runtime directory and tmp go, whatever
# the outcome; the test's exit status stays.
netns_cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	pid_stop "$psb_pid"
	netns_down "$ns" "$vr"
	rm -rf "/var/run/dpdk/$prefix"
	[ -n "$tmp" ] && rm -rf "$tmp"
	exit $rc
}

# What python3 needs on PYTHONPATH to build frames with tests/lib/psbframe.py.
# shellcheck disable=SC2034	# the tests' own
test_lib=$(cd "$(dirname "${BASH_SOURCE[0]}")/../lib" && pwd)
