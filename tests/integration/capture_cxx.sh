#!/bin/sh
# C++: operator new/delete (scalar, array, nothrow, aligned) reach the
# profiler through libstdc++'s calls to malloc and free, and are counted
# exactly at rate 1, with stacks that start at the caller of new; C++
# exceptions still unwind (the profiler's unwinder defines no _Unwind_*
# symbol; the libunwind opt-in is loaded RTLD_LOCAL).
. "$(dirname "$0")/lib.sh"
need_lib capture_cxx
need_go capture_cxx
oracle_tmpdir
if HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/cxx.pb.gz" LD_PRELOAD="$LIB" \
	"$PROG/prog_cxx" >"$TMPD/cxx.exp" 2>"$TMPD/cxx.err"; then
	pass cxx.program_and_exceptions
else
	fail cxx.program_and_exceptions "$(head -5 "$TMPD/cxx.err")"
	exit 1
fi
check_parses cxx.parses "$TMPD/cxx.pb.gz"
$PROFSUM check cxx "$TMPD/cxx.exp" 0 "$TMPD/cxx.pb.gz" || FAILED=1
# Allocator entry frames (operator new, new[], nothrow, aligned) are not
# in the profile: the leaf of a new'd object is the function calling new
# (issue 14 item 2; before, every C++ stack started at operator new).
go tool pprof -traces "$TMPD/cxx.pb.gz" 2>/dev/null >"$TMPD/cxx.traces"
if grep -A1 'bytes:  48B' "$TMPD/cxx.traces" | grep -q '^ *[0-9.]*[kMG]*B *site_new$' &&
	! grep -q 'operator new\|_Znwm\|_Znam' "$TMPD/cxx.traces"; then
	pass cxx.leaf_is_the_caller_of_new
else
	fail cxx.leaf_is_the_caller_of_new "$(grep -A2 'bytes:  48B' "$TMPD/cxx.traces" | head -6)"
fi
exit $FAILED
