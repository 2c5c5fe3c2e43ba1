#!/bin/bash
# The PyTorch parameter-server benchmark with psb as its parameter server (or the RPC
# parameter server, or gloo allreduce, by --server): builds psb when needed (with
# --setup, installs what it needs first: scripts/setup.sh) and runs python3 -m psb.rpcps.
# Prints the metric tables per rank and for all ranks, and writes every sample
# (samples.csv), the summaries (metrics.json) and the tables into --out.
#
#   scripts/rpcps.sh [--setup] --ntrainer N --nserver M --epochs E --batch_size B \
#                    --data ID --model ID --server psb|rpc|allreduce [...]
#
# The options are psb.rpcps's (--help lists them all); docs/RPCPS.md is the manual.
# Environment: PSB_BUILD, the build directory (default build/ in this tree).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${PSB_BUILD:-$ROOT/build}
PY=/usr/bin/python3

if [ "${1:-}" = --setup ]; then
	shift
	scripts/setup.sh
fi
if ! command -v meson >/dev/null || ! "$PY" -c 'import torch' 2>/dev/null; then
	echo "rpcps.sh: meson or Debian's python3-torch is missing: run scripts/rpcps.sh --setup" \
		"(or scripts/setup.sh) first" >&2
	exit 2
fi
if [ ! -f "$BUILD/build.ninja" ]; then
	meson setup "$BUILD" >/dev/null
fi
ninja -C "$BUILD" >/dev/null
[ -f "$BUILD/python/psb/rpcps/launcher.py" ] || {
	echo "rpcps.sh: the psb Python package was not built in $BUILD (python3-dev missing?" \
		"scripts/setup.sh installs it)" >&2
	exit 2
}
export PYTHONPATH=$BUILD/python${PYTHONPATH:+:$PYTHONPATH}
export PSB_KSRV=${PSB_KSRV:-$BUILD/app/psb-ksrv/psb-ksrv}
exec "$PY" -m psb.rpcps "$@"
