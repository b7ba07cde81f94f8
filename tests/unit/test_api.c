/*
 * tests/unit/test_api.c - configuration, lifecycle and the naming functions.
 *
 * Checks what larder.h promises about the config setters' ranges, larder_open()
 * on bad input (EINVAL, *out NULL, nothing leaked), the documented defaults,
 * reuse of one config for several caches, larder_stats() arguments, and the
 * strerror / stat_name / cause_name tables, and larder_flush (an exact entry
 * count after it, from every thread; refused where it could deadlock). Also
 * the lifecycle promises that concern threads: per-thread state of exited
 * threads, and close() leaving no mapped bytes behind.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <malloc.h>
#include <stdlib.h>

#include "harness.h"

static void test_config_create_null(void)
{
	larder_config *config = NULL;

	CHECK_RC(larder_config_create(NULL), LARDER_EINVAL);
	REQUIRE_RC(larder_config_create(&config), LARDER_OK);
	CHECK(config != NULL);
	larder_config_destroy(config);
}

static void test_config_setters_null(void)
{
	CHECK_RC(larder_config_set_capacity(NULL, MiB), LARDER_EINVAL);
	CHECK_RC(larder_config_set_expected_entries(NULL, 100), LARDER_EINVAL);
	CHECK_RC(larder_config_set_max_key_bytes(NULL, 10), LARDER_EINVAL);
	CHECK_RC(larder_config_set_max_value_bytes(NULL, 10), LARDER_EINVAL);
	CHECK_RC(larder_config_set_default_ttl_ms(NULL, 10), LARDER_EINVAL);
	CHECK_RC(larder_config_set_policy(NULL, LARDER_POLICY_DEFAULT), LARDER_EINVAL);
	CHECK_RC(larder_config_set_clock(NULL, th_clock_fn, NULL), LARDER_EINVAL);
	CHECK_RC(larder_config_set_removal_listener(NULL, NULL, NULL), LARDER_EINVAL);
	CHECK_RC(larder_config_set_hash_seed(NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_config_set_write_wait_ms(NULL, 1), LARDER_EINVAL);
}

static void test_config_setter_ranges(void)
{
	larder_config *config = NULL;
	struct th_clock clock;

	REQUIRE_RC(larder_config_create(&config), LARDER_OK);
	/* capacity >= 64 KiB */
	CHECK_RC(larder_config_set_capacity(config, 0), LARDER_EINVAL);
	CHECK_RC(larder_config_set_capacity(config, 64 * KiB - 1), LARDER_EINVAL);
	CHECK_RC(larder_config_set_capacity(config, 64 * KiB), LARDER_OK);
	CHECK_RC(larder_config_set_capacity(config, 16 * MiB), LARDER_OK);
	/* max key 1..LARDER_KEY_LIMIT */
	CHECK_RC(larder_config_set_max_key_bytes(config, 0), LARDER_EINVAL);
	CHECK_RC(larder_config_set_max_key_bytes(config, 1), LARDER_OK);
	CHECK_RC(larder_config_set_max_key_bytes(config, LARDER_KEY_LIMIT), LARDER_OK);
	CHECK_RC(larder_config_set_max_key_bytes(config, (size_t)LARDER_KEY_LIMIT + 1),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_max_key_bytes(config, (size_t)-1), LARDER_EINVAL);
	/* max value 0..LARDER_VALUE_LIMIT */
	CHECK_RC(larder_config_set_max_value_bytes(config, 0), LARDER_OK);
	CHECK_RC(larder_config_set_max_value_bytes(config, LARDER_VALUE_LIMIT), LARDER_OK);
	CHECK_RC(larder_config_set_max_value_bytes(config, LARDER_VALUE_LIMIT + 1), LARDER_EINVAL);
	CHECK_RC(larder_config_set_max_value_bytes(config, (size_t)-1), LARDER_EINVAL);
	/* default TTL: NEVER and 0 both mean none; any lifetime is fine */
	CHECK_RC(larder_config_set_default_ttl_ms(config, 0), LARDER_OK);
	CHECK_RC(larder_config_set_default_ttl_ms(config, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_config_set_default_ttl_ms(config, 1), LARDER_OK);
	/* policy: only the enum's values */
	CHECK_RC(larder_config_set_policy(config, LARDER_POLICY_DEFAULT), LARDER_OK);
	CHECK_RC(larder_config_set_policy(config, LARDER_POLICY_S3FIFO), LARDER_OK);
	CHECK_RC(larder_config_set_policy(config, LARDER_POLICY_FIFO), LARDER_OK);
	CHECK_RC(larder_config_set_policy(config, (enum larder_policy)99), LARDER_EINVAL);
	CHECK_RC(larder_config_set_policy(config, (enum larder_policy)-1), LARDER_EINVAL);
	/* clock and listener: NULL restores the default */
	th_clock_init(&clock, 1000);
	CHECK_RC(larder_config_set_clock(config, th_clock_fn, &clock), LARDER_OK);
	CHECK_RC(larder_config_set_clock(config, NULL, NULL), LARDER_OK);
	CHECK_RC(larder_config_set_removal_listener(config, NULL, NULL), LARDER_OK);
	CHECK_RC(larder_config_set_hash_seed(config, 0), LARDER_OK);
	CHECK_RC(larder_config_set_hash_seed(config, UINT64_MAX), LARDER_OK);
	CHECK_RC(larder_config_set_write_wait_ms(config, 0), LARDER_OK);
	CHECK_RC(larder_config_set_write_wait_ms(config, 5000), LARDER_OK);
	/* write wait 0..3,600,000 ms */
	CHECK_RC(larder_config_set_write_wait_ms(config, 3600000), LARDER_OK);
	CHECK_RC(larder_config_set_write_wait_ms(config, 3600001), LARDER_EINVAL);
	CHECK_RC(larder_config_set_write_wait_ms(config, UINT64_MAX), LARDER_EINVAL);
	/* expected entries 0..2^40 */
	CHECK_RC(larder_config_set_expected_entries(config, 0), LARDER_OK);
	CHECK_RC(larder_config_set_expected_entries(config, 1), LARDER_OK);
	CHECK_RC(larder_config_set_expected_entries(config, 1000000), LARDER_OK);
	CHECK_RC(larder_config_set_expected_entries(config, (uint64_t)1 << 40), LARDER_OK);
	CHECK_RC(larder_config_set_expected_entries(config, ((uint64_t)1 << 40) + 1),
		 LARDER_EINVAL);
	/* capacity up to 2^62 - 1: a budget, not a reservation */
	CHECK_RC(larder_config_set_capacity(config, ((uint64_t)1 << 62) - 1), LARDER_OK);
	CHECK_RC(larder_config_set_capacity(config, (uint64_t)1 << 62), LARDER_EINVAL);
	CHECK_RC(larder_config_set_capacity(config, UINT64_MAX), LARDER_EINVAL);
	larder_config_destroy(config);
}

/*
 * The ranges as larder.h states them, at open: a capacity of 2^50 bytes
 * opens (nothing is reserved for it) and works, and set_capacity has the
 * setter's range. (An index too large to map fails open with ENOMEM:
 * test_oom makes every mapping of open fail in turn.)
 */
static void test_open_range_limits(void)
{
	uint64_t mapped = larder__test_mapped_bytes();
	larder_config *config = th_config((uint64_t)1 << 50);
	larder *cache = NULL;
	char buf[4];
	size_t len;

	REQUIRE(config != NULL);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_CAPACITY_BYTES), (uint64_t)1 << 50);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_get(cache, "k", 1, buf, sizeof(buf), &len), LARDER_OK);
	CHECK_RC(larder_set_capacity(cache, ((uint64_t)1 << 62) - 1), LARDER_OK);
	CHECK_RC(larder_set_capacity(cache, (uint64_t)1 << 62), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(cache, 64 * KiB - 1), LARDER_EINVAL);
	larder_close(cache);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
}

/* A rejected setting must leave the previous one in force. */
static void test_config_rejected_setting_keeps_previous(void)
{
	larder_config *config = th_config(256 * KiB);
	larder *cache;

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_capacity(config, 1), LARDER_EINVAL);
	CHECK_RC(larder_config_set_max_key_bytes(config, 8), LARDER_OK);
	CHECK_RC(larder_config_set_max_key_bytes(config, 0), LARDER_EINVAL);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_CAPACITY_BYTES), 256 * KiB);
	CHECK_RC(larder_put(cache, "12345678", 8, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(cache, "123456789", 9, "v", 1, LARDER_TTL_NEVER), LARDER_EKEYSIZE);
	larder_close(cache);
}

static void test_open_null(void)
{
	larder_config *config = th_config(MiB);
	larder *cache = (larder *)&cache; /* non-NULL garbage: open must reset it */
	uint64_t mapped = larder__test_mapped_bytes();

	REQUIRE(config != NULL);
	CHECK_RC(larder_open(NULL, config), LARDER_EINVAL);
	CHECK_RC(larder_open(&cache, NULL), LARDER_EINVAL);
	CHECK(cache == NULL);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
	larder_close(NULL); /* documented no-op */
	larder_config_destroy(config);
}

static void test_open_defaults(void)
{
	larder_config *config = NULL;
	larder *cache = NULL;
	static unsigned char big[(1u << 20) + 1];
	char key[251];
	uint64_t ttl = 0;

	REQUIRE_RC(larder_config_create(&config), LARDER_OK);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	/* capacity 64 MiB */
	CHECK_EQ(th_stat(cache, LARDER_STAT_CAPACITY_BYTES), 64 * MiB);
	/* max key 250 bytes */
	memset(key, 'k', sizeof(key));
	CHECK_RC(larder_put(cache, key, 250, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, key, 251, "v", 1, LARDER_TTL_DEFAULT), LARDER_EKEYSIZE);
	CHECK_RC(larder_get(cache, key, 251, NULL, 0, &(size_t){0}), LARDER_EKEYSIZE);
	/* no default TTL */
	CHECK_RC(larder_ttl_remaining(cache, key, 250, &ttl), LARDER_OK);
	CHECK_EQ(ttl, LARDER_TTL_NEVER);
	/* max value 1 MiB (1/8 of 64 MiB is 8 MiB, so the entry limit is not in play) */
	memset(big, 0x5a, sizeof(big));
	CHECK_RC(larder_put(cache, "big", 3, big, 1u << 20, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, "big", 3, big, (1u << 20) + 1, LARDER_TTL_DEFAULT),
		 LARDER_EVALSIZE);
	size_t len = 0;
	CHECK_RC(larder_get(cache, "big", 3, NULL, 0, &len), LARDER_EBUFSIZE);
	CHECK_EQ(len, 1u << 20);
	larder_close(cache);
}

/* "A config may be reused for several caches and destroyed any time after open." */
static void test_config_reuse(void)
{
	larder_config *config = th_config(MiB);
	larder *a = NULL, *b = NULL;
	char buf[8];
	size_t len = 0;

	REQUIRE(config != NULL);
	CHECK_RC(larder_open(&a, config), LARDER_OK);
	CHECK_RC(larder_open(&b, config), LARDER_OK);
	larder_config_destroy(config);
	REQUIRE(a != NULL && b != NULL);
	CHECK(a != b);
	CHECK_RC(larder_put(a, "k", 1, "A", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(b, "k", 1, "B", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_get(a, "k", 1, buf, sizeof(buf), &len), LARDER_OK);
	CHECK(len == 1 && buf[0] == 'A');
	CHECK_RC(larder_get(b, "k", 1, buf, sizeof(buf), &len), LARDER_OK);
	CHECK(len == 1 && buf[0] == 'B');
	larder_close(a);
	CHECK_RC(larder_get(b, "k", 1, buf, sizeof(buf), &len), LARDER_OK);
	larder_close(b);
}

static void test_stats_args(void)
{
	larder *cache = th_open(th_config(MiB));
	uint64_t values[LARDER_STAT_COUNT + 1];

	REQUIRE(cache != NULL);
	CHECK_RC(larder_stats(NULL, values, LARDER_STAT_COUNT), LARDER_EINVAL);
	CHECK_RC(larder_stats(cache, NULL, LARDER_STAT_COUNT), LARDER_EINVAL);
	/* NULL with count 0 is an empty request, as for larder_stats_size_class
	 * (it once passed NULL to memcpy: UBSan aborted here). */
	CHECK_RC(larder_stats(cache, NULL, 0), LARDER_OK);
	/* A shorter array (an older caller) is filled only as far as it goes. */
	for (size_t i = 0; i <= LARDER_STAT_COUNT; i++)
		values[i] = 0xabcdabcdabcdabcdull;
	CHECK_RC(larder_stats(cache, values, 6), LARDER_OK);
	CHECK_EQ(values[LARDER_STAT_CAPACITY_BYTES], MiB);
	for (size_t i = 6; i <= LARDER_STAT_COUNT; i++)
		CHECK_EQ(values[i], 0xabcdabcdabcdabcdull);
	CHECK_RC(larder_stats(cache, values, LARDER_STAT_COUNT), LARDER_OK);
	CHECK_EQ(values[LARDER_STAT_ENTRIES], 0);
	CHECK_EQ(values[LARDER_STAT_USED_BYTES], 0);
	CHECK_GT(values[LARDER_STAT_OVERSHOOT_BOUND], 0);
	CHECK_GT(values[LARDER_STAT_INDEX_SLOTS], 0);
	larder_close(cache);
}

/* Hits, misses and writes are exact counts of the calls that made them. */
static void test_stats_counts(void)
{
	larder *cache = th_open(th_config(MiB));
	uint64_t h0, m0, w0;
	char buf[16];
	size_t len;

	REQUIRE(cache != NULL);
	h0 = th_stat(cache, LARDER_STAT_HITS);
	m0 = th_stat(cache, LARDER_STAT_MISSES);
	w0 = th_stat(cache, LARDER_STAT_WRITES);
	for (int i = 0; i < 10; i++) {
		char key[8];
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_RC(larder_put(cache, key, strlen(key), "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	}
	for (int i = 0; i < 30; i++) {
		char key[8];
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_RC(larder_get(cache, key, strlen(key), buf, sizeof(buf), &len),
			 i < 10 ? LARDER_OK : LARDER_MISS);
	}
	CHECK_EQ(th_stat(cache, LARDER_STAT_WRITES) - w0, 10);
	CHECK_EQ(th_stat(cache, LARDER_STAT_HITS) - h0, 10);
	CHECK_EQ(th_stat(cache, LARDER_STAT_MISSES) - m0, 20);
	larder_close(cache);
}

/* ---- larder_flush ------------------------------------------------------------ */

#define FLUSH_WAIT_MS (60000u * TH_SLOW) /* turns a hang into a failure only */

static void put_keys(larder *cache, const char *prefix, int from, int to)
{
	for (int i = from; i < to; i++) {
		char key[24];
		snprintf(key, sizeof(key), "%s%d", prefix, i);
		CHECK_RC(larder_put(cache, key, strlen(key), "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	}
}

/* After larder_flush the entry count is exact: the caller's puts, removals
 * and clears, each counted at once. */
static void test_flush_counts(void)
{
	larder *cache = th_open(th_config(64 * MiB));
	REQUIRE(cache != NULL);
	CHECK_RC(larder_flush(NULL, 0), LARDER_EINVAL);
	for (int round = 0; round < 20; round++) {
		put_keys(cache, "k", round * 100, round * 100 + 100);
		CHECK_RC(larder_flush(cache, FLUSH_WAIT_MS), LARDER_OK);
		CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), (uint64_t)(round + 1) * 100);
	}
	for (int i = 0; i < 500; i++) {
		char key[24];
		snprintf(key, sizeof(key), "k%d", i * 4);
		CHECK_RC(larder_remove(cache, key, strlen(key)), LARDER_OK);
	}
	CHECK_RC(larder_flush(cache, FLUSH_WAIT_MS), LARDER_OK);
	CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), 1500);
	CHECK_RC(larder_clear(cache), LARDER_OK);
	CHECK_RC(larder_flush(cache, FLUSH_WAIT_MS), LARDER_OK);
	CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), 0);
	put_keys(cache, "after", 0, 7);
	CHECK_RC(larder_flush(cache, FLUSH_WAIT_MS), LARDER_OK);
	CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), 7);
	larder_close(cache);
}

struct flush_writer {
	larder *cache;
	int id;
	_Atomic int *stop;
	int live; /* keys of this writer present at its end */
};

/* Puts and removes keys of its own; counts what it leaves. */
static void *flush_writer_main(void *arg)
{
	struct flush_writer *w = arg;
	char present[2000] = { 0 };
	struct th_rng r = { (uint64_t)w->id * 7919 + 1 };
	for (int i = 0; i < 20000; i++) {
		int k = (int)th_rng_below(&r, sizeof(present));
		char key[24];
		snprintf(key, sizeof(key), "w%d-%d", w->id, k);
		if (th_rng_below(&r, 3) == 0) {
			int rc = larder_remove(w->cache, key, strlen(key));
			CHECK_RC(rc, present[k] ? LARDER_OK : LARDER_MISS);
			present[k] = 0;
		} else {
			CHECK_RC(larder_put(w->cache, key, strlen(key), "v", 1, LARDER_TTL_DEFAULT),
				 LARDER_OK);
			present[k] = 1;
		}
	}
	for (size_t k = 0; k < sizeof(present); k++)
		w->live += present[k];
	return NULL;
}

/* Flushes over and over while writers run: never an error, never a hang. */
static void *flusher_main(void *arg)
{
	struct flush_writer *f = arg;
	while (!atomic_load_explicit(f->stop, memory_order_acquire))
		CHECK_RC(larder_flush(f->cache, FLUSH_WAIT_MS), LARDER_OK);
	return NULL;
}

/* Writes from other threads that returned before the call are counted too,
 * while flushes race with those writers. */
static void test_flush_other_threads(void)
{
	larder *cache = th_open(th_config(64 * MiB));
	_Atomic int stop = 0;
	struct flush_writer w[3] = { { cache, 0, &stop, 0 }, { cache, 1, &stop, 0 },
				     { cache, 2, &stop, 0 } };
	pthread_t flusher;
	REQUIRE(cache != NULL);
	REQUIRE(pthread_create(&flusher, NULL, flusher_main, &w[2]) == 0);
	th_run_threads(2, flush_writer_main, w, sizeof(w[0]));
	atomic_store_explicit(&stop, 1, memory_order_release);
	pthread_join(flusher, NULL);
	CHECK_RC(larder_flush(cache, FLUSH_WAIT_MS), LARDER_OK);
	CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), (uint64_t)(w[0].live + w[1].live));
	larder_close(cache);
}

struct flush_inside {
	larder *cache;
	_Atomic int rc;
};

static void flush_in_read(void *ctx, const void *value, size_t len)
{
	struct flush_inside *f = ctx;
	(void)value;
	(void)len;
	atomic_store_explicit(&f->rc, larder_flush(f->cache, FLUSH_WAIT_MS), memory_order_relaxed);
}

static void flush_in_listener(void *ctx, const void *key, size_t key_len, const void *value,
			      size_t value_len, enum larder_cause cause)
{
	(void)key;
	(void)key_len;
	(void)value;
	(void)value_len;
	(void)cause;
	flush_in_read(ctx, NULL, 0);
}

/* Where waiting for the maintainer could deadlock, flush refuses at once:
 * inside a read section, and on a maintainer thread (a removal listener). */
static void test_flush_refused_where_it_could_deadlock(void)
{
	struct flush_inside in_read = { NULL, 1 }, in_listener = { NULL, 1 };
	larder_config *cfg = th_config(MiB);
	REQUIRE(cfg != NULL);
	CHECK_RC(larder_config_set_removal_listener(cfg, flush_in_listener, &in_listener), LARDER_OK);
	larder *cache = th_open(cfg);
	REQUIRE(cache != NULL);
	in_read.cache = in_listener.cache = cache;
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_get_with(cache, "k", 1, flush_in_read, &in_read), LARDER_OK);
	CHECK_RC(atomic_load_explicit(&in_read.rc, memory_order_relaxed), LARDER_ESTATE);
	CHECK_RC(larder_remove(cache, "k", 1), LARDER_OK);
	CHECK_RC(th_quiesce(cache, 60000), 0);
	CHECK_RC(atomic_load_explicit(&in_listener.rc, memory_order_relaxed), LARDER_ESTATE);
	CHECK_RC(larder_flush(cache, FLUSH_WAIT_MS), LARDER_OK);
	larder_close(cache);
}

/* The physical-plane counters move when there is work for them. */
static void test_stats_physical(void)
{
	larder *cache = th_open(th_config(4 * MiB));
	char key[16], buf[16];
	size_t len;

	REQUIRE(cache != NULL);
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_RC(larder_put(cache, key, strlen(key), "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	}
	for (int i = 0; i < 100000; i++) {
		snprintf(key, sizeof(key), "k%d", i % 1000);
		CHECK_RC(larder_get(cache, key, strlen(key), buf, sizeof(buf), &len), LARDER_OK);
	}
	th_check_accounting(cache, 60000, NULL, NULL);
	CHECK_GT(th_stat(cache, LARDER_STAT_MAINT_PASSES), 0);
	CHECK_GT(th_stat(cache, LARDER_STAT_HIT_SAMPLES), 0);
	CHECK_LE(th_stat(cache, LARDER_STAT_HIT_SAMPLES), th_stat(cache, LARDER_STAT_HITS));
	CHECK_GE(th_stat(cache, LARDER_STAT_PAGES_MAPPED), th_stat(cache, LARDER_STAT_USED_BYTES));
	CHECK_GE(th_stat(cache, LARDER_STAT_INDEX_SLOTS), th_stat(cache, LARDER_STAT_ENTRIES));
	CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), 1000);
	CHECK_EQ(th_stat(cache, LARDER_STAT_WRITES), 1000);
	CHECK_EQ(th_stat(cache, LARDER_STAT_HITS), 100000);
	larder_close(cache);
}

static void test_strerror(void)
{
	static const int codes[] = {LARDER_OK,	      LARDER_MISS,	LARDER_EXISTS,
				    LARDER_MISMATCH,  LARDER_EINVAL,	LARDER_EKEYSIZE,
				    LARDER_EVALSIZE,  LARDER_ENOMEM,	LARDER_EBUFSIZE,
				    LARDER_EBUSY,     LARDER_ETHREAD,	LARDER_ESYS,
				    LARDER_ESTATE,    LARDER_EFORMAT,	LARDER_ECORRUPT};
	const char *unknown = larder_strerror(-1000);

	CHECK(unknown != NULL);
	CHECK(larder_strerror(1000) != NULL);
	CHECK(larder_strerror(-12) != NULL);
	for (size_t i = 0; i < TH_COUNT(codes); i++) {
		const char *s = larder_strerror(codes[i]);

		if (!CHECK(s != NULL))
			continue;
		CHECK_GT(strlen(s), 0);
		/* each documented code has its own text, distinct from "unknown" */
		CHECK(unknown == NULL || strcmp(s, unknown) != 0);
		for (size_t j = 0; j < i; j++) {
			const char *t = larder_strerror(codes[j]);
			if (t != NULL && strcmp(s, t) == 0)
				th_fail(__FILE__, __LINE__, "strerror(%d) == strerror(%d) == \"%s\"",
					codes[i], codes[j], s);
		}
	}
}

static void test_stat_names(void)
{
	for (int i = 0; i < LARDER_STAT_COUNT; i++) {
		const char *s = larder_stat_name((enum larder_stat)i);

		if (!CHECK(s != NULL))
			continue;
		CHECK_GT(strlen(s), 0);
		for (int j = 0; j < i; j++) {
			const char *t = larder_stat_name((enum larder_stat)j);
			if (t != NULL && strcmp(s, t) == 0)
				th_fail(__FILE__, __LINE__, "stat %d and %d are both named \"%s\"", i,
					j, s);
		}
	}
	CHECK_STR(larder_stat_name(LARDER_STAT_HITS), "hits");
	CHECK_STR(larder_stat_name(LARDER_STAT_USED_BYTES), "used_bytes");
	CHECK(larder_stat_name(LARDER_STAT_COUNT) == NULL);
	CHECK(larder_stat_name((enum larder_stat)1000) == NULL);
	CHECK(larder_stat_name((enum larder_stat)-1) == NULL);
}

static void test_cause_names(void)
{
	CHECK_STR(larder_cause_name(LARDER_CAUSE_EXPLICIT), "explicit");
	for (int i = 0; i <= LARDER_CAUSE_CLEARED; i++) {
		const char *s = larder_cause_name((enum larder_cause)i);

		if (!CHECK(s != NULL))
			continue;
		CHECK(strcmp(s, "unknown") != 0);
		for (int j = 0; j < i; j++)
			CHECK(strcmp(s, larder_cause_name((enum larder_cause)j)) != 0);
	}
	CHECK_STR(larder_cause_name((enum larder_cause)5), "unknown");
	CHECK_STR(larder_cause_name((enum larder_cause)-1), "unknown");
}

/* ---- Threads and lifecycle ----------------------------------------------- */

struct churn_arg {
	larder *cache;
	int id;
};

static void *churn_thread(void *p)
{
	struct churn_arg *a = p;
	char key[32], buf[32];
	size_t len = 0;

	snprintf(key, sizeof(key), "thread-%d", a->id);
	CHECK_RC(larder_put(a->cache, key, strlen(key), key, strlen(key), LARDER_TTL_DEFAULT),
		 LARDER_OK);
	CHECK_RC(larder_get(a->cache, key, strlen(key), buf, sizeof(buf), &len), LARDER_OK);
	CHECK(len == strlen(key) && memcmp(buf, key, len) == 0);
	return NULL;
}

/* Many short-lived threads, each registering implicitly: no limit, no leak. */
static void test_thread_churn(void)
{
	uint64_t mapped = larder__test_mapped_bytes();
	larder *cache = th_open(th_config(4 * MiB));
	struct churn_arg args[64];

	REQUIRE(cache != NULL);
	for (int round = 0; round < 8; round++) {
		for (int i = 0; i < 64; i++)
			args[i] = (struct churn_arg){cache, round * 64 + i};
		th_run_threads(64, churn_thread, args, sizeof(args[0]));
		/* the maintainer takes back the exited threads' state before the next round */
		CHECK_EQ(th_quiesce(cache, 60000), 0);
	}
	for (int i = 0; i < 8 * 64; i++) {
		char key[32];
		snprintf(key, sizeof(key), "thread-%d", i);
		CHECK_RC(larder_contains(cache, key, strlen(key)), LARDER_OK);
	}
	th_check_accounting(cache, 60000, NULL, NULL);
	/*
	 * Exited threads' state is released: 512 threads that each wrote 32 bytes
	 * must not each keep a page of their own (that would be 32 MiB at 64 KiB);
	 * at most the 64 threads alive at once need one each.
	 */
	CHECK_LE(th_stat(cache, LARDER_STAT_PAGES_MAPPED),
		 th_stat(cache, LARDER_STAT_CAPACITY_BYTES) +
			 th_stat(cache, LARDER_STAT_OVERSHOOT_BOUND));
	larder_close(cache);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
}

struct outlive_arg {
	larder *cache;
	struct th_event wrote, closed;
};

static void *outlive_thread(void *p)
{
	struct outlive_arg *a = p;

	CHECK_RC(larder_put(a->cache, "x", 1, "y", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	th_event_signal(&a->wrote);
	CHECK(th_event_wait(&a->closed, 60000));
	return NULL; /* exits after the cache is gone: its per-thread state must cope */
}

/* A thread that used a cache may exit after the cache was closed. */
static void test_thread_outlives_cache(void)
{
	struct outlive_arg a;
	pthread_t t;

	a.cache = th_open(th_config(MiB));
	REQUIRE(a.cache != NULL);
	th_event_init(&a.wrote);
	th_event_init(&a.closed);
	REQUIRE(pthread_create(&t, NULL, outlive_thread, &a) == 0);
	CHECK(th_event_wait(&a.wrote, 60000));
	larder_close(a.cache);
	th_event_signal(&a.closed);
	pthread_join(t, NULL);
	/* and a new cache still works for a new thread */
	a.cache = th_open(th_config(MiB));
	REQUIRE(a.cache != NULL);
	CHECK_RC(larder_put(a.cache, "x", 1, "y", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	larder_close(a.cache);
	th_event_destroy(&a.wrote);
	th_event_destroy(&a.closed);
}

static size_t heap_in_use(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

/* Many caches, open at once and one after another: independent, no leak. */
static void test_many_caches(void)
{
	enum { OPEN = 32, SEQUENTIAL = 300 };
	uint64_t mapped = larder__test_mapped_bytes();
	larder *caches[OPEN];
	char buf[16];
	size_t len;
	size_t heap0 = 0;
	long grew;

	for (int i = 0; i < OPEN; i++) {
		caches[i] = th_open(th_config(256 * KiB));
		if (!CHECK(caches[i] != NULL))
			return;
		CHECK_RC(larder_put(caches[i], "k", 1, &i, sizeof(i), LARDER_TTL_NEVER), LARDER_OK);
	}
	for (int i = 0; i < OPEN; i++) {
		CHECK_RC(larder_get(caches[i], "k", 1, buf, sizeof(buf), &len), LARDER_OK);
		CHECK(len == sizeof(i) && memcmp(buf, &i, sizeof(i)) == 0);
	}
	for (int i = 0; i < OPEN; i++)
		larder_close(caches[i]);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
	/* one thread, many caches in turn: its per-cache state must not pile up */
	for (int i = 0; i < SEQUENTIAL; i++) {
		larder *c;

		if (i == 50)
			heap0 = heap_in_use();
		c = th_open(th_config(256 * KiB));
		if (!CHECK(c != NULL))
			return;
		CHECK_RC(larder_put(c, "k", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
		CHECK_RC(larder_get(c, "k", 1, buf, sizeof(buf), &len), LARDER_OK);
		larder_close(c);
	}
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
	grew = (long)heap_in_use() - (long)heap0;
	printf("  heap grew by %ld bytes over %d open/use/close cycles\n", grew, SEQUENTIAL - 50);
	/* a per-thread node per closed cache would be >= 8 KiB here; their
	 * allocators (ASan, TSan) do not report through mallinfo2 */
	if (!TH_ASAN && !TH_TSAN && !CHECK(grew < 4096))
		printf("  per-thread state of closed caches piles up\n");
}

/* close frees every byte: mapped bytes return to their value before open. */
static void test_close_no_leak(void)
{
	uint64_t mapped = larder__test_mapped_bytes();
	larder *cache = th_open(th_config(8 * MiB));
	static unsigned char value[300000];

	REQUIRE(cache != NULL);
	memset(value, 7, sizeof(value));
	for (int i = 0; i < 20000; i++) {
		char key[16];
		size_t vlen = (size_t)(i % 977) * 3;
		snprintf(key, sizeof(key), "k%d", i);
		if (i % 1000 == 0)
			vlen = sizeof(value); /* a few large entries too */
		if (!CHECK_RC(larder_put(cache, key, strlen(key), value, vlen, LARDER_TTL_DEFAULT),
			      LARDER_OK))
			break;
		if (i % 7 == 0) {
			/* the policy may already have evicted it: both are fine */
			int rc = larder_remove(cache, key, strlen(key));
			CHECK(rc == LARDER_OK || rc == LARDER_MISS);
		}
	}
	CHECK_GT(larder__test_mapped_bytes(), mapped);
	larder_close(cache);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_config_create_null),
		TH_TEST(test_config_setters_null),
		TH_TEST(test_config_setter_ranges),
		TH_TEST(test_open_range_limits),
		TH_TEST(test_config_rejected_setting_keeps_previous),
		TH_TEST(test_open_null),
		TH_TEST(test_open_defaults),
		TH_TEST(test_config_reuse),
		TH_TEST(test_stats_args),
		TH_TEST(test_stats_counts),
		TH_TEST(test_stats_physical),
		TH_TEST(test_flush_counts),
		TH_TEST(test_flush_other_threads),
		TH_TEST(test_flush_refused_where_it_could_deadlock),
		TH_TEST(test_strerror),
		TH_TEST(test_stat_names),
		TH_TEST(test_cause_names),
		TH_TEST(test_thread_churn),
		TH_TEST(test_thread_outlives_cache),
		TH_TEST(test_many_caches),
		TH_TEST(test_close_no_leak),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
