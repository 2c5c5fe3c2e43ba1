#!/usr/bin/env python3
"""The appliance's files form layers: no call cycle among app/psb's files and no include
cycle among its headers, and nothing calls into main.c (it holds main() and its own
helpers). A call is a use of a function another file exports (not static).

usage: check_layers.py SOURCE_ROOT
"""
import glob
import os
import re
import sys


def strip(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    text = re.sub(r"//[^\n]*", "", text)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def sccs(graph):
    """Strongly connected components of more than one node (Tarjan, iterative)."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = n[0]
        n[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = n[0]
                    n[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph.get(w, ())))))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return out


def main():
    root = os.path.join(sys.argv[1], "app", "psb")
    cfiles = sorted(glob.glob(root + "/*.c") + glob.glob(root + "/roles/*.c"))
    hfiles = sorted(glob.glob(root + "/*.h"))
    if len(cfiles) < 10:
        sys.exit("check_layers: no sources under %s" % root)
    name = lambda p: os.path.relpath(p, root)
    src = {name(f): strip(open(f).read()) for f in cfiles}
    defs = {}
    for f, text in src.items():
        for m in re.finditer(r"^([a-z_]\w*)\([^;{]*?\)\s*\{", text, re.M | re.S):
            before = text[:m.start()].rstrip("\n").rsplit("\n", 1)[-1]
            if "static" not in before.split():
                defs.setdefault(m.group(1), f)
    calls, why = {}, {}
    for f, text in src.items():
        for fn in set(re.findall(r"\b([a-z_]\w*)\s*\(", text)):
            g = defs.get(fn)
            if g is not None and g != f:
                calls.setdefault(f, set()).add(g)
                why.setdefault((f, g), []).append(fn)
    bad = []
    for comp in sccs(calls):
        edges = ["%s -> %s (%s)" % (a, b, ", ".join(sorted(why[(a, b)])[:3]))
                 for a in comp for b in comp if (a, b) in why]
        bad.append("call cycle among %s: %s" % (" ".join(comp), "; ".join(edges)))
    for (a, b), fns in sorted(why.items()):
        if b == "main.c":
            bad.append("%s calls into main.c: %s" % (a, ", ".join(sorted(fns))))
    incs = {}
    for h in hfiles + cfiles:
        for inc in re.findall(r'^#include "([^"]+)"', open(h).read(), re.M):
            if os.path.exists(os.path.join(root, inc)) and h.endswith(".h"):
                incs.setdefault(name(h), set()).add(inc)
    for comp in sccs(incs):
        bad.append("include cycle among %s" % " ".join(comp))
    for b in bad:
        print(b)
    print("check_layers: %d files, %d calls between them, %d headers" %
          (len(src), sum(len(v) for v in calls.values()), len(hfiles)))
    sys.exit(1 if bad else 0)


main()
