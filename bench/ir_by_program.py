#!/usr/bin/env python3
"""ir_by_program.py NONE_DIR HEAPPROF_DIR: callgrind instruction totals of
every process of a traced run (callgrind's per-process out files, cg.PID),
summed by program name, the two runs side by side (build_ir.sh)."""
import collections
import glob
import os
import sys


def load(d):
    agg = collections.defaultdict(lambda: [0, 0])
    for f in glob.glob(os.path.join(d, 'cg.*')):
        cmd, tot = '?', 0
        with open(f, errors='replace') as fh:
            for line in fh:
                if line.startswith('cmd:'):
                    cmd = os.path.basename(line.split()[1])
                elif line.startswith('summary:'):
                    tot = int(line.split()[1])
        agg[cmd][0] += 1
        agg[cmd][1] += tot
    return agg


def main():
    a, b = load(sys.argv[1]), load(sys.argv[2])
    print('| program | processes | none Ir | heapprof Ir | over none | ratio |')
    print('|---|---|---|---|---|---|')
    for k in sorted(set(a) | set(b), key=lambda k: -b.get(k, [0, 0])[1]):
        na, ia = a.get(k, [0, 0])
        nb, ib = b.get(k, [0, 0])
        r = f'{ib / ia:.4f}' if ia else '-'
        print(f'| {k} | {na} / {nb} | {ia / 1e6:.1f} M | {ib / 1e6:.1f} M | '
              f'{(ib - ia) / 1e6:+.1f} M | {r} |')
    ta = sum(v[1] for v in a.values())
    tb = sum(v[1] for v in b.values())
    print(f'| all | {sum(v[0] for v in a.values())} / {sum(v[0] for v in b.values())} | '
          f'{ta / 1e6:.1f} M | {tb / 1e6:.1f} M | {(tb - ta) / 1e6:+.1f} M | {tb / ta:.4f} |')


main()
