#!/bin/bash
# --counters-file: a JSON line of every counter each --counters-every (0.2 s here), one more
# at exit, appended to what the file held; a file that cannot be opened is refused; a file
# renamed away is started again at its path; --counters-max moves it to FILE.1 by size.
source "$(dirname "$0")/common.sh" "$1"
F=$DIR/counters.jsonl

start_psb run1 --port null --ip 198.18.0.1 -l 0 --no-huge --file-prefix "$TAG-a" --wait \
	--counters-file "$F" --counters-every 0.2
PID=$LAST_PID
wait_lines "$F" 8 $PID
N1=$(wc -l <"$F")
stop_psb $PID
N2=$(wc -l <"$F")
[ "$N2" -gt "$N1" ] || fail "no line at exit ($N1 lines before SIGTERM, $N2 after)"
cp "$F" "$DIR/run1.jsonl"

# a second process appends to the same file
start_psb run2 --port null --ip 198.18.0.1 -l 0 --no-huge --file-prefix "$TAG-b" --wait \
	--counters-file "$F" --counters-every 0.2
PID=$LAST_PID
wait_lines "$F" $((N2 + 3)) $PID
stop_psb $PID

python3 - "$DIR/run1.jsonl" "$F" <<'PY' || fail "counters lines"
import json, sys

run1 = open(sys.argv[1]).read().splitlines()
both = open(sys.argv[2]).read().splitlines()
assert both[:len(run1)] == run1, "the second process did not append"
# a first line at once, periodic ones (the test waited for 8 lines in all), one at exit
assert len(run1) >= 9, len(run1)


def check(lines, what):
    prev_t = prev_up = prev_rx = None
    times = []
    for no, line in enumerate(lines, 1):
        d = json.loads(line)
        assert set(d) == {"time", "psb_version", "git_revision", "counters"}, (what, no, sorted(d))
        # what wrote it, on every line: a rotated or cut file still says
        assert d["psb_version"] and d["git_revision"] == json.loads(lines[0])["git_revision"]
        c = d["counters"]
        assert set(c) == {"node", "ports", "roles", "store", "control", "experiment"}, \
            (what, no, sorted(c))
        # each line counts the lines written before it
        assert c["control"]["file_lines"] == no - 1, (what, no, c["control"])
        assert c["node"]["role"] == "server" and c["ports"]["0"]["spec"] == "null", (what, no)
        t, up, rx = d["time"], c["node"]["uptime_s"], c["roles"]["rx0"]["rx_pkts"]
        if prev_t is not None:
            assert t > prev_t and up > prev_up and rx >= prev_rx, (what, no, t, prev_t)
        prev_t, prev_up, prev_rx = t, up, rx
        times.append(t)
    gaps = sorted(b - a for a, b in zip(times, times[1:-1]))
    # the periodic lines are 0.2 s apart (the one at exit comes when it comes)
    assert 0.15 < gaps[len(gaps) // 2] < 0.3, (what, gaps)
    return times


t1 = check(run1, "run 1")
t2 = check(both[len(run1):], "run 2")
assert t2[0] > t1[-1]
print("counters file: %d lines over %.2f s, then %d more from a second process" %
      (len(run1), t1[-1] - t1[0], len(both) - len(run1)))
PY

# a file that cannot be opened: exit code 2 and the option in the message
rc=0
start_psb bad --port null --ip 198.18.0.1 -l 0 --no-huge --file-prefix "$TAG-c" --wait \
	--counters-file "$DIR/no/such/dir/c.jsonl"
wait $LAST_PID || rc=$?
[ $rc = 2 ] || fail "unopenable --counters-file: exit code $rc, not 2"
grep -q -- "--counters-file $DIR/no/such/dir/c.jsonl: cannot open: No such file or directory" \
	"$DIR/bad.log" || fail "unopenable --counters-file: no message"
# renamed away while psb writes (logrotate's way): the next line starts a new file, the
# renamed one grows no more
F=$DIR/rot.jsonl
start_psb rename --port null --ip 198.18.0.1 -l 0 --no-huge --file-prefix "$TAG-d" --wait \
	--counters-file "$F" --counters-every 0.05
PID=$LAST_PID
wait_lines "$F" 3 $PID
grep -q -- "--counters-file $F: a line every 50ms; moved to $F.1 at 64MiB (--counters-max), opened again if renamed or removed" \
	"$DIR/rename.log" || fail "no line at start saying where the counters go and how big"
mv "$F" "$F.old"
N=$(wc -l <"$F.old")
wait_lines "$F" 3 $PID
[ "$(wc -l <"$F.old")" -le $((N + 1)) ] || fail "the renamed file still grows"
python3 - "$F" <<'PY' || fail "file_reopens after a rename"
import json, sys
last = json.loads(open(sys.argv[1]).read().splitlines()[-1])
assert last["counters"]["control"]["file_reopens"] >= 1, last["counters"]["control"]
PY
stop_psb $PID

# --counters-max: the file goes to FILE.1 before it passes the size, one old file is kept
F=$DIR/max.jsonl
start_psb max --port null --ip 198.18.0.1 -l 0 --no-huge --file-prefix "$TAG-e" --wait \
	--counters-file "$F" --counters-every 0.01 --counters-max 64KiB
PID=$LAST_PID
for _ in $(seq 200); do
	alive $PID
	[ -f "$F.1" ] && grep -q '"file_rotations":[2-9]' "$F" 2>/dev/null && break
	sleep 0.05
done
stop_psb $PID
python3 - "$F" <<'PY' || fail "--counters-max"
import json, os, sys
f = sys.argv[1]
for p in (f, f + ".1"):
    assert os.path.getsize(p) <= 64 << 10, (p, os.path.getsize(p))
    lines = open(p).read().splitlines()
    assert lines and all(json.loads(l)["counters"] for l in lines), p
last = json.loads(open(f).read().splitlines()[-1])["counters"]["control"]
assert last["file_rotations"] >= 2 and last["file_reopens"] == 0, last
PY
[ ! -e "$F.2" ] || fail "more than one old counters file kept"
echo "counters file: ok"
