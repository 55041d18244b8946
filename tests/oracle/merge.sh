#!/bin/sh
# merge.sh: oracle tests of `heapprof merge` against pprof's own Merge
# (tests/oracle/pprofcheck, built against Debian's google/pprof) on the
# shared corpus. The uncompressed output must be byte-identical to what
# pprof writes for the same merge; --base/--scale -1 must equal pprof's
# -base delta (including go_heap_delta_2_minus_1.cli.pb.gz, written by
# `go tool pprof -proto -base`); bad inputs must fail without output.
. "$(dirname "$0")/lib.sh"
oracle_need_corpus merge_oracle
oracle_need_heapprof merge_oracle
oracle_need_go merge_oracle
oracle_tmpdir

G=$CORPUS/go
F=$CORPUS/fastdelta

# merge_same NAME FILE...: heapprof merge --raw == pprof Merge, byte for byte.
merge_same() {
	name=$1; shift
	if ! "$HEAPPROF" merge --raw -o "$TMPD/ours.pb" "$@" 2>"$TMPD/err"; then
		fail "$name" "heapprof merge failed: $(cat "$TMPD/err")"
		return
	fi
	if ! "$PPROFCHECK" merge "$TMPD/theirs.pb.gz" "$@"; then
		fail "$name" "pprofcheck merge failed"
		return
	fi
	gunzip -c "$TMPD/theirs.pb.gz" >"$TMPD/theirs.pb"
	if cmp -s "$TMPD/ours.pb" "$TMPD/theirs.pb"; then
		pass "$name"
	else
		"$PPROFCHECK" dump "$TMPD/ours.pb" >"$TMPD/a" 2>&1
		"$PPROFCHECK" dump "$TMPD/theirs.pb" >"$TMPD/b" 2>&1
		fail "$name" "output differs from pprof's Merge"
		diff "$TMPD/a" "$TMPD/b" | head -10 >&2
	fi
}

merge_same merge_go_heap_delta_1_2 "$G/go_heap_delta_1.pb.gz" "$G/go_heap_delta_2.pb.gz"
merge_same merge_go_heap_three "$G/go_heap_basic.pb.gz" "$G/go_heap_delta_1.pb.gz" "$G/go_heap_delta_2.pb.gz"
merge_same merge_go_heap_single "$G/go_heap_rate1.pb.gz"
merge_same merge_go_cpu_labels_twice "$G/go_cpu_labels.pb.gz" "$G/go_cpu_labels.pb.gz"
merge_same merge_go_goroutine_labels "$G/go_goroutine_labels.pb.gz" "$G/go_goroutine_labels.pb.gz"
merge_same merge_fastdelta_heap_pair "$F/heap.before.pprof" "$F/heap.after.pprof"
merge_same merge_fastdelta_block_pair "$F/block.before.pprof" "$F/block.after.pprof"
merge_same merge_big_heap_self "$F/big-heap.pprof" "$F/big-heap.pprof"
merge_same merge_stress_failure_dups "$F/stress-failure.before.pprof" "$F/stress-failure.after.pprof"
merge_same merge_stress_failure_3 "$F/stress-failure.3.before.pprof" "$F/stress-failure.3.after.pprof"

# --base OLD NEW == pprof -base (its CLI's own output for the Go pair).
if "$HEAPPROF" merge --raw -o "$TMPD/d.pb" --base "$G/go_heap_delta_1.pb.gz" "$G/go_heap_delta_2.pb.gz" &&
	gunzip -c "$G/go_heap_delta_2_minus_1.cli.pb.gz" | cmp -s - "$TMPD/d.pb"; then
	pass merge_base_equals_go_tool_pprof_base
else
	fail merge_base_equals_go_tool_pprof_base "differs from go_heap_delta_2_minus_1.cli.pb.gz"
fi

# --base == pprofcheck delta, byte for byte, on the fastdelta pairs.
for pair in heap block stress-failure stress-failure.2 stress-failure.3; do
	name=merge_base_equals_pprof_delta_$pair
	if "$HEAPPROF" merge --raw -o "$TMPD/d.pb" --base "$F/$pair.before.pprof" "$F/$pair.after.pprof" &&
		"$PPROFCHECK" delta "$TMPD/t.pb.gz" "$F/$pair.before.pprof" "$F/$pair.after.pprof" &&
		gunzip -c "$TMPD/t.pb.gz" | cmp -s - "$TMPD/d.pb"; then
		pass "$name"
	else
		fail "$name"
	fi
done

# --scale -1:OLD NEW (inputs in the other order): the same samples and
# values as pprof's delta (order and ids may differ; compare listings).
"$HEAPPROF" merge -o "$TMPD/s.pb.gz" --scale -1:"$G/go_heap_delta_1.pb.gz" "$G/go_heap_delta_2.pb.gz" &&
	"$PPROFCHECK" samples "$TMPD/s.pb.gz" >"$TMPD/a" &&
	"$PPROFCHECK" samples "$G/go_heap_delta_2_minus_1.cli.pb.gz" >"$TMPD/b"
same_output merge_scale_minus1_equals_base_samples "$TMPD/a" "$TMPD/b"

# Fractional scale: rounding as pprof's Scale (int64(math.Round(v*r))).
for r in 0.37 2.5 -0.5; do
	name=merge_scale_${r}_equals_pprof_scale
	if "$HEAPPROF" merge --raw -o "$TMPD/s.pb" --scale "$r:$F/big-heap.pprof" &&
		"$PPROFCHECK" scale "$TMPD/t.pb.gz" "$r" "$F/big-heap.pprof" &&
		gunzip -c "$TMPD/t.pb.gz" | cmp -s - "$TMPD/s.pb"; then
		pass "$name"
	else
		fail "$name"
	fi
done

# Default gzip output: valid for pprof, same content as --raw.
if "$HEAPPROF" merge -o "$TMPD/g.pb.gz" "$F/heap.before.pprof" "$F/heap.after.pprof" &&
	"$HEAPPROF" merge --raw -o "$TMPD/g.pb" "$F/heap.before.pprof" "$F/heap.after.pprof" &&
	gunzip -c "$TMPD/g.pb.gz" | cmp -s - "$TMPD/g.pb" &&
	"$PPROFCHECK" check "$TMPD/g.pb.gz" >/dev/null; then
	pass merge_gzip_output
else
	fail merge_gzip_output
fi

# stdin and stdout.
if cat "$G/go_heap_delta_1.pb.gz" | "$HEAPPROF" merge --raw - "$G/go_heap_delta_2.pb.gz" >"$TMPD/o.pb" &&
	"$HEAPPROF" merge --raw -o "$TMPD/f.pb" "$G/go_heap_delta_1.pb.gz" "$G/go_heap_delta_2.pb.gz" &&
	cmp -s "$TMPD/o.pb" "$TMPD/f.pb"; then
	pass merge_stdin_stdout
else
	fail merge_stdin_stdout
fi

# Bad inputs: non-zero exit, a message, no output file (not even a temp).
bad_input() {
	name=$1; shift
	rm -f "$TMPD/bad.pb"*
	if "$HEAPPROF" merge -o "$TMPD/bad.pb" "$@" 2>"$TMPD/err"; then
		fail "$name" "exit status 0"
	elif [ -n "$(ls "$TMPD" | grep '^bad\.pb')" ]; then
		fail "$name" "left an output file"
	elif ! grep -q "heapprof: merge: " "$TMPD/err"; then
		fail "$name" "no error message"
	else
		pass "$name"
	fi
}
bad_input merge_rejects_type_mismatch "$G/go_heap_basic.pb.gz" "$F/block.before.pprof"
bad_input merge_rejects_legacy_text "$CORPUS/gperftools/gperf_api.0001.heap"
head -c 1000 "$F/big-heap.pprof" >"$TMPD/trunc.pprof"
bad_input merge_rejects_truncated "$F/big-heap.pprof" "$TMPD/trunc.pprof"
bad_input merge_rejects_missing_file "$TMPD/does-not-exist"
: >"$TMPD/empty.pprof"
bad_input merge_rejects_empty "$TMPD/empty.pprof"
if "$HEAPPROF" merge --scale nope "$F/heap.pprof" >/dev/null 2>&1; then
	fail merge_rejects_bad_scale
else
	pass merge_rejects_bad_scale
fi
exit $FAILED
