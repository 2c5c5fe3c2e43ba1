"""The parameter-server benchmark's launcher: python3 -m psb.rpcps [options].

Ranks: 0 the master, 1..M the servers, M+1..M+N the trainers, each a process joined by
torch RPC (TensorPipe); the trainers also form a gloo process group for DDP. The master
splits the data round-robin over the trainers, creates the servers, runs a warm-up, calls
every server's reset_state, runs the measured epochs, collects every rank's samples, prints
the tables and writes the samples (samples.csv), their summaries (metrics.json) and the
tables (tables.txt) into --out.

Everything is checked before a process starts: the configuration files, the ids, the
trainer count against the servers, the data against the model.
"""
import argparse
import datetime
import math
import os
import re
import signal
import socket
import sys
import tempfile
import time
import traceback

from . import hooks, metrics, models, registry, servers, trainer

CLASSES = {
    "data": {"DummyData": models.DummyData},
    "model": {"DummyModel": models.DummyModel},
    "trainer": trainer.CLASSES,
    "server": servers.CLASSES,
    "hook": hooks.CLASSES,
}
# which server class each hook talks to (None: no server)
HOOK_SERVER = {"PsbHook": "PsbParameterServer", "RpcHook": "RpcParameterServer",
               "AllreduceHook": None}
# trainers a server class can serve at most (psb: its senders)
MAX_TRAINERS = {"PsbParameterServer": 1024, "RpcParameterServer": 1 << 16}


class Refused(Exception):
    """An argument or configuration the benchmark cannot run with; the message says why."""


def parse_args(argv):
    p = argparse.ArgumentParser(prog="rpcps", description=(
        "The PyTorch parameter-server benchmark: DDP trainers whose communication hook sends "
        "each gradient bucket to psb, to an RPC parameter server, or allreduces it."))
    p.add_argument("--ntrainer", type=int, default=2, help="trainers (default 2)")
    p.add_argument("--nserver", type=int, default=None,
                   help="servers (default: the server entry's, 1; allreduce: 0)")
    p.add_argument("--epochs", type=int, default=10, help="measured epochs (default 10)")
    p.add_argument("--warmup_epochs", type=int, default=1, help="epochs before reset_state "
                   "(default 1; 0: none)")
    p.add_argument("--batch_size", type=int, default=10, help="samples a batch (default 10)")
    p.add_argument("--data", default="DummyData", help="data id (default DummyData)")
    p.add_argument("--model", default="DummyModel", help="model id (default DummyModel)")
    p.add_argument("--server", default="psb", help="server id: psb, rpc, allreduce, or one "
                   "of --config_dir's (default psb)")
    p.add_argument("--trainer", default="DdpTrainer", help="trainer id (default DdpTrainer)")
    p.add_argument("--hook", default=None, help="hook id (default: the server entry's)")
    p.add_argument("--rpc_timeout", type=float, default=60.0,
                   help="seconds an RPC, a bucket's round or a rank's start may take "
                   "(default 60)")
    p.add_argument("--rpc_transport", choices=("auto", "tcp"), default="auto",
                   help="how torch RPC (TensorPipe) carries messages and tensors: auto, its "
                   "own choice (shared memory and cross-memory copies between ranks of one "
                   "host); tcp, TCP only, as between hosts (default auto). Where it carries "
                   "only the run's control (psb, allreduce) it is TCP either way")
    p.add_argument("--run_timeout", type=float, default=1800.0,
                   help="seconds the whole benchmark may take (default 1800)")
    p.add_argument("--seed", type=int, default=0, help="seed of the data and the models")
    p.add_argument("--config_dir", default=None,
                   help="the *_configurations.json files (default: the package's)")
    p.add_argument("--out", default=None, help="directory for samples.csv, metrics.json "
                   "and tables.txt (default rpcps-results/SERVER-UTCTIME)")
    p.add_argument("--master_addr", default="127.0.0.1", help="the master's address")
    p.add_argument("--master_port", type=int, default=0,
                   help="its RPC port, the trainers' gloo port the next (default: free "
                   "ones; give one when ranks run on several hosts)")
    p.add_argument("--ranks", default="all",
                   help="the ranks this invocation runs, e.g. 0-2 or 3,4 (default all): "
                   "one invocation per host, each with the same arguments")
    p.add_argument("--psb_ip", default=None, help="address psb servers of this host bind "
                   "and trainers reach (default: this host's toward --master_addr)")
    p.add_argument("-q", "--quiet", action="store_true", help="tables only, no progress")
    return p.parse_args(argv)


def parse_ranks(text, world):
    if text == "all":
        return list(range(world))
    out = set()
    for part in text.split(","):
        try:
            lo, _, hi = part.partition("-")
            lo, hi = int(lo), int(hi or lo)
        except ValueError:
            raise Refused("--ranks: '%s' is not a rank or a range A-B" % part) from None
        if not 0 <= lo <= hi < world:
            raise Refused("--ranks: %s is outside 0-%d (%d ranks: the master, the servers, "
                          "the trainers)" % (part, world - 1, world))
        out.update(range(lo, hi + 1))
    return sorted(out)


def local_ip_toward(addr):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect((addr, 9))
        return s.getsockname()[0]
    except OSError:
        return "127.0.0.1"
    finally:
        s.close()


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def plan(a):
    """Everything checked, as one dict every rank gets (the 'spec')."""
    regs = registry.load_all(CLASSES, a.config_dir)
    for name in ("ntrainer", "epochs", "batch_size"):
        if getattr(a, name) < 1:
            raise Refused("--%s %d: at least 1" % (name, getattr(a, name)))
    if a.warmup_epochs < 0:
        raise Refused("--warmup_epochs %d: 0 or more" % a.warmup_epochs)
    for name in ("rpc_timeout", "run_timeout"):
        if not getattr(a, name) > 0:
            raise Refused("--%s %s: seconds, more than 0" % (name, getattr(a, name)))
    regs["data"].get(a.data)
    regs["model"].get(a.model)
    regs["trainer"].get(a.trainer)
    srv = regs["server"].get(a.server)
    hook_id = a.hook or srv["hook"]
    hook = regs["hook"].get(hook_id)
    srv_class = srv["class"].__name__ if srv["class"] is not None else None
    want = HOOK_SERVER[hook["class"].__name__]
    if want != srv_class:
        raise Refused("hook '%s' (%s) needs %s, but server '%s' runs %s" % (
            hook_id, hook["class"].__name__, want or "no server",
            a.server, srv_class or "none"))
    nserver = srv["servers"] if a.nserver is None else a.nserver
    if srv_class is None and nserver != 0:
        raise Refused("server '%s' runs no servers (its trainers allreduce): --nserver %d "
                      "must be 0" % (a.server, nserver))
    if srv_class is not None and not 1 <= nserver <= 64:
        raise Refused("--nserver %d: server '%s' needs 1 to 64" % (nserver, a.server))
    if srv_class is not None and a.ntrainer > MAX_TRAINERS[srv_class]:
        raise Refused("--ntrainer %d: %s serves at most %d trainers" % (
            a.ntrainer, srv_class, MAX_TRAINERS[srv_class]))
    try:
        d = regs["data"].create(a.data, a.seed)
        mdl = regs["model"].create(a.model)
    except ValueError as e:
        raise Refused(str(e)) from None
    emb = getattr(getattr(mdl, "embedding", None), "num_embeddings", None)
    if emb is not None and hasattr(d, "max_val") and (d.max_val > emb or
                                                      d.max_val > mdl.classes()):
        raise Refused("data '%s' draws values below %d, but model '%s' embeds %d and scores "
                      "%d classes" % (a.data, d.max_val, a.model, emb, mdl.classes()))
    per = len(d) // a.ntrainer
    if per < 1:
        raise Refused("data '%s' has %d samples: %d trainers would leave some without any"
                      % (a.data, len(d), a.ntrainer))
    # every trainer runs as many batches (DDP waits for all): the fewest any one has
    batches = math.ceil(per / a.batch_size)
    del d, mdl
    world = 1 + nserver + a.ntrainer
    ranks = parse_ranks(a.ranks, world)
    if a.ranks != "all" and a.master_port == 0:
        raise Refused("--ranks %s: give --master_port too (the same on every host)" % a.ranks)
    port = a.master_port or free_port()
    gloo = port + 1 if a.master_port else free_port()
    out = a.out or os.path.join("rpcps-results", "%s-%s" % (
        a.server, datetime.datetime.utcnow().strftime("%Y%m%dT%H%M%SZ")))
    return {
        "ntrainer": a.ntrainer, "nserver": nserver, "world": world, "ranks": ranks,
        "epochs": a.epochs, "warmup_epochs": a.warmup_epochs, "batch_size": a.batch_size,
        "batches": batches, "data": a.data, "model": a.model, "trainer": a.trainer,
        "server": a.server, "hook": hook_id, "hook_name": hook["class"].NAME,
        "rpc_timeout": a.rpc_timeout, "rpc_transport": a.rpc_transport,
        "rpc_data": bool(getattr(hook["class"], "RPC_DATA", False)),
        "run_timeout": a.run_timeout, "seed": a.seed,
        "config_dir": a.config_dir, "out": out, "master_addr": a.master_addr,
        "master_port": port, "gloo_port": gloo,
        "psb_ip": a.psb_ip or local_ip_toward(a.master_addr), "quiet": a.quiet,
    }


def role_of(spec, rank):
    if rank == 0:
        return "master", 0
    if rank <= spec["nserver"]:
        return "server", rank - 1
    return "trainer", rank - 1 - spec["nserver"]


def rpc_name(role, i):
    return role if role == "master" else "%s%d" % (role, i)


# ---- what runs on each rank ----------------------------------------------------------

_GROUP = {}


def _regs(spec):
    return registry.load_all(CLASSES, spec["config_dir"])


class Failed:
    """What a call on a rank raised, as one line: returned rather than raised, since torch
    RPC prints a remote exception's whole traceback on both sides."""

    def __init__(self, e):
        self.message = "%s: %s" % (type(e).__name__, e) if not isinstance(
            e, RuntimeError) else str(e)


def guarded(fn, *args):
    try:
        return fn(*args)
    except Exception as e:
        if os.environ.get("RPCPS_TRACEBACK"):
            traceback.print_exc()
        return Failed(e)


def ok(name, value):
    """value, or the error of rank name that a guarded call returned, raised."""
    if isinstance(value, Failed):
        raise RuntimeError("%s: %s" % (name, value.message))
    return value


# this process's own invocation's settings (a server is made with the master's spec, which
# on several hosts is another invocation's)
LOCAL = {}


def _make_server(spec, i):
    regs = _regs(spec)
    return regs["server"].create(spec["server"], i, spec["ntrainer"], {
        "psb_ip": LOCAL.get("psb_ip", spec["psb_ip"]), "scratch": LOCAL.get("scratch"),
        "duration": spec["run_timeout"] + 2 * spec["rpc_timeout"] + 60})


def _call_server(method, rref):
    obj = rref.local_value()
    if isinstance(obj, Failed):
        return obj
    return getattr(type(obj), method)(rref)


def _run_trainer(spec, t, data, infos, epochs):
    import torch
    regs = _regs(spec)
    torch.manual_seed(spec["seed"])
    model = regs["model"].create(spec["model"])
    rec = metrics.Recorder()
    srv = regs["server"].get(spec["server"])
    ctx = {"ntrainer": spec["ntrainer"], "recorder": rec, "model": model, "group": None,
           "servers": infos, "rpc_timeout": spec["rpc_timeout"], "trainer_rank": t,
           "server_class": srv["class"]}
    hook = regs["hook"].create(spec["hook"], ctx)
    try:
        tr = regs["trainer"].create(spec["trainer"], t, ctx, hook)
        tr.train(model, data, epochs, spec["batch_size"], spec["batches"])
        transports = hook.transports()
    finally:
        hook.close()
    with torch.no_grad():
        flat = torch.cat([p.detach().reshape(-1).double() for p in model.parameters()])
    # the trained parameters, to compare runs: the same seed and data give the same model
    # whichever way the gradients were averaged, up to float rounding
    return {"samples": rec.take(), "params": {"sum": float(flat.sum()),
                                              "norm": float(flat.norm())},
            "transports": transports}


# what the master calls on the other ranks (by name: RPC pickles functions by reference)
def make_server(spec, i):
    return guarded(_make_server, spec, i)


def call_server(method, rref):
    return guarded(_call_server, method, rref)


def run_trainer(spec, t, data, infos, epochs):
    return guarded(_run_trainer, spec, t, data, infos, epochs)


def say(spec, text):
    if not spec["quiet"]:
        print("rpcps: %s" % text, flush=True)


def master(spec):
    import torch.distributed.rpc as rpc
    regs = _regs(spec)
    data = regs["data"].create(spec["data"], spec["seed"])
    splits = data.split(spec["ntrainer"])
    n, m = spec["ntrainer"], spec["nserver"]
    say(spec, "%d trainer(s), %d server(s) '%s', hook '%s'; %s, %s; %d batches of %d an epoch "
        "per trainer" % (n, m, spec["server"], spec["hook"], spec["data"], spec["model"],
                         spec["batches"], spec["batch_size"]))
    rrefs = [rpc.remote(rpc_name("server", i), make_server, args=(spec, i)) for i in range(m)]
    infos = [(rpc_name("server", i), r,
              ok(rpc_name("server", i), rpc.rpc_sync(rpc_name("server", i), call_server,
                                                     args=("info", r))))
             for i, r in enumerate(rrefs)]
    for name, _, info in infos:
        if info:
            say(spec, "%s: %s" % (name, info))

    def run(epochs, what):
        t0 = time.monotonic()
        say(spec, "%s: %d epoch(s)..." % (what, epochs))
        futs = [rpc.rpc_async(rpc_name("trainer", t), run_trainer,
                              args=(spec, t, splits[t], infos, epochs),
                              timeout=spec["run_timeout"]) for t in range(n)]
        got = []
        for t, f in enumerate(futs):
            try:
                got.append(ok("trainer%d" % t, f.wait()))
            except Exception as e:
                raise RuntimeError("the %s: %s" % (what, short_error(e))) from None
        say(spec, "%s: done in %.1f s" % (what, time.monotonic() - t0))
        return got

    if spec["warmup_epochs"]:
        run(spec["warmup_epochs"], "warm-up")
    for name, r, _ in infos:
        ok(name, rpc.rpc_sync(name, call_server, args=("reset_state", r)))
    trained = run(spec["epochs"], "measured run")
    server_samples = [ok(name, rpc.rpc_sync(name, call_server, args=("metrics", r)))
                      for name, r, _ in infos]
    for name, r, _ in infos:
        ok(name, rpc.rpc_sync(name, call_server, args=("stop", r)))
    report(spec, trained, server_samples)


def report(spec, trained, server_samples):
    ranks = [(1 + spec["nserver"] + t, "trainer", x["samples"]) for t, x in enumerate(trained)]
    ranks += [(1 + i, "server", s) for i, s in enumerate(server_samples)]
    text = []
    doc = {"spec": {k: v for k, v in spec.items() if k not in ("ranks", "quiet")},
           "ranks": [], "all": {}}
    for role in ("trainer", "server"):
        mine = [(r, s) for r, ro, s in ranks if ro == role]
        for r, s in mine:
            summ = metrics.summarize(s)
            text.append(metrics.table("%s %d (rank %d)" % (role, role_of(spec, r)[1], r), summ))
            doc["ranks"].append({"rank": r, "role": role, "metrics": summ})
            if role == "trainer":
                t = trained[r - 1 - spec["nserver"]]
                doc["ranks"][-1]["params"] = t["params"]
                if t.get("transports") is not None:
                    doc["ranks"][-1]["transports"] = t["transports"]
                    say(spec, "trainer %d: psb's servers over %s" %
                        (role_of(spec, r)[1], ", ".join(t["transports"])))
        if mine:
            summ = metrics.summarize([x for _, s in mine for x in s])
            text.append(metrics.table("all %ss" % role, summ))
            doc["all"][role] = summ
    out = "\n".join(text)
    print(out, end="", flush=True)
    os.makedirs(spec["out"], exist_ok=True)
    metrics.write_samples(os.path.join(spec["out"], "samples.csv"), ranks)
    metrics.write_json(os.path.join(spec["out"], "metrics.json"), doc)
    metrics.write_atomic(os.path.join(spec["out"], "tables.txt"), out)
    say(spec, "samples, summaries and tables in %s/" % spec["out"])


def run_rank(local, spec):
    """Process entry of one rank (local: its index among this invocation's ranks)."""
    import torch.distributed as dist
    import torch.distributed.rpc as rpc
    rank = spec["ranks"][local]
    role, i = role_of(spec, rank)
    LOCAL.update(scratch=spec.get("scratch"), psb_ip=spec["psb_ip"])
    try:
        if role == "trainer":
            dist.init_process_group(
                "gloo", init_method="tcp://%s:%d" % (spec["master_addr"], spec["gloo_port"]),
                rank=i, world_size=spec["ntrainer"],
                timeout=datetime.timedelta(seconds=spec["rpc_timeout"]))
        # tcp: TensorPipe's uv transport and its basic channel (tensors inline over TCP),
        # what it is left with between hosts. Where torch RPC carries only the run's control
        # (a hook of psb or allreduce moves the gradients) it is TCP too: TensorPipe's
        # shared-memory transport keeps a thread polling, on the cores the trainers need.
        pinned = {"_transports": ["uv"], "_channels": ["basic"]} \
            if spec.get("rpc_transport") == "tcp" or not spec.get("rpc_data", True) else {}
        opts = rpc.TensorPipeRpcBackendOptions(
            init_method="tcp://%s:%d" % (spec["master_addr"], spec["master_port"]),
            rpc_timeout=spec["rpc_timeout"], **pinned)
        rpc.init_rpc(rpc_name(role, i), rank=rank, world_size=spec["world"],
                     rpc_backend_options=opts)
    except Exception as e:
        print("rpcps: %s: %s" % (rpc_name(role, i), short_error(e)), file=sys.stderr,
              flush=True)
        os._exit(1)
    if role != "master":
        # From here on the master speaks for the run (a rank's failure reaches it as the
        # result of its call): torch's own lines about peers gone at shutdown would only
        # repeat it, so the other ranks' stderr goes.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 2)
        os.close(devnull)
    try:
        if role == "master":
            master(spec)
        rpc.shutdown()
    except Exception as e:
        if role != "master":
            # the master failed, or ended the run: it says why; this rank only goes
            os._exit(1)
        print("rpcps: %s: %s" % (rpc_name(role, i), short_error(e)), file=sys.stderr,
              flush=True)
        if os.environ.get("RPCPS_TRACEBACK"):
            traceback.print_exc()
        sys.stderr.flush()
        # not sys.exit: the RPC agent's threads would abort the process on the way out
        os._exit(1)


def short_error(e):
    """An error as one line: a remote one (torch RPC carries the remote traceback in its
    text) as the rank it came from and its own message."""
    text = str(e)
    where = re.match(r"On WorkerInfo\(id=\d+, name=(\w+)\)", text)
    last = [m.group(1) for m in re.finditer(r"^\w*(?:Error|Exception): (.*)$", text, re.M)]
    if where and last:
        return "%s: %s" % (where.group(1), last[-1])
    return text.splitlines()[0] if text else type(e).__name__


def main(argv=None):
    a = parse_args(argv)
    try:
        spec = plan(a)
    except (registry.ConfigError, Refused) as e:
        print("rpcps: %s" % e, file=sys.stderr)
        return 2
    # TensorPipe's agent logs through glog to stderr: its errors only
    os.environ.setdefault("GLOG_minloglevel", "2")
    os.environ.setdefault("TORCH_CPP_LOG_LEVEL", "ERROR")
    import torch.multiprocessing as mp
    # ended from outside (timeout, kill): the ranks go too, in the finally below
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    # what this invocation's servers leave (their files, their psb-ksrv): gone at the end,
    # however the ranks ended
    spec["scratch"] = tempfile.mkdtemp(prefix="psb-rpcps.")
    try:
        return run_ranks(spec, mp)
    finally:
        servers.clean_scratch(spec["scratch"])


def run_ranks(spec, mp):
    ctx = mp.start_processes(run_rank, args=(spec,), nprocs=len(spec["ranks"]), join=False,
                             start_method="spawn")
    deadline = time.monotonic() + spec["run_timeout"] + 2 * spec["rpc_timeout"]
    try:
        while not ctx.join(timeout=1):
            if time.monotonic() > deadline:
                left = [rpc_name(*role_of(spec, spec["ranks"][k]))
                        for k, p in enumerate(ctx.processes) if p.is_alive()]
                for p in ctx.processes:
                    if p.is_alive():
                        p.kill()
                print("rpcps: not done within --run_timeout %g s (+ 2 x --rpc_timeout): ended "
                      "%s" % (spec["run_timeout"], ", ".join(left)), file=sys.stderr)
                return 1
    except mp.ProcessExitedException as e:
        name = rpc_name(*role_of(spec, spec["ranks"][e.error_index]))
        print("rpcps: %s exited with status %s; the others were ended" % (name, e.exit_code),
              file=sys.stderr)
        return 1
    except mp.ProcessRaisedException as e:
        print("rpcps: a rank failed: %s" % e, file=sys.stderr)
        return 1
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
    return 0
