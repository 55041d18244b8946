#!/usr/bin/env python3
# convert_stacks.py: reads a `pprofcheck dump` listing and prints one line
# per sample, "0xADDR;0xADDR;... -> v1 v2 ...", sorted: every stack by the
# absolute addresses of its locations (leaf first), so it does not depend
# on location ids, mapping boundaries (pprof rewrites non-PIE main-binary
# mappings read from text) or symbolization (legacy text carries none).
# Used by convert.sh for the pprof -> text -> pprof round trip.
# usage: convert_stacks.py DUMP
import re
import sys

addr = {}
samples = []
for line in open(sys.argv[1]):
    m = re.match(r"location (\d+): m=\d+ addr=(0x[0-9a-f]+)", line)
    if m:
        addr[m.group(1)] = m.group(2)
        continue
    m = re.match(r"sample \d+: locs=\[([0-9 ]*)\] values=\[([-0-9 ]*)\]", line)
    if m:
        ids = m.group(1).split()
        samples.append(";".join(addr.get(i, "?" + i) for i in ids) +
                       " -> " + m.group(2))
for s in sorted(samples):
    print(s)
