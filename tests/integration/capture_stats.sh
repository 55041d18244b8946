#!/bin/sh
# At the default rate (512 KiB) the unsampled estimates must be unbiased:
# over 10 runs of prog_stats (4 GiB of churn and 1 GiB kept live per run,
# about 10,000 samples each) the mean alloc and inuse values of each site
# fall within 2% of the truth; and a 64 MiB allocation is counted exactly
# in every single run (it is sampled with probability 1 - exp(-128)).
. "$(dirname "$0")/lib.sh"
need_lib capture_stats
need_go capture_stats
oracle_tmpdir
runs=${HEAPPROF_STATS_RUNS:-10}
i=1
files=""
while [ $i -le $runs ]; do
	if ! HEAPPROF_OUT="$TMPD/s$i.pb.gz" LD_PRELOAD="$LIB" "$PROG/prog_stats" 4096 1024 \
		>"$TMPD/s$i.exp" 2>"$TMPD/s$i.err"; then
		fail stats.program "run $i: $(head -3 "$TMPD/s$i.err")"
		exit 1
	fi
	files="$files $TMPD/s$i.pb.gz"
	i=$((i + 1))
done
pass stats.program
# The truth is the same in every run (fixed seed): check the mean.
grep -v site_big "$TMPD/s1.exp" >"$TMPD/mean.exp"
$PROFSUM check stats.mean "$TMPD/mean.exp" 0.02 $files || FAILED=1
grep site_big "$TMPD/s1.exp" >"$TMPD/big.exp"
ok=1
for f in $files; do
	$PROFSUM check big "$TMPD/big.exp" 0 "$f" >"$TMPD/big.out" 2>&1 || ok=0
done
if [ $ok = 1 ]; then pass stats.big_64MiB_exact_every_run; else
	fail stats.big_64MiB_exact_every_run "$(grep -v PASS "$TMPD/big.out" | head -5)"; fi
exit $FAILED
