#!/bin/bash
# One receiver cannot stall psb's multicast: on the namespace testbed (scripts/testbed.sh),
# a psb-mcast sender publishes 20 versions of 4 MB every 0.1 s at 2 Gbit/s to two honest
# receivers (one losing 2 % of what arrives), while a third host joins the group and NACKs
# every symbol of every group of the newest version 3000 times a second
# (scripts/bench/mc_storm.py), first under one receiver id, then under 200.
#
# Each time: the honest receivers hold at least 19 of the 20 versions whole and end on the
# last, every byte checked; the sender sends every version whole on time (its last one
# within half a second of its publication), keeps repairs within their share of the rate,
# counts what it ignored and names the stormer as its busiest NACKer; every NACK it was
# handed is counted once.
#
# usage: test_mcast_storm.sh PATH/psb-mcast TESTBED-SCRIPT STORM-SCRIPT. Needs root and
# nft; 77 without.
set -uo pipefail
MC=$1
TB=$2
STORM=$3
NAME=ms$$
NAME=${NAME:0:8}
GROUP=239.18.0.7:7100
COUNT=20
. "$(dirname "$0")/testbed_env.sh"

testbed_up 4
drop 2 2 7100

# run IDS: one run with a stormer of IDS receiver ids, its files named IDS
run() {
	local ids=$1 h
	local rp=()
	for h in 1 2; do
		on "$h" timeout -k 2 40 "$MC" recv --local "$(addr "$h")" --group "$GROUP" \
			--expect $COUNT --max-time 30 --id "$h" --json "$DIR/r$h-$ids.json" \
			> "$DIR/r$h-$ids.log" 2>&1 &
		rp+=($!)
		PIDS+=($!)
	done
	on 3 timeout -k 2 40 python3 "$STORM" --local "$(addr 3)" --group "$GROUP" \
		--rate 3000 --seconds 4 --ids "$ids" --json "$DIR/storm-$ids.json" \
		> "$DIR/storm-$ids.log" 2>&1 &
	local st=$!
	PIDS+=($st)
	sleep 0.3
	on 0 timeout -k 2 60 "$MC" send --local "$(addr 0):7101" --group "$GROUP" \
		--count $COUNT --data-size 4MB --push-frequency 0.1 --rate 2 --linger 0.5 \
		--json "$DIR/s-$ids.json" > "$DIR/s-$ids.log" 2>&1 ||
		fail "the sender exited with $? (storm of $ids ids)"
	for h in "${rp[@]}"; do wait "$h" || true; done
	wait "$st" || fail "the stormer failed"
	python3 - "$DIR" "$ids" $COUNT "$(addr 3)" <<'PY' || fail "checks (storm of $ids ids)"
import json, re, sys
d, ids, count, storm_ip = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
s = json.load(open(f"{d}/s-{ids}.json"))
st = json.load(open(f"{d}/storm-{ids}.json"))
assert st["nacks"] >= 3000, st
for h in (1, 2):
    r = json.load(open(f"{d}/r{h}-{ids}.json"))
    assert r["ok"] and r["held"] == count and r["bytes_differ"] == 0 and r["crc_fail"] == 0, r
    assert r["completed"] >= count * 0.95, (h, r["completed"])
# every version whole, the last within 0.5 s of its publication
assert s["published"] == count and s["sent_whole"] == count, s
log = open(f"{d}/s-{ids}.log").read()
pub = float(re.findall(r"version %d published .* at ([0-9.]+) s" % count, log)[0])
done = float(re.findall(r"every version sent at ([0-9.]+) s", log)[0])
assert done - pub < 0.5, (pub, done)
# repairs (and their announcements) within their share of the rate, and a burst
wire = (s["repair_parity_pkts"] + s["repair_data_pkts"]) * (8932 + 40 + 42)
assert wire <= s["repair_bps"] / 8 * s["duration_s"] + 2 * 64 * 9014, (wire, s)
# every NACK counted once, every entry of those taken once
bad = sum(s["nack_bad"].values())
assert s["nack_pkts"] == s["nacks"] + s["nack_forged"] + s["nack_superseded"] + bad, s
assert s["nack_entries"] == (s["nack_premature"] + s["nack_over_budget"] + s["nack_merged"]
                             + s["nack_raised"] + s["nack_opened"]), s
# the stormer named, with its ids, held to its budgets (its receivers', its host's)
top = s["nackers"][0]
assert top["addr"] == storm_ip and top["ids"] == int(ids), s["nackers"]
assert s["nack_over_budget"] > 0 and top["over_budget"] > 0, top
print(f"storm of {ids} id(s), {st['nacks']} NACKs: receivers hold {count}, the last sent "
      f"{done - pub:.3f} s after it was published; {s['repair_parity_pkts']} parity + "
      f"{s['repair_data_pkts']} data repairs, {s['nack_over_budget']} entries over budget, "
      f"repairs held {s['repair_limited']} times")
PY
}

run 1
run 200
echo "test_mcast_storm: ok"
