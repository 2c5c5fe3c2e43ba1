#!/bin/bash
# The ps-lite job over real ports: a scheduler, two servers and two workers, each in its own
# namespace on one bridge (af_packet), started by DMLC_* alone with default settings. Run at
# 4 KB and 1 MB on a 1500-byte bridge (1 MB is 716 segments: lost ones are repaired, not
# the whole value resent), at 1 MB on a 9000-byte one (jumbo frames: psb takes the
# interface's MTU) and there at 64 MiB, the default --max-value. Every run must finish its rounds with exact sums on both servers, and
# the job must end as a ps-lite job does: once both workers finished, the servers and the
# scheduler exit by themselves, their stats written; with --keep-serving they stay.
#
# usage: test_job.sh PATH/psb. Needs root; 77 without.
set -uo pipefail
PSB=$1
. "$(dirname "$0")/bridge.sh"
NODES=(0 1 2 3 4)
bridge_test jb 12 "${NODES[@]}"

set_mtu() { bridge_mtu "$BR" "$NSP" "$NSP" "$1" "${NODES[@]}"; }

ROOT=198.18.13.1
start() {	# start N ROLE HOST-IP ARGS...
	local n=$1 role=$2 host=$3
	shift 3
	dmlc_exec "$NSP" "$NSP" "$n" "$role" $ROOT "$host" 2 2 \
		timeout -k 5 150 "$PSB" --log-time --file-prefix "$PFX$n" "$@" > "$DIR/n$n.log" 2>&1 &
	PIDS+=($!)
}

# gone PID SECONDS: 0 once process PID is gone, 1 if it is still there after SECONDS
gone() {
	local i
	for ((i = 0; i < $2 * 10; i++)); do
		kill -0 "$1" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

run_job() {	# run_job MTU LEN REPEAT [--keep-serving|""] [WORKER-ARGS...]
	local mtu=$1 len=$2 repeat=$3 keep=${4:-} i t0 tw
	shift 3
	[ $# -gt 0 ] && shift
	set_mtu "$mtu"
	rm -f "$DIR"/*.json "$DIR"/*.log
	t0=$(date +%s)
	start 0 scheduler "" --stats-file "$DIR/sched.json" $keep
	start 1 server 198.18.13.2 --stats-file "$DIR/s1.json" $keep
	start 2 server 198.18.13.3 --stats-file "$DIR/s2.json" $keep
	start 3 worker 198.18.13.10 --verify --results "$DIR/w3.json" "$@" "$len" "$repeat"
	start 4 worker 198.18.13.11 --verify --results "$DIR/w4.json" "$@" "$len" "$repeat"
	wait "${PIDS[3]}" || fail "MTU $mtu, $len B: worker 0 exited with $?"
	wait "${PIDS[4]}" || fail "MTU $mtu, $len B: worker 1 exited with $?"
	tw=$(($(date +%s) - t0))
	if [ -n "$keep" ]; then
		# told to keep serving: still there a while after the workers finished
		sleep 2
		for i in 0 1 2; do
			kill -0 "${PIDS[$i]}" 2>/dev/null || {
				# where the time went: the workers' first lines (the tails follow)
				head -n 30 "$DIR/n3.log" "$DIR/n4.log" >&2
				fail "node $i ended despite --keep-serving ($(($(date +%s) - t0)) s" \
					"after it started, the workers ended after $tw s; each node has 150 s)"
			}
		done
		for i in 0 1 2; do kill -TERM "${PIDS[$i]}" 2>/dev/null; done
	fi
	# the job ends by itself: the scheduler tells the servers, then ends too
	for i in 0 1 2; do
		gone "${PIDS[$i]}" 15 || fail "MTU $mtu, $len B: node $i still running 15 s after" \
			"the workers finished"
	done
	for i in 0 1 2; do wait "${PIDS[$i]}" || fail "MTU $mtu, $len B: node $i exited with $?"; done
	PIDS=()
	python3 - "$DIR" "$mtu" "$len" "$repeat" "$keep" <<'PY' || fail "MTU $mtu, $len B: checks"
import json, re, sys
d, mtu, length, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
keep = sys.argv[5] != ""
sc = json.load(open(f"{d}/sched.json"))["scheduler"]
assert sc["workers_finished"] == 2 and sc["servers_ended"] == (0 if keep else 2), sc
if not keep:
    assert "scheduler: every server ended: the job is over" in open(f"{d}/n0.log").read()
    for n in (1, 2):
        assert "every worker finished, says the scheduler: the job is over" in \
            open(f"{d}/n{n}.log").read(), n
# psb takes the interface's MTU, jumbo included
for n in (1, 3):
    t = open(f"{d}/n{n}.log").read()
    m = re.search(r"MTU (\d+), segment (\d+) B", t)
    assert m and int(m.group(1)) == mtu, (n, m and m.group(0), t[-600:])
    assert re.search(rf"kernel rings of \d+ frames each way \(MTU {mtu}\)", t), t[-600:]
good = []
for f in ("w3", "w4"):
    w = json.load(open(f"{d}/{f}.json"))
    assert w["iterations"] == repeat and w["failed"] == 0 and w["verify_errors"] == 0, w
    good.append(w["goodput_gbps"])
rec = {}
for f in ("s1", "s2"):
    st = json.load(open(f"{d}/{f}.json"))["store"]
    # every worker pushed rank + 1 into every element once per round: 1 + 2 per round
    assert st["keys"] > 0 and st["value_sum"] == st["keys"] * (length // 4) * repeat * 3, (f, st)
    for k in st["digest"]:
        assert k["round"] == repeat and k["min"] == k["max"] == 3 * repeat, (f, k)
    assert st["repair_bad"] == 0, st
    rec[f] = (st["repairs"], st["nacks"], st["repair_segs"])
print(f"MTU {mtu}, {length} B x {repeat}: exact sums, goodput {good[0]:.2f} + {good[1]:.2f} Gbps;"
      f" server repairs/nacks/segments {rec}")
PY
	echo "  ($(($(date +%s) - t0)) s)"
}

# run_rejoin: the job at 4 KB; one worker (node 4) SIGKILLed in the middle and started again. It
# rejoins at the job's current round (the scheduler knows its address), both workers end
# together after REPEAT rounds with exact sums, and the job ends.
run_rejoin() {
	local repeat=1500 i pid
	set_mtu 1500
	rm -f "$DIR"/*.json "$DIR"/*.log
	start 0 scheduler "" --stats-file "$DIR/sched.json"
	start 1 server 198.18.13.2 --stats-file "$DIR/s1.json"
	start 2 server 198.18.13.3 --stats-file "$DIR/s2.json"
	start 3 worker 198.18.13.10 --verify --results "$DIR/w3.json" 4096 $repeat
	start 4 worker 198.18.13.11 --verify --results "$DIR/w4.json" 4096 $repeat
	wait_iter 4 $repeat
	pid=$(node_pid 4)
	[ -n "$pid" ] || fail "rejoin: node 4 (a worker) is not running"
	kill -9 "$pid"
	echo "rejoin: $(date +%T.%3N) node 4 (pid $pid) killed" >&2
	wait "${PIDS[4]}" 2>/dev/null
	mv "$DIR/n4.log" "$DIR/n4-killed.log"
	echo "rejoin: $(date +%T.%3N) node 4 gone, started again" >&2
	dmlc_exec "$NSP" "$NSP" 4 worker $ROOT 198.18.13.11 2 2 timeout -k 5 150 "$PSB" --log-time \
		--file-prefix "${PFX}4b" --verify --results "$DIR/w4.json" 4096 $repeat \
		> "$DIR/n4.log" 2>&1 &
	PIDS[4]=$!
	wait "${PIDS[3]}" || fail "rejoin: the other worker (node 3) exited with $?"
	wait "${PIDS[4]}" || fail "rejoin: the restarted worker (node 4) exited with $?"
	for i in 0 1 2; do
		gone "${PIDS[$i]}" 15 || fail "rejoin: node $i still running after the workers finished"
		wait "${PIDS[$i]}" || fail "rejoin: node $i exited with $?"
	done
	PIDS=()
	python3 - "$DIR" $repeat <<'PY' || fail "rejoin: checks"
import json, sys
d, repeat = sys.argv[1], int(sys.argv[2])
assert "rejoining the job as rank " in open(f"{d}/n4.log").read()
w3, w4 = (json.load(open(f"{d}/{f}.json")) for f in ("w3", "w4"))
assert w3["iterations"] == repeat and w3["failed"] == 0 and w3["verify_errors"] == 0, w3
# the restarted worker did what was left of the job, no more
assert 0 < w4["iterations"] < repeat and w4["failed"] == 0 and w4["verify_errors"] == 0, w4
for f in ("s1", "s2"):
    st = json.load(open(f"{d}/{f}.json"))["store"]
    assert st["value_sum"] == st["keys"] * 1024 * repeat * 3, (f, st["value_sum"])
    for k in st["digest"]:
        assert k["round"] == repeat and k["min"] == k["max"] == 3 * repeat, (f, k)
sc = json.load(open(f"{d}/sched.json"))["scheduler"]
assert sc["reregistered"] >= 1 and sc["workers_finished"] == 2 and sc["servers_ended"] == 2, sc
print(f"rejoin: a worker killed and restarted, did {w4['iterations']} of {repeat}; exact sums")
PY
}

# node_pid N: the psb process of node N (not the timeout or shell around it)
node_pid() {
	pgrep -f -- "--file-prefix ${PFX}$1 " | while read -r p; do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = psb ] && echo "$p"; done
}

# wait_iter N REPEAT: until node N's log shows a finished iteration (30 s at most)
wait_iter() {
	local i
	for ((i = 0; i < 300; i++)); do
		grep -q "iter [1-9][0-9]*/$2" "$DIR/n$1.log" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "node $1 did no iteration in 30 s"
}

# run_server_lost dead|restart: the job at 4 KB; one server (node 2) SIGKILLed in the middle,
# and with `restart` started again at once. Either way what it stored is gone: both workers
# must fail within seconds, naming that server (not a key), with their partial results
# written; the living server and the scheduler end, the scheduler with rc 1 naming it too.
run_server_lost() {
	local how=$1 repeat=1000000 pid t0 t1 i rc sched_args=()
	set_mtu 1500
	rm -f "$DIR"/*.json "$DIR"/*.log
	# a restart is told apart from a death only while the scheduler waits for it
	[ "$how" = restart ] && sched_args=(--dead-after 60)
	start 0 scheduler "" --stats-file "$DIR/sched.json" "${sched_args[@]}"
	start 1 server 198.18.13.2 --stats-file "$DIR/s1.json"
	start 2 server 198.18.13.3 --stats-file "$DIR/s2.json"
	start 3 worker 198.18.13.10 --results "$DIR/w3.json" 4096 $repeat
	start 4 worker 198.18.13.11 --results "$DIR/w4.json" 4096 $repeat
	wait_iter 3 $repeat
	pid=$(node_pid 2)
	[ -n "$pid" ] || fail "$how: node 2 (a server) is not running"
	t0=$(date +%s.%N)
	kill -9 "$pid"
	wait "${PIDS[2]}" 2>/dev/null
	if [ "$how" = restart ]; then
		mv "$DIR/n2.log" "$DIR/n2-killed.log"
		dmlc_exec "$NSP" "$NSP" 2 server $ROOT 198.18.13.3 2 2 timeout -k 5 150 "$PSB" --log-time \
			--file-prefix "${PFX}2b" --stats-file "$DIR/s2.json" > "$DIR/n2.log" 2>&1 &
		PIDS[2]=$!
	fi
	for i in 3 4; do
		wait "${PIDS[$i]}"
		rc=$?
		[ "$rc" -ne 0 ] || fail "$how: worker node $i exited 0 although a server was lost"
	done
	t1=$(date +%s.%N)
	for i in 0 1 2; do
		gone "${PIDS[$i]}" 15 || fail "$how: node $i still running 15 s after the workers failed"
	done
	wait "${PIDS[0]}"
	rc=$?
	[ "$rc" -eq 1 ] || fail "$how: the scheduler exited with $rc, not 1"
	wait "${PIDS[1]}" || fail "$how: the living server exited with $?"
	wait "${PIDS[2]}" 2>/dev/null
	PIDS=()
	python3 - "$DIR" "$how" "$t0" "$t1" <<'PY' || fail "$how: checks"
import json, re, sys
d, how, t0, t1 = sys.argv[1], sys.argv[2], float(sys.argv[3]), float(sys.argv[4])
what = "is dead" if how == "dead" else "restarted"
# within seconds: the scheduler's --dead-after (3 s) and a heartbeat, not a request's 59 s
assert t1 - t0 < 12, f"the workers took {t1 - t0:.1f} s to fail"
for n in (3, 4):
    log = open(f"{d}/n{n}.log").read()
    m = re.search(r"benchmark FAILED: (.*)", log)
    assert m, log[-1500:]
    msg = m.group(1)
    assert re.search(r"server \d \(198\.18\.13\.3:9430", msg) and what in msg, msg
    w = json.load(open(f"{d}/w{n}.json"))
    assert w["state"] == "failed" and "198.18.13.3" in w["error"] and what in w["error"], w
    assert w["iterations"] > 0, w
sched = open(f"{d}/n0.log").read()
assert re.search(r"server rank \d \(198\.18\.13\.3:9430\) " +
                 ("is dead" if how == "dead" else "registered again"), sched), sched[-1500:]
assert "the job lost 1 server(s)" in sched, sched[-1500:]
sc = json.load(open(f"{d}/sched.json"))["scheduler"]
assert sc["servers_dead" if how == "dead" else "servers_restarted"] == 1, sc
assert sc["heartbeats"] > 0 and sc["workers_finished"] == 2, sc
if how == "restart":
    assert "this server restarted" in open(f"{d}/n2.log").read()
print(f"server {how}: both workers failed {t1 - t0:.1f} s after the kill, naming it")
PY
}

run_job 1500 4096 50
run_rejoin
run_job 1500 4096 20 --keep-serving
run_job 1500 1048576 3
run_job 9000 1048576 3
# the largest value a server takes by default (--max-value 64 MiB), one key on each server
run_job 9000 67108864 1 "" --keys 1
run_server_lost dead
run_server_lost restart
echo "job: 2 servers and 2 workers over af_packet, 4 KB and 1 MB (MTU 1500 and 9000)" \
	"and 64 MiB (9000), exact sums; the job ends when its workers finished" \
	"(or serves on with --keep-serving)"
