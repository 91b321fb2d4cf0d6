#!/usr/bin/python3
"""stats-test.py STATS - TAP: benchmarks/stats.py's rules, the ones every report prints by."""
import subprocess
import sys

sys.path.insert(0, __import__("os").path.dirname(sys.argv[1]))
from stats import fmt_cell, fmt_span, median, per_round, summary  # noqa: E402

CHECKS = [
    ("odd count: the middle value", lambda: median([3, 1, 2]) == 2),
    ("even count: the mean of the two middle values", lambda: median([4, 1, 3, 2]) == 2.5),
    ("no values: 0 (0-0)", lambda: summary([]) == (0, 0, 0) and fmt_cell([]) == "0 (0-0)"),
    ("cell: median (min-max) in the format given",
     lambda: fmt_cell([1.0, 2.0, 4.0], "%.2f") == "2.00 (1.00-4.00)"),
    ("brief cell: no range when min and max print the same",
     lambda: fmt_cell([1.001, 1.002], "%.1f", brief=True) == "1.0"),
    ("span: min-max", lambda: fmt_span([5, 2, 9]) == "2-9"),
    ("ratios round by round, only where both measured",
     lambda: per_round({1: 4, 2: 6, 3: 5, 4: 0}, {1: 2, 2: 3, 4: 1}) == [2, 2]),
    ("command line: the median in FORMAT",
     lambda: subprocess.run([sys.executable, sys.argv[1], "median", "%.2f"], input="1 2\n4 3",
                            capture_output=True, text=True).stdout == "2.50\n"),
    ("command line: nothing for no values",
     lambda: subprocess.run([sys.executable, sys.argv[1], "median", "%.2f"], input="",
                            capture_output=True, text=True).stdout == ""),
]

print("1..%d" % len(CHECKS))
for i, (name, check) in enumerate(CHECKS, 1):
    print("%s %d %s" % ("ok" if check() else "not ok", i, name))
