#!/bin/sh
# cost.sh: the profiler's cost per process (issue 15), against no profiler
# and the forwarding shim, in one run:
#
#   sh bench/cost.sh [-p PARTS] [-n ROUNDS] [-o DIR] [-b BASELIB]
#
# PARTS (comma list, default all):
#   true    callgrind instructions of /bin/true (start-up + exit)
#   loop    wall time of 300 /bin/true in a shell loop (sh -c), ROUNDS
#           alternating rounds (each in another order), medians
#   make    wall time of `make -j2` building the CLI (build/heapprof and its
#           objects, in a scratch copy of the tree): plain, under the shim
#           (LD_PRELOAD), and under `heapprof run`, ROUNDS alternating
#           rounds; medians, and the median of each round's own ratios
#   cc1     callgrind instructions of cc1 -O2 on gen_c.py's 410 KB file
#   python  callgrind instructions of churn.py 10 (PYTHONMALLOC=malloc;
#           20 k rounds: the short run)
#   pylong  the same for churn.py 100 (200 k rounds: the long run)
#   dump    the exit dump of cc1 -O2 on that file (and of BASELIB's with
#           -b): callgrind instructions from heapprof__serve_exit on, and
#           page faults from its first fault to the process's end (perf
#           record with DWARF call chains); medians of 3 runs
# HEAPPROF_LIB overrides build/libheapprof.so. Profiles go to DIR.
# -b BASELIB adds a configuration "base": another build of the library
# (an older commit's), in the same alternating rounds (true, loop, make).
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
PARTS=true,loop,make,cc1,python,pylong,dump
ROUNDS=5
DIR=""
BASE=""
while getopts p:n:o:b: opt; do
	case $opt in
	p) PARTS=$OPTARG ;;
	n) ROUNDS=$OPTARG ;;
	o) DIR=$OPTARG ;;
	b) BASE=$OPTARG ;;
	*) sed -n '2,18p' "$0" >&2; exit 2 ;;
	esac
done
[ -n "$DIR" ] || DIR=$(mktemp -d /tmp/heapprof-cost.XXXXXX)
mkdir -p "$DIR"
[ -n "${HEAPPROF_LIB:-}" ] || make -s build/libheapprof.so >&2 || exit 1
make -s build/heapprof build/bench/libshim.so >&2 || exit 1
LIB=${HEAPPROF_LIB:-$ROOT/build/libheapprof.so}
unset HEAPPROF_LIB # not passed to the programs (an unknown HEAPPROF_ name warns)
SHIM=$ROOT/build/bench/libshim.so
has() { case ",$PARTS," in *",$1,"*) return 0 ;; esac; return 1; }
pre() { # config -> env assignments
	case $1 in
	none) echo "X_NONE=1" ;;
	shim) echo "LD_PRELOAD=$SHIM" ;;
	heapprof) echo "LD_PRELOAD=$LIB HEAPPROF_OUT=$DIR/prof/p.%p.pb.gz" ;;
	base) echo "LD_PRELOAD=$BASE HEAPPROF_OUT=$DIR/prof/p.%p.pb.gz" ;;
	esac
}
mkdir -p "$DIR/prof"
CONFS="none shim heapprof"
[ -n "$BASE" ] && CONFS="none shim base heapprof"
ir() { # out cmd... (env already set by caller)
	_o=$1; shift
	valgrind --tool=callgrind --callgrind-out-file="$_o" "$@" >"$_o.log" 2>&1
	awk '/^summary:/ {print $2}' "$_o"
}
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ printf "%.4f", a / b }'; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else printf "%.4f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
wall() { # cmd... -> seconds
	_s=$(date +%s.%N)
	"$@" >/dev/null 2>&1
	_e=$(date +%s.%N)
	awk -v s="$_s" -v e="$_e" 'BEGIN{ printf "%.4f", e - s }'
}

# rot R WORD...: the words rotated left by R (R mod their number): each
# round of a timed part runs the configurations in another order, so that
# none is not always first (a build after a build differs).
rot() {
	_i=$(($1 % ($# - 1))); shift
	while [ "$_i" -gt 0 ]; do _f=$1; shift; set -- "$@" "$_f"; _i=$((_i - 1)); done
	echo "$@"
}

# timed_table TITLE PREFIX LABEL: the medians of $DIR/PREFIX.{none,shim,
# base,heapprof} (one time a line), against none and the shim; LABEL
# names the heapprof row.
timed_table() {
	_n=$(median <"$DIR/$2.none") _s=$(median <"$DIR/$2.shim") _h=$(median <"$DIR/$2.heapprof")
	echo "| $1 ($ROUNDS rounds) | median wall s | vs none | vs shim |"
	echo "|---|---|---|---|"
	echo "| none | $_n | 1.0000 | |"
	echo "| shim | $_s | $(ratio "$_s" "$_n") | 1.0000 |"
	if [ -n "$BASE" ]; then
		_b=$(median <"$DIR/$2.base")
		echo "| base ($BASE) | $_b | $(ratio "$_b" "$_n") | $(ratio "$_b" "$_s") |"
	fi
	echo "| $3 | $_h | $(ratio "$_h" "$_n") | $(ratio "$_h" "$_s") |"
}

if has true; then
	echo "| /bin/true | instructions | over none |"
	echo "|---|---|---|"
	for c in $CONFS; do
		# shellcheck disable=SC2046
		n=$(env $(pre $c) sh -c 'exec "$@"' - valgrind --tool=callgrind \
			--callgrind-out-file="$DIR/true.$c.cg" /bin/true 2>&1 >/dev/null |
			sed -n 's/.*Collected : *\([0-9]*\).*/\1/p')
		[ $c = none ] && base=$n
		echo "| $c | $n | $((n - base)) |"
	done
	echo
fi

if has loop; then
	for c in $CONFS; do : >"$DIR/loop.$c"; done
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		for c in $(rot $r $CONFS); do
			# shellcheck disable=SC2046
			wall env $(pre $c) sh -c 'i=0; while [ $i -lt 300 ]; do /bin/true; i=$((i+1)); done' >>"$DIR/loop.$c"
			echo >>"$DIR/loop.$c"
		done
		r=$((r + 1))
	done
	timed_table "300 x /bin/true" loop heapprof
	echo "(files written by the heapprof rounds: $(ls "$DIR/prof" | wc -l))"
	echo
fi

if has make; then
	# A scratch copy of the sources; each round removes the CLI's objects.
	src=$DIR/tree
	rm -rf "$src"
	mkdir -p "$src"
	cp -r Makefile cli src include "$src"/
	for c in $CONFS; do : >"$DIR/make.$c"; done
	: >"$DIR/make.pairs"
	r=0
	while [ $r -lt "$ROUNDS" ]; do
		for c in $(rot $r $CONFS); do
			rm -rf "$src/build"
			case $c in
			none) t=$(wall make -C "$src" -j2 build/heapprof) ;;
			shim) t=$(wall env LD_PRELOAD="$SHIM" make -C "$src" -j2 build/heapprof) ;;
			*)
				[ $c = base ] && l=$BASE || l=$LIB
				rm -rf "$DIR/mprof"; mkdir -p "$DIR/mprof"
				t=$(wall env HEAPPROF_LIBRARY="$l" "$ROOT/build/heapprof" run \
					-o "$DIR/mprof/p.%p.pb.gz" -- make -C "$src" -j2 build/heapprof) ;;
			esac
			echo "$t" >>"$DIR/make.$c"
			eval "t_$c=\$t"
		done
		# Each round's own ratios: the machine's drift between rounds cancels.
		echo "$(ratio "$t_shim" "$t_none") $(ratio "$t_heapprof" "$t_none") $(ratio "$t_heapprof" "$t_shim")" >>"$DIR/make.pairs"
		r=$((r + 1))
	done
	pcol() { awk -v k="$1" '{ print $k }' "$DIR/make.pairs" | median; }
	HEAPPROF_LIBRARY="$LIB" "$ROOT/build/heapprof" run -o "$DIR/mprof2/p.%p.pb.gz" -- \
		sh -c "mkdir -p $DIR/mprof2; rm -rf $src/build; make -C $src -j2 build/heapprof >/dev/null 2>&1" 2>"$DIR/make.summary"
	timed_table "make -j2 build/heapprof" make "heapprof run"
	echo "(median of the rounds' own ratios: shim/none $(pcol 1), heapprof/none $(pcol 2), heapprof/shim $(pcol 3))"
	echo "(heapprof run's summary, one more build: $(tr '\n' ' ' <"$DIR/make.summary"))"
	echo
fi

if has cc1 || has python || has pylong || has dump; then
	CC1=$(gcc -print-prog-name=cc1)
	python3 bench/gen_c.py "$DIR/gen.c" >/dev/null || exit 1
fi
if has cc1 || has python || has pylong; then
	echo "| program | none Ir | shim Ir | heapprof Ir | heapprof vs none | vs shim |"
	echo "|---|---|---|---|---|---|"
	for w in cc1 python pylong; do
		has $w || continue
		for c in none shim heapprof; do
			case $w in
			# shellcheck disable=SC2046
			cc1) v=$(env $(pre $c) sh -c 'exec "$@"' - valgrind --tool=callgrind \
				--callgrind-out-file="$DIR/$w.$c.cg" "$CC1" -quiet -O2 "$DIR/gen.c" \
				-o "$DIR/gen.$c.s" 2>/dev/null >/dev/null; awk '/^summary:/ {print $2}' "$DIR/$w.$c.cg") ;;
			# shellcheck disable=SC2046
			python | pylong) _r=10; [ $w = pylong ] && _r=100
				v=$(env $(pre $c) PYTHONMALLOC=malloc PYTHONHASHSEED=0 sh -c 'exec "$@"' - \
				valgrind --tool=callgrind --callgrind-out-file="$DIR/$w.$c.cg" \
				/usr/bin/python3 bench/churn.py $_r 2>/dev/null >/dev/null
				awk '/^summary:/ {print $2}' "$DIR/$w.$c.cg") ;;
			esac
			eval "v_$c=\$v"
		done
		# shellcheck disable=SC2154
		echo "| $w | $v_none | $v_shim | $v_heapprof | $(ratio "$v_heapprof" "$v_none") | $(ratio "$v_heapprof" "$v_shim") |"
	done
	for f in "$DIR"/gen.*.s; do
		[ -f "$f" ] && ! cmp -s "$f" "$DIR/gen.none.s" && echo "note: $f differs from cc1's output without a profiler"
	done
fi
if has dump; then
	# The dump's faults: those from the first one under heapprof__serve_exit
	# to the end (the exit handlers after it are the program's and libc's,
	# the same in every configuration).
	dump_faults() { # lib
		perf record -q -o "$DIR/dump.perf" -e page-faults -c 1 \
			--call-graph dwarf,8192 env LD_PRELOAD="$1" \
			HEAPPROF_OUT="$DIR/prof/d.%p.pb.gz" "$CC1" -quiet -O2 "$DIR/gen.c" \
			-o "$DIR/gen.dump.s" >/dev/null 2>&1 || return 1
		perf script -i "$DIR/dump.perf" 2>/dev/null | awk '
			/^[^ \t]/ { if (n) cnt++ }
			/heapprof__serve_exit/ { if (!n) { n = 1; cnt = 1 } }
			END { print cnt + 0 }'
	}
	echo "| cc1 exit dump | instructions (median of 3) | page faults (median of 3) |"
	echo "|---|---|---|"
	dconfs="heapprof"
	[ -n "$BASE" ] && dconfs="base heapprof"
	for c in $dconfs; do
		l=$LIB
		[ $c = base ] && l=$BASE
		# Sampling is random: each run's profile differs (~800 stacks
		# of cc1 here), so medians of 3 runs.
		ir=$(for k in 1 2 3; do
			env LD_PRELOAD="$l" HEAPPROF_OUT="$DIR/prof/d.%p.pb.gz" \
				valgrind --tool=callgrind \
				--callgrind-out-file="$DIR/dump.$c.$k.cg" \
				--toggle-collect=heapprof__serve_exit "$CC1" -quiet -O2 \
				"$DIR/gen.c" -o "$DIR/gen.dump.s" >/dev/null 2>&1
			awk '/^summary:/ {print $2}' "$DIR/dump.$c.$k.cg"
		done | median)
		pf="(perf missing)"
		if command -v perf >/dev/null 2>&1; then
			pf=$( (dump_faults "$l"; dump_faults "$l"; dump_faults "$l") | median)
		fi
		echo "| $c | $ir | $pf |"
	done
	echo
fi
echo "raw results: $DIR"
