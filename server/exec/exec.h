/*
 * exec.h - runs parsed memcached requests against a larder cache.
 *
 * Owns: the item format inside the engine's value bytes, the CAS unique
 * generator, the per-worker statistics, and every reply that depends on the
 * cache. Uses only include/larder.h.
 *
 * Item format (docs/server.md): every engine value is
 *     [0..8)   CAS unique, little-endian u64
 *     [8..12)  client flags, little-endian u32
 *     [12]     meta bits: 1 = stale (md I / invalidated), 2 = win token sent,
 *              4 = the key was given in base64 (ms b), 8 = fetched
 *     [13..)   the client's data
 * so one engine entry holds everything memcached keeps per item, and a CAS
 * check-and-swap is one larder_replace_if_equals() of the whole bytes.
 *
 * CAS uniques: unique = stamp << 8 | worker id, where each worker's stamp is
 * max(its last stamp + 1, CLOCK_MONOTONIC in 16 ns units). Uniques never
 * repeat (the id differs between workers, the stamp grows within one), no
 * cache line is shared on the write path, and, like memcached's global
 * counter, a write that starts after another has finished gets a larger
 * unique, which "ms ... I" (set a stale value only over a newer one)
 * relies on. 56 bits of 16 ns last 36 years of uptime.
 *
 * Threads: one struct larderd_exec per worker thread, used only by it. Stats
 * fields are written by their worker only (relaxed load + store, no RMW
 * needed) and read by whichever worker answers "stats" (relaxed loads: each
 * counter is exact on its own, the set is not one instant, as memcached's).
 */
#ifndef LARDERD_EXEC_H
#define LARDERD_EXEC_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "larder.h"
#include "../proto/parse.h"
#include "../proto/reply.h"
#include "detail.h"

#define LARDERD_HDR 13
#define LARDERD_VERSION_STR "1.6.18-larder-0.1.0"

enum larderd_wstat {
	WS_CMD_GET, WS_CMD_SET, WS_CMD_FLUSH, WS_CMD_TOUCH, WS_CMD_META,
	WS_GET_HITS, WS_GET_MISSES,
	WS_DELETE_MISSES, WS_DELETE_HITS, WS_INCR_MISSES, WS_INCR_HITS,
	WS_DECR_MISSES, WS_DECR_HITS, WS_CAS_MISSES, WS_CAS_HITS, WS_CAS_BADVAL,
	WS_TOUCH_HITS, WS_TOUCH_MISSES, WS_TOTAL_ITEMS, WS_STORE_TOO_LARGE,
	WS_STORE_NO_MEMORY, WS_BYTES_READ, WS_BYTES_WRITTEN, WS_INPUT_MOVED, WS_MALLOC_FAILS,
	WS_COUNT
};

/* -B: which protocol a connection speaks. AUTO, memcached's default, picks
 * binary when the connection's first byte is 0x80 (the binary request
 * magic) and text otherwise. */
enum larderd_protocol { LARDERD_PROTO_AUTO, LARDERD_PROTO_ASCII, LARDERD_PROTO_BINARY };

/* Settings and process-wide state shared by all workers. */
struct larderd_shared {
	larder *cache;
	size_t item_max;
	_Atomic uint64_t maxbytes; /* cache_memlimit changes it (relaxed: a setting) */
	int threads;
	int maxconns;
	int port;
	int backlog;          /* -b, for stats settings */
	unsigned unix_mask;   /* -a, for stats settings */
	const char *inter;
	const char *socket_path;
	const char *snapshot; /* -e, absolute, or NULL: stats settings' memory_file */
	enum larderd_protocol protocol;
	time_t started;
	/* memcached's -A, -F, -X: set before the workers start (pthread_create
	 * publishes them), never written again. */
	bool shutdown_enabled, flush_disabled, dump_disabled;
	_Atomic int verbosity;
	/* Unix ms at which a delayed flush_all runs, 0 = none: every command and
	 * the main thread (once a second) check it (larderd_flush_due). A later
	 * flush_all replaces it, an immediate one cancels it. Written only under
	 * flush_lock, which the caller running a due flush holds until its
	 * clear is done (exec.c). */
	_Atomic uint64_t flush_at_ms;
	/* The end (Unix ms) of the second in which the last flush ran, 0 =
	 * none: what a command writes before it is flushed too, as memcached
	 * flushes (exec.c, larderd_flush_window). Written under flush_lock;
	 * a writer may also reset a past one to 0 (compare-exchange). */
	_Atomic uint64_t flush_end_ms;
	pthread_mutex_t flush_lock;
	/* The wall clock (Unix ms) that flush_all's times are read against;
	 * NULL: CLOCK_REALTIME. A test seam (test_flushdue.c); set before the
	 * workers start. */
	uint64_t (*flush_clock_ms)(void);
	/* Whether reads mark items fetched (exec.c): off until a client first
	 * asks about it (mg h, me), then on for the process's life. Relaxed:
	 * a switch; a read racing with it may or may not mark. */
	_Atomic bool track_fetched;
	/* Connection counters: written by workers with atomic RMW (any worker).
	 * paused_conns: connections not read because their unsent replies
	 * passed the high-water mark (server.c, SERVER-M3). */
	_Atomic uint64_t curr_conns, total_conns, rejected_conns, paused_conns;
	struct larderd_exec **workers;
	pthread_mutex_t reset_lock; /* guards stat_base */
	uint64_t stat_base[WS_COUNT];
	struct larderd_detail detail; /* "stats detail" (detail.c) */
};

struct larderd_exec {
	struct larderd_shared *sh;
	unsigned id;
	uint64_t cas_seq;
	/* scratch: old and new item bytes; c for mg's win token while a holds
	 * the value being sent */
	unsigned char *a, *b, *c;
	size_t a_cap, b_cap, c_cap;
	_Atomic uint64_t st[WS_COUNT];
};

enum larderd_exec_result {
	LARDERD_EXEC_DONE = 0,
	LARDERD_EXEC_SUSPEND = 1, /* multiget paused: output over high water */
	LARDERD_EXEC_CLOSE = 2,   /* quit */
	LARDERD_EXEC_NOMEM = 3,   /* could not allocate: close the connection */
};

/* The shared state's locks and "stats detail" table, before any worker's
 * larderd_exec_init; the caller sets the other fields. */
void larderd_shared_init(struct larderd_shared *sh, char prefix_delimiter);
/* Returns 0 or -1 (out of memory). */
int larderd_exec_init(struct larderd_exec *x, struct larderd_shared *sh, unsigned id);
void larderd_exec_fini(struct larderd_exec *x);

/*
 * Runs req and appends its reply to out. A multiget stops early when out->len
 * exceeds high_water and returns SUSPEND with req->keys advanced; call again
 * with the same req once the output drained.
 */
int larderd_exec(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out,
		 size_t high_water);

static inline void larderd_stat_add(struct larderd_exec *x, enum larderd_wstat s, uint64_t n)
{
	/* Relaxed: single writer; readers only need each counter's own value. */
	atomic_store_explicit(&x->st[s], atomic_load_explicit(&x->st[s], memory_order_relaxed) + n,
			      memory_order_relaxed);
}

struct larderd_binreq;

/*
 * Runs one binary-protocol request (binexec.c) and appends its response
 * frames to out: DONE, CLOSE (QUIT, or a request refused with close_after)
 * or NOMEM. Binary requests never suspend.
 */
int larderd_binexec(struct larderd_exec *x, const struct larderd_binreq *req,
		    struct larderd_obuf *out);

/* Frees what a suspended request holds (a metadump's cursor) when its
 * connection closes before it completes. */
void larderd_exec_abandon(struct larderd_req *req);

/*
 * memcached's exptime to an engine TTL: 0 never expires, 1..2592000 are
 * seconds from now, larger values a Unix time, negative ones the past. The
 * text protocol's exptimes are 32-bit signed (after memcached's wrap), the
 * binary protocol's unsigned.
 * Returns false when the item would be dead on arrival.
 */
bool larderd_exptime_to_ttl(int64_t exptime, uint64_t *ttl_ms);

#endif
