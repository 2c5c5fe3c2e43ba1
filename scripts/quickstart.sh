#!/bin/bash
# Install, build, and run psb's main job on a self-made testbed: a psb server
# and a psb worker connected by memif (one core each) run ps-lite's
# test_benchmark (PUSH_PULL, 40 keys, 4 KB and 1 MB values), next to the same
# workload over kernel UDP sockets, and print the results table.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
if [ -f build/build.ninja ]; then
	meson setup --reconfigure build >/dev/null
else
	meson setup build >/dev/null
fi
echo "quickstart: building"
ninja -C build >/dev/null
exec scripts/bench/pushpull.sh --quick --out "results/quickstart-$(date +%Y%m%d-%H%M%S)" "$@"
