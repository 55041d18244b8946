#!/bin/sh
# The dump's own stack under an address-space limit: exit() from a handler
# on a 16 KiB signal stack after the program set RLIMIT_AS to what it uses
# plus 1 MiB (a smaller dump stack fits) or 64 KiB (none fits: no profile,
# one warning). The exit dump ran on the signal stack when its 4 MiB stack
# could not be mapped: SIGSEGV (139) instead of status 3.
# Program rprog_dumpstack.c.
. "$(dirname "$0")/lib.sh"
need_lib rel.dumpstack
oracle_tmpdir
P="$PROG/rprog_dumpstack"

same3 rel.dumpstack.room1m 60 "$P" 1024
same3 rel.dumpstack.room64k 60 "$P" 64
# With the libraries loaded at start (an interval is set), the 1 MiB case
# writes its exit profile, and it decodes.
d=$TMPD/libs; mkdir -p "$d"
run_t rel.dumpstack.profile 60 env HEAPPROF_RATE=1 HEAPPROF_INTERVAL=1000 \
	HEAPPROF_OUT="$d/p.pb.gz" LD_PRELOAD="$LIB" "$P" 1024 >"$d/out" 2>"$d/err"
f=$(ls "$d"/p*.pb.gz 2>/dev/null | head -1)
if [ $RC -eq 3 ] && [ -s "$f" ]; then
	parses rel.dumpstack.profile "$f"
else
	fail rel.dumpstack.profile "status $RC: $(ls "$d" | tr '\n' ' ') $(head -c 300 "$d/err")"
fi
exit $FAILED
