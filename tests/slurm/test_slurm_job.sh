#!/bin/bash
# psb jobs on a real Slurm: the one-host Slurm of scripts/slurm-local.sh (brought up here
# when it is not up, and taken down at the end only then; 77 when it cannot come up). Every
# job is named psb-test-PID and cancelled at the end, however the test ended.
#  1. a push/pull job from one srun line: srun -n 4 psb-slurm --ksrv --servers 1 -- kv_sums:
#     task 0 psb-ksrv's scheduler, task 1 a psb-ksrv server, tasks 2 and 3 workers whose
#     every sum is checked (as tests/pslite/test_pslite.sh checks them);
#  2. the program in every role, as ps-lite runs one (its scheduler and servers start
#     psb-ksrv): srun -n 5 psb-slurm --servers 2 -- kv_sums;
#  3. the docs' batch script, scripts/slurm/pushpull.sbatch, by sbatch --wait: synchronous
#     rounds, the benchmark of tests/pslite in push-pull mode checking what it pulls;
#  4. the staleness experiment, psb-stale in pull mode: srun -n 3 psb-slurm --job staleness;
#     the trainer's summary.json says both workers hold the final version;
#  5. a worker that fails: the step ends at once (--kill-on-bad-exit), srun says it failed;
#  6. sacct lists the jobs, completed and failed, where this Slurm keeps accounting.
#
# usage: test_slurm_job.sh SLURM_LOCAL_SH PSB_SLURM PSB_STALE KV_SUMS BENCH_MODES
#        PUSHPULL_SBATCH
set -u
sl=${1:?usage: test_slurm_job.sh SLURM_LOCAL_SH PSB_SLURM PSB_STALE KV_SUMS BENCH_MODES PUSHPULL_SBATCH}
ps=${2:?}
stale=${3:?}
kv_sums=${4:?}
bench_modes=${5:?}
sbatch_script=${6:?}
NAME=psb-test-$$
tmp=$(mktemp -d /tmp/psb-slurm-job.XXXXXX) || exit 1
brought=0
cleanup() {
	[ -z "${SLURM_CONF:-}" ] || timeout 10 scancel --name="$NAME" >/dev/null 2>&1
	if [ $brought = 1 ]; then
		"$sl" down >"$tmp/down.log" 2>&1 || { cat "$tmp/down.log" >&2; echo \
			"test_slurm_job: slurm-local.sh down failed" >&2; }
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "test_slurm_job: FAIL: $*" >&2; exit 1; }

if ! "$sl" status >/dev/null 2>&1; then
	t0=$SECONDS
	if ! "$sl" up >"$tmp/up.log" 2>&1; then
		cat "$tmp/up.log"
		echo "skipped: the one-host Slurm (scripts/slurm-local.sh up) did not come up"
		exit 77
	fi
	brought=1
	echo "test_slurm_job: the one-host Slurm came up in $((SECONDS - t0)) s"
fi
eval "$("$sl" env)"
cd "$tmp" || exit 1

# run NAME SECONDS srun-or-sbatch ARGS...: a job of this test, bounded; output in NAME.out
run() {
	local out=$1 secs=$2 cmd=$3
	shift 3
	timeout -k 5 "$secs" "$cmd" --job-name="$NAME" --time=3 "$@" >"$tmp/$out.out" 2>&1
}

# ---- 1. push/pull, one srun line, psb-ksrv as scheduler and server
run ksrv 150 srun -n 4 "$ps" --ksrv --servers 1 --duration 140 -- "$kv_sums" ||
	{ rc=$?; cat "$tmp/ksrv.out" >&2; fail "srun -n 4 psb-slurm --ksrv: exit $rc"; }
[ "$(grep -c 'error 0, 0$' "$tmp/ksrv.out")" = 2 ] ||
	{ cat "$tmp/ksrv.out" >&2; fail "--ksrv: not both workers reported exact sums"; }
grep -q "psb-slurm: job [0-9]* step 0, 4 task(s) on 1 node(s): scheduler .* 1 server(s), 2 worker(s); scheduler and servers psb-ksrv" "$tmp/ksrv.out" ||
	{ cat "$tmp/ksrv.out" >&2; fail "--ksrv: no job line from task 0"; }
echo "test_slurm_job: srun -n 4 psb-slurm --ksrv: 2 workers, exact sums"

# ---- 2. the program in every role
run every 150 srun -n 5 "$ps" --servers 2 -- "$kv_sums" ||
	{ rc=$?; cat "$tmp/every.out" >&2; fail "srun -n 5 psb-slurm --servers 2: exit $rc"; }
[ "$(grep -c 'error 0, 0$' "$tmp/every.out")" = 2 ] ||
	{ cat "$tmp/every.out" >&2; fail "the program in every role: not both workers' sums"; }
grep -q "of 2, 2 server(s): error 0, 0$" "$tmp/every.out" ||
	{ cat "$tmp/every.out" >&2; fail "the program in every role: not 2 servers"; }
echo "test_slurm_job: srun -n 5 psb-slurm --servers 2 (kv_sums in every role): exact sums"

# ---- 3. the batch script of the docs, synchronous rounds
PSB_SLURM=$ps PSB_SYNC=1 run sbatch 200 sbatch --wait -n 4 --chdir="$tmp" \
	--output="$tmp/pushpull-%j.out" "$sbatch_script" "$bench_modes" 65536 10 1 ||
	{ rc=$?; cat "$tmp/sbatch.out" "$tmp"/pushpull-*.out >&2; fail "sbatch --wait pushpull.sbatch: exit $rc"; }
bjob=$(sed -n 's/^Submitted batch job \([0-9]*\)$/\1/p' "$tmp/sbatch.out")
[ -n "$bjob" ] && [ -f "$tmp/pushpull-$bjob.out" ] ||
	{ cat "$tmp/sbatch.out" >&2; fail "sbatch: no job id or no output file"; }
[ "$(grep -c "mode 1: 10 x 8 keys of 65536 B" "$tmp/pushpull-$bjob.out")" = 2 ] ||
	{ cat "$tmp/pushpull-$bjob.out" >&2; fail "pushpull.sbatch: not both workers' lines"; }
grep -q "2 worker(s), synchronous; scheduler and servers psb-ksrv" "$tmp/pushpull-$bjob.out" ||
	{ cat "$tmp/pushpull-$bjob.out" >&2; fail "pushpull.sbatch: not synchronous psb-ksrv"; }
echo "test_slurm_job: sbatch --wait scripts/slurm/pushpull.sbatch (job $bjob): synchronous push-pulls checked"

# ---- 4. staleness, pull mode: the trainer and two workers
run stale 150 srun -n 3 "$ps" --job staleness --trainer-arg --out --trainer-arg "$tmp/res" \
	--worker-arg --verify -- "$stale" --mode pull --push_frequency 0.1 --data_size 1 \
	--pull_frequency 0.02 --post_frequency 0.5 --max_version 10 --max_time 20 --rate 1 \
	--trial_name slurm ||
	{ rc=$?; cat "$tmp/stale.out" >&2; fail "srun -n 3 psb-slurm --job staleness: exit $rc"; }
python3 - "$tmp/res/slurm/summary.json" <<'PY' || { cat "$tmp/stale.out" >&2; fail "staleness: summary.json"; }
import json, sys
s = json.load(open(sys.argv[1]))
assert s["ok"] and s["experiment"]["mode"] == "pull" and s["final_version"] == 10, s
assert s["experiment"]["workers"] == 2 and s["experiment"]["workers_per_node"] == 2, s
assert len(s["workers"]) == 2 and all(w["holds_final"] for w in s["workers"]), s
print(f"test_slurm_job: srun -n 3 psb-slurm --job staleness: 2 workers hold version 10; "
      f"window staleness {s['window_staleness']:.3f}")
PY

# ---- 5. a worker that fails ends the step, and says so
t0=$SECONDS
run bad 60 srun -n 4 --kill-on-bad-exit=1 "$ps" --ksrv -- false
rc=$?
[ $rc != 0 ] && [ $rc != 124 ] && [ $((SECONDS - t0)) -lt 40 ] &&
	grep -q "tasks 2-3: Exited with exit code 1" "$tmp/bad.out" ||
	{ cat "$tmp/bad.out" >&2; fail "a failing worker: srun exit $rc after $((SECONDS - t0)) s"; }
echo "test_slurm_job: a failing worker ended its step in $((SECONDS - t0)) s (srun exit $rc)"

# ---- 6. accounting
if scontrol show config | grep -q '^AccountingStorageType *= *accounting_storage/slurmdbd'; then
	for _ in $(seq 40); do
		sacct -n -X -P -S now-3600 --name="$NAME" -o JobID,State >"$tmp/sacct.out" 2>&1
		[ "$(grep -c '|COMPLETED$' "$tmp/sacct.out")" = 4 ] &&
			[ "$(grep -c '|FAILED$' "$tmp/sacct.out")" = 1 ] && break
		sleep 0.5
	done
	[ "$(grep -c '|COMPLETED$' "$tmp/sacct.out")" = 4 ] &&
		[ "$(grep -c '|FAILED$' "$tmp/sacct.out")" = 1 ] ||
		{ cat "$tmp/sacct.out" >&2; fail "sacct: not 4 jobs completed and 1 failed"; }
	echo "test_slurm_job: sacct: 4 jobs completed, 1 failed"
else
	echo "test_slurm_job: this Slurm keeps no accounting: sacct not checked"
fi

if [ $brought = 1 ]; then
	brought=0
	"$sl" down >"$tmp/down.log" 2>&1 || { cat "$tmp/down.log" >&2; fail "slurm-local.sh down"; }
	"$sl" status >/dev/null 2>&1
	rc=$?
	[ $rc = 3 ] || fail "slurm-local.sh status after down: $rc, not 3"
	echo "test_slurm_job: the one-host Slurm is down again"
fi
