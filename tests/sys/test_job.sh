#!/bin/bash
# The ps-lite job over real ports: a scheduler, two servers and two workers, each in its own
# namespace on one bridge (af_packet), started by DMLC_* alone with default settings. Run at
# 4 KB and 1 MB on a 1500-byte bridge (1 MB is 716 segments: lost ones are repaired, not
# the whole value resent) and at 1 MB on a 9000-byte one (jumbo frames: psb takes the
# interface's MTU). Every run must finish its rounds with exact sums on both servers.
#
# usage: test_job.sh PATH/psb. Needs root; 77 without.
set -uo pipefail
PSB=$1
if [ "$(id -u)" != 0 ] || ! command -v ip >/dev/null; then
	echo "SKIP: needs root and iproute2"
	exit 77
fi
. "$(dirname "$0")/bridge.sh"
DIR=$(mktemp -d /tmp/psb-job-XXXXXX)
BR=psbjb$$
NODES=(0 1 2 3 4)
PIDS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	pkill -9 -f -- "--file-prefix psbt-jb$$-" 2>/dev/null || true
	wait 2>/dev/null || true
	bridge_down "$BR" "pjb$$" "pj$$" "${NODES[@]}"
	rm -rf "$DIR" /var/run/dpdk/psbt-jb$$-*
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; for f in "$DIR"/*.log; do echo "== $f"; tail -12 "$f"; done >&2; exit 1; }

bridge_up "$BR" "pjb$$" "pj$$" "${NODES[@]}" || fail "cannot build the bridge and namespaces"

set_mtu() {
	local n
	ip link set "$BR" mtu "$1"
	for n in "${NODES[@]}"; do
		ip link set "pj$$b$n" mtu "$1"
		ip netns exec "pjb$$-$n" ip link set "pj$$a$n" mtu "$1"
	done
}

ROOT=198.18.13.1
start() {	# start N ROLE HOST-IP ARGS...
	local n=$1 role=$2 host=$3
	shift 3
	ip netns exec "pjb$$-$n" env -i PATH="$PATH" DMLC_ROLE="$role" DMLC_PS_ROOT_URI=$ROOT \
		DMLC_NUM_SERVER=2 DMLC_NUM_WORKER=2 DMLC_INTERFACE="pj$$a$n" \
		${host:+DMLC_NODE_HOST=$host} \
		timeout -k 5 150 "$PSB" --file-prefix "psbt-jb$$-$n" "$@" > "$DIR/n$n.log" 2>&1 &
	PIDS+=($!)
}

run_job() {	# run_job MTU LEN REPEAT
	local mtu=$1 len=$2 repeat=$3 i t0
	set_mtu "$mtu"
	rm -f "$DIR"/*.json "$DIR"/*.log
	t0=$(date +%s)
	start 0 scheduler ""
	start 1 server 198.18.13.2 --stats-file "$DIR/s1.json"
	start 2 server 198.18.13.3 --stats-file "$DIR/s2.json"
	start 3 worker 198.18.13.10 --verify --results "$DIR/w3.json" "$len" "$repeat"
	start 4 worker 198.18.13.11 --verify --results "$DIR/w4.json" "$len" "$repeat"
	wait "${PIDS[3]}" || fail "MTU $mtu, $len B: worker 0 exited with $?"
	wait "${PIDS[4]}" || fail "MTU $mtu, $len B: worker 1 exited with $?"
	for i in 0 1 2; do kill -TERM "${PIDS[$i]}" 2>/dev/null; done
	for i in 0 1 2; do wait "${PIDS[$i]}" || fail "MTU $mtu, $len B: node $i exited with $?"; done
	PIDS=()
	python3 - "$DIR" "$mtu" "$len" "$repeat" <<'PY' || fail "MTU $mtu, $len B: checks"
import json, re, sys
d, mtu, length, repeat = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
# psb takes the interface's MTU, jumbo included
for n in (1, 3):
    t = open(f"{d}/n{n}.log").read()
    m = re.search(r"MTU (\d+), segment (\d+) B", t)
    assert m and int(m.group(1)) == mtu, (n, m and m.group(0), t[-600:])
    assert re.search(rf"kernel rings of \d+ frames each way \(MTU {mtu}\)", t), t[-600:]
good = []
for f in ("w3", "w4"):
    w = json.load(open(f"{d}/{f}.json"))
    assert w["iterations"] == repeat and w["failed"] == 0 and w["verify_errors"] == 0, w
    good.append(w["goodput_gbps"])
rec = {}
for f in ("s1", "s2"):
    st = json.load(open(f"{d}/{f}.json"))["store"]
    # every worker pushed rank + 1 into every element once per round: 1 + 2 per round
    assert st["keys"] > 0 and st["value_sum"] == st["keys"] * (length // 4) * repeat * 3, (f, st)
    for k in st["digest"]:
        assert k["round"] == repeat and k["min"] == k["max"] == 3 * repeat, (f, k)
    assert st["repair_bad"] == 0, st
    rec[f] = (st["repairs"], st["nacks"], st["repair_segs"])
print(f"MTU {mtu}, {length} B x {repeat}: exact sums, goodput {good[0]:.2f} + {good[1]:.2f} Gbps;"
      f" server repairs/nacks/segments {rec}")
PY
	echo "  ($(($(date +%s) - t0)) s)"
}

run_job 1500 4096 50
run_job 1500 1048576 3
run_job 9000 1048576 3
echo "job: 2 servers and 2 workers over af_packet, 4 KB and 1 MB (MTU 1500 and 9000), exact sums"
