#!/usr/bin/env python3
"""ctypes test of libpsbclient.so: push and pull against a psb-ksrv it starts, check the sums.

usage: test_client_ctypes.py PATH/libpsbclient.so PATH/psb-ksrv
"""
import ctypes
import os
import subprocess
import sys
import tempfile
import threading
import time

from ctypes import POINTER, c_char_p, c_float, c_int, c_size_t, c_uint16, c_uint32, c_uint64, c_void_p

PSB_ST_NO_KEY = 4
PSB_ST_LEN_MISMATCH = 3
N = 2500            # floats per value: 10000 B, 7 datagrams
ROUNDS = 4
WORKERS = 2


def load(path):
    lib = ctypes.CDLL(path)
    lib.psb_client_connect.restype = c_void_p
    lib.psb_client_connect.argtypes = [c_char_p, c_uint16, c_int, c_char_p, c_size_t]
    lib.psb_client_close.restype = None
    lib.psb_client_close.argtypes = [c_void_p]
    lib.psb_client_push.restype = c_int
    lib.psb_client_push.argtypes = [c_void_p, c_uint64, POINTER(c_float), c_size_t, c_uint32]
    lib.psb_client_pull.restype = c_int
    lib.psb_client_pull.argtypes = [c_void_p, c_uint64, POINTER(c_float), c_size_t,
                                    POINTER(c_size_t), c_uint32]
    lib.psb_client_pushpull.restype = c_int
    lib.psb_client_pushpull.argtypes = [c_void_p, c_uint64, POINTER(c_float), POINTER(c_float),
                                        c_size_t, c_uint32]
    lib.psb_client_last_round.restype = c_uint32
    lib.psb_client_last_round.argtypes = [c_void_p]
    lib.psb_client_strerror.restype = c_char_p
    lib.psb_client_strerror.argtypes = [c_int]
    return lib


class Client:
    """A thin Python face of struct psb_client."""

    def __init__(self, lib, server, rank, sync):
        self.lib = lib
        err = ctypes.create_string_buffer(256)
        self.c = lib.psb_client_connect(server.encode(), rank, 1 if sync else 0, err, len(err))
        if not self.c:
            raise RuntimeError("psb_client_connect(%s): %s" % (server, err.value.decode()))

    def close(self):
        if self.c:
            self.lib.psb_client_close(self.c)
            self.c = None

    def check(self, rc, what):
        if rc != 0:
            raise RuntimeError("%s: %s (%d)" % (what, self.lib.psb_client_strerror(rc).decode(), rc))

    def push(self, key, val, rnd=0):
        self.check(self.lib.psb_client_push(self.c, key, val, len(val), rnd), "push %d" % key)

    def pull(self, key, cap, rnd=0):
        out = (c_float * cap)()
        n = c_size_t(0)
        rc = self.lib.psb_client_pull(self.c, key, out, cap, ctypes.byref(n), rnd)
        return rc, out, n.value

    def pushpull(self, key, val, rnd=0):
        out = (c_float * len(val))()
        self.check(self.lib.psb_client_pushpull(self.c, key, val, out, len(val), rnd),
                   "pushpull %d" % key)
        return out


def value(rank, rnd):
    return (c_float * N)(*[float((rank + 1) * (rnd + 1) + i % 17) for i in range(N)])


def expected(rounds_closed):
    return [float(sum((r + 1) * (t + 1) + i % 17 for r in range(WORKERS) for t in range(rounds_closed)))
            for i in range(N)]


def sync_worker(lib, server, rank, errors):
    # ctypes drops the GIL during each call, so the workers block in the library concurrently.
    try:
        c = Client(lib, server, rank, True)
        try:
            for t in range(ROUNDS):
                c.push(1, value(rank, t), t)
                rc, out, n = c.pull(1, N, t + 1)
                c.check(rc, "pull")
                if n != N:
                    raise RuntimeError("pulled %d floats, want %d" % (n, N))
                want = expected(t + 1)
                bad = [i for i in range(N) if out[i] != want[i]]
                if bad:
                    raise RuntimeError("round %d: %d wrong elements, first %d: %g != %g"
                                       % (t, len(bad), bad[0], out[bad[0]], want[bad[0]]))
                got = c.pushpull(2, value(rank, t), t)
                if got[0] != want[0] or got[N - 1] != want[N - 1]:
                    raise RuntimeError("pushpull round %d: %g, want %g" % (t, got[0], want[0]))
        finally:
            c.close()
    except Exception as e:  # reported by the main thread
        errors.append("rank %d: %s" % (rank, e))


def start_server(ksrv, tmp, *extra):
    ready = os.path.join(tmp, "ready")
    cmd = [ksrv, "--ip", "127.0.0.1", "--port", "0", "--ready-file", ready,
           "--duration", "100", "-q"] + list(extra)
    # LD_PRELOAD (a sanitizer runtime for this python) is not for psb-ksrv, which carries its own.
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    proc = subprocess.Popen(cmd, env=env)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("psb-ksrv exited early with %d: %s" % (proc.returncode, cmd))
        try:
            with open(ready) as f:
                return proc, int(f.read().split()[0])
        except (OSError, ValueError, IndexError):
            time.sleep(0.01)
    proc.kill()
    proc.wait()
    raise RuntimeError("psb-ksrv did not become ready within 10 s")


def stop_server(proc):
    """Stop psb-ksrv; its exit code, 0 when it went cleanly (sanitizer reports make it not)."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    lib = load(sys.argv[1])
    ksrv = sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="psb-ctypes-") as tmp:
        procs = []
        try:
            # Synchronous: two workers in threads, exact sums every round.
            proc, port = start_server(ksrv, tmp, "--num-workers", str(WORKERS), "--sync")
            procs.append(proc)
            server = "127.0.0.1:%d" % port
            errors = []
            # Daemon threads: a worker stuck in the library must not keep the test alive.
            threads = [threading.Thread(target=sync_worker, args=(lib, server, r, errors),
                                        daemon=True) for r in range(WORKERS)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=60)
                if t.is_alive():
                    errors.append("a worker thread hung")
            if errors:
                for e in errors:
                    print("FAIL sync:", e, file=sys.stderr)
                return 1
            print("ok: sync, %d workers x %d rounds, exact sums" % (WORKERS, ROUNDS))
            if stop_server(proc) != 0:
                raise RuntimeError("psb-ksrv exited with %d" % proc.returncode)

            # Asynchronous: errors come back as psb status codes.
            os.unlink(os.path.join(tmp, "ready"))
            proc, port = start_server(ksrv, tmp, "--num-workers", "1", "--async")
            procs.append(proc)
            c = Client(lib, "127.0.0.1:%d" % port, 0, False)
            try:
                rc, _, _ = c.pull(77, 4)
                if rc != PSB_ST_NO_KEY:
                    raise RuntimeError("pull of an unknown key: rc %d, want %d" % (rc, PSB_ST_NO_KEY))
                if b"no_key" not in lib.psb_client_strerror(rc):
                    raise RuntimeError("strerror(%d) = %r" % (rc, lib.psb_client_strerror(rc)))
                v = (c_float * 4)(1.0, 2.0, 3.0, 4.0)
                for _ in range(3):
                    c.push(77, v)
                rc, out, n = c.pull(77, 4)
                c.check(rc, "pull")
                if n != 4 or list(out) != [3.0, 6.0, 9.0, 12.0]:
                    raise RuntimeError("async sum %s (n %d), want [3, 6, 9, 12]" % (list(out), n))
                if lib.psb_client_last_round(c.c) != 3:
                    raise RuntimeError("version %d, want 3" % lib.psb_client_last_round(c.c))
                rc, _, n = c.pull(77, 2)
                if rc != PSB_ST_LEN_MISMATCH or n != 4:
                    raise RuntimeError("short pull: rc %d n %d, want %d and 4"
                                       % (rc, n, PSB_ST_LEN_MISMATCH))
            finally:
                c.close()
            if stop_server(proc) != 0:
                raise RuntimeError("psb-ksrv exited with %d" % proc.returncode)
            print("ok: async sums, no_key and length_mismatch")
        except Exception as e:
            print("FAIL:", e, file=sys.stderr)
            return 1
        finally:
            for p in procs:
                stop_server(p)
    return 0


if __name__ == "__main__":
    sys.exit(main())
