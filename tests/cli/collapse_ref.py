#!/usr/bin/env python3
# collapse_ref.py: the folded stacks that `heapprof collapse` must print,
# computed from `pprofcheck samples FILE` (pprof's own reading of the
# profile, one line per sample, leaf first, each location with its lines
# innermost first). Usage: collapse_ref.py INDEX < listing > folded
# Prints "root;...;leaf VALUE" for sample-type INDEX, summed per stack,
# zero sums left out, unsorted. Exits 3 if a location has no lines (its
# name would be an ELF symbol or an address, which the listing cannot
# give, unless the location has no mapping either: "<unknown>"), so the caller can skip the per-stack comparison.
import re
import sys

idx = int(sys.argv[1])
line_re = re.compile(r'\((.*?) (\S*):(-?\d+)\)(?=\(|$)')
sums = {}
for raw in sys.stdin:
    raw = raw.rstrip('\n')
    if not raw or raw.startswith('#'):
        continue
    stack, vals = raw.rsplit(' -> ', 1)
    stack = stack[:stack.rindex('|{')]
    v = int(vals.split()[idx])
    frames = []
    if stack:
        for loc in stack.split(';'):
            names = [m.group(1) for m in line_re.finditer(loc)]
            if not names and re.fullmatch(r'0x[0-9a-f]+', loc):
                names = ["<unknown>"]  # no mapping, no lines: as pprof -top names it
            if not names or '?' in names:
                sys.exit(3)
            frames.extend(names)
    else:
        frames = ['[no stack]']
    frames.reverse()  # root first; inlined lines outermost first
    frames = [f.replace(';', ':').replace('\n', ' ').replace('\r', ' ')
              for f in frames]
    key = ';'.join(frames)
    sums[key] = sums.get(key, 0) + v
for k, v in sums.items():
    if v:
        print('%s %d' % (k, v))
