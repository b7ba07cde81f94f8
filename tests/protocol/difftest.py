#!/usr/bin/env python3
"""difftest.py - differential tester: larderd against Debian's memcached 1.6.18.

    difftest.py LARDERD MEMCACHED [--seed N] [--episodes N] [--seconds S]
                [--protocol both|text|binary]
                [--scripted-only | --random-only] [--show N]

Starts both servers on loopback ports the kernel picks (-p -1) with the same settings and sends
each the same command streams ("episodes"), then compares the replies byte for
byte after the normalisation below. Phase 1 runs the scripted cases of
diffcases.py (the regression cases); phase 2 runs random episodes drawn from
the grammar of diffgrammar.py with a seed, until --episodes episodes or
--seconds seconds, whichever comes first; each ends with a probe that reads
every key of the grammar's pool without changing it, so that a command whose
effect differs is caught in the episode that ran it. Exit status 0 when
nothing differed.

How an episode runs (on a fresh connection to each server, both at once): its parts
are sent in order, a part may be split into several writes, each sent once the
server has read the one before (its socket's receive queue is empty, as the
kernel's socket diagnostics show), so each arrives in a read of its own; at a sync point
the tester sends "mg __sync__ Os<n>" and reads until its unique reply
"EN Os<n>" arrives, so that later parts can use CAS uniques the server
returned ({CAS}: the latest, {CASP}: the one before). At the end the tester shuts down its sending side and reads until the
server closes, so every reply is collected without any timing assumption: both
servers answer everything they read, then see end-of-file and close. A
deadline (generous: 60 s) only turns a hang into a reported difference.

Normalisation (only what cannot be equal by design; docs/server.md):
  - CAS uniques: each distinct value is renamed in order of appearance per
    server (<cas1>, <cas2>, ...), so the identity pattern is still compared
    (the same item shows the same unique, a write changes it); 0 stays 0.
  - remaining TTLs (mg/ma "t", me "exp"): equal within five seconds, since
    memcached's clock ticks once a second on a timer that a loaded machine
    delays.
  - "VERSION ..." and the internal fields of "me" (la, cls, size: memcached's
    access clock, slab class and item layout) are masked, and so is mg's
    "l" (seconds since the last access, which memcached updates at most once
    a minute and larderd does not keep: docs/server.md).
  - a connection closed by the server reads as <CLOSED>, whether the close
    came as FIN or RST.
  - binary protocol episodes (diffbinary.py) are compared frame by frame: CAS
    uniques in the response headers renamed as above, VERSION's text and the
    frames of a successful STAT masked.
An episode during which the machine's wall clock was stepped (it moved by
more than CLOCK_STEP against the monotonic clock) is not compared: the two
servers read absolute exptimes against different clocks by design
(docs/server.md, "clock-step"); it is counted and printed, and both servers
are restarted, so the next episodes start from clocks that agree.
Every seed is printed, and a failing episode is printed as Python literals so
it can be replayed.
"""
import argparse, os, random, select, signal, socket, struct, subprocess, sys, threading, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from loopback import serve
import diffbinary, diffcases, diffgrammar

DEADLINE = 60.0
# memcached's clock ticks once a second, driven by a timer that a loaded
# machine delays (seen: 3 s behind in a 10-minute run on a shared 2-core
# machine); larderd rounds up.
TTL_SLACK = 5
SYNC = diffgrammar.SYNC
# A wall clock that moved by more than this against the monotonic clock was
# stepped (NTP's slewing moves it by at most 0.05%, 0.3 s in 10 minutes).
CLOCK_STEP = 1.0


class Hang(Exception):
    pass


def recv_some(s, deadline):
    s.settimeout(max(0.01, deadline - time.monotonic()))
    try:
        return s.recv(1 << 20)
    except socket.timeout:
        raise Hang()
    except (ConnectionResetError, BrokenPipeError):
        return b""


NETLINK_SOCK_DIAG, SOCK_DIAG_BY_FAMILY, NLMSG_ERROR, TCP_ESTABLISHED = 4, 20, 2, 1


def tcp_queues(diag, port_a, port_b):
    """(state, receive queue, send queue) of the loopback TCP socket from
    port_a to port_b, None when there is none, asked of the kernel's socket
    diagnostics (sock_diag, as ss does) on the netlink socket diag."""
    lo = socket.inet_aton("127.0.0.1") + bytes(12)
    req = struct.pack("=BBBBI", socket.AF_INET, socket.IPPROTO_TCP, 0, 0, 0xffffffff)
    req += struct.pack("!HH", port_a, port_b) + lo + lo
    req += struct.pack("=III", 0, 0xffffffff, 0xffffffff)  # any interface, no cookie
    diag.send(struct.pack("=IHHII", 16 + len(req), SOCK_DIAG_BY_FAMILY, 1, 0, 0) + req)
    b = diag.recv(65536)
    if struct.unpack_from("=H", b, 4)[0] == NLMSG_ERROR:
        return None
    state = b[16 + 1]
    rq, wq = struct.unpack_from("=II", b, 16 + 4 + 48 + 4)
    return state, rq, wq


def wait_read(s, diag, ports, deadline):
    """Waits until the server has read every byte sent on s (ports: ours, the
    server's; diag: a sock_diag netlink socket): none is waiting
    for its acknowledgement on our side, none unread on the server's (a
    socket the server closed counts as read). Receives the server's replies
    meanwhile, so that it never stops reading for want of room to write, and
    returns them."""
    mine, server = ports
    got = b""
    while True:
        ours, theirs = tcp_queues(diag, mine, server), tcp_queues(diag, server, mine)
        if (ours is None or ours[2] == 0) and \
                (theirs is None or theirs[0] != TCP_ESTABLISHED or theirs[1] == 0):
            return got
        if time.monotonic() > deadline:
            raise Hang()
        # A poll interval that also takes replies as they come.
        if select.select([s], [], [], 0.001)[0]:
            try:
                b = s.recv(1 << 20)
            except (ConnectionResetError, BrokenPipeError):
                b = b""
            if not b:
                return got + b"<CLOSED>"
            got += b


def sync_request(n):
    """The sync point's request and its reply: an mg of a key no episode
    uses, whose echoed opaque makes the reply unique on the connection."""
    return b"mg __sync__ Os%d\r\n" % n, b"EN Os%d\r\n" % n


def fill(part, cas):
    """Replaces {CAS} and {CASP} with this server's latest uniques."""
    latest = cas[-1] if cas else b"0"
    prev = cas[-2] if len(cas) > 1 else b"0"
    return part.replace(b"{CAS}", latest).replace(b"{CASP}", prev)


def run_episode(port, parts, split_seed):
    """Runs one episode on a fresh connection; returns everything received.
    A binary episode (diffbinary.is_binary) syncs with a NOOP and fills
    the binary CAS templates."""
    rng = random.Random(split_seed)
    binary = diffbinary.is_binary(parts)
    sync_req, filled = ((diffbinary.sync_request, lambda p, o: diffbinary.fill(p, diffbinary.cas_values(o)))
                        if binary else (sync_request, lambda p, o: fill(p, cas_values(o))))
    s = socket.create_connection(("127.0.0.1", port), timeout=DEADLINE)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    diag = socket.socket(socket.AF_NETLINK, socket.SOCK_DGRAM, NETLINK_SOCK_DIAG)
    ports = (s.getsockname()[1], port)
    # early: replies received while waiting for the server to read a split
    # part, appended to out where the run reads next, so that {CAS} is
    # filled from the same replies as without the wait.
    out, early, syncs = b"", b"", 0
    try:
        for part in parts:
            if part is SYNC:
                out, early = out + early, b""
                syncs += 1
                req, rep = sync_req(syncs)
                try:
                    s.sendall(req)
                except (BrokenPipeError, ConnectionResetError):
                    return out + b"<CLOSED>"
                deadline = time.monotonic() + DEADLINE
                while not out.endswith(rep):
                    b = recv_some(s, deadline)
                    if not b:
                        return out + b"<CLOSED>"
                    out += b
                continue
            split = isinstance(part, diffgrammar.Split)
            data = filled(part.data if split else part, out)
            try:
                if split:
                    i = 0
                    while i < len(data):
                        n = rng.choice(part.sizes)
                        s.sendall(data[i:i + n])
                        i += n
                        early += wait_read(s, diag, ports, time.monotonic() + DEADLINE)
                        if early.endswith(b"<CLOSED>"):
                            return out + early
                else:
                    s.sendall(data)
            except (BrokenPipeError, ConnectionResetError):
                break
        out, early = out + early, b""
        try:
            s.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        deadline = time.monotonic() + DEADLINE
        while True:
            b = recv_some(s, deadline)
            if not b:
                return out + b"<CLOSED>"
            out += b
    except Hang:
        return out + b"<HANG>"
    finally:
        s.close()
        diag.close()


# ---- parsing and normalising a reply stream ---------------------------------

def split_replies(b):
    """Splits a reply stream into items: a line, or a line with its data block
    (VALUE and VA). Returns a list of (line, data or None)."""
    items, i = [], 0
    while i < len(b):
        if b.startswith(b"<CLOSED>", i) or b.startswith(b"<HANG>", i):
            items.append((b[i:], None))
            break
        j = b.find(b"\r\n", i)
        if j < 0:
            items.append((b[i:], None))
            break
        line, i = b[i:j], j + 2
        n = None
        f = line.split(b" ")
        if f[0] == b"VALUE" and len(f) >= 4 and f[3].isdigit():
            n = int(f[3])
        elif f[0] == b"VA" and len(f) >= 2 and f[1].isdigit():
            n = int(f[1])
        if n is not None and i + n + 2 <= len(b):
            items.append((line, b[i:i + n + 2]))
            i += n + 2
        else:
            items.append((line, None))
    return items


META_CODES = {b"HD", b"VA", b"EN", b"NF", b"NS", b"EX"}


def cas_values(out):
    """CAS uniques in the order the server returned them (for {CAS})."""
    found = []
    for line, _ in split_replies(out):
        f = line.split(b" ")
        if f[0] == b"VALUE" and len(f) == 5:
            found.append(f[4])
        elif f[0] in META_CODES:
            found += [t[1:] for t in f[1:] if t[:1] == b"c" and t[1:].isdigit()]
    return found


class Normaliser:
    """One server's replies to one episode."""

    def __init__(self):
        self.names = {}

    def cas(self, v):
        if v == b"0":
            return v
        return self.names.setdefault(v, b"<cas%d>" % (len(self.names) + 1))

    def line(self, line):
        """Returns (normalised line, list of TTL numbers compared loosely)."""
        f = line.split(b" ")
        ttls = []
        if f[0] == b"VALUE" and len(f) == 5 and f[4].isdigit():
            f[4] = self.cas(f[4])
        elif f[0] in META_CODES:
            for k in range(1, len(f)):
                t = f[k]
                if t[:1] == b"c" and t[1:].isdigit():
                    f[k] = b"c" + self.cas(t[1:])
                elif t[:1] == b"t" and t[1:].isdigit():
                    ttls.append(int(t[1:]))
                    f[k] = b"t<ttl>"
                elif t[:1] == b"l" and t[1:].isdigit():
                    f[k] = b"l<masked>"
        elif f[0] == b"ME":
            for k in range(2, len(f)):
                name, _, v = f[k].partition(b"=")
                if name == b"cas" and v.isdigit():
                    f[k] = b"cas=" + self.cas(v)
                elif name == b"exp" and v.lstrip(b"-").isdigit() and v != b"-1":
                    ttls.append(-int(v))
                    f[k] = b"exp=<ttl>"
                elif name in (b"la", b"cls", b"size"):
                    f[k] = name + b"=<masked>"
        elif f[0] == b"VERSION":
            f = [b"VERSION", b"<v>"]
        return b" ".join(f), ttls

    def stream(self, b, binary=False):
        if binary:
            return diffbinary.normalise(b, self.cas), []
        out, ttls = [], []
        for line, data in split_replies(b):
            l, t = self.line(line)
            out.append((l, data))
            ttls += t
        return out, ttls


def first_difference(a, b):
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y:
            return i
    return min(len(a), len(b))


def same(na, nb):
    (ia, ta), (ib, tb) = na, nb
    return ia == ib and len(ta) == len(tb) and all(abs(x - y) <= TTL_SLACK for x, y in zip(ta, tb))


# ---- servers ------------------------------------------------------------------

SETTINGS = ["-m", "256", "-t", "4", "-I", "1m", "-c", "1024"]
MC_EXTRA = os.environ.get("DIFFTEST_MC_ARGS", "").split()


def start_servers(larderd, memcached):
    mlog = open(os.environ["DIFFTEST_MC_LOG"], "w") if "DIFFTEST_MC_LOG" in os.environ else subprocess.DEVNULL
    mproc, mp = serve([memcached, "-l", "127.0.0.1", "-U", "0", "-u", "nobody"] + SETTINGS + MC_EXTRA,
                      stderr=mlog)
    try:
        lproc, lp = serve([larderd, "-l", "127.0.0.1"] + SETTINGS, stderr=subprocess.DEVNULL)
    except Exception:
        stop_servers([mproc])
        raise
    procs = [mproc, lproc]
    # larderd tracks fetches (mg h, me fetch=) from the first request that
    # asks about them (docs/server.md); memcached always does. Ask once at
    # the start, so that both count every read that follows.
    for port in (mp, lp):
        run_episode(port, [b"me __start__\r\n"], 0)
    return procs, mp, lp


def stop_servers(procs):
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


# ---- the run ---------------------------------------------------------------------

def wall_offset():
    """The wall clock less the monotonic clock: constant unless the wall
    clock is stepped (or slewed). A thread descheduled between the two reads
    (0.9 s once on the loaded build machine) would see a step that is not
    there, so each monotonic read is bracketed by two wall-clock reads and the
    tightest of three brackets counts."""
    best = None
    for _ in range(3):
        a, m, b = time.time(), time.monotonic(), time.time()
        if best is None or b - a < best[0]:
            best = (b - a, (a + b) / 2 - m)
    return best[1]


class Run:
    """The two servers and the tally of a run.

    A step of the machine's wall clock makes the servers disagree by design:
    memcached turns an absolute exptime into its own clock, read from the wall
    clock once at its start and advanced by a monotonic timer, while larderd
    reads the wall clock (docs/server.md, "clock-step"). So an episode during
    which the wall clock moved by more than CLOCK_STEP against the monotonic
    clock since the servers started is not compared (it is counted and
    printed), and both servers are restarted with empty caches, so that the
    next episodes start from clocks that agree again."""

    def __init__(self, larderd, memcached, show):
        self.binaries, self.show = (larderd, memcached), show
        self.episodes = self.diffs = self.uncompared = 0
        self.differing = []
        self.procs = []
        self.start()

    def start(self):
        self.procs, self.mport, self.lport = start_servers(*self.binaries)
        self.clock = wall_offset()

    def stop(self):
        stop_servers(self.procs)

    def alive(self):
        return [p.poll() is None for p in self.procs]

    def episode(self, name, parts, split_seed=0):
        self.episodes += 1
        a, b = both(lambda: run_episode(self.mport, parts, split_seed),
                    lambda: run_episode(self.lport, parts, split_seed))
        step = wall_offset() - self.clock
        if abs(step) > CLOCK_STEP:
            self.uncompared += 1
            print("wall clock stepped by %+.1f s: %s not compared; both servers restarted"
                  % (step, name))
            if not all(self.alive()):
                raise RuntimeError("a server died (memcached alive %s, larderd alive %s)"
                                   % tuple(self.alive()))
            self.stop()
            self.start()
            return True
        binary = diffbinary.is_binary(parts)
        na, nb = Normaliser().stream(a, binary), Normaliser().stream(b, binary)
        if same(na, nb):
            return True
        self.diffs += 1
        self.differing.append(name.split(":")[0])
        if self.diffs <= self.show:
            i = first_difference(na[0], nb[0])
            print("DIFFERENCE in %s" % name)
            print("  parts:     %s" % show_parts(parts))
            print("  memcached: %r" % trim(a))
            print("  larderd:   %r" % trim(b))
            print("  first differing reply #%d: memcached %r, larderd %r" % (
                i, na[0][i] if i < len(na[0]) else None, nb[0][i] if i < len(nb[0]) else None))
            if na[0] == nb[0]:
                print("  (remaining TTLs differ by more than %d s: %r vs %r)" % (TTL_SLACK, na[1], nb[1]))
        # Both caches may now hold different things: start the next one clean.
        both(lambda: run_episode(self.mport, [b"flush_all\r\n"], 0),
             lambda: run_episode(self.lport, [b"flush_all\r\n"], 0))
        return False


def both(fa, fb):
    """Runs the two servers' sides at the same time, so that the clocks they
    see (TTLs) are the same instants."""
    res = [None, None]

    def side(i, f):
        res[i] = f()

    t = threading.Thread(target=side, args=(1, fb))
    t.start()
    side(0, fa)
    t.join()
    return res[0], res[1]


def trim(b, n=600):
    return b if len(b) <= n else b[:n] + b"...(%d bytes)" % len(b)


def show_parts(parts, n=300):
    shown = []
    for p in parts:
        if p is SYNC:
            shown.append("SYNC")
        elif isinstance(p, diffgrammar.Split):
            shown.append("Split(%r)" % trim(p.data, n))
        else:
            shown.append(repr(trim(p, n)))
    return "[" + ", ".join(shown) + "]"


# The share of random episodes that speak the binary protocol.
BINARY_SHARE = 0.3


def scripted_cases(protocol):
    return ([] if protocol == "binary" else diffcases.CASES) + \
        ([] if protocol == "text" else diffbinary.CASES)


class Episodes:
    """Random episodes of both grammars, text and binary, from one seed."""

    def __init__(self, seed, protocol):
        self.text, self.binary = diffgrammar.Grammar(seed), diffbinary.Grammar(seed ^ 0xb1)
        self.mix, self.protocol = random.Random(seed ^ 0x5eed), protocol
        self.binary_count = 0

    def episode(self):
        share = {"both": BINARY_SHARE, "text": 0.0, "binary": 1.0}[self.protocol]
        if self.mix.random() < share:
            self.binary_count += 1
            return self.binary.episode()
        return self.text.episode()

    def probe(self):
        return self.text.probe()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("larderd")
    ap.add_argument("memcached")
    ap.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    ap.add_argument("--episodes", type=int, default=None, help="random episodes to run")
    ap.add_argument("--seconds", type=float, default=None, help="time bound of the random phase")
    ap.add_argument("--scripted-only", action="store_true")
    ap.add_argument("--protocol", choices=("both", "text", "binary"), default="both",
                    help="which protocol's episodes to run (default: both; random "
                    "episodes are binary with probability BINARY_SHARE)")
    ap.add_argument("--random-only", action="store_true")
    ap.add_argument("--show", type=int, default=20, help="differences printed in full")
    ap.add_argument("--only", type=int, default=None,
                    help="run only this random episode of the seed (on empty caches)")
    args = ap.parse_args()
    seed = args.seed if args.seed is not None else int.from_bytes(os.urandom(4), "little")
    if args.episodes is None and args.seconds is None:
        args.episodes = 200

    run = Run(args.larderd, args.memcached, args.show)
    try:
        t0 = time.monotonic()
        if not args.random_only:
            bad, cases = 0, scripted_cases(args.protocol)
            for name, parts in cases:
                start = diffbinary.FLUSH if diffbinary.is_binary(parts) else b"flush_all\r\n"
                bad += not run.episode("case " + name, [start, SYNC] + parts)
            print("scripted: %d of %d cases identical" % (len(cases) - bad, len(cases)))
        if not args.scripted_only:
            print("random: seed %d; excluded productions (docs/server.md): %s"
                  % (seed, ", ".join(sorted(diffgrammar.EXCLUDED | diffbinary.EXCLUDED))))
            gen = Episodes(seed, args.protocol)
            t1, n, bad = time.monotonic(), 0, 0
            while ((args.episodes is None or n < args.episodes) and
                   (args.seconds is None or time.monotonic() - t1 < args.seconds)):
                name, parts = gen.episode()
                if args.only is None or args.only == n:
                    if args.only is not None:
                        print("episode %d: %s" % (n, show_parts(parts, 100000)))
                    label = "random episode %d (seed %d): %s" % (n, seed, name)
                    ok = run.episode(label, parts, split_seed=seed * 1000003 + n)
                    bad += not (ok and run.episode(label + ", then the probe", gen.probe()))
                n += 1
                if args.only is not None and n > args.only:
                    break
            print("random: %d of %d episodes identical, %d of them binary (seed %d, %.0f s)"
                  % (n - bad, n, gen.binary_count, seed, time.monotonic() - t1))
        alive = run.alive()
        if not all(alive):
            print("FAIL: a server died (memcached alive %s, larderd alive %s)" % tuple(alive))
            return 1
        if run.differing:
            print("differing: " + "; ".join(run.differing[:50]))
        if run.uncompared:
            print("%d episodes not compared: the wall clock was stepped" % run.uncompared)
        print("difftest: %d episodes, %d differences, %.0f s"
              % (run.episodes, run.diffs, time.monotonic() - t0))
        return 1 if run.diffs else 0
    finally:
        run.stop()


if __name__ == "__main__":
    sys.exit(main())
