#!/bin/sh
# delta.sh: oracle test of `heapprof delta` against `go tool pprof -proto
# -base OLD NEW` on the corpus delta pairs (fastdelta before/after and
# stress-failure pairs with duplicate samples, big-heap against itself, the
# Go delta pair). For every sample of NEW, the subtracted types must equal
# pprof's delta and the other types NEW's values (delta_cmp.py); the output
# must also pass pprof's own parser and our validator.
. "$(dirname "$0")/lib.sh"
oracle_need_corpus delta
oracle_need_heapprof delta
if ! command -v go >/dev/null 2>&1 || ! command -v python3 >/dev/null 2>&1; then
	skip_tool delta "go or python3" "golang-go python3"
	exit 0
fi
oracle_need_go delta
oracle_tmpdir
export GOCACHE=$REPO/build/gocache HOME=${HOME:-$TMPD}
mkdir -p "$GOCACHE"
raw() { go tool pprof -raw -symbolize=none "$1" 2>"$TMPD/pprof.err"; }
TYPES=alloc_objects,alloc_space,contentions,delay

check_pair() { # name old new
	name=$1 old=$2 new=$3
	if [ ! -f "$old" ] || [ ! -f "$new" ]; then
		skip "delta_$name" "missing $old or $new"
		return
	fi
	if ! "$HEAPPROF" delta "$old" "$new" -o "$TMPD/ours.pb.gz" 2>"$TMPD/err"; then
		fail "delta_$name" "heapprof delta failed: $(cat "$TMPD/err")"
		return
	fi
	if ! go tool pprof -proto -base "$old" "$new" >"$TMPD/pprof.pb.gz" 2>"$TMPD/err"; then
		fail "delta_$name" "go tool pprof -base failed: $(head -3 "$TMPD/err")"
		return
	fi
	if ! raw "$TMPD/ours.pb.gz" >"$TMPD/ours.raw"; then
		fail "delta_$name" "pprof cannot read our output: $(head -3 "$TMPD/pprof.err")"
		return
	fi
	raw "$TMPD/pprof.pb.gz" >"$TMPD/pprof.raw"
	raw "$new" >"$TMPD/new.raw"
	if python3 "$REPO/tests/oracle/delta_cmp.py" "$TMPD/new.raw" "$TMPD/pprof.raw" \
		"$TMPD/ours.raw" "$TYPES" 2>"$TMPD/cmp"; then
		pass "delta_$name"
	else
		fail "delta_$name" "$(cat "$TMPD/cmp")"
	fi
}

FD=$CORPUS/fastdelta
check_pair heap "$FD/heap.before.pprof" "$FD/heap.after.pprof"
check_pair block "$FD/block.before.pprof" "$FD/block.after.pprof"
check_pair stress_failure "$FD/stress-failure.before.pprof" "$FD/stress-failure.after.pprof"
check_pair stress_failure_2 "$FD/stress-failure.2.before.pprof" "$FD/stress-failure.2.after.pprof"
check_pair stress_failure_3 "$FD/stress-failure.3.before.pprof" "$FD/stress-failure.3.after.pprof"
check_pair big_heap_self "$FD/big-heap.pprof" "$FD/big-heap.pprof"
check_pair go_heap "$CORPUS/go/go_heap_delta_1.pb.gz" "$CORPUS/go/go_heap_delta_2.pb.gz"
# Reversed order: counters go down, deltas are negative.
check_pair go_heap_reversed "$CORPUS/go/go_heap_delta_2.pb.gz" "$CORPUS/go/go_heap_delta_1.pb.gz"

# Duration = time between the two profiles (5960465000 ns, fastdelta's
# expected value, for the shared corpus's pair).
tn() { "$PPROFCHECK" dump "$1" | sed -n 's/^time_nanos: //p'; }
want=$(($(tn "$FD/heap.after.pprof") - $(tn "$FD/heap.before.pprof")))
if "$HEAPPROF" delta --raw "$FD/heap.before.pprof" "$FD/heap.after.pprof" -o "$TMPD/d.pb" 2>/dev/null &&
	[ "$want" -gt 0 ] && "$PPROFCHECK" dump "$TMPD/d.pb" | grep -qx "duration_nanos: $want"; then
	pass delta_duration
else
	fail delta_duration "want duration_nanos $want: $("$PPROFCHECK" dump "$TMPD/d.pb" 2>&1 | grep duration)"
fi
exit 0
