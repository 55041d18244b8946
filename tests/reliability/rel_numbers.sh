#!/bin/sh
# Numbers the profile must get right (issue 13): each thread's first
# allocation is not a certain sample (defect 2), records keep the rate they
# were sampled at across heapprof_set_sample_rate() (defect 10), malloc(0)
# blocks are counted (defect 11), fork children sample at their own offsets
# (the shared RNG), and free() keeps errno when the profiler warns. Every
# case runs preloaded (rprog_numbers) and linked with libheapprof.a
# (rprog_numbers_linked); profiles are read by go tool pprof (profsum.py).
. "$(dirname "$0")/lib.sh"
need_lib rel.numbers
need_go rel.numbers
oracle_tmpdir
P="$PROG"

# run_n NAME VARIANT ENV... -- ARGS...: runs the variant's program with ENV
# and the profile template $TMPD/NAME.VARIANT/p.%p.pb.gz; stdout in .../out.
run_n() {
	_n=$1 _v=$2; shift 2
	_d=$TMPD/$_n.$_v; rm -rf "$_d"; mkdir -p "$_d"
	_env="HEAPPROF_OUT=$_d/p.%p.pb.gz"
	while [ "$1" != "--" ]; do _env="$_env $1"; shift; done
	shift
	if [ "$_v" = preload ]; then _env="$_env LD_PRELOAD=$LIB"; _prog=$P/rprog_numbers
	else _prog=$P/rprog_numbers_linked; fi
	# shellcheck disable=SC2086
	run_t "rel.numbers.$_n.$_v" 120 env $_env "$_prog" "$@" >"$_d/out" 2>"$_d/err" ||
		return 1
	if [ $RC -ne 0 ]; then
		fail "rel.numbers.$_n.$_v" "exit $RC: $(head -c 300 "$_d/err")"
		return 1
	fi
	return 0
}

# site_val DIR SITE K: value K (1 ao, 2 ab, 3 io, 4 ib) of SITE in DIR's profile.
site_val() {
	$PROFSUM sums "$1"/p.*.pb.gz | awk -v s="$2" -v k="$3" \
		'$1 == s { v = $(k + 1) } END { printf "%d\n", v + 0 }'
}

for v in preload linked; do
	# Defect 2: 2000 short threads each keeping 16 B. At rate 1 exact;
	# at the default rate about 0.06 samples are expected (each worth
	# 512 KiB): more than 4 MB is the bug (it reported 1000 MB).
	if run_n threads.rate1 $v HEAPPROF_RATE=1 -- threads 2000; then
		$PROFSUM check rel.numbers.threads.rate1.$v "$TMPD/threads.rate1.$v/out" 0 \
			"$TMPD"/threads.rate1.$v/p.*.pb.gz || FAILED=1
	fi
	if run_n threads.default $v -- threads 2000; then
		ib=$(site_val "$TMPD/threads.default.$v" site_thread 4)
		if [ "$ib" -lt 4194304 ]; then pass rel.numbers.threads.default.$v
		else fail rel.numbers.threads.default.$v "2000 x 16 B in use reported as $ib bytes"; fi
	fi

	# Defect 10: 100 MB live, then the rate changes: the records keep
	# theirs. "0 524288": sampling off while 10 MB come and go (nothing
	# recorded), then on again: the next 100 MB are seen.
	for c in "524288 0" "524288 1" "65536 4194304" "524288 0 524288"; do
		set -- $c; r=$1; shift
		n=rates.$r.$(echo "$*" | tr ' ' _)
		run_n "$n" $v HEAPPROF_RATE=$r -- rates "$@" || continue
		$PROFSUM check rel.numbers.$n.$v "$TMPD/$n.$v/out" 0.3 \
			"$TMPD"/$n.$v/p.*.pb.gz || FAILED=1
	done
	# The legacy text at the end of a rate change: its header's rate is
	# the records' (or heap_v2/1 with unsampled counts when they have
	# several), so pprof's reading is still about 100 MB in use.
	if run_n rates.text $v HEAPPROF_RATE=65536 HEAPPROF_FORMAT=text -- rates 1; then
		f=$(ls "$TMPD"/rates.text.$v/p.*.pb.gz | head -1)
		ib=$(go tool pprof -raw -symbolize=none "$f" 2>/dev/null | awk '
			/^Samples:/ { s = 1; next } /^Locations/ { s = 0 }
			s && /:/ && $1 ~ /^[0-9]+$/ { sub(":", "", $2); t += $2 }
			END { printf "%d\n", t }')
		if [ "$ib" -gt 83886080 ] && [ "$ib" -lt 125829120 ]; then
			pass rel.numbers.rates.text.$v
		else
			fail rel.numbers.rates.text.$v "100 MB in use read from the text profile as $ib bytes ($(head -1 "$f"))"
		fi
	fi

	# Defect 11: live malloc(0) blocks, exact at rate 1, and unsampled
	# with a weight of one byte at rate 1024 (about 98 samples).
	if run_n zero.rate1 $v HEAPPROF_RATE=1 -- zero 100000; then
		$PROFSUM check rel.numbers.zero.rate1.$v "$TMPD/zero.rate1.$v/out" 0 \
			"$TMPD"/zero.rate1.$v/p.*.pb.gz || FAILED=1
	fi
	if run_n zero.rate1024 $v HEAPPROF_RATE=1024 -- zero 100000; then
		$PROFSUM check rel.numbers.zero.rate1024.$v "$TMPD/zero.rate1024.$v/out" 0.4 \
			"$TMPD"/zero.rate1024.$v/p.*.pb.gz || FAILED=1
	fi

	# Fork: two children doing the same 2000 allocations of distinct sizes
	# (about 70 samples each at 256 KiB) must not sample the same ones.
	if run_n fork $v HEAPPROF_RATE=262144 -- fork 2000; then
		d=$TMPD/fork.$v
		set -- $(sed -n 's/^children //p' "$d/out")
		for c in "$1" "$2"; do
			go tool pprof -raw -symbolize=none "$d/p.$c.pb.gz" 2>/dev/null |
				grep -o 'bytes:\[[0-9]*\]' | sort >"$d/set.$c"
		done
		n1=$(wc -l <"$d/set.$1"); n2=$(wc -l <"$d/set.$2")
		if [ "$n1" -lt 10 ] || [ "$n2" -lt 10 ]; then
			fail rel.numbers.fork_rng.$v "too few samples: $n1, $n2"
		elif cmp -s "$d/set.$1" "$d/set.$2"; then
			fail rel.numbers.fork_rng.$v "both children sampled the same $n1 allocations"
		else
			pass rel.numbers.fork_rng.$v
		fi
	fi

	# errno: a second free() of a sampled block warns on a full stderr
	# (write fails with ENOSPC); free() must not change errno.
	if [ $v = preload ]; then pre="LD_PRELOAD=$LIB"; prog=$P/rprog_numbers
	else pre="HEAPPROF_EXIT=0"; prog=$P/rprog_numbers_linked; fi
	run_t rel.numbers.errno.$v 60 env HEAPPROF_RATE=1 HEAPPROF_EXIT=0 "$pre" \
		"$prog" errno >"$TMPD/errno.$v" 2>/dev/full || continue
	if [ $RC -eq 0 ] && grep -q '^errno kept' "$TMPD/errno.$v"; then
		pass rel.numbers.errno.$v
	else
		fail rel.numbers.errno.$v "exit $RC: $(cat "$TMPD/errno.$v")"
	fi
done
exit $FAILED
