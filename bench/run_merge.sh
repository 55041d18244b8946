#!/bin/sh
# run_merge.sh: the numbers of BENCHMARKS.md "## Merge". For each input
# set, alternates R rounds of (a) bench_merge in process (median of N
# merges), (b) `heapprof merge` end to end (gzip output), (c) `go tool
# pprof -proto A B` (Go 1.19's pprof: Merge plus its driver), (d)
# `pprofcheck merge` (the google/pprof profile package alone: Parse +
# Merge + Write), and prints medians of wall time and peak RSS.
# usage: sh bench/run_merge.sh [R] [N]   (repo root, after make bench)
R=${1:-5}
N=${2:-20}
REPO=$(cd "$(dirname "$0")/.." && pwd)
CORPUS=${HEAPPROF_CORPUS:-$REPO/../shared/corpus}
B=$REPO/build
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GOCACHE=$B/gocache HOME=${HOME:-$T}
mkdir -p "$GOCACHE" "$B/benchdata"
make -s -C "$REPO" "$B/bench/bench_merge" "$B/bench/bench_delta" "$B/pprofcheck" "$B/heapprof" >/dev/null
FD=$CORPUS/fastdelta
# The generated 10 MB profile (big-heap x32 with distinct addresses), shared
# with bench/run_delta.sh.
[ -f "$B/benchdata/huge.after.pprof" ] ||
	"$B/bench/bench_delta" --gen 32 "$FD/big-heap.pprof" \
		"$B/benchdata/huge.before.pprof" "$B/benchdata/huge.after.pprof"
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
tm() { # file_t file_m command...
	ft=$1 fm=$2
	shift 2
	/usr/bin/time -f "%e %M" -o "$T/tm" "$@" >/dev/null 2>&1 || echo "failed: $*" >&2
	awk '{print $1*1000 >> "'"$ft"'"; print $2/1024 >> "'"$fm"'"}' "$T/tm"
}
echo "| input | bytes in | heapprof in-process wall / CPU (median of $N) | MB/s | peak RSS (bench) | heapprof merge CLI wall / RSS | go tool pprof -proto wall / RSS | pprofcheck merge wall / RSS |"
echo "|---|---|---|---|---|---|---|---|"
run() { # name files...
	name=$1
	shift
	for f in ours cli_t cli_m go_t go_m pc_t pc_m; do : >"$T/$f"; done
	i=0
	while [ $i -lt "$R" ]; do
		"$B/bench/bench_merge" -n "$N" "$@" >>"$T/ours"
		tm "$T/cli_t" "$T/cli_m" "$B/heapprof" merge -o "$T/out.pb.gz" "$@"
		tm "$T/go_t" "$T/go_m" go tool pprof -proto -symbolize=none "$@"
		tm "$T/pc_t" "$T/pc_m" "$B/pprofcheck" merge "$T/pc.pb.gz" "$@"
		i=$((i + 1))
	done
	ms=$(sed 's/.*median \([0-9.]*\) ms.*/\1/' "$T/ours" | med)
	cpu=$(sed 's/.*cpu \([0-9.]*\) ms.*/\1/' "$T/ours" | med)
	mbs=$(sed 's/.*, \([0-9.]*\) MB\/s.*/\1/' "$T/ours" | med)
	rss=$(sed 's/.*peak RSS \([0-9.]*\) MB.*/\1/' "$T/ours" | med)
	bytes=$(cat "$@" | wc -c)
	printf '| %s | %s | %s ms / %s ms | %s | %s MB | %s ms / %.1f MB | %s ms / %.1f MB | %s ms / %.1f MB |\n' \
		"$name" "$bytes" "$ms" "$cpu" "$mbs" "$rss" \
		"$(med <"$T/cli_t")" "$(med <"$T/cli_m")" "$(med <"$T/go_t")" "$(med <"$T/go_m")" \
		"$(med <"$T/pc_t")" "$(med <"$T/pc_m")"
}
run "big-heap + big-heap" "$FD/big-heap.pprof" "$FD/big-heap.pprof"
run "huge-10MB + itself" "$B/benchdata/huge.after.pprof" "$B/benchdata/huge.after.pprof"
run "huge-10MB before + after" "$B/benchdata/huge.before.pprof" "$B/benchdata/huge.after.pprof"
