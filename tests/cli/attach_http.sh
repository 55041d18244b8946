#!/bin/sh
# tests/cli/attach_http.sh: `heapprof attach --http ADDR`, `heapprof detach
# PID` and the attacher's SIGINT/SIGTERM (issue 32). On attach_target.c
# (commands on a FIFO, tests/cli/attach.sh):
#   attach_http.endpoint       while attached at rate 1, /debug/pprof/heap
#                              holds exactly what site_keep allocated since
#                              (heapprof top, go tool pprof -top)
#   attach_http.detach_cmd     a session with no -d ends by heapprof detach
#                              PID: both exit 0, the profile is written
#   attach_http.restored       after it: the port is free (refused, and
#                              bindable), the threads, the descriptors and
#                              the signal masks and dispositions
#                              (/proc/PID/status Sig*) are those of before
#   attach_http.port_in_use    --http on a port in use: refused, nothing
#                              loaded nor changed in the target
#   attach_http.again          a second attach --http to the same process
#                              (library loaded already) serves again
#   attach_http.detach_none    detach with no session fails and says so
#   attach_http.other_user     (root) another uid's detach is refused and
#                              the session goes on
#   attach_http.sigint, .sigterm  the attacher ended by a signal writes the
#                              profile and exits 0
#   attach_http.busy_main      detach while the main thread is busy in malloc:
#                              the remote calls never run on the endpoint's
#                              own thread (it may hold the dump lock, and it
#                              cannot join itself)
# Prints PASS name / FAIL name / SKIP name: why.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HEAPPROF=$REPO/build/heapprof
FAILED=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; [ -n "$2" ] && echo "  $1: $2" >&2; FAILED=1; }
skip() { echo "SKIP $1: $2"; }
skip_tool() { echo "SKIP $1: missing tool $2 (Debian package ${3:-$2}; make test installs it)"; }
T=$(mktemp -d)
TPID=
APID=
BPID=
cleanup() {
	[ -n "$APID" ] && kill -9 "$APID" 2>/dev/null
	[ -n "$TPID" ] && kill -9 "$TPID" 2>/dev/null
	[ -n "$BPID" ] && kill "$BPID" 2>/dev/null
	rm -rf "$T"
}
trap cleanup EXIT
cd "$T" || exit 2
cc -O2 -g -o target "$REPO/tests/cli/attach_target.c" -lpthread || { fail attach_http.build; exit 1; }
for tool in curl python3; do
	command -v $tool >/dev/null 2>&1 || { skip_tool attach_http $tool; exit 0; }
done

# waitfor FILE PATTERN [COUNT]: until FILE has COUNT lines matching (20 s)
waitfor() {
	_n=0
	while _c=$(grep -c "$2" "$1" 2>/dev/null); [ "${_c:-0}" -lt "${3:-1}" ]; do
		_n=$((_n + 1))
		[ $_n -gt 2000 ] && return 1
		sleep 0.01
	done
}
# start: the target reading the FIFO t.in, stdout t.out
start() {
	rm -f t.in t.out; mkfifo t.in
	./target <t.in >t.out 2>t.err &
	TPID=$!
	exec 5>t.in
	OKS=0
	waitfor t.out '^ready'
}
# send CMD: one command, then its "ok" line
send() {
	echo "$1" >&5
	OKS=$((OKS + 1))
	waitfor t.out '^ok' $OKS || { echo "no answer to $1" >&2; return 1; }
}
finish() { echo quit >&5; exec 5>&-; wait "$TPID"; _rc=$?; TPID=; return $_rc; }
# state PID: what the program can observe of itself: threads, descriptors
# (number and what each is), signal mask, ignored, caught
state() {
	ls "/proc/$1/task" | wc -l
	for f in /proc/"$1"/fd/*; do echo "${f##*/} $(readlink "$f")"; done | sort -n
	grep -E '^Sig(Blk|Ign|Cgt)' "/proc/$1/status"
}
# settled PID FILE: state PID is FILE's within 2 s (a joined thread may
# stay listed for a moment)
settled() {
	_n=0
	while state "$1" >now.state; ! cmp -s "$2" now.state; do
		_n=$((_n + 1))
		[ $_n -gt 200 ] && return 1
		sleep 0.01
	done
}
# attach ARGS...: heapprof attach in the background (stderr a.err), until
# it says it is attached
attach() {
	rm -f a.err
	"$HEAPPROF" attach "$@" 2>a.err &
	APID=$!
	waitfor a.err 'attached to\|heapprof: attach:' && grep -q 'attached to' a.err
}
port_of() { sed -n 's|.*serving http://[^ ]*:\([0-9]*\)/debug/pprof/.*|\1|p' a.err; }
# has_keep PROFILE: site_keep's in-use space is 97.66kB (100 x 1000 B at rate 1)
has_keep() {
	"$HEAPPROF" top "$1" 2>&1 | grep -q '97\.66kB .*site_keep$'
}

# ---- the endpoint, detach PID, and what is left after
start
send "alloc 10 100"
state "$TPID" >before.state
if attach -r 1 --http 127.0.0.1:0 -o "$T/d.pb.gz" "$TPID"; then
	PORT=$(port_of)
	send "alloc 100 1000"
	curl -sS -m 30 -o heap.pb.gz "http://127.0.0.1:$PORT/debug/pprof/heap" 2>curl.err
	gook=1
	if command -v go >/dev/null 2>&1; then
		go tool pprof -top heap.pb.gz 2>&1 | grep -q '97\.66kB .*site_keep$' || gook=0
	else
		skip_tool attach_http.endpoint_go go golang-go
	fi
	if [ -n "$PORT" ] && has_keep heap.pb.gz && [ $gook = 1 ]; then pass attach_http.endpoint
	else fail attach_http.endpoint "port '$PORT' go $gook: $(cat a.err curl.err | head -4); $("$HEAPPROF" top heap.pb.gz 2>&1 | tail -3)"; fi
	"$HEAPPROF" detach "$TPID" >det.out 2>det.err; drc=$?
	[ $drc -ne 0 ] && kill -9 $APID 2>/dev/null # no hang
	wait $APID; arc=$?; APID=
	if [ $drc -eq 0 ] && [ $arc -eq 0 ] && grep -q "detached from $TPID.*wrote $T/d.pb.gz" det.err &&
	   has_keep d.pb.gz
	then pass attach_http.detach_cmd
	else fail attach_http.detach_cmd "detach $drc, attach $arc: $(cat det.err a.err | tail -4)"; fi
	curl -sS -m 30 -o /dev/null "http://127.0.0.1:$PORT/debug/pprof/heap" 2>curl.err; crc=$?
	python3 -c 'import socket,sys
s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", int(sys.argv[1]))); s.listen(1)' "$PORT" 2>bind.err; brc=$?
	if [ $crc -eq 7 ] && [ $brc -eq 0 ] && settled "$TPID" before.state
	then pass attach_http.restored
	else fail attach_http.restored "curl $crc, bind $brc: $(tail -1 bind.err); $(diff before.state now.state)"; fi
else
	fail attach_http.endpoint "no attach: $(cat a.err)"
	kill -9 $APID 2>/dev/null; APID=
fi

# ---- the same process again: the library is loaded, the endpoint starts again
if attach -r 1 --http localhost:0 -o "$T/e.pb.gz" "$TPID"; then
	PORT=$(port_of)
	curl -sS -m 30 -o heap2.pb.gz "http://127.0.0.1:$PORT/debug/pprof/heap" 2>curl.err; crc=$?
	kill -TERM $APID; wait $APID; arc=$?; APID=
	if [ $crc -eq 0 ] && [ $arc -eq 0 ] && "$HEAPPROF" top heap2.pb.gz >/dev/null 2>&1 &&
	   settled "$TPID" before.state
	then pass attach_http.again
	else fail attach_http.again "curl $crc, attach $arc: $(cat a.err curl.err | tail -3); $(diff before.state now.state)"; fi
else
	fail attach_http.again "no attach: $(cat a.err)"; kill -9 $APID 2>/dev/null; APID=
fi

# ---- a port in use: refused before the target is touched
finish
python3 -c 'import socket,time
s=socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(1)
print(s.getsockname()[1], flush=True); time.sleep(600)' >busy.port 2>&1 &
BPID=$!
waitfor busy.port '^[0-9]'
BUSY=$(cat busy.port)
start
state "$TPID" >before2.state
"$HEAPPROF" attach -d 5 --http "127.0.0.1:$BUSY" "$TPID" >out 2>busy.err; rc=$?
if [ $rc -ne 0 ] && grep -q 'in use' busy.err && ! grep -q libheapprof "/proc/$TPID/maps" &&
   settled "$TPID" before2.state
then pass attach_http.port_in_use
else fail attach_http.port_in_use "rc $rc: $(cat busy.err); $(grep -c libheapprof /proc/$TPID/maps) maps"; fi
kill $BPID; wait $BPID 2>/dev/null

# ---- detach with no session
"$HEAPPROF" detach "$TPID" >out 2>none.err; rc=$?
"$HEAPPROF" detach 999999999 >out 2>nopid.err; rc2=$?
if [ $rc -eq 1 ] && grep -q "process $TPID has no heapprof attach session" none.err &&
   [ $rc2 -eq 1 ] && grep -q 'no process' nopid.err
then pass attach_http.detach_none
else fail attach_http.detach_none "$rc $(cat none.err); $rc2 $(cat nopid.err)"; fi

# ---- another user's detach (root only: setpriv to nobody)
if [ "$(id -u)" -eq 0 ] && command -v setpriv >/dev/null 2>&1; then
	if attach -r 4096 -o "$T/u.pb.gz" "$TPID"; then
		setpriv --reuid=65534 --regid=65534 --clear-groups "$HEAPPROF" detach "$TPID" >out 2>other.err; orc=$?
		send "alloc 3 10"; alive=1
		kill -0 $APID 2>/dev/null || alive=0
		"$HEAPPROF" detach "$TPID" >out 2>det2.err; drc=$?
		[ $drc -ne 0 ] && kill -9 $APID 2>/dev/null # no hang
		wait $APID; arc=$?; APID=
		if [ $orc -ne 0 ] && grep -q 'only its owner or root' other.err && [ $alive = 1 ] &&
		   [ $drc -eq 0 ] && [ $arc -eq 0 ] && [ -s u.pb.gz ]
		then pass attach_http.other_user
		else fail attach_http.other_user "other $orc alive $alive detach $drc attach $arc: $(cat other.err det2.err | head -3)"; fi
	else
		fail attach_http.other_user "no attach: $(cat a.err)"; kill -9 $APID 2>/dev/null; APID=
	fi
else
	skip attach_http.other_user "needs root (another uid's detach)"
fi

finish || fail attach_http.target "the target ended with $?: $(tail -3 t.err)"

# ---- SIGINT, SIGTERM to the attacher: the profile, exit 0 (a new
# process each: a profile holds the samples of the earlier attaches too)
for sig in INT TERM; do
	name=attach_http.sig$(echo $sig | tr 'A-Z' 'a-z')
	start
	if attach -r 1 -o "$T/s.pb.gz" "$TPID"; then
		send "alloc 100 1000"
		kill -$sig $APID; wait $APID; arc=$?; APID=
		if [ $arc -eq 0 ] && grep -q 'detached from' a.err && has_keep s.pb.gz
		then pass $name
		else fail $name "attach $arc: $(tail -3 a.err)"; fi
		send free
	else
		fail $name "no attach: $(cat a.err)"; kill -9 $APID 2>/dev/null; APID=
	fi
	finish || fail attach_http.target "the target ended with $?: $(tail -3 t.err)"
done

# ---- the detach while the main thread allocates in a loop (libc most of
# the time: not a safe point); the endpoint's thread, in poll, would be
start
state "$TPID" >before3.state
if attach -r 4096 --http 127.0.0.1:0 -o "$T/b.pb.gz" "$TPID"; then
	echo "churn 4000000" >&5; OKS=$((OKS + 1))
	# until the main thread runs (it is in the churn)
	_n=0
	while [ "$(sed 's/.*) \(.\).*/\1/' /proc/$TPID/task/$TPID/stat)" != R ] && [ $_n -lt 2000 ]; do
		_n=$((_n + 1)); sleep 0.001
	done
	"$HEAPPROF" detach "$TPID" >out 2>busy.err; drc=$?
	[ $drc -ne 0 ] && kill -9 $APID 2>/dev/null
	wait $APID; arc=$?; APID=
	waitfor t.out '^ok' $OKS
	if [ $drc -eq 0 ] && [ $arc -eq 0 ] && [ -s b.pb.gz ] && settled "$TPID" before3.state
	then pass attach_http.busy_main
	else fail attach_http.busy_main "detach $drc attach $arc: $(cat busy.err | head -3); $(diff before3.state now.state)"; fi
else
	fail attach_http.busy_main "no attach: $(cat a.err)"; kill -9 $APID 2>/dev/null; APID=
fi
finish || fail attach_http.target "the target ended with $?: $(tail -3 t.err)"
exit $FAILED
