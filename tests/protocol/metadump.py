#!/usr/bin/env python3
"""tests/protocol/metadump.py - "lru_crawler metadump" beside memcached 1.6.18.

Usage: metadump.py LARDERD MEMCACHED [MEMCACHED_TOOL]

Both servers get the same items (keys with characters that need encoding,
client flags, some with an exptime). Checks:
  - every dump line of both has memcached's shape (the same fields in the
    same order), lines end in "\\n" and the dump in "END\\r\\n";
  - both dump the same keys, with exp=-1 for the same ones; each server's
    absolute expiry times lie within its own window (the wall clock when its
    stores began, plus the exptime, less 3 s for memcached's once-a-second
    clock, up to the clock when its dump ended, plus the exptime and 2 s), so
    that the two servers, written one after the other, are not compared with
    each other's clock and a loaded machine only widens the windows;
  - once fetches are tracked (an "me" first), both say fetch=yes for the
    items read by a get since, and no for the others;
  - the error replies of malformed forms are memcached's;
  - memcached-tool's "dump" (which reads the metadump, then gets every key)
    prints the same items from both;
  - a dump far larger than the output high water (it suspends and resumes)
    lists every key exactly once;
  - dumps whose connection closes midway free their cursor (larderd's exit
    status, under LeakSanitizer) and leave the server serving;
  - SIGTERM while a dump is suspended (its client reads nothing): exit
    status 0, the cursor freed before the cache.
"""
import os
import re
import socket
import subprocess
import sys
import time
import urllib.parse

from larderd_client import request
from loopback import recv_until, run_driver, serve

LINE = re.compile(rb"^key=(\S+) exp=(-?\d+) la=(\d+) cas=(\d+) fetch=(yes|no) cls=(\d+) size=(\d+)$")


def store(port, items):
    """Sets every item, 500 to a round trip (larderd slows down on one huge
    pipelined burst: see the report; not what this test is about)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    pending = list(items.items())
    for at in range(0, len(pending), 500):
        buf = b""
        for key, (flags, exptime, value) in pending[at:at + 500]:
            buf += b"set %s %d %d %d noreply\r\n%s\r\n" % (key, flags, exptime, len(value), value)
        s.sendall(buf + b"mn\r\n")
        recv_until(s, b"MN\r\n", "the stores were answered")
    s.close()


def dump(port, field=2):
    """key -> its line's exp (field 2), or another field of LINE."""
    out = request(port, b"lru_crawler metadump all\r\n")
    if not out.endswith(b"END\r\n"):
        raise RuntimeError("dump does not end in END: %r" % out[-50:])
    body = out[:-len(b"END\r\n")]
    lines = body.split(b"\n")[:-1] if body else []
    entries = {}
    for l in lines:
        m = LINE.match(l)
        if not m:
            raise RuntimeError("line of the wrong shape: %r" % l)
        key = urllib.parse.unquote_to_bytes(m.group(1).decode())
        if key in entries:
            raise RuntimeError("key %r dumped twice" % key)
        entries[key] = int(m.group(2)) if field == 2 else m.group(field)
    return entries


def start_both(larderd, memcached):
    """Both servers on loopback with 256 MiB: their ports and processes."""
    quiet = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL}
    lproc, lp = serve([larderd, "-l", "127.0.0.1", "-m", "256"], **quiet)
    try:
        mproc, mp = serve([memcached, "-l", "127.0.0.1", "-U", "0", "-m", "256",
                           "-u", "root"], **quiet)
    except Exception:
        lproc.kill()
        lproc.wait()
        raise
    return lp, mp, [lproc, mproc]


def stop_all(procs):
    """Stops start_both's servers; larderd (under the sanitizers, LeakSanitizer
    too) must exit cleanly."""
    for p in procs:
        p.terminate()
        p.wait(timeout=30)
    if procs[0].returncode != 0:
        raise RuntimeError("larderd exited with %d" % procs[0].returncode)


def main():
    larderd, memcached = sys.argv[1], sys.argv[2]
    tool = sys.argv[3] if len(sys.argv) > 3 else None
    lp, mp, procs = start_both(larderd, memcached)
    try:
        items = {}
        for i in range(300):
            key = b"k%d%s" % (i, [b"", b"%20x", b":/?", b"\xc3\xa9", b"~_.-", b"+="][i % 6])
            items[key] = (i * 7919 % 65536, 1000 if i % 4 == 0 else 0, b"v" * (i % 50))
        dumps, windows = [], []
        for port in (lp, mp):
            began = time.time()
            store(port, items)
            dumps.append(dump(port))
            windows.append((int(began) - 3, int(time.time()) + 2))
        ld, md = dumps
        if set(ld) != set(md) or set(ld) != set(items):
            raise RuntimeError("dumped keys differ: %d larderd, %d memcached, %d stored"
                               % (len(ld), len(md), len(items)))
        for k, (_, exptime, _) in items.items():
            if (ld[k] == -1) != (md[k] == -1) or (ld[k] == -1) != (exptime == 0):
                raise RuntimeError("exp of %r: larderd %d, memcached %d" % (k, ld[k], md[k]))
            for name, exp, (lo, hi) in (("larderd", ld[k], windows[0]), ("memcached", md[k], windows[1])):
                if exp != -1 and not lo + exptime <= exp <= hi + exptime:
                    raise RuntimeError("exp of %r in %s: %d, outside %d..%d"
                                       % (k, name, exp, lo + exptime, hi + exptime))
        print("metadump all: same keys and expiry as memcached, same line shape")

        # fetch=: once a client has asked about fetches (me; larderd tracks
        # them from then on, docs/server.md), the items read since show yes.
        read = [k for i, k in enumerate(sorted(items)) if i % 3 == 0]
        for port in (lp, mp):
            request(port, b"me %s\r\n" % sorted(items)[1], end_marks=(b"\r\n",))
            request(port, b"get " + b" ".join(read) + b"\r\n")
        lf, mf = dump(lp, 5), dump(mp, 5)
        if lf != mf or sorted(k for k in lf if lf[k] == b"yes") != sorted(read):
            raise RuntimeError("fetch= differs: larderd %d yes, memcached %d yes, %d read"
                               % (sum(v == b"yes" for v in lf.values()),
                                  sum(v == b"yes" for v in mf.values()), len(read)))
        print("metadump fetch=: the items read show yes in both")

        for bad in [b"lru_crawler metadump\r\n", b"lru_crawler metadump foo\r\n",
                    b"lru_crawler metadump 0\r\n", b"lru_crawler metadump 200\r\n",
                    b"lru_crawler\r\n", b"lru_crawler metadump all extra\r\n"]:
            a, b = request(lp, bad), request(mp, bad)
            if a != b:
                raise RuntimeError("%r: larderd %r, memcached %r" % (bad, a, b))
        print("malformed forms: memcached's replies")

        if tool and os.path.exists(tool):
            outs = []
            for port in (lp, mp):
                r = subprocess.run(["perl", tool, "127.0.0.1:%d" % port, "dump"],
                                   capture_output=True, timeout=120)
                # "add KEY FLAGS EXP LEN" + value; EXP differs by the second.
                lines = r.stdout.split(b"\r\n")
                recs = set()
                for i in range(0, len(lines) - 1, 2):
                    f = lines[i].split(b" ")
                    recs.add((f[1], f[2], f[4], lines[i + 1]))
                outs.append(recs)
            if outs[0] != outs[1] or len(outs[0]) != len(items):
                raise RuntimeError("memcached-tool dump differs: %d vs %d items"
                                   % (len(outs[0]), len(outs[1])))
            print("memcached-tool dump: the same %d items from both" % len(outs[0]))

        big = {b"big:%d" % i: (0, 0, b"x" * 200) for i in range(30000)}
        store(lp, big)
        ld = dump(lp)
        missing = [k for k in big if k not in ld]
        if missing or len(ld) != len(big) + len(items):
            raise RuntimeError("big dump: %d missing, %d lines" % (len(missing), len(ld)))
        print("big dump (%d lines, suspended and resumed): every key once" % len(ld))

        # Connections closed mid-dump: their cursors are freed (a leak fails
        # larderd's exit status under LeakSanitizer), and the server goes on.
        for _ in range(5):
            s = socket.create_connection(("127.0.0.1", lp), timeout=30)
            s.sendall(b"lru_crawler metadump all\r\n")
            s.recv(1024)
            s.close()
        if len(dump(lp)) != len(ld):
            raise RuntimeError("dump after abandoned dumps differs")
        print("dumps abandoned midway: freed, later dumps whole")

        # A dump suspended (its client reads nothing) when SIGTERM comes: the
        # server stops with status 0, its cursor freed before the cache
        # (LeakSanitizer and ASan in the sanitizer builds); stop_all checks.
        held = socket.create_connection(("127.0.0.1", lp), timeout=30)
        held.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        held.sendall(b"lru_crawler metadump all\r\n")
        held.recv(1024)
        stats = request(lp, b"stats\r\n")
        deadline = time.time() + 60
        while b"STAT paused_connections 1\r\n" not in stats and time.time() < deadline:
            stats = request(lp, b"stats\r\n")
    finally:
        stop_all(procs)
    held.close()
    print("SIGTERM during a suspended dump: clean exit")
    print("PASS")


if __name__ == "__main__":
    run_driver(main)
