#!/bin/bash
# DPDK telemetry /psb/... through dpdk-telemetry.py: a memif server before, during and after
# a worker's pushes and pulls through it, DPDK's own /ethdev/stats beside them, the worker's
# experiment with its histograms, and a reply over the 16 KB telemetry limit cut by psb with
# a note of what it left out.
source "$(dirname "$0")/common.sh" "$1"
[ -r "$TEL" ] || { echo "SKIP: no $TEL"; exit 77; }

CMDS=(/ /help,/psb/counters /psb/status /psb/counters /psb/roles /psb/ports /psb/store
	/psb/experiment /psb/counters,roles.rx0 /psb/roles,server0.drops /psb/ports,0.ipackets
	/psb/counters,nope /ethdev/stats,0)

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
import json, sys

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
for cmd in ("/psb/status", "/psb/counters", "/psb/roles", "/psb/ports", "/psb/store",
            "/psb/experiment"):
    assert cmd in b["/"], (cmd, "not listed")
assert b["/help,/psb/counters"]["/psb/counters"].startswith("Returns psb counters")

served = []
for r in (b, m, a):
    c = r["/psb/counters"]
    assert set(c) == {"node", "ports", "roles", "store", "control", "experiment"}, sorted(c)
    served.append(int(c["control"]["telemetry_requests"]))
    assert c["node"]["role"] == "server" and c["node"]["ip"] == "198.18.0.1", c["node"]
    # 22.11 telemetry has no floats: reals come as strings
    assert float(c["node"]["uptime_s"]) > 0, c["node"]
    assert set(c["roles"]) == {"rx0", "tx0", "agent0", "server0"}, sorted(c["roles"])
    for name, role in c["roles"].items():
        for k in ("rx_pkts", "tx_pkts", "drops", "busy_cycles", "idle_cycles", "lcore",
                  "polls", "busy_pct"):
            assert k in role, (name, k)
        assert 0 <= float(role["busy_pct"]) <= 100, (name, role["busy_pct"])
    p = c["ports"]["0"]
    assert p["spec"].startswith("memif:server:") and "xstats" in p, p
    assert "rx_good_packets" in p["xstats"], sorted(p["xstats"])
    assert r["/psb/status"] == {"node": r["/psb/status"]["node"],
                                "experiment": r["/psb/status"]["experiment"]}, r["/psb/status"]
    assert r["/psb/status"]["node"]["role"] == "server"
    # a server serves whoever comes: no experiment of its own here
    assert r["/psb/experiment"]["state"] == "idle", r["/psb/experiment"]
    assert set(r["/psb/roles"]) == set(c["roles"]), sorted(r["/psb/roles"])
    assert set(r["/psb/ports"]) == {"0"}, sorted(r["/psb/ports"])
    assert "push" in r["/psb/store"] and "errors" in r["/psb/store"], r["/psb/store"]
    assert "rx_pkts" in r["/psb/counters,roles.rx0"], r["/psb/counters,roles.rx0"]
    assert "ethertype" in r["/psb/roles,server0.drops"], r["/psb/roles,server0.drops"]
    assert list(r["/psb/ports,0.ipackets"]) == ["ipackets"], r["/psb/ports,0.ipackets"]
    assert "no counters at" in r["/psb/counters,nope"]["error"], r["/psb/counters,nope"]
    assert "ipackets" in r["/ethdev/stats,0"], r["/ethdev/stats,0"]
# psb counts what its telemetry serves (each reply counts the requests before it)
assert served[0] < served[1] < served[2], served

# the worker's rounds went through the server's port, roles and store
rb, rm, ra = (r["/psb/counters"]["roles"] for r in (b, m, a))
assert rb["rx0"]["rx_pkts"] < 1000 < rm["rx0"]["rx_pkts"] <= ra["rx0"]["rx_pkts"], \
    (rb["rx0"], rm["rx0"], ra["rx0"])
assert rm["rx0"]["rx_pkts"] <= m["/psb/counters,roles.rx0"]["rx_pkts"]
assert 1000 < rm["server0"]["rx_pkts"] <= ra["server0"]["rx_pkts"], ra["server0"]
assert 1000 < rm["tx0"]["tx_pkts"] <= ra["tx0"]["tx_pkts"], ra["tx0"]
pm = m["/psb/ports"]["0"]
assert pm["ipackets"] > 1000 and pm["opackets"] > 1000, pm
assert pm["xstats"]["rx_good_packets"] >= pm["ipackets"], pm
# DPDK's own command, asked after psb's, sees at least as much on the same port
assert m["/ethdev/stats,0"]["ipackets"] >= m["/psb/ports,0.ipackets"]["ipackets"] >= \
    pm["ipackets"], (m["/ethdev/stats,0"], pm)
s = a["/psb/store"]
assert s["keys"] == 40 and s["pushpull"] >= 1000 and s["bytes"] == 40 * 4096, s
print("telemetry: server rx0 %d -> %d -> %d packets, store %d pushpull" %
      (rb["rx0"]["rx_pkts"], rm["rx0"]["rx_pkts"], ra["rx0"]["rx_pkts"], s["pushpull"]))
PY
stop_psb $SPID
[ ! -e "$RUNDIR/$TAG-s" ] || fail "server left $RUNDIR/$TAG-s behind"

# 32 workers' roles do not fit in a reply: psb keeps under 16 KB and says what it left out
start_psb big --role worker --port null --ip 198.18.0.2 --server 198.18.0.1 --workers 32 \
	--num-workers 32 -l 0 --no-huge --file-prefix "$TAG-b" --wait
BPID=$LAST_PID
wait_tel "$TAG-b" $BPID
tel "$TAG-b" /psb/counters /psb/roles,worker31 >"$DIR/big.out"
python3 - "$DIR/big.out" "$RUNDIR/$TAG-b/dpdk_telemetry.v2" <<'PY' || fail "reply over 16 KB"
import json, socket, sys

lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 2, lines
c = json.loads(lines[0])["/psb/counters"]
assert {"node", "ports", "experiment", "roles"} <= set(c), sorted(c)
left = c["left_out"].split()
assert left and all(p.startswith("roles.worker") for p in left), left
assert "16 KB" in c["left_out_why"], c
kept = set(c["roles"])
assert len(kept) >= 20 and not kept & {p.split(".")[1] for p in left}, (sorted(kept), left)
assert len(kept) + len(left) == c["node"]["roles"] == 34, (len(kept), left)
w31 = json.loads(lines[1])["/psb/roles"]
assert "rx_pkts" in w31 and "left_out" not in w31, w31
# dpdk-telemetry.py prints the reply again, with spaces: the size is that of the socket's
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[2])
info = json.loads(s.recv(1024))
s.send(b"/psb/counters")
raw = s.recv(1 << 20)
assert len(raw) < info["max_output_len"], (len(raw), info)
assert "left_out" in json.loads(raw)["/psb/counters"]
print("telemetry: 34 roles, %d in a reply of %d B, left out: %s" %
      (len(kept), len(raw), " ".join(left)))
PY
stop_psb $BPID
echo "telemetry: ok"
