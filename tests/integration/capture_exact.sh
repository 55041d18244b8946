#!/bin/sh
# At rate 1 every allocation is recorded: each site's four values must equal
# the truth the program counted, exactly, through every member of the malloc
# family; preloaded with each unwinder (dwarf, the default; libunwind, the
# opt-in; frame pointers), and linked in statically (libheapprof.a).
. "$(dirname "$0")/lib.sh"
need_lib capture_exact
need_go capture_exact
oracle_tmpdir

run_case() { # name, env..., -- program
	name=$1; shift
	if ! env "$@" HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/$name.pb.gz" \
		LD_PRELOAD="${PRELOAD-$LIB}" "$PROG/prog_pattern" >"$TMPD/$name.exp" 2>"$TMPD/$name.err"; then
		fail "$name.program" "prog_pattern failed: $(head -5 "$TMPD/$name.err")"
		return
	fi
	pass "$name.program"
	check_parses "$name.parses" "$TMPD/$name.pb.gz"
	$PROFSUM check "$name" "$TMPD/$name.exp" 0 "$TMPD/$name.pb.gz" || FAILED=1
}

run_case dwarf HEAPPROF_UNWIND=dwarf
run_case libunwind HEAPPROF_UNWIND=libunwind
run_case fp HEAPPROF_UNWIND=fp

# Linked in: the program carries heapprof itself, nothing is preloaded.
if cc -std=c11 -D_GNU_SOURCE -O1 -g -fno-omit-frame-pointer -fno-inline \
	-o "$TMPD/prog_linked" "$REPO/tests/integration/prog_pattern.c" \
	"$REPO/build/libheapprof.a" -lz -lm -ldl -lpthread 2>"$TMPD/cc.err"; then
	if HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/linked.pb.gz" "$TMPD/prog_linked" \
		>"$TMPD/linked.exp" 2>"$TMPD/linked.err"; then
		pass linked.program
		$PROFSUM check linked "$TMPD/linked.exp" 0 "$TMPD/linked.pb.gz" || FAILED=1
	else
		fail linked.program "$(head -5 "$TMPD/linked.err")"
	fi
else
	fail linked.build "$(head -5 "$TMPD/cc.err")"
fi

# Without the profiler the program's own checks pass too (the baseline).
if "$PROG/prog_pattern" >/dev/null 2>"$TMPD/base.err"; then
	pass baseline.program
else
	fail baseline.program "$(head -5 "$TMPD/base.err")"
fi
exit $FAILED
