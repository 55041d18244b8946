#!/bin/sh
# tests/cli/delta_merge.sh: the command-line behaviour of `heapprof delta`
# and `heapprof merge` (tests/oracle/{delta,merge}.sh check their values
# against pprof; this checks the commands around them):
#  - errors: garbage, text, bad gzip, truncated (raw and gzip'd corpus
#    profiles cut short), empty, missing and stdin inputs, on OLD or NEW
#    (delta) and on any input (merge); unknown options, missing -o or
#    inputs, both inputs stdin, bad --types / --scale / --base, an output
#    directory that does not exist, a full stdout. Each: the exact exit
#    status, a message naming the problem, nothing on stdout, no output
#    file (not even a temp file, the command run in an empty directory);
#    and when OUT exists before the failing run, OUT is left as it was
#    (same bytes, same inode);
#  - truncation sweeps: the gzip'd corpus profile cut at many lengths
#    always fails cleanly; the raw one either fails cleanly or succeeds;
#  - success replaces an existing OUT atomically (no temp file left), also
#    when OUT is one of the inputs;
#  - '-': an input read from stdin gives the same bytes as from the file;
#    '-o -' (and merge without -o, stdout not a terminal) the same bytes
#    as '-o FILE'; merge without -o refuses a terminal;
#  - gzip by default (magic, gunzip == --raw), --raw is not gzip;
#  - --types (go tool pprof): only the named types are subtracted, the
#    others are NEW's (totals and per sample, tests/oracle/delta_cmp.py);
#  - merge (go tool pprof): totals of the inputs summed, a profile merged
#    with itself has every sample doubled (== --scale 2), --base OLD NEW
#    is NEW - OLD for every type and equals delta's values for the
#    subtracted types; --base == --scale -1 as the last input.
# Prints PASS name / FAIL name / SKIP name: why.
. "$(dirname "$0")/../oracle/lib.sh"
oracle_need_heapprof delta_merge
oracle_need_corpus delta_merge
oracle_tmpdir
export GOCACHE=${GOCACHE:-$REPO/build/gocache} HOME=${HOME:-$TMPD}
HAVE_GO=0
command -v go >/dev/null 2>&1 && HAVE_GO=1
HAVE_PY=0
command -v python3 >/dev/null 2>&1 && HAVE_PY=1

F=$CORPUS/fastdelta
G=$CORPUS/go
for f in "$F/heap.before.pprof" "$F/heap.after.pprof" "$F/block.before.pprof" \
	"$F/block.after.pprof" "$F/stress-failure.after.pprof" "$G/go_heap_delta_1.pb.gz" \
	"$G/go_heap_delta_2.pb.gz" "$G/go_heap_basic.txt" "$G/go_cpu_labels.pb.gz"; do
	if [ ! -f "$f" ]; then
		skip_corpus delta_merge "${f#$CORPUS/}"
		exit 0
	fi
done
OLD=$F/heap.before.pprof NEW=$F/heap.after.pprof    # raw pair
GOLD=$G/go_heap_delta_1.pb.gz GNEW=$G/go_heap_delta_2.pb.gz # gzip'd pair

# ---- inputs
IN=$TMPD/in
mkdir "$IN"
# binary garbage (deterministic): 0xff..0xf2 repeated
printf '\377\376\375\374\373\372\371\370\367\366\365\364\363\362' >"$IN/garbage"
for i in 1 2 3 4 5 6; do
	cat "$IN/garbage" "$IN/garbage" >"$IN/g2" && mv "$IN/g2" "$IN/garbage"
done
printf 'this is not a profile\n' >"$IN/text"
printf '\037\213\010\000\000\000\000\000\000\003garbage after a gzip header' >"$IN/badgzip"
: >"$IN/empty"
# raw, cut inside a field: the middle of the first top-level
# length-delimited field that ends past byte 1000 (a fixed 1000 bytes
# fell on a field boundary of a generated profile once: a whole prefix,
# refused for its missing string table, not as truncated)
python3 - "$NEW" "$IN/cut.pprof" <<'PY'
import sys
b = open(sys.argv[1], 'rb').read()
def varint(i):
    v = s = 0
    while True:
        c = b[i]; i += 1; v |= (c & 0x7f) << s; s += 7
        if c < 0x80:
            return v, i
i = 0
while i < len(b):
    key, j = varint(i)
    wt = key & 7
    if wt == 0:
        _, j = varint(j)
    elif wt == 1:
        j += 8
    elif wt == 5:
        j += 4
    elif wt == 2:
        n, k = varint(j)
        j = k + n
        if j > 1000 and n > 2:
            cut = (k + j) // 2
            break
    else:
        raise SystemExit("unexpected wire type %d" % wt)
    i = j
else:
    raise SystemExit("no field past byte 1000")
open(sys.argv[2], 'wb').write(b[:cut])
PY
head -c 1000 "$GNEW" >"$IN/cut.pb.gz"  # gzip'd, cut inside the stream
cp "$NEW" "$IN/-dash.pprof"
names=
i=1
while [ $i -le 65 ]; do
	names=$names${names:+,}t$i
	# 64 names, one of them a type the profiles have
	[ $i -eq 63 ] && names64=$names,alloc_space
	i=$((i + 1))
done
names65=$names

# The output directory: every command runs with it as its current
# directory, so a stray file of any name is seen.
OD=$TMPD/od
OUT=$OD/out.pb.gz
SENTINEL=$TMPD/sentinel
cp "$GOLD" "$SENTINEL"
inode() { ls -i "$1" | awk '{ print $1 }'; }

# run_in_od STDIN ARGS...: heapprof ARGS (@OUT@ -> $OUT) in $OD, stdout to
# $TMPD/stdout, stderr to $TMPD/stderr; sets st.
run_in_od() {
	stdin=$1
	shift
	for a; do
		shift
		[ "$a" = @OUT@ ] && a=$OUT
		set -- "$@" "$a"
	done
	(cd "$OD" && "$HEAPPROF" "$@") <"$stdin" >"$TMPD/stdout" 2>"$TMPD/stderr"
	st=$?
}

# err_case NAME STATUS REGEX ARGS...: a failing run, twice: OUT absent
# (NAME: nothing may be created) and OUT present (NAME_keeps_out: OUT
# unchanged, same inode, nothing else created). Stdin: $ERR_IN or
# /dev/null.
err_case() {
	name=$1 want=$2 re=$3
	shift 3
	for pre in absent present; do
		rm -rf "$OD"
		mkdir "$OD"
		n=$name
		if [ $pre = present ]; then
			cp "$SENTINEL" "$OUT"
			ino=$(inode "$OUT")
			n=${name}_keeps_out
		fi
		run_in_od "${ERR_IN:-/dev/null}" "$@"
		why=
		[ "$st" -eq "$want" ] || why="$why; exit status $st, want $want"
		grep -Eq -e "$re" "$TMPD/stderr" || why="$why; stderr does not match /$re/"
		[ -s "$TMPD/stdout" ] && why="$why; wrote $(wc -c <"$TMPD/stdout") bytes to stdout"
		left=$(ls -A "$OD" | tr '\n' ' ')
		if [ $pre = absent ]; then
			[ -z "$left" ] || why="$why; left files: $left"
		elif [ "$left" != "out.pb.gz " ]; then
			why="$why; files after the run: $left"
		elif ! cmp -s "$SENTINEL" "$OUT"; then
			why="$why; existing OUT changed"
		elif [ "$(inode "$OUT")" != "$ino" ]; then
			why="$why; existing OUT replaced (new inode)"
		fi
		if [ -n "$why" ]; then
			fail "$n" "${why#; }; stderr: $(head -c 300 "$TMPD/stderr")"
		else
			pass "$n"
		fi
	done
}

# ---- help
for c in delta merge; do
	if "$HEAPPROF" $c --help >"$TMPD/help" 2>"$TMPD/herr" &&
		grep -q "^usage: heapprof $c " "$TMPD/help" && [ ! -s "$TMPD/herr" ]; then
		pass ${c}_help
	else
		fail ${c}_help "--help: no usage on stdout or non-zero exit"
	fi
	"$HEAPPROF" --help | grep -q "^  $c " && pass ${c}_listed || fail ${c}_listed
done

# ---- delta errors
err_case delta_err_garbage_old 1 "^heapprof: delta: $IN/garbage: bad varint" \
	delta "$IN/garbage" "$NEW" -o @OUT@
err_case delta_err_garbage_new 1 "^heapprof: delta: $IN/garbage: bad varint" \
	delta "$OLD" "$IN/garbage" -o @OUT@
err_case delta_err_text_new 1 "^heapprof: delta: $IN/text: bad protobuf wire type" \
	delta "$OLD" "$IN/text" -o @OUT@
err_case delta_err_bad_gzip_new 1 "^heapprof: delta: $IN/badgzip: corrupt gzip stream" \
	delta "$GOLD" "$IN/badgzip" -o @OUT@
err_case delta_err_truncated_raw_old 1 "^heapprof: delta: $IN/cut.pprof: .*(runs past the end|truncated)" \
	delta "$IN/cut.pprof" "$NEW" -o @OUT@
err_case delta_err_truncated_raw_new 1 "^heapprof: delta: $IN/cut.pprof: .*(runs past the end|truncated)" \
	delta "$OLD" "$IN/cut.pprof" -o @OUT@
err_case delta_err_truncated_gzip_old 1 "^heapprof: delta: $IN/cut.pb.gz: corrupt gzip stream" \
	delta "$IN/cut.pb.gz" "$GNEW" -o @OUT@
err_case delta_err_truncated_gzip_new 1 "^heapprof: delta: $IN/cut.pb.gz: corrupt gzip stream" \
	delta "$GOLD" "$IN/cut.pb.gz" -o @OUT@
err_case delta_err_empty_old 1 "^heapprof: delta: $IN/empty: empty input" \
	delta "$IN/empty" "$NEW" -o @OUT@
err_case delta_err_empty_new 1 "^heapprof: delta: $IN/empty: empty input" \
	delta "$OLD" "$IN/empty" -o @OUT@
err_case delta_err_missing_old 1 "^heapprof: delta: $IN/missing: No such file or directory" \
	delta "$IN/missing" "$NEW" -o @OUT@
err_case delta_err_missing_new 1 "^heapprof: delta: $IN/missing: No such file or directory" \
	delta "$OLD" "$IN/missing" -o @OUT@
ERR_IN=$IN/garbage err_case delta_err_stdin_garbage_new 1 "^heapprof: delta: -: bad varint" \
	delta "$OLD" - -o @OUT@
ERR_IN=$IN/empty err_case delta_err_stdin_empty_old 1 "^heapprof: delta: -: empty input" \
	delta - "$NEW" -o @OUT@
err_case delta_err_unknown_option 2 "^heapprof: delta: unknown option '--bogus'" \
	delta --bogus "$OLD" "$NEW" -o @OUT@
err_case delta_err_unknown_option_usage 2 "^usage: heapprof delta " \
	delta -x "$OLD" "$NEW" -o @OUT@
err_case delta_err_no_output 2 "^heapprof: delta: want OLD NEW -o OUT" \
	delta "$OLD" "$NEW"
err_case delta_err_one_input 2 "^heapprof: delta: want OLD NEW -o OUT" \
	delta "$NEW" -o @OUT@
err_case delta_err_no_input 2 "^heapprof: delta: want OLD NEW -o OUT" \
	delta -o @OUT@
err_case delta_err_three_inputs 2 "^heapprof: delta: too many inputs" \
	delta "$OLD" "$NEW" "$NEW" -o @OUT@
err_case delta_err_both_stdin 2 "^heapprof: delta: only one input can be stdin" \
	delta - - -o @OUT@
err_case delta_err_o_no_value 2 "^heapprof: delta: -o needs an argument" \
	delta "$OLD" "$NEW" -o
err_case delta_err_types_no_value 2 "^heapprof: delta: --types needs an argument" \
	delta "$OLD" "$NEW" -o @OUT@ --types
err_case delta_err_types_only_commas 2 "^heapprof: delta: --types wants 1 to 64 comma-separated names" \
	delta --types , "$OLD" "$NEW" -o @OUT@
err_case delta_err_types_eq_empty 2 "^heapprof: delta: --types wants 1 to 64 comma-separated names" \
	delta --types= "$OLD" "$NEW" -o @OUT@
err_case delta_err_types_no_match 1 "^heapprof: delta: $OLD: no sample type named nope,nada \(--types\)" \
	delta --types nope,nada "$OLD" "$NEW" -o @OUT@
err_case delta_err_kinds_differ 1 "^heapprof: delta: $GOLD and $G/go_cpu_labels.pb.gz have different sample types" \
	delta "$GOLD" "$G/go_cpu_labels.pb.gz" -o @OUT@
err_case delta_err_nothing_cumulative 1 "^heapprof: delta: $G/go_cpu_labels.pb.gz: no cumulative sample type .* name the types with --types" \
	delta "$G/go_cpu_labels.pb.gz" "$G/go_cpu_labels.pb.gz" -o @OUT@
err_case delta_err_types_65_names 2 "^heapprof: delta: --types wants 1 to 64 comma-separated names" \
	delta --types "$names65" "$OLD" "$NEW" -o @OUT@
err_case delta_err_out_dir_missing 1 "^heapprof: delta: $OD/nodir/out: No such file or directory" \
	delta "$OLD" "$NEW" -o "$OD/nodir/out"

# ---- merge errors
err_case merge_err_garbage 1 "^heapprof: merge: $IN/garbage: bad varint" \
	merge -o @OUT@ "$IN/garbage"
err_case merge_err_garbage_second 1 "^heapprof: merge: $IN/garbage: bad varint" \
	merge -o @OUT@ "$NEW" "$IN/garbage"
err_case merge_err_garbage_base 1 "^heapprof: merge: $IN/garbage: bad varint" \
	merge -o @OUT@ --base "$IN/garbage" "$NEW"
err_case merge_err_text 1 "^heapprof: merge: $IN/text: .*looks like a text profile" \
	merge -o @OUT@ "$IN/text"
err_case merge_err_legacy_text 1 "^heapprof: merge: $G/go_heap_basic.txt: .*looks like a text profile" \
	merge -o @OUT@ "$GOLD" "$G/go_heap_basic.txt"
err_case merge_err_bad_gzip 1 "^heapprof: merge: $IN/badgzip: corrupt gzip stream" \
	merge -o @OUT@ "$GOLD" "$IN/badgzip"
err_case merge_err_truncated_raw 1 "^heapprof: merge: $IN/cut.pprof: .*(runs past the end|truncated)" \
	merge -o @OUT@ "$OLD" "$IN/cut.pprof"
err_case merge_err_truncated_gzip 1 "^heapprof: merge: $IN/cut.pb.gz: corrupt gzip stream" \
	merge -o @OUT@ "$IN/cut.pb.gz" "$GOLD"
err_case merge_err_empty 1 "^heapprof: merge: $IN/empty: empty input" \
	merge -o @OUT@ "$NEW" "$IN/empty"
err_case merge_err_missing 1 "^heapprof: merge: $IN/missing: No such file or directory" \
	merge -o @OUT@ "$NEW" "$IN/missing"
err_case merge_err_type_mismatch 1 "^heapprof: merge: $F/block.before.pprof: profiles have different sample or period types" \
	merge -o @OUT@ "$NEW" "$F/block.before.pprof"
ERR_IN=$IN/garbage err_case merge_err_stdin_garbage 1 "^heapprof: merge: -: bad varint" \
	merge -o @OUT@ "$NEW" -
err_case merge_err_unknown_option 2 "^heapprof: merge: unknown option '--bogus'" \
	merge --bogus -o @OUT@ "$NEW"
err_case merge_err_unknown_option_usage 2 "^usage: heapprof merge " \
	merge -x -o @OUT@ "$NEW"
err_case merge_err_no_input 2 "^heapprof: merge: no input profiles$" \
	merge -o @OUT@
err_case merge_err_base_only 2 "^heapprof: merge: no input profiles besides --base" \
	merge -o @OUT@ --base "$OLD"
err_case merge_err_two_bases 2 "^heapprof: merge: only one --base" \
	merge -o @OUT@ --base "$OLD" --base "$OLD" "$NEW"
err_case merge_err_two_stdin 2 "^heapprof: merge: '-' \(stdin\) may be given only once" \
	merge -o @OUT@ - -
err_case merge_err_two_stdin_scale 2 "^heapprof: merge: '-' \(stdin\) may be given only once" \
	merge -o @OUT@ --scale 2:- -
err_case merge_err_o_no_value 2 "^heapprof: merge: -o needs a file name" \
	merge "$NEW" -o
err_case merge_err_base_no_value 2 "^heapprof: merge: --base needs a file name" \
	merge -o @OUT@ "$NEW" --base
for s in no_value=- not_a_number=x:F zero=0:F inf=inf:F nan=nan:F overflow=1e999:F \
	no_ratio=:F no_file=2: no_colon=2; do
	n=${s%%=*} v=${s#*=}
	case $v in
	-) set -- merge -o @OUT@ "$NEW" --scale ;;
	*) set -- merge -o @OUT@ "$NEW" --scale "$(echo "$v" | sed "s|F\$|$NEW|")" ;;
	esac
	err_case "merge_err_scale_$n" 2 "^heapprof: merge: --scale wants R:FILE with R a non-zero finite number" "$@"
done
err_case merge_err_out_dir_missing 1 "^heapprof: merge: $OD/nodir/out: No such file or directory" \
	merge -o "$OD/nodir/out" "$NEW"

# ---- a full stdout: exit 1, ENOSPC named, no input blamed
for c in delta merge; do
	if [ $c = delta ]; then
		"$HEAPPROF" delta "$OLD" "$NEW" -o - >/dev/full 2>"$TMPD/stderr"
	else
		"$HEAPPROF" merge -o - "$OLD" "$NEW" >/dev/full 2>"$TMPD/stderr"
	fi
	st=$?
	if [ $st -eq 1 ] && grep -Eq "^heapprof: $c: -: No space left on device" "$TMPD/stderr" &&
		! grep -q "heap\.\(before\|after\)" "$TMPD/stderr"; then
		pass ${c}_err_stdout_full
	else
		fail ${c}_err_stdout_full "exit $st, stderr: $(head -c 300 "$TMPD/stderr")"
	fi
done

# ---- truncation sweeps. sweep NAME FILE FIRST STEP MUSTFAIL REGEX ARGS...
# (@CUT@ -> the cut file): every cut length FIRST, FIRST+STEP, ... < size;
# MUSTFAIL=1: each run must exit 1 with stderr matching REGEX, OUT (present
# before) unchanged; MUSTFAIL=0: exit 0 (OUT replaced, nothing else left)
# or exit 1 as above; never anything else (a crash).
sweep() {
	name=$1 src=$2 n=$3 step=$4 mustfail=$5 re=$6
	shift 6
	for a; do
		shift
		[ "$a" = @CUT@ ] && a=$IN/cut
		set -- "$@" "$a"
	done
	size=$(wc -c <"$src")
	bad= runs=0 ok=0
	rm -rf "$OD"
	mkdir "$OD"
	while [ "$n" -lt "$size" ]; do
		head -c "$n" "$src" >"$IN/cut"
		cp "$SENTINEL" "$OUT"
		run_in_od /dev/null "$@"
		runs=$((runs + 1))
		left=$(ls -A "$OD" | tr '\n' ' ')
		if [ "$st" -eq 0 ] && [ "$mustfail" = 0 ] && [ "$left" = "out.pb.gz " ] &&
			! cmp -s "$SENTINEL" "$OUT"; then
			ok=$((ok + 1))
		elif [ "$st" -ne 1 ] || ! grep -Eq -e "$re" "$TMPD/stderr" ||
			[ "$left" != "out.pb.gz " ] || ! cmp -s "$SENTINEL" "$OUT"; then
			bad="$bad $n(exit $st, files $left)"
		fi
		n=$((n + step))
	done
	if [ -z "$bad" ] && [ $runs -gt 0 ]; then
		pass "$name"
	else
		fail "$name" "$runs cuts, bad:$(echo "$bad" | cut -c1-400)"
	fi
	[ "$mustfail" = 0 ] && echo "  $name: $runs cuts, $ok accepted" >&2
	rm -rf "$OD"
	mkdir "$OD"
}
sweep delta_truncated_gzip_sweep "$GNEW" 2 4 1 "^heapprof: delta: $IN/cut: corrupt gzip stream" \
	delta "$GOLD" @CUT@ -o @OUT@
sweep merge_truncated_gzip_sweep "$GNEW" 4 4 1 "^heapprof: merge: $IN/cut: corrupt gzip stream" \
	merge -o @OUT@ "$GOLD" @CUT@
sweep delta_truncated_raw_sweep "$NEW" 1 5 0 "^heapprof: delta: $IN/cut: ." \
	delta "$OLD" @CUT@ -o @OUT@
sweep merge_truncated_raw_sweep "$NEW" 3 5 0 "^heapprof: merge: $IN/cut: ." \
	merge -o @OUT@ "$OLD" @CUT@

# ---- success: OUT replaced atomically, no temp file left; OUT as input
R=$TMPD/ref
mkdir "$R"
"$HEAPPROF" delta "$OLD" "$NEW" -o "$R/d.gz" 2>"$TMPD/err" || fail delta_reference "$(cat "$TMPD/err")"
"$HEAPPROF" delta --raw "$OLD" "$NEW" -o "$R/d.raw" 2>"$TMPD/err" || fail delta_reference_raw "$(cat "$TMPD/err")"
"$HEAPPROF" delta "$GOLD" "$GNEW" -o "$R/gd.gz" 2>"$TMPD/err" || fail delta_reference_go "$(cat "$TMPD/err")"
"$HEAPPROF" merge -o "$R/m.gz" "$OLD" "$NEW" 2>"$TMPD/err" || fail merge_reference "$(cat "$TMPD/err")"
"$HEAPPROF" merge --raw -o "$R/m.raw" "$OLD" "$NEW" 2>"$TMPD/err" || fail merge_reference_raw "$(cat "$TMPD/err")"
"$HEAPPROF" merge -o "$R/gm.gz" "$GOLD" "$GNEW" 2>"$TMPD/err" || fail merge_reference_go "$(cat "$TMPD/err")"
for f in d.gz d.raw gd.gz m.gz m.raw gm.gz; do
	[ -s "$R/$f" ] || fail reference_outputs "$f empty or missing"
done
# replaces_out NAME REF ARGS...
replaces_out() {
	name=$1 ref=$2
	shift 2
	rm -rf "$OD"
	mkdir "$OD"
	cp "$SENTINEL" "$OUT"
	run_in_od /dev/null "$@"
	left=$(ls -A "$OD" | tr '\n' ' ')
	if [ "$st" -eq 0 ] && [ "$left" = "out.pb.gz " ] && cmp -s "$OUT" "$ref" &&
		[ ! -s "$TMPD/stdout" ]; then
		pass "$name"
	else
		fail "$name" "exit $st, files: $left, stderr: $(head -c 300 "$TMPD/stderr")"
	fi
}
replaces_out delta_success_replaces_out "$R/d.gz" delta "$OLD" "$NEW" -o @OUT@
replaces_out merge_success_replaces_out "$R/m.gz" merge -o @OUT@ "$OLD" "$NEW"
# OUT is NEW (delta) / the first input (merge): read whole before written
rm -rf "$OD"
mkdir "$OD"
cp "$NEW" "$OUT"
run_in_od /dev/null delta "$OLD" @OUT@ -o @OUT@
[ "$st" -eq 0 ] && cmp -s "$OUT" "$R/d.gz" && [ "$(ls -A "$OD")" = out.pb.gz ] &&
	pass delta_out_is_new_input || fail delta_out_is_new_input "exit $st: $(head -c 300 "$TMPD/stderr")"
cp "$OLD" "$OUT"
run_in_od /dev/null merge -o @OUT@ @OUT@ "$NEW"
[ "$st" -eq 0 ] && cmp -s "$OUT" "$R/m.gz" && [ "$(ls -A "$OD")" = out.pb.gz ] &&
	pass merge_out_is_input || fail merge_out_is_input "exit $st: $(head -c 300 "$TMPD/stderr")"
# merge '--': what follows is a file even if it starts with '-'
run_in_od /dev/null merge -o @OUT@ --raw "$OLD" -- "$IN/-dash.pprof"
cmp -s "$OUT" "$R/m.raw" && pass merge_double_dash || fail merge_double_dash "exit $st: $(head -c 300 "$TMPD/stderr")"
(cd "$IN" && "$HEAPPROF" merge -o - --raw "$OLD" -- -dash.pprof >"$TMPD/o" 2>"$TMPD/err")
cmp -s "$TMPD/o" "$R/m.raw" && pass merge_double_dash_relative ||
	fail merge_double_dash_relative "$(head -c 300 "$TMPD/err")"

# ---- '-': stdin and stdout
same_bytes() { # name ref got
	if [ -s "$2" ] && cmp -s "$2" "$3"; then
		pass "$1"
	else
		fail "$1" "$(cmp "$2" "$3" 2>&1 | head -1)"
	fi
}
"$HEAPPROF" delta "$OLD" - -o "$TMPD/o" <"$NEW" 2>/dev/null
same_bytes delta_stdin_new "$R/d.gz" "$TMPD/o"
"$HEAPPROF" delta - "$NEW" -o "$TMPD/o" <"$OLD" 2>/dev/null
same_bytes delta_stdin_old "$R/d.gz" "$TMPD/o"
cat "$GNEW" | "$HEAPPROF" delta "$GOLD" - -o "$TMPD/o" 2>/dev/null
same_bytes delta_stdin_pipe_gzip_new "$R/gd.gz" "$TMPD/o"
"$HEAPPROF" delta "$OLD" "$NEW" -o - >"$TMPD/o" 2>/dev/null
same_bytes delta_stdout "$R/d.gz" "$TMPD/o"
"$HEAPPROF" delta --raw "$OLD" "$NEW" -o - 2>/dev/null | cat >"$TMPD/o"
same_bytes delta_stdout_pipe_raw "$R/d.raw" "$TMPD/o"
"$HEAPPROF" delta "$OLD" - -o - <"$NEW" >"$TMPD/o" 2>/dev/null
same_bytes delta_stdin_to_stdout "$R/d.gz" "$TMPD/o"
"$HEAPPROF" merge -o "$TMPD/o" - "$NEW" <"$OLD" 2>/dev/null
same_bytes merge_stdin "$R/m.gz" "$TMPD/o"
cat "$GNEW" | "$HEAPPROF" merge -o "$TMPD/o" "$GOLD" - 2>/dev/null
same_bytes merge_stdin_pipe_gzip "$R/gm.gz" "$TMPD/o"
"$HEAPPROF" merge -o - "$OLD" "$NEW" >"$TMPD/o" 2>/dev/null
same_bytes merge_stdout "$R/m.gz" "$TMPD/o"
"$HEAPPROF" merge "$OLD" "$NEW" >"$TMPD/o" 2>/dev/null
same_bytes merge_stdout_by_default "$R/m.gz" "$TMPD/o"
"$HEAPPROF" merge --raw "$OLD" "$NEW" 2>/dev/null | cat >"$TMPD/o"
same_bytes merge_stdout_by_default_pipe_raw "$R/m.raw" "$TMPD/o"
# merge without -o, stdout a terminal: refused (exit 2, nothing written)
onpty() {
	(cd "$TMPD" && python3 -c 'import os, pty, subprocess, sys
m, s = pty.openpty()
p = subprocess.run(sys.argv[1:], stdin=subprocess.DEVNULL, stdout=s, stderr=subprocess.PIPE)
os.close(s)
os.set_blocking(m, False)
n = 0
try:
    while True:
        b = os.read(m, 65536)
        if not b:
            break
        n += len(b)
except OSError:
    pass
sys.stderr.buffer.write(p.stderr)
print(p.returncode, n)' "$@")
}
if [ $HAVE_PY = 0 ]; then
	skip_tool merge_refuses_terminal python3
	skip_tool merge_terminal_with_o python3
else
	r=$(onpty "$HEAPPROF" merge "$OLD" "$NEW" 2>"$TMPD/err")
	if [ "$r" = "2 0" ] && grep -q '^heapprof: merge: refusing to write a binary profile to a terminal; use -o OUT' "$TMPD/err"; then
		pass merge_refuses_terminal
	else
		fail merge_refuses_terminal "exit/bytes on the terminal: $r, stderr: $(head -c 300 "$TMPD/err")"
	fi
	rm -f "$TMPD/o"
	r=$(onpty "$HEAPPROF" merge -o "$TMPD/o" "$OLD" "$NEW" 2>"$TMPD/err")
	if [ "$r" = "0 0" ] && cmp -s "$TMPD/o" "$R/m.gz"; then
		pass merge_terminal_with_o
	else
		fail merge_terminal_with_o "exit/bytes on the terminal: $r, stderr: $(head -c 300 "$TMPD/err")"
	fi
fi

# ---- gzip by default, --raw uncompressed
is_gzip() { [ "$(head -c 2 "$1" | od -An -tx1 | tr -d ' \n')" = 1f8b ]; }
for c in delta merge; do
	gz=$R/d.gz raw=$R/d.raw
	[ $c = merge ] && gz=$R/m.gz raw=$R/m.raw
	if is_gzip "$gz" && gunzip -c <"$gz" >"$TMPD/u" 2>/dev/null && [ -s "$TMPD/u" ] &&
		cmp -s "$TMPD/u" "$raw"; then
		pass ${c}_gzip_default_equals_raw
	else
		fail ${c}_gzip_default_equals_raw "not gzip, or gunzip -c differs from --raw"
	fi
	if [ -s "$raw" ] && ! is_gzip "$raw"; then
		pass ${c}_raw_not_gzip
	else
		fail ${c}_raw_not_gzip
	fi
done

# ---- --types: byte-level checks (no go)
"$HEAPPROF" delta --types alloc_space "$GOLD" "$GNEW" -o "$R/t.gz" 2>/dev/null
"$HEAPPROF" delta --types=alloc_space "$GOLD" "$GNEW" -o "$TMPD/o" 2>/dev/null
same_bytes delta_types_eq_form "$R/t.gz" "$TMPD/o"
"$HEAPPROF" delta --types ,alloc_space,,alloc_space, "$GOLD" "$GNEW" -o "$TMPD/o" 2>/dev/null
same_bytes delta_types_empty_and_repeated_names "$R/t.gz" "$TMPD/o"
"$HEAPPROF" delta --types alloc_objects,alloc_space,contentions,delay "$GOLD" "$GNEW" -o "$TMPD/o" 2>/dev/null
same_bytes delta_types_default_list "$R/gd.gz" "$TMPD/o"
if cmp -s "$R/t.gz" "$R/gd.gz"; then
	fail delta_types_changes_output "--types alloc_space gives the default output"
else
	pass delta_types_changes_output
fi
if "$HEAPPROF" delta --types "$names64" "$OLD" "$NEW" -o "$TMPD/o" 2>"$TMPD/err" && [ -s "$TMPD/o" ]; then
	pass delta_types_64_names
else
	fail delta_types_64_names "$(head -c 300 "$TMPD/err")"
fi

# ---- go tool pprof checks
if [ $HAVE_GO = 0 ]; then
	for n in delta_types_totals delta_types_per_sample merge_totals merge_self_doubled \
		merge_base merge_base_vs_delta; do
		skip_tool $n go golang-go
	done
	exit $FAILED
fi
mkdir -p "$GOCACHE"
rawdump() { go tool pprof -raw -symbolize=none "$1" 2>"$TMPD/pprof.err"; }
# totals FILE: "type total" per sample type, from go tool pprof -raw
totals() {
	rawdump "$1" | awk '
		/^Samples:/ { getline; nt = split($0, t, " "); s = 1; next }
		/^Locations/ { s = 0 }
		s && /^ *-?[0-9]+( +-?[0-9]+)*:/ {
			sub(/:.*/, ""); k = split($0, v, " ")
			for (i = 1; i <= k; i++) tot[i] += v[i]
		}
		END { for (i = 1; i <= nt; i++) { split(t[i], a, "/"); printf "%s %.0f\n", a[1], tot[i] } }'
}
tot() { awk -v t="$2" '$1 == t { print $2 }' "$1"; } # tot TOTALSFILE TYPE
# samples FILE FACTOR: the sample lines (values * FACTOR) and labels
samples() {
	rawdump "$1" | sed -n '/^Samples:/,/^Locations/p' | awk -v f="$2" '
		/^ *-?[0-9]+( +-?[0-9]+)*:/ {
			i = index($0, ":"); n = split(substr($0, 1, i - 1), v, " "); s = ""
			for (j = 1; j <= n; j++) s = s sprintf(" %.0f", v[j] * f)
			print s ":" substr($0, i + 1); next
		}
		{ print }'
}

# --types on the two pairs: totals (only alloc_space differs from NEW's)
# and per sample against go tool pprof -proto -base.
types_checks() { # tag old new
	tag=$1 o=$2 nw=$3
	"$HEAPPROF" delta "$o" "$nw" -o "$TMPD/def.gz" 2>/dev/null
	"$HEAPPROF" delta --types alloc_space "$o" "$nw" -o "$TMPD/t.gz" 2>"$TMPD/err" ||
		{ fail "delta_types_${tag}" "$(cat "$TMPD/err")"; return; }
	totals "$nw" >"$TMPD/tn"
	totals "$o" >"$TMPD/to"
	totals "$TMPD/def.gz" >"$TMPD/td"
	totals "$TMPD/t.gz" >"$TMPD/tt"
	if [ ! -s "$TMPD/tn" ] || [ ! -s "$TMPD/tt" ] || [ ! -s "$TMPD/td" ]; then
		fail "delta_types_totals_$tag" "go tool pprof: $(head -c 300 "$TMPD/pprof.err")"
		return
	fi
	why=
	for t in alloc_objects inuse_objects inuse_space; do
		[ "$(tot "$TMPD/tt" $t)" = "$(tot "$TMPD/tn" $t)" ] ||
			why="$why; $t total $(tot "$TMPD/tt" $t), NEW's $(tot "$TMPD/tn" $t)"
	done
	[ "$(tot "$TMPD/tt" alloc_space)" = "$(tot "$TMPD/td" alloc_space)" ] ||
		why="$why; alloc_space total $(tot "$TMPD/tt" alloc_space), default delta's $(tot "$TMPD/td" alloc_space)"
	# the pair discriminates: OLD has alloc_objects, the default delta
	# subtracts them, --types alloc_space does not
	[ "$(tot "$TMPD/to" alloc_objects)" != 0 ] && [ "$(tot "$TMPD/td" alloc_objects)" != "$(tot "$TMPD/tn" alloc_objects)" ] ||
		why="$why; default delta's alloc_objects total $(tot "$TMPD/td" alloc_objects) = NEW's"
	if [ -z "$why" ]; then
		pass "delta_types_totals_$tag"
	else
		fail "delta_types_totals_$tag" "${why#; }"
	fi
	if [ $HAVE_PY = 0 ]; then
		skip_tool "delta_types_per_sample_$tag" python3
		return
	fi
	go tool pprof -proto -base "$o" "$nw" >"$TMPD/base.pb.gz" 2>"$TMPD/err"
	rawdump "$nw" >"$TMPD/new.raw"
	rawdump "$TMPD/base.pb.gz" >"$TMPD/base.raw"
	for types in alloc_space alloc_objects,inuse_space; do
		n=delta_types_per_sample_${tag}_$(echo "$types" | tr ',' '_')
		if ! "$HEAPPROF" delta --types "$types" "$o" "$nw" -o "$TMPD/t.gz" 2>"$TMPD/err"; then
			fail "$n" "$(cat "$TMPD/err")"
			continue
		fi
		rawdump "$TMPD/t.gz" >"$TMPD/t.raw"
		if python3 "$REPO/tests/oracle/delta_cmp.py" "$TMPD/new.raw" "$TMPD/base.raw" \
			"$TMPD/t.raw" "$types" 2>"$TMPD/cmp"; then
			pass "$n"
		else
			fail "$n" "$(cat "$TMPD/cmp")"
		fi
	done
}
types_checks fastdelta_heap "$OLD" "$NEW"
types_checks go_heap "$GOLD" "$GNEW"

# merge: totals of A B = sum of the inputs' totals (from go tool pprof on
# the inputs), every type.
sum_totals() { # out totalsA totalsB factorB
	awk -v fb="$4" 'NR == FNR { a[$1] = $2; next } { printf "%s %.0f\n", $1, a[$1] + fb * $2 }' "$2" "$3" >"$1"
}
merge_totals() { # name a b
	name=$1 a=$2 b=$3
	totals "$a" >"$TMPD/ta"
	totals "$b" >"$TMPD/tb"
	sum_totals "$TMPD/want" "$TMPD/ta" "$TMPD/tb" 1
	if "$HEAPPROF" merge -o "$TMPD/m.gz" "$a" "$b" 2>"$TMPD/err" &&
		totals "$TMPD/m.gz" >"$TMPD/got" && [ -s "$TMPD/want" ] && cmp -s "$TMPD/want" "$TMPD/got"; then
		pass "$name"
	else
		fail "$name" "want $(tr '\n' ' ' <"$TMPD/want"), got $(tr '\n' ' ' <"$TMPD/got") $(head -c 200 "$TMPD/err")"
	fi
}
merge_totals merge_totals_go_heap_pair "$GOLD" "$GNEW"
merge_totals merge_totals_fastdelta_block_pair "$F/block.before.pprof" "$F/block.after.pprof"
# a single input: its totals unchanged
totals "$GNEW" >"$TMPD/want"
if "$HEAPPROF" merge -o "$TMPD/m.gz" "$GNEW" 2>"$TMPD/err" && totals "$TMPD/m.gz" >"$TMPD/got" &&
	[ -s "$TMPD/want" ] && cmp -s "$TMPD/want" "$TMPD/got"; then
	pass merge_totals_single_input
else
	fail merge_totals_single_input "want $(tr '\n' ' ' <"$TMPD/want"), got $(tr '\n' ' ' <"$TMPD/got")"
fi

# merge A A: totals twice A's; every sample of merge A doubled (same
# samples, same stacks), and the samples of --scale 2:A.
for f in "$G/go_cpu_labels.pb.gz" "$F/block.after.pprof" "$F/stress-failure.after.pprof" "$GNEW"; do
	tag=$(basename "$f" | sed 's/\.pb\.gz$//; s/\.pprof$//; s/[.-]/_/g')
	"$HEAPPROF" merge --raw -o "$TMPD/a.pb" "$f" 2>/dev/null
	"$HEAPPROF" merge --raw -o "$TMPD/aa.pb" "$f" "$f" 2>"$TMPD/err" ||
		fail "merge_self_doubled_$tag" "$(cat "$TMPD/err")"
	totals "$f" >"$TMPD/ta"
	sum_totals "$TMPD/want" "$TMPD/ta" "$TMPD/ta" 1
	totals "$TMPD/aa.pb" >"$TMPD/got"
	if [ -s "$TMPD/want" ] && cmp -s "$TMPD/want" "$TMPD/got"; then
		pass "merge_self_doubled_totals_$tag"
	else
		fail "merge_self_doubled_totals_$tag" "want $(tr '\n' ' ' <"$TMPD/want"), got $(tr '\n' ' ' <"$TMPD/got")"
	fi
	samples "$TMPD/a.pb" 2 >"$TMPD/s1"
	samples "$TMPD/aa.pb" 1 >"$TMPD/s2"
	if [ "$(grep -Ec '^ *-?[0-9]+( +-?[0-9]+)*:' "$TMPD/s1")" -gt 1 ] && cmp -s "$TMPD/s1" "$TMPD/s2"; then
		pass "merge_self_doubled_samples_$tag"
	else
		fail "merge_self_doubled_samples_$tag" "$(diff "$TMPD/s1" "$TMPD/s2" | head -4 | tr '\n' '|')"
	fi
	# (samples only: merge sums the durations, --scale keeps them)
	"$HEAPPROF" merge --raw -o "$TMPD/s.pb" --scale "2:$f" 2>/dev/null
	samples "$TMPD/s.pb" 1 >"$TMPD/s3"
	same_bytes "merge_scale_2_equals_self_merge_$tag" "$TMPD/s2" "$TMPD/s3"
	"$HEAPPROF" merge --raw -o "$TMPD/h.pb" --scale "0.5:$TMPD/aa.pb" 2>/dev/null
	samples "$TMPD/a.pb" 1 >"$TMPD/s1"
	samples "$TMPD/h.pb" 1 >"$TMPD/s3"
	same_bytes "merge_scale_half_of_self_merge_$tag" "$TMPD/s1" "$TMPD/s3"
done

# --base OLD NEW: NEW - OLD for every type (totals from the inputs); the
# same bytes as --scale -1:OLD as the last input, wherever --base is
# written; --base X X: no samples left.
for pair in "fastdelta_heap $OLD $NEW" "go_heap $GOLD $GNEW" \
	"fastdelta_block $F/block.before.pprof $F/block.after.pprof"; do
	set -- $pair
	tag=$1 o=$2 nw=$3
	"$HEAPPROF" merge --raw -o "$TMPD/b.pb" --base "$o" "$nw" 2>"$TMPD/err" ||
		fail "merge_base_$tag" "$(cat "$TMPD/err")"
	totals "$o" >"$TMPD/to"
	totals "$nw" >"$TMPD/tn"
	sum_totals "$TMPD/want" "$TMPD/tn" "$TMPD/to" -1
	totals "$TMPD/b.pb" >"$TMPD/got"
	if [ -s "$TMPD/want" ] && cmp -s "$TMPD/want" "$TMPD/got"; then
		pass "merge_base_totals_$tag"
	else
		fail "merge_base_totals_$tag" "want $(tr '\n' ' ' <"$TMPD/want"), got $(tr '\n' ' ' <"$TMPD/got")"
	fi
	"$HEAPPROF" merge --raw -o "$TMPD/s.pb" "$nw" --scale "-1:$o" 2>/dev/null
	same_bytes "merge_base_equals_scale_minus1_last_$tag" "$TMPD/b.pb" "$TMPD/s.pb"
	"$HEAPPROF" merge --raw -o "$TMPD/s.pb" "$nw" --base "$o" 2>/dev/null
	same_bytes "merge_base_position_free_$tag" "$TMPD/b.pb" "$TMPD/s.pb"
	# the subtracted types: delta's values are --base's (for NEW's stacks)
	if [ $HAVE_PY = 0 ]; then
		skip_tool "merge_base_vs_delta_$tag" python3
	else
		"$HEAPPROF" delta --raw "$o" "$nw" -o "$TMPD/d.pb" 2>/dev/null
		rawdump "$nw" >"$TMPD/new.raw"
		rawdump "$TMPD/b.pb" >"$TMPD/base.raw"
		rawdump "$TMPD/d.pb" >"$TMPD/d.raw"
		if python3 "$REPO/tests/oracle/delta_cmp.py" "$TMPD/new.raw" "$TMPD/base.raw" \
			"$TMPD/d.raw" alloc_objects,alloc_space,contentions,delay 2>"$TMPD/cmp"; then
			pass "merge_base_vs_delta_$tag"
		else
			fail "merge_base_vs_delta_$tag" "$(cat "$TMPD/cmp")"
		fi
	fi
done
"$HEAPPROF" merge --raw -o "$TMPD/z.pb" --base "$GNEW" "$GNEW" 2>/dev/null
samples "$TMPD/z.pb" 1 >"$TMPD/s"
if [ -s "$TMPD/s" ] && ! grep -Eq '^ *-?[0-9]+( +-?[0-9]+)*:' "$TMPD/s" && grep -q '^alloc_objects/count' "$TMPD/s"; then
	pass merge_base_self_no_samples
else
	fail merge_base_self_no_samples "$(head -5 "$TMPD/s" | tr '\n' '|')"
fi
exit $FAILED
