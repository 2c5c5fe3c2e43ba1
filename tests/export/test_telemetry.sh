#!/bin/bash
# DPDK telemetry /psb/... through dpdk-telemetry.py: every endpoint of a memif server before,
# during and after a worker's pushes and pulls through it, DPDK's own /ethdev/stats beside
# them, the worker's experiment with its histograms; then the largest node psb takes (32
# workers: 34 role instances), where every endpoint's reply is whole and under the 16 KB of
# a reply, and the generic lookup refuses a part over it, naming the endpoints to ask.
source "$(dirname "$0")/common.sh" "$1"
[ -r "$TEL" ] || { echo "SKIP: no $TEL"; exit 77; }

CMDS=(/ /help,/psb/counters /psb/status /psb/counters /psb/node /psb/roles /psb/roles,rx0
	/psb/roles,tx0 /psb/roles,agent0 /psb/roles,server0 /psb/ports /psb/ports,0 /psb/store
	/psb/scheduler /psb/control /psb/experiment /psb/counters,roles.rx0
	/psb/roles,server0.drops /psb/ports,0.ipackets /psb/store,limits /psb/counters,nope
	/psb/roles,nope /psb/ports,9 /psb/rdma /ethdev/stats,0)

start_psb server --port "memif:server:$DIR/m.sock" --ip 198.18.0.1 -l 0 --no-huge \
	--file-prefix "$TAG-s" --wait
SPID=$LAST_PID
wait_tel "$TAG-s" $SPID
tel "$TAG-s" "${CMDS[@]}" >"$DIR/before.out"

# the worker pushes and pulls for 4 s: long enough to look at the port while it is up
# (memif zeroes its port statistics when the peer leaves)
start_psb worker --role worker --port "memif:client:$DIR/m.sock" --ip 198.18.0.2 \
	--server 198.18.0.1 -l 1 --no-huge --file-prefix "$TAG-w" --len 4096 \
	--repeat 100000000 --duration 4 -q
WPID=$LAST_PID
for _ in $(seq 100); do
	alive $WPID
	n=$(tel "$TAG-s" /psb/counters,roles.rx0.rx_pkts | python3 -c \
		'import json, sys; print(json.load(sys.stdin)["/psb/counters"]["rx_pkts"])')
	[ "$n" -gt 1000 ] && break
	sleep 0.05
done
[ "$n" -gt 1000 ] || fail "server received only $n packets"
tel "$TAG-s" "${CMDS[@]}" >"$DIR/mid.out"
wait_tel "$TAG-w" $WPID
tel "$TAG-w" /psb/experiment >"$DIR/wexp.out"
python3 - "$DIR/wexp.out" <<'PY' || fail "the worker's /psb/experiment"
import json, sys

e = json.loads(open(sys.argv[1]).read())["/psb/experiment"]
assert e["state"] == "running" and e["kind"] == "pushpull", e
pp = e["pushpull"]
# telemetry names take no '.' or '+': le 0.5 is "0_5", +Inf "_Inf"
for name, top in (("rtt_hist_us", "1000000"), ("staleness_hist", "1024")):
    h = pp[name]
    counts = list(h["le"].values())
    assert list(h["le"])[0] in ("0_5", "0") and list(h["le"])[-2:] == [top, "_Inf"], h
    assert counts == sorted(counts) and counts[-1] == h["count"] > 1000, h
# one synchronous worker: every push is on the version it last got
assert pp["staleness_max"] == 0 and pp["staleness_hist"]["le"]["0"] > 1000, pp
print("telemetry: worker rtt histogram of %d, staleness max %d" %
      (pp["rtt_hist_us"]["count"], pp["staleness_max"]))
PY
rc=0
wait $WPID || rc=$?
[ $rc = 0 ] || fail "worker exited with $rc"
tel "$TAG-s" "${CMDS[@]}" >"$DIR/after.out"

python3 - "$DIR/before.out" "$DIR/mid.out" "$DIR/after.out" "${CMDS[@]}" <<'PY' \
	|| fail "telemetry replies"
import json, os, sys

cmds = sys.argv[4:]


def replies(path):
    lines = open(path).read().splitlines()
    assert len(lines) == len(cmds), (path, len(lines), lines[-1:])
    out = {}
    for cmd, line in zip(cmds, lines):
        r = json.loads(line)
        name = cmd.split(",")[0]
        assert list(r) == [name], (cmd, line[:200])
        assert r[name] is not None, (cmd, "null reply")
        out[cmd] = r[name]
    return out


b, m, a = (replies(p) for p in sys.argv[1:4])
sections = {"node", "ports", "roles", "store", "control", "experiment"}
for cmd in ["/psb/status", "/psb/counters", "/psb/scheduler", "/psb/rdma"] + \
        ["/psb/" + s for s in sections]:
    assert cmd in b["/"], (cmd, "not listed")
assert b["/help,/psb/counters"]["/psb/counters"].startswith("Returns psb counters")
instances = ["rx0", "tx0", "agent0", "server0"]
role_keys = {"rx_pkts", "tx_pkts", "drops", "busy_cycles", "idle_cycles", "lcore", "polls",
             "busy_pct"}

served = []
for r in (b, m, a):
    idx = r["/psb/counters"]
    # a server without the scheduler: every section but that one
    assert idx["sections"] == {s: "/psb/" + s for s in sections}, idx
    assert set(idx["parameters"]) == {"/psb/ports", "/psb/roles", "/psb/counters"}, idx
    served.append(int(r["/psb/control"]["telemetry_requests"]))
    n = r["/psb/node"]
    assert n["role"] == "server" and n["ip"] == "198.18.0.1" and n["roles"] == 4, n
    # 22.11 telemetry has no floats: reals come as strings
    assert float(n["uptime_s"]) > 0, n
    assert r["/psb/roles"]["instances"] == instances, r["/psb/roles"]
    for name in instances:
        role = r["/psb/roles," + name]
        assert role_keys <= set(role), (name, sorted(role))
        assert 0 <= float(role["busy_pct"]) <= 100, (name, role["busy_pct"])
    # the totals: a role instance's counters, without its lcore
    assert set(r["/psb/roles"]["totals"]) == set(r["/psb/roles,rx0"]) - {"lcore", "busy_pct"}
    assert set(r["/psb/ports"]) == {"0"}, sorted(r["/psb/ports"])
    p = r["/psb/ports"]["0"]
    assert p["spec"].startswith("memif:server:") and "xstats" not in p, p
    p = r["/psb/ports,0"]
    assert p["spec"] == r["/psb/ports"]["0"]["spec"] and "xstats_left_out" not in p, p
    assert "rx_good_packets" in p["xstats"], sorted(p["xstats"])
    st = r["/psb/status"]
    assert set(st) == {"node", "experiment"} and st["node"]["role"] == "server", st
    # a server serves whoever comes: no experiment of its own here
    assert r["/psb/experiment"]["state"] == "idle", r["/psb/experiment"]
    s = r["/psb/store"]
    assert "push" in s and "ok" not in s["errors"] and "bad_type" in s["errors"], s
    assert int(s["limits"]["max_keys"]) > 0, s["limits"]
    # the limits are fixed: a narrower path gives them alike
    assert r["/psb/store,limits"] == s["limits"], (r["/psb/store,limits"], s["limits"])
    assert "no scheduler" in r["/psb/scheduler"]["error"], r["/psb/scheduler"]
    assert "rx_pkts" in r["/psb/counters,roles.rx0"], r["/psb/counters,roles.rx0"]
    assert "ethertype" in r["/psb/roles,server0.drops"], r["/psb/roles,server0.drops"]
    assert list(r["/psb/ports,0.ipackets"]) == ["ipackets"], r["/psb/ports,0.ipackets"]
    assert "no counters at" in r["/psb/counters,nope"]["error"], r["/psb/counters,nope"]
    assert "no role instance nope" in r["/psb/roles,nope"]["error"], r["/psb/roles,nope"]
    assert "no port 9" in r["/psb/ports,9"]["error"], r["/psb/ports,9"]
    assert "ipackets" in r["/ethdev/stats,0"], r["/ethdev/stats,0"]
    # rdma-core's view; without ib_core (no /sys/class/infiniband) the kernel's reason
    rd = r["/psb/rdma"]
    if not os.path.isdir("/sys/class/infiniband"):
        assert rd == {"available": 0, "error": "no RDMA support in this kernel "
                      "(ibv_get_device_list: Function not implemented; the kernel has no "
                      "InfiniBand/RDMA subsystem)"}, rd
    else:
        assert rd["available"] in (0, 1) and ("devices" in rd) == (rd["available"] == 1), rd
# psb counts what its telemetry serves (each reply counts the requests before it)
assert served[0] < served[1] < served[2], served

# the worker's rounds went through the server's port, roles and store
rb, rm, ra = (r["/psb/roles,rx0"] for r in (b, m, a))
assert rb["rx_pkts"] < 1000 < rm["rx_pkts"] <= ra["rx_pkts"], (rb, rm, ra)
assert rm["rx_pkts"] <= m["/psb/counters,roles.rx0"]["rx_pkts"]
assert 1000 < m["/psb/roles,server0"]["rx_pkts"] <= a["/psb/roles,server0"]["rx_pkts"]
assert 1000 < m["/psb/roles,tx0"]["tx_pkts"] <= a["/psb/roles,tx0"]["tx_pkts"]
# once the worker has gone, the totals add up as the end-of-run report adds them:
# received and sent are the rx and tx roles', the rest summed over the instances
t = a["/psb/roles"]["totals"]
ins = [a["/psb/roles," + n] for n in instances]
assert t["rx_pkts"] == ra["rx_pkts"] and t["tx_pkts"] == a["/psb/roles,tx0"]["tx_pkts"], t
for k in ("handed", "ring_full", "no_mbuf", "tx_ring_full"):
    assert t[k] == sum(i[k] for i in ins), (k, t[k], [i[k] for i in ins])
assert t["drops"] == {d: sum(i["drops"][d] for i in ins) for d in t["drops"]}, t["drops"]
pm = m["/psb/ports"]["0"]
assert pm["ipackets"] > 1000 and pm["opackets"] > 1000, pm
assert m["/psb/ports,0"]["xstats"]["rx_good_packets"] >= pm["ipackets"], m["/psb/ports,0"]
# DPDK's own command, asked after psb's, sees at least as much on the same port
assert m["/ethdev/stats,0"]["ipackets"] >= m["/psb/ports,0.ipackets"]["ipackets"] >= \
    pm["ipackets"], (m["/ethdev/stats,0"], pm)
s = a["/psb/store"]
assert s["keys"] == 40 and s["pushpull"] >= 1000 and s["bytes"] == 40 * 4096, s
print("telemetry: server rx0 %d -> %d -> %d packets, store %d pushpull" %
      (rb["rx_pkts"], rm["rx_pkts"], ra["rx_pkts"], s["pushpull"]))
PY
stop_psb $SPID
[ ! -e "$RUNDIR/$TAG-s" ] || fail "server left $RUNDIR/$TAG-s behind"

# The largest node psb takes: 32 workers, 34 role instances. Every endpoint's reply, as the
# socket gives it (dpdk-telemetry.py prints it again, with spaces), is under the most a
# reply may take and whole; the generic lookup refuses the roles, which do not fit.
start_psb big --role worker --port null --ip 198.18.0.2 --server 198.18.0.1 --workers 32 \
	--num-workers 32 -l 0 --no-huge --file-prefix "$TAG-b" --wait
BPID=$LAST_PID
wait_tel "$TAG-b" $BPID
python3 - "$RUNDIR/$TAG-b/dpdk_telemetry.v2" <<'PY' || fail "the largest node's replies"
import json, socket, sys

s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
info = json.loads(s.recv(1024))
names = ["rx0", "tx0"] + ["worker%d" % i for i in range(32)]
cmds = ["/psb/counters", "/psb/node", "/psb/ports", "/psb/ports,0", "/psb/roles",
        "/psb/control", "/psb/experiment", "/psb/status", "/psb/store", "/psb/scheduler",
        "/psb/counters,roles", "/psb/counters,roles.worker31"] + \
    ["/psb/roles," + n for n in names]
r, sizes = {}, {}
for cmd in cmds:
    s.send(cmd.encode())
    raw = s.recv(1 << 20)
    sizes[cmd] = len(raw)
    assert len(raw) < info["max_output_len"], (cmd, len(raw), info)
    r[cmd] = json.loads(raw)[cmd.split(",")[0]]
assert r["/psb/node"]["roles"] == 34, r["/psb/node"]
assert r["/psb/roles"]["instances"] == names, r["/psb/roles"]
keys = set(r["/psb/roles,rx0"])
for n in names:
    assert set(r["/psb/roles," + n]) == keys, (n, sorted(r["/psb/roles," + n]))
    assert len(r["/psb/roles," + n]["drops"]) == len(r["/psb/roles"]["totals"]["drops"]), n
assert set(r["/psb/roles"]["totals"]) == keys - {"lcore", "busy_pct"}, r["/psb/roles"]
assert set(r["/psb/counters,roles.worker31"]) == keys, r["/psb/counters,roles.worker31"]
# too big for a reply: refused, naming the endpoints that give it
e = r["/psb/counters,roles"]
assert list(e) == ["error"] and "16 KB" in e["error"] and "/psb/roles,NAME" in e["error"], e
assert "xstats" in r["/psb/ports,0"] and "xstats" not in r["/psb/ports"]["0"], r["/psb/ports"]
assert "no store" in r["/psb/store"]["error"], r["/psb/store"]
assert "no scheduler" in r["/psb/scheduler"]["error"], r["/psb/scheduler"]
assert r["/psb/counters"]["sections"] == {n: "/psb/" + n for n in
    ("node", "ports", "roles", "control", "experiment")}, r["/psb/counters"]
big = max(sizes, key=sizes.get)
print("telemetry: 34 roles; the largest reply %s of %d B, %s refused: %s" %
      (big, sizes[big], "/psb/counters,roles", e["error"]))
PY
stop_psb $BPID
echo "telemetry: ok"
