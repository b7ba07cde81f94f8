/*
 * stats.c - the "stats" command: memcached's general-purpose names computed
 * from the engine's larder_stats() and the workers' own counters, then every
 * engine counter as larder_<name>.
 *
 * Mapping: curr_items = entries (after larder_flush, so exact), bytes =
 * used_bytes, limit_maxbytes = capacity_bytes, evictions = evictions,
 * hash_bytes = index_bytes, hash_power_level = log2 of the index's slots;
 * accepting_conns is always 1 (listening is never disabled); expired_unfetched
 * is not tracked.
 * get_expired and get_flushed are always 0: the engine reports a read of an
 * expired or cleared entry as a plain miss, so the server cannot tell them
 * apart (documented in docs/server.md). "stats reset" subtracts a snapshot,
 * because the counters belong to other threads.
 *
 * "stats slabs" and "stats items" show the engine's size classes as
 * memcached's slab classes (ids from 1, only classes holding pages, or
 * items), with the figures the engine keeps per class; memcached's per-class
 * operation counters and ages are not kept per class and are left out.
 * "stats settings" shows memcached's fields for the settings larderd has
 * (and those saying a feature is off: detail, size tracking, TLS, idle timeout);
 * "stats cachedump" checks its arguments as memcached does and lists nothing;
 * "stats sizes" says the size histogram is disabled, as memcached's default
 * does; "stats conns" and "stats extstore" are empty lists; "stats detail"
 * switches and lists memcached's per-prefix counts (detail.c).
 */
#include "exec_internal.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define STATS_FLUSH_MS 1000u

static void stat_u64(struct larderd_obuf *out, const char *name, uint64_t v)
{
	larderd_obuf_str(out, "STAT ");
	larderd_obuf_str(out, name);
	larderd_obuf_add(out, " ", 1);
	larderd_obuf_u64(out, v);
	larderd_obuf_add(out, "\r\n", 2);
}

/* memcached's hash_power_level is log2 of its buckets; the index's slots here. */
static uint64_t floor_log2(uint64_t v)
{
	return v ? 63u - (uint64_t)__builtin_clzll(v) : 0;
}

static void stat_str(struct larderd_obuf *out, const char *name, const char *v)
{
	larderd_obuf_str(out, "STAT ");
	larderd_obuf_str(out, name);
	larderd_obuf_add(out, " ", 1);
	larderd_obuf_str(out, v);
	larderd_obuf_add(out, "\r\n", 2);
}

static void sum_workers(struct larderd_shared *sh, uint64_t sum[WS_COUNT])
{
	memset(sum, 0, sizeof(uint64_t) * WS_COUNT);
	for (int w = 0; w < sh->threads; w++)
		for (int s = 0; s < WS_COUNT; s++)
			/* Relaxed: see exec.h, each counter is exact on its own. */
			sum[s] += atomic_load_explicit(&sh->workers[w]->st[s], memory_order_relaxed);
	pthread_mutex_lock(&sh->reset_lock);
	for (int s = 0; s < WS_COUNT; s++)
		sum[s] -= sh->stat_base[s];
	pthread_mutex_unlock(&sh->reset_lock);
}

static void general(struct larderd_exec *x, struct larderd_obuf *out)
{
	struct larderd_shared *sh = x->sh;
	uint64_t w[WS_COUNT], e[LARDER_STAT_COUNT] = {0};
	struct rusage ru;
	char buf[64];
	time_t now = time(NULL);

	sum_workers(sh, w);
	/* curr_items counts every store answered before, as memcached's does:
	 * wait for the maintainer to apply them (a pass; on a maintainer that
	 * does not get there in STATS_FLUSH_MS, its count as it stands). */
	larderd_ignore(larder_flush(sh->cache, STATS_FLUSH_MS));
	larderd_ignore(larder_stats(sh->cache, e, LARDER_STAT_COUNT));
	getrusage(RUSAGE_SELF, &ru);
	stat_u64(out, "pid", (uint64_t)getpid());
	stat_u64(out, "uptime", (uint64_t)(now - sh->started));
	stat_u64(out, "time", (uint64_t)now);
	stat_str(out, "version", LARDERD_VERSION_STR);
	stat_u64(out, "pointer_size", sizeof(void *) * 8);
	snprintf(buf, sizeof(buf), "%ld.%06ld", (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
	stat_str(out, "rusage_user", buf);
	snprintf(buf, sizeof(buf), "%ld.%06ld", (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
	stat_str(out, "rusage_system", buf);
	stat_u64(out, "max_connections", (uint64_t)sh->maxconns);
	/* Relaxed: counters and gauges read on their own; any recent value will do. */
	stat_u64(out, "curr_connections",
		 atomic_load_explicit(&sh->curr_conns, memory_order_relaxed));
	stat_u64(out, "total_connections",
		 atomic_load_explicit(&sh->total_conns, memory_order_relaxed));
	stat_u64(out, "rejected_connections",
		 atomic_load_explicit(&sh->rejected_conns, memory_order_relaxed));
	stat_u64(out, "connection_structures",
		 atomic_load_explicit(&sh->curr_conns, memory_order_relaxed));
	stat_u64(out, "paused_connections",
		 atomic_load_explicit(&sh->paused_conns, memory_order_relaxed));
	stat_u64(out, "cmd_get", w[WS_CMD_GET]);
	stat_u64(out, "cmd_set", w[WS_CMD_SET]);
	stat_u64(out, "cmd_flush", w[WS_CMD_FLUSH]);
	stat_u64(out, "cmd_touch", w[WS_CMD_TOUCH]);
	stat_u64(out, "cmd_meta", w[WS_CMD_META]);
	stat_u64(out, "get_hits", w[WS_GET_HITS]);
	stat_u64(out, "get_misses", w[WS_GET_MISSES]);
	stat_u64(out, "get_expired", 0);
	stat_u64(out, "get_flushed", 0);
	stat_u64(out, "delete_misses", w[WS_DELETE_MISSES]);
	stat_u64(out, "delete_hits", w[WS_DELETE_HITS]);
	stat_u64(out, "incr_misses", w[WS_INCR_MISSES]);
	stat_u64(out, "incr_hits", w[WS_INCR_HITS]);
	stat_u64(out, "decr_misses", w[WS_DECR_MISSES]);
	stat_u64(out, "decr_hits", w[WS_DECR_HITS]);
	stat_u64(out, "cas_misses", w[WS_CAS_MISSES]);
	stat_u64(out, "cas_hits", w[WS_CAS_HITS]);
	stat_u64(out, "cas_badval", w[WS_CAS_BADVAL]);
	stat_u64(out, "touch_hits", w[WS_TOUCH_HITS]);
	stat_u64(out, "touch_misses", w[WS_TOUCH_MISSES]);
	stat_u64(out, "store_too_large", w[WS_STORE_TOO_LARGE]);
	stat_u64(out, "store_no_memory", w[WS_STORE_NO_MEMORY]);
	/* Never: larderd has no authentication (-S is refused). */
	stat_u64(out, "auth_cmds", 0);
	stat_u64(out, "auth_errors", 0);
	stat_u64(out, "bytes_read", w[WS_BYTES_READ]);
	stat_u64(out, "bytes_written", w[WS_BYTES_WRITTEN]);
	stat_u64(out, "input_bytes_moved", w[WS_INPUT_MOVED]);
	stat_u64(out, "limit_maxbytes", e[LARDER_STAT_CAPACITY_BYTES]);
	/* net/: at -c the listener still accepts (the spare descriptor, then
	 * "Too many open connections"), so listening is never disabled. */
	stat_u64(out, "accepting_conns", 1);
	stat_u64(out, "listen_disabled_num", 0);
	stat_u64(out, "time_in_listen_disabled_us", 0);
	stat_u64(out, "threads", (uint64_t)sh->threads);
	/* Never: larderd has no -R limit (a connection runs every complete
	 * request of a read, SERVER-L1). */
	stat_u64(out, "conn_yields", 0);
	stat_u64(out, "hash_power_level", floor_log2(e[LARDER_STAT_INDEX_SLOTS]));
	stat_u64(out, "hash_bytes", e[LARDER_STAT_INDEX_BYTES]);
	/* Allocations that failed: the engine's LARDER_ENOMEM on a store, and
	 * the server's connection and buffer allocations (each closes its
	 * connection). */
	stat_u64(out, "malloc_fails", w[WS_MALLOC_FAILS]);
	/* The index's bytes: a delete's drop out at once, as memcached's (used bytes
	 * count them until their grace period ends). */
	stat_u64(out, "bytes", e[LARDER_STAT_LIVE_BYTES]);
	stat_u64(out, "curr_items", e[LARDER_STAT_ENTRIES]);
	stat_u64(out, "total_items", w[WS_TOTAL_ITEMS]);
	stat_u64(out, "expired_unfetched", 0);
	stat_u64(out, "evicted_unfetched", 0);
	stat_u64(out, "evictions", e[LARDER_STAT_EVICTIONS]);
	stat_u64(out, "reclaimed", e[LARDER_STAT_EXPIRATIONS]);
	for (int s = 0; s < LARDER_STAT_COUNT; s++) {
		const char *name = larder_stat_name((enum larder_stat)s);
		if (name == NULL)
			continue;
		snprintf(buf, sizeof(buf), "larder_%s", name);
		stat_u64(out, buf, e[s]);
	}
	larderd_obuf_add(out, "END\r\n", 5);
}

/* memcached's fields, in its order, for the settings larderd has (docs/server.md). */
static void settings(struct larderd_exec *x, struct larderd_obuf *out)
{
	struct larderd_shared *sh = x->sh;
	char mask[16], backlog[16], port[16];

	/* Relaxed: see larderd_shared; a setting read on its own. */
	stat_u64(out, "maxbytes", atomic_load_explicit(&sh->maxbytes, memory_order_relaxed));
	stat_u64(out, "maxconns", (uint64_t)sh->maxconns);
	snprintf(port, sizeof(port), "%d", sh->port); /* -1: -p -1, as memcached shows it */
	stat_str(out, "tcpport", port);
	stat_u64(out, "udpport", 0);
	stat_str(out, "inter", sh->inter ? sh->inter : "NULL");
	stat_u64(out, "verbosity", (uint64_t)atomic_load_explicit(&sh->verbosity,
								   memory_order_relaxed));
	stat_str(out, "evictions", "on");
	stat_str(out, "domain_socket", sh->socket_path ? sh->socket_path : "NULL");
	snprintf(mask, sizeof(mask), "%o", sh->unix_mask);
	stat_str(out, "umask", mask);
	stat_str(out, "shutdown_command", sh->shutdown_enabled ? "yes" : "no");
	stat_u64(out, "num_threads", (uint64_t)sh->threads);
	larderd_obuf_str(out, "STAT stat_key_prefix ");
	larderd_obuf_add(out, &sh->detail.delimiter, 1);
	larderd_obuf_add(out, "\r\n", 2);
	stat_str(out, "detail_enabled", larderd_detail_on(&sh->detail) ? "yes" : "no");
	stat_str(out, "cas_enabled", "yes");
	snprintf(backlog, sizeof(backlog), "%d", sh->backlog);
	stat_str(out, "tcp_backlog", backlog);
	stat_str(out, "binding_protocol", sh->protocol == LARDERD_PROTO_ASCII ? "ascii" :
		 sh->protocol == LARDERD_PROTO_BINARY ? "binary" : "auto-negotiate");
	stat_str(out, "auth_enabled_sasl", "no");
	stat_str(out, "auth_enabled_ascii", "no");
	stat_u64(out, "item_size_max", sh->item_max);
	stat_str(out, "flush_enabled", sh->flush_disabled ? "no" : "yes");
	stat_str(out, "dump_enabled", sh->dump_disabled ? "no" : "yes");
	stat_u64(out, "idle_timeout", 0); /* idle connections are never closed */
	stat_str(out, "track_sizes", "no"); /* "stats sizes": disabled */
	stat_str(out, "ssl_enabled", "no"); /* -Z is refused */
	/* memcached's -e restart file; larderd's -e snapshot, the same role. */
	stat_str(out, "memory_file", sh->snapshot ? sh->snapshot : "(null)");
	larderd_obuf_add(out, "END\r\n", 5);
}

/* One class's figures; all zero where the engine refuses (it does not). */
static void class_figures(struct larderd_shared *sh, size_t c, uint64_t v[LARDER_CLASS_STAT_COUNT])
{
	if (larder_stats_size_class(sh->cache, c, v, LARDER_CLASS_STAT_COUNT) != LARDER_OK)
		memset(v, 0, sizeof(uint64_t) * LARDER_CLASS_STAT_COUNT);
}

static void stat_class(struct larderd_obuf *out, const char *prefix, size_t c, const char *name,
		       uint64_t v)
{
	char buf[64];

	snprintf(buf, sizeof(buf), "%s%zu:%s", prefix, c + 1, name);
	stat_u64(out, buf, v);
}

/* Both flush first, as general() does, so that stores answered before are counted. */
static void slabs(struct larderd_exec *x, struct larderd_obuf *out)
{
	uint64_t v[LARDER_CLASS_STAT_COUNT], malloced = 0, active = 0;

	larderd_ignore(larder_flush(x->sh->cache, STATS_FLUSH_MS));
	for (size_t c = 0; c < larder_size_class_count(); c++) {
		uint64_t pages, chunks;

		class_figures(x->sh, c, v);
		pages = v[LARDER_CLASS_PAGES];
		/* A page's header takes slots of its own: count the slots there are. */
		chunks = v[LARDER_CLASS_SLOTS_USED] + v[LARDER_CLASS_SLOTS_FREE];
		if (pages == 0)
			continue;
		active++;
		malloced += v[LARDER_CLASS_BYTES];
		stat_class(out, "", c, "chunk_size", v[LARDER_CLASS_SLOT_BYTES]);
		stat_class(out, "", c, "chunks_per_page", chunks / pages);
		stat_class(out, "", c, "total_pages", pages);
		stat_class(out, "", c, "total_chunks", chunks);
		stat_class(out, "", c, "used_chunks", v[LARDER_CLASS_SLOTS_USED]);
		stat_class(out, "", c, "free_chunks", v[LARDER_CLASS_SLOTS_FREE]);
		stat_class(out, "", c, "free_chunks_end", 0);
	}
	stat_u64(out, "active_slabs", active);
	stat_u64(out, "total_malloced", malloced);
	larderd_obuf_add(out, "END\r\n", 5);
}

static void items(struct larderd_exec *x, struct larderd_obuf *out)
{
	uint64_t v[LARDER_CLASS_STAT_COUNT];

	larderd_ignore(larder_flush(x->sh->cache, STATS_FLUSH_MS));
	for (size_t c = 0; c < larder_size_class_count(); c++) {
		class_figures(x->sh, c, v);
		if (v[LARDER_CLASS_SLOTS_USED] != 0)
			stat_class(out, "items:", c, "number", v[LARDER_CLASS_SLOTS_USED]);
	}
	larderd_obuf_add(out, "END\r\n", 5);
}

/* "stats detail on|off|dump", memcached's grammar (words after the first
 * ignored, as there): on and off switch the per-prefix counting (detail.c),
 * dump lists it. */
static void detail(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	struct larderd_tok *arg = &req->tok[2];
	struct larderd_detail *d = &x->sh->detail;
	bool on = req->ntok >= 3 && arg->n == 2 && memcmp(arg->p, "on", 2) == 0;

	if (on || (req->ntok >= 3 && arg->n == 3 && memcmp(arg->p, "off", 3) == 0)) {
		atomic_store_explicit(&d->on, on, memory_order_relaxed);
		larderd_obuf_line(out, "OK");
	} else if (req->ntok >= 3 && arg->n == 4 && memcmp(arg->p, "dump", 4) == 0) {
		larderd_detail_dump(d, out);
	} else {
		larderd_obuf_line(out, "CLIENT_ERROR usage: stats detail on|off|dump");
	}
}

/* memcached's slab class ids, 0..63: "stats cachedump" refuses the rest. */
#define MC_SLAB_CLASSES 64

/* "stats cachedump <class> <limit>": memcached's checks of its arguments, in
 * its order and words; arguments it takes list nothing (END), since there
 * is no per-class LRU whose cold end memcached lists (docs/server.md,
 * "admin-commands"; lru_crawler metadump lists every item). */
static void cachedump(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	uint32_t id, limit;

	if (x->sh->dump_disabled)
		larderd_obuf_line(out, "CLIENT_ERROR stats cachedump not allowed");
	else if (req->ntok < 4)
		larderd_obuf_line(out, "CLIENT_ERROR bad command line");
	else if (!larderd_strtoul32(&req->tok[2], &id) || !larderd_strtoul32(&req->tok[3], &limit))
		larderd_obuf_line(out, "CLIENT_ERROR bad command line format");
	else if (id >= MC_SLAB_CLASSES)
		larderd_obuf_line(out, "CLIENT_ERROR Illegal slab id");
	else
		larderd_obuf_add(out, "END\r\n", 5);
}

void larderd_exec_stats(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	struct larderd_tok *sub = &req->tok[1];

	if (req->ntok == 1) {
		general(x, out);
	} else if (sub->n == 5 && memcmp(sub->p, "reset", 5) == 0) {
		uint64_t cur[WS_COUNT], base[WS_COUNT];
		struct larderd_shared *sh = x->sh;
		sum_workers(sh, cur);
		pthread_mutex_lock(&sh->reset_lock);
		memcpy(base, sh->stat_base, sizeof(base));
		for (int s = 0; s < WS_COUNT; s++)
			sh->stat_base[s] = base[s] + cur[s];
		pthread_mutex_unlock(&sh->reset_lock);
		larderd_detail_clear(&sh->detail); /* as memcached's reset */
		larderd_obuf_line(out, "RESET");
	} else if (sub->n == 8 && memcmp(sub->p, "settings", 8) == 0) {
		settings(x, out);
	} else if (sub->n == 5 && memcmp(sub->p, "slabs", 5) == 0) {
		slabs(x, out);
	} else if (sub->n == 5 && memcmp(sub->p, "items", 5) == 0) {
		items(x, out);
	} else if (sub->n == 6 && memcmp(sub->p, "detail", 6) == 0) {
		detail(x, req, out);
	} else if (sub->n == 9 && memcmp(sub->p, "cachedump", 9) == 0) {
		cachedump(x, req, out);
	} else if (sub->n == 5 && memcmp(sub->p, "sizes", 5) == 0) {
		/* memcached's answer while its size histogram is off (the default):
		 * larderd keeps none. */
		larderd_obuf_str(out, "STAT sizes_status disabled\r\nEND\r\n");
	} else if ((sub->n == 5 && memcmp(sub->p, "conns", 5) == 0) ||
		   (sub->n == 8 && memcmp(sub->p, "extstore", 8) == 0)) {
		/* No connection list; no extstore (memcached's answer without one). */
		larderd_obuf_add(out, "END\r\n", 5);
	} else {
		larderd_obuf_line(out, "ERROR");
	}
}
