# shellcheck shell=bash
# Sourced by the benchmark scripts: where a result comes from, for the ABOUT.txt beside it.

# revision: the commit of the working tree and whether tracked files differ from it
bench_revision() {
	local rev dirty
	rev=$(git rev-parse HEAD 2>/dev/null || echo unknown)
	dirty=$([ -z "$(git status --porcelain --untracked-files=no 2>/dev/null)" ] && echo false || echo true)
	echo "$rev dirty=$dirty"
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
