#!/bin/sh
# C++: operator new/delete (scalar, array, nothrow, aligned) reach the
# profiler through libstdc++'s calls to malloc and free, and are counted
# exactly at rate 1; C++ exceptions still unwind (the profiler's unwinder
# defines no _Unwind_* symbol; the libunwind opt-in is loaded RTLD_LOCAL).
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
# The leaf frame of a new'd object is operator new, in libstdc++.
if go tool pprof -traces "$TMPD/cxx.pb.gz" 2>/dev/null | grep -A1 'bytes:  48B' | grep -q 'operator new\|_Znwm'; then
	pass cxx.operator_new_in_stack
else
	fail cxx.operator_new_in_stack "no operator new frame above site_new"
fi
exit $FAILED
