# Shared by the tests whose psb nodes meet on a Linux bridge (sourced). Every node gets its
# own network namespace, NSPFX-NODE, holding the VPFXaNODE end of a veth pair whose VPFXbNODE
# end is on the bridge: af_packet fanout groups are per namespace, and DPDK derives their
# ids from pid and ifindex, which can clash between processes in one namespace.

# These tests are about the network between namespaces: a client of psb's library there
# takes UDP, not the shared memory a psb server of this host offers (the same file system).
export PSB_TRANSPORT=udp

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

# bridge_mtu BR NSPFX VPFX MTU NODE...: the bridge, its ports and the nodes' interfaces at MTU.
bridge_mtu() {
	local br=$1 nsp=$2 vp=$3 mtu=$4 n
	shift 4
	ip link set "$br" mtu "$mtu"
	for n in "$@"; do
		ip link set "${vp}b$n" mtu "$mtu"
		ip netns exec "$nsp-$n" ip link set "${vp}a$n" mtu "$mtu"
	done
}

# dmlc_exec NSPFX VPFX NODE ROLE ROOT HOST NSERVERS NWORKERS CMD...: CMD in NODE's namespace
# with what ps-lite gives a node and nothing else: PATH, DMLC_* on interface VPFXaNODE (HOST
# empty: no DMLC_NODE_HOST) and the words of $DMLC_EXTRA (e.g. PS_VERBOSE=1). It replaces the
# shell it runs in, so start it with &: $! is then CMD's process, which signals reach.
dmlc_exec() {
	local nsp=$1 vp=$2 n=$3 role=$4 root=$5 host=$6 nserv=$7 nwork=$8
	shift 8
	# shellcheck disable=SC2086
	exec ip netns exec "$nsp-$n" env -i PATH="$PATH" ${PSB_TRANSPORT:+PSB_TRANSPORT=$PSB_TRANSPORT} \
		${DMLC_EXTRA:-} DMLC_ROLE="$role" \
		DMLC_PS_ROOT_URI="$root" DMLC_NUM_SERVER="$nserv" DMLC_NUM_WORKER="$nwork" \
		DMLC_INTERFACE="${vp}a$n" ${host:+DMLC_NODE_HOST=$host} "$@"
}

# bridge_test TAG TAIL [NODE...]: the frame of a test whose psb nodes meet on a bridge (as
# root: exits 77 without). Sets DIR (scratch), BR, NSP (namespace NSP-NODE, interface
# NSPaNODE), PFX (the start of every psb --file-prefix) and PIDS (what to kill), builds the
# bridge (without NODEs: once bridge_nodes is called), and at exit kills and removes all of
# it. fail MSG prints the logs' last TAIL lines, exits 1.
bridge_test() {
	if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
		echo "SKIP: needs root and iproute2"
		exit 77
	fi
	BT_TAIL=$2
	BT_UP=$(cut -d' ' -f1 /proc/uptime)
	DIR=$(mktemp -d "/tmp/psb-$1-XXXXXX")
	BR=psb$1$$
	NSP=p$1$$
	PFX=psbt-$1$$-
	PIDS=()
	shift 2
	BT_NODES=()
	trap bridge_test_cleanup EXIT
	[ $# -eq 0 ] || bridge_nodes "$@"
}

# bridge_nodes NODE...: the bridge and the nodes' namespaces of a bridge_test begun without.
bridge_nodes() {
	BT_NODES=("$@")
	bridge_up "$BR" "$NSP" "$NSP" "$@" || fail "cannot build the bridge and namespaces"
}

bridge_test_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	pkill -9 -f -- "--file-prefix $PFX" 2>/dev/null || true
	wait 2>/dev/null || true
	bridge_down "$BR" "$NSP" "$NSP" "${BT_NODES[@]}"
	rm -rf "$DIR" /var/run/dpdk/"$PFX"*
}

fail() {
	local f
	echo "FAIL: $*" >&2
	for f in "$DIR"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -"$BT_TAIL" "$f"; }; done >&2
	# Busy-polling lcores filling both CPUs can starve the kernel's own threads (RCU's
	# grace-period thread, workqueues), and a psb closing its af_packet socket then waits
	# for them: what the kernel reported while the test ran says so.
	dmesg 2>/dev/null | awk -v t="${BT_UP:-0}" -F'[][]' '$2 + 0 > t + 0' |
		grep -E 'stall|starved|lockup' | head -n 5 | sed 's/^/kernel: /' >&2
	exit 1
}
