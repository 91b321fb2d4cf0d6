#!/usr/bin/python3
"""benchmarks/stats.py - the statistics every benchmark report prints, once for all of them.

Imported by the Python reports and scripts (sys.path holds benchmarks/); the shell scripts
call its command line:

    python3 benchmarks/stats.py median FORMAT < VALUES

prints the median of the whitespace-separated numbers read with FORMAT (a printf format:
%.2f), nothing when there are none.

The rules, the same in every report:
- median: the middle value; for an even count the mean of the two middle values.
- min-max: the smallest and the largest value, "LO-HI" in the report's format.
- a ratio A / B is taken round by round (the two cases of a round ran next to each other),
  over the rounds where both A and B are above 0 (0: the case did not run or measured
  nothing); its median and min-max are shown.
- no values at all: median, min and max are 0 (a report prints "0 (0-0)", never fails).
"""
import sys


def median(values):
    """The median of @values (numbers); the mean of the two middle ones for an even count."""
    v = sorted(values)
    n = len(v)
    if n == 0:
        return 0
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def span(values):
    """(min, max) of @values; (0, 0) when empty."""
    return (min(values), max(values)) if values else (0, 0)


def summary(values):
    """(median, min, max) of @values."""
    return (median(values),) + span(values)


def per_round(a, b):
    """A / B round by round: @a and @b map a round to its value; the rounds where both
    are above 0, in @a's order."""
    return [a[r] / b[r] for r in a if r in b and a[r] > 0 and b[r] > 0]


def fmt_span(values, fmt="%.0f"):
    """"LO-HI" of @values, each printed with @fmt."""
    lo, hi = span(values)
    return (fmt + "-" + fmt) % (lo, hi)


def fmt_cell(values, fmt="%.0f", brief=False):
    """"MEDIAN (LO-HI)" of @values, each printed with @fmt; with @brief, the range only when
    LO and HI print differently."""
    m, lo, hi = summary(values)
    if brief and fmt % lo == fmt % hi:
        return fmt % m
    return (fmt + " (" + fmt + "-" + fmt + ")") % (m, lo, hi)


def main(argv):
    if len(argv) != 3 or argv[1] != "median":
        sys.exit("usage: stats.py median FORMAT < VALUES")
    values = [float(w) for w in sys.stdin.read().split()]
    if values:
        print(argv[2] % median(values))


if __name__ == "__main__":
    main(sys.argv)
