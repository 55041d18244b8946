#!/bin/sh
# callgrind.sh: instructions per malloc+free pair on the fast path, counted by
# valgrind's callgrind (which, unlike memcheck, does not replace malloc, so an
# LD_PRELOAD interposer stays in the measured path: checked by the shim row
# being ~10 instructions above none and by its functions in the profile).
#
#   sh bench/callgrind.sh [-n PAIRS] [-c CONFIGS] [-o DIR] [-r]
#
# Runs `mbench -m tight` (malloc(64) + free, no live set) with PAIRS and
# 2*PAIRS pairs (default 1 M) and reports (Ir(2N) - Ir(N)) / N, which
# cancels start-up and exit costs. CONFIGS: comma list of none shim heapprof
# heapprof-r1 jemalloc jemalloc-prof (default none,shim,heapprof,jemalloc,
# jemalloc-prof; unavailable ones are skipped with a note). At the default
# rate a 64-byte block is sampled about once per 8,192 pairs, so the
# heapprof figure includes the amortized sampled path.
#
# -r adds total instruction counts of the real programs, smaller than in
# run_capture.sh so valgrind finishes in minutes: the python churn with 10
# rounds and cc1 -O2 on a 100 KB generated file. Instruction counts do not
# depend on the machine's load, unlike times on a shared machine (they miss
# cache effects, which only the timed runs show).
set -u
cd "$(dirname "$0")/.." || exit 2
N=1000000
CONFIGS="none,shim,heapprof,jemalloc,jemalloc-prof"
DIR=""
REAL=0
while getopts n:c:o:r opt; do
	case $opt in
	n) N=$OPTARG ;;
	c) CONFIGS=$OPTARG ;;
	o) DIR=$OPTARG ;;
	r) REAL=1 ;;
	*) sed -n '2,22p' "$0" >&2; exit 2 ;;
	esac
done
[ -n "$DIR" ] || DIR=$(mktemp -d /tmp/heapprof-callgrind.XXXXXX)
mkdir -p "$DIR"
command -v valgrind >/dev/null || { echo "valgrind not installed (apt-get install valgrind)" >&2; exit 1; }
make -s build/bench/mbench build/bench/libshim.so >&2 || exit 1
HEAPPROF_LIB=${HEAPPROF_LIB:-$(pwd)/build/libheapprof.so}
JEMALLOC=$(ldconfig -p 2>/dev/null | awk '/libjemalloc\.so\.2 .*x86-64/ {print $NF; exit}')
hp_ok=0
nm -D --defined-only "$HEAPPROF_LIB" 2>/dev/null | grep -qw malloc && hp_ok=1

ir() { # config pairs [workload] -> total Ir
	c=$1 n=$2 w=${3:-tight}
	pre="" envs=""
	case $c in
	none) ;;
	shim) pre=$(pwd)/build/bench/libshim.so ;;
	heapprof) pre=$HEAPPROF_LIB; envs="HEAPPROF_OUT=$DIR/prof.%p.pb.gz" ;;
	heapprof-r1) pre=$HEAPPROF_LIB; envs="HEAPPROF_OUT=$DIR/prof.%p.pb.gz HEAPPROF_RATE=1" ;;
	jemalloc) pre=$JEMALLOC ;;
	jemalloc-prof) pre=$JEMALLOC; envs="MALLOC_CONF=prof:true,lg_prof_sample:19" ;;
	esac
	[ -n "$pre" ] && envs="LD_PRELOAD=$pre $envs"
	case $w in
	tight) out=$DIR/callgrind.$c.$n; cmd="build/bench/mbench -m tight -n $n" ;;
	python) out=$DIR/callgrind.python.$c
		cmd="${PYTHON:-/usr/bin/python3} bench/churn.py 10"
		envs="PYTHONMALLOC=malloc PYTHONHASHSEED=0 $envs" ;;
	cc1) out=$DIR/callgrind.cc1.$c; cmd="$(gcc -print-prog-name=cc1) -quiet -O2 $DIR/gen100.c -o $DIR/gen100.$c.s" ;;
	esac
	# shellcheck disable=SC2086
	env -u LD_PRELOAD -u MALLOC_CONF -u HEAPPROF_RATE $envs valgrind --tool=callgrind \
		--callgrind-out-file="$out" $cmd >"$out.log" 2>&1 ||
		{ echo "note: $c: valgrind run failed: $(tail -c 300 "$out.log" | tr '\n' ' ')" >&2; echo -; return; }
	awk '/^summary:/ {print $2}' "$out"
}

echo "| configuration | Ir, $N pairs | Ir, $((2 * N)) pairs | instructions per pair | vs none |"
echo "|---|---|---|---|---|"
base=""
for c in $(echo "$CONFIGS" | tr , ' '); do
	case $c in
	heapprof|heapprof-r1) [ $hp_ok = 1 ] || { echo "note: skipping $c: $HEAPPROF_LIB does not define malloc" >&2; continue; } ;;
	jemalloc|jemalloc-prof) [ -n "$JEMALLOC" ] || { echo "note: skipping $c: libjemalloc.so.2 not found" >&2; continue; } ;;
	esac
	a=$(ir "$c" "$N")
	b=$(ir "$c" $((2 * N)))
	if [ "$a" = - ] || [ "$b" = - ]; then
		echo "| $c | failed | | | |"
		continue
	fi
	per=$(awk -v a="$a" -v b="$b" -v n="$N" 'BEGIN{printf "%.2f", (b - a) / n}')
	[ -n "$base" ] || base=$per
	d=$(awk -v p="$per" -v b="$base" 'BEGIN{printf "%+.2f", p - b}')
	echo "| $c | $a | $b | $per | $d |"
done
echo
echo "Per-function profiles: callgrind_annotate $DIR/callgrind.CONFIG.$((2 * N))"
[ $REAL = 1 ] || exit 0

${PYTHON:-/usr/bin/python3} bench/gen_c.py "$DIR/gen100.c" --kb 100 || exit 1
echo
echo "| configuration | python churn (10 rounds): Ir | vs none | cc1 -O2, 100 KB: Ir | vs none |"
echo "|---|---|---|---|---|"
pb="" cb=""
for c in $(echo "$CONFIGS" | tr , ' '); do
	case $c in
	heapprof|heapprof-r1) [ $hp_ok = 1 ] || continue ;;
	jemalloc|jemalloc-prof) [ -n "$JEMALLOC" ] || continue ;;
	esac
	p=$(ir "$c" 0 python)
	k=$(ir "$c" 0 cc1)
	[ -n "$pb" ] || pb=$p
	[ -n "$cb" ] || cb=$k
	pr=$(awk -v a="$p" -v b="$pb" 'BEGIN{ if (a == "-" || b == "-") print "-"; else printf "%.4f", a / b}')
	kr=$(awk -v a="$k" -v b="$cb" 'BEGIN{ if (a == "-" || b == "-") print "-"; else printf "%.4f", a / b}')
	echo "| $c | $p | $pr | $k | $kr |"
done
if [ -f "$DIR/gen100.none.s" ]; then
	for f in "$DIR"/gen100.*.s; do
		cmp -s "$f" "$DIR/gen100.none.s" || echo "note: $f differs from cc1's output without a profiler" >&2
	done
fi
