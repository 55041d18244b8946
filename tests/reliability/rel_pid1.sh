#!/bin/sh
# The first process of a PID namespace (a container's init): the kernel
# ignores SIGTERM and SIGINT there while their action is the default one,
# so the program runs on. Under the profiler the ending handler wrote the
# exit profile at the signal and marked the process as exiting: no later
# dump, and at the real exit no exit profile, so the last profile missed
# everything after the signal (hP's report, RELIABILITY.md). Program
# rprog_pid1.c, under `unshare -pf --mount-proc` (skipped where that is
# not allowed).
#   rel.pid1.same      status 0 and "alive 1", as without the profiler
#   rel.pid1.last      the exit profile holds the block kept after the
#                      signals (after_signals)
. "$(dirname "$0")/lib.sh"
need_lib rel.pid1
oracle_tmpdir
P=$PROG/rprog_pid1
if ! command -v unshare >/dev/null 2>&1 ||
	! unshare -pf --mount-proc true >/dev/null 2>&1; then
	skip rel.pid1 "unshare -pf --mount-proc is not allowed here"
	exit 0
fi
d=$TMPD/pid1; mkdir -p "$d"
if run_t rel.pid1 60 unshare -pf --mount-proc env HEAPPROF_RATE=1 \
	HEAPPROF_OUT="$d/p.pb.gz" LD_PRELOAD="$LIB" "$P" >"$d/out" 2>"$d/err"; then
	if [ $RC -eq 0 ] && [ "$(cat "$d/out")" = "alive 1" ]; then
		pass rel.pid1.same
	else
		fail rel.pid1.same "status $RC, stdout $(cat "$d/out"), $(head -c 200 "$d/err")"
	fi
	if [ -f "$d/p.pb.gz" ] &&
		"$HEAPPROF" top -n 50 "$d/p.pb.gz" 2>"$d/top.err" | grep -q after_signals; then
		pass rel.pid1.last
	else
		fail rel.pid1.last "no after_signals in the exit profile: $(ls "$d" | tr '\n' ' ') $(head -c 200 "$d/err")"
	fi
fi
