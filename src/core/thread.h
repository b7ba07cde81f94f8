/*
 * core/thread.h - per-thread state, found without a lock or a TLS call.
 *
 * Each thread that calls larder owns one struct larder__thread, taken on its
 * first call and given back by a pthread key destructor when it exits. It holds
 * the thread's reader slot (sync/reclaim.h), so a read section finds it
 * without a load; because a poll may read that slot at any time, a state
 * is never freed: an exiting thread's state waits, emptied, for the next
 * thread to start (GP-G4, THREAD-T4). It also finds the thread's handles
 * for a cache (maint/handle.h: one per shard of the cache, all created on
 * the thread's first call on it) in three steps: the cache of its previous call (a
 * compare and a load, inline), a small direct-mapped table from cache id to
 * handle, then the list of every handle it owns (both out of line).
 *
 * The only thread-local variable is one pointer with the initial-exec TLS
 * model: reading it is one instruction even when liblarder.so is dlopen'd by
 * a JVM or Node.js (glibc's static TLS surplus covers 8 bytes), where the
 * default model would call __tls_get_addr on every operation.
 *
 * Invariants:
 *   THREAD-T1. recent[] and nodes are touched only by the owning thread, except at
 *       thread exit, when the destructor hands the handles of a live cache to
 *       its shards' maintainers (larder__cache_orphan_handles) under the
 *       live-cache lock, so a cache cannot be closed half way through it.
 *   THREAD-T2. Cache ids are never reused, so a stale last or recent[] entry of a
 *       closed cache never matches a live one (a cache's address may be).
 *   THREAD-T3. scratch[] and the codec state (pack_stream, zstd_cctx,
 *       zstd_dctx) belong to the owning thread alone; a slot is busy from
 *       larder__scratch_take() to larder__scratch_give(), so nested users
 *       never share one; all are freed when it exits.
 *   THREAD-T4. A state, once made, is never freed; it is lent to one thread
 *       at a time, and to the next only once its reader slot is outside any
 *       section (its thread has exited), with every other field as a fresh
 *       state's. So the states made never outnumber the threads that ever
 *       used larder at once.
 */
#ifndef LARDER_CORE_THREAD_H
#define LARDER_CORE_THREAD_H

#include <stddef.h>
#include <stdint.h>

#include "larder.h"
#include "sync/reclaim.h"

struct larder;
struct larder__handle;

#define LARDER__RECENT_SLOTS 8
/* Scratch buffers kept per thread, and the most bytes one keeps between
 * uses; a bigger or a more deeply nested request gets its own allocation,
 * freed when it is given back. */
#define LARDER__SCRATCH_SLOTS 2
#define LARDER__SCRATCH_KEEP_BYTES ((size_t)1 << 20)

/*
 * A thread's scratch buffer (THREAD-T3): decompressed values for read callbacks,
 * compressed values on their way into an entry (core/compress.h). Taken and
 * given back by the owning thread only; busy while a taker holds it, so a
 * callback that reads or writes again (a nested call) gets another slot.
 */
struct larder__scratch {
	unsigned char *buf;
	size_t cap;
	int busy;
};

struct larder__thread_node {
	uint64_t cache_id;
	struct larder__thread_node *next;
	struct larder__handle *handles[]; /* one per shard of the cache, in shard order */
};

struct larder__thread {
	/* Registered once, when the state is made (THREAD-T4). On the line
	 * every read loads anyway (last_id, last_handle[]): written by the
	 * owner per read, read by polls about once a millisecond. */
	struct larder__reader reader;
	/* The cache of the previous call (0: none) and this thread's handles for
	 * it (a node's handles[]), set together by larder__thread_handles_slow(),
	 * which also copies them into last_handle[]: a read's fast path takes
	 * its shard's handle from there with one load. An operation that may
	 * call back into another cache (which replaces the copy) before it is
	 * done with its handles keeps last_handles instead (core/cache.c, op). */
	uint64_t last_id;
	struct larder__handle *const *last_handles;
	struct larder__handle *last_handle[LARDER_SHARDS_MAX];
	struct {
		uint64_t cache_id;
		struct larder__handle *const *handles;
	} recent[LARDER__RECENT_SLOTS];
	struct larder__thread_node *nodes; /* every handle this thread owns */
	/* Set once, by a cache's maintainer thread on itself before it calls
	 * any listener: writes made here (from a removal listener, into any
	 * cache) never wait (core/cache.c, wait_pass). */
	int maintainer;
	struct larder__scratch scratch[LARDER__SCRATCH_SLOTS]; /* THREAD-T3 */
	/* THREAD-T3: this thread's codec state (core/compress.c), each allocated
	 * on first use: the LZ4 compression stream (16 KiB), zstd's compression
	 * and decompression contexts (for values stored with a dictionary). */
	void *pack_stream;
	void *zstd_cctx;
	void *zstd_dctx;
	struct larder__thread *next_idle; /* the states no thread holds (THREAD-T4) */
};

extern __thread struct larder__thread *larder__tls
	__attribute__((tls_model("initial-exec")));

/* Gives the calling thread a state: an exited thread's, or a new one
 * (THREAD-T4). NULL when out of memory. */
struct larder__thread *larder__thread_create(void);

static inline struct larder__thread *larder__thread_self(void)
{
	struct larder__thread *t = larder__tls;
	return __builtin_expect(t != NULL, 1) ? t : larder__thread_create();
}

/* Finds or creates the thread's handles for the cache (one per shard) and
 * makes them the last ones (out of line). NULL when out of memory. */
struct larder__handle *const *larder__thread_handles_slow(struct larder__thread *t,
							  struct larder *cache, uint64_t cache_id);

/* True when the thread's last handles (t->last_handles, never NULL then,
 * so a caller that takes them tests nothing more: core/cache.c, op_begin)
 * are its handles for this cache; else larder__thread_handles_slow(). */
static inline int larder__thread_last_is(const struct larder__thread *t, uint64_t cache_id)
{
	return __builtin_expect(t->last_id == cache_id, 1);
}

/*
 * A buffer of at least bytes for the calling thread (THREAD-T3), creating its state
 * if needed: a free slot's (grown to bytes if it keeps no more than
 * LARDER__SCRATCH_KEEP_BYTES), else a fresh allocation. NULL on ENOMEM.
 * Give it back with larder__scratch_give(); NULL is ignored there.
 */
unsigned char *larder__scratch_take(size_t bytes);
void larder__scratch_give(unsigned char *buf);

/* The live-cache registry (THREAD-T1, THREAD-T2): a cache is registered from open to close. */
uint64_t larder__cache_id_register(struct larder *cache);
void larder__cache_id_unregister(uint64_t cache_id);

#endif /* LARDER_CORE_THREAD_H */
