#!/bin/sh
# exitdump.sh: what one cc1 exit dump costs (issue 15): page faults, system
# calls and instructions, for one or more builds of the library, in
# alternating rounds:
#
#   sh bench/exitdump.sh [-n RUNS] [-r RATE] [-f FILE] LIB...
#
# cc1 is gcc's compiler proper, run directly (`gcc -### -O2 -c FILE`
# gives its command line) on FILE (default src/collect/unwind.c, 697
# lines, with this tree's -std, -D and -I flags), under LD_PRELOAD=LIB at HEAPPROF_RATE=RATE (default: the
# library's default; 1 samples every allocation, which makes the runs
# repeatable). For each LIB:
#   faults    `perf stat -r RUNS -e page-faults` with HEAPPROF_EXIT=0 and
#             without: the difference is the exit dump's
#   syscalls  `strace -c -f`, HEAPPROF_EXIT=0 and without (one run each)
#   Ir        callgrind, `--toggle-collect=heapprof__serve_exit`: the
#             dump's instructions (one run)
#   dump faults  the faults between heapprof__serve_exit's entry and
#             return (gdb, bench/dumpfaults.py), RUNS runs: each, median
#             (gdb, if installed)
# Sampling is random at the default rate: a single run's dump varies.
set -u
cd "$(dirname "$0")/.." || exit 2
RUNS=10
RATE=""
FILE=src/collect/unwind.c
while getopts n:r:f: opt; do
	case $opt in
	n) RUNS=$OPTARG ;;
	r) RATE=$OPTARG ;;
	f) FILE=$OPTARG ;;
	*) sed -n '2,23p' "$0" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || { sed -n '2,23p' "$0" >&2; exit 2; }
D=$(mktemp -d /tmp/heapprof-exitdump.XXXXXX)
CC1=$(gcc -### -O2 -std=c11 -D_GNU_SOURCE -Iinclude -Isrc/common \
	-Isrc/pprof -Isrc/symbols -c "$FILE" -o "$D/x.o" 2>&1 |
	grep '/cc1 ' | sed "s/^ *//; s| -o [^ ]*\$| -o $D/x.s|")
[ -n "$CC1" ] || { echo "no cc1 command line" >&2; exit 1; }
# gcc -### quotes some arguments: eval takes them apart. The tool (perf,
# strace, valgrind) runs outside the profiler: env sets LD_PRELOAD for
# cc1 only (env's own exec is in every configuration alike).
run() { # LIB EXIT TOOL...
	_l=$1 _x=$2; shift 2
	eval "$* env LD_PRELOAD=$_l HEAPPROF_OUT=$D/p.%p.pb.gz HEAPPROF_EXIT=$_x ${RATE:+HEAPPROF_RATE=$RATE} $CC1" >/dev/null 2>"$D/err"
	rm -f "$D"/p.*.pb.gz
}
echo "cc1: $CC1"
for l in "$@"; do
	for x in 0 1; do
		run "$l" $x perf stat -r "$RUNS" -x, -o "$D/pf" -e page-faults
		f=$(grep page-faults "$D/pf" | cut -d, -f1)
		run "$l" $x strace -c -f -o "$D/sc"
		s=$(awk '$NF == "total" { print (NF == 6 ? $(NF-2) : $(NF-1)) }' "$D/sc")
		echo "$l EXIT=$x faults=$f syscalls=$s"
	done
	run "$l" 1 valgrind --tool=callgrind --trace-children=yes \
		--toggle-collect=heapprof__serve_exit \
		--callgrind-out-file="$D/cg.%p.out"
	echo "$l dump Ir=$(cat "$D"/cg.*.out | sed -n 's/^summary: //p' | sort -n | tail -1)"
	rm -f "$D"/cg.*.out
	command -v gdb >/dev/null 2>&1 || continue
	i=0 all=""
	while [ $i -lt "$RUNS" ]; do
		i=$((i + 1))
		m=$(eval "env HEAPPROF_OUT=$D/p.%p.pb.gz ${RATE:+HEAPPROF_RATE=$RATE} gdb -q -batch -ex 'set environment LD_PRELOAD $l' -x bench/dumpfaults.py --args $CC1" 2>/dev/null | sed -n 's/^DUMPFAULTS minor=\([0-9]*\).*/\1/p')
		rm -f "$D"/p.*.pb.gz
		all="$all $m"
	done
	med=$(echo $all | tr ' ' '\n' | sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
	echo "$l dump faults (gdb):$all; median $med"
done
rm -rf "$D"
