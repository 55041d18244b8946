#!/bin/sh
# Cost per process (issue 15): a process that sampled nothing writes no
# exit profile (HEAPPROF_WRITE_EMPTY=1 or --write-empty: an empty one),
# `heapprof run` counts such processes in its summary, a process that
# sampled still writes its profile (forked children too), and the profile's function names come from the one-pass
# symbolizer as before; fsync only with HEAPPROF_FSYNC=1. With valgrind: the fixed cost of /bin/true under
# the profiler, start-up plus exit, is at most 100 k instructions over no
# profiler (callgrind counts, not times).
. "$(dirname "$0")/lib.sh"
need_lib rel.cost
oracle_tmpdir
trap 'rm -rf "$TMPD"' EXIT
P=$PROG
nfiles() { ls "$1" 2>/dev/null | grep -c 'pb\.gz$'; }

# --- no samples, no file; an empty one on request
d=$TMPD/empty; mkdir -p "$d"
run_t rel.cost.empty 60 env HEAPPROF_OUT="$d/p.%p.pb.gz" LD_PRELOAD="$LIB" /bin/true
if [ "$RC" -eq 0 ] && [ "$(nfiles "$d")" -eq 0 ]; then
	pass rel.cost.empty.none_written
else
	fail rel.cost.empty.none_written "status $RC, files: $(ls "$d" | tr '\n' ' ')"
fi
run_t rel.cost.write_empty 60 env HEAPPROF_WRITE_EMPTY=1 HEAPPROF_OUT="$d/p.%p.pb.gz" \
	LD_PRELOAD="$LIB" /bin/true
if [ "$RC" -eq 0 ] && [ "$(nfiles "$d")" -eq 1 ]; then
	parses rel.cost.write_empty "$d"/*.pb.gz
else
	fail rel.cost.write_empty "status $RC, files: $(ls "$d" | tr '\n' ' ')"
fi
run_t rel.cost.bad_value 60 env HEAPPROF_WRITE_EMPTY=yes HEAPPROF_OUT="$d/q.%p.pb.gz" \
	LD_PRELOAD="$LIB" /bin/true 2>"$TMPD/bad.err"
if grep -q "HEAPPROF_WRITE_EMPTY='yes' is not 0 or 1" "$TMPD/bad.err" &&
   ! grep -q 'not a heapprof variable' "$TMPD/bad.err"; then
	pass rel.cost.bad_value
else
	fail rel.cost.bad_value "$(head -c 300 "$TMPD/bad.err")"
fi

# LD_BIND_NOW=1 (every symbol bound at load): nothing the dumps use may
# be missing then (libz and libm were once loaded only for the first dump).
run_t rel.cost.bind_now 60 env LD_BIND_NOW=1 HEAPPROF_RATE=1 HEAPPROF_OUT="$d/b.%p.pb.gz" \
	LD_PRELOAD="$LIB" "$P/rprog_exit" main >/dev/null 2>"$TMPD/bind.err"
if [ "$RC" -eq 7 ] && ls "$d" | grep -q '^b\.' && ! grep -q 'symbol' "$TMPD/bind.err"; then
	parses rel.cost.bind_now "$d"/b.*.pb.gz
else
	fail rel.cost.bind_now "status $RC: $(head -c 300 "$TMPD/bind.err")"
fi

# Sampling loads neither libz nor libm: a sampled allocation's first
# bucket once dlopen'd libm inside malloc, under the peak lock (a thread
# inside dlopen, holding the loader's lock, sampling too, waited for that
# lock: deadlock). Nor does a growth dump, which runs inside malloc.
# rprog_nolibs links neither library and says whether they are mapped
# before and after ~60 samples.
for r in 524288 4096; do
	run_t rel.cost.sampling_loads_no_libs.$r 60 env HEAPPROF_RATE=$r HEAPPROF_EXIT=0 \
		LD_PRELOAD="$LIB" "$P/rprog_nolibs" >"$TMPD/nolibs.out" 2>&1
	if [ "$RC" -eq 0 ] && [ "$(tr '\n' ' ' <"$TMPD/nolibs.out")" = "start 0 0 end 0 0 " ]; then
		pass rel.cost.sampling_loads_no_libs.$r
	else
		fail rel.cost.sampling_loads_no_libs.$r "status $RC: $(tr '\n' ' ' <"$TMPD/nolibs.out")"
	fi
done
run_t rel.cost.growth_dump_loads_no_libs 60 env HEAPPROF_DUMP_GROWTH=4m HEAPPROF_EXIT=0 \
	HEAPPROF_OUT="$TMPD/g.%p.%n.pb.gz" LD_PRELOAD="$LIB" "$P/rprog_nolibs" >"$TMPD/nolibs.out" 2>&1
if [ "$RC" -eq 0 ] && [ "$(tr '\n' ' ' <"$TMPD/nolibs.out")" = "start 0 0 end 0 0 " ] &&
   ls "$TMPD" | grep -q '^g\.'; then
	pass rel.cost.growth_dump_loads_no_libs
else
	fail rel.cost.growth_dump_loads_no_libs "status $RC: $(tr '\n' ' ' <"$TMPD/nolibs.out") files: $(ls "$TMPD" | grep '^g\.' | head -3 | tr '\n' ' ')"
fi

# Nor does any dump: zlib is linked into libheapprof.so and libm is not
# used (hpmath.h). The exit dump once dlopen'ed libz.so.1 and libm.so.6,
# which hung the fork children of threaded processes (rel_buildids.sh) and
# nested in a dlopen interrupted by a signal handler (rel_termdl.sh); the
# first thread then loaded them (+94 k instructions and ~24 page faults
# per threaded process). The loader's trace (LD_DEBUG=files) shows every
# object it maps: neither, at the exit dump or at a dump in a signal
# handler; nor with threads (pthread_create, C11 thrd_create), whatever
# the configuration.
for how in exit signal; do
	case $how in
	exit) e=HEAPPROF_RATE=4096 a= ;;
	signal) e="HEAPPROF_RATE=4096 HEAPPROF_SIGNAL=USR2 HEAPPROF_EXIT=0" a=raise ;;
	esac
	d=$TMPD/dl.$how; mkdir -p "$d"
	run_t rel.cost.dumps_load_no_libs.$how 60 env $e HEAPPROF_OUT="$d/p.%p.%n.pb.gz" LD_DEBUG=files \
		LD_PRELOAD="$LIB" "$P/rprog_nolibs" $a >"$TMPD/dl.out" 2>"$TMPD/dl.err"
	if [ "$RC" -eq 0 ] && [ "$(nfiles "$d")" -ge 1 ] && grep -q 'file=' "$TMPD/dl.err" &&
	   ! grep -q 'file=lib[zm]\.so' "$TMPD/dl.err"; then
		parses rel.cost.dumps_load_no_libs.$how "$d"/*.pb.gz
	else
		fail rel.cost.dumps_load_no_libs.$how "status $RC, $(nfiles "$d") files: $(grep 'file=lib[zm]' "$TMPD/dl.err" | head -2 | tr '\n' ' ')"
	fi
done
for how in pthread c11 exit0 only; do
	e=HEAPPROF_EXIT=1 prog=$how
	[ $how = exit0 ] && e=HEAPPROF_EXIT=0 prog=pthread
	[ $how = only ] && e=HEAPPROF_ONLY=no-such-program prog=pthread
	run_t rel.cost.thread_loads_no_libs.$how 60 env $e HEAPPROF_OUT="$TMPD/t.%p.pb.gz" \
		LD_PRELOAD="$LIB" "$P/rprog_nolibs" $prog >"$TMPD/thr.out" 2>&1
	if [ "$RC" -eq 0 ] && [ "$(tr '\n' ' ' <"$TMPD/thr.out")" = "start 0 0 thread 0 0 end 0 0 " ]; then
		pass rel.cost.thread_loads_no_libs.$how
	else
		fail rel.cost.thread_loads_no_libs.$how "status $RC: $(tr '\n' ' ' <"$TMPD/thr.out" | head -c 300)"
	fi
done

# A large block allocated, written and freed in a loop (a per-request
# buffer): freed sampled blocks over 512 KiB are kept read-write for the
# next one (up to 32 MiB in all), as glibc keeps them in its heap. Given
# back to the kernel at every free, each of 100 rounds of 4 MiB faulted in
# its 1,024 pages again (~100 k faults, 20x the loop's time); without the
# profiler the loop after its first round takes ~0. A reused block asked
# of calloc must still be all zero (rel.cost.big_block_loop.calloc_zero).
# HEAPPROF_RATE=4096: every such block is sampled.
for sz in 4194304 1048576; do
	run_t rel.cost.big_block_loop.$sz 120 env HEAPPROF_RATE=4096 HEAPPROF_EXIT=0 \
		LD_PRELOAD="$LIB" "$P/rprog_bigloop" $sz 100 >"$TMPD/big.out" 2>&1
	f=$(sed -n 's/^faults //p' "$TMPD/big.out")
	lim=$((sz / 4096 * 3))
	if [ "$RC" -eq 0 ] && [ -n "$f" ] && [ "$f" -le $lim ]; then
		pass rel.cost.big_block_loop.$sz
	else
		fail rel.cost.big_block_loop.$sz "status $RC, ${f:-?} faults in 99 rounds (limit $lim): $(head -c 200 "$TMPD/big.out")"
	fi
	if [ "$RC" -eq 0 ] && grep -q '^zero ok$' "$TMPD/big.out"; then
		pass rel.cost.big_block_loop.calloc_zero.$sz
	else
		fail rel.cost.big_block_loop.calloc_zero.$sz "status $RC: $(head -c 200 "$TMPD/big.out")"
	fi
done

# realloc growing a large sampled block: it grows in place (the range's
# frontier, a warm run) or its pages move (mremap), as glibc's mremap of
# an mmap'ed chunk does: no copy, no page faulted in again. Copied at
# every step, 64 steps of 1 MiB took ~530 k faults (here: the 16 k pages
# written, whether one buffer grows or two grow in turn). Every byte
# written must still be there.
for bufs in 1 2; do
	run_t rel.cost.regrow.$bufs 120 env HEAPPROF_RATE=4096 HEAPPROF_EXIT=0 \
		LD_PRELOAD="$LIB" "$P/rprog_bigloop" grow 1048576 64 $bufs >"$TMPD/grow.out" 2>&1
	f=$(sed -n 's/^faults //p' "$TMPD/grow.out")
	lim=$((bufs * 16384 * 3 / 2 + 2000))
	if [ "$RC" -eq 0 ] && [ -n "$f" ] && [ "$f" -le $lim ] && grep -q '^data ok$' "$TMPD/grow.out"; then
		pass rel.cost.regrow.$bufs
	else
		fail rel.cost.regrow.$bufs "status $RC, ${f:-?} faults (limit $lim): $(tr '\n' ' ' <"$TMPD/grow.out" | head -c 200)"
	fi
done

# Two buffers grown in turn move at every growth: a moved block must stay
# one mapping. Moved into a bigger run and grown by that run's own pages,
# it gained a mapping at every move (moved pages never merge with their
# new neighbours): 300 growths each, 314 mappings more and every move
# slower than the last.
run_t rel.cost.regrow_mappings 120 env HEAPPROF_RATE=4096 HEAPPROF_EXIT=0 \
	LD_PRELOAD="$LIB" "$P/rprog_bigloop" grow 262144 300 2 >"$TMPD/grm.out" 2>&1
m=$(sed -n 's/^mappings //p' "$TMPD/grm.out")
if [ "$RC" -eq 0 ] && [ -n "$m" ] && [ "$m" -le 20 ] && grep -q '^data ok$' "$TMPD/grm.out"; then
	pass rel.cost.regrow_mappings
else
	fail rel.cost.regrow_mappings "status $RC, ${m:-?} mappings more (limit 20): $(tr '\n' ' ' <"$TMPD/grm.out" | head -c 200)"
fi

# A buffer that moved once (a block was in its way) grows in place again
# afterwards, its mapping extended: it stays one mapping. Kept from
# growing in place, a moved block moved at every growth (its page tables
# each time): 1 MiB at a time to 512 MiB took 3.3-5.1 s of CPU instead of
# 1.9. 64 growths: 60 moves then; glibc's mremap moves 4 times here, the
# limit is 8; one mapping over the buffer.
run_t rel.cost.regrow_after_move 120 env HEAPPROF_RATE=4096 HEAPPROF_EXIT=0 \
	LD_PRELOAD="$LIB" "$P/rprog_bigloop" aftermove 1048576 64 >"$TMPD/gam.out" 2>&1
mv=$(sed -n 's/^moves //p' "$TMPD/gam.out")
mp=$(sed -n 's/^maps //p' "$TMPD/gam.out")
if [ "$RC" -eq 0 ] && [ -n "$mv" ] && [ "$mv" -le 8 ] && [ "$mp" = 1 ] &&
   grep -q '^data ok$' "$TMPD/gam.out"; then
	pass rel.cost.regrow_after_move
else
	fail rel.cost.regrow_after_move "status $RC, ${mv:-?} moves (limit 8), ${mp:-?} mappings (1): $(tr '\n' ' ' <"$TMPD/gam.out" | head -c 200)"
fi

# ... and shrinks in place (it was copied into a new block of half the
# size: a 4 MiB copy and 1,024 fresh pages).
run_t rel.cost.shrink_in_place 60 env HEAPPROF_RATE=4096 HEAPPROF_EXIT=0 \
	LD_PRELOAD="$LIB" "$P/rprog_bigloop" shrink >"$TMPD/shr.out" 2>&1
if [ "$RC" -eq 0 ] && grep -q '^same data ok$' "$TMPD/shr.out"; then
	pass rel.cost.shrink_in_place
else
	fail rel.cost.shrink_in_place "status $RC: $(head -c 200 "$TMPD/shr.out")"
fi

# A sampled malloc's fresh page run has its first 64 KiB made present at
# once (MADV_POPULATE_WRITE: ~1 us a page here, where the program's first
# write to each took a 15-40 us page fault: ~300 of them in a compile of
# this project); a calloc's is left alone (zeroed memory is often used
# sparsely). Where the kernel lacks the call (before 5.14), nothing is.
run_t rel.cost.sampled_run_present 60 env HEAPPROF_RATE=1 HEAPPROF_EXIT=0 \
	LD_PRELOAD="$LIB" "$P/rprog_bigloop" present >"$TMPD/pres.out" 2>&1
if [ "$RC" -eq 0 ] && grep -Eq '^malloc 1[67] calloc 1$' "$TMPD/pres.out"; then
	pass rel.cost.sampled_run_present
elif [ "$RC" -eq 0 ] && grep -q '^malloc 1 calloc 1$' "$TMPD/pres.out" &&
     [ "$(uname -r | awk -F. '{print ($1 > 5 || ($1 == 5 && $2 >= 14))}')" = 0 ]; then
	skip rel.cost.sampled_run_present "kernel $(uname -r) has no MADV_POPULATE_WRITE"
else
	fail rel.cost.sampled_run_present "status $RC: $(head -c 200 "$TMPD/pres.out")"
fi

# The unwinder's first lookup in an object makes the object's whole
# .eh_frame_hdr search table and its FDEs present in one system call
# (MADV_POPULATE_READ), where its binary search and the FDEs it found
# took a page fault per fault-around window (cc1: ~25 a compile).
# rprog_ehtab's table is ~320 KB and its FDEs ~800 KB; it is copied 4 KiB
# at a time so that its page cache holds small folios (a fault maps a
# whole large folio, which can cover the table). The unprofiled run shows
# what the reads alone map.
dd if="$P/rprog_ehtab" of="$TMPD/ehtab" bs=4096 status=none && chmod +x "$TMPD/ehtab"
"$TMPD/ehtab" >"$TMPD/eh0.out" 2>&1
run_t rel.cost.eh_table_present 60 env HEAPPROF_RATE=1 HEAPPROF_EXIT=0 \
	LD_PRELOAD="$LIB" "$TMPD/ehtab" >"$TMPD/eh1.out" 2>&1
pages() { awk -v w="$1" -v k="$2" '$1 == w {print $k; exit}' "$3"; }
t0=$(pages table 2 "$TMPD/eh0.out") p0=$(pages table 4 "$TMPD/eh0.out")
t1=$(pages table 2 "$TMPD/eh1.out") p1=$(pages table 4 "$TMPD/eh1.out")
f1=$(pages frames 2 "$TMPD/eh1.out") q1=$(pages frames 4 "$TMPD/eh1.out")
if [ "$RC" -ne 0 ] || [ -z "$t1" ] || [ -z "$f1" ] || [ -z "$p0" ]; then
	fail rel.cost.eh_table_present "status $RC: $(head -c 300 "$TMPD/eh1.out") / $(head -c 200 "$TMPD/eh0.out")"
elif [ "$p0" -ge "$t0" ]; then
	skip rel.cost.eh_table_present "the program's own reads map the whole table here ($p0 of $t0 pages)"
elif [ "$(getconf GNU_LIBC_VERSION | awk '{split($2, v, "."); print (v[1] > 2 || v[2] >= 35)}')" = 0 ]; then
	skip rel.cost.eh_table_present "$(getconf GNU_LIBC_VERSION): no _dl_find_object, the unwinder walks frame pointers"
elif [ "$p1" -eq "$t1" ] && [ "$q1" -eq "$f1" ]; then
	pass rel.cost.eh_table_present
elif [ "$(uname -r | awk -F. '{print ($1 > 5 || ($1 == 5 && $2 >= 14))}')" = 0 ]; then
	skip rel.cost.eh_table_present "kernel $(uname -r) has no MADV_POPULATE_READ"
else
	fail rel.cost.eh_table_present "after a sampled malloc, $p1 of $t1 table pages present (unprofiled: $p0), $q1 of $f1 FDE pages: $(grep '^map' "$TMPD/eh1.out" | tr '\n' ' ')"
fi

# The profiler's first touch of its own fresh pages: each page a sample
# or a dump writes first (slot slabs, the age table, the bucket table, the
# arena, the dump stack, ELF headers, its own code) is made present by a
# system call, not a page-fault trap (15-40 us here). rprog_traps counts
# this thread's traps with the software perf counter (which does not count
# pages made present by madvise). 1,024 more samples took +65 traps before
# (slot pages, age words); a signal-triggered dump 19-21 (4-8 of them the
# dump stack's).
old_kernel() { [ "$(uname -r | awk -F. '{print ($1 > 5 || ($1 == 5 && $2 >= 14))}')" = 0 ]; }
traps_of() { sed -n 's/.*traps \([0-9]*\)$/\1/p' "$1"; }
tr_env="HEAPPROF_RATE=1 HEAPPROF_EXIT=0 LD_PRELOAD=$LIB"
# shellcheck disable=SC2086
env $tr_env "$P/rprog_traps" samples 1 >"$TMPD/tr1.out" 2>&1; rc1=$?
run_t rel.cost.sample_traps 60 env $tr_env "$P/rprog_traps" samples 1025 >"$TMPD/tr2.out" 2>&1
a=$(traps_of "$TMPD/tr1.out") b=$(traps_of "$TMPD/tr2.out")
if [ "$rc1" -eq 3 ] || [ "$RC" -eq 3 ]; then
	skip rel.cost.sample_traps "no perf counter here: $(head -c 100 "$TMPD/tr2.out")"
elif old_kernel; then
	skip rel.cost.sample_traps "kernel $(uname -r) has no MADV_POPULATE_WRITE"
elif [ "$RC" -eq 0 ] && [ -n "$a" ] && [ -n "$b" ] && [ $((b - a)) -le 4 ]; then
	pass rel.cost.sample_traps
else
	fail rel.cost.sample_traps "1 sample: $a traps, 1025: $b (status $RC $rc1)"
fi
mkdir -p "$TMPD/sd"
# shellcheck disable=SC2086
run_t rel.cost.dump_traps 60 env $tr_env HEAPPROF_SIGNAL=USR2 \
	HEAPPROF_OUT="$TMPD/sd/s.%p.%n.pb.gz" "$P/rprog_traps" sigdump 0 >"$TMPD/sd.out" 2>&1
c=$(traps_of "$TMPD/sd.out")
if [ "$RC" -eq 3 ]; then
	skip rel.cost.dump_traps "no perf counter here"
elif old_kernel; then
	skip rel.cost.dump_traps "kernel $(uname -r) has no MADV_POPULATE_WRITE"
elif [ "$RC" -eq 0 ] && [ "$(nfiles "$TMPD/sd")" -eq 1 ] && [ -n "$c" ] && [ "$c" -le 8 ]; then
	parses rel.cost.dump_traps "$TMPD"/sd/*.pb.gz
else
	fail rel.cost.dump_traps "$c traps (status $RC), files: $(ls "$TMPD/sd" | tr '\n' ' ')"
fi

# A dump in a signal handler (or inside malloc) must not call dlsym or
# dlopen: the encoder's look for a C++ demangler already in the process
# (dlsym, dlopen RTLD_NOLOAD: the loader's lock, which the interrupted code
# may hold) happens at start-up when such dumps are configured. The
# loader's trace (LD_DEBUG=symbols) shows where __cxa_demangle is looked
# up: before main's "start" line, not after it (in the handler).
run_t rel.cost.demangler_not_in_handler 60 env LD_DEBUG=symbols HEAPPROF_RATE=1 HEAPPROF_SIGNAL=USR2 \
	HEAPPROF_EXIT=0 HEAPPROF_OUT="$TMPD/dm.%p.%n.pb.gz" LD_PRELOAD="$LIB" \
	"$P/rprog_nolibs" raise >"$TMPD/dm.out" 2>&1
dm=$(grep -n 'symbol=__cxa_demangle;' "$TMPD/dm.out" | head -1 | cut -d: -f1)
st=$(grep -n '^start ' "$TMPD/dm.out" | head -1 | cut -d: -f1)
if [ "$RC" -eq 0 ] && [ -n "$dm" ] && [ -n "$st" ] && [ "$dm" -lt "$st" ] &&
   ls "$TMPD" | grep -q '^dm\.'; then
	pass rel.cost.demangler_not_in_handler
else
	fail rel.cost.demangler_not_in_handler "status $RC; first __cxa_demangle lookup at line ${dm:-none}, main's start at ${st:-none}; files: $(ls "$TMPD" | grep -c '^dm\.')"
fi

# --- a fork child of a profiled process (a shell, make) touches little
# memory before its exec: the fork handlers read 270 KB of endpoint state
# with no endpoint (+80 page faults a fork; fewest of 5 forks each)
a=$("$P/rprog_forkfaults" 2>/dev/null)
b=$(env HEAPPROF_OUT="$TMPD/ff.%p.pb.gz" LD_PRELOAD="$LIB" "$P/rprog_forkfaults" 2>/dev/null)
if [ -n "$a" ] && [ -n "$b" ] && [ $((b - a)) -le 40 ]; then
	pass rel.cost.fork_child_faults
else
	fail rel.cost.fork_child_faults "page faults between fork and exec: $a alone, $b under the profiler (limit +40)"
fi

# --- the page faults a shell pays per command (fork, exec /bin/true, exit),
# against no profiler, means of 40: each fault is ~12 us on the VMs
# measured (BENCHMARKS.md). Was +34 (the command line read from /proc, the
# vDSO's pages at exit, start-up code in four code windows, small state
# spread over five pages of .bss, fork handlers that rewrote free locks),
# was +18 at 935344d (libc_nonshared's stubs and crti's _fini after all
# the code, literals read from .rodata), is about +15, of which the bare
# forwarding shim is +9.
a=$("$P/rprog_execfaults" 40 /bin/true 2>/dev/null)
b=$(env HEAPPROF_OUT="$TMPD/ef.%p.pb.gz" LD_PRELOAD="$LIB" "$P/rprog_execfaults" 40 /bin/true 2>/dev/null)
# Issue 29 added +3 (85-86 -> 88-89 over 66-67 alone, 4 runs each): the
# other-allocator, stream and fork-child code (+2, 7b38d4e) and the
# seccomp check at start-up, which reads /proc/self/status (+2, 099001c);
# the limit went from +22 to +24 with them, and to +26 with issues 31-33
# (+23 to +25 measured at 92d62d3 after the OpenTelemetry lookup stopped
# using dlsym, which had added 8).
if [ -n "$a" ] && [ -n "$b" ] && [ $((b - a)) -le 26 ]; then
	pass rel.cost.exec_faults
else
	fail rel.cost.exec_faults "page faults per fork+exec of /bin/true: $a alone, $b under the profiler (limit +26)"
fi

# --- ... and one that samples a few dozen stacks (90 buckets at rate 1)
# and writes nothing: the bucket table, unwinder cache, slabs and code
# pages it touches. +39 (+10 of it the shim's); +47 when the bucket
# table started at 4,096 slots (9 pages, most touched by 90 buckets).
# ru_minflt also counts the pages made present by MADV_POPULATE_WRITE,
# which take no trap (~1 us each against 15-40 us): since the unwinder's
# 64 KiB cache and the first pages of sampled runs are populated, it reads
# about +52 while the traps (perf stat -e page-faults, median of 5) went
# from +34 to +31.
a=$("$P/rprog_execfaults" 40 "$P/rprog_stacks" 2>/dev/null)
b=$(env HEAPPROF_RATE=1 HEAPPROF_EXIT=0 LD_PRELOAD="$LIB" "$P/rprog_execfaults" 40 "$P/rprog_stacks" 2>/dev/null)
# Issues 29 and 31 added +4 (123-125 -> 128 over 68): +1 the fork-child
# flag and streams (7b38d4e), +2 the seccomp check (099001c), +1 the
# peak's halves (6 words a bucket, 7dcb222); the limit went from +58 to
# +62 with them, and to +65 with issues 31-33 (+61 to +63 measured).
if [ -n "$a" ] && [ -n "$b" ] && [ $((b - a)) -le 65 ]; then
	pass rel.cost.sample_faults
else
	fail rel.cost.sample_faults "page faults of rprog_stacks: $a alone, $b sampling every allocation (limit +65)"
fi

# --- a process that sampled writes, and so does its child (it inherits
# the parent's samples) even if the child samples nothing itself
d=$TMPD/sampled; mkdir -p "$d"
run_t rel.cost.sampled 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.%p.pb.gz" \
	LD_PRELOAD="$LIB" "$P/rprog_exit" main >/dev/null 2>&1
if [ "$(nfiles "$d")" -eq 1 ]; then
	pass rel.cost.sampled
else
	fail rel.cost.sampled "status $RC, files: $(ls "$d" | tr '\n' ' ')"
fi
d=$TMPD/fork; mkdir -p "$d"
run_t rel.cost.fork 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.%p.pb.gz" \
	LD_PRELOAD="$LIB" "$P/rprog_fork" child 2 >/dev/null 2>&1
if [ "$(nfiles "$d")" -eq 3 ]; then
	pass rel.cost.fork_children_write
else
	fail rel.cost.fork_children_write "files: $(ls "$d" | tr '\n' ' ')"
fi

# --- heapprof run: the summary counts them (a 1 GiB rate: nothing sampled
# in the parent and 2 children, which all exit(); about 150 KB each)
d=$TMPD/run; mkdir -p "$d"
run_t rel.cost.run 60 "$HEAPPROF" run -r 1g -o "$d/p.%p.pb.gz" -- \
	"$P/rprog_fork" child 2 >/dev/null 2>"$TMPD/run.err"
if [ "$RC" -eq 0 ] && [ "$(nfiles "$d")" -eq 0 ] &&
   grep -qx 'heapprof: 3 processes had no samples: no profile written for them (--write-empty writes empty ones)' "$TMPD/run.err" &&
   ! ls /tmp | grep -q "^heapprof-run\.$$"; then
	pass rel.cost.run_summary
else
	fail rel.cost.run_summary "status $RC, files $(nfiles "$d"): $(head -c 300 "$TMPD/run.err")"
fi
run_t rel.cost.run_empty 60 "$HEAPPROF" run -r 1g --write-empty -o "$d/e.%p.pb.gz" -- \
	"$P/rprog_fork" child 2 >/dev/null 2>"$TMPD/run2.err"
if [ "$RC" -eq 0 ] && [ "$(nfiles "$d")" -eq 3 ] && ! grep -q 'no samples' "$TMPD/run2.err" &&
   grep -q '^heapprof: wrote 3 profiles' "$TMPD/run2.err"; then
	pass rel.cost.run_write_empty
else
	fail rel.cost.run_write_empty "status $RC, files $(nfiles "$d"): $(head -c 300 "$TMPD/run2.err")"
fi

# --- names from the one-pass symbolizer: the sites of rprog_exit and
# libc's functions are named
d=$TMPD/names; mkdir -p "$d"
run_t rel.cost.names 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$d/p.pb.gz" \
	LD_PRELOAD="$LIB" "$P/rprog_exit" main >/dev/null 2>&1
if "$HEAPPROF" top -n 200 "$d/p.pb.gz" 2>/dev/null | grep -q 'site_exit_keep'; then
	pass rel.cost.names
else
	fail rel.cost.names "$("$HEAPPROF" top "$d/p.pb.gz" 2>&1 | head -5 | tr '\n' ' ')"
fi

# --- fsync only when asked (HEAPPROF_FSYNC=1): ~5 ms per file on an
# ext4 disk, where the rename alone is atomic against a process crash
if command -v strace >/dev/null 2>&1; then
	d=$TMPD/fsync; mkdir -p "$d"
	for v in 0 1; do
		run_t rel.cost.fsync$v 60 strace -f -qq -e trace=fsync -o "$TMPD/strace.$v" \
			env HEAPPROF_FSYNC=$v HEAPPROF_RATE=1 HEAPPROF_OUT="$d/f$v.pb.gz" \
			LD_PRELOAD="$LIB" "$P/rprog_exit" main >/dev/null 2>&1
	done
	n0=$(grep -c 'fsync(' "$TMPD/strace.0") n1=$(grep -c 'fsync(' "$TMPD/strace.1")
	if [ "$n0" -eq 0 ] && [ "$n1" -ge 1 ] && [ -s "$d/f0.pb.gz" ] && [ -s "$d/f1.pb.gz" ]; then
		pass rel.cost.fsync_only_when_asked
	else
		fail rel.cost.fsync_only_when_asked "fsync calls: $n0 by default, $n1 with HEAPPROF_FSYNC=1"
	fi
else
	skip_tool rel.cost.fsync_only_when_asked strace
fi

# --- fixed cost of /bin/true, in instructions
if command -v valgrind >/dev/null 2>&1; then
	ir() {
		env "$@" valgrind --tool=callgrind --callgrind-out-file=/dev/null /bin/true 2>&1 |
			sed -n 's/.*Collected : *\([0-9]*\).*/\1/p'
	}
	a=$(ir X=1)
	b=$(ir HEAPPROF_OUT="$TMPD/cg.%p.pb.gz" LD_PRELOAD="$LIB")
	# Issue 15's goal: 100 k (measured +86 to +90 k before issue 29). Issues
	# 29-33 added +17 k (+103.1 k on 128.6 k): the seccomp check at
	# start-up (/proc/self/status read and scanned, ~6 k), the allocator's
	# own entry points and statistics found with the next allocator, the
	# OpenTelemetry variable looked for in the loaded objects' hash
	# tables, attach mode, held warnings, limits. The figure grows with the
	# environment (the start-up scans it for HEAPPROF_ names): +103.1 k in
	# /work/main, +106.2 k in a clean clone under /tmp/tmp.* (CI). The
	# limit is 110 k; a failing dlsym at start-up (+5 k, +8 page faults)
	# is what it caught.
	if [ -n "$a" ] && [ -n "$b" ] && [ $((b - a)) -le 110000 ]; then
		pass rel.cost.true_instructions
	else
		fail rel.cost.true_instructions "/bin/true: $a instructions alone, $b under the profiler (limit +110000)"
	fi
else
	skip_tool rel.cost.true_instructions valgrind
fi
