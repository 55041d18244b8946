# lib.sh: helpers for the capture integration tests (programs run under
# the profiler). Source after setting nothing; builds on tests/oracle/lib.sh
# (REPO, HEAPPROF, PPROFCHECK, pass/fail/skip, oracle_need_go, oracle_tmpdir).
#   LIB          build/libheapprof.so
#   PROG         directory of the test programs (build/tests)
#   PROFSUM      tests/integration/profsum.py
#   need_go NAME skip the script when go tool pprof is unavailable
. "$(dirname "$0")/../oracle/lib.sh"
LIB=$REPO/build/libheapprof.so
PROG=$REPO/build/tests
PROFSUM="python3 $REPO/tests/integration/profsum.py"
export GOCACHE=${GOCACHE:-$REPO/build/gocache}
mkdir -p "$GOCACHE"

need_go() {
	oracle_need_go "$1"
	if ! go tool pprof -h >/dev/null 2>&1; then
		skip_tool "$1" "go tool pprof" golang-go
		exit 0
	fi
}

need_lib() {
	if [ ! -f "$LIB" ]; then
		skip "$1" "$LIB not built"
		exit 0
	fi
}

# check_parses NAME FILE: the oracle reads the profile.
check_parses() {
	if go tool pprof -raw -symbolize=none "$2" >/dev/null 2>"$TMPD/parse.err"; then
		pass "$1"
	else
		fail "$1" "go tool pprof -raw rejects $2: $(head -3 "$TMPD/parse.err")"
	fi
}
