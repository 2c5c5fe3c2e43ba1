#!/bin/bash
# The staleness experiment with the appliance as its trainer, on the namespace testbed
# (scripts/testbed.sh --bare 0,3): host 0 psb's trainer role on af_packet, hosts 1 and 2
# workers over kernel sockets (psb-stale), host 3 a psb receiver, host 4 a hostile peer.
#
#  - Multicast, started through the control plane: psb waits (--wait), psbctl start runs
#    the document, status and counters (experiment.trainer) are read while it runs. nftables
#    drops 3 % of the group's datagrams into hosts 1 and 2, and on the bridge 3 % of the
#    frames to host 3: the trainer repairs (NACKs taken, parity sent). Host 4 sends junk,
#    posts with a wrong key, another session's NACKs and posts in a worker's name to the
#    trainer's port: counted, the run unchanged (its NACKs come from no worker's address:
#    stray, nothing repaired for them). On host 1, beside its worker, a NACK storm
#    (scripts/bench/mc_storm.py: every symbol of every group, 2000 times a second, under 50
#    receiver ids): held to its budgets, counted, host 1 named as the busiest NACKer. Every
#    worker holds version 40, every byte checked; the trainer's results (a row per worker,
#    staleness.csv a line a post, and staleness.svg) say done and the staleness stays
#    under 1.
#  - Pull, from the document: each worker pulls each version from psb.
#  - A run whose workers never come: failed after join_timeout naming them, exit 1, the
#    results written.
#
# usage: test_stale_trainer.sh PATH/psb PATH/psbctl PATH/psb-stale TESTBED-SCRIPT
# STORM-SCRIPT. Needs root and nft; 77 without.
set -uo pipefail
PSB=$1
PSBCTL=$2
ST=$3
TB=$4
STORM=$5
NAME=t$$
NAME=${NAME:0:8}
GROUP=239.18.0.5
GPORT=7400
TPORT=7401
KEY=4712
. "$(dirname "$0")/testbed_env.sh"

cleanup_all() {
	rm -rf /var/run/dpdk/psbst$$-*
	testbed_cleanup
}
trap cleanup_all EXIT

testbed_up 5 --bare 0,3
TRAINER=$(addr 0)
drop 1 3 "$GPORT"
drop 2 3 "$GPORT"
bridge_drop 3 "$GPORT" 3

# doc FILE ROLE HOST [MODE [WORKERS [JOIN [RANK]]]]: a document for psb on HOST
doc() {
	local node
	if [ "$2" = trainer ]; then
		node="\"role\": \"trainer\""
	else
		node="\"role\": \"worker\", \"rank\": ${7:-2}"
	fi
	cat > "$DIR/$1" <<EOF
{"name": "stale-$2", "kind": "staleness",
 "node": {$node, "ip": "$(addr "$3")", "ports": ["af_packet:eth0"], "mtu": 9000,
          "huge": "no", "file_prefix": "psbst$$-$3", "connect_timeout": "10s"},
 "staleness": {"mode": "${4:-multicast}", "trainer": "$TRAINER", "port": $TPORT,
               "group": "$GROUP", "group_port": $GPORT, "push_frequency": "0.1s",
               "data_size": 2, "post_frequency": "0.5s", "step_frequency": "5ms",
               "max_version": 40, "max_time": "20s", "workers": ${5:-3}, "key": $KEY,
               "pull_frequency": "20ms", "verify": true, "join_timeout": "${6:-20s}"},
 "output": {"dir": "res", "overwrite": true}}
EOF
}
ctl() { "$PSBCTL" --ctl "/var/run/dpdk/psbst$$-0/psb.ctl" "$@"; }
wait_ctl() {
	for _ in $(seq 300); do
		[ -S "/var/run/dpdk/psbst$$-0/psb.ctl" ] && return
		kill -0 "$1" 2>/dev/null || fail "psb's trainer exited while starting"
		sleep 0.1
	done
	fail "psb's trainer: no control socket after 30 s"
}
# kernel WORKER-ID HOST MODE WORKERS LOG: a psb-stale worker
kernel() {
	local fl=(--mode "$3" --push_frequency 0.1 --data_size 2 --post_frequency 0.5
		  --pull_frequency 0.02 --step_frequency 0.005 --max_version 40 --max_time 20
		  --workers "$4" --key $KEY)
	[ "$3" = multicast ] && fl+=(--group "$GROUP:$GPORT")
	on "$2" timeout -k 2 60 "$ST" worker --id "$1" --trainer "$TRAINER:$TPORT" \
		--local "$(addr "$2")" --verify --json "$DIR/$5.json" "${fl[@]}" > "$DIR/$5.log" 2>&1 &
	PIDS+=($!)
}

# ---- multicast, through the control plane, under loss and a forger
doc t.json trainer 0
doc w.json worker 3
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); del d["node"]; \
	json.dump(d, open(sys.argv[2], "w"))' "$DIR/t.json" "$DIR/ts.json"
on 0 timeout -k 2 90 "$PSB" --config "$DIR/t.json" --output-dir "$DIR" --wait \
	> "$DIR/tr.log" 2>&1 &
TR=$!
PIDS+=($TR)
wait_ctl $TR
ctl start "$DIR/ts.json" > "$DIR/start.log" 2>&1 || fail "psbctl start: $(cat "$DIR/start.log")"
ctl status | grep -q running || fail "the trainer is not running after start"
on 3 timeout -k 2 60 "$PSB" --config "$DIR/w.json" --output-dir "$DIR" > "$DIR/w.log" 2>&1 &
W=$!
PIDS+=($W)
kernel 0 1 multicast 3 k0
K0=$!
kernel 1 2 multicast 3 k1
K1=$!
on 1 timeout -k 2 30 python3 "$STORM" --local "$(addr 1)" --group "$GROUP:$GPORT" --rate 2000 \
	--seconds 3 --ids 50 --json "$DIR/storm.json" > "$DIR/storm.log" 2>&1 &
STORMER=$!
PIDS+=($STORMER)

on 4 python3 - "$TRAINER" "$TPORT" > "$DIR/forger.log" 2>&1 <<'PY' &
import random, socket, struct, sys, time
tr, tport = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
rnd = random.Random(12)
end = time.time() + 4
while time.time() < end:
    # junk, a NACK of another session, joins with a wrong key, a post in worker 0's name
    s.sendto(bytes(rnd.getrandbits(8) for _ in range(rnd.randrange(1, 120))), (tr, tport))
    nack = struct.pack(">HBBIIIQIHHIHH", 0x504D, 2, 4, 0xBAD5E55, 3, 224, 2000000, 0, 64,
                       8932, 0, 1, 0) + struct.pack(">IHHQ", 0, 1, 0, 1)
    s.sendto(nack, (tr, tport))
    for w in (0, 1, 2):
        join = struct.pack(">HBBIIIIIQQQ", 0x5354, 1, 1, 0, w, 0, 0, 0, 4711, 0, 0)
        s.sendto(join, (tr, tport))
    post = struct.pack(">HBBIIIIIQQQ", 0x5354, 1, 1, 0, 0, 1, 10, 1, 10, 100000000, 0)
    s.sendto(post, (tr, tport))
    time.sleep(0.005)
print("forger done")
PY
PIDS+=($!)

# live: the trainer's figures in its counters while it runs
for _ in $(seq 100); do
	ctl --json counters experiment.trainer > "$DIR/live.json" 2>/dev/null &&
		python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["counters"]; \
			sys.exit(0 if c["version"] > 0 and c["joined"] == 3 else 1)' "$DIR/live.json" &&
		break
	sleep 0.1
done
python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["counters"]; \
	sys.exit(0 if c["version"] > 0 else 1)' "$DIR/live.json" ||
	fail "no live figures of the trainer: $(cat "$DIR/live.json")"
for _ in $(seq 300); do
	ctl status 2>/dev/null | grep -q "done\|failed" && break
	sleep 0.1
done
ctl status > "$DIR/status.log" 2>&1
grep -q done "$DIR/status.log" || fail "the trainer did not end its run: $(cat "$DIR/status.log")"
ctl --json counters experiment.trainer > "$DIR/end.json" || fail "psbctl counters"
ctl quit > /dev/null 2>&1
wait "$TR" || fail "the trainer exited with $?"
wait "$K0" || fail "kernel worker 0 exited with $?"
wait "$K1" || fail "kernel worker 1 exited with $?"
wait "$W" || fail "psb's worker exited with $?"
wait "$STORMER" || fail "the stormer failed"

python3 - "$DIR" "$(addr 1)" <<'PY' || fail "checks"
import json, sys
d, storm_ip = sys.argv[1], sys.argv[2]
r = json.load(open(f"{d}/res/stale-trainer/result.json"))
assert r["state"] == "done", r.get("error")
rows = {row["worker"]: row for row in r["rows"]}
for w in (0, 1, 2):
    row = rows[w]
    assert row["holds_final"] is True and row["holds"] == 40 and row["posts"] >= 2, row
    assert row["address"].startswith("198.19.0.1%d:" % (w + 1)), row
    assert 0 <= row["window_staleness"] < 1.0, row
    assert row["version_difference"] >= row["window_staleness"], row
assert rows["all"]["holds_final"] == 3 and rows["all"]["holds"] == 40, rows["all"]
t = r["counters"]["experiment"]["trainer"]
assert t["version"] == 40 and t["published"] == 40 and t["sent_whole"] >= 39, t
assert t["joined"] == 3 and t["holding_final"] == 3 and t["ended"] is True, t
assert 0 <= t["window_staleness"] < 1.0 and t["version_difference"] > 0, t
# lossy: repaired; the forger's messages counted, not taken
assert t["nacks"] > 0 and t["repair_parity_pkts"] + t["repair_data_pkts"] > 0, t
assert t["malformed"] > 0 and t["refused"] > 0 and t["stray_nacks"] > 0, t
# the storm from a worker's host: taken, held to its budgets, its host named
assert json.load(open(f"{d}/storm.json"))["nacks"] >= 2000
assert t["nack_over_budget"] > 0 and t["nacker_addr"]["1"] == storm_ip, t
assert t["nacker_ids"]["1"] >= 50 and t["nacker_over_budget"]["1"] > 0, t
bad = sum(t["nack_bad"].values())
assert t["nack_pkts"] == t["nacks"] + t["nack_forged"] + t["nack_superseded"] + bad, t
# the time series: a line a post, the plot beside it
import csv
lines = list(csv.DictReader(open(f"{d}/res/stale-trainer/staleness.csv")))
assert len(lines) == t["posts"] and t["series_dropped"] == 0, (len(lines), t["posts"])
assert {int(l["worker"]) for l in lines} == {0, 1, 2}, lines[:3]
assert all(0 <= float(l["window_staleness"]) < 5 and float(l["version_difference"]) >= 0
           for l in lines), lines
assert open(f"{d}/res/stale-trainer/staleness.svg").read().count("<polyline") == 4
e = json.load(open(f"{d}/end.json"))["counters"]
assert e == t, (e, t)
for i in (0, 1):
    w = json.load(open(f"{d}/k{i}.json"))
    assert w["ok"] and w["held"] == 40 and w["verify_fail"] == 0, w
p = json.load(open(f"{d}/res/stale-worker/result.json"))
f = p["rows"][0]
assert p["state"] == "done" and f["held"] == 40 and f["verify_fail"] == 0, p
print(f"psb's trainer: 3 workers (1 psb) hold version 40 under 3 % loss and a forger; "
      f"window staleness {t['window_staleness']:.3f}; {t['nacks']} NACKs, "
      f"{t['repair_parity_pkts']} parity repairs")
PY

# ---- pull mode, from the document
doc t.json trainer 0 pull 2
doc w.json worker 3 pull 2 20s 1
on 0 timeout -k 2 60 "$PSB" --config "$DIR/t.json" --output-dir "$DIR" > "$DIR/trp.log" 2>&1 &
TR=$!
PIDS+=($TR)
on 3 timeout -k 2 60 "$PSB" --config "$DIR/w.json" --output-dir "$DIR" > "$DIR/wp.log" 2>&1 &
W=$!
PIDS+=($W)
kernel 0 1 pull 2 kp
K0=$!
wait "$TR" || fail "pull: the trainer exited with $?"
wait "$K0" || fail "pull: the kernel worker exited with $?"
wait "$W" || fail "pull: psb's worker exited with $?"
python3 - "$DIR" <<'PY' || fail "pull checks"
import json, sys
d = sys.argv[1]
r = json.load(open(f"{d}/res/stale-trainer/result.json"))
assert r["state"] == "done", r.get("error")
assert all(row["holds_final"] for row in r["rows"][:2]), r["rows"]
t = r["counters"]["experiment"]["trainer"]
assert t["pulls"] > 0 and t["published"] >= 2 and t["data_pkts"] > 0, t
w = json.load(open(f"{d}/kp.json"))
assert w["ok"] and w["held"] == 40 and w["verify_fail"] == 0, w
print(f"pull: psb's trainer gave 2 workers version 40; {t['pulls']} PULLs")
PY

# ---- workers that never come: failed, naming them, results written
doc t.json trainer 0 multicast 2 1s
on 0 timeout -k 2 60 "$PSB" --config "$DIR/t.json" --output-dir "$DIR" > "$DIR/trf.log" 2>&1
rc=$?
[ $rc = 1 ] || fail "a trainer without workers exited with $rc, not 1"
grep -q "workers did not join within 1.0 s: 0 1" "$DIR/trf.log" ||
	fail "the trainer did not name the workers missing"
python3 - "$DIR" <<'PY' || fail "failed run's results"
import json, sys
r = json.load(open(sys.argv[1] + "/res/stale-trainer/result.json"))
assert r["state"] == "failed" and "did not join" in r["error"], r
assert [row["worker"] for row in r["rows"]] == [0, 1, "all"], r["rows"]
assert not any(row["holds_final"] for row in r["rows"][:2]), r["rows"]
PY
echo "test_stale_trainer: ok"
