#!/bin/sh
# Profiles to a stream (issue 29 item 6). HEAPPROF_OUT=/dev/null got
# ".PID" (fork children) and ".N" (periodic dumps) inserted: regular files
# /dev/null.4242, /dev/null.3 in /dev's tmpfs (63,000 in an afternoon);
# /dev/stdout got a temporary file renamed over it; a FIFO got the same
# names, and its one profile was written non-blocking (cut at 64 KiB).
# Now /dev/null, a FIFO, /dev/stdout (/dev/fd/N) are written as given, one
# whole profile after another. Program rprog_forkstorm.c: `busy 2 3` (3
# children that allocate, then 2 s of allocation with -i 1: periodic
# dumps, the children's and the exit profile), `wide 20000` (a 125 KB
# profile). The /dev cases run in a private mount namespace whose /dev is
# a tmpfs with the real null device (so that the code this test was written
# against could not change the machine's /dev); without one, as root, they
# are skipped, otherwise they use the real /dev.
#   rel.streams.devnull.{preload,run}  nothing new in /dev; status and
#                      stdout as without the profiler
#   rel.streams.stdout.{preload,run}   stdout redirected to a file: it
#                      holds >= 5 whole profiles one after another, each
#                      decodes; nothing new in /dev
#   rel.streams.{stdout,fifo}.concurrent  8 children write large exit
#                      profiles at once: 9 whole profiles (the FIFO's were
#                      interleaved with the stream's lock taken out)
#   rel.streams.stdout.epipe  stdout a pipe without a reader: status 0,
#                      not death by SIGPIPE
#   rel.streams.cli.{null,stdout}  `heapprof convert -o /dev/null` (or
#                      /dev/stdout): no temporary file renamed over it
#   rel.streams.fifo.top   `heapprof top FIFO` reads a 125 KB profile whole
#                      (passed before too: this reader keeps up)
#   rel.streams.fifo.slow  a reader with a one-page pipe buffer gets it
#                      whole (it was cut at EAGAIN)
#   rel.streams.fifo.{preload,run}  a reader of the FIFO gets >= 5 whole
#                      profiles, each decodes; no file beside the FIFO
. "$(dirname "$0")/lib.sh"
need_lib rel.streams
oracle_tmpdir
P=$PROG/rprog_forkstorm
SC="python3 $REPO/tests/reliability/streamcheck.py"
d=$TMPD/streams
mkdir -p "$d"
run_t rel.streams.base 60 "$P" busy 2 3 >"$d/base.out" 2>/dev/null || exit 0
BRC=$RC

# privdev NAME CMD...: CMD with a /dev of its own (a tmpfs holding the real
# null, zero, urandom, tty and the fd links); its entries before and after
# in $d/NAME.before and .after.
cat >"$d/privdev.sh" <<'EOF'
d=$1 name=$2
shift 2
if [ -z "$SAME_DEV" ]; then
	mount --make-rprivate / || exit 125
	mkdir -p "$d/realdev.$name" || exit 125
	mount --bind /dev "$d/realdev.$name" || exit 125
	mount -t tmpfs -o size=16m,mode=755 heapprof-test-dev /dev || exit 125
	for n in null zero full random urandom tty; do
		[ -e "$d/realdev.$name/$n" ] || continue
		: >"/dev/$n" && mount --bind "$d/realdev.$name/$n" "/dev/$n" || exit 125
	done
	umount -l "$d/realdev.$name"
	ln -s /proc/self/fd /dev/fd
	ln -s /proc/self/fd/0 /dev/stdin
	ln -s /proc/self/fd/1 /dev/stdout
	ln -s /proc/self/fd/2 /dev/stderr
fi
find /dev -maxdepth 1 -printf '%y %p\n' | sort >"$d/$name.before"
"$@"
rc=$?
find /dev -maxdepth 1 -printf '%y %p\n' | sort >"$d/$name.after"
exit $rc
EOF
if unshare -m true 2>/dev/null; then
	PRIVDEV="unshare -m sh $d/privdev.sh $d"
elif [ "$(id -u)" != 0 ]; then
	PRIVDEV="env SAME_DEV=1 sh $d/privdev.sh $d"
else
	PRIVDEV=
fi

# same_dev NAME: /dev's entries and their types unchanged
same_dev() {
	if [ -s "$d/$1.before" ] && cmp -s "$d/$1.before" "$d/$1.after"; then
		return 0
	fi
	echo "new in /dev: $(diff "$d/$1.before" "$d/$1.after" 2>&1 | grep '^>' | head -5 | tr '\n' ' ')"
	return 1
}

# members NAME FILE MIN: FILE is >= MIN whole profiles, each decodes.
members() {
	mkdir -p "$d/$1.split"
	_k=$($SC split "$2" "$d/$1.split/m" 2>"$d/$1.split.err") || {
		echo "not whole profiles: $(head -c 200 "$d/$1.split.err")"; return 1; }
	if [ "$_k" -lt "$3" ]; then
		echo "$_k profiles, expected >= $3"
		return 1
	fi
	for _m in "$d/$1.split"/m.*.pb.gz; do
		if ! "$HEAPPROF" top "$_m" >/dev/null 2>"$d/$1.top.err"; then
			echo "$_m does not decode: $(head -c 200 "$d/$1.top.err")"
			return 1
		fi
	done
	return 0
}

if [ -z "$PRIVDEV" ]; then
	skip rel.streams.dev "root without a private mount namespace (unshare -m): the real /dev is left alone"
else
	# /dev/null, the library alone and through `heapprof run`
	for how in preload run; do
		n=devnull.$how
		if [ $how = preload ]; then
			set -- env HEAPPROF_RATE=1 HEAPPROF_INTERVAL=1 HEAPPROF_OUT=/dev/null \
				LD_PRELOAD="$LIB" "$P" busy 2 3
		else
			set -- "$HEAPPROF" run -r 1 -i 1 -o /dev/null -- "$P" busy 2 3
		fi
		run_t rel.streams.$n 120 $PRIVDEV $n "$@" >"$d/$n.out" 2>"$d/$n.err" || continue
		if [ $RC = 125 ]; then
			skip rel.streams.$n "the private /dev could not be set up: $(head -c 200 "$d/$n.err")"
		elif why=$(same_dev $n) && [ $RC = $BRC ] && cmp -s "$d/base.out" "$d/$n.out" &&
			! grep -q 'no profile was written' "$d/$n.err"; then
			pass rel.streams.$n
		else
			fail rel.streams.$n "status $RC (vs $BRC); $why; stdout $(head -c 100 "$d/$n.out"); $(head -c 300 "$d/$n.err")"
		fi
	done
	# /dev/stdout redirected to a file: the profiles land in it
	for how in preload run; do
		n=stdout.$how
		if [ $how = preload ]; then
			set -- env QUIET=1 HEAPPROF_RATE=1 HEAPPROF_INTERVAL=1 \
				HEAPPROF_OUT=/dev/stdout LD_PRELOAD="$LIB" "$P" busy 2 3
		else
			set -- env QUIET=1 "$HEAPPROF" run -r 1 -i 1 -o /dev/stdout -- "$P" busy 2 3
		fi
		run_t rel.streams.$n 120 $PRIVDEV $n "$@" >"$d/$n.bin" 2>"$d/$n.err" || continue
		if [ $RC = 125 ]; then
			skip rel.streams.$n "the private /dev could not be set up: $(head -c 200 "$d/$n.err")"
		elif why=$(same_dev $n) && [ $RC = $BRC ] && why=$(members $n "$d/$n.bin" 5); then
			pass rel.streams.$n
		else
			fail rel.streams.$n "status $RC (vs $BRC); $why; $(head -c 300 "$d/$n.err")"
		fi
	done
fi

# 8 children writing their (large) exit profiles at the same moment, to
# /dev/stdout redirected to a file: 9 whole profiles
if [ -n "$PRIVDEV" ]; then
	n=stdout.concurrent
	if run_t rel.streams.$n 120 $PRIVDEV $n env QUIET=1 HEAPPROF_RATE=1 \
		HEAPPROF_OUT=/dev/stdout LD_PRELOAD="$LIB" "$P" burst 8 >"$d/$n.bin" 2>"$d/$n.err"; then
		why=
		if [ $RC = 125 ]; then
			skip rel.streams.$n "the private /dev could not be set up: $(head -c 200 "$d/$n.err")"
		elif [ $RC = 0 ] && why=$(same_dev $n) && why=$(members $n "$d/$n.bin" 9); then
			pass rel.streams.$n
		else
			fail rel.streams.$n "status $RC; $why; $(head -c 300 "$d/$n.err")"
		fi
	fi
fi

# /dev/stdout, a pipe whose reader has gone (`| head`): the dump fails
# (EPIPE, one warning), the program is not killed by SIGPIPE.
if [ -n "$PRIVDEV" ]; then
	n=stdout.epipe
	if run_t rel.streams.$n 60 $PRIVDEV $n $SC nopipe env QUIET=1 HEAPPROF_RATE=1 \
		HEAPPROF_OUT=/dev/stdout LD_PRELOAD="$LIB" "$P" wide 2000 2>"$d/$n.err"; then
		why=
		if [ $RC = 125 ]; then
			skip rel.streams.$n "the private /dev could not be set up: $(head -c 200 "$d/$n.err")"
		elif [ $RC = 0 ] && why=$(same_dev $n); then
			pass rel.streams.$n
		else
			fail rel.streams.$n "status $RC (0 without the profiler); $why; $(head -c 300 "$d/$n.err")"
		fi
	fi
fi

# The CLI's own output (-o) names a stream too: /dev/null stays the
# device, /dev/stdout redirected to a file gets the profile.
if [ -n "$PRIVDEV" ] && run_t rel.streams.cli.prep 60 env HEAPPROF_RATE=1 \
	HEAPPROF_OUT="$d/one.pb.gz" LD_PRELOAD="$LIB" "$P" loop 0 >/dev/null 2>&1; then
	for o in null stdout; do
		n=cli.$o
		run_t rel.streams.$n 60 $PRIVDEV $n "$HEAPPROF" convert "$d/one.pb.gz" --to pprof \
			-o /dev/$o >"$d/$n.bin" 2>"$d/$n.err" || continue
		why=
		if [ $RC = 125 ]; then
			skip rel.streams.$n "the private /dev could not be set up: $(head -c 200 "$d/$n.err")"
		elif [ $RC = 0 ] && why=$(same_dev $n) &&
			{ [ $o = null ] || why=$(members $n "$d/$n.bin" 1); }; then
			pass rel.streams.$n
		else
			fail rel.streams.$n "status $RC; $why; $(head -c 300 "$d/$n.err")"
		fi
	done
fi

# A FIFO: `heapprof top` reads one large profile from it; and a slow
# reader (a one-page buffer) gets it whole
mkfifo "$d/f1" "$d/f2"
timeout -k 5 60 "$HEAPPROF" top "$d/f1" >"$d/f1.top" 2>"$d/f1.toperr" &
rd=$!
timeout -k 5 60 $SC slowcat "$d/f2" "$d/f2.bin" 2>"$d/f2.caterr" &
rd2=$!
for f in f1 f2; do
	if run_t rel.streams.fifo.$f 60 $SC hold "$d/$f" env HEAPPROF_RATE=1 \
		HEAPPROF_OUT="$d/$f" LD_PRELOAD="$LIB" "$P" wide 20000 >/dev/null 2>"$d/$f.err"; then
		if [ $f = f1 ]; then
			wait $rd
			trc=$?
		else
			wait $rd2
			"$HEAPPROF" top "$d/f2.bin" >"$d/f2.top" 2>"$d/f2.toperr"
			trc=$?
		fi
		n=top
		[ $f = f2 ] && n=slow
		if [ $RC = 0 ] && [ $trc = 0 ] && grep -q parent_site "$d/$f.top" &&
			! grep -q 'cannot write' "$d/$f.err"; then
			pass rel.streams.fifo.$n
		else
			fail rel.streams.fifo.$n "program $RC, heapprof top $trc: $(head -c 200 "$d/$f.toperr") $(head -c 200 "$d/$f.err")"
		fi
	fi
done
kill $rd $rd2 2>/dev/null
wait

# A FIFO read by a reader while periodic dumps and children write to it;
# and 8 children writing at the same moment (concurrent)
for how in preload run concurrent; do
	n=fifo.$how
	mkdir -p "$d/$n"
	f=$d/$n/fifo
	mkfifo "$f"
	timeout -k 5 120 cat "$f" >"$d/$n.bin" &
	rd=$!
	want=5
	if [ $how = preload ]; then
		set -- env HEAPPROF_RATE=1 HEAPPROF_INTERVAL=1 HEAPPROF_OUT="$f" \
			LD_PRELOAD="$LIB" "$P" busy 2 3
	elif [ $how = concurrent ]; then
		want=9
		set -- env HEAPPROF_RATE=1 HEAPPROF_OUT="$f" LD_PRELOAD="$LIB" "$P" burst 8
	else
		set -- "$HEAPPROF" run -r 1 -i 1 -o "$f" -- "$P" busy 2 3
	fi
	if ! run_t rel.streams.$n 120 $SC hold "$f" "$@" >"$d/$n.out" 2>"$d/$n.err"; then
		kill $rd 2>/dev/null
		wait $rd
		continue
	fi
	wait $rd
	others=$(ls "$d/$n" | grep -v '^fifo$' | tr '\n' ' ')
	why=
	if [ $RC = $BRC ] && { [ $how = concurrent ] || cmp -s "$d/base.out" "$d/$n.out"; } &&
		[ -z "$others" ] && why=$(members $n "$d/$n.bin" $want); then
		pass rel.streams.$n
	else
		fail rel.streams.$n "status $RC (vs $BRC); files beside the FIFO: $others; $why; $(head -c 300 "$d/$n.err")"
	fi
done
