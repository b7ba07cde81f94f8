/*
 * tests/unit/test_oom_ops.c - out of memory in the calls test_oom.c's
 * workload does not make: a compressing cache's reads and conditional
 * writes, touch, get_batch, cursors, larder_save and larder_load.
 *
 * The same sweep as test_oom.c (SQLite's): the workload runs once with the
 * seam larder__test_fail_alloc_after() counting, giving K allocations, then
 * once for every n in 0..K with the n-th allocation failing, in each
 * dictionary mode (LZ4 alone, a given dictionary). Values of 1.5 MiB are
 * past the 1 MiB a thread keeps for decompressing, so every callback read
 * of one allocates (larder_config_set_compression).
 *
 * Invariants checked, for every n (larder.h's promises only):
 *   TOOMX-1. each call returns what it documents or LARDER_ENOMEM, and a
 *       refused call changes nothing: every key holds the value of its last
 *       accepted write, byte-exact through every read path, with the
 *       lifetime that write or touch gave it; a refused touch keeps the
 *       entry and its old lifetime, a refused conditional write or removal
 *       leaves the value; a callback is never called for a value it could
 *       not be handed (get_with), and get_batch's LARDER_ENOMEM comes after
 *       the callbacks of the keys before it, in index order;
 *   TOOMX-2. a cursor whose call failed is unchanged and may be retried: the
 *       walk hands out every key exactly once with its value;
 *   TOOMX-3. a failed save leaves the snapshot already at its path whole
 *       (it still loads, with the values it was saved with) and no
 *       temporary file in the directory; a failed load keeps the entries it
 *       wrote before the failure, each its key's value;
 *   TOOMX-4. closing returns every mapped byte; under AddressSanitizer,
 *       LeakSanitizer checks at exit that no heap block leaked.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <sys/stat.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "core/testing.h"

#define NK 12            /* keys; every sixth holds a BIG value */
#define BIG (1536 * KiB) /* past a thread's 1 MiB decompression buffer */
#define SMALL 3000
#define HOUR_MS 3600000u

struct model {
	unsigned char *val[NK]; /* NULL: absent */
	size_t len[NK];
	uint64_t ttl[NK]; /* LARDER_TTL_NEVER or the ttl_ms it was given */
};

struct world {
	enum larder_dictionary mode;
	struct th_clock clock; /* never moves: every lifetime is exact */
	struct model m, saved; /* the cache; the snapshot at the path */
	unsigned char *buf, *tmp;
	char dir[256], path[300];
	long enomem;
	unsigned char given[4096];
};

static size_t len_of(unsigned k)
{
	return k % 6 == 0 ? BIG : SMALL + 40 * k;
}

static void model_set(struct model *m, unsigned k, const unsigned char *v, size_t len,
		      uint64_t ttl)
{
	free(m->val[k]);
	m->val[k] = malloc(len);
	REQUIRE(m->val[k] != NULL);
	memcpy(m->val[k], v, len);
	m->len[k] = len;
	m->ttl[k] = ttl;
}

static void model_drop(struct model *m, unsigned k)
{
	free(m->val[k]);
	m->val[k] = NULL;
}

static void model_free(struct model *m)
{
	for (unsigned k = 0; k < NK; k++)
		model_drop(m, k);
}

static void model_copy(struct model *to, const struct model *from)
{
	for (unsigned k = 0; k < NK; k++) {
		model_drop(to, k);
		if (from->val[k])
			model_set(to, k, from->val[k], from->len[k], from->ttl[k]);
	}
}

static void key_of(char *key, unsigned k)
{
	snprintf(key, 8, "k%02u", k);
}

/* TOOMX-1: rc is one of the two results the call may give here. */
static int allowed(struct world *w, int rc, int want)
{
	if (rc == LARDER_ENOMEM) {
		w->enomem++;
		return 0;
	}
	CHECK_RC(rc, want);
	return rc == want;
}

/* th_config()'s settings, made here: its allocations may fail too. */
static larder *open_cache(struct world *w)
{
	larder_config *cfg = NULL;
	if (!allowed(w, larder_config_create(&cfg), LARDER_OK))
		return NULL;
	int given = w->mode == LARDER_DICTIONARY_GIVEN;
	int rc = larder_config_set_compression_dictionary(cfg, w->mode, given ? w->given : NULL,
							  given ? sizeof(w->given) : 0);
	CHECK(larder_config_set_capacity(cfg, 64 * MiB) == LARDER_OK &&
	      larder_config_set_hash_seed(cfg, TH_HASH_SEED) == LARDER_OK &&
	      larder_config_set_shards(cfg, th_shards()) == LARDER_OK &&
	      larder_config_set_max_value_bytes(cfg, 2 * MiB) == LARDER_OK &&
	      larder_config_set_clock(cfg, th_clock_fn, &w->clock) == LARDER_OK &&
	      larder_config_set_compression(cfg, 64, 0) == LARDER_OK);
	larder *c = NULL;
	if (allowed(w, rc, LARDER_OK))
		allowed(w, larder_open(&c, cfg), LARDER_OK);
	larder_config_destroy(cfg);
	return c;
}

/* The read callbacks check the bytes against the model's. */
struct read_ctx {
	const struct model *m;
	unsigned k;
	long calls;
	size_t next; /* get_batch: the index the next call must have */
};

static void read_one(void *ctx, const void *value, size_t value_len)
{
	struct read_ctx *r = ctx;
	r->calls++;
	if (CHECK(r->m->val[r->k] != NULL) && CHECK_EQ(value_len, r->m->len[r->k]))
		CHECK_MEM(value, r->m->val[r->k], value_len);
}

static void read_batch(void *ctx, size_t index, const void *value, size_t value_len)
{
	struct read_ctx *r = ctx;
	CHECK_GE(index, r->next); /* in index order */
	r->next = index + 1;
	r->k = (unsigned)index;
	read_one(ctx, value, value_len);
}

/* TOOMX-1: every key reads back as the model says, by get, peek, get_with
 * and ttl_remaining; a read refused for memory is tried again. */
static void verify(struct world *w, larder *c, const struct model *m)
{
	char key[8];
	for (unsigned k = 0; k < NK; k++) {
		key_of(key, k);
		size_t len = 0;
		int want = m->val[k] ? LARDER_OK : LARDER_MISS;
		int rc = larder_peek(c, key, 3, w->buf, BIG, &len);
		if (rc == LARDER_ENOMEM)
			rc = larder_peek(c, key, 3, w->buf, BIG, &len);
		if (!CHECK_RC(rc, want))
			printf("  key %u\n", k);
		if (rc == LARDER_OK && CHECK_EQ(len, m->len[k]))
			CHECK_MEM(w->buf, m->val[k], len);
		struct read_ctx r = { m, k, 0, 0 };
		rc = larder_get_with(c, key, 3, read_one, &r);
		if (rc == LARDER_ENOMEM) { /* fn not called for it */
			CHECK_EQ(r.calls, 0);
			rc = larder_get_with(c, key, 3, read_one, &r);
		}
		CHECK_RC(rc, want);
		CHECK_EQ(r.calls, rc == LARDER_OK);
		uint64_t ttl = 0;
		rc = larder_ttl_remaining(c, key, 3, &ttl);
		CHECK_RC(rc, want);
		if (rc == LARDER_OK)
			CHECK_EQ(ttl, m->ttl[k]);
	}
}

static void put_key(struct world *w, larder *c, unsigned k, uint64_t ttl)
{
	char key[8];
	key_of(key, k);
	size_t len = th_value_make(w->tmp, k, len_of(k), 0);
	if (allowed(w, larder_put(c, key, 3, w->tmp, len, ttl), LARDER_OK))
		model_set(&w->m, k, w->tmp, len, ttl);
}

/* TOOMX-1 for get_batch: its callbacks, in index order, up to a failure. */
static void batch(struct world *w, larder *c)
{
	char keys[NK][8];
	const void *kp[NK];
	size_t kl[NK];
	for (unsigned k = 0; k < NK; k++) {
		key_of(keys[k], k);
		kp[k] = keys[k];
		kl[k] = 3;
	}
	struct read_ctx r = { &w->m, 0, 0, 0 };
	long found = larder_get_batch(c, NK, kp, kl, read_batch, &r);
	long present = 0;
	for (unsigned k = 0; k < NK; k++)
		present += w->m.val[k] != NULL;
	if (found == LARDER_ENOMEM)
		w->enomem++;
	else
		CHECK_EQ(found, present);
	CHECK_LE(r.calls, present);
}

/* Conditional writes and touch on compressed values: a failure changes nothing. */
static void conditional(struct world *w, larder *c)
{
	char key[8];
	for (unsigned k = 0; k < NK; k += 2) {
		key_of(key, k);
		if (!w->m.val[k])
			continue;
		/* A wrong expected value of the same length: compared, not equal. */
		memcpy(w->tmp, w->m.val[k], w->m.len[k]);
		w->tmp[w->m.len[k] - 1] ^= 1;
		allowed(w, larder_replace_if_equals(c, key, 3, w->tmp, w->m.len[k], "x", 1, 0),
			LARDER_MISMATCH);
		size_t len = th_value_make(w->tmp, k, len_of(k), 0);
		if (allowed(w, larder_replace_if_equals(c, key, 3, w->m.val[k], w->m.len[k], w->tmp,
							len, LARDER_TTL_NEVER),
			    LARDER_OK))
			model_set(&w->m, k, w->tmp, len, LARDER_TTL_NEVER);
	}
	for (unsigned k = 1; k < NK; k += 4) {
		key_of(key, k);
		if (!w->m.val[k])
			continue;
		if (allowed(w, larder_remove_if_equals(c, key, 3, w->m.val[k], w->m.len[k]),
			    LARDER_OK))
			model_drop(&w->m, k);
	}
	/* touch: an entry without a deadline gets one, in a copy 8 bytes
	 * longer (key 6's a large entry: a mapping of its own) */
	for (unsigned k = 0; k < NK; k += 3) {
		key_of(key, k);
		if (w->m.val[k] && allowed(w, larder_touch(c, key, 3, HOUR_MS), LARDER_OK))
			w->m.ttl[k] = HOUR_MS;
	}
}

/* TOOMX-2: a cursor walked with retries hands out each key once, whole. */
struct walk_ctx {
	const struct model *m;
	int seen[NK];
};

static void walk_fn(void *ctx, const void *key, size_t key_len, const void *value,
		    size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk_ctx *wc = ctx;
	(void)entry_bytes;
	unsigned k = 0;
	if (!CHECK_EQ(key_len, 3) || sscanf((const char *)key + 1, "%2u", &k) != 1 ||
	    !CHECK_LT(k, NK))
		return;
	wc->seen[k]++;
	if (CHECK(wc->m->val[k] != NULL) && CHECK_EQ(value_len, wc->m->len[k])) {
		CHECK_MEM(value, wc->m->val[k], value_len);
		CHECK_EQ(ttl_ms, wc->m->ttl[k]);
	}
}

static void walk(struct world *w, larder *c)
{
	larder_iter *it = NULL;
	int rc = larder_iter_open(c, &it);
	if (!allowed(w, rc, LARDER_OK)) {
		CHECK(it == NULL);
		return;
	}
	struct walk_ctx wc = { &w->m, { 0 } };
	for (int tries = 0; tries < 10000; tries++) {
		rc = larder_iter_next(it, walk_fn, &wc);
		if (rc == LARDER_MISS)
			break;
		if (rc != LARDER_ENOMEM)
			CHECK_RC(rc, LARDER_OK);
		else
			w->enomem++;
	}
	CHECK_RC(rc, LARDER_MISS);
	larder_iter_close(it);
	for (unsigned k = 0; k < NK; k++)
		CHECK_EQ(wc.seen[k], w->m.val[k] != NULL);
}

/* TOOMX-3: no "<name>.tmp.*" left beside the snapshot. */
static void check_no_temporary(struct world *w)
{
	DIR *d = opendir(w->dir);
	if (!CHECK(d != NULL))
		return;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		if (!CHECK(strstr(e->d_name, ".tmp.") == NULL))
			printf("  left behind: %s\n", e->d_name);
	closedir(d);
}

/* TOOMX-3: a save that fails leaves what was at the path. */
static void save(struct world *w, larder *c)
{
	if (allowed(w, larder_save(c, w->path), LARDER_OK))
		model_copy(&w->saved, &w->m);
	check_no_temporary(w);
}

/* The snapshot at the path, loaded with nothing failing, holds w->saved.
 * The clock has not moved since the save, so lifetimes come back as saved
 * less the wall-clock time the load subtracts (at most a minute here). */
static void check_snapshot(struct world *w)
{
	long left = larder__test_fail_alloc_after(-1);
	larder *c = open_cache(w);
	if (c) {
		int rc = access(w->path, F_OK) == 0 ? larder_load(c, w->path) : LARDER_OK;
		CHECK_RC(rc, LARDER_OK);
		char key[8];
		for (unsigned k = 0; k < NK; k++) {
			key_of(key, k);
			size_t len = 0;
			rc = larder_peek(c, key, 3, w->buf, BIG, &len);
			CHECK_RC(rc, w->saved.val[k] ? LARDER_OK : LARDER_MISS);
			if (rc == LARDER_OK && CHECK_EQ(len, w->saved.len[k]))
				CHECK_MEM(w->buf, w->saved.val[k], len);
		}
		larder_close(c);
	}
	larder__test_fail_alloc_after(left);
}

/* TOOMX-3: a load keeps what it wrote before a failure; all or none counted. */
static void load(struct world *w)
{
	larder *c = open_cache(w);
	if (!c)
		return;
	int rc = larder_load(c, w->path);
	if (rc == LARDER_ENOMEM)
		w->enomem++;
	else
		CHECK_RC(rc, LARDER_OK);
	char key[8];
	for (unsigned k = 0; k < NK; k++) {
		key_of(key, k);
		size_t len = 0;
		int got = larder_peek(c, key, 3, w->buf, BIG, &len);
		if (got == LARDER_ENOMEM)
			got = larder_peek(c, key, 3, w->buf, BIG, &len);
		if (rc == LARDER_OK || got == LARDER_OK)
			CHECK_RC(got, w->saved.val[k] ? LARDER_OK : LARDER_MISS);
		if (got == LARDER_OK && CHECK_EQ(len, w->saved.len[k]))
			CHECK_MEM(w->buf, w->saved.val[k], len);
	}
	th_check_accounting(c, 60000, NULL, NULL);
	larder_close(c);
}

static void workload(struct world *w)
{
	model_free(&w->m);
	model_free(&w->saved);
	unlink(w->path);
	larder *c = open_cache(w);
	if (!c)
		return;
	for (unsigned k = 0; k < NK; k++)
		put_key(w, c, k, k % 5 == 0 ? HOUR_MS : LARDER_TTL_NEVER);
	save(w, c);
	verify(w, c, &w->m);
	batch(w, c);
	conditional(w, c);
	verify(w, c, &w->m);
	walk(w, c);
	save(w, c); /* over the first snapshot */
	check_snapshot(w);
	load(w);
	th_check_accounting(c, 60000, NULL, NULL);
	larder_close(c);
}

static void sweep(enum larder_dictionary mode)
{
	struct world *w = calloc(1, sizeof(*w));
	REQUIRE(w != NULL);
	w->mode = mode;
	th_clock_init(&w->clock, 1000);
	w->buf = malloc(BIG);
	w->tmp = malloc(BIG);
	REQUIRE(w->buf && w->tmp);
	th_value_make(w->given, 1000, sizeof(w->given), 0);
	/* tmpfs where there is one: each run saves twice, and an fsync there
	 * costs nothing */
	snprintf(w->dir, sizeof(w->dir), "%s/larder-oom-ops-%d",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
	REQUIRE(mkdir(w->dir, 0700) == 0);
	snprintf(w->path, sizeof(w->path), "%s/snap", w->dir);
	uint64_t mapped = larder__test_mapped_bytes();

	larder__test_fail_alloc_after(LONG_MAX);
	workload(w);
	long total = LONG_MAX - larder__test_fail_alloc_after(-1);
	CHECK_EQ(w->enomem, 0);
	CHECK_GT(total, 20);
	long stride = TH_TSAN ? 3 : 1, runs = 0;
	for (long n = 0; n <= total + 2; n += stride, runs++) {
		larder__test_fail_alloc_after(n);
		workload(w);
		larder__test_fail_alloc_after(-1);
		if (!CHECK_EQ(larder__test_mapped_bytes(), mapped)) /* TOOMX-4 */
			printf("  n = %ld leaked mappings\n", n);
		if (th_failures() > 20) {
			printf("  stopped at n = %ld\n", n);
			break;
		}
	}
	printf("  %ld allocations, %ld runs, %ld ENOMEM returned\n", total, runs, w->enomem);
	CHECK_GT(w->enomem, 0);
	model_free(&w->m);
	model_free(&w->saved);
	unlink(w->path);
	rmdir(w->dir);
	free(w->buf);
	free(w->tmp);
	free(w);
}

static void test_every_allocation_fails_lz4(void)
{
	sweep(LARDER_DICTIONARY_NONE);
}

static void test_every_allocation_fails_given_dictionary(void)
{
	sweep(LARDER_DICTIONARY_GIVEN);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_every_allocation_fails_lz4),
		TH_TEST(test_every_allocation_fails_given_dictionary),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
