# lib.sh: shell helpers for oracle tests; source it from a test script:
#   . "$(dirname "$0")/lib.sh"
# Sets REPO, CORPUS (${HEAPPROF_CORPUS:-$REPO/../shared/corpus}), HEAPPROF
# (the CLI) and PPROFCHECK (the Go helper, built once under build/). Helpers:
#   oracle_need_corpus NAME     prints "SKIP NAME: ..." and exits 0 if absent
#   oracle_need_go NAME         same if go or the pprof sources are missing;
#                               builds build/pprofcheck if it is out of date
#   oracle_need_heapprof NAME   same if build/heapprof is missing
#   oracle_tmpdir               sets TMPD (removed on exit)
#   pass NAME / fail NAME [why] print PASS/FAIL lines (fail sets FAILED=1)
#   same_output NAME A B        PASS if files A and B are equal, else FAIL
#                               with the first lines of the diff on stderr
REPO=$(cd "$(dirname "$0")/../.." && pwd)
CORPUS=${HEAPPROF_CORPUS:-$REPO/../shared/corpus}
HEAPPROF=$REPO/build/heapprof
PPROFCHECK=$REPO/build/pprofcheck
PPROF_SRC=/usr/share/gocode/src/github.com/google/pprof
FAILED=0

pass() { echo "PASS $1"; }
fail() {
	echo "FAIL $1"
	[ -n "$2" ] && echo "  $1: $2" >&2
	FAILED=1
}
skip() { echo "SKIP $1: $2"; }

oracle_need_corpus() {
	if [ ! -d "$CORPUS" ]; then
		skip "$1" "corpus not found at $CORPUS (set HEAPPROF_CORPUS)"
		exit 0
	fi
}

oracle_need_heapprof() {
	if [ ! -x "$HEAPPROF" ]; then
		skip "$1" "$HEAPPROF not built (run make)"
		exit 0
	fi
}

# Builds build/pprofcheck (GOPATH mode against Debian's pprof sources,
# offline). Returns non-zero with a reason on stdout if it cannot.
oracle_build_pprofcheck() {
	src=$REPO/tests/oracle/pprofcheck/main.go
	if [ -x "$PPROFCHECK" ] && [ "$PPROFCHECK" -nt "$src" ]; then
		return 0
	fi
	if ! command -v go >/dev/null 2>&1; then
		echo "go not installed (apt-get install golang-go)"
		return 1
	fi
	if [ ! -d "$PPROF_SRC/profile" ]; then
		echo "pprof sources missing (apt-get install golang-github-google-pprof-dev)"
		return 1
	fi
	mkdir -p "$REPO/build/gocache"
	# Build to a temporary name and rename, so concurrent tests never run
	# a half-written binary.
	tmp=$PPROFCHECK.tmp.$$
	if ! (cd "$REPO/tests/oracle/pprofcheck" && GO111MODULE=off \
		GOPATH=/usr/share/gocode GOFLAGS= GOPROXY=off \
		GOCACHE="$REPO/build/gocache" go build -o "$tmp" .) >&2; then
		rm -f "$tmp"
		echo "building pprofcheck failed"
		return 1
	fi
	mv -f "$tmp" "$PPROFCHECK"
}

oracle_need_go() {
	why=$(oracle_build_pprofcheck) || {
		skip "$1" "$why"
		exit 0
	}
}

oracle_tmpdir() {
	TMPD=$(mktemp -d)
	trap 'rm -rf "$TMPD"' EXIT
}

same_output() {
	if cmp -s "$2" "$3"; then
		pass "$1"
	else
		fail "$1" "outputs differ"
		diff "$2" "$3" | head -20 >&2
	fi
}
