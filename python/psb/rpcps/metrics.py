"""Timing samples and their tables.

A sample is (type, name, batch, ms): a trainer's batch_level_metric/batch_all, forward_metric
and backward_metric/backward of each batch, and its hook_future_metric/<hook> of each bucket
(from the hook's call to its future's result); a server's batch_level_metric/batch_all (a
bucket of a batch, from the first trainer's arrival to the answer), straggler_metric/
straggler (first arrival to last) and gradient_average_metric/average (the summing). Tables
have a row `type,name` with min, max, mean, variance and stdev in ms, as the RPC benchmark
prints them.
"""
import json
import math
import os
import tempfile
import threading
import time


class Recorder:
    """Samples of one rank; start/end pairs by (type, name, key), thread-safe."""

    def __init__(self):
        self.samples = []
        self.open = {}
        self.lock = threading.Lock()

    def start(self, typ, name, key=None):
        with self.lock:
            self.open[(typ, name, key)] = time.perf_counter()

    def end(self, typ, name, key=None, batch=-1):
        now = time.perf_counter()
        with self.lock:
            t0 = self.open.pop((typ, name, key))
            self.samples.append((typ, name, batch, (now - t0) * 1e3))

    def add(self, typ, name, ms, batch=-1):
        with self.lock:
            self.samples.append((typ, name, batch, ms))

    def clear(self):
        with self.lock:
            self.samples = []
            self.open = {}

    def take(self):
        with self.lock:
            return list(self.samples)


def stats(values):
    """min, max, mean, variance (population), stdev, p50, p99 of values (ms)."""
    v = sorted(values)
    n = len(v)
    mean = sum(v) / n
    var = sum((x - mean) ** 2 for x in v) / n
    return {"count": n, "min": v[0], "max": v[-1], "mean": mean, "variance": var,
            "stdev": math.sqrt(var), "p50": v[(n - 1) // 2], "p99": v[min(n - 1, int(n * 0.99))]}


def summarize(samples):
    """{"type,name": stats} over samples, in the order each row first appears."""
    rows = {}
    for typ, name, _, ms in samples:
        rows.setdefault("%s,%s" % (typ, name), []).append(ms)
    return {k: stats(v) for k, v in rows.items()}


def table(title, summary):
    """The RPC benchmark's table: name, min, max, mean, variance, stdev (ms)."""
    if not summary:
        return "%s\n(no samples)\n" % title
    w = max(len("name"), *(len(k) for k in summary))
    out = [title, "%-*s %10s %10s %10s %12s %10s" % (w, "name", "min", "max", "mean",
                                                     "variance", "stdev")]
    for k, s in summary.items():
        out.append("%-*s %10.3f %10.3f %10.3f %12.3f %10.3f" % (
            w, k, s["min"], s["max"], s["mean"], s["variance"], s["stdev"]))
    return "\n".join(out) + "\n"


def write_atomic(path, text):
    d = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".%s." % os.path.basename(path))
    try:
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def write_samples(path, ranks):
    """ranks: [(rank, role, samples)] as CSV rows rank,role,type,name,batch,ms."""
    lines = ["rank,role,type,name,batch,ms"]
    for rank, role, samples in ranks:
        for typ, name, batch, ms in samples:
            lines.append("%d,%s,%s,%s,%d,%.6f" % (rank, role, typ, name, batch, ms))
    write_atomic(path, "\n".join(lines) + "\n")


def write_json(path, doc):
    write_atomic(path, json.dumps(doc, indent=1, sort_keys=True) + "\n")
