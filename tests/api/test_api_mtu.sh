#!/bin/bash
# The client API across a veth whose MTU is 1400: psb-ksrv in a namespace, the client
# (api_mtu) here. The segment size comes from the route (a 1 MiB value goes through), and
# one the route cannot carry fails at once with PSBC_E_MSGSIZE. Then the same client
# against psb itself on af_packet, which must answer the session's probe too.
#
# usage: test_api_mtu.sh PATH/api_mtu PATH/psb-ksrv [PATH/psb]
#
# Needs root (namespace, veth); exits 77 (skip) without. Everything it makes is named after
# its PID and removed on exit, whatever the outcome.
set -u

source "$(dirname "$0")/../sys/netns.sh"

api_mtu=${1:?usage: test_api_mtu.sh PATH/api_mtu PATH/psb-ksrv [PATH/psb]}
ksrv=${2:?usage: test_api_mtu.sh PATH/api_mtu PATH/psb-ksrv [PATH/psb]}
psb=${3:-}

ns=psbt-mtu$$
vr=psbmr$$		# root side: the client's, 198.18.9.2/24 (psb's port in part two)
vn=psbmn$$		# namespace side: psb-ksrv's, 198.18.9.1/24
prefix=psbtm$$
psb_pid=
ksrv_pid=
tmp=

fail() { echo "test_api_mtu: FAIL: $*" >&2; exit 1; }
skip() { echo "test_api_mtu: SKIP: $*"; exit 77; }

cleanup() {
	pid_stop "$ksrv_pid"
	netns_cleanup
}
trap cleanup EXIT
trap 'exit 1' INT TERM

netns_add "$ns"
tmp=$(mktemp -d /tmp/psb-api-mtu.XXXXXX) || fail "mktemp failed"
netns_up "$ns" "$vr" "$vn" 198.18.9.1/24 || fail "cannot set up the namespace"
ip addr add 198.18.9.2/24 dev "$vr" || fail "cannot address $vr"
ip link set "$vr" mtu 1400 && ip -n "$ns" link set "$vn" mtu 1400 || fail "cannot set the MTU"

# psb-ksrv answers in segments its side's MTU carries (1400 - 28 - 40, a multiple of 4)
ip netns exec "$ns" "$ksrv" --ip 198.18.9.1 --port 0 --async --seg-size 1332 \
	--ready-file "$tmp/ready" --duration 60 -q >"$tmp/ksrv.log" 2>&1 &
ksrv_pid=$!
for ((i = 0; i < 100; i++)); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
[ -s "$tmp/ready" ] || { cat "$tmp/ksrv.log" >&2; fail "psb-ksrv did not start"; }
port=$(cut -d' ' -f1 "$tmp/ready")
timeout 30 "$api_mtu" "198.18.9.1:$port" msgsize || fail "the client over MTU 1400"
pid_stop "$ksrv_pid"
ksrv_pid=

[ -n "$psb" ] || exit 0
# Part two: psb on af_packet (the root side's veth, back to MTU 1500), the client in the
# namespace. psb answers the probe (a PULL of a key no range holds) like any pull.
ip addr flush dev "$vr"
ip link set "$vr" mtu 1500 && ip -n "$ns" link set "$vn" mtu 1500 || fail "cannot set the MTU"
"$psb" --role server --port "af_packet:$vr" --ip 198.18.9.3 --async -l 0 \
	--file-prefix "$prefix" --no-huge -q >"$tmp/psb.log" 2>&1 &
psb_pid=$!
ok=0
for ((i = 0; i < 60; i++)); do
	kill -0 "$psb_pid" 2>/dev/null || { cat "$tmp/psb.log" >&2; fail "psb exited at start"; }
	if timeout 30 ip netns exec "$ns" "$api_mtu" 198.18.9.3 >"$tmp/api.log" 2>&1; then
		ok=1
		break
	fi
	sleep 0.5
done
cat "$tmp/api.log"
[ $ok = 1 ] || { cat "$tmp/psb.log" >&2; fail "the client against psb on af_packet"; }
echo "test_api_mtu: PASS"
