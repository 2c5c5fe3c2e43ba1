"""psb's client API for Python.

A KVWorker is a session with psb's servers (psb itself, or psb-ksrv on kernel sockets):
push, pull and pushpull take keys and float32 values from numpy arrays, CPU torch tensors
or any buffer, without copying them, and return a timestamp; wait(ts) blocks with the GIL
released and raises psb.Error when the operation failed.

    import numpy as np, psb
    with psb.KVWorker(servers="127.0.0.1:9430") as w:
        keys = np.array([1, 5, 9], dtype=np.uint64)
        vals = np.ones(3 * 1024, dtype=np.float32)
        w.wait(w.pushpull(keys, vals))          # vals now holds the sums

The values' memory must stay as it is until the operation was waited for (the KVWorker
holds a reference to it meanwhile).
"""
from ._psb import KEY_END, Error, KVWorker, __version__, strerror

Error.code = property(lambda self: self.args[0], doc="the psb error code (negative)")
Error.message = property(lambda self: self.args[1], doc="what failed, with its particulars")

__all__ = ["KVWorker", "Error", "strerror", "KEY_END", "__version__"]
