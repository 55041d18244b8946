#!/bin/sh
# Build ids at the exit dump (issue 15): loaded objects' ids are read from
# their notes in memory (src/collect/loaded_ids.c), not by opening every
# mapped file. Program rprog_buildids.c.
#   rel.buildids.no_open_at_exit   under strace, after the program's mark
#       (its failed open of /nonexistent/heapprof-exit-marker), the exit
#       dump opens neither libresolv (dlopen'd, no allocation there) nor
#       libheapprof.so: no PC of the profile lies in them, so only a
#       build-id read would open them; and the files it symbolizes (the
#       program, libc, ld.so) once each, not once more for their ids
#       (before: libresolv and the profiler once, the others twice).
#   rel.buildids.same_as_readelf   every mapping of the exit profile that
#       is a file with a GNU build id carries that id (readelf -n), and
#       the program, libc, ld.so and libresolv have one.
#   rel.buildids.fork_child_lock_held   a fork child whose parent had a
#       thread inside dl_iterate_phdr (the loader's lock, never released in
#       the child) writes its exit profile, with ids, and exits: a child's
#       dump must not take that lock.
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

# --- no build-id opens at exit
if ! command -v strace >/dev/null 2>&1; then
	skip rel.buildids.no_open_at_exit "strace not installed"
elif ! strace -f -o /dev/null true >/dev/null 2>&1; then
	skip rel.buildids.no_open_at_exit "strace cannot trace here (ptrace refused)"
else
	d=$TMPD/strace; mkdir -p "$d"
	run_t rel.buildids.no_open_at_exit 120 env HEAPPROF_RATE=1 \
		HEAPPROF_OUT="$d/p.pb.gz" LD_PRELOAD="$LIB" \
		strace -f -o "$d/trace" -e trace=openat,open "$P" marker \
		>"$d/out" 2>"$d/err"
	rc=$RC
	after=$(sed -n '/heapprof-exit-marker/,$p' "$d/trace" | grep -v ENOENT)
	# No PC in libresolv nor in the profiler: never opened. The program,
	# libc and ld.so (dlopen's allocations) are symbolized: once each.
	opens=$(printf '%s\n' "$after" | grep -E 'libresolv|libheapprof')
	for f in rprog_buildids '/libc\.so' ld-linux; do
		[ "$(printf '%s\n' "$after" | grep -c "$f")" -le 1 ] ||
			opens="$opens $(printf '%s\n' "$after" | grep "$f")"
	done
	if [ $rc -ne 0 ] || [ ! -s "$d/p.pb.gz" ] || [ -z "$after" ]; then
		fail rel.buildids.no_open_at_exit "status $rc, profile $(ls "$d" | tr '\n' ' '), $(head -c 200 "$d/err")"
	elif [ -n "$opens" ]; then
		fail rel.buildids.no_open_at_exit "opened at exit: $(printf '%s' "$opens" | tr '\n' ' ' | cut -c1-400)"
	else
		pass rel.buildids.no_open_at_exit
	fi
fi

# --- the same ids as the files'
if ! command -v readelf >/dev/null 2>&1; then
	skip rel.buildids.same_as_readelf "readelf not installed"
else
	d=$TMPD/ids; mkdir -p "$d"
	run_t rel.buildids.same_as_readelf 60 env HEAPPROF_RATE=1 \
		HEAPPROF_OUT="$d/p.pb.gz" LD_PRELOAD="$LIB" "$P" marker \
		>"$d/out" 2>"$d/err"
	if [ $RC -ne 0 ] || [ ! -s "$d/p.pb.gz" ]; then
		fail rel.buildids.same_as_readelf "status $RC: $(head -c 200 "$d/err")"
	else
		bad=$(check_ids "$d/p.pb.gz")
		have=$($MAPIDS "$d/p.pb.gz" | grep -E 'rprog_buildids|/libc\.so|ld-linux|libresolv' | grep -vc ' -$')
		if [ -n "$bad" ] || [ "$have" -lt 4 ]; then
			fail rel.buildids.same_as_readelf "$have of 4 with ids; $(printf '%s' "$bad" | tr '\n' ';' | cut -c1-400)"
		else
			pass rel.buildids.same_as_readelf
		fi
	fi
fi

# --- a fork child whose parent held the loader's lock. HEAPPROF_SIGNAL
# loads libz and libm at start-up: the child's first encoding would
# otherwise dlopen them, which waits for that lock too (not this test's
# subject).
d=$TMPD/fork; mkdir -p "$d"
run_td rel.buildids.fork_child_lock_held 60 env HEAPPROF_RATE=1 \
	HEAPPROF_SIGNAL=USR2 HEAPPROF_OUT="$d/p.%p.pb.gz" LD_PRELOAD="$LIB" \
	"$P" forkheld >"$d/out" 2>"$d/err"
rc=$RC
n=$(ls "$d" | grep -c '^p\..*\.pb\.gz$')
if [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
	: # run_td said so
elif [ $rc -ne 0 ] || [ "$n" -ne 2 ]; then
	fail rel.buildids.fork_child_lock_held "status $rc, $n profiles: $(cat "$d/out") $(head -c 200 "$d/err")"
else
	bad=""
	for f in "$d"/p.*.pb.gz; do
		bad="$bad$(check_ids "$f")"
	done
	if [ -n "$bad" ]; then
		fail rel.buildids.fork_child_lock_held "ids: $(printf '%s' "$bad" | cut -c1-300)"
	else
		pass rel.buildids.fork_child_lock_held
	fi
fi
