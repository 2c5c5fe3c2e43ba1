#!/bin/bash
# scripts/staleness.sh, the staleness experiment's one-command front end: --help; a trial
# whose results exist refused at once (before any testbed or process, nothing of it
# touched), and replaced with --overwrite; Ctrl-C (SIGINT to the whole process group, as a
# terminal sends it) and SIGTERM (to the script alone) stop the run with the results so far
# written (summary saying stopped, the CSV of the posts) and everything the script started
# gone: processes, namespaces, the bridge, DPDK runtime files.
#
# usage: test_staleness_sh.sh SCRIPTS-DIR BUILD-DIR. Needs root and iproute2; 77 without.
set -uo pipefail
SCRIPT=$1/staleness.sh
BUILD=$2
NAME=u$$
NAME=${NAME:0:8}
DIR=$(mktemp -d /tmp/psbt-stsh-XXXXXX)
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
	echo "SKIP: needs root and iproute2"
	rm -rf "$DIR"
	exit 77
fi
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -9 -- "-$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	"$1/testbed.sh" down --name "$NAME" >/dev/null 2>&1
	rm -rf "$DIR"
}
trap 'cleanup "$(dirname "$SCRIPT")"' EXIT
trap 'exit 1' INT TERM
fail() { echo "FAIL: $*" >&2; for f in "$DIR"/*.log; do echo "== $f"; tail -8 "$f"; done >&2; exit 1; }

FL=(--testbed "$NAME" --build "$BUILD" --out "$DIR/res" --mode multicast --push_frequency 0.1
    --data_size 1 --post_frequency 0.3 --workers 2)
# nothing of the testbed or of the run is left
nothing_left() {
	local what=$1
	ip netns list | grep -q "^psbtb-$NAME-" && fail "$what: namespaces of the testbed left"
	ip link show "psbtb-$NAME" >/dev/null 2>&1 && fail "$what: the testbed's bridge left"
	pgrep -f -- "$DIR/res" >/dev/null && fail "$what: processes left: $(pgrep -af -- "$DIR/res")"
	return 0
}

"$SCRIPT" --help > "$DIR/help.out" || fail "--help exited with $?"
grep -q "^  scripts/staleness.sh --mode multicast" "$DIR/help.out" || fail "--help: no usage"

"$SCRIPT" "${FL[@]}" --max_version 10 --trial_name t > "$DIR/run1.log" 2>&1 ||
	fail "a first run exited with $?"
sum=$(cat "$DIR/res/t/summary.json" "$DIR/res/t.workers/w0.log" | md5sum)
t0=$(date +%s%N)
"$SCRIPT" "${FL[@]}" --max_version 10 --trial_name t > "$DIR/run2.log" 2>&1
rc=$?
ms=$((($(date +%s%N) - t0) / 1000000))
[ $rc = 2 ] || fail "a second run of trial t exited with $rc, not 2"
grep -q "res/t exists: give another --trial_name, or --overwrite" "$DIR/run2.log" ||
	fail "the refusal does not say why: $(cat "$DIR/run2.log")"
[ $ms -lt 2000 ] || fail "the refusal took $ms ms: not at once"
[ "$(cat "$DIR/res/t/summary.json" "$DIR/res/t.workers/w0.log" | md5sum)" = "$sum" ] ||
	fail "the refused run touched the first run's summary or worker logs"
nothing_left refused
echo "ok: a repeated --trial_name refused in $ms ms, the first run's files untouched"
"$SCRIPT" "${FL[@]}" --max_version 5 --trial_name t --overwrite > "$DIR/run3.log" 2>&1 ||
	fail "--overwrite: exited with $?"
python3 -c 'import json, sys; s = json.load(open(sys.argv[1])); assert s["ok"] and s["final_version"] == 5, s' \
	"$DIR/res/t/summary.json" || fail "--overwrite: the results are not the new run's"
echo "ok: --overwrite replaces the trial's results"

# stop SIG TRIAL: a long run, stopped by SIG once posts flow (INT: to the whole group)
stop() {
	local sig=$1 trial=$2 pid i want
	setsid "$SCRIPT" "${FL[@]}" --max_time 120 --trial_name "$trial" > "$DIR/$trial.log" 2>&1 &
	pid=$!
	PIDS+=($pid)
	for _ in $(seq 300); do
		[ "$(wc -l < "$DIR/res/$trial/.staleness.csv.tmp" 2>/dev/null || echo 0)" -gt 4 ] && break
		sleep 0.1
	done
	[ -f "$DIR/res/$trial/.staleness.csv.tmp" ] || fail "$trial: no posts came"
	if [ "$sig" = INT ]; then kill -INT -- "-$pid"; else kill -TERM "$pid"; fi
	for ((i = 0; i < 300; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && fail "$trial: the script still runs 30 s after SIG$sig"
	wait "$pid"
	rc=$?
	want=$([ "$sig" = INT ] && echo 130 || echo 143)
	[ $rc = "$want" ] || fail "$trial: SIG$sig: the script exited with $rc, not $want"
	python3 - "$DIR/res/$trial" <<'PY' || fail "$trial: the results so far"
import json, sys
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
assert s["state"] == "stopped" and not s["ok"] and s["posts"] > 0, s
lines = open(d + "/staleness.csv").read().splitlines()
assert len(lines) > 1, lines
PY
	nothing_left "$trial"
	ls /var/run/dpdk 2>/dev/null | grep -q "^$NAME" && fail "$trial: DPDK runtime files left"
	echo "ok: SIG$sig: exit $rc, summary (stopped) and CSV so far written, nothing left running"
}
stop INT c
stop TERM d
echo "staleness_sh: refuses a repeated trial at once, stops on Ctrl-C with results"
