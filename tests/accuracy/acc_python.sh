#!/bin/sh
# python3 (Debian's /usr/bin/python3, ACC_PYTHON to override) with
# PYTHONMALLOC=malloc, so every object is a malloc call: a script that
# builds a list of 40,000 bytes objects of 1,000 bytes.
#   rate 1: the whole run against heaptrack (acc.py ALLOW);
#   default rate, RUNS runs: the script scrapes the endpoint before and
#     after building the list; the difference of the two in-use figures
#     must be within 3 standard errors (plus 2%: what else the
#     interpreter keeps between the scrapes, such as the first scrape's
#     buffers) of python's own accounting of the list: the sum of
#     sys.getsizeof over the objects and the list.
. "$(dirname "$0")/lib.sh"
need_base acc.python
PY=${ACC_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || { skip_tool acc.python "$PY" python3; exit 0; }
oracle_tmpdir
RUNS=$(by_tier 6 40)
cat >"$TMPD/build.py" <<'PYEOF'
import os, sys, urllib.request
url = os.environ.get("SCRAPE")
def scrape(path):
    if url:
        with urllib.request.urlopen(url) as r, open(path, "wb") as f:
            f.write(r.read())
scrape(sys.argv[1] + ".a.pb.gz")
keep = [bytes(1000) + i.to_bytes(4, "little") for i in range(40000)]
scrape(sys.argv[1] + ".b.pb.gz")
print("own", sum(sys.getsizeof(b) for b in keep) + sys.getsizeof(keep))
PYEOF
export PYTHONMALLOC=malloc
# Debian's python3 is a non-PIE executable that takes malloc's address:
# a start-up that never ends is a failure of its own, found in one run.
t_run acc.python.start 10 env LD_PRELOAD="$LIB" "$PY" -c pass || exit 1
vs_heaptrack acc.python 120 "$PY" "$TMPD/build.py" "$TMPD/x" || FAILED=1
: >"$TMPD/est"; : >"$TMPD/own"
i=0
while [ $i -lt "$RUNS" ]; do
	i=$((i + 1))
	port=$(free_port)
	t_run acc.python.default 60 env LD_PRELOAD="$LIB" HEAPPROF_HTTP=127.0.0.1:$port \
		SCRAPE="http://127.0.0.1:$port/debug/pprof/heap" HEAPPROF_EXIT=0 \
		"$PY" "$TMPD/build.py" "$TMPD/s" >"$TMPD/d.out" 2>"$TMPD/d.err" || exit 1
	if [ $RC -ne 0 ] || [ ! -s "$TMPD/s.b.pb.gz" ]; then
		fail acc.python.default "run $i: exit $RC: $(tail -3 "$TMPD/d.err")"
		exit 1
	fi
	awk '$1 == "own" { print $2 }' "$TMPD/d.out" >>"$TMPD/own"
	echo $(( $(sum_prof "$TMPD/s.b.pb.gz" inuse_space) - $(sum_prof "$TMPD/s.a.pb.gz" inuse_space) )) >>"$TMPD/est"
	rm -f "$TMPD"/s.*.pb.gz
done
own=$(awk '{ s += $1 } END { printf "%.0f", s / NR }' "$TMPD/own")
$ACC within acc.python.default.inuse "$own" 0.02 $(cat "$TMPD/est") || FAILED=1
exit $FAILED
