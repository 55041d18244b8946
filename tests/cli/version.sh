#!/bin/sh
# tests/cli/version.sh: `heapprof --version` names the version and the git
# commit, baked in at build time.
#  - version.clone: build/heapprof (built in this clone) says
#    "heapprof MAJOR.MINOR (commit C)" with C the clone's HEAD (12 hex
#    digits, "-dirty" if the tree has uncommitted changes);
#  - version.tarball: a `git archive` tarball of HEAD, unpacked where there
#    is no .git, builds heapprof (-O0 to be quick) and names the same
#    commit (tools/commit.txt, filled in by git archive);
#  - version.no_commit: a tree with neither still builds the version
#    header, saying "unknown".
# Prints PASS name / FAIL name / SKIP name: why.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
FAILED=0
pass() { echo "PASS version.$1"; }
fail() { echo "FAIL version.$1"; [ -n "$2" ] && echo "  version.$1: $2" >&2; FAILED=1; }
skip() { echo "SKIP version.$1: $2"; }
skip_tool() { echo "SKIP version.$1: missing tool $2 (Debian package ${3:-$2}; make test installs it)"; }

MAJ=$(sed -n 's/^#define HEAPPROF_VERSION_MAJOR \([0-9]*\).*/\1/p' "$REPO/include/heapprof.h")
MIN=$(sed -n 's/^#define HEAPPROF_VERSION_MINOR \([0-9]*\).*/\1/p' "$REPO/include/heapprof.h")
if ! command -v git >/dev/null 2>&1; then
	skip_tool all git
	exit 0
fi
if ! HEAD=$(git -C "$REPO" rev-parse --short=12 HEAD 2>/dev/null); then
	skip all "not a git clone (a source tarball: tools/commit.txt names the commit)"
	exit 0
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

got=$("$REPO/build/heapprof" --version 2>&1)
case $got in
"heapprof $MAJ.$MIN (commit $HEAD)" | "heapprof $MAJ.$MIN (commit $HEAD-dirty)") pass clone ;;
*) fail clone "got '$got', want 'heapprof $MAJ.$MIN (commit $HEAD[-dirty])'" ;;
esac

mkdir -p "$T/src"
if git -C "$REPO" archive --format=tar HEAD | tar -x -C "$T/src" &&
	[ ! -e "$T/src/.git" ]; then
	if make -C "$T/src" -j2 OPT=-O0 build/heapprof >"$T/make.log" 2>&1; then
		got=$("$T/src/build/heapprof" --version 2>&1)
		if [ "$got" = "heapprof $MAJ.$MIN (commit $HEAD)" ]; then
			pass tarball
		else
			fail tarball "got '$got', want 'heapprof $MAJ.$MIN (commit $HEAD)'"
		fi
	else
		fail tarball "build: $(tail -5 "$T/make.log")"
	fi
	# Neither .git nor a filled-in tools/commit.txt.
	printf '$Format:%%H$\n' >"$T/src/tools/commit.txt"
	if make -C "$T/src" build/gen/hp_version.h >"$T/make.log" 2>&1 &&
		grep -q '"unknown"' "$T/src/build/gen/hp_version.h"; then
		pass no_commit
	else
		fail no_commit "$(cat "$T/src/build/gen/hp_version.h" 2>/dev/null) $(tail -3 "$T/make.log")"
	fi
else
	fail tarball "git archive failed"
fi
exit $FAILED
