/*
 * test_pagedir.c - entry ids (mem/pagedir.h) as the slab hands them out.
 *
 *   round trip  for every size class, slots over three pages: each id is
 *               non-zero, below the limit, unique, and translates back to
 *               its slot; large entries (private mappings) likewise;
 *   reuse       freed pages and large entries give their ids back (PAGEDIR-D3), and
 *               a retired run serves a shorter one once the top is used up;
 *   listing     a writer whose page ran out takes the page listed first;
 *   sharing     light cursors share a page per class before owning one
 *               (SLAB-S8), and a slot given back goes where it belongs;
 *   runs        the free slots a cursor holds in its run go back to the
 *               page with it, and a slot given back returns to the run
 *               (SLAB-S9, SLAB-S1: no free slot is lost to the page);
 *   exhaustion  with the ids used up, allocation fails cleanly (NULL from
 *               the slab), then works again once a page gives its ids back;
 *               through the API, a put then fails with LARDER_ENOMEM and
 *               the cache goes on working;
 *   growth      one thread allocates slots (growing the directory across
 *               several of its 64 KiB steps) while another translates ids
 *               already published, as the maintainer does without a lock.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "harness.h"
#include "mem/pagedir.h"
#include "mem/slab.h"

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Every id in ids[0..n) is valid, unique and translates to its slot. */
static void check_ids(struct larder__slab *s, void **slots, uint32_t *ids, size_t n,
		      size_t bytes)
{
	for (size_t i = 0; i < n; i++) {
		ids[i] = larder__pagedir_id(slots[i], bytes);
		if (!CHECK(ids[i] != 0 && ids[i] < LARDER__PAGEDIR_ID_LIMIT) ||
		    !CHECK(larder__pagedir_slot(&s->dir, ids[i]) == slots[i])) {
			printf("  bytes %zu, slot %zu: id %u\n", bytes, i, ids[i]);
			return;
		}
	}
	qsort(ids, n, sizeof(*ids), cmp_u32);
	for (size_t i = 1; i < n; i++)
		if (!CHECK(ids[i] != ids[i - 1]))
			return;
}

static void test_round_trip_classes(void)
{
	struct larder__slab s;
	struct larder__slab_cursor c;
	memset(&c, 0, sizeof(c));
	REQUIRE(larder__slab_init(&s) == 0);
	for (unsigned k = 0; k < LARDER__SIZECLASS_COUNT; k++) {
		size_t bytes = larder__sizeclass_slot(k);
		size_t n = 2 * (larder__sizeclass_page(k) / bytes) + 1; /* three pages */
		void **slots = calloc(n, sizeof(*slots));
		uint32_t *ids = calloc(n, sizeof(*ids));
		REQUIRE(slots && ids);
		for (size_t i = 0; i < n; i++) {
			uint32_t id;
			REQUIRE((slots[i] = larder__slab_alloc_id(&s, &c, bytes, &id)) != NULL);
			/* the id the slab hands out is the one its address gives */
			CHECK_EQ(id, larder__pagedir_id(slots[i], bytes));
		}
		check_ids(&s, slots, ids, n, bytes);
		/* the smallest size of the class maps to the same ids */
		size_t low = k ? larder__sizeclass_slot(k - 1) + 1 : 1;
		CHECK_EQ(larder__pagedir_id(slots[n - 1], low), larder__pagedir_id(slots[n - 1], bytes));
		free(slots);
		free(ids);
	}
	larder__slab_destroy(&s);
}

static const size_t large_sizes[] = {
	LARDER__SLAB_MAX_SLOT + 1, LARDER__SLAB_MAX_SLOT + 4096 - 64, 1 << 20, 10 << 20,
};
#define N_LARGE (sizeof(large_sizes) / sizeof(large_sizes[0]))

static void test_round_trip_large(void)
{
	struct larder__slab s;
	void *slots[N_LARGE * 3];
	uint32_t ids[N_LARGE * 3];
	REQUIRE(larder__slab_init(&s) == 0);
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < N_LARGE * 3; i++) {
			size_t bytes = large_sizes[i % N_LARGE];
			uint32_t id;
			REQUIRE((slots[i] = larder__slab_alloc_id(&s, NULL, bytes, &id)) != NULL);
			memset(slots[i], 0x5a, bytes); /* the whole entry is ours */
			ids[i] = larder__pagedir_id(slots[i], bytes);
			CHECK_EQ(id, ids[i]);
			CHECK(larder__pagedir_slot(&s.dir, ids[i]) == slots[i]);
		}
		CHECK_EQ(atomic_load(&s.dir.ids_in_use), N_LARGE * 3);
		qsort(ids, N_LARGE * 3, sizeof(*ids), cmp_u32);
		for (size_t i = 1; i < N_LARGE * 3; i++)
			CHECK(ids[i] != ids[i - 1]);
		for (size_t i = 0; i < N_LARGE * 3; i++)
			larder__slab_free(&s, slots[i], large_sizes[i % N_LARGE]);
		CHECK_EQ(atomic_load(&s.dir.ids_in_use), 0); /* PAGEDIR-D3: every id came back */
	}
	larder__slab_destroy(&s);
}

/* Pages retired by the maintainer's frees give their ids back. */
static void test_reuse(void)
{
	struct larder__slab s;
	struct larder__slab_cursor c;
	enum { N = 20000 };
	static void *slots[N];
	memset(&c, 0, sizeof(c));
	REQUIRE(larder__slab_init(&s) == 0);
	for (int round = 0; round < 3; round++) {
		uint32_t top_before = s.dir.top;
		for (size_t i = 0; i < N; i++)
			REQUIRE((slots[i] = larder__slab_alloc(&s, &c, 96)) != NULL);
		CHECK_GE(atomic_load(&s.dir.ids_in_use), N);
		larder__slab_release_cursor(&s, &c);
		for (size_t i = 0; i < N; i++) {
			larder__slab_note_live(&s, slots[i], 96);
			larder__slab_free(&s, slots[i], 96);
		}
		CHECK_EQ(atomic_load(&s.dir.ids_in_use), 0);
		if (round > 0) /* the same page count again: no fresh blocks */
			CHECK_EQ(s.dir.top, top_before);
	}
	larder__slab_destroy(&s);
}

/*
 * A writer whose page runs out takes the page that was listed first (the
 * oldest, whose frees have had longest to gather), not the one listed last.
 */
static void test_listed_oldest_first(void)
{
	struct larder__slab s;
	struct larder__slab_cursor c;
	memset(&c, 0, sizeof(c));
	REQUIRE(larder__slab_init(&s) == 0);
	/* Two full pages of 96-byte slots (slots come in address order), then
	 * no owner: neither page has a free slot, so neither is listed. */
	void *first = larder__slab_alloc(&s, &c, 96), *p, *last_a = first;
	REQUIRE(first != NULL);
	size_t n = 1;
	while (((uintptr_t)(p = larder__slab_alloc(&s, &c, 96)) ^ (uintptr_t)first) <
	       LARDER__PAGE_MIN) {
		last_a = p;
		n++;
	}
	void *b = p; /* the second page's first slot */
	REQUIRE(b != NULL);
	for (size_t i = 1; i < n; i++)
		REQUIRE(larder__slab_alloc(&s, &c, 96) != NULL);
	larder__slab_release_cursor(&s, &c);
	/* The second page gets a free slot (and is listed) before the first. */
	larder__slab_note_live(&s, b, 96);
	larder__slab_free(&s, b, 96);
	larder__slab_note_live(&s, last_a, 96);
	larder__slab_free(&s, last_a, 96);
	struct larder__slab_cursor d;
	memset(&d, 0, sizeof(d));
	CHECK(larder__slab_alloc(&s, &d, 96) == b);
	CHECK(larder__slab_alloc(&s, &d, 96) == last_a);
	larder__slab_release_cursor(&s, &d);
	larder__slab_destroy(&s);
}

static void *page_of(void *slot)
{
	return (void *)((uintptr_t)slot & ~(uintptr_t)(LARDER__PAGE_MIN - 1));
}

/*
 * SLAB-S8: in a slab that shares first, cursors take their first
 * LARDER__SLAB_OWN_AFTER slots of a class from one shared page, and a page of
 * their own only after; a slot given back (a failed write) returns to the
 * shared page while it is still the shared one, else is freed into its
 * page, which is listed for the next writer.
 */
static void test_light_cursors_share(void)
{
	struct larder__slab s;
	static struct larder__slab_cursor a, b, many[64];
	REQUIRE(larder__slab_init(&s) == 0);
	s.share_first = 1;
	void *pa = larder__slab_alloc(&s, &a, 96), *pb = larder__slab_alloc(&s, &b, 96);
	REQUIRE(pa && pb);
	CHECK(page_of(pa) == page_of(pb));
	CHECK(a.page[larder__sizeclass_of(96)] == NULL && b.page[larder__sizeclass_of(96)] == NULL);
	/* b's slot back while the page is the shared one: the next shared
	 * allocation gets it again */
	larder__slab_unalloc(&s, &b, pb, 96);
	CHECK(larder__slab_alloc(&s, &b, 96) == pb);
	/* a's 33rd slot of the class comes from a page of its own */
	for (unsigned i = 1; i < LARDER__SLAB_OWN_AFTER; i++) {
		void *p = larder__slab_alloc(&s, &a, 96);
		REQUIRE(p != NULL);
		CHECK(page_of(p) == page_of(pa));
	}
	void *own = larder__slab_alloc(&s, &a, 96);
	REQUIRE(own != NULL);
	CHECK(page_of(own) != page_of(pa));
	CHECK(a.page[larder__sizeclass_of(96)] == page_of(own));
	/* Fresh cursors use the shared page up: the shared cursor moves on. */
	void *last = NULL;
	for (unsigned m = 0; m < 64 && (!last || page_of(last) == page_of(pa)); m++)
		for (unsigned i = 0; i < LARDER__SLAB_OWN_AFTER; i++)
			REQUIRE((last = larder__slab_alloc(&s, &many[m], 96)) != NULL);
	REQUIRE(page_of(last) != page_of(pa));
	/* pb's page is no longer shared: its slot is freed into it (listed),
	 * and the next writer that needs a page of the class takes it there. */
	larder__slab_unalloc(&s, &b, pb, 96);
	struct larder__slab_cursor d;
	memset(&d, 0, sizeof(d));
	memset(d.shared_allocs, LARDER__SLAB_OWN_AFTER, sizeof(d.shared_allocs)); /* owns at once */
	CHECK(larder__slab_alloc(&s, &d, 96) == pb);
	larder__slab_release_cursor(&s, &a);
	larder__slab_release_cursor(&s, &d);
	larder__slab_destroy(&s);
}

/* SLAB-S9: a cursor's run, a slot given back to it, and the page's free
 * slots once the cursor lets the page go. */
static void test_runs_go_back(void)
{
	struct larder__slab s;
	static struct larder__slab_cursor c, d;
	REQUIRE(larder__slab_init(&s) == 0);
	void *first = larder__slab_alloc(&s, &c, 96), *second;
	REQUIRE(first != NULL);
	const struct larder__page *pg = page_of(first);
	uint32_t nslots = pg->nslots;
	REQUIRE(nslots > 64); /* more than one run's word */
	/* A slot given back while its word is the run's: handed out again next. */
	REQUIRE((second = larder__slab_alloc(&s, &c, 96)) != NULL);
	larder__slab_unalloc(&s, &c, second, 96);
	CHECK(larder__slab_alloc(&s, &c, 96) == second);
	larder__slab_unalloc(&s, &c, second, 96);
	/* The page goes back with its run's 63 free slots: a fresh cursor
	 * takes the listed page and finds every slot but `first` there. */
	larder__slab_release_cursor(&s, &c);
	size_t n = 0;
	void *p;
	while ((p = larder__slab_alloc(&s, &d, 96)) != NULL && page_of(p) == pg) {
		CHECK(p != first);
		n++;
	}
	CHECK_EQ(n, nslots - 1);
	larder__slab_release_cursor(&s, &d);
	larder__slab_destroy(&s);
}

static void test_exhaustion(void)
{
	struct larder__slab s;
	struct larder__slab_cursor c;
	memset(&c, 0, sizeof(c));
	REQUIRE(larder__slab_init(&s) == 0);
	/* A page of 32-byte slots takes a run of 32 blocks (2048 ids). */
	void *first = larder__slab_alloc(&s, &c, 32);
	REQUIRE(first != NULL);
	uint32_t first_id = larder__pagedir_id(first, 32);
	const struct larder__pageid *pg =
		(const void *)((uintptr_t)first & ~(uintptr_t)(LARDER__PAGE_MIN - 1));
	uint32_t nslots = pg->nslots;
	/* Pretend every block up to the limit is taken. */
	pthread_mutex_lock(&s.lock);
	s.dir.top = LARDER__PAGEDIR_BLOCKS - 4;
	pthread_mutex_unlock(&s.lock);
	size_t n = 0;
	while (larder__slab_alloc(&s, &c, 32))
		n++;
	CHECK_EQ(n, nslots - 1); /* the rest of the first page, then no ids */
	/* A large entry still fits in the 4 blocks left, and one more not. */
	void *big[5];
	for (int i = 0; i < 4; i++) {
		REQUIRE((big[i] = larder__slab_alloc(&s, NULL, LARDER__SLAB_MAX_SLOT + 1)) != NULL);
		CHECK(larder__pagedir_id(big[i], LARDER__SLAB_MAX_SLOT + 1) >=
		      (LARDER__PAGEDIR_BLOCKS - 4) << LARDER__PAGEDIR_BLOCK_BITS);
	}
	CHECK(larder__slab_alloc(&s, NULL, LARDER__SLAB_MAX_SLOT + 1) == NULL);
	/* Give the 32-block run back: a 96-byte page (11 blocks) splits it. */
	larder__slab_release_cursor(&s, &c);
	for (uint32_t i = 0; i < nslots; i++) {
		void *slot = larder__pagedir_slot(&s.dir, first_id + i);
		larder__slab_note_live(&s, slot, 32);
		larder__slab_free(&s, slot, 32);
	}
	void *q = larder__slab_alloc(&s, &c, 96);
	CHECK(q != NULL);
	if (q)
		CHECK_EQ(larder__pagedir_id(q, 96) >> LARDER__PAGEDIR_BLOCK_BITS,
			 first_id >> LARDER__PAGEDIR_BLOCK_BITS);
	CHECK(larder__slab_alloc(&s, NULL, LARDER__SLAB_MAX_SLOT + 1) != NULL); /* split rest */
	larder__slab_release_cursor(&s, &c);
	for (int i = 0; i < 4; i++)
		larder__slab_free(&s, big[i], LARDER__SLAB_MAX_SLOT + 1);
	larder__slab_destroy(&s);
}

/* The same through the public API: a clear error, then business as usual. */
static void test_exhaustion_api(void)
{
	/* One shard: the ids exhausted below are shard 0's. */
	larder *cache = th_open(th_config_one_shard(64u << 20));
	char v[200];
	REQUIRE(cache != NULL);
	memset(v, 'v', sizeof(v));
	CHECK_RC(larder_put(cache, "a", 1, v, 10, LARDER_TTL_NEVER), LARDER_OK);
	pthread_mutex_lock(&cache->shard[0].slab.lock);
	uint32_t top = cache->shard[0].slab.dir.top;
	cache->shard[0].slab.dir.top = LARDER__PAGEDIR_BLOCKS; /* every id taken */
	pthread_mutex_unlock(&cache->shard[0].slab.lock);
	/* A size class with no page yet needs new ids. */
	CHECK_RC(larder_put(cache, "b", 1, v, sizeof(v), LARDER_TTL_NEVER), LARDER_ENOMEM);
	CHECK_RC(larder_put(cache, "c", 1, v, 10, LARDER_TTL_NEVER), LARDER_OK); /* same page */
	pthread_mutex_lock(&cache->shard[0].slab.lock);
	cache->shard[0].slab.dir.top = top;
	pthread_mutex_unlock(&cache->shard[0].slab.lock);
	CHECK_RC(larder_put(cache, "b", 1, v, sizeof(v), LARDER_TTL_NEVER), LARDER_OK);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/* ---- Growth while another thread translates ---------------------------- */

#define GROW_SLOTS (2u * 1024u * 1024u) /* 32-byte slots: ~1,030 pages, 5 steps */

struct growth {
	struct larder__slab slab;
	_Atomic uint32_t *ids;
	_Atomic uint64_t published;
	_Atomic int done;
	uint64_t checked, bad;
};

static void *translator(void *arg)
{
	struct growth *g = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	while (!atomic_load_explicit(&g->done, memory_order_acquire)) {
		/* Acquire: pairs with the release below; ids[< n] and their slots. */
		uint64_t n = atomic_load_explicit(&g->published, memory_order_acquire);
		if (!n)
			continue;
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		uint64_t i = rng % n;
		uint32_t id = atomic_load_explicit(&g->ids[i], memory_order_relaxed);
		uint64_t *slot = larder__pagedir_slot(&g->slab.dir, id);
		g->bad += slot[0] != i || larder__pagedir_id(slot, 32) != id;
		g->checked++;
	}
	return NULL;
}

static void test_growth_while_translating(void)
{
	struct growth *g = calloc(1, sizeof(*g));
	struct larder__slab_cursor c;
	pthread_t t;
	memset(&c, 0, sizeof(c));
	REQUIRE(g != NULL);
	g->ids = calloc(GROW_SLOTS, sizeof(*g->ids));
	REQUIRE(g->ids != NULL);
	REQUIRE(larder__slab_init(&g->slab) == 0);
	REQUIRE(pthread_create(&t, NULL, translator, g) == 0);
	for (uint64_t i = 0; i < GROW_SLOTS; i++) {
		uint64_t *slot = larder__slab_alloc(&g->slab, &c, 32);
		if (!CHECK(slot != NULL))
			break;
		slot[0] = i;
		atomic_store_explicit(&g->ids[i], larder__pagedir_id(slot, 32), memory_order_relaxed);
		/* Release: publishes the slot and its directory block, as an event does. */
		atomic_store_explicit(&g->published, i + 1, memory_order_release);
	}
	atomic_store_explicit(&g->done, 1, memory_order_release);
	pthread_join(t, NULL);
	printf("  %llu translations during growth to %u directory blocks\n",
	       (unsigned long long)g->checked, g->slab.dir.writable);
	CHECK_EQ(g->bad, 0);
	CHECK_GE(g->slab.dir.writable, 4u * 8192u); /* it did grow several times */
	larder__slab_destroy(&g->slab);
	free(g->ids);
	free(g);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_round_trip_classes),
		TH_TEST(test_round_trip_large),
		TH_TEST(test_reuse),
		TH_TEST(test_listed_oldest_first),
		TH_TEST(test_light_cursors_share),
		TH_TEST(test_runs_go_back),
		TH_TEST(test_exhaustion),
		TH_TEST(test_exhaustion_api),
		TH_TEST(test_growth_while_translating),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
