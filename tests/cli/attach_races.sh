#!/bin/sh
# tests/cli/attach_races.sh: heapprof attach (issue 32) where a ptrace
# injector and the loader meet: a thread that blocks every signal (the
# program's SIGSEGV handler and mask unchanged), errno of the interrupted
# thread, a thread on a small signal stack, an object dlopen'd while
# another thread samples (its free routed before a sampled block reaches
# it), an executable that is its own allocator, a routed plugin unloaded
# before the detach, a block sampled before a dlopen freed by the new
# object (bound at the dlopen or lazily), an object loaded after the
# detach. Programs: attach_races_target.c (modes),
# attach_races_own.c.
# Prints PASS name / FAIL name / SKIP name: why.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HEAPPROF=$REPO/build/heapprof
FAILED=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; [ -n "$2" ] && echo "  $1: $2" >&2; FAILED=1; }
T=$(mktemp -d)
TPID=
cleanup() { [ -n "$TPID" ] && kill -9 "$TPID" 2>/dev/null; rm -rf "$T"; }
trap cleanup EXIT
cd "$T" || exit 2
cc -O1 -g -o target "$REPO/tests/cli/attach_races_target.c" -ldl -lpthread ||
	{ fail attach_races.build; exit 1; }

trap '' PIPE # a target that died: its FIFO's writes fail, the script goes on
# waitfor FILE PATTERN: until FILE has a line matching (30 s, or the
# target's end)
waitfor() {
	_n=0
	until grep -q "$2" "$1" 2>/dev/null; do
		_n=$((_n + 1))
		[ $_n -gt 3000 ] && return 1
		[ -n "$TPID" ] && ! kill -0 "$TPID" 2>/dev/null && return 1
		sleep 0.01
	done
}
# start NAME CMD...: CMD reading the FIFO NAME.in, stdout NAME.out, until
# its "ready"
start() {
	_nm=$1; shift
	rm -f "$_nm.in"; mkfifo "$_nm.in"
	"$@" <"$_nm.in" >"$_nm.out" 2>"$_nm.err" &
	TPID=$!
	exec 5>"$_nm.in"
	waitfor "$_nm.out" '^ready'
}
# finish: "quit", then the program's status
finish() { echo quit >&5 2>/dev/null; exec 5>&-; wait "$TPID"; _rc=$?; TPID=; return $_rc; }
# attach_for NAME SECONDS [OPTS]: an attach of SECONDS, its messages in
# NAME.attach; its status
attach_for() {
	_nm=$1 _s=$2; shift 2
	timeout 60 "$HEAPPROF" attach -d "$_s" "$@" -o "$T/$_nm.pb.gz" "$TPID" 2>"$_nm.attach"
}

# ---- the remote call's SIGSEGV (its return to address 0) met a thread
# that blocks it: the kernel made SIGSEGV SIG_DFL for the whole process
# (the program's handler lost) and unblocked it
start sig ./target sigmask
attach_for sig 0.1; arc=$?
finish; trc=$?
if [ $arc -eq 0 ] && [ $trc -eq 0 ] && grep -q '^end handler kept, mask kept' sig.out
then pass attach_races.sigsegv_handler_kept
else fail attach_races.sigsegv_handler_kept "attach $arc, target $trc: $(cat sig.out sig.attach | tail -3)"; fi

# ---- errno of the thread the calls ran on, as it was
start err ./target errno
attach_for err 0.1; arc=$?
finish; trc=$?
if [ $arc -eq 0 ] && [ $trc -eq 0 ] && grep -q '^end errno kept' err.out
then pass attach_races.errno_kept
else fail attach_races.errno_kept "attach $arc, target $trc: $(cat err.out err.attach | tail -3)"; fi

# ---- a thread in nanosleep: the remote calls interrupt it, and it goes
# on sleeping for the time left (no EINTR, no time lost or added)
start slp ./target sleep
attach_for slp 0.2; arc=$?
waitfor slp.out '^end'
finish; trc=$?
if [ $arc -eq 0 ] && [ $trc -eq 0 ] && grep -q '^end sleep ok' slp.out
then pass attach_races.nanosleep_restarted
else fail attach_races.nanosleep_restarted "attach $arc, target $trc: $(cat slp.out slp.attach | tail -3)"; fi

# ---- the thread stopped spins in a handler on a 16 KB signal stack with
# a guard page below: the dump at the detach overflowed it (SIGSEGV)
start alt ./target altstack
attach_for alt 0.1; arc=$?
finish; trc=$?
if [ $arc -eq 0 ] && [ $trc -eq 0 ] && grep -q '^end altstack' alt.out
then pass attach_races.small_signal_stack
else fail attach_races.small_signal_stack "attach $arc, target $trc: $(cat alt.out alt.attach | tail -3)"; fi

# ---- dlopen while another thread samples at rate 1: a plugin with 100 k
# relocations (its loading takes tens of ms) is dlopen'd 20 times, and
# each time a block just sampled is freed by the plugin's own GOT entry
# for free. A scan that met the plugin mid-relocation skipped it and was
# never repeated: glibc's free got the block ("free(): invalid pointer")
fns="strlen strcpy strcat strcmp strncmp strchr strrchr strstr memcpy memmove
memset memcmp memchr atoi atol strtol strtoul qsort bsearch abs labs rand
srand getenv puts fputs fgets fopen fclose fread fwrite fflush printf
sprintf snprintf read write close getpid isatty"
{
	printf '#include <stdlib.h>\n#include <string.h>\n#include <stdio.h>\n#include <unistd.h>\n'
	printf 'void pfree(void *p) { free(p); }\nvoid *const tab[] = {\n'
	i=0
	while [ $i -lt 2500 ]; do
		for f in $fns; do printf '(void *)%s,' "$f"; done
		echo
		i=$((i + 1))
	done
	echo '};'
} >plug.c
cc -shared -fPIC -O0 -o plug.so plug.c || fail attach_races.build_plugin
start dl ./target dlrace "$T/plug.so" 20
timeout 120 "$HEAPPROF" attach -r 1 -d 100 -o "$T/dl.pb.gz" "$TPID" 2>dl.attach &
APID=$!
waitfor dl.attach 'attached to'
echo go >&5 2>/dev/null
waitfor dl.out '^end'
kill -INT $APID 2>/dev/null; wait $APID; arc=$?
finish; trc=$?
if [ $arc -eq 0 ] && [ $trc -eq 0 ] && grep -q '^end dlrace 20' dl.out
then pass attach_races.dlopen_mid_scan
else fail attach_races.dlopen_mid_scan "attach $arc, target $trc: $(cat dl.out dl.err dl.attach | tail -4)"; fi

# ---- a routed plugin unloaded before the detach, its pages mapped again
# inaccessible: the detach's restore made them read-write (it took a
# successful mprotect for "the object is still there")
printf '#include <stdlib.h>\nvoid *pmalloc(size_t n) { return malloc(n); }\n' >pm.c
cc -shared -fPIC -O1 -o pm.so pm.c || fail attach_races.build_pm
start un ./target unload "$T/pm.so"
timeout 60 "$HEAPPROF" attach -r 1 -d 100 -o "$T/un.pb.gz" "$TPID" 2>un.attach &
APID=$!
waitfor un.attach 'attached to'
echo go >&5
waitfor un.out '^swapped'
kill -INT $APID 2>/dev/null; wait $APID; arc=$?
echo check >&5
finish; trc=$?
if [ $arc -eq 0 ] && [ $trc -eq 0 ] && grep -q '^swapped [1-9]' un.out && grep -q '^end unload kept' un.out
then pass attach_races.unloaded_pages_kept
else fail attach_races.unloaded_pages_kept "attach $arc, target $trc: $(cat un.out un.err un.attach | tail -4)"; fi

# ---- a plugin whose PT_GNU_RELRO ends inside a page (the loader
# protects its whole pages only: the rest of that page, the lazy GOT and
# .data, stays writable): routing its malloc entry there made the page
# read-only (the RELRO's end was rounded up), and the plugin's next write
# or lazy binding faulted
cat >rr.c <<'C'
#include <stdlib.h>
void *pmalloc(size_t n) { return malloc(n); }
int data[4];
int later(const char *s) { data[0] = atoi(s); return data[0]; }
C
cc -shared -fPIC -O1 -o rr.so rr.c || fail attach_races.build_rr
python3 - rr.so <<'PY'
import struct, sys
f = open(sys.argv[1], "r+b"); b = bytearray(f.read())
phoff, = struct.unpack_from("<Q", b, 0x20); phnum, = struct.unpack_from("<H", b, 0x38)
for i in range(phnum):
    o = phoff + 56 * i
    if struct.unpack_from("<I", b, o)[0] == 0x6474e552:  # PT_GNU_RELRO
        va, = struct.unpack_from("<Q", b, o + 16)
        fs, ms = struct.unpack_from("<QQ", b, o + 32)
        assert (va + ms) % 4096 == 0, "RELRO end already inside a page"
        struct.pack_into("<QQ", b, o + 32, fs + 0x20, ms + 0x20)
f.seek(0); f.write(b)
PY
start rr ./target relro "$T/rr.so"
timeout 60 "$HEAPPROF" attach -r 1 -d 100 -o "$T/rr.pb.gz" "$TPID" 2>rr.attach &
APID=$!
waitfor rr.attach 'attached to'
echo go >&5
waitfor rr.out '^end'
kill -INT $APID 2>/dev/null; wait $APID; arc=$?
finish; trc=$?
if [ $arc -eq 0 ] && [ $trc -eq 0 ] && grep -q '^end relro 42' rr.out
then pass attach_races.relro_partial_page
else fail attach_races.relro_partial_page "attach $arc, target $trc: $(cat rr.out rr.err rr.attach | tail -4)"; fi

# ---- an executable that is its own allocator, its main thread inside
# malloc: the stop took it for a safe point (only libraries named *malloc*
# were allocators), and the loader's allocations re-entered the program's
# malloc on that thread (status 3)
cc -O1 -o own "$REPO/tests/cli/attach_races_own.c" -lpthread || fail attach_races.build_own
start own ./own
attach_for own 0.1; arc=$?
finish; trc=$?
if [ $arc -eq 0 ] && [ $trc -eq 0 ] && grep -q '^end own' own.out
then pass attach_races.own_allocator
else fail attach_races.own_allocator "attach $arc, target $trc: $(cat own.out own.err own.attach | tail -3)"; fi

# ---- a block sampled before a dlopen, freed by the new object before
# any sample after it: the object's GOT was routed by the first sample
# after its load, so its free was glibc's ("free(): invalid pointer",
# status 134). RTLD_NOW binds free at the dlopen, RTLD_LAZY at that first
# call (_dl_fixup); both now find ours (attach_symval.c). 20 runs each;
# the block counted as allocated and freed (site_handoff 1 4242 0 0)
PROFSUM="python3 $REPO/tests/integration/profsum.py"
printf '#include <stdlib.h>\nvoid pfree(void *p) { free(p); }\nvoid *pmalloc(size_t n) { return malloc(n); }\nvoid *pmallocfn(void) { return (void *)malloc; }\n' >pf.c
cc -shared -fPIC -O1 -o pf.so pf.c || fail attach_races.build_pf
echo 'EXPECT site_handoff 1 4242 0 0' >ho.exp
for how in now lazy; do
	bad=
	i=0
	while [ $i -lt 20 ]; do
		i=$((i + 1))
		rm -f ho.attach ho.out "$T/ho.pb.gz" # no line of the last run seen
		start ho ./target handoff "$T/pf.so" $how
		timeout 60 "$HEAPPROF" attach -r 1 -d 100 -o "$T/ho.pb.gz" "$TPID" 2>ho.attach &
		APID=$!
		waitfor ho.attach 'attached to'
		echo go >&5 2>/dev/null
		waitfor ho.out '^end'
		kill -INT $APID 2>/dev/null; wait $APID; arc=$?
		finish; trc=$?
		if [ $arc -ne 0 ] || [ $trc -ne 0 ] || ! grep -q '^end handoff' ho.out; then
			bad="run $i: attach $arc, target $trc: $(cat ho.out ho.err ho.attach | tail -3)"
			break
		fi
		if ! $PROFSUM check attach_races.handoff_$how.run$i ho.exp 0 "$T/ho.pb.gz" >ho.sum; then
			bad="run $i: $(grep FAIL ho.sum | head -2)"
			break
		fi
	done
	if [ -z "$bad" ]; then pass attach_races.handoff_$how
	else fail attach_races.handoff_$how "$bad"; fi
done

# ---- after the detach: a block sampled while attached, freed by a
# plugin dlopen'd after the detach (its free bound to glibc's: status 134
# before), that plugin's malloc and free usable, and the loader's malloc
# the program's again (dlsym(RTLD_DEFAULT), the plugin's GOT)
start ad ./target afterdetach "$T/pf.so"
timeout 60 "$HEAPPROF" attach -r 1 -d 100 -o "$T/ad.pb.gz" "$TPID" 2>ad.attach &
APID=$!
waitfor ad.attach 'attached to'
echo go >&5
waitfor ad.out '^sampled'
kill -INT $APID 2>/dev/null; wait $APID; arc=$?
echo check >&5 2>/dev/null
waitfor ad.out '^end'
finish; trc=$?
echo 'EXPECT site_window 1 777 1 777' >ad.exp
if [ $arc -eq 0 ] && [ $trc -eq 0 ] &&
   grep -q "^end afterdetach dlsym kept, plugin's malloc kept" ad.out &&
   $PROFSUM check attach_races.after_detach.profile ad.exp 0 "$T/ad.pb.gz" >ad.sum
then pass attach_races.after_detach
else fail attach_races.after_detach "attach $arc, target $trc: $(cat ad.out ad.err ad.attach ad.sum 2>/dev/null | tail -4)"; fi

exit $FAILED
