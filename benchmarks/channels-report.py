#!/usr/bin/python3
"""channels-report.py - the tables of benchmarks/channels from its raw data.

    benchmarks/channels-report.py --plotdir DIR OUT

OUT/q10/raw.tsv (benchmarks/newstack's columns), OUT/q72.tsv and OUT/zstd.tsv
(benchmarks/channels' save_restore() columns). Medians (min-max) over the rounds and
ratios round by round (benchmarks/stats.py); a speed ratio is the other's seconds over
ours (above 1: we are faster). Writes DIR/plot-PART.dat (newstack-plot.gp's format).
Ends with the model of N channels on a 16-core host from the per-channel figures.
"""
import argparse
import csv
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from stats import fmt_cell, median, per_round, summary  # noqa: E402

MIB = 1048576
OWN = ["part", "config", "round", "save_s", "save_qemu_s", "save_cpu_qemu", "save_cpu_helpers",
       "restore_s", "restore_qemu_s", "restore_cpu_qemu", "restore_cpu_helpers",
       "image_bytes", "stream_bytes", "per_channel"]
QEMU_PAPER_MBS = 5666   # QEMU's mapped-ram + multifd + direct-io, 120 GB (issue 31)


def load(path, names=None):
    """{config: {column: {round: value}}} of a TSV (header row unless @names)."""
    vals = {}
    if not os.path.exists(path):
        return vals
    with open(path, newline="") as f:
        for row in csv.DictReader(f, fieldnames=names, delimiter="\t"):
            v = vals.setdefault(row["config"], {})
            for k, x in row.items():
                try:
                    v.setdefault(k, {})[int(row["round"])] = float(x)
                except (TypeError, ValueError):
                    v.setdefault(k, {})[int(row["round"])] = x
    return vals


def cell(v, col, scale=1, fmt="%.2f"):
    return fmt_cell([x / scale for x in v[col].values()], fmt, brief=True)


def ratio(a, b, col):
    """b's col over a's, round by round: "MEDIAN (LO-HI)", and the median."""
    r = per_round(b[col], a[col])
    return fmt_cell(r, "%.2f"), median(r)


def verdict(m, target, higher=True):
    ok = m >= target if higher else m <= target
    return "met" if ok else "NOT met"


def plot(plotdir, part, vals, order, save, restore):
    with open(os.path.join(plotdir, "plot-%s.dat" % part), "w") as dat:
        for cfg in order:
            if cfg in vals:
                dat.write("%s %.3f %.3f %.3f %.3f %.3f %.3f\n" % (
                    (cfg,) + summary(list(vals[cfg][save].values())) +
                    summary(list(vals[cfg][restore].values()))))


def part_q10(out, plotdir):
    v = load(os.path.join(out, "q10", "raw.tsv"))
    if not v:
        return
    order = ["sparse-p2-bypass", "qg-direct", "qg-direct-ch2", "qg-direct-ch4"]
    print("### QEMU 10.0 (newstack), half-zero guest, cache bypassed\n")
    print("| configuration | save s | restore s | CPU save s | CPU restore s | on disk MiB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for c in order:
        if c in v:
            print("| %s | %s | %s | %s | %s | %s |" % (
                c, cell(v[c], "save_s"), cell(v[c], "restore_s"),
                cell(v[c], "cpu_save_s", 1, "%.1f"), cell(v[c], "cpu_restore_s", 1, "%.1f"),
                cell(v[c], "disk_bytes", MIB, "%.0f")))
    print()
    sp = v.get("sparse-p2-bypass")
    for ours in ("qg-direct-ch2", "qg-direct", "qg-direct-ch4"):
        if sp and ours in v:
            s, sm = ratio(v[ours], sp, "save_s")
            r, rm = ratio(v[ours], sp, "restore_s")
            target = " (target >= 1.0x: save %s, restore %s)" % (
                verdict(sm, 1.0), verdict(rm, 1.0)) if ours == "qg-direct-ch2" else ""
            print("- speed of `%s` against sparse --parallel-channels 2 --bypass-cache: save "
                  "%sx, restore %sx%s" % (ours, s, r, target))
    print()
    plot(plotdir, "qemu10-halfzero", v, order, "save_s", "restore_s")


def own_table(v, order, title):
    print("### %s\n" % title)
    print("| configuration | save s | QEMU done s | CPU QEMU s | CPU helpers s | restore s "
          "| QEMU done s | CPU QEMU s | CPU helpers s | image MiB | stream MiB |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for c in order:
        if c in v:
            print("| %s | %s |" % (c, " | ".join(
                [cell(v[c], k) for k in ("save_s", "save_qemu_s")] +
                [cell(v[c], k, 1, "%.1f") for k in ("save_cpu_qemu", "save_cpu_helpers")] +
                [cell(v[c], k) for k in ("restore_s", "restore_qemu_s")] +
                [cell(v[c], k, 1, "%.1f") for k in ("restore_cpu_qemu", "restore_cpu_helpers")] +
                [cell(v[c], k, MIB, "%.0f") for k in ("image_bytes", "stream_bytes")])))
    print()


def part_q72(out, plotdir):
    v = load(os.path.join(out, "q72.tsv"), OWN)
    if not v:
        return None
    own_table(v, ["single", "ch2"], "QEMU 7.2 (host), half-zero guest, --bypass-cache=direct")
    if "single" in v and "ch2" in v:
        s, _ = ratio(v["ch2"], v["single"], "save_s")
        r, _ = ratio(v["ch2"], v["single"], "restore_s")
        print("- speed of 2 channels against the single stream: save %sx, restore %sx\n" % (s, r))
    plot(plotdir, "qemu72-halfzero", v, ["single", "ch2"], "save_s", "restore_s")
    return v


def part_zstd(out, plotdir):
    v = load(os.path.join(out, "zstd.tsv"), OWN)
    if not v:
        return
    own_table(v, ["z-single", "z-ch2", "z-ch2-t1", "z-ch1", "z1-single", "z1-ch2", "z1-ch2-t1"],
              "A real guest (build-guest bench), --compress, direct")
    if "z-single" in v and "z-ch2" in v:
        size = per_round(v["z-ch2"]["image_bytes"], v["z-single"]["image_bytes"])
        s, sm = ratio(v["z-ch2"], v["z-single"], "save_s")
        print("- image of --channels=2 --compress over the single-stream --compress: %sx "
              "(target <= 1.05x: %s)" % (fmt_cell(size, "%.3f"), verdict(median(size), 1.05,
                                                                         False)))
        print("- save speed of --channels=2 --compress against the single stream's: %sx "
              "(target: no slower, >= 1.0x: %s)\n" % (s, verdict(sm, 1.0)))
    for c, base, what in (("z-ch2-t1", "z-single", "--channels=2 --compress --threads=1"),
                          ("z-ch1", "z-single", "--channels=1 --compress"),
                          ("z1-ch2", "z1-single", "--channels=2 --compress=zstd:1"),
                          ("z1-ch2-t1", "z1-single", "--channels=2 --compress=zstd:1 --threads=1")):
        if base in v and c in v:
            s, _ = ratio(v[c], v[base], "save_s")
            size = per_round(v[c]["image_bytes"], v[base]["image_bytes"])
            print("- %s against %s: save speed %sx, image %sx\n"
                  % (what, base, s, fmt_cell(size, "%.3f")))
    plot(plotdir, "realguest-zstd", v, ["z-single", "z-ch2"], "save_s", "restore_s")


def model(v):
    """N channels on a 16-core host with an NVMe array, from the QEMU 7.2 saves: the CPU one
    GiB costs with 2 channels (QEMU + helpers), one channel's rate, and the rate of QEMU's
    migration thread alone (the single stream's payload over QEMU's time), which every
    channel's pages pass through on 7.2 (it finds and queues them)."""
    c, s = (v.get("ch2"), v.get("single")) if v else (None, None)
    if not c or not s:
        return
    rounds = list(c["stream_bytes"])
    cpu = median([(c["save_cpu_qemu"][r] + c["save_cpu_helpers"][r]) /
                  (c["stream_bytes"][r] / (1 << 30)) for r in rounds])
    helper = median([c["save_cpu_helpers"][r] / (c["stream_bytes"][r] / (1 << 30))
                     for r in rounds])
    chan = median([c["stream_bytes"][r] / 2 / c["save_s"][r] / 1e6 for r in rounds])
    main = median([s["stream_bytes"][r] / s["save_qemu_s"][r] / 1e6
                   for r in s["stream_bytes"] if s["save_qemu_s"][r] > 0])
    cores = 16 * 1073.741824 / cpu if cpu > 0 else 0   # MB/s the cores can push
    print("### On paper: N channels on a 16-core host with an NVMe array\n")
    print("Measured here (QEMU 7.2, TCG, 2 shared cores): %.2f CPU-s per GiB saved with 2 "
          "channels (QEMU and helpers; helpers alone %.2f), %.0f MB/s per channel, and QEMU's "
          "migration thread alone %.0f MB/s (the single stream's payload over QEMU's time). "
          "A channel is a QEMU sender thread and a helper process, each on a core of its "
          "own; the model takes the per-channel rate while cores are free, the CPU per GiB "
          "as measured, an NVMe array taking 12 GB/s (4 drives) of O_DIRECT writes, and on "
          "7.2 QEMU's one migration thread, which finds and queues every page for every "
          "channel.\n" % (cpu, helper, chan, main))
    print("| N channels | per-channel rate MB/s | 16 cores MB/s | array MB/s | QEMU 7.2's "
          "migration thread MB/s | model, QEMU 7.2 MB/s | model without that thread MB/s "
          "| QEMU's mapped-ram figure MB/s |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for n in (1, 2, 4, 8, 16):
        rate = n * chan
        print("| %d | %.0f | %.0f | 12000 | %.0f | %.0f | %.0f | %d |" % (
            n, rate, cores, main, min(rate, cores, 12000, main), min(rate, cores, 12000),
            QEMU_PAPER_MBS))
    print()


def main():
    ap = argparse.ArgumentParser(usage=__doc__)
    ap.add_argument("--plotdir", required=True)
    ap.add_argument("out")
    a = ap.parse_args()
    part_q10(a.out, a.plotdir)
    v = part_q72(a.out, a.plotdir)
    part_zstd(a.out, a.plotdir)
    model(v)


if __name__ == "__main__":
    main()
