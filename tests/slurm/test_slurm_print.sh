#!/bin/bash
# psb-slurm without Slurm: the variables a task of a step would have, set by hand, and
#  - --print's export lines and command for each role of a pushpull job (the program in
#    every role, and --ksrv's psb-ksrv scheduler and servers) and of a staleness job;
#  - the same variables set in the program it execs (env);
#  - what it refuses, with exit status 2 and the variable or count named: no step, a bad
#    value, too few tasks, options of the other kind of job; 127 for a program not there.
#
# usage: test_slurm_print.sh PSB_SLURM
set -u
ps=${1:?usage: test_slurm_print.sh PSB_SLURM}
tmp=$(mktemp -d /tmp/psb-slurm-print.XXXXXX) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail() { echo "test_slurm_print: FAIL: $*" >&2; exit 1; }

# step PROCID NTASKS [NODELIST [TPN [NODEID [NODENAME]]]] -- ARGS: psb-slurm ARGS as a task
# of a step would run it (node list localhost, NTASKS tasks on it, by default)
step() {
	local a=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		a+=("$1")
		shift
	done
	[ $# -gt 0 ] && shift
	env -i PATH="$PATH" SLURM_PROCID="${a[0]}" SLURM_NTASKS="${a[1]}" SLURM_JOB_ID=77 \
		SLURM_STEP_ID=1 SLURM_STEP_NODELIST="${a[2]:-localhost}" \
		SLURM_STEP_TASKS_PER_NODE="${a[3]:-${a[1]}}" SLURM_NODEID="${a[4]:-0}" \
		SLURMD_NODENAME="${a[5]:-localhost}" "$ps" "$@"
}
# has FILE LINE...: every LINE is a line of FILE
has() {
	local f=$1 l
	shift
	for l in "$@"; do
		grep -qxF -- "$l" "$f" || { cat "$f" >&2; fail "no line '$l'"; }
	done
}

# pushpull, 5 tasks, 2 servers: the program in every role; port 10000 + (77 * 16 + 1)
for t in 0 1 2 3 4; do
	step $t 5 -- --servers 2 --print -- prog --flag 'a b' >"$tmp/pp$t" ||
		fail "pushpull task $t: exit $?"
	has "$tmp/pp$t" "export DMLC_PS_ROOT_URI=127.0.0.1" "export DMLC_PS_ROOT_PORT=11233" \
		"export DMLC_NUM_SERVER=2" "export DMLC_NUM_WORKER=2" \
		"export DMLC_NODE_HOST=127.0.0.1" "export PSB_SYNC=0" "# exec: prog --flag 'a b'"
done
has "$tmp/pp0" "export DMLC_ROLE=scheduler"
has "$tmp/pp1" "export DMLC_ROLE=server" "# job 77 step 1, task 1 of 5 on localhost (node 0 of 1): server 0 of 2"
has "$tmp/pp2" "export DMLC_ROLE=server"
has "$tmp/pp3" "export DMLC_ROLE=worker" "export DMLC_RANK=0"
has "$tmp/pp4" "export DMLC_ROLE=worker" "export DMLC_RANK=1"
grep -q DMLC_RANK "$tmp/pp1" && fail "a server has DMLC_RANK"
# eval'd, as a batch script would
( eval "$(cat "$tmp/pp4")"; [ "$DMLC_ROLE/$DMLC_RANK/$DMLC_PS_ROOT_PORT" = worker/1/11233 ] ) ||
	fail "the export lines do not eval"

# --ksrv: psb-ksrv as the scheduler and the servers, with the job's counts
step 0 4 -- --ksrv --sync --port 20001 --duration 90 --print -- prog >"$tmp/k0" || fail "ksrv 0"
grep -qE "^# exec: [^ ]*psb-ksrv --ip 127.0.0.1 --port 0 --scheduler-port 20001 --scheduler-only --num-servers 1 --num-workers 2 --duration 90$" "$tmp/k0" ||
	{ cat "$tmp/k0" >&2; fail "the ksrv scheduler's command"; }
step 1 4 -- --ksrv --sync --port 20001 --print -- prog >"$tmp/k1" || fail "ksrv 1"
grep -qE "^# exec: [^ ]*psb-ksrv --ip 127.0.0.1 --port 0 --scheduler 127.0.0.1:20001 --sync$" "$tmp/k1" ||
	{ cat "$tmp/k1" >&2; fail "the ksrv server's command"; }
step 2 4 -- --ksrv --sync --port 20001 --print -- prog a >"$tmp/k2" || fail "ksrv 2"
has "$tmp/k2" "export PSB_SYNC=1" "# exec: prog a"
# the address of --root-uri, the port of --port; an option of PROGRAM's stays PROGRAM's
step 3 4 -- --root-uri 127.0.0.9 --port 30000 --print prog --servers 7 >"$tmp/r" || fail "root-uri"
has "$tmp/r" "export DMLC_PS_ROOT_URI=127.0.0.9" "export DMLC_PS_ROOT_PORT=30000" \
	"export DMLC_NUM_SERVER=1" "# exec: prog --servers 7"
# --iface: that interface's address
step 3 4 -- --iface lo --print -- prog >"$tmp/if" || fail "--iface lo"
has "$tmp/if" "export DMLC_INTERFACE=lo" "export DMLC_NODE_HOST=127.0.0.1"

# staleness over two nodes, 3 tasks each: the trainer on the first, workers 0-4, 3 a node
for t in 0 1 5; do
	step $t 6 'localhost,n2' '3(x2)' $((t / 3)) -- --job staleness --trainer-arg --out \
		--trainer-arg /r --worker-arg --verify --root-uri 127.0.0.2 --iface lo --print -- \
		psb-stale --mode pull >"$tmp/st$t" || fail "staleness task $t: exit $?"
done
has "$tmp/st0" "export DMLC_ROLE=trainer" "export DMLC_NUM_WORKER=5" \
	"# exec: psb-stale trainer --mode pull --out /r --local 127.0.0.2:11233 --workers 5 --workers-per-node 3"
has "$tmp/st1" "export DMLC_ROLE=worker" \
	"# exec: psb-stale worker --mode pull --verify --id 0 --trainer 127.0.0.2:11233 --local 127.0.0.1 --workers 5 --workers-per-node 3"
has "$tmp/st5" "# exec: psb-stale worker --mode pull --verify --id 4 --trainer 127.0.0.2:11233 --local 127.0.0.1 --workers 5 --workers-per-node 3"

# run, not printed: the variables are the program's
step 3 4 -- -q -- env >"$tmp/env" || fail "exec env: exit $?"
has "$tmp/env" "DMLC_ROLE=worker" "DMLC_RANK=1" "DMLC_PS_ROOT_PORT=11233" "DMLC_NUM_WORKER=2"
step 0 4 -- -- env >/dev/null 2>"$tmp/line" || fail "exec env as task 0"
grep -q "^psb-slurm: job 77 step 1, 4 task(s) on 1 node(s): scheduler 127.0.0.1:11233 (localhost), 1 server(s), 2 worker(s)$" "$tmp/line" ||
	{ cat "$tmp/line" >&2; fail "task 0's line"; }

# refusals: exit 2, one line naming what is wrong
refused() {	# refused 'MESSAGE' COMMAND...
	local want=$1 rc
	shift
	"$@" >"$tmp/out" 2>"$tmp/err"
	rc=$?
	[ $rc = 2 ] && grep -qF -- "$want" "$tmp/err" && [ "$(wc -l <"$tmp/err")" = 1 ] ||
		{ cat "$tmp/err" >&2; fail "exit $rc, wanted 2 and '$want'"; }
}
refused "SLURM_PROCID is not set: not in a Slurm step?" env -i "$ps" -- prog
refused "SLURM_PROCID 'x': not a number" step x 4 -- --print -- prog
refused "SLURM_PROCID 4: not below SLURM_NTASKS 4" step 4 4 -- --print -- prog
refused "SLURM_STEP_NODELIST 'n[1-': unclosed '['" step 0 4 'n[1-' -- --print -- prog
refused "SLURM_STEP_NODELIST 'n[0-70000]': more than 65536 hosts" step 0 4 'n[0-70000]' -- --print -- prog
refused "SLURM_STEP_TASKS_PER_NODE '2(x': a repeat count" step 0 4 localhost '2(x' -- --print -- prog
refused "SLURM_STEP_TASKS_PER_NODE '3' is 3 task(s), SLURM_NTASKS 4" step 0 4 localhost 3 -- --print -- prog
refused "2 task(s): the scheduler and 1 server(s) leave no worker" step 0 2 -- --print -- prog
refused "staleness: 1 task" step 0 1 -- --job staleness --print -- prog
refused "--ksrv is pushpull's" "$ps" --job staleness --ksrv -- prog
refused "--worker-arg is staleness'" "$ps" --worker-arg x -- prog
refused "--duration bounds psb-ksrv" "$ps" --duration 5 -- prog
refused "give the PROGRAM to run" "$ps" --servers 2
refused "unrecognized option '--nope'" "$ps" --nope -- prog
refused "no such interface" step 0 4 -- --iface nosuchif0 --print -- prog
refused "a loopback address, and the step spans 2 nodes" step 0 4 'localhost,n2' '2(x2)' -- --print -- prog
# 90000 hosts in 70 kB (a longer value than 128 kiB the kernel itself refuses to exec)
big=$(printf 'a%d[1-9],' $(seq 10000))
refused "more than 65536 hosts" step 0 4 "${big%,}" -- --print -- prog
# a program that is not there: 127, named
step 2 4 -- -- /nonexistent/prog >"$tmp/out" 2>&1
rc=$?
[ $rc = 127 ] && grep -q "cannot run /nonexistent/prog (task 2, worker)" "$tmp/out" ||
	{ cat "$tmp/out" >&2; fail "a missing program: exit $rc"; }
"$ps" --version | grep -q "^psb-slurm [0-9]" || fail "--version"
"$ps" --help | grep -q "^Usage: srun" || fail "--help"
echo "test_slurm_print: psb-slurm's roles, variables, commands and refusals ok"
