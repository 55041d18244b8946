#!/bin/sh
# tests/cli/make_deps.sh: plain `make` on a machine without a build
# dependency names the missing Debian package and how to install it (it
# failed with the compiler's "libdw.h: No such file": issue 30, item 8).
# The missing header is simulated with the Makefile's DEP_HEADERS list.
#   make_deps.missing   `make all` with an absent header: status != 0,
#                       "missing headers: ... (libfake-dev)", the
#                       `make deps` and apt-get lines, no compiler error
#   make_deps.present   `make check-deps` with the real list: status 0, silent
# Prints PASS name / FAIL name.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
FAILED=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; [ -n "$2" ] && echo "  $1: $2" >&2; FAILED=1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

make -C "$REPO" --no-print-directory all \
	DEP_HEADERS="heapprof_test_absent/libdw.h:libfake-dev zlib.h:zlib1g-dev" >"$T/out" 2>"$T/err"
st=$?
if [ $st -ne 0 ] &&
	grep -q "missing headers: heapprof_test_absent/libdw.h (libfake-dev)" "$T/err" &&
	grep -q "make deps" "$T/err" && grep -q "apt-get install libfake-dev\$" "$T/err" &&
	! grep -q "No such file" "$T/err" && ! grep -q "zlib1g-dev" "$T/err"; then
	pass make_deps.missing
else
	fail make_deps.missing "status $st: $(head -3 "$T/err")"
fi

make -C "$REPO" --no-print-directory check-deps >"$T/out" 2>"$T/err"
st=$?
if [ $st -eq 0 ] && [ ! -s "$T/err" ] && [ ! -s "$T/out" ]; then
	pass make_deps.present
else
	fail make_deps.present "status $st: $(head -3 "$T/err")"
fi
exit $FAILED
