#!/bin/sh
# tests/cli/symbolize_opts.sh: options the man page and README promise,
# on a C++ program built here (store::Cache::blob(unsigned long) calls
# malloc), captured with addresses only (HEAPPROF_SYMBOLIZE=none):
#  - `heapprof symbolize` names the function as pprof shows it
#    (store::Cache::blob), --demangle full with its parameters
#    (store::Cache::blob(unsigned long)), --demangle none mangled
#    (_ZN5store5Cache4blobEm); the system name stays mangled in each;
#  - a profile symbolized already (files and lines) is left alone unless
#    --force: symbolizing the --demangle none output again with --demangle
#    full changes nothing, with --force it gives the full names;
#  - `heapprof flame --title TEXT` puts TEXT (quotes, <, &, UTF-8) in the
#    page's data, from which the page sets document.title; without it the
#    title is the file's name.
# Prints PASS name / FAIL name / SKIP name: why.
. "$(dirname "$0")/../oracle/lib.sh"
oracle_need_heapprof symbolize_opts
oracle_need_go symbolize_opts
LIB=$REPO/build/libheapprof.so
[ -f "$LIB" ] || { skip symbolize_opts "$LIB not built"; exit 0; }
CXX=${CXX:-c++}
command -v "$CXX" >/dev/null 2>&1 || { skip_tool symbolize_opts "$CXX" g++; exit 0; }
oracle_tmpdir
T=$TMPD

cat >"$T/p.cc" <<'EOF'
#include <cstdlib>
namespace store {
struct Cache {
	void *blob(unsigned long n);
};
}
__attribute__((noinline)) void *
store::Cache::blob(unsigned long n)
{
	void *p = std::malloc(n);
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
int
main()
{
	store::Cache c;
	for (int i = 0; i < 100; i++)
		c.blob(1000 + i);
	return 0;
}
EOF
if ! "$CXX" -g -O0 -o "$T/p" "$T/p.cc" 2>"$T/cc.err"; then
	fail symbolize_opts.build "$(head -3 "$T/cc.err")"
	exit 1
fi
# Depth 2: blob and main, both with DWARF lines, so that a symbolized
# mapping of p is flagged as having files and lines (_start has none).
HEAPPROF_RATE=1 HEAPPROF_DEPTH=2 HEAPPROF_SYMBOLIZE=none HEAPPROF_OUT="$T/raw.pb.gz" \
	LD_PRELOAD="$LIB" "$T/p" 2>"$T/run.err"
[ -s "$T/raw.pb.gz" ] || { fail symbolize_opts.capture "$(head -3 "$T/run.err")"; exit 1; }

# blob_fn FILE: the function record ("name|system") that the locations'
# lines name for blob, from the oracle (unreferenced records left aside).
blob_fn() {
	"$PPROFCHECK" dump "$1" 2>/dev/null | awk '
		/^function / { id = $2; sub(":", "", id)
			if (match($0, /name="[^"]*" system="[^"]*"/)) {
				r = substr($0, RSTART, RLENGTH)
				gsub(/name="|" system="/, "|", r); gsub(/"/, "", r)
				fn[id] = substr(r, 2) } }
		/^location / { l = $0; sub(/.*lines=\[/, "", l); sub(/\].*/, "", l)
			n = split(l, a, " ")
			for (i = 1; i <= n; i++) { split(a[i], b, ":"); used[b[1]] = 1 } }
		END { for (id in used) if (fn[id] ~ /blob/) print fn[id] }'
}
# has_lines FILE: p's mapping is flagged as having files and lines.
has_lines() { "$PPROFCHECK" dump "$1" 2>/dev/null | grep -q "file=\"$T/p\" .* flags=111"; }
MANGLED=_ZN5store5Cache4blobEm

# sym_case NAME EXPECTED_NAME ARGS...: symbolize raw.pb.gz with ARGS.
sym_case() {
	n=$1 want=$2
	shift 2
	"$HEAPPROF" symbolize "$@" -o "$T/$n.pb.gz" "$T/raw.pb.gz" 2>"$T/$n.err"
	got=$(blob_fn "$T/$n.pb.gz")
	if [ "$got" = "$want|$MANGLED" ]; then
		pass "symbolize.demangle.$n"
	else
		fail "symbolize.demangle.$n" "function '$got', expected '$want|$MANGLED'; $(head -2 "$T/$n.err")"
	fi
}
sym_case simple 'store::Cache::blob'
sym_case simple_named 'store::Cache::blob' --demangle simple
sym_case full 'store::Cache::blob(unsigned long)' --demangle full
sym_case none "$MANGLED" --demangle none

# --force: none.pb.gz has files and lines (flagged so), mangled names.
if has_lines "$T/none.pb.gz"; then
	"$HEAPPROF" symbolize --demangle full -o "$T/again.pb.gz" "$T/none.pb.gz" 2>"$T/again.err"
	"$HEAPPROF" symbolize --force --demangle full -o "$T/forced.pb.gz" "$T/none.pb.gz" 2>"$T/forced.err"
	a=$(blob_fn "$T/again.pb.gz")
	f=$(blob_fn "$T/forced.pb.gz")
	[ "$a" = "$MANGLED|$MANGLED" ] && pass symbolize.no_force_leaves_symbolized ||
		fail symbolize.no_force_leaves_symbolized "function '$a' (expected untouched: '$MANGLED|$MANGLED')"
	[ "$f" = "store::Cache::blob(unsigned long)|$MANGLED" ] && pass symbolize.force_resymbolizes ||
		fail symbolize.force_resymbolizes "function '$f'; $(head -2 "$T/forced.err")"
else
	fail symbolize.no_force_leaves_symbolized "p's mapping not flagged with files and lines: $("$PPROFCHECK" dump "$T/none.pb.gz" | grep '^mapping' | head -2)"
fi

# flame --title: the page's data carries the title; document.title is set
# from it. Default: the file's name.
# title_of HTML: the "title" of the page's JSON data.
title_of() {
	python3 - "$1" <<'EOP'
import json, re, sys
h = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script id="heapprof-data" type="application/json">(.*?)</script>', h, re.S)
print(json.loads(m.group(1))["title"] if m else "NO DATA")
EOP
}
TITLE='Cache "blob" <b> & été'
"$HEAPPROF" flame --title "$TITLE" -o "$T/t.html" "$T/simple.pb.gz" 2>"$T/flame.err"
got=$(title_of "$T/t.html")
if [ "$got" = "$TITLE" ] && ! grep -q '<b>' "$T/t.html" &&
   grep -q 'document.title = title' "$T/t.html"; then
	pass flame.title
else
	fail flame.title "title '$got'; $(head -2 "$T/flame.err")"
fi
"$HEAPPROF" flame -o "$T/d.html" "$T/simple.pb.gz" 2>/dev/null
got=$(title_of "$T/d.html")
[ "$got" = simple.pb.gz ] && pass flame.title_default || fail flame.title_default "title '$got'"
exit $FAILED
