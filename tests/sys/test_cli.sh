#!/bin/bash
# psb refuses bad command lines and environments with a message naming what is
# wrong (the option or variable, and the document path it sets: options and documents are
# checked by one schema), and refuses memory that cannot hold its pools, before touching
# a port.
set -uo pipefail
PSB=$1
fails=0

# expect_error WORDS... -- ARGS...: psb must exit 2 and print every word.
expect_error() {
	local words=()
	while [ "$1" != "--" ]; do words+=("$1"); shift; done
	shift
	local out rc
	out=$(timeout 30 "$PSB" "$@" 2>&1 </dev/null)
	rc=$?
	if [ $rc -ne 2 ]; then
		echo "FAIL: psb $* exited $rc, expected 2"; echo "$out" | tail -3; fails=$((fails + 1)); return
	fi
	for w in "${words[@]}"; do
		if ! grep -qF -- "$w" <<<"$out"; then
			echo "FAIL: psb $*: no '$w' in: $(tail -1 <<<"$out")"; fails=$((fails + 1)); return
		fi
	done
	echo "ok: psb $* -> $(tail -1 <<<"$out")"
}

base=(--port null --ip 198.18.0.1 --no-huge --file-prefix "psbt-cli-$$")
expect_error "--mem 16" "cannot hold the packet pool" -- "${base[@]}" --mem 16
expect_error "--mem" "node.mem_mb" "integer" -- "${base[@]}" --mem lots
expect_error "--port" "unknown kind 'nic'" -- --port nic:0 --ip 198.18.0.1
# an exception port of the kernel's vhost-net where the kernel has none: said, with tap instead
if [ ! -e /dev/vhost-net ]; then
	expect_error "virtio_user:psbv$$" "needs /dev/vhost-net" "tap:psbv$$" -- "${base[@]}" \
		--exception "virtio_user:psbv$$"
fi
expect_error "memif socket must be an absolute path" -- --port memif:server:rel.sock --ip 198.18.0.1
expect_error "node.ip" "--ip" -- --port null
expect_error "node.ports" "--port" -- --ip 198.18.0.1
expect_error "--ip" "198.18.0.1" -- --port null --ip 198.18.0
expect_error "--mode" "PUSH_PULL" -- "${base[@]}" --role worker --server 198.18.0.2 --mode 7
expect_error "len" "multiple of 4" -- "${base[@]}" --role worker --server 198.18.0.2 1023
expect_error "worker" "node.scheduler" -- "${base[@]}" --role worker
expect_error "--role" "node.role" "server, worker, scheduler" -- "${base[@]}" --role boss
DMLC_ROLE=boss expect_error "DMLC_ROLE" "server, worker, scheduler" -- "${base[@]}"
DMLC_NUM_WORKER=0 expect_error "DMLC_NUM_WORKER" "node.num_workers" "[1, 1024]" -- "${base[@]}"
DMLC_PS_ROOT_URI=localhost expect_error "DMLC_PS_ROOT_URI" "IPv4" -- "${base[@]}"
# --mem is mostly the store's; the EAL asks for what the pools need, so make those
# need more hugepages than any machine has free (16M mbufs: ~150 GB)
expect_error "--huge" "free hugepages" -- --port null --ip 198.18.0.1 --huge --mbufs 16777216
expect_error "--connect-timeout" "node.connect_timeout" "[0ns, 60m]" -- "${base[@]}" --connect-timeout 9999
expect_error "--connect-timeout" "expected a duration" -- "${base[@]}" --connect-timeout soon
expect_error "node.mtu" "--mtu" "576" -- "${base[@]}" --mtu 100
# a push's bookkeeping counted at 1500-byte frames (733 segments) when the MTU is the port's own
expect_error "store.reasm_sender_bytes" "(1078152 B with its bookkeeping)" -- "${base[@]}" \
	--max-value 1MiB --reasm-sender-bytes 1MiB
# what a sender may have sent again: a rate, and room for one answer of --max-value at least
expect_error "--resend-rate" "store.resend_rate" "rate like" -- "${base[@]}" --resend-rate fast
expect_error "store.resend_burst" "one answer of node.max_value 1048576 B (1108682 B with its" \
	-- "${base[@]}" --max-value 1MiB --resend-burst 1MiB

# a value longer than any setting takes is refused whole, never cut to something that passes
long=$(printf '9%.0s' $(seq 300))
expect_error "--len" "longer than any setting of pushpull.len" -- "${base[@]}" --len "$long"

# --help names the document path each option sets and a command line's default there
help=$(timeout 10 "$PSB" --help)
for w in '[node.role, default "server"; env DMLC_ROLE]' '[pushpull.len, default "1000KiB"]' \
	'[node.sync false]' '[pushpull.timeout, default "20ms"]' '--log-level'; do
	grep -qF -- "$w" <<<"$help" || { echo "FAIL: --help has no '$w'"; fails=$((fails + 1)); }
done

rm -rf /var/run/dpdk/psbt-cli-$$
[ $fails -eq 0 ] && echo "cli: every bad input refused with a message naming it"
exit $((fails != 0))
