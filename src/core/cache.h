/*
 * core/cache.h - the cache object shared by the request paths and the maintainer.
 *
 * Field ownership (who writes, how it is read):
 *   - Set at open, read-only after: id, seed, limits, clock, listener,
 *     policy, shard_count and the shards' fixed fields (core/shard.h, which
 *     says who writes the rest of a shard).
 *   - capacity: written by larder_set_capacity(), read by the maintainer and
 *     writers (relaxed: a stale value only delays an eviction decision).
 *   - budget: bytes writers may still allocate before the overshoot bound;
 *     writers take chunks by CAS, the maintainer adds back what it frees.
 *   - room_seq, room_waiters, room_sleeping, wanted: the writers' wait for room
 *     (core/cache.c, larder__room_wait).
 *   - stop: set once by close (R-STOP), read by every maintainer.
 *   - pool: set at open, read-only after; a pooled cache's capacity is set
 *     only by its pool (larder__cache_set_capacity), which also reads budget.
 * Everything a maintainer alone touches lives in its struct larder__maint.
 */
#ifndef LARDER_CORE_CACHE_H
#define LARDER_CORE_CACHE_H

#include <pthread.h>
#include <stdint.h>

#include "larder.h"
#include "maint/events.h"
#include "core/shard.h"
#include "mem/slab.h"
#include "sync/atomic.h"

struct larder__maint;
struct larder__pool_member;

struct larder_config {
	uint64_t capacity;
	uint64_t expected_entries;
	unsigned shards; /* a power of two (larder_config_set_shards) */
	size_t max_key_bytes;
	size_t max_value_bytes;
	uint64_t default_ttl_ms;
	enum larder_policy policy;
	larder_clock_fn *clock;
	void *clock_ctx;
	larder_removal_fn *listener;
	void *listener_ctx;
	uint64_t seed;
	int seed_set;
	uint64_t write_wait_ms;
	enum larder_expiry expiry;
	int capacity_set;          /* larder_config_set_capacity() was called */
	struct larder_pool *pool;  /* holds a reference (pool/pool.c) */
	double pool_min_share, pool_max_share, miss_cost;
	size_t compress_min;          /* 0: compression off (core/compress.h) */
	unsigned compress_saving_pct; /* 0..99 */
	enum larder_dictionary dict_mode;
	unsigned char *dict;           /* LARDER_DICTIONARY_GIVEN: our copy */
	size_t dict_len;
};

struct larder {
	/* The shards' index roots (core/shard.h, table), side by side and
	 * first, so that a read loads its root with one indexed load, no
	 * offset to add (gcc does not fold one into an atomic load's address). */
	larder__atomic_uptr root[LARDER_SHARDS_MAX];
	/* Read by every operation; written only at open. */
	uint64_t id;
	/* shard_count - 1: a key's shard is hash & shard_mask. 32 bits: a store
	 * to a 64-bit word (a read section's) cannot alias it, so a read
	 * computes its shard once. */
	uint32_t shard_mask;
	/* Nonzero when a pool's probe watches this cache's requests: writers
	 * mark the entries of its widest sample (pool/probe.h PROBE-P6). Set
	 * by larder__pool_probe_create() at open, before any write. */
	uint32_t sample_marks;
	uint64_t seed;
	size_t max_key_bytes;
	size_t max_value_bytes;
	uint64_t default_ttl_ms; /* LARDER_TTL_NEVER: none */
	larder_clock_fn *clock;
	void *clock_ctx;
	uint64_t write_wait_ms;
	/* Expire-after-access: the default TTL, 0 when reads extend nothing
	 * (expire-after-write, or no default TTL), and the slack under which a
	 * read leaves a deadline as it is (core/cache.c, extend_on_read). */
	uint64_t access_ttl_ms;
	uint64_t access_slack_ms;
	/* Values of at least compress_min bytes (0: none) are stored
	 * compressed when that saves compress_saving_pct% (core/compress.h). */
	size_t compress_min;
	/* A put of a value this long or longer takes write_common()'s slow
	 * steps, compression and the probe's marks, or is too long:
	 * compress_min, SIZE_MAX when it is 0, 0 with sample_marks, at most
	 * max_value_bytes + 1. One test for the features that are off and the
	 * value's limit. Set at open, after the shards (and their probes). */
	size_t write_slow_from;
	/* larder_put's fast path (core/cache.c) in three compares, one per
	 * argument, each folding the fixed bounds of that path with this
	 * cache's limits and settings: it takes a key when key_len -
	 * PUT_FAST_KEY_MIN < put_fast_keys (16 and max_key_bytes), a value when
	 * value_len - PUT_FAST_VALUE_MIN < put_fast_values (64 and
	 * write_slow_from), a lifetime when ttl_ms + 1 < put_fast_ttls
	 * (LARDER_TTL_NEVER, and LARDER_TTL_DEFAULT without a default). Set at
	 * open with write_slow_from, from which they follow. */
	size_t put_fast_keys;
	size_t put_fast_values;
	uint64_t put_fast_ttls;
	unsigned compress_saving_pct;
	/* The compression dictionary and its sample (core/dict.h, DICT-D1..D3):
	 * dict is published once by open or the maintainer (R-DICT/A-DICT);
	 * sample_word and sample_done are the writers' reservations and
	 * finished copies into sample_buf and sample_sizes (set at open, the
	 * buffers freed by the maintainer once the sample is closed). */
	larder__atomic_uptr dict;
	larder__atomic_u64 sample_word;
	larder__atomic_u64 sample_done;
	unsigned char *sample_buf;
	size_t *sample_sizes;
	/* The maintainer's alone (core/dict.c): where the sample stands, and
	 * the reservations it took when it closed it. */
	int sample_phase;
	uint64_t sample_taken;

	/* Writers' shared counters: touched once per credit chunk or wait. */
	larder__atomic_i64 budget __attribute__((aligned(64)));
	larder__atomic_u64 capacity;
	larder__atomic_u64 wanted;
	larder__atomic_u32 room_seq;
	larder__atomic_u32 room_waiters; /* a count: a hint for the maintainers and the pool */
	/* 1 while a waiter may sleep on room_seq unwoken: set by each waiter
	 * before its futex wait, cleared by the one wake that wakes them all
	 * (WAKE-W3, larder__room_wait in maint/maintainer.c). */
	larder__atomic_u32 room_sleeping;
	/* SNAP-L6 (maint/resize.c): how many bulk writers run; no shard's
	 * maintainer shrinks its table while one does (R-BULK/A-BULK). */
	larder__atomic_u32 bulk_writers;
	/* Set once, by the first write or touch that gives an entry a
	 * deadline: larder_clear() reads the clock only after that. */
	larder__atomic_int deadlines_seen;

	larder__atomic_int stop __attribute__((aligned(64)));
	pthread_mutex_t admin_lock; /* serialises larder_set_capacity() */

	larder_removal_fn *listener;
	void *listener_ctx;
	/* How long one listener call may run before waiting writers give up:
	 * 1 s; a test seam may set it (relaxed, a setting). */
	larder__atomic_u64 stuck_ms;
	enum larder_policy policy;
	uint64_t expected_entries;
	/* Its place in a pool, or NULL; set at open, before the maintainer
	 * starts, and read-only after (pool/pool.c owns what it points to). */
	struct larder__pool_member *pool;
	unsigned shard_count;
	struct larder__shard shard[]; /* shard_count of them (core/shard.h) */
};

/* The shard that holds keys of this hash (docs/shards.md): the low bits,
 * which neither the index's home bucket nor its slot tags use
 * (index/table.h), so the choice is independent of both. */
static inline unsigned larder__shard_index(const struct larder *cache, uint64_t hash)
{
	return (unsigned)hash & cache->shard_mask;
}

static inline struct larder__shard *larder__shard_of(struct larder *cache, uint64_t hash)
{
	return &cache->shard[larder__shard_index(cache, hash)];
}

/* Overshoot bound: how far used bytes may exceed capacity. */
static inline uint64_t larder__overshoot_bound(uint64_t capacity)
{
	uint64_t floor = 4u << 20, pct = capacity / 100;
	return pct > floor ? pct : floor;
}

/* core/cache.c: whether a budget this low means memory is short (below
 * half the overshoot bound). */
int larder__budget_short(const struct larder *cache, int64_t budget);

/* The smallest capacity a cache ever has: larder_config_set_capacity() and
 * larder_set_capacity() refuse less, and a pool gives no member less
 * (MIN_CACHE_BYTES in pool/pool.c). larder_put's fast path leans on it
 * (core/cache.c: its largest entry is below this capacity's entry limit). */
#define LARDER__CAPACITY_MIN (64u * 1024u)

/* Bytes a single entry may charge: 1/8 of capacity. */
static inline uint64_t larder__entry_limit(uint64_t capacity)
{
	return capacity / 8;
}

/* One record of a bulk write (larder__put_batch): a key, its keyed hash
 * (larder__hash with the cache's seed), a value and a TTL as larder_put()
 * takes them. */
struct larder__put_rec {
	const void *key;
	size_t key_len;
	const void *value;
	size_t value_len;
	uint64_t ttl_ms;
	uint64_t hash;
};

/*
 * core/cache.c: the bulk insert of larder_load() (core/snapshot.c, SNAP-L5):
 * writes rec[0..n) in order, each as larder_put() would, on one operation
 * (the thread's handle looked up once, the maintainer counted and woken once
 * per batch, the hashes the caller's). charge_limit bounds the bytes they
 * charge as stored (compressed, in a compressing cache: known only once a
 * value is packed), *charged included (SNAP-L3; UINT64_MAX: no bound): a
 * record that would charge more than is left, or that is over the cache's
 * entry limit, is skipped and nothing is written for it. Each written
 * record's charge is added to *charged. Returns LARDER_OK, or the first
 * other error of a write (LARDER_ENOMEM, LARDER_EBUSY), which ends the
 * batch: the records before it stay written.
 */
int larder__put_batch(struct larder *cache, const struct larder__put_rec *rec, size_t n,
		      uint64_t charge_limit, uint64_t *charged);

/*
 * core/cache.c: starts loading the home buckets of n records about to be
 * written (by their hashes), so that a bulk writer (larder_load, SNAP-L5 in
 * core/snapshot.c) overlaps the misses of a batch. Only a hint: writes
 * nothing, may find a table that a resize replaces before the writes.
 */
void larder__prefetch_homes(struct larder *cache, const struct larder__put_rec *rec, size_t n);

/* core/cache.c: larder_set_capacity() without the pool check (the pool's own path). */
int larder__cache_set_capacity(struct larder *cache, uint64_t bytes);

/* The default clock: CLOCK_MONOTONIC in milliseconds. */
uint64_t larder__clock_default(void *ctx);

/* core/cache.c: new handles for the calling thread (slow path), one per
 * shard into out[0..shard_count); 0, or -1 on ENOMEM (nothing to undo). */
int larder__cache_handles_create(struct larder *cache, struct larder__handle **out);
/* core/cache.c: the thread that owned these handles (one per shard) exited
 * (called under the live-cache lock). */
void larder__cache_orphan_handles(struct larder *cache, struct larder__handle *const *handles);
/* maint_sleeping (core/shard.h): what the maintainer is doing (its futex word). */
enum { MAINT_AWAKE = 0, MAINT_IDLE = 1, MAINT_WINDOW = 2, MAINT_LAZY = 3 };
/* maint_started (core/shard.h): MAINT_STARTING until the maintainer has
 * marked its per-thread state as a maintainer's, then MAINT_RUNNING, or
 * MAINT_NO_STATE when it could not allocate that state. */
enum { MAINT_STARTING = 0, MAINT_RUNNING = 1, MAINT_NO_STATE = 2 };

#endif /* LARDER_CORE_CACHE_H */
