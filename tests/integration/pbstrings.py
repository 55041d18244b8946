#!/usr/bin/env python3
"""pbstrings.py: the string table of a pprof profile (gzip'd or not), read
at the wire level with no protobuf library, checked against proto3's rule
for `string` fields: each entry must be valid UTF-8 (protobuf's own
decoders reject the whole message otherwise; go tool pprof's does not
check). Prints "strings N invalid K" and each invalid entry's repr; exit 1
if any is invalid.

  pbstrings.py PROFILE
"""
import gzip
import sys


def varint(b, i):
    v = s = 0
    while True:
        c = b[i]
        i += 1
        v |= (c & 0x7F) << s
        s += 7
        if c < 0x80:
            return v, i


def main():
    data = open(sys.argv[1], "rb").read()
    if data[:2] == b"\x1f\x8b":
        data = gzip.decompress(data)
    i, n, bad = 0, 0, []
    while i < len(data):
        key, i = varint(data, i)
        f, wt = key >> 3, key & 7
        if wt == 0:
            _, i = varint(data, i)
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        elif wt == 2:
            ln, i = varint(data, i)
            if f == 6:
                n += 1
                try:
                    data[i:i + ln].decode("utf-8")
                except UnicodeDecodeError:
                    bad.append(data[i:i + ln])
            i += ln
        else:
            raise SystemExit("wire type %d at %d" % (wt, i))
    print("strings %d invalid %d" % (n, len(bad)))
    for s in bad:
        print(repr(s))
    sys.exit(1 if bad else 0)


main()
