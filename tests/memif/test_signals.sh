#!/bin/bash
# How psb and psb-stale end on a signal. A worker whose benchmark SIGINT or SIGTERM cuts
# short writes its results (state stopped) and exits as a shell reports a death by the
# signal, 130 or 143, so that a script tells it from a finished run (0); a server with
# nothing to finish ends with 0. psb-stale's trainer and worker do the same: the trainer's
# summary and CSV so far are written.
#
# usage: test_signals.sh PATH/psb PATH/psb-stale
source "$(dirname "$0")/../export/common.sh" "${1:?usage: test_signals.sh PSB PSB-STALE}"
ST=${2:?usage: test_signals.sh PSB PSB-STALE}

# gone PID SECONDS: PID ended within SECONDS; its status in rc
gone() {
	for _ in $(seq $(($2 * 10))); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$1" 2>/dev/null && fail "pid $1 still runs $2 s after the signal"
	rc=0
	wait "$1" || rc=$?
}
# results FILE PYTHON-EXPR: the JSON in FILE (as r) passes the expression
results() {
	python3 -c "import json, sys; r = json.load(open(sys.argv[1])); assert $2, r" "$1" ||
		fail "$1: not $2"
}

start_psb srv --port "memif:server:$DIR/m.sock" --ip 198.18.0.1 --no-huge -l 0 \
	--file-prefix "$TAG-s" --stats-file "$DIR/s.json" -q
SPID=$LAST_PID
for _ in $(seq 300); do [ -S "$RUNDIR/$TAG-s/psb.ctl" ] && break; sleep 0.1; done
[ -S "$RUNDIR/$TAG-s/psb.ctl" ] || fail "the server did not come up"

# worker TAG REPEAT: a worker in the background, its pid in LAST_PID
worker() {
	start_psb "$1" --role worker --port "memif:client:$DIR/m.sock" --ip 198.18.0.2 \
		--server 198.18.0.1 --no-huge -l 1 --file-prefix "$TAG-$1" --len 4096 --keys 8 \
		--repeat "$2" --log-every 0.2 --results "$DIR/$1.json"
}

for sig in INT TERM; do
	worker "w$sig" 1000000000
	wait_grep "$DIR/w$sig.log" "iter [1-9][0-9]*/" 30 "worker w$sig's progress" $LAST_PID
	kill -s "$sig" $LAST_PID
	gone $LAST_PID 15
	want=$([ $sig = INT ] && echo 130 || echo 143)
	[ $rc = "$want" ] || fail "a worker stopped by SIG$sig exited with $rc, not $want"
	results "$DIR/w$sig.json" 'r["state"] == "stopped" and r["iterations"] > 0 and r["failed"] == 0'
	echo "ok: SIG$sig: the worker exits $rc, its results written (stopped)"
done
worker wdone 5
gone $LAST_PID 60
[ $rc = 0 ] || fail "a worker that finished exited with $rc"
results "$DIR/wdone.json" 'r["state"] == "done" and r["iterations"] == 5'
kill -INT $SPID
gone $SPID 15
[ $rc = 0 ] || fail "a server with nothing to finish exited with $rc on SIGINT"
[ -s "$DIR/s.json" ] || fail "the server wrote no stats file"
echo "ok: a finished worker exits 0, a server stopped by SIGINT 0"

# psb-stale over loopback, pull mode: the trainer and a worker stopped mid-run
FL=(--mode pull --push_frequency 0.1 --data_size 1 --post_frequency 0.2 --max_time 60
    --workers 1)
TRAINER=127.0.0.1:$(python3 -c 'import socket; s = socket.socket(socket.AF_INET,
	socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
"$ST" trainer --local "$TRAINER" --out "$DIR/res" --trial_name t "${FL[@]}" > "$DIR/t.log" 2>&1 &
TPID=$!
PIDS+=($TPID)
"$ST" worker --id 0 --trainer "$TRAINER" --local 127.0.0.1 --json "$DIR/sw.json" "${FL[@]}" \
	> "$DIR/sw.log" 2>&1 &
SWPID=$!
PIDS+=($SWPID)
for _ in $(seq 100); do
	[ "$(wc -l < "$DIR/res/t/.staleness.csv.tmp" 2>/dev/null || echo 0)" -gt 3 ] && break
	sleep 0.1
done
kill -INT $TPID
gone $TPID 15
[ $rc = 130 ] || fail "psb-stale trainer stopped by SIGINT exited with $rc, not 130"
results "$DIR/res/t/summary.json" 'r["state"] == "stopped" and r["posts"] > 0'
[ "$(wc -l < "$DIR/res/t/staleness.csv")" -gt 1 ] || fail "the trainer's CSV holds no posts"
kill -TERM $SWPID
gone $SWPID 15
[ $rc = 143 ] || fail "psb-stale worker stopped by SIGTERM exited with $rc, not 143"
results "$DIR/sw.json" 'r["state"] == "stopped" and not r["ok"]'
echo "ok: psb-stale's trainer (SIGINT: 130) and worker (SIGTERM: 143) write what they have"
echo "signals: a run cut short by a signal says so, in its status and its results"
