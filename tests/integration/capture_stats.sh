#!/bin/sh
# At the default rate (512 KiB) the unsampled estimates must be unbiased:
# over 20 runs of prog_stats (4 GiB of churn and 1 GiB kept live per run,
# about 10,000 samples each) the mean alloc and inuse bytes of each site
# fall within 2% of the truth (at least 4 standard errors here), and the
# mean object counts within 2% or 4 standard errors, whichever is wider
# (prog_stats computes the error sampling implies: counts of 16-byte
# objects, sampled once per ~32,000, vary by ~3% per run); and a 64 MiB
# allocation is counted exactly in every single run (it is sampled with
# probability 1 - exp(-128)).
. "$(dirname "$0")/lib.sh"
need_lib capture_stats
need_go capture_stats
oracle_tmpdir
runs=${HEAPPROF_STATS_RUNS:-20}
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
for site in site_churn site_live; do
	grep "^EXPECT $site " "$TMPD/s1.exp" >"$TMPD/$site.exp"
	tol=$(awk -v s=$site -v n=$runs '$1=="SIGMA" && $2==s {
		o = 4 * $3 / sqrt(n)
		if (o < 0.02) o = 0.02
		printf "%.4f,0.02,%.4f,0.02", o, o }' "$TMPD/s1.exp")
	$PROFSUM check stats.mean "$TMPD/$site.exp" "$tol" $files || FAILED=1
done
grep site_big "$TMPD/s1.exp" >"$TMPD/big.exp"
ok=1
for f in $files; do
	$PROFSUM check big "$TMPD/big.exp" 0 "$f" >"$TMPD/big.out" 2>&1 || ok=0
done
if [ $ok = 1 ]; then pass stats.big_64MiB_exact_every_run; else
	fail stats.big_64MiB_exact_every_run "$(grep -v PASS "$TMPD/big.out" | head -5)"; fi
exit $FAILED
