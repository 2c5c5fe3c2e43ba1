#!/bin/bash
# Every figure of the descriptor tables (the metrics command lists them) is in every export:
# the control socket, psbctl's lines, the counters file, DPDK telemetry (in each endpoint that
# serves it: /psb/roles,NAME, /psb/ports and /psb/ports,ID, /psb/store, ..., the totals of
# /psb/roles and /psb/status), Prometheus (under the name the table gives, with its type) and
# the console's show counters. Four nodes between
# them have every section: a memif server hosting the scheduler and serving a "serve"
# experiment (store, scheduler, experiment.serve), its worker running push/pull
# (experiment.pushpull with histograms), a staleness worker on an af_packet port (the
# kernel's counts, experiment.staleness), and a staleness trainer on a null port
# (experiment.trainer) with a null exception port (passthrough).
#
# usage: test_metrics.sh PSB PSBCTL
source "$(dirname "$0")/common.sh" "$1"
PSBCTL=${2:?usage: test_metrics.sh PSB PSBCTL}
[ -r "$TEL" ] || { echo "SKIP: no $TEL"; exit 77; }
command -v curl >/dev/null || fail "curl is not installed"
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (a veth pair for the af_packet node)"; exit 77; }

VETH=psbm$$
trap 'ip link del "${VETH}a" 2>/dev/null; cleanup' EXIT
ip link add "${VETH}a" type veth peer name "${VETH}b" || fail "cannot create a veth pair"
ip link set "${VETH}a" up && ip link set "${VETH}b" up || fail "cannot bring the veth pair up"

SP=$(free_port)
WP=$(free_port)
AP=$(free_port)
while [ "$WP" = "$SP" ]; do WP=$(free_port); done
while [ "$AP" = "$SP" ] || [ "$AP" = "$WP" ]; do AP=$(free_port); done
TP=$(free_port)
while [ "$TP" = "$SP" ] || [ "$TP" = "$WP" ] || [ "$TP" = "$AP" ]; do TP=$(free_port); done

# the server, with its console on a FIFO this shell holds open (fd 3) until it sends quit
mkfifo "$DIR/console.in"
"$PSB" --role server --port "memif:server:$DIR/m.sock" --ip 198.18.0.1 --scheduler 198.18.0.1 \
	--num-servers 1 --num-workers 1 --async -l 0 --no-huge --file-prefix "$TAG-s" \
	--prometheus "$SP" --ctl "$DIR/s.ctl" --output-dir "$DIR/out" -i \
	<"$DIR/console.in" >"$DIR/console.out" 2>"$DIR/s.log" &
SPID=$!
PIDS+=("$SPID")
exec 3>"$DIR/console.in"
wait_http "http://127.0.0.1:$SP/metrics" $SPID
cat > "$DIR/serve.json" <<EOF
{"name": "metrics-serve", "kind": "serve", "output": {"dir": "results",
 "counters_file": "c.jsonl", "counters_every": "0.1s"}}
EOF
"$PSBCTL" --ctl "$DIR/s.ctl" start "$DIR/serve.json" >/dev/null || fail "start serve"

start_psb worker --role worker --port "memif:client:$DIR/m.sock" --ip 198.18.0.2 \
	--scheduler 198.18.0.1 --num-servers 1 --num-workers 1 --async -l 1 --no-huge \
	--file-prefix "$TAG-w" --len 4096 --repeat 100000000 --duration 8 -q \
	--prometheus "$WP" --ctl "$DIR/w.ctl" --counters-file "$DIR/w.jsonl" --counters-every 0.1
WPID=$LAST_PID
# the af_packet node is a staleness worker whose trainer never answers: joining throughout
cat > "$DIR/stale.json" <<EOF
{"name": "metrics-stale", "kind": "staleness", "node": {"role": "worker", "ip": "198.18.0.3",
 "ports": ["af_packet:${VETH}a"]}, "staleness": {"trainer": "198.18.0.9", "join_timeout": "60s",
 "workers": 1}, "output": {"dir": "results"}}
EOF
start_psb afp --config "$DIR/stale.json" -l 1 --no-huge --output-dir "$DIR/out" \
	--file-prefix "$TAG-a" --prometheus "$AP" --ctl "$DIR/a.ctl" \
	--counters-file "$DIR/a.jsonl" --counters-every 0.1
APID=$LAST_PID
# a staleness trainer on a null port (a sink): its workers never join (experiment.trainer)
cat > "$DIR/trainer.json" <<EOF
{"name": "metrics-trainer", "kind": "staleness", "node": {"role": "trainer", "ip": "198.18.0.9",
 "ports": ["null:sink"]}, "staleness": {"join_timeout": "60s", "workers": 2},
 "output": {"dir": "results"}}
EOF
start_psb trainer --config "$DIR/trainer.json" -l 1 --no-huge --output-dir "$DIR/out" \
	--exception null:sink \
	--file-prefix "$TAG-t" --prometheus "$TP" --ctl "$DIR/t.ctl" \
	--counters-file "$DIR/t.jsonl" --counters-every 0.1
TPID=$LAST_PID
wait_http "http://127.0.0.1:$WP/metrics" $WPID
wait_http "http://127.0.0.1:$AP/metrics" $APID
wait_http "http://127.0.0.1:$TP/metrics" $TPID
for _ in $(seq 100); do
	alive $WPID
	n=$("$PSBCTL" --ctl "$DIR/w.ctl" --json counters experiment.pushpull.requests 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["counters"])' 2>/dev/null) ||
		n=0
	[ "$n" -gt 1000 ] && break
	sleep 0.1
done
[ "$n" -gt 1000 ] || fail "the worker did only $n requests in 10 s"

# every export of each node, one after the other
"$PSBCTL" --ctl "$DIR/s.ctl" raw '{"cmd":"metrics"}' >"$DIR/metrics.json" || fail "metrics"
for node in s w a t; do
	"$PSBCTL" --ctl "$DIR/$node.ctl" --json counters >"$DIR/$node.ctl.json" ||
		fail "psbctl --json counters ($node)"
	"$PSBCTL" --ctl "$DIR/$node.ctl" counters >"$DIR/$node.lines" || fail "psbctl counters ($node)"
done
for x in s:$SP w:$WP a:$AP t:$TP; do
	curl -sf --max-time 5 "http://127.0.0.1:${x#*:}/metrics" >"$DIR/${x%%:*}.prom" ||
		fail "Prometheus page of ${x%%:*}"
done
SECTIONS=(node ports roles store scheduler control experiment passthrough)
# telemetry: each section's endpoint, and those of each role instance and port of the node
for node in s w a t; do
	python3 - "$DIR/$node.ctl.json" "${SECTIONS[@]}" >"$DIR/$node.telcmds" <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["counters"]
for sect in sys.argv[2:] + ["status"]:
    print("/psb/" + sect)
for name in c["roles"]:
    print("/psb/roles," + name)
for port in c["ports"]:
    print("/psb/ports," + port)
PY
	mapfile -t cmds <"$DIR/$node.telcmds"
	tel "$TAG-$node" "${cmds[@]}" >"$DIR/$node.tel" || fail "telemetry ($node)"
done
printf 'show counters %s\n' "${SECTIONS[@]}" >&3
echo 'show lcores' >&3
wait_grep "$DIR/console.out" '^LCORE' 10 "the console did not answer"
SFILE=$(find "$DIR/out" -name c.jsonl | head -1)
[ -n "$SFILE" ] && cp "$SFILE" "$DIR/s.jsonl" || fail "no counters file of the serve experiment"

python3 - "$DIR" <<'PY' || fail "a figure missing from an export"
import json, re, sys

d = sys.argv[1]
metrics = json.load(open(d + "/metrics.json"))["metrics"]
assert len(metrics) > 100, len(metrics)
bad, seen = [], {}


def get(tree, parts):
    for p in parts:
        if not isinstance(tree, dict) or p not in tree:
            return None
        tree = tree[p]
    return tree


def instances(ctl, path):
    """(concrete path parts, Prometheus labels) of each instance path names."""
    parts = path.split(".")
    if parts[0] == "roles":
        for name in ctl.get("roles", {}):
            role, inst = re.fullmatch(r"(.*?)(\d*)", name).groups()
            yield ["roles", name] + parts[2:], {"role": role, "instance": inst or "0"}
    elif parts[0] == "ports":
        for port in ctl.get("ports", {}):
            yield ["ports", port] + parts[2:], {"port": port}
    else:
        yield parts, {}


def prom_parse(path):
    types, samples = {}, []
    for line in open(path):
        m = re.match(r"# TYPE (\S+) (\S+)$", line)
        if m:
            types[m.group(1)] = m.group(2)
        elif not line.startswith("#") and line.strip():
            m = re.match(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$", line.strip())
            assert m, line
            samples.append((m.group(1), dict(re.findall(r'(\w+)="((?:[^"\\]|\\.)*)"',
                                                        m.group(2) or ""))))
    return types, samples


def tel_name(k):
    return re.sub(r"[^a-zA-Z0-9/]", "_", k)


def tel_places(parts, m):
    """(telemetry endpoint, path in its reply) of each endpoint that serves a figure."""
    sect = parts[0]
    if sect == "roles":
        yield "/psb/roles," + parts[1], parts[2:]
        # the totals: every counter of an instance, but its lcore
        if parts[2] not in ("lcore", "busy_pct"):
            yield "/psb/roles", ["totals"] + parts[2:]
    elif sect == "ports":
        yield "/psb/ports", parts[1:]
        yield "/psb/ports," + parts[1], parts[2:]
    else:
        yield "/psb/" + sect, parts[1:]
    # status: the node and the experiment, histograms left out
    if sect in ("node", "experiment") and not m["detail"]:
        yield "/psb/status", parts


for node in "swat":
    ctl = json.load(open("%s/%s.ctl.json" % (d, node)))["counters"]
    lines = set(l.split(" ", 1)[0] for l in open("%s/%s.lines" % (d, node)))
    fl = [json.loads(l) for l in open("%s/%s.jsonl" % (d, node))][-1]["counters"]
    tel = {}
    cmds = open("%s/%s.telcmds" % (d, node)).read().splitlines()
    for cmd, line in zip(cmds, open("%s/%s.tel" % (d, node)).read().splitlines()):
        tel[cmd] = json.loads(line)[cmd.split(",")[0]]
    types, samples = prom_parse("%s/%s.prom" % (d, node))
    con = None
    if node == "s":
        con = set()
        for l in open(d + "/console.out").read().replace("\r", "").splitlines():
            m = re.match(r"(?:psb> )?(\S+) ", l)
            if m:
                con.add(m.group(1))
    for m in metrics:
        path = m["path"]
        for parts, labels in instances(ctl, path):
            v = get(ctl, parts)
            if v is None:
                # only where the node has it: its section, or an af_packet port
                if get(ctl, parts[:1]) is not None and not m["conditional"] and \
                        parts[0] != "experiment":
                    bad.append("%s: %s not in the control socket's counters" %
                               (node, ".".join(parts)))
                continue
            seen[path] = seen.get(path, 0) + 1
            dotted = ".".join(parts)
            if get(fl, parts) is None:
                bad.append("%s: %s not in the counters file" % (node, dotted))
            if not any(l == dotted or l.startswith(dotted + ".") for l in lines):
                bad.append("%s: %s not in psbctl counters" % (node, dotted))
            for cmd, sub in tel_places(parts, m):
                if get(tel.get(cmd), [tel_name(p) for p in sub]) is None:
                    bad.append("%s: %s not in telemetry %s" % (node, dotted, cmd))
            if m["detail"] and get(tel["/psb/status"], parts) is not None:
                bad.append("%s: %s in telemetry /psb/status" % (node, dotted))
            if con is not None:
                # show counters SECTION prints a "path value" line per figure
                if not any(c == dotted or c.startswith(dotted + ".") for c in con):
                    bad.append("%s: %s not in the console's show counters" % (node, dotted))
            name = m["prometheus"]
            if not name:
                continue
            want = {"counter": "counter", "gauge": "gauge", "histogram": "histogram"}[m["kind"]]
            if types.get(name) != want:
                bad.append("%s: Prometheus %s is %s, not %s" % (node, name, types.get(name),
                                                               want))
            sname = name + ("_count" if want == "histogram" else "")
            if not any(s == sname and all(l.get(k) == x for k, x in labels.items())
                       for s, l in samples):
                bad.append("%s: no Prometheus sample %s%s" % (node, sname, labels))

missing = [m["path"] for m in metrics if m["path"] not in seen]
if missing:
    bad.append("figures no node showed: %s" % " ".join(missing))
for b in bad:
    print(b)
print("metrics: %d figures, %d instances checked in 6 exports of 4 nodes" %
      (len(metrics), sum(seen.values())))
sys.exit(1 if bad else 0)
PY

rc=0
wait $WPID || rc=$?
[ $rc = 0 ] || fail "worker exited with $rc"
echo quit >&3
exec 3>&-
for _ in $(seq 150); do kill -0 $SPID 2>/dev/null || break; sleep 0.1; done
kill -0 $SPID 2>/dev/null && fail "the server still runs 15 s after quit"
# both still wait for their peers: their experiments are cut short
stop_psb $APID 143
stop_psb $TPID 143
echo "metrics: every figure in every export"
