#!/bin/sh
# Fork storms (issue 29 item 7): a program that forks children which exit
# at once (exit(0): atexit handlers run) paid, in every child, a whole
# profile of the parent's records: 2000 rounds of a 2 ms timer took > 60 s
# at rate 1 instead of ~5 s. A fork child that sampled nothing since the
# fork (and dumped nothing) now writes no exit profile: its profile would
# be the parent's records, which the parent writes. Program
# rprog_forkstorm.c (the parent keeps 4096 blocks from 64 stacks).
#   rel.forkstorm.loop.{rate1,default}.files  2000 fork+exit rounds: one
#                      profile (the parent's), stdout and status as
#                      without the profiler
#   rel.forkstorm.loop.{rate1,default}.cpu    the children's CPU time
#                      (getrusage) at most 6x theirs without the profiler
#                      (measured in the same run; printed)
#   rel.forkstorm.timer.rate1  the 2 ms timer's handler forks, 2000
#                      children: one profile, ends within 60 s
#   rel.forkstorm.child_syscalls  under strace, a child of `loop 5` makes
#                      no open, read or mmap (no maps, no symbol tables)
#   rel.forkstorm.alloc.{rate1,default}  children that allocate after the
#                      fork still write their profiles (child_site in each)
#   rel.forkstorm.run.summary  `heapprof run`: one file, and the children
#                      counted as "N processes had no samples"
#   rel.forkstorm.run.write_empty  --write-empty: every child's profile too
. "$(dirname "$0")/lib.sh"
need_lib rel.forkstorm
oracle_tmpdir
P=$PROG/rprog_forkstorm
N=$(by_tier 2000 5000)
d=$TMPD/forkstorm
mkdir -p "$d"
cpu_us() { awk '/^children_cpu_us/ { print $2 }' "$1"; }

run_t rel.forkstorm.base 120 "$P" loop "$N" >"$d/base.out" 2>"$d/base.err" || exit 0
BRC=$RC
base_us=$(cpu_us "$d/base.err")
for r in 1 524288; do
	t=rate$r
	[ $r = 524288 ] && t=default
	mkdir -p "$d/$t"
	run_t rel.forkstorm.loop.$t 300 env HEAPPROF_RATE=$r HEAPPROF_OUT="$d/$t/p.pb.gz" \
		LD_PRELOAD="$LIB" "$P" loop "$N" >"$d/$t.out" 2>"$d/$t.err" || continue
	files=$(ls "$d/$t" | wc -l)
	if [ $RC = $BRC ] && cmp -s "$d/base.out" "$d/$t.out" && [ "$files" = 1 ] &&
		[ -f "$d/$t/p.pb.gz" ]; then
		pass rel.forkstorm.loop.$t.files
	else
		fail rel.forkstorm.loop.$t.files "status $RC (vs $BRC), $files files (expected the parent's alone): $(ls "$d/$t" | head -3 | tr '\n' ' ')"
	fi
	us=$(cpu_us "$d/$t.err")
	if [ -n "$us" ] && [ -n "$base_us" ] && [ "$us" -le $((6 * base_us + 200000)) ]; then
		pass rel.forkstorm.loop.$t.cpu
		echo "  rel.forkstorm.loop.$t.cpu: children's CPU ${us} us vs ${base_us} us without the profiler ($N children)" >&2
	else
		fail rel.forkstorm.loop.$t.cpu "children's CPU ${us} us vs ${base_us} us without the profiler ($N children)"
	fi
done

# The timer's handler forks; the children exit at once.
mkdir -p "$d/timer"
if run_t rel.forkstorm.timer.rate1 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/timer/p.pb.gz" \
	LD_PRELOAD="$LIB" "$P" timer 2000 >"$d/timer.out" 2>"$d/timer.err"; then
	files=$(ls "$d/timer" | wc -l)
	if [ $RC = 0 ] && [ "$(cat "$d/timer.out")" = "ok timer 2000" ] && [ "$files" = 1 ]; then
		pass rel.forkstorm.timer.rate1
	else
		fail rel.forkstorm.timer.rate1 "status $RC, $files files, $(head -c 200 "$d/timer.err")"
	fi
fi

# What a child does at exit: no file opened, read or mapped.
if command -v strace >/dev/null 2>&1; then
	mkdir -p "$d/st"
	if run_t rel.forkstorm.child_syscalls 120 strace -f -qq -o "$d/st.trace" \
		-e trace=open,openat,read,mmap -E HEAPPROF_RATE=1 -E HEAPPROF_OUT="$d/st/p.pb.gz" \
		-E LD_PRELOAD="$LIB" "$P" loop 5 >/dev/null 2>"$d/st.err"; then
		parent=$(head -1 "$d/st.trace" | awk '{ print $1 }')
		kids=$(awk -v p="$parent" '$1 != p' "$d/st.trace" | wc -l)
		if [ $RC = 0 ] && [ -n "$parent" ] && [ "$kids" = 0 ]; then
			pass rel.forkstorm.child_syscalls
		else
			fail rel.forkstorm.child_syscalls "status $RC; $kids open/read/mmap calls in the 5 children: $(awk -v p="$parent" '$1 != p' "$d/st.trace" | head -3 | tr '\n' ' ')"
		fi
	fi
else
	skip_tool rel.forkstorm.child_syscalls strace
fi

# Children that allocate after the fork keep their profiles.
for r in 1 524288; do
	t=rate$r
	[ $r = 524288 ] && t=default
	mkdir -p "$d/alloc.$t"
	run_t rel.forkstorm.alloc.$t 120 env HEAPPROF_RATE=$r HEAPPROF_OUT="$d/alloc.$t/p.pb.gz" \
		LD_PRELOAD="$LIB" "$P" alloc 3 >"$d/alloc.$t.out" 2>"$d/alloc.$t.err" || continue
	kids=0 bad=
	for f in "$d/alloc.$t"/p.*.pb.gz; do
		[ -f "$f" ] || continue
		kids=$((kids + 1))
		"$HEAPPROF" top -n 50 "$f" 2>/dev/null | grep -q child_site || bad="$bad ${f##*/}"
	done
	if [ $RC = 0 ] && [ $kids = 3 ] && [ -z "$bad" ] && [ -f "$d/alloc.$t/p.pb.gz" ]; then
		pass rel.forkstorm.alloc.$t
	else
		fail rel.forkstorm.alloc.$t "status $RC, $kids children's profiles (expected 3), without child_site:$bad"
	fi
done

# heapprof run: the children that wrote nothing are counted.
mkdir -p "$d/run" "$d/we"
if run_t rel.forkstorm.run.summary 120 "$HEAPPROF" run -r 1 -o "$d/run/p.pb.gz" -- \
	"$P" loop 50 >/dev/null 2>"$d/run.err"; then
	if [ $RC = 0 ] && [ "$(ls "$d/run")" = p.pb.gz ] &&
		grep -q "^heapprof: wrote $d/run/p.pb.gz\$" "$d/run.err" &&
		grep -q '^heapprof: 50 processes had no samples' "$d/run.err"; then
		pass rel.forkstorm.run.summary
	else
		fail rel.forkstorm.run.summary "status $RC, files $(ls "$d/run" | wc -l): $(grep heapprof: "$d/run.err" | head -3 | tr '\n' ' ')"
	fi
fi
if run_t rel.forkstorm.run.write_empty 120 "$HEAPPROF" run -r 1 --write-empty \
	-o "$d/we/p.pb.gz" -- "$P" loop 3 >/dev/null 2>"$d/we.err"; then
	if [ $RC = 0 ] && [ "$(ls "$d/we" | wc -l)" = 4 ] &&
		! grep -q 'had no samples' "$d/we.err"; then
		pass rel.forkstorm.run.write_empty
	else
		fail rel.forkstorm.run.write_empty "status $RC, $(ls "$d/we" | wc -l) files (expected 4): $(grep heapprof: "$d/we.err" | head -3 | tr '\n' ' ')"
	fi
fi
