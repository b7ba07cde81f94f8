/*
 * test_flush.c - what a larder_flush() waits for (maint/flush.c): the work
 * due at the call, counted in the maintainers' passes it waited for (one
 * shard's at a time) through the test seam larder__test_flush, never timed.
 * (The counters' exactness after a flush is test_audit.c's.)
 *
 *   idle          with nothing evicted since the last flush, a flush waits
 *                 for one pass of each shard;
 *   after a cut   a capacity cut leaves an excess X: a flush waits for at
 *                 most K x (3 + X / (EVICT_PER_PASS victims)) passes (the
 *                 bound in maint/flush.c's header, and a wake-up handed to
 *                 the largest shard), and the cache is within capacity
 *                 afterwards (QUIESCE-Q9);
 *   beside writers two threads keep a small cache evicting: each flush
 *                 still waits for at most the passes its excess at the
 *                 call needs, which the writers' overshoot bound caps
 *                 (core/cache.h), however long they keep writing. The rule
 *                 it replaced (wait for a pass with nothing left to evict,
 *                 and sweep the shards again while they handed eviction
 *                 on) waited for hundreds of passes here. Fifty
 *                 flushes, ten in the sanitizer builds.
 * Each at K = 1 and K = 4.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "core/testing.h"
#include "harness.h"

#define WAIT_MS 20000u
/* The flushes beside writers, fewer in the sanitizer builds: under TSan at a
 * load of 30-50 fifty took 30-150 s; the passes each waits for are counted,
 * not timed, so ten check the same bound. */
#define WRITER_FLUSHES (TH_SLOW > 1 ? 10 : 50)
/* The writers' first evictions, and each flush beside them, wait for
 * maintainers that share two cores with the writers and other tests: a
 * hang guard, not a limit on how long that may take. */
#define WRITERS_HANG_MS (5 * WAIT_MS * TH_SLOW)
/* maint/evict.c's EVICT_PER_PASS: the victims one pass of one shard takes. */
#define VICTIMS_PER_PASS 4096u
/* No entry written here charges less: a 100-byte value, its key and header. */
#define MIN_CHARGE 128u

static const unsigned SHARDS[] = {1, 4};

/* The passes a flush may wait for with an excess of `excess` bytes at the
 * call (maint/flush.c), K of each: the drain, the evictions at
 * VICTIMS_PER_PASS a pass (and one for a wake-up handed to the largest
 * shard), the passes running at the end. */
static unsigned pass_bound(uint64_t excess, unsigned shards)
{
	uint64_t per_pass = (uint64_t)VICTIMS_PER_PASS * MIN_CHARGE;
	return shards * (1u + (unsigned)((excess + per_pass - 1) / per_pass) + 1u + 1u);
}

static larder *open_shards(uint64_t capacity, unsigned shards)
{
	larder_config *cfg = th_config(capacity);
	if (!cfg)
		return NULL;
	CHECK_RC(larder_config_set_shards(cfg, shards), LARDER_OK);
	return th_open(cfg);
}

static size_t key_of(char *buf, char kind, uint64_t i)
{
	return (size_t)snprintf(buf, 32, "%c%llu", kind, (unsigned long long)i);
}

static void test_idle_flush_waits_a_pass_a_shard(void)
{
	char key[32], value[100];
	memset(value, 'v', sizeof value);
	for (size_t s = 0; s < TH_COUNT(SHARDS); s++) {
		larder *c = open_shards(64 * MiB, SHARDS[s]);
		REQUIRE(c);
		for (unsigned i = 0; i < 1000; i++)
			CHECK_RC(larder_put(c, key, key_of(key, 'k', i), value, sizeof value,
					    LARDER_TTL_NEVER),
				 LARDER_OK);
		unsigned passes = 0;
		CHECK_RC(larder__test_flush(c, WAIT_MS * TH_SLOW, &passes), LARDER_OK);
		CHECK_EQ(passes, SHARDS[s]);
		CHECK_RC(larder__test_flush(c, WAIT_MS * TH_SLOW, &passes), LARDER_OK);
		CHECK_EQ(passes, SHARDS[s]);
		CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 1000);
		larder_close(c);
	}
}

static void test_flush_after_cut(void)
{
	char key[32], value[200];
	memset(value, 'v', sizeof value);
	for (size_t s = 0; s < TH_COUNT(SHARDS); s++) {
		larder *c = open_shards(8 * MiB, SHARDS[s]);
		REQUIRE(c);
		for (unsigned i = 0; i < 30000; i++)
			CHECK_RC(larder_put(c, key, key_of(key, 'k', i), value, sizeof value,
					    LARDER_TTL_NEVER),
				 LARDER_OK);
		unsigned passes = 0;
		CHECK_RC(larder__test_flush(c, WAIT_MS * TH_SLOW, &passes), LARDER_OK);
		uint64_t used = th_stat(c, LARDER_STAT_USED_BYTES);
		CHECK_RC(larder_set_capacity(c, 64 * KiB), LARDER_OK);
		CHECK_RC(larder__test_flush(c, WAIT_MS * TH_SLOW, &passes), LARDER_OK);
		unsigned bound = pass_bound(used, SHARDS[s]);
		if (!CHECK_LE(passes, bound))
			fprintf(stderr, "  %u shards: %u passes, bound %u\n", SHARDS[s], passes,
				bound);
		/* Within capacity as of the writes before it (QUIESCE-Q9). */
		CHECK_LE(th_stat(c, LARDER_STAT_ENTRIES), 64 * KiB / MIN_CHARGE);
		larder_close(c);
	}
}

struct writer {
	larder *c;
	_Atomic int *stop;
	char kind;
};

/* New keys only, so that every write past the capacity makes an eviction. */
static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char key[32], value[300];
	memset(value, 'w', sizeof value);
	for (uint64_t i = 0; !atomic_load(w->stop); i++)
		if (!CHECK_RC(larder_put(w->c, key, key_of(key, w->kind, i), value, 100 + i % 200,
					 LARDER_TTL_NEVER),
			      LARDER_OK))
			break;
	return NULL;
}

/* th_wait_until's predicate: the writers have made 20,000 evictions. */
static int evicting(void *c)
{
	return th_stat(c, LARDER_STAT_EVICTIONS) >= 20000;
}

static void test_flush_beside_writers_is_bounded(void)
{
	const uint64_t capacity = 256 * KiB;
	/* The most the writers can put past the capacity: the overshoot bound
	 * (core/cache.h, 4 MiB at this size), and the capacity itself. */
	for (size_t s = 0; s < TH_COUNT(SHARDS); s++) {
		const unsigned bound = pass_bound(4 * MiB + capacity, SHARDS[s]);
		larder *c = open_shards(capacity, SHARDS[s]);
		REQUIRE(c);
		_Atomic int stop = 0;
		struct writer w[2] = {{c, &stop, 'a'}, {c, &stop, 'b'}};
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			REQUIRE(pthread_create(&t[i], NULL, writer_main, &w[i]) == 0);
		/* The cache is evicting before the flushes begin: a wait for
		 * the count with a deadline as a hang guard (a count of yields,
		 * as before, could run out first on a loaded machine). */
		CHECK(th_wait_until(evicting, c, WRITERS_HANG_MS));
		unsigned most = 0, total = 0;
		for (int i = 0; i < WRITER_FLUSHES; i++) {
			unsigned passes = 0;
			if (!CHECK_RC(larder__test_flush(c, WRITERS_HANG_MS, &passes), LARDER_OK))
				break;
			most = passes > most ? passes : most;
			total += passes;
		}
		uint64_t evictions = th_stat(c, LARDER_STAT_EVICTIONS);
		atomic_store(&stop, 1);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		CHECK_LE(20000, evictions);
		if (!CHECK_LE(most, bound))
			fprintf(stderr, "  %u shards: up to %u passes a flush, bound %u\n",
				SHARDS[s], most, bound);
		printf("  %u shards: %d flushes beside writers, %u passes, at most %u (bound %u)\n",
		       SHARDS[s], WRITER_FLUSHES, total, most, bound);
		larder_close(c);
	}
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_idle_flush_waits_a_pass_a_shard),
		TH_TEST(test_flush_after_cut),
		TH_TEST(test_flush_beside_writers_is_bounded),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
