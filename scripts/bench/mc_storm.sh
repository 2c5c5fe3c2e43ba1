#!/bin/bash
# One receiver against the fan-out: on the namespace testbed (scripts/testbed.sh, 4 hosts on
# a bridge, MTU 9000), psb-mcast send publishes --count versions of --data-size every --push
# seconds at --rate Gbit/s to two honest receivers (psb-mcast recv, every byte checked),
# while a third host either stays silent (calm) or joins the group and NACKs every symbol of
# every group of the newest version --storm-rate times a second under one receiver id
# (storm) or under 200 ids in turn (storm200; scripts/bench/mc_storm.py). The three run in
# rotating order, --rounds times.
#
# Figures (the summary): the versions the honest receivers hold whole, whether they end on
# the last, the sender's run time (publishing, then --linger of repairs) against the calm
# run of the same round, the repairs and what the sender ignored; the targets are at least
# 95 % of the versions whole and a run time within 10 % of the calm one.
#
#   scripts/bench/mc_storm.sh [--rounds N] [--count N] [--data-size B] [--push S]
#                             [--rate GBITS] [--storm-rate N] [--linger S] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

ROUNDS=5
COUNT=20
SIZE=4MB
PUSH=0.2
RATE=2
STORM_RATE=3000
LINGER=1
BENCH_OPTS=([--rounds]=ROUNDS [--count]=COUNT [--data-size]=SIZE [--push]=PUSH [--rate]=RATE
	    [--storm-rate]=STORM_RATE [--linger]=LINGER [--out]=OUT)
bench_options mc_storm.sh "$@"
for v in ROUNDS COUNT RATE STORM_RATE; do
	[[ "${!v}" =~ ^[0-9]+$ ]] && [ "${!v}" -ge 1 ] ||
		{ echo "$NAME: --${v,,}: a whole number of at least 1 (got ${!v})" >&2; exit 2; }
done
for v in PUSH LINGER; do
	[[ "${!v}" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		{ echo "$NAME: --${v,,}: seconds, like 0.2 (got ${!v})" >&2; exit 2; }
done
MC=$BUILD/app/psb-mcast/psb-mcast
TB=scripts/testbed.sh
bench_built "$MC"
[ "$(id -u)" = 0 ] || { echo "$NAME: needs root (network namespaces)" >&2; exit 1; }
bench_out mc_storm
bench_scratch mcstorm
TBNAME=bm$(($$ % 100000))
bench_cleanup() {
	"$TB" down --name "$TBNAME" > /dev/null 2>&1 || true
}
"$TB" up --name "$TBNAME" --hosts 4 > "$TMP/tb.log" 2>&1 || { cat "$TMP/tb.log" >&2; exit 1; }
{
	bench_about "$BUILD" "none (sender, receivers and stormer unpinned, one namespace each)" \
		"$COMMAND"
	echo "workload $COUNT versions of $SIZE every $PUSH s at $RATE Gbit/s (psb-mcast send, then" \
		"$LINGER s of repairs) to 2 receivers (psb-mcast recv, every byte checked); a third host" \
		"calm, or NACKing every symbol of every group $STORM_RATE times a second under 1 id" \
		"(storm) or 200 (storm200); $ROUNDS rounds, the three in rotating order; testbed of 4" \
		"namespaces on a bridge, MTU 9000"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"
bench_plan rounds="$ROUNDS" count="$COUNT" data_size="$SIZE" push="$PUSH" rate="$RATE" \
	storm_rate="$STORM_RATE" linger="$LINGER"

GROUP=239.18.0.8:7200
# the stormer outlasts the sender's publishing and its linger
STORM_S=$(python3 -c "print($COUNT * $PUSH + $LINGER + 1)")
on() { "$TB" exec --name "$TBNAME" "$@"; }

# one VARIANT ROUND: a run, its files raw/VARIANT-ROUND-{s,r1,r2,storm}.json and s.log
one() {
	local v=$1 r=$2 h st="" ids=1
	local rp=() base=$OUT/raw/$1-$2
	for h in 1 2; do
		on "$h" timeout -k 2 120 "$MC" recv --local "$("$TB" addr "$h")" --group "$GROUP" \
			--expect "$COUNT" --max-time 90 --id "$h" --json "$base-r$h.json" \
			> "$TMP/r$h.log" 2>&1 &
		rp+=($!)
		PIDS+=($!)
	done
	if [ "$v" != calm ]; then
		[ "$v" = storm200 ] && ids=200
		on 3 timeout -k 2 120 python3 scripts/bench/mc_storm.py --local "$("$TB" addr 3)" \
			--group "$GROUP" --rate "$STORM_RATE" --seconds "$STORM_S" --ids "$ids" \
			--json "$base-storm.json" > "$TMP/storm.log" 2>&1 &
		st=$!
		PIDS+=($st)
	fi
	sleep 0.5
	if ! on 0 timeout -k 2 120 "$MC" send --local "$("$TB" addr 0):7201" --group "$GROUP" \
		--count "$COUNT" --data-size "$SIZE" --push-frequency "$PUSH" --rate "$RATE" \
		--linger "$LINGER" --json "$base-s.json" > "$base-s.log" 2>&1; then
		echo "$NAME: the sender failed ($v, round $r):" >&2
		cat "$base-s.log" >&2
		exit 1
	fi
	for h in "${rp[@]}"; do wait "$h" || true; done
	if [ -n "$st" ] && ! wait "$st"; then
		echo "$NAME: the stormer failed ($v, round $r):" >&2
		cat "$TMP/storm.log" >&2
		exit 1
	fi
	for h in 1 2; do
		[ -s "$base-r$h.json" ] || { echo "$NAME: receiver $h wrote nothing:" >&2;
			cat "$TMP/r$h.log" >&2; exit 1; }
	done
}

VARIANTS=(calm storm storm200)
total=$((ROUNDS * 3))
for r in $(seq "$ROUNDS"); do
	for k in 0 1 2; do
		one "${VARIANTS[$(((k + r) % 3))]}" "$r"
		bench_progress $total runs
	done
done
echo >&2
bench_finish mc_storm
