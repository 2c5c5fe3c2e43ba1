#!/bin/bash
# psb-sweep through each of its launchers: config/sweep-example.json (value size x worker
# processes, 2 x 2 settings, 3 trials each: 12 jobs, every trial a fresh psb server and its
# workers over memif) launched locally (one job at a time), on a one-host Slurm
# (scripts/slurm-local.sh; array tasks one at a time, --max_concurrent 1) and as a dry run,
# in rotating order, --reps times. Prints each launcher's results table (goodput per setting,
# mean ± sd over every trial of every rep) and the launcher's own overhead per job: the
# sweep's wall time less the time its jobs ran, over the jobs (local: until psb-sweep
# returns; slurm: from sbatch until the last job ended; dry_run: the whole dry run, which
# runs nothing), median and range over the reps.
#
#   scripts/bench/sweep.sh [--reps N] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

REPS=3
BENCH_OPTS=([--reps]=REPS [--out]=OUT)
bench_options sweep.sh "$@"
SWEEP=$BUILD/app/psb-sweep/psb-sweep
bench_built "$PSB" "$SWEEP"
bench_out sweep
bench_scratch sweep
SLURM_STARTED=0
bench_cleanup() {
	[ $SLURM_STARTED = 0 ] || scripts/slurm-local.sh down > /dev/null 2>&1 || true
}
if ! scripts/slurm-local.sh status > /dev/null 2>&1; then
	scripts/slurm-local.sh up --no-accounting > "$TMP/slurm-up.log" 2>&1 ||
		{ cat "$TMP/slurm-up.log" >&2; echo "$NAME: Slurm did not come up" >&2; exit 1; }
	SLURM_STARTED=1
fi
eval "$(scripts/slurm-local.sh env)"
{
	bench_about "$BUILD" "psb's own lcores as the documents say (server 0, workers 1); psb-sweep and Slurm's daemons unpinned" \
		"$COMMAND"
	echo "workload config/sweep-example.json: 2 x 2 settings x 3 trials (12 jobs), through" \
		"local (one at a time), slurm (one-host Slurm, --max_concurrent 1) and dry_run," \
		"rotating order, $REPS reps"
	echo "slurm $(sinfo --version 2>/dev/null || echo '?')"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"
bench_plan reps="$REPS"

# run LAUNCHER REP: one sweep into $TMP/LAUNCHER-REP; its jobs' records into raw/
run() {
	local l=$1 r=$2 d=$TMP/$1-$2 t0 t1
	local args=(launch --sweep config/sweep-example.json --output_dir "$d" --skip_confirmation
		--command_launcher "$l" --psb "$PSB")
	[ "$l" != slurm ] || args+=(--max_concurrent 1 --wait)
	t0=$(date +%s.%N)
	if ! timeout 2400 "$SWEEP" "${args[@]}" > "$TMP/run.log" 2>&1; then
		echo "$NAME: the $l sweep of rep $r failed:" >&2
		tail -30 "$TMP/run.log" >&2
		exit 1
	fi
	t1=$(date +%s.%N)
	if [ "$l" != dry_run ]; then
		"$SWEEP" results --sweep config/sweep-example.json --output_dir "$d" \
			> "$TMP/res.log" 2>&1 || { cat "$TMP/res.log" >&2; exit 1; }
	fi
	python3 - "$d" "$t0" "$t1" "$l" "$TMP/run.log" > "$OUT/raw/$l-$r.json" <<'PY'
import glob, json, os, re, sys
d, t0, t1, launcher = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), sys.argv[4]
log = open(sys.argv[5]).read()
jobs = []
for j in sorted(glob.glob(os.path.join(d, "[0-9a-f]" * 32))):
    def load(leaf):
        try:
            return json.load(open(os.path.join(j, leaf)))
        except OSError:
            return {}
    st, la, res, se = load("status.json"), load("launcher.json"), load("results.json"), \
        load("settings.json")
    jobs.append({"id": os.path.basename(j), "settings": se.get("settings"),
                 "trial": se.get("trial"), "done": os.path.exists(os.path.join(j, "done")),
                 "launched_at": la.get("launched_at"), "started_at": st.get("started_at"),
                 "ended_at": st.get("ended_at"), "figures": res.get("figures")})
# a dry run makes no job: how many it printed
m = re.search(r"dry run: (\d+) job\(s\) not launched", log)
print(json.dumps({"launcher": launcher, "t_start": t0, "t_end": t1, "jobs": jobs,
                  "dry_run_jobs": int(m.group(1)) if m else None}, indent=1))
PY
	[ "$l" = dry_run ] || cp "$d/results.md" "$OUT/raw/$l-$r-results.md"
	rm -rf "$d"
}

launchers=(local slurm dry_run)
for r in $(seq "$REPS"); do
	shift_by=$(((r - 1) % ${#launchers[@]}))
	for l in "${launchers[@]:$shift_by}" "${launchers[@]:0:$shift_by}"; do
		run "$l" "$r"
		bench_progress $((REPS * ${#launchers[@]})) sweeps
	done
done
echo >&2
bench_finish sweep
