#!/bin/sh
# The unwinder (issue 13, defects 1 and 13): it never touches the
# program's fds, fits on small stacks, walks code without frame pointers,
# and survives signal handlers; programs from rprog_unwind.c and
# rprog_unwindxx.cc, built -O2 without frame pointers.
#   fds: a program that puts its own files on fds 3 and 4 (libunwind 1.6
#     kept its validation pipe there: lost input, memory bytes in the
#     output), the C program (rates 65536 and 1) and a bash script doing
#     `exec 3<in 4>out` (24 runs, rates 16384 to 262144): output
#     byte-identical.
#   coro: makecontext coroutines allocating at rate 1 on 16, 8 and 4 KiB
#     stacks (4 only where the program fits without the profiler): no
#     crash, stacks recorded through the coroutine function, and the
#     profiler's stack high-water mark within 1 KiB of glibc's own.
#   chain: a known call chain (and a C++ one) shows in the profile, as
#     libunwind gave it, and frame pointers alone cannot walk it; a frame
#     without CFI (assembly) is crossed with its frame pointer.
#   signal: sampled mallocs in signal handlers (raise, an interval timer,
#     an 8 KiB sigaltstack): no crash, stacks continue through the
#     signal frame into the interrupted code.
. "$(dirname "$0")/lib.sh"
need_lib rel.unwind
oracle_tmpdir
trap 'rm -rf "$TMPD"' EXIT
U=$PROG/rprog_unwind
UXX=$PROG/rprog_unwindxx
RUNS=$(by_tier 4 20)

# sh -c "$C34" NAME CMD...: CMD with fds 3 and 4 closed (lib.sh keeps this
# script's stdout and stderr there), as in a program started normally.
C34='exec "$@" 3>&- 4>&-'

# --- fds 3 and 4 ------------------------------------------------------------
awk 'BEGIN { for (i = 0; i < 20000; i++) printf "line %d of the input, %s\n", i, substr("abcdefghijklmnopqrstuvwxyz", 1 + i % 26) }' >"$TMPD/in"
for r in 65536 1; do
	bad=""
	i=0
	while [ $i -lt $RUNS ]; do
		rm -f "$TMPD/out"
		run_t rel.unwind.fds.c.rate$r 120 sh -c "$C34" closed34 env HEAPPROF_RATE=$r \
			HEAPPROF_OUT="$TMPD/fds.%p.pb.gz" LD_PRELOAD="$LIB" \
			"$U" fds "$TMPD/in" "$TMPD/out" >"$TMPD/fds.stdout" 2>"$TMPD/fds.err" || { bad=hang; break; }
		if [ $RC -ne 0 ] || ! cmp -s "$TMPD/in" "$TMPD/out"; then
			bad="run $i: status $RC, $(cmp "$TMPD/in" "$TMPD/out" 2>&1 | head -1) $(head -c 200 "$TMPD/fds.err")"
			break
		fi
		i=$((i + 1))
	done
	case $bad in
	"") pass rel.unwind.fds.c.rate$r ;;
	hang) ;;
	*) fail rel.unwind.fds.c.rate$r "$bad" ;;
	esac
done
if command -v bash >/dev/null 2>&1; then
	cat >"$TMPD/copy.sh" <<'EOF'
exec 3<"$1" 4>"$2"
while IFS= read -r l <&3; do printf '%s\n' "$l" >&4; done
EOF
	# It failed in 1 run of 5 or so (depends on where samples fall): 24
	# runs at three rates.
	bad=""
	i=0
	while [ $i -lt $(by_tier 24 100) ]; do
		rm -f "$TMPD/out"
		r=$((16384 << (i % 3 * 2)))
		run_t rel.unwind.fds.bash 120 sh -c "$C34" closed34 env HEAPPROF_RATE=$r \
			HEAPPROF_OUT="$TMPD/bash.%p.pb.gz" LD_PRELOAD="$LIB" \
			bash "$TMPD/copy.sh" "$TMPD/in" "$TMPD/out" 2>"$TMPD/bash.err" || { bad=hang; break; }
		if [ $RC -ne 0 ] || ! cmp -s "$TMPD/in" "$TMPD/out"; then
			bad="run $i (rate $r): status $RC, $(cmp "$TMPD/in" "$TMPD/out" 2>&1 | head -1) $(head -c 200 "$TMPD/bash.err")"
			break
		fi
		i=$((i + 1))
	done
	case $bad in
	"") pass rel.unwind.fds.bash ;;
	hang) ;;
	*) fail rel.unwind.fds.bash "$bad" ;;
	esac
else
	skip_tool rel.unwind.fds.bash bash
fi

# --- coroutines on small stacks ----------------------------------------------
# used FILE: the coroutine's stack high-water mark the program printed
used() { sed -n 's/^coroutine stack used: \([0-9]*\) of.*/\1/p' "$1"; }
run_t rel.unwind.coro.base 60 "$U" coro 16 5000 >"$TMPD/coro.base" 2>"$TMPD/coro.base.err"
base_used=$(used "$TMPD/coro.base.err")
for kib in 16 8 4; do
	n=rel.unwind.coro.${kib}k
	if [ $kib = 4 ]; then
		run_t $n.base 60 "$U" coro 4 5000 >/dev/null 2>&1
		if [ $RC -ne 0 ]; then
			skip $n "the program does not fit in 4 KiB without the profiler"
			continue
		fi
	fi
	run_t $n 120 env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/coro$kib.pb.gz" \
		LD_PRELOAD="$LIB" "$U" coro $kib 5000 >"$TMPD/coro.out" 2>"$TMPD/coro.err" || continue
	if [ $RC -ne 0 ] || ! cmp -s "$TMPD/coro.base" "$TMPD/coro.out"; then
		fail $n "status $RC (139: SIGSEGV, stack overflow); $(head -c 200 "$TMPD/coro.err")"
		continue
	fi
	pass $n
	if [ $kib = 16 ]; then
		# Stacks go through the coroutine function, from the
		# allocating frame up.
		if "$HEAPPROF" collapse --sample-index alloc_objects "$TMPD/coro16.pb.gz" 2>&1 |
			grep -q 'unw_coro_fn;unw_coro_work [0-9]'; then
			pass rel.unwind.coro.stacks
		else
			fail rel.unwind.coro.stacks "no unw_coro_fn;unw_coro_work stack: $("$HEAPPROF" collapse --sample-index alloc_objects "$TMPD/coro16.pb.gz" 2>&1 | head -3 | tr '\n' ' ')"
		fi
		u=$(used "$TMPD/coro.err")
		if [ -n "$base_used" ] && [ -n "$u" ] && [ "$u" -le $((base_used + 1024)) ]; then
			pass rel.unwind.coro.stack_use
		else
			fail rel.unwind.coro.stack_use "a sampled malloc used ${u:-?} bytes of stack, glibc's malloc alone ${base_used:-?} (limit: +1024)"
		fi
	fi
done

# --- known call chains without frame pointers --------------------------------
same3 rel.unwind.chain.same 120 "$U" chain 300
run_t rel.unwind.chain 120 env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/chain.pb.gz" \
	LD_PRELOAD="$LIB" "$U" chain 300 >/dev/null 2>"$TMPD/chain.err"
"$HEAPPROF" collapse "$TMPD/chain.pb.gz" >"$TMPD/chain.txt" 2>&1
if grep -q '^_start;__libc_start_main[^;]*;__libc_start_call_main;main;unw_chain_a;unw_chain_b;unw_chain_c;unw_chain_d;unw_chain_leaf [0-9]' "$TMPD/chain.txt"; then
	pass rel.unwind.chain.c
else
	fail rel.unwind.chain.c "no full chain in: $(head -c 400 "$TMPD/chain.txt")"
fi
# A frame without CFI (assembly, as JIT code) is stepped over with its
# frame pointer, and the walk goes on into main.
if grep -q '^_start;__libc_start_main[^;]*;__libc_start_call_main;main;unw_nocfi;unw_chain_leaf [0-9]' "$TMPD/chain.txt"; then
	pass rel.unwind.chain.nocfi
else
	fail rel.unwind.chain.nocfi "no main;unw_nocfi;unw_chain_leaf stack in: $(grep nocfi "$TMPD/chain.txt" | head -c 300)"
fi
run_t rel.unwind.chain.cxx 120 env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/cxx.pb.gz" \
	LD_PRELOAD="$LIB" "$UXX" 300 >"$TMPD/cxx.out" 2>"$TMPD/cxx.err"
"$HEAPPROF" collapse "$TMPD/cxx.pb.gz" >"$TMPD/cxx.txt" 2>&1
if [ $RC -eq 0 ] && grep -q '^ok 300 43$' "$TMPD/cxx.out" &&
	grep -q '^_start;__libc_start_main[^;]*;__libc_start_call_main;main;UnwSquare::unw_make[^;]*;unw_tmpl [0-9]' "$TMPD/cxx.txt"; then
	pass rel.unwind.chain.cxx
else
	fail rel.unwind.chain.cxx "status $RC, $(cat "$TMPD/cxx.out"); stacks: $(head -c 400 "$TMPD/cxx.txt")"
fi
# The programs really have no frame pointers: the fp walker loses the chain.
run_t rel.unwind.chain.fp 120 env HEAPPROF_RATE=1 HEAPPROF_UNWIND=fp \
	HEAPPROF_OUT="$TMPD/chainfp.pb.gz" LD_PRELOAD="$LIB" "$U" chain 300 >/dev/null 2>&1
if "$HEAPPROF" collapse "$TMPD/chainfp.pb.gz" 2>&1 | grep -q 'unw_chain_a;unw_chain_b'; then
	fail rel.unwind.chain.no_frame_pointers "HEAPPROF_UNWIND=fp walked rprog_unwind: built with frame pointers?"
else
	pass rel.unwind.chain.no_frame_pointers
fi
# Same stacks as libunwind (opt-in), where it is installed.
for prog in "$U chain 300" "$UXX 300"; do
	name=rel.unwind.same_as_libunwind.$(basename "${prog%% *}")
	run_t $name 120 env HEAPPROF_RATE=1 HEAPPROF_UNWIND=libunwind \
		HEAPPROF_OUT="$TMPD/lu.pb.gz" LD_PRELOAD="$LIB" $prog >/dev/null 2>"$TMPD/lu.err"
	if grep -q 'libunwind.so.8 not found' "$TMPD/lu.err"; then
		skip_tool $name libunwind.so.8 libunwind8
		continue
	fi
	run_t $name 120 env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/dw.pb.gz" \
		LD_PRELOAD="$LIB" $prog >/dev/null 2>&1
	"$HEAPPROF" collapse "$TMPD/lu.pb.gz" >"$TMPD/lu.txt" 2>&1
	"$HEAPPROF" collapse "$TMPD/dw.pb.gz" >"$TMPD/dw.txt" 2>&1
	if [ -s "$TMPD/dw.txt" ] && cmp -s "$TMPD/lu.txt" "$TMPD/dw.txt"; then
		pass $name
	else
		fail $name "$(diff "$TMPD/lu.txt" "$TMPD/dw.txt" | head -4 | cut -c1-200 | tr '\n' ' ')"
	fi
done

# A large real program (CPython: -O2, LTO, no frame pointers), every
# allocation: the same set of distinct stacks from both unwinders.
if command -v python3 >/dev/null 2>&1 && [ -s "$TMPD/lu.txt" ]; then
	for u in dwarf libunwind; do
		run_t rel.unwind.same_as_libunwind.python3 120 env PYTHONHASHSEED=0 \
			HEAPPROF_UNWIND=$u HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/py.$u.pb.gz" \
			LD_PRELOAD="$LIB" python3 -c 'import json; print(len(json.dumps({"a": list(range(1000))})))' >/dev/null 2>&1
		"$HEAPPROF" collapse --sample-index alloc_objects "$TMPD/py.$u.pb.gz" 2>&1 |
			sed 's/ [-0-9]*$//' | sort -u >"$TMPD/py.$u.txt"
	done
	nd=$(wc -l <"$TMPD/py.dwarf.txt")
	if [ "$nd" -gt 100 ] && cmp -s "$TMPD/py.dwarf.txt" "$TMPD/py.libunwind.txt"; then
		pass rel.unwind.same_as_libunwind.python3
	else
		fail rel.unwind.same_as_libunwind.python3 "$nd stacks; $(diff "$TMPD/py.libunwind.txt" "$TMPD/py.dwarf.txt" | head -3 | cut -c1-300 | tr '\n' ' ')"
	fi
else
	skip_tool rel.unwind.same_as_libunwind.python3 "python3 or libunwind.so.8" "python3 libunwind8"
fi

# --- signal handlers -----------------------------------------------------------
for r in 1 524288; do
	n=rel.unwind.signal.rate$r
	run_t $n 120 env HEAPPROF_RATE=$r HEAPPROF_OUT="$TMPD/sig$r.pb.gz" \
		LD_PRELOAD="$LIB" "$U" signal 2000 >"$TMPD/sig.out" 2>"$TMPD/sig.err" || continue
	if [ $RC -eq 0 ] && grep -q '^ok 4000$' "$TMPD/sig.out"; then
		pass $n
	else
		fail $n "status $RC (139: SIGSEGV); $(head -c 200 "$TMPD/sig.err")"
	fi
done
"$HEAPPROF" collapse --sample-index alloc_objects "$TMPD/sig1.pb.gz" >"$TMPD/sig.txt" 2>&1
if grep -q ';main;unw_sig_sender;raise;.*;unw_sig_handler [0-9]' "$TMPD/sig.txt" &&
	grep -q ';main;unw_spin;[^;]*;unw_sig_handler [0-9]' "$TMPD/sig.txt"; then
	pass rel.unwind.signal.through_frame
else
	fail rel.unwind.signal.through_frame "stacks stop at the signal frame: $(grep unw_sig "$TMPD/sig.txt" | head -3 | tr '\n' ' ')"
fi
