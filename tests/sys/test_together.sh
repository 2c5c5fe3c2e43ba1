#!/bin/bash
# A ps-lite job started as ps-lite users start one: a scheduler, two servers and two workers,
# each in its own namespace on one bridge (af_packet), configured by DMLC_* only (the
# scheduler without DMLC_NODE_HOST), all started at the same moment, with no -l and no
# --no-huge. Every node must come up: they take free hugepages one at a time (the ones that
# no longer fit run without), each polls a CPU no other psb polls or says that it shares
# one, pools are sized to the role (the scheduler's smallest), and PS_VERBOSE=1 shows the
# scheduler's registrations. The workers' sums are exact.
#
# usage: test_together.sh PATH/psb. Needs root; 77 without.
set -uo pipefail
PSB=$1
. "$(dirname "$0")/bridge.sh"
NODES=(0 1 2 3 4)
bridge_test tg 8 "${NODES[@]}"
grep -E 'HugePages_(Total|Free)' /proc/meminfo | tr '\n' ' ' > "$DIR/huge-before"

ROOT=198.18.11.1
# node N: namespace $NSP-N, interface ${NSP}aN; the scheduler is node 0 at $ROOT
start() {	# start N ROLE HOST-IP ARGS...
	local n=$1 role=$2 host=$3
	shift 3
	DMLC_EXTRA=PS_VERBOSE=1 dmlc_exec "$NSP" "$NSP" "$n" "$role" $ROOT "$host" 2 2 \
		timeout -k 5 120 "$PSB" --file-prefix "$PFX$n" "$@" > "$DIR/n$n.log" 2>&1 &
	PIDS+=($!)
}
LEN=4096 REPEAT=50
# all five at once: no node waits for another to be up
start 0 scheduler "" --stats-file "$DIR/sched.json"
start 1 server 198.18.11.2 --stats-file "$DIR/s1.json"
start 2 server 198.18.11.3 --stats-file "$DIR/s2.json"
start 3 worker 198.18.11.10 --verify --results "$DIR/w3.json" $LEN $REPEAT
start 4 worker 198.18.11.11 --verify --results "$DIR/w4.json" $LEN $REPEAT
wait "${PIDS[3]}" || fail "worker 0 exited with $?"
wait "${PIDS[4]}" || fail "worker 1 exited with $?"
for i in 0 1 2; do kill -TERM "${PIDS[$i]}" 2>/dev/null; done
for i in 0 1 2; do wait "${PIDS[$i]}" || fail "node $i exited with $?"; done
PIDS=()

python3 - "$DIR" $LEN $REPEAT <<'PY' || fail "checks"
import glob, json, re, sys
d, length, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
logs = {n: open(f"{d}/n{n}.log").read() for n in range(5)}
# every node up: none lost the hugepage race, each says what it took
mem = {}
for n, t in logs.items():
    assert "Not enough memory" not in t and "EAL initialisation failed" not in t, (n, t[-800:])
    m = re.search(r"psb: (no hugepages|hugepages), (\d+) MB for (\d+) mbufs", t)
    assert m, (n, "no pool line", t[-800:])
    mem[n] = (m.group(1) == "hugepages", int(m.group(2)), int(m.group(3)))
before = open(f"{d}/huge-before").read()
free_mb = int(re.search(r"HugePages_Free:\s+(\d+)", before).group(1)) * 2
taken = sum(mb for huge, mb, _ in mem.values() if huge)
assert taken <= free_mb, ("more hugepages taken than were free", mem, before)
# pools sized to the role: the scheduler's is the smallest, a server's the largest
assert mem[0][2] < mem[3][2] < mem[1][2], mem
# a CPU of its own, or said to be shared; CPUs taken as free are all different
own = []
for n, t in logs.items():
    m = re.search(r"lcore on CPU (\d+)(: no other psb polls it|, which another psb polls too"
                  r"|, claimed by none: a scheduler sleeps)", t)
    assert m, (n, "no CPU line", t[-800:])
    # the scheduler claims no CPU and sleeps; the others claim or share one
    assert (n == 0) == m.group(2).startswith(", claimed by none"), (n, m.group(0))
    if n == 0:
        assert "idle: sleep (control traffic only" in t, (n, "scheduler not asleep", t[-800:])
    if m.group(2).startswith(":"):
        own.append(int(m.group(1)))
    assert f"--lcores={m.group(1)} " in t, (n, "EAL not on that CPU")
assert len(own) == len(set(own)), own
# the scheduler, addressed by DMLC_PS_ROOT_URI alone, tells of every registration
s = logs[0]
assert len(re.findall(r"scheduler: server \S+ registered as rank [01] ", s)) == 2, s
assert len(re.findall(r"scheduler: worker \S+ registered as rank [01] ", s)) == 2, s
assert "scheduler: all 2 server(s) and 2 worker(s) registered" in s, s
sc = json.load(open(f"{d}/sched.json"))["scheduler"]
assert sc["registered"] == 4 and sc["rejected"] == 0 and sc["barriers_released"] > 0, sc
# exact sums
for f in (f"{d}/w3.json", f"{d}/w4.json"):
    w = json.load(open(f))
    assert w["iterations"] == repeat and w["failed"] == 0 and w["verify_errors"] == 0, w
# workers push rank + 1 into every element each round: 1 + 2 from the two of them
for f in ("s1", "s2"):
    st = json.load(open(f"{d}/{f}.json"))["store"]
    assert st["keys"] > 0 and st["value_sum"] == st["keys"] * (length // 4) * repeat * 3, (f, st)
    for k in st["digest"]:
        assert k["round"] == repeat and k["min"] == k["max"] == 3 * repeat, (f, k)
print("pools (huge, MB, mbufs):", mem, "; CPUs taken as free:", own)
PY
echo "together: 5 nodes started at once by DMLC_* alone, all up, exact sums"
