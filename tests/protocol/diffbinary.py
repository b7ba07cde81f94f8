"""diffbinary.py - the binary protocol side of difftest.py: request frames, a
grammar of random binary episodes, the scripted binary cases, and how a
stream of response frames is split and normalised.

A binary episode is like a text one (diffgrammar.py): parts are bytes,
Split(bytes) or SYNC, every request frame starts with the magic 0x80, so
the connection speaks the binary protocol from its first byte. A sync point
is a NOOP whose opaque is unique on the connection (sync_request). A CAS
field may be the 8-byte template {BCAS:L} (the latest unique the server
returned in a response header) or {BCAS:P} (the one before), filled in by
difftest.run_episode after a sync.

Framing is always known in the binary protocol (every length is in the
header), so no production is "dirty"; the ones that make a server close the
connection (a bad magic, lengths an opcode refuses, a key over 250 bytes,
QUIT) are TERMINAL: they come right after a sync and end the episode.
Nothing depends on timing: exptimes are 0, in the past, or at least
100,000 s away; FLUSH is never delayed ("flush-time-undoes-flush").

EXCLUDED lists the binary differences larderd keeps on purpose
(docs/server.md); they are never generated.
"""
import random
import struct

from diffgrammar import SYNC, Split, CLEAN, TERMINAL, PLAIN_KEYS, pick

EXCLUDED = {
    "bin-unknown-overswallow",  # memcached discards the body of an unknown opcode
                                # after its extras and key, i.e. extras + key
                                # bytes of the next request too
    "bin-stat-detail",          # "detail dump/on/off": memcached's prefix statistics
    "bin-body-past-key",        # a TOUCH/GAT/STAT body longer than extras + key:
                                # both read the rest as the next request, whose
                                # bytes are then arbitrary
}

OP = dict(GET=0x00, SET=0x01, ADD=0x02, REPLACE=0x03, DELETE=0x04, INCR=0x05, DECR=0x06,
          QUIT=0x07, FLUSH=0x08, GETQ=0x09, NOOP=0x0a, VERSION=0x0b, GETK=0x0c, GETKQ=0x0d,
          APPEND=0x0e, PREPEND=0x0f, STAT=0x10, SETQ=0x11, ADDQ=0x12, REPLACEQ=0x13,
          DELETEQ=0x14, INCRQ=0x15, DECRQ=0x16, QUITQ=0x17, FLUSHQ=0x18, APPENDQ=0x19,
          PREPENDQ=0x1a, TOUCH=0x1c, GAT=0x1d, GATQ=0x1e, SASL_LIST=0x20, SASL_AUTH=0x21,
          SASL_STEP=0x22, GATK=0x23, GATKQ=0x24)
CAS_LATEST, CAS_PREV = b"{BCAS:L}", b"{BCAS:P}"
SYNC_OPAQUE = 0x5e000000


def frame(op, key=b"", ext=b"", value=b"", cas=0, opaque=0, magic=0x80, body=None,
          keylen=None):
    """A request frame; body and keylen override the lengths it would get."""
    if isinstance(op, str):
        op = OP[op]
    keylen = len(key) if keylen is None else keylen
    body = len(ext) + len(key) + len(value) if body is None else body
    c = cas if isinstance(cas, bytes) else struct.pack("!Q", cas)
    return struct.pack("!BBHBBHII", magic, op, keylen, len(ext), 0, 0, body, opaque) + c + \
        ext + key + value


def set_ext(flags, exptime):
    return struct.pack("!II", flags, exptime)


def arith_ext(delta, initial, exptime):
    return struct.pack("!QQI", delta, initial, exptime)


def exp_ext(exptime):
    return struct.pack("!I", exptime)


def sync_request(n):
    """The sync point: a NOOP and its response, unique by their opaque."""
    opaque = SYNC_OPAQUE + n
    return frame("NOOP", opaque=opaque), \
        struct.pack("!BBHBBHII", 0x81, OP["NOOP"], 0, 0, 0, 0, 0, opaque) + bytes(8)


def is_binary(parts):
    """Whether an episode speaks the binary protocol: its first request does."""
    for p in parts:
        if p is SYNC:
            continue
        data = p.data if isinstance(p, Split) else p
        return data[:1] == b"\x80"
    return False


def split_frames(b):
    """Splits a response stream into (header, body) frames; what does not parse
    as one (a close marker, a partial frame) is a last (bytes, None) item."""
    items, i = [], 0
    while i < len(b):
        if len(b) - i < 24 or b[i] != 0x81:
            items.append((b[i:], None))
            break
        n = struct.unpack_from("!I", b, i + 8)[0]
        if len(b) - i - 24 < n:
            items.append((b[i:], None))
            break
        items.append((b[i:i + 24], b[i + 24:i + 24 + n]))
        i += 24 + n
    return items


def cas_values(out):
    """CAS uniques of the response headers, in order, as 8 bytes (for {BCAS:.})."""
    return [h[16:24] for h, body in split_frames(out)
            if body is not None and h[16:24] != bytes(8)]


def fill(part, cas):
    latest = cas[-1] if cas else bytes(8)
    prev = cas[-2] if len(cas) > 1 else bytes(8)
    return part.replace(CAS_LATEST, latest).replace(CAS_PREV, prev)


def normalise(b, rename):
    """The frames of one server's stream, comparable with the other's: CAS
    uniques renamed (rename: bytes -> name), VERSION's text and every STAT
    frame of a successful STAT masked (process state, as the text stats)."""
    out = []
    for h, body in split_frames(b):
        if body is None:
            out.append((h, None))
            continue
        op, status = h[1], struct.unpack_from("!H", h, 6)[0]
        cas = h[16:24]
        name = b"0" if cas == bytes(8) else rename(cas)
        if op == OP["STAT"] and status == 0:
            if out and out[-1][0] == b"<stats>":
                continue
            out.append((b"<stats>", None))
            continue
        if op == OP["VERSION"] and status == 0:
            h, body = h[:8] + b"<len>" + h[12:16], b"<version>"
        out.append((h[:16] + b" cas=" + name, body))
    return out


# ---- the random grammar -------------------------------------------------------

EXPTIMES = [0, 0, 0, 100000, 2592000, 2592001, 1000000000, 0x7fffffff, 0x80000000, 0xffffffff]
FLAGS = [0, 0, 1, 12345, 0xffffffff]
DELTAS = [0, 1, 5, 1000000]
INITIALS = [0, 7, 1000, 1 << 62]
ARITH_EXPTIMES = [0xffffffff, 0xffffffff, 0, 100000, 1000000000]


class Grammar:
    def __init__(self, seed):
        self.r = random.Random(seed)
        self.synced = False
        self.fresh = 0  # keys that arith() made up
        self.prods = [
            (10, "bin-get", self.get),
            (10, "bin-store", self.store),
            (4, "bin-append", self.append),
            (4, "bin-delete", self.delete),
            (5, "bin-arith", self.arith),
            (4, "bin-touch", self.touch),
            (1, "bin-flush", self.flush),
            (3, "bin-misc", self.misc),
            (2, "bin-unknown", self.unknown),
            (1, "bin-too-large", self.too_large),
            (1, "bin-terminal", self.terminal),
            (1, "bin-unknown-overswallow",
             lambda: (frame(0x50, b"k", b"", b"xyz"), CLEAN)),
            (1, "bin-stat-detail", lambda: (frame("STAT", b"detail on"), CLEAN)),
            (1, "bin-body-past-key",
             lambda: (frame("TOUCH", b"a", exp_ext(0), b"\x80\x0a" + bytes(22)), CLEAN)),
        ]
        self.prods = [p for p in self.prods if p[1] not in EXCLUDED]
        self.total = sum(w for w, _, _ in self.prods)

    def pick(self, seq):
        return self.r.choice(seq)

    def key(self):
        return self.pick(PLAIN_KEYS)

    def value(self):
        r = self.r.random()
        if r < 0.35:
            return self.pick((b"0", b"1", b"42", b"18446744073709551615", b" 5", b"12abc", b""))
        if r < 0.85:
            return bytes(self.r.randrange(256) for _ in range(self.pick((0, 1, 2, 5, 13, 40))))
        if r < 0.98:
            return bytes(self.r.choice(b"xyz \r\n\x00\x80") for _ in range(self.r.randrange(100, 5000)))
        return b"v" * self.pick((100000, 1048000, 1048500, 1048510))

    def opaque(self):
        return self.r.getrandbits(32) & 0x0fffffff  # never a sync's

    def cas(self):
        r = self.r.random()
        if r < 0.7:
            return 0
        if r < 0.9 and self.synced:
            return self.pick((CAS_LATEST, CAS_PREV))
        return self.pick((1, 12345, 0xffffffffffffffff))

    def q(self, op):
        return op + "Q" if self.r.random() < 0.4 else op

    def get(self):
        op = self.pick(("GET", "GETQ", "GETK", "GETKQ"))
        return frame(op, self.key(), opaque=self.opaque()), CLEAN

    def store(self):
        op = self.q(self.pick(("SET", "SET", "ADD", "REPLACE")))
        ext = set_ext(self.pick(FLAGS), self.pick(EXPTIMES))
        return frame(op, self.key(), ext, self.value(), self.cas(), self.opaque()), CLEAN

    def append(self):
        op = self.q(self.pick(("APPEND", "PREPEND")))
        return frame(op, self.key(), b"", self.value()[:50], self.cas(), self.opaque()), CLEAN

    def delete(self):
        return frame(self.q("DELETE"), self.key(), cas=self.cas(), opaque=self.opaque()), CLEAN

    def arith(self):
        """INCR/DECR on a value set just before, or on a key nobody has read:
        memcached rewrites a number in place only when no pending reply (a
        GET's, in the same pipeline) holds the item ("incr-in-place-race")."""
        op = self.q(self.pick(("INCR", "DECR")))
        ext = arith_ext(self.pick(DELTAS), self.pick(INITIALS), self.pick(ARITH_EXPTIMES))
        if self.r.random() < 0.5:
            self.fresh += 1
            k = b"bfresh%d" % self.fresh
            return frame(op, k, ext, opaque=self.opaque()) * self.pick((1, 2)), CLEAN
        k = self.pick((b"num", b"ctr", b"a", self.key()))
        v = self.pick((b"0", b"1", b"42", b"9999999999", b" 5", b"12abc", b"", b"7 "))
        return frame("SET", k, set_ext(self.pick(FLAGS), 0), v) + \
            frame(op, k, ext, cas=self.cas(), opaque=self.opaque()), CLEAN

    def touch(self):
        op = self.pick(("TOUCH", "GAT", "GATQ", "GATK", "GATKQ"))
        return frame(op, self.key(), exp_ext(self.pick(EXPTIMES)), opaque=self.opaque()), CLEAN

    def flush(self):
        ext = self.pick((b"", exp_ext(0)))
        return frame(self.pick(("FLUSH", "FLUSHQ")), ext=ext, opaque=self.opaque()), CLEAN

    def misc(self):
        return self.pick((
            (frame("NOOP", opaque=self.opaque()), CLEAN),
            (frame("VERSION", opaque=self.opaque()), CLEAN),
            (frame("STAT", opaque=self.opaque()), CLEAN),
            (frame("STAT", b"settings", opaque=self.opaque()), CLEAN),
            (frame("STAT", b"nosuch", opaque=self.opaque()), CLEAN),
            (frame("STAT", b"reset", opaque=self.opaque()), CLEAN),
            (frame("STAT", b"conns", opaque=self.opaque()), CLEAN),
            (frame("SASL_LIST", opaque=self.opaque()), CLEAN),
            (frame("SASL_AUTH", b"PLAIN", value=b"\x00u\x00p"), CLEAN),
            (frame("SASL_STEP", b"PLAIN", value=b"xx"), CLEAN),
        ))

    def unknown(self):
        op = self.pick((0x1b, 0x25, 0x30, 0x50, 0x89, 0xfe))
        value = bytes(self.r.randrange(256) for _ in range(self.pick((0, 1, 7, 300))))
        return frame(op, value=value, opaque=self.opaque()), CLEAN

    def too_large(self):
        op = self.q(self.pick(("SET", "ADD", "REPLACE", "APPEND")))
        ext = set_ext(self.pick(FLAGS), 0) if op[0] != "A" or op.startswith("ADD") else b""
        return frame(op, self.key(), ext, b"w" * self.pick((1048576, 1100000)),
                     opaque=self.opaque()), CLEAN

    def terminal(self):
        return self.pick((
            (frame("QUIT"), TERMINAL),
            (frame("QUITQ"), TERMINAL),
            (frame("GET", b"a", magic=0x81), TERMINAL),
            (b"\x80get a\r\n" + bytes(20), TERMINAL),
            (frame("GET", b"x" * 251), TERMINAL),
            (frame("GET", b"abc", body=2), TERMINAL),
            (frame("SET", b"a", exp_ext(0), b"v"), TERMINAL),
            (frame("VERSION", b"k"), TERMINAL),
            (frame("INCR", b"a", bytes(8)), TERMINAL),
            (frame("DELETE", b"a", value=b"v"), TERMINAL),
            (frame("FLUSH", ext=b"\0\0"), TERMINAL),
            (frame("GAT", b"a"), TERMINAL),
            (frame("NOOP", value=b"x"), TERMINAL),
            (frame("GET", b""), TERMINAL),
            (frame("STAT", b"", exp_ext(0)), TERMINAL),
            (frame("APPEND", b"a", exp_ext(0), b"v"), TERMINAL),
            (frame("SASL_AUTH", b""), TERMINAL),
        ))

    def header_noise(self, part):
        """The data type and vbucket bytes, which both servers ignore."""
        if not isinstance(part, bytes) or part[:1] != b"\x80" or self.r.random() >= 0.1:
            return part
        return part[:5] + bytes(self.r.randrange(256) for _ in range(3)) + part[8:]

    def production(self):
        return pick(self.r, self.total, self.prods)

    def episode(self):
        parts, names = [], []
        pipelined = self.r.random() < 0.5
        self.synced = False
        for _ in range(self.r.randrange(1, 17)):
            name, fn = self.production()
            made, kind = fn()
            names.append(name)
            made = self.header_noise(made)
            if kind == TERMINAL:
                parts += [SYNC, made]
                break
            parts.append(made)
            if not pipelined and self.r.random() < 0.5:
                parts.append(SYNC)
                self.synced = True
        if not parts or parts[0] is SYNC:
            parts.insert(0, frame("NOOP"))  # the first byte picks the protocol
        if self.r.random() < 0.15:
            parts = [Split(p) if isinstance(p, bytes) and len(p) < 100000 else p for p in parts]
        return "+".join(names), parts


# ---- scripted cases -------------------------------------------------------------

def steps(*frames):
    out = []
    for f in frames:
        out += [f, SYNC]
    return out


def _cases():
    s = lambda k, v, flags=0, exp=0, cas=0, op="SET": frame(op, k, set_ext(flags, exp), v, cas)
    inc = lambda op, k, d, i, e, cas=0: frame(op, k, arith_ext(d, i, e), cas=cas)
    return [
        ("bin-set-get", steps(s(b"a", b"hello", 7), frame("GET", b"a"), frame("GETK", b"a"),
                              frame("GET", b"nosuch"), frame("GETK", b"nosuch"))),
        # quiet gets pipelined, hits answered, misses silent, NOOP ends the batch
        ("bin-pipelined-quiet-get", [s(b"a", b"1"), s(b"c", b"3", 9),
                                     frame("GETKQ", b"a", opaque=1) + frame("GETKQ", b"b", opaque=2) +
                                     frame("GETQ", b"c", opaque=3) + frame("GETQ", b"d", opaque=4) +
                                     frame("NOOP", opaque=5)]),
        ("bin-quiet-stores", steps(frame("SETQ", b"a", set_ext(0, 0), b"x") +
                                   frame("ADDQ", b"a", set_ext(0, 0), b"y") +
                                   frame("REPLACEQ", b"zz", set_ext(0, 0), b"y") +
                                   frame("APPENDQ", b"a", value=b"z") +
                                   frame("DELETEQ", b"nosuch") + frame("GET", b"a"))),
        ("bin-add-replace", steps(s(b"a", b"1", op="ADD"), s(b"a", b"2", op="ADD"),
                                  s(b"b", b"1", op="REPLACE"), s(b"a", b"3", op="REPLACE"),
                                  frame("GET", b"a"))),
        ("bin-cas", steps(s(b"a", b"1"), s(b"a", b"2", cas=CAS_LATEST), s(b"a", b"3", cas=CAS_PREV),
                          s(b"a", b"4", cas=12345, op="ADD"), s(b"zz", b"4", cas=5, op="REPLACE"),
                          frame("GET", b"a"))),
        ("bin-append-prepend", steps(frame("APPEND", b"zz", value=b"x"), s(b"a", b"b", 3),
                                     frame("APPEND", b"a", value=b"c"),
                                     frame("PREPEND", b"a", value=b"a"),
                                     frame("APPEND", b"a", value=b"d", cas=1),
                                     frame("GET", b"a"))),
        ("bin-delete-cas", steps(s(b"a", b"1"), frame("DELETE", b"a", cas=1),
                                 frame("DELETE", b"a", cas=CAS_LATEST), frame("DELETE", b"a"))),
        ("bin-incr", steps(inc("INCR", b"n", 1, 5, 0xffffffff), inc("INCR", b"n", 1, 5, 0),
                           inc("INCR", b"n", 10, 5, 0), inc("DECR", b"n", 100, 0, 0),
                           s(b"t", b"abc"), inc("INCR", b"t", 1, 0, 0),
                           inc("INCR", b"n", 1, 0, 0, cas=99), inc("INCRQ", b"n", 1, 0, 0),
                           frame("GET", b"n"))),
        ("bin-touch-gat", steps(s(b"a", b"v", 3), frame("TOUCH", b"a", exp_ext(100000)),
                                frame("GAT", b"a", exp_ext(100000)),
                                frame("GATK", b"a", exp_ext(0)), frame("GATQ", b"zz", exp_ext(0)),
                                frame("GATKQ", b"a", exp_ext(0)),
                                frame("GAT", b"a", exp_ext(1000000000)), frame("GET", b"a"))),
        ("bin-dead-exptime", steps(s(b"a", b"v", exp=1000000000), frame("GET", b"a"),
                                   s(b"b", b"v", exp=0x80000000), frame("GET", b"b"))),
        # memcached's rule in binary too: a refused SET drops the old value
        ("bin-too-large", steps(s(b"a", b"old"), s(b"a", b"x" * 1048576), frame("GET", b"a"),
                                s(b"b", b"old"), s(b"b", b"x" * 1048576, op="ADD"),
                                frame("GET", b"b"))),
        ("bin-flush", steps(s(b"a", b"1"), frame("FLUSH"), frame("GET", b"a"), s(b"a", b"1"),
                            frame("FLUSHQ", ext=exp_ext(0)), frame("GET", b"a"))),
        # a delay of 1 s is memcached's "now" (its flush time is the delay less 1 s)
        ("bin-flush-delay-1", steps(s(b"a", b"1"), frame("FLUSH", ext=exp_ext(1)), frame("GET", b"a"),
                                    s(b"a", b"1"), frame("FLUSHQ", ext=exp_ext(1)), frame("GET", b"a"))),
        ("bin-misc", steps(frame("NOOP", opaque=77), frame("VERSION"),
                           frame("STAT", b"nosuch"), frame("STAT"))),
        # the groups memcached's binary STAT knows (get_stats: items, slabs,
        # sizes) and the ones only its text stats has (conns, extstore: "Not found")
        ("bin-stat-groups", steps(frame("STAT", b"items"), frame("STAT", b"slabs"),
                                  frame("STAT", b"sizes"), frame("STAT", b"conns"),
                                  frame("STAT", b"connsx"), frame("STAT", b"extstore"))),
        ("bin-unknown-sasl", steps(frame(0x50, value=b"abc"), frame("SASL_LIST"),
                                   frame("SASL_AUTH", b"PLAIN", value=b"\0u\0p"),
                                   frame("GET", b"a"))),
        ("bin-key-251", steps(frame("GET", b"x" * 251))),
        ("bin-key-past-body", steps(frame("GET", b"abc", body=2))),
        ("bin-bad-extras", steps(frame("SET", b"a", exp_ext(0), b"v"))),
        ("bin-bad-magic", [frame("NOOP"), SYNC, frame("GET", b"a", magic=0x81)]),
        # a bad magic after replies not yet sent (one write, so one read):
        # memcached sends at once every error reply and what came before it
        # (write_bin_error), so the DELETE's "Not found" and the SET's reply
        # go out, the GET hit after them is dropped with the connection
        ("bin-bad-magic-after-replies", [s(b"a", b"1"), SYNC,
                                         s(b"b", b"2") + frame("DELETE", b"nosuch") +
                                         frame("GET", b"a") + frame("GET", b"a", magic=0x81)]),
        ("bin-bad-magic-after-miss", [frame("NOOP"), SYNC, frame("GET", b"nosuch") + b"x" * 24]),
        ("bin-quit", steps(frame("QUIT"))),
        ("bin-split", [Split(s(b"a", b"0123456789" * 30) + frame("GETK", b"a"))]),
        ("bin-every-byte", [Split(s(b"a", b"xyz", 5) + frame("GETKQ", b"a") +
                                  frame("APPENDQ", b"a", value=b"w") + frame("GETK", b"a") +
                                  frame("GETQ", b"nosuch") + frame("NOOP", opaque=7),
                                  sizes=(1,))]),
        # -B auto: a text connection stays text whatever its later bytes
        ("bin-in-text", [b"get a\r\n", SYNC, frame("GET", b"a")]),
        # the adversarial sweep: extras and keys where an opcode takes none,
        # header fields out of range, edge numbers (identical when written);
        # a case whose last frame may close the connection is a case of its own
        ("bin-sweep-arith", steps(s(b"k", b"abc"), inc("INCR", b"k", 1, 0, 0),
                                  s(b"k", b"18446744073709551615"), inc("INCR", b"k", 1, 0, 0), frame("GET", b"k"),
                                  s(b"k", b"99999999999999999999"), inc("INCR", b"k", 1, 0, 0),
                                  inc("DECR", b"k2", 1, 5, 0), inc("DECR", b"k2", 10, 5, 0), frame("GET", b"k2"),
                                  inc("INCR", b"k3", 1, 18446744073709551615, 0), inc("INCR", b"k3", 1, 0, 0),
                                  inc("INCR", b"k4", 1, 5, 0xffffffff))),
        ("bin-sweep-cas-missing", steps(s(b"nokey", b"v", cas=123), frame("APPEND", b"nokey", b"", b"v", cas=1),
                                        frame("DELETE", b"nokey", cas=5), s(b"nokey", b"v", cas=5, op="REPLACE"))),
        ("bin-sweep-quiet-errors", steps(s(b"a", b"1", op="SETQ") + s(b"a", b"1", op="ADDQ") +
                                         inc("INCRQ", b"zz", 1, 0, 0xffffffff) + s(b"zz", b"1", op="REPLACEQ") +
                                         frame("DELETEQ", b"zz") + frame("GETKQ", b"a") +
                                         frame("APPENDQ", b"zz", b"", b"x") + frame("NOOP"))),
        ("bin-sweep-exptimes", steps(s(b"k", b"v", exp=0xffffffff), frame("GET", b"k"), s(b"k", b"v", exp=0x80000000),
                                     frame("GET", b"k"), frame("TOUCH", b"k", exp_ext(0xffffffff)),
                                     frame("GAT", b"k", exp_ext(0)))),
        ("bin-sweep-stat-forms", steps(frame("STAT", b"settings"), frame("STAT", b"nosuch"))),
        ("bin-sweep-get-extras", steps(s(b"k", b"v"), frame("GET", b"k", exp_ext(0)))),
        ("bin-sweep-noop-key", steps(frame("NOOP", b"k"))),
        ("bin-sweep-version-extras", steps(frame("VERSION", b"", exp_ext(5)))),
        ("bin-sweep-append-extras", steps(s(b"k", b"v"), frame("APPEND", b"k", exp_ext(0), b"x"))),
        ("bin-sweep-delete-extras", steps(frame("DELETE", b"k", exp_ext(0)))),
        ("bin-sweep-empty-key", steps(s(b"", b"v"))),
        ("bin-sweep-getk-empty-key", steps(frame("GETK", b""))),
        ("bin-sweep-touch-no-extras", steps(frame("TOUCH", b"k"))),
        ("bin-sweep-flush-8-extras", steps(frame("FLUSH", b"", set_ext(0, 0)))),
        ("bin-sweep-datatype", steps(struct.pack("!BBHBBHII", 0x80, 0, 1, 0, 1, 0, 1, 0) + bytes(8) + b"k")),
        ("bin-sweep-vbucket", steps(struct.pack("!BBHBBHII", 0x80, 0, 1, 0, 0, 7, 1, 0) + bytes(8) + b"k")),
        ("bin-sweep-huge-body", steps(frame("SET", b"k", set_ext(0, 0), b"", body=2000009) + b"x" * 2000000,
                                      frame("GET", b"k"))),
    ]


CASES = _cases()
FLUSH = frame("FLUSH")
