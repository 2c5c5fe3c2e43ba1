#!/usr/bin/env python3
"""Every relative link in README.md and docs/*.md leads somewhere: the file or directory it
names exists inside the tree, and its #anchor is a heading of the Markdown file it names (or
of its own file), as GitHub makes anchors: the heading's text lowercased, spaces to '-',
punctuation dropped, '-1', '-2'... after a repeated one. Links inside code are not links.

    tests/docs/check_links.py SOURCE_ROOT
"""
import glob
import os
import re
import sys
import tempfile
import unicodedata

FENCE = re.compile(r"^\s*(```|~~~)")
HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target) and ![alt](target), an optional "title" after the target
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*<?([^)\s>]*)>?(?:\s+\"[^\"]*\")?\s*\)")
CODE_SPAN = re.compile(r"(`+)(.+?)\1")
SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")


def prose_lines(path):
    """(line number, text) of the lines outside fenced code, inline code removed."""
    fenced = False
    for n, line in enumerate(open(path, encoding="utf-8").read().splitlines(), 1):
        if FENCE.match(line):
            fenced = not fenced
            continue
        if not fenced:
            yield n, line


def slug(text):
    """GitHub's anchor of a heading: its text as rendered, lowercased, every character but
    letters, digits, marks, '_', '-' and spaces dropped, spaces to '-'."""
    parts = CODE_SPAN.split(text)	# prose, then (ticks, code, prose) for each code span
    for i in range(0, len(parts), 3):
        t = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", parts[i])	# a link: its text
        t = re.sub(r"<[^>]+>", "", t)				# inline HTML
        parts[i] = re.sub(r"\*+|(?<!\w)_+|_+(?!\w)", "", t)		# emphasis
    text = "".join(p for i, p in enumerate(parts) if i % 3 != 1)
    out = []
    for c in text.lower():
        if c.isalnum() or c in "_- " or unicodedata.category(c).startswith("M"):
            out.append("-" if c == " " else c)
    return "".join(out)


def anchors(path, cache={}):
    """Every anchor a Markdown file's headings give."""
    if path not in cache:
        seen, found = {}, set()
        for _, line in prose_lines(path):
            m = HEADING.match(line)
            if not m:
                continue
            s = slug(m.group(2))
            n = seen.get(s, 0)
            seen[s] = n + 1
            found.add(s if n == 0 else "%s-%d" % (s, n))
        cache[path] = found
    return cache[path]


def check(root, doc):
    """The broken links of one document, as 'doc:line: why' lines."""
    errors = []
    path = os.path.join(root, doc)
    for n, line in prose_lines(path):
        line = CODE_SPAN.sub("", line)
        for target in LINK.findall(line):
            if SCHEME.match(target) or target.startswith("//"):
                continue				# not a relative link
            file, _, anchor = target.partition("#")
            dest = os.path.normpath(os.path.join(os.path.dirname(path), file)) if file else path
            where = f"{doc}:{n}: ({target})"
            if os.path.relpath(dest, root).startswith(".."):
                errors.append(f"{where}: outside the tree")
            elif not os.path.exists(dest):
                errors.append(f"{where}: {os.path.relpath(dest, root)} is not there")
            elif anchor and not dest.endswith(".md"):
                errors.append(f"{where}: an anchor into a file that is not Markdown")
            elif anchor and anchor not in anchors(dest):
                errors.append(f"{where}: {os.path.relpath(dest, root)} has no heading "
                              f"#{anchor}")
    return errors


def selftest():
    """Anchors GitHub gives these headings, and broken links found, so that a checker that
    finds nothing is not taken for docs without faults."""
    for heading, want in (("Sharing a core: --yield", "sharing-a-core---yield"),
                          ("The staleness experiment's messages",
                           "the-staleness-experiments-messages"),
                          ("psb — a kernel-bypass appliance", "psb--a-kernel-bypass-appliance"),
                          ("Counters: `_total` and *emphasis* in [a link](x.md)",
                           "counters-_total-and-emphasis-in-a-link"),
                          ("Round trip (µs), `psb_kv`", "round-trip-µs-psb_kv")):
        assert slug(heading) == want, (heading, slug(heading), want)
    with tempfile.TemporaryDirectory() as root:
        os.makedirs(os.path.join(root, "docs"))
        with open(os.path.join(root, "docs", "A.md"), "w") as f:
            f.write("# A\n\n## Twice\n\n## Twice\n\n[ok](#twice-1) [ok](B.md#b) [ok](../README.md)\n"
                    "[no](#twice-2) [no](B.md#a) [no](C.md) `[code](C.md)`\n```\n[code](C.md)\n```\n"
                    "[no](../../outside.md) [ok](https://example.org/C.md)\n")
        with open(os.path.join(root, "docs", "B.md"), "w") as f:
            f.write("# B\n")
        with open(os.path.join(root, "README.md"), "w") as f:
            f.write("# R\n")
        found = [e.split(": ", 2)[1] for e in check(root, "docs/A.md")]
        assert found == ["(#twice-2)", "(B.md#a)", "(C.md)", "(../../outside.md)"], found


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else ".")
    selftest()
    docs = ["README.md"] + sorted(os.path.relpath(p, root) for p in
                                  glob.glob(os.path.join(root, "docs", "*.md")))
    errors, links = [], 0
    for doc in docs:
        errors += check(root, doc)
        links += sum(len(LINK.findall(CODE_SPAN.sub("", line)))
                     for _, line in prose_lines(os.path.join(root, doc)))
    for e in errors:
        print(f"check_links: {e}", file=sys.stderr)
    print(f"check_links: {len(docs)} documents, {links} links, {len(errors)} broken")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
