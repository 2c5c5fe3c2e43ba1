# shellcheck shell=bash
# Sourced by the benchmark scripts: where a result comes from, for the ABOUT.txt beside it.

# bench_version_line BUILD: what BUILD's programs say they are ("psb 0.1.0 (git
# 1a2b3c4d5e6f, dirty)", their --version: the revision was put in when they were built);
# nothing from a build of psb older than --version.
bench_version_line() {
	local b
	for b in "$1/app/psb/psb" "$1/app/psbctl/psbctl"; do
		[ -x "$b" ] && "$b" --version 2>/dev/null | grep -E '^[^ ]+ [^ ]+ \(git [^)]*\)$' &&
			return
	done
	return 0
}

# bench_version BUILD: psb's version BUILD's programs were built as (when they do not say,
# the version BUILD was configured with).
bench_version() {
	local line
	line=$(bench_version_line "$1")
	if [ -n "$line" ]; then
		echo "$line" | cut -d' ' -f2
	else
		python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["version"])' \
			"$1/meson-info/intro-projectinfo.json" 2>/dev/null || echo unknown
	fi
}

# bench_revision [BUILD]: the commit BUILD's programs were built from, as they say (so the
# code measured, whatever the tree holds now), dirty=true when tracked files differed from
# it then, and "build=stale" when the tree has changed since BUILD was built. A build of
# psb older than --version, or no BUILD: the commit of the tree it was configured from and
# whether tracked files differ from it now.
bench_revision() {
	local src=. rev="" dirty stale="" line short
	if [ -n "${1:-}" ] && [ -f "$1/meson-info/meson-info.json" ]; then
		src=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
			"$1/meson-info/meson-info.json")
		# what ninja would do, less the revision it takes at every build and the links
		# that follow it, with a shared library's symbol file (they change nothing when
		# the revision did not change)
		ninja -C "$1" -n 2>/dev/null | grep '^\[' |
			grep -qv -e 'psb_version' -e '\] Linking ' -e '\] Generating symbol file ' &&
			stale=" build=stale"
		line=$(bench_version_line "$1")
	fi
	if [ -n "$line" ]; then
		short=$(sed -n 's/.*(git \([0-9a-f]\{7,\}\).*/\1/p' <<<"$line")
		[ -n "$short" ] && rev=$(git -C "$src" rev-parse --verify -q "$short^{commit}" 2>/dev/null)
		rev=${rev:-${short:-unknown}}
		dirty=$(grep -q ', dirty)$' <<<"$line" && echo true || echo false)
	else
		rev=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
		dirty=$([ -z "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ] &&
			echo false || echo true)
	fi
	echo "$rev dirty=$dirty$stale"
}

# build BUILD: how BUILD was configured (meson's buildtype, optimization, sanitizers, LTO,
# extra C flags) and with which compiler.
bench_build() {
	local info=${1:-build}/meson-info
	[ -f "$info/intro-buildoptions.json" ] || { echo "build ${1:-build} unknown (not a meson build)"; return; }
	python3 - "$info" <<'PY'
import json, os, subprocess, sys
info = sys.argv[1]
opts = {o["name"]: o["value"] for o in json.load(open(os.path.join(info, "intro-buildoptions.json")))}
def word(v):
    return str(v).lower() if isinstance(v, bool) else str(v)
words = ["%s=%s" % (k, word(opts[k])) for k in ("buildtype", "optimization", "debug", "b_ndebug",
                                                "b_sanitize", "b_lto", "werror") if k in opts]
words.append("c_args=%s" % (",".join(opts.get("c_args", [])) or "none"))
try:  # the compiler the build runs, as compile_commands.json names it
    cmds = json.load(open(os.path.join(info, "..", "compile_commands.json")))
    cc = cmds[0]["command"].split()[0]
    ver = subprocess.run([cc, "-dumpfullversion"], capture_output=True, text=True).stdout.strip()
    words.append("cc=%s-%s" % (os.path.basename(cc), ver or "unknown"))
except (OSError, ValueError, IndexError, KeyError):
    words.append("cc=unknown")
print("build " + " ".join(words))
PY
}

# the machine: date, CPU, kernel, DPDK, hugepages (total, free and size: psb's EAL takes
# its memory from them unless the command line says --no-huge)
bench_machine() {
	echo "date $(date -u +%FT%TZ)"
	echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "simd $(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -xE 'sse4_2|avx|avx2|avx512f|avx512bw' | tr '\n' ' ' | sed 's/ $//')"
	echo "cores $(nproc)"
	echo "kernel $(uname -r)"
	echo "dpdk $(pkg-config --modversion libdpdk 2>/dev/null || echo unknown)"
	echo "hugepages_free $(awk '/HugePages_Free/ {print $2}' /proc/meminfo)"
	echo "hugepages_total $(awk '/HugePages_Total/ {print $2}' /proc/meminfo)" \
		"size_kb $(awk '/Hugepagesize/ {print $2}' /proc/meminfo)"
}

# bench_scraper NAME: the psb-scrape to use, printed. It is tooling, not the psb under test:
# $PSB_SCRAPE if set, else this tree's build/scripts/bench/scrape/psb-scrape (brought up to
# date first), whichever build $PSB_BUILD names: an older build of psb has none, or an old
# one at app/psb-scrape/. Exits with a hint when there is none.
bench_scraper() {
	local s=${PSB_SCRAPE:-build/scripts/bench/scrape/psb-scrape}
	if [ -z "${PSB_SCRAPE:-}" ] && [ -f build/build.ninja ]; then
		ninja -C build scripts/bench/scrape/psb-scrape > /dev/null ||
			{ echo "$1: cannot build psb-scrape (ninja -C build scripts/bench/scrape/psb-scrape)" >&2; exit 1; }
	fi
	[ -x "$s" ] || { echo "$1: no psb-scrape at $s (meson setup build && ninja -C build, or PSB_SCRAPE=PATH)" >&2; exit 1; }
	echo "$s"
}

# bench_scraper_about SCRAPE: the ABOUT.txt line of the scraper a run used (its revision
# may not be the psb's)
bench_scraper_about() {
	if [ -z "${PSB_SCRAPE:-}" ]; then
		echo "scraper $1 revision $(bench_revision build)"
	else
		echo "scraper $1"
	fi
}

# bench_about BUILD PINNING COMMAND: the ABOUT.txt of a run of BUILD's binaries; with
# PSB_BENCH_BASELINE set (all.sh: a run of an older build on purpose, the baseline of the run
# beside it), a line that says so (check_docs.py --drift leaves it out)
bench_about() {
	echo "version $(bench_version "$1")"
	echo "revision $(bench_revision "$1")"
	[ -z "${PSB_BENCH_BASELINE:-}" ] || echo "baseline older code on purpose: $PSB_BENCH_BASELINE"
	bench_build "$1"
	bench_machine
	echo "pinning $2"
	echo "command $3"
}
