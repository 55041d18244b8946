#!/bin/sh
# tests/cli/help_usage.sh: each subcommand's --help usage lines (up to the
# first blank line) name every long option the subcommand accepts, so the
# usage cannot drift from the code again (issue 30, item 8: `top --help`
# left out --base and --focus). The options are read from the code: the
# "--name" literals of cli/cmd_CMD.c (pprof's underscore spellings such
# as --sample_index are aliases and left out), plus --hide and
# --no-default-hide where the command calls cli_hide_option.
#   help_usage.CMD   for top collapse flame convert delta merge symbolize run
# Prints PASS name / FAIL name.
REPO=$(cd "$(dirname "$0")/../.." && pwd)
HEAPPROF=$REPO/build/heapprof
FAILED=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1"; [ -n "$2" ] && echo "  $1: $2" >&2; FAILED=1; }
[ -x "$HEAPPROF" ] || { fail help_usage "$HEAPPROF not built (run make)"; exit 1; }
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
for cmd in top collapse flame convert delta merge symbolize run; do
	src=$REPO/cli/cmd_$cmd.c
	opts=$(grep -o '"--[a-z][a-z0-9-]*=\{0,1\}"' "$src" | tr -d '"=' | grep -vx -- '--help' | sort -u)
	grep -q cli_hide_option "$src" && opts="$opts --hide --no-default-hide"
	"$HEAPPROF" "$cmd" --help >"$T/help" 2>&1
	awk 'NF == 0 { exit } { print }' "$T/help" >"$T/usage"
	missing=""
	for o in $opts; do
		grep -Eq -- "(^|[^a-z-])$o([^a-z0-9-]|\$)" "$T/usage" || missing="$missing $o"
	done
	if [ -s "$T/usage" ] && [ -z "$missing" ]; then
		pass help_usage.$cmd
	else
		fail help_usage.$cmd "usage line lacks:$missing"
	fi
done
exit $FAILED
