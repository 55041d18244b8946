#!/bin/sh
# usdt_review.sh: the otel_memory probes as a live-heap agent pairs them
# (issue 33 review; design doc 00003: alloc(user, size, weight) on a
# sampled allocation, free(ptr) on the free of a sampled pointer).
# bpftrace keeps the set of pointers announced by alloc: every free must
# name one of them (never an unsampled pointer), no pointer is announced
# twice without a free between, and once prog_usdtre has freed everything
# (malloc, calloc, aligned_alloc(64), each realloc'd: grown, shrunk, or
# to 0; blocks past 512 KiB resized in place or moved) the set is empty. At rate 1 every call is a sample:
# the allocs are the program's allocating calls and the profile's
# alloc_objects; at rate 4096 some are.
. "$(dirname "$0")/lib.sh"
need_go usdt_review
need_lib usdt_review
oracle_tmpdir
if ! command -v bpftrace >/dev/null 2>&1; then
	skip_tool usdt_review bpftrace bpftrace
	exit 0
fi
# run RATE: prog_usdtre under bpftrace; $TMPD/bt.RATE, out.RATE, u.RATE.pb.gz
run() {
	rate=$1
	rm -f "$TMPD/in" && mkfifo "$TMPD/in"
	HEAPPROF_RATE=$rate HEAPPROF_OUT=$TMPD/u.$rate.pb.gz LD_PRELOAD=$LIB \
		"$PROG/prog_usdtre" <"$TMPD/in" >"$TMPD/out.$rate" 2>&1 &
	ppid=$!
	exec 3>"$TMPD/in"
	cat >"$TMPD/u.bt" <<BT
BEGIN { printf("ATTACHED\\n"); }
usdt:$LIB:otel_memory:alloc {
	if (@live[arg0] == 1) { @dup = count(); }
	@live[arg0] = 1; @a = count();
}
usdt:$LIB:otel_memory:free {
	if (@live[arg0] != 1) { @stray = count(); }
	delete(@live[arg0]); @f = count();
}
uprobe:$PROG/prog_usdtre:done_marker { exit(); }
BT
	bpftrace -p "$ppid" "$TMPD/u.bt" >"$TMPD/bt.$rate" 2>&1 &
	bpid=$!
	i=0
	while ! grep -qs "^ATTACHED" "$TMPD/bt.$rate" && kill -0 $bpid 2>/dev/null &&
		[ $i -lt 600 ]; do
		sleep 0.1; i=$((i + 1))
	done
	echo >&3
	exec 3>&-
	wait $ppid
	wait $bpid
}
# (bpftrace prints a count() map never incremented as 0, or not at all)
val() { v=$(sed -n "s/^@$1: //p" "$TMPD/bt.$2"); echo "${v:-0}"; }
check() { # NAME RATE: the pairing
	a=$(val a "$2") f=$(val f "$2")
	live=$(grep -c '^@live\[' "$TMPD/bt.$2")
	if [ -n "$a" ] && [ "$a" -gt 0 ] && [ "$a" = "$f" ] && [ "$live" = 0 ] &&
		[ "$(val stray "$2")" -eq 0 ] 2>/dev/null && [ "$(val dup "$2")" -eq 0 ] 2>/dev/null; then
		pass "$1"
	else
		fail "$1" "allocs '$a' frees '$f' left $live stray '$(val stray "$2")' dup '$(val dup "$2")' $(grep -i error "$TMPD/bt.$2" | head -2)"
	fi
}

run 1
check usdt_review.pairs_rate1 1
calls=$(sed -n 's/^TRUTH //p' "$TMPD/out.1")
ao=$(python3 "$REPO/tests/integration/labelsum.py" none "$TMPD/u.1.pb.gz" | awk '{print $2}')
if [ -n "$calls" ] && [ "$(val a 1)" = "$calls" ] && [ "$ao" = "$calls" ]; then
	pass usdt_review.rate1_every_call
else
	fail usdt_review.rate1_every_call "calls $calls, bpftrace allocs $(val a 1), profile alloc_objects $ao"
fi
run 4096
check usdt_review.pairs_sampled 4096
exit $FAILED
