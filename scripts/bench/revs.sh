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
# build/). Each revision is built in its own worktree under the output directory's tmp.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/provenance.sh

BASE=""
HEAD=""
PAIRS=8
SECS=3
SIZES="1048576 4096"
MODE=--async
OUT=""
while [ $# -gt 0 ]; do
	case "$1" in
	--base) BASE=$2; shift ;;
	--head) HEAD=$2; shift ;;
	--pairs) PAIRS=$2; shift ;;
	--seconds) SECS=$2; shift ;;
	--sizes) SIZES=$2; shift ;;
	--sync) MODE=--sync ;;
	--out) OUT=$2; shift ;;
	-h|--help) sed -n '2,12p' "$0"; exit 0 ;;
	*) echo "revs.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
[ -n "$BASE" ] || { echo "revs.sh: give --base REV" >&2; exit 2; }
[ -n "$OUT" ] || OUT=results/revs-$(date +%Y%m%d-%H%M%S)
[ -e "$OUT/summary.json" ] && { echo "revs.sh: $OUT already holds results" >&2; exit 2; }
mkdir -p "$OUT/raw"
TMP=$(mktemp -d /tmp/psb-revs-XXXXXX)
PIDS=()
WTS=()
cleanup() {
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	for w in "${WTS[@]}"; do git worktree remove --force "$w" 2>/dev/null || true; done
	rm -rf "$TMP" /var/run/dpdk/psbr-$$-*
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# build REV DIR: a worktree of REV with psb built in DIR/build; prints the psb binary.
build() {
	local rev=$1 dir=$2 sha
	sha=$(git rev-parse --verify "$rev^{commit}") || { echo "revs.sh: no revision $rev" >&2; exit 2; }
	git worktree add --detach "$dir" "$sha" >/dev/null 2>&1
	WTS+=("$dir")
	echo "revs.sh: building $rev ($sha)" >&2
	(cd "$dir" && meson setup build -Dtests=disabled >/dev/null && ninja -C build app/psb/psb >/dev/null) ||
		{ echo "revs.sh: $rev does not build" >&2; exit 1; }
	echo "$dir/build/app/psb/psb"
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

n=0
# run TAG PSB LEN: one psb server and worker over memif; the worker's result in raw/TAG.json.
run() {
	local tag=$1 psb=$2 len=$3 sock spid
	n=$((n + 1))
	sock=$TMP/m$n.sock
	"$psb" --role server --port "memif:server:$sock" --ip 198.18.0.1 $MODE -l 0 \
		--file-prefix "psbr-$$-s$n" -q > "$TMP/srv.log" 2>&1 &
	spid=$!
	PIDS+=($spid)
	for _ in $(seq 100); do [ -S "/var/run/dpdk/psbr-$$-s$n/psb.ctl" ] && break; sleep 0.1; done
	if ! timeout $((SECS + 60)) "$psb" --role worker --port "memif:client:$sock" \
		--ip 198.18.0.2 --server 198.18.0.1 $MODE -l 1 --file-prefix "psbr-$$-w$n" \
		--len "$len" --repeat 1000000000 --mode 1 --keys 40 --duration "$SECS" \
		--results "$OUT/raw/$tag.json" -q > "$TMP/wk.log" 2>&1; then
		echo "revs.sh: run $tag failed:" >&2
		cat "$TMP/wk.log" "$TMP/srv.log" >&2
		exit 1
	fi
	kill -TERM $spid 2>/dev/null || true
	wait $spid 2>/dev/null || true
}

{
	echo "base $BASE $REV_A"
	echo "head ${HEAD:-working tree} $REV_B"
	echo "base_$(bench_build "$(dirname "$(dirname "$(dirname "$PSB_A")")")")"
	echo "head_$(bench_build "$(dirname "$(dirname "$(dirname "$PSB_B")")")")"
	bench_machine
	echo "pinning server lcore 0, worker lcore 1; memif (psb on hugepages while free, as by default); mode $MODE PUSH_PULL, 40 keys"
	echo "command scripts/bench/revs.sh --base $BASE ${HEAD:+--head $HEAD }--pairs $PAIRS --seconds $SECS --sizes \"$SIZES\" $([ $MODE = --sync ] && echo --sync) --out $OUT"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"

total=$(( $(echo $SIZES | wc -w) * PAIRS * 2 ))
k=0
for size in $SIZES; do
	for p in $(seq "$PAIRS"); do
		# ABBA: neither revision always runs first
		if [ $((p % 2)) = 1 ]; then order="a b"; else order="b a"; fi
		for w in $order; do
			if [ $w = a ]; then run "a-$size-$p" "$PSB_A" "$size"; else run "b-$size-$p" "$PSB_B" "$size"; fi
			k=$((k + 1))
			printf '\r  %d/%d runs' $k $total >&2
		done
	done
done
echo >&2

# the summary comes from the raw data alone (check_docs.py makes it again from them)
python3 scripts/bench/summarize.py revs "$OUT"
