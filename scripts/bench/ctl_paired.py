#!/usr/bin/env python3
"""Paired windows for scripts/bench/ctl.sh: does reading counters slow the data plane?

  ctl_paired.py --pairs N --window S [--scrape PSB_SCRAPE] --ctl WORKER.ctl --ctl SERVER.ctl \
      [--hz 10] TARGET...

PSB_SCRAPE is scripts/bench/scrape/'s program, by default this tree's build of it
(build/scripts/bench/scrape/psb-scrape), whichever build of psb is measured.

One experiment runs on the worker for the whole measurement. Windows of S seconds alternate
without and with monitoring (order ABBA..., so a slow drift of the machine cancels out).
In a monitored window psb-scrape reads every TARGET (control sockets, telemetry, Prometheus)
at --hz, and every process writes its experiment's counters file at the same rate (set
live through output.counters_every). Each window records the worker's requests/s and, for
every process, psb's own control-plane counters: the lcore cycles spent serving requests
(main lcore and telemetry threads) and the requests served per export.

Prints one JSON object: the windows, paired ratios, their median with a bootstrap 95 %
interval, the control plane's share of the lcore, and psb-scrape's own CPU time.
"""
import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time

OFF_PERIOD = "3600s"	# counters file "off": the next line in an hour
# the scraper is tooling: this tree's build of it, not the build of psb under test
SCRAPE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                      "build", "scripts", "bench", "scrape", "psb-scrape")


class Ctl:
    def __init__(self, path):
        self.path = path
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.f = self.s.makefile("rw")

    def call(self, req):
        self.f.write(json.dumps(req) + "\n")
        self.f.flush()
        r = json.loads(self.f.readline())
        if not r.get("ok"):
            raise SystemExit("ctl_paired: %s: %s -> %s" % (self.path, req, r))
        return r

    def control(self):
        return self.call({"cmd": "counters", "filter": "control"})["counters"]

    def requests(self):
        return self.call({"cmd": "status"})["experiment"]["pushpull"]["requests"]

    def counters_every(self, period):
        self.call({"cmd": "set", "param": "output.counters_every", "value": period})


def median_ci(values, rounds=2000, seed=1):
    """Median and a percentile-bootstrap 95 % interval (seeded: the same data, the same answer)."""
    rng = random.Random(seed)
    n = len(values)
    meds = sorted(statistics.median(rng.choices(values, k=n)) for _ in range(rounds))
    return statistics.median(values), meds[int(0.025 * rounds)], meds[int(0.975 * rounds) - 1]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pairs", type=int, required=True)
    ap.add_argument("--window", type=float, required=True)
    ap.add_argument("--hz", type=int, default=10)
    ap.add_argument("--scrape", default=os.path.normpath(SCRAPE))
    ap.add_argument("--ctl", action="append", required=True, help="worker first, then servers")
    ap.add_argument("targets", nargs="+")
    a = ap.parse_args()
    if not os.access(a.scrape, os.X_OK):
        raise SystemExit("ctl_paired: no psb-scrape at %s (ninja -C build, or --scrape PATH)" % a.scrape)

    ctls = [Ctl(p) for p in a.ctl]
    worker = ctls[0]
    for c in ctls:
        c.counters_every(OFF_PERIOD)
    scr = subprocess.Popen([a.scrape, "--stdin", "--hz", str(a.hz)] + a.targets,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def scraper(cmd):
        scr.stdin.write(cmd + "\n")
        scr.stdin.flush()

    def snapshot():
        return time.monotonic(), worker.requests(), [c.control() for c in ctls]

    windows = []
    for k in range(a.pairs):
        for phase in (("off", "on") if k % 2 == 0 else ("on", "off")):
            t0, r0, c0 = snapshot()
            if phase == "on":
                for c in ctls:
                    c.counters_every("%gs" % (1.0 / a.hz))
                scraper("on")
            time.sleep(a.window)
            if phase == "on":
                scraper("off")
                for c in ctls:
                    c.counters_every(OFF_PERIOD)
            t1, r1, c1 = snapshot()
            dt = t1 - t0
            procs = []
            for before, after in zip(c0, c1):
                # the counters that count (idle's late buckets and the like are objects)
                d = {k2: after[k2] - before[k2] for k2 in after
                     if k2 != "tsc_hz" and isinstance(after[k2], (int, float))}
                hz = after["tsc_hz"]
                procs.append({
                    "control_pct": 100.0 * (d["main_cycles"] / hz + d["telemetry_cpu_ns"] / 1e9) / dt,
                    "yielded_pct": 100.0 * d["yield_cycles"] / (hz * dt),
                    "served_per_s": {e: d[e + "_requests"] / dt
                                     for e in ("socket", "telemetry", "prometheus")},
                    "file_lines_per_s": d["file_lines"] / dt})
            windows.append({"pair": k, "phase": phase, "seconds": dt,
                            "requests_per_s": (r1 - r0) / dt, "processes": procs})
        print("\r  pair %d/%d" % (k + 1, a.pairs), end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    scraper("quit")
    report = json.loads(scr.stdout.readline())
    scr.wait(timeout=10)

    on = [w for w in windows if w["phase"] == "on"]
    off = [w for w in windows if w["phase"] == "off"]
    ratios = [a_["requests_per_s"] / b["requests_per_s"] for a_, b in zip(on, off)]
    med, lo, hi = median_ci(ratios)
    nproc = len(ctls)

    def mean_of(ws, key):
        return [statistics.mean(w["processes"][i][key] for w in ws) for i in range(nproc)]

    def served(ws):
        return [{e: statistics.mean(w["processes"][i]["served_per_s"][e] for w in ws)
                 for e in ("socket", "telemetry", "prometheus")} for i in range(nproc)]

    out = {
        "window_s": a.window, "pairs": a.pairs, "hz": a.hz, "ctl": a.ctl, "targets": a.targets,
        "windows": windows, "pair_ratios": ratios,
        "median_ratio": med, "ci95": [lo, hi], "mean_ratio": statistics.mean(ratios),
        "requests_per_s": {"off": statistics.median(w["requests_per_s"] for w in off),
                           "on": statistics.median(w["requests_per_s"] for w in on)},
        "control_pct": {"off": mean_of(off, "control_pct"), "on": mean_of(on, "control_pct")},
        "yielded_pct": {"off": mean_of(off, "yielded_pct"), "on": mean_of(on, "yielded_pct")},
        "served_per_s_on": served(on),
        "file_lines_per_s_on": mean_of(on, "file_lines_per_s"),
        "scraper": report,
    }
    # the scrape really happened: every export of every process answered at about --hz
    for i, s in enumerate(out["served_per_s_on"]):
        for e, v in s.items():
            if v < 0.8 * a.hz:
                raise SystemExit("ctl_paired: %s served only %.1f %s requests/s" %
                                 (a.ctl[i], v, e))
    for i, v in enumerate(out["file_lines_per_s_on"]):
        if v < 0.8 * a.hz:
            raise SystemExit("ctl_paired: %s wrote only %.1f counters lines/s" % (a.ctl[i], v))
    if report["errors"] != 0:
        raise SystemExit("ctl_paired: psb-scrape: %d errors, last: %s" %
                         (report["errors"], report["last_error"]))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
