#!/bin/bash
# psb fails saying why:
# - the memif socket a SIGKILLed server left is removed by the next psb, which says so, and a
#   run through it works; a socket file psb did not make is left alone;
# - a missing af_packet interface is "no such device", naming it; EAL failures (a file prefix
#   in use, an lcore that does not exist) quote the EAL's reason.
#
# usage: test_failfast.sh PATH/psb. Needs root; 77 without.
set -uo pipefail
PSB=$1
DIR=$(mktemp -d /tmp/psbt-failfast-XXXXXX)
PFX=psbt-ff$$
SOCK=$DIR/m.sock
PIDS=()
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$DIR" /var/run/dpdk/"$PFX"-*
}
trap cleanup EXIT
trap 'exit 143' TERM INT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root"; exit 77; }

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

# start_server TAG PORT ARGS...: a psb server on PORT, until its port runs (SPID)
start_server() {
	local tag=$1 port=$2
	shift 2
	"$PSB" --port "$port" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-$tag" \
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

# --- a server SIGKILLed leaves its socket file behind
start_server kill "memif:server:$SOCK"
kill -KILL "$SPID"
wait "$SPID" 2>/dev/null

# --- the socket file the killed server left: the next server removes it, says so; a run works
[ -S "$SOCK" ] || fail "the killed server left no socket file (nothing to test)"
KILLED=$SPID
start_server stale "memif:server:$SOCK" --duration 60
grep -qF "removed the stale memif socket $SOCK, left by psb pid $KILLED" "$DIR/stale.log" ||
	fail "stale: the server did not say it removed the socket: $(tail -3 "$DIR/stale.log")"
expect stale-run 0 60 "iterations" -- \
	"$PSB" "${WORKER[@]}" "$PFX-wstale" --port "memif:client:$SOCK" --ip 198.18.0.2 -l 1 \
	--server 198.18.0.1 --len 4096 --repeat 20 --verify --results "$DIR/stale.json"
results "$DIR/stale.json" 'r["iterations"] == 20 and r["verify_errors"] == 0'
kill -TERM "$SPID"
wait "$SPID" || fail "stale: server exited with $?"
# a socket file nobody recorded is someone else's: refused, left in place
python3 -c "import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])" "$SOCK"
expect foreign-sock 2 15 "is a socket file psb did not leave behind" -- \
	"$PSB" --port "memif:server:$SOCK" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-fs" \
	--duration 1
[ -S "$SOCK" ] || fail "foreign-sock: the foreign socket file was removed"
rm -f "$SOCK"

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
echo "failfast: a killed psb's memif socket cleaned up, someone else's kept, real causes quoted"
