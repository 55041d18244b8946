#!/bin/sh
# tests/integration/capture_gperftools.sh: gperftools' HEAPPROFILE=prefix
# under the preloaded library (issue 17).
#  - gperf.names: a program that writes one profile through
#    heapprof_dump_file(NULL) and one at exit leaves exactly
#    prefix.PID.0001.heap and prefix.PID.0002.heap, PID in five digits as
#    gperftools writes it ("%05d");
#  - gperf.text: they are legacy text heap profiles (gperftools' form),
#    which `heapprof convert` reads, with the program's allocation site;
#  - gperf.pprof: HEAPPROF_FORMAT=pprof keeps the names, writes pprof;
#  - gperf.out_wins: HEAPPROF_OUT set as well: HEAPPROF_OUT is used;
#  - gperf.percent: a '%' in the prefix is part of the name, not a template.
# Prints PASS name / FAIL name / SKIP name: why.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
LIB=$REPO/build/libheapprof.so
HP=$REPO/build/heapprof
FAILED=0
pass() { echo "PASS gperf.$1"; }
fail() { echo "FAIL gperf.$1"; [ -n "$2" ] && echo "  gperf.$1: $2" >&2; FAILED=1; }
skip() { echo "SKIP gperf.$1: $2"; }
if [ ! -f "$LIB" ] || [ ! -x "$HP" ]; then
	fail built "$LIB or $HP not built (run make)"
	exit 1
fi
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cat >"$T/g.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
__attribute__((noinline)) static void *gperf_site(size_t n)
{ void *p = malloc(n); if (p) memset(p, 7, n); return p; }
int main(void)
{
	static void *k[8];
	for (int i = 0; i < 8; i++)
		k[i] = gperf_site(1 << 20);
	int (*dump)(const char *) = (int (*)(const char *))dlsym(RTLD_DEFAULT, "heapprof_dump_file");
	int rc = dump ? dump(NULL) : -1;
	printf("%ld %d\n", (long)getpid(), rc);
	return rc != 0 || !k[7];
}
EOF
${CC:-gcc} -O1 -g -o "$T/g" "$T/g.c" -ldl || { fail build "cc"; exit 1; }

# run DIR ENV...: runs the program in DIR under the library; sets PID.
run() {
	d=$1; shift
	mkdir -p "$d"
	out=$(cd "$d" && timeout 120 env -u HEAPPROF_OUT -u HEAPPROF_FORMAT "$@" \
		LD_PRELOAD="$LIB" HEAPPROF_RATE=1 "$T/g" 2>"$d.err")
	st=$?
	PID=${out% *}
	[ "$st" -eq 0 ] && [ "${out#* }" = 0 ]
}

if run "$T/a" HEAPPROFILE="$T/a/hp"; then
	P5=$(printf '%05d' "$PID")
	got=$(cd "$T/a" && ls | tr '\n' ' ')
	if [ "$got" = "hp.$P5.0001.heap hp.$P5.0002.heap " ]; then
		pass names
	else
		fail names "files: '$got', want hp.$P5.0001.heap hp.$P5.0002.heap"
	fi
	ok=1
	for n in 0001 0002; do
		f=$T/a/hp.$P5.$n.heap
		head -n 1 "$f" 2>/dev/null | grep -q '^heap profile: ' || ok=0
		"$HP" convert "$f" -o "$T/a.$n.pb.gz" 2>/dev/null && "$HP" top "$T/a.$n.pb.gz" 2>/dev/null |
			grep -q gperf_site || ok=0
	done
	[ "$ok" -eq 1 ] && pass text || fail text "$(head -n 2 "$T/a/hp.$P5.0001.heap" 2>/dev/null)"
else
	fail names "the program failed: $(head -c 300 "$T/a.err")"
fi

if run "$T/b" HEAPPROFILE="$T/b/hp" HEAPPROF_FORMAT=pprof; then
	P5=$(printf '%05d' "$PID")
	f=$T/b/hp.$P5.0002.heap
	if [ -f "$f" ] && "$HP" top "$f" 2>/dev/null | grep -q gperf_site; then
		pass pprof
	else
		fail pprof "files: $(ls "$T/b")"
	fi
else
	fail pprof "the program failed: $(head -c 300 "$T/b.err")"
fi

if run "$T/c" HEAPPROFILE="$T/c/hp" HEAPPROF_OUT="$T/c/mine.%n.pb.gz"; then
	got=$(cd "$T/c" && ls | tr '\n' ' ')
	[ "$got" = "mine.0.pb.gz mine.1.pb.gz " ] && pass out_wins || fail out_wins "files: '$got'"
else
	fail out_wins "the program failed: $(head -c 300 "$T/c.err")"
fi

if run "$T/d" HEAPPROFILE="$T/d/x%p%n"; then
	P5=$(printf '%05d' "$PID")
	got=$(cd "$T/d" && ls | tr '\n' ' ')
	[ "$got" = "x%p%n.$P5.0001.heap x%p%n.$P5.0002.heap " ] && pass percent || fail percent "files: '$got'"
else
	fail percent "the program failed: $(head -c 300 "$T/d.err")"
fi
exit $FAILED
