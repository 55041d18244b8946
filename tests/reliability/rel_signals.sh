#!/bin/sh
# SIGTERM and SIGINT as the program would see them without the profiler
# (issue 29, items 3-5; rules "no new signal behaviour" and "the profiler
# writes to the program's fds only what the user asked for"). Program
# rprog_signals.c, python script rpool_term.py.
#   rel.signals.pid1.WAIT.SIG  PID 1 of a namespace (unshare -pf) sent SIG
#                      by its child while in nanosleep, poll or epoll_wait:
#                      status and output as without the profiler (the
#                      kernel drops the signal: no EINTR)
#   rel.signals.altstack.{after,before}  a 2 KiB sigaltstack set after the
#                      library's start, or before its handler is put back
#                      (signal(SIGTERM, SIG_DFL)), then SIGTERM: killed by
#                      signal 15 as without the profiler, not 11
#   rel.signals.altstack.usr2  the same stack, HEAPPROF_SIGNAL=USR2 raised:
#                      status 0 and a profile (not SIGSEGV)
#   rel.signals.timeout.{profiles,stderr}  `timeout 1 heapprof run -r 1`
#                      on a program that allocates all the time, 10 runs
#                      (40 stress): a profile with the program's block in
#                      each, no line of the library's on stderr
#   rel.signals.pool.{stderr,profiles}  python3 multiprocessing.Pool(2):
#                      work, both workers busy at rate 1, terminate()
#                      (SIGTERM to the workers), 20 runs (100 stress):
#                      stderr identical to the run without the profiler,
#                      a profile from each worker
#   rel.signals.quiet  HEAPPROF_QUIET=1: no line on stderr where there
#                      would be warnings (an unknown HEAPPROF_ variable, an
#                      unwritable output) nor heapprof run's summary
. "$(dirname "$0")/lib.sh"
need_lib rel.signals
oracle_tmpdir
P=$PROG/rprog_signals
ulimit -c 0 2>/dev/null

# ------------------------------------------------------------------ PID 1
if ! command -v unshare >/dev/null 2>&1 ||
	! unshare -pf --mount-proc true >/dev/null 2>&1; then
	skip rel.signals.pid1 "unshare -pf --mount-proc is not allowed here"
else
	d=$TMPD/pid1; mkdir -p "$d"
	for w in nanosleep poll epoll; do
		for s in TERM INT; do
			n=rel.signals.pid1.$w.$s
			run_t $n.base 30 unshare -pf --mount-proc "$P" wait $w $s \
				>"$d/$w.$s.base" 2>&1 || continue
			brc=$RC
			run_t $n 30 unshare -pf --mount-proc env HEAPPROF_OUT="$d/$w.$s.pb.gz" \
				LD_PRELOAD="$LIB" "$P" wait $w $s >"$d/$w.$s.out" 2>&1 || continue
			if [ $RC -eq $brc ] && cmp -s "$d/$w.$s.base" "$d/$w.$s.out"; then
				pass $n
			else
				fail $n "status $RC vs $brc: $(head -c 200 "$d/$w.$s.out") vs $(head -c 200 "$d/$w.$s.base")"
			fi
		done
	done
fi

# ------------------------------------------------------ a small altstack
d=$TMPD/alt; mkdir -p "$d"
for o in after before; do
	n=rel.signals.altstack.$o
	run_t $n.base 30 "$P" altstack $o >"$d/$o.base" 2>/dev/null || continue
	brc=$RC
	run_t $n 30 env HEAPPROF_OUT="$d/$o.pb.gz" LD_PRELOAD="$LIB" "$P" altstack $o \
		>"$d/$o.out" 2>"$d/$o.err" || continue
	if [ $RC -eq $brc ] && [ $RC -eq 143 ]; then
		pass $n
	else
		fail $n "status $RC vs $brc without the profiler $(head -c 200 "$d/$o.err")"
	fi
done
n=rel.signals.altstack.usr2
if run_t $n 30 env HEAPPROF_SIGNAL=USR2 HEAPPROF_OUT="$d/u.%n.pb.gz" \
	LD_PRELOAD="$LIB" "$P" altstack after USR2 >"$d/u.out" 2>"$d/u.err"; then
	if [ $RC -eq 0 ] && ls "$d"/u.*.pb.gz >/dev/null 2>&1; then
		pass $n
	else
		fail $n "status $RC, files: $(ls "$d" | tr '\n' ' ')"
	fi
fi

# ---------------------------------------------------- timeout at rate 1
d=$TMPD/timeout; mkdir -p "$d"
runs=$(by_tier 10 40)
got=0 said=0 why=
i=0
while [ $i -lt "$runs" ]; do
	i=$((i + 1))
	mkdir -p "$d/$i"
	HEAPPROF_LIBRARY="$LIB" HEAPPROF_OUT="$d/$i/p.%p.pb.gz" \
		timeout -k 10 1 "$HEAPPROF" run -r 1 -- "$P" churn >"$d/$i/out" 2>"$d/$i/err"
	f=$(ls "$d/$i"/p.*.pb.gz 2>/dev/null | head -1)
	if [ -n "$f" ] && "$HEAPPROF" top -n 50 "$f" 2>/dev/null | grep -q keep_me; then
		got=$((got + 1))
	else
		why="$why run $i: $(ls "$d/$i" | tr '\n' ' ');"
	fi
	grep -q '^heapprof\[' "$d/$i/err" && said=$((said + 1))
done
if [ $got -eq "$runs" ]; then
	pass rel.signals.timeout.profiles
else
	fail rel.signals.timeout.profiles "a profile in $got of $runs runs:$why"
fi
if [ $said -eq 0 ]; then
	pass rel.signals.timeout.stderr
else
	fail rel.signals.timeout.stderr "the library wrote to stderr in $said of $runs runs: $(cat "$d"/*/err | grep '^heapprof\[' | head -2)"
fi

# --------------------------------------------- multiprocessing.Pool(2)
PY=$(dirname "$0")/rpool_term.py
if ! command -v python3 >/dev/null 2>&1; then
	skip rel.signals.pool "no python3"
else
	d=$TMPD/pool; mkdir -p "$d"
	runs=$(by_tier 20 100)
	if run_t rel.signals.pool.base 60 python3 "$PY" "$d/base.pids" >"$d/base.out" 2>"$d/base.err"; then
		differ=0 lost=0 why=
		i=0
		while [ $i -lt "$runs" ]; do
			i=$((i + 1))
			mkdir -p "$d/$i"
			run_t rel.signals.pool 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/$i/p.%p.pb.gz" \
				LD_PRELOAD="$LIB" python3 "$PY" "$d/$i/pids" \
				>"$d/$i/out" 2>"$d/$i/err" || break
			cmp -s "$d/base.err" "$d/$i/err" && cmp -s "$d/base.out" "$d/$i/out" ||
				{ differ=$((differ + 1)); why="$why $(head -c 200 "$d/$i/err")"; }
			for w in $(cat "$d/$i/pids" 2>/dev/null); do
				[ -f "$d/$i/p.$w.pb.gz" ] || lost=$((lost + 1))
			done
			[ -s "$d/$i/pids" ] || lost=$((lost + 1))
		done
		if [ $differ -eq 0 ]; then
			pass rel.signals.pool.stderr
		else
			fail rel.signals.pool.stderr "output differs in $differ of $i runs:$why"
		fi
		if [ $lost -eq 0 ]; then
			pass rel.signals.pool.profiles
		else
			fail rel.signals.pool.profiles "$lost workers' profiles missing in $i runs"
		fi
	fi
fi

# ------------------------------------------------------ HEAPPROF_QUIET
d=$TMPD/quiet; mkdir -p "$d"
# Without it, the same run warns (the test would prove nothing else).
HEAPPROF_NO_SUCH=1 HEAPPROF_OUT=/nonexistent/dir/p.pb.gz LD_PRELOAD="$LIB" \
	HEAPPROF_RATE=1 /bin/true 2>"$d/loud.err"
HEAPPROF_QUIET=1 HEAPPROF_NO_SUCH=1 HEAPPROF_OUT=/nonexistent/dir/p.pb.gz \
	LD_PRELOAD="$LIB" HEAPPROF_RATE=1 /bin/true 2>"$d/quiet.err"
HEAPPROF_QUIET=1 HEAPPROF_LIBRARY="$LIB" HEAPPROF_OUT="$d/r.%p.pb.gz" \
	"$HEAPPROF" run -r 1 -- ls / >/dev/null 2>>"$d/quiet.err"
if [ -s "$d/loud.err" ] && [ ! -s "$d/quiet.err" ] && ls "$d"/r.*.pb.gz >/dev/null 2>&1; then
	pass rel.signals.quiet
else
	fail rel.signals.quiet "quiet: $(head -c 300 "$d/quiet.err"); loud: $(head -c 100 "$d/loud.err")"
fi
