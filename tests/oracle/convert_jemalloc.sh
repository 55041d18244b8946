#!/bin/sh
# convert_jemalloc.sh: a jemalloc heap dump made now, by Debian's
# libjemalloc2 (built with profiling) preloaded into tests/corpus/cheap.c
# (MALLOC_CONF=prof:true,lg_prof_sample:0: every allocation recorded),
# converted by `heapprof convert`, puts its flat where `jeprof --text` puts
# it: on the program's functions (site_big, site_calloc, site_small), not
# on the allocator's own frames ([libjemalloc.so.2]), in `heapprof top` and
# `go tool pprof -top` alike (issue 30, item 2).
#   convert_jemalloc_flat     no flat in libjemalloc; the three sites hold
#                             at least 95% of the flat
#   convert_jemalloc_jeprof   each site's flat% within 0.1 of jeprof's
#   convert_jemalloc_pprof    heapprof top's row for each site is go tool
#                             pprof -top's row, byte for byte
. "$(dirname "$0")/lib.sh"
oracle_need_heapprof convert_jemalloc
for t in jeprof:libjemalloc-dev go:golang-go ${CC:-gcc}:gcc; do
	if ! command -v "${t%%:*}" >/dev/null 2>&1; then
		skip_tool convert_jemalloc "${t%%:*}" "${t#*:}"
		exit 0
	fi
done
JE=$(${CC:-gcc} -print-file-name=libjemalloc.so.2)
case $JE in
/*) ;;
*) JE=/usr/lib/$(${CC:-gcc} -print-multiarch)/libjemalloc.so.2 ;;
esac
if [ ! -e "$JE" ]; then
	skip_tool convert_jemalloc libjemalloc.so.2 libjemalloc2
	exit 0
fi
oracle_tmpdir
${CC:-gcc} -O1 -g -fno-omit-frame-pointer -fno-inline -o "$TMPD/cheap" \
	"$REPO/tests/corpus/cheap.c" -ldl || { fail convert_jemalloc "cc failed"; exit 1; }
if ! MALLOC_CONF=prof:true,lg_prof_sample:0 LD_PRELOAD=$JE \
	"$TMPD/cheap" je "$TMPD/je.heap" 2>"$TMPD/err"; then
	fail convert_jemalloc "prof.dump: $(head -3 "$TMPD/err")"
	exit 1
fi
if ! "$HEAPPROF" convert -o "$TMPD/je.pb.gz" "$TMPD/je.heap" 2>"$TMPD/err"; then
	fail convert_jemalloc "convert: $(cat "$TMPD/err")"
	exit 1
fi
"$HEAPPROF" top -n 100 "$TMPD/je.pb.gz" >"$TMPD/ours" 2>"$TMPD/err" ||
	fail convert_jemalloc "top: $(cat "$TMPD/err")"
GOCACHE=$REPO/build/gocache go tool pprof -top "$TMPD/je.pb.gz" >"$TMPD/pprof" 2>/dev/null ||
	fail convert_jemalloc "go tool pprof -top failed"
(cd "$TMPD" && jeprof --text ./cheap je.heap) >"$TMPD/jeprof" 2>/dev/null ||
	fail convert_jemalloc "jeprof --text failed"

# flat% of NAME in a pprof-style (flat flat% ...) or jeprof (flat flat% ...) listing
flatpct() { awk -v n="$2" '$NF==n { v=$2; sub(/%$/, "", v); print v; exit }' "$1"; }

ok=1
for f in ours pprof; do
	je=$(awk '/libjemalloc/ && $1 != "0" { print; exit }' "$TMPD/$f")
	if [ -n "$je" ]; then
		fail convert_jemalloc_flat "$f: flat in the allocator: $je"
		ok=0
	fi
	sum=$(for s in site_big site_calloc site_small; do flatpct "$TMPD/$f" $s; done |
		awk '{ t += $1 } END { printf "%d", t }')
	if [ "${sum:-0}" -lt 95 ]; then
		fail convert_jemalloc_flat "$f: the sites hold ${sum:-0}% of the flat"
		ok=0
	fi
done
[ $ok = 1 ] && pass convert_jemalloc_flat

ok=1
for s in site_big site_calloc site_small; do
	a=$(flatpct "$TMPD/pprof" $s)
	b=$(flatpct "$TMPD/jeprof" $s)
	if [ -z "$a" ] || [ -z "$b" ] ||
		! awk -v a="$a" -v b="$b" 'BEGIN { d = a - b; exit !(d <= 0.1 && d >= -0.1) }'; then
		fail convert_jemalloc_jeprof "$s: flat ${a:-none}% here, ${b:-none}% in jeprof --text"
		ok=0
	fi
done
[ $ok = 1 ] && pass convert_jemalloc_jeprof

ok=1
for s in site_big site_calloc site_small; do
	a=$(awk -v n=$s '$NF==n' "$TMPD/ours")
	b=$(awk -v n=$s '$NF==n' "$TMPD/pprof")
	if [ -z "$a" ] || [ "$a" != "$b" ]; then
		fail convert_jemalloc_pprof "$s: heapprof top '$a', go tool pprof -top '$b'"
		ok=0
	fi
done
[ $ok = 1 ] && pass convert_jemalloc_pprof
exit $FAILED
