#!/usr/bin/python3
"""compress-report.py - the table of benchmarks/compress from compress.dat, or its plot data.

    benchmarks/compress-report.py [--speedup] COMPRESS_DAT
    benchmarks/compress-report.py --plot GUEST COMPRESS_DAT

compress.dat: guest method save_s restore_s image_bytes save_cpu_s restore_cpu_s rss_kib,
one line per run ("n/a" from save_s on: the method was not built). The table: medians per
guest and method (seconds also as min-max over the runs), the image's ratio to the raw save
of the same guest, save CPU seconds per GiB of raw stream. --speedup (benchmarks/compress
--slow): then each compressed row's save and restore speed-up over raw-direct of the same
guest, median of each and min-max of the ratio run by run (benchmarks/stats.py), and
auto-direct's targets (issue 30: unthrottled >= 0.95x raw, at 600 MB/s >= the fastest fixed
choice, at 150 >= 1.8x raw; image <= raw + 1%). --plot:
for GUEST, a line per method: method save_median image_bytes save_min save_max
(benchmarks/compress-plot.gp).
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import fmt_span, median, per_round, summary  # noqa: E402

COLS = ("save", "rest", "img", "scpu", "rcpu", "rss")


def load(path):
    """{(guest, method): {column: [values]} or None (n/a)}, in the file's order."""
    runs = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if not w:
                continue
            k = (w[0], w[1])
            if w[2] == "n/a":
                runs[k] = None
                continue
            if runs.setdefault(k, {c: [] for c in COLS}) is None:
                continue
            for c, v in zip(COLS, w[2:8]):
                runs[k][c].append(v if c == "rss" and v == "-" else float(v))
    return runs


def table(runs):
    print("%-9s %-16s %8s %11s %9s %11s %9s %6s %8s %8s %9s %8s" % (
        "guest", "method", "save s", "min-max", "restore s", "min-max", "image MB", "ratio",
        "save CPU", "CPU/GiB", "rest. CPU", "RSS MiB"))
    for (g, m), v in runs.items():
        if v is None:
            print("%-9s %-16s %s" % (g, m, "n/a (not built: the tool has no --compress)"))
            continue
        rawv = runs.get((g, "raw-direct"))
        raw = median(rawv["img"]) if rawv else 0
        b, c = median(v["img"]), median(v["scpu"])
        rss = "-" if "-" in v["rss"] else "%.0f" % (median(v["rss"]) / 1024)
        print("%-9s %-16s %8.2f %11s %9.2f %11s %9.1f %6.3f %8.2f %8.2f %9.2f %8s" % (
            g, m, median(v["save"]), fmt_span(v["save"], "%.2f"), median(v["rest"]),
            fmt_span(v["rest"], "%.2f"), b / 1e6, b / raw if raw else 0, c,
            c / (raw / 2**30) if raw else 0, median(v["rcpu"]), rss))


def speedups(runs):
    """Each compressed row's speed-up over raw-direct of the same guest."""
    for (g, m), v in runs.items():
        raw = runs.get((g, "raw-direct"))
        if m == "raw-direct" or v is None or not raw:
            continue
        cells = []
        for c in ("save", "rest"):
            x = per_round(dict(enumerate(raw[c])), dict(enumerate(v[c])))
            cells += [median(raw[c]) / median(v[c]), fmt_span(x, "%.2f")]
        print("speed-up over raw-direct: %-12s %-16s save %.2fx (%s) restore %.2fx (%s)" % (
            (g, m) + tuple(cells)))


def auto_targets(runs):
    """issue 30's targets for auto-direct, per guest label (GUEST, GUEST@600, GUEST@150):
    save speed against raw-direct and the fixed levels (medians, and the ratio's min-max
    run by run), image against raw's."""
    for (g, m), v in runs.items():
        raw = runs.get((g, "raw-direct"))
        if m != "auto-direct" or v is None or not raw:
            continue
        rate = g.split("@")[1] if "@" in g else "0"
        fixed = {k[1]: w for k, w in runs.items()
                 if k[0] == g and w is not None and k[1].startswith(("raw-direct", "zstd"))
                 and k[1].endswith("-direct")}
        best = min(fixed, key=lambda k: median(fixed[k]["save"]))
        want, base = {"0": (0.95, "raw-direct"), "600": (1.0, best),
                      "150": (1.8, "raw-direct")}.get(rate, (None, best))
        x = per_round(dict(enumerate(fixed[base]["save"])), dict(enumerate(v["save"])))
        speed = median(fixed[base]["save"]) / median(v["save"])
        img = median(v["img"]) / median(raw["img"])
        verdict = ("" if want is None else
                   " target >= %.2fx: %s" % (want, "met" if speed >= want else "NOT met"))
        print("auto target: %-12s save %.2fx of %s (%s)%s; image %.3f of raw: %s" % (
            g, speed, base, fmt_span(x, "%.2f"), verdict, img,
            "met" if img <= 1.01 else "NOT met"))


def plot(runs, guest):
    for (g, m), v in runs.items():
        if g == guest and v is not None:
            med, lo, hi = summary(v["save"])
            print(m, repr(med), "%d" % v["img"][-1], repr(lo), repr(hi))


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--speedup", action="store_true")
    ap.add_argument("--plot", metavar="GUEST")
    ap.add_argument("dat")
    a = ap.parse_args()
    runs = load(a.dat)
    if a.plot:
        plot(runs, a.plot)
        return
    table(runs)
    if a.speedup:
        speedups(runs)
        auto_targets(runs)


if __name__ == "__main__":
    main()
