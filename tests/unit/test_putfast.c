/*
 * tests/unit/test_putfast.c - larder_put's fast path and its exits
 * (core/cache.c, "The writer's frame" in docs/results/bench-history.md).
 *
 * The fast path takes a plain put of a key of 8 to 16 bytes and a value of
 * 16 to 64 that overwrites a key without a deadline, and leaves by a tail
 * call for everything else; most other unit tests use keys and values of a
 * few bytes, which never reach it. These tests make puts of its sizes (and
 * the sizes around them) in each case it must hand on. Checked:
 *   - every key length 1..20 and value length 0..80, put, overwritten and
 *     read back, stores the bytes given (the inline key and value copies and
 *     their size tests, at and beyond the bounds);
 *   - an overwrite of a key whose entry's deadline passed reports EXPIRED,
 *     one whose deadline has not REPLACED (TLISTENER-L1 in
 *     tests/unit/test_listener.c: the fast path leaves the old entry's
 *     deadline to write_common's test);
 *   - a put with LARDER_TTL_DEFAULT in a cache with a default lifetime gets
 *     the deadline, and one with a lifetime of its own gets that (the fast
 *     path's lifetime test);
 *   - a put from inside a get_with callback (a read section) and the read
 *     after it: the enclosing section is kept, and the callback's put lands;
 *   - a cache's value limit below the fast path's sizes refuses the longer
 *     values (LARDER_EVALSIZE) and changes nothing;
 *   - a cache's key limit below the fast path's sizes (12 bytes) or below
 *     all of them (6) refuses the longer keys (LARDER_EKEYSIZE): the fast
 *     path's key bound is folded with the cache's (put_fast_keys);
 *   - a new key whose home is full or overflowed goes in under the home's
 *     one lock (put_probed), and a key living past its home, overwritten,
 *     is replaced there, never added twice;
 *   - the accounting settles (CACHE-B1) after all of it.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/thread.h"
#include "harness.h"
#include "sync/reclaim.h"

#define T0 5000u

static struct th_clock clk;
static _Atomic unsigned expired_seen, replaced_seen;
/* The listener holds the maintainer while blocking is set and it is called
 * for the key "block-key": blocked says it is in there. */
static _Atomic int blocking, blocked;

static int is_blocked(void *ctx)
{
	(void)ctx;
	return atomic_load(&blocked);
}

static int is_released(void *ctx)
{
	(void)ctx;
	return !atomic_load(&blocking);
}

static void count_causes(void *ctx, const void *key, size_t key_len, const void *value,
			 size_t value_len, enum larder_cause cause)
{
	(void)ctx, (void)value, (void)value_len;
	if (cause == LARDER_CAUSE_EXPIRED)
		atomic_fetch_add(&expired_seen, 1);
	else if (cause == LARDER_CAUSE_REPLACED)
		atomic_fetch_add(&replaced_seen, 1);
	if (atomic_load(&blocking) && key_len == 9 && memcmp(key, "block-key", 9) == 0) {
		atomic_store(&blocked, 1);
		/* A hang guard only: the test releases it at once. */
		CHECK(th_wait_until(is_released, NULL, 60000));
	}
}

/*
 * The fast path takes a slot from its cursor's run of the entry's size
 * class, and a thread's first slots of a class come from the slab's shared
 * pages without a run (SLAB-S8 in mem/slab.c): 64 puts of every class up
 * to the fast path's largest entry (16 + 16 + 64 bytes) and beyond give
 * this thread a run of each, so that the puts after reach the fast path.
 */
static void warm(larder *cache)
{
	static const unsigned char v[16] = "warm-value-16-b";
	char key[128];

	for (size_t bytes = 40; bytes <= 120; bytes += 8)
		for (unsigned i = 0; i < 64; i++) {
			int n = snprintf(key, sizeof(key), "warm-%zu-%u-", bytes, i);
			size_t kl = bytes - 16 - sizeof(v);
			memset(key + n, 'k', sizeof(key) - (size_t)n);
			CHECK_RC(larder_put(cache, key, kl, v, sizeof(v), LARDER_TTL_NEVER), LARDER_OK);
		}
}

/* A cache on the test clock, with a default lifetime (0: none). */
static larder *open_clocked(uint64_t capacity, uint64_t default_ttl_ms)
{
	/* One shard: the maintainer a listener holds is the one of every key. */
	larder_config *config = th_config_one_shard(capacity);

	larder *cache;

	atomic_store(&expired_seen, 0);
	atomic_store(&replaced_seen, 0);
	th_clock_init(&clk, T0);
	if (config == NULL)
		return NULL;
	CHECK_RC(larder_config_set_clock(config, th_clock_fn, &clk), LARDER_OK);
	CHECK_RC(larder_config_set_removal_listener(config, count_causes, NULL), LARDER_OK);
	if (default_ttl_ms)
		CHECK_RC(larder_config_set_default_ttl_ms(config, default_ttl_ms), LARDER_OK);
	cache = th_open(config);
	if (cache)
		warm(cache);
	return cache;
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(th_mix64(seed * 131u + i) | 1);
}

/* The value read for key is exactly want (want_len bytes). */
static int reads(larder *cache, const void *key, size_t key_len, const void *want,
		 size_t want_len)
{
	unsigned char buf[128];
	size_t len = 0;
	return CHECK_RC(larder_get(cache, key, key_len, buf, sizeof(buf), &len), LARDER_OK) &&
	       CHECK_EQ(len, want_len) && CHECK_MEM(buf, want, want_len);
}

static void test_every_size_round_trips(void)
{
	larder *cache = open_clocked(4 * MiB, 0);
	unsigned char key[20], value[80];

	REQUIRE(cache != NULL);
	for (unsigned round = 0; round < 2; round++) {
		for (size_t kl = 1; kl <= sizeof(key); kl++) {
			for (size_t vl = 0; vl <= sizeof(value); vl++) {
				fill(key, kl, (unsigned)kl);
				key[0] = (unsigned char)vl; /* one key per size pair */
				fill(value, vl, (unsigned)(kl * 1000 + vl + round));
				if (!CHECK_RC(larder_put(cache, key, kl, value, vl,
							 LARDER_TTL_NEVER),
					      LARDER_OK) ||
				    !reads(cache, key, kl, value, vl))
					goto out;
			}
		}
	}
	th_check_accounting(cache, 60000, NULL, NULL);
out:
	larder_close(cache);
}

/* The maintainer is held in the listener, so that the expired entry is
 * still in the index when the put comes (else its wheel may remove it
 * first, and the put is an insert). */
static void test_overwrite_of_expired_entry(void)
{
	larder *cache = open_clocked(4 * MiB, 0);
	static const char key[] = "twelve-bytes", live_key[] = "sixteen-bytes-ok";
	unsigned char v1[32], v2[32];

	REQUIRE(cache != NULL);
	fill(v1, sizeof(v1), 1);
	fill(v2, sizeof(v2), 2);
	CHECK_RC(larder_put(cache, key, 12, v1, sizeof(v1), 10), LARDER_OK);
	CHECK_RC(larder_put(cache, live_key, 16, v1, sizeof(v1), 1000), LARDER_OK);
	CHECK_RC(larder_put(cache, "block-key", 9, v1, sizeof(v1), LARDER_TTL_NEVER), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	atomic_store(&expired_seen, 0);
	atomic_store(&replaced_seen, 0);
	atomic_store(&blocked, 0);
	atomic_store(&blocking, 1);
	CHECK_RC(larder_remove(cache, "block-key", 9), LARDER_OK);
	CHECK(th_wait_until(is_blocked, NULL, 60000));
	th_clock_advance(&clk, 10);
	CHECK_RC(larder_put(cache, key, 12, v2, sizeof(v2), LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(cache, live_key, 16, v2, sizeof(v2), LARDER_TTL_NEVER), LARDER_OK);
	atomic_store(&blocking, 0);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_EQ(atomic_load(&expired_seen), 1);
	CHECK_EQ(atomic_load(&replaced_seen), 1);
	CHECK_EQ(th_stat(cache, LARDER_STAT_EXPIRATIONS), 1);
	reads(cache, key, 12, v2, sizeof(v2));
	/* The new values have no deadline. */
	th_clock_advance(&clk, 1000000);
	reads(cache, key, 12, v2, sizeof(v2));
	reads(cache, live_key, 16, v2, sizeof(v2));
	larder_close(cache);
}

static void test_lifetimes_not_dropped(void)
{
	larder *cache = open_clocked(4 * MiB, 500);
	static const char dkey[] = "default-ttl", skey[] = "own-ttl-key";
	unsigned char v[40];

	REQUIRE(cache != NULL);
	fill(v, sizeof(v), 3);
	/* Put twice: the second is an overwrite of a key in its home. */
	for (int i = 0; i < 2; i++) {
		CHECK_RC(larder_put(cache, dkey, 11, v, sizeof(v), LARDER_TTL_DEFAULT), LARDER_OK);
		CHECK_RC(larder_put(cache, skey, 11, v, sizeof(v), 50), LARDER_OK);
	}
	th_clock_advance(&clk, 49);
	reads(cache, skey, 11, v, sizeof(v));
	th_clock_advance(&clk, 1);
	CHECK_RC(larder_contains(cache, skey, 11), LARDER_MISS);
	th_clock_advance(&clk, 449);
	reads(cache, dkey, 11, v, sizeof(v));
	th_clock_advance(&clk, 1);
	CHECK_RC(larder_contains(cache, dkey, 11), LARDER_MISS);
	larder_close(cache);
}

struct nested {
	larder *cache;
	int rc;
	int inside; /* still in the read's section after the puts */
	int inserts;
};

/* A get_with callback (inside the read's section) that overwrites a key. */
static void put_inside(void *ctx, const void *value, size_t value_len)
{
	struct nested *n = ctx;
	(void)value;
	(void)value_len;
	unsigned char v[24];
	char key[16];
	fill(v, sizeof(v), 4);
	/* An overwrite (the fast path's end) and an insert (put_indexed's). */
	n->rc = larder_put(n->cache, "inner-key", 9, v, sizeof(v), LARDER_TTL_NEVER);
	n->inside = larder__read_active(&larder__tls->reader);
	snprintf(key, sizeof(key), "inner-new-%d", n->inserts++);
	if (n->rc == LARDER_OK)
		n->rc = larder_put(n->cache, key, strlen(key), v, sizeof(v), LARDER_TTL_NEVER);
	n->inside = n->inside && larder__read_active(&larder__tls->reader);
}

static void test_put_inside_read_section(void)
{
	larder *cache = open_clocked(4 * MiB, 0);
	unsigned char v[24], w[24];
	struct nested n = { cache, -1, 0, 0 };

	REQUIRE(cache != NULL);
	fill(v, sizeof(v), 5);
	fill(w, sizeof(w), 4);
	CHECK_RC(larder_put(cache, "outer-key", 9, v, sizeof(v), LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(cache, "inner-key", 9, v, sizeof(v), LARDER_TTL_NEVER), LARDER_OK);
	for (int i = 0; i < 3; i++) {
		CHECK_RC(larder_get_with(cache, "outer-key", 9, put_inside, &n), LARDER_OK);
		CHECK_RC(n.rc, LARDER_OK);
		/* The callback's put left the enclosing section as it found it. */
		CHECK(n.inside);
		CHECK(!larder__read_active(&larder__tls->reader));
	}
	reads(cache, "inner-key", 9, w, sizeof(w));
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

static void test_value_limit_refuses(void)
{
	larder_config *config = th_config(4 * MiB);
	unsigned char v[64];
	larder *cache;

	REQUIRE(config != NULL);
	REQUIRE_RC(larder_config_set_max_value_bytes(config, 32), LARDER_OK);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	warm(cache);
	fill(v, sizeof(v), 6);
	for (size_t vl = 16; vl <= sizeof(v); vl++) {
		int want = vl > 32 ? LARDER_EVALSIZE : LARDER_OK;
		CHECK_RC(larder_put(cache, "sixteen-bytes-ok", 16, v, vl, LARDER_TTL_NEVER), want);
		if (want == LARDER_OK)
			reads(cache, "sixteen-bytes-ok", 16, v, vl);
	}
	reads(cache, "sixteen-bytes-ok", 16, v, 32); /* the refused puts changed nothing */
	larder_close(cache);
}

static void test_key_limit_refuses(void)
{
	static const size_t limits[] = { 12, 6 };
	static const char key[] = "twenty-byte-key-abcd";
	unsigned char v[24];

	fill(v, sizeof(v), 7);
	for (size_t i = 0; i < sizeof(limits) / sizeof(limits[0]); i++) {
		larder_config *config = th_config(4 * MiB);
		larder *cache;

		REQUIRE(config != NULL);
		REQUIRE_RC(larder_config_set_max_key_bytes(config, limits[i]), LARDER_OK);
		cache = th_open(config);
		REQUIRE(cache != NULL);
		/* Twice: the first put of each length may leave the fast path
		 * (the thread's first call on this cache, the class's first slot). */
		for (int round = 0; round < 2; round++)
			for (size_t kl = 1; kl < sizeof(key); kl++) {
				int want = kl > limits[i] ? LARDER_EKEYSIZE : LARDER_OK;
				CHECK_RC(larder_put(cache, key, kl, v, sizeof(v), LARDER_TTL_NEVER),
					 want);
				if (want == LARDER_OK)
					reads(cache, key, kl, v, sizeof(v));
			}
		larder_close(cache);
	}
}

/* 6,000 keys of 16 bytes in an index of 1,024 buckets (the least a cache
 * opens with: 7,168 slots; growth past 6,272 keys), so that many live past
 * their home, each put twice and read back: the first time new (the fast
 * path's insert into its home, or past it under the same lock), the second
 * an overwrite, which for a key past its home must find it there (the
 * fast insert's probe, put_probed) rather than add it again. */
static void test_keys_past_their_home(void)
{
	enum { N = 6000 };
	larder_config *config = th_config_one_shard(64 * MiB);
	unsigned char key[16], value[32];

	REQUIRE(config != NULL);
	REQUIRE_RC(larder_config_set_expected_entries(config, 1000), LARDER_OK);
	larder *cache = th_open(config);
	REQUIRE(cache != NULL);
	for (unsigned round = 0; round < 2; round++) {
		CHECK_EQ(th_quiesce(cache, 60000), 0);
		for (unsigned i = 0; i < N; i++) {
			fill(key, sizeof(key), i + 1);
			fill(value, sizeof(value), 2 * i + round);
			CHECK_RC(larder_put(cache, key, sizeof(key), value, sizeof(value),
					    LARDER_TTL_NEVER),
				 LARDER_OK);
		}
	}
	for (unsigned i = 0; i < N; i++) {
		fill(key, sizeof(key), i + 1);
		fill(value, sizeof(value), 2 * i + 1);
		if (!reads(cache, key, sizeof(key), value, sizeof(value)))
			break;
	}
	uint64_t entries = 0;
	CHECK(th_check_accounting(cache, 60000, &entries, NULL));
	CHECK_EQ(entries, N);
	CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_RESIZES), 0); /* no growth moved them home */
	larder_close(cache);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_every_size_round_trips),
		TH_TEST(test_overwrite_of_expired_entry),
		TH_TEST(test_lifetimes_not_dropped),
		TH_TEST(test_put_inside_read_section),
		TH_TEST(test_value_limit_refuses),
		TH_TEST(test_key_limit_refuses),
		TH_TEST(test_keys_past_their_home),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
