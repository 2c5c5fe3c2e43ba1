#!/bin/bash
# Port counters over the port's whole life: a memif server's rx and tx go on counting across
# its peers, though memif's own counters read 0 once a peer has gone. Two workers one after
# the other, then a third SIGKILLed in the middle of its run: the counters between them,
# the exit table and --stats-file have every packet psb's roles took and sent.
source "$(dirname "$0")/common.sh" "$1"
PSBCTL=$2
[ -x "$PSBCTL" ] || fail "usage: test_port_totals.sh PSB PSBCTL"
SOCK=$DIR/m.sock
CTL=$DIR/s.ctl

start_psb server --role server --port "memif:server:$SOCK" --ip 198.18.0.1 -l 0 --no-huge \
	--file-prefix "$TAG-s" --ctl "$CTL" --stats-file "$DIR/stats.json"
SPID=$LAST_PID
for _ in $(seq 100); do [ -S "$CTL" ] && break; alive $SPID; sleep 0.1; done
[ -S "$CTL" ] || fail "no control socket after 10 s"

# port FIELD: the server's port 0 counter FIELD now
port() {
	"$PSBCTL" --ctl "$CTL" --json counters ports |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["counters"]["0"][sys.argv[1]])' "$1"
}
# wait_port FIELD VALUE: until port FIELD reads VALUE (10 s at most)
wait_port() {
	for _ in $(seq 100); do [ "$(port "$1")" = "$2" ] && return 0; alive $SPID; sleep 0.1; done
	fail "port $1 still $(port "$1") after 10 s, not $2"
}
# worker N ITERATIONS: a worker of 4 KiB x 40 keys over the same memif socket, a frame per
# request (no BATCH records: the counts below are requests)
worker() {
	exec "$PSB" --role worker --port "memif:client:$SOCK" --ip 198.18.0.2 \
		--server 198.18.0.1 -l 1 --no-huge --file-prefix "$TAG-w$1" --batch 0 4096 "$2" \
		> "$DIR/w$1.log" 2>&1
}

(worker 1 500) || fail "worker 1 exited with $?"
wait_port paused True
I1=$(port ipackets)
O1=$(port opackets)
(worker 2 500) || fail "worker 2 exited with $?"
wait_port paused True
I2=$(port ipackets)
# the third runs until killed (exec: $! is psb itself)
worker 3 100000000 &
W3=$!
PIDS+=("$W3")
for _ in $(seq 100); do [ "$(port ipackets)" -gt $((I2 + 10000)) ] && break; sleep 0.1; done
kill -9 "$W3"
wait "$W3" 2>/dev/null || true
wait_port paused True
I3=$(port ipackets)
O3=$(port opackets)
# clear_port_stats: from 0, what was carried included
"$PSBCTL" --ctl "$CTL" clear_port_stats all > /dev/null || fail "clear_port_stats"
[ "$(port ipackets)" = 0 ] && [ "$(port opackets)" = 0 ] ||
	fail "after clear_port_stats: $(port ipackets) in, $(port opackets) out"
(worker 4 100) || fail "worker 4 exited with $?"
wait_port paused True
I4=$(port ipackets)
[ "$I4" -ge 4000 ] && [ "$I4" -lt 5000 ] || fail "after clear_port_stats and 4000 PUSHPULLs: $I4 in"
stop_psb $SPID

python3 - "$DIR/stats.json" "$I1" "$O1" "$I2" "$I3" "$O3" <<'PY' || fail "port totals"
import json, sys
st = json.load(open(sys.argv[1]))
i1, o1, i2, i3, o3 = map(int, sys.argv[2:])
# 500 iterations of 40 keys: 20000 PUSHPULLs of one frame each, and their answers
assert i1 >= 20000 and o1 >= 20000, (i1, o1)
assert i2 >= i1 + 20000, (i1, i2)
assert i3 > i2 + 10000, (i2, i3)
p, t = st["ports"][0], st["totals"]
# every packet the roles took came through the port; counts read every 10 ms may miss
# what came in the last 10 ms before the third worker was killed, nothing more
assert t["rx_pkts"] - 10000 <= i3 + p["ipackets"] <= t["rx_pkts"], (i3, p, t)
assert t["tx_pkts"] - 10000 <= o3 + p["opackets"] <= t["tx_pkts"], (o3, p, t)
print(f"port totals: {i1}, {i2}, {i3} packets in after each worker, {p['ipackets']} after "
      f"clear_port_stats; the roles took {t['rx_pkts']}")
PY
echo "port totals: kept across memif peers, a killed one included"
