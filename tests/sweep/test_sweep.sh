#!/bin/bash
# psb-sweep with the local and dry_run launchers, on psb over memif: a sweep refused by the
# key it gets wrong before anything runs, dry runs that make nothing, the confirmation, a
# 2 x 2 sweep launched two at a time with its results table, CSV, JSON and plot, another
# sweep refused in the same directory, a trial that overruns its timeout failing and saying
# which worker, a running job that delete_incomplete leaves alone, a killed one taken as
# incomplete (its psb processes ended with it), and resume launching it again.
#
# usage: test_sweep.sh PATH/psb-sweep PATH/psb CONFIG_DIR. Needs root (psb); 77 without.
set -uo pipefail
SWEEP=$1 PSB=$2 CONF=$3
[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (psb runs DPDK)"; exit 77; }
DIR=$(mktemp -d /tmp/psb-sweep-test.XXXXXX)
BG=()
cleanup() {
	local p
	for p in "${BG[@]}"; do kill -- -"$p" 2>/dev/null; kill "$p" 2>/dev/null; done
	# anything a job of ours still runs: psb-sweep run_job and psb, by their paths
	pkill -f "$DIR/" 2>/dev/null
	sleep 0.5
	pkill -9 -f "$DIR/" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$DIR"
}
trap cleanup EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
sw() { "$SWEEP" "$@" --psb "$PSB"; }

# sweep NAME BODY: a sweep file of psb's shipped documents with BODY's keys
sweep() {
	cat > "$DIR/$1.json" <<EOF
{"name": "$1", "server": "$CONF/pushpull-server.json", "worker": "$CONF/pushpull-worker.json",
 $2}
EOF
}
sweep small '"set": {"pushpull.repeat": 200}, "grid": {"pushpull.len": ["4KiB", "8KiB"],
 "workers": [1, 2]}, "timeout": "60s"'

# 1. a key the schema does not know, a value out of range: refused, nothing made
sweep badkey '"grid": {"pushpull.lenn": [4096]}'
sw launch --sweep "$DIR/badkey.json" --output_dir "$DIR/bad" --skip_confirmation \
	> "$DIR/out" 2>&1 && fail "a sweep with an unknown key launched"
grep -q 'pushpull.lenn: unknown key' "$DIR/out" || fail "unknown key not named: $(cat "$DIR/out")"
sweep badval '"grid": {"pushpull.len": ["4KiB", "3GB"]}'
sw launch --sweep "$DIR/badval.json" --output_dir "$DIR/bad" --skip_confirmation \
	> "$DIR/out" 2>&1 && fail "a sweep with a value out of range launched"
grep -q 'pushpull.len=.*"3GB".*pushpull.len: expected a size' "$DIR/out" ||
	fail "bad value not named: $(cat "$DIR/out")"
[ ! -e "$DIR/bad" ] || fail "a refused sweep made its directory"

# 2. dry run: the commands, nothing made
sw launch --sweep "$DIR/small.json" --output_dir "$DIR/out1" --command_launcher dry_run \
	> "$DIR/dry" 2>&1 || fail "dry run: $(cat "$DIR/dry")"
[ "$(grep -c ' run_job ' "$DIR/dry")" = 4 ] || fail "dry run did not print 4 jobs: $(cat "$DIR/dry")"
[ "$(grep -c -- '--config .*/worker-1.json' "$DIR/dry")" = 2 ] || fail "dry run: 2-worker trials"
[ ! -e "$DIR/out1" ] || fail "a dry run made the output directory"

# 3. the question: no means nothing launched
echo n | sw launch --sweep "$DIR/small.json" --output_dir "$DIR/out1" > "$DIR/no" 2>&1 &&
	fail "launch answered no exited 0"
grep -q 'Launch 4 job(s) through local? (y/n)' "$DIR/no" || fail "no question: $(cat "$DIR/no")"
[ -z "$(ls "$DIR/out1" | grep -v sweep.json)" ] || fail "jobs made though the answer was no"

# 4. the sweep, two jobs at a time
sw launch --sweep "$DIR/small.json" --output_dir "$DIR/out1" --skip_confirmation --parallel 2 \
	> "$DIR/launch" 2>&1 || fail "launch: $(tail -20 "$DIR/launch")"
[ "$(grep -c '\] [0-9a-f]\{12\} done in' "$DIR/launch")" = 4 ] || fail "launch: $(cat "$DIR/launch")"
sw list --sweep "$DIR/small.json" --output_dir "$DIR/out1" > "$DIR/list" 2>&1 || fail "list"
grep -q '4 jobs (4 settings x 1 trials): 4 done' "$DIR/list" || fail "list: $(cat "$DIR/list")"
for d in "$DIR"/out1/*/; do
	for f in done results.json command settings.json status.json launcher.json \
		logs/server.log logs/worker-0.log server.json worker-0.json psb/server/result.json \
		psb/worker-0/result.json; do
		[ -e "$d$f" ] || fail "job $d has no $f"
	done
done
sw results --sweep "$DIR/small.json" --output_dir "$DIR/out1" > "$DIR/res" 2>&1 ||
	fail "results: $(cat "$DIR/res")"
python3 - "$DIR/out1" <<'PY' || fail "results files"
import csv, json, sys, xml.dom.minidom
d = sys.argv[1]
md = open(f"{d}/results.md").read()
assert sum(l.startswith("| ") for l in md.splitlines()) == 5, md    # the head, 4 settings
assert "Best setting by goodput_gbps (higher is better)" in md, md
rows = list(csv.DictReader(open(f"{d}/results.csv")))
assert len(rows) == 4 and {r["pushpull.len"] for r in rows} == {"4KiB", "8KiB"}, rows
assert all(float(r["goodput_gbps_mean"]) > 0 and r["trials_done"] == "1" for r in rows), rows
j = json.load(open(f"{d}/results.json"))
assert j["jobs"]["done"] == 4 and len(j["settings"]) == 4 and j["best"], j
best = max(j["settings"], key=lambda s: s["figures"]["goodput_gbps"]["mean"])
assert best["setting"] == j["best"]["setting"], (best, j["best"])
# a trial's figures: its workers' goodput summed
for s in j["settings"]:
    assert s["settings"]["workers"] in (1, 2), s
svg = xml.dom.minidom.parse(f"{d}/results.svg")
assert len(svg.getElementsByTagName("rect")) == 4
# each job's documents as psb ran them: two workers, two sockets, ranks
for sub in __import__("os").listdir(d):
    if len(sub) != 32:
        continue
    st = json.load(open(f"{d}/{sub}/settings.json"))
    srv = json.load(open(f"{d}/{sub}/server.json"))
    assert len(srv["node"]["ports"]) == st["workers"], (srv, st)
    res = json.load(open(f"{d}/{sub}/results.json"))
    assert len(res["workers"]) == st["workers"], res
    tot = sum(w["goodput_gbps"] for w in res["workers"])
    assert abs(res["figures"]["goodput_gbps"] - tot) < 1e-9 * max(tot, 1), res
    assert all(w["verify_errors"] == 0 for w in res["workers"]), res
PY
# nothing left behind by the trials: no psb of ours, no socket
pgrep -f "$DIR/out1/" >/dev/null && fail "a psb of a finished job still runs"
# launched again: nothing to launch
sw launch --sweep "$DIR/small.json" --output_dir "$DIR/out1" --skip_confirmation \
	> "$DIR/again" 2>&1 || fail "launch again"
grep -q 'nothing to launch' "$DIR/again" || fail "relaunched done jobs: $(cat "$DIR/again")"

# 5. the same directory, another sweep: refused by the key that differs
sweep other '"set": {"pushpull.repeat": 200}, "grid": {"pushpull.len": ["4KiB", "16KiB"],
 "workers": [1, 2]}, "timeout": "60s"'
sed -i 's/"name": "other"/"name": "small"/' "$DIR/other.json"
sw list --sweep "$DIR/other.json" --output_dir "$DIR/out1" > "$DIR/out" 2>&1 &&
	fail "another sweep was taken in the same directory"
grep -q 'made by a sweep with other settings: they differ at grid.pushpull.len' "$DIR/out" ||
	fail "other sweep: $(cat "$DIR/out")"
sw list --sweep "$DIR/small.json" --output_dir "$DIR/out1" --n_trials 2 > "$DIR/out" 2>&1 &&
	fail "other --n_trials taken"
grep -q 'differ at n_trials (a flag)' "$DIR/out" || fail "n_trials: $(cat "$DIR/out")"

# 6. a trial past its timeout fails, naming the worker; its processes are ended
sweep slow '"set": {"pushpull.repeat": 100000000}, "timeout": "2s"'
sw launch --sweep "$DIR/slow.json" --output_dir "$DIR/out2" --skip_confirmation \
	> "$DIR/slow" 2>&1 && fail "an overrun trial succeeded"
grep -q 'FAILED after .* worker(s) 0 still running after 2 s' "$DIR/slow" ||
	fail "timeout: $(cat "$DIR/slow")"
sw list --sweep "$DIR/slow.json" --output_dir "$DIR/out2" | grep -q '1 failed' ||
	fail "state after the timeout"
pgrep -f "$DIR/out2/" >/dev/null && fail "psb of a timed-out job still runs"

# 7. a running job is running (never crashed); delete_incomplete leaves it; killed, it is
# incomplete; resume launches it again
sweep long '"set": {"pushpull.repeat": 100000000}, "timeout": "60s"'
sw launch --sweep "$DIR/long.json" --output_dir "$DIR/out3" --skip_confirmation \
	> "$DIR/long" 2>&1 &
BG+=($!)
for _ in $(seq 100); do
	sw list --sweep "$DIR/long.json" --output_dir "$DIR/out3" 2>/dev/null | grep -q '1 running' &&
		break
	sleep 0.1
done
sw list --sweep "$DIR/long.json" --output_dir "$DIR/out3" | grep -q '1 running' ||
	fail "the job is not running"
sw delete_incomplete --sweep "$DIR/long.json" --output_dir "$DIR/out3" --skip_confirmation \
	> "$DIR/del" 2>&1 || fail "delete_incomplete"
grep -q 'no failed or incomplete job' "$DIR/del" || fail "delete_incomplete: $(cat "$DIR/del")"
[ "$(ls -d "$DIR"/out3/*/ | wc -l)" = 1 ] || fail "delete_incomplete removed a running job"
# the launcher and its runner die at once, as on a crash
pkill -9 -f "psb-sweep launch --sweep $DIR/long.json"
pkill -9 -f "run_job $DIR/out3/"
for _ in $(seq 100); do pgrep -f "$DIR/out3/" >/dev/null || break; sleep 0.1; done
pgrep -f "$DIR/out3/" >/dev/null && fail "the psb processes of a killed job still run"
sw list --sweep "$DIR/long.json" --output_dir "$DIR/out3" | grep -q '1 incomplete' ||
	fail "a killed job is not incomplete"
# resume launches failed (out2) and incomplete jobs again
sw resume --sweep "$DIR/slow.json" --output_dir "$DIR/out2" --skip_confirmation \
	> "$DIR/resume" 2>&1 && fail "the resumed overrun succeeded"
grep -q 'Launch\|\[1/1\]' "$DIR/resume" || fail "resume launched nothing: $(cat "$DIR/resume")"
grep -q '\[1/1\] .* FAILED' "$DIR/resume" || fail "resume: $(cat "$DIR/resume")"
sw delete_incomplete --sweep "$DIR/long.json" --output_dir "$DIR/out3" --skip_confirmation \
	> "$DIR/del" 2>&1 || fail "delete_incomplete"
grep -q '1 job directory deleted' "$DIR/del" || fail "delete_incomplete: $(cat "$DIR/del")"
sw list --sweep "$DIR/long.json" --output_dir "$DIR/out3" | grep -q '1 not launched' ||
	fail "the deleted job is not 'not launched'"
echo "ok: psb-sweep local and dry_run"
