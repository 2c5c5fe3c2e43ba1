#!/usr/bin/env python3
"""Hostile clients against psb's control plane, in paired windows (scripts/bench/ctl_hostile.sh).

  ctl_hostile.py windows --pairs N --window S --worker W.ctl --target NAME:CTL:PROM ...
                         --behaviours B,... --files DIR
  ctl_hostile.py client BEHAVIOUR CTL PROM FILES

One experiment runs on the worker for the whole measurement. For every target process and
every behaviour, windows of S seconds alternate without and with the hostile client (order
ABBA..., so a slow drift of the machine cancels out). A window records the worker's
requests/s (the replies its worker roles received, over psb's own clock, read on a kept
connection), the target's control-plane counters, and the hostile client's CPU time.
Behaviours:

  pipeline  status requests written back to back, replies read as they come
  noread    counters requests, replies never read; again after each disconnect
  files     load of a FIFO, /dev/zero, a directory and a file over node.file_max, in turn,
            one request after the other
  trickle   32 HTTP connections sending their request a byte per 0.25 s and 16 sending
            nothing, while an honest scrape (2 s timeout) runs every 0.5 s

Prints one JSON object: every window, and per target and behaviour the paired ratios
(with / without), their median with a bootstrap 95 % interval, the control plane's share
of the target's main lcore, the limits it counted, and the honest scrapes' outcome.
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ctl_paired import Ctl, median_ci  # noqa: E402

BEHAVIOURS = ("pipeline", "noread", "files", "trickle")
LIMIT_COUNTERS = ("throttled_passes", "socket_deferred", "socket_busy", "socket_overflows",
                  "socket_idle_closed", "file_refused", "prometheus_timeouts",
                  "prometheus_evicted", "prometheus_refused", "prometheus_incomplete")
HTTP_REQUEST = b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"


# --- hostile clients (each runs in a process of its own until SIGTERM)

def stop_on_term():
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    return done


def unix(path):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    return s


def hostile_pipeline(ctl, done):
    s = unix(ctl)
    chunk = b'{"cmd":"status"}\n' * 4096

    def reader():
        try:
            while s.recv(1 << 20):
                pass
        except OSError:
            pass

    threading.Thread(target=reader, daemon=True).start()
    write_all(s, chunk, done)


def write_all(s, chunk, done):
    try:
        while not done.is_set():
            s.sendall(chunk)
    except OSError:
        pass


def hostile_noread(ctl, done):
    chunk = b'{"cmd":"counters"}\n' * 256
    while not done.is_set():
        s = unix(ctl)
        write_all(s, chunk, done)	# until psb drops it
        s.close()


def hostile_files(ctl, files, done):
    s = unix(ctl)
    f = s.makefile("rw")
    names = [os.path.join(files, "fifo"), "/dev/zero", os.path.join(files, "dir"),
             os.path.join(files, "big.json")]
    i = 0
    while not done.is_set():
        f.write(json.dumps({"cmd": "load", "file": names[i % len(names)]}) + "\n")
        f.flush()
        r = json.loads(f.readline())
        if "error" not in r:
            raise SystemExit("ctl_hostile: load of %s was not refused: %s" %
                             (names[i % len(names)], r))
        i += 1


def hostile_trickle(port, done):
    conns = []
    while not done.is_set():
        while len(conns) < 48:
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=1)
                s.setblocking(False)
                conns.append([s, 0, len(conns) < 32])
            except OSError:
                break
        for c in list(conns):
            try:
                if c[0].recv(65536) == b"":
                    raise OSError("closed")
            except BlockingIOError:
                pass
            except OSError:
                c[0].close()
                conns.remove(c)
                continue
            if c[2]:
                try:
                    c[0].send(HTTP_REQUEST[c[1] % len(HTTP_REQUEST):][:1])
                    c[1] += 1
                except OSError:
                    pass
        done.wait(0.25)


def client(args):
    """The behaviour in a thread: blocked in a send, it cannot keep SIGTERM waiting."""
    done = stop_on_term()
    b, ctl, prom, files = args.behaviour, args.ctl, int(args.prom), args.files
    run = {"pipeline": lambda: hostile_pipeline(ctl, done),
           "noread": lambda: hostile_noread(ctl, done),
           "files": lambda: hostile_files(ctl, files, done),
           "trickle": lambda: hostile_trickle(prom, done)}[b]
    t = threading.Thread(target=run, daemon=True)
    t.start()
    while not done.is_set() and t.is_alive():
        done.wait(0.1)
    if not done.is_set():
        raise SystemExit("ctl_hostile: the %s client stopped by itself" % b)


# --- an honest scrape, as a monitoring system does it (a fresh connection, 2 s timeout)

def scrape(port):
    t0 = time.monotonic()
    try:
        s = socket.create_connection(("127.0.0.1", port), timeout=2)
        s.settimeout(max(0.01, 2 - (time.monotonic() - t0)))
        s.sendall(b"GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
        buf = b""
        while True:
            d = s.recv(1 << 16)
            if not d:
                break
            buf += d
        s.close()
        ok = buf.startswith(b"HTTP/1.1 200") and b"psb_node_info" in buf
    except OSError:
        ok = False
    return ok, time.monotonic() - t0


class Scraper(threading.Thread):
    def __init__(self, port):
        super().__init__(daemon=True)
        self.port, self.done, self.results = port, threading.Event(), []

    def run(self):
        while not self.done.is_set():
            self.results.append(scrape(self.port))
            self.done.wait(0.5)


# --- paired windows

def cpu_s(pid):
    try:
        f = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK")


def windows(args):
    worker = Ctl(args.worker)
    targets = []
    for t in args.target:
        name, ctl, prom = t.split(":", 2)
        targets.append({"name": name, "ctl": ctl, "prom": int(prom), "conn": None})
    behaviours = args.behaviours.split(",")
    for b in behaviours:
        if b not in BEHAVIOURS:
            raise SystemExit("ctl_hostile: unknown behaviour %s (expected %s)" %
                             (b, ", ".join(BEHAVIOURS)))

    def snapshot(t):
        # the worker roles' replies received and psb's clock, read in one go: the experiment's
        # own request count is published only every 50 ms, too coarse for 1 s windows
        c = worker.call({"cmd": "counters"})["counters"]
        replies = sum(r["rx_pkts"] for n, r in c["roles"].items() if n.startswith("worker"))
        ctl = t["conn"].call({"cmd": "counters", "filter": "control"})["counters"]
        return replies, c["node"]["uptime_s"], ctl

    out = []
    for t in targets:
        # connected when its turn comes: idle meanwhile, psb would close it (ctl_idle_timeout)
        t["conn"] = Ctl(t["ctl"])
        for b in behaviours:
            print("  %s, %s:" % (t["name"], b), end="", file=sys.stderr, flush=True)
            for k in range(args.pairs):
                for phase in (("off", "on") if k % 2 == 0 else ("on", "off")):
                    proc = scr = None
                    if phase == "on":
                        proc = subprocess.Popen([sys.executable, __file__, "client", b,
                                                 t["ctl"], str(t["prom"]), args.files])
                        time.sleep(0.3)	# connected and at it
                        if b == "trickle":
                            scr = Scraper(t["prom"])
                            scr.start()
                    r0, e0, c0 = snapshot(t)
                    cpu0 = cpu_s(proc.pid) if proc else 0.0
                    time.sleep(args.window)
                    r1, e1, c1 = snapshot(t)
                    w = {"target": t["name"], "behaviour": b, "pair": k, "phase": phase,
                         "seconds": e1 - e0, "requests_per_s": (r1 - r0) / (e1 - e0)}
                    hz = c1["tsc_hz"]
                    w["control_pct"] = 100.0 * (c1["main_cycles"] - c0["main_cycles"]) / hz / \
                        (e1 - e0)
                    w["limits"] = {n: c1.get(n, 0) - c0.get(n, 0) for n in LIMIT_COUNTERS}
                    if proc:
                        w["hostile_cpu_pct"] = 100.0 * (cpu_s(proc.pid) - cpu0) / (e1 - e0)
                        proc.terminate()
                        try:
                            proc.wait(timeout=5)
                        except subprocess.TimeoutExpired:
                            proc.kill()
                            proc.wait()
                        if proc.returncode not in (0, -signal.SIGTERM):
                            raise SystemExit("ctl_hostile: the %s client failed (%d)" %
                                             (b, proc.returncode))
                    if scr:
                        scr.done.set()
                        scr.join()
                        w["scrapes"] = [{"ok": ok, "s": round(s, 4)} for ok, s in scr.results]
                    out.append(w)
                print(" %d" % (k + 1), end="", file=sys.stderr, flush=True)
            print(file=sys.stderr)

    summary = []
    for t in targets:
        # connected when its turn comes: idle meanwhile, psb would close it (ctl_idle_timeout)
        t["conn"] = Ctl(t["ctl"])
        for b in behaviours:
            ws = [w for w in out if w["target"] == t["name"] and w["behaviour"] == b]
            on = [w for w in ws if w["phase"] == "on"]
            off = [w for w in ws if w["phase"] == "off"]
            ratios = [a["requests_per_s"] / o["requests_per_s"] for a, o in zip(on, off)]
            med, lo, hi = median_ci(ratios)
            scrapes = [s for w in on for s in w.get("scrapes", [])]
            summary.append({
                "target": t["name"], "behaviour": b, "pairs": len(ratios),
                "median_ratio": med, "ci95": [lo, hi], "min_ratio": min(ratios),
                "max_ratio": max(ratios),
                "requests_per_s": {"off": statistics.median(w["requests_per_s"] for w in off),
                                   "on": statistics.median(w["requests_per_s"] for w in on)},
                "control_pct": {"off": statistics.mean(w["control_pct"] for w in off),
                                "on": statistics.mean(w["control_pct"] for w in on)},
                "hostile_cpu_pct": statistics.mean(w["hostile_cpu_pct"] for w in on),
                "limits_per_s": {n: sum(w["limits"][n] for w in on) /
                                 sum(w["seconds"] for w in on) for n in LIMIT_COUNTERS},
                "scrapes": {"n": len(scrapes), "ok": sum(s["ok"] for s in scrapes),
                            "max_s": max((s["s"] for s in scrapes), default=None)}})
    print(json.dumps({"window_s": args.window, "pairs": args.pairs, "summary": summary,
                      "windows": out}))


def main():
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="mode", required=True)
    w = sub.add_parser("windows")
    w.add_argument("--pairs", type=int, required=True)
    w.add_argument("--window", type=float, required=True)
    w.add_argument("--worker", required=True, help="the worker's control socket")
    w.add_argument("--target", action="append", required=True, help="NAME:CTL:PROM_PORT")
    w.add_argument("--behaviours", default=",".join(BEHAVIOURS))
    w.add_argument("--files", required=True, help="directory of fifo, zero, dir, big.json")
    c = sub.add_parser("client")
    c.add_argument("behaviour", choices=BEHAVIOURS)
    c.add_argument("ctl")
    c.add_argument("prom")
    c.add_argument("files")
    a = ap.parse_args()
    windows(a) if a.mode == "windows" else client(a)


if __name__ == "__main__":
    main()
