#!/bin/sh
# run_delta.sh: the timed figures of BENCHMARKS.md "## Delta", on the pairs
# of bench/delta_pairs.sh (real gzip'd pairs and the synthetic one). For
# each pair, alternates R rounds of
#   (a) bench_delta -n N OLD NEW: in process, inputs in memory
#       (heapprof_delta_compute), median of N steady-state calls;
#   (b) the same with --read (heapprof_delta_compute_read from the files);
#   (c) `heapprof delta --raw OLD NEW`, the files named (what the CLI does
#       with regular files), wall and peak RSS under /usr/bin/time;
#   (d) the same with both inputs through fifos (the CLI reads a pipe into
#       memory);
#   (e) with GO=1, `go tool pprof -proto -base`,
# and prints medians.
# usage: sh bench/run_delta.sh [R] [N] [pair names...]  (repo root, after make bench)
# HEAPPROF=, BENCH_DELTA=: other binaries (e.g. a baseline build).
R=${1:-5}
N=${2:-50}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
ONLY="$*"
REPO=$(cd "$(dirname "$0")/.." && pwd)
B=$REPO/build
HP=${HEAPPROF:-$B/heapprof}
BD=${BENCH_DELTA:-$B/bench/bench_delta}
. "$REPO/bench/delta_pairs.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GOCACHE=$B/gocache HOME=${HOME:-$T}
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
timed() { # out-prefix command...: appends wall ms and peak RSS MB
	p=$1
	shift
	t0=$(date +%s%N)
	/usr/bin/time -f "%M" -o "$T/tm" "$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo "$(((t1 - t0) / 10000))" | awk '{print $1 / 100}' >>"${p}_t"
	awk '{print $1/1024}' "$T/tm" >>"${p}_m"
}
hdr="| pair | bytes (gz) | in process, memory: median / peak RSS | in process, read: median / peak RSS | CLI, files (read): wall / RSS | CLI, pipes (memory): wall / RSS |"
sep="|---|---|---|---|---|---|"
[ -n "$GO" ] && hdr="$hdr go tool pprof -base: wall / RSS |" && sep="$sep---|"
echo "$hdr"
echo "$sep"
echo "$PAIRS" | while read -r name old new; do
	case " $ONLY " in "  ") ;; *" $name "*) ;; *) continue ;; esac
	rm -f "$T"/ours "$T"/rd "$T"/cf_* "$T"/cp_* "$T"/go_*
	i=0
	while [ $i -lt "$R" ]; do
		"$BD" -n "$N" "$old" "$new" >>"$T/ours"
		"$BD" -n "$N" --read "$old" "$new" >>"$T/rd"
		timed "$T/cf" "$HP" delta --raw "$old" "$new" -o "$T/out.pb"
		rm -f "$T/p1" "$T/p2"
		mkfifo "$T/p1" "$T/p2"
		cat "$old" >"$T/p1" &
		cat "$new" >"$T/p2" &
		timed "$T/cp" "$HP" delta --raw "$T/p1" "$T/p2" -o "$T/out.pb"
		wait
		[ -n "$GO" ] && timed "$T/go" go tool pprof -proto -symbolize=none \
			-base "$old" "$new"
		i=$((i + 1))
	done
	ms=$(sed 's/.*median \([0-9.]*\) ms.*/\1/' "$T/ours" | med)
	rss=$(sed 's/.*peak RSS \([0-9.]*\) MB.*/\1/' "$T/ours" | med)
	rms=$(sed 's/.*median \([0-9.]*\) ms.*/\1/' "$T/rd" | med)
	rrss=$(sed 's/.*peak RSS \([0-9.]*\) MB.*/\1/' "$T/rd" | med)
	row=$(printf '| %s | %s | %s ms / %s MB | %s ms / %s MB | %s ms / %.1f MB | %s ms / %.1f MB |' \
		"$name" "$(wc -c <"$new")" "$ms" "$rss" "$rms" "$rrss" \
		"$(med <"$T/cf_t")" "$(med <"$T/cf_m")" "$(med <"$T/cp_t")" "$(med <"$T/cp_m")")
	[ -n "$GO" ] && row=$(printf '%s %s ms / %.1f MB |' "$row" "$(med <"$T/go_t")" "$(med <"$T/go_m")")
	echo "$row"
done
