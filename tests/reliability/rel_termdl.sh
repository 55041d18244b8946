#!/bin/sh
# SIGTERM (default action, so the profiler's ending handler writes the exit
# profile) while the program is inside dlopen/dlclose: the handler's first
# encoding loaded libz and libm with a dlopen nested in the interrupted one
# ("Inconsistency detected by ld.so: dl-load.c: ... r->r_state == RT_ADD",
# status 127 instead of 143, in about 1 run in 8). The status must be 143
# every time (rel.termdl.status_143). The same with the program's own
# handler calling exit(3) or _exit(3) (rel.termdl.exit_status_3,
# rel.termdl._exit_status_3: the exit dump nested the same dlopen). Then
# such endings wrote no profile (a warning said so); now nothing a dump
# does loads a library (zlib is linked in, libm unused) and, while the
# loader's list is half-made, the dump does not ask the loader (build ids
# from the files, C++ names left mangled): every run must leave a whole
# gzip profile too, unless the signal landed inside the profiler itself
# (which may hold its locks then: no profile, one warning, as for every
# ending there). Program rprog_termdl.c (loops over libcrypt, or
# librchurn). In the exit mode the program blocks SIGTERM across dlclose
# (glibc's own exit-in-handler deadlock there: see the program). A hang
# prints every thread's stack (hang_dump) before the kill.
. "$(dirname "$0")/lib.sh"
need_lib rel.termdl
oracle_tmpdir
L=/usr/lib/x86_64-linux-gnu/libcrypt.so.1
[ -f "$L" ] || L=$PROG/librchurn.so
runs=$(by_tier 24 100)
for mode in default exit _exit; do
if [ $mode = default ]; then n=rel.termdl.status_143 want=143
else n=rel.termdl.${mode}_status_3 want=3; fi
bad=0 i=0 what=""
while [ $i -lt $runs ]; do
	i=$((i + 1))
	d=$TMPD/$mode.r$i; mkdir -p "$d"
	env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.pb.gz" LD_PRELOAD="$LIB" \
		"$PROG/rprog_termdl" "$L" $mode >"$d/out" 2>"$d/err" &
	pid=$!
	n2=0
	while ! [ -s "$d/out" ] && [ $n2 -lt 300 ]; do sleep 0.1; n2=$((n2 + 1)); done
	sleep "0.$((i % 3 + 1))"
	kill -TERM $pid
	# bounded wait: a hang is a failure too
	n2=0
	while kill -0 $pid 2>/dev/null && [ $n2 -lt 300 ]; do sleep 0.1; n2=$((n2 + 1)); done
	if kill -0 $pid 2>/dev/null; then
		# where it waits, in the log: a hang is diagnosed, not retried
		hang_dump $pid | sed "s/^/  $mode.r$i: /" >&2
		kill -KILL $pid; wait $pid
		bad=$((bad + 1)); what="$what hang"
		continue
	fi
	wait $pid
	rc=$?
	if [ $rc -ne $want ]; then
		bad=$((bad + 1)); what="$what $rc:$(head -c 120 "$d/err" | tr '\n' ' ')"
	elif ! gzip -t "$d/p.pb.gz" 2>/dev/null &&
	     ! grep -q 'inside the profiler' "$d/err"; then
		bad=$((bad + 1)); what="$what no-profile:$(head -c 120 "$d/err" | tr '\n' ' ')"
	fi
done
if [ $bad -eq 0 ]; then pass $n
else fail $n "$bad of $runs runs:$what"; fi
done
exit $FAILED
