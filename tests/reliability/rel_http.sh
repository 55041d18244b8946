#!/bin/sh
# The endpoint against hostile clients (plan T33/T34): 100 connections
# that send nothing (slowloris) take every slot, yet a real scrape is
# served once their read deadline (10 s) drops them; a connection that
# sends a header byte by byte past the size limit is answered 431 and
# closed; a flood of 500 connect-and-close clients leaves the server
# answering; the host's output is unchanged throughout.
. "$(dirname "$0")/../integration/lib.sh"
need_lib rel_http
command -v curl >/dev/null || { skip_tool rel_http curl; exit 0; }
oracle_tmpdir
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
touch "$TMPD/stop0"
"$PROG/prog_busy" "$TMPD/stop0" >"$TMPD/base.out"
HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$port LD_PRELOAD="$LIB" \
	"$PROG/prog_busy" "$TMPD/stop" >"$TMPD/busy.out" 2>"$TMPD/busy.err" &
hpid=$!
i=0
until curl -s -o /dev/null "http://127.0.0.1:$port/debug/pprof/" || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done

python3 - "$port" >"$TMPD/abuse.out" 2>&1 <<'PY'
import socket, sys, time, urllib.request
port = int(sys.argv[1])
idle = []
for _ in range(100):                      # slowloris: connect, say nothing
    s = socket.create_connection(("127.0.0.1", port))
    idle.append(s)
t0 = time.time()
body = urllib.request.urlopen("http://127.0.0.1:%d/debug/pprof/heap" % port, timeout=60).read()
print("slowloris_scrape_ok", len(body) > 0 and body[:2] == b"\x1f\x8b", round(time.time() - t0, 1))
for s in idle:
    s.close()
s = socket.create_connection(("127.0.0.1", port))   # header dribbled past 4 KiB
s.sendall(b"GET /debug/pprof/heap HTTP/1.1\r\n")
status = b""
try:
    for _ in range(5000):
        s.sendall(b"X-Pad: aaaaaaaaaaaaaaaa\r\n")
except (BrokenPipeError, ConnectionResetError):
    pass
s.settimeout(20)
try:
    status = s.recv(64)
except OSError:
    pass
print("oversized_header_status", status.split(b" ")[1].decode() if status.count(b" ") else "none")
for _ in range(500):                      # flood: connect and close at once
    c = socket.create_connection(("127.0.0.1", port))
    c.close()
code = urllib.request.urlopen("http://127.0.0.1:%d/debug/pprof/allocs" % port, timeout=60).status
print("after_flood_status", code)
PY
touch "$TMPD/stop"
wait $hpid
rc=$?
grep -q '^slowloris_scrape_ok True' "$TMPD/abuse.out" && pass rel.http.slowloris_then_served ||
	fail rel.http.slowloris_then_served "$(cat "$TMPD/abuse.out")"
grep -q '^oversized_header_status 431' "$TMPD/abuse.out" && pass rel.http.oversized_header_431 ||
	fail rel.http.oversized_header_431 "$(cat "$TMPD/abuse.out")"
grep -q '^after_flood_status 200' "$TMPD/abuse.out" && pass rel.http.flood_then_served ||
	fail rel.http.flood_then_served "$(cat "$TMPD/abuse.out")"
if [ $rc -eq 0 ] && cmp -s "$TMPD/base.out" "$TMPD/busy.out"; then pass rel.http.host_unchanged
else fail rel.http.host_unchanged "rc $rc $(head -3 "$TMPD/busy.err")"; fi
exit $FAILED
