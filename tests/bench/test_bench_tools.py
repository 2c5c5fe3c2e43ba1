#!/usr/bin/env python3
"""The benchmarks' tools on data made here: rawdata.py (an archive made the same way each
time, read like raw/, hostile archives refused) and check_docs.py's --drift, --unnamed,
--published and --repoint on a small repository of its own, whose figures are in README.md
and in more than one docs/*.md.

    tests/bench/test_bench_tools.py SOURCE_ROOT
"""
import io
import lzma
import os
import subprocess
import sys
import tarfile
import tempfile
import time

SRC = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
BENCH = os.path.join(SRC, "scripts", "bench")
sys.path.insert(0, BENCH)
import rawdata  # noqa: E402


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def run_dir(tmp, name, files):
    d = os.path.join(tmp, name)
    for n, text in files.items():
        write(os.path.join(d, "raw", n), text)
    return d


def test_rawdata(tmp):
    files = {"b-1.json": '{"x": 1}', "a.csv": "t,v\n0,1\n1,2\n", "plan.json": '{"reps": 2}'}
    one = run_dir(tmp, "one", files)
    raw = rawdata.Raw(one)
    assert raw.names() == ["a.csv", "b-1.json", "plan.json"], raw.names()
    before = (raw.json("b-1.json"), raw.csv("a.csv"), [n for n, _ in raw.match(r"b-(\d)\.json")])
    rawdata.pack(one)
    assert not os.path.exists(os.path.join(one, "raw"))
    raw = rawdata.Raw(one)
    assert (raw.json("b-1.json"), raw.csv("a.csv"),
            [n for n, _ in raw.match(r"b-(\d)\.json")]) == before
    assert rawdata.check(one) is None
    # the same files written in another order, at another time: the same bytes
    two = os.path.join(tmp, "two")
    for n in reversed(sorted(files)):
        write(os.path.join(two, "raw", n), files[n])
        os.utime(os.path.join(two, "raw", n), (time.time() - 86400, time.time() - 86400))
    rawdata.pack(two)
    a, b = (open(os.path.join(d, rawdata.ARCHIVE), "rb").read() for d in (one, two))
    assert a == b, "packing the same files twice gave other bytes"
    # an archive packed otherwise (dates, owners) reads the same but is not canonical
    three = os.path.join(tmp, "three")
    os.makedirs(three)
    tar = io.BytesIO()
    with tarfile.open(fileobj=tar, mode="w") as t:
        for n, text in files.items():
            info = tarfile.TarInfo("raw/" + n)
            data = text.encode()
            info.size, info.mtime, info.uname = len(data), 1700000000, "someone"
            t.addfile(info, io.BytesIO(data))
    write(os.path.join(three, rawdata.ARCHIVE), "")
    with open(os.path.join(three, rawdata.ARCHIVE), "wb") as f:
        f.write(lzma.compress(tar.getvalue()))
    assert rawdata.Raw(three).json("b-1.json") == {"x": 1}
    assert rawdata.check(three) is not None
    # members outside raw/, links: refused, nothing read
    for bad in ("../evil", "raw/../../evil", "other/x", "raw/sub/x"):
        d = os.path.join(tmp, "bad" + str(abs(hash(bad))))
        os.makedirs(d)
        tar = io.BytesIO()
        with tarfile.open(fileobj=tar, mode="w") as t:
            info = tarfile.TarInfo(bad)
            info.size = 1
            t.addfile(info, io.BytesIO(b"x"))
        with open(os.path.join(d, rawdata.ARCHIVE), "wb") as f:
            f.write(lzma.compress(tar.getvalue()))
        try:
            rawdata.Raw(d)
            raise AssertionError(f"{bad}: taken")
        except ValueError:
            pass
    # both forms, or neither: said, not guessed
    write(os.path.join(one, "raw", "late.json"), "{}")
    for d, exc in ((one, ValueError), (os.path.join(tmp, "none"), FileNotFoundError)):
        os.makedirs(d, exist_ok=True)
        try:
            rawdata.Raw(d)
            raise AssertionError(f"{d}: read")
        except exc:
            pass
    print("rawdata: packed twice the same bytes; read from raw/ and the archive alike; "
          "foreign and hostile archives told apart")


def git(root, *args):
    return subprocess.run(["git", "-C", root] + list(args), check=True, capture_output=True,
                          text=True).stdout.strip()


def check_docs(root, *args):
    p = subprocess.run([sys.executable, os.path.join(BENCH, "check_docs.py")] + list(args) +
                       [root], capture_output=True, text=True)
    assert p.returncode == 0, (args, p.stdout, p.stderr)
    return p.stdout


def test_check_docs(tmp):
    root = os.path.join(tmp, "repo")
    os.makedirs(root)
    git(root, "init", "-q")
    git(root, "config", "user.email", "bench@example.org")
    git(root, "config", "user.name", "bench")
    write(os.path.join(root, "app", "a.c"), "int a;\n")
    write(os.path.join(root, "docs", "x.md"), "docs\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "one")
    old = git(root, "rev-parse", "HEAD")
    write(os.path.join(root, "app", "a.c"), "int a, b;\n")
    write(os.path.join(root, "lib", "l.c"), "int l;\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "two")
    write(os.path.join(root, "docs", "x.md"), "more docs\n")	# not code a run measures
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "three")
    head = git(root, "rev-parse", "HEAD")
    runs = {"pushpull-2026-01-01a": "revision %s dirty=false" % old,
            "mc_send-2026-01-02b": "revision %s dirty=false" % head,
            "revs-2026-01-01a-roles": "base 1234567 %s\nhead 7654321 %s dirty=false" % (old, old),
            "ctl-2026-01-01a-old": "revision %s dirty=false\nbaseline older code on purpose: x"
                                   % old,
            "staleness-2026-01-03a": "revision %s dirty=false" % head,
            "soak-2025-12-31a": "revision %s dirty=false" % old}
    for run, about in runs.items():
        write(os.path.join(root, "docs", "bench", run, "ABOUT.txt"),
              about + "\ndate 2026-01-01T00:00:00Z\ncommand scripts/bench/x.sh\n")
    write(os.path.join(root, "README.md"),
          "<!-- summary: docs/bench/pushpull-2026-01-01a/summary.md#2 -->\n\n"
          "`docs/bench/pushpull-2026-01-01a/` and pushpull-2026-01-01ab stays\n"
          "<!-- summary: docs/bench/revs-2026-01-01a-roles/summary.md -->\n")
    write(os.path.join(root, "docs", "BENCHMARKS.md"),
          "<!-- summary: docs/bench/mc_send-2026-01-02b/summary.md -->\n"
          "![plot](bench/pushpull-2026-01-01a/goodput.svg)\n"
          "<!-- summary: docs/bench/ctl-2026-01-01a-old/summary.md -->\n")
    # a guide of its own: its figures count as the others' do
    write(os.path.join(root, "docs", "GUIDE.md"),
          "<!-- summary: docs/bench/staleness-2026-01-03a/summary.md#2 -->\n\n"
          "as in `docs/bench/pushpull-2026-01-01a/`\n")
    out = check_docs(root, "--published").split()
    assert out == ["pushpull-2026-01-01a", "revs-2026-01-01a-roles", "mc_send-2026-01-02b",
                   "ctl-2026-01-01a-old", "staleness-2026-01-03a"], out
    assert check_docs(root, "--unnamed").split() == ["soak-2025-12-31a"]
    drift = check_docs(root, "--drift")
    assert "1 of the 5 published runs" in drift, drift
    assert "docs/bench/pushpull-2026-01-01a: measured at %s" % old[:7] in drift, drift
    assert "1 commit and 2 files of app/, lib/, drivers/, multicast/ since" in drift, drift
    assert "mc_send" not in drift.split("older code")[0], drift
    assert "older code on purpose (revisions compared, baselines): revs-2026-01-01a-roles, " \
           "ctl-2026-01-01a-old" in drift, drift
    # a client run measures the client API, the ps-lite header and Python too; no other does
    write(os.path.join(root, "docs", "bench", "client-2026-01-04a", "ABOUT.txt"),
          "revision %s dirty=false\ndate 2026-01-04T00:00:00Z\ncommand scripts/bench/x.sh\n"
          % head)
    write(os.path.join(root, "docs", "CLIENT.md"),
          "<!-- summary: docs/bench/client-2026-01-04a/summary.md -->\n")
    write(os.path.join(root, "pslite", "ps", "ps.h"), "/* ps */\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "four")
    drift = check_docs(root, "--drift")
    assert "docs/bench/client-2026-01-04a: measured at %s on 2026-01-04: 1 commit and 1 file " \
           "of app/, lib/, drivers/, multicast/, api/, pslite/, python/ since" % head[:7] \
           in drift, drift
    assert "2 of the 6 published runs" in drift, drift
    assert "mc_send" not in drift.split("older code")[0], drift
    # a program only the sweep runs use (psb-sweep), and build lines naming it alone: no
    # change to what the other runs measured; a sweep run measured them
    head4 = git(root, "rev-parse", "HEAD")
    write(os.path.join(root, "docs", "bench", "sweep-2026-01-05a", "ABOUT.txt"),
          "revision %s dirty=false\ndate 2026-01-05T00:00:00Z\ncommand scripts/bench/x.sh\n"
          % head4)
    write(os.path.join(root, "docs", "SWEEPS.md"),
          "<!-- summary: docs/bench/sweep-2026-01-05a/summary.md -->\n")
    write(os.path.join(root, "app", "psb-sweep", "s.c"), "int s;\n")
    write(os.path.join(root, "app", "meson.build"), "subdir('psb-sweep')\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "five")
    drift = check_docs(root, "--drift")
    assert "3 of the 7 published runs" in drift, drift
    assert "docs/bench/sweep-2026-01-05a: measured at %s on 2026-01-05: 1 commit and 2 files" \
        % head4[:7] in drift, drift
    assert "client-2026-01-04a: measured at %s on 2026-01-04: 1 commit and 1 file " % head[:7] \
        in drift, drift
    # a build line that names something else is a change for every run
    write(os.path.join(root, "app", "meson.build"), "subdir('psb-sweep')\nsubdir('x')\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "six")
    drift = check_docs(root, "--drift")
    assert "client-2026-01-04a: measured at %s on 2026-01-04: 3 commits and 2 files " % head[:7] \
        in drift, drift
    # a marked table in any docs/*.md is checked against its summary, and written from it
    write(os.path.join(root, "docs", "bench", "staleness-2026-01-03a", "summary.md"),
          "| a |\n|---|\n| 1 |\n\nbetween\n\n| b |\n|---|\n| 2 |\n")
    p = subprocess.run([sys.executable, os.path.join(BENCH, "check_docs.py"), root],
                       capture_output=True, text=True)
    assert "docs/GUIDE.md:1: the table is not docs/bench/staleness-2026-01-03a/summary.md's" \
        in p.stderr, p.stderr
    subprocess.run([sys.executable, os.path.join(BENCH, "check_docs.py"), "--update", root],
                   capture_output=True, text=True)
    assert open(os.path.join(root, "docs", "GUIDE.md")).read().startswith(
        "<!-- summary: docs/bench/staleness-2026-01-03a/summary.md#2 -->\n\n| b |\n|---|\n"
        "| 2 |\n\nas in"), open(os.path.join(root, "docs", "GUIDE.md")).read()
    check_docs(root, "--repoint", "pushpull-2026-01-01a=pushpull-2026-02-01a")
    readme = open(os.path.join(root, "README.md")).read()
    bench = open(os.path.join(root, "docs", "BENCHMARKS.md")).read()
    guide = open(os.path.join(root, "docs", "GUIDE.md")).read()
    assert "docs/bench/pushpull-2026-02-01a/summary.md#2" in readme, readme
    assert "`docs/bench/pushpull-2026-02-01a/`" in readme and "pushpull-2026-01-01ab" in readme
    assert "bench/pushpull-2026-02-01a/goodput.svg" in bench, bench
    assert "`docs/bench/pushpull-2026-02-01a/`" in guide, guide
    assert "pushpull-2026-01-01a/" not in readme + bench + guide
    print("check_docs: --published in the docs' order, --unnamed, --drift by code paths "
          "(older code on purpose apart), --repoint of marks, paths and plots, in README.md "
          "and every docs/*.md")


def test_job_summary(tmp):
    """summarize.py job on a run of job.sh's shapes: 1 server + 2 workers, psb, kernel and
    ps-lite, one run failed with a wrong sum; and an older run (no systems in its plan)
    keeps the table it was published with."""
    import json
    import summarize

    def worker(gbps, verify=0, retries=1):
        return json.dumps({"goodput_gbps": gbps, "failed": 0, "verify_errors": verify,
                           "retries": retries, "state": "done"})
    files = {"plan.json": json.dumps({"sizes": [65536], "runs": 2, "servers": 1, "workers": 2,
                                      "port": "af_xdp", "loss": "2", "mtu": 3500,
                                      "systems": ["psb", "kernel", "pslite"]})}
    for r, (p, k, q) in enumerate(((4.0, 2.0, 1.0), (6.0, 2.0, 2.0)), 1):
        for w in (0, 1):
            files[f"psb-65536-{r}-w{w}.json"] = worker(p)
            files[f"kernel-65536-{r}-w{w}.json"] = worker(k, verify=1 if r == 2 else 0)
            files[f"pslite-65536-{r}-w{w}.json"] = worker(q, retries=0)
    d = run_dir(tmp, "job-new", files)
    summary, lines, ok = summarize.job(d)
    row = summary["rows"][0]
    assert ok and summary["shape"]["workers"] == 2 and summary["shape"]["loss_pct"] == 2.0, summary
    # the kernel's second run had a wrong sum: one pair psb/kernel, two psb/ps-lite
    assert row["kernel_failed"] == 1 and row["pairs"] == 1 and row["ratio_median"] == 2.0, row
    assert row["pslite_pairs"] == 2 and row["pslite_failed"] == 0, row
    assert abs(row["pslite_ratio_median"] - 3.5) < 1e-9, row
    assert row["psb_retries"] == 4 and row["kernel_retries"] == 4, row
    assert lines[0].startswith("1 server(s) + 2 worker(s), psb on af_xdp, MTU 3500, 2 % loss"), lines
    # per worker: the job's 8 Gbps over 2 workers (the median over the pairs kept)
    assert "| 65536 | 2 | 4.00 | 2.00 | 1.50 | 2.00 [2.00, 2.00] | 3.50 [" in lines[4], lines[4]
    assert lines[4].endswith("| 4/4 | 0/1/0 |"), lines[4]
    old = {}
    for r in (1, 2):
        for w in (0, 1):
            old[f"psb-4096-{r}-w{w}.json"] = worker(3.0)
            old[f"kernel-4096-{r}-w{w}.json"] = worker(1.5)
    summary, lines, ok = summarize.job(run_dir(tmp, "job-old", old))
    assert "shape" not in summary and lines[0].startswith("| len | pairs | psb job Gbps"), lines
    assert lines[2].startswith("| 4096 | 2 | 6.00 | 3.00 | 2.00 |"), lines[2]
    print("job summary: several systems, shapes and a failed run; older runs' table kept")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        test_rawdata(tmp)
        test_check_docs(tmp)
        test_job_summary(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
