#!/bin/sh
# Threads and processes: cross-thread frees at rate 1 are exact; fork from
# a multi-threaded program does not deadlock and every process that
# sampled something writes its own profile (heapprof run: the template
# without %p gets .PID in children); a child that sampled nothing since the
# fork writes none and is counted (issue 29 item 7).
. "$(dirname "$0")/lib.sh"
need_lib capture_procs
need_go capture_procs
oracle_tmpdir
if timeout 120 env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/th.pb.gz" LD_PRELOAD="$LIB" \
	"$PROG/prog_threads" 4 20000 >"$TMPD/th.exp" 2>"$TMPD/th.err"; then
	pass procs.threads.program
	$PROFSUM check procs.threads "$TMPD/th.exp" 0 "$TMPD/th.pb.gz" || FAILED=1
else
	fail procs.threads.program "$(head -3 "$TMPD/th.err")"
fi

if timeout 120 "$HEAPPROF" run -r 1 -o "$TMPD/fk.pb.gz" -- "$PROG/prog_fork" "$TMPD/fk" \
	2>"$TMPD/fk.err"; then
	pass procs.fork.no_deadlock
	n=$(ls "$TMPD"/fk.*.pb.gz 2>/dev/null | wc -l)
	# 20 children: the one that allocates (site_child) writes a file,
	# beside the parent's own fk.pb.gz; the 19 others are counted.
	if [ -f "$TMPD/fk.pb.gz" ] && [ "$n" -eq 1 ] &&
		grep -q '^heapprof: 19 processes had no samples' "$TMPD/fk.err"; then
		pass procs.fork.one_file_per_pid
	else
		fail procs.fork.one_file_per_pid "parent file: $(ls "$TMPD/fk.pb.gz" 2>&1), children: $n, $(grep 'no samples' "$TMPD/fk.err")"
	fi
	$PROFSUM check procs.fork.parent "$TMPD/fk.parent" 0 "$TMPD/fk.pb.gz" || FAILED=1
	child=""
	for f in "$TMPD"/fk.*.pb.gz; do
		if $PROFSUM sums "$f" 2>/dev/null | grep -q site_child; then child=$f; fi
	done
	if [ -n "$child" ]; then
		$PROFSUM check procs.fork.child "$TMPD/fk.child" 0 "$child" || FAILED=1
	else
		fail procs.fork.child "no child profile has site_child"
	fi
else
	fail procs.fork.no_deadlock "exit $?: $(head -3 "$TMPD/fk.err")"
fi
exit $FAILED
