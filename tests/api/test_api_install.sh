#!/bin/bash
# libpsb as a user gets it: `meson install` into a scratch root, then the first program of
# docs/CLIENT.md built against the installed header with the installed pkg-config file (as
# C, and the header as C++), run against psb-ksrv. The library exports the API alone.
#
# usage: test_api_install.sh BUILD_DIR PATH/psb-ksrv SOURCE_ROOT [SANITIZERS]
# (SANITIZERS: the build's b_sanitize; its programs are built with them too)
set -u
build=${1:?usage: test_api_install.sh BUILD_DIR PATH/psb-ksrv SOURCE_ROOT}
ksrv=${2:?}
src=${3:?}
san=${4:-none}
sanflags=
[ "$san" = none ] || sanflags=-fsanitize=$san
tmp=$(mktemp -d /tmp/psb-api-install.XXXXXX) || exit 1
ksrv_pid=
cleanup() {
	[ -n "$ksrv_pid" ] && kill "$ksrv_pid" 2>/dev/null && wait "$ksrv_pid" 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 1' INT TERM
fail() { echo "test_api_install: FAIL: $*" >&2; exit 1; }

meson install -C "$build" --destdir "$tmp/root" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "meson install"; }
root=$tmp/root
hdr=$(find "$root" -path '*/include/psb/client.h' | head -1)
pc=$(find "$root" -name psb.pc | head -1)
lib=$(find "$root" -name 'libpsb.so.1' | head -1)
[ -n "$hdr" ] || fail "psb/client.h is not installed"
[ -n "$pc" ] || fail "psb.pc is not installed"
[ -n "$lib" ] || fail "libpsb.so.1 is not installed"
find "$root" -name 'psb_client.h' -o -name 'libpsbclient*' | grep -q . &&
	fail "internal headers or libpsbclient are installed"
# the APIs alone: psb_strerror, psb_version, psbc_* and psbs_*
extra=$(nm -D --defined-only "$lib" | awk '$2 == "T" { print $3 }' | sed 's/@.*//' |
	grep -vE '^(psb_strerror|psb_version|psb[cs]_[a-z_]+)$')
find "$root" -path '*/include/psb/server.h' | grep -q . || fail "psb/server.h is not installed"
[ -z "$extra" ] || fail "libpsb exports more than the API: $extra"
objdump -p "$lib" | grep -q 'SONAME *libpsb.so.1' || fail "libpsb's soname is not libpsb.so.1"

export PKG_CONFIG_LIBDIR=$(dirname "$pc") PKG_CONFIG_SYSROOT_DIR=$root
flags=$(pkg-config --cflags --libs psb) || fail "pkg-config psb"
awk '/^## A first program/ { f = 1 } f && /^```c$/ { c = 1; next } c && /^```$/ { exit }
	c { print }' "$src/docs/CLIENT.md" >"$tmp/pushpull.c"
[ -s "$tmp/pushpull.c" ] || fail "no C example under 'A first program' in docs/CLIENT.md"
# shellcheck disable=SC2086	# flags are words
cc -std=c11 -Wall -Wextra -Werror $sanflags -o "$tmp/pushpull" "$tmp/pushpull.c" $flags ||
	fail "the docs' example does not build against the installed library"
if command -v c++ >/dev/null 2>&1; then
	printf '#include <psb/client.h>\n#include <psb/server.h>\nint main() { psbc_opts o; psbs_opts so; psbc_opts_init(&o); psbs_opts_init(&so); return o.api != so.api; }\n' \
		>"$tmp/cxx.cc"
	# shellcheck disable=SC2086
	c++ -Wall -Werror $sanflags -o "$tmp/cxx" "$tmp/cxx.cc" $flags && LD_LIBRARY_PATH=$(dirname "$lib") "$tmp/cxx" ||
		fail "psb/client.h and psb/server.h from C++"
fi

# the ps-lite header, installed, as a ps-lite program is built against it
if command -v c++ >/dev/null 2>&1; then
	pflags=$(pkg-config --cflags --libs psb-pslite) || fail "pkg-config psb-pslite"
	# shellcheck disable=SC2086
	c++ -std=c++11 -Wall -Werror $sanflags -o "$tmp/kv_sums" "$src/tests/pslite/kv_sums.cc" \
		$pflags || fail "a ps-lite program against the installed ps-lite header"
	find "$root" -path '*/psb-pslite/ps/internal/psb_config.h' | grep -q . ||
		fail "ps/internal/psb_config.h is not installed"
fi

export LD_LIBRARY_PATH=$(dirname "$lib")
if [ -x "$tmp/kv_sums" ]; then
	PSB_KSRV=$ksrv timeout 60 "$src/scripts/local.sh" --timeout 50 1 2 "$tmp/kv_sums" \
		>"$tmp/pslite.out" 2>&1 || { cat "$tmp/pslite.out" >&2; fail "the ps-lite program, installed"; }
	[ "$(grep -c 'error 0, 0$' "$tmp/pslite.out")" = 2 ] ||
		{ cat "$tmp/pslite.out" >&2; fail "the ps-lite program, installed: sums"; }
fi
port=$(python3 -c 'import socket; s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
out=$("$tmp/pushpull" "127.0.0.1:$port" 2>&1) && fail "no server, yet the example succeeded: $out"
echo "$out" | grep -q "refused" || fail "no server: '$out' does not say refused"
"$ksrv" --ip 127.0.0.1 --port 0 --async --ready-file "$tmp/ready" --duration 60 -q \
	>"$tmp/ksrv.log" 2>&1 &
ksrv_pid=$!
for ((i = 0; i < 100; i++)); do [ -s "$tmp/ready" ] && break; sleep 0.05; done
port=$(cut -d' ' -f1 "$tmp/ready")
[ -n "$port" ] || fail "psb-ksrv did not start"
a=$("$tmp/pushpull" "127.0.0.1:$port") || fail "the example against psb-ksrv: $a"
b=$("$tmp/pushpull" "127.0.0.1:$port") || fail "the example, again: $b"
[ "$a" = "sums: 1 2 | 3 4 5 | 6" ] || fail "first run printed '$a'"
[ "$b" = "sums: 2 4 | 6 8 10 | 12" ] || fail "second run printed '$b'"
echo "test_api_install: installed header, library and pkg-config file; the docs' example runs"
