#!/bin/sh
# tools/check-deps.sh CC HEADER:PACKAGE...: run by `make` before it
# compiles anything (Makefile check-deps). Exits 0 if CC can include every
# HEADER; otherwise names the missing headers, their Debian packages and
# the command that installs them (`make deps`, or apt-get), and exits 1,
# instead of the compiler's "libdw.h: No such file or directory".
cc=$1
shift
set -- $* # words
if ! command -v "${cc%% *}" >/dev/null 2>&1; then
	echo "heapprof: no C compiler '$cc' (Debian package gcc): run 'make deps' as root, or: sudo apt-get install gcc make" >&2
	exit 1
fi
missing="" pkgs=""
for hp in "$@"; do
	h=${hp%%:*} p=${hp#*:}
	if ! printf '#include <%s>\n' "$h" | $cc -E -x c - -o /dev/null 2>/dev/null; then
		missing="$missing $h ($p)"
		case " $pkgs " in *" $p "*) ;; *) pkgs="$pkgs $p" ;; esac
	fi
done
[ -z "$missing" ] && exit 0
echo "heapprof: cannot build: missing headers:$missing" >&2
echo "heapprof: install the Debian packages with 'make deps' (as root), or: sudo apt-get install$pkgs" >&2
exit 1
