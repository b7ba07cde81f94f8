/*
 * eng_ck.c - baseline: Concurrency Kit's ck_ht in byte-string mode.
 *
 * ck_ht is single-writer, multi-reader (SPMC): any number of readers may run
 * beside one writer. So ck runs read cells at every thread count, and write
 * and 9:1 cells only with one thread (max_threads below).
 *
 * Layout: one malloc'd record per key, { key bytes, value bytes }; the table
 * entry points at the record's key (key pointer) and at the record (value
 * pointer). get copies the value out of the record. put builds a new record
 * and swaps it in with ck_ht_set_spmc, which hands back the replaced entry;
 * the old record is freed at once. That is safe only because writes run with
 * no concurrent reader (1-thread cells); a concurrent user would need epoch
 * reclamation (ck_epoch), which this baseline therefore does not pay for.
 * The hash is XXH3-64 with the run's seed, as for every engine here.
 */
#include <stdbool.h>
#include <stdlib.h>

#include <ck_ht.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bench.h"

struct ck_eng {
	ck_ht_t ht;
	size_t key_size;
	size_t value_size;
};

static void *ck_alloc(size_t n)
{
	return malloc(n);
}

static void *ck_realloc(void *p, size_t old, size_t n, bool defer)
{
	(void)old;
	(void)defer;
	return realloc(p, n);
}

static void ck_release(void *p, size_t n, bool defer)
{
	(void)n;
	(void)defer; /* the table only grows during preload, with no readers */
	free(p);
}

static struct ck_malloc ck_allocator = {
	.malloc = ck_alloc,
	.realloc = ck_realloc,
	.free = ck_release,
};

static void ck_hash_cb(ck_ht_hash_t *h, const void *key, size_t len, uint64_t seed)
{
	h->value = XXH3_64bits_withSeed(key, len, seed);
}

static int ck_open(void **out, const struct lb_config *cfg)
{
	struct ck_eng *c = calloc(1, sizeof(*c));

	if (!c)
		return -1;
	if (cfg->key_size > CK_HT_KEY_LENGTH) {
		free(c);
		return -1;
	}
	c->key_size = cfg->key_size;
	c->value_size = cfg->value_size;
	/* Room for the working set at ck's load bound of 1/2: no growth later. */
	if (!ck_ht_init(&c->ht, CK_HT_MODE_BYTESTRING, ck_hash_cb, &ck_allocator,
			cfg->entries * 4, cfg->seed)) {
		free(c);
		return -1;
	}
	*out = c;
	return 0;
}

static void ck_close(void *eng)
{
	struct ck_eng *c = eng;
	ck_ht_iterator_t it = CK_HT_ITERATOR_INITIALIZER;
	ck_ht_entry_t *e;

	while (ck_ht_next(&c->ht, &it, &e))
		free(ck_ht_entry_value(e));
	ck_ht_destroy(&c->ht);
	free(c);
}

static inline int ck_get(void *eng, const uint8_t *key, size_t key_len, uint8_t *buf,
			 size_t buf_len)
{
	struct ck_eng *c = eng;
	ck_ht_hash_t h;
	ck_ht_entry_t e;

	ck_ht_hash(&h, &c->ht, key, (uint16_t)key_len);
	ck_ht_entry_key_set(&e, key, (uint16_t)key_len);
	if (!ck_ht_get_spmc(&c->ht, h, &e) || buf_len < c->value_size)
		return 0;
	memcpy(buf, (const uint8_t *)ck_ht_entry_value(&e) + key_len, c->value_size);
	return 1;
}

static inline int ck_put(void *eng, const uint8_t *key, size_t key_len, const uint8_t *val,
			 size_t val_len, uint64_t ttl_ms)
{
	struct ck_eng *c = eng;
	ck_ht_hash_t h;
	ck_ht_entry_t e;
	uint8_t *rec = malloc(key_len + val_len);

	(void)ttl_ms; /* ck_ht has no TTL */
	if (!rec)
		return -1;
	memcpy(rec, key, key_len);
	memcpy(rec + key_len, val, val_len);
	ck_ht_hash(&h, &c->ht, rec, (uint16_t)key_len);
	ck_ht_entry_set(&e, h, rec, (uint16_t)key_len, rec);
	if (!ck_ht_set_spmc(&c->ht, h, &e)) {
		free(rec);
		return -1;
	}
	if (!ck_ht_entry_empty(&e))
		free(ck_ht_entry_value(&e)); /* the replaced record; see file comment */
	return 0;
}

static uint64_t ck_run(void *eng, struct lb_tctx *t, const struct lb_job *job)
{
	return lb_run_loop(eng, t, job, ck_get, ck_put);
}

const struct lb_engine lb_engine_ck = {
	.name = "ck",
	.about = "Concurrency Kit ck_ht (SPMC): reads at any thread count, writes 1 thread",
	.max_threads = { 0, 1, 1 },
	.open = ck_open,
	.put = ck_put,
	.run = ck_run,
	.close = ck_close,
};
