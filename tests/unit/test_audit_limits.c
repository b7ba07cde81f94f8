/*
 * tests/unit/test_audit_limits.c - the memory a cache keeps beyond its
 * entries, against the bounds docs/limits.md ("Memory beyond the bound")
 * and docs/memory.md ("Where memory lives") give, with one shard and with
 * several.
 *
 * Found wrong and fixed here (SLAB-S10 in mem/slab.c): each shard's slab
 * kept at least one empty page of every page size and 1/K of the cache's
 * reserve, so that K shards kept up to K pages of each size where the docs
 * say the cache keeps 1/64 of its capacity per page size (at least one
 * page, at most 4 MiB): 17 MiB of empty pages for a 64 MiB cache at K = 4
 * and 50 MiB at K = 16, against 7 MiB (test_reserve_split_among_shards);
 * and each shard kept freed big slots resident up to the whole cache's
 * limit of them (1/16 of the capacity, at most 4 MiB) computed from its
 * 1/K share, 16 MiB at K = 4 (test_kept_slots_split_among_shards).
 * And the pages light writers share (SLAB-S8) stayed mapped, empty, after
 * a clear, one per class written and shard: 70 MiB for a 4 MiB cache at
 * K = 16, where docs/memory.md says a clear leaves the reserve, the
 * writers' own current pages and the index (test_clear_releases_shared_pages).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/cache.h"
#include "harness.h"
#include "mem/slab.h"

/* docs/memory.md's reserve: per page size 1/64 of the capacity, at most
 * 4 MiB, in whole pages, at least one. */
static uint64_t reserve_bound(uint64_t capacity)
{
	uint64_t share = capacity / 64 < 4 * MiB ? capacity / 64 : 4 * MiB, sum = 0;
	for (unsigned o = 0; o < LARDER__PAGE_ORDERS; o++) {
		uint64_t page = (uint64_t)LARDER__PAGE_MIN << o;
		sum += (share / page ? share / page : 1) * page;
	}
	return sum;
}

static larder *open_shards(uint64_t capacity, unsigned shards)
{
	larder_config *cfg = th_config(capacity);
	if (cfg && !CHECK_RC(larder_config_set_shards(cfg, shards), LARDER_OK)) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return cfg ? th_open(cfg) : NULL;
}

/*
 * Values from 100 B to 200 KiB, whose slots come from pages of every size
 * (64 KiB to 2 MiB), twice the capacity of them: evictions empty pages of
 * every size in every shard. After a clear every page but the writer's
 * current ones is empty, and the reserve keeps what the docs say; a
 * capacity cut lowers it at once.
 */
static void reserve_after_clear(unsigned shards)
{
	static const size_t lens[] = { 200 * 1024, 100 * 1024, 50 * 1024, 25 * 1024, 12 * 1024,
				       6 * 1024,   3000,       1000,      300,       100 };
	const uint64_t capacity = 64 * MiB;
	larder *c = open_shards(capacity, shards);
	unsigned char *v = calloc(1, 200 * 1024);
	REQUIRE(c != NULL && v != NULL);
	char key[16];
	uint64_t written = 0;
	for (unsigned i = 0; written < 2 * capacity; i++) {
		size_t len = lens[i % TH_COUNT(lens)];
		snprintf(key, sizeof(key), "k%u", i);
		if (!CHECK_RC(larder_put(c, key, strlen(key), v, len, LARDER_TTL_NEVER), LARDER_OK))
			break;
		written += len;
	}
	CHECK_RC(larder_clear(c), LARDER_OK);
	REQUIRE_EQ(th_quiesce(c, 60000), 0); /* the clear's walk and the unmapping done */
	uint64_t reserve = th_stat(c, LARDER_STAT_RESERVE_BYTES);
	printf("  %u shards: reserve after a clear %" PRIu64 " KiB (bound %" PRIu64 " KiB)\n",
	       shards, reserve / KiB, reserve_bound(capacity) / KiB);
	CHECK_LE(reserve, reserve_bound(capacity));
	CHECK_RC(larder_set_capacity(c, 8 * MiB), LARDER_OK);
	REQUIRE_EQ(th_quiesce(c, 60000), 0);
	CHECK_LE(th_stat(c, LARDER_STAT_RESERVE_BYTES), reserve_bound(8 * MiB));
	th_check_memory_audit(c);
	th_check_accounting(c, 60000, NULL, NULL);
	larder_close(c);
	free(v);
}

static void test_reserve_split_among_shards(void)
{
	reserve_after_clear(1);
	reserve_after_clear(4);
	reserve_after_clear(16);
}

/*
 * Freed slots of 64 KiB or more stay resident up to 1/16 of the capacity,
 * at most 4 MiB (docs/limits.md), for the cache: 200 values of 100 KiB
 * (112 KiB slots) over K shards, all removed, leave at most 4 MiB of them
 * kept in all the shards together.
 */
static void kept_after_removals(unsigned shards)
{
	enum { N = 200, VLEN = 100 * 1024 };
	larder *c = open_shards(256 * MiB, shards);
	unsigned char *v = calloc(1, VLEN);
	REQUIRE(c != NULL && v != NULL);
	char key[16];
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "big%d", i);
		CHECK_RC(larder_put(c, key, strlen(key), v, VLEN, LARDER_TTL_NEVER), LARDER_OK);
	}
	for (int i = 0; i < N; i++) {
		snprintf(key, sizeof(key), "big%d", i);
		CHECK_RC(larder_remove(c, key, strlen(key)), LARDER_OK);
	}
	REQUIRE_EQ(th_quiesce(c, 60000), 0);
	uint64_t kept = 0;
	for (unsigned i = 0; i < shards; i++)
		kept += larder__slab_kept_bytes(&c->shard[i].slab);
	printf("  %u shards: %" PRIu64 " KiB of freed big slots kept\n", shards, kept / KiB);
	CHECK_LE(kept, 4 * MiB);
	CHECK_GT(kept, 0);
	th_check_memory_audit(c);
	larder_close(c);
	free(v);
}

static void test_kept_slots_split_among_shards(void)
{
	kept_after_removals(1);
	kept_after_removals(4);
}

/*
 * docs/memory.md, "How memory goes back": what stays mapped after a clear is
 * the reserve, each live writer thread's current page of every class it
 * wrote, and the empty index. A writer that wrote fewer than 32 entries of
 * each class (per shard) has no page of its own: its entries went into the
 * pages the cache's writers share, which must go back too.
 */
static void clear_light_writer(unsigned shards)
{
	larder *c = open_shards(4 * MiB, shards);
	unsigned char *v = calloc(1, 200 * 1024);
	REQUIRE(c != NULL && v != NULL);
	char key[16];
	/* 8 entries of each of 12 classes (100 B to 200 KiB) per shard: light */
	for (unsigned i = 0; i < 8 * 12 * shards; i++) {
		size_t len = (size_t)100 << (i % 12);
		snprintf(key, sizeof(key), "l%u", i);
		CHECK_RC(larder_put(c, key, strlen(key), v, len < 200 * 1024 ? len : 200 * 1024,
				    LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	CHECK_RC(larder_clear(c), LARDER_OK);
	REQUIRE_EQ(th_quiesce(c, 60000), 0);
	uint64_t pages = 0, cls[LARDER_CLASS_STAT_COUNT];
	for (size_t k = 0; k < larder_size_class_count(); k++)
		if (CHECK_RC(larder_stats_size_class(c, k, cls, LARDER_CLASS_STAT_COUNT), LARDER_OK))
			pages += cls[LARDER_CLASS_PAGES];
	uint64_t mapped = th_stat(c, LARDER_STAT_PAGES_MAPPED);
	printf("  %u shards: after a clear %" PRIu64 " class pages, %" PRIu64
	       " KiB mapped, %" PRIu64 " KiB of it the reserve\n",
	       shards, pages, mapped / KiB, th_stat(c, LARDER_STAT_RESERVE_BYTES) / KiB);
	CHECK_EQ(pages, 0);
	CHECK_EQ(mapped, th_stat(c, LARDER_STAT_RESERVE_BYTES));
	CHECK_LE(mapped, reserve_bound(4 * MiB));
	/* and the shared pages come back for the next light writes */
	for (unsigned i = 0; i < 12; i++) {
		snprintf(key, sizeof(key), "m%u", i);
		CHECK_RC(larder_put(c, key, strlen(key), v, (size_t)100 << i, LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	th_check_memory_audit(c);
	th_check_accounting(c, 60000, NULL, NULL);
	larder_close(c);
	free(v);
}

static void test_clear_releases_shared_pages(void)
{
	clear_light_writer(1);
	clear_light_writer(16);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_reserve_split_among_shards),
		TH_TEST(test_kept_slots_split_among_shards),
		TH_TEST(test_clear_releases_shared_pages),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
