#!/bin/bash
# Every figure the docs (README.md, docs/*.md) publish, measured again: each run a mark
# (<!-- summary: docs/bench/RUN/summary.md -->) names is made again by its script with the
# same workload (PLAN below: the arguments of the run's ABOUT.txt), into a new run directory
# docs/bench/KIND-DATE<letter>[-SLOT] (today, UTC, and the first letter no run of today has:
# nothing is overwritten). Then every mention of each run in the docs names its new one
# (check_docs.py --repoint), their tables are written from the new summaries and checked
# (check_docs.py --update), and the runs no doc names any more are removed (--keep-old keeps
# them). A change to code a benchmark measures ends with this (docs/BENCHMARKS.md).
#
#   scripts/bench/all.sh [--list] [--only NAME...] [--keep-old] [--smoke] [--pslite DIR]
#
# --list      the plan (what replaces what, the commands) and its time; nothing is run
# --only      only these entries of the plan: a NAME, or a kind (revs: all of them)
# --keep-old  keep the runs the docs no longer name
# --smoke     every entry with tiny durations into a copy of the docs in a scratch directory
#             (the pipeline end to end in some 15 minutes; pinned revisions are HEAD there),
#             removed afterwards; the tree is not touched
# --pslite    a ps-lite checkout for the runs that measure against ps-lite itself (the plan's
#             --pslite @PSLITE: client.sh, pushpull.sh, job.sh; ps-lite is not packaged, fetch it
#             beforehand); without it they measure psb alone, and the plan says so where the
#             published run had it
#
# Prints the time it expects before it starts, each run as it starts and ends, and at the
# end a table of what was measured. A run that fails leaves the others' results (its own
# directory is kept for its log, unnamed); the exit status is then 1. Needs root, as job.sh,
# ctl_hostile.sh and staleness.sh do (namespaces), and the tree built (meson setup build &&
# ninja -C build). Runs the benchmarks one after the other: nothing else should load the
# machine meanwhile.
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

# What the docs publish: NAME|MINUTES|COMMAND|SMOKE ARGUMENTS. NAME is the run's kind (its
# directory's first word) and, after a colon, its slot (the directory's last word), which
# tells apart runs of one kind. COMMAND is the script and its arguments (the run's --out is
# added); VAR=@REV before it runs it with VAR set to a build of REV (an older build on
# purpose: the baseline of the run beside it). revs.sh compares two given revisions: the
# ones the docs name, pinned. MINUTES is what a run takes here; SMOKE ARGUMENTS replace the
# arguments in --smoke.
PLAN=(
	"pushpull|18|pushpull.sh --pslite @PSLITE|--runs 1 --seconds 1 --sizes '4096 1048576' --modes 1"
	"revs:1mb|7|revs.sh --base ffe81e3 --head 4b7170e --pairs 24 --seconds 3 --sizes 1048576|"
	"revs:window|7|revs.sh --base deafa7b --head 6bffb25 --pairs 12 --seconds 3 --sizes '1048576 4096'|"
	"revs:jobs|6|revs.sh --base 6bffb25 --head 68a8d36 --pairs 12 --seconds 3 --sizes '1048576 4096'|"
	"revs:roles|9|revs.sh --base 4f9c0bf --head 34529ab --pairs 12 --seconds 3 --sizes '1048576 4096 64'|"
	"revs:roles64|4|revs.sh --base 4f9c0bf --head 34529ab --pairs 24 --seconds 3 --sizes 64|"
	"revs:model|9|revs.sh --base 4f9c0bf --head bcbdb4d --pairs 16 --seconds 3 --sizes '1048576 4096 64'|"
	"revs:model64|4|revs.sh --base 4f9c0bf --head bcbdb4d --pairs 24 --seconds 3 --sizes 64|"
	"revs:model96|16|revs.sh --base 4f9c0bf --head cda8ffb --pairs 96 --seconds 3 --sizes 64|"
	"job|8|job.sh --runs 5|--runs 1 --sizes 4096 --bytes 4194304"
	"job:1x1|3|job.sh --runs 5 --servers 1 --workers 1 --pslite @PSLITE|--runs 1 --servers 1 --workers 1 --sizes 4096 --bytes 4194304"
	"job:2x4|2|job.sh --runs 5 --sizes 1048576 --servers 2 --workers 4 --pslite @PSLITE|--runs 1 --sizes 65536 --servers 2 --workers 4 --bytes 16777216"
	"job:2x4loss|2|job.sh --runs 5 --sizes 1048576 --servers 2 --workers 4 --loss 2 --pslite @PSLITE|--runs 1 --sizes 65536 --servers 2 --workers 4 --loss 2 --bytes 16777216"
	"job:xdp|3|job.sh --runs 5 --servers 1 --workers 1 --port af_xdp --pslite @PSLITE|--runs 1 --servers 1 --workers 1 --port af_xdp --sizes 4096 --bytes 4194304"
	"ctl-hostile|11|ctl_hostile.sh --pairs 20|--pairs 1"
	"ctl:new|6|ctl.sh --pairs 120|--pairs 2"
	"ctl:old|7|PSB_BUILD=@4f9c0bf ctl.sh --pairs 120|--pairs 2"
	"soak|13|soak.sh --minutes 12|--minutes 2"
	"mc_emu|3|mc_emu.sh|--seconds 1 --receivers '10 1000' --loss 0.01"
	"mc_send|3|mc_send.sh|--pairs 1 --seconds 1"
	"mc_storm|3|mc_storm.sh|--rounds 1 --count 6 --push 0.1"
	"staleness|95|staleness.sh --workers '4 8' --pushes '0.2 0.1 0.0666666 0.05 0.0333333 0.02 0.0166666 0.0125' --posts '0.5 2' --reps 3 --duration 6 --rates '5 10'|--workers 2 --pushes '0.2 0.1' --posts '0.5 2' --reps 2 --duration 3 --rates 5"
	"passthrough|10|passthrough.sh --pairs 7 --seconds 3|--pairs 1 --seconds 2"
	"client|8|client.sh --pslite @PSLITE|--pairs 1 --seconds 1 --len 65536"
	"rpcps|10|rpcps.sh|--pairs 1 --epochs 1"
	"sweep|5|sweep.sh --reps 3|--reps 1"
)
# the revs entries' smoke: HEAD against itself, one build for all
REVS_SMOKE="--base HEAD --head HEAD --pairs 1 --seconds 1 --sizes 4096"

LIST=0
SMOKE=0
KEEP=0
PSLITE_DIR=""
ONLY=()
while [ $# -gt 0 ]; do
	case $1 in
	--list) LIST=1 ;;
	--smoke) SMOKE=1 ;;
	--keep-old) KEEP=1 ;;
	--pslite)
		[ $# -gt 1 ] || { echo "all.sh: --pslite needs a ps-lite checkout" >&2; exit 2; }
		PSLITE_DIR=$2; shift
		[ -f "$PSLITE_DIR/include/ps/ps.h" ] ||
			{ echo "all.sh: --pslite $PSLITE_DIR is not a ps-lite checkout (include/ps/ps.h)" >&2; exit 2; }
		;;
	--only)
		while [ $# -gt 1 ] && [[ "$2" != --* ]]; do ONLY+=("$2"); shift; done
		[ ${#ONLY[@]} -gt 0 ] || { echo "all.sh: --only needs a NAME or a kind" >&2; exit 2; }
		;;
	-h|--help) awk 'NR > 1 { if (!/^#/) exit; print }' "$0"; exit 0 ;;
	*) echo "all.sh: unknown option $1" >&2; exit 2 ;;
	esac
	shift
done
NAME=all.sh

# entry NAME: its fields in E_KIND E_SLOT E_MIN E_CMD E_SMOKE
entry() {
	local e n
	for e in "${PLAN[@]}"; do
		IFS='|' read -r n E_MIN E_CMD E_SMOKE <<< "$e"
		[ "$n" = "$1" ] || continue
		E_KIND=${n%%:*}
		E_SLOT=""
		[[ "$n" != *:* ]] || E_SLOT=${n#*:}
		return 0
	done
	return 1
}

# the entries asked for, in the plan's order
SEL=()
for e in "${PLAN[@]}"; do
	name=${e%%|*}
	if [ ${#ONLY[@]} = 0 ]; then SEL+=("$name"); continue; fi
	for o in "${ONLY[@]}"; do
		if [ "$o" = "$name" ] || [ "$o" = "${name%%:*}" ]; then SEL+=("$name"); break; fi
	done
done
for o in "${ONLY[@]}"; do
	printf '%s\n' "${PLAN[@]}" | cut -d'|' -f1 | grep -qx -e "$o" -e "$o:.*" ||
		{ echo "all.sh: --only $o: no such entry (all.sh --list)" >&2; exit 2; }
done

# the published runs, each to the entry it is (KIND-DATE<letter>[-SLOT])
ROOT=.
declare -A OLD=()	# entry -> the published run it replaces
missing=()
while read -r run; do
	[[ "$run" =~ ^(.+)-([0-9]{4}-[0-9]{2}-[0-9]{2})([a-z]+)(-(.+))?$ ]] ||
		{ missing+=("$run (not a KIND-DATE<letter>[-SLOT] name)"); continue; }
	name=${BASH_REMATCH[1]}${BASH_REMATCH[5]:+:${BASH_REMATCH[5]}}
	if ! entry "$name"; then
		missing+=("$run")
	elif [ -n "${OLD[$name]:-}" ]; then
		missing+=("$run (and ${OLD[$name]}: two runs of $name; one entry makes one)")
	else
		OLD[$name]=$run
	fi
done < <(python3 scripts/bench/check_docs.py --published)
if [ ${#missing[@]} -gt 0 ]; then
	echo "all.sh: the docs name runs the plan does not make (add them to PLAN in $0):" >&2
	printf '  docs/bench/%s\n' "${missing[@]}" >&2
	exit 2
fi

DATE=$(date -u +%F)
letter=""
for l in {a..z}; do
	compgen -G "docs/bench/*-$DATE$l" > /dev/null || compgen -G "docs/bench/*-$DATE$l-*" > /dev/null ||
		{ letter=$l; break; }
done
[ -n "$letter" ] || { echo "all.sh: every letter of $DATE is taken in docs/bench" >&2; exit 2; }

# new_name NAME: the run directory an entry makes now
new_name() {
	entry "$1"
	echo "${E_KIND}-$DATE$letter${E_SLOT:+-$E_SLOT}"
}

# the arguments an entry runs with (in ARGS), its pinned build (PIN_VAR, PIN_REV) and script
plan_args() {
	local cmd
	entry "$1"
	cmd=$E_CMD
	PIN_VAR="" PIN_REV=""
	if [[ "$cmd" =~ ^([A-Z_]+)=@([^ ]+)\ (.*)$ ]]; then
		PIN_VAR=${BASH_REMATCH[1]} PIN_REV=${BASH_REMATCH[2]} cmd=${BASH_REMATCH[3]}
	fi
	SCRIPT=${cmd%% *}
	[ "$SCRIPT" != "$cmd" ] && cmd=${cmd#* } || cmd=""
	if [ $SMOKE = 1 ]; then
		[ "$PIN_REV" = "" ] || PIN_REV=HEAD
		if [ "$E_KIND" = revs ]; then cmd=$REVS_SMOKE; else cmd=$E_SMOKE; fi
	fi
	eval "ARGS=($cmd)"	# the plan's own words, quoted as written above
	# --pslite @PSLITE: the checkout given, or without one the run measures psb alone
	local i
	for i in "${!ARGS[@]}"; do
		[ "${ARGS[$i]}" = @PSLITE ] || continue
		if [ -n "$PSLITE_DIR" ]; then
			ARGS[$i]=$PSLITE_DIR
		else
			unset "ARGS[$i]" "ARGS[$((i - 1))]"
		fi
	done
	ARGS=("${ARGS[@]}")
}

# words ARG...: the arguments as the plan writes them, one of several words quoted
words() {
	local a
	for a in "$@"; do
		if [[ "$a" == *[[:space:]]* || -z "$a" ]]; then printf " '%s'" "$a"; else printf ' %s' "$a"; fi
	done
}

total=0
for name in "${SEL[@]}"; do
	entry "$name"
	total=$((total + E_MIN))
done
[ $SMOKE = 1 ] && total=$(( ${#SEL[@]} + 4 ))	# a minute or so each, and a build
printf 'all.sh: %d runs into docs/bench/*-%s%s*, about %d h %02d min%s\n' "${#SEL[@]}" "$DATE" \
	"$letter" $((total / 60)) $((total % 60)) "$([ $SMOKE = 1 ] && echo ' (smoke: a scratch copy)')"
# same_args SCRIPT ARG... : whether the published run ($old) ran SCRIPT with these arguments,
# as its ABOUT.txt's command says (its --out aside, quoting aside)
same_args() {
	python3 - "docs/bench/$old/ABOUT.txt" "$@" <<'PY'
import shlex, sys
cmd = next((l[8:] for l in open(sys.argv[1]) if l.startswith("command ")), "")
w = shlex.split(cmd)
if "--out" in w:
    i = w.index("--out")
    del w[i:i + 2]
sys.exit(0 if w and w[0].endswith("/" + sys.argv[2]) and w[1:] == sys.argv[3:] else 1)
PY
}

for name in "${SEL[@]}"; do
	plan_args "$name"
	printf '  %-26s %3s min, replaces %s\n      %sscripts/bench/%s%s\n' "$(new_name "$name")" \
		"$E_MIN" "${OLD[$name]:-nothing (no doc names a run of it yet)}" \
		"${PIN_VAR:+$PIN_VAR=<a build of $PIN_REV> }" "$SCRIPT" "$(words "${ARGS[@]}")"
	old=${OLD[$name]:-}
	if [ $SMOKE = 0 ] && [ -n "$old" ] && ! same_args "$SCRIPT" "${ARGS[@]}"; then
		echo "      (the published run's: $(sed -n 's/^command //p' "docs/bench/$old/ABOUT.txt" |
			sed 's/ *--out [^ ]*//'))"
	fi
done
# the machine the figures will be of (each run's ABOUT.txt has it whole)
echo "machine: kernel $(uname -r); $(bench_machine | grep -E '^(simd|hugepages)' | tr '\n' ';' |
	sed 's/;$//; s/;/; /g')"
[ "$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)" != 0 ] ||
	echo "all.sh: no hugepages free: psb will run without them, unlike the runs it replaces" \
		"(scripts/setup.sh reserves them)"
[ $LIST = 1 ] && exit 0

[ "$(id -u)" = 0 ] || { echo "all.sh: needs root (namespaces: job, ctl_hostile, staleness)" >&2; exit 1; }
bench_built "$PSB" "$PSBCTL" "$KSRV" "$KBENCH"
ninja -C "$BUILD" > /dev/null || { echo "all.sh: $BUILD does not build" >&2; exit 1; }

WORK=$(mktemp -d /tmp/psb-bench-all-XXXXXX)
export PSB_BENCH_BUILDS=$WORK/builds	# revisions built once for every run that asks
if [ $SMOKE = 1 ]; then
	# a copy of the docs and their runs: the pipeline runs there, the tree stays as it is
	ROOT=$WORK/root
	mkdir -p "$ROOT/docs"
	cp README.md "$ROOT/"
	cp docs/*.md "$ROOT/docs/"
	cp -r docs/bench "$ROOT/docs/"
	trap 'rm -rf "$WORK"' EXIT
else
	trap 'rm -rf "$PSB_BENCH_BUILDS"; rmdir "$WORK" 2> /dev/null || true' EXIT
fi
mkdir -p "$PSB_BENCH_BUILDS"

declare -A STATUS=() TOOK=()
moves=()
failed=()
k=0
for name in "${SEL[@]}"; do
	k=$((k + 1))
	new=$(new_name "$name")
	plan_args "$name"
	out=$ROOT/docs/bench/$new
	out=${out#./}		# as the docs write it, in the run's ABOUT.txt
	env=()
	if [ -n "$PIN_VAR" ]; then
		if ! b=$(bench_build_rev "$PIN_REV" "$WORK/pin"); then
			STATUS[$name]="failed: $PIN_REV does not build"
			failed+=("$name")
			continue
		fi
		env=("$PIN_VAR=$b" "PSB_BENCH_BASELINE=$PIN_REV")
	fi
	printf '\nall.sh [%d/%d] %s: %s%s --out %s (about %s min)\n' "$k" "${#SEL[@]}" "$new" \
		"$SCRIPT" "$(words "${ARGS[@]}")" "$out" "$E_MIN" >&2
	t0=$(date +%s)
	rc=0
	env "${env[@]}" "scripts/bench/$SCRIPT" "${ARGS[@]}" --out "$out" || rc=$?
	t=$(( $(date +%s) - t0 ))
	TOOK[$name]=$(printf '%d:%02d' $((t / 60)) $((t % 60)))
	if [ $rc = 0 ] && [ -f "$out/summary.md" ] && [ -f "$out/raw.tar.xz" ]; then
		STATUS[$name]="done"
		[ -z "${OLD[$name]:-}" ] || moves+=("${OLD[$name]}=$new")
	else
		STATUS[$name]="failed ($rc)"
		failed+=("$name")
		echo "all.sh: $new failed (status $rc); the others go on" >&2
	fi
done

# the docs name the new runs, their tables written from them and checked
status=0
if [ ${#moves[@]} -gt 0 ]; then
	python3 scripts/bench/check_docs.py --repoint "${moves[@]}" "$ROOT"
	python3 scripts/bench/check_docs.py --update "$ROOT" || status=1
fi
# the runs no doc names any more (a failed one of this time kept, for its log)
keep=()
for name in "${failed[@]}"; do keep+=("$(new_name "$name")"); done
while read -r run; do
	[ -n "$run" ] || continue
	if printf '%s\n' "${keep[@]}" | grep -qx -- "$run" || [ $KEEP = 1 ]; then
		echo "all.sh: kept docs/bench/$run, which no doc names"
	else
		echo "all.sh: removing docs/bench/$run: no doc names it any more"
		rm -rf "${ROOT:?}/docs/bench/$run"
	fi
done < <(python3 scripts/bench/check_docs.py --unnamed "$ROOT")

echo
printf '%-14s %-26s %-26s %6s  %s\n' "entry" "run" "replaced" "took" "status"
for name in "${SEL[@]}"; do
	printf '%-14s %-26s %-26s %6s  %s\n' "$name" "$(new_name "$name")" "${OLD[$name]:--}" \
		"${TOOK[$name]:--}" "${STATUS[$name]}"
done
if [ $SMOKE = 1 ]; then
	echo "all.sh: smoke run in $ROOT: every step went through${failed[*]:+, but for: ${failed[*]}}; removed"
else
	echo "all.sh: commit docs/bench, README.md and docs/*.md; read the prose around each table again"
fi
[ ${#failed[@]} = 0 ] || status=1
exit $status
