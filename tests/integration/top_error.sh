#!/bin/sh
# tests/integration/top_error.sh: `heapprof top --error` (issue 30, "a
# profile that adds up, with its error bars") on prog_errbars' known heaps:
#  - rate 1: "the values are exact", no interval columns, every site's flat
#    equal to the truth;
#  - the default rate, 40 runs: of the 200 intervals (4 sites and the total
#    each run) 176..199 contain the truth (95% expects 190, sd 3), and the
#    mean squared standardized error is within [0.6, 1.6], and each site's
#    within [0.35, 2.5] (a formula without the sqrt covers all 200; var/p
#    instead of var/p^2 covers 108; p = S/R misses intervals; without
#    (1-p) site_huge, sampled with p = 0.86, has z^2 0.14);
#  - without --error the output is what it was (no Error:/Memory: line);
#  - the reconciliation: the profile's rss within 10% of the VmRSS the
#    program read just before its dump, the allocator's figures > 0, the
#    heap estimate <= RSS, "other" holding the program's 32 MiB of mmap'ed
#    memory; the same with jemalloc preloaded (allocator=jemalloc);
#  - a dump in the signal handler, every millisecond during malloc/free on
#    a threaded program, leaves the allocator's figures out ("skipped")
#    and never hangs (mallinfo2 there waited for the arena lock the
#    interrupted malloc held).
# Prints PASS name / FAIL name / SKIP name: why.
. "$(dirname "$0")/lib.sh"
need_lib top_error
oracle_tmpdir
P=$PROG/prog_errbars
if [ ! -x "$P" ]; then
	fail top_error.build "$P not built (make tests-build)"
	exit 1
fi
RUNS=${TOP_ERROR_RUNS:-40}

# rows FILE: "site flat_bytes half_bytes" per site row and "TOTAL t h".
rows() {
	python3 - "$1" <<'PYEOF'
import re, sys
u = {'B': 1, 'kB': 1024, 'MB': 1024**2, 'GB': 1024**3, 'TB': 1024**4}
def val(s):
    s = s.lstrip('\u00b1')
    if s == '0':
        return 0.0
    m = re.match(r'^(-?[0-9.]+)([a-zA-Z]*)$', s)
    return float(m.group(1)) * u.get(m.group(2), 1)
for line in open(sys.argv[1], encoding='utf-8'):
    f = line.split()
    m = re.match(r'^Error: total (\S+) (\S+) ', line)
    if m:
        print('TOTAL', val(m.group(1)), val(m.group(2)))
    elif len(f) == 8 and f[-1].startswith('site_'):
        print(f[-1], val(f[0]), val(f[5]))
    elif len(f) == 6 and f[-1].startswith('site_'):
        print(f[-1], val(f[0]), -1)
PYEOF
}

# ---- rate 1: exact
"$HEAPPROF" run -r 1 -o "$TMPD/r1.pb.gz" -- "$P" sites >"$TMPD/r1.truth" 2>"$TMPD/r1.err"
"$HEAPPROF" top --error "$TMPD/r1.pb.gz" >"$TMPD/r1.top" 2>&1
rows "$TMPD/r1.top" >"$TMPD/r1.rows"
if grep -q '^Error: none, the values are exact (rate 1' "$TMPD/r1.top" &&
	! grep -q "$(printf '\302\261')" "$TMPD/r1.top" &&
	awk 'NR==FNR { t[$2] = $3; next } { n++; d = $2 - t[$1]; if (d < 0) d = -d
		if (d > 0.006 * 1048576) bad++ } END { exit !(n == 4 && !bad) }' \
		"$TMPD/r1.truth" "$TMPD/r1.rows"; then
	pass top_error.rate1_exact
else
	fail top_error.rate1_exact "$(grep '^Error' "$TMPD/r1.top"); $(tr '\n' '|' <"$TMPD/r1.rows")"
fi
if grep -q 'heap in use [0-9.]*MB (exact)' "$TMPD/r1.top"; then
	pass top_error.rate1_memory_exact
else
	fail top_error.rate1_memory_exact "$(grep '^Memory' "$TMPD/r1.top")"
fi
# Without --error: nothing added (tests/cli/top.sh and firstminute.sh
# compare that output with go tool pprof -top).
"$HEAPPROF" top "$TMPD/r1.pb.gz" >"$TMPD/r1.plain" 2>&1
if ! grep -q '^Error:\|^Memory:' "$TMPD/r1.plain" &&
	grep -q '^      flat  flat%   sum%        cum   cum%$' "$TMPD/r1.plain"; then
	pass top_error.default_unchanged
else
	fail top_error.default_unchanged "$(grep '^Error\|^Memory\|flat%' "$TMPD/r1.plain")"
fi

# ---- the default rate: coverage of the intervals over RUNS runs
: >"$TMPD/all.rows"
i=0
while [ $i -lt "$RUNS" ]; do
	"$HEAPPROF" run -o "$TMPD/d.pb.gz" -- "$P" sites >"$TMPD/d.truth" 2>/dev/null
	"$HEAPPROF" top --error "$TMPD/d.pb.gz" >"$TMPD/d.top" 2>&1
	rows "$TMPD/d.top" >"$TMPD/d.rows"
	tot=$(awk '{ s += $3 } END { print s }' "$TMPD/d.truth")
	awk -v tot="$tot" 'NR==FNR { t[$2] = $3; next }
		$1 == "TOTAL" { print $1, $2, $3, tot; next }
		{ print $1, $2, $3, t[$1] }' "$TMPD/d.truth" "$TMPD/d.rows" >>"$TMPD/all.rows"
	i=$((i + 1))
done
# site est half truth: in when |est - truth| <= half; z = (est-truth)/(half/1.96)
# Each site's mean z^2 too, in [0.35, 2.5] (40 runs: sd about 0.25; 0.1% of
# simulated correct runs fall outside): a
# variance without (1-p) is 7 times too large at site_huge (z^2 0.14).
awk -v runs="$RUNS" '{ n++; d = $2 - $4; if (d < 0) d = -d
	if ($3 > 0 && d <= $3) inside++
	if ($3 > 0) { z = d / ($3 / 1.96); z2 += z * z; sz[$1] += z * z; sn[$1]++ } else bad++ }
	END { lo = int(runs * 5 * 0.88); hi = runs * 5 - 1; ok = 1
		for (k in sz) { m = sz[k] / sn[k]; printf "%s z^2 %.2f; ", k, m
			if (m < 0.35 || m > 2.5) ok = 0 }
		printf "%d of %d intervals hold the truth (want %d..%d), mean z^2 %.2f (want 0.6..1.6), %d without one\n",
			inside, n, lo, hi, z2 / n, bad
		exit !(ok && n == runs * 5 && inside >= lo && inside <= hi && z2 / n >= 0.6 && z2 / n <= 1.6 && !bad) }' \
	"$TMPD/all.rows" >"$TMPD/cov" 2>&1
if [ $? -eq 0 ]; then
	pass top_error.coverage
else
	fail top_error.coverage "$(cat "$TMPD/cov")"
fi
cat "$TMPD/cov" >&2

# ---- reconciliation
memory_case() { # name allocator [env...]
	name=$1 want=$2
	shift 2
	rm -f "$TMPD/m.pb.gz"
	env "$@" "$HEAPPROF" run --no-exit-dump -- "$P" memory "$TMPD/m.pb.gz" >"$TMPD/m.out" 2>"$TMPD/m.err"
	"$HEAPPROF" top --error "$TMPD/m.pb.gz" >"$TMPD/m.top" 2>&1
	python3 - "$TMPD/m.out" "$TMPD/m.top" "$want" <<'PYEOF' >"$TMPD/m.why" 2>&1
import re, sys
out, top, want = sys.argv[1:4]
vm = int(re.search(r'VMRSS (\d+)', open(out).read()).group(1))
t = open(top, encoding='utf-8').read()
c = re.search(r'^heapprof: memory: rss=(\d+) allocator=(\w+) held=(\d+) in_use=(\d+) free=(\d+)$', t, re.M)
u = {'B': 1, 'kB': 1024, 'MB': 1024**2, 'GB': 1024**3}
def val(s):
    m = re.match(r'^(-?[0-9.]+)([a-zA-Z]*)$', s)
    return float(m.group(1)) * u.get(m.group(2), 1)
m = re.search(r'^Memory: RSS (\S+) = heap in use (\S+) \(est\. \u00b1[0-9.]+%\) \+ (\w+) free and overhead (\S+) \+ heapprof (\S+) \+ other (-?[0-9.]+[a-zA-Z]*)', t, re.M)
errs = []
if not c or not m:
    errs.append('no memory comment or line')
else:
    rss, alloc, held, in_use = int(c.group(1)), c.group(2), int(c.group(3)), int(c.group(4))
    if abs(rss - vm) > 0.10 * vm: errs.append('rss %d vs VmRSS %d' % (rss, vm))
    if alloc != want or m.group(3) != want: errs.append('allocator %s' % alloc)
    if held <= 0 or in_use <= 0: errs.append('held %d in_use %d' % (held, in_use))
    heap, other = val(m.group(2)), val(m.group(6))
    if heap > rss: errs.append('heap %d > rss %d' % (heap, rss))
    if not (20 * 2**20 <= other <= 48 * 2**20): errs.append('other %d, the 32 MiB mapping' % other)
print('; '.join(errs) or 'ok')
sys.exit(1 if errs else 0)
PYEOF
	if [ $? -eq 0 ]; then
		pass "$name"
	else
		fail "$name" "$(cat "$TMPD/m.why") | $(grep '^Memory\|^heapprof: memory' "$TMPD/m.top" | tr '\n' '|') $(head -c 300 "$TMPD/m.err")"
	fi
}
memory_case top_error.memory_glibc glibc
JE=$(ls /usr/lib/x86_64-linux-gnu/libjemalloc.so.2 2>/dev/null)
if [ -n "$JE" ]; then
	memory_case top_error.memory_jemalloc jemalloc LD_PRELOAD="$JE"
else
	skip top_error.memory_jemalloc "libjemalloc.so.2 not installed (libjemalloc-dev)"
fi

# ---- dumps in the signal handler during malloc: skipped, no hang
rm -f "$TMPD"/st.*.pb.gz
timeout -k 5 60 "$HEAPPROF" run -s USR1 -o "$TMPD/st.%n.pb.gz" -- "$P" storm 1500 >"$TMPD/st.out" 2>"$TMPD/st.err"
st=$?
skipped=0 total=0
for f in "$TMPD"/st.*.pb.gz; do
	[ -f "$f" ] || continue
	total=$((total + 1))
	"$HEAPPROF" top "$f" 2>/dev/null | grep -q 'allocator=skipped(dump in a signal handler' && skipped=$((skipped + 1))
done
if [ $st -eq 0 ] && grep -q '^done$' "$TMPD/st.out" && [ $skipped -gt 0 ]; then
	pass top_error.handler_dumps_skip_allocator
else
	fail top_error.handler_dumps_skip_allocator "status $st, $total profiles, $skipped skipped: $(head -c 300 "$TMPD/st.err")"
fi
exit $FAILED
