#!/bin/sh
# cli_delta.sh: `heapprof delta` end to end, two builds side by side in the
# same run, on the pairs of bench/delta_pairs.sh. For each pair: the whole
# process's instructions under callgrind (one run each: they do not depend
# on the load), then R rounds alternating the two binaries (A, B, A, B,
# ...), wall time and peak RSS under /usr/bin/time; medians.
# usage: sh bench/cli_delta.sh HEAPPROF_A HEAPPROF_B [R] [pair names...]
#   (repo root, after make bench); FLAGS= other delta flags (default
#   --raw: raw output). Prints "| pair | A | B | B / A |" rows.
A=$1
B=$2
R=${3:-11}
[ $# -ge 2 ] && shift 2
[ $# -gt 0 ] && shift
ONLY="$*"
FLAGS=${FLAGS---raw}
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/bench/delta_pairs.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
insns() { # binary old new: total instructions of one run
	valgrind --tool=callgrind --callgrind-out-file="$T/cg" "$1" delta \
		$FLAGS "$2" "$3" -o "$T/out.pb" >/dev/null 2>&1
	callgrind_annotate "$T/cg" 2>/dev/null |
		awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1}'
}
timed() { # tag binary old new: appends wall ms and peak RSS MB
	t0=$(date +%s%N)
	/usr/bin/time -f "%M" -o "$T/tm" "$2" delta $FLAGS "$3" "$4" \
		-o "$T/out.pb" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo "$(((t1 - t0) / 1000))" | awk '{print $1 / 1000}' >>"$T/$1_t"
	awk '{print $1/1024}' "$T/tm" >>"$T/$1_m"
}
echo "| pair | instructions: A | B | B / A | wall median: A | B | B / A | peak RSS: A | B |"
echo "|---|---|---|---|---|---|---|---|---|"
echo "$PAIRS" | while read -r name old new; do
	case " $ONLY " in "  ") ;; *" $name "*) ;; *) continue ;; esac
	ia=$(insns "$A" "$old" "$new")
	ib=$(insns "$B" "$old" "$new")
	rm -f "$T"/a_* "$T"/b_*
	i=0
	while [ $i -lt "$R" ]; do
		timed a "$A" "$old" "$new"
		timed b "$B" "$old" "$new"
		i=$((i + 1))
	done
	ta=$(med <"$T/a_t")
	tb=$(med <"$T/b_t")
	printf '| %s | %.1f M | %.1f M | %.4f | %s ms | %s ms | %.3f | %.1f MB | %.1f MB |\n' \
		"$name" "$(echo "$ia" | awk '{print $1 / 1e6}')" \
		"$(echo "$ib" | awk '{print $1 / 1e6}')" \
		"$(echo "$ia $ib" | awk '{print $2 / $1}')" "$ta" "$tb" \
		"$(echo "$ta $tb" | awk '{print $2 / $1}')" \
		"$(med <"$T/a_m")" "$(med <"$T/b_m")"
done
