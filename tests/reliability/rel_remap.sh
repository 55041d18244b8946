#!/bin/sh
# realloc of a sampled block over 512 KiB moves its pages with
# mremap(MREMAP_FIXED) into a run taken for the new size
# (range_exact.c). A block moved once is two mappings (the moved pages
# keep their own), and Linux before 6.17 (Debian 12 runs 6.1) refuses to
# move a source that spans mappings with EFAULT, after it has unmapped
# the destination. The failed move's run then went to the warm list with
# a hole in it, and the copy that followed wrote the new block's header
# into the hole: SIGSEGV. liboldmremap.so, preloaded first, gives mremap
# that older behaviour on any kernel; rprog_remap.c grows blocks past
# their neighbours twice, checks every byte and a calloc's zeros: same
# output and status as without the profiler (rel.remap.old_kernel.*), and
# on this kernel as it is (rel.remap.kernel.*).
. "$(dirname "$0")/lib.sh"
need_lib rel.remap
oracle_tmpdir
P=$PROG/rprog_remap
SHIM=$PROG/liboldmremap.so
run_t rel.remap.base 120 "$P" >"$TMPD/base" 2>&1 || exit 0
base=$RC
for k in old_kernel kernel; do
	pre=$LIB
	[ $k = old_kernel ] && pre=$SHIM:$LIB
	for r in 1 524288; do
		n=rel.remap.$k.rate$r
		run_t $n 120 env HEAPPROF_RATE=$r HEAPPROF_OUT="$TMPD/$k.$r.pb.gz" \
			LD_PRELOAD="$pre" "$P" >"$TMPD/$k.$r" 2>&1 || continue
		if [ $RC -ne $base ] || ! cmp -s "$TMPD/base" "$TMPD/$k.$r"; then
			fail $n "status $RC vs $base: $(head -c 300 "$TMPD/$k.$r" | tr '\n' ' ')"
		else
			pass $n
		fi
	done
done

# The same kernel behaviour on blocks that grow in turn: a block of
# several mappings moves a piece at a time, one mapping each, not by a
# copy (rel.remap.old_kernel.regrow: 1.38 M page faults instead of 39 k
# for 300 growths of 256 KiB to each of two buffers; the limit is the
# pages written, half again, as rel.cost.regrow's).
B=$PROG/rprog_bigloop
run_t rel.remap.old_kernel.regrow 120 env HEAPPROF_RATE=4096 HEAPPROF_EXIT=0 \
	LD_PRELOAD="$SHIM:$LIB" "$B" grow 262144 300 2 >"$TMPD/regrow" 2>&1
f=$(sed -n 's/^faults //p' "$TMPD/regrow")
m=$(sed -n 's/^mappings //p' "$TMPD/regrow")
if [ "$RC" -eq 0 ] && [ -n "$f" ] && [ "$f" -le $((2 * 300 * 64 * 3 / 2 + 2000)) ] &&
   [ -n "$m" ] && [ "$m" -le 20 ] && grep -q '^data ok$' "$TMPD/regrow"; then
	pass rel.remap.old_kernel.regrow
else
	fail rel.remap.old_kernel.regrow "status $RC, ${f:-?} faults, ${m:-?} mappings more: $(tr '\n' ' ' <"$TMPD/regrow" | head -c 200)"
fi

# Under an address-space limit a moved block at the range's frontier that
# cannot move (no room for a run of its whole new size) grows in place:
# 101 MiB grown to 150 MiB with 80 MiB of the limit left, as glibc's
# mremap does in 49 (realloc returned NULL when a moved block only grew
# by moving).
run_t rel.remap.limit_grow.base 120 "$P" limit >"$TMPD/limbase" 2>&1
if [ "$RC" -eq 0 ] && grep -q '^limit ok$' "$TMPD/limbase"; then
	run_t rel.remap.limit_grow 120 env HEAPPROF_RATE=4096 HEAPPROF_EXIT=0 \
		LD_PRELOAD="$LIB" "$P" limit >"$TMPD/limit" 2>&1
	if [ "$RC" -eq 0 ] && grep -q '^limit ok$' "$TMPD/limit"; then
		pass rel.remap.limit_grow
	else
		fail rel.remap.limit_grow "status $RC: $(tr '\n' ' ' <"$TMPD/limit" | head -c 200)"
	fi
else
	skip rel.remap.limit_grow "without the profiler: $(tr '\n' ' ' <"$TMPD/limbase" | head -c 200)"
fi
