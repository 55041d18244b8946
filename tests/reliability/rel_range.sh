#!/bin/sh
# The profiler's address space and its own memory (issue 13: defects 8, 9,
# 3's memory side; suspicions: page runs that never coalesce, valloc /
# pvalloc usable size, longjmp out of a handler). Each case runs the
# program without the profiler, then preloaded and linked (libheapprof.a)
# at rate 1 and at the default rate: output and status must be the same,
# and what stays live must be in the profile exactly (profsum, tolerance 0:
# blocks of GiBs are certain samples of weight 1 at the default rate too).
#   big 17          a live 17 GiB block (was neither recorded nor dropped:
#                   more than a quarter of the 64 GiB range)
#   four 8          four live 8 GiB blocks (power-of-two runs of 16 GiB
#                   exhausted the range at the fourth)
#   limit, cycle    under ulimit -v (8 GiB, 1 GiB, 12 GiB): blocks the
#                   program could have without the profiler (the reservation
#                   took half the limit: ENOMEM), and a series of growing
#                   blocks each freed before the next (needs runs that
#                   coalesce and address space given back)
#   usable          valloc / pvalloc / memalign usable sizes >= glibc's and
#                   whole pages for pvalloc, all of it writable
#   sigexit         a SIGALRM handler calls exit() while main allocates,
#                   20 runs each at rate 1 and default, symtab and dwarf:
#                   no hang (the exit dump allocated from glibc's malloc,
#                   whose lock the interrupted code held)
#   longjmp         a handler siglongjmps out 200 times wherever it lands
#                   (but libc), then threads free main's blocks and
#                   allocate: no hang, no crash (5 runs each)
. "$(dirname "$0")/lib.sh"
need_lib rel.range
oracle_tmpdir
P=$PROG/rprog_range
HAVE_GO=0
command -v go >/dev/null 2>&1 && HAVE_GO=1

# rcase NAME ULIMIT_KB ARGS...: rprog_range ARGS under `ulimit -v`.
rcase() {
	_n=$1 _u=$2; shift 2
	mkdir -p "$TMPD/$_n"
	run_t "$_n.base" 120 sh -c 'ulimit -v "$0" && exec "$@"' "$_u" "$P" "$@" \
		>"$TMPD/$_n/base" 2>"$TMPD/$_n/base.err" || return
	_brc=$RC
	for _how in preload linked; do
		for _r in 1 524288; do
			_t=$_how.rate$_r
			[ $_r = 524288 ] && _t=$_how.default
			_pre="LD_PRELOAD=$LIB" _bin=$P
			[ $_how = linked ] && _pre="RANGE_LINKED=1" _bin=${P}_linked
			rm -f "$TMPD/$_n/$_t".*.pb.gz
			run_t "$_n.$_t" 120 sh -c 'ulimit -v "$0" && exec "$@"' "$_u" \
				env HEAPPROF_RATE=$_r HEAPPROF_OUT="$TMPD/$_n/$_t.%p.pb.gz" \
				"$_pre" "$_bin" "$@" >"$TMPD/$_n/$_t" 2>"$TMPD/$_n/$_t.err" || continue
			if [ $RC -ne $_brc ] || ! cmp -s "$TMPD/$_n/base" "$TMPD/$_n/$_t"; then
				fail "$_n.$_t" "status $RC vs $_brc; $(diff "$TMPD/$_n/base" "$TMPD/$_n/$_t" | head -6 | tr '\n' ' ') $(head -c 300 "$TMPD/$_n/$_t.err")"
				continue
			fi
			pass "$_n.$_t"
			grep -q '^EXPECT ' "$TMPD/$_n/$_t" || continue
			_f=$(ls "$TMPD/$_n/$_t".*.pb.gz 2>/dev/null | head -1)
			if [ -z "$_f" ]; then
				fail "$_n.$_t.profile" "no profile written"
			elif [ $HAVE_GO = 1 ]; then
				$PROFSUM check "$_n.$_t" "$TMPD/$_n/$_t" 0 "$_f" || FAILED=1
			else
				skip_tool "$_n.$_t.profile" go golang-go
			fi
		done
	done
}

# 17 GiB and 4 x 8 GiB are never touched: no memory behind them. A machine
# whose overcommit policy refuses them refuses them without the profiler
# too (the output says NULL and the profile check has nothing to check).
rcase rel.range.big17 unlimited big 17
rcase rel.range.four8 unlimited four 8
rcase rel.range.limit8g 8388608 limit 6144
rcase rel.range.limit1g 1048576 limit 768
rcase rel.range.limit256m 262144 limit 160
rcase rel.range.cycle 12582912 cycle 4
rcase rel.range.usable unlimited usable
if grep -q '^BAD' "$TMPD"/rel.range.usable/*.err 2>/dev/null; then
	fail rel.range.usable.sizes "$(grep -h '^BAD' "$TMPD"/rel.range.usable/*.err | head -3 | tr '\n' ' ')"
fi

# exit() from a handler while main allocates: must exit 3 every time.
S=$PROG/rprog_sigexit
for _sym in symtab dwarf; do
	for _r in 1 524288; do
		for _how in preload linked; do
			_n=rel.range.sigexit.$_sym.rate$_r.$_how
			[ $_r = 524288 ] && _n=rel.range.sigexit.$_sym.default.$_how
			_pre="LD_PRELOAD=$LIB" _bin=$S
			[ $_how = linked ] && _pre="RANGE_LINKED=1" _bin=${S}_linked
			_bad="" _i=0
			while [ $_i -lt 20 ]; do
				_i=$((_i + 1))
				rm -f "$TMPD"/sigexit.*.pb.gz
				run_t "$_n" 60 env HEAPPROF_RATE=$_r HEAPPROF_SYMBOLIZE=$_sym \
					HEAPPROF_OUT="$TMPD/sigexit.%p.pb.gz" "$_pre" "$_bin" exit \
					>"$TMPD/sigexit.out" 2>&1 || { _bad=hang; break; }
				if [ $RC -ne 3 ]; then
					_bad="run $_i: status $RC: $(head -c 200 "$TMPD/sigexit.out")"
					break
				fi
			done
			if [ -z "$_bad" ]; then
				pass "$_n"
			elif [ "$_bad" != hang ]; then
				fail "$_n" "$_bad"
			fi
		done
	done
done

# siglongjmp out of a handler, wherever it lands.
for _r in 1 524288; do
	for _how in preload linked; do
		_n=rel.range.longjmp.rate$_r.$_how
		_pre="LD_PRELOAD=$LIB" _bin=$S
		[ $_how = linked ] && _pre="RANGE_LINKED=1" _bin=${S}_linked
		_bad="" _i=0
		while [ $_i -lt 5 ]; do
			_i=$((_i + 1))
			run_t "$_n" 120 env HEAPPROF_RATE=$_r HEAPPROF_OUT="$TMPD/lj.%p.pb.gz" \
				"$_pre" "$_bin" longjmp >"$TMPD/lj.out" 2>&1 || { _bad=hang; break; }
			if [ $RC -ne 0 ] || ! grep -q 'done' "$TMPD/lj.out"; then
				_bad="run $_i: status $RC: $(head -c 300 "$TMPD/lj.out")"
				break
			fi
		done
		if [ -z "$_bad" ]; then
			pass "$_n"
		elif [ "$_bad" != hang ]; then
			fail "$_n" "$_bad"
		fi
	done
done
exit $FAILED
