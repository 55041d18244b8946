#!/bin/sh
# The /debug/pprof endpoint against real clients: go tool pprof reads
# /heap and /allocs from a running C program; allocs?seconds=2 holds only
# the allocations made in those two seconds, with a 2 s duration; debug=1
# is legacy text with the same totals; bad requests get Go's status codes
# and texts; 200 concurrent requests while the host allocates all succeed
# and the host's output is unchanged; a non-loopback address is refused
# unless HEAPPROF_HTTP_ALLOW_REMOTE=1, which binds it and answers any Host.
# No sleep decides anything: the programs say when they are ready (a file),
# the delta client when the server has read its request, and the window is
# checked against the times the server and the program report.
. "$(dirname "$0")/lib.sh"
need_lib serve_http
need_go serve_http
oracle_tmpdir
command -v curl >/dev/null || { skip_tool serve_http curl; exit 0; }
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
# wait_for NAME FILE PID SECS: until FILE exists (0); FAIL NAME and 1 if
# process PID ended first or SECS went by.
wait_for() {
	_i=0
	while [ ! -e "$2" ]; do
		if ! kill -0 "$3" 2>/dev/null || [ $_i -ge $(($4 * 50)) ]; then
			fail "$1" "no $(basename "$2") after $((_i / 50)) s (process $3 $(kill -0 "$3" 2>/dev/null && echo running || echo gone))"
			return 1
		fi
		sleep 0.02
		_i=$((_i + 1))
	done
}
# serving NAME PORT PID SECS: until the endpoint at PORT answers (0); FAIL
# NAME and 1 if process PID ended first or SECS went by.
serving() {
	_i=0
	until curl -s -o /dev/null "http://127.0.0.1:$2/debug/pprof/cmdline"; do
		if ! kill -0 "$3" 2>/dev/null || [ $_i -ge $(($4 * 10)) ]; then
			fail "$1" "port $2 not answering after $((_i / 10)) s"
			return 1
		fi
		sleep 0.1
		_i=$((_i + 1))
	done
}
DELTA_CLIENT="python3 $REPO/tests/integration/delta_client.py"
port=$(free_port)
url=http://127.0.0.1:$port/debug/pprof
W=$TMPD/w
mkdir -p "$W"
HEAPPROF_RATE=1 HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$port LD_PRELOAD="$LIB" \
	"$PROG/prog_window" "$W" >"$TMPD/win.exp" 2>"$TMPD/win.err" &
pid=$!
# The endpoint listens before main() runs: "ready" means it is up.
if ! wait_for http.ready "$W/ready" $pid 60; then
	kill $pid 2>/dev/null
	exit 1
fi

# Cumulative profiles, read by go tool pprof straight from the endpoint.
if go tool pprof -raw -symbolize=none "$url/heap" >"$TMPD/heap.raw" 2>"$TMPD/heap.err"; then
	pass http.heap.go_tool_pprof
else
	fail http.heap.go_tool_pprof "$(tail -3 "$TMPD/heap.err")"
fi
curl -s -D "$TMPD/allocs.h" -o "$TMPD/allocs.pb.gz" "$url/allocs"
if grep -qi '^Content-Type: application/octet-stream' "$TMPD/allocs.h" &&
	grep -qi '^Content-Disposition: attachment; filename="allocs"' "$TMPD/allocs.h" &&
	grep -qi '^X-Content-Type-Options: nosniff' "$TMPD/allocs.h"; then
	pass http.allocs.headers
else
	fail http.allocs.headers "$(cat "$TMPD/allocs.h")"
fi
if go tool pprof -raw -symbolize=none "$TMPD/allocs.pb.gz" 2>/dev/null | grep -q 'alloc_space/bytes\[dflt\]'; then
	pass http.allocs.default_alloc_space
else
	fail http.allocs.default_alloc_space
fi
# debug=1: legacy text, same in-use total as the proto (the host is idle).
curl -s -D "$TMPD/txt.h" -o "$TMPD/heap.txt" "$url/heap?debug=1"
curl -s -o "$TMPD/heap.pb.gz" "$url/heap"
grep -qi '^Content-Type: text/plain; charset=utf-8' "$TMPD/txt.h" && ! grep -qi 'Content-Disposition' "$TMPD/txt.h" &&
	pass http.debug1.headers || fail http.debug1.headers "$(cat "$TMPD/txt.h")"
a=$(go tool pprof -top -sample_index=inuse_space -unit=B "$TMPD/heap.pb.gz" 2>/dev/null | grep -o 'of [0-9.]*B* total')
# (pprof gives legacy text two types only when nothing was freed.)
b=$(go tool pprof -top -sample_index=inuse_space -unit=B "$TMPD/heap.txt" 2>/dev/null | grep -o 'of [0-9.]*B* total')
[ -n "$b" ] || b=$(go tool pprof -top -sample_index=space -unit=B "$TMPD/heap.txt" 2>/dev/null | grep -o 'of [0-9.]*B* total')
if [ -n "$a" ] && [ "$a" = "$b" ]; then pass http.debug1.same_total; else
	fail http.debug1.same_total "proto '$a' text '$b'"; fi

# Go's errors.
code() { curl -s -o "$TMPD/body" -w '%{http_code}' "$@"; }
[ "$(code "$url/heap?seconds=abc")" = 400 ] && grep -qx 'invalid value for "seconds" - must be a positive integer' "$TMPD/body" &&
	pass http.err.seconds_invalid || fail http.err.seconds_invalid "$(cat "$TMPD/body")"
[ "$(code "$url/heap?seconds=0")" = 400 ] && pass http.err.seconds_zero || fail http.err.seconds_zero
[ "$(code "$url/heap?seconds=1&debug=1")" = 400 ] && grep -qx 'seconds and debug params are incompatible' "$TMPD/body" &&
	pass http.err.seconds_debug || fail http.err.seconds_debug "$(cat "$TMPD/body")"
[ "$(code "$url/heap?seconds=100000")" = 400 ] && grep -q "WriteTimeout" "$TMPD/body" &&
	pass http.err.seconds_too_long || fail http.err.seconds_too_long
[ "$(code "$url/goroutine")" = 404 ] && grep -qx 'Unknown profile' "$TMPD/body" &&
	pass http.err.unknown_profile || fail http.err.unknown_profile
[ "$(code "http://127.0.0.1:$port/nothing")" = 404 ] && pass http.err.not_found || fail http.err.not_found
[ "$(code -X POST "$url/heap")" = 405 ] && pass http.err.post || fail http.err.post
[ "$(code "$url/heap?gc=1")" = 200 ] && pass http.gc_ignored || fail http.gc_ignored
[ "$(code "$url/")" = 200 ] && grep -q "href='heap?debug=1'" "$TMPD/body" && pass http.index || fail http.index
c=$(code -H "Host: profiler.example:$port" "$url/cmdline")
[ "$c" = 403 ] && pass http.loopback_host_only || fail http.loopback_host_only "status $c"
long=$(python3 -c 'print("a"*5000)')
c=$(code "$url/heap?x=$long")
[ "$c" = 431 ] || [ "$c" = 414 ] && pass http.err.oversized || fail http.err.oversized "status $c"

# A delta window around exactly the site_window phase. The client says
# when the server has read the request (it takes the baseline in that same
# turn of its loop), and the phase starts then. The profile says when the
# baseline was taken (time_nanos - duration_nanos) and prog_window when
# the phase ran: if a loaded machine still put the phase partly outside
# the window, it runs again with a fresh program (3 attempts), and fails if
# it never was inside: the exact counts are only checked on a window that
# held the phase.
touch "$W/go" "$W/go2" "$W/quit"
wait $pid
delta_try() {
	D=$TMPD/delta$1
	mkdir -p "$D"
	p=$(free_port)
	HEAPPROF_RATE=1 HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$p LD_PRELOAD="$LIB" \
		"$PROG/prog_window" "$D" >/dev/null 2>"$D/err" &
	dpid=$!
	rc=1
	if wait_for http.delta.ready "$D/ready" $dpid 60; then
		$DELTA_CLIENT get "$p" "/debug/pprof/allocs?seconds=2" "$D" 2>"$D/client.err" &
		cl=$!
		wait_for http.delta.request_read "$D/read" $cl 90 && rc=0
		touch "$D/go"
		wait $cl || { rc=1; fail http.delta.client "$(tail -2 "$D/client.err")"; }
	fi
	touch "$D/go" "$D/go2" "$D/quit"
	wait $dpid
	return $rc
}
attempt=1
held=0
while [ $attempt -le 3 ] && delta_try $attempt; do
	read -r S E <"$D/done"
	read -r T0 T1 <"$D/times"
	read -r t d <<EOT
$($DELTA_CLIENT times "$D/body")
EOT
	base=$((t - d))
	if [ "$base" -le "$S" ] && [ "$E" -le "$t" ]; then held=1; break; fi
	echo "  http.delta: attempt $attempt: window $base..$t, phase $S..$E; again" >&2
	attempt=$((attempt + 1))
done
if [ $held = 1 ]; then
	pass http.delta.window_held_phase
	grep -qi 'filename="allocs-delta"' "$D/headers" && pass http.delta.filename ||
		fail http.delta.filename "$(cat "$D/headers")"
	printf 'EXPECT site_window 500 1500000 400 1200000\nEXPECT site_before 0 0 0 0\nEXPECT site_after 0 0 0 0\n' >"$TMPD/window.exp"
	$PROFSUM check http.delta "$TMPD/window.exp" 0 "$D/body" || FAILED=1
	# The window the server reports: at least the 2 s asked, inside the
	# client's request, and not much longer than asked.
	if [ "$d" -ge 2000000000 ] && [ "$d" -lt 3500000000 ] &&
	   [ "$T0" -le "$base" ] && [ "$t" -le "$T1" ]; then
		pass http.delta.duration_2s
	else
		fail http.delta.duration_2s "server window $base..$t ($d ns), client $T0..$T1"
	fi
elif [ -f "$D/times" ]; then
	fail http.delta.window_held_phase "3 attempts; last: window $base..$t, phase $S..$E"
fi

# 200 concurrent requests (100 at a time) while the host allocates on two
# threads; its output must be what it prints without the profiler.
port2=$(free_port)
touch "$TMPD/stop0"
"$PROG/prog_busy" "$TMPD/stop0" >"$TMPD/base.out"
HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$port2 LD_PRELOAD="$LIB" \
	"$PROG/prog_busy" "$TMPD/stop" >"$TMPD/busy.out" 2>"$TMPD/busy.err" &
bpid=$!
serving http.concurrent.ready "$port2" $bpid 60 || { touch "$TMPD/stop"; wait $bpid; exit 1; }
seq 200 | xargs -P 100 -I{} sh -c "curl -s -m 60 -o '$TMPD/c{}.pb.gz' -w '%{http_code}\n' 'http://127.0.0.1:$port2/debug/pprof/heap'" >"$TMPD/codes"
touch "$TMPD/stop"
wait $bpid
brc=$?
ok=$(grep -c '^200$' "$TMPD/codes")
valid=0
for i in $(seq 200); do "$PPROFCHECK" check "$TMPD/c$i.pb.gz" >/dev/null 2>&1 && valid=$((valid + 1)); done
if [ "$ok" -eq 200 ] && [ "$valid" -eq 200 ]; then pass http.concurrent_200; else
	fail http.concurrent_200 "$ok responses 200, $valid valid profiles"; fi
if [ $brc -eq 0 ] && cmp -s "$TMPD/base.out" "$TMPD/busy.out"; then pass http.host_output_unchanged; else
	fail http.host_output_unchanged "rc $brc; $(head -3 "$TMPD/busy.err")"; fi

# Loopback only unless opted in.
out=$(HEAPPROF_EXIT=0 HEAPPROF_HTTP=0.0.0.0:$port2 LD_PRELOAD="$LIB" "$PROG/prog_sleep" 10 2>&1)
echo "$out" | grep -q 'not a loopback address' && echo "$out" | grep -q '^done$' &&
	pass http.refuses_non_loopback || fail http.refuses_non_loopback "$out"
# HEAPPROF_HTTP_ALLOW_REMOTE=1: the same address binds (a listening socket
# on 0.0.0.0:PORT in /proc/net/tcp), and requests naming another host are
# answered too (loopback only: 403, checked above on 127.0.0.1).
port3=$(free_port)
W3=$TMPD/w3
mkdir -p "$W3"
HEAPPROF_HTTP_ALLOW_REMOTE=1 HEAPPROF_EXIT=0 HEAPPROF_HTTP=0.0.0.0:$port3 LD_PRELOAD="$LIB" \
	"$PROG/prog_window" "$W3" >/dev/null 2>"$TMPD/w3.err" &
rpid=$!
if wait_for http.allow_remote.ready "$W3/ready" $rpid 60; then
	hex=$(printf '%04X' "$port3")
	if awk -v p="00000000:$hex" '$2 == p && $4 == "0A" {f=1} END {exit !f}' /proc/net/tcp &&
	   [ ! -s "$TMPD/w3.err" ]; then
		pass http.allow_remote.binds_any_address
	else
		fail http.allow_remote.binds_any_address "no listener on 0.0.0.0:$port3; $(head -3 "$TMPD/w3.err")"
	fi
	c=$(code -H "Host: profiler.example:$port3" "http://127.0.0.1:$port3/debug/pprof/cmdline")
	[ "$c" = 200 ] && pass http.allow_remote.any_host || fail http.allow_remote.any_host "status $c"
fi
touch "$W3/go" "$W3/go2" "$W3/quit"
wait $rpid
exit $FAILED
