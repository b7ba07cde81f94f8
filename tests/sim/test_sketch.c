/*
 * test_sketch.c - evict/sketch.c: the count-min invariants of its header.
 *   K1  estimate() >= true count (below saturation) since the last halving;
 *   K2  halving at least halves every estimate (rounded down);
 *   K3  additions never exceed sample_size, and halvings happen on schedule;
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
		CHECK(e >= truth[k], "K1: key %llu estimate %u < count %u", (unsigned long long)k, e,
		      truth[k]);
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
	CHECK(before_hot >= 12 && before_cold >= 1, "K1 before halving");
	larder__sketch_halve(&s);
	CHECK(larder__sketch_estimate(&s, hot) <= before_hot / 2, "K2 hot");
	CHECK(larder__sketch_estimate(&s, cold) <= before_cold / 2, "K2 cold");
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
		CHECK(s.additions <= s.sample_size, "K3");
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
	CHECK(larder__sketch_resize(&s, 100000) == 0 && larder__sketch_estimate(&s, recent) == 0,
	      "resize forgets");
	larder__sketch_destroy(&s);
}

int main(void)
{
	test_never_under();
	test_halving();
	test_schedule();
	return sim_check_result();
}
