#!/usr/bin/env python3
"""Do the benchmark figures in the docs come out of the committed raw data?

    scripts/bench/check_docs.py [--update] [ROOT]
    scripts/bench/check_docs.py --drift | --published | --unnamed [ROOT]
    scripts/bench/check_docs.py --repoint OLD=NEW... [ROOT]

1. Every committed run under ROOT/docs/bench (a directory with a summary.md, its script
   named in its ABOUT.txt) whose summary is in summarize.py is summarized again from its raw data, in
   a copy: summary.json, summary.md and its plots (*.svg) must come out byte for byte as
   committed. Its raw data must be one archive, raw.tar.xz, as rawdata.py packs it (the same
   files packed again give the same tar), not a raw/ directory.
2. In the docs (README.md and every docs/*.md), a table right after a line
   `<!-- summary: docs/bench/<run>/summary.md -->` must be that file's table, line for line
   (`summary.md#N`: its Nth table).
3. Every docs/bench/<run> the docs name must be there.
Runs of scripts whose summary is not in summarize.py yet are listed, not checked.
--update first writes each marked table of the docs from its summary (after a run's
summary was made again, or a mark was pointed at a new run), then checks.
Exit status 0 when all holds, 1 with every difference listed.

The published runs are those a mark names. --drift lists each whose revision (ABOUT.txt's,
a revs run's head when that was the working tree or HEAD) differs from HEAD in the code it
measures (app/, lib/, drivers/, multicast/, and for a client run also api/, pslite/ and
python/, the libraries it runs: git diff REV HEAD -- those, less the programs and libraries
of OWN the run does not use and build-file lines that only name them), with how many
commits and files: a list to act on (scripts/bench/all.sh measures them again), exit
status 0. Runs of older code on purpose (revs runs of two given revisions, a baseline's
run) are named apart. --published prints their names,
--unnamed the runs under docs/bench that no doc names any more (all.sh removes them),
--repoint points every mention of run OLD in the docs at run NEW (marks, paths, plots).
"""
import glob
import lzma
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from rawdata import ARCHIVE, pack_tar, unpack_bytes  # noqa: E402
from summarize import KINDS, summarize, write_atomic  # noqa: E402

MARK = re.compile(r"^<!-- summary: (docs/bench/[^ #]+/summary\.md)(?:#(\d+))? -->$")
# a run named in a doc: by its path, or by a plot's link from docs/ (bench/RUN/x.svg)
NAMED = re.compile(r"(?:docs/|\(|\b)bench/([\w.-]+)")
CODE = ("app", "lib", "drivers", "multicast")	# the code a run measures
# and the code runs of a kind measure besides: client.sh's the client API, the ps-lite header
# and the Python package; rpcps.sh's the client API and the Python package (psb.rpcps)
CODE_OF = {"client": ("api", "pslite", "python"), "rpcps": ("api", "python")}
# Programs and libraries under CODE that only some kinds of run use (they are not in psb or
# in the tools the other runs start): a change to them, or a build file's lines that only
# name them, is no change to what the other runs measured.
OWN = {"app/psb-sweep": ("sweep",), "lib/sweep": ("sweep",), "app/psb-slurm": ()}


def docs(root):
    """The documents that publish figures: README.md, then docs/*.md by name (not
    docs/bench/, which holds the runs)."""
    return ["README.md"] + sorted(os.path.relpath(p, root) for p in
                                  glob.glob(os.path.join(root, "docs", "*.md")))


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
    for doc in docs(root):
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
    for doc in docs(root):
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


def published(root):
    """The runs the docs' marks name, in the order they first do."""
    out = []
    for doc in docs(root):
        for line in open(os.path.join(root, doc)).read().splitlines():
            m = MARK.match(line.strip())
            if m:
                run = m.group(1).split("/")[2]
                if run not in out:
                    out.append(run)
    return out


def named(root):
    """Every run a doc names: its marks, paths, commands and plots."""
    found = set()
    for doc in docs(root):
        found.update(NAMED.findall(open(os.path.join(root, doc)).read()))
    return found


def unnamed(root):
    """The runs under docs/bench that no doc names."""
    d = os.path.join(root, "docs", "bench")
    return sorted(r for r in os.listdir(d) if os.path.isdir(os.path.join(d, r)) and
                  r not in named(root))


def repoint(root, moves):
    """Every mention of run old in the docs now names new ({old: new})."""
    for doc in docs(root):
        path = os.path.join(root, doc)
        text = open(path).read()
        for old, new in moves.items():
            text = re.sub(r"(?<=bench/)%s(?![\w.-])" % re.escape(old), new, text)
        write_atomic(path, text)


def about(run):
    """ABOUT.txt's lines, by their first word."""
    out = {}
    path = os.path.join(run, "ABOUT.txt")
    for line in open(path) if os.path.exists(path) else []:
        k, _, v = line.rstrip("\n").partition(" ")
        out.setdefault(k, v)
    return out


def git(root, *args):
    return subprocess.run(["git", "-C", root] + list(args), capture_output=True, text=True)


def measured_changes(root, rev, code, kind):
    """The files of code that differ between rev and HEAD and that a run of kind measures:
    not the programs and libraries of OWN that it does not use, and not a meson.build whose
    changed lines all name one of those."""
    other = [p for p, kinds in OWN.items() if kind not in kinds]
    spec = list(code) + [":(exclude)" + p for p in other]
    files = git(root, "diff", "--name-only", rev, "HEAD", "--", *spec).stdout.split()
    names = [os.path.basename(p) for p in other]
    kept = []
    for f in files:
        if os.path.basename(f) == "meson.build" and names:
            diff = git(root, "diff", "-U0", rev, "HEAD", "--", f).stdout.splitlines()
            lines = [ln[1:] for ln in diff if ln[:1] in "+-" and ln[:3] not in ("+++", "---")]
            if lines and all(re.search(r"\b(%s)\b" % "|".join(map(re.escape, names)), ln)
                             for ln in lines):
                continue
        kept.append(f)
    return kept


def drift(root):
    """Lines on each published run whose code differs from HEAD's."""
    lines, fixed, n = [], [], 0
    runs = published(root)
    for run in runs:
        a = about(os.path.join(root, "docs", "bench", run))
        # older code on purpose: a baseline, or a revs run of two given revisions (its head
        # was the code then only when it was the working tree or HEAD)
        if "baseline" in a or ("head" in a and a["head"].split()[0] not in ("working", "HEAD")):
            fixed.append(run)
            continue
        words = (a.get("revision") or a.get("head") or "").split()
        rev = next((w for w in words if re.fullmatch(r"[0-9a-f]{40}", w)), None)
        what = "" if "revision" in a else " (revs: its head against %s)" % (
            a.get("base", "?").split()[0])
        if rev is None:
            lines.append(f"  docs/bench/{run}: no revision in its ABOUT.txt")
            n += 1
            continue
        if git(root, "cat-file", "-e", rev + "^{commit}").returncode != 0:
            lines.append(f"  docs/bench/{run}: measured at {rev[:7]}, not in this repository")
            n += 1
            continue
        code = CODE + CODE_OF.get(run.split("-")[0], ())
        changed = measured_changes(root, rev, code, run.split("-")[0])
        if not changed:
            continue
        commits = git(root, "rev-list", "--count", rev + "..HEAD", "--", *changed).stdout.strip()
        files = len(changed)
        n += 1
        lines.append(f"  docs/bench/{run}: measured at {rev[:7]}{what} on "
                     f"{a.get('date', '?')[:10]}{', dirty' if 'dirty=true' in words else ''}: "
                     f"{commits} commit{'' if commits == '1' else 's'} and {files} "
                     f"file{'' if files == 1 else 's'} of {', '.join(c + '/' for c in code)} since")
    head = ("check_docs: %d of the %d published runs measured code that differs from HEAD's "
            "(scripts/bench/all.sh measures them again)%s" % (n, len(runs), ":" if n else ""))
    tail = ["check_docs: older code on purpose (revisions compared, baselines): " +
            ", ".join(fixed)] if fixed else []
    return [head] + lines + tail


def main():
    args = sys.argv[1:]
    flags = {a for a in args if a in ("--update", "--drift", "--published", "--unnamed")}
    moves = {}
    if "--repoint" in args:
        i = args.index("--repoint")
        while i + 1 < len(args) and "=" in args[i + 1]:
            old, new = args.pop(i + 1).split("=", 1)
            moves[old] = new
        args.pop(i)
        if not moves:
            print("check_docs: --repoint OLD=NEW...", file=sys.stderr)
            return 2
    args = [a for a in args if a not in flags]
    if len(args) > 1 or any(a.startswith("-") for a in args):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    root = args[0] if args else os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
    if "--drift" in flags:
        print("\n".join(drift(root)))
        return 0
    if "--published" in flags or "--unnamed" in flags:
        print("\n".join(published(root) if "--published" in flags else unnamed(root)))
        return 0
    if moves:
        repoint(root, moves)
        return 0
    if "--update" in flags:
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
