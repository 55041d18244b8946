#!/bin/sh
# A signal handler that allocates, delivered at each of the first
# instructions of the process's first sampled allocation's trip through
# range.c (gdb: stop at heapprof__range_alloc's first call, step K
# instructions, deliver SIGUSR1), preloaded at rate 1. The handler's own
# allocation is served from the profiler's private memory by the same
# code. The shards' locks were set up by a pthread_once inside that trip:
# the handler's allocation waited for the once routine its own thread was
# running, for ever. SKIP without gdb. Program rprog_sigalloc.c.
. "$(dirname "$0")/lib.sh"
need_lib rel.sigalloc
oracle_tmpdir
if ! command -v gdb >/dev/null 2>&1; then
	skip_tool rel.sigalloc.first_sample gdb
	exit 0
fi
ks=$(seq 0 $(by_tier 3 1) 150 | tr '\n' ' ')
SA_FN=heapprof__range_alloc SA_KS="$ks" timeout -k 5 1200 gdb -q -batch -nx \
	-ex "set environment HEAPPROF_RATE=1" -ex "set environment HEAPPROF_EXIT=0" \
	-ex "set environment LD_PRELOAD=$LIB" \
	-ex "python exec(open('$(dirname "$0")/sigalloc_gdb.py').read())" \
	--args "$PROG/rprog_sigalloc" 200 >"$TMPD/gdb.out" 2>&1
if grep -q "^ran [1-9][0-9]* hangs 0$" "$TMPD/gdb.out"; then
	pass rel.sigalloc.first_sample
else
	fail rel.sigalloc.first_sample "$(grep '^hang\|^ran\|never' "$TMPD/gdb.out" | head -3 | cut -c1-400)"
fi
exit $FAILED
