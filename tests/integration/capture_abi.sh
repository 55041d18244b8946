#!/bin/sh
# The preload library's shape: it exports only the malloc family, the
# signal and _exit functions of src/collect/ending.c, pthread_getattr_np
# (interpose.c: a first sample inside it must not ask it again), dlclose
# (unload_hook.c: a plugin's sampled frames kept past its unloading), prctl,
# syscall, setrlimit and prlimit (sandbox.c: a seccomp filter going in, a
# limit the program sets, seen without a system call of ours), and the
# heapprof_ API; its thread state is initial-exec TLS (a TPOFF relocation,
# no __tls_get_addr, which may allocate); libunwind is not a link-time
# dependency (it is dlopen'ed RTLD_LOCAL, so its _Unwind_* symbols never
# replace libgcc's in the host), nor are libz (linked in, its symbols
# local) and libm; and the malloc/free fast paths set up no
# stack frame and end in jumps.
. "$(dirname "$0")/lib.sh"
need_lib capture_abi
if ! command -v readelf >/dev/null || ! command -v objdump >/dev/null; then
	skip_tool capture_abi "readelf or objdump" binutils
	exit 0
fi
allowed='^(malloc|free|calloc|realloc|reallocarray|posix_memalign|aligned_alloc|memalign|valloc|pvalloc|malloc_usable_size|sigaction|signal|bsd_signal|ssignal|sysv_signal|__sysv_signal|_exit|_Exit|pthread_getattr_np|dlclose|prctl|syscall|setrlimit|setrlimit64|prlimit|prlimit64|heapprof_[a-z_]+)$'
bad=$(nm -D --defined-only "$LIB" | awk '{print $3}' | grep -Ev "$allowed")
if [ -z "$bad" ]; then pass abi.exports; else fail abi.exports "unexpected exports: $bad"; fi
for f in malloc free calloc realloc posix_memalign aligned_alloc memalign valloc pvalloc malloc_usable_size reallocarray \
	sigaction signal _exit _Exit pthread_getattr_np dlclose; do
	nm -D --defined-only "$LIB" | awk '{print $3}' | grep -qx "$f" || { fail "abi.exports.$f" "missing"; }
done
if readelf -r "$LIB" | grep -q 'R_X86_64_TPOFF64' && ! readelf -r "$LIB" | grep -q 'DTPMOD64' &&
	! readelf -r "$LIB" | grep -q '__tls_get_addr'; then
	pass abi.initial_exec_tls
else
	fail abi.initial_exec_tls "$(readelf -r "$LIB" | grep -i 'tpoff\|dtpmod\|tls_get')"
fi
if readelf -d "$LIB" | grep NEEDED | grep -q unwind; then
	fail abi.no_libunwind_needed "libunwind is a NEEDED dependency"
else
	pass abi.no_libunwind_needed
fi
# zlib is linked in, its symbols local; libm is not used (hpmath.h): a
# dump never dlopens (the fork child of a threaded process hung in it)
# and the program's own libz.so.1 is the only one it sees.
needed=$(readelf -d "$LIB" | grep NEEDED | grep -E 'libz\.|libm\.')
zsyms=$(nm -D "$LIB" | awk '{print $NF}' | grep -E '^(deflate|inflate|crc32|adler32|zlibVersion|exp|round)(@|$)')
if [ -z "$needed$zsyms" ]; then
	pass abi.zlib_inside
else
	fail abi.zlib_inside "$needed $zsyms"
fi
for f in malloc free; do
	body=$(objdump -d --no-show-raw-insn "$LIB" | awk "/<$f>:/,/^\$/")
	if echo "$body" | grep -q 'push\|call'; then
		fail "abi.$f.fast_path_frameless" "$(echo "$body" | head -20)"
	else
		pass "abi.$f.fast_path_frameless"
	fi
done
exit $FAILED
