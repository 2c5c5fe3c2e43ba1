#!/usr/bin/env python3
"""Do the benchmark figures in the docs come out of the committed raw data?

    scripts/bench/check_docs.py [--update] [ROOT]

1. Every committed run under ROOT/docs/bench (a directory with a summary.md, its script
   named in its ABOUT.txt) whose summary is in summarize.py is summarized again from its raw data, in
   a copy: summary.json, summary.md and its plots (*.svg) must come out byte for byte as
   committed. Its raw data must be one archive, raw.tar.xz, as rawdata.py packs it (the same
   files packed again give the same tar), not a raw/ directory.
2. In README.md and docs/BENCHMARKS.md, a table right after a line
   `<!-- summary: docs/bench/<run>/summary.md -->` must be that file's table, line for line
   (`summary.md#N`: its Nth table).
3. Every docs/bench/<run> the two name must be there.
Runs of scripts whose summary is not in summarize.py yet are listed, not checked.
--update first writes each marked table of the two docs from its summary (after a run's
summary was made again, or a mark was pointed at a new run), then checks.
Exit status 0 when all holds, 1 with every difference listed.
"""
import lzma
import os
import re
import shutil
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawdata import ARCHIVE, pack_tar, unpack_bytes  # noqa: E402
from summarize import KINDS, summarize, write_atomic  # noqa: E402

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


def check_archive(run, rel, errors):
    """The run's raw data: one archive, packed as rawdata.py packs (a tar of the same bytes
    for the same files; the compression is liblzma's, the same for the same input)."""
    if os.path.isdir(os.path.join(run, "raw")):
        errors.append(f"{rel}/raw: not packed (scripts/bench/rawdata.py pack {rel})")
        return
    path = os.path.join(run, ARCHIVE)
    if not os.path.exists(path):
        errors.append(f"{rel}: no {ARCHIVE}")
        return
    try:
        with lzma.open(path) as f:
            tar = f.read()
        if tar != pack_tar(unpack_bytes(path)):
            errors.append(f"{rel}/{ARCHIVE}: not as rawdata.py packs it (unpack it into raw/ "
                          f"and pack it again)")
    except (OSError, ValueError, tarfile.TarError, lzma.LZMAError) as e:
        errors.append(f"{rel}/{ARCHIVE}: {e}")


def check_runs(root, errors):
    checked, skipped = [], []
    for run in runs(root):
        rel = os.path.relpath(run, root)
        check_archive(run, rel, errors)
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
            plots = sorted({f for d in (copy, run) for f in os.listdir(d) if f.endswith(".svg")})
            for f in ["summary.json", "summary.md"] + plots:
                a, b = os.path.join(copy, f), os.path.join(run, f)
                if not os.path.exists(b):
                    errors.append(f"{rel}/{f}: its raw data give it, but it is not committed")
                elif not os.path.exists(a):
                    errors.append(f"{rel}/{f}: committed, but its raw data do not give it")
                elif open(a).read() != open(b).read():
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


def summary_tables(path):
    """The tables of a summary.md, each a list of its lines."""
    tables = [[]]
    for x in open(path).read().splitlines():
        if x.startswith("|"):
            tables[-1].append(x)
        elif tables[-1]:
            tables.append([])
    return [t for t in tables if t]


def update_docs(root):
    """Replace the table after every mark with the summary's table it names."""
    for doc in DOCS:
        path = os.path.join(root, doc)
        lines = open(path).read().splitlines()
        out, i = [], 0
        while i < len(lines):
            out.append(lines[i])
            m = MARK.match(lines[i].strip())
            src = os.path.join(root, m.group(1)) if m else None
            if src and os.path.exists(src):
                tables = summary_tables(src)
                n = int(m.group(2) or 1)
                j = i + 1
                while j < len(lines) and lines[j].strip() == "":
                    out.append(lines[j])
                    j += 1
                k = j
                while k < len(lines) and lines[k].startswith("|"):
                    k += 1
                out += tables[n - 1] if n <= len(tables) else lines[j:k]
                if k == j and n <= len(tables) and k < len(lines) and lines[k].strip():
                    out.append("")	# a new table: keep it apart from what follows
                i = k
                continue
            i += 1
        write_atomic(path, "\n".join(out) + "\n")


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
            tables = summary_tables(path)
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
    args = sys.argv[1:]
    update = "--update" in args
    args = [a for a in args if a != "--update"]
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    if update:
        update_docs(root)
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
