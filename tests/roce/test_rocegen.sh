#!/bin/bash
# The RoCE generator against lib/roce's accounting: what psb-rocegen says its files hold
# (from its own scenario) is what the parser, the ICRC check and the QP table count, exactly;
# a table too small for the QPs evicts and still counts every frame. The comparison itself
# must catch a difference. Every ICRC lib/roce computes (the reference and in place) is the
# one icrc_oracle.py computes from the specification with zlib. psb-rocecost times lib/roce
# over a flood's frames.
set -euo pipefail
GEN=$1 ACCOUNT=$2 COMPARE=$3 COST=$4 ORACLE=$5
DIR=$(mktemp -d)
trap 'rm -rf "$DIR"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

"$GEN" --wire "$DIR/w.pcap" --host "$DIR/h.pcap" --expect "$DIR/e.json" --repeat 5
"$ACCOUNT" --icrc "$DIR/icrc.txt" "$DIR/w.pcap" "$DIR/h.pcap" > "$DIR/a.json"
python3 "$COMPARE" "$DIR/e.json" "$DIR/a.json"
python3 "$ORACLE" "$DIR/icrc.txt" "$DIR/w.pcap" "$DIR/h.pcap"

# every counter is checked: one changed, the comparison fails naming it
python3 - "$DIR/a.json" <<'PY'
import json, sys
a = json.load(open(sys.argv[1]))
a["qps"][0]["ops"]["write"] += 1
a["totals"]["psn_dup"] += 1
json.dump(a, open(sys.argv[1] + ".bad", "w"))
PY
if python3 "$COMPARE" "$DIR/e.json" "$DIR/a.json.bad" 2> "$DIR/cmp.err"; then
	fail "a changed counter was not noticed"
fi
grep -q "totals.psn_dup: expected" "$DIR/cmp.err" || fail "the difference was not named: $(cat "$DIR/cmp.err")"

# 300 more QPs into a table of 64: evicted, counted, every frame still in the totals
"$GEN" --wire "$DIR/w.pcap" --host "$DIR/h.pcap" --expect "$DIR/e.json" --churn 300
"$ACCOUNT" --cap 64 "$DIR/w.pcap" "$DIR/h.pcap" > "$DIR/a.json"
python3 - "$DIR/e.json" "$DIR/a.json" <<'PY'
import json, sys
e, a = (json.load(open(p)) for p in sys.argv[1:3])
t = a["totals"]
new = e["totals"]["qp_new"]
assert t["qp_new"] == new, (t["qp_new"], new)
assert t["qp_evicted"] == new - 64 and t["qp_tracked"] == 64, t
for k in ("v1", "v2_ip4", "v2_ip6", "bytes", "malformed", "icrc_bad", "ops", "naks"):
    assert t[k] == e["totals"][k], (k, t[k], e["totals"][k])
assert len(a["qps"]) == 64
print("eviction: %d QPs into 64, %d evicted, totals whole" % (new, t["qp_evicted"]))
PY
# psb-rocecost: every way timed (what it measures is for the benchmark, not checked here);
# too few frames refused
"$GEN" --wire "$DIR/f.pcap" --host "$DIR/h.pcap" --expect "$DIR/e.json" --flood 256 --qps 8 \
	--max-payload 0
"$COST" --rounds 3 --ms 20 "$DIR/f.pcap" > "$DIR/cost.json"
python3 - "$DIR/cost.json" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
n = c["ns_per_frame"]
assert c["icrc_impl"] in ("vpclmulqdq", "isa-l") and c["frames"] == 256, c
assert c["frame_len"] == 62 and c["rounds"] == 3, c
assert sorted(n) == ["account", "icrc", "icrc_ref", "parse"], n
assert all(0 < v < 1e6 for v in n.values()), n
print("psb-rocecost: %s" % json.dumps(c))
PY
"$GEN" --wire "$DIR/f.pcap" --host "$DIR/h.pcap" --expect "$DIR/e.json" --flood 8 --qps 2
if "$COST" --ms 20 "$DIR/f.pcap" 2> "$DIR/cost.err"; then
	fail "psb-rocecost took 8 frames"
fi
grep -q "8 frames, at least 32 needed" "$DIR/cost.err" || fail "$(cat "$DIR/cost.err")"
# a frame longer than psb passes is refused, not held: the file's own lengths bound nothing
python3 - "$DIR/long.pcap" <<'PY'
import struct, sys
with open(sys.argv[1], "wb") as f:
    f.write(struct.pack("<IHHiIII", 0xa1b2c3d4, 2, 4, 0, 0, 262144, 1))
    for n in (64, 64, 9217):
        f.write(struct.pack("<IIII", 0, 0, n, n) + bytes(n))
PY
if "$COST" --ms 20 "$DIR/long.pcap" 2> "$DIR/cost.err"; then
	fail "psb-rocecost took a frame of 9217 bytes"
fi
grep -q "frame 3 is 9217 bytes, psb passes at most 9216" "$DIR/cost.err" ||
	fail "$(cat "$DIR/cost.err")"
echo "PASS"
