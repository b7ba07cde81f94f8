/*
 * eng_bare.c - the floor: a single-threaded open-addressing table with the
 * same key/value bytes and copy-out as larder, and the loop-only "null"
 * engine used to subtract the harness's own cost.
 *
 * bare
 *   One flat array of slots, stride = 8 + key + value rounded up to 8:
 *       [hash | 1][key bytes][value bytes]
 *   Linear probing from hash & mask, load factor <= 1/2 (sized at open, never
 *   grows: the matrix only overwrites keys that are present; an insert run,
 *   --scenarios insert --ops N, sizes it for the N new keys as well, so its
 *   inserts find an empty slot and evict nothing). The hash is the
 *   one larder uses (XXH3-64 with a seed); key compare and value copy are
 *   memcmp/memcpy with run-time lengths, as any general cache must do.
 *   No concurrency, eviction, TTL, statistics or deletion: it measures what
 *   one lookup costs with nothing else to do. Single-thread cells only.
 *
 * null
 *   get reports a hit without touching memory, put does nothing. An --ops run
 *   of null counts the loop, RNG and key generation alone.
 */
#include <stdlib.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bench.h"

struct bare {
	uint8_t *slots;
	uint64_t mask;
	uint64_t used;
	size_t stride;
	size_t key_size;
	size_t value_size;
	uint64_t seed;
};

static int bare_open(void **out, const struct lb_config *cfg)
{
	struct bare *b = calloc(1, sizeof(*b));
	uint64_t n = 16, keys = cfg->entries;

	if (!b)
		return -1;
	if (cfg->scenarios & (1u << LB_INSERT))
		keys += cfg->ops;
	while (n < keys * 2)
		n <<= 1;
	b->stride = (8 + cfg->key_size + cfg->value_size + 7) & ~(size_t)7;
	b->mask = n - 1;
	b->key_size = cfg->key_size;
	b->value_size = cfg->value_size;
	b->seed = cfg->seed;
	b->slots = calloc(n, b->stride); /* calloc: empty slots have hash 0 */
	if (!b->slots) {
		free(b);
		return -1;
	}
	*out = b;
	return 0;
}

static void bare_close(void *eng)
{
	struct bare *b = eng;
	free(b->slots);
	free(b);
}

/* The slot holding key, or the empty slot where it would go. */
static inline uint8_t *bare_find(struct bare *b, const uint8_t *key, size_t key_len,
				 uint64_t *tag)
{
	uint64_t h = XXH3_64bits_withSeed(key, key_len, b->seed);
	uint64_t i = h & b->mask;

	*tag = h | 1;
	for (;;) {
		uint8_t *s = b->slots + i * b->stride;
		uint64_t st;
		memcpy(&st, s, 8);
		if (st == *tag && memcmp(s + 8, key, key_len) == 0)
			return s;
		if (st == 0)
			return s;
		i = (i + 1) & b->mask;
	}
}

static inline int bare_get(void *eng, const uint8_t *key, size_t key_len, uint8_t *buf,
			   size_t buf_len)
{
	struct bare *b = eng;
	uint64_t tag, st;
	uint8_t *s = bare_find(b, key, key_len, &tag);

	memcpy(&st, s, 8);
	if (st == 0 || buf_len < b->value_size)
		return 0;
	memcpy(buf, s + 8 + key_len, b->value_size);
	return 1;
}

static inline int bare_put(void *eng, const uint8_t *key, size_t key_len, const uint8_t *val,
			   size_t val_len, uint64_t ttl_ms)
{
	struct bare *b = eng;
	uint64_t tag, st;
	uint8_t *s;

	(void)ttl_ms; /* bare has no TTL */
	if (key_len != b->key_size || val_len != b->value_size)
		return -1;
	s = bare_find(b, key, key_len, &tag);
	memcpy(&st, s, 8);
	if (st == 0) {
		if ((b->used + 1) * 2 > b->mask + 1)
			return -1; /* full at load 1/2; never grows */
		b->used++;
		memcpy(s, &tag, 8);
		memcpy(s + 8, key, key_len);
	}
	memcpy(s + 8 + key_len, val, val_len);
	return 0;
}

static uint64_t bare_run(void *eng, struct lb_tctx *t, const struct lb_job *job)
{
	return lb_run_loop(eng, t, job, bare_get, bare_put);
}

const struct lb_engine lb_engine_bare = {
	.name = "bare",
	.about = "single-threaded open addressing, XXH3, memcpy copy-out (1 thread only)",
	.max_threads = { 1, 1, 1 },
	.open = bare_open,
	.put = bare_put,
	.run = bare_run,
	.close = bare_close,
};

/* ---- null: the loop alone ------------------------------------------------ */

static int null_open(void **out, const struct lb_config *cfg)
{
	(void)cfg;
	*out = NULL;
	return 0;
}

static void null_close(void *eng)
{
	(void)eng;
}

static inline int null_get(void *eng, const uint8_t *key, size_t key_len, uint8_t *buf,
			   size_t buf_len)
{
	(void)eng;
	(void)key;
	(void)key_len;
	(void)buf;
	(void)buf_len;
	return 1;
}

static inline int null_put(void *eng, const uint8_t *key, size_t key_len, const uint8_t *val,
			   size_t val_len, uint64_t ttl_ms)
{
	(void)eng;
	(void)key;
	(void)key_len;
	(void)val;
	(void)val_len;
	(void)ttl_ms;
	return 0;
}

static uint64_t null_run(void *eng, struct lb_tctx *t, const struct lb_job *job)
{
	return lb_run_loop(eng, t, job, null_get, null_put);
}

const struct lb_engine lb_engine_null = {
	.name = "null",
	.about = "the loop, RNG and key generation alone (no table)",
	.max_threads = { 0, 0, 0 },
	.open = null_open,
	.put = null_put,
	.run = null_run,
	.close = null_close,
};
