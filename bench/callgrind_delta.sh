#!/bin/sh
# callgrind_delta.sh: instructions per steady-state delta call, the
# load-independent figures of BENCHMARKS.md "## Delta". For each input, the
# difference between two bench_delta runs under callgrind (big-heap and the
# stress-failure pairs: -n 6 minus -n 2, over the 8 calls between; huge:
# -n 2 minus -n 1, over 2 calls).
# usage: sh bench/callgrind_delta.sh [bench_delta binary]   (repo root, after make bench)
# BENCH_FLAGS=--read: the inputs read from their files (read mode).
REPO=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$REPO/build/bench/bench_delta}
FD=${HEAPPROF_CORPUS:-$REPO/../shared/corpus}/fastdelta
H=$REPO/build/benchdata
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
[ -f "$H/huge.after.pprof" ] || { mkdir -p "$H" &&
	"$REPO/build/bench/bench_delta" --gen 32 "$FD/big-heap.pprof" \
		"$H/huge.before.pprof" "$H/huge.after.pprof"; }
total() { # args of bench_delta: total instructions of the run
	valgrind --tool=callgrind --callgrind-out-file="$T/cg" "$B" $BENCH_FLAGS "$@" \
		>/dev/null 2>&1
	callgrind_annotate "$T/cg" 2>/dev/null |
		awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
per_call() { # name old new big calls
	a=$(total -n "$4" "$2" "$3")
	b=$(total -n "$5" "$2" "$3")
	echo "$1 $(((a - b) / (2 * ($4 - $5))))"
}
per_call big-heap "$FD/big-heap.pprof" "$FD/big-heap.pprof" 6 2
per_call stress-failure "$FD/stress-failure.before.pprof" "$FD/stress-failure.after.pprof" 6 2
per_call stress-failure.2 "$FD/stress-failure.2.before.pprof" "$FD/stress-failure.2.after.pprof" 6 2
per_call huge-10MB "$H/huge.before.pprof" "$H/huge.after.pprof" 2 1
