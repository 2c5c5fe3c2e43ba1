#!/bin/bash
# psb fails fast and says why: every wait is bounded, and what did not answer is named.
# - a worker whose server never answers ARP (af_packet on a veth whose far end is silent)
#   exits 1 within --connect-timeout, names the server, writes its results as failed, for a
#   command line (--results) and a document (its results directory);
# - a worker whose scheduler never answers ARP, or never acks REGISTER, likewise; a server
#   whose scheduler never acks REGISTER exits 1 naming it;
# - a worker whose memif server is not there fails within --connect-timeout, results written;
# - a server SIGKILLed mid-run (memif, af_packet): the worker exits 1 after --max-retries,
#   naming the server, partial results written;
# - the memif socket the killed server left is removed by the next psb, which says so, and
#   a run through it works; a socket file psb did not make is left alone;
# - af_packet whose fanout group (DPDK derives it from the process id and the interface)
#   another program in the namespace holds on another interface: psb says so and what to do;
# - a missing af_packet interface is "no such device", naming it; EAL failures (a file prefix
#   in use, an lcore that does not exist) quote the EAL's reason.
#
# usage: test_failfast.sh PATH/psb. Needs root (a veth pair named after the PID); 77 without.
set -uo pipefail
PSB=$1
DIR=$(mktemp -d /tmp/psbt-failfast-XXXXXX)
PFX=psbt-ff$$
VA=psbf$$a
VB=psbf$$b
NS=psbf$$ns	# the far end's namespace, for the af_packet run (below)
SOCK=$DIR/m.sock
PIDS=()
SRV_IN=()	# the start_server command's prefix
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	ip link del "$VA" 2>/dev/null
	ip netns del "$NS" 2>/dev/null
	rm -f /var/run/psb/ifstate/*-"$VA" /var/run/psb/ifstate/*-"$VB"
	rm -rf "$DIR" /var/run/dpdk/"$PFX"-*
}
trap cleanup EXIT
trap 'exit 143' TERM INT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
[ "$(id -u)" = 0 ] && command -v ip >/dev/null || { echo "SKIP: needs root and iproute2"; exit 77; }

ip link add "$VA" type veth peer name "$VB" || fail "cannot create veth $VA"
for i in "$VA" "$VB"; do
	sysctl -qw "net.ipv6.conf.$i.disable_ipv6=1" 2>/dev/null
	ip link set "$i" up || fail "cannot bring $i up"
done

# expect TAG RC BOUND WORDS... -- CMD...: CMD exits RC within BOUND seconds and its output
# holds every WORD (fixed strings). The output is left in $DIR/TAG.log.
expect() {
	local tag=$1 want=$2 bound=$3 words=() w t0 t1 rc
	shift 3
	while [ "$1" != -- ]; do words+=("$1"); shift; done
	shift
	t0=$(date +%s%N)
	timeout -k 5 $((bound + 30)) "$@" >"$DIR/$tag.log" 2>&1 </dev/null
	rc=$?
	t1=$(date +%s%N)
	[ $rc -eq "$want" ] || fail "$tag: exited $rc, expected $want: $(grep -v '^EAL' "$DIR/$tag.log" | tail -4)"
	[ $(((t1 - t0) / 1000000000)) -le "$bound" ] ||
		fail "$tag: took $(((t1 - t0) / 1000000)) ms, more than $bound s"
	for w in "${words[@]}"; do
		grep -qF -- "$w" "$DIR/$tag.log" || fail "$tag: no '$w' in: $(grep -v '^EAL' "$DIR/$tag.log" | tail -4)"
	done
	ok "$tag ($(((t1 - t0) / 1000000)) ms): $(grep '^psb: .*\(FAILED\|did not\|no memif\|no such\|removed\|EAL init\)' "$DIR/$tag.log" | tail -1)"
}

# results FILE PYTHON-CONDITION: the JSON in FILE (r) satisfies the condition.
results() {
	python3 - "$1" "$2" <<'EOF' || fail "results $1: $2 does not hold: $(tr -d "\n " <"$1" 2>&1 | head -c 400)"
import json, sys
r = json.load(open(sys.argv[1]))
assert eval("(" + sys.argv[2] + ")"), r
EOF
}

WORKER=(--role worker --no-huge --file-prefix)

# --- ARP: the far end of the veth answers nothing
expect arp 1 15 "server 198.18.0.99 (port 9430) did not answer ARP for 2." "FAILED" -- \
	"$PSB" "${WORKER[@]}" "$PFX-arp" --port "af_packet:$VA" --ip 198.18.0.2 -l 0 \
	--server 198.18.0.99 --connect-timeout 2 --len 4096 --results "$DIR/arp.json"
results "$DIR/arp.json" 'r["state"] == "failed" and "server 198.18.0.99" in r["error"] and
	r["requests"] == 0 and r["len"] == 4096'

# the same as a document: its results directory says failed, and why
cat >"$DIR/arp-doc.json" <<EOF
{"name": "unreachable", "kind": "pushpull",
 "node": {"role": "worker", "ports": ["af_packet:$VA"], "ip": "198.18.0.2", "server": "198.18.0.99",
	  "lcores": "0", "huge": "no", "file_prefix": "$PFX-doc", "connect_timeout": "2s"},
 "pushpull": {"len": "4KiB", "repeat": 10}, "output": {"dir": "res"}}
EOF
expect arp-doc 1 15 "server 198.18.0.99 (port 9430) did not answer ARP" -- \
	"$PSB" --config "$DIR/arp-doc.json" --output-dir "$DIR"
results "$DIR/res/unreachable/result.json" 'r["state"] == "failed" and
	"server 198.18.0.99" in r["error"] and r["rows"][0]["requests"] == 0'

# --- the scheduler: no ARP answer
expect sched-arp 1 15 "scheduler 198.18.0.98 did not answer ARP for 2." -- \
	"$PSB" "${WORKER[@]}" "$PFX-sarp" --port "af_packet:$VA" --ip 198.18.0.2 -l 0 \
	--scheduler 198.18.0.98 --connect-timeout 2 --results "$DIR/sarp.json"
results "$DIR/sarp.json" 'r["state"] == "failed" and "scheduler 198.18.0.98" in r["error"]'

# start_server TAG PORT ARGS...: a psb server on PORT, until its port runs (SPID)
start_server() {
	local tag=$1 port=$2
	shift 2
	"${SRV_IN[@]}" "$PSB" --port "$port" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-$tag" \
		"$@" >"$DIR/$tag.log" 2>&1 &
	SPID=$!
	PIDS+=("$SPID")
	for _ in $(seq 300); do
		[ -S "/var/run/dpdk/$PFX-$tag/psb.ctl" ] && return 0
		kill -0 "$SPID" 2>/dev/null || fail "$tag: server exited early: $(tail -3 "$DIR/$tag.log")"
		sleep 0.1
	done
	fail "$tag: server did not come up within 30 s"
}

# --- the scheduler answers ARP but never REGISTER: it waits for a second worker
start_server reg "memif:server:$SOCK" --scheduler 198.18.0.1 --num-workers 2 --connect-timeout 6
expect sched-reg 1 15 "scheduler 198.18.0.1:9431 did not answer REGISTER" -- \
	"$PSB" "${WORKER[@]}" "$PFX-wreg" --port "memif:client:$SOCK" --ip 198.18.0.2 -l 1 \
	--scheduler 198.18.0.1 --num-workers 2 --connect-timeout 2 --results "$DIR/reg.json"
results "$DIR/reg.json" 'r["state"] == "failed" and "did not answer REGISTER" in r["error"]'
# ... and the server, registered with its own scheduler, gives up too
for _ in $(seq 150); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
wait "$SPID"
rc=$?
[ $rc -eq 1 ] || fail "server waiting on REGISTER exited $rc, expected 1"
grep -qF "server: scheduler 198.18.0.1:9431 did not answer REGISTER" "$DIR/reg.log" ||
	fail "server did not say what it waited for: $(tail -3 "$DIR/reg.log")"
ok "server gave up on REGISTER: $(grep 'did not answer' "$DIR/reg.log")"

# --- no memif server at all: the wait for it is bounded too, and the results say so
rm -f "$SOCK"
expect no-memif 1 15 "no memif server at $SOCK after 2." -- \
	"$PSB" "${WORKER[@]}" "$PFX-nomemif" --port "memif:client:$SOCK" --ip 198.18.0.2 \
	-l 1 --server 198.18.0.1 --connect-timeout 2 --results "$DIR/nomemif.json"
results "$DIR/nomemif.json" 'r["state"] == "failed" and "no memif server" in r["error"]'

# kill_mid_run TAG PORT: a worker on PORT runs against server SPID until it is SIGKILLed; the
# worker ends (20 ms doubling, 4 retries: 0.62 s), with status 1, naming the server, partial
# results written.
kill_mid_run() {
	local tag=$1 port=$2 wpid t0 rc
	"$PSB" "${WORKER[@]}" "$PFX-w$tag" --port "$port" --ip 198.18.0.2 -l 1 --server 198.18.0.1 \
		--len 65536 --repeat 1000000 --timeout-us 20000 --max-retries 4 \
		--results "$DIR/$tag.json" >"$DIR/w$tag.log" 2>&1 &
	wpid=$!
	PIDS+=("$wpid")
	for _ in $(seq 300); do grep -q "goodput" "$DIR/w$tag.log" && break; sleep 0.1; done
	grep -q "goodput" "$DIR/w$tag.log" || fail "$tag: the worker did not run: $(tail -3 "$DIR/w$tag.log")"
	kill -KILL "$SPID"
	wait "$SPID" 2>/dev/null
	t0=$(date +%s%N)
	for _ in $(seq 200); do kill -0 "$wpid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$wpid" 2>/dev/null && fail "$tag: the worker still runs 20 s after its server was killed"
	wait "$wpid"
	rc=$?
	[ $rc -eq 1 ] || fail "$tag: worker exited $rc, expected 1"
	grep -qF "(198.18.0.1:9430) did not answer" "$DIR/w$tag.log" ||
		fail "$tag: the worker did not name its server: $(grep -v '^EAL' "$DIR/w$tag.log" | tail -3)"
	results "$DIR/$tag.json" 'r["state"] == "failed" and "(198.18.0.1:9430) did not answer" in r["error"] and
		r["iterations"] > 0 and r["failed"] > 0'
	ok "$tag: the worker ended $((($(date +%s%N) - t0) / 1000000)) ms after its server was killed"
}

# --- the server is SIGKILLed mid-run, over memif (the worker is the client)
start_server kill "memif:server:$SOCK"
kill_mid_run kill "memif:client:$SOCK"

# --- the socket file the killed server left: the next server removes it, says so; a run works
[ -S "$SOCK" ] || fail "the killed server left no socket file (nothing to test)"
KILLED=$SPID
start_server stale "memif:server:$SOCK" --duration 60
grep -qF "removed the stale memif socket $SOCK, left by psb pid $KILLED" "$DIR/stale.log" ||
	fail "stale: the server did not say it removed the socket: $(tail -3 "$DIR/stale.log")"
expect stale-run 0 60 "iterations" -- \
	"$PSB" "${WORKER[@]}" "$PFX-wstale" --port "memif:client:$SOCK" --ip 198.18.0.2 -l 1 \
	--server 198.18.0.1 --len 4096 --repeat 20 --verify --results "$DIR/stale.json"
results "$DIR/stale.json" 'r["state"] == "done" and r["iterations"] == 20 and r["verify_errors"] == 0'
kill -TERM "$SPID"
wait "$SPID" || fail "stale: server exited with $?"
# a socket file nobody recorded is someone else's: refused, left in place
python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$SOCK"
expect foreign-sock 2 15 "is a socket file psb did not leave behind" -- \
	"$PSB" --port "memif:server:$SOCK" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-fs" \
	--duration 1
[ -S "$SOCK" ] || fail "foreign-sock: the foreign socket file was removed"
rm -f "$SOCK"

# --- af_packet: another AF_PACKET program in the namespace holds the fanout group DPDK's
# driver derives from psb's process id and its interface's index: psb says so. The holder
# takes it on VA once the command's process id is known; that process then becomes psb.
expect fanout 2 15 "PACKET_FANOUT" "another AF_PACKET program in this network namespace" \
	"Start psb again" -- bash -c 'echo $$ > "$1"; while [ ! -f "$2" ]; do sleep 0.05; done
		shift 2; exec "$@"' fanout "$DIR/fanout.pid" "$DIR/fanout.ready" \
	"$PSB" --port "af_packet:$VB" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-fo" \
	--duration 1 &
FPID=$!
python3 - "$VA" "$VB" "$DIR/fanout.pid" "$DIR/fanout.ready" <<'EOF' &
import os, socket, struct, sys, time
va, vb, pidfile, ready = sys.argv[1:]
for _ in range(200):
    if os.path.exists(pidfile) and open(pidfile).read().strip():
        break
    time.sleep(0.05)
group = (int(open(pidfile).read()) ^ socket.if_nametoindex(vb)) & 0xffff
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
s.bind((va, 0))
# PACKET_FANOUT (18) at SOL_PACKET (263): hash, defragment, roll over, as DPDK asks
s.setsockopt(263, 18, struct.pack("I", group | ((0 | 0x8000 | 0x1000) << 16)))
open(ready, "w").close()
time.sleep(60)
EOF
HPID=$!
PIDS+=("$HPID")
wait "$FPID" || exit 1
kill "$HPID" 2>/dev/null	# its group is on VA, which the worker below takes
wait "$HPID" 2>/dev/null

# --- af_packet: the server SIGKILLed on the far end of the veth, in a namespace of its own
# (in one namespace two psbs' fanout groups can meet, as above)
ip netns add "$NS" && ip link set "$VB" netns "$NS" && ip -n "$NS" link set "$VB" up ||
	fail "cannot move $VB into namespace $NS"
SRV_IN=(ip netns exec "$NS")
start_server akill "af_packet:$VB"
SRV_IN=()
kill_mid_run akill "af_packet:$VA"

# --- the real cause, not "did not come up" or "Success"
expect no-iface 2 15 "af_packet:psbnone$$" "no such device" "psbnone$$" -- \
	"$PSB" --port "af_packet:psbnone$$" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-ni"
start_server busy "memif:server:$SOCK" --duration 60
expect prefix-busy 2 15 "EAL initialisation failed: EAL: Cannot create lock on" \
	"Is another primary process running?" -- \
	"$PSB" --port null --ip 198.18.0.1 --no-huge -l 1 --file-prefix "$PFX-busy" --duration 1
kill -0 "$SPID" 2>/dev/null || fail "prefix-busy: the running psb died"
[ -S "/var/run/dpdk/$PFX-busy/psb.ctl" ] || fail "prefix-busy: the running psb's files were touched"
kill -TERM "$SPID"
wait "$SPID" || fail "busy: server exited with $?"
BAD=$(( $(nproc) + 7 ))
expect bad-lcore 2 15 "EAL initialisation failed: EAL: core $BAD unavailable" -- \
	"$PSB" --port null --ip 198.18.0.1 --no-huge -l "0,$BAD" --file-prefix "$PFX-lc" --duration 1
grep -q "EAL common options" "$DIR/bad-lcore.log" && fail "bad-lcore: the EAL's usage page buries the reason"
echo "failfast: every wait bounded, the one that expired named, results written"
