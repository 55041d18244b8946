#!/bin/sh
# Installs the Debian packages named in $DEBS that are not installed yet.
# Needs root (or sudo) only when something is missing.
missing=""
for p in $DEBS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "heapprof: installing Debian packages:$missing" >&2
SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO=sudo
$SUDO apt-get update && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y $missing
