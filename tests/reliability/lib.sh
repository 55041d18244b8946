# lib.sh: helpers for the reliability tests (tests/reliability/*.sh), on
# top of tests/integration/lib.sh (LIB, PROG, PROFSUM, HEAPPROF, pass/fail/
# skip, oracle_tmpdir). Every run goes through `timeout`; a timeout is a
# failure named "... hang".
#   TIER            fast (make test) or stress (REL_TIER=stress, make stress)
#   by_tier F S     prints F in the fast tier, S in the stress tier
#   prof ENV... -- CMD...   runs CMD under the profiler with ENV (no
#                   timeout; the caller adds one)
#   run_t NAME SECS CMD...  runs CMD with a timeout; sets RC; FAIL NAME.hang
#                   (and returns 1) on timeout
#   same3 NAME SECS CMD...  runs CMD without the profiler, at rate 1 and at
#                   the default rate: PASS when stdout and exit status match
#   parses NAME FILE...     every FILE decodes (heapprof top)
. "$(dirname "$0")/../integration/lib.sh"
TIER=${REL_TIER:-fast}
# The script's own stdout and stderr: callers redirect run_t's output to
# a file, which in sh takes the whole function with it, so a hang's FAIL
# line would land in that file and count nowhere.
exec 3>&1 4>&2
by_tier() { if [ "$TIER" = stress ]; then echo "$2"; else echo "$1"; fi; }

run_t() {
	_rn=$1 _rs=$2; shift 2
	timeout -k 5 "$_rs" "$@"
	RC=$?
	if [ $RC -eq 124 ] || [ $RC -eq 137 ]; then
		fail "$_rn.hang" "no exit within ${_rs}s: $*" >&3 2>&4
		return 1
	fi
	return 0
}

# same3 NAME SECS CMD...: output and status identical to the unprofiled run.
same3() {
	_n=$1 _s=$2; shift 2
	mkdir -p "$TMPD/$_n"
	run_t "$_n.base" "$_s" "$@" >"$TMPD/$_n/base" 2>"$TMPD/$_n/base.err" || return 1
	_brc=$RC
	for _r in 1 524288; do
		_t=rate$_r
		[ $_r = 524288 ] && _t=default
		run_t "$_n.$_t" "$_s" env HEAPPROF_RATE=$_r \
			HEAPPROF_OUT="$TMPD/$_n/$_t.%p.pb.gz" LD_PRELOAD="$LIB" "$@" \
			>"$TMPD/$_n/$_t" 2>"$TMPD/$_n/$_t.err" || continue
		if [ $RC -eq $_brc ] && cmp -s "$TMPD/$_n/base" "$TMPD/$_n/$_t"; then
			pass "$_n.$_t"
		else
			fail "$_n.$_t" "status $RC vs $_brc; $(diff "$TMPD/$_n/base" "$TMPD/$_n/$_t" | head -5 | tr '\n' ' ') $(head -c 300 "$TMPD/$_n/$_t.err")"
		fi
	done
}

parses() {
	_n=$1; shift
	for _f in "$@"; do
		if ! "$HEAPPROF" top "$_f" >/dev/null 2>"$TMPD/parses.err"; then
			fail "$_n" "$_f does not decode: $(head -2 "$TMPD/parses.err")"
			return 1
		fi
	done
	pass "$_n"
}
