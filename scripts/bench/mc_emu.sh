#!/bin/bash
# Reliable multicast to many receivers, by emulation: psb-mcemu runs psb's multicast sender
# and K receivers in virtual time (one process; every receiver with its own independent
# loss), the seed's workload (10 MB every 0.2 s) for --seconds, for K = 10, 100 and 1,000 at
# 0.1 %, 1 % and 5 % loss with parity on, and with parity off (repair by resending alone) as
# the baseline. Prints, and writes beside the raw results, the repair traffic as a share
# of the data, the NACKs that reached the sender, and the staleness; the figures asked for
# are repair <= 10 % of data at K = 1,000 and 1 % loss with parity, and NACKs growing
# sub-linearly in K.
#
#   scripts/bench/mc_emu.sh [--seconds S] [--receivers "10 100 1000"] [--loss "0.001 0.01 0.05"]
#                           [--out DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
. scripts/bench/common.sh

SECS=5
RECEIVERS="10 100 1000"
LOSSES="0.001 0.01 0.05"
BENCH_OPTS=([--seconds]=SECS [--receivers]=RECEIVERS [--loss]=LOSSES [--out]=OUT)
bench_options mc_emu.sh "$@"
EMU=$BUILD/app/psb-mcemu/psb-mcemu
bench_built "$EMU"
bench_out mc_emu
{
	bench_about "$BUILD" "none (one process, virtual time)" "$COMMAND"
	echo "workload 10000000 B every 0.2 s, staleness sampled every 5 ms, $SECS s of virtual time;" \
		"8932 B segments, groups of 64, 10 Gbit/s pacing, 50 us one way"
} > "$OUT/ABOUT.txt"
cat "$OUT/ABOUT.txt"

for k in $RECEIVERS; do
	for p in $LOSSES; do
		for parity in 32 0; do
			echo "== $k receivers, loss $p, parity $parity" >&2
			"$EMU" --receivers "$k" --loss "$p" --parity "$parity" --duration "$SECS" \
				--json "$OUT/raw/k$k-p$p-parity$parity.json" >&2
		done
	done
done

bench_finish mc_emu
