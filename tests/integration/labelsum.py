#!/usr/bin/env python3
"""labelsum.py: a heap profile's four values summed per value of one string
label, read through the oracle (`go tool pprof -raw -symbolize=none`), over
the samples with a frame whose function starts with "site_" ("-": no such
label). Prints "LABEL ao ab io ib" lines, sorted.

  labelsum.py KEY PROFILE
"""
import os
import re
import subprocess
import sys


def main():
    key, path = sys.argv[1], sys.argv[2]
    env = dict(os.environ)
    env.setdefault("GOCACHE", "/tmp/heapprof-gocache")
    out = subprocess.run(["go", "tool", "pprof", "-raw", path],
                         capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit("go tool pprof -raw failed: " + out.stderr.strip())
    lines = out.stdout.splitlines()
    samples, locfn, section, cur = [], {}, None, None
    for line in lines:
        if line.startswith("Samples:"):
            section = "s"
            continue
        if line.startswith("Locations"):
            section = "l"
            continue
        if line.startswith("Mappings"):
            section = None
            continue
        if section == "s":
            m = re.match(r"^\s+(-?\d+(?:\s+-?\d+)*):((?:\s+\d+)*)\s*$", line)
            if m:
                cur = [list(map(int, m.group(1).split()))[:4],
                       m.group(2).split(), {}]
                samples.append(cur)
            elif cur is not None:
                for k, v in re.findall(r"(\S+):\[([^\]]*)\]", line):
                    cur[2][k] = v
        elif section == "l":
            m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ M=\d+ (\S+)", line)
            if m:
                locfn[m.group(1)] = m.group(2)
    sums = {}
    for vals, locs, labels in samples:
        if not any(locfn.get(l, "").startswith("site_") for l in locs):
            continue
        s = sums.setdefault(labels.get(key, "-"), [0, 0, 0, 0])
        for i in range(4):
            s[i] += vals[i]
    for k in sorted(sums):
        print(k, *sums[k])


main()
