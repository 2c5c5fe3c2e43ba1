#!/bin/bash
# Install what psb needs to build, test and run (Debian 12, as root), and
# reserve hugepages when asked and possible. Safe to run again.
#   scripts/setup.sh             packages + hugepages (falls back to --no-huge)
#   scripts/setup.sh --no-huge   packages only
set -euo pipefail

PKGS=(
	build-essential pkg-config meson ninja-build python3
	libdpdk-dev dpdk-dev dpdk
	libjansson-dev libpcap-dev libcmocka-dev libibverbs-dev libmicrohttpd-dev
	libcurl4-openssl-dev libyajl-dev libisal-dev libzmq3-dev zlib1g-dev
	clang libclang-rt-14-dev
	tshark iproute2 iputils-ping tmux curl nftables
	prometheus python3-prometheus-client
	python3-dev python3-numpy python3-pytest python3-torch
	slurm-wlm munge
)
HUGE_MB=${PSB_HUGE_MB:-1024}
want_huge=1
[ "${1:-}" = "--no-huge" ] && want_huge=0

say() { echo "setup: $*"; }

if [ "$(id -u)" != 0 ]; then
	echo "setup: must run as root (installs Debian packages)" >&2
	exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -ne 0 ]; then
	say "installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# tshark asks whether non-root users may capture; answer no.
	echo "wireshark-common wireshark-common/install-setuid boolean false" | debconf-set-selections
	apt-get update -q >/dev/null
	apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
	# the tests need prometheus' promtool, not a Prometheus server on the benchmark host
	if [[ " ${missing[*]} " == *" prometheus "* ]] && command -v systemctl >/dev/null; then
		systemctl disable --now prometheus >/dev/null 2>&1 || true
	fi
	say "packages installed"
else
	say "packages present"
fi

if [ $want_huge = 1 ]; then
	pages=$((HUGE_MB / 2))
	cur=$(cat /proc/sys/vm/nr_hugepages 2>/dev/null || echo 0)
	if [ "$cur" -lt "$pages" ]; then
		echo "$pages" > /proc/sys/vm/nr_hugepages 2>/dev/null || true
	fi
	if ! grep -q ' hugetlbfs ' /proc/mounts; then
		mkdir -p /dev/hugepages
		mount -t hugetlbfs nodev /dev/hugepages 2>/dev/null || true
	fi
	free=$(awk '/HugePages_Free/ {print $2}' /proc/meminfo)
	if grep -q ' hugetlbfs ' /proc/mounts && [ "${free:-0}" -gt 0 ]; then
		say "hugepages: $((free * 2)) MB free"
	else
		say "no hugepages available here; psb runs with --no-huge"
	fi
fi
