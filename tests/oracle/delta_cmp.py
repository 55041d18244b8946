#!/usr/bin/env python3
# delta_cmp.py: compares heapprof's delta with pprof's -base delta, both
# given as `go tool pprof -raw -symbolize=none` dumps, against NEW's dump.
# Samples are keyed by their stack (location addresses, or the function
# lines when the address is 0) and labels, so location ids and string
# indexes may differ. For every key of NEW: subtracted types must equal
# pprof's delta (0 when pprof dropped the sample), other types NEW's values;
# a key whose expected values are all zero must be absent from ours; ours
# must hold no key that NEW lacks.
# usage: delta_cmp.py NEW.raw PPROF.raw OURS.raw TYPE[,TYPE...]
import re
import sys


def parse(path):
    text = open(path).read().split("\n")
    types = None
    samples = []  # (values, locids, labels)
    locs = {}
    mode = None
    cur_loc = None
    for ln in text:
        if ln.startswith("Samples:"):
            mode = "hdr"
            continue
        if ln.startswith("Locations"):
            mode = "loc"
            continue
        if ln.startswith("Mappings"):
            mode = "map"
            continue
        if mode == "hdr":
            types = [t.split("/")[0] for t in ln.split()]
            mode = "samples"
            continue
        if mode == "samples":
            m = re.match(r"^\s*((?:-?\d+\s+)*-?\d+):((?:\s+\d+)*)\s*$", ln)
            if m:
                vals = [int(v) for v in m.group(1).split()]
                ids = m.group(2).split()
                samples.append([vals, ids, []])
            elif ln.strip() and samples:
                samples[-1][2].append(ln.strip())
            continue
        if mode == "loc":
            m = re.match(r"^\s*(\d+): (0x[0-9a-f]+) (M=\d+)?(.*)$", ln)
            if m:
                cur_loc = m.group(1)
                addr = int(m.group(2), 16)
                locs[cur_loc] = [addr, [m.group(4).strip()]]
            elif ln.strip() and cur_loc:
                locs[cur_loc][1].append(ln.strip())
    out = {}
    for vals, ids, labels in samples:
        stack = []
        for i in ids:
            addr, lines = locs[i]
            stack.append(("A", addr) if addr else ("S", tuple(lines)))
        key = (tuple(stack), tuple(sorted(labels)))
        if key in out:
            out[key] = [a + b for a, b in zip(out[key], vals)]
        else:
            out[key] = vals
    return types or [], out


def main():
    tn, new = parse(sys.argv[1])
    tp, pp = parse(sys.argv[2])
    to, ours = parse(sys.argv[3])
    sub = set(sys.argv[4].split(","))
    errs = []
    if to != tn:
        errs.append("sample types differ: ours %s new %s" % (to, tn))
    # pprof's delta types are NEW's order too (same type lists required).
    if tp and tp != tn:
        errs.append("pprof types differ: %s vs %s" % (tp, tn))
    checked = 0
    for key, nv in new.items():
        pv = pp.get(key, [0] * len(nv))
        exp = [pv[i] if tn[i] in sub else nv[i] for i in range(len(nv))]
        ov = ours.get(key)
        if all(v == 0 for v in exp):
            if ov is not None:
                errs.append("sample should be dropped: %s ours %s" % (key[0][:2], ov))
        elif ov != exp:
            errs.append("stack %s labels %s: ours %s expected %s" % (key[0][:3], key[1], ov, exp))
        checked += 1
    for key in ours:
        if key not in new:
            errs.append("extra sample not in NEW: %s" % (key[0][:3],))
    for e in errs[:10]:
        print("  " + e, file=sys.stderr)
    print("%d keys checked, %d mismatches" % (checked, len(errs)), file=sys.stderr)
    sys.exit(1 if errs else 0)


main()
