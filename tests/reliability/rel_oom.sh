#!/bin/sh
# A profile on disk before the OOM kill (issue 31.2). rprog_leak, a C++
# service leaking 1 MiB blocks at 10 MB/s .. 1 GB/s (site_leak_sessions,
# beside a bounded cache and a churned buffer), runs under
#   heapprof run --dump-limit 0.8 --dump-usage 0.8 --peak-file P
# in a cgroup v1 memory group this script creates (a child of its own
# group, MB_LIMIT), and is killed by the OOM killer: 4 kills in the fast
# tier, 20 in the stress tier. heapprof finds the limit itself. The runs
# sample at 64 KiB, where every 1 MiB block is sampled (p = 1 - e^-16):
# the estimate is then the truth, and rolling_within measures the file's
# lag alone (at the default rate the estimate's own sampling error, which
# `heapprof top --error` shows, comes on top). In at least 19 of 20 (all
# 4) kills:
#   rel.oom.v1.killed         the kill was the OOM killer's (memory.oom_control)
#   rel.oom.v1.top_leak       a profile is on disk (written before the
#                             kill: the process wrote nothing after it)
#                             whose top inuse_space site is the leak
#   rel.oom.v1.rolling_within the --peak-file holds at least (1 - 0.1) of
#                             the heap at the kill (the program's last
#                             "heap N" line, written after each block)
#   rel.oom.v1.limit_found    --dump-limit's file was written (the limit
#                             found by heapprof)
#   rel.oom.v1.usage_dump     --dump-usage 0.5 alone: one file, when the
#                             group's usage (read by the watcher) reached
#                             half the limit
#   rel.oom.v1.limit_watched  the same when the limit is lowered while
#                             the program runs (the watcher re-reads it)
# The same under `ulimit -v` (malloc fails, the program aborts):
#   rel.oom.rlimit_as.{top_leak,rolling_within}
# cgroup v2 (memory.max) where a v2 memory controller can be had, else
# SKIP rel.oom.v2 with the reason. A PSI trigger (--dump-pressure 1)
# where /proc/pressure/memory exists: rel.oom.psi_dump. earlyoom's
# SIGTERM gets the exit profile: rel.oom.sigterm_profile.
. "$(dirname "$0")/lib.sh"
need_lib rel.oom
oracle_tmpdir
LEAK=$PROG/rprog_leak
PEAKSUM="python3 $REPO/tests/integration/peaksum.py"
MB=1048576
MB_LIMIT=128
STEP=0.1
N=$(by_tier 4 20)
# The leak rates, MB/s, cycled over the runs.
RATES=$(by_tier "10 100 300 1000" "10 30 100 300 1000")
MADE=""
# mk_v1 runs in $(...): its groups are found by name, not through MADE.
cleanup_cg() {
	for g in $MADE "$V1OWN"/heapprof_oom_$$_*; do [ -d "$g" ] && rmdir "$g" 2>/dev/null; done
	return 0
}

# The v1 memory group of this shell, where a child group is made (so
# that whatever limits this session's group keeps limiting the test's).
V1ROOT=/sys/fs/cgroup/memory
V1OWN=$V1ROOT$(awk -F: '$2 == "memory" { print $3 }' /proc/self/cgroup 2>/dev/null)
[ -d "$V1OWN" ] || V1OWN=$V1ROOT
trap 'cleanup_cg; rm -rf "$TMPD"' EXIT

# mk_v1 NAME: a fresh v1 group with MB_LIMIT (no swap beyond it); its path
# on stdout, nothing if it cannot be made.
mk_v1() {
	_g=$V1OWN/heapprof_oom_$$_$1
	mkdir "$_g" 2>/dev/null || return 1
	MADE="$MADE $_g"
	echo $((MB_LIMIT * MB)) >"$_g/memory.limit_in_bytes" 2>/dev/null || return 1
	echo $((MB_LIMIT * MB)) >"$_g/memory.memsw.limit_in_bytes" 2>/dev/null
	echo "$_g"
}

# top_site FILE: the site with the most inuse_space, and the file's
# inuse_space total: "SITE TOTAL".
top_site() {
	$PEAKSUM "$1" 2>/dev/null | awk '
		$1 == "total" && $2 == "inuse_space" { t = $3 }
		$1 == "leaf" && $3 == "inuse_space" && $4 > best { best = $4; s = $2 }
		END { if (t != "") print (s == "" ? "none" : s), t }'
}

# judge RUNDIR KIND: one kill's outcome into RUNDIR/verdict, words
# top_leak rolling_within limit_found for what held; details in
# RUNDIR/why.
judge() {
	_d=$1
	: >"$_d/verdict"
	_heap=$(awk '$1 == "heap" && NF == 2 { h = $2 } END { print h + 0 }' "$_d/progress")
	_top=none
	for _f in "$_d"/peak.pb.gz "$_d"/lim.*.pb.gz; do
		[ -f "$_f" ] || continue
		set -- $(top_site "$_f")
		if [ "$1" = site_leak_sessions ]; then _top=$_f; break; fi
	done
	[ "$_top" != none ] && echo top_leak >>"$_d/verdict"
	_peak=0
	if [ -f "$_d/peak.pb.gz" ]; then
		set -- $(top_site "$_d/peak.pb.gz")
		_peak=${2:-0}
	fi
	if [ "$_heap" -gt 0 ] && awk -v p="$_peak" -v h="$_heap" -v s="$STEP" \
		'BEGIN { exit !(p >= (1 - s) * h) }'; then
		echo rolling_within >>"$_d/verdict"
	fi
	ls "$_d"/lim.*.pb.gz >/dev/null 2>&1 && echo limit_found >>"$_d/verdict"
	echo "heap at the end $_heap, peak file inuse $_peak ($(awk -v p="$_peak" -v h="$_heap" 'BEGIN { if (h) printf "%.3f", p / h }')), profile with the leak on top: $_top, files: $(ls "$_d" | grep pb.gz | tr '\n' ' ')" >"$_d/why"
}

# tally NAME WORD RUNS...: PASS if WORD holds in at least 19/20 of RUNS.
tally() {
	_n=$1 _w=$2; shift 2
	_tot=0 _ok=0 _bad=""
	for _r in "$@"; do
		_tot=$((_tot + 1))
		if grep -qx "$_w" "$_r/verdict" 2>/dev/null; then
			_ok=$((_ok + 1))
		else
			_bad="$_bad [$(basename "$_r"): $(cat "$_r/why" 2>/dev/null)]"
		fi
	done
	_need=$(((_tot * 19 + 19) / 20))
	if [ "$_tot" -gt 0 ] && [ "$_ok" -ge "$_need" ]; then
		pass "$_n"
		# what was measured, on stderr: the count, and the peak
		# file's share of the heap at each kill
		echo "  $_n: $_ok of $_tot; peak file / heap at the end: $(for _r in "$@"; do sed -n 's/.*inuse [0-9]* (\([0-9.]*\)).*/\1/p' "$_r/why"; done | sort -n | tr '\n' ' ')$_bad" >&2
	else
		fail "$_n" "$_ok of $_tot (at least $_need needed):$_bad"
	fi
}

# ------------------------------------------------------- cgroup v1
if [ ! -d "$V1ROOT" ] || ! mk_v1 probe >/dev/null; then
	skip rel.oom.v1 "no writable cgroup v1 memory hierarchy at $V1ROOT (needs root)"
else
	rmdir "$V1OWN/heapprof_oom_$$_probe"
	i=0 runs="" killed_bad=""
	while [ $i -lt "$N" ]; do
		set -- $RATES
		k=$((i % $#))
		shift $k
		rate=$1
		d=$TMPD/v1.$i.$rate
		mkdir -p "$d"
		cg=$(mk_v1 "$i")
		if [ -z "$cg" ]; then
			fail rel.oom.v1.setup "cannot make the group $i"
			break
		fi
		timeout -k 5 300 sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" run --no-exit-dump -r 65536 \
			--dump-limit 0.8 --dump-usage 0.8 --peak-file "$3/peak.pb.gz" -o "$3/lim.%n.pb.gz" \
			-- "$4" "$5" 3' sh "$cg" "$HEAPPROF" "$d" "$LEAK" "$rate" \
			3>"$d/progress" >"$d/out" 2>"$d/err"
		rc=$?
		kills=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
		rmdir "$cg" 2>/dev/null
		if [ "${kills:-0}" -lt 1 ] || [ $rc -eq 0 ]; then
			killed_bad="$killed_bad [run $i at $rate MB/s: status $rc, oom_kill ${kills:-?}: $(head -c 300 "$d/err")]"
		fi
		judge "$d"
		runs="$runs $d"
		i=$((i + 1))
	done
	[ -z "$killed_bad" ] && pass rel.oom.v1.killed || fail rel.oom.v1.killed "not OOM kills:$killed_bad"
	# --dump-usage alone: the watcher reads the group's own
	# memory.usage_in_bytes against its limit, and writes one file when
	# it reaches half of it: then the heap is below half (usage counts
	# it and more) plus what 100 MB/s adds in the 100 ms between reads
	# and the dump's start (150 ms: 15 MB), and above 0.35 (code, stacks
	# and the profiler's own memory are a few MiB here, not 15% of it).
	d=$TMPD/usage
	mkdir -p "$d"
	if cg=$(mk_v1 usage) && [ -n "$cg" ]; then
		timeout -k 5 300 sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" run --no-exit-dump -r 65536 \
			--dump-usage 0.5 -o "$3/use.%n.pb.gz" -- "$4" 100 3' sh "$cg" "$HEAPPROF" "$d" "$LEAK" \
			3>"$d/progress" >"$d/out" 2>"$d/err"
		rc=$?
		rmdir "$cg" 2>/dev/null
		set -- $(top_site "$d/use.0.pb.gz" 2>/dev/null)
		if [ "$1" = site_leak_sessions ] && [ ! -f "$d/use.1.pb.gz" ] &&
			awk -v v="${2:-0}" -v l=$((MB_LIMIT * MB)) 'BEGIN { exit !(v >= 0.35 * l && v <= 0.5 * l + 15e6) }'; then
			pass rel.oom.v1.usage_dump
		else
			fail rel.oom.v1.usage_dump "status $rc, top '$1' inuse '$2' of limit $((MB_LIMIT * MB)), files: $(ls "$d" | tr '\n' ' '); $(head -c 300 "$d/err")"
		fi
	else
		fail rel.oom.v1.usage_dump "cannot make its group"
	fi
	# The limit is watched, not only read at start: the group starts at
	# 1 GiB and is lowered to MB_LIMIT once the program holds 16 MB;
	# --dump-usage 0.5 must then write at half the new limit, before
	# the OOM kill at the new one (half the old is never reached).
	d=$TMPD/lowered
	mkdir -p "$d"
	if cg=$(mk_v1 lowered) && [ -n "$cg" ] &&
		{ echo $((1024 * MB)) >"$cg/memory.memsw.limit_in_bytes"; } 2>/dev/null; [ -n "$cg" ] &&
		echo $((1024 * MB)) >"$cg/memory.limit_in_bytes"; then
		timeout -k 5 300 sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" run --no-exit-dump -r 65536 \
			--dump-usage 0.5 -o "$3/low.%n.pb.gz" -- "$4" 50 3' sh "$cg" "$HEAPPROF" "$d" "$LEAK" \
			3>"$d/progress" >"$d/out" 2>"$d/err" &
		hp=$!
		i=0
		while [ $i -lt 1500 ] && [ "$(awk 'END { print $2 + 0 }' "$d/progress")" -lt $((16 * MB)) ]; do
			sleep 0.02
			i=$((i + 1))
		done
		echo $((MB_LIMIT * MB)) >"$cg/memory.limit_in_bytes"
		echo $((MB_LIMIT * MB)) >"$cg/memory.memsw.limit_in_bytes" 2>/dev/null
		wait $hp
		rc=$?
		kills=$(awk '$1 == "oom_kill" { print $2 }' "$cg/memory.oom_control")
		rmdir "$cg" 2>/dev/null
		set -- $(top_site "$d/low.0.pb.gz" 2>/dev/null)
		if [ "${kills:-0}" -ge 1 ] && [ "$1" = site_leak_sessions ]; then
			pass rel.oom.v1.limit_watched
		else
			fail rel.oom.v1.limit_watched "status $rc, oom_kill ${kills:-?}, top '$1', files: $(ls "$d" | tr '\n' ' '); $(head -c 300 "$d/err")"
		fi
	else
		fail rel.oom.v1.limit_watched "cannot make its group"
	fi
	tally rel.oom.v1.top_leak top_leak $runs
	tally rel.oom.v1.rolling_within rolling_within $runs
	tally rel.oom.v1.limit_found limit_found $runs
fi

# ------------------------------------------------------- ulimit -v
# The address space holds the libraries, the profiler's reservations and
# malloc's arenas besides the heap: 400 MB, of which the heap gets ~300.
i=0 runs=""
NV=$(by_tier 2 5)
while [ $i -lt "$NV" ]; do
	set -- $(by_tier "100 1000" "$RATES")
	k=$((i % $#))
	shift $k
	rate=$1
	d=$TMPD/as.$i.$rate
	mkdir -p "$d"
	(
		ulimit -v 400000 2>/dev/null || exit 99
		exec timeout -k 5 300 "$HEAPPROF" run --no-exit-dump -r 65536 --dump-limit 0.8 \
			--peak-file "$d/peak.pb.gz" -o "$d/lim.%n.pb.gz" -- "$LEAK" "$rate" 3
	) 3>"$d/progress" >"$d/out" 2>"$d/err"
	rc=$?
	if [ $rc = 99 ]; then
		skip rel.oom.rlimit_as "ulimit -v cannot be set here"
		runs=""
		break
	fi
	judge "$d"
	runs="$runs $d"
	i=$((i + 1))
done
if [ -n "$runs" ]; then
	tally rel.oom.rlimit_as.top_leak top_leak $runs
	tally rel.oom.rlimit_as.rolling_within rolling_within $runs
fi

# ------------------------------------------------------- cgroup v2
V2=""
for m in /sys/fs/cgroup /sys/fs/cgroup/unified; do
	if [ -f "$m/cgroup.controllers" ] && grep -qw memory "$m/cgroup.controllers"; then
		V2=$m
		break
	fi
done
if [ -z "$V2" ]; then
	skip rel.oom.v2 "no cgroup v2 memory controller here (memory is bound to the v1 hierarchy; cgroup2 at $(awk '$3 == "cgroup2" { print $2 }' /proc/mounts | head -1) offers: $(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null))"
else
	own=$V2$(awk -F: '$1 == "0" { print $3 }' /proc/self/cgroup)
	g=$own/heapprof_oom_$$_v2
	if ! mkdir "$g" 2>/dev/null || ! echo $((MB_LIMIT * MB)) >"$g/memory.max" 2>/dev/null; then
		rmdir "$g" 2>/dev/null
		skip rel.oom.v2 "cannot make a v2 group with memory.max under $own (controller not delegated there)"
	else
		MADE="$MADE $g"
		echo 0 >"$g/memory.swap.max" 2>/dev/null
		i=0 runs=""
		while [ $i -lt "$(by_tier 2 5)" ]; do
			set -- $RATES; k=$((i % $#)); shift $k; rate=$1
			d=$TMPD/v2.$i.$rate
			mkdir -p "$d"
			timeout -k 5 300 sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" run --no-exit-dump -r 65536 \
				--dump-limit 0.8 --dump-usage 0.8 --peak-file "$3/peak.pb.gz" -o "$3/lim.%n.pb.gz" \
				-- "$4" "$5" 3' sh "$g" "$HEAPPROF" "$d" "$LEAK" "$rate" \
				3>"$d/progress" >"$d/out" 2>"$d/err"
			judge "$d"
			runs="$runs $d"
			i=$((i + 1))
		done
		tally rel.oom.v2.top_leak top_leak $runs
		tally rel.oom.v2.rolling_within rolling_within $runs
		tally rel.oom.v2.limit_found limit_found $runs
	fi
fi

# ------------------------------------------------------- PSI
# Only --dump-pressure is on: any template file is its. In a group of
# MB_LIMIT, rprog_leak holds 100 MiB and then reads a 64 MiB file (its
# cache dropped) over and over: the kernel reclaims the group's page
# cache all along, which PSI counts as memory stalls; 1 ms a second fires
# the trigger. The program stops reading when the file appears (or after
# 60 s).
if [ ! -e /proc/pressure/memory ]; then
	skip rel.oom.psi_dump "the kernel offers no PSI (/proc/pressure/memory absent: CONFIG_PSI off or psi=0)"
elif [ ! -d "$V1ROOT" ] || ! cg=$(mk_v1 psi) || [ -z "$cg" ]; then
	skip rel.oom.psi_dump "no writable cgroup v1 memory hierarchy at $V1ROOT to make pressure in"
else
	d=$TMPD/psi
	mkdir -p "$d"
	dd if=/dev/zero of="$d/big" bs=1M count=64 conv=fsync 2>/dev/null
	timeout -k 5 300 sh -c 'echo $$ >"$1/cgroup.procs" && exec "$2" run --no-exit-dump -r 65536 \
		--dump-pressure 1 -o "$3/psi.%n.pb.gz" -- "$4" 200 3 100 "$3/big" "$3/stop"' \
		sh "$cg" "$HEAPPROF" "$d" "$LEAK" 3>"$d/progress" >"$d/out" 2>"$d/err" &
	hp=$!
	i=0
	while [ $i -lt 1500 ] && ! ls "$d"/psi.*.pb.gz >/dev/null 2>&1 && kill -0 $hp 2>/dev/null; do
		sleep 0.02
		i=$((i + 1))
	done
	touch "$d/stop"
	wait $hp
	rc=$?
	rmdir "$cg" 2>/dev/null
	rm -f "$d/big"
	f=$(ls "$d"/psi.*.pb.gz 2>/dev/null | head -1)
	if [ -n "$f" ] && [ "$(top_site "$f" | cut -d' ' -f1)" = site_leak_sessions ]; then
		pass rel.oom.psi_dump
	else
		fail rel.oom.psi_dump "status $rc, files: $(ls "$d" | tr '\n' ' '); $(head -c 300 "$d/err")"
	fi
fi

# ------------------------------------------------------- environment
# The variables are heapprof's (no "not a heapprof variable"), and a bad
# value is named in a warning.
HEAPPROF_PEAK_FILE=$TMPD/env.pb.gz HEAPPROF_PEAK_STEP=lots HEAPPROF_PEAK_GAP=5 \
	HEAPPROF_DUMP_USAGE=2 HEAPPROF_DUMP_PRESSURE=0 HEAPPROF_EXIT=0 LD_PRELOAD="$LIB" \
	"$LEAK" 1000 3 4 3>/dev/null 2>"$TMPD/env.err"
if grep -q "HEAPPROF_PEAK_STEP='lots'" "$TMPD/env.err" && grep -q "HEAPPROF_DUMP_USAGE='2'" "$TMPD/env.err" &&
	grep -q "HEAPPROF_DUMP_PRESSURE='0'" "$TMPD/env.err" && ! grep -q 'not a heapprof variable' "$TMPD/env.err" &&
	[ -f "$TMPD/env.pb.gz" ]; then
	pass rel.oom.env_checked
else
	fail rel.oom.env_checked "peak file: $(ls "$TMPD" | grep env); $(head -c 400 "$TMPD/env.err")"
fi

# ------------------------------------------------------- SIGTERM
# earlyoom sends SIGTERM to the process before its SIGKILL: the exit
# profile is written then, with the leak on top.
d=$TMPD/term
mkdir -p "$d"
"$HEAPPROF" run -o "$d/exit.pb.gz" -- "$LEAK" 50 3 3>"$d/progress" >"$d/out" 2>"$d/err" &
hp=$!
i=0 lp=""
while [ $i -lt 1500 ]; do
	[ -z "$lp" ] && lp=$(ps -o pid= --ppid "$hp" 2>/dev/null | tr -d ' ')
	[ -n "$lp" ] && [ "$(awk 'END { print $2 + 0 }' "$d/progress")" -ge $((40 * MB)) ] && break
	sleep 0.02
	i=$((i + 1))
done
[ -n "$lp" ] && kill -TERM "$lp"
wait $hp
rc=$?
if [ -n "$lp" ] && [ $rc -eq 143 ] && [ -f "$d/exit.pb.gz" ] &&
	[ "$(top_site "$d/exit.pb.gz" | cut -d' ' -f1)" = site_leak_sessions ]; then
	pass rel.oom.sigterm_profile
else
	fail rel.oom.sigterm_profile "leak pid '$lp', status $rc, files: $(ls "$d" | tr '\n' ' '); $(head -c 300 "$d/err")"
fi
exit ${FAILED:-0}
