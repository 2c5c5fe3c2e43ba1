#!/usr/bin/env python3
"""Do the benchmark figures in the docs come out of the committed raw data?

    scripts/bench/check_docs.py [ROOT]

1. Every committed run under ROOT/docs/bench (a directory with a summary.md, its script
   named in its ABOUT.txt) whose summary is in summarize.py is summarized again from its raw data, in
   a copy: summary.json and summary.md must come out byte for byte as committed.
2. In README.md and docs/BENCHMARKS.md, a table right after a line
   `<!-- summary: docs/bench/<run>/summary.md -->` must be that file's table, line for line
   (`summary.md#N`: its Nth table).
3. Every docs/bench/<run> the two name must be there.
Runs of scripts whose summary is not in summarize.py yet are listed, not checked.
Exit status 0 when all holds, 1 with every difference listed.
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from summarize import KINDS, summarize  # noqa: E402

DOCS = ("README.md", "docs/BENCHMARKS.md")
MARK = re.compile(r"^<!-- summary: (docs/bench/[^ #]+/summary\.md)(?:#(\d+))? -->$")


def runs(root):
    """Every committed run: directories of docs/bench holding a summary.md."""
    for d, _, files in sorted(os.walk(os.path.join(root, "docs", "bench"))):
        if "summary.md" in files:
            yield d


def kind_of(run):
    """The benchmark script named on the command line in ABOUT.txt (revs, job, ...)."""
    about = os.path.join(run, "ABOUT.txt")
    if not os.path.exists(about):
        return None
    for line in open(about):
        m = re.match(r"command (?:\S*/)?scripts/bench/(\w+)\.sh\b", line)
        if m:
            return m.group(1)
    return None


def check_runs(root, errors):
    checked, skipped = [], []
    for run in runs(root):
        rel = os.path.relpath(run, root)
        kind = kind_of(run)
        if kind not in KINDS:
            skipped.append(f"{rel} ({kind or 'no command in an ABOUT.txt'})")
            continue
        with tempfile.TemporaryDirectory() as tmp:
            copy = os.path.join(tmp, "run")
            shutil.copytree(run, copy)
            try:
                summarize(kind, copy)
            except Exception as e:  # a summary that cannot be made is a finding, not a crash
                errors.append(f"{rel}: its raw data do not summarize: {e!r}")
                continue
            for f in ("summary.json", "summary.md"):
                if open(os.path.join(copy, f)).read() != open(os.path.join(run, f)).read():
                    errors.append(f"{rel}/{f}: differs from what its raw data give "
                                  f"(scripts/bench/summarize.py {kind} {rel})")
        checked.append(rel)
    return checked, skipped


def table_after(lines, i):
    """The table lines ('|...') that start at the first non-empty line after i."""
    j = i + 1
    while j < len(lines) and lines[j].strip() == "":
        j += 1
    out = []
    while j < len(lines) and lines[j].startswith("|"):
        out.append(lines[j])
        j += 1
    return out


def check_docs(root, errors):
    marked = 0
    for doc in DOCS:
        lines = open(os.path.join(root, doc)).read().splitlines()
        for i, line in enumerate(lines):
            m = MARK.match(line.strip())
            if not m:
                continue
            marked += 1
            path = os.path.join(root, m.group(1))
            if not os.path.exists(path):
                errors.append(f"{doc}:{i + 1}: {m.group(1)} is not there")
                continue
            tables = [[]]
            for x in open(path).read().splitlines():
                if x.startswith("|"):
                    tables[-1].append(x)
                elif tables[-1]:
                    tables.append([])
            n = int(m.group(2) or 1)
            want = tables[n - 1] if n <= len(tables) else None
            got = table_after(lines, i)
            if got != want:
                errors.append(f"{doc}:{i + 1}: the table is not {m.group(1)}'s")
        for n, line in enumerate(lines, 1):
            for ref in re.findall(r"docs/bench/([\w.-]+)", line):
                if not os.path.isdir(os.path.join(root, "docs", "bench", ref)):
                    errors.append(f"{doc}:{n}: docs/bench/{ref} is not there")
    return marked


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(
        os.path.abspath(__file__)), "..", "..")
    errors = []
    checked, skipped = check_runs(root, errors)
    marked = check_docs(root, errors)
    for e in errors:
        print(f"check_docs: {e}", file=sys.stderr)
    print(f"check_docs: {len(checked)} runs summarized again from their raw data, {marked} "
          f"tables in the docs matched to them; {len(errors)} differences")
    if skipped:
        print("check_docs: not checked (their summaries are not in summarize.py yet): " +
              ", ".join(skipped))
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
