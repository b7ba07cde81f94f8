#!/usr/bin/env python3
"""tests/protocol/slice.py - larderd's workers ask for a short scheduling
slice (SERVER-S1 in server/net/server.c; docs/results/server-history.md, "One connection on a
busy machine").

Usage: slice.py LARDERD

Starts larderd with one worker under `nice -n 5` and, once that worker has
answered a request (so it has run its start-up), reads every thread's
scheduling attributes (sched_getattr): exactly one thread, the worker, has
the 100 us slice (not the main thread; the engine's maintainer, larderd's
other thread, keeps the default), and every thread still has the normal
policy and the nice value it was started with, 5 more than this script's
(the slice changes when a thread runs, never its share of the CPU).
Skipped (exit 77) where the kernel does not keep a thread's custom slice
(before Linux 6.12 it ignores the field, by design) or the architecture's
system call numbers are not known here.
"""
import ctypes
import os
import platform
import socket
import struct
import subprocess
import sys
import threading

from loopback import recv_until, run_driver, serve

SLICE_NS = 100 * 1000
NICE = min(os.nice(0) + 5, 19)
# sched_setattr, sched_getattr
SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275)}
# struct sched_attr, first version: size, policy, flags, nice, priority,
# runtime, deadline, period (48 bytes)
ATTR = struct.Struct("=IIQiIQQQ")

libc = ctypes.CDLL(None, use_errno=True)


def getattr_(nr, tid):
    buf = ctypes.create_string_buffer(ATTR.size)
    if libc.syscall(ctypes.c_long(nr), ctypes.c_int(tid), buf, ctypes.c_uint(ATTR.size),
                    ctypes.c_uint(0)) != 0:
        raise OSError(ctypes.get_errno(), "sched_getattr(%d)" % tid)
    return ATTR.unpack(buf.raw)


def kernel_keeps_slices(nrs):
    """Asks for the slice on a thread of its own (a child started from a
    thread inherits its slice, so not this one) and reads it back."""
    kept = []

    def probe():
        a = list(getattr_(nrs[1], 0))
        a[0], a[5] = ATTR.size, SLICE_NS
        buf = ctypes.create_string_buffer(ATTR.pack(*a), ATTR.size)
        if libc.syscall(ctypes.c_long(nrs[0]), ctypes.c_int(0), buf, ctypes.c_uint(0)) == 0:
            kept.append(getattr_(nrs[1], 0)[5] == SLICE_NS)

    t = threading.Thread(target=probe)
    t.start()
    t.join()
    return kept == [True]


def main():
    nrs = SYSCALLS.get(platform.machine())
    if nrs is None or not kernel_keeps_slices(nrs):
        print("SKIP: the kernel does not keep a thread's custom slice")
        sys.exit(77)
    srv, port = serve(["nice", "-n", "5", sys.argv[1], "-l", "127.0.0.1", "-t", "1", "-m", "16"])
    try:
        # The one worker answers: it has asked for its slice by now.
        with socket.create_connection(("127.0.0.1", port)) as s:
            s.sendall(b"version\r\n")
            recv_until(s, b"\r\n", "the version reply")
        sliced = []
        for tid in sorted(int(t) for t in os.listdir("/proc/%d/task" % srv.pid)):
            _, policy, _, nice, _, runtime, _, _ = getattr_(nrs[1], tid)
            if policy != 0 or nice != NICE:
                raise RuntimeError("thread %d: policy %d, nice %d; expected 0 and %d" %
                                   (tid, policy, nice, NICE))
            if runtime == SLICE_NS:
                sliced.append(tid)
        if len(sliced) != 1:
            raise RuntimeError("%d threads with the %d ns slice, expected the one worker" %
                               (len(sliced), SLICE_NS))
        if sliced[0] == srv.pid:
            raise RuntimeError("the main thread has the slice, not the worker")
        print("PASS: the worker (thread %d) has the %d ns slice; policy and nice kept" %
              (sliced[0], SLICE_NS))
    finally:
        srv.terminate()
        srv.wait()


if __name__ == "__main__":
    run_driver(main)
