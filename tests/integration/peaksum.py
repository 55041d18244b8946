#!/usr/bin/env python3
"""peaksum.py: totals of a heap profile per sample type, and per leaf
function, read through the oracle (`go tool pprof -raw -symbolize=none`).

  peaksum.py PROFILE       prints "types T1 T2 ...", then "total TYPE N" for
                           each type and "leaf FUNCTION TYPE N" for each
                           leaf function with a nonzero value
  peaksum.py --invariants PROFILE
                           prints "BAD ..." for each sample whose peak is
                           negative or above its allocations, and if the
                           peak total is below the in-use total; else "OK"
"""
import os
import re
import subprocess
import sys


def main():
    inv = sys.argv[1] == "--invariants"
    if inv:
        del sys.argv[1]
    env = dict(os.environ)
    env.setdefault("GOCACHE", "/tmp/heapprof-gocache")
    out = subprocess.run(["go", "tool", "pprof", "-raw", "-symbolize=none",
                          sys.argv[1]], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        sys.exit("go tool pprof -raw failed: " + out.stderr[:300])
    lines = out.stdout.splitlines()
    i = lines.index("Samples:")
    types = [t.split("/")[0] for t in lines[i + 1].split()]
    samples = []
    j = i + 2
    while j < len(lines) and lines[j] != "Locations":
        m = re.match(r"^\s*([-\d ]+):\s*([\d ]*)$", lines[j])
        if m:
            vals = [int(x) for x in m.group(1).split()]
            locs = [int(x) for x in m.group(2).split()]
            samples.append((vals, locs[0] if locs else 0))
        j += 1
    names = {}
    for line in lines[j + 1:]:
        if line == "Mappings":
            break
        m = re.match(r"^\s*(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
        if m:
            names[int(m.group(1))] = m.group(2)
    if inv:
        k = {t: i for i, t in enumerate(types)}
        bad = 0
        for vals, loc in samples:
            po, ps = vals[k["peak_objects"]], vals[k["peak_space"]]
            if po < 0 or ps < 0 or po > vals[k["alloc_objects"]] or \
                    ps > vals[k["alloc_space"]]:
                print("BAD sample at location %d: %s" % (loc, vals))
                bad += 1
        ti = sum(v[k["inuse_space"]] for v, _ in samples)
        tp = sum(v[k["peak_space"]] for v, _ in samples)
        if tp < ti:
            print("BAD peak total %d < in-use total %d" % (tp, ti))
            bad += 1
        if not bad:
            print("OK %d samples, in use %d, peak %d" % (len(samples), ti, tp))
        return
    print("types " + " ".join(types))
    tot = [0] * len(types)
    leaf = {}
    for vals, loc in samples:
        name = names.get(loc, "?")
        for k, v in enumerate(vals):
            tot[k] += v
            leaf[(name, types[k])] = leaf.get((name, types[k]), 0) + v
    for k, t in enumerate(types):
        print("total %s %d" % (t, tot[k]))
    for (name, t), v in sorted(leaf.items()):
        if v:
            print("leaf %s %s %d" % (name, t, v))


main()
