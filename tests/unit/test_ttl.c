/*
 * tests/unit/test_ttl.c - time to live, with an injected clock.
 *
 * The cache's clock is struct th_clock: an atomic millisecond counter that
 * only the test advances, so every boundary is exact and nothing sleeps.
 * Invariants checked (larder.h, docs/architecture.md invariant 2):
 *   TTTL-T1. an entry written at t with ttl d is returned at t+d-1 and never at
 *       t+d or later, by every read (get, get_with, contains, get_batch,
 *       ttl_remaining all agree);
 *   TTTL-T2. ttl_remaining is the deadline minus now, at least 1 for a live entry,
 *       LARDER_TTL_NEVER for none;
 *   TTTL-T3. LARDER_TTL_DEFAULT takes the config's default, LARDER_TTL_NEVER never
 *       expires, touch() replaces (or removes) the deadline;
 *   TTTL-T4. conditional writes treat an expired entry as absent;
 *   TTTL-T5. reads of entries without a TTL never call the clock;
 *   TTTL-T6. expired entries are reclaimed by the maintainer (memory, counters);
 *   TTTL-T7. the timing wheel reports each entry EXPIRED to the listener at its
 *       deadline on every level boundary and beyond the wheel's span (heap),
 *       follows puts and touches (later, earlier, none), forgets removed
 *       entries, and wakes by itself for a deadline with the real clock;
 *   TTTL-T8. expire-after-access: a value read (get, get_with, get_batch)
 *       extends the deadline to now + default TTL at the read itself (never
 *       shortening an explicit one, never giving one to "none"), unless it
 *       is within the slack of that; contains and ttl_remaining do not; an
 *       entry read more often than its TTL never expires; a touch after a
 *       read wins; expire-after-write extends nothing.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include <time.h>

#include "harness.h"

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
	th_check_accounting(cache, 60000, NULL, NULL);
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
	th_check_accounting(cache, 60000, NULL, NULL);
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
	th_check_accounting(cache, 60000, NULL, NULL);
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
	/* saturated: the deadline is UINT64_MAX - 1, a finite one (larder.h) */
	CHECK_RC(larder_ttl_remaining(cache, "a", 1, &ttl), LARDER_OK);
	CHECK_EQ(ttl, UINT64_MAX - 1 - (T0 + 1000000000ull));
	CHECK_RC(larder_ttl_remaining(cache, "b", 1, &ttl), LARDER_OK);
	CHECK_EQ(ttl, UINT64_MAX - 1 - (T0 + 1000000000ull));
	larder_close(cache);
}

/* Reads of an entry that has no TTL never call the clock (larder.h, "Clock":
 * only operations that involve a TTL call it). */
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
 * The default clock (CLOCK_MONOTONIC, read by every read of an entry with a
 * deadline; test_contracts' test_default_clock_never_expired hammers the
 * other read paths while the kernel's coarse clock lags). A get that
 * starts at or after the deadline (bounded by the time the put returned plus
 * the TTL) must miss, and one that starts before the put began plus the TTL
 * must hit. Real time has to pass here: the loop reads the clock, it does not
 * sleep. A round sees a hit only if its first get returns within 20 ms of the
 * put, which a loaded machine can prevent (the thread is not running): rounds
 * go on until both a hit and a miss were judged (each round ends with a miss),
 * for at most 1,000 rounds (40 s), so the verdict does not depend on the load.
 */
static void test_default_clock_precise(void)
{
	char buf[8];
	size_t len;
	uint64_t hits = 0, misses = 0;
	larder *cache = th_open(th_config(4 * MiB));
	REQUIRE(cache != NULL);
	int round;
	for (round = 0; round < 3 || (hits == 0 && round < 1000); round++) {
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
	printf("  %" PRIu64 " hits and %" PRIu64 " misses judged in %d rounds\n", hits, misses,
	       round);
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

	(void)th_quiesce(w->cache, 60000);
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
	CHECK_EQ(th_quiesce(w.cache, 60000), 0);
	CHECK_EQ(th_stat(w.cache, LARDER_STAT_EXPIRATIONS) - w.expired0, 0);
	set_time(T0 + 10 + 500);
	/* nothing reads the keys: only the maintainer's wheel can find them */
	CHECK(th_wait_until(expired_all, &w, 60000));
	CHECK_EQ(th_stat(w.cache, LARDER_STAT_EXPIRATIONS) - w.expired0, 500);
	th_check_accounting(w.cache, 60000, &entries, &bytes);
	CHECK_EQ(entries, 0);
	CHECK_EQ(bytes, 0);
	larder_close(w.cache);
}

/* ---- The timing wheel, seen through the removal listener ------------------- */

struct removal {
	char key[24];
	enum larder_cause cause;
	uint64_t at_ms; /* the cache clock when the listener ran */
};

static struct {
	pthread_mutex_t mu;
	/* Room for every removal a test makes (test_wheel_cancel_on_remove:
	 * 300): with shards their order varies, so a cut-off would drop a
	 * different key's record from run to run. */
	struct removal r[512];
	int n;
	struct th_event expired; /* signalled on the first EXPIRED */
	larder_clock_fn *clock;
	void *clock_ctx;
} rec = { PTHREAD_MUTEX_INITIALIZER, { { { 0 }, 0, 0 } }, 0, { PTHREAD_MUTEX_INITIALIZER,
	PTHREAD_COND_INITIALIZER, 0 }, NULL, NULL };

static void record_fn(void *ctx, const void *key, size_t key_len, const void *value,
		      size_t value_len, enum larder_cause cause)
{
	(void)ctx;
	(void)value;
	(void)value_len;
	uint64_t at = rec.clock(rec.clock_ctx);
	pthread_mutex_lock(&rec.mu);
	if (rec.n < (int)(sizeof(rec.r) / sizeof(rec.r[0]))) {
		struct removal *r = &rec.r[rec.n++];
		size_t n = key_len < sizeof(r->key) - 1 ? key_len : sizeof(r->key) - 1;
		memcpy(r->key, key, n);
		r->key[n] = 0;
		r->cause = cause;
		r->at_ms = at;
	}
	pthread_mutex_unlock(&rec.mu);
	if (cause == LARDER_CAUSE_EXPIRED)
		th_event_signal(&rec.expired);
}

/* Removals of key with cause so far; *at gets the last one's time. */
static int removed(const char *key, enum larder_cause cause, uint64_t *at)
{
	int n = 0;
	pthread_mutex_lock(&rec.mu);
	for (int i = 0; i < rec.n; i++) {
		if (strcmp(rec.r[i].key, key) == 0 && rec.r[i].cause == cause) {
			n++;
			if (at)
				*at = rec.r[i].at_ms;
		}
	}
	pthread_mutex_unlock(&rec.mu);
	return n;
}

static larder *open_recorded_in(larder_config *config, uint64_t default_ttl,
				enum larder_expiry expiry, larder_clock_fn *fn, void *ctx)
{
	th_clock_init(&clk, T0);
	pthread_mutex_lock(&rec.mu);
	rec.n = 0;
	pthread_mutex_unlock(&rec.mu);
	th_event_destroy(&rec.expired);
	th_event_init(&rec.expired);
	rec.clock = fn ? fn : th_clock_fn;
	rec.clock_ctx = fn ? ctx : &clk;
	if (config == NULL)
		return NULL;
	if (fn)
		CHECK_RC(larder_config_set_clock(config, fn, ctx), LARDER_OK);
	else
		CHECK_RC(larder_config_set_clock(config, th_clock_fn, &clk), LARDER_OK);
	CHECK_RC(larder_config_set_default_ttl_ms(config, default_ttl), LARDER_OK);
	CHECK_RC(larder_config_set_expiry(config, expiry), LARDER_OK);
	CHECK_RC(larder_config_set_removal_listener(config, record_fn, NULL), LARDER_OK);
	return th_open(config);
}

static larder *open_recorded(uint64_t default_ttl, enum larder_expiry expiry,
			     larder_clock_fn *fn, void *ctx)
{
	return open_recorded_in(th_config(16 * MiB), default_ttl, expiry, fn, ctx);
}

/* Moves the injected clock and waits until the maintainer is idle at it. */
static void settle_at(larder *c, uint64_t t)
{
	set_time(t);
	CHECK_EQ(th_quiesce(c, 60000), 0);
}

/*
 * Deadlines on every level boundary of the wheel (63/64 ms, 4095/4096, ...,
 * and one beyond the span, in the heap): each entry is reported EXPIRED by
 * the maintainer at its deadline (the clock stands still while the
 * maintainer works, so the listener sees exactly the deadline), not one ms
 * before, and nothing reads the keys meanwhile.
 */
static void test_wheel_boundaries_listener(void)
{
	static const uint64_t ttls[] = {
		1, 63, 64, 65, 4095, 4096, 4097, 262143, 262144, (uint64_t)1 << 24,
		((uint64_t)1 << 30) + 1, ((uint64_t)1 << 36) - 1, (uint64_t)1 << 36,
		((uint64_t)1 << 37) + 12345,
	};
	enum { N = sizeof(ttls) / sizeof(ttls[0]) };
	larder *cache = open_recorded(0, LARDER_EXPIRE_AFTER_WRITE, NULL, NULL);
	char key[N][16];

	REQUIRE(cache != NULL);
	for (int i = 0; i < N; i++) {
		snprintf(key[i], sizeof(key[i]), "b%d", i);
		CHECK_RC(larder_put(cache, key[i], strlen(key[i]), "v", 1, ttls[i]), LARDER_OK);
	}
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	for (int i = 0; i < N; i++) {
		uint64_t at = 0;
		settle_at(cache, T0 + ttls[i] - 1);
		if (!CHECK_EQ(removed(key[i], LARDER_CAUSE_EXPIRED, NULL), 0))
			printf("  ttl %" PRIu64 ": expired 1 ms early\n", ttls[i]);
		settle_at(cache, T0 + ttls[i]);
		if (!CHECK_EQ(removed(key[i], LARDER_CAUSE_EXPIRED, &at), 1))
			printf("  ttl %" PRIu64 ": not expired at its deadline\n", ttls[i]);
		else
			CHECK_EQ(at, T0 + ttls[i]);
		if (i + 1 < N)
			CHECK_EQ(removed(key[i + 1], LARDER_CAUSE_EXPIRED, NULL), 0);
	}
	CHECK_EQ(th_stat(cache, LARDER_STAT_EXPIRATIONS), N);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/* A put replaces the deadline with its own; a touch moves it later (lazy
 * reschedule) or earlier (EV_TOUCH), or takes it away. */
static void test_wheel_reschedule(void)
{
	larder *cache = open_recorded(0, LARDER_EXPIRE_AFTER_WRITE, NULL, NULL);
	uint64_t at = 0;

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "p", 1, "1", 1, 100), LARDER_OK);
	CHECK_RC(larder_put(cache, "p", 1, "2", 1, 1000), LARDER_OK); /* by put */
	CHECK_RC(larder_put(cache, "later", 5, "v", 1, 100), LARDER_OK);
	CHECK_RC(larder_put(cache, "sooner", 6, "v", 1, 100000), LARDER_OK);
	CHECK_RC(larder_put(cache, "never", 5, "v", 1, 100), LARDER_OK);
	CHECK_RC(larder_put(cache, "plain", 5, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_RC(larder_touch(cache, "later", 5, 500), LARDER_OK);   /* 100 -> 500 */
	CHECK_RC(larder_touch(cache, "sooner", 6, 50), LARDER_OK);   /* 100000 -> 50 */
	CHECK_RC(larder_touch(cache, "never", 5, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_touch(cache, "plain", 5, 300), LARDER_OK);   /* relocated copy */
	settle_at(cache, T0 + 49);
	CHECK_EQ(removed("sooner", LARDER_CAUSE_EXPIRED, NULL), 0);
	settle_at(cache, T0 + 50);
	CHECK_EQ(removed("sooner", LARDER_CAUSE_EXPIRED, &at), 1);
	CHECK_EQ(at, T0 + 50);
	settle_at(cache, T0 + 100);
	CHECK_EQ(removed("p", LARDER_CAUSE_EXPIRED, NULL), 0);
	CHECK_EQ(removed("p", LARDER_CAUSE_REPLACED, NULL), 1);
	CHECK_EQ(removed("later", LARDER_CAUSE_EXPIRED, NULL), 0);
	CHECK_EQ(removed("never", LARDER_CAUSE_EXPIRED, NULL), 0);
	AGREE(cache, "later", 1, "v", 400);
	settle_at(cache, T0 + 299);
	CHECK_EQ(removed("plain", LARDER_CAUSE_EXPIRED, NULL), 0);
	settle_at(cache, T0 + 300);
	CHECK_EQ(removed("plain", LARDER_CAUSE_EXPIRED, &at), 1);
	CHECK_EQ(at, T0 + 300);
	settle_at(cache, T0 + 499);
	CHECK_EQ(removed("later", LARDER_CAUSE_EXPIRED, NULL), 0);
	settle_at(cache, T0 + 500);
	CHECK_EQ(removed("later", LARDER_CAUSE_EXPIRED, &at), 1);
	CHECK_EQ(at, T0 + 500);
	settle_at(cache, T0 + 1000);
	CHECK_EQ(removed("p", LARDER_CAUSE_EXPIRED, &at), 1);
	CHECK_EQ(at, T0 + 1000);
	settle_at(cache, T0 + 100000000);
	CHECK_EQ(removed("never", LARDER_CAUSE_EXPIRED, NULL), 0);
	AGREE(cache, "never", 1, "v", LARDER_TTL_NEVER);
	CHECK_EQ(th_stat(cache, LARDER_STAT_EXPIRATIONS), 4); /* all but "never" */
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/* A removed entry leaves the wheel: no EXPIRED later, and its memory and
 * wheel links are gone (the address may be reused by the next write). */
static void test_wheel_cancel_on_remove(void)
{
	larder *cache = open_recorded(0, LARDER_EXPIRE_AFTER_WRITE, NULL, NULL);

	REQUIRE(cache != NULL);
	for (int round = 0; round < 3; round++) {
		for (int i = 0; i < 100; i++) {
			char key[16];
			snprintf(key, sizeof(key), "r%d", i);
			CHECK_RC(larder_put(cache, key, strlen(key), "v", 1, 100 + (uint64_t)i * 37),
				 LARDER_OK);
		}
		CHECK_EQ(th_quiesce(cache, 60000), 0);
		for (int i = 0; i < 100; i++) {
			char key[16];
			snprintf(key, sizeof(key), "r%d", i);
			CHECK_RC(larder_remove(cache, key, strlen(key)), LARDER_OK);
		}
		CHECK_EQ(th_quiesce(cache, 60000), 0);
	}
	settle_at(cache, T0 + 1000000);
	CHECK_EQ(removed("r0", LARDER_CAUSE_EXPLICIT, NULL), 3);
	CHECK_EQ(th_stat(cache, LARDER_STAT_EXPIRATIONS), 0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_REMOVALS), 300);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/* Expire after access: a read extends the deadline to now + the default TTL;
 * after write (the default) it does not. */
static void test_expire_after_access(void)
{
	char buf[8];
	size_t len;

	for (int mode = 0; mode < 2; mode++) {
		enum larder_expiry ex = mode ? LARDER_EXPIRE_AFTER_ACCESS : LARDER_EXPIRE_AFTER_WRITE;
		larder *cache = open_recorded(100, ex, NULL, NULL);
		REQUIRE(cache != NULL);
		CHECK_RC(larder_put(cache, "a", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
		CHECK_RC(larder_put(cache, "x", 1, "v", 1, 1000), LARDER_OK); /* explicit, longer */
		CHECK_RC(larder_put(cache, "cold", 4, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
		settle_at(cache, T0 + 60);
		CHECK_RC(larder_get(cache, "a", 1, buf, sizeof(buf), &len), LARDER_OK);
		CHECK_RC(larder_get(cache, "x", 1, buf, sizeof(buf), &len), LARDER_OK);
		uint64_t ttl = 0; /* extended at the read, with no maintainer pass between */
		CHECK_RC(larder_ttl_remaining(cache, "a", 1, &ttl), LARDER_OK);
		CHECK_EQ(ttl, mode ? 100 : 40);
		CHECK_RC(larder_ttl_remaining(cache, "x", 1, &ttl), LARDER_OK);
		CHECK_EQ(ttl, 940); /* never shortened */
		settle_at(cache, T0 + 100);
		CHECK_EQ(removed("cold", LARDER_CAUSE_EXPIRED, NULL), 1);
		CHECK_EQ(removed("a", LARDER_CAUSE_EXPIRED, NULL), !mode);
		settle_at(cache, T0 + 159);
		CHECK_EQ(removed("a", LARDER_CAUSE_EXPIRED, NULL), !mode);
		AGREE(cache, "a", mode, "v", 0);
		settle_at(cache, T0 + 159); /* that read extended it again, to 259 */
		settle_at(cache, T0 + 259);
		CHECK_EQ(removed("a", LARDER_CAUSE_EXPIRED, NULL), 1);
		AGREE(cache, "a", 0, NULL, 0);
		settle_at(cache, T0 + 1000);
		CHECK_EQ(removed("x", LARDER_CAUSE_EXPIRED, NULL), 1);
		th_check_accounting(cache, 60000, NULL, NULL);
		larder_close(cache);
	}
}

/* The ms left on key, or 0 when it is absent. */
static uint64_t left(larder *c, const char *key)
{
	uint64_t ttl = 0;
	return larder_ttl_remaining(c, key, strlen(key), &ttl) == LARDER_OK ? ttl : 0;
}

/* Reads key with the read `how` names (0 get, 1 get_with, 2 get_batch), or
 * (3) makes larder_access's access without a read. */
static int read_as(larder *c, const char *key, int how)
{
	char buf[16];
	size_t len = 0;
	struct seen s = {0, 0, {0}};
	const void *keys[1] = {key};
	const size_t lens[1] = {strlen(key)};

	if (how == 0)
		return larder_get(c, key, strlen(key), buf, sizeof(buf), &len);
	if (how == 1)
		return larder_get_with(c, key, strlen(key), seen_fn, &s);
	if (how == 3)
		return larder_access(c, key, strlen(key));
	return larder_get_batch(c, 1, keys, lens, seen_batch_fn, &s) == 1 ? LARDER_OK
									  : LARDER_MISS;
}

/*
 * Expire after access, extended at the read (regression: the maintainer
 * used to extend at its next pass, from that pass's clock, so a read at
 * t+500 followed by the clock moving to t+700 gave t+1700, or nothing at
 * all if the deadline came first). Every value read extends at once, with
 * no maintainer pass between; contains and ttl_remaining do not extend.
 */
static void test_after_access_extends_at_read(void)
{
	for (int how = 0; how < 4; how++) {
		larder *cache = open_recorded(1000, LARDER_EXPIRE_AFTER_ACCESS, NULL, NULL);
		REQUIRE(cache != NULL);
		CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
		CHECK_RC(larder_put(cache, "peek", 4, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
		CHECK_EQ(th_quiesce(cache, 60000), 0);
		set_time(T0 + 500);
		CHECK_RC(read_as(cache, "k", how), LARDER_OK);
		CHECK_RC(larder_contains(cache, "peek", 4), LARDER_OK);
		set_time(T0 + 700);
		CHECK_EQ(left(cache, "k"), 800);
		CHECK_EQ(left(cache, "peek"), 300); /* contains, ttl_remaining: no extension */
		settle_at(cache, T0 + 700);
		CHECK_EQ(left(cache, "k"), 800);
		settle_at(cache, T0 + 1000);
		CHECK_EQ(removed("peek", LARDER_CAUSE_EXPIRED, NULL), 1);
		settle_at(cache, T0 + 1499);
		CHECK_EQ(removed("k", LARDER_CAUSE_EXPIRED, NULL), 0);
		CHECK_RC(larder_contains(cache, "k", 1), LARDER_OK);
		settle_at(cache, T0 + 1500);
		CHECK_EQ(removed("k", LARDER_CAUSE_EXPIRED, NULL), 1);
		CHECK_RC(larder_contains(cache, "k", 1), LARDER_MISS);
		th_check_accounting(cache, 60000, NULL, NULL);
		larder_close(cache);
	}
}

/* The cache's hit and miss counters, for checking that a read left them alone. */
static void hits_misses(larder *c, uint64_t *hits, uint64_t *misses)
{
	uint64_t v[LARDER_STAT_COUNT];
	REQUIRE_RC(larder_stats(c, v, LARDER_STAT_COUNT), LARDER_OK);
	*hits = v[LARDER_STAT_HITS];
	*misses = v[LARDER_STAT_MISSES];
}

/*
 * larder_peek returns what larder_get would, but extends no deadline under
 * expire-after-access and counts neither a hit nor a miss (the counters are
 * the policy's samples); its buffer contract is larder_get's.
 */
static void test_peek_no_side_effects(void)
{
	larder *cache = open_recorded(1000, LARDER_EXPIRE_AFTER_ACCESS, NULL, NULL);
	char buf[16];
	size_t len = 0;
	uint64_t hits = 0, misses = 0, hits2 = 0, misses2 = 0;

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "value", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	hits_misses(cache, &hits, &misses);
	set_time(T0 + 500);
	CHECK_RC(larder_peek(cache, "k", 1, buf, sizeof(buf), &len), LARDER_OK);
	CHECK_EQ(len, 5);
	CHECK(memcmp(buf, "value", 5) == 0);
	CHECK_RC(larder_peek(cache, "k", 1, buf, 4, &len), LARDER_EBUFSIZE);
	CHECK_EQ(len, 5);
	CHECK_RC(larder_peek(cache, "k", 1, NULL, 0, &len), LARDER_EBUFSIZE);
	CHECK_RC(larder_peek(cache, "absent", 6, buf, sizeof(buf), &len), LARDER_MISS);
	CHECK_RC(larder_peek(NULL, "k", 1, buf, sizeof(buf), &len), LARDER_EINVAL);
	CHECK_RC(larder_peek(cache, "k", 0, buf, sizeof(buf), &len), LARDER_EINVAL);
	CHECK_RC(larder_peek(cache, "k", 1, buf, sizeof(buf), NULL), LARDER_EINVAL);
	CHECK_RC(larder_peek(cache, "k", 1, NULL, 1, &len), LARDER_EINVAL);
	CHECK_EQ(left(cache, "k"), 500); /* not extended */
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	hits_misses(cache, &hits2, &misses2);
	CHECK_EQ(hits2, hits);
	CHECK_EQ(misses2, misses);
	CHECK_RC(larder_get(cache, "k", 1, buf, sizeof(buf), &len), LARDER_OK); /* the contrast */
	CHECK_EQ(left(cache, "k"), 1000);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	hits_misses(cache, &hits2, &misses2);
	CHECK_EQ(hits2, hits + 1);
	settle_at(cache, T0 + 1500);
	CHECK_EQ(removed("k", LARDER_CAUSE_EXPIRED, NULL), 1);
	CHECK_RC(larder_peek(cache, "k", 1, buf, sizeof(buf), &len), LARDER_MISS);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/*
 * larder_access moves a deadline as larder_get does and does nothing else a
 * read does but mark the entry: no copy, no hit or miss counted. Within the
 * read's slack (TTL / 64) it stores nothing, as a get; a longer explicit
 * TTL stays, an entry without one gets none; under expire-after-write it
 * moves nothing. A binding that looked (larder_ttl_remaining) and then
 * touched moved a deadline inside the slack a get leaves alone.
 */
static void test_access_moves_only_the_deadline(void)
{
	char buf[16];
	size_t len = 0;
	uint64_t hits = 0, misses = 0, hits2 = 0, misses2 = 0;

	for (int mode = 0; mode < 2; mode++) {
		enum larder_expiry ex = mode ? LARDER_EXPIRE_AFTER_ACCESS : LARDER_EXPIRE_AFTER_WRITE;
		larder *cache = open_recorded(1000, ex, NULL, NULL);
		REQUIRE(cache != NULL);
		CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
		CHECK_RC(larder_put(cache, "got", 3, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
		CHECK_RC(larder_put(cache, "long", 4, "v", 1, 5000), LARDER_OK);
		CHECK_RC(larder_put(cache, "none", 4, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
		CHECK_EQ(th_quiesce(cache, 60000), 0);
		hits_misses(cache, &hits, &misses);
		set_time(T0 + 10); /* within the slack: neither moves */
		CHECK_RC(larder_access(cache, "k", 1), LARDER_OK);
		CHECK_RC(larder_get(cache, "got", 3, buf, sizeof(buf), &len), LARDER_OK);
		CHECK_EQ(left(cache, "k"), 990);
		CHECK_EQ(left(cache, "got"), 990);
		set_time(T0 + 500);
		CHECK_RC(larder_access(cache, "k", 1), LARDER_OK);
		CHECK_RC(larder_access(cache, "long", 4), LARDER_OK);
		CHECK_RC(larder_access(cache, "none", 4), LARDER_OK);
		CHECK_EQ(left(cache, "k"), mode ? 1000 : 500);
		CHECK_EQ(left(cache, "long"), 4500); /* never shortened */
		CHECK_EQ(left(cache, "none"), LARDER_TTL_NEVER);
		CHECK_RC(larder_access(cache, "absent", 6), LARDER_MISS);
		CHECK_RC(larder_access(NULL, "k", 1), LARDER_EINVAL);
		CHECK_RC(larder_access(cache, NULL, 1), LARDER_EINVAL);
		CHECK_RC(larder_access(cache, "k", 0), LARDER_EINVAL);
		CHECK_EQ(th_quiesce(cache, 60000), 0);
		hits_misses(cache, &hits2, &misses2);
		CHECK_EQ(hits2, hits + 1); /* the get's */
		CHECK_EQ(misses2, misses);
		settle_at(cache, T0 + 1000);
		CHECK_EQ(removed("k", LARDER_CAUSE_EXPIRED, NULL), !mode);
		settle_at(cache, T0 + 1500);
		CHECK_EQ(removed("k", LARDER_CAUSE_EXPIRED, NULL), 1);
		CHECK_RC(larder_access(cache, "k", 1), LARDER_MISS);
		th_check_accounting(cache, 60000, NULL, NULL);
		larder_close(cache);
	}
}

/*
 * An entry read again and again, more often than its TTL, never expires,
 * whatever the maintainer does meanwhile (regression: with a 50 ms TTL and
 * a read every 10 ms it expired after 111-184 ms). The clock moves 10 ms
 * per read and the maintainer is woken at every step, free to expire.
 */
static void test_after_access_read_continuously(void)
{
	larder *cache = open_recorded(50, LARDER_EXPIRE_AFTER_ACCESS, NULL, NULL);
	int misses = 0;

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "hot", 3, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	for (int i = 1; i <= 300; i++) {
		set_time(T0 + 10 * (uint64_t)i);
		larder__test_wake(cache);
		misses += read_as(cache, "hot", i % 3) != LARDER_OK;
		if (i % 50 == 0)
			settle_at(cache, T0 + 10 * (uint64_t)i);
	}
	CHECK_EQ(misses, 0);
	CHECK_EQ(removed("hot", LARDER_CAUSE_EXPIRED, NULL), 0);
	settle_at(cache, T0 + 3000 + 49);
	CHECK_EQ(removed("hot", LARDER_CAUSE_EXPIRED, NULL), 0);
	settle_at(cache, T0 + 3000 + 50);
	CHECK_EQ(removed("hot", LARDER_CAUSE_EXPIRED, NULL), 1);
	larder_close(cache);
}

/*
 * A touch after a read wins, and a read after a touch extends (regression:
 * the read's extension, applied by the maintainer after the touch,
 * overrode a shorter touch; the random model found it as put ttl 37, touch
 * NEVER, get_with, touch ttl 2, clock +19, remove_if_equals: OK where MISS
 * was due).
 */
static void test_after_access_touch_after_read(void)
{
	larder *cache = open_recorded(1000, LARDER_EXPIRE_AFTER_ACCESS, NULL, NULL);
	struct seen s = {0, 0, {0}};

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, 500), LARDER_OK);
	CHECK_RC(read_as(cache, "k", 0), LARDER_OK);
	CHECK_EQ(left(cache, "k"), 1000);
	CHECK_RC(larder_touch(cache, "k", 1, 10), LARDER_OK);
	CHECK_EQ(left(cache, "k"), 10);
	settle_at(cache, T0); /* a maintainer pass after the touch changes nothing */
	CHECK_EQ(left(cache, "k"), 10);
	settle_at(cache, T0 + 300);
	CHECK_RC(larder_contains(cache, "k", 1), LARDER_MISS);
	CHECK_EQ(removed("k", LARDER_CAUSE_EXPIRED, NULL), 1);

	set_time(T0 + 1000);
	CHECK_RC(larder_put(cache, "m", 1, "v", 1, 37), LARDER_OK);
	CHECK_RC(larder_touch(cache, "m", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_get_with(cache, "m", 1, seen_fn, &s), LARDER_OK);
	CHECK_EQ(left(cache, "m"), LARDER_TTL_NEVER); /* "none" is not extended */
	CHECK_RC(larder_touch(cache, "m", 1, 2), LARDER_OK);
	settle_at(cache, T0 + 1000);
	settle_at(cache, T0 + 1019);
	CHECK_RC(larder_remove_if_equals(cache, "m", 1, "v", 1), LARDER_MISS);

	/* a read after a touch extends it */
	CHECK_RC(larder_put(cache, "n", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_touch(cache, "n", 1, 10), LARDER_OK);
	set_time(T0 + 1024);
	CHECK_RC(read_as(cache, "n", 2), LARDER_OK);
	CHECK_EQ(left(cache, "n"), 1000);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/*
 * The slack (larder.h): a read leaves a deadline alone while it is within
 * default TTL / 64 (at most 1 s) of read time + TTL. TTL 6400: slack 100.
 */
static void test_after_access_slack(void)
{
	larder *cache = open_recorded(6400, LARDER_EXPIRE_AFTER_ACCESS, NULL, NULL);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK); /* T0+6400 */
	set_time(T0 + 100);
	CHECK_RC(read_as(cache, "k", 0), LARDER_OK); /* 6400 >= 6500 - 100: unchanged */
	CHECK_EQ(left(cache, "k"), 6300);
	set_time(T0 + 101);
	CHECK_RC(read_as(cache, "k", 1), LARDER_OK); /* 6400 < 6501 - 100: moved */
	CHECK_EQ(left(cache, "k"), 6400);
	set_time(T0 + 150);
	CHECK_RC(read_as(cache, "k", 2), LARDER_OK);
	CHECK_EQ(left(cache, "k"), 6351);
	larder_close(cache);

	/* a day's TTL: the slack stops at 1 s */
	cache = open_recorded(86400000, LARDER_EXPIRE_AFTER_ACCESS, NULL, NULL);
	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	set_time(T0 + 1000);
	CHECK_RC(read_as(cache, "k", 0), LARDER_OK);
	CHECK_EQ(left(cache, "k"), 86400000 - 1000);
	set_time(T0 + 1001);
	CHECK_RC(read_as(cache, "k", 0), LARDER_OK);
	CHECK_EQ(left(cache, "k"), 86400000);
	larder_close(cache);
}

/*
 * A clock that steps back (larder.h: tolerated, not honoured). Regression,
 * found by the model tester: after the wheel had moved to T0 + 1000, a
 * step back to T0 and a put with a 100 ms TTL made the maintainer spin for
 * good (the entry, due behind the wheel's time but after the clock, was
 * delivered and scheduled again without end), so it never went idle.
 * Now the maintainer keeps time by the latest clock it saw: the entry is
 * reclaimed as EXPIRED, while reads judge by their own reading.
 */
static void test_clock_steps_back(void)
{
	/* One shard: a maintainer reads the clock only for TTL work, so over
	 * several shards the one holding "k" may never have seen T0 + 1000. */
	larder *cache = open_recorded_in(th_config_one_shard(16 * MiB), 0,
					 LARDER_EXPIRE_AFTER_WRITE, NULL, NULL);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "early", 5, "v", 1, 10), LARDER_OK);
	settle_at(cache, T0 + 1000);
	CHECK_EQ(removed("early", LARDER_CAUSE_EXPIRED, NULL), 1);
	set_time(T0);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, 100), LARDER_OK);
	CHECK_RC(larder_put(cache, "never", 5, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(cache, "far", 3, "v", 1, 5000), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0); /* it did not spin */
	/* "k" was due by the maintainer's time (T0 + 1000): reclaimed */
	CHECK_EQ(removed("k", LARDER_CAUSE_EXPIRED, NULL), 1);
	CHECK_RC(larder_contains(cache, "k", 1), LARDER_MISS);
	CHECK_RC(larder_contains(cache, "far", 3), LARDER_OK);
	uint64_t left = 0;
	CHECK_RC(larder_ttl_remaining(cache, "far", 3, &left), LARDER_OK);
	CHECK_EQ(left, 5000); /* reads judge by their own reading */
	settle_at(cache, T0 + 4999);
	CHECK_EQ(removed("far", LARDER_CAUSE_EXPIRED, NULL), 0);
	settle_at(cache, T0 + 5000);
	CHECK_EQ(removed("far", LARDER_CAUSE_EXPIRED, NULL), 1);
	CHECK_RC(larder_contains(cache, "never", 5), LARDER_OK);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

struct idle_wait {
	larder *cache;
	uint64_t want;
};

static int idle_until_is(void *p)
{
	struct idle_wait *w = p;
	return larder__test_idle_until(w->cache) == w->want;
}

static int idle_until_passed(void *p)
{
	struct idle_wait *w = p;
	return larder__test_idle_until(w->cache) > w->want;
}

/*
 * The maintainer sleeps until the wheel's next deadline, not for its whole
 * idle period (IDLE_NS, 100 ms): with an entry due 30 ms ahead it goes to
 * sleep meaning to wake at that deadline (what it sleeps for, judged
 * without timing anything), and then, with the clock moved onto the
 * deadline and nobody waking it, it does wake and expire the entry by
 * itself. (The real-clock lateness is printed, not judged: on a loaded
 * machine the scheduler decides it.)
 */
static void test_wheel_wakes_for_deadline(void)
{
	larder *cache = open_recorded(0, LARDER_EXPIRE_AFTER_WRITE, NULL, NULL);
	struct idle_wait w = { cache, T0 + 30 };
	uint64_t at = 0;

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "w", 1, "v", 1, 30), LARDER_OK);
	CHECK_RC(larder_put(cache, "later", 5, "v", 1, 5000), LARDER_OK);
	CHECK(th_wait_until(idle_until_is, &w, 60000));
	uint64_t t0 = th_now_ms();
	set_time(T0 + 30); /* no wake-up: the maintainer sleeps ~30 ms */
	CHECK(th_event_wait(&rec.expired, 60000));
	CHECK_EQ(removed("w", LARDER_CAUSE_EXPIRED, &at), 1);
	CHECK_EQ(at, T0 + 30);
	printf("  expired %" PRIu64 " ms (real) after the clock reached its deadline\n",
	       th_now_ms() - t0);
	/* Next it means to wake for "later": by its deadline at the latest
	 * (sooner, where a cascade of the wheel brings it down a level). */
	CHECK(th_wait_until(idle_until_passed, &w, 60000));
	uint64_t next = larder__test_idle_until(cache);
	CHECK(next > T0 + 30 && next <= T0 + 5000);
	larder_close(cache);
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
		TH_TEST(test_wheel_boundaries_listener),
		TH_TEST(test_wheel_reschedule),
		TH_TEST(test_wheel_cancel_on_remove),
		TH_TEST(test_expire_after_access),
		TH_TEST(test_after_access_extends_at_read),
		TH_TEST(test_peek_no_side_effects),
		TH_TEST(test_access_moves_only_the_deadline),
		TH_TEST(test_after_access_read_continuously),
		TH_TEST(test_after_access_touch_after_read),
		TH_TEST(test_after_access_slack),
		TH_TEST(test_clock_steps_back),
		TH_TEST(test_wheel_wakes_for_deadline),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
