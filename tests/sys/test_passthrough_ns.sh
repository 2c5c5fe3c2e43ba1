#!/bin/bash
# The exception path in namespaces. psb runs in a "host" namespace whose kernel sits behind
# psb's exception port (a tap, 198.18.13.2); a peer namespace is on the wire side
# (198.18.13.3) of psb's af_packet port.
#  - the host's kernel reaches the peer through psb, both ways: ping, and UDP to a server of
#    the host's; psb answers ping at its own address meanwhile, and serves push/pull to the
#    peer's kernel-socket workers (exact sums);
#  - RoCE of psb-rocegen sent from the peer and from the host's kernel side: psbctl roce_qp
#    and telemetry's /psb/roce_qp show every queue pair and total as the scenario says;
#  - --isolate on a net_tap wire port: the port refuses (no TC flower here), psb says which
#    call or rule it refused and passes the host's traffic itself: ping and UDP still go.
#
# usage: test_passthrough_ns.sh PSB PSBCTL PSB-KBENCH PSB-ROCEGEN ROCE_COMPARE
#
# Needs root (namespaces, veth, tap); exits 77 (skip) without. Everything it makes is named
# after its PID and removed on exit, whatever the outcome.
set -u

source "$(dirname "$0")/netns.sh"

psb=${1:?usage: test_passthrough_ns.sh PSB PSBCTL PSB-KBENCH PSB-ROCEGEN ROCE_COMPARE}
psbctl=${2:?}
kbench=${3:?}
rocegen=${4:?}
compare=${5:?}

ns=psbph$$		# the host: psb and the kernel behind its exception port
nsp=psbpp$$		# the peer, on the wire side
vr=psbpr$$		# psb's af_packet port (in ns)
vn=psbpn$$		# the peer's end (in nsp)
exc=psbpx$$		# psb's exception port: a tap in ns, the host kernel's interface
wtap=psbpw$$		# run 2: psb's wire port, a tap bridged to vr
br=psbpb$$
prefix=psbp$$
psb_ip=198.18.13.1
host_ip=198.18.13.2
peer_ip=198.18.13.3

psb_pid=
tmp=

log() { echo "test_passthrough_ns: $*"; }
fail() {
	echo "test_passthrough_ns: FAIL: $*" >&2
	[ -n "$tmp" ] && [ -f "$tmp/psb.log" ] && tail -n 25 "$tmp/psb.log" >&2
	exit 1
}
skip() { echo "test_passthrough_ns: SKIP: $*"; exit 77; }

cleanup() {
	local rc=$?
	trap - EXIT INT TERM
	pid_stop "$psb_pid"
	ip netns pids "$nsp" 2>/dev/null | xargs -r kill -KILL 2>/dev/null
	ip netns del "$nsp" 2>/dev/null
	netns_down "$ns" "$vr"
	rm -rf "/var/run/dpdk/$prefix"
	[ -n "$tmp" ] && rm -rf "$tmp"
	exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

for x in "$psb" "$psbctl" "$kbench" "$rocegen" "$compare"; do
	[ -e "$x" ] || fail "'$x' not found"
done
netns_add "$ns"
ip netns add "$nsp" || fail "cannot create the peer's namespace"
tmp=$(mktemp -d /tmp/psb-ptns.XXXXXX) || fail "mktemp failed"
for n in "$ns" "$nsp"; do
	ip netns exec "$n" sysctl -qw net.ipv6.conf.all.disable_ipv6=1
	ip netns exec "$n" sysctl -qw net.ipv6.conf.default.disable_ipv6=1
	ip -n "$n" link set lo up
done
ip link add "$vr" mtu 9000 type veth peer name "$vn" mtu 9000 || fail "cannot create a veth"
ip link set "$vr" netns "$ns" && ip link set "$vn" netns "$nsp" || fail "cannot move the veth"
ip -n "$ns" link set "$vr" up
ip -n "$nsp" addr add "$peer_ip/24" dev "$vn"
ip -n "$nsp" link set "$vn" up

# tx_csum_off NS IF: the kernel fills the UDP checksums of what IF sends. A veth leaves them
# to offload, which psb, passing frames as they came, does not do: the host's kernel would
# drop them (a NIC fills them on the wire).
tx_csum_off() {
	ip netns exec "$1" python3 - "$2" <<'PY' || fail "cannot turn checksum offload off on $2"
import ctypes, fcntl, socket, struct, sys
ETHTOOL_STXCSUM, SIOCETHTOOL = 0x17, 0x8946
val = ctypes.create_string_buffer(struct.pack("II", ETHTOOL_STXCSUM, 0))
ifr = struct.pack("16sP", sys.argv[1].encode(), ctypes.addressof(val)) + b"\0" * 16
fcntl.ioctl(socket.socket(), SIOCETHTOOL, ifr)
PY
}

# start PORT EXTRA...: psb in the host namespace with exception port tap:$exc, once the tap
# is there it gets the host kernel's address
start() {
	local port=$1 i
	shift
	rm -f "$tmp/psb.ctl" "$tmp/con.in"
	# its console on a FIFO this shell holds open (fd 3)
	mkfifo "$tmp/con.in" || fail "mkfifo"
	ip netns exec "$ns" "$psb" --role server --port "$port" --exception "tap:$exc" \
		--ip "$psb_ip" --num-workers 1 --async --mtu 9000 -l 0 --no-huge \
		--file-prefix "$prefix" --ctl "$tmp/psb.ctl" -i "$@" <"$tmp/con.in" \
		>"$tmp/psb.log" 2>&1 &
	psb_pid=$!
	exec 3>"$tmp/con.in"
	for ((i = 0; i < 300; i++)); do
		kill -0 "$psb_pid" 2>/dev/null || fail "psb exited during start-up"
		[ -S "$tmp/psb.ctl" ] && ip -n "$ns" link show "$exc" >/dev/null 2>&1 && break
		sleep 0.1
	done
	[ -S "$tmp/psb.ctl" ] || fail "psb did not come up within 30 s"
	ip -n "$ns" addr add "$host_ip/24" dev "$exc" || fail "cannot address the tap $exc"
	ip -n "$ns" link set "$exc" up
}

stop() {
	echo quit >&3
	exec 3>&-
	for ((i = 0; i < 100; i++)); do kill -0 "$psb_pid" 2>/dev/null || break; sleep 0.1; done
	wait "$psb_pid"
	local rc=$?
	psb_pid=
	[ $rc -eq 0 ] || fail "psb exited $rc"
}

# ping_from NS DST COUNT: every reply within 1 s each, up to 10 tries for the first
ping_from() {
	local i
	for ((i = 0; i < 10; i++)); do
		ip netns exec "$1" ping -c 1 -W 1 "$2" >/dev/null 2>&1 && break
	done
	ip netns exec "$1" ping -c "$3" -W 1 -i 0.2 "$2" >"$tmp/ping.out" 2>&1 ||
		fail "ping $2 from $1: $(tail -n 2 "$tmp/ping.out")"
}

# udp_both: a UDP echo server of the host's kernel, 40 datagrams from the peer all answered
udp_both() {
	ip netns exec "$ns" timeout 20 python3 - "$host_ip" <<'PY' &
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((sys.argv[1], 5000))
for _ in range(40):
    data, addr = s.recvfrom(65535)
    s.sendto(data[::-1], addr)
PY
	local srv=$!
	sleep 0.3
	ip netns exec "$nsp" timeout 15 python3 - "$host_ip" <<'PY' || fail "UDP through psb: not every datagram came back"
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.settimeout(1.0)
ok = 0
for i in range(40):
    msg = (b"passthrough %d " % i) * (1 + i * 2)	# up to 1.3 KB: the tap's MTU is 1500
    for _ in range(3):
        s.sendto(msg, (sys.argv[1], 5000))
        try:
            data, _ = s.recvfrom(65535)
        except socket.timeout:
            continue
        if data == msg[::-1]:
            ok += 1
            break
print("udp: %d of 40 answered" % ok)
sys.exit(0 if ok == 40 else 1)
PY
	wait "$srv" 2>/dev/null
}

# send_pcap NS IFACE FILE: the frames of FILE, raw, out of IFACE in NS
send_pcap() {
	ip netns exec "$1" env PYTHONPATH="$test_lib" python3 - "$2" "$3" <<'PY' ||
import socket, sys, time
import psbframe as pf
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
for f in pf.read_pcap(sys.argv[2]):
    s.send(f)
    time.sleep(0.0005)
PY
		fail "cannot send $3 from $1"
}

tx_csum_off "$nsp" "$vn"

log "run 1: psb on af_packet:$vr, the host's kernel behind tap:$exc"
start "af_packet:$vr" --roce-qps 256 --prometheus 127.0.0.1:9464
grep -q "passthrough: exception port tap:$exc" "$tmp/psb.log" || fail "no passthrough line at start"
ping_from "$nsp" "$host_ip" 5
log "the peer pings the host's kernel through psb"
ping_from "$ns" "$peer_ip" 3
log "the host's kernel pings the peer through psb"
ping_from "$nsp" "$psb_ip" 3
log "psb answers ping itself"
udp_both
log "UDP both ways through psb"
timeout 60 ip netns exec "$nsp" "$kbench" --server "$psb_ip" --async --keys 8 --seg-size 8932 \
	--verify -q --results "$tmp/kb.json" 65536 20 0 >"$tmp/kb.log" 2>&1 ||
	{ cat "$tmp/kb.log" >&2; fail "push/pull against psb failed"; }
timeout 30 ip netns exec "$nsp" "$kbench" --server "$psb_ip" --keys 8 --seg-size 8932 \
	--check 20 --check-version 20 -q 65536 >"$tmp/check.log" 2>&1 ||
	{ cat "$tmp/check.log" >&2; fail "psb's sums after push/pull are wrong"; }
log "psb served push/pull meanwhile: sums exact"

"$rocegen" --wire "$tmp/w.pcap" --host "$tmp/h.pcap" --expect "$tmp/e.json" --repeat 3 \
	--max-payload 1024 >/dev/null || fail "psb-rocegen"
send_pcap "$nsp" "$vn" "$tmp/w.pcap"
send_pcap "$ns" "$exc" "$tmp/h.pcap"
sleep 0.5	# the role publishes every 100 ms
"$psbctl" --ctl "$tmp/psb.ctl" --json roce_qp >"$tmp/qp.json" || fail "psbctl roce_qp"
python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1]))["roce_qp"], open(sys.argv[2], "w"))' \
	"$tmp/qp.json" "$tmp/qp1.json" || fail "psbctl roce_qp: no roce_qp in its reply"
python3 "$compare" "$tmp/e.json" "$tmp/qp1.json" || fail "the queue pairs are not the scenario's"
"$psbctl" --ctl "$tmp/psb.ctl" roce_qp 2 >"$tmp/qp.lines" || fail "psbctl roce_qp 2"
grep -q "qps" "$tmp/qp.lines" || fail "psbctl roce_qp 2 printed no rows: $(head -3 "$tmp/qp.lines")"
"$psbctl" --ctl "$tmp/psb.ctl" --json roce_qp 2 >"$tmp/qp2.json" || fail "psbctl --json roce_qp 2"
python3 - "$tmp/qp2.json" "$tmp/e.json" <<'PY' || fail "roce_qp 2: not the two busiest"
import json, sys
q = json.load(open(sys.argv[1]))["roce_qp"]
e = json.load(open(sys.argv[2]))
busiest = sorted((r["pkts"] for r in e["qps"]), reverse=True)[:2]
assert [r["pkts"] for r in q["qps"]] == busiest and q["tracked"] == len(e["qps"]), (q, busiest)
PY
python3 - "/var/run/dpdk/$prefix/dpdk_telemetry.v2" "$tmp/e.json" <<'PY' || fail "telemetry /psb/roce_qp"
import json, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.connect(sys.argv[1])
s.recv(1024)
s.send(b"/psb/roce_qp,4")
r = json.loads(s.recv(65536))["/psb/roce_qp"]
e = json.load(open(sys.argv[2]))
assert r["shown"] == 4 and len(r["qps"]) == 4 and r["tracked"] == len(e["qps"]), r
assert r["totals"]["icrc_bad"] == e["totals"]["icrc_bad"], r["totals"]
s.send(b"/psb/passthrough")
p = json.loads(s.recv(65536))["/psb/passthrough"]
assert p["qp_cap"] == 256 and p["to_host_pkts"] > 0 and p["from_host_pkts"] > 0, p
print("telemetry: %d of %d queue pairs shown, passthrough %d to the host, %d from it" %
      (r["shown"], r["tracked"], p["to_host_pkts"], p["from_host_pkts"]))
PY
echo "show roce qp" >&3
for ((i = 0; i < 50; i++)); do grep -q "^v2_ip4 0x000101 " "$tmp/psb.log" && break; sleep 0.1; done
grep -q "^RoCE passed: v1 6, v2 IPv4 78, v2 IPv6 36 frames" "$tmp/psb.log" ||
	fail "show roce qp: no totals line: $(grep -A3 'show roce' "$tmp/psb.log" | head -5)"
grep -q "^VER *QPN *SRC *DST *PKTS" "$tmp/psb.log" || fail "show roce qp: no header"
grep -Eq "^v2_ip4 0x000101 198.18.0.3 +198.18.0.2 +30 " "$tmp/psb.log" ||
	fail "show roce qp: no row of QP 0x101 with its 30 packets"
ip netns exec "$ns" curl -sf --max-time 5 http://127.0.0.1:9464/metrics >"$tmp/prom" ||
	fail "no Prometheus page"
grep -q '^psb_roce_qp_passed_packets_total{version="v2_ip4",qpn="257",src="198.18.0.3",dst="198.18.0.2"} 30$' \
	"$tmp/prom" || fail "Prometheus: no series of QP 0x101: $(grep -m3 psb_roce_qp "$tmp/prom")"
grep -q '^psb_passthrough_icrc_bad_packets_total 6$' "$tmp/prom" ||
	fail "Prometheus: no passthrough totals: $(grep -m3 psb_passthrough "$tmp/prom")"
log "RoCE counted per queue pair: psbctl, telemetry, show roce qp and Prometheus as the scenario says"
"$psbctl" --ctl "$tmp/psb.ctl" reset_state >/dev/null || fail "reset_state"
sleep 0.3
"$psbctl" --ctl "$tmp/psb.ctl" --json roce_qp >"$tmp/qp3.json" || fail "psbctl roce_qp after reset"
python3 - "$tmp/qp3.json" <<'PY' || fail "reset_state left RoCE figures"
import json, sys
q = json.load(open(sys.argv[1]))["roce_qp"]
t = q["totals"]
assert q["tracked"] == 0 and q["qps"] == [] and q["cap"] == 256 and q["accounting"], q
assert t["v2_ip4"] + t["v2_ip6"] + t["v1"] + t["qp_new"] + t["icrc_bad"] == 0, t
PY
log "reset_state: the queue pairs and RoCE totals start again"
stop

log "run 2: --isolate on a net_tap wire port (refused here), bridged to the peer"
ip -n "$nsp" neigh flush all	# psb's address is at another MAC now
ip -n "$ns" link add "$br" type bridge || fail "cannot create a bridge"
ip -n "$ns" link set "$vr" master "$br" && ip -n "$ns" link set "$br" up ||
	fail "cannot bridge $vr"
# psb a MAC of its own: the tap interface's is the bridge's, which keeps frames to it
start "tap:$wtap" --isolate --mac 02:00:00:00:13:01
ip -n "$ns" link set "$wtap" master "$br" && ip -n "$ns" link set "$wtap" up ||
	fail "cannot bridge the wire tap"
grep -E "no isolated mode: (rte_flow_isolate\(port [0-9]+, on\)|rule [0-9]+ of [0-9]+, .+,) refused: .+" \
	"$tmp/psb.log" || fail "psb did not say which call or rule the port refused"
grep -q "psb passes the host's traffic itself, through the exception port 'tap:$exc'" \
	"$tmp/psb.log" || fail "psb did not say it falls back to the exception port"
ping_from "$nsp" "$host_ip" 3
ping_from "$nsp" "$psb_ip" 3
udp_both
log "refused isolation: the host's traffic still goes through psb, and psb answers"
stop
log "PASS"
