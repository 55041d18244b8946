#!/bin/sh
# run_capture.sh: the capture-overhead benchmark (issue 2). Runs each workload
# under each profiler configuration, alternating (round-robin, ROUNDS rounds;
# each round starts at a different configuration), and prints a markdown
# table of medians and ratios against "none" measured in the same run.
#
#   sh bench/run_capture.sh [-n ROUNDS] [-s SLOW_ROUNDS] [-w WORKLOADS] [-c CONFIGS] [-o DIR]
#
#   -n ROUNDS       rounds (default 5)
#   -s SLOW_ROUNDS  rounds for the slow configurations heapprof-r1 and
#                   heaptrack (default: ROUNDS)
#   -w WORKLOADS    comma list of: mbench1 mbench2 python cc1 (default: all)
#   -c CONFIGS      comma list of: none shim heapprof heapprof-r1 jemalloc
#                   jemalloc-prof heaptrack heaptrack-raw (default: all but
#                   heaptrack-raw that are available). heaptrack-raw is
#                   `heaptrack -r`: record only, interpretation left for later
#                   (heaptrack 1.4's interpreter dies with std::bad_alloc on
#                   cc1's data, so full heaptrack fails on cc1).
#   -o DIR          where raw results go (default: a new /tmp/heapprof-bench.*)
#
# Environment: HEAPPROF_LIB (default build/libheapprof.so), PYTHON (default
# /usr/bin/python3, Debian's; not a pyenv shim), MBENCH_PAIRS (default 10 M),
# HEAPPROF_FORCE=1 to run the heapprof rows even if the smoke test fails,
# HEAPTRACK_CC1=1 to run full heaptrack on cc1 (it needs ~19 GB and fails).
#
# Measured per run (bench/timeit.c: fork, exec, wait4): wall seconds,
# user+sys CPU seconds of the command and the descendants it waited for, peak
# RSS of the largest process. Each run's output is checked against the
# "none" run (checksum lines; cc1's assembly by md5): a mismatch is flagged.
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)

ROUNDS=5
SLOW_ROUNDS=
WORKLOADS="mbench1,mbench2,python,cc1"
CONFIGS=""
DIR=""
while getopts n:s:w:c:o: opt; do
	case $opt in
	n) ROUNDS=$OPTARG ;;
	s) SLOW_ROUNDS=$OPTARG ;;
	w) WORKLOADS=$OPTARG ;;
	c) CONFIGS=$OPTARG ;;
	o) DIR=$OPTARG ;;
	*) sed -n '2,27p' "$0" >&2; exit 2 ;;
	esac
done
[ -n "$SLOW_ROUNDS" ] || SLOW_ROUNDS=$ROUNDS
[ -n "$DIR" ] || DIR=$(mktemp -d /tmp/heapprof-bench.XXXXXX)
mkdir -p "$DIR/out" "$DIR/prof"
RAW=$DIR/raw.tsv
NOTES=$DIR/notes.txt
: >"$NOTES"
note() { echo "note: $*" | tee -a "$NOTES" >&2; }

HEAPPROF_LIB=${HEAPPROF_LIB:-$ROOT/build/libheapprof.so}
PYTHON=${PYTHON:-/usr/bin/python3}
MBENCH_PAIRS=${MBENCH_PAIRS:-10000000}
SHIM=$ROOT/build/bench/libshim.so
MBENCH=$ROOT/build/bench/mbench
TIMEIT=$ROOT/build/bench/timeit

# Build only the bench pieces (not `make bench`, which also rebuilds the
# library other people are editing).
make -s build/bench/mbench build/bench/timeit build/bench/libshim.so >&2 || { echo "build failed" >&2; exit 1; }

# Run from copies in $DIR/bin: another `make` or `make clean` in the same
# checkout during the run must not change or delete what is being measured.
mkdir -p "$DIR/bin"
cp build/bench/mbench build/bench/timeit build/bench/libshim.so "$DIR/bin/" || exit 1
MBENCH=$DIR/bin/mbench TIMEIT=$DIR/bin/timeit SHIM=$DIR/bin/libshim.so
if [ -f "$HEAPPROF_LIB" ]; then
	cp "$HEAPPROF_LIB" "$DIR/bin/libheapprof.so" && HEAPPROF_LIB=$DIR/bin/libheapprof.so
	echo "heapprof library: sha256 $(sha256sum <"$HEAPPROF_LIB" | cut -c1-16), checkout $(git log -1 --format='%h %cd' --date=iso 2>/dev/null)" >>"$NOTES"
fi

# ---- what is available
JEMALLOC=$(ldconfig -p 2>/dev/null | awk '/libjemalloc\.so\.2 .*x86-64/ {print $NF; exit}')
[ -n "$JEMALLOC" ] || for f in /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 /lib/x86_64-linux-gnu/libjemalloc.so.2; do
	[ -f "$f" ] && JEMALLOC=$f && break
done
HEAPTRACK=$(command -v heaptrack || true)
CC1=$(gcc -print-prog-name=cc1 2>/dev/null)

heapprof_ok=0
if [ -f "$HEAPPROF_LIB" ] && nm -D --defined-only "$HEAPPROF_LIB" 2>/dev/null | grep -qw malloc; then
	rm -f "$DIR/smoke.pb.gz"
	HEAPPROF_OUT=$DIR/smoke.pb.gz LD_PRELOAD=$HEAPPROF_LIB "$PYTHON" -c pass >"$DIR/smoke.log" 2>&1
	if [ -s "$DIR/smoke.pb.gz" ]; then
		heapprof_ok=1
	else
		note "heapprof: preloading $HEAPPROF_LIB into '$PYTHON -c pass' wrote no profile ($(head -c 300 "$DIR/smoke.log"))"
	fi
else
	note "heapprof: $HEAPPROF_LIB missing or does not define malloc"
fi
[ "${HEAPPROF_FORCE:-0}" = 1 ] && heapprof_ok=1

available() {
	case $1 in
	none|shim) return 0 ;;
	heapprof|heapprof-r1) [ $heapprof_ok = 1 ] ;;
	jemalloc|jemalloc-prof) [ -n "$JEMALLOC" ] ;;
	heaptrack|heaptrack-raw) [ -n "$HEAPTRACK" ] ;;
	*) echo "unknown configuration $1" >&2; exit 2 ;;
	esac
}
if [ -z "$CONFIGS" ]; then
	CONFIGS="none,shim,heapprof,heapprof-r1,jemalloc,jemalloc-prof,heaptrack"
fi
cfgs=""
for c in $(echo "$CONFIGS" | tr , ' '); do
	if available "$c"; then cfgs="$cfgs $c"; else note "skipping configuration $c: tool not available"; fi
done
wls=$(echo "$WORKLOADS" | tr , ' ')

# ---- inputs
if echo " $wls " | grep -q ' cc1 '; then
	if [ -z "$CC1" ] || [ ! -x "$CC1" ]; then
		note "skipping cc1: gcc's cc1 not found"; wls=$(echo "$wls" | sed 's/cc1//')
	else
		"$PYTHON" bench/gen_c.py "$DIR/gen.c" || exit 1
	fi
fi

# ---- one run: workload, config, round
# Prints the command's check line to $DIR/out/W.C.R.check.
run_one() {
	w=$1 c=$2 r=$3
	tag=$w.$c.$r
	outf=$DIR/out/$tag.out
	tf=$DIR/out/$tag.time
	pre=""
	envs=""
	wrap=""
	case $c in
	none) ;;
	shim) pre=$SHIM ;;
	heapprof) pre=$HEAPPROF_LIB; envs="HEAPPROF_OUT=$DIR/prof/$tag.%p.pb.gz" ;;
	heapprof-r1) pre=$HEAPPROF_LIB; envs="HEAPPROF_OUT=$DIR/prof/$tag.%p.pb.gz HEAPPROF_RATE=1" ;;
	jemalloc) pre=$JEMALLOC ;;
	jemalloc-prof) pre=$JEMALLOC; envs="MALLOC_CONF=prof:true,lg_prof_sample:19" ;;
	heaptrack) wrap="$HEAPTRACK -o $DIR/prof/$tag.ht" ;;
	heaptrack-raw) wrap="$HEAPTRACK -r -o $DIR/prof/$tag.ht" ;;
	esac
	[ -n "$pre" ] && envs="LD_PRELOAD=$pre $envs"
	case $w in
	mbench1) cmd="$MBENCH -t 1 -n $MBENCH_PAIRS" ;;
	mbench2) cmd="$MBENCH -t 2 -n $MBENCH_PAIRS" ;;
	python) cmd="$PYTHON $ROOT/bench/churn.py"; envs="PYTHONMALLOC=malloc PYTHONHASHSEED=0 $envs" ;;
	cc1) cmd="$CC1 -quiet -O2 $DIR/gen.c -o $DIR/out/$tag.s" ;;
	esac
	# shellcheck disable=SC2086
	"$TIMEIT" "$tf" env -u LD_PRELOAD -u MALLOC_CONF -u HEAPPROF_RATE -u HEAPPROF_OUT \
		$envs $wrap $cmd >"$outf" 2>&1
	rc=$?
	case $w in
	cc1) check=$(md5sum <"$DIR/out/$tag.s" | cut -c1-32); rm -f "$DIR/out/$tag.s" ;;
	*) check=$(grep -E '^(checksum|churn) ' "$outf" | tr ' ' _) ;;
	esac
	inner=$(sed -n 's/.*: \([0-9.]*\) ns per pair/\1/p' "$outf")
	[ -n "$inner" ] || inner=-
	[ -n "$check" ] || check=-
	nprof=$(ls "$DIR/prof" | grep -c "^$tag\." )
	rm -f "$DIR/prof/$tag".*
	read -r wall user sys rss st <"$tf" || { wall=- user=0 sys=0 rss=- st=$rc; }
	cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.6f", u+s}')
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$w" "$c" "$r" "$wall" "$cpu" "$rss" "$st" "$check" "$inner" "$nprof" >>"$RAW"
	if [ "$st" != 0 ]; then
		note "$w under $c (round $r) exited with status $st; output: $(tail -c 400 "$outf" | tr '\n' ' ')"
	else
		rm -f "$outf"
	fi
	echo "  $w $c round $r: wall $wall cpu $cpu rss ${rss}k status $st" >&2
}

printf 'workload\tconfig\tround\twall_s\tcpu_s\tmaxrss_kb\tstatus\tcheck\tinner_ns\tprofiles\n' >"$RAW"
ncfg=$(echo $cfgs | wc -w)
echo "results in $DIR; configurations:$cfgs; workloads: $wls; rounds $ROUNDS (slow $SLOW_ROUNDS)" >&2
r=1
while [ "$r" -le "$ROUNDS" ]; do
	for w in $wls; do
		# rotate the starting configuration each round
		k=$(( (r - 1) % ncfg ))
		set -- $cfgs
		order=""
		i=0
		for c in "$@"; do
			[ $i -ge $k ] && order="$order $c"; i=$((i + 1))
		done
		i=0
		for c in "$@"; do
			[ $i -lt $k ] && order="$order $c"; i=$((i + 1))
		done
		for c in $order; do
			case $c in
			heapprof-r1|heaptrack|heaptrack-raw) [ "$r" -le "$SLOW_ROUNDS" ] || continue ;;
			esac
			# heaptrack 1.4's interpreter grows to ~19 GB on cc1's data and
			# dies with std::bad_alloc (cc1 then gets SIGPIPE): run it only
			# if asked (HEAPTRACK_CC1=1); heaptrack-raw records cc1 fine.
			if [ "$w.$c" = cc1.heaptrack ] && [ "${HEAPTRACK_CC1:-0}" != 1 ]; then
				[ "$r" = 1 ] && note "cc1 under heaptrack skipped: heaptrack_interpret grows to ~19 GB RSS and dies with std::bad_alloc (cc1 then exits on SIGPIPE, status 141); HEAPTRACK_CC1=1 runs it anyway"
				continue
			fi
			run_one "$w" "$c" "$r"
		done
	done
	r=$((r + 1))
done

"$PYTHON" bench/capture_table.py "$RAW" "$NOTES" | tee "$DIR/table.md"
