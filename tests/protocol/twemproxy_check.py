#!/usr/bin/env python3
"""twemproxy_check.py PROXY_PORT P1,P2,P3 VICTIM_PID STATS_PORT - the client half of
twemproxy.sh (standard library only).

1. set 10,000 keys through the proxy (pipelined), read all back: every value right;
2. ask each larderd directly: every key is on exactly one instance, and the
   instances share the keys (none holds under 15%);
3. SIGTERM the third instance, then through the proxy, after ejection:
   every key that lives on a surviving instance still reads back right,
   1,000 new keys are STORED and read back, and keys of the stopped
   instance read as misses, never as errors.
"""
import os, signal, socket, sys, time

import larderd_client

DEADLINE = 60.0  # generous: the machine may be loaded; nothing waits this long when it works

PX = int(sys.argv[1])
PORTS = [int(p) for p in sys.argv[2].split(",")]
VICTIM = int(sys.argv[3])
STATS = int(sys.argv[4])
N = 10000


class Conn(larderd_client.Conn):
    """larderd_client's connection, with pipelined sets and a multiget."""

    def set_many(self, items):
        self.s.sendall(b"".join(b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v) for k, v in items))
        return [self.line() for _ in items]

    def get_many(self, keys):
        """One multiget; returns ({key: value}, error line or None)."""
        self.s.sendall(b"get " + b" ".join(keys) + b"\r\n")
        found = {}
        while True:
            l = self.line()
            if l == b"END":
                return found, None
            if not l.startswith(b"VALUE "):
                return found, l
            _, k, _, n = l.split(b" ")[:4]
            found[k] = self.exact(int(n) + 2)[:-2]


def ejected_at():
    """server_ejected_at of each server from nutcracker's stats port (JSON)."""
    import json
    s = socket.create_connection(("127.0.0.1", STATS), timeout=DEADLINE)
    data = b""
    while True:
        b = s.recv(1 << 16)
        if not b:
            break
        data += b
    pool = json.loads(data)["larder"]
    return {name: pool[name].get("server_ejected_at", 0)
            for name in ("s1", "s2", "s3") if name in pool}


def wait_refused(port):
    """Polls until nothing listens on port (the process exited), with a deadline."""
    deadline = time.monotonic() + DEADLINE
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
        except OSError:
            return True
        time.sleep(0.05)
    return False


def key(i):
    return b"key:%06d" % i


def val(i):
    return b"value-%d-" % i + b"x" * (i % 50)


def chunks(seq, n):
    for i in range(0, len(seq), n):
        yield seq[i:i + n]


def main():
    fails = []

    def check(cond, what):
        print(("ok   " if cond else "FAIL ") + what)
        if not cond:
            fails.append(what)

    px = Conn(PX)
    keys = list(range(N))
    stored = 0
    for part in chunks(keys, 500):
        stored += sum(r == b"STORED" for r in px.set_many([(key(i), val(i)) for i in part]))
    check(stored == N, "%d of %d sets through the proxy STORED" % (stored, N))
    good = 0
    for part in chunks(keys, 100):
        found, err = px.get_many([key(i) for i in part])
        good += sum(found.get(key(i)) == val(i) for i in part)
    check(good == N, "%d of %d keys read back through the proxy" % (good, N))

    owner = {}
    dup = 0
    per = []
    for idx, port in enumerate(PORTS):
        c = Conn(port)
        mine = 0
        for part in chunks(keys, 100):
            found, err = c.get_many([key(i) for i in part])
            for k in found:
                i = int(k.split(b":")[1])
                if i in owner:
                    dup += 1
                owner[i] = idx
                mine += 1
        per.append(mine)
    check(len(owner) == N and dup == 0,
          "each key on exactly one instance (%d placed, %d duplicates)" % (len(owner), dup))
    check(min(per) > N * 0.15, "keys per instance %s" % per)

    ej = ejected_at()
    check(set(ej) == {"s1", "s2", "s3"} and not any(ej.values()),
          "no ejection while all instances run (%s)" % ej)
    os.kill(VICTIM, signal.SIGTERM)
    check(wait_refused(PORTS[2]), "the stopped instance no longer accepts connections")
    victim_keys = [i for i in keys if owner.get(i) == 2]
    live_keys = [i for i in keys if owner.get(i) in (0, 1)]
    # Ejection: the first requests that hash to the stopped server fail
    # (server_failure_limit 1) and take it out of the ring; poll until a
    # request for its keys succeeds (as misses) or the deadline passes.
    errors_before, ok, deadline = 0, False, time.monotonic() + DEADLINE
    while not ok and time.monotonic() < deadline:
        px = Conn(PX)
        found, err = px.get_many([key(i) for i in victim_keys[:50]])
        ok = err is None
        errors_before += not ok
        if not ok:
            time.sleep(0.05)  # a poll interval, not a synchronisation
    ej = ejected_at()
    check(ok and ej.get("s3", 0) > 0 and ej.get("s1") == 0 and ej.get("s2") == 0,
          "proxy ejected the stopped instance, only it (%d failed request(s); ejected_at %s)"
          % (errors_before, ej))

    px = Conn(PX)
    good, errs = 0, 0
    for part in chunks(live_keys, 100):
        found, err = px.get_many([key(i) for i in part])
        errs += err is not None
        good += sum(found.get(key(i)) == val(i) for i in part)
    check(good == len(live_keys) and errs == 0,
          "after ejection %d of %d keys of surviving instances read back (%d errors)"
          % (good, len(live_keys), errs))
    new = list(range(N, N + 1000))
    ok = sum(r == b"STORED" for r in px.set_many([(key(i), val(i)) for i in new]))
    found, err = px.get_many([key(i) for i in new])
    check(ok == 1000 and err is None and all(found.get(key(i)) == val(i) for i in new),
          "after ejection 1000 new writes STORED (%d) and read back" % ok)
    found, err = px.get_many([key(i) for i in victim_keys[:100]])
    check(err is None, "keys of the stopped instance read as misses, not errors (%r)" % err)

    print("twemproxy: %s" % ("FAILED: " + "; ".join(fails) if fails else "all checks passed"))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
