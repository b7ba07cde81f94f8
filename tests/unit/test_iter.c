/*
 * tests/unit/test_iter.c - cursors over a cache (larder_iter_*), one thread
 * at a time; the concurrent rules are in tests/stress/stress_iter.c.
 *
 * Invariants checked (larder.h "Iteration", core/iter.c ITER-I1..I4):
 *   - every live key is handed out exactly once, with its value, remaining
 *     TTL and charged size; the end is LARDER_MISS, and stays so;
 *   - expired and removed keys are not handed out;
 *   - keys live throughout growths of the index (other keys written, then
 *     removed, between next() calls) are handed out exactly once;
 *   - a clear in the middle ends with no key twice and nothing after it but
 *     keys written after the clear;
 *   - argument errors.
 */
#include <stdlib.h>

#include "harness.h"

struct tally {
	uint32_t *seen;    /* per key id: times handed out */
	uint64_t n;        /* key ids 0 .. n-1 */
	uint64_t others;   /* keys not of the form "k<id>" in range */
	uint64_t last_ttl; /* of the last key handed out */
	int bad_value;
};

static size_t key_of(char *buf, uint64_t id)
{
	return (size_t)snprintf(buf, 32, "k%08llu", (unsigned long long)id);
}

static size_t value_of(char *buf, uint64_t id, uint64_t gen)
{
	return (size_t)snprintf(buf, 64, "value-%llu-%llu", (unsigned long long)id,
				(unsigned long long)gen);
}

static void on_entry(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct tally *t = ctx;
	char k[32];
	if (key_len != 9 || ((const char *)key)[0] != 'k') {
		t->others++;
		return;
	}
	memcpy(k, key, key_len);
	k[key_len] = 0;
	uint64_t id = strtoull(k + 1, NULL, 10);
	if (id >= t->n) {
		t->others++;
		return;
	}
	t->seen[id]++;
	char v[64];
	size_t vl = value_of(v, id, 0);
	if (value_len != vl || memcmp(value, v, vl) != 0)
		t->bad_value = 1;
	/* Header, key and value in a slot of the next multiple of 8 (>= 32). */
	uint64_t want = (16 + (ttl_ms != LARDER_TTL_NEVER ? 16 : 0) + key_len + value_len + 7) & ~(uint64_t)7;
	if (entry_bytes != (want < 32 ? 32 : want))
		t->bad_value = 1;
	t->last_ttl = ttl_ms;
}

static void tally_init(struct tally *t, uint64_t n)
{
	memset(t, 0, sizeof(*t));
	t->n = n;
	t->seen = calloc(n, sizeof(*t->seen));
	REQUIRE(t->seen != NULL);
}

static uint64_t drain(larder_iter *it, struct tally *t)
{
	uint64_t steps = 0;
	int rc;
	while ((rc = larder_iter_next(it, on_entry, t)) == LARDER_OK)
		steps++;
	CHECK_RC(rc, LARDER_MISS);
	return steps;
}

static void put_id(larder *c, uint64_t id, uint64_t ttl)
{
	char k[32], v[64];
	size_t kl = key_of(k, id), vl = value_of(v, id, 0);
	CHECK_RC(larder_put(c, k, kl, v, vl, ttl), LARDER_OK);
}

static void remove_id(larder *c, uint64_t id)
{
	char k[32];
	size_t kl = key_of(k, id);
	CHECK_RC(larder_remove(c, k, kl), LARDER_OK);
}

static void test_iter_args(void)
{
	larder *c = th_open(th_config(4 * MiB));
	REQUIRE(c != NULL);
	larder_iter *it = (larder_iter *)(uintptr_t)1;
	CHECK_RC(larder_iter_open(NULL, &it), LARDER_EINVAL);
	CHECK(it == NULL);
	CHECK_RC(larder_iter_open(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_iter_next(NULL, on_entry, NULL), LARDER_EINVAL);
	CHECK_RC(larder_iter_open(c, &it), LARDER_OK);
	CHECK_RC(larder_iter_next(it, NULL, NULL), LARDER_EINVAL);
	struct tally t;
	tally_init(&t, 1);
	CHECK_RC(larder_iter_next(it, on_entry, &t), LARDER_MISS); /* empty cache */
	CHECK_RC(larder_iter_next(it, on_entry, &t), LARDER_MISS);
	larder_iter_close(it);
	larder_iter_close(NULL);
	free(t.seen);
	larder_close(c);
}

static void test_iter_every_key_once(void)
{
	const uint64_t n = 30000;
	larder *c = th_open(th_config(64 * MiB));
	REQUIRE(c != NULL);
	for (uint64_t i = 0; i < n; i++)
		put_id(c, i, LARDER_TTL_NEVER);
	struct tally t;
	tally_init(&t, n);
	larder_iter *it;
	REQUIRE(larder_iter_open(c, &it) == LARDER_OK);
	CHECK_EQ(drain(it, &t), n);
	CHECK_RC(larder_iter_next(it, on_entry, &t), LARDER_MISS);
	larder_iter_close(it);
	uint64_t bad = 0;
	for (uint64_t i = 0; i < n; i++)
		bad += t.seen[i] != 1;
	CHECK_EQ(bad, 0);
	CHECK_EQ(t.others, 0);
	CHECK(!t.bad_value);
	CHECK_EQ(t.last_ttl, LARDER_TTL_NEVER);
	free(t.seen);
	larder_close(c);
}

static struct th_clock clk;

static void test_iter_ttl_and_removed(void)
{
	const uint64_t n = 4000;
	larder_config *cfg = th_config(16 * MiB);
	REQUIRE(cfg != NULL);
	th_clock_init(&clk, 1000000);
	CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	/* ids % 4: 0 never expires, 1 expires at +100, 2 at +1000, 3 removed. */
	for (uint64_t i = 0; i < n; i++)
		put_id(c, i, i % 4 == 1 ? 100 : i % 4 == 2 ? 1000 : LARDER_TTL_NEVER);
	for (uint64_t i = 3; i < n; i += 4)
		remove_id(c, i);
	th_clock_advance(&clk, 200);
	struct tally t;
	tally_init(&t, n);
	larder_iter *it;
	REQUIRE(larder_iter_open(c, &it) == LARDER_OK);
	uint64_t bad_ttl = 0;
	int rc;
	while ((rc = larder_iter_next(it, on_entry, &t)) == LARDER_OK) {
		if (t.last_ttl != LARDER_TTL_NEVER && t.last_ttl != 800)
			bad_ttl++;
	}
	CHECK_RC(rc, LARDER_MISS);
	larder_iter_close(it);
	CHECK_EQ(bad_ttl, 0);
	CHECK(!t.bad_value);
	uint64_t bad = 0;
	for (uint64_t i = 0; i < n; i++)
		bad += t.seen[i] != (i % 4 == 0 || i % 4 == 2 ? 1u : 0u);
	CHECK_EQ(bad, 0);
	free(t.seen);
	larder_close(c);
}

/* Keys 0..stable-1 stay; writes and removals of others between steps make
 * the index grow under the cursor, then come out again. index/scan.c SCAN-S1b
 * argues growth and shrink alike; no test here forces a shrink. */
static void test_iter_across_resize(void)
{
	const uint64_t stable = 5000, extra = 30000;
	/* One shard: over several, each first index holds its share of the
	 * 35,000 and none grows. */
	larder_config *cfg = th_config_one_shard(256 * MiB);
	REQUIRE(cfg != NULL);
	CHECK_RC(larder_config_set_expected_entries(cfg, 1), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	for (uint64_t i = 0; i < stable; i++)
		put_id(c, i, LARDER_TTL_NEVER);
	/* The resizes counted once the maintainer has grown the index for these
	 * (it counts one after it swaps the table in), here and at the end. */
	CHECK_EQ(th_quiesce(c, 60000), 0);
	uint64_t resizes0 = th_stat(c, LARDER_STAT_INDEX_RESIZES);
	struct tally t;
	tally_init(&t, stable);
	larder_iter *it;
	REQUIRE(larder_iter_open(c, &it) == LARDER_OK);
	uint64_t next_extra = stable;
	int growing = 1;
	int rc;
	while ((rc = larder_iter_next(it, on_entry, &t)) == LARDER_OK) {
		/* First the extras go in, 256 a step; then they come out again. */
		for (int j = 0; j < 256 && growing; j++) {
			put_id(c, next_extra++, LARDER_TTL_NEVER);
			growing = next_extra < stable + extra;
		}
		for (int j = 0; j < 256 && !growing && next_extra > stable; j++)
			remove_id(c, --next_extra);
	}
	CHECK_RC(rc, LARDER_MISS);
	larder_iter_close(it);
	CHECK_EQ(th_quiesce(c, 60000), 0);
	CHECK_GT(th_stat(c, LARDER_STAT_INDEX_RESIZES), resizes0);
	uint64_t bad = 0;
	for (uint64_t i = 0; i < stable; i++)
		bad += t.seen[i] != 1;
	CHECK_EQ(bad, 0);
	free(t.seen);
	larder_close(c);
}

static void test_iter_clear_midway(void)
{
	const uint64_t n = 20000;
	larder *c = th_open(th_config(64 * MiB));
	REQUIRE(c != NULL);
	for (uint64_t i = 0; i < n; i++)
		put_id(c, i, LARDER_TTL_NEVER);
	struct tally t;
	tally_init(&t, 2 * n);
	larder_iter *it;
	REQUIRE(larder_iter_open(c, &it) == LARDER_OK);
	for (int i = 0; i < 1000; i++)
		CHECK_RC(larder_iter_next(it, on_entry, &t), LARDER_OK);
	CHECK_RC(larder_clear(c), LARDER_OK);
	for (uint64_t i = n; i < n + 100; i++)
		put_id(c, i, LARDER_TTL_NEVER);
	uint64_t before = 0;
	for (uint64_t i = 0; i < n; i++)
		before += t.seen[i];
	CHECK_EQ(before, 1000);
	drain(it, &t);
	larder_iter_close(it);
	uint64_t after = 0, twice = 0;
	for (uint64_t i = 0; i < 2 * n; i++) {
		twice += t.seen[i] > 1;
		if (i < n)
			after += t.seen[i];
	}
	CHECK_EQ(twice, 0);
	CHECK_EQ(after, 1000); /* nothing cleared came back */
	free(t.seen);
	larder_close(c);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_iter_args),
		TH_TEST(test_iter_every_key_once),
		TH_TEST(test_iter_ttl_and_removed),
		TH_TEST(test_iter_across_resize),
		TH_TEST(test_iter_clear_midway),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
