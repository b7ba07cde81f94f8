/*
 * test_sketch.c - evict/sketch.c: the count-min invariants of its header.
 *   SKETCH-K1  estimate() >= true count (below saturation) since the last halving;
 *   SKETCH-K2  halving at least halves every estimate (rounded down);
 *   SKETCH-K3  additions never exceed sample_size, and halvings happen on schedule;
 *   SKETCH-K4  a resize changes no estimate, and its copying is spread over increments
 *       (SKETCH-K1 and SKETCH-K2 checked while it is half done);
 * plus: estimates are close for a sketch sized for its keys (a frequent key
 * is told apart from one-hit keys, which TinyLFU admission relies on), and
 * saturation at 15.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "evict/sketch.h"

#include "sim_check.h"


static uint64_t key_hash(uint64_t k)
{
	/* splitmix64: stands in for the cache's seeded hash */
	k += 0x9E3779B97F4A7C15ull;
	k = (k ^ (k >> 30)) * 0xBF58476D1CE4E5B9ull;
	k = (k ^ (k >> 27)) * 0x94D049BB133111EBull;
	return k ^ (k >> 31);
}

#define KEYS 4096

static void test_never_under(void)
{
	static unsigned truth[KEYS];
	struct larder__sketch s;
	CHECK(larder__sketch_init(&s, KEYS) == 0, "init");
	s.sample_size = UINT64_MAX; /* no halving in this test */
	uint64_t r = 12345;
	for (int i = 0; i < 30000; i++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t k = (r >> 33) % KEYS;
		k = (k * k) % KEYS; /* skewed: some keys far more often */
		if (truth[k] < 15)
			truth[k]++;
		larder__sketch_increment(&s, key_hash(k));
	}
	uint64_t over = 0;
	for (uint64_t k = 0; k < KEYS; k++) {
		unsigned e = larder__sketch_estimate(&s, key_hash(k));
		CHECK(e >= truth[k], "SKETCH-K1: key %llu estimate %u < count %u",
		      (unsigned long long)k, e, truth[k]);
		CHECK(e <= 15, "4-bit counter over 15");
		over += e - truth[k];
	}
	/* Sized for KEYS keys, the overestimate stays small on average. */
	CHECK(over < KEYS / 4, "mean overestimate too high: %llu over %d keys",
	      (unsigned long long)over, KEYS);
	larder__sketch_destroy(&s);
}

static void test_halving(void)
{
	struct larder__sketch s;
	CHECK(larder__sketch_init(&s, 1024) == 0, "init");
	uint64_t hot = key_hash(1), cold = key_hash(2);
	for (int i = 0; i < 12; i++)
		larder__sketch_increment(&s, hot);
	larder__sketch_increment(&s, cold);
	unsigned before_hot = larder__sketch_estimate(&s, hot);
	unsigned before_cold = larder__sketch_estimate(&s, cold);
	CHECK(before_hot >= 12 && before_cold >= 1, "SKETCH-K1 before halving");
	larder__sketch_halve(&s);
	CHECK(larder__sketch_estimate(&s, hot) <= before_hot / 2, "SKETCH-K2 hot");
	CHECK(larder__sketch_estimate(&s, cold) <= before_cold / 2, "SKETCH-K2 cold");
	CHECK(s.resets == 1, "resets");
	for (int i = 0; i < 40; i++)
		larder__sketch_increment(&s, hot);
	CHECK(larder__sketch_estimate(&s, hot) == 15, "saturates at 15");
	larder__sketch_destroy(&s);
}

static void test_schedule(void)
{
	struct larder__sketch s;
	CHECK(larder__sketch_init(&s, 512) == 0, "init");
	uint64_t sample = s.sample_size;
	CHECK(sample == 10 * 512, "sample size is 10 x entries (Caffeine)");
	for (uint64_t i = 0; i < 5 * sample; i++) {
		larder__sketch_increment(&s, key_hash(i % 3000));
		CHECK(s.additions <= s.sample_size, "SKETCH-K3");
	}
	CHECK(s.resets >= 5 && s.resets <= 12, "halvings: %llu in 5 samples",
	      (unsigned long long)s.resets);
	/* After aging, a key seen long ago counts less than one seen lately. */
	uint64_t old = key_hash(1ull << 40), recent = key_hash(1ull << 41);
	for (int i = 0; i < 8; i++)
		larder__sketch_increment(&s, old);
	for (uint64_t i = 0; i < 2 * sample; i++)
		larder__sketch_increment(&s, key_hash(i % 3000));
	for (int i = 0; i < 8; i++)
		larder__sketch_increment(&s, recent);
	CHECK(larder__sketch_estimate(&s, recent) > larder__sketch_estimate(&s, old),
	      "aging: recent %u old %u", larder__sketch_estimate(&s, recent),
	      larder__sketch_estimate(&s, old));
	larder__sketch_destroy(&s);
}

/* Estimates of keys 0..KEYS-1 must equal want[] (SKETCH-K4) or be at least truth[] (SKETCH-K1). */
static void check_keys(const struct larder__sketch *s, const unsigned *want,
		       const unsigned *truth, const char *when)
{
	for (uint64_t k = 0; k < KEYS; k++) {
		unsigned e = larder__sketch_estimate(s, key_hash(k));
		if (want)
			CHECK(e == want[k], "SKETCH-K4 %s: key %llu estimate %u, was %u", when,
			      (unsigned long long)k, e, want[k]);
		else
			CHECK(e >= truth[k], "SKETCH-K1 %s: key %llu estimate %u < count %u", when,
			      (unsigned long long)k, e, truth[k]);
	}
}

/*
 * A resize spread over increments: no estimate changes when it starts, every
 * estimate stays >= the true count while keys are counted in both the old and
 * the new table, a halving in the middle halves both, and the copying ends
 * within words / SKETCH_MIGRATE_WORDS (8) increments.
 */
static void test_resize(void)
{
	static unsigned truth[KEYS], before[KEYS];
	struct larder__sketch s;
	CHECK(larder__sketch_init(&s, 256) == 0, "init");
	s.sample_size = UINT64_MAX;
	uint64_t r = 777;
	for (int i = 0; i < 20000; i++) {
		r = r * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t k = ((r >> 33) % KEYS) * ((r >> 40) % KEYS) % KEYS;
		truth[k] += truth[k] < 15;
		larder__sketch_increment(&s, key_hash(k));
	}
	for (uint64_t k = 0; k < KEYS; k++)
		before[k] = larder__sketch_estimate(&s, key_hash(k));
	uint64_t old_words = s.mask + 1;
	CHECK(larder__sketch_resize(&s, 2048) == 0 && larder__sketch_resizing(&s), "resize starts");
	CHECK(s.mask + 1 == 8 * old_words, "8x the words: %llu", (unsigned long long)(s.mask + 1));
	s.sample_size = UINT64_MAX;
	check_keys(&s, before, NULL, "at the start of the resize");
	CHECK(larder__sketch_resize(&s, 1 << 20) == -1, "a second resize waits for the first");
	uint64_t steps = 0, mid_checks = 0;
	while (larder__sketch_resizing(&s)) {
		uint64_t k = steps % KEYS;
		truth[k] += truth[k] < 15;
		larder__sketch_increment(&s, key_hash(k));
		steps++;
		if (s.moved > 0 && s.moved < old_words / 2 && mid_checks++ == 0) {
			/* Both halves in use: moved words in the new table, the rest in the old. */
			check_keys(&s, NULL, truth, "half-way through the resize");
			for (uint64_t j = 0; j < KEYS; j++)
				before[j] = larder__sketch_estimate(&s, key_hash(j));
			larder__sketch_halve(&s);
			for (uint64_t j = 0; j < KEYS; j++) {
				CHECK(larder__sketch_estimate(&s, key_hash(j)) <= before[j] / 2,
				      "SKETCH-K2 during the resize, key %llu",
				      (unsigned long long)j);
				truth[j] = 0;
			}
		}
	}
	CHECK(mid_checks > 0, "the resize was observed half-way");
	CHECK(steps <= (s.mask + 1) / 8 + 1,
	      "SKETCH-K4: the copying took %llu increments for %llu words",
	      (unsigned long long)steps, (unsigned long long)(s.mask + 1));
	check_keys(&s, NULL, truth, "after the resize");
	larder__sketch_destroy(&s);
}

/*
 * The periodic halving is spread over increments (SKETCH-K4): it starts when
 * additions reach sample_size, halves at most 16 words per increment, ends
 * within words / 16 increments, refuses a resize meanwhile, and afterwards a
 * key not counted since has at most half its estimate (SKETCH-K2).
 */
static void test_spread_halving(void)
{
	struct larder__sketch s;
	CHECK(larder__sketch_init(&s, 4096) == 0, "init");
	uint64_t words = s.mask + 1, hot = key_hash(1u << 30);
	for (int i = 0; i < 14; i++)
		larder__sketch_increment(&s, hot);
	unsigned before = larder__sketch_estimate(&s, hot);
	uint64_t i = 0;
	while (!s.halving)
		larder__sketch_increment(&s, key_hash(i++ % 50000));
	CHECK(s.additions <= s.sample_size / 2 + 1, "SKETCH-K3: additions halved when it began");
	CHECK(larder__sketch_resize(&s, 1 << 20) == -1, "no resize during a halving");
	uint64_t steps = 0, prev = s.halved;
	while (s.halving) {
		larder__sketch_increment(&s, key_hash(i++ % 50000));
		steps++;
		CHECK(!s.halving || s.halved - prev <= 16, "SKETCH-K4: %llu words at once",
		      (unsigned long long)(s.halved - prev));
		prev = s.halved;
	}
	CHECK(steps <= words / 16 + 1, "SKETCH-K4: halving took %llu increments for %llu words",
	      (unsigned long long)steps, (unsigned long long)words);
	CHECK(s.resets == 1, "one halving");
	CHECK(larder__sketch_estimate(&s, hot) <= before / 2 + 1,
	      "SKETCH-K2: %u after, %u before (plus at most one collision)",
	      larder__sketch_estimate(&s, hot), before);
	CHECK(larder__sketch_resize(&s, 1 << 20) == 0, "resize after the halving");
	larder__sketch_destroy(&s);
}

int main(void)
{
	test_never_under();
	test_halving();
	test_schedule();
	test_resize();
	test_spread_halving();
	return sim_check_result();
}
