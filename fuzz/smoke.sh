#!/bin/sh
# smoke.sh: a short libFuzzer run of every fuzz target (FUZZ_SECONDS each,
# default 20), starting from the seed corpus, for CI. Needs clang and
# libclang-rt-14-dev (libFuzzer); prints "SKIP fuzz_smoke: why" without
# them. New inputs go to a temporary directory (the committed corpus is not
# modified); a crasher is copied to build/fuzz/crashes/ and reported as
# FAIL with its path, for adding to fuzz/regress/<target>/.
cd "$(dirname "$0")/.." || exit 2
secs=${FUZZ_SECONDS:-30}
cc=${FUZZ_CC:-clang}
if ! command -v "$cc" >/dev/null 2>&1; then
	echo "SKIP fuzz_smoke: missing tool $cc (Debian package clang; make test installs it)"
	exit 0
fi
probe=$(mktemp -d)
printf 'int LLVMFuzzerTestOneInput(const unsigned char *d, unsigned long n){(void)d;(void)n;return 0;}\n' >"$probe/p.c"
if ! "$cc" -fsanitize=fuzzer "$probe/p.c" -o "$probe/p" >/dev/null 2>&1; then
	rm -rf "$probe"
	echo "SKIP fuzz_smoke: missing tool libFuzzer ($cc -fsanitize=fuzzer) (Debian package libclang-rt-14-dev; make test installs it)"
	exit 0
fi
rm -rf "$probe"
targets=$(ls fuzz/fuzz_*.c | sed 's|fuzz/fuzz_||; s|\.c$||')
status=0
mkdir -p build/fuzz/crashes
for t in $targets; do
	if ! make -s "build/fuzz/fuzz_$t" FUZZ_CC="$cc" >/tmp/heapprof-fuzz-build.$$ 2>&1; then
		echo "FAIL fuzz_smoke_$t (build)"
		tail -20 /tmp/heapprof-fuzz-build.$$ >&2
		rm -f /tmp/heapprof-fuzz-build.$$
		status=1
		continue
	fi
	rm -f /tmp/heapprof-fuzz-build.$$
	work=$(mktemp -d)
	seeds=fuzz/corpus/$t
	[ -d "$seeds" ] || seeds=
	# Leak detection needs ptrace; fall back without it if it cannot run.
	run() {
		ASAN_OPTIONS=$1 build/fuzz/fuzz_$t -max_total_time="$secs" \
			-rss_limit_mb=2048 -timeout=10 -max_len=1048576 \
			-artifact_prefix="$work/" -print_final_stats=1 \
			"$work" $seeds >"$work/log" 2>&1
	}
	run "detect_leaks=1"
	rc=$?
	if [ $rc -ne 0 ] && grep -q "LeakSanitizer has encountered a fatal error" "$work/log"; then
		rm -f "$work"/crash-* "$work"/leak-*
		run "detect_leaks=0"
		rc=$?
	fi
	execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$work/log" | grep -o '[0-9]*$')
	if [ $rc -eq 0 ]; then
		echo "PASS fuzz_smoke_$t (${secs}s, ${execs:-?} executions)"
	else
		echo "FAIL fuzz_smoke_$t"
		for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
			[ -f "$a" ] || continue
			cp "$a" "build/fuzz/crashes/${t}-$(basename "$a")"
			echo "  artifact: build/fuzz/crashes/${t}-$(basename "$a")" >&2
		done
		grep -E 'ERROR|assertion|runtime error|SUMMARY' "$work/log" | head -10 >&2
		status=1
	fi
	rm -rf "$work"
done
exit $status
