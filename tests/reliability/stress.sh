#!/bin/sh
# stress.sh: the long tier of the reliability tests (make stress). Runs
# every tests/reliability/rel_*.sh with REL_TIER=stress (more threads'
# work, 200 kill -9s, 20 s fork and spawn loops, CPython's regression
# suite) and counts PASS/FAIL/SKIP like tests/run.sh. Not run by make
# test: it does nothing without REL_TIER=stress or --run.
cd "$(dirname "$0")/../.." || exit 2
[ "$1" = --run ] || [ "${REL_TIER:-}" = stress ] || {
	echo "stress.sh: run through 'make stress' (or with --run)" >&2
	exit 0
}
export REL_TIER=stress
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for t in tests/reliability/rel_*.sh; do
	echo "== $t"
	timeout 7200 sh "$t" 2>&1 | tee -a "$out" | grep -E '^(PASS|FAIL|SKIP) |^  ' 
done
passed=$(grep -c '^PASS ' "$out")
failed=$(grep -c '^FAIL ' "$out")
skipped=$(grep -c '^SKIP ' "$out")
echo "$skipped skipped"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
