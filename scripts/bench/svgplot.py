#!/usr/bin/env python3
"""Line charts as SVG text, for benchmark summaries (standard library only, no matplotlib).

    import svgplot
    svg = svgplot.line_plot("Goodput", "message size", "MB/s",
                            [{"name": "tcp", "points": [(64, 12.5), (4096, 800)]}],
                            logx=True, logy=True)

The output is deterministic: the same input gives the same bytes on any machine (coordinates
with one decimal, no timestamps or random ids, series and points drawn in the given order).
summarize.py draws the push/pull plots with it and writes them beside the summaries.
"""
import math
from xml.sax.saxutils import escape

PALETTE = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf"]
LEFT, TOP, BOTTOM, GAP = 72, 40, 56, 16   # margins around the plot area (px)
LEGEND_MIN = 150                          # legend column reserved inside `width`
CHAR_W = 7.0                              # rough width of one 12 px sans-serif character


def _f(v):
    """A coordinate: one decimal, after rounding away last-bit differences between libms."""
    s = "%.1f" % round(v, 6)
    return "0.0" if s == "-0.0" else s


def _esc(s):
    return escape(str(s), {'"': "&quot;", "'": "&apos;"})


def _label(v):
    """Compact tick label: 0.5, 1, 10, 1k, 2.5M; no float noise."""
    v = float("%.3g" % v)
    if v == 0:
        return "0"
    for div, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return "%g%s" % (float("%.3g" % (v / div)), suffix)
    return "%g" % v


def _ok(v, log):
    return v is not None and math.isfinite(v) and (v > 0 or not log)


def _axis(values, log, lim, ticks):
    """(lo, hi, major [(value, label)], minor [value]) for one axis."""
    if lim and not (lim[0] < lim[1] and (lim[0] > 0 or not log)):
        raise ValueError("bad axis limits %r (need lo < hi, and lo > 0 on a log axis)" % (lim,))
    if ticks and not lim:
        values = values + [v for v, _ in ticks if _ok(v, log)]
    if log:
        if lim:
            lo, hi = lim
        elif values:
            lo = 10.0 ** math.floor(math.log10(min(values)) + 1e-9)
            hi = 10.0 ** math.ceil(math.log10(max(values)) - 1e-9)
            if hi <= lo:
                hi = lo * 10
        else:
            lo, hi = 1.0, 10.0
        e0, e1 = math.floor(math.log10(lo)) - 1, math.ceil(math.log10(hi)) + 1

        def inside(v):
            return lo * (1 - 1e-9) <= v <= hi * (1 + 1e-9)
        major = [(10.0 ** e, _label(10.0 ** e)) for e in range(e0, e1 + 1) if inside(10.0 ** e)]
        minor = [m * 10.0 ** e for e in range(e0, e1 + 1) for m in (2, 5) if inside(m * 10.0 ** e)]
    else:
        if lim:
            lo, hi = lim
        elif values:
            lo, hi = min(values), max(values)
            lo = 0.0 if lo >= 0 else lo
        else:
            lo, hi = 0.0, 1.0
        if hi <= lo:
            hi = lo + (abs(lo) or 1.0)
        mag = 10.0 ** math.floor(math.log10((hi - lo) / 5))
        for m in (1, 2, 5, 10, 20):
            step = m * mag
            k0, k1 = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
            if not lim:
                k0, k1 = math.floor(lo / step + 1e-9), math.ceil(hi / step - 1e-9)
            if k1 - k0 <= 7:
                break
        if not lim:
            lo, hi = k0 * step, k1 * step
        major = [(k * step, _label(k * step)) for k in range(k0, k1 + 1)]
        minor = []
    if ticks:
        major = [(v, lab) for v, lab in ticks if _ok(v, log) and lo <= v <= hi]
        minor = []
    return lo, hi, major, minor


def _scale(lo, hi, log, p0, p1):
    """Map data values on [lo, hi] to pixels on [p0, p1]."""
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
        return lambda v: p0 + (math.log10(v) - lo) / (hi - lo) * (p1 - p0)
    return lambda v: p0 + (v - lo) / (hi - lo) * (p1 - p0)


def _line(x1, y1, x2, y2, stroke, extra=""):
    return '<line x1="%s" y1="%s" x2="%s" y2="%s" stroke="%s"%s/>' % (
        _f(x1), _f(y1), _f(x2), _f(y2), stroke, extra)


def _text(x, y, size, s, extra=""):
    return '<text x="%s" y="%s" font-family="sans-serif" font-size="%d"%s>%s</text>' % (
        _f(x), _f(y), size, extra, _esc(s))


def _circle(x, y, fill, stroke):
    return '<circle cx="%s" cy="%s" r="3" fill="%s" stroke="%s" stroke-width="1.5"/>' % (
        _f(x), _f(y), fill, stroke)


def line_plot(title, xlabel, ylabel, series, logx=False, logy=False,
              xticks=None, yticks=None, xlim=None, ylim=None, width=720, height=440):
    """Return an SVG document (str, ending in a newline).

    series: [{"name", "points": [(x, y), ...], "color": "#rrggbb", "dash": bool, "step": bool,
    "markers": bool}]; color defaults to PALETTE in order, dash/step to False, markers to True.
    Points with a None, NaN or infinite coordinate, or one <= 0 on a log axis, are skipped.
    xticks/yticks: [(value, label)] replacing the automatic ticks; xlim/ylim: (lo, hi).
    The legend sits right of the plot; the canvas grows past `width` for long names."""
    drawn = [[(x, y) for x, y in s.get("points", []) if _ok(x, logx) and _ok(y, logy)]
             for s in series]
    x0, x1, xmaj, xmin = _axis([p[0] for pts in drawn for p in pts], logx, xlim, xticks)
    y0, y1, ymaj, ymin = _axis([p[1] for pts in drawn for p in pts], logy, ylim, yticks)

    longest = max([len(s["name"]) for s in series] or [0])
    legend_w = max(LEGEND_MIN, 50 + math.ceil(CHAR_W * longest))
    pl, pt, pr, pb = LEFT, TOP, width - LEGEND_MIN - GAP, height - BOTTOM
    cw, ch = pr + GAP + legend_w, max(height, pt + 18 * len(series) + 20)
    sx, sy = _scale(x0, x1, logx, pl, pr), _scale(y0, y1, logy, pb, pt)
    area = 'x="%d" y="%d" width="%d" height="%d"' % (pl, pt, pr - pl, pb - pt)

    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">'
           % (cw, ch, cw, ch),
           '<rect x="0" y="0" width="%d" height="%d" fill="#ffffff"/>' % (cw, ch),
           '<defs><clipPath id="plotarea"><rect %s/></clipPath></defs>' % area]
    # Gridlines: minor (log axes, 2x and 5x) first, then major, all under the data.
    out += [_line(sx(v), pt, sx(v), pb, "#f0f0f0") for v in xmin]
    out += [_line(pl, sy(v), pr, sy(v), "#f0f0f0") for v in ymin]
    for v, lab in xmaj:
        out += [_line(sx(v), pt, sx(v), pb, "#d8d8d8"), _line(sx(v), pb, sx(v), pb + 4, "#333333"),
                _text(sx(v), pb + 17, 11, lab, ' text-anchor="middle"')]
    for v, lab in ymaj:
        out += [_line(pl, sy(v), pr, sy(v), "#d8d8d8"), _line(pl - 4, sy(v), pl, sy(v), "#333333"),
                _text(pl - 7, sy(v) + 4, 11, lab, ' text-anchor="end"')]

    # Data, clipped to the plot area (matters only when xlim/ylim cut points off).
    out.append('<g clip-path="url(#plotarea)">')
    styles = []
    for i, (s, pts) in enumerate(zip(series, drawn)):
        color = _esc(s.get("color") or PALETTE[i % len(PALETTE)])
        dash = ' stroke-dasharray="7,4"' if s.get("dash") else ""
        fill = "#ffffff" if s.get("dash") else color   # dashed series get hollow markers
        styles.append((color, dash, fill))
        path = []
        for j, (x, y) in enumerate(pts):
            if s.get("step") and j and x != pts[j - 1][0] and y != pts[j - 1][1]:
                path.append((x, pts[j - 1][1]))   # horizontal first, then vertical
            path.append((x, y))
        if len(path) > 1:
            xy = " ".join("%s,%s" % (_f(sx(x)), _f(sy(y))) for x, y in path)
            out.append('<polyline fill="none" stroke="%s" stroke-width="2"'
                       ' stroke-linejoin="round"%s points="%s"/>' % (color, dash, xy))
        if s.get("markers", True):
            out += [_circle(sx(x), sy(y), fill, color) for x, y in pts]
    out += ['</g>', '<rect %s fill="none" stroke="#333333"/>' % area]

    # Title, axis labels, legend.
    mid_x, mid_y = (pl + pr) / 2, (pt + pb) / 2
    out += [_text(mid_x, pt - 16, 14, title, ' font-weight="bold" text-anchor="middle"'),
            _text(mid_x, pb + 40, 12, xlabel, ' text-anchor="middle"'),
            _text(18, mid_y, 12, ylabel,
                  ' text-anchor="middle" transform="rotate(-90 18 %s)"' % _f(mid_y))]
    lx = pr + GAP
    for i, (s, (color, dash, fill)) in enumerate(zip(series, styles)):
        y = pt + 10 + 18 * i
        out.append(_line(lx, y, lx + 30, y, color, ' stroke-width="2"' + dash))
        if s.get("markers", True):
            out.append(_circle(lx + 15, y, fill, color))
        out.append(_text(lx + 38, y + 4, 12, s["name"]))
    out.append('</svg>')
    return "\n".join(out) + "\n"

