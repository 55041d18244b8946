#!/bin/sh
# Part of CPython's own regression suite (Debian libpython3.11-testsuite)
# under the profiler, at the default rate and at rate 1: the same tests
# pass as without it (plan T24). Stress tier only (make stress).
. "$(dirname "$0")/lib.sh"
need_lib rel.cpython
if [ "$TIER" != stress ]; then
	skip rel.cpython "stress tier only (make stress)"
	exit 0
fi
PY=/usr/bin/python3
if ! $PY -c 'import test.test_list' 2>/dev/null; then
	skip rel.cpython "CPython's test suite is missing (apt-get install libpython3.$($PY -c 'import sys; print(sys.version_info[1])')-testsuite)"
	exit 0
fi
oracle_tmpdir
cd "$TMPD" || exit 1
TESTS="test_list test_dict test_set test_tuple test_json test_re test_bisect test_heapq
test_collections test_itertools test_functools test_string test_unicode test_bytes
test_threading test_pickle test_sort test_struct test_weakref test_gc"
# Rate 1 samples every allocation (a page and a stack each): a subset.
TESTS1="test_list test_dict test_json test_bisect test_heapq test_sort"
summary() { # the result lines of regrtest, without durations
	grep -E '^(All [0-9]+ tests OK|[0-9]+ tests? (OK|failed|skipped)|Tests result|    test_)' "$1" | sed 's/ (.*//'
}
for rate in 524288 1; do
	t=$TESTS
	[ $rate = 1 ] && t=$TESTS1
	run_t rel.cpython.base$rate 1800 $PY -m test $t >base$rate.out 2>&1 || continue
	summary base$rate.out >base.sum
	run_t rel.cpython.rate$rate 3600 env HEAPPROF_RATE=$rate HEAPPROF_OUT="$TMPD/py.$rate.%p.pb.gz" \
		LD_PRELOAD="$LIB" $PY -m test $t >r$rate.out 2>&1 || continue
	summary r$rate.out >r$rate.sum
	if cmp -s base.sum r$rate.sum && [ -s base.sum ]; then pass rel.cpython.rate$rate
	else fail rel.cpython.rate$rate "$(diff base.sum r$rate.sum | head -6 | tr '\n' ' ')"; fi
done
exit $FAILED
