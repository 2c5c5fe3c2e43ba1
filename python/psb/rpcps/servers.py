"""Parameter servers, each an RPC rank the master creates by id and calls by its RRef:
info(rref) (what trainers need to reach it), reset_state(rref) (before the measured run),
metrics(rref) (its samples) and stop(rref).

RpcParameterServer: torch RPC. average_gradient runs as async_execution: the bucket of a
batch waits, as a future, until every trainer sent it; then every one gets the sum.

PsbParameterServer: psb's parameter server, psb-ksrv (the psb server on kernel sockets:
same protocol and semantics as psb --role server) in synchronous rounds with --num-workers
the trainer count, each round answered with its own sum (--sync-value round), run by this rank as a child process. reset_state starts it again on the
same port, with an empty store: every key afresh. Its samples are the rounds it closed, as
psb-ksrv records them (--rounds-file): per key and round the wait from the first trainer's
push to the last's, the time spent summing, and the round from first push to the answers.
"""
import glob
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time

import torch
import torch.distributed.rpc as rpc

from .metrics import Recorder


class RpcParameterServer:
    """max_pending buckets (and max_pending_mb of their sums) wait for their last trainer
    at most: a bucket beyond either is refused, its trainer told why, and counted."""
    TAKES = {"max_pending": (int, 1, 1 << 20), "max_pending_mb": (int, 1, 1 << 20)}

    def __init__(self, rank, trainer_count, ctx, max_pending=4096, max_pending_mb=4096):
        self.rank = rank
        self.trainer_count = trainer_count
        self.max_pending = max_pending
        self.max_bytes = max_pending_mb << 20
        self.lock = threading.Lock()
        self.pending = {}
        self.bytes = 0
        self.refused = 0
        self.rec = Recorder()

    @staticmethod
    def info(rref):
        self = rref.local_value()
        return "RPC, buckets waiting at most %d and %d MiB" % (self.max_pending,
                                                              self.max_bytes >> 20)

    def _refuse(self, fut, batch, key, grad):
        self.refused += 1
        fut.set_exception(RuntimeError(
            "RPC server %d: bucket %#x of batch %d (%d B) refused: %d buckets, %d MiB wait "
            "for their other trainers (at most max_pending %d, max_pending_mb %d); %d "
            "refused so far" % (self.rank, key, batch, grad.numel() * grad.element_size(),
                                len(self.pending), self.bytes >> 20, self.max_pending,
                                self.max_bytes >> 20, self.refused)))
        return fut

    @staticmethod
    @rpc.functions.async_execution
    def average_gradient(rref, batch, key, grad):
        self = rref.local_value()
        fut = torch.futures.Future()
        now = time.perf_counter()
        with self.lock:
            e = self.pending.get((batch, key))
            if e is None:
                size = grad.numel() * grad.element_size()
                if len(self.pending) >= self.max_pending or \
                        self.bytes + size > self.max_bytes:
                    return self._refuse(fut, batch, key, grad)
                self.bytes += size
                e = self.pending[(batch, key)] = {"sum": grad, "futs": [], "t0": now,
                                                  "add": 0.0, "size": size}
            else:
                t = time.perf_counter()
                e["sum"] += grad
                e["add"] += time.perf_counter() - t
            e["futs"].append(fut)
            if len(e["futs"]) < self.trainer_count:
                return fut
            del self.pending[(batch, key)]
            self.bytes -= e["size"]
        self.rec.add("straggler_metric", "straggler", (now - e["t0"]) * 1e3, batch)
        self.rec.add("gradient_average_metric", "average", e["add"] * 1e3, batch)
        for f in e["futs"]:
            f.set_result(e["sum"])
        self.rec.add("batch_level_metric", "batch_all",
                     (time.perf_counter() - e["t0"]) * 1e3, batch)
        return fut

    @staticmethod
    def reset_state(rref):
        self = rref.local_value()
        with self.lock:
            left = len(self.pending)
            self.pending = {}
            self.bytes = 0
        self.rec.clear()
        return left

    @staticmethod
    def metrics(rref):
        return rref.local_value().rec.take()

    @staticmethod
    def stop(rref):
        return None


PID_FILE = "psb-ksrv.pid"


def clean_scratch(scratch):
    """The launcher's end: every psb-ksrv a server of this invocation started and did not
    end (its rank was ended first) killed, the servers' files removed."""
    for d in glob.glob(os.path.join(scratch, "*", "")):
        try:
            pid = int(open(os.path.join(d, PID_FILE)).read())
            with open("/proc/%d/cmdline" % pid, "rb") as f:
                mine = d.encode() in f.read()       # its --ready-file is in d
            if mine:
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass                                    # none, or ended already
    shutil.rmtree(scratch, ignore_errors=True)


def find_ksrv():
    """psb-ksrv: PSB_KSRV, else the build tree beside this package, else PATH."""
    exe = os.environ.get("PSB_KSRV")
    if exe:
        return exe
    here = os.path.dirname(os.path.abspath(__file__))
    built = os.path.join(here, "..", "..", "..", "app", "psb-ksrv", "psb-ksrv")
    if os.path.exists(built):
        return os.path.normpath(built)
    return shutil.which("psb-ksrv")


class PsbParameterServer:
    TAKES = {"seg_size": (int, 0, 8932), "max_value": (int, 4, 1 << 30),
             "start_timeout": (float, 0.1, 600)}

    def __init__(self, rank, trainer_count, ctx, seg_size=0, max_value=256 << 20,
                 start_timeout=10.0):
        self.exe = find_ksrv()
        if self.exe is not None and not os.access(self.exe, os.X_OK):
            raise RuntimeError("psb server: %s (PSB_KSRV) is not an executable psb-ksrv" %
                               self.exe)
        if self.exe is None:
            raise RuntimeError("psb server: psb-ksrv not found (build psb: meson setup build "
                               "&& ninja -C build, or set PSB_KSRV)")
        self.ip = ctx["psb_ip"]
        self.port = 0
        self.seg_size = seg_size or seg_size_for(self.ip)
        # each round's answers carry that round's sum (the batch's gradients), not the
        # running total of every batch a key was pushed in
        self.args = ["--num-workers", str(trainer_count), "--sync", "--sync-value", "round",
                     "--max-value", str(max_value), "--seg-size", str(self.seg_size), "-q"]
        self.start_timeout = start_timeout
        # a backstop: psb-ksrv ends by itself once the whole benchmark's time is up
        self.args += ["--duration", "%g" % ctx.get("duration", 3600)]
        self.dir = tempfile.mkdtemp(prefix="server%d." % rank, dir=ctx.get("scratch"))
        self.proc = None
        self.rounds = []
        self._start()

    def _start(self):
        ready = os.path.join(self.dir, "ready")
        for f in ("ready", "stats.json", "rounds.csv", PID_FILE):
            if os.path.exists(os.path.join(self.dir, f)):
                os.unlink(os.path.join(self.dir, f))
        self.log = open(os.path.join(self.dir, "psb-ksrv.log"), "a")
        self.proc = subprocess.Popen(
            [self.exe, "--ip", self.ip, "--port", str(self.port), "--ready-file", ready,
             "--stats-file", os.path.join(self.dir, "stats.json"),
             "--rounds-file", os.path.join(self.dir, "rounds.csv"), *self.args],
            stdout=self.log, stderr=subprocess.STDOUT)
        # for the launcher, should this rank be ended before it ends psb-ksrv
        with open(os.path.join(self.dir, PID_FILE), "w") as f:
            f.write("%d\n" % self.proc.pid)
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError("psb server: psb-ksrv exited (status %d) at start: %s" %
                                   (self.proc.returncode, self._log_tail()))
            if os.path.exists(ready) and open(ready).read().strip():
                self.port = int(open(ready).read().split()[0])
                return
            time.sleep(0.01)
        self._end()
        raise RuntimeError("psb server: psb-ksrv did not get ready within %.1f s: %s" %
                           (self.start_timeout, self._log_tail()))

    def _log_tail(self):
        self.log.flush()
        with open(os.path.join(self.dir, "psb-ksrv.log")) as f:
            return " | ".join(f.read().strip().splitlines()[-3:]) or "(no output)"

    def _end(self):
        """End psb-ksrv (its stats and rounds written); its rounds become samples."""
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None
        self.log.close()
        path = os.path.join(self.dir, "rounds.csv")
        if os.path.exists(path):
            self.rounds = read_rounds(path)

    @staticmethod
    def info(rref):
        self = rref.local_value()
        return "%s:%d" % (self.ip, self.port)

    @staticmethod
    def reset_state(rref):
        self = rref.local_value()
        self._end()
        self.rounds = []
        self._start()
        return 0

    @staticmethod
    def metrics(rref):
        self = rref.local_value()
        self._end()
        out = []
        for r in self.rounds:
            out.append(("straggler_metric", "straggler", r["round"], r["wait_ms"]))
            out.append(("gradient_average_metric", "average", r["round"], r["sum_ms"]))
            out.append(("batch_level_metric", "batch_all", r["round"], r["round_ms"]))
        return out

    @staticmethod
    def stop(rref):
        self = rref.local_value()
        self._end()
        shutil.rmtree(self.dir, ignore_errors=True)
        return None


# psb's datagram: IPv4 20 B, UDP 8 B and psb's header 40 B before the value bytes, at most
# 9000 B (psb_seg_size_for_mtu)
DGRAM_OVERHEAD = 68
SEG_MAX = 9000 - DGRAM_OVERHEAD


def seg_size_for(ip):
    """The value bytes a datagram carries unfragmented on ip's interface (its MTU less
    psb's overhead, a multiple of 4, at most SEG_MAX; 1432, MTU 1500's, when unknown)."""
    mtu = 1500
    try:
        out = subprocess.run(["ip", "-o", "-4", "addr", "show"], capture_output=True,
                             text=True, timeout=5).stdout
        for line in out.splitlines():
            f = line.split()
            if len(f) > 3 and f[3].split("/")[0] == ip:
                with open("/sys/class/net/%s/mtu" % f[1].split("@")[0]) as m:
                    mtu = int(m.read())
                break
    except (OSError, ValueError, subprocess.SubprocessError):
        pass
    return min(SEG_MAX, (mtu - DGRAM_OVERHEAD) & ~3)


def read_rounds(path):
    """psb-ksrv's --rounds-file: key,round,wait_us,sum_us,round_us per closed round."""
    out = []
    with open(path) as f:
        head = f.readline().strip().split(",")
        for line in f:
            v = dict(zip(head, line.strip().split(",")))
            out.append({"key": int(v["key"]), "round": int(v["round"]),
                        "wait_ms": float(v["wait_us"]) / 1e3,
                        "sum_ms": float(v["sum_us"]) / 1e3,
                        "round_ms": float(v["round_us"]) / 1e3})
    return out


CLASSES = {"RpcParameterServer": RpcParameterServer, "PsbParameterServer": PsbParameterServer}
