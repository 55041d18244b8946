#!/bin/sh
# The profiler's lines and the program's output (issue 29: "warnings go to
# stderr at start-up or at exit, never in the middle of the program's
# output"). rprog_warnings.c writes its own lines on stderr and, between
# them, makes the profiler warn: a sampled block freed twice (dfree), a
# signal dump into a directory that does not exist (dump). Every line of
# the program names its pid; "prog[PID]: last" is each process's last.
#   rel.warnings.ENDING.TRIGGER  the warning is there, once, and no
#                      heapprof[PID] line comes before prog[PID]: last, for
#                      ENDING exit, _exit, term (SIGTERM)
#   rel.warnings.fork.parent_once      a fork child does not print its
#                      parent's held line (the parent does, once)
#   rel.warnings.fork.child_own        the child prints its own, after
#                      its own last line
#   rel.warnings.quiet                 HEAPPROF_QUIET=1: no line (a guard:
#                      held lines obey it too)
#   rel.warnings.log.stderr_clean      HEAPPROF_LOG=FILE: none on stderr
#   rel.warnings.log.file              ... and the lines are in FILE, once
#   rel.warnings.reopen    the program closed fd 2 and a file got the
#                      number: no line of ours in that file; the line went
#                      to the stderr of start-up (a regular file, reopened
#                      by name), at the end
#   rel.warnings.startup   a start-up warning (unknown variable) still
#                      comes before the program's first line (a guard)
. "$(dirname "$0")/lib.sh"
need_lib rel.warnings
oracle_tmpdir
P=$PROG/rprog_warnings
DFREE="free() of an invalid or already freed pointer"
NOWRITE="cannot write profile"

# after FILE: every heapprof[PID] line comes after prog[PID]: last.
after() {
	awk '/^prog\[[0-9]+\]: last$/ { match($0, /\[[0-9]+\]/); last[substr($0, RSTART + 1, RLENGTH - 2)] = 1 }
	     /^heapprof\[/ { match($0, /\[[0-9]+\]/); if (!(substr($0, RSTART + 1, RLENGTH - 2) in last)) bad++ }
	     END { exit bad > 0 }' "$1"
}
# count FILE TEXT: lines of the profiler holding TEXT
count() { grep '^heapprof\[' "$1" | grep -cF "$2"; }

# run NAME ENV... -- ARGS...: the program under the profiler at rate 1,
# stdout and stderr in $TMPD/NAME.err (one file: their order is kept).
run() {
	_n=$1; shift
	_e=""
	while [ "$1" != -- ]; do _e="$_e $1"; shift; done
	shift
	# shellcheck disable=SC2086
	run_t rel.warnings.$_n 60 env HEAPPROF_RATE=1 HEAPPROF_SIGNAL=USR2 \
		HEAPPROF_OUT="$TMPD/nope/x.pb.gz" $_e LD_PRELOAD="$LIB" "$P" "$@" \
		>"$TMPD/$_n.err" 2>&1
}

for ending in exit _exit term; do
	for trig in dfree dump; do
		n=$ending.$trig
		run $n -- $trig $ending || continue
		want=0; [ $ending = term ] && want=143
		msg=$DFREE; [ $trig = dump ] && msg=$NOWRITE
		c=$(count "$TMPD/$n.err" "$msg")
		if [ $RC -eq $want ] && [ "$c" -eq 1 ] && after "$TMPD/$n.err"; then pass rel.warnings.$n
		else fail rel.warnings.$n "status $RC, $c lines of '$msg'; stderr: $(tr '\n' '|' <"$TMPD/$n.err")"; fi
	done
done

# fork: the parent held the dfree line when it forked
if run fork -- dfree fork; then
	f=$TMPD/fork.err
	ppid=$(sed -n 's/^prog\[\([0-9]*\)\]: first$/\1/p' "$f")
	cpid=$(sed -n 's/^prog\[\([0-9]*\)\]: child first$/\1/p' "$f")
	if [ -n "$ppid" ] && [ -n "$cpid" ] && after "$f" && [ "$(count "$f" "$DFREE")" -eq 1 ] &&
		[ "$(grep -c "^heapprof\[$ppid\]: $DFREE" "$f")" -eq 1 ]; then
		pass rel.warnings.fork.parent_once
	else fail rel.warnings.fork.parent_once "parent $ppid, child $cpid: $(tr '\n' '|' <"$f")"; fi
	if [ -n "$cpid" ] && [ "$(grep -c "^heapprof\[$cpid\]: $NOWRITE" "$f")" -eq 1 ] && after "$f"; then
		pass rel.warnings.fork.child_own
	else fail rel.warnings.fork.child_own "child $cpid: $(tr '\n' '|' <"$f")"; fi
fi

if run quiet HEAPPROF_QUIET=1 -- dfree exit; then
	if [ $RC -eq 0 ] && ! grep -q '^heapprof\[' "$TMPD/quiet.err" && grep -q ': last$' "$TMPD/quiet.err"; then
		pass rel.warnings.quiet
	else fail rel.warnings.quiet "status $RC: $(tr '\n' '|' <"$TMPD/quiet.err")"; fi
fi

# HEAPPROF_LOG, relative to the directory of start-up
log=$TMPD/h.log
if (cd "$TMPD" && run log HEAPPROF_LOG=h.log -- dfree fork); then
	if ! grep -q '^heapprof\[' "$TMPD/log.err" && grep -q ': last$' "$TMPD/log.err"; then
		pass rel.warnings.log.stderr_clean
	else fail rel.warnings.log.stderr_clean "$(tr '\n' '|' <"$TMPD/log.err")"; fi
	if [ -f "$log" ] && [ "$(count "$log" "$DFREE")" -eq 1 ] && [ "$(count "$log" "$NOWRITE")" -ge 2 ]; then
		pass rel.warnings.log.file
	else fail rel.warnings.log.file "$(tr '\n' '|' <"$log" 2>&1)"; fi
fi

# fd 2 closed and given to the program's file before the end
if run reopen -- dfree reopen "$TMPD/data"; then
	if [ $RC -eq 0 ] && [ "$(cat "$TMPD/data")" = data ] && after "$TMPD/reopen.err" &&
		[ "$(count "$TMPD/reopen.err" "$DFREE")" -eq 1 ]; then
		pass rel.warnings.reopen
	else fail rel.warnings.reopen "status $RC; data: $(tr '\n' '|' <"$TMPD/data"); stderr: $(tr '\n' '|' <"$TMPD/reopen.err")"; fi
fi

if run startup HEAPPROF_NO_SUCH_THING=1 -- none exit; then
	if [ "$(sed -n 1p "$TMPD/startup.err" | grep -c '^heapprof\[.*HEAPPROF_NO_SUCH_THING')" -eq 1 ]; then
		pass rel.warnings.startup
	else fail rel.warnings.startup "$(tr '\n' '|' <"$TMPD/startup.err")"; fi
fi
