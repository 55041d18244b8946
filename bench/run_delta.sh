#!/bin/sh
# run_delta.sh: the numbers of BENCHMARKS.md "## Delta". For each input,
# alternates R rounds of (a) bench_delta in-process (median of N deltas),
# (a') the same with the inputs read from their files (--read:
# heapprof_delta_compute_read), (b) `heapprof delta` end to end, (c) `go
# tool pprof -proto -base`, and prints medians: time per delta, MB/s,
# allocations per call, peak RSS.
# usage: sh bench/run_delta.sh [R] [N]     (from the repo root, after make bench)
R=${1:-5}
N=${2:-50}
REPO=$(cd "$(dirname "$0")/.." && pwd)
CORPUS=${HEAPPROF_CORPUS:-$REPO/../shared/corpus}
B=$REPO/build
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
export GOCACHE=$B/gocache HOME=${HOME:-$T}
mkdir -p "$GOCACHE" "$B/benchdata"
FD=$CORPUS/fastdelta
[ -f "$B/benchdata/huge.after.pprof" ] ||
	"$B/bench/bench_delta" --gen 32 "$FD/big-heap.pprof" \
		"$B/benchdata/huge.before.pprof" "$B/benchdata/huge.after.pprof"
med() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "| input | bytes | heapprof in-process (median of $N) | MB/s | allocs/call | state MB (B/key) | peak RSS (bench) | read from file: median / allocs/call / peak RSS | heapprof CLI wall / RSS | go tool pprof -base wall / RSS |"
echo "|---|---|---|---|---|---|---|---|---|---|"
run() { # name old new
	: >"$T/ours" ; : >"$T/rd"; : >"$T/cli_t"; : >"$T/cli_m"; : >"$T/go_t"; : >"$T/go_m"
	i=0
	while [ $i -lt "$R" ]; do
		"$B/bench/bench_delta" -n "$N" "$2" "$3" >>"$T/ours"
		"$B/bench/bench_delta" -n "$N" --read "$2" "$3" >>"$T/rd"
		/usr/bin/time -f "%e %M" -o "$T/tm" "$B/heapprof" delta --raw "$2" "$3" -o "$T/out.pb" >/dev/null 2>&1
		awk '{print $1*1000 >> "'"$T/cli_t"'"; print $2/1024 >> "'"$T/cli_m"'"}' "$T/tm"
		/usr/bin/time -f "%e %M" -o "$T/tm" go tool pprof -proto -symbolize=none -base "$2" "$3" >"$T/go.pb.gz" 2>/dev/null
		awk '{print $1*1000 >> "'"$T/go_t"'"; print $2/1024 >> "'"$T/go_m"'"}' "$T/tm"
		i=$((i + 1))
	done
	ms=$(sed 's/.*median \([0-9.]*\) ms.*/\1/' "$T/ours" | med)
	mbs=$(sed 's/.*, \([0-9.]*\) MB\/s.*/\1/' "$T/ours" | med)
	al=$(sed 's/.* \([0-9.]*\) allocs\/call.*/\1/' "$T/ours" | med)
	st=$(sed 's/.*state \([0-9.]*\) MB.*/\1/' "$T/ours" | med)
	bk=$(sed 's/.*(\([0-9.]*\) B\/key).*/\1/' "$T/ours" | med)
	rss=$(sed 's/.*peak RSS \([0-9.]*\) MB.*/\1/' "$T/ours" | med)
	rms=$(sed 's/.*median \([0-9.]*\) ms.*/\1/' "$T/rd" | med)
	ral=$(sed 's/.* \([0-9.]*\) allocs\/call.*/\1/' "$T/rd" | med)
	rrss=$(sed 's/.*peak RSS \([0-9.]*\) MB.*/\1/' "$T/rd" | med)
	bytes=$(wc -c <"$3")
	printf '| %s | %s | %s ms | %s | %s | %s (%s) | %s MB | %s ms / %s / %s MB | %s ms / %.1f MB | %s ms / %.1f MB |\n' \
		"$1" "$bytes" "$ms" "$mbs" "$al" "$st" "$bk" "$rss" "$rms" "$ral" "$rrss" \
		"$(med <"$T/cli_t")" "$(med <"$T/cli_m")" "$(med <"$T/go_t")" "$(med <"$T/go_m")"
}
run big-heap "$FD/big-heap.pprof" "$FD/big-heap.pprof"
run stress-failure "$FD/stress-failure.before.pprof" "$FD/stress-failure.after.pprof"
run stress-failure.2 "$FD/stress-failure.2.before.pprof" "$FD/stress-failure.2.after.pprof"
run huge-10MB "$B/benchdata/huge.before.pprof" "$B/benchdata/huge.after.pprof"
