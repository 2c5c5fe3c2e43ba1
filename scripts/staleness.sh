#!/bin/bash
# The staleness benchmark in one command, with its own flags, on a namespace testbed this
# script builds and removes (scripts/testbed.sh): the trainer on host 0, the workers on
# hosts 1.. placed --workers-per-node (or --nworkers-per-node) to a host, as the benchmark
# psb replaces placed them on cluster nodes. Every flag goes to psb-stale's trainer and
# workers (psb-stale --help lists them); the trainer's output is this script's, its results
# are in results/TRIAL_NAME/ (--out DIR for another place), the workers' logs beside them.
#
#   scripts/staleness.sh --mode multicast --push_frequency 0.2 --data_size 10 \
#       --pull_frequency 0.2 --post_frequency 2 --step_frequency 0.005 --max_version 500 \
#       --max_time 60 --workers 4 --nworkers-per-node 2 --LOGLEVEL INFO --trial_name 0208-3
#
# Also: --testbed NAME (default st: 1 to 8 letters and digits), --build DIR (default
# build), --psb-workers N (the last N workers are psb itself, the receiver role on
# af_packet, one a host of their own; multicast and pull modes), --overwrite (a trial whose
# results exist is refused at once without it; with it they are replaced), --help,
# --version. Needs root; builds nothing (meson setup build && ninja -C build first).
# Ctrl-C (SIGINT) or SIGTERM stops the run: the trainer writes the results so far (summary
# and CSV, saying stopped), the testbed goes, and the script exits 130 (143).
set -euo pipefail
cd "$(dirname "$0")/.."

die() { echo "staleness.sh: $*" >&2; exit 2; }
usage_error() { echo "staleness.sh: $*; try 'staleness.sh --help'" >&2; exit 2; }
usage() { awk 'NR > 1 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "$0"; }

BUILD=build
TBNAME=st
WORKERS=4
PER_NODE=1
MODE=multicast
TRIAL=trial
OUT=results
PSBW=0
OVERWRITE=0
args=()
while [ $# -gt 0 ]; do
	opt=$1
	case $opt in
	-h|--help) usage; exit 0 ;;
	--version) exec scripts/version.sh line staleness.sh ;;
	--overwrite) OVERWRITE=1; shift; continue ;;
	--*) ;;
	*) usage_error "unexpected argument '$opt' (flags are --name value)" ;;
	esac
	name=${opt//-/_}
	case $name in
	__testbed|__build|__psb_workers|__out|__workers|__workers_per_node) ;;
	__nworkers_per_node|__mode|__trial_name) ;;
	# the rest of the flags trainer and workers both take (psb-stale --help)
	__push_frequency|__data_size|__pull_frequency|__post_frequency|__step_frequency) ;;
	__max_version|__max_time|__LOGLEVEL|__rate|__budget|__join_timeout|__end_timeout) ;;
	__epgm_window) ;;
	*) usage_error "unrecognized option '$opt'" ;;
	esac
	[ $# -ge 2 ] || usage_error "option '$opt' requires an argument"
	val=$2
	shift 2
	case $name in
	__testbed) TBNAME=$val; continue ;;
	__build) BUILD=$val; continue ;;
	__psb_workers) PSBW=$val; continue ;;
	__out) OUT=$val; continue ;;
	__workers) WORKERS=$val ;;
	__workers_per_node|__nworkers_per_node) PER_NODE=$val ;;
	__mode) MODE=$val ;;
	__trial_name) TRIAL=$val ;;
	esac
	args+=("$opt" "$val")
done
ST=$BUILD/app/psb-stale/psb-stale
# the trial names directories here: psb-stale's rule, checked before any path is made of it
[[ "$TRIAL" =~ ^[A-Za-z0-9_][A-Za-z0-9_.-]*$ ]] && [ ${#TRIAL} -le 63 ] ||
	die "--trial_name: 1 to 63 letters, digits, '_', '-' or '.', not starting with '.' or" \
		"'-' (got '$TRIAL')"
# a trial whose results exist: refused before anything runs or any file of it is touched
if [ -e "$OUT/$TRIAL" ] && [ $OVERWRITE = 0 ]; then
	die "$OUT/$TRIAL exists: give another --trial_name, or --overwrite (replaces it)"
fi
[ -x "$ST" ] || die "$ST not built (meson setup $BUILD && ninja -C $BUILD)"
[ "$(id -u)" = 0 ] || die "needs root (it builds network namespaces)"
[[ "$WORKERS" =~ ^[0-9]+$ ]] && [ "$WORKERS" -ge 1 ] && [ "$WORKERS" -le 199 ] ||
	die "--workers: 1 to 199 on this testbed (got '$WORKERS')"
[[ "$PER_NODE" =~ ^[0-9]+$ ]] && [ "$PER_NODE" -ge 1 ] ||
	die "--workers-per-node: a whole number from 1 (got '$PER_NODE')"
[[ "$PSBW" =~ ^[0-9]+$ ]] && [ "$PSBW" -le "$WORKERS" ] ||
	die "--psb-workers: 0 to --workers ($WORKERS) (got '$PSBW')"
if [ "$PSBW" -gt 0 ]; then
	case $MODE in multicast|pull) ;; *) die "--psb-workers: psb takes multicast or pull mode," \
		"not $MODE" ;; esac
	[ -x "$BUILD/app/psb/psb" ] || die "$BUILD/app/psb/psb not built"
fi
KW=$((WORKERS - PSBW))		# workers over kernel sockets, then psb's
HOSTS=$(((KW + PER_NODE - 1) / PER_NODE))
GROUP=239.18.0.9:7400
TRAINER_PORT=7401
KEY=$((RANDOM * 32768 + RANDOM))
case $MODE in
multicast|epgm) args+=(--group "$GROUP") ;;
filesystem) args+=(--dir "$OUT/$TRIAL.versions") ;;
esac
targs=()
[ $OVERWRITE = 0 ] || targs+=(--overwrite)

PIDS=()
TPID=""
cleanup() {
	local p
	for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
	# psb workers remove their DPDK runtime files as they exit: a moment for that, then
	# the testbed goes with whatever still runs on it
	for _ in $(seq 50); do
		for p in "${PIDS[@]}" $TPID; do kill -0 "$p" 2>/dev/null && break; p=""; done
		[ -z "$p" ] && break
		sleep 0.1
	done
	scripts/testbed.sh down --name "$TBNAME" >/dev/null 2>&1 || true
	rm -rf /var/run/dpdk/"$TBNAME$$"-*
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
BARE=$(seq -s, $((HOSTS + 1)) $((HOSTS + PSBW)))
scripts/testbed.sh up --name "$TBNAME" --hosts $((HOSTS + PSBW + 1)) ${BARE:+--bare "$BARE"} \
	>/dev/null
TRAINER=$(scripts/testbed.sh addr 0):$TRAINER_PORT
mkdir -p "$OUT"
echo "staleness.sh: testbed $TBNAME: trainer on host 0 ($TRAINER), $KW workers on" \
	"$HOSTS hosts ($PER_NODE a host)${BARE:+, $PSBW psb workers on hosts $BARE}; logs of" \
	"the workers in $OUT/$TRIAL.workers/"
# the logs of an earlier run of this trial go with its results (--overwrite), or are those
# of one that left none
rm -rf "$OUT/$TRIAL.workers" "$OUT/$TRIAL.versions"
mkdir -p "$OUT/$TRIAL.workers"
W_OUT=$(cd "$OUT/$TRIAL.workers" && pwd)
# psb worker i on host h: its document (the flags as its staleness section), then psb
for ((i = KW; i < WORKERS; i++)); do
	h=$((HOSTS + 1 + i - KW))
	python3 - "$W_OUT/psb$i.json" "$i" "$(scripts/testbed.sh addr "$h")" "${TRAINER%:*}" \
		"$TRAINER_PORT" "$GROUP" "$KEY" "$WORKERS" "$MODE" "$TBNAME$$-$i" "${args[@]}" <<'PY'
import json, sys
path, rank, ip, trainer, tport, group, key, workers, mode, prefix = sys.argv[1:11]
st = {"mode": mode, "trainer": trainer, "port": int(tport), "group": group.split(":")[0],
      "group_port": int(group.split(":")[1]), "key": int(key), "workers": int(workers),
      "verify": True}
flags = sys.argv[11:]
for name, v in zip(flags[::2], flags[1::2]):
    name = name.lstrip("-").replace("-", "_")
    if name in ("push_frequency", "pull_frequency", "post_frequency", "step_frequency",
                "max_time"):
        st[name] = v + "s"
    elif name == "data_size":
        st[name] = float(v)
    elif name == "max_version":
        st[name] = int(v)
doc = {"name": "psb%s" % rank, "kind": "staleness",
       "node": {"role": "worker", "ip": ip, "rank": int(rank), "ports": ["af_packet:eth0"],
                "mtu": 9000, "huge": "no", "file_prefix": prefix},
       "staleness": st, "output": {"dir": ".", "overwrite": True}}
json.dump(doc, open(path, "w"), indent=1)
PY
	scripts/testbed.sh exec --name "$TBNAME" "$h" "$BUILD/app/psb/psb" --config \
		"$W_OUT/psb$i.json" --output-dir "$W_OUT" > "$W_OUT/psb$i.log" 2>&1 &
	PIDS+=($!)
done
for ((i = 0; i < KW; i++)); do
	h=$((1 + i / PER_NODE))
	scripts/testbed.sh exec --name "$TBNAME" "$h" "$ST" worker --id "$i" --trainer "$TRAINER" \
		--local "$(scripts/testbed.sh addr "$h")" --key "$KEY" --workers "$WORKERS" \
		--workers-per-node "$PER_NODE" --mode "$MODE" --trial_name "$TRIAL" \
		--json "$OUT/$TRIAL.workers/w$i.json" "${args[@]}" \
		> "$OUT/$TRIAL.workers/w$i.log" 2>&1 &
	PIDS+=($!)
done
# From here a signal stops the run rather than the script: the trainer (which takes the
# terminal's Ctrl-C itself too) writes the results so far and ends, then the script.
STOP=""
trap 'STOP=INT' INT
trap 'STOP=TERM' TERM
scripts/testbed.sh exec --name "$TBNAME" 0 "$ST" trainer --local "$TRAINER" --key "$KEY" \
	--workers "$WORKERS" --workers-per-node "$PER_NODE" --mode "$MODE" --trial_name "$TRIAL" \
	--out "$OUT" "${targs[@]}" "${args[@]}" &
TPID=$!
rc=0
wait "$TPID" || rc=$?
if [ -n "$STOP" ]; then
	kill -s "$STOP" "$TPID" 2>/dev/null || true
	for _ in $(seq 150); do kill -0 "$TPID" 2>/dev/null || break; sleep 0.1; done
	kill -9 "$TPID" 2>/dev/null || true
	wait "$TPID" 2>/dev/null || true
	echo "staleness.sh: stopped by SIG$STOP: the results so far are in $OUT/$TRIAL/" >&2
	[ "$STOP" = INT ] && exit 130
	exit 143
fi
TPID=""
for p in "${PIDS[@]}"; do wait "$p" || true; done
exit $rc
