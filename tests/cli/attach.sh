#!/bin/sh
# tests/cli/attach.sh: heapprof attach (issue 32). A program that reads
# commands from a FIFO is attached to while it runs: at rate 1 the profile
# of what site_keep allocated after the attach is exact (the program prints
# the truth); the blocks sampled while attached are freed after the detach
# without harm; attach/detach cycles (10, 100 under REL_TIER=stress) while
# the program works, its threads churn, leave its output identical to a
# run with no attach; the same for python3 and for the program under
# jemalloc; the refusals say why.
# Prints PASS name / FAIL name / SKIP name: why.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HEAPPROF=$REPO/build/heapprof
PROFSUM="python3 $REPO/tests/integration/profsum.py"
FAILED=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; [ -n "$2" ] && echo "  $1: $2" >&2; FAILED=1; }
skip() { echo "SKIP $1: $2"; }
CYCLES=${ATTACH_CYCLES:-10}
[ "${REL_TIER:-fast}" = stress ] && CYCLES=100
T=$(mktemp -d)
TPID=
cleanup() { [ -n "$TPID" ] && kill -9 "$TPID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
[ -n "${ATTACH_KEEP:-}" ] && trap - EXIT && echo "kept $T" >&2
cd "$T" || exit 2
cc -O2 -g -o target "$REPO/tests/cli/attach_target.c" -lpthread || { fail attach.build; exit 1; }

# waitfor FILE PATTERN [COUNT]: until FILE has COUNT lines matching (20 s)
waitfor() {
	_n=0
	while _c=$(grep -c "$2" "$1" 2>/dev/null); [ "${_c:-0}" -lt "${3:-1}" ]; do
		_n=$((_n + 1))
		[ $_n -gt 2000 ] && return 1
		sleep 0.01
	done
	return 0
}
# start NAME CMD...: CMD reading the FIFO NAME.in, stdout NAME.out
start() {
	_nm=$1; shift
	rm -f "$_nm.in"; mkfifo "$_nm.in"
	"$@" <"$_nm.in" >"$_nm.out" 2>"$_nm.err" &
	TPID=$!
	exec 5>"$_nm.in"
	waitfor "$_nm.out" '^ready'
}
# send NAME CMD: one command, then its "ok" line
OKS=0
send() {
	echo "$2" >&5
	OKS=$((OKS + 1))
	waitfor "$1.out" '^ok' $OKS || { echo "no answer to $2" >&2; return 1; }
}
finish() { echo quit >&5; exec 5>&-; wait "$TPID"; _rc=$?; TPID=; return $_rc; }

# ---- exact at rate 1, and frees after the detach
start ex ./target
OKS=0
send ex "alloc 10 100"; send ex "churn 100"
"$HEAPPROF" attach -r 1 -o "$T/ex.pb.gz" "$TPID" 2>ex.attach &
APID=$!
if waitfor ex.attach 'attached to'; then
	send ex mark; send ex "alloc 1000 1000"; send ex "alloc 50 100000"
	send ex free; send ex "churn 2000"; send ex "threads 4"
	echo truth >&5; waitfor ex.err '^EXPECT'
	kill -INT $APID; wait $APID; arc=$?
	# the blocks sampled while attached, freed now
	send ex free; send ex free; send ex "churn 1000"; send ex "threads 2"
	finish; trc=$?
	if [ $arc -eq 0 ] && [ $trc -eq 0 ] && grep -q '^end' ex.out; then pass attach.detach_frees
	else fail attach.detach_frees "attach $arc, target $trc: $(cat ex.attach ex.err | head -5)"; fi
	grep '^EXPECT' ex.err >ex.exp
	$PROFSUM check attach.exact ex.exp 0 "$T/ex.pb.gz" || FAILED=1
	if go tool pprof -comments "$T/ex.pb.gz" 2>/dev/null | grep -q 'attached to the running process at .*since the attach'
	then pass attach.comment_window
	else fail attach.comment_window "$(go tool pprof -comments "$T/ex.pb.gz" 2>&1 | tail -2)"; fi
	pa=$(sed -n 's/.*attached to [0-9]* (paused \([0-9.]*\) ms).*/\1/p' ex.attach)
	pd=$(sed -n 's/.*detached from [0-9]* (paused \([0-9.]*\) ms).*/\1/p' ex.attach)
	echo "  attach pause ${pa} ms, detach pause ${pd} ms" >&2
else
	fail attach.exact "no attach: $(cat ex.attach)"; kill -9 $APID 2>/dev/null; finish
fi

# ---- cycles: the program's output as without an attach
# script NAME: the commands of a cycle run
cycle_cmds() { echo "alloc 20 3000"; echo "churn 300"; echo free; echo "threads 2"; }
cycles() { # NAME ATTACH(0/1) CMD...
	_nm=$1 _att=$2; shift 2
	start "$_nm" "$@"; OKS=0
	_bad=0 _i=0
	while [ $_i -lt $CYCLES ]; do
		if [ "$_att" = 1 ]; then
			# attached while the program works; detached with some of
			# its sampled blocks still in use
			"$HEAPPROF" attach -r 4096 -o "$T/$_nm.$_i.pb.gz" "$TPID" 2>>"$_nm.attach" &
			_ap=$!
			waitfor "$_nm.attach" 'attached to' $((_i + 1)) || _bad=$((_bad + 1))
		fi
		cycle_cmds | while read -r c; do send "$_nm" "$c" || exit 1; done || _bad=$((_bad + 1))
		OKS=$(grep -c '^ok' "$_nm.out")
		if [ "$_att" = 1 ]; then
			kill -INT $_ap; wait $_ap || _bad=$((_bad + 1))
		fi
		_i=$((_i + 1))
	done
	finish || _bad=$((_bad + 1))
	return $_bad
}
# sampled NAME: every cycle's profile has samples
sampled() {
	for _f in "$T/$1".*.pb.gz; do
		go tool pprof -comments "$_f" 2>/dev/null | grep -q 'buckets=[1-9]' || return 1
	done
}
cycles plain 0 ./target; prc=$?
cycles att 1 ./target; arc=$?
if [ $prc -eq 0 ] && [ $arc -eq 0 ] && cmp -s plain.out att.out && [ ! -s att.err ] &&
   [ "$(grep -c 'detached from' att.attach)" -eq $CYCLES ] && sampled att
then pass attach.cycles_c
else fail attach.cycles_c "failures $prc/$arc; $(diff plain.out att.out | head -3); $(head -3 att.err att.attach)"; fi

JE=/usr/lib/x86_64-linux-gnu/libjemalloc.so.2
if [ -e $JE ]; then
	cycles jplain 0 env LD_PRELOAD=$JE ./target; prc=$?
	cycles jatt 1 env LD_PRELOAD=$JE ./target; arc=$?
	if [ $prc -eq 0 ] && [ $arc -eq 0 ] && cmp -s jplain.out jatt.out && [ ! -s jatt.err ] &&
	   [ "$(grep -c 'detached from' jatt.attach)" -eq $CYCLES ] && sampled jatt
	then pass attach.cycles_jemalloc
	else fail attach.cycles_jemalloc "failures $prc/$arc; $(diff jplain.out jatt.out | head -3); $(head -3 jatt.err jatt.attach)"; fi
else
	skip attach.cycles_jemalloc "missing tool libjemalloc2"
fi

# python3: a loop over dicts, lists and strings, one command a line
cat >py.py <<'PY'
import sys
print("ready", flush=True)
acc, keep = 0, []
for line in sys.stdin:
    w = line.split()
    if not w or w[0] == "quit":
        break
    if w[0] == "alloc":
        keep.extend("x" * int(w[2]) + str(i) for i in range(int(w[1])))
    elif w[0] == "free":
        keep = keep[::2]
    elif w[0] in ("churn", "threads"):
        for i in range(int(w[1]) * 10):
            d = {str(j): [j] * 8 for j in range(8)}
            acc = (acc + len(d) + len(repr(d))) % 1000003
    print("ok", acc, len(keep), flush=True)
print("end", acc)
PY
cycles pyplain 0 python3 py.py; prc=$?
cycles pyatt 1 python3 py.py; arc=$?
if [ $prc -eq 0 ] && [ $arc -eq 0 ] && cmp -s pyplain.out pyatt.out && [ ! -s pyatt.err ] &&
   [ "$(grep -c 'detached from' pyatt.attach)" -eq $CYCLES ] && sampled pyatt
then pass attach.cycles_python3
else fail attach.cycles_python3 "failures $prc/$arc; $(diff pyplain.out pyatt.out | head -3); $(head -3 pyatt.err pyatt.attach)"; fi

# ---- refusals
"$HEAPPROF" attach -d 0 999999999 >out 2>err; rc=$?
if [ $rc -ne 0 ] && grep -q 'no process' err; then pass attach.refuse_nopid
else fail attach.refuse_nopid "$rc $(cat err)"; fi
if cc -static -O2 -o static "$REPO/tests/cli/attach_target.c" -lpthread 2>/dev/null; then
	start st ./static
	"$HEAPPROF" attach -d 0 "$TPID" >out 2>err; rc=$?
	finish
	if [ $rc -ne 0 ] && grep -q 'statically linked' err; then pass attach.refuse_static
	else fail attach.refuse_static "$rc $(cat err)"; fi
else
	skip attach.refuse_static "no static libc to link with"
fi
start pre env LD_PRELOAD="$REPO/build/libheapprof.so" HEAPPROF_OUT=/dev/null ./target
"$HEAPPROF" attach -d 0 "$TPID" >out 2>err; rc=$?
finish
if [ $rc -ne 0 ] && grep -q 'already profiled' err; then pass attach.refuse_profiled
else fail attach.refuse_profiled "$rc $(cat err)"; fi
# seccomp: a filter installed by the program (python3's prctl is not at
# hand everywhere: a small C program)
cat >sc.c <<'C'
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>
int main(void) {
	struct sock_filter f[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
	struct sock_fprog p = {1, f};
	prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &p) != 0) return 1;
	printf("ready\n"); fflush(stdout);
	char b[64];
	while (fgets(b, sizeof b, stdin)) ;
	return 0;
}
C
cc -o sc sc.c && start sc ./sc && { "$HEAPPROF" attach -d 0 "$TPID" >out 2>err; rc=$?; finish; }
if [ $rc -ne 0 ] && grep -q 'seccomp' err; then pass attach.refuse_seccomp
else fail attach.refuse_seccomp "$rc $(cat err)"; fi
exit $FAILED
