#!/bin/bash
# psb's log types and levels: --log-level (a type, a glob, a level alone, the EAL's own after
# --) against -q and -v, the console's "show log" and "set log level", psbctl log; and the
# per-packet lines of psb.rx, which a flood of bad frames cannot turn into a flood of lines.
#
# usage: test_log.sh PATH/psb PATH/psbctl
set -uo pipefail
PSB=$1
PSBCTL=$2
DIR=$(mktemp -d /tmp/psbt-log-XXXXXX)
PFX=psbt-log$$
TEST_LIB=$(cd "$(dirname "$0")/../lib" && pwd)
# Every psb of this test has $PFX in its command line.
cleanup() {
	local p
	for p in $(pgrep -f -- "--file-prefix $PFX-" 2>/dev/null); do
		kill -9 "$p" 2>/dev/null || true
	done
	wait 2>/dev/null || true
	rm -rf "$DIR" /var/run/dpdk/"$PFX"-*
}
trap cleanup EXIT
trap 'exit 143' TERM INT HUP
fail() { echo "FAIL: $*" >&2; exit 1; }
ok() { echo "ok: $*"; }
# has FILE REGEX WHAT / hasnt FILE REGEX WHAT: a line of FILE matches REGEX (extended), or none
has() { grep -Eq -- "$2" "$1" || { sed 's/^/    | /' "$1" >&2; fail "$3"; }; }
hasnt() { ! grep -Eq -- "$2" "$1" || { sed 's/^/    | /' "$1" >&2; fail "$3"; }; }

# A server on a null port, run to completion: its port delivers frames of zeros without end,
# each dropped (ethertype).
NULLSRV=(--port null --ip 198.18.0.1 --no-huge -l 0)
# run TAG ARGS...: such a server for 0.3 s (ARGS may end with -- EAL options); its stderr in
# $DIR/TAG.err
run() {
	local tag=$1
	shift
	timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-$tag" --duration 0.3 "$@" \
		>"$DIR/$tag.out" 2>"$DIR/$tag.err" ||
		fail "psb $* exited $?: $(tail -3 "$DIR/$tag.err")"
}
INFO='^psb: server 198\.18\.0\.1, 4 role\(s\)'		# psb.main, info
MAIN_DEBUG='^psb: no hugepages, [0-9]+ MB for [0-9]+ mbufs$'	# psb.main, debug
PORT_DEBUG='^psb: port 0: null \(net_null\), MTU'		# psb.port, debug
CTL_INFO='^psb: control limits: '				# psb.ctl, info
CTL_DEBUG='^psb: control socket '				# psb.ctl, debug, after the EAL
RX_DEBUG='^psb: port 0: frame dropped: ethertype'		# psb.rx, debug

# the whole help read first: grep -q stops reading at the match, and psb would be cut off
HELP=$("$PSB" --help)
grep -q -- '--log-level \[TYPE:\]LEVEL' <<<"$HELP" ||
	fail "--help does not describe --log-level"

# 1. Levels from the command line.
run default
has "$DIR/default.err" "$INFO" "default: no info line"
hasnt "$DIR/default.err" "$MAIN_DEBUG" "default: a debug line"
hasnt "$DIR/default.err" "$RX_DEBUG" "default: a psb.rx line"
run main --log-level psb.main:debug
has "$DIR/main.err" "$MAIN_DEBUG" "--log-level psb.main:debug: no psb.main debug line"
hasnt "$DIR/main.err" "$PORT_DEBUG" "--log-level psb.main:debug: psb.port's debug too"
ok "--log-level psb.main:debug: psb.main's debug lines and only those"
for spec in 'psb.*:debug' debug 8; do
	run glob --log-level "$spec"
	has "$DIR/glob.err" "$MAIN_DEBUG" "--log-level $spec: no psb.main debug line"
	has "$DIR/glob.err" "$PORT_DEBUG" "--log-level $spec: no psb.port debug line"
	has "$DIR/glob.err" "$RX_DEBUG" "--log-level $spec: no psb.rx line"
done
ok "--log-level psb.*:debug, debug and 8: every psb type at debug"
run v -v
has "$DIR/v.err" "$MAIN_DEBUG" "-v: no debug line"
hasnt "$DIR/v.err" "$RX_DEBUG" "-v: psb.rx at debug (that is -vv)"
run vv -vv
has "$DIR/vv.err" "$RX_DEBUG" "-vv: psb.rx not at debug"
run q -q
hasnt "$DIR/q.err" "$INFO" "-q: an info line"
run qi -q --log-level psb.main:info
has "$DIR/qi.err" "$INFO" "-q --log-level psb.main:info: no psb.main info line"
hasnt "$DIR/qi.err" "$CTL_INFO" "-q --log-level psb.main:info: psb.ctl's info line"
run warn --log-level psb.main:warning
hasnt "$DIR/warn.err" "$INFO" "--log-level psb.main:warning: an info line of psb.main"
has "$DIR/warn.err" "$CTL_INFO" "--log-level psb.main:warning: psb.ctl's info line gone too"
ok "-v, -vv and -q as before; --log-level overrides them"
# the EAL's own, after --: psb's lines from the EAL's start follow it
run eal -- --log-level=psb.ctl:debug
has "$DIR/eal.err" "$CTL_DEBUG" "-- --log-level=psb.ctl:debug: no psb.ctl debug line"
run fwd -v --log-level psb.rx:error
has "$DIR/fwd.err" '^psb: EAL: .* --log-level=psb\.rx:error( |$)' \
	"--log-level is not given to the EAL"
ok "the EAL's --log-level after --, and psb's given to the EAL"
# refused with the reason, before anything starts
for bad in 'psb.rx:loud' 'psb.rxx:debug' 'psb.rx,debug' ':info' loud; do
	rc=0
	"$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-bad" --log-level "$bad" >/dev/null \
		2>"$DIR/bad.err" || rc=$?
	[ "$rc" = 2 ] || fail "--log-level $bad: exit $rc, want 2"
	has "$DIR/bad.err" "^psb: --log-level: .*(got '$bad'|no psb log type is 'psb\.rxx')" \
		"--log-level $bad: no reason"
done
ok "bad --log-level values refused with their reason"
run stamp --log-time -v
has "$DIR/stamp.err" "^[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{3} ${INFO#^}" \
	"--log-time: no info line begun with the time of day"
has "$DIR/stamp.err" "^[0-2][0-9]:[0-5][0-9]:[0-6][0-9]\.[0-9]{3} ${MAIN_DEBUG#^}" \
	"--log-time: no debug line begun with the time of day"
hasnt "$DIR/stamp.err" '^psb: ' "--log-time: a log line without the time"
ok "--log-time begins each log line with the time of day"

# 2. The console: show log, set log level; psb.run says when an experiment starts and stops.
printf '{"name": "sv", "kind": "serve", "output": {"dir": "results"}}\n' >"$DIR/serve.json"
printf '%s\n' 'show log' 'set log level psb.run warning' "start $DIR/serve.json" \
	'set log level psb.r* info' 'set log level psb.nothing debug' 'show log' stop \
	'set pushpull.repeat 7' quit |
	timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-con" --output-dir "$DIR" -i \
	2>"$DIR/con.err" | tr -d '\r' >"$DIR/con.out" ||
	fail "psb -i exited with $?: $(tail -3 "$DIR/con.err")"
sed -n '1,/^psb> set log level psb.run warning/p' "$DIR/con.out" >"$DIR/con.first"
has "$DIR/con.first" '^psb\.run +info$' "show log: psb.run not at info"
has "$DIR/con.first" '^psb\.rx +info$' "show log: psb.rx not at info"
has "$DIR/con.out" '^psb\.run +warning$' "set log level psb.run warning: not said"
hasnt "$DIR/con.err" '^psb: experiment 1 "sv" \(serve\) started' \
	"psb.run at warning still said the experiment started"
has "$DIR/con.out" '^psb\.rx +info$' "set log level psb.r* info: psb.rx not set"
has "$DIR/con.out" '^error: not_found: type: no log type matches "psb\.nothing"$' \
	"set log level of a type that does not exist"
sed -n '/^psb> set log level psb.nothing/,$p' "$DIR/con.out" >"$DIR/con.last"
has "$DIR/con.last" '^psb\.run +info$' "show log after set: psb.run not back at info"
has "$DIR/con.err" '^psb: experiment 1 "sv" stopped$' "psb.run at info: the stop not said"
has "$DIR/con.out" '^pushpull\.repeat = 7 ' "set PARAM VALUE no longer works"
ok "console: show log, set log level"

# 3. The control socket and psbctl: psb.rx at debug and back, while psb runs.
timeout -k 5 60 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-ctl" --ctl "$DIR/ctl.sock" \
	--duration 30 >"$DIR/ctl.out" 2>"$DIR/ctl.err" &
CPID=$!
for _ in $(seq 100); do
	"$PSBCTL" --ctl "$DIR/ctl.sock" status >/dev/null 2>&1 && break
	sleep 0.1
done
"$PSBCTL" --ctl "$DIR/ctl.sock" log >"$DIR/l1" || fail "psbctl log: $(cat "$DIR/l1")"
has "$DIR/l1" '^psb\.rx +info$' "psbctl log: psb.rx not listed at info"
"$PSBCTL" --ctl "$DIR/ctl.sock" log psb.rx debug >"$DIR/l2" || fail "psbctl log psb.rx debug"
has "$DIR/l2" '^psb\.rx +debug$' "psbctl log psb.rx debug: not said"
for _ in $(seq 50); do grep -Eq "$RX_DEBUG" "$DIR/ctl.err" && break; sleep 0.1; done
has "$DIR/ctl.err" "$RX_DEBUG" "psb.rx at debug from psbctl: no line"
"$PSBCTL" --ctl "$DIR/ctl.sock" log info >"$DIR/l3" || fail "psbctl log info"
has "$DIR/l3" '^psb\.rx +info$' "psbctl log info: psb.rx not set back"
n=$(grep -Ec "$RX_DEBUG" "$DIR/ctl.err")
sleep 2.5
[ "$(grep -Ec "$RX_DEBUG" "$DIR/ctl.err")" = "$n" ] || fail "psb.rx still says dropped frames"
rc=0
"$PSBCTL" --ctl "$DIR/ctl.sock" log psb.rx loud 2>"$DIR/l4" || rc=$?
[ "$rc" = 1 ] && grep -q 'bad_request: level: expected' "$DIR/l4" ||
	fail "psbctl log psb.rx loud: exit $rc: $(cat "$DIR/l4")"
"$PSBCTL" --ctl "$DIR/ctl.sock" quit >/dev/null || fail "psbctl quit"
wait "$CPID" || fail "psb exited with $?: $(tail -3 "$DIR/ctl.err")"
ok "psbctl log: lists, sets, refuses a bad level"

# 4. A flood of bad frames: millions from the null port for 2.5 s, and a pcap of 3000 each of
# a bad checksum, a wrong UDP port and a BYE from a stranger: at most a line a second of each
# kind, with how many were left out; every frame counted.
timeout -k 5 30 "$PSB" "${NULLSRV[@]}" --file-prefix "$PFX-fl" --duration 2.5 \
	--log-level psb.rx:debug --stats-file "$DIR/fl.json" -q >/dev/null 2>"$DIR/fl.err" ||
	fail "null flood: psb exited $?: $(tail -3 "$DIR/fl.err")"
lines=$(grep -Ec "$RX_DEBUG" "$DIR/fl.err")
python3 - "$DIR/fl.json" "$lines" "$DIR/fl.err" <<'EOF' || fail "null flood"
import json, re, sys
rx = json.load(open(sys.argv[1]))["roles"][0]
lines, err = int(sys.argv[2]), open(sys.argv[3]).read()
dropped = rx["drops"]["ethertype"]
held = sum(int(n) for n in re.findall(r"frame dropped: ethertype \((\d+) more not shown\)", err))
print("null flood: %d frames dropped, %d lines, %d said left out" % (dropped, lines, held))
assert dropped > 10000 and 2 <= lines <= 4, (dropped, lines)
assert 0 < held <= dropped - lines, held
EOF
PYTHONPATH="$TEST_LIB" python3 - "$DIR/bad.pcap" <<'EOF' || fail "cannot write the pcap"
import sys
import psbframe as pf

me, mac = "198.18.0.1", "02:00:00:00:00:01"
good = pf.udp_frame(mac, "02:00:00:00:00:09", "198.18.0.9", me, pf.UDP_PORT, pf.UDP_PORT,
                    pf.hdr(0x01))
csum = good[:24] + bytes([good[24] ^ 0xff]) + good[25:]	# the IPv4 header checksum
port = pf.udp_frame(mac, "02:00:00:00:00:09", "198.18.0.9", me, pf.UDP_PORT, 7, pf.hdr(0x01))
# from a node psb never heard of: ignored
bye = pf.udp_frame(mac, "02:00:00:00:00:0a", "198.18.0.10", me, pf.UDP_PORT, pf.UDP_PORT,
                   pf.hdr(pf.BYE))
pf.write_pcap(sys.argv[1], [csum, port, bye] * 3000)
EOF
timeout -k 5 30 "$PSB" --port "pcap:$DIR/bad.pcap:$DIR/out.pcap" --ip 198.18.0.1 --no-huge \
	-l 0 --file-prefix "$PFX-pc" --idle-exit 500 --log-level psb.rx:debug \
	--stats-file "$DIR/pc.json" -q >/dev/null 2>"$DIR/pc.err" || fail "pcap flood: psb exited $?: $(tail -3 "$DIR/pc.err")"
for kind in 'frame dropped: ip_checksum' 'frame dropped: udp_port' \
	'BYE from 198\.18\.0\.10:9430 .*ignored'; do
	[ "$(grep -Ec "^psb: port 0: $kind" "$DIR/pc.err")" = 1 ] ||
		{ cat "$DIR/pc.err" >&2; fail "pcap flood: not one line of '$kind'"; }
done
python3 - "$DIR/pc.json" <<'EOF' || fail "pcap flood: counters"
import json, sys
rx = json.load(open(sys.argv[1]))["roles"][0]
print("pcap flood: ip_checksum %d, udp_port %d, bye_ignored %d" % (rx["drops"]["ip_checksum"],
      rx["drops"]["udp_port"], rx["bye_ignored"]))
assert rx["drops"]["ip_checksum"] == 3000 and rx["drops"]["udp_port"] == 3000, rx["drops"]
assert rx["bye_ignored"] == 3000, rx
EOF
ok "floods of bad frames: a line a second of each kind at most"
echo "log: levels by type from the command line, the console and psbctl; no flood of lines"
