#!/bin/sh
# tests/cli/attach_review.sh: defects found reviewing heapprof attach
# (issue 32), on attach_review_target.c:
#   attach_review.exec   the target runs exec while attached; the detach
#                        then calls nothing in the new program (it crashed
#                        it with SIGSEGV: the old library's addresses), says
#                        so and fails; the new program runs on and exits 0
# Prints PASS name / FAIL name / SKIP name: why.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HEAPPROF=$REPO/build/heapprof
FAILED=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; [ -n "$2" ] && echo "  $1: $2" >&2; FAILED=1; }
T=$(mktemp -d)
TPID=
APID=
cleanup() {
	[ -n "$APID" ] && kill -9 "$APID" 2>/dev/null
	[ -n "$TPID" ] && kill -9 "$TPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 2
cc -O2 -g -o target "$REPO/tests/cli/attach_review_target.c" || { fail attach_review.build; exit 1; }

# waitfor FILE PATTERN [COUNT]: until FILE has COUNT lines matching (20 s)
waitfor() {
	_n=0
	while _c=$(grep -c "$2" "$1" 2>/dev/null); [ "${_c:-0}" -lt "${3:-1}" ]; do
		_n=$((_n + 1))
		[ $_n -gt 2000 ] && return 1
		sleep 0.01
	done
}
start() {
	rm -f t.in t.out; mkfifo t.in
	./target <t.in >t.out 2>t.err &
	TPID=$!
	exec 5>t.in
	waitfor t.out '^ready'
}
# attach_bg: heapprof attach TPID in the background until its detach
attach_bg() {
	"$HEAPPROF" attach "$TPID" -o "$T/p.pb.gz" "$@" 2>a.err &
	APID=$!
	waitfor a.err 'attached to' || { cat a.err >&2; return 1; }
}

# ---- exec while attached
start
if attach_bg; then
	echo alloc >&5
	waitfor t.out '^ok'
	echo exec >&5
	waitfor t.out '^execd'
	"$HEAPPROF" detach "$TPID" >d.out 2>d.err
	drc=$?
	wait "$APID"; arc=$?; APID=
	echo x >&5; exec 5>&-
	wait "$TPID"; trc=$?; TPID=
	if [ "$trc" -ne 0 ] || ! grep -q '^bye' t.out; then
		fail attach_review.exec "the exec'd program ended with $trc after the detach: $(cat a.err)"
	elif [ "$drc" -eq 0 ] || [ "$arc" -eq 0 ] || ! grep -q 'ran exec while attached' a.err; then
		fail attach_review.exec "detach $drc, attach $arc, not said: $(cat a.err)"
	else
		pass attach_review.exec
	fi
else
	fail attach_review.exec "no attach"
	exec 5>&-
fi

exit $FAILED
