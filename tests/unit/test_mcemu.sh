#!/bin/bash
# psb-mcemu: 50 receivers at 2 % loss for a second of virtual time hold every version but
# perhaps the newest, repaired by parity; the same seed gives the same figures; bad options
# are refused naming the option. psb-mcast: its bench into each sink, and bad command lines.
#
# usage: test_mcemu.sh PATH/psb-mcemu PATH/psb-mcast
set -uo pipefail
EMU=$1
MC=$2
DIR=$(mktemp -d /tmp/psb-mcemu-XXXXXX)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$EMU" --receivers 50 --loss 0.02 --duration 1 --json "$DIR/a.json" > "$DIR/out" ||
	fail "psb-mcemu exited with $?"
"$EMU" --receivers 50 --loss 0.02 --duration 1 --json "$DIR/b.json" > /dev/null ||
	fail "psb-mcemu exited with $?"
cmp -s "$DIR/a.json" "$DIR/b.json" || fail "the same seed gave other figures"
"$EMU" --receivers 50 --loss 0.02 --duration 1 --parity 0 --json "$DIR/c.json" > /dev/null ||
	fail "psb-mcemu --parity 0 exited with $?"
grep -q "receivers 50, loss 0.02" "$DIR/out" || fail "no summary line: $(cat "$DIR/out")"
python3 - "$DIR" <<'PY' || fail "figures"
import json, sys
d = sys.argv[1]
a, c = (json.load(open(f"{d}/{f}.json")) for f in ("a", "c"))
assert a["published"] == 5 and a["sent_whole"] >= 4, a
assert a["completed_min"] >= a["published"] - 1, a
assert a["nacks"] > 0 and a["repair_bytes"] > 0, a
# parity repairs many receivers' losses at once; resending what each lost costs more
assert c["repair_bytes"] > 2 * a["repair_bytes"], (a["repair_bytes"], c["repair_bytes"])
assert c["completed_min"] >= c["published"] - 1, c
PY
for bad in "--receivers 0" "--loss 0.9" "--group 65" "--parity 1 --proactive 2" "--data-size lots"; do
	# shellcheck disable=SC2086
	err=$("$EMU" $bad 2>&1 >/dev/null)
	rc=$?
	[ $rc -eq 2 ] || fail "psb-mcemu $bad: exit $rc, not 2"
	opt=${bad%% *}
	[[ "$err" == *"$opt"* ]] || [[ "$err" == *proactive* ]] || fail "psb-mcemu $bad: '$err' does not name $opt"
done
for sink in null copy udp; do
	"$MC" bench --sink $sink --seconds 0.05 --data-size 1MB --rate 50 --json "$DIR/b-$sink.json" \
		> /dev/null || fail "psb-mcast bench --sink $sink exited with $?"
	python3 -c 'import json, sys; r = json.load(open(sys.argv[1]))
assert r["data_bytes"] > 0 and r["published"] >= 1 and r["gb_per_s"] > 0, r' "$DIR/b-$sink.json" ||
		fail "psb-mcast bench --sink $sink: $(cat "$DIR/b-$sink.json")"
done
while IFS='|' read -r args want; do
	# shellcheck disable=SC2086
	err=$("$MC" $args 2>&1 >/dev/null)
	rc=$?
	[ $rc -ne 0 ] || fail "psb-mcast $args: accepted"
	[[ "$err" == *"$want"* ]] || fail "psb-mcast $args: '$err' does not say '$want'"
done <<'BAD'
bench --sink disk|--sink
send --group 239.1.1.1:7000|--local
recv --local 127.0.0.1|--group
send --local 127.0.0.1:7001 --group 10.0.0.1:7000|not a multicast address
recv --local 127.0.0.1 --group 239.1.1.1:0|--group
send --local 127.0.0.1 --group 239.1.1.1:7000|IP:PORT
BAD
echo "psb-mcemu and psb-mcast: figures, determinism and bad options checked"
