#!/usr/bin/python3
"""report.py - the tables of benchmarks/run from its raw.tsv.

    benchmarks/report.py --runs N [--sweep FILE] [--cache FILE] [--plotdata FILE] RAW

Throughput is MiB/s = bytes / seconds / 2^20. Medians and min-max are over the runs; a
ratio is taken run by run (the two cases of a pair ran next to each other) and its median
and min-max are shown (benchmarks/stats.py).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import fmt_cell, median, per_round, span, summary  # noqa: E402

DIRS = ("save", "restore")
MIB = 1048576
# The ratio table: A, B, label, target (0: information only). A or B may name several
# cases ("a,b"): the fastest of them in that run.
RATIOS = [
    ("ours-buffered", "floor-buffered", "ours-buffered / floor-buffered", 0.95),
    ("ours-direct", "floor-direct", "ours-direct / floor-direct", 0.95),
    ("ours-fadvise", "floor-fadvise", "ours-fadvise / floor-fadvise", 0.95),
    ("ours-direct", "stock-direct", "ours-direct / stock-direct", 1.25),
    ("ours-lv-direct", "stock-direct", "ours-lv-direct / stock-direct (same form)", 0),
    ("ours-buffered", "stock-buffered", "ours-buffered / stock-buffered", 0),
    ("ours-direct", "fio-qd1,fio-qd4", "ours-direct / best fio", 0.95),
    ("ours-fadvise", "ours-buffered,ours-direct,ours-fadvise", "ours-fadvise / fastest of ours",
     0.95),
    ("ours-direct", "dd-direct", "ours-direct / dd-direct", 0),
    ("ours-buffered", "cat", "ours-buffered / cat", 0),
]


class Raw:
    """raw.tsv: case dir run bytes seconds user sys maxrss_kib cache_peak cache_end."""

    def __init__(self, path, runs):
        self.runs = runs
        self.secs, self.cpu, self.rss, self.peak, self.cend = {}, {}, {}, {}, {}
        self.order = {d: [] for d in DIRS}
        self.bytes = 0
        with open(path) as f:
            next(f, None)
            for line in f:
                self.add(line.rstrip("\n").split("\t"))

    def add(self, f):
        c, d, r, self.bytes = f[0], f[1], int(f[2]), float(f[3])
        k = (d, c)
        self.secs[(d, c, r)] = float(f[4])
        if k not in self.cpu:
            self.order.setdefault(d, []).append(c)
            self.cpu[k] = []
        self.cpu[k].append((float(f[5]) + float(f[6])) / (self.bytes / 1073741824))
        for table, v in ((self.rss, float(f[7]) / 1024), (self.peak, float(f[8]) / MIB),
                         (self.cend, float(f[9]) / MIB)):
            table[k] = max(table.get(k, 0), v)

    def thr(self, d, c, r):
        s = self.secs.get((d, c, r), 0)
        return self.bytes / s / MIB if s > 0 else 0

    def val(self, d, names, r):
        """Throughput of @names in run @r: of the fastest when it names several."""
        return max([0] + [self.thr(d, c, r) for c in names.split(",")])

    def series(self, d, c):
        return [v for v in (self.thr(d, c, r) for r in range(1, self.runs + 1)) if v > 0]

    def by_run(self, d, names):
        return {r: self.val(d, names, r) for r in range(1, self.runs + 1)}


def main_table(raw):
    print("## %d MiB, %d run(s) interleaved, MiB/s\n" % (raw.bytes / MIB, raw.runs))
    print("| dir | case | median MiB/s | min-max | CPU s/GiB | peak RSS MiB | cache peak MiB "
          "| cache after MiB |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for d in DIRS:
        for c in raw.order[d]:
            k = (d, c)
            m, lo, hi = summary(raw.series(d, c))
            extra = ["-"] * 4 if c.startswith("fio") else [
                "%.2f" % median(raw.cpu[k]), "%.1f" % raw.rss[k], "%.0f" % raw.peak[k],
                "%.0f" % raw.cend[k]]
            print("| %s | %s | %.0f | %.0f-%.0f | %s |" % (d, c, m, lo, hi, " | ".join(extra)))


def ratio_table(raw):
    print("\n## Ratios, run by run (A / B throughput)\n")
    print("| dir | A / B | median | min-max | target | |")
    print("| --- | --- | ---: | ---: | --- | --- |")
    for d in DIRS:
        for a, b, label, target in RATIOS:
            x = per_round(raw.by_run(d, a), raw.by_run(d, b))
            if not x:
                continue
            m, lo, hi = summary(x)
            met = ("met" if m >= target else "NOT met") if target > 0 else ""
            print("| %s | %s | %.3f | %.3f-%.3f | %s | %s |" % (
                d, label, m, lo, hi, ">= %g" % target if target > 0 else "-", met))
    m = max([0] + [raw.rss[(d, c)] for d in DIRS for c in raw.order[d] if c.startswith("ours")])
    print("\nPeak RSS of our helper, all modes: %.1f MiB (target <= 32): %s" % (
        m, "met" if m <= 32 else "NOT met"))


def sweep_table(raw, path):
    """Pipe-size sweep: pipe_size run save_direct_s pipe_only_s."""
    direct, pipe = {}, {}
    with open(path) as f:
        for line in f:
            if line.startswith("pipe_size"):
                continue
            p = line.rstrip("\n").split("\t")
            direct.setdefault(p[0], []).append(raw.bytes / float(p[2]) / MIB)
            pipe.setdefault(p[0], []).append(raw.bytes / float(p[3]) / MIB)
    if not direct:
        return
    print("\n## Pipe-size sweep: our helper, MiB/s (median, min-max)\n")
    print("| --pipe-size | --direct save | pipe -> /dev/null |")
    print("| --- | ---: | ---: |")
    for p in direct:
        print("| %s | %s | %s |" % (p, fmt_cell(direct[p]), fmt_cell(pipe[p])))


def cache_table(path):
    """Page cache during a save: mode bytes peak end."""
    first = True
    with open(path) as f:
        for line in f:
            if line.startswith("mode"):
                continue
            m, size, peak, end = line.rstrip("\n").split("\t")[:4]
            if first:
                print("\n## Page cache held by the image during a %d MiB save (sampled every "
                      "100 ms)\n" % (float(size) / MIB))
                print("| mode | peak MiB | after MiB | target |")
                print("| --- | ---: | ---: | --- |")
                first = False
            target = "-" if m != "fadvise" else (
                "<= 64: met" if float(peak) <= 64 * MIB else "<= 64: NOT met")
            print("| %s | %.0f | %.0f | %s |" % (m, float(peak) / MIB, float(end) / MIB, target))


def plot_data(raw, path):
    with open(path, "w") as out:
        out.write("# case save save_lo save_hi restore restore_lo restore_hi\n")
        for c in raw.order["save"]:
            v = summary(raw.series("save", c)) + summary(raw.series("restore", c))
            out.write("%s %.0f %.0f %.0f %.0f %.0f %.0f\n" % ((c,) + v))


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--sweep", default="")
    ap.add_argument("--cache", default="")
    ap.add_argument("--plotdata", default="")
    ap.add_argument("raw")
    a = ap.parse_args()
    raw = Raw(a.raw, a.runs)
    main_table(raw)
    ratio_table(raw)
    if a.sweep:
        sweep_table(raw, a.sweep)
    if a.cache:
        cache_table(a.cache)
    if a.plotdata:
        plot_data(raw, a.plotdata)


if __name__ == "__main__":
    main()
