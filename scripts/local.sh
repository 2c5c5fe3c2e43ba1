#!/bin/bash
# A ps-lite job on this host, as ps-lite's tests/local.sh starts one: a scheduler, the
# servers and the workers, with the DMLC_* variables set. The scheduler and the servers are
# psb's (psb-ksrv, on loopback; the servers sum as ps-lite's default handler does); the
# workers are PROGRAM, a program built against psb's ps-lite header (ps/ps.h,
# `pkg-config psb-pslite`) or the client API (psb/client.h). With --handler the servers are
# PROGRAM too, its KVServer's request handle answering. Waits for the workers, ends
# everything and exits with the first failing worker's status (0 when all succeeded).
#
#   scripts/local.sh [options] NUM_SERVERS NUM_WORKERS PROGRAM [ARGS...]
#
#   --sync          synchronous rounds (default: asynchronous updates, ps-lite's default)
#   --handler       the servers are PROGRAM (DMLC_ROLE=server, PSB_SERVER_HANDLER=1): its
#                   own request handle runs, for servers that do more than sum
#   --timeout S     give the workers S seconds in all (default 600): then every process is
#                   ended, the ones still running named, and the exit status is 124
#   --logs DIR      each process's output in DIR/{scheduler,server-I,worker-I}.log (default:
#                   workers' on this terminal, prefixed, the rest in a scratch directory)
#   --ip A.B.C.D    the address the scheduler and servers use (default 127.0.0.1)
#   -h, --help
#
# Environment: PSB_BUILD, the build directory (default: build/ beside this script's tree),
# or PSB_KSRV, psb-ksrv itself. Several hosts: start `psb-ksrv --scheduler-only` on one,
# `psb-ksrv --scheduler IP:PORT` on each server host and the workers with DMLC_ROLE=worker,
# DMLC_PS_ROOT_URI and DMLC_PS_ROOT_PORT (docs/CLIENT.md).
set -uo pipefail

usage() { sed -n '2,26p' "$0" | sed 's/^# \{0,1\}//'; }
die() { echo "local.sh: $*" >&2; exit 2; }

SYNC=--async
HANDLER=0
TIMEOUT=600
LOGS=
IP=127.0.0.1
while [ $# -gt 0 ]; do
	case $1 in
	--sync) SYNC=--sync ;;
	--handler) HANDLER=1 ;;
	--timeout) TIMEOUT=${2:?--timeout needs seconds}; shift ;;
	--logs) LOGS=${2:?--logs needs a directory}; shift ;;
	--ip) IP=${2:?--ip needs an address}; shift ;;
	-h|--help) usage; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1; try 'local.sh --help'" ;;
	*) break ;;
	esac
	shift
done
[ $# -ge 3 ] || die "usage: local.sh [options] NUM_SERVERS NUM_WORKERS PROGRAM [ARGS...]"
NS=$1 NW=$2
shift 2
[[ "$NS" =~ ^[1-9][0-9]*$ ]] || die "NUM_SERVERS '$NS' is not a positive number"
[[ "$NW" =~ ^[1-9][0-9]*$ ]] || die "NUM_WORKERS '$NW' is not a positive number"
[ $((NS + NW)) -lt 256 ] || die "at most 255 nodes (servers and workers) in a job"
[[ "$TIMEOUT" =~ ^[0-9]+$ ]] || die "--timeout '$TIMEOUT' is not a number of seconds"
PROG=$1
shift
[ $HANDLER = 0 ] || [ $SYNC = --async ] ||
	die "--sync and --handler: the rounds of a program's own servers are its handler's"
command -v "$PROG" >/dev/null 2>&1 || [ -x "$PROG" ] || die "PROGRAM '$PROG' is not executable"

ROOT=$(cd "$(dirname "$0")/.." && pwd)
KSRV=${PSB_KSRV:-${PSB_BUILD:-$ROOT/build}/app/psb-ksrv/psb-ksrv}
[ -x "$KSRV" ] || die "psb-ksrv not found at $KSRV (build psb: meson setup build && ninja -C build; or set PSB_BUILD or PSB_KSRV)"

TMP=$(mktemp -d /tmp/psb-local.XXXXXX) || die "mktemp failed"
[ -n "$LOGS" ] || LOGS=$TMP
mkdir -p "$LOGS" || die "cannot make $LOGS"
PIDS=()
WPIDS=()
cleanup() {
	local p
	for p in "${WPIDS[@]}" "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
	sleep 0.2
	for p in "${WPIDS[@]}" "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	wait 2>/dev/null
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# the scheduler alone; its port from its ready file
"$KSRV" --ip "$IP" --port 0 --scheduler-port 0 --scheduler-only --num-servers "$NS" \
	--num-workers "$NW" --ready-file "$TMP/sched.ready" --duration $((TIMEOUT + 60)) \
	>"$LOGS/scheduler.log" 2>&1 &
PIDS+=($!)
for ((i = 0; i < 200; i++)); do [ -s "$TMP/sched.ready" ] && break; sleep 0.05; done
SPORT=$(cut -d' ' -f2 "$TMP/sched.ready" 2>/dev/null)
[ -n "$SPORT" ] || { cat "$LOGS/scheduler.log" >&2; die "the scheduler did not start"; }
export DMLC_PS_ROOT_URI=$IP DMLC_PS_ROOT_PORT=$SPORT DMLC_NUM_SERVER=$NS DMLC_NUM_WORKER=$NW
# the workers' sessions run the servers' rounds
[ $SYNC = --sync ] && export PSB_SYNC=1
for ((s = 0; s < NS; s++)); do
	if [ $HANDLER = 1 ]; then
		DMLC_ROLE=server DMLC_NODE_HOST=$IP PSB_SERVER_HANDLER=1 \
			"$PROG" "$@" >"$LOGS/server-$s.log" 2>&1 &
	else
		"$KSRV" --ip "$IP" --port 0 --scheduler "$IP:$SPORT" "$SYNC" \
			--duration $((TIMEOUT + 60)) >"$LOGS/server-$s.log" 2>&1 &
	fi
	PIDS+=($!)
done
if [ $HANDLER = 1 ]; then
	echo "local.sh: scheduler $IP:$SPORT, $NS server(s) and $NW worker(s): $PROG $*"
else
	echo "local.sh: scheduler $IP:$SPORT, $NS server(s) ($SYNC), $NW worker(s): $PROG $*"
fi

for ((w = 0; w < NW; w++)); do
	if [ "$LOGS" = "$TMP" ]; then
		DMLC_ROLE=worker "$PROG" "$@" > >(sed "s/^/[worker $w] /") 2>&1 &
	else
		DMLC_ROLE=worker "$PROG" "$@" >"$LOGS/worker-$w.log" 2>&1 &
	fi
	WPIDS+=($!)
done

# the workers, within the time given
deadline=$((SECONDS + TIMEOUT))
status=0
left=("${WPIDS[@]}")
while [ ${#left[@]} -gt 0 ]; do
	still=()
	for ((i = 0; i < ${#left[@]}; i++)); do
		p=${left[$i]}
		if kill -0 "$p" 2>/dev/null; then
			still+=("$p")
			continue
		fi
		wait "$p"
		rc=$?
		if [ $rc != 0 ] && [ $status = 0 ]; then
			status=$rc
			echo "local.sh: a worker (pid $p) exited with $rc" >&2
		fi
	done
	left=("${still[@]}")
	[ ${#left[@]} -gt 0 ] || break
	if [ $SECONDS -ge $deadline ]; then
		echo "local.sh: ${#left[@]} of $NW worker(s) still running after ${TIMEOUT}s" \
			"(pids ${left[*]}): ending the job" >&2
		status=124
		break
	fi
	sleep 0.1
done
# the servers and the scheduler end with the job once every worker finalized (a server
# that is the program: once its Finalize returned)
for ((i = 0; i < 50; i++)); do
	alive=0
	for p in "${PIDS[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
	[ $alive = 0 ] && break
	sleep 0.1
done
[ $alive = 0 ] || [ $status != 0 ] ||
	echo "local.sh: the servers had not ended 5 s after the workers (did every worker call Finalize?)" >&2
exit $status
