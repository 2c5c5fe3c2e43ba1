#!/bin/bash
# A worker SIGKILLed in the middle of its pushes, then restarted (a new epoch), over memif
# and over af_packet, in sync and async mode. The server must never add any part of a push
# that did not arrive whole: it discards the dead worker's unfinished push (counted), every
# pulled value the workers check is exact (--verify), and at the end every element is
# right: in sync mode every key's elements all equal the closed rounds times the workers'
# pushes (a partly applied push would leave some higher than others); in async mode the
# restarted worker's check of every key after its run counts each worker's pushes apart.
#
# To kill it truly in the middle of a push, the worker is stopped (SIGSTOP) at random
# moments until the server holds a push of it that has not arrived whole (the server's
# store.staged counter, read through its control socket), and SIGKILLed then.
#
# usage: test_kill.sh PATH/psb PATH/psbctl [memif|af_packet ...]
set -uo pipefail
PSB=$1
PSBCTL=$2
shift 2
KINDS=("${@:-memif}")
[ $# -eq 0 ] && KINDS=(memif af_packet)
. "$(dirname "$0")/bridge.sh"
# the bridge (BR) and the namespaces NSP-s, -a, -b only for af_packet (bridge_nodes below)
bridge_test k 8

# node KIND WHO: the command prefix and port options of node WHO (s, a, b).
node() {
	local kind=$1 who=$2
	if [ "$kind" = af_packet ]; then
		echo "ip netns exec $NSP-$who"
		return
	fi
	echo ""
}
port() {
	local kind=$1 who=$2
	if [ "$kind" = af_packet ]; then
		echo "--port af_packet:${NSP}a$who"
	elif [ "$who" = s ]; then
		echo "--port memif:server:$DIR/a.sock --port memif:server:$DIR/b.sock"
	else
		echo "--port memif:client:$DIR/$who.sock"
	fi
}

wait_ctl() {	# a loaded machine can take long to fault in a psb's pool
	for _ in $(seq 600); do [ -S "/var/run/dpdk/$1/psb.ctl" ] && return 0; sleep 0.1; done
	fail "$1 did not come up within 60 s"
}

# worker KIND WHO RANK TAG SYNC REPEAT: start a worker in the background (its pid in WPID).
worker() {
	local kind=$1 who=$2 rank=$3 tag=$4 sync=$5 repeat=$6
	# shellcheck disable=SC2046
	timeout -k 5 60 $(node "$kind" "$who") "$PSB" --role worker $(port "$kind" "$who") \
		--ip "198.18.11.1$rank" --server 198.18.11.1 --rank "$rank" --num-workers 2 \
		"$sync" -l "$rank" --no-huge --file-prefix "$PFX$tag" \
		--keys $KEYS --len "$LEN" --repeat "$repeat" --mode 1 --verify \
		--results "$DIR/$tag.json" --log-every 1 > "$DIR/$tag.log" 2>&1 &
	WPID=$!
	PIDS+=($WPID)
}

# psb_pid TAG: the pid of the psb process (not its timeout) started with that tag.
psb_pid() {
	local p
	for p in $(pgrep -f -- "--file-prefix $PFX$1 "); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = psb ] && { echo "$p"; return; }
	done
}

# Stop worker TAG at random moments until the server (control socket CTL) holds a push of
# it that has not arrived whole, then SIGKILL it there. Other workers may be pushing only
# while the stopped one is not needed for them to go on (sync: its round must close).
kill_mid_push() {
	local tag=$1 ctl=$2 pid staged try
	pid=$(psb_pid "$tag")
	[ -n "$pid" ] || fail "$tag: not running"
	for try in $(seq 100); do
		sleep "0.0$((RANDOM % 50 + 10))"
		kill -STOP "$pid"
		# what it sent reaches the server, other workers' pushes complete; what is
		# still staged then can only be the stopped worker's
		sleep 0.3
		staged=$("$PSBCTL" --ctl "$ctl" counters store.staged | awk '{print $2}')
		if [ "${staged:-0}" -gt 0 ]; then
			kill -9 "$pid"
			# its successor must not find it still holding the port
			for try in $(seq 100); do
				[ -e "/proc/$pid" ] || break
				sleep 0.1
			done
			[ -e "/proc/$pid" ] && fail "$tag: still there 10 s after SIGKILL"
			echo "$tag: killed in the middle of a push"
			return 0
		fi
		kill -CONT "$pid"
	done
	fail "$tag: never caught in the middle of a push"
}

run() {	# run KIND SYNC
	local kind=$1 sync=$2 t="$1$2" spid bpid apid rc ctl
	rm -f "$DIR"/*.sock
	ctl=/var/run/dpdk/${PFX}s$t/psb.ctl
	# shellcheck disable=SC2046
	timeout -k 5 120 $(node "$kind" s) "$PSB" --role server $(port "$kind" s) \
		--ip 198.18.11.1 --num-workers 2 "$sync" -l 0 --no-huge \
		--file-prefix "${PFX}s$t" --stats-file "$DIR/s$t.json" -q \
		> "$DIR/s$t.log" 2>&1 &
	spid=$!
	PIDS+=($spid)
	wait_ctl "${PFX}s$t"
	if [ "$sync" = --sync ]; then
		# Both push every round until stopped. Once worker 0 is stopped, worker 1 has
		# pushed the open round whole and waits: what is staged then is worker 0's.
		worker "$kind" b 1 "b$t" "$sync" 1000000
		bpid=$WPID
		worker "$kind" a 0 "a$t" "$sync" 1000000
		sleep 1
		kill_mid_push "a$t" "$ctl"
		worker "$kind" a 0 "a2$t" "$sync" 1000000
		apid=$WPID
		# until the restarted worker has done a round (a slow start must not fail the
		# test: its results must show iterations), 60 s at most
		for _ in $(seq 600); do
			grep -q "iter [1-9][0-9]*/" "$DIR/a2$t.log" 2>/dev/null && break
			sleep 0.1
		done
		kill -TERM "$apid" "$bpid"
	else
		# Worker 1 runs its iterations first; then worker 0 alone, killed, restarted.
		worker "$kind" b 1 "b$t" "$sync" 100
		bpid=$WPID
		wait "$bpid" || fail "$t: worker 1 exited with $?"
		worker "$kind" a 0 "a$t" "$sync" 1000000
		sleep 1
		kill_mid_push "a$t" "$ctl"
		worker "$kind" a 0 "a2$t" "$sync" 100
		apid=$WPID
	fi
	wait "$apid"
	rc=$?
	# sync: SIGTERM stopped them before their end, which psb's status says (128 + 15)
	want=$([ "$sync" = --sync ] && echo 143 || echo 0)
	[ $rc -eq "$want" ] || fail "$t: restarted worker exited with $rc, not $want"
	if [ "$sync" = --sync ]; then
		wait "$bpid"
		rc=$?
		[ $rc -eq 143 ] || fail "$t: worker 1 exited with $rc, not 143"
	fi
	kill -TERM "$spid"
	wait "$spid" || fail "$t: server exited with $?"
	PIDS=()
	python3 - "$DIR" "$t" "$sync" "$LEN" "$KEYS" <<'PY' || fail "$t: results"
import json, sys
d, t, sync, length = sys.argv[1], sys.argv[2], sys.argv[3] == "--sync", int(sys.argv[4])
for w in ("b" + t, "a2" + t):
    r = json.load(open(f"{d}/{w}.json"))
    assert r["state"] == ("stopped" if sync else "done"), (w, r["state"])
    assert r["iterations"] > 0, (w, r)
    assert r["failed"] == 0 and r["verify_errors"] == 0, (w, r)
st = json.load(open(f"{d}/s{t}.json"))["store"]
# the killed worker's unfinished push: dropped at its restart (or its timeout), unapplied
assert st["discarded"]["restart"] + st["discarded"]["timeout"] >= 1, st["discarded"]
assert st["discarded_bytes"] > 0, st
# async: every worker ran to its end, nothing is left half-pushed (sync: stopped anywhere)
assert sync or st["staged"] == 0, st
assert len(st["digest"]) == int(sys.argv[5]), st["digest"]
for k in st["digest"]:
    assert k["len"] == length, k
    if sync:
        # every closed round: worker 0 pushed 1, worker 1 pushed 2 into every element; a
        # push applied in part would leave some elements higher than others
        assert k["min"] == k["max"] == 3 * k["round"], k
    else:
        # each worker pushes 1 into its own half (i mod 2 = rank); the restarted worker's
        # check of every key after its run (verify_errors 0 above) saw both halves even
        assert k["min"] >= 1 and k["min"] == int(k["min"]) and k["max"] == int(k["max"]), k
print(f"{t}: discarded {st['discarded']}, rounds {sorted(k['round'] for k in st['digest'])}")
PY
}

for kind in "${KINDS[@]}"; do
	case "$kind" in
	memif) LEN=33554432 KEYS=1 ;;	# 3757 jumbo segments, more than the memif ring holds; one
		# key: the other worker has pushed its one request whole while this one is stopped
	af_packet) LEN=65536 KEYS=8	# 46 segments of 1432 B, every node on a bridge
		bridge_nodes s a b ;;
	*) fail "unknown port kind $kind" ;;
	esac
	run "$kind" --sync
	run "$kind" --async
done
echo "kill: unfinished pushes of a killed worker never reach the store"
