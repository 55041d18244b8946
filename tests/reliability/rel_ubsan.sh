#!/bin/sh
# The capture path under UndefinedBehaviorSanitizer (plan T26, in part):
# sanitizers that replace malloc (ASan, TSan, valgrind's memcheck) bypass
# an interposer, but UBSan does not, so every source of the library is
# built with -fsanitize=undefined (no recovery) and linked into
# prog_pattern and prog_threads, which then run at rate 1 (every
# allocation through the sampled path: range, slots, stacks, buckets,
# dump) and must still count exactly. Built at -O1, where the entry points
# do not tail-call their slow paths: this also covers the fallback that
# skips the entry point's own frame. rel_sanitize.sh runs the same sources
# under clang's TSan, ASan and UBSan, with the entry points renamed.
. "$(dirname "$0")/../integration/lib.sh"
need_go rel_ubsan
oracle_tmpdir
CCU=${CC:-gcc}
# Not ending.c nor unload_hook.c: they interpose sigaction, _exit and
# dlclose, which the sanitizer runtime intercepts too (the static library
# leaves them out as well).
SRC="$REPO/src/common/*.c $REPO/src/pprof/*.c $REPO/src/legacy/*.c $REPO/src/symbols/*.c $REPO/src/ops/*.c $(ls "$REPO"/src/collect/*.c | grep -v "/ending.c\|/unload_hook.c") $REPO/src/serve/*.c"
build() { # out prog.c
	# shellcheck disable=SC2086
	$CCU -std=c11 -D_GNU_SOURCE -O1 -g -fsanitize=undefined -fno-sanitize-recover=all \
		-fno-omit-frame-pointer -fvisibility=hidden -I"$REPO/include" -I"$REPO/src/common" \
		-I"$REPO/src/pprof" -I"$REPO/src/legacy" -I"$REPO/src/symbols" $SRC "$2" -lz -lm -ldl -lpthread -o "$1" 2>"$TMPD/cc.err"
}
if ! build "$TMPD/pattern" "$REPO/tests/integration/prog_pattern.c"; then
	if grep -q "ubsan" "$TMPD/cc.err"; then
		skip_tool rel.ubsan "libubsan (UBSan runtime of $CCU: $(head -1 "$TMPD/cc.err"))" libubsan1
		exit 0
	fi
	fail rel.ubsan.build "$(head -5 "$TMPD/cc.err")"
	exit 1
fi
pass rel.ubsan.build
for unwind in dwarf libunwind fp; do
	if timeout 300 env HEAPPROF_RATE=1 HEAPPROF_UNWIND=$unwind HEAPPROF_OUT="$TMPD/p.$unwind.pb.gz" \
		UBSAN_OPTIONS=print_stacktrace=1 "$TMPD/pattern" >"$TMPD/p.$unwind.exp" 2>"$TMPD/p.err"; then
		pass "rel.ubsan.pattern.$unwind.clean"
		$PROFSUM check "rel.ubsan.pattern.$unwind" "$TMPD/p.$unwind.exp" 0 "$TMPD/p.$unwind.pb.gz" || FAILED=1
	else
		fail "rel.ubsan.pattern.$unwind.clean" "$(grep -m3 'runtime error\|SUMMARY' "$TMPD/p.err")"
	fi
done
if build "$TMPD/threads" "$REPO/tests/integration/prog_threads.c" &&
	timeout 300 env HEAPPROF_RATE=1 HEAPPROF_INTERVAL=1 HEAPPROF_OUT="$TMPD/t.%n.pb.gz" \
		"$TMPD/threads" 4 20000 >"$TMPD/t.exp" 2>"$TMPD/t.err"; then
	pass rel.ubsan.threads.clean
	last=$(ls -t "$TMPD"/t.*.pb.gz | head -1)
	$PROFSUM check rel.ubsan.threads "$TMPD/t.exp" 0 "$last" || FAILED=1
else
	fail rel.ubsan.threads.clean "$(grep -m3 'runtime error\|SUMMARY' "$TMPD/t.err" "$TMPD/cc.err")"
fi
exit $FAILED
