#!/bin/bash
# A namespace testbed on this machine: N hosts, each a network namespace with one
# interface (eth0) on a shared Linux bridge, MTU 9000 by default, addresses 198.19.0.10,
# .11, ... (/24, inside the benchmarking range 198.18.0.0/15), multicast routed out of
# eth0 and not filtered by the bridge. Nothing leaves the machine.
#
#   scripts/testbed.sh up [--name NAME] [--hosts N] [--mtu MTU] [--bare LIST]
#                                                                 build it (default tb, 4, 9000);
#                                                                 hosts of LIST ("2,3") get no
#                                                                 address: psb's (af_packet eth0)
#   scripts/testbed.sh down [--name NAME]                         remove it, whatever is left of it
#                                                                 (processes on its hosts killed)
#   scripts/testbed.sh exec [--name NAME] HOST CMD...             run CMD on host HOST (0..N-1)
#   scripts/testbed.sh addr HOST                                  print host HOST's address
#   scripts/testbed.sh --help | --version
#
# Hosts are namespaces psbtb-NAME-hI; the bridge is psbtb-NAME in the root namespace. NAME:
# 1 to 8 letters and digits.
set -euo pipefail

NAME=tb
HOSTS=4
MTU=9000
BASE=10
BARE=

die() { echo "testbed.sh: $*" >&2; exit 2; }
usage_error() { echo "testbed.sh: $*; try 'testbed.sh --help'" >&2; exit 2; }
usage() { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; }

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
up|down|exec|addr) ;;
-h|--help|help) usage; exit 0 ;;
--version) exec "$(dirname "$0")/version.sh" line testbed.sh ;;
"") usage; exit 0 ;;
-*) usage_error "unrecognized option '$cmd' (a command first: up, down, exec or addr)" ;;
*) usage_error "unknown command '$cmd'" ;;
esac
while [ $# -gt 0 ]; do
	case $1 in
	--name|--hosts|--mtu|--bare) [ $# -ge 2 ] || usage_error "option '$1' requires an argument" ;;
	esac
	case $1 in
	--name) NAME=$2; shift 2 ;;
	--hosts) HOSTS=$2; shift 2 ;;
	--mtu) MTU=$2; shift 2 ;;
	--bare) BARE=$2; shift 2 ;;
	--*) usage_error "unrecognized option '$1'" ;;
	*) break ;;
	esac
done
[[ "$NAME" =~ ^[A-Za-z0-9]{1,8}$ ]] || die "--name: 1 to 8 letters and digits (got '$NAME')"
[[ "$HOSTS" =~ ^[0-9]+$ ]] && [ "$HOSTS" -ge 1 ] && [ "$HOSTS" -le 200 ] ||
	die "--hosts: 1 to 200 (got '$HOSTS')"
[[ "$MTU" =~ ^[0-9]+$ ]] && [ "$MTU" -ge 1280 ] && [ "$MTU" -le 9000 ] ||
	die "--mtu: 1280 to 9000 (got '$MTU')"
[[ "$BARE" =~ ^([0-9]+(,[0-9]+)*)?$ ]] || die "--bare: host numbers, e.g. 2,3 (got '$BARE')"
BR=psbtb-$NAME

ns() { echo "psbtb-$NAME-h$1"; }
addr() { echo "198.19.0.$((BASE + $1))"; }

down() {
	local n v
	# the hosts' links first: a namespace's veths go only some time after the namespace,
	# and a testbed made again at once under the same name would find them still there
	for v in $(ip -o link show 2>/dev/null | awk -F': ' '{ sub(/@.*/, "", $2); print $2 }' |
		   grep -E "^tb$NAME[0-9]+$" || true); do
		ip link del "$v" 2>/dev/null || true
	done
	for n in $(ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^psbtb-$NAME-h[0-9]+$" || true); do
		# whatever still runs on the host goes with it
		ip netns pids "$n" 2>/dev/null | xargs -r kill -9 2>/dev/null || true
		ip netns del "$n" 2>/dev/null || true
	done
	ip link del "$BR" 2>/dev/null || true
}

up() {
	local i n v
	[ "$(id -u)" = 0 ] || die "needs root (network namespaces)"
	command -v ip >/dev/null || die "needs iproute2"
	if ip link show "$BR" >/dev/null 2>&1; then
		die "testbed '$NAME' exists already (scripts/testbed.sh down --name $NAME)"
	fi
	trap 'down' ERR
	ip link add "$BR" type bridge
	# every host gets every group's packets: no IGMP snooping to wait for
	echo 0 > "/sys/class/net/$BR/bridge/multicast_snooping"
	ip link set "$BR" mtu "$MTU" up
	for ((i = 0; i < HOSTS; i++)); do
		n=$(ns "$i")
		v=tb$NAME$i
		ip netns add "$n"
		ip link add "$v" mtu "$MTU" type veth peer name eth0 netns "$n"
		ip link set "$v" master "$BR" up
		ip -n "$n" link set lo up
		ip -n "$n" link set eth0 mtu "$MTU" up
		if [[ ",$BARE," == *",$i,"* ]]; then
			# psb's host: psb answers for the address; the kernel keeps quiet
			ip netns exec "$n" sysctl -qw net.ipv6.conf.eth0.disable_ipv6=1
			continue
		fi
		ip -n "$n" addr add "$(addr "$i")/24" dev eth0
		ip -n "$n" route add 224.0.0.0/4 dev eth0
	done
	trap - ERR
	echo "testbed '$NAME': $HOSTS hosts on bridge $BR, MTU $MTU, addresses $(addr 0) .. $(addr $((HOSTS - 1)))"
}

case $cmd in
up) up ;;
down) down ;;
exec)
	[ $# -ge 2 ] || die "exec HOST CMD..."
	[[ "$1" =~ ^[0-9]+$ ]] || die "exec: HOST is a number (got '$1')"
	n=$(ns "$1")
	shift
	ip netns list | awk '{print $1}' | grep -qx "$n" || die "no host $n (is the testbed up?)"
	exec ip netns exec "$n" "$@"
	;;
addr)
	[[ "${1:-}" =~ ^[0-9]+$ ]] || die "addr HOST"
	addr "$1"
	;;
esac
