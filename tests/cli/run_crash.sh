#!/bin/sh
# tests/cli/run_crash.sh: `heapprof run` on a command that dies of a signal
# before writing a profile (abort, SIGSEGV) says so on stderr (it printed
# nothing: issue 30, item 8) and still dies of the same signal.
#   run_crash.segv    "heapprof: ./crash died of SIGSEGV before writing a profile", status 139
#   run_crash.abort   the same for SIGABRT, status 134
#   run_crash.clean   a normal exit names the file written and says nothing of dying
# Prints PASS name / FAIL name.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HEAPPROF=$REPO/build/heapprof
FAILED=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; [ -n "$2" ] && echo "  $1: $2" >&2; FAILED=1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cd "$T" || exit 2
cat >crash.c <<'C'
#include <signal.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv)
{
	char *p = malloc(1000);
	memset(p, 1, 1000);
	if (argc > 1 && argv[1][0] == 'a')
		abort();
	if (argc > 1 && argv[1][0] == 's')
		raise(SIGSEGV);
	free(p);
	return 0;
}
C
${CC:-gcc} -o crash crash.c || { fail run_crash "cc failed"; exit 1; }

check() { # NAME ARG SIGNAME STATUS
	# an inner shell reports the death (its "Segmentation fault" line to
	# /dev/null); heapprof's own stderr goes to err
	sh -c 'ulimit -c 0; "$@" 2>err; echo $? >rc' sh \
		"$HEAPPROF" run -r 1 -o "$T/p.pb.gz" -- ./crash "$2" >out 2>/dev/null
	rc=$(cat rc)
	if [ $rc -eq "$4" ] && [ ! -e p.pb.gz ] &&
		grep -qx "heapprof: ./crash died of $3 before writing a profile" err; then
		pass "$1"
	else
		fail "$1" "status $rc, stderr: $(head -3 err)"
	fi
}
check run_crash.segv s SIGSEGV 139
check run_crash.abort a SIGABRT 134

"$HEAPPROF" run -r 1 -o "$T/p.pb.gz" -- ./crash >out 2>err
rc=$?
if [ $rc -eq 0 ] && grep -qx "heapprof: wrote $T/p.pb.gz" err && ! grep -q died err; then
	pass run_crash.clean
else
	fail run_crash.clean "status $rc, stderr: $(head -3 err)"
fi
exit $FAILED
