#!/usr/bin/env python3
# mkprof.py: writes a small profile.proto for the CLI tests from a JSON spec:
#   mkprof.py OUT '{"types": [["alloc_space", "bytes"], ...],
#                   "samples": [[[loc, ...], [v, ...]], ...]}'
# where each loc (leaf first) is a list of function names, innermost first:
# one name is a plain location, several are inlined frames of one location.
# Names may hold anything (';', quotes, '</script>', non-ASCII). A loc given
# as an integer is a raw location id (a missing one makes a malformed
# profile). "period": [[type, unit], value] sets the period (a negative one,
# too).
import json
import sys


def varint(v):
    b = bytearray()
    v &= 2**64 - 1
    while True:
        x = v & 0x7f
        v >>= 7
        if v:
            b.append(x | 0x80)
        else:
            b.append(x)
            return bytes(b)


def key(f, w): return varint(f << 3 | w)
def vi(f, v): return key(f, 0) + varint(v)
def ld(f, b): return key(f, 2) + varint(len(b)) + b
def packed(f, vs): return ld(f, b''.join(varint(v) for v in vs))


out, spec = sys.argv[1], json.loads(sys.argv[2])
strs = ['']
def s(x):
    if x not in strs:
        strs.append(x)
    return strs.index(x)

msg = b''
for t, u in spec['types']:
    msg += ld(1, vi(1, s(t)) + vi(2, s(u)))
funcs, locs = {}, {}
for stack, values in spec['samples']:
    ids = []
    for loc in stack:
        if isinstance(loc, int):  # a raw location id, which may not exist
            ids.append(loc)
            continue
        k = tuple(loc)
        if k not in locs:
            locs[k] = len(locs) + 1
        for f in loc:
            funcs.setdefault(f, len(funcs) + 1)
        ids.append(locs[k])
    msg += ld(2, packed(1, ids) + packed(2, values))
if 'period' in spec:
    (pt, pu), pv = spec['period']
    msg += ld(11, vi(1, s(pt)) + vi(2, s(pu))) + vi(12, pv)
msg += ld(3, vi(1, 1) + vi(2, 0x400000) + vi(3, 0x500000) + vi(5, s('/nonexistent/prog')) +
          vi(7, 1))
for k, i in locs.items():
    lines = b''.join(ld(4, vi(1, funcs[f]) + vi(2, 10 + n)) for n, f in enumerate(k))
    msg += ld(4, vi(1, i) + vi(2, 1) + vi(3, 0x400000 + 16 * i) + lines)
for f, i in funcs.items():
    msg += ld(5, vi(1, i) + vi(2, s(f)) + vi(4, s('src.c')))
for x in strs:
    msg += ld(6, x.encode())
# "repeat_first": [N, K]: a sample whose stack is location 1, N times, of
# values [K, K, ...] (a sample far larger than its gzip'd size).
if 'repeat_first' in spec:
    nrep, k = spec['repeat_first']
    msg += ld(2, ld(1, b'\x01' * nrep) + packed(2, [k] * len(spec['types'])))
if out.endswith('.gz'):
    import gzip
    msg = gzip.compress(msg, 9)
with open(out, 'wb') as fh:
    fh.write(msg)
