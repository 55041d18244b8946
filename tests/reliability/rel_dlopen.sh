#!/bin/sh
# The profiler loaded after start-up (plan T12): a program that dlopens
# libheapprof.so (python3's ctypes, RTLD_LOCAL then RTLD_GLOBAL) keeps
# working: its malloc stays glibc's (the library is after libc in every
# lookup scope, so it interposes nothing and frees nothing it did not
# allocate), the API answers, and a dump through it parses.
. "$(dirname "$0")/../integration/lib.sh"
need_lib rel_dlopen
need_go rel_dlopen
oracle_tmpdir
for mode in RTLD_LOCAL RTLD_GLOBAL; do
	out=$(timeout 120 python3 - "$LIB" "$TMPD/$mode.pb.gz" "$mode" 2>&1 <<'PY'
import ctypes, os, sys
lib = ctypes.CDLL(sys.argv[1], mode=getattr(os, sys.argv[3]))
data = [str(i) * 20 for i in range(200000)]      # allocate and free after loading
del data
print("active", lib.heapprof_active())
print("dump", lib.heapprof_dump_file(sys.argv[2].encode()))
lib.heapprof_strerror.restype = ctypes.c_char_p
print("strerror", lib.heapprof_strerror(-4001).decode())
print("done")
PY
)
	if echo "$out" | grep -q '^dump 0$' && echo "$out" | grep -q '^done$' &&
		echo "$out" | grep -q '^active 0$' &&
		echo "$out" | grep -q '^strerror truncated input$' &&
		go tool pprof -raw -symbolize=none "$TMPD/$mode.pb.gz" >/dev/null 2>&1; then
		pass "rel.dlopen.$mode"
	else
		fail "rel.dlopen.$mode" "$(echo "$out" | tail -5 | tr '\n' '|')"
	fi
done

# The bootstrap race: loaded (20 times, RTLD_LOCAL and RTLD_GLOBAL in
# turn) while 4 threads churn cookie-checked blocks, dumps every second.
# heapprof_active() says 0: nothing reaches the library's malloc (it said
# 1 before, while the profile stayed empty).
P=$(dirname "$LIB")/tests
out=$(timeout 120 env HEAPPROF_INTERVAL=1 "$P/rprog_dlboot" "$LIB" "$TMPD/boot.pb.gz" 20 2>&1)
if [ "$out" = "ok dlboot 0 0" ] && go tool pprof -raw -symbolize=none "$TMPD/boot.pb.gz" >/dev/null 2>&1; then
	pass rel.dlopen.threaded_bootstrap
else
	fail rel.dlopen.threaded_bootstrap "$(echo "$out" | tail -3 | tr '\n' '|')"
fi
# Preloaded too, the same program and API: active 1.
out=$(timeout 120 env LD_PRELOAD="$LIB" "$P/rprog_dlboot" "$LIB" "$TMPD/boot2.pb.gz" 4 2>&1)
if [ "$out" = "ok dlboot 1 0" ]; then pass rel.dlopen.preloaded_active
else fail rel.dlopen.preloaded_active "$(echo "$out" | tail -3 | tr '\n' '|')"; fi
exit $FAILED
