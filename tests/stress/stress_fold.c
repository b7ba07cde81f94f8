/*
 * tests/stress/stress_fold.c - a shard's pass folded into a neighbour's wake
 * (MAINT-M6 in maint/maintainer.c), with 1, 2 and 4 shards: the ownership
 * of a shard's pass handed between maintainer threads while writers,
 * clears, capacity changes and close race them. Run it under
 * ThreadSanitizer and AddressSanitizer too: a pass run by two threads at
 * once, or a neighbour walking a shard's handles while its own pass frees
 * them, is a data race or a use after free there.
 *
 * Usage: larder_stress_fold [--writers N] [--rounds N] [--keys N] [--seed N]
 * Defaults: 3 writers, 1,500 rounds (400 under a sanitizer), 1,024 keys per
 * writer.
 *
 * Writers post in trickles (a burst of 24 puts or removals, then a yield),
 * below any writer's wake-up threshold, so that the maintainers sleep in
 * windows and lazily with events in their rings: the state in which a
 * neighbour folds their passes. A main-thread loop meanwhile clears the
 * cache or moves its capacity between 1 and 16 MiB (a clear per 5 rounds
 * of the writers, a cut per 3), sampling the used bytes. The fold count
 * is printed, not asserted: whether a neighbour or the shard's own thread
 * runs a pass is the scheduler's choice.
 *
 * Invariants asserted:
 *   SFOLD-F1. the used bytes, sampled throughout, stay within the largest
 *       capacity plus its overshoot bound;
 *   SFOLD-F2. every value read is whole and its key's (th_value_check);
 *   SFOLD-F3. no write fails; after a last round with no clear and room for
 *       every key, each key reads its writer's last version, and the
 *       counters agree with a walk of the index, the policy's links and
 *       the memory audit (every entry accounted for: MAINT-M1);
 *   SFOLD-F4. one shard, or a removal listener, folds no pass (MAINT-M6:
 *       a listener's calls stay on their shard's thread); the listener
 *       hears every removal of the run once (its count equals the removals
 *       the statistics counted);
 *   SFOLD-F5. close right after a burst, with folds under way, drains and
 *       frees everything (the sanitizers check the frees).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdlib.h>

#include "core/cache.h"
#include "core/testing.h"
#include "harness.h"

#define MAX_WRITERS 8u
#define BURST 24u
#define CAP_HI (16u * 1024u * 1024u)
#define CAP_LO (1u * 1024u * 1024u)
#define VALUE_MAX 1024u
#define HANG_GUARD_MS (60000u * TH_SLOW)

static struct {
	uint64_t writers, rounds, keys, seed;
} opt;

static larder *cache;
static atomic_uint_fast64_t rounds_done, removals_heard;
static atomic_int phase; /* 0: racing the admin loop, 1: the last round, 2: stop */
static uint64_t *version;  /* per writer key: the last version written, 0 removed */

static size_t key_of(char *buf, size_t len, uint64_t w, uint64_t k)
{
	return (size_t)snprintf(buf, len, "fold:%" PRIu64 ":%" PRIu64, w, k);
}

static uint32_t key_id(uint64_t w, uint64_t k)
{
	return (uint32_t)(w * opt.keys + k);
}

static size_t value_len(uint64_t w, uint64_t k, uint64_t v)
{
	return sizeof(struct th_value_header) +
	       (size_t)(th_mix64(key_id(w, k) * 31u + v) % (VALUE_MAX - sizeof(struct th_value_header)));
}

static void put_key(uint64_t w, uint64_t k, unsigned char *buf)
{
	char key[48];
	uint64_t *v = &version[key_id(w, k)];
	uint64_t next = *v + 1;
	size_t len = th_value_make(buf, key_id(w, k), value_len(w, k, next), next);
	CHECK_RC(larder_put(cache, key, key_of(key, sizeof(key), w, k), buf, len,
			    LARDER_TTL_NEVER),
		 LARDER_OK); /* SFOLD-F3 */
	*v = next;
}

static void *writer_main(void *arg)
{
	uint64_t w = *(uint64_t *)arg;
	struct th_rng rng = {th_mix64(opt.seed + w)};
	unsigned char *buf = malloc(VALUE_MAX), *got = malloc(VALUE_MAX);
	if (!CHECK(buf != NULL && got != NULL))
		goto out;
	char key[48];
	while (atomic_load(&phase) == 0) {
		for (unsigned i = 0; i < BURST; i++) {
			uint64_t k = th_rng_below(&rng, opt.keys), op = th_rng_below(&rng, 8);
			size_t n = key_of(key, sizeof(key), w, k), len = 0;
			if (op == 0) {
				int rc = larder_remove(cache, key, n);
				CHECK(rc == LARDER_OK || rc == LARDER_MISS);
				version[key_id(w, k)] = 0;
			} else if (op == 1) {
				int rc = larder_get(cache, key, n, got, VALUE_MAX, &len);
				if (rc == LARDER_OK) /* SFOLD-F2: a clear or eviction may miss */
					th_value_check("fold read", key_id(w, k), got, len, NULL);
				else
					CHECK_RC(rc, LARDER_MISS);
			} else {
				put_key(w, k, buf);
			}
		}
		atomic_fetch_add(&rounds_done, 1);
		sched_yield();
	}
	while (atomic_load(&phase) == 1)
		sched_yield();
	/* The last round: every key written, with room for all (SFOLD-F3). */
	for (uint64_t k = 0; k < opt.keys; k++)
		put_key(w, k, buf);
out:
	free(buf);
	free(got);
	return NULL;
}

static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	(void)ctx, (void)key, (void)key_len, (void)value, (void)value_len, (void)cause;
	atomic_fetch_add_explicit(&removals_heard, 1, memory_order_relaxed);
}

static void check_keys(void)
{
	char key[48];
	unsigned char *got = malloc(VALUE_MAX);
	if (!CHECK(got != NULL))
		return;
	for (uint64_t w = 0; w < opt.writers; w++)
		for (uint64_t k = 0; k < opt.keys; k++) {
			size_t len = 0;
			int rc = larder_get(cache, key, key_of(key, sizeof(key), w, k), got,
					    VALUE_MAX, &len);
			if (!CHECK_RC(rc, LARDER_OK)) /* SFOLD-F3 */
				continue;
			uint64_t v = version[key_id(w, k)];
			struct th_value_header h = {0};
			CHECK_EQ(len, value_len(w, k, v));
			if (th_value_check("fold last", key_id(w, k), got, len, &h))
				CHECK_EQ(h.deadline, v); /* the writer's last version */
		}
	free(got);
}

static int writers_done(void *ctx)
{
	return atomic_load(&rounds_done) >= *(uint64_t *)ctx;
}

/* The main thread's part while the writers trickle: clears and capacity
 * cuts paced by the writers' rounds, the used bytes sampled (SFOLD-F1). */
static void administer(uint64_t bound)
{
	uint64_t most = 0;
	for (uint64_t r = 1; r <= opt.rounds; r++) {
		uint64_t goal = r * opt.writers;
		if (!CHECK(th_wait_until(writers_done, &goal, HANG_GUARD_MS)))
			break;
		if (r % 5 == 0)
			CHECK_RC(larder_clear(cache), LARDER_OK);
		else if (r % 3 == 0)
			CHECK_RC(larder_set_capacity(cache, (r / 3) % 2 ? CAP_LO : CAP_HI),
				 LARDER_OK);
		uint64_t used = th_stat(cache, LARDER_STAT_USED_BYTES);
		most = used > most ? used : most;
	}
	CHECK_LE(most, bound); /* SFOLD-F1 */
	printf("    used bytes at most %" PRIu64 " of the bound %" PRIu64 "\n", most, bound);
}

static void run(unsigned shards, int with_listener)
{
	larder_config *config = th_config(CAP_HI);
	REQUIRE(config != NULL);
	REQUIRE(larder_config_set_shards(config, shards) == LARDER_OK);
	if (with_listener)
		REQUIRE(larder_config_set_removal_listener(config, listener, NULL) == LARDER_OK);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	version = calloc(opt.writers * opt.keys, sizeof(*version));
	REQUIRE(version != NULL);
	atomic_store(&rounds_done, 0);
	atomic_store(&removals_heard, 0);
	atomic_store(&phase, 0);
	uint64_t bound = CAP_HI + th_stat(cache, LARDER_STAT_OVERSHOOT_BOUND);
	pthread_t ts[MAX_WRITERS];
	uint64_t ids[MAX_WRITERS];
	for (uint64_t w = 0; w < opt.writers; w++) {
		ids[w] = w;
		REQUIRE(pthread_create(&ts[w], NULL, writer_main, &ids[w]) == 0);
	}
	administer(bound);
	atomic_store(&phase, 1);
	CHECK_RC(larder_set_capacity(cache, CAP_HI), LARDER_OK);
	/* Writers have seen phase 1 once a flush ran after it: let them go. */
	CHECK_RC(larder_flush(cache, HANG_GUARD_MS), LARDER_OK);
	atomic_store(&phase, 2);
	for (uint64_t w = 0; w < opt.writers; w++)
		pthread_join(ts[w], NULL);
	th_check_accounting(cache, 60000, NULL, NULL); /* SFOLD-F3 */
	th_check_memory_audit(cache);
	check_keys();
	uint64_t folded = larder__test_folded_passes(cache);
	uint64_t passes = th_stat(cache, LARDER_STAT_MAINT_PASSES);
	if (shards == 1 || with_listener) {
		CHECK_EQ(folded, 0); /* SFOLD-F4 */
	}
	if (with_listener) {
		CHECK_RC(larder_flush(cache, HANG_GUARD_MS), LARDER_OK);
		static const enum larder_stat causes[] = {
			LARDER_STAT_EVICTIONS, LARDER_STAT_EXPIRATIONS, LARDER_STAT_REMOVALS,
			LARDER_STAT_REPLACEMENTS, LARDER_STAT_CLEARED};
		uint64_t removals = 0;
		for (size_t i = 0; i < TH_COUNT(causes); i++)
			removals += th_stat(cache, causes[i]);
		CHECK_EQ(atomic_load(&removals_heard), removals); /* SFOLD-F4 */
	}
	printf("  %u shards%s: %" PRIu64 " rounds x %" PRIu64 " writers: %" PRIu64
	       " passes, %" PRIu64 " of them folded\n",
	       shards, with_listener ? ", a listener" : "", opt.rounds, opt.writers, passes,
	       folded);
	/* SFOLD-F5: a burst, then close at once. */
	unsigned char *buf = malloc(VALUE_MAX);
	REQUIRE(buf != NULL);
	for (uint64_t k = 0; k < opt.keys; k++)
		put_key(k % opt.writers, k, buf);
	free(buf);
	larder_close(cache);
	free(version);
}

static void test_fold_one_shard(void)
{
	run(1, 0);
}

static void test_fold_two_shards(void)
{
	run(2, 0);
}

static void test_fold_four_shards(void)
{
	run(4, 0);
}

static void test_fold_listener(void)
{
	run(4, 1);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_fold_one_shard),
		TH_TEST(test_fold_two_shards),
		TH_TEST(test_fold_four_shards),
		TH_TEST(test_fold_listener),
	};
	opt.writers = th_arg_u64(argc, argv, "--writers", 3);
	opt.rounds = th_arg_u64(argc, argv, "--rounds", TH_TSAN || TH_ASAN ? 400 : 1500);
	opt.keys = th_arg_u64(argc, argv, "--keys", 1024);
	opt.seed = th_arg_seed(argc, argv);
	if (opt.writers < 1 || opt.writers > MAX_WRITERS || opt.keys < 1 || opt.rounds < 1) {
		fprintf(stderr, "stress_fold: 1..%u writers, at least 1 key and round\n",
			MAX_WRITERS);
		return 2;
	}
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
