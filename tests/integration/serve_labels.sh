#!/bin/sh
# serve_labels.sh: labels (issue 33) through the /debug/pprof endpoint.
# prog_routes (worker threads serving routes /a, /ab, /b under label sets,
# at rate 1, HEAPPROF_HTTP) is scraped while idle: /heap and /allocs hold
# each route's four values exactly as the program counted them; go tool
# pprof -tagfocus on the endpoint itself prints what heapprof top
# --tagfocus prints of the profile go tool pprof saved; ?debug=1 (legacy
# text, which has no labels) holds the same totals with the labels
# dropped; allocs?seconds=2 around the program's second phase holds that
# phase's values per route (in-use as the change: negative where the phase
# freed the first phase's blocks). Synchronised on files the program
# writes and on the delta client's "request read"; no sleep decides.
. "$(dirname "$0")/lib.sh"
need_go serve_labels
need_lib serve_labels
oracle_need_heapprof serve_labels
oracle_tmpdir
command -v curl >/dev/null || { skip_tool serve_labels curl; exit 0; }
LS="python3 $REPO/tests/integration/labelsum.py"
DELTA_CLIENT="python3 $REPO/tests/integration/delta_client.py"
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
# start DIR: prog_routes serving on a free port ($port, $pid, $url)
start() {
	mkdir -p "$1"
	port=$(free_port)
	url=http://127.0.0.1:$port/debug/pprof
	HEAPPROF_RATE=1 HEAPPROF_EXIT=0 HEAPPROF_HTTP=127.0.0.1:$port LD_PRELOAD="$LIB" \
		"$PROG/prog_routes" "$1" >"$1/out" 2>"$1/err" &
	pid=$!
}

W=$TMPD/w
start "$W"
if ! wait_for serve_labels.ready "$W/ready" $pid 120; then
	kill $pid 2>/dev/null
	exit 1
fi
sort "$W/truth1" >"$TMPD/want1"
curl -s -o "$TMPD/heap.pb.gz" "$url/heap"
curl -s -o "$TMPD/allocs.pb.gz" "$url/allocs"
$LS route "$TMPD/heap.pb.gz" >"$TMPD/got.heap" 2>"$TMPD/ls.err" || cat "$TMPD/ls.err" >&2
same_output serve_labels.heap_routes_exact "$TMPD/want1" "$TMPD/got.heap"
$LS route "$TMPD/allocs.pb.gz" >"$TMPD/got.allocs" 2>"$TMPD/ls.err" || cat "$TMPD/ls.err" >&2
same_output serve_labels.allocs_routes_exact "$TMPD/want1" "$TMPD/got.allocs"

# go tool pprof -tagfocus on the endpoint, heapprof top --tagfocus on the
# profile it fetched (saved in PPROF_TMPDIR): the same text. route=/a is a
# regexp, unanchored in both: /a and /ab; ^/a$ is /a alone.
n=0
for f in "route=/a" "route=^/a\$" "route=/b" "tenant=t1" "step=inner" "route=/x"; do
	n=$((n + 1))
	P=$TMPD/pp$n
	mkdir -p "$P"
	PPROF_TMPDIR=$P go tool pprof -top -tagfocus="$f" -sample_index=alloc_space \
		"$url/allocs" >"$P/go.txt" 2>"$P/go.err"
	saved=$(ls "$P"/*.pb.gz 2>/dev/null | head -1)
	name=serve_labels.tagfocus.$n
	if [ -z "$saved" ] || ! grep -q "tagfocus=" "$P/go.txt"; then
		fail "$name" "go tool pprof on $url/allocs ($f): $(tail -2 "$P/go.err")"
		continue
	fi
	"$HEAPPROF" top --tagfocus "$f" --sample-index alloc_space "$saved" >"$P/hp.txt" 2>&1
	same_output "$name" "$P/go.txt" "$P/hp.txt"
done
# The exact bytes of route=/a and /ab together (what -tagfocus=route=/a selects).
ab=$(awk '$1 == "/a" || $1 == "/ab" {s += $3} END {print s}' "$TMPD/want1")
t=$(go tool pprof -top -unit=B -tagfocus=route=/a -sample_index=alloc_space \
	-focus='^site_' "$TMPD/allocs.pb.gz" 2>/dev/null |
	sed -n 's/^Showing nodes accounting for \([0-9]*\)B.*/\1/p')
if [ -n "$ab" ] && [ "$t" = "$ab" ]; then pass serve_labels.tagfocus_bytes; else
	fail serve_labels.tagfocus_bytes "truth $ab, go tool pprof -tagfocus route=/a: '$t'"; fi

# debug=1: legacy text has no labels: each labelled record is a line of
# its own (the same stack may repeat), and the totals are the profile's.
curl -s -o "$TMPD/heap.txt" "$url/heap?debug=1"
tot() { go tool pprof -top -unit=B -sample_index="$1" "$2" 2>/dev/null | grep -o 'of [0-9]*B total'; }
a=$(tot alloc_space "$TMPD/heap.pb.gz")/$(tot inuse_space "$TMPD/heap.pb.gz")
b=$(tot alloc_space "$TMPD/heap.txt")/$(tot inuse_space "$TMPD/heap.txt")
if [ "$a" != / ] && [ "$a" = "$b" ]; then
	pass serve_labels.debug1_totals
else
	fail serve_labels.debug1_totals "proto '$a', legacy text '$b'"
fi
touch "$W/go" "$W/quit"
wait $pid

# allocs?seconds=2 around phase 2: the window is checked against the
# phase's times (a loaded machine may put it outside: up to 3 programs).
delta_try() {
	D=$TMPD/delta$1
	start "$D"
	rc=1
	if wait_for serve_labels.delta.ready "$D/ready" $pid 120; then
		$DELTA_CLIENT get "$port" "/debug/pprof/allocs?seconds=2" "$D" 2>"$D/client.err" &
		cl=$!
		wait_for serve_labels.delta.request_read "$D/read" $cl 90 && rc=0
		touch "$D/go"
		wait $cl || { rc=1; fail serve_labels.delta.client "$(tail -2 "$D/client.err")"; }
	fi
	touch "$D/go" "$D/quit"
	wait $pid
	return $rc
}
attempt=1
held=0
while [ $attempt -le 3 ] && delta_try $attempt; do
	read -r S E <"$D/done"
	read -r tn dn <<EOT
$($DELTA_CLIENT times "$D/body")
EOT
	base=$((tn - dn))
	if [ "$base" -le "$S" ] && [ "$E" -le "$tn" ]; then held=1; break; fi
	echo "  serve_labels.delta: attempt $attempt: window $base..$tn, phase $S..$E; again" >&2
	attempt=$((attempt + 1))
done
if [ $held = 1 ]; then
	sort "$D/truth2" >"$TMPD/want2"
	$LS route "$D/body" >"$TMPD/got.delta" 2>"$TMPD/ls.err" || cat "$TMPD/ls.err" >&2
	same_output serve_labels.delta_routes_exact "$TMPD/want2" "$TMPD/got.delta"
else
	fail serve_labels.delta_routes_exact "the window never held the phase (3 attempts)"
fi
exit $FAILED
