#!/bin/bash
# Every program and shell front end says what it is: --version prints psb's version and the
# git revision it was built from (scripts/version.sh's line for this tree), and an unknown
# option is one line naming it and where help is, status 2 (not the whole usage).
#
# usage: test_version.sh PATH/psb SOURCE_ROOT BUILD_ROOT PROGRAM... (psb among them)
source "$(dirname "$0")/../export/common.sh" "${1:?usage: test_version.sh PSB SRC BUILD PROG...}"
SRC=$2
BUILD=$3
shift 3
PROGS=("$@")
set +e		# every failure is counted and said, then the next check runs
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

REV=$("$SRC/scripts/version.sh" revision) || REV=unknown
VERSION=$("$SRC/scripts/version.sh" version)
[ -n "$VERSION" ] || fail "scripts/version.sh version: nothing"

# check_cli NAME CMD...: NAME's --version and its answer to --frob
check_cli() {
	local name=$1 out err rc want
	shift
	want=$("$SRC/scripts/version.sh" line "$name")
	out=$("$@" --version 2>"$DIR/err")
	rc=$?
	if [ $rc != 0 ] || [ "$out" != "$want" ] || [ -s "$DIR/err" ]; then
		fail "$name --version: status $rc, '$out' (expected '$want') $(cat "$DIR/err")"
	fi
	[[ "$out" =~ ^[^\ ]+\ [0-9][^\ ]*\ \(git\ ([0-9a-f]{12}(,\ dirty)?|unknown)\)$ ]] ||
		fail "$name --version: '$out' is not 'NAME VERSION (git REV[, dirty])'"
	out=$("$@" --frob 2>"$DIR/err" </dev/null)
	rc=$?
	err=$(cat "$DIR/err")
	want="$name: unrecognized option '--frob'"
	if [ $rc != 2 ] || [ -n "$out" ] || [ "$(wc -l < "$DIR/err")" != 1 ] ||
	   [[ "$err" != "$want"*"; try '$name --help'" ]]; then
		fail "$name --frob: status $rc, stderr '$err' (expected one line '$want...; try" \
			"'$name --help''), stdout '${out:0:80}'"
	fi
}

for p in "$@"; do
	check_cli "$(basename "$p")" "$p"
done
for s in quickstart.sh testbed.sh; do
	check_cli "$s" "$SRC/scripts/$s"
done
for s in "$SRC"/scripts/bench/*.sh; do
	grep -q '^bench_options ' "$s" && check_cli "$(basename "$s")" "$s"
done
echo "ok: every program and front end: --version, and one line for an unknown option"

[ $fails = 0 ] && echo "version: every program says what it is"
exit $((fails != 0))
