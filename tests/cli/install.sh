#!/bin/sh
# tests/cli/install.sh: heapprof as an installed program and library.
# `make install DESTDIR=STAGE PREFIX=/usr`, then the tree is moved
# elsewhere (nothing may depend on the build tree or on the prefix) and:
#  - install.layout: every file README's install section lists is there;
#  - install.run / install.python: the installed `heapprof run` finds its
#    library relative to itself and profiles a program (and /usr/bin/python3
#    -c 1); the profile decodes (`heapprof top`) and its comments name the
#    version and commit (`heapprof --version`'s);
#  - install.library_env: HEAPPROF_LIBRARY overrides the search (a copied
#    lone binary works with it, fails with status 2 and a message naming
#    the variable without it; a missing HEAPPROF_LIBRARY is named);
#  - install.tools_{shared,static}: a program of heapprof_delta_* built
#    with `pkg-config heapprof-tools` (shared; static through its
#    static_libs variable) runs, writes no profile, defines no malloc (nm)
#    and has no heapprof_active; install.tools_contrast: the same program
#    linked with libheapprof.a, the way the issue describes, does define
#    malloc (what the check above catches);
#  - install.prof_{shared,static}: a program built with `pkg-config
#    heapprof` (--libs; static_libs) is profiled: heapprof_active() is 1
#    and its exit profile decodes with its allocation site in it;
#  - install.man_*: both man pages render with groff -ww without a warning,
#    heapprof(1) has a section for every subcommand of `heapprof --help`
#    and names every option of every `heapprof CMD --help`; libheapprof(3)
#    names every HEAPPROF_* variable the sources read and every function
#    of heapprof.h;
#  - install.uninstall: `make uninstall` with the same DESTDIR leaves no
#    file behind.
# Prints PASS name / FAIL name / SKIP name: why.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
FAILED=0
pass() { echo "PASS install.$1"; }
fail() { echo "FAIL install.$1"; [ -n "$2" ] && echo "  install.$1: $2" >&2; FAILED=1; }
skip() { echo "SKIP install.$1: $2"; }
skip_tool() { echo "SKIP install.$1: missing tool $2 (Debian package ${3:-$2}; make test installs it)"; }

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
CC=${CC:-gcc}

if ! make -C "$REPO" --no-print-directory install DESTDIR="$T/stage" PREFIX=/usr \
	>"$T/make.log" 2>&1; then
	fail make_install "$(tail -5 "$T/make.log")"
	exit 1
fi
pass make_install
mkdir -p "$T/moved"
mv "$T/stage" "$T/moved/tree"
R=$T/moved/tree/usr

# ---- layout: README's install section (the Debian package's list) minus
# what only the package adds; pkg-config files in LIBDIR/pkgconfig and man
# pages not gzip'd here.
sed -n '/^## Installing/,/^## /p' "$REPO/README.md" | sed -n 's/^    \(\/usr\/[^ ]*\).*/\1/p' >"$T/readme.list"
missing=""
n=0
while read -r f; do
	case $f in
	*/copyright | */changelog.gz | */lintian/*) continue ;;
	*/pkgconfig/*) f=/usr/lib/pkgconfig/${f##*/} ;;
	*.gz) f=${f%.gz} ;;
	esac
	n=$((n + 1))
	[ -e "$T/moved/tree$f" ] || missing="$missing $f"
done <"$T/readme.list"
if [ "$n" -ge 12 ] && [ -z "$missing" ]; then
	pass layout
else
	fail layout "$n paths in README's list; missing:$missing"
fi

HP=$R/bin/heapprof
VER=$("$HP" --version 2>&1)
case $VER in
"heapprof "[0-9]*.[0-9]*" (commit "*")") pass version ;;
*) fail version "--version said: $VER" ;;
esac

# ---- the installed `heapprof run`, found library relative to itself
mkdir -p "$T/run"
# A plain program (no heapprof header or library).
cat >"$T/plain.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) static void *plain_site(size_t n)
{ void *p = malloc(n); if (p) memset(p, 3, n); return p; }
int main(void) { static void *k[16]; for (int i = 0; i < 16; i++) k[i] = plain_site(1 << 20); return !k[15]; }
EOF
$CC -O1 -g -o "$T/plain" "$T/plain.c"
(cd "$T/run" && env -u HEAPPROF_LIBRARY "$HP" run -r 1 -o "$T/run/p.%p.pb.gz" -- "$T/plain") >"$T/run.out" 2>&1
st=$?
f=$(ls "$T"/run/p.*.pb.gz 2>/dev/null | head -n 1)
if [ "$st" -eq 0 ] && [ -n "$f" ] && "$HP" top "$f" >"$T/top" 2>&1 && grep -q plain_site "$T/top"; then
	pass run
else
	fail run "status $st, file '$f': $(head -c 400 "$T/run.out") $(head -c 300 "$T/top" 2>/dev/null)"
fi
# The profile's comments name the version (its first comment).
if [ -n "$f" ] && gzip -dc "$f" | grep -aqF "$VER"; then
	pass profile_version
else
	fail profile_version "'$VER' not in the profile's strings"
fi
if [ -x /usr/bin/python3 ]; then
	rm -rf "$T/py" && mkdir -p "$T/py"
	# -r 65536: `python3 -c 1` allocates ~1 MB; at the default rate 1 run
	# in 8 went unsampled, and a process with no samples writes no profile
	# (failed in stop 27's full run; at 64 KiB: ~1 run in 10^7).
	(cd "$T/py" && "$HP" run -r 65536 -o "$T/py/py.%p.pb.gz" -- /usr/bin/python3 -c 1) >"$T/py.out" 2>&1
	st=$?
	f=$(ls "$T"/py/py.*.pb.gz 2>/dev/null | head -n 1)
	if [ "$st" -eq 0 ] && [ -n "$f" ] && "$HP" top "$f" >/dev/null 2>&1; then
		pass python
	else
		fail python "status $st: $(head -c 300 "$T/py.out")"
	fi
else
	skip_tool python /usr/bin/python3 python3
fi

# ---- HEAPPROF_LIBRARY: a lone copy of the binary
mkdir -p "$T/lone"
cp "$HP" "$T/lone/heapprof"
env -u HEAPPROF_LIBRARY "$T/lone/heapprof" run -- "$T/plain" >"$T/lone.out" 2>&1
st1=$?
(cd "$T/lone" && HEAPPROF_LIBRARY=$R/lib/heapprof/libheapprof.so "$T/lone/heapprof" run -r 1 \
	-o "$T/lone/l.pb.gz" -- "$T/plain") >"$T/lone2.out" 2>&1
st2=$?
HEAPPROF_LIBRARY=$T/no/such.so "$T/lone/heapprof" run -- "$T/plain" >"$T/lone3.out" 2>&1
st3=$?
if [ "$st1" -eq 2 ] && grep -q HEAPPROF_LIBRARY "$T/lone.out" && [ "$st2" -eq 0 ] &&
	[ -s "$T/lone/l.pb.gz" ] && [ "$st3" -eq 2 ] && grep -q "HEAPPROF_LIBRARY='$T/no/such.so'" "$T/lone3.out"; then
	pass library_env
else
	fail library_env "without: status $st1 ($(head -c 200 "$T/lone.out")); with: status $st2 ($(head -c 200 "$T/lone2.out")); a missing one: status $st3 ($(head -c 200 "$T/lone3.out"))"
fi

# ---- a relative HEAPPROF_LIBRARY reaches processes that run elsewhere:
# LD_PRELOAD took it as it was, so a child in another directory (make -C,
# a cd) was silently not profiled.
mkdir -p "$T/rel/sub"
(cd "$T" && HEAPPROF_LIBRARY=moved/tree/usr/lib/heapprof/libheapprof.so "$T/lone/heapprof" run -r 1 \
	-o "$T/rel/r.%p.pb.gz" -- sh -c "cd '$T/rel/sub' && exec '$T/plain'") >"$T/rel.out" 2>&1
st=$?
if [ "$st" -eq 0 ] && [ "$(ls "$T/rel" | grep -c 'pb\.gz$')" -ge 1 ] &&
   ! grep -q 'cannot be preloaded' "$T/rel.out"; then
	pass library_env_relative
else
	fail library_env_relative "status $st, files: $(ls "$T/rel" | tr '\n' ' '): $(head -c 300 "$T/rel.out")"
fi

# ---- pkg-config, pointed at the moved tree
PKG="pkg-config --define-variable=prefix=$R"
export PKG_CONFIG_PATH=$R/lib/pkgconfig
export PKG_CONFIG_LIBDIR=$R/lib/pkgconfig
if ! $PKG --exists heapprof heapprof-tools; then
	fail pkgconfig "pkg-config finds no heapprof / heapprof-tools in $R/lib/pkgconfig"
fi

# A program of the tool API: runs, writes no profile, no malloc of ours.
tool_check() { # name binary
	rm -rf "$T/tw" && mkdir -p "$T/tw"
	out=$(cd "$T/tw" && LD_LIBRARY_PATH=$R/lib HEAPPROF_RATE=1 HEAPPROF_OUT="$T/tw/t.%p.pb.gz" \
		HEAPPROFILE="$T/tw/gp" "$2" 2>&1)
	st=$?
	defs=$(nm "$2" 2>/dev/null | grep -E ' [TtWwi] (malloc|free|calloc|realloc)$')
	left=$(ls -A "$T/tw")
	if [ "$st" -eq 0 ] && [ "$out" = "tool ok profiler=0" ] && [ -z "$defs" ] && [ -z "$left" ]; then
		pass "$1"
	else
		fail "$1" "status $st, output '$out', malloc defined: '$defs', files written: '$left'"
	fi
}
if $CC -O1 -o "$T/tool_shared" "$REPO/tests/cli/install_tool.c" \
	$($PKG --cflags --libs heapprof-tools) -ldl 2>"$T/cc.err"; then
	tool_check tools_shared "$T/tool_shared"
	# The shared tool library itself defines no malloc and needs no
	# capture symbol.
	if nm -D --defined-only "$R/lib/libheapprof-tools.so" | grep -Eq ' (malloc|free|calloc|realloc|heapprof_active)$'; then
		fail tools_so "libheapprof-tools.so defines malloc or heapprof_active"
	else
		pass tools_so
	fi
else
	fail tools_shared "build: $(head -c 400 "$T/cc.err")"
fi
if $CC -O1 -o "$T/tool_static" "$REPO/tests/cli/install_tool.c" \
	$($PKG --cflags heapprof-tools) $($PKG --variable=static_libs heapprof-tools) -ldl 2>"$T/cc.err"; then
	if readelf -d "$T/tool_static" | grep -q 'libheapprof'; then
		fail tools_static "the static build needs a shared libheapprof*"
	else
		tool_check tools_static "$T/tool_static"
	fi
else
	fail tools_static "build: $(head -c 400 "$T/cc.err")"
fi
# Contrast: the whole profiler archive for the same calls interposes malloc
# (pb_write.o's free pulls interpose.o in), so the check above can fail.
if $CC -O1 -o "$T/tool_whole" "$REPO/tests/cli/install_tool.c" -I"$R/include" \
	"$R/lib/libheapprof.a" -lz -lm -ldl -lpthread 2>"$T/cc.err" &&
	nm "$T/tool_whole" | grep -Eq ' [TtWw] malloc$'; then
	pass tools_contrast
else
	fail tools_contrast "linking libheapprof.a for the tool calls did not define malloc: $(head -c 300 "$T/cc.err")"
fi

# A program linked with the profiler: profiled.
prof_check() { # name binary
	rm -rf "$T/pw" && mkdir -p "$T/pw"
	out=$(cd "$T/pw" && LD_LIBRARY_PATH=$R/lib HEAPPROF_RATE=1 HEAPPROF_OUT="$T/pw/p.pb.gz" "$2" 2>&1)
	st=$?
	if [ "$st" -eq 0 ] && [ "$out" = "prof active=1" ] && [ -s "$T/pw/p.pb.gz" ] &&
		"$HP" top "$T/pw/p.pb.gz" >"$T/pw/top" 2>&1 && grep -q install_prof_site "$T/pw/top"; then
		pass "$1"
	else
		fail "$1" "status $st, output '$out': $(ls "$T/pw") $(head -c 300 "$T/pw/top" 2>/dev/null)"
	fi
}
if $CC -O1 -g -o "$T/prof_shared" "$REPO/tests/cli/install_prof.c" \
	$($PKG --cflags --libs heapprof) 2>"$T/cc.err"; then
	if readelf -d "$T/prof_shared" | grep -q 'NEEDED.*libheapprof\.so\.0'; then
		prof_check prof_shared "$T/prof_shared"
	else
		fail prof_shared "not linked with libheapprof.so.0 (SONAME)"
	fi
else
	fail prof_shared "build: $(head -c 400 "$T/cc.err")"
fi
if $CC -O1 -g -o "$T/prof_static" "$REPO/tests/cli/install_prof.c" \
	$($PKG --cflags heapprof) $($PKG --variable=static_libs heapprof) 2>"$T/cc.err"; then
	if readelf -d "$T/prof_static" | grep -q 'libheapprof'; then
		fail prof_static "the static build needs a shared libheapprof"
	else
		prof_check prof_static "$T/prof_static"
	fi
else
	fail prof_static "build: $(head -c 400 "$T/cc.err")"
fi

# ---- man pages
M1=$R/share/man/man1/heapprof.1
M3=$R/share/man/man3/libheapprof.3
if ! command -v groff >/dev/null 2>&1; then
	skip_tool man_render groff groff-base
else
	for m in "$M1" "$M3"; do
		name=man_render_$(basename "$m")
		if [ -f "$m" ] && groff -man -Tutf8 -ww -z "$m" >"$T/groff.err" 2>&1 && [ ! -s "$T/groff.err" ] &&
			[ "$(groff -man -Tutf8 "$m" 2>/dev/null | wc -l)" -gt 50 ]; then
			pass "$name"
		else
			fail "$name" "$(head -c 400 "$T/groff.err")"
		fi
	done
	if command -v man >/dev/null 2>&1; then
		if MANWIDTH=80 man -l "$M1" 2>/dev/null | grep -q 'heapprof run' &&
			MANWIDTH=80 man -l "$M3" 2>/dev/null | grep -q 'heapprof_delta_compute'; then
			pass man_l
		else
			fail man_l "man -l does not show the pages"
		fi
	else
		skip_tool man_l man man-db
	fi
fi
# heapprof(1): every subcommand and every option of its --help.
cmds=$("$HP" --help | sed -n 's/^  \([a-z][a-z]*\)  .*/\1/p')
bad=""
for c in $cmds; do
	grep -q "^\.SS \"heapprof $c" "$M1" || bad="$bad section:$c"
	for o in $("$HP" "$c" --help 2>&1 | grep -o -- '--[a-z][a-z-]*' | sort -u); do
		esc=$(printf '%s' "$o" | sed 's/-/\\\\-/g')
		grep -q -- "$esc" "$M1" || bad="$bad $c:$o"
	done
done
if [ -n "$cmds" ] && [ "$(echo $cmds | wc -w)" -ge 8 ] && [ -z "$bad" ]; then
	pass man_commands
else
	fail man_commands "heapprof.1 misses:$bad (commands: $cmds)"
fi
# libheapprof(3): every variable the library reads, every API function.
vars=$(grep -rhoE 'getenv\("HEAPPROF[A-Z_]*"\)' "$REPO/src" | sed 's/.*"\(.*\)".*/\1/' | sort -u)
funcs=$(sed -n 's/^HEAPPROF_API[^(]*[ *]\(heapprof_[a-z_]*\)(.*/\1/p' "$REPO/include/heapprof.h" | sort -u)
bad=""
for v in $vars; do
	grep -q "^\.B $v\$" "$M3" || bad="$bad $v"
done
for fn in $funcs; do
	grep -q "$fn" "$M3" || bad="$bad $fn()"
done
if [ "$(echo $vars | wc -w)" -ge 10 ] && [ "$(echo $funcs | wc -w)" -ge 15 ] && [ -z "$bad" ]; then
	pass man_library
else
	fail man_library "libheapprof.3 misses:$bad"
fi

# ---- uninstall leaves nothing
if make -C "$REPO" --no-print-directory install DESTDIR="$T/un" PREFIX=/usr >"$T/make.log" 2>&1 &&
	make -C "$REPO" --no-print-directory uninstall DESTDIR="$T/un" PREFIX=/usr >>"$T/make.log" 2>&1; then
	left=$(find "$T/un" ! -type d)
	if [ -z "$left" ]; then
		pass uninstall
	else
		fail uninstall "left: $left"
	fi
else
	fail uninstall "$(tail -5 "$T/make.log")"
fi
exit $FAILED
