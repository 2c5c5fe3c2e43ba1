#!/usr/bin/env python3
"""roce_compare.py EXPECT.json ACTUAL.json [--tracked N]: every total and every row that
psb-rocegen expects, exactly, in ACTUAL (a {"totals", "qps"} document: roce_account's, or
psb's "roce_qp" reply). Rows are matched by version, qpn, src and dst; with --tracked N the
actual rows must be N, else exactly the expected ones. Exit 1 naming every difference."""
import json
import sys


def main():
    exp = json.load(open(sys.argv[1]))
    act = json.load(open(sys.argv[2]))
    tracked = None
    if len(sys.argv) > 4 and sys.argv[3] == "--tracked":
        tracked = int(sys.argv[4])
    bad = []

    def cmp(where, e, a):
        if isinstance(e, dict):
            if not isinstance(a, dict):
                bad.append(f"{where}: expected an object, got {a!r}")
                return
            for k, v in e.items():
                if k not in a:
                    bad.append(f"{where}.{k}: missing")
                else:
                    cmp(f"{where}.{k}", v, a[k])
        elif e != a:
            bad.append(f"{where}: expected {e!r}, got {a!r}")

    cmp("totals", exp["totals"], act["totals"])
    key = lambda r: (r["version"], r["qpn"], r["src"], r["dst"])
    rows = {key(r): r for r in act["qps"]}
    for r in exp["qps"]:
        k = key(r)
        if k not in rows:
            bad.append(f"qp {k}: not among the rows")
            continue
        cmp(f"qp {k}", r, rows[k])
    want = tracked if tracked is not None else len(exp["qps"])
    if len(act["qps"]) != want:
        bad.append(f"rows: expected {want}, got {len(act['qps'])}")
    for b in bad:
        print("roce_compare: " + b, file=sys.stderr)
    if bad:
        sys.exit(1)
    print(f"roce_compare: {len(exp['qps'])} queue pairs and the totals as expected")


main()
