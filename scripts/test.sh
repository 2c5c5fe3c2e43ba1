#!/bin/bash
# Build psb and run the whole test suite: unit, pcap replay, memif and
# namespace tests (build/), the unit tests again under ASan/UBSan
# (build-asan/), and the packet-parser fuzzers for a bounded time (build-fuzz/).
set -euo pipefail
cd "$(dirname "$0")/.."

FUZZ_SECONDS=${PSB_FUZZ_SECONDS:-60}
MC_FUZZ_SECONDS=${PSB_MC_FUZZ_SECONDS:-20}
ROCE_FUZZ_SECONDS=${PSB_ROCE_FUZZ_SECONDS:-20}
SWEEP_FUZZ_SECONDS=${PSB_SWEEP_FUZZ_SECONDS:-15}
scripts/setup.sh --no-huge

setup_dir() {
	local dir=$1; shift
	if [ -f "$dir/build.ninja" ]; then
		meson setup --reconfigure "$dir" "$@" >/dev/null
	else
		meson setup "$dir" "$@" >/dev/null
	fi
}

status=0
echo "== build (warnings are errors)"
setup_dir build -Dwerror=true
ninja -C build >/dev/null
# Without DPDK meson leaves out every test that runs psb: that is a failure, not a smaller suite.
tests=$(meson test -C build --list 2>/dev/null || true)
if ! grep -q '^psb:sys / ' <<<"$tests"; then
	echo "test.sh: build/ has no psb:sys tests (was DPDK found? see build/meson-logs/meson-log.txt)" >&2
	status=1
fi
echo "== tests"
meson test -C build --print-errorlogs --num-processes 2 || status=1

echo "== unit tests under ASan/UBSan"
setup_dir build-asan -Dwerror=true -Ddpdk=disabled -Db_sanitize=address,undefined \
	-Dbuildtype=debug -Db_lundef=false
ninja -C build-asan >/dev/null
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
	meson test -C build-asan --suite unit --print-errorlogs --num-processes 2 || status=1

echo "== fuzzing the packet parser for ${FUZZ_SECONDS}s"
fuzz_ok=1
CC=clang setup_dir build-fuzz -Ddpdk=disabled -Dtests=enabled -Dfuzz=true -Dbuildtype=debug
ninja -C build-fuzz tests/fuzz/fuzz_frame tests/fuzz/fuzz_gen_corpus tests/fuzz/fuzz_mc \
	tests/fuzz/fuzz_roce tests/fuzz/fuzz_sweep tests/fuzz/fuzz_sweep_replay \
	tests/fuzz/fuzz_memif >/dev/null
# fuzz NAME SECONDS CORPUS: the libFuzzer target NAME for SECONDS, its statistics shown; a
# target that says it skipped a check ("skipped: why") is named in the summary as skipped
fuzz_skips=()
fuzz() {
	local skipped

	if ! build-fuzz/tests/fuzz/$1 -max_total_time="$2" -print_final_stats=1 "$3" \
		> "build-fuzz/$1.log" 2>&1; then
		tail -40 "build-fuzz/$1.log"
		fuzz_ok=0
		status=1
	fi
	grep -E 'stat::number_of_executed_units|Done [0-9]+ runs' "build-fuzz/$1.log" | tail -2 || true
	skipped=$(grep -m1 -o 'skipped: .*' "build-fuzz/$1.log" || true)
	if [ -n "$skipped" ]; then
		echo "$1: $skipped"
		fuzz_skips+=("build-fuzz: $1 ($skipped)")
	fi
}
corpus=$(mktemp -d)
mc_corpus=$(mktemp -d)
roce_corpus=$(mktemp -d)
sweep_corpus=$(mktemp -d)
memif_corpus=$(mktemp -d)
trap 'rm -rf "$corpus" "$mc_corpus" "$roce_corpus" "$sweep_corpus" "$memif_corpus"' EXIT
build-fuzz/tests/fuzz/fuzz_gen_corpus "$corpus" >/dev/null
fuzz fuzz_frame "$FUZZ_SECONDS" "$corpus"
echo "== fuzzing the multicast packets and state machines for ${MC_FUZZ_SECONDS}s"
fuzz fuzz_mc "$MC_FUZZ_SECONDS" "$mc_corpus"
echo "== fuzzing the client's memif messages and descriptors for ${MC_FUZZ_SECONDS}s"
fuzz fuzz_memif "$MC_FUZZ_SECONDS" "$memif_corpus"
echo "== fuzzing the RoCE parser, ICRC and QP table for ${ROCE_FUZZ_SECONDS}s"
fuzz fuzz_roce "$ROCE_FUZZ_SECONDS" "$roce_corpus"
echo "== fuzzing sweep files (psb-sweep) for ${SWEEP_FUZZ_SECONDS}s"
build-fuzz/tests/fuzz/fuzz_sweep_replay --corpus "$sweep_corpus"
fuzz fuzz_sweep "$SWEEP_FUZZ_SECONDS" "$sweep_corpus"

# A skipped test checked nothing: the summary counts it as failed, by name.
python3 - "$fuzz_ok" "${fuzz_skips[@]}" <<'PY' || status=1
import json, sys
passed = failed = 0
skipped = sys.argv[2:]
for d in ("build", "build-asan"):
    try:
        lines = open(f"{d}/meson-logs/testlog.json").read().splitlines()
    except OSError:
        failed += 1
        continue
    for line in lines:
        t = json.loads(line)
        r = t.get("result")
        if r in ("OK", "EXPECTEDFAIL"):
            passed += 1
        elif r == "SKIP":
            skipped.append(f"{d}: {t.get('name')}")
        else:
            failed += 1
if sys.argv[1] == "1":
    passed += 1
else:
    failed += 1
for name in skipped:
    print(f"test.sh: skipped, which counts as failed: {name}", file=sys.stderr)
note = f" ({len(skipped)} of them skipped)" if skipped else ""
print(f"tests: {passed} passed, {failed + len(skipped)} failed{note}")
sys.exit(1 if failed or skipped else 0)
PY
exit $status
