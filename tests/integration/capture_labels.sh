#!/bin/sh
# capture_labels.sh: label sets (issue 33). prog_labels's workers allocate
# under route labels (heapprof_labels_set/_restore and an interned set with
# heapprof_labels_use); at rate 1 the profile's values per route label are
# the program's truth exactly; go tool pprof -tagfocus and heapprof top
# --tagfocus print the same; merge and delta keep the labels; the cap on
# distinct sets (HEAPPROF_LABEL_SETS) puts the rest under
# heapprof_labels=overflow and counts them in the comments.
. "$(dirname "$0")/lib.sh"
need_go labels
need_lib labels
oracle_need_heapprof labels
oracle_tmpdir
LS="python3 $REPO/tests/integration/labelsum.py"

HEAPPROF_RATE=1 HEAPPROF_OUT=$TMPD/l.pb.gz LD_PRELOAD=$LIB \
	"$PROG/prog_labels" server >"$TMPD/truth" 2>"$TMPD/err" || {
	fail labels.run "prog_labels failed: $(head -3 "$TMPD/err")"; exit 1; }
sed -n 's/^TRUTH //p' "$TMPD/truth" | sort >"$TMPD/want"
$LS route "$TMPD/l.pb.gz" >"$TMPD/got" 2>"$TMPD/err" || cat "$TMPD/err" >&2
# alloc_objects, alloc_space, inuse_objects, inuse_space per route, exactly
same_output labels.routes_exact "$TMPD/want" "$TMPD/got"

for r in /a /b /c; do
	go tool pprof -top -tagfocus="route=$r" -sample_index=alloc_space \
		"$TMPD/l.pb.gz" >"$TMPD/g.txt" 2>/dev/null
	"$HEAPPROF" top --tagfocus "route=$r" --sample-index alloc_space \
		"$TMPD/l.pb.gz" >"$TMPD/h.txt" 2>&1
	if grep -q "tagfocus=route=$r" "$TMPD/g.txt"; then
		same_output "labels.tagfocus$(echo $r | tr / _)" "$TMPD/g.txt" "$TMPD/h.txt"
	else
		fail "labels.tagfocus$(echo $r | tr / _)" "go tool pprof printed no filter"
	fi
done

# merge keeps the labels (each value doubles), delta too (NEW - OLD of a
# profile and itself merged twice: the alloc values of one)
"$HEAPPROF" merge -o "$TMPD/m.pb.gz" "$TMPD/l.pb.gz" "$TMPD/l.pb.gz"
awk '{print $1, 2*$2, 2*$3, 2*$4, 2*$5}' "$TMPD/want" >"$TMPD/want2"
$LS route "$TMPD/m.pb.gz" >"$TMPD/got2"
same_output labels.merge "$TMPD/want2" "$TMPD/got2"
"$HEAPPROF" delta -o "$TMPD/d.pb.gz" "$TMPD/l.pb.gz" "$TMPD/m.pb.gz"
awk '{print $1, $2, $3, 2*$4, 2*$5}' "$TMPD/want" >"$TMPD/wantd"
$LS route "$TMPD/d.pb.gz" >"$TMPD/gotd"
same_output labels.delta "$TMPD/wantd" "$TMPD/gotd"

# the cap: 8 sets, then 5 refused, their samples under the overflow label
HEAPPROF_LABEL_SETS=8 HEAPPROF_RATE=1 HEAPPROF_OUT=$TMPD/c.pb.gz \
	LD_PRELOAD=$LIB "$PROG/prog_labels" cap 8 >"$TMPD/cap" 2>&1
$LS tenant "$TMPD/c.pb.gz" >"$TMPD/tenants"
$LS heapprof_labels "$TMPD/c.pb.gz" >"$TMPD/ovf"
nt=$(grep -c '^t[0-9]* 1 777 0 0$' "$TMPD/tenants")
if grep -qx "CAPPED 5" "$TMPD/cap" && [ "$nt" = 8 ] &&
	grep -qx "overflow 5 3885 0 0" "$TMPD/ovf" &&
	go tool pprof -comments "$TMPD/c.pb.gz" 2>/dev/null |
		grep -q "label sets=8 cap=8 overflow=5"; then
	pass labels.cap
else
	fail labels.cap "$(cat "$TMPD/cap") tenants=$nt overflow: $(cat "$TMPD/ovf" | tr '\n' ' ')"
fi
exit $FAILED
