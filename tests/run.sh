#!/bin/sh
# Runs every test: unit binaries (build/tests/test_*), integration and oracle
# scripts (tests/integration/*.sh, tests/oracle/*.sh). Every test prints
# "PASS name" / "FAIL name" / "SKIP name: why"; this script counts them and
# ends with "N passed, N failed". Exit status 1 if anything failed.
# A skip for a tool that is not installed reads "SKIP name: missing tool
# T ..." (skip_tool in tests/oracle/lib.sh, T_SKIP_TOOL in tests/test.h):
# under CI=true each one is also a FAIL, since `make test` installs every
# tool a test uses. Other skips (kernel, glibc, permissions, what only
# ../shared/corpus has) stay skips and say why (tests/README.md).
cd "$(dirname "$0")/.." || exit 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() {
	# $1: label, rest: command. A test that dies without printing counts
	# as one failure.
	label=$1; shift
	timeout 600 "$@" >"$out.one" 2>"$out.err"
	rc=$?
	if [ "${CI:-}" = true ]; then
		sed -n 's/^SKIP \(.*\): missing tool \(.*\)$/FAIL \1 (CI=true: missing tool \2)/p' \
			"$out.one" >"$out.ci"
		cat "$out.ci" >>"$out.one"
		rm -f "$out.ci"
	fi
	cat "$out.one" >>"$out"
	grep -E '^(PASS|FAIL|SKIP) ' "$out.one"
	if grep -q '^FAIL ' "$out.one" || { [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$out.one"; }; then
		if [ $rc -ne 0 ] && ! grep -q '^FAIL ' "$out.one"; then
			echo "FAIL $label (exit $rc)" | tee -a "$out"
		fi
		sed 's/^/    /' "$out.err" | tail -40
	fi
	rm -f "$out.one" "$out.err"
}
# The generated corpus (build/corpus) where ../shared/corpus is absent:
# the unit binaries read it; the scripts generate it on demand too.
if [ -z "${HEAPPROF_CORPUS:-}" ] && [ ! -d ../shared/corpus ]; then
	sh tests/corpus/gen.sh || echo "tests/corpus/gen.sh failed: the tests that read the corpus say why" >&2
fi
for t in build/tests/test_*; do
	[ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/integration/*.sh tests/reliability/*.sh tests/oracle/*.sh tests/cli/*.sh tests/accuracy/*.sh fuzz/*.sh; do
	[ -f "$t" ] && run "$(basename "$t")" sh "$t"
done
passed=$(grep -c '^PASS ' "$out")
failed=$(grep -c '^FAIL ' "$out")
skipped=$(grep -c '^SKIP ' "$out")
echo "$skipped skipped"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
