"""ps-lite's benchmark through the psb package, as a Python trainer would push and pull:
each iteration one pushpull (or push, or pull) of every key's numpy array, then wait; or
one key's request at a time, for round trips (mode 4).

    python3 -m psb.bench --servers IP[:PORT] [--keys 40] [--repeat 10] [--results FILE]
                         [len [mode]]
"""
import argparse
import json
import sys
import time

import numpy as np

import psb


def main(argv=None):
    p = argparse.ArgumentParser(prog="python3 -m psb.bench", description=__doc__.split("\n")[0])
    p.add_argument("--servers", help="IP[:PORT],... (or the DMLC_* variables)")
    p.add_argument("--rank", type=int, default=-1)
    p.add_argument("--keys", type=int, default=40)
    p.add_argument("--repeat", type=int, default=10)
    p.add_argument("--seconds", type=float, default=0, help="run this long instead")
    p.add_argument("--results", help="the result as JSON")
    p.add_argument("len", type=int, nargs="?", default=1048576, help="value bytes a key")
    p.add_argument("mode", type=int, nargs="?", default=1, choices=(1, 2, 3, 4),
                   help="1 PUSH_PULL, 2 PUSH_ONLY, 3 PULL_ONLY, 4 round trips (default 1)")
    a = p.parse_args(argv)
    if a.len <= 0 or a.len % 4:
        p.error("len %d: a multiple of 4 bytes" % a.len)
    nkeys = 1 if a.mode == 4 else a.keys
    w = psb.KVWorker(servers=a.servers, rank=a.rank)
    # keys of this rank and length, as psb-apibench makes them
    keys = np.array([((w.rank + 1) << 56) | (a.len << 20) | k for k in range(nkeys)],
                    dtype=np.uint64)
    vals = np.ones(nkeys * a.len // 4, dtype=np.float32)
    outs = np.empty_like(vals)
    if a.mode == 3:
        w.wait(w.push(keys, vals))
    rtt = []
    it = 0
    t0 = time.perf_counter()
    while (time.perf_counter() - t0 < a.seconds) if a.seconds else it < a.repeat:
        t = time.perf_counter()
        if a.mode == 2:
            w.wait(w.push(keys, vals))
        elif a.mode == 3:
            w.wait(w.pull(keys, outs))
        else:
            w.wait(w.pushpull(keys, vals, outs))
        if a.mode == 4:
            rtt.append((time.perf_counter() - t) * 1e6)
        it += 1
    elapsed = time.perf_counter() - t0
    w.close()
    gbps = 8.0 * a.len * nkeys * it / elapsed / 1e9
    rtt.sort()
    res = {"tool": "python", "mode": a.mode, "len": a.len, "keys": nkeys, "iterations": it,
           "elapsed_s": elapsed, "goodput_gbps": gbps,
           "rtt_p50_us": rtt[len(rtt) // 2] if rtt else 0,
           "rtt_p99_us": rtt[int(len(rtt) * 0.99)] if rtt else 0, "version": psb.__version__}
    line = "psb.bench: mode %d, len %d B, %d keys, %d iterations in %.3f s: goodput %.3f Gbps" % (
        a.mode, a.len, nkeys, it, elapsed, gbps)
    if rtt:
        line += ", round trip p50 %.2f us p99 %.2f us" % (res["rtt_p50_us"], res["rtt_p99_us"])
    print(line)
    if a.results:
        with open(a.results, "w") as f:
            json.dump(res, f)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
