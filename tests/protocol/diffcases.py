"""diffcases.py - the scripted cases of difftest.py: request scripts whose
replies from larderd and memcached 1.6.18 must be identical.

A case is (name, parts); a part is bytes sent as one write, Split(bytes) sent
in small pieces, or SYNC (wait until every reply so far has arrived; later
parts may then use {CAS}, the latest CAS unique the server returned, and
{CASP}, the one before). steps(a, b, ...) sends each
step followed by a SYNC. Each case runs on a fresh connection after a
flush_all. The cases named "issue-..." are the regression cases of the
differences once found between the two servers.
"""
import base64
import time

from diffgrammar import SYNC, Split


def steps(*parts):
    out = []
    for p in parts:
        out += [p.encode("latin-1") if isinstance(p, str) else p, SYNC]
    return out


K251 = "k" * 251
K250 = "k" * 250
BIG = 2000000
# The largest value memcached -I 1m stores under a 1-byte key (1 MiB less its
# item header, CAS and the value's CRLF); a longer key takes its bytes off it.
ITEM_MAX_1 = 1048576 - 60
# Absolute exptimes are judged by both servers against the same wall clock.
NOW = int(time.time())
def b64(key):
    return base64.b64encode(key.encode("latin-1")).decode()


PIPELINE = ("set a 0 0 3\r\nabc\r\nget a b\r\nappend a 0 0 2 noreply\r\nde\r\ngets a\r\nincr a 1\r\n"
            "ms c 2 T0 F3\r\nhi\r\nmg c v f t\r\nmn\r\ndelete c\r\ntouch a 10\r\nversion\r\n")

CASES = [
    # ---- framing, tokens, errors (the original 36 comparison scripts) ----
    ("errors", steps("\r\n", "foo\r\n", "SET a 0 0 1\r\n", "set a 0 0\r\n", "get\r\n")),
    ("bad-data-chunk", steps("set a 0 0 1\r\nxx\r\nget a\r\n")),
    ("bad-numbers", steps("set a 0 0 -1\r\n", "set a b 0 1\r\nx\r\n", "set a 0 x 1\r\nx\r\n")),
    ("key-251", steps("set %s 0 0 1\r\nx\r\n" % K251, "get a %s b\r\n" % K251,
                      "incr %s 1\r\n" % K251)),
    ("get-repeats", steps("set a 5 0 3\r\nabc\r\nget a\r\nget a a nothere a\r\n")),
    ("noreply-set", steps("set a 0 0 1 noreply\r\nx\r\nget a\r\n", "set a 0 0 1 noreply extra\r\nx\r\n")),
    ("spaces-bare-lf", steps("set  a  0 0 1 \r\nx\r\nget  a \r\n", "get a\nset b 0 0 1\nx\nget b\n")),
    ("add-replace", steps("add a 0 0 1\r\nx\r\nadd a 0 0 1\r\ny\r\nreplace a 0 0 1\r\nz\r\n"
                          "replace q 0 0 1\r\nz\r\nget a q\r\n")),
    ("add-replace-noreply", steps("add a 0 0 1 noreply\r\nx\r\nreplace a 0 0 1 noreply\r\ny\r\nget a\r\n")),
    ("append-prepend", steps("append zz 0 0 1\r\nx\r\nset a 7 0 1\r\nx\r\nprepend a 0 0 1\r\ny\r\n"
                             "append a 0 0 1\r\nz\r\nget a\r\n")),
    ("cas", steps("set a 0 0 1\r\nx\r\ngets a\r\n", "cas a 0 0 1 {CAS}\r\ny\r\n",
                  "cas a 0 0 1 {CASP}\r\nz\r\n", "cas zz 0 0 1 99\r\nx\r\n", "cas a 0 0 1\r\n",
                  "gets a\r\n")),
    ("incr-decr", steps("incr a 1\r\nset n 0 0 2\r\n10\r\nincr n 5\r\ndecr n 100\r\nincr n abc\r\n"
                        "incr n -1\r\nset s 0 0 1\r\nx\r\nincr s 1\r\nincr n 1 noreply\r\nget n\r\n")),
    # (a stored value at or above 2^63 is "incr-huge-value": memcached
    # looks for a minus sign past its end)
    ("incr-wrap", steps("incr a 18446744073709551616\r\nset n 0 0 19\r\n9223372036854775807\r\n"
                        "incr n 18446744073709551615\r\nget n\r\ndecr n 1\r\nset m 0 0 3\r\n100\r\n"
                        "decr m 1\r\nget m\r\nincr m 1000\r\nget m\r\n")),
    ("incr-empty", steps("set e 0 0 0\r\n\r\nincr e 1\r\nget e\r\n")),
    ("delete", steps("delete a\r\nset a 0 0 1\r\nx\r\ndelete a 0\r\ndelete a 5\r\n"
                     "delete a noreply\r\ndelete\r\ndelete a\r\n")),
    ("touch", steps("set t 0 0 1\r\nx\r\ntouch t 10\r\ntouch zz 10\r\ntouch t\r\ntouch t x\r\n"
                    "touch t 10 noreply\r\n")),
    ("gat", steps("set t 0 0 1\r\nx\r\ngat 10 t\r\ngats 10 t zz\r\ngat t\r\ngat x t\r\n")),
    ("expired-writes", steps("set t 0 -1 1\r\nx\r\nget t\r\nset t 0 0 1\r\nx\r\ntouch t -1\r\nget t\r\n")),
    ("expired-add", steps("set t 0 1000 1\r\nx\r\nadd t2 0 -1 1\r\ny\r\nget t t2\r\n")),
    ("flush-forms", steps("flush_all\r\nflush_all 0\r\nflush_all noreply\r\nflush_all abc\r\n"
                          "flush_all 0 noreply\r\n")),
    ("flush", steps("set f 0 0 1\r\nx\r\nflush_all\r\nget f\r\n")),
    ("verbosity", steps("verbosity\r\nverbosity 1\r\nverbosity 1 noreply\r\nverbosity 1 2 3\r\n")),
    ("version", steps("version\r\n")),
    ("stats-forms", steps("stats noreply\r\n", "stats foo\r\n", "stats reset\r\n",
                          "stats sizes\r\n")),
    # stats detail: larderd answered ERROR to every form. One prefix only, so
    # the dump's order (memcached's hash's) does not matter; off at the end.
    ("issue-stats-detail-forms", steps("stats detail\r\n", "stats detail foo\r\n",
                                       "stats detail off\r\n", "stats detail dump\r\n",
                                       "stats detail off extra\r\n", "stats detail ON\r\n",
                                       "stats detail dump x\r\n", "stats detail on x\r\n",
                                       "set dc:1 0 0 1\r\nx\r\nget dc:1 dc:2\r\ndelete dc:1\r\n",
                                       "stats detail dump\r\n", "stats detail off\r\n",
                                       "get dc:1\r\nstats detail dump\r\n", "stats reset\r\n",
                                       "stats detail dump\r\n")),
    ("too-large", steps("set big 0 0 %d\r\n%s\r\nget big\r\n" % (BIG, "x" * BIG))),
    ("flags-32bit", steps("set a 4294967296 0 1\r\nx\r\nget a\r\n", "set a 4294967295 0 1\r\nx\r\nget a\r\n")),
    ("meta-errors", steps("mn\r\n", "mg\r\n", "mz a\r\n", "ms a\r\n", "ms a x\r\n", "ms a 2 Zz\r\nhi\r\n",
                          "mg a v v\r\n")),
    ("meta-basic", steps("ms q1 2 T0 F5\r\nhi\r\nmg q1 v f\r\nmg q1 s v k O9 f\r\nmg zz v\r\n"
                         "mg zz v q\r\nmg zz v O1 k\r\nmn\r\n")),
    ("meta-cas", steps("ms a 1\r\nx\r\nmg a v c\r\nmg a c\r\n", "ms a 1 C{CAS} c\r\ny\r\n",
                       "ms a 1 C1\r\nz\r\nmg a v\r\n")),
    ("meta-modes", steps("ms a 2 MA\r\nxx\r\nms a 1\r\nx\r\nms a 2 MA\r\nyy\r\nms a 1 MP\r\nz\r\n"
                         "mg a v\r\nms a 2 ME\r\nyy\r\nms nope 2 MR\r\nzz\r\nms new 2 ME\r\nzz\r\n"
                         "mg new v\r\n")),
    ("meta-quiet", steps("ms a 1 q\r\nx\r\nms a 1 q MR\r\ny\r\nmn\r\n")),
    ("meta-delete", steps("md miss q\r\nmd miss\r\nms d 1\r\nx\r\nmd d q\r\nmd d O5 k\r\nmg d v\r\n")),
    ("meta-arith", steps("ma miss\r\nma miss q\r\nma nn N0 J7 v\r\nma nn v\r\nma nn MD D3 v\r\n"
                         "ma nn D100 MD v\r\nma nn q\r\nmg nn v\r\nms s 1\r\nx\r\nma s\r\n")),
    ("meta-base64", steps("ms YWJj 1 b k\r\nx\r\nmg YWJj b k v\r\nmg abc v\r\nmg !!! b v\r\n")),
    ("meta-stale", steps("ms st 2\r\nzz\r\nmd st I T30\r\nmg st v t\r\nmg st v t\r\nms st 2\r\nyy\r\n"
                         "mg st v\r\n")),
    ("meta-vivify", steps("mg viv v N30\r\nmg viv v N30\r\nms viv 1\r\nx\r\nmg viv v\r\n")),
    ("meta-bad-flags", steps("mg a Z\r\nmg a v v\r\nmd a Z\r\nmd a q q\r\nma a Z\r\nma a q q\r\nmg a P L\r\n",
                             "ms a 1 E12345 c\r\nx\r\nmg a c v\r\nma n N0 J5 E777 c v\r\n",
                             "ms c 1 S1\r\nx\r\n")),
    ("meta-ttl", steps("ms a 1 T100\r\nx\r\nmg a t v\r\nma n N0 J5 v\r\nma n T100 t v\r\n")),

    # ---- regression cases: each difference first found by hand against memcached ----
    # 1. a refused set removes the old value
    ("issue-stale-after-refused-set",
     steps("set foo 0 0 3\r\nMOO\r\n", "set foo 0 0 %d\r\n%s\r\n" % (BIG, "x" * BIG), "get foo\r\n")),
    ("issue-stale-after-refused-ms",
     steps("ms foo 3\r\nMOO\r\n", "ms foo %d\r\n%s\r\n" % (BIG, "x" * BIG), "mg foo v\r\n",
           "ms foo 3\r\nMOO\r\n", "ms foo %d ME\r\n%s\r\n" % (BIG, "x" * BIG), "mg foo v\r\n")),
    ("issue-refused-other-modes-keep",
     steps("set foo 0 0 3\r\nMOO\r\n", "add foo 0 0 %d\r\n%s\r\n" % (BIG, "x" * BIG),
           "replace foo 0 0 %d\r\n%s\r\n" % (BIG, "x" * BIG), "get foo\r\n")),
    # 2. long multi-key get lines are served, in one write or in pieces
    ("issue-long-get-line", steps("set k1 0 0 1\r\nx\r\n",
                                  "get " + " ".join("k%d" % (i % 20000) for i in range(18725)) + "\r\n")),
    ("issue-long-get-line-split", [b"set k1 0 0 1\r\nx\r\n", SYNC,
                                   Split(("get " + " ".join("key%05d" % i for i in range(30000))
                                          + "\r\n").encode())]),
    ("issue-long-gets-line", steps("gets " + " ".join("a%d" % i for i in range(60000)) + "\r\n")),
    # 3. noreply on an error line: no reply, later replies not shifted
    ("issue-noreply-on-error", steps("delete k 10 noreply\r\nversion\r\n", "incr k abc noreply\r\nmn\r\n",
                                     "touch k abc noreply\r\nmn\r\n", "set k 0 0 x noreply\r\nmn\r\n")),
    # 4. HTTP on the memcached port closes the connection
    ("issue-http-get", [b"GET / HTTP/1.0\r\n\r\n"]),
    ("issue-http-post", [b"version\r\n", SYNC, b"POST /x HTTP/1.1\r\nHost: a\r\n\r\n"]),
    ("issue-http-like-get", steps("get / HTTP/1.0\r\n")),
    # 5. meta commands
    ("issue-ms-bad-cas-c", steps("ms k 2\r\nhi\r\n", "ms k 2 c C12345\r\nho\r\n", "ms k 2 c C{CAS}\r\nho\r\n")),
    ("issue-mg-hit-before", steps("ms k 2\r\nhi\r\n", "mg k h v\r\n", "mg k h\r\n", "mg nope h\r\n",
                                  "set k 0 0 1\r\nx\r\n", "mg k h\r\n", "get k\r\n", "mg k h\r\n")),
    ("issue-ms-stale-invalidate", steps("ms k 2\r\nhi\r\nmg k c\r\n", "md k I\r\nmg k c\r\n",
                                        "ms k 2 C{CASP} I\r\nho\r\n", "mg k v c\r\n",
                                        "ms k 2 C{CASP} I\r\nxx\r\n", "mg k v\r\n")),
    ("issue-mget-is-error", steps("mget a b\r\n", "bget a\r\n", "set a 0 0 1\r\nx\r\nbget a b\r\n")),
    # 6. malformed input
    ("issue-nul-in-line", steps("set a 0 0 1\r\nx\r\n", b"get a\x00 b\r\n", b"get\x00 a\r\n",
                                b"set b 0 0 2\x00junk\r\nhi\r\nget b\r\n")),
    ("issue-exptime-2147483648", steps("set t 0 0 1\r\nx\r\n", "touch t 2147483648\r\n", "get t\r\n",
                                       "set t 0 0 1\r\nx\r\n", "gat 2147483648 t\r\n", "get t\r\n",
                                       "set t 0 2147483648 1\r\nx\r\nget t\r\n",
                                       "flush_all 2147483648\r\n", "gat 4294967296 t\r\n")),
    ("issue-verbosity", steps("verbosity abc\r\n", "verbosity -1\r\n", "verbosity 4294967296\r\n",
                              "verbosity 18446744073709551615\r\n", "verbosity abc noreply\r\n",
                              "verbosity 5 noreply\r\n")),
    ("issue-meta-many-flags", steps("mg k " + " ".join("O%d" % i for i in range(25)) + "\r\n",
                                    "mg k v s f t c k q O1 h l u b\r\n",
                                    "md k " + "q " * 20 + "\r\n", "ma k " + "v " * 19 + "\r\n",
                                    "mg k " + " ".join("abcdefghijklmnopqrs") + "\r\n")),
    ("issue-meta-number-overflow", steps("ma k N99999999999\r\n", "ma k N4294967296 J5 v\r\n",
                                         "mg k N99999999999\r\n", "mg k R99999999999 v\r\n",
                                         "ma k D18446744073709551616\r\n", "ma k J18446744073709551616\r\n",
                                         "ms k 1 T99999999999\r\nx\r\n", "mg k T2147483648 v\r\n")),
    # memcached's flush time is the delay's second less one (oldest_live =
    # realtime(delay) - 1): flush_all 1 flushes at once (larderd flushed a
    # second later, so the get found the item)
    ("issue-flush-delay-1", steps("set a 0 0 1\r\nx\r\n", "flush_all 1\r\n", "get a\r\n",
                                  "set a 0 0 1\r\nx\r\n", "flush_all 1 noreply\r\n", "get a\r\n",
                                  "set a 0 0 1\r\nx\r\n", "flush_all 1 2\r\n", "get a\r\n")),
    ("issue-too-large-answered-after-value", [b"set big 0 0 %d\r\n" % BIG]),
    ("issue-too-large-pipelined", [b"version\r\nset big 0 0 %d\r\n" % BIG + b"x" * 100]),
    # ---- combinations the cases above did not reach (all identical when added) ----
    ("noreply-every-command",
     steps("set a 0 0 1 noreply\r\nx\r\nadd a 0 0 1 noreply\r\ny\r\nadd b 0 0 1 noreply\r\ny\r\n"
           "replace a 0 0 1 noreply\r\nz\r\nreplace q 0 0 1 noreply\r\nz\r\n"
           "append a 0 0 1 noreply\r\nA\r\nprepend a 0 0 1 noreply\r\nP\r\n"
           "append q 0 0 1 noreply\r\nA\r\ncas a 0 0 1 1 noreply\r\nC\r\ncas q 0 0 1 1 noreply\r\nC\r\n"
           "set n 0 0 1 noreply\r\n5\r\nincr n 3 noreply\r\ndecr n 1 noreply\r\nincr q 1 noreply\r\n"
           "touch a 100 noreply\r\ntouch q 100 noreply\r\ndelete b noreply\r\ndelete q noreply\r\n"
           "verbosity 1 noreply\r\nmn\r\n", "get a b n\r\n", "flush_all 0 noreply\r\nmn\r\nget a\r\n")),
    ("cas-across-touch-gat", steps("set a 0 0 1\r\nx\r\ngets a\r\n", "touch a 100\r\ngets a\r\n",
                                   "gats 100 a\r\n", "gat 0 a\r\ngets a\r\n",
                                   "cas a 0 0 1 {CAS}\r\ny\r\ngets a\r\n")),
    ("cas-across-flush", steps("set a 0 0 1\r\nx\r\ngets a\r\n", "flush_all\r\nset a 0 0 1\r\nx\r\ngets a\r\n",
                               "cas a 0 0 1 {CASP}\r\ny\r\n", "cas a 0 0 1 {CAS}\r\ny\r\ngets a\r\n")),
    ("cas-after-incr-append", steps("set a 0 0 1\r\n1\r\ngets a\r\n", "incr a 1\r\ngets a\r\n",
                                    "cas a 0 0 1 {CASP}\r\n9\r\n", "append a 0 0 1\r\n0\r\ngets a\r\n",
                                    "cas a 0 0 1 {CASP}\r\n9\r\n", "cas a 0 0 1 {CAS}\r\n9\r\ngets a\r\n")),
    ("incr-overflow", steps("set n 0 0 20\r\n18446744073709551615\r\nincr n 1\r\nget n\r\n",
                            "set n 0 0 20\r\n18446744073709551614\r\nincr n 1\r\nget n\r\nincr n 1\r\nget n\r\n",
                            "set n 0 0 1\r\n5\r\ndecr n 6\r\nget n\r\ndecr n 18446744073709551615\r\n",
                            "set n 0 0 2\r\n99\r\nincr n 1\r\nget n\r\ndecr n 91\r\nget n\r\n",
                            "set n 0 0 3\r\n100\r\ndecr n 1\r\nget n\r\ndecr n 90\r\nget n\r\nincr n 0\r\nget n\r\n")),
    ("incr-non-numeric", steps("set n 0 0 3\r\n12a\r\nincr n 1\r\n", "set n 0 0 3\r\n-12\r\nincr n 1\r\ndecr n 1\r\n",
                               "set n 0 0 3\r\n+12\r\nincr n 1\r\n", "set n 0 0 4\r\n12 3\r\nincr n 1\r\n",
                               "set n 0 0 3\r\n0x1\r\nincr n 1\r\n",
                               "set n 0 0 21\r\n184467440737095516150\r\nincr n 1\r\n",
                               "set n 0 0 3\r\n 12\r\nincr n 1\r\nget n\r\n", "set n 0 0 3\r\n12 \r\nincr n 1\r\nget n\r\n",
                               "set n 0 0 2\r\n07\r\nincr n 1\r\nget n\r\n",
                               "incr n 01\r\nincr n +1\r\nincr n 1.5\r\nincr n 0x10\r\nincr n 18446744073709551616\r\n")),
    # exptime: negative, 30 days exactly (relative) and one more (absolute, long past),
    # absolute in the future and in the past, the 32-bit edges
    ("exptime-forms", steps("set a 0 -1 1\r\nx\r\nget a\r\n", "set a 0 2592000 1\r\nx\r\nget a\r\n",
                            "set a 0 2592001 1\r\nx\r\nget a\r\n", "set a 0 %d 1\r\nx\r\nget a\r\n" % (NOW + 100000),
                            "set a 0 %d 1\r\nx\r\nget a\r\n" % (NOW - 10), "set a 0 0 1\r\nx\r\ntouch a 2592001\r\nget a\r\n",
                            "set a 0 0 1\r\nx\r\ngat %d a\r\nget a\r\n" % (NOW + 100000), "touch a -5\r\nget a\r\n",
                            "set a 0 -2147483648 1\r\nx\r\nget a\r\n", "set a 0 2147483647 1\r\nx\r\nget a\r\n",
                            "set a 0 -2147483649 1\r\nx\r\nget a\r\n", "set a 0 00 1\r\nx\r\nget a\r\n",
                            "set a 0 +5 1\r\nx\r\nget a\r\n")),
    ("exptime-meta", steps("ms a 1 T-1\r\nx\r\nmg a v\r\n", "ms a 1 T2592001\r\nx\r\nmg a v\r\n",
                           "ms a 1 T%d\r\nx\r\nmg a v t\r\n" % (NOW + 100000), "ms a 1 T0\r\nx\r\nmg a v t\r\n",
                           "mg a T-1 v\r\nmg a v\r\n", "ms a 1\r\nx\r\nmg a T%d t v\r\n" % (NOW + 100000),
                           "ma n N%d J1 v t\r\n" % (NOW + 100000))),
    ("verbosity-forms", steps("verbosity\r\n", "verbosity 0\r\n", "verbosity 1 noreply extra\r\n",
                              "verbosity noreply\r\n", "mn\r\n")),
    # -I 1m: the largest value stored with a 1-byte and a 250-byte key, and one byte more
    ("value-at-item-limit", steps(*["set %s 0 0 %d\r\n%s\r\nget %s\r\n" % (k, n, "x" * n, k)
                                    for k in ("b", K250)
                                    for n in (ITEM_MAX_1 - (len(k) - 1), ITEM_MAX_1 + 1 - (len(k) - 1))])),
    ("value-at-item-limit-meta", steps(*["ms b %d\r\n%s\r\nmg b s\r\n" % (n, "y" * n)
                                         for n in (ITEM_MAX_1, ITEM_MAX_1 + 1)])),
    ("append-past-item-limit", steps("set b 0 0 %d\r\n%s\r\n" % (ITEM_MAX_1 - 60, "x" * (ITEM_MAX_1 - 60)),
                                     "append b 0 0 40\r\n%s\r\nmg b s\r\n" % ("y" * 40),
                                     "append b 0 0 40\r\n%s\r\nmg b s\r\n" % ("y" * 40),
                                     "prepend b 0 0 10\r\n%s\r\nmg b s\r\n" % ("z" * 10))),
    ("pipeline-mixed-split", [Split(PIPELINE.encode())]),
    ("pipeline-mixed-one-write", [PIPELINE.encode()]),
    # every byte in a TCP segment of its own: each boundary of every line,
    # value and terminator falls between two reads once
    ("pipeline-mixed-every-byte", [Split(PIPELINE.encode(), sizes=(1,))]),
    ("meta-md-flags", steps("ms a 1\r\nx\r\nmd a x\r\nmg a v s f\r\n", "ms a 1 F7\r\nx\r\nmg a c\r\n", "md a C1\r\n",
                            "md a C{CAS} q\r\nmn\r\n", "mg a v\r\n", "ms a 1\r\nx\r\nmd a I T0\r\nmg a v c\r\n",
                            "md a b\r\n", "md YQ== b\r\nmg a v\r\n")),
    ("meta-ms-flags", steps("ms a 1 I\r\nx\r\nmg a v\r\n", "ms a 1 MS\r\nx\r\n", "ms a 1 Mx\r\nx\r\n",
                            "ms a 1 MAx\r\nx\r\n", "ms a 1 F4294967296\r\nx\r\n", "ms a 1 F-1\r\nx\r\n",
                            "ms a 1 O123 k b\r\nx\r\n", "ms YQ== 1 b k O5 c\r\nx\r\nmg a v k\r\n",
                            "ms a S1 1\r\nx\r\n", "ms a 1 q k\r\nx\r\nmn\r\n", "ms a 0\r\n\r\nmg a v s\r\n",
                            "ms a 1 T1 T2\r\nx\r\n", "ms a 1 ma\r\nx\r\n")),
    ("meta-mg-combos", steps("ms a 3 F9 T50\r\nabc\r\n", "mg a\r\n", "mg a k\r\n", "mg a s v f t c k O1 q\r\n",
                             "mg a E99\r\nmg a c\r\n", "mg a N10 s\r\n", "mg a R30 v c t\r\n", "mg b R30 v\r\n",
                             "mg a T0 t\r\nmg a t\r\n", "mg a h l v\r\n", "mg a q k\r\nmg zz q k\r\nmn\r\n")),
    ("meta-ma-combos", steps("ma n N0 J18446744073709551615 v\r\nma n v\r\nma n MD D5 v\r\n", "ma n MI D1 v c t\r\n",
                             "ma n M+ v\r\n", "ma n M- v\r\n", "ma n Mx v\r\n", "ma n D-1\r\n", "ma n C1 v\r\n",
                             "ma n C{CAS} v\r\n", "ma n E55 v c\r\nmg n c\r\n", "ma n q\r\nmn\r\n", "ma n k O7 b v\r\n")),
    # ma's T written with the number (a t before it shows the TTL before,
    # a number that grows loses it); mg's T applied before its win token
    ("meta-ma-T-mg-T-R", steps("set n 0 100 1\r\n5\r\nma n t T200 v\r\nmg n t v\r\n", "ma n T300 t\r\n",
                               "set g 0 100 1\r\n9\r\nma g T300 t v\r\nmg g t\r\n",
                               "set k 0 0 1\r\nx\r\nmg k T20 R30 v t\r\nmg k R30 t\r\n",
                               "mg k T-1 R30 t\r\nmg k t\r\n")),
    # ---- the adversarial sweep: each meta flag on each meta command,
    # quiet pipelines with errors in them, flag and token limits, edge
    # numbers, and the admin forms (all identical when written) ----
    ("sweep-mg-flags", steps("set k 5 0 3\r\nabc\r\n", "mg k b\r\n", "mg %s b v k\r\n" % b64("k"),
                             "mg k s v f t c h l k O123 q\r\n", "mg k E55 v\r\n", "mg k N30 v\r\n",
                             "mg nk N30 v c t\r\n", "mg nk v\r\n", "mg k R30 v\r\n", "mg k T30 t v\r\n",
                             "mg k u v\r\n", "mg k v O\r\n", "mg k O%s v\r\n" % ("o" * 38),
                             "mg k q\r\nmn\r\n", "mg miss q v\r\nmn\r\n", "mg k k b\r\n")),
    ("sweep-ms-flags", steps("ms k 2 b\r\nhi\r\n", "ms %s 2 b c k O9 F7 T100 I\r\nhi\r\n" % b64("k"),
                             "mg k v f k\r\n", "ms k 2 MA\r\nzz\r\n", "ms k 2 MP\r\nzz\r\n",
                             "ms k 2 MR\r\nzz\r\n", "ms k 2 ME\r\nzz\r\n", "ms k 2 MS\r\nzz\r\n",
                             "ms k 2 MX\r\nzz\r\n", "ms nk 2 MA N30\r\nzz\r\n", "mg nk v t\r\n",
                             "ms k 2 C1 q\r\nzz\r\nmn\r\n", "ms k 2 E99 c\r\nzz\r\nmg k c v\r\n",
                             "ms k 2 x\r\nzz\r\n", "ms k\r\n", "ms k abc\r\nzz\r\n", "ms k -1\r\n",
                             "ms k 2 T-1\r\nzz\r\nmg k v\r\n", "ms k 2\r\nxxx\r\n", "ms q 1 MA\r\nx\r\n",
                             "ms %s 1 b k\r\nx\r\n" % b64("a b"), "mg %s b k v\r\n" % b64("a b"),
                             "ms k 1 Fabc\r\nx\r\n", "ms k 1 Cabc\r\nx\r\n", "ms k 1 Tabc\r\nx\r\n",
                             "ms k 1 O\r\nx\r\n")),
    ("sweep-md-ma-flags", steps("set k 0 0 1\r\nx\r\n", "md %s b k O5\r\n" % b64("k"), "set k 0 0 1\r\nx\r\n",
                                "md k I T30\r\n", "mg k v c\r\n", "mg k v c\r\n", "mg k s v\r\n", "md k x\r\n",
                                "md nope q\r\nmn\r\n", "md nope C5\r\n", "md k E5\r\n", "md k M\r\n", "md k T\r\n",
                                "ma n\r\n", "ma n N0 J13 v t c k O1\r\n", "ma n MD D100 v\r\n", "ma n Dabc\r\n",
                                "set w 0 0 20\r\n18446744073709551615\r\n", "ma w v\r\n", "ma miss q\r\nmn\r\n",
                                "ma n T100 t v\r\n", "ma %s b v k\r\n" % b64("n"), "set s 0 0 2\r\nab\r\n",
                                "ma s\r\n", "ma s q\r\nmn\r\n", "ma k N0 J5 MD D10 v\r\n", "ma k Jabc N0 v\r\n",
                                "ma k N-1 v\r\n", "mn x\r\n", "me\r\n", "me %s b\r\n" % b64("k"), "me nope\r\n")),
    ("sweep-quiet-errors", steps("set k 0 0 1\r\nx\r\nmg miss v q\r\nmg k v q\r\nms k 2 q\r\nxxx\r\nmd nope q\r\n"
                                 "mg k $ q\r\nma k q\r\nmg k v k q O1\r\nmn\r\n",
                                 "ms a 1 q\r\nx\r\nms b 1 q MA\r\ny\r\nmg b v q\r\nmd b q\r\nma a q\r\n"
                                 "ms d 1 q C9\r\nx\r\nms e 1 q ME\r\nx\r\nms e 1 q ME\r\nx\r\nmn\r\n",
                                 "set a 0 0 1\r\nxx\r\nmg a v q\r\nbogus\r\nmn\r\n")),
    ("sweep-flags-tokens", steps("mg k v v\r\n", "mg k vv\r\n", "ms k 1 c c\r\nx\r\n", "mg k ! v\r\n",
                                 "mg k \x7f\r\n", "md k q q\r\n", "ma k N0 N0\r\n", "mg k 1\r\n", "mg  k v\r\n",
                                 "mg\r\n", "mgx k\r\n", "mg k " + " ".join("O%d" % i for i in range(30)) + "\r\n",
                                 "mg k v f t s c h l k q O1 b N1 R1 T1 E1 u\r\n",
                                 "set a 0 0 1 " + " ".join("x" for _ in range(25)) + "\r\nx\r\n",
                                 "delete a 0 noreply extra more\r\n", "touch a 1 2 3\r\n", "incr a 1 2 3 4\r\n",
                                 "mg k Eabc v\r\n", "mg k Nabc v\r\n", "mg k Rabc v\r\n", "mg k Tabc v\r\n")),
    ("sweep-keys", steps("mg %s v\r\n" % K250, "mg %s v\r\n" % K251, "ms %s 1\r\nx\r\n" % K250,
                         "ms %s 1\r\nx\r\n" % K251, "md %s\r\n" % K251, "ma %s\r\n" % K251,
                         "mg %s b v\r\n" % b64("y" * 187), "mg %s b v\r\n" % b64("y" * 188), "mg !!!! b v\r\n",
                         "mg a b v\r\n", "mg YQ= b v\r\n", "ms YWJj b 1\r\nx\r\n", "mg abc v\r\n",
                         "set k\x01 0 0 1\r\nx\r\nget k\x01\r\n", "set a\tb 0 0 1\r\nx\r\nget a\tb\r\n",
                         "set \xff\xfe 0 0 1\r\nx\r\nmg \xff\xfe v k\r\n", "get  a  b  \r\n", "GET a\r\n")),
    ("sweep-numbers", steps("set a 0 -1 1\r\nx\r\nget a\r\n", "set a 0 0 1\r\nx\r\ntouch a -1\r\nget a\r\n",
                            "set a 0 9223372036854775808 1\r\nx\r\n", "set a 0 -9223372036854775809 1\r\nx\r\n",
                            "set a 0 4294967295 1\r\nx\r\nget a\r\n", "set a 0 0 01\r\nx\r\n",
                            "set a 0 0 +1\r\nx\r\n", "set a +5 0 1\r\nx\r\nget a\r\n", "set a 0 0 0x1\r\nx\r\n",
                            "set a 0 -0 1\r\nx\r\nget a\r\n", "delete a 0\r\n", "delete a 5\r\n",
                            "cas nokey 0 0 1 123\r\nx\r\n", "cas nokey 0 0 1 -1\r\nx\r\n",
                            "cas nokey 0 0 1 18446744073709551616\r\nx\r\n", "ms nokey 1 C123\r\nx\r\n",
                            "md nokey C1\r\n", "ma nokey C1\r\n", "set k 0 0 1\r\nx\r\ncas k 0 0 1 0\r\ny\r\n")),
    ("sweep-incr", steps("set n 0 0 20\r\n18446744073709551615\r\nincr n 1\r\n",
                         "set n 0 0 20\r\n99999999999999999999\r\nincr n 1\r\n", "set n 0 0 2\r\n10\r\n",
                         "incr n 18446744073709551616\r\n", "incr n -1\r\n", "decr n 99999999999999999999\r\n",
                         "decr n 18446744073709551615\r\n", "incr n 0x10\r\n", "set n 0 0 3\r\n-10\r\nincr n 1\r\n",
                         "set n 0 0 3\r\n012\r\nincr n 1\r\n", "set n 0 0 0\r\n\r\nincr n 1\r\n",
                         "set n 0 0 21\r\n000000000000000000001\r\nincr n 1\r\nget n\r\n", "incr n\r\n")),
    ("sweep-admin", steps("verbosity\r\n", "verbosity 1 2 3\r\n", "verbosity x\r\n", "version extra\r\n",
                          "shutdown\r\n", "shutdown graceful\r\n", "cache_memlimit\r\n", "cache_memlimit abc\r\n",
                          "flush_all 0 0 0\r\n", "flush_all -5\r\n", "stats foo\r\n", "stats detail\r\n",
                          "stats detail foo\r\n", "stats x y z\r\n", "STATS\r\n", "quit extra\r\n")),
    ("sweep-split-partial", [Split(b"set a 0 0 5\r\nhello\r\nget a\r\nmg a v k O1 q\r\nmn\r\nincr a 1\r\n", (1,)),
                             SYNC, b"set a 0 0 10\r\nhel", SYNC, b"lo\r\nworl", SYNC, b"\r\nget a\r\n", SYNC,
                             b"mg a", SYNC, b" v\r\n", SYNC]),
    ("sweep-binary-bytes-on-text", steps("set a 0 0 1\r\nx\r\n\x80\x01\x00\x01\x08\x00\x00\x00\x00\x00\x00\x0a"
                                         "\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\r\nget a\r\n",
                                         "\x80\x00\x00\x00\r\nversion\r\n", "get a\x00b\r\n", "\xff\xfe\r\nmn\r\n")),
    ("sweep-quit-pipelined", [b"set a 0 0 1\r\nx\r\nget a\r\nquit\r\nget a\r\n"]),
    # stats cachedump: larderd answered ERROR to every form. memcached checks
    # the argument count, then both numbers (its safe_strtoul: a minus sign
    # refused, 2^32 wraps to 0), then the class id (under 64). Only classes
    # that hold nothing in memcached are listed, so both answer END.
    ("stats-cachedump-args", steps("stats cachedump\r\n", "stats cachedump 1\r\n",
                                   "stats cachedump x 1\r\n", "stats cachedump 1 x\r\n",
                                   "stats cachedump -1 1\r\n", "stats cachedump 1 -1\r\n",
                                   "stats cachedump 64 0\r\n", "stats cachedump 200 1\r\n",
                                   "stats cachedump 18446744073709551615 0\r\n",
                                   "stats cachedump 18446744073709551616 0\r\n",
                                   "stats cachedump 63 0\r\n", "stats cachedump 0 5 extra\r\n",
                                   "stats cachedump 4294967296 1\r\n", "stats cachedump +0 -0\r\n")),
]
