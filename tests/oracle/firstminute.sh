#!/bin/sh
# tests/oracle/firstminute.sh: what a new user sees first (issue 14), on
# real programs, with go tool pprof as the oracle.
#  - C++ (a template class, g++ -O2, no -g): names demangled in the written
#    profile (name "store::Cache::blob", system_name the mangled one) and in
#    top/collapse; no operator new frame (the leaf is the caller of new);
#    the mappings marked has_functions, so go tool pprof keeps heapprof's
#    names even after the binary is rebuilt;
#  - no symbol versions (__libc_start_main@@GLIBC_2.34);
#  - sqlite3 and python3: heapprof top equals go tool pprof -top for every
#    sample type, unnamed frames grouped per file ([libsqlite3.so.0...]),
#    as in collapse (no bare addresses);
#  - heapprof run: one line naming the file written; a relative -o kept
#    relative to where heapprof ran when the program chdir's; a clear
#    message for a statically linked program;
#  - top: heapprof's own --text output; duplicate samples merged before
#    summing (pprof's total), INT64_MIN values as pprof shows them;
#    collapse of a profile with nothing in use shows alloc_space.
. "$(dirname "$0")/lib.sh"
oracle_need_heapprof firstminute
oracle_need_go firstminute
oracle_tmpdir
export GOCACHE=$REPO/build/gocache GOFLAGS=-mod=mod
LIB=$REPO/build/libheapprof.so
H=$HEAPPROF

# ---- C++
if ! command -v g++ >/dev/null 2>&1; then
	skip_tool firstminute.cxx g++
else
	mkdir -p "$TMPD/cxx"
	P=$TMPD/cxx/cache
	g++ -O2 -o "$P" "$REPO/tests/oracle/first_cache.cc"
	"$H" run -r 4096 -o "$TMPD/cxx.pb.gz" -- "$P" >/dev/null 2>"$TMPD/cxx.err"
	"$PPROFCHECK" dump "$TMPD/cxx.pb.gz" >"$TMPD/cxx.dump" 2>&1
	"$H" top "$TMPD/cxx.pb.gz" >"$TMPD/cxx.top" 2>&1
	"$H" collapse "$TMPD/cxx.pb.gz" >"$TMPD/cxx.folded" 2>&1
	if grep -q '^function [0-9]*: name="store::Cache::blob" system="_ZN5store5CacheI' "$TMPD/cxx.dump" &&
		grep -q ' store::Cache::blob$' "$TMPD/cxx.top" &&
		grep -q 'store::Cache::blob' "$TMPD/cxx.folded" &&
		! grep -q '_Z' "$TMPD/cxx.top" "$TMPD/cxx.folded"; then
		pass firstminute.cxx_demangled
	else
		fail firstminute.cxx_demangled "$(grep 'blob\|_Z' "$TMPD/cxx.dump" "$TMPD/cxx.top" | head -3)"
	fi
	first=$(sed -n '/flat  flat%/{n;p;q}' "$TMPD/cxx.top" | awk '{print $NF}')
	if ! grep -q 'system="_Zn[wa]' "$TMPD/cxx.dump" &&
		! grep -q 'operator new' "$TMPD/cxx.top" &&
		{ [ "$first" = main ] || [ "$first" = store::Cache::blob ] ||
			[ "$first" = store::Cache::put ]; }; then
		pass firstminute.cxx_no_operator_new
	else
		fail firstminute.cxx_no_operator_new "first row '$first'; $(grep -c 'system="_Zn[wa]' "$TMPD/cxx.dump") operator new functions"
	fi
	if grep -q "^mapping 1: .*file=\"$P\".* flags=1" "$TMPD/cxx.dump"; then
		pass firstminute.cxx_has_functions
	else
		fail firstminute.cxx_has_functions "$(grep '^mapping 1:' "$TMPD/cxx.dump")"
	fi
	if grep -q '@' "$TMPD/cxx.top" || grep '^function' "$TMPD/cxx.dump" | grep -q '@'; then
		fail firstminute.no_symbol_versions "$(grep '@' "$TMPD/cxx.top" | head -2)"
	else
		pass firstminute.no_symbol_versions
	fi
	# The binary rebuilt (other code, another build id): go tool pprof
	# must keep the profile's names, and agree with heapprof top.
	g++ -O2 -DREBUILT -o "$P" "$REPO/tests/oracle/first_cache.cc"
	go tool pprof -top "$TMPD/cxx.pb.gz" >"$TMPD/cxx.ptop" 2>/dev/null
	if grep -q ' store::Cache::blob$' "$TMPD/cxx.ptop" &&
		cmp -s "$TMPD/cxx.top" "$TMPD/cxx.ptop"; then
		pass firstminute.cxx_pprof_rebuilt_binary
	else
		fail firstminute.cxx_pprof_rebuilt_binary "$(diff "$TMPD/cxx.top" "$TMPD/cxx.ptop" | head -4 | tr '\n' '|')"
	fi
fi

# has_functions on symtab names must not stop heapprof symbolize from
# adding files and lines (DWARF) to them.
PP=$REPO/build/tests/prog_pattern
if [ -x "$PP" ]; then
	"$H" run -r 1 -o "$TMPD/pat.pb.gz" -- "$PP" >/dev/null 2>&1
	"$H" symbolize "$TMPD/pat.pb.gz" -o "$TMPD/pat.sym.pb.gz" 2>"$TMPD/sym.err"
	if "$PPROFCHECK" dump "$TMPD/pat.sym.pb.gz" 2>&1 |
		grep -q '^function [0-9]*: name="main" system="main" file="[^"]*prog_pattern.c"'; then
		pass firstminute.symbolize_completes_symtab_names
	else
		fail firstminute.symbolize_completes_symtab_names "$(head -2 "$TMPD/sym.err")"
	fi
fi

# ---- the README's "What you will see", run again (rate 1: exact values)
if [ -x "$TMPD/cxx/cache" ]; then
	g++ -O2 -o "$TMPD/cxx/cache" "$REPO/tests/oracle/first_cache.cc"
	mkdir -p "$TMPD/readme"
	(cd "$TMPD/readme" && "$H" run -r 1 -o cache.pb.gz -- ../cxx/cache >out 2>err &&
		"$H" top --sample-index alloc_space -n 6 cache.pb.gz >top 2>&1)
	awk '/^<!-- first-minute:/ { on = 1; next } on && /^```/ { if (++f == 2) exit; next } on' \
		"$REPO/README.md" >"$TMPD/readme/block"
	sed -n '/^Showing nodes/,$p' "$TMPD/readme/block" >"$TMPD/readme/want"
	sed -n '/^Showing nodes/,$p' "$TMPD/readme/top" >"$TMPD/readme/got"
	if [ -s "$TMPD/readme/want" ] && cmp -s "$TMPD/readme/want" "$TMPD/readme/got" &&
		grep -qx 'heapprof: wrote /home/me/cache.pb.gz' "$TMPD/readme/block" &&
		grep -qx "heapprof: wrote $TMPD/readme/cache.pb.gz" "$TMPD/readme/err" &&
		grep -qx '2000 2000' "$TMPD/readme/out"; then
		pass firstminute.readme_what_you_will_see
	else
		fail firstminute.readme_what_you_will_see "$(diff "$TMPD/readme/want" "$TMPD/readme/got" | head -4 | tr '\n' '|') $(cat "$TMPD/readme/err")"
	fi
fi

# ---- real programs: heapprof top = go tool pprof -top, every type. By
# default heapprof top hides the well-known allocation wrappers (sqlite3's
# and python's are among them) and prints what `go tool pprof -top
# -hide=LIST` prints (tests/cli/hide.sh); with --no-default-hide, what
# plain `go tool pprof -top` prints, checked here.
same_top() { # name profile
	for t in alloc_objects alloc_space inuse_objects inuse_space; do
		"$H" top --no-default-hide --sample-index "$t" "$2" >"$TMPD/h" 2>&1
		go tool pprof -top -sample_index="$t" "$2" >"$TMPD/p" 2>/dev/null
		if cmp -s "$TMPD/h" "$TMPD/p"; then
			pass "$1.top_$t"
		else
			fail "$1.top_$t" "$(diff "$TMPD/h" "$TMPD/p" | head -4 | tr '\n' '|')"
		fi
	done
}
if [ -x /usr/bin/sqlite3 ]; then
	cat >"$TMPD/q.sql" <<'EOF'
create table t(a, b);
with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000)
insert into t select x, randomblob(200) from c;
create index i on t(b);
select count(*) from t;
EOF
	"$H" run -r 4096 -o "$TMPD/sqlite.pb.gz" -- /usr/bin/sqlite3 "$TMPD/db" \
		<"$TMPD/q.sql" >/dev/null 2>&1
	same_top firstminute.sqlite3 "$TMPD/sqlite.pb.gz"
	"$H" top --sample-index alloc_space "$TMPD/sqlite.pb.gz" >"$TMPD/st" 2>&1
	"$H" collapse --sample-index alloc_space "$TMPD/sqlite.pb.gz" >"$TMPD/sf" 2>&1
	if grep -q ' \[libsqlite3\.so[0-9.]*\]$' "$TMPD/st" &&
		! grep -q ' 0x[0-9a-f]*$' "$TMPD/st" &&
		grep -q '\[libsqlite3\.so' "$TMPD/sf" && ! grep -q '0x[0-9a-f]' "$TMPD/sf"; then
		pass firstminute.sqlite3_unnamed_grouped
	else
		fail firstminute.sqlite3_unnamed_grouped "$(grep -m2 '0x\|libsqlite' "$TMPD/st")"
	fi
else
	skip_tool firstminute.sqlite3 /usr/bin/sqlite3 sqlite3
fi
PY=/usr/bin/python3
if [ -x "$PY" ]; then
	"$H" run -r 65536 -o "$TMPD/py.pb.gz" -- "$PY" -c \
		'import json; x = [json.dumps({"a": i}) for i in range(100000)]' >/dev/null 2>&1
	same_top firstminute.python3 "$TMPD/py.pb.gz"
else
	skip_tool firstminute.python3 "$PY" python3
fi

# ---- heapprof run: the line naming the file, relative -o, static programs
mkdir -p "$TMPD/cwd"
(cd "$TMPD/cwd" && "$H" run -- "$PY" -c 'import os; os.chdir("/"); x = [bytes(1000) for i in range(20000)]' \
	>/dev/null 2>"$TMPD/run.err")
f=$(ls "$TMPD/cwd" | head -1)
if [ -n "$f" ] && grep -q "^heapprof: wrote $TMPD/cwd/heapprof\.[0-9]*\.0\.pb\.gz\$" "$TMPD/run.err"; then
	pass firstminute.run_names_the_file
else
	fail firstminute.run_names_the_file "files: '$f', stderr: $(head -3 "$TMPD/run.err")"
fi
(cd "$TMPD/cwd" && "$H" run -o rel.pb.gz -- "$PY" -c 'import os; os.chdir("/"); x = [bytes(1000) for i in range(20000)]' \
	>/dev/null 2>&1)
if [ -s "$TMPD/cwd/rel.pb.gz" ]; then
	pass firstminute.run_relative_output_after_chdir
else
	fail firstminute.run_relative_output_after_chdir "no $TMPD/cwd/rel.pb.gz"
fi
# The program runs as heapprof's child now: its status and its signal are
# passed on, and a signal sent to heapprof alone reaches it.
"$H" run -o "$TMPD/x.pb.gz" -- sh -c 'exit 3' 2>/dev/null
s1=$?
"$H" run -o "$TMPD/x.pb.gz" -- sh -c 'kill -TERM $$' 2>/dev/null
s2=$?
if [ $s1 -eq 3 ] && [ $s2 -eq 143 ]; then
	pass firstminute.run_status_and_signals
else
	fail firstminute.run_status_and_signals "exit 3 -> $s1, TERM -> $s2"
fi
# TERM sent to heapprof alone: the program's own handler must see it (it
# writes term.got and exits 7, which heapprof passes on). Not forwarded,
# heapprof would die of it (143, what this check used to accept) and the
# program would run on. The program says when its handler is in place.
rm -f "$TMPD/term.ready" "$TMPD/term.got"
"$H" run -o "$TMPD/x.pb.gz" -- sh -c 'trap "kill \$s; echo got >\"\$0/term.got\"; exit 7" TERM
	sleep 60 & s=$!; echo ready >"$0/term.ready"; wait $s' "$TMPD" 2>/dev/null &
hp=$!
i=0
while [ ! -f "$TMPD/term.ready" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
kill -TERM $hp
wait $hp
s3=$?
if [ $s3 -eq 7 ] && [ -f "$TMPD/term.got" ]; then
	pass firstminute.run_forwards_term
else
	fail firstminute.run_forwards_term "status $s3 (want 7, the program's), handler ran: $([ -f "$TMPD/term.got" ] && echo yes || echo no)"
fi
# A program that dies of the forwarded TERM: heapprof dies of it too, and
# the program is gone (not left running, as when TERM is not forwarded).
rm -f "$TMPD/term.pid"
"$H" run -o "$TMPD/x.pb.gz" -- sh -c 'echo $$ >"$0/term.pid.tmp"; mv "$0/term.pid.tmp" "$0/term.pid"; exec sleep 60' \
	"$TMPD" 2>/dev/null &
hp=$!
i=0
while [ ! -f "$TMPD/term.pid" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
cpid=$(cat "$TMPD/term.pid" 2>/dev/null)
# the pid is written before exec: wait until it is sleep
i=0
while [ "$(cat "/proc/$cpid/comm" 2>/dev/null)" != sleep ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
kill -TERM $hp
wait $hp
s4=$?
if [ $s4 -eq 143 ] && [ -n "$cpid" ] && ! kill -0 "$cpid" 2>/dev/null; then
	pass firstminute.run_forwarded_term_kills
else
	fail firstminute.run_forwarded_term_kills "status $s4 (want 143), program $cpid $(kill -0 "$cpid" 2>/dev/null && echo still running)"
	[ -n "$cpid" ] && kill "$cpid" 2>/dev/null
fi
printf '#include <stdlib.h>\nint main(void) { return malloc(100000) == 0; }\n' >"$TMPD/st.c"
if gcc -static -o "$TMPD/static" "$TMPD/st.c" 2>/dev/null; then
	"$H" run -- "$TMPD/static" >/dev/null 2>"$TMPD/static.err"
	if [ $? -eq 0 ] && grep -q 'statically linked: LD_PRELOAD cannot profile it' "$TMPD/static.err"; then
		pass firstminute.run_static_says_so
	else
		fail firstminute.run_static_says_so "$(head -2 "$TMPD/static.err")"
	fi
else
	skip_tool firstminute.run_static_says_so "libc.a (gcc -static)" libc6-dev
fi

# ---- viewers
if [ -x "$TMPD/cxx/cache" ]; then
	"$H" run --text -r 4096 -o "$TMPD/cxx.heap" -- "$TMPD/cxx/cache" >/dev/null 2>&1
	if "$H" top "$TMPD/cxx.heap" >"$TMPD/tt" 2>&1 && grep -q ' main$' "$TMPD/tt" &&
		! grep -q 'operator new' "$TMPD/tt"; then
		pass firstminute.top_reads_text
	else
		fail firstminute.top_reads_text "$(head -3 "$TMPD/tt")"
	fi
fi
MK=$REPO/tests/cli/mkprof.py
python3 "$MK" "$TMPD/dup.pb" '{"types": [["inuse_space", "bytes"]], "samples": [
	[[["a"], ["main"]], [5000]], [[["a"], ["main"]], [-5000]],
	[[["b"], ["main"]], [3000]], [[["c"], ["main"]], [-1000]]]}'
"$H" top "$TMPD/dup.pb" >"$TMPD/h" 2>&1
go tool pprof -top "$TMPD/dup.pb" >"$TMPD/p" 2>/dev/null
if cmp -s "$TMPD/h" "$TMPD/p" && grep -q 'of 4000B total' "$TMPD/h"; then
	pass firstminute.top_merges_duplicates
else
	fail firstminute.top_merges_duplicates "$(diff "$TMPD/h" "$TMPD/p" | head -4 | tr '\n' '|')"
fi
python3 "$MK" "$TMPD/min.pb" '{"types": [["inuse_space", "bytes"]], "samples": [
	[[["a"], ["main"]], [-9223372036854775808]], [[["b"], ["main"]], [7]]]}'
"$H" top "$TMPD/min.pb" >"$TMPD/h" 2>&1
go tool pprof -top "$TMPD/min.pb" >"$TMPD/p" 2>/dev/null
same_output firstminute.top_int64_min "$TMPD/h" "$TMPD/p"
# The same under UBSan (no recovery): -INT64_MIN was undefined behaviour.
# shellcheck disable=SC2046
if [ -f "$REPO/build/gen/flame_template.h" ] &&
	${CC:-gcc} -std=c11 -D_GNU_SOURCE -O1 -fsanitize=undefined -fno-sanitize-recover=all \
		-I"$REPO/include" -I"$REPO/src/common" -I"$REPO/src/pprof" -I"$REPO/src/legacy" -I"$REPO/src/symbols" -I"$REPO/src/ops" \
		-I"$REPO/build/gen" $(ls "$REPO"/src/common/*.c "$REPO"/src/pprof/*.c "$REPO"/src/legacy/*.c "$REPO"/src/symbols/*.c \
		"$REPO"/src/ops/*.c "$REPO"/cli/*.c) -lz -lm -o "$TMPD/heapprof_ubsan" \
		2>"$TMPD/ubsan.err"; then
	"$TMPD/heapprof_ubsan" top "$TMPD/min.pb" >"$TMPD/h" 2>&1
	same_output firstminute.top_int64_min_ubsan "$TMPD/h" "$TMPD/p"
else
	if grep -q ubsan "$TMPD/ubsan.err"; then
		skip_tool firstminute.top_int64_min_ubsan "UBSan runtime" libubsan1
	else
		fail firstminute.top_int64_min_ubsan "UBSan build failed: $(head -c 200 "$TMPD/ubsan.err")"
	fi
fi
printf '#include <stdlib.h>\nint main(void) { for (int i = 0; i < 100; i++) free(malloc(10000)); return 0; }\n' >"$TMPD/fr.c"
gcc -O0 -o "$TMPD/freeall" "$TMPD/fr.c"
"$H" run -r 1 -o "$TMPD/free.pb.gz" -- "$TMPD/freeall" 2>/dev/null
"$H" collapse "$TMPD/free.pb.gz" >"$TMPD/ff" 2>"$TMPD/ff.err"
st=$?
# nothing in use: the peak (one 10000-byte block at a time; issue 16)
if [ $st -eq 0 ] && grep -q ';main 10000$' "$TMPD/ff" && grep -q 'showing peak_space' "$TMPD/ff.err"; then
	pass firstminute.collapse_nothing_in_use
else
	fail firstminute.collapse_nothing_in_use "status $st: $(head -2 "$TMPD/ff" "$TMPD/ff.err")"
fi
exit $FAILED
