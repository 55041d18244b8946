#!/bin/sh
# In-process symbolization at dump time: HEAPPROF_SYMBOLIZE=dwarf gives
# file:line (and keeps the exact values), symtab (the default) function
# names only, none raw addresses; heapprof run --symbolize sets it.
. "$(dirname "$0")/lib.sh"
need_lib capture_symbolize
need_go capture_symbolize
oracle_tmpdir
for mode in dwarf symtab none; do
	if ! "$HEAPPROF" run -r 1 --symbolize $mode -o "$TMPD/$mode.pb.gz" -- "$PROG/prog_pattern" \
		>"$TMPD/$mode.exp" 2>"$TMPD/$mode.err"; then
		fail "symbolize.$mode.program" "$(head -3 "$TMPD/$mode.err")"
		continue
	fi
	go tool pprof -raw -symbolize=none "$TMPD/$mode.pb.gz" >"$TMPD/$mode.raw" 2>/dev/null
	case $mode in
	dwarf)
		# The leaf of site_malloc is a call in prog_pattern.c.
		if grep -q 'site_malloc .*prog_pattern\.c:[1-9][0-9]*' "$TMPD/$mode.raw"; then
			pass symbolize.dwarf.file_line
		else
			fail symbolize.dwarf.file_line "$(grep site_malloc "$TMPD/$mode.raw" | head -2)"
		fi
		$PROFSUM check symbolize.dwarf "$TMPD/$mode.exp" 0 "$TMPD/$mode.pb.gz" | grep -v '^PASS' && FAILED=1
		pass symbolize.dwarf.exact_values_kept ;;
	symtab)
		if grep -q 'site_malloc :0' "$TMPD/$mode.raw"; then pass symbolize.symtab.names_only
		else fail symbolize.symtab.names_only "$(grep site_malloc "$TMPD/$mode.raw" | head -2)"; fi ;;
	none)
		if grep -q 'site_malloc' "$TMPD/$mode.raw"; then fail symbolize.none.no_names
		else pass symbolize.none.no_names; fi ;;
	esac
done
exit $FAILED
