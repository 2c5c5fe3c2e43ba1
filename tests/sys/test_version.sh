#!/bin/bash
# Every program and shell front end says what it is: --version prints psb's version and the
# git revision it was built from (scripts/version.sh's line for this tree), and an unknown
# option is one line naming it and where help is, status 2 (not the whole usage). The
# results files of the programs carry both (psb_version, git_revision), as do a benchmark's
# ABOUT.txt and the summary made from it.
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
for s in quickstart.sh staleness.sh testbed.sh slurm-local.sh; do
	check_cli "$s" "$SRC/scripts/$s"
done
for s in "$SRC"/scripts/bench/*.sh; do
	grep -q '^bench_options ' "$s" && check_cli "$(basename "$s")" "$s"
done
echo "ok: every program and front end: --version, and one line for an unknown option"

# psb's version and revision in a results file (a JSON object, or a JSON line)
stamped() {
	python3 - "$1" "$VERSION" "$REV" <<'PY' || fail "$1: no psb_version $VERSION and git_revision $REV"
import json, sys
path, version, rev = sys.argv[1:]
text = open(path).read()
r = json.loads(text.splitlines()[0]) if path.endswith(".jsonl") else json.loads(text)
assert r.get("psb_version") == version and r.get("git_revision") == rev, \
    (r.get("psb_version"), r.get("git_revision"))
PY
}
# prog NAME: the path of program NAME among the arguments
prog() {
	local p
	for p in "${PROGS[@]}"; do [ "$(basename "$p")" != "$1" ] || echo "$p"; done
}

"$(prog psb-mcemu)" --receivers 2 --duration 0.1 --json "$DIR/mcemu.json" > /dev/null ||
	fail "psb-mcemu"
stamped "$DIR/mcemu.json"
"$(prog psb-aggbench)" --mb 1 --runs 1 --json "$DIR/agg.json" > /dev/null || fail "psb-aggbench"
stamped "$DIR/agg.json"
# a kernel-socket server and worker over loopback: the worker's results, the server's stats
"$(prog psb-ksrv)" --ip 127.0.0.1 --port 0 --ready-file "$DIR/ready" --stats-file \
	"$DIR/ksrv.json" -q > "$DIR/ksrv.log" 2>&1 &
KPID=$!
PIDS+=($KPID)	# common.sh's cleanup ends it if this test does not
for _ in $(seq 100); do [ -s "$DIR/ready" ] && break; sleep 0.1; done
"$(prog psb-kbench)" --server "127.0.0.1:$(cut -d' ' -f1 "$DIR/ready")" --keys 4 --results \
	"$DIR/kbench.json" -q 4096 3 > "$DIR/kbench.log" 2>&1 || fail "psb-kbench: $(cat "$DIR/kbench.log")"
kill -TERM $KPID
wait $KPID || fail "psb-ksrv exited with $?"
stamped "$DIR/kbench.json"
stamped "$DIR/ksrv.json"
# psb: its stats file and each line of its counters file
timeout -k 5 60 "$PSB" --port null --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$TAG-a" \
	--duration 1 --stats-file "$DIR/stats.json" --counters-file "$DIR/counters.jsonl" \
	--counters-every 0.2 -q > "$DIR/psb.log" 2>&1 || fail "psb: $(tail -3 "$DIR/psb.log")"
stamped "$DIR/stats.json"
stamped "$DIR/counters.jsonl"
echo "ok: results files of psb-mcemu, psb-aggbench, psb-kbench, psb-ksrv and psb (stats," \
	"counters) say psb $VERSION, git $REV"

# a benchmark's ABOUT.txt: the version and revision of the programs it ran; the summary
# made from a run that has them carries both, one from before does not change
ABOUT=$(cd "$SRC" && bash -c '. scripts/bench/provenance.sh; bench_about "$1" pinning command' \
	_ "$BUILD")
grep -qx "version $VERSION" <<<"$ABOUT" || fail "ABOUT.txt: no 'version $VERSION' line"
want="revision ${REV%-dirty} dirty=$([[ $REV == *-dirty ]] && echo true || echo false)"
[ "$REV" = unknown ] && want="revision unknown"
grep -q "^$want" <<<"$ABOUT" || fail "ABOUT.txt: no '$want' line: $(grep ^revision <<<"$ABOUT")"
run=$(ls -d "$SRC"/docs/bench/mc_emu-* | tail -1)
cp -r "$run" "$DIR/run"
sed -i "1i version 9.8.7" "$DIR/run/ABOUT.txt"
python3 "$SRC/scripts/bench/summarize.py" mc_emu "$DIR/run" > /dev/null || fail "summarize.py"
python3 - "$DIR/run/summary.json" "$(grep ^revision "$run/ABOUT.txt" | cut -d' ' -f2-)" <<'PY' ||
import json, sys
s = json.load(open(sys.argv[1]))
assert s["psb_version"] == "9.8.7" and s["git_revision"] == sys.argv[2], s
PY
	fail "summary of a run whose ABOUT.txt names the version: without it"
echo "ok: ABOUT.txt says version $VERSION and the programs' revision; summaries carry both"
[ $fails = 0 ] && echo "version: every program says what it is"
exit $((fails != 0))
