#!/bin/bash
# Two psb servers and one psb worker on af_packet ports joined by a Linux
# bridge (no kernel addresses on it). Server 0 hosts the scheduler; server 1
# and the worker register with it over the wire, the worker learns both
# servers and their key ranges, resolves them by ARP and runs a synchronous
# benchmark whose batches are split by server. Every pulled value is checked,
# and each server must hold exactly its own keys.
set -uo pipefail
PSB=$1
. "$(dirname "$0")/bridge.sh"
bridge_test ms 5 0 1 2

common=(--no-huge --mbufs 8192 --sync --num-servers 2 --num-workers 1 --scheduler 198.18.9.1 -q)
ip netns exec "$NSP-0" timeout -k 5 120 "$PSB" --role server --port "af_packet:${NSP}a0" --ip 198.18.9.1 -l 0 \
	--file-prefix "${PFX}0" --stats-file "$DIR/s0.json" "${common[@]}" > "$DIR/s0.log" 2>&1 &
PIDS+=($!)
ip netns exec "$NSP-1" timeout -k 5 120 "$PSB" --role server --port "af_packet:${NSP}a1" --ip 198.18.9.2 -l 1 \
	--file-prefix "${PFX}1" --stats-file "$DIR/s1.json" "${common[@]}" > "$DIR/s1.log" 2>&1 &
PIDS+=($!)
KEYS=8 REPEAT=20 LEN=256
ip netns exec "$NSP-2" timeout -k 5 90 "$PSB" --role worker --port "af_packet:${NSP}a2" --ip 198.18.9.10 -l 0 \
	--file-prefix "${PFX}w" "${common[@]}" --keys $KEYS --len $LEN --repeat $REPEAT \
	--mode 0 --verify --results "$DIR/w.json" > "$DIR/w.log" 2>&1 || fail "worker exited with $?"
for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null; done
for p in "${PIDS[@]}"; do wait "$p" || fail "a server exited with $?"; done
PIDS=()

python3 - "$DIR" $KEYS $REPEAT $LEN <<'PY' || fail "results"
import json, sys
d, keys, repeat, length = sys.argv[1], *map(int, sys.argv[2:])
w = json.load(open(f"{d}/w.json"))
assert w["iterations"] == repeat and w["failed"] == 0 and w["verify_errors"] == 0, w
assert w["keys"] == 2 * keys, w
for s in ("s0", "s1"):
    st = json.load(open(f"{d}/{s}.json"))["store"]
    # Each server holds its own keys only, every round closed, every value exact.
    assert st["keys"] == keys, (s, st)
    assert st["rounds_closed"] == keys * repeat, (s, st)
    assert st["value_sum"] == keys * (length // 4) * repeat, (s, st)
    assert st["batches"] > 0, (s, st)
PY
echo "multiserver: 2 servers, scheduler over the wire, exact sums, keys where they belong"
