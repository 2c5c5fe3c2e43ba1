#!/bin/bash
# "show port info" answers as testpmd's does: psb's console and psbctl (port_info, the
# control socket's command) give, for a null port, testpmd's lines for the same device in
# its order and wording, the same values but the MAC address (each process makes one) and
# the MTU (psb's 9000), and without the RSS flow types; a port that is not there is named.
#
# usage: test_port_info.sh PATH/psb PATH/psbctl
source "$(dirname "$0")/../export/common.sh" "${1:?usage: test_port_info.sh PSB PSBCTL}"
PSBCTL=${2:?usage: test_port_info.sh PSB PSBCTL}
TESTPMD=${DPDK_TESTPMD:-dpdk-testpmd}
command -v "$TESTPMD" >/dev/null || fail "no $TESTPMD (scripts/setup.sh installs dpdk)"

# block FILE N: the Nth "Infos for port" block of FILE, to the error handling mode's line,
# less what differs by process (MAC address, MTU) and testpmd's RSS flow types
block() {
	awk -v n="$2" '/Infos for port/ { k++ } k == n { print } k == n && /^Device error handling/ { exit }' "$1" |
		sed -e 's/^\(MAC address\|MTU\): .*/\1: -/' |
		awk '/^Supported RSS offload flow types:/ { skip = 1; next }
		     skip && /^  / { next } { skip = 0; print }'
}

printf 'show port info 0\nquit\n' | timeout -k 5 60 "$TESTPMD" --no-pci --no-huge -m 1024 \
	--vdev net_null0 --file-prefix "$TAG-t" -l 0,1 -- -i --total-num-mbufs=2048 \
	> "$DIR/testpmd.out" 2>&1 || fail "testpmd: $(tail -3 "$DIR/testpmd.out")"
block "$DIR/testpmd.out" 1 > "$DIR/testpmd.block"
grep -q "^Driver name: net_null$" "$DIR/testpmd.block" || fail "testpmd showed no port info"

printf '%s\n' 'show port info 0' 'show port info all' 'show port info 7' quit |
	timeout -k 5 60 "$PSB" --port null --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$TAG-a" \
	-i 2>"$DIR/a.log" | tr -d '\r' > "$DIR/console.out" || fail "psb -i exited non-zero"
block "$DIR/console.out" 1 > "$DIR/console.block"
diff -u "$DIR/testpmd.block" "$DIR/console.block" ||
	fail "the console's show port info 0 is not testpmd's (- testpmd, + psb)"
block "$DIR/console.out" 2 | cmp -s - "$DIR/console.block" ||
	fail "show port info all: not the same block for port 0"
grep -q "^error: not_found: port: no port 7$" "$DIR/console.out" ||
	fail "show port info 7: no error naming the port"
echo "ok: the console's show port info 0 and all: testpmd's lines ($(wc -l < "$DIR/testpmd.block"))"

start_psb b --port null --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$TAG-b" --wait -q
for _ in $(seq 300); do [ -S "$RUNDIR/$TAG-b/psb.ctl" ] && break; sleep 0.1; done
"$PSBCTL" -p "$TAG-b" port_info 0 > "$DIR/ctl.out" || fail "psbctl port_info 0 failed"
block "$DIR/ctl.out" 1 | diff -u "$DIR/testpmd.block" - ||
	fail "psbctl port_info 0 is not testpmd's show port info (- testpmd, + psb)"
"$PSBCTL" -p "$TAG-b" --json port_info all > "$DIR/ctl.json" || fail "psbctl --json port_info"
python3 - "$DIR/ctl.json" "$DIR/ctl.out" <<'PY' || fail "port_info's JSON"
import json, sys
r = json.load(open(sys.argv[1]))
p, = r["ports"]
assert p["port"] == 0 and p["spec"] == "null" and p["driver_name"] == "net_null", p
assert p["link_status"] == "up" and p["mtu"] == 9000, p
assert "MAC address: %s" % p["mac_address"] in open(sys.argv[2]).read(), p["mac_address"]
PY
rc=0
"$PSBCTL" -p "$TAG-b" port_info 7 > "$DIR/ctl7.out" 2>&1 || rc=$?
[ $rc = 1 ] && grep -q "not_found: port: no port 7" "$DIR/ctl7.out" ||
	fail "psbctl port_info 7: status $rc, $(cat "$DIR/ctl7.out")"
stop_psb $LAST_PID
echo "ok: psbctl port_info: the same lines, and JSON with the same fields"
echo "port_info: show port info reads as testpmd's"
