/*
 * larder.h - the public C API of larder, a concurrent in-memory cache engine.
 *
 * This is the only installed header. Everything a front door needs (the C
 * library user, larderd, the Java and Node bindings, a multi-cache pool) is
 * here; nothing about the engine's layout is.
 *
 * Threads
 *   Any number of threads may call any function on one cache at once, with no
 *   registration. A thread's per-thread state is created on its first call
 *   into larder, and its state for a cache (event queues, allocation cursor:
 *   about 25 KiB) on its first call on that cache; both are released when the
 *   thread exits. Those first calls allocate, so any call on a cache - reads
 *   included, which otherwise never allocate - may fail with LARDER_ENOMEM
 *   when it is the thread's first on that cache and the allocation fails;
 *   nothing else changes then, and the next call tries again. (The
 *   statistics calls do not fail for it: they report what they can.)
 *
 * Return values
 *   Every fallible call returns LARDER_OK (0), a positive documented status
 *   (LARDER_MISS, LARDER_EXISTS, LARDER_MISMATCH) or a negative LARDER_E* error
 *   code; larder_strerror() names both. No call ever aborts or exits the
 *   process on bad input or on out-of-memory.
 *   When several results apply, the first of this list comes back:
 *     1. LARDER_EINVAL: a NULL cache or key, an empty key, a NULL pointer
 *        with a non-zero length (value, expected value, buffer), or another
 *        required pointer NULL (value_len, ttl_ms, fn);
 *     2. LARDER_EKEYSIZE;
 *     3. LARDER_EVALSIZE: the value over max_value_bytes, then the whole
 *        entry over 1/8 of the capacity;
 *     4. LARDER_ENOMEM or LARDER_EBUSY: a write reserves its room before it
 *        looks at the key, so these come before the key's status (and a
 *        write that ends with that status may have mapped the page its
 *        room came from: it stores, charges and counts nothing, and the
 *        page serves the next writes of its size);
 *     5. the key's status: LARDER_MISS, LARDER_EXISTS, LARDER_MISMATCH, and
 *        for a read LARDER_EBUFSIZE.
 *   An expected value (the *_if_equals calls) longer than max_value_bytes is
 *   no error: no stored value can equal it, so the result is LARDER_MISMATCH
 *   (or LARDER_MISS for an absent key). Under LARDER_EBUFSIZE nothing was
 *   read: no hit is counted and no deadline extended.
 *
 * Keys and values
 *   A key is 1..max_key_bytes bytes (at most LARDER_KEY_LIMIT), a value
 *   0..max_value_bytes bytes. Both are copied into the cache on a write; the
 *   caller's buffers are never retained.
 *
 * Read sections and callbacks
 *   larder_get_with() and larder_get_batch() run the caller's callback on the
 *   stored bytes in place, inside a read section: the bytes stay valid and
 *   unchanged until the callback returns, even if another thread overwrites or
 *   removes the key meanwhile. A callback must be short (it delays the reuse
 *   of memory) and must not keep the pointer after it returns. A value stored
 *   compressed (larder_config_set_compression) is handed over decompressed,
 *   in a buffer of the calling thread, with the same rules.
 *
 * Re-entrant calls (callbacks and removal listeners calling into larder)
 *   A read callback and a removal listener may call every function on every
 *   cache, the cache they were called for included, in any nesting and in
 *   cycles (X's listener writing into Y while Y's writes into X), with one
 *   exception: neither may close a cache it was called for (a listener's
 *   close would wait for the thread it runs on; a callback's would free the
 *   bytes it is reading). What changes inside them is only how writes wait:
 *   - In a read callback, a write never waits for memory: at the memory
 *     bound it fails at once with LARDER_EBUSY (memory freed by the cache
 *     could be waiting for this very read section). It may wait, as any
 *     write, for the maintainer to take its queued events or grow the index.
 *   - In a removal listener (on a maintainer thread), a write never waits
 *     for anything: at the memory bound, when the index is full to its
 *     last slot (its maintainer has not grown it yet), or for a new key
 *     while the index shrinks once the room the shrink set aside for such
 *     keys (a quarter of the smaller index) is taken, or while it grows
 *     once the larger index has no room beyond what the smaller one may
 *     still hand it, it fails at once with LARDER_EBUSY; when its thread's event queue is
 *     full it queues the event in an overflow (allocated: LARDER_ENOMEM if
 *     that fails; LARDER_EBUSY when 65,536 of this thread's events wait for
 *     a maintainer that is that far behind) instead of waiting. So no
 *     maintainer ever waits for another, and listeners that write into each
 *     other's caches cannot stall them. A listener's writes into its own
 *     cache are applied by its maintainer's next pass, and their removals
 *     reach the listener again (a listener that rewrites every key it hears
 *     of never stops).
 *   Statistics tell each LARDER_EBUSY's cause (LARDER_STAT_BUSY_*).
 */
#ifndef LARDER_H
#define LARDER_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define LARDER_API __attribute__((visibility("default")))
#define LARDER_MUST_USE __attribute__((warn_unused_result))
#else
#define LARDER_API
#define LARDER_MUST_USE
#endif

#define LARDER_VERSION_MAJOR 0
#define LARDER_VERSION_MINOR 1
#define LARDER_VERSION_PATCH 0

/* Results. Statuses are >= 0, errors < 0. */
enum larder_status {
	LARDER_OK = 0,
	LARDER_MISS = 1,     /* the key is absent or expired */
	LARDER_EXISTS = 2,   /* put_if_absent: a live value is already there */
	LARDER_MISMATCH = 3, /* *_if_equals: the current value differs */
};

enum larder_error {
	LARDER_EINVAL = -1,   /* NULL where a pointer is required, empty key, bad setting */
	LARDER_EKEYSIZE = -2, /* key longer than the cache's max_key_bytes */
	LARDER_EVALSIZE = -3, /* value over max_value_bytes, or entry over the entry limit */
	LARDER_ENOMEM = -4,   /* the operating system refused memory */
	LARDER_EBUFSIZE = -5, /* the caller's buffer is too small; nothing was copied */
	LARDER_EBUSY = -6,    /* over the memory bound and no room was freed in time, or the
			       * maintainer is stuck in a removal listener (see larder_put) */
	LARDER_ETHREAD = -7,  /* the maintainer thread could not be started */
	LARDER_ESYS = -8,     /* another system call failed; errno has the cause */
	LARDER_ESTATE = -9,   /* wrong state: a closed pool, a pool with open caches, or a
			       * pooled cache's capacity (the pool's to set) */
	LARDER_EFORMAT = -10, /* not a larder snapshot, or one of a version this build cannot read */
	LARDER_ECORRUPT = -11, /* a snapshot that is truncated or fails its checksum */
};

/* Why an entry left the cache; reported to the removal listener. */
enum larder_cause {
	LARDER_CAUSE_EXPLICIT = 0, /* larder_remove*() */
	LARDER_CAUSE_REPLACED = 1, /* a write stored a new value for the key */
	LARDER_CAUSE_EXPIRED = 2,  /* its time to live ran out (also at larder_clear()) */
	LARDER_CAUSE_EVICTED = 3,  /* the policy chose it to keep within capacity */
	LARDER_CAUSE_CLEARED = 4,  /* larder_clear(), of an entry live at the call */
};

/* Eviction policies; LARDER_POLICY_DEFAULT picks the recommended one. */
enum larder_policy {
	LARDER_POLICY_DEFAULT = 0,
	LARDER_POLICY_S3FIFO = 1,
	LARDER_POLICY_FIFO = 2,
	LARDER_POLICY_LRU = 3,
	LARDER_POLICY_WTINYLFU = 4,
	LARDER_POLICY_ARC = 5,
	/* W-TinyLFU whose window size follows seven small simulations run on a
	 * sample of the keys (docs/policies.md has where it wins and loses). */
	LARDER_POLICY_WTINYLFU_TUNED = 6,
	/* S3-FIFO whose small queue's share (1% to 50% of the cache) follows
	 * eight small simulations run on a sample of the keys; the default
	 * (docs/policies.md has why). */
	LARDER_POLICY_S3FIFO_TUNED = 7,
};

/*
 * Time to live, in milliseconds, for writes and touch: LARDER_TTL_DEFAULT
 * takes the cache's default, LARDER_TTL_NEVER means the entry never expires.
 * Any other value is a lifetime counted from the moment of the call (the
 * cache clock's reading in that call). A lifetime that would carry the
 * deadline past the clock's range saturates: the deadline is then
 * UINT64_MAX - 1 on the cache clock, a finite one (larder_ttl_remaining()
 * reports what is left of it), so only LARDER_TTL_NEVER means "none";
 * UINT64_MAX - 1 saturates like any other large value.
 */
#define LARDER_TTL_DEFAULT ((uint64_t)0)
#define LARDER_TTL_NEVER UINT64_MAX

/* The hard ceiling on max_key_bytes (the entry stores the length in 16 bits). */
#define LARDER_KEY_LIMIT 65535u
/* The hard ceiling on max_value_bytes. */
#define LARDER_VALUE_LIMIT ((size_t)1 << 30)

typedef struct larder larder;
typedef struct larder_config larder_config;

/*
 * Clock: milliseconds on a monotonic scale. The default reads
 * CLOCK_MONOTONIC. Called on any thread (the callers' and the maintainer's),
 * only for operations that involve a TTL; must be thread-safe and should
 * never go backwards. One that does is tolerated, not honoured: nothing
 * breaks, and every call judges deadlines by its own reading (a read never
 * returns a value at or past the deadline by that reading, and a deadline
 * set is that reading plus the TTL), but the maintainer keeps time by the
 * latest reading it has seen, so an entry may be reclaimed (reported
 * EXPIRED) by that later time while a caller's earlier reading would still
 * find it live: after a step back, entries may leave sooner than their
 * deadlines say by the current reading, never later than one pass after
 * the clock passes them again.
 */
typedef uint64_t larder_clock_fn(void *ctx);

/*
 * Removal listener: called once for each entry that leaves the cache, on the
 * maintainer thread of the entry's shard (never on a caller's), some time
 * after the removal became visible. A cache of one shard (the default) has
 * one maintainer, so calls never overlap; with more shards
 * (larder_config_set_shards) calls for different shards may run
 * concurrently, and the listener must be thread-safe. key and value are valid only during the call. It
 * may call into larder, on this cache and others ("Re-entrant calls" above:
 * its writes never wait), and must return: the maintainer does nothing else
 * meanwhile, so a listener that blocks (on a lock a writer of this cache
 * holds, say) makes that cache's writers fail with LARDER_EBUSY after 1 s
 * once their event queues fill (a ring of 512 events per thread and a
 * spill of 4,096 more; LARDER_STAT_BUSY_EVENTS).
 */
typedef void larder_removal_fn(void *ctx, const void *key, size_t key_len, const void *value,
			       size_t value_len, enum larder_cause cause);

/* Zero-copy read: value points at the stored bytes, valid during the call. */
typedef void larder_read_fn(void *ctx, const void *value, size_t value_len);

/* Batch read: called once per key found, with the key's index in the batch. */
typedef void larder_batch_fn(void *ctx, size_t index, const void *value, size_t value_len);

/* ---- Configuration ------------------------------------------------------ */

/*
 * Creates a configuration with working defaults: capacity 64 MiB, 4096
 * expected entries, max key 250 bytes, max value 1 MiB, no default TTL,
 * LARDER_POLICY_DEFAULT (S3-FIFO with its small queue tuned), CLOCK_MONOTONIC,
 * no listener, random hash seed, write wait 1000 ms, one shard,
 * expire after write.
 * Allocates. Returns LARDER_OK, LARDER_EINVAL (out is NULL) or LARDER_ENOMEM.
 * A config may be reused for several caches and destroyed any time after
 * larder_open() returns.
 */
LARDER_API LARDER_MUST_USE int larder_config_create(larder_config **out);
LARDER_API void larder_config_destroy(larder_config *config);

/*
 * The setters never allocate or block. Each returns LARDER_OK or
 * LARDER_EINVAL (config NULL or the value out of its range).
 */
/*
 * Bytes of entries (headers, keys, values and slot rounding): 64 KiB to
 * 2^62 - 1. A budget, not a reservation: nothing is allocated for it up
 * front, so a capacity larger than the machine is accepted (memory then
 * runs out first: writes fail with LARDER_ENOMEM, or the system does).
 */
LARDER_API LARDER_MUST_USE int larder_config_set_capacity(larder_config *config,
							  uint64_t bytes);
/*
 * A sizing hint for the index, 0 to 2^40 (0 and small values give the
 * smallest index, 1,024 buckets); it grows past this as needed, and never
 * shrinks below what this asked for. larder_open() allocates the index for
 * it: a hint too large for the machine makes larder_open() fail with
 * LARDER_ENOMEM.
 */
LARDER_API LARDER_MUST_USE int larder_config_set_expected_entries(larder_config *config,
								  uint64_t entries);
/* 1..LARDER_KEY_LIMIT. */
LARDER_API LARDER_MUST_USE int larder_config_set_max_key_bytes(larder_config *config,
							       size_t bytes);
/* 0..LARDER_VALUE_LIMIT. */
LARDER_API LARDER_MUST_USE int larder_config_set_max_value_bytes(larder_config *config,
								 size_t bytes);
/* Lifetime for writes given LARDER_TTL_DEFAULT; LARDER_TTL_NEVER (the default) or 0 = none. */
LARDER_API LARDER_MUST_USE int larder_config_set_default_ttl_ms(larder_config *config,
								uint64_t ttl_ms);
LARDER_API LARDER_MUST_USE int larder_config_set_policy(larder_config *config,
							enum larder_policy policy);
/* fn NULL restores the default clock. */
LARDER_API LARDER_MUST_USE int larder_config_set_clock(larder_config *config,
						       larder_clock_fn *fn, void *ctx);
/* fn NULL removes the listener. */
LARDER_API LARDER_MUST_USE int larder_config_set_removal_listener(larder_config *config,
								  larder_removal_fn *fn,
								  void *ctx);
/* Fixes the hash seed (tests, reproducible runs); by default it is random per cache. */
LARDER_API LARDER_MUST_USE int larder_config_set_hash_seed(larder_config *config,
							   uint64_t seed);
/*
 * How long a write may wait for the maintainer to make room when the cache is
 * at its overshoot bound, before failing with LARDER_EBUSY: 0 (never wait)
 * to 3,600,000 (an hour). The default is 1000. It bounds the wait for
 * memory only: see larder_put for the waits for the maintainer itself.
 */
LARDER_API LARDER_MUST_USE int larder_config_set_write_wait_ms(larder_config *config,
							       uint64_t ms);

/*
 * Shards: how many maintainer threads share the cache's writes, K (a power
 * of two, 1 to LARDER_SHARDS_MAX; 1 by default). A key's shard is chosen by
 * its hash; each shard has its own index, eviction policy (fed 1/K of the
 * keys with 1/K of the capacity), TTL wheel and maintainer thread, so K
 * shards apply writes on up to K cores; the capacity, its bound and the
 * statistics stay the cache's. Costs: a few instructions per operation, K
 * event rings per thread that uses the cache (about 25 KiB each, made on
 * its first call), K byte credits and up to K partly filled slab pages per
 * size class per writing thread, and a slightly lower hit ratio
 * (docs/shards.md: within 0.2 points of one shard up to K = 4 with the
 * default policy on the public traces). With K > 1 the removal listener
 * runs on K maintainer threads and may be called concurrently with itself.
 * A cache in a pool (larder_config_set_pool) may have several shards:
 * the pool estimates its curve from shard 0's requests, a hash sample of
 * the cache's (docs/pool.md, "A pooled cache of several shards").
 */
#define LARDER_SHARDS_MAX 64u
LARDER_API LARDER_MUST_USE int larder_config_set_shards(larder_config *config,
							unsigned shards);

/*
 * When an entry's lifetime counts from (LARDER_EXPIRE_AFTER_WRITE by default).
 *
 * LARDER_EXPIRE_AFTER_ACCESS: a value read that finds a live entry -
 * larder_get(), larder_get_with(), larder_get_batch(), on the calling thread,
 * before it returns - moves the entry's deadline to (the read's cache-clock
 * time + the cache's default TTL), unless the deadline is already at least
 * that minus the slack (default TTL / 64, at most 1000 ms): a key read many
 * times in a row stores its deadline once per slack, not once per read.
 * So after a read at time t the entry lives at least until t + TTL - slack,
 * and an entry read again before its deadline never expires. A read never
 * moves a deadline earlier (an explicit, longer ttl_ms stays) and leaves an
 * entry with no deadline alone (written or touched with LARDER_TTL_NEVER).
 * larder_peek(), larder_contains(), larder_ttl_remaining(), cursors and
 * conditional writes' comparisons extend nothing. The one
 * lifetime used for every extension is the default TTL
 * (larder_config_set_default_ttl_ms); without one, nothing is extended. A
 * write with an explicit ttl_ms uses it as the entry's first deadline, and
 * larder_touch() sets a deadline as usual (shorter ones too): of a read and
 * a touch, the later call wins; a read and a touch that race end with
 * either deadline. A read that races with the deadline itself (the clock
 * reaches it between the read's clock reading and its store) returns the
 * value but may not keep the entry.
 */
enum larder_expiry {
	LARDER_EXPIRE_AFTER_WRITE = 0,
	LARDER_EXPIRE_AFTER_ACCESS = 1,
};
LARDER_API LARDER_MUST_USE int larder_config_set_expiry(larder_config *config,
							enum larder_expiry expiry);

/*
 * Value compression (LZ4, and zstd with a shared dictionary: see
 * larder_config_set_compression_dictionary; docs/compression.md); off by
 * default.
 * min_value_bytes: values of at least this many bytes are compressed by the
 * writer (0..LARDER_VALUE_LIMIT; 0 turns compression off). A compressed
 * value is stored so only when its stored form (the compressed block plus a
 * 4-byte length) is at least min_saving_percent (0..99) smaller than the
 * value and strictly shorter; else it is stored raw. Errors: LARDER_EINVAL
 * (config NULL, a value out of its range).
 * What changes for a cache that compresses:
 *   - An entry charges its stored bytes, so the memory bound counts the
 *     compressed size, and an entry's limit (1/8 of capacity, see
 *     LARDER_EVALSIZE) applies to the stored size; max_value_bytes still
 *     applies to the value's own length.
 *   - Every call that reports, copies or compares a value sees the original
 *     bytes and length: larder_get() (its LARDER_EBUFSIZE and *value_len use
 *     the original length), the *_if_equals comparisons, the callbacks of
 *     larder_get_with(), larder_get_batch() and larder_iter_next(), the
 *     removal listener, and larder_save() (snapshots hold plain values, so
 *     any cache can load them).
 *   - The callbacks' bytes of a compressed value are decompressed into a
 *     buffer of the calling thread, not the stored bytes: each such read
 *     costs the decompression (roughly a memcpy of the value plus the
 *     codec's decoding, several times a raw read of 500 bytes with a
 *     dictionary; docs/compression.md has the figures). The thread keeps up to 2 such buffers of at most 1 MiB each
 *     (allocated on first use, freed at thread exit); a larger value, or a
 *     read nested 3 deep in callbacks, allocates for the call and frees
 *     after it. Such an allocation can fail: the read then returns
 *     LARDER_ENOMEM and does not call the callback for that value (a
 *     removal listener is called with value NULL and value_len 0 then).
 * A write never fails for compression: when its scratch buffer cannot be
 * allocated the value is stored raw.
 */
LARDER_API LARDER_MUST_USE int larder_config_set_compression(larder_config *config,
							     size_t min_value_bytes,
							     unsigned min_saving_percent);

/*
 * The dictionary of a compressing cache (docs/compression.md, "The dictionary").
 * Short values (a few hundred bytes of JSON) barely compress alone; against
 * a dictionary of what such values share they shrink 2-3x. A cache has at
 * most one dictionary in its life; values written before it exists are
 * compressed with LZ4 alone and stay so until rewritten.
 *   LARDER_DICTIONARY_TRAIN (the default): the cache copies its first
 *     compressible values (up to 256 KiB) into a sample, and its maintainer
 *     thread trains a 16 KiB zstd dictionary from it once (tens of
 *     milliseconds of that thread, once); from then on values are
 *     compressed with zstd against it, unless it did not compress its
 *     sample by min_saving_percent (incompressible values): then the cache
 *     keeps LZ4 alone. dict must be NULL, dict_len 0.
 *   LARDER_DICTIONARY_GIVEN: dict_len bytes (1..1 MiB) at dict, copied: a
 *     zstd dictionary (zstd --train, ZDICT) or raw sample content; used
 *     from the first write.
 *   LARDER_DICTIONARY_NONE: LZ4 alone, each value by itself. dict must be
 *     NULL, dict_len 0.
 * The dictionary's memory (its bytes plus zstd's prepared tables, about
 * 100-250 KiB for 16 KiB) and each calling thread's zstd contexts (allocated
 * on a thread's first compression or decompression with a dictionary,
 * freed at its exit) are outside the cache's capacity, like the index. A
 * read of a value stored with the dictionary, larder_get() included, may
 * allocate its thread's decompression context the first time: it returns
 * LARDER_ENOMEM if that fails. Errors: LARDER_EINVAL (config NULL, an
 * unknown mode, dict and dict_len not as the mode requires),
 * LARDER_ENOMEM (the copy). Given bytes that carry zstd's dictionary magic
 * number but do not parse as a dictionary are refused by larder_open()
 * (LARDER_EINVAL), not here.
 */
enum larder_dictionary {
	LARDER_DICTIONARY_TRAIN = 0,
	LARDER_DICTIONARY_GIVEN = 1,
	LARDER_DICTIONARY_NONE = 2,
};
#define LARDER_DICTIONARY_MAX_BYTES ((size_t)1 << 20)
LARDER_API LARDER_MUST_USE int larder_config_set_compression_dictionary(
	larder_config *config, enum larder_dictionary mode, const void *dict, size_t dict_len);

/* ---- Lifecycle ---------------------------------------------------------- */

/*
 * Opens a cache and starts its maintainer thread (and waits until it runs).
 * Allocates: the cache, its index (sized by expected_entries), its policy.
 * On success *out owns the cache; on failure *out is NULL and nothing is
 * leaked. Errors: LARDER_EINVAL (out or config NULL; a given compression
 * dictionary that carries zstd's dictionary magic but does not parse; a
 * pooled config with a capacity, or min shares that
 * would sum to over 1, or a pool that cannot give it 64 KiB: see
 * larder_config_set_pool), LARDER_ENOMEM (also when the new thread cannot
 * allocate its own per-thread state), LARDER_ETHREAD (the thread could not
 * be created), and for a pooled cache LARDER_ESTATE (the pool is closed)
 * or LARDER_EBUSY (no first capacity within the write wait).
 */
LARDER_API LARDER_MUST_USE int larder_open(larder **out, const larder_config *config);

/*
 * Stops the maintainer and frees every byte the cache holds. The caller
 * guarantees no other thread uses the cache during or after the call. The
 * removal listener is not called for the entries still present. NULL is a
 * no-op.
 */
LARDER_API void larder_close(larder *cache);

/* ---- Reads: never block, never allocate, never take a lock --------------- */
/* (A callback's read of a compressed value may allocate its buffer, and a
 * thread's first read of a value compressed with a dictionary its zstd
 * context: see larder_config_set_compression and
 * larder_config_set_compression_dictionary.) */

/*
 * Copies the value of key into buf. On LARDER_OK, *value_len is the value's
 * length. When buf_len is too small, copies nothing, sets *value_len to the
 * length needed and returns LARDER_EBUFSIZE. buf may be NULL when buf_len is 0.
 * Returns LARDER_OK, LARDER_MISS, LARDER_EBUFSIZE, LARDER_EINVAL,
 * LARDER_EKEYSIZE, or LARDER_ENOMEM (a thread's first call: see Threads; or
 * its first read of a value compressed with a dictionary: see
 * larder_config_set_compression_dictionary).
 */
LARDER_API LARDER_MUST_USE int larder_get(larder *cache, const void *key, size_t key_len,
					  void *buf, size_t buf_len, size_t *value_len);

/*
 * larder_get() without the side effects of a read: copies the value the same
 * way (same results, same LARDER_EBUFSIZE contract, compressed values handed
 * over decompressed) but records no hit or miss (statistics, the eviction
 * policy's sample and the entry's accessed mark are untouched) and extends
 * no deadline, even with LARDER_EXPIRE_AFTER_ACCESS. For inspection (a
 * binding's peek, a debugger) that must not change what the cache keeps.
 */
LARDER_API LARDER_MUST_USE int larder_peek(larder *cache, const void *key, size_t key_len,
					   void *buf, size_t buf_len, size_t *value_len);

/*
 * What a read does to the entry, without the read: marks it accessed for
 * the eviction policy and, with LARDER_EXPIRE_AFTER_ACCESS, moves its
 * deadline exactly as larder_get() would (the default TTL from now, never
 * earlier, never onto an entry without one); copies nothing and records no
 * hit or miss. For a binding's access that is not a get, such as a
 * put-if-absent that finds the key, which Caffeine counts as an access but
 * not as a hit: one lookup, so no write between a look and a touch can have
 * its deadline moved. Returns LARDER_OK, LARDER_MISS, LARDER_EINVAL,
 * LARDER_EKEYSIZE or LARDER_ENOMEM (a thread's first call: see Threads).
 */
LARDER_API LARDER_MUST_USE int larder_access(larder *cache, const void *key, size_t key_len);

/*
 * Calls fn(ctx, value, value_len) on the stored bytes in place when the key is
 * present; fn is not called on a miss. See "Read sections" above.
 * Returns LARDER_OK, LARDER_MISS, LARDER_EINVAL, LARDER_EKEYSIZE or
 * LARDER_ENOMEM (a thread's first call: see Threads; or a compressed value
 * with no buffer to decompress into, fn not called: see
 * larder_config_set_compression).
 */
LARDER_API LARDER_MUST_USE int larder_get_with(larder *cache, const void *key, size_t key_len,
					       larder_read_fn *fn, void *ctx);

/*
 * Looks up count keys in one call (hashing all of them and prefetching their
 * index buckets first) and calls fn(ctx, i, value, value_len) for each key i
 * that is present, in index order, inside one read section. Keys that are
 * absent, expired or invalid (empty, too long, NULL) are skipped.
 * Returns the number of keys found (>= 0), LARDER_EINVAL (cache, keys,
 * key_lens or fn NULL, whatever count is: count 0 with valid arrays returns 0)
 * or LARDER_ENOMEM (a thread's first call: see Threads; or a compressed value
 * with no buffer to decompress into: fn was called for the keys before it,
 * in index order, and for none after).
 */
LARDER_API LARDER_MUST_USE long larder_get_batch(larder *cache, size_t count,
						 const void *const keys[], const size_t key_lens[],
						 larder_batch_fn *fn, void *ctx);

/* Returns LARDER_OK if the key is present, LARDER_MISS, LARDER_EINVAL, LARDER_EKEYSIZE or
 * LARDER_ENOMEM (a thread's first call: see Threads). Extends no deadline. */
LARDER_API LARDER_MUST_USE int larder_contains(larder *cache, const void *key, size_t key_len);

/*
 * Sets *ttl_ms to the key's remaining lifetime (LARDER_TTL_NEVER if it has
 * none; a live entry always has at least 1 ms left). Extends no deadline.
 * Returns LARDER_OK, LARDER_MISS, LARDER_EINVAL, LARDER_EKEYSIZE or
 * LARDER_ENOMEM (a thread's first call: see Threads).
 */
LARDER_API LARDER_MUST_USE int larder_ttl_remaining(larder *cache, const void *key,
						    size_t key_len, uint64_t *ttl_ms);

/* ---- Writes: publish atomically, never run the eviction policy ----------- */

/*
 * Common to all writes: the new value becomes visible to every thread before
 * the call returns; readers see the old value or the new one, never a mix.
 * Writes allocate from the cache's own memory and may wait up to the
 * configured write wait when the cache is at its overshoot bound (never from
 * inside a read callback or a removal listener: LARDER_EBUSY at once; see
 * "Re-entrant calls"). A write may also wait for the maintainer to take its
 * queued events (a ring of 512 per thread, then a spill of up to 4,096
 * more, which LARDER_STAT_EVENTS_SPILLED counts) or to grow the index (never from a removal
 * listener): as long as the maintainer works, however slowly, and it fails
 * with LARDER_EBUSY only once the maintainer has spent a whole second inside
 * one call of the removal listener (a listener that does not return, e.g.
 * one that waits for a lock this writer holds). LARDER_STAT_BUSY_MEMORY,
 * _BUSY_EVENTS and _BUSY_INDEX count each cause.
 * On any error the key's previous value is left intact.
 * Errors common to all: LARDER_EINVAL (NULL pointer with a non-zero length,
 * empty key), LARDER_EKEYSIZE, LARDER_EVALSIZE (value over max_value_bytes,
 * or the entry over 1/8 of capacity), LARDER_ENOMEM, LARDER_EBUSY.
 */

/* Stores the value, replacing any previous one. Returns LARDER_OK or an error. */
LARDER_API LARDER_MUST_USE int larder_put(larder *cache, const void *key, size_t key_len,
					  const void *value, size_t value_len, uint64_t ttl_ms);

/* Stores only if no live value is present: LARDER_OK, LARDER_EXISTS or an error. */
LARDER_API LARDER_MUST_USE int larder_put_if_absent(larder *cache, const void *key,
						    size_t key_len, const void *value,
						    size_t value_len, uint64_t ttl_ms);

/* Stores only if a live value is present: LARDER_OK, LARDER_MISS or an error. */
LARDER_API LARDER_MUST_USE int larder_replace(larder *cache, const void *key, size_t key_len,
					      const void *value, size_t value_len,
					      uint64_t ttl_ms);

/*
 * Compare-and-set: stores value only if the current value's bytes equal
 * expected. Returns LARDER_OK, LARDER_MISS, LARDER_MISMATCH or an error.
 * A compressed current value is compared by its original bytes, in a
 * buffer of the calling thread: LARDER_ENOMEM (nothing stored) when that
 * buffer cannot be allocated.
 */
LARDER_API LARDER_MUST_USE int larder_replace_if_equals(larder *cache, const void *key,
							size_t key_len, const void *expected,
							size_t expected_len, const void *value,
							size_t value_len, uint64_t ttl_ms);

/* Removes the key: LARDER_OK, LARDER_MISS, LARDER_EINVAL, LARDER_EKEYSIZE or LARDER_EBUSY. */
LARDER_API LARDER_MUST_USE int larder_remove(larder *cache, const void *key, size_t key_len);

/* Removes the key only if its value equals expected: adds LARDER_MISMATCH
 * (and LARDER_ENOMEM, nothing removed, as larder_replace_if_equals). */
LARDER_API LARDER_MUST_USE int larder_remove_if_equals(larder *cache, const void *key,
						       size_t key_len, const void *expected,
						       size_t expected_len);

/*
 * Gives a live entry a new lifetime from now (LARDER_TTL_DEFAULT: the cache's
 * default; LARDER_TTL_NEVER: none). Returns LARDER_OK, LARDER_MISS or an error:
 * LARDER_EVALSIZE when an entry without a deadline gets one and the 8 bytes
 * its deadline takes bring it over 1/8 of the capacity (the entry is kept,
 * without a deadline, as larder_put would refuse it with one).
 */
LARDER_API LARDER_MUST_USE int larder_touch(larder *cache, const void *key, size_t key_len,
					    uint64_t ttl_ms);

/*
 * Removes every entry (cause LARDER_CAUSE_CLEARED). O(1) for the caller:
 * the index is swapped for an empty one and the maintainer frees the old
 * entries in the background. An entry already past its deadline at the
 * call (its expiry not yet reclaimed) is reported as LARDER_CAUSE_EXPIRED
 * and counted in LARDER_STAT_EXPIRATIONS, as Caffeine's invalidateAll()
 * reports it; every entry live at the call as CLEARED, however late the
 * background walk reaches it. For that the call reads the clock once, in a
 * cache that has ever given an entry a deadline. Allocates the new index.
 * Returns LARDER_OK, LARDER_EINVAL, LARDER_ENOMEM (nothing was cleared) or
 * LARDER_EBUSY (its event could not be queued: see larder_put).
 */
LARDER_API LARDER_MUST_USE int larder_clear(larder *cache);

/*
 * Changes the capacity at run time (>= 64 KiB). When shrinking, the
 * maintainer evicts down to the new capacity promptly; writes may wait
 * meanwhile. Never allocates. Returns LARDER_OK, LARDER_EINVAL (cache
 * NULL, bytes outside 64 KiB to 2^62 - 1), or LARDER_ESTATE for a cache in
 * a pool (the pool sets its capacity; see larder_config_set_pool).
 */
LARDER_API LARDER_MUST_USE int larder_set_capacity(larder *cache, uint64_t bytes);

/*
 * Waits until the maintainer has applied every write, removal and clear that
 * returned before the call, on any thread, made every expiry due at the
 * call, and evicted what brings the cache within its capacity as of those
 * writes (a capacity cut's and a mass expiry's too, however many passes
 * they take; with K shards, whichever shard evicts): afterwards
 * larder_stats() counts them in LARDER_STAT_ENTRIES, which otherwise lags a
 * write by a batching window (docs/architecture.md), and a second flush
 * with nothing in between moves no counter. For an exact count right after
 * writes, as a binding's size() needs; like Caffeine's cleanUp(). Cost: it
 * waits for the work due at the call, never for writes made after it: one
 * pass of each shard's maintainer with nothing due (tens of microseconds on
 * an idle machine, more on a busy one); more while that work lasts, about
 * one pass per 4,096 victims or 8,192 expiries due at the call and per
 * pass a cleared index takes to walk. Beside writers that hold a cache at
 * its memory bound, a flush evicts what was over capacity at the call:
 * three to four passes at one shard, tens of milliseconds on a loaded
 * 2-core machine (docs/bench.md, "Flush beside writers"). Not bounded by
 * the work at the call: more than 8,192 entries coming due at every pass,
 * and clears made during the wait (each adds its walk). Does not wait for
 * memory to be freed or handed back to the OS.
 * Returns LARDER_OK; LARDER_EINVAL (cache NULL); LARDER_EBUSY when the
 * maintainer did not finish such a pass within timeout_ms (it is inside a
 * long removal listener call, or gets no CPU; 0 asks without waiting);
 * LARDER_ESTATE where waiting could deadlock: on a maintainer thread (inside
 * a removal listener, of any cache) or inside a read section (a callback of
 * larder_get_with, larder_get_batch or larder_iter_next).
 */
LARDER_API LARDER_MUST_USE int larder_flush(larder *cache, uint64_t timeout_ms);

/* ---- Iteration (core/iter.c) --------------------------------------------- */

/*
 * A cursor over the live entries of a cache. Weakly consistent, like a
 * concurrent map's iterator: it never blocks readers or writers (it only
 * enters read sections, as larder_get_with does) and the cache keeps
 * serving meanwhile. Its promises, for one cursor from open to the end:
 *   - every key whose entry stays live (not removed, replaced, expired,
 *     evicted or cleared) from larder_iter_open() to the end is returned
 *     exactly once;
 *   - no key is returned twice, whatever happens to it meanwhile;
 *   - nothing expired or removed at the moment it is handed out is returned
 *     (each entry is looked up again, its deadline checked, right before the
 *     callback), so a key removed before the open never comes back unless
 *     it was written again since;
 *   - a key written, replaced or removed during the iteration may or may not
 *     be returned, and if it is, with the value it had at that moment.
 * Order: by the cache's keyed hash (the index's own order), not insertion.
 * Memory: the cursor holds the keys of about 64 index buckets at a time
 * (a few hundred keys), whatever the cache's size. Iteration is not a read:
 * it counts no hit, marks nothing accessed and extends no deadline.
 * A cursor is used by one thread at a time and must be closed before its
 * cache is.
 */
typedef struct larder_iter larder_iter;

/*
 * Called by larder_iter_next() once per entry, inside a read section (see
 * "Read sections": key and value are valid only during the call).
 * ttl_ms: the remaining lifetime (LARDER_TTL_NEVER: none; else >= 1).
 * entry_bytes: what the entry charges against capacity (header, key,
 * value and slot rounding).
 */
typedef void larder_iter_fn(void *ctx, const void *key, size_t key_len, const void *value,
			    size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes);

/*
 * Opens a cursor at the start of the cache. Allocates (a small struct; the
 * key buffer grows on the first larder_iter_next calls). Returns LARDER_OK,
 * LARDER_EINVAL (cache or out NULL) or LARDER_ENOMEM; *out is NULL on failure.
 */
LARDER_API LARDER_MUST_USE int larder_iter_open(larder *cache, larder_iter **out);

/*
 * Hands the next entry to fn(ctx, ...) and returns LARDER_OK, or returns
 * LARDER_MISS (and calls nothing) once every entry has been visited; later
 * calls keep returning LARDER_MISS. May allocate (the key buffer, a thread's
 * first call, a compressed value's buffer): LARDER_ENOMEM then, the cursor
 * unchanged, so the call may be retried. LARDER_EINVAL: it or fn NULL.
 * Never blocks.
 */
LARDER_API LARDER_MUST_USE int larder_iter_next(larder_iter *it, larder_iter_fn *fn, void *ctx);

/* Frees the cursor. NULL is a no-op. */
LARDER_API void larder_iter_close(larder_iter *it);

/* ---- Snapshots: warm restart (core/snapshot.c, docs/persistence.md) ----- */

/*
 * Writes every live entry of the cache to a snapshot file at path, while the
 * cache keeps serving: the entries are those a cursor (larder_iter_open)
 * hands out, so the cut is weakly consistent (an entry live for the whole
 * save is in the file; one written or removed during it may or may not be).
 * Each entry keeps its key, value and remaining TTL. The file is written
 * under a temporary name in the same directory (path + ".tmp.<pid>.<n>"),
 * flushed to the device (fsync) and renamed over path, so a crash or an
 * error mid-save leaves any previous snapshot at path whole. Blocks on the
 * file system; allocates (two write buffers of 1 MiB, each grown to at
 * most 1.5 MiB + twice the largest entry when an entry does not fit) and runs
 * one thread of its own for the call's length, which writes
 * one buffer while the caller fills the other (where the thread or the
 * second buffer cannot be had, the caller writes).
 * Must not race with larder_close() of the same cache (as no call may);
 * it may race with every other call, larder_clear() included.
 * Returns LARDER_OK, LARDER_EINVAL (cache or path NULL, path empty, or path
 * names a device, a FIFO or a socket: nothing is written), LARDER_ENOMEM,
 * or LARDER_ESYS (creating, writing, syncing or renaming failed; errno has
 * the cause; the temporary file is removed; when only the fsync of the
 * directory after the rename failed, the new snapshot is at path, not
 * known to be durable).
 */
LARDER_API LARDER_MUST_USE int larder_save(larder *cache, const char *path);

/*
 * Reads a snapshot written by larder_save() into the cache. The whole file
 * is checked first (format, version, length, checksum): a foreign, damaged
 * or truncated file is refused and the cache left as it was. Then each
 * entry is written as by larder_put, with its remaining TTL at the save
 * minus the wall-clock time since (CLOCK_REALTIME); entries whose time ran
 * out are dropped. Entries whose key or value exceed this cache's limits
 * are skipped. When the cache is smaller than the snapshot, loading stops
 * adding entries at capacity: the snapshot's order (the saving cache's hash
 * order, a random order with respect to age and use) decides which win, and
 * every later entry that does not fit is skipped; a smaller later entry
 * that still fits is taken. Keys already in the cache are overwritten.
 * A snapshot that fits whole (16 MiB or more) is written by up to one
 * thread per CPU (at most 8; started and joined inside the call, each
 * with its per-thread state on this cache while it runs); the checksum of
 * a file of 16 MiB or more is computed by one more such thread while the
 * caller checks the records.
 * Blocks on the file system; allocates (the cache's entries; the file is
 * mapped, not copied).
 * Returns LARDER_OK, LARDER_EINVAL (cache or path NULL),
 * LARDER_ESYS (the file could not be opened, read or mapped; errno has the
 * cause), LARDER_EFORMAT (not a larder snapshot, or an unknown version;
 * also a path that is not a regular file, refused without blocking),
 * LARDER_ECORRUPT (truncated, a bad checksum, or records that do not add
 * up), or a write's LARDER_ENOMEM or LARDER_EBUSY (the entries written
 * before it stay).
 */
LARDER_API LARDER_MUST_USE int larder_load(larder *cache, const char *path);

/* ---- Statistics ---------------------------------------------------------- */

/*
 * Counters, indexes into the array filled by larder_stats(). New counters are
 * only ever appended, so a caller compiled against an older header keeps
 * working.
 */
enum larder_stat {
	LARDER_STAT_HITS = 0,        /* reads that found a live value */
	LARDER_STAT_MISSES,          /* reads that found nothing (or an expired value) */
	LARDER_STAT_WRITES,          /* successful writes of a new value */
	LARDER_STAT_ENTRIES,         /* entries in the index, as the maintainer knows them */
	LARDER_STAT_USED_BYTES,      /* bytes of slots allocated to entries, live or awaiting free */
	LARDER_STAT_CAPACITY_BYTES,  /* the current capacity */
	LARDER_STAT_OVERSHOOT_BOUND, /* how far used bytes may exceed capacity */
	LARDER_STAT_EVICTIONS,       /* removals with cause EVICTED */
	LARDER_STAT_EXPIRATIONS,     /* removals with cause EXPIRED */
	LARDER_STAT_REMOVALS,        /* removals with cause EXPLICIT */
	LARDER_STAT_REPLACEMENTS,    /* removals with cause REPLACED */
	LARDER_STAT_CLEARED,         /* removals with cause CLEARED */
	LARDER_STAT_WRITE_WAITS,     /* writes that had to wait for room */
	LARDER_STAT_WRITE_BUSY,      /* writes that failed with LARDER_EBUSY */
	LARDER_STAT_INDEX_SLOTS,     /* slots in the index */
	LARDER_STAT_INDEX_RESIZES,   /* completed index growths (shrinks: INDEX_SHRINKS) */
	LARDER_STAT_PAGES_MAPPED,    /* bytes of pages held from the OS (slabs and large entries) */
	LARDER_STAT_PAGES_RETURNED,  /* bytes handed back to the OS so far */
	LARDER_STAT_MAINT_PASSES,    /* maintainer loop iterations */
	LARDER_STAT_HIT_SAMPLES,     /* hit events the policy received */
	LARDER_STAT_MAINT_WAITS,     /* writes that waited for the maintainer to take their
					queued events or to grow the index (it is behind) */
	/* Memory audit (docs/memory.md). PAGES_MAPPED = the sum over size
	 * classes of LARDER_CLASS_BYTES + RESERVE_BYTES + RETURNING_BYTES
	 * + LARGE_BYTES, exactly (each figure is read on its own, so a
	 * snapshot taken while the cache changes may be off by the pages in
	 * motion). */
	LARDER_STAT_RESERVE_BYTES,   /* empty slab pages kept mapped for reuse (not yet returned) */
	LARDER_STAT_LARGE_BYTES,     /* private mappings of entries above the largest size class */
	LARDER_STAT_RESERVE_PAGES,   /* how many pages RESERVE_BYTES is */
	LARDER_STAT_RETURNING_BYTES, /* empty pages queued for unmapping, not yet unmapped */
	LARDER_STAT_INDEX_SHRINKS,   /* completed index shrinks (a sparse index; docs/memory.md) */
	LARDER_STAT_INDEX_BYTES,     /* bytes mapped for the current index (and, while it is
					resized, its successor); not in PAGES_MAPPED */
	/* LARDER_STAT_WRITE_BUSY by cause; the three add up to it. */
	LARDER_STAT_BUSY_MEMORY,     /* at the memory bound: no room within write_wait_ms, or at
					once where a write may not wait (see larder_put) */
	LARDER_STAT_BUSY_EVENTS,     /* the thread's event queue was full and the maintainer
					had been inside one listener call for 1 s (or, for a
					listener's write, 65,536 of its events waited) */
	LARDER_STAT_BUSY_INDEX,      /* the index had to grow first and the maintainer had been
					inside one listener call for 1 s (or, for a listener's
					write, the index was full, or resizing with its room
					for new keys taken) */
	LARDER_STAT_EVENTS_SPILLED,  /* events that overflowed a full event ring into its
					spill: a writer's, while its maintainer lags (up to
					4,096 unread, then it waits), or a listener's write's
					(which never waits; see larder_put) */
	LARDER_STAT_DICT_BYTES,      /* memory of the compression dictionary (outside capacity;
					0 while the cache has none: see
					larder_config_set_compression_dictionary) */
	LARDER_STAT_LIVE_BYTES,      /* USED_BYTES less the removed entries still awaiting
					their free (a grace period): the slot bytes of the
					entries in the index, as the maintainer knows them
					(exact after larder_flush, like ENTRIES) */
	LARDER_STAT_COUNT
};

/*
 * Fills values[0..count-1] with a snapshot of the counters (summed over
 * threads; each counter is exact, the set is not one atomic instant); a
 * count beyond LARDER_STAT_COUNT zero-fills the rest. Does not block the read
 * or write paths. Returns LARDER_OK or LARDER_EINVAL (cache NULL, values NULL
 * with count > 0; NULL with count 0 is an empty request).
 */
LARDER_API LARDER_MUST_USE int larder_stats(larder *cache, uint64_t *values, size_t count);

/* The counter's name ("hits", "used_bytes", ...), or NULL when out of range. */
LARDER_API const char *larder_stat_name(enum larder_stat stat);

/*
 * Per size class figures of the slab (memory audit), indexes into the array
 * filled by larder_stats_size_class(). Entries up to the largest class's slot
 * live in slots of fixed sizes carved from pages of 64 KiB to 2 MiB; a page
 * holds slots of one class only. Append-only, like enum larder_stat.
 * "Used" slots hold entries the maintainer has counted and not retired
 * (published, and not yet replaced, removed, expired or evicted); slots a
 * writer took for an entry the maintainer has not seen yet, and slots of
 * retired entries waiting for their grace period to end before they are
 * freed, count as free, so the figures are exact once the maintainer is
 * idle and may lag by the entries in flight before that.
 */
enum larder_class_stat {
	LARDER_CLASS_SLOT_BYTES = 0, /* the slot size of the class (a constant) */
	LARDER_CLASS_PAGE_BYTES,     /* the page size of the class (a constant) */
	LARDER_CLASS_PAGES,          /* pages of this class held by the cache (not the reserve) */
	LARDER_CLASS_SLOTS_USED,     /* slots holding counted entries */
	LARDER_CLASS_SLOTS_FREE,     /* the other slots of those pages */
	LARDER_CLASS_BYTES,          /* PAGES x PAGE_BYTES: memory mapped for the class */
	LARDER_CLASS_USED_BYTES,     /* SLOTS_USED x SLOT_BYTES */
	LARDER_CLASS_STAT_COUNT
};

/* How many size classes there are (a constant of the build). Never fails. */
LARDER_API size_t larder_size_class_count(void);

/*
 * Fills values[0..count-1] with the figures of size class class_index
 * (0 .. larder_size_class_count() - 1, smallest slots first); indexes past
 * LARDER_CLASS_STAT_COUNT are set to 0. Never blocks the read or write paths
 * or allocates; each figure is read on its own (relaxed), so a snapshot taken
 * while writers run is not one atomic instant. Returns LARDER_OK or
 * LARDER_EINVAL (cache NULL, values NULL with count > 0, class out of range).
 */
LARDER_API LARDER_MUST_USE int larder_stats_size_class(larder *cache, size_t class_index,
							uint64_t *values, size_t count);

/* The figure's name ("slot_bytes", "pages", ...), or NULL when out of range. */
LARDER_API const char *larder_class_stat_name(enum larder_class_stat stat);

/* A static description of any result code; never NULL. */
LARDER_API const char *larder_strerror(int code);

/* The name of a removal cause ("explicit", ...), or "unknown". */
LARDER_API const char *larder_cause_name(enum larder_cause cause);

/* ---- Simulation (larder-sim; owned by the eviction-policy work) --------- */
/*
 * A cache simulator that replays a stream of key ids through the engine's own
 * eviction policy code on real entry headers, single-threaded, with no values
 * or index: what larder-sim and the hit-ratio tests use. Each access is one
 * request; a key absent is a miss and is inserted, then entries are evicted
 * while the summed sizes exceed capacity. A present key with a different
 * size is an update (the policy sees a replacement) and counts as a hit.
 * Capacity and sizes share a unit: pass size 1 to count objects.
 * A simulator is not thread-safe: one thread at a time.
 */
typedef struct larder_sim larder_sim;

enum larder_sim_flag {
	/*
	 * Deliver hits to the policy as sampled, lossy events, as the engine's
	 * readers do: each hit reaches it with probability 1/one_in
	 * (LARDER_SIM_DEFAULT_SAMPLE unless larder_sim_set_hit_sampling() says
	 * otherwise). Without the flag every hit is delivered.
	 */
	LARDER_SIM_SAMPLE_HITS = 1,
	/*
	 * Deliver hits the way the engine's per-thread hit ring does: hits are
	 * buffered and handed to the policy every drain_every requests (the
	 * maintainer's batching window), after that window's inserts; when more
	 * than ring_slots hits arrived in a window only the newest ring_slots
	 * are delivered. Set the two with larder_sim_set_hit_ring(); defaults:
	 * the engine's ring (1024 slots), a drain every 1024 requests. Alone it
	 * is the strict model: misses are inserted and victims evicted at once,
	 * while the samples wait (more pessimistic than the engine; see
	 * LARDER_SIM_PASSES).
	 */
	LARDER_SIM_HIT_RING = 2,
	/*
	 * With LARDER_SIM_HIT_RING: a reader skips the ring when the entry was
	 * already sampled since the last drain (a per-entry sample epoch that the
	 * reader writes only when it changes), so the ring's slots go to distinct
	 * entries instead of being flooded by the hottest ones. Models a proposed
	 * engine change; see docs/policies.md.
	 */
	LARDER_SIM_HIT_DEDUP = 4,
	/*
	 * The maintainer's passes: a missed key is cached at once (the next
	 * request for it hits) but reaches the policy only at the next drain,
	 * and victims are chosen only there, after that drain's inserts and hit
	 * samples, in the order maint_pass applies them. A drain comes every
	 * drain_every requests (larder_sim_set_hit_ring()), or at once when 256
	 * inserts wait (half a writer's event ring, when it wakes the
	 * maintainer). Between drains the cache holds the waiting inserts beyond
	 * capacity, as the engine does. Without LARDER_SIM_HIT_RING, hits on
	 * linked entries reach the policy at once, and hits on waiting ones
	 * through the ring after their insert.
	 */
	LARDER_SIM_PASSES = 8,
};
#define LARDER_SIM_DEFAULT_SAMPLE 4u

/*
 * Creates a simulator for policy (LARDER_POLICY_DEFAULT resolves as in a
 * cache) with the given capacity (> 0). Allocates. On failure *out is NULL.
 * Returns LARDER_OK, LARDER_EINVAL (out NULL, capacity 0, unknown policy or
 * flag) or LARDER_ENOMEM.
 */
LARDER_API LARDER_MUST_USE int larder_sim_create(larder_sim **out, enum larder_policy policy,
						 uint64_t capacity, unsigned flags);
/*
 * Sets the hit sampling rate (one_in >= 1) and the seed of its private random
 * stream, used when LARDER_SIM_SAMPLE_HITS is set. Never allocates.
 * Returns LARDER_OK or LARDER_EINVAL.
 */
LARDER_API LARDER_MUST_USE int larder_sim_set_hit_sampling(larder_sim *sim, uint32_t one_in,
							   uint64_t seed);
/*
 * Sets the hit ring model used with LARDER_SIM_HIT_RING: ring_slots (1 to
 * 65536) and drain_every (>= 1 requests). Allocates the ring; call before the
 * first access. Returns LARDER_OK, LARDER_EINVAL or LARDER_ENOMEM.
 */
LARDER_API LARDER_MUST_USE int larder_sim_set_hit_ring(larder_sim *sim, uint32_t ring_slots,
						       uint32_t drain_every);
/*
 * Splits the simulated cache into shards (1 to 65536, a power of two, at
 * most capacity), as a cache with several maintainers would be: a key's
 * shard is chosen by its hash, each shard runs its own instance of the
 * policy sized for 1/shards of the capacity (the capacities sum to the
 * total), and the capacity stays one budget: while the total is over it,
 * a shard whose share is at least the mean evicts (docs/shards.md). One
 * shard is the unsharded simulator, exactly. Call before the first access.
 * Allocates. Returns LARDER_OK, LARDER_EINVAL (bad count, or after an
 * access; nothing changed) or LARDER_ENOMEM (nothing changed).
 */
LARDER_API LARDER_MUST_USE int larder_sim_set_shards(larder_sim *sim, uint32_t shards);
/*
 * A shard's policy capacity and the summed sizes of the keys it holds now
 * (inserts still waiting for a pass included). Returns LARDER_OK, or
 * LARDER_EINVAL (NULL argument, shard out of range).
 */
LARDER_API LARDER_MUST_USE int larder_sim_shard_info(const larder_sim *sim, uint32_t shard,
						     uint64_t *capacity, uint64_t *used);
/*
 * Replays one request. May allocate (a new entry, index growth).
 * Returns 1 for a hit, 0 for a miss (the key is now cached, or already
 * evicted if it alone exceeds capacity), LARDER_EINVAL (sim NULL) or
 * LARDER_ENOMEM (nothing changed).
 */
LARDER_API LARDER_MUST_USE int larder_sim_access(larder_sim *sim, uint64_t key_id,
						 uint64_t size);
/* The name of the policy that runs ("s3fifo", ...; DEFAULT resolved), or NULL. */
LARDER_API const char *larder_sim_policy_name(const larder_sim *sim);
/* How many hit events the policy has received (all hits, or the sampled ones). */
LARDER_API uint64_t larder_sim_hit_events(const larder_sim *sim);
/* Frees the simulator and every entry it holds. NULL is a no-op. */
LARDER_API void larder_sim_destroy(larder_sim *sim);

/* ---- End of simulation section ------------------------------------------ */

/* ---- Pools: several caches, one memory budget ---------------------------- */
/*
 * A pool holds a byte budget that every cache opened in it shares
 * (larder_config_set_pool): the pool sets each cache's capacity, through
 * the same path as larder_set_capacity(), and moves capacity to the cache
 * where it earns the most: a background controller estimates each cache's
 * extra hits per extra byte (mini simulations of its policy at several
 * sizes on a sample of its keys), weights them by the cache's miss cost,
 * and moves capacity in steps from the lowest weighted value to the highest,
 * within each cache's minimum and maximum share, until they are level
 * (docs/pool.md).
 *
 * The bound: the used bytes (LARDER_STAT_USED_BYTES) of all the pool's
 * caches together never exceed budget + LARDER_POOL_OVERSHOOT_BOUND, which
 * is budget / 100 + 4 MiB per open cache (each cache's own overshoot bound
 * summed), at any instant, also while capacity moves: a cache that gives
 * capacity up evicts first, and the cache that takes it can use it only once
 * the bytes are back. The capacities the pool sets never sum to more than
 * the budget (LARDER_POOL_ASSIGNED_BYTES <= LARDER_POOL_BUDGET_BYTES).
 *
 * Threads: every pool call may be made from any thread. A pool runs one
 * thread of its own (the controller), started by larder_pool_create().
 */
typedef struct larder_pool larder_pool;
typedef struct larder_pool_config larder_pool_config;

/*
 * Creates a pool configuration with the defaults: budget 256 MiB, controller
 * interval 100 ms. Allocates. Returns LARDER_OK, LARDER_EINVAL (out NULL) or
 * LARDER_ENOMEM. May be destroyed any time after larder_pool_create().
 */
LARDER_API LARDER_MUST_USE int larder_pool_config_create(larder_pool_config **out);
LARDER_API void larder_pool_config_destroy(larder_pool_config *config);
/* The budget in bytes, 1 MiB to 2^60 - 1 (else LARDER_EINVAL). Never allocates. */
LARDER_API LARDER_MUST_USE int larder_pool_config_set_budget(larder_pool_config *config,
							     uint64_t bytes);
/*
 * How often the controller moves capacity, in ms (1..60000; default 100).
 * 0 turns the controller off: each cache then holds an equal part of the
 * budget, clamped to its shares, recomputed when a cache opens or closes
 * (a static split; fix one with min share = max share), and no estimates
 * are made (nor for a cache with min share = max share in any pool).
 * Never allocates. Returns LARDER_OK or LARDER_EINVAL.
 */
LARDER_API LARDER_MUST_USE int larder_pool_config_set_interval_ms(larder_pool_config *config,
								  uint64_t ms);

/*
 * Creates a pool and starts its controller thread. Allocates. On success
 * *out owns the pool; on failure *out is NULL and nothing is leaked.
 * Returns LARDER_OK, LARDER_EINVAL (out or config NULL), LARDER_ENOMEM or
 * LARDER_ETHREAD.
 */
LARDER_API LARDER_MUST_USE int larder_pool_create(larder_pool **out,
						  const larder_pool_config *config);

/*
 * Stops the controller and releases the pool. Refused with LARDER_ESTATE,
 * changing nothing, while a cache is open in it (close them first). After
 * LARDER_OK the handle must not be used again; a config that still names
 * the pool keeps its memory alive (until larder_config_destroy()) but
 * larder_open() refuses it with LARDER_ESTATE. Blocks while the controller
 * finishes its pass. Returns LARDER_OK, LARDER_EINVAL (pool NULL) or
 * LARDER_ESTATE.
 */
LARDER_API LARDER_MUST_USE int larder_pool_close(larder_pool *pool);

/*
 * Caches opened with this config draw their capacity from pool (NULL: no
 * pool, the default). The config holds a reference, so the pool's memory
 * stays valid while the config names it. A pooled cache:
 *   - gets its capacity from the pool: larder_open() refuses a config that
 *     also had larder_config_set_capacity() called (LARDER_EINVAL; to fix a
 *     cache's size in a pool, set its min and max share equal);
 *   - may have to wait in larder_open() until other caches of the pool have
 *     given back its first capacity (at most the config's write wait; then
 *     LARDER_EBUSY); it then grows to its share in the background;
 *   - refuses larder_set_capacity() with LARDER_ESTATE;
 *   - gives its share back to the pool in larder_close().
 * larder_open() also fails with LARDER_ESTATE when the pool is closed, and
 * with LARDER_EINVAL when the min shares of the pool's open caches would sum
 * to over 1, or the pool cannot give the new cache 64 KiB.
 * Never allocates or blocks. Returns LARDER_OK or LARDER_EINVAL (config NULL).
 */
LARDER_API LARDER_MUST_USE int larder_config_set_pool(larder_config *config,
						      larder_pool *pool);
/*
 * The least and the most of the pool's budget the cache may hold, as
 * fractions: 0 <= min_share <= max_share <= 1, max_share > 0 (defaults 0
 * and 1). The pool never takes the cache below min_share (once it has
 * reached it) nor gives it more than max_share; a share of less than 64 KiB
 * of the budget counts as 64 KiB, the smallest capacity a cache may have
 * (so min shares of 0 still take 64 KiB each). Never allocates. Returns
 * LARDER_OK or LARDER_EINVAL (config NULL, a share out of range or NaN,
 * min > max).
 */
LARDER_API LARDER_MUST_USE int larder_config_set_pool_shares(larder_config *config,
							     double min_share, double max_share);
/*
 * What a miss costs in this cache, relative to the pool's other caches
 * (default 1; a database-backed cache might say 100 where a cheap
 * recomputation says 1): the controller maximises the hits weighted by it.
 * Finite, > 0 and <= 10^9. Never allocates. Returns LARDER_OK or
 * LARDER_EINVAL.
 */
LARDER_API LARDER_MUST_USE int larder_config_set_miss_cost(larder_config *config, double cost);

/* Pool-wide figures, indexes into the array filled by larder_pool_stats(). Append-only. */
enum larder_pool_stat {
	LARDER_POOL_BUDGET_BYTES = 0,    /* the budget */
	LARDER_POOL_OVERSHOOT_BOUND,     /* budget / 100 + 4 MiB per open cache (see above) */
	LARDER_POOL_CACHES,              /* caches in the pool, those opening or closing included */
	LARDER_POOL_ASSIGNED_BYTES,      /* the caches' capacities summed */
	LARDER_POOL_USED_BYTES,          /* the caches' used bytes summed (each read on its own) */
	LARDER_POOL_MOVES,               /* capacity steps the controller moved */
	LARDER_POOL_MOVED_BYTES,         /* bytes of capacity it moved */
	LARDER_POOL_PASSES,              /* controller passes */
	LARDER_POOL_CONTROLLER_CPU_NS,   /* CPU time of the pool's thread */
	LARDER_POOL_STAT_COUNT
};
/*
 * Fills values[0..count-1] (entries past LARDER_POOL_STAT_COUNT are set to
 * 0). Briefly takes the pool's lock; never blocks a cache's reads or
 * writes. Returns LARDER_OK or LARDER_EINVAL (pool NULL, values NULL with
 * count > 0).
 */
LARDER_API LARDER_MUST_USE int larder_pool_stats(larder_pool *pool, uint64_t *values,
						 size_t count);
/* The figure's name ("budget_bytes", ...), or NULL when out of range. */
LARDER_API const char *larder_pool_stat_name(enum larder_pool_stat stat);

/*
 * One cache's figures in its pool, indexes into the array filled by
 * larder_pool_cache_stats(). Rates are over the controller's recent window
 * (a half-life of about 1 s); the estimates are 0 until the cache has seen
 * enough requests. Append-only.
 */
enum larder_pool_cache_stat {
	LARDER_POOL_CACHE_CAPACITY_BYTES = 0, /* its capacity now */
	LARDER_POOL_CACHE_TARGET_BYTES,       /* the capacity the pool is moving it to */
	LARDER_POOL_CACHE_USED_BYTES,         /* LARDER_STAT_USED_BYTES */
	LARDER_POOL_CACHE_HITS,               /* LARDER_STAT_HITS */
	LARDER_POOL_CACHE_MISSES,             /* LARDER_STAT_MISSES */
	LARDER_POOL_CACHE_REQUESTS_PER_S,     /* reads (hits + misses) per second */
	LARDER_POOL_CACHE_MARGINAL_HITS_PER_MIB, /* estimated extra hits per second that one
						    more MiB would bring (mini simulations;
						    not weighted by the miss cost; at its max
						    share: what its last MiB brings) */
	LARDER_POOL_CACHE_GHOST_HITS_PER_MIB, /* the same estimated from a ghost of recent
						 victims (for comparison; docs/pool.md) */
	LARDER_POOL_CACHE_MISS_COST,          /* larder_config_set_miss_cost() */
	LARDER_POOL_CACHE_MIN_SHARE,          /* larder_config_set_pool_shares() */
	LARDER_POOL_CACHE_MAX_SHARE,
	LARDER_POOL_CACHE_SAMPLE_EVERY,       /* the mini simulations sample 1 key of the
						 cache's in this many (with K shards, of
						 shard 0's keys, 1 in this many / K) */
	LARDER_POOL_CACHE_PROBE_NS,           /* time its maintainer (shard 0's) spent
						 estimating for the pool so far: its calls
						 for the 1 entry in 64 (64 x K) its
						 writers marked (1 in 16 of them
						 timed: an estimate) and the mini
						 simulations; not the test of every entry's
						 mark (docs/pool.md) */
	LARDER_POOL_CACHE_PROBE_SIM_NS,       /* the part of it in the mini simulations
						 (the maintainer's CPU clock) */
	LARDER_POOL_CACHE_SAMPLED_REQUESTS,   /* requests the mini simulations have seen
						 (at most about 1,024 a second) */
	LARDER_POOL_CACHE_STAT_COUNT
};
/*
 * Fills values[0..count-1] with cache's figures (entries past
 * LARDER_POOL_CACHE_STAT_COUNT are set to 0). Briefly takes the pool's
 * lock. Returns LARDER_OK or LARDER_EINVAL (pool or cache NULL, values NULL
 * with count > 0, or cache not open in pool).
 */
LARDER_API LARDER_MUST_USE int larder_pool_cache_stats(larder_pool *pool, larder *cache,
						       double *values, size_t count);
/* The figure's name ("capacity_bytes", ...), or NULL when out of range. */
LARDER_API const char *larder_pool_cache_stat_name(enum larder_pool_cache_stat stat);

/* ---- End of pool section ------------------------------------------------- */

#ifdef __cplusplus
}
#endif

#endif /* LARDER_H */
