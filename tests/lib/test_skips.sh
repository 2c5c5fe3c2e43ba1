#!/bin/bash
# A skip is not a pass: a test that cannot check something here says what it left out and
# exits 77 (meson's SKIP). Each way of skipping is made to happen: the rules themselves
# (test_testskip), the ICRC taken by the reference as on a CPU without VPCLMULQDQ
# (PSB_ROCE_ICRC=isa-l: test_roce, fuzz_roce_replay, icrc_oracle.py) and the wider summation
# kernels left out as on a CPU without them (PSB_AGG=scalar: test_agg).
set -euo pipefail
PROBE=$1 ROCE=$2 AGG=$3 FUZZ=$4 GEN=$5 ACCOUNT=$6 ORACLE=$7
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# expect RC WHAT PATTERN -- COMMAND...: COMMAND exits RC, and says PATTERN when there is one
expect() {
	local want=$1 what=$2 pat=$3 rc=0

	shift 4
	"$@" > "$DIR/out" 2>&1 || rc=$?
	if [ "$rc" != "$want" ]; then
		tail -20 "$DIR/out" >&2
		fail "$what: exit $rc, not $want"
	fi
	if [ -n "$pat" ] && ! grep -q -- "$pat" "$DIR/out"; then
		tail -20 "$DIR/out" >&2
		fail "$what: it did not say \"$pat\""
	fi
	echo "$what: exit $rc${pat:+, \"$pat\"}"
}

expect 0 "nothing skipped" "" -- "$PROBE" pass
expect 77 "a case skipped" "skipped: this machine cannot run the check" -- "$PROBE" skip
expect 77 "a check left out, the case going on" "skipped: 1 of 3 kernels are not tested" -- \
	"$PROBE" note
expect 1 "a failure beside a skip" "" -- "$PROBE" fail

icrc="skipped: .*the in-place ICRC is not"
expect 77 "test_roce, the ICRC by the reference" "$icrc tested" -- \
	env PSB_ROCE_ICRC=isa-l "$ROCE"
expect 77 "fuzz_roce_replay, the ICRC by the reference" "$icrc fuzzed" -- \
	env PSB_ROCE_ICRC=isa-l "$FUZZ"
"$GEN" --wire "$DIR/w.pcap" --host "$DIR/h.pcap" --expect "$DIR/e.json" > /dev/null
PSB_ROCE_ICRC=isa-l "$ACCOUNT" --icrc "$DIR/icrc.txt" "$DIR/w.pcap" "$DIR/h.pcap" > /dev/null
expect 77 "icrc_oracle.py, the ICRC by the reference" "$icrc checked" -- \
	python3 "$ORACLE" "$DIR/icrc.txt" "$DIR/w.pcap" "$DIR/h.pcap"
expect 77 "test_agg, scalar kernels alone" "skipped: .*avx2" -- env PSB_AGG=scalar "$AGG"
echo "PASS"
