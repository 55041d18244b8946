#!/bin/sh
# make demo: profile the bundled example (a toy server with churn and a
# leak) and print its top allocation sites, in use and allocated.
set -e
cd "$(dirname "$0")/.."
out=build/demo.pb.gz
echo "== build/heapprof run -o $out -- build/examples/leaky 200000"
build/heapprof run -o "$out" -- build/examples/leaky 200000
echo
echo "== build/heapprof top -n 8 $out        (in use at exit: the leak)"
build/heapprof top -n 8 "$out"
echo
echo "== build/heapprof top -n 8 --sample-index alloc_space $out   (all allocations: the churn)"
build/heapprof top -n 8 --sample-index alloc_space "$out"
echo
build/heapprof flame "$out" -o build/demo.html
echo "A flame graph (one self-contained page): build/demo.html"
echo "Or open the profile with: go tool pprof -http=: $out"
