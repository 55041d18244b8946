#!/bin/sh
# Real programs under the profiler (python3, sqlite3, gcc, sort) print
# exactly what they print without it, at the default rate and at rate 1,
# keep their exit status, and leave a profile the oracle reads.
. "$(dirname "$0")/lib.sh"
need_lib capture_real
need_go capture_real
oracle_tmpdir
cat >"$TMPD/work.py" <<'PY'
import json, collections
d = collections.Counter()
for i in range(200000):
    d[str(i % 5000)] += i
rows = [{"k": k, "v": v, "l": list(range(v % 7))} for k, v in sorted(d.items())[:2000]]
print(len(json.dumps(rows)), sum(d.values()))
PY
cat >"$TMPD/work.sql" <<'SQL'
create table t(a integer, b text);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 50000)
insert into t select x, hex(randomblob(16)) || x from c;
create index ti on t(b);
select count(*), sum(a), min(length(b)) from t where b like '%7';
SQL
cat >"$TMPD/work.c" <<'C'
#include <stdio.h>
struct s { int a[16]; };
static int f(struct s *p, int n) { int t = 0; for (int i = 0; i < n; i++) t += p->a[i % 16] * i; return t; }
int main(void) { struct s x = {{1, 2, 3}}; printf("%d\n", f(&x, 100)); return 3; }
C
seq 200000 | sort -R --random-source=/dev/zero >"$TMPD/nums" 2>/dev/null || seq 200000 >"$TMPD/nums"

run_prog() { # name, command...
	name=$1; shift
	(cd "$TMPD" && "$@") >"$TMPD/$name.base" 2>&1
	base_rc=$?
	for rate in 524288 1; do
		(cd "$TMPD" && env HEAPPROF_RATE=$rate HEAPPROF_OUT="$TMPD/$name.$rate.%p.pb.gz" \
			LD_PRELOAD="$LIB" "$@") >"$TMPD/$name.$rate.out" 2>&1
		rc=$?
		if [ $rc -eq $base_rc ] && cmp -s "$TMPD/$name.base" "$TMPD/$name.$rate.out"; then
			pass "real.$name.rate$rate.same_output"
		else
			fail "real.$name.rate$rate.same_output" "rc $rc vs $base_rc; $(diff "$TMPD/$name.base" "$TMPD/$name.$rate.out" | head -5)"
		fi
		f=$(ls -S "$TMPD"/$name.$rate.*.pb.gz 2>/dev/null | head -1)
		if [ -n "$f" ] && go tool pprof -raw -symbolize=none "$f" 2>/dev/null | grep -q '^Samples:'; then
			pass "real.$name.rate$rate.profile"
		else
			fail "real.$name.rate$rate.profile" "no readable profile"
		fi
	done
}
if command -v python3 >/dev/null; then
	run_prog python env PYTHONMALLOC=malloc PYTHONHASHSEED=0 python3 work.py
else skip_tool real.python python3; fi
if command -v sqlite3 >/dev/null; then
	run_prog sqlite sh -c 'sqlite3 :memory: < work.sql'
else skip_tool real.sqlite sqlite3; fi
run_prog gcc sh -c 'gcc -O2 -o work work.c && ./work; echo "status $?"'
run_prog sort sort -n nums
exit $FAILED
