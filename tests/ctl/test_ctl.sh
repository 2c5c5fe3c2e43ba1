#!/bin/bash
# psbctl against a worker appliance waiting for commands and a memif server: experiments
# started, watched, stopped, changed live, reset; errors reported with their exit status.
PSB=$1
PSBCTL=$2
. "$(dirname "$0")/lib.sh"

start_pair

# --- idle appliance: help, status, list
expect_rc 0 "$O" "$E" ctl "$W" help
grep -q '^  start ' "$O" && grep -q '^  counters ' "$O" || fail "help: $(cat "$O")"
expect_rc 0 "$O" "$E" ctl "$W" status
grep -q '^role: worker, up [0-9.]* s, nothing loaded$' "$O" &&
	grep -q '^no experiment has run yet$' "$O" || fail "status: $(cat "$O")"
[ "$(ctl "$W" --json status | jq_ 'd["experiment"]["state"]')" = idle ] || fail "not idle"
expect_rc 0 "$O" "$E" ctl "$W" list
grep -q '^no experiments yet' "$O" || fail "list: $(cat "$O")"

# --- rdma: rdma-core's view of the host; none (no ib_core: no /sys/class/infiniband) is an
# answer with the kernel's reason, not a failed command
expect_rc 0 "$O" "$E" ctl "$W" help
grep -q '^  rdma ' "$O" || fail "help does not list rdma: $(cat "$O")"
expect_rc 0 "$O" "$E" ctl "$W" --json rdma
python3 - "$O" <<'PY' || fail "rdma: $(cat "$O")"
import json, os, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True, r
d = r["rdma"]
if not os.path.isdir("/sys/class/infiniband"):
    assert d == {"available": False, "error": "no RDMA support in this kernel "
                 "(ibv_get_device_list: Function not implemented; the kernel has no "
                 "InfiniBand/RDMA subsystem)"}, d
elif not os.listdir("/sys/class/infiniband"):
    assert d == {"available": False, "error": "no RDMA devices (rdma-core sees none)"}, d
else:
    assert d["available"] is True and d["devices"], d
    assert all(x["name"] for x in d["devices"]), d
PY
expect_rc 0 "$O" "$E" ctl "$W" rdma
if [ ! -d /sys/class/infiniband ]; then
	grep -qx 'rdma.available false' "$O" &&
		grep -qx 'rdma.error no RDMA support in this kernel .*' "$O" || fail "rdma: $(cat "$O")"
fi

# --- start FILE --wait to completion; FILE resolves here, its results under psb's --output-dir
mkdir "$DIR/here"
write_doc "$DIR/here/small.json" small 200 0 results
(cd "$DIR/here" && "$PSBCTL" --ctl "$W" start small.json --wait) >"$O" 2>"$E" ||
	fail "start --wait: exit $?: $(cat "$O" "$E")"
R="$DIR/results/small"
grep -q "^experiment 1 \"small\" started; results will go to $R\$" "$O" || fail "start: $(cat "$O")"
grep -q '^experiment 1 "small" (pushpull): done after' "$O" || fail "start --wait end: $(cat "$O")"
grep -q '^  iterations 200/200, ' "$O" || fail "start --wait figures: $(cat "$O")"
grep -q "^results: $R\$" "$O" || fail "start --wait results: $(cat "$O")"
for f in result.json result.csv result.txt; do [ -s "$R/$f" ] || fail "no $R/$f"; done
jq_ 'd["state"] == "done" and d["rows"][0]["iterations"] == 200' <"$R/result.json" |
	grep -q True || fail "result.json: $(head -c 400 "$R/result.json")"
# the same name again: refused before it runs, naming why
expect_rc 1 "$O" "$E" bash -c "cd '$DIR/here' && '$PSBCTL' --ctl '$W' start small.json"
grep -q '^psbctl: exists: name: results of "small" already exist' "$E" || fail "rerun: $(cat "$E")"

# --- a long rate-limited run, watched by start --wait in the background
write_doc "$DIR/long.json" long 100000000 20Mbps results
"$PSBCTL" --ctl "$W" start "$DIR/long.json" --wait >"$DIR/wait.out" 2>"$DIR/wait.err" &
WAITER=$!
PIDS+=($WAITER)
wait_state "$W" running 10
wait_requests 300 10

# status, human and JSON
expect_rc 0 "$O" "$E" ctl "$W" status
grep -q '^experiment 2 "long" (pushpull): running' "$O" || fail "status: $(cat "$O")"
grep -Eq '^  iterations [0-9]+/100000000, requests [0-9]+' "$O" || fail "status: $(cat "$O")"
ctl "$W" --json status | jq_ 'd["ok"] and d["experiment"]["pushpull"]["requests"] > 0' |
	grep -q True || fail "status --json"

# counters: all of them as path/value lines, a subtree, JSON, an unknown path
expect_rc 0 "$O" "$E" ctl "$W" counters
grep -q '^node.role worker$' "$O" && grep -q '^experiment.state running$' "$O" &&
	grep -Eq '^roles\.worker0\.tx_pkts [1-9][0-9]*$' "$O" &&
	grep -Eq '^ports\.0\.opackets [1-9][0-9]*$' "$O" || fail "counters: $(head -50 "$O")"
# the whole set is written as text without a tree: the same document as the tree gives
python3 - "$W" <<'PY' || fail "counters as text and as a tree differ"
import json, socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
f = s.makefile("rw")
def ask(req):
    f.write(json.dumps(req) + "\n")
    f.flush()
    line = f.readline()
    return line, json.loads(line)
def shape(v, path=""):
    # keys in order and value types, down to the leaves (numbers move between the two)
    if isinstance(v, dict):
        return [(k, shape(x, path + "." + k)) for k, x in v.items()]
    return type(v).__name__ if not isinstance(v, bool) else "bool"
text, a = ask({"cmd": "counters", "id": 7})
tree, b = ask({"cmd": "counters", "filter": "", "id": 7})
assert list(a) == ["counters", "ok", "id"] and a["ok"] is True and a["id"] == 7, text[:200]
assert list(a) == list(b), (list(a), list(b))
sa, sb = shape(a["counters"]), shape(b["counters"])
assert sa == sb, (sa, sb)
assert a["counters"]["experiment"]["pushpull"]["rtt_hist_us"]["le"]["+Inf"] > 0, text[:200]
assert a["counters"]["node"]["role"] == "worker" and text.endswith("}\n"), text[-100:]
PY
expect_rc 0 "$O" "$E" ctl "$W" counters roles.worker0
[ "$(grep -vc '^roles\.worker0\.' "$O")" -eq 0 ] && grep -q '^roles.worker0.lcore 1$' "$O" ||
	fail "counters roles.worker0: $(cat "$O")"
ctl "$W" --json counters roles.worker0 | jq_ 'd["counters"]["tx_pkts"] > 0 and "lcore" in d["counters"]' |
	grep -q True || fail "counters --json roles.worker0"
expect_rc 1 "$O" "$E" ctl "$W" counters roles.nosuch
grep -q '^psbctl: not_found: no counters at "roles.nosuch" ("nosuch" not found' "$E" ||
	fail "unknown filter: $(cat "$E")"

# set pushpull.rate live: 20 Mbit/s of values, pushed and pulled, is 305 requests/s of
# 4 KiB; 4 Mbit/s is 61. CPU shared with other tests may slow it; it may not go faster.
R1=$(rate_over 2)
expect_rc 0 "$O" "$E" ctl "$W" set pushpull.rate 4Mbps
grep -q '^pushpull.rate = 4Mbps (changed in the running experiment)$' "$O" || fail "set: $(cat "$O")"
sleep 0.5
R2=$(rate_over 3)
python3 -c '
import sys
r1, r2 = map(float, sys.argv[1:])
sys.exit(not (0.4 * 305 <= r1 <= 1.3 * 305 and 0.4 * 61 <= r2 <= 1.3 * 61))' "$R1" "$R2" || fail "rate: $R1 req/s at 20Mbps, $R2 req/s at 4Mbps (want ~305, ~61)"
echo "rate: $R1 req/s at 20Mbps, then $R2 req/s at 4Mbps"
# a parameter that cannot change while running is refused, naming it; the run goes on
A=$(progress | cut -d' ' -f1)
expect_rc 1 "$O" "$E" ctl "$W" set pushpull.len 8KiB
grep -q '^psbctl: invalid: pushpull.len: cannot change while experiment 2 runs' "$E" ||
	fail "set pushpull.len: $(cat "$E")"
expect_rc 1 "$O" "$E" ctl "$W" set pushpull.rate fast
grep -q 'pushpull.rate' "$E" || fail "set pushpull.rate fast: $(cat "$E")"

# malformed JSON: bad_json, and the experiment goes on
expect_rc 1 "$O" "$E" ctl "$W" raw '{"cmd": "status"'
jq_ 'd["error"]["code"]' <"$O" | grep -qx bad_json || fail "raw: $(cat "$O")"
grep -q '^psbctl: bad_json: ' "$E" || fail "raw stderr: $(cat "$E")"
expect_rc 1 "$O" "$E" ctl "$W" raw '["status"]'
jq_ 'd["error"]["code"]' <"$O" | grep -qx bad_request || fail "raw array: $(cat "$O")"
expect_rc 1 "$O" "$E" ctl "$W" raw '{"cmd": "frobnicate"}'
grep -q 'unknown command "frobnicate"' "$E" || fail "unknown command: $(cat "$E")"
# a field the command does not take is named, not taken for the absence of the one meant
expect_rc 1 "$O" "$E" ctl "$W" raw '{"cmd": "clear_port_stats", "prot": 0}'
grep -q '^psbctl: bad_request: "prot": not a field of clear_port_stats (its fields: "port")' \
	"$E" || fail "misspelt field: $(cat "$E")"
expect_rc 1 "$O" "$E" ctl "$W" raw '{"cmd": "status", "id": 3, "verbose": true}'
grep -q '"verbose": not a field of status (it takes none besides "id")' "$E" ||
	fail "field of a command without any: $(cat "$E")"
jq_ 'd["id"]' <"$O" | grep -qx 3 || fail "refused request's id: $(cat "$O")"
expect_rc 1 "$O" "$E" ctl "$W" raw '{"cmd": "start", "experiment": {}, "file": "x.json"}'
grep -q 'give "experiment" or "file", not both' "$E" || fail "both experiment and file: $(cat "$E")"
# a bad document: the error names its JSON path and value, for start and load
printf '{"name": "bad", "kind": "pushpull", "pushpull": {"len": "abc"}}\n' >"$DIR/bad.json"
expect_rc 1 "$O" "$E" ctl "$W" start "$DIR/bad.json"
grep -q '^psbctl: invalid: pushpull.len: expected a size like .*got "abc"' "$E" ||
	fail "bad document: $(cat "$E")"
expect_rc 1 "$O" "$E" ctl "$W" load "$DIR/bad.json"
grep -q 'pushpull.len' "$E" || fail "load bad document: $(cat "$E")"
printf '{"name": "bad2", "pushpull": {"len": 4096,}}\n' >"$DIR/bad2.json"
expect_rc 2 "$O" "$E" ctl "$W" start "$DIR/bad2.json"
grep -q "^psbctl: $DIR/bad2.json:1:" "$E" || fail "unparsable document: $(cat "$E")"
# another start while one runs: busy
expect_rc 1 "$O" "$E" ctl "$W" start "$DIR/here/small.json"
grep -q '^psbctl: busy: experiment 2 "long" is running' "$E" || fail "second start: $(cat "$E")"
sleep 0.5
[ "$(ctl "$W" --json status | jq_ 'd["experiment"]["state"]')" = running ] || fail "run ended"
[ "$(progress | cut -d' ' -f1)" -gt "$A" ] || fail "no requests after the refused commands"

# reset_state on the worker: the experiment's metrics start again
B=$(progress | cut -d' ' -f1)
expect_rc 0 "$O" "$E" ctl "$W" reset_state
C=$(progress | cut -d' ' -f1)
[ "$C" -lt "$B" ] && [ "$C" -lt 50 ] || fail "reset_state: requests $B before, $C after"
wait_requests $((C + 20)) 10

# stop: the run ends stopped, results written, the waiting psbctl reports it and exits 0
expect_rc 0 "$O" "$E" ctl "$W" stop
grep -q '^experiment 2 "long" (pushpull): stopped' "$O" || fail "stop: $(cat "$O")"
grep -q "^results: $DIR/results/long\$" "$O" || fail "stop results: $(cat "$O")"
jq_ 'd["state"]' <"$DIR/results/long/result.json" | grep -qx stopped || fail "long result.json"
RC=0
wait $WAITER || RC=$?
[ $RC -eq 0 ] || fail "start --wait exited $RC: $(cat "$DIR/wait.out" "$DIR/wait.err")"
grep -q '^experiment 2 "long" (pushpull): stopped after' "$DIR/wait.out" &&
	grep -q "^results: $DIR/results/long\$" "$DIR/wait.out" ||
	fail "start --wait after stop: $(cat "$DIR/wait.out")"
# not a terminal: one progress line per second, not \r
[ "$(grep -c '^long running .* iterations, .* Gbps, .* req/s, p50 .* us, p99 .* us' \
	"$DIR/wait.out")" -ge 3 ] || fail "progress lines: $(cat "$DIR/wait.out")"
grep -q $'\r' "$DIR/wait.out" && fail "carriage returns without a terminal"
expect_rc 1 "$O" "$E" ctl "$W" stop
grep -q '^psbctl: not_running: no experiment is running' "$E" || fail "stop again: $(cat "$E")"

# list: both experiments
expect_rc 0 "$O" "$E" ctl "$W" list
grep -Eq '^id +name +kind +state +elapsed_s +results$' "$O" &&
	grep -Eq '^ *1 +small +pushpull +done +[0-9.]+ +/' "$O" &&
	grep -Eq '^ *2 +long +pushpull +stopped +[0-9.]+ +/' "$O" ||
	fail "list: $(cat "$O")"

# reset_state on the server: the store's counters go to 0
[ "$(ctl "$S" --json counters store.pushpull | jq_ 'd["counters"]')" -gt 0 ] ||
	fail "server store saw no pushpull"
expect_rc 0 "$O" "$E" ctl "$S" reset_state
expect_rc 0 "$O" "$E" ctl "$S" counters store
grep -qx 'store.pushpull 0' "$O" && grep -qx 'store.rounds_closed 0' "$O" &&
	grep -qx 'store.bytes_summed 0' "$O" || fail "server store after reset: $(cat "$O")"

# load, set while idle (for the loaded one), then start it: the loaded document runs
write_doc "$DIR/l.json" loaded 100 0 results
expect_rc 0 "$O" "$E" ctl "$W" load "$DIR/l.json"
grep -q '^loaded "loaded" (pushpull)' "$O" || fail "load: $(cat "$O")"
expect_rc 0 "$O" "$E" ctl "$W" set pushpull.repeat 150
grep -q '(for the next experiment)' "$O" || fail "set idle: $(cat "$O")"
# a misspelt "experiment" does not start the loaded one
expect_rc 1 "$O" "$E" ctl "$W" raw '{"cmd": "start", "experiement": {"name": "typo"}}'
grep -q '"experiement": not a field of start (its fields: "experiment", "file")' "$E" ||
	fail "start with a misspelt field: $(cat "$E")"
[ "$(ctl "$W" --json status | jq_ 'd["experiment"]["id"]')" = 2 ] ||
	fail "a start with a misspelt field started an experiment"
expect_rc 0 "$O" "$E" ctl "$W" start --wait
grep -q '^experiment 3 "loaded" (pushpull): done' "$O" || fail "start loaded: $(cat "$O")"
jq_ 'd["rows"][0]["iterations"]' <"$DIR/results/loaded/result.json" | grep -qx 150 ||
	fail "loaded run did not take the set repeat"

# a failed run: start --wait exits 1 (a server that does not answer in time)
expect_rc 0 "$O" "$E" ctl "$S" quit
wait $SERVER_PID || fail "server exited with $? after quit"
[ -e "$S" ] && fail "server left its socket behind"
printf '{"name": "fails", "kind": "pushpull", "pushpull": {"len": "4KiB", "repeat": 10,
 "timeout": "1ms", "max_retries": 2}, "output": {"dir": "%s"}}\n' results >"$DIR/f.json"
expect_rc 1 "$O" "$E" ctl "$W" start "$DIR/f.json" --wait
grep -q '^experiment 4 "fails" (pushpull): failed' "$O" && grep -q '^psbctl: experiment 4 failed' "$E" ||
	fail "failed run: $(cat "$O" "$E")"

# quit: the appliance exits (1: its last experiment failed) and removes its socket
expect_rc 0 "$O" "$E" ctl "$W" quit
RC=0
wait $WORKER_PID || RC=$?
[ $RC -eq 1 ] || fail "worker exited with $RC after quit, expected 1 (last run failed)"
[ -e "$W" ] && fail "worker left its socket behind"
expect_rc 2 "$O" "$E" ctl "$W" status
grep -q "^psbctl: cannot connect to $W: no such socket" "$E" || fail "after quit: $(cat "$E")"
echo "ctl: start/stop/status/counters/set/reset/load/quit and their errors as expected"
