#!/bin/bash
# The PyTorch parameter-server benchmark (psb.rpcps) with psb as the parameter server, beside
# the RPC parameter server and gloo allreduce, in the same invocation: --ntrainer trainers,
# one server (none for allreduce), DummyData and DummyModel (9.45 M parameters, 37.8 MB of
# gradients a batch), batches of 10, --epochs epochs after a one-epoch warm-up. Four ways, in
# rotating order, --pairs rounds: psb; rpc, torch RPC as it runs on one host (TensorPipe's
# shared memory and cross-memory copies); rpc_tcp, torch RPC held to TCP, as between hosts;
# allreduce. Prints, per way, the medians over the runs of each run's batch time and
# hook-future time (mean, p50, p99), the paired ratios of psb's hook-future mean to both RPC
# servers' and to allreduce's with their bootstrap 95 % intervals, and the figure asked for:
# psb's hook time at most half the RPC server's. Plots the distributions of both times (all
# runs' samples).
#
#   scripts/bench/rpcps.sh [--pairs N] [--epochs E] [--ntrainer N] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

PAIRS=5
EPOCHS=10
NTRAINER=2
BENCH_OPTS=([--pairs]=PAIRS [--epochs]=EPOCHS [--ntrainer]=NTRAINER [--out]=OUT)
bench_options rpcps.sh "$@"
PYDIR=$BUILD/python
bench_built "$KSRV"
PY=/usr/bin/python3
PYTHONPATH=$PYDIR "$PY" -c 'import torch, psb.rpcps.launcher' 2>/dev/null ||
	{ echo "$NAME: psb.rpcps or torch does not import ($PY, $PYDIR)" >&2; exit 1; }
bench_out rpcps
bench_scratch rpcps
{
	bench_about "$BUILD" "unpinned: the master, the server and the trainers share the cores" \
		"$COMMAND"
	echo "workload psb.rpcps: $NTRAINER trainers, 1 server (psb: psb-ksrv; rpc: torch RPC;" \
		"rpc_tcp: torch RPC, --rpc_transport tcp; allreduce: none, gloo among the" \
		"trainers), DummyData, DummyModel, batches of 10, $EPOCHS epochs after a 1-epoch" \
		"warm-up; psb, rpc, rpc_tcp and allreduce in rotating order, $PAIRS rounds"
	echo "torch $("$PY" -c 'import torch; print(torch.__version__)') (Debian's python3-torch, CPU)"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"
bench_plan pairs="$PAIRS" epochs="$EPOCHS" ntrainer="$NTRAINER"

# run WAY ROUND: one experiment, its samples and summaries into raw/WAY-ROUND.{csv,json}
run() {
	local way=$1 p=$2 ns=1 server=$1 transport=auto
	[ "$way" != allreduce ] || ns=0
	[ "$way" != rpc_tcp ] || { server=rpc; transport=tcp; }
	if ! timeout 1800 env PYTHONPATH="$PYDIR" PSB_KSRV="$KSRV" "$PY" -m psb.rpcps \
			--ntrainer "$NTRAINER" --nserver $ns --epochs "$EPOCHS" --batch_size 10 \
			--data DummyData --model DummyModel --server "$server" \
			--rpc_transport $transport --run_timeout 1500 -q \
			--out "$TMP/$way-$p" > "$TMP/run.log" 2>&1; then
		echo "$NAME: the $way run of round $p failed:" >&2
		cat "$TMP/run.log" >&2
		exit 1
	fi
	cp "$TMP/$way-$p/samples.csv" "$OUT/raw/$way-$p.csv"
	cp "$TMP/$way-$p/metrics.json" "$OUT/raw/$way-$p.json"
}

ways=(psb rpc rpc_tcp allreduce)
for p in $(seq "$PAIRS"); do
	shift_by=$(((p - 1) % ${#ways[@]}))
	for w in "${ways[@]:$shift_by}" "${ways[@]:0:$shift_by}"; do
		run "$w" "$p"
		bench_progress $((PAIRS * ${#ways[@]})) runs
	done
done
echo >&2
bench_finish rpcps
