#!/usr/bin/env python3
"""robustness.py LARDERD - bad input and hostile clients never crash larderd
nor grow its memory without bound; SIGTERM shuts it down cleanly.

Checks, each against the same running server (which must stay up):
  0. a meta store that fails (ms MA/MP/MR on a missing key) as the first
     store a worker sees: NS, no crash (it once read a value buffer that
     no store had allocated yet);
  1. a line without newline past 2 KiB: the server closes that connection;
  2. a huge declared value length: SERVER_ERROR, the bytes are swallowed;
  3. 1 MiB of random binary junk: no crash;
  3c. 100,000 noreply sets in one write all stored, each received byte
     moved at most once (input_bytes_moved); a 3 MiB multiget line copied
     O(line) times while its buffer grows;
  4. a slow reader pipelining 20,000 gets of a 100 KB value without reading:
     once the server has stopped reading it (stats: paused_connections),
     RSS has grown by less than 64 MiB (the output high-water mark holds);
  5. 1,000 idle connections (all accepted: stats): RSS per connection
     under 16 KiB;
  6. -c: a connection over the limit gets memcached's refusal;
  7. SIGTERM: exit status 0.
Nothing waits a fixed time: every wait polls a condition (a reply, a server
statistic, a socket becoming readable) with a generous deadline, so a loaded
machine only makes the test slower. The server is killed on exit whatever
happens.
"""
import os, random, resource, select, signal, socket, subprocess, sys, time

from larderd_client import flushed, request, stat
from loopback import rss_kib, serve

LARDERD = sys.argv[1]
MAXCONN = 1100
DEADLINE = 60.0  # generous: the machine may be loaded; nothing waits this long when it works


def connect(port):
    return socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)


def wait_stat(port, name, cond):
    """Polls stat name until cond(value) holds; returns the last value and whether it held."""
    deadline = time.monotonic() + DEADLINE
    while True:
        v = stat(port, name)
        if cond(v) or time.monotonic() > deadline:
            return v, cond(v)
        time.sleep(0.01)  # a poll interval, not a synchronisation


def closed_by_server(c, timeout=DEADLINE):
    c.settimeout(timeout)
    try:
        while True:
            b = c.recv(1 << 16)
            if not b:
                return True
    except (socket.timeout, ConnectionResetError):
        return False


def main():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
    srv, port = serve([LARDERD, "-l", "127.0.0.1", "-t", "2", "-m", "256", "-c", str(MAXCONN)])
    fails = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            fails.append(what)

    try:
        # 0. a failed meta store before any store built a value on the worker
        for mode in (b"MA", b"MP", b"MR"):
            r = request(port, b"ms nokey 2 " + mode + b"\r\nxx\r\n", b"\r\n")
            check(r == b"NS\r\n", "ms %s on a missing key as a worker's first store: %r" %
                  (mode.decode(), r))

        # 0b. curr_items counts every store answered before the stats, at once
        #     (memcached's does; larderd flushes the maintainer first, for at
        #     most STATS_FLUSH_S: a slower reply is asked again, flushed())
        base = flushed(lambda: stat(port, "curr_items"))
        request(port, b"".join(b"set ci%d 0 0 1 noreply\r\nx\r\n" % i for i in range(50)) +
                b"mn\r\n", b"MN\r\n")
        n = flushed(lambda: stat(port, "curr_items"), base + 50)
        check(n == base + 50, "curr_items counts 50 stores at once (%d after %d)" % (n, base))
        request(port, b"delete ci7\r\n", b"\r\n")
        n = flushed(lambda: stat(port, "curr_items"), base + 49)
        check(n == base + 49, "curr_items counts a delete at once (%d after %d)" % (n, base))

        # 1. endless line
        c = connect(port)
        c.sendall(b"set " + b"a" * 10000)
        check(closed_by_server(c), "line without newline past 2 KiB closes the connection")
        c.close()

        # 2. a declared length over the limit: the value is swallowed as it
        #    arrives, never buffered (RSS), and the error comes once it has
        #    gone by (as memcached sends it); the connection stays usable
        n = 9 << 20
        before = rss_kib(srv.pid)
        c = connect(port)
        c.sendall(b"set big 0 0 %d\r\n" % n)
        chunk = b"x" * (1 << 20)
        for _ in range(9):
            c.sendall(chunk)
        c.sendall(b"\r\nversion\r\n")
        r = b""
        while b"VERSION" not in r:
            b = c.recv(1 << 16)
            if not b:
                break
            r += b
        c.close()
        check(r.startswith(b"SERVER_ERROR object too large for cache\r\nVERSION "),
              "9 MiB value over the limit refused after it went by: %r" % r[:60])
        grown = rss_kib(srv.pid) - before
        check(grown < 4096, "the refused value was not buffered (RSS grew %d KiB)" % grown)
        check(request(port, b"version\r\n", b"\r\n").startswith(b"VERSION "), "server alive after swallow")

        # 3. binary junk
        rnd = random.Random(7)
        c = connect(port)
        try:
            c.sendall(bytes(rnd.getrandbits(8) for _ in range(1 << 20)))
        except OSError:
            pass
        c.close()
        check(request(port, b"version\r\n", b"\r\n").startswith(b"VERSION "), "server alive after junk")

        # 3b. read-modify-write under contention: 4 clients x 500 incr of one key
        #     and 4 clients x 200 appends must all land (replace_if_equals loop)
        import threading
        request(port, b"set ctr 0 0 1\r\n0\r\nset log 0 0 0\r\n\r\n", b"STORED\r\nSTORED\r\n")

        def hammer(tag):
            c = connect(port)
            f = c.makefile("rb")
            for _ in range(500):
                c.sendall(b"incr ctr 1\r\n")
                f.readline()
            for _ in range(200):
                c.sendall(b"append log 0 0 1\r\n%s\r\n" % tag)
                f.readline()
            c.close()

        ts = [threading.Thread(target=hammer, args=(t,)) for t in (b"a", b"b", b"c", b"d")]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        r = request(port, b"get ctr log\r\n", b"END\r\n")
        check(b"VALUE ctr 0 4\r\n2000\r\n" in r, "concurrent incr: 2000 of 2000 (%r)" % r[:40])
        check(b"VALUE log 0 800\r\n" in r and all(r.count(t) >= 200 for t in (b"a", b"b", b"c", b"d")),
              "concurrent append: 800 bytes, 200 from each client")

        # 3c. a deep pipeline costs linear time: 100,000 noreply sets in one
        #     write, then mn. Every set must land, and the server may copy or
        #     move each received byte at most once (input_bytes_moved within
        #     bytes_read): compacting the buffer after every request, or
        #     rescanning it from its start, would move gigabytes here.
        n = 100000
        burst = b"".join(b"set pipe%d 0 0 6 noreply\r\n%06d\r\n" % (i, i) for i in range(n))
        moved0, read0 = stat(port, "input_bytes_moved"), stat(port, "bytes_read")
        r = request(port, burst + b"mn\r\n", b"MN\r\n")
        check(r == b"MN\r\n", "100,000 pipelined noreply sets: no reply but mn's (%r)" % r[:40])
        moved = stat(port, "input_bytes_moved") - moved0
        got = stat(port, "bytes_read") - read0
        r = request(port, b"get " + b" ".join(b"pipe%d" % i for i in range(n)) + b"\r\n",
                    b"END\r\n")
        want = b"".join(b"VALUE pipe%d 0 6\r\n%06d\r\n" % (i, i) for i in range(n)) + b"END\r\n"
        check(r == want, "100,000 pipelined noreply sets: all read back (%d of %d values)" %
              (r.count(b"VALUE "), n))
        check(got >= len(burst) and moved <= got,
              "pipelined burst: %d input bytes moved for %d read (at most once each)" % (moved, got))
        #     and one 3 MiB multiget line, sent in 64 KiB writes: its buffer
        #     grows geometrically (copies O(line)); growing by a constant
        #     chunk per read would copy about line^2 / 128 KiB (some 70 MiB)
        line = b"get " + b" ".join(b"m%08d" % i for i in range(300000)) + b"\r\n"
        moved0 = stat(port, "input_bytes_moved")
        c = connect(port)
        for i in range(0, len(line), 1 << 16):
            c.sendall(line[i:i + (1 << 16)])
        r = b""
        while not r.endswith(b"END\r\n"):
            b = c.recv(1 << 16)
            if not b:
                break
            r += b
        c.close()
        moved = stat(port, "input_bytes_moved") - moved0
        check(r == b"END\r\n", "3 MiB multiget line of misses: END")
        check(moved <= 3 * len(line),
              "3 MiB multiget line: %d input bytes moved (<= 3x its %d)" % (moved, len(line)))

        # 4. slow reader
        val = b"v" * 100000
        r = request(port, b"set slow 0 0 %d\r\n%s\r\n" % (len(val), val), b"\r\n")
        check(r == b"STORED\r\n", "stored 100 KB value")
        # 4a. one write of 60 pipelined gets whose replies (6 MB) pass the
        #     output high-water mark: every reply must still come, in order
        c = connect(port)
        c.sendall(b"get slow\r\n" * 59 + b"mn\r\n")
        got = b""
        while not got.endswith(b"MN\r\n"):
            try:
                b = c.recv(1 << 20)
            except socket.timeout:
                break
            if not b:
                break
            got += b
        c.close()
        check(got.count(b"VALUE slow 0 100000\r\n") == 59 and got.endswith(b"END\r\nMN\r\n"),
              "60 pipelined big replies all arrive (%d of 59 values)"
              % got.count(b"VALUE slow 0 100000\r\n"))

        # 4b. a reader that never reads: the server must stop reading it
        #     (paused_connections) and, paused, hold little memory. The
        #     gets go in as fast as the sockets take them; a server without
        #     the mark would run all 20,000 and never pause.
        before = rss_kib(srv.pid)
        c = connect(port)
        c.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        c.setblocking(False)
        data, sent = b"get slow\r\n" * 20000, 0
        while sent < len(data):
            try:
                sent += c.send(data[sent:])
            except BlockingIOError:
                break  # the sockets are full: the server has stopped reading
        paused, ok = wait_stat(port, "paused_connections", lambda v: v == 1)
        check(ok, "slow reader: the server stopped reading it (paused_connections %d)" % paused)
        grown = rss_kib(srv.pid) - before
        check(grown < 64 * 1024, "slow reader: RSS grew %d KiB (< 64 MiB) with %d of 20,000 gets sent"
              % (grown, sent // 10))
        c.close()
        _, ok = wait_stat(port, "paused_connections", lambda v: v == 0)
        check(ok, "slow reader gone: no connection paused")

        # 5. many idle connections; counted once the server has accepted
        #    them all (curr_connections counts the stats connection too)
        _, ok = wait_stat(port, "curr_connections", lambda v: v == 1)
        check(ok, "every earlier connection closed")
        before = rss_kib(srv.pid)
        conns = []
        for _ in range(1000):
            conns.append(connect(port))
        n, ok = wait_stat(port, "curr_connections", lambda v: v == 1001)
        check(ok, "curr_connections counts 1000 idle connections (%d)" % (n - 1))
        per = (rss_kib(srv.pid) - before) * 1024 / 1000
        check(per < 16 * 1024, "1000 idle connections: %.0f bytes RSS each" % per)

        # 6. over the limit: open more than -c allows, then look for the refusal
        extra = []
        for _ in range(MAXCONN - 1000 + 20):
            try:
                extra.append(connect(port))
            except OSError:
                break
        # the connections under the limit stay silent; one over it becomes
        # readable with the refusal
        # (poll, not select: these descriptors are above FD_SETSIZE)
        p = select.poll()
        for e in extra:
            p.register(e, select.POLLIN)
        byfd = {e.fileno(): e for e in extra}
        refused = False
        for fd, _ in p.poll(int(DEADLINE * 1000)):
            e = byfd[fd]
            try:
                if e.recv(100).startswith(b"ERROR Too many open connections"):
                    refused = True
            except ConnectionResetError:
                pass
        check(refused, "connection over -c %d refused as memcached does" % MAXCONN)
        for s in conns + extra:
            s.close()

        # 7. clean shutdown
        srv.send_signal(signal.SIGTERM)
        try:
            rc = srv.wait(DEADLINE)
        except subprocess.TimeoutExpired:
            rc = None
        check(rc == 0, "SIGTERM: clean exit (status %r)" % rc)
    finally:
        if srv.poll() is None:
            srv.kill()
            srv.wait()
    print("robustness: %s" % ("FAILED: " + "; ".join(fails) if fails else "all checks passed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
