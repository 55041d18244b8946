#!/usr/bin/env python3
"""gen_seeds.py: writes the seed corpus fuzz/corpus/<target>/ (committed;
rerun after changing it): a few small real profiles from the shared corpus
(${HEAPPROF_CORPUS:-../shared/corpus}), profiles merged by heapprof itself,
and hand-crafted malformed inputs, one per decoder error path (bad varint,
wire types, lengths, string_table[0], ids 0/duplicate/dangling, value count,
gzip truncation and bombs, concatenation). Pair seeds for fuzz_merge and
fuzz_delta use the split format of fuzz/fuzz_util.h: a 4-byte little-endian
length, the first profile, then the second.

usage: python3 fuzz/gen_seeds.py [REPO]
"""
import gzip
import os
import struct
import sys
import zlib

repo = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
corpus = os.environ.get("HEAPPROF_CORPUS", os.path.join(repo, "..", "shared", "corpus"))
out = os.path.join(repo, "fuzz", "corpus")


def varint(v):
    v &= (1 << 64) - 1
    b = bytearray()
    while v >= 0x80:
        b.append((v & 0x7F) | 0x80)
        v >>= 7
    b.append(v)
    return bytes(b)


def key(field, wire):
    return varint(field << 3 | wire)


def vf(field, v):
    return key(field, 0) + varint(v)


def lf(field, payload):
    return key(field, 2) + varint(len(payload)) + payload


def packed(field, vals):
    return lf(field, b"".join(varint(v) for v in vals))


def profile(strings=("", "alloc_objects", "count", "alloc_space", "bytes", "main", "/bin/x", "space"),
            samples=None, locs=None, funcs=None, maps=None, extra=b""):
    """A small valid heap-like profile, with overridable parts."""
    p = lf(1, vf(1, 1) + vf(2, 2)) + lf(1, vf(1, 3) + vf(2, 4))
    if samples is None:
        samples = [packed(1, [1, 2]) + packed(2, [3, 300]) + lf(3, vf(1, 4) + vf(3, 100)),
                   packed(1, [2]) + packed(2, [1, 64])]
    for s in samples:
        p += lf(2, s)
    if maps is None:
        maps = [vf(1, 1) + vf(2, 0x400000) + vf(3, 0x401000) + vf(5, 6)]
    for m in maps:
        p += lf(3, m)
    if locs is None:
        locs = [vf(1, 1) + vf(2, 1) + vf(3, 0x400100) + lf(4, vf(1, 1) + vf(2, 10)),
                vf(1, 2) + vf(2, 1) + vf(3, 0x400200)]
    for l in locs:
        p += lf(4, l)
    if funcs is None:
        funcs = [vf(1, 1) + vf(2, 5) + vf(3, 5) + vf(4, 6)]
    for f in funcs:
        p += lf(5, f)
    for s in strings:
        p += lf(6, s.encode() if isinstance(s, str) else s)
    p += vf(9, 1_700_000_000_000_000_000) + lf(11, vf(1, 7) + vf(2, 4)) + vf(12, 524288)
    return p + extra


def pair(a, b):
    return struct.pack("<I", len(a)) + a + b


def write(target, name, data):
    d = os.path.join(out, target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def real(rel):
    with open(os.path.join(corpus, rel), "rb") as f:
        return f.read()


good = profile()
malformed = {
    "empty": b"",
    "one_byte": b"\x0a",
    "varint_11_bytes": b"\x60" + b"\xff" * 10 + b"\x01",
    "varint_10th_byte_2": b"\x60" + b"\xff" * 9 + b"\x02",
    "varint_truncated": b"\x32\x00\x60\xff",
    "wire_type_3": b"\x32\x00\x0b",
    "wire_type_4": b"\x32\x00\x0c",
    "wire_type_6": b"\x32\x00\x0e",
    "wire_type_7": b"\x32\x00\x0f",
    "field_zero": b"\x32\x00\x00\x00",
    "length_past_end": b"\x32\x00\x12\x10\x08",
    "length_huge": b"\x32\x00\x12" + varint((1 << 64) - 2),
    "length_2_63": b"\x32\x00\x12" + varint(1 << 63) + b"\x00",
    "packed_truncated": profile(samples=[lf(1, b"\x81")]),
    "string0_not_empty": profile(strings=("x", "alloc_objects", "count", "alloc_space", "bytes", "main", "/bin/x", "space")),
    "no_string_table": b"\x60\x01",
    "string_index_out_of_range": profile(funcs=[vf(1, 1) + vf(2, 99)]),
    "string_index_negative": profile(funcs=[vf(1, 1) + vf(2, (1 << 64) - 1)]),
    "location_id_0": profile(locs=[vf(2, 1) + vf(3, 5)]),
    "location_id_dup": profile(locs=[vf(1, 1) + vf(3, 5), vf(1, 1) + vf(3, 6), vf(1, 2)]),
    "location_dangling": profile(samples=[packed(1, [1, 2, 77]) + packed(2, [1, 1])]),
    "function_id_0": profile(funcs=[vf(2, 5)]),
    "function_dangling": profile(locs=[vf(1, 1) + lf(4, vf(1, 42)), vf(1, 2)]),
    "mapping_id_dup": profile(maps=[vf(1, 1), vf(1, 1)]),
    "mapping_dangling": profile(locs=[vf(1, 1) + vf(2, 9) + vf(3, 1), vf(1, 2)]),
    "self_reference_ids": profile(locs=[vf(1, 1) + vf(2, 1) + lf(4, vf(1, 1)), vf(1, 2) + vf(2, 2)]),
    "values_too_few": profile(samples=[packed(1, [1]) + vf(2, 1)]),
    "values_too_many": profile(samples=[packed(1, [1]) + packed(2, [1, 2, 3])]),
    "values_unpacked": profile(samples=[vf(1, 1) + vf(2, 5) + vf(2, 6)]),
    "values_int64_extremes": profile(samples=[packed(1, [1]) + packed(2, [(1 << 63) - 1, 1 << 63]),
                                              packed(1, [1]) + packed(2, [(1 << 63) - 1, 1 << 63])]),
    "samples_without_types": lf(2, packed(1, [1])) + lf(6, b""),
    "concatenated": good + good,
    "one_byte_build_id": profile(maps=[vf(1, 1) + vf(2, 1) + vf(3, 2) + vf(6, 7)],
                                 strings=("", "alloc_objects", "count", "alloc_space", "bytes", "main", "/bin/x", "\x01")),
    "period_zero": profile(extra=vf(12, 0)),
    "labels_mixed": profile(samples=[packed(1, [1]) + packed(2, [1, 1]) + lf(3, vf(1, 5) + vf(2, 6)) +
                                     lf(3, vf(1, 4) + vf(3, 8) + vf(4, 4)) + lf(3, vf(1, 5)) + lf(3, vf(1, 5) + vf(2, 1))]),
    "gzip_truncated": gzip.compress(good)[:-7],
    "gzip_bad_crc": gzip.compress(good)[:-8] + b"\0\0\0\0" + gzip.compress(good)[-4:],
    "gzip_two_members": gzip.compress(good) + gzip.compress(good),
    "gzip_garbage": b"\x1f\x8b\x08\x00garbage",
    # 10 MiB of zeros in ~10 KiB: must stop at the fuzz targets' 8 MiB cap.
    "gzip_bomb": gzip.compress(b"\0" * (10 << 20), 9),
}

for target in ("decode", "merge", "delta"):
    write(target, "good_small", good)
    write(target, "good_small.gz", gzip.compress(good))
    for name, data in malformed.items():
        if name == "gzip_bomb" and target != "decode":
            continue
        write(target, name, data)
    for rel in ("go/go_heap_delta_1.pb.gz", "go/go_cpu_labels.pb.gz", "go/go_goroutine_labels.pb.gz",
                "fastdelta/heap.before.pprof", "fastdelta/block.after.pprof"):
        try:
            write(target, os.path.basename(rel), real(rel))
        except OSError:
            pass

# Pairs for the two-input targets.
for target in ("merge", "delta"):
    write(target, "pair_good_good", pair(good, profile(samples=[packed(1, [2]) + packed(2, [5, 500])])))
    write(target, "pair_good_bad", pair(good, malformed["location_dangling"]))
    write(target, "pair_type_mismatch", pair(good, real("fastdelta/block.before.pprof")
                                             if os.path.exists(os.path.join(corpus, "fastdelta")) else b""))
    for a, b, name in (("fastdelta/heap.before.pprof", "fastdelta/heap.after.pprof", "pair_fastdelta_heap"),
                       ("fastdelta/block.before.pprof", "fastdelta/block.after.pprof", "pair_fastdelta_block"),
                       ("go/go_heap_delta_1.pb.gz", "go/go_heap_delta_2.pb.gz", "pair_go_heap_delta")):
        try:
            write(target, name, pair(real(a), real(b)))
        except OSError:
            pass
