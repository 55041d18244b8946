#!/bin/sh
# Periodic delta files (HEAPPROF_MODE=delta): each file holds its
# interval's allocations, so at rate 1 the files' alloc values add up to
# exactly what the program allocated, and the last file's in-use values are
# the program's live objects at exit; every file has a duration. Push: each
# interval's profile reaches a Pyroscope-style /ingest as a multipart
# request with alloc_* marked not cumulative; a failing receiver is retried.
. "$(dirname "$0")/lib.sh"
need_lib serve_files_push
need_go serve_files_push
oracle_tmpdir

t0=$(date +%s%N)
HEAPPROF_RATE=1 HEAPPROF_MODE=delta HEAPPROF_INTERVAL=1 HEAPPROF_OUT="$TMPD/d.%n.pb.gz" \
	LD_PRELOAD="$LIB" "$PROG/prog_phases" 4 700 >"$TMPD/ph.exp" 2>"$TMPD/ph.err"
wall_ns=$(($(date +%s%N) - t0))
n=$(ls "$TMPD"/d.*.pb.gz 2>/dev/null | wc -l)
[ "$n" -ge 3 ] && pass files.delta.several_files || fail files.delta.several_files "$n files"
# Sum of the alloc values of every file; in-use of the last.
total_ao=0; total_ab=0; last=""
i=0
while [ -f "$TMPD/d.$i.pb.gz" ]; do last=$TMPD/d.$i.pb.gz; i=$((i + 1)); done
sums=$(for f in "$TMPD"/d.*.pb.gz; do $PROFSUM sums "$f"; done | awk '$1=="site_phase"{ao+=$2; ab+=$3} END{printf "%d %d", ao, ab}')
want=$(awk '{print $3, $4}' "$TMPD/ph.exp")
[ "$sums" = "$want" ] && pass files.delta.allocs_add_up || fail files.delta.allocs_add_up "files $sums, truth $want"
inuse=$($PROFSUM sums "$last" | awk '$1=="site_phase"{printf "%d %d", $4, $5}')
want_in=$(awk '{print $5, $6}' "$TMPD/ph.exp")
[ "$inuse" = "$want_in" ] && pass files.delta.last_inuse_absolute || fail files.delta.last_inuse_absolute "last $inuse, truth $want_in"
# Every file has a duration, none longer than the program ran (the first
# file's said 56 years: time_nanos since 1970). Their sum is the program's
# life since the library started, so at most its wall time.
nodur=0 long=0 sum=0
for f in "$TMPD"/d.*.pb.gz; do
	d=$($PPROFCHECK dump "$f" 2>/dev/null | awk '$1 == "duration_nanos:" { print $2 }')
	if [ -z "$d" ] || [ "$d" -le 0 ]; then nodur=$((nodur + 1)); continue; fi
	[ "$d" -gt "$wall_ns" ] && long=$((long + 1))
	sum=$((sum + d))
done
[ $nodur -eq 0 ] && pass files.delta.durations || fail files.delta.durations "$nodur files without a duration"
if [ $long -eq 0 ] && [ $sum -le "$wall_ns" ]; then pass files.delta.durations_within_run
else fail files.delta.durations_within_run "$long files longer than the run's $wall_ns ns; sum $sum ns"; fi

# The exit file of a delta run with no periodic dump: its base is the
# process's start (it said 56 years too).
t0=$(date +%s%N)
HEAPPROF_RATE=1 HEAPPROF_MODE=delta HEAPPROF_OUT="$TMPD/x.pb.gz" \
	LD_PRELOAD="$LIB" "$PROG/prog_phases" 2 300 >/dev/null 2>"$TMPD/x.err"
wall_ns=$(($(date +%s%N) - t0))
d=$($PPROFCHECK dump "$TMPD/x.pb.gz" 2>/dev/null | awk '$1 == "duration_nanos:" { print $2 }')
if [ -n "$d" ] && [ "$d" -gt 0 ] && [ "$d" -le "$wall_ns" ]; then pass files.delta.exit_only_duration
else fail files.delta.exit_only_duration "duration '$d' ns, the run took $wall_ns ns"; fi

# Push, with a receiver that fails the first request.
python3 "$REPO/tests/integration/pyroscope_receiver.py" "$TMPD/port" "$TMPD/log" 1 &
rpid=$!
i=0
while [ ! -f "$TMPD/port" ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i + 1)); done
port=$(cat "$TMPD/port")
HEAPPROF_PUSH=http://127.0.0.1:$port HEAPPROF_PUSH_INTERVAL=1 HEAPPROF_APP=phases HEAPPROF_EXIT=0 \
	LD_PRELOAD="$LIB" "$PROG/prog_phases" 8 600 >"$TMPD/push.out" 2>"$TMPD/push.err"
sleep 0.2
kill $rpid 2>/dev/null
wait $rpid 2>/dev/null
reqs=$(wc -l <"$TMPD/log" 2>/dev/null || echo 0)
bad=$(grep -c '"ok": false' "$TMPD/log" 2>/dev/null)
if [ "$reqs" -ge 3 ] && [ "$bad" -eq 0 ]; then pass push.requests_valid; else
	fail push.requests_valid "$reqs requests, $bad invalid: $(grep '"ok": false' "$TMPD/log" | head -2)"; fi
grep -q '"name": "phases"' "$TMPD/log" && pass push.app_name || fail push.app_name "$(head -1 "$TMPD/log")"
# The first request got a 500: the same profile must come again.
b1=$(sed -n 1p "$TMPD/log" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("profile_bytes"))')
b2=$(sed -n 2p "$TMPD/log" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("profile_bytes"))')
[ -n "$b1" ] && [ "$b1" = "$b2" ] && pass push.retried_after_500 || fail push.retried_after_500 "sizes $b1 $b2"
grep -q 'cannot push' "$TMPD/push.err" && [ "$(grep -c 'cannot push' "$TMPD/push.err")" -eq 1 ] &&
	pass push.failure_warned_once || fail push.failure_warned_once "$(cat "$TMPD/push.err")"
check_parses push.profile_parses "$TMPD/log.2.pb.gz"
exit $FAILED
