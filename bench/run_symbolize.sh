#!/bin/sh
# run_symbolize.sh: the numbers of BENCHMARKS.md "## Symbolization".
# Builds (once, into build/benchdata/symgen) a generated C++ program
# (bench/symbolize_gen.py: UNITS units x FUNCS functions, -O2 -g), profiles
# it at rate 1 with build/libheapprof.so, then R rounds of:
#   cold: every file the profile maps (and libc's separate debug file)
#         dropped from the page cache (dd iflag=nocache), then
#         `heapprof symbolize`; warm: the same again;
#   go tool pprof -raw (its own symbolization of the same profile; no
#         inlined frames) and go tool pprof -raw -symbolize=none (parsing
#         and printing only), each stopped after GO_TIMEOUT seconds (default
#         60; Go's DWARF lookup scans the CU for every address);
#   bench_symbolize: in-process, first and second pass over one cache
#         (a process's first dump and later dumps), and the symtab path.
# Prints wall and CPU (user+sys) medians.
# usage: sh bench/run_symbolize.sh [R] [UNITS] [FUNCS]  (repo root, after
#        make all build/bench/bench_symbolize)
R=${1:-3}
GO_TIMEOUT=${GO_TIMEOUT:-60}
UNITS=${2:-16}
FUNCS=${3:-40}
REPO=$(cd "$(dirname "$0")/.." && pwd)
B=$REPO/build
G=$B/benchdata/symgen
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GOCACHE=$B/gocache
mkdir -p "$GOCACHE"
PPROF=$(go env GOTOOLDIR)/pprof # go tool pprof, called directly so timeout stops it
if [ ! -x "$G/prog" ] || [ "$(cat "$G/shape" 2>/dev/null)" != "$UNITS $FUNCS" ]; then
	rm -rf "$G"
	python3 "$REPO/bench/symbolize_gen.py" "$G" "$UNITS" "$FUNCS" || exit 1
	(cd "$G" && ls ./*.cc | nice xargs -P2 -I{} sh -c \
		'g++ -O2 -g -c {} -o "$(basename {} .cc).o"' && g++ -o prog ./*.o) || exit 1
	echo "$UNITS $FUNCS" >"$G/shape"
fi
HEAPPROF_RATE=1 HEAPPROF_OUT=$G/raw.pb.gz LD_PRELOAD=$B/libheapprof.so "$G/prog" || exit 1

med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
files=$(go tool pprof -raw -symbolize=none "$G/raw.pb.gz" 2>/dev/null |
	awk '/^Mappings/ {on=1; next} on && $3 ~ /^\// {print $3}')
drop() {
	for f in $files; do
		dd if="$f" iflag=nocache count=0 2>/dev/null
		id=$(readelf -n "$f" 2>/dev/null | awk '/Build ID/{print $3}')
		dbg=/usr/lib/debug/.build-id/$(echo "$id" | cut -c1-2)/$(echo "$id" | cut -c3-).debug
		[ -n "$id" ] && [ -f "$dbg" ] && dd if="$dbg" iflag=nocache count=0 2>/dev/null
	done
}
timed() { # label command...
	label=$1
	shift
	/usr/bin/time -f "%e %U %S %M" -o "$T/tm" "$@" >/dev/null 2>&1
	awk '/status/ {next} {printf "%d %d %d\n", $1 * 1000, ($2 + $3) * 1000, $4 / 1024}' "$T/tm" >>"$T/$label"
}
i=0
while [ $i -lt "$R" ]; do
	drop
	timed cold "$B/heapprof" symbolize "$G/raw.pb.gz" -o "$T/out.pb.gz"
	timed warm "$B/heapprof" symbolize "$G/raw.pb.gz" -o "$T/out.pb.gz"
	timed go timeout "$GO_TIMEOUT" "$PPROF" -raw "$G/raw.pb.gz"
	timed gonone timeout "$GO_TIMEOUT" "$PPROF" -raw -symbolize=none "$G/raw.pb.gz"
	"$B/bench/bench_symbolize" "$G/raw.pb.gz" >>"$T/inproc"
	i=$((i + 1))
done
col() { awk -v c="$2" '{print $c}' "$T/$1" | med; }
size=$(stat -c %s "$G/prog")
dbg=$(readelf -SW "$G/prog" | sed 's/^ *\[ *[0-9]*\] *//' | awk '$1 ~ /^\.debug_/ {print $5}' |
	while read -r h; do printf '%d\n' "0x$h"; done | awk '{s += $1} END {print s}')
echo "program: $UNITS units x $FUNCS functions, $size bytes, $dbg bytes of .debug_*"
tail -1 "$T/inproc"
echo "| what | wall ms | CPU ms | peak RSS MB |"
echo "|---|---|---|---|"
for l in cold warm go gonone; do
	echo "| $l | $(col $l 1) | $(col $l 2) | $(col $l 3) |"
done
echo "in-process dwarf first pass ms: $(sed 's/.*dwarf first pass \([0-9.]*\) ms.*/\1/' "$T/inproc" | med)"
echo "in-process dwarf second pass ms: $(sed 's/.*second pass \([0-9.]*\) ms.*/\1/' "$T/inproc" | med)"
echo "in-process symtab pass ms: $(sed 's/.*symtab first pass \([0-9.]*\) ms.*/\1/' "$T/inproc" | med)"
