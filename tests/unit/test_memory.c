/*
 * tests/unit/test_memory.c - capacity, eviction, index growth, out of memory.
 *
 * Invariants checked (docs/architecture.md invariants 4 and 5, larder.h):
 *   TMEMORY-M1. once the maintainer is idle, used bytes <= capacity, and the counters
 *       (entries, used bytes) equal a full walk of the index;
 *   TMEMORY-M2. every distinct key written is either still readable with its own
 *       value or was evicted: entries + evictions == keys written;
 *   TMEMORY-M3. set_capacity() shrinking evicts down to the new capacity;
 *   TMEMORY-M4. the index grows past its hint with no entry lost (resizes counted);
 *   TMEMORY-M5. a refused mapping fails the write with LARDER_ENOMEM, leaves the key's
 *       previous value and every other entry intact, and the cache works
 *       again once mappings succeed; a failed open leaks nothing;
 *   TMEMORY-M6. close() returns every mapped byte.
 *   TMEMORY-M7. the memory audit adds up (larder_stats_size_class): each class's used
 *       slots are the entries of that slot size, used bytes over classes plus
 *       large mappings equal LARDER_STAT_USED_BYTES, and PAGES_MAPPED equals
 *       class pages + reserve + pages being unmapped + large mappings;
 *   TMEMORY-M8. clear() gives every page back to the OS but the bounded reserve, and
 *       the process RSS falls by what was unmapped; shrinking the capacity
 *       gives back the pages its evictions emptied.
 *   TMEMORY-M9. the index shrinks when it is sparse (TABLE-L3 in index/table.h): after a
 *       capacity cut to below 1/8 of its slots and after a clear, its bytes
 *       fall, no further than its floor, to a size holding the entries at no
 *       more than half load; every entry left is still found with its value,
 *       and the index grows again as keys come back.
 *   TMEMORY-M10. the walk that empties a cleared index (maint/maintainer.c) reports
 *       every entry, large ones included, to the listener exactly once as
 *       CLEARED, in address order (a run per 64 KiB block), or in hash order
 *       when the mappings for its sort fail; either way the accounting, the
 *       audit and the pages given back hold, and a close in the middle of
 *       the walk leaks no mapping.
 *   TMEMORY-M11. pages mapped one after another share kernel areas (the count of
 *       mappings stays far below vm.max_map_count at 8 GiB of 64 KiB pages).
 *   TMEMORY-M12. the default policy's tuner stays small when the cache holds far
 *       more entries than it was opened for (evict/tuner.c TUNER-T3): RSS grows
 *       by little more than the cache's pages and index.
 *   TMEMORY-M14. slab pages carved from huge-page chunks (mem/pages.c) are each
 *       aligned to their size, zero-filled, disjoint, in an area advised
 *       MADV_HUGEPAGE, and counted exactly: mapped bytes rise by the pages handed
 *       out and fall back when they are unmapped, with sizes mixed so that
 *       pages are skipped for alignment and chunks run out; the same with the
 *       chunks switched off (LARDER_SLAB_HUGEPAGE=0).
 *   TMEMORY-M16. many writer threads alive at once, each writing a few entries of
 *       many size classes, share pages (SLAB-S8 in mem/slab.c): the pages
 *       mapped stay a few per class and shard, not one per class and thread.
 *   TMEMORY-M17. a class's used slots are its live entries from the moment the
 *       maintainer applies a replace or a remove, not from when the old slot
 *       is freed after its grace period (larder.h): with a reader parked in a
 *       read section, so that nothing retired can be freed, overwrites of the
 *       same size leave the count, and removals lower it at once.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/cache.h"
#include "core/entry.h"
#include "core/hash.h"
#include "harness.h"
#include "index/table.h"
#include "mem/pages.h"
#include "mem/slab.h"

static void make_value(unsigned char *v, size_t len, uint64_t id)
{
	uint64_t x = th_mix64(id);

	for (size_t i = 0; i < len; i++) {
		if (i % 8 == 0)
			x = th_mix64(x + i);
		v[i] = (unsigned char)(x >> ((i % 8) * 8));
	}
}

/* key id -> OK with its value, or MISS; returns 1 if present. */
static int check_key(larder *cache, uint64_t id, size_t vlen)
{
	char key[32];
	unsigned char *buf = malloc(vlen + 1), *want = malloc(vlen + 1);
	size_t len = 0;
	int rc, present = 0;

	if (!CHECK(buf != NULL && want != NULL))
		goto out;
	snprintf(key, sizeof(key), "key-%" PRIu64, id);
	rc = larder_get(cache, key, strlen(key), buf, vlen + 1, &len);
	if (rc == LARDER_OK) {
		present = 1;
		make_value(want, vlen, id);
		if (len != vlen || memcmp(buf, want, vlen) != 0)
			th_fail(__FILE__, __LINE__, "%s: wrong value", key);
	} else if (rc != LARDER_MISS) {
		th_fail(__FILE__, __LINE__, "get(%s) = %d (%s)", key, rc, larder_strerror(rc));
	}
out:
	free(buf);
	free(want);
	return present;
}

static int put_key(larder *cache, uint64_t id, size_t vlen)
{
	char key[32];
	unsigned char *v = malloc(vlen ? vlen : 1);
	int rc;

	if (!CHECK(v != NULL))
		return LARDER_ENOMEM;
	snprintf(key, sizeof(key), "key-%" PRIu64, id);
	make_value(v, vlen, id);
	rc = larder_put(cache, key, strlen(key), v, vlen, LARDER_TTL_NEVER);
	free(v);
	return rc;
}

/* Removes key-<id>, put by put_key(). */
static int remove_key(larder *cache, uint64_t id)
{
	char key[32];
	snprintf(key, sizeof(key), "key-%" PRIu64, id);
	return larder_remove(cache, key, strlen(key));
}

/* get_with callback: notes where the value is stored. */
static void note_addr_fn(void *ctx, const void *value, size_t value_len)
{
	(void)value_len;
	*(unsigned char **)ctx = (unsigned char *)value;
}

static larder *open_config(larder_config *config, uint64_t expected)
{
	if (config == NULL)
		return NULL;
	CHECK_RC(larder_config_set_expected_entries(config, expected), LARDER_OK);
	/* generous: a slow maintainer under sanitizers must not turn into EBUSY */
	CHECK_RC(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS), LARDER_OK);
	return th_open(config);
}

static larder *open_sized(uint64_t capacity, uint64_t expected)
{
	return open_config(th_config(capacity), expected);
}

/* For the tests of one shard's index or slab (th_config_one_shard). */
static larder *open_one_shard(uint64_t capacity, uint64_t expected)
{
	return open_config(th_config_one_shard(capacity), expected);
}

static void test_eviction_keeps_capacity(void)
{
	enum { VLEN = 1000 };
	const uint64_t capacity = MiB;
	const uint64_t n = 10 * capacity / VLEN; /* ten times the capacity */
	uint64_t mapped = larder__test_mapped_bytes();
	larder *cache = open_sized(capacity, 1024);
	uint64_t entries = 0, bytes = 0, present = 0;

	REQUIRE(cache != NULL);
	for (uint64_t id = 0; id < n; id++)
		if (!CHECK_RC(put_key(cache, id, VLEN), LARDER_OK))
			break;
	th_check_accounting(cache, 60000, &entries, &bytes);
	CHECK_LE(bytes, capacity);
	CHECK_LE(th_stat(cache, LARDER_STAT_USED_BYTES), capacity);
	CHECK_GT(th_stat(cache, LARDER_STAT_EVICTIONS), 0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_EVICTIONS) + entries, n);
	/* evicting far below capacity would be a bug too (a cache that forgets) */
	CHECK_GE(bytes, capacity / 4);
	for (uint64_t id = 0; id < n; id++)
		present += (uint64_t)check_key(cache, id, VLEN);
	CHECK_EQ(present, entries);
	larder_close(cache);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
}

/* Every policy keeps the same accounting promises (they share one interface). */
static void test_eviction_every_policy(void)
{
	static const enum larder_policy policies[] = {
		LARDER_POLICY_DEFAULT, LARDER_POLICY_S3FIFO,   LARDER_POLICY_FIFO,
		LARDER_POLICY_LRU,     LARDER_POLICY_WTINYLFU, LARDER_POLICY_ARC,
	};
	const uint64_t capacity = MiB, n = 8000;

	for (size_t p = 0; p < TH_COUNT(policies); p++) {
		larder_config *config = th_config(capacity);
		larder *cache;
		uint64_t entries = 0, bytes = 0, present = 0;

		REQUIRE(config != NULL);
		CHECK_RC(larder_config_set_policy(config, policies[p]), LARDER_OK);
		CHECK_RC(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS), LARDER_OK);
		cache = th_open(config);
		if (!CHECK(cache != NULL))
			continue;
		for (uint64_t id = 0; id < n; id++) {
			if (!CHECK_RC(put_key(cache, id % (n / 2), 500 + id % 1000), LARDER_OK))
				break;
			if (id % 3 == 0) /* some hits for the policies that count them */
				(void)check_key(cache, id / 2 % (n / 2), 500 + id / 2 % (n / 2) % 1000);
		}
		th_check_accounting(cache, 60000, &entries, &bytes);
		if (!CHECK_LE(bytes, capacity))
			printf("  policy %d\n", (int)policies[p]);
		CHECK_GT(th_stat(cache, LARDER_STAT_EVICTIONS), 0);
		CHECK_GE(bytes, capacity / 4);
		for (uint64_t id = 0; id < n / 2; id++) {
			char key[32];
			snprintf(key, sizeof(key), "key-%" PRIu64, id);
			present += larder_contains(cache, key, strlen(key)) == LARDER_OK;
		}
		CHECK_EQ(present, entries);
		larder_close(cache);
	}
}

/* Mixed sizes, including large entries (over the biggest size class). */
static void test_eviction_mixed_sizes(void)
{
	const uint64_t capacity = 8 * MiB;
	larder_config *config = th_config(capacity);
	larder *cache;
	uint64_t entries = 0, bytes = 0, present = 0, n = 0;
	struct th_rng rng = {42};
	static size_t lens[3000];

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_max_value_bytes(config, MiB), LARDER_OK);
	CHECK_RC(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS), LARDER_OK);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	for (n = 0; n < TH_COUNT(lens); n++) {
		uint64_t r = th_rng_below(&rng, 100);
		lens[n] = r < 2 ? (size_t)(512 * KiB + th_rng_below(&rng, 448 * KiB))
			  : r < 20 ? (size_t)th_rng_below(&rng, 64 * KiB)
				   : (size_t)th_rng_below(&rng, 2048);
		if (!CHECK_RC(put_key(cache, n, lens[n]), LARDER_OK))
			break;
	}
	th_check_accounting(cache, 60000, &entries, &bytes);
	CHECK_LE(bytes, capacity);
	CHECK_GT(th_stat(cache, LARDER_STAT_EVICTIONS), 0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_EVICTIONS) + entries, n);
	for (uint64_t id = 0; id < n; id++)
		present += (uint64_t)check_key(cache, id, lens[id]);
	CHECK_EQ(present, entries);
	larder_close(cache);
}

/* The minimum capacity works. */
static void test_minimum_capacity(void)
{
	larder *cache = open_sized(64 * KiB, 16);
	uint64_t bytes = 0;

	REQUIRE(cache != NULL);
	for (uint64_t id = 0; id < 2000; id++)
		if (!CHECK_RC(put_key(cache, id, 100 + id % 900), LARDER_OK))
			break;
	th_check_accounting(cache, 60000, NULL, &bytes);
	CHECK_LE(bytes, 64 * KiB);
	CHECK_GT(bytes, 0);
	larder_close(cache);
}

static void test_set_capacity_shrink(void)
{
	enum { VLEN = 2000 };
	larder *cache = open_sized(8 * MiB, 4096);
	uint64_t entries = 0, bytes = 0, present = 0, evict0;
	const uint64_t n = 5 * MiB / VLEN;

	REQUIRE(cache != NULL);
	for (uint64_t id = 0; id < n; id++)
		if (!CHECK_RC(put_key(cache, id, VLEN), LARDER_OK))
			break;
	th_check_accounting(cache, 60000, &entries, &bytes);
	evict0 = th_stat(cache, LARDER_STAT_EVICTIONS);
	CHECK_EQ(evict0, 0); /* 5 MiB of data (with headers and rounding) fit in 8 MiB */
	CHECK_GT(bytes, 4 * MiB);

	CHECK_RC(larder_set_capacity(cache, MiB), LARDER_OK);
	CHECK_EQ(th_stat(cache, LARDER_STAT_CAPACITY_BYTES), MiB);
	th_check_accounting(cache, 60000, &entries, &bytes);
	CHECK_LE(bytes, MiB);
	CHECK_GT(th_stat(cache, LARDER_STAT_EVICTIONS), evict0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_EVICTIONS) + entries, n);
	for (uint64_t id = 0; id < n; id++)
		present += (uint64_t)check_key(cache, id, VLEN);
	CHECK_EQ(present, entries);

	/* writes go on within the new capacity ... */
	for (uint64_t id = n; id < n + 2000; id++)
		if (!CHECK_RC(put_key(cache, id, VLEN), LARDER_OK))
			break;
	th_check_accounting(cache, 60000, NULL, &bytes);
	CHECK_LE(bytes, MiB);
	/* ... and growing it back lets the cache fill up again */
	CHECK_RC(larder_set_capacity(cache, 8 * MiB), LARDER_OK);
	for (uint64_t id = n + 2000; id < n + 5000; id++)
		if (!CHECK_RC(put_key(cache, id, VLEN), LARDER_OK))
			break;
	th_check_accounting(cache, 60000, NULL, &bytes);
	CHECK_GT(bytes, 4 * MiB);
	CHECK_LE(bytes, 8 * MiB);
	larder_close(cache);
}

/* 200k keys (50k under TSan: still 12 doublings) into an index sized for
 * 16: it grows, nothing is lost. */
static void test_index_growth(void)
{
	const uint64_t N = TH_TSAN ? 50000 : 200000;
	larder *cache = open_sized(64 * MiB, 16);
	uint64_t slots0, entries = 0, missing = 0;

	REQUIRE(cache != NULL);
	slots0 = th_stat(cache, LARDER_STAT_INDEX_SLOTS);
	for (uint64_t id = 0; id < N; id++)
		if (!CHECK_RC(put_key(cache, id, 8), LARDER_OK))
			break;
	/* readable at once, while the maintainer may still be growing the index */
	for (uint64_t id = 0; id < N; id++)
		missing += (uint64_t)!check_key(cache, id, 8);
	CHECK_EQ(missing, 0);
	th_check_accounting(cache, 30000, &entries, NULL);
	CHECK_EQ(entries, N);
	CHECK_EQ(th_stat(cache, LARDER_STAT_EVICTIONS), 0);
	CHECK_GT(th_stat(cache, LARDER_STAT_INDEX_RESIZES), 0);
	CHECK_GE(th_stat(cache, LARDER_STAT_INDEX_SLOTS), N);
	CHECK_GT(th_stat(cache, LARDER_STAT_INDEX_SLOTS), slots0);
	missing = 0;
	for (uint64_t id = 0; id < N; id++)
		missing += (uint64_t)!check_key(cache, id, 8);
	CHECK_EQ(missing, 0);
	/* remove every other key: the rest stay reachable */
	for (uint64_t id = 0; id < N; id += 2)
		CHECK_RC(remove_key(cache, id), LARDER_OK);
	missing = 0;
	for (uint64_t id = 1; id < N; id += 2)
		missing += (uint64_t)!check_key(cache, id, 8);
	CHECK_EQ(missing, 0);
	th_check_accounting(cache, 30000, &entries, NULL);
	CHECK_EQ(entries, N / 2);
	larder_close(cache);
}

struct grow_reader {
	larder *cache;
	_Atomic int *stop;
	/* Written by the reader only; polled by the main thread (relaxed: a
	 * count, nothing is published through it). */
	_Atomic uint64_t reads;
	uint64_t misses, seed;
};

#define GROW_READERS 3

/* Whether each of n readers has read since `since`. */
struct readers_mark {
	struct grow_reader *r;
	unsigned n;
	uint64_t since[GROW_READERS];
};

static int readers_read(void *arg)
{
	struct readers_mark *k = arg;
	for (unsigned i = 0; i < k->n; i++)
		if (atomic_load_explicit(&k->r[i].reads, memory_order_relaxed) <= k->since[i])
			return 0;
	return 1;
}

/* Waits (60 s at most) until each of n (<= GROW_READERS) readers has read again. */
static void wait_readers(struct grow_reader *r, unsigned n)
{
	struct readers_mark k = { r, n, {0} };
	for (unsigned i = 0; i < n; i++)
		k.since[i] = atomic_load_explicit(&r[i].reads, memory_order_relaxed);
	CHECK(th_wait_until(readers_read, &k, 60000));
}

static void *grow_reader_thread(void *arg)
{
	struct grow_reader *r = arg;
	struct th_rng rng = {r->seed};

	while (!atomic_load_explicit(r->stop, memory_order_relaxed)) {
		uint64_t id = th_rng_below(&rng, 1000);
		char key[32];

		/* check_key() fails the test on a wrong value; a miss is counted */
		r->misses += (uint64_t)!check_key(r->cache, 5000000 + id, 24);
		snprintf(key, sizeof(key), "key-%" PRIu64, 5000000 + id);
		r->misses += larder_contains(r->cache, key, strlen(key)) != LARDER_OK;
		atomic_fetch_add_explicit(&r->reads, 2, memory_order_relaxed); /* a count */
	}
	return NULL;
}

/* Readers never miss a present key while the index grows under them (each
 * of them seen reading before the writes that grow it and after them, before
 * the growth is waited for: however a loaded machine schedules them). */
static void test_growth_concurrent_reads(void)
{
	enum { READERS = GROW_READERS };
	/* several growths of every shard's index */
	const uint64_t N = (TH_TSAN ? 20000 : TH_ASAN ? 60000 : 150000) * (uint64_t)th_shards();
	larder *cache = open_sized(64 * MiB, 16);
	struct grow_reader r[READERS];
	pthread_t ids[READERS];
	_Atomic int stop;
	uint64_t reads = 0, misses = 0;

	REQUIRE(cache != NULL);
	atomic_init(&stop, 0);
	for (uint64_t id = 0; id < 1000; id++)
		CHECK_RC(put_key(cache, 5000000 + id, 24), LARDER_OK);
	for (int i = 0; i < READERS; i++) {
		r[i] = (struct grow_reader){cache, &stop, 0, 0, (uint64_t)i + 1};
		REQUIRE(pthread_create(&ids[i], NULL, grow_reader_thread, &r[i]) == 0);
	}
	wait_readers(r, READERS);
	for (uint64_t id = 0; id < N; id++) {
		if (!CHECK_RC(put_key(cache, id, 8), LARDER_OK))
			break;
		if (id % 16 == 0) /* overwrite a stable key with its same value */
			CHECK_RC(put_key(cache, 5000000 + id / 16 % 1000, 24), LARDER_OK);
	}
	wait_readers(r, READERS);
	CHECK_EQ(th_quiesce(cache, 30000), 0);
	atomic_store(&stop, 1);
	for (int i = 0; i < READERS; i++) {
		pthread_join(ids[i], NULL);
		reads += atomic_load(&r[i].reads);
		misses += r[i].misses;
	}
	printf("  %" PRIu64 " reads during growth, %" PRIu64 " resizes\n", reads,
	       th_stat(cache, LARDER_STAT_INDEX_RESIZES));
	CHECK_EQ(misses, 0);
	CHECK_GT(reads, 0);
	/* stat-exact: quiesced above; the threads joined since only read */
	CHECK_GT(th_stat(cache, LARDER_STAT_INDEX_RESIZES), 1);
	th_check_accounting(cache, 30000, NULL, NULL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), N + 1000);
	larder_close(cache);
}

/*
 * clear() while the index is still growing (a migration in flight). The
 * first round of each cache grows from the smallest index, so a fresh cache
 * per round makes a clear that lands mid-migration likely, not certain.
 */
static void test_clear_during_growth(void)
{
	enum { CACHES = 4, ROUNDS = 3 };
	/* Under TSan a quarter: the writers wait for each growth, which TSan
	 * and a loaded machine stretch most (1,200 s at load 50 in a CI run). */
	const uint64_t N = TH_TSAN ? 5000 : 20000, STEP = TH_TSAN ? 1750 : 7000;

	for (int ci = 0; ci < CACHES; ci++) {
		larder *cache = open_sized(64 * MiB, 16);
		uint64_t entries = 0, bytes = 0;
		uint64_t n = N + (uint64_t)ci * STEP; /* stop at different points of a growth */

		REQUIRE(cache != NULL);
		for (int round = 0; round < ROUNDS; round++) {
			for (uint64_t id = 0; id < n; id++)
				if (!CHECK_RC(put_key(cache, id, 16), LARDER_OK))
					break;
			CHECK_RC(larder_clear(cache), LARDER_OK);
			CHECK_EQ(check_key(cache, 0, 16) + check_key(cache, n - 1, 16), 0);
			CHECK_RC(put_key(cache, 7, 16), LARDER_OK);
			CHECK_EQ(check_key(cache, 7, 16), 1);
		}
		th_check_accounting(cache, 30000, &entries, &bytes);
		CHECK_EQ(entries, 1);
		CHECK_EQ(check_key(cache, 7, 16), 1);
		CHECK_EQ(check_key(cache, 8, 16), 0);
		/* every entry of a table cleared mid-growth leaves as CLEARED, not EVICTED */
		CHECK_EQ(th_stat(cache, LARDER_STAT_CLEARED), ROUNDS * n);
		CHECK_EQ(th_stat(cache, LARDER_STAT_REPLACEMENTS), ROUNDS - 1); /* key 7 */
		CHECK_EQ(th_stat(cache, LARDER_STAT_EVICTIONS), 0);
		larder_close(cache);
	}
}

/*
 * Keys aimed at one home bucket (white box: the hash is core/hash.h with the
 * seed th_config() fixes, and the home is its low bits): more of them than
 * the probe limit reaches, so writers must wait for the index to grow until
 * they spread. Every key must end up stored and readable.
 */
static void test_home_bucket_collisions(void)
{
	enum { N = 1200 };
	static char keys[N][24];
	larder *cache = open_sized(64 * MiB, 16);
	uint64_t found = 0, want_low = 0, entries = 0;

	REQUIRE(cache != NULL);
	for (uint64_t i = 0; found < N; i++) {
		char k[24];
		snprintf(k, sizeof(k), "coll-%" PRIu64, i);
		uint64_t h = larder__hash(TH_HASH_SEED, k, strlen(k));
		/* Bits 36..47 pick the home in any table of up to 4096 buckets
		 * (larder__table_home scales bits 16..47). */
		if (found == 0)
			want_low = (h >> 36) & 4095;
		if (((h >> 36) & 4095) == want_low)
			memcpy(keys[found++], k, sizeof(k));
	}
	for (uint64_t i = 0; i < N; i++)
		if (!CHECK_RC(larder_put(cache, keys[i], strlen(keys[i]), &i, sizeof(i),
					 LARDER_TTL_NEVER),
			      LARDER_OK))
			break;
	for (uint64_t i = 0; i < N; i++) {
		uint64_t v = 0;
		size_t len = 0;
		CHECK_RC(larder_get(cache, keys[i], strlen(keys[i]), &v, sizeof(v), &len), LARDER_OK);
		CHECK(len == sizeof(v) && v == i);
	}
	th_check_accounting(cache, 30000, &entries, NULL);
	CHECK_EQ(entries, N);
	printf("  %d keys in one home bucket: %" PRIu64 " resizes, %" PRIu64 " write waits\n", N,
	       th_stat(cache, LARDER_STAT_INDEX_RESIZES), th_stat(cache, LARDER_STAT_WRITE_WAITS));
	for (uint64_t i = 0; i < N; i += 2)
		CHECK_RC(larder_remove(cache, keys[i], strlen(keys[i])), LARDER_OK);
	for (uint64_t i = 1; i < N; i += 2)
		CHECK_RC(larder_contains(cache, keys[i], strlen(keys[i])), LARDER_OK);
	th_check_accounting(cache, 30000, &entries, NULL);
	CHECK_EQ(entries, N / 2);
	larder_close(cache);
}

/* close() while the index is growing and a cleared table awaits its walk. */
static void test_close_mid_growth(void)
{
	uint64_t mapped = larder__test_mapped_bytes();
	const uint64_t N = TH_TSAN ? 15000 : 60000; /* see test_clear_during_growth */

	for (int round = 0; round < 3; round++) {
		larder *cache = open_sized(64 * MiB, 16);

		REQUIRE(cache != NULL);
		for (uint64_t id = 0; id < N; id++)
			if (!CHECK_RC(put_key(cache, id, 16), LARDER_OK))
				break;
		if (round == 1)
			CHECK_RC(larder_clear(cache), LARDER_OK);
		if (round == 2) {
			CHECK_RC(larder_clear(cache), LARDER_OK);
			for (uint64_t id = 0; id < N / 2; id++)
				CHECK_RC(put_key(cache, id, 16), LARDER_OK);
		}
		larder_close(cache); /* no quiesce: whatever is in flight must be freed */
		CHECK_EQ(larder__test_mapped_bytes(), mapped);
	}
}

/*
 * write_wait_ms = 0 means "never wait", not "fail while far from the bound":
 * EBUSY is documented as "over the memory bound and no room was freed in
 * time", so a roomy cache must accept every write, however fast they come.
 */
static void test_write_wait_zero_roomy(void)
{
	larder_config *config = th_config(64 * MiB);
	larder *cache;
	long busy = 0, first = -1;

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_write_wait_ms(config, 0), LARDER_OK);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	for (long i = 0; i < 50000; i++) {
		int rc = put_key(cache, (uint64_t)(i % 5000), 100);
		if (rc == LARDER_EBUSY) {
			busy++;
			if (first < 0)
				first = i;
		} else {
			CHECK_RC(rc, LARDER_OK);
		}
	}
	if (!CHECK_EQ(busy, 0))
		printf("  %ld of 50000 writes refused (first #%ld) with %" PRIu64
		       " bytes used of %" PRIu64 "\n",
		       busy, first, th_stat(cache, LARDER_STAT_USED_BYTES), 64 * MiB);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/* ENOMEM on a write: nothing changes, and the cache recovers. */
static void test_enomem_on_write(void)
{
	enum { PRE = 100, VLEN = 3000, MAX_NEW = 8000 };
	uint64_t mapped = larder__test_mapped_bytes();
	larder *cache = open_sized(64 * MiB, 100000);
	long failed_at = -1;
	unsigned char big[VLEN];
	char buf[64];
	size_t len;

	REQUIRE(cache != NULL);
	for (uint64_t id = 0; id < PRE; id++)
		CHECK_RC(put_key(cache, 1000000 + id, 16), LARDER_OK);
	CHECK_RC(larder_put(cache, "victim", 6, "small", 5, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);

	/* From now on page mappings fail: the first write that needs one fails. */
	larder__test_fail_mmap_after(0);
	for (long id = 0; id < MAX_NEW; id++) {
		int rc = put_key(cache, (uint64_t)id, VLEN);
		if (rc == LARDER_OK)
			continue;
		CHECK_RC(rc, LARDER_ENOMEM);
		failed_at = id;
		break;
	}
	if (!CHECK(failed_at >= 0)) {
		larder__test_fail_mmap_after(-1);
		larder_close(cache);
		return;
	}
	printf("  first refused write: #%ld\n", failed_at);
	CHECK_EQ(check_key(cache, (uint64_t)failed_at, VLEN), 0);
	/* the same size class is full: overwriting a key needs a page too */
	larder__test_fail_mmap_after(0);
	make_value(big, VLEN, 7);
	CHECK_RC(larder_put(cache, "victim", 6, big, VLEN, LARDER_TTL_NEVER), LARDER_ENOMEM);
	CHECK_RC(larder_get(cache, "victim", 6, buf, sizeof(buf), &len), LARDER_OK);
	CHECK(len == 5 && memcmp(buf, "small", 5) == 0);
	larder__test_fail_mmap_after(-1);

	/* everything written before is intact */
	for (uint64_t id = 0; id < PRE; id++)
		CHECK_EQ(check_key(cache, 1000000 + id, 16), 1);
	for (long id = 0; id < failed_at; id++)
		CHECK_EQ(check_key(cache, (uint64_t)id, VLEN), 1);
	/* and it works again */
	CHECK_RC(put_key(cache, (uint64_t)failed_at, VLEN), LARDER_OK);
	CHECK_EQ(check_key(cache, (uint64_t)failed_at, VLEN), 1);
	CHECK_RC(larder_put(cache, "victim", 6, big, VLEN, LARDER_TTL_NEVER), LARDER_OK);
	for (long id = failed_at + 1; id < failed_at + 1000; id++)
		CHECK_RC(put_key(cache, (uint64_t)id, VLEN), LARDER_OK);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
}

/* ENOMEM on a large entry (its own mapping). */
static void test_enomem_large_entry(void)
{
	larder_config *config = th_config(64 * MiB);
	larder *cache;
	unsigned char *big = malloc(4 * MiB);
	char buf[8];
	size_t len;

	REQUIRE(config != NULL && big != NULL);
	CHECK_RC(larder_config_set_max_value_bytes(config, 4 * MiB), LARDER_OK);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	memset(big, 0x11, 4 * MiB);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	larder__test_fail_mmap_after(0);
	CHECK_RC(larder_put(cache, "k", 1, big, 4 * MiB, LARDER_TTL_NEVER), LARDER_ENOMEM);
	larder__test_fail_mmap_after(-1);
	CHECK_RC(larder_get(cache, "k", 1, buf, sizeof(buf), &len), LARDER_OK);
	CHECK(len == 1 && buf[0] == 'v');
	CHECK_RC(larder_put(cache, "k", 1, big, 4 * MiB, LARDER_TTL_NEVER), LARDER_OK);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
	free(big);
}

/* Fault injection sweep over open(): every failure is clean. */
static void test_enomem_on_open(void)
{
	uint64_t mapped = larder__test_mapped_bytes();
	int opened = 0;

	for (long n = 0; n < 32 && !opened; n++) {
		larder_config *config = th_config(MiB);
		larder *cache = (larder *)config; /* garbage: a failed open must reset it */
		int rc;

		if (config == NULL)
			break;
		larder__test_fail_mmap_after(n);
		rc = larder_open(&cache, config);
		larder__test_fail_mmap_after(-1);
		larder_config_destroy(config);
		if (rc == LARDER_OK) {
			opened = 1;
			CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
			larder_close(cache);
		} else {
			CHECK_RC(rc, LARDER_ENOMEM);
			CHECK(cache == NULL);
		}
		CHECK_EQ(larder__test_mapped_bytes(), mapped);
	}
	CHECK(opened);
}

/*
 * Fault-injection sweep (SQLite style): the n-th page mapping fails, for each
 * n in turn, under a workload that maps slab pages, large entries and index
 * growths. Whichever mapping fails - a writer's or the maintainer's - every
 * write returns OK or ENOMEM, a refused write stores nothing, every accepted
 * one is readable, and the cache closes clean.
 */
static long enomem_sweep(int small_only, long runs)
{
	enum { N = 12000 };
	static const size_t sizes[] = {8, 100, 1000, 3000};
	static signed char ok[N];
	uint64_t mapped = larder__test_mapped_bytes();
	long refused_total = 0;

	for (long n = 0; n < runs; n++) {
		/* One shard: over four, each shard's first index holds its
		 * share of the N entries, and no growth meets the failure. */
		larder_config *config = th_config_one_shard(64 * MiB);
		larder *cache;
		long refused = 0, wrong = 0;

		if (!CHECK(config != NULL))
			break;
		CHECK_RC(larder_config_set_expected_entries(config, 16), LARDER_OK);
		CHECK_RC(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS), LARDER_OK);
		CHECK_RC(larder_config_set_max_value_bytes(config, 512 * KiB), LARDER_OK);
		cache = th_open(config);
		if (!CHECK(cache != NULL))
			break;
		larder__test_fail_mmap_after(n);
		for (uint64_t id = 0; id < N; id++) {
			size_t len = small_only ? 8 : id % 500 == 499 ? 300 * KiB : sizes[id % 4];
			int rc = put_key(cache, id, len);

			ok[id] = rc == LARDER_OK;
			if (rc == LARDER_ENOMEM)
				refused++;
			else if (!CHECK_RC(rc, LARDER_OK))
				break;
		}
		larder__test_fail_mmap_after(-1);
		for (uint64_t id = 0; id < N; id++) {
			size_t len = small_only ? 8 : id % 500 == 499 ? 300 * KiB : sizes[id % 4];
			wrong += check_key(cache, id, len) != ok[id];
		}
		CHECK_EQ(wrong, 0);
		CHECK_LE(refused, 1); /* one mapping failed: at most one write saw it */
		refused_total += refused;
		th_check_accounting(cache, 60000, NULL, NULL);
		CHECK_EQ(th_stat(cache, LARDER_STAT_EVICTIONS), 0);
		/* a growth whose mapping failed is retried: the index still grew */
		CHECK_GT(th_stat(cache, LARDER_STAT_INDEX_RESIZES), 0);
		if (getenv("SWEEP_VERBOSE"))
			printf("  n=%ld refused=%ld resizes=%" PRIu64 "\n", n, refused,
			       th_stat(cache, LARDER_STAT_INDEX_RESIZES));
		larder_close(cache);
		CHECK_EQ(larder__test_mapped_bytes(), mapped);
	}
	return refused_total;
}

static void test_enomem_sweep(void)
{
	const long runs = TH_TSAN ? 6 : 30; /* each run is 12000 writes */
	long writers = enomem_sweep(0, runs);

	printf("  mixed sizes: %ld of %ld injected failures reached a writer as ENOMEM\n", writers,
	       runs);
	CHECK_GT(writers, 0);
	/* small entries: few page mappings, so index growths are among the first */
	writers = enomem_sweep(1, 12);
	printf("  small entries: %ld of 12 injected failures reached a writer as ENOMEM\n",
	       writers);
	CHECK_LT(writers, 12); /* some failures hit the maintainer's growth */
}

/* clear() allocates the new index: when that fails, nothing is cleared. */
static void test_enomem_clear(void)
{
	larder *cache = open_sized(4 * MiB, 1024);
	uint64_t present = 0;
	int rc;

	REQUIRE(cache != NULL);
	for (uint64_t id = 0; id < 100; id++)
		CHECK_RC(put_key(cache, id, 10), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	larder__test_fail_mmap_after(0);
	rc = larder_clear(cache);
	larder__test_fail_mmap_after(-1);
	CHECK(rc == LARDER_OK || rc == LARDER_ENOMEM);
	printf("  clear with the next mapping failing: %d (%s)\n", rc, larder_strerror(rc));
	for (uint64_t id = 0; id < 100; id++)
		present += (uint64_t)check_key(cache, id, 10);
	CHECK_EQ(present, rc == LARDER_OK ? 0 : 100);
	CHECK_RC(larder_clear(cache), LARDER_OK);
	CHECK_EQ(check_key(cache, 5, 10), 0);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

struct pages_wait {
	larder *cache;
	uint64_t returned0;
};

static int pages_returned(void *p)
{
	struct pages_wait *w = p;

	(void)th_quiesce(w->cache, 60000);
	return th_stat(w->cache, LARDER_STAT_PAGES_RETURNED) - w->returned0 >= 16 * MiB;
}

/* Empty pages go back to the OS beyond a small reserve. */
static void test_pages_returned(void)
{
	struct pages_wait w;

	w.cache = open_sized(64 * MiB, 4096);
	REQUIRE(w.cache != NULL);
	for (uint64_t id = 0; id < 30000; id++)
		if (!CHECK_RC(put_key(w.cache, id, 1000), LARDER_OK))
			break;
	CHECK_EQ(th_quiesce(w.cache, 60000), 0);
	w.returned0 = th_stat(w.cache, LARDER_STAT_PAGES_RETURNED);
	CHECK_GE(th_stat(w.cache, LARDER_STAT_PAGES_MAPPED), 28 * MiB);
	CHECK_RC(larder_clear(w.cache), LARDER_OK);
	/* about 30 MiB of pages fell empty: all but a small reserve go back */
	if (!CHECK(th_wait_until(pages_returned, &w, 60000)))
		printf("  returned %" PRIu64 " bytes, mapped %" PRIu64 "\n",
		       th_stat(w.cache, LARDER_STAT_PAGES_RETURNED) - w.returned0,
		       th_stat(w.cache, LARDER_STAT_PAGES_MAPPED));
	th_check_accounting(w.cache, 60000, NULL, NULL);
	larder_close(w.cache);
}

/* ---- Memory audit and return (TMEMORY-M7, TMEMORY-M8) ------------------------------------ */

struct audit {
	uint64_t class_bytes, class_used_bytes, slots_used, class_pages;
};

/* Sums larder_stats_size_class() over every class, checking each one's shape. */
static struct audit audit_sum(larder *cache)
{
	struct audit a = { 0, 0, 0, 0 };
	uint64_t v[LARDER_CLASS_STAT_COUNT + 2], prev_slot = 0;

	for (size_t c = 0; c < larder_size_class_count(); c++) {
		if (!CHECK_RC(larder_stats_size_class(cache, c, v, TH_COUNT(v)), LARDER_OK))
			break;
		CHECK_GT(v[LARDER_CLASS_SLOT_BYTES], prev_slot);
		prev_slot = v[LARDER_CLASS_SLOT_BYTES];
		CHECK_EQ(v[LARDER_CLASS_BYTES], v[LARDER_CLASS_PAGES] * v[LARDER_CLASS_PAGE_BYTES]);
		CHECK_EQ(v[LARDER_CLASS_USED_BYTES],
			 v[LARDER_CLASS_SLOTS_USED] * v[LARDER_CLASS_SLOT_BYTES]);
		CHECK_LE((v[LARDER_CLASS_SLOTS_USED] + v[LARDER_CLASS_SLOTS_FREE]) *
				 v[LARDER_CLASS_SLOT_BYTES],
			 v[LARDER_CLASS_BYTES]);
		CHECK_EQ(v[LARDER_CLASS_STAT_COUNT], 0); /* past the known figures: zero */
		a.class_bytes += v[LARDER_CLASS_BYTES];
		a.class_used_bytes += v[LARDER_CLASS_USED_BYTES];
		a.slots_used += v[LARDER_CLASS_SLOTS_USED];
		a.class_pages += v[LARDER_CLASS_PAGES];
	}
	return a;
}

/* TMEMORY-M7 on a quiescent cache; returns the sums. */
static struct audit check_audit(larder *cache)
{
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	struct audit a = audit_sum(cache);
	CHECK_EQ(a.class_used_bytes + th_stat(cache, LARDER_STAT_LARGE_BYTES),
		 th_stat(cache, LARDER_STAT_USED_BYTES));
	CHECK_EQ(th_stat(cache, LARDER_STAT_RETURNING_BYTES), 0);
	CHECK_EQ(a.class_bytes + th_stat(cache, LARDER_STAT_RESERVE_BYTES) +
			 th_stat(cache, LARDER_STAT_LARGE_BYTES),
		 th_stat(cache, LARDER_STAT_PAGES_MAPPED));
	return a;
}

/* The figures of the class that holds an entry of key_len + value_len bytes. */
static void class_of_entry(larder *cache, size_t key_len, size_t value_len, uint64_t *v)
{
	unsigned c = larder__sizeclass_of(larder__entry_bytes(0, key_len, value_len));
	CHECK_RC(larder_stats_size_class(cache, c, v, LARDER_CLASS_STAT_COUNT), LARDER_OK);
}

static void test_audit_counters(void)
{
	uint64_t v[LARDER_CLASS_STAT_COUNT], none[2] = { 7, 7 };
	larder *cache = open_sized(16 * MiB, 1024);

	REQUIRE(cache != NULL);
	CHECK_EQ(larder_size_class_count(), LARDER__SIZECLASS_COUNT);
	CHECK_RC(larder_stats_size_class(NULL, 0, v, LARDER_CLASS_STAT_COUNT), LARDER_EINVAL);
	CHECK_RC(larder_stats_size_class(cache, LARDER__SIZECLASS_COUNT, v, 1), LARDER_EINVAL);
	CHECK_RC(larder_stats_size_class(cache, 0, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_stats_size_class(cache, 0, NULL, 0), LARDER_OK);
	CHECK_RC(larder_stats_size_class(cache, 0, none, 1), LARDER_OK);
	CHECK_EQ(none[0], LARDER__SLAB_MIN_SLOT);
	CHECK_EQ(none[1], 7); /* count 1: only the first figure written */
	for (int i = 0; i < LARDER_CLASS_STAT_COUNT; i++)
		CHECK(larder_class_stat_name((enum larder_class_stat)i) != NULL);
	CHECK(larder_class_stat_name(LARDER_CLASS_STAT_COUNT) == NULL);
	CHECK(larder_stat_name(LARDER_STAT_RETURNING_BYTES) != NULL);
	struct audit a = check_audit(cache);
	CHECK_EQ(a.slots_used, 0);

	/* keys "key-100".."key-239", "key-300".. are 7 bytes */
	for (uint64_t id = 100; id < 200; id++)
		CHECK_RC(put_key(cache, id, 10), LARDER_OK);
	for (uint64_t id = 200; id < 240; id++)
		CHECK_RC(put_key(cache, id, 1000), LARDER_OK);
	for (uint64_t id = 300; id < 303; id++)
		CHECK_RC(put_key(cache, id, 300 * 1024), LARDER_OK); /* above the largest class */
	a = check_audit(cache);
	CHECK_EQ(a.slots_used, 140);
	CHECK_EQ(th_stat(cache, LARDER_STAT_LARGE_BYTES),
		 3 * larder__slab_charge(larder__entry_bytes(0, 7, 300 * 1024)));
	class_of_entry(cache, 7, 10, v);
	CHECK_EQ(v[LARDER_CLASS_SLOTS_USED], 100);
	CHECK_GT(v[LARDER_CLASS_SLOTS_FREE], 0);
	CHECK_GE(v[LARDER_CLASS_PAGES], 1);
	class_of_entry(cache, 7, 1000, v);
	CHECK_EQ(v[LARDER_CLASS_SLOTS_USED], 40);

	for (uint64_t id = 100; id < 150; id++)
		CHECK_RC(remove_key(cache, id), LARDER_OK);
	a = check_audit(cache);
	CHECK_EQ(a.slots_used, 90);
	class_of_entry(cache, 7, 10, v);
	CHECK_EQ(v[LARDER_CLASS_SLOTS_USED], 50);
	larder_close(cache);
}

/* A reader parked inside a read section (a larder_get_with callback) until
 * released: nothing retired meanwhile is freed (TGRACE-G2). */
struct parked {
	larder *cache;
	struct th_event in, release;
	int released;
	int rc;
};

static void park_fn(void *ctx, const void *value, size_t value_len)
{
	struct parked *p = ctx;

	(void)value;
	(void)value_len;
	th_event_signal(&p->in);
	p->released = th_event_wait(&p->release, 120000);
}

static void *park_thread(void *arg)
{
	struct parked *p = arg;

	p->rc = larder_get_with(p->cache, "key-100", 7, park_fn, p);
	return NULL;
}

/* TMEMORY-M17: the class counts move when entries are replaced or removed. */
static void test_audit_counts_at_retire(void)
{
	uint64_t v[LARDER_CLASS_STAT_COUNT];
	larder *cache = open_sized(16 * MiB, 1024);
	struct parked p;
	pthread_t t;

	REQUIRE(cache != NULL);
	memset(&p, 0, sizeof(p));
	p.cache = cache;
	th_event_init(&p.in);
	th_event_init(&p.release);
	for (uint64_t id = 100; id < 200; id++)
		CHECK_RC(put_key(cache, id, 10), LARDER_OK);
	CHECK_EQ(check_audit(cache).slots_used, 100);
	REQUIRE(pthread_create(&t, NULL, park_thread, &p) == 0);
	REQUIRE(th_event_wait(&p.in, 60000));
	for (uint64_t id = 101; id < 200; id++) /* the maintainer's short path */
		CHECK_RC(put_key(cache, id, 10), LARDER_OK);
	CHECK_RC(put_key(cache, 100, 11), LARDER_OK); /* the general path, same class */
	CHECK_RC(larder_flush(cache, 60000 * TH_SLOW), LARDER_OK);
	class_of_entry(cache, 7, 10, v);
	/* 100 slots of the old values wait for the reader, counted free */
	CHECK_EQ(v[LARDER_CLASS_SLOTS_USED], 100);
	for (uint64_t id = 150; id < 160; id++)
		CHECK_RC(remove_key(cache, id), LARDER_OK);
	CHECK_RC(larder_flush(cache, 60000 * TH_SLOW), LARDER_OK);
	class_of_entry(cache, 7, 10, v);
	CHECK_EQ(v[LARDER_CLASS_SLOTS_USED], 90);
	th_event_signal(&p.release);
	REQUIRE(pthread_join(t, NULL) == 0);
	CHECK(p.released);
	CHECK_RC(p.rc, LARDER_OK);
	CHECK_EQ(check_audit(cache).slots_used, 90);
	th_event_destroy(&p.in);
	th_event_destroy(&p.release);
	larder_close(cache);
}

static uint64_t rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

/* Writes about `bytes` of 1..8 KiB values (several classes); returns the count. */
static uint64_t fill_mixed(larder *cache, uint64_t bytes)
{
	uint64_t id = 0;
	for (uint64_t written = 0; written < bytes; id++) {
		size_t vlen = 1000 + (size_t)(th_mix64(id) % 7000);
		if (!CHECK_RC(put_key(cache, id, vlen), LARDER_OK))
			break;
		written += vlen;
	}
	return id;
}

/* The reserve keeps at most 4 MiB of each page size (mem/slab.c). */
#define RESERVE_MAX ((uint64_t)LARDER__PAGE_ORDERS * 4 * MiB)

static void test_clear_returns_memory(void)
{
	larder *cache = open_sized(64 * MiB, 1024);

	REQUIRE(cache != NULL);
	fill_mixed(cache, 48 * MiB);
	check_audit(cache);
	uint64_t mapped0 = th_stat(cache, LARDER_STAT_PAGES_MAPPED);
	uint64_t returned0 = th_stat(cache, LARDER_STAT_PAGES_RETURNED);
	uint64_t seam0 = larder__test_mapped_bytes(), rss0 = rss_bytes();
	uint64_t index0 = th_stat(cache, LARDER_STAT_INDEX_BYTES);
	CHECK_GE(mapped0, 48 * MiB);
	CHECK_RC(larder_clear(cache), LARDER_OK);
	struct audit a = check_audit(cache); /* quiesce waits for the unmapping too */
	uint64_t mapped1 = th_stat(cache, LARDER_STAT_PAGES_MAPPED);
	CHECK_EQ(a.slots_used, 0);
	/* what stays: this thread's one current page per class (and shard) it
	 * wrote, and the reserve */
	CHECK_LE(a.class_pages, (uint64_t)LARDER__SIZECLASS_COUNT * th_shards());
	const uint64_t kept = 8 * MiB + (uint64_t)(th_shards() - 1) * MiB;
	CHECK_LE(a.class_bytes, kept);
	CHECK_EQ(mapped1, a.class_bytes + th_stat(cache, LARDER_STAT_RESERVE_BYTES));
	CHECK_LE(mapped1, kept + RESERVE_MAX);
	CHECK_EQ(th_stat(cache, LARDER_STAT_PAGES_RETURNED) - returned0, mapped0 - mapped1);
	/* the seam counts the index too, which starts again at its first size */
	uint64_t index1 = th_stat(cache, LARDER_STAT_INDEX_BYTES);
	CHECK_LE(index1, index0);
	CHECK_EQ(seam0 - larder__test_mapped_bytes(), mapped0 - mapped1 + index0 - index1);
	/* the unmapped pages had been written, so RSS falls by about as much */
	uint64_t rss1 = rss_bytes();
	printf("  clear: mapped %" PRIu64 " -> %" PRIu64 " KiB, RSS %" PRIu64 " -> %" PRIu64
	       " KiB\n", mapped0 / KiB, mapped1 / KiB, rss0 / KiB, rss1 / KiB);
	CHECK_LE(rss1 + (mapped0 - mapped1), rss0 + 8 * MiB);
	larder_close(cache);
}

static void test_shrink_returns_memory(void)
{
	larder *cache = open_sized(64 * MiB, 1024);

	REQUIRE(cache != NULL);
	fill_mixed(cache, 56 * MiB);
	check_audit(cache);
	uint64_t mapped0 = th_stat(cache, LARDER_STAT_PAGES_MAPPED);
	CHECK_RC(larder_set_capacity(cache, 8 * MiB), LARDER_OK);
	struct audit a = check_audit(cache);
	uint64_t mapped1 = th_stat(cache, LARDER_STAT_PAGES_MAPPED);
	printf("  shrink to 8 MiB: mapped %" PRIu64 " -> %" PRIu64 " KiB, class pages %" PRIu64
	       " KiB holding %" PRIu64 " KiB\n",
	       mapped0 / KiB, mapped1 / KiB, a.class_bytes / KiB, a.class_used_bytes / KiB);
	CHECK_LE(th_stat(cache, LARDER_STAT_USED_BYTES), 8 * MiB);
	/* FIFO eviction of one writer's entries leaves the newest pages full;
	 * each further shard keeps its own partly filled page per class (about
	 * 1 MiB a shard with these values: 10.2, 11.0, 12.9, 17.4 MiB of class
	 * pages at 1, 2, 4, 8 shards). */
	const uint64_t slack = 12 * MiB + (uint64_t)(th_shards() - 1) * 2 * MiB;
	CHECK_LE(a.class_bytes, slack);
	CHECK_LE(mapped1, slack + RESERVE_MAX);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/* The first table of a cache expecting 16 entries (MIN_TABLE_BUCKETS in
 * core/cache.c): the floor TMEMORY-M9's tests give a shrink. */
#define FIRST_BUCKETS 1024u

/* Puts keys [from, to) with 8-byte values and checks they all read back. */
static void put_range(larder *cache, uint64_t from, uint64_t to)
{
	uint64_t missing = 0;
	for (uint64_t id = from; id < to; id++)
		if (!CHECK_RC(put_key(cache, id, 8), LARDER_OK))
			return;
	for (uint64_t id = from; id < to; id++)
		missing += (uint64_t)!check_key(cache, id, 8);
	CHECK_EQ(missing, 0);
}

/* TMEMORY-M9 after a capacity cut: 100,000 entries grow the index to 16,384 buckets;
 * a cut to 256 KiB keeps a few thousand. With the floor at the first
 * table's size it shrinks; with the default floor (4 MiB of buckets) this
 * small table stays. */
static void index_after_cut(int lower_floor)
{
	enum { N = 100000 };
	larder *cache = open_one_shard(64 * MiB, 16);
	uint64_t entries = 0, present = 0;

	REQUIRE(cache != NULL);
	if (lower_floor)
		larder__test_index_floor(cache, FIRST_BUCKETS);
	uint64_t bytes0 = th_stat(cache, LARDER_STAT_INDEX_BYTES);
	put_range(cache, 0, N);
	th_check_accounting(cache, 30000, &entries, NULL);
	CHECK_EQ(entries, N);
	uint64_t bytes1 = th_stat(cache, LARDER_STAT_INDEX_BYTES);
	uint64_t slots1 = th_stat(cache, LARDER_STAT_INDEX_SLOTS);
	uint64_t grows = th_stat(cache, LARDER_STAT_INDEX_RESIZES);
	CHECK_EQ(slots1, 16384 * LARDER__BUCKET_SLOTS);
	CHECK_GT(bytes1, 8 * bytes0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_SHRINKS), 0);

	CHECK_RC(larder_set_capacity(cache, 256 * KiB), LARDER_OK);
	th_check_accounting(cache, 30000, &entries, NULL);
	uint64_t slots = th_stat(cache, LARDER_STAT_INDEX_SLOTS);
	uint64_t bytes = th_stat(cache, LARDER_STAT_INDEX_BYTES);
	printf("  %s floor: %" PRIu64 " entries; index %" PRIu64 " -> %" PRIu64 " slots, %" PRIu64
	       " -> %" PRIu64 " KiB\n",
	       lower_floor ? "lowered" : "default", entries, slots1, slots, bytes1 / KiB,
	       bytes / KiB);
	CHECK_GT(entries, 1000);
	CHECK_LT(entries * 8, slots1); /* the cut made it sparse */
	CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_RESIZES), grows);
	if (lower_floor) {
		CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_SHRINKS), 1);
		CHECK_LE(entries * 2, slots); /* at most half load */
		CHECK_GT(entries * 4, slots); /* and no bigger than needed */
		/* 6,553 to 8,192 survivors (40- or 32-byte slots: which ones the
		 * policy kept depends on the hit samples it got, i.e. on the
		 * maintainer's timing): 14,336 or 28,672 slots, a quarter or
		 * less than a third of the grown index */
		CHECK_LT(bytes * 3, bytes1);
	} else {
		CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_SHRINKS), 0);
		CHECK_EQ(slots, slots1);
	}
	/* Every entry left is found once, with its value (the walk agreed with
	 * the counters above; a key found twice would have failed it). */
	for (uint64_t id = 0; id < N; id++)
		present += (uint64_t)check_key(cache, id, 8);
	CHECK_EQ(present, entries);
	/* Room again: new keys are stored and the index grows back. */
	CHECK_RC(larder_set_capacity(cache, 64 * MiB), LARDER_OK);
	put_range(cache, N, 2 * N);
	th_check_accounting(cache, 30000, &entries, NULL);
	CHECK_EQ(entries, present + N);
	CHECK_GE(th_stat(cache, LARDER_STAT_INDEX_SLOTS) * 7, entries * 8);
	larder_close(cache);
}

static void test_index_shrinks_after_cut(void)
{
	index_after_cut(1);
	/* The default floor keeps the table: the same writes, cut and walk
	 * with no shrink beside them, which ThreadSanitizer (half of this
	 * test's 20 s of CPU there) would watch for nothing new. */
	if (!TH_TSAN)
		index_after_cut(0);
}

/* TMEMORY-M9 after clear: the index is back to its first size once the maintainer
 * is idle, and grows again as the cache refills. */
static void test_index_shrinks_after_clear(void)
{
	enum { N = 100000 };
	larder *cache = open_one_shard(64 * MiB, 16);
	uint64_t entries = 0;

	REQUIRE(cache != NULL);
	larder__test_index_floor(cache, FIRST_BUCKETS);
	uint64_t bytes0 = th_stat(cache, LARDER_STAT_INDEX_BYTES);
	for (int round = 0; round < 2; round++) {
		put_range(cache, 0, N);
		th_check_accounting(cache, 30000, &entries, NULL);
		CHECK_EQ(entries, N);
		CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_SLOTS), 16384 * LARDER__BUCKET_SLOTS);
		CHECK_RC(larder_clear(cache), LARDER_OK);
		th_check_accounting(cache, 30000, &entries, NULL);
		CHECK_EQ(entries, 0);
		CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_SLOTS),
			 FIRST_BUCKETS * LARDER__BUCKET_SLOTS);
		CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_BYTES), bytes0);
	}
	larder_close(cache);
}

/* ---- The clear walk (TMEMORY-M10) ----------------------------------------------------- */

#define WALK_KEYS 6000u

/* What the listener heard, on the maintainer; read after a quiesce (QUIESCE-Q3). */
struct walk_rec {
	unsigned calls[WALK_KEYS];
	uint64_t heard, other_causes, bad_keys;
	uint64_t runs;       /* listener calls whose value is in another 64 KiB than the last */
	uintptr_t last_block;
	uintptr_t lowest, highest; /* the values' addresses */
	uintptr_t blocks[WALK_KEYS]; /* each call's 64 KiB block, the first WALK_KEYS calls */
};

static int block_order(const void *a, const void *b)
{
	uintptr_t x = *(const uintptr_t *)a, y = *(const uintptr_t *)b;
	return x < y ? -1 : x > y;
}

/* How many 64 KiB blocks the first n calls' values lay in. */
static uint64_t distinct_blocks(struct walk_rec *r, uint64_t n)
{
	uint64_t d = 0;
	qsort(r->blocks, n, sizeof(r->blocks[0]), block_order);
	for (uint64_t i = 0; i < n; i++)
		d += i == 0 || r->blocks[i] != r->blocks[i - 1];
	return d;
}

static void walk_listener(void *ctx, const void *key, size_t key_len, const void *value,
			  size_t value_len, enum larder_cause cause)
{
	struct walk_rec *r = ctx;
	char buf[32];
	unsigned long id;
	uintptr_t block = (uintptr_t)value >> 16;

	(void)value_len;
	if (cause != LARDER_CAUSE_CLEARED) {
		r->other_causes++;
		return;
	}
	if (r->heard < WALK_KEYS)
		r->blocks[r->heard] = block;
	r->heard++;
	if (block != r->last_block)
		r->runs++;
	r->last_block = block;
	if (!r->lowest || (uintptr_t)value < r->lowest)
		r->lowest = (uintptr_t)value;
	if ((uintptr_t)value > r->highest)
		r->highest = (uintptr_t)value;
	if (key_len >= sizeof(buf)) {
		r->bad_keys++;
		return;
	}
	memcpy(buf, key, key_len);
	buf[key_len] = 0;
	if (sscanf(buf, "key-%lu", &id) != 1 || id >= WALK_KEYS) {
		r->bad_keys++;
		return;
	}
	r->calls[id]++;
}

static larder *open_walk(struct walk_rec *r)
{
	/* One shard: clear_walk_case's failure ordinals count the mappings
	 * after the clear's own, and a clear of K shards maps K indexes. */
	larder_config *config = th_config_one_shard(64 * MiB);

	if (config == NULL)
		return NULL;
	CHECK_RC(larder_config_set_expected_entries(config, 1024), LARDER_OK);
	CHECK_RC(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS), LARDER_OK);
	CHECK_RC(larder_config_set_removal_listener(config, walk_listener, r), LARDER_OK);
	return th_open(config);
}

/* Entries [from, to) of WALK_KEYS, 1..8 KiB, every 100th above the slab's largest slot. */
static uint64_t fill_walk_range(larder *cache, uint64_t from, uint64_t to)
{
	uint64_t n = 0;
	for (uint64_t id = from; id < to; id++) {
		size_t vlen = id % 100 == 0 ? 300 * KiB : 1000 + (size_t)(th_mix64(id) % 7000);
		n += (uint64_t)CHECK_RC(put_key(cache, id, vlen), LARDER_OK);
	}
	return n;
}

static uint64_t fill_walk(larder *cache)
{
	return fill_walk_range(cache, 0, WALK_KEYS);
}

/*
 * fail_at: -1 for the sorted walk; 1 or 2 to fail the maintainer's first or
 * second mapping after the clear's own new index (the sort's key counts, its
 * order array), which sends the walk down the hash-order path. gap: bytes
 * of address space taken (PROT_NONE) after the first half of the entries,
 * which the mappings of the second half then lie beyond.
 */
static void clear_walk_case(long fail_at, size_t gap)
{
	struct walk_rec *r = calloc(1, sizeof(*r));
	REQUIRE(r != NULL);
	larder *cache = open_walk(r);
	REQUIRE(cache != NULL);
	uint64_t n = fill_walk_range(cache, 0, WALK_KEYS / 2);
	void *hole = gap ? mmap(NULL, gap, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0) : NULL;
	CHECK(hole != MAP_FAILED);
	n += fill_walk_range(cache, WALK_KEYS / 2, WALK_KEYS);
	check_audit(cache);
	uint64_t mapped0 = th_stat(cache, LARDER_STAT_PAGES_MAPPED);
	larder__test_fail_mmap_after(fail_at);
	CHECK_RC(larder_clear(cache), LARDER_OK);
	struct audit a = check_audit(cache); /* quiesces: the walk and the unmapping are done */
	larder__test_fail_mmap_after(-1);
	uint64_t once = 0;
	for (unsigned id = 0; id < WALK_KEYS; id++)
		once += r->calls[id] == 1;
	uint64_t blocks = distinct_blocks(r, r->heard < WALK_KEYS ? r->heard : WALK_KEYS);
	printf("  clear walk (%s): %" PRIu64 " entries in %" PRIu64 " blocks of 64 KiB over %" PRIu64
	       " MiB of addresses, heard %" PRIu64 ", %" PRIu64 " runs of one block; mapped %" PRIu64
	       " -> %" PRIu64 " KiB\n", fail_at < 0 ? "sorted" : "hash order", n, blocks,
	       (uint64_t)(r->highest - r->lowest) / MiB, r->heard, r->runs, mapped0 / KiB,
	       th_stat(cache, LARDER_STAT_PAGES_MAPPED) / KiB);
	CHECK_EQ(once, n);
	CHECK_EQ(r->heard, n);
	CHECK_EQ(r->other_causes, 0);
	CHECK_EQ(r->bad_keys, 0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_CLEARED), n);
	CHECK_EQ(a.slots_used, 0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_LARGE_BYTES), 0);
	CHECK_LE(th_stat(cache, LARDER_STAT_PAGES_MAPPED), 8 * MiB + RESERVE_MAX);
	/* Sorted, a 64 KiB block's entries come in a row, wherever the blocks
	 * lie: one run per block; in hash order almost every call moves. */
	if (fail_at < 0)
		CHECK_EQ(r->runs, blocks);
	else
		CHECK_GT(r->runs * 2, n);
	th_check_accounting(cache, 60000, NULL, NULL);
	/* the cache works on: a new generation, cleared again */
	for (uint64_t id = 0; id < 100; id++)
		CHECK_RC(put_key(cache, id, 2000), LARDER_OK);
	CHECK_RC(larder_clear(cache), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_EQ(r->heard, n + 100);
	larder_close(cache);
	if (hole && hole != MAP_FAILED)
		munmap(hole, gap);
	free(r);
}

static void test_clear_walk_sorted(void)
{
	clear_walk_case(-1, 0);
}

/* The two halves' pages 200 MiB apart (other mappings between a cache's
 * pages): the walk still frees a block's entries in a row. */
static void test_clear_walk_sorted_apart(void)
{
	clear_walk_case(-1, 200 * MiB);
}

static void test_clear_walk_no_counts(void)
{
	clear_walk_case(1, 0);
}

static void test_clear_walk_no_order(void)
{
	clear_walk_case(2, 0);
}

/* Close at once after clears, the walk in any state: nothing leaks (TMEMORY-M6). */
static void test_close_mid_clear_walk(void)
{
	for (unsigned round = 0; round < 4; round++) {
		struct walk_rec *r = calloc(1, sizeof(*r));
		REQUIRE(r != NULL);
		uint64_t before = larder__test_mapped_bytes();
		larder *cache = open_walk(r);
		REQUIRE(cache != NULL);
		fill_walk(cache);
		CHECK_RC(larder_clear(cache), LARDER_OK);
		if (round % 2)
			fill_walk(cache); /* a second generation behind the first */
		CHECK_RC(larder_clear(cache), LARDER_OK);
		for (uint64_t id = 0; id < (round >= 2 ? 1000u << round : 0); id++)
			(void)check_key(cache, id % WALK_KEYS, 8000); /* later into the walk */
		larder_close(cache);
		CHECK_EQ(larder__test_mapped_bytes(), before);
		free(r);
	}
}

/* ---- Placement of mappings (TMEMORY-M11) ---------------------------------------------- */

/*
 * How many kernel areas (lines of /proc/self/maps) hold at least one of the n
 * pages, or -1 if the file cannot be read. Only the pages' own areas count:
 * a sanitizer maps shadow for every mapping (ThreadSanitizer one area per 128
 * KiB page when no earlier test had mapped near it), and other threads map
 * and unmap meanwhile.
 */
static long areas_holding(void *const *page, unsigned n)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	long areas = 0;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) != 2)
			continue;
		for (unsigned i = 0; i < n; i++) {
			if ((uintptr_t)page[i] >= lo && (uintptr_t)page[i] < hi) {
				areas++;
				break;
			}
		}
	}
	fclose(f);
	return areas;
}

static void test_pages_adjacent(void)
{
	enum { PAGES = 2048 };
	static void *page[PAGES];
	uint64_t mapped0 = larder__test_mapped_bytes();

	for (unsigned i = 0; i < PAGES; i++) {
		size_t bytes = i % 3 == 2 ? 128 * KiB : 64 * KiB; /* two alignments */
		page[i] = larder__pages_map(bytes, bytes);
		REQUIRE(page[i] != NULL);
		CHECK_EQ((uintptr_t)page[i] % bytes, 0);
		memset(page[i], 1, 64); /* touched, as a slab page is */
	}
	long areas = areas_holding(page, PAGES);
	printf("  %d mappings of 64/128 KiB in %ld kernel areas\n", PAGES, areas);
	CHECK_GE(areas, 1);
	CHECK_LT(areas, PAGES / 16);
	for (unsigned i = 0; i < PAGES; i++)
		larder__pages_unmap(page[i], i % 3 == 2 ? 128 * KiB : 64 * KiB);
	CHECK_EQ(larder__test_mapped_bytes(), mapped0);
}

/* ---- Slab pages from huge-page chunks (TMEMORY-M14) ------------------------------------ */

/* 1 if the kernel area holding p is advised MADV_HUGEPAGE ("hg" in VmFlags),
 * 0 if not, -1 if smaps cannot tell. */
static int advised_huge(const void *p)
{
	FILE *f = fopen("/proc/self/smaps", "r");
	char line[512];
	int in = 0, found = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
			in = (uintptr_t)p >= lo && (uintptr_t)p < hi;
		else if (in && strncmp(line, "VmFlags:", 8) == 0) {
			found = strstr(line, " hg") != NULL;
			break;
		}
	}
	fclose(f);
	return found;
}

static void check_carved_pages(int chunks)
{
	enum { PAGES = 300 };
	static const size_t sizes[] = { 64 * KiB, 64 * KiB, 128 * KiB, 64 * KiB, 1024 * KiB,
					256 * KiB, 2048 * KiB, 64 * KiB, 512 * KiB };
	static unsigned char *page[PAGES];
	static size_t len[PAGES];
	uint64_t mapped0 = larder__test_mapped_bytes(), handed = 0;

	for (unsigned i = 0; i < PAGES; i++) {
		len[i] = sizes[(i * 7u) % (sizeof(sizes) / sizeof(sizes[0]))];
		page[i] = larder__pages_map_slab(len[i]);
		REQUIRE(page[i] != NULL);
		handed += len[i];
		CHECK_EQ((uintptr_t)page[i] % len[i], 0);
		CHECK_EQ(page[i][0] | page[i][len[i] / 2] | page[i][len[i] - 1], 0);
		memset(page[i], 0xa5, len[i]); /* a later page overlapping it would not read 0 */
	}
	CHECK_EQ(larder__test_mapped_bytes() - mapped0, handed);
	for (unsigned i = 0; i < PAGES; i++)
		for (unsigned j = i + 1; j < PAGES; j++)
			CHECK(page[i] + len[i] <= page[j] || page[j] + len[j] <= page[i]);
	int hg = advised_huge(page[0]);
	if (chunks && access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0)
		CHECK_EQ(hg, 1);
	if (!chunks)
		CHECK(hg != 1 || len[0] == 2048 * KiB);
	for (unsigned i = 0; i < PAGES; i++)
		larder__pages_unmap(page[i], len[i]);
	CHECK_EQ(larder__test_mapped_bytes(), mapped0);
}

static void test_slab_pages_carved(void)
{
	check_carved_pages(1);
	/* Fault injection reaches the carved path: the next mapping fails. */
	larder__test_fail_mmap_after(0);
	CHECK(larder__pages_map_slab(64 * KiB) == NULL);
	larder__test_fail_mmap_after(-1);
	REQUIRE(setenv("LARDER_SLAB_HUGEPAGE", "0", 1) == 0);
	check_carved_pages(0);
	REQUIRE(unsetenv("LARDER_SLAB_HUGEPAGE") == 0);
}

/* ---- The tuner's memory (TMEMORY-M12) ------------------------------------------------ */

/* 10^6 entries in a cache opened for 4,096: the tuner samples 1 key in 4,
 * and without TUNER-T3's bound its nodes and its mini caches' ghosts took about
 * 95 bytes per entry of the cache (2 GiB at 2.2 x 10^7). Not under the
 * sanitizers, whose shadow memory and quarantine swamp RSS. */
static void test_tuner_memory_bounded(void)
{
	/* Under ThreadSanitizer the RSS is not judged: what is left to check
	 * is the maintainer's work beside the writer while the tuner keeps
	 * TUNER-T3, which 100,000 entries reach three times over (each mini
	 * cache of the default policy is capped at 8,192 entries and sees one
	 * key in four), for a sixth of the CPU a million took. */
	const uint64_t N = TH_TSAN ? 100000 : 1000000;
	larder *cache = open_sized(256 * MiB, 4096);

	REQUIRE(cache != NULL);
	uint64_t rss0 = rss_bytes();
	for (uint64_t id = 0; id < N; id++)
		if (!CHECK_RC(put_key(cache, id, 64), LARDER_OK))
			break;
	th_check_accounting(cache, 30000, NULL, NULL);
	uint64_t own = th_stat(cache, LARDER_STAT_PAGES_MAPPED) +
		       th_stat(cache, LARDER_STAT_INDEX_BYTES);
	uint64_t grown = rss_bytes() - rss0;
	printf("  %" PRIu64 " entries: RSS +%" PRIu64 " KiB, the cache's pages and index %" PRIu64
	       " KiB\n", N, grown / KiB, own / KiB);
	/* Each shard has its own tuner, bounded on its own (about 6.5 MiB
	 * each here: RSS +7.6, 13, 28, 54, 105 MiB over the cache's pages and
	 * index at 1, 2, 4, 8, 16 shards). */
	if (!TH_ASAN && !TH_TSAN)
		CHECK_LT(grown, own + 48 * MiB + (uint64_t)(th_shards() - 1) * 12 * MiB);
	larder_close(cache);
}

/*
 * TMEMORY-M13. (RSS of a small cache with big entries) Freed slots of 64 KiB
 * or more stay resident up to their limit (1/16 of the capacity, at most
 * 4 MiB: SLAB-S6 in mem/slab.c), and every one beyond it gives its memory back to
 * the kernel while its page stays (mincore says its OS pages are no longer
 * resident); a clear gives the kept ones back too, and the reserve of empty
 * pages is 1/64 of the capacity per page size (one page at least). Under
 * AddressSanitizer, freed memory's shadow is the sanitizer's: not judged.
 */
static void test_big_slots_released(void)
{
	/* 100 KiB values take 112 KiB slots: 4 MiB keeps 36 of the 48 freed */
	enum { N = 96, VLEN = 100 * 1024, SLOT = 112 * 1024, KEPT = (int)(4 * MiB / SLOT) };
	larder *cache = open_one_shard(64 * MiB, 1024);
	unsigned char *v = malloc(VLEN);
	unsigned char *addr[N];

	REQUIRE(cache != NULL && v != NULL);
	memset(v, 0x77, VLEN);
	for (int i = 0; i < N; i++) {
		char key[16];
		snprintf(key, sizeof(key), "big%d", i);
		CHECK_RC(larder_put(cache, key, strlen(key), v, VLEN, LARDER_TTL_NEVER), LARDER_OK);
	}
	/* where each value lives: the callback sees the stored bytes */
	for (int i = 0; i < N; i++) {
		char key[16];
		snprintf(key, sizeof(key), "big%d", i);
		addr[i] = NULL;
		CHECK_RC(larder_get_with(cache, key, strlen(key), note_addr_fn, &addr[i]), LARDER_OK);
	}
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	/* every other one goes: their pages keep a live neighbour */
	for (int i = 0; i < N; i += 2) {
		char key[16];
		snprintf(key, sizeof(key), "big%d", i);
		CHECK_RC(larder_remove(cache, key, strlen(key)), LARDER_OK);
	}
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_EQ(larder__slab_kept_bytes(&cache->shard[0].slab), (uint64_t)KEPT * SLOT);
	th_check_memory_audit(cache);
	if (!TH_ASAN) {
		long resident_freed = 0, resident_live = 0;
		for (int i = 0; i < N; i++) {
			/* the value's whole OS pages, well inside its slot */
			uintptr_t from = ((uintptr_t)addr[i] + 8191) & ~(uintptr_t)4095;
			unsigned char vec[16];
			if (!CHECK(addr[i] != NULL) || !CHECK_EQ(mincore((void *)from, 16 * 4096, vec), 0))
				continue;
			for (int j = 0; j < 16; j++)
				*(i % 2 == 0 ? &resident_freed : &resident_live) += vec[j] & 1;
		}
		CHECK_EQ(resident_freed, KEPT * 16); /* the kept ones only */
		CHECK_EQ(resident_live, (N / 2) * 16);
	}
	/* the reserve: at most 1 MiB (64 MiB / 64) per page size, or one page */
	for (int i = 0; i < N; i++) {
		char key[16];
		snprintf(key, sizeof(key), "big%d", i);
		int rc = larder_remove(cache, key, strlen(key));
		CHECK(rc == LARDER_OK || rc == LARDER_MISS);
	}
	for (uint64_t id = 0; id < 20000; id++)
		CHECK_RC(put_key(cache, id, 100 + id % 3000), LARDER_OK);
	CHECK_RC(larder_clear(cache), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_EQ(larder__slab_kept_bytes(&cache->shard[0].slab), 0);
	/* two page sizes in use: the small values' 64 KiB pages and the big
	 * ones' 1 MiB pages, 1 MiB of each at most (it was 4 MiB each) */
	uint64_t reserve = th_stat(cache, LARDER_STAT_RESERVE_BYTES);
	printf("  reserve after a clear: %" PRIu64 " KiB\n", reserve / KiB);
	CHECK_LE(reserve, 2 * MiB);
	CHECK_GT(th_stat(cache, LARDER_STAT_PAGES_RETURNED), 0);
	th_check_accounting(cache, 60000, NULL, NULL);
	th_check_memory_audit(cache);
	larder_close(cache);
	free(v);
}

/*
 * TMEMORY-M15. A kept big slot (SLAB-S6) is what the next write of its size
 * class takes, wherever the writer's own pages are; sizes on both sides of
 * the first big class (the 56 KiB slot is the last that is never kept) go
 * where they should; a lower capacity lowers the limit and the maintainer
 * gives back what is over it; the accounting and the audit hold all along.
 */
static void test_big_slots_kept(void)
{
	larder *cache = open_one_shard(256 * MiB, 1024); /* keeps up to 4 MiB */
	unsigned char *v = malloc(200 * 1024);
	unsigned char *at = NULL, *again = NULL;

	REQUIRE(cache != NULL && v != NULL);
	memset(v, 0x42, 200 * 1024);
	/* 56 KiB slots are never kept; 64 KiB ones are */
	CHECK_EQ(larder__sizeclass_slot(larder__sizeclass_of(56 * 1024)), 56 * 1024);
	CHECK_EQ(larder__sizeclass_slot(larder__sizeclass_of(56 * 1024 + 1)), 64 * 1024);
	CHECK_RC(larder_put(cache, "small", 5, v, 50 * 1024, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_remove(cache, "small", 5), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_EQ(larder__slab_kept_bytes(&cache->shard[0].slab), 0);
	/* a freed 150 KiB value is kept, and the next one of its class takes it */
	CHECK_RC(larder_put(cache, "a", 1, v, 150 * 1024, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_get_with(cache, "a", 1, note_addr_fn, &at), LARDER_OK);
	CHECK_RC(larder_remove(cache, "a", 1), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	uint64_t slot = larder__sizeclass_slot(larder__sizeclass_of(150 * 1024 + 64));
	CHECK_EQ(larder__slab_kept_bytes(&cache->shard[0].slab), slot);
	th_check_accounting(cache, 60000, NULL, NULL);
	th_check_memory_audit(cache);
	CHECK_RC(larder_put(cache, "b", 1, v, 150 * 1024 + 10, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_get_with(cache, "b", 1, note_addr_fn, &again), LARDER_OK);
	CHECK(at != NULL && again == at);
	CHECK_EQ(larder__slab_kept_bytes(&cache->shard[0].slab), 0);
	unsigned char *got = malloc(200 * 1024);
	size_t len = 0;
	REQUIRE(got != NULL);
	CHECK_RC(larder_get(cache, "b", 1, got, 200 * 1024, &len), LARDER_OK);
	CHECK(len == 150 * 1024 + 10 && memcmp(got, v, len) == 0);
	free(got);
	/* 60 of 100 KiB, then all removed: 4 MiB of them kept (36 slots) */
	for (int i = 0; i < 60; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_RC(larder_put(cache, key, strlen(key), v, 100 * 1024, LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	for (int i = 0; i < 60; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_RC(larder_remove(cache, key, strlen(key)), LARDER_OK);
	}
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_EQ(larder__slab_kept_bytes(&cache->shard[0].slab), (4 * MiB / (112 * KiB)) * 112 * KiB);
	th_check_memory_audit(cache);
	/* a cut to 16 MiB: the limit is 1 MiB, and the maintainer trims to it */
	CHECK_RC(larder_set_capacity(cache, 16 * MiB), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_LE(larder__slab_kept_bytes(&cache->shard[0].slab), 1 * MiB);
	th_check_accounting(cache, 60000, NULL, NULL);
	th_check_memory_audit(cache);
	larder_close(cache);
	free(v);
}

/* One of many writer threads alive at once, each writing a few entries of
 * LIGHT_CLASSES size classes, and a put_if_absent of a key it wrote (refused:
 * its slot is given back). */
#define LIGHT_THREADS 128
#define LIGHT_CLASSES 8

struct light_writer {
	larder *cache;
	pthread_barrier_t *all_wrote;
	unsigned index;
	int failed;
};

static void *light_writer_main(void *arg)
{
	struct light_writer *w = arg;
	char key[32], value[256];
	int n = 0;

	memset(value, 'v', sizeof(value));
	for (unsigned k = 0; k < LIGHT_CLASSES; k++) {
		n = snprintf(key, sizeof(key), "light%u.%u", w->index, k);
		/* 24 bytes apart: a slot class each (8-byte steps) */
		w->failed += larder_put(w->cache, key, (size_t)n, value, 16 + 24 * k,
					LARDER_TTL_NEVER) != LARDER_OK;
	}
	w->failed += larder_put_if_absent(w->cache, key, (size_t)n, value, 40, LARDER_TTL_NEVER) !=
		     LARDER_EXISTS;
	pthread_barrier_wait(w->all_wrote); /* all alive together */
	pthread_barrier_wait(w->all_wrote); /* the pages counted */
	return NULL;
}

/*
 * TMEMORY-M16, SLAB-S8 (mem/slab.c): 128 writer threads alive at once, each writing 8
 * entries of 8 size classes, share a few pages per class per shard instead
 * of holding one of each (before: 128 x 8 x 64 KiB = 64 MiB of pages for
 * 200 KiB of entries); the accounting and the audit hold.
 */
static void test_light_writers_share_pages(void)
{
	larder *cache = th_open(th_config(64 * MiB));
	static struct light_writer w[LIGHT_THREADS];
	static pthread_t t[LIGHT_THREADS];
	pthread_barrier_t all_wrote;
	REQUIRE(cache != NULL);
	uint64_t mapped0 = th_stat(cache, LARDER_STAT_PAGES_MAPPED);
	REQUIRE(pthread_barrier_init(&all_wrote, NULL, LIGHT_THREADS + 1) == 0);
	for (unsigned i = 0; i < LIGHT_THREADS; i++) {
		w[i] = (struct light_writer){ .cache = cache, .all_wrote = &all_wrote, .index = i };
		REQUIRE(pthread_create(&t[i], NULL, light_writer_main, &w[i]) == 0);
	}
	pthread_barrier_wait(&all_wrote);
	/* 1,024 slots of each class: two 64 KiB pages of the largest; a third
	 * for the page a shard moves on from, per shard */
	CHECK_LE(th_stat(cache, LARDER_STAT_PAGES_MAPPED) - mapped0,
		 (uint64_t)th_shards() * LIGHT_CLASSES * 3 * 64 * KiB);
	pthread_barrier_wait(&all_wrote);
	int failed = 0;
	for (unsigned i = 0; i < LIGHT_THREADS; i++) {
		pthread_join(t[i], NULL);
		failed += w[i].failed;
	}
	CHECK_EQ(failed, 0);
	uint64_t entries = 0;
	th_check_accounting(cache, 60000, &entries, NULL);
	CHECK_EQ(entries, (uint64_t)LIGHT_THREADS * LIGHT_CLASSES);
	th_check_memory_audit(cache);
	pthread_barrier_destroy(&all_wrote);
	larder_close(cache);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_eviction_keeps_capacity),
		TH_TEST(test_eviction_every_policy),
		TH_TEST(test_eviction_mixed_sizes),
		TH_TEST(test_minimum_capacity),
		TH_TEST(test_set_capacity_shrink),
		TH_TEST(test_index_growth),
		TH_TEST(test_growth_concurrent_reads),
		TH_TEST(test_clear_during_growth),
		TH_TEST(test_home_bucket_collisions),
		TH_TEST(test_close_mid_growth),
		TH_TEST(test_write_wait_zero_roomy),
		TH_TEST(test_enomem_on_write),
		TH_TEST(test_enomem_large_entry),
		TH_TEST(test_enomem_on_open),
		TH_TEST(test_enomem_sweep),
		TH_TEST(test_enomem_clear),
		TH_TEST(test_pages_returned),
		TH_TEST(test_audit_counters),
		TH_TEST(test_audit_counts_at_retire),
		TH_TEST(test_clear_returns_memory),
		TH_TEST(test_shrink_returns_memory),
		TH_TEST(test_index_shrinks_after_cut),
		TH_TEST(test_index_shrinks_after_clear),
		TH_TEST(test_clear_walk_sorted),
		TH_TEST(test_clear_walk_sorted_apart),
		TH_TEST(test_clear_walk_no_counts),
		TH_TEST(test_clear_walk_no_order),
		TH_TEST(test_close_mid_clear_walk),
		TH_TEST(test_pages_adjacent),
		TH_TEST(test_slab_pages_carved),
		TH_TEST(test_tuner_memory_bounded),
		TH_TEST(test_big_slots_released),
		TH_TEST(test_big_slots_kept),
		TH_TEST(test_light_writers_share_pages),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
