#!/bin/sh
# tools/deb/build.sh ROOT VERSION ARCH OUT: turns ROOT (a `make install
# DESTDIR=ROOT PREFIX=/usr` tree) into the Debian package OUT with dpkg-deb:
# binaries stripped as dh_strip does, man pages and the changelog gzip'd
# (-9n), the copyright file, DEBIAN/control (Depends from the glibc and zlib
# symbol versions the binaries use), shlibs, md5sums and the ldconfig
# trigger. The version has no Debian revision: a native package.
# Called by `make deb`. DEB_MAINTAINER overrides the Maintainer field.
set -eu
ROOT=$1 VERSION=$2 ARCH=$3 OUT=$4
HERE=$(cd "$(dirname "$0")" && pwd)
DOC=$ROOT/usr/share/doc/heapprof
MAINT=${DEB_MAINTAINER:-heapprof maintainers <heapprof@users.noreply.github.com>}
# The changelog's date: the commit's (reproducible), else now.
DATE=$(git -C "$HERE" log -1 --format=%cD 2>/dev/null || date -R)
COMMIT=$(sed -n 's/.*#define HP_BUILD_COMMIT "\(.*\)"/\1/p' "$HERE/../../build/gen/hp_version.h" 2>/dev/null || true)

# Binaries and shared libraries: no debug info, .comment or .note; static
# libraries: no debug info (the symbols stay: they are what links).
strip --remove-section=.comment --remove-section=.note --strip-unneeded \
	"$ROOT/usr/bin/heapprof"
for f in "$ROOT"/usr/lib/*.so.*; do
	[ -L "$f" ] && continue
	strip --remove-section=.comment --remove-section=.note --strip-unneeded "$f"
done
for f in "$ROOT"/usr/lib/*.a; do
	strip --strip-debug --remove-section=.comment --remove-section=.note \
		--enable-deterministic-archives "$f"
done
gzip -9n "$ROOT"/usr/share/man/man1/heapprof.1 "$ROOT"/usr/share/man/man3/libheapprof.3
install -m 644 "$HERE/copyright" "$DOC/copyright"
printf 'heapprof (%s) unstable; urgency=medium\n\n  * Built from commit %s.\n\n -- %s  %s\n' \
	"$VERSION" "${COMMIT:-unknown}" "$MAINT" "$DATE" | gzip -9n >"$DOC/changelog.gz"
chmod 644 "$DOC/changelog.gz"
mkdir -p "$ROOT/usr/share/lintian/overrides"
install -m 644 "$HERE/lintian-overrides" "$ROOT/usr/share/lintian/overrides/heapprof"

# Depends: the highest GLIBC_ and ZLIB_ symbol versions any binary needs.
maxver() {
	for f in "$ROOT/usr/bin/heapprof" "$ROOT"/usr/lib/*.so.*; do
		[ -L "$f" ] || objdump -T "$f"
	done | grep -o "$1"'_[0-9][0-9.]*' | sed "s/^$1_//" | sort -uV | tail -n 1
}
GLIBC=$(maxver GLIBC)
ZLIB=$(maxver ZLIB)
DEPENDS="libc6 (>= ${GLIBC:-2.34})"
[ -n "$ZLIB" ] && DEPENDS="$DEPENDS, zlib1g (>= 1:$ZLIB)"
[ -z "$ZLIB" ] && DEPENDS="$DEPENDS, zlib1g"
# libheapprof.so has zlib linked in (libz.a): the version it was built with.
ZDEV=$(dpkg-query -W -f='${source:Package} (= ${Version})' zlib1g-dev 2>/dev/null || true)
SIZE=$(du -sk --exclude=DEBIAN "$ROOT" | cut -f1)
sed -e "s/@VERSION@/$VERSION/" -e "s/@ARCH@/$ARCH/" -e "s/@SIZE@/$SIZE/" \
	-e "s/@DEPENDS@/$DEPENDS/" -e "s/@MAINTAINER@/$MAINT/" \
	"$HERE/control.in" >"$ROOT/DEBIAN/control"
[ -n "$ZDEV" ] && printf 'Built-Using: %s\n' "$ZDEV" >>"$ROOT/DEBIAN/control"
printf 'activate-noawait ldconfig\n' >"$ROOT/DEBIAN/triggers"
printf 'libheapprof 0 heapprof (>= %s)\nlibheapprof-tools 0 heapprof (>= %s)\n' \
	"$VERSION" "$VERSION" >"$ROOT/DEBIAN/shlibs"
(cd "$ROOT" && find usr -type f | LC_ALL=C sort | xargs md5sum) >"$ROOT/DEBIAN/md5sums"
chmod 644 "$ROOT"/DEBIAN/*
find "$ROOT" -type d -exec chmod 755 {} +
dpkg-deb --root-owner-group -Zxz --build "$ROOT" "$OUT"
