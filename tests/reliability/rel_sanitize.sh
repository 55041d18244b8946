#!/bin/sh
# The capture half under ThreadSanitizer, AddressSanitizer and
# UndefinedBehaviorSanitizer (issue 13): `make sanitize` builds the library's
# sources with clang into build/sanitize/{tsan,asan,ubsan}/driver, the entry
# points renamed hp_malloc, ... so the sanitizer keeps its own malloc, which
# is then the profiler's next allocator (tests/sanitize/). The driver
# (tests/sanitize/driver.c) races allocating threads (every entry point,
# frees and reallocs across threads, the rate changed under them) with
# dumps of every kind, the HTTP endpoint, push, periodic and signal dumps
# and forks, then checks that the in-use totals are exact at rate 1.
#
# A variant FAILs on any sanitizer report (the run halts with status 66),
# on a failed check of the driver, or on a hang. rel_ubsan.sh covers the
# other half of the story: the real interposer (malloc itself) under UBSan.
#
# Nothing here waits without a bound. A hang of the driver prints every
# thread's stack (run_td); a forked child that does not exit within
# SAN_CHILD_SECS (120), or that uses no CPU for SAN_CHILD_IDLE (10) seconds,
# gets SIGABRT, on which the sanitizer prints its stack
# (handle_abort=1), and fails the run unless, under TSan, it is blocked in
# the runtime's own allocator, whose locks LLVM 14's TSan does not hold
# across fork (tests/sanitize/driver_child.c): that stalled a run here,
# the child in FutexWait <- GetFromAllocator <- realloc in its dump, its
# parent in waitpid, until the 600 s timeout. .child_hang checks that a
# stuck child ends the run with its stack.
#   SAN_SECONDS  phase-1 wall time per variant (default 5)
. "$(dirname "$0")/lib.sh"
oracle_tmpdir
SECS=${SAN_SECONDS:-$(by_tier 5 60)}
if ! command -v "${SAN_CC:-clang}" >/dev/null 2>&1; then
	skip_tool rel.sanitize "${SAN_CC:-clang}" clang
	exit 0
fi
# The three builds, two at a time; a variant whose runtime is missing is
# skipped, any other build failure fails.
run_t rel.sanitize.build 1800 make -s -C "$REPO" -j2 -k sanitize \
	>"$TMPD/build.log" 2>&1 || exit 1
# TSan: halt at the first report. second_deadlock_stack: both stacks of a
# lock-order inversion. report_signal_unsafe: malloc in a signal handler.
# handle_abort=1 (all three): a SIGABRT prints the stack (a stuck child).
TSAN_OPTIONS="halt_on_error=1 exitcode=66 second_deadlock_stack=1 report_signal_unsafe=1 handle_abort=1"
# detect_leaks=0: LLVM 14's LeakSanitizer crashes now and then in its own
# tracer at exit ("Tracer caught signal 11 ... LeakSanitizer has
# encountered a fatal error", 1 of the last 4 runs here) while the endpoint's
# and push's threads run; a flaky check is worse than none in CI. Set
# SAN_LEAKS=1 to turn it back on.
ASAN_OPTIONS="halt_on_error=1 exitcode=66 handle_abort=1 detect_leaks=${SAN_LEAKS:-0} strict_string_checks=1 check_initialization_order=1 detect_invalid_pointer_pairs=1"
UBSAN_OPTIONS="halt_on_error=1 exitcode=66 print_stacktrace=1 handle_abort=1"
export TSAN_OPTIONS ASAN_OPTIONS UBSAN_OPTIONS
for v in tsan asan ubsan; do
	bin=$REPO/build/sanitize/$v/driver
	if [ ! -x "$bin" ] || [ "$bin" -ot "$REPO/tests/sanitize/driver.c" ]; then
		if grep -q "clang_rt\|unsupported option\|unsupported argument" "$TMPD/build.log"; then
			skip_tool "rel.sanitize.$v" "$v runtime ($(grep -m1 'clang_rt\|unsupported' "$TMPD/build.log"))" libclang-rt-14-dev
		else
			fail "rel.sanitize.$v.build" "$(grep -m3 'error' "$TMPD/build.log")"
		fi
		continue
	fi
	# The rule that tells a child stuck in TSan's own allocator (which
	# does not fail the run) from any other stuck child, on four reports.
	if [ $v = tsan ]; then
		run_t "rel.sanitize.tsan.classify" 60 "$bin" classify >"$TMPD/classify" 2>&1 &&
			if grep -q "^classify: ok" "$TMPD/classify"; then
				pass "rel.sanitize.tsan.classify"
			else
				fail "rel.sanitize.tsan.classify" "$(head -c 600 "$TMPD/classify")"
			fi
	fi
	# Each variant takes another unwinder or symbolizer, so that all of
	# them run under some sanitizer.
	case $v in
	tsan) extra="HEAPPROF_UNWIND=fp" ;;
	asan) extra="HEAPPROF_SYMBOLIZE=dwarf" ;;
	*) extra="HEAPPROF_UNWIND=libunwind" ;;
	esac
	d=$TMPD/$v
	mkdir -p "$d"
	# shellcheck disable=SC2086
	run_td "rel.sanitize.$v" 420 env $extra HEAPPROF_RATE=1 SAN_TMPDIR="$d" \
		HEAPPROF_OUT="$d/out.%p.pb.gz" HEAPPROF_INTERVAL=1 HEAPPROF_MODE=delta \
		HEAPPROF_SIGNAL=USR2 HEAPPROF_HTTP=127.0.0.1:0 SAN_PUSH=1 \
		"$bin" "$SECS" 3 >"$d/out" 2>"$d/err" || continue
	rep=$(grep -a -m1 -A12 "WARNING: ThreadSanitizer\|ERROR: AddressSanitizer\|ERROR: LeakSanitizer\|runtime error:" "$d/err" |
		grep -a -v "^ *$" | tr '\n' ' ' | cut -c1-900)
	if [ $RC -eq 0 ] && [ -z "$rep" ] && grep -q ": ok$" "$d/out"; then
		pass "rel.sanitize.$v"
		grep -q "([1-9][0-9]* stuck in" "$d/out" &&
			echo "  rel.sanitize.$v: note: $(grep -a -m1 'blocked in the sanitizer' "$d/err")" >&2
	else
		fail "rel.sanitize.$v" "status $RC: ${rep:-$(grep -a -m3 'FAIL' "$d/err" | tr '\n' ' ')}"
		continue
	fi
	# The files the run left (exit, periodic, children, API) decode.
	[ -x "$HEAPPROF" ] && parses "rel.sanitize.$v.files" "$d"/*.pb.gz
	# exit() while the workers allocate: the exit dump races with them
	# and with the background thread. No leak check there (LeakSanitizer
	# stops the world while threads run, and its tracer crashes).
	mkdir -p "$d/exit"
	# shellcheck disable=SC2086
	run_td "rel.sanitize.$v.exit" 420 env $extra HEAPPROF_RATE=1 SAN_EXIT=1 \
		SAN_TMPDIR="$d/exit" HEAPPROF_OUT="$d/exit/out.%p.pb.gz" \
		HEAPPROF_INTERVAL=1 HEAPPROF_HTTP=127.0.0.1:0 \
		ASAN_OPTIONS="$ASAN_OPTIONS detect_leaks=0" \
		"$bin" "$SECS" 3 >"$d/exit/out" 2>"$d/exit/err" || continue
	rep=$(grep -a -m1 -A12 "WARNING: ThreadSanitizer\|ERROR: AddressSanitizer\|runtime error:" "$d/exit/err" |
		grep -a -v "^ *$" | tr '\n' ' ' | cut -c1-900)
	# A dump in progress (the dumper's, the periodic one, the endpoint's)
	# may outlast the 5 s the exit dump waits for it, which then writes
	# nothing and says so (by design: exit never waits long). Under ASan
	# with DWARF names on a loaded machine: 3 runs in 10 here.
	if [ $RC -eq 0 ] && [ -z "$rep" ] && { [ -s "$(ls "$d"/exit/out.*.pb.gz 2>/dev/null | head -1)" ] ||
		grep -q "a dump in progress did not end within 5 s: no exit profile" "$d/exit/err"; }; then
		pass "rel.sanitize.$v.exit"
	else
		fail "rel.sanitize.$v.exit" "status $RC, no exit profile or: ${rep:-$(grep -a -m3 'FAIL\|heapprof' "$d/exit/err" | tr '\n' ' ')}"
	fi
	# A child that never exits (child 1 blocks in pause()): the driver
	# fails with the child's stack instead of waiting for ever. ASan's
	# driver does not fork.
	[ $v = asan ] && continue
	mkdir -p "$d/hang"
	# shellcheck disable=SC2086
	run_td "rel.sanitize.$v.child_hang" 300 env $extra \
		SAN_CHILD_HANG=1 SAN_CHILD_IDLE=3 SAN_TMPDIR="$d/hang" \
		HEAPPROF_OUT="$d/hang/out.%p.pb.gz" \
		"$bin" 1 2 >"$d/hang/out" 2>"$d/hang/err" || continue
	if [ $RC -eq 1 ] && grep -q "FAIL: child 1 (pid [0-9]*) stuck (.*); its stack" "$d/hang/err" &&
		grep -q "#[0-9]* .*child .*sanitize/driver.c:[0-9]" "$d/hang/err"; then
		pass "rel.sanitize.$v.child_hang"
	else
		fail "rel.sanitize.$v.child_hang" "status $RC: $(grep -a -m3 'FAIL\|ABRT\|#[0-3] ' "$d/hang/err" | tr '\n' ' ' | cut -c1-600)"
	fi
done
exit $FAILED
