#!/bin/sh
# replay.sh: runs every fuzz target's seed corpus (fuzz/corpus/<target>/)
# and any regression inputs (fuzz/regress/<target>/) through the replay
# driver (fuzz/replay.c, gcc with ASan + UBSan; no libFuzzer needed), one
# "PASS/FAIL fuzz_replay_<target>" line per target. Part of `make test`
# (tests/run.sh runs fuzz/*.sh). The smoke run with libFuzzer itself is
# fuzz/smoke.sh.
cd "$(dirname "$0")/.." || exit 2
status=0
targets=$(ls fuzz/fuzz_*.c | sed 's|fuzz/fuzz_||; s|\.c$||')
for t in $targets; do
	if ! make -s "build/fuzz/replay_$t" >/tmp/heapprof-replay-build.$$ 2>&1; then
		echo "FAIL fuzz_replay_$t (build)"
		tail -20 /tmp/heapprof-replay-build.$$ >&2
		rm -f /tmp/heapprof-replay-build.$$
		status=1
		continue
	fi
	rm -f /tmp/heapprof-replay-build.$$
	dirs=""
	for d in fuzz/corpus/$t fuzz/regress/$t; do
		[ -d "$d" ] && dirs="$dirs $d"
	done
	if [ -z "$dirs" ]; then
		echo "SKIP fuzz_replay_$t: no corpus in fuzz/corpus/$t"
		continue
	fi
	log=$(mktemp)
	# LeakSanitizer needs ptrace, which some sandboxes lack: if it cannot
	# run, replay again without it rather than fail.
	asan=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
	replay() {
		ASAN_OPTIONS=$asan \
			UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1} \
			build/fuzz/replay_$t $dirs >"$log" 2>&1
	}
	replay
	rc=$?
	if [ $rc -ne 0 ] && grep -q "LeakSanitizer has encountered a fatal error" "$log"; then
		asan=detect_leaks=0:abort_on_error=1
		replay
		rc=$?
	fi
	if [ $rc -eq 0 ]; then
		echo "PASS fuzz_replay_$t ($(tail -1 "$log"))"
	else
		echo "FAIL fuzz_replay_$t"
		grep -E '^replay: ' "$log" | tail -1 >&2
		grep -vE '^replay: ' "$log" | head -30 >&2
		status=1
	fi
	rm -f "$log"
done
exit $status
