#!/usr/bin/env python3
"""binhammer.py LARDERD [--threads N] [--ops N] [--seed N] - hammers larderd's
binary protocol from many connections at once, beside text connections on
the same keys, with self-verifying values, and checks what concurrency must
not break:

  1. every value read (GET, GETK, GAT, and text get) is whole and its own:
     a value names its key, writer and sequence number and carries a
     checksum, so a torn, foreign or corrupt value fails;
  2. INCREMENT on one shared counter from every thread (binary, and text
     incr) loses no increment: the final value is the number of them;
  3. a CAS loop (GET, then SET with the CAS unique, retried on "exists")
     on one shared value from every thread: the final value is the number
     of successful swaps, and no swap succeeded twice on one unique;
  4. APPEND from every thread to one key: every appended piece lands, once;
  5. pipelined quiet gets (GETKQ ... NOOP): every hit answered, in order,
     misses silent, the NOOP last;
  6. larderd is still up, and SIGTERM ends it with status 0 (under the
     sanitizer presets, a report fails it);
  7. refused bodies are dropped as they arrive, never buffered: an unknown
     opcode with a 64 MiB body and a SET of a 16 MiB value ("Too large.")
     grow the server by less than 32 MiB, and the connection goes on;
  8. -B, as memcached 1.6.18 answers it: with -B binary a text command
     closes the connection unanswered; with -B ascii a binary frame is
     text (ERROR per line) and the connection goes on; and -F refuses a
     binary FLUSH with "Auth failure.", as memcached does.
The seed is printed; the server is killed on exit whatever happens. Every
wait is a blocking read with a generous deadline: a loaded machine makes
the test slower, never fails it.
"""
import argparse, hashlib, os, random, signal, socket, struct, subprocess, sys, threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import rss_kib, run_driver, serve
from diffbinary import arith_ext, frame, set_ext

DEADLINE = 120.0
KEYS = [b"h%d" % i for i in range(32)]


class Conn:
    """A binary-protocol connection: send frames, read response frames."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def read(self):
        """One response: (opcode, status, opaque, cas, extras, key, value)."""
        while True:
            if len(self.buf) >= 24:
                magic, op, kl, el, _, status, body, opaque, cas = struct.unpack_from(
                    "!BBHBBHIIQ", self.buf)
                if magic != 0x81:
                    raise RuntimeError("bad response magic %#x" % magic)
                if len(self.buf) >= 24 + body:
                    b = self.buf[24:24 + body]
                    self.buf = self.buf[24 + body:]
                    return op, status, opaque, cas, b[:el], b[el:el + kl], b[el + kl:]
            chunk = self.s.recv(1 << 16)
            if not chunk:
                raise RuntimeError("larderd closed the connection")
            self.buf += chunk

    def call(self, data):
        self.s.sendall(data)
        return self.read()

    def close(self):
        self.s.close()


def make_value(key, writer, seq, rng):
    body = b"%s|%d|%d|" % (key, writer, seq) + bytes(rng.randrange(256) for _ in range(rng.choice((0, 10, 300, 5000))))
    return hashlib.sha1(body).hexdigest().encode() + body


def check_value(key, v):
    """Whole and its own: the checksum matches and the value names key."""
    if len(v) < 40 or hashlib.sha1(v[40:]).hexdigest().encode() != v[:40]:
        raise RuntimeError("torn or corrupt value for %r: %r" % (key, v[:80]))
    if v[40:].split(b"|")[0] != key:
        raise RuntimeError("value of %r read for key %r" % (v[40:].split(b"|")[0], key))


class Tally:
    def __init__(self):
        self.lock = threading.Lock()
        self.incrs = self.swaps = 0
        self.appends = []
        self.swap_cas = set()
        self.errors = []


def binary_worker(port, wid, ops, seed, t):
    rng = random.Random(seed * 1000 + wid)
    c = Conn(port)
    incrs = swaps = 0
    appended = []
    try:
        for seq in range(ops):
            r = rng.random()
            k = rng.choice(KEYS)
            if r < 0.3:
                op = rng.choice(("SET", "SETQ", "ADD", "REPLACE"))
                c.s.sendall(frame(op, k, set_ext(wid, 0), make_value(k, wid, seq, rng)) +
                            (frame("NOOP") if op == "SETQ" else b""))
                op_, status, *_ = c.read()
                if op == "SETQ" and op_ != 0x0a:
                    op_, status, *_ = c.read()  # only an error precedes the NOOP
            elif r < 0.55:
                op = rng.choice(("GET", "GETK", "GAT"))
                ext = struct.pack("!I", 0) if op == "GAT" else b""
                _, status, _, _, extras, key, v = c.call(frame(op, k, ext))
                if status == 0:
                    check_value(k, v)
                    if struct.unpack("!I", extras)[0] >= 64:
                        raise RuntimeError("flags %r" % extras)
                elif status != 1:
                    raise RuntimeError("get status %d" % status)
            elif r < 0.65:
                c.call(frame("DELETE", k))
            elif r < 0.75:
                _, status, _, _, _, _, v = c.call(frame("INCR", b"counter",
                                                   arith_ext(1, 1, 0)))
                if status != 0 or len(v) != 8:
                    raise RuntimeError("incr status %d" % status)
                incrs += 1
            elif r < 0.85:
                # a CAS swap: read, add one, write back with the unique
                while True:
                    _, status, _, cas, _, _, v = c.call(frame("GET", b"swapped"))
                    if status != 0:
                        raise RuntimeError("swapped: status %d" % status)
                    _, status, *_ = c.call(frame("SET", b"swapped", set_ext(0, 0),
                                                 b"%d" % (int(v) + 1), cas))
                    if status == 0:
                        swaps += 1
                        with t.lock:
                            if cas in t.swap_cas:
                                raise RuntimeError("two swaps on unique %d" % cas)
                            t.swap_cas.add(cas)
                        break
                    if status != 2:
                        raise RuntimeError("cas status %d" % status)
            elif r < 0.9:
                piece = b"<%d.%d>" % (wid, seq)
                _, status, *_ = c.call(frame("APPEND", b"appended", value=piece))
                if status != 0:
                    raise RuntimeError("append status %d" % status)
                appended.append(piece)
            else:
                # pipelined quiet gets, then a NOOP: hits in order, misses silent
                keys = [rng.choice(KEYS) for _ in range(rng.randrange(1, 20))]
                c.s.sendall(b"".join(frame("GETKQ", kk, opaque=i) for i, kk in enumerate(keys)) +
                            frame("NOOP", opaque=0xffff))
                last = -1
                while True:
                    op, status, opaque, _, _, key, v = c.read()
                    if op == 0x0a:
                        if opaque != 0xffff:
                            raise RuntimeError("NOOP opaque %d" % opaque)
                        break
                    if status != 0 or opaque <= last or key != keys[opaque]:
                        raise RuntimeError("quiet get: status %d opaque %d after %d" %
                                           (status, opaque, last))
                    check_value(key, v)
                    last = opaque
        with t.lock:
            t.incrs += incrs
            t.swaps += swaps
            t.appends += appended
    except Exception as e:
        with t.lock:
            t.errors.append("binary worker %d: %s" % (wid, e))
    finally:
        c.close()


def text_worker(port, wid, ops, seed, t):
    """Text connections on the same keys: reads check values, incr counts."""
    rng = random.Random(seed * 1000 + wid)
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    f = s.makefile("rb")
    incrs = 0
    try:
        for seq in range(ops):
            k = rng.choice(KEYS)
            if rng.random() < 0.5:
                s.sendall(b"get %s\r\n" % k)
                line = f.readline()
                if line.startswith(b"VALUE"):
                    n = int(line.split()[3])
                    v = f.read(n + 2)[:-2]
                    check_value(k, v)
                    line = f.readline()
                if line != b"END\r\n":
                    raise RuntimeError("get: %r" % line)
            else:
                s.sendall(b"incr counter 1\r\n")
                line = f.readline()
                if not line.strip().isdigit():
                    raise RuntimeError("incr: %r" % line)
                incrs += 1
        with t.lock:
            t.incrs += incrs
    except Exception as e:
        with t.lock:
            t.errors.append("text worker %d: %s" % (wid, e))
    finally:
        s.close()


def check_refused_bodies(port, pid):
    c = Conn(port)
    before = rss_kib(pid)
    chunk = bytes(1 << 20)
    c.s.sendall(frame(0x50, body=64 << 20))
    for _ in range(64):
        c.s.sendall(chunk)
    c.s.sendall(frame("SET", b"big", set_ext(0, 0), body=8 + 3 + (16 << 20)))
    for _ in range(16):
        c.s.sendall(chunk)
    c.s.sendall(frame("NOOP"))
    got = [c.read()[:2] for _ in range(3)]
    grew = rss_kib(pid) - before
    c.close()
    if got != [(0x50, 0x81), (0x01, 0x03), (0x0a, 0)]:
        raise RuntimeError("refused bodies answered %r" % got)
    if grew > 32 << 10:
        raise RuntimeError("refused bodies grew the server by %d KiB" % grew)
    print("binhammer: 80 MiB of refused bodies grew the server by %d KiB" % grew)


def exchange(port, data):
    """Sends data, ends the sending side, returns everything until the close."""
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    s.sendall(data)
    s.shutdown(socket.SHUT_WR)
    out = b""
    while True:
        chunk = s.recv(1 << 16)
        if not chunk:
            s.close()
            return out
        out += chunk


def check_protocol_option(larderd):
    for opts, data, want in (
            (["-B", "binary"], b"version\r\n", b""),
            (["-B", "binary"], frame("NOOP"), b"\x81\x0a" + bytes(22)),
            (["-B", "ascii"], frame("NOOP") + b"\r\nversion\r\n", b"ERROR\r\nERROR\r\nVERSION "),
            (["-B", "auto"], frame("NOOP"), b"\x81\x0a" + bytes(22)),
            (["-B", "auto"], b"version\r\n", b"VERSION "),
            # -F: a binary FLUSH is refused as memcached refuses it
            (["-F"], frame("FLUSH"), b"\x81\x08\x00\x00\x00\x00\x00\x20\x00\x00\x00\x0d" +
             bytes(12) + b"Auth failure.")):
        proc, port = serve([larderd, "-l", "127.0.0.1"] + opts)
        try:
            got = exchange(port, data)
            if not got.startswith(want) or (want == b"" and got):
                raise RuntimeError("%s: %r answered %r" % (" ".join(opts), data, got))
        finally:
            proc.kill()
            proc.wait()
    if subprocess.run([larderd, "-B", "utf8"], stderr=subprocess.DEVNULL).returncode == 0:
        raise RuntimeError("-B utf8 accepted")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("larderd")
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--ops", type=int, default=1500)
    ap.add_argument("--seed", type=int, default=None)
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    print("binhammer: seed %d, %d binary + %d text connections x %d ops"
          % (seed, args.threads, max(1, args.threads // 4), args.ops))
    proc, port = serve([args.larderd, "-l", "127.0.0.1", "-t", "4", "-m", "64"])
    try:
        c = Conn(port)
        for key, v in ((b"counter", b"0"), (b"swapped", b"0"), (b"appended", b"")):
            if c.call(frame("SET", key, set_ext(0, 0), v))[1] != 0:
                raise RuntimeError("initial set of %r" % key)
        t = Tally()
        threads = [threading.Thread(target=binary_worker, args=(port, w, args.ops, seed, t))
                   for w in range(args.threads)]
        threads += [threading.Thread(target=text_worker,
                                     args=(port, 1000 + w, args.ops, seed, t))
                    for w in range(max(1, args.threads // 4))]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        if t.errors:
            raise RuntimeError("; ".join(t.errors[:5]))
        counter = int(c.call(frame("GET", b"counter"))[6])
        swapped = int(c.call(frame("GET", b"swapped"))[6])
        appended = c.call(frame("GET", b"appended"))[6]
        c.close()
        print("binhammer: %d increments, %d CAS swaps, %d appends"
              % (t.incrs, t.swaps, len(t.appends)))
        if counter != t.incrs:
            raise RuntimeError("counter %d after %d increments" % (counter, t.incrs))
        if swapped != t.swaps:
            raise RuntimeError("swapped %d after %d successful swaps" % (swapped, t.swaps))
        pieces = sorted(appended.replace(b"><", b">\n<").split(b"\n")) if appended else []
        if pieces != sorted(t.appends):
            raise RuntimeError("appended %d pieces, read back %d (or different ones)"
                               % (len(t.appends), len(pieces)))
        check_refused_bodies(port, proc.pid)
        if proc.poll() is not None:
            raise RuntimeError("larderd died: status %s" % proc.returncode)
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(DEADLINE)
        if rc != 0:
            raise RuntimeError("larderd exited with status %d after SIGTERM" % rc)
        check_protocol_option(args.larderd)
        print("binhammer: passed")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


if __name__ == "__main__":
    run_driver(main)
