#!/bin/sh
# Dumps: every N seconds (%n numbers them), on a signal (the handler only
# wakes the dump thread; the program runs on), at exit; an unwritable output
# warns once and the program's output and status are unchanged; bad
# environment values warn in one line and fall back to the defaults.
. "$(dirname "$0")/lib.sh"
need_lib capture_dumps
need_go capture_dumps
oracle_tmpdir

# Periodic: 2.6 s at 1 s intervals gives dumps 0 and 1, and the exit dump 2.
HEAPPROF_INTERVAL=1 HEAPPROF_OUT="$TMPD/iv.%n.pb.gz" LD_PRELOAD="$LIB" \
	"$PROG/prog_sleep" 2600 >/dev/null 2>"$TMPD/iv.err"
n=$(ls "$TMPD"/iv.*.pb.gz 2>/dev/null | wc -l)
if [ "$n" -ge 3 ] && [ -f "$TMPD/iv.0.pb.gz" ] && [ -f "$TMPD/iv.1.pb.gz" ]; then
	pass dumps.interval
else
	fail dumps.interval "expected >= 3 files, got $n: $(ls "$TMPD")"
fi
check_parses dumps.interval.parses "$TMPD/iv.1.pb.gz"
if ls "$TMPD" | grep -q '\.tmp\.'; then fail dumps.no_temp_files_left; else pass dumps.no_temp_files_left; fi

# Signal: USR2 (12) raised by the program itself, then 500 ms of naps.
out=$(HEAPPROF_SIGNAL=USR2 HEAPPROF_EXIT=0 HEAPPROF_OUT="$TMPD/sig.%n.pb.gz" \
	LD_PRELOAD="$LIB" "$PROG/prog_sleep" 500 12 2>"$TMPD/sig.err")
if [ "$out" = done ] && [ -f "$TMPD/sig.0.pb.gz" ]; then
	pass dumps.signal
else
	fail dumps.signal "output '$out', files: $(ls "$TMPD" | grep sig)"
fi
if [ ! -f "$TMPD/sig.1.pb.gz" ]; then pass dumps.exit_dump_off; else fail dumps.exit_dump_off; fi

# Unwritable output: one warning, same output and status.
out=$(HEAPPROF_INTERVAL=1 HEAPPROF_OUT=/nonexistent/dir/x.pb.gz LD_PRELOAD="$LIB" \
	"$PROG/prog_sleep" 2200 2>"$TMPD/nw.err")
rc=$?
nw=$(grep -c 'cannot write profile' "$TMPD/nw.err")
if [ "$out" = done ] && [ $rc -eq 0 ] && [ "$nw" -eq 1 ]; then
	pass dumps.unwritable_warns_once
else
	fail dumps.unwritable_warns_once "out '$out' rc $rc warnings $nw"
fi

# Bad environment values: one line each, defaults used, program unchanged.
out=$(HEAPPROF_RATE=lots HEAPPROF_DEPTH=999 HEAPPROF_SIGNAL=KILL HEAPPROF_FORMAT=xml \
	HEAPPROF_OUT="$TMPD/env.pb.gz" LD_PRELOAD="$LIB" "$PROG/prog_sleep" 10 2>"$TMPD/env.err")
nl=$(grep -c '^heapprof\[' "$TMPD/env.err")
if [ "$out" = done ] && [ "$nl" -eq 4 ] && grep -q "HEAPPROF_RATE='lots'" "$TMPD/env.err"; then
	pass dumps.bad_env_warns
else
	fail dumps.bad_env_warns "out '$out', $nl warning lines: $(cat "$TMPD/env.err")"
fi
if go tool pprof -raw -symbolize=none "$TMPD/env.pb.gz" 2>/dev/null | grep -q '^Period: 524288'; then
	pass dumps.bad_env_default_rate
else
	fail dumps.bad_env_default_rate "profile missing or period not 524288"
fi
exit $FAILED
