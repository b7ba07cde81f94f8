/*
 * tests/unit/test_table.c - the index's load rules (TABLE-L1, TABLE-L2 in index/table.h),
 * checked on the table itself and through a cache.
 *
 *   - probe lengths: tables filled to loads from 3/4 to 0.9 with random
 *     hashes; every key is found, absent keys are not, no insert needs
 *     anywhere near LARDER__PROBE_LIMIT buckets (TABLE-L2), and erasing every key
 *     brings every overflow count back to 0. The mean and worst buckets read
 *     by hits and misses are printed (docs/scale.md quotes them);
 *   - sizing: larder__table_buckets_for() is the least bucket count that
 *     holds the entries at the fill load, or at half load for small tables, larder__table_over_load() turns
 *     true one entry past the growth load, and homes spread evenly over a
 *     table of any size;
 *   - the grow trigger through a cache: a cache sized for N entries starts
 *     with the buckets TABLE-L1 asks for, and a cache that grows from the minimum
 *     ends at the least doubling that keeps it under the growth load;
 *   - the shrink rule (TABLE-L3): larder__table_shrink_shift() shrinks only below
 *     1/8 load, never under the floor or to a count that is not a multiple
 *     of 64, and leaves the entries between 1/4 and 1/2 load when nothing
 *     else stops it (so neither a growth nor another shrink is due);
 *   - a shrink on the table itself (TABLE-X3): every key is found, through the old
 *     table and the new, after every chunk of moved homes; a walk sees each
 *     key exactly once; absent keys stay absent; no entry is dropped;
 *   - a growth's room (TABLE-X6): new keys put as a writer puts them while
 *     the migration is stopped near its end fill the old table and the
 *     target as far as the room allows, and the rest of the migration then
 *     drops nothing;
 *   - the plain put's fast insert (larder__table_home_insert): a new key
 *     takes its home's first empty slot, as larder__table_insert_locked()
 *     gives it, and nothing changes when the home is full, when a key
 *     overflowed it, or when its first slot of tag 0 holds an entry;
 *   - the maintainer's unlink (larder__table_find_word_locked,
 *     larder__table_erase_from_locked): an entry's slot is found by its
 *     word, in its home and past it, not an entry of the same key and hash
 *     at another address (a replaced one), and erasing from the home or past
 *     it leaves the overflow counts as larder__table_erase_locked() does.
 */
#include <stdlib.h>

#include "harness.h"
#include "index/table.h"

#define PROBE_BUCKETS 40000u /* a multiple of 64, not a power of two */
#define KEY_BYTES 16u

/* An entry with a 16-byte key that holds its own number; no value. */
static struct larder__entry *make_entry(uint64_t id)
{
	struct larder__entry *e = calloc(1, sizeof(*e) + KEY_BYTES);
	if (!e)
		return NULL;
	unsigned char *key = (unsigned char *)(e + 1); /* flags 0: the key follows the header */
	e->key_len = KEY_BYTES;
	memcpy(key, &id, sizeof(id));
	memcpy(key + 8, "table-ky", 8);
	return e;
}

static uint64_t bucket_of(const struct larder__table *t, const larder__atomic_u64 *slot)
{
	return (uint64_t)((const unsigned char *)slot - (const unsigned char *)t->buckets) /
	       sizeof(struct larder__bucket);
}

/* Buckets a lookup of an absent key with this home reads (the overflow chain). */
static uint64_t miss_buckets(const struct larder__table *t, uint64_t home)
{
	uint64_t n = 1;
	for (uint64_t b = home;
	     (atomic_load_explicit(&t->buckets[b].ctl, LARDER__RELAXED) >> 32) != 0;
	     b = b == t->last ? 0 : b + 1)
		n++;
	return n;
}

struct probe_stats {
	double hit_mean, miss_mean;
	uint64_t hit_max, miss_max;
};

/* Fills a table to load num/den, checks it, and measures its probe lengths. */
static void probe_at(unsigned num, unsigned den, struct probe_stats *ps)
{
	struct larder__table *t = larder__table_create(PROBE_BUCKETS);
	const uint64_t n = larder__table_slots(t) * num / den;
	struct larder__entry **e = calloc(n, sizeof(*e));
	uint64_t *hash = calloc(n, sizeof(*hash)), hit_sum = 0, miss_sum = 0, misses = 0;
	struct th_rng rng = { 0x5eed0000u + num * 131u + den };

	memset(ps, 0, sizeof(*ps));
	REQUIRE(t && e && hash);
	for (uint64_t i = 0; i < n; i++) {
		hash[i] = th_rng_next(&rng);
		e[i] = make_entry(i);
		REQUIRE(e[i] != NULL);
		/* TABLE-L2: never a request for growth below the load tested here. */
		CHECK_RC(larder__table_insert_locked(t, hash[i], larder__slot_word(hash[i], e[i]),
						     LARDER__PROBE_LIMIT),
			 0);
	}
	for (uint64_t i = 0; i < n; i++) {
		uint64_t home = larder__table_home(t, hash[i]);
		larder__atomic_u64 *slot =
			larder__table_find_locked(t, hash[i], larder__entry_key(e[i]), KEY_BYTES);
		CHECK(slot != NULL);
		CHECK_EQ(larder__table_lookup_rcu(t, hash[i], larder__entry_key(e[i]), KEY_BYTES),
			 larder__slot_word(hash[i], e[i]));
		if (slot) {
			uint64_t b = bucket_of(t, slot);
			uint64_t d = (b >= home ? b - home : b + t->last + 1 - home) + 1;
			hit_sum += d;
			ps->hit_max = d > ps->hit_max ? d : ps->hit_max;
		}
		/* An absent key with the same home (and tag): not found. */
		unsigned char absent[KEY_BYTES];
		uint64_t absent_id = n + i;
		memcpy(absent, &absent_id, 8);
		memcpy(absent + 8, "table-ky", 8);
		CHECK_EQ(larder__table_lookup_rcu(t, hash[i], absent, KEY_BYTES), 0);
		uint64_t m = miss_buckets(t, larder__table_home(t, th_rng_next(&rng)));
		miss_sum += m;
		misses++;
		ps->miss_max = m > ps->miss_max ? m : ps->miss_max;
	}
	/* TABLE-L2: at the growth load, the longest probe is far from the limit. */
	if (num * LARDER__TABLE_GROW_DEN <= den * LARDER__TABLE_GROW_NUM)
		CHECK_LT(ps->hit_max, LARDER__PROBE_LIMIT / 2);
	ps->hit_mean = (double)hit_sum / (double)n;
	ps->miss_mean = (double)miss_sum / (double)misses;
	for (uint64_t i = 0; i < n; i++) {
		larder__atomic_u64 *slot =
			larder__table_find_locked(t, hash[i], larder__entry_key(e[i]), KEY_BYTES);
		if (CHECK(slot != NULL))
			larder__table_erase_locked(t, hash[i], slot);
		free(e[i]);
	}
	uint64_t counted = 0;
	for (uint64_t b = 0; b <= t->last; b++)
		counted += atomic_load_explicit(&t->buckets[b].ctl, LARDER__RELAXED) >> 32;
	CHECK_EQ(counted, 0);
	free(e);
	free(hash);
	larder__table_destroy(t);
}

static void test_probe_lengths(void)
{
	static const unsigned loads[][2] = { { 3, 4 }, { 4, 5 }, { 17, 20 }, { 7, 8 }, { 9, 10 } };
	printf("  %-6s %9s %8s %10s %9s   (buckets read; %u buckets of %u slots)\n", "load",
	       "hit mean", "hit max", "miss mean", "miss max", PROBE_BUCKETS, LARDER__BUCKET_SLOTS);
	for (size_t i = 0; i < TH_COUNT(loads); i++) {
		struct probe_stats ps;
		probe_at(loads[i][0], loads[i][1], &ps);
		printf("  %-6.3f %9.3f %8llu %10.3f %9llu\n", (double)loads[i][0] / loads[i][1],
		       ps.hit_mean, (unsigned long long)ps.hit_max, ps.miss_mean,
		       (unsigned long long)ps.miss_max);
	}
}

static void test_sizing_boundary(void)
{
	static const uint64_t counts[] = { 0, 1, 6, 7, 4096, 50000, 229376,
					    229377, 300000, 367002, 100000000, 1ull << 40 };
	const uint64_t fn = LARDER__TABLE_FILL_NUM, fd = LARDER__TABLE_FILL_DEN;
	for (size_t i = 0; i < TH_COUNT(counts); i++) {
		uint64_t n = counts[i], b = larder__table_buckets_for(n);
		const uint64_t slots = LARDER__BUCKET_SLOTS, small = LARDER__TABLE_SMALL_BUCKETS;
		CHECK_GE(b * slots * fn, n * fd);
		if (n * 2 <= small * slots) { /* small: the least at half load */
			CHECK_GE(b * slots, n * 2);
			CHECK(b == 0 || (b - 1) * slots < n * 2);
		} else if (b > small) { /* the least at the fill load */
			CHECK_LT((b - 1) * slots * fn, n * fd);
		} else { /* between the two rules */
			CHECK_EQ(b, small);
		}
	}
	/* over_load turns true one entry past the growth load, in a table of a
	 * size that is not a power of two. */
	struct larder__table *t = larder__table_create(1000);
	REQUIRE(t != NULL);
	CHECK_EQ(t->last + 1, 1024);
	larder__table_destroy(t);
	t = larder__table_create(3 * 1024);
	REQUIRE(t != NULL);
	uint64_t most = larder__table_slots(t) * LARDER__TABLE_GROW_NUM / LARDER__TABLE_GROW_DEN;
	CHECK(!larder__table_over_load(t, most));
	CHECK(larder__table_over_load(t, most + 1));
	/* Homes cover every bucket about evenly (no bucket gets twice its share). */
	static uint32_t per[3 * 1024];
	struct th_rng rng = { 77 };
	memset(per, 0, sizeof(per));
	for (unsigned i = 0; i < 3 * 1024 * 64; i++) {
		uint64_t h = larder__table_home(t, th_rng_next(&rng));
		if (!CHECK_LT(h, 3 * 1024))
			break;
		per[h]++;
	}
	for (unsigned i = 0; i < 3 * 1024; i++)
		if (!CHECK(per[i] > 16 && per[i] < 128))
			break;
	larder__table_destroy(t);
	CHECK(larder__table_create(LARDER__TABLE_MAX_BUCKETS + 1) == NULL);
}

/* The slots of a cache's first table for `expected` entries, and of the
 * table it has after growing (doubling) until n entries fit under TABLE-L1. */
static uint64_t want_slots(uint64_t expected, uint64_t n)
{
	uint64_t b = larder__table_buckets_for(expected);
	b = b < 1024 ? 1024 : (b + 63) & ~(uint64_t)63;
	while (n * LARDER__TABLE_GROW_DEN > b * LARDER__BUCKET_SLOTS * LARDER__TABLE_GROW_NUM)
		b *= 2;
	return b * LARDER__BUCKET_SLOTS;
}

/* One shard: want_slots() is one index's size. */
static larder *open_expecting(uint64_t expected)
{
	larder_config *config = th_config_one_shard(256ull << 20);
	if (!config)
		return NULL;
	CHECK_RC(larder_config_set_expected_entries(config, expected), LARDER_OK);
	return th_open(config);
}

/* Puts n keys into a cache that starts sized for `expected`, then checks
 * that it grew exactly as TABLE-L1 says and that every key reads back. */
static void grow_from(uint64_t expected, uint64_t n)
{
	larder *cache = open_expecting(expected);
	uint64_t entries = 0, missing = 0;
	char key[32];

	REQUIRE(cache != NULL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_SLOTS), want_slots(expected, 0));
	for (uint64_t id = 0; id < n; id++) {
		int len = snprintf(key, sizeof(key), "grow-%llu", (unsigned long long)id);
		if (!CHECK_RC(larder_put(cache, key, (size_t)len, &id, sizeof(id),
					 LARDER_TTL_DEFAULT),
			      LARDER_OK))
			break;
	}
	th_check_accounting(cache, 30000, &entries, NULL);
	CHECK_EQ(entries, n);
	CHECK_EQ(th_stat(cache, LARDER_STAT_INDEX_SLOTS), want_slots(expected, n));
	CHECK_EQ(th_stat(cache, LARDER_STAT_EVICTIONS), 0);
	for (uint64_t id = 0; id < n; id++) {
		uint64_t v = 0;
		size_t len = 0;
		int kl = snprintf(key, sizeof(key), "grow-%llu", (unsigned long long)id);
		missing += larder_get(cache, key, (size_t)kl, &v, sizeof(v), &len) != LARDER_OK ||
			   v != id;
	}
	CHECK_EQ(missing, 0);
	larder_close(cache);
}

static void test_grow_trigger(void)
{
	enum { N = 50000 };
	/* From 1,024 buckets: 8,192 buckets hold 50,000 at 0.872, just under 7/8. */
	CHECK_EQ(want_slots(1, N), 8192 * LARDER__BUCKET_SLOTS);
	grow_from(1, N);
	/* From 5,760 buckets (20,000 at half load, not a power of two): doubled
	 * once. */
	CHECK_EQ(want_slots(20000, N), 2 * 5760 * LARDER__BUCKET_SLOTS);
	grow_from(20000, N);
	/* Sized for N: 14,336 buckets (a small table: half load), no growth. */
	CHECK_EQ(want_slots(N, N), 14336 * LARDER__BUCKET_SLOTS);
	grow_from(N, N);
}

static void test_shrink_rule(void)
{
	static const uint64_t sizes[] = { 1024, 1216 * 512, 3 * 64 * 1024, 1ull << 20 };
	const uint64_t floor = 1024;
	for (size_t i = 0; i < TH_COUNT(sizes); i++) {
		struct larder__table *t = larder__table_create(sizes[i]);
		REQUIRE(t != NULL);
		const uint64_t n = t->last + 1, slots = larder__table_slots(t);
		/* At 1/8 load and above: kept. */
		CHECK_EQ(larder__table_shrink_shift(t, slots / 8, floor), 0);
		CHECK_EQ(larder__table_shrink_shift(t, slots, floor), 0);
		for (uint64_t entries = 0; entries < slots / 8; entries += slots / 97 + 1) {
			unsigned k = larder__table_shrink_shift(t, entries, floor);
			uint64_t b = n >> k;
			CHECK_EQ(b << k, n);
			CHECK_EQ(b % 64, 0);
			CHECK_GE(b, n > floor ? floor : n);
			CHECK_LE(entries * 2, b * LARDER__BUCKET_SLOTS); /* at most half load */
			/* Above 1/4 load unless one more halving was not allowed. */
			uint64_t half = b / 2;
			if (half % 64 == 0 && half >= floor)
				CHECK_GT(entries * 4, b * LARDER__BUCKET_SLOTS);
			/* Hysteresis: the new size is neither over the growth load
			 * nor due for another shrink. */
			struct larder__table *s = larder__table_create(b);
			if (!CHECK(s != NULL))
				break;
			CHECK(!larder__table_over_load(s, entries * 7 / 4));
			CHECK_EQ(larder__table_shrink_shift(s, entries, floor), 0);
			larder__table_destroy(s);
		}
		larder__table_destroy(t);
	}
	/* 3 x 64 buckets: no half is a multiple of 64, so never shrunk. */
	struct larder__table *t = larder__table_create(3 * 64);
	REQUIRE(t != NULL);
	CHECK_EQ(larder__table_shrink_shift(t, 0, 64), 0);
	larder__table_destroy(t);
	/* 2^20 buckets, empty: down to the floor. */
	t = larder__table_create(1u << 20);
	REQUIRE(t != NULL);
	CHECK_EQ(larder__table_shrink_shift(t, 0, 1u << 16), 4);
	CHECK_EQ(larder__table_shrink_shift(t, 0, 64), 14);
	larder__table_destroy(t);
}

static uint64_t *shrink_hash; /* by entry id, for the migration's callback */
static uint64_t shrink_dropped;

static uint64_t shrink_hash_of(void *ctx, const struct larder__entry *e)
{
	uint64_t id;
	(void)ctx;
	memcpy(&id, larder__entry_key((struct larder__entry *)e), sizeof(id));
	return shrink_hash[id];
}

static void shrink_drop(void *ctx, struct larder__entry *e)
{
	(void)ctx;
	(void)e;
	shrink_dropped++;
}

static void count_walk(void *ctx, struct larder__entry *e)
{
	uint8_t *seen = ctx;
	uint64_t id;
	memcpy(&id, larder__entry_key(e), sizeof(id));
	seen[id]++;
}

/* Every key found from t (following MOVED) and the absent ones not. */
static uint64_t shrink_missing(struct larder__table *t, struct larder__entry **e, uint64_t n)
{
	uint64_t missing = 0;
	for (uint64_t i = 0; i < n; i++) {
		uint64_t w = larder__table_lookup_rcu(t, shrink_hash[i], larder__entry_key(e[i]),
						      KEY_BYTES);
		missing += w != larder__slot_word(shrink_hash[i], e[i]);
		unsigned char absent[KEY_BYTES];
		uint64_t absent_id = n + i;
		memcpy(absent, &absent_id, 8);
		memcpy(absent + 8, "table-ky", 8);
		missing += larder__table_lookup_rcu(t, shrink_hash[i], absent, KEY_BYTES) != 0;
	}
	return missing;
}

/* TABLE-X6: a table of 64 buckets at the growth load starts to double and
 * stops after 60 homes (a maintainer preempted mid-pass); new keys then go
 * in as write_index puts them (into the old table through homes not moved,
 * into the target through moved ones while room_take says yes) until
 * neither takes more. The rest of the migration must find a slot for every
 * entry: without the room the target filled and 67 entries of the last
 * four homes were dropped. */
static void test_grow_keeps_room(void)
{
	enum { BUCKETS = 64, OLD = 390, NEW = 4000, MOVED_FIRST = 60 };
	struct larder__table *t = larder__table_create(BUCKETS);
	struct larder__entry **e = calloc(OLD + NEW, sizeof(*e));
	struct th_rng rng = { 0x6e0f };
	shrink_hash = calloc(OLD + NEW, sizeof(*shrink_hash));
	shrink_dropped = 0;
	REQUIRE(t && e && shrink_hash);
	for (uint64_t i = 0; i < OLD + NEW; i++) {
		shrink_hash[i] = th_rng_next(&rng);
		e[i] = make_entry(i);
		REQUIRE(e[i] != NULL);
	}
	for (uint64_t i = 0; i < OLD; i++)
		REQUIRE_EQ(larder__table_insert_locked(t, shrink_hash[i],
						       larder__slot_word(shrink_hash[i], e[i]),
						       LARDER__PROBE_LIMIT),
			   0);
	REQUIRE(larder__table_over_load(t, OLD + 3));
	REQUIRE_EQ(larder__table_grow_begin(t, 1), 0);
	struct larder__table *next = larder__table_next(t);
	REQUIRE(next != NULL);
	CHECK_EQ(larder__table_migrate(t, MOVED_FIRST, shrink_hash_of, shrink_drop, NULL), 0);
	uint8_t *in = calloc(OLD + NEW, 1);
	REQUIRE(in != NULL);
	memset(in, 1, OLD);
	uint64_t into_old = 0, into_next = 0, refused = 0;
	for (uint64_t i = OLD; i < OLD + NEW; i++) {
		struct larder__table *at;
		struct larder__bucket *home = larder__table_lock(t, shrink_hash[i], &at);
		if (at != t && !larder__table_room_take(larder__table_before(t, at)))
			refused++;
		else if (larder__table_insert_locked(at, shrink_hash[i],
						     larder__slot_word(shrink_hash[i], e[i]),
						     LARDER__PROBE_LIMIT) == 0)
			in[i] = 1, *(at == t ? &into_old : &into_next) += 1;
		larder__table_unlock(home);
	}
	CHECK_GT(into_old, 0);
	CHECK_GT(into_next, 0);
	CHECK_GT(refused, 0);
	CHECK_EQ(larder__table_migrate(t, SIZE_MAX, shrink_hash_of, shrink_drop, NULL), 1);
	CHECK_EQ(shrink_dropped, 0);
	uint64_t missing = 0;
	for (uint64_t i = 0; i < OLD + NEW; i++)
		if (in[i])
			missing += larder__table_lookup_rcu(next, shrink_hash[i],
							    larder__entry_key(e[i]),
							    KEY_BYTES) != larder__slot_word(shrink_hash[i], e[i]);
	CHECK_EQ(missing, 0);
	if (shrink_dropped)
		printf("  %" PRIu64 " into the old table, %" PRIu64 " into the target, %" PRIu64
		       " refused, %" PRIu64 " dropped\n",
		       into_old, into_next, refused, shrink_dropped);
	for (uint64_t i = 0; i < OLD + NEW; i++)
		free(e[i]);
	larder__table_destroy(next);
	larder__table_destroy(t);
	free(shrink_hash);
	free(in);
	free(e);
}

/* Locks hash's home (home, in t), tries the fast insert of word, unlocks;
 * its result, or -1 when the lock did not give home. */
static int fast_insert(struct larder__table *t, struct larder__bucket *home, uint64_t hash,
		       uint64_t word)
{
	if (!CHECK(larder__table_try_lock(t, hash) == home))
		return -1;
	int fast = larder__table_home_insert(home, word);
	larder__table_unlock(home);
	return fast;
}

/* Ten keys of one home of a 64-bucket table (hash bits 16..47 alike), key i
 * of tag i + 1, and key Z of tag 0, put by larder__table_home_insert() under
 * the home's lock where it may and by larder__table_insert_locked() where
 * not. */
static void test_home_insert(void)
{
	enum { N = 10, Z = N - 1 };
	struct larder__table *t = larder__table_create(64);
	struct larder__entry *e[N];
	uint64_t hash[N], word[N];
	REQUIRE(t != NULL);
	for (unsigned i = 0; i < N; i++) {
		hash[i] = (i == Z ? 0 : (uint64_t)(i + 1) << 48) | (0x9abcdef0ull << 16) | i;
		e[i] = make_entry(i);
		REQUIRE(e[i] != NULL);
		word[i] = larder__slot_word(hash[i], e[i]);
	}
	struct larder__bucket *home = &t->buckets[larder__table_home(t, hash[0])];
#define FAST(i) fast_insert(t, home, hash[i], word[i])
#define SLOT(j) atomic_load_explicit(&home->slot[j], LARDER__RELAXED)
	for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++)
		if (CHECK_EQ(FAST(i), 1))
			CHECK_EQ(SLOT(i), word[i]); /* the first empty slot, in order */
	/* Full: nothing; the probe then overflows into the next bucket. */
	CHECK_EQ(FAST(7), 0);
	CHECK_RC(larder__table_insert_locked(t, hash[7], word[7], LARDER__PROBE_LIMIT), 0);
	CHECK_EQ(atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32, 1);
	/* A free slot, but a key overflowed the home: nothing (key 8 might be
	 * beyond it, for all the home says). */
	larder__table_erase_locked(t, hash[2], &home->slot[2]);
	CHECK_EQ(FAST(8), 0);
	CHECK_EQ(SLOT(2), 0);
	/* Nothing overflowed again: slot 2 is the first empty one. */
	larder__table_erase_locked(
		t, hash[7], larder__table_find_locked(t, hash[7], larder__entry_key(e[7]), KEY_BYTES));
	CHECK_EQ(atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32, 0);
	CHECK_EQ(FAST(8), 1);
	CHECK_EQ(SLOT(2), word[8]);
	/* Slot 0 holds key Z, of tag 0, slot 1 is empty: the fast insert's
	 * first slot of tag 0 is Z's, which its CAS must not overwrite. */
	larder__table_erase_locked(t, hash[0], &home->slot[0]);
	CHECK_RC(larder__table_insert_locked(t, hash[Z], word[Z], LARDER__PROBE_LIMIT), 0);
	CHECK_EQ(SLOT(0), word[Z]);
	larder__table_erase_locked(t, hash[1], &home->slot[1]);
	CHECK_EQ(FAST(0), 0);
	CHECK_EQ(SLOT(0), word[Z]);
	CHECK_EQ(SLOT(1), 0);
	for (unsigned i = 0; i < N; i++) {
		int in = i == Z || i == 8 || (i >= 3 && i < LARDER__BUCKET_SLOTS);
		CHECK_EQ(larder__table_lookup_rcu(t, hash[i], larder__entry_key(e[i]), KEY_BYTES),
			 in ? word[i] : 0);
		free(e[i]);
	}
#undef SLOT
#undef FAST
	larder__table_destroy(t);
}

/* Locks hash's home in t, finds word there (larder__table_find_word_locked)
 * and, when found, erases it (larder__table_erase_from_locked); returns the
 * slot it found, or NULL. */
static larder__atomic_u64 *unlink_word(struct larder__table *t, uint64_t hash, uint64_t word)
{
	struct larder__table *held;
	struct larder__bucket *home = larder__table_lock(t, hash, &held);
	larder__atomic_u64 *slot = larder__table_find_word_locked(held, home, hash, word);
	if (slot)
		larder__table_erase_from_locked(held, home, hash, slot);
	larder__table_unlock(home);
	return slot;
}

/* Nine keys of one home of a 64-bucket table, all of one tag but key 0's
 * twin (the same key and hash at another address): seven fill the home, two
 * overflow it. */
static void test_find_word(void)
{
	enum { N = 9 };
	struct larder__table *t = larder__table_create(64);
	struct larder__entry *e[N + 1];
	uint64_t hash[N], word[N];
	REQUIRE(t != NULL);
	for (unsigned i = 0; i <= N; i++) {
		e[i] = make_entry(i < N ? i : 0);
		REQUIRE(e[i] != NULL);
	}
	for (unsigned i = 0; i < N; i++) {
		hash[i] = (7ull << 48) | (0x9abcdef0ull << 16) | i;
		word[i] = larder__slot_word(hash[i], e[i]);
		CHECK_RC(larder__table_insert_locked(t, hash[i], word[i], LARDER__PROBE_LIMIT), 0);
	}
	struct larder__bucket *home = &t->buckets[larder__table_home(t, hash[0])];
	CHECK_EQ(atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32, 2);
	/* Key 0's twin: same key, same hash, not the entry in the slot. */
	CHECK(unlink_word(t, hash[0], larder__slot_word(hash[0], e[N])) == NULL);
	CHECK_EQ(larder__table_lookup_rcu(t, hash[0], larder__entry_key(e[0]), KEY_BYTES), word[0]);
	/* Past the home: found in the next bucket, the home's count undone. */
	larder__atomic_u64 *s8 = unlink_word(t, hash[8], word[8]);
	CHECK(s8 != NULL && bucket_of(t, s8) != (uint64_t)(home - t->buckets));
	CHECK_EQ(atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32, 1);
	/* In the home: emptied there, the count of key 7 (still past it) kept. */
	CHECK(unlink_word(t, hash[3], word[3]) == &home->slot[3]);
	CHECK_EQ(atomic_load_explicit(&home->slot[3], LARDER__RELAXED), 0);
	CHECK_EQ(atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32, 1);
	CHECK(unlink_word(t, hash[3], word[3]) == NULL); /* gone */
	CHECK(unlink_word(t, hash[7], word[7]) != NULL);
	CHECK_EQ(atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32, 0);
	for (unsigned i = 0; i < N; i++) {
		int in = i != 3 && i != 7 && i != 8;
		CHECK_EQ(larder__table_lookup_rcu(t, hash[i], larder__entry_key(e[i]), KEY_BYTES),
			 in ? word[i] : 0);
	}
	for (unsigned i = 0; i <= N; i++)
		free(e[i]);
	larder__table_destroy(t);
}

/* A table of 8,192 buckets with 3,000 keys (5% load) shrinks 8x (k = 3,
 * to 1,024 buckets: 42% load), 100 homes at a time. */
static void test_shrink_table(void)
{
	enum { N = 3000, BUCKETS = 8192, CHUNK = 100 };
	struct larder__table *t = larder__table_create(BUCKETS);
	struct larder__entry **e = calloc(N, sizeof(*e));
	uint8_t *seen = calloc(N, 1);
	struct th_rng rng = { 0x5471 };
	shrink_hash = calloc(N, sizeof(*shrink_hash));
	shrink_dropped = 0;
	REQUIRE(t && e && seen && shrink_hash);
	for (uint64_t i = 0; i < N; i++) {
		shrink_hash[i] = th_rng_next(&rng);
		e[i] = make_entry(i);
		REQUIRE(e[i] != NULL);
		REQUIRE_EQ(larder__table_insert_locked(t, shrink_hash[i],
						       larder__slot_word(shrink_hash[i], e[i]),
						       LARDER__PROBE_LIMIT),
			   0);
	}
	unsigned k = larder__table_shrink_shift(t, N, 1024);
	CHECK_EQ(k, 3);
	REQUIRE_EQ(larder__table_shrink_begin(t, k), 0);
	struct larder__table *next = larder__table_next(t);
	REQUIRE(next != NULL);
	CHECK_EQ(next->last + 1, BUCKETS >> k);
	uint64_t missing = 0, chunks = 0;
	while (!larder__table_migrate(t, CHUNK, shrink_hash_of, shrink_drop, NULL)) {
		missing += shrink_missing(t, e, N);
		chunks++;
	}
	CHECK_EQ(chunks, BUCKETS / CHUNK);
	CHECK_EQ(missing, 0);
	CHECK_EQ(shrink_dropped, 0);
	/* Done: found from the old table (every home MOVED) and the new. */
	CHECK_EQ(shrink_missing(t, e, N), 0);
	CHECK_EQ(shrink_missing(next, e, N), 0);
	/* Each key exactly once, in the old and new tables together and in the
	 * new one alone; every key's home in next is its old home >> k. */
	larder__table_walk(t, count_walk, seen);
	uint64_t not_once = 0, wrong_home = 0;
	for (uint64_t i = 0; i < N; i++) {
		not_once += seen[i] != 1;
		wrong_home += larder__table_home(next, shrink_hash[i]) !=
			      larder__table_home(t, shrink_hash[i]) >> k;
	}
	CHECK_EQ(not_once, 0);
	CHECK_EQ(wrong_home, 0);
	memset(seen, 0, N);
	larder__table_walk(next, count_walk, seen);
	not_once = 0;
	for (uint64_t i = 0; i < N; i++)
		not_once += seen[i] != 1;
	CHECK_EQ(not_once, 0);
	/* The new table works on its own: erase everything, counts back to 0. */
	for (uint64_t i = 0; i < N; i++) {
		larder__atomic_u64 *slot = larder__table_find_locked(
			next, shrink_hash[i], larder__entry_key(e[i]), KEY_BYTES);
		if (CHECK(slot != NULL))
			larder__table_erase_locked(next, shrink_hash[i], slot);
		free(e[i]);
	}
	uint64_t counted = 0;
	for (uint64_t b = 0; b <= next->last; b++)
		counted += atomic_load_explicit(&next->buckets[b].ctl, LARDER__RELAXED) >> 32;
	CHECK_EQ(counted, 0);
	larder__table_destroy(next);
	larder__table_destroy(t);
	free(shrink_hash);
	free(seen);
	free(e);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_probe_lengths),
		TH_TEST(test_sizing_boundary),
		TH_TEST(test_grow_trigger),
		TH_TEST(test_shrink_rule),
		TH_TEST(test_shrink_table),
		TH_TEST(test_grow_keeps_room),
		TH_TEST(test_home_insert),
		TH_TEST(test_find_word),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
