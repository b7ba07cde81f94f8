"""diffgrammar.py - the random command streams of difftest.py.

Grammar.episode() returns (name, parts): an episode of 1 to 16 commands drawn
from the productions below (every text and meta command, valid, boundary and
malformed), sometimes pipelined in one write, sometimes split into small
writes. A part is bytes, Split(bytes) or SYNC (see difftest.py).

Framing: a production says whether the server is surely back at a command
boundary after it ("clean": its line and data are well formed, whatever the
reply) or not ("dirty": a wrong length, an unknown state). Syncs and CAS
templates are used only while the episode is still clean; dirty commands come
after the last sync, and after one only short lines and values follow, so no
later byte can become a line that makes the server hang up. "Terminal" ones
(quit, HTTP, an endless line, a refused value that never arrives whole) come
only right after a sync and end the episode: which replies a server still
sends before it closes depends on how its reads fell, unless every earlier
reply was already received.
Nothing depends on timing: every TTL the grammar writes is 0, in the past, or
at least 100,000 s away, so no item expires during a run.

EXCLUDED lists the productions for the differences larderd keeps on purpose
(docs/server.md, "Differences from memcached"); they are never generated.
"""
import base64


class Sync:
    def __repr__(self):
        return "SYNC"


SYNC = Sync()


class Split:
    """Bytes sent in small pieces (see difftest.run_episode), of sizes drawn
    from `sizes`; sizes=(1,) sends every byte in a segment of its own."""

    def __init__(self, data, sizes=(1, 2, 3, 7, 64, 1000)):
        self.data = data
        self.sizes = sizes


# Differences kept on purpose, by production name (docs/server.md).
EXCLUDED = {
    "length-wrap",      # a value length over 2^32 that memcached silently wraps
    "stats-body",       # stats output: process state, different by nature
    "admin-commands",   # slabs, lru, lru_crawler (but metadump), watch, extstore: internals
    "long-key-after-pipeline",  # memcached culls earlier pipelined replies
    "long-non-get-line",  # over 2 KiB: memcached takes it only if it fits one 16 KiB read
    "incr-whitespace-value",  # memcached's incr reads past a value of only white space
    "incr-in-place-race",  # memcached rewrites in place only if no other thread holds the item
    "flush-time-undoes-flush",  # memcached: a later flush_all <time> revives flushed items
    "incr-huge-value",  # memcached's incr of a value >= 2^63 reads past the value
}

CLEAN, DIRTY, TERMINAL = "clean", "dirty", "terminal"

PLAIN_KEYS = [b"a", b"b", b"c", b"k1", b"k2", b"num", b"ctr", b"\xe9t\xe9", b"k\x01x",
              b"k\tx", b"k\rx", b"K" * 250, b"MN", b"VALUE", b"-", b"0"]
BAD_KEYS = [b"x" * 251, b"y" * 300]
# Tokens memcached refuses as numbers: the line fails before its value, which
# is then read as a command (so the value must be short and harmless).
BAD_NUMBERS = {b"-1", b"abc", b"18446744073709551616", b"-", b"1.5", b"99999999999999999999"}
NUMS = [b"0", b"1", b"10", b"42", b"007", b"18446744073709551615", b"18446744073709551614",
        b"9999999999", b"  5", b"5 ", b"+7", b"-3", b"-0", b"12abc", b"1\x00x", b"",
        b"\t8", b"3\r", b"1e3", b"0x10", b"99999999999999999999"]
# Values for incr/decr: none at or above 2^63, where memcached looks for a
# minus sign past the end of the value ("incr-huge-value").
ARITH_NUMS = [n for n in NUMS if n not in (b"18446744073709551615", b"18446744073709551614")]
FLAGS = [b"0", b"1", b"4294967295", b"4294967296", b"-1", b"abc", b"18446744073709551615",
         b"18446744073709551616", b"-0", b"+5", b"\t5", b"5\t", b"12345"]
EXPTIMES = [b"0", b"0", b"-1", b"-2147483648", b"100000", b"2592000", b"2592001",
            b"2147483647", b"2147483648", b"4294967296", b"abc", b"-", b"+100000",
            b"\t100000", b"100000\t", b"99999999999", b"1.5", b"1000000000"]
DELTAS = [b"1", b"0", b"5", b"18446744073709551615", b"18446744073709551616", b"-1",
          b"abc", b"+3", b"\t2", b"007", b"1 ", b""]
META_ARGS = [b"", b"0", b"-1", b"100000", b"2592001", b"99999999999",
             b"18446744073709551616", b"abc", b"2147483648", b"4294967296", b"+100000", b"-0"]
# R (recache when less than this is left): never equal to a TTL the grammar
# writes, where the two servers' clocks could fall on either side.
R_ARGS = [b"", b"0", b"-1", b"99900", b"100100", b"2592001", b"99999999999", b"abc",
          b"2147483648", b"-0", b"3000000"]
OPAQUES = [b"", b"1", b"abc", b"x" * 32, b"x" * 33, b"O", b"\xff\xfe"]


def b64(k):
    return base64.b64encode(k)


def pick(r, total, prods):
    """One of prods ((weight, name, fn), weights summing to total) by weight: (name, fn)."""
    x = r.uniform(0, total)
    for w, name, fn in prods:
        x -= w
        if x <= 0:
            return name, fn
    return prods[-1][1], prods[-1][2]


class Grammar:
    def __init__(self, seed):
        import random
        self.r = random.Random(seed)
        self.short = False  # after a dirty command: short lines and values only
        self.fresh = 0  # keys that arith_key() made up
        self.prods = [
            (12, "storage", self.storage),
            (3, "storage-bad-header", self.storage_bad_header),
            (2, "storage-bad-data", self.storage_bad_data),
            (1, "too-large", self.too_large),
            (4, "cas", self.cas),
            (10, "get", self.get),
            (2, "get-many-keys", self.get_many),
            (1, "long-key-after-pipeline", self.get_long_key),
            (4, "delete", self.delete),
            (5, "arith", self.arith),
            (3, "touch", self.touch),
            (1, "flush_all", self.flush_all),
            (2, "misc", self.misc),
            (2, "garbage", self.garbage),
            (1, "terminal", self.terminal),
            (10, "mg", self.mg),
            (8, "ms", self.ms),
            (5, "md", self.md),
            (5, "ma", self.ma),
            (2, "me", self.me),
            (2, "meta-too-many", self.meta_too_many),
            (2, "stale-flow", self.stale_flow),
            (1, "length-wrap", self.length_wrap),
            (1, "stats-body", lambda: (b"stats\r\n", CLEAN)),
            (1, "admin-commands", lambda: (b"slabs automove 1\r\n", CLEAN)),
            (1, "long-non-get-line", lambda: (b"gat 0 " + b"a " * 3000 + b"\r\n", CLEAN)),
            (1, "flush-time-undoes-flush", lambda: (b"flush_all 1000000\r\n", CLEAN)),
            (1, "incr-huge-value", lambda: (b"set a 0 0 20\r\n18446744073709551615\r\nincr a 1\r\n",
                                            CLEAN)),
        ]
        self.prods = [p for p in self.prods if p[1] not in EXCLUDED]
        self.total = sum(w for w, _, _ in self.prods)

    # ---- pieces -------------------------------------------------------------

    def pick(self, seq):
        return self.r.choice(seq)

    def key(self, bad_ok=True):
        if bad_ok and self.r.random() < 0.03:
            return self.pick(BAD_KEYS)
        return self.pick(PLAIN_KEYS)

    def value(self):
        r = self.r.random()
        if self.short:
            r *= 0.8
        if r < 0.35:
            v = self.pick(NUMS)
        elif r < 0.8:
            n = self.r.choice((0, 1, 2, 5, 13, 40))
            v = bytes(self.r.randrange(256) for _ in range(n))
        elif r < 0.97:
            v = bytes(self.r.choice(b"xyz \r\n\x00") for _ in range(self.r.randrange(100, 5000)))
        else:
            v = b"v" * self.r.choice((100000, 1048000, 1048400, 1048500, 1048510, 1048576))
        if v and not v.strip(b" \t\n\v\f\r"):
            v = b"x" + v[1:]  # "incr-whitespace-value"
        return v

    def noreply(self, p=0.2):
        return b" noreply" if self.r.random() < p else b""

    def exptime(self):
        return self.pick(EXPTIMES)

    # ---- text storage -------------------------------------------------------

    def storage(self):
        cmd = self.pick((b"set", b"set", b"add", b"replace", b"append", b"prepend"))
        k, v = self.key(), self.value()
        flags = b"0" if self.r.random() < 0.5 else self.pick(FLAGS)
        kind, exptime = CLEAN, self.exptime()
        if k in BAD_KEYS or flags in BAD_NUMBERS or exptime in BAD_NUMBERS:
            v, kind = b"xjunk", DIRTY  # refused before its value: see BAD_NUMBERS
        line = b"%s %s %s %s %d%s" % (cmd, k, flags, exptime, len(v), self.noreply())
        return line + b"\r\n" + v + b"\r\n", kind

    def storage_bad_header(self):
        """Malformed set lines whose next line is a harmless unknown command."""
        cmd = self.pick((b"set", b"add", b"cas", b"append"))
        forms = [b"%s k 0 0", b"%s k 0 0 1 2 3 4", b"%s k 0 0 -1", b"%s k 0 0 abc",
                 b"%s k 0 0 2147483648", b"%s k 0 0 4294967295", b"%s %s 0 0 1" % (b"%s", BAD_KEYS[0]),
                 b"%s k 0 0 1 noreply extra", b"%s", b"%s k", b"%s k 0 0 +1", b"%s k 0 0 -0"]
        line = self.pick(forms) % cmd
        return line + b"\r\nxjunk%d\r\n" % self.r.randrange(1000), DIRTY

    def storage_bad_data(self):
        v = self.value()
        n = len(v) + self.pick((-2, -1, 1, 2, 5))
        if n < 0:
            n = 0
        return b"set %s 0 0 %d%s\r\n%s\r\n" % (self.key(False), n, self.noreply(), v), DIRTY

    def too_large(self):
        if self.short:  # after a dirty command its value could be read as a line
            return b"set a 0 0 1\r\n1\r\n", CLEAN
        cmd = self.pick((b"set", b"add", b"replace", b"append", b"cas"))
        n = self.pick((1048577, 1048600, 2000000))
        extra = b" 1" if cmd == b"cas" else b""
        data = b"z" * n + b"\r\n"
        if self.r.random() < 0.3:
            # the value does not come (whole): the reply must not come either
            return (b"%s %s 0 0 %d%s\r\n" % (cmd, self.key(False), n, extra)
                    + data[:self.r.randrange(len(data))], TERMINAL)
        return b"%s %s 0 0 %d%s%s\r\n" % (cmd, self.key(False), n, extra, self.noreply()) + data, CLEAN

    def length_wrap(self):
        return b"set k 0 0 4294967299\r\nabc\r\n", DIRTY

    def cas(self):
        k = self.key(False)
        v = self.value()
        unique = self.pick((b"{CAS}", b"{CAS}", b"{CASP}", b"0", b"abc", b"18446744073709551615",
                            b"-1", b"99999999999999999999"))
        kind = CLEAN
        if unique in BAD_NUMBERS:
            v, kind = b"xjunk", DIRTY
        line = b"cas %s 0 %s %d %s%s\r\n%s\r\n" % (k, self.pick((b"0", b"100000", b"-1")), len(v),
                                                  unique, self.noreply(), v)
        return [self.pick((b"gets %s\r\n" % k, b"mg %s c\r\n" % k)), SYNC, line], kind

    # ---- reads ----------------------------------------------------------------

    def get(self):
        cmd = self.pick((b"get", b"gets", b"gat", b"gats", b"bget", b"mget", b"get", b"gets"))
        keys = [self.key(False) for _ in range(self.r.randrange(0, 5))]
        if self.r.random() < 0.1:
            keys += keys
        line = cmd
        if cmd in (b"gat", b"gats"):
            line += b" " + self.exptime()
        sep = self.pick((b" ", b" ", b"  "))
        line += b" " + sep.join(keys) + self.pick((b"", b"", b" "))
        return line + self.pick((b"\r\n", b"\r\n", b"\n")), CLEAN

    def get_many(self):
        if self.short:
            return b"get a b\r\n", CLEAN
        cmd = self.pick((b"get", b"gets", b"gat 0", b"bget"))
        n = self.pick((21, 22, 23, 24, 25, 100, 3000, 20000))
        if cmd in (b"gat 0", b"bget"):
            n = min(n, 200)  # a longer line is "long-non-get-line"
        p = min(0.2, 20.0 / n)  # a few of the pool's keys, whose values may be 1 MB
        keys = b" ".join(self.key(False) if self.r.random() < p else b"m%d" % i for i in range(n))
        return cmd + b" " + keys + b"\r\n", CLEAN

    def get_long_key(self):
        return b"get a %s b\r\n" % BAD_KEYS[0], CLEAN

    # ---- others ---------------------------------------------------------------

    def delete(self):
        k = self.key()
        tail = self.pick((b"", b" 0", b" noreply", b" 0 noreply", b" 10", b" 10 noreply",
                          b" 0 noreply x", b" x", b" 00"))
        return b"delete %s%s\r\n" % (k, tail), CLEAN

    def arith_key(self):
        """After a wrong length the set before an incr may have been read as
        a value, so that the incr meets an item read earlier in the episode:
        then a key no one has read."""
        if self.short:
            self.fresh += 1
            return b"fresh%d" % self.fresh
        return self.pick((b"num", b"ctr", b"a", self.key(False)))

    def arith(self):
        """incr/decr, on a value written just before: memcached rewrites the
        number in place (padding a shorter one with spaces, keeping the
        item's fetched/stale bits) only when no other thread or pending
        reply holds the item, else it writes a new item; that race
        ("incr-in-place-race") cannot touch an item nobody has read."""
        cmd = self.pick((b"incr", b"decr"))
        k = self.arith_key()
        v = self.pick(ARITH_NUMS)
        return (b"set %s 0 0 %d\r\n%s\r\n%s %s %s%s\r\n"
                % (k, len(v), v, cmd, k, self.pick(DELTAS), self.noreply())), CLEAN

    def touch(self):
        return b"touch %s %s%s\r\n" % (self.key(), self.exptime(), self.noreply()), CLEAN

    def flush_all(self):
        arg = self.pick((b"", b" 0", b" -1", b" abc", b" 2147483648", b" 4294967296",
                         b" 0 0", b" 1 2 3"))
        return b"flush_all%s%s\r\n" % (arg, self.noreply(0.3)), CLEAN

    def misc(self):
        return self.pick((
            b"version\r\n", b"version x\r\n", b"verbosity 1\r\n", b"verbosity\r\n",
            b"verbosity abc\r\n", b"verbosity -1\r\n", b"verbosity 1 noreply\r\n",
            b"verbosity 99\r\n", b"verbosity 1 2\r\n", b"verbosity 1 2 3\r\n",
            b"stats reset\r\n", b"stats nonsense\r\n", b"stats noreply\r\n",
            b"shutdown\r\n", b"shutdown graceful\r\n", b"mn\r\n", b"mn x\r\n",
            b"\r\n", b"\n", b" \r\n", b"\x00\r\n", b"mn\x00get a\r\n",
        )), CLEAN

    def garbage(self):
        """Unknown commands and binary lines (one line, under 2 KiB)."""
        n = self.r.randrange(1, 60)
        body = bytes(self.r.choice(b"abcxyzGETHTP. \t\x00\x7f\x80\xff\r") for _ in range(n))
        return b"z" + body + b"\r\n", CLEAN

    def terminal(self):
        return self.pick((
            (b"quit\r\n", TERMINAL),
            (b"quit x\r\n", TERMINAL),
            (b"GET / HTTP/1.0\r\n\r\n", TERMINAL),
            (b"PUT /k HTTP/1.1\r\nContent-Length: 1\r\n\r\nx", TERMINAL),
            (b"set " + b"a" * 5000, TERMINAL),
            (b"gat 0 " + b"a " * 3000, TERMINAL),
            (b" " * 200 + b"get " + b"a " * 2000, TERMINAL),
        ))

    # ---- meta -------------------------------------------------------------------

    def meta_key(self, allow_b=True):
        if allow_b and self.r.random() < 0.15:
            k = self.pick((b64(self.key(False)), b"!!!!", b"YQ", b"YQ==", b"YWJj", b"====",
                           b"Y*Q==", b"YQ==YQ=="))
            return k, [b"b"]
        return self.key(), []

    def flags(self, letters, with_args, n_max=5):
        out = []
        for _ in range(self.r.randrange(0, n_max + 1)):
            r = self.r.random()
            if r < 0.04:
                out.append(self.pick((b"Z", b"1", b"$", b"E5", b"\xff", b"-")))
                continue
            c = self.pick(letters)
            if c in with_args:
                if c == b"O":
                    out.append(b"O" + self.pick(OPAQUES))
                elif c == b"M":
                    out.append(b"M" + self.pick((b"S", b"E", b"A", b"P", b"R", b"I", b"D", b"+",
                                                 b"-", b"s", b"x", b"", b"SS")))
                elif c == b"C":
                    out.append(b"C" + self.pick((b"{CAS}", b"{CAS}", b"{CASP}", b"0", b"1", b"abc")))
                elif c == b"R":
                    out.append(b"R" + self.pick(R_ARGS))
                else:
                    out.append(c + self.pick(META_ARGS))
            else:
                out.append(c)
        if self.r.random() < 0.05 and out:
            out.append(out[0])  # a duplicate
        return out

    def meta_line(self, cmd, key, flags):
        return b" ".join([cmd, key] + flags)

    def mg(self):
        k, b = self.meta_key()
        fl = b + self.flags([b"c", b"f", b"h", b"k", b"l", b"O", b"q", b"s", b"t", b"u", b"v",
                             b"T", b"N", b"R", b"E", b"P", b"L"], (b"O", b"T", b"N", b"R"))
        return self.meta_line(b"mg", k, fl) + b"\r\n", CLEAN

    def ms(self):
        k, b = self.meta_key()
        v = self.value()
        fl = b + self.flags([b"c", b"k", b"O", b"q", b"F", b"T", b"C", b"M", b"I", b"S", b"N"],
                            (b"O", b"F", b"T", b"C", b"M", b"N", b"S"))
        kind = CLEAN
        if k in BAD_KEYS or len(fl) > 17:  # refused before the value is known
            v, kind = b"xjunk", DIRTY
        elif len(k) > 250:
            # A base64 key longer than a key may be (b64 of a 250-byte key):
            # both servers refuse it and close the connection. Terminal, so
            # that every earlier reply is read before the close: a close with
            # input unread sends a reset, which can discard replies the
            # client has not read yet (seen once in a 10-minute run).
            kind = TERMINAL
        return b"ms %s %d%s%s\r\n%s\r\n" % (k, len(v), b" " if fl else b"", b" ".join(fl), v), kind

    def md(self):
        k, b = self.meta_key()
        fl = b + self.flags([b"k", b"O", b"q", b"C", b"I", b"T", b"x"], (b"O", b"C", b"T"))
        return self.meta_line(b"md", k, fl) + b"\r\n", CLEAN

    def ma(self):
        """ma on a value written just before, or created by its own N (see
        arith() for why)."""
        k = self.arith_key()
        fl = self.flags([b"c", b"k", b"O", b"q", b"t", b"v", b"N", b"J", b"D", b"T", b"C", b"M"],
                        (b"O", b"N", b"J", b"D", b"T", b"C", b"M"))
        v = self.pick(ARITH_NUMS)
        pre = (b"set %s 0 0 %d\r\n%s\r\n" % (k, len(v), v) if self.r.random() < 0.6
               else b"delete %s noreply\r\n" % k)
        return pre + self.meta_line(b"ma", k, fl) + b"\r\n", CLEAN

    def me(self):
        k, b = self.meta_key()
        return self.meta_line(b"me", k, b + self.flags([b"b", b"q"], ())) + b"\r\n", CLEAN

    def meta_too_many(self):
        cmd = self.pick((b"mg", b"md", b"ma", b"mn"))
        n = self.pick((16, 17, 18, 19, 20, 21, 22, 23, 30))
        letters = self.pick(([b"q"], [b"v", b"s", b"f", b"t", b"c", b"k", b"O1", b"h", b"l", b"u"],
                             [bytes([c]) for c in b"abcdefghijklmnopqrstuvwxyz"]))
        fl = [letters[i % len(letters)] for i in range(n)]
        return b" ".join([cmd, self.key(False)] + fl) + b"\r\n", CLEAN

    def stale_flow(self):
        k = self.key(False)
        return [b"ms %s 2 T100000\r\nhi\r\nmg %s c\r\n" % (k, k), SYNC,
                b"md %s I%s\r\n" % (k, self.pick((b"", b" T200000", b" q"))),
                b"ms %s 2 C{CAS} I%s\r\nho\r\nmg %s v c t\r\nmg %s v\r\n"
                % (k, self.pick((b"", b" c", b" q", b" T100000")), k, k)], CLEAN

    # ---- an episode ---------------------------------------------------------------

    def probe(self):
        """Reads every key of the pool, changing nothing (u: no fetch mark)."""
        keys = PLAIN_KEYS + [b"m%d" % i for i in range(3)]
        lines = [b"mg %s s v f t c k h u\r\nme %s\r\n" % (k, k) for k in keys]
        lines += [b"mg %s b s v f c k u\r\n" % b64(k) for k in (b"\x00", b"a", b"VALUE")]
        return [b"".join(lines)]

    def production(self):
        return pick(self.r, self.total, self.prods)

    def episode(self):
        parts, names = [], []
        pipelined = self.r.random() < 0.4
        clean, self.short = True, False
        for _ in range(self.r.randrange(1, 17)):
            name, fn = self.production()
            made, kind = fn()
            seq = made if isinstance(made, list) else [made]
            if not clean and (kind == TERMINAL or any(p is SYNC for p in seq)):
                continue  # needs a sync; the framing is no longer known
            names.append(name)
            if kind == TERMINAL:
                parts.append(SYNC)  # every earlier reply arrives before the close
            parts += seq
            if kind == TERMINAL:
                break
            if kind == DIRTY:
                clean, self.short = False, True
            elif clean and not pipelined and self.r.random() < 0.5:
                parts.append(SYNC)
        if not clean:
            # A wrong length may leave the server waiting for value bytes at
            # the end, where memcached drops the replies it holds: pad so
            # that both end at a command boundary ("\r\n" lines are ERROR).
            parts.append(b"\r\n" * 16)
        if self.r.random() < 0.15:
            parts = [Split(p) if isinstance(p, bytes) and len(p) < 100000 else p for p in parts]
        return "+".join(names), parts
