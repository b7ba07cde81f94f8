#!/usr/bin/env python3
"""ring_cost.py - what a lossy way of delivering hits costs each policy, from
two larder-sim CSVs of the same cells: docs/policies.md, "Lossy hit events".

    ring_cost.py BASE.csv LOSSY.csv [POLICY,...]

BASE is a run with every hit delivered (strict, or `--passes D` alone),
LOSSY the same run with `--hit-ring D:SLOTS` added. For each policy (all in
BASE, or the ones named, in that order) it prints one line:

    policy: MEAN / WORST (trace size) / OVER

in points of miss ratio (LOSSY minus BASE): MEAN over the cells both files
hold, WORST the largest single cell (named when it is over 0.5 points),
OVER the count of cells over 0.5 points. BASE may hold more policies than
LOSSY; for each policy printed, a cell in one file only is an error (the
two runs must be of the same traces and sizes).
"""
import csv
import sys

OVER = 0.5  # points


def load(path):
    cells = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (row["policy"], row["trace"], int(row["cache_size"]))
            cells[key] = float(row["miss_ratio"])
    return cells


def main(argv):
    if len(argv) not in (3, 4):
        sys.exit(__doc__.strip().splitlines()[2].strip())
    base, lossy = load(argv[1]), load(argv[2])
    policies = argv[3].split(",") if len(argv) == 4 else \
        sorted({k[0] for k in base})
    for policy in policies:
        cells = sorted(k for k in base if k[0] == policy)
        other = sorted(k for k in lossy if k[0] == policy)
        if not cells or cells != other:
            sys.exit("ring_cost: policy %s: %d cells in %s, %d in %s, not the same"
                     % (policy, len(cells), argv[1], len(other), argv[2]))
        diff = {k: (lossy[k] - base[k]) * 100 for k in cells}
        worst = max(cells, key=lambda k: diff[k])
        mean = sum(diff.values()) / len(cells)
        named = " (%s %d)" % worst[1:] if diff[worst] > OVER else ""
        over = sum(1 for k in cells if diff[k] > OVER)
        print("%s: %+.2f / %+.2f%s / %d" % (policy, mean, diff[worst], named, over))


if __name__ == "__main__":
    main(sys.argv)
