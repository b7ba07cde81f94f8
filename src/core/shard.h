/*
 * core/shard.h - one shard of a cache: the physical plane that one
 * maintainer thread serves (docs/shards.md).
 *
 * A shard is everything a single maintainer owns or is reached through: the
 * index root, the maintainer (its state, thread, futex word), the slab
 * pages that its maintainer frees into, and the list of per-thread handles
 * whose rings it drains. The cache (core/cache.h) holds an array of them
 * (larder_config_set_shards; a key's shard is hash & (K - 1)), and what is
 * global to the cache (the byte budget, capacity, settings, statistics'
 * sum) stays in struct larder (docs/shards.md).
 *
 * Field ownership (who writes, how it is read):
 *   - *table: the index root. Written by larder_clear() (exchange) and by
 *     the maintainer at the end of a growth (CAS); read with acquire
 *     (A-ROOT). table itself is set at open.
 *   - cache, index: set at open, read-only after.
 *   - live_bytes: written by this shard's maintainer, read by the others
 *     and by larder_stats (LARDER_STAT_LIVE_BYTES).
 *   - maint_sleeping: the maintainer's futex word, and maint_wake_at, the
 *     cache-clock time its lazy sleep ends (maint/maintainer.c).
 *   - grow_wanted: a table where a writer found no free slot in reach (a
 *     hint, exchanged to 0 by the maintainer); reserve_table and
 *     reserve_entries: a bulk writer's ask for room (SNAP-L6, hints).
 *   - handles: list of per-thread handles; pushed by any thread with CAS,
 *     unlinked and freed only by the maintainer holding handles_lock.
 *   - listener_calls: removal listener calls begun and ended by this
 *     shard's maintainer (odd while one runs), read by its waiting writers;
 *     relaxed, compared only.
 *   - slab: its own locking (mem/slab.h); its maintainer is the only one
 *     that frees into it.
 *   - maint, thread: set at open, read-only after; maint_started: the
 *     maintainer's start (R-START / A-START, maint/maintainer.c).
 */
#ifndef LARDER_CORE_SHARD_H
#define LARDER_CORE_SHARD_H

#include <pthread.h>
#include <stdint.h>

#include "mem/slab.h"
#include "sync/atomic.h"

struct larder;
struct larder__maint;

struct larder__shard {
	/* The index root: the cache's root[index] (core/cache.h), where the
	 * read path finds it without computing the shard's address. */
	larder__atomic_uptr *table;
	struct larder *cache;
	unsigned index; /* in the cache's array */

	/* The live bytes of this shard's entries as its maintainer last
	 * counted them (MAINT-M4), on a line of its own: stored by that
	 * maintainer once per pass, read by the others (relaxed: a hint for
	 * which shard evicts). */
	larder__atomic_u64 live_bytes __attribute__((aligned(64)));

	/* Written by the maintainer per sleep, read by writers per post. */
	larder__atomic_u32 maint_sleeping __attribute__((aligned(64)));
	larder__atomic_u64 maint_wake_at; /* cache clock, ms; published by WAKE-W4 with MAINT_LAZY */
	larder__atomic_uptr grow_wanted;
	/* SNAP-L6 (maint/resize.c): a bulk writer's reserve, the table it asks
	 * to grow and the entries it should hold (hints, like grow_wanted; the
	 * maintainer clears reserve_table once it answered, R-RESV/A-RESV). */
	larder__atomic_uptr reserve_table;
	larder__atomic_u64 reserve_entries;

	larder__atomic_uptr handles __attribute__((aligned(64)));
	pthread_mutex_t handles_lock; /* stats walks vs the maintainer freeing handles */
	larder__atomic_u64 listener_calls;
	struct larder__maint *maint;
	pthread_t thread;
	larder__atomic_u32 maint_started;
	struct larder__slab slab;
} __attribute__((aligned(64)));

#endif /* LARDER_CORE_SHARD_H */
