#!/usr/bin/env python3
"""mapids.py PROFILE: one line "FILE BUILD_ID" per mapping of a pprof
profile (gzipped or not), BUILD_ID "-" when it has none. A plain
protobuf walk, so the test does not trust the profiler's own decoder."""
import gzip
import sys


def varint(b, i):
    v = s = 0
    while True:
        x = b[i]
        i += 1
        v |= (x & 0x7f) << s
        s += 7
        if not x & 0x80:
            return v, i


def fields(b):
    i = 0
    while i < len(b):
        k, i = varint(b, i)
        f, w = k >> 3, k & 7
        if w == 0:
            v, i = varint(b, i)
        elif w == 2:
            n, i = varint(b, i)
            v, i = b[i:i + n], i + n
        elif w == 1:
            v, i = b[i:i + 8], i + 8
        elif w == 5:
            v, i = b[i:i + 4], i + 4
        else:
            raise ValueError("wire type %d" % w)
        yield f, v


data = open(sys.argv[1], 'rb').read()
if data[:2] == b'\x1f\x8b':
    data = gzip.decompress(data)
strs, maps = [], []
for f, v in fields(data):
    if f == 6:
        strs.append(v.decode('utf-8', 'replace'))
    elif f == 3:
        m = dict(fields(v))
        maps.append((m.get(5, 0), m.get(6, 0)))
for fi, bi in maps:
    print(strs[fi] or '-', strs[bi] or '-')
