# Shared by the tests whose psb nodes meet on a Linux bridge (sourced). Every node gets its
# own network namespace, NSPFX-NODE, holding the VPFXaNODE end of a veth pair whose VPFXbNODE
# end is on the bridge: af_packet fanout groups are per namespace, and DPDK derives their
# ids from pid and ifindex, which can clash between processes in one namespace.

# bridge_up BR NSPFX VPFX NODE...: the bridge and one namespace per node, all up, no IPv6.
# Fails (1, with the reason on stderr) where they cannot be made.
bridge_up() {
	local br=$1 nsp=$2 vp=$3 n ns
	shift 3
	ip link add "$br" type bridge || { echo "cannot create bridge $br" >&2; return 1; }
	sysctl -qw "net.ipv6.conf.$br.disable_ipv6=1" 2>/dev/null || true
	ip link set "$br" up
	for n in "$@"; do
		ns="$nsp-$n"
		ip netns add "$ns" || { echo "cannot create namespace $ns" >&2; return 1; }
		ip link add "${vp}a$n" type veth peer name "${vp}b$n" ||
			{ echo "cannot create veths ${vp}a$n/${vp}b$n" >&2; return 1; }
		ip link set "${vp}a$n" netns "$ns"
		ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 2>/dev/null || true
		ip netns exec "$ns" ip link set "${vp}a$n" up
		sysctl -qw "net.ipv6.conf.${vp}b$n.disable_ipv6=1" 2>/dev/null || true
		ip link set "${vp}b$n" master "$br"
		ip link set "${vp}b$n" up
	done
}

# bridge_down BR NSPFX VPFX NODE...: whatever bridge_up made, whether it got that far or not.
bridge_down() {
	local br=$1 nsp=$2 vp=$3 n
	shift 3
	for n in "$@"; do
		ip netns del "$nsp-$n" 2>/dev/null || true
		ip link del "${vp}b$n" 2>/dev/null || true
	done
	ip link del "$br" 2>/dev/null || true
}
