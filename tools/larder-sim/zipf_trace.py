#!/usr/bin/env python3
"""zipf_trace.py - a synthetic trace in the public traces' text format: keys
drawn from a Zipf law, every object of one size, for runs longer than any of
the public traces (docs/policies.md, "S3-FIFO's ghost over a long run").

    zipf_trace.py REQUESTS KEYS ALPHA SIZE SEED > trace.txt

Prints one "id size" line per request: id in 0..KEYS-1, the key of rank r
drawn with probability proportional to 1 / (r + 1)^ALPHA, ids shuffled so
that rank and id are unrelated. The same arguments give the same file.
"""
import bisect
import random
import sys


def main(argv):
    if len(argv) != 6:
        sys.exit(__doc__.strip().splitlines()[4].strip())
    requests, keys, alpha, size, seed = (int(argv[1]), int(argv[2]), float(argv[3]),
                                         int(argv[4]), int(argv[5]))
    if requests < 1 or keys < 1 or size < 1 or alpha < 0:
        sys.exit("zipf_trace: REQUESTS, KEYS and SIZE must be positive, ALPHA at least 0")
    rng = random.Random(seed)
    cdf, total = [], 0.0
    for r in range(keys):
        total += 1.0 / (r + 1) ** alpha
        cdf.append(total)
    ids = list(range(keys))
    rng.shuffle(ids)
    out = sys.stdout
    for _ in range(requests):
        r = bisect.bisect_left(cdf, rng.random() * total)
        out.write("%d %d\n" % (ids[min(r, keys - 1)], size))


if __name__ == "__main__":
    main(sys.argv)
