#!/bin/bash
# Decode generated captures with scripts/psb.lua in tshark (psb's messages; its multicast
# and staleness-experiment packets); compare every field with expectations.
#
# usage: test_dissector.sh GEN_DISSECTOR_PCAP SOURCE_ROOT
#
# The frames and their values are listed in gen_dissector_pcap.c; keep both in step.
set -u

gen=${1:?usage: test_dissector.sh GEN_DISSECTOR_PCAP SOURCE_ROOT}
src=${2:?usage: test_dissector.sh GEN_DISSECTOR_PCAP SOURCE_ROOT}
lua="$src/scripts/psb.lua"

fail() {
	echo "test_dissector: FAIL: $*" >&2
	exit 1
}

# Without tshark nothing is tested: that is a failure, not a pass.
command -v tshark >/dev/null 2>&1 ||
	fail "tshark is needed for this test and was not found (scripts/setup.sh installs it)"
[ -r "$lua" ] || fail "$lua not found"

tmp=$(mktemp -d /tmp/psb-dissector.XXXXXX) || fail "mktemp failed"
trap 'rm -rf "$tmp"' EXIT

"$gen" "$tmp/psb.pcap" "$tmp/mc.pcap" >/dev/null || fail "$gen could not write the captures"

# tshark keeps going when a Lua plugin fails to load; its stderr tells.
pcap=psb.pcap
run_tshark() {
	tshark -r "$tmp/$pcap" -X "lua_script:$lua" -T fields -E separator=, \
		-E aggregator=';' -E quote=n "$@" 2>"$tmp/tshark.err"
	local rc=$?
	if [ $rc -ne 0 ] || grep -qi 'lua' "$tmp/tshark.err"; then
		cat "$tmp/tshark.err" >&2
		fail "tshark exited with $rc or reported a Lua error"
	fi
}

fields=(
	frame.number psb.magic psb.version psb.type psb.flags psb.flags.sync psb.flags.server
	psb.flags.worker psb.status psb.sender psb.req_id psb.round psb.key psb.total_len
	psb.offset psb.seg_len psb.seg_size psb.aux psb.nfloats psb.float
	psb.sched.num_servers psb.sched.num_workers psb.sched.server_ip psb.sched.server_port
	psb.sched.key_begin psb.sched.key_end _ws.expert.message _ws.col.Info
)
args=()
for f in "${fields[@]}"; do
	args+=(-e "$f")
done

# One line per frame, columns as in $fields; ';' joins repeated fields.
cat >"$tmp/want.csv" <<'EOF'
1,0x5053,1,0x01,0x01,1,0,0,0,3,3,2,7,4096,0,1432,1432,0,358,1;1;1;1;1;1;1;1;1;1;1;1;1;1;1;1,,,,,,,,PUSH key=7 req=3 seg 0-1432/4096
2,0x5053,1,0x02,0x01,1,0,0,0,1,42,9,1234605616436508552,0,0,0,1432,0,,,,,,,,,,PULL key=1234605616436508552 req=42
3,0x5053,1,0x03,0x00,0,0,0,0,513,4000000000,4294967295,18446744073709551615,8,0,8,8932,0,2,1.5;-2,,,,,,,,PUSHPULL key=18446744073709551615 req=4000000000 seg 0-8/8
4,0x5053,1,0x81,0x01,1,0,0,0,3,3,3,7,0,0,0,1432,0,,,,,,,,,,PUSH_ACK key=7 req=3
5,0x5053,1,0x82,0x01,1,0,0,0,1,42,9,1234605616436508552,12,0,12,1432,0,3,0.25;0.5;0.75,,,,,,,,PULL_RESP key=1234605616436508552 req=42 seg 0-12/12
6,0x5053,1,0x83,0x00,0,0,0,0,513,4000000000,0,18446744073709551615,8,0,8,1432,0,2,-0.5;8,,,,,,,,PUSHPULL_RESP key=18446744073709551615 req=4000000000 seg 0-8/8
7,0x5053,1,0x10,0x04,0,0,1,0,0,1,0,0,0,0,0,0,0,,,,,,,,,,REGISTER worker req=1
8,0x5053,1,0x90,0x04,0,0,1,0,0,1,0,0,52,0,52,52,2,,,2,3,198.18.0.2;198.18.0.3,9430;9440,0;9223372036854775808,9223372036854775808;18446744073709551615,,REGISTER_ACK worker rank=2 req=1 seg 0-52/52
9,0x5053,1,0x11,0x00,0,0,0,0,0,5,1,0,0,0,0,0,4,,,,,,,,,,BARRIER group=4 seq=1 req=5
10,0x5053,1,0x91,0x00,0,0,0,0,0,5,1,0,0,0,0,0,4,,,,,,,,,,BARRIER_ACK group=4 seq=1 req=5
11,0x5053,1,0xff,0x00,0,0,0,4,1,43,0,99,0,0,0,0,0,,,,,,,,,psb ERROR response,ERROR key=99 req=43 status=no_key
12,0x5053,1,0x82,0x00,0,0,0,0,2,77,4,555,40,0,16,16,0,4,1;2;3;4,,,,,,,,PULL_RESP key=555 req=77 seg 0-16/40
13,0x5053,1,0x82,0x00,0,0,0,0,2,77,4,555,40,16,16,16,0,4,5;6;7;8,,,,,,,,PULL_RESP key=555 req=77 seg 16-32/40
14,0x5053,1,0x82,0x00,0,0,0,0,2,77,4,555,40,32,8,16,0,2,9;10,,,,,,,,PULL_RESP key=555 req=77 seg 32-40/40
15,0x1234,1,0x01,0x00,0,0,0,0,3,4,2,7,4,0,4,1432,0,1,4,,,,,,,Bad psb magic (psb drops the frame),[bad magic] PUSH key=7 req=4 seg 0-4/4
16,0x5053,1,0x01,0x00,0,0,0,0,3,5,2,7,16,0,16,1432,0,3,1;2;3,,,,,,,seg_len does not match the payload length (psb drops the frame),PUSH key=7 req=5 seg 0-16/16
17,0x5053,1,0x01,0x00,0,0,0,0,3,6,2,7,9216,0,9216,9216,0,2304,2;2;2;2;2;2;2;2;2;2;2;2;2;2;2;2,,,,,,,Frame longer than psb's 9216-byte receive buffers (psb drops it: oversize),[oversize] PUSH key=7 req=6 seg 0-9216/9216
18,0x5053,1,0x05,0x00,0,0,0,0,3,8,0,7,20,0,20,20,0,,,,,,,,,,REPAIR key=7 req=8 missing=2 in 3-5
19,0x5053,1,0x85,0x00,0,0,0,0,3,8,0,7,16,0,16,16,0,,,,,,,,,,REPAIR_RESP key=7 req=8 all
20,0x5053,1,0x14,0x04,0,0,1,0,0,0,0,0,0,0,0,0,500,,,,,,,,,,HEARTBEAT worker period=500ms req=0
21,0x5053,1,0x94,0x04,0,0,1,0,0,0,0,0,36,0,36,36,2,,,,,,,,,,HEARTBEAT_ACK worker lost=2: server 1 198.18.0.3:9440 dead after 3100ms, server 0 198.18.0.2:9430 restarted
22,0x5053,1,0x94,0x04,0,0,1,0,0,0,0,0,20,0,20,20,2,,,,,,,,,Lost-server list shorter than its count (a psb worker ignores the HEARTBEAT_ACK),HEARTBEAT_ACK worker lost=2: server 1 198.18.0.3:9440 dead after 3100ms [short lost list]
23,0x5053,1,0x10,0x12,0,1,0,0,0,1592594996,0,0,0,0,0,0,0,,,,,,,,,,REGISTER server beats req=1592594996
24,0x5053,1,0x81,0x01,1,0,0,0,3,9,3,7,0,0,0,1432,1592594996,,,,,,,,,,PUSH_ACK key=7 req=9 epoch=0x5eed1234
25,0x5053,1,0x15,0x00,0,0,0,0,3,10,5,24301,16,0,16,16,0,,,,,,,,,,ECHO req=10 seg 0-16/16
26,0x5053,1,0x95,0x00,0,0,0,0,3,10,5,24301,16,0,16,16,0,,,,,,,,,,ECHO_RESP req=10 seg 0-16/16
27,0x5053,1,0x15,0x00,0,0,0,0,3,10,5,24301,1028,0,1028,1028,0,,,,,,,,,ECHO longer than 1024 bytes or not one whole segment (psb does not answer it: echo refused),ECHO req=10 seg 0-1028/1028
EOF

# The value bytes, in a pass of their own: frames 1, 17 and 27 alone carry 1432, 9216, 1028.
{
	printf '1,'
	for ((i = 0; i < 358; i++)); do
		printf '0000803f'	# 1.0f, little-endian
	done
	printf '\n'
	cat <<'EOF'
2,
3,0000c03f000000c0
4,
5,0000803e0000003f0000403f
6,000000bf00000041
7,
8,00020003c612000224d6000000000000000000008000000000000000c612000324e000008000000000000000ffffffffffffffff
9,
10,
11,
12,0000803f000000400000404000008040
13,0000a0400000c0400000e04000000041
14,0000104100002041
15,00008040
16,0000803f0000004000004040
EOF
	printf '17,'
	for ((i = 0; i < 2304; i++)); do
		printf '00000040'	# 2.0f
	done
	printf '\n'
	echo 18,0302000000000003000000030000000205000000
	echo 19,00010000000000000000000000000000
	echo 20,
	# count 2; rank 1 dead 198.18.0.3:9440 3100 ms; rank 0 restarted 198.18.0.2:9430
	echo 21,0002000000010100c612000324e0000000000c1c00000200c612000224d6000000000000
	echo 22,0002000000010100c612000324e0000000000c1c
	echo 23,
	echo 24,
	echo 25,000102030405060708090a0b0c0d0e0f
	echo 26,000102030405060708090a0b0c0d0e0f
	printf '27,'
	for ((i = 0; i < 1028; i++)); do
		printf '%02x' $((i % 256))	# bytes 0, 1, ... 255, 0, ...
	done
	printf '\n'
} >"$tmp/want_value.csv"

# The repair records of frames 18 and 19.
printf '%s\n' 18,0x03,0x02,0,1,3,3,2,2 19,0x00,0x01,1,0,0,0,0, >"$tmp/want_repair.csv"

# The lost-server lists of the HEARTBEAT_ACKs 21 and 22 (22: cut after its first entry).
printf '%s\n' 21,2,1\;0,1\;2,198.18.0.3\;198.18.0.2,9440\;9430,3100\;0 \
	22,2,1,1,198.18.0.3,9440,3100 >"$tmp/want_lost.csv"

# The beats flag (REGISTER 23 alone) and the server epoch, shown for every answer of a
# server other than ERROR (0: the server does not say), of every frame.
printf '%s\n' 1,0, 2,0, 3,0, 4,0,0x00000000 5,0,0x00000000 6,0,0x00000000 7,0, 8,0, 9,0, \
	10,0, 11,0, 12,0,0x00000000 13,0,0x00000000 14,0,0x00000000 15,0, 16,0, 17,0, 18,0, \
	19,0,0x00000000 20,0, 21,0, 22,0, 23,1, 24,0,0x5eed1234 25,0, 26,0, 27,0, \
	>"$tmp/want_epoch.csv"

run_tshark "${args[@]}" >"$tmp/got.csv"
run_tshark -e frame.number -e psb.value >"$tmp/got_value.csv"
run_tshark -Y psb.repair.flags -e frame.number -e psb.repair.req_type -e psb.repair.flags \
	-e psb.repair.all -e psb.repair.has_round -e psb.repair.base -e psb.repair.nbits \
	-e psb.repair.round -e psb.repair.missing >"$tmp/got_repair.csv"
run_tshark -Y psb.lost.count -e frame.number -e psb.lost.count -e psb.lost.rank \
	-e psb.lost.why -e psb.lost.ip -e psb.lost.port -e psb.lost.silent_ms >"$tmp/got_lost.csv"
run_tshark -e frame.number -e psb.flags.beats -e psb.epoch >"$tmp/got_epoch.csv"

# The multicast capture: psb's reliable multicast (psbmc) and the staleness experiment's
# messages (psbst), found on any port by their magic.
mcfields=(
	frame.number psbmc.version psbmc.type psbmc.session psbmc.vid psbmc.nseg psbmc.total_len
	psbmc.crc psbmc.seg psbmc.len psbmc.group_index psbmc.parity_index psbmc.sent psbmc.rate_mbps
	psbmc.receiver psbmc.entries psbmc.entry.group psbmc.entry.need psbmc.entry.missing
	psbst.type psbst.session psbst.worker psbst.held psbst.samples psbst.seq psbst.sum
	psbst.window_ns psbst.flags _ws.expert.message _ws.col.Info
)
mcargs=()
for f in "${mcfields[@]}"; do
	mcargs+=(-e "$f")
done
cat >"$tmp/want_mc.csv" <<'EOF'
1,2,1,0x5eed0001,3,2,100,0x11223344,1,36,,,,,,,,,,,,,,,,,,,,DATA v3 session=0x5eed0001 seg 1/2 len 36
2,2,2,0x5eed0001,3,2,100,0x11223344,,64,0,0,,,,,,,,,,,,,,,,,,PARITY v3 session=0x5eed0001 group 0 parity 0
3,2,3,0x5eed0001,3,2,100,0x11223344,,,,,2,5000,,,,,,,,,,,,,,,,HEARTBEAT v3 session=0x5eed0001 sent 2/2 at 5000 Mbit/s
4,2,4,0x5eed0001,3,2,100,0x11223344,,,,,,,7,1,0,1,0x0000000000000002,,,,,,,,,,,NACK v3 session=0x5eed0001 receiver 7 1 entry [group 0 need 1 missing 0x0000000000000002]
5,2,5,0x5eed0001,3,2,100,0x11223344,,,,,,,,1,0,1,0x0000000000000002,,,,,,,,,,,NCF v3 session=0x5eed0001 1 entry [group 0 need 1 missing 0x0000000000000002]
6,,,,,,,,,,,,,,,,,,,1,0x0000abcd,2,41,100,5,4050,500000000,,,POST worker 2 holds 41; mean 40.500 of 100 samples over 0.500 s
7,,,,,,,,,,,,,,,,,,,1,0x00000000,2,0,0,0,77,,,,POST worker 2 joins (key 77)
8,,,,,,,,,,,,,,,,,,,2,0x0000abcd,1,4,0,9,0,,,,PULL worker 1 holds 4
9,,,,,,,,,,,,,,,,,,,3,0x0000abcd,2,41,,,,,0x0000000000000001,,ACK worker 2 newest 41 [end]
10,2,1,0x5eed0001,3,2,100,0x11223344,1,36,,,,,,,,,,,,,,,,,,,Length does not match the packet (a receiver drops it),[malformed] DATA v3 session=0x5eed0001 seg 1/2 len 36
11,1,1,0x5eed0001,3,2,100,0x11223344,1,36,,,,,,,,,,,,,,,,,,,Wire version 1, whose CRC is not CRC-32C (a receiver of wire version 2 drops it),[wire version 1] DATA v3 session=0x5eed0001 seg 1/2 len 36
EOF
pcap=mc.pcap run_tshark "${mcargs[@]}" >"$tmp/got_mc.csv"

status=0
# same NAME WHAT: want_NAME.csv and got_NAME.csv agree, or WHAT differs (status 1)
same() {
	if ! diff -u --label expected --label tshark "$tmp/want$1.csv" "$tmp/got$1.csv"; then
		echo "test_dissector: FAIL: $2 (- expected, + decoded by psb.lua)" >&2
		status=1
		return 1
	fi
}
same "" "header fields differ" || echo "columns: ${fields[*]}" >&2
same _value "psb.value differs"
same _repair "repair records differ"
same _lost "lost-server lists differ"
same _epoch "beats flag or epoch differs"
same _mc "the multicast capture's fields differ" || echo "columns: ${mcfields[*]}" >&2
[ $status -eq 0 ] && echo "test_dissector: $(wc -l <"$tmp/want.csv") psb frames and" \
	"$(wc -l <"$tmp/want_mc.csv") multicast and staleness packets decoded as expected"
exit $status
