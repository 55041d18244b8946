#!/bin/sh
# What README says of some capture options, checked on real runs:
#  - HEAPPROF_DEPTH / `heapprof run --depth N`: stacks of at most N frames
#    (rprog_stacks recurses 40 deep: exactly N frames at the deepest; 44
#    without a limit);
#  - the signal forms of HEAPPROF_SIGNAL and -s/--signal: `SIGUSR1`, `12`,
#    `RTMIN+3` each take a profile and leave the program running (a form
#    not understood would leave the signal's default action: death);
#  - the descriptors the profiler keeps (the endpoint's listening socket
#    and a connection) are close-on-exec and numbered from 1000, or from
#    128 below a small RLIMIT_NOFILE.
# Each case synchronises on the program's own files, never on a sleep.
. "$(dirname "$0")/lib.sh"
need_lib capture_options
oracle_need_heapprof capture_options
oracle_tmpdir

# ------------------------------------------------------------------ depth
# deepest FILE: the most frames in one stack of FILE (every allocation).
deepest() {
	"$HEAPPROF" collapse --sample-index alloc_space "$1" 2>/dev/null |
		awk '{ n = split($1, a, ";"); if (n > m) m = n } END { print m + 0 }'
}
D=$TMPD/depth
mkdir -p "$D"
HEAPPROF_RATE=1 HEAPPROF_OUT="$D/full.pb.gz" LD_PRELOAD="$LIB" "$PROG/rprog_stacks" 40 2>"$D/full.err"
HEAPPROF_RATE=1 HEAPPROF_DEPTH=8 HEAPPROF_OUT="$D/env.pb.gz" LD_PRELOAD="$LIB" "$PROG/rprog_stacks" 40 2>"$D/env.err"
"$HEAPPROF" run --depth 5 -r 1 -o "$D/cli.pb.gz" -- "$PROG/rprog_stacks" 40 2>"$D/cli.err"
full=$(deepest "$D/full.pb.gz")
env8=$(deepest "$D/env.pb.gz")
cli5=$(deepest "$D/cli.pb.gz")
# Without a limit the deepest stack is longer than both limits: the
# limited runs below are cut, not naturally short.
[ "$full" -gt 8 ] && pass depth.default_deeper || fail depth.default_deeper "deepest $full frames"
[ "$env8" -eq 8 ] && pass depth.env || fail depth.env "HEAPPROF_DEPTH=8: deepest $env8 frames; $(head -2 "$D/env.err")"
[ "$cli5" -eq 5 ] && pass depth.run_option || fail depth.run_option "--depth 5: deepest $cli5 frames; $(head -2 "$D/cli.err")"

# ---------------------------------------------------------------- signals
# sig_case NAME SIGNUM HOW FORM: prog_sleep raises SIGNUM itself once it
# has allocated; with the profiler told FORM (HOW: env or run), one profile
# is written, the program runs on ("done"), and nothing is warned.
sig_case() {
	d=$TMPD/sig.$1
	mkdir -p "$d"
	if [ "$3" = env ]; then
		HEAPPROF_EXIT=0 HEAPPROF_RATE=1 HEAPPROF_SIGNAL=$4 HEAPPROF_OUT="$d/s.pb.gz" \
			LD_PRELOAD="$LIB" "$PROG/prog_sleep" 100 "$2" >"$d/out" 2>"$d/err"
	else
		"$HEAPPROF" run --no-exit-dump -r 1 $5 "$4" -o "$d/s.pb.gz" -- \
			"$PROG/prog_sleep" 100 "$2" >"$d/out" 2>"$d/err"
	fi
	rc=$?
	n=$(ls "$d" | grep -c '\.pb\.gz$')
	if [ $rc -eq 0 ] && [ "$(cat "$d/out")" = done ] && [ "$n" -eq 1 ] &&
	   ! grep -q "^heapprof\[" "$d/err"; then
		pass "signal.$1"
	else
		fail "signal.$1" "$3 $4: status $rc, $n profiles, out '$(cat "$d/out")'; $(head -2 "$d/err")"
	fi
}
RTMIN3=$(python3 -c 'import signal; print(int(signal.SIGRTMIN) + 3)')
sig_case env.SIGUSR1 10 env SIGUSR1
sig_case env.12 12 env 12
sig_case env.RTMIN+3 "$RTMIN3" env RTMIN+3
sig_case run.SIGUSR1 10 run SIGUSR1 -s
sig_case run.12 12 run 12 --signal
sig_case run.RTMIN+3 "$RTMIN3" run RTMIN+3 -s

# ------------------------------------------------------------ descriptors
# fd_case NAME LIMIT BASE: under `ulimit -n LIMIT` the endpoint's listening
# socket and one connection (a request left unfinished) are the process's
# only sockets; the lowest is BASE, all are below LIMIT, all close-on-exec.
fd_case() {
	W=$TMPD/fd.$1
	mkdir -p "$W"
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	sh -c "ulimit -n $2 && exec env HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$port \
		LD_PRELOAD='$LIB' '$PROG/prog_window' '$W'" >/dev/null 2>"$W/err" &
	wpid=$!
	i=0
	while [ ! -e "$W/ready" ] && kill -0 $wpid 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.1
		i=$((i + 1))
	done
	if [ -e "$W/ready" ]; then
		python3 - "$wpid" "$port" >"$W/fds" 2>"$W/py.err" <<'EOP'
import os, socket, sys, time
pid, port = sys.argv[1], int(sys.argv[2])
s = socket.create_connection(("127.0.0.1", port))
s.sendall(b"GET /debug/pprof/heap HTTP/1.1\r\n")  # unfinished: kept open
end = time.monotonic() + 30
while True:
    fds = []
    for f in os.listdir("/proc/%s/fd" % pid):
        try:
            if os.readlink("/proc/%s/fd/%s" % (pid, f)).startswith("socket:"):
                fds.append(int(f))
        except OSError:
            pass
    if len(fds) >= 2 or time.monotonic() > end:
        break
    time.sleep(0.01)
for fd in sorted(fds):
    flags = [l.split()[1] for l in open("/proc/%s/fdinfo/%d" % (pid, fd))
             if l.startswith("flags:")][0]
    print(fd, "cloexec" if int(flags, 8) & 0o2000000 else "inherited")
EOP
	fi
	touch "$W/go" "$W/go2" "$W/quit"
	wait $wpid
	got=$(awk '{ printf("%s%s:%s", (NR > 1 ? " " : ""), $1, $2) }' "$W/fds" 2>/dev/null)
	if [ "$(wc -l <"$W/fds" 2>/dev/null)" -eq 2 ] &&
	   awk -v b="$3" -v l="$2" 'NR == 1 && $1 != b { bad = 1 }
		$1 < b || $1 >= l || $2 != "cloexec" { bad = 1 } END { exit bad }' "$W/fds"; then
		pass "fds.$1"
	else
		fail "fds.$1" "ulimit -n $2: sockets $got, expected from $3, below $2, cloexec; $(head -2 "$W/err" "$W/py.err" 2>/dev/null)"
	fi
}
fd_case from_1000 4096 1000
fd_case small_limit 256 128
exit $FAILED
