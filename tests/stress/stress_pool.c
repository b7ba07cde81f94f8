/*
 * tests/stress/stress_pool.c - several caches in one pool while capacity
 * moves between them (run it under ThreadSanitizer and ASan/UBSan too).
 *
 * Usage: larder_stress_pool [--caches N] [--writers N] [--readers N]
 *                           [--keys N] [--shards K] [--duration-ms N] [--seed N]
 * Defaults: 4 caches, 2 writers, 1 reader, 20000 keys per cache, 1 shard
 * per cache, 5 s (3 s under a sanitizer). With K > 1 each cache's probe
 * sees its shard 0 alone (PROBE-P9 in pool/probe.c) while K maintainers
 * evict and give bytes back.
 *
 * A 32 MiB pool whose controller passes once a minute (so the caches' probes
 * run); the main thread drives it through the test seam instead, every 10 ms: it gives one cache a steep
 * curve and the others flat ones (every fourth round, the probes' own
 * estimates; each probe asked in turn for its low rate, its full rate, or
 * what the controller detects), then runs two controller passes, each moving up to 1/16 of
 * the budget, so capacity keeps moving from cache to cache while writers
 * fill every cache past its share (values of 100 B to 4 KiB, working sets
 * about 40 MiB per cache) and readers check what they read. A sampler
 * thread bounds the caches' summed used bytes from below, without stopping
 * anyone: for each cache the bytes allocated so far (a lower bound), then,
 * after all of them, the bytes freed so far (an upper bound); allocated -
 * freed, summed, is at most the sum of used bytes at any instant between the
 * two sets of reads.
 *
 * Invariants asserted:
 *   SPOOL-S1. (the pool's bound, POOL-K1 in pool/pool.c) every sample: that lower
 *       bound <= budget + the pool's overshoot bound (budget / 100 + 4 MiB
 *       per cache) + one entry per writer (a writer may undo one
 *       allocation it has not published: larder__test_allocated_bytes);
 *   SPOOL-S2. every value read is whole and belongs to its cache and key;
 *   SPOOL-S3. no write fails (the write wait is generous);
 *   SPOOL-S4. the bound was under test: 4 x the budget written and 4 x moved
 *       from cache to cache, and some sample saw over half the budget used;
 *   SPOOL-S5. afterwards: capacities sum to at most the budget, each cache's
 *       counters agree with a walk of its index (MAINT-M1) and its queues' links;
 *       closing everything returns every mapped byte.
 *   SPOOL-S6. capacity goes to the cache with the steeper curve: in a round
 *       of the seam's curves, the steep cache's target never falls over the
 *       round's passes, and it rose in most such rounds.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "harness.h"
#include "maint/maintainer.h"
#include "pool/pool.h"
#include "pool/probe.h"

#define BUDGET (32 * MiB)
#define MAX_CACHES 16
#define VALUE_MIN 100u
#define VALUE_SPAN (4000u - VALUE_MIN)
#define HEADER_BYTES 24u
#define MAX_CHARGE (8 * KiB) /* an upper bound on one entry's slot here */

static struct {
	uint64_t caches, writers, readers, keys, shards, duration_ms, seed;
} opt;

static larder_pool *pool;
static larder *caches[MAX_CACHES];
static _Atomic int stop;
static _Atomic uint64_t puts_ok, put_bytes, reads_hit, samples;
static uint64_t steep_rounds, steep_rose; /* SPOOL-S6: the driver's alone */
static _Atomic int64_t max_low; /* the largest lower bound seen (SPOOL-S1, SPOOL-S4) */

struct worker {
	pthread_t thread;
	unsigned id;
};

static size_t value_len(uint64_t seed)
{
	return VALUE_MIN + (size_t)(th_mix64(seed) % VALUE_SPAN);
}

static void make_value(uint8_t *v, uint64_t cache, uint64_t key, uint64_t seed)
{
	size_t len = value_len(seed);
	memcpy(v, &cache, 8);
	memcpy(v + 8, &key, 8);
	memcpy(v + 16, &seed, 8);
	for (size_t i = HEADER_BYTES; i < len; i++)
		v[i] = (uint8_t)(seed * 31u + i * 7u);
}

/* SPOOL-S2 */
static int value_ok(const uint8_t *v, size_t len, uint64_t cache, uint64_t key)
{
	uint64_t c, k, seed;
	if (len < HEADER_BYTES)
		return 0;
	memcpy(&c, v, 8);
	memcpy(&k, v + 8, 8);
	memcpy(&seed, v + 16, 8);
	if (c != cache || k != key || len != value_len(seed))
		return 0;
	for (size_t i = HEADER_BYTES; i < len; i++)
		if (v[i] != (uint8_t)(seed * 31u + i * 7u))
			return 0;
	return 1;
}

static void *writer_main(void *arg)
{
	struct worker *w = arg;
	struct th_rng rng = { opt.seed + 1000u * (w->id + 1) };
	uint8_t *v = malloc(VALUE_MIN + VALUE_SPAN);
	if (!CHECK(v != NULL))
		return NULL;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t c = th_rng_below(&rng, opt.caches), k = th_rng_below(&rng, opt.keys);
		uint64_t seed = th_rng_next(&rng);
		make_value(v, c, k, seed);
		int rc = larder_put(caches[c], &k, sizeof k, v, value_len(seed), LARDER_TTL_NEVER);
		if (!CHECK_RC(rc, LARDER_OK)) /* SPOOL-S3 */
			break;
		atomic_fetch_add_explicit(&puts_ok, 1, memory_order_relaxed);
		atomic_fetch_add_explicit(&put_bytes, value_len(seed), memory_order_relaxed);
	}
	free(v);
	return NULL;
}

static void *reader_main(void *arg)
{
	struct worker *w = arg;
	struct th_rng rng = { opt.seed + 7777u * (w->id + 1) };
	uint8_t *buf = malloc(VALUE_MIN + VALUE_SPAN);
	size_t len;
	if (!CHECK(buf != NULL))
		return NULL;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t c = th_rng_below(&rng, opt.caches), k = th_rng_below(&rng, opt.keys);
		int rc = larder_get(caches[c], &k, sizeof k, buf, VALUE_MIN + VALUE_SPAN, &len);
		if (rc == LARDER_MISS)
			continue;
		if (!CHECK_RC(rc, LARDER_OK) || !CHECK(value_ok(buf, len, c, k))) /* SPOOL-S2 */
			break;
		atomic_fetch_add_explicit(&reads_hit, 1, memory_order_relaxed);
	}
	free(buf);
	return NULL;
}

/* SPOOL-S1: the lower bound of the summed used bytes, sampled without pause. */
static void *sampler_main(void *arg)
{
	(void)arg;
	const int64_t limit = (int64_t)(BUDGET + BUDGET / 100 + opt.caches * 4 * MiB +
					opt.writers * MAX_CHARGE);
	unsigned reported = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		int64_t low = 0;
		uint64_t allocated[MAX_CACHES];
		for (unsigned i = 0; i < opt.caches; i++)
			allocated[i] = larder__test_allocated_bytes(caches[i]);
		for (unsigned i = 0; i < opt.caches; i++)
			low += (int64_t)(allocated[i] - larder__maint_freed_bytes(caches[i]));
		if (low > limit && reported++ < 5)
			th_fail(__FILE__, __LINE__, "S1: used bytes >= %lld > the bound %lld",
				(long long)low, (long long)limit);
		else if (low > limit)
			th_fail_quiet();
		int64_t seen = atomic_load_explicit(&max_low, memory_order_relaxed);
		if (low > seen)
			atomic_store_explicit(&max_low, low, memory_order_relaxed);
		atomic_fetch_add_explicit(&samples, 1, memory_order_relaxed);
	}
	return NULL;
}

/* One cache steep, the others flat (or, every fourth round, the probes').
 * And each cache's probe asked in turn for the low rate, the full rate or
 * what the controller detects (PROBE-P8 in pool/probe.c), so that the
 * maintainers skip blocks of the sample while capacity moves. */
static void favour(unsigned round)
{
	unsigned hot = round % (unsigned)opt.caches;
	for (unsigned i = 0; i < opt.caches; i++) {
		uint64_t seen, through;
		CHECK_EQ(larder__test_pool_force_steady(pool, caches[i], (int)((round + i) % 3),
							&seen, &through),
			 0);
		double hits[LARDER__PROBE_POINTS];
		for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++) {
			double b = (double)larder__test_pool_point_bytes(pool, caches[i], k);
			hits[k] = i == hot ? 1e6 * b / (double)BUDGET : 1e3;
		}
		CHECK_EQ(larder__test_pool_set_curve(pool, caches[i], round % 4 == 3 ? NULL : hits,
						     1e6),
			 0);
	}
}

static uint64_t pool_stat(enum larder_pool_stat s);

/* SPOOL-S4's work done: written and moved 4 x the budget each, and the
 * sampler has run (over 100 samples, one of over half the budget). */
static int enough_work(void)
{
	return atomic_load(&put_bytes) > 4 * BUDGET &&
	       pool_stat(LARDER_POOL_MOVED_BYTES) > 4 * BUDGET &&
	       atomic_load(&samples) > 100 && atomic_load(&max_low) > (int64_t)(BUDGET / 2);
}

static uint64_t target_of(unsigned i)
{
	double v[LARDER_POOL_CACHE_TARGET_BYTES + 1] = { 0 };
	CHECK_RC(larder_pool_cache_stats(pool, caches[i], v, LARDER_POOL_CACHE_TARGET_BYTES + 1),
		 LARDER_OK);
	return (uint64_t)v[LARDER_POOL_CACHE_TARGET_BYTES];
}

static void drive_pool(void)
{
	/* On a loaded machine (sanitizers, other tests) the writers may not have
	 * written enough by `until`, nor the sampler sampled: go on, so that the
	 * run always tests what it is for, up to a hang guard (a fixed 30 s
	 * more left a TSan run at load 35 at 120 of the 128 MiB to write). */
	uint64_t until = th_now_ms() + opt.duration_ms, limit = until + 120000 * TH_SLOW;
	for (unsigned round = 0; th_now_ms() < until || (!enough_work() && th_now_ms() < limit);
	     round++) {
		favour(round);
		unsigned hot = round % (unsigned)opt.caches;
		uint64_t before = target_of(hot);
		larder__test_pool_step(pool);
		larder__test_pool_step(pool);
		if (round % 4 != 3) { /* SPOOL-S6: the seam's curves this round */
			uint64_t after = target_of(hot);
			if (!CHECK_GE(after, before))
				break;
			steep_rounds++;
			steep_rose += after > before;
		}
		th_pause_ms(10); /* a pause, not a sync */
	}
}

static uint64_t pool_stat(enum larder_pool_stat s)
{
	uint64_t v[LARDER_POOL_STAT_COUNT];
	CHECK_RC(larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT), LARDER_OK);
	return v[s];
}

int main(int argc, char **argv)
{
	opt.caches = th_arg_u64(argc, argv, "--caches", 4);
	opt.writers = th_arg_u64(argc, argv, "--writers", 2);
	opt.readers = th_arg_u64(argc, argv, "--readers", 1);
	opt.keys = th_arg_u64(argc, argv, "--keys", 20000);
	opt.shards = th_arg_u64(argc, argv, "--shards", 1);
	opt.duration_ms = th_arg_u64(argc, argv, "--duration-ms", TH_TSAN || TH_ASAN ? 3000 : 5000);
	opt.seed = th_arg_seed(argc, argv);
	if (opt.caches < 2 || opt.caches > MAX_CACHES || opt.writers < 1 || opt.writers > 64 ||
	    opt.readers > 64 || opt.keys < 1 || opt.shards < 1 || opt.shards > LARDER_SHARDS_MAX ||
	    (opt.shards & (opt.shards - 1))) {
		fprintf(stderr, "stress_pool: bad arguments\n");
		return 2;
	}
	printf("stress_pool: %" PRIu64 " caches of %" PRIu64 " shards, %" PRIu64
	       " writers, %" PRIu64 " readers, %" PRIu64 " keys per cache, %" PRIu64 " ms\n",
	       opt.caches, opt.shards, opt.writers, opt.readers, opt.keys, opt.duration_ms);
	larder__test_poison_freed(1);
	uint64_t mapped0 = larder__test_mapped_bytes();

	larder_pool_config *pc = NULL;
	if (larder_pool_config_create(&pc) != LARDER_OK ||
	    larder_pool_config_set_budget(pc, BUDGET) != LARDER_OK ||
	    larder_pool_config_set_interval_ms(pc, 60000) != LARDER_OK ||
	    larder_pool_create(&pool, pc) != LARDER_OK)
		return 1;
	larder_pool_config_destroy(pc);
	for (unsigned i = 0; i < opt.caches; i++) {
		larder_config *cfg = NULL;
		if (larder_config_create(&cfg) != LARDER_OK ||
		    larder_config_set_pool(cfg, pool) != LARDER_OK ||
		    larder_config_set_write_wait_ms(cfg, 30000) != LARDER_OK ||
		    larder_config_set_expected_entries(cfg, opt.keys) != LARDER_OK ||
		    larder_config_set_shards(cfg, (unsigned)opt.shards) != LARDER_OK ||
		    larder_open(&caches[i], cfg) != LARDER_OK)
			return 1;
		larder_config_destroy(cfg);
	}

	struct worker ws[129];
	unsigned n = (unsigned)(opt.writers + opt.readers);
	for (unsigned i = 0; i <= n; i++) {
		void *(*fn)(void *) = i < opt.writers ? writer_main : i < n ? reader_main : sampler_main;
		ws[i] = (struct worker){ .id = i };
		if (pthread_create(&ws[i].thread, NULL, fn, &ws[i]) != 0) {
			fprintf(stderr, "stress_pool: pthread_create failed\n");
			return 1;
		}
	}
	drive_pool();
	atomic_store(&stop, 1);
	for (unsigned i = 0; i <= n; i++)
		pthread_join(ws[i].thread, NULL);

	uint64_t moved = pool_stat(LARDER_POOL_MOVED_BYTES);
	printf("stress_pool: %" PRIu64 " puts (%" PRIu64 " MiB), %" PRIu64 " hits, %" PRIu64
	       " MiB of capacity moved in %" PRIu64 " steps, %" PRIu64
	       " samples, used bytes at least %.1f MiB at most (bound %.1f MiB)\n",
	       atomic_load(&puts_ok), atomic_load(&put_bytes) / MiB, atomic_load(&reads_hit),
	       moved / MiB,
	       pool_stat(LARDER_POOL_MOVES), atomic_load(&samples),
	       (double)atomic_load(&max_low) / (double)MiB,
	       (double)(BUDGET + pool_stat(LARDER_POOL_OVERSHOOT_BOUND)) / (double)MiB);
	printf("stress_pool: the steep cache's target rose in %" PRIu64 " of %" PRIu64
	       " rounds of the seam's curves\n",
	       steep_rose, steep_rounds);
	CHECK_GT(2 * steep_rose, steep_rounds); /* SPOOL-S6 */
	CHECK(enough_work()); /* SPOOL-S4 */
	CHECK_GT(atomic_load(&samples), 100);
	CHECK_GT(atomic_load(&max_low), (int64_t)(BUDGET / 2));
	CHECK_LE(pool_stat(LARDER_POOL_ASSIGNED_BYTES), BUDGET); /* SPOOL-S5 */
	for (unsigned i = 0; i < opt.caches; i++)
		th_check_accounting(caches[i], 30000, NULL, NULL);
	for (unsigned i = 0; i < opt.caches; i++)
		larder_close(caches[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
	CHECK_EQ(larder__test_mapped_bytes(), mapped0);
	larder__test_poison_freed(0);
	long f = th_failures();
	printf("%s (%ld failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
