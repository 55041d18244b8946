#!/usr/bin/env python3
"""capture_table.py: summarizes bench/run_capture.sh's raw.tsv as markdown.

    python3 bench/capture_table.py RAW.tsv [NOTES.txt]

Tables: ratios against "none" (median wall / median CPU / median peak RSS of
the configuration over the same of "none", all from the same run); paired
per-round ratios and best-of-N ratios, which resist a shared machine's
load better; absolute
medians with the wall-time range; mbench's own ns per pair. Runs whose
output differs from "none" (checksums, cc1's assembly) or that failed are
flagged and left out of the medians.
"""
import collections
import statistics
import sys

CONFIG_ORDER = ["none", "shim", "heapprof", "heapprof-r1", "jemalloc",
                "jemalloc-prof", "heaptrack", "heaptrack-raw"]
CONFIG_LABEL = {
    "none": "none (glibc malloc)",
    "shim": "forwarding shim (floor)",
    "heapprof": "heapprof, default rate (512 KiB)",
    "heapprof-r1": "heapprof, HEAPPROF_RATE=1",
    "jemalloc": "jemalloc 5.3 (plain)",
    "jemalloc-prof": "jemalloc prof:true,lg_prof_sample:19",
    "heaptrack": "heaptrack 1.4",
    "heaptrack-raw": "heaptrack 1.4 -r (record only)",
}
WORKLOAD_ORDER = ["mbench1", "mbench2", "python", "cc1"]
WORKLOAD_LABEL = {"mbench1": "mbench 1t", "mbench2": "mbench 2t",
                  "python": "python", "cc1": "cc1"}


def main():
    if len(sys.argv) < 2:
        sys.exit("usage: capture_table.py RAW.tsv [NOTES.txt]")
    rows = []
    with open(sys.argv[1]) as f:
        header = f.readline().rstrip("\n").split("\t")
        for line in f:
            rows.append(dict(zip(header, line.rstrip("\n").split("\t"))))

    ref_check = {}
    for w in set(r["workload"] for r in rows):
        checks = [r["check"] for r in rows
                  if r["workload"] == w and r["config"] == "none" and r["status"] == "0"]
        if checks:
            ref_check[w] = collections.Counter(checks).most_common(1)[0][0]

    data = collections.defaultdict(list)
    flagged = []
    for r in rows:
        key = (r["workload"], r["config"])
        bad = r["status"] != "0" or r["wall_s"] == "-"
        mismatch = (not bad and r["workload"] in ref_check
                    and r["check"] != ref_check[r["workload"]])
        if bad or mismatch:
            flagged.append("%s under %s, round %s: %s" % (
                r["workload"], r["config"], r["round"],
                "exit status " + r["status"] if bad else
                "output differs from none (%s vs %s)" % (r["check"], ref_check[r["workload"]])))
            continue
        data[key].append(r)

    wls = [w for w in WORKLOAD_ORDER if any(k[0] == w for k in data)]
    cfgs = [c for c in CONFIG_ORDER if any(k[1] == c for k in data)]

    def med(key, field):
        vals = [float(r[field]) for r in data.get(key, []) if r[field] != "-"]
        return statistics.median(vals) if vals else None

    out = []
    out.append("Ratios against none, medians of alternating runs: wall / CPU (user+sys) / peak RSS")
    out.append("")
    out.append("| configuration | " + " | ".join(WORKLOAD_LABEL[w] for w in wls) + " |")
    out.append("|---" * (len(wls) + 1) + "|")
    for c in cfgs:
        cells = []
        for w in wls:
            base = [med((w, "none"), f) for f in ("wall_s", "cpu_s", "maxrss_kb")]
            cur = [med((w, c), f) for f in ("wall_s", "cpu_s", "maxrss_kb")]
            if None in base or None in cur:
                cells.append("n/a")
            else:
                cells.append("/".join("%.2f" % (x / y) for x, y in zip(cur, base)))
        out.append("| %s | %s |" % (CONFIG_LABEL.get(c, c), " | ".join(cells)))
    out.append("")
    out.append("Noise-resistant ratios against none: median over rounds of the ratio to the none run of the "
               "same round (paired), wall / CPU; then the ratio of the fastest runs (best of N), wall / CPU")
    out.append("")
    out.append("| configuration | " + " | ".join(WORKLOAD_LABEL[w] for w in wls) + " |")
    out.append("|---" * (len(wls) + 1) + "|")
    for c in cfgs:
        cells = []
        for w in wls:
            base = {r["round"]: r for r in data.get((w, "none"), [])}
            pw, pc = [], []
            for r in data.get((w, c), []):
                b = base.get(r["round"])
                if b:
                    pw.append(float(r["wall_s"]) / float(b["wall_s"]))
                    pc.append(float(r["cpu_s"]) / float(b["cpu_s"]))
            cur = data.get((w, c), [])
            bl = data.get((w, "none"), [])
            if not pw or not cur or not bl:
                cells.append("n/a")
                continue
            mw = min(float(r["wall_s"]) for r in cur) / min(float(r["wall_s"]) for r in bl)
            mc = min(float(r["cpu_s"]) for r in cur) / min(float(r["cpu_s"]) for r in bl)
            cells.append("%.2f/%.2f; best %.2f/%.2f" % (statistics.median(pw), statistics.median(pc), mw, mc))
        out.append("| %s | %s |" % (CONFIG_LABEL.get(c, c), " | ".join(cells)))
    out.append("")
    out.append("Absolute medians: wall s (min–max) / CPU s / peak RSS MiB [runs]")
    out.append("")
    out.append("| configuration | " + " | ".join(WORKLOAD_LABEL[w] for w in wls) + " |")
    out.append("|---" * (len(wls) + 1) + "|")
    for c in cfgs:
        cells = []
        for w in wls:
            rs = data.get((w, c), [])
            if not rs:
                cells.append("n/a")
                continue
            walls = [float(r["wall_s"]) for r in rs]
            cells.append("%.3f (%.3f–%.3f) / %.3f / %.1f [%d]" % (
                statistics.median(walls), min(walls), max(walls),
                med((w, c), "cpu_s"), med((w, c), "maxrss_kb") / 1024.0, len(rs)))
        out.append("| %s | %s |" % (CONFIG_LABEL.get(c, c), " | ".join(cells)))
    mb = [w for w in wls if w.startswith("mbench")]
    if mb:
        out.append("")
        out.append("mbench's own timing loop: median ns per malloc+free pair (ratio against none)")
        out.append("")
        out.append("| configuration | " + " | ".join(WORKLOAD_LABEL[w] for w in mb) + " |")
        out.append("|---" * (len(mb) + 1) + "|")
        for c in cfgs:
            cells = []
            for w in mb:
                v, b = med((w, c), "inner_ns"), med((w, "none"), "inner_ns")
                cells.append("n/a" if v is None or b is None else "%.1f (%.2f)" % (v, v / b))
            out.append("| %s | %s |" % (CONFIG_LABEL.get(c, c), " | ".join(cells)))
    notes = []
    if len(sys.argv) > 2:
        with open(sys.argv[2]) as f:
            notes = [l.rstrip("\n") for l in f if l.strip()]
    if flagged or notes:
        out.append("")
        for n in notes:
            out.append("- " + n)
        for fl in flagged:
            out.append("- FLAGGED (left out of the medians): " + fl)
    print("\n".join(out))


if __name__ == "__main__":
    main()
