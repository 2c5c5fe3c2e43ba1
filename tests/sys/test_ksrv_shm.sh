#!/bin/bash
# psb-ksrv's shared-memory slots (--shm-clients), on 127.0.0.1 with a scratch PSB_SHM_DIR:
#  - the socket named after the port psb-ksrv bound (port 0), said at start, gone at exit
#    (SIGTERM and SIGINT) with its lock file;
#  - two psb-kbench forced to shm, then two on auto (which picks shm): sync rounds, 1 MB
#    values, every pulled sum checked exact (--verify);
#  - the Python package: its session takes shm by itself (KVWorker.transports), sums exact;
#  - the lock held by another server: no slots, said, clients on UDP; a psb-ksrv SIGKILLed
#    leaves its socket, the next on that port replaces it;
#  - a client SIGKILLed 10 times in the middle of 1 MB push-pulls while another works on:
#    psb-ksrv serves on, the other finishes without a failed request, every slot is freed.
#
# usage: test_ksrv_shm.sh PATH/psb-ksrv PATH/psb-kbench PYTHONPATH
#
# Needs no root. Every process it starts is ended and every file it makes removed on exit,
# whatever the outcome; each command has a time bound.
set -u

ksrv=${1:?usage: test_ksrv_shm.sh PATH/psb-ksrv PATH/psb-kbench PYTHONPATH}
kbench=${2:?}
pydir=${3:?}

ip=127.0.0.1
len=1048576
keys=4
iters=5

srv_pid=
port=
sock=
tmp=
bg=()

log() {
	echo "test_ksrv_shm: $*"
}

fail() {
	echo "test_ksrv_shm: FAIL: $*" >&2
	[ -n "$tmp" ] && [ -f "$tmp/ksrv.log" ] && tail -20 "$tmp/ksrv.log" >&2
	exit 1
}

# pid_stop PID: SIGTERM, SIGKILL after 5 s; reaped.
pid_stop() {
	local i
	[ -n "$1" ] && kill -0 "$1" 2>/dev/null || return 0
	kill -TERM "$1" 2>/dev/null
	for ((i = 0; i < 50; i++)); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

cleanup() {
	local rc=$? p
	trap - EXIT INT TERM
	for p in "${bg[@]}"; do pid_stop "$p"; done
	pid_stop "$srv_pid"
	[ -n "$tmp" ] && rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ -x "$ksrv" ] || fail "psb-ksrv not found at '$ksrv'"
[ -x "$kbench" ] || fail "psb-kbench not found at '$kbench'"
tmp=$(mktemp -d /tmp/psb-ksrv-shm.XXXXXX) || fail "mktemp failed"
export PSB_SHM_DIR=$tmp/shm

# start_ksrv PORT ARGS...: psb-ksrv on ip:PORT (0: any), up once its ready file is
start_ksrv() {
	local p=$1
	shift
	rm -f "$tmp/ready" "$tmp/stats.json"
	# bounded by its own --duration: a signal to it must reach it, not a wrapper
	"$ksrv" --ip "$ip" --port "$p" --ready-file "$tmp/ready" --duration 120 \
		--stats-file "$tmp/stats.json" "$@" >"$tmp/ksrv.log" 2>&1 &
	srv_pid=$!
	for _ in $(seq 100); do
		[ -s "$tmp/ready" ] && break
		kill -0 "$srv_pid" 2>/dev/null || fail "psb-ksrv exited during start-up"
		sleep 0.05
	done
	[ -s "$tmp/ready" ] || fail "psb-ksrv did not start within 5 s"
	port=$(cut -d' ' -f1 "$tmp/ready")
	sock=$PSB_SHM_DIR/$ip-$port.sock
}

# stop_ksrv [SIGNAL]: it exits 0 and takes its socket and lock file along
stop_ksrv() {
	kill -"${1:-TERM}" "$srv_pid"
	for _ in $(seq 100); do kill -0 "$srv_pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$srv_pid" 2>/dev/null && fail "psb-ksrv did not exit within 10 s of SIG${1:-TERM}"
	wait "$srv_pid" || fail "psb-ksrv exited with $?"
	srv_pid=
	[ -e "$sock" ] && fail "psb-ksrv left its socket $sock behind"
	[ -e "$sock.lock" ] && fail "psb-ksrv left its lock file $sock.lock behind"
	return 0
}

# shm_stat KEY: the shm counter KEY of the last --stats-file
shm_stat() {
	python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["shm"][sys.argv[2]])' \
		"$tmp/stats.json" "$1"
}

kb() {
	timeout -k 5 60 "$kbench" --server "$ip:$port" "$@"
}

# sync_pair TRANSPORT: two workers, sync rounds of 1 MB push-pulls, every sum checked
sync_pair() {
	local r rc=0
	start_ksrv 0 --num-workers 2 --sync
	[ -S "$sock" ] || fail "no socket at $sock (the port bound, $port)"
	[ -e "$sock.lock" ] || fail "no lock file at $sock.lock"
	grep -q "shared-memory clients: 4 slots at $sock" "$tmp/ksrv.log" ||
		fail "psb-ksrv did not say its slots and socket"
	for r in 0 1; do
		PSB_TRANSPORT=$1 kb --rank $r --num-workers 2 --sync --verify --keys $keys \
			--log-every 0 $len $iters 1 >"$tmp/$1.$r.log" 2>&1 &
		bg+=($!)
	done
	for r in 0 1; do wait "${bg[$r]}" || rc=1; done
	bg=()
	for r in 0 1; do
		[ $rc -eq 0 ] && grep -q "verify errors 0" "$tmp/$1.$r.log" &&
			grep -q "retries [0-9]*, failed 0" "$tmp/$1.$r.log" ||
			{ cat "$tmp/$1.$r.log" >&2; fail "transport $1: worker $r failed"; }
		grep -q "shared memory to 1 of 1 server(s)" "$tmp/$1.$r.log" ||
			{ cat "$tmp/$1.$r.log" >&2; fail "transport $1: worker $r not over shm"; }
	done
	stop_ksrv TERM
	[ "$(shm_stat links)" = 2 ] || fail "transport $1: $(shm_stat links) links, not 2"
	[ "$(shm_stat bad_desc)$(shm_stat bad_index)$(shm_stat bad_frame)" = 000 ] ||
		fail "transport $1: psb-ksrv counted bad frames: $(cat "$tmp/stats.json")"
	log "transport $1: 2 workers over shm, $(grep -o 'goodput [0-9.]* Gbps' "$tmp/$1.0.log"),"\
		"$(shm_stat rx_frames) frames in, sums exact"
}

sync_pair shm
sync_pair auto

log "python: a session takes the slots by itself"
start_ksrv 0 --num-workers 1 --async
timeout -k 5 60 env PYTHONPATH="$pydir" python3 - "$ip:$port" <<'EOF' ||
import sys
from array import array
import psb

with psb.KVWorker(servers=sys.argv[1]) as w:
    assert w.transports == ["shm"], w.transports
    keys = [1 << 40, (1 << 40) + 1]
    n = 1 << 18                       # 1 MB a key
    vals = array("f", range(2 * n))
    for r in range(3):
        w.wait(w.push(keys, vals))
    out = array("f", bytes(8 * n))
    w.wait(w.pushpull(keys, vals, out))
    assert all(o == 4 * v for o, v in zip(out, vals)), "sums wrong"
    print("test_ksrv_shm: python: transports", w.transports, "3 pushes and a pushpull of"
          " 2 x 1 MB, sums exact")
EOF
	fail "the Python package over shared memory"
stop_ksrv INT
[ "$(shm_stat links)" = 1 ] || fail "python: $(shm_stat links) links, not 1"

log "the lock held by another server: no slots, clients on UDP"
free_port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$PSB_SHM_DIR"
lock=$PSB_SHM_DIR/$ip-$free_port.sock.lock
# held by this shell: no process to end
exec {lockfd}>"$lock"
flock -n "$lockfd" || fail "cannot take $lock"
start_ksrv "$free_port" --num-workers 1 --async
grep -q "shared-memory clients: none: another server serves $sock; clients on this host use UDP" \
	"$tmp/ksrv.log" || fail "psb-ksrv did not say the slots were another's"
[ -e "$sock" ] && fail "psb-ksrv made a socket it holds no lock for"
PSB_TRANSPORT=auto kb --async --keys $keys --log-every 0 $len 2 1 >"$tmp/udp.log" 2>&1 ||
	{ cat "$tmp/udp.log" >&2; fail "auto with the slots another's"; }
grep -q "shared memory to" "$tmp/udp.log" && fail "auto used shared memory without slots"
exec {lockfd}>&-
kill -TERM "$srv_pid"
wait "$srv_pid" || fail "psb-ksrv without slots exited with $?"
srv_pid=
[ -e "$lock" ] || fail "psb-ksrv removed a lock file that was not its own"
rm -f "$lock"

log "psb-ksrv SIGKILLed: the next on its port replaces the socket left"
start_ksrv "$free_port" --num-workers 1 --async
[ -S "$sock" ] || fail "no socket at $sock"
kill -KILL "$srv_pid"
wait "$srv_pid" 2>/dev/null
srv_pid=
[ -S "$sock" ] || fail "the killed psb-ksrv's socket is gone: nothing to test"
start_ksrv "$free_port" --num-workers 1 --async
grep -q "shared-memory clients: 4 slots at $sock" "$tmp/ksrv.log" ||
	fail "psb-ksrv did not take the socket a dead one left"
PSB_TRANSPORT=shm kb --async --keys $keys --log-every 0 $len 2 1 >"$tmp/after-kill.log" 2>&1 ||
	{ cat "$tmp/after-kill.log" >&2; fail "shm after a killed psb-ksrv"; }
stop_ksrv TERM

log "a client killed 10 times mid-transfer while another works on"
start_ksrv 0 --num-workers 2 --async
PSB_TRANSPORT=shm kb --async --num-workers 2 --keys $keys --duration 10 --log-every 0 \
	$len 1000000 1 >"$tmp/steady.log" 2>&1 &
steady=$!
bg+=($steady)
for i in $(seq 10); do
	# bounded by --duration: SIGKILL must reach psb-kbench itself
	PSB_TRANSPORT=shm "$kbench" --server "$ip:$port" --async --rank 1 --duration 30 \
		--num-workers 2 --keys $keys --log-every 0 $len 1000000 1 >"$tmp/victim.log" 2>&1 &
	victim=$!
	# in the middle of its transfers: its link made and requests on their way
	for _ in $(seq 100); do
		grep -q "shared memory," "$tmp/victim.log" && break
		kill -0 "$victim" 2>/dev/null || break
		sleep 0.05
	done
	grep -q "shared memory," "$tmp/victim.log" ||
		{ cat "$tmp/victim.log" >&2; fail "victim $i made no link"; }
	sleep 0.$((1 + RANDOM % 4))
	kill -KILL "$victim" 2>/dev/null
	wait "$victim" 2>/dev/null
	kill -0 "$srv_pid" 2>/dev/null || fail "psb-ksrv died after kill $i"
done
wait "$steady" || { cat "$tmp/steady.log" >&2; fail "the other client failed while clients were killed"; }
bg=()
grep -q "retries [0-9]*, failed 0" "$tmp/steady.log" ||
	{ cat "$tmp/steady.log" >&2; fail "the other client lost requests"; }
grep -q "shared memory to 1 of 1 server(s)" "$tmp/steady.log" ||
	{ cat "$tmp/steady.log" >&2; fail "the other client was not over shm"; }
log "the other client: $(grep -o 'goodput [0-9.]* Gbps' "$tmp/steady.log" | tail -1), none failed"
PSB_TRANSPORT=shm kb --async --num-workers 2 --keys $keys --log-every 0 $len 3 1 \
	>"$tmp/last.log" 2>&1 || { cat "$tmp/last.log" >&2; fail "psb-ksrv does not serve after the kills"; }
stop_ksrv TERM
[ "$(shm_stat links)" = 12 ] || fail "$(shm_stat links) links, not 12"
[ "$(shm_stat disconnects)" = 12 ] || fail "$(shm_stat disconnects) links ended, not 12"
[ "$(shm_stat slots_used)" = 0 ] || fail "$(shm_stat slots_used) slots still held"
log "psb-ksrv: $(shm_stat links) links, $(shm_stat disconnects) ended, slots at once $(shm_stat slots_max)," \
	"answers dropped on full rings $(shm_stat tx_full)"
log "PASS"
