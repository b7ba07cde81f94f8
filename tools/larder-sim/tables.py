#!/usr/bin/env python3
"""tables.py - docs/policies.md's hit-ratio tables from a larder-sim CSV, so
that every figure there comes from one command (its "Reproduce" section).

    tables.py summary RUN.csv [REFERENCE.tsv]   mean gap to Belady per policy
    tables.py traces RUN.csv                    per trace, and who wins where
    tables.py full RUN.csv REFERENCE.tsv        every cell, the reference beside
    tables.py compare RUN.csv A B               cell by cell, policy A against B

RUN.csv holds the policies default (or s3fifo-tuned), s3fifo,
wtinylfu-tuned, wtinylfu, arc, lru and belady (exact-lru too for `full`),
all 55 cells of REFERENCE.tsv's sizes. The gap to Belady is a policy's miss
ratio less belady's in the same cell (absolute); "real traces" leaves out
lirs_loop, the synthetic cycle, and "no lirs" all three LIRS traces (the
loop and the loop-like mixes, where W-TinyLFU's frequency filter wins). Miss ratios are compared at 4 decimals, as
printed, so equal ones tie. The reference's gaps use its own Belady column.
"""
import csv
import sys

from ring_cost import load

SIX = ["default", "s3fifo", "wtinylfu-tuned", "wtinylfu", "arc", "lru"]
SYNTHETIC = "lirs_loop"
REF_NAMES = ["S3FIFO", "WTinyLFU", "WTinyLFU-w0.10", "WTinyLFU-w0.25", "WTinyLFU-w0.50", "ARC",
             "LRU", "LIRS", "SIEVE", "Clock", "FIFO"]


def run_cells(path):
    """{policy: {(trace, size): miss ratio}}, s3fifo-tuned read as default."""
    out = {}
    for (policy, trace, size), mr in load(path).items():
        out.setdefault("default" if policy == "s3fifo-tuned" else policy, {})[(trace, size)] = mr
    for policy in SIX + ["belady"]:
        if policy not in out:
            sys.exit("tables: %s holds no %s cells" % (path, policy))
    return out


def ref_cells(path):
    out = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            key = (row["trace"], int(row["cache_size"]))
            out.setdefault(row["algorithm"], {})[key] = float(row["miss_ratio"])
    return out


def r4(x):
    return round(x, 4)


def mean_gap(mr, belady, cells):
    return sum(mr[c] - belady[c] for c in cells) / len(cells)


def summary(run, ref):
    cells = sorted(run["belady"])
    sets = (cells, [c for c in cells if c[0] != SYNTHETIC],
            [c for c in cells if not c[0].startswith("lirs_")])
    print("policy | %d cells | %d of the real traces | %d of no lirs" % tuple(map(len, sets)))

    def line(name, mr, bel):
        print("%s | %s" % (name, " | ".join("%.4f" % mean_gap(mr, bel, cs) for cs in sets)))

    for p in SIX:
        line(p, run[p], run["belady"])
    for name, pols in (("oracle of the six", SIX), ("oracle without the default", SIX[1:])):
        line(name, {c: min(run[p][c] for p in pols) for c in cells}, run["belady"])
    if not ref:
        return
    for name in REF_NAMES:
        line("reference " + name, ref[name], ref["Belady"])
    line("reference oracle", {c: min(ref[n][c] for n in REF_NAMES) for c in cells},
         ref["Belady"])


def winners(run, cell, pols):
    low = min(r4(run[p][cell]) for p in pols)
    return [p for p in pols if r4(run[p][cell]) == low]


def traces(run):
    cells = sorted(run["belady"])
    bel = run["belady"]
    print("| trace | " + " | ".join(SIX) + " | best |")
    print("| --- |" + " ---: |" * len(SIX) + " --- |")
    for t in sorted({c[0] for c in cells}):
        tc = [c for c in cells if c[0] == t]
        gaps = {p: r4(mean_gap(run[p], bel, tc)) for p in SIX}
        low = min(gaps.values())
        print("| %s | %s | %s |" % (t, " | ".join("%.4f" % gaps[p] for p in SIX),
                                     ", ".join(p for p in SIX if gaps[p] == low)))
    wins = {p: 0 for p in SIX}
    for c in cells:
        for p in winners(run, c, SIX):
            wins[p] += 1
    print("lowest miss ratio (ties each): " + ", ".join("%s %d" % (p, wins[p]) for p in SIX))


def full(run, ref):
    cells = sorted(run["belady"])
    refs = {"s3fifo": "S3FIFO", "wtinylfu": "WTinyLFU", "arc": "ARC"}
    print("| trace | size | s3fifo-tuned = default | s3fifo (ref) | wtinylfu-tuned | "
          "wtinylfu (ref, 1% static) | arc (ref) | lru = exact-lru = ref | belady | best |")
    print("| --- | ---: |" + " ---: |" * 7 + " --- |")
    for c in cells:
        best = winners(run, c, SIX)
        row = []
        for p in SIX:
            v = "%.4f" % run[p][c]
            v = "**%s**" % v if p in best else v
            if p in refs:
                v += " (%.4f)" % ref[refs[p]][c]
            row.append(v)
        lru_equal = r4(run["lru"][c]) == r4(run["exact-lru"][c]) == r4(ref["LRU"][c])
        print("| %s | %d | %s | %.4f | %s |" % (c[0], c[1], " | ".join(row), run["belady"][c],
                                              ", ".join(best))
              + ("" if lru_equal else " lru %.4f, exact-lru %.4f, reference %.4f"
                 % (run["lru"][c], run["exact-lru"][c], ref["LRU"][c])))


def compare(run, a, b):
    cells = sorted(run["belady"])
    diff = {c: (run[a][c] - run[b][c]) * 100 for c in cells}
    better = [c for c in cells if r4(run[a][c]) < r4(run[b][c])]
    worse = [c for c in cells if r4(run[a][c]) > r4(run[b][c])]
    worst = max(cells, key=lambda c: diff[c])
    print("%s against %s: better in %d cells, worse in %d, equal in %d; worst %s %d %+.2f points"
          % (a, b, len(better), len(worse), len(cells) - len(better) - len(worse), worst[0],
             worst[1], diff[worst]))
    for c in sorted(worse, key=lambda c: -diff[c]):
        if diff[c] > 0.5:
            print("  worse by over half a point: %s %d %+.2f" % (c[0], c[1], diff[c]))


def main(argv):
    usage = __doc__.strip().splitlines()[4:8]
    if len(argv) < 3:
        sys.exit("\n".join(u.strip() for u in usage))
    cmd, run = argv[1], run_cells(argv[2])
    if cmd == "summary" and len(argv) in (3, 4):
        summary(run, ref_cells(argv[3]) if len(argv) == 4 else None)
    elif cmd == "traces" and len(argv) == 3:
        traces(run)
    elif cmd == "full" and len(argv) == 4:
        if "exact-lru" not in run:
            sys.exit("tables: full needs exact-lru in %s" % argv[2])
        full(run, ref_cells(argv[3]))
    elif cmd == "compare" and len(argv) == 5:
        for p in argv[3:5]:
            if p not in run:
                sys.exit("tables: no %s in %s" % (p, argv[2]))
        compare(run, argv[3], argv[4])
    else:
        sys.exit("\n".join(u.strip() for u in usage))


if __name__ == "__main__":
    main(sys.argv)
