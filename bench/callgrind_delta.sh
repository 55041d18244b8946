#!/bin/sh
# callgrind_delta.sh: instructions per steady-state delta call, the
# load-independent figures of BENCHMARKS.md "## Delta", on the pairs of
# bench/delta_pairs.sh (real gzip'd pairs and the synthetic one). For each
# pair and mode (inputs in memory: heapprof_delta_compute; --read:
# heapprof_delta_compute_read from the file), the difference between two
# bench_delta runs under callgrind (-n 3 minus -n 1: 4 calls; go-real and
# huge-10MB -n 2 minus -n 1: 2 calls), divided by the calls.
# usage: sh bench/callgrind_delta.sh [bench_delta binary] [pair names...]
#   (repo root, after make bench); prints "| name | memory | read |" rows.
REPO=$(cd "$(dirname "$0")/.." && pwd)
B=${1:-$REPO/build/bench/bench_delta}
[ $# -gt 0 ] && shift
ONLY="$*"
. "$REPO/bench/delta_pairs.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
total() { # args of bench_delta: total instructions of the run
	valgrind --tool=callgrind --callgrind-out-file="$T/cg" "$B" "$@" \
		>/dev/null 2>&1
	callgrind_annotate "$T/cg" 2>/dev/null |
		awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
per_call() { # flags old new big small
	a=$(total $1 -n "$4" "$2" "$3")
	b=$(total $1 -n "$5" "$2" "$3")
	awk -v a="$a" -v b="$b" -v c="$((2 * ($4 - $5)))" \
		'BEGIN { printf "%.3f M", (a - b) / c / 1e6 }'
}
echo "| pair | instructions/call, memory | read mode | read / memory |"
echo "|---|---|---|---|"
echo "$PAIRS" | while read -r name old new; do
	case " $ONLY " in "  ") ;; *" $name "*) ;; *) continue ;; esac
	big=3
	case $name in go-real | huge-10MB) big=2 ;; esac
	m=$(per_call "" "$old" "$new" $big 1)
	r=$(per_call --read "$old" "$new" $big 1)
	echo "| $name | $m | $r | $(echo "$m $r" | awk '{printf "%.2f", $3 / $1}') |"
done
