"""The psb Python package against psb-ksrv on loopback (PSB_KSRV names it): numpy arrays
and torch tensors in and out without copies, lens, the GIL released while waiting, and
errors raised with psb's message."""
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time

import numpy as np
import pytest
import torch

import psb


def _free_udp_port():
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Server:
    """psb-ksrv on 127.0.0.1, a free port, ended with the test."""

    def __init__(self, *args):
        self.dir = tempfile.mkdtemp(prefix="psb-py-test.")
        ready = os.path.join(self.dir, "ready")
        self.proc = subprocess.Popen(
            [os.environ["PSB_KSRV"], "--ip", "127.0.0.1", "--port", "0", "--ready-file", ready,
             "--duration", "120", "-q", *args],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if os.path.exists(ready) and open(ready).read().strip():
                self.port = int(open(ready).read().split()[0])
                self.addr = "127.0.0.1:%d" % self.port
                return
            time.sleep(0.02)
        self.stop()
        raise RuntimeError("psb-ksrv did not start")

    def stop(self):
        # SIGTERM: psb-ksrv removes its shared-memory socket and lock file as it exits
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.proc.wait()
        for f in os.listdir(self.dir):
            os.unlink(os.path.join(self.dir, f))
        os.rmdir(self.dir)


@pytest.fixture
def server():
    s = Server("--async", "--num-workers", "2")
    yield s
    s.stop()


def test_numpy_pushpull(server):
    with psb.KVWorker(servers=server.addr) as w:
        keys = np.array([3, 7, 11], dtype=np.uint64)
        vals = np.arange(3 * 256, dtype=np.float32)
        out = np.zeros_like(vals)
        w.wait(w.pushpull(keys, vals, out))
        assert np.array_equal(out, vals)
        # in place: the sums land in vals itself
        w.wait(w.pushpull(keys, vals))
        assert np.array_equal(vals, 2 * np.arange(3 * 256, dtype=np.float32))
        got = np.empty(3 * 256, dtype=np.float32)
        w.wait(w.pull(keys, got))
        assert np.array_equal(got, vals)
        # scale: the sums land multiplied (a mean without another pass), in place too
        # (vals is twice the first push: the store holds 4x it, then 6x)
        w.wait(w.pushpull(keys, vals, out, scale=0.25))
        assert np.array_equal(out, 0.5 * vals)
        half = vals.copy()
        w.wait(w.pushpull(keys, half, scale=0.5))
        assert np.array_equal(half, 1.5 * vals)
        for bad in (float("nan"), float("inf"), 1e300):
            with pytest.raises(ValueError, match="scale"):
                w.pushpull(keys, vals, out, scale=bad)
        with pytest.raises(TypeError):
            w.pushpull(keys, vals, out, scale="half")


def test_lens_and_many_in_flight(server):
    with psb.KVWorker(servers=server.addr) as w:
        keys = [1, 2, 3]
        lens = [1, 1000, 262144]              # one float, ~4 KB, 1 MiB
        vals = np.ones(sum(lens), dtype=np.float32)
        ts = [w.push(keys, vals, lens=lens) for _ in range(5)]
        for t in reversed(ts):
            w.wait(t)
        room = [2, 2000, 300000]
        out = np.zeros(sum(room), dtype=np.float32)
        t = w.pull(keys, out, lens=room)
        while not w.test(t):
            pass
        w.wait(t)
        assert room == lens                    # the lengths received
        # each key's value at the start of its room, the room laid end to end
        at = 0
        for got, space in zip(lens, [2, 2000, 300000]):
            assert np.all(out[at:at + got] == 5) and np.all(out[at + got:at + space] == 0)
            at += space


def test_torch_tensors(server):
    with psb.KVWorker(servers=server.addr) as w:
        keys = torch.tensor([5, 6], dtype=torch.int64).numpy().astype(np.uint64)
        t = torch.full((2, 512), 1.5, dtype=torch.float32)
        out = torch.zeros(2, 512, dtype=torch.float32)
        w.wait(w.pushpull(keys, t, out))
        assert torch.equal(out, t)
        w.wait(w.pull(keys, out))              # written into the tensor's own memory
        assert float(out.sum()) == 1.5 * 1024


def test_threads_release_the_gil():
    s = Server("--sync", "--num-workers", "2")
    try:
        results = {}

        def worker(rank):
            with psb.KVWorker(servers=s.addr, rank=rank, sync=True) as w:
                v = np.full(1024, rank + 1, dtype=np.float32)
                for _ in range(3):
                    w.wait(w.pushpull(np.array([42], dtype=np.uint64), v, np.empty_like(v)))
                out = np.empty_like(v)
                w.wait(w.pull([42], out))
                results[rank] = float(out[0])

        threads = [threading.Thread(target=worker, args=(r,)) for r in (0, 1)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        # a round waits for both workers: only possible with the GIL let go while waiting
        assert results == {0: 9.0, 1: 9.0}
    finally:
        s.stop()


def test_fileno_and_another_thread_sending():
    """A thread waits for one session's operations on its socket (fileno, test) while
    another starts them; psb-ksrv --rounds-file records each synchronous round closed."""
    import select
    d = tempfile.mkdtemp(prefix="psb-py-rounds.")
    rounds = os.path.join(d, "rounds.csv")
    s = Server("--sync", "--num-workers", "2", "--rounds-file", rounds)
    try:
        done = {}

        def trainer(rank):
            with psb.KVWorker(servers=s.addr, rank=rank, sync=True) as w:
                fd = w.fileno()
                assert isinstance(fd, int) and fd >= 0
                vals = [np.full(512, rank + 1, dtype=np.float32) for _ in range(4)]
                pending = []
                lock = threading.Lock()

                def waiter():
                    for _ in range(4):
                        while True:
                            with lock:
                                ts = pending[0] if pending else None
                            if ts is not None and w.test(ts):
                                break
                            select.select([fd], [], [], 0.002)
                        w.wait(ts)
                        with lock:
                            pending.pop(0)
                th = threading.Thread(target=waiter)
                th.start()
                for k in range(4):                  # four keys, each its own round 0
                    ts = w.pushpull(np.array([100 + k], dtype=np.uint64), vals[k])
                    with lock:
                        pending.append(ts)
                th.join(60)
                assert not th.is_alive()
                done[rank] = [float(v.min()) for v in vals] + [float(v.max()) for v in vals]

        threads = [threading.Thread(target=trainer, args=(r,)) for r in (0, 1)]
        for th in threads:
            th.start()
        for th in threads:
            th.join(60)
        assert done == {0: [3.0] * 8, 1: [3.0] * 8}
        s.proc.terminate()
        assert s.proc.wait(10) == 0
        rows = open(rounds).read().splitlines()
    finally:
        s.stop()
        shutil.rmtree(d)
    assert rows[0] == "key,round,len,wait_us,sum_us,round_us"
    assert sorted(int(r.split(",")[0]) for r in rows[1:]) == [100, 101, 102, 103]
    for r in rows[1:]:
        key, rnd, ln, wait, summ, whole = (int(x) for x in r.split(","))
        assert rnd == 0 and ln == 2048 and whole >= wait


def test_wait_lets_another_thread_start():
    """While one thread waits for an operation (a synchronous round that needs the other
    worker), another thread of the same session starts one: wait() holds the session a
    turn at a time, not until its operation ended. Were it held, the start would block
    until a round that only the start lets the other worker close."""
    s = Server("--sync", "--num-workers", "2")
    try:
        with psb.KVWorker(servers=s.addr, rank=0, sync=True) as w0, \
                psb.KVWorker(servers=s.addr, rank=1, sync=True) as w1:
            a = np.full(256, 1, dtype=np.float32)
            b = np.full(256, 1, dtype=np.float32)
            ts_a = w0.pushpull(np.array([300], dtype=np.uint64), a)
            waiter = threading.Thread(target=w0.wait, args=(ts_a,))
            waiter.start()
            time.sleep(0.2)                      # the waiter is in wait(), round 0 open
            started = threading.Event()

            def start_then_wait():
                ts = w0.pushpull(np.array([301], dtype=np.uint64), b)
                started.set()
                w0.wait(ts)
            starter = threading.Thread(target=start_then_wait)
            starter.start()
            blocked = not started.wait(10)
            # the other worker's pushes close both rounds either way (the test ends)
            cd = np.full(512, 2, dtype=np.float32)
            w1.wait(w1.pushpull(np.array([300, 301], dtype=np.uint64), cd))
            starter.join(10)
            waiter.join(10)
            assert not blocked, "pushpull blocked while another thread waited"
            assert not waiter.is_alive() and not starter.is_alive()
            assert np.all(a == 3) and np.all(b == 3) and np.all(cd == 3)
    finally:
        s.stop()


def test_start_lets_go_of_the_gil():
    """A start that waits for room in the window (the round of its first key needs the other
    worker) lets go of the GIL meanwhile: this thread sleeps and wakes on time, and then
    pushes as the other worker."""
    s = Server("--sync", "--num-workers", "2")
    try:
        with psb.KVWorker(servers=s.addr, rank=0, sync=True, window_bytes=65536) as w0, \
                psb.KVWorker(servers=s.addr, rank=1, sync=True) as w1:
            keys = np.array([400, 401], dtype=np.uint64)
            a = np.ones(2 * 16384, dtype=np.float32)        # 64 KiB a key: one at a time
            got = {}

            def start():
                got["ts"] = w0.pushpull(keys, a)
            th = threading.Thread(target=start)
            th.start()
            t0 = time.monotonic()
            time.sleep(0.3)
            late = time.monotonic() - t0
            in_start = th.is_alive()
            w1.wait(w1.pushpull(keys, np.full(2 * 16384, 2, dtype=np.float32)))
            th.join(10)
            assert late < 1.5, "the start held the GIL for %.1f s" % late
            assert in_start, "the start did not wait for the window"
            w0.wait(got["ts"])
            assert np.all(a == 3)
    finally:
        s.stop()


def test_rounds_file_needs_sync(tmp_path):
    p = subprocess.run([os.environ["PSB_KSRV"], "--async", "--rounds-file",
                        str(tmp_path / "r.csv")], capture_output=True, text=True, timeout=10)
    assert p.returncode != 0 and "--rounds-file" in p.stderr and "--sync" in p.stderr


def test_errors(server):
    with psb.KVWorker(servers=server.addr) as w:
        v = np.ones(8, dtype=np.float32)
        with pytest.raises(psb.Error) as e:
            w.push([9, 3], v)
        assert e.value.code == -2 and "ascending" in e.value.message
        with pytest.raises(psb.Error) as e:
            w.push([1, 2], v, lens=[3, 3])
        assert e.value.code == -3 and "add up to 6" in e.value.message
        with pytest.raises(TypeError, match="float32"):
            w.push([1], np.ones(4, dtype=np.float64))
        with pytest.raises(TypeError, match="C-contiguous"):
            w.push([1, 2], np.ones((4, 4), dtype=np.float32)[:, :2])
        with pytest.raises(TypeError, match="writable"):
            ro = np.ones(4, dtype=np.float32)
            ro.setflags(write=False)
            w.pull([1], ro)
        w.wait(w.push([77], np.ones(4, dtype=np.float32)))
        with pytest.raises(psb.Error) as e:
            w.wait(w.push([77], np.ones(8, dtype=np.float32)))
        assert e.value.code == -9 and "reset_state" in e.value.message
        t = w.push([78], v)
        w.wait(t)
        with pytest.raises(psb.Error) as e:
            w.wait(t)
        assert e.value.code == -17
    assert psb.strerror(-10) == "the key was never pushed"


def test_unreachable_is_named_fast():
    port = _free_udp_port()
    t0 = time.monotonic()
    with pytest.raises(psb.Error) as e:
        psb.KVWorker(servers="127.0.0.1:%d" % port, connect_timeout=5)
    assert time.monotonic() - t0 < 2
    assert e.value.code == -6 and ("127.0.0.1:%d" % port) in e.value.message


def test_closed_and_version(server):
    w = psb.KVWorker(servers=server.addr)
    w.close()
    with pytest.raises(psb.Error):
        w.push([1], np.ones(1, dtype=np.float32))
    assert "git" in psb.__version__ and psb.KEY_END == 2**64 - 1
