#!/bin/sh
# tests/cli/run_slips.sh: issue 14's CLI slips. `heapprof help run` is
# run's help; a bad option is one `heapprof:` line and status 2; `-o --`
# is refused (it named a file "--"); `--http` with a non-loopback address
# is refused with status 2 (it ran with the endpoint off, status 0); a
# misspelled HEAPPROF_ variable is named in a warning.
# Prints PASS name / FAIL name.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HEAPPROF=$REPO/build/heapprof
LIB=$REPO/build/libheapprof.so
FAILED=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; [ -n "$2" ] && echo "  $1: $2" >&2; FAILED=1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 2

"$HEAPPROF" help run >out 2>&1
if [ $? -eq 0 ] && head -1 out | grep -q '^usage: heapprof run'; then pass slips.help_run
else fail slips.help_run "$(head -2 out)"; fi

"$HEAPPROF" run --bogus -- true >out 2>err
rc=$?
if [ $rc -eq 2 ] && [ "$(wc -l <err)" -eq 1 ] && grep -q "^heapprof: run: .*'--bogus'" err && [ ! -s out ]
then pass slips.unknown_option_one_line
else fail slips.unknown_option_one_line "status $rc, $(wc -l <err) lines: $(head -2 err)"; fi

"$HEAPPROF" run -o -- true >out 2>err
rc=$?
if [ $rc -eq 2 ] && [ ! -e ./-- ] && grep -q '^heapprof: run: -o' err; then pass slips.output_dashdash
else fail slips.output_dashdash "status $rc, $(ls) $(head -1 err)"; fi

"$HEAPPROF" run --http 0.0.0.0:6060 -- true >out 2>err
rc=$?
if [ $rc -eq 2 ] && grep -q 'not a loopback address' err; then pass slips.http_remote_refused
else fail slips.http_remote_refused "status $rc: $(head -2 err)"; fi
HEAPPROF_HTTP_ALLOW_REMOTE=1 "$HEAPPROF" run -o "$T/ok.pb.gz" --http 0.0.0.0:0 -- true >out 2>err
rc=$?
if [ $rc -eq 0 ]; then pass slips.http_remote_allowed
else fail slips.http_remote_allowed "status $rc: $(head -2 err)"; fi

HEAPPROF_OUTPUT=x.pb.gz LD_PRELOAD="$LIB" HEAPPROF_OUT="$T/w.pb.gz" /bin/true 2>err
if grep -q 'HEAPPROF_OUTPUT is not a heapprof variable' err; then pass slips.misspelled_variable_named
else fail slips.misspelled_variable_named "$(head -2 err)"; fi
LD_PRELOAD="$LIB" HEAPPROF_OUT="$T/w2.pb.gz" HEAPPROF_RATE=1 /bin/true 2>err
if [ ! -s err ]; then pass slips.known_variables_silent
else fail slips.known_variables_silent "$(head -2 err)"; fi
exit $FAILED
