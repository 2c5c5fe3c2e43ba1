#!/bin/bash
# Two psb processes over net_memif: a server (hosting the scheduler) and a
# worker process running 3 workers that register, push and pull. Sync: every
# pulled value is checked exactly (--verify). Async: the server's final store
# must hold exactly the sum of every push.
set -euo pipefail
PSB=$1
DIR=$(mktemp -d /tmp/psb-memif-XXXXXX)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	pkill -9 -f -- "--file-prefix psbt-m$$-" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$DIR" /var/run/dpdk/psbt-m$$-*
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

NW=3 KEYS=8 LEN=40000 REPEAT=15

run() {	# run TAG SYNCFLAG WORKER_MODE [server options...]
	local tag=$1 sync=$2 mode=$3
	shift 3
	rm -f "$DIR/m.sock"
	timeout -k 5 90 "$PSB" --port "memif:server:$DIR/m.sock" --ip 198.18.0.1 \
		"$sync" --no-huge --mbufs 16384 \
		--file-prefix "psbt-m$$-s$tag" --stats-file "$DIR/srv-$tag.json" -q "$@" &
	local spid=$!
	PIDS+=($spid)
	# its control socket appears once its port runs: then a memif client is taken
	for _ in $(seq 100); do [ -S "/var/run/dpdk/psbt-m$$-s$tag/psb.ctl" ] && break; sleep 0.1; done
	[ -S "/var/run/dpdk/psbt-m$$-s$tag/psb.ctl" ] || fail "$tag: server did not come up"
	timeout -k 5 60 "$PSB" --role worker --port "memif:client:$DIR/m.sock" --ip 198.18.0.2 \
		--scheduler 198.18.0.1 --num-workers $NW --workers $NW "$sync" -l 1 --no-huge \
		--mbufs 16384 --file-prefix "psbt-m$$-w$tag" --keys $KEYS --len $LEN \
		--repeat $REPEAT --mode "$mode" --verify --results "$DIR/w-$tag.json" -q \
		|| fail "$tag: worker exited with $?"
	# the server hosts the scheduler: once every worker said FINALIZE the job is over and
	# it ends by itself, as a ps-lite job does (a SIGTERM here would race its exit)
	for _ in $(seq 150); do kill -0 $spid 2>/dev/null || break; sleep 0.1; done
	kill -0 $spid 2>/dev/null && fail "$tag: the server still runs 15 s after every worker finished"
	wait $spid || fail "$tag: server exited with $?"
	for r in $(seq 0 $((NW - 1))); do
		python3 "$(dirname "$0")/check_worker.py" "$DIR/w-$tag.$r.json" $KEYS $REPEAT ||
			fail "$tag: worker $r results"
	done
}

# Sync, PUSH_THEN_PULL: every pull checked against N*(N+1)/2 * round.
# The server runs one role per lcore here (rx, tx, scheduler, agent, 2 shards
# on 6 lcores sharing CPU 0), the other runs run everything on one lcore.
run sync --sync 0 --role server --scheduler 198.18.0.1 --num-workers $NW --shards 2 \
	--lcores '(0-6)@0'
python3 - "$DIR/srv-sync.json" <<'PY' || fail "sync: roles not one per lcore"
import json, sys
roles = json.load(open(sys.argv[1]))["roles"]
lcores = [r["lcore"] for r in roles]
assert len(set(lcores)) == len(lcores), lcores
shards = [r for r in roles if r["role"] == "server"]
assert len(shards) == 2 and all(r["rx_pkts"] > 0 for r in shards), shards
PY
python3 - "$DIR/srv-sync.json" $NW $KEYS $LEN $REPEAT <<'PY' || fail "sync: server store"
import json, sys
s = json.load(open(sys.argv[1]))["store"]
nw, keys, length, repeat = map(int, sys.argv[2:])
assert s["keys"] == keys, s
assert s["rounds_closed"] == keys * repeat, s
# --verify: every worker pulls every key once more after its run, to check it
assert s["push"] == nw * keys * repeat and s["pull"] == nw * keys * (repeat + 1), s
want = keys * (length // 4) * (nw * (nw + 1) // 2) * repeat
assert s["value_sum"] == want, (s["value_sum"], want)
PY

# Async, PUSH_ONLY: the store must be the exact sum of all pushes. With --verify every
# worker pushes 1 into the elements it owns (i mod N = rank): every element gets one push
# per iteration, and every worker checks every key after its run. The server takes its
# job size and scheduler from ps-lite's environment variables.
DMLC_NUM_WORKER=$NW DMLC_PS_ROOT_URI=198.18.0.1 DMLC_ROLE=server run async --async 2 -l 0
python3 - "$DIR/srv-async.json" $NW $KEYS $LEN $REPEAT <<'PY' || fail "async: server store"
import json, sys
s = json.load(open(sys.argv[1]))["store"]
nw, keys, length, repeat = map(int, sys.argv[2:])
assert s["push"] == nw * keys * repeat, s
want = keys * (length // 4) * repeat
assert s["value_sum"] == want, (s["value_sum"], want)
for k in s["digest"]:
    assert k["min"] == k["max"] == repeat and k["round"] == nw * repeat, k
PY


# Small values travel as BATCH records; the server's two shards split them.
LEN=256 KEYS=64
run batch --sync 1 --role server --scheduler 198.18.0.1 --num-workers $NW --shards 2 -l 0
python3 - "$DIR/srv-batch.json" $NW $KEYS $LEN $REPEAT <<'PY' || fail "batch: server store"
import json, sys
s = json.load(open(sys.argv[1]))["store"]
nw, keys, length, repeat = map(int, sys.argv[2:])
assert s["batches"] > 0, s
assert s["pushpull"] == nw * keys * repeat, s
want = keys * (length // 4) * (nw * (nw + 1) // 2) * repeat
assert s["value_sum"] == want, (s["value_sum"], want)
PY
echo "memif: batched small values exact across shards"
