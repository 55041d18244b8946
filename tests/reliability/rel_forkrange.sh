#!/bin/sh
# Fork while other threads give large sampled blocks back at the range's
# frontier (range.c): the child must not inherit the range's lists and
# commit marks half updated. Before the fork fence in range.c, about 1
# child in 15 died of SIGSEGV (its first large sample written to memory
# the parent had just returned to PROT_NONE). Program rprog_forkrange.c.
. "$(dirname "$0")/lib.sh"
need_lib rel.forkrange
oracle_tmpdir
secs=$(by_tier 10 60)
d=$TMPD/fr; mkdir -p "$d"
run_t rel.forkrange.children 300 env HEAPPROF_RATE=1 HEAPPROF_EXIT=0 LD_PRELOAD="$LIB" \
	"$PROG/rprog_forkrange" "$secs" >"$d/out" 2>"$d/err"
if [ $RC -eq 0 ] && grep -q "bad 0" "$d/out" && ! grep -q "forks 0 " "$d/out"; then
	pass rel.forkrange.children
else
	fail rel.forkrange.children "status $RC: $(cat "$d/out") $(head -c 300 "$d/err")"
fi
exit $FAILED
