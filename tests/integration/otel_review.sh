#!/bin/sh
# otel_review.sh: the review of otel_procctx.c (the OTEP 4719 process
# context) and customlabels.c (Polar Signals' custom labels), issue 33;
# each case failed before its fix (prog_otelreview.c says what it does).
#   otel_review.tables        a publisher whose key map alternates over 301
#                             updates: the names are the last map's, not
#                             a table frozen at the 256th (TABLES_MAX)
#   otel_review.ranges        custom labels in a process with more
#                             readable mappings than the first table holds
#                             (CL_RANGES), the labels above them: read,
#                             not refused
#   otel_review.fork_reread   fork while another thread re-reads the maps
#                             for its labels: the child still reads its
#                             own labels (the flag and the sequence
#                             counter were left held in the child)
. "$(dirname "$0")/lib.sh"
need_go otel_review
need_lib otel_review
oracle_tmpdir
LS="python3 $REPO/tests/integration/labelsum.py"
P=$PROG/prog_otelreview

run_check() { # NAME MODE WANT KEY
	name=$1 m=$2 want=$3 key=$4
	timeout 120 env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/o.$m.pb.gz" LD_PRELOAD="$LIB" \
		"$P" "$m" >"$TMPD/out.$m" 2>&1
	rc=$?
	$LS "$key" "$TMPD/o.$m.pb.gz" >"$TMPD/got.$m" 2>&1
	printf -- "$want" >"$TMPD/want.$m"
	if [ $rc = 0 ] && cmp -s "$TMPD/want.$m" "$TMPD/got.$m"; then
		pass "otel_review.$name"
	else
		fail "otel_review.$name" "exit $rc, $key: $(tr '\n' ' ' <"$TMPD/got.$m")"
	fi
}
run_check tables tables '/a 100 30000 0 0\n' http_route
run_check ranges ranges '/far 100 30000 0 0\n' route

# fork_reread: the child's own profile (HEAPPROF_OUT with %p): its 100
# blocks and the one /kid block the parent allocated before the fork.
timeout 120 env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/f.%p.pb.gz" LD_PRELOAD="$LIB" \
	"$P" forkread >"$TMPD/out.f" 2>&1
rc=$?
kid=$(sed -n 's/^child //p' "$TMPD/out.f")
if [ $rc = 0 ] && [ -n "$kid" ] && [ -f "$TMPD/f.$kid.pb.gz" ]; then
	$LS route "$TMPD/f.$kid.pb.gz" >"$TMPD/got.f" 2>&1
	if grep -qx '/kid 101 30300 0 0' "$TMPD/got.f"; then
		pass otel_review.fork_reread
	else
		fail otel_review.fork_reread "child's route labels: $(tr '\n' ' ' <"$TMPD/got.f")"
	fi
else
	fail otel_review.fork_reread "exit $rc: $(tail -2 "$TMPD/out.f" | tr '\n' ' ')"
fi
exit $FAILED
