#!/bin/bash
# psb-sweep's Slurm launcher on a real Slurm: the one-host Slurm of scripts/slurm-local.sh
# (brought up here when it is not up, and taken down at the end only then; 77 when it cannot
# come up). Every array job of the test is cancelled at the end, however the test ended.
#  1. a sweep of 4 jobs with --max_array_size 3: two arrays (sbatch --array=0-2%2 and
#     0-0%2), their ids in each job's launcher.json, --wait until done, the results table;
#  2. a trial past its timeout: failed, as the runner recorded it; resume launches it again
#     in a new array;
#  3. a running task is running (squeue) and delete_incomplete leaves it; scancel'd, it is
#     no longer running (failed, or incomplete) and delete_incomplete removes it.
#
# usage: test_slurm_sweep.sh SLURM_LOCAL_SH PSB_SWEEP PSB CONFIG_DIR
set -u
sl=${1:?usage: test_slurm_sweep.sh SLURM_LOCAL_SH PSB_SWEEP PSB CONFIG_DIR}
SWEEP=${2:?}
PSB=${3:?}
CONF=${4:?}
NAME=slurmtest-$$
tmp=$(mktemp -d /tmp/psb-slurm-sweep.XXXXXX) || exit 1
brought=0
cleanup() {
	[ -z "${SLURM_CONF:-}" ] || timeout 10 scancel --name="psb-sweep-$NAME" >/dev/null 2>&1
	for _ in $(seq 50); do pgrep -f "$tmp/" >/dev/null || break; sleep 0.2; done
	pkill -9 -f "$tmp/" 2>/dev/null
	if [ $brought = 1 ]; then
		"$sl" down >"$tmp/down.log" 2>&1 || { cat "$tmp/down.log" >&2; echo \
			"test_slurm_sweep: slurm-local.sh down failed" >&2; }
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "test_slurm_sweep: FAIL: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "skipped: needs root (Slurm's daemons, psb)"; exit 77; }

if ! "$sl" status >/dev/null 2>&1; then
	if ! "$sl" up >"$tmp/up.log" 2>&1; then
		cat "$tmp/up.log"
		echo "skipped: the one-host Slurm (scripts/slurm-local.sh up) did not come up"
		exit 77
	fi
	brought=1
fi
eval "$("$sl" env)"
sw() { timeout -k 5 600 "$SWEEP" "$@" --psb "$PSB"; }

# sweep FILE BODY: a sweep named $NAME of psb's shipped documents with BODY's keys
sweep() {
	cat > "$tmp/$1.json" <<EOF
{"name": "$NAME", "server": "$CONF/pushpull-server.json", "worker": "$CONF/pushpull-worker.json",
 $2}
EOF
}

# ---- 1. two arrays, --wait, results
sweep small '"set": {"pushpull.repeat": 200}, "grid": {"pushpull.len": ["4KiB", "8KiB"]},
 "trials": 2, "timeout": "60s"'
sw launch --sweep "$tmp/small.json" --output_dir "$tmp/o1" --command_launcher slurm \
	--max_array_size 3 --max_concurrent 2 --wait --skip_confirmation > "$tmp/l1" 2>&1 ||
	{ cat "$tmp/l1" >&2; fail "the Slurm sweep failed"; }
grep -q 'arrays of 3 task(s) at most, 2 at once' "$tmp/l1" || fail "limits: $(cat "$tmp/l1")"
grep -q 'array job [0-9]*: 3 task(s) (0-2%2)' "$tmp/l1" || fail "first array: $(cat "$tmp/l1")"
grep -q 'array job [0-9]*: 1 task(s) (0-0%2)' "$tmp/l1" || fail "second array: $(cat "$tmp/l1")"
grep -q '4 done, 0 failed, 0 incomplete' "$tmp/l1" || fail "wait: $(cat "$tmp/l1")"
python3 - "$tmp/o1" <<'PY' || fail "launcher records"
import glob, json, re, sys
recs = [json.load(open(p)) for p in glob.glob(sys.argv[1] + "/*/launcher.json")]
assert len(recs) == 4, recs
assert all(r["launcher"] == "slurm" and re.fullmatch(r"\d+_\d", r["job_id"]) for r in recs), recs
assert len({r["array_job"] for r in recs}) == 2, recs
assert sorted(r["task"] for r in recs) == [0, 0, 1, 2], recs
PY
sw results --sweep "$tmp/small.json" --output_dir "$tmp/o1" > "$tmp/r1" 2>&1 ||
	fail "results: $(cat "$tmp/r1")"
grep -q 'Jobs: 4 (2 settings x 2 trials): 4 done' "$tmp/r1" || fail "results: $(cat "$tmp/r1")"

# ---- 2. a trial past its timeout fails; resume launches it again
sweep slow '"set": {"pushpull.repeat": 100000000}, "timeout": "2s"'
sw launch --sweep "$tmp/slow.json" --output_dir "$tmp/o2" --command_launcher slurm --wait \
	--skip_confirmation > "$tmp/l2" 2>&1 && fail "an overrun trial succeeded on Slurm"
grep -q '0 done, 1 failed' "$tmp/l2" || fail "timeout on Slurm: $(cat "$tmp/l2")"
grep -q 'still running after 2 s' "$tmp"/o2/*/status.json || fail "status: $(cat "$tmp"/o2/*/status.json)"
first=$(python3 -c 'import glob,json,sys; print(json.load(open(glob.glob(sys.argv[1]+"/*/launcher.json")[0]))["job_id"])' "$tmp/o2")
sw resume --sweep "$tmp/slow.json" --output_dir "$tmp/o2" --command_launcher slurm --wait \
	--skip_confirmation > "$tmp/r2" 2>&1 && fail "the resumed overrun succeeded"
grep -q 'Launch 1 job(s) through slurm\|array job [0-9]*: 1 task(s)' "$tmp/r2" ||
	fail "resume launched nothing: $(cat "$tmp/r2")"
second=$(python3 -c 'import glob,json,sys; print(json.load(open(glob.glob(sys.argv[1]+"/*/launcher.json")[0]))["job_id"])' "$tmp/o2")
[ "$first" != "$second" ] || fail "resume did not launch again ($first)"

# ---- 3. running on Slurm: kept by delete_incomplete; cancelled: not running
sweep long '"set": {"pushpull.repeat": 100000000}, "timeout": "120s"'
sw launch --sweep "$tmp/long.json" --output_dir "$tmp/o3" --command_launcher slurm \
	--skip_confirmation > "$tmp/l3" 2>&1 || fail "launch: $(cat "$tmp/l3")"
for _ in $(seq 150); do
	sw list --sweep "$tmp/long.json" --output_dir "$tmp/o3" 2>/dev/null | grep -q '1 running' &&
		pgrep -f "$tmp/o3/" >/dev/null && break
	sleep 0.2
done
sw list --sweep "$tmp/long.json" --output_dir "$tmp/o3" | grep -q '1 running' ||
	fail "the Slurm task is not running"
sw delete_incomplete --sweep "$tmp/long.json" --output_dir "$tmp/o3" --skip_confirmation \
	> "$tmp/d3" 2>&1 || fail "delete_incomplete"
grep -q 'no failed or incomplete job' "$tmp/d3" || fail "delete_incomplete: $(cat "$tmp/d3")"
scancel --name="psb-sweep-$NAME"
for _ in $(seq 150); do
	sw list --sweep "$tmp/long.json" --output_dir "$tmp/o3" 2>/dev/null | grep -q '1 running' ||
		break
	sleep 0.2
done
sw list --sweep "$tmp/long.json" --output_dir "$tmp/o3" > "$tmp/s3" 2>&1
grep -q '1 failed\|1 incomplete' "$tmp/s3" || fail "a cancelled task: $(cat "$tmp/s3")"
sw delete_incomplete --sweep "$tmp/long.json" --output_dir "$tmp/o3" --skip_confirmation \
	> "$tmp/d3" 2>&1 || fail "delete_incomplete"
grep -q '1 job directory deleted' "$tmp/d3" || fail "delete_incomplete: $(cat "$tmp/d3")"
for _ in $(seq 100); do pgrep -f "$tmp/o3/" >/dev/null || break; sleep 0.2; done
pgrep -f "$tmp/o3/" >/dev/null && fail "a cancelled task's psb still runs"
echo "ok: psb-sweep on Slurm"
