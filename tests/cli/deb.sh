#!/bin/sh
# tests/cli/deb.sh: the Debian package (`make deb`).
#  - deb.build: `make deb` makes build/heapprof_VERSION_ARCH.deb, whose
#    control names the package, version and architecture;
#  - deb.contents: `dpkg-deb -c` lists every path of README's install
#    section;
#  - deb.dpkg_root: installed with `dpkg --root` into a scratch root (never
#    on this system; dependencies are the host's), `dpkg -L heapprof` lists
#    every README path, the package's `heapprof run` profiles a program
#    from a fresh directory without the build tree (library found relative
#    to the binary), its man pages are gzip'd and render, and `dpkg -r`
#    removes every file again;
#  - deb.lintian: no error or warning (only where lintian is installed);
#  - deb.system (only with HEAPPROF_TEST_DEB_SYSTEM=1, as root, where no
#    heapprof package is installed: a CI machine): `apt-get install
#    ./heapprof_*.deb`, then from a fresh directory `heapprof run --
#    python3 -c 1` writes a profile, `man -w heapprof` and `pkg-config
#    heapprof` find theirs, and the package is purged again.
# Prints PASS name / FAIL name / SKIP name: why.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
FAILED=0
pass() { echo "PASS deb.$1"; }
fail() { echo "FAIL deb.$1"; [ -n "$2" ] && echo "  deb.$1: $2" >&2; FAILED=1; }
skip() { echo "SKIP deb.$1: $2"; }
skip_tool() { echo "SKIP deb.$1: missing tool $2 (Debian package ${3:-$2}; make test installs it)"; }

for t in dpkg dpkg-deb; do
	if ! command -v $t >/dev/null 2>&1; then
		skip all "$t is missing (not a Debian system)"
		exit 0
	fi
done
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

VERSION=$(sed -n 's/^#define HEAPPROF_VERSION_MAJOR \([0-9]*\).*/\1/p' "$REPO/include/heapprof.h").$(sed -n 's/^#define HEAPPROF_VERSION_MINOR \([0-9]*\).*/\1/p' "$REPO/include/heapprof.h")
ARCH=$(dpkg --print-architecture)
DEB=$REPO/build/heapprof_${VERSION}_$ARCH.deb
rm -f "$DEB"
if ! make -C "$REPO" --no-print-directory deb >"$T/make.log" 2>&1 || [ ! -f "$DEB" ]; then
	fail build "$(tail -5 "$T/make.log")"
	exit 1
fi
if [ "$(dpkg-deb -f "$DEB" Package)" = heapprof ] && [ "$(dpkg-deb -f "$DEB" Version)" = "$VERSION" ] &&
	[ "$(dpkg-deb -f "$DEB" Architecture)" = "$ARCH" ]; then
	pass build
else
	fail build "control: $(dpkg-deb -f "$DEB" Package Version Architecture | tr '\n' ' ')"
fi

sed -n '/^## Installing/,/^## /p' "$REPO/README.md" | sed -n 's/^    \(\/usr\/[^ ]*\).*/\1/p' >"$T/readme.list"
# README's example paths name the amd64 triplet.
MA=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch)
sed -i "s|/x86_64-linux-gnu/|/$MA/|" "$T/readme.list"
listed() { # name listing-file
	miss=""
	while read -r f; do
		grep -qx "$f" "$2" || miss="$miss $f"
	done <"$T/readme.list"
	if [ "$(wc -l <"$T/readme.list")" -ge 15 ] && [ -z "$miss" ]; then
		pass "$1"
	else
		fail "$1" "not in the package:$miss"
	fi
}
dpkg-deb -c "$DEB" | awk '{print $6}' | sed 's|^\./|/|' >"$T/contents"
listed contents "$T/contents"

# A scratch root with its own dpkg database.
ROOT=$T/root
mkdir -p "$ROOT/var/lib/dpkg/info" "$ROOT/var/lib/dpkg/updates"
: >"$ROOT/var/lib/dpkg/status"
NOTROOT=""
[ "$(id -u)" -ne 0 ] && NOTROOT=--force-not-root
if dpkg --root="$ROOT" $NOTROOT --force-depends -i "$DEB" >"$T/dpkg.log" 2>&1; then
	dpkg --root="$ROOT" -L heapprof >"$T/L"
	listed dpkg_L "$T/L"
	mkdir -p "$T/fresh"
	cat >"$T/fresh/p.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
__attribute__((noinline)) static void *deb_site(size_t n)
{ void *p = malloc(n); if (p) memset(p, 5, n); return p; }
int main(void) { static void *k[8]; for (int i = 0; i < 8; i++) k[i] = deb_site(1 << 20); return !k[7]; }
EOF
	${CC:-gcc} -O1 -g -o "$T/fresh/p" "$T/fresh/p.c"
	(cd "$T/fresh" && env -u HEAPPROF_LIBRARY "$ROOT/usr/bin/heapprof" run -r 1 -o prof.pb.gz -- ./p) >"$T/run.log" 2>&1
	st=$?
	if [ "$st" -eq 0 ] && "$ROOT/usr/bin/heapprof" top "$T/fresh/prof.pb.gz" 2>&1 | grep -q deb_site; then
		pass run
	else
		fail run "status $st: $(head -c 300 "$T/run.log")"
	fi
	if command -v groff >/dev/null 2>&1; then
		ok=1
		for m in man1/heapprof.1.gz man3/libheapprof.3.gz; do
			gzip -dc "$ROOT/usr/share/man/$m" >"$T/page" 2>/dev/null || ok=0
			[ "$(groff -man -Tutf8 -ww "$T/page" 2>"$T/groff.err" | wc -l)" -gt 50 ] && [ ! -s "$T/groff.err" ] || ok=0
		done
		[ "$ok" -eq 1 ] && pass man || fail man "$(head -c 300 "$T/groff.err")"
	else
		skip_tool man groff groff-base
	fi
	if dpkg --root="$ROOT" $NOTROOT -r heapprof >"$T/dpkg.log" 2>&1 &&
		[ -z "$(find "$ROOT/usr" ! -type d 2>/dev/null)" ]; then
		pass remove
	else
		fail remove "$(tail -3 "$T/dpkg.log"); left: $(find "$ROOT/usr" ! -type d | head -5)"
	fi
else
	fail dpkg_root "$(tail -5 "$T/dpkg.log")"
fi

if command -v lintian >/dev/null 2>&1; then
	lintian --fail-on error,warning "$DEB" >"$T/lintian" 2>&1
	st=$?
	if [ "$st" -eq 0 ] && ! grep -Eq '^[EW]: ' "$T/lintian"; then
		pass lintian
	else
		fail lintian "status $st: $(grep -E '^[EW]: ' "$T/lintian" | head -10)"
	fi
else
	skip_tool lintian lintian
fi

if [ "${HEAPPROF_TEST_DEB_SYSTEM:-0}" != 1 ]; then
	skip system "set HEAPPROF_TEST_DEB_SYSTEM=1 to install the package on this machine (and purge it)"
elif [ "$(id -u)" -ne 0 ] || dpkg-query -W heapprof >/dev/null 2>&1; then
	skip system "needs root and no heapprof package installed"
else
	cp "$DEB" "$T/fresh.deb" 2>/dev/null || cp "$DEB" "$T/"
	DEBIAN_FRONTEND=noninteractive apt-get install -y "$T/fresh.deb" >"$T/apt.log" 2>&1
	st=$?
	mkdir -p "$T/sys"
	PY=$(command -v python3)
	[ -x /usr/bin/python3 ] && PY=/usr/bin/python3
	(cd "$T/sys" && env -u HEAPPROF_LIBRARY /usr/bin/heapprof run -o py.%p.pb.gz -- "$PY" -c 1) >"$T/sys.log" 2>&1
	st2=$?
	f=$(ls "$T"/sys/py.*.pb.gz 2>/dev/null | head -n 1)
	if [ "$st" -eq 0 ] && [ "$st2" -eq 0 ] && [ -n "$f" ] && /usr/bin/heapprof top "$f" >/dev/null 2>&1 &&
		pkg-config --exists heapprof heapprof-tools && { ! command -v man >/dev/null || man -w heapprof >/dev/null 2>&1; }; then
		pass system
	else
		fail system "apt-get $st, run $st2: $(tail -3 "$T/apt.log") $(head -c 300 "$T/sys.log")"
	fi
	DEBIAN_FRONTEND=noninteractive apt-get purge -y heapprof >>"$T/apt.log" 2>&1 ||
		fail system_purge "$(tail -3 "$T/apt.log")"
fi
exit $FAILED
