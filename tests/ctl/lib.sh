# Shared by the control-socket tests: a temp dir, psb processes on memif, cleanup on any exit.
# Sourced with PSB and PSBCTL set; defines DIR, PFX, fail, start_pair, psbctl helpers.
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
PROTO="$HERE/ctlproto.py"
DIR=$(mktemp -d /tmp/psbt-ctl-XXXXXX)
PFX="psbt-ctl$$-"
PIDS=()		# process groups (timeout puts each psb in its own) and helpers to end
LIMIT=170	# no psb outlives the test, even when the shell running it is killed

cleanup() {
	local rc=$? p
	set +e
	trap - EXIT INT TERM
	# processes started where PIDS cannot see them (a subshell, another namespace)
	[ -f "$DIR/extra.pids" ] && PIDS+=($(cat "$DIR/extra.pids"))
	for p in "${PIDS[@]}"; do kill -TERM -- "-$p" 2>/dev/null || kill -TERM "$p" 2>/dev/null ||
		true; done
	for p in "${PIDS[@]}"; do
		for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL -- "-$p" 2>/dev/null || kill -KILL "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$DIR" /var/run/dpdk/"$PFX"*
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	local f
	echo "FAIL: $*" >&2
	for f in "$DIR"/*.log; do
		[ -f "$f" ] || continue
		echo "--- $f (last lines)" >&2
		tail -n 15 "$f" >&2
	done
	exit 1
}

# JSON on stdin, a Python expression on d printed (dicts as JSON).
jq_() {
	python3 -c '
import json, sys
d = json.load(sys.stdin)
v = eval(sys.argv[1])
print(json.dumps(v) if isinstance(v, (dict, list)) else v)' "$1"
}

ctl() {	# ctl SOCK ARGS...: psbctl on SOCK
	local s=$1
	shift
	"$PSBCTL" --ctl "$s" "$@"
}

# expect_rc WANT OUTFILE ERRFILE CMD...: run CMD, its exit status must be WANT.
expect_rc() {
	local want=$1 out=$2 err=$3 rc=0 cmd
	shift 3
	cmd="$*"
	"$@" >"$out" 2>"$err" || rc=$?
	[ "$rc" -eq "$want" ] || fail "${cmd:0:300} exited $rc, expected $want;" \
		"stdout: $(head -c 600 "$out"); stderr: $(head -c 600 "$err")"
}

ctl_ready() {	# SOCK: until psb answers on it
	for _ in $(seq 150); do
		ctl "$1" --timeout 1 status >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	fail "psb did not answer on $1 within 15 s"
}

# A memif server (s.ctl) and a worker waiting for commands (w.ctl), link up.
start_pair() {
	timeout -k 5 $LIMIT "$PSB" --port "memif:server:$DIR/m.sock" --ip 198.18.0.1 -l 0 \
		--no-huge --file-prefix "${PFX}s" --ctl "$DIR/s.ctl" --output-dir "$DIR" \
		>"$DIR/server.log" 2>&1 &
	PIDS+=($!)
	SERVER_PID=$!
	# Only once the server answers are its ports started: a memif client that connects
	# earlier is sometimes never connected.
	ctl_ready "$DIR/s.ctl"
	timeout -k 5 $LIMIT "$PSB" --role worker --port "memif:client:$DIR/m.sock" \
		--ip 198.18.0.2 --server 198.18.0.1 -l 1 --no-huge --file-prefix "${PFX}w" --wait \
		--ctl "$DIR/w.ctl" --output-dir "$DIR" >"$DIR/worker.log" 2>&1 &
	PIDS+=($!)
	WORKER_PID=$!
	ctl_ready "$DIR/w.ctl"
	for _ in $(seq 100); do
		[ "$(ctl "$DIR/w.ctl" --json counters ports.0.ipackets | jq_ 'd["counters"]')" -gt 0 ] &&
			return 0
		sleep 0.1
	done
	fail "memif link between worker and server did not come up within 10 s"
}

# A pushpull document without "node" (the running worker's) into FILE; DIR is relative to
# the appliance's --output-dir ($DIR).
write_doc() {	# FILE NAME REPEAT RATE DIR
	cat >"$1" <<EOF
{"name": "$2", "kind": "pushpull",
 "pushpull": {"len": "4KiB", "repeat": $3, "rate": "$4"},
 "output": {"dir": "$5"}}
EOF
}

# The worker's request count and elapsed seconds: "REQUESTS ELAPSED".
progress() {
	ctl "$DIR/w.ctl" --json status |
		jq_ '"%d %.6f" % (d["experiment"]["pushpull"]["requests"], d["experiment"]["elapsed_s"])'
}

# Requests per second over about SECONDS, from two samples of the running experiment.
rate_over() {
	local a b
	a=$(progress)
	sleep "$1"
	b=$(progress)
	python3 -c '
import sys
r0, t0, r1, t1 = map(float, sys.argv[1:])
print("%.1f" % ((r1 - r0) / (t1 - t0)))' $a $b
}

wait_state() {	# SOCK STATE SECONDS: until the experiment is in STATE
	for _ in $(seq $(($3 * 10))); do
		[ "$(ctl "$1" --json status | jq_ 'd["experiment"]["state"]')" = "$2" ] && return 0
		sleep 0.1
	done
	fail "experiment on $1 not $2 within $3 s: $(ctl "$1" --json status)"
}

wait_requests() {	# N SECONDS: until the worker's experiment made N requests
	for _ in $(seq $(($2 * 10))); do
		[ "$(progress | cut -d' ' -f1)" -ge "$1" ] && return 0
		sleep 0.1
	done
	fail "worker made fewer than $1 requests in $2 s: $(ctl "$DIR/w.ctl" --json status)"
}

# The worker's and the server's control sockets, and files for a command's output.
W="$DIR/w.ctl"
S="$DIR/s.ctl"
O="$DIR/out"
E="$DIR/err"
