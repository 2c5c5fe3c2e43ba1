# shellcheck shell=bash disable=SC2034  # what it sets is the sourcing script's
# Sourced by the benchmark scripts (from the tree's root): their command line, output
# directory, scratch space and clean-up, the psb runs they share and the record of the plan.
# Brings provenance.sh along.
. scripts/bench/provenance.sh

BUILD=${PSB_BUILD:-build}
PSB=$BUILD/app/psb/psb
PSBCTL=$BUILD/app/psbctl/psbctl
KSRV=$BUILD/app/psb-ksrv/psb-ksrv
KBENCH=$BUILD/app/psb-ksrv/psb-kbench
OUT=""
n=0		# runs started: numbers their sockets, file prefixes and ports
BENCH_DONE=0
declare -A BENCH_OPTS=() BENCH_FLAGS=()

# bench_options NAME ARGS...: the script's command line. BENCH_OPTS maps each option that
# takes a value to the variable it sets, BENCH_FLAGS each flag to the assignments it makes
# (evaluated where the flag stands, so that later options override them). -h, --help prints
# the script's opening comment, --version psb's version and the tree's revision. Sets NAME
# (for messages) and COMMAND (for ABOUT.txt). With BENCH_ARGS_ONLY=FRONT in the environment
# it checks the command line only, speaking as FRONT, and exits 0: a front end that passes
# its options on (quickstart.sh) refuses a bad one before its slow start.
bench_options() {
	local a
	NAME=${BENCH_ARGS_ONLY:-$1}
	shift
	# the command as given: an argument of several words quoted, as all.sh repeats it
	COMMAND="scripts/bench/$NAME"
	for a in "$@"; do
		if [[ "$a" == *[[:space:]]* || -z "$a" ]]; then COMMAND+=" \"$a\""; else COMMAND+=" $a"; fi
	done
	while [ $# -gt 0 ]; do
		if [ -n "${BENCH_OPTS[$1]:-}" ]; then
			[ $# -ge 2 ] || { echo "$NAME: option '$1' requires an argument; try" \
				"'$NAME --help'" >&2; exit 2; }
			printf -v "${BENCH_OPTS[$1]}" '%s' "$2"
			shift
		elif [ -n "${BENCH_FLAGS[$1]:-}" ]; then
			eval "${BENCH_FLAGS[$1]}"
		elif [ "$1" = -h ] || [ "$1" = --help ]; then
			awk 'NR > 1 { if (!/^#/) exit; print }' "$0"
			exit 0
		elif [ "$1" = --version ]; then
			scripts/version.sh line "$NAME"
			exit 0
		else
			echo "$NAME: unrecognized option '$1'; try '$NAME --help'" >&2
			exit 2
		fi
		shift
	done
	[ -z "${BENCH_ARGS_ONLY:-}" ] || exit 0
}

# bench_build_rev REV DIR: REV's tree (git archive: no worktree of the repository touched)
# with psb and psbctl built in DIR/build, without the tests; prints DIR/build. With
# PSB_BENCH_BUILDS set, the build is kept there by commit (DIR ignored) and used again when a
# later run asks for the same commit.
bench_build_rev() {
	local rev=$1 dir=$2 sha
	sha=$(git rev-parse --verify -q "$rev^{commit}") || { echo "$NAME: no revision $rev" >&2; return 2; }
	[ -z "${PSB_BENCH_BUILDS:-}" ] || dir=$PSB_BENCH_BUILDS/$sha
	if [ ! -e "$dir/.built" ]; then
		echo "$NAME: building $rev ($sha)" >&2
		rm -rf "$dir"
		mkdir -p "$dir"
		git archive "$sha" | tar -x -C "$dir" || { echo "$NAME: cannot unpack $rev" >&2; return 1; }
		# psbctl too where the revision has it (ctl.sh runs an older build whole)
		(cd "$dir" && meson setup build -Dtests=disabled > build.log 2>&1 &&
			ninja -C build app/psb/psb >> build.log 2>&1 &&
			{ ninja -C build app/psbctl/psbctl >> build.log 2>&1 || true; }) ||
			{ echo "$NAME: $rev does not build (see $dir/build.log)" >&2; return 1; }
		touch "$dir/.built"
	fi
	echo "$dir/build"
}

# bench_built BIN...: exits unless every BIN is built
bench_built() {
	local b
	for b in "$@"; do
		[ -x "$b" ] || { echo "$NAME: $b not built (meson setup $BUILD && ninja -C $BUILD)" >&2; exit 1; }
	done
}

# bench_out KIND: OUT (--out, else results/KIND-DATE-TIME) with its raw/; one a run already
# wrote into is refused, so that no run's figures mix with another's.
bench_out() {
	[ -n "$OUT" ] || OUT=results/$1-$(date +%Y%m%d-%H%M%S)
	if [ -e "$OUT/summary.json" ] || [ -d "$OUT/raw" ] || [ -e "$OUT/raw.tar.xz" ]; then
		echo "$NAME: $OUT already holds results; give another --out (or remove it)" >&2
		exit 2
	fi
	mkdir -p "$OUT/raw"
}

# bench_scratch TAG: TMP, a scratch directory, and PIDS, where the script adds the processes
# it starts; on any exit they are killed, bench_cleanup runs (when the script has one) and
# TMP and the DPDK runtime files of the file prefixes TAG-$$-* (BENCH_PREFIX-*) go.
bench_scratch() {
	BENCH_PREFIX=$1-$$
	TMP=$(mktemp -d "/tmp/psb-$1-XXXXXX")
	PIDS=()
	trap bench_exit EXIT
	trap 'exit 130' INT TERM
}

bench_exit() {
	local p
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	wait 2>/dev/null || true
	if declare -F bench_cleanup > /dev/null; then bench_cleanup; fi
	rm -rf "$TMP" /var/run/dpdk/"$BENCH_PREFIX"-*
}

# bench_plan NAME=VALUE...: raw/plan.json, what the summary needs of the command line. A
# VALUE in [...] is a list of its words; whole numbers are numbers.
bench_plan() {
	python3 - "$@" > "$OUT/raw/plan.json" <<'PY'
import json, sys
def value(w):
    return int(w) if w.isdigit() else w
plan = {}
for arg in sys.argv[1:]:
    k, v = arg.split("=", 1)
    plan[k] = [value(w) for w in v[1:-1].split()] if v.startswith("[") else value(v)
print(json.dumps(plan))
PY
}

# bench_pslite DIR: ps-lite itself, built from the checkout DIR in $TMP/pslite (its code never
# enters the tree; ZeroMQ and protobuf from Debian, installed when missing), and
# tests/pslite/bench_pushpull.cc compiled against it: PSLITE_REAL is that program, and
# PSLITE_ABOUT the line ABOUT.txt gets. Exits when DIR is no checkout or does not build.
bench_pslite() {
	local dir=$1 missing=() p f
	[ -f "$dir/src/meta.proto" ] && [ -f "$dir/include/ps/ps.h" ] ||
		{ echo "$NAME: --pslite $dir is not a ps-lite checkout (src/meta.proto, include/ps/ps.h)" >&2; exit 2; }
	for p in protobuf-compiler libprotobuf-dev libzmq3-dev; do
		dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
			missing+=("$p")
	done
	if [ ${#missing[@]} -ne 0 ]; then
		echo "$NAME: installing ${missing[*]} to build ps-lite" >&2
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
			"${missing[@]}" >/dev/null
	fi
	mkdir -p "$TMP/pslite/build"
	cp -r "$dir/include" "$dir/src" "$TMP/pslite/"
	(
		cd "$TMP/pslite"
		protoc --cpp_out=./src --proto_path=./src src/meta.proto
		for f in customer postoffice van meta.pb; do
			g++ -std=c++11 -msse2 -fPIC -O3 -I./src -I./include -c "src/$f.cc" \
				-o "build/$f.o" -pthread
		done
		ar cr build/libps.a build/*.o
	) > "$TMP/pslite.log" 2>&1 || { cat "$TMP/pslite.log" >&2; echo "$NAME: ps-lite does not build" >&2; exit 1; }
	g++ -std=c++11 -O3 -I"$TMP/pslite/include" -o "$TMP/bench_pslite" \
		tests/pslite/bench_pushpull.cc "$TMP/pslite/build/libps.a" -lzmq -lprotobuf -pthread \
		> "$TMP/pslite.log" 2>&1 ||
		{ cat "$TMP/pslite.log" >&2; echo "$NAME: the program does not build against ps-lite" >&2; exit 1; }
	PSLITE_REAL=$TMP/bench_pslite
	PSLITE_ABOUT="pslite $(git -C "$dir" rev-parse HEAD 2>/dev/null || echo "$dir"), built with g++ -O3 (ps-lite's flags), ZeroMQ and protobuf from Debian"
}

# bench_pslite_goodput TOOL LOG OUT: the ps-lite program's goodput line of LOG
# (tests/pslite/bench_pushpull.cc, under psb's header or ps-lite itself) as OUT's JSON
bench_pslite_goodput() {
	python3 - "$1" "$2" "$3" <<'PY'
import json, re, sys
m = re.search(r"mode (\d+): (\d+) x (\d+) keys of (\d+) B in ([\d.e+-]+) s, goodput ([\d.e+-]+) Gbps",
              open(sys.argv[2]).read())
if not m:
    sys.exit("the ps-lite program printed no goodput line (%s)" % sys.argv[2])
mode, it, keys, length, secs, gbps = m.groups()
json.dump({"tool": sys.argv[1], "mode": int(mode), "iterations": int(it), "keys": int(keys),
           "len": int(length), "elapsed_s": float(secs), "goodput_gbps": float(gbps)},
          open(sys.argv[3], "w"))
PY
}

# bench_pslite_job OUT LEN MODE KEYS SECS SCPU WCPU: the ps-lite program under ps-lite itself
# ($PSLITE_REAL, bench_pslite): its scheduler, its server on CPU SCPU and the worker on CPU
# WCPU, over ZeroMQ/TCP on loopback; the worker's goodput as OUT's JSON. Exits on failure with
# the three logs.
bench_pslite_job() {
	local out=$1 len=$2 mode=$3 keys=$4 secs=$5 scpu=$6 wcpu=$7 port pids=() i
	port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
	export DMLC_PS_ROOT_URI=127.0.0.1 DMLC_PS_ROOT_PORT=$port DMLC_NUM_WORKER=1 \
		DMLC_NUM_SERVER=1 DMLC_INTERFACE=lo DMLC_NODE_HOST=127.0.0.1
	DMLC_ROLE=scheduler "$PSLITE_REAL" "$len" "$mode" "$keys" "$secs" > "$TMP/real-sched.log" 2>&1 &
	pids+=($!)
	DMLC_ROLE=server taskset -c "$scpu" "$PSLITE_REAL" "$len" "$mode" "$keys" "$secs" \
		> "$TMP/real-srv.log" 2>&1 &
	pids+=($!)
	PIDS+=("${pids[@]}")
	if ! DMLC_ROLE=worker timeout $((secs + 60)) taskset -c "$wcpu" "$PSLITE_REAL" "$len" \
			"$mode" "$keys" "$secs" > "$TMP/real-wk.log" 2>&1; then
		echo "$NAME: ps-lite's job failed:" >&2
		cat "$TMP/real-wk.log" "$TMP/real-srv.log" "$TMP/real-sched.log" >&2
		exit 1
	fi
	for i in "${pids[@]}"; do timeout 30 tail --pid="$i" -f /dev/null || kill -9 "$i"; done
	unset DMLC_PS_ROOT_URI DMLC_PS_ROOT_PORT DMLC_NUM_WORKER DMLC_NUM_SERVER DMLC_INTERFACE \
		DMLC_NODE_HOST
	bench_pslite_goodput pslite-real "$TMP/real-wk.log" "$out"
}

# bench_finish KIND: the end of a run: its raw data packed into raw.tar.xz (raw/ removed;
# a run stopped before keeps raw/, which summarize.py reads as well), then its summary made
# from them. Returns the summary's status.
bench_finish() {
	python3 scripts/bench/rawdata.py pack "$OUT" > /dev/null || return 1
	python3 scripts/bench/summarize.py "$1" "$OUT"
}

# bench_abba PAIR A B: A B for odd pairs, B A for even ones, so that neither always runs first
bench_abba() {
	if [ $(($1 % 2)) = 1 ]; then echo "$2 $3"; else echo "$3 $2"; fi
}

# bench_progress TOTAL UNIT: one more run done, counted on stderr
bench_progress() {
	BENCH_DONE=$((BENCH_DONE + 1))
	printf '\r  %d/%d %s' "$BENCH_DONE" "$1" "$2" >&2
}

# bench_against WHAT SPID SECONDS CMD...: the client CMD against the server SPID just started
# (its output in $TMP/srv.log), bounded by SECONDS + 60; when it fails, says that WHAT failed
# with both outputs and exits. Then ends the server.
bench_against() {
	local what=$1 spid=$2 secs=$3
	shift 3
	if ! timeout $((secs + 60)) "$@" > "$TMP/wk.log" 2>&1; then
		echo "$what failed:" >&2
		cat "$TMP/wk.log" "$TMP/srv.log" >&2
		exit 1
	fi
	kill -TERM "$spid" 2>/dev/null || true
	wait "$spid" 2>/dev/null || true
}

# bench_memif WHAT PSB SECONDS RESULT MODE SERVER_LCORE WORKER_LCORE ARGS...: ps-lite's
# test_benchmark for SECONDS, a psb server and a psb worker over memif (MODE: --sync or
# --async), the worker's result in RESULT; ARGS (--len, --mode, --keys, ...) are the worker's.
bench_memif() {
	local what=$1 psb=$2 secs=$3 res=$4 mode=$5 slcore=$6 wlcore=$7 sock spid
	shift 7
	n=$((n + 1))
	sock=$TMP/m$n.sock
	"$psb" --role server --port "memif:server:$sock" --ip 198.18.0.1 "$mode" -l "$slcore" \
		--file-prefix "$BENCH_PREFIX-s$n" -q > "$TMP/srv.log" 2>&1 &
	spid=$!
	PIDS+=("$spid")
	# the server's control socket appears once its port runs
	for _ in $(seq 100); do [ -S "/var/run/dpdk/$BENCH_PREFIX-s$n/psb.ctl" ] && break; sleep 0.1; done
	bench_against "$what" "$spid" "$secs" "$psb" --role worker --port "memif:client:$sock" \
		--ip 198.18.0.2 --server 198.18.0.1 "$mode" -l "$wlcore" --file-prefix "$BENCH_PREFIX-w$n" \
		--repeat 1000000000 --duration "$secs" --results "$res" -q "$@"
}
