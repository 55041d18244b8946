#!/bin/sh
# tests/cli/top.sh: `heapprof top` against `go tool pprof -top`.
#  - corpus profiles (Go heap/allocs/cpu, pprof's own delta with negative
#    values, fastdelta's uncompressed protos): the "... of TOTAL total" line
#    must match for every sample type, and so must the whole output;
#  - -n N against -nodecount=N;
#  - a profile with no function data over a real binary (build/heapprof):
#    names must come from its ELF symbols (global and local) and the output
#    must equal pprof's, which symbolizes from the same file;
#  - legacy text: read as pprof reads it (the same output);
#  - garbage, bad options: a clear error and a nonzero status.
# Prints PASS name / FAIL name / SKIP name: why.
# REPO, CORPUS, HEAPPROF, pass/fail/skip/skip_tool/skip_corpus
. "$(dirname "$0")/../oracle/lib.sh"
export GOCACHE=${GOCACHE:-$REPO/build/gocache}
export GOFLAGS=-mod=mod
oracle_need_corpus top_corpus

if [ ! -x "$HEAPPROF" ]; then
	fail top_binary "$HEAPPROF not built (run make)"
	exit 1
fi
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT

# ---- errors: no go needed
"$HEAPPROF" top --help >"$TMPD/help" 2>&1 && grep -q 'usage: heapprof top' "$TMPD/help" &&
	pass top_help || fail top_help "--help"
err_case() { # name expected-status expected-stderr-regex args...
	name=$1 want=$2 re=$3
	shift 3
	"$HEAPPROF" top "$@" >"$TMPD/out" 2>"$TMPD/err"
	st=$?
	if [ "$st" -eq "$want" ] && grep -Eq "$re" "$TMPD/err" && [ ! -s "$TMPD/out" ]; then
		pass "$name"
	else
		fail "$name" "status $st, stderr: $(head -c 300 "$TMPD/err")"
	fi
}
head -c 3000 /dev/urandom >"$TMPD/garbage"
: >"$TMPD/empty"
err_case top_err_garbage 1 'top: .*garbage: ' "$TMPD/garbage"
err_case top_err_empty 1 'empty input' "$TMPD/empty"
err_case top_err_missing 1 'No such file' "$TMPD/nonexistent"
err_case top_err_option 2 "unknown option '--bogus'" --bogus x
err_case top_err_count 2 'positive count' -n 0 x
err_case top_err_nofile 2 'usage: heapprof top' 
if [ -d "$CORPUS/go" ]; then
	gzip -c "$CORPUS/go/go_heap_basic.txt" >"$TMPD/text.gz"
	err_case top_err_sample_index 2 "unknown sample type 'nope'" --sample-index nope "$CORPUS/go/go_heap_basic.pb.gz"
	err_case top_err_sample_range 2 'outside the range \[0\.\.3\]' --sample-index 4 "$CORPUS/go/go_heap_basic.pb.gz"
fi

if ! command -v go >/dev/null 2>&1; then
	skip_tool top_vs_pprof go golang-go
	exit $FAILED
fi
mkdir -p "$GOCACHE"

# ---- corpus: totals and whole output, every sample type
total_line() { grep -m1 '^Showing nodes accounting for' "$1"; }
sample_types() { # the sample type names of a profile, per go tool pprof -raw
	go tool pprof -raw "$1" 2>/dev/null | sed -n '/^Samples:/{n;p;q}' |
		tr -s ' ' '\n' | sed 's/\[dflt\]//; s|/.*||' | grep .
}
compare() { # name file heapprof-args -- pprof-args
	name=$1 file=$2
	shift 2
	hargs=
	while [ "$1" != "--" ]; do hargs="$hargs $1"; shift; done
	shift
	# shellcheck disable=SC2086
	"$HEAPPROF" top $hargs "$file" >"$TMPD/h" 2>"$TMPD/herr"
	hs=$?
	go tool pprof -top "$@" "$file" >"$TMPD/p" 2>"$TMPD/perr"
	ps=$?
	if [ $ps -ne 0 ]; then
		skip "$name" "go tool pprof failed: $(head -c 200 "$TMPD/perr")"
		return
	fi
	if [ $hs -ne 0 ]; then
		fail "$name" "heapprof top failed: $(head -c 300 "$TMPD/herr")"
		return
	fi
	ht=$(total_line "$TMPD/h") pt=$(total_line "$TMPD/p")
	if [ -n "$pt" ] && [ "$ht" = "$pt" ]; then
		pass "${name}_total"
	else
		fail "${name}_total" "heapprof: '$ht' pprof: '$pt'"
	fi
	if cmp -s "$TMPD/h" "$TMPD/p"; then
		pass "${name}_output"
	else
		fail "${name}_output" "$(diff "$TMPD/h" "$TMPD/p" | head -6 | tr '\n' '|')"
	fi
}
found=0
for rel in go/go_heap_basic.pb.gz go/go_heap_rate1.pb.gz go/go_allocs_basic.pb.gz \
	go/go_heap_delta_1.pb.gz go/go_heap_delta_2_minus_1.cli.pb.gz \
	go/go_cpu_labels.pb.gz fastdelta/heap.pprof fastdelta/big-heap.pprof \
	fastdelta/stress-failure.after.pprof; do
	f=$CORPUS/$rel
	base=$(basename "$rel" | sed 's/\..*//')
	if [ ! -f "$f" ]; then
		skip_corpus "top_$base" "$rel"
		continue
	fi
	found=1
	compare "top_${base}_default" "$f" --
	for t in $(sample_types "$f"); do
		compare "top_${base}_$t" "$f" --sample-index "$t" -- -sample_index="$t"
	done
done
if [ $found = 1 ] && [ -f "$CORPUS/go/go_heap_basic.pb.gz" ]; then
	f=$CORPUS/go/go_heap_basic.pb.gz
	compare top_go_heap_basic_index1 "$f" --sample-index 1 -- -sample_index=1
	for n in 1 3; do
		compare "top_go_heap_basic_n$n" "$f" -n "$n" -- -nodecount="$n"
	done
fi
if [ -f "$CORPUS/fastdelta/big-heap.pprof" ]; then
	compare top_big_heap_n50 "$CORPUS/fastdelta/big-heap.pprof" -n 50 -- -nodecount=50
fi
# Legacy text (as heapprof run --text writes it), plain and gzip'd: read
# as pprof reads it (issue 14: top used to refuse it).
if [ -f "$CORPUS/go/go_heap_basic.txt" ]; then
	compare top_legacy_text "$CORPUS/go/go_heap_basic.txt" --
	compare top_legacy_text_gz "$TMPD/text.gz" --
fi
# --base (a diff) and --focus, against pprof's -base and -focus.
if [ -f "$CORPUS/go/go_heap_delta_2.pb.gz" ]; then
	f=$CORPUS/go/go_heap_delta_2.pb.gz
	b=$CORPUS/go/go_heap_delta_1.pb.gz
	compare top_base_go_delta "$f" --base "$b" -- -base "$b"
	compare top_base_go_delta_alloc "$f" --base "$b" --sample-index alloc_space -- -base "$b" -sample_index=alloc_space
	compare top_focus_main "$f" --focus 'main\.' -- -focus 'main\.'
	compare top_focus_alternation "$f" --focus 'Large|runtime' --sample-index alloc_objects -- -focus 'Large|runtime' -sample_index=alloc_objects
	compare top_focus_nothing "$f" --focus zzz_no_such_fn -- -focus zzz_no_such_fn
fi
if "$HEAPPROF" top --focus '(' "$CORPUS/go/go_heap_basic.pb.gz" >/dev/null 2>&1; then
	fail top_focus_bad_regex "accepted '('"
else
	pass top_focus_bad_regex
fi
if "$HEAPPROF" top --base /nonexistent "$CORPUS/go/go_heap_basic.pb.gz" >/dev/null 2>&1; then
	fail top_base_missing "accepted a missing base"
else
	pass top_base_missing
fi

# ---- symbols from ELF: a profile without functions over build/heapprof
if ! command -v python3 >/dev/null 2>&1 || ! command -v nm >/dev/null 2>&1 ||
	! command -v readelf >/dev/null 2>&1; then
	skip_tool top_elf_symbols "python3, nm or readelf" "python3 binutils"
	exit $FAILED
fi
BIN=$HEAPPROF
nm "$BIN" >"$TMPD/nm" 2>/dev/null
readelf -hlW "$BIN" >"$TMPD/re" 2>/dev/null
python3 - "$BIN" "$TMPD/nm" "$TMPD/re" "$TMPD/elf.pb" <<'EOF'
import sys, struct
binpath, nmf, ref, out = sys.argv[1:5]
syms = {}
for line in open(nmf):
    p = line.split()
    if len(p) == 3 and p[1] in 'tT':
        syms[p[2]] = int(p[0], 16)
pie = False
seg = None
for line in open(ref):
    if 'Type:' in line and 'DYN' in line:
        pie = True
    p = line.split()
    if p and p[0] == 'LOAD' and 'E' in p[6:-1]:
        seg = (int(p[1], 16), int(p[2], 16), int(p[5], 16))
base = 0x555555554000 if pie else 0
off, vaddr, memsz = seg
start = base + (vaddr & ~0xfff)
limit = base + vaddr + memsz
moff = off & ~0xfff
def varint(v):
    b = bytearray()
    while True:
        x = v & 0x7f
        v >>= 7
        if v:
            b.append(x | 0x80)
        else:
            b.append(x)
            return bytes(b)
def key(f, w): return varint(f << 3 | w)
def vi(f, v): return key(f, 0) + varint(v)
def ld(f, b): return key(f, 2) + varint(len(b)) + b
def packed(f, vs): return ld(f, b''.join(varint(v & (2**64 - 1)) for v in vs))
strs = ['', 'inuse_space', 'bytes', 'space', binpath]
msg = ld(1, vi(1, 1) + vi(2, 2))
names = ['cli_top', 'cli_merge', 'cli_err', 'cli_out_open']
locs = {n: i + 1 for i, n in enumerate(names)}
stacks = [(['cli_err', 'cli_top', 'cli_merge'], 3000000),
          (['cli_top', 'cli_merge'], 1000000),
          (['cli_out_open', 'cli_top', 'cli_merge'], 500000)]
for st, v in stacks:
    msg += ld(2, packed(1, [locs[n] for n in st]) + packed(2, [v]))
msg += ld(3, vi(1, 1) + vi(2, start) + vi(3, limit) + vi(4, moff) + vi(5, 4))
for n in names:
    msg += ld(4, vi(1, locs[n]) + vi(2, 1) + vi(3, base + syms[n] + 3))
for s in strs:
    msg += ld(6, s.encode())
msg += ld(11, vi(1, 3) + vi(2, 2)) + vi(12, 524288)
open(out, 'wb').write(msg)
EOF
if [ ! -s "$TMPD/elf.pb" ]; then
	fail top_elf_symbols "could not build the test profile"
	exit 1
fi
"$HEAPPROF" top "$TMPD/elf.pb" >"$TMPD/h" 2>"$TMPD/herr"
ok=1
for fn in cli_top cli_merge cli_err cli_out_open; do
	grep -Eq " $fn\$" "$TMPD/h" || ok=0
done
grep -q '^ 2929.69kB 66.67% 66.67%  2929.69kB 66.67%  cli_err$' "$TMPD/h" || ok=0
[ $ok = 1 ] && pass top_elf_symbols || fail top_elf_symbols "$(cat "$TMPD/h" "$TMPD/herr" | tr '\n' '|')"
go tool pprof -top "$TMPD/elf.pb" >"$TMPD/p" 2>"$TMPD/perr"
if grep -q ' cli_top$' "$TMPD/p"; then
	# pprof symbolizes from the same binary: the whole output must agree.
	if cmp -s "$TMPD/h" "$TMPD/p"; then
		pass top_elf_symbols_vs_pprof
	else
		fail top_elf_symbols_vs_pprof "$(diff "$TMPD/h" "$TMPD/p" | head -8 | tr '\n' '|')"
	fi
else
	skip top_elf_symbols_vs_pprof "go tool pprof did not symbolize $BIN"
fi
exit $FAILED
