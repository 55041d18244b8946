#!/bin/sh
# Profile files without a usable /proc/self (a chroot or sandbox without
# /proc, or a /proc of another PID namespace, as `unshare -pf --mount-proc`
# leaves its own parent): the unnamed file's link through /proc/self/fd
# cannot be made, and the dump must not be lost (it was: 'cannot write
# profile ...: No such file or directory', no file). Run in a private
# mount namespace with an empty tmpfs over /proc.
. "$(dirname "$0")/lib.sh"
need_lib rel.noproc
oracle_tmpdir
d=$TMPD/noproc; mkdir -p "$d"
if unshare -m sh -c 'mount -t tmpfs -o size=64k tmpfs /proc' 2>/dev/null; then
	run_t rel.noproc.profile_written 60 unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs /proc &&
		exec env HEAPPROF_RATE=1 HEAPPROF_OUT=$d/p.pb.gz LD_PRELOAD=$LIB $PROG/prog_pattern" \
		>"$d/out" 2>"$d/err"
	if [ $RC -eq 0 ] && [ -s "$d/p.pb.gz" ] && ! ls "$d"/*.tmp.* >/dev/null 2>&1; then
		parses rel.noproc.profile_written "$d/p.pb.gz"
	else
		fail rel.noproc.profile_written "status $RC, files: $(ls "$d" | tr '\n' ' ') $(head -c 300 "$d/err")"
	fi
else
	skip rel.noproc.profile_written "cannot mount over /proc in a private mount namespace"
fi
exit $FAILED
