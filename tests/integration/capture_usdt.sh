#!/bin/sh
# capture_usdt.sh: the otel_memory USDT probes (issue 33), as an eBPF agent
# sees them: readelf -n lists otel_memory:alloc and :free with semaphores;
# bpftrace attached to prog_usdt's libheapprof.so counts the sampled
# allocations and frees and sums the weights: at rate 1 they are the
# program's truth and the profile's alloc_space exactly; at rate 4096 the
# weights sum to the profile's alloc_space (both unsample the same way).
. "$(dirname "$0")/lib.sh"
need_go usdt
need_lib usdt
oracle_tmpdir
if ! readelf -n "$LIB" >"$TMPD/notes" 2>&1; then
	skip_tool usdt readelf binutils
	exit 0
fi
ok=1
for p in alloc free; do
	awk -v p="$p" '/Provider: otel_memory/ {prov=1; next}
		prov && $1 == "Name:" {name=$2; next}
		prov && name == p && /Semaphore: 0x0*[1-9a-f]/ {found=1}
		/stapsdt/ {prov=0; name=""} END {exit !found}' "$TMPD/notes" || ok=0
done
grep -q "Arguments: 8@.* 8@.* 8@" "$TMPD/notes" || ok=0
if [ $ok = 1 ]; then pass usdt.notes; else fail usdt.notes "readelf -n: no otel_memory:alloc/free with a semaphore"; fi

if ! command -v bpftrace >/dev/null 2>&1; then
	skip_tool usdt.bpftrace bpftrace bpftrace
	exit $FAILED
fi
# run RATE: prog_usdt under bpftrace; $TMPD/bt.RATE and u.RATE.pb.gz
run() {
	rate=$1
	rm -f "$TMPD/in" && mkfifo "$TMPD/in"
	HEAPPROF_RATE=$rate HEAPPROF_OUT=$TMPD/u.$rate.pb.gz LD_PRELOAD=$LIB \
		"$PROG/prog_usdt" <"$TMPD/in" >"$TMPD/out.$rate" 2>&1 &
	ppid=$!
	exec 3>"$TMPD/in"
	cat >"$TMPD/u.bt" <<BT
BEGIN { printf("ATTACHED\\n"); }
usdt:$LIB:otel_memory:alloc { @n = count(); @sz = sum(arg1); @w = sum(arg2); }
usdt:$LIB:otel_memory:free { @f = count(); }
uprobe:$PROG/prog_usdt:done_marker { exit(); }
BT
	# the program is waiting on the fifo: it has loaded the library
	bpftrace -p "$ppid" "$TMPD/u.bt" >"$TMPD/bt.$rate" 2>&1 &
	bpid=$!
	i=0
	while ! grep -q "^ATTACHED" "$TMPD/bt.$rate" && kill -0 $bpid 2>/dev/null &&
		[ $i -lt 600 ]; do
		sleep 0.1; i=$((i + 1))
	done
	echo >&3
	exec 3>&-
	wait $ppid
	wait $bpid
}
val() { sed -n "s/^@$1: //p" "$TMPD/bt.$2"; }

run 1
read -r n bytes frees <<EOF2
$(sed -n 's/^TRUTH //p' "$TMPD/out.1")
EOF2
ab=$(python3 "$REPO/tests/integration/labelsum.py" none "$TMPD/u.1.pb.gz" | awk '{print $3}')
if [ -n "$n" ] && [ "$(val n 1)" = "$n" ] && [ "$(val sz 1)" = "$bytes" ] &&
	[ "$(val w 1)" = "$ab" ] && [ "$ab" = "$bytes" ] && [ "$(val f 1)" = "$frees" ]; then
	pass usdt.rate1_exact
else
	fail usdt.rate1_exact "truth $n $bytes $frees, profile alloc_space $ab, bpftrace: $(grep -v '^$' "$TMPD/bt.1" | grep '^@' | tr '\n' ' ') $(grep -i error "$TMPD/bt.1" | head -2)"
fi

run 4096
ab=$(python3 "$REPO/tests/integration/labelsum.py" none "$TMPD/u.4096.pb.gz" | awk '{print $3}')
w=$(val w 4096)
if [ -n "$w" ] && [ -n "$ab" ] && awk -v a="$ab" -v b="$w" \
	'BEGIN { d = a - b; if (d < 0) d = -d; exit !(a > 0 && d <= a * 0.001) }'; then
	pass usdt.weights
else
	fail usdt.weights "profile alloc_space $ab, bpftrace weights $w"
fi
exit $FAILED
