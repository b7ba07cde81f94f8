#!/usr/bin/env python3
"""tests/protocol/flushdelay.py - when "flush_all <delay>" takes effect, beside memcached 1.6.18.

Usage: flushdelay.py LARDERD MEMCACHED

memcached's flush time is its coarse clock (whole seconds, ticked once a
second) at the command plus the delay, less a second (oldest_live =
realtime(delay) - 1), and each read compares against it: an item stored
before a "flush_all d" sent at wall time T reads as gone from a time in
(T + d - 2, T + d - 1], where the tick falls. larderd's flush time is the
command's wall-clock second plus d - 1 (floor(T) + d - 1: the same window,
without memcached's tick phase), and every command checks it before it
runs (the main thread, once a second, runs it for a server without
traffic). Before, the main thread alone ran it, polling once a second
against d - 1 s after the command: it took effect 0 to 2 s after
memcached's window.

Both servers get the same trials (a set, then "flush_all 2" or 3, then a
get every 20 ms until it misses), on one connection each. A set made
during the second a flush comes due is flushed too, in both servers, so a
trial's set is repeated until a get reads it back (the previous trial's
due second is then over). For larderd,
with T0 and T1 the client's wall clock before sending the flush and after
its OK:
  - every get answered before floor(T0) + d - 1 hits (not early);
  - every get sent from floor(T1) + d - 1 on misses (not late).
Neither depends on how fast the machine is: both compare the server's
own clock, at the read, with the due time (a loaded machine only delays
the reads). memcached is not checked, only measured: at load 15 its
first get after a "flush_all 3" missed in 2 of 11 runs (its clock is
ticked by a timer that a loaded machine delays, then catches up; the
cause was not pinned down further). The windows both servers took are
printed side by side. Runs in about 15 s.

A step of the wall clock during a trial (NTP, an administrator) moves
the due time on the server and the client's T0, T1 and get times alike,
but not by the same amount for gets made before and after it, so the
checks above would judge a step, not larderd. Each trial measures the
wall clock against the monotonic one before and after; one whose
offset moved by more than STEP_TOLERANCE (a slewing clock drifts by
at most 0.5 ms per second) is run again, once; a second step in a row
fails the test as a clock that will not hold still, naming it.
"""
import math, os, socket, subprocess, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import recv_until, run_driver, serve

TRIALS = 8
POLL = 0.02      # seconds between gets
HANG_GUARD = 60  # seconds a flush may take before the test calls it a hang
STEP_TOLERANCE = 0.05  # seconds the wall clock may move against the monotonic one


def request(s, line, end):
    s.sendall(line)
    return recv_until(s, end, line.decode().strip())


def wall_offset():
    return time.time() - time.monotonic()


def store_kept(name, s):
    """Sets k until a get reads it back: a set made during the previous
    trial's due second is flushed with it, in both servers."""
    start = time.monotonic()
    while True:
        reply = request(s, b"set k 0 0 1\r\nx\r\nget k\r\n", b"END\r\n")
        if reply == b"STORED\r\nVALUE k 0 1\r\nx\r\nEND\r\n":
            return
        if time.monotonic() - start > HANG_GUARD:
            raise RuntimeError("%s: a set is still flushed after %d s" % (name, HANG_GUARD))
        time.sleep(POLL)


def trial(conns, delay, phase):
    """One flush_all <delay> on every server; returns, per server, the
    (T0, T1) of the flush and the gets as (sent, answered, hit), and the
    seconds the wall clock stepped meanwhile."""
    time.sleep(phase)  # vary where in the wall-clock second the flush falls
    offset = wall_offset()
    for name, s in conns.items():
        store_kept(name, s)
    out = {}
    for name, s in conns.items():
        t0 = time.time()
        request(s, b"flush_all %d\r\n" % delay, b"OK\r\n")
        out[name] = {"flush": (t0, time.time()), "gets": []}
    left = set(conns)
    start = time.monotonic()
    while left:
        if time.monotonic() - start > HANG_GUARD:
            raise RuntimeError("flush_all %d: %s still holds the item after %d s"
                               % (delay, sorted(left), HANG_GUARD))
        for name in sorted(left):
            sent = time.time()
            reply = request(conns[name], b"get k\r\n", b"END\r\n")
            hit = reply != b"END\r\n"
            out[name]["gets"].append((sent, time.time(), hit))
            if not hit:
                left.discard(name)
        time.sleep(POLL)
    return out, wall_offset() - offset


def steady_trial(conns, delay, phase):
    """trial(), run again once if the wall clock stepped during it."""
    for attempt in (1, 2):
        out, step = trial(conns, delay, phase)
        if abs(step) <= STEP_TOLERANCE:
            return out
        print("flush_all %d: the wall clock stepped %+.3f s during trial %d; %s"
              % (delay, step, attempt, "running it again" if attempt == 1 else "giving up"))
    raise RuntimeError("the wall clock stepped during two trials in a row: "
                       "the flush windows cannot be judged")


def check(name, delay, run, window):
    t0, t1 = run["flush"]
    gone = next(answered for _, answered, hit in run["gets"] if not hit)
    window.append(gone - t0)
    if name != "larderd":
        return
    not_before = math.floor(t0) + delay - 1
    for sent, answered, hit in run["gets"]:
        if not hit and answered < not_before:
            raise AssertionError("%s: flush_all %d took effect early: a get answered "
                                 "%.3f s after the flush missed (due no earlier than %.3f s)"
                                 % (name, delay, answered - t0, not_before - t0))
        if hit and sent >= math.floor(t1) + delay - 1:
            raise AssertionError("larderd: flush_all %d took effect late: a get sent "
                                 "%.3f s after the flush still hit (due by %.3f s)"
                                 % (delay, sent - t0, math.floor(t1) + delay - 1 - t0))


def main():
    larderd, memcached = sys.argv[1], sys.argv[2]
    procs = []
    try:
        mproc, mp = serve([memcached, "-l", "127.0.0.1", "-U", "0", "-u", "nobody"],
                          stderr=subprocess.DEVNULL)
        procs.append(mproc)
        lproc, lp = serve([larderd, "-l", "127.0.0.1"], stderr=subprocess.DEVNULL)
        procs.append(lproc)
        conns = {name: socket.create_connection(("127.0.0.1", port), timeout=HANG_GUARD)
                 for name, port in (("memcached", mp), ("larderd", lp))}
        for delay in (2, 3):
            windows = {name: [] for name in conns}
            for i in range(TRIALS // 2):
                runs = steady_trial(conns, delay, (i * 0.37) % 1.0)
                for name, run in runs.items():
                    check(name, delay, run, windows[name])
            for name, w in windows.items():
                w.sort()
                print("%-9s flush_all %d: gone %.2f .. %.2f s after the command (median %.2f)"
                      % (name, delay, w[0], w[-1], w[len(w) // 2]))
        print("PASS: flush_all <delay> takes effect in memcached's window")
    finally:
        for p in procs:
            p.kill()
            p.wait()


if __name__ == "__main__":
    run_driver(main)
