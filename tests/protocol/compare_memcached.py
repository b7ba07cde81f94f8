#!/usr/bin/env python3
"""compare_memcached.py LARDERD MEMCACHED - byte-for-byte reply comparison.

Starts larderd and Debian's memcached on free loopback ports, sends the same
request scripts to both (each on a fresh connection after flush_all) and
compares the replies after one normalisation: CAS uniques differ by design,
so each distinct CAS value is renamed in order of appearance (<cas1>, ...),
and the VERSION string is masked. A step may use {CAS}: the last CAS unique
the server returned on that connection. Every server started is killed on exit.
"""
import os, re, signal, socket, subprocess, sys, time

from loopback import free_port, wait_port

LARDERD, MEMCACHED = sys.argv[1], sys.argv[2]
K251 = "k" * 251

CASES = [
    ["\r\n", "foo\r\n", "SET a 0 0 1\r\n", "set a 0 0\r\n", "get\r\n"],
    ["set a 0 0 1\r\nxx\r\nget a\r\n"],
    ["set a 0 0 -1\r\n", "set a b 0 1\r\nx\r\n", "set a 0 x 1\r\nx\r\n"],
    ["set %s 0 0 1\r\nx\r\n" % K251, "get a %s b\r\n" % K251, "incr %s 1\r\n" % K251],
    ["set a 5 0 3\r\nabc\r\nget a\r\nget a a nothere a\r\n"],
    ["set a 0 0 1 noreply\r\nx\r\nget a\r\n", "set a 0 0 1 noreply extra\r\nx\r\n"],
    ["set  a  0 0 1 \r\nx\r\nget  a \r\n", "get a\nset b 0 0 1\nx\nget b\n"],
    ["add a 0 0 1\r\nx\r\nadd a 0 0 1\r\ny\r\nreplace a 0 0 1\r\nz\r\nreplace q 0 0 1\r\nz\r\nget a q\r\n"],
    ["add a 0 0 1 noreply\r\nx\r\nreplace a 0 0 1 noreply\r\ny\r\nget a\r\n"],
    ["append zz 0 0 1\r\nx\r\nset a 7 0 1\r\nx\r\nprepend a 0 0 1\r\ny\r\nappend a 0 0 1\r\nz\r\nget a\r\n"],
    ["set a 0 0 1\r\nx\r\ngets a\r\n", "cas a 0 0 1 {CAS}\r\ny\r\n", "cas a 0 0 1 {CAS}\r\nz\r\n",
     "cas zz 0 0 1 99\r\nx\r\n", "cas a 0 0 1\r\n", "gets a\r\n"],
    ["incr a 1\r\nset n 0 0 2\r\n10\r\nincr n 5\r\ndecr n 100\r\nincr n abc\r\nincr n -1\r\n"
     "set s 0 0 1\r\nx\r\nincr s 1\r\nincr n 1 noreply\r\nget n\r\n"],
    ["incr a 18446744073709551616\r\nset n 0 0 20\r\n18446744073709551615\r\nincr n 2\r\nget n\r\n"
     "decr n 1\r\nset m 0 0 3\r\n100\r\ndecr m 1\r\nget m\r\nincr m 1000\r\nget m\r\n"],
    ["set e 0 0 0\r\n\r\nincr e 1\r\nget e\r\n"],
    ["delete a\r\nset a 0 0 1\r\nx\r\ndelete a 0\r\ndelete a 5\r\ndelete a noreply\r\ndelete\r\n"
     "delete a\r\n"],
    ["set t 0 0 1\r\nx\r\ntouch t 10\r\ntouch zz 10\r\ntouch t\r\ntouch t x\r\ntouch t 10 noreply\r\n"],
    ["set t 0 0 1\r\nx\r\ngat 10 t\r\ngats 10 t zz\r\ngat t\r\ngat x t\r\n"],
    ["set t 0 -1 1\r\nx\r\nget t\r\nset t 0 0 1\r\nx\r\ntouch t -1\r\nget t\r\n"],
    ["set t 0 1 1\r\nx\r\nadd t2 0 -1 1\r\ny\r\nget t t2\r\n"],
    ["flush_all\r\nflush_all 0\r\nflush_all noreply\r\nflush_all abc\r\nflush_all 0 noreply\r\n"],
    ["set f 0 0 1\r\nx\r\nflush_all\r\nget f\r\n"],
    ["verbosity\r\nverbosity 1\r\nverbosity 1 noreply\r\nverbosity 1 2 3\r\n"],
    ["version\r\n"],
    ["stats noreply\r\n", "stats foo\r\n", "stats reset\r\n"],
    ["set big 0 0 2000000\r\n" + "x" * 2000000 + "\r\nget big\r\n"],
    ["set a 4294967296 0 1\r\nx\r\nget a\r\n", "set a 4294967295 0 1\r\nx\r\nget a\r\n"],
    # meta
    ["mn\r\n", "mg\r\n", "mz a\r\n", "ms a\r\n", "ms a x\r\n", "ms a 2 Zz\r\nhi\r\n", "mg a v v\r\n"],
    ["ms q1 2 T0 F5\r\nhi\r\nmg q1 v f\r\nmg q1 s v k O9 f\r\nmg zz v\r\nmg zz v q\r\nmg zz v O1 k\r\nmn\r\n"],
    ["ms a 1\r\nx\r\nmg a v c\r\nmg a c\r\n", "ms a 1 C{CAS} c\r\ny\r\n", "ms a 1 C1\r\nz\r\nmg a v\r\n"],
    ["ms a 2 MA\r\nxx\r\nms a 1\r\nx\r\nms a 2 MA\r\nyy\r\nms a 1 MP\r\nz\r\nmg a v\r\nms a 2 ME\r\nyy\r\n"
     "ms nope 2 MR\r\nzz\r\nms new 2 ME\r\nzz\r\nmg new v\r\n"],
    ["ms a 1 q\r\nx\r\nms a 1 q MR\r\ny\r\nmn\r\n"],
    ["md miss q\r\nmd miss\r\nms d 1\r\nx\r\nmd d q\r\nmd d O5 k\r\nmg d v\r\n"],
    ["ma miss\r\nma miss q\r\nma nn N0 J7 v\r\nma nn v\r\nma nn MD D3 v\r\nma nn D100 MD v\r\nma nn q\r\n"
     "mg nn v\r\nms s 1\r\nx\r\nma s\r\n"],
    ["ms YWJj 1 b k\r\nx\r\nmg YWJj b k v\r\nmg abc v\r\nmg !!! b v\r\n"],
    ["ms st 2\r\nzz\r\nmd st I T30\r\nmg st v t\r\nmg st v t\r\nms st 2\r\nyy\r\nmg st v\r\n"],
    ["mg viv v N30\r\nmg viv v N30\r\nms viv 1\r\nx\r\nmg viv v\r\n"],
    ["mg a Z\r\nmg a v v\r\nmd a Z\r\nmd a q q\r\nma a Z\r\nma a q q\r\nmg a P L\r\n",
     "ms a 1 E12345 c\r\nx\r\nmg a c v\r\nma n N0 J5 E777 c v\r\n", "ms c 1 S1\r\nx\r\n"],
    ["ms a 1 T100\r\nx\r\nmg a t v\r\nma n N0 J5 v\r\nma n T100 t v\r\n"],
]

NUM_RE = re.compile(rb"^(VALUE \S+ \d+ \d+) (\d+)\r$")


def recv_until_mn(s, sent, limit=3.0):
    """Reads until every MN for the "mn" lines sent has arrived (the last one is
    the sentinel), the peer closes, or limit s pass."""
    out = b""
    want = sent.count(b"mn\r\n")
    s.settimeout(limit)
    try:
        while out.count(b"MN\r\n") < want:
            b = s.recv(1 << 20)
            if not b:
                return out + b"<CLOSED>"
            out += b
    except socket.timeout:
        pass
    return out


def run_case(port, steps):
    c = socket.create_connection(("127.0.0.1", port))
    c.sendall(b"flush_all\r\nmn\r\n")
    recv_until_mn(c, b"mn\r\n")
    out, cas = b"", b"0"
    for step in steps:
        data = step.replace("{CAS}", cas.decode()).encode() + b"mn\r\n"
        c.sendall(data)
        r = recv_until_mn(c, data)
        out += r
        found = re.findall(rb"VALUE \S+ \d+ \d+ (\d+)\r\n", r) + re.findall(rb" c(\d+)", r)
        if found:
            cas = found[-1]
    c.close()
    return out


def normalise(b):
    names = {}

    def cas_name(m):
        v = m.group(2)
        names.setdefault(v, b"<cas%d>" % (len(names) + 1))
        return m.group(1) + names[v]

    b = re.sub(rb"(VALUE \S+ \d+ \d+ )(\d+)", cas_name, b)
    b = re.sub(rb"( c)(\d+)", cas_name, b)
    b = re.sub(rb"VERSION [^\r]*", b"VERSION <v>", b)
    return b


def main():
    procs = []
    try:
        lp, mp = free_port(), free_port()
        procs.append(subprocess.Popen([LARDERD, "-p", str(lp), "-l", "127.0.0.1", "-t", "2"]))
        procs.append(subprocess.Popen([MEMCACHED, "-p", str(mp), "-l", "127.0.0.1", "-t", "2",
                                       "-U", "0", "-u", "nobody"]))
        wait_port(lp)
        wait_port(mp)
        bad = 0
        for i, steps in enumerate(CASES):
            a = normalise(run_case(mp, steps))
            b = normalise(run_case(lp, steps))
            if a != b:
                bad += 1
                print("case %d differs\n  request:   %r\n  memcached: %r\n  larderd:   %r"
                      % (i, "".join(steps)[:200], a[:400], b[:400]))
        print("%d of %d cases identical" % (len(CASES) - bad, len(CASES)))
        return 1 if bad else 0
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()


if __name__ == "__main__":
    sys.exit(main())
