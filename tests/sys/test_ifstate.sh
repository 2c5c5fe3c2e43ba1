#!/bin/bash
# psb gives a kernel interface back as it found it: without --mtu it never changes the MTU;
# with --mtu, and for promiscuity, it puts back what it changed at a normal exit, on
# SIGTERM, at an error exit, on a crash (SIGSEGV), and after SIGKILL the next psb to start
# does it, saying so.
# What a user set (promiscuity on) stays.
#
# usage: test_ifstate.sh PATH/psb. Needs root (a veth pair named after the PID); 77 without.
set -uo pipefail
PSB=$1
IF=psbi$$a
PEER=psbi$$b
PFX=psbt-if$$
DIR=$(mktemp -d /tmp/psbt-ifstate-XXXXXX)
PID=
cleanup() {
	[ -n "$PID" ] && kill -KILL "$PID" 2>/dev/null
	wait 2>/dev/null
	ip link del "$IF" 2>/dev/null
	rm -f /var/run/psb/ifstate/*-"$IF"
	rm -rf "$DIR" /var/run/dpdk/"$PFX"-*
}
trap cleanup EXIT
trap 'exit 143' TERM INT
fail() { echo "FAIL: $*" >&2; for f in "$DIR"/*.log; do echo "== $f"; tail -5 "$f"; done >&2; exit 1; }
[ "$(id -u)" = 0 ] && command -v ip >/dev/null || { echo "SKIP: needs root and iproute2"; exit 77; }

ip link add "$IF" type veth peer name "$PEER" || fail "cannot create veth $IF"
sysctl -qw "net.ipv6.conf.$IF.disable_ipv6=1" 2>/dev/null
ip link set "$IF" up && ip link set "$PEER" up || fail "cannot bring $IF up"

state() {	# "MTU promisc|-" of $IF
	local l
	l=$(ip -o link show "$IF") || return 1
	printf '%s %s\n' "$(sed -E 's/.* mtu ([0-9]+) .*/\1/' <<<"$l")" \
		"$(grep -q '[<,]PROMISC[,>]' <<<"$l" && echo promisc || echo -)"
}
expect_state() {	# WANT WHAT
	local now
	now=$(state)
	[ "$now" = "$1" ] || fail "$2: $IF is '$now', expected '$1'"
	echo "ok: $2: $IF is $1"
}
# start_psb TAG ARGS...: psb on $IF in the background (PID), until its port runs
start_psb() {
	local tag=$1
	shift
	"$PSB" --port "af_packet:$IF" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-$tag" \
		"$@" >"$DIR/$tag.log" 2>&1 &
	PID=$!
	for _ in $(seq 300); do
		[ -S "/var/run/dpdk/$PFX-$tag/psb.ctl" ] && return 0
		kill -0 "$PID" 2>/dev/null || fail "$tag: psb exited early"
		sleep 0.1
	done
	fail "$tag: psb did not come up within 30 s"
}
stop_psb() {	# SIGNAL WANT-RC
	local rc=0 i
	kill -"$1" "$PID"
	for i in $(seq 150); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
	wait "$PID" 2>/dev/null || rc=$?
	PID=
	[ "$rc" -eq "$2" ] || fail "psb exited with $rc after SIG$1, expected $2"
}

expect_state "1500 -" "before"

# --- no --mtu: the interface's MTU is left alone, promiscuity only while psb runs
start_psb plain
expect_state "1500 promisc" "running without --mtu"
stop_psb TERM 0
expect_state "1500 -" "after SIGTERM"

# --- --mtu 1400: changed while it runs, put back at a normal exit (--duration)
"$PSB" --port "af_packet:$IF" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-d" \
	--mtu 1400 --duration 4 >"$DIR/d.log" 2>&1 &
PID=$!
for _ in $(seq 300); do [ "$(state)" = "1400 promisc" ] && break; sleep 0.1; done
expect_state "1400 promisc" "running with --mtu 1400"
for _ in $(seq 300); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
wait "$PID" || fail "psb --duration exited with $?"
PID=
expect_state "1500 -" "after a normal exit"

# --- an error exit after the port started (no control socket can be made there): put back too
"$PSB" --port "af_packet:$IF" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-die" \
	--mtu 1400 --ctl "$DIR/no-such-dir/psb.ctl" >"$DIR/die.log" 2>&1
rc=$?
[ $rc -eq 2 ] || fail "psb with an unusable --ctl exited $rc, expected 2"
grep -q "no-such-dir" "$DIR/die.log" || fail "psb did not say why it stopped: $(tail -2 "$DIR/die.log")"
expect_state "1500 -" "after an error exit once the port ran"

# --- what the user set stays: promiscuity on, MTU 1450
ip link set "$IF" mtu 1450 promisc on
start_psb user --mtu 1400
expect_state "1400 promisc" "running over the user's settings"
stop_psb TERM 0
expect_state "1450 promisc" "after exit, the user's settings"
ip link set "$IF" mtu 1500 promisc off

# --- a crash: the handler puts it back before the process dies
start_psb segv --mtu 1400
expect_state "1400 promisc" "running, before SIGSEGV"
stop_psb SEGV 139
expect_state "1500 -" "after SIGSEGV"

# --- SIGKILL: nothing runs in psb; the next psb to start undoes it and says so
start_psb kill --mtu 1400
stop_psb KILL 137
expect_state "1400 promisc" "after SIGKILL (left as it was)"
ls /var/run/psb/ifstate/*-"$IF" >/dev/null 2>&1 || fail "no record of $IF left by the killed psb"
timeout -k 5 60 "$PSB" --port null --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-next" \
	--duration 0.5 >"$DIR/next.log" 2>&1 || fail "the next psb exited with $?"
grep -q "interface $IF: restored MTU 1500 and promiscuity off as psb pid [0-9]* found it" \
	"$DIR/next.log" || fail "the next psb did not say what it restored"
expect_state "1500 -" "after the next psb started"
ls /var/run/psb/ifstate/*-"$IF" >/dev/null 2>&1 && fail "record of $IF left behind"

# --- SIGKILL, then psb again on the same interface (a worker restarted after a crash): it
# undoes the dead one's change, records the original as its own and gives that back
start_psb killed --mtu 1400
stop_psb KILL 137
start_psb restarted
expect_state "1500 promisc" "the next psb on $IF, running"
stop_psb TERM 0
expect_state "1500 -" "after the next psb on $IF"
ls /var/run/psb/ifstate/*-"$IF" >/dev/null 2>&1 && fail "record of $IF left behind"
echo "ifstate: MTU and promiscuity given back after exit, SIGTERM, SIGSEGV and SIGKILL"
