#!/bin/sh
# labels_review.sh: label sets at their edges (issue 33 review), with
# prog_labeledge at rate 1:
#  - a label value or key that is not UTF-8 (a request path's raw bytes)
#    is written as valid UTF-8 (each bad run becomes U+FFFD): profile.proto
#    is proto3, whose decoders reject a whole profile holding one invalid
#    string (go tool pprof's does not check, which hid it); valid UTF-8
#    ("/café") is kept byte for byte;
#  - heapprof top --tagfocus agrees with go tool pprof where pprof reads
#    the value as a number range (shard=3: numeric labels only, so no
#    string label matches), and refuses a range on numeric labels (pprof
#    compares them in units);
#  - a 4,000-byte value arrives whole, a 5,000-byte one is refused
#    (-EINVAL); the set a thread had at fork() is its child's; a signal
#    handler allocates under its thread's set and under one it sets.
. "$(dirname "$0")/lib.sh"
need_go labels_review
need_lib labels_review
oracle_need_heapprof labels_review
oracle_tmpdir
LS="python3 $REPO/tests/integration/labelsum.py"
run() { # MODE: the profile(s) in $TMPD/MODE.PID.pb.gz, output in $TMPD/MODE.out
	HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/$1.%p.pb.gz" LD_PRELOAD=$LIB \
		"$PROG/prog_labeledge" "$1" >"$TMPD/$1.out" 2>"$TMPD/$1.err"
}

run utf8
f=$(ls "$TMPD"/utf8.*.pb.gz 2>/dev/null | head -1)
if [ -n "$f" ] && python3 "$REPO/tests/integration/pbstrings.py" "$f" >"$TMPD/str" 2>&1; then
	pass review.utf8_valid
else
	fail review.utf8_valid "$(cat "$TMPD/str" "$TMPD/utf8.err" | head -4)"
fi
$LS route "$f" >"$TMPD/routes" 2>&1
{ echo "- 2 2000 0 0"; printf '%s 1 1000 0 0\n' "/bad$(printf '\357\277\275')" "/caf$(printf '\303\251')"; } >"$TMPD/want"
same_output review.utf8_values "$TMPD/want" "$TMPD/routes"

for t in "shard=3" "shard=^3\$" "shard=1:5" "shard=:3" "shard=3," "route=/caf"; do
	go tool pprof -top -tagfocus="$t" -sample_index=alloc_space "$f" >"$TMPD/g.txt" 2>/dev/null
	"$HEAPPROF" top --tagfocus "$t" --sample-index alloc_space "$f" >"$TMPD/h.txt" 2>/dev/null
	same_output "review.tagfocus.$(echo "$t" | tr -c 'a-z0-9\n' _)" "$TMPD/g.txt" "$TMPD/h.txt"
done
# a range on a numeric label: pprof scales units, heapprof says it does not
"$HEAPPROF" top --tagfocus "bytes=1000B" "$f" >/dev/null 2>"$TMPD/num.err"
rc=$?
if [ $rc = 2 ] && grep -q "not supported" "$TMPD/num.err"; then pass review.tagfocus_numeric_refused; else
	fail review.tagfocus_numeric_refused "exit $rc: $(head -2 "$TMPD/num.err")"; fi

run long
f=$(ls "$TMPD"/long.*.pb.gz 2>/dev/null | head -1)
got=$($LS big "$f" 2>/dev/null | awk '{print length($1), $2, $3}')
if grep -qx "LONG -22" "$TMPD/long.out" && [ "$got" = "4000 1 1000" ]; then
	pass review.long_value
else
	fail review.long_value "$(cat "$TMPD/long.out") / $got"
fi

run fork
ok=0
for f in "$TMPD"/fork.*.pb.gz; do
	[ "$($LS case "$f" 2>/dev/null | tr '\n' ' ')" = "child_made 1 1000 0 0 inherited 1 1000 0 0 " ] && ok=1
done
if grep -qx OK "$TMPD/fork.out" && [ $ok = 1 ]; then pass review.fork; else
	fail review.fork "no child profile with the inherited and the child's sets"; fi

run signal
f=$(ls "$TMPD"/signal.*.pb.gz 2>/dev/null | head -1)
if [ "$($LS case "$f" 2>/dev/null | tr '\n' ' ')" = "in_handler 1 1000 0 0 signal 1 1000 0 0 " ]; then
	pass review.signal_handler
else
	fail review.signal_handler "$($LS case "$f" 2>&1 | tr '\n' ' ')"
fi
exit $FAILED
