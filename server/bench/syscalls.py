#!/usr/bin/env python3
"""syscalls.py LOADGEN MEMCACHED LARDERD [--seconds S] [--callgrind]

What each server does per request, counted rather than timed: larderd and
Debian's memcached (both -m 256 -t 4) each serve the client of `run.sh
--loaded` (larderd_loadgen, one connection, set-then-get round trips, 64 B
values) for S seconds (default 3), one server after the other. Requests are
counted from the servers' own `stats` (cmd_get + cmd_set), so each figure is
per request the server answered:

- context switches of every thread, voluntary (it slept) and involuntary
  (it was preempted), and its CPU time, from /proc (a thread that wakes
  per request shows up whatever it is called);
- system calls by name, from `strace -c -f` attached to the server for a
  second window of S seconds (strace slows the server, so that window
  counts calls only): a read that returns EAGAIN shows in the errors;
- with --callgrind, user-space instructions per request (valgrind's
  callgrind, counters zeroed after a warm-up and dumped after S seconds):
  repeatable where timings are not.

Counts do not depend on the machine's load; run it alone anyway, since
strace and valgrind are slow. Needs strace (and valgrind for --callgrind).
"""
import argparse, glob, os, re, resource, signal, socket, subprocess, sys, tempfile, time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                "tests", "protocol"))
from loopback import recv_until, serve  # noqa: E402

# memcached sets RLIMIT_NOFILE to its -c; under valgrind that succeeds only
# when it equals valgrind's own limit, the soft limit less 12 reserved fds.
VG_NOFILE = 1000
VG_CONNS = VG_NOFILE - 12


def requests(port):
    """cmd_get + cmd_set so far (the stats request itself counts neither)."""
    with socket.create_connection(("127.0.0.1", port)) as s:
        s.sendall(b"stats\r\n")
        r = recv_until(s, b"END\r\n", "stats")
    d = dict(re.findall(rb"STAT (\w+) (\d+)\r\n", r))
    return int(d[b"cmd_get"]) + int(d[b"cmd_set"])


def loadgen(lg, port, secs):
    subprocess.run([lg, "-p", str(port), "-c", "1", "-T", "1", "-d", "1", "-A", "-n", "-s",
                    str(secs)], check=True, stdout=subprocess.DEVNULL)


def threads(pid):
    """{tid: [name, voluntary switches, involuntary switches, CPU ticks]}"""
    res = {}
    for t in os.listdir("/proc/%d/task" % pid):
        base = "/proc/%d/task/%s/" % (pid, t)
        try:
            st = dict(l.split(":", 1) for l in open(base + "status"))
            # comm may hold spaces: the fields after its closing parenthesis
            f = open(base + "stat").read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # the thread ended
        res[t] = [st["Name"].strip(), int(st["voluntary_ctxt_switches"]),
                  int(st["nonvoluntary_ctxt_switches"]), int(f[11]) + int(f[12])]
    return res


def traced(pid):
    """Every thread of pid has a tracer."""
    for t in os.listdir("/proc/%d/task" % pid):
        try:
            st = open("/proc/%d/task/%s/status" % (pid, t)).read()
        except OSError:
            continue
        if re.search(r"TracerPid:\s+0\n", st):
            return False
    return True


def strace_counts(lg, pid, port, secs, out):
    """{syscall: (calls, errors)} per request over secs of load."""
    st = subprocess.Popen(["strace", "-qq", "-f", "-c", "-p", str(pid), "-o", out],
                          stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 30
    while not traced(pid):
        if time.monotonic() > deadline or st.poll() is not None:
            st.kill()
            raise SystemExit("strace did not attach to %d" % pid)
        time.sleep(0.05)
    r0 = requests(port)
    loadgen(lg, port, secs)
    n = requests(port) - r0
    st.send_signal(signal.SIGINT)
    st.wait()
    res = {}
    for line in open(out):
        f = line.split()
        # % time, seconds, usecs/call, calls, [errors,] name
        if len(f) >= 5 and f[3].isdigit() and f[-1] != "total":
            res[f[-1]] = (int(f[3]) / n, (int(f[4]) if len(f) == 6 else 0) / n)
    return n, res


def callgrind_ir(lg, cmd, secs, tmp, vg_nofile):
    """User-space instructions per request (every thread), under callgrind;
    vg_nofile: the server sets RLIMIT_NOFILE (memcached) and needs VG_NOFILE."""
    prefix = os.path.join(tmp, "cg.%s" % os.path.basename(cmd()[0]))

    def nofile():
        resource.setrlimit(resource.RLIMIT_NOFILE, (VG_NOFILE, VG_NOFILE))

    vg, port = serve(["valgrind", "-q", "--tool=callgrind", "--callgrind-out-file=" +
                      prefix + ".%p"] + cmd(), preexec_fn=nofile if vg_nofile else None)
    try:
        loadgen(lg, port, 1)  # warm-up: not counted
        subprocess.run(["callgrind_control", "-z", str(vg.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        r0 = requests(port)
        loadgen(lg, port, secs)
        n = requests(port) - r0
        subprocess.run(["callgrind_control", "-d", str(vg.pid)], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    finally:
        vg.terminate()
        vg.wait()
    dump = glob.glob(prefix + ".*.1")
    ir = 0
    for line in open(dump[0]):
        if line.startswith("summary:") or line.startswith("totals:"):
            ir = int(line.split()[1])
    return ir / n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("loadgen")
    ap.add_argument("memcached")
    ap.add_argument("larderd")
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument("--callgrind", action="store_true")
    a = ap.parse_args()
    user = ["-u", "root"] if os.geteuid() == 0 else []
    cmds = {
        "larderd": lambda c=(): [a.larderd, "-l", "127.0.0.1", "-t", "4", "-m", "256"] + list(c),
        "memcached": lambda c=(): [a.memcached, "-l", "127.0.0.1", "-t", "4", "-m", "256",
                                   "-U", "0"] + user + list(c),
    }
    print("# per request: 1 connection, set-then-get round trips (loadgen -A -d 1), 64 B values, "
          "-m 256 -t 4, %d s per window, load average %s" %
          (a.seconds, open("/proc/loadavg").read().split()[0]))
    with tempfile.TemporaryDirectory() as tmp:
        for name in ("larderd", "memcached"):
            srv, port = serve(cmds[name]())
            try:
                loadgen(a.loadgen, port, 1)  # warm-up: not counted
                t0 = threads(srv.pid)
                r0 = requests(port)
                loadgen(a.loadgen, port, a.seconds)
                n = requests(port) - r0
                t1 = threads(srv.pid)
                hz = os.sysconf("SC_CLK_TCK")
                print("%s: %d requests" % (name, n))
                for tid, (tname, v, nv, cpu) in sorted(t1.items()):
                    b = t0.get(tid, [tname, 0, 0, 0])
                    dv, dn, dc = v - b[1], nv - b[2], cpu - b[3]
                    if dv + dn >= 10 or dc:  # threads that ran during the window
                        print("  thread %-16s switches %.4f voluntary + %.4f involuntary, "
                              "CPU %.2f us" % (tname, dv / n, dn / n, dc * 1e6 / hz / n))
                sn, calls = strace_counts(a.loadgen, srv.pid, port, a.seconds,
                                          os.path.join(tmp, name + ".strace"))
                print("  system calls (strace, %d requests):" % sn)
                for sc, (c, e) in sorted(calls.items(), key=lambda kv: -kv[1][0]):
                    print("    %-16s %.4f%s" % (sc, c, "  (failed %.4f)" % e if e else ""))
            finally:
                srv.terminate()
                srv.wait()
            if a.callgrind:
                print("  user instructions: %.0f" %
                      callgrind_ir(a.loadgen, lambda: cmds[name](["-c", str(VG_CONNS)]
                                                                if name == "memcached" else []),
                                   a.seconds, tmp, name == "memcached"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
