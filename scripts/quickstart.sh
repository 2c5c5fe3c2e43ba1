#!/bin/bash
# Install, build, and run psb's main job on a self-made testbed: a psb server
# and a psb worker connected by memif (one core each) run ps-lite's
# test_benchmark (PUSH_PULL, 40 keys, 4 KB and 1 MB values), next to the same
# workload over kernel UDP sockets, and print the results table.
#
#   scripts/quickstart.sh [OPTIONS]
#
# OPTIONS are scripts/bench/pushpull.sh's (--runs, --seconds, --sizes, --modes,
# --out; its --help lists them), after its --quick; also --help and --version.
set -euo pipefail
cd "$(dirname "$0")/.."

for a in "$@"; do
	case $a in
	-h|--help)
		awk 'NR > 1 { if (!/^#/) exit; sub(/^# ?/, ""); print }' "$0"
		exit 0 ;;
	--version) exec scripts/version.sh line quickstart.sh ;;
	esac
done
# the options are checked before anything is installed or built
BENCH_ARGS_ONLY=quickstart.sh scripts/bench/pushpull.sh --quick "$@"

scripts/setup.sh
if [ -f build/build.ninja ]; then
	meson setup --reconfigure build >/dev/null
else
	meson setup build >/dev/null
fi
echo "quickstart: building"
ninja -C build >/dev/null
exec scripts/bench/pushpull.sh --quick --out "results/quickstart-$(date +%Y%m%d-%H%M%S)" "$@"
