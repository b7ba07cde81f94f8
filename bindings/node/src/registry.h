/*
 * registry.h - the process-wide set of native caches behind the Node.js
 * binding: caches opened by name (one native cache for every worker thread
 * that names it) and private ones, each counted by the handles that use it,
 * and the fan-out of its removal listener to the handles that asked for
 * dispose events; and the pools (larder_pool_*) caches draw their
 * capacity from, also shared by name. Pure C over larder.h and pthreads: no
 * Node-API, so test/registry_stress.c checks it under ThreadSanitizer and
 * ASan.
 */
#ifndef LARDER_NODE_REGISTRY_H
#define LARDER_NODE_REGISTRY_H

#include <stddef.h>
#include <stdint.h>

#include "dispose_queue.h"
#include "larder.h"

struct lnode_pool;

/* The engine settings a cache is opened with. */
struct lnode_settings {
	uint64_t capacity_bytes;
	uint64_t max_entries;      /* the binding's entry limit (`max`), 0 = none */
	uint64_t expected_entries; /* the index's sizing hint (max_entries, or a default) */
	uint64_t default_ttl_ms;   /* LARDER_TTL_NEVER: none */
	size_t max_key_bytes;
	size_t max_value_bytes; /* as the engine sees it (the binding's tag byte included) */
	enum larder_policy policy;
	enum larder_expiry expiry;
	size_t compress_min;      /* larder_config_set_compression's min_value_bytes; 0 = off */
	unsigned compress_saving; /* its min_saving_percent */
	struct lnode_pool *pool;  /* NULL: capacity_bytes; else the pool sets the capacity */
	double min_share, max_share, miss_cost; /* the cache's place in its pool */
	unsigned shards;          /* larder_config_set_shards */
	uint64_t write_wait_ms;   /* larder_config_set_write_wait_ms */
};

/* Bits of lnode_registry_open()'s given: the settings the caller chose. */
enum lnode_setting_bit {
	LNODE_SET_CAPACITY = 1u << 0,
	LNODE_SET_MAX_ENTRIES = 1u << 1,
	LNODE_SET_TTL = 1u << 2,
	LNODE_SET_MAX_KEY = 1u << 3,
	LNODE_SET_MAX_VALUE = 1u << 4,
	LNODE_SET_POLICY = 1u << 5,
	LNODE_SET_EXPIRY = 1u << 6,
	LNODE_SET_COMPRESSION = 1u << 7,
	LNODE_SET_POOL = 1u << 8,
	LNODE_SET_SHARES = 1u << 9,
	LNODE_SET_MISS_COST = 1u << 10,
	LNODE_SET_SHARDS = 1u << 11,
	LNODE_SET_WRITE_WAIT = 1u << 12,
};

/* Returned by lnode_registry_open() besides the larder errors. */
#define LNODE_EMISMATCH (-100)

/*
 * A handle's subscription to removal events. The owner fills queue, notify
 * and notify_ctx before lnode_shared_subscribe(); notify(notify_ctx) is
 * called on the maintainer thread when the queue turns non-empty, and never
 * after lnode_shared_unsubscribe() has returned.
 */
struct lnode_sub {
	struct lnode_dq queue;
	void (*notify)(void *notify_ctx);
	void *notify_ctx;
	struct lnode_sub *next; /* the shared cache's list; under its sub_lock */
};

struct lnode_shared;

/*
 * Opens the cache called name (NUL-terminated), or a private cache when
 * name is NULL. A named cache already open is shared: its reference count
 * grows, and every setting whose bit is in given must equal the open cache's
 * (otherwise LNODE_EMISMATCH, with *mismatch naming the setting). Settings
 * not given take the open cache's values. Allocates; may start a maintainer
 * thread. Returns LARDER_OK with *out holding one reference, LNODE_EMISMATCH,
 * or a larder error (LARDER_EINVAL for a setting out of range, LARDER_ENOMEM,
 * LARDER_ETHREAD); on failure *out is NULL.
 */
int lnode_registry_open(struct lnode_shared **out, const char *name,
			const struct lnode_settings *want, unsigned given, const char **mismatch);

/*
 * Drops one reference; the last one unregisters the name, stops the
 * maintainer and frees the cache (larder_close). The caller must have
 * unsubscribed its lnode_sub and must not use the cache afterwards; other
 * holders are unaffected. Never fails.
 */
void lnode_registry_release(struct lnode_shared *shared);

/* The engine cache, valid until the caller's reference is released. */
larder *lnode_shared_cache(const struct lnode_shared *shared);
/* The settings the cache was opened with. */
const struct lnode_settings *lnode_shared_settings(const struct lnode_shared *shared);

/* Adds sub to the cache's listener fan-out. Never fails or allocates. */
void lnode_shared_subscribe(struct lnode_shared *shared, struct lnode_sub *sub);
/* Removes sub; on return its notify will not be called again. */
void lnode_shared_unsubscribe(struct lnode_shared *shared, struct lnode_sub *sub);

/*
 * Opens the pool called name (NUL-terminated), or a private pool when name
 * is NULL, with its budget in bytes and its controller's interval in ms
 * (larder_pool_config_set_interval_ms). A named pool already open is shared
 * as a named cache is: the given settings (bit 0 budget, bit 1 interval)
 * must match (LNODE_EMISMATCH with *mismatch "maxSize" or "interval").
 * The caller holds one reference, as does every cache opened in the pool
 * (from lnode_registry_open until after its larder_close), so the engine
 * pool is closed by the last release, when no cache is open in it (REGISTRY-P1).
 * Returns LARDER_OK, LNODE_EMISMATCH, LARDER_EINVAL (a setting out of
 * range), LARDER_ENOMEM or LARDER_ETHREAD; on failure *out is NULL.
 */
int lnode_pool_open(struct lnode_pool **out, const char *name, uint64_t budget,
		    uint64_t interval_ms, unsigned given, const char **mismatch);
/* Drops one reference; the last one closes the engine pool. Never fails. */
void lnode_pool_release(struct lnode_pool *pool);
/* The engine pool, valid while the caller holds a reference. */
larder_pool *lnode_pool_engine(const struct lnode_pool *pool);
/* Pools open in the process (named and private). */
size_t lnode_pool_open_count(void);

/* Native caches open in the process (named and private). */
size_t lnode_registry_open_count(void);
/* References held on the named cache, 0 when it is not open. */
uint32_t lnode_registry_refs(const char *name);

#endif /* LARDER_NODE_REGISTRY_H */
