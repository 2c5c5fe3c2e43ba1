#!/bin/bash
# --counters-file: a JSON line of every counter each --counters-every (0.2 s here), one more
# at exit, appended to what the file held; a file that cannot be opened is refused.
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
        assert set(d) == {"time", "counters"}, (what, no, sorted(d))
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
echo "counters file: ok"
