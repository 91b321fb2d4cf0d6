#!/usr/bin/python3
"""newstack-report.py - the tables of benchmarks/newstack from its raw.tsv.

    benchmarks/newstack-report.py --order "CONFIG ..." --plotdir DIR RAW

Per fill, per configuration (in the order given by --order), the median (min-max) of each
column over the rounds (benchmarks/stats.py; the range left out where min and max print
the same). Writes DIR/plot-FILL.dat: per configuration, save and restore seconds as
median min max (benchmarks/newstack-plot.gp).
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import fmt_cell, summary  # noqa: E402

MIB = 1048576
# Column of raw.tsv, scale, format: the table's columns in order.
COLS = [("save_s", 1, "%.2f"), ("sync_s", 1, "%.2f"), ("restore_s", 1, "%.2f"),
        ("disk_bytes", MIB, "%.0f"), ("apparent_bytes", MIB, "%.0f"),
        ("cpu_save_s", 1, "%.1f"), ("cpu_restore_s", 1, "%.1f"), ("cache_bytes", MIB, "%.0f")]


def load(path):
    """({(fill, config): {column: [values]}}, {fill: rounds}), fills in the file's order."""
    vals, rounds = {}, {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            fill = row["fill"]
            rounds[fill] = max(rounds.get(fill, 0), int(row["round"]))
            v = vals.setdefault((fill, row["config"]), {c: [] for c, _, _ in COLS})
            for c, _, _ in COLS:
                v[c].append(float(row[c]))
    return vals, rounds


def fill_table(fill, rounds, vals, order, plotdir):
    print("### %s fill, median (min-max) of %d round(s)\n" % (fill, rounds))
    print("| configuration | save s | sync s | restore s | on disk MiB | apparent MiB | CPU save s "
          "| CPU restore s | cache after save MiB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    with open(os.path.join(plotdir, "plot-%s.dat" % fill), "w") as dat:
        for cfg in order:
            v = vals.get((fill, cfg))
            if v is None:
                continue
            cells = [fmt_cell([x / scale for x in v[c]], fmt, brief=True) for c, scale, fmt in COLS]
            print("| %s | %s |" % (cfg, " | ".join(cells)))
            dat.write("%s %.3f %.3f %.3f %.3f %.3f %.3f\n" % (
                (cfg,) + summary(v["save_s"]) + summary(v["restore_s"])))
    print()


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--order", required=True)
    ap.add_argument("--plotdir", required=True)
    ap.add_argument("raw")
    a = ap.parse_args()
    vals, rounds = load(a.raw)
    for fill in rounds:
        fill_table(fill, rounds[fill], vals, a.order.split(), a.plotdir)


if __name__ == "__main__":
    main()
