#!/bin/sh
# tests/cli/malformed.sh: every subcommand refuses a malformed profile, with
# the real reason first, and writes no output (issue 30, items 5 and 7):
#   - a sample with 2 values for 4 sample types ("values");
#   - a sample that names a location that does not exist ("location");
#   - a negative period ("period").
# Before: symbolize accepted the first two and wrote what go tool pprof
# rejects; top, collapse and flame said "the profile is empty"; a negative
# period was accepted everywhere. A well-formed profile of the same shape
# passes every subcommand (so a refusal is about the defect).
# A sample of 50 M location ids (48 KB gzip'd) took merge 1.47 GB: every
# subcommand now refuses it naming the cap (65,536 locations a sample),
# under a 400 MB address-space limit; a sample of exactly 65,536 passes.
# Prints PASS name / FAIL name / SKIP name: why.
. "$(dirname "$0")/../oracle/lib.sh"
oracle_need_heapprof malformed
oracle_tmpdir
T=$TMPD
MK="python3 $REPO/tests/cli/mkprof.py"
T4='[["alloc_objects","count"],["alloc_space","bytes"],["inuse_objects","count"],["inuse_space","bytes"]]'
$MK "$T/ok.pb" "{\"types\": $T4, \"samples\": [[[[\"f\"], [\"main\"]], [1,2,3,4]]]}"
$MK "$T/values.pb" "{\"types\": $T4, \"samples\": [[[[\"f\"], [\"main\"]], [1,2]]]}"
$MK "$T/location.pb" "{\"types\": $T4, \"samples\": [[[[\"f\"], 99], [1,2,3,4]]]}"
$MK "$T/period.pb" "{\"types\": $T4, \"period\": [[\"space\",\"bytes\"], -524288], \"samples\": [[[[\"f\"], [\"main\"]], [1,2,3,4]]]}"

$MK "$T/huge.pb.gz" "{\"types\": $T4, \"samples\": [[[[\"f\"]], [1,2,3,4]]], \"repeat_first\": [50000000, 1]}"
$MK "$T/deep.pb.gz" "{\"types\": $T4, \"samples\": [[[[\"f\"]], [1,2,3,4]]], \"repeat_first\": [65536, 1]}"

# What each defect's message must say.
why() {
	case $1 in
	values) echo "2 values for 4 sample types|number of values" ;;
	location) echo "location id 99|does not resolve" ;;
	period) echo "period -524288 is negative|malformed" ;;
	huge) echo "65,?536" ;;
	esac
}

# run NAME KIND CMD...: the subcommand on $T/KIND.pb, output to $T/out.
run() {
	_n=$1 _k=$2; shift 2
	rm -f "$T/out"
	(ulimit -v 409600; "$@") >"$T/stdout" 2>"$T/err"
	_rc=$?
	if [ "$_k" = ok ] || [ "$_k" = deep ]; then
		if [ $_rc -eq 0 ]; then pass "malformed.$_n.ok"
		else fail "malformed.$_n.ok" "exit $_rc on a good profile: $(head -c 200 "$T/err")"; fi
		return
	fi
	if [ $_rc -eq 0 ]; then
		fail "malformed.$_n.$_k" "exit 0 on a malformed profile"
	elif ! head -1 "$T/err" | grep -Eq "$(why "$_k")"; then
		fail "malformed.$_n.$_k" "the reason is not the first line: $(head -c 300 "$T/err")"
	elif [ -e "$T/out" ]; then
		fail "malformed.$_n.$_k" "an output file was left"
	else
		pass "malformed.$_n.$_k"
	fi
}

for k in ok values location period huge deep; do
	f=$T/$k.pb
	[ -f "$f" ] || f=$T/$k.pb.gz
	run top $k "$HEAPPROF" top "$f"
	run collapse $k "$HEAPPROF" collapse "$f" -o "$T/out"
	run flame $k "$HEAPPROF" flame "$f" -o "$T/out"
	run symbolize $k "$HEAPPROF" symbolize "$f" -o "$T/out"
	run convert $k "$HEAPPROF" convert "$f" --to text -o "$T/out"
	run merge $k "$HEAPPROF" merge -o "$T/out" "$T/ok.pb" "$f"
	run delta $k "$HEAPPROF" delta "$T/ok.pb" "$f" -o "$T/out"
done
exit 0
