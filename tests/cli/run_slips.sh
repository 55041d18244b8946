#!/bin/sh
# tests/cli/run_slips.sh: issue 14's CLI slips. `heapprof help run` is
# run's help; a bad option is one `heapprof:` line and status 2; `-o --`
# is refused (it named a file "--"); `--http` with a non-loopback address
# is refused with status 2 (it ran with the endpoint off, status 0), and
# allowed with HEAPPROF_HTTP_ALLOW_REMOTE=1; a misspelled HEAPPROF_ variable
# is named in a warning.
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
# HEAPPROF_HTTP_ALLOW_REMOTE=1 (README): the endpoint listens on the
# non-loopback address asked (0.0.0.0 here, in /proc/net/tcp) and answers a
# request whose Host is not a loopback name; without it, the library alone
# (no `heapprof run` to refuse first) warns and listens nowhere, and a
# loopback endpoint answers such a request 403. probe PORT: waits (20 s at
# most) until PORT accepts or the program has said why it will not, then
# prints "listen ADDR" per listening socket on PORT and the status of a
# request with Host: example.com.
probe() {
	python3 - "$1" "$2" <<'PY'
import http.client, os, socket, sys, time
port, err = int(sys.argv[1]), sys.argv[2]
t0 = time.time()
while time.time() - t0 < 20:
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        break
    except OSError:
        if os.path.exists(err) and b"not a loopback" in open(err, "rb").read():
            break
        time.sleep(0.05)
for fn, fam in (("/proc/net/tcp", 4), ("/proc/net/tcp6", 6)):
    for line in open(fn).read().splitlines()[1:]:
        f = line.split()
        a, p = f[1].split(":")
        if int(p, 16) == port and f[3] == "0A":
            print("listen", "0.0.0.0" if a == "00000000" else "127.0.0.1" if a == "0100007F" else a)
try:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    c.request("GET", "/debug/pprof/", headers={"Host": "example.com"})
    print("host_status", c.getresponse().status)
except OSError as e:
    print("host_status none", e)
PY
}
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("0.0.0.0",0)); print(s.getsockname()[1])'; }
# the endpoint with HEAPPROF_HTTP_ALLOW_REMOTE=1, on all addresses
port=$(freeport)
HEAPPROF_HTTP_ALLOW_REMOTE=1 "$HEAPPROF" run -o "$T/ok.pb.gz" --http 0.0.0.0:$port -- \
	"$REPO/build/tests/prog_busy" "$T/stop1" >out 2>err &
hp=$!
probe "$port" err >probe1
touch "$T/stop1"
wait $hp
rc=$?
if [ $rc -eq 0 ] && grep -qx 'listen 0.0.0.0' probe1 && grep -qx 'host_status 200' probe1; then
	pass slips.http_remote_allowed
else fail slips.http_remote_allowed "status $rc, $(tr '\n' ' ' <probe1) $(head -2 err)"; fi
# without it, through the library alone: one warning, no listener
port=$(freeport)
HEAPPROF_HTTP=0.0.0.0:$port HEAPPROF_EXIT=0 LD_PRELOAD="$LIB" \
	"$REPO/build/tests/prog_busy" "$T/stop2" >out 2>err &
hp=$!
probe "$port" err >probe2
touch "$T/stop2"
wait $hp
rc=$?
if [ $rc -eq 0 ] && ! grep -q '^listen' probe2 && grep -q 'not a loopback address' err; then
	pass slips.http_remote_refused_by_library
else fail slips.http_remote_refused_by_library "status $rc, $(tr '\n' ' ' <probe2) $(head -2 err)"; fi
# and on loopback without it, a request for another host is refused
port=$(freeport)
HEAPPROF_HTTP=127.0.0.1:$port HEAPPROF_EXIT=0 LD_PRELOAD="$LIB" \
	"$REPO/build/tests/prog_busy" "$T/stop3" >out 2>err &
hp=$!
probe "$port" err >probe3
touch "$T/stop3"
wait $hp
rc=$?
if [ $rc -eq 0 ] && grep -qx 'listen 127.0.0.1' probe3 && grep -qx 'host_status 403' probe3; then
	pass slips.http_remote_host_refused
else fail slips.http_remote_host_refused "status $rc, $(tr '\n' ' ' <probe3) $(head -2 err)"; fi

HEAPPROF_OUTPUT=x.pb.gz LD_PRELOAD="$LIB" HEAPPROF_OUT="$T/w.pb.gz" /bin/true 2>err
if grep -q 'HEAPPROF_OUTPUT is not a heapprof variable' err; then pass slips.misspelled_variable_named
else fail slips.misspelled_variable_named "$(head -2 err)"; fi
LD_PRELOAD="$LIB" HEAPPROF_OUT="$T/w2.pb.gz" HEAPPROF_RATE=1 /bin/true 2>err
if [ ! -s err ]; then pass slips.known_variables_silent
else fail slips.known_variables_silent "$(head -2 err)"; fi
exit $FAILED
