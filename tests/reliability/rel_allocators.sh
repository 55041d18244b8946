#!/bin/sh
# The program's allocator stays the program's (issue 29, item 1). A program
# whose malloc is jemalloc or tcmalloc, preloaded ahead of the profiler or
# after it, linked (-ljemalloc, before or after libheapprof.so) or linked
# into the executable (libjemalloc_pic.a), runs as without the profiler:
# stdout and exit status identical, at rate 1 and the default rate. Where
# our malloc is the program's, the profile has samples; where the
# allocator comes first, nothing is sampled (its free would get our
# pointers), no profile is written and stderr says so in one line.
# Before: "realloc(): invalid pointer" at the first reallocarray wherever
# the allocator came first (RTLD_NEXT skipped it and found glibc's).
# Then redis-server (Debian's links jemalloc) with redis-benchmark.
. "$(dirname "$0")/lib.sh"
need_lib rel_allocators
oracle_tmpdir
P=$PROG/rprog_allocators
SRC=$REPO/tests/reliability/rprog_allocators.c
CC=${CC:-cc}
JE=$($CC -print-file-name=libjemalloc.so.2)
JEA=$($CC -print-file-name=libjemalloc_pic.a)
TC=$($CC -print-file-name=libtcmalloc_minimal.so.4)
ROUNDS=$(by_tier 200 2000)
MSG="nothing is sampled"

# The total of a profile's alloc_objects (0 if none or unreadable).
objects() {
	"$HEAPPROF" top --sample-index alloc_objects -n 1 "$1" 2>/dev/null |
		sed -n 's/.* of \([0-9][0-9.]*\) total.*/\1/p' | head -1
}

# one NAME EXPECT BASE_PRELOAD PROF_PRELOAD PROG ARGS...: the program
# without the profiler (BASE_PRELOAD, maybe empty; $BASE in place of PROG if
# set) and with it (PROF_PRELOAD) at rate 1 and the default rate. EXPECT: samples (a profile with samples,
# stderr silent) or none (no profile, one warning).
one() {
	_n=$1 _e=$2 _bp=$3 _pp=$4 _prog=$5; shift 5
	mkdir -p "$TMPD/$_n"
	run_t "$_n.base" 120 env LD_PRELOAD="$_bp" "${BASE:-$_prog}" "$@" >"$TMPD/$_n/base" 2>"$TMPD/$_n/base.err" || return
	_brc=$RC
	if [ $_brc -ne 0 ] || ! grep -q " 0 bad" "$TMPD/$_n/base"; then
		fail "$_n.base" "the program fails without the profiler: status $_brc $(head -c 200 "$TMPD/$_n/base")"
		return
	fi
	for _r in 1 524288; do
		_t=rate$_r
		[ $_r = 524288 ] && _t=default
		run_t "$_n.$_t" 120 env HEAPPROF_RATE=$_r LD_PRELOAD="$_pp" \
			HEAPPROF_OUT="$TMPD/$_n/$_t.%p.pb.gz" "$_prog" "$@" \
			>"$TMPD/$_n/$_t" 2>"$TMPD/$_n/$_t.err" || continue
		if [ $RC -ne $_brc ] || ! cmp -s "$TMPD/$_n/base" "$TMPD/$_n/$_t"; then
			fail "$_n.$_t" "status $RC vs $_brc; $(diff "$TMPD/$_n/base" "$TMPD/$_n/$_t" | head -3 | tr '\n' ' ') $(head -c 300 "$TMPD/$_n/$_t.err")"
			continue
		fi
		_f=$(ls "$TMPD/$_n/$_t".*.pb.gz 2>/dev/null | head -1)
		_w=$(grep -c "$MSG" "$TMPD/$_n/$_t.err")
		_other=$(grep -v "$MSG" "$TMPD/$_n/$_t.err" | head -2 | tr '\n' ' ')
		if [ "$_e" = samples ]; then
			_o=$([ -n "$_f" ] && objects "$_f")
			if [ -n "$_o" ] && [ "${_o%%.*}" -gt 0 ] && [ "$_w" -eq 0 ] && [ -z "$_other" ]; then
				pass "$_n.$_t"
			else
				fail "$_n.$_t" "profile ${_f:-none} with ${_o:-no} alloc_objects; stderr: $(head -c 300 "$TMPD/$_n/$_t.err")"
			fi
		elif [ -z "$_f" ] && [ "$_w" -eq 1 ] && [ -z "$_other" ]; then
			pass "$_n.$_t"
		else
			fail "$_n.$_t" "profile ${_f:-none}, $_w warnings; stderr: $(head -c 300 "$TMPD/$_n/$_t.err")"
		fi
	done
}

# A non-PIE executable that takes malloc's address (canonical PLT entries,
# as Debian's /usr/bin/python3): the profiler is still the program's
# allocator. Before: malloc called itself for ever (a hang).
CANON=$TMPD/canonplt
if $CC -fno-pie -no-pie -O1 -o "$CANON" "$REPO/tests/reliability/canonplt.c" 2>"$TMPD/canon.cc"; then
	one rel.allocators.canonical_plt samples "" "$LIB" "$CANON"
else
	fail rel.allocators.canonical_plt "cannot build a -no-pie program: $(head -c 200 "$TMPD/canon.cc")"
fi
# An allocator selector preloaded ahead of the profiler, whose malloc is
# one `jmp *ptr(%rip)` (rlib_fwdshim.c): the code of a PLT entry, but a
# definition. The program's allocator is the shim: nothing sampled, one
# warning, the program as without the profiler. Before (h17): the shim was
# taken for a canonical PLT entry, glibc's realloc got the shim's blocks
# (SIGSEGV at the first reallocarray).
SHIM=$TMPD/libfwdshim.so
if $CC -O2 -fPIC -shared -o "$SHIM" "$REPO/tests/reliability/rlib_fwdshim.c" 2>"$TMPD/shim.cc"; then
	one rel.allocators.forwarding_first none "$SHIM" "$SHIM $LIB" "$P" family "$ROUNDS"
else
	fail rel.allocators.forwarding_first "cannot build the shim: $(head -c 200 "$TMPD/shim.cc")"
fi
# Debian's python3 itself (non-PIE, canonical PLT for malloc and free).
if [ -x /usr/bin/python3 ]; then
	run_t rel.allocators.debian_python 60 env HEAPPROF_RATE=1 LD_PRELOAD="$LIB" \
		HEAPPROF_OUT="$TMPD/py.%p.pb.gz" /usr/bin/python3 -c 'print(sum(len(bytes(i)) for i in range(1000)))' \
		>"$TMPD/py.out" 2>"$TMPD/py.err"
	if [ "${RC:-1}" -eq 0 ] && [ "$(cat "$TMPD/py.out")" = 499500 ] && [ ! -s "$TMPD/py.err" ] &&
		ls "$TMPD"/py.*.pb.gz >/dev/null 2>&1; then
		pass rel.allocators.debian_python
	else
		fail rel.allocators.debian_python "status ${RC:-timeout}, out '$(cat "$TMPD/py.out")', $(head -c 200 "$TMPD/py.err")"
	fi
else
	skip_tool rel.allocators.debian_python /usr/bin/python3 python3
fi

# pages NAME PROF_PRELOAD PROG: pvalloc and valloc blocks freed by free.
# Without the profiler jemalloc's program gets glibc's pvalloc (jemalloc
# has none) and its free crashes on that block; through the profiler's
# entry points both come from the allocator (before: glibc's pvalloc,
# SIGSEGV in jemalloc's free).
pages() {
	_n=$1 _pp=$2; shift 2
	for _r in 1 524288; do
		_t=rate$_r
		[ $_r = 524288 ] && _t=default
		run_t "$_n.$_t" 120 env HEAPPROF_RATE=$_r LD_PRELOAD="$_pp" \
			HEAPPROF_OUT="$TMPD/$_n.$_t.%p.pb.gz" "$@" pages "$ROUNDS" \
			>"$TMPD/$_n.$_t" 2>"$TMPD/$_n.$_t.err" || continue
		if [ $RC -eq 0 ] && grep -q "^pages $ROUNDS rounds, 0 bad" "$TMPD/$_n.$_t"; then
			pass "$_n.$_t"
		else
			fail "$_n.$_t" "status $RC: $(head -c 200 "$TMPD/$_n.$_t") $(head -c 200 "$TMPD/$_n.$_t.err")"
		fi
	done
}

if [ -f "$JE" ]; then
	one rel.allocators.jemalloc_first none "$JE" "$JE $LIB" "$P" family "$ROUNDS"
	one rel.allocators.jemalloc_after samples "$JE" "$LIB $JE" "$P" family "$ROUNDS"
	pages rel.allocators.jemalloc_after.pages "$LIB $JE" "$P"
	pages rel.allocators.jemalloc_first.pages "$JE $LIB" "$P"
	# Linked: -ljemalloc alone (the profiler preloaded, so first), and
	# with libheapprof.so linked after it and before it.
	if $CC -O1 -o "$TMPD/je_linked" "$SRC" -ljemalloc 2>"$TMPD/cc.err" &&
		$CC -O1 -o "$TMPD/je_then_hp" "$SRC" -ljemalloc "$LIB" 2>>"$TMPD/cc.err" &&
		$CC -O1 -o "$TMPD/hp_then_je" "$SRC" "$LIB" -ljemalloc 2>>"$TMPD/cc.err"; then
		one rel.allocators.jemalloc_linked samples "" "$LIB" "$TMPD/je_linked" family "$ROUNDS"
		pages rel.allocators.jemalloc_linked.pages "$LIB" "$TMPD/je_linked"
		# The base: the same program without libheapprof.so.
		BASE=$TMPD/je_linked
		one rel.allocators.jemalloc_linked_first none "" "" "$TMPD/je_then_hp" family "$ROUNDS"
		one rel.allocators.profiler_linked_first samples "" "" "$TMPD/hp_then_je" family "$ROUNDS"
		BASE=
	else
		fail rel.allocators.jemalloc_linked "cannot link with -ljemalloc: $(head -3 "$TMPD/cc.err")"
	fi
else
	skip_tool rel.allocators.jemalloc libjemalloc.so.2 libjemalloc-dev
fi
if [ -f "$JEA" ]; then
	# jemalloc linked into the executable: its malloc is the program's,
	# which no preload reaches.
	if $CC -O1 -o "$TMPD/je_static" "$SRC" "$JEA" -lpthread -ldl -lm 2>"$TMPD/cc.err"; then
		one rel.allocators.jemalloc_static none "" "$LIB" "$TMPD/je_static" family "$ROUNDS"
	else
		fail rel.allocators.jemalloc_static "cannot link $JEA: $(head -3 "$TMPD/cc.err")"
	fi
else
	skip_tool rel.allocators.jemalloc_static libjemalloc_pic.a libjemalloc-dev
fi
# libheapprof.a linked into an executable that exports no malloc
# (--exclude-libs): the executable's own calls reach the profiler, which
# must not take another object's malloc, first in the lookup, for the
# program's (a guard for the check above).
if $CC -O1 -o "$TMPD/hp_static" "$SRC" "$REPO/build/libheapprof.a" -lz -lm -ldl -lpthread \
	-Wl,--exclude-libs,ALL 2>"$TMPD/cc.err"; then
	BASE=$P
	one rel.allocators.profiler_static_unexported samples "" "" "$TMPD/hp_static" family "$ROUNDS"
	BASE=
else
	fail rel.allocators.profiler_static_unexported "cannot link libheapprof.a: $(head -3 "$TMPD/cc.err")"
fi
if [ -f "$TC" ]; then
	one rel.allocators.tcmalloc_first none "$TC" "$TC $LIB" "$P" family "$ROUNDS"
	one rel.allocators.tcmalloc_after samples "$TC" "$LIB $TC" "$P" family "$ROUNDS"
else
	skip_tool rel.allocators.tcmalloc libtcmalloc_minimal.so.4 libtcmalloc-minimal4
fi

# redis-server (linked with jemalloc) on a unix socket, no persistence,
# under `heapprof run` at the default rate: redis-benchmark's three tests
# complete, SHUTDOWN ends it with status 0, and its profile has samples.
if command -v redis-server >/dev/null 2>&1 && command -v redis-benchmark >/dev/null 2>&1; then
	S=$TMPD/redis.sock
	mkdir -p "$TMPD/redis"
	"$HEAPPROF" run -o "$TMPD/redis/heap.pb.gz" -- redis-server --port 0 \
		--unixsocket "$S" --save '' --appendonly no --daemonize no \
		--dir "$TMPD/redis" --logfile "$TMPD/redis/log" \
		>"$TMPD/redis/out" 2>&1 &
	rpid=$!
	up=0
	for _i in $(seq 200); do
		if redis-cli -s "$S" ping 2>/dev/null | grep -q PONG; then up=1; break; fi
		kill -0 $rpid 2>/dev/null || break
		sleep 0.05
	done
	if [ $up = 1 ]; then
		timeout 300 redis-benchmark -s "$S" -q -n $(by_tier 20000 200000) \
			-t set,lpush,get >"$TMPD/redis/bench" 2>&1
		brc=$?
		redis-cli -s "$S" shutdown nosave >/dev/null 2>&1
	fi
	( sleep 60; kill -KILL $rpid 2>/dev/null ) &
	wd=$!
	wait $rpid
	rrc=$?
	kill $wd 2>/dev/null
	n=$(tr '\r' '\n' <"$TMPD/redis/bench" 2>/dev/null | grep -c "requests per second")
	o=$([ -f "$TMPD/redis/heap.pb.gz" ] && objects "$TMPD/redis/heap.pb.gz")
	if [ $up = 1 ] && [ "$brc" = 0 ] && [ "$n" -eq 3 ] && [ $rrc -eq 0 ] &&
		[ -n "$o" ] && [ "${o%%.*}" -gt 0 ]; then
		pass rel.allocators.redis
	else
		fail rel.allocators.redis "up $up, benchmark ${brc:-not run} ($n of 3 tests), status $rrc, profile ${o:-none}: $(tail -3 "$TMPD/redis/out" | tr '\n' ' ') $(tail -2 "$TMPD/redis/log" 2>/dev/null | tr '\n' ' ')"
	fi
else
	skip_tool rel.allocators.redis redis-server redis-server
fi
exit $FAILED
