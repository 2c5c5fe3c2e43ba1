#!/bin/bash
# The echo role over af_packet, a client (echo_client.py) in a network namespace on the veth
# peer. A server with --echo answers ECHOs byte for byte and nothing else: not ECHOs longer
# than 1 KiB, of several segments or from a source that takes no answer (counted refused),
# not a malformed one (dropped by the parser), and no more than its rate budget of a flood
# (counted rate_limited); the store never sees an echo. A server without --echo answers none
# (counted not_served). node.echo of a document does what --echo does, and its results say so.
#
# usage: test_echo.sh PATH/psb PATH/psbctl
#
# Needs root (namespace, veth); exits 77 (skip) without. Everything it makes is named after
# its PID and removed on exit, whatever the outcome.
set -u

source "$(dirname "$0")/netns.sh"

psb=${1:?usage: test_echo.sh PATH/psb PATH/psbctl}
psbctl=${2:?usage: test_echo.sh PATH/psb PATH/psbctl}
client="$(cd "$(dirname "$0")" && pwd)/echo_client.py"

ns=psbe-$$		# network namespace
vr=psber$$		# root side of the veth (psb's port), no address; <= 15 chars
vn=psben$$		# namespace side, the client's
prefix=psbe$$		# DPDK runtime prefix
psb_ip=198.18.11.1
client_ip=198.18.11.2
flood=1500		# ECHOs back to back: more than 1000 a second can answer

psb_pid=
tmp=

log() {
	echo "test_echo: $*"
}

fail() {
	echo "test_echo: FAIL: $*" >&2
	[ -n "$tmp" ] && [ -f "$tmp/psb.log" ] && tail -n 20 "$tmp/psb.log" >&2
	exit 1
}

skip() {
	echo "test_echo: SKIP: $*"
	exit 77
}

trap netns_cleanup EXIT
trap 'exit 1' INT TERM

for x in "$psb" "$psbctl" "$client"; do [ -e "$x" ] || fail "'$x' not found"; done
netns_add "$ns"
tmp=$(mktemp -d /tmp/psb-echo.XXXXXX) || fail "mktemp failed"
netns_up "$ns" "$vr" "$vn" "$client_ip/24" || fail "cannot set up the namespace"
ip netns exec "$ns" sysctl -qw "net.ipv6.conf.$vn.disable_ipv6=1"
psb_mac=$(cat "/sys/class/net/$vr/address")

# start ARGS...: psb with ARGS in $tmp, once its control socket is there
start() {
	(cd "$tmp" && exec "$psb" "$@" >"$tmp/psb.log" 2>&1) &
	psb_pid=$!
	for ((i = 0; i < 300; i++)); do
		kill -0 "$psb_pid" 2>/dev/null || fail "psb exited during start-up"
		[ -S "/var/run/dpdk/$prefix/psb.ctl" ] && return
		sleep 0.1
	done
	fail "psb's control socket did not appear in 30 s"
}

# stop: SIGTERM, and psb exits 0 within 15 s
stop() {
	kill -TERM "$psb_pid"
	for ((i = 0; i < 150; i++)); do kill -0 "$psb_pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$psb_pid" 2>/dev/null && fail "psb did not exit within 15 s of SIGTERM"
	wait "$psb_pid"
	rc=$?
	psb_pid=
	[ $rc -eq 0 ] || fail "psb exited with $rc"
}

# ask CMD [N]: the client in the namespace (echo_client.py)
ask() {
	ip netns exec "$ns" env PYTHONPATH="$test_lib" python3 "$client" "$vn" "$psb_mac" \
		"$psb_ip" "$client_ip" "$@"
}

# counters: psb's counters of the roles as JSON, in $tmp/roles.json
counters() {
	"$psbctl" -p "$prefix" --json counters roles >"$tmp/ctl.json" ||
		fail "psbctl counters failed"
	python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["counters"]))' \
		<"$tmp/ctl.json" >"$tmp/roles.json"
}

# expect PYTHON: PYTHON (asserts on r, psb's role counters, and argv) holds
expect() {
	local code=$1
	shift
	python3 - "$tmp/roles.json" "$@" <<EOF || fail "counters: $code"
import json, sys
r = json.load(open(sys.argv[1]))
$code
EOF
}

log "psb with --echo"
start --role server --port "af_packet:$vr" --ip "$psb_ip" --num-workers 1 --async \
	--file-prefix "$prefix" --echo
grep -q "echo: ECHO at port 9430 answered, 1024 bytes at most, 1000 a second" "$tmp/psb.log" ||
	fail "psb did not say what its echo answers"
ask answered || fail "ECHOs not answered as sent"
counters
expect 'e = r["echo0"]
assert e["rx_pkts"] == 5 and e["tx_pkts"] == 5, e
assert e["refused"] == 0 and e["rate_limited"] == 0, e'

ask refused || fail "ECHOs answered that must not be"
counters
expect 'e, rx, s = r["echo0"], r["rx0"], r["server0"]
assert e["rx_pkts"] == 9 and e["tx_pkts"] == 5 and e["refused"] == 4, e
assert rx["drops"]["bad_segment"] == 1 and rx["handed"] == 9, rx
assert rx["not_served"] == 0, rx
assert s["rx_pkts"] == 0 and s["tx_pkts"] == 0, s	# no ERROR bad_type from the store
print("refused %d, bad_segment %d" % (e["refused"], rx["drops"]["bad_segment"]))'

log "a flood of $flood ECHOs"
ask flood "$flood" >"$tmp/flood.json" || fail "the flood's answers are wrong"
cat "$tmp/flood.json"
counters
expect 'e, rx = r["echo0"], r["rx0"]
f = json.load(open(sys.argv[2]))
got, limited, took = e["tx_pkts"] - 5, e["rate_limited"], e["rx_pkts"] - 9
print("flood: echo took %d, answered %d, rate_limited %d" % (took, got, limited))
assert took + rx["ring_full"] == f["sent"], (took, rx)
assert got + limited == took and limited > 0, e
assert got >= 64, e		# its burst: the budget was full
assert got == f["answered"], (got, f)' "$tmp/flood.json"
stop

log "psb without --echo"
start --role server --port "af_packet:$vr" --ip "$psb_ip" --num-workers 1 --async \
	--file-prefix "$prefix"
ask silent 3 || fail "a node without the echo role answered"
counters
expect 'assert "echo0" not in r, list(r)
rx, s = r["rx0"], r["server0"]
assert rx["not_served"] == 3 and rx["handed"] == 0, rx
assert s["rx_pkts"] == 0 and s["tx_pkts"] == 0, s
print("not_served %d" % rx["not_served"])'
stop

log "node.echo in a document"
cat >"$tmp/echo.json" <<EOF
{
	"name": "echo",
	"kind": "serve",
	"node": {
		"role": "server",
		"ports": ["af_packet:$vr"],
		"ip": "$psb_ip",
		"num_workers": 1,
		"sync": false,
		"file_prefix": "$prefix",
		"echo": true
	},
	"output": { "dir": "results" }
}
EOF
"$psb" --check-config "$tmp/echo.json" >"$tmp/checked.json" ||
	fail "--check-config refused node.echo"
python3 -c 'import json, sys; assert json.load(sys.stdin)["node"]["echo"] is True' \
	<"$tmp/checked.json" || fail "--check-config did not keep node.echo"
start --config "$tmp/echo.json"
ask answered || fail "ECHOs not answered with node.echo"
stop
results=$(find "$tmp/results" -name result.json 2>/dev/null | head -1)
[ -n "$results" ] || fail "no results written"
python3 -c 'import json, sys; assert json.load(sys.stdin)["experiment"]["node"]["echo"] is True' \
	<"$results" || fail "the results do not say node.echo"
log "PASS"
