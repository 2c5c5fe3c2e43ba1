#!/bin/bash
# The staleness experiment side by side on the namespace testbed (scripts/testbed.sh): a
# trainer on host 0 publishes a version of --data-size MB every P seconds for --duration
# seconds, W workers on hosts 1..W (one a host) sample the version they hold every 5 ms and
# post it every S seconds, for each W in --workers, P in --pushes and S in --posts (0.5 s,
# and the old benchmark's 2 s), in each mode of --modes: psb's reliable multicast,
# pull, filesystem (versioned files and a latest link in a local directory) and ZeroMQ's
# epgm PUB/SUB (the old benchmark's transport: jumbo packets, paced at the same rate), all
# through psb-stale over kernel sockets. The two multicast transports, psb's and epgm, run at
# each pacing rate of --rates (Gbit/s), both at the same ones; pull at the highest of them.
# The modes run in turn within each (W, P), their order rotated between the --reps
# repetitions. Prints, and writes beside the raw results,
# the median window staleness per mode, workers, post period and publish rate, with its
# range over the repetitions, the old benchmark's Average Version difference beside it, and
# draws the first against the rate (rates.svg) and over time at the seed's workload
# (over_time.svg). The figure asked for: psb's multicast keeps the mean window staleness
# <= 1 version at >= 3x the highest publish rate at which epgm still does, each taken at the
# pacing rate where it does best, in each repetition: the ratio's median and range over them.
#
# Kernel socket buffers are what both transports ask for (8 MB): net.core.rmem_max and
# wmem_max are raised to 16 MB for the run and put back after it.
#
#   scripts/bench/staleness.sh [--workers "4 8"] [--pushes "0.2 0.1 0.05 0.02"]
#       [--posts "0.5 2"] [--modes "multicast pull filesystem epgm"] [--data-size MB]
#       [--duration S] [--reps N] [--rates "5 10"] [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

WORKERS="4 8"
PUSHES="0.2 0.1 0.05 0.02"
POSTS="0.5 2"
MODES="multicast pull filesystem epgm"
DATA=10
DUR=8
REPS=3
RATES="5 10"
BENCH_OPTS=([--workers]=WORKERS [--pushes]=PUSHES [--posts]=POSTS [--modes]=MODES [--data-size]=DATA
	[--duration]=DUR [--reps]=REPS [--rates]=RATES [--out]=OUT)
bench_options staleness.sh "$@"
ST=$BUILD/app/psb-stale/psb-stale
TB=scripts/testbed.sh
bench_built "$ST"
for m in $MODES; do
	case $m in multicast|pull|filesystem|epgm) ;; *) echo "$NAME: --modes: no mode $m" >&2; exit 2 ;; esac
done
maxr=0
for r in $RATES; do
	[[ "$r" =~ ^[0-9]+$ ]] && [ "$r" -ge 1 ] && [ "$r" -le 400 ] ||
		{ echo "$NAME: --rates: whole Gbit/s from 1 to 400 each (got $r)" >&2; exit 2; }
	[ "$r" -gt "$maxr" ] && maxr=$r
done
[ "$maxr" -gt 0 ] || { echo "$NAME: --rates: none given" >&2; exit 2; }
for w in $WORKERS; do
	[[ "$w" =~ ^[0-9]+$ ]] && [ "$w" -ge 1 ] && [ "$w" -le 64 ] ||
		{ echo "$NAME: --workers: 1 to 64 each (got $w)" >&2; exit 2; }
done
[ -n "$POSTS" ] || { echo "$NAME: --posts: none given" >&2; exit 2; }
for o in $POSTS; do
	[[ "$o" =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		{ echo "$NAME: --posts: seconds each, like 0.5 (got $o)" >&2; exit 2; }
done
[ "$(id -u)" = 0 ] || { echo "$NAME: needs root (network namespaces)" >&2; exit 1; }
bench_out staleness
bench_scratch staleness
TBNAME=bs$(($$ % 100000))
RMEM=$(sysctl -n net.core.rmem_max)
WMEM=$(sysctl -n net.core.wmem_max)
bench_cleanup() {
	"$TB" down --name "$TBNAME" > /dev/null 2>&1 || true
	sysctl -q -w net.core.rmem_max="$RMEM" net.core.wmem_max="$WMEM" || true
}
sysctl -q -w net.core.rmem_max=16777216 net.core.wmem_max=16777216
# a testbed of W + 1 hosts for W workers: the bridge floods the group to every host, so a
# larger one would make each packet cost as many copies as its hosts, not as the workers
tb_hosts=0
testbed_for() {
	[ "$tb_hosts" = $(($1 + 1)) ] && return 0
	"$TB" down --name "$TBNAME" > /dev/null 2>&1 || true
	"$TB" up --name "$TBNAME" --hosts $(($1 + 1)) > "$TMP/tb.log" 2>&1 ||
		{ cat "$TMP/tb.log" >&2; exit 1; }
	tb_hosts=$(($1 + 1))
}
{
	bench_about "$BUILD" "none (trainer and workers unpinned, one namespace each)" "$COMMAND"
	echo "workload $DATA MB versions every P s for $DUR s, P in [$PUSHES], workers in [$WORKERS]" \
		"(one a host), steps of 5 ms, posts every S s, S in [$POSTS]; modes [$MODES] rotated over $REPS" \
		"repetitions; pacing [$RATES] Gbit/s (multicast, epgm; pull at $maxr); testbed of W + 1" \
		"namespaces (one a worker and the trainer's) on a bridge, MTU 9000; socket buffers 8 MB (rmem_max 16 MB for the run)"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"
bench_plan workers="[$WORKERS]" pushes="[$PUSHES]" posts="[$POSTS]" modes="[$MODES]" data_mb="$DATA" \
	duration="$DUR" reps="$REPS" rates="[$RATES]"

# the runs of one (W, P): a mode at a pacing rate each (filesystem: not paced)
variants=()
for m in $MODES; do
	case $m in
	multicast|epgm) for r in $RATES; do variants+=("$m:$r"); done ;;
	pull) variants+=("$m:$maxr") ;;
	*) variants+=("$m:$maxr") ;;
	esac
done
nvar=${#variants[@]}
total=$((REPS * $(wc -w <<< "$WORKERS") * $(wc -w <<< "$PUSHES") * $(wc -w <<< "$POSTS") * nvar))
GROUP=239.18.0.7:7300
TRAINER=$("$TB" addr 0):7301
run=0
for rep in $(seq "$REPS"); do
	for w in $WORKERS; do
		testbed_for "$w"
		for p in $PUSHES; do
			for o in $POSTS; do
				for k in $(seq 0 $((nvar - 1))); do
					v=${variants[$(((k + rep) % nvar))]}
					mode=${v%:*} rate=${v#*:}
					tag=$mode-w$w-p$p-post$o-r$rep
					[ "$mode" = filesystem ] || tag=$mode-g$rate-w$w-p$p-post$o-r$rep
					run=$((run + 1))
					fl=(--mode "$mode" --push_frequency "$p" --data_size "$DATA"
					    --pull_frequency 0.005 --post_frequency "$o" --step_frequency 0.005
					    --max_version 1000000000 --max_time "$DUR" --workers "$w"
					    --LOGLEVEL WARNING --key "$run" --rate "$rate")
					[ "$mode" = multicast ] || [ "$mode" = epgm ] && fl+=(--group "$GROUP")
					[ "$mode" = pull ] || [ "$mode" = epgm ] || [ "$mode" = multicast ] ||
						fl+=(--dir "$TMP/fs-$run")
					wpids=()
					for i in $(seq 0 $((w - 1))); do
						h=$((i + 1))
						"$TB" exec --name "$TBNAME" "$h" timeout -k 2 $((DUR + 60)) "$ST" worker \
							--id "$i" --trainer "$TRAINER" --local "$("$TB" addr "$h")" \
							--json "$OUT/raw/$tag-w$i.json" "${fl[@]}" \
							> "$TMP/$tag-w$i.log" 2>&1 &
						wpids+=($!)
						PIDS+=($!)
					done
					rc=0
					"$TB" exec --name "$TBNAME" 0 timeout -k 2 $((DUR + 60)) "$ST" trainer \
						--local "$TRAINER" --out "$TMP/res" --trial_name "$tag" \
						--end-timeout 5 "${fl[@]}" > "$TMP/$tag-t.log" 2>&1 || rc=$?
					for i in "${!wpids[@]}"; do
						# a worker that ended on a signal or its timeout: said, its log kept
						wrc=0
						wait "${wpids[$i]}" || wrc=$?
						if [ "$wrc" -ge 124 ]; then
							echo "$NAME: $tag: worker $i ended with status $wrc" \
								"(log in raw/$tag-w$i.log)" >&2
							cp "$TMP/$tag-w$i.log" "$OUT/raw/"
						fi
					done
					if [ ! -f "$TMP/res/$tag/summary.json" ] || [ "$rc" -gt 1 ]; then
						echo "$NAME: $tag: the trainer failed ($rc):" >&2
						tail -n 5 "$TMP/$tag-t.log" >&2
						exit 1
					fi
					cp "$TMP/res/$tag/summary.json" "$OUT/raw/$tag.json"
					cp "$TMP/res/$tag/staleness.csv" "$OUT/raw/$tag.csv"
					rm -rf "$TMP/fs-$run" "$TMP/res/$tag"
					bench_progress "$total" runs
				done
			done
		done
	done
done
echo >&2
bench_finish staleness
