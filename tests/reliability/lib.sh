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
#   run_td NAME SECS CMD... run_t, and on a hang every thread's stack of
#                   CMD and its descendants (gdb if installed, else each
#                   thread's wait channel) on stderr and in
#                   build/hangs/NAME.txt before they are killed
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
	_t0=$(date +%s)
	timeout -k 5 "$_rs" "$@"
	RC=$?
	# 137 is also a SIGKILL from outside (the OOM killer, a stray kill):
	# that is not a hang, and says so.
	if [ $RC -eq 137 ] && [ $(($(date +%s) - _t0)) -lt "$_rs" ]; then
		fail "$_rn.killed" "SIGKILL from outside after $(($(date +%s) - _t0)) s, not a hang: $*" >&3 2>&4
		return 1
	fi
	if [ $RC -eq 124 ] || [ $RC -eq 137 ]; then
		fail "$_rn.hang" "no exit within ${_rs}s: $*" >&3 2>&4
		return 1
	fi
	return 0
}

# PID and its descendants, one a line.
tree_pids() {
	ps -eo pid=,ppid= | awk -v r="$1" '{ pp[$1] = $2 }
		END { s[r] = 1
		      do { ch = 0; for (p in pp) if (!(p in s) && (pp[p] in s)) { s[p] = 1; ch = 1 } } while (ch)
		      for (p in s) print p }' | sort -n
}

# What every thread of PID and of its descendants waits for.
hang_dump() {
	for _p in $(tree_pids "$1"); do
		[ -d "/proc/$_p" ] || continue
		echo "--- pid $_p: $(tr '\0' ' ' <"/proc/$_p/cmdline" | cut -c1-300)"
		for _t in /proc/"$_p"/task/*; do
			echo "  thread ${_t##*/}: $(cut -d' ' -f3 "$_t/stat" 2>/dev/null) $(cat "$_t/wchan" 2>/dev/null)"
		done
		if command -v gdb >/dev/null 2>&1; then
			timeout -k 5 60 gdb -batch -nx -ex 'thread apply all bt' -p "$_p" 2>&1 |
				grep '^Thread \|^#'
		fi
	done
}

# run_t with a watchdog in place of timeout(1), which kills without a word.
# The command runs in the background (stdin /dev/null); the watchdog's
# sleep is killed with it, so no process outlives the call.
run_td() {
	_rn=$1 _rs=$2; shift 2
	rm -f "$TMPD/$_rn.hang"
	"$@" &
	_rp=$!
	(
		trap 'kill "$_sp" 2>/dev/null; exit 0' TERM
		sleep "$_rs" &
		_sp=$!
		wait "$_sp"
		hang_dump "$_rp" >"$TMPD/$_rn.hang.tmp" 2>&1
		mv "$TMPD/$_rn.hang.tmp" "$TMPD/$_rn.hang"
		# shellcheck disable=SC2046
		kill -KILL $(tree_pids "$_rp") 2>/dev/null
	) </dev/null >/dev/null 2>&1 &
	_rw=$!
	wait "$_rp"
	RC=$?
	kill "$_rw" 2>/dev/null
	wait "$_rw" 2>/dev/null
	if [ -s "$TMPD/$_rn.hang" ]; then
		mkdir -p "$REPO/build/hangs"
		cp "$TMPD/$_rn.hang" "$REPO/build/hangs/$_rn.txt"
		fail "$_rn.hang" "no exit within ${_rs}s: $*; stacks in build/hangs/$_rn.txt" >&3 2>&4
		sed 's/^/    /' "$TMPD/$_rn.hang" >&4
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
		if ! timeout -k 5 300 "$HEAPPROF" top "$_f" >/dev/null 2>"$TMPD/parses.err"; then
			fail "$_n" "$_f does not decode (or no exit in 300 s): $(head -2 "$TMPD/parses.err")"
			return 1
		fi
	done
	pass "$_n"
}
