#!/usr/bin/env python3
"""manyservers.py LARDERD [--servers N] - many larderd started at once on
ports the kernel picks (-p -1 and the ports file: loopback.serve), while
another thread keeps taking loopback ports of the kernel's choosing, as the
other tests' servers and clients on a busy machine do.

Checks: every server starts and listens, no two got the same port, and
the server answering on each port is the one that reported it (its
"stats" pid). Picking a free port, closing it and letting the server
bind it later (what the harness did) loses this race whenever the port is
taken in between; with the kernel picking at bind time there is nothing
to lose. Every server exits cleanly on SIGTERM."""
import argparse
import resource
import signal
import socket
import sys
import threading

from larderd_client import stat
from loopback import run_driver, serve

# Sockets the port taker holds at a time: enough to take a good share of
# the ports freed meanwhile, far from the ephemeral range's size (28,000+).
HELD = 2000


def take_ports(stop):
    """Binds and listens on loopback ports of the kernel's choosing, HELD at
    a time, until stop is set."""
    while not stop.is_set():
        held = []
        try:
            for _ in range(HELD):
                s = socket.socket()
                held.append(s)
                s.bind(("127.0.0.1", 0))
                s.listen(1)
        finally:
            for s in held:
                s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("larderd")
    ap.add_argument("--servers", type=int, default=24)
    args = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, HELD + 1024), hard))
    started, errors = [None] * args.servers, []
    stop = threading.Event()

    def start(i):
        try:
            started[i] = serve([args.larderd, "-l", "127.0.0.1", "-t", "1", "-m", "8"])
        except Exception as e:
            errors.append("server %d: %s" % (i, e))

    taker = threading.Thread(target=take_ports, args=(stop,))
    taker.start()
    try:
        starters = [threading.Thread(target=start, args=(i,)) for i in range(args.servers)]
        for t in starters:
            t.start()
        for t in starters:
            t.join()
        stop.set()
        taker.join()
        if errors:
            raise RuntimeError("; ".join(errors))
        ports = [port for _, port in started]
        if len(set(ports)) != len(ports):
            raise RuntimeError("two servers report the same port: %s" % sorted(ports))
        for proc, port in started:
            pid = stat(port, "pid")
            if pid != proc.pid:
                raise RuntimeError("port %d is served by pid %d, not by %d, which reported it"
                                   % (port, pid, proc.pid))
    finally:
        stop.set()
        taker.join()
        for s in started:
            if s is not None:
                s[0].send_signal(signal.SIGTERM)
        bad = [s[0].wait(60) for s in started if s is not None]
    if any(bad):
        raise RuntimeError("exit statuses %s" % bad)
    print("PASS: %d servers started at once beside a port taker, each on its own port"
          % args.servers)


if __name__ == "__main__":
    run_driver(main)
