#!/bin/sh
# The legacy text form and the pprof form of one heap state give the same
# totals in pprof (text carries raw counts and heap_v2/RATE; pprof unsamples
# them with the same formula as our proto writer), at rate 1 and at the
# default rate. Also: heapprof_dump_file() through the API.
. "$(dirname "$0")/lib.sh"
need_lib capture_text
need_go capture_text
oracle_tmpdir
for rate in 1 524288; do
	if ! HEAPPROF_RATE=$rate HEAPPROF_EXIT=0 LD_PRELOAD="$LIB" "$PROG/prog_api" "$TMPD/r$rate" 2>"$TMPD/err"; then
		fail "text.r$rate.program" "$(head -3 "$TMPD/err")"
		continue
	fi
	pass "text.r$rate.program"
	check_parses "text.r$rate.proto_parses" "$TMPD/r$rate.pb.gz"
	check_parses "text.r$rate.text_parses" "$TMPD/r$rate.heap"
	check_parses "text.r$rate.dump_file_parses" "$TMPD/r$rate.file.pb.gz"
	grep -q "@ heap_v2/$rate\$" "$TMPD/r$rate.heap" && pass "text.r$rate.header" ||
		fail "text.r$rate.header" "$(head -1 "$TMPD/r$rate.heap")"
	grep -q '^MAPPED_LIBRARIES:' "$TMPD/r$rate.heap" && pass "text.r$rate.maps" ||
		fail "text.r$rate.maps" "no MAPPED_LIBRARIES section"
	# The in-use profile (seed 001): alloc values 0, in-use as the full one.
	check_parses "text.r$rate.inuse_parses" "$TMPD/r$rate.inuse.pb.gz"
	za=$(go tool pprof -top -sample_index=alloc_space -unit=B "$TMPD/r$rate.inuse.pb.gz" 2>/dev/null | grep -o 'of [0-9.]*B* total')
	iu=$(go tool pprof -top -sample_index=inuse_space -unit=B "$TMPD/r$rate.inuse.pb.gz" 2>/dev/null | grep -o 'of [0-9.]*B* total')
	fu=$(go tool pprof -top -sample_index=inuse_space -unit=B "$TMPD/r$rate.pb.gz" 2>/dev/null | grep -o 'of [0-9.]*B* total')
	if { [ "$za" = "of 0B total" ] || [ "$za" = "of 0 total" ]; } && [ -n "$iu" ] && [ "$iu" = "$fu" ]; then
		pass "text.r$rate.inuse_profile"
	else
		fail "text.r$rate.inuse_profile" "alloc '$za', inuse '$iu' vs full '$fu'"
	fi
	ni=$("$PPROFCHECK" samples "$TMPD/r$rate.inuse.pb.gz" 2>/dev/null | wc -l)
	nf=$("$PPROFCHECK" samples "$TMPD/r$rate.pb.gz" 2>/dev/null | wc -l)
	[ "$ni" -lt "$nf" ] && pass "text.r$rate.inuse_drops_empty_samples" ||
		fail "text.r$rate.inuse_drops_empty_samples" "$ni samples vs $nf"
	for idx in alloc_objects alloc_space inuse_objects inuse_space; do
		a=$(go tool pprof -top -sample_index=$idx -unit=B "$TMPD/r$rate.pb.gz" 2>/dev/null | grep -o 'of [0-9.]*B* total')
		b=$(go tool pprof -top -sample_index=$idx -unit=B "$TMPD/r$rate.heap" 2>/dev/null | grep -o 'of [0-9.]*B* total')
		if [ -n "$a" ] && [ "$a" = "$b" ]; then
			pass "text.r$rate.$idx.same_total"
		else
			fail "text.r$rate.$idx.same_total" "proto '$a' vs text '$b'"
		fi
	done
done
exit $FAILED
