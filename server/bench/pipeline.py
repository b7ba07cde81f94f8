#!/usr/bin/env python3
"""pipeline.py MEMCACHED NAME=LARDERD... [--rounds 5] [--sizes 10000,30000,100000]

Deep pipelines: the time from a burst's first byte sent to its last reply
byte, for each server in the same run, one fresh server per round:
  sets N   N "set kI 0 0 10 noreply" requests with their values in one write,
           then "mn" (its reply marks the end of the burst);
  get line one 3 MiB get line (300,000 missing keys) in 64 KiB writes.
Prints the median (min..max) over the rounds and each server's median as a
ratio to memcached's. Every server gets -t 4 -m 1024; servers are started one
at a time, so they never compete with each other.
"""
import argparse, os, socket, statistics, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "protocol"))
from loopback import serve


def drain(s, term):
    buf = b""
    while not buf.endswith(term):
        d = s.recv(1 << 16)
        if not d:
            raise SystemExit("server closed the connection")
        buf = buf[-16:] + d


def burst(port, blob, chunk, term):
    s = socket.create_connection(("127.0.0.1", port))
    t = time.perf_counter()
    for i in range(0, len(blob), chunk):
        s.sendall(blob[i:i + chunk])
    drain(s, term)
    dt = time.perf_counter() - t
    s.close()
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("memcached")
    ap.add_argument("larderd", nargs="+", help="NAME=PATH")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--sizes", default="10000,30000,100000")
    a = ap.parse_args()
    servers = [("memcached", [a.memcached, "-u", "root"] if os.geteuid() == 0 else [a.memcached])]
    servers += [(n.split("=", 1)[0], [n.split("=", 1)[1]]) for n in a.larderd]
    cases = []
    for n in map(int, a.sizes.split(",")):
        blob = b"".join(b"set k%d 0 0 10 noreply\r\n0123456789\r\n" % i for i in range(n))
        cases.append(("sets %d" % n, blob + b"mn\r\n", len(blob) + 4, b"MN\r\n"))
    line = b"get " + b" ".join(b"m%08d" % i for i in range(300000)) + b"\r\n"
    cases.append(("get line 3 MiB", line, 1 << 16, b"END\r\n"))
    res = {}
    for _ in range(a.rounds):
        for name, argv in servers:
            p, port = serve(argv + ["-t", "4", "-m", "1024", "-l", "127.0.0.1"])
            try:
                for cname, blob, chunk, term in cases:
                    res.setdefault((cname, name), []).append(burst(port, blob, chunk, term))
            finally:
                p.terminate()
                p.wait()
    names = [n for n, _ in servers]
    print("| case | " + " | ".join("%s s" % n for n in names) + " | " +
          " | ".join("%s/memcached" % n for n in names[1:]) + " |")
    print("|---" * (2 * len(names)) + "|")
    for cname, _, _, _ in cases:
        med = {n: statistics.median(res[(cname, n)]) for n in names}
        cells = ["%.3f (%.3f..%.3f)" % (med[n], min(res[(cname, n)]), max(res[(cname, n)]))
                 for n in names]
        ratios = ["%.2fx" % (med[n] / med["memcached"]) for n in names[1:]]
        print("| %s | %s | %s |" % (cname, " | ".join(cells), " | ".join(ratios)))


if __name__ == "__main__":
    main()
