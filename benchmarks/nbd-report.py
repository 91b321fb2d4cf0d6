#!/usr/bin/python3
"""nbd-report.py - the tables of benchmarks/nbd from its raw.tsv.

    benchmarks/nbd-report.py --runs N --ncpu N [--plotdata FILE] [--pairs FILE] RAW

Throughput is MiB/s = bytes / seconds / 2^20; medians and min-max over the runs. A ratio
is taken run by run (the two cases of a pair ran a few seconds apart) and its median and
min-max are shown, with the issue's target where it has one (benchmarks/stats.py). CPU
busy: the machine's CPUs (all processes) during the case, median %. Where the time went,
per case (medians): the CPU used by the server, the client and the pipe's other end in %
of one core, the machine's busy and iowait %, and which side limits, the first that holds:
"disk" when iowait is 20% or more of the machine; "CPU (ours)" when server, client and
pipe end together use 85% or more of all cores (no side can go faster without taking CPU
from another); "CPU (shared)" when the cores are 90% busy with others' work too; "server
CPU" or "client CPU" when that side uses 90% of a core or more (its one busy thread); else
"server waits" (CPUs idle: the client waits for the server's rate or latency).
The pairs (--pairs: pairs.tsv, our default against --connections=1 run one right after
the other, round by round): each round's ratio, their median and min-max against the
target, the medians of the rounds where the default ran first and second (an order that
matters shows there, not as a cost of the default), and what the default chose.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import fmt_cell, fmt_span, median, per_round, summary  # noqa: E402


def pair(group, a, b, save=None, restore=None):
    """The rows comparing case @a with case @b in @group: per direction a (target, note),
    None for no row; the save's row first."""
    cells = (("save", save), ("restore", restore))
    return [(group, d, a, b, *cell) for d, cell in cells if cell]


# The ratio table: group, direction, case A, case B, target (0: none), note.
C4, C1 = "ours connections=4", "ours connections=1"
PERCONN = (0, "a limit per connection")
# the older measure of the default against one connection: the cases several apart in
# the runs (the pairs' table has them adjacent, over more rounds)
APART = "cases apart: see the pairs"
RATIOS = [
    *pair("file", "ours", "ours-conn1", (0.97, APART), (0.97, APART)),
    *pair("memory", "ours", "ours-conn1", (0.97, APART), (0.97, APART)),
    *pair("perconn", "ours", C1, (4.0, ""), (4.0, "")),
    *pair("file", "ours", "nbdcopy", save=(1.3, "")),
    *pair("file", "ours", "ours-fadvise-local", save=(0.9, "")),
    *pair("file", "ours", "nbdcopy", restore=(1.0, "")),
    *pair("memory", "ours", "nbdcopy", (0, "protocol cost"), (1.0, "")),
    *pair("qemu", "ours", "nbdcopy", (0, "qemu-nbd"), (1.0, "")),
    *pair("sweep", C4, C1, (1.2, ""), (0, "multi-conn")),
    *pair("perconn", C4, C1, PERCONN, PERCONN),
    *pair("sweep", "ours requests=16", "ours requests=1", (0, "overlap"), (0, "overlap")),
    *pair("sweep", "ours request-size=256K", "ours request-size=4M", (0, "request size"),
          (0, "request size")),
    *pair("slow-comp", "ours-compress", "ours", save=(0, "compressible, slow link")),
    *pair("slow-rand", "ours-compress", "ours", save=(0, "random, slow link")),
    *pair("slow-comp", "ours-compress", "nbdcopy", save=(0, "compressible, slow link")),
]


class Raw:
    """raw.tsv: group case dir run bytes seconds cpu_busy [iowait server_cpu client_cpu
    ends_cpu]; a case is (group, case, dir)."""

    def __init__(self, path, runs):
        self.runs = runs
        self.order, self.secs, self.size, self.busy = [], {}, {}, {}
        self.iow, self.core, self.perg = {}, {}, {}
        with open(path) as f:
            next(f, None)
            for line in f:
                self.add(line.rstrip("\n").split("\t"))

    def add(self, f):
        k, secs = tuple(f[:3]), float(f[5])
        if k not in self.size:
            self.order.append(k)
            self.busy[k] = []
        self.secs[(k, int(f[3]))] = secs
        self.size[k] = float(f[4])
        self.busy[k].append(float(f[6]))
        if len(f) >= 11 and secs > 0:
            self.iow.setdefault(k, []).append(float(f[7]))
            for who, v in zip(("server", "client", "ends"), f[8:11]):
                self.core.setdefault((k, who), []).append(100 * float(v) / secs)
            self.perg.setdefault(k, []).append(sum(map(float, f[8:11])) / (self.size[k] / 2**30))

    def by_run(self, k):
        """MiB/s of case @k per run (0: not run); the pairs' cases have rounds of their own."""
        runs = sorted({r for (kk, r) in self.secs if kk == k} | set(range(1, self.runs + 1)))
        return {r: self.size[k] / self.secs[(k, r)] / 1048576
                if self.secs.get((k, r), 0) > 0 else 0 for r in runs}

    def series(self, k):
        return [v for v in self.by_run(k).values() if v > 0]


def speed_table(raw, plotdata):
    print("### MiB/s, median (min-max) of %d run(s); the pair-* rows of the pairs' rounds\n"
          % raw.runs)
    print("| server | case | save: pipe -> NBD | restore: NBD -> pipe | CPU busy % save / restore |")
    print("| --- | --- | ---: | ---: | ---: |")
    done = set()
    for k in raw.order:
        row = k[:2]
        if row in done:
            continue
        done.add(row)
        ks, kr = row + ("save",), row + ("restore",)
        s, t = raw.series(ks), raw.series(kr)
        print("| %s | %s | %s | %s | %s / %s |" % (
            row[0], row[1], fmt_cell(s) if s else "-", fmt_cell(t) if t else "-",
            "%.0f" % median(raw.busy[ks]) if s else "-",
            "%.0f" % median(raw.busy[kr]) if t else "-"))
        if plotdata:
            cols = [("%.6g" % x) if v else "?" for v in (s, t) for x in summary(v)]
            plotdata.write('"%s: %s" %s\n' % (row[0], row[1], " ".join(cols)))


def ratio_table(raw):
    print("\n### Ratios, run by run (A / B throughput)\n")
    print("| server | dir | A / B | median | min-max | target | |")
    print("| --- | --- | --- | ---: | ---: | --- | --- |")
    for g, d, a, b, target, note in RATIOS:
        ka, kb = (g, a, d), (g, b, d)
        if ka not in raw.size or kb not in raw.size:
            continue
        x = per_round(raw.by_run(ka), raw.by_run(kb))
        if not x:
            continue
        m, lo, hi = summary(x)
        verdict = note if target <= 0 else (
            "met (every run)" if lo >= target else "met (median)" if m >= target else "NOT met")
        verdict += " (%s)" % note if target > 0 and note else ""
        print("| %s | %s | %s / %s | %.2f | %.2f-%.2f | %s | %s |" % (
            g, d, a, b, m, lo, hi, ">= %g" % target if target > 0 else "-", verdict))


def limit(b, w, sv, cl, en, ncpu):
    """Which side limits the case: see the head of this file."""
    if w >= 20:
        return "disk"
    if sv + cl + en >= 85 * ncpu:
        return "CPU (ours)"
    if b >= 90:
        return "CPU (shared)"
    return "server CPU" if sv >= 90 else "client CPU" if cl >= 90 else "server waits"


def where_table(raw, ncpu):
    if not raw.perg:
        return
    print("\n### Where the time went (medians): the bottleneck per case\n")
    print("| server | case | dir | MiB/s | CPU % of a core: server / client / pipe end "
          "| CPU-s per GiB (all three) | machine busy % | iowait % | limit |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    for k in (k for k in raw.order if k in raw.perg):
        b, w = median(raw.busy[k]), median(raw.iow[k])
        sv, cl, en = (median(raw.core[(k, who)]) for who in ("server", "client", "ends"))
        print("| %s | %s | %s | %.0f | %.0f / %.0f / %.0f | %.1f | %.0f | %.0f | %s |" % (
            k + (median(raw.series(k)), sv, cl, en, median(raw.perg[k]), b, w,
                 limit(b, w, sv, cl, en, ncpu))))


TARGET_PAIR = 0.97


def pair_choices(rows):
    """What the default chose over the rounds: "1x8: 7, 1x16: 4; more than one
    connection in 0 of 11 rounds; windows 2-4"."""
    shapes = {}
    for r in rows:
        shape = "%sx%s" % (r["connections"], r["requests"])
        shapes[shape] = shapes.get(shape, 0) + 1
    wins = [int(r["windows"]) for r in rows]
    tried = sum(1 for r in rows if int(r["most_connections"]) > 1)
    return "%s; more than one connection in %d of %d rounds; windows %s" % (
        ", ".join("%s: %d" % kv for kv in sorted(shapes.items())), tried, len(rows),
        fmt_span(wins))


def pair_table(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        rows = [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f if line.strip()]
    if not rows:
        return
    print("\n### Our default against --connections=1, the two adjacent (throughput ratio "
          "default / --connections=1 round by round; rounds 1, 3, ... ran the default first)\n")
    print("| server | dir | round by round | median | min-max | default first / second "
          "(medians) | target | | what the default chose (connections x requests: rounds) |")
    print("| --- | --- | --- | ---: | ---: | ---: | --- | --- | --- |")
    for key in sorted({(r["group"], r["dir"]) for r in rows}, key=lambda k: (k[0], k[1] != "save")):
        sel = [r for r in rows if (r["group"], r["dir"]) == key]
        x = [float(r["conn1_s"]) / float(r["default_s"]) for r in sel]
        first = [v for v, r in zip(x, sel) if r["first"] == "default"]
        second = [v for v, r in zip(x, sel) if r["first"] != "default"]
        m, lo, hi = summary(x)
        verdict = ("met (every round)" if lo >= TARGET_PAIR else
                   "met (median)" if m >= TARGET_PAIR else "NOT met")
        print("| %s | %s | %s | %.2f | %.2f-%.2f | %.2f / %.2f | >= %g | %s | %s |" % (
            *key, " ".join("%.2f" % v for v in x), m, lo, hi, median(first), median(second),
            TARGET_PAIR, verdict, pair_choices(sel)))


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--runs", type=int, required=True)
    ap.add_argument("--ncpu", type=int, required=True)
    ap.add_argument("--plotdata", default="")
    ap.add_argument("--pairs", default="")
    ap.add_argument("raw")
    a = ap.parse_args()
    raw = Raw(a.raw, a.runs)
    if a.plotdata:
        with open(a.plotdata, "w") as plot:
            speed_table(raw, plot)
    else:
        speed_table(raw, None)
    ratio_table(raw)
    if a.pairs:
        pair_table(a.pairs)
    where_table(raw, a.ncpu)


if __name__ == "__main__":
    main()
