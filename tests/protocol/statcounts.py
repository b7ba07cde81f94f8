#!/usr/bin/env python3
"""tests/protocol/statcounts.py - the command counters of "stats" beside memcached 1.6.18.

Usage: statcounts.py LARDERD MEMCACHED

Monitoring reads hit ratios from these counters (get_hits / cmd_get, and
the same for touch, incr, decr), so each command must count where
memcached counts it. Both servers get the same scenario, each on keys of
its own; the counters' changes across it must be equal:
  - get/gets: cmd_get, get_hits, get_misses; gat/gats: the touch counters
    only (cmd_touch, touch_hits, touch_misses), never the get ones;
  - mg: a hit counts cmd_get and get_hits, a hit with T counts
    touch_hits (cmd_touch) instead, a miss cmd_get and get_misses; a miss
    that N creates counts cmd_get, get_hits and total_items;
  - ma: a hit incr_hits or decr_hits, a miss incr_misses, a miss that N
    creates only total_items;
  - binary INCREMENT/DECREMENT: a hit incr_hits or decr_hits, a miss with
    exptime 0xffffffff incr_misses, a miss that creates the item from its
    initial value only total_items (no cmd_set).
bytes drops at a delete, as memcached's (larderd counted the deleted
item until the engine freed it); bytes_read counts every byte read, a
stats line itself and a swallowed value included, as memcached's. Gauges monitoring reads beside them: accepting_conns, listen_disabled_num
and time_in_listen_disabled_us equal on both (neither stops listening here),
hash_power_level and hash_bytes present in both. The names: every name
memcached's "stats" prints is printed by larderd too, in memcached's order,
except those docs/server.md lists as not shown (ABSENT: memcached's own
buffers, slab mover, LRU crawler and logger, which larderd does not have,
and hash_is_expanding, which the engine does not report); conn_yields,
auth_cmds, auth_errors and malloc_fails equal to memcached's (0 on both);
"stats extstore" an empty list, as memcached's without an extstore;
"stats detail on" counting gets, hits, sets and deletes per key prefix
as memcached counts them (text get/gets/gat/gats, the storage commands,
too large ones included, delete; binary gets, touches, stores, deletes;
never meta commands, touch or incr; no delimiter, no count; an empty
prefix), "stats detail dump" listing the same prefixes (compared sorted:
memcached lists in its hash's order), "off" keeping them and counting no
more, detail_enabled as memcached's, "stats reset" forgetting them (larderd
refused "on" and answered ERROR before; the other forms are difftest's case
issue-stats-detail-forms).
cmd_meta counted for me alone, as memcached counts it (larderd counted
every meta command, mn included: every scenario failed before the fix).
Not compared: counters whose differences docs/server.md lists (CAS uniques,
so cas_*; get_expired, get_flushed).
"""
import socket
import struct
import sys
import threading

from larderd_client import flushed, request, stats as all_stats
from loopback import recv_until, run_driver
from metadump import start_both, stop_all

COUNTERS = [b"cmd_get", b"get_hits", b"get_misses", b"cmd_touch", b"touch_hits",
            b"touch_misses", b"cmd_set", b"total_items", b"incr_hits", b"incr_misses",
            b"decr_hits", b"decr_misses", b"delete_hits", b"delete_misses", b"cmd_meta"]

SCENARIOS = [
    ("get", b"set g1 0 0 1\r\nx\r\nget g1 g2\r\ngets g1\r\n"),
    ("gat", b"set t1 0 0 1\r\nx\r\ngat 100 t1 t2\r\ngats 100 t1\r\n"),
    ("touch", b"set u1 0 0 1\r\nx\r\ntouch u1 100\r\ntouch u2 100\r\n"),
    ("mg", b"set m1 0 0 1\r\nx\r\nmg m1 v\r\nmg m2 v\r\nmg m1 s f\r\n"),
    ("mg-T", b"set n1 0 0 1\r\nx\r\nmg n1 v T100\r\nmg n2 v T100\r\n"),
    ("mg-N", b"mg v1 N100 v\r\nmg v1 N100 v\r\n"),
    ("ma", b"set a1 0 0 1\r\n5\r\nma a1\r\nma a1 MD\r\nma a2\r\nma a2 MD\r\n"),
    ("ma-N", b"ma c1 N0 J5 v\r\nma c2 N0 MD\r\nma c1 v\r\n"),
    ("delete", b"set d1 0 0 1\r\nx\r\ndelete d1\r\ndelete d1\r\nmd d2\r\n"),
    # cmd_meta: memcached counts me alone (hit or miss, not a refused key);
    # larderd counted every meta command, mn included.
    ("me", b"set e1 0 0 1\r\nx\r\nme e1\r\nme e2\r\nme " + b"k" * 251 + b"\r\nmg e1 v\r\n"),
]


NOOP_OPAQUE = 0x5eed
# memcached's reply to the binary NOOP that ends a binary scenario.
BIN_END = struct.pack(">BBHBBHIIQ", 0x81, 0x0a, 0, 0, 0, 0, 0, NOOP_OPAQUE, 0)


def bin_arith(opcode, key, delta, initial, exptime):
    extras = struct.pack(">QQI", delta, initial, exptime)
    return struct.pack(">BBHBBHIIQ", 0x80, opcode, len(key), len(extras), 0, 0,
                       len(extras) + len(key), 0, 0) + extras + key


BIN_INCR, BIN_DECR, BIN_NOOP = 0x05, 0x06, 0x0a
BIN_SCENARIOS = [
    ("bin-arith", bin_arith(BIN_INCR, b"i1", 1, 7, 0) + bin_arith(BIN_INCR, b"i1", 2, 0, 0) +
     bin_arith(BIN_DECR, b"i1", 1, 0, 0) + bin_arith(BIN_INCR, b"i2", 1, 0, 0xffffffff) +
     bin_arith(BIN_DECR, b"i3", 1, 0, 0xffffffff) +
     struct.pack(">BBHBBHIIQ", 0x80, BIN_NOOP, 0, 0, 0, 0, 0, NOOP_OPAQUE, 0)),
]


# memcached 1.6.18's names larderd does not print (docs/server.md, "Statistics").
ABSENT = set(b"""libevent response_obj_oom response_obj_count response_obj_bytes read_buf_count
read_buf_bytes read_buf_bytes_free read_buf_oom reserved_fds hash_is_expanding
slab_reassign_rescues slab_reassign_chunk_rescues slab_reassign_evictions_nomem
slab_reassign_inline_reclaim slab_reassign_busy_items slab_reassign_busy_deletes
slab_reassign_running slabs_moved lru_crawler_running lru_crawler_starts lru_maintainer_juggles
log_worker_dropped log_worker_written log_watcher_skipped log_watcher_sent log_watchers
unexpected_napi_ids round_robin_fallback slab_global_page_pool evicted_active crawler_reclaimed
crawler_items_checked lrutail_reflocked moves_to_cold moves_to_warm moves_within_lru
direct_reclaims lru_bumps_dropped""".split())


def stat_names(port):
    return list(all_stats(port))


def check_names(lp, mp):
    larder, memc = stat_names(lp), stat_names(mp)
    missing = [n.decode() for n in memc if n not in larder and n not in ABSENT]
    if missing:
        raise RuntimeError("stats: larderd lacks %s" % " ".join(missing))
    shown = [n for n in memc if n in larder]
    if [n for n in larder if n in memc] != shown:
        raise RuntimeError("stats: memcached's names in another order: %r" % larder)
    larder_v, memc_v = all_stats(lp), all_stats(mp)
    for k in (b"conn_yields", b"auth_cmds", b"auth_errors", b"malloc_fails"):
        if larder_v.get(k) != memc_v.get(k):
            raise RuntimeError("%s: larderd %r memcached %r" % (k.decode(), larder_v.get(k),
                                                                memc_v.get(k)))
    # memcached without an extstore answers its group with an empty list.
    ext = [request(port, b"stats extstore\r\n") for port in (lp, mp)]
    if ext[0] != ext[1]:
        raise RuntimeError("stats extstore: larderd %r memcached %r" % tuple(ext))
    print("names   %d of memcached's %d in its order, %d documented as not shown"
          % (len(shown), len(memc), len(memc) - len(shown)))


def counters(port):
    stats = all_stats(port)
    return {k: int(stats[k]) for k in COUNTERS}


def check_gauges(lp, mp):
    larder, memc = all_stats(lp), all_stats(mp)
    for k in (b"accepting_conns", b"listen_disabled_num", b"time_in_listen_disabled_us"):
        if larder.get(k) != memc.get(k):
            raise RuntimeError("%s: larderd %r memcached %r" % (k.decode(), larder.get(k),
                                                                memc.get(k)))
    for k in (b"hash_power_level", b"hash_bytes"):
        if k not in larder or int(larder[k]) <= 0:
            raise RuntimeError("%s missing or zero in larderd: %r" % (k.decode(), larder.get(k)))
    print("gauges  accepting_conns, listen_disabled_num as memcached's; hash_power_level %s,"
          " hash_bytes %s" % (larder[b"hash_power_level"].decode(),
                               larder[b"hash_bytes"].decode()))


def check_bytes(lp, mp):
    """bytes drops at a delete, as memcached's (it subtracts at the unlink):
    100 rounds of a set, a delete and a stats beside an item that stays,
    each reading the one item's bytes, and 0 once it is deleted too.
    larderd read the engine's used bytes, which count a deleted entry
    until its grace period frees it: 194 of 200 reads right after a delete
    still counted it. Its figure is the engine's (slots, headers), so only
    the changes are compared, not the numbers."""
    for port, name in ((lp, "larderd"), (mp, "memcached")):
        request(port, b"set stay 0 0 10\r\n0123456789\r\nmn\r\n", end_marks=(b"MN\r\n",))
        base = flushed(lambda: int(all_stats(port)[b"bytes"]))
        for i in range(100):
            request(port, b"set gone 0 0 %d\r\n%s\r\ndelete gone\r\nmn\r\n" % (50 + i, b"y" * (50 + i)),
                    end_marks=(b"MN\r\n",))
            now = flushed(lambda: int(all_stats(port)[b"bytes"]), base)
            if now != base:
                raise RuntimeError("%s: bytes %d right after delete %d, %d before the set"
                                   % (name, now, i, base))
        request(port, b"delete stay\r\nmn\r\n", end_marks=(b"MN\r\n",))
        now = flushed(lambda: int(all_stats(port)[b"bytes"]), 0)
        if now != 0:
            raise RuntimeError("%s: bytes %d with no item" % (name, now))
    print("bytes   a delete's bytes gone from the next stats, as memcached's")


def check_bytes_read(lp, mp):
    """bytes_read counts what the server has read, as memcached's: a stats
    reply includes its own line, the requests behind it in the same write
    and a refused value the server swallowed. Each write below ends the
    connection's input, so on both servers the growth between two stats on
    one connection is the second write's length. larderd counted each
    request once it had run (not the stats line itself nor what followed
    it) and never the swallowed value."""
    big = b"v" * 2000000
    writes = [(b"set br 0 0 1 noreply\r\nx\r\nstats\r\nmn\r\n", b"END\r\nMN\r\n"),
              (b"set br 0 0 %d\r\n%s\r\nstats\r\n" % (len(big), big), b"END\r\n")]
    for port, name in ((lp, "larderd"), (mp, "memcached")):
        s = socket.create_connection(("127.0.0.1", port), timeout=60)
        try:
            s.sendall(b"stats\r\n")
            before = int(recv_until(s, b"END\r\n", "stats").split(b"STAT bytes_read ")[1].split(b"\r\n")[0])
            for w, end in writes:
                s.sendall(w)
                out = recv_until(s, end, "stats")
                now = int(out.split(b"STAT bytes_read ")[1].split(b"\r\n")[0])
                if now - before != len(w):
                    raise RuntimeError("%s: bytes_read grew by %d over a write of %d bytes"
                                       % (name, now - before, len(w)))
                before = now
        finally:
            s.close()
    print("bytes_read what was read, its own stats line, later requests and a swallowed value "
          "included, as memcached's")


DETAIL_TEXT = (b"get p:1\r\nset p:1 0 0 1\r\nx\r\nget p:1 p:2 q:1 nokey\r\ngets p:1\r\n"
               b"gat 0 p:1 p:3\r\ngats 0 p:1\r\ntouch p:1 0\r\nadd p:1 0 0 1\r\ny\r\n"
               b"replace r:1 0 0 1\r\ny\r\nappend p:1 0 0 1\r\nz\r\nprepend p:1 0 0 1\r\nz\r\n"
               b"cas p:1 0 0 1 1\r\nq\r\nincr p:1 1\r\ndelete p:1\r\ndelete p:9\r\nmg m:1 v\r\n"
               b"ms m:1 1\r\nx\r\nmg m:1 v\r\nmd m:1\r\nma m:3\r\nset x::y 0 0 1\r\nx\r\n"
               b"get :lead\r\nset e: 0 0 1\r\nx\r\nget nocolon\r\nset k:nr 0 0 1 noreply\r\nx\r\n"
               b"gat -1 e:\r\nget e:\r\nset big:1 0 0 2000000\r\n" + b"v" * 2000000 + b"\r\nmn\r\n")


def detail_binary():
    """Binary GET, SET, GETK, DELETE, ADD, APPEND, GAT, TOUCH and INCREMENT of b:
    keys, then NOOP."""
    ext = struct.pack(">II", 0, 0)
    frames = [(0x00, b"b:1", b"", b""), (0x01, b"b:1", ext, b"v"), (0x0c, b"b:1", b"", b""),
              (0x04, b"b:1", b"", b""), (0x02, b"b:2", ext, b"v"), (0x0e, b"b:2", b"", b"w"),
              (0x1d, b"b:2", struct.pack(">I", 0), b""), (0x1c, b"b:2", struct.pack(">I", 0), b""),
              (0x05, b"b:3", struct.pack(">QQI", 1, 0, 0), b"")]
    out = b""
    for op, key, extras, value in frames:
        body = extras + key + value
        out += struct.pack(">BBHBBHIIQ", 0x80, op, len(key), len(extras), 0, 0, len(body), 0,
                           0) + body
    return out + struct.pack(">BBHBBHIIQ", 0x80, 0x0a, 0, 0, 0, 0, 0, NOOP_OPAQUE, 0)


def detail_state(port):
    """The sorted PREFIX lines of stats detail dump, and detail_enabled."""
    dump = request(port, b"stats detail dump\r\n").split(b"\r\n")
    enabled = [l for l in request(port, b"stats settings\r\n").split(b"\r\n")
               if l.startswith(b"STAT detail_enabled ")]
    return sorted(l for l in dump if l.startswith(b"PREFIX ")), enabled


def check_detail(lp, mp):
    got = []
    for port in (lp, mp):
        seen = [request(port, b"stats detail on\r\n", end_marks=(b"OK\r\n", b"ERROR\r\n"))]
        request(port, DETAIL_TEXT, end_marks=(b"MN\r\n",))
        request(port, detail_binary(), end_marks=(BIN_END,))
        seen.append(detail_state(port))
        request(port, b"stats detail off\r\nget p:1\r\nset p:1 0 0 1\r\nx\r\nmn\r\n",
                end_marks=(b"MN\r\n",))
        seen.append(detail_state(port))
        request(port, b"stats reset\r\nmn\r\n", end_marks=(b"MN\r\n",))
        seen.append(detail_state(port))
        got.append(seen)
    if got[0] != got[1]:
        raise RuntimeError("stats detail: larderd %r, memcached %r" % tuple(got))
    print("detail  stats detail on/off/dump and reset as memcached's: %s"
          % b" | ".join(got[0][1][0]).decode())


DETAIL_CLIENTS = 8
DETAIL_ROUNDS = 150


def check_detail_concurrent(lp):
    """stats detail counts every request exactly while 8 connections (spread
    over the workers) write one shared prefix and one each, and another
    reads the dump meanwhile (TSan: the table under the workers; DETAIL-P1)."""
    request(lp, b"stats reset\r\nstats detail on\r\nmn\r\n", end_marks=(b"MN\r\n",))

    def client(i):
        ops = b"".join(b"set all:%d 0 0 1\r\nx\r\nget all:%d own%d:k\r\ndelete own%d:k\r\n"
                       % (i, i, i, i) for _ in range(DETAIL_ROUNDS))
        request(lp, ops + b"mn\r\n", end_marks=(b"MN\r\n",))

    threads = [threading.Thread(target=client, args=(i,)) for i in range(DETAIL_CLIENTS)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        request(lp, b"stats detail dump\r\n")
    for t in threads:
        t.join()
    lines = set(request(lp, b"stats detail dump\r\nstats detail off\r\nmn\r\n",
                        end_marks=(b"MN\r\n",)).split(b"\r\n"))
    n = DETAIL_ROUNDS
    want = {b"PREFIX all get %d hit %d set %d del 0" % (n * DETAIL_CLIENTS, n * DETAIL_CLIENTS,
                                                        n * DETAIL_CLIENTS)}
    want |= {b"PREFIX own%d get %d hit 0 set 0 del %d" % (i, n, n) for i in range(DETAIL_CLIENTS)}
    if not want <= lines:
        raise RuntimeError("stats detail under %d clients: missing %r" % (DETAIL_CLIENTS,
                                                                          sorted(want - lines)))
    print("detail  %d clients at once: every request counted once" % DETAIL_CLIENTS)


def check_detail_bound(lp):
    """docs/server.md: at most 10,000 prefixes are kept; a key under another
    prefix past them is not counted, and those kept still count."""
    gets = b"".join(b"get n%d:k\r\n" % i for i in range(10010))
    out = request(lp, b"stats reset\r\nstats detail on\r\n" + gets + b"get n0:k\r\n"
                  b"stats detail dump\r\nstats detail off\r\nstats reset\r\nmn\r\n",
                  end_marks=(b"MN\r\n",))
    lines = [l for l in out.split(b"\r\n") if l.startswith(b"PREFIX ")]
    if len(lines) != 10000 or b"PREFIX n0 get 2 hit 0 set 0 del 0" not in lines:
        raise RuntimeError("stats detail bound: %d prefixes, n0: %r"
                           % (len(lines), [l for l in lines if l.startswith(b"PREFIX n0 ")]))
    print("detail  10,010 prefixes: 10,000 kept, the first still counting")


def main():
    larderd, memcached = sys.argv[1], sys.argv[2]
    lp, mp, procs = start_both(larderd, memcached)
    try:
        check_gauges(lp, mp)
        check_bytes(lp, mp)
        check_bytes_read(lp, mp)
        check_names(lp, mp)
        check_detail(lp, mp)
        check_detail_concurrent(lp)
        check_detail_bound(lp)
        scenarios = [(n, ops + b"mn\r\n", b"MN\r\n") for n, ops in SCENARIOS]
        scenarios += [(n, ops, BIN_END) for n, ops in BIN_SCENARIOS]
        for name, ops, end in scenarios:
            change = []
            for port in (lp, mp):
                before = counters(port)
                request(port, ops, end_marks=(end,))
                after = counters(port)
                change.append({k: after[k] - before[k] for k in COUNTERS})
            if change[0] != change[1]:
                diff = ["%s larderd %d memcached %d" % (k.decode(), change[0][k], change[1][k])
                        for k in COUNTERS if change[0][k] != change[1][k]]
                raise RuntimeError("%s: %s" % (name, ", ".join(diff)))
            print("%-7s counted as memcached counts it: %s" % (name, ", ".join(
                "%s +%d" % (k.decode(), v) for k, v in change[0].items() if v)))
    finally:
        stop_all(procs)
    print("PASS")


if __name__ == "__main__":
    run_driver(main)
