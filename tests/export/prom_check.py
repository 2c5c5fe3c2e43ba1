#!/usr/bin/env python3
"""Check Prometheus text exposition (format 0.0.4) as psb serves it.

  prom_check.py check FILE [SERIES[=VALUE] | SERIES>VALUE ...]
      every line valid, every histogram cumulative with +Inf equal to _count; each
      SERIES (name{labels} as psb writes them) present, with that value or more than it
  prom_check.py grow OLD NEW [--except PREFIX...] [SERIES...]
      every counter in both never went down (but those named PREFIX...);
      each SERIES grew
  prom_check.py get FILE SERIES
      print the value of SERIES
"""
import math
import re
import sys

NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
TYPES = {"counter", "gauge", "histogram", "summary", "untyped"}


class Bad(Exception):
    pass


def value(text, where):
    if text in ("NaN", "+Inf", "-Inf"):
        return float(text.replace("Inf", "inf").replace("NaN", "nan"))
    if not re.fullmatch(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text):
        raise Bad("%s: bad value %r" % (where, text))
    return float(text)


def labels(text, where):
    """name="value",... with \\\\, \\" and \\n escapes; returns a sorted tuple of pairs."""
    out, i = [], 0
    while i < len(text):
        m = LABEL.match(text, i)
        if m is None or text[m.end():m.end() + 2] != '="':
            raise Bad("%s: bad label at %r" % (where, text[i:]))
        name, i, v = m.group(), m.end() + 2, []
        while True:
            if i >= len(text):
                raise Bad("%s: unterminated label value" % where)
            c = text[i]
            if c == "\\":
                esc = text[i + 1:i + 2]
                if esc not in ('\\', '"', "n"):
                    raise Bad("%s: bad escape \\%s" % (where, esc))
                v.append("\n" if esc == "n" else esc)
                i += 2
            elif c == '"':
                i += 1
                break
            elif c == "\n":
                raise Bad("%s: newline in label value" % where)
            else:
                v.append(c)
                i += 1
        if name in (n for n, _ in out):
            raise Bad("%s: label %s twice" % (where, name))
        out.append((name, "".join(v)))
        if i < len(text):
            if text[i] != ",":
                raise Bad("%s: expected ',' at %r" % (where, text[i:]))
            i += 1
    return tuple(sorted(out))


def parse(path):
    """{(name, labels): value}, {name: type}; raises Bad on anything invalid."""
    text = open(path, encoding="utf-8").read()
    if not text.endswith("\n"):
        raise Bad("%s: does not end with a newline" % path)
    samples, types, helps, done, cur = {}, {}, set(), set(), None
    for no, line in enumerate(text[:-1].split("\n"), 1):
        where = "%s:%d" % (path, no)
        if line == "":
            continue
        if line.startswith("#"):
            parts = line.split(" ", 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                if not NAME.fullmatch(parts[2]):
                    raise Bad("%s: bad metric name %r" % (where, parts[2]))
                if parts[2] in done or parts[2] in samples_names(samples):
                    raise Bad("%s: %s after samples of %s" % (where, parts[1], parts[2]))
                if parts[1] == "HELP":
                    if parts[2] in helps:
                        raise Bad("%s: second HELP for %s" % (where, parts[2]))
                    if re.search(r"\\[^\\n]", parts[3] if len(parts) > 3 else ""):
                        raise Bad("%s: bad escape in HELP" % where)
                    helps.add(parts[2])
                else:
                    if len(parts) != 4 or parts[3] not in TYPES:
                        raise Bad("%s: bad TYPE line" % where)
                    if parts[2] in types:
                        raise Bad("%s: second TYPE for %s" % (where, parts[2]))
                    types[parts[2]] = parts[3]
            continue
        m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)(?: (-?\d+))?", line)
        if m is None:
            raise Bad("%s: not a sample: %r" % (where, line))
        name = m.group(1)
        fam = family(name, types)
        if fam != cur:
            if fam in done:
                raise Bad("%s: samples of %s are not together" % (where, fam))
            if cur is not None:
                done.add(cur)
            cur = fam
        if fam not in types:
            raise Bad("%s: %s has no TYPE before its samples" % (where, name))
        key = (name, labels(m.group(2) or "", where))
        if key in samples:
            raise Bad("%s: series %s twice" % (where, show(key)))
        samples[key] = value(m.group(3), where)
    if not samples:
        raise Bad("%s: no samples" % path)
    check_histograms(samples, types, path)
    return samples, types


def family(name, types):
    """The family a sample belongs to: a histogram's are name_bucket, name_sum, name_count."""
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[:-len(suffix)]
        if name.endswith(suffix) and types.get(base) == "histogram":
            return base
    return name


def check_histograms(samples, types, path):
    """Every histogram series: buckets by le, cumulative (never fewer at a larger le),
    ending in +Inf, which equals _count; and a _sum."""
    series = {}
    for (name, lab), v in samples.items():
        base = family(name, types)
        if base == name:
            if types.get(name) == "histogram":
                raise Bad("%s: histogram %s has a plain sample" % (path, name))
            continue
        rest = tuple(p for p in lab if p[0] != "le")
        h = series.setdefault((base, rest), {"buckets": []})
        if name.endswith("_bucket"):
            le = dict(lab).get("le")
            if le is None:
                raise Bad("%s: %s without le" % (path, show((name, lab))))
            h["buckets"].append((value(le, path), v))
        else:
            h[name[len(base) + 1:]] = v
    for key, h in series.items():
        where = "%s: %s" % (path, show(key))
        b = sorted(h["buckets"])
        if not b or b[-1][0] != math.inf:
            raise Bad("%s: no +Inf bucket" % where)
        if any(y[1] < x[1] for x, y in zip(b, b[1:])):
            raise Bad("%s: buckets not cumulative: %s" % (where, b))
        if "count" not in h or "sum" not in h:
            raise Bad("%s: no _count or _sum" % where)
        if b[-1][1] != h["count"]:
            raise Bad("%s: +Inf bucket %g is not _count %g" % (where, b[-1][1], h["count"]))


def samples_names(samples):
    return {n for n, _ in samples}


def show(key):
    name, lab = key
    return name + ("{" + ",".join('%s="%s"' % p for p in lab) + "}" if lab else "")


def series(spec):
    """'name{a="x",b="y"}' as psb writes it -> key."""
    m = re.fullmatch(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?", spec)
    if m is None:
        raise Bad("bad series %r" % spec)
    return (m.group(1), labels(m.group(2) or "", spec))


def main(argv):
    cmd = argv[1]
    if cmd == "check":
        samples, _ = parse(argv[2])
        for spec in argv[3:]:
            op = ">" if ">" in spec else "=" if "=" in spec.rsplit("}", 1)[-1] else None
            s, want = (spec.rsplit(op, 1) if op else (spec, None))
            key = series(s)
            if key not in samples:
                raise Bad("%s: no %s" % (argv[2], s))
            got = samples[key]
            if op == "=" and got != float(want):
                raise Bad("%s: %s is %g, not %s" % (argv[2], s, got, want))
            if op == ">" and not got > float(want):
                raise Bad("%s: %s is %g, not more than %s" % (argv[2], s, got, want))
        print("%s: %d series valid" % (argv[2], len(samples)))
    elif cmd == "grow":
        old, types = parse(argv[2])
        new, _ = parse(argv[3])
        rest = argv[4:]
        skip = []
        while rest and rest[0] == "--except":
            skip.append(rest[1])
            rest = rest[2:]
        n = 0
        for key, v in old.items():
            if types[key[0]] != "counter" or key not in new:
                continue
            if any(key[0].startswith(p) for p in skip):
                continue
            n += 1
            if new[key] < v and not math.isnan(v):
                raise Bad("counter %s went down: %g -> %g" % (show(key), v, new[key]))
        for spec in rest:
            key = series(spec)
            if key not in old or key not in new:
                raise Bad("no %s in both" % spec)
            if not new[key] > old[key]:
                raise Bad("%s did not grow: %g -> %g" % (spec, old[key], new[key]))
        print("%d counters never went down, %d series grew" % (n, len(rest)))
    elif cmd == "get":
        samples, _ = parse(argv[2])
        key = series(argv[3])
        print("%.17g" % samples[key] if key in samples else "none")
    else:
        raise Bad("unknown command %r" % cmd)


if __name__ == "__main__":
    try:
        main(sys.argv)
    except Bad as e:
        print("prom_check: %s" % e, file=sys.stderr)
        sys.exit(1)
