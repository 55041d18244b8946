#!/bin/sh
# capture_otel.sh: labels from the OpenTelemetry thread context (OTEP 4947)
# with no code in the program (otel.c): prog_otel publishes
# otel_thread_ctx_v1 as a tracer would; at rate 1 its two attributes label
# every sampled block (otel.attr.0=/a, otel.attr.1=tenant-7); a torn record
# (valid 0), a bogus one (an entry past the size, a size past 640 bytes)
# and none give no labels and no crash; HEAPPROF_OTEL_IDS=1 adds trace_id
# and span_id.
# With a process context (OTEP 4719, prog_otel ctx*) the labels carry the
# key names of its threadlocal.attribute_key_map (otel_procctx.c):
#   otel.ctx.names   http_route=/a, tenant=tenant-7 on all 200 blocks
#   otel.ctx.short   a map of one name: index 1 stays otel.attr.1
#   otel.ctx.late    published with no prctl: found by the dump between
#                    the halves (/proc/self/maps), the second half named
#   otel.ctx.BAD     a broken context (timestamp 0, signature, version,
#                    payload pointer to unmapped memory, 1 GiB size, cut
#                    protobuf, another schema): numeric names, no crash;
#                    after a valid update, names
. "$(dirname "$0")/lib.sh"
need_go otel
need_lib otel
oracle_tmpdir
LS="python3 $REPO/tests/integration/labelsum.py"
run() { # MODE [ENV...]
	m=$1; shift
	env "$@" HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/o.$m.pb.gz" LD_PRELOAD="$LIB" \
		"$PROG/prog_otel" "$m" >"$TMPD/out.$m" 2>&1
}
run valid
{ $LS otel.attr.0 "$TMPD/o.valid.pb.gz"; $LS otel.attr.1 "$TMPD/o.valid.pb.gz"
  $LS trace_id "$TMPD/o.valid.pb.gz"; } >"$TMPD/got"
# no trace_id label unless asked for
printf '/a 100 30000 0 0\ntenant-7 100 30000 0 0\n- 100 30000 0 0\n' >"$TMPD/want"
same_output otel.attributes "$TMPD/want" "$TMPD/got"
for m in torn bogus big null; do
	run $m
	rc=$?
	{ $LS otel.attr.0 "$TMPD/o.$m.pb.gz"; $LS otel.attr.1 "$TMPD/o.$m.pb.gz"; } >"$TMPD/got.$m"
	printf -- '- 100 30000 0 0\n- 100 30000 0 0\n' >"$TMPD/want.none"
	if [ $rc = 0 ] && cmp -s "$TMPD/want.none" "$TMPD/got.$m"; then
		pass "otel.$m"
	else
		fail "otel.$m" "exit $rc, labels: $(tr '\n' ' ' <"$TMPD/got.$m")"
	fi
done
run valid HEAPPROF_OTEL_IDS=1
t=$($LS trace_id "$TMPD/o.valid.pb.gz")
s=$($LS span_id "$TMPD/o.valid.pb.gz")
if [ "$t" = "a0a1a2a3a4a5a6a7a8a9aaabacadaeaf 100 30000 0 0" ] &&
	[ "$s" = "b0b1b2b3b4b5b6b7 100 30000 0 0" ]; then
	pass otel.ids
else
	fail otel.ids "trace_id: $t; span_id: $s"
fi
# The process context: per half (site_otel, then site_otel2) the label
# sums of the two names and of otel.attr.0/1.
ctx_sums() { # MODE
	for k in http_route tenant otel.attr.0 otel.attr.1; do
		echo "$k: $($LS $k "$TMPD/o.$1.pb.gz" | tr '\n' ' ')"
	done
}
ctx_check() { # NAME MODE WANT
	run "$2"
	rc=$?
	ctx_sums "$2" >"$TMPD/got.$2"
	printf '%s\n' "$3" >"$TMPD/want.$2"
	if [ $rc = 0 ] && grep -qx "done $2" "$TMPD/out.$2" &&
		cmp -s "$TMPD/want.$2" "$TMPD/got.$2"; then
		pass "$1"
	else
		fail "$1" "exit $rc: $(tr '\n' ' ' <"$TMPD/got.$2") $(tail -2 "$TMPD/out.$2" | tr '\n' ' ')"
	fi
}
ctx_check otel.ctx.names ctx "http_route: /a 200 60000 0 0 
tenant: tenant-7 200 60000 0 0 
otel.attr.0: - 200 60000 0 0 
otel.attr.1: - 200 60000 0 0 "
ctx_check otel.ctx.short ctx_short "http_route: /a 200 60000 0 0 
tenant: - 200 60000 0 0 
otel.attr.0: - 200 60000 0 0 
otel.attr.1: tenant-7 200 60000 0 0 "
half="http_route: - 100 30000 0 0 /a 100 30000 0 0 
tenant: - 100 30000 0 0 tenant-7 100 30000 0 0 
otel.attr.0: - 100 30000 0 0 /a 100 30000 0 0 
otel.attr.1: - 100 30000 0 0 tenant-7 100 30000 0 0 "
ctx_check otel.ctx.late ctx_late "$half"
for b in zero sig version ptr size proto schema; do
	ctx_check "otel.ctx.$b" "ctx_$b" "$half"
done
exit $FAILED
