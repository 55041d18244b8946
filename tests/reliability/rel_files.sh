#!/bin/sh
# Profile files and the environment (plan T30-T32): kill -9 during dumps
# leaves no torn file; a full disk (small tmpfs), a read-only or missing
# directory and a file-size limit leave the program's output and status
# unchanged with one warning (held, printed at exit: warn.c), and a later
# dump succeeds; setuid programs
# write nothing; files are 0600 and a symlink planted at the temporary
# name is not followed; a device node as output is not replaced.
. "$(dirname "$0")/lib.sh"
need_lib rel.files
oracle_tmpdir
MOUNTS=""
cleanup() {
	for m in $MOUNTS; do umount "$m" 2>/dev/null; done
	rm -rf "$TMPD"
}
trap cleanup EXIT
P=$PROG

# --- T30: kill -9 at random moments while dumps run back to back (the
# signal storm), at rate 1 so the profiles are large.
KILLS=$(by_tier 20 200)
d=$TMPD/kill; mkdir -p "$d"
i=0
while [ $i -lt $KILLS ]; do
	env HEAPPROF_RATE=1 HEAPPROF_SIGNAL=USR2 HEAPPROF_OUT="$d/k.%p.%n.pb.gz" LD_PRELOAD="$LIB" \
		"$P/rprog_stress" 4 100000000 1 storm >/dev/null 2>&1 &
	pid=$!
	# 150..450 ms: past start-up, in the middle of some dump
	ms=$(( ($(od -An -N2 -tu2 /dev/urandom) % 300) + 150 ))
	sleep "$(printf '0.%03d' $ms)"
	kill -9 $pid 2>/dev/null
	wait $pid 2>/dev/null
	i=$((i + 1))
done
nfinal=$(ls "$d" | grep -c '\.pb\.gz$')
bad=0
for f in "$d"/*.pb.gz; do
	[ -f "$f" ] || continue
	"$HEAPPROF" top "$f" >/dev/null 2>&1 || { bad=$((bad + 1)); echo "  torn: $f" >&2; }
done
if [ "$nfinal" -gt 0 ] && [ $bad -eq 0 ]; then pass rel.files.kill9.no_torn_file
else fail rel.files.kill9.no_torn_file "$bad of $nfinal profiles do not decode"; fi
ntmp=$(ls "$d" | grep -c '\.tmp\.')
# at most one temporary per killed process, each named after its pid
perpid=$(ls "$d" | grep '\.tmp\.' | sed 's/.*\.tmp\.//' | sort | uniq -d | wc -l)
if [ "$perpid" -eq 0 ] && [ "$ntmp" -le "$KILLS" ]; then pass rel.files.kill9.temps_bounded
else fail rel.files.kill9.temps_bounded "$ntmp temporaries, $perpid pids with several"; fi
if [ "$ntmp" -eq 0 ]; then pass rel.files.kill9.no_stray_temp
else fail rel.files.kill9.no_stray_temp "$ntmp of $KILLS killed processes left PATH.tmp.PID ($nfinal profiles decode): the dump writes an unnamed O_TMPFILE file, named only at commit (src/serve/outfile.c)"; fi

# --- T31: a full disk. tmpfs of 64 KiB, filled; freed after 1.5 s.
d=$TMPD/small; mkdir -p "$d"
if mount -t tmpfs -o size=64k,mode=0755 tmpfs "$d" 2>/dev/null; then
	MOUNTS="$MOUNTS $d"
	dd if=/dev/zero of="$d/filler" bs=4k count=64 2>/dev/null # fills it
	(sleep 1.5; rm -f "$d/filler") &
	run_t rel.files.enospc 30 env HEAPPROF_INTERVAL=1 HEAPPROF_OUT="$d/f.%n.pb.gz" \
		LD_PRELOAD="$LIB" "$PROG/prog_sleep" 3500 >"$TMPD/enospc.out" 2>"$TMPD/enospc.err"
	wait
	nw=$(grep -c 'cannot write profile' "$TMPD/enospc.err")
	later=$(ls "$d" | grep -c '\.pb\.gz$')
	if [ $RC -eq 0 ] && [ "$(cat "$TMPD/enospc.out")" = done ] && [ "$nw" -eq 1 ]; then
		pass rel.files.enospc.host_unchanged
	else fail rel.files.enospc.host_unchanged "rc $RC, out '$(cat "$TMPD/enospc.out")', $nw warnings"; fi
	if [ "$later" -ge 1 ] && ! ls "$d" | grep -q '\.tmp\.'; then pass rel.files.enospc.later_dump_succeeds
	else fail rel.files.enospc.later_dump_succeeds "$later profiles: $(ls "$d")"; fi
	[ "$later" -ge 1 ] && parses rel.files.enospc.parses $(ls "$d"/*.pb.gz | tail -1)
	# read-only directory (root ignores permission bits: a read-only mount)
	ro=$TMPD/ro; mkdir -p "$ro"
	if mount -t tmpfs -o ro,size=64k tmpfs "$ro" 2>/dev/null; then
		MOUNTS="$MOUNTS $ro"
		run_t rel.files.readonly 30 env HEAPPROF_INTERVAL=1 HEAPPROF_OUT="$ro/x.pb.gz" \
			LD_PRELOAD="$LIB" "$PROG/prog_sleep" 1500 >"$TMPD/ro.out" 2>"$TMPD/ro.err"
		nw=$(grep -c 'cannot write profile' "$TMPD/ro.err")
		if [ $RC -eq 0 ] && [ "$(cat "$TMPD/ro.out")" = done ] && [ "$nw" -eq 1 ]; then pass rel.files.readonly
		else fail rel.files.readonly "rc $RC, $nw warnings"; fi
	else skip rel.files.readonly "cannot mount a read-only tmpfs"; fi
else
	skip rel.files.enospc "mounting a tmpfs is not permitted here"
	skip rel.files.readonly "mounting a tmpfs is not permitted here"
fi

# --- missing directory
run_t rel.files.missing_dir 30 env HEAPPROF_INTERVAL=1 HEAPPROF_OUT="$TMPD/nope/x.pb.gz" \
	LD_PRELOAD="$LIB" "$PROG/prog_sleep" 1200 >"$TMPD/md.out" 2>"$TMPD/md.err"
nw=$(grep -c 'cannot write profile' "$TMPD/md.err")
if [ $RC -eq 0 ] && [ "$(cat "$TMPD/md.out")" = done ] && [ "$nw" -eq 1 ]; then pass rel.files.missing_dir
else fail rel.files.missing_dir "rc $RC, $nw warnings"; fi
# ... and with no exit profile: a dump's warning during the run, held while
# the program runs, is still printed once at exit (warn.c; issue 29). The
# dump is the program's own raise(SIGUSR2) with HEAPPROF_SIGNAL, not a
# periodic one (HEAPPROF_INTERVAL=1 in a 1.2 s program had no dump before
# the exit on a loaded machine once: 0 warnings, a failure in CI).
run_t rel.files.missing_dir_noexit 30 env HEAPPROF_SIGNAL=USR2 HEAPPROF_EXIT=0 HEAPPROF_RATE=4096 \
	HEAPPROF_OUT="$TMPD/nope/x.pb.gz" LD_PRELOAD="$LIB" "$PROG/rprog_nolibs" raise \
	>"$TMPD/mdx.out" 2>"$TMPD/mdx.err"
nw=$(grep -c 'cannot write profile' "$TMPD/mdx.err")
if [ $RC -eq 0 ] && grep -q '^end' "$TMPD/mdx.out" && [ "$nw" -eq 1 ]; then pass rel.files.missing_dir_noexit
else fail rel.files.missing_dir_noexit "rc $RC, $nw warnings: $(cat "$TMPD/mdx.err")"; fi

# --- file-size limit: 2 KiB, smaller than the profiles of rprog_stress at
# rate 1. The periodic dumps (dump thread) and the exit dump (main thread)
# fail with EFBIG; SIGXFSZ must not kill the program.
d=$TMPD/fsize; mkdir -p "$d"
run_t rel.files.fsize 60 bash -c 'ulimit -f 2; exec "$@"' sh env HEAPPROF_RATE=1 \
	HEAPPROF_INTERVAL=1 HEAPPROF_OUT="$d/u.%n.pb.gz" LD_PRELOAD="$LIB" "$P/rprog_stress" 2 150000 2 \
	>"$d/out" 2>"$d/err"
nw=$(grep -c 'cannot write profile' "$d/err")
if [ $RC -eq 0 ] && grep -q 'bad 0' "$d/out" && [ "$nw" -eq 1 ] && [ -z "$(ls "$d" | grep '\.pb\.gz')" ]; then
	pass rel.files.fsize
else fail rel.files.fsize "rc $RC (153 = SIGXFSZ), $nw warnings, files: $(ls "$d" | tr '\n' ' ')"; fi

# --- T32: setuid. Run as root a program owned by nobody with the setuid
# bit (AT_SECURE), linked with libheapprof.a and through LD_PRELOAD.
d=$TMPD/suid; mkdir -p "$d"; chmod 1777 "$d"
if [ "$(id -u)" -ne 0 ]; then
	skip rel.files.setuid "needs root to make a setuid test binary"
elif findmnt -no OPTIONS -T "$d" 2>/dev/null | grep -q nosuid; then
	skip rel.files.setuid "$TMPD is on a nosuid mount"
else
	cp "$P/rprog_secure_linked" "$d/linked"; cp "$P/rprog_secure" "$d/plain"
	cp "$P/rprog_secure_linked" "$d/control"
	chown nobody "$d/linked" "$d/plain"; chmod 4755 "$d/linked" "$d/plain"
	(cd "$d" && run_t rel.files.setuid.control 20 env HEAPPROF_OUT="$d/control.%p.pb.gz" ./control >/dev/null)
	(cd "$d" && run_t rel.files.setuid.linked 20 env HEAPPROF_OUT="$d/linked.%p.pb.gz" HEAPPROF_INTERVAL=1 ./linked >"$d/l.out" 2>&1)
	(cd "$d" && run_t rel.files.setuid.preload 20 env HEAPPROF_OUT="$d/plain.%p.pb.gz" LD_PRELOAD="$LIB" ./plain >"$d/p.out" 2>&1)
	if ls "$d" | grep -q '^control\..*\.pb\.gz$'; then pass rel.files.setuid.control_writes
	else fail rel.files.setuid.control_writes "the linked program wrote nothing without setuid"; fi
	if grep -q 'at_secure=1' "$d/l.out" && ! ls "$d" | grep -q '^linked\.' &&
		! ls "$d" | grep -q '^heapprof\.'; then pass rel.files.setuid.linked_writes_nothing
	else fail rel.files.setuid.linked_writes_nothing "$(cat "$d/l.out"): $(ls "$d" | tr '\n' ' ')"; fi
	if grep -q 'at_secure=1' "$d/p.out" && ! ls "$d" | grep -q '^plain\.'; then pass rel.files.setuid.preload_writes_nothing
	else fail rel.files.setuid.preload_writes_nothing "$(cat "$d/p.out"): $(ls "$d" | tr '\n' ' ')"; fi
fi

# --- files are 0600 whatever the umask; a symlink planted at the
# temporary name is not followed; a planted regular file is not reused.
d=$TMPD/perm; mkdir -p "$d"
(umask 0; run_t rel.files.mode 20 env HEAPPROF_OUT="$d/m.pb.gz" LD_PRELOAD="$LIB" "$PROG/prog_sleep" 10 >/dev/null)
if [ "$(stat -c %a "$d/m.pb.gz" 2>/dev/null)" = 600 ]; then pass rel.files.mode_0600
else fail rel.files.mode_0600 "mode $(stat -c %a "$d/m.pb.gz" 2>&1)"; fi
# With -s and no %n, the signal dump is s.0.pb.gz (README: .%n inserted),
# written through s.0.pb.gz.tmp.PID when the unnamed file is not used or
# at its commit: the plant goes there (it went to s.pb.gz.tmp.PID, a name
# no dump uses, and the two checks below could not fail).
plant() { # kind: symlink or file. Starts prog_sleep, waits until the
	# profiler's USR2 handler is installed, plants, signals; sets RC and _c.
	_k=$1
	rm -f "$d/victim" "$d"/s.*
	echo original >"$d/victim"
	env HEAPPROF_SIGNAL=USR2 HEAPPROF_EXIT=0 HEAPPROF_OUT="$d/s.pb.gz" \
		LD_PRELOAD="$LIB" "$PROG/prog_sleep" 3000 >/dev/null 2>"$d/plant.err" &
	_c=$!
	(sleep 30; kill -9 $_c 2>/dev/null) &
	_w=$!
	_i=0 # SigCgt has bit 11 (USR2 = 12) once the handler is there
	while [ $_i -lt 100 ]; do
		_m=$(awk '/^SigCgt/ {print $2}' /proc/$_c/status 2>/dev/null)
		[ -n "$_m" ] && [ $(( 0x$_m & 0x800 )) -ne 0 ] && break
		sleep 0.05; _i=$((_i + 1))
	done
	if [ "$_k" = symlink ]; then ln -s "$d/victim" "$d/s.0.pb.gz.tmp.$_c"
	else echo planted >"$d/s.0.pb.gz.tmp.$_c"; chmod 644 "$d/s.0.pb.gz.tmp.$_c"; fi
	kill -USR2 "$_c"
	wait $_c
	RC=$?
	kill $_w 2>/dev/null
}
plant symlink
# Not followed: the victim is untouched (the planted link may be removed),
# and the profile is written all the same, a regular file.
if [ "$(cat "$d/victim")" = original ] && [ -f "$d/s.0.pb.gz" ] && [ ! -L "$d/s.0.pb.gz" ] && [ $RC -eq 0 ]; then
	pass rel.files.symlink_not_followed
else fail rel.files.symlink_not_followed "victim: $(head -c 40 "$d/victim" | tr -cd "[:alnum:] "), rc $RC, files: $(ls -l "$d" | tail -n +2 | tr '\n' ' ')"; fi
plant file
if [ $RC -eq 0 ] && [ -f "$d/s.0.pb.gz" ] && [ "$(stat -c %a "$d/s.0.pb.gz")" = 600 ]; then
	pass rel.files.planted_temp_not_reused
else fail rel.files.planted_temp_not_reused "rc $RC: a file planted at PATH.tmp.PID was reused and renamed into place keeping its mode, or no profile: $(stat -c %a "$d/s.0.pb.gz" 2>&1) (src/serve/outfile.c opens the temporary with O_EXCL)"; fi

# --- an output path that is a device node (HEAPPROF_OUT=/dev/null as root
# would replace the system's /dev/null): a private node stands in.
d=$TMPD/dev; mkdir -p "$d"
if mknod "$d/null" c 1 3 2>/dev/null; then
	run_t rel.files.device 20 env HEAPPROF_OUT="$d/null" LD_PRELOAD="$LIB" "$PROG/prog_sleep" 10 >/dev/null 2>&1
	if [ -c "$d/null" ]; then pass rel.files.device_not_replaced
	else fail rel.files.device_not_replaced "HEAPPROF_OUT naming a device node: a regular file was renamed over it (src/serve/outfile.c writes a non-regular file in place)"; fi
else skip rel.files.device_not_replaced "mknod not permitted"; fi
exit $FAILED
