#!/bin/sh
# Blocks grown into malloc_usable_size's slack (issue 30, item 1): a
# program that appends 1005-byte entries to 12,500 buffers and reallocs
# only when malloc_usable_size says the entry does not fit (as redis's sds
# strings and listpacks do) holds 100.5 MB. A sampled block's usable size
# must be what the next allocator would report, so the program makes the
# same calls as without the profiler and the estimate stays unbiased:
#   rate 1: inuse exact (it said 62.8 MB: sampled blocks grew unseen);
#   default rate: the mean of N runs within 3 standard errors of the
#   truth (it said 355 MB: sampled blocks realloc'd less often, so their
#   records kept the weight of a smaller size);
#   the program's own view (the sum of malloc_usable_size over its
#   buffers, the reallocs it made) is what it is without the profiler.
. "$(dirname "$0")/lib.sh"
need_lib rel.slack
need_go rel.slack
oracle_tmpdir
P="$PROG/rprog_slack"
ARGS="12500 8 1005"
RUNS=$(by_tier 20 60)

run_t rel.slack.none 60 "$P" $ARGS >"$TMPD/none.out" || exit 0
truth=$(awk '$1 == "EXPECT" { print $6 }' "$TMPD/none.out")

# Rate 1: every block a sample, the profile exact.
if run_t rel.slack.rate1 120 env LD_PRELOAD="$LIB" HEAPPROF_RATE=1 \
	HEAPPROF_OUT="$TMPD/r1.pb.gz" "$P" $ARGS >"$TMPD/r1.out" 2>"$TMPD/r1.err"; then
	if [ $RC -ne 0 ]; then
		fail rel.slack.rate1 "exit $RC: $(head -c 300 "$TMPD/r1.err")"
	else
		$PROFSUM check rel.slack.rate1 "$TMPD/r1.out" 0 "$TMPD/r1.pb.gz" || FAILED=1
		# glibc sometimes hands back a few bytes more (a realloc in
		# place that takes a neighbour too small to split off), so the
		# program's view is compared to 0.1%: before the fix it was
		# 37,500 reallocs instead of 100,000, and 1.1% more usable.
		for k in usable_sum reallocs; do
			want=$(awk -v k=$k '$1 == k { print $2 }' "$TMPD/none.out")
			got=$(awk -v k=$k '$1 == k { print $2 }' "$TMPD/r1.out")
			if awk -v a="$got" -v b="$want" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= b / 1000) }'
			then pass rel.slack.rate1.$k
			else fail rel.slack.rate1.$k "$k $got with the profiler, $want without"; fi
		done
	fi
fi

# Default rate: RUNS runs, each profile's inuse_space of site_slack.
: >"$TMPD/ib"
i=0
while [ $i -lt "$RUNS" ]; do
	i=$((i + 1))
	run_t rel.slack.default.$i 120 env LD_PRELOAD="$LIB" \
		HEAPPROF_OUT="$TMPD/d$i.pb.gz" "$P" $ARGS >"$TMPD/d.out" 2>"$TMPD/d.err" || continue
	if [ $RC -ne 0 ] || [ ! -s "$TMPD/d$i.pb.gz" ]; then
		fail rel.slack.default "run $i: exit $RC, profile $(ls "$TMPD/d$i.pb.gz" 2>&1)"
		continue
	fi
	$PROFSUM sums "$TMPD/d$i.pb.gz" | awk '$1 == "site_slack" { print $5 }' >>"$TMPD/ib"
done
awk -v truth="$truth" -v runs="$RUNS" '
	{ n++; s += $1; ss += $1 * $1 }
	END {
		if (n < runs) { printf "FAIL rel.slack.default.mean: %d of %d profiles\n", n, runs; exit }
		m = s / n; sd = sqrt((ss - n * m * m) / (n - 1)); se = sd / sqrt(n)
		dev = (m - truth) / se
		msg = sprintf("mean %.1f MB of %.1f MB over %d runs (%+.2f standard errors, sd %.1f MB)", \
			m / 1e6, truth / 1e6, n, dev, sd / 1e6)
		if (dev < 3 && dev > -3) print "PASS rel.slack.default.mean"
		else print "FAIL rel.slack.default.mean: " msg
		print "    " msg > "/dev/stderr"
	}' "$TMPD/ib"
exit 0
