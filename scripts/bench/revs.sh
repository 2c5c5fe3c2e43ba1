#!/bin/bash
# Did a change cost goodput? Two revisions of psb on the same workload, in the same
# invocation: ps-lite's test_benchmark (PUSH_PULL, 40 keys), a psb server and a psb worker
# over memif, one core each, in runs that alternate between the revisions (A B B A ...).
# Prints, per value size, the median goodput of each revision and the median of the
# per-pair ratios B/A with a bootstrap 95 % interval; writes the raw results of every
# run, the revisions and the machine beside them.
#
#   scripts/bench/revs.sh --base REV [--head REV] [--pairs N] [--seconds S]
#                         [--sizes "1048576 4096"] [--sync] [--out DIR]
#
# REV: anything git rev-parse takes (default head: the working tree as it is, built in
# build/). Each revision is built from git archive in the run's scratch directory, or kept
# by commit under $PSB_BENCH_BUILDS when that is set (scripts/bench/all.sh sets it).
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

BASE=""
HEAD=""
PAIRS=8
SECS=3
SIZES="1048576 4096"
MODE=--async
BENCH_OPTS=([--base]=BASE [--head]=HEAD [--pairs]=PAIRS [--seconds]=SECS [--sizes]=SIZES [--out]=OUT)
BENCH_FLAGS=([--sync]='MODE=--sync')
bench_options revs.sh "$@"
[ -n "$BASE" ] || { echo "revs.sh: give --base REV" >&2; exit 2; }
bench_out revs
bench_scratch psbr
# build REV DIR: REV's psb built under DIR (bench_build_rev); prints the binary.
build() {
	local b
	b=$(bench_build_rev "$1" "$2") || exit $?
	echo "$b/app/psb/psb"
}

PSB_A=$(build "$BASE" "$TMP/a")
REV_A=$(git rev-parse "$BASE^{commit}")
if [ -n "$HEAD" ]; then
	PSB_B=$(build "$HEAD" "$TMP/b")
	REV_B="$(git rev-parse "$HEAD^{commit}") dirty=false"
else
	[ -x build/app/psb/psb ] || { echo "revs.sh: build/ not built (meson setup build && ninja -C build)" >&2; exit 1; }
	ninja -C build app/psb/psb >/dev/null
	PSB_B=build/app/psb/psb
	REV_B=$(bench_revision build)
fi

# run TAG PSB LEN: one psb server and worker over memif; the worker's result in raw/TAG.json.
run() {
	bench_memif "revs.sh: run $1" "$2" "$SECS" "$OUT/raw/$1.json" $MODE 0 1 --len "$3" --mode 1 \
		--keys 40
}

{
	echo "base $BASE $REV_A"
	echo "head ${HEAD:-working tree} $REV_B"
	echo "base_version $(bench_version "$(dirname "$(dirname "$(dirname "$PSB_A")")")")"
	echo "head_version $(bench_version "$(dirname "$(dirname "$(dirname "$PSB_B")")")")"
	echo "base_$(bench_build "$(dirname "$(dirname "$(dirname "$PSB_A")")")")"
	echo "head_$(bench_build "$(dirname "$(dirname "$(dirname "$PSB_B")")")")"
	bench_machine
	echo "pinning server lcore 0, worker lcore 1; memif (psb on hugepages while free, as by default); mode $MODE PUSH_PULL, 40 keys"
	echo "command scripts/bench/revs.sh --base $BASE ${HEAD:+--head $HEAD }--pairs $PAIRS --seconds $SECS --sizes \"$SIZES\" $([ $MODE = --sync ] && echo --sync) --out $OUT"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"

total=$(( $(echo $SIZES | wc -w) * PAIRS * 2 ))
for size in $SIZES; do
	for p in $(seq "$PAIRS"); do
		for w in $(bench_abba "$p" a b); do
			if [ $w = a ]; then run "a-$size-$p" "$PSB_A" "$size"; else run "b-$size-$p" "$PSB_B" "$size"; fi
			bench_progress $total runs
		done
	done
done
echo >&2

# the summary comes from the raw data alone (check_docs.py makes it again from them)
bench_finish revs
