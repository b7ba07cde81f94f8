#!/usr/bin/env python3
"""tests/protocol/restart.py - larderd's warm restart (-e/--snapshot-file).

Usage: restart.py LARDERD

Checks, each against a fresh server on a free port and a temporary file:
  - fill (values of 0 B to 20 KiB, random bytes and client flags, some with
    an exptime), SIGTERM, restart with the same file: every key comes back
    with its value and flags, and keys given an exptime still have one;
  - the same through SIGUSR1 (memcached's graceful stop);
  - SIGINT does not save (the previous snapshot stays as it was);
  - a damaged snapshot is reported and the server starts empty and serves;
  - -e naming a FIFO: the server starts without waiting for a writer, and
    SIGTERM reports the save refused and leaves the FIFO as it was;
  - with --compress-min: every value reads back whole before and after a
    restart, and the same items hold fewer bytes ("bytes" in stats) than
    without it;
  - many small items (1,000,000 at -m 128, whose index is sized for
    131,072): the restart's load grows the index for them first instead of
    under its writes (a load into an index sized for a tenth of its entries
    took minutes before), and the server holds every item; a sample of
    them is read back. Both counts of them need the flush "stats" takes
    (server/exec/stats.c): the one after the fill is sent in the same write
    as the last sets, the one after the restart waits in the socket for
    the workers, which start right after the load's last write. Without
    that flush each failed (200,000 items: the fill 3 runs of 3, the
    restart 2 of 3; read a round trip after the fill, as before, it passed).
Every wait has a deadline; nothing sleeps to synchronise.
"""
import os
import random
import signal
import stat
import subprocess
import sys
import tempfile
import time

from larderd_client import Conn, flushed, stop
from loopback import run_driver, serve


def start(larderd, snap, extra=()):
    """larderd on snap: its process and port."""
    return serve([larderd, "-l", "127.0.0.1", "-t", "2", "-m", "128", "-e", snap, "-v"] +
                 list(extra), stderr=subprocess.PIPE, text=True)


def fill(port, n, rng):
    c = Conn(port)
    items = {}
    for i in range(n):
        key = b"key:%d:%d" % (i, rng.randrange(1 << 30))
        size = rng.choice([0, 1, 10, 100, 500, 1000, 4096, 20000])
        value = bytes(rng.getrandbits(8) for _ in range(min(size, 64))) * (size // 64 + 1)
        value = value[:size]
        flags = rng.randrange(1 << 32)
        exptime = 3600 if i % 3 == 0 else 0
        c.set(key, flags, exptime, value)
        items[key] = (flags, value, exptime)
    return items


def compare(port, items):
    c = Conn(port)
    missing = wrong = ttl_bad = 0
    for key, (flags, value, exptime) in items.items():
        got = c.get(key)
        if got is None:
            missing += 1
        elif got != (flags, value):
            wrong += 1
        elif exptime:
            t = c.ttl(key)
            if t is None or t <= 0 or t > exptime:
                ttl_bad += 1
        elif c.ttl(key) != -1:
            ttl_bad += 1
    if missing or wrong or ttl_bad:
        raise RuntimeError("after restart: %d missing, %d wrong, %d bad TTL of %d"
                           % (missing, wrong, ttl_bad, len(items)))


def round_trip(larderd, tmp, sig, rng):
    snap = os.path.join(tmp, "cache-%d.snap" % sig)
    p, port = start(larderd, snap)
    items = fill(port, 3000, rng)
    stop(p, sig)
    if not os.path.exists(snap):
        raise RuntimeError("signal %d saved no snapshot" % sig)
    p, port = start(larderd, snap)
    compare(port, items)
    stop(p, signal.SIGINT)
    return snap, items


def compressed(larderd, tmp):
    """The same fill with and without --compress-min: values whole, bytes fewer."""
    used = {}
    for extra in ([], ["--compress-min=64"]):
        snap = os.path.join(tmp, "compress-%d.snap" % len(extra))
        p, port = start(larderd, snap, extra)
        items = fill(port, 3000, random.Random(7))
        compare(port, items)
        used[len(extra)] = Conn(port).stat(b"bytes")
        stop(p, signal.SIGTERM)
        p, port = start(larderd, snap, extra)
        compare(port, items)
        stop(p, signal.SIGINT)
    if not used[1] < used[0] // 2:
        raise RuntimeError("--compress-min=64 holds %d bytes, raw %d: not under half"
                           % (used[1], used[0]))
    return used


def small_items(larderd, tmp, n=1000000):
    """Many small items through a restart: all back, a sample compared."""
    snap = os.path.join(tmp, "small.snap")
    p, port = start(larderd, snap)
    c = Conn(port)
    step = 20000
    batches = [b"".join(b"set s:%d 0 0 8 noreply\r\n%08d\r\n" % (i, i)
                        for i in range(base, min(base + step, n)))
               for base in range(0, n, step)]
    for batch in batches[:-1]:
        c.send(batch)
    # The last sets and the stats in one write: the count is exact only
    # through the flush stats takes first (slabstats.py says why).
    filled = flushed(lambda: c.stat(b"curr_items", batches[-1]), n)
    if filled != n:
        raise RuntimeError("filled %s of %d small items" % (filled, n))
    stop(p, signal.SIGTERM)
    t0 = time.monotonic()
    p, port = start(larderd, snap)
    c = Conn(port)
    held = flushed(lambda: c.stat(b"curr_items"), n)  # answered once the load is done
    up = time.monotonic() - t0
    bad = sum(c.get(b"s:%d" % i) != (0, b"%08d" % i) for i in range(0, n, 97))
    stop(p, signal.SIGINT)
    if held != n or bad:
        raise RuntimeError("after restart: %d of %d small items, %d of the sample wrong"
                           % (held, n, bad))
    return up


def main():
    larderd = sys.argv[1]
    rng = random.Random(1)
    with tempfile.TemporaryDirectory() as tmp:
        snap, items = round_trip(larderd, tmp, signal.SIGTERM, rng)
        print("SIGTERM: every key, value, flags and TTL back after restart")
        round_trip(larderd, tmp, signal.SIGUSR1, rng)
        print("SIGUSR1: the same")

        # SIGINT does not save: the file is the one SIGTERM wrote.
        before = open(snap, "rb").read()
        p, port = start(larderd, snap)
        Conn(port).set(b"after-sigint", 0, 0, b"x")
        stop(p, signal.SIGINT)
        if open(snap, "rb").read() != before:
            raise RuntimeError("SIGINT rewrote the snapshot")
        print("SIGINT: snapshot left as it was")

        # A damaged file: reported, then an empty cache that serves.
        data = bytearray(before)
        data[len(data) // 2] ^= 0xFF
        open(snap, "wb").write(bytes(data))
        p, port = start(larderd, snap)
        c = Conn(port)
        if any(c.get(k) is not None for k in list(items)[:100]):
            raise RuntimeError("a damaged snapshot was loaded")
        c.set(b"fresh", 1, 0, b"ok")
        if c.get(b"fresh") != (1, b"ok"):
            raise RuntimeError("the server does not serve after a refused snapshot")
        err = stop(p, signal.SIGINT)
        if "not loaded" not in err or "checksum" not in err:
            raise RuntimeError("no clear message for a damaged snapshot: %r" % err)
        print("damaged snapshot: refused (%s), started empty" % err.strip().splitlines()[0])

        # -e naming a FIFO: the start does not wait for a writer, SIGTERM
        # does not replace it with a snapshot (SNAP-L7, SNAP-S2).
        fifo = os.path.join(tmp, "fifo")
        os.mkfifo(fifo)
        p, port = start(larderd, fifo)
        Conn(port).set(b"k", 0, 0, b"v")
        err = stop(p, signal.SIGTERM)
        if not stat.S_ISFIFO(os.stat(fifo).st_mode) or "not saved" not in err:
            raise RuntimeError("-e FIFO: replaced, or no message: %r" % err)
        print("-e FIFO: started at once, left as it was (%s)"
              % next(l for l in err.splitlines() if "not saved" in l))
        used = compressed(larderd, tmp)
        print("--compress-min=64: every value back before and after a restart; "
              "%d bytes held, %d raw" % (used[1], used[0]))
        up = small_items(larderd, tmp)
        print("1,000,000 small items at -m 128: all back, up in %.1f s" % up)
    print("PASS")


if __name__ == "__main__":
    run_driver(main)
