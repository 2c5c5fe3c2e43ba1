#!/bin/bash
# psb-mcemu: 50 receivers at 2 % loss for a second of virtual time hold every version but
# perhaps the newest, repaired by parity; the same seed gives the same figures; bad options
# are refused naming the option.
set -uo pipefail
EMU=$1
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
echo "psb-mcemu: figures, determinism and bad options checked"
