#!/bin/bash
# memif clients that come before their psb server's port is started. The server's socket
# file is there from its EAL on; its port starts once its pool is made (seconds for a large
# one), and a memif server turns away for good a client that connects before (DPDK's memif
# client does not try again). So a psb client waits for the server's record to say its port
# runs:
#  - with --connect-timeout 1 it gives up, non-zero, naming the server that did not start;
#  - a worker started as soon as the socket file is there waits, connects once the port
#    runs, and its job ends with every pulled value exact;
#  - a client whose server left says that it will not connect again (DPDK's memif client
#    connects once), not only that its link is down.
#
# usage: test_memif_early.sh PATH/psb
source "$(dirname "$0")/../export/common.sh" "${1:?usage: test_memif_early.sh PATH/psb}"

NW=2 KEYS=4 LEN=20000 REPEAT=10

# a pool of 600000 buffers of 9 KiB: a few seconds between the socket and the port
start_psb srv --role server --scheduler 198.18.0.1 --num-workers $NW \
	--port "memif:server:$DIR/m.sock" --ip 198.18.0.1 --sync --no-huge --mbufs 600000 \
	-l 0 --file-prefix "$TAG-s"
server=$LAST_PID
for _ in $(seq 300); do [ -S "$DIR/m.sock" ] && break; sleep 0.01; done
[ -S "$DIR/m.sock" ] || fail "the server made no socket"
[ -S "$RUNDIR/$TAG-s/psb.ctl" ] &&
	fail "the server's port ran as soon as its socket was there: nothing tested"

# a client that may wait 1 s: gives up, naming the server
rc=0
timeout -k 5 30 "$PSB" --role worker --port "memif:client:$DIR/m.sock" --ip 198.18.0.3 \
	--scheduler 198.18.0.1 --num-workers $NW --workers 1 -l 1 --no-huge --mbufs 4096 \
	--file-prefix "$TAG-t" --connect-timeout 1 >"$DIR/early.out" 2>&1 || rc=$?
[ $rc -ne 0 ] && [ $rc -ne 124 ] ||
	fail "the impatient client exited with $rc: $(cat "$DIR/early.out")"
grep -q "the memif server at $DIR/m.sock, psb pid $server, did not start its port in 1\.[0-9] s" \
	"$DIR/early.out" || fail "the impatient client's reason: $(cat "$DIR/early.out")"
[ -S "$RUNDIR/$TAG-s/psb.ctl" ] &&
	fail "the server's port ran before the impatient client gave up: nothing tested"

# a worker that waits: its job runs, every pull exact
timeout -k 5 90 "$PSB" --role worker --port "memif:client:$DIR/m.sock" --ip 198.18.0.2 \
	--scheduler 198.18.0.1 --num-workers $NW --workers $NW --sync -l 1 --no-huge \
	--mbufs 16384 --file-prefix "$TAG-w" --keys $KEYS --len $LEN --repeat $REPEAT \
	--mode 0 --verify --results "$DIR/w.json" >"$DIR/w.log" 2>&1 ||
	fail "the worker exited with $?: $(tail -5 "$DIR/w.log")"
want="waiting for psb pid $server, whose memif server at $DIR/m.sock has not started"
grep -q "$want its port yet" "$DIR/w.log" ||
	fail "the worker did not wait for the server's port: $(cat "$DIR/w.log")"
for r in $(seq 0 $((NW - 1))); do
	python3 "$HERE/../memif/check_worker.py" "$DIR/w.$r.json" $KEYS $REPEAT ||
		fail "worker $r results"
done
for _ in $(seq 150); do kill -0 $server 2>/dev/null || break; sleep 0.1; done
wait $server || fail "the server exited with $?"

# a client whose server left: it says that it will not connect again, and what to do
rm -f "$DIR/m.sock"
start_psb srv2 --role server --port "memif:server:$DIR/m.sock" --ip 198.18.0.1 -l 0 \
	--no-huge --mbufs 4096 --file-prefix "$TAG-s2"
server=$LAST_PID
for _ in $(seq 300); do alive $server; [ -S "$RUNDIR/$TAG-s2/psb.ctl" ] && break; sleep 0.1; done
start_psb cli --role server --port "memif:client:$DIR/m.sock" --ip 198.18.0.2 -l 1 \
	--no-huge --mbufs 4096 --file-prefix "$TAG-c" -v
client=$LAST_PID
# its link up: said when it came up after the first look, or the server role registered through it
wait_grep "$DIR/cli.log" "port 0: link up\\|registered with the scheduler" 30 "the client's link did not come up" $client
stop_psb $server
said="the memif server left or turned this client away, and a memif client does not"
said="$said connect again; start this psb again"
wait_grep "$DIR/cli.log" "$said" 20 "the client did not say its server left" $client
stop_psb $client
echo "PASS"
