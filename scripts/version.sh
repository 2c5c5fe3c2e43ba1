#!/bin/sh
# psb's version and the git revision of this tree: the one place both come from, for the
# build (meson's vcs_tag puts the revision into every program) and for the shell scripts.
#
#   scripts/version.sh revision   the commit of the tree, "-dirty" after it when tracked
#                                 files differ from it; exit 1 when the tree is not a git
#                                 checkout of its own (a tarball: the build says unknown)
#   scripts/version.sh version    the project's version, from meson.build
#   scripts/version.sh line PROG  PROG's --version line: "PROG 0.1.0 (git 1a2b3c4d5e6f, dirty)"
set -eu
cd "$(dirname "$0")/.."

revision() {
	local top rev
	# only psb's own checkout: a tarball unpacked inside another repository is not it
	top=$(git rev-parse --show-toplevel 2>/dev/null) || return 1
	[ "$(cd "$top" && pwd -P)" = "$(pwd -P)" ] || return 1
	rev=$(git rev-parse --verify HEAD 2>/dev/null) || return 1
	# --no-optional-locks: a build running beside git commands takes no lock of theirs
	if [ -n "$(git --no-optional-locks status --porcelain --untracked-files=no)" ]; then
		echo "$rev-dirty"
	else
		echo "$rev"
	fi
}

version() {
	sed -n "s/^[[:space:]]*version: '\([^']*\)',\$/\1/p" meson.build | head -n 1
}

case ${1:-} in
revision) revision ;;
version) version ;;
line)
	[ $# -eq 2 ] || { echo "usage: scripts/version.sh line PROG" >&2; exit 2; }
	rev=$(revision) || rev=unknown
	case $rev in
	*-dirty) echo "$2 $(version) (git $(echo "$rev" | cut -c1-12), dirty)" ;;
	unknown) echo "$2 $(version) (git unknown)" ;;
	*) echo "$2 $(version) (git $(echo "$rev" | cut -c1-12))" ;;
	esac
	;;
*) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
