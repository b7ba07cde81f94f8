/*
 * tests/unit/test_audit_capi.c - the C library against larder.h, as an
 * outside tester reads it, on the options the other contract tables leave
 * at their defaults (this file also runs as unit_audit_capi_shards4; its
 * rows set their own shard counts).
 *
 * What it owns:
 *   - test_option_table: a table of configurations crossing the shard
 *     count (1, 2, 4, 64), the capacity (64 KiB, the least, up to 64 MiB),
 *     max key bytes (1, 250, LARDER_KEY_LIMIT), max value bytes (0 up to
 *     the default), the write wait (0 and the harness's), expected entries
 *     (0 to 10^6), every policy, both expiry modes with and without a
 *     default TTL, LZ4 compression and a removal listener; each row runs one
 *     script of every operation (get, peek, access, contains, ttl_remaining,
 *     get_with, get_batch, put and its variants, the two compare-and-sets,
 *     remove, touch, clear, set_capacity, flush, stats, cursors, save and
 *     load into a twin) with an injected clock and holds, after each step
 *     and a larder_flush (the maintainer's counters lag without one):
 *       - HITS, MISSES, WRITES, REMOVALS, REPLACEMENTS, EXPIRATIONS,
 *         CLEARED and ENTRIES equal what the calls returned (nothing evicts:
 *         each row's keys fit its capacity), and WRITES == ENTRIES + every
 *         removal cause;
 *       - the size boundaries of the row's limits: a key of max_key_bytes
 *         and a value of max_value_bytes accepted, one byte more refused
 *         with LARDER_EKEYSIZE or LARDER_EVALSIZE by every operation that
 *         takes one, the key's old value intact, nothing counted;
 *       - the listener hears each removal once, under its counted cause;
 *       - a cursor hands out ENTRIES entries whose bytes sum to LIVE_BYTES,
 *         and a twin loaded from a save holds the same values.
 *   - test_cut_releases_shared_pages: after larder_set_capacity() cuts a
 *     cache whose entries were written by a light writer (held in the pages
 *     the cache's writers share, SLAB-S8), no size class keeps an empty
 *     page (docs/memory.md, "How memory goes back": pages that empty are
 *     retired); the shared pages stayed mapped before (4.3 MiB for a cache
 *     cut to 64 KiB at one shard, 67 MiB at 16).
 *   - test_cut_beside_light_writers: that release racing the light writers
 *     who allocate from those pages, cut after cut: every value read back
 *     whole, the counters and the memory audit exact at the end (also
 *     under ThreadSanitizer and AddressSanitizer).
 *   - test_conditional_write_failures_charge_nothing: a put_if_absent,
 *     replace or compare-and-set that ends in LARDER_EXISTS, LARDER_MISS or
 *     LARDER_MISMATCH reserved its room first (larder.h, "Return values",
 *     rule 4), so it may map a page, but stores, charges and counts
 *     nothing, and the page serves the next writes of its class.
 *
 * Not here: concurrency (the stress tests), damaged snapshots
 * (test_audit_core.c), the compression dictionaries and pools
 * (test_contracts_ops.c), out of memory (test_oom_ops.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define T0 1000u
#define HOUR 3600000u
#define NK 8 /* keys per script */
#define FLUSH_MS (60000u * TH_SLOW)

struct row {
	const char *name;
	unsigned shards;
	uint64_t capacity;
	size_t max_key, max_value;
	uint64_t write_wait_ms, expected;
	enum larder_policy policy;
	enum larder_expiry expiry;
	uint64_t default_ttl_ms; /* 0: none */
	int compress, listener;
};

#define KEY_DEF 250u
#define VAL_DEF ((size_t)1 << 20)

static const struct row rows[] = {
	{"least-1", 1, 64 * KiB, KEY_DEF, VAL_DEF, TH_WRITE_WAIT_MS, 4096, LARDER_POLICY_DEFAULT,
	 LARDER_EXPIRE_AFTER_WRITE, 0, 0, 1},
	{"least-64", 64, 64 * KiB, KEY_DEF, VAL_DEF, TH_WRITE_WAIT_MS, 4096, LARDER_POLICY_S3FIFO,
	 LARDER_EXPIRE_AFTER_WRITE, 0, 0, 1},
	{"keymax-2", 2, 4 * MiB, LARDER_KEY_LIMIT, 1024, TH_WRITE_WAIT_MS, 0, LARDER_POLICY_FIFO,
	 LARDER_EXPIRE_AFTER_WRITE, HOUR, 0, 1},
	{"key1-value0-4", 4, MiB, 1, 0, TH_WRITE_WAIT_MS, 1, LARDER_POLICY_LRU,
	 LARDER_EXPIRE_AFTER_WRITE, 0, 0, 1},
	{"wait0-4", 4, 64 * KiB, 16, 512, 0, 1000000, LARDER_POLICY_WTINYLFU,
	 LARDER_EXPIRE_AFTER_ACCESS, HOUR, 0, 0},
	{"access-64", 64, 64 * MiB, KEY_DEF, 4096, TH_WRITE_WAIT_MS, 100, LARDER_POLICY_ARC,
	 LARDER_EXPIRE_AFTER_ACCESS, HOUR, 1, 1},
	{"tuned-2", 2, 256 * KiB, 64, 8192, 0, 4096, LARDER_POLICY_WTINYLFU_TUNED,
	 LARDER_EXPIRE_AFTER_ACCESS, 0, 1, 1},
	{"s3tuned-1", 1, 16 * MiB, KEY_DEF, VAL_DEF, TH_WRITE_WAIT_MS, 1000000,
	 LARDER_POLICY_S3FIFO_TUNED, LARDER_EXPIRE_AFTER_WRITE, HOUR, 1, 0},
};

/* What the listener heard, by cause. */
struct heard {
	_Atomic uint64_t calls[5];
};

static void listen(void *ctx, const void *key, size_t key_len, const void *value, size_t value_len,
		   enum larder_cause cause)
{
	(void)key, (void)key_len, (void)value, (void)value_len;
	struct heard *h = ctx;
	if ((unsigned)cause < 5)
		atomic_fetch_add(&h->calls[cause], 1);
}

/* What the calls returned, which the counters must equal. */
struct model {
	uint64_t hits, misses, writes, removals, replacements, expirations, cleared, entries;
};

struct run {
	const struct row *r;
	struct th_clock clock;
	struct heard heard;
	struct model m;
	larder *c;
	size_t klen, vlen;    /* the script's key and value lengths */
	uint64_t entry_limit; /* capacity / 8 */
};

static larder *open_row(struct run *x)
{
	const struct row *r = x->r;
	larder_config *cfg = th_config(r->capacity);
	if (!cfg)
		return NULL;
	int ok = CHECK_RC(larder_config_set_shards(cfg, r->shards), LARDER_OK) &&
		 CHECK_RC(larder_config_set_max_key_bytes(cfg, r->max_key), LARDER_OK) &&
		 CHECK_RC(larder_config_set_max_value_bytes(cfg, r->max_value), LARDER_OK) &&
		 CHECK_RC(larder_config_set_write_wait_ms(cfg, r->write_wait_ms), LARDER_OK) &&
		 CHECK_RC(larder_config_set_expected_entries(cfg, r->expected), LARDER_OK) &&
		 CHECK_RC(larder_config_set_policy(cfg, r->policy), LARDER_OK) &&
		 CHECK_RC(larder_config_set_expiry(cfg, r->expiry), LARDER_OK) &&
		 CHECK_RC(larder_config_set_default_ttl_ms(cfg, r->default_ttl_ms), LARDER_OK) &&
		 CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, &x->clock), LARDER_OK) &&
		 CHECK_RC(larder_config_set_compression(cfg, r->compress ? 64 : 0, 0), LARDER_OK) &&
		 CHECK_RC(larder_config_set_removal_listener(cfg, r->listener ? listen : NULL,
							     &x->heard),
			  LARDER_OK);
	if (!ok) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return th_open(cfg);
}

/* Key i of the script: its number, padded to len bytes (len >= 1). */
static size_t key_of(char *k, unsigned i, size_t len)
{
	memset(k, 'k', len);
	k[0] = (char)('a' + i);
	return len;
}

/* Value i of the script, of len bytes, compressible half the time. */
static void value_of(unsigned char *v, unsigned i, size_t len)
{
	for (size_t j = 0; j < len; j++)
		v[j] = (unsigned char)((i & 1) ? 'a' + (j % 7) : th_mix64(i * 1000003u + j));
}

static void check_counters(struct run *x, int line)
{
	REQUIRE_RC(larder_flush(x->c, FLUSH_MS), LARDER_OK);
	uint64_t v[LARDER_STAT_COUNT];
	REQUIRE_RC(larder_stats(x->c, v, LARDER_STAT_COUNT), LARDER_OK);
	const struct model *m = &x->m;
	int ok = CHECK_EQ(v[LARDER_STAT_HITS], m->hits) &
		 CHECK_EQ(v[LARDER_STAT_MISSES], m->misses) &
		 CHECK_EQ(v[LARDER_STAT_WRITES], m->writes) &
		 CHECK_EQ(v[LARDER_STAT_REMOVALS], m->removals) &
		 CHECK_EQ(v[LARDER_STAT_REPLACEMENTS], m->replacements) &
		 CHECK_EQ(v[LARDER_STAT_EXPIRATIONS], m->expirations) &
		 CHECK_EQ(v[LARDER_STAT_CLEARED], m->cleared) &
		 CHECK_EQ(v[LARDER_STAT_ENTRIES], m->entries) &
		 CHECK_EQ(v[LARDER_STAT_EVICTIONS], 0) &
		 CHECK_EQ(v[LARDER_STAT_WRITES],
			  v[LARDER_STAT_ENTRIES] + v[LARDER_STAT_EVICTIONS] +
				  v[LARDER_STAT_EXPIRATIONS] + v[LARDER_STAT_REMOVALS] +
				  v[LARDER_STAT_REPLACEMENTS] + v[LARDER_STAT_CLEARED]);
	if (!ok)
		printf("  row %s: counters differ at line %d\n", x->r->name, line);
}

static int heard_all(void *ctx)
{
	struct run *x = ctx;
	const struct model *m = &x->m;
	return atomic_load(&x->heard.calls[LARDER_CAUSE_EXPLICIT]) == m->removals &&
	       atomic_load(&x->heard.calls[LARDER_CAUSE_REPLACED]) == m->replacements &&
	       atomic_load(&x->heard.calls[LARDER_CAUSE_EXPIRED]) == m->expirations &&
	       atomic_load(&x->heard.calls[LARDER_CAUSE_CLEARED]) == m->cleared &&
	       atomic_load(&x->heard.calls[LARDER_CAUSE_EVICTED]) == 0;
}

static void check_heard(struct run *x)
{
	if (!x->r->listener)
		return;
	if (!CHECK(th_wait_until(heard_all, x, FLUSH_MS)))
		printf("  row %s: the listener heard %" PRIu64 " explicit, %" PRIu64
		       " replaced, %" PRIu64 " expired, %" PRIu64 " evicted, %" PRIu64 " cleared\n",
		       x->r->name, atomic_load(&x->heard.calls[0]), atomic_load(&x->heard.calls[1]),
		       atomic_load(&x->heard.calls[2]), atomic_load(&x->heard.calls[3]),
		       atomic_load(&x->heard.calls[4]));
}

static void read_cb(void *ctx, const void *v, size_t n)
{
	(void)v;
	*(size_t *)ctx = n;
}

static void batch_cb(void *ctx, size_t i, const void *v, size_t n)
{
	(void)v, (void)n;
	*(uint64_t *)ctx |= (uint64_t)1 << i;
}

struct walk {
	uint64_t entries, bytes;
};

static void iter_cb(void *ctx, const void *k, size_t kl, const void *v, size_t vl, uint64_t ttl,
		    uint64_t entry_bytes)
{
	(void)k, (void)kl, (void)v, (void)vl, (void)ttl;
	struct walk *w = ctx;
	w->entries++;
	w->bytes += entry_bytes;
}

/* Every operation that takes a key refuses this one with rc, counting nothing. */
static void check_key_refused(struct run *x, const char *k, size_t kl, int rc)
{
	larder *c = x->c;
	unsigned char b[8];
	size_t n = 0;
	uint64_t t;
	const void *keys[1] = {k};
	size_t lens[1] = {kl};
	uint64_t found = 0;
	CHECK_RC(larder_get(c, k, kl, b, sizeof(b), &n), rc);
	CHECK_RC(larder_peek(c, k, kl, b, sizeof(b), &n), rc);
	CHECK_RC(larder_access(c, k, kl), rc);
	CHECK_RC(larder_contains(c, k, kl), rc);
	CHECK_RC(larder_ttl_remaining(c, k, kl, &t), rc);
	CHECK_RC(larder_get_with(c, k, kl, read_cb, &n), rc);
	CHECK_RC(larder_get_batch(c, 1, keys, lens, batch_cb, &found), 0); /* skipped */
	CHECK_EQ(found, 0);
	CHECK_RC(larder_put(c, k, kl, b, 0, LARDER_TTL_DEFAULT), rc);
	CHECK_RC(larder_put_if_absent(c, k, kl, b, 0, LARDER_TTL_DEFAULT), rc);
	CHECK_RC(larder_replace(c, k, kl, b, 0, LARDER_TTL_DEFAULT), rc);
	CHECK_RC(larder_replace_if_equals(c, k, kl, b, 0, b, 0, LARDER_TTL_DEFAULT), rc);
	CHECK_RC(larder_remove(c, k, kl), rc);
	CHECK_RC(larder_remove_if_equals(c, k, kl, b, 0), rc);
	CHECK_RC(larder_touch(c, k, kl, LARDER_TTL_DEFAULT), rc);
}

/* Every write refuses a value of len bytes for key k with LARDER_EVALSIZE,
 * and k keeps its value old (old_len bytes). */
static void check_value_refused(struct run *x, const char *k, size_t kl, const unsigned char *v,
				size_t len, const unsigned char *old, size_t old_len)
{
	larder *c = x->c;
	CHECK_RC(larder_put(c, k, kl, v, len, LARDER_TTL_DEFAULT), LARDER_EVALSIZE);
	CHECK_RC(larder_put_if_absent(c, k, kl, v, len, LARDER_TTL_DEFAULT), LARDER_EVALSIZE);
	CHECK_RC(larder_replace(c, k, kl, v, len, LARDER_TTL_DEFAULT), LARDER_EVALSIZE);
	CHECK_RC(larder_replace_if_equals(c, k, kl, old, old_len, v, len, LARDER_TTL_DEFAULT),
		 LARDER_EVALSIZE);
	unsigned char *b = malloc(old_len + 1);
	size_t n = 0;
	if (CHECK(b != NULL) && CHECK_RC(larder_peek(c, k, kl, b, old_len + 1, &n), LARDER_OK) &&
	    CHECK_EQ(n, old_len))
		CHECK_MEM(b, old, old_len);
	free(b);
}

static void script(struct run *x)
{
	const struct row *r = x->r;
	larder *c = x->c;
	struct model *m = &x->m;
	char *k = malloc(LARDER_KEY_LIMIT + 2);
	size_t vmax = r->max_value + 2;
	unsigned char *v = malloc(vmax), *w = malloc(vmax), *b = malloc(vmax);
	REQUIRE(k && v && w && b);
	size_t n = 0;
	uint64_t t = 0;

	/* The script's keys and values are short; step 4 tries the longest. */
	x->klen = r->max_key < 40 ? r->max_key : 40;
	x->vlen = r->max_value < 100 ? r->max_value : 100;
	x->entry_limit = r->capacity / 8;

	/* 1. Bad keys, before anything is stored: nothing counted. */
	check_key_refused(x, NULL, 1, LARDER_EINVAL);
	check_key_refused(x, "k", 0, LARDER_EINVAL);
	check_key_refused(x, k, key_of(k, 0, r->max_key + 1), LARDER_EKEYSIZE);
	check_counters(x, __LINE__);

	/* 2. NK keys written, each read back by every read. */
	for (unsigned i = 0; i < NK; i++) {
		size_t kl = key_of(k, i, x->klen);
		value_of(v, i, x->vlen);
		CHECK_RC(larder_put(c, k, kl, v, x->vlen, LARDER_TTL_DEFAULT), LARDER_OK);
		m->writes++, m->entries++;
	}
	check_counters(x, __LINE__);
	const void *keys[NK + 2];
	size_t lens[NK + 2];
	char *bk = malloc((NK + 2) * x->klen);
	REQUIRE(bk != NULL);
	for (unsigned i = 0; i < NK + 2; i++) {
		lens[i] = key_of(bk + i * x->klen, i, x->klen);
		keys[i] = bk + i * x->klen;
	}
	for (unsigned i = 0; i < NK; i++) {
		size_t kl = key_of(k, i, x->klen);
		value_of(v, i, x->vlen);
		if (CHECK_RC(larder_get(c, k, kl, b, vmax, &n), LARDER_OK) && CHECK_EQ(n, x->vlen))
			CHECK_MEM(b, v, x->vlen);
		m->hits++;
		if (x->vlen > 0) /* too small a buffer: nothing read, nothing counted */
			CHECK_RC(larder_get(c, k, kl, b, x->vlen - 1, &n), LARDER_EBUFSIZE);
		CHECK_RC(larder_peek(c, k, kl, b, vmax, &n), LARDER_OK);
		CHECK_RC(larder_access(c, k, kl), LARDER_OK);
		CHECK_RC(larder_contains(c, k, kl), LARDER_OK);
		CHECK_RC(larder_ttl_remaining(c, k, kl, &t), LARDER_OK);
		CHECK_EQ(t, r->default_ttl_ms ? r->default_ttl_ms : LARDER_TTL_NEVER);
		n = SIZE_MAX;
		CHECK_RC(larder_get_with(c, k, kl, read_cb, &n), LARDER_OK);
		CHECK_EQ(n, x->vlen);
		m->hits++;
	}
	/* The two keys past NK are absent: two misses each round. */
	uint64_t found = 0;
	CHECK_RC(larder_get_batch(c, NK + 2, keys, lens, batch_cb, &found), NK);
	CHECK_EQ(found, ((uint64_t)1 << NK) - 1);
	m->hits += NK, m->misses += 2;
	size_t kabs = key_of(k, NK, x->klen);
	CHECK_RC(larder_get(c, k, kabs, b, vmax, &n), LARDER_MISS);
	CHECK_RC(larder_get_with(c, k, kabs, read_cb, &n), LARDER_MISS);
	m->misses += 2;
	CHECK_RC(larder_peek(c, k, kabs, b, vmax, &n), LARDER_MISS);
	CHECK_RC(larder_access(c, k, kabs), LARDER_MISS);
	CHECK_RC(larder_contains(c, k, kabs), LARDER_MISS);
	CHECK_RC(larder_ttl_remaining(c, k, kabs, &t), LARDER_MISS);
	CHECK_RC(larder_touch(c, k, kabs, LARDER_TTL_DEFAULT), LARDER_MISS);
	CHECK_RC(larder_remove(c, k, kabs), LARDER_MISS);
	CHECK_RC(larder_remove_if_equals(c, k, kabs, v, 0), LARDER_MISS);
	CHECK_RC(larder_replace(c, k, kabs, v, 0, LARDER_TTL_DEFAULT), LARDER_MISS);
	CHECK_RC(larder_replace_if_equals(c, k, kabs, v, 0, v, 0, LARDER_TTL_DEFAULT), LARDER_MISS);
	check_counters(x, __LINE__);

	/* 3. The conditional writes, each result counted as it says. */
	size_t k0 = key_of(k, 0, x->klen);
	value_of(v, 0, x->vlen);
	value_of(w, 1, x->vlen);
	CHECK_RC(larder_put_if_absent(c, k, k0, w, x->vlen, LARDER_TTL_DEFAULT), LARDER_EXISTS);
	if (x->vlen > 0) { /* the only value of a row with max value 0 equals itself */
		CHECK_RC(larder_replace_if_equals(c, k, k0, w, x->vlen, w, x->vlen,
						  LARDER_TTL_DEFAULT),
			 LARDER_MISMATCH);
		CHECK_RC(larder_remove_if_equals(c, k, k0, w, x->vlen), LARDER_MISMATCH);
	}
	/* An expected value longer than max_value_bytes is no error (rule 5). */
	CHECK_RC(larder_replace_if_equals(c, k, k0, w, r->max_value + 1, w, 0, LARDER_TTL_DEFAULT),
		 LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(c, k, k0, v, x->vlen, w, x->vlen, LARDER_TTL_DEFAULT),
		 LARDER_OK);
	m->writes++, m->replacements++;
	CHECK_RC(larder_replace(c, k, k0, v, x->vlen, LARDER_TTL_DEFAULT), LARDER_OK);
	m->writes++, m->replacements++;
	CHECK_RC(larder_touch(c, k, k0, HOUR), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, k, k0, &t), LARDER_OK);
	CHECK_EQ(t, HOUR);
	CHECK_RC(larder_touch(c, k, k0, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, k, k0, &t), LARDER_OK);
	CHECK_EQ(t, LARDER_TTL_NEVER);
	size_t k1 = key_of(k, 1, x->klen);
	value_of(v, 1, x->vlen);
	CHECK_RC(larder_remove_if_equals(c, k, k1, v, x->vlen), LARDER_OK);
	m->removals++, m->entries--;
	size_t k2 = key_of(k, 2, x->klen);
	CHECK_RC(larder_remove(c, k, k2), LARDER_OK);
	m->removals++, m->entries--;
	CHECK_RC(larder_put_if_absent(c, k, k2, v, x->vlen, LARDER_TTL_DEFAULT), LARDER_OK);
	m->writes++, m->entries++;
	check_counters(x, __LINE__);
	check_heard(x);

	/* 4. The size limits: the longest key and value accepted, one byte
	 * more refused by every write with the old value intact. */
	if (r->max_key + 64 < x->entry_limit) {
		size_t kl = key_of(k, NK + 1, r->max_key);
		CHECK_RC(larder_put(c, k, kl, v, 0, LARDER_TTL_DEFAULT), LARDER_OK);
		m->writes++, m->entries++;
		CHECK_RC(larder_remove(c, k, kl), LARDER_OK);
		m->removals++, m->entries--;
	}
	size_t k3 = key_of(k, 3, x->klen);
	value_of(w, 3, x->vlen);
	if (r->max_value + 64 < x->entry_limit) {
		value_of(v, 5, r->max_value);
		CHECK_RC(larder_put(c, k, k3, v, r->max_value, LARDER_TTL_DEFAULT), LARDER_OK);
		m->writes++, m->replacements++;
		CHECK_RC(larder_put(c, k, k3, w, x->vlen, LARDER_TTL_DEFAULT), LARDER_OK);
		m->writes++, m->replacements++;
		if (r->max_value < LARDER_VALUE_LIMIT)
			check_value_refused(x, k, k3, v, r->max_value + 1, w, x->vlen);
	} else if (!r->compress) {
		/* The entry limit comes first: a value that alone is 1/8 of
		 * the capacity makes too large an entry. */
		value_of(v, 5, x->entry_limit);
		check_value_refused(x, k, k3, v, x->entry_limit, w, x->vlen);
	}
	check_counters(x, __LINE__);

	/* 5. A cursor sees the counted entries and bytes; a twin loaded from
	 * a save holds the same values. */
	larder_iter *it = NULL;
	struct walk wk = {0, 0};
	if (CHECK_RC(larder_iter_open(c, &it), LARDER_OK)) {
		int rc;
		while ((rc = larder_iter_next(it, iter_cb, &wk)) == LARDER_OK)
			;
		CHECK_RC(rc, LARDER_MISS);
		CHECK_RC(larder_iter_next(it, iter_cb, &wk), LARDER_MISS);
		larder_iter_close(it);
	}
	CHECK_EQ(wk.entries, m->entries);
	CHECK_EQ(wk.bytes, th_stat(c, LARDER_STAT_LIVE_BYTES));
	char path[128];
	snprintf(path, sizeof(path), "/tmp/larder_audit_capi_%d_%s.snap", (int)getpid(), r->name);
	if (CHECK_RC(larder_save(c, path), LARDER_OK)) {
		struct run twin = {.r = r};
		th_clock_init(&twin.clock, atomic_load(&x->clock.now_ms));
		if ((twin.c = open_row(&twin)) != NULL) {
			CHECK_RC(larder_load(twin.c, path), LARDER_OK);
			REQUIRE_RC(larder_flush(twin.c, FLUSH_MS), LARDER_OK);
			CHECK_EQ(th_stat(twin.c, LARDER_STAT_ENTRIES), m->entries);
			for (unsigned i = 0; i < NK; i++) {
				size_t kl = key_of(k, i, x->klen), n2 = 0;
				int rc = larder_peek(c, k, kl, v, vmax, &n);
				CHECK_RC(larder_peek(twin.c, k, kl, w, vmax, &n2), rc);
				if (rc == LARDER_OK && CHECK_EQ(n2, n))
					CHECK_MEM(w, v, n);
			}
			larder_close(twin.c);
		}
		unlink(path);
	}
	check_counters(x, __LINE__);

	/* 6. Capacity: out of range refused, a cut and a raise accepted, the
	 * entries kept (they fit the least capacity). */
	CHECK_RC(larder_set_capacity(c, 64 * KiB - 1), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(c, (UINT64_MAX >> 2) + 1), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(c, 64 * KiB), LARDER_OK);
	CHECK_RC(larder_set_capacity(c, r->capacity), LARDER_OK);
	check_counters(x, __LINE__);

	/* 7. Expiry: a key written for 10 ms is gone at its deadline, counted
	 * once (its read a miss). */
	size_t k4 = key_of(k, 4, x->klen);
	CHECK_RC(larder_put(c, k, k4, v, 0, 10), LARDER_OK);
	m->writes++, m->replacements++;
	th_clock_advance(&x->clock, 10);
	CHECK_RC(larder_get(c, k, k4, b, vmax, &n), LARDER_MISS);
	m->misses++;
	m->expirations++, m->entries--; /* the flush makes the expiry due at the call */
	check_counters(x, __LINE__);
	check_heard(x);

	/* 8. A clear counts every live entry CLEARED. */
	CHECK_RC(larder_clear(c), LARDER_OK);
	m->cleared += m->entries;
	m->entries = 0;
	check_counters(x, __LINE__);
	check_heard(x);
	th_check_accounting(c, 60000, NULL, NULL);
	free(bk);
	free(k);
	free(v);
	free(w);
	free(b);
}

static void test_option_table(void)
{
	for (size_t i = 0; i < TH_COUNT(rows); i++) {
		struct run *x = calloc(1, sizeof(*x));
		REQUIRE(x != NULL);
		x->r = &rows[i];
		th_clock_init(&x->clock, T0);
		long before = th_failures();
		if ((x->c = open_row(x)) != NULL) {
			script(x);
			larder_close(x->c);
		}
		if (th_failures() != before)
			printf("  row %s failed\n", rows[i].name);
		free(x);
	}
}

static uint64_t class_stat_sum(larder *c, enum larder_class_stat stat)
{
	uint64_t sum = 0, v[LARDER_CLASS_STAT_COUNT];
	for (size_t k = 0; k < larder_size_class_count(); k++)
		if (CHECK_RC(larder_stats_size_class(c, k, v, LARDER_CLASS_STAT_COUNT), LARDER_OK))
			sum += v[stat];
	return sum;
}

/*
 * A light writer (a few entries of each of 12 size classes per shard, fewer
 * than LARDER__SLAB_OWN_AFTER, so all of them in the shared pages) fills a
 * cache; a cut to 64 KiB evicts nearly all of it. Every class page left
 * must hold a live entry: an empty one is retired (to the reserve or the
 * returner), whoever allocated from it.
 */
static void cut_light_writer(unsigned shards)
{
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg != NULL);
	CHECK_RC(larder_config_set_shards(cfg, shards), LARDER_OK);
	larder *c = th_open(cfg);
	unsigned char *v = calloc(1, 200 * KiB);
	REQUIRE(c != NULL && v != NULL);
	char key[16];
	for (unsigned i = 0; i < 4 * 12 * shards; i++) {
		size_t len = (size_t)100 << (i % 12);
		snprintf(key, sizeof(key), "l%u", i);
		CHECK_RC(larder_put(c, key, strlen(key), v, len < 200 * KiB ? len : 200 * KiB,
				    LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	CHECK_RC(larder_set_capacity(c, 64 * KiB), LARDER_OK);
	CHECK_RC(larder_flush(c, FLUSH_MS), LARDER_OK);
	REQUIRE_EQ(th_quiesce(c, 60000), 0);
	uint64_t entries = th_stat(c, LARDER_STAT_ENTRIES);
	uint64_t mapped = th_stat(c, LARDER_STAT_PAGES_MAPPED);
	uint64_t reserve = th_stat(c, LARDER_STAT_RESERVE_BYTES);
	uint64_t class_bytes = class_stat_sum(c, LARDER_CLASS_BYTES);
	printf("  %u shards: after the cut %" PRIu64 " entries, %" PRIu64 " class pages (%" PRIu64
	       " KiB), %" PRIu64 " KiB mapped, %" PRIu64 " KiB of it the reserve\n",
	       shards, entries, class_stat_sum(c, LARDER_CLASS_PAGES), class_bytes / KiB,
	       mapped / KiB, reserve / KiB);
	CHECK_LE(th_stat(c, LARDER_STAT_LIVE_BYTES), 64 * KiB);
	uint64_t cls[LARDER_CLASS_STAT_COUNT];
	for (size_t k = 0; k < larder_size_class_count(); k++)
		if (CHECK_RC(larder_stats_size_class(c, k, cls, LARDER_CLASS_STAT_COUNT),
			     LARDER_OK) &&
		    !CHECK_LE(cls[LARDER_CLASS_PAGES], cls[LARDER_CLASS_SLOTS_USED]))
			printf("  class %zu (%" PRIu64 " B slots): %" PRIu64 " pages for %" PRIu64
			       " live slots\n",
			       k, cls[LARDER_CLASS_SLOT_BYTES], cls[LARDER_CLASS_PAGES],
			       cls[LARDER_CLASS_SLOTS_USED]);
	CHECK_EQ(mapped, class_bytes + reserve + th_stat(c, LARDER_STAT_LARGE_BYTES));
	/* The pages come back for the next light writes. */
	for (unsigned i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "m%u", i);
		CHECK_RC(larder_put(c, key, strlen(key), v, (size_t)100 << (i % 7),
				    LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	th_check_memory_audit(c);
	th_check_accounting(c, 60000, NULL, NULL);
	larder_close(c);
	free(v);
}

static void test_cut_releases_shared_pages(void)
{
	cut_light_writer(1);
	cut_light_writer(16);
}

/*
 * The release beside the writers it concerns: short-lived threads, each
 * writing three entries of each of seven size classes (all from the shared
 * pages), while another thread cuts the capacity to 64 KiB and raises it
 * again, each cut handing the shared pages back under their feet. Every
 * value read back is whole and its key's, and at the end the counters and
 * the memory audit add up.
 */
#define LIGHT_THREADS 4
#define LIGHT_ROUNDS (TH_SLOW > 1 ? 10u : 40u)

struct light {
	larder *c;
	uint32_t base;
};

static _Atomic int cuts_stop;

static void *light_writer(void *arg)
{
	const struct light *l = arg;
	unsigned char v[6400], b[6400];
	char key[16];
	for (uint32_t j = 0; j < 21; j++) {
		uint32_t id = l->base + j;
		size_t len = th_value_make(v, id, (size_t)100 << (j % 7), 0);
		snprintf(key, sizeof(key), "w%" PRIu32, id);
		int rc = larder_put(l->c, key, strlen(key), v, len, LARDER_TTL_NEVER);
		if (rc != LARDER_OK && rc != LARDER_EBUSY)
			CHECK_RC(rc, LARDER_OK);
		size_t n = 0;
		rc = larder_get(l->c, key, strlen(key), b, sizeof(b), &n);
		if (rc == LARDER_OK)
			th_value_check("light_writer", id, b, n, NULL);
		else
			CHECK_RC(rc, LARDER_MISS); /* evicted by a cut */
	}
	return NULL;
}

static void *cutter(void *arg)
{
	larder *c = arg;
	while (!atomic_load(&cuts_stop)) {
		CHECK_RC(larder_set_capacity(c, 64 * KiB), LARDER_OK);
		CHECK_RC(larder_set_capacity(c, MiB), LARDER_OK);
	}
	return NULL;
}

static void test_cut_beside_light_writers(void)
{
	larder *c = th_open(th_config(MiB));
	REQUIRE(c != NULL);
	pthread_t cut;
	atomic_store(&cuts_stop, 0);
	REQUIRE(pthread_create(&cut, NULL, cutter, c) == 0);
	struct light l[LIGHT_THREADS];
	for (uint32_t round = 0; round < LIGHT_ROUNDS; round++) {
		for (uint32_t i = 0; i < LIGHT_THREADS; i++)
			l[i] = (struct light){c, (round * LIGHT_THREADS + i) * 32};
		th_run_threads(LIGHT_THREADS, light_writer, l, sizeof(l[0]));
	}
	atomic_store(&cuts_stop, 1);
	pthread_join(cut, NULL);
	th_check_accounting(c, 60000, NULL, NULL);
	th_check_memory_audit(c);
	larder_close(c);
}

/*
 * larder.h, "Return values": a write reserves its room before it looks at
 * the key. So a conditional write that finds it may not store takes a slot
 * (and maps its page when none of its class is at hand) and gives it back:
 * nothing stored, charged or counted, and the page is there for the next
 * write of its class.
 */
static void test_conditional_write_failures_charge_nothing(void)
{
	/* One shard: the later writes find the pages in the slab the failed
	 * ones mapped them in. */
	larder *c = th_open(th_config_one_shard(4 * MiB));
	unsigned char *v = calloc(1, 100 * KiB);
	REQUIRE(c != NULL && v != NULL);
	CHECK_RC(larder_put(c, "k", 1, "a", 1, LARDER_TTL_NEVER), LARDER_OK);
	REQUIRE_EQ(th_quiesce(c, 60000), 0);
	uint64_t used = th_stat(c, LARDER_STAT_USED_BYTES);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, "b", 1, v, 90 * KiB, LARDER_TTL_NEVER),
		 LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, "b", 1), LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(c, "z", 1, "a", 1, v, 20 * KiB, LARDER_TTL_NEVER),
		 LARDER_MISS);
	CHECK_RC(larder_put_if_absent(c, "k", 1, v, 40 * KiB, LARDER_TTL_NEVER), LARDER_EXISTS);
	CHECK_RC(larder_replace(c, "z", 1, v, 60 * KiB, LARDER_TTL_NEVER), LARDER_MISS);
	CHECK_RC(larder_flush(c, FLUSH_MS), LARDER_OK);
	REQUIRE_EQ(th_quiesce(c, 60000), 0);
	uint64_t mapped = th_stat(c, LARDER_STAT_PAGES_MAPPED);
	CHECK_EQ(th_stat(c, LARDER_STAT_USED_BYTES), used);
	CHECK_EQ(th_stat(c, LARDER_STAT_LIVE_BYTES), used);
	CHECK_EQ(th_stat(c, LARDER_STAT_WRITES), 1);
	CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 1);
	CHECK_EQ(class_stat_sum(c, LARDER_CLASS_SLOTS_USED), 1);
	/* The writes those four would have made map nothing more. */
	CHECK_RC(larder_put(c, "a", 1, v, 90 * KiB, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "b", 1, v, 20 * KiB, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "c", 1, v, 40 * KiB, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "d", 1, v, 60 * KiB, LARDER_TTL_NEVER), LARDER_OK);
	REQUIRE_EQ(th_quiesce(c, 60000), 0);
	CHECK_EQ(th_stat(c, LARDER_STAT_PAGES_MAPPED), mapped);
	th_check_memory_audit(c);
	th_check_accounting(c, 60000, NULL, NULL);
	larder_close(c);
	free(v);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_option_table),
		TH_TEST(test_cut_releases_shared_pages),
		TH_TEST(test_cut_beside_light_writers),
		TH_TEST(test_conditional_write_failures_charge_nothing),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
