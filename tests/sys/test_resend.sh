#!/bin/bash
# What a peer can make psb send again is bounded per sender, and an honest worker never
# notices. A psb server, a psb worker and a hostile peer on af_packet ports and a bridge:
#  1. the default budget under loss: 3 % of the frames between server and worker dropped
#     each way (nftables on the bridge); the worker's repairs and retries are answered, its
#     results exact (--verify), and the server refused no resend (store.resend_over_budget);
#  2. a small budget (--resend-rate; the burst two answers of --max-value, 1 MiB) and a
#     hostile peer (resend_client.py) that stores a value, reads it once and then, for
#     3 s, asks for it again every 4 ms by repeated PULLs and REPAIRs: what psb sends it
#     stays within the burst and the rate for that time (bytes as on the wire), the rest
#     is counted, and a line names the peer's address and no other sender; the worker
#     beside it runs exact all the while.
#
# usage: test_resend.sh PATH/psb. Needs root, iproute2 and nft; 77 without.
set -uo pipefail
PSB=$1
TEST_DIR=$(cd "$(dirname "$0")" && pwd)
. "$TEST_DIR/bridge.sh"
command -v nft >/dev/null || { echo "SKIP: needs nft"; exit 77; }
bridge_test rs 12 s w h
LOSS=psbresend$$
resend_cleanup() {
	nft delete table bridge "$LOSS" 2>/dev/null
	bridge_test_cleanup
}
trap resend_cleanup EXIT

SIP=198.18.14.1
WIP=198.18.14.10
HIP=198.18.14.9
ip netns exec "$NSP-h" ip addr add "$HIP/24" dev "${NSP}ah" || fail "hostile peer's address"
PSB_MAC=$(ip netns exec "$NSP-s" cat "/sys/class/net/${NSP}as/address")

# server TAG ARGS...: the server in its namespace, in the background (SPID), once its
# control socket is there
server() {
	local tag=$1
	shift
	timeout -k 5 120 ip netns exec "$NSP-s" "$PSB" --role server --port "af_packet:${NSP}as" \
		--ip $SIP --num-workers 2 --async -l 0 --no-huge --file-prefix "$PFX$tag" \
		--stats-file "$DIR/$tag.json" "$@" >"$DIR/$tag.log" 2>&1 &
	SPID=$!
	PIDS+=("$SPID")
	for _ in $(seq 600); do
		[ -S "/var/run/dpdk/$PFX$tag/psb.ctl" ] && return
		kill -0 $SPID 2>/dev/null || fail "$tag: the server exited during start-up"
		sleep 0.1
	done
	fail "$tag: the server did not come up within 60 s"
}

# worker TAG ARGS...: the honest worker (rank 0), in the background (WPID)
worker() {
	local tag=$1
	shift
	timeout -k 5 90 ip netns exec "$NSP-w" "$PSB" --role worker --port "af_packet:${NSP}aw" \
		--ip $WIP --server $SIP --rank 0 --num-workers 2 --async -l 1 --no-huge \
		--file-prefix "$PFX$tag" --keys 4 --len 65536 --mode 1 --verify \
		--results "$DIR/$tag.json" "$@" >"$DIR/$tag.log" 2>&1 &
	WPID=$!
	PIDS+=("$WPID")
}

# stop_server TAG: SIGTERM, and the server exits 0 (its stats file written)
stop_server() {
	kill -TERM $SPID
	wait $SPID || fail "$1: the server exited with $?"
}

# ---- 1. the default budget, 3 % loss each way between server and worker
nft -f - <<NFT || fail "nft on the bridge"
table bridge $LOSS {
	chain loss {
		type filter hook forward priority 0; policy accept;
		oifname "${NSP}bs" ip saddr $WIP ip protocol udp numgen random mod 100 < 3 counter drop
		oifname "${NSP}bw" ip saddr $SIP ip protocol udp numgen random mod 100 < 3 counter drop
	}
}
NFT
server s1
grep -q "store resend budget: every sender .* at once, then 1 Gbit/s, per shard" "$DIR/s1.log" ||
	fail "s1: the server did not say its resend budget"
worker w1 --repeat 40
wait $WPID || fail "w1: the worker exited with $?"
stop_server s1
DROPPED=$(nft list table bridge "$LOSS" | grep -o 'packets [0-9]*' | awk '{n += $2} END {print n}')
nft delete table bridge "$LOSS"
python3 - "$DIR" "$DROPPED" <<'PY' || fail "1: results"
import json, sys
d, dropped = sys.argv[1], int(sys.argv[2])
w = json.load(open(d + "/w1.json"))
st = json.load(open(d + "/s1.json"))["store"]
rec = w["recovery"]
assert dropped > 0, dropped
assert w["iterations"] == 40 and w["failed"] == 0 and w["verify_errors"] == 0, w
assert w["retries"] > 0 and rec["repairs"] + rec["resends"] > 0, w
assert st["resend_bytes"] > 0, st
assert sum(st["resend_over_budget"].values()) == 0, st["resend_over_budget"]
assert st["resend_over_budget_bytes"] == 0, st
print("1: %d frames dropped; the worker retried %d times (%d repairs), exact; the server "
      "sent %d B again, refused none" % (dropped, w["retries"], rec["repairs"],
                                         st["resend_bytes"]))
PY

# ---- 2. a hostile peer against a small budget, the worker beside it
RATE=8000000		# bits/s: 1 MB/s
server s2 --max-value 1MiB --resend-rate $RATE
worker w2 --repeat 1000000 --duration 4
ip netns exec "$NSP-h" env PYTHONPATH="$TEST_DIR/../lib" python3 "$TEST_DIR/resend_client.py" \
	"${NSP}ah" "$PSB_MAC" $SIP $HIP 1 3 >"$DIR/h.json" 2>"$DIR/h.log" ||
	fail "2: the hostile peer: $(cat "$DIR/h.log")"
wait $WPID || fail "w2: the worker exited with $?"
stop_server s2
grep -q "shard 0: sender 1 at $HIP:40000 over its resend budget" "$DIR/s2.log" ||
	fail "2: no line names the hostile peer"
grep -q "other senders too" "$DIR/s2.log" && fail "2: the worker was refused a resend too"
python3 - "$DIR" $RATE <<'PY' || fail "2: results"
import json, sys
d, rate = sys.argv[1], int(sys.argv[2]) / 8
h = json.load(open(d + "/h.json"))
w = json.load(open(d + "/w2.json"))
st = json.load(open(d + "/s2.json"))["store"]
burst = st["limits"]["resend_burst"]
assert burst == 2 * (1048576 + 733 * 82), st["limits"]
assert st["limits"]["resend_rate_gbps"] == rate * 8 / 1e9, st["limits"]
bound = burst + rate * h["flood_s"]
print("2: the peer asked for %d B in %.2f s (%d messages, %d B) and got %d B again; "
      "bound %d B; %s" % (h["asked"], h["flood_s"], h["sent"], h["sent_bytes"], h["bytes"],
                          bound, st["resend_over_budget"]))
# the burst's answers, and no more than the burst and the rate since
assert h["bytes"] >= burst - h["answer_bytes"], h
# psb's clock (the TSC's, as DPDK measured it) and the peer's may differ a little
assert h["bytes"] <= bound + 0.01 * rate * h["flood_s"] + 1514, (h, bound)
assert h["asked"] >= 20 * h["bytes"], h
# what it was not sent is counted: whole answers, segments and REPAIR_RESPs
over = st["resend_over_budget"]
assert over["duplicate"] > 0 and over["repair"] > 0 and over["segment"] > 0, over
assert st["resend_over_budget_bytes"] >= 10 * h["bytes"], st
# the worker beside it: every value it read exact
assert w["iterations"] > 0 and w["failed"] == 0 and w["verify_errors"] == 0, w
PY
echo "resend: honest repairs under loss within the default budget; a hostile peer's resends bounded"
