#!/bin/sh
# A C++ program with STL containers (acc_stl.cc: vector<string>,
# map<int, string>, vector<vector<int>>, part freed, the rest held at
# exit), built here with Debian's g++ and libstdc++.
#   rate 1: against heaptrack (acc.py ALLOW); and the in-use at exit
#     against the program's own count of the bytes it holds through
#     operator new (it replaces operator new and delete with counting
#     ones), within 8 KB: stdio's buffer for stdout (4 KB) is heap too;
#   default rate, RUNS runs: the mean in-use at exit within 3 standard
#     errors (plus the same 8 KB) of that count, and the mean alloc_space
#     within 3 standard errors of heaptrack's total (the program makes
#     the same calls every run).
. "$(dirname "$0")/lib.sh"
need_base acc.cxx
need_tool acc.cxx g++
oracle_tmpdir
RUNS=$(by_tier 10 40)
P=$TMPD/acc_stl
if ! g++ -O2 -Wall -Wextra -Werror -Wno-mismatched-new-delete -o "$P" \
	"$REPO/tests/accuracy/acc_stl.cc" 2>"$TMPD/cc.err"; then
	fail acc.cxx.build "$(head -5 "$TMPD/cc.err")"
	exit 1
fi
vs_heaptrack acc.cxx 120 "$P" 100000 || FAILED=1
[ -n "$HT_TOTAL" ] || exit 1
live=$(awk '$1 == "live" { print $2 }' "$TMPD/acc.cxx.r1.out")
$ACC near acc.cxx.rate1.own "$(sum_prof "$TMPD/acc.cxx.r1.pb.gz" inuse_space)" "$live" 0 8192 || FAILED=1
default_runs acc.cxx "$RUNS" 60 "$P" 100000 || exit 1
$ACC within acc.cxx.default.inuse "$live" "$(awk -v l="$live" 'BEGIN { print 8192 / l }')" \
	$(sums acc.cxx "$RUNS" inuse_space) || FAILED=1
$ACC within acc.cxx.default.alloc "$HT_TOTAL" 0 $(sums acc.cxx "$RUNS" alloc_space) || FAILED=1
exit $FAILED
