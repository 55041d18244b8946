#!/bin/sh
# Runs every test: unit binaries (build/tests/test_*), integration and oracle
# scripts (tests/integration/*.sh, tests/oracle/*.sh). Every test prints
# "PASS name" / "FAIL name" / "SKIP name: why"; this script counts them and
# ends with "N passed, N failed". Exit status 1 if anything failed.
cd "$(dirname "$0")/.." || exit 2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
run() {
	# $1: label, rest: command. A test that dies without printing counts
	# as one failure.
	label=$1; shift
	timeout 600 "$@" >"$out.one" 2>"$out.err"
	rc=$?
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
for t in build/tests/test_*; do
	[ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/integration/*.sh tests/reliability/*.sh tests/oracle/*.sh tests/cli/*.sh fuzz/*.sh; do
	[ -f "$t" ] && run "$(basename "$t")" sh "$t"
done
passed=$(grep -c '^PASS ' "$out")
failed=$(grep -c '^FAIL ' "$out")
skipped=$(grep -c '^SKIP ' "$out")
echo "$skipped skipped"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
