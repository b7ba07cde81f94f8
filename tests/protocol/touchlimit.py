#!/usr/bin/env python3
"""tests/protocol/touchlimit.py - a touch the engine refuses is reported as
such, never as a miss (docs/server.md, touch-over-eighth).

Usage: touchlimit.py LARDERD

A server with -m 2 -I 512k: the engine's entry limit (1/8 of the capacity)
is under -I. The largest value stored without a deadline is found by
bisection (a set one byte over it is "SERVER_ERROR object too large for
cache"); giving that item a deadline adds the deadline's 8 bytes, which the
engine refuses (LARDER_EVALSIZE), keeping the item as it was. Each front end
must say so, and the item must read back whole, still without a TTL:
  - touch: the SERVER_ERROR line (none with noreply), touch_hits and
    touch_misses unchanged;
  - gat and gats: the keys before it answered (more than the server's high
    water, where the reply may pause), then the SERVER_ERROR line instead of
    END, the keys after it left untouched;
  - mg with T: the SERVER_ERROR line instead of its reply, and with R
    no win token left taken (the next mg would answer Z);
  - ma with T on a counter as long as that item: the same line, the
    number unchanged with its TTL (both go in one write), the next ma
    counting from it; on a small counter, T's TTL set;
  - the binary TOUCH, GAT and GATQ: status 0x0003 ("Too large."), also for
    the quiet GATQ.
All of it twice: before and after an mg h makes larderd track fetches (its
touch then swaps the item to mark it fetched: the other path to the engine).
A small item's touch still answers TOUCHED, and a missing key NOT_FOUND.
"""
import signal
import socket
import struct
import subprocess
import sys

from larderd_client import Conn, stop
from loopback import run_driver, serve

TOO_LARGE = b"SERVER_ERROR object too large for cache"
BIN_TOUCH, BIN_GAT, BIN_GATQ = 0x1C, 0x1D, 0x1E
BIN_E2BIG = 0x0003
AFTER = b" ".join(b"none%d" % i for i in range(40))  # keys never stored


def shown(v):
    """A reply for a failure message: a long value by its length and start."""
    if isinstance(v, tuple):
        return "(%s)" % ", ".join(shown(e) for e in v)
    if isinstance(v, bytes) and len(v) > 100:
        return "%d bytes starting %r" % (len(v), v[:8])
    return repr(v)


def expect(what, got, want):
    if got != want:
        raise RuntimeError("%s: got %s, want %s" % (what, shown(got), shown(want)))


def largest_plain_value(c):
    """The largest value the server stores under key "big" without a deadline."""
    lo, hi = 1, 512 * 1024  # lo is stored, hi is refused
    c.set(b"big", 0, 0, b"x" * lo)
    c.send(b"set big 0 0 %d\r\n%s\r\n" % (hi, b"x" * hi))
    expect("set at -I", c.line(), TOO_LARGE)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        c.send(b"set big 0 0 %d\r\n%s\r\n" % (mid, b"x" * mid))
        r = c.line()
        if r == b"STORED":
            lo = mid
        else:
            expect("set of %d bytes" % mid, r, TOO_LARGE)
            hi = mid
    return lo


def ttl_of(c, key):
    c.send(b"mg %s t\r\n" % key)
    return c.line()


def binary(c, opcode, key, exptime):
    """One binary request with a 4-byte exptime extra; returns the status."""
    hdr = struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), 4, 0, 0, 4 + len(key), 0, 0)
    c.send(hdr + struct.pack(">I", exptime) + key)
    r = c.exact(24)
    expect("binary response magic", r[0], 0x81)
    status, body = struct.unpack(">H", r[6:8])[0], struct.unpack(">I", r[8:12])[0]
    c.exact(body)
    return status


def check_refusals(c, b, size, tag):
    """c: a text connection; b: a binary one (a connection speaks the
    protocol of its first byte)."""
    value = b"x" * size

    def intact(what):
        expect("%s (%s): the item's value" % (what, tag), c.get(b"big"), (0, value))
        expect("%s (%s): the item's TTL" % (what, tag), ttl_of(c, b"big"), b"HD t-1")

    c.set(b"big", 0, 0, value)
    c.set(b"a", 0, 0, b"1")
    c.set(b"z", 0, 0, b"2")
    hits, misses = c.stat(b"touch_hits"), c.stat(b"touch_misses")

    c.send(b"touch big 100\r\n")
    expect("touch (%s)" % tag, c.line(), TOO_LARGE)
    intact("touch")
    c.send(b"touch big 100 noreply\r\nmn\r\n")
    expect("touch noreply (%s)" % tag, c.line(), b"MN")
    intact("touch noreply")
    expect("touch_hits (%s)" % tag, c.stat(b"touch_hits"), hits)
    expect("touch_misses (%s)" % tag, c.stat(b"touch_misses"), misses)

    for cmd in (b"gat", b"gats"):
        # a, m1 and m2 answered: over the server's 256 KiB high water, where
        # the reply pauses between batches of keys; AFTER's keys put z in a
        # later batch, which a reply that lost the error would go on to
        before = ((b"a", b"1"), (b"m1", b"m" * 200000), (b"m2", b"n" * 200000))
        for key, v in before:
            c.set(key, 0, 0, v)
        c.send(b"%s 100 a m1 m2 big %s z\r\n" % (cmd, AFTER))
        for key, v in before:
            l = c.line()
            if not l.startswith(b"VALUE %s 0 %d" % (key, len(v))):
                raise RuntimeError("%s (%s): %r where %s's VALUE was due" % (cmd, tag, l, key))
            expect("%s (%s): %s's value" % (cmd, tag, key), c.exact(len(v) + 2), v + b"\r\n")
        expect("%s (%s): the reply's end" % (cmd, tag), c.line(), TOO_LARGE)
        intact(cmd.decode())
        for key, _ in before:
            expect("%s (%s): %s touched" % (cmd, tag, key), ttl_of(c, key), b"HD t100")
        expect("%s (%s): z left alone" % (cmd, tag), ttl_of(c, b"z"), b"HD t-1")

    c.send(b"mg big T100 t v\r\n")
    expect("mg T (%s)" % tag, c.line(), TOO_LARGE)
    intact("mg T")
    # the T that decides the recache is refused: no win token left taken
    # (an mg of the item would answer Z, and no client could win it)
    c.send(b"mg big T100 R200 v\r\n")
    expect("mg T R (%s)" % tag, c.line(), TOO_LARGE)
    intact("mg T R")
    c.send(b"mg big s\r\n")
    expect("mg T R (%s): the win token" % tag, c.line(), b"HD s%d" % size)

    # ma: a counter as long as the item (memcached reads "1" and the spaces
    # after it as 1): its T goes in the same write as the number, so both
    # are refused, and the next ma starts from the number as it was
    counter = b"1" + b" " * (size - 1)
    c.set(b"num", 0, 0, counter)
    c.send(b"ma num T100 t v\r\n")
    expect("ma T (%s)" % tag, c.line(), TOO_LARGE)
    expect("ma T (%s): the counter" % tag, c.get(b"num"), (0, counter))
    expect("ma T (%s): its TTL" % tag, ttl_of(c, b"num"), b"HD t-1")
    c.send(b"ma num t v\r\n")
    expect("ma after the refused T (%s)" % tag, c.line(), b"VA 1 t-1")
    expect("ma after the refused T (%s): its value" % tag, c.line(), b"2")
    c.set(b"n", 0, 0, b"5")
    c.send(b"ma n t T100 v\r\n")  # a t before the T shows the TTL before it
    expect("ma T on a small counter (%s)" % tag, c.line(), b"VA 1 t-1")
    expect("ma T on a small counter (%s): its value" % tag, c.line(), b"6")
    expect("ma T on a small counter (%s): its TTL" % tag, ttl_of(c, b"n"), b"HD t100")

    for op in (BIN_TOUCH, BIN_GAT, BIN_GATQ):
        expect("binary 0x%02x (%s)" % (op, tag), binary(b, op, b"big", 100), BIN_E2BIG)
        intact("binary 0x%02x" % op)

    c.set(b"a", 0, 0, b"1")
    c.send(b"touch a 100\r\ntouch nokey 100\r\n")
    expect("touch of a small item (%s)" % tag, c.line(), b"TOUCHED")
    expect("touch of a missing key (%s)" % tag, c.line(), b"NOT_FOUND")


def main():
    larderd = sys.argv[1]
    p, port = serve([larderd, "-l", "127.0.0.1", "-t", "2", "-m", "2", "-I", "512k"],
                    stderr=subprocess.PIPE, text=True)
    try:
        c = Conn(port)
        size = largest_plain_value(c)
        b = Conn(port)
        check_refusals(c, b, size, "fetches untracked")
        c.send(b"mg a h\r\n")
        expect("mg h", c.line(), b"HD h0")
        check_refusals(c, b, size, "fetches tracked")
        for conn in (c, b):
            conn.s.shutdown(socket.SHUT_RDWR)
    finally:
        if p.poll() is None:
            stop(p, signal.SIGTERM)
    print("ok: touch, gat, gats, mg T and the binary TOUCH/GAT/GATQ at the entry limit "
          "(largest plain value %d bytes)" % size)


if __name__ == "__main__":
    run_driver(main)
