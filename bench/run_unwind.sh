#!/bin/sh
# run_unwind.sh: ns per capture of a 30-frame stack for each unwinder in
# one run (bench_unwind: dwarf, fp, libunwind alternate within each
# round), then instructions per capture from callgrind (load-independent:
# two runs of different lengths, the difference divided by the extra
# captures). Usage: sh bench/run_unwind.sh [CAPTURES] [ROUNDS]
set -e
B=$(dirname "$0")/../build/bench/bench_unwind
[ -x "$B" ] || { echo "build it first: make tests-build" >&2; exit 1; }
"$B" "${1:-200000}" "${2:-9}"
command -v valgrind >/dev/null || exit 0
T=$(mktemp -d)
for u in dwarf fp libunwind; do
	for n in 10000 30000; do
		BENCH_UNWIND_ONLY=$u valgrind --tool=callgrind \
			--callgrind-out-file="$T/cg.$u.$n" "$B" $n 1 >/dev/null 2>&1
	done
	a=$(callgrind_annotate "$T/cg.$u.10000" | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
	b=$(callgrind_annotate "$T/cg.$u.30000" | awk '/PROGRAM TOTALS/ {gsub(",","",$1); print $1}')
	echo "$u: $(( (b - a) / 20000 )) instructions per capture (callgrind)"
done
rm -rf "$T"
