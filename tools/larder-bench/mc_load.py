#!/usr/bin/env python3
"""mc_load.py - loads N items into a memcached over loopback, pipelined.

Used by scale_vs_memcached.sh. Keys are 16 ASCII bytes (the hex of
i * 0x9e3779b97f4a7c15 mod 2^64, a bijection, so all keys differ), values are
64 bytes, flags 0, no expiry: the same sizes as larder-bench --scale. Every
set is "noreply" and the commands go out in large batches over C
connections, one process each; a final "version" round trip on each
connection proves memcached has parsed everything sent before it. Prints one
line: "items=N seconds=S rate_mps=R".

Usage: mc_load.py PORT N [CONNECTIONS]
"""
import multiprocessing
import socket
import sys
import time

BATCH = 20000
VALUE = b"v" * 64
MULT = 0x9E3779B97F4A7C15
MASK = (1 << 64) - 1


def load_range(port, first, end):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    tail = b" 0 0 64 noreply\r\n" + VALUE + b"\r\n"
    for lo in range(first, end, BATCH):
        hi = min(lo + BATCH, end)
        s.sendall(b"".join(b"set %016x%s" % ((i * MULT) & MASK, tail) for i in range(lo, hi)))
    s.sendall(b"version\r\n")
    reply = b""
    while not reply.endswith(b"\r\n"):
        chunk = s.recv(4096)
        if not chunk:
            raise SystemExit("mc_load: memcached closed the connection")
        reply += chunk
    if not reply.startswith(b"VERSION"):
        raise SystemExit("mc_load: unexpected reply: %r" % reply[:200])
    s.close()


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    port, n = int(sys.argv[1]), int(sys.argv[2])
    conns = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    t0 = time.monotonic()
    procs = [multiprocessing.Process(target=load_range,
                                     args=(port, n * c // conns, n * (c + 1) // conns))
             for c in range(conns)]
    for p in procs:
        p.start()
    for p in procs:
        p.join()
        if p.exitcode != 0:
            raise SystemExit("mc_load: a loader process failed")
    secs = time.monotonic() - t0
    print("items=%d seconds=%.2f rate_mps=%.2f" % (n, secs, n / secs / 1e6))


if __name__ == "__main__":
    main()
