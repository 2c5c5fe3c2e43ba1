#!/usr/bin/env python3
"""Summaries of benchmark runs, from their raw data alone.

    scripts/bench/summarize.py KIND DIR

KIND is pushpull, revs, job, soak or ctl (the script that made DIR). Writes DIR/summary.json and
DIR/summary.md, each whole or not at all, and prints the table. The benchmark scripts call
it when they end; scripts/bench/check_docs.py calls it on every committed run to check that
the committed summaries and the tables in the docs come out of the raw data as they are.
Exit status 1 when the run itself failed (a failed job, a verify error), 2 on bad use.
"""
import csv
import glob
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ctl_paired import median_ci  # noqa: E402


def write_atomic(path, text):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def raw_index(out, pattern):
    """(len, run) pairs of raw/<pattern> files, pattern with (\\d+) for each."""
    found = set()
    for p in glob.glob(os.path.join(out, "raw", "*.json")):
        m = re.fullmatch(pattern, os.path.basename(p))
        if m:
            found.add(tuple(int(g) for g in m.groups()))
    return found


def revs(out):
    """scripts/bench/revs.sh: raw/{a,b}-LEN-PAIR.json, base and head in pairs."""
    idx = raw_index(out, r"[ab]-(\d+)-(\d+)\.json")
    sizes = sorted({s for s, _ in idx}, reverse=True)
    rows = []
    for size in sizes:
        pairs = max(p for s, p in idx if s == size)
        a = [json.load(open(f"{out}/raw/a-{size}-{p}.json")) for p in range(1, pairs + 1)]
        b = [json.load(open(f"{out}/raw/b-{size}-{p}.json")) for p in range(1, pairs + 1)]
        for r in a + b:
            assert r["failed"] == 0, r
        ga = [r["goodput_gbps"] for r in a]
        gb = [r["goodput_gbps"] for r in b]
        ratios = [y / x for x, y in zip(ga, gb)]
        med, lo, hi = median_ci(ratios)
        rows.append({"len": size, "pairs": pairs,
                     "base_gbps_median": statistics.median(ga),
                     "head_gbps_median": statistics.median(gb),
                     "ratio_median": med, "ratio_ci95": [lo, hi],
                     "ratio_min": min(ratios), "ratio_max": max(ratios),
                     "base_retries": sum(r["retries"] for r in a),
                     "head_retries": sum(r["retries"] for r in b)})
    lines = ["| len | pairs | base Gbps (median) | head Gbps (median) | head/base (median of pairs) | 95 % interval | pair range |",
             "|---:|---:|---:|---:|---:|---|---|"]
    for r in rows:
        lines.append(f"| {r['len']} | {r['pairs']} | {r['base_gbps_median']:.2f} | {r['head_gbps_median']:.2f} | "
                     f"{r['ratio_median']:.3f} | [{r['ratio_ci95'][0]:.3f}, {r['ratio_ci95'][1]:.3f}] | "
                     f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f} |")
    return {"rows": rows}, lines, True


def job(out):
    """scripts/bench/job.sh: raw/{psb,kernel}-LEN-RUN-w{0,1}.json; raw/plan.json if there."""
    plan_path = os.path.join(out, "raw", "plan.json")
    if os.path.exists(plan_path):
        plan = json.load(open(plan_path))
        sizes, runs = [int(s) for s in plan["sizes"]], int(plan["runs"])
    else:
        idx = raw_index(out, r"(?:psb|kernel)-(\d+)-(\d+)-w\d\.json")
        sizes = sorted({s for s, _ in idx})
        runs = max(r for _, r in idx)

    def one(tag):
        """Job goodput (both workers), or None when the job did not finish with exact sums."""
        try:
            w = [json.load(open(f"{out}/raw/{tag}-w{i}.json")) for i in (0, 1)]
        except (OSError, ValueError):
            return None
        if any(r["failed"] or r["verify_errors"] or r.get("state", "done") != "done" for r in w):
            return None
        return sum(r["goodput_gbps"] for r in w)

    rows = []
    for size in sizes:
        p = [one(f"psb-{size}-{r}") for r in range(1, runs + 1)]
        k = [one(f"kernel-{size}-{r}") for r in range(1, runs + 1)]
        pairs = [(a, b) for a, b in zip(p, k) if a is not None and b is not None]
        row = {"len": size, "runs": runs,
               "psb_failed": sum(x is None for x in p), "kernel_failed": sum(x is None for x in k)}
        if pairs:
            ratios = [a / b for a, b in pairs]
            med, lo, hi = median_ci(ratios)
            row.update({"psb_gbps_median": statistics.median(a for a, _ in pairs),
                        "kernel_gbps_median": statistics.median(b for _, b in pairs),
                        "ratio_median": med, "ratio_ci95": [lo, hi],
                        "ratio_min": min(ratios), "ratio_max": max(ratios), "pairs": len(pairs)})
        rows.append(row)
    lines = ["| len | pairs | psb job Gbps (median) | kernel job Gbps (median) | psb/kernel (median of pairs) | 95 % interval | pair range | failed psb/kernel |",
             "|---:|---:|---:|---:|---:|---|---|---|"]
    for r in rows:
        if "pairs" in r:
            lines.append(f"| {r['len']} | {r['pairs']} | {r['psb_gbps_median']:.2f} | {r['kernel_gbps_median']:.2f} | "
                         f"{r['ratio_median']:.2f} | [{r['ratio_ci95'][0]:.2f}, {r['ratio_ci95'][1]:.2f}] | "
                         f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f} | {r['psb_failed']}/{r['kernel_failed']} |")
        else:
            lines.append(f"| {r['len']} | 0 | - | - | - | - | - | {r['psb_failed']}/{r['kernel_failed']} |")
    return {"rows": rows}, lines, not any(r["psb_failed"] for r in rows)


def fit(xs, ys):
    """Least-squares slope and r²."""
    n = len(xs)
    if n < 2:
        return 0.0, 0.0
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    sxy = sum((x - mx) * (y - my) for x, y in zip(xs, ys))
    syy = sum((y - my) ** 2 for y in ys)
    b = sxy / sxx if sxx else 0.0
    r2 = sxy * sxy / (sxx * syy) if sxx and syy else 0.0
    return b, r2


def soak(out):
    """scripts/bench/soak.sh: raw/samples.csv, raw/windows.csv, raw/result.json, raw/scrape.json."""
    rows = list(csv.DictReader(open(os.path.join(out, "raw", "samples.csv"))))
    wins = list(csv.DictReader(open(os.path.join(out, "raw", "windows.csv"))))
    w = json.load(open(os.path.join(out, "raw", "result.json")))["rows"][0]
    scrape = json.load(open(os.path.join(out, "raw", "scrape.json")))
    # every window between resets, and the last one (the results)
    tot = {k: sum(int(x[k]) for x in wins) + int(w[k])
           for k in ("requests", "retries", "failed", "verify_errors")}
    tot["resets"] = int(w["resets"])
    tot["windows"] = len(wins) + 1
    last = max(float(r["t_s"]) for r in rows)
    summary = {"minutes": round(last / 60, 1), "worker": tot,
               "scrape": {k: scrape[k] for k in ("rounds", "replies", "errors")}, "rows": []}
    metrics = [("rss_kb", "RSS MB", 1 / 1024), ("fds", "descriptors", 1),
               ("counters_file_bytes", "counters file MB", 1 / 2**20)]
    for proc in ("server", "worker"):
        pts = [(float(r["t_s"]), r) for r in rows if r["process"] == proc]
        late = [(t, r) for t, r in pts if t >= 60]
        for key, label, scale in metrics:
            ys = [int(r[key]) * scale for _, r in pts]
            b, r2 = fit([t / 3600 for t, _ in late], [int(r[key]) * scale for _, r in late])
            summary["rows"].append({"process": proc, "metric": label, "start": ys[0],
                                    "end": ys[-1], "max": max(ys), "slope_per_h": b, "r2": r2})
    lines = ["| process | metric | start | end | max | slope per hour (after 1 min) | r² |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in summary["rows"]:
        lines.append(f"| {r['process']} | {r['metric']} | {r['start']:.1f} | {r['end']:.1f} | "
                     f"{r['max']:.1f} | {r['slope_per_h']:+.2f} | {r['r2']:.2f} |")
    wk = summary["worker"]
    lines.append("")
    lines.append(f"worker, all {wk['windows']} windows between resets: {wk['requests']} requests, "
                 f"{wk['retries']} retries, {wk['failed']} failed, {wk['verify_errors']} verify "
                 f"errors; psb-scrape: "
                 f"{summary['scrape']['rounds']} rounds, {summary['scrape']['errors']} errors")
    ok = wk["failed"] == 0 and wk["verify_errors"] == 0 and summary["scrape"]["errors"] == 0
    return summary, lines, ok



def pushpull(out):
    """scripts/bench/pushpull.sh: raw/{psb,kernel}-SIZE-MODE-RUN.json, the latency and rate
    runs (raw/lat-*, raw/rate-*) and aggbench.json/.txt when it ran them; raw/plan.json
    (sizes, modes, runs in the order run) if there."""
    plan_path = os.path.join(out, "raw", "plan.json")
    if os.path.exists(plan_path):
        plan = json.load(open(plan_path))
        sizes, modes, runs = [str(x) for x in plan["sizes"]], [str(x) for x in plan["modes"]], \
            int(plan["runs"])
    else:
        idx = raw_index(out, r"psb-(\d+)-(\d)-(\d+)\.json")
        sizes = [str(x) for x in sorted({a for a, _, _ in idx})]
        modes = [str(x) for x in sorted({b for _, b, _ in idx})]
        runs = max(c for _, _, c in idx)
    extras = os.path.exists(os.path.join(out, "aggbench.json"))
    names = {"0": "PUSH_THEN_PULL", "1": "PUSH_PULL", "2": "PUSH_ONLY", "3": "PULL_ONLY"}

    def load(tag):
        return [json.load(open(f"{out}/raw/{tag}-{r}.json")) for r in range(1, runs + 1)]

    def med(rs, f):
        return statistics.median(f(x) for x in rs)

    def human(n):
        for u, d in (("MB", 1 << 20), ("KB", 1 << 10)):
            if n >= d and n % d == 0:
                return f"{n // d} {u}"
        return f"{n} B"

    def table(hdr, rows):
        w = [max(len(str(r[i])) for r in [hdr] + rows) for i in range(len(hdr))]

        def line(r):
            return "| " + " | ".join(str(c).rjust(w[i]) for i, c in enumerate(r)) + " |"
        return "\n".join([line(hdr), "|" + "|".join("-" * (x + 2) for x in w) + "|"] +
                         [line(r) for r in rows])

    rows, summary = [], {"runs": runs, "points": []}
    hdr = ("size", "mode", "psb Gbps", "kernel Gbps", "ratio", "psb p50 us", "psb p99 us",
           "kernel p50 us", "kernel p99 us")
    for size in sizes:
        for mode in modes:
            p, k = load(f"psb-{size}-{mode}"), load(f"kernel-{size}-{mode}")
            pt = {
                "size": int(size), "mode": int(mode), "mode_name": names[mode],
                "psb_gbps": med(p, lambda x: x["goodput_gbps"]),
                "kernel_gbps": med(k, lambda x: x["goodput_gbps"]),
                "psb_p50_us": med(p, lambda x: x["rtt_us"]["p50"]),
                "psb_p99_us": med(p, lambda x: x["rtt_us"]["p99"]),
                "kernel_p50_us": med(k, lambda x: x["rtt_us"]["p50"]),
                "kernel_p99_us": med(k, lambda x: x["rtt_us"]["p99"]),
                "psb_failed": sum(x["failed"] for x in p), "psb_retries": sum(x["retries"] for x in p),
            }
            pt["ratio"] = pt["psb_gbps"] / pt["kernel_gbps"] if pt["kernel_gbps"] else float("inf")
            summary["points"].append(pt)
            rows.append((human(int(size)), f"{mode} {names[mode]}", f"{pt['psb_gbps']:.2f}",
                         f"{pt['kernel_gbps']:.2f}", f"{pt['ratio']:.1f}x", f"{pt['psb_p50_us']:.1f}",
                         f"{pt['psb_p99_us']:.1f}", f"{pt['kernel_p50_us']:.1f}",
                         f"{pt['kernel_p99_us']:.1f}"))
    text = ["## Goodput (ps-lite formula: 8 x len x keys x iterations / time), median of %d runs, 40 keys" % runs,
            "", table(hdr, rows), ""]
    if extras:
        lrows = []
        for mode in ("2", "3"):
            p, k = load(f"lat-psb-{mode}"), load(f"lat-kernel-{mode}")
            d = {"mode": names[mode],
                 "psb_p50_us": med(p, lambda x: x["rtt_us"]["p50"]),
                 "psb_p99_us": med(p, lambda x: x["rtt_us"]["p99"]),
                 "kernel_p50_us": med(k, lambda x: x["rtt_us"]["p50"]),
                 "kernel_p99_us": med(k, lambda x: x["rtt_us"]["p99"])}
            summary.setdefault("latency", []).append(d)
            lrows.append((names[mode], f"{d['psb_p50_us']:.1f}", f"{d['psb_p99_us']:.1f}",
                          f"{d['kernel_p50_us']:.1f}", f"{d['kernel_p99_us']:.1f}"))
        text += ["## Round trip of one 64 B request at a time (us), median of runs", "",
                 table(("request", "psb p50", "psb p99", "kernel p50", "kernel p99"), lrows), ""]
        p, k = load("rate-psb"), load("rate-kernel")
        rate = {"psb_ops": med(p, lambda x: x["requests_per_s"]),
                "kernel_ops": med(k, lambda x: x["requests_per_s"])}
        summary["rate_64b"] = rate
        text += ["## 64 B PUSHPULL requests per second, %d keys in flight, one server core" % p[0]["keys"],
                 "", table(("", "psb", "kernel", "ratio"),
                           [("requests/s", f"{rate['psb_ops']:,.0f}", f"{rate['kernel_ops']:,.0f}",
                             f"{rate['psb_ops'] / rate['kernel_ops']:.1f}x")]), ""]
        summary["aggbench"] = json.load(open(f"{out}/aggbench.json"))
        text += ["## Server-side summation vs a plain `a += b` loop (one core, GB/s of gradient input)", "",
                 "```", open(f"{out}/aggbench.txt").read().rstrip(), "```", ""]
    return summary, "\n".join(text).split("\n"), True



def ctl(out):
    """scripts/bench/ctl.sh: raw/paired.json (monitoring against goodput), raw/status-{yield,
    noyield}.json (status latency under load); the value size from raw/plan.json, else from
    the command in ABOUT.txt (--len, default 4096)."""
    plan_path = os.path.join(out, "raw", "plan.json")
    if os.path.exists(plan_path):
        length = int(json.load(open(plan_path))["len"])
    else:
        length = 4096
        for line in open(os.path.join(out, "ABOUT.txt")):
            m = re.match(r"command .*--len (\d+)", line)
            if m:
                length = int(m.group(1))
    p = json.load(open(os.path.join(out, "raw", "paired.json")))
    lat = {t: json.load(open(os.path.join(out, "raw", "status-%s.json" % t)))
           for t in ("yield", "noyield")}
    sc = p["scraper"]
    summary = {"len": length, "paired": {k: v for k, v in p.items() if k != "windows"},
               "status_latency": lat}
    names = ["worker", "server"]
    L = ["| monitoring: every export of both processes at %d Hz | |" % p["hz"], "|---|---|",
         "| worker requests/s, windows without (median) | %.0f |" % p["requests_per_s"]["off"],
         "| worker requests/s, windows with (median) | %.0f |" % p["requests_per_s"]["on"],
         "| paired ratio with / without, median of %d pairs of %g s [95%% CI] | **%.3f** [%.3f, %.3f] |"
         % (p["pairs"], p["window_s"], p["median_ratio"], p["ci95"][0], p["ci95"][1])]
    for i, nm in enumerate(names):
        L.append("| %s lcore time serving the control plane, without → with | %.2f %% → %.2f %% |"
                 % (nm, p["control_pct"]["off"][i], p["control_pct"]["on"][i]))
    L.append("| psb-scrape's own CPU (%d rounds of %d requests) | %.2f %% of one CPU |"
             % (sc["rounds"], len(p["targets"]), 100.0 * sc["cpu_s"] / (p["pairs"] * p["window_s"])))
    L += ["", "| under full load | --yield | n | p50 (ms) | p90 (ms) | p99 (ms) | max (ms) |",
          "|---|---|---|---|---|---|---|"]
    for key, label in (("socket_status", "status on an open control socket"),
                       ("fresh_connection_status", "status on a fresh connection"),
                       ("psbctl_status", "`psbctl status` (whole process)"),
                       ("bin_true", "`/bin/true` started the same way (floor)")):
        for tag, y in (("yield", "200 µs"), ("noyield", "0 (never)")):
            v = lat[tag][key]
            L.append("| %s | %s | %d | %.3f | %.3f | %.3f | %.3f |" %
                     (label, y, v["n"], v["p50_ms"], v["p90_ms"], v["p99_ms"], v["max_ms"]))
    return summary, L, True


KINDS = {"revs": (revs, 2), "job": (job, 2), "soak": (soak, 1), "pushpull": (pushpull, 2), "ctl": (ctl, 2)}


def summarize(kind, out):
    """Write out's summary.json and summary.md; returns (table lines, run ok)."""
    fn, indent = KINDS[kind]
    summary, lines, ok = fn(out)
    write_atomic(os.path.join(out, "summary.json"), json.dumps(summary, indent=indent))
    write_atomic(os.path.join(out, "summary.md"), "\n".join(lines) + "\n")
    return lines, ok


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in KINDS or not os.path.isdir(sys.argv[2]):
        print(f"usage: summarize.py {{{','.join(KINDS)}}} DIR", file=sys.stderr)
        return 2
    lines, ok = summarize(sys.argv[1], sys.argv[2])
    print("\n".join(lines))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
