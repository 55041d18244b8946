#!/bin/sh
# convert.sh: oracle tests of `heapprof convert` on the shared corpus.
#
#  1. Every legacy heap text in the corpus (any file whose first line is a
#     `heap profile:` header: go/*.txt, gperftools/*.heap, pprof_testdata
#     *.heap and *.growth) converted to profile.proto agrees with pprof's own
#     reading of the text (tests/oracle/pprofcheck, Debian's google/pprof):
#     totals per sample type, the canonical per-stack listing (`samples`),
#     and the full structural dump (ids, mappings, drop/keep frames). A
#     numeric label of 0 cannot live in profile.proto (pprof drops it on
#     decode, its own writer loses it too), so `"bytes"#[0]` is removed from
#     pprof's side first. Other legacy files (CPU, contention, thread, Java)
#     are not heap profiles: SKIP. `go tool pprof -raw -symbolize=none`
#     prints the same listing for the text and for our proto.
#  2. The jemalloc dump agrees with `jeprof --text --show_bytes` totals for
#     all four types, within one unit per sample (jeprof keeps the
#     unsampled values as floating point; we truncate each).
#  3. pprof heap profiles -> legacy text -> `go tool pprof`'s parser: the
#     same totals per sample type and the same values per stack (stacks by
#     absolute address), and jeprof reads the same totals from that text.
#  4. gzip'd and stdin input, stdout output, errors (bad lines with their
#     line number, non-heap proto to text), no partial output file.
#  5. Differential: mutated copies of fuzz/corpus/legacy are accepted or
#     rejected as pprof does, with identical dumps when accepted.
. "$(dirname "$0")/lib.sh"
oracle_need_corpus convert_oracle
oracle_need_heapprof convert_oracle
oracle_need_go convert_oracle
oracle_tmpdir

first_line() { head -c 4096 "$1" | head -n 1; }
gopprof() {
	HOME=$TMPD GOCACHE=$REPO/build/gocache go tool pprof "$@" 2>/dev/null
}
# pprof keeps a numeric label of 0 in memory but profile.proto cannot carry
# it (decoders drop it): remove it from listings of pprof's own parse.
norm0() { sed 's/"bytes"#\[0\]\[\]//; s/,}/}/; s/{,/{/'; }

# ---------------------------------------------------------- 1. legacy text
for f in $(find "$CORPUS" -type f | sort); do
	case $f in *.string|*LICENSE|*SOURCE|*README.md) continue ;; esac
	name=convert_legacy_$(basename "$f")
	hdr=$(first_line "$f" | tr -d '\0')
	case $hdr in
	*"heap profile:"*) ;;
	*)
		# pprof_testdata also holds other legacy kinds (CPU, contention,
		# thread, Java heapz); the rest of the corpus is profile.proto.
		case $f in */pprof_testdata/*)
			skip "$name" "legacy profile of another kind (not heap text)" ;;
		esac
		continue ;;
	esac
	if ! "$HEAPPROF" convert "$f" --raw -o "$TMPD/o.pb" 2>"$TMPD/err"; then
		fail "$name" "convert failed: $(cat "$TMPD/err")"
		continue
	fi
	ok=1
	for what in totals samples dump; do
		"$PPROFCHECK" $what "$f" 2>&1 | norm0 >"$TMPD/theirs"
		"$PPROFCHECK" $what "$TMPD/o.pb" >"$TMPD/ours" 2>&1
		if ! cmp -s "$TMPD/theirs" "$TMPD/ours"; then
			fail "$name" "$what differs from pprof's reading of the text"
			diff "$TMPD/theirs" "$TMPD/ours" | head -6 >&2
			ok=0
			break
		fi
	done
	# And `go tool pprof` itself (Go's vendored pprof) prints the same
	# raw listing for the text and for our proto.
	if [ $ok = 1 ] && command -v go >/dev/null 2>&1; then
		gopprof -raw -symbolize=none "$f" | grep -v '^Time:' |
			grep -Ev '^[[:space:]]+bytes:\[0\]$' >"$TMPD/theirs"
		gopprof -raw -symbolize=none "$TMPD/o.pb" | grep -v '^Time:' >"$TMPD/ours"
		if ! [ -s "$TMPD/ours" ] || ! cmp -s "$TMPD/theirs" "$TMPD/ours"; then
			fail "$name" "go tool pprof -raw differs between the text and our proto"
			diff "$TMPD/theirs" "$TMPD/ours" | head -6 >&2
			ok=0
		fi
	fi
	[ $ok = 1 ] && pass "$name"
done

# gzip'd legacy input, from stdin, to stdout: the same profile.
G=$CORPUS/gperftools/gperf_api.0002.heap
if gzip -c "$G" | "$HEAPPROF" convert - --raw -o - >"$TMPD/z.pb" 2>"$TMPD/err" &&
	"$HEAPPROF" convert "$G" --raw -o "$TMPD/p.pb" && cmp -s "$TMPD/z.pb" "$TMPD/p.pb"; then
	pass convert_gzip_stdin_stdout
else
	fail convert_gzip_stdin_stdout "$(cat "$TMPD/err")"
fi
# The default output is gzip'd and reads the same.
if "$HEAPPROF" convert "$G" -o "$TMPD/p.pb.gz" && [ "$(head -c 2 "$TMPD/p.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] &&
	"$PPROFCHECK" dump "$TMPD/p.pb.gz" >"$TMPD/a" && "$PPROFCHECK" dump "$TMPD/p.pb" >"$TMPD/b" &&
	cmp -s "$TMPD/a" "$TMPD/b"; then
	pass convert_default_gzip
else
	fail convert_default_gzip
fi

# ------------------------------------------------------------- 2. jemalloc
for f in "$CORPUS"/jemalloc/*; do
	name=convert_jemalloc_$(basename "$f")
	if ! command -v jeprof >/dev/null 2>&1; then
		skip_tool "$name" jeprof libjemalloc-dev
		continue
	fi
	if ! "$HEAPPROF" convert "$f" --raw -o "$TMPD/je.pb" 2>"$TMPD/err"; then
		fail "$name" "convert failed: $(cat "$TMPD/err")"
		continue
	fi
	"$PPROFCHECK" totals "$TMPD/je.pb" >"$TMPD/tot"
	nsamples=$(awk '$1=="samples"{print $2}' "$TMPD/tot")
	ok=1
	for t in inuse_space inuse_objects alloc_space alloc_objects; do
		theirs=$(jeprof --text --show_bytes --$t /bin/true "$f" 2>/dev/null |
			awk '/^Total:/{print $2}')
		# Two types (objects, space) when the dump has no separate
		# allocation numbers: those are the in-use pair.
		ours=$(awk -v t=$t '
			{ split($1, a, "/") }
			a[1]==t { v=$2 }
			a[1]=="space" && t ~ /_space$/ && v=="" { v=$2 }
			a[1]=="objects" && t ~ /_objects$/ && v=="" { v=$2 }
			END { print v }' "$TMPD/tot")
		if [ -z "$theirs" ] || [ -z "$ours" ]; then
			fail "$name" "$t: no total (jeprof '$theirs', ours '$ours')"
			ok=0
			continue
		fi
		d=$((theirs - ours))
		if [ $d -lt 0 ] || [ $d -gt $((nsamples + 1)) ]; then
			fail "$name" "$t: jeprof $theirs, ours $ours"
			ok=0
		fi
	done
	[ $ok = 1 ] && pass "$name"
done

# -------------------------------------------------- 3. pprof -> legacy text
for f in "$CORPUS"/go/go_heap_*.pb.gz "$CORPUS"/go/go_allocs_basic.pb.gz \
	"$CORPUS"/fastdelta/heap.pprof "$CORPUS"/fastdelta/big-heap.pprof \
	"$CORPUS"/fastdelta/heap.before.pprof "$CORPUS"/fastdelta/heap.after.pprof; do
	[ -f "$f" ] || continue
	name=convert_to_text_$(basename "$f")
	if ! "$HEAPPROF" convert "$f" -o "$TMPD/t.txt" 2>"$TMPD/err"; then
		fail "$name" "convert failed: $(cat "$TMPD/err")"
		continue
	fi
	"$PPROFCHECK" totals "$f" >"$TMPD/a"
	"$PPROFCHECK" totals "$TMPD/t.txt" >"$TMPD/b" 2>&1
	if ! cmp -s "$TMPD/a" "$TMPD/b"; then
		fail "$name" "totals differ after go tool pprof reads the text"
		diff "$TMPD/a" "$TMPD/b" | head -6 >&2
		continue
	fi
	"$PPROFCHECK" dump "$f" >"$TMPD/da"
	"$PPROFCHECK" dump "$TMPD/t.txt" >"$TMPD/db"
	python3 "$REPO/tests/oracle/convert_stacks.py" "$TMPD/da" >"$TMPD/a"
	python3 "$REPO/tests/oracle/convert_stacks.py" "$TMPD/db" >"$TMPD/b"
	if ! cmp -s "$TMPD/a" "$TMPD/b"; then
		fail "$name" "values per stack differ after the round trip"
		diff "$TMPD/a" "$TMPD/b" | head -6 >&2
		continue
	fi
	# And back to profile.proto with our reader: pprof's reading again.
	"$HEAPPROF" convert "$TMPD/t.txt" --raw -o "$TMPD/back.pb" &&
		"$PPROFCHECK" dump "$TMPD/back.pb" >"$TMPD/dc" &&
		norm0 <"$TMPD/db" | cmp -s - "$TMPD/dc" || {
		fail "$name" "text read back by heapprof differs from pprof's reading"
		continue
	}
	pass "$name"
done

# jeprof reads the text with the same totals (heapprofile: no scaling).
f=$CORPUS/go/go_heap_basic.pb.gz
if command -v jeprof >/dev/null 2>&1 && [ -f "$f" ]; then
	"$HEAPPROF" convert "$f" -o "$TMPD/t.txt"
	ours=$("$PPROFCHECK" totals "$f" | awk '$1=="inuse_space/bytes"{print $2}')
	theirs=$(jeprof --text --show_bytes --inuse_space /bin/true "$TMPD/t.txt" 2>/dev/null |
		awk '/^Total:/{print $2}')
	if [ "$ours" = "$theirs" ]; then
		pass convert_to_text_jeprof_totals
	else
		fail convert_to_text_jeprof_totals "jeprof $theirs, pprof proto $ours"
	fi
else
	skip_tool convert_to_text_jeprof_totals jeprof libjemalloc-dev
fi

# ------------------------------------------ 5. differential, mutated text
# Mutated copies of the fuzz seeds: whenever pprof accepts one, we accept it
# with the same dump; whenever pprof rejects one, so do we.
mkdir -p "$TMPD/mut"
python3 "$REPO/tests/oracle/convert_mutate.py" 11 ${CONVERT_MUTANTS:-150} \
	"$REPO/fuzz/corpus/legacy" "$TMPD/mut"
nm=0 nacc=0 nbad=0
for f in "$TMPD"/mut/m*; do
	nm=$((nm + 1))
	pa=0 oa=0
	"$PPROFCHECK" dump "$f" >"$TMPD/a" 2>/dev/null && pa=1
	"$HEAPPROF" convert "$f" --raw -o "$TMPD/o.pb" 2>/dev/null && oa=1
	if [ $pa != $oa ]; then
		nbad=$((nbad + 1))
		echo "  $(basename "$f"): pprof accepts=$pa, heapprof accepts=$oa" >&2
	elif [ $pa = 1 ]; then
		nacc=$((nacc + 1))
		"$PPROFCHECK" dump "$TMPD/o.pb" >"$TMPD/b"
		if ! norm0 <"$TMPD/a" | cmp -s - "$TMPD/b"; then
			nbad=$((nbad + 1))
			echo "  $(basename "$f"): dump differs" >&2
		fi
	fi
done
if [ $nbad = 0 ]; then
	pass "convert_differential_mutants ($nm inputs, $nacc accepted)"
else
	fail convert_differential_mutants "$nbad of $nm disagree with pprof"
fi

# ---------------------------------------------------------------- 4. errors
bad() { # NAME EXPECTED-MESSAGE-PART INPUT-TEXT [ARGS]
	name=$1 want=$2 text=$3
	shift 3
	printf '%b' "$text" >"$TMPD/bad.txt"
	rm -f "$TMPD/bad.out"
	if "$HEAPPROF" convert "$TMPD/bad.txt" -o "$TMPD/bad.out" "$@" 2>"$TMPD/err"; then
		fail "$name" "accepted bad input"
	elif [ -e "$TMPD/bad.out" ] || ls "$TMPD"/bad.out.tmp.* >/dev/null 2>&1; then
		fail "$name" "left an output file"
	elif ! grep -q -- "$want" "$TMPD/err"; then
		fail "$name" "message: $(cat "$TMPD/err") (wanted '$want')"
	else
		pass "$name"
	fi
}
H='heap profile: 1: 1024 [ 3: 3072] @ heap_v2/524288\n'
bad convert_err_bad_line "bad.txt:3: malformed sample" "${H}1: 1024 [3: 3072] @ 0x401147\nnot a sample\n"
bad convert_err_zero_count "bad.txt:2: .*count of 0" "${H}0: 1024 [3: 3072] @ 0x401147\n"
bad convert_err_long_address "bad.txt:2: .*64 bits" "${H}1: 1024 [3: 3072] @ 0x10000000000000000\n"
bad convert_err_unknown_sampler "not a legacy heap profile" 'heap profile: 1: 1 [1: 1] @ heapz/2\n'
bad convert_err_not_profile "neither profile.proto" 'hello\n'
bad convert_err_empty "empty input" ''
bad convert_err_jemalloc_line "bad.txt:3: malformed jemalloc" 'heap_v2/524288\n  t*: 1: 8 [1: 8]\n@ 0xzz\n'
"$HEAPPROF" convert "$CORPUS/go/go_cpu_labels.pb.gz" -o "$TMPD/cpu.txt" 2>"$TMPD/err"
if [ $? -ne 0 ] && grep -q "not a heap profile" "$TMPD/err" && [ ! -e "$TMPD/cpu.txt" ]; then
	pass convert_err_cpu_to_text
else
	fail convert_err_cpu_to_text "$(cat "$TMPD/err")"
fi
if "$HEAPPROF" convert --help | grep -q "usage: heapprof convert" &&
	! "$HEAPPROF" convert 2>/dev/null && ! "$HEAPPROF" convert a b 2>/dev/null &&
	! "$HEAPPROF" convert --to json "$G" 2>/dev/null; then
	pass convert_usage
else
	fail convert_usage
fi
exit $FAILED
