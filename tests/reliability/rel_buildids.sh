#!/bin/sh
# Build ids at the exit dump (issue 15): loaded objects' ids are read from
# their notes in memory (src/collect/loaded_ids.c), not by opening every
# mapped file. Program rprog_buildids.c. HOW is the way the program ends:
# "ret" (return from main: the atexit dump), "_exit", "term" (SIGTERM, the
# ending handler): all three without the loader's lock, the process having
# one thread; "thread" (return from main with a second thread running:
# under the loader's lock, dl_iterate_phdr).
#   rel.buildids.HOW.no_open_at_exit   under strace, after the program's
#       mark (its failed open of /nonexistent/heapprof-exit-marker), the
#       exit dump opens neither libresolv (dlopen'd, no allocation there)
#       nor libheapprof.so: no PC of the profile lies in them, so only a
#       build-id read would open them; and the files it symbolizes (the
#       program, libc, ld.so) once each, not once more for their ids
#       (before: libresolv and the profiler once, the others twice).
#   rel.buildids.HOW.same_as_readelf   every mapping of the exit profile
#       that is a file with a GNU build id carries that id (readelf -n),
#       and the program, libc, ld.so and libresolv have one.
#   rel.buildids.fork_child_lock_held.{exit,_exit}   a fork child whose
#       parent had a thread inside dl_iterate_phdr (the loader's lock,
#       never released in the child: glibc does not reset it) writes its
#       exit profile, with the files' ids, and exits; libheapprof.so (no
#       PC) is never opened for its id. A child's dump must not take that
#       lock (it hung there when it did). With HEAPPROF_SIGNAL.
#   rel.buildids.fork_child_lock_held.no_signal.{exit,_exit}   the same
#       without HEAPPROF_SIGNAL, and .c11.{exit,_exit} with the parent's
#       threads made by C11 thrd_create: the child's encoder once dlopen'ed
#       libz and libm, which waited for the held lock for ever; then the
#       parent's first pthread_create loaded them, which C11 threads
#       bypassed. Now zlib is inside libheapprof.so and libm unused: no
#       dump dlopens.
. "$(dirname "$0")/lib.sh"
need_lib rel.buildids
oracle_tmpdir
P=$PROG/rprog_buildids
MAPIDS="python3 $REPO/tests/reliability/mapids.py"

# The profile's "FILE ID" lines against readelf; prints what differs.
check_ids() {
	$MAPIDS "$1" | while read -r f id; do
		case $f in /*) ;; *) continue ;; esac
		[ -f "$f" ] || continue
		want=$(readelf -n "$f" 2>/dev/null | sed -n 's/.*Build ID: *//p' | head -1)
		[ -n "$want" ] || want=-
		[ "$id" = "$want" ] || echo "$f: $id, readelf: $want"
	done
}

STRACE=1
if ! command -v strace >/dev/null 2>&1; then
	STRACE=0 why=tool
elif ! strace -f -o /dev/null true >/dev/null 2>&1; then
	STRACE=0 why="strace cannot trace here (ptrace refused)"
fi
READELF=1
command -v readelf >/dev/null 2>&1 || READELF=0

for how in ret _exit term thread; do
	want_rc=0
	[ $how = term ] && want_rc=143
	# --- no build-id opens at exit
	n=rel.buildids.$how.no_open_at_exit
	if [ $STRACE = 0 ]; then
		if [ "$why" = tool ]; then skip_tool $n strace; else skip $n "$why"; fi
	else
		d=$TMPD/strace.$how; mkdir -p "$d"
		run_t $n 120 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.pb.gz" \
			strace -f -E LD_PRELOAD="$LIB" -o "$d/trace" \
			-e trace=openat,open "$P" marker $how >"$d/out" 2>"$d/err"
		rc=$RC
		after=$(sed -n '/heapprof-exit-marker/,$p' "$d/trace" | grep -v ENOENT)
		# No PC in libresolv nor in the profiler: never opened. The
		# program, libc and ld.so (dlopen's allocations) are
		# symbolized: once each.
		opens=$(printf '%s\n' "$after" | grep -E 'libresolv|libheapprof')
		for f in rprog_buildids '/libc\.so' ld-linux; do
			[ "$(printf '%s\n' "$after" | grep -c "$f")" -le 1 ] ||
				opens="$opens $(printf '%s\n' "$after" | grep "$f")"
		done
		if [ $rc -ne $want_rc ] || [ ! -s "$d/p.pb.gz" ] || [ -z "$after" ]; then
			fail $n "status $rc, profile $(ls "$d" | tr '\n' ' '), $(head -c 200 "$d/err")"
		elif [ -n "$opens" ]; then
			fail $n "opened at exit: $(printf '%s' "$opens" | tr '\n' ' ' | cut -c1-400)"
		else
			pass $n
		fi
	fi

	# --- the same ids as the files'
	n=rel.buildids.$how.same_as_readelf
	if [ $READELF = 0 ]; then
		skip_tool $n readelf binutils
		continue
	fi
	d=$TMPD/ids.$how; mkdir -p "$d"
	run_t $n 60 env HEAPPROF_RATE=1 \
		HEAPPROF_OUT="$d/p.pb.gz" LD_PRELOAD="$LIB" "$P" marker $how \
		>"$d/out" 2>"$d/err"
	if [ $RC -ne $want_rc ] || [ ! -s "$d/p.pb.gz" ]; then
		fail $n "status $RC: $(head -c 200 "$d/err")"
	else
		bad=$(check_ids "$d/p.pb.gz")
		have=$($MAPIDS "$d/p.pb.gz" | grep -E 'rprog_buildids|/libc\.so|ld-linux|libresolv' | grep -vc ' -$')
		if [ -n "$bad" ] || [ "$have" -lt 4 ]; then
			fail $n "$have of 4 with ids; $(printf '%s' "$bad" | tr '\n' ';' | cut -c1-400)"
		else
			pass $n
		fi
	fi
done

# --- a fork child whose parent held the loader's lock; with a dump
# signal, without, and with C11 threads.
for libs in start no_signal c11; do
for how in exit _exit; do
	mode=forkheld
	if [ $libs = start ]; then
		n=rel.buildids.fork_child_lock_held.$how sig=USR2
	else
		n=rel.buildids.fork_child_lock_held.$libs.$how sig=
	fi
	[ $libs = c11 ] && mode=forkheld_c11
	d=$TMPD/fork.$libs.$how; mkdir -p "$d"
	# under strace if there is one (LD_PRELOAD for the program only)
	if [ $STRACE = 1 ]; then
		tr="strace -f -E LD_PRELOAD=$LIB -o $d/trace -e trace=openat,open"
	else
		tr="env LD_PRELOAD=$LIB"
	fi
	run_td $n 60 env HEAPPROF_RATE=1 \
		HEAPPROF_SIGNAL=$sig HEAPPROF_OUT="$d/p.%p.pb.gz" \
		$tr "$P" $mode $how >"$d/out" 2>"$d/err"
	rc=$RC
	np=$(ls "$d" | grep -c '^p\..*\.pb\.gz$')
	if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		: # run_td said so
	elif [ $rc -ne 0 ] || [ "$np" -ne 2 ]; then
		fail $n "status $rc, $np profiles: $(cat "$d/out") $(head -c 200 "$d/err")"
	else
		bad=""
		for f in "$d"/p.*.pb.gz; do
			bad="$bad$(check_ids "$f")"
		done
		[ $STRACE = 1 ] && bad="$bad$(grep 'libheapprof[^"]*", O_RDONLY|O_NONBLOCK' "$d/trace")"
		if [ -n "$bad" ]; then
			fail $n "$(printf '%s' "$bad" | tr '\n' ' ' | cut -c1-300)"
		else
			pass $n
		fi
	fi
done
done
