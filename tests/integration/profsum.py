#!/usr/bin/env python3
"""profsum.py: per-site sums of a heap profile, read through the oracle
(`go tool pprof -raw -symbolize=none`), compared with the truth a test
program printed.

  profsum.py sums PROFILE...             print "site ao ab io ib" (mean over files)
  profsum.py check NAME EXPECT TOL PROFILE...
      EXPECT: lines "EXPECT site ao ab io ib" (other lines ignored; -1: not compared)
      TOL: allowed relative error of the mean over PROFILEs (0 = exact);
           one number, or four separated by commas (one per type)
      prints PASS/FAIL NAME.site.type lines; exit 1 on any FAIL

A sample belongs to the leaf-most frame whose function name starts with
"site_" (so C++ operator new or a libc wrapper such as strdup below it
does not matter); samples with no such frame are ignored.
"""
import os
import re
import subprocess
import sys

TYPES = ["alloc_objects", "alloc_space", "inuse_objects", "inuse_space"]


def raw(path):
    env = dict(os.environ)
    env.setdefault("GOCACHE", "/tmp/heapprof-gocache")
    out = subprocess.run(["go", "tool", "pprof", "-raw", "-symbolize=none", path],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit("go tool pprof -raw failed on %s: %s" % (path, out.stderr.strip()))
    return out.stdout


def sums(path, prefix="site_"):
    text = raw(path)
    lines = text.splitlines()
    types, samples, locfn = None, [], {}
    section = None
    for i, line in enumerate(lines):
        if line.startswith("Samples:"):
            section = "samples"
            types = [t.split("/")[0] for t in lines[i + 1].split()]
            continue
        if line.startswith("Locations"):
            section = "locations"
            continue
        if line.startswith("Mappings"):
            section = None
            continue
        if section == "samples" and ":" in line and not line.strip().startswith(("bytes:", "alloc_", "inuse_")):
            vals, _, locs = line.partition(":")
            try:
                v = [int(x) for x in vals.split()]
            except ValueError:
                continue
            samples.append((v, [int(x) for x in locs.split()]))
        elif section == "locations":
            m = re.match(r"\s*(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
            if m:
                locfn[int(m.group(1))] = m.group(2)
    if types is None:
        raise SystemExit("%s: no samples section" % path)
    idx = [types.index(t) for t in TYPES]
    out = {}
    for v, locs in samples:
        site = next((locfn.get(l, "") for l in locs
                     if locfn.get(l, "").startswith(prefix)), None)
        if site is None:
            continue
        acc = out.setdefault(site, [0, 0, 0, 0])
        for k in range(4):
            acc[k] += v[idx[k]]
    return out


def mean_sums(paths):
    total = {}
    for p in paths:
        for site, v in sums(p).items():
            acc = total.setdefault(site, [0, 0, 0, 0])
            for k in range(4):
                acc[k] += v[k]
    return {s: [x / len(paths) for x in v] for s, v in total.items()}


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "sums":
        for site, v in sorted(mean_sums(sys.argv[2:]).items()):
            print(site, *["%.1f" % x for x in v])
        return 0
    if len(sys.argv) >= 6 and sys.argv[1] == "check":
        name, expect, paths = sys.argv[2], sys.argv[3], sys.argv[5:]
        tols = [float(x) for x in sys.argv[4].split(",")]
        if len(tols) == 1:
            tols = tols * 4
        got = mean_sums(paths)
        failed = 0
        with open(expect) as f:
            rows = [l.split() for l in f if l.startswith("EXPECT ")]
        if not rows:
            print("FAIL %s: no EXPECT lines" % name)
            return 1
        for row in rows:
            site, want = row[1], [int(x) for x in row[2:6]]
            have = got.get(site, [0, 0, 0, 0])
            for k in range(4):
                w, h, tol = want[k], have[k], tols[k]
                if w < 0:  # the program says this type is not compared
                    continue
                ok = (h == w) if tol == 0 else (abs(h - w) <= tol * abs(w) if w else h == 0)
                tag = "%s.%s.%s" % (name, site, TYPES[k])
                if ok:
                    print("PASS %s" % tag)
                else:
                    failed = 1
                    print("FAIL %s" % tag)
                    print("  %s: want %d, got %.1f (tolerance %g)" % (tag, w, h, tol), file=sys.stderr)
        return failed
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
