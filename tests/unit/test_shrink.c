/*
 * tests/unit/test_shrink.c - the index shrink's last window (TABLE-X5 in
 * index/table.h, docs/memory.md "The index"): a removal listener puts new
 * keys from the maintainer's thread, which may not wait for a shrink to
 * end, so those keys go into the shrinking table while its homes move into
 * the smaller target. The target was sized for the keys the shrink counted
 * (at no more than half load); new keys beyond its free half found no
 * slot there and were dropped, as EVICTED, until the shrink left a room
 * of its own for them (TABLE-X5). Checked from outside (larder.h and the test
 * seam that lowers the index floor so that a test-sized index shrinks):
 * every key a listener's put acknowledged is present at the end or was
 * reported to the listener as removed, and none is evicted in a cache far
 * below its capacity; the puts refused are refused with LARDER_EBUSY, the
 * documented result of a listener's write that cannot be placed. The puts'
 * values are of 11 bytes (larder_put's general path) or of 16 (its fast
 * path, core/cache.c, whose insert into the key's home must not take a
 * shrinking table either: without that test, 3,904 of 4,800 were dropped).
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>

#include "core/testing.h"
#include "harness.h"

enum {
	EXPECTED = 114688, /* a first index of 32,768 buckets (7 x 32,768 / 2 at half load) */
	TRIG = 300,    /* keys with a TTL: their expiry sets the listener off */
	PER = 16,      /* new keys the listener puts per "trig" expiry it hears */
	BORN = TRIG * PER,
	T0 = 1000,      /* the clock until the shrink's target is mapped */
	TTL = 1000,     /* the "trig" keys' lifetime */
	LATE = T0 + 2 * TTL,
};

static size_t key_of(char *buf, const char *kind, unsigned i)
{
	return (size_t)snprintf(buf, 32, "%s:%06u", kind, i);
}

/* The cache, its clock and the listener's record of its own puts (on the
 * maintainer thread; read by the test after a quiesce). */
struct born {
	larder *_Atomic c;
	_Atomic uint64_t one_table;      /* LARDER_STAT_INDEX_BYTES of the index at rest */
	_Atomic int late;                /* the clock has jumped to LATE */
	_Atomic unsigned acked[BORN];    /* its put returned LARDER_OK */
	_Atomic unsigned reported[BORN]; /* removals of it the listener heard */
	_Atomic unsigned busy, other_rc, evicted;
	size_t value_len; /* of the listener's puts: 11 (general path) or 16 (fast) */
};

/* i when key is "<kind>:<6 digits>" with i < limit, else limit. */
static unsigned id_of(const void *key, size_t key_len, const char *kind, unsigned limit)
{
	unsigned i;
	char buf[12];
	if (key_len != 11 || memcmp(key, kind, 5) != 0)
		return limit;
	memcpy(buf, key, 11);
	buf[11] = 0;
	return sscanf(buf + 5, "%6u", &i) == 1 && i < limit ? i : limit;
}

/*
 * T0 until the index maps a second table (the shrink's target), then LATE
 * for good: the maintainer reads it in the pass after the one that began
 * the shrink, before that pass moves homes (maint/maintainer.c, steps 6
 * and 8), and expires every "trig" key there.
 */
static uint64_t jump_clock(void *ctx)
{
	struct born *b = ctx;
	larder *c = atomic_load(&b->c);
	uint64_t v[LARDER_STAT_COUNT];
	if (!atomic_load(&b->late) && c && larder_stats(c, v, LARDER_STAT_COUNT) == LARDER_OK &&
	    v[LARDER_STAT_INDEX_BYTES] > atomic_load(&b->one_table))
		atomic_store(&b->late, 1);
	return atomic_load(&b->late) ? LATE : T0;
}

/* Hears trig:i expire and puts PER new keys, on the maintainer's thread. */
static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	struct born *b = ctx;
	(void)value;
	(void)value_len;
	char k[32];
	if (cause == LARDER_CAUSE_EVICTED)
		atomic_fetch_add(&b->evicted, 1);
	unsigned i = id_of(key, key_len, "born:", BORN);
	if (i < BORN) {
		atomic_fetch_add(&b->reported[i], 1);
		return;
	}
	i = id_of(key, key_len, "trig:", TRIG);
	if (cause != LARDER_CAUSE_EXPIRED || i == TRIG)
		return;
	for (unsigned j = 0; j < PER; j++) {
		unsigned n = i * PER + j;
		size_t kl = key_of(k, "born", n);
		memset(k + kl, '.', sizeof k - kl); /* the value: the key, then dots */
		int rc = larder_put(atomic_load(&b->c), k, kl, k, b->value_len, LARDER_TTL_NEVER);
		if (rc == LARDER_OK)
			atomic_fetch_add(&b->acked[n], 1);
		else if (rc == LARDER_EBUSY)
			atomic_fetch_add(&b->busy, 1);
		else
			atomic_fetch_add(&b->other_rc, 1);
	}
}

/*
 * One shard opened for EXPECTED entries, TRIG keys with a TTL, then the
 * floor lowered to 64 buckets: the index (32,768 buckets) shrinks to a
 * table sized for the TRIG keys (128 buckets, 896 slots), 8,192 homes a
 * pass. The pass after the one that maps the target, the clock jumps past
 * the TRIG keys' deadline: they expire, and the listener puts PER new keys
 * for each, 4,800 in all, into the table whose homes that same pass starts
 * moving. Every put the cache acknowledged must be present at the end or
 * reported removed, and none evicted (the cache is far below its
 * capacity); a put refused must be refused with LARDER_EBUSY (larder.h: a
 * listener's write that cannot be placed). Before the target's room for
 * such keys (TABLE-X5) every put was acknowledged and 3,904 were dropped
 * as EVICTED; now a quarter of the target's slots (224) are taken and the
 * rest refused.
 */
static void burst_during_shrink(unsigned shards, size_t value_len)
{
	static struct born b;
	memset(&b, 0, sizeof b);
	b.value_len = value_len;
	atomic_store(&b.one_table, UINT64_MAX);
	larder_config *cfg = th_config_one_shard(256 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_shards(cfg, shards), LARDER_OK);
	REQUIRE_RC(larder_config_set_removal_listener(cfg, listener, &b), LARDER_OK);
	REQUIRE_RC(larder_config_set_clock(cfg, jump_clock, &b), LARDER_OK);
	REQUIRE_RC(larder_config_set_expected_entries(cfg, EXPECTED * shards), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	atomic_store(&b.c, c);
	char k[32];
	for (unsigned i = 0; i < TRIG; i++) {
		size_t kl = key_of(k, "trig", i);
		REQUIRE_RC(larder_put(c, k, kl, "t", 1, TTL), LARDER_OK);
	}
	CHECK_EQ(th_quiesce(c, 60000), 0);
	uint64_t shrinks = th_stat(c, LARDER_STAT_INDEX_SHRINKS);
	atomic_store(&b.one_table, th_stat(c, LARDER_STAT_INDEX_BYTES));
	larder__test_index_floor(c, 64);
	larder__test_wake(c);
	CHECK_EQ(th_quiesce(c, 60000), 0);
	CHECK(atomic_load(&b.late));
	CHECK_GT(th_stat(c, LARDER_STAT_INDEX_SHRINKS), shrinks);
	CHECK_EQ(th_stat(c, LARDER_STAT_EXPIRATIONS), TRIG);
	unsigned acked = 0, lost = 0;
	for (unsigned n = 0; n < BORN; n++) {
		if (!atomic_load(&b.acked[n]))
			continue;
		acked++;
		size_t kl = key_of(k, "born", n);
		unsigned present = larder_contains(c, k, kl) == LARDER_OK;
		unsigned reported = atomic_load(&b.reported[n]);
		if (present + reported != 1 && lost++ < 5)
			printf("  born:%06u: acknowledged, present %u, reported %u\n", n, present,
			       reported);
	}
	printf("  %u of %u puts acknowledged, %u busy, %u evicted, %u lost, %" PRIu64
	       " shrinks, %" PRIu64 " entries\n",
	       acked, BORN, atomic_load(&b.busy), atomic_load(&b.evicted), lost,
	       th_stat(c, LARDER_STAT_INDEX_SHRINKS) - shrinks, th_stat(c, LARDER_STAT_ENTRIES));
	CHECK_EQ(lost, 0);
	CHECK_EQ(atomic_load(&b.evicted), 0);
	CHECK_EQ(th_stat(c, LARDER_STAT_EVICTIONS), 0);
	CHECK_EQ(atomic_load(&b.other_rc), 0);
	CHECK_EQ(acked + atomic_load(&b.busy), BORN);
	CHECK_GT(atomic_load(&b.busy), 0); /* the burst met the shrink */
	CHECK(th_check_accounting(c, 60000, NULL, NULL));
	larder_close(c);
}

static void test_listener_puts_during_shrink_lose_nothing(void)
{
	burst_during_shrink(1, 11);
}

/* The same with values of 16 bytes: the puts take larder_put's fast path,
 * whose insert tests that the index does not shrink. */
static void test_listener_fast_puts_during_shrink_lose_nothing(void)
{
	burst_during_shrink(1, 16);
}

/*
 * The same with four shards (each its own index of 32,768 buckets, each
 * shrinking to 64 buckets for its 75 or so TRIG keys): the listener runs
 * on four maintainer threads at once, and each puts keys into every
 * shard, so a shard's shrink takes new keys from other threads' listeners
 * as well as its own, concurrently, from the same room.
 */
static void test_listeners_of_four_shards_during_shrinks_lose_nothing(void)
{
	burst_during_shrink(4, 11);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_listener_puts_during_shrink_lose_nothing),
		TH_TEST(test_listener_fast_puts_during_shrink_lose_nothing),
		TH_TEST(test_listeners_of_four_shards_during_shrinks_lose_nothing),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
