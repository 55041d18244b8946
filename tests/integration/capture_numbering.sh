#!/bin/sh
# No profile file overwrites another (issue 30, item 4): a process that may
# write several files gets ".%n" inserted into a template without one, for
# --dump-growth and --dump-limit as for -i and -s. Before, the growth and
# limit files were overwritten by the exit profile when -o had no %n: one
# file was left, the exit one.
#   numbering.growth.run      heapprof run --dump-growth 4m -o out.pb.gz
#   numbering.growth.env      the same through HEAPPROF_DUMP_GROWTH
#   numbering.limit.run       heapprof run --dump-limit 0.5 under ulimit -v
# Each: several numbered files, the growth ones with more in use each, the
# last (the exit profile) as large as any, and no file named out.pb.gz.
. "$(dirname "$0")/lib.sh"
need_lib numbering
need_go numbering
oracle_tmpdir
PEAKSUM="python3 $REPO/tests/integration/peaksum.py"
MB=1048576

inuse() { $PEAKSUM "$1" | awk '$1 == "total" && $2 == "inuse_space" { print $3 }'; }

# check NAME DIR: files DIR/out.N.pb.gz, N from 0, at least 3, in use never
# falling, and no unnumbered out.pb.gz.
check() {
	_n=$(ls "$2"/out.*.pb.gz 2>/dev/null | wc -l)
	if [ -e "$2/out.pb.gz" ]; then
		fail "$1" "an unnumbered out.pb.gz was written: $(ls "$2")"
		return
	fi
	if [ "$_n" -lt 3 ]; then
		fail "$1" "$_n numbered files: $(ls "$2")"
		return
	fi
	_i=0 _prev=0 _vals=
	while [ $_i -lt "$_n" ]; do
		_v=$(inuse "$2/out.$_i.pb.gz")
		_vals="$_vals $_v"
		if [ -z "$_v" ] || [ "$_v" -lt "$_prev" ]; then
			fail "$1" "file $_i: in use$_vals"
			return
		fi
		_prev=$_v
		_i=$((_i + 1))
	done
	pass "$1"
}

mkdir -p "$TMPD/run" "$TMPD/env" "$TMPD/lim"
"$HEAPPROF" run -r 64k --dump-growth 4m -o "$TMPD/run/out.pb.gz" -- \
	"$PROG/prog_grow" 15 >"$TMPD/run.out" 2>&1
check numbering.growth.run "$TMPD/run"

HEAPPROF_RATE=65536 HEAPPROF_DUMP_GROWTH=4m HEAPPROF_OUT="$TMPD/env/out.pb.gz" \
	LD_PRELOAD="$LIB" "$PROG/prog_grow" 15 >"$TMPD/env.out" 2>&1
check numbering.growth.env "$TMPD/env"

# The limit file (at half of 400 MB), numbered: prog_grow then grows until
# the kernel refuses and kills itself (SIGKILL, so no exit file).
(
	ulimit -v 400000 2>/dev/null || exit 99
	exec "$HEAPPROF" run --dump-limit 0.5 -o "$TMPD/lim/out.pb.gz" -- \
		"$PROG/prog_grow" limit
) >"$TMPD/lim.out" 2>"$TMPD/lim.err"
rc=$?
if [ $rc = 99 ]; then
	skip numbering.limit.run "ulimit -v not settable here"
else
	v=$(inuse "$TMPD/lim/out.0.pb.gz" 2>/dev/null)
	if [ -e "$TMPD/lim/out.pb.gz" ]; then
		fail numbering.limit.run "an unnumbered out.pb.gz: $(ls "$TMPD/lim")"
	elif [ -n "$v" ] && [ "$v" -ge $((195 * MB)) ] && [ "$v" -le $((215 * MB)) ]; then
		pass numbering.limit.run
	else
		fail numbering.limit.run "limit file in use '$v'; files: $(ls "$TMPD/lim"); $(head -3 "$TMPD/lim.err")"
	fi
fi
exit 0
