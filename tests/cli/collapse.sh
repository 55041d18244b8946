#!/bin/sh
# tests/cli/collapse.sh: `heapprof collapse` (folded stacks).
#  - corpus profiles, every sample type: the sum of the folded values equals
#    pprofcheck's total for that type, and `go tool pprof -top`'s total
#    where all values are >= 0;
#  - per stack: the folded lines equal those computed from `pprofcheck
#    samples` (pprof's canonical listing) by tests/cli/collapse_ref.py;
#  - inlined frames (several lines per location) are frames of their own;
#  - a profile without function names: hex addresses, same totals;
#  - folded lines parse: "name;...;name VALUE", no empty frame;
#  - -o writes the file whole, '-' is stdin/stdout; errors: a clear message,
#    a nonzero status and no output file.
# Prints PASS name / FAIL name / SKIP name: why.
. "$(dirname "$0")/../oracle/lib.sh"
oracle_need_heapprof collapse
oracle_tmpdir
export GOCACHE=${GOCACHE:-$REPO/build/gocache}

# ---- errors and options (no go needed)
"$HEAPPROF" collapse --help >"$TMPD/help" 2>&1 && grep -q 'usage: heapprof collapse' "$TMPD/help" &&
	pass collapse_help || fail collapse_help "--help"
"$HEAPPROF" --help | grep -q '^  collapse ' && pass collapse_listed || fail collapse_listed
err_case() { # name expected-status expected-stderr-regex args...
	name=$1 want=$2 re=$3
	shift 3
	"$HEAPPROF" collapse "$@" >"$TMPD/out" 2>"$TMPD/err"
	st=$?
	if [ "$st" -eq "$want" ] && grep -Eq -e "$re" "$TMPD/err" && [ ! -s "$TMPD/out" ]; then
		pass "$name"
	else
		fail "$name" "status $st, stderr: $(head -c 300 "$TMPD/err")"
	fi
}
head -c 3000 /dev/urandom >"$TMPD/garbage"
: >"$TMPD/empty"
err_case collapse_err_garbage 1 'collapse: .*garbage: ' "$TMPD/garbage"
err_case collapse_err_empty 1 'empty input' "$TMPD/empty"
err_case collapse_err_missing 1 'No such file' "$TMPD/nonexistent"
err_case collapse_err_option 2 "unknown option '--bogus'" --bogus x
err_case collapse_err_nofile 2 'usage: heapprof collapse'
err_case collapse_err_two_files 2 'one profile at a time' a b
err_case collapse_err_o_noarg 2 '-o needs a value' x -o
# no partial output file on a bad input
"$HEAPPROF" collapse -o "$TMPD/bad.folded" "$TMPD/garbage" 2>/dev/null
if [ ! -e "$TMPD/bad.folded" ] && [ -z "$(ls "$TMPD" | grep 'bad.folded')" ]; then
	pass collapse_no_partial_output
else
	fail collapse_no_partial_output "$(ls "$TMPD")"
fi
oracle_need_corpus collapse_corpus
G=$CORPUS/go/go_heap_basic.pb.gz
if [ -f "$G" ]; then
	# Legacy text (heapprof run --text) is read, as go tool pprof reads it.
	if "$HEAPPROF" collapse "$CORPUS/go/go_heap_basic.txt" >"$TMPD/lt" 2>"$TMPD/lterr" &&
		[ -s "$TMPD/lt" ]; then
		pass collapse_legacy_text
	else
		fail collapse_legacy_text "$(head -3 "$TMPD/lterr")"
	fi
	err_case collapse_err_sample_index 2 "unknown sample type 'nope'" --sample-index nope "$G"
	err_case collapse_err_sample_range 2 'outside the range \[0\.\.3\]' --sample-index 4 "$G"
	"$HEAPPROF" collapse "$G" >"$TMPD/a" 2>&1
	"$HEAPPROF" collapse -o "$TMPD/b" - <"$G" 2>&1
	"$HEAPPROF" collapse --sample-index inuse_space -o - "$G" >"$TMPD/c" 2>&1
	if [ -s "$TMPD/a" ] && cmp -s "$TMPD/a" "$TMPD/b" && cmp -s "$TMPD/a" "$TMPD/c"; then
		pass collapse_stdin_stdout_file
	else
		fail collapse_stdin_stdout_file "outputs differ"
	fi
	# every line: frames separated by ';', none empty, then one integer
	if grep -Evq '^[^;]+(;[^;]+)* -?[0-9]+$' "$TMPD/a"; then
		fail collapse_line_syntax "$(grep -Ev '^[^;]+(;[^;]+)* -?[0-9]+$' "$TMPD/a" | head -3)"
	else
		pass collapse_line_syntax
	fi
	if [ "$(cut -d' ' -f1 "$TMPD/a" | sort | uniq -d | wc -l)" -eq 0 ] &&
		[ "$(LC_ALL=C sort "$TMPD/a" | cmp - "$TMPD/a" >/dev/null; echo $?)" -le 1 ]; then
		pass collapse_one_line_per_stack
	else
		fail collapse_one_line_per_stack "duplicate stacks"
	fi
fi

oracle_need_go collapse_vs_pprof
sum_folded() { awk '{ s += $NF } END { printf "%.0f\n", s }' "$1"; }
abs_folded() { awk '{ v = $NF; if (v < 0) v = -v; s += v } END { printf "%.0f\n", s }' "$1"; }
check_profile() { # name file
	name=$1 f=$2
	if ! "$PPROFCHECK" totals "$f" >"$TMPD/tot" 2>"$TMPD/perr"; then
		skip "$name" "pprofcheck cannot read it: $(head -c 200 "$TMPD/perr")"
		return
	fi
	"$PPROFCHECK" samples "$f" >"$TMPD/samples"
	i=0
	grep -v '^samples ' "$TMPD/tot" | while read -r tu want; do
		t=${tu%%/*} u=${tu#*/}
		n="${name}_$t"
		if ! "$HEAPPROF" collapse --sample-index "$i" "$f" >"$TMPD/h" 2>"$TMPD/herr"; then
			fail "$n" "collapse failed: $(head -c 300 "$TMPD/herr")"
			i=$((i + 1))
			continue
		fi
		got=$(sum_folded "$TMPD/h")
		[ "$got" = "$want" ] && pass "${n}_total" ||
			fail "${n}_total" "folded sum $got, pprofcheck $want"
		# go tool pprof -top's total (the sum of |values|) when none is < 0
		if ! awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^-[0-9]/) exit 1 }' \
			"$TMPD/samples"; then
			:
		else
			case $u in
			nanoseconds) unit=ns ;;
			*) unit=B ;;
			esac
			pt=$(go tool pprof -top -sample_index="$i" -unit=$unit "$f" 2>/dev/null |
				sed -n 's/^Showing nodes accounting for .* of \([0-9]*\)[a-zA-Z]* total$/\1/p')
			if [ -z "$pt" ]; then
				skip "${n}_pprof_top" "no total line from go tool pprof -top"
			elif [ "$pt" = "$(abs_folded "$TMPD/h")" ]; then
				pass "${n}_pprof_top"
			else
				fail "${n}_pprof_top" "folded $(abs_folded "$TMPD/h"), pprof -top $pt"
			fi
		fi
		python3 "$REPO/tests/cli/collapse_ref.py" "$i" <"$TMPD/samples" >"$TMPD/ref"
		rc=$?
		if [ $rc -eq 3 ]; then
			skip "${n}_stacks" "locations without lines"
		elif [ $rc -ne 0 ]; then
			fail "${n}_stacks" "collapse_ref.py failed"
		else
			LC_ALL=C sort "$TMPD/ref" >"$TMPD/ref.s"
			LC_ALL=C sort "$TMPD/h" >"$TMPD/h.s"
			if [ -s "$TMPD/h.s" ] || [ "$want" = 0 ]; then
				same_output "${n}_stacks" "$TMPD/h.s" "$TMPD/ref.s"
			else
				fail "${n}_stacks" "no output"
			fi
		fi
		i=$((i + 1))
	done
}
for rel in go/go_heap_basic.pb.gz go/go_heap_rate1.pb.gz go/go_allocs_basic.pb.gz \
	go/go_heap_delta_2_minus_1.cli.pb.gz go/go_cpu_labels.pb.gz \
	go/go_goroutine_labels.pb.gz fastdelta/heap.pprof fastdelta/big-heap.pprof \
	fastdelta/block.after.pprof pprof_testdata/internal_driver/go.nomappings.crash; do
	f=$CORPUS/$rel
	base=$(basename "$rel" | sed 's/\.pb\.gz$//; s/\.pprof$//; s/\./_/g')
	if [ -f "$f" ]; then
		check_profile "collapse_$base" "$f"
	else
		skip_corpus "collapse_$base" "$rel"
	fi
done
