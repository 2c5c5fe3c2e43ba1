#!/bin/bash
# The psb> console: commands piped into -i, --cmdline-file, Tab completion in a tmux terminal
# while the control socket of the same process answers, and an experiment driven from the
# console over memif (load, start, wait, show experiment).
set -euo pipefail
PSB=$1
DIR=$(mktemp -d /tmp/psbt-con-XXXXXX)
PFX=psbt-con$$
TMX=(tmux -S "$DIR/tmux.sock" -f /dev/null)
# Every psb of this test has $PFX in its command line, or a document under $DIR.
cleanup() {
	local p
	for p in $(pgrep -f -- "$PFX-|$DIR/" 2>/dev/null); do
		[ "$p" != $$ ] && kill -9 "$p" 2>/dev/null || true
	done
	"${TMX[@]}" kill-server 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$DIR" /var/run/dpdk/"$PFX"-*
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
fail() { echo "FAIL: $*" >&2; exit 1; }
# expect FILE REGEX WHAT: FILE has a line matching REGEX (extended)
expect() { grep -Eq -- "$2" "$1" || { sed 's/^/    | /' "$1" >&2; fail "$3"; }; }
expect_not() { ! grep -Eq -- "$2" "$1" || { sed 's/^/    | /' "$1" >&2; fail "$3"; }; }
command -v tmux >/dev/null || fail "tmux is not installed"

# A server on a null port: nothing to talk to, it just stays up (run to completion, lcore 0).
NULLSRV=(--port null --ip 198.18.0.1 --no-huge -l 0)

# 1. Commands piped into -i. The command after quit must not run; \r from the echo is dropped.
printf '%s\n' help 'show roles' 'show port stats all' 'show lcores' 'show counters rx0' \
	'show rdma' 'show counters store' 'set pushpull.len banana' 'show port stats 9' 'frobnicate' \
	'clear port stats all' quit 'show experiment' |
	timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-a" -i 2>"$DIR/a.err" |
	tr -d '\r' >"$DIR/a.out" || fail "psb -i with piped commands exited with $?: $(cat "$DIR/a.err")"
A=$DIR/a.out
for c in 'show port stats\|xstats\|info all' 'show port stats\|xstats\|info <port_id>' 'show lcores' \
	'show roles' 'show counters:' 'show counters <role>' 'show experiment' 'load <file>' \
	'start:' 'start <file>' 'stop:' 'reset:' 'set <param> <value>' 'clear port stats all' \
	'clear port stats <port_id>' 'wait:' 'help:' 'quit:' 'show rdma:'; do
	expect "$A" "^  $c" "help does not list \"$c\""
done
expect "$A" '^psb> show roles$' "commands are not echoed after the prompt"
expect "$A" '^ROLE +INST +LCORE +RX-PKTS +TX-PKTS +DROPS +RING-FULL +BUSY%$' "show roles: header"
for r in rx tx agent server; do
	expect "$A" "^$r +0 +0 +[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ +[0-9.]+$" "show roles: no $r 0 on lcore 0"
done
expect "$A" 'NIC statistics for port 0 +\(null\)' "show port stats all: no port 0"
expect "$A" '^  RX-packets: [0-9]+ +RX-missed: [0-9]+ +RX-bytes: [0-9]+$' "show port stats: RX line"
expect "$A" '^  TX-packets: [0-9]+ +TX-errors: [0-9]+ +TX-bytes: [0-9]+$' "show port stats: TX line"
expect "$A" '^LCORE +BUSY% +ROLES$' "show lcores: header"
expect "$A" '^ +0 +[0-9.]+ +rx0 tx0 agent0 server0$' "show lcores: lcore 0 does not run all roles"
# show rdma: the line after it is rdma-core's view, or why there is none. Without ib_core (no
# /sys/class/infiniband) rdma-core says ENOSYS, which psb words as the kernel's reason.
RDMA=$(sed -n '/^psb> show rdma$/{n;p;q}' "$A")
NO_RDMA='no RDMA support in this kernel (ibv_get_device_list: Function not implemented; the'
NO_RDMA+=' kernel has no InfiniBand/RDMA subsystem)'
if [ ! -d /sys/class/infiniband ]; then
	[ "$RDMA" = "$NO_RDMA" ] || fail "show rdma: '$RDMA', not the kernel's reason"
elif [ -z "$(ls /sys/class/infiniband)" ]; then
	[ "$RDMA" = 'no RDMA devices (rdma-core sees none)' ] || fail "show rdma: '$RDMA'"
else
	[[ "$RDMA" == *' transport, node GUID '* ]] || fail "show rdma: no device line: '$RDMA'"
fi
# counters as psbctl prints them: "path value", the whole path (rx0 is found under roles)
expect "$A" '^roles\.rx0\.rx_pkts [0-9]+$' "show counters rx0: not the roles.rx0 counters"
expect "$A" '^roles\.rx0\.drops\.ethertype [0-9]+$' "show counters rx0: drops not flattened"
expect "$A" '^roles\.rx0\.lcore 0$' "show counters rx0: no lcore"
expect "$A" '^roles\.rx0\.busy_pct [0-9.]+$' "show counters rx0: busy_pct"
expect "$A" '^store\.rounds_closed 0$' "show counters store: a top-level path"
expect "$A" '^error: invalid: pushpull\.len: .*banana' \
	"set with a bad value: the error names no parameter"
expect "$A" '^error: not_found: no counters at "ports\.9"' \
	"show port stats 9: no error for a missing port"
expect "$A" '^Command not found$' "an unknown command is not refused"
expect "$A" '^port statistics cleared on 1 port\(s\)$' "clear port stats all"
expect "$A" '^psb is quitting$' "quit"
expect_not "$A" '^role: server' "a command after quit ran"
echo "console: piped commands ok"

# 2. The end of piped input ends the console, and psb with it.
printf 'show lcores\n' | timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-b" -i \
	2>"$DIR/b.err" | tr -d '\r' >"$DIR/b.out" || fail "psb -i exited with $? at end of input"
expect "$DIR/b.out" '^LCORE' "show lcores before the end of input"

# 3. --cmdline-file without -i: the script's last line has no newline and still runs (else
# psb would stay up and the timeout would fail the test).
printf 'show roles\nset pushpull.repeat many\nshow counters node\nquit' >"$DIR/script"
timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-c" --cmdline-file "$DIR/script" \
	</dev/null 2>"$DIR/c.err" | tr -d '\r' >"$DIR/c.out" ||
	fail "psb --cmdline-file exited with $?: $(cat "$DIR/c.err")"
expect "$DIR/c.out" '^psb> show roles$' "--cmdline-file: commands not echoed"
expect "$DIR/c.out" '^rx +0 +0 ' "--cmdline-file: show roles did not run"
expect "$DIR/c.out" '^error: invalid: pushpull\.repeat: ' "--cmdline-file: set error"
expect "$DIR/c.out" '^node\.role server$' "--cmdline-file: show counters node"
expect "$DIR/c.out" '^psb> quit$' "--cmdline-file: the last line did not run"

# --cmdline-file with -i: the script first, then stdin.
printf 'show lcores\n' >"$DIR/script2"
printf 'show experiment\nquit\n' | timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-d" \
	--cmdline-file "$DIR/script2" -i 2>"$DIR/d.err" | tr -d '\r' >"$DIR/d.out" ||
	fail "psb --cmdline-file -i exited with $?: $(cat "$DIR/d.err")"
grep -Eo '^(LCORE|role: server)' "$DIR/d.out" | tr '\n' ' ' >"$DIR/d.order"
[ "$(cat "$DIR/d.order")" = "LCORE role: server " ] ||
	{ cat "$DIR/d.out" >&2; fail "--cmdline-file -i: script then stdin, got: $(cat "$DIR/d.order")"; }
expect "$DIR/d.out" 'nothing loaded' "--cmdline-file -i: show experiment from stdin"

# A script that cannot be read stops psb with its reason.
rc=0
timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-e" --cmdline-file "$DIR/nonexistent" \
	</dev/null >"$DIR/e.out" 2>"$DIR/e.err" || rc=$?
[ "$rc" = 2 ] || fail "a missing --cmdline-file: exit $rc, want 2"
expect "$DIR/e.err" "cmdline-file $DIR/nonexistent: No such file" "a missing --cmdline-file: reason"
# Files are read from regular files of at most node.file_max only, by the main lcore between
# passes: a FIFO (whose open would wait for a writer), a device, a directory, a script over
# --file-max are refused at once with what they are.
mkfifo "$DIR/fifo"
for f in "$DIR/fifo" /dev/zero "$DIR"; do
	rc=0
	timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-f" --cmdline-file "$f" \
		</dev/null >"$DIR/f.out" 2>"$DIR/f.err" || rc=$?
	[ "$rc" = 2 ] || fail "--cmdline-file $f: exit $rc, want 2"
	expect "$DIR/f.err" "^psb: --cmdline-file $f: is a (FIFO|character device|directory), not a \
regular file" "--cmdline-file $f: reason"
done
python3 -c 'print("show lcores\n" * 300, end="")' >"$DIR/long-script"
rc=0
timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-f" --cmdline-file "$DIR/long-script" \
	--file-max 2KiB </dev/null >"$DIR/f.out" 2>"$DIR/f.err" || rc=$?
[ "$rc" = 2 ] || fail "--cmdline-file over --file-max: exit $rc, want 2"
expect "$DIR/f.err" "^psb: --cmdline-file $DIR/long-script: 3600 bytes, over the limit of 2KiB" \
	"--cmdline-file over --file-max: reason"
printf '%s\n' "load $DIR/fifo" "load /dev/zero" "start $DIR" 'show experiment' quit |
	timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-g" -i 2>"$DIR/g.err" |
	tr -d '\r' >"$DIR/g.out" || fail "psb -i with load FIFO exited with $?: $(cat "$DIR/g.err")"
expect "$DIR/g.out" "^error: invalid: $DIR/fifo: is a FIFO, not a regular file" "load FIFO at the prompt"
expect "$DIR/g.out" "^error: invalid: /dev/zero: is a character device, not a regular file" \
	"load /dev/zero"
expect "$DIR/g.out" "^error: invalid: $DIR: is a directory, not a regular file" "start DIRECTORY"
expect "$DIR/g.out" 'nothing loaded' "the console goes on after refused files"
echo "console: --cmdline-file ok"

# 4. A terminal: tmux runs psb -i; Tab completes words; the control socket answers meanwhile.
cat >"$DIR/pane.sh" <<EOF
stty -g >"$DIR/tty.before"
"$PSB" ${NULLSRV[*]} --file-prefix "$PFX-t" --ctl "$DIR/ctl.sock" --output-dir "$DIR" -i 2>"$DIR/t.err"
echo \$? >"$DIR/t.rc"
stty -g >"$DIR/tty.after"
EOF
"${TMX[@]}" new-session -d -s con -x 200 -y 60 "bash $DIR/pane.sh"
pane() { "${TMX[@]}" capture-pane -p -J -S - -t con >"$DIR/pane.txt" 2>/dev/null || true; }
wait_pane() {	# wait_pane REGEX WHAT
	for _ in $(seq 150); do
		pane
		grep -Eq -- "$1" "$DIR/pane.txt" && return 0
		sleep 0.1
	done
	sed 's/^/    | /' "$DIR/pane.txt" >&2
	cat "$DIR/t.err" >&2 2>/dev/null || true
	fail "terminal: $2"
}
ctl() {	# ctl JSON [SOCKET [TIMEOUT]]: one request on a control socket, the reply line on stdout
	python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(float(sys.argv[3])); s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode() + b"\n"); print(s.makefile().readline().strip())' \
		"${2:-$DIR/ctl.sock}" "$1" "${3:-10}"
}
wait_pane '^psb> $' "no prompt"
for _ in $(seq 50); do [ -S "$DIR/ctl.sock" ] && break; sleep 0.1; done
"${TMX[@]}" send-keys -t con 'sho' Tab 'rol' Tab Enter
wait_pane '^server +0 +0 ' "sho<Tab> rol<Tab> did not run show roles"
expect "$DIR/pane.txt" '^psb> show roles *$' "Tab did not complete to \"show roles\""
expect "$DIR/pane.txt" '^ROLE +INST +LCORE' "show roles: header in the terminal"

ctl '{"cmd": "status"}' >"$DIR/ctl1"
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["ok"] is True and r["role"] == "server" and r["loaded"] is False, r' "$DIR/ctl1" ||
	fail "control socket status: $(cat "$DIR/ctl1")"
"${TMX[@]}" send-keys -t con 'show experiment' Enter
wait_pane 'nothing loaded' "show experiment before set"
# set through the socket, seen by the console: one process, one state
ctl '{"cmd": "set", "param": "pushpull.repeat", "value": "7"}' >"$DIR/ctl2"
grep -q '"ok": *true' "$DIR/ctl2" || fail "control socket set: $(cat "$DIR/ctl2")"
"${TMX[@]}" send-keys -t con 'show experiment' Enter
wait_pane 'an experiment is loaded' "the console does not see the set made on the control socket"
"${TMX[@]}" send-keys -t con 'show port st' Tab 'al' Tab Enter
wait_pane 'NIC statistics for port 0' "show port st<Tab> al<Tab>"
# wait keeps the console from reading, not the process from serving: the socket still answers,
# and Ctrl-C at the terminal gives the console back.
printf '{"name": "sv", "kind": "serve", "output": {"dir": "results"}}\n' >"$DIR/serve.json"
"${TMX[@]}" send-keys -t con "start $DIR/serve.json" Enter
wait_pane "^experiment 1 \"sv\" started; results will go to $DIR/results/sv\$" "start FILE"
"${TMX[@]}" send-keys -t con 'wait' Enter
wait_pane '^waiting for experiment 1 "sv" to end$' "wait"
ctl '{"cmd": "status"}' >"$DIR/ctl3"
python3 -c 'import json, sys
r = json.load(open(sys.argv[1]))
assert r["experiment"]["state"] == "running" and r["experiment"]["name"] == "sv", r' "$DIR/ctl3" ||
	fail "control socket status during wait: $(cat "$DIR/ctl3")"
"${TMX[@]}" send-keys -t con 'show roles' Enter
sleep 0.5
pane
[ "$(grep -c '^ROLE ' "$DIR/pane.txt")" = 1 ] || fail "terminal: a command ran during wait"
"${TMX[@]}" send-keys -t con C-c
wait_pane '^wait: interrupted' "Ctrl-C does not end wait"
# the line typed during the wait runs once the console reads again
for _ in $(seq 50); do pane; [ "$(grep -c '^ROLE ' "$DIR/pane.txt")" = 2 ] && break; sleep 0.1; done
[ "$(grep -c '^ROLE ' "$DIR/pane.txt")" = 2 ] || fail "terminal: what was typed during wait is lost"
"${TMX[@]}" send-keys -t con 'stop' Enter
wait_pane '^experiment 1 "sv" \(serve\): stopped after [0-9.]+ s$' "stop"
# the table is printed before the results are written; the results: line after
wait_pane "^results: .*results/sv/" "stop named no results"
[ -s "$DIR/results/sv/result.json" ] || fail "terminal: stop wrote no results"
"${TMX[@]}" send-keys -t con 'quit' Enter
for _ in $(seq 100); do [ -s "$DIR/t.rc" ] && [ -s "$DIR/tty.after" ] && break; sleep 0.1; done
[ -s "$DIR/t.rc" ] || fail "terminal: psb did not exit after quit"
[ "$(cat "$DIR/t.rc")" = 0 ] || fail "terminal: psb exited with $(cat "$DIR/t.rc")"
cmp -s "$DIR/tty.before" "$DIR/tty.after" || fail "terminal: settings not restored at exit"
echo "console: terminal, Tab completion and control socket ok"

# 5. An experiment from the console: a server document on memif, a worker -i that loads,
# starts and waits for its document.
cat >"$DIR/server.json" <<EOF
{"name": "s1", "kind": "serve", "node": {"role": "server", "ports": ["memif:server:$DIR/m.sock"],
 "ip": "198.18.0.1", "huge": "no", "file_prefix": "$PFX-s", "lcores": "0"},
 "output": {"dir": "results"}}
EOF
cat >"$DIR/worker.json" <<EOF
{"name": "w1", "kind": "pushpull", "node": {"role": "worker", "ports": ["memif:client:$DIR/m.sock"],
 "ip": "198.18.0.2", "server": "198.18.0.1", "huge": "no", "file_prefix": "$PFX-w", "lcores": "1"},
 "pushpull": {"len": "4KiB", "repeat": 200}, "output": {"dir": "results"}}
EOF
"$PSB" --config "$DIR/server.json" --ctl "$DIR/s.ctl" --output-dir "$DIR" -q >"$DIR/s.out" 2>&1 &
SPID=$!
# The memif socket exists from the server's EAL start, but a client that connects before the
# server's port is started is refused ("ID not found") and never retries. The control socket
# answers only from the main loop, after the ports are started.
for _ in $(seq 100); do [ -S "$DIR/s.ctl" ] && break; sleep 0.1; done
ctl '{"cmd": "status"}' "$DIR/s.ctl" 30 >"$DIR/s.status" ||
	fail "experiment: the server does not answer: $(cat "$DIR/s.out")"
grep -q '"state": *"running"' "$DIR/s.status" || fail "experiment: server: $(cat "$DIR/s.status")"
printf '%s\n' 'show experiment' "load $DIR/worker.json" start wait 'show experiment' \
	'show counters worker0' quit |
	timeout -k 5 60 "$PSB" --config "$DIR/worker.json" --output-dir "$DIR" -q -i 2>"$DIR/w.err" |
	tr -d '\r' >"$DIR/w.out" ||
	fail "experiment: worker exited with $?: $(cat "$DIR/w.out" "$DIR/w.err" "$DIR/s.out")"
W=$DIR/w.out
expect "$W" '^no experiment has run yet$' "experiment: started before start"
expect "$W" '^loaded "w1" \(pushpull\)' "experiment: load"
expect "$W" "^experiment 1 \"w1\" started; results will go to $DIR/results/w1\$" "experiment: start"
expect "$W" '^waiting for experiment 1 "w1" to end$' "experiment: wait"
expect "$W" '^experiment 1 "w1" \(pushpull\): done after [0-9.]+ s$' "experiment: the end of the wait"
# what follows wait ran after the experiment ended
sed -n '/^waiting for experiment/,$p' "$W" | sed -n '/^psb> show experiment$/,$p' >"$DIR/w.tail"
# show experiment is psbctl status: the summary (every figure: show counters experiment)
expect "$DIR/w.tail" '^role: worker, up [0-9.]+ s, an experiment is loaded$' \
	"experiment: show experiment: the node"
expect "$DIR/w.tail" '^experiment 1 "w1" \(pushpull\): done after [0-9.]+ s$' \
	"experiment: show experiment after wait: not done"
expect "$DIR/w.tail" "^results: $DIR/results/w1\$" "experiment: show experiment: results"
expect "$DIR/w.tail" '^  iterations 200/200, ' "experiment: show experiment: iterations"
expect "$DIR/w.tail" '; retries [0-9]+, failed 0$' "experiment: show experiment: failures"
expect "$DIR/w.tail" '^roles\.worker0\.rx_pkts [1-9][0-9]*$' \
	"experiment: show counters worker0: the worker received no answers"
[ -s "$DIR/results/w1/result.json" ] || fail "experiment: no results in $DIR/results/w1"
kill -TERM "$SPID"
for _ in $(seq 100); do kill -0 "$SPID" 2>/dev/null || break; sleep 0.1; done
kill -0 "$SPID" 2>/dev/null && fail "experiment: the server did not exit on SIGTERM"
wait "$SPID" || fail "experiment: server exited with $?: $(cat "$DIR/s.out")"
[ -s "$DIR/results/s1/result.json" ] || fail "experiment: no server results"
echo "console: experiment from the console ok"
