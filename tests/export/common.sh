# Shared by the export tests (sourced): psb processes and their cleanup, telemetry, HTTP.
# Usage: source common.sh PSB_EXECUTABLE
set -euo pipefail
PSB=$1
TEL=${DPDK_TELEMETRY:-/usr/bin/dpdk-telemetry.py}
TAG=psbt-exp$$
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=$(mktemp -d "/tmp/$TAG-XXXXXX")
# where EAL puts the runtime directory of a prefix (dpdk-telemetry.py uses the same rule)
if [ -n "${RUNTIME_DIRECTORY:-}" ]; then
	RUNDIR=$RUNTIME_DIRECTORY/dpdk
elif [ "$(id -u)" = 0 ]; then
	RUNDIR=/var/run/dpdk
else
	RUNDIR=${XDG_RUNTIME_DIR:-/tmp}/dpdk
fi
PIDS=()

cleanup() {
	local p alive
	for p in "${PIDS[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
	# psb leaves cleanly on SIGTERM (runtime dir removed); give it 3 s, then make sure
	for _ in $(seq 30); do
		alive=0
		for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && break
		sleep 0.1
	done
	for p in "${PIDS[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	rm -rf "$DIR" "$RUNDIR/$TAG"-*
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

fail() {
	local f
	echo "FAIL: $*" >&2
	for f in "$DIR"/*.log; do
		[ -e "$f" ] || continue
		echo "--- $(basename "$f")" >&2
		tail -n 15 "$f" >&2
	done
	exit 1
}

[ -x "$PSB" ] || fail "no psb executable at '$PSB'"

# start_psb NAME ARGS...: psb in the background, output in $DIR/NAME.log, pid in LAST_PID
start_psb() {
	local name=$1
	shift
	"$PSB" "$@" >"$DIR/$name.log" 2>&1 &
	LAST_PID=$!
	PIDS+=("$LAST_PID")
}

# stop_psb PID [STATUS]: SIGTERM, and psb must leave with STATUS within 10 s: 0 (default)
# when nothing ran or a serve that runs until stopped, 143 when it cut an experiment short
stop_psb() {
	local pid=$1 want=${2:-0} rc=0
	kill -TERM "$pid" 2>/dev/null || fail "psb $pid was gone before SIGTERM"
	for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
	kill -0 "$pid" 2>/dev/null && fail "psb $pid still runs 10 s after SIGTERM"
	wait "$pid" || rc=$?
	[ $rc = "$want" ] || fail "psb $pid exited with $rc after SIGTERM, not $want"
}

alive() {
	kill -0 "$1" 2>/dev/null || fail "psb $1 exited early"
}

# ctl_get PREFIX PATH: one counter of the psb with file prefix PREFIX ($PSBCTL asks)
ctl_get() {
	"$PSBCTL" -p "$1" --json counters "$2" |
		python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["counters"]))'
}

# ctl_wait PID PREFIX eq|gt PATH VALUE SECONDS WHAT: until counter PATH is VALUE (eq) or a
# number above it (gt), psb PID alive meanwhile
ctl_wait() {
	local pid=$1 prefix=$2 how=$3 path=$4 want=$5 secs=$6 what=$7 v=
	for _ in $(seq $((secs * 10))); do
		alive "$pid"
		v=$(ctl_get "$prefix" "$path") || true
		case $how in
		eq) [ "$v" = "$want" ] && return 0 ;;
		gt) [[ "$v" =~ ^[0-9]+$ ]] && [ "$v" -gt "$want" ] && return 0 ;;
		esac
		sleep 0.1
	done
	[ "$how" = eq ] || want="above $want"
	fail "$what: $path is $v, not $want, after $secs s"
}

# tel PREFIX CMD...: each command through dpdk-telemetry.py, one JSON reply per line
tel() {
	local prefix=$1
	shift
	printf '%s\n' "$@" | python3 "$TEL" -f "$prefix"
}

# wait_tel PREFIX PID: until psb answers /psb/status (commands register after start-up)
wait_tel() {
	local prefix=$1 pid=$2
	for _ in $(seq 200); do
		alive "$pid"
		if tel "$prefix" /psb/status 2>/dev/null | grep -q '^{"/psb/status": {'; then
			return 0
		fi
		sleep 0.1
	done
	fail "$prefix: no /psb/status over telemetry after 20 s"
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# wait_http URL PID: until the endpoint answers
wait_http() {
	local url=$1 pid=$2
	for _ in $(seq 200); do
		alive "$pid"
		curl -sf -o /dev/null --max-time 2 "$url" && return 0
		sleep 0.1
	done
	fail "$url: no answer after 20 s"
}

# wait_grep FILE PATTERN SECONDS WHAT [PID]: until grep finds PATTERN in FILE (psb PID alive
# meanwhile), else fail saying WHAT did not happen
wait_grep() {
	local file=$1 pat=$2 secs=$3 what=$4 pid=${5:-}
	for _ in $(seq $((secs * 10))); do
		[ -z "$pid" ] || alive "$pid"
		grep -q -- "$pat" "$file" 2>/dev/null && return 0
		sleep 0.1
	done
	fail "$what within $secs s"
}

# wait_lines FILE N PID: until FILE has N lines
wait_lines() {
	local file=$1 n=$2 pid=$3
	for _ in $(seq 200); do
		alive "$pid"
		[ -f "$file" ] && [ "$(wc -l <"$file")" -ge "$n" ] && return 0
		sleep 0.05
	done
	fail "$file: fewer than $n lines after 10 s"
}
