#!/bin/bash
# psb on af_packet over a veth, reached from a network namespace by kernel clients: ARP, ping, psb.
#
# usage: test_interop.sh PATH/psb PATH/psb-kbench
#
# Needs root (namespace, veth); exits 77 (skip) without. Everything it makes is named after
# its PID and removed on exit, whatever the outcome.
set -u

source "$(dirname "$0")/netns.sh"

psb=${1:?usage: test_interop.sh PATH/psb PATH/psb-kbench}
kbench=${2:?usage: test_interop.sh PATH/psb PATH/psb-kbench}

ns=psbt-$$		# network namespace
vr=psbr$$		# root side of the veth (psb's port), no address; <= 15 chars
vn=psbn$$		# namespace side, 198.18.7.2/24
prefix=psbt$$		# DPDK runtime prefix
server_ip=198.18.7.1
client_ip=198.18.7.2
workers=2
iters=10		# PUSH_THEN_PULL iterations per worker
keys=8
len=65536		# 46 segments of 1432 B per value

psb_pid=
tmp=

log() {
	echo "test_interop: $*"
}

fail() {
	echo "test_interop: FAIL: $*" >&2
	exit 1
}

skip() {
	echo "test_interop: SKIP: $*"
	exit 77
}

# ping -c COUNT -W 1 DST from the namespace; without iputils ping, the same in Python (raw
# socket), which also checks the checksum of each reply.
ns_ping() {
	if command -v ping >/dev/null 2>&1; then
		ip netns exec "$ns" ping -c "$1" -W 1 "$2"
		return
	fi
	ip netns exec "$ns" env PYTHONPATH="$test_lib" python3 - "$1" "$2" <<'EOF'
import os, socket, struct, sys, time
from psbframe import csum

count, dst = int(sys.argv[1]), sys.argv[2]

sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_ICMP)
ident, ok = os.getpid() & 0xffff, 0
for seq in range(1, count + 1):
    payload = b"psb-interop %d" % seq
    hdr = struct.pack("!BBHHH", 8, 0, 0, ident, seq)
    pkt = struct.pack("!BBHHH", 8, 0, csum(hdr + payload), ident, seq) + payload
    sock.sendto(pkt, (dst, 0))
    deadline = time.monotonic() + 1.0
    while time.monotonic() < deadline:
        sock.settimeout(max(deadline - time.monotonic(), 0.001))
        try:
            data, addr = sock.recvfrom(4096)
        except socket.timeout:
            break
        icmp = data[(data[0] & 15) * 4:]
        if addr[0] != dst or icmp[0] != 0 or struct.unpack("!HH", icmp[4:8]) != (ident, seq):
            continue
        if csum(icmp) != 0 or icmp[8:] != payload:
            print("reply %d from %s: bad checksum or payload" % (seq, dst))
            break
        print("%d bytes from %s: icmp_seq=%d (python ping)" % (len(icmp), dst, seq))
        ok += 1
        time.sleep(0.2)
        break
print("%d packets transmitted, %d received" % (count, ok))
sys.exit(0 if ok == count else 1)
EOF
}

# Wait up to $1 seconds for pid $2 to exit; 0 if it did.
wait_exit() {
	local t=$(($1 * 10)) i
	for ((i = 0; i < t; i++)); do
		kill -0 "$2" 2>/dev/null || return 0
		sleep 0.1
	done
	return 1
}

trap netns_cleanup EXIT
trap 'exit 1' INT TERM

[ -x "$psb" ] || fail "psb not found at '$psb'"
[ -x "$kbench" ] || fail "psb-kbench not found at '$kbench'"
netns_add "$ns"

tmp=$(mktemp -d /tmp/psb-interop.XXXXXX) || fail "mktemp failed"
netns_up "$ns" "$vr" "$vn" "$client_ip/24" || fail "cannot set up the namespace"

log "starting psb on af_packet:$vr ($server_ip)"
"$psb" --role server --port "af_packet:$vr" --ip "$server_ip" --num-workers "$workers" --async \
	-l 0 --file-prefix "$prefix" --stats-file "$tmp/psb.json" -q >"$tmp/psb.log" 2>&1 &
psb_pid=$!

# Up means answering: ARP and ping from the namespace, within 30 s.
up=0
for ((i = 0; i < 30; i++)); do
	kill -0 "$psb_pid" 2>/dev/null || { cat "$tmp/psb.log" >&2; fail "psb exited during start-up"; }
	if ns_ping 1 "$server_ip" >/dev/null 2>&1; then
		up=1
		break
	fi
done
[ $up -eq 1 ] || { cat "$tmp/psb.log" >&2; fail "psb did not answer ping within 30 s"; }

ns_ping 3 "$server_ip" || fail "ping $server_ip from $ns failed"
log "ping ok"

# Every worker pushes rank + 1 into each key, then pulls, $iters times, concurrently.
pids=()
for ((r = 0; r < workers; r++)); do
	timeout 60 ip netns exec "$ns" "$kbench" --server "$server_ip" --rank $r \
		--num-workers $workers --async --keys $keys --seg-size 1432 -q \
		--results "$tmp/worker$r.json" $len $iters 0 >"$tmp/worker$r.log" 2>&1 &
	pids+=($!)
done
for ((r = 0; r < workers; r++)); do
	if ! wait "${pids[$r]}"; then
		cat "$tmp/worker$r.log" >&2
		fail "psb-kbench rank $r failed against psb"
	fi
	cat "$tmp/worker$r.log"
done

# Exact sums, each push applied once: iters * (1 + 2 + ... + workers), version workers * iters.
want=$((iters * workers * (workers + 1) / 2))
timeout 30 ip netns exec "$ns" "$kbench" --server "$server_ip" --rank 0 --num-workers $workers \
	--async --keys $keys --check $want --check-version $((workers * iters)) $len ||
	fail "the values psb holds are not the exact sums"

log "stopping psb"
kill -TERM "$psb_pid"
wait_exit 15 "$psb_pid" || fail "psb did not exit within 15 s of SIGTERM"
wait "$psb_pid"
psb_rc=$?
psb_pid=
cat "$tmp/psb.log"
[ $psb_rc -eq 0 ] || fail "psb exited with $psb_rc"
[ -s "$tmp/psb.json" ] || fail "psb wrote no stats file"

python3 - "$tmp/psb.json" "$((workers * iters * keys))" <<'EOF' || fail "psb's counters are wrong"
import json, sys
st = json.load(open(sys.argv[1]))
tot = st["totals"]
store = st.get("store", {})
want_push = int(sys.argv[2])
print("psb: arp_replies %d, icmp_replies %d, push %s, pull %s"
      % (tot["arp_replies"], tot["icmp_replies"], store.get("push"), store.get("pull")))
ok = tot["arp_replies"] >= 1 and tot["icmp_replies"] >= 3 and store.get("push") == want_push
sys.exit(0 if ok else 1)
EOF
log "PASS"
