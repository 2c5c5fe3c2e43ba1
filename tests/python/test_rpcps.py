"""psb.rpcps, the PyTorch parameter-server benchmark: every experiment script runs (on the
small data and model, one epoch after a warm-up), prints its tables and writes its samples;
psb, the RPC server and allreduce train the same model to the same parameters; bad ids,
configuration files and trainer counts are refused before anything starts, named.

Needs PSB_KSRV and PYTHONPATH (the build's), as meson's test sets them; the scripts run
through scripts/rpcps.sh with PSB_BUILD the build directory."""
import csv
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
SCRIPTS = sorted(glob.glob(os.path.join(ROOT, "scripts", "rpcps", "*.sh")))
# two epochs: the buckets DDP rebuilds after the first batch come back in every later one,
# so a key's rounds repeat (a server answering running totals instead of each round's sum
# trains other parameters then)
SMALL = ["--epochs", "2", "--data", "DummyDataSmall", "--model", "DummyModelSmall",
         "--rpc_timeout", "30", "--run_timeout", "240", "-q"]
BUILD = os.path.normpath(os.path.join(os.environ["PSB_KSRV"], "..", "..", ".."))


def run(cmd, out, timeout=300):
    env = dict(os.environ, PSB_BUILD=BUILD)
    return subprocess.run(cmd + ["--out", out], env=env, capture_output=True, text=True,
                          timeout=timeout)


def launcher(*args):
    return subprocess.run([sys.executable, "-m", "psb.rpcps", *args], capture_output=True,
                          text=True, timeout=120)


@pytest.fixture(scope="module")
def scratch():
    d = tempfile.mkdtemp(prefix="psb-rpcps-test.")
    yield d
    shutil.rmtree(d)


@pytest.fixture(scope="module")
def runs(scratch):
    """Each experiment script, once: {name: (completed process, out dir)}."""
    got = {}
    for s in SCRIPTS:
        name = os.path.basename(s)[:-3]
        out = os.path.join(scratch, name)
        got[name] = (run([s, *SMALL], out), out)
    return got


def test_scripts_found():
    assert {"psb", "rpc", "allreduce"} <= {os.path.basename(s)[:-3] for s in SCRIPTS}


@pytest.mark.parametrize("script", [os.path.basename(s)[:-3] for s in SCRIPTS])
def test_experiment_script(runs, script):
    p, out = runs[script]
    assert p.returncode == 0, p.stderr
    hook = {"psb": "psb", "rpc": "rpc", "allreduce": "allreduce"}.get(script)
    rows = ["batch_level_metric,batch_all", "forward_metric,forward_pass",
            "backward_metric,backward"]
    if hook:
        rows.append("hook_future_metric,%s" % hook)
    for r in rows:
        assert r in p.stdout, r
    assert "name" in p.stdout and "variance" in p.stdout and "stdev" in p.stdout
    assert "all trainers" in p.stdout
    doc = json.load(open(os.path.join(out, "metrics.json")))
    trainers = [r for r in doc["ranks"] if r["role"] == "trainer"]
    assert len(trainers) == 2
    # torch RPC carries the gradients for the RPC server alone; else only the control
    assert doc["spec"]["rpc_data"] == (script == "rpc")
    # DummyDataSmall: 40 samples, 20 a trainer, batches of 10: 2 batches an epoch, 2 epochs
    for t in trainers:
        assert t["metrics"]["batch_level_metric,batch_all"]["count"] == 4
    with open(os.path.join(out, "samples.csv")) as f:
        samples = list(csv.DictReader(f))
    assert {s["role"] for s in samples} >= {"trainer"}
    assert all(float(s["ms"]) >= 0 for s in samples)
    if script in ("psb", "rpc"):
        servers = [r for r in doc["ranks"] if r["role"] == "server"]
        assert len(servers) == 1
        m = servers[0]["metrics"]
        for r in ("batch_level_metric,batch_all", "straggler_metric,straggler",
                  "gradient_average_metric,average"):
            assert m[r]["count"] > 0, r
        # a bucket's time at the server holds its wait for the straggler and its summing
        assert m["batch_level_metric,batch_all"]["mean"] >= m["straggler_metric,straggler"][
            "mean"]
        assert m["batch_level_metric,batch_all"]["max"] >= m[
            "gradient_average_metric,average"]["max"]
        with open(os.path.join(out, "samples.csv")) as f:
            rounds = {int(s["batch"]) for s in csv.DictReader(f) if s["role"] == "server"}
        # the measured run's four batches, from 0 again after reset_state (psb: a key's
        # rounds, which count the batches that pushed it: the buckets DDP rebuilds after
        # the first batch are new keys, from round 0, pushed in the three batches after)
        assert rounds == {0, 1, 2, 3} if script == "rpc" else rounds == {0, 1, 2}
        assert "all servers" in p.stdout


def params(out):
    doc = json.load(open(os.path.join(out, "metrics.json")))
    return [r["params"] for r in doc["ranks"] if r["role"] == "trainer"]


def test_same_model_every_way(runs):
    """The same seed and data train the same parameters, whoever averaged the gradients: a
    sum psb got wrong would show here, as would a hook that did not divide."""
    ref = None
    for name in ("allreduce", "psb", "rpc"):
        p, out = runs[name]
        assert p.returncode == 0, p.stderr
        got = params(out)
        assert got[0] == pytest.approx(got[1], rel=1e-6), name   # replicas agree
        if ref is None:
            ref = got[0]
        assert got[0]["sum"] == pytest.approx(ref["sum"], rel=1e-4, abs=1e-3), name
        assert got[0]["norm"] == pytest.approx(ref["norm"], rel=1e-5), name


def test_rpc_over_tcp(runs, scratch):
    """--rpc_transport tcp: the RPC server's run with TensorPipe held to TCP (as between
    hosts) trains what the default one trains, and says how it ran."""
    out = os.path.join(scratch, "rpc-tcp")
    p = run([os.path.join(ROOT, "scripts", "rpcps", "rpc.sh"), "--rpc_transport", "tcp",
             *SMALL], out)
    assert p.returncode == 0, p.stderr
    doc = json.load(open(os.path.join(out, "metrics.json")))
    assert doc["spec"]["rpc_transport"] == "tcp"
    assert params(out)[0]["norm"] == pytest.approx(params(runs["rpc"][1])[0]["norm"],
                                                   rel=1e-5)
    bad = launcher("--rpc_transport", "ib")
    assert bad.returncode != 0 and "--rpc_transport" in bad.stderr


def test_psb_several_servers(scratch):
    """Three trainers over two psb servers (every bucket's chunks split between them), the
    same parameters as allreduce among three."""
    got = {}
    for server, n in (("psb", "2"), ("allreduce", "0")):
        out = os.path.join(scratch, "three-" + server)
        p = run([os.path.join(ROOT, "scripts", "rpcps.sh"), "--ntrainer", "3", "--nserver", n,
                 "--server", server, "--batch_size", "5", *SMALL], out)
        assert p.returncode == 0, p.stderr
        got[server] = params(out)
        assert len(got[server]) == 3
    assert got["psb"][0]["norm"] == pytest.approx(got["allreduce"][0]["norm"], rel=1e-5)
    doc = json.load(open(os.path.join(scratch, "three-psb", "metrics.json")))
    assert len([r for r in doc["ranks"] if r["role"] == "server"]) == 2


def test_unknown_ids():
    p = launcher("--server", "nope")
    assert p.returncode == 2
    assert "unknown server 'nope'" in p.stderr
    assert "allreduce, psb, rpc" in p.stderr and "server_configurations.json" in p.stderr
    p = launcher("--model", "Huge")
    assert "unknown model 'Huge'" in p.stderr and "DummyModel" in p.stderr
    p = launcher("--hook", "gossip")
    assert "unknown hook 'gossip'" in p.stderr


def test_bad_configuration_files(scratch):
    base = os.path.join(ROOT, "python", "psb", "rpcps", "configurations")
    d = os.path.join(scratch, "conf")
    shutil.copytree(base, d)
    path = os.path.join(d, "model_configurations.json")
    with open(path, "w") as f:
        f.write('{"DummyModel": {"class": "DummyModel",\n "configurations": {,}}}')
    p = launcher("--config_dir", d)
    assert p.returncode == 2
    assert path in p.stderr and "line 2" in p.stderr
    with open(path, "w") as f:
        json.dump({"DummyModel": {"class": "DummyModel",
                                  "configurations": {"dense_layers_count": "eight"}}}, f)
    p = launcher("--config_dir", d)
    assert "$.DummyModel.configurations.dense_layers_count: expected an integer" in p.stderr
    with open(path, "w") as f:
        json.dump({"DummyModel": {"class": "DummyModel", "configuration": {}}}, f)
    p = launcher("--config_dir", d)
    assert "$.DummyModel.configuration: unknown field" in p.stderr
    with open(path, "w") as f:
        json.dump({"DummyModel": {"class": "Transformer"}}, f)
    p = launcher("--config_dir", d)
    assert '$.DummyModel.class: "Transformer" is not a model class' in p.stderr


def test_refused_before_start():
    # trainers the data cannot feed, and servers the allreduce has none of
    p = launcher("--data", "DummyDataSmall", "--model", "DummyModelSmall", "--ntrainer", "41")
    assert p.returncode == 2 and "40 samples: 41 trainers" in p.stderr
    p = launcher("--server", "allreduce", "--nserver", "1")
    assert p.returncode == 2 and "--nserver 1 must be 0" in p.stderr
    p = launcher("--ntrainer", "1025")
    assert p.returncode == 2 and "PsbParameterServer serves at most 1024" in p.stderr
    p = launcher("--server", "psb", "--hook", "rpc")
    assert p.returncode == 2 and "needs RpcParameterServer" in p.stderr
    p = launcher("--data", "DummyData", "--model", "DummyModelSmall")
    assert p.returncode == 2 and "draws values below 1024" in p.stderr
    p = launcher("--ranks", "0-1")
    assert p.returncode == 2 and "--master_port" in p.stderr


def test_bucket_keys_follow_parameters():
    """A bucket's key is its parameters', whatever its index; chunk keys ascend and
    spread over the servers' ranges."""
    import numpy as np
    from psb.rpcps import hooks, models

    m = models.DummyModel(64, 64, 64, 64, 3)
    names = hooks.KeyNames(m)
    ps = list(m.parameters())

    class Bucket:
        def __init__(self, params):
            self.p = params

        def parameters(self):
            return self.p

    a = names.of(Bucket(ps[:2]))
    assert a == names.of(Bucket(ps[:2]))
    assert a != names.of(Bucket(ps[2:4])) and a < 1 << hooks.KEY_BITS
    st = hooks.PsbHook.__new__(hooks.PsbHook)
    st.keys, st.layout, st.nservers, st.chunk_bytes, st.np = names, {}, 2, 4096, np
    keys, lens = st.chunks(Bucket(ps[:2]), 3000)
    assert sum(lens) == 3000 and len(keys) == 3
    assert list(keys) == sorted(keys)
    assert int(keys[0]) < 1 << 63 <= int(keys[-1])    # both servers' halves


def test_ended_run_leaves_nothing(tmp_path):
    """A run ended while its psb server runs (the trainers' run outlasts --run_timeout):
    the ranks are ended, and so is the psb-ksrv they started; its files are gone."""
    env = dict(os.environ, PSB_BUILD=BUILD, TMPDIR=str(tmp_path))
    p = subprocess.run([os.path.join(ROOT, "scripts", "rpcps", "psb.sh"), "--epochs", "50",
                        "--run_timeout", "20", "--rpc_timeout", "5", "-q",
                        "--out", str(tmp_path / "out")],
                       env=env, capture_output=True, text=True, timeout=180)
    assert p.returncode == 1, p.stderr
    left = subprocess.run(["pgrep", "-f", str(tmp_path)], capture_output=True, text=True)
    assert left.stdout == "", "processes left: " + left.stdout
    assert [f.name for f in tmp_path.iterdir() if f.name != "out"] == []


def test_rpc_server_bounds_what_waits():
    """The RPC server keeps at most max_pending buckets and max_pending_mb of sums waiting
    for their other trainers: a bucket beyond either is refused with the figures, counted,
    and the others go on."""
    import torch
    from psb.rpcps import servers

    srv = servers.RpcParameterServer(1, 2, {}, max_pending=2, max_pending_mb=1)

    class RRef:
        def local_value(self):
            return srv

    avg = servers.RpcParameterServer.average_gradient
    first = [avg(RRef(), 0, k, torch.ones(1000)) for k in (1, 2)]
    over = avg(RRef(), 0, 3, torch.ones(1000))              # a third bucket waiting
    assert over.done()
    with pytest.raises(RuntimeError, match="max_pending 2"):
        over.wait()
    second = avg(RRef(), 0, 1, torch.ones(1000))            # bucket 1 complete: it goes
    assert first[0].done() and second.done() and float(second.wait().sum()) == 2000
    big = avg(RRef(), 1, 4, torch.ones(300000))             # 1.2 MB waiting: over 1 MiB
    with pytest.raises(RuntimeError, match="max_pending_mb 1"):
        big.wait()
    assert srv.refused == 2 and not first[1].done()
    assert "at most 2 and 1 MiB" in servers.RpcParameterServer.info(RRef())
    assert servers.RpcParameterServer.reset_state(RRef()) == 1 and srv.bytes == 0


def test_ranks_split_over_invocations(scratch):
    """Two invocations, as two hosts would run them: the master in one, the psb server and
    both trainers in the other, joined by --master_addr and --master_port. Each has its own
    --psb_ip, as hosts do: the server binds its own invocation's (the master's is no
    address of this host)."""
    import socket
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    out = os.path.join(scratch, "split")
    common = [sys.executable, "-m", "psb.rpcps", "--ntrainer", "2", "--nserver", "1",
              "--server", "psb", "--master_addr", "127.0.0.1", "--master_port", str(port),
              "--out", out, *SMALL]
    a = subprocess.Popen(common + ["--ranks", "0", "--psb_ip", "198.18.0.99"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    b = subprocess.Popen(common + ["--ranks", "1-3", "--psb_ip", "127.0.0.2"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        oa, ea = a.communicate(timeout=240)
        ob, eb = b.communicate(timeout=60)
    finally:
        for p in (a, b):
            if p.poll() is None:
                p.kill()
                p.wait()
    assert a.returncode == 0, ea
    assert b.returncode == 0, eb
    assert "hook_future_metric,psb" in oa and "all trainers" in oa
    assert len(params(out)) == 2
