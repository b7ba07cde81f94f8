#!/usr/bin/env python3
"""threads.py LOADGEN MEMCACHED NAME=LARDERD [NAME=LARDERD ...] [--fetched NAME=LARDERD]
              [--rounds N] [--seconds S]

Where a single connection's time goes, idle and on a busy machine: each
larderd binary given (NAME=path, so that builds can be compared) and
Debian's memcached, all started with -m 256 -t 4, are driven in turn by
larderd_loadgen with one connection doing set-then-get round trips (-A, 64 B
values). Each round measures every server for S seconds, first on the idle
machine and then with one busy process per core (started and stopped by this
script); rounds interleave the servers, so they share the machine's state,
and which server goes first rotates from round to round.
Besides throughput and latency, it reads every server thread's scheduler
statistics from /proc (schedstat: time on a CPU, time runnable but waiting
for one; status: context switches) before and after each measurement and
prints them per request: a thread that wakes per request shows up there,
whatever it is called, and so does time lost waiting for a CPU. On a
shared machine run one benchmark at a time (flock on a common lock file);
compare ratios within one run, never figures across runs.

--fetched adds a larderd whose tracking of fetched items is switched on (by
one "mg <key> h" at start, docs/server.md): each first read of a value then
costs an engine write, which a set-then-get round trip pays every time.
"""
import argparse, os, re, signal, socket, statistics, subprocess, sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "protocol"))
from loopback import serve  # noqa: E402


def loadgen(lg, port, secs):
    out = subprocess.run(["nice", "-n", "10", lg, "-p", str(port), "-c", "1", "-T", "1", "-d", "1",
                          "-A", "-s", str(secs)], capture_output=True, text=True, check=True).stdout
    return {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", out)}


def threads(pid):
    """{tid: (name, [on-CPU us, runnable-waiting us, context switches])} of a process's threads."""
    res = {}
    for t in os.listdir("/proc/%d/task" % pid):
        base = "/proc/%d/task/%s/" % (pid, t)
        try:
            run_ns, wait_ns = open(base + "schedstat").read().split()[:2]
            name = open(base + "comm").read().strip()
            sw = sum(int(l.split()[1]) for l in open(base + "status") if "ctxt_switches" in l)
        except OSError:
            continue  # the thread ended
        res[t] = (name, [int(run_ns) / 1e3, int(wait_ns) / 1e3, sw])
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loadgen")
    ap.add_argument("memcached")
    ap.add_argument("larderd", nargs="+", help="NAME=path of a larderd binary")
    ap.add_argument("--fetched", action="append", default=[], help="NAME=path, fetch tracking on")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=2)
    a = ap.parse_args()
    servers = [tuple(v.split("=", 1)) for v in a.larderd + a.fetched] + [("memcached", a.memcached)]
    fetched = {v.split("=", 1)[0] for v in a.fetched}
    procs, ports = [], []
    try:
        for name, path in servers:
            extra = ["-U", "0", "-u", "nobody"] if name == "memcached" else []
            proc, port = serve(["nice", "-n", "10", path, "-l", "127.0.0.1", "-t", "4", "-m", "256"] +
                               extra)
            procs.append(proc)
            ports.append(port)
        for (name, _), p in zip(servers, ports):
            if name in fetched:
                with socket.create_connection(("127.0.0.1", p)) as s:
                    s.sendall(b"mg __threads__ h\r\nmn\r\n")
                    r = b""
                    while not r.endswith(b"MN\r\n"):
                        r += s.recv(100)
            loadgen(a.loadgen, p, 1)  # warm-up, not reported
        res, cpu = {}, {}
        loads = (0, os.cpu_count())
        for r in range(a.rounds):
            for load in loads:
                busy = [subprocess.Popen(["nice", "-n", "10", "sh", "-c", "while :; do :; done"])
                        for _ in range(load)]
                try:
                    # which server goes first rotates from round to round
                    order = list(zip(servers, procs, ports))
                    order = order[r % len(order):] + order[:r % len(order)]
                    for (name, _), proc, port in order:
                        # nice runs the server: its pid is the server's own (exec)
                        t0 = threads(proc.pid)
                        m = loadgen(a.loadgen, port, a.seconds)
                        t1 = threads(proc.pid)
                        res.setdefault((load, name), []).append(m)
                        reqs = m["ops_per_s"] * a.seconds
                        for tid, (tname, v) in t1.items():
                            if tid in t0:
                                d = cpu.setdefault((load, name, tid, tname), [0.0, 0.0, 0, 0.0])
                                for k in range(3):
                                    d[k] += v[k] - t0[tid][1][k]
                                d[3] += reqs
                finally:
                    for b in busy:
                        b.kill()
                        b.wait()
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
            p.wait()
    print("# %d rounds x %d s, 1 connection, set-then-get round trips, 64 B values, -m 256 -t 4, "
          "%d cores; loaded = %d busy processes; medians (min-max)" %
          (a.rounds, a.seconds, os.cpu_count(), os.cpu_count()))
    for load in loads:
        base = statistics.median(m["ops_per_s"] for m in res[(load, "memcached")])
        print("%s:" % ("idle" if load == 0 else "loaded"))
        for name, _ in servers:
            v = res[(load, name)]
            ops = [m["ops_per_s"] for m in v]
            p99 = [m["p99_us"] for m in v]
            print("  %-12s %6.0f req/s (%.0f-%.0f) %.2fx  p50 %.0f  p99 %.0f (%.0f-%.0f)  p99.9 %.0f us" %
                  (name, statistics.median(ops), min(ops), max(ops), statistics.median(ops) / base,
                   statistics.median(m["p50_us"] for m in v), statistics.median(p99), min(p99),
                   max(p99), statistics.median(m["p999_us"] for m in v)))
            tot = [0.0, 0.0, 0.0]
            for (l, n, tid, tname), (c, w, sw, reqs) in sorted(cpu.items()):
                if l == load and n == name and reqs and (c > 0 or sw > 0):
                    print("      thread %-7s %-16s cpu %5.2f  wait %5.2f us/req  switches %.3f/req" %
                          (tid, tname, c / reqs, w / reqs, sw / reqs))
                    tot = [tot[0] + c / reqs, tot[1] + w / reqs, tot[2] + sw / reqs]
            print("      all threads               cpu %5.2f  wait %5.2f us/req  switches %.3f/req" %
                  tuple(tot))
    return 0


if __name__ == "__main__":
    sys.exit(main())
