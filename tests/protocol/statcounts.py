#!/usr/bin/env python3
"""tests/protocol/statcounts.py - the command counters of "stats" beside memcached 1.6.18.

Usage: statcounts.py LARDERD MEMCACHED

Monitoring reads hit ratios from these counters (get_hits / cmd_get, and
the same for touch, incr, decr), so each command must count where
memcached counts it. Both servers get the same scenario, each on keys of
its own; the counters' changes across it must be equal:
  - get/gets: cmd_get, get_hits, get_misses; gat/gats: the touch counters
    only (cmd_touch, touch_hits, touch_misses), never the get ones;
  - mg: a hit counts cmd_get and get_hits, a hit with T counts
    touch_hits (cmd_touch) instead, a miss cmd_get and get_misses; a miss
    that N creates counts cmd_get, get_hits and total_items;
  - ma: a hit incr_hits or decr_hits, a miss incr_misses, a miss that N
    creates only total_items.
Not compared: counters whose differences docs/server.md lists (CAS uniques,
so cas_*; get_expired, get_flushed; cmd_meta, which memcached 1.6.18 does
not count).
"""
import sys

from loopback import run_driver
from metadump import request, start_both, stop_all

COUNTERS = [b"cmd_get", b"get_hits", b"get_misses", b"cmd_touch", b"touch_hits",
            b"touch_misses", b"cmd_set", b"total_items", b"incr_hits", b"incr_misses",
            b"decr_hits", b"decr_misses", b"delete_hits", b"delete_misses"]

SCENARIOS = [
    ("get", b"set g1 0 0 1\r\nx\r\nget g1 g2\r\ngets g1\r\n"),
    ("gat", b"set t1 0 0 1\r\nx\r\ngat 100 t1 t2\r\ngats 100 t1\r\n"),
    ("touch", b"set u1 0 0 1\r\nx\r\ntouch u1 100\r\ntouch u2 100\r\n"),
    ("mg", b"set m1 0 0 1\r\nx\r\nmg m1 v\r\nmg m2 v\r\nmg m1 s f\r\n"),
    ("mg-T", b"set n1 0 0 1\r\nx\r\nmg n1 v T100\r\nmg n2 v T100\r\n"),
    ("mg-N", b"mg v1 N100 v\r\nmg v1 N100 v\r\n"),
    ("ma", b"set a1 0 0 1\r\n5\r\nma a1\r\nma a1 MD\r\nma a2\r\nma a2 MD\r\n"),
    ("ma-N", b"ma c1 N0 J5 v\r\nma c2 N0 MD\r\nma c1 v\r\n"),
    ("delete", b"set d1 0 0 1\r\nx\r\ndelete d1\r\ndelete d1\r\nmd d2\r\n"),
]


def counters(port):
    out = request(port, b"stats\r\n")
    stats = dict(l.split(b" ")[1:3] for l in out.split(b"\r\n") if l.startswith(b"STAT "))
    return {k: int(stats[k]) for k in COUNTERS}


def main():
    larderd, memcached = sys.argv[1], sys.argv[2]
    lp, mp, procs = start_both(larderd, memcached)
    try:
        for name, ops in SCENARIOS:
            change = []
            for port in (lp, mp):
                before = counters(port)
                request(port, ops + b"mn\r\n", end_marks=(b"MN\r\n",))
                after = counters(port)
                change.append({k: after[k] - before[k] for k in COUNTERS})
            if change[0] != change[1]:
                diff = ["%s larderd %d memcached %d" % (k.decode(), change[0][k], change[1][k])
                        for k in COUNTERS if change[0][k] != change[1][k]]
                raise RuntimeError("%s: %s" % (name, ", ".join(diff)))
            print("%-7s counted as memcached counts it: %s" % (name, ", ".join(
                "%s +%d" % (k.decode(), v) for k, v in change[0].items() if v)))
    finally:
        stop_all(procs)
    print("PASS")


if __name__ == "__main__":
    run_driver(main)
