#!/bin/sh
# rel_labels.sh: label sets and the OpenTelemetry thread context under
# threads (issue 33; h19's review).
#   rel.labels.stress      8 threads intern the same 300 sets in different
#                          orders at rate 1: one pointer per set in every
#                          thread, and the profile's per-set counts exact
#   rel.labels.stress_cap  the same with HEAPPROF_LABEL_SETS=100: exactly
#                          100 sets, every other make says capped
#   rel.otel.dlpi_dlopen   a first sample inside a dl_iterate_phdr callback
#                          while another thread dlopens: the profiler's
#                          dlsym of otel_thread_ctx_v1 there deadlocked
#                          against the loader (otel.c)
. "$(dirname "$0")/lib.sh"
need_lib rel_labels
need_go rel_labels
oracle_tmpdir
P=$(dirname "$LIB")/tests
LS="python3 $REPO/tests/integration/labelsum.py"

run_t rel.labels.stress 120 env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/s.pb.gz" \
	LD_PRELOAD="$LIB" "$P/rprog_labelstress" >"$TMPD/s.out" 2>&1
if [ $RC = 0 ]; then
	grep '^TRUTH ' "$TMPD/s.out" | cut -d' ' -f2- | sort >"$TMPD/want"
	$LS tenant "$TMPD/s.pb.gz" | grep '^v' | sort >"$TMPD/got"
	if grep -qx 'sets 300 capped 0 split 0' "$TMPD/s.out" &&
		grep -qx 'mismatch 0' "$TMPD/s.out" &&
		[ "$(wc -l <"$TMPD/want")" = 300 ] && cmp -s "$TMPD/want" "$TMPD/got"; then
		pass rel.labels.stress
	else
		fail rel.labels.stress "$(head -2 "$TMPD/s.out" | tr '\n' ' ') profile: $(diff "$TMPD/want" "$TMPD/got" | head -3 | tr '\n' ' ')"
	fi
else
	fail rel.labels.stress "exit $RC"
fi

run_t rel.labels.stress_cap 120 env HEAPPROF_RATE=1 HEAPPROF_LABEL_SETS=100 \
	HEAPPROF_OUT="$TMPD/c.pb.gz" LD_PRELOAD="$LIB" "$P/rprog_labelstress" >"$TMPD/c.out" 2>&1
if [ $RC = 0 ]; then
	if grep -qx 'sets 100 capped 1600 split 0' "$TMPD/c.out" &&
		grep -qx 'mismatch 0' "$TMPD/c.out"; then
		pass rel.labels.stress_cap
	else
		fail rel.labels.stress_cap "$(head -2 "$TMPD/c.out" | tr '\n' ' ')"
	fi
else
	fail rel.labels.stress_cap "exit $RC"
fi

N=$(by_tier 3000 20000)
if run_td rel.otel.dlpi_dlopen 60 env HEAPPROF_RATE=1 HEAPPROF_OUT="$TMPD/d.pb.gz" \
	LD_PRELOAD="$LIB" "$P/rprog_oteldl" "$P/librchurn.so" "$N" >"$TMPD/d.out" 2>&1; then
	if [ $RC = 0 ] && grep -qx "ok oteldl $N" "$TMPD/d.out"; then
		pass rel.otel.dlpi_dlopen
	else
		fail rel.otel.dlpi_dlopen "exit $RC: $(tail -2 "$TMPD/d.out" | tr '\n' ' ')"
	fi
fi
exit $FAILED
