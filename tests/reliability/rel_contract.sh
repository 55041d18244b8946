#!/bin/sh
# Allocator contract under interposition (plan T1-T5, T7): rprog_contract
# and rprog_cxx print every result that libc makes visible (NULL or not,
# errno, alignment, contents kept, usable size); without the profiler, at
# rate 1 and at the default rate the output must be identical. At rate 1
# the C++ program's live objects are exact in the profile. Bootstrap:
# /bin/true and `env -i` under the preload.
. "$(dirname "$0")/lib.sh"
need_lib rel.contract
oracle_tmpdir

same3 rel.contract.c 60 "$PROG/rprog_contract"
if grep -q '^BAD ' "$TMPD/rel.contract.c/base" "$TMPD/rel.contract.c/rate1" 2>/dev/null; then
	fail rel.contract.c.invariants "$(grep -h '^BAD ' "$TMPD/rel.contract.c/"* | head -3)"
else
	pass rel.contract.c.invariants
fi
parses rel.contract.c.profile "$TMPD"/rel.contract.c/rate1.*.pb.gz

same3 rel.contract.cxx 60 "$PROG/rprog_cxx"
f=$(ls "$TMPD"/rel.contract.cxx/rate1.*.pb.gz 2>/dev/null | head -1)
if ! command -v go >/dev/null 2>&1; then
	skip_tool rel.contract.cxx.rate1 go golang-go
elif [ -n "$f" ]; then
	$PROFSUM check rel.contract.cxx.rate1 "$TMPD/rel.contract.cxx/rate1" 0 "$f" || FAILED=1
else
	fail rel.contract.cxx.rate1 "no profile written"
fi

# The contract with the dump thread busy (errno across dumps, plan T4):
# the signal handler and the dump thread run while the program checks
# (USR2 is ignored until the profiler installs its handler).
run_t rel.contract.dumping 60 env HEAPPROF_RATE=1 HEAPPROF_INTERVAL=1 \
	HEAPPROF_SIGNAL=USR2 HEAPPROF_OUT="$TMPD/dumping.%p.%n.pb.gz" LD_PRELOAD="$LIB" \
	sh -c 'trap "" USR2; "$1" & p=$!; i=0; while [ $i -lt 20 ] && kill -USR2 $p 2>/dev/null; do i=$((i+1)); done; wait $p' \
	sh "$PROG/rprog_contract" >"$TMPD/dumping.out" 2>&1
if [ "$RC" -eq 0 ] && cmp -s "$TMPD/dumping.out" "$TMPD/rel.contract.c/base"; then
	pass rel.contract.dumping
else
	fail rel.contract.dumping "rc $RC; $(diff "$TMPD/rel.contract.c/base" "$TMPD/dumping.out" | head -4 | tr '\n' ' ')"
fi

# Bootstrap (plan T7): trivial programs, an empty environment.
boot() { # name, command...
	_bn=$1; shift
	run_t "rel.bootstrap.$_bn" 10 "$@" || return
	if [ $RC -eq 0 ]; then pass "rel.bootstrap.$_bn"; else fail "rel.bootstrap.$_bn" "exit $RC"; fi
}
boot true env LD_PRELOAD="$LIB" HEAPPROF_EXIT=0 /bin/true
boot env_i env -i LD_PRELOAD="$LIB" /bin/true
boot env_i_rate1_sh env -i LD_PRELOAD="$LIB" HEAPPROF_RATE=1 HEAPPROF_EXIT=0 /bin/sh -c 'echo x | cat >/dev/null'
exit $FAILED
