#!/bin/sh
# pthread_cancel (deferred) and the profiler: malloc and free are not
# cancellation points, so no cancel may act inside them, not even in a
# periodic dump that a sampled malloc takes; and a thread cancelled inside
# heapprof_dump_file() must leave the dump lock free (later dumps, the exit
# one included, waited for it for ever, or 5 s and no exit profile).
# Program rprog_cancel.c.
. "$(dirname "$0")/lib.sh"
need_lib rel.cancel
oracle_tmpdir
P="$PROG/rprog_cancel"

# The worker allocates for 3 s with a cancel pending while periodic dumps
# (every second) run in its mallocs: same output and status as without
# the profiler ("mutex=free": cancelled at its pthread_testcancel).
same3 rel.cancel.malloc 120 env HEAPPROF_INTERVAL=1 "$P" malloc
if grep -q "did not end" "$TMPD"/rel.cancel.malloc/*.err; then
	fail rel.cancel.malloc.exit_profile "$(cat "$TMPD"/rel.cancel.malloc/*.err | head -c 300)"
else
	pass rel.cancel.malloc.exit_profile
fi

# A thread cancelled while it dumps: main's dump afterwards returns 0, and
# the exit profile is written (not left waiting for the dump lock).
# HEAPPROF_WRITE_EMPTY: at the default rate the ~1.5 MB allocated here go
# unsampled in ~5 % of runs, and a process that sampled nothing writes no
# exit profile (issue 15): the check failed 1 run in ~20.
for r in 1 524288; do
	d=$TMPD/dump.$r; mkdir -p "$d"
	run_t "rel.cancel.dump.rate$r" 120 env HEAPPROF_RATE=$r HEAPPROF_WRITE_EMPTY=1 \
		HEAPPROF_OUT="$d/e.%p.pb.gz" \
		LD_PRELOAD="$LIB" "$P" dump "$d/api.pb.gz" >"$d/out" 2>"$d/err" || continue
	if [ $RC -eq 0 ] && grep -q "dump after it: 0" "$d/out" && ls "$d"/e.*.pb.gz >/dev/null 2>&1; then
		pass "rel.cancel.dump.rate$r"
	else
		fail "rel.cancel.dump.rate$r" "status $RC: $(cat "$d/out") $(head -c 300 "$d/err")"
	fi
done
