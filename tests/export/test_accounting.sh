#!/bin/bash
# Every frame of a known mix (gen_mix.c: requests, ARP, ping, spoofed and real BYEs,
# responses nobody serves, and every kind of frame psb drops) is accounted exactly once:
#   frames the port received = rx_pkts = handed + not_served + ring_full + no_mbuf
#       + arp_replies + arp_learned + icmp_replies + byes + bye_ignored + every drop reason,
# each term as the generator says, and every export reads the same: the control socket
# (psbctl), DPDK telemetry, Prometheus, the console's show counters and --stats-file.
#
# usage: test_accounting.sh PSB PSBCTL GEN_MIX
source "$(dirname "$0")/common.sh" "$1"
PSBCTL=${2:?usage: test_accounting.sh PSB PSBCTL GEN_MIX}
GEN=${3:?usage: test_accounting.sh PSB PSBCTL GEN_MIX}
[ -r "$TEL" ] || { echo "SKIP: no $TEL"; exit 77; }
command -v curl >/dev/null || fail "curl is not installed"

"$GEN" "$DIR/in.pcap" >"$DIR/want.json" || fail "gen_mix could not write the mix"
N=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["frames"])' \
	"$DIR/want.json")
PORT=$(free_port)
PFX=$TAG-a

# The console reads a FIFO that this shell holds open (fd 3) until it sends quit.
mkfifo "$DIR/console.in"
"$PSB" --role server --port "pcap:$DIR/in.pcap:$DIR/out.pcap" --ip 198.18.0.1 \
	--mac 02:00:00:00:00:01 --mtu 1500 --async --num-workers 1 -l 0 --no-huge --mbufs 8192 \
	--file-prefix "$PFX" --stats-file "$DIR/stats.json" --prometheus "$PORT" -i \
	<"$DIR/console.in" >"$DIR/console.out" 2>"$DIR/psb.log" &
SPID=$!
PIDS+=("$SPID")
exec 3>"$DIR/console.in"

# The control socket appears once the port runs; the pcap is read at once: wait until all
# of it went through the rx role.
for _ in $(seq 600); do
	alive $SPID
	[ -S "$RUNDIR/$PFX/psb.ctl" ] && break
	sleep 0.1
done
[ -S "$RUNDIR/$PFX/psb.ctl" ] || fail "psb's control socket did not appear within 60 s"
n=0
for _ in $(seq 200); do
	alive $SPID
	n=$("$PSBCTL" -p "$PFX" --json counters roles.rx0.rx_pkts 2>/dev/null |
		python3 -c 'import json, sys; print(json.load(sys.stdin)["counters"])' 2>/dev/null) ||
		n=0
	[ "$n" = "$N" ] && break
	sleep 0.1
done
[ "$n" = "$N" ] || fail "psb took $n of the $N frames of the mix within 20 s"

"$PSBCTL" -p "$PFX" --json counters >"$DIR/ctl.json" || fail "psbctl counters failed"
"$PSBCTL" -p "$PFX" raw '{"cmd":"metrics"}' >"$DIR/metrics.json" || fail "psbctl metrics failed"
tel "$PFX" /psb/roles,rx0 /psb/roles,tx0 /psb/ports,0 >"$DIR/tel.out" ||
	fail "dpdk-telemetry.py failed"
curl -sf --max-time 5 "http://127.0.0.1:$PORT/metrics" >"$DIR/metrics.prom" ||
	fail "no Prometheus page on port $PORT"
printf '%s\n' 'show counters rx0' 'show counters tx0' 'show counters ports.0' 'show lcores' >&3
wait_grep "$DIR/console.out" '^LCORE' 10 "the console did not answer"
echo quit >&3
exec 3>&-
for _ in $(seq 150); do kill -0 $SPID 2>/dev/null || break; sleep 0.1; done
kill -0 $SPID 2>/dev/null && fail "psb still runs 15 s after quit"
rc=0
wait $SPID || rc=$?
[ $rc = 0 ] || fail "psb exited with $rc"

python3 - "$DIR" <<'PY' || fail "the counters do not account for every frame"
import json, re, sys

d = sys.argv[1]
want = json.load(open(d + "/want.json"))
OUTCOMES = ["handed", "not_served", "ring_full", "no_mbuf", "arp_replies", "arp_learned",
            "icmp_replies", "byes", "bye_ignored"]


def check(name, rx, tx, port):
    """rx/tx: counters of roles rx0/tx0, drops as a dict; port: ports.0."""
    errs = []
    for k in OUTCOMES:
        if rx.get(k) != want[k]:
            errs.append("%s %s, want %s" % (k, rx.get(k), want[k]))
    if rx.get("drops") != want["drops"]:
        errs.append("drops %s, want %s" % (rx.get("drops"), want["drops"]))
    total = sum(rx.get(k, 0) for k in OUTCOMES) + sum(rx.get("drops", {}).values())
    if not port.get("ipackets") == rx.get("rx_pkts") == total == want["frames"]:
        errs.append("port received %s, rx_pkts %s, outcomes add up to %s; the mix has %d"
                    % (port.get("ipackets"), rx.get("rx_pkts"), total, want["frames"]))
    if not port.get("opackets") == tx.get("tx_pkts") == want["answers"]:
        errs.append("port sent %s, tx_pkts %s; want %d answers"
                    % (port.get("opackets"), tx.get("tx_pkts"), want["answers"]))
    if errs:
        print("%s:\n  %s" % (name, "\n  ".join(errs)))
    else:
        print("%s: %d frames: %d handed, %d dropped, the rest answered or noted"
              % (name, total, rx["handed"], sum(rx["drops"].values())))
    return not errs


ok = True

# control socket (psbctl --json counters)
c = json.load(open(d + "/ctl.json"))["counters"]
ok &= check("control socket", c["roles"]["rx0"], c["roles"]["tx0"], c["ports"]["0"])

# telemetry: one reply line per command, {"/psb/roles": {...}}
t = [next(iter(json.loads(l).values())) for l in open(d + "/tel.out").read().splitlines()]
ok &= check("telemetry", t[0], t[1], t[2])

# Prometheus: psb_role_..{role=,instance=,...[,reason=]} and psb_port_..{port=...}, named
# as the metrics command says
names = {}
for m in json.load(open(d + "/metrics.json"))["metrics"]:
    sect, _, key = m["path"].partition(".")
    if sect in ("roles", "ports") and m["prometheus"]:
        names[m["prometheus"]] = key.partition(".")[2]
prom = {"rx": {"drops": {}}, "tx": {"drops": {}}, "port": {}}
for line in open(d + "/metrics.prom"):
    m = re.match(r'((psb_role|psb_port)_\w+)\{([^}]*)\} (\S+)$', line.strip())
    if not m or m.group(1) not in names:
        continue
    key = names[m.group(1)]
    labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(3)))
    v = int(float(m.group(4)))
    if m.group(2) == "psb_port":
        if labels.get("port") == "0":
            prom["port"][key] = v
    elif labels.get("instance") == "0" and labels.get("role") in ("rx", "tx"):
        r = prom[labels["role"]]
        if key == "drops":
            r["drops"][labels["reason"]] = v
        else:
            r[key] = v
ok &= check("prometheus", prom["rx"], prom["tx"], prom["port"])

# console: "path value" lines with the whole path, as psbctl's (roles.rx0.drops.REASON 3)
con = {}
for line in open(d + "/console.out").read().replace("\r", "").splitlines():
    m = re.match(r'(roles\.[a-z]+\d+|ports\.\d+)\.(\S+) (-?\d+)$', line)
    if m:
        cur = con.setdefault(m.group(1), {"drops": {}})
        k, v = m.group(2), int(m.group(3))
        if k.startswith("drops."):
            cur["drops"][k[6:]] = v
        else:
            cur[k] = v
ok &= check("console", con.get("roles.rx0", {}), con.get("roles.tx0", {}),
            con.get("ports.0", {}))

# --stats-file: per role, and the totals add up the same way
s = json.load(open(d + "/stats.json"))
roles = {r["role"] + str(r["instance"]): r for r in s["roles"]}
ok &= check("stats file", roles["rx0"], roles["tx0"], s["ports"][0])
ok &= check("stats file totals", s["totals"], s["totals"], s["ports"][0])
# every counter in the totals: the rx role's received, the tx role's sent, others summed
for k, v in s["totals"].items():
    only = {"rx_pkts": "rx", "rx_bytes": "rx", "tx_pkts": "tx", "tx_bytes": "tx"}.get(k)
    rs = [r for r in s["roles"] if only in (None, r["role"])]
    want_v = ({d: sum(r[k][d] for r in rs) for d in v} if isinstance(v, dict)
              else sum(r[k] for r in rs))
    if v != want_v:
        print("stats file totals: %s is %s, the roles add up to %s" % (k, v, want_v))
        ok = False
if s["totals"]["tx_bytes"] != s["ports"][0]["obytes"]:
    print("stats file totals: tx_bytes %d, the port sent %d bytes"
          % (s["totals"]["tx_bytes"], s["ports"][0]["obytes"]))
    ok = False
sys.exit(0 if ok else 1)
PY
echo "accounting: every frame of the mix counted once, in every export"
