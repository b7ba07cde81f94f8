/*
 * tests/unit/test_pool.c - pools: several caches sharing one byte budget.
 *
 * Checks the pool section of larder.h: the setters' ranges and bad input
 * (zero budget, shares over 100%, min over max, NaN), the lifecycle rules
 * (closing a pool with open caches, opening in a closed pool, a config that
 * sets both a capacity and a pool, larder_set_capacity on a pooled cache),
 * the static split and min/max shares, a closed cache's share going back to
 * the others, an open that must wait for bytes that never come back, one
 * that waits for the bytes of a cache still closing, and
 * the controller's choices on caches with known curves, driven one pass at
 * a time through the test seam (pool/pool.h) with the controller thread
 * off, so that every decision is deterministic (for POOL-M1, through the
 * controller's own windows: a probe's readings written as the probe would,
 * passes at a clock the test moves), and every allocation of a
 * pool's life failing in turn. Waiting is only for the
 * pool's thread to finish grows, polled with a deadline.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <sched.h>
#include <math.h> /* NAN, INFINITY only: the tests link no libm */
#include <stdlib.h>

#include "core/cache.h"
#include "core/hash.h"
#include "core/testing.h"
#include "harness.h"
#include "pool/pool.h"
#include "pool/probe.h"

/* Hang guards and the write waits that must not run out: longer in the
 * sanitizer builds, as ctest's timeouts are (TH_SLOW). */
#define WAIT_MS (20000u * TH_SLOW)

static larder_pool *make_pool(uint64_t budget, uint64_t interval_ms)
{
	larder_pool_config *pc = NULL;
	larder_pool *pool = NULL;
	if (!CHECK_RC(larder_pool_config_create(&pc), LARDER_OK))
		return NULL;
	if (CHECK_RC(larder_pool_config_set_budget(pc, budget), LARDER_OK) &&
	    CHECK_RC(larder_pool_config_set_interval_ms(pc, interval_ms), LARDER_OK))
		CHECK_RC(larder_pool_create(&pool, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	return pool;
}

/* A config naming the pool, with shares and a miss cost, and th_config()'s
 * write wait (a writer at the bound of a loaded machine got LARDER_EBUSY
 * after the default second); the tests of the wait set their own. And
 * th_config()'s shard count: unit_pool_shards4 runs every test with four
 * (PROBE-P9 in pool/probe.c) but those that pin one, below. */
static larder_config *pooled(larder_pool *pool, double min_share, double max_share, double cost)
{
	larder_config *cfg = NULL;
	if (!CHECK_RC(larder_config_create(&cfg), LARDER_OK))
		return NULL;
	if (!CHECK_RC(larder_config_set_pool(cfg, pool), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_write_wait_ms(cfg, TH_WRITE_WAIT_MS), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_pool_shares(cfg, min_share, max_share), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_miss_cost(cfg, cost), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_hash_seed(cfg, TH_HASH_SEED), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_shards(cfg, th_shards()), LARDER_OK)) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return cfg;
}

static larder *open_in(larder_pool *pool, double min_share, double max_share, double cost)
{
	larder_config *cfg = pooled(pool, min_share, max_share, cost);
	larder *c = NULL;
	if (cfg)
		CHECK_RC(larder_open(&c, cfg), LARDER_OK);
	larder_config_destroy(cfg);
	return c;
}

static double cache_stat(larder_pool *pool, larder *c, enum larder_pool_cache_stat s)
{
	double v[LARDER_POOL_CACHE_STAT_COUNT];
	if (!CHECK_RC(larder_pool_cache_stats(pool, c, v, LARDER_POOL_CACHE_STAT_COUNT), LARDER_OK))
		return -1;
	return v[s];
}

static uint64_t target_of(larder_pool *pool, larder *c)
{
	return (uint64_t)cache_stat(pool, c, LARDER_POOL_CACHE_TARGET_BYTES);
}

static uint64_t pool_stat(larder_pool *pool, enum larder_pool_stat s)
{
	uint64_t v[LARDER_POOL_STAT_COUNT];
	if (!CHECK_RC(larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT), LARDER_OK))
		return 0;
	return v[s];
}

/* Every cache in `caches` holds exactly its target, as larder_stats says too. */
struct settled {
	larder_pool *pool;
	larder **caches;
	unsigned n;
};

static int all_settled(void *ctx)
{
	struct settled *s = ctx;
	for (unsigned i = 0; i < s->n; i++) {
		double v[LARDER_POOL_CACHE_STAT_COUNT];
		if (larder_pool_cache_stats(s->pool, s->caches[i], v, LARDER_POOL_CACHE_STAT_COUNT) !=
			    LARDER_OK ||
		    v[LARDER_POOL_CACHE_CAPACITY_BYTES] != v[LARDER_POOL_CACHE_TARGET_BYTES] ||
		    (double)th_stat(s->caches[i], LARDER_STAT_CAPACITY_BYTES) !=
			    v[LARDER_POOL_CACHE_TARGET_BYTES])
			return 0;
	}
	return 1;
}

static int settle(larder_pool *pool, larder **caches, unsigned n)
{
	struct settled s = { pool, caches, n };
	return CHECK(th_wait_until(all_settled, &s, WAIT_MS));
}

/* ---- Bad input ------------------------------------------------------------- */

static void test_config_bad_input(void)
{
	larder_pool_config *pc = NULL;
	larder_config *cfg = NULL;

	CHECK_RC(larder_pool_config_create(NULL), LARDER_EINVAL);
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	CHECK_RC(larder_pool_config_set_budget(NULL, MiB), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, 0), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, MiB - 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, MiB), LARDER_OK);
	CHECK_RC(larder_pool_config_set_interval_ms(NULL, 10), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, 60001), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, 0), LARDER_OK);
	larder_pool_config_destroy(pc);
	larder_pool_config_destroy(NULL);

	larder_pool *pool = NULL;
	CHECK_RC(larder_pool_create(NULL, NULL), LARDER_EINVAL);
	CHECK_RC(larder_pool_create(&pool, NULL), LARDER_EINVAL);
	CHECK(pool == NULL);
	CHECK_RC(larder_pool_close(NULL), LARDER_EINVAL);

	REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
	CHECK_RC(larder_config_set_pool(NULL, NULL), LARDER_EINVAL);
	CHECK_RC(larder_config_set_pool(cfg, NULL), LARDER_OK);
	CHECK_RC(larder_config_set_pool_shares(NULL, 0, 1), LARDER_EINVAL);
	CHECK_RC(larder_config_set_pool_shares(cfg, 0, 1.5), LARDER_EINVAL);  /* over 100% */
	CHECK_RC(larder_config_set_pool_shares(cfg, 1.01, 1.01), LARDER_EINVAL);
	CHECK_RC(larder_config_set_pool_shares(cfg, 0.6, 0.4), LARDER_EINVAL); /* min > max */
	CHECK_RC(larder_config_set_pool_shares(cfg, -0.1, 0.5), LARDER_EINVAL);
	CHECK_RC(larder_config_set_pool_shares(cfg, 0, 0), LARDER_EINVAL);
	CHECK_RC(larder_config_set_pool_shares(cfg, NAN, 0.5), LARDER_EINVAL);
	CHECK_RC(larder_config_set_pool_shares(cfg, 0.1, NAN), LARDER_EINVAL);
	CHECK_RC(larder_config_set_pool_shares(cfg, 0.5, 0.5), LARDER_OK);
	CHECK_RC(larder_config_set_pool_shares(cfg, 0, 1), LARDER_OK);
	CHECK_RC(larder_config_set_miss_cost(NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_config_set_miss_cost(cfg, 0), LARDER_EINVAL);
	CHECK_RC(larder_config_set_miss_cost(cfg, -1), LARDER_EINVAL);
	CHECK_RC(larder_config_set_miss_cost(cfg, NAN), LARDER_EINVAL);
	CHECK_RC(larder_config_set_miss_cost(cfg, INFINITY), LARDER_EINVAL);
	CHECK_RC(larder_config_set_miss_cost(cfg, 1e10), LARDER_EINVAL);
	CHECK_RC(larder_config_set_miss_cost(cfg, 100), LARDER_OK);
	larder_config_destroy(cfg);

	CHECK_STR(larder_strerror(LARDER_ESTATE),
		  "wrong state: the pool is closed or still has open caches, or it owns this "
		  "cache's capacity");
	CHECK(larder_pool_stat_name(LARDER_POOL_STAT_COUNT) == NULL);
	CHECK_STR(larder_pool_stat_name(LARDER_POOL_OVERSHOOT_BOUND), "overshoot_bound");
	CHECK(larder_pool_cache_stat_name(LARDER_POOL_CACHE_STAT_COUNT) == NULL);
	CHECK_STR(larder_pool_cache_stat_name(LARDER_POOL_CACHE_MARGINAL_HITS_PER_MIB),
		  "marginal_hits_per_mib");
	for (int s = 0; s < LARDER_POOL_STAT_COUNT; s++)
		CHECK(larder_pool_stat_name((enum larder_pool_stat)s) != NULL);
	for (int s = 0; s < LARDER_POOL_CACHE_STAT_COUNT; s++)
		CHECK(larder_pool_cache_stat_name((enum larder_pool_cache_stat)s) != NULL);
}

static void test_lifecycle_rules(void)
{
	larder_pool *pool = make_pool(16 * MiB, 0);
	REQUIRE(pool);
	larder *c = open_in(pool, 0, 1, 1);
	REQUIRE(c);

	/* The pool owns a pooled cache's capacity. */
	CHECK_RC(larder_set_capacity(c, 8 * MiB), LARDER_ESTATE);
	CHECK_EQ(th_stat(c, LARDER_STAT_CAPACITY_BYTES), 16 * MiB);

	/* A config with both a capacity and a pool is refused at open. */
	larder_config *both = pooled(pool, 0, 1, 1);
	REQUIRE(both);
	REQUIRE_RC(larder_config_set_capacity(both, 4 * MiB), LARDER_OK);
	larder *c2 = (larder *)&c2; /* must come back NULL */
	CHECK_RC(larder_open(&c2, both), LARDER_EINVAL);
	CHECK(c2 == NULL);
	larder_config_destroy(both);
	CHECK_EQ(pool_stat(pool, LARDER_POOL_CACHES), 1);

	/* Closing a pool with an open cache: refused, and nothing changes. */
	CHECK_RC(larder_pool_close(pool), LARDER_ESTATE);
	CHECK_RC(larder_put(c, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_EQ(pool_stat(pool, LARDER_POOL_ASSIGNED_BYTES), 16 * MiB);

	/* Stats of a cache not in this pool, NULLs. */
	larder *plain = th_open(th_config(MiB));
	double v[LARDER_POOL_CACHE_STAT_COUNT];
	uint64_t u[LARDER_POOL_STAT_COUNT + 2];
	CHECK_RC(larder_pool_cache_stats(pool, plain, v, LARDER_POOL_CACHE_STAT_COUNT),
		 LARDER_EINVAL);
	CHECK_RC(larder_pool_cache_stats(NULL, c, v, 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_cache_stats(pool, NULL, v, 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_cache_stats(pool, c, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_stats(NULL, u, 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_stats(pool, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_stats(pool, u, LARDER_POOL_STAT_COUNT + 2), LARDER_OK);
	CHECK_EQ(u[LARDER_POOL_STAT_COUNT + 1], 0);
	CHECK_EQ(u[LARDER_POOL_BUDGET_BYTES], 16 * MiB);
	CHECK_EQ(u[LARDER_POOL_OVERSHOOT_BOUND], 16 * MiB / 100 + 4 * MiB);
	larder_close(plain);

	/* A config still naming the pool after it closed: open refused. */
	larder_config *late = pooled(pool, 0, 1, 1);
	REQUIRE(late);
	larder_close(c);
	CHECK_EQ(pool_stat(pool, LARDER_POOL_CACHES), 0);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
	larder *c3 = NULL;
	CHECK_RC(larder_open(&c3, late), LARDER_ESTATE);
	CHECK(c3 == NULL);
	larder_config_destroy(late); /* the last reference: frees the pool */
	CHECK_EQ(larder__test_mapped_bytes(), 0);
}

/* Min shares summing over 100%, or no 64 KiB left for another cache. */
static void test_open_refusals(void)
{
	larder_pool *pool = make_pool(MiB, 0);
	REQUIRE(pool);
	larder *a = open_in(pool, 0.6, 1, 1);
	REQUIRE(a);
	larder_config *cfg = pooled(pool, 0.5, 1, 1);
	larder *b = NULL;
	CHECK_RC(larder_open(&b, cfg), LARDER_EINVAL);
	CHECK(b == NULL);
	larder_config_destroy(cfg);
	larder_close(a);

	/* 16 caches of 64 KiB fill 1 MiB: the 17th cannot have its 64 KiB. */
	larder *many[16] = { 0 };
	for (unsigned i = 0; i < 16; i++)
		many[i] = open_in(pool, 0, 1, 1);
	cfg = pooled(pool, 0, 1, 1);
	CHECK_RC(larder_open(&b, cfg), LARDER_EINVAL);
	larder_config_destroy(cfg);
	settle(pool, many, 16);
	for (unsigned i = 0; i < 16; i++)
		CHECK_EQ(target_of(pool, many[i]), 64 * KiB);
	for (unsigned i = 0; i < 16; i++)
		larder_close(many[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/* ---- Static split, shares, give-back --------------------------------------- */

static void test_static_split_and_close(void)
{
	const uint64_t budget = 48 * MiB;
	larder_pool *pool = make_pool(budget, 0);
	REQUIRE(pool);
	larder *c[3] = { 0 };
	c[0] = open_in(pool, 0, 1, 1);
	REQUIRE(c[0]);
	CHECK_EQ(target_of(pool, c[0]), budget); /* alone, it has everything */
	c[1] = open_in(pool, 0, 1, 1);
	c[2] = open_in(pool, 0, 1, 1);
	REQUIRE(c[1] && c[2]);
	settle(pool, c, 3);
	for (unsigned i = 0; i < 3; i++)
		CHECK_EQ(target_of(pool, c[i]), budget / 3);
	/* A closed cache's share goes back to the others. */
	larder_close(c[1]);
	c[1] = c[2];
	settle(pool, c, 2);
	CHECK_EQ(target_of(pool, c[0]), budget / 2);
	CHECK_EQ(target_of(pool, c[1]), budget / 2);
	CHECK_EQ(pool_stat(pool, LARDER_POOL_ASSIGNED_BYTES), budget);
	larder_close(c[0]);
	larder_close(c[1]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

static void test_static_shares(void)
{
	const uint64_t budget = 40 * MiB;
	larder_pool *pool = make_pool(budget, 0);
	REQUIRE(pool);
	larder *c[3] = { 0 };
	c[0] = open_in(pool, 0, 0.25, 1); /* at most a quarter, even alone */
	REQUIRE(c[0]);
	CHECK_EQ(target_of(pool, c[0]), budget / 4);
	CHECK_EQ(pool_stat(pool, LARDER_POOL_ASSIGNED_BYTES), budget / 4);
	c[1] = open_in(pool, 0.5, 0.5, 1); /* fixed at half */
	c[2] = open_in(pool, 0, 1, 1);
	REQUIRE(c[1] && c[2]);
	settle(pool, c, 3);
	CHECK_EQ(target_of(pool, c[0]), budget / 4);
	CHECK_EQ(target_of(pool, c[1]), budget / 2);
	CHECK_EQ(target_of(pool, c[2]), budget / 4);
	larder_close(c[0]); /* the fixed one stays at half, the other takes the rest */
	c[0] = c[2];
	settle(pool, c, 2);
	CHECK_EQ(target_of(pool, c[1]), budget / 2);
	CHECK_EQ(target_of(pool, c[0]), budget / 2);
	larder_close(c[0]);
	larder_close(c[1]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/* ---- An open that waits for bytes that do not come back ------------------------ */

static struct th_event listener_go;
static _Atomic int listener_inside;

static void stuck_listener(void *ctx, const void *key, size_t key_len, const void *value,
			   size_t value_len, enum larder_cause cause)
{
	(void)ctx, (void)key, (void)key_len, (void)value, (void)value_len;
	if (cause != LARDER_CAUSE_EXPLICIT)
		return;
	atomic_store(&listener_inside, 1);
	th_event_wait(&listener_go, WAIT_MS);
}

static int listener_entered(void *ctx)
{
	(void)ctx;
	return atomic_load(&listener_inside);
}

static int put_key(larder *c, unsigned i, const void *value, size_t len)
{
	char key[16];
	int n = snprintf(key, sizeof key, "k%u", i);
	return larder_put(c, key, (size_t)n, value, len, LARDER_TTL_DEFAULT);
}

static char stuck_value[32700]; /* with header and key: a 32 KiB slot */

/*
 * The only cache of a 4 MiB pool, full up to its overshoot bound (capacity
 * 4 + 4 MiB) with its maintainer stuck in the removal listener until
 * listener_go: a second cache's first 64 KiB must come from bytes it
 * cannot give back (the pool's slack beyond the caches' own bounds is
 * budget / 100: 41 KiB). NULL on failure.
 */
static larder *open_stuck_full(larder_pool *pool)
{
	larder_config *cfg = pooled(pool, 0, 1, 1);
	if (!cfg)
		return NULL;
	/* One maintainer, stuck: of several, the others would free bytes. */
	CHECK_RC(larder_config_set_shards(cfg, 1), LARDER_OK);
	th_event_init(&listener_go);
	atomic_store(&listener_inside, 0);
	larder *a = NULL;
	if (!CHECK_RC(larder_config_set_removal_listener(cfg, stuck_listener, NULL), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_write_wait_ms(cfg, 0), LARDER_OK) ||
	    !CHECK_RC(larder_open(&a, cfg), LARDER_OK)) {
		larder_config_destroy(cfg);
		return NULL;
	}
	larder_config_destroy(cfg);
	unsigned i = 0;
	for (; i < 120; i++) /* 3.75 MiB of 32 KiB values: no eviction yet */
		CHECK_RC(put_key(a, i, stuck_value, sizeof stuck_value), LARDER_OK);
	CHECK(th_check_accounting(a, WAIT_MS, NULL, NULL));
	/* Its maintainer now sits in the listener and frees nothing... */
	CHECK_RC(larder_remove(a, "k1", 2), LARDER_OK);
	CHECK(th_wait_until(listener_entered, NULL, WAIT_MS));
	/* ...so writes run into the overshoot bound (and, not waiting, fail). */
	int rc;
	while ((rc = put_key(a, i++, stuck_value, sizeof stuck_value)) == LARDER_OK && i < 1000)
		;
	CHECK_RC(rc, LARDER_EBUSY);
	CHECK_GT(th_stat(a, LARDER_STAT_USED_BYTES), 8 * MiB - 64 * KiB);
	return a;
}

static void test_open_waits_then_busy(void)
{
	const uint64_t budget = 4 * MiB;
	larder_pool *pool = make_pool(budget, 0);
	REQUIRE(pool);
	larder *a = open_stuck_full(pool);
	REQUIRE(a);

	larder_config *cfg = pooled(pool, 0, 1, 1);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_write_wait_ms(cfg, 50), LARDER_OK);
	larder *b = (larder *)&b;
	CHECK_RC(larder_open(&b, cfg), LARDER_EBUSY);
	CHECK(b == NULL);
	CHECK_EQ(pool_stat(pool, LARDER_POOL_CACHES), 1);
	CHECK_EQ(target_of(pool, a), budget); /* the split went back as it was */

	/* Unstuck, the same open goes through and the two settle at half. */
	th_event_signal(&listener_go);
	REQUIRE_RC(larder_config_set_write_wait_ms(cfg, WAIT_MS), LARDER_OK);
	CHECK_RC(larder_open(&b, cfg), LARDER_OK);
	larder_config_destroy(cfg);
	larder *both[2] = { a, b };
	settle(pool, both, 2);
	CHECK_EQ(target_of(pool, b), budget / 2);
	CHECK(th_check_accounting(a, WAIT_MS, NULL, NULL));
	CHECK_LE(th_stat(a, LARDER_STAT_USED_BYTES), budget / 2);
	larder_close(a);
	larder_close(b);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
	th_event_destroy(&listener_go);
}

/* ---- An open that needs the bytes of a cache still closing ------------------ */

struct closing_open {
	larder_pool *pool;
	larder *closing;
	_Atomic int open_done;
};

static void *close_main(void *arg)
{
	struct closing_open *co = arg;
	larder_close(co->closing); /* waits for its maintainer, stuck in the listener */
	return NULL;
}

/* The opener has joined (the pool counts it beside the closing one), or gave up. */
static int opener_waits(void *ctx)
{
	struct closing_open *co = ctx;
	uint64_t v[LARDER_POOL_STAT_COUNT];
	return atomic_load(&co->open_done) ||
	       (larder_pool_stats(co->pool, v, LARDER_POOL_STAT_COUNT) == LARDER_OK &&
		v[LARDER_POOL_CACHES] == 2);
}

static void *unstick_main(void *arg)
{
	struct closing_open *co = arg;
	th_wait_until(opener_waits, co, WAIT_MS);
	th_event_signal(&listener_go);
	return NULL;
}

static int closing_detached(void *ctx)
{
	larder_pool *pool = ctx;
	uint64_t v[LARDER_POOL_STAT_COUNT];
	return larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT) == LARDER_OK &&
	       v[LARDER_POOL_CACHES] == 1 && v[LARDER_POOL_ASSIGNED_BYTES] == 0;
}

/*
 * A 4 MiB pool whose one cache a, full up to its overshoot bound, is being
 * closed on another thread while its maintainer is stuck in a removal
 * listener: its bytes stay counted until the close has freed them. An open
 * of b meanwhile (its first 64 KiB need those bytes) must wait for them
 * within its write wait, as it waits for an active cache's give-back, and
 * succeed once the close is done; it is released only after b has joined,
 * so an open that gives up at once (LARDER_EBUSY) fails here whatever the
 * threads' timing.
 */
static void test_open_waits_for_closing(void)
{
	const uint64_t budget = 4 * MiB;
	larder_pool *pool = make_pool(budget, 0);
	REQUIRE(pool);
	struct closing_open co = { .pool = pool, .closing = open_stuck_full(pool) };
	REQUIRE(co.closing);

	pthread_t closer, unsticker;
	REQUIRE(pthread_create(&closer, NULL, close_main, &co) == 0);
	REQUIRE(th_wait_until(closing_detached, pool, WAIT_MS));
	REQUIRE(pthread_create(&unsticker, NULL, unstick_main, &co) == 0);
	larder_config *cfg = pooled(pool, 0, 1, 1);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_write_wait_ms(cfg, 3 * WAIT_MS), LARDER_OK);
	larder *b = NULL;
	CHECK_RC(larder_open(&b, cfg), LARDER_OK);
	atomic_store(&co.open_done, 1);
	larder_config_destroy(cfg);
	pthread_join(unsticker, NULL);
	pthread_join(closer, NULL);
	if (b) {
		CHECK_EQ(pool_stat(pool, LARDER_POOL_CACHES), 1);
		CHECK_RC(put_key(b, 0, stuck_value, sizeof stuck_value), LARDER_OK);
		larder *one[1] = { b };
		settle(pool, one, 1);
		CHECK_EQ(target_of(pool, b), budget);
		larder_close(b);
	}
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
	th_event_destroy(&listener_go);
}

/*
 * POOL-K1 while a shrinking cache cannot give back: a's maintainer is stuck with
 * a full to its overshoot bound; the controller moves most of a's capacity
 * to b, but b may grow only by what the pool's bound leaves, however hard
 * it is written to; once a's maintainer runs again, b gets the rest.
 * POOL-K4: meanwhile a's capacity is cut by one slice only (a's writers
 * would wait for that slice's evictions, not for the whole move), and the
 * pool's thread cuts the rest as a pays back.
 */
static void test_bound_holds_while_donor_stuck(void)
{
	const uint64_t budget = 16 * MiB;
	static char value[32700]; /* with header and key: a 32 KiB slot */
	larder_pool *pool = make_pool(budget, 0);
	REQUIRE(pool);
	larder_config *cfg = pooled(pool, 0, 1, 1);
	REQUIRE(cfg);
	/* One maintainer, stuck: of several, the others would free bytes. */
	REQUIRE_RC(larder_config_set_shards(cfg, 1), LARDER_OK);
	th_event_init(&listener_go);
	atomic_store(&listener_inside, 0);
	REQUIRE_RC(larder_config_set_write_wait_ms(cfg, 0), LARDER_OK);
	larder *b = NULL;
	REQUIRE_RC(larder_open(&b, cfg), LARDER_OK);
	REQUIRE_RC(larder_config_set_removal_listener(cfg, stuck_listener, NULL), LARDER_OK);
	larder *a = NULL;
	REQUIRE_RC(larder_open(&a, cfg), LARDER_OK);
	larder_config_destroy(cfg);
	larder *both[2] = { a, b };
	settle(pool, both, 2);
	unsigned i = 0;
	for (; i < 240; i++) /* 7.5 MiB of a's 8 */
		CHECK_RC(put_key(a, i, value, sizeof value), LARDER_OK);
	REQUIRE(th_check_accounting(a, WAIT_MS, NULL, NULL));
	CHECK_RC(larder_remove(a, "k1", 2), LARDER_OK);
	REQUIRE(th_wait_until(listener_entered, NULL, WAIT_MS));
	while (put_key(a, i++, value, sizeof value) == LARDER_OK && i < 2000)
		; /* up to a's overshoot bound: 8 + 4 MiB */
	uint64_t a_used = th_stat(a, LARDER_STAT_USED_BYTES);
	CHECK_GT(a_used, 12 * MiB - 64 * KiB);

	double steep[LARDER__PROBE_POINTS], flat[LARDER__PROBE_POINTS];
	for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++) {
		steep[k] = 1e5 * (double)larder__test_pool_point_bytes(pool, b, k) / (double)budget;
		flat[k] = 1e3;
	}
	CHECK_EQ(larder__test_pool_set_curve(pool, a, flat, 1e5), 0);
	CHECK_EQ(larder__test_pool_set_curve(pool, b, steep, 1e5), 0);
	for (unsigned pass = 0; pass < 16; pass++)
		larder__test_pool_step(pool);
	CHECK_LT(target_of(pool, a), 2 * MiB);
	CHECK_GT(target_of(pool, b), 14 * MiB);
	/* POOL-K4: at most one slice (4 MiB here) cut from a's 8 MiB (the
	 * first pass's moves); the next cut waits for a debt its stuck
	 * maintainer cannot pay back. */
	CHECK_GE(th_stat(a, LARDER_STAT_CAPACITY_BYTES), 4 * MiB);
	CHECK_LT(th_stat(a, LARDER_STAT_CAPACITY_BYTES), 8 * MiB);
	const uint64_t limit = budget + budget / 100 + 2 * 4 * MiB;
	for (unsigned j = 0; j < 4000; j++) { /* 125 MiB of writes into b */
		(void)put_key(b, j, value, sizeof value);
		uint64_t sum = th_stat(a, LARDER_STAT_USED_BYTES) + th_stat(b, LARDER_STAT_USED_BYTES);
		if (!CHECK_LE(sum, limit))
			break;
	}
	/* b grew by the pool's slack at most: a still holds its bytes. */
	CHECK_LE(th_stat(b, LARDER_STAT_CAPACITY_BYTES), budget / 2 + budget / 100);
	CHECK_EQ(th_stat(a, LARDER_STAT_USED_BYTES), a_used);

	th_event_signal(&listener_go);
	settle(pool, both, 2); /* the pool's thread cuts the other slices */
	CHECK_GT(th_stat(b, LARDER_STAT_CAPACITY_BYTES), 14 * MiB);
	CHECK(th_check_accounting(a, WAIT_MS, NULL, NULL));
	CHECK_LE(th_stat(a, LARDER_STAT_USED_BYTES), 2 * MiB + 4 * MiB);
	larder_close(a);
	larder_close(b);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
	th_event_destroy(&listener_go);
}

/* ---- The controller's choices on known curves --------------------------------- */

enum shape { LINEAR, FLAT, CONCAVE, COLD };

/* Hits per second of a cache of `bytes` with `rate` reads/s: LINEAR, a
 * uniform working set of `ws` bytes; FLAT, half the reads hit at any size
 * (from the smallest point on); CONCAVE, rate x f / (f + 0.1), f = bytes / ws. */
static double shape_hits(enum shape s, double rate, double bytes, double ws)
{
	double f = bytes >= ws ? 1.0 : bytes / ws;
	switch (s) {
	case LINEAR:
		return rate * f;
	case FLAT:
		return rate * 0.5;
	case CONCAVE:
		return rate * f / (f + 0.1);
	case COLD:
		break;
	}
	return 0;
}

static void give_curve(larder_pool *pool, larder *c, enum shape s, double rate, double ws)
{
	double hits[LARDER__PROBE_POINTS];
	for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
		hits[k] = shape_hits(s, rate, (double)larder__test_pool_point_bytes(pool, c, k), ws);
	CHECK_EQ(larder__test_pool_set_curve(pool, c, hits, rate), 0);
}

/* Steps until a pass moves nothing (at most `passes`); returns the passes. */
static unsigned step_until_still(larder_pool *pool, unsigned passes)
{
	for (unsigned i = 0; i < passes; i++)
		if (larder__test_pool_step(pool) == 0)
			return i;
	return passes;
}

/* A pool of `budget` driven only through the seam (no thread passes) with
 * two caches at an equal split, the second's miss cost `cost`; NULL on
 * failure. */
static larder_pool *pool_of_two(uint64_t budget, double cost, larder **c)
{
	larder_pool *pool = make_pool(budget, 0);
	if (!pool)
		return NULL;
	c[0] = open_in(pool, 0, 1, 1);
	c[1] = open_in(pool, 0, 1, cost);
	if (!c[0] || !c[1] || !settle(pool, c, 2))
		return NULL;
	return pool;
}

static void test_controller_moves_to_steeper(void)
{
	const uint64_t budget = 64 * MiB;
	larder *c[2];
	larder_pool *pool = pool_of_two(budget, 1, c);
	REQUIRE(pool);
	give_curve(pool, c[0], LINEAR, 1e5, (double)budget); /* every byte buys hits */
	give_curve(pool, c[1], FLAT, 1e5, (double)budget);   /* nothing past its smallest point */
	CHECK_GT(larder__test_pool_step(pool), 0);
	CHECK_GT(target_of(pool, c[0]), budget / 2);
	CHECK_LT(target_of(pool, c[1]), budget / 2);
	unsigned passes = step_until_still(pool, 64);
	CHECK_LT(passes, 64);
	/* The flat one keeps its smallest point (below it its hull is steep). */
	uint64_t floor = larder__test_pool_point_bytes(pool, c[1], LARDER__PROBE_POINTS - 1);
	CHECK_EQ(target_of(pool, c[1]), floor);
	CHECK_EQ(target_of(pool, c[0]), budget - floor);
	CHECK_EQ(larder__test_pool_step(pool), 0); /* settled: no move back */
	settle(pool, c, 2);
	CHECK_GT(pool_stat(pool, LARDER_POOL_MOVES), 0);
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/*
 * A donor whose larger mini caches are still warming up (its warm points
 * end at half its target) may give, valued at the concave upper bound past
 * them: a shallow one gives to a steeper cache at once, a steep one
 * (its bound above the other's value) keeps its bytes; neither may take.
 */
static void test_controller_donor_not_warm(void)
{
	const uint64_t budget = 64 * MiB;
	larder *c[2];
	larder_pool *pool = pool_of_two(budget, 1, c);
	REQUIRE(pool);
	give_curve(pool, c[0], LINEAR, 1e5, (double)budget);
	give_curve(pool, c[1], LINEAR, 4e5, (double)budget); /* 4x steeper */
	CHECK_EQ(larder__test_pool_set_reach(pool, c[1], budget / 4, 0), 0);
	CHECK_EQ(larder__test_pool_step(pool), 0); /* its bound is worth more: it keeps */
	CHECK_EQ(target_of(pool, c[0]), budget / 2);
	give_curve(pool, c[1], LINEAR, 2.5e4, (double)budget); /* 4x shallower */
	CHECK_GT(larder__test_pool_step(pool), 0); /* not warm past budget / 4, it gives */
	CHECK_GT(target_of(pool, c[0]), budget / 2);
	CHECK_LT(target_of(pool, c[1]), budget / 2);
	/* c[0] not warm past its target any more: it may not take. */
	uint64_t t0 = target_of(pool, c[0]);
	CHECK_EQ(larder__test_pool_set_reach(pool, c[0], t0 / 2, 0), 0);
	CHECK_EQ(larder__test_pool_step(pool), 0);
	CHECK_EQ(target_of(pool, c[0]), t0);
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/*
 * POOL-M1 through the controller's own window: a probe's readings written
 * through the seam, a pass every 100 ms of a clock the test moves, the
 * cache's reads real misses. c[0] is fed as a probe of 1 key in EVERY over
 * a uniform working set of ws (0.7 of the budget unless a test says;
 * LINEAR: every point's mini
 * cache hits in proportion to its size, up to the working set), or as mini
 * caches fresh from a restart (COLD: LINEAR at the points warm again, the
 * others flat at the largest warm one's hits), or over a working set that every point holds (FLAT: every
 * point hits on the same requests, a share `flat` of them); c[1] is a
 * given shallow curve.
 */
#define FEED_EVERY 64u
#define FEED_SAMPLED 200u /* sampled requests a pass */
#define FEED_READS 2000u  /* c[0]'s reads a pass */
#define FEED_PASS_NS (100u * 1000u * 1000u)

struct feeder {
	larder_pool *pool;
	larder *c[2];
	uint64_t budget, now_ns, misses;
	unsigned cold_turns; /* COLD: until a point's mini cache has seen this x its entries */
	double flat;         /* FLAT: the share of the sampled requests that hit */
	double ws;           /* LINEAR, COLD: the working set's bytes */
	struct larder__test_pool_feed f;
};

/* One pass of c[0]'s probe reading `s` (LINEAR; COLD: LINEAR at the
 * points whose mini caches have seen cold_turns x their entries since the
 * restart, low and flat at the others; FLAT), its reads, and a controller
 * pass; returns the steps it moved. A cold mini cache reads as a cold LRU
 * cache on the stream its smaller ones see: it holds every key seen since
 * the restart that a warm one of the largest warm point's size would (it
 * has not evicted yet), so it hits as that one does, never less: flat above
 * the largest warm point, at 0.1 while none is warm. */
static uint64_t feed_pass(struct feeder *fd, enum shape s)
{
	double ws = fd->ws, frac[LARDER__PROBE_POINTS], warm = 0.1;
	for (unsigned i = 0; i < LARDER__PROBE_POINTS; i++) {
		unsigned k = LARDER__PROBE_POINTS - 1 - i; /* smallest first */
		double size = (double)fd->f.top_bytes * larder__probe_scale[k] / 1024;
		uint64_t entries = fd->f.top_room * larder__probe_scale[k] / 1024;
		double linear = size >= ws ? 1.0 : size / ws;
		if (s != COLD || fd->f.fresh >= fd->cold_turns * entries)
			warm = linear;
		frac[k] = s == FLAT ? fd->flat : linear < warm ? linear : warm;
	}
	for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
		fd->f.hits[k] += (uint64_t)(FEED_SAMPLED * frac[k]);
	fd->f.fresh += FEED_SAMPLED;
	fd->f.sampled += FEED_SAMPLED;
	CHECK_EQ(larder__test_pool_feed(fd->pool, fd->c[0], &fd->f), 0);
	char key[32];
	for (unsigned i = 0; i < FEED_READS; i++) {
		size_t len = (size_t)snprintf(key, sizeof key, "absent-%llu",
					      (unsigned long long)fd->misses++);
		size_t got = 0;
		CHECK_RC(larder_get(fd->c[0], key, len, NULL, 0, &got), LARDER_MISS);
	}
	fd->now_ns += FEED_PASS_NS;
	return larder__test_pool_step_at(fd->pool, fd->now_ns);
}

/* The mini caches restart: a new generation, nothing seen since. */
static void feed_restart(struct feeder *fd)
{
	fd->f.generation++;
	fd->f.fresh = 0;
}

/* The mini caches restart on another grid: top bytes at the largest point
 * (1 KiB entries). */
static void feed_regrid(struct feeder *fd, uint64_t top)
{
	feed_restart(fd);
	fd->f.top_bytes = top;
	fd->f.top_room = top / FEED_EVERY / KiB;
}

/* Two caches of a 64 MiB pool, c[0] to be fed (1 KiB entries, its top the
 * budget: its largest point holds 1,024), c[1] a shallow curve; false on
 * failure. */
static int feeder_open(struct feeder *fd)
{
	fd->budget = 64 * MiB;
	fd->pool = pool_of_two(fd->budget, 1, fd->c);
	if (!fd->pool)
		return 0;
	fd->now_ns = 1000u * 1000u * 1000u; /* the test's clock: only step_at reads it */
	fd->misses = 0;
	fd->cold_turns = 4;
	fd->ws = 0.7 * (double)fd->budget;
	fd->f = (struct larder__test_pool_feed){
		.generation = 1000, /* past any generation the real probe published */
		.sample_every = FEED_EVERY,
		.top_bytes = fd->budget,
		.top_room = fd->budget / FEED_EVERY / KiB,
	};
	/* The first pass starts c[0]'s window: it has no reads before it (and
	 * would give: may_give in pool/pool.c), so c[1] may not take yet. */
	CHECK_EQ(feed_pass(fd, LINEAR), 0);
	give_curve(fd->pool, fd->c[1], LINEAR, 1e4, (double)fd->budget);
	return 1;
}

/* feeder_open, then c[0] fed LINEAR until it has taken its working set
 * (its largest point matures after 8 x 1,024 sampled requests: 41
 * passes); false on failure. */
static int feeder_start(struct feeder *fd)
{
	if (!feeder_open(fd))
		return 0;
	for (unsigned i = 0; i < 80; i++)
		feed_pass(fd, LINEAR);
	return CHECK_GT(target_of(fd->pool, fd->c[0]), fd->budget * 6 / 10);
}

static void feeder_stop(struct feeder *fd)
{
	settle(fd->pool, fd->c, 2);
	for (unsigned i = 0; i < 2; i++)
		larder_close(fd->c[i]);
	CHECK_RC(larder_pool_close(fd->pool), LARDER_OK);
}

/*
 * POOL-M1, point by point. A fresh probe takes nothing before the point
 * above its target counts (2 x its entries seen), though its readings are
 * steep from the first pass. Holding its working set (its points mature:
 * 8 x their entries seen), its mini caches restart and read low and flat
 * at every point until it has seen 4 x its entries (COLD): the new points
 * do not count before they are as mature as the kept ones of the
 * generation before, which stand in for them, and it gives nothing,
 * neither while they mature nor after (counting them from 2 x, as the
 * rule before did, gives the working set's last segment away: checked by
 * making the code do so).
 */
static void test_controller_point_maturity(void)
{
	struct feeder fd;
	REQUIRE(feeder_open(&fd));
	/* The point above half the budget (40 MiB, 645 entries) counts from
	 * 1,290 sampled requests: the sixth pass after the first. */
	for (unsigned i = 0; i < 5; i++)
		CHECK_EQ(feed_pass(&fd, LINEAR), 0);
	CHECK_EQ(target_of(fd.pool, fd.c[0]), fd.budget / 2);
	for (unsigned i = 0; i < 75; i++)
		feed_pass(&fd, LINEAR);
	uint64_t t0 = target_of(fd.pool, fd.c[0]);
	CHECK_GT(t0, fd.budget * 6 / 10);
	feed_restart(&fd);
	/* Every point mature after 41 passes. */
	for (unsigned i = 0; i < 60; i++)
		CHECK_EQ(feed_pass(&fd, COLD), 0);
	CHECK_EQ(target_of(fd.pool, fd.c[0]), t0);
	feeder_stop(&fd);
}

/*
 * POOL-M1: a restart cancels the warm-up of the points it resets. The mini
 * caches restart, mature for 25 passes (up to 32 MiB), and restart again:
 * the second generation's points start maturing anew (they read cold until
 * they have seen 8 x their entries in it, not counting the first's), and
 * the cache gives nothing through either.
 */
static void test_controller_segments_cancel_warmup(void)
{
	struct feeder fd;
	REQUIRE(feeder_start(&fd));
	uint64_t t0 = target_of(fd.pool, fd.c[0]);
	feed_restart(&fd);
	for (unsigned i = 0; i < 25; i++)
		CHECK_EQ(feed_pass(&fd, COLD), 0);
	feed_restart(&fd);
	for (unsigned i = 0; i < 60; i++)
		CHECK_EQ(feed_pass(&fd, COLD), 0);
	CHECK_EQ(target_of(fd.pool, fd.c[0]), t0);
	feeder_stop(&fd);
}

/*
 * POOL-M1: a point's window leaves its mini cache's fill out. A fresh probe
 * reads cold at each point until its mini cache has seen its entries once,
 * then as the cache is, 4/3 as steep as c[1]: it takes as soon as the
 * point above its target counts (2 x its entries seen: the sixth pass),
 * where a window from the restart, half of it the fill's flat reading,
 * would read it as shallower than c[1].
 */
static void test_controller_point_window_skips_fill(void)
{
	struct feeder fd;
	REQUIRE(feeder_open(&fd));
	fd.cold_turns = 1;
	double rate = 0.75 * FEED_SAMPLED * FEED_EVERY * 10.0 / 0.7;
	give_curve(fd.pool, fd.c[1], LINEAR, rate, (double)fd.budget);
	uint64_t moved = 0;
	for (unsigned i = 0; i < 6; i++)
		moved += feed_pass(&fd, COLD);
	CHECK_GT(moved, 0);
	CHECK_GT(target_of(fd.pool, fd.c[0]), fd.budget / 2);
	feeder_stop(&fd);
}

/*
 * POOL-M1: the mature points of a generation are kept over a restart. c[0]
 * matures on a steep reading while c[1] is as steep (so neither moves);
 * its mini caches restart, and c[1] turns flat: c[0]
 * takes at once on its kept points, where it would otherwise wait for
 * the new generation's point above its target to mature (26 passes).
 */
static void test_controller_keeps_mature_points(void)
{
	struct feeder fd;
	REQUIRE(feeder_open(&fd));
	/* c[0]'s slope: FEED_SAMPLED x FEED_EVERY hits a pass at its working
	 * set (0.7 of the budget), passes of 0.1 s. */
	double rate = FEED_SAMPLED * FEED_EVERY * 10.0 / 0.7;
	give_curve(fd.pool, fd.c[1], LINEAR, rate, (double)fd.budget);
	for (unsigned i = 0; i < 60; i++)
		CHECK_EQ(feed_pass(&fd, LINEAR), 0);
	CHECK_EQ(target_of(fd.pool, fd.c[0]), fd.budget / 2);
	feed_restart(&fd);
	give_curve(fd.pool, fd.c[1], FLAT, 1e4, (double)fd.budget);
	uint64_t moved = 0;
	for (unsigned i = 0; i < 3; i++)
		moved += feed_pass(&fd, COLD);
	CHECK_GT(moved, 0);
	CHECK_GT(target_of(fd.pool, fd.c[0]), fd.budget / 2);
	feeder_stop(&fd);
}

/*
 * POOL-M1: the points' windows start at different passes (each once its
 * mini cache has seen its entries), yet a working set that every point
 * holds reads flat. c[0] is fed FLAT (every point hits on the same
 * requests) while its hit ratio rises pass by pass, the same at every
 * point (a stream growing hotter), and c[1] is flat too: c[0]'s marginal
 * value is 0 at every pass, and nothing moves. Points valued each on its
 * own window read the later-starting, larger ones higher (their windows
 * hold only the hotter passes): a positive marginal value for a cache
 * that needs no memory (checked by making the code do so).
 */
static void test_controller_fitting_reads_flat(void)
{
	struct feeder fd;
	REQUIRE(feeder_open(&fd));
	give_curve(fd.pool, fd.c[1], FLAT, 1e4, (double)fd.budget);
	uint64_t t0 = target_of(fd.pool, fd.c[0]);
	double worst = 0;
	for (unsigned i = 0; i < 60; i++) {
		fd.flat = 0.2 + 0.01 * i;
		CHECK_EQ(feed_pass(&fd, FLAT), 0);
		double v = cache_stat(fd.pool, fd.c[0], LARDER_POOL_CACHE_MARGINAL_HITS_PER_MIB);
		worst = v > worst ? v : worst;
	}
	printf("  largest marginal hits/s per MiB of the cache that fits: %g\n", worst);
	CHECK(worst == 0);
	CHECK_EQ(target_of(fd.pool, fd.c[0]), t0);
	feeder_stop(&fd);
}

/*
 * POOL-M1: a kept segment that straddles the largest point that counts
 * adds nothing above it. c[0]'s working set (30 MiB) fits its target
 * (32 MiB); its points mature on one grid (top 0.9 of the budget: its
 * segment from 28.8 to 36.3 MiB holds the working set's cliff, and c[1] is
 * as steep as that segment, so that neither moves), then its mini caches
 * restart on another (top the budget: points at 25.4 and 32 MiB). Once
 * the new point at 32 MiB counts, the kept one at 36.3 stands in above it:
 * its segment's part above 32 MiB is not known, and read as even within
 * itself it would put part of the cliff below 32 MiB above it, a positive
 * marginal value for a cache that needs no memory (checked by making the
 * code do so). From then on c[0]'s marginal value is 0 at every pass.
 */
static void test_controller_kept_straddle_flat(void)
{
	struct feeder fd;
	REQUIRE(feeder_open(&fd));
	fd.ws = 30.0 * MiB;
	uint64_t top = fd.budget / 10 * 9;
	feed_regrid(&fd, top);
	/* c[0]'s segment from 28.8 to 36.3 MiB, in hits per second per byte,
	 * as feed_pass makes it (only the point below the cliff misses). */
	double lo = (double)top * larder__probe_scale[3] / 1024;
	double hi = (double)top * larder__probe_scale[2] / 1024;
	double missed = FEED_SAMPLED - (double)(uint64_t)(FEED_SAMPLED * (lo / fd.ws));
	double slope = missed * FEED_EVERY * 1e9 / FEED_PASS_NS / (hi - lo);
	give_curve(fd.pool, fd.c[1], LINEAR, slope * (double)fd.budget, (double)fd.budget);
	uint64_t t0 = target_of(fd.pool, fd.c[0]);
	for (unsigned i = 0; i < 80; i++)
		CHECK_EQ(feed_pass(&fd, LINEAR), 0);
	feed_regrid(&fd, fd.budget);
	double worst = 0;
	for (unsigned i = 0; i < 60; i++) {
		CHECK_EQ(feed_pass(&fd, COLD), 0);
		double v = cache_stat(fd.pool, fd.c[0], LARDER_POOL_CACHE_MARGINAL_HITS_PER_MIB);
		/* The new point at 32 MiB counts after 21 passes (8 x its 512
		 * entries seen: the kept one's level). */
		if (i >= 21)
			worst = v > worst ? v : worst;
	}
	printf("  largest marginal hits/s per MiB past the new points: %g\n", worst);
	CHECK(worst == 0);
	CHECK_EQ(target_of(fd.pool, fd.c[0]), t0);
	feeder_stop(&fd);
}

/* POOL-S1: a wide gap closes in fewer passes than single steps would take,
 * monotonically, and ends where single steps end. */
static void test_controller_stride(void)
{
	const uint64_t budget = 64 * MiB, step = budget / 256;
	larder *c[2];
	larder_pool *pool = pool_of_two(budget, 1, c);
	REQUIRE(pool);
	give_curve(pool, c[0], LINEAR, 1e5, (double)budget);
	give_curve(pool, c[1], FLAT, 1e5, (double)budget);
	uint64_t floor = larder__test_pool_point_bytes(pool, c[1], LARDER__PROBE_POINTS - 1);
	uint64_t gap = target_of(pool, c[1]) - floor;
	unsigned single = (unsigned)((gap / step + 15) / 16); /* 16 single steps a pass */
	unsigned passes = 0;
	uint64_t last = target_of(pool, c[0]);
	while (passes < 64 && larder__test_pool_step(pool) > 0) {
		passes++;
		CHECK_GE(target_of(pool, c[0]), last); /* never back */
		last = target_of(pool, c[0]);
	}
	CHECK_GT(single, 4);
	CHECK_LT(passes, single);
	CHECK_EQ(target_of(pool, c[1]), floor);
	CHECK_EQ(target_of(pool, c[0]), budget - floor);
	CHECK_EQ(larder__test_pool_step(pool), 0);
	settle(pool, c, 2);
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/*
 * POOL-S1: strides toward a cliff (a working set that ends between two
 * points: its hull has a corner there) stop at it. A stride across the
 * corner passes on its secant, which averages the steep part with the flat
 * part after the corner; its last steps would then be worth nothing and
 * come back one by one (reversals, within the pass or at the next). So
 * every move goes one way, and the end is within a step past the corner,
 * where the same curves move nothing back.
 */
static void test_controller_stride_stops_at_cliff(void)
{
	const uint64_t budget = 64 * MiB, step = budget / 256;
	larder_pool *pool = make_pool(budget, 0);
	REQUIRE(pool);
	/* c[0]'s points are 0.9 x 2^(-k/3) of the budget (its max share): its
	 * working set ends at 0.7 of the budget, between its points at 0.567
	 * and 0.715 of it, and 1.1 steps past that corner is where strides of
	 * 4 from the equal split would land. c[1] is 10x shallower. */
	larder *c[2] = { open_in(pool, 0, 0.9, 1), open_in(pool, 0, 1, 1) };
	REQUIRE(c[0] && c[1]);
	settle(pool, c, 2);
	give_curve(pool, c[0], LINEAR, 1e5, 0.7 * (double)budget);
	give_curve(pool, c[1], LINEAR, 1e4, (double)budget);
	uint64_t corner = larder__test_pool_point_bytes(pool, c[0], 1);
	CHECK_GT(corner, (uint64_t)(0.7 * (double)budget));
	uint64_t first = target_of(pool, c[0]), last = first;
	uint64_t moved = pool_stat(pool, LARDER_POOL_MOVED_BYTES);
	unsigned passes = 0;
	while (passes < 64 && larder__test_pool_step(pool) > 0) {
		passes++;
		CHECK_GE(target_of(pool, c[0]), last); /* never back */
		last = target_of(pool, c[0]);
	}
	CHECK_LT(passes, 64);
	CHECK_GE(target_of(pool, c[0]), corner);
	CHECK_LT(target_of(pool, c[0]), corner + step);
	/* No step went back within a pass either: every byte moved is c[0]'s
	 * net gain. */
	CHECK_EQ(pool_stat(pool, LARDER_POOL_MOVED_BYTES) - moved, target_of(pool, c[0]) - first);
	for (unsigned i = 0; i < 5; i++)
		CHECK_EQ(larder__test_pool_step(pool), 0);
	settle(pool, c, 2);
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/*
 * POOL-D1: a cache whose target has not moved for a while (and whose load
 * shows no change: these have no reads) is steady, and its probe may run
 * at the low rate; a move makes both ends of it unsteady at once, and they
 * are steady again only after the moves have stopped for a while.
 */
static void test_controller_steady(void)
{
	const uint64_t budget = 64 * MiB;
	larder *c[2];
	larder_pool *pool = pool_of_two(budget, 1, c);
	REQUIRE(pool);
	for (unsigned i = 0; i < 2; i++)
		give_curve(pool, c[i], LINEAR, 1e5, (double)budget);
	CHECK_EQ(larder__test_pool_step(pool), 0);
	CHECK_EQ(larder__test_pool_steady(pool, c[0]), 0); /* not after one pass */
	unsigned calm = 0;
	while (calm < 256 && larder__test_pool_steady(pool, c[0]) != 1) {
		CHECK_EQ(larder__test_pool_step(pool), 0);
		calm++;
	}
	CHECK_GT(calm, 1);
	CHECK_LT(calm, 256);
	CHECK_EQ(larder__test_pool_steady(pool, c[1]), 1);
	give_curve(pool, c[1], LINEAR, 4e5, (double)budget); /* now c[1] gains more */
	CHECK_GT(larder__test_pool_step(pool), 0);
	CHECK_EQ(larder__test_pool_steady(pool, c[0]), 0);
	CHECK_EQ(larder__test_pool_steady(pool, c[1]), 0);
	unsigned moving = step_until_still(pool, 64);
	CHECK_LT(moving, 64);
	for (unsigned i = 0; i + 1 < calm; i++) { /* not before as many still passes */
		CHECK_EQ(larder__test_pool_step(pool), 0);
		CHECK_EQ(larder__test_pool_steady(pool, c[1]), 0);
	}
	CHECK_EQ(larder__test_pool_step(pool), 0);
	CHECK_EQ(larder__test_pool_steady(pool, c[0]), 1);
	CHECK_EQ(larder__test_pool_steady(pool, c[1]), 1);
	settle(pool, c, 2);
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

static void test_controller_still_when_flat(void)
{
	const uint64_t budget = 64 * MiB;
	larder_pool *pool = make_pool(budget, 0);
	REQUIRE(pool);
	larder *c[3] = { open_in(pool, 0, 1, 1), open_in(pool, 0, 1, 1), open_in(pool, 0, 1, 1) };
	REQUIRE(c[0] && c[1] && c[2]);
	settle(pool, c, 3);
	for (unsigned i = 0; i < 3; i++)
		give_curve(pool, c[i], FLAT, 1e5 * (i + 1), (double)budget);
	CHECK_EQ(larder__test_pool_step(pool), 0);
	/* Equal linear curves: every byte is worth the same anywhere. */
	for (unsigned i = 0; i < 3; i++)
		give_curve(pool, c[i], LINEAR, 1e5, (double)budget);
	CHECK_EQ(larder__test_pool_step(pool), 0);
	uint64_t sum = 0;
	for (unsigned i = 0; i < 3; i++) { /* a third each; the remainder's bytes to some */
		CHECK_GE(target_of(pool, c[i]), budget / 3);
		CHECK_LE(target_of(pool, c[i]), budget / 3 + 1);
		sum += target_of(pool, c[i]);
	}
	CHECK_EQ(sum, budget);
	for (unsigned i = 0; i < 3; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/* The miss cost tips equal curves; concave curves settle where the weighted
 * slopes meet, and stay there. */
static void test_controller_weights_and_settles(void)
{
	const uint64_t budget = 64 * MiB;
	larder *c[2];
	larder_pool *pool = pool_of_two(budget, 4, c);
	REQUIRE(pool);
	for (unsigned i = 0; i < 2; i++)
		give_curve(pool, c[i], CONCAVE, 1e5, (double)budget);
	unsigned passes = step_until_still(pool, 64);
	CHECK_LT(passes, 64);
	/* Weighted slopes level out: the slope is 0.1 / (f + 0.1)^2, so cost 4
	 * wants f1 + 0.1 = 2 (f0 + 0.1): f0 = 0.3, f1 = 0.7 of the budget; the
	 * grid of points and the hysteresis blur it. */
	uint64_t t0 = target_of(pool, c[0]), t1 = target_of(pool, c[1]);
	CHECK_EQ(t0 + t1, budget);
	CHECK_GT(2 * t1, 3 * t0);
	CHECK_LT(t1, 4 * t0);
	for (unsigned i = 0; i < 5; i++)
		CHECK_EQ(larder__test_pool_step(pool), 0);
	CHECK_EQ(target_of(pool, c[0]), t0);
	settle(pool, c, 2);
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

static void test_controller_respects_shares(void)
{
	const uint64_t budget = 64 * MiB;
	larder_pool *pool = make_pool(budget, 0);
	REQUIRE(pool);
	larder *c[3] = { open_in(pool, 0, 0.5, 1), open_in(pool, 0.3, 1, 1),
			 open_in(pool, 0, 1, 1) };
	REQUIRE(c[0] && c[1] && c[2]);
	settle(pool, c, 3);
	give_curve(pool, c[0], LINEAR, 1e6, (double)budget); /* wants everything */
	give_curve(pool, c[1], FLAT, 1e3, (double)budget);   /* worth nothing, min 30% */
	give_curve(pool, c[2], FLAT, 1e3, (double)budget);
	CHECK_LT(step_until_still(pool, 64), 64);
	CHECK_EQ(target_of(pool, c[0]), budget / 2);          /* its max */
	CHECK_GE(target_of(pool, c[1]), (uint64_t)(0.3 * (double)budget)); /* its min */
	uint64_t sum = 0;
	for (unsigned i = 0; i < 3; i++)
		sum += target_of(pool, c[i]);
	CHECK_EQ(sum, budget);
	settle(pool, c, 3);
	/* Closing the capped one: its share goes to the others. */
	larder_close(c[0]);
	c[0] = c[2];
	larder__test_pool_step(pool);
	CHECK_EQ(target_of(pool, c[0]) + target_of(pool, c[1]), budget);
	CHECK_GE(target_of(pool, c[1]), (uint64_t)(0.3 * (double)budget));
	settle(pool, c, 2);
	larder_close(c[0]);
	larder_close(c[1]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/* The probe's own estimate: a cache driven with a uniform working set twice
 * its size has a clearly positive marginal value; one whose working set fits
 * has about none. Driven by the controller thread (interval 20 ms): waits on
 * the estimate with a deadline. */
struct estimate_wait {
	larder_pool *pool;
	larder *c;
};

static int estimate_ready(void *ctx)
{
	struct estimate_wait *w = ctx;
	double v[LARDER_POOL_CACHE_STAT_COUNT];
	return larder_pool_cache_stats(w->pool, w->c, v, LARDER_POOL_CACHE_STAT_COUNT) ==
		       LARDER_OK &&
	       v[LARDER_POOL_CACHE_REQUESTS_PER_S] > 0 && v[LARDER_POOL_CACHE_SAMPLE_EVERY] > 0;
}

static void drive(larder *c, uint64_t keys, uint64_t requests, uint64_t seed)
{
	struct th_rng rng = { seed };
	char value[200] = { 0 };
	for (uint64_t i = 0; i < requests; i++) {
		uint64_t k = th_rng_below(&rng, keys);
		char buf[256];
		size_t len;
		if (larder_get(c, &k, sizeof k, buf, sizeof buf, &len) == LARDER_MISS)
			CHECK_RC(larder_put(c, &k, sizeof k, value, sizeof value, LARDER_TTL_DEFAULT),
				 LARDER_OK);
	}
}

/* Fresh requests inside the window for both caches, a pass, and the
 * marginal values; ready once the over-full cache's is positive (its
 * mini caches restart when the sample's rate is cut, PROBE-P7 in
 * pool/probe.c, and read nothing above its size until warm again). */
struct marginals {
	larder_pool *pool;
	larder **c;
	uint64_t seed;
	double m[2];
};

static int marginal_known(void *ctx)
{
	struct marginals *w = ctx;
	drive(w->c[0], 35000, 200000, w->seed++);
	drive(w->c[1], 8000, 200000, w->seed++);
	larder__test_pool_step(w->pool);
	for (unsigned i = 0; i < 2; i++)
		w->m[i] = cache_stat(w->pool, w->c[i], LARDER_POOL_CACHE_MARGINAL_HITS_PER_MIB);
	return w->m[0] > 0;
}

static void test_probe_estimates(void)
{
	const uint64_t budget = 8 * MiB;
	larder_pool *pool = make_pool(budget, 20);
	REQUIRE(pool);
	/* Min shares of a half each: the controller cannot move them while we
	 * look (and a fixed size, min = max, would have no estimates). */
	larder *c[2] = { open_in(pool, 0.5, 1, 1), open_in(pool, 0.5, 1, 1) };
	REQUIRE(c[0] && c[1]);
	settle(pool, c, 2);
	/* 240-byte slots: 4 MiB holds ~17,000; c[0] sees 35,000 keys, c[1] 8,000. */
	drive(c[0], 35000, 400000, 1);
	drive(c[1], 8000, 400000, 2);
	struct estimate_wait w0 = { pool, c[0] }, w1 = { pool, c[1] };
	CHECK(th_wait_until(estimate_ready, &w0, WAIT_MS));
	CHECK(th_wait_until(estimate_ready, &w1, WAIT_MS));
	struct marginals w = { pool, c, 3, { 0, 0 } };
	CHECK(th_wait_until(marginal_known, &w, WAIT_MS));
	double m0 = w.m[0], m1 = w.m[1];
	double r0 = cache_stat(pool, c[0], LARDER_POOL_CACHE_REQUESTS_PER_S);
	printf("  marginal hits/s per MiB: over-full %.0f (of %.0f reads/s), fits %.0f\n", m0,
	       r0, m1);
	CHECK(m0 > 10 * m1);
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/* drive(), its hit samples all delivered: a thread's hit ring (1,024)
 * drops the oldest when its maintainer lags, and a cache of one shard has
 * one ring where four shards have four, each with a quarter of the hits,
 * so the two would lose different shares of their hits (measured: the
 * one-shard cache's estimate read half the four-shard one's). */
static void drive_drained(larder *c, uint64_t keys, uint64_t requests, uint64_t seed)
{
	for (uint64_t done = 0; done < requests; done += 256) {
		drive(c, keys, 256, seed * 1000003u + done);
		CHECK_EQ(larder__test_quiesce(c, WAIT_MS), 0);
	}
}

/* Both caches driven alike (the over-full working set); ready once both
 * marginal values are positive. */
static int marginals_alike(void *ctx)
{
	struct marginals *w = ctx;
	for (unsigned i = 0; i < 2; i++)
		drive_drained(w->c[i], 35000, 100000, w->seed++);
	larder__test_pool_step(w->pool);
	for (unsigned i = 0; i < 2; i++)
		w->m[i] = cache_stat(w->pool, w->c[i], LARDER_POOL_CACHE_MARGINAL_HITS_PER_MIB) /
			  cache_stat(w->pool, w->c[i], LARDER_POOL_CACHE_REQUESTS_PER_S);
	return w->m[0] > 0 && w->m[1] > 0;
}

/*
 * PROBE-P9: a cache of four shards, whose probe sees shard 0 alone (a
 * sample of 1 in 4 of its keys, S the cache's), estimates what a cache of
 * one shard does on the same stream: the over-full uniform working set of
 * test_probe_estimates in both, their marginal hits per MiB per read
 * within a factor of 2 of each other (SHARDS' scaling off by the shard
 * count would put them 4 times apart: checked by publishing the tuner's S
 * instead of the cache's, which reads 0.25).
 */
static void test_probe_estimates_shards(void)
{
	const uint64_t budget = 8 * MiB;
	larder_pool *pool = make_pool(budget, 20);
	REQUIRE(pool);
	larder *c[2] = { open_in(pool, 0.5, 1, 1), NULL };
	larder_config *cfg = pooled(pool, 0.5, 1, 1);
	REQUIRE(cfg);
	CHECK_RC(larder_config_set_shards(cfg, 4), LARDER_OK);
	CHECK_RC(larder_open(&c[1], cfg), LARDER_OK);
	larder_config_destroy(cfg);
	REQUIRE(c[0] && c[1]);
	settle(pool, c, 2);
	for (unsigned i = 0; i < 2; i++)
		drive_drained(c[i], 35000, 200000, i + 1);
	struct estimate_wait w0 = { pool, c[0] }, w1 = { pool, c[1] };
	CHECK(th_wait_until(estimate_ready, &w0, WAIT_MS));
	CHECK(th_wait_until(estimate_ready, &w1, WAIT_MS));
	struct marginals w = { pool, c, 3, { 0, 0 } };
	CHECK(th_wait_until(marginals_alike, &w, WAIT_MS));
	double ratio = w.m[1] / w.m[0];
	printf("  marginal hits/s per MiB per read/s: one shard %.4f, four %.4f (%.2fx); S %.0f, %.0f\n",
	       w.m[0], w.m[1], ratio, cache_stat(pool, c[0], LARDER_POOL_CACHE_SAMPLE_EVERY),
	       cache_stat(pool, c[1], LARDER_POOL_CACHE_SAMPLE_EVERY));
	CHECK(ratio > 0.5 && ratio < 2.0);
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/*
 * PROBE-P8: asked for the low rate, a probe whose mini caches are warm runs
 * one block of the sampled requests in LARDER__PROBE_DUTY through them
 * (the others only counted), and its estimate
 * stays; asked for the full rate, all of them. Counted between two
 * readings at least DUTY_SEEN sampled requests apart (the sample's rate is
 * capped: a few seconds of driving); a stretch in which the mini caches
 * restarted (the rate cut, PROBE-P7) runs in full and does not count, so
 * the reading is retried with fresh requests up to a deadline.
 */
#define DUTY_CHUNK 100000u
#define DUTY_SEEN 4096u
/* Through the mini caches, more or fewer than one in LARDER__PROBE_DUTY:
 * a block cut at either end (128 sampled requests, PROBE-P8) and a batch
 * not yet published (32, PROBE-P7). */
#define DUTY_SLACK 160u
/* A reading takes DUTY_SEEN sampled requests (several seconds at the capped
 * rate, much longer under ThreadSanitizer on a loaded machine), and one
 * spoiled by a restart is retried: a deadline that leaves room for a few
 * (20 s left one under two ThreadSanitizer runs at load 20). */
#define DUTY_WAIT_MS (4 * WAIT_MS)

struct duty_wait {
	larder_pool *pool;
	larder **c;
	int mode;
	uint64_t seed, seen, through;
};

static void duty_counts(struct duty_wait *w, uint64_t *seen, uint64_t *through)
{
	CHECK_EQ(larder__test_pool_force_steady(w->pool, w->c[0], w->mode, seen, through), 0);
}

static int duty_through(void *ctx)
{
	struct duty_wait *w = ctx;
	uint64_t s0, t0;
	duty_counts(w, &s0, &t0);
	do {
		drive(w->c[0], 35000, DUTY_CHUNK, w->seed++);
		duty_counts(w, &w->seen, &w->through);
	} while (w->seen - s0 < DUTY_SEEN);
	w->seen -= s0;
	w->through -= t0;
	const uint64_t duty = LARDER__PROBE_DUTY;
	return duty * w->through <= w->seen + duty * DUTY_SLACK &&
	       duty * w->through + duty * DUTY_SLACK >= w->seen;
}

/* Asked for the full rate: a stretch of DUTY_SEEN sampled requests all went
 * through. A batch classified before the request, published inside the
 * stretch when the maintainer lags, spoils one stretch: the next is tried
 * (at the low rate none could pass: one in DUTY would go through). */
static int all_through(void *ctx)
{
	struct duty_wait *w = ctx;
	uint64_t s0, t0;
	duty_counts(w, &s0, &t0);
	do {
		drive(w->c[0], 35000, DUTY_CHUNK, w->seed++);
		duty_counts(w, &w->seen, &w->through);
	} while (w->seen - s0 < DUTY_SEEN);
	w->seen -= s0;
	w->through -= t0;
	return w->through == w->seen;
}

static void test_probe_steady_rate(void)
{
	const uint64_t budget = 8 * MiB;
	larder_pool *pool = make_pool(budget, 20);
	REQUIRE(pool);
	larder *c[2] = { open_in(pool, 0.5, 1, 1), open_in(pool, 0.5, 1, 1) };
	REQUIRE(c[0] && c[1]);
	settle(pool, c, 2);
	struct duty_wait w = { pool, c, 1, 10, 0, 0 };
	CHECK(th_wait_until(duty_through, &w, DUTY_WAIT_MS));
	printf("  steady: %llu of %llu sampled requests through the mini caches\n",
	       (unsigned long long)w.through, (unsigned long long)w.seen);
	struct marginals m = { pool, c, 20, { 0, 0 } };
	CHECK(th_wait_until(marginal_known, &m, WAIT_MS)); /* the estimate stays */
	printf("  marginal hits/s per MiB: over-full %.0f, fits %.0f\n", m.m[0], m.m[1]);
	CHECK(m.m[0] > 10 * m.m[1]);
	/* The full rate: every sampled request of a stretch goes through. */
	w.mode = 2;
	CHECK(th_wait_until(all_through, &w, DUTY_WAIT_MS));
	printf("  full: %llu of %llu sampled requests through the mini caches\n",
	       (unsigned long long)w.through, (unsigned long long)w.seen);
	uint64_t s0, t0;
	w.mode = 0;
	duty_counts(&w, &s0, &t0);
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/*
 * PROBE-P6, PROBE-P4: the probe sees the requests of exactly the keys in
 * its sample, told apart by the writers' marks at the maintainer's call
 * sites: the inserts of fresh keys (larder_put), then, after a touch gave
 * each a deadline (which copies every entry: the copy must keep the mark),
 * one hit of each, then a bulk writer's inserts (larder__put_batch, as
 * larder_load writes: queued in the policy as runs, maint/apply.c
 * admit_run). Counted against the keys' own hashes. The controller never
 * runs (a long interval) and the sampled requests stay under the rate cap
 * (PROBE-P7), so S does not change meanwhile (checked). A call site that
 * does not call the probe for a marked entry fails it (checked for each).
 * With four shards (PROBE-P9) the probe, on shard 0, sees exactly the
 * sampled keys of shard 0 (hash & 3 == 0, one in S / 4 of them: S is the
 * cache's), and the other shards' maintainers, which have no probe, meet
 * no marked entry (before PROBE-P9 such a cache was refused at open; with
 * the marks on every shard's keys, shard 1's maintainer calls a probe it
 * does not have: checked).
 */
#define BULK_KEYS 16u /* a load's batch (core/snapshot.c) */

static uint64_t arrived_after_quiesce(larder_pool *pool, larder *c, uint64_t every)
{
	uint64_t arrived = 0, now_every = 0;
	CHECK_EQ(larder__test_quiesce(c, WAIT_MS), 0);
	CHECK_EQ(larder__test_pool_arrived(pool, c, &arrived, &now_every), 0);
	CHECK_EQ(now_every, every);
	return arrived;
}

/* In the probe's sample of S (the cache's, PROBE-P9) in a cache of `shards`. */
static int in_probe_sample(uint64_t hash, uint64_t every, unsigned shards)
{
	return (hash & (shards - 1)) == 0 && (larder__tuner_mix(hash) & (every / shards - 1)) == 0;
}

static void probe_sees_marked_keys(unsigned shards)
{
	larder_pool *pool = make_pool(8 * MiB, 60000);
	REQUIRE(pool);
	larder_config *cfg = pooled(pool, 0.5, 1, 1);
	REQUIRE(cfg);
	CHECK_RC(larder_config_set_shards(cfg, shards), LARDER_OK);
	larder *c = NULL;
	CHECK_RC(larder_open(&c, cfg), LARDER_OK);
	larder_config_destroy(cfg);
	REQUIRE(c);
	const uint64_t keys = 20000; /* about 2 MiB: no eviction */
	uint64_t a0 = 0, every = 0, in_sample = 0;
	CHECK_EQ(larder__test_pool_arrived(pool, c, &a0, &every), 0);
	REQUIRE(every >= LARDER__PROBE_MIN_EVERY * shards);
	char value[64] = { 0 }, buf[64];
	size_t len;
	for (uint64_t k = 0; k < keys; k++) {
		CHECK_RC(larder_put(c, &k, sizeof k, value, sizeof value, LARDER_TTL_NEVER),
			 LARDER_OK);
		in_sample += in_probe_sample(larder__hash(TH_HASH_SEED, &k, sizeof k), every, shards);
	}
	uint64_t a1 = arrived_after_quiesce(pool, c, every);
	printf("  S = %llu: %llu keys of %llu in the sample, %llu inserts seen\n",
	       (unsigned long long)every, (unsigned long long)in_sample,
	       (unsigned long long)keys, (unsigned long long)(a1 - a0));
	CHECK(in_sample > 0);
	CHECK_EQ(a1 - a0, in_sample);
	for (uint64_t k = 0; k < keys; k++)
		CHECK_RC(larder_touch(c, &k, sizeof k, 3600 * 1000), LARDER_OK);
	for (uint64_t k = 0; k < keys; k++) {
		CHECK_RC(larder_get(c, &k, sizeof k, buf, sizeof buf, &len), LARDER_OK);
		if (k % 256 == 255) /* the hit ring (1,024) drops the oldest samples */
			CHECK_EQ(larder__test_quiesce(c, WAIT_MS), 0);
	}
	uint64_t a2 = arrived_after_quiesce(pool, c, every);
	CHECK_EQ(a2 - a1, in_sample);
	uint64_t bulk_sample = 0;
	for (uint64_t k = keys; k < 2 * keys; k += BULK_KEYS) {
		uint64_t key[BULK_KEYS], charged = 0;
		struct larder__put_rec rec[BULK_KEYS];
		for (unsigned i = 0; i < BULK_KEYS; i++) {
			key[i] = k + i;
			uint64_t hash = larder__hash(TH_HASH_SEED, &key[i], sizeof key[i]);
			rec[i] = (struct larder__put_rec){ &key[i], sizeof key[i], value, sizeof value,
							   LARDER_TTL_NEVER, hash };
			bulk_sample += in_probe_sample(hash, every, shards);
		}
		CHECK_RC(larder__put_batch(c, rec, BULK_KEYS, UINT64_MAX, &charged), LARDER_OK);
	}
	uint64_t a3 = arrived_after_quiesce(pool, c, every);
	printf("  bulk: %llu keys in the sample, %llu inserts seen\n",
	       (unsigned long long)bulk_sample, (unsigned long long)(a3 - a2));
	CHECK(bulk_sample > 0);
	CHECK_EQ(a3 - a2, bulk_sample);
	larder_close(c);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

static void test_probe_sees_marked_keys(void)
{
	probe_sees_marked_keys(1);
}

static void test_probe_sees_marked_keys_shards(void)
{
	probe_sees_marked_keys(4);
}

/*
 * PROBE-P4: the maintainer tells the probe of its marked victims, whose
 * sampled keys its ghost remembers (an insert of one is a ghost hit). A
 * few keys of the sample are written, then three times the cache's
 * entries of keys without the mark, which are never read: every earlier
 * entry is evicted, and no marked one after them (the ghost holds about 8
 * sampled victims, budget / 64 of weight over S, and keeps these few).
 * Written again, each of the few is a ghost hit. The unmarked keys reach
 * no probe, so S stays 64 (PROBE-P7's cap is not reached: checked) and
 * the count is exact. Without the victims' call (maint/evict.c) the ghost
 * finds none (checked).
 */
#define GHOSTED 4u

static void test_probe_sees_marked_victims(void)
{
	larder_pool *pool = make_pool(4 * MiB, 60000);
	REQUIRE(pool);
	larder_config *cfg = pooled(pool, 0.5, 1, 1);
	REQUIRE(cfg);
	/* One shard: S = 64 and the marks of larder__probe_mark(hash, 0). */
	CHECK_RC(larder_config_set_shards(cfg, 1), LARDER_OK);
	larder *c = NULL;
	CHECK_RC(larder_open(&c, cfg), LARDER_OK);
	larder_config_destroy(cfg);
	REQUIRE(c);
	uint64_t a0 = 0, every = 0, g0 = 0, g1 = 0, few[GHOSTED], n = 0;
	CHECK_EQ(larder__test_pool_arrived(pool, c, &a0, &every), 0);
	REQUIRE(every == LARDER__PROBE_MIN_EVERY);
	char value[64] = { 0 };
	for (uint64_t k = 0; n < GHOSTED; k++)
		if (larder__probe_mark(larder__hash(TH_HASH_SEED, &k, sizeof k), 0))
			few[n++] = k;
	for (unsigned i = 0; i < GHOSTED; i++)
		CHECK_RC(larder_put(c, &few[i], sizeof few[i], value, sizeof value,
				    LARDER_TTL_NEVER),
			 LARDER_OK);
	uint64_t cap_entries = 4 * MiB / sizeof value, written = 0;
	for (uint64_t k = 1ull << 40; written < 3 * cap_entries; k++) {
		if (larder__probe_mark(larder__hash(TH_HASH_SEED, &k, sizeof k), 0))
			continue;
		CHECK_RC(larder_put(c, &k, sizeof k, value, sizeof value, LARDER_TTL_NEVER),
			 LARDER_OK);
		written++;
	}
	uint64_t a1 = arrived_after_quiesce(pool, c, every);
	CHECK_EQ(a1 - a0, GHOSTED);
	CHECK_EQ(larder__test_pool_ghost_hits(pool, c, &g0), 0);
	for (unsigned i = 0; i < GHOSTED; i++) {
		char buf[64];
		size_t len;
		CHECK_RC(larder_get(c, &few[i], sizeof few[i], buf, sizeof buf, &len), LARDER_MISS);
		CHECK_RC(larder_put(c, &few[i], sizeof few[i], value, sizeof value,
				    LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	arrived_after_quiesce(pool, c, every);
	CHECK_EQ(larder__test_pool_ghost_hits(pool, c, &g1), 0);
	printf("  %llu entries held after %llu unmarked writes; ghost hits %llu -> %llu\n",
	       (unsigned long long)th_stat(c, LARDER_STAT_ENTRIES), (unsigned long long)written,
	       (unsigned long long)g0, (unsigned long long)g1);
	CHECK_EQ(g1 - g0, GHOSTED);
	larder_close(c);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/*
 * PROBE-Q1: the pool reads a probe's mini-cache readings as of one flush.
 * A writer stores flush v (every point's hits and fresh all v) as the
 * probe does, PUBLISHES times, yielding between flushes; a reader on
 * another thread reads them all the while: every reading it gets is of
 * one flush (all equal), and the last is the last flush. Without the
 * sequence's check the reader sees points of two flushes (checked by
 * making the code do so).
 */
#define PUBLISHES 200000u

struct publisher {
	struct larder__probe_readings *out;
	larder__atomic_u64 done; /* relaxed: the reader polls it, then joins */
};

static void *publish_main(void *arg)
{
	struct publisher *pb = arg;
	for (uint64_t v = 1; v <= PUBLISHES; v++) {
		uint64_t seq = larder__probe_write_begin(pb->out);
		/* Relaxed: as the probe stores them (pool/probe.h). */
		for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
			atomic_store_explicit(&pb->out->hits[k], v, LARDER__RELAXED);
		atomic_store_explicit(&pb->out->fresh, v, LARDER__RELAXED);
		larder__probe_write_end(pb->out, seq);
		if (v % 64 == 0)
			sched_yield();
	}
	atomic_store_explicit(&pb->done, 1, LARDER__RELAXED);
	return NULL;
}

static void test_probe_readings_whole(void)
{
	static struct larder__probe_readings out; /* zero: flush 0 */
	struct publisher pb = { &out, 0 };
	pthread_t writer;
	REQUIRE(pthread_create(&writer, NULL, publish_main, &pb) == 0);
	uint64_t whole = 0, mixed = 0, busy = 0, fresh, hits[LARDER__PROBE_POINTS];
	while (!atomic_load_explicit(&pb.done, LARDER__RELAXED)) {
		if (!larder__test_pool_read_minis(&out, &fresh, hits)) {
			busy++;
			continue;
		}
		int same = 1;
		for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
			same &= hits[k] == fresh;
		whole += same;
		mixed += !same;
	}
	pthread_join(writer, NULL);
	printf("  %llu readings of one flush, %llu mixed, %llu refused while written\n",
	       (unsigned long long)whole, (unsigned long long)mixed, (unsigned long long)busy);
	CHECK_EQ(mixed, 0);
	REQUIRE(larder__test_pool_read_minis(&out, &fresh, hits));
	CHECK_EQ(fresh, PUBLISHES);
	CHECK_EQ(hits[0], PUBLISHES);
	CHECK_EQ(hits[LARDER__PROBE_POINTS - 1], PUBLISHES);
}

/* ---- Out of memory ----------------------------------------------------------- */

#define OOM_KEYS 300u

/* TOOM-O1 of test_oom.c for the pool's calls: success or LARDER_ENOMEM. */
static int ok_or_enomem(int rc, long *enomem)
{
	if (rc == LARDER_ENOMEM) {
		(*enomem)++;
		return 0;
	}
	return CHECK_RC(rc, LARDER_OK);
}

/* A pool's life with allocations failing somewhere: config, pool, two
 * caches opened in it (member, probe, tuner; the second of four shards,
 * whose probe is shard 0's, PROBE-P9: a failure in a later shard's open
 * frees it), puts (the probe's ghost, its batches) and reads, closes. A
 * failed call changes
 * nothing: a failed open leaves the pool as it was, a value written reads
 * back, and the pool closes once its caches have. */
static void pool_oom_workload(long *enomem)
{
	larder_pool_config *pc = NULL;
	larder_pool *pool = NULL;
	larder_config *cfg = NULL;
	larder *c[2] = { 0 };
	if (!ok_or_enomem(larder_pool_config_create(&pc), enomem))
		return;
	CHECK_RC(larder_pool_config_set_budget(pc, 8 * MiB), LARDER_OK);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, 1000), LARDER_OK); /* probes on */
	int made = ok_or_enomem(larder_pool_create(&pool, pc), enomem);
	larder_pool_config_destroy(pc);
	if (!made)
		return;
	if (!ok_or_enomem(larder_config_create(&cfg), enomem))
		goto close_pool;
	CHECK_RC(larder_config_set_pool(cfg, pool), LARDER_OK);
	CHECK_RC(larder_config_set_hash_seed(cfg, TH_HASH_SEED), LARDER_OK);
	for (unsigned i = 0; i < 2; i++) {
		uint64_t before = pool_stat(pool, LARDER_POOL_CACHES);
		CHECK_RC(larder_config_set_shards(cfg, i ? 4 : 1), LARDER_OK);
		if (!ok_or_enomem(larder_open(&c[i], cfg), enomem)) {
			CHECK(c[i] == NULL);
			CHECK_EQ(pool_stat(pool, LARDER_POOL_CACHES), before);
		}
	}
	larder_config_destroy(cfg);
	char value[64] = "v";
	for (unsigned i = 0; i < 2; i++) {
		if (!c[i])
			continue;
		unsigned char written[OOM_KEYS] = { 0 };
		for (unsigned k = 0; k < OOM_KEYS; k++)
			written[k] = (unsigned char)ok_or_enomem(put_key(c[i], k, value, sizeof value),
								 enomem);
		for (unsigned k = 0; k < OOM_KEYS; k++) {
			char key[16], buf[sizeof value];
			size_t len = 0;
			int n = snprintf(key, sizeof key, "k%u", k);
			int rc = larder_get(c[i], key, (size_t)n, buf, sizeof buf, &len);
			if (rc == LARDER_ENOMEM) /* the thread's first call on it */
				rc = larder_get(c[i], key, (size_t)n, buf, sizeof buf, &len);
			CHECK_RC(rc, written[k] ? LARDER_OK : LARDER_MISS);
		}
	}
	for (unsigned i = 0; i < 2; i++)
		larder_close(c[i]);
close_pool:
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/* SQLite's sweep, as test_oom.c does it for a cache: the n-th allocation
 * fails, for every n the workload reaches (every third under TSan). */
static void test_out_of_memory(void)
{
	uint64_t mapped = larder__test_mapped_bytes();
	long enomem = 0;
	larder__test_fail_alloc_after(LONG_MAX);
	pool_oom_workload(&enomem);
	long total = LONG_MAX - larder__test_fail_alloc_after(-1);
	CHECK_EQ(enomem, 0);
	CHECK_GT(total, 10);
	long stride = TH_TSAN ? 3 : 1, runs = 0;
	for (long n = 0; n <= total + 2; n += stride, runs++) {
		larder__test_fail_alloc_after(n);
		pool_oom_workload(&enomem);
		larder__test_fail_alloc_after(-1);
		if (!CHECK_EQ(larder__test_mapped_bytes(), mapped)) /* leaks: LSan at exit */
			printf("  n = %ld leaked mappings\n", n);
		if (th_failures() > 20)
			break;
	}
	printf("  %ld allocations, %ld runs, %ld ENOMEM returned\n", total, runs, enomem);
	CHECK_GT(enomem, 0);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_config_bad_input),
		TH_TEST(test_lifecycle_rules),
		TH_TEST(test_open_refusals),
		TH_TEST(test_static_split_and_close),
		TH_TEST(test_static_shares),
		TH_TEST(test_open_waits_then_busy),
		TH_TEST(test_open_waits_for_closing),
		TH_TEST(test_bound_holds_while_donor_stuck),
		TH_TEST(test_controller_moves_to_steeper),
		TH_TEST(test_controller_stride),
		TH_TEST(test_controller_stride_stops_at_cliff),
		TH_TEST(test_controller_steady),
		TH_TEST(test_controller_donor_not_warm),
		TH_TEST(test_controller_point_maturity),
		TH_TEST(test_controller_segments_cancel_warmup),
		TH_TEST(test_controller_keeps_mature_points),
		TH_TEST(test_controller_point_window_skips_fill),
		TH_TEST(test_controller_fitting_reads_flat),
		TH_TEST(test_controller_kept_straddle_flat),
		TH_TEST(test_controller_still_when_flat),
		TH_TEST(test_controller_weights_and_settles),
		TH_TEST(test_controller_respects_shares),
		TH_TEST(test_probe_estimates),
		TH_TEST(test_probe_estimates_shards),
		TH_TEST(test_probe_steady_rate),
		TH_TEST(test_probe_readings_whole),
		TH_TEST(test_probe_sees_marked_keys),
		TH_TEST(test_probe_sees_marked_keys_shards),
		TH_TEST(test_probe_sees_marked_victims),
		TH_TEST(test_out_of_memory),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
