#!/bin/bash
# psb touches only its own files: a file prefix is a name (a path in it is refused and a decoy
# where it would have led survives), a runtime directory holding another's file is left with
# it, and documents' output paths stay inside the results directory (--config,
# --check-config, the control socket's load and start); an absolute --output-dir given on
# the command line is where results go.
#
# usage: test_paths.sh PATH/psb PATH/psbctl
set -uo pipefail
PSB=$1
PSBCTL=$2
DIR=$(mktemp -d /tmp/psbt-paths-XXXXXX)
PFX=psbt-p$$
RUNBASE=/var/run/dpdk
[ "$(id -u)" = 0 ] || RUNBASE=${XDG_RUNTIME_DIR:-/tmp}/dpdk
DECOY=$(dirname "$RUNBASE")/psbt-decoy$$
WPID=
cleanup() {
	[ -n "$WPID" ] && { kill -TERM "$WPID" 2>/dev/null; sleep 0.5; kill -KILL "$WPID" 2>/dev/null; }
	wait 2>/dev/null
	rm -rf "$DIR" "$DECOY" "$RUNBASE/$PFX"-*
}
trap cleanup EXIT
trap 'exit 143' TERM INT
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
NULL=(--port null --ip 198.18.0.1 --no-huge -l 0)

# refused RC WORDS OUT -- CMD...: CMD exits RC and its output holds WORDS.
refused() {
	local want=$1 words=$2 out rc
	shift 3
	out=$(timeout -k 5 30 "$@" 2>&1 </dev/null)
	rc=$?
	[ $rc -eq "$want" ] || fail "$* exited $rc, expected $want: $(tail -3 <<<"$out")"
	grep -qF -- "$words" <<<"$out" || fail "$*: no '$words' in: $(tail -3 <<<"$out")"
	ok "$(tail -1 <<<"$out")"
}

# --- a prefix with '/' or '..' names another directory: refused before anything is touched
mkdir -p "$DECOY"
echo keep >"$DECOY/precious"
refused 2 "node.file_prefix: expected a name" -- "$PSB" "${NULL[@]}" --duration 0.5 \
	--file-prefix "../psbt-decoy$$"
refused 2 "node.file_prefix: expected a name" -- "$PSB" "${NULL[@]}" --duration 0.5 \
	--file-prefix "$DECOY"
refused 2 "EAL option --file-prefix after --" -- "$PSB" "${NULL[@]}" --duration 0.5 \
	-- --file-prefix="../psbt-decoy$$"
refused 2 "EAL option --file after --" -- "$PSB" "${NULL[@]}" --duration 0.5 \
	-- --file "../psbt-decoy$$"
cat >"$DIR/prefix.json" <<EOF
{"name": "p", "kind": "serve", "node": {"role": "server", "ports": ["null"], "ip": "198.18.0.1",
 "huge": "no", "file_prefix": "../psbt-decoy$$"}, "serve": {"duration": "0.5s"}}
EOF
refused 2 "node.file_prefix: expected a name" -- "$PSB" --config "$DIR/prefix.json"
refused 2 "node.file_prefix: expected a name" -- "$PSB" --check-config "$DIR/prefix.json"
[ "$(cat "$DECOY/precious" 2>/dev/null)" = keep ] || fail "the decoy next to the runtime dirs is gone"
ok "decoy $DECOY/precious untouched"

# --- a runtime directory that holds another's file keeps it, and psb says so
mkdir -p "$RUNBASE/$PFX-f"
echo mine >"$RUNBASE/$PFX-f/foreign.txt"
out=$(timeout -k 5 60 "$PSB" "${NULL[@]}" --duration 0.5 --file-prefix "$PFX-f" 2>&1)
rc=$?
[ $rc -eq 0 ] || fail "psb with a foreign file in its runtime dir exited $rc: $(tail -3 <<<"$out")"
[ "$(cat "$RUNBASE/$PFX-f/foreign.txt" 2>/dev/null)" = mine ] || fail "foreign file removed"
grep -q "left $RUNBASE/$PFX-f in place: it holds \"foreign.txt\", which psb did not create" \
	<<<"$out" || fail "psb did not say it left the directory: $(tail -3 <<<"$out")"
ls "$RUNBASE/$PFX-f" | grep -qv '^foreign.txt$' && fail "psb left its own files: $(ls "$RUNBASE/$PFX-f")"
ok "foreign file kept, EAL files removed, said so"
# a directory psb made itself goes at exit
timeout -k 5 60 "$PSB" "${NULL[@]}" --duration 0.5 --file-prefix "$PFX-n" -q ||
	fail "plain run exited $?"
[ -e "$RUNBASE/$PFX-n" ] && fail "psb left its own runtime directory behind"
ok "own runtime directory removed"

# --- documents: output paths relative, inside the results directory
serve_doc() {	# FILE NAME OUTPUT-JSON
	cat >"$1" <<EOF
{"name": "$2", "kind": "serve", "node": {"role": "server", "ports": ["null"],
 "ip": "198.18.0.1", "huge": "no", "file_prefix": "$PFX-$2"}, "serve": {"duration": "0.3s"},
 "output": $3}
EOF
}
serve_doc "$DIR/abs.json" abs '{"dir": "/etc"}'
serve_doc "$DIR/up.json" up '{"dir": "results/../../x"}'
serve_doc "$DIR/cabs.json" cabs '{"counters_file": "/tmp/psbt-c.jsonl"}'
for opt in --config --check-config; do
	refused 2 'output.dir: must be relative and inside the results directory, got "/etc"' -- \
		"$PSB" $opt "$DIR/abs.json"
	refused 2 'output.dir: must be relative and inside the results directory (no "..")' -- \
		"$PSB" $opt "$DIR/up.json"
	refused 2 'output.counters_file: must be relative' -- "$PSB" $opt "$DIR/cabs.json"
done
[ -e /etc/abs ] && fail "results written under /etc"

# ... and over the control socket: load and start, and set
cd "$DIR" || fail "cd $DIR"
timeout -k 5 120 "$PSB" "${NULL[@]}" --file-prefix "$PFX-w" --wait --ctl "$DIR/w.ctl" \
	>"$DIR/w.log" 2>&1 &
WPID=$!
for _ in $(seq 150); do "$PSBCTL" --ctl "$DIR/w.ctl" status >/dev/null 2>&1 && break; sleep 0.1; done
echo '{"name": "s", "kind": "serve", "output": {"dir": "/tmp"}}' >"$DIR/s-abs.json"
echo '{"name": "s", "kind": "serve", "output": {"dir": "a/../.."}}' >"$DIR/s-up.json"
echo '{"name": "s", "kind": "serve", "output": {"counters_file": "../c.jsonl"}}' >"$DIR/s-c.json"
for cmd in load start; do
	refused 1 'output.dir: must be relative and inside the results directory, got "/tmp"' -- \
		"$PSBCTL" --ctl "$DIR/w.ctl" $cmd "$DIR/s-abs.json"
	refused 1 'output.dir: must be relative' -- "$PSBCTL" --ctl "$DIR/w.ctl" $cmd "$DIR/s-up.json"
	refused 1 'output.counters_file: must be relative' -- \
		"$PSBCTL" --ctl "$DIR/w.ctl" $cmd "$DIR/s-c.json"
done
refused 1 'output.dir: must be relative' -- "$PSBCTL" --ctl "$DIR/w.ctl" set output.dir /var
"$PSBCTL" --ctl "$DIR/w.ctl" quit >/dev/null || fail "quit"
wait "$WPID" || fail "appliance exited with $?: $(tail -3 "$DIR/w.log")"
WPID=

# --- an absolute --output-dir from the command line is where results go
serve_doc "$DIR/good.json" good '{"dir": "res", "counters_file": "c.jsonl"}'
mkdir "$DIR/elsewhere"
(cd "$DIR/elsewhere" && timeout -k 5 60 "$PSB" --config "$DIR/good.json" \
	--output-dir "$DIR/out" -q >"$DIR/good.log" 2>&1) || fail "--output-dir run: $(tail -3 "$DIR/good.log")"
[ -s "$DIR/out/res/good/result.json" ] || fail "no results in $DIR/out/res/good: $(cat "$DIR/good.log")"
[ -s "$DIR/out/res/c.jsonl" ] || fail "no counters file in $DIR/out/res"
[ -e "$DIR/elsewhere/res" ] && fail "results went to the working directory"
grep -q "results: $DIR/out/res/good/" "$DIR/good.log" || fail "results not announced: $(cat "$DIR/good.log")"
ok "--output-dir $DIR/out holds the results"
echo "paths: prefixes are names, foreign files kept, outputs confined"
