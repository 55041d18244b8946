#!/bin/sh
# exit() called by a signal handler of the program's that interrupted
# glibc's malloc (a common idiom, though not async-signal-safe). Program
# rprog_exitsig.c.
#   rel.exitsig.handler  10 runs (40 stress): each exits 0 within 10 s and
#                   writes its exit profile, whose memory comment leaves
#                   the allocator's figures out ("skipped"). The exit dump
#                   called mallinfo2, which waited for ever for the arena
#                   lock the interrupted malloc held (9 of 10 runs hung;
#                   SIGTERM was then held by the profiler too)
#   rel.exitsig.normal   exit() from main: the figures are there
#                   (allocator=glibc), the detection has no false positive
. "$(dirname "$0")/lib.sh"
need_lib rel.exitsig
oracle_tmpdir
P=$PROG/rprog_exitsig
N=$(by_tier 10 40)
bad=0 why=
i=0
while [ $i -lt $N ]; do
	i=$((i + 1))
	rm -f "$TMPD/h.pb.gz"
	if ! run_t rel.exitsig.handler.$i 10 env LD_PRELOAD="$LIB" \
		HEAPPROF_OUT="$TMPD/h.pb.gz" "$P" handler >"$TMPD/h.out" 2>&1; then
		bad=$((bad + 1)); why="$why run $i hung;"; continue
	fi
	if [ $RC -ne 0 ]; then
		bad=$((bad + 1)); why="$why run $i status $RC;"; continue
	fi
	# A SIGALRM that lands inside the profiler itself (a sample being
	# recorded) gets no exit profile, by design, and says so (init.c):
	# that run ended, which is what this test is about (a hang).
	if [ ! -f "$TMPD/h.pb.gz" ] && grep -q 'called inside the profiler' "$TMPD/h.out"; then
		:
	elif ! "$HEAPPROF" top "$TMPD/h.pb.gz" 2>/dev/null |
		grep -q 'allocator=skipped(dump in a signal handler'; then
		bad=$((bad + 1)); why="$why run $i: no profile or figures not skipped;"
	fi
done
if [ $bad -eq 0 ]; then
	pass rel.exitsig.handler
else
	fail rel.exitsig.handler "$bad of $N:$why"
fi

rm -f "$TMPD/n.pb.gz"
if run_t rel.exitsig.normal 20 env LD_PRELOAD="$LIB" \
	HEAPPROF_OUT="$TMPD/n.pb.gz" "$P" normal >"$TMPD/n.out" 2>&1; then
	if [ $RC -eq 0 ] && "$HEAPPROF" top "$TMPD/n.pb.gz" 2>/dev/null |
		grep -q 'heapprof: memory: rss=[0-9]* allocator=glibc held='; then
		pass rel.exitsig.normal
	else
		fail rel.exitsig.normal "status $RC: $("$HEAPPROF" top "$TMPD/n.pb.gz" 2>&1 | grep 'memory' | head -c 300)"
	fi
fi
exit $FAILED
