#!/bin/bash
# What serving counters costs psb, and psb-scrape reading them: psb counts the requests of
# every export and the cycles they took (control.*); psb-scrape (scripts/bench/scrape)
# reads the control socket, telemetry (each section /psb/counters lists) and Prometheus over
# connections it keeps (Prometheus included: libcurl's keep-alive), takes every reply psb
# gives as good (parsed, not matched), pauses and reports on stdin commands, and names bad
# targets. Polling lcores
# yield by default (--yield) and not with --yield 0. A shorter counters period set live
# applies at once.
source "$(dirname "$0")/common.sh" "$1"
PSBCTL=$2
SCRAPE=$3
[ -x "$PSBCTL" ] && [ -x "$SCRAPE" ] || fail "usage: test_scrape.sh PSB PSBCTL PSB-SCRAPE"

PP=$(free_port)
CTL=$DIR/s.ctl
start_psb server --port null --ip 198.18.0.1 -l 0 --no-huge --file-prefix "$TAG-s" --wait \
	--ctl "$CTL" --prometheus "$PP" --output-dir "$DIR"
SPID=$LAST_PID
wait_http "http://127.0.0.1:$PP/metrics" $SPID
wait_tel "$TAG-s" $SPID
TELSOCK=$RUNDIR/$TAG-s/dpdk_telemetry.v2
# the telemetry sections psb-scrape asks for each round
tel "$TAG-s" /psb/counters > "$DIR/index.json" || fail "telemetry /psb/counters"
control() { "$PSBCTL" --ctl "$CTL" --json counters control; }
control > "$DIR/c0.json" || fail "counters control"

# 1 s at 20 Hz of all three
"$SCRAPE" --hz 20 --seconds 1 "ctl:$CTL" "tel:$TELSOCK" "http:127.0.0.1:$PP" \
	> "$DIR/scrape1.json" 2> "$DIR/scrape1.err" || fail "psb-scrape: $(cat "$DIR/scrape1.err")"
control > "$DIR/c1.json" || fail "counters control"
python3 - "$DIR/scrape1.json" "$DIR/c0.json" "$DIR/c1.json" "$DIR/index.json" <<'PY' \
	|| fail "scrape of all exports"
import json, sys
r = json.load(open(sys.argv[1]))
c0, c1 = (json.load(open(p))["counters"] for p in sys.argv[2:4])
sections = json.load(open(sys.argv[4]))["/psb/counters"]["sections"]
assert set(sections) == {"node", "ports", "roles", "store", "control", "experiment"}, sections
assert 15 <= r["rounds"] <= 22, r
assert r["errors"] == 0 and r["last_error"] == "", r
assert r["replies"] == 3 * r["rounds"], r
# kept-alive connections, Prometheus's too: nothing reopened
assert r["reconnects"] == 0, r
assert r["bytes"] > r["rounds"] * 3000, r
assert 0 < r["cpu_s"] < r["wall_s"] and 0.9 < r["wall_s"] < 2.5, r
d = {k: c1[k] - c0[k] for k in c1 if not isinstance(c1[k], dict)}  # not control.idle
# psb counted every request of every export (its own counters requests included); a
# telemetry round asks each section, after the index when the connection opened
assert d["socket_requests"] == r["rounds"] + 1, (d, r)
assert d["telemetry_requests"] == r["rounds"] * len(sections) + 1, (d, r)
assert d["prometheus_requests"] == r["rounds"], (d, r)
assert d["main_cycles"] > 0 and d["telemetry_cpu_ns"] > 0, d
# what serving took, as a share of the second: well under all of it
assert d["main_cycles"] / c1["tsc_hz"] < 0.5 and d["telemetry_cpu_ns"] < 0.5e9, d
# the lcore gives its CPU away every 200 us by default
assert c1["yields"] > 1000 and c1["yield_cycles"] > 0, c1
PY

# --stdin: paused at first, on, off (nothing more), report, quit
mkfifo "$DIR/cmds"
"$SCRAPE" --stdin --hz 20 "ctl:$CTL" "http:127.0.0.1:$PP" < "$DIR/cmds" > "$DIR/scrape2.json" &
SCRAPE_PID=$!
PIDS+=($SCRAPE_PID)
exec 3> "$DIR/cmds"
# reports: the count of lines in scrape2.json
reports() { wc -l < "$DIR/scrape2.json"; }
# report_wait N: ask for a report, and wait (10 s at most) until there are N
report_wait() {
	local i
	echo report >&3
	for i in $(seq 200); do [ "$(reports)" -ge "$1" ] && return 0; sleep 0.05; done
	fail "psb-scrape --stdin: no report $1 after 10 s"
}
report_wait 1
echo on >&3
# on: rounds come; ask until a report counts 5 of them (10 s at most)
for i in $(seq 2 200); do
	report_wait "$i"
	python3 -c 'import json, sys; sys.exit(json.loads(open(sys.argv[1]).read().splitlines()[-1])["rounds"] < 5)' \
		"$DIR/scrape2.json" && break
	sleep 0.05
done
echo off >&3
report_wait $((i + 1))
# paused: a while later, no more rounds
sleep 0.3
report_wait $((i + 2))
echo quit >&3
exec 3>&-
wait $SCRAPE_PID || fail "psb-scrape --stdin exited with $?"
python3 - "$DIR/scrape2.json" <<'PY' || fail "psb-scrape --stdin"
import json, sys
r = [json.loads(l) for l in open(sys.argv[1])]
assert len(r) >= 4, r
assert r[0]["rounds"] == 0 and r[0]["replies"] == 0, r[0]
# on: the count grows, without errors
on = r[1:-2]
assert all(a["rounds"] <= b["rounds"] for a, b in zip(on, on[1:])), on
assert on[-1]["rounds"] >= 5 and on[-1]["errors"] == 0, on[-1]
# paused: the later reports count no more rounds than the one right after "off"
assert r[-2]["rounds"] == r[-1]["rounds"] >= on[-1]["rounds"], r
PY

# bad targets: refused at start with the argument named; a missing socket is an error per round
rc=0
"$SCRAPE" --seconds 0.2 "ftp:x" > /dev/null 2> "$DIR/bad.err" || rc=$?
[ $rc = 2 ] && grep -q "ftp:x" "$DIR/bad.err" || fail "ftp:x: exit $rc, $(cat "$DIR/bad.err")"
rc=0
"$SCRAPE" --seconds 0.2 "http:127.0.0.1:99999" > /dev/null 2> "$DIR/bad.err" || rc=$?
[ $rc = 2 ] && grep -q "99999" "$DIR/bad.err" || fail "port 99999: exit $rc"
"$SCRAPE" --hz 20 --seconds 0.3 "ctl:$DIR/nope.ctl" > "$DIR/scrape3.json" || fail "missing socket"
python3 - "$DIR/scrape3.json" <<'PY' || fail "missing socket: errors"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["replies"] == 0 and r["errors"] == r["rounds"] >= 4, r
assert "nope.ctl" in r["last_error"], r
PY

# Replies told good or bad: fake control and telemetry sockets answer every request with one
# reply; psb-scrape must count each good one and name what is wrong with each bad one.
python3 - "$SCRAPE" "$DIR" <<'PY' || fail "replies good and bad"
import json, os, socket, subprocess, sys, threading
scrape, d = sys.argv[1], sys.argv[2]

def serve(path, kind, reply):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET if kind == "tel" else socket.SOCK_STREAM)
    s.bind(path)
    s.listen(4)
    def client(c):
        with c:
            if kind == "tel":
                c.send(json.dumps({"version": "x", "pid": 1, "max_output_len": 16384}).encode())
            f = c.makefile("rb") if kind == "ctl" else None
            while True:
                m = f.readline() if f else c.recv(1024)
                if not m:
                    return
                if m == b"/psb/counters":
                    c.send(b'{"/psb/counters": {"sections": {"node": "/psb/node"}}}')
                    continue
                c.sendall(reply + (b"\n" if kind == "ctl" else b""))
    def loop():
        while True:
            c, _ = s.accept()
            threading.Thread(target=client, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()
    return s

big = b"18446744073709551615"
cases = [
    ("ctl", b'{"ok": true, "counters": {"a": ' + big + b', "b": [1.5, null, "x"]}}', None),
    ("ctl", b'{"counters": {"a": {"ok": true}}, "ok": true}', None),
    ("ctl", b'{"ok": true, "counters": {"a": 1}', "reply not JSON"),
    ("ctl", b'{"ok": true, "counters": {"a": 1}, "x": }', "reply not JSON"),
    ("ctl", b'{"ok": true, "counters": [1]}', "not a counters reply"),
    ("ctl", b'{"ok": false, "counters": {}}', "not a counters reply"),
    ("ctl", b'{"ok": "true", "counters": {}}', "not a counters reply"),
    ("ctl", b'{"x": {"ok": true, "counters": {}}}', "not a counters reply"),
    ("ctl", b'[{"ok": true, "counters": {}}]', "not a counters reply"),
    ("ctl", b'{"ok": false, "error": {"code": "busy", "message": "later"}}',
     "psb refused: busy: later"),
    ("tel", b'{"/psb/node": {"role": "server", "rx": ' + big + b'}}', None),
    ("tel", b'{"/psb/node": {"error": "x", "more": 1}}', None),
    ("tel", b'{"/psb/node": {"error": "cannot"}}', "/psb/node: psb refused: cannot"),
    ("tel", b'{"/psb/node": null}', "not a reply to the command"),
    ("tel", b'{"/psb/other": {"a": 1}}', "not a reply to the command"),
    ("tel", b'{"/psb/node": {"a": 1}', "reply not JSON"),
]
for i, (kind, reply, want) in enumerate(cases):
    path = os.path.join(d, "fake%d.sock" % i)
    srv = serve(path, kind, reply)
    out = subprocess.run([scrape, "--hz", "50", "--seconds", "0.2", "%s:%s" % (kind, path)],
                         capture_output=True, text=True, timeout=30)
    srv.close()
    r = json.loads(out.stdout)
    assert r["rounds"] >= 3, (reply, r)
    if want is None:
        assert r["errors"] == 0 and r["replies"] == r["rounds"], (reply, r)
    else:
        assert r["replies"] == 0 and r["errors"] == r["rounds"], (reply, r)
        assert want in r["last_error"], (reply, want, r["last_error"])
print("ok: replies told good or bad: %d cases" % len(cases))
PY

# A counters file at 3600 s: one line at the start; set to 0.1 s, lines come at once.
cat > "$DIR/serve.json" <<EOF
{"name": "scrape-serve", "kind": "serve", "output": {"dir": "results",
 "counters_file": "c.jsonl", "counters_every": "3600s"}}
EOF
"$PSBCTL" --ctl "$CTL" start "$DIR/serve.json" > /dev/null || fail "start serve"
wait_lines "$DIR/results/c.jsonl" 1 $SPID
"$PSBCTL" --ctl "$CTL" set output.counters_every 0.1s > /dev/null || fail "set counters_every"
# 3600 s would have written nothing more; 0.1 s writes lines at once
wait_lines "$DIR/results/c.jsonl" 6 $SPID
"$PSBCTL" --ctl "$CTL" set output.counters_every 3600s > /dev/null || fail "set it back"
python3 - "$DIR/results/c.jsonl" <<'PY' || fail "counters file after set: lines not 0.1 s apart"
import json, sys
t = [json.loads(l)["time"] for l in open(sys.argv[1])]
gaps = sorted(b - a for a, b in zip(t[1:], t[2:]))
assert 0.05 < gaps[len(gaps) // 2] < 0.3, gaps
PY
"$PSBCTL" --ctl "$CTL" stop > /dev/null || fail "stop serve"

# --yield 0: the lcore never yields
start_psb noyield --port null --ip 198.18.0.2 -l 1 --no-huge --file-prefix "$TAG-n" --wait \
	--ctl "$DIR/n.ctl" --yield 0
NPID=$LAST_PID
for _ in $(seq 100); do [ -S "$DIR/n.ctl" ] && break; alive $NPID; sleep 0.1; done
sleep 0.5
y=$("$PSBCTL" --ctl "$DIR/n.ctl" counters control.yields) || fail "counters of --yield 0"
[ "$y" = "control.yields 0" ] || fail "--yield 0: $y"
stop_psb $NPID
rc=0
"$PSB" --port null --ip 198.18.0.3 --no-huge --yield 2000000 > "$DIR/badyield.log" 2>&1 || rc=$?
[ $rc = 2 ] && grep -q -- "--yield" "$DIR/badyield.log" || fail "--yield 2000000: exit $rc"

stop_psb $SPID
echo "scrape: every export counted and read over kept connections; --yield; live period"
