#!/bin/sh
# tests/cli/hide.sh: `--hide` and the default list of allocation wrappers
# (cli/hide.c) in top, collapse and flame (issue 30, item 8), on a real
# program's profile: Debian's sqlite3 CLI inserting 20,000 rows, profiled
# with `heapprof run -r 1`.
#   hide.default_top      no row of `heapprof top` is a listed wrapper
#                         (sqlite3Malloc, sqlite3Realloc, ...)
#   hide.switch_top       --no-default-hide brings sqlite3Malloc back
#   hide.pprof_default    top is byte for byte `go tool pprof -top
#                         -hide=<the default list>`
#   hide.pprof_plain      with --no-default-hide, plain `go tool pprof -top`
#   hide.pprof_user       --hide RE: `go tool pprof -top -hide=RE|<list>`
#   hide.collapse         no folded frame is sqlite3Malloc by default; it is
#                         back with --no-default-hide
#   hide.flame            the same for the flame page's names
#   hide.bad_regex        a bad --hide is one error line and status 2
#   hide.documented       heapprof(1) gives the default list verbatim
# Prints PASS name / FAIL name / SKIP name: why.
. "$(dirname "$0")/../oracle/lib.sh"
export GOCACHE=${GOCACHE:-$REPO/build/gocache}
if [ ! -x "$HEAPPROF" ]; then
	fail hide "$HEAPPROF not built (run make)"
	exit 1
fi
for t in sqlite3:sqlite3 go:golang-go; do
	if ! command -v "${t%%:*}" >/dev/null 2>&1; then
		skip_tool hide "${t%%:*}" "${t#*:}"
		exit 0
	fi
done
oracle_tmpdir
# The default list, as cli/hide.c spells it (the C string's pieces joined).
RE=$(sed -n '/^const char cli_hide_default_re\[\] =/,/;$/p' "$REPO/cli/hide.c" |
	grep -o '"[^"]*"' | tr -d '"\n')
[ -n "$RE" ] || { fail hide "no default list in cli/hide.c"; exit 1; }

cat >"$TMPD/ins.sql" <<'SQL'
CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c BLOB);
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM n WHERE i < 20000)
INSERT INTO t SELECT i, printf('row %d %s', i, hex(randomblob(40))), randomblob(100) FROM n;
CREATE INDEX tb ON t(b);
SELECT count(*) FROM t;
SQL
P=$TMPD/sq.pb.gz
if ! "$HEAPPROF" run -r 1 -o "$P" -- sqlite3 :memory: <"$TMPD/ins.sql" >"$TMPD/out" 2>"$TMPD/err" ||
	[ ! -s "$P" ]; then
	fail hide "heapprof run sqlite3: $(tail -3 "$TMPD/err")"
	exit 1
fi
SI=alloc_space
rows() { awk '/^ *flat  *flat%/ { on = 1; next } on { print $NF }' "$1"; }

"$HEAPPROF" top --sample-index $SI -n 25 "$P" >"$TMPD/def" 2>"$TMPD/err"
"$HEAPPROF" top --sample-index $SI -n 25 --no-default-hide "$P" >"$TMPD/all" 2>>"$TMPD/err"
w=$(rows "$TMPD/def" | grep -E "$RE" | head -3 | tr '\n' ' ')
if [ -s "$TMPD/def" ] && [ -z "$w" ] && rows "$TMPD/def" | grep -q '^sqlite3'; then
	pass hide.default_top
else
	fail hide.default_top "wrappers in the top rows: '$w' $(head -2 "$TMPD/err")"
fi
if rows "$TMPD/all" | grep -qx sqlite3Malloc; then
	pass hide.switch_top
else
	fail hide.switch_top "no sqlite3Malloc row with --no-default-hide: $(head -2 "$TMPD/err")"
fi

"$HEAPPROF" top --sample-index $SI "$P" >"$TMPD/ours" 2>/dev/null
go tool pprof -top -sample_index=$SI -hide="$RE" "$P" >"$TMPD/theirs" 2>/dev/null
same_output hide.pprof_default "$TMPD/ours" "$TMPD/theirs"
"$HEAPPROF" top --sample-index $SI --no-default-hide "$P" >"$TMPD/ours" 2>/dev/null
go tool pprof -top -sample_index=$SI "$P" >"$TMPD/theirs" 2>/dev/null
same_output hide.pprof_plain "$TMPD/ours" "$TMPD/theirs"
"$HEAPPROF" top --sample-index $SI --hide 'Vdbe|Btree' "$P" >"$TMPD/ours" 2>/dev/null
go tool pprof -top -sample_index=$SI -hide="Vdbe|Btree|$RE" "$P" >"$TMPD/theirs" 2>/dev/null
same_output hide.pprof_user "$TMPD/ours" "$TMPD/theirs"

"$HEAPPROF" collapse --sample-index $SI "$P" >"$TMPD/c_def" 2>/dev/null
"$HEAPPROF" collapse --sample-index $SI --no-default-hide "$P" >"$TMPD/c_all" 2>/dev/null
if [ -s "$TMPD/c_def" ] && ! grep -q ';sqlite3Malloc[; ]' "$TMPD/c_def" &&
	grep -q ';sqlite3Malloc[; ]' "$TMPD/c_all"; then
	pass hide.collapse
else
	fail hide.collapse "sqlite3Malloc frames: $(grep -c sqlite3Malloc "$TMPD/c_def") by default, $(grep -c sqlite3Malloc "$TMPD/c_all") with --no-default-hide"
fi

"$HEAPPROF" flame -o "$TMPD/f_def.html" "$P" 2>/dev/null
"$HEAPPROF" flame --no-default-hide -o "$TMPD/f_all.html" "$P" 2>/dev/null
if [ -s "$TMPD/f_def.html" ] && ! grep -q '"sqlite3Malloc"' "$TMPD/f_def.html" &&
	grep -q '"sqlite3Malloc"' "$TMPD/f_all.html"; then
	pass hide.flame
else
	fail hide.flame "sqlite3Malloc in the page: default $(grep -c '"sqlite3Malloc"' "$TMPD/f_def.html" 2>/dev/null), switch $(grep -c '"sqlite3Malloc"' "$TMPD/f_all.html" 2>/dev/null)"
fi

"$HEAPPROF" top --hide '(' "$P" >"$TMPD/out" 2>"$TMPD/err"
st=$?
if [ $st -eq 2 ] && [ "$(wc -l <"$TMPD/err")" -eq 1 ] && grep -q "^heapprof: top: --hide '('" "$TMPD/err" &&
	[ ! -s "$TMPD/out" ]; then
	pass hide.bad_regex
else
	fail hide.bad_regex "status $st: $(head -2 "$TMPD/err")"
fi

# heapprof(1) holds the list verbatim (groff escapes: \e for a backslash, \- for -)
if sed 's/\\e/\\/g; s/\\-/-/g; s/\\&//g' "$REPO/man/heapprof.1" | tr -d '\n' | grep -qF -- "$RE"; then
	pass hide.documented
else
	fail hide.documented "man/heapprof.1 does not give the default list as cli/hide.c has it"
fi
exit $FAILED
