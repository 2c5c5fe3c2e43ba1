#!/bin/bash
# The staleness experiment with the appliance among its workers, on the namespace testbed
# (scripts/testbed.sh --bare 3,4): host 0 the trainer (psb-stale), hosts 1 and 2 workers over
# kernel sockets (psb-stale), hosts 3 and 4 psb receivers on af_packet, host 5 a hostile peer.
#
#  - Loss on every worker: nftables drops 3 % of the group's datagrams into hosts 1 and 2
#    and, on the bridge, 3 % of the frames to hosts 3 and 4 (psb's).
#  - psb 3 runs its document at once and exits with the run; psb 4 waits (--wait) and is
#    started through its control socket (psbctl start), watched there (status, counters),
#    and told to quit.
#  - Host 5 sends junk and forged packets (another session's DATA, ACKs from elsewhere) to
#    the group and to psb's own address.
#  Every worker ends holding the final version, every byte checked; the psb workers were
#  repaired (NACKs, parity) and counted the forgeries; the trainer's staleness stays within a
#  bound; psb's results say done. Pull mode: psb pulls each version beside a kernel-socket
#  worker. Then the failure: a psb worker whose trainer is not there
#  ends failed after staleness.join_timeout, naming it, with its results written. And
#  scripts/staleness.sh --psb-workers: the seed's command line with psb as one worker.
#
# usage: test_stale_psb.sh PATH/psb PATH/psbctl PATH/psb-stale TESTBED-SCRIPT. Needs root and
# nft; 77 without.
set -uo pipefail
PSB=$1
PSBCTL=$2
ST=$3
TB=$4
NAME=p$$
NAME=${NAME:0:8}
GROUP=239.18.0.4
GPORT=7300
TPORT=7301
KEY=4711
. "$(dirname "$0")/testbed_env.sh"

cleanup_all() {
	rm -rf /var/run/dpdk/psbsl$$-*
	testbed_cleanup
}
trap cleanup_all EXIT

testbed_up 6 --bare 3,4
TRAINER=$(addr 0)
drop 1 3 "$GPORT"
drop 2 3 "$GPORT"
bridge_drop 3 "$GPORT" 3 4

# doc HOST RANK [JOIN [MODE [WORKERS]]]: the document of psb worker RANK on HOST (wHOST.json),
# and the same without its node (sHOST.json)
doc() {
	cat > "$DIR/w$1.json" <<EOF
{"name": "stale-w$2", "kind": "staleness",
 "node": {"role": "worker", "ip": "$(addr "$1")", "rank": $2, "ports": ["af_packet:eth0"],
          "mtu": 9000, "huge": "no", "file_prefix": "psbsl$$-$1", "connect_timeout": "10s"},
 "staleness": {"mode": "${4:-multicast}", "trainer": "$TRAINER", "port": $TPORT,
               "group": "$GROUP", "group_port": $GPORT, "push_frequency": "0.1s",
               "data_size": 2, "post_frequency": "0.5s", "step_frequency": "5ms",
               "max_version": 40, "max_time": "20s", "workers": ${5:-4}, "key": $KEY,
               "pull_frequency": "20ms",
               "verify": true, "join_timeout": "${3:-20s}"},
 "output": {"dir": "res", "overwrite": true}}
EOF
	# as started on a running psb: its node is the running one's
	python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); del d["node"]; \
		json.dump(d, open(sys.argv[2], "w"))' "$DIR/w$1.json" "$DIR/s$1.json"
}
ctl() { "$PSBCTL" --ctl "/var/run/dpdk/psbsl$$-$1/psb.ctl" "${@:2}"; }
# wait_ctl HOST PID: its control socket is up (psb ready), or fail
wait_ctl() {
	for _ in $(seq 300); do
		[ -S "/var/run/dpdk/psbsl$$-$1/psb.ctl" ] && return
		kill -0 "$2" 2>/dev/null || fail "psb on host $1 exited while starting"
		sleep 0.1
	done
	fail "psb on host $1: no control socket after 30 s"
}

doc 3 2
doc 4 3
on 3 timeout -k 2 90 "$PSB" --config "$DIR/w3.json" --output-dir "$DIR" > "$DIR/psb3.log" 2>&1 &
PSB3=$!
PIDS+=($PSB3)
on 4 timeout -k 2 90 "$PSB" --config "$DIR/w4.json" --output-dir "$DIR" --wait > "$DIR/psb4.log" 2>&1 &
PSB4=$!
PIDS+=($PSB4)
wait_ctl 3 $PSB3
wait_ctl 4 $PSB4
# a document without its trainer is refused, naming the field, and nothing starts
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); del d["staleness"]["trainer"]; \
	json.dump(d, open(sys.argv[2], "w"))' "$DIR/s4.json" "$DIR/s4bad.json"
ctl 4 start "$DIR/s4bad.json" > "$DIR/start4bad.log" 2>&1 && fail "psb 4 took a run without a trainer"
grep -q "staleness.trainer" "$DIR/start4bad.log" || fail "refusal: $(cat "$DIR/start4bad.log")"
ctl 4 start "$DIR/s4.json" > "$DIR/start4.log" 2>&1 || fail "psbctl start: $(cat "$DIR/start4.log")"
ctl 4 status | grep -q running || fail "psb 4: not running after start"
# a second start while it runs is refused, naming the running one
ctl 4 start "$DIR/s4.json" > "$DIR/start4b.log" 2>&1 && fail "psb 4 took a second start"
grep -q "is running" "$DIR/start4b.log" || fail "second start: $(cat "$DIR/start4b.log")"

FL=(--mode multicast --push_frequency 0.1 --data_size 2 --post_frequency 0.5
    --step_frequency 0.005 --max_version 40 --max_time 20 --workers 4 --key $KEY)
for i in 0 1; do
	on $((i + 1)) timeout -k 2 60 "$ST" worker --id $i --trainer "$TRAINER:$TPORT" \
		--local "$(addr $((i + 1)))" --group "$GROUP:$GPORT" --verify \
		--json "$DIR/k$i.json" "${FL[@]}" > "$DIR/k$i.log" 2>&1 &
	PIDS+=($!)
done
K0=${PIDS[-2]}
K1=${PIDS[-1]}

on 5 python3 - "$GROUP" "$GPORT" "$(addr 3)" "$(addr 4)" > "$DIR/forger.log" 2>&1 <<'PY' &
import random, socket, struct, sys, time
g, gport, p3, p4 = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, 1)
s.bind(("0.0.0.0", gport))
rnd = random.Random(11)
end = time.time() + 4
while time.time() < end:
    for dst in ((g, gport), (p3, gport), (p4, gport)):
        s.sendto(bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(1, 120))), dst)
        vid, total, seg = rnd.randrange(1, 60), 2000000, 8932
        hdr = struct.pack(">HBBIIIQIHHIHH", 0x504D, 2, 1, 0xBAD5E55, vid,
                          (total + seg - 1) // seg, total, 0, 64, seg, 0, seg, 0)
        s.sendto(hdr + bytes(seg), dst)
    # ACKs in the trainer's name, from here: END of the run at version 1
    for w in (2, 3):
        ack = struct.pack(">HBBIIIIIQQQ", 0x5354, 1, 3, 0, w, 1, 0, 0, 0, 1, 0)
        s.sendto(ack, (p3 if w == 2 else p4, gport))
    time.sleep(0.005)
print("forger done")
PY
PIDS+=($!)

on 0 timeout -k 2 90 "$ST" trainer --local "$TRAINER:$TPORT" --group "$GROUP:$GPORT" \
	--out "$DIR/res" --trial_name tr "${FL[@]}" > "$DIR/tr.log" 2>&1
rc=$?
[ $rc = 0 ] || fail "the trainer exited with $rc"
wait "$K0" || fail "kernel worker 0 exited with $?"
wait "$K1" || fail "kernel worker 1 exited with $?"
wait "$PSB3"
rc=$?
[ $rc = 0 ] || fail "psb 3 exited with $rc"
for _ in $(seq 100); do
	ctl 4 status 2>/dev/null | grep -q "done" && break
	sleep 0.1
done
ctl 4 status > "$DIR/status4.log" 2>&1
grep -q done "$DIR/status4.log" || fail "psb 4 did not end its run: $(cat "$DIR/status4.log")"
ctl 4 --json counters experiment.staleness > "$DIR/c4.json" || fail "psbctl counters"
ctl 4 quit > /dev/null 2>&1
wait "$PSB4" || fail "psb 4 exited with $?"

python3 - "$DIR" <<'PY' || fail "checks"
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/res/tr/summary.json"))
assert s["ok"] and s["final_version"] == 40, s
assert all(w["holds_final"] and w["posts"] >= 2 for w in s["workers"]), s["workers"]
# 2 MB every 100 ms, 3 % loss everywhere: far less than a version behind on average
assert 0 <= s["window_staleness"] < 1.0, s["window_staleness"]
assert s["refused"]["ahead"] == 0, s["refused"]
for i in (0, 1):
    w = json.load(open(f"{d}/k{i}.json"))
    assert w["ok"] and w["held"] == 40 and w["verify_fail"] == 0, w
for rank in (2, 3):
    r = json.load(open(f"{d}/res/stale-w{rank}/result.json"))
    assert r["state"] == "done", r
    f = r["rows"][0]
    assert f["worker"] == rank and f["held"] == 40 and f["final_version"] == 40, f
    assert f["verify_fail"] == 0 and f["crc_fail"] == 0 and f["versions"] >= 2, f
    # lossy: repaired; the forger's packets counted, not used
    assert f["nacks"] > 0 or f["decoded_groups"] > 0, f
    assert f["forged"] + f["stray"] + sum(f["bad"].values()) > 0, f
    assert r["counters"]["roles"]["receiver0"]["rx_pkts"] > 0, r["counters"]["roles"]
c = json.load(open(f"{d}/c4.json"))["counters"]
assert c["worker"] == 3 and c["held"] == 40 and c["completed"] == 40 and c["ended"] is True, c
print(f"4 workers (2 psb) hold version 40 under 3 % loss and a forger; window staleness "
      f"{s['window_staleness']:.3f}")
PY

# ---- pull mode: psb pulls each version from the trainer, beside a kernel-socket worker
doc 3 1 20s pull 2
on 3 timeout -k 2 60 "$PSB" --config "$DIR/w3.json" --output-dir "$DIR" > "$DIR/psb3p.log" 2>&1 &
PSB3=$!
PIDS+=($PSB3)
wait_ctl 3 $PSB3
FLP=(--mode pull --push_frequency 0.1 --data_size 2 --pull_frequency 0.02 --post_frequency 0.5
     --step_frequency 0.005 --max_version 40 --max_time 20 --workers 2 --key $KEY)
on 1 timeout -k 2 60 "$ST" worker --id 0 --trainer "$TRAINER:$TPORT" --local "$(addr 1)" \
	--verify --json "$DIR/kp.json" "${FLP[@]}" > "$DIR/kp.log" 2>&1 &
K0=$!
PIDS+=($K0)
on 0 timeout -k 2 60 "$ST" trainer --local "$TRAINER:$TPORT" --out "$DIR/res" \
	--trial_name trp "${FLP[@]}" > "$DIR/trp.log" 2>&1 || fail "pull: the trainer exited with $?"
wait "$K0" || fail "pull: the kernel worker exited with $?"
wait "$PSB3" || fail "pull: psb exited with $?"
python3 - "$DIR" <<'PY' || fail "pull checks"
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/res/trp/summary.json"))
assert s["ok"] and s["final_version"] == 40, s
assert all(w["holds_final"] for w in s["workers"]), s["workers"]
r = json.load(open(f"{d}/res/stale-w1/result.json"))
f = r["rows"][0]
assert r["state"] == "done" and f["held"] == 40 and f["verify_fail"] == 0, r
assert f["completed"] >= 2 and f["data_pkts"] > 0, f
print(f"pull: psb and a kernel-socket worker hold version 40; window staleness "
      f"{s['window_staleness']:.3f}")
PY

# ---- a psb worker whose trainer is not there: failed, naming it, results written
doc 3 2 1s
on 3 timeout -k 2 60 "$PSB" --config "$DIR/w3.json" --output-dir "$DIR" > "$DIR/psb3b.log" 2>&1
rc=$?
[ $rc = 1 ] || fail "psb without a trainer exited with $rc, not 1"
grep -q "$TRAINER:$TPORT did not answer within 1.0 s" "$DIR/psb3b.log" ||
	fail "psb without a trainer did not name it"
python3 - "$DIR" <<'PY' || fail "failed run's results"
import json, sys
r = json.load(open(sys.argv[1] + "/res/stale-w2/result.json"))
assert r["state"] == "failed" and "did not answer" in r["error"], r
PY
# ---- the one-command form (scripts/staleness.sh --psb-workers): worker 2 of 3 is psb
Q=r$$
"$(dirname "$TB")/staleness.sh" --testbed "${Q:0:8}" --build "$(dirname "$PSB")/../.." \
	--out "$DIR/seed" --mode multicast --push_frequency 0.1 --data_size 1 \
	--post_frequency 0.5 --max_version 15 --workers 3 --psb-workers 1 \
	--trial_name seed > "$DIR/seed.log" 2>&1 || fail "scripts/staleness.sh exited with $?"
python3 - "$DIR" <<'PY' || fail "scripts/staleness.sh --psb-workers checks"
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/seed/seed/summary.json"))
assert s["ok"] and s["final_version"] == 15, s
assert all(w["holds_final"] for w in s["workers"]), s["workers"]
r = json.load(open(f"{d}/seed/seed.workers/psb2/result.json"))
assert r["state"] == "done" and r["rows"][0]["held"] == 15, r
print("scripts/staleness.sh --psb-workers 1: worker 2 (psb) holds version 15")
PY

echo "test_stale_psb: ok"
