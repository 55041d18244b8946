#!/bin/sh
# Seccomp sandboxes (issue 29, item 2). A worker installs a filter that
# allows what glibc's malloc and the program need and kills (or traps, or
# fails with EPERM) everything else, then allocates: small blocks, large
# and huge ones (the range grows), reallocs, frees, a thread of its own.
# Under the profiler it died of SIGSYS: the sampled path read RLIMIT_AS
# (prlimit64) as the range grew, seeded a thread's sampler with gettid,
# and the exit dump opened, linked and renamed files; with RET_ERRNO the
# failed calls leaked EPERM into malloc's errno. Program rprog_seccomp.c,
# each run compared with the same run without the profiler (stdout and
# exit status), at rate 1 and at the default rate:
#   rel.seccomp.MODE.rate1 / .default   kill, trap, errno, prctl (the filter
#                       through prctl(PR_SET_SECCOMP)), kill_tsync (every
#                       thread, with the endpoint, push, a dump signal and
#                       periodic dumps on: their threads must be gone first),
#                       kill_term (ends by raise(SIGTERM): status 143, not
#                       the SIGSYS of our handler's calls), launch_kill and
#                       launch_errno (the filter installed by a launcher
#                       before exec: inherited)
#   rel.seccomp.MODE.nofile   no profile written once a filter is in force,
#                       and one "heapprof[" line on stderr saying so (launch:
#                       two, one for each program: the launcher installs a
#                       filter, the program it execs finds it at start-up)
#   rel.seccomp.kill.api      heapprof_dump_file() after the filter returns
#                       HEAPPROF_ESANDBOX (and the program lives)
#   rel.seccomp.linked.kill   the same with libheapprof.a linked in
#   rel.seccomp.madvise_eperm a filter not seen (raw system call) failing
#                       only madvise: MADV_POPULATE_* fails, errno is kept,
#                       the profile is written
#   rel.seccomp.none.profile  without a filter the exit profile is written
#                       and holds the allocations (churn): nothing lost
#   rel.seccomp.syscalls      (strace, if installed) after the filter, the
#                       profiled run makes no system call the unprofiled
#                       run does not make (RET_ERRNO: nothing fails)
. "$(dirname "$0")/lib.sh"
need_lib rel.seccomp
oracle_tmpdir
P=$PROG/rprog_seccomp
if ! "$P" kill >/dev/null 2>&1; then
	skip rel.seccomp "seccomp filters cannot be installed here (or not x86_64)"
	exit 0
fi

# one NAME ENV... -- ARGS...: base run, then rate 1 and default under the
# profiler with ENV; stdout and status compared; no profile; one line.
one() {
	_n=$1; shift
	_env=""
	while [ "$1" != -- ]; do _env="$_env $1"; shift; done
	shift
	d=$TMPD/$_n; mkdir -p "$d"
	run_t "rel.seccomp.$_n.base" 60 "$P" "$@" >"$d/base" 2>"$d/base.err" || return
	brc=$RC
	for r in 1 524288; do
		t=rate$r
		[ $r = 524288 ] && t=default
		rm -f "$d"/$t.*.pb.gz
		# shellcheck disable=SC2086
		run_t "rel.seccomp.$_n.$t" 60 env $_env HEAPPROF_RATE=$r \
			HEAPPROF_OUT="$d/$t.%p.pb.gz" LD_PRELOAD="$LIB" "$P" "$@" \
			>"$d/$t" 2>"$d/$t.err" || continue
		if [ $RC -eq $brc ] && cmp -s "$d/base" "$d/$t"; then
			pass "rel.seccomp.$_n.$t"
		else
			fail "rel.seccomp.$_n.$t" "status $RC vs $brc; stdout $(head -c 200 "$d/$t" | tr '\n' ' ') vs $(head -c 200 "$d/base" | tr '\n' ' '); $(head -c 300 "$d/$t.err")"
		fi
		nl=$(grep -c '^heapprof\[' "$d/$t.err")
		if ! ls "$d"/$t.*.pb.gz >/dev/null 2>&1 && [ "$nl" -eq "${NL:-1}" ]; then
			pass "rel.seccomp.$_n.$t.nofile"
		else
			fail "rel.seccomp.$_n.$t.nofile" "$(ls "$d" | tr '\n' ' '); $nl heapprof lines: $(head -c 300 "$d/$t.err")"
		fi
	done
}

one kill -- kill
# The API's dump answers HEAPPROF_ESANDBOX (-4019), making no call.
if grep -qx 'api -4019' "$TMPD/kill/rate1.err"; then
	pass rel.seccomp.kill.api
else
	fail rel.seccomp.kill.api "heapprof_dump_file: $(grep '^api' "$TMPD/kill/rate1.err")"
fi
one trap -- trap
one errno -- errno
one prctl -- prctl
one kill_tsync HEAPPROF_HTTP=127.0.0.1:0 HEAPPROF_PUSH=http://127.0.0.1:9 \
	HEAPPROF_SIGNAL=USR2 HEAPPROF_INTERVAL=1 -- kill tsync
one kill_term -- kill term
NL=2 one launch_kill -- launch kill "$P" none
NL=2 one launch_errno -- launch errno "$P" none

# A filter the profiler does not see (a raw system call instruction) that
# makes madvise fail with EPERM: sampling goes on, its MADV_POPULATE_*
# calls fail; errno stays the program's (stdout says), the profile is
# written and decodes.
d=$TMPD/madvise; mkdir -p "$d"
"$P" madvise >"$d/base" 2>&1
if run_t rel.seccomp.madvise 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.pb.gz" \
	LD_PRELOAD="$LIB" "$P" madvise >"$d/out" 2>"$d/err"; then
	if [ $RC -eq 0 ] && cmp -s "$d/base" "$d/out" && [ -s "$d/p.pb.gz" ] &&
		"$HEAPPROF" top "$d/p.pb.gz" >/dev/null 2>&1; then
		pass rel.seccomp.madvise_eperm
	else
		fail rel.seccomp.madvise_eperm "status $RC; $(head -c 200 "$d/out") $(ls "$d" | tr '\n' ' ') $(head -c 300 "$d/err")"
	fi
fi

# A vfork child installs a filter and execs (rprog_sbvfork): the filter
# binds the child, whose memory until the exec is the parent's. The
# parent runs as without the profiler (stdout: SIGTERM's action is the
# default; status 143) and writes its exit profile; no "installs a seccomp
# filter" line. Before (h17): the child's prctl marked the parent as
# sandboxed: no profile, and sigaction reported our handler.
d=$TMPD/vfork; mkdir -p "$d"
V=$PROG/rprog_sbvfork
run_t rel.seccomp.vfork.base 60 "$V" /bin/true >"$d/base" 2>"$d/base.err"
vrc=$RC
if run_t rel.seccomp.vfork 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.%p.pb.gz" \
	LD_PRELOAD="$LIB" "$V" /bin/true >"$d/out" 2>"$d/err"; then
	f=$(ls "$d"/p.*.pb.gz 2>/dev/null | head -1)
	if [ $RC -eq "$vrc" ] && cmp -s "$d/base" "$d/out" && [ -n "$f" ] &&
		"$HEAPPROF" top -n 50 "$f" >"$d/top" 2>&1 && grep -q sbvfork_keep "$d/top" &&
		! grep -q "installs a seccomp filter" "$d/err"; then
		pass rel.seccomp.vfork
	else
		fail rel.seccomp.vfork "status $RC vs $vrc; $(head -c 200 "$d/out" | tr '\n' ' ') vs $(head -c 200 "$d/base" | tr '\n' ' '); $(ls "$d" | tr '\n' ' '); $(head -c 300 "$d/err")"
	fi
fi

# Fork after the filter (rprog_sbfork): the children live, as without the
# profiler. Before (h17): each died of SIGSYS in our fork handler (getpid).
d=$TMPD/forkafter; mkdir -p "$d"
F=$PROG/rprog_sbfork
run_t rel.seccomp.fork_after.base 60 "$F" >"$d/base" 2>"$d/base.err"
frc=$RC
for r in 1 524288; do
	run_t rel.seccomp.fork_after.$r 60 env HEAPPROF_RATE=$r HEAPPROF_OUT="$d/p.%p.pb.gz" \
		LD_PRELOAD="$LIB" "$F" >"$d/out.$r" 2>"$d/err.$r" || continue
	if [ $RC -eq "$frc" ] && cmp -s "$d/base" "$d/out.$r" && grep -qx "sum 60" "$d/base"; then
		pass rel.seccomp.fork_after.$r
	else
		fail rel.seccomp.fork_after.$r "status $RC vs $frc; $(head -c 200 "$d/out.$r" | tr '\n' ' ') vs $(head -c 200 "$d/base" | tr '\n' ' ')"
	fi
done

# libheapprof.a linked in: the same interposers, in the executable.
d=$TMPD/linked; mkdir -p "$d"
"$P" kill >"$d/base" 2>&1
if run_t rel.seccomp.linked 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.%p.pb.gz" \
	"${P}_linked" kill >"$d/out" 2>"$d/err"; then
	if [ $RC -eq 0 ] && cmp -s "$d/base" "$d/out" && ! ls "$d"/p.*.pb.gz >/dev/null 2>&1; then
		pass rel.seccomp.linked.kill
	else
		fail rel.seccomp.linked.kill "status $RC; $(head -c 200 "$d/out") $(ls "$d" | tr '\n' ' ') $(head -c 300 "$d/err")"
	fi
fi

# No filter: the profile is written, with the program's allocations.
d=$TMPD/none; mkdir -p "$d"
if run_t rel.seccomp.none 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.pb.gz" \
	LD_PRELOAD="$LIB" "$P" none >"$d/out" 2>"$d/err"; then
	if [ $RC -eq 0 ] && [ -s "$d/p.pb.gz" ] &&
		"$HEAPPROF" top -n 50 --sample-index alloc_space "$d/p.pb.gz" 2>"$d/top.err" |
		grep -q churn && ! [ -s "$d/err" ]; then
		pass rel.seccomp.none.profile
	else
		fail rel.seccomp.none.profile "status $RC; $(ls "$d" | tr '\n' ' '); $(head -c 300 "$d/err") $(head -c 200 "$d/top.err")"
	fi
fi

# After the filter, no system call the unprofiled run does not make.
if command -v strace >/dev/null 2>&1; then
	d=$TMPD/strace; mkdir -p "$d"
	for v in base prof; do
		pre=""
		[ $v = prof ] && pre=$LIB
		run_t rel.seccomp.syscalls.$v 120 strace -f -qq -o "$d/$v.txt" \
			env LD_PRELOAD="$pre" HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.%p.pb.gz" \
			"$P" errno >/dev/null 2>&1 || continue
		awk '/seccomp\(/ { on = 1 } on' "$d/$v.txt" | sed -E 's/^[0-9]+ +//' |
			grep -oE '^[a-z_0-9]+\(' | sort -u >"$d/$v.calls"
	done
	extra=$(comm -13 "$d/base.calls" "$d/prof.calls" | tr '\n' ' ')
	denied=$(awk '/seccomp\(/ { on = 1 } on' "$d/prof.txt" | grep -c 'EPERM')
	if [ -s "$d/base.calls" ] && [ -z "$extra" ] && [ "$denied" -eq 0 ]; then
		pass rel.seccomp.syscalls
	else
		fail rel.seccomp.syscalls "after the filter the profiled run also made: $extra; $denied calls denied: $(awk '/seccomp\(/ { on = 1 } on' "$d/prof.txt" | grep EPERM | head -3 | cut -c1-100 | tr '\n' ' ')"
	fi
else
	skip rel.seccomp.syscalls "strace is not installed"
fi
exit $FAILED
