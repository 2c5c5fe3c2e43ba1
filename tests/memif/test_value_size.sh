#!/bin/bash
# A server keeps its store between runs: a second worker with another value size gets
# length_mismatch, and its message says so -- both sizes, and psbctl reset_state as the way
# to clear the store; after reset_state the same worker runs.
#
# usage: test_value_size.sh PATH/psb PATH/psbctl
source "$(dirname "$0")/../export/common.sh" "${1:?usage: test_value_size.sh PSB PSBCTL}"
PSBCTL=${2:?usage: test_value_size.sh PSB PSBCTL}

start_psb srv --port "memif:server:$DIR/m.sock" --ip 198.18.0.1 --no-huge -l 0 \
	--file-prefix "$TAG-s" -q
SPID=$LAST_PID
for _ in $(seq 300); do [ -S "$RUNDIR/$TAG-s/psb.ctl" ] && break; sleep 0.1; done
[ -S "$RUNDIR/$TAG-s/psb.ctl" ] || fail "the server did not come up"

# worker TAG LEN: a worker of LEN-byte values, to its end; its status in rc
worker() {
	rc=0
	timeout -k 5 60 "$PSB" --role worker --port "memif:client:$DIR/m.sock" --ip 198.18.0.2 \
		--server 198.18.0.1 --no-huge -l 1 --file-prefix "$TAG-$1" --len "$2" --keys 4 \
		--repeat 3 --verify --results "$DIR/$1.json" > "$DIR/$1.log" 2>&1 || rc=$?
}

worker a 4096
[ $rc = 0 ] || fail "the first worker (4096 B) exited with $rc"
worker b 8192
[ $rc = 1 ] || fail "a worker of 8192 B against the 4096 B store exited with $rc, not 1"
why="length_mismatch: the server's key holds 4096-byte values, this worker's are 8192 bytes"
why+=" (the server keeps its store between runs: psbctl reset_state clears it)"
grep -qF -- "$why" "$DIR/b.log" || fail "the worker does not say: $why"
python3 -c 'import json, sys; r = json.load(open(sys.argv[1])); assert r["state"] == "failed" and sys.argv[2] in r["error"], r' \
	"$DIR/b.json" "$why" || fail "the worker's results do not say why"
echo "ok: the second worker says: $why"
"$PSBCTL" -p "$TAG-s" reset_state > /dev/null || fail "psbctl reset_state failed"
worker c 8192
[ $rc = 0 ] || fail "after reset_state the 8192 B worker exited with $rc"
echo "ok: after psbctl reset_state the 8192 B worker runs"
stop_psb $SPID
echo "value_size: a store of another value size is named, and how to clear it"
