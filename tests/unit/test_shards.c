/*
 * test_shards.c - a cache of several shards (larder_config_set_shards,
 * core/shard.h, docs/shards.md).
 *
 *   config        the count is a power of two from 1 to LARDER_SHARDS_MAX;
 *                 a pooled cache may have several (pool/probe.c PROBE-P9);
 *   routing       with four shards every key lives in the index of shard
 *                 hash & 3, each shard's maintainer counts its own entries
 *                 (MAINT-M1 per shard), the statistics are their sums, and
 *                 iteration hands every key out once;
 *   share rule    MAINT-M4 over shards: one shard filled with large values
 *                 far past the capacity evicts from itself, and the small
 *                 shards, below the mean, keep every entry; the used bytes
 *                 stay within capacity + bound throughout;
 *   capacity cut  four shards of about equal size evict side by side after
 *                 a cut, many victims a pass, and end near the capacity;
 *   clear races   larder_clear() and larder_set_capacity() racing writers
 *                 on every shard: the accounting adds up afterwards, and a
 *                 last clear empties every shard;
 *   clear ENOMEM  a clear that cannot map one shard's empty index clears
 *                 none of them;
 *   listener      with four shards every removal is reported exactly once;
 *   snapshot      a four-shard cache's snapshot loads whole into caches of
 *                 four shards and of one;
 *   thread names  each shard's maintainer is named "larder-maint/K" once the
 *                 open has returned, and the names go with the close.
 */
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <dirent.h>
#include <string.h>
#include <unistd.h>

#include "core/cache.h"
#include "core/hash.h"
#include "harness.h"
#include "index/table.h"
#include "maint/state.h"

static void test_config(void)
{
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg != NULL);
	CHECK_RC(larder_config_set_shards(cfg, 0), LARDER_EINVAL);
	CHECK_RC(larder_config_set_shards(cfg, 3), LARDER_EINVAL);
	CHECK_RC(larder_config_set_shards(cfg, 2 * LARDER_SHARDS_MAX), LARDER_EINVAL);
	CHECK_RC(larder_config_set_shards(NULL, 2), LARDER_EINVAL);
	CHECK_RC(larder_config_set_shards(cfg, 1), LARDER_OK);
	CHECK_RC(larder_config_set_shards(cfg, LARDER_SHARDS_MAX), LARDER_OK);
	CHECK_RC(larder_config_set_shards(cfg, 4), LARDER_OK);
	larder_config_destroy(cfg);

	larder_pool_config *pcfg = NULL;
	larder_pool *pool = NULL;
	REQUIRE(larder_pool_config_create(&pcfg) == LARDER_OK);
	REQUIRE(larder_pool_config_set_budget(pcfg, 64 * MiB) == LARDER_OK);
	REQUIRE(larder_pool_create(&pool, pcfg) == LARDER_OK);
	larder_pool_config_destroy(pcfg);
	REQUIRE(larder_config_create(&cfg) == LARDER_OK);
	CHECK_RC(larder_config_set_shards(cfg, 4), LARDER_OK);
	CHECK_RC(larder_config_set_pool(cfg, pool), LARDER_OK);
	larder *c = NULL;
	CHECK_RC(larder_open(&c, cfg), LARDER_OK); /* its probe watches shard 0 */
	CHECK(c != NULL);
	larder_close(c);
	larder_config_destroy(cfg);
	/* The same pool takes a cache of one shard. */
	REQUIRE(larder_config_create(&cfg) == LARDER_OK);
	CHECK_RC(larder_config_set_pool(cfg, pool), LARDER_OK);
	CHECK_RC(larder_open(&c, cfg), LARDER_OK);
	larder_close(c);
	larder_config_destroy(cfg);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

static int key_of(char *buf, size_t cap, const char *prefix, unsigned i)
{
	return snprintf(buf, cap, "%s:%u", prefix, i);
}

/* Writes keys prefix:0 .. prefix:(n-1), each with the value "value-<i>" and its NUL. */
static void put_numbered(larder *c, const char *prefix, unsigned n)
{
	char key[32], value[64];
	for (unsigned i = 0; i < n; i++) {
		int len = key_of(key, sizeof(key), prefix, i);
		snprintf(value, sizeof(value), "value-%u", i);
		CHECK_RC(larder_put(c, key, (size_t)len, value, strlen(value) + 1, LARDER_TTL_NEVER),
			 LARDER_OK);
	}
}

/* How many of put_numbered's keys c returns with exactly their value. */
static unsigned count_numbered(larder *c, const char *prefix, unsigned n)
{
	char key[32], value[64], want[64];
	unsigned found = 0;
	for (unsigned i = 0; i < n; i++) {
		int len = key_of(key, sizeof(key), prefix, i);
		size_t got = 0;
		snprintf(want, sizeof(want), "value-%u", i);
		found += larder_get(c, key, (size_t)len, value, sizeof(value), &got) == LARDER_OK &&
			 got == strlen(want) + 1 && memcmp(value, want, got) == 0;
	}
	return found;
}

static unsigned shard_of_key(const larder *c, const void *key, size_t len)
{
	return (unsigned)(larder__hash(c->seed, key, len) & c->shard_mask);
}

struct walk_check {
	const larder *cache;
	unsigned shard;
	uint64_t entries, misplaced;
};

static void walk_shard(void *ctx, struct larder__entry *e)
{
	struct walk_check *w = ctx;
	w->entries++;
	if (shard_of_key(w->cache, larder__entry_key(e), e->key_len) != w->shard)
		w->misplaced++;
}

static void count_iter(void *ctx, const void *key, size_t key_len, const void *value,
		       size_t value_len, uint64_t ttl_ms, uint64_t charge)
{
	(void)key, (void)key_len, (void)value, (void)value_len, (void)ttl_ms, (void)charge;
	(*(uint64_t *)ctx)++;
}

static void test_routing(void)
{
	enum { KEYS = 4000 };
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg != NULL);
	REQUIRE(larder_config_set_shards(cfg, 4) == LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	CHECK_EQ(c->shard_count, 4u);
	put_numbered(c, "route", KEYS);
	CHECK_EQ(count_numbered(c, "route", KEYS), (unsigned)KEYS);
	uint64_t entries = 0;
	CHECK(th_check_accounting(c, 10000, &entries, NULL));
	CHECK_EQ(entries, (uint64_t)KEYS);
	CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), (uint64_t)KEYS);
	uint64_t sum = 0;
	for (unsigned k = 0; k < c->shard_count; k++) {
		struct walk_check w = { c, k, 0, 0 };
		struct larder__table *root = (struct larder__table *)atomic_load_explicit(
			c->shard[k].table, LARDER__ACQUIRE); /* quiesced: nothing moves */
		larder__table_walk(root, walk_shard, &w);
		CHECK_EQ(w.misplaced, 0);
		CHECK(w.entries > KEYS / 8); /* about a quarter each */
		/* MAINT-M1 per shard: its maintainer counted exactly its own. */
		CHECK_EQ(atomic_load_explicit(&c->shard[k].maint->stat[LARDER_STAT_ENTRIES],
					      LARDER__RELAXED),
			 w.entries);
		sum += w.entries;
	}
	CHECK_EQ(sum, (uint64_t)KEYS);
	larder_iter *it = NULL;
	uint64_t seen = 0;
	REQUIRE(larder_iter_open(c, &it) == LARDER_OK);
	while (larder_iter_next(it, count_iter, &seen) == LARDER_OK)
		;
	larder_iter_close(it);
	CHECK_EQ(seen, (uint64_t)KEYS);
	larder_close(c);
}

/* A key of the given prefix whose shard is (or is not) `shard`, the i-th
 * such of the ones tried from *next on. */
static int key_in(const larder *c, char *buf, size_t cap, const char *prefix, unsigned *next,
		  unsigned shard, int in)
{
	for (;;) {
		int n = key_of(buf, cap, prefix, (*next)++);
		if ((shard_of_key(c, buf, (size_t)n) == shard) == in)
			return n;
	}
}

static void test_share_rule(void)
{
	enum { SMALL = 1500, BIG = 600 };
	const uint64_t cap = 8 * MiB;
	larder_config *cfg = th_config(cap);
	REQUIRE(cfg != NULL);
	REQUIRE(larder_config_set_shards(cfg, 4) == LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	static char big[64 * KiB];
	memset(big, 'b', sizeof(big));
	char key[32];
	unsigned next = 0;
	/* Small entries in shards 1-3: about 300 KiB, far below a quarter. */
	for (unsigned i = 0; i < SMALL; i++) {
		int n = key_in(c, key, sizeof(key), "small", &next, 0, 0);
		CHECK_RC(larder_put(c, key, (size_t)n, "small value", 12, LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	/* Then 600 x 64 KiB (37.5 MiB) into shard 0 alone. */
	uint64_t bound = cap + th_stat(c, LARDER_STAT_OVERSHOOT_BOUND), most = 0;
	next = 0;
	for (unsigned i = 0; i < BIG; i++) {
		int n = key_in(c, key, sizeof(key), "big", &next, 0, 1);
		CHECK_RC(larder_put(c, key, (size_t)n, big, sizeof(big), LARDER_TTL_NEVER),
			 LARDER_OK);
		uint64_t used = th_stat(c, LARDER_STAT_USED_BYTES);
		most = used > most ? used : most;
	}
	CHECK(most <= bound);
	CHECK(th_check_accounting(c, 10000, NULL, NULL));
	CHECK(th_stat(c, LARDER_STAT_EVICTIONS) > 0);
	/* Every small entry is still there: their shards were never the largest. */
	next = 0;
	unsigned kept = 0;
	for (unsigned i = 0; i < SMALL; i++) {
		int n = key_in(c, key, sizeof(key), "small", &next, 0, 0);
		kept += larder_contains(c, key, (size_t)n) == LARDER_OK;
	}
	CHECK_EQ(kept, (unsigned)SMALL);
	/* The maintainers' live bytes lag the puts by their passes: read them
	 * after the evictions due as of the last put (larder_flush's contract). */
	CHECK_RC(larder_flush(c, 10000 * TH_SLOW), LARDER_OK);
	uint64_t live = 0;
	for (unsigned k = 0; k < c->shard_count; k++)
		live += atomic_load_explicit(&c->shard[k].live_bytes, LARDER__RELAXED);
	CHECK(live <= cap);
	printf("  share rule: most used %llu of bound %llu, live %llu of capacity %llu\n",
	       (unsigned long long)most, (unsigned long long)bound, (unsigned long long)live,
	       (unsigned long long)cap);
	larder_close(c);
}

/*
 * A capacity cut over four shards of about equal size: they evict side by
 * side (MAINT-M4's turn, maint/evict.c), in passes of many victims, and end
 * near the new capacity, not far under it. With the bare mean as the turn,
 * each shard fell under it at its first victim and woke another: one victim
 * a pass (135,000 passes for 164,000 victims here). With the others'
 * bytes read once a pass, shards evicted past one another: 2.7-6.7% under
 * the capacity in 6 of 8 runs on a loaded machine; read every 64 victims,
 * under 0.3% in every run.
 */
static void test_capacity_cut(void)
{
	const uint64_t cap = 32 * MiB, cut = 8 * MiB;
	larder_config *cfg = th_config(cap);
	REQUIRE(cfg != NULL && larder_config_set_shards(cfg, 4) == LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	char key[32], value[100];
	memset(value, 'c', sizeof(value));
	unsigned n = 0;
	while (th_stat(c, LARDER_STAT_USED_BYTES) < cap - 4 * MiB) {
		for (unsigned i = 0; i < 1000; i++, n++) {
			int len = key_of(key, sizeof(key), "cut", n);
			CHECK_RC(larder_put(c, key, (size_t)len, value, sizeof(value),
					    LARDER_TTL_NEVER),
				 LARDER_OK);
		}
		REQUIRE(th_quiesce(c, 60000) == 0);
	}
	uint64_t passes0 = th_stat(c, LARDER_STAT_MAINT_PASSES);
	uint64_t evicted0 = th_stat(c, LARDER_STAT_EVICTIONS);
	CHECK_RC(larder_set_capacity(c, cut), LARDER_OK);
	/* A quiesce alone may end between two shards' turns (each waits for
	 * one idle pass of every maintainer in turn): wait for the bytes. */
	uint64_t live = UINT64_MAX, until = th_now_ms() + 60000 * TH_SLOW;
	while (live > cut && th_now_ms() < until) {
		CHECK_EQ(th_quiesce(c, 60000), 0);
		live = 0;
		for (unsigned k = 0; k < c->shard_count; k++)
			live += atomic_load_explicit(&c->shard[k].live_bytes, LARDER__RELAXED);
	}
	uint64_t passes = th_stat(c, LARDER_STAT_MAINT_PASSES) - passes0;
	uint64_t victims = th_stat(c, LARDER_STAT_EVICTIONS) - evicted0;
	printf("  capacity cut: %u entries, %llu victims in %llu passes, live %llu of %llu\n", n,
	       (unsigned long long)victims, (unsigned long long)passes, (unsigned long long)live,
	       (unsigned long long)cut);
	CHECK(victims > n / 2);
	CHECK(passes < victims / 16);
	CHECK(live <= cut);
	CHECK(live >= cut - cut / 50);
	CHECK(th_check_accounting(c, 10000, NULL, NULL));
	larder_close(c);
}

struct racer {
	larder *cache;
	unsigned id;
	_Atomic int *stop;
	_Atomic uint64_t *ops; /* the writers' operations, all together */
	uint64_t rounds;
};

static void *race_writer(void *arg)
{
	struct racer *r = arg;
	struct th_rng rng = { 0x5157 + r->id };
	char key[32], value[200];
	memset(value, 'v', sizeof(value));
	while (!atomic_load_explicit(r->stop, memory_order_relaxed)) {
		unsigned i = (unsigned)th_rng_below(&rng, 20000);
		int n = key_of(key, sizeof(key), "race", i);
		size_t len = 1 + th_rng_below(&rng, sizeof(value));
		int rc = th_rng_below(&rng, 8) == 0 ? larder_remove(r->cache, key, (size_t)n)
						   : larder_put(r->cache, key, (size_t)n, value, len,
								LARDER_TTL_NEVER);
		CHECK(rc == LARDER_OK || rc == LARDER_MISS);
		atomic_fetch_add_explicit(r->ops, 1, memory_order_relaxed);
	}
	return NULL;
}

/* Writers (puts and removes over 20,000 keys, so every shard) race a thread
 * that clears the cache and moves its capacity up and down. */
static void *race_admin(void *arg)
{
	struct racer *r = arg;
	for (unsigned round = 0; round < 40; round++) {
		/* Let the writers fill every shard again between rounds. */
		uint64_t until = atomic_load_explicit(r->ops, memory_order_relaxed) + 2000;
		while (atomic_load_explicit(r->ops, memory_order_relaxed) < until)
			sched_yield();
		CHECK_RC(larder_clear(r->cache), LARDER_OK);
		CHECK_RC(larder_set_capacity(r->cache, round % 2 ? 2 * MiB : 32 * MiB), LARDER_OK);
		r->rounds++;
	}
	atomic_store_explicit(r->stop, 1, memory_order_relaxed);
	return NULL;
}

static void *race_thread(void *arg)
{
	struct racer *r = arg;
	return r->id == 0 ? race_admin(r) : race_writer(r);
}

static void test_clear_races(void)
{
	larder_config *cfg = th_config(32 * MiB);
	REQUIRE(cfg != NULL);
	REQUIRE(larder_config_set_shards(cfg, 4) == LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	_Atomic int stop = 0;
	_Atomic uint64_t ops = 0;
	struct racer r[3];
	for (unsigned i = 0; i < 3; i++)
		r[i] = (struct racer){ c, i, &stop, &ops, 0 };
	th_run_threads(3, race_thread, r, sizeof(r[0]));
	CHECK_EQ(r[0].rounds, 40u);
	CHECK(th_check_accounting(c, 20000, NULL, NULL));
	/* After the quiesce: the maintainers count a clear's entries as their
	 * background walks reach them, which may lag the clears. */
	CHECK(th_stat(c, LARDER_STAT_CLEARED) > 0);
	CHECK_RC(larder_clear(c), LARDER_OK);
	uint64_t entries = 1;
	CHECK(th_check_accounting(c, 20000, &entries, NULL));
	CHECK_EQ(entries, 0);
	CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 0);
	larder_close(c);
}

static _Atomic uint64_t heard;

static void count_removal(void *ctx, const void *key, size_t key_len, const void *value,
			  size_t value_len, enum larder_cause cause)
{
	(void)ctx, (void)key, (void)key_len, (void)value, (void)value_len, (void)cause;
	atomic_fetch_add_explicit(&heard, 1, memory_order_relaxed); /* K threads call it */
}

static void test_listener(void)
{
	enum { KEYS = 3000 };
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg != NULL);
	REQUIRE(larder_config_set_shards(cfg, 4) == LARDER_OK);
	REQUIRE(larder_config_set_removal_listener(cfg, count_removal, NULL) == LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	atomic_store(&heard, 0);
	char key[32];
	for (unsigned i = 0; i < KEYS; i++) {
		int n = key_of(key, sizeof(key), "heard", i);
		CHECK_RC(larder_put(c, key, (size_t)n, "1", 1, LARDER_TTL_NEVER), LARDER_OK);
		CHECK_RC(larder_put(c, key, (size_t)n, "2", 1, LARDER_TTL_NEVER), LARDER_OK);
	}
	for (unsigned i = 0; i < KEYS; i += 2) {
		int n = key_of(key, sizeof(key), "heard", i);
		CHECK_RC(larder_remove(c, key, (size_t)n), LARDER_OK);
	}
	CHECK_RC(larder_flush(c, 10000 * TH_SLOW), LARDER_OK);
	/* One REPLACED per key, one EXPLICIT per removed key. */
	CHECK_EQ(atomic_load(&heard), (uint64_t)KEYS + KEYS / 2);
	CHECK_EQ(th_stat(c, LARDER_STAT_REPLACEMENTS), (uint64_t)KEYS);
	CHECK_EQ(th_stat(c, LARDER_STAT_REMOVALS), (uint64_t)KEYS / 2);
	larder_close(c);
}

/* A clear that cannot map one shard's empty index clears no shard
 * (larder.h: LARDER_ENOMEM, nothing was cleared): before, the shards
 * swapped before the failing one were cleared. */
static void test_clear_enomem_whole(void)
{
	enum { KEYS = 3000 };
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg != NULL && larder_config_set_shards(cfg, 4) == LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	put_numbered(c, "whole", KEYS);
	for (long fail = 0; fail < 4; fail++) {
		REQUIRE(th_quiesce(c, 60000) == 0);
		larder__test_fail_mmap_after(fail); /* the clear's (fail + 1)-th table */
		CHECK_RC(larder_clear(c), LARDER_ENOMEM);
		larder__test_fail_mmap_after(-1);
		CHECK_EQ(count_numbered(c, "whole", KEYS), (unsigned)KEYS);
	}
	uint64_t entries = 0;
	CHECK(th_check_accounting(c, 10000, &entries, NULL));
	CHECK_EQ(entries, (uint64_t)KEYS);
	CHECK_EQ(th_stat(c, LARDER_STAT_CLEARED), 0);
	CHECK_RC(larder_clear(c), LARDER_OK);
	CHECK_EQ(count_numbered(c, "whole", KEYS), 0u);
	CHECK(th_check_accounting(c, 10000, &entries, NULL));
	CHECK_EQ(entries, 0);
	larder_close(c);
}

/* A snapshot of a four-shard cache loads into caches of four and of one
 * shard alike: the save walks every shard, the load's bulk writes route
 * each record to its own. */
static void test_snapshot(void)
{
	enum { KEYS = 3000 };
	char path[] = "/tmp/larder-test-shards-XXXXXX";
	int fd = mkstemp(path);
	REQUIRE(fd >= 0);
	close(fd);
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg != NULL && larder_config_set_shards(cfg, 4) == LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	put_numbered(c, "snap", KEYS);
	CHECK_RC(larder_save(c, path), LARDER_OK);
	larder_close(c);
	for (unsigned shards = 1; shards <= 4; shards *= 4) {
		cfg = th_config(64 * MiB);
		REQUIRE(cfg != NULL && larder_config_set_shards(cfg, shards) == LARDER_OK);
		c = th_open(cfg);
		REQUIRE(c != NULL);
		CHECK_RC(larder_load(c, path), LARDER_OK);
		CHECK_EQ(count_numbered(c, "snap", KEYS), (unsigned)KEYS);
		uint64_t entries = 0;
		CHECK(th_check_accounting(c, 10000, &entries, NULL));
		CHECK_EQ(entries, (uint64_t)KEYS);
		larder_close(c);
	}
	unlink(path);
}

/* The threads of this process named "larder-maint/<shard>", one bit per
 * shard; all bits set when /proc cannot be read. */
static uint64_t maintainer_names(void)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *t;
	uint64_t seen = 0;
	if (!d)
		return UINT64_MAX;
	while ((t = readdir(d)) != NULL) {
		char path[300], name[32] = "";
		unsigned k;
		if (t->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", t->d_name);
		FILE *f = fopen(path, "r");
		if (!f)
			continue; /* a thread that ended meanwhile */
		if (fgets(name, sizeof(name), f) && sscanf(name, "larder-maint/%u", &k) == 1 &&
		    k < 64)
			seen |= (uint64_t)1 << k;
		fclose(f);
	}
	closedir(d);
	return seen;
}

static void test_thread_names(void)
{
	REQUIRE(maintainer_names() == 0);
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg != NULL && larder_config_set_shards(cfg, 4) == LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c != NULL);
	CHECK_EQ(maintainer_names(), 0xf);
	larder_close(c);
	CHECK_EQ(maintainer_names(), 0);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_config),
		TH_TEST(test_routing),
		TH_TEST(test_share_rule),
		TH_TEST(test_capacity_cut),
		TH_TEST(test_clear_races),
		TH_TEST(test_clear_enomem_whole),
		TH_TEST(test_listener),
		TH_TEST(test_snapshot),
		TH_TEST(test_thread_names),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
