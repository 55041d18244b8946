#!/bin/sh
# The /debug/pprof endpoint against real clients: go tool pprof reads
# /heap and /allocs from a running C program; allocs?seconds=2 holds only
# the allocations made in those two seconds, with a 2 s duration; debug=1
# is legacy text with the same totals; bad requests get Go's status codes
# and texts; 200 concurrent requests while the host allocates all succeed
# and the host's output is unchanged.
. "$(dirname "$0")/lib.sh"
need_lib serve_http
need_go serve_http
oracle_tmpdir
command -v curl >/dev/null || { skip_tool serve_http curl; exit 0; }
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url=http://127.0.0.1:$port/debug/pprof
W=$TMPD/w
mkdir -p "$W"
HEAPPROF_RATE=1 HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$port LD_PRELOAD="$LIB" \
	"$PROG/prog_window" "$W" >"$TMPD/win.exp" 2>"$TMPD/win.err" &
pid=$!
i=0
while [ ! -f "$W/ready" ] && [ $i -lt 500 ]; do sleep 0.02; i=$((i + 1)); done

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
long=$(python3 -c 'print("a"*5000)')
c=$(code "$url/heap?x=$long")
[ "$c" = 431 ] || [ "$c" = 414 ] && pass http.err.oversized || fail http.err.oversized "status $c"

# A delta window around exactly the site_window phase.
curl -s -D "$TMPD/delta.h" -o "$TMPD/delta.pb.gz" "$url/allocs?seconds=2" &
cpid=$!
sleep 0.4
touch "$W/go"
wait $cpid
touch "$W/go2"
grep -qi 'filename="allocs-delta"' "$TMPD/delta.h" && pass http.delta.filename || fail http.delta.filename "$(cat "$TMPD/delta.h")"
printf 'EXPECT site_window 500 1500000 400 1200000\nEXPECT site_before 0 0 0 0\nEXPECT site_after 0 0 0 0\n' >"$TMPD/window.exp"
$PROFSUM check http.delta "$TMPD/window.exp" 0 "$TMPD/delta.pb.gz" || FAILED=1
dur=$(go tool pprof -raw -symbolize=none "$TMPD/delta.pb.gz" 2>/dev/null | awk '/^Duration:/{print $2}')
case "$dur" in 2.0*|2.1*|2.2*) pass http.delta.duration_2s ;; *) fail http.delta.duration_2s "duration '$dur'" ;; esac

# 200 concurrent requests (100 at a time) while the host allocates on two
# threads; its output must be what it prints without the profiler.
touch "$W/quit"
wait $pid
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
touch "$TMPD/stop0"
"$PROG/prog_busy" "$TMPD/stop0" >"$TMPD/base.out"
HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$port2 LD_PRELOAD="$LIB" \
	"$PROG/prog_busy" "$TMPD/stop" >"$TMPD/busy.out" 2>"$TMPD/busy.err" &
bpid=$!
sleep 0.3
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
out=$(HEAPPROF_HTTP=0.0.0.0:$port2 LD_PRELOAD="$LIB" "$PROG/prog_sleep" 10 2>&1)
echo "$out" | grep -q 'not a loopback address' && echo "$out" | grep -q '^done$' &&
	pass http.refuses_non_loopback || fail http.refuses_non_loopback "$out"
exit $FAILED
