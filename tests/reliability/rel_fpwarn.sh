#!/bin/sh
# --unwind fp (HEAPPROF_UNWIND=fp) on a program built without frame
# pointers (issue 14 f): one warning, from the program's call-frame
# information, on C and C++ programs built -O2 without frame pointers;
# none on programs built with
# -fno-omit-frame-pointer (whose libc and libstdc++ have none), none with
# the default unwinder.
. "$(dirname "$0")/lib.sh"
need_lib rel.fpwarn
oracle_tmpdir
MSG='HEAPPROF_UNWIND=fp: the program is built without frame pointers'
# nwarn UNWIND CMD...: the number of warning lines.
nwarn() {
	_u=$1; shift
	timeout 120 env HEAPPROF_RATE=1 HEAPPROF_UNWIND="$_u" HEAPPROF_OUT="$TMPD/p.%p.pb.gz" \
		LD_PRELOAD="$LIB" "$@" 2>&1 >/dev/null | grep -c "$MSG"
}
check() { # NAME EXPECTED UNWIND CMD...
	_n=$1 _e=$2; shift 2
	_g=$(nwarn "$@")
	[ "$_g" -eq "$_e" ] && pass "$_n" || fail "$_n" "$_g warnings, expected $_e: $*"
}
check rel.fpwarn.c_nofp 1 fp "$PROG/rprog_unwind" chain 100
check rel.fpwarn.cxx_nofp 1 fp "$PROG/rprog_unwindxx" 100
check rel.fpwarn.c_fp 0 fp "$PROG/prog_pattern"
check rel.fpwarn.cxx_fp 0 fp "$PROG/rprog_cxx"
check rel.fpwarn.threads_fp 0 fp "$PROG/prog_threads"
check rel.fpwarn.dwarf 0 dwarf "$PROG/rprog_unwind" chain 100
exit $FAILED
