/*
 * tests/stress/stress_busy.c - writers in bursts with pauses between them:
 * a maintainer's busy pass that drained every ring sleeps rather than run
 * a pass that would find nothing (MAINT-M5 in maint/maintainer.c; run it
 * under ThreadSanitizer and AddressSanitizer too, with 1 and 4 shards:
 * LARDER_TEST_SHARDS, th_config).
 *
 * Usage: larder_stress_busy [--writers N] [--rounds N] [--burst N] [--keys N] [--seed N]
 * Defaults: 2 writers, 40 rounds (16 under a sanitizer), bursts of 1,536
 * overwrites per writer, 512 keys per writer.
 *
 * Each round every writer overwrites its own keys (each value carries the
 * key's version) in a burst: more than a busy pass's worth
 * (LARDER__MAINT_BUSY_PASS) per shard, and fewer unread overwrites per
 * shard than a writer's wake threshold, so that passes come as the
 * maintainers choose. Then the writers stop, and the main thread waits
 * until every shard's maintainer is asleep with its rings empty (a bounded
 * wait, a hang guard) before the next round. So most rounds end in a busy
 * pass that drained everything with nobody writing: before MAINT-M5 that
 * pass ran another at once, which found nothing (the writers had stopped),
 * and the seam counts such passes.
 *
 * Invariants asserted:
 *   SBUSY-B1. no pass run at once after a busy pass of events alone finds no
 *       event (larder__test_empty_followups is 0: MAINT-M5);
 *   SBUSY-B2. every round's writes are applied and none fails: each
 *       key reads its writer's last version, and the counters agree with a
 *       walk of the index, the policy's links and the memory audit
 *       (th_check_accounting, th_check_memory_audit).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdlib.h>

#include "core/cache.h"
#include "core/testing.h"
#include "harness.h"
#include "maint/state.h"

#define MAX_WRITERS 16u
#define HANG_GUARD_MS 60000u

static struct {
	uint64_t writers, rounds, burst, keys, seed;
} opt;

static larder *cache;
static atomic_uint_fast64_t round_go, bursts_done;
static atomic_int stopping;
static uint64_t *version; /* per writer key: the last version written */

static size_t key_of(char *buf, size_t len, uint64_t w, uint64_t k)
{
	return (size_t)snprintf(buf, len, "busy:%" PRIu64 ":%" PRIu64, w, k);
}

static void *writer_main(void *arg)
{
	uint64_t w = *(uint64_t *)arg;
	struct th_rng rng = {th_mix64(opt.seed + w)};
	char key[48];
	for (uint64_t r = 1; r <= opt.rounds; r++) {
		while (atomic_load(&round_go) < r && !atomic_load(&stopping))
			sched_yield(); /* the main thread's bounded wait stops us if it fails */
		if (atomic_load(&stopping))
			return NULL;
		for (uint64_t i = 0; i < opt.burst; i++) {
			uint64_t k = th_rng_below(&rng, opt.keys);
			uint64_t *v = &version[w * opt.keys + k];
			uint64_t next = *v + 1;
			CHECK_RC(larder_put(cache, key, key_of(key, sizeof(key), w, k), &next,
					    sizeof(next), LARDER_TTL_NEVER),
				 LARDER_OK);
			*v = next;
		}
		atomic_fetch_add(&bursts_done, 1);
	}
	/* Stay until the rounds end: a thread's exit orphans its rings, which
	 * the maintainer then frees while all_asleep() may be walking them. */
	while (!atomic_load(&stopping))
		sched_yield();
	return NULL;
}

static int burst_done(void *ctx)
{
	return atomic_load(&bursts_done) >= *(uint64_t *)ctx;
}

/* Every shard's maintainer asleep, its rings drained (read as hints: the
 * writers have stopped, so only the maintainers move them). Walks the
 * shards' rings from this thread, which is safe only while no thread that
 * wrote exits (writer_main waits for `stopping`). */
static int all_asleep(void *ctx)
{
	(void)ctx;
	for (unsigned i = 0; i < cache->shard_count; i++) {
		struct larder__shard *s = &cache->shard[i];
		if (atomic_load_explicit(&s->maint_sleeping, LARDER__RELAXED) == MAINT_AWAKE ||
		    !larder__maint_rings_empty(s))
			return 0;
	}
	return 1;
}

static void check_keys(void)
{
	char key[48];
	for (uint64_t w = 0; w < opt.writers; w++)
		for (uint64_t k = 0; k < opt.keys; k++) {
			uint64_t want = version[w * opt.keys + k], got = 0;
			size_t len = 0;
			int rc = larder_get(cache, key, key_of(key, sizeof(key), w, k), &got,
					    sizeof(got), &len);
			if (!want) {
				CHECK_RC(rc, LARDER_MISS);
				continue;
			}
			CHECK_RC(rc, LARDER_OK); /* SBUSY-B2 */
			CHECK_EQ(len, sizeof(got));
			CHECK_EQ(got, want);
		}
}

static void test_busy_rounds(void)
{
	larder_config *config = th_config(64u << 20);
	REQUIRE(config != NULL);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	version = calloc(opt.writers * opt.keys, sizeof(*version));
	REQUIRE(version != NULL);
	pthread_t ts[MAX_WRITERS];
	uint64_t ids[MAX_WRITERS];
	for (uint64_t w = 0; w < opt.writers; w++) {
		ids[w] = w;
		REQUIRE(pthread_create(&ts[w], NULL, writer_main, &ids[w]) == 0);
	}
	for (uint64_t r = 1; r <= opt.rounds; r++) {
		uint64_t goal = r * opt.writers;
		atomic_store(&round_go, r);
		if (!CHECK(th_wait_until(burst_done, &goal, HANG_GUARD_MS)) ||
		    !CHECK(th_wait_until(all_asleep, NULL, HANG_GUARD_MS)))
			break;
	}
	atomic_store(&stopping, 1);
	for (uint64_t w = 0; w < opt.writers; w++)
		pthread_join(ts[w], NULL);
	th_check_accounting(cache, 60000, NULL, NULL); /* SBUSY-B2 */
	th_check_memory_audit(cache);
	check_keys();
	uint64_t empty = larder__test_empty_followups(cache);
	uint64_t passes = th_stat(cache, LARDER_STAT_MAINT_PASSES);
	CHECK_EQ(empty, 0); /* SBUSY-B1 */
	printf("  %u shards, %" PRIu64 " rounds x %" PRIu64 " writers x %" PRIu64 " puts: %" PRIu64
	       " passes, %" PRIu64 " found nothing after a busy one\n",
	       cache->shard_count, opt.rounds, opt.writers, opt.burst, passes, empty);
	larder_close(cache);
	free(version);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_busy_rounds),
	};
	opt.writers = th_arg_u64(argc, argv, "--writers", 2);
	opt.rounds = th_arg_u64(argc, argv, "--rounds", TH_TSAN || TH_ASAN ? 16 : 40);
	opt.burst = th_arg_u64(argc, argv, "--burst", 1536);
	opt.keys = th_arg_u64(argc, argv, "--keys", 512);
	opt.seed = th_arg_seed(argc, argv);
	if (opt.writers < 1 || opt.writers > MAX_WRITERS || opt.keys < 1 || opt.rounds < 1 ||
	    opt.burst < 1) {
		fprintf(stderr, "stress_busy: 1..%u writers, at least 1 key, round and put\n",
			MAX_WRITERS);
		return 2;
	}
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
