#!/bin/sh
# delta_pairs.sh: sourced by run_delta.sh and callgrind_delta.sh. Makes the
# delta benchmark's inputs in build/benchdata (once) and defines PAIRS, one
# "name old new" a line:
#   go-real       a real Go 1.19 heap profile pair written by runtime/pprof
#                 (bench/gopair: MemProfileRate=1, 4^8 distinct stacks x 3
#                 sizes, 197 k samples, 7.3 MB inflated, gzip'd as Go
#                 writes it);
#   go_heap_delta the corpus's Go pair (../shared/corpus/go, gzip'd);
#   heap, block, big-heap (against itself), stress-failure{,.2,.3}: the
#                 fastdelta corpus pairs, gzip -1'd as Go writes profiles;
#   huge-10MB     the synthetic pair (big-heap replicated 32x, raw).
# REPO must be set.
CORPUS=${HEAPPROF_CORPUS:-$REPO/../shared/corpus}
FD=$CORPUS/fastdelta
H=$REPO/build/benchdata
mkdir -p "$H"
[ -f "$H/huge.after.pprof" ] ||
	"$REPO/build/bench/bench_delta" --gen 32 "$FD/big-heap.pprof" \
		"$H/huge.before.pprof" "$H/huge.after.pprof"
[ -f "$H/go.after.pb.gz" ] ||
	(cd "$REPO/bench/gopair" && GOCACHE=$REPO/build/gocache GOFLAGS=-mod=mod \
		GOPROXY=off HOME=${HOME:-/tmp} go run . "$H/go.before.pb.gz" "$H/go.after.pb.gz")
for f in heap.before heap.after block.before block.after big-heap \
	stress-failure.before stress-failure.after stress-failure.2.before \
	stress-failure.2.after stress-failure.3.before stress-failure.3.after; do
	[ -f "$H/$f.pb.gz" ] || gzip -1 -n -c "$FD/$f.pprof" >"$H/$f.pb.gz"
done
PAIRS="go-real $H/go.before.pb.gz $H/go.after.pb.gz
go_heap_delta $CORPUS/go/go_heap_delta_1.pb.gz $CORPUS/go/go_heap_delta_2.pb.gz
heap $H/heap.before.pb.gz $H/heap.after.pb.gz
block $H/block.before.pb.gz $H/block.after.pb.gz
big-heap $H/big-heap.pb.gz $H/big-heap.pb.gz
stress-failure $H/stress-failure.before.pb.gz $H/stress-failure.after.pb.gz
stress-failure.2 $H/stress-failure.2.before.pb.gz $H/stress-failure.2.after.pb.gz
stress-failure.3 $H/stress-failure.3.before.pb.gz $H/stress-failure.3.after.pb.gz
huge-10MB $H/huge.before.pprof $H/huge.after.pprof"
