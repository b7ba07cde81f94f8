/*
 * tests/unit/test_ttl.c - time to live, with an injected clock.
 *
 * The cache's clock is struct th_clock: an atomic millisecond counter that
 * only the test advances, so every boundary is exact and nothing sleeps.
 * Invariants checked (larder.h, ARCHITECTURE.md invariant 2):
 *   T1. an entry written at t with ttl d is returned at t+d-1 and never at
 *       t+d or later, by every read (get, get_with, contains, get_batch,
 *       ttl_remaining all agree);
 *   T2. ttl_remaining is the deadline minus now, at least 1 for a live entry,
 *       LARDER_TTL_NEVER for none;
 *   T3. LARDER_TTL_DEFAULT takes the config's default, LARDER_TTL_NEVER never
 *       expires, touch() replaces (or removes) the deadline;
 *   T4. conditional writes treat an expired entry as absent;
 *   T5. reads of entries without a TTL never call the clock;
 *   T6. expired entries are reclaimed by the maintainer (memory, counters).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include <time.h>

#include "harness.h"

#define KiB ((uint64_t)1024)
#define MiB (1024 * KiB)
#define T0 1000000u

static struct th_clock clk;

static larder *open_ttl_cache(uint64_t default_ttl)
{
	larder_config *config = th_config(4 * MiB);

	th_clock_init(&clk, T0);
	if (config == NULL)
		return NULL;
	CHECK_RC(larder_config_set_clock(config, th_clock_fn, &clk), LARDER_OK);
	CHECK_RC(larder_config_set_default_ttl_ms(config, default_ttl), LARDER_OK);
	return th_open(config);
}

static void set_time(uint64_t t)
{
	atomic_store_explicit(&clk.now_ms, t, memory_order_seq_cst);
}

struct seen {
	int calls;
	size_t len;
	unsigned char bytes[64];
};

static void seen_fn(void *ctx, const void *value, size_t value_len)
{
	struct seen *s = ctx;

	s->calls++;
	s->len = value_len;
	memcpy(s->bytes, value, value_len < 64 ? value_len : 64);
}

static void seen_batch_fn(void *ctx, size_t index, const void *value, size_t value_len)
{
	(void)index;
	seen_fn(ctx, value, value_len);
}

/*
 * Every read agrees that key is live with value (and, when ttl_want is not 0,
 * that exactly ttl_want ms remain), or that it is absent.
 */
#define AGREE(c, k, live, v, ttl_want) agree(__FILE__, __LINE__, c, k, live, v, ttl_want)
static void agree(const char *file, int line, larder *c, const char *k, int live,
		  const char *v, uint64_t ttl_want)
{
	size_t klen = strlen(k), vlen = v ? strlen(v) : 0, len = 0;
	char buf[64];
	struct seen s = {0, 0, {0}};
	uint64_t ttl = 0;
	const void *keys[1] = {k};
	const size_t lens[1] = {klen};
	int want = live ? LARDER_OK : LARDER_MISS;
	int rc;
	long n;

	if ((rc = larder_get(c, k, klen, buf, sizeof(buf), &len)) != want)
		th_fail(file, line, "t+%" PRIu64 ": get(%s) = %d (%s), expected %s",
			atomic_load(&clk.now_ms) - T0, k, rc, larder_strerror(rc),
			live ? "a hit" : "a miss");
	else if (live && (len != vlen || memcmp(buf, v, vlen) != 0))
		th_fail(file, line, "get(%s): wrong value", k);
	if ((rc = larder_get_with(c, k, klen, seen_fn, &s)) != want || s.calls != live)
		th_fail(file, line, "t+%" PRIu64 ": get_with(%s) = %d, %d calls",
			atomic_load(&clk.now_ms) - T0, k, rc, s.calls);
	if ((rc = larder_contains(c, k, klen)) != want)
		th_fail(file, line, "t+%" PRIu64 ": contains(%s) = %d",
			atomic_load(&clk.now_ms) - T0, k, rc);
	s.calls = 0;
	if ((n = larder_get_batch(c, 1, keys, lens, seen_batch_fn, &s)) != live || s.calls != live)
		th_fail(file, line, "t+%" PRIu64 ": get_batch(%s) = %ld, %d calls",
			atomic_load(&clk.now_ms) - T0, k, n, s.calls);
	rc = larder_ttl_remaining(c, k, klen, &ttl);
	if (rc != want)
		th_fail(file, line, "t+%" PRIu64 ": ttl_remaining(%s) = %d",
			atomic_load(&clk.now_ms) - T0, k, rc);
	else if (live && ttl == 0)
		th_fail(file, line, "ttl_remaining(%s) = 0 for a live entry", k);
	else if (live && ttl_want != 0 && ttl != ttl_want)
		th_fail(file, line, "t+%" PRIu64 ": ttl_remaining(%s) = %" PRIu64 ", expected %" PRIu64,
			atomic_load(&clk.now_ms) - T0, k, ttl, ttl_want);
}

static void test_ttl_boundary(void)
{
	larder *cache = open_ttl_cache(0);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, 100), LARDER_OK);
	CHECK_RC(larder_put(cache, "one", 3, "1", 1, 1), LARDER_OK);
	AGREE(cache, "k", 1, "v", 100);
	AGREE(cache, "one", 1, "1", 1);
	set_time(T0 + 1);
	AGREE(cache, "one", 0, NULL, 0);
	set_time(T0 + 50);
	AGREE(cache, "k", 1, "v", 50);
	set_time(T0 + 99);
	AGREE(cache, "k", 1, "v", 1);
	set_time(T0 + 100);
	AGREE(cache, "k", 0, NULL, 0);
	set_time(T0 + 101);
	AGREE(cache, "k", 0, NULL, 0);
	set_time(T0 + 100000000);
	AGREE(cache, "k", 0, NULL, 0);
	th_check_accounting(cache, 10000, NULL, NULL);
	larder_close(cache);
}

/* The deadline counts from the write, not from the cache's start. */
static void test_ttl_counts_from_write(void)
{
	larder *cache = open_ttl_cache(0);

	REQUIRE(cache != NULL);
	set_time(T0 + 5000);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, 100), LARDER_OK);
	set_time(T0 + 5099);
	AGREE(cache, "k", 1, "v", 1);
	set_time(T0 + 5100);
	AGREE(cache, "k", 0, NULL, 0);
	/* an overwrite gets its own deadline */
	CHECK_RC(larder_put(cache, "k", 1, "w", 1, 10), LARDER_OK);
	set_time(T0 + 5109);
	AGREE(cache, "k", 1, "w", 1);
	CHECK_RC(larder_put(cache, "k", 1, "x", 1, LARDER_TTL_NEVER), LARDER_OK);
	set_time(T0 + 900000);
	AGREE(cache, "k", 1, "x", LARDER_TTL_NEVER);
	larder_close(cache);
}

static void test_default_ttl(void)
{
	larder *cache = open_ttl_cache(500);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "d", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, "n", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(cache, "s", 1, "v", 1, 50), LARDER_OK);
	CHECK_RC(larder_put_if_absent(cache, "pa", 2, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	AGREE(cache, "d", 1, "v", 500);
	AGREE(cache, "pa", 1, "v", 500);
	AGREE(cache, "n", 1, "v", LARDER_TTL_NEVER);
	AGREE(cache, "s", 1, "v", 50);
	set_time(T0 + 50);
	AGREE(cache, "s", 0, NULL, 0);
	set_time(T0 + 499);
	AGREE(cache, "d", 1, "v", 1);
	set_time(T0 + 500);
	AGREE(cache, "d", 0, NULL, 0);
	AGREE(cache, "pa", 0, NULL, 0);
	set_time(T0 + 1000000000ull);
	AGREE(cache, "n", 1, "v", LARDER_TTL_NEVER);
	larder_close(cache);

	/* default TTL 0 and LARDER_TTL_NEVER both mean none */
	for (int i = 0; i < 2; i++) {
		cache = open_ttl_cache(i == 0 ? 0 : LARDER_TTL_NEVER);
		REQUIRE(cache != NULL);
		CHECK_RC(larder_put(cache, "d", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
		AGREE(cache, "d", 1, "v", LARDER_TTL_NEVER);
		set_time(T0 + 1000000000ull);
		AGREE(cache, "d", 1, "v", LARDER_TTL_NEVER);
		larder_close(cache);
	}
}

static void test_touch(void)
{
	larder *cache = open_ttl_cache(0);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, 100), LARDER_OK);
	set_time(T0 + 50);
	CHECK_RC(larder_touch(cache, "k", 1, 200), LARDER_OK); /* deadline now t0+250 */
	AGREE(cache, "k", 1, "v", 200);
	set_time(T0 + 249);
	AGREE(cache, "k", 1, "v", 1);
	set_time(T0 + 250);
	AGREE(cache, "k", 0, NULL, 0);
	/* an expired entry cannot be revived by touch */
	CHECK_RC(larder_touch(cache, "k", 1, 1000), LARDER_MISS);
	AGREE(cache, "k", 0, NULL, 0);

	/* touch can shorten a deadline, and remove it */
	set_time(T0 + 1000);
	CHECK_RC(larder_put(cache, "a", 1, "v", 1, 1000), LARDER_OK);
	CHECK_RC(larder_touch(cache, "a", 1, 10), LARDER_OK);
	set_time(T0 + 1010);
	AGREE(cache, "a", 0, NULL, 0);
	CHECK_RC(larder_put(cache, "b", 1, "v", 1, 100), LARDER_OK);
	CHECK_RC(larder_touch(cache, "b", 1, LARDER_TTL_NEVER), LARDER_OK);
	AGREE(cache, "b", 1, "v", LARDER_TTL_NEVER);
	/* no default in this cache: TTL_DEFAULT means none */
	CHECK_RC(larder_put(cache, "c", 1, "v", 1, 100), LARDER_OK);
	CHECK_RC(larder_touch(cache, "c", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	AGREE(cache, "c", 1, "v", LARDER_TTL_NEVER);
	/* an entry written without a TTL can be given one */
	CHECK_RC(larder_put(cache, "d", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_touch(cache, "d", 1, 30), LARDER_OK);
	AGREE(cache, "d", 1, "v", 30);
	set_time(T0 + 1039);
	AGREE(cache, "d", 1, "v", 1);
	set_time(T0 + 1040);
	AGREE(cache, "d", 0, NULL, 0);
	set_time(T0 + 100000000);
	AGREE(cache, "b", 1, "v", LARDER_TTL_NEVER);
	AGREE(cache, "c", 1, "v", LARDER_TTL_NEVER);
	th_check_accounting(cache, 10000, NULL, NULL);
	larder_close(cache);

	/* with a default TTL, touch(TTL_DEFAULT) applies it */
	cache = open_ttl_cache(500);
	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "e", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	set_time(T0 + 10);
	CHECK_RC(larder_touch(cache, "e", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	AGREE(cache, "e", 1, "v", 500);
	set_time(T0 + 510);
	AGREE(cache, "e", 0, NULL, 0);
	larder_close(cache);
}

/* Conditional writes and removals treat an expired entry as absent. */
static void test_expired_is_absent(void)
{
	larder *cache = open_ttl_cache(0);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "pa", 2, "old", 3, 10), LARDER_OK);
	CHECK_RC(larder_put(cache, "r", 1, "old", 3, 10), LARDER_OK);
	CHECK_RC(larder_put(cache, "cas", 3, "old", 3, 10), LARDER_OK);
	CHECK_RC(larder_put(cache, "rm", 2, "old", 3, 10), LARDER_OK);
	CHECK_RC(larder_put(cache, "rme", 3, "old", 3, 10), LARDER_OK);
	CHECK_RC(larder_put(cache, "p", 1, "old", 3, 10), LARDER_OK);
	/* before the deadline they are present */
	CHECK_RC(larder_put_if_absent(cache, "pa", 2, "new", 3, 10), LARDER_EXISTS);
	set_time(T0 + 10);
	CHECK_RC(larder_put_if_absent(cache, "pa", 2, "new", 3, 100), LARDER_OK);
	AGREE(cache, "pa", 1, "new", 100);
	CHECK_RC(larder_replace(cache, "r", 1, "new", 3, 100), LARDER_MISS);
	AGREE(cache, "r", 0, NULL, 0);
	CHECK_RC(larder_replace_if_equals(cache, "cas", 3, "old", 3, "new", 3, 100), LARDER_MISS);
	AGREE(cache, "cas", 0, NULL, 0);
	CHECK_RC(larder_remove(cache, "rm", 2), LARDER_MISS);
	CHECK_RC(larder_remove_if_equals(cache, "rme", 3, "old", 3), LARDER_MISS);
	CHECK_RC(larder_put(cache, "p", 1, "new", 3, LARDER_TTL_NEVER), LARDER_OK);
	AGREE(cache, "p", 1, "new", LARDER_TTL_NEVER);
	th_check_accounting(cache, 10000, NULL, NULL);
	larder_close(cache);
}

static void test_ttl_batch_mixed(void)
{
	larder *cache = open_ttl_cache(0);
	static char names[10][8];
	const void *keys[10];
	size_t lens[10];
	struct seen s = {0, 0, {0}};

	REQUIRE(cache != NULL);
	for (int i = 0; i < 10; i++) {
		snprintf(names[i], sizeof(names[i]), "k%d", i);
		keys[i] = names[i];
		lens[i] = strlen(names[i]);
		CHECK_RC(larder_put(cache, keys[i], lens[i], "v", 1, (uint64_t)(i + 1) * 10),
			 LARDER_OK);
	}
	set_time(T0 + 45); /* deadlines 10..100: keys 4..9 (50..100 ms) are live */
	CHECK_EQ(larder_get_batch(cache, 10, keys, lens, seen_batch_fn, &s), 6);
	CHECK_EQ(s.calls, 6);
	set_time(T0 + 100);
	s.calls = 0;
	CHECK_EQ(larder_get_batch(cache, 10, keys, lens, seen_batch_fn, &s), 0);
	CHECK_EQ(s.calls, 0);
	larder_close(cache);
}

/* A lifetime that would overflow now + ttl must not wrap into the past. */
static void test_ttl_huge(void)
{
	larder *cache = open_ttl_cache(0);
	uint64_t ttl = 0;

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "a", 1, "v", 1, UINT64_MAX - 1), LARDER_OK);
	CHECK_RC(larder_put(cache, "b", 1, "v", 1, UINT64_MAX - T0 + 5), LARDER_OK);
	CHECK_RC(larder_put(cache, "c", 1, "v", 1, (uint64_t)1 << 40), LARDER_OK);
	set_time(T0 + 1000000000ull);
	AGREE(cache, "a", 1, "v", 0);
	AGREE(cache, "b", 1, "v", 0);
	AGREE(cache, "c", 1, "v", ((uint64_t)1 << 40) - 1000000000ull);
	CHECK_RC(larder_ttl_remaining(cache, "a", 1, &ttl), LARDER_OK);
	CHECK_GT(ttl, (uint64_t)1 << 50);
	larder_close(cache);
}

/* Reads of an entry that has no TTL never call the clock (issue 2, "Reads"). */
static void test_no_clock_without_ttl(void)
{
	larder *cache = open_ttl_cache(0);
	char buf[8];
	size_t len;
	struct seen s = {0, 0, {0}};
	const void *keys[1] = {"k"};
	const size_t lens[1] = {1};
	uint64_t before;

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	th_clock_set_owner(&clk);
	before = atomic_load(&clk.owner_calls);
	for (int i = 0; i < 100; i++) {
		CHECK_RC(larder_get(cache, "k", 1, buf, sizeof(buf), &len), LARDER_OK);
		CHECK_RC(larder_get_with(cache, "k", 1, seen_fn, &s), LARDER_OK);
		CHECK_RC(larder_contains(cache, "k", 1), LARDER_OK);
		CHECK_EQ(larder_get_batch(cache, 1, keys, lens, seen_batch_fn, &s), 1);
	}
	CHECK_EQ(atomic_load(&clk.owner_calls) - before, 0);
	/* and a read of an entry with a TTL does consult it */
	CHECK_RC(larder_put(cache, "t", 1, "v", 1, 100), LARDER_OK);
	before = atomic_load(&clk.owner_calls);
	CHECK_RC(larder_get(cache, "t", 1, buf, sizeof(buf), &len), LARDER_OK);
	CHECK_GT(atomic_load(&clk.owner_calls) - before, 0);
	larder_close(cache);
}

static uint64_t monotonic_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

/*
 * The default clock: reads compare with the kernel's coarse clock first and
 * read CLOCK_MONOTONIC only near the deadline. Whatever the mix, a get that
 * starts at or after the deadline (bounded by the time the put returned plus
 * the TTL) must miss, and one that starts before the put began plus the TTL
 * must hit. Real time has to pass here: the loop reads the clock, it does not
 * sleep.
 */
static void test_default_clock_precise(void)
{
	char buf[8];
	size_t len;
	uint64_t hits = 0, misses = 0;
	larder *cache = th_open(th_config(4 * MiB));
	REQUIRE(cache != NULL);
	for (int round = 0; round < 3; round++) {
		uint64_t start = monotonic_ms();
		CHECK_RC(larder_put(cache, "k", 1, "v", 1, 20), LARDER_OK);
		uint64_t put_done = monotonic_ms();
		for (;;) {
			uint64_t before = monotonic_ms();
			int rc = larder_get(cache, "k", 1, buf, sizeof(buf), &len);
			if (before >= put_done + 20) {
				CHECK_RC(rc, LARDER_MISS);
				misses++;
			} else if (monotonic_ms() < start + 20) {
				CHECK_RC(rc, LARDER_OK);
				hits++;
			}
			if (before >= put_done + 40)
				break;
		}
	}
	CHECK_GT(hits, 0);
	CHECK_GT(misses, 0);
	larder_close(cache);
}

struct reclaim_wait {
	larder *cache;
	uint64_t want_expired;
	uint64_t expired0;
};

static int expired_all(void *p)
{
	struct reclaim_wait *w = p;

	(void)larder__test_quiesce(w->cache, 1000);
	return th_stat(w->cache, LARDER_STAT_EXPIRATIONS) - w->expired0 >= w->want_expired &&
	       th_stat(w->cache, LARDER_STAT_ENTRIES) == 0;
}

/* Expired entries are reclaimed by the maintainer, not left until read. */
static void test_expiry_reclaims(void)
{
	struct reclaim_wait w;
	uint64_t entries, bytes;

	w.cache = open_ttl_cache(0);
	REQUIRE(w.cache != NULL);
	w.expired0 = th_stat(w.cache, LARDER_STAT_EXPIRATIONS);
	w.want_expired = 500;
	for (int i = 0; i < 500; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_RC(larder_put(w.cache, key, strlen(key), "value", 5, 10 + (uint64_t)i),
			 LARDER_OK);
	}
	CHECK_EQ(larder__test_quiesce(w.cache, 10000), 0);
	CHECK_EQ(th_stat(w.cache, LARDER_STAT_EXPIRATIONS) - w.expired0, 0);
	set_time(T0 + 10 + 500);
	/* nothing reads the keys: only the maintainer's wheel can find them */
	CHECK(th_wait_until(expired_all, &w, 20000));
	CHECK_EQ(th_stat(w.cache, LARDER_STAT_EXPIRATIONS) - w.expired0, 500);
	th_check_accounting(w.cache, 10000, &entries, &bytes);
	CHECK_EQ(entries, 0);
	CHECK_EQ(bytes, 0);
	larder_close(w.cache);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_ttl_boundary),
		TH_TEST(test_ttl_counts_from_write),
		TH_TEST(test_default_ttl),
		TH_TEST(test_touch),
		TH_TEST(test_expired_is_absent),
		TH_TEST(test_ttl_batch_mixed),
		TH_TEST(test_ttl_huge),
		TH_TEST(test_no_clock_without_ttl),
		TH_TEST(test_expiry_reclaims),
		TH_TEST(test_default_clock_precise),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
