# Shared by the tests on the namespace testbed (scripts/testbed.sh), sourced after they set
# TB (the script) and NAME (the testbed's): a scratch directory DIR, the processes they
# start in PIDS, killed with the testbed's hosts and DIR removed on any exit; fail, which
# shows the tail of every log in DIR; and on, addr, drop and bridge_drop to use the hosts.

DIR=$(mktemp -d /tmp/psb-tb-XXXXXX)
PIDS=()

BRIDGE_LOSS=""		# bridge_drop's table (root namespace)

testbed_cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	[ -z "$BRIDGE_LOSS" ] || nft delete table bridge "$BRIDGE_LOSS" 2>/dev/null
	"$TB" down --name "$NAME" >/dev/null 2>&1
	rm -rf "$DIR"
}
trap testbed_cleanup EXIT
trap 'exit 1' INT TERM

fail() {
	local f
	echo "FAIL: $*" >&2
	for f in "$DIR"/*.log; do [ -f "$f" ] && { echo "== $f"; tail -n 8 "$f"; }; done >&2
	exit 1
}

# testbed_up HOSTS [ARGS...]: the testbed (ARGS for testbed.sh up), or skip (77) where the
# test cannot run
testbed_up() {
	if [ "$(id -u)" != 0 ] || ! command -v nft >/dev/null || ! command -v ip >/dev/null; then
		echo "SKIP: needs root, iproute2 and nft"
		exit 77
	fi
	"$TB" up --name "$NAME" --hosts "$1" "${@:2}" > "$DIR/tb.log" 2>&1 ||
		fail "testbed: $(cat "$DIR/tb.log")"
}

# on HOST CMD...: CMD on host HOST; addr HOST: its address
on() { local h=$1; shift; "$TB" exec --name "$NAME" "$h" "$@"; }
addr() { "$TB" addr "$1"; }

# drop HOST PERCENT PORT: of the UDP datagrams to PORT arriving at HOST (nftables)
drop() {
	on "$1" nft -f - <<NFT || fail "nft on host $1"
table inet psbloss {
	chain in {
		type filter hook input priority 0; policy accept;
		udp dport $3 numgen random mod 100 < $2 drop
	}
}
NFT
}

# bridge_drop PERCENT PORT HOST...: of the UDP datagrams to PORT the bridge forwards to each
# HOST (hosts psb runs on with af_packet, whose frames no host firewall sees); the table is
# removed with the testbed
bridge_drop() {
	local pct=$1 port=$2 ifs="" h
	shift 2
	for h in "$@"; do ifs+="${ifs:+, }\"tb${NAME}$h\""; done
	BRIDGE_LOSS=psbloss$$
	nft -f - <<NFT || fail "nft on the bridge"
table bridge $BRIDGE_LOSS {
	chain loss {
		type filter hook forward priority 0; policy accept;
		oifname { $ifs } udp dport $port numgen random mod 100 < $pct drop
	}
}
NFT
}
