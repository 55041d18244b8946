#!/bin/sh
# Installs the Debian packages named in $DEBS that are not installed yet.
# Needs root (or sudo) only when something is missing.
# installed P: P is installed, or an installed package provides it
# (NodeSource's nodejs provides npm, and conflicts with Debian's npm).
installed() {
	dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "ok installed" && return 0
	dpkg-query -W -f='${db:Status-Abbrev} ${Provides}\n' 2>/dev/null |
		awk -v p="$1" '$1 == "ii" { for (i = 2; i <= NF; i++) { f = $i; sub(/,$/, "", f); if (f == p) ok = 1 } }
			END { exit !ok }'
}
missing=""
for p in $DEBS; do
	installed "$p" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "heapprof: installing Debian packages:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y $missing
