#!/bin/sh
# Wrappers (issue 14, item 8): a shell shim that runs helpers (readlink,
# basename, true) and then execs the real program, as pyenv's shims do.
# `heapprof run` profiles every process by default; --no-children keeps
# only the process it started (and what that execs); --only PATTERN keeps
# the programs whose name matches, and --http follows the filter, so the
# shell does not take the port. Each profile names its command line in its
# comments, so files can be told apart.
. "$(dirname "$0")/lib.sh"
need_lib capture_wrapper
need_go capture_wrapper
oracle_tmpdir
cat >"$TMPD/shim.sh" <<EOS
#!/bin/sh
d=\$(readlink -f "\$0"); b=\$(basename "\$d"); true; true
exec "$PROG/prog_pattern" "\$@"
EOS
chmod +x "$TMPD/shim.sh"

# count DIR: profiles written there
count() { ls "$1" 2>/dev/null | grep -c '\.pb\.gz$'; }

mkdir -p "$TMPD/all" "$TMPD/nc" "$TMPD/only"
# --write-empty: readlink and basename sample nothing at the default rate
# and would write no profile (issue 15); every process is still profiled.
timeout 120 "$HEAPPROF" run --write-empty -o "$TMPD/all/p.pb.gz" -- "$TMPD/shim.sh" \
	>/dev/null 2>"$TMPD/all.err"
n=$(count "$TMPD/all")
# sh, readlink and basename (each in a $() subshell, itself a fork of sh)
if [ "$n" -ge 3 ]; then pass wrapper.default_all_processes
else fail wrapper.default_all_processes "$n files: $(head -3 "$TMPD/all.err")"; fi
# Without it: prog_pattern's file, and the others counted in the summary.
mkdir -p "$TMPD/def"
timeout 120 "$HEAPPROF" run -o "$TMPD/def/p.pb.gz" -- "$TMPD/shim.sh" \
	>/dev/null 2>"$TMPD/def.err"
n=$(count "$TMPD/def")
if [ "$n" -ge 1 ] && grep -q '^heapprof: [0-9]* process.* had no samples' "$TMPD/def.err"; then
	pass wrapper.default_no_empty_files
else
	fail wrapper.default_no_empty_files "$n files: $(head -3 "$TMPD/def.err")"
fi

timeout 120 "$HEAPPROF" run --no-children -o "$TMPD/nc/p.pb.gz" -- "$TMPD/shim.sh" \
	>/dev/null 2>"$TMPD/nc.err"
n=$(count "$TMPD/nc")
if [ "$n" -eq 1 ]; then pass wrapper.no_children.one_file
else fail wrapper.no_children.one_file "$n files: $(ls "$TMPD/nc" | head -5 | tr '\n' ' ')"; fi

timeout 120 "$HEAPPROF" run --only 'prog_pat*,nomatch' -o "$TMPD/only/p.%p.pb.gz" -- \
	"$TMPD/shim.sh" 3 >/dev/null 2>"$TMPD/only.err"
n=$(count "$TMPD/only")
f=$(ls "$TMPD"/only/*.pb.gz 2>/dev/null | head -1)
if [ "$n" -eq 1 ]; then pass wrapper.only.one_file
else fail wrapper.only.one_file "$n files: $(ls "$TMPD/only" | head -5 | tr '\n' ' ')"; fi
# The one file is prog_pattern's: its comments name the command line.
if [ -n "$f" ] && go tool pprof -comments "$f" 2>/dev/null |
	grep -q "cmdline=$PROG/prog_pattern 3\$"; then
	pass wrapper.only.cmdline_comment
else
	fail wrapper.only.cmdline_comment "$( [ -n "$f" ] && go tool pprof -comments "$f" 2>&1 | tail -2 | tr '\n' ' ')"
fi

# --http with --only: the shell (first process) must not take the port;
# prog_window serves it. The port is picked free by the kernel first.
# prog_window says when it runs (W/ready; its endpoint listens before
# main) and waits for W/quit: the request is made while it runs.
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
W=$TMPD/win
mkdir -p "$W"
cat >"$TMPD/shim2.sh" <<EOS
#!/bin/sh
true
"$PROG/prog_window" "$W"
EOS
chmod +x "$TMPD/shim2.sh"
timeout 120 "$HEAPPROF" run --only 'prog_window' --http "127.0.0.1:$port" -o "$TMPD/h.%p.pb.gz" -- \
	"$TMPD/shim2.sh" >/dev/null 2>"$TMPD/h.err" &
bg=$!
i=0
while [ ! -e "$W/ready" ] && kill -0 $bg 2>/dev/null && [ $i -lt 600 ]; do
	sleep 0.1
	i=$((i + 1))
done
ok=0
if [ -e "$W/ready" ] && python3 - "$port" >"$TMPD/h.cmd" 2>"$TMPD/h.pyerr" <<'EOP'
import sys, urllib.request
print(urllib.request.urlopen("http://127.0.0.1:%s/debug/pprof/cmdline" % sys.argv[1], timeout=30).read().decode())
EOP
then ok=1; fi
touch "$W/go" "$W/go2" "$W/quit"
wait $bg
if [ $ok = 1 ] && grep -q prog_window "$TMPD/h.cmd"; then pass wrapper.only.http_in_matching_process
else fail wrapper.only.http_in_matching_process "ok=$ok ready=$([ -e "$W/ready" ] && echo yes || echo no): $(head -c 200 "$TMPD/h.cmd") $(tail -1 "$TMPD/h.pyerr") $(head -3 "$TMPD/h.err")"; fi
exit $FAILED
