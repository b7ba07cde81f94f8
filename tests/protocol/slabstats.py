#!/usr/bin/env python3
"""tests/protocol/slabstats.py - "stats slabs" and "stats items" beside memcached 1.6.18.

Usage: slabstats.py LARDERD MEMCACHED [MEMCACHED_TOOL]

larderd shows its engine's size classes as memcached's slab classes. Both
servers get the same 600 items of sizes from 1 byte to 20 KiB. Checks:
  - every line has memcached's shape ("STAT <class>:<name> <n>", then
    active_slabs and total_malloced; "STAT items:<class>:<name> <n>"), and
    every per-class name larderd prints is one memcached prints, in
    memcached's order;
  - the classes' used_chunks and the items' numbers each sum to the 600
    items, which is curr_items; used + free = total chunks; total_malloced
    is at least the bytes of the used chunks;
  - memcached-tool's display (which reads both) lists the classes and
    their counts, summing to 600;
  - after every key is deleted, no class lists items and none holds used
    chunks (the engine frees in the background: polled, 60 s at most).
Each count is read in the same write as the last writes before it (their
"noreply" sets or deletes, then the stats command): the server reads the
command microseconds after those writes, before its maintainer (which
applies writes a batching window later) has counted them, so only the
flush each form takes first (server/exec/stats.c) makes the count exact.
With the flush removed from "stats slabs", "stats items" or "stats", the
check on that form fails (its count short by the last writes); read a
round trip after the writes, as before, they passed without it.
"""
import re
import subprocess
import sys
import time

from larderd_client import flushed, request, stat
from loopback import run_driver
from metadump import start_both, stop_all, store

SLAB = re.compile(rb"^STAT (\d+):(\w+) (\d+)$")
ITEM = re.compile(rb"^STAT items:(\d+):(\w+) (\d+)$")
TOTAL = re.compile(rb"^STAT (active_slabs|total_malloced) (\d+)$")
ITEMS = 600
TAIL = 100  # items set in the write that reads a count


def sets(items):
    return b"".join(b"set %s %d %d %d noreply\r\n%s\r\n" % (k, f, e, len(v), v)
                    for k, (f, e, v) in items)


def after(port, writes, command):
    """command's reply, sent in one write right behind writes (noreply)."""
    return request(port, writes + command)


def parse(out, pattern, totals=None):
    """{class: {name: n}} and the names in order of first appearance."""
    if not out.endswith(b"END\r\n"):
        raise RuntimeError("reply does not end in END: %r" % out[-60:])
    classes, order = {}, []
    for line in out[:-len(b"END\r\n")].split(b"\r\n")[:-1]:
        m = pattern.match(line)
        if m:
            classes.setdefault(int(m.group(1)), {})[m.group(2)] = int(m.group(3))
            if m.group(2) not in order:
                order.append(m.group(2))
            continue
        t = TOTAL.match(line) if totals is not None else None
        if not t:
            raise RuntimeError("line of the wrong shape: %r" % line)
        totals[t.group(1)] = int(t.group(2))
    return classes, order


def check_order(mine, theirs, what):
    missing = [n for n in mine if n not in theirs]
    if missing:
        raise RuntimeError("%s: names memcached does not print: %r" % (what, missing))
    if mine != [n for n in theirs if n in mine]:
        raise RuntimeError("%s: names out of memcached's order: %r" % (what, mine))


def main():
    larderd, memcached = sys.argv[1], sys.argv[2]
    tool = sys.argv[3] if len(sys.argv) > 3 else None
    lp, mp, procs = start_both(larderd, memcached)
    try:
        items = {b"s:%d" % i: (0, 0, b"v" * (1 + i * 37 % 20480)) for i in range(ITEMS)}
        store(mp, items)
        listed = list(items.items())
        store(lp, dict(listed[:-2 * TAIL]))
        # stats items' flush: its numbers count the sets just before it
        early, _ = flushed(lambda: parse(after(lp, sets(listed[-2 * TAIL:-TAIL]),
                                               b"stats items\r\n"), ITEM))
        if sum(c[b"number"] for c in early.values()) != ITEMS - TAIL:
            raise RuntimeError("stats items right after sets: %d items, %d stored"
                               % (sum(c[b"number"] for c in early.values()), ITEMS - TAIL))

        totals = {}
        slabs, slab_names = flushed(lambda: parse(after(lp, sets(listed[-TAIL:]),
                                                        b"stats slabs\r\n"), SLAB, totals))
        _, their_slab_names = parse(request(mp, b"stats slabs\r\n"), SLAB, {})
        check_order(slab_names, their_slab_names, "stats slabs")
        if totals.get(b"active_slabs") != len(slabs):
            raise RuntimeError("active_slabs %r for %d classes" % (totals, len(slabs)))
        used = sum(c[b"used_chunks"] for c in slabs.values())
        curr = flushed(lambda: stat(lp, b"curr_items"), ITEMS)
        if used != ITEMS or curr != ITEMS:
            raise RuntimeError("used_chunks sum %d, curr_items %d, stored %d" % (used, curr, ITEMS))
        for cls, c in slabs.items():
            if c[b"used_chunks"] + c[b"free_chunks"] != c[b"total_chunks"] or c[b"total_pages"] == 0:
                raise RuntimeError("class %d does not add up: %r" % (cls, c))
        if totals[b"total_malloced"] < sum(c[b"used_chunks"] * c[b"chunk_size"] for c in slabs.values()):
            raise RuntimeError("total_malloced below the used chunks' bytes: %r" % totals)
        print("stats slabs: %d classes in memcached's shape, %d used chunks = curr_items"
              % (len(slabs), used))

        items_stats, item_names = flushed(lambda: parse(request(lp, b"stats items\r\n"), ITEM))
        _, their_item_names = parse(request(mp, b"stats items\r\n"), ITEM)
        check_order(item_names, their_item_names, "stats items")
        numbers = {cls: c[b"number"] for cls, c in items_stats.items()}
        if sum(numbers.values()) != ITEMS or any(numbers[k] != slabs[k][b"used_chunks"] for k in numbers):
            raise RuntimeError("stats items %r against slabs' used chunks" % numbers)
        print("stats items: %d classes, numbers sum to %d" % (len(numbers), ITEMS))

        if tool:
            r = subprocess.run(["perl", tool, "127.0.0.1:%d" % lp, "display"],
                               capture_output=True, timeout=120)
            rows = [l.split() for l in r.stdout.decode().splitlines()[1:]]
            counted = sum(int(row[4]) for row in rows)
            if r.returncode != 0 or len(rows) != len(slabs) or counted != ITEMS:
                raise RuntimeError("memcached-tool display: rc %d, %d rows, %d items:\n%s"
                                   % (r.returncode, len(rows), counted, r.stdout.decode()))
            print("memcached-tool display: %d classes, %d items" % (len(rows), counted))

        deletes = b"".join(b"delete %s noreply\r\n" % k for k in items)
        curr = flushed(lambda: int(re.search(rb"\r\nSTAT curr_items (\d+)\r\n",
                                             after(lp, deletes, b"stats\r\n")).group(1)), 0)
        if curr != 0:
            raise RuntimeError("curr_items %d after deleting every key" % curr)
        deadline = time.time() + 60
        while True:
            slabs, _ = parse(request(lp, b"stats slabs\r\n"), SLAB, {})
            items_stats, _ = parse(request(lp, b"stats items\r\n"), ITEM)
            if not items_stats and all(c[b"used_chunks"] == 0 for c in slabs.values()):
                break
            if time.time() > deadline:
                raise RuntimeError("after deletes: items %r" % items_stats)
            time.sleep(0.2)
        print("after deleting every key: no class holds items")
    finally:
        stop_all(procs)
    print("PASS")


if __name__ == "__main__":
    run_driver(main)
