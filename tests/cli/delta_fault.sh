#!/bin/sh
# tests/cli/delta_fault.sh: `heapprof delta` names what is wrong with a
# malformed input: the record and the fault ("location id 7: line has
# function 0"), not only the error code. The inputs are written here by
# hand (python3), each with one fault.
# Prints PASS name / FAIL name / SKIP name: why.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HEAPPROF=$REPO/build/heapprof
FAILED=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; [ -n "$2" ] && echo "  $1: $2" >&2; FAILED=1; }
command -v python3 >/dev/null || { echo "SKIP delta_fault: missing tool python3 (Debian package python3; make test installs it)"; exit 0; }
[ -x "$HEAPPROF" ] || { fail delta_fault "$HEAPPROF not built"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# mk OUT LINE_FUNC FUNC_ID NVALUES: one sample at location 7, whose line
# names function LINE_FUNC; function FUNC_ID; NVALUES values for 1 type.
mk() {
	python3 - "$@" <<'PY'
import sys
def v(n):
    b = b""
    while n >= 0x80:
        b += bytes([n & 0x7f | 0x80]); n >>= 7
    return b + bytes([n])
def f(num, payload):  # length-delimited field
    return v(num << 3 | 2) + v(len(payload)) + payload
def i(num, n):  # varint field
    return v(num << 3) + v(n)
out, lf, fid, nv = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
p = f(1, i(1, 1) + i(2, 2))
p += f(2, f(1, v(7)) + f(2, b"".join(v(5 + k) for k in range(nv))))
p += f(4, i(1, 7) + i(3, 0x1234) + f(4, i(1, lf) + i(2, 3)))
p += f(5, i(1, fid) + i(2, 3))
for s in [b"", b"alloc_objects", b"count", b"main"]:
    p += f(6, s)
open(out, "wb").write(p)
PY
}
mk "$T/good.pb" 9 9 1
check() { # name bad-file expected-text
	if "$HEAPPROF" delta "$T/good.pb" "$2" -o "$T/out.pb" 2>"$T/err"; then
		fail "$1" "accepted a malformed input"
	elif grep -q "$3" "$T/err"; then
		pass "$1"
	else
		fail "$1" "message: $(cat "$T/err"), want: $3"
	fi
}
mk "$T/f0.pb" 0 9 1
check delta_fault_line_function_0 "$T/f0.pb" "f0.pb: .*: location id 7: line has function 0$"
mk "$T/f8.pb" 8 9 1
check delta_fault_missing_function "$T/f8.pb" "location id 7: line has function 8, which does not exist"
mk "$T/v2.pb" 9 9 2
check delta_fault_values "$T/v2.pb" "sample at byte [0-9]*: 2 values for 1 sample types"
"$HEAPPROF" delta "$T/good.pb" "$T/good.pb" -o "$T/out.pb" 2>"$T/err" &&
	pass delta_fault_good_input || fail delta_fault_good_input "$(cat "$T/err")"
exit $FAILED
