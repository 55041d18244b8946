#!/bin/sh
# capture_customlabels.sh: labels from Polar Signals' custom labels with no
# code in the program (customlabels.c): prog_customlabels publishes them
# per the ABI (v0; prog_customlabels1: v1). At rate 1 each label's value
# gets exactly its blocks and bytes, in the main thread and in two worker
# threads (their sets in malloc arenas mapped after start-up), an absent
# key and a repeated key ignored; six bogus records (storage or a key
# unmapped, a NULL value, a huge count, a misaligned storage, a NUL inside
# a value) give no labels and no crash, the valid record before them
# still does; with otel_thread_ctx_v1 present too, the OpenTelemetry
# attributes win, and custom labels are read when its record is invalid.
. "$(dirname "$0")/lib.sh"
need_go customlabels
need_lib customlabels
oracle_tmpdir
LS="python3 $REPO/tests/integration/labelsum.py"
run() { # PROG MODE
	env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/o.$1.$2.pb.gz" LD_PRELOAD="$LIB" \
		"$PROG/$1" "$2" >"$TMPD/out.$1.$2" 2>&1
}
check() { # NAME PROG MODE WANT KEY...
	name=$1 p=$2 m=$3 want=$4
	shift 4
	run "$p" "$m"
	rc=$?
	for k in "$@"; do $LS "$k" "$TMPD/o.$p.$m.pb.gz"; done >"$TMPD/got.$name"
	printf -- "$want" >"$TMPD/want.$name"
	if [ $rc = 0 ] && cmp -s "$TMPD/want.$name" "$TMPD/got.$name"; then
		pass "customlabels.$name"
	else
		fail "customlabels.$name" "exit $rc, labels: $(tr '\n' ' ' <"$TMPD/got.$name")"
	fi
}
W='- 10 1000 0 0\n/a 100 30000 0 0\n/w1 50 10000 0 0\n/w2 50 10000 0 0\n- 110 21000 0 0\nt7 100 30000 0 0\n'
check v0.valid prog_customlabels valid "$W" route tenant
check v1.valid prog_customlabels1 valid "$W" route tenant
check v0.garbage prog_customlabels garbage '- 300 90000 0 0\n/ok 50 15000 0 0\n' route
check v1.garbage prog_customlabels1 garbage '- 300 90000 0 0\n/ok 50 15000 0 0\n' route
check otel_wins prog_customlabels both \
	'- 100 30000 0 0\n/c 50 15000 0 0\n- 50 15000 0 0\n/o 100 30000 0 0\n' route otel.attr.0
exit $FAILED
