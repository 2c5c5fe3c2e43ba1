#!/usr/bin/env python3
"""Summaries of benchmark runs, from their raw data alone.

    scripts/bench/summarize.py KIND DIR

KIND is pushpull, revs, job, soak, ctl, ctl_hostile, mc_emu, mc_send, staleness,
passthrough, mc_storm, client, rpcps or sweep (the script that made DIR). Reads DIR's raw data (raw.tar.xz, or raw/ of a run
that was stopped: rawdata.py), writes DIR/summary.json and DIR/summary.md (and plots), each
whole or not at all, and prints the table. The benchmark scripts call
it when they end; scripts/bench/check_docs.py calls it on every committed run to check that
the committed summaries and the tables in the docs come out of the raw data as they are.
Exit status 1 when the run itself failed (a failed job, a verify error), 2 on bad use.
"""
import json
import os
import re
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ctl_paired import median_ci  # noqa: E402
from rawdata import Raw  # noqa: E402


def write_atomic(path, text):
    """Summaries, plots, the docs' tables: whole or not at all (path + ".tmp", renamed)."""
    with open(path + ".tmp", "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def raw_index(raw, pattern):
    """The numbers in the names of the raw files pattern matches, a tuple each (pattern with
    (\\d+) for each)."""
    return {tuple(int(g) for g in m.groups()) for _, m in raw.match(pattern)}


def about_line(out, word):
    """The rest of ABOUT.txt's line that starts with word, or None."""
    for line in open(os.path.join(out, "ABOUT.txt")):
        if line.startswith(word + " "):
            return line.split(None, 1)[1].strip()
    return None


def about_revision(out):
    """The revision a run measured, as its ABOUT.txt says ("unknown" when it does not)."""
    return about_line(out, "revision") or "unknown"


def paired(p, k, f):
    """Ratios f(p[r]) / f(k[r]) over the pairs of runs (psb/kernel, head/base): their median,
    bootstrap 95 % interval and range."""
    ratios = [f(a) / f(b) if f(b) else float("inf") for a, b in zip(p, k)]
    med, lo, hi = median_ci(ratios)
    return {"median": med, "ci95": [lo, hi], "min": min(ratios), "max": max(ratios)}


def revs(out):
    """scripts/bench/revs.sh: raw/{a,b}-LEN-PAIR.json, base and head in pairs."""
    raw = Raw(out)
    idx = raw_index(raw, r"[ab]-(\d+)-(\d+)\.json")
    sizes = sorted({s for s, _ in idx}, reverse=True)
    rows = []
    for size in sizes:
        pairs = max(p for s, p in idx if s == size)
        a = [raw.json(f"a-{size}-{p}.json") for p in range(1, pairs + 1)]
        b = [raw.json(f"b-{size}-{p}.json") for p in range(1, pairs + 1)]
        for r in a + b:	# revs.sh stops at a run that fails
            assert r["failed"] == 0 and r.get("state", "done") == "done", r
        ratio = paired(b, a, lambda r: r["goodput_gbps"])
        rows.append({"len": size, "pairs": pairs,
                     "base_gbps_median": statistics.median(r["goodput_gbps"] for r in a),
                     "head_gbps_median": statistics.median(r["goodput_gbps"] for r in b),
                     "ratio_median": ratio["median"], "ratio_ci95": ratio["ci95"],
                     "ratio_min": ratio["min"], "ratio_max": ratio["max"],
                     "base_retries": sum(r["retries"] for r in a),
                     "head_retries": sum(r["retries"] for r in b)})
    lines = ["| len | pairs | base Gbps (median) | head Gbps (median) | head/base (median of pairs) | 95 % interval | pair range | retried base/head |",
             "|---:|---:|---:|---:|---:|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['len']} | {r['pairs']} | {r['base_gbps_median']:.2f} | {r['head_gbps_median']:.2f} | "
                     f"{r['ratio_median']:.3f} | [{r['ratio_ci95'][0]:.3f}, {r['ratio_ci95'][1]:.3f}] | "
                     f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f} | {r['base_retries']}/{r['head_retries']} |")
    return {"rows": rows}, lines, True


def job(out):
    """scripts/bench/job.sh: raw/{psb,kernel,pslite}-LEN-RUN-wN.json; raw/plan.json if there.
    A plan that names its systems (servers, workers, port, loss) gets the table of several
    systems; an older run (2 servers, 2 workers, psb and kernel) the table it was published
    with."""
    raw = Raw(out)
    plan = raw.json("plan.json") if raw.has("plan.json") else None
    if plan is not None:
        sizes, runs = [int(s) for s in plan["sizes"]], int(plan["runs"])
    else:
        idx = raw_index(raw, r"(?:psb|kernel)-(\d+)-(\d+)-w\d\.json")
        sizes = sorted({s for s, _ in idx})
        runs = max(r for _, r in idx)
    nworkers = int(plan.get("workers", 2)) if plan else 2
    systems = plan.get("systems", ["psb", "kernel"]) if plan else ["psb", "kernel"]
    if isinstance(systems, str):
        systems = [systems]

    def load(tag):
        """Every worker's results, or None when one of them wrote none."""
        try:
            return [raw.json(f"{tag}-w{i}.json") for i in range(nworkers)]
        except (OSError, ValueError):
            return None

    def one(tag):
        """Job goodput (all workers), or None when the job did not finish with exact sums."""
        w = load(tag)
        if w is None or any(r["failed"] or r["verify_errors"] or r.get("state", "done") != "done"
                            for r in w):
            return None
        return sum(r["goodput_gbps"] for r in w)

    def retried(tag):
        """Requests the job's workers sent again after a timeout."""
        return sum(r["retries"] for r in load(tag) or [])

    rows = []
    for size in sizes:
        got = {s: [one(f"{s}-{size}-{r}") for r in range(1, runs + 1)] for s in systems}
        p, k = got["psb"], got["kernel"]
        pairs = [(a, b) for a, b in zip(p, k) if a is not None and b is not None]
        row = {"len": size, "runs": runs,
               "psb_failed": sum(x is None for x in p), "kernel_failed": sum(x is None for x in k),
               "psb_retries": sum(retried(f"psb-{size}-{r}") for r in range(1, runs + 1)),
               "kernel_retries": sum(retried(f"kernel-{size}-{r}") for r in range(1, runs + 1))}
        if pairs:
            ratio = paired([a for a, _ in pairs], [b for _, b in pairs], lambda x: x)
            row.update({"psb_gbps_median": statistics.median(a for a, _ in pairs),
                        "kernel_gbps_median": statistics.median(b for _, b in pairs),
                        "ratio_median": ratio["median"], "ratio_ci95": ratio["ci95"],
                        "ratio_min": ratio["min"], "ratio_max": ratio["max"],
                        "pairs": len(pairs)})
        if "pslite" in systems:
            q = got["pslite"]
            row["pslite_failed"] = sum(x is None for x in q)
            lpairs = [(a, b) for a, b in zip(p, q) if a is not None and b is not None]
            if lpairs:
                lr = paired([a for a, _ in lpairs], [b for _, b in lpairs], lambda x: x)
                row.update({"pslite_gbps_median": statistics.median(b for _, b in lpairs),
                            "pslite_ratio_median": lr["median"], "pslite_ratio_ci95": lr["ci95"],
                            "pslite_ratio_min": lr["min"], "pslite_ratio_max": lr["max"],
                            "pslite_pairs": len(lpairs)})
        rows.append(row)
    ok = not any(r["psb_failed"] for r in rows)
    if plan is None or "systems" not in plan:
        lines = ["| len | pairs | psb job Gbps (median) | kernel job Gbps (median) | psb/kernel (median of pairs) | 95 % interval | pair range | retried psb/kernel | failed runs psb/kernel |",
                 "|---:|---:|---:|---:|---:|---|---|---|---|"]
        for r in rows:
            tail = f"{r['psb_retries']}/{r['kernel_retries']} | {r['psb_failed']}/{r['kernel_failed']} |"
            if "pairs" in r:
                lines.append(f"| {r['len']} | {r['pairs']} | {r['psb_gbps_median']:.2f} | {r['kernel_gbps_median']:.2f} | "
                             f"{r['ratio_median']:.2f} | [{r['ratio_ci95'][0]:.2f}, {r['ratio_ci95'][1]:.2f}] | "
                             f"{r['ratio_min']:.2f}-{r['ratio_max']:.2f} | " + tail)
            else:
                lines.append(f"| {r['len']} | 0 | - | - | - | - | - | " + tail)
        return {"rows": rows}, lines, ok

    shape = {"servers": int(plan["servers"]), "workers": nworkers, "port": plan["port"],
             "loss_pct": float(plan["loss"]), "mtu": int(plan["mtu"]), "systems": systems}
    lite = "pslite" in systems
    head = ("| len | runs | psb Gbps per worker | kernel | " + ("ps-lite | " if lite else "") +
            "psb/kernel (median, 95 % interval) | " + ("psb/ps-lite (median, 95 % interval) | " if lite else "") +
            "retried psb/kernel | failed runs psb/kernel" + ("/ps-lite" if lite else "") + " |")
    lines = [f"{shape['servers']} server(s) + {nworkers} worker(s), psb on {shape['port']}, MTU {shape['mtu']}, "
             f"{shape['loss_pct']:g} % loss each way on the first server's link; goodput per worker "
             "(the job's over the workers), medians over runs", "", head,
             "|" + "---:|" * (5 + 2 * lite) + "---|---|"]

    def cell(r, key, scale=1.0):
        return f"{r[key] / scale:.2f}" if key in r else "-"

    def ratio(r, pre):
        if pre + "ratio_median" not in r:
            return "-"
        return (f"{r[pre + 'ratio_median']:.2f} [{r[pre + 'ratio_ci95'][0]:.2f}, "
                f"{r[pre + 'ratio_ci95'][1]:.2f}]")

    for r in rows:
        cells = [str(r["len"]), str(runs), cell(r, "psb_gbps_median", nworkers),
                 cell(r, "kernel_gbps_median", nworkers)]
        if lite:
            cells.append(cell(r, "pslite_gbps_median", nworkers))
        cells.append(ratio(r, ""))
        if lite:
            cells.append(ratio(r, "pslite_"))
        cells.append(f"{r['psb_retries']}/{r['kernel_retries']}")
        cells.append(f"{r['psb_failed']}/{r['kernel_failed']}" +
                     (f"/{r['pslite_failed']}" if lite else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return {"shape": shape, "rows": rows}, lines, ok


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
    raw = Raw(out)
    rows = raw.csv("samples.csv")
    wins = raw.csv("windows.csv")
    w = raw.json("result.json")["rows"][0]
    scrape = raw.json("scrape.json")
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
    lines += ["", "| worker windows between resets | requests | retried | failed | verify errors "
              "| psb-scrape rounds | scrape errors |", "|---:|---:|---:|---:|---:|---:|---:|",
              f"| {wk['windows']} | {wk['requests']} | {wk['retries']} | {wk['failed']} | "
              f"{wk['verify_errors']} | {summary['scrape']['rounds']} | {summary['scrape']['errors']} |"]
    ok = wk["failed"] == 0 and wk["verify_errors"] == 0 and summary["scrape"]["errors"] == 0
    return summary, lines, ok



def human_size(n):
    for u, d in (("MB", 1 << 20), ("KB", 1 << 10)):
        if n >= d and n % d == 0:
            return f"{n // d} {u}"
    return f"{n} B"


def md_table(hdr, rows):
    """A Markdown table, padded: the first column (names) left-aligned, the others right."""
    w = [max(len(str(r[i])) for r in [hdr] + rows) for i in range(len(hdr))]

    def line(r):
        return "| " + " | ".join(str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i])
                                 for i, c in enumerate(r)) + " |"
    return "\n".join([line(hdr), "|" + "|".join("-" * (x + 2) for x in w) + "|"] +
                     [line(r) for r in rows])


def fmt_ratio(r, prec=2):
    return f"{r['median']:.{prec}f} [{r['ci95'][0]:.{prec}f}, {r['ci95'][1]:.{prec}f}]"


def cdf_median(runs):
    """The round-trip CDF of several runs: at each percentile, the median of the runs' values
    (rtt_us.cdf); None when the runs predate it."""
    cdfs = [r["rtt_us"].get("cdf") for r in runs]
    if not cdfs or any(not c for c in cdfs):
        return None
    return [(c[0], statistics.median(x[i][1] for x in cdfs)) for i, c in enumerate(cdfs[0])]


# What pushpull.sh was built to show (BENCHMARKS.md, "The figures asked for").
TARGETS = {"4k_gbps": 20.0, "1m_gbps": 35.0, "rtt_p50_us": 10.0, "rtt_p99_us": 30.0,
           "rate_ops": 5e6, "agg_share": 0.80, "1m_pslite": 2.2}


def pushpull(out):
    """scripts/bench/pushpull.sh: raw/{psb,kernel}-SIZE-MODE-RUN.json, the latency and rate
    runs (raw/lat-*, raw/rate-*) and aggbench.json/.txt when it ran them; raw/plan.json
    (sizes, modes, runs in the order run) if there. Run r of psb and run r of the kernel
    baseline ran one after the other: they are a pair. Also draws goodput.svg (goodput
    against size, per mode) and rtt_cdf.svg (round-trip CDFs) from the same data."""
    raw = Raw(out)
    if raw.has("plan.json"):
        plan = raw.json("plan.json")
        sizes, modes, runs = [str(x) for x in plan["sizes"]], [str(x) for x in plan["modes"]], \
            int(plan["runs"])
    else:
        idx = raw_index(raw, r"psb-(\d+)-(\d)-(\d+)\.json")
        sizes = [str(x) for x in sorted({a for a, _, _ in idx})]
        modes = [str(x) for x in sorted({b for _, b, _ in idx})]
        runs = max(c for _, _, c in idx)
    extras = raw.has("aggbench.json")
    pslite = raw.has(f"pslite-{sizes[0]}-{modes[0]}-1.json")
    names = {"0": "PUSH_THEN_PULL", "1": "PUSH_PULL", "2": "PUSH_ONLY", "3": "PULL_ONLY"}

    def load(tag):
        return [raw.json(f"{tag}-{r}.json") for r in range(1, runs + 1)]

    def med(rs, f):
        return statistics.median(f(x) for x in rs)

    def gbps(x):
        return x["goodput_gbps"]

    def count(rs, key):
        """Requests retried or failed over the runs; a run that did not end "done" is a
        failed run (its worker could not finish)."""
        return sum(x[key] for x in rs)

    rows, spread, summary = [], [], {"runs": runs, "points": []}
    hdr = ("size", "mode", "psb Gbps", "kernel Gbps", "psb/kernel, median of pairs [95 % CI]",
           "pair range", "psb p50 / p99 us", "kernel p50 / p99 us", "retried psb / kernel",
           "failed psb / kernel")
    loaded = {}
    for size in sizes:
        for mode in modes:
            p, k = load(f"psb-{size}-{mode}"), load(f"kernel-{size}-{mode}")
            loaded[size, mode] = (p, k)
            pt = {
                "size": int(size), "mode": int(mode), "mode_name": names[mode],
                "psb_gbps": med(p, gbps), "kernel_gbps": med(k, gbps),
                "psb_gbps_range": [min(map(gbps, p)), max(map(gbps, p))],
                "kernel_gbps_range": [min(map(gbps, k)), max(map(gbps, k))],
                "ratio": paired(p, k, gbps),
                "psb_p50_us": med(p, lambda x: x["rtt_us"]["p50"]),
                "psb_p99_us": med(p, lambda x: x["rtt_us"]["p99"]),
                "kernel_p50_us": med(k, lambda x: x["rtt_us"]["p50"]),
                "kernel_p99_us": med(k, lambda x: x["rtt_us"]["p99"]),
                "psb_retries": count(p, "retries"), "kernel_retries": count(k, "retries"),
                "psb_failed": count(p, "failed"), "kernel_failed": count(k, "failed"),
                "psb_runs_not_done": sum(x.get("state", "done") != "done" for x in p),
                "kernel_runs_not_done": sum(x.get("state", "done") != "done" for x in k),
                "psb_verify_errors": count(p, "verify_errors"),
                "kernel_verify_errors": count(k, "verify_errors"),
            }
            if pslite:
                q = load(f"pslite-{size}-{mode}")
                pt.update({"pslite_gbps": med(q, gbps),
                           "pslite_gbps_range": [min(map(gbps, q)), max(map(gbps, q))],
                           "ratio_pslite": paired(p, q, gbps)})
            summary["points"].append(pt)
            r = pt["ratio"]
            rows.append((human_size(int(size)), f"{mode} {names[mode]}", f"{pt['psb_gbps']:.2f}",
                         f"{pt['kernel_gbps']:.2f}", fmt_ratio(r), f"{r['min']:.1f}-{r['max']:.1f}",
                         f"{pt['psb_p50_us']:.1f} / {pt['psb_p99_us']:.1f}",
                         f"{pt['kernel_p50_us']:.1f} / {pt['kernel_p99_us']:.1f}",
                         f"{pt['psb_retries']} / {pt['kernel_retries']}",
                         f"{pt['psb_failed'] + pt['psb_runs_not_done']} / "
                         f"{pt['kernel_failed'] + pt['kernel_runs_not_done']}"))
            spread.append((human_size(int(size)), f"{mode} {names[mode]}",
                           "%.2f-%.2f" % tuple(pt["psb_gbps_range"]),
                           "%.2f-%.2f" % tuple(pt["kernel_gbps_range"])))
    text = ["## Goodput (ps-lite formula: 8 x len x keys x iterations / time), median of %d "
            "runs, 40 keys; run r of psb and of the kernel baseline are a pair" % runs, "",
            md_table(hdr, rows), "",
            "Retried: requests sent again after a timeout; failed: requests given up on, and "
            "runs that did not end.", "",
            "## Spread: goodput of the slowest and the fastest run (Gbps)", "",
            md_table(("size", "mode", "psb", "kernel"), spread), ""]
    lat = {}
    if extras:
        lrows = []
        for mode in ("2", "3"):
            p, k = load(f"lat-psb-{mode}"), load(f"lat-kernel-{mode}")
            lat[mode] = (p, k)
            d = {"mode": names[mode],
                 "psb_p50_us": med(p, lambda x: x["rtt_us"]["p50"]),
                 "psb_p99_us": med(p, lambda x: x["rtt_us"]["p99"]),
                 "kernel_p50_us": med(k, lambda x: x["rtt_us"]["p50"]),
                 "kernel_p99_us": med(k, lambda x: x["rtt_us"]["p99"]),
                 "p50_ratio": paired(p, k, lambda x: x["rtt_us"]["p50"]),
                 "retries": [count(p, "retries"), count(k, "retries")],
                 "failed": [count(p, "failed"), count(k, "failed")]}
            summary.setdefault("latency", []).append(d)
            lrows.append((names[mode], f"{d['psb_p50_us']:.1f}", f"{d['psb_p99_us']:.1f}",
                          f"{d['kernel_p50_us']:.1f}", f"{d['kernel_p99_us']:.1f}",
                          fmt_ratio(d["p50_ratio"], 3),
                          "%d / %d" % tuple(d["retries"]), "%d / %d" % tuple(d["failed"])))
        text += ["## Round trip of one 64 B request at a time (us), median of runs", "",
                 md_table(("request", "psb p50", "psb p99", "kernel p50", "kernel p99",
                           "psb/kernel p50, median of pairs [95 % CI]", "retried psb / kernel",
                           "failed psb / kernel"), lrows), ""]
        p, k = load("rate-psb"), load("rate-kernel")
        rate = {"psb_ops": med(p, lambda x: x["requests_per_s"]),
                "kernel_ops": med(k, lambda x: x["requests_per_s"]),
                "ratio": paired(p, k, lambda x: x["requests_per_s"]),
                "retries": [count(p, "retries"), count(k, "retries")],
                "failed": [count(p, "failed"), count(k, "failed")]}
        summary["rate_64b"] = rate
        text += ["## 64 B PUSHPULL requests per second, %d keys in flight, one server core" % p[0]["keys"],
                 "", md_table(("", "psb", "kernel", "psb/kernel, median of pairs [95 % CI]",
                               "retried psb / kernel", "failed psb / kernel"),
                              [("requests/s", f"{rate['psb_ops']:,.0f}", f"{rate['kernel_ops']:,.0f}",
                                fmt_ratio(rate["ratio"]), "%d / %d" % tuple(rate["retries"]),
                                "%d / %d" % tuple(rate["failed"]))]), ""]
        agg = raw.json("aggbench.json")
        summary["aggbench"] = agg
        text += ["## Server-side summation vs a plain `a += b` loop (one core, GB/s of gradient input)", "",
                 "```", raw.text("aggbench.txt").rstrip(), "```", ""]
        text += targets_table(summary, agg)
        text += headline_table(summary)
    if pslite:
        # last, so that the tables before keep their places (docs name them by number)
        prows = [(human_size(x["size"]), f"{x['mode']} {x['mode_name']}", f"{x['psb_gbps']:.2f}",
                  f"{x['pslite_gbps']:.2f}", "%.2f-%.2f" % tuple(x["pslite_gbps_range"]),
                  fmt_ratio(x["ratio_pslite"])) for x in summary["points"]]
        text += ["## psb against ps-lite itself (ZeroMQ/TCP on loopback, the same workload, "
                 "same CPUs), median of %d runs; run r of each is a pair" % runs, "",
                 md_table(("size", "mode", "psb Gbps", "ps-lite Gbps", "ps-lite range",
                           "psb/ps-lite, median of pairs [95 % CI]"), prows), ""]
    plots = pushpull_plots(out, sizes, modes, names, summary, loaded, lat)
    if plots:
        text += ["Plots: " + ", ".join(f"[{f}]({f})" for f in plots), ""]
    return summary, "\n".join(text).split("\n"), True


def targets_table(summary, agg):
    """The figures pushpull.sh was made to show, against their targets."""
    pts = {(x["size"], x["mode"]): x for x in summary["points"]}
    lat = {x["mode"]: x for x in summary.get("latency", [])}
    rows = []

    def row(name, target, shown, ok):
        rows.append((name, target, shown, "met" if ok else "missed"))
    for size, key, label in ((4096, "4k_gbps", "4 KB"), (1 << 20, "1m_gbps", "1 MB")):
        x = pts.get((size, 1))
        if x:
            row(f"{label} PUSH_PULL goodput", f">= {TARGETS[key]:g} Gbps",
                f"{x['psb_gbps']:.1f} Gbps ({x['ratio']['median']:.1f}x the kernel baseline)",
                x["psb_gbps"] >= TARGETS[key])
    for m in ("PUSH_ONLY", "PULL_ONLY"):
        x = lat.get(m)
        if x:
            row(f"64 B {m} round trip, one at a time",
                f"p50 <= {TARGETS['rtt_p50_us']:g} us, p99 <= {TARGETS['rtt_p99_us']:g} us",
                f"p50 {x['psb_p50_us']:.1f} us, p99 {x['psb_p99_us']:.1f} us",
                x["psb_p50_us"] <= TARGETS["rtt_p50_us"] and x["psb_p99_us"] <= TARGETS["rtt_p99_us"])
    r = summary.get("rate_64b")
    if r:
        row("64 B PUSHPULL requests/s, one server core, pipelined",
            f">= {TARGETS['rate_ops'] / 1e6:g} M/s", f"{r['psb_ops'] / 1e6:.1f} M/s",
            r["psb_ops"] >= TARGETS["rate_ops"])
    x = pts.get((1 << 20, 1))
    if x and "ratio_pslite" in x:
        r = x["ratio_pslite"]
        row("1 MB PUSH_PULL against ps-lite itself", f">= {TARGETS['1m_pslite']:g}x",
            f"{r['median']:.2f}x [{r['ci95'][0]:.2f}, {r['ci95'][1]:.2f}]",
            r["median"] >= TARGETS["1m_pslite"])
    plain = [v["gbps_median"] for v in agg.get("results", []) if v.get("name") == "plain"]
    if x and plain:
        # goodput counts the value bytes pushed (8 x len x keys x iterations), each summed once
        frac = x["psb_gbps"] / 8 / plain[0]
        summary["1m_pushpull_of_plain_add"] = frac
        rows.append(("1 MB PUSH_PULL goodput as a fraction of the machine's `a += b` (its bound)",
                     "", f"{frac:.2f} ({x['psb_gbps'] / 8:.2f} of {plain[0]:.2f} GB/s)", ""))
    shares = [v["vs_plain"] for v in agg.get("results", []) if v.get("impl") is not None]
    if shares:
        row("server summation against a plain `a += b` loop", f">= {TARGETS['agg_share']:.0%}",
            f"{min(shares):.0%}-{max(shares):.0%} over the kernels",
            min(shares) >= TARGETS["agg_share"])
    summary["targets"] = [dict(zip(("figure", "target", "measured", "verdict"), x)) for x in rows]
    return ["## The figures asked for, medians", "",
            md_table(("figure", "target", "measured (psb)", ""), rows), ""]


def headline_table(summary):
    """The points the README and docs/PUSHPULL.md quote, psb beside the kernel-socket baseline."""
    pts = {(x["size"], x["mode"]): x for x in summary["points"]}
    pslite = any("pslite_gbps" in x for x in summary["points"])
    rows = []
    for size, label in ((4096, "4 KB"), (1 << 20, "1 MB")):
        x = pts.get((size, 1))
        if x:
            rows.append((f"{label} PUSH_PULL, 40 keys, Gbps", f"{x['psb_gbps']:.1f}",
                         f"{x['kernel_gbps']:.1f}", fmt_ratio(x["ratio"], 1)) +
                        ((f"{x['pslite_gbps']:.1f}", fmt_ratio(x["ratio_pslite"], 1))
                         if pslite else ()))
    for x in summary.get("latency", []):
        if x["mode"] == "PUSH_ONLY":
            rows.append(("64 B push, one at a time, round trip p50 / p99, us",
                         f"{x['psb_p50_us']:.1f} / {x['psb_p99_us']:.1f}",
                         f"{x['kernel_p50_us']:.1f} / {x['kernel_p99_us']:.1f}",
                         "p50: " + fmt_ratio(x["p50_ratio"], 2)) + (("", "") if pslite else ()))
    r = summary.get("rate_64b")
    if r:
        rows.append(("64 B PUSHPULL requests/s, one server core, millions", f"{r['psb_ops'] / 1e6:.1f}",
                     f"{r['kernel_ops'] / 1e6:.1f}", fmt_ratio(r["ratio"], 1)) +
                    (("", "") if pslite else ()))
    hdr = ("workload", "psb", "kernel-socket baseline", "psb/kernel, median of pairs [95 % CI]")
    if pslite:
        hdr += ("ps-lite (ZeroMQ/TCP)", "psb/ps-lite, median of pairs [95 % CI]")
    return ["## In short: medians of %d runs" % summary["runs"], "", md_table(hdr, rows), ""]


def pushpull_plots(out, sizes, modes, names, summary, loaded, lat):
    """goodput.svg and rtt_cdf.svg beside the summary; returns the names written."""
    from svgplot import line_plot
    written = []
    colours = {"1": "#1f77b4", "2": "#d62728", "3": "#2ca02c"}
    series = []
    for mode in modes:
        pts = [x for x in summary["points"] if x["mode"] == int(mode)]
        for side, dash in (("psb", False), ("kernel", True)):
            series.append({"name": f"{side} {names[mode]}", "color": colours.get(mode),
                           "dash": dash, "points": [(x["size"], x[f"{side}_gbps"]) for x in pts]})
    if len(sizes) > 1:
        write_atomic(os.path.join(out, "goodput.svg"), line_plot(
            "Goodput against value size, median of %d runs (psb solid, kernel dashed)" % summary["runs"],
            "value size per key", "goodput, Gbps (ps-lite formula)", series, logx=True, logy=True,
            xticks=[(int(s), human_size(int(s))) for s in sizes]))
        written.append("goodput.svg")
    curves = []
    for mode, (p, k) in sorted(lat.items()):
        curves.append((f"64 B {names[mode]}, one at a time", p, k))
    for (size, mode), (p, k) in loaded.items():
        if size == "4096" and mode == "1":
            curves.append(("4 KB PUSH_PULL, 40 keys", p, k))
    series = []
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    for i, (label, p, k) in enumerate(curves):
        for side, runs_, dash in (("psb", p, False), ("kernel", k, True)):
            c = cdf_median(runs_)
            if c:
                series.append({"name": f"{side}: {label}", "color": palette[i % len(palette)],
                               "dash": dash, "step": True, "markers": False,
                               "points": [(us, pct) for pct, us in c]})
    if series:
        write_atomic(os.path.join(out, "rtt_cdf.svg"), line_plot(
            "Round-trip CDF, median of runs at each percentile (psb solid, kernel dashed)",
            "round trip, us", "requests, %", series, logx=True, ylim=(0, 100)))
        written.append("rtt_cdf.svg")
    return written


def ctl_short(p, lat):
    """ctl.sh's figures against their targets, in short (the table of docs/OBSERVE.md)."""
    within = p["median_ratio"] >= 0.98
    sock, whole = lat["yield"]["socket_status"], lat["yield"]["psbctl_status"]
    return ["| figure | measured | target |", "|---|---|---|",
            "| goodput with / without monitoring, median of %d paired ratios [95 %% interval] "
            "| %.3f [%.3f, %.3f] | within 2 %%: %s |" % (p["pairs"], p["median_ratio"], p["ci95"][0],
                                                      p["ci95"][1], "met" if within else "missed"),
            "| lcore time psb spends serving it, worker / server | %+.1f %% / %+.1f %% | |" %
            tuple(p["control_pct"]["on"][i] - p["control_pct"]["off"][i] for i in (0, 1)),
            "| `status` on an open control socket under full load, p50 / p99 | %.2f / %.2f ms | |"
            % (sock["p50_ms"], sock["p99_ms"]),
            "| a whole `psbctl status` process under full load, p50 / p99 | %.1f / %.1f ms "
            "| p99 < 5 ms: %s |" % (whole["p50_ms"], whole["p99_ms"],
                                    "met" if whole["p99_ms"] < 5 else "missed")] + \
        (["| worker passes that served no client, the clients' share spent (throttled_passes), "
          "over the %d requests of the status runs | %d | |" % (
              lat["yield"]["control"]["socket_requests"],
              lat["yield"]["control"]["throttled_passes"])]
         if "control" in lat["yield"] else []) + [""]


def ctl(out):
    """scripts/bench/ctl.sh: raw/paired.json (monitoring against goodput), raw/status-{yield,
    noyield}.json (status latency under load); the value size from raw/plan.json, else from
    the command in ABOUT.txt (--len, default 4096)."""
    raw = Raw(out)
    if raw.has("plan.json"):
        length = int(raw.json("plan.json")["len"])
    else:
        length = 4096
        for line in open(os.path.join(out, "ABOUT.txt")):
            m = re.match(r"command .*--len (\d+)", line)
            if m:
                length = int(m.group(1))
    p = raw.json("paired.json")
    lat = {t: raw.json("status-%s.json" % t)
           for t in ("yield", "noyield")}
    for t in lat:	# the worker's control counters around its status runs, if recorded
        c = ["status-%s-control-%d.json" % (t, i) for i in (0, 1)]
        if all(raw.has(x) for x in c):
            a, b = (raw.json(x)["counters"] for x in c)
            lat[t]["control"] = {k: b[k] - a[k] for k in ("socket_requests", "throttled_passes",
                                                          "socket_deferred")}
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
    L += [""] + ctl_short(p, lat)[:-1]
    return summary, L, True


def ctl_hostile(out):
    """scripts/bench/ctl_hostile.sh: raw/windows.json (per process and behaviour, the paired
    windows' ratios), raw/plan.json (the value size), the revision from ABOUT.txt."""
    files = Raw(out)
    raw = files.json("windows.json")
    length = int(files.json("plan.json")["len"])
    rev = about_revision(out)
    summary = {"git_revision": rev, "len": length, "window_s": raw["window_s"],
               "pairs": raw["pairs"], "goal": 0.90, "results": raw["summary"]}
    L = ["psb %s, %d B PUSH_PULL flat out, %d pairs of %g s windows" %
         (rev, length, raw["pairs"], raw["window_s"]), "",
         "| hostile client of | behaviour | goodput with / without, median [95 % CI] | range | "
         "lcore on control, without → with | hostile client's CPU | counted by psb, per s | "
         "honest scrapes ok (slowest) |",
         "|---|---|---|---|---|---|---|---|"]
    for r in raw["summary"]:
        lim = ", ".join("%s %.0f" % (k, v) for k, v in r["limits_per_s"].items() if v >= 0.5)
        sc = r["scrapes"]
        L.append("| %s | %s | **%.3f** [%.3f, %.3f]%s | %.2f–%.2f | %.2f %% → %.2f %% | %.1f %% | %s | %s |"
                 % (r["target"], r["behaviour"], r["median_ratio"], r["ci95"][0], r["ci95"][1],
                    "" if r["median_ratio"] >= 0.90 else " (below 0.90)", r["min_ratio"],
                    r["max_ratio"], r["control_pct"]["off"], r["control_pct"]["on"],
                    r["hostile_cpu_pct"], lim or "-",
                    "%d / %d (%.3f s)" % (sc["ok"], sc["n"], sc["max_s"]) if sc["n"] else "-"))
    # the same ratios, one column per process the hostile client talked to
    targets = list(dict.fromkeys(r["target"] for r in raw["summary"]))
    by = {(r["behaviour"], r["target"]): r for r in raw["summary"]}
    L += ["", "| behaviour | " + " | ".join("client of the %s" % t for t in targets) + " |",
          "|---|" + "---|" * len(targets)]
    for b in dict.fromkeys(r["behaviour"] for r in raw["summary"]):
        L.append("| %s | " % b + " | ".join(
            "%.3f [%.3f, %.3f]" % (by[b, t]["median_ratio"], *by[b, t]["ci95"]) if (b, t) in by
            else "-" for t in targets) + " |")
    return summary, L, True


def mc_emu(out):
    """scripts/bench/mc_emu.sh: raw/kK-pP-parityN.json, one psb-mcemu run each."""
    runs = []
    raw = Raw(out)
    for name, _ in raw.match(r".*\.json"):
        runs.append(raw.json(name))
    rev = about_revision(out)
    runs.sort(key=lambda r: (r["loss"], r["parity"] == 0, r["receivers"]))
    L = ["psb %s, %d B every %g s, %g s emulated" % (rev, runs[0]["data_size"],
         runs[0]["push_frequency_s"], runs[0]["duration_s"]), "",
         "| loss | parity | receivers | repair / data | NACKs at the sender | NACKs per receiver "
         "| staleness mean (max) | versions held, fewest |",
         "|---:|---|---:|---:|---:|---:|---|---:|"]
    for r in runs:
        L.append("| %g %% | %s | %d | %.2f %% | %d | %.2f | %.3f (%d) | %d of %d |" % (
            100 * r["loss"], "on" if r["parity"] else "off", r["receivers"],
            100.0 * r["repair_bytes"] / r["data_bytes"], r["nacks"],
            r["nacks"] / r["receivers"], r["staleness_mean"], r["staleness_max"],
            r["completed_min"], r["published"]))
    # the figures asked for
    goals = []
    by = {(r["receivers"], r["loss"], r["parity"] != 0): r for r in runs}
    k1000 = by.get((1000, 0.01, True))
    if k1000 is not None:
        share = k1000["repair_bytes"] / k1000["data_bytes"]
        goals.append({"figure": "repair traffic at 1,000 receivers, 1 % loss, parity on",
                      "target": "<= 10 % of data", "value": share, "met": share <= 0.10})
    for loss in sorted({r["loss"] for r in runs}):
        lo, hi = by.get((10, loss, True)), by.get((1000, loss, True))
        if lo is not None and hi is not None and lo["nacks"] > 0:
            growth = hi["nacks"] / lo["nacks"]
            goals.append({"figure": "NACKs at the sender, 1,000 against 10 receivers, "
                          "%g %% loss" % (100 * loss), "target": "< 100 (sub-linear)",
                          "value": growth, "met": growth < 100})
    L += ["", "| figure | target | measured | |", "|---|---|---:|---|"]
    for g in goals:
        L.append("| %s | %s | %s | %s |" % (g["figure"], g["target"],
                 "%.2f %%" % (100 * g["value"]) if "repair" in g["figure"] else "%.1fx" % g["value"],
                 "met" if g["met"] else "missed"))
    summary = {"git_revision": rev, "runs": runs, "figures": goals}
    mc_emu_plot(out, runs)
    return summary, L, True


def mc_emu_plot(out, runs):
    """nacks.svg: NACKs reaching the sender against the receivers, per loss, parity on and off."""
    from svgplot import line_plot
    palette = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd"]
    series = []
    for i, loss in enumerate(sorted({r["loss"] for r in runs})):
        for parity, dash in ((True, False), (False, True)):
            pts = sorted((r["receivers"], r["nacks"]) for r in runs
                         if r["loss"] == loss and (r["parity"] != 0) == parity)
            if pts:
                series.append({"name": "%g %% loss, parity %s" % (100 * loss,
                               "on" if parity else "off"), "color": palette[i % len(palette)],
                               "dash": dash, "points": pts})
    ks = sorted({r["receivers"] for r in runs})
    write_atomic(os.path.join(out, "nacks.svg"), line_plot(
        "NACKs reaching the sender (parity on solid, off dashed)", "receivers",
        "NACKs in the run", series, logx=True, logy=True, xticks=[(k, str(k)) for k in ks]))


def mc_send(out):
    """scripts/bench/mc_send.sh: raw/{copy,udp,dpdk}-ROUND.json: psb-mcast bench runs and
    psb's trainer role into a null port, in rounds."""
    raw = Raw(out)
    pairs = sorted(p for (p,) in raw_index(raw, r"copy-(\d+)\.json"))
    copy = [raw.json(f"copy-{p}.json") for p in pairs]
    udp = [raw.json(f"udp-{p}.json") for p in pairs]
    dpdk = [raw.json(f"dpdk-{p}.json") for p in pairs if raw.has(f"dpdk-{p}.json")]
    rev = about_revision(out)
    ratio = paired(copy, udp, lambda r: r["gb_per_s"])
    med_c = statistics.median(r["gb_per_s"] for r in copy)
    med_u = statistics.median(r["gb_per_s"] for r in udp)
    summary = {"git_revision": rev, "pairs": len(pairs), "copy_gb_per_s": med_c,
               "udp_gb_per_s": med_u, "ratio": ratio, "goal_gb_per_s": 3.0,
               "met": med_c >= 3.0, "data_size": copy[0]["data_size"],
               "rate_bps": copy[0]["rate_bps"]}
    rows = [("psb's sender into packet buffers (a copy of every packet), back to back", copy),
            ("psb's sender into kernel UDP sockets (sendmsg), back to back", udp)]
    if dpdk:
        ratio_d = paired(dpdk, udp[:len(dpdk)], lambda r: r["gb_per_s"])
        med_d = statistics.median(r["gb_per_s"] for r in dpdk)
        summary.update({"dpdk_gb_per_s": med_d, "dpdk_ratio": ratio_d, "met": med_d >= 3.0,
                        "dpdk_superseded": sum(r["superseded"] for r in dpdk),
                        "dpdk_published": sum(r["published"] for r in dpdk),
                        "dpdk_push_ms": statistics.median(r["push_ms"] for r in dpdk)})
        rows.append(("psb's trainer role on DPDK into a null port, a version made every %g ms "
                     "on the same core (%g GB/s offered)" % (dpdk[0]["push_ms_period"],
                                                            dpdk[0]["offered_gb_per_s"]), dpdk))
    L = ["psb %s, %d B versions, paced at %g Gbit/s, %d rounds" % (
         rev, copy[0]["data_size"], copy[0]["rate_bps"] / 1e9, len(pairs)), "",
         "| one core | data GB/s (median) | per CPU second | range |",
         "|---|---:|---:|---|"]
    for name, runs in rows:
        L.append("| %s | %.2f | %.2f | %.2f-%.2f |" % (
            name, statistics.median(r["gb_per_s"] for r in runs),
            statistics.median(r["gb_per_cpu_s"] for r in runs),
            min(r["gb_per_s"] for r in runs), max(r["gb_per_s"] for r in runs)))
    L += ["", "| figure | target | measured | |", "|---|---|---:|---|"]
    if dpdk:
        L += ["| psb's sender role on one core (DPDK), into a null port | >= 3 GB/s of data | "
              "%.2f GB/s | %s |" % (med_d, "met" if med_d >= 3.0 else "missed"),
              "| against psb's sender into kernel sockets, paired | | %.1fx [%.1f, %.1f] | |"
              % (ratio_d["median"], ratio_d["ci95"][0], ratio_d["ci95"][1])]
    L += ["| psb's sender on one core, into packet buffers | >= 3 GB/s of data | %.2f GB/s | %s |"
          % (med_c, "met" if med_c >= 3.0 else "missed"),
          "| against the same sender into kernel sockets, paired | | %.1fx [%.1f, %.1f] | |"
          % (ratio["median"], ratio["ci95"][0], ratio["ci95"][1])]
    if dpdk:
        L += ["", "The trainer role made every version it sent (fill and CRC32C, %.2f ms a "
              "version, median) on the same lcore as its sender, the tx and rx roles; %d of "
              "its %d versions were superseded before a byte was sent (latest-value "
              "semantics)." % (summary["dpdk_push_ms"], summary["dpdk_superseded"],
                               summary["dpdk_published"])]
    return summary, L, True


def stale_figures(x):
    """(window staleness, Average Version difference) of a trainer's summary.json. Runs
    before the window staleness was named (psb-stale of 2026-11-26) called them
    average_version_difference and average_version_difference_seed."""
    if "window_staleness" in x:
        return x["window_staleness"], x["average_version_difference"]
    return x["average_version_difference"], x["average_version_difference_seed"]


def staleness(out):
    """scripts/bench/staleness.sh: raw/MODE-gRATE-wW-pP-postS-rR.json (the trainer's
    summary; no -gRATE for filesystem, which is not paced; no -postS in runs of one post
    period, 0.5 s) and .csv. Every repetition's figures are kept in the summary's cells."""
    raw = Raw(out)
    plan = raw.json("plan.json")
    rev = about_revision(out)
    runs = {}
    old = False
    for name, m in raw.match(r"([a-z]+)(?:-g(\d+))?-w(\d+)-p([0-9.]+)(?:-post([0-9.]+))?"
                             r"-r(\d+)\.json"):
        rate = None if m.group(2) is None else int(m.group(2))
        x = raw.json(name)
        old |= "window_staleness" not in x
        runs.setdefault((m.group(1), rate, int(m.group(3)), m.group(4), m.group(5) or "0.5"),
                        []).append((int(m.group(6)), x))
    for v in runs.values():
        v.sort(key=lambda rx: rx[0])
    # a row a mode and pacing rate, in the plan's order of modes, slower rates first
    variants = sorted({k[:2] for k in runs}, key=lambda v: (
        plan["modes"].index(v[0]) if v[0] in plan["modes"] else len(plan["modes"]), v[1] or 0))
    rates_of = {m: [r for mm, r in variants if mm == m] for m, _ in variants}

    def label(m, r):
        return m if len(rates_of[m]) < 2 else "%s, %d Gbit/s" % (m, r)

    def key(m, r, w, p, o):
        return "%s%s/w%d/p%s/post%s" % (m, "" if r is None else "@%d" % r, w, p, o)
    workers = sorted({k[2] for k in runs})
    pushes = sorted({k[3] for k in runs}, key=lambda p: -float(p))
    posts = sorted({k[4] for k in runs}, key=float)
    reps = sorted({rep for v in runs.values() for rep, _ in v})

    def spread(v):
        return {"median": statistics.median(v), "min": min(v), "max": max(v)}

    def cell(rs):
        win = [stale_figures(x)[0] for _, x in rs]
        diff = [stale_figures(x)[1] for _, x in rs]
        return {"window": dict(spread(win), reps=win),
                "version_difference": dict(spread(diff), reps=diff),
                "repetitions": [rep for rep, _ in rs], "runs": len(rs),
                "held_final": sum(all(w["holds_final"] for w in x["workers"]) for _, x in rs),
                "push_ms": statistics.median(x["time_per_push_ms"] for _, x in rs),
                "versions": statistics.median(x["final_version"] for _, x in rs)}
    table = {key(*k): cell(v) for k, v in runs.items()}

    def rows_of(fmt):
        """A table's rows: a mode and pacing, workers and post period each; a column a
        publish rate, fmt(cell) in it."""
        out_ = []
        for m, r in variants:
            for w in workers:
                for o in posts:
                    c = [table.get(key(m, r, w, p, o)) for p in pushes]
                    if all(x is None for x in c):
                        continue
                    out_.append("| %s | %d | %s | %s |" % (label(m, r), w, o, " | ".join(
                        "-" if x is None else fmt(x) for x in c)))
        return out_
    cols = " | ".join("every %s s (%.3g/s)" % (p, 1 / float(p)) for p in pushes)
    L = ["psb %s, %s MB versions, %s s a run, %d repetitions; window staleness in versions "
         "(psb's: over each post's samples, the trainer's newest version at the sample less "
         "the worker's), median over the repetitions [min, max]; a run whose workers did not "
         "all end holding the final version is marked *%s" % (
             rev, plan["data_mb"], plan["duration"], plan["reps"],
             "; measured before the window staleness was sampled at the worker's instants "
             "(then the trainer's time-weighted mean over the post's window, which reads low "
             "by up to half a step's worth of versions)" if old else ""), "",
         "| mode | workers | posts every (s) | " + cols + " |",
         "|---|---:|---:|" + "---:|" * len(pushes)]
    L += rows_of(lambda c: "%.2f [%.2f, %.2f]%s" % (
        c["window"]["median"], c["window"]["min"], c["window"]["max"],
        "" if c["held_final"] == c["runs"] else "*"))

    # the figure: the highest publish rate at which each keeps the window staleness <= 1, at
    # the pacing rate where it does best (when two hold the same publish rate, the one with
    # the lower staleness there), in each repetition; the ratio is taken per repetition
    def best(m, w, o, value):
        found = None
        for r in rates_of.get(m, []):
            ok = [(1 / float(p), value(key(m, r, w, p, o))) for p in pushes
                  if (m, r, w, p, o) in runs]
            ok = [(rate, v) for rate, v in ok if v is not None and v <= 1.0]
            if not ok:
                continue
            rate, stale = max(ok)
            if found is None or (rate, -stale) > (found[0], -found[2]):
                found = (rate, r, stale)
        return found

    def in_rep(rep):
        def value(k):
            c = table.get(k)
            return None if c is None or rep not in c["repetitions"] else \
                c["window"]["reps"][c["repetitions"].index(rep)]
        return value
    goals = []
    top = max(1 / float(p) for p in pushes)
    L += ["", "| workers | posts every (s) | highest rate with window staleness <= 1: epgm | "
          "psb multicast | ratio, median of the repetitions' [min, max] (target >= 3) | |",
          "|---:|---:|---:|---:|---:|---|"]
    for w in workers:
        for o in posts:
            per = []
            for rep in reps:
                e, m = best("epgm", w, o, in_rep(rep)), best("multicast", w, o, in_rep(rep))
                per.append({"repetition": rep, "epgm_rate": e and e[0],
                            "epgm_pacing_gbit": e and e[1], "multicast_rate": m and m[0],
                            "multicast_pacing_gbit": m and m[1],
                            "ratio": None if e is None or m is None else m[0] / e[0]})
            ratios = [x["ratio"] for x in per if x["ratio"] is not None]
            if not ratios and all(x["epgm_rate"] is None and x["multicast_rate"] is None
                                  for x in per):
                continue
            er = [x["epgm_rate"] for x in per if x["epgm_rate"] is not None]
            mr = [x["multicast_rate"] for x in per if x["multicast_rate"] is not None]
            g = {"workers": w, "post_s": float(o), "repetitions": per,
                 "ratio": spread(ratios) if ratios else None,
                 "epgm_rate": spread(er) if er else None,
                 "multicast_rate": spread(mr) if mr else None,
                 "lower_bound": bool(mr) and statistics.median(mr) == top,
                 "met": bool(ratios) and statistics.median(ratios) >= 3}
            goals.append(g)

            def said(x):
                if x is None:
                    return "none held"
                return "%.3g/s [%.3g, %.3g]%s" % (x["median"], x["min"], x["max"],
                                                  " (the highest tried)" if x["median"] == top
                                                  else "")
            L.append("| %d | %s | %s | %s | %s | %s |" % (
                w, o, said(g["epgm_rate"]), said(g["multicast_rate"]),
                "-" if not ratios else "%s%.1fx [%.1f, %.1f]%s" % (
                    ">= " if g["lower_bound"] else "", g["ratio"]["median"],
                    g["ratio"]["min"], g["ratio"]["max"],
                    "" if len(ratios) == len(per) else " (%d of %d repetitions)" % (
                        len(ratios), len(per))),
                "met" if g["met"] else "missed"))
    L += ["", "The old benchmark's measure, its Average Version difference (the trainer's "
          "newest version when a post came less the worker's mean over the post period), "
          "median over the repetitions:", "",
          "| mode | workers | posts every (s) | " + cols + " |",
          "|---|---:|---:|" + "---:|" * len(pushes)]
    L += rows_of(lambda c: "%.2f" % c["version_difference"]["median"])
    summary = {"git_revision": rev, "plan": plan, "cells": table, "figures": goals}
    staleness_plots(raw, out, runs, variants, label, workers, pushes, posts[0], plan)
    return summary, L, True


def staleness_plots(raw, out, runs, variants, label, workers, pushes, post, plan):
    """rates.svg: median window staleness against the publish rate, a line per mode, pacing
    rate and workers, at the shortest post period; over_time.svg: the seed's workload (or
    the slowest tried), fewest workers, first repetition, the mean over workers per half
    second, a line per mode and pacing."""
    from svgplot import line_plot
    series = []
    for i, (m, r) in enumerate(variants):
        for j, w in enumerate(workers):
            pts = [(1 / float(p), statistics.median(stale_figures(x)[0]
                                                    for _, x in runs[m, r, w, p, post]))
                   for p in pushes if (m, r, w, p, post) in runs]
            series.append({"name": "%s, %d workers" % (label(m, r), w),
                           "color": PALETTE_MODES[i % len(PALETTE_MODES)],
                           "dash": j > 0, "points": sorted(pts)})
    write_atomic(os.path.join(out, "rates.svg"), line_plot(
        "Window staleness against the publish rate (%s MB versions, posts every %s s)" % (
            plan["data_mb"], post),
        "versions published per second", "mean window staleness (versions)", series, logx=True,
        xticks=[(1 / float(p), "%.3g" % (1 / float(p))) for p in pushes]))
    p = "0.2" if "0.2" in pushes else pushes[0]
    w = workers[0]
    series = []
    for i, (m, r) in enumerate(variants):
        base = "%s%s-w%d-p%s" % (m, "" if r is None else "-g%d" % r, w, p)
        name = next((n for n in ("%s-post%s-r1.csv" % (base, post), base + "-r1.csv")
                     if raw.has(n)), None)
        if name is None:
            continue
        bins = {}
        for row in raw.csv(name):
            b = int(float(row["t_s"]) * 2)
            bins.setdefault(b, []).append(float(row.get("window_staleness", row.get("staleness"))))
        series.append({"name": label(m, r), "color": PALETTE_MODES[i % len(PALETTE_MODES)],
                       "markers": False,
                       "points": [((b + 0.5) / 2, statistics.mean(v)) for b, v in sorted(bins.items())]})
    write_atomic(os.path.join(out, "over_time.svg"), line_plot(
        "Window staleness over time: %s MB every %s s, %d workers" % (plan["data_mb"], p, w),
        "time (s)", "mean window staleness over workers (versions)", series))


PALETTE_MODES = ["#1f77b4", "#17becf", "#2ca02c", "#8c564b", "#d62728", "#ff7f0e",
                 "#9467bd", "#7f7f7f"]


def passthrough(out):
    """scripts/bench/passthrough.sh: raw/{acct,noacct,testpmd,memif-acct,memif-noacct,
    memif-port}-{small,large}-ROUND.json."""
    raw = Raw(out)
    rounds = sorted(p for (p,) in raw_index(raw, r"acct-small-(\d+)\.json"))
    rev = about_revision(out)

    def runs(mode, size):
        return [raw.json(f"{mode}-{size}-{p}.json") for p in rounds]

    def cell(rs):
        m = [r["mpps"] for r in rs]
        return "%.2f M/s [%.2f, %.2f], %.1f Gbit/s" % (
            statistics.median(m), min(m), max(m), statistics.median(r["gbps"] for r in rs))

    summary = {"git_revision": rev, "rounds": len(rounds)}
    L = ["psb %s, %d rounds; frames/s and Gbit/s psb passed to the host, or the ports "
         "alone moved, median [min, max]" % (rev, len(rounds)), "",
         "| stream | ports | psb, accounting on | psb, accounting off | testpmd: io into a "
         "null port (memory), receiving only (memif) |",
         "|---|---|---:|---:|---:|"]
    names = {"small": "RC ACKs, 62 B", "large": "RC WRITE_MIDDLEs, 4154 B"}
    ports = {"": ("replayed from memory, one CPU", "testpmd"),
             "memif-": ("memif from another process", "memif-port")}
    figs = {}
    for size in ("small", "large"):
        for pre, (pname, base) in ports.items():
            a, n, t = runs(pre + "acct", size), runs(pre + "noacct", size), runs(base, size)
            for r in a:	# every frame RoCE, counted, ICRC right, none lost for the host
                assert r["icrc_bad"] == 0 and r["host_dropped"] == 0, r
                assert r["qp_tracked"] == 64, r
            L.append("| %s | %s | %s | %s | %s |" % (names[size], pname, cell(a), cell(n),
                                                     cell(t)))
            figs[pre + size] = {
                "acct_mpps": statistics.median(r["mpps"] for r in a),
                "noacct_mpps": statistics.median(r["mpps"] for r in n),
                "ports_mpps": statistics.median(r["mpps"] for r in t),
                "off_over_on": paired(n, a, lambda r: r["mpps"]),
                "acct_over_ports": paired(a, t, lambda r: r["mpps"])}
    summary.update(figs)

    def cost(f):
        r = f["off_over_on"]
        return [(1 - 1 / x) * 100 for x in (r["median"], r["ci95"][0], r["ci95"][1])]

    s, ms, ml = figs["small"], figs["memif-small"], figs["memif-large"]
    c, cm = cost(s), cost(ms)
    # keeping up with the port: the share of the frames the generator offered that entered
    # the memif ring (the rest found it full: psb behind), in the same window as psb's rate;
    # the generator's own rate varies between runs here, so this is what says it
    def share(mode, size):
        rs = runs(mode, size)
        v = [r["share"] for r in rs]
        return {"median": statistics.median(v), "min": min(v), "max": max(v),
                "offered_mpps": statistics.median(r["offered_mpps"] for r in rs)}

    for f, size in ((ml, "large"), (ms, "small")):
        f["share_acct"], f["share_noacct"] = share("memif-acct", size), share("memif-noacct",
                                                                              size)
        f["share_acct_over_noacct"] = paired(runs("memif-acct", size),
                                             runs("memif-noacct", size), lambda r: r["share"])
    keep = ml["share_acct_over_noacct"]
    ml["acct_over_noacct"] = paired(runs("memif-acct", "large"), runs("memif-noacct", "large"),
                                    lambda r: r["mpps"])
    # over memif the cost is psb's only while psb, not the generator, sets the rate: when psb
    # without accounting took nearly all the generator offered, frames/s say nothing of it
    memif_gen_bound = ms["share_noacct"]["median"] >= 0.9
    summary.update({"met_rate": s["acct_mpps"] >= 10.0, "cost_pct_small": c[0],
                    "cost_pct_small_memif": None if memif_gen_bound else cm[0],
                    "met_cost": c[0] <= 15.0 and (memif_gen_bound or cm[0] <= 15.0),
                    "met_keep_up": keep["median"] >= 0.99})
    if memif_gen_bound:
        memif_cost = ("| cost of accounting, 62 B, over memif | <= 15 %% | not measured: the "
                      "generator set the rate (psb without accounting took %.3f of its "
                      "frames) | |" % ms["share_noacct"]["median"])
    else:
        memif_cost = ("| cost of accounting, 62 B, over memif | <= 15 %% | %.0f %% [%.0f, %.0f] "
                      "| %s |" % (cm[0], cm[1], cm[2], "met" if cm[0] <= 15.0 else "missed"))

    def sh(x):
        return "%.3f [%.3f, %.3f] of %.2f M/s" % (x["median"], x["min"], x["max"],
                                                  x["offered_mpps"])

    L += ["", "| figure | target | measured | |", "|---|---|---:|---|",
          "| 62 B frames through one core, accounting on, from memory | >= 10 M/s | %.2f M/s "
          "| %s |" % (s["acct_mpps"], "met" if summary["met_rate"] else "missed"),
          "| the same over memif (psb without accounting: %.2f M/s) | | %.2f M/s | |" % (
              ms["noacct_mpps"], ms["acct_mpps"]),
          "| cost of accounting, 62 B, from memory (frames/s lost, paired) | <= 15 %% | "
          "%.0f %% [%.0f, %.0f] | %s |" % (c[0], c[1], c[2],
                                          "met" if c[0] <= 15.0 else "missed"),
          memif_cost,
          "| 4154 B frames over memif: the share of the generator's frames psb took with "
          "accounting against without, paired | keeps up (>= 0.99) | %.3f [%.3f, %.3f] | %s |"
          % (keep["median"], keep["ci95"][0], keep["ci95"][1],
             "met" if summary["met_keep_up"] else "missed"),
          "| the shares: with accounting; without (median [min, max] of the generator's "
          "median rate) | | %s; %s | |" % (sh(ml["share_acct"]), sh(ml["share_noacct"])),
          "| the same as frames/s, psb with accounting against psb without, paired | | "
          "%.2fx [%.2f, %.2f] | |" % (ml["acct_over_noacct"]["median"],
                                      ml["acct_over_noacct"]["ci95"][0],
                                      ml["acct_over_noacct"]["ci95"][1]),
          "| 62 B frames over memif: the shares, with accounting; without | | %s; %s | |" % (
              sh(ms["share_acct"]), sh(ms["share_noacct"]))]
    # where the time goes: lib/roce alone (psb-rocecost), against psb's frame without it
    cost = {size: raw.json(f"cost-{size}.json") for size in ("small", "large")}
    summary["cost_ns"] = cost
    L += ["", "Where the time of accounting goes: lib/roce alone on the same frames in memory "
          "(psb-rocecost, ICRC by %s), ns per frame, median of %d rounds; psb's whole frame "
          "without accounting (from memory) for scale" % (cost["small"]["icrc_impl"],
                                                         cost["small"]["rounds"]), "",
          "| frames | parse | parse + ICRC | parse + ICRC, reference | all of it, by bursts "
          "| psb without accounting | 15 % of that |", "|---|---:|---:|---:|---:|---:|---:|"]
    for size in ("small", "large"):
        n, base = cost[size]["ns_per_frame"], 1e3 / figs[size]["noacct_mpps"]
        L.append("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |" % (
            names[size], n["parse"], n["icrc"], n["icrc_ref"], n["account"], base,
            0.15 * base))
    return summary, L, True


def mc_storm(out):
    """scripts/bench/mc_storm.sh: raw/VARIANT-ROUND-{s,r1,r2,storm}.json and -s.log, VARIANT
    calm, storm (one id) or storm200, in rounds."""
    raw = Raw(out)
    plan = raw.json("plan.json")
    rounds = sorted(r for (r,) in raw_index(raw, r"calm-(\d+)-s\.json"))
    count = plan["count"]
    rev = about_revision(out)

    def run(v, r):
        b = f"{v}-{r}"
        s = raw.json(b + "-s.json")
        rx = [raw.json(f"{b}-r{h}.json") for h in (1, 2)]
        log = raw.text(b + "-s.log")
        pub = float(re.findall(r"version %d published .* at ([0-9.]+) s" % count, log)[0])
        done = float(re.findall(r"every version sent at ([0-9.]+) s", log)[0])
        x = {"duration_s": s["duration_s"], "last_out_s": done - pub,
             "whole": min(r["completed"] for r in rx), "last": min(r["held"] for r in rx),
             "ok": all(r["ok"] and r["bytes_differ"] == 0 for r in rx),
             "repair_pkts": s["repair_parity_pkts"] + s["repair_data_pkts"],
             "repair_bytes": s["repair_bytes"], "repair_bps": s["repair_bps"],
             "nacks": s["nacks"], "over_budget": s["nack_over_budget"],
             "repair_limited": s["repair_limited"],
             "busiest": s["nackers"][0]["addr"] if s["nackers"] else ""}
        if raw.has(b + "-storm.json"):
            x["storm_nacks"] = raw.json(b + "-storm.json")["nacks"]
        return x

    runs = {v: [run(v, r) for r in rounds] for v in ("calm", "storm", "storm200")}
    summary = {"git_revision": rev, "rounds": len(rounds), "count": count, "variants": {}}
    hdr = ["third host", "versions whole (min of 2, median)", "ends on the last",
           "run time s (median)", "against calm, paired", "repairs MB/s", "storm NACKs/s",
           "entries over budget"]
    rows = []
    met = True
    for v, name in (("calm", "silent"), ("storm", "NACK storm, 1 id"),
                    ("storm200", "NACK storm, 200 ids")):
        rs = runs[v]
        whole = statistics.median(r["whole"] for r in rs)
        last = sum(r["last"] == count for r in rs)
        dur = statistics.median(r["duration_s"] for r in rs)
        ratio = paired(rs, runs["calm"], lambda r: r["duration_s"])
        mbps = statistics.median(r["repair_bytes"] / r["duration_s"] / 1e6 for r in rs)
        nps = (statistics.median(r["storm_nacks"] for r in rs) /
               (count * float(plan["push"]) + float(plan["linger"]) + 1)) if v != "calm" else 0
        summary["variants"][v] = {
            "whole_median": whole, "whole_min": min(r["whole"] for r in rs),
            "ended_on_last": last, "duration_s": dur, "duration_ratio": ratio,
            "repair_mb_per_s": mbps, "over_budget": statistics.median(r["over_budget"]
                                                                       for r in rs),
            "last_out_s": statistics.median(r["last_out_s"] for r in rs), "runs": rs}
        if v != "calm":
            met = met and min(r["whole"] for r in rs) >= 0.95 * count and last == len(rs) \
                and ratio["max"] <= 1.10
        rows.append([name, "%g of %d [%d, %d]" % (whole, count, min(r["whole"] for r in rs),
                                                  max(r["whole"] for r in rs)),
                     "%d of %d" % (last, len(rs)), "%.2f" % dur,
                     "-" if v == "calm" else "%.3f [%.3f, %.3f]" % (
                         ratio["median"], ratio["min"], ratio["max"]),
                     "%.1f" % mbps, "%.0f" % nps if nps else "-",
                     "%g" % summary["variants"][v]["over_budget"]])
    summary["met"] = met
    st = summary["variants"]
    L = ["psb %s, psb-mcast: %d versions of %s every %g s at %g Gbit/s to 2 receivers, "
         "%d rounds" % (rev, count, plan["data_size"], float(plan["push"]), float(plan["rate"]),
                         len(rounds)),
         "", md_table(hdr, rows), "",
         "| figure | target | measured | |", "|---|---|---:|---|"]
    for v, name in (("storm", "1 id"), ("storm200", "200 ids")):
        w = min(r["whole"] for r in st[v]["runs"]) / count
        rt = st[v]["duration_ratio"]
        L.append("| honest receivers' versions whole, storm of %s (worst run) | >= 95 %% | "
                 "%.0f %% | %s |" % (name, 100 * w, "met" if w >= 0.95 else "missed"))
        L.append("| sender's run time against calm, storm of %s (worst pair) | <= 1.10 | "
                 "%.3f | %s |" % (name, rt["max"], "met" if rt["max"] <= 1.10 else "missed"))
    return summary, L, True


def client(out):
    """scripts/bench/client.sh: raw/{kbench,capi,pslite,python}-ROUND.json (ps-lite's
    benchmark, PUSH_PULL) and raw/rtt-{capi,python}-ROUND.json (one key's 64 B request at a
    time), each run against a fresh psb-ksrv, in rounds."""
    raw = Raw(out)
    rounds = sorted(p for (p,) in raw_index(raw, r"capi-(\d+)\.json"))
    # runs before shared memory had only the four over UDP
    tools = ["kbench", "capi", "pslite", "python"]
    shm = raw.has("capi-shm-%d.json" % rounds[0])
    if shm:
        tools += ["capi-shm", "pslite-shm", "python-shm"]
    runs = {t: [raw.json(f"{t}-{p}.json") for p in rounds] for t in tools}
    rtt = {t: [raw.json(f"rtt-{t}-{p}.json") for p in rounds] for t in ("capi", "python")}
    rev = about_revision(out)
    plan = raw.json("plan.json")
    g = lambda r: r["goodput_gbps"]
    med = {t: statistics.median(g(r) for r in v) for t, v in runs.items()}
    ratios = {"capi_kbench": paired(runs["capi"], runs["kbench"], g),
              "pslite_capi": paired(runs["pslite"], runs["capi"], g),
              "python_capi": paired(runs["python"], runs["capi"], g)}
    if shm:
        for t in ("capi", "pslite", "python"):
            ratios[t + "_shm_udp"] = paired(runs[t + "-shm"], runs[t], g)
    p50 = {t: statistics.median(r["rtt_p50_us"] for r in v) for t, v in rtt.items()}
    diffs = [py["rtt_p50_us"] - c["rtt_p50_us"] for py, c in zip(rtt["python"], rtt["capi"])]
    d_med, d_lo, d_hi = median_ci(diffs)
    summary = {"git_revision": rev, "rounds": len(rounds), "len": plan["len"],
               "keys": plan["keys"], "goodput_gbps": med, "ratios": ratios,
               "rtt_p50_us": p50, "rtt_python_minus_capi_us": {
                   "median": d_med, "ci95": [d_lo, d_hi], "min": min(diffs), "max": max(diffs)}}
    names = {"kbench": "psb-kbench (psb's engine, the kernel-socket baseline)",
             "capi": "the client API (psb/client.h)",
             "pslite": "a ps-lite program, psb's ps-lite header",
             "python": "the psb package, numpy arrays"}
    for t in ("capi", "pslite", "python"):
        names[t + "-shm"] = names[t] + ", shared memory"
        if shm:
            names[t] += ", UDP"
    L = ["psb %s, ps-lite's benchmark, PUSH_PULL of %d keys of %d B against psb-ksrv on "
         "loopback, %d rounds" % (rev, plan["keys"], plan["len"], len(rounds)), "",
         "| worker | Gbps (median) | range |", "|---|---:|---|"]
    for t in tools:
        L.append("| %s | %.2f | %.2f-%.2f |" % (names[t], med[t], min(g(r) for r in runs[t]),
                                                  max(g(r) for r in runs[t])))
    met = lambda ok: "met" if ok else "missed"
    r1, r2, r3 = ratios["capi_kbench"], ratios["pslite_capi"], ratios["python_capi"]
    L += ["", "| figure | target | measured, median of pairs [95 % interval] | |",
          "|---|---|---:|---|",
          "| the client API against psb-kbench, goodput | within 5 %% | %.3f [%.3f, %.3f] | %s |"
          % (r1["median"], r1["ci95"][0], r1["ci95"][1], met(r1["median"] >= 0.95)),
          "| the ps-lite header against the client API, goodput | >= 0.95 | %.3f [%.3f, %.3f] | %s |"
          % (r2["median"], r2["ci95"][0], r2["ci95"][1], met(r2["median"] >= 0.95)),
          "| Python against the client API, goodput | within 10 %% | %.3f [%.3f, %.3f] | %s |"
          % (r3["median"], r3["ci95"][0], r3["ci95"][1], met(r3["median"] >= 0.90)),
          "| Python's 64 B round trip less the client API's, p50 | <= 10 us | %.2f us [%.2f, %.2f] | %s |"
          % (d_med, d_lo, d_hi, met(d_med <= 10))]
    if shm:
        for t, what, want in (("capi", "the client API", 3), ("python", "Python", 3),
                              ("pslite", "the ps-lite header", None)):
            r = ratios[t + "_shm_udp"]
            L.append("| %s, shared memory against its UDP, goodput | %s | %.2f [%.2f, %.2f] | %s |"
                     % (what, ">= %dx" % want if want else "(no target)", r["median"],
                        r["ci95"][0], r["ci95"][1], met(r["median"] >= want) if want else ""))
    L += ["", "64 B round trips, p50 (median of runs): the client API %.2f us, Python %.2f us."
          % (p50["capi"], p50["python"])]
    if raw.has("pslite-real-%d.json" % rounds[0]):
        real = [raw.json(f"pslite-real-{p}.json") for p in rounds]
        r4 = paired(runs["pslite"], real, g)
        summary["goodput_gbps"]["pslite_real"] = statistics.median(g(r) for r in real)
        summary["ratios"]["pslite_real"] = r4
        L += ["", "The same ps-lite program against ps-lite itself (ZeroMQ over TCP, its own "
              "scheduler and server, the program's summing handler): %.2f Gbps (median, "
              "%.2f-%.2f); over psb %.2fx of it, median of pairs [%.2f, %.2f]."
              % (summary["goodput_gbps"]["pslite_real"], min(g(r) for r in real),
                 max(g(r) for r in real), r4["median"], r4["ci95"][0], r4["ci95"][1])]
        if shm:
            r5 = paired(runs["pslite-shm"], real, g)
            summary["ratios"]["pslite_shm_real"] = r5
            L[-1] += (" Over psb's shared memory %.2fx of it [%.2f, %.2f]."
                      % (r5["median"], r5["ci95"][0], r5["ci95"][1]))
    return summary, L, True


def rpcps(out):
    """scripts/bench/rpcps.sh: raw/{psb,rpc,rpc_tcp,allreduce}-ROUND.csv (psb.rpcps's
    samples: rank,role,type,name,batch,ms) and .json (its metrics.json), in rounds."""
    import csv
    import io
    from svgplot import line_plot
    raw = Raw(out)
    plan = raw.json("plan.json")
    rounds = sorted(p for (p,) in raw_index(raw, r"psb-(\d+)\.csv"))
    ways = ("psb", "rpc", "rpc_tcp", "allreduce")
    rev = about_revision(out)

    rows = {(w, p): [r for r in csv.DictReader(io.StringIO(raw.text(f"{w}-{p}.csv")))
                     if r["role"] == "trainer"] for w in ways for p in rounds}

    def samples(way, p, typ):
        return [float(r["ms"]) for r in rows[(way, p)] if r["type"] == typ]

    def stats(v):
        v = sorted(v)
        return {"mean": sum(v) / len(v), "p50": v[(len(v) - 1) // 2],
                "p99": v[min(len(v) - 1, int(len(v) * 0.99))], "n": len(v)}

    per = {w: {"batch": [stats(samples(w, p, "batch_level_metric")) for p in rounds],
               "hook": [stats(samples(w, p, "hook_future_metric")) for p in rounds]}
           for w in ways}
    med = {w: {m: {k: statistics.median(r[k] for r in per[w][m]) for k in ("mean", "p50", "p99")}
               for m in ("batch", "hook")} for w in ways}
    ratios = {"psb_%s_%s" % (w, m): paired(per["psb"][m], per[w][m], lambda r: r["mean"])
              for w in ways[1:] for m in ("hook", "batch")}
    summary = {"git_revision": rev, "rounds": len(rounds), "epochs": plan["epochs"],
               "ntrainer": plan["ntrainer"], "median_of_runs_ms": med, "ratios": ratios}
    names = {"psb": "psb (psb-ksrv, synchronous rounds)",
             "rpc": "the RPC parameter server (TensorPipe's choice: shared memory)",
             "rpc_tcp": "the RPC parameter server over TCP (as between hosts)",
             "allreduce": "gloo allreduce (no server)"}
    L = ["psb %s, psb.rpcps: %d trainers, 1 server, DummyModel (37.8 MB of gradients a "
         "batch), batches of 10, %d epochs; %d rounds of psb, rpc, rpc_tcp and allreduce; "
         "ms, the median over the runs of each run's figure" % (
             rev, plan["ntrainer"], plan["epochs"], len(rounds)), "",
         "| way | batch mean | batch p50 | batch p99 | hook future mean | hook p50 | hook p99 |",
         "|---|---:|---:|---:|---:|---:|---:|"]
    for w in ways:
        b, h = med[w]["batch"], med[w]["hook"]
        L.append("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |" % (
            names[w], b["mean"], b["p50"], b["p99"], h["mean"], h["p50"], h["p99"]))
    def ci(r):
        return "%.3f [%.3f, %.3f]" % (r["median"], r["ci95"][0], r["ci95"][1])
    L += ["", "| psb against | hook-future mean, target | hook-future mean, measured | |"
          " batch mean, measured |", "|---|---|---:|---|---:|"]
    for w in ways[1:]:
        target = w.startswith("rpc")
        h = ratios["psb_%s_hook" % w]
        L.append("| %s | %s | %s | %s | %s |" % (
            names[w], "<= 0.5" if target else "", ci(h),
            ("met" if h["median"] <= 0.5 else "missed") if target else "",
            ci(ratios["psb_%s_batch" % w])))
    L += ["", "Ratios: psb's figure over the other's, the median of the rounds' pairs "
          "[bootstrap 95 % interval]."]

    # A synchronous round answers its trainers together: of a bucket's two hook times, the
    # shorter is the last sender's (the round trip alone), the longer the first's, who also
    # waited for the other trainer to get there. Buckets pair up by their place among a
    # batch's completions, which come in order.
    def split(way, p):
        by = {}
        for r in rows[(way, p)]:
            if r["type"] == "hook_future_metric":
                by.setdefault((int(r["batch"]), int(r["rank"])), []).append(float(r["ms"]))
        last, first = [], []
        for (b, rank), v in by.items():
            others = [by[k] for k in by if k[0] == b and k[1] != rank]
            if len(others) != 1 or len(others[0]) != len(v) or rank > min(
                    k[1] for k in by if k[0] == b):
                continue
            for x, y in zip(v, others[0]):
                last.append(min(x, y))
                first.append(max(x, y))
        return last, first
    if plan["ntrainer"] == 2:
        parts = {w: [split(w, p) for p in rounds] for w in ways}
        med_split = {w: [statistics.median(statistics.mean(s[i]) for s in parts[w] if s[i])
                         for i in (0, 1)] for w in ways}
        summary["hook_split_ms"] = {w: {"last_sender": v[0], "first_sender": v[1]}
                                    for w, v in med_split.items()}
        L += ["", "| way | hook future mean, a bucket's last sender (its round trip) | "
              "the first sender (and its wait for the other) |", "|---|---:|---:|"]
        for w in ways:
            L.append("| %s | %.1f | %.1f |" % (names[w], med_split[w][0], med_split[w][1]))
        L += ["", "The two trainers' hook times of a bucket, paired (a batch's k-th of "
              "each): the median over the runs of each run's mean."]

    def cdf(v):
        v = sorted(v)
        step = max(1, len(v) // 200)
        pts = [(x, (i + 1) / len(v)) for i, x in enumerate(v) if i % step == 0 or i == len(v) - 1]
        return pts
    for metric, title, fname in (("hook_future_metric", "Hook future, all trainers and runs",
                                  "hook.svg"),
                                 ("batch_level_metric", "Batch time, all trainers and runs",
                                  "batch.svg")):
        series = [{"name": w, "points": cdf([x for p in rounds for x in samples(w, p, metric)]),
                   "step": True, "markers": False} for w in ways]
        write_atomic(os.path.join(out, fname), line_plot(
            title, "ms", "fraction of samples at or below", series, logx=True))
    return summary, L, True


def sweep(out):
    """scripts/bench/sweep.sh: raw/{local,slurm,dry_run}-REP.json (each job's settings,
    trial, launch, start and end times and figures; the sweep's start and end)."""
    raw = Raw(out)
    reps = sorted(int(r) for (r,) in raw_index(raw, r"local-(\d+)\.json"))
    launchers = ("local", "slurm", "dry_run")
    runs = {(l, r): raw.json(f"{l}-{r}.json") for l in launchers for r in reps}
    rev = about_revision(out)

    def overhead(run):
        jobs = run["jobs"]
        if run["launcher"] == "dry_run":
            n = run["dry_run_jobs"]
            return n, (run["t_end"] - run["t_start"]) / n
        ran = sum(j["ended_at"] - j["started_at"] for j in jobs)
        # slurm: until the last job ended, not until psb-sweep's wait looked
        end = max(j["ended_at"] for j in jobs) if run["launcher"] == "slurm" else run["t_end"]
        return len(jobs), (end - run["t_start"] - ran) / len(jobs)

    over = {l: [overhead(runs[(l, r)]) for r in reps] for l in launchers}
    done = {l: sum(j["done"] for r in reps for j in runs[(l, r)]["jobs"]) for l in launchers}
    settings = []
    for j in runs[("local", reps[0])]["jobs"]:
        if j["settings"] not in settings:
            settings.append(j["settings"])
    settings.sort(key=lambda s: json.dumps(s, sort_keys=True))

    def cell(l, s, fig):
        v = [j["figures"][fig] for r in reps for j in runs[(l, r)]["jobs"]
             if j["settings"] == s and j["done"]]
        if not v:
            return "", None
        m = statistics.mean(v)
        sd = statistics.stdev(v) if len(v) > 1 else 0.0
        return "%.2f ± %.2f (%d)" % (m, sd, len(v)), m
    keys = list(settings[0].keys())
    L = ["psb %s, psb-sweep: config/sweep-example.json, %d settings x 3 trials, %d reps of "
         "each launcher; goodput in Gbps (the workers' sum), mean ± sd over every trial "
         "(their number)" % (rev, len(settings), len(reps)), "",
         "| " + " | ".join(keys) + " | local | slurm |",
         "|" + "---|" * len(keys) + "---:|---:|"]
    best = {}
    for s in settings:
        row = [str(s[k]) for k in keys]
        for l in ("local", "slurm"):
            c, m = cell(l, s, "goodput_gbps")
            row.append(c)
            if m is not None and (l not in best or m > best[l][1]):
                best[l] = (s, m)
        L.append("| " + " | ".join(row) + " |")
    L += ["", "Best setting by goodput: " + "; ".join(
        "%s: %s (%.2f Gbps)" % (l, ", ".join("%s=%s" % (k, best[l][0][k]) for k in keys),
                                best[l][1]) for l in ("local", "slurm") if l in best), "",
          "| launcher | jobs a sweep | jobs done | launcher overhead per job, ms: median "
          "[min, max] over the reps | sweep wall time, s: median |", "|---|---:|---:|---:|---:|"]
    summary = {"git_revision": rev, "reps": len(reps), "overhead_ms": {}, "done": done}
    for l in launchers:
        ms = [o * 1000 for _, o in over[l]]
        wall = statistics.median(runs[(l, r)]["t_end"] - runs[(l, r)]["t_start"] for r in reps)
        summary["overhead_ms"][l] = {"median": statistics.median(ms), "min": min(ms),
                                     "max": max(ms)}
        L.append("| %s | %d | %s | %.1f [%.1f, %.1f] | %.1f |" % (
            l, over[l][0][0], "-" if l == "dry_run" else "%d of %d" % (
                done[l], over[l][0][0] * len(reps)),
            statistics.median(ms), min(ms), max(ms), wall))
    L += ["", "Overhead: the sweep's wall time less the time its jobs ran, over its jobs (local: "
          "until psb-sweep returned; slurm: from the sbatch call to the last job's end, one "
          "array task at a time; dry_run: the whole dry run, which runs nothing)."]
    ok = all(done[l] == over[l][0][0] * len(reps) for l in ("local", "slurm"))
    return summary, L, ok


KINDS = {"revs": (revs, 2), "job": (job, 2), "soak": (soak, 1), "pushpull": (pushpull, 2), "ctl": (ctl, 2),
         "ctl_hostile": (ctl_hostile, 2), "mc_emu": (mc_emu, 2), "mc_send": (mc_send, 2),
         "staleness": (staleness, 2), "passthrough": (passthrough, 2),
         "mc_storm": (mc_storm, 2), "client": (client, 2), "rpcps": (rpcps, 2),
         "sweep": (sweep, 2)}


def summarize(kind, out):
    """Write out's summary.json and summary.md; returns (table lines, run ok)."""
    fn, indent = KINDS[kind]
    summary, lines, ok = fn(out)
    version = about_line(out, "version")
    if version is not None:
        # what was measured, from ABOUT.txt: runs from before it named the version (those
        # committed then) summarize as they did
        summary = {"psb_version": version, "git_revision": about_revision(out), **summary}
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
