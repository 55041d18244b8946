#!/bin/sh
# tests/cli/flame.sh: `heapprof flame` (self-contained HTML flame graph).
#  - errors: a clear message, a nonzero status, no output file;
#  - the page is self-contained: no external script, style, font or URL,
#    a CSP that forbids the network, the data escaped so that a name with
#    '</script>' stays text; the embedded values add up to pprof's totals;
#  - in headless Chromium (Debian's chromium, driven by playwright-core
#    from npm, installed under build/npm): it renders, the sample-type
#    switch changes the total, search highlights exactly the matching
#    frames with the right share, zoom and reset work, tooltips show, the
#    --base diff colors grown frames red and shrunk ones blue, no console
#    error, no request but file:// (tests/cli/flame_check.mjs);
#  - speedscope from npm loads our pprof output and our folded output in the
#    same browser.
# Screenshots: build/flame/*.png. Prints PASS name / FAIL name / SKIP name: why.
. "$(dirname "$0")/../oracle/lib.sh"
oracle_need_heapprof flame
oracle_tmpdir
SHOTS=$REPO/build/flame
mkdir -p "$SHOTS"

# ---- errors and options
"$HEAPPROF" flame --help >"$TMPD/help" 2>&1 && grep -q 'usage: heapprof flame' "$TMPD/help" &&
	pass flame_help || fail flame_help "--help"
"$HEAPPROF" --help | grep -q '^  flame ' && pass flame_listed || fail flame_listed
err_case() { # name expected-status expected-stderr-regex args...
	name=$1 want=$2 re=$3
	shift 3
	"$HEAPPROF" flame "$@" >"$TMPD/out" 2>"$TMPD/err"
	st=$?
	if [ "$st" -eq "$want" ] && grep -Eq -e "$re" "$TMPD/err" && [ ! -s "$TMPD/out" ] &&
		[ ! -e "$TMPD/bad.html" ]; then
		pass "$name"
	else
		fail "$name" "status $st, stderr: $(head -c 300 "$TMPD/err")"
	fi
}
head -c 3000 /dev/urandom >"$TMPD/garbage"
err_case flame_err_no_output 2 '-o OUT is required' "$TMPD/garbage"
err_case flame_err_garbage 1 'flame: .*garbage: ' -o "$TMPD/bad.html" "$TMPD/garbage"
err_case flame_err_missing 1 'No such file' -o "$TMPD/bad.html" "$TMPD/nonexistent"
err_case flame_err_option 2 "unknown option '--bogus'" --bogus x
err_case flame_err_nofile 2 'usage: heapprof flame' -o "$TMPD/bad.html"
err_case flame_err_two_files 2 'one profile at a time' -o "$TMPD/bad.html" a b
err_case flame_err_base_noarg 2 '--base needs a value' x --base
oracle_need_corpus flame_corpus
PLAIN=$CORPUS/go/go_heap_basic.pb.gz
NEW=$CORPUS/go/go_heap_delta_2.pb.gz
OLD=$CORPUS/go/go_heap_delta_1.pb.gz
CPU=$CORPUS/go/go_cpu_labels.pb.gz
for f in "$PLAIN" "$NEW" "$OLD" "$CPU"; do
	if [ ! -f "$f" ]; then
		skip_corpus flame_corpus "${f#$CORPUS/}"
		exit $FAILED
	fi
done
err_case flame_err_base_garbage 1 'flame: .*garbage: ' -o "$TMPD/bad.html" --base "$TMPD/garbage" "$PLAIN"
err_case flame_err_base_types 1 'no sample type in common' -o "$TMPD/bad.html" --base "$CPU" "$PLAIN"
err_case flame_err_sample_index 2 "unknown sample type 'nope'" -o "$TMPD/bad.html" --sample-index nope "$PLAIN"
# Legacy text (heapprof run --text) is read, as go tool pprof reads it.
if "$HEAPPROF" flame -o "$TMPD/legacy.html" "$CORPUS/go/go_heap_basic.txt" 2>"$TMPD/lterr" &&
	[ -s "$TMPD/legacy.html" ]; then
	pass flame_legacy_text
else
	fail flame_legacy_text "$(head -3 "$TMPD/lterr")"
fi
if [ -n "$(ls "$TMPD" | grep 'bad\.html')" ]; then
	fail flame_no_partial_output "$(ls "$TMPD")"
else
	pass flame_no_partial_output
fi

# ---- the pages
D=$SHOTS/pages
rm -rf "$D"
mkdir -p "$D"
ok=1
"$HEAPPROF" flame -o "$D/plain.html" "$PLAIN" || ok=0
"$HEAPPROF" flame -o "$D/diff.html" --base "$OLD" "$NEW" || ok=0
"$HEAPPROF" flame -o - --base "$NEW" "$OLD" >"$D/diff_rev.html" || ok=0
python3 "$REPO/tests/cli/mkprof.py" "$D/escape.pb" '{"types": [["alloc_space", "bytes"], ["inuse_space", "bytes"]],
 "samples": [[[["leaf</script><script>alert(1)</script>"], ["mid;dle \"q\" & <b>x</b>"], ["main"]], [100, 50]],
             [[["inl_inner", "inl_outer"], ["main"]], [7, 3]],
             [[["\u00fcn\u00ef\u2028code"], ["main"]], [1, 1]]]}' || ok=0
"$HEAPPROF" flame -o "$D/escape.html" - <"$D/escape.pb" || ok=0
# a diff where one function grew and another shrank
python3 "$REPO/tests/cli/mkprof.py" "$D/mixed_new.pb" '{"types": [["inuse_space", "bytes"]],
 "samples": [[[["grower"], ["main"]], [900000]], [[["shrinker"], ["main"]], [100000]], [[["same"], ["main"]], [5000]]]}' || ok=0
python3 "$REPO/tests/cli/mkprof.py" "$D/mixed_old.pb" '{"types": [["inuse_space", "bytes"]],
 "samples": [[[["grower"], ["main"]], [100000]], [[["shrinker"], ["main"]], [600000]], [[["same"], ["main"]], [5000]]]}' || ok=0
"$HEAPPROF" flame -o "$D/mixed.html" --base "$D/mixed_old.pb" "$D/mixed_new.pb" || ok=0
[ $ok = 1 ] && pass flame_writes_pages || fail flame_writes_pages "heapprof flame failed"

# collapse on the same hostile names: ';' -> ':', inlined frames expanded
"$HEAPPROF" collapse --sample-index alloc_space "$D/escape.pb" >"$TMPD/esc.folded"
if grep -qx 'main;mid:dle "q" & <b>x</b>;leaf</script><script>alert(1)</script> 100' "$TMPD/esc.folded" &&
	grep -qx 'main;inl_outer;inl_inner 7' "$TMPD/esc.folded"; then
	pass collapse_escapes_and_inlines
else
	fail collapse_escapes_and_inlines "$(cat "$TMPD/esc.folded")"
fi

# self-contained: nothing fetched, data cannot close its script
sc=1
for p in "$D"/*.html; do
	# the only URL is the SVG namespace
	if grep -Eio '(src|href)=|<link|@import|url\(|https?://[A-Za-z0-9./_-]*' "$p" | grep -v '^http://www.w3.org/2000/svg$' | grep -q .; then
		sc=0
		echo "  $p: $(grep -Eio '(src|href)=|<link|@import|url\(|https?://[A-Za-z0-9./_-]*' "$p" | head -3)" >&2
	fi
	grep -q "Content-Security-Policy" "$p" || sc=0
	[ "$(grep -c '</script>' "$p")" -eq 2 ] || sc=0
done
[ $sc = 1 ] && pass flame_self_contained || fail flame_self_contained "external references or unescaped data"

# the embedded data adds up to pprof's totals, every type, both profiles
oracle_need_go flame_vs_pprof
extract() { # html -> the JSON data
	sed -n '/<script id="heapprof-data"/,/<\/script>/p' "$1" |
		sed '1s/.*application\/json">//; $s/<\/script>.*//'
}
data_totals() { # json file, key -> one sum per type
	python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); v=d.get(sys.argv[2]) or []
print(" ".join(str(sum(r[i] for r in v)) for i in range(len(d["types"]))))' "$1" "$2"
}
want_totals() { "$PPROFCHECK" totals "$1" | grep -v '^samples ' | awk '{ printf "%s%s", s, $2; s = " " } END { print "" }'; }
extract "$D/plain.html" >"$TMPD/plain.json"
extract "$D/diff.html" >"$TMPD/diff.json"
if [ "$(data_totals "$TMPD/plain.json" values)" = "$(want_totals "$PLAIN")" ] &&
	[ "$(data_totals "$TMPD/diff.json" values)" = "$(want_totals "$NEW")" ] &&
	[ "$(data_totals "$TMPD/diff.json" baseValues)" = "$(want_totals "$OLD")" ]; then
	pass flame_data_totals
else
	fail flame_data_totals "plain $(data_totals "$TMPD/plain.json" values) vs $(want_totals "$PLAIN")"
fi

# ---- in the browser
# HEAPPROF_CHROMIUM: another browser binary ('' acts as if none were installed)
CHROMIUM=${HEAPPROF_CHROMIUM-$(command -v chromium || command -v chromium-browser)}
if [ -z "$CHROMIUM" ]; then
	skip_tool flame_browser chromium
	exit $FAILED
fi
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
	skip_tool flame_browser "node and npm" "nodejs npm"
	exit $FAILED
fi
NPM=$REPO/build/npm # npm packages for the tests, never committed
mkdir -p "$NPM"
[ -f "$NPM/package.json" ] || echo '{"private": true}' >"$NPM/package.json"
: >"$TMPD/npm.log"
for pkg in playwright-core speedscope; do
	[ -f "$NPM/node_modules/$pkg/package.json" ] ||
		(cd "$NPM" && timeout 300 npm install --no-audit --no-fund --loglevel=error \
			"$pkg") >>"$TMPD/npm.log" 2>&1
done
if [ ! -f "$NPM/node_modules/playwright-core/package.json" ]; then
	echo "  npm install playwright-core: $(tail -c 300 "$TMPD/npm.log")" >&2
	skip_tool flame_browser "playwright-core (npm install failed)" "npm's playwright-core"
	exit $FAILED
fi
SPEEDSCOPE=$NPM/node_modules/speedscope/dist/release/index.html
if [ -f "$SPEEDSCOPE" ]; then
	# our pprof output (heapprof merge's writer) and our folded output
	"$HEAPPROF" merge -o "$D/ours.pb.gz" "$PLAIN" &&
		"$HEAPPROF" collapse "$PLAIN" >"$D/ours.folded.txt" || SPEEDSCOPE=
	[ -n "$SPEEDSCOPE" ] || fail speedscope_inputs "heapprof merge/collapse failed"
else
	echo "  npm install speedscope: $(tail -c 300 "$TMPD/npm.log")" >&2
	skip_tool speedscope "speedscope (npm install failed)" "npm's speedscope"
	SPEEDSCOPE=
fi
export HEAPPROF PPROFCHECK CHROMIUM SHOTS PLAIN NEW OLD SPEEDSCOPE MIXED_NEW="$D/mixed_new.pb" MIXED_OLD="$D/mixed_old.pb" NODE_MODULES="$NPM/node_modules"
if ! python3 "$REPO/tests/cli/flame_cases.py" "$D"; then
	fail flame_browser "flame_cases.py failed"
	exit 1
fi
timeout 300 node "$REPO/tests/cli/flame_check.mjs" "$D/cases.json" >"$TMPD/browser.out" 2>"$TMPD/browser.err"
rc=$?
cat "$TMPD/browser.out"
grep -q '^FAIL ' "$TMPD/browser.out" && cat "$TMPD/browser.err" >&2
if [ $rc -ne 0 ] || grep -q '^FAIL ' "$TMPD/browser.out" || ! grep -q '^PASS ' "$TMPD/browser.out"; then
	[ $rc -ne 0 ] && fail flame_browser "flame_check.mjs exited $rc: $(tail -c 400 "$TMPD/browser.err")"
	FAILED=1
fi
exit $FAILED
