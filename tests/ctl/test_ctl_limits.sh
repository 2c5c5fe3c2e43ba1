#!/bin/bash
# The control plane cannot starve the data plane, whatever its clients do: a client that
# pipelines requests, one that never reads its replies, one that says nothing, too many
# clients, files that are FIFOs, devices, directories or too large. A worker runs a
# rate-limited experiment in run-to-completion mode (one lcore: the control plane's time
# is the data plane's) and must keep its pace; psb must keep answering and count each limit.
PSB=$1
PSBCTL=$2
. "$(dirname "$0")/lib.sh"

counter() {	# SOCK NAME: a control.NAME counter
	ctl "$1" --json counters "control.$2" | jq_ 'd["counters"]'
}

start_pair
grep -q "^psb: control limits: socket 32 clients, 4 requests and 64KiB of input per pass, 1MiB of unread replies, idle 1m; clients' share 3 % of the lcore; files 1MiB; Prometheus 16 connections, 5s per request, 16384 B per request$" \
	"$DIR/worker.log" || fail "no line with the control limits at start"
write_doc "$DIR/long.json" long 100000000 20Mbps results
expect_rc 0 "$O" "$E" ctl "$W" start "$DIR/long.json"
wait_state "$W" running 5
wait_requests 100 10
WPSB=$(pgrep -P "$WORKER_PID" -x psb) || fail "no psb under timeout $WORKER_PID"

# --- 1. a client pipelining 100k requests: the worker keeps sending (the server sees its
# packets without a pause), psb serves others, and the pipelined replies come back whole and
# in order as psb gets to them, not all at once
U=$(rate_over 2)
timeout -k 2 30 python3 "$PROTO" pipeline "$W" 100000 6 "$DIR/pipe.json" "$S" &
PIPE=$!
sleep 1
D=$(rate_over 3)
wait $PIPE || fail "pipelining client failed"
python3 - "$U" "$D" "$DIR/pipe.json" <<'PY' || fail "pipelining starved the data plane"
import json, sys
u, d, p = float(sys.argv[1]), float(sys.argv[2]), json.load(open(sys.argv[3]))
print("pipelining: %.0f requests/s undisturbed, %.0f while %d requests were written and %d "
      "answered; the server received nothing for %.3f s at most" %
      (u, d, p["sent"], p["replies"], p["stall_s"]))
assert p["stall_s"] < 1.0, "the worker stopped sending for %.3f s" % p["stall_s"]
assert d >= 0.8 * u, "worker at %.0f requests/s, %.0f before" % (d, u)
assert p["replies"] > 0 and p["in_order"], p
assert p["sent"] > p["replies"], p
PY
[ "$(counter "$W" socket_deferred)" -gt 0 ] || fail "no pass left requests to the next"
[ "$(counter "$W" throttled_passes)" -gt 0 ] || fail "clients were never held to their share"

# --- 2. a client that never reads: disconnected once its unread replies pass 1 MiB, and
# psb's memory does not follow what it asks for
timeout -k 2 40 python3 "$PROTO" noread "$W" "$WPSB" 20 "$DIR/noread.json" ||
	fail "a client that never reads: $(cat "$DIR/noread.json" 2>/dev/null)"
python3 - "$DIR/noread.json" <<'PY' || fail "memory grew with unread replies"
import json, sys
r = json.load(open(sys.argv[1]))
print("never reading: disconnected after %.2f s and %d requests, psb's RSS %d -> at most %d KiB"
      % (r["closed_after_s"], r["requests"], r["rss_kib"][0], r["rss_kib"][1]))
assert r["rss_kib"][1] - r["rss_kib"][0] < 64 * 1024, r
PY
[ "$(counter "$W" socket_overflows)" -eq 1 ] || fail "overflow not counted once"

# after both, the experiment still runs at its pace and psb answers
A=$(progress | cut -d' ' -f1)
wait_requests $((A + 300)) 10
[ "$(ctl "$W" --json status | jq_ 'd["experiment"]["id"]')" -eq 1 ] || fail "experiment replaced"
expect_rc 0 "$O" "$E" ctl "$W" stop
expect_rc 0 "$O" "$E" ctl "$W" quit
expect_rc 0 "$O" "$E" ctl "$S" quit
wait "$WORKER_PID" || fail "worker exited with $?"
wait "$SERVER_PID" || fail "server exited with $?"
echo "ctl_limits: pipelining and never-reading clients held to their budgets"

# --- 3. a node with small limits, from its document
L=$DIR/l.ctl
cat >"$DIR/limits.json" <<EOF
{"name": "limits", "kind": "serve", "output": {"dir": "results"},
 "node": {"role": "server", "ports": ["null"], "ip": "198.18.0.9", "lcores": "0", "huge": "no",
  "file_prefix": "${PFX}l", "ctl_idle_timeout": "2s", "ctl_clients": 4, "file_max": "4KiB"}}
EOF
timeout -k 5 $LIMIT "$PSB" --config "$DIR/limits.json" --output-dir "$DIR" --wait --ctl "$L" >"$DIR/limits.log" 2>&1 &
PIDS+=($!)
LPID=$!
ctl_ready "$L"
grep -q "control limits: socket 4 clients, .* idle 2s; .* files 4KiB;" "$DIR/limits.log" ||
	fail "limits of the document not in the log: $(grep limits "$DIR/limits.log")"

# a client that says nothing goes after the idle timeout, told why
timeout -k 2 40 python3 "$PROTO" idle "$L" 2 || fail "idle client"
[ "$(counter "$L" socket_idle_closed)" -eq 1 ] || fail "idle close not counted"
# one client more than ctl_clients is told busy, and counted
timeout -k 2 30 python3 "$PROTO" busy "$L" 4 || fail "busy with ctl_clients 4"
[ "$(counter "$L" socket_busy)" -eq 1 ] || fail "busy not counted"
# psbctl watching less often than the idle timeout: let go between samples, it reconnects
expect_rc 0 "$O" "$E" timeout --preserve-status -s INT 7 "$PSBCTL" --ctl "$L" status --watch 3
[ "$(grep -c '^no experiment yet$' "$O")" -ge 2 ] || fail "status --watch 3: $(cat "$O" "$E")"
[ "$(counter "$L" socket_idle_closed)" -ge 2 ] || fail "no idle close under --watch 3"

# files: refused at once, by what they are; psb keeps serving
mkfifo "$DIR/fifo"
mkdir "$DIR/adir"
# a whole document, padded past file_max
python3 -c 'import sys; open(sys.argv[2], "w").write(open(sys.argv[1]).read() + " " * 5000)' \
	"$DIR/limits.json" "$DIR/big.json"
BIG=$(stat -c %s "$DIR/big.json")
refused() {	# refused CMD FILE MESSAGE: psbctl's error line
	local t0=$SECONDS
	expect_rc 1 "$O" "$E" timeout 10 "$PSBCTL" --ctl "$L" raw "{\"cmd\": \"$1\", \"file\": \"$2\"}"
	grep -qxF "psbctl: $3" "$E" || fail "$1 $2: $(cat "$E")"
	[ $((SECONDS - t0)) -le 3 ] || fail "$1 $2 took $((SECONDS - t0)) s"
}
WHY="not a regular file (psb reads documents and command files from regular files only)"
refused load "$DIR/fifo" "invalid: $DIR/fifo: is a FIFO, $WHY"
refused start "$DIR/fifo" "invalid: $DIR/fifo: is a FIFO, $WHY"
refused load /dev/zero "invalid: /dev/zero: is a character device, $WHY"
refused load "$DIR/adir" "invalid: $DIR/adir: is a directory, $WHY"
refused load "$DIR/big.json" "too_large: $DIR/big.json: $BIG bytes, over the limit of 4KiB for \
files psb reads (node.file_max, --file-max)"
[ "$(counter "$L" file_refused)" -eq 5 ] || fail "files refused: $(counter "$L" file_refused)"
# psbctl reads a document itself before sending it: the same rule
expect_rc 2 "$O" "$E" timeout 10 "$PSBCTL" --ctl "$L" start "$DIR/fifo"
grep -qx "psbctl: $DIR/fifo: is a FIFO, $WHY" "$E" || fail "psbctl start FIFO: $(cat "$E")"
expect_rc 0 "$O" "$E" ctl "$L" status
grep -q '^role: server' "$O" || fail "status after refused files: $(cat "$O")"
expect_rc 0 "$O" "$E" ctl "$L" quit
wait "$LPID" || fail "limits psb exited with $?"

# the same files as --config and --check-config: refused at once, exit 2
for f in "$DIR/fifo" /dev/zero "$DIR/adir"; do
	for opt in --config --check-config; do
		expect_rc 2 "$O" "$E" timeout 10 "$PSB" $opt "$f" --no-huge
		grep -q "^psb: $f: is a .*, not a regular file" "$E" || fail "$opt $f: $(cat "$E")"
	done
done
expect_rc 2 "$O" "$E" timeout 10 "$PSB" --check-config "$DIR/big.json" --file-max 1KiB
grep -q "^psb: $DIR/big.json: $BIG bytes, over the limit of 1KiB" "$E" || fail "$(cat "$E")"
expect_rc 2 "$O" "$E" timeout 10 "$PSB" --check-config "$DIR/big.json" --file-max lots
grep -q "^psb: --file-max: expected a size like 1MiB in \[1KiB, 1GiB\], got 'lots'" "$E" ||
	fail "--file-max lots: $(cat "$E")"
expect_rc 0 "$O" "$E" timeout 10 "$PSB" --check-config "$DIR/big.json"
echo "ctl_limits: idle and surplus clients, FIFOs, devices, directories and large files refused"
