#!/bin/sh
# tests/cli/symbolize.sh: `heapprof symbolize` on profiles of a program built
# here (-O2 -g, no frame pointers) with an always_inline function and a
# function in a shared library, captured by build/libheapprof.so at rate 1:
#  - names, files and lines of every location in the program and the
#    library equal addr2line -f -i (inlined frames as extra lines, callee
#    first); heapprof top shows the functions; the known lines (marked in
#    the sources) are right; mapping flags are set truthfully;
#  - go tool pprof -raw accepts the output, and agrees with its own
#    symbolization of the unsymbolized profile (the real function's name,
#    the innermost file:line) wherever it finds a line;
#  - a stripped binary is symbolized through its separate debug file, found
#    by .gnu_debuglink and by build id (--debug-dir), and through
#    --binary-path DIR/<build id>/<basename>; without the debug file it is not;
#  - a file with another build id is refused (warning, mapping untouched);
#    a missing file is warned about; samples and comments are unchanged;
#  - --raw, stdin/stdout, no partial output on a bad input, --help.
# Prints PASS name / FAIL name / SKIP name: why.
. "$(dirname "$0")/../oracle/lib.sh"
oracle_need_heapprof symbolize
LIB=$REPO/build/libheapprof.so
[ -f "$LIB" ] || { skip symbolize "$LIB not built"; exit 0; }
for t in cc objcopy addr2line readelf; do
	command -v $t >/dev/null 2>&1 || { skip_tool symbolize $t "gcc binutils"; exit 0; }
done
oracle_tmpdir; [ -n "$KEEP" ] && trap - EXIT && echo "tmp $TMPD" >&2
export GOCACHE=${GOCACHE:-$REPO/build/gocache}
HAVE_GO=0
command -v go >/dev/null 2>&1 && HAVE_GO=1 && mkdir -p "$GOCACHE"
T=$TMPD

# ---------------------------------------------------------------- program
mkdir -p "$T/app"
cat >"$T/app/lib.c" <<'EOF'
#include <stdlib.h>
__attribute__((noinline)) void *
lib_alloc(size_t n)
{
	void *p = malloc(n); /* @LIB */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
EOF
cat >"$T/app/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
void *lib_alloc(size_t n);
static inline __attribute__((always_inline)) void *
inl_alloc(size_t n)
{
	void *p = malloc(n); /* @INL */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
__attribute__((noinline)) void *
outer_fn(size_t n)
{
	void *p = inl_alloc(n); /* @OUTER */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}
static void *keep[64];
int
main(void)
{
	for (int i = 0; i < 32; i++) {
		keep[i] = outer_fn(100000); /* @MAIN_OUTER */
		keep[32 + i] = lib_alloc(300000); /* @MAIN_LIB */
	}
	return keep[5] == NULL;
}
EOF
line_of() { grep -n "@$2 " "$T/app/$1" | cut -d: -f1; }
CFL="-O2 -g -fomit-frame-pointer"
if ! cc $CFL -fPIC -shared -o "$T/app/libsymt.so" "$T/app/lib.c" ||
	! cc $CFL -o "$T/app/prog" "$T/app/prog.c" -L"$T/app" -lsymt \
		-Wl,-rpath,'$ORIGIN'; then
	fail symbolize_build "cannot build the test program"
	exit 1
fi
BID=$(readelf -n "$T/app/prog" | awk '/Build ID/{print $3}')

capture() { # binary output
	HEAPPROF_RATE=1 HEAPPROF_SYMBOLIZE=none HEAPPROF_OUT=$2 \
		LD_PRELOAD=$LIB "$1" >/dev/null 2>"$T/capture.err"
}
if ! capture "$T/app/prog" "$T/raw.pb.gz" || [ ! -s "$T/raw.pb.gz" ]; then
	fail symbolize_capture "no profile: $(head -c 300 "$T/capture.err")"
	exit 1
fi

# ---------------------------------------------------------------- helpers
# go tool pprof -raw's Locations as "ADDR M=N func file:line|func file:line"
# (one line per location, frames innermost first). -symbolize=none: what the
# file holds (go tool pprof would otherwise symbolize mappings without
# flags itself, and it never checks build ids); go_locs: with pprof's own
# symbolization.
raw_locs() { pprof_locs "$1" -symbolize=none; }
go_locs() { pprof_locs "$1"; }
pprof_locs() {
	go tool pprof -raw $2 "$1" 2>/dev/null | awk '
		/^Locations/ {on=1; next} /^Mappings/ {on=0}
		on && /^ *[0-9]+: 0x/ {if (cur) print cur; cur=$2 " " $3 " " $4 " " $5; next}
		on && NF >= 2 {cur=cur "|" $1 " " $2}
		END {if (cur) print cur}'
}
# The same from addr2line: ADDR FILE START OFFSET -> "func file:line|..."
a2l() {
	# runtime address -> file offset -> ELF vaddr (through PT_LOAD)
	off=$(( $2 - $3 + $4 ))
	va=
	for seg in $(readelf -lW "$1" | awk '$1 == "LOAD" {print $2 "," $3 "," $5}'); do
		o=${seg%%,*} rest=${seg#*,}
		v=${rest%%,*} sz=${rest#*,}
		if [ $off -ge $((o)) ] && [ $off -lt $((o + sz)) ]; then
			va=$(printf '0x%x' $((off - o + v)))
			break
		fi
	done
	[ -n "$va" ] || return 1
	addr2line -f -i -e "$1" "$va" | sed 's/ (discriminator [0-9]*)//' |
		paste -d' ' - - | paste -sd'|'
}
# mapping id -> "start limit offset file" from -raw's Mappings
raw_maps() {
	go tool pprof -raw -symbolize=none "$1" 2>/dev/null | awk '/^Mappings/ {on=1; next}
		on && /^[0-9]+:/ {split($2, a, "/"); sub(":", "", $1)
			print $1, a[1], a[2], a[3], $3, $0}'
}

# ---------------------------------------------------------------- basic
if "$HEAPPROF" symbolize "$T/raw.pb.gz" -o "$T/sym.pb.gz" 2>"$T/err"; then
	pass symbolize_runs
else
	fail symbolize_runs "$(head -c 400 "$T/err")"
fi
"$HEAPPROF" top "$T/sym.pb.gz" >"$T/top" 2>&1
ok=1
for f in lib_alloc 'inl_alloc (inline)' outer_fn main; do
	grep -q " $f\$" "$T/top" || { ok=0; echo "  missing '$f' in heapprof top" >&2; }
done
[ $ok = 1 ] && pass symbolize_top_names || { fail symbolize_top_names; cat "$T/top" >&2; }

if [ $HAVE_GO = 0 ]; then
	skip_tool symbolize_vs_pprof go golang-go
else
	raw_locs "$T/sym.pb.gz" >"$T/locs"
	raw_maps "$T/sym.pb.gz" >"$T/maps"
	if [ -s "$T/locs" ] && go tool pprof -raw "$T/sym.pb.gz" >/dev/null 2>&1; then
		pass symbolize_pprof_accepts
	else
		fail symbolize_pprof_accepts "go tool pprof -raw rejects the output"
	fi
	# Known lines: the inlined location and the library call.
	P=$T/app/prog.c L=$T/app/lib.c
	want_inl="inl_alloc $P:$(line_of prog.c INL)|outer_fn $P:$(line_of prog.c OUTER)"
	grep -qF " $want_inl" "$T/locs" && pass symbolize_inlined_lines ||
		fail symbolize_inlined_lines "no location '$want_inl' in $(cat "$T/locs")"
	grep -qF " lib_alloc $L:$(line_of lib.c LIB)" "$T/locs" &&
		grep -qF " main $P:$(line_of prog.c MAIN_OUTER)" "$T/locs" &&
		grep -qF " main $P:$(line_of prog.c MAIN_LIB)" "$T/locs" &&
		pass symbolize_known_lines || fail symbolize_known_lines "$(cat "$T/locs")"
	# Every location of prog and libsymt.so against addr2line -f -i.
	n=0 bad=0
	while read -r id start limit offset file rest; do
		case $file in */app/prog|*/app/libsymt.so) ;; *) continue ;; esac
		grep " M=$id " "$T/locs" >"$T/m.locs"
		while read -r addr m frames; do
			ours=$(echo "$frames" | sed 's/ s=[0-9]*//g')
			theirs=$(a2l "$file" "$addr" "$start" "$offset")
			n=$((n + 1))
			# addr2line prints ?? / :0 where DWARF has nothing (_start):
			# we then keep the symbol table's name without a line.
			case $theirs in *"??:"*)
				case $ours in *" :0") continue ;; esac ;; esac
			if [ "$ours" != "$theirs" ]; then
				bad=$((bad + 1))
				echo "  $addr: ours '$ours' addr2line '$theirs'" >&2
			fi
		done <"$T/m.locs"
	done <"$T/maps"
	echo "  addr2line: $n locations compared" >&2
	[ $n -ge 5 ] && [ $bad = 0 ] && pass symbolize_vs_addr2line ||
		fail symbolize_vs_addr2line "$bad of $n locations differ"
	# Flags: libsymt has DWARF for all; prog not for _start (no line).
	grep -q 'libsymt.so .*\[FN\]\[FL\]\[LN\]\[IN\]' "$T/maps" &&
		grep -q '/app/prog [0-9a-f]* \[FN\]$' "$T/maps" &&
		pass symbolize_mapping_flags || fail symbolize_mapping_flags "$(cat "$T/maps")"
	# go tool pprof's own symbolization of the input (mapping flags unset,
	# binaries present): its name is the real function's, its file:line
	# the innermost line.
	go_locs "$T/raw.pb.gz" >"$T/go.locs"
	n=0 bad=0
	while read -r addr m name fl; do
		case $fl in ""|:0) continue ;; esac
		grep -q "^$addr $m " "$T/locs" || continue
		ours=$(grep "^$addr $m " "$T/locs" | cut -d' ' -f3- | sed 's/ s=[0-9]*//g')
		case $ours in */app/*) ;; *) continue ;; esac
		first=${ours%%|*}
		last=${ours##*|}
		n=$((n + 1))
		if [ "${first#* }" != "$fl" ] || [ "${last%% *}" != "$name" ]; then
			bad=$((bad + 1))
			echo "  $addr: pprof '$name $fl' ours '$ours'" >&2
		fi
	done <"$T/go.locs"
	echo "  pprof: $n locations compared" >&2
	[ $n -ge 2 ] && [ $bad = 0 ] && pass symbolize_agrees_with_pprof ||
		fail symbolize_agrees_with_pprof "$bad of $n differ"
	# Samples and comments untouched.
	go tool pprof -raw -symbolize=none "$T/raw.pb.gz" 2>/dev/null | sed -n '1,/^Locations/p' >"$T/s1"
	go tool pprof -raw -symbolize=none "$T/sym.pb.gz" 2>/dev/null | sed -n '1,/^Locations/p' >"$T/s2"
	go tool pprof -comments "$T/sym.pb.gz" >"$T/c2" 2>/dev/null
	cmp -s "$T/s1" "$T/s2" && grep -q 'heapprof: rate=1' "$T/c2" &&
		pass symbolize_samples_kept || fail symbolize_samples_kept "samples or comments changed"
fi

# prog's locations as "func file:line|..." with addresses made relative.
prog_frames() {
	raw_locs "$1" | grep ' M=1 ' | cut -d' ' -f3- | sed 's/ s=[0-9]*//g' | sort
}

# ------------------------------------------------------- separate debug info
mkdir -p "$T/strip" "$T/dbgroot" "$T/bins/$BID"
cp "$T/app/libsymt.so" "$T/strip/"
objcopy --only-keep-debug "$T/app/prog" "$T/prog.debug"
objcopy --strip-all "$T/app/prog" "$T/strip/prog"
objcopy --add-gnu-debuglink="$T/prog.debug" "$T/strip/prog"
capture "$T/strip/prog" "$T/sraw.pb.gz"
if [ $HAVE_GO = 0 ]; then
	skip_tool symbolize_debuginfo go golang-go
elif [ ! -s "$T/sraw.pb.gz" ]; then
	fail symbolize_debuginfo "no profile of the stripped binary"
else
	# No debug file anywhere: not symbolized (the names are not in .dynsym).
	"$HEAPPROF" symbolize "$T/sraw.pb.gz" -o "$T/s0.pb.gz" --debug-dir "$T/none" 2>"$T/err"
	if prog_frames "$T/s0.pb.gz" | grep -q 'outer_fn'; then
		fail symbolize_stripped_without_debug "names appeared without debug info"
	else
		pass symbolize_stripped_without_debug
	fi
	prog_frames "$T/sym.pb.gz" >"$T/want.frames"
	# .gnu_debuglink: the debug file next to the binary.
	cp "$T/prog.debug" "$T/strip/prog.debug"
	"$HEAPPROF" symbolize "$T/sraw.pb.gz" -o "$T/s1.pb.gz" --debug-dir "$T/none" 2>"$T/err"
	prog_frames "$T/s1.pb.gz" >"$T/got.frames"
	cmp -s "$T/want.frames" "$T/got.frames" && grep -q outer_fn "$T/got.frames" &&
		pass symbolize_debuglink || { fail symbolize_debuglink; diff "$T/want.frames" "$T/got.frames" >&2; }
	# Build id: ROOT/.build-id/xx/yyyy.debug under --debug-dir.
	rm -f "$T/strip/prog.debug"
	mkdir -p "$T/dbgroot/.build-id/$(echo "$BID" | cut -c1-2)"
	cp "$T/prog.debug" "$T/dbgroot/.build-id/$(echo "$BID" | cut -c1-2)/$(echo "$BID" | cut -c3-).debug"
	"$HEAPPROF" symbolize "$T/sraw.pb.gz" -o "$T/s2.pb.gz" --debug-dir "$T/dbgroot" 2>"$T/err"
	prog_frames "$T/s2.pb.gz" >"$T/got.frames"
	cmp -s "$T/want.frames" "$T/got.frames" &&
		pass symbolize_build_id_debug || { fail symbolize_build_id_debug; diff "$T/want.frames" "$T/got.frames" >&2; }
	# --binary-path DIR/<build id>/<basename>: the unstripped binary.
	cp "$T/app/prog" "$T/bins/$BID/prog"
	"$HEAPPROF" symbolize "$T/sraw.pb.gz" -o "$T/s3.pb.gz" --debug-dir "$T/none" \
		--binary-path "$T/bins" 2>"$T/err"
	prog_frames "$T/s3.pb.gz" >"$T/got.frames"
	cmp -s "$T/want.frames" "$T/got.frames" &&
		pass symbolize_binary_path || { fail symbolize_binary_path; diff "$T/want.frames" "$T/got.frames" >&2; }
	# DIR/<basename> and DIR/<full path>, as PPROF_BINARY_PATH.
	mkdir -p "$T/bins2" "$T/bins3$T/strip"
	cp "$T/app/prog" "$T/bins2/prog"
	cp "$T/app/prog" "$T/bins3$T/strip/prog"
	ok=1
	for d in bins2 bins3; do
		"$HEAPPROF" symbolize "$T/sraw.pb.gz" -o "$T/s4.pb.gz" --debug-dir "$T/none" \
			--binary-path "$T/nonexistent:$T/$d" 2>"$T/err"
		prog_frames "$T/s4.pb.gz" >"$T/got.frames"
		cmp -s "$T/want.frames" "$T/got.frames" || { ok=0; echo "  $d" >&2; }
	done
	[ $ok = 1 ] && pass symbolize_binary_path_layouts || fail symbolize_binary_path_layouts
fi

# ---------------------------------------------------------- wrong build id
# The recorded path now holds a different build of prog (same functions,
# another build id, full debug info): it must not be used.
if [ $HAVE_GO = 1 ] && [ -s "$T/sraw.pb.gz" ]; then
	rm -rf "$T/dbgroot"
	mv "$T/strip/prog" "$T/strip/prog.orig"
	cc $CFL -Wl,--build-id=0x0123456789abcdef0123456789abcdef01234567 \
		-o "$T/strip/prog" "$T/app/prog.c" -L"$T/app" -lsymt
	"$HEAPPROF" symbolize "$T/sraw.pb.gz" -o "$T/w.pb.gz" 2>"$T/err"
	st=$?
	if [ $st = 0 ] && grep -q "strip/prog: build id [0-9a-f]* does not match the mapping's $BID; mapping left unsymbolized" "$T/err" &&
		! prog_frames "$T/w.pb.gz" | grep -q outer_fn &&
		raw_maps "$T/w.pb.gz" | grep '/strip/prog ' | grep -qv '\[FN\]' &&
		raw_maps "$T/w.pb.gz" | grep -q 'libsymt.so .*\[FN\]'; then
		pass symbolize_wrong_build_id
	else
		fail symbolize_wrong_build_id "status $st: $(cat "$T/err")"
	fi
	# Missing file: a warning, the rest symbolized.
	rm -f "$T/strip/prog"
	"$HEAPPROF" symbolize "$T/sraw.pb.gz" -o "$T/w2.pb.gz" 2>"$T/err"
	st=$?
	[ $st = 0 ] && grep -q 'strip/prog: not found; mapping left unsymbolized' "$T/err" &&
		pass symbolize_missing_file || fail symbolize_missing_file "status $st: $(cat "$T/err")"
fi

# ---------------------------------------------------------------- CLI
"$HEAPPROF" symbolize --help >"$T/help" 2>&1 && grep -q 'usage: heapprof symbolize' "$T/help" &&
	pass symbolize_help || fail symbolize_help
"$HEAPPROF" symbolize --raw - <"$T/raw.pb.gz" >"$T/stdout.pb" 2>"$T/err"
st=$?
head -c 2 "$T/stdout.pb" | od -An -tx1 | grep -q '1f 8b' && gz=1 || gz=0
[ $st = 0 ] && [ $gz = 0 ] && [ -s "$T/stdout.pb" ] && "$HEAPPROF" top "$T/stdout.pb" | grep -q outer_fn &&
	pass symbolize_stdio_raw || fail symbolize_stdio_raw "status $st gzip $gz"
head -c 2 "$T/sym.pb.gz" | od -An -tx1 | grep -q '1f 8b' && pass symbolize_gzip_default ||
	fail symbolize_gzip_default
head -c 3000 /dev/urandom >"$T/garbage"
"$HEAPPROF" symbolize "$T/garbage" -o "$T/out.pb.gz" 2>"$T/err"
st=$?
[ $st = 1 ] && [ ! -e "$T/out.pb.gz" ] && [ -z "$(ls "$T" | grep 'out.pb.gz.tmp')" ] &&
	pass symbolize_bad_input_no_output || fail symbolize_bad_input_no_output "status $st"
"$HEAPPROF" symbolize --bogus x 2>"$T/err"
[ $? = 2 ] && grep -q "unknown option '--bogus'" "$T/err" && pass symbolize_bad_option ||
	fail symbolize_bad_option
exit $FAILED
