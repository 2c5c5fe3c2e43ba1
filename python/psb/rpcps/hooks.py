"""DDP communication hooks: psb, the RPC parameter server, and gloo allreduce.

Each hook sends a gradient bucket away and returns a torch future that completes with the
bucket's average over the trainers. The hook-future time (hook_future_metric/<hook>) runs
from the hook's call to that completion.

Bucket keys. DDP rebuilds its buckets after the first iteration (in the order gradients
became ready), so a bucket's index names different parameters before and after; a key
cannot rest on it. A bucket is named instead by what it holds: the positions, in
model.parameters() order, of its parameters and their shapes, hashed (BLAKE2b) to 40 bits.
Every trainer builds the same buckets (DDP takes rank 0's order at the rebuild), so every
trainer derives the same keys; two different buckets hashing alike is checked, and refused.

psb: a bucket of B bytes is cut into n = max(servers, ceil(B / chunk_bytes)) chunks of
near-equal floats; chunk j's key is j * 2^64 / n plus the bucket's 40-bit name, so the
chunks of a bucket ascend with j and spread evenly over the servers' key ranges (ps-lite's
split of the key space). One pushpull sends them all and lands each chunk's sum in place.
The servers run synchronous rounds, each key's round being its push count: every trainer
pushes the same buckets in every batch, so the trainers' pushes of a bucket in one batch
meet in one round, which is answered with its own sum (the servers run --sync-value round,
not the total of every batch so far). psb's servers return sums: the hook divides by the
trainer count (the client multiplies the sums by 1 / trainers as they land, scale=). So do the RPC parameter server's trainers here (its stock server summed too,
whatever its name said).
"""
import hashlib
import queue
import threading

import torch
import torch.distributed as dist
import torch.distributed.rpc as rpc

KEY_BITS = 40


class KeyNames:
    """40-bit names of buckets by their parameters (see the module's comment)."""

    def __init__(self, model):
        self.pos = {p.data_ptr(): i for i, p in enumerate(model.parameters())}
        self.names = {}          # what -> name, for buckets seen
        self.owner = {}          # name -> what, for the collision check

    def of(self, bucket):
        what = tuple((self.pos[p.data_ptr()], tuple(p.shape)) for p in bucket.parameters())
        name = self.names.get(what)
        if name is None:
            h = hashlib.blake2b(repr(what).encode(), digest_size=KEY_BITS // 8)
            name = int.from_bytes(h.digest(), "big")
            other = self.owner.setdefault(name, what)
            if other != what:
                raise RuntimeError("buckets of parameters %s and %s have the same %d-bit "
                                   "key %#x" % ([w[0] for w in other], [w[0] for w in what],
                                                KEY_BITS, name))
            self.names[what] = name
        return name


class Hook:
    """What every hook shares: the trainer's context, the bucket keys and the timing."""
    NAME = None
    TAKES = {}

    def __init__(self, ctx):
        self.ctx = ctx
        self.ntrainer = ctx["ntrainer"]
        self.rec = ctx["recorder"]
        self.keys = KeyNames(ctx["model"])
        self.batch = 0
        self.calls = 0

    @staticmethod
    def hook(state, bucket):
        """The function DDP calls (state: this object)."""
        call = state.calls
        state.calls += 1
        name = "hook_future_metric"
        state.rec.start(name, state.NAME, call)
        batch = state.batch

        def done(fut):
            state.rec.end(name, state.NAME, call, batch)
            return fut.value()
        return state.send(bucket).then(done)

    def send(self, bucket):
        raise NotImplementedError

    def transports(self):
        """How this trainer reaches each server ("shm", "udp"), or None: not psb's."""
        return None

    def close(self):
        pass


class AllreduceHook(Hook):
    """gloo allreduce among the trainers (their process group), then / trainers."""
    NAME = "allreduce"

    def send(self, bucket):
        t = bucket.buffer()
        t.div_(self.ntrainer)
        fut = dist.all_reduce(t, group=self.ctx["group"], async_op=True).get_future()
        return fut.then(lambda f: f.value()[0])


class RpcHook(Hook):
    """The bucket to an RPC parameter server (the bucket key's, of the servers), which
    answers every trainer with the sum once all sent it; then / trainers."""
    NAME = "rpc"
    TAKES = {"rpc_timeout": (float, 0, 86400)}
    RPC_DATA = True     # the gradients go by torch RPC (launcher: its transport as asked)

    def __init__(self, ctx, rpc_timeout=0):
        super().__init__(ctx)
        self.servers = ctx["servers"]
        self.timeout = rpc_timeout or ctx["rpc_timeout"]
        self.fn = ctx["server_class"].average_gradient

    def send(self, bucket):
        key = self.keys.of(bucket)
        name, rref, _ = self.servers[key % len(self.servers)]
        n = self.ntrainer
        fut = rpc.rpc_async(name, self.fn, args=(rref, self.batch, key, bucket.buffer()),
                            timeout=self.timeout)
        return fut.then(lambda f: f.value().div_(n))


class PsbHook(Hook):
    """The bucket to psb's servers as chunk keys, pushpull in synchronous rounds, the sums
    in place; then / trainers. The hook only queues the bucket, so DDP's backward goes on at
    once: one thread starts the pushpulls in order (a start waits while the window is full),
    another waits for them in order and completes their futures. Both hold no GIL while
    in psb, and share the session a turn at a time."""
    NAME = "psb"
    TAKES = {"chunk_bytes": (int, 4096, 1 << 30), "window_bytes": (int, 0, 1 << 34),
             "server_timeout": (float, 0, 86400)}

    def __init__(self, ctx, chunk_bytes=4 << 20, window_bytes=0, server_timeout=0):
        super().__init__(ctx)
        import psb
        import numpy as np
        self.np = np
        self.chunk_bytes = chunk_bytes
        addrs = [info for _, _, info in ctx["servers"]]
        self.nservers = len(addrs)
        if not window_bytes:
            # a whole batch's buckets in flight at once: a pushpull's bytes count twice
            grads = sum(p.numel() * p.element_size() for p in ctx["model"].parameters()
                        if p.requires_grad)
            window_bytes = max(8 << 20, 2 * grads)
        self.worker = psb.KVWorker(servers=",".join(addrs), rank=ctx["trainer_rank"],
                                   sync=True, window_bytes=window_bytes,
                                   server_timeout=server_timeout or ctx["rpc_timeout"])
        self.layout = {}
        self.starts = queue.SimpleQueue()
        self.todo = queue.SimpleQueue()
        self.failed = None
        self.threads = [threading.Thread(target=f, name=n, daemon=True) for f, n in
                        ((self._start, "psb-hook-start"), (self._complete, "psb-hook-wait"))]
        for t in self.threads:
            t.start()

    def chunks(self, bucket, nfloats):
        """The keys and lengths (floats) of a bucket's chunks."""
        name = self.keys.of(bucket)
        got = self.layout.get((name, nfloats))
        if got is None:
            n = max(self.nservers, -(-nfloats * 4 // self.chunk_bytes))
            n = min(n, nfloats)
            base, extra = divmod(nfloats, n)
            lens = [base + (1 if j < extra else 0) for j in range(n)]
            keys = self.np.array([(j << 64) // n + name for j in range(n)],
                                 dtype=self.np.uint64)
            got = self.layout[(name, nfloats)] = (keys, lens)
        return got

    def send(self, bucket):
        buf = bucket.buffer()
        if buf.dtype != torch.float32 or not buf.is_contiguous():
            raise TypeError("psb hook: a bucket of %s; psb sums float32" % buf.dtype)
        keys, lens = self.chunks(bucket, buf.numel())
        fut = torch.futures.Future()
        if self.failed is not None:
            fut.set_exception(self.failed)
            return fut
        self.starts.put((keys, buf, lens, fut))
        return fut

    def _fail(self, fut, e):
        self.failed = e
        fut.set_exception(e)

    def _start(self):
        """Each bucket's pushpull, in order (an error fails its future, and every later
        one)."""
        while True:
            item = self.starts.get()
            if item is None:
                self.todo.put(None)
                return
            keys, buf, lens, fut = item
            try:
                if self.failed is not None:
                    raise self.failed
                # the sums land divided by the trainer count: no pass over buf after
                ts = self.worker.pushpull(keys, buf, None, lens, scale=1.0 / self.ntrainer)
            except Exception as e:      # psb.Error: named by psb (which server, why)
                self._fail(fut, e)
                continue
            self.todo.put((ts, fut, buf))

    def _complete(self):
        """Each pushpull as it ends (its sums landed divided): its future completed."""
        while True:
            item = self.todo.get()
            if item is None:
                return
            ts, fut, buf = item
            try:
                if self.failed is not None:
                    raise self.failed
                self.worker.wait(ts)
                fut.set_result(buf)
            except Exception as e:
                self._fail(fut, e)

    def transports(self):
        # chosen as the session opened: shared memory to a psb-ksrv on this host with slots
        return self.worker.transports

    def close(self):
        self.starts.put(None)
        for t in self.threads:
            t.join()
        self.worker.close()


CLASSES = {"PsbHook": PsbHook, "RpcHook": RpcHook, "AllreduceHook": AllreduceHook}
