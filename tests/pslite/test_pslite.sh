#!/bin/bash
# ps-lite programs over psb, as ps-lite jobs on loopback:
#  - scripts/local.sh runs kv_sums (3 workers, 2 servers: every sum checked by each worker),
#    the benchmark in its four modes (and with --sync), two KVWorkers in one process
#    (multi_workers);
#  - the program in every role, as ps-lite's own local.sh starts it (its scheduler and
#    servers then run psb-ksrv);
#  - servers that are the program (local.sh --handler): own_handler's servers hold pushes
#    until every worker pushed and answer with the mean, which psb's summing servers
#    cannot (the same job without --handler must fail); kv_sums with ps-lite's default
#    handle run by the program's servers;
#  - failing as a user would see it: a worker that fails makes local.sh fail with its
#    status; one that hangs is ended after --timeout and named; a pull of a key nobody
#    pushed, or a Val psb cannot carry, stops the program with a message saying so.
#
# usage: test_pslite.sh LOCAL_SH PSB_KSRV KV_SUMS BENCH_MODES MULTI_WORKERS BENCH_PUSHPULL
#        OWN_HANDLER
set -u
local_sh=${1:?usage: test_pslite.sh LOCAL_SH PSB_KSRV KV_SUMS BENCH_MODES MULTI_WORKERS}
ksrv=${2:?}
kv_sums=${3:?}
bench_modes=${4:?}
multi=${5:?}
pushpull=${6:?}
own=${7:?}
export PSB_KSRV=$ksrv
tmp=$(mktemp -d /tmp/psb-pslite-test.XXXXXX) || exit 1
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "test_pslite: FAIL: $*" >&2; exit 1; }
run() {	# run NAME local.sh-args...: 0 or the job's status, its output in $tmp/NAME.out
	local name=$1
	shift
	timeout -k 5 120 "$local_sh" --timeout 60 "$@" >"$tmp/$name.out" 2>&1
}

run sums 2 3 "$kv_sums" || { cat "$tmp/sums.out" >&2; fail "kv_sums, 2 servers, 3 workers"; }
[ "$(grep -c 'error 0, 0$' "$tmp/sums.out")" = 3 ] ||
	{ cat "$tmp/sums.out" >&2; fail "kv_sums: not every worker reported exact sums"; }
for m in 0 1 2 3; do
	run "mode$m" 2 2 "$bench_modes" 65536 10 "$m" ||
		{ cat "$tmp/mode$m.out" >&2; fail "the benchmark in mode $m"; }
	[ "$(grep -c "mode $m: 10 x 8 keys of 65536 B" "$tmp/mode$m.out")" = 2 ] ||
		{ cat "$tmp/mode$m.out" >&2; fail "the benchmark in mode $m: not both workers' lines"; }
done
for m in 1 2 3; do
	run "pp$m" 1 1 "$pushpull" 65536 "$m" 40 0.5 ||
		{ cat "$tmp/pp$m.out" >&2; fail "bench_pushpull in mode $m"; }
	grep -q "mode $m: [0-9]* x 40 keys of 65536 B" "$tmp/pp$m.out" ||
		{ cat "$tmp/pp$m.out" >&2; fail "bench_pushpull in mode $m: no result line"; }
done
# synchronous rounds: the workers run the servers' rounds (every key pushed by both)
run sync --sync 2 2 "$bench_modes" 65536 10 2 || { cat "$tmp/sync.out" >&2; fail "the benchmark with --sync"; }
[ "$(grep -c "mode 2: 10 x 8 keys of 65536 B" "$tmp/sync.out")" = 2 ] ||
	{ cat "$tmp/sync.out" >&2; fail "the benchmark with --sync: not both workers' lines"; }
run multi 1 2 "$multi" || { cat "$tmp/multi.out" >&2; fail "two KVWorkers a process"; }
[ "$(grep -c ': 0 wrong sums$' "$tmp/multi.out")" = 4 ] ||
	{ cat "$tmp/multi.out" >&2; fail "multi_workers: not four customers with exact sums"; }
echo "test_pslite: local.sh jobs ok"

# the program's own servers: its handler, not psb's sum
run own --handler 2 3 "$own" || { cat "$tmp/own.out" >&2; fail "own_handler with --handler"; }
[ "$(grep -c ': 5 rounds, 0 wrong means$' "$tmp/own.out")" = 3 ] ||
	{ cat "$tmp/own.out" >&2; fail "own_handler: not every worker saw exact means"; }
run own_late --handler 1 2 "$own" late || { cat "$tmp/own_late.out" >&2; fail "own_handler, its handle set late"; }
[ "$(grep -c ': 5 rounds, 0 wrong means$' "$tmp/own_late.out")" = 2 ] ||
	{ cat "$tmp/own_late.out" >&2; fail "own_handler, its handle set late: means"; }
run own_psb 1 2 "$own" && { cat "$tmp/own_psb.out" >&2; fail "own_handler on psb's summing servers passed: the test cannot tell"; }
grep -q 'wrong means$' "$tmp/own_psb.out" || { cat "$tmp/own_psb.out" >&2; fail "own_handler on psb's servers: no result line"; }
run hsums --handler 2 3 "$kv_sums" || { cat "$tmp/hsums.out" >&2; fail "kv_sums with --handler"; }
[ "$(grep -c 'error 0, 0$' "$tmp/hsums.out")" = 3 ] ||
	{ cat "$tmp/hsums.out" >&2; fail "kv_sums with --handler: sums"; }
"$local_sh" --handler --sync 1 1 "$own" >"$tmp/bad.out" 2>&1 && fail "--handler --sync was taken"
grep -q "rounds of a program's own servers" "$tmp/bad.out" || { cat "$tmp/bad.out" >&2; fail "--handler --sync: message"; }
echo "test_pslite: the program's own servers ok"

# every role the program's, as ps-lite's local.sh starts it
port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=$port DMLC_NUM_SERVER=2 DMLC_NUM_WORKER=2
DMLC_ROLE=scheduler timeout 60 "$kv_sums" >"$tmp/r-sched.out" 2>&1 &
pids+=($!)
for s in 0 1; do
	DMLC_ROLE=server timeout 60 "$kv_sums" >"$tmp/r-server$s.out" 2>&1 &
	pids+=($!)
done
for w in 0 1; do
	DMLC_ROLE=worker timeout 60 "$kv_sums" >"$tmp/r-worker$w.out" 2>&1 &
	pids+=($!)
done
for ((i = 0; i < ${#pids[@]}; i++)); do
	wait "${pids[$i]}" || { cat "$tmp"/r-*.out >&2; fail "the program in every role: process $i failed"; }
done
pids=()
grep -q 'error 0, 0$' "$tmp/r-worker0.out" && grep -q 'error 0, 0$' "$tmp/r-worker1.out" ||
	{ cat "$tmp"/r-*.out >&2; fail "the program in every role: sums"; }
unset DMLC_PS_ROOT_URI DMLC_PS_ROOT_PORT DMLC_NUM_SERVER DMLC_NUM_WORKER
echo "test_pslite: the program as scheduler, servers and workers ok"

# a failing worker's status comes out of local.sh
printf '#!/bin/sh\n[ "$DMLC_ROLE" = worker ] && exit 3\n' >"$tmp/fails.sh"
chmod +x "$tmp/fails.sh"
run fails 1 2 "$tmp/fails.sh"
rc=$?
[ $rc = 3 ] || { cat "$tmp/fails.out" >&2; fail "a failing worker: local.sh exited $rc, not 3"; }
# a worker that never ends: ended after the timeout, named
printf '#!/bin/sh\nexec sleep 100\n' >"$tmp/hangs.sh"
chmod +x "$tmp/hangs.sh"
t0=$SECONDS
timeout -k 5 60 "$local_sh" --timeout 2 1 1 "$tmp/hangs.sh" >"$tmp/hangs.out" 2>&1
rc=$?
[ $rc = 124 ] && [ $((SECONDS - t0)) -lt 15 ] && grep -q "still running after 2s" "$tmp/hangs.out" ||
	{ cat "$tmp/hangs.out" >&2; fail "a worker that hangs: status $rc after $((SECONDS - t0)) s"; }
# bad invocations say what is wrong
"$local_sh" 0 1 "$kv_sums" >"$tmp/bad.out" 2>&1 && fail "local.sh 0 servers succeeded"
grep -q "NUM_SERVERS '0'" "$tmp/bad.out" || { cat "$tmp/bad.out" >&2; fail "local.sh 0 servers: message"; }
"$local_sh" 1 1 /nonexistent >"$tmp/bad.out" 2>&1 && fail "a missing program succeeded"
grep -q "not executable" "$tmp/bad.out" || { cat "$tmp/bad.out" >&2; fail "a missing program: message"; }
# a worker without a scheduler to join: named when its wait (PSB_CONNECT_TIMEOUT_MS) ends
PSB_CONNECT_TIMEOUT_MS=500 DMLC_ROLE=worker DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=$port \
	timeout 60 "$kv_sums" >"$tmp/nosched.out" 2>&1 && fail "a worker without a scheduler succeeded"
grep -q "cannot join the job.*127.0.0.1:$port refused" "$tmp/nosched.out" ||
	{ cat "$tmp/nosched.out" >&2; fail "a worker without a scheduler: message"; }
DMLC_ROLE=worker timeout 60 "$kv_sums" >"$tmp/noenv.out" 2>&1 && fail "a worker without DMLC_* succeeded"
grep -q "DMLC_PS_ROOT_URI" "$tmp/noenv.out" || { cat "$tmp/noenv.out" >&2; fail "no DMLC_*: message"; }
echo "test_pslite: failures said ok"
