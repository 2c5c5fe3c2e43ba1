#!/bin/bash
# Idle lcores (node.idle). A server on af_packet with --idle sleep takes little CPU while no
# request comes (under 10 % of a core over 2 s, from /proc) and still answers a worker's
# pushes and pulls exactly, woken by its socket; with --idle poll a psb spins (never blocks,
# over 25 % of a core: others may share the CPU); auto on a CPU another psb polls sleeps and
# says why at start; a psb that had its CPU to itself turns to sleeping once another comes
# to poll it too.
#
# usage: test_idle.sh PATH/psb. Needs root; 77 without.
set -uo pipefail
PSB=$1
. "$(dirname "$0")/bridge.sh"
bridge_test id 20 1 2

HZ=$(getconf CLK_TCK)
# cpu_pct PID SECONDS: the CPU share PID took over SECONDS (utime + stime), in percent
cpu_pct() {
	local a b
	a=$(awk '{print $14 + $15}' "/proc/$1/stat") || return 1
	sleep "$2"
	b=$(awk '{print $14 + $15}' "/proc/$1/stat") || return 1
	echo $(((b - a) * 100 / (HZ * $2)))
}
# vcsw PID: the times PID's main thread (the main lcore) blocked so far
vcsw() { awk '/^voluntary_ctxt_switches/ {print $2}' "/proc/$1/status"; }
# up LOG: wait (20 s at most) for psb's control limits line, which it prints once running
up() {
	local i
	for ((i = 0; i < 200; i++)); do
		grep -q "control limits" "$1" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "$1: psb did not come up"
}
# a psb on a ring port, in this namespace: nothing comes, only its idle loop runs
ring_psb() {	# ring_psb NAME ARGS...
	local name=$1
	shift
	"$PSB" --port ring --ip 198.18.31.9 --no-huge --duration 40 --ctl none \
		--file-prefix "$PFX$name" "$@" > "$DIR/$name.log" 2>&1 &
	PIDS+=($!)
	up "$DIR/$name.log"
}

# 1. --idle sleep: idle, a few % of a core; a worker's pushes and pulls exact
ip netns exec "$NSP-1" "$PSB" --port "af_packet:${NSP}a1" --ip 198.18.31.1 --no-huge \
	--idle sleep --duration 60 --file-prefix "${PFX}s" --stats-file "$DIR/s.json" \
	> "$DIR/s.log" 2>&1 &
SRV=$!
PIDS+=($SRV)
up "$DIR/s.log"
grep -q "psb: idle: sleep (node.idle sleep); wakes on af_packet socket descriptors, shared-memory clients' frames by time, 1ms at most" \
	"$DIR/s.log" || fail "no idle line as expected"
sleep 1		# what starting took (the pools, the experiment's start) is not idling
pct=$(cpu_pct $SRV 2) || fail "server gone"
[ "$pct" -lt 10 ] || fail "--idle sleep: the idle server took $pct % of a core"
echo "idle server, --idle sleep: $pct % of a core"
ip netns exec "$NSP-2" timeout -k 5 60 "$PSB" --role worker --port "af_packet:${NSP}a2" \
	--ip 198.18.31.2 --no-huge --idle sleep --server 198.18.31.1 --file-prefix "${PFX}w" \
	--verify --results "$DIR/w.json" 4096 300 > "$DIR/w.log" 2>&1 || fail "worker: $?"
kill -TERM $SRV
wait $SRV || fail "server exited with $?"
python3 - "$DIR" <<'PY' || fail "checks"
import json, sys
d = sys.argv[1]
w = json.load(open(f"{d}/w.json"))
assert w["iterations"] == 300 and w["failed"] == 0 and w["verify_errors"] == 0, w
s = json.load(open(f"{d}/s.json"))
st = s["store"]
assert st["value_sum"] == st["keys"] * 1024 * 300, st
idle = s["control"]["idle"]
assert idle["sleeping"] and idle["sleeps"] > 100 and idle["wakes"]["traffic"] > 0, idle
assert idle["wakes"]["timeout"] > 0 and idle["late_max_us"] > 0, idle
print("server slept %d times (%d woken by traffic), late %.1f us on average, %.0f us at most"
      % (idle["sleeps"], idle["wakes"]["traffic"], idle["late_mean_us"], idle["late_max_us"]))
PY

# 2. --idle poll spins on its CPU: it never blocks (its lcore's voluntary context switches
# stay put), and takes what CPU it gets (others may share CPU 0: a share, not all of it)
ring_psb poll -l 0 --idle poll
v0=$(vcsw "${PIDS[-1]}")
pct=$(cpu_pct "${PIDS[-1]}" 2) || fail "poll: gone"
v1=$(vcsw "${PIDS[-1]}")
[ "$pct" -gt 25 ] || fail "--idle poll took only $pct % of a core"
[ $((v1 - v0)) -lt 50 ] || fail "--idle poll blocked $((v1 - v0)) times in 2 s"
grep -q "psb: idle: poll (node.idle poll)" "$DIR/poll.log" || fail "poll: no idle line"
echo "idle psb, --idle poll: $pct % of a core, blocked $((v1 - v0)) times in 2 s"

# 3. auto on the CPU the polling one polls: sleeps, and says why
ring_psb shared -l 0
grep -Eq "psb: idle: sleep \(1 lcore on 1 CPU, 1 of them polled by another psb too" \
	"$DIR/shared.log" || fail "auto on a shared CPU: $(grep 'idle:' "$DIR/shared.log")"
pct=$(cpu_pct "${PIDS[-1]}" 2) || fail "shared: gone"
[ "$pct" -lt 10 ] || fail "auto on a shared CPU took $pct % of a core"
echo "idle psb, auto on a CPU another psb polls: $pct % of a core"
kill -TERM "${PIDS[-2]}" "${PIDS[-1]}"

# 4. auto that had CPU 1 to itself sleeps once another psb comes to poll it
ring_psb first -l 1
if grep -q "psb: idle: poll (1 lcore on 1 CPU no other psb polls" "$DIR/first.log"; then
	ring_psb second -l 1
	for ((i = 0; i < 40; i++)); do
		grep -q "psb: idle: sleep from now" "$DIR/first.log" && break
		sleep 0.1
	done
	grep -q "psb: idle: sleep from now (1 lcore on 1 CPU, 1 of them polled by another psb" \
		"$DIR/first.log" || fail "the first psb on CPU 1 still polls"
	echo "auto: the psb alone on CPU 1 sleeps once another polls it too"
else
	echo "auto: CPU 1 is another psb's already, the switch not checked"
fi
echo "idle: sleep costs little and answers exactly, poll spins, auto follows the CPUs' sharing"
