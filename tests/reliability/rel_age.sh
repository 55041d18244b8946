#!/bin/sh
# Allocation age (issue 16, part 3): a server that leaks slowly among
# short-lived churn (rprog_age: churn freed within ~0.2 s, one leaking
# site) runs 8 s; in its exit profile `heapprof top --min-age 5s` shows the
# leak site and no churn site, while the plain in-use view is led by the
# churn. `go tool pprof -tagfocus age_s=5s:` (the README's recipe) agrees
# when go is there. HEAPPROF_AGE=0 writes no age labels, and top says so.
. "$(dirname "$0")/lib.sh"
need_lib rel.age
oracle_tmpdir
D=$TMPD/age
mkdir -p "$D"

run_t rel.age.run 120 env HEAPPROF_RATE=4096 HEAPPROF_OUT="$D/p.pb.gz" \
	LD_PRELOAD="$LIB" "$PROG/rprog_age" 8 >"$D/out" 2>"$D/err" || exit 0
if [ $RC -ne 0 ] || [ ! -s "$D/p.pb.gz" ]; then
	fail rel.age.run "exit $RC, profile: $(ls "$D"); $(head -c 300 "$D/err")"
	exit 0
fi

# The function rows of a top listing with a nonzero flat value.
flat_rows() { awk '/^ *flat/{on=1; next} on && $1 != "0" {print $NF}' "$1"; }

"$HEAPPROF" top "$D/p.pb.gz" >"$D/all" 2>"$D/all.err"
first=$(flat_rows "$D/all" | head -1)
case $first in
churn_big|churn_small) pass rel.age.plain_led_by_churn ;;
*) fail rel.age.plain_led_by_churn "first row '$first': $(head -20 "$D/all")" ;;
esac

if "$HEAPPROF" top --min-age 5s "$D/p.pb.gz" >"$D/old" 2>"$D/old.err"; then
	rows=$(flat_rows "$D/old" | tr '\n' ' ')
	case " $rows" in
	" leak_session ") pass rel.age.min_age_isolates_leak ;;
	*) fail rel.age.min_age_isolates_leak "rows '$rows': $(cat "$D/old" "$D/old.err" | head -20)" ;;
	esac
else
	fail rel.age.min_age_isolates_leak "top --min-age failed: $(head -3 "$D/old.err")"
fi

# Young ages hold the churn too: --min-age 0 is the whole in-use view.
"$HEAPPROF" top --min-age 0 "$D/p.pb.gz" >"$D/zero" 2>/dev/null
if [ "$(flat_rows "$D/zero" | sort)" = "$(flat_rows "$D/all" | sort)" ] &&
   grep -q "Showing nodes accounting for .*, 100% of" "$D/zero"; then
	pass rel.age.min_age_zero_is_all
else
	fail rel.age.min_age_zero_is_all "$(head -20 "$D/zero")"
fi

# alloc_* have no age: refused, not an empty listing.
if "$HEAPPROF" top --min-age 5s --sample-index alloc_space "$D/p.pb.gz" \
	>/dev/null 2>"$D/alloc.err"; then
	fail rel.age.alloc_refused "top --min-age on alloc_space succeeded"
else
	pass rel.age.alloc_refused
fi

# The go oracle, as the README's recipe has it.
if go tool pprof -h >/dev/null 2>&1; then
	HOME=$TMPD go tool pprof -top -tagfocus 'age_s=5s:' "$D/p.pb.gz" \
		>"$D/go" 2>"$D/go.err"
	rows=$(flat_rows "$D/go" | tr '\n' ' ')
	case " $rows" in
	" leak_session ") pass rel.age.go_tagfocus ;;
	*) fail rel.age.go_tagfocus "rows '$rows': $(head -20 "$D/go" "$D/go.err")" ;;
	esac
else
	skip_tool rel.age.go_tagfocus go golang-go
fi

# HEAPPROF_AGE=0: no labels, and top --min-age says there are none.
run_t rel.age.off 120 env HEAPPROF_AGE=0 HEAPPROF_RATE=4096 \
	HEAPPROF_OUT="$D/off.pb.gz" LD_PRELOAD="$LIB" "$PROG/rprog_age" 0.5 \
	>/dev/null 2>"$D/off.err" || exit 0
if "$HEAPPROF" top --min-age 0 "$D/off.pb.gz" >/dev/null 2>"$D/off.top"; then
	fail rel.age.off "age labels with HEAPPROF_AGE=0"
elif grep -q "no age_s labels" "$D/off.top" && "$HEAPPROF" top "$D/off.pb.gz" >/dev/null; then
	pass rel.age.off
else
	fail rel.age.off "$(head -3 "$D/off.top")"
fi

# The endpoint keeps Go's shape (no age labels) unless asked: ?age=1.
if command -v curl >/dev/null; then
	port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
	# The program says when it has run 2 s (its oldest leaks are older than
	# 1 s) and runs on until told to stop: no sleep decides.
	timeout -k 5 120 env HEAPPROF_EXIT=0 HEAPPROF_RATE=4096 \
		HEAPPROF_HTTP=127.0.0.1:$port LD_PRELOAD="$LIB" "$PROG/rprog_age" 2 "$D" \
		>/dev/null 2>"$D/http.err" &
	hpid=$!
	i=0
	while [ ! -e "$D/aged" ] && kill -0 $hpid 2>/dev/null && [ $i -lt 600 ]; do
		sleep 0.1; i=$((i + 1)); done
	got=0
	if [ -e "$D/aged" ] &&
	   curl -sf -o "$D/h0.pb.gz" "http://127.0.0.1:$port/debug/pprof/heap" &&
	   curl -sf -o "$D/h1.pb.gz" "http://127.0.0.1:$port/debug/pprof/heap?age=1"; then
		got=1
	fi
	touch "$D/stop"
	wait $hpid
	if [ $got = 0 ]; then
		fail rel.age.endpoint_age_param "no profiles from the endpoint (aged: $(ls "$D" | tr '\n' ' ')) $(head -3 "$D/http.err")"
	elif "$HEAPPROF" top "$D/h0.pb.gz" >/dev/null 2>&1 &&
	   ! "$HEAPPROF" top --min-age 0 "$D/h0.pb.gz" >/dev/null 2>&1 &&
	   "$HEAPPROF" top --min-age 1s "$D/h1.pb.gz" >"$D/h1.top" 2>&1 &&
	   grep -q leak_session "$D/h1.top"; then
		pass rel.age.endpoint_age_param
	else
		fail rel.age.endpoint_age_param "$(ls -l "$D"/h?.pb.gz) $(head -5 "$D/h1.top" "$D/http.err")"
	fi
else
	skip_tool rel.age.endpoint_age_param curl
fi
exit $FAILED
