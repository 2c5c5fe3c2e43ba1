#!/bin/bash
# Clients on the server's host over shared memory (psb --shm-clients): psb on af_packet over a
# veth, its slots on a socket in a scratch PSB_SHM_DIR; from the network namespace,
#  - psb-kbench (lib/client) forced to shm, auto (which picks shm) and forced to udp, 1 MB
#    values, the store's sums checked exact after each;
#  - the Python package and a ps-lite program (the header, through psb's scheduler) over shm;
#  - every slot taken: auto falls back to UDP and says so, forced shm fails naming why;
#  - a client SIGKILLed 20 times in the middle of 1 MB push-pulls while another works on:
#    psb serves on, the other finishes, a last client after them too.
#
# usage: test_shm.sh PATH/psb PATH/psb-kbench PYTHONPATH PSLITE_KV_SUMS
#
# Needs root (namespace, veth); exits 77 (skip) without. Everything it makes is named after
# its PID and removed on exit, whatever the outcome.
set -u

source "$(dirname "$0")/netns.sh"

psb=${1:?usage: test_shm.sh PATH/psb PATH/psb-kbench PYTHONPATH PSLITE_KV_SUMS}
kbench=${2:?}
pydir=${3:?}
kv_sums=${4:?}

ns=psbm-$$
vr=psbmr$$
vn=psbmn$$
prefix=psbm$$
server_ip=198.18.8.1
client_ip=198.18.8.2
len=1048576
keys=4
iters=5

psb_pid=
tmp=
bg=()

log() {
	echo "test_shm: $*"
}

fail() {
	echo "test_shm: FAIL: $*" >&2
	[ -n "$tmp" ] && [ -f "$tmp/psb.log" ] && tail -30 "$tmp/psb.log" >&2
	exit 1
}

skip() {
	echo "test_shm: SKIP: $*"
	exit 77
}

cleanup() {
	local rc=$? p
	for p in "${bg[@]}"; do pid_stop "$p"; done
	(exit $rc)
	netns_cleanup
}
trap cleanup EXIT
trap 'exit 1' INT TERM

[ -x "$psb" ] || fail "psb not found at '$psb'"
[ -x "$kbench" ] || fail "psb-kbench not found at '$kbench'"
netns_add "$ns"
tmp=$(mktemp -d /tmp/psb-shm.XXXXXX) || fail "mktemp failed"
export PSB_SHM_DIR=$tmp/shm
sock=$PSB_SHM_DIR/$server_ip-9430.sock
netns_up "$ns" "$vr" "$vn" "$client_ip/24" || fail "cannot set up the namespace"

# in the namespace, with a bound: kb ARGS... (psb-kbench at psb, async, rank 0)
kb() {
	timeout -k 5 60 ip netns exec "$ns" env PSB_SHM_DIR="$PSB_SHM_DIR" "$@"
}

# start_psb SLOTS NUM_WORKERS: a server hosting its scheduler, up once its control socket is.
# Clients that go straight to it never register: its own wait for the job is not bounded
# (--connect-timeout 0), the test's steps are.
start_psb() {
	"$psb" --role server --port "af_packet:$vr" --ip "$server_ip" --scheduler "$server_ip" \
		--num-workers "$2" --num-servers 1 --async --shm-clients "$1" -l 0 --keep-serving \
		--connect-timeout 0 \
		--file-prefix "$prefix" >"$tmp/psb.log" 2>&1 &
	psb_pid=$!
	for _ in $(seq 600); do
		[ -S "/var/run/dpdk/$prefix/psb.ctl" ] && break
		kill -0 "$psb_pid" 2>/dev/null || fail "psb exited during start-up"
		sleep 0.1
	done
	[ -S "/var/run/dpdk/$prefix/psb.ctl" ] || fail "psb did not start within 60 s"
	[ -S "$sock" ] || fail "psb made no socket at $sock"
	grep -q "shared-memory clients: $1 slots at $sock" "$tmp/psb.log" ||
		fail "psb did not say its slots and socket"
}

stop_psb() {
	kill -TERM "$psb_pid"
	for _ in $(seq 150); do kill -0 "$psb_pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$psb_pid" 2>/dev/null && fail "psb did not exit within 15 s of SIGTERM"
	wait "$psb_pid" || fail "psb exited with $?"
	psb_pid=
	[ -e "$sock" ] && fail "psb left its socket $sock behind"
	return 0
}

# phase TRANSPORT WANT_HEADER: iters x PUSH_THEN_PULL of 1 MB values, then the exact sums
done_iters=0
phase() {
	PSB_TRANSPORT=$1 kb "$kbench" --server "$server_ip" --async --keys $keys $len $iters 0 \
		>"$tmp/$1.log" 2>&1 || { cat "$tmp/$1.log" >&2; fail "psb-kbench, transport $1"; }
	grep -q "iterations, async, $2," "$tmp/$1.log" ||
		{ cat "$tmp/$1.log" >&2; fail "transport $1: not over $2"; }
	done_iters=$((done_iters + iters))
	kb "$kbench" --server "$server_ip" --async --keys $keys --check $done_iters \
		--check-version $done_iters $len >"$tmp/check.log" 2>&1 ||
		{ cat "$tmp/check.log" >&2; fail "transport $1: the sums psb holds are not exact"; }
	log "transport $1: $2, $(grep -o 'goodput [0-9.]* Gbps' "$tmp/$1.log" | tail -1), sums exact"
}

log "psb with 2 shared-memory slots, $sock"
start_psb 2 1
phase shm "shared memory"
phase auto "shared memory"
phase udp "kernel UDP"

log "python over shared memory"
kb env PYTHONPATH="$pydir" PSB_TRANSPORT=shm python3 - "$server_ip" <<'EOF' ||
import sys
from array import array
import psb

with psb.KVWorker(servers=sys.argv[1], transport="shm") as w:
    assert w.transports == ["shm"], w.transports
    keys = [1 << 40, (1 << 40) + 1]
    n = 1 << 18                       # 1 MB a key
    vals = array("f", range(2 * n))
    for r in range(3):
        w.wait(w.push(keys, vals))
    out = array("f", bytes(8 * n))
    w.wait(w.pushpull(keys, vals, out))
    assert all(o == 4 * v for o, v in zip(out, vals)), "sums wrong"
print("python: shm, 3 pushes and a pushpull of 2 x 1 MB, sums exact")
EOF
	fail "the Python package over shared memory"

stop_psb

log "a ps-lite program (the header) over shared memory, through psb's scheduler"
start_psb 2 1
kb env DMLC_ROLE=worker DMLC_PS_ROOT_URI="$server_ip" DMLC_PS_ROOT_PORT=9431 \
	DMLC_NUM_WORKER=1 DMLC_NUM_SERVER=1 PSB_TRANSPORT=shm "$kv_sums" >"$tmp/pslite.log" 2>&1 ||
	{ cat "$tmp/pslite.log" >&2; fail "ps-lite's kv_sums over shared memory"; }
grep -q "error 0, 0$" "$tmp/pslite.log" || { cat "$tmp/pslite.log" >&2; fail "kv_sums: sums wrong"; }
log "ps-lite: sums exact"
stop_psb

log "every slot taken: auto falls back to UDP, shm fails saying why"
start_psb 1 2
PSB_TRANSPORT=shm kb "$kbench" --server "$server_ip" --async --num-workers 2 --keys $keys \
	--duration 8 $len 1000000 1 >"$tmp/holder.log" 2>&1 &
bg+=($!)
for _ in $(seq 100); do grep -q "shared memory," "$tmp/holder.log" && break; sleep 0.1; done
grep -q "shared memory," "$tmp/holder.log" || fail "the first client did not take the slot"
PSB_TRANSPORT=auto kb "$kbench" --server "$server_ip" --async --rank 1 --num-workers 2 \
	--keys $keys $len 2 1 >"$tmp/auto2.log" 2>&1 || { cat "$tmp/auto2.log" >&2; fail "auto, slots busy"; }
grep -q "kernel UDP," "$tmp/auto2.log" || fail "auto with every slot taken did not use UDP"
grep -q "shared memory not used, UDP instead: .*every slot is taken" "$tmp/auto2.log" ||
	{ cat "$tmp/auto2.log" >&2; fail "auto did not say why it fell back"; }
PSB_TRANSPORT=shm kb "$kbench" --server "$server_ip" --async --rank 1 --num-workers 2 \
	--keys $keys $len 2 1 >"$tmp/shm2.log" 2>&1 && fail "forced shm with every slot taken did not fail"
grep -q "every slot is taken" "$tmp/shm2.log" || { cat "$tmp/shm2.log" >&2; fail "forced shm: no reason"; }
log "slots busy: auto over UDP, shm refused ($(grep -o 'every slot is taken.*' "$tmp/shm2.log" | head -1))"
wait "${bg[0]}" || { cat "$tmp/holder.log" >&2; fail "the slot's holder failed"; }
bg=()
stop_psb

log "a client killed 20 times mid-transfer while another works on"
start_psb 2 2
PSB_TRANSPORT=shm kb "$kbench" --server "$server_ip" --async --num-workers 2 --keys $keys \
	--duration 20 $len 1000000 1 >"$tmp/steady.log" 2>&1 &
steady=$!
bg+=($steady)
for i in $(seq 20); do
	# psb may not have seen the last victim's link go yet (its slot still taken): again,
	# for 10 s at most
	for _ in $(seq 50); do
		PSB_TRANSPORT=shm ip netns exec "$ns" env PSB_SHM_DIR="$PSB_SHM_DIR" "$kbench" \
			--server "$server_ip" --async --rank 1 --num-workers 2 --keys $keys \
			--log-every 0 $len 1000000 1 >"$tmp/victim.log" 2>&1 &
		victim=$!
		# in the middle of its transfers: its link made (DPDK 22.11's interrupt thread
		# can panic when a peer dies inside the handshake: docs/RUNNING.md)
		for _ in $(seq 100); do
			grep -q "shared memory," "$tmp/victim.log" && break
			kill -0 "$victim" 2>/dev/null || break
			sleep 0.1
		done
		grep -q "shared memory," "$tmp/victim.log" && break
		wait "$victim" 2>/dev/null
		grep -q "every slot is taken" "$tmp/victim.log" || break
		sleep 0.2
	done
	grep -q "shared memory," "$tmp/victim.log" ||
		{ cat "$tmp/victim.log" >&2
		  kill -0 "$victim" 2>/dev/null &&
			echo "victim still runs, in $(cat /proc/$victim/wchan 2>/dev/null)" >&2
		  fail "victim $i made no link"; }
	sleep 0.$((1 + RANDOM % 4))
	kill -KILL "$victim" 2>/dev/null
	wait "$victim" 2>/dev/null
	kill -0 "$psb_pid" 2>/dev/null || fail "psb died after kill $i"
done
wait "$steady" || { cat "$tmp/steady.log" >&2; fail "the other client failed while clients were killed"; }
bg=()
grep -q "retries [0-9]*, failed 0" "$tmp/steady.log" ||
	{ cat "$tmp/steady.log" >&2; fail "the other client lost requests"; }
log "the other client: $(grep -o 'goodput [0-9.]* Gbps' "$tmp/steady.log" | tail -1), none failed"
PSB_TRANSPORT=shm kb "$kbench" --server "$server_ip" --async --num-workers 2 --keys $keys \
	$len 3 1 >"$tmp/after.log" 2>&1 || { cat "$tmp/after.log" >&2; fail "psb does not serve after the kills"; }
stop_psb
grep -E "faulted|memif: " "$tmp/psb.log" | sed 's/^/test_shm: psb: /' | sort | uniq -c
log "PASS"
