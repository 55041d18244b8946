#!/bin/sh
# The delivery half and the life cycle against program patterns (issue 13,
# defects 3-7 and 12, and the serve suspicions), preloaded, at rate 1 and
# at the default rate where the rate matters (rprog_serve.c); linked
# instead of preloaded with SERVE_LINKED=1 (rel_serve_linked.sh):
#   exit/_exit from a SIGINT handler while allocating: no hang (defect 3);
#     the exit dump waits for a dump in progress a bounded time
#   fork in a signal handler with -i, -s, --http, --push on (defects 4, 5)
#   unshare(CLONE_NEWUSER) with -i / -s: no thread, so it works (defect 4)
#   closefrom(3) daemon with --http: no spin, its sockets not taken (6)
#   daemonize with --http: the child keeps no listening socket (7)
#   push at exit: a run shorter than the interval still pushes (12)
#   fork() does not wait for a dump in progress
#   endpoint: 64 connections all served (poll array), Host checked (DNS
#   rebinding), poll timeouts for an interval past 2^31 ms; push:
#   a server that dribbles its answer does not hold the pusher
. "$(dirname "$0")/lib.sh"
need_lib rel_serve
oracle_tmpdir
# SERVE_LINKED=1 (rel_serve_linked.sh): the same tests with libheapprof.a
# linked into the program instead of preloaded, named rel.serve.linked.*.
if [ "${SERVE_LINKED:-0}" = 1 ]; then
	P=$PROG/rprog_serve_linked PRE="" SFX=.linked
else
	P=$PROG/rprog_serve PRE="$LIB" SFX=""
fi
freeport() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
RUNS=$(by_tier 20 100)

# --- push: a server that dribbles one byte a second and never finishes
# its status line. Started first, checked last (it needs ~25 s).
cat >"$TMPD/dribble.py" <<'PY'
import socket, sys, threading, time
srv = socket.socket(); srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", 0)); srv.listen(16)
open(sys.argv[1], "w").write(str(srv.getsockname()[1]))
log = open(sys.argv[2], "a")
def serve(c):
    try:
        c.settimeout(1); 
        try:
            while c.recv(65536): pass
        except OSError: pass
        for b in b"HTTP/1.1 200 OK without ever ending the line" * 100:
            c.sendall(bytes([b])); time.sleep(1)
    except OSError:
        pass
while True:
    c, _ = srv.accept()
    log.write("conn\n"); log.flush()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
PY
python3 "$TMPD/dribble.py" "$TMPD/dport" "$TMPD/dlog" &
dpid=$!
i=0; while [ ! -s "$TMPD/dport" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
timeout -k 5 60 env HEAPPROF_PUSH=http://127.0.0.1:$(cat "$TMPD/dport") HEAPPROF_PUSH_INTERVAL=1 \
	HEAPPROF_EXIT=0 LD_PRELOAD="$PRE" "$P" short 25000 >/dev/null 2>"$TMPD/dribble.err" &
dprog=$!

# --- defect 3: exit() / _exit() from a SIGINT handler while allocating
for how in exit _exit; do
	for r in 1 524288; do
		bad=""; i=0
		while [ $i -lt "$RUNS" ]; do
			i=$((i + 1))
			run_td rel.serve$SFX.sig$how.rate$r 30 env HEAPPROF_RATE=$r \
				HEAPPROF_OUT="$TMPD/se.%p.pb.gz" LD_PRELOAD="$PRE" "$P" sigexit $how $i \
				>/dev/null 2>>"$TMPD/sigexit.err" || { bad=hang; break; }
			[ $RC -eq 3 ] || { bad="run $i: status $RC"; break; }
		done
		rm -f "$TMPD"/se.*
		if [ -z "$bad" ]; then pass rel.serve$SFX.sig$how.rate$r
		elif [ "$bad" != hang ]; then fail rel.serve$SFX.sig$how.rate$r "$bad $(tail -2 "$TMPD/sigexit.err")"; fi
	done
done
# Skipped exit dumps say so in one line each.
if ! grep -v '^heapprof\[[0-9]*\]: ' "$TMPD/sigexit.err" | grep -q .; then pass rel.serve$SFX.sigexit.stderr_lines
else fail rel.serve$SFX.sigexit.stderr_lines "$(grep -v '^heapprof' "$TMPD/sigexit.err" | head -3)"; fi

# The exit dump waits a bounded time for a dump that never ends (a
# heapprof_dump callback that blocks), then says so.
# (WRITE_EMPTY: the program may sample nothing, and then no exit dump is
# tried.)
run_t rel.serve$SFX.exit_waits_bounded 60 env HEAPPROF_WRITE_EMPTY=1 HEAPPROF_OUT="$TMPD/el.pb.gz" LD_PRELOAD="$PRE" \
	"$P" exitlock >/dev/null 2>"$TMPD/el.err" &&
	if [ $RC -eq 0 ] && grep -q 'did not end' "$TMPD/el.err"; then pass rel.serve$SFX.exit_waits_bounded
	else fail rel.serve$SFX.exit_waits_bounded "status $RC: $(cat "$TMPD/el.err")"; fi

# fork() never waits for a dump in progress (one held 4 s here).
run_t rel.serve$SFX.fork_no_stall 60 env HEAPPROF_OUT="$TMPD/fs.pb.gz" LD_PRELOAD="$PRE" \
	"$P" forkstall >"$TMPD/fs.out" 2>&1 &&
	{ ms=$(awk '/^fork_ms/ {print $2}' "$TMPD/fs.out")
	if [ -n "$ms" ] && [ "$ms" -lt 2000 ]; then pass rel.serve$SFX.fork_no_stall
	else fail rel.serve$SFX.fork_no_stall "$(cat "$TMPD/fs.out")"; fi; }

# A signal dump of an idle program (no thread, no allocation after the
# signal) is written from the handler, once busy threads' allocations are
# the profiler's own (heapprof__busy_alloc_private; until then it waits
# for the next sampled allocation).
if nm "$LIB" 2>/dev/null | grep -q ' heapprof__busy_alloc_private$'; then
	env HEAPPROF_SIGNAL=USR2 HEAPPROF_EXIT=0 HEAPPROF_OUT="$TMPD/idle.%p.pb.gz" LD_PRELOAD="$PRE" \
		"$P" idle 20000 >/dev/null 2>"$TMPD/idle.err" &
	ip=$!; i=0
	while [ $i -lt 200 ]; do
		m=$(awk '/^SigCgt/ {print $2}' /proc/$ip/status 2>/dev/null)
		[ -n "$m" ] && [ $(( 0x$m & 0x800 )) -ne 0 ] && break
		sleep 0.05; i=$((i + 1))
	done
	kill -USR2 $ip; i=0
	# (the template has no %n: signal dumps are numbered, .0 first)
	while [ ! -f "$TMPD/idle.$ip.0.pb.gz" ] && [ $i -lt 300 ]; do sleep 0.05; i=$((i + 1)); done
	if [ -f "$TMPD/idle.$ip.0.pb.gz" ]; then pass rel.serve$SFX.signal_dump_idle
	else fail rel.serve$SFX.signal_dump_idle "no profile 15 s after the signal: $(cat "$TMPD/idle.err")"; fi
	kill $ip; wait $ip 2>/dev/null
else
	skip rel.serve$SFX.signal_dump_idle "busy threads may still allocate from glibc: signal dumps wait for a sampled allocation"
fi

# --- defects 4 and 5: fork in a signal handler with each feature on.
# With --http or --push the process is multithreaded, and glibc's fork()
# then takes malloc's locks: a handler that interrupts glibc's malloc
# deadlocks without the profiler too. So at the default rate the program
# computes there; at rate 1 its allocations are all the profiler's.
scrape() { # hammers the endpoint (dumps hold the dump lock) until $1
	# exists; $3 is created after the first answer
	python3 - "$1" "$2" "$3" <<'PY' &
import os, sys, time, urllib.request
stop, port, go = sys.argv[1], int(sys.argv[2]), sys.argv[3]
while not os.path.exists(stop):
    try:
        urllib.request.urlopen("http://127.0.0.1:%d/debug/pprof/heap" % port, timeout=5).read()
        open(go, "w").close()
    except Exception: time.sleep(0.05)
PY
}
python3 "$REPO/tests/integration/pyroscope_receiver.py" "$TMPD/rport" "$TMPD/rlog" &
rpid=$!
i=0; while [ ! -s "$TMPD/rport" ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
rport=$(cat "$TMPD/rport")
for feat in interval signal http push; do
	for r in 1 524288; do
		what=alloc go=
		case $feat in
		interval) env="HEAPPROF_INTERVAL=1" ;;
		signal) env="HEAPPROF_SIGNAL=USR2" ;;
		http) port=$(freeport); env="HEAPPROF_HTTP=127.0.0.1:$port"
			[ $r = 1 ] || what=calc
			rm -f "$TMPD/stop" "$TMPD/go"; go=$TMPD/go
			scrape "$TMPD/stop" "$port" "$go"; spid=$! ;;
		push) env="HEAPPROF_PUSH=http://127.0.0.1:$rport HEAPPROF_PUSH_INTERVAL=1"
			[ $r = 1 ] || what=calc ;;
		esac
		n=rel.serve$SFX.fork_in_handler.$feat.rate$r
		d=$TMPD/fk.$feat.$r; mkdir -p "$d"
		run_t $n 120 env $env HEAPPROF_RATE=$r HEAPPROF_OUT="$d/f.%p.pb.gz" \
			LD_PRELOAD="$PRE" "$P" sigfork 200 $what $go >"$d/out" 2>"$d/err" &&
			if [ $RC -eq 0 ] && grep -q '^forked 200$' "$d/out"; then pass $n
			else fail $n "status $RC: $(cat "$d/out") $(head -3 "$d/err")"; fi
		if [ $feat = http ]; then touch "$TMPD/stop"; wait $spid; fi
		rm -rf "$d"
	done
done

# --- defect 4: no thread for -i / -s, so unshare(CLONE_NEWUSER) works
if "$P" unshare >"$TMPD/un.base" 2>&1; then
	for env in HEAPPROF_INTERVAL=1 HEAPPROF_SIGNAL=USR2; do
		for r in 1 524288; do
			n=rel.serve$SFX.unshare.${env%%=*}.rate$r
			run_t $n 30 env $env HEAPPROF_RATE=$r HEAPPROF_OUT="$TMPD/un.%p.pb.gz" \
				LD_PRELOAD="$PRE" "$P" unshare >"$TMPD/un.out" 2>&1 &&
				if [ $RC -eq 0 ]; then pass $n; else fail $n "$(cat "$TMPD/un.out")"; fi
		done
	done
else
	skip rel.serve$SFX.unshare "unshare(CLONE_NEWUSER) not permitted here: $(cat "$TMPD/un.base")"
fi

# --- defect 6: closefrom(3), then the program's own sockets on the low
# numbers the profiler's used to have.
port=$(freeport)
run_t rel.serve$SFX.closefrom 60 env HEAPPROF_HTTP=127.0.0.1:$port HEAPPROF_OUT="$TMPD/cf.pb.gz" \
	LD_PRELOAD="$PRE" "$P" closefrom >"$TMPD/cf.out" 2>"$TMPD/cf.err" && {
	cpu=$(awk '/^cpu_ms/ {print $2}' "$TMPD/cf.out")
	if [ -n "$cpu" ] && [ "$cpu" -lt 200 ]; then pass rel.serve$SFX.closefrom.no_spin
	else fail rel.serve$SFX.closefrom.no_spin "CPU ms in a 2 s sleep: $cpu"; fi
	if grep -q '^accepted 8/8' "$TMPD/cf.out"; then pass rel.serve$SFX.closefrom.sockets_not_taken
	else fail rel.serve$SFX.closefrom.sockets_not_taken "$(cat "$TMPD/cf.out")"; fi
	# one warning, held while the program ran and printed at its exit
	# (warn.c; the order: rel_warnings.sh)
	if [ "$(grep -c 'endpoint is off' "$TMPD/cf.err")" -eq 1 ]; then pass rel.serve$SFX.closefrom.one_warning
	else fail rel.serve$SFX.closefrom.one_warning "stderr: $(cat "$TMPD/cf.err")"; fi; }

# --- defect 7: a daemon (fork, the parent exits) does not keep the port
port=$(freeport)
run_t rel.serve$SFX.daemon 30 env HEAPPROF_HTTP=127.0.0.1:$port HEAPPROF_OUT="$TMPD/dm.%p.pb.gz" \
	LD_PRELOAD="$PRE" "$P" daemon >"$TMPD/dm.out" 2>"$TMPD/dm.err" && {
	# The daemon child (alive 30 s) holds no socket: the listening one
	# was closed at fork. Its descriptors tell (a connect or a bind did
	# not, on this machine: both behaved as if the port were free).
	c=$(cat "$TMPD/dm.out")
	socks=$(ls -l /proc/"$c"/fd 2>/dev/null | grep -c 'socket:')
	if [ -n "$c" ] && [ -d /proc/"$c" ] && [ "$socks" -eq 0 ]; then pass rel.serve$SFX.daemon.port_released
	else fail rel.serve$SFX.daemon.port_released "the daemon child $c holds $socks socket(s)"; fi
	[ -n "$c" ] && kill "$c" 2>/dev/null; }

# --- defect 12: push at exit, in a run shorter than the interval
n0=$(wc -l <"$TMPD/rlog" 2>/dev/null || echo 0)
run_t rel.serve$SFX.push_at_exit 60 env HEAPPROF_PUSH=http://127.0.0.1:$rport HEAPPROF_APP=pushexit \
	HEAPPROF_EXIT=0 LD_PRELOAD="$PRE" "$P" short 300 >/dev/null 2>"$TMPD/pe.err" && {
	sleep 0.5
	if grep '"name": "pushexit"' "$TMPD/rlog" 2>/dev/null | grep -q '"ok": true'; then pass rel.serve$SFX.push_at_exit
	else fail rel.serve$SFX.push_at_exit "receiver log: $(tail -n +$((n0 + 1)) "$TMPD/rlog" 2>/dev/null | head -2) $(cat "$TMPD/pe.err")"; fi; }
kill $rpid 2>/dev/null; wait $rpid 2>/dev/null

# --- the endpoint: an idle program, Host checks and 64 connections.
port=$(freeport)
HEAPPROF_HTTP=127.0.0.1:$port HEAPPROF_EXIT=0 LD_PRELOAD="$PRE" \
	"$P" idle 60000 >/dev/null 2>"$TMPD/ep.err" &
hpid=$!
i=0
until python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$port),1)" 2>/dev/null || [ $i -gt 100 ]; do sleep 0.1; i=$((i + 1)); done
python3 - "$port" "$hpid" >"$TMPD/ep.out" 2>&1 <<'PY'
import os, socket, sys, time
port, pid = int(sys.argv[1]), int(sys.argv[2])
def get(host, extra=b""):
    s = socket.create_connection(("127.0.0.1", port), timeout=20)
    req = b"GET /debug/pprof/ HTTP/1.1\r\n" + (b"Host: " + host + b"\r\n" if host else b"") + extra + b"\r\n"
    s.sendall(req)
    data = b""
    try:
        while True:
            b = s.recv(65536)
            if not b: break
            data += b
    except OSError: pass
    return data.split(b" ")[1].decode() if data.count(b" ") else "none"
for h in [b"127.0.0.1:%d" % port, b"localhost:%d" % port, b"[::1]:%d" % port, None]:
    print("host", h.decode() if h else "-", get(h))
print("host evil", get(b"attacker.example:%d" % port))
print("host evil_ip", get(b"203.0.113.7"))
# 63 idle connections, then one real request: all 64 slots in use.
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(63)]
time.sleep(0.5)
s = socket.create_connection(("127.0.0.1", port), timeout=8)
s.sendall(b"GET /debug/pprof/ HTTP/1.0\r\n\r\n")
try: print("slot64", s.recv(16).split(b" ")[1].decode())
except Exception as e: print("slot64 none", type(e).__name__)
for c in idle: c.close()
PY
kill $hpid; wait $hpid 2>/dev/null
for h in 127.0.0.1 localhost '\[::1\]' -; do
	grep -q "^host $h:*[0-9]* 200$" "$TMPD/ep.out" || grep -q "^host $h 200$" "$TMPD/ep.out" || bad_host="$bad_host $h"
done
if [ -z "$bad_host" ]; then pass rel.serve$SFX.http.loopback_hosts_served
else fail rel.serve$SFX.http.loopback_hosts_served "$bad_host: $(cat "$TMPD/ep.out")"; fi
if grep -q '^host evil 403$' "$TMPD/ep.out" && grep -q '^host evil_ip 403$' "$TMPD/ep.out"; then
	pass rel.serve$SFX.http.foreign_host_refused
else fail rel.serve$SFX.http.foreign_host_refused "$(grep evil "$TMPD/ep.out")"; fi
if grep -q '^slot64 200$' "$TMPD/ep.out"; then pass rel.serve$SFX.http.all_64_slots_polled
else fail rel.serve$SFX.http.all_64_slots_polled "$(grep slot64 "$TMPD/ep.out")"; fi
# An interval past 2^31 ms (24.8 days): the poll timeouts of the endpoint's
# thread stay in 0..1000000 or -1 (they wrapped: 704, then negative).
if strace -o /dev/null true 2>/dev/null; then
	port=$(freeport)
	timeout -k 5 30 strace -f -qq -e trace=poll -o "$TMPD/st.out" env HEAPPROF_HTTP=127.0.0.1:$port \
		HEAPPROF_INTERVAL=4294968 HEAPPROF_EXIT=0 LD_PRELOAD="$LIB" "$PROG/prog_sleep" 2500 >/dev/null 2>&1
	bad=$(grep -oE 'poll\(\[.*\], [0-9]+, -?[0-9]+' "$TMPD/st.out" | sed 's/.*, //' |
		awk '$1 != -1 && ($1 < 0 || $1 > 1000000)' | head -3 | tr '\n' ' ')
	if grep -q 'poll(' "$TMPD/st.out" && [ -z "$bad" ]; then pass rel.serve$SFX.http.long_interval_poll_timeout
	else fail rel.serve$SFX.http.long_interval_poll_timeout "timeouts: $bad $(head -c 300 "$TMPD/st.out")"; fi
elif ! command -v strace >/dev/null 2>&1; then
	skip_tool rel.serve$SFX.http.long_interval_poll_timeout strace
else
	skip rel.serve$SFX.http.long_interval_poll_timeout "strace cannot trace here (ptrace refused)"
fi

# --- the dribbling push server (started at the top): with an overall
# deadline per request, the pusher comes back for the next interval.
wait $dprog
conns=$(grep -c conn "$TMPD/dlog" 2>/dev/null || echo 0)
kill $dpid 2>/dev/null; wait $dpid 2>/dev/null
if [ "$conns" -ge 2 ]; then pass rel.serve$SFX.push.dribbling_server_bounded
else fail rel.serve$SFX.push.dribbling_server_bounded "$conns connection(s) in 25 s at a 1 s interval"; fi
exit $FAILED
