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
Gauges monitoring reads beside them: accepting_conns, listen_disabled_num
and time_in_listen_disabled_us equal on both (neither stops listening here),
hash_power_level and hash_bytes present in both. The names: every name
memcached's "stats" prints is printed by larderd too, in memcached's order,
except those docs/server.md lists as not shown (ABSENT: memcached's own
buffers, slab mover, LRU crawler and logger, which larderd does not have,
and hash_is_expanding, which the engine does not report); conn_yields,
auth_cmds, auth_errors and malloc_fails equal to memcached's (0 on both);
"stats extstore" an empty list, as memcached's without an extstore;
"stats detail on", where memcached starts its per-prefix statistics,
refused by larderd with a SERVER_ERROR naming it (it keeps none), after
which "stats detail dump" lists no prefix and detail_enabled stays "no"
(the other forms are difftest's case issue-stats-detail-forms).
Not compared: counters whose differences docs/server.md lists (CAS uniques,
so cas_*; get_expired, get_flushed; cmd_meta, which memcached 1.6.18 does
not count).
"""
import struct
import sys

from loopback import run_driver
from metadump import request, start_both, stop_all

COUNTERS = [b"cmd_get", b"get_hits", b"get_misses", b"cmd_touch", b"touch_hits",
            b"touch_misses", b"cmd_set", b"total_items", b"incr_hits", b"incr_misses",
            b"decr_hits", b"decr_misses", b"delete_hits", b"delete_misses"]

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
    out = request(port, b"stats\r\n")
    return [l.split(b" ")[1] for l in out.split(b"\r\n") if l.startswith(b"STAT ")]


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


def all_stats(port):
    out = request(port, b"stats\r\n")
    return dict(l.split(b" ")[1:3] for l in out.split(b"\r\n") if l.startswith(b"STAT "))


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


def check_detail(lp):
    got = request(lp, b"stats detail on\r\nstats detail dump\r\nstats settings\r\nmn\r\n",
                  end_marks=(b"MN\r\n",))
    want = (b"SERVER_ERROR stats detail is not supported (no per-prefix statistics)\r\n"
            b"END\r\n")
    if not got.startswith(want) or b"STAT detail_enabled no\r\n" not in got:
        raise RuntimeError("stats detail on: %r" % got[:200])
    print("detail  stats detail on refused, dump empty, detail_enabled no")


def main():
    larderd, memcached = sys.argv[1], sys.argv[2]
    lp, mp, procs = start_both(larderd, memcached)
    try:
        check_gauges(lp, mp)
        check_names(lp, mp)
        check_detail(lp)
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
