#!/bin/sh
# profiler_memory.sh: the profiler's own memory (fixed, per bucket, per live
# sample) and the time to write a profile with 65k distinct stacks.
#
#   sh bench/profiler_memory.sh [PROFILER_MEMORY ARGS...]
#
# Runs build/bench/profiler_memory twice: without the profiler, and with
# HEAPPROF_LIB (default build/libheapprof.so) preloaded at HEAPPROF_RATE=1 so
# every allocation is a sample; the differences of RssAnon between phases,
# with minus without, are the profiler's. Prints a markdown table.
set -u
cd "$(dirname "$0")/.." || exit 2
# -B: the rule does not depend on include/heapprof.h, whose structs grow.
make -s -B build/bench/profiler_memory >&2 || exit 1
LIB=${HEAPPROF_LIB:-$(pwd)/build/libheapprof.so}
D=$(mktemp -d /tmp/heapprof-pm.XXXXXX)
build/bench/profiler_memory "$@" >"$D/without.txt" || { echo "run without the profiler failed" >&2; exit 1; }
env HEAPPROF_RATE=1 HEAPPROF_OUT="$D/exit.%p.pb.gz" LD_PRELOAD="$LIB" \
	build/bench/profiler_memory -o "$D/dump.pb.gz" "$@" >"$D/with.txt" ||
	{ echo "run with the profiler failed:" >&2; cat "$D/with.txt" >&2; exit 1; }
grep -q '^heapprof loaded' "$D/with.txt" || { echo "heapprof API not found in the preloaded run" >&2; exit 1; }
awk -v D="$D" '
FNR == 1 { run = (FILENAME ~ /without/) ? "o" : "w" }
{ v[run, $1] = $2 }
END {
	n = v["w", "stacks"]; l = v["w", "live"]; z = v["w", "size"]
	d = "rss_anon_kb"
	fixed = v["w", "start." d] - v["o", "start." d]
	res = (v["w", "start.vm_size_kb"] - v["o", "start.vm_size_kb"]) / 1048576
	bk = ((v["w", "buckets." d] - v["w", "before." d]) - (v["o", "buckets." d] - v["o", "before." d])) * 1024 / n
	lv = ((v["w", "live." d] - v["w", "buckets." d]) - (v["o", "live." d] - v["o", "buckets." d])) * 1024 / l
	lv2 = ((v["w", "live2." d] - v["w", "afterdump." d]) - (v["o", "live2." d] - v["o", "afterdump." d])) * 1024 / n
	dm = (v["w", "afterdump." d] - v["w", "live." d]) - (v["o", "afterdump." d] - v["o", "live." d])
	printf "| quantity | value |\n|---|---|\n"
	printf "| fixed: RssAnon at the start of main, with minus without | %d KiB |\n", fixed
	printf "| fixed: address space reserved (VmSize, with minus without) | %.1f GiB |\n", res
	printf "| per bucket (%d stacks, each malloc(%d)+free, rate 1) | %.0f bytes |\n", n, z, bk
	printf "| per live sample (%d live %d-byte blocks, one stack, rate 1; beyond glibc'"'"'s own cost) | %.0f bytes |\n", l, z, lv
	printf "| per live sample (one live %d-byte block at each of %d stacks) | %.0f bytes |\n", z, n, lv2
	printf "| RssAnon growth across the two dumps | %d KiB |\n", dm
	printf "| dump, %d buckets + %d live samples (first: symbolizes) | %s ms wall, %s ms CPU, %d bytes |\n", n, l, v["w", "dump1.wall_ms"], v["w", "dump1.cpu_ms"], v["w", "dump1.bytes"]
	printf "| dump again, same contents | %s ms wall, %s ms CPU, %d bytes |\n", v["w", "dump2.wall_ms"], v["w", "dump2.cpu_ms"], v["w", "dump2.bytes"]
	printf "| dump, %d buckets each with a live sample | %s ms wall, %s ms CPU, %d bytes |\n", n, v["w", "dump3.wall_ms"], v["w", "dump3.cpu_ms"], v["w", "dump3.bytes"]
	printf "| heapprof_encode_heap alone, %d synthetic records, 18 frames, gzip | %s ms wall, %s ms CPU, %d bytes |\n", v["w", "encode.records"], v["w", "encode.wall_ms"], v["w", "encode.cpu_ms"], v["w", "encode.bytes"]
	printf "\nraw output: %s/without.txt, %s/with.txt\n", D, D
}' "$D/without.txt" "$D/with.txt"
