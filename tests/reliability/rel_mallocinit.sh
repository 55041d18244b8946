#!/bin/sh
# glibc initialises its malloc at the first call, not thread-safely: two
# threads whose first calls meet both attach to the main arena, counted
# once, and the second to exit aborts (__malloc_arena_thread_freeres:
# a->attached_threads > 0). At rate 1 nothing reached glibc before main,
# and the first calls came from worker threads at once during a fork fence
# (rel.forkrange.children aborted so in CI once). The constructor now
# initialises glibc's malloc (init.c). Program rprog_mallocinit.c.
. "$(dirname "$0")/lib.sh"
need_lib rel.mallocinit
oracle_tmpdir
d=$TMPD/mi; mkdir -p "$d"

# Deterministic: the first thread to call glibc's malloc at rate 1 must not
# be the one that initialises it (its block would come from the brk heap).
run_t rel.mallocinit.first_thread 30 env HEAPPROF_RATE=1 HEAPPROF_EXIT=0 LD_PRELOAD="$LIB" \
	"$PROG/rprog_mallocinit" first >"$d/out" 2>"$d/err"
if [ $RC -eq 0 ] && [ "$(cat "$d/out")" = "heap 0" ]; then
	pass rel.mallocinit.first_thread
else
	fail rel.mallocinit.first_thread "status $RC: $(cat "$d/out") $(head -c 300 "$d/err")"
fi

# The race itself: 8 threads released together make their first call.
# Before the fix about 1 run in 250-1000 aborted on a 2-core VM.
runs=$(by_tier 40 2000)
bad=0 first=
i=0
while [ $i -lt "$runs" ]; do
	i=$((i + 1))
	run_t rel.mallocinit.race 30 env HEAPPROF_RATE=1 HEAPPROF_EXIT=0 LD_PRELOAD="$LIB" \
		"$PROG/rprog_mallocinit" race 8 >"$d/out" 2>"$d/err" || break
	if [ $RC -ne 0 ] || [ "$(cat "$d/out")" != "race ok" ]; then
		bad=$((bad + 1))
		[ -n "$first" ] || first="status $RC: $(cat "$d/out") $(head -c 300 "$d/err")"
	fi
done
if [ $bad -eq 0 ]; then
	pass rel.mallocinit.race
else
	fail rel.mallocinit.race "$bad of $runs runs failed; first: $first"
fi
exit $FAILED
