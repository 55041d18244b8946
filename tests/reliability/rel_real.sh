#!/bin/sh
# Real programs under the profiler (plan T24): output and exit status
# identical to the run without it, at rate 1 and at the default rate.
# python3 (plain, PYTHONMALLOC=malloc, threads, multiprocessing fork and
# spawn), perl, git init/add/commit, bash pipelines, sqlite3 with 100k
# rows, ldd (bytehound#124), gcc + make building a small project. Profiles of
# the processes must decode.
. "$(dirname "$0")/lib.sh"
need_lib rel.real
oracle_tmpdir
PY=/usr/bin/python3
[ -x $PY ] || PY=$(command -v python3)
cd "$TMPD" || exit 1

cat >work.py <<'PY'
import json, collections, threading, sys
d = collections.Counter()
for i in range(60000):
    d[str(i % 3000)] += i
rows = [{"k": k, "v": v, "l": list(range(v % 7))} for k, v in sorted(d.items())[:1500]]
out = []
def worker(n):
    out.append(sum(len(json.dumps(rows[j::n])) for j in range(n)))
ts = [threading.Thread(target=worker, args=(n,)) for n in (1, 2, 3, 4)]
[t.start() for t in ts]; [t.join() for t in ts]
print(len(json.dumps(rows)), sum(d.values()), sorted(out))
sys.exit(3)
PY
cat >mp.py <<'PY'
import multiprocessing as mp, sys
def sq(x):
    return sum(i * i for i in range(x))
if __name__ == "__main__":
    ctx = mp.get_context(sys.argv[1])
    with ctx.Pool(2) as p:
        print(sys.argv[1], sum(p.map(sq, range(200))))
PY
cat >work.sql <<'SQL'
create table t(a integer primary key, b text, c real);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 100000)
insert into t select x, printf('row-%08d-%s', x, hex(x * 7919)), x / 3.0 from c;
create index tb on t(b);
select count(*), sum(a), min(length(b)), max(c) from t where b like '%7%';
delete from t where a % 3 = 0;
select count(*), total(c) from t;
SQL

T=$(by_tier 120 600)
same3 rel.real.python $T env PYTHONHASHSEED=0 $PY work.py
same3 rel.real.python_malloc $T env PYTHONMALLOC=malloc PYTHONHASHSEED=0 $PY work.py
same3 rel.real.python_mp_fork $T $PY mp.py fork
same3 rel.real.python_mp_spawn $T $PY mp.py spawn
same3 rel.real.perl $T perl -e 'my %h; $h{$_ % 977} .= "x$_" for 1..60000; my @k = sort { length($h{$a}) <=> length($h{$b}) || $a <=> $b } keys %h; print scalar(@k), " ", length(join ",", map { $h{$_} } @k), "\n"; exit 4'
if command -v git >/dev/null 2>&1; then
	same3 rel.real.git $T sh -c 'rm -rf g && mkdir g && cd g && export GIT_AUTHOR_NAME=a GIT_AUTHOR_EMAIL=a@b GIT_COMMITTER_NAME=a GIT_COMMITTER_EMAIL=a@b GIT_AUTHOR_DATE="2026-11-22T00:00:00Z" GIT_COMMITTER_DATE="2026-11-22T00:00:00Z" HOME=$PWD GIT_CONFIG_NOSYSTEM=1 && git init -q -b main . && seq 1 5000 >f && git add f && git commit -q -m one && seq 2 5001 >f && git commit -qam two && git log --format="%H %s" && git diff HEAD~1 --stat'
else skip_tool rel.real.git git; fi
# gcc building a small project with make: 6 translation units (generated),
# compiled -O2 in parallel and linked; the binary's output and its md5 must
# not change (cc1, as, collect2 and ld all run under the profiler).
mkdir -p proj
for i in 1 2 3 4 5 6; do
	{
		echo "#include <stdio.h>"
		echo "struct s$i { int v[$((i * 4))]; };"
		echo "static int helper$i(struct s$i *p, int n) { int t = 0; for (int k = 0; k < n; k++) t += p->v[k % $((i * 4))] * k; return t; }"
		echo "int unit$i(int n) { struct s$i x = {{$i}}; switch (n % 5) { case 0: return helper$i(&x, n); case 1: return n * $i; default: return helper$i(&x, n / 2) + $i; } }"
	} >proj/u$i.c
done
{
	echo "#include <stdio.h>"
	for i in 1 2 3 4 5 6; do echo "int unit$i(int);"; done
	echo "int main(void) { long t = 0; for (int n = 0; n < 1000; n++) t += unit1(n) + unit2(n) + unit3(n) + unit4(n) + unit5(n) + unit6(n); printf(\"%ld\\n\", t); return 0; }"
} >proj/main.c
printf 'OBJ = main.o u1.o u2.o u3.o u4.o u5.o u6.o\nprog: $(OBJ)\n\t$(CC) -o $@ $(OBJ)\n%%.o: %%.c\n\t$(CC) -O2 -c -o $@ $<\nclean:\n\trm -f prog $(OBJ)\n' >proj/Makefile
same3 rel.real.gcc_make_project $T sh -c 'cd proj && make -s clean && make -s -j2 prog && ./prog && md5sum <prog'
same3 rel.real.bash $T bash -c 'set -o pipefail; seq 1 30000 | sort -r | awk "{s+=\$1} NR%1000==0{print s}" | sha256sum; x=$(echo hello | tr a-z A-Z); echo "$x"; (cd / && ls -d usr); a=(); for i in $(seq 1 2000); do a+=("v$i"); done; echo "${#a[@]} ${a[1999]}"; false | true; echo $?; exit 5'
if command -v sqlite3 >/dev/null 2>&1; then
	same3 rel.real.sqlite $T sh -c 'sqlite3 :memory: <work.sql'
else skip_tool rel.real.sqlite sqlite3; fi

# ldd prints load addresses (ASLR) and, under the preload, the profiler
# and its own dependencies: every line of the plain output (addresses
# removed) and the status must be there.
for mode in base 1 524288; do
	if [ $mode = base ]; then
		run_t rel.real.ldd.$mode 30 ldd /bin/bash >ldd.$mode 2>&1
	else
		run_t rel.real.ldd.$mode 30 env HEAPPROF_RATE=$mode HEAPPROF_OUT="$TMPD/ldd.%p.pb.gz" \
			LD_PRELOAD="$LIB" ldd /bin/bash >ldd.$mode 2>&1
	fi
	echo "rc $RC" >>ldd.$mode
	sed 's/ (0x[0-9a-f]*)//' ldd.$mode | sort >ldd.$mode.n
done
for mode in 1 524288; do
	missing=$(comm -23 ldd.base.n ldd.$mode.n)
	if [ -z "$missing" ]; then pass rel.real.ldd.rate$mode
	else fail rel.real.ldd.rate$mode "missing: $(echo "$missing" | head -4 | tr '\n' ' ')"; fi
done

# Every profile the runs wrote decodes (a sample of up to 40).
files=$(find "$TMPD" -name '*.pb.gz' | head -40)
if [ -n "$files" ]; then parses rel.real.profiles_decode $files
else fail rel.real.profiles_decode "no profile written"; fi
if find "$TMPD" -name '*.tmp.*' | grep -q .; then
	fail rel.real.no_temp_left "$(find "$TMPD" -name '*.tmp.*' | head -3)"
else pass rel.real.no_temp_left; fi
exit $FAILED
