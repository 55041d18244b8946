#!/bin/sh
# build_ir.sh: instructions of every process of `make -j2 build/heapprof`
# (in a scratch copy of the tree), without a profiler and under `heapprof
# run`, counted by callgrind (--trace-children=yes: deterministic for the
# same inputs, where the build's wall time moves by 15-40 % here), summed
# by program (ir_by_program.py). About 15 minutes a build on 2 cores.
#
#   sh bench/build_ir.sh [DIR]
set -u
cd "$(dirname "$0")/.." || exit 2
ROOT=$(pwd)
DIR=${1:-$(mktemp -d /tmp/heapprof-buildir.XXXXXX)}
make -s build/libheapprof.so build/heapprof >&2 || exit 1
rm -rf "$DIR/tree" "$DIR/none" "$DIR/heapprof" "$DIR/prof"
mkdir -p "$DIR/tree" "$DIR/none" "$DIR/heapprof" "$DIR/prof"
cp -r Makefile cli src include "$DIR/tree"/
valgrind --tool=callgrind --trace-children=yes \
	--callgrind-out-file="$DIR/none/cg.%p" \
	make -C "$DIR/tree" -j2 build/heapprof >/dev/null 2>&1 || exit 1
rm -rf "$DIR/tree/build"
HEAPPROF_LIBRARY="$ROOT/build/libheapprof.so" "$ROOT/build/heapprof" run \
	-o "$DIR/prof/p.%p.pb.gz" -- valgrind --tool=callgrind --trace-children=yes \
	--callgrind-out-file="$DIR/heapprof/cg.%p" \
	make -C "$DIR/tree" -j2 build/heapprof >/dev/null 2>"$DIR/run.err" || exit 1
python3 bench/ir_by_program.py "$DIR/none" "$DIR/heapprof"
echo "(profiles: $(ls "$DIR/prof" | wc -l) in $DIR/prof; callgrind files in $DIR)"
