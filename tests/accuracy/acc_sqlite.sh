#!/bin/sh
# sqlite3 (Debian's CLI) building a table of N rows in an in-memory
# database, then deleting a third of them.
#   rate 1: heapprof against heaptrack (calls, bytes, bytes leaked at
#     exit; allowances in acc.py's ALLOW);
#   default rate, RUNS runs: after the inserts the script runs
#     `.system curl` on the endpoint, so the scrape is taken while the
#     CLI waits, right after `.stats on` printed sqlite's own
#     "Memory Used" (sqlite3_status(SQLITE_STATUS_MEMORY_USED)); the mean
#     in-use estimate must be within 3 standard errors of it, plus 2%:
#     sqlite counts the sizes it asked for rounded to 8, plus its own
#     size header where it keeps one, and the CLI's own allocations are
#     heap too (+0.3% at rate 1, ACCURACY.md). And the mean alloc_space of
#     the exit profiles within 3 standard errors of heaptrack's total
#     bytes (the program is deterministic: every run allocates the same).
. "$(dirname "$0")/lib.sh"
need_base acc.sqlite
need_tool acc.sqlite sqlite3
need_tool acc.sqlite curl
oracle_tmpdir
ROWS=$(by_tier 100000 300000)
RUNS=$(by_tier 10 40)

sql() {
	# $1: "" or a URL to scrape after the inserts
	echo ".stats on"
	echo "CREATE TABLE t(id INTEGER PRIMARY KEY, name TEXT, v BLOB);"
	echo "WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i+1 FROM c WHERE i < $ROWS)"
	echo "INSERT INTO t SELECT i, printf('name-%08d', i), zeroblob(100) FROM c;"
	[ -n "$1" ] && echo ".system curl -sf -o $TMPD/scrape.pb.gz $1"
	echo ".stats off"
	echo "DELETE FROM t WHERE id % 3 = 0;"
	echo "SELECT count(*), sum(length(v)) FROM t;"
}
sql "" >"$TMPD/plain.sql"

# Rate 1 against heaptrack.
t_run acc.sqlite.heaptrack 300 heaptrack -o "$TMPD/ht" sqlite3 :memory: \
	<"$TMPD/plain.sql" >"$TMPD/ht.out" 2>&1 || exit 1
t_run acc.sqlite.rate1 300 env LD_PRELOAD="$LIB" HEAPPROF_RATE=1 \
	HEAPPROF_OUT="$TMPD/r1.pb.gz" sqlite3 :memory: <"$TMPD/plain.sql" >"$TMPD/r1.out" 2>&1 || exit 1
htf=$(ht_file "$TMPD/ht") || { fail acc.sqlite.heaptrack "no data file: $(tail -3 "$TMPD/ht.out")"; exit 1; }
[ -s "$TMPD/r1.pb.gz" ] || { fail acc.sqlite.rate1 "no profile (exit $RC): $(tail -3 "$TMPD/r1.out")"; exit 1; }
$ACC vsht acc.sqlite.rate1 "$htf" "$TMPD/r1.pb.gz" || FAILED=1
total=$($ACC ht "$htf" | awk '{ print $4 }')

# Default rate against sqlite's own "Memory Used".
: >"$TMPD/est"; : >"$TMPD/truth"; : >"$TMPD/alloc"
i=0
while [ $i -lt "$RUNS" ]; do
	i=$((i + 1))
	port=$(free_port)
	rm -f "$TMPD/scrape.pb.gz" "$TMPD/d.pb.gz"
	sql "http://127.0.0.1:$port/debug/pprof/heap" >"$TMPD/d.sql"
	t_run acc.sqlite.default 120 env LD_PRELOAD="$LIB" HEAPPROF_HTTP=127.0.0.1:$port \
		HEAPPROF_OUT="$TMPD/d.pb.gz" sqlite3 :memory: <"$TMPD/d.sql" >"$TMPD/d.out" 2>&1 || exit 1
	used=$(awk '/^Memory Used:/ { v = $3 } END { print v }' "$TMPD/d.out")
	if [ $RC -ne 0 ] || [ ! -s "$TMPD/scrape.pb.gz" ] || [ ! -s "$TMPD/d.pb.gz" ] || [ -z "$used" ]; then
		fail acc.sqlite.default "run $i: exit $RC, no scrape, profile or Memory Used: $(tail -3 "$TMPD/d.out")"
		exit 1
	fi
	echo "$used" >>"$TMPD/truth"
	sum_prof "$TMPD/scrape.pb.gz" inuse_space >>"$TMPD/est"
	sum_prof "$TMPD/d.pb.gz" alloc_space >>"$TMPD/alloc"
done
truth=$(awk '{ s += $1 } END { printf "%.0f", s / NR }' "$TMPD/truth")
$ACC within acc.sqlite.default.inuse "$truth" 0.02 $(cat "$TMPD/est") || FAILED=1
$ACC within acc.sqlite.default.alloc "$total" 0 $(cat "$TMPD/alloc") || FAILED=1
exit $FAILED
