# shellcheck shell=bash
# Sourced by the benchmark scripts: where a result comes from, for the ABOUT.txt beside it.

# revision [BUILD]: the commit of the tree BUILD was configured from (default: this one),
# whether tracked files differ from it, and "build=stale" when BUILD is older than them.
bench_revision() {
	local src=. rev dirty stale=""
	if [ -n "${1:-}" ] && [ -f "$1/meson-info/meson-info.json" ]; then
		src=$(python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["directories"]["source"])' \
			"$1/meson-info/meson-info.json")
		ninja -C "$1" -n 2>/dev/null | grep -q "no work to do" || stale=" build=stale"
	fi
	rev=$(git -C "$src" rev-parse HEAD 2>/dev/null || echo unknown)
	dirty=$([ -z "$(git -C "$src" status --porcelain --untracked-files=no 2>/dev/null)" ] &&
		echo false || echo true)
	echo "$rev dirty=$dirty$stale"
}

# the machine: date, CPU, kernel, DPDK, free hugepages
bench_machine() {
	echo "date $(date -u +%FT%TZ)"
	echo "cpu $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"
	echo "cores $(nproc)"
	echo "kernel $(uname -r)"
	echo "dpdk $(pkg-config --modversion libdpdk 2>/dev/null || echo unknown)"
	echo "hugepages_free $(awk '/HugePages_Free/ {print $2}' /proc/meminfo)"
}
