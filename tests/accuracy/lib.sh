# lib.sh: helpers for the accuracy suite (tests/accuracy/*.sh): real
# programs nobody here wrote, profiled at rate 1 against heaptrack's
# records and at the default rate against the program's own accounting.
# Builds on tests/integration/lib.sh (LIB, HEAPPROF, pass/fail, skip_tool,
# oracle_tmpdir).
#   TIER             fast (make test) or stress (REL_TIER=stress)
#   by_tier F S      F in the fast tier, S in the stress tier
#   ACC              tests/accuracy/acc.py (figures and comparisons)
#   need_tool NAME TOOL [PKG]   skip_tool and exit 0 if TOOL is missing
#   need_base NAME   the library, the CLI, python3, heaptrack and zstdcat
#   t_run NAME SECS CMD...      CMD with a timeout: RC; on a timeout FAIL
#                    NAME.hang and return 1
#   ht_file OUT      heaptrack's data file for `heaptrack -o OUT`
#   sum_prof PROFILE TYPE       that type's total over the profile's stacks
. "$(dirname "$0")/../integration/lib.sh"
TIER=${REL_TIER:-fast}
by_tier() { if [ "$TIER" = stress ]; then echo "$2"; else echo "$1"; fi; }
ACC="python3 $REPO/tests/accuracy/acc.py"
export HEAPPROF

need_tool() {
	if ! command -v "$2" >/dev/null 2>&1; then
		skip_tool "$1" "$2" "${3:-$2}"
		exit 0
	fi
}

need_base() {
	need_lib "$1"
	oracle_need_heapprof "$1"
	need_tool "$1" python3
	need_tool "$1" heaptrack
	need_tool "$1" zstdcat zstd
}

exec 3>&1 4>&2
t_run() {
	_n=$1 _s=$2; shift 2
	timeout -k 5 "$_s" "$@"
	RC=$?
	if [ $RC -eq 124 ] || [ $RC -eq 137 ]; then
		fail "$_n.hang" "no exit within ${_s}s: $*" >&3 2>&4
		return 1
	fi
	return 0
}

ht_file() {
	for _f in "$1.zst" "$1.gz" "$1"; do
		[ -f "$_f" ] && { echo "$_f"; return 0; }
	done
	return 1
}

sum_prof() {
	$ACC prof "$1" "$2" | awk -v t="$2" '{ for (i = 1; i < NF; i += 2) if ($i == t) print $(i + 1) }'
}

# A port free now (the kernel's choice), for --http.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# vs_heaptrack NAME SECS CMD...: CMD under heaptrack and under heapprof at
# rate 1 (stdout in $TMPD/NAME.ht.out, $TMPD/NAME.r1.out), compared
# (acc.py vsht); sets HT_TOTAL (heaptrack's total bytes). 1 on a failure.
vs_heaptrack() {
	_vn=$1 _vs=$2; shift 2
	t_run "$_vn.heaptrack" "$_vs" heaptrack -o "$TMPD/$_vn.ht" "$@" \
		>"$TMPD/$_vn.ht.out" 2>"$TMPD/$_vn.ht.err" || return 1
	_vf=$(ht_file "$TMPD/$_vn.ht") || { fail "$_vn.heaptrack" "no data file: $(tail -3 "$TMPD/$_vn.ht.err")"; return 1; }
	t_run "$_vn.rate1" "$_vs" env LD_PRELOAD="$LIB" HEAPPROF_RATE=1 \
		HEAPPROF_OUT="$TMPD/$_vn.r1.pb.gz" "$@" >"$TMPD/$_vn.r1.out" 2>"$TMPD/$_vn.r1.err" || return 1
	if [ $RC -ne 0 ] || [ ! -s "$TMPD/$_vn.r1.pb.gz" ]; then
		fail "$_vn.rate1" "exit $RC, no profile: $(tail -3 "$TMPD/$_vn.r1.err")"
		return 1
	fi
	HT_TOTAL=$($ACC ht "$_vf" | awk '{ print $4 }')
	$ACC vsht "$_vn.rate1" "$_vf" "$TMPD/$_vn.r1.pb.gz"
}

# default_runs NAME RUNS SECS CMD...: CMD RUNS times at the default rate;
# each exit profile in $TMPD/NAME.dI.pb.gz, stdout in $TMPD/NAME.dI.out.
default_runs() {
	_vn=$1 _vr=$2 _vs=$3; shift 3
	_vi=0
	while [ $_vi -lt "$_vr" ]; do
		_vi=$((_vi + 1))
		t_run "$_vn.default" "$_vs" env LD_PRELOAD="$LIB" HEAPPROF_OUT="$TMPD/$_vn.d$_vi.pb.gz" \
			"$@" >"$TMPD/$_vn.d$_vi.out" 2>"$TMPD/$_vn.d$_vi.err" || return 1
		if [ $RC -ne 0 ] || [ ! -s "$TMPD/$_vn.d$_vi.pb.gz" ]; then
			fail "$_vn.default" "run $_vi: exit $RC, no profile: $(tail -3 "$TMPD/$_vn.d$_vi.err")"
			return 1
		fi
	done
}

# sums NAME RUNS TYPE: TYPE's total of each default-rate profile
sums() {
	_vi=0
	while [ $_vi -lt "$2" ]; do
		_vi=$((_vi + 1))
		sum_prof "$TMPD/$1.d$_vi.pb.gz" "$3"
	done
}
