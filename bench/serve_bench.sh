#!/bin/sh
# serve_bench.sh: the cost of the /debug/pprof endpoint.
#   1. serving one /heap profile, and one /allocs?seconds=1 delta (time
#      beyond the 1 s window), for a host with 65,536 stacks (stacks65k at
#      HEAPPROF_RATE=1, every stack reallocating its block every 200 ms:
#      every window holds all 65,536); medians of ROUNDS;
#   2. the host's slowdown while scraped every second: mbench (1 thread)
#      under the library with the endpoint on, with and without a scraper
#      fetching /allocs every second, alternating, ROUNDS each.
#   sh bench/serve_bench.sh [ROUNDS]      (default 5)
set -u
cd "$(dirname "$0")/.." || exit 2
R=${1:-5}
make -s build/libheapprof.so build/bench/stacks65k build/bench/mbench >&2 || exit 1
LIB=$(pwd)/build/libheapprof.so
D=$(mktemp -d /tmp/heapprof-serve.XXXXXX)
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
median() { sort -n | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }

port=$(freeport)
HEAPPROF_RATE=1 HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$port LD_PRELOAD="$LIB" \
	build/bench/stacks65k "$D/stop" 16 churn &
hpid=$!
until curl -s -o /dev/null "http://127.0.0.1:$port/debug/pprof/"; do sleep 0.1; done
sleep 1
for i in $(seq "$R"); do
	curl -s -o "$D/heap.pb.gz" -w '%{time_total}\n' "http://127.0.0.1:$port/debug/pprof/heap"
done >"$D/heap.t"
for i in $(seq "$R"); do
	curl -s -o "$D/delta.pb.gz" -w '%{time_total}\n' "http://127.0.0.1:$port/debug/pprof/allocs?seconds=1"
done >"$D/delta.t"
touch "$D/stop"
wait $hpid
samples=$(go tool pprof -raw -symbolize=none "$D/heap.pb.gz" 2>/dev/null | grep -c ':.*[0-9] $' || true)
echo "| measurement | median of $R |"
echo "|---|---|"
echo "| /debug/pprof/heap, 65,536 stacks: time to the last byte | $(median <"$D/heap.t") s |"
echo "| /debug/pprof/heap size | $(wc -c <"$D/heap.pb.gz") bytes gzip'd |"
echo "| /debug/pprof/allocs?seconds=1, 65,536 stacks: time beyond the window | $(awk '{print $1-1}' "$D/delta.t" | median) s |"

# Host slowdown under scraping.
: >"$D/plain.t"
: >"$D/scraped.t"
for i in $(seq "$R"); do
	for mode in plain scraped; do
		port=$(freeport)
		stop=$D/scraper.stop.$i.$mode
		if [ $mode = scraped ]; then
			( while [ ! -f "$stop" ]; do
				curl -s -o /dev/null "http://127.0.0.1:$port/debug/pprof/allocs"
				sleep 1
			done ) &
			spid=$!
		fi
		HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$port LD_PRELOAD="$LIB" \
			build/bench/mbench -t 1 -n 20000000 2>/dev/null |
			sed -n 's/.*: \([0-9.]*\) ns per pair.*/\1/p' >>"$D/$mode.t"
		touch "$stop"
		[ $mode = scraped ] && wait $spid
	done
done
p=$(median <"$D/plain.t")
s=$(median <"$D/scraped.t")
echo "| mbench 1 thread, endpoint on, not scraped | $p ns per malloc+free pair |"
echo "| mbench 1 thread, endpoint on, scraped every second | $s ns per pair ($(awk -v a="$p" -v b="$s" 'BEGIN{printf "%.3f", b/a}')x) |"
rm -rf "$D"
