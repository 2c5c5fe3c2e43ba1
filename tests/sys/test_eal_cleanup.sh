#!/bin/bash
# psb that fails to start, after the EAL came up or before, leaves nothing behind: no DPDK
# runtime directory (/var/run/dpdk/PREFIX: 5 MB of the EAL's files), no memif socket file.
# A pcap port whose file cannot be opened (three times), a memif socket in a directory that
# does not exist, a port that fails after another was set up, a control socket that cannot
# be made once the ports run, an af_packet port on an interface that does not exist.
set -uo pipefail
PSB=$1
DIR=$(mktemp -d /tmp/psbt-eal-XXXXXX)
PFX=psbt-eal$$
cleanup() { rm -rf "$DIR" /var/run/dpdk/"$PFX"-*; }
trap cleanup EXIT
fails=0

# starts TAG WORDS... -- ARGS...: psb ARGS must exit 2 naming every word, and leave no
# runtime directory of its prefix PFX-TAG
starts() {
	local tag=$1 words=() out rc w
	shift
	while [ "$1" != "--" ]; do words+=("$1"); shift; done
	shift
	out=$(timeout -k 5 60 "$PSB" --ip 198.18.0.1 --no-huge -l 0 --file-prefix "$PFX-$tag" \
		"$@" 2>&1 </dev/null)
	rc=$?
	[ $rc = 2 ] || { echo "FAIL: $tag: exited $rc, not 2: $(tail -2 <<<"$out")"; fails=$((fails + 1)); }
	for w in "${words[@]}"; do
		grep -qF -- "$w" <<<"$out" ||
			{ echo "FAIL: $tag: no '$w' in: $(tail -1 <<<"$out")"; fails=$((fails + 1)); }
	done
	if [ -e "/var/run/dpdk/$PFX-$tag" ]; then
		echo "FAIL: $tag: left /var/run/dpdk/$PFX-$tag ($(du -sh "/var/run/dpdk/$PFX-$tag" |
			cut -f1)): $(ls "/var/run/dpdk/$PFX-$tag" | tr '\n' ' ')"
		fails=$((fails + 1))
	fi
	echo "ok: $tag -> $(tail -1 <<<"$out" | cut -c1-150)"
}

for i in 1 2 3; do
	starts "pcap$i" "pcap:$DIR/none.pcap" "No such file" -- \
		--port "pcap:$DIR/none.pcap:$DIR/out$i.pcap"
done
starts memifdir "memif:server:$DIR/no/m.sock" "did not come up" -- \
	--port "memif:server:$DIR/no/m.sock"
starts second "pcap:$DIR/none.pcap" -- --port null --port "pcap:$DIR/none.pcap:$DIR/o.pcap"
starts memifsock "pcap:$DIR/none.pcap" -- --port "memif:server:$DIR/m.sock" \
	--port "pcap:$DIR/none.pcap:$DIR/o2.pcap"
[ -e "$DIR/m.sock" ] && { echo "FAIL: memifsock: left its socket file $DIR/m.sock"; fails=$((fails + 1)); }
starts ctl "--ctl" "$DIR/no/c.ctl" -- --port null --ctl "$DIR/no/c.ctl"
starts afp "no such device" "psbnone$$" -- --port "af_packet:psbnone$$"
[ $fails = 0 ] && echo "eal_cleanup: psb that cannot start leaves no runtime directory behind"
exit $((fails != 0))
