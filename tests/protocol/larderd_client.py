"""tests/protocol/larderd_client.py - the text-protocol client side the
protocol test drivers share: a connection that reads replies line by line
(Conn), one request on a connection of its own (request), the general
"stats" as a dict or one number, a count read as of every write answered
before it (flushed), and stopping a server with a signal (stop). Ports,
waiting for a server and running a driver are loopback.py's.

Every read has a deadline (the socket's timeout), generous because a loaded
machine answers slowly: it only keeps a broken server from hanging a test.
"""
import socket
import subprocess
import time

DEADLINE = 60.0
# server/exec/stats.c's STATS_FLUSH_MS: how long "stats" waits for the
# maintainer to apply the writes answered before it.
STATS_FLUSH_S = 1.0
# The last lines of replies that end a request(): stats, metadump, an error.
REPLY_ENDS = (b"END\r\n", b"ERROR\r\n", b"BADCLASS invalid class id\r\n")


class Conn:
    """A text-protocol connection with a read buffer."""

    def __init__(self, port, timeout=DEADLINE):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.buf = b""

    def send(self, data):
        self.s.sendall(data)

    def _fill(self):
        chunk = self.s.recv(1 << 16)
        if not chunk:
            raise RuntimeError("connection closed")
        self.buf += chunk

    def line(self):
        """The next line, without its CRLF."""
        while b"\r\n" not in self.buf:
            self._fill()
        l, self.buf = self.buf.split(b"\r\n", 1)
        return l

    def exact(self, n):
        """The next n bytes."""
        while len(self.buf) < n:
            self._fill()
        d, self.buf = self.buf[:n], self.buf[n:]
        return d

    def set(self, key, flags, exptime, value):
        self.send(b"set %s %d %d %d\r\n%s\r\n" % (key, flags, exptime, len(value), value))
        r = self.line()
        if r != b"STORED":
            raise RuntimeError("set %r: %r" % (key, r))

    def get(self, key):
        """(flags, value), or None for a miss."""
        self.send(b"get %s\r\n" % key)
        l = self.line()
        if l == b"END":
            return None
        parts = l.split()
        flags, n = int(parts[2]), int(parts[3])
        v = self.exact(n + 2)[:-2]
        if self.line() != b"END":
            raise RuntimeError("no END after %r" % key)
        return flags, v

    def stats(self, before=b""):
        """The general "stats": name -> value (bytes), in the server's order.
        before: requests without a reply (noreply writes) sent in the same
        write, ahead of it."""
        self.send(before + b"stats\r\n")
        found = {}
        while True:
            l = self.line()
            if l == b"END":
                return found
            parts = l.split(b" ", 2)
            found[parts[1]] = parts[2]

    def stat(self, name, before=b""):
        """One number of "stats" (name in bytes), or None when it is absent;
        before as for stats()."""
        v = self.stats(before).get(name)
        return None if v is None else int(v)

    def ttl(self, key):
        """mg's remaining TTL in seconds (-1 for none), or None for a miss."""
        self.send(b"mg %s t\r\n" % key)
        l = self.line().split()
        if l[0] != b"HD":
            return None
        return int(l[1][1:])


def request(port, data, end_marks=REPLY_ENDS):
    """Sends data on a connection of its own and reads until the reply ends
    with one of end_marks (a tuple, or one bytes) or the server closes;
    returns what came."""
    ends = (end_marks,) if isinstance(end_marks, bytes) else end_marks
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    try:
        s.sendall(data)
        out = b""
        deadline = time.monotonic() + DEADLINE
        while not out.endswith(ends):
            if time.monotonic() > deadline:
                raise RuntimeError("no end of reply to %r: %r" % (data[:40], out[-200:]))
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            out += chunk
        return out
    finally:
        s.close()


def stats(port):
    """The general "stats" on a connection of its own: name -> value (bytes),
    in the server's order."""
    out = request(port, b"stats\r\n")
    return dict(l.split(b" ", 2)[1:3] for l in out.split(b"\r\n") if l.startswith(b"STAT "))


def stat(port, name):
    """One number of "stats" (name in bytes or str); KeyError when absent."""
    return int(stats(port)[name.encode() if isinstance(name, str) else name])


def flushed(read, want=None):
    """read() of counts "stats" takes after a flush (curr_items, bytes, the
    slabs' used chunks), as of every write answered before it, held to want
    (None: any value). The server's flush waits at most STATS_FLUSH_S and
    then reports the counts as they stand, so only a reply that came sooner
    must be exact; a slower one (a loaded machine) is read again, until
    DEADLINE, a hang guard. Returns the value of the first prompt reply, or
    the last value seen."""
    deadline = time.monotonic() + DEADLINE
    while True:
        t0 = time.monotonic()
        v = read()
        t1 = time.monotonic()
        if (want is not None and v == want) or t1 - t0 < STATS_FLUSH_S or t1 > deadline:
            return v


def stop(p, sig, timeout=60):
    """Stops the server process p with sig; it must exit with status 0.
    Returns its stderr (when p was started with stderr=PIPE)."""
    p.send_signal(sig)
    try:
        _, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        raise RuntimeError("larderd did not stop within %d s" % timeout)
    if p.returncode != 0:
        raise RuntimeError("larderd exited with %d: %s" % (p.returncode, err))
    return err
