#!/bin/sh
# A thread that calls pthread_getattr_np on itself first thing (Rust's std
# does for every thread it starts), preloaded and linked, both unwinders,
# at rate 1 and at rate 64. glibc's pthread_getattr_np allocates while it
# holds the thread's descriptor lock; when that allocation was the
# thread's first sample, the capture asked pthread_getattr_np for the
# thread's stack and waited for that lock for ever (stack.c). At the
# default rate a thread's first sample is there about once in 16,000
# threads. Also: each thread asking about the main thread, and the
# attributes it gets back are right (the thread's own frame lies in the
# stack reported). Program rprog_getattr.c.
. "$(dirname "$0")/lib.sh"
need_lib rel.getattr
oracle_tmpdir
n=$(by_tier 100 2000)
for how in preload linked; do
	for u in dwarf fp; do
		for r in 1 64; do
			for who in self main; do
				name=rel.getattr.$how.$u.rate$r.$who
				if [ $how = preload ]; then pre=$LIB P=$PROG/rprog_getattr
				else pre="" P=$PROG/rprog_getattr_linked; fi
				run_td $name 60 env HEAPPROF_RATE=$r HEAPPROF_UNWIND=$u \
					HEAPPROF_OUT="$TMPD/ga.%p.pb.gz" LD_PRELOAD="$pre" \
					"$P" "$n" $who >"$TMPD/out" 2>"$TMPD/err" || continue
				if [ $RC -eq 0 ] && grep -qx "threads $n ok $n" "$TMPD/out"; then
					pass $name
				else
					fail $name "status $RC: $(cat "$TMPD/out") $(head -c 300 "$TMPD/err")"
				fi
			done
		done
	done
done
# The profile of the last run decodes.
parses rel.getattr.parses "$TMPD"/ga.*.pb.gz
exit $FAILED
