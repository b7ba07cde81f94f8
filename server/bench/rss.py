#!/usr/bin/env python3
"""rss.py LARDERD [MEMCACHED] [--mib 64] [--value 4096] [--gib 5] [--step 256] [--first S]

Memory of a full cache: starts larderd and Debian's memcached with the same
-m, then writes distinct keys with values of --value bytes through one
pipelined connection, --gib GiB in all, and samples each server's RSS (and
larderd's engine counters) every --step MiB written. Everything past the first
GiB is written into an already full cache, so any growth there is memory the
server does not give back. Prints one table per server; the servers run one
after the other. Each row also gives the write rate of its step (sets per
second, timed from the step's first write to the server's answer to the
"mn" that follows its last, samples excluded); the summary gives the median
step rate after the first GiB, a full cache's, and the server's minor page
faults per set over the same stretch (/proc/PID/stat: memory that had to be
faulted in again, e.g. after it was handed back to the kernel). Run it more than once and
alternate --first to compare rates: they come from different moments.
"""
import argparse, os, signal, socket, subprocess, sys, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "protocol"))
from loopback import serve

# larderd's engine counters (MiB), and "other": RSS less mapped pages and
# index, i.e. the server's own buffers, thread stacks and the C library.
ENGINE = ("larder_used_bytes", "larder_pages_mapped_bytes", "larder_reserve_bytes",
          "larder_returning_bytes", "larder_index_bytes")


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def minor_faults(pid):
    with open("/proc/%d/stat" % pid) as f:
        return int(f.read().rsplit(")", 1)[1].split()[7])


def smaps(pid):
    """RSS in KiB of each mapping (start address -> (name, rss))."""
    out, cur = {}, None
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            parts = line.split()
            if "-" in parts[0] and len(parts) >= 5 and ":" in parts[3]:
                cur = parts[0].split("-")[0]
                out[cur] = [parts[5] if len(parts) > 5 else "[anon]", 0]
            elif parts[0] == "Rss:" and cur is not None:
                out[cur][1] = int(parts[1])
    return out


def stats(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"stats\r\n")
    out = b""
    while not out.endswith(b"END\r\n"):
        out += s.recv(1 << 16)
    s.close()
    st = {}
    for line in out.split(b"\r\n"):
        f = line.split(b" ")
        if len(f) == 3 and f[0] == b"STAT":
            st[f[1].decode()] = f[2].decode()
    return st


def fill(port, pid, value, total, step, engine):
    s = socket.create_connection(("127.0.0.1", port))
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    val = b"v" * value
    batch = 256
    per_step = max(1, (step << 20) // (value * batch))
    written, key, rows = 0, 0, []
    while written < total:
        t0 = time.monotonic()
        for _ in range(per_step):
            req = b"".join(b"set k%010d 0 0 %d noreply\r\n%s\r\n" % (key + i, value, val)
                           for i in range(batch))
            s.sendall(req)
            key += batch
            written += batch * value
        s.sendall(b"mn\r\n")  # wait until the server has taken every write
        buf = b""
        while not buf.endswith(b"MN\r\n"):
            buf += s.recv(1 << 16)
        rate = per_step * batch / (time.monotonic() - t0)
        st = stats(port) if engine else {}
        rows.append((written >> 20, rss_kib(pid), st, smaps(pid), rate, minor_faults(pid)))
    s.close()
    return rows


def run(name, argv, args):
    p, port = serve(argv + ["-l", "127.0.0.1", "-m", str(args.mib), "-t", "4"],
                    stderr=subprocess.DEVNULL)
    try:
        start = rss_kib(p.pid)
        rows = fill(port, p.pid, args.value, args.gib << 30, args.step, name == "larderd")
    finally:
        p.send_signal(signal.SIGTERM)
        p.wait(10)
    print("# %s -m %d: %d-byte values, RSS at start %.1f MiB" % (name, args.mib, args.value,
                                                                 start / 1024))
    cols = ["written_MiB", "RSS_MiB", "sets_per_s"] + ([c.replace("larder_", "").replace("_bytes", "")
                                          for c in ENGINE] + ["other"]
                                         if name == "larderd" else [])
    print(" ".join("%12s" % c for c in cols))
    for mib, rss, st, _, rate, _ in rows:
        extra = []
        if st:
            mb = [int(st[c]) / 1048576 for c in ENGINE]
            other = rss / 1024 - mb[1] - mb[4]
            extra = ["%12.1f" % v for v in mb] + ["%12.1f" % other]
        print(" ".join(["%12d" % mib, "%12.1f" % (rss / 1024), "%12.0f" % rate] + extra))
    after_1g = [r for r in rows if r[0] >= 1024]
    if len(after_1g) > 1:
        grow = (after_1g[-1][1] - after_1g[0][1]) / 1024
        rates = sorted(r[4] for r in after_1g)
        sets = ((after_1g[-1][0] - after_1g[0][0]) << 20) / args.value
        faults = (after_1g[-1][5] - after_1g[0][5]) / sets
        print("# %s: RSS at 1 GiB %.1f MiB, at %d MiB %.1f MiB (%+.2f MiB after the first GiB); "
              "sets/s after the first GiB: median %.0f (%.0f-%.0f); minor faults per set %.2f"
              % (name, after_1g[0][1] / 1024, after_1g[-1][0], after_1g[-1][1] / 1024, grow,
                 rates[len(rates) // 2], rates[0], rates[-1], faults))
        a, b = after_1g[0][3], after_1g[-1][3]
        for addr in sorted(set(a) | set(b)):
            ra = a.get(addr, ["", 0])[1]
            rb = b.get(addr, ["", 0])[1]
            if abs(rb - ra) >= 64:
                print("#   mapping %s %s: %d -> %d KiB" % (addr, (b.get(addr) or a.get(addr))[0],
                                                      ra, rb))
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("larderd")
    ap.add_argument("memcached", nargs="?", default="/usr/bin/memcached")
    ap.add_argument("--mib", type=int, default=64)
    ap.add_argument("--value", type=int, default=4096)
    ap.add_argument("--gib", type=int, default=5)
    ap.add_argument("--step", type=int, default=256)
    ap.add_argument("--first", choices=("larderd", "memcached"), default="larderd",
                    help="which server runs first")
    args = ap.parse_args()
    runs = [("larderd", [args.larderd]),
            ("memcached", [args.memcached, "-U", "0", "-u", "nobody"])]
    for name, argv in (runs if args.first == "larderd" else runs[::-1]):
        run(name, argv, args)


if __name__ == "__main__":
    main()
