#!/bin/bash
# Every figure of a run has one source: an experiment started on a worker that sat idle
# does not count the idle time; reset_state starts a new window of figures, not a new run
# (the duration still ends it); list, status, stop's reply and the results agree; a
# document's serve.duration is what the server runs.
PSB=$1
PSBCTL=$2
. "$(dirname "$0")/lib.sh"

start_pair

# --- started after sitting idle: elapsed, goodput and round trips are the run's only
sleep 3
write_doc "$DIR/idle.json" idle 300 0 results
expect_rc 0 "$O" "$E" ctl "$W" start "$DIR/idle.json" --wait
python3 - "$DIR/results/idle/result.json" <<'PY' || fail "start after idle: $(head -c 600 "$DIR/results/idle/result.json")"
import json, sys
d = json.load(open(sys.argv[1]))
row = d["rows"][0]
# the worker's own window may not exceed the run psb timed from start to end (idle: +3 s)
assert row["elapsed_s"] <= d["elapsed_s"] + 0.05, (row["elapsed_s"], d["elapsed_s"])
assert row["iterations"] == 300 and row["retries"] == 0, row
assert row["rtt_max_us"] < 1e6, row
assert row["resets"] == 0 and abs(row["run_s"] - row["elapsed_s"]) < 1e-9, row
PY

# --- a duration counts from the run's start; reset_state opens a new window only (3 s, so
# that four resets 0.4 s apart land inside it on a loaded machine too)
cat >"$DIR/dur.json" <<EOF
{"name": "dur", "kind": "pushpull",
 "pushpull": {"len": "4KiB", "repeat": 100000000, "rate": "20Mbps", "duration": "3s"},
 "output": {"dir": "results"}}
EOF
expect_rc 0 "$O" "$E" ctl "$W" start "$DIR/dur.json"
wait_state "$W" running 10
for _ in 1 2 3 4; do
	sleep 0.4
	ctl "$W" reset_state >/dev/null || fail "reset_state"
done
wait_state "$W" done 8
python3 - "$DIR/results/dur/result.json" <<'PY' || fail "duration with resets: $(head -c 800 "$DIR/results/dur/result.json")"
import json, sys
d = json.load(open(sys.argv[1]))
row = d["rows"][0]
assert row["resets"] == 4, row
assert 2.9 <= row["run_s"] <= 4.0, row
assert row["elapsed_s"] < row["run_s"] - 1.0, row
PY
grep -q "figures since the last of 4 reset_state" "$DIR/worker.log" ||
	fail "the table does not say it covers the last window: $(tail -5 "$DIR/worker.log")"

# --- list, status and stop agree on the running experiment
write_doc "$DIR/long.json" long 100000000 20Mbps results
expect_rc 0 "$O" "$E" ctl "$W" start "$DIR/long.json"
wait_state "$W" running 10
sleep 1.5
ctl "$W" --json list >"$DIR/list.json" || fail "list"
ctl "$W" --json status >"$DIR/status.json" || fail "status"
python3 - "$DIR/list.json" "$DIR/status.json" <<'PY' || fail "list vs status: $(cat "$DIR/list.json" "$DIR/status.json")"
import json, sys
l = json.load(open(sys.argv[1]))["experiments"][-1]
s = json.load(open(sys.argv[2]))["experiment"]
assert l["name"] == "long" and l["state"] == "running", l
assert l["elapsed_s"] >= 1.0 and abs(l["elapsed_s"] - s["elapsed_s"]) < 0.5, (l, s)
PY
expect_rc 0 "$O" "$E" ctl "$W" stop

# --- serve: stop's reply, status after it and the results are the window's figures
cat >"$DIR/serve.json" <<EOF
{"name": "srv", "kind": "serve", "output": {"dir": "results"}}
EOF
expect_rc 0 "$O" "$E" ctl "$S" start "$DIR/serve.json"
wait_state "$S" running 10
write_doc "$DIR/in-window.json" inwindow 200 0 results
expect_rc 0 "$O" "$E" ctl "$W" start "$DIR/in-window.json" --wait
ctl "$S" --json stop >"$DIR/stop.json" || fail "serve stop"
write_doc "$DIR/after.json" after 100 0 results
expect_rc 0 "$O" "$E" ctl "$W" start "$DIR/after.json" --wait
ctl "$S" --json status >"$DIR/sstatus.json" || fail "serve status"
python3 - "$DIR/stop.json" "$DIR/sstatus.json" "$DIR/results/srv/result.json" <<'PY' || fail "serve figures: $(cat "$DIR/stop.json" "$DIR/sstatus.json")"
import json, sys
stop = json.load(open(sys.argv[1]))["experiment"]["serve"]
after = json.load(open(sys.argv[2]))["experiment"]["serve"]
res = json.load(open(sys.argv[3]))["rows"][-1]
# 200 PUSH_PULL iterations of 40 keys in the window, none of the 100 after it
assert stop["pushpull"] == 200 * 40, stop
assert after == stop, (after, stop)
assert res["pushpull"] == stop["pushpull"], (res, stop)
PY

# --- reset_state of the server while 1 MiB answers are on their way: they point into the
# values a reset drops (large segments go out without a copy), which must outlive them
cat >"$DIR/zc.json" <<EOF
{"name": "zc", "kind": "pushpull",
 "pushpull": {"len": "1MiB", "keys": 8, "repeat": 100000000, "duration": "3s", "verify": true},
 "output": {"dir": "results"}}
EOF
# the store drops its 4 KiB keys: 1 MiB values may take their place
expect_rc 0 "$O" "$E" ctl "$S" reset_state
expect_rc 0 "$O" "$E" ctl "$W" start "$DIR/zc.json"
wait_state "$W" running 10
for _ in 1 2 3 4 5 6; do
	sleep 0.3
	ctl "$S" reset_state >/dev/null || fail "server reset_state"
done
wait_state "$W" done 30
python3 - "$DIR/results/zc/result.json" <<'PY' || fail "resets under zero-copy answers: $(head -c 600 "$DIR/results/zc/result.json")"
import json, sys
row = json.load(open(sys.argv[1]))["rows"][0]
assert row["iterations"] > 0 and row["failed"] == 0 and row["verify_errors"] == 0, row
PY
ctl "$S" --json counters ports >"$DIR/sports.json" || fail "server gone after resets"
python3 - "$DIR/sports.json" <<'PY' || fail "server port faulted: $(cat "$DIR/sports.json")"
import json, sys
for p in json.load(open(sys.argv[1]))["counters"].values():
    assert p["faults"] == 0 and not p["paused"], p
PY

# --- a document's serve.duration is not overwritten by the command line's default
cat >"$DIR/served.json" <<EOF
{"name": "served", "kind": "serve",
 "node": {"role": "server", "ports": ["null"], "ip": "198.18.0.9", "lcores": "0",
          "file_prefix": "${PFX}d"},
 "serve": {"duration": "1s"}, "output": {"dir": "results"}}
EOF
start=$(date +%s.%N)
timeout -k 2 20 "$PSB" --config "$DIR/served.json" --no-huge --output-dir "$DIR" >"$DIR/served.log" 2>&1 ||
	fail "serve with a duration exited with $?"
python3 - "$start" "$(date +%s.%N)" "$DIR/results/served/result.json" <<'PY' || fail "serve.duration: $(tail -5 "$DIR/served.log")"
import json, sys
t0, t1 = float(sys.argv[1]), float(sys.argv[2])
d = json.load(open(sys.argv[3]))
assert d["state"] == "done", d["state"]
assert 0.9 <= d["elapsed_s"] < 3, d["elapsed_s"]
assert t1 - t0 < 15, t1 - t0
PY
# --- psbctl prune: the results written above, all but the newest two, never a directory
# with a file psb did not write; a dry run first
echo "a note" >"$DIR/results/idle/notes.txt"
ls "$DIR/results" >"$DIR/before.txt"
expect_rc 0 "$O" "$E" "$PSBCTL" prune "$DIR/results" --keep 2 --dry-run
grep -q '^would remove ' "$O" && grep -q '^kept idle: it holds "notes.txt", which psb did not write$' "$O" ||
	fail "prune --dry-run: $(cat "$O")"
ls "$DIR/results" | cmp -s - "$DIR/before.txt" || fail "prune --dry-run removed something"
expect_rc 0 "$O" "$E" "$PSBCTL" prune "$DIR/results" --keep 2
python3 - "$DIR/results" "$O" <<'PY' || fail "prune --keep 2: $(cat "$O")"
import os, sys
d = sys.argv[1]
left = sorted(e for e in os.listdir(d) if os.path.isdir(os.path.join(d, e)))
# idle (not psb's alone) and the two newest (served last) stay
assert "idle" in left and "served" in left and len(left) == 3, left
out = open(sys.argv[2]).read()
assert out.splitlines()[-1].startswith("removed ") and "kept 3" in out, out
PY
expect_rc 2 "$O" "$E" "$PSBCTL" prune "$DIR/results"
grep -q "prune: give --keep N, --older-than AGE or both" "$E" || fail "prune without a bound: $(cat "$E")"
expect_rc 2 "$O" "$E" "$PSBCTL" prune "$DIR/results" --older-than 3w
grep -q -- "--older-than: expected an age like 30s, 15m, 12h or 7d, got '3w'" "$E" ||
	fail "prune --older-than 3w: $(cat "$E")"
echo "ctl_runs: idle start, duration with resets, list/status/stop and serve windows agree;" \
	"prune keeps the newest and what psb did not write"
