/*
 * tests/unit/test_outside.c - the documented contracts of cursors, snapshots
 * and pools, tried from outside (include/larder.h only, beside the harness)
 * across the configurations the per-area tests leave out: compression,
 * expire-after-access, pool members, shards (this file also runs as
 * unit_outside_shards4).
 *
 * Checked (larder.h "Iteration", "Snapshots", "Pools"; docs/pool.md,
 * docs/persistence.md):
 *   - cursors (ITER-I1..I3 from outside): racing with writers and removers
 *     of other keys in every configuration, each key live throughout is
 *     handed out exactly once with its own value, no key twice, none removed
 *     or expired before the open; held across a capacity cut and a clear;
 *     walking while a large load grows the index; extending no deadline
 *     under expire-after-access;
 *   - snapshots: saved by a cache of each configuration, loaded into each
 *     other one ("snapshots hold plain values, so any cache can load
 *     them"), 3 MiB values included; into smaller caches (SNAP-L3: filled
 *     to capacity, nothing evicted; into an empty plain cache exactly the
 *     set the rule names); into caches with lower key and value limits
 *     (those entries skipped); two loads at once; two saves to one path at
 *     once; a path naming a FIFO or a directory (SNAP-S2, SNAP-L7);
 *   - pools: members opening and closing while others write, the used bytes
 *     summed never past budget + LARDER_POOL_OVERSHOOT_BOUND (sampled) and
 *     no open failing within its write wait (POOL: has_starting); capacity
 *     moving to the cache whose bytes earn hits; larder_pool_close racing
 *     with opens; the lifecycle rules and refused opens.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"

/* For the helpers that return a value: a failed setup stops the run. */
#define MUST(expr)                                \
	do {                                      \
		if (!CHECK_RC((expr), LARDER_OK)) \
			abort();                  \
	} while (0)

/* ---- keys and values: every value names its key -------------------------- */

enum { STABLE = 4000, DEAD = 1000, CHURN = 4000 };
/* Ids: stable 0.., dead STABLE.., churn STABLE + DEAD.. */
#define ID_COUNT (STABLE + DEAD + CHURN)

static size_t key_of(char *buf, uint64_t id)
{
	return (size_t)snprintf(buf, 32, "key:%06llu", (unsigned long long)id);
}

/* A compressible value of 100..400 bytes naming id and gen. */
static size_t value_of(char *buf, uint64_t id, uint64_t gen)
{
	int n = snprintf(buf, 64, "v%06llu.%llu.", (unsigned long long)id, (unsigned long long)gen);
	size_t len = 100 + (size_t)(th_mix64(id) % 300);
	for (size_t i = (size_t)n; i < len; i++)
		buf[i] = (char)('a' + (i / 16) % 4);
	return len;
}

/* The id a value names, or UINT64_MAX when it is not well formed. */
static uint64_t value_id(const void *value, size_t len)
{
	char v[512];
	if (len < 10 || len > sizeof(v) || ((const char *)value)[0] != 'v')
		return UINT64_MAX;
	uint64_t id = strtoull((const char *)value + 1, NULL, 10);
	size_t want = value_of(v, id, 0);
	const char *dot = memchr((const char *)value + 8, '.', 24);
	if (want != len || dot == NULL)
		return UINT64_MAX;
	size_t head = (size_t)(dot - (const char *)value) + 1;
	return memcmp((const char *)value + head, v + head, len - head) == 0 ? id : UINT64_MAX;
}

static uint64_t key_id(const void *key, size_t len)
{
	char k[32];
	if (len != 10 || memcmp(key, "key:", 4) != 0)
		return UINT64_MAX;
	memcpy(k, key, len);
	k[len] = 0;
	uint64_t id = strtoull(k + 4, NULL, 10);
	return id < ID_COUNT ? id : UINT64_MAX;
}

static void put_id(larder *c, uint64_t id, uint64_t gen, uint64_t ttl_ms)
{
	char k[32], v[512];
	size_t kl = key_of(k, id), vl = value_of(v, id, gen);
	CHECK_RC(larder_put(c, k, kl, v, vl, ttl_ms), LARDER_OK);
}

/* ---- the configurations -------------------------------------------------- */

enum cfg { CFG_PLAIN, CFG_COMPRESS, CFG_ACCESS, CFG_POOLED, CFG_COUNT };
static const char *const cfg_name[CFG_COUNT] = {"plain", "compress", "access", "pooled"};

/* Opens a cache of kind k with about capacity bytes (a pooled one gets a
 * pool of its own with that budget, returned in *pool), values up to 8 MiB. */
static larder *open_cfg(enum cfg k, uint64_t capacity, larder_pool **pool)
{
	*pool = NULL;
	if (k == CFG_POOLED) {
		larder_pool_config *pc = NULL;
		MUST(larder_pool_config_create(&pc));
		MUST(larder_pool_config_set_budget(pc, capacity));
		MUST(larder_pool_create(pool, pc));
		larder_pool_config_destroy(pc);
		larder_config *config = NULL;
		MUST(larder_config_create(&config));
		MUST(larder_config_set_pool(config, *pool));
		MUST(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS));
		MUST(larder_config_set_max_value_bytes(config, 8 * MiB));
		larder *c = th_open(config);
		if (c == NULL)
			abort();
		/* It starts small and grows to its share in the background. */
		double cap = 0;
		uint64_t until = th_now_ms() + 30000 * TH_SLOW;
		while (cap < (double)capacity * 0.9 && th_now_ms() < until) {
			MUST(larder_pool_cache_stats(*pool, c, &cap, 1));
			usleep(1000);
		}
		CHECK_GE(cap, (double)capacity * 0.9);
		return c;
	}
	larder_config *config = th_config(capacity);
	if (config == NULL)
		abort();
	MUST(larder_config_set_max_value_bytes(config, 8 * MiB));
	if (k == CFG_COMPRESS)
		MUST(larder_config_set_compression(config, 64, 10));
	if (k == CFG_ACCESS) {
		MUST(larder_config_set_expiry(config, LARDER_EXPIRE_AFTER_ACCESS));
		MUST(larder_config_set_default_ttl_ms(config, 3600 * 1000));
	}
	return th_open(config);
}

static void close_cfg(larder *c, larder_pool *pool)
{
	larder_close(c);
	if (pool != NULL)
		CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/* ---- cursors racing with writers and removers ---------------------------- */

struct churn {
	larder *cache;
	_Atomic int *stop;
	uint64_t seed;
};

static void *churn_main(void *arg)
{
	struct churn *w = arg;
	struct th_rng rng = {w->seed};
	char k[32];
	uint64_t gen = 1;
	while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
		uint64_t id = STABLE + DEAD + th_rng_below(&rng, CHURN);
		int op = (int)th_rng_below(&rng, 4);
		if (op == 0) {
			size_t kl = key_of(k, id);
			int rc = larder_remove(w->cache, k, kl);
			CHECK(rc == LARDER_OK || rc == LARDER_MISS);
		} else {
			put_id(w->cache, id, gen++,
			       op == 1 ? 1 + th_rng_below(&rng, 20) : LARDER_TTL_NEVER);
		}
	}
	return NULL;
}

struct walk {
	uint32_t seen[ID_COUNT];
	uint64_t foreign, bad_value, stable_ttl;
};

static void on_walk(void *ctx, const void *key, size_t key_len, const void *value, size_t value_len,
		    uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk *w = ctx;
	(void)entry_bytes;
	uint64_t id = key_id(key, key_len);
	if (id == UINT64_MAX) {
		w->foreign++;
		return;
	}
	w->seen[id]++;
	if (value_id(value, value_len) != id)
		w->bad_value++;
	if (id < STABLE && ttl_ms != LARDER_TTL_NEVER && ttl_ms > 3600 * 1000)
		w->stable_ttl++;
}

static void iter_racing(enum cfg k)
{
	larder_pool *pool;
	larder *c = open_cfg(k, 64 * MiB, &pool);
	REQUIRE(c != NULL);
	/* Stable keys live throughout; dead ones written, removed, and short-TTL
	 * ones expired, all before the cursor opens. */
	uint64_t ttl = k == CFG_ACCESS ? LARDER_TTL_DEFAULT : LARDER_TTL_NEVER;
	for (uint64_t id = 0; id < STABLE; id++)
		put_id(c, id, 0, ttl);
	for (uint64_t id = STABLE; id < STABLE + DEAD; id++)
		put_id(c, id, 0, id % 2 ? 1 : LARDER_TTL_NEVER);
	char kb[32];
	for (uint64_t id = STABLE; id < STABLE + DEAD; id += 2)
		CHECK_RC(larder_remove(c, kb, key_of(kb, id)), LARDER_OK);
	uint64_t t0 = th_now_ms();
	while (th_now_ms() < t0 + 5)
		usleep(1000);

	_Atomic int stop = 0;
	enum { WRITERS = 2 };
	struct churn w[WRITERS];
	pthread_t tid[WRITERS];
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct churn){c, &stop, 0x1234u + (uint64_t)i + 16u * (uint64_t)k};
		REQUIRE(pthread_create(&tid[i], NULL, churn_main, &w[i]) == 0);
	}
	for (int round = 0; round < 4; round++) {
		struct walk *walk = calloc(1, sizeof(*walk));
		REQUIRE(walk != NULL);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		int rc;
		while ((rc = larder_iter_next(it, on_walk, walk)) == LARDER_OK)
			;
		CHECK_RC(rc, LARDER_MISS);
		larder_iter_close(it);
		uint64_t stable_bad = 0, twice = 0, dead = 0;
		for (uint64_t id = 0; id < ID_COUNT; id++) {
			if (id < STABLE)
				stable_bad += walk->seen[id] != 1;
			else if (id < STABLE + DEAD)
				dead += walk->seen[id] != 0;
			twice += walk->seen[id] > 1;
		}
		if (stable_bad || twice || dead || walk->foreign || walk->bad_value ||
		    walk->stable_ttl)
			th_fail(__FILE__, __LINE__,
				"%s round %d: stable keys not once %llu, twice %llu, dead %llu, "
				"foreign %llu, bad values %llu, bad ttls %llu",
				cfg_name[k], round, (unsigned long long)stable_bad,
				(unsigned long long)twice, (unsigned long long)dead,
				(unsigned long long)walk->foreign,
				(unsigned long long)walk->bad_value,
				(unsigned long long)walk->stable_ttl);
		free(walk);
	}
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(tid[i], NULL);
	close_cfg(c, pool);
}

static void test_iter_racing_every_config(void)
{
	for (int k = 0; k < CFG_COUNT; k++)
		iter_racing((enum cfg)k);
}

/* A cursor held across a capacity cut (the maintainer evicting most of
 * what it has still to visit) and then a clear, in each configuration that
 * may set its capacity: no key twice, every value its key's, nothing of
 * the cleared ones after the clear but keys written since. */
static void test_iter_across_shrink_and_clear(void)
{
	for (int k = 0; k < CFG_COUNT; k++) {
		if (k == CFG_POOLED)
			continue; /* its capacity is the pool's */
		larder_pool *pool;
		larder *c = open_cfg((enum cfg)k, 64 * MiB, &pool);
		REQUIRE(c != NULL);
		uint64_t ttl = k == CFG_ACCESS ? LARDER_TTL_DEFAULT : LARDER_TTL_NEVER;
		for (uint64_t id = 0; id < STABLE; id++)
			put_id(c, id, 0, ttl);
		struct walk *walk = calloc(1, sizeof(*walk));
		REQUIRE(walk != NULL);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		for (int i = 0; i < 500; i++)
			CHECK_RC(larder_iter_next(it, on_walk, walk), LARDER_OK);
		CHECK_RC(larder_set_capacity(c, 256 * KiB), LARDER_OK);
		CHECK_RC(th_flush(c, 60000), LARDER_OK);
		for (int i = 0; i < 100 && larder_iter_next(it, on_walk, walk) == LARDER_OK; i++)
			;
		uint64_t before_clear = 0;
		for (uint64_t id = 0; id < STABLE; id++)
			before_clear += walk->seen[id];
		CHECK_RC(larder_clear(c), LARDER_OK);
		for (uint64_t id = STABLE + DEAD; id < STABLE + DEAD + 50; id++)
			put_id(c, id, 0, ttl);
		while (larder_iter_next(it, on_walk, walk) == LARDER_OK)
			;
		larder_iter_close(it);
		uint64_t twice = 0, stable = 0;
		for (uint64_t id = 0; id < ID_COUNT; id++) {
			twice += walk->seen[id] > 1;
			if (id < STABLE)
				stable += walk->seen[id];
		}
		if (twice || walk->bad_value || walk->foreign || stable != before_clear)
			th_fail(__FILE__, __LINE__,
				"%s: twice %llu, bad values %llu, foreign %llu, cleared keys after "
				"the clear %llu",
				cfg_name[k], (unsigned long long)twice,
				(unsigned long long)walk->bad_value,
				(unsigned long long)walk->foreign,
				(unsigned long long)(stable - before_clear));
		free(walk);
		close_cfg(c, pool);
	}
}

struct waves {
	larder *cache;
	_Atomic int *stop;
};

/* Writes 60,000 keys of its own, then removes them, over and over: the
 * index grows for them (and stays grown: it shrinks only above its 4 MiB
 * floor, docs/memory.md). */
static void *waves_main(void *arg)
{
	struct waves *w = arg;
	char k[32];
	while (!atomic_load_explicit(w->stop, memory_order_relaxed)) {
		for (uint64_t i = 0; i < 60000; i++) {
			size_t kl = (size_t)snprintf(k, sizeof(k), "wave:%06llu",
						     (unsigned long long)i);
			CHECK_RC(larder_put(w->cache, k, kl, "w", 1, LARDER_TTL_NEVER), LARDER_OK);
		}
		for (uint64_t i = 0; i < 60000; i++) {
			size_t kl = (size_t)snprintf(k, sizeof(k), "wave:%06llu",
						     (unsigned long long)i);
			CHECK_RC(larder_remove(w->cache, k, kl), LARDER_OK);
		}
	}
	return NULL;
}

/* Cursors walking while the index grows under them and other keys come and
 * go in waves of 60,000: every stable key once per walk. */
static void test_iter_across_waves(void)
{
	larder *c = th_open(th_config(64 * MiB));
	REQUIRE(c != NULL);
	for (uint64_t id = 0; id < STABLE; id++)
		put_id(c, id, 0, LARDER_TTL_NEVER);
	/* The stable keys' own growths are done and counted before the walks. */
	CHECK_EQ(th_quiesce(c, 60000), 0);
	uint64_t resizes = th_stat(c, LARDER_STAT_INDEX_RESIZES);
	_Atomic int stop = 0;
	struct waves w = {c, &stop};
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, waves_main, &w) == 0);
	/* 40 walks at least, and on until the waves have grown the index (their
	 * thread may start late on a loaded machine; the deadline is a hang
	 * guard). */
	uint64_t until = th_now_ms() + 30000 * TH_SLOW;
	int walks = 0;
	while ((walks < 40 || th_stat(c, LARDER_STAT_INDEX_RESIZES) == resizes) &&
	       th_now_ms() < until) {
		struct walk *walk = calloc(1, sizeof(*walk));
		REQUIRE(walk != NULL);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		uint64_t steps = 0;
		while (larder_iter_next(it, on_walk, walk) == LARDER_OK)
			if (++steps % 256 == 0)
				sched_yield();
		larder_iter_close(it);
		uint64_t bad = 0;
		for (uint64_t id = 0; id < STABLE; id++)
			bad += walk->seen[id] != 1;
		if (bad || walk->bad_value)
			th_fail(__FILE__, __LINE__,
				"walk %d: %llu stable keys not once, %llu bad values", walks,
				(unsigned long long)bad, (unsigned long long)walk->bad_value);
		free(walk);
		walks++;
	}
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	pthread_join(t, NULL);
	/* The maintainer counts a resize after it swaps the table in. */
	CHECK_EQ(th_quiesce(c, 60000), 0);
	CHECK_GT(th_stat(c, LARDER_STAT_INDEX_RESIZES), resizes);
	larder_close(c);
}

static struct th_clock clk;

/* "Iteration is not a read": with LARDER_EXPIRE_AFTER_ACCESS a cursor
 * extends no deadline, and one opened after the deadline hands out nothing
 * (nor does a save); a read in between does extend. */
static void test_iter_extends_nothing(void)
{
	th_clock_init(&clk, 1000000);
	larder_config *config = th_config(16 * MiB);
	REQUIRE(config != NULL);
	REQUIRE_RC(larder_config_set_clock(config, th_clock_fn, &clk), LARDER_OK);
	REQUIRE_RC(larder_config_set_expiry(config, LARDER_EXPIRE_AFTER_ACCESS), LARDER_OK);
	REQUIRE_RC(larder_config_set_default_ttl_ms(config, 1000), LARDER_OK);
	larder *c = th_open(config);
	REQUIRE(c != NULL);
	for (uint64_t id = 0; id < STABLE; id++)
		put_id(c, id, 0, LARDER_TTL_DEFAULT);
	char k[32], v[512];
	size_t vl;
	th_clock_advance(&clk, 600);
	for (int pass = 0; pass < 2; pass++) {
		struct walk *walk = calloc(1, sizeof(*walk));
		REQUIRE(walk != NULL);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		uint64_t n = 0;
		while (larder_iter_next(it, on_walk, walk) == LARDER_OK)
			n++;
		larder_iter_close(it);
		free(walk);
		/* Pass 0 at 600 ms: all there (key 0 read at 600 ms); pass 1 at
		 * 1200 ms: only key 0, which the read extended. */
		CHECK_EQ(n, pass == 0 ? (uint64_t)STABLE : 1u);
		if (pass == 0) {
			CHECK_RC(larder_get(c, k, key_of(k, 0), v, sizeof(v), &vl), LARDER_OK);
			th_clock_advance(&clk, 600);
		}
	}
	larder_close(c);
}

/* ---- snapshots across configurations ------------------------------------- */

static char dir[64];

static void make_dir(void)
{
	if (dir[0])
		return;
	snprintf(dir, sizeof(dir), "/tmp/larder-outside-XXXXXX");
	REQUIRE(mkdtemp(dir) != NULL);
}

static void remove_dir(void)
{
	if (!dir[0])
		return;
	DIR *d = opendir(dir);
	if (d != NULL) {
		struct dirent *e;
		char p[512];
		while ((e = readdir(d)) != NULL) {
			if (e->d_name[0] == '.')
				continue;
			snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
			unlink(p);
		}
		closedir(d);
	}
	rmdir(dir);
}

/* Files in dir other than the named one (left-over temporaries). */
static int stray_files(const char *keep)
{
	int n = 0;
	DIR *d = opendir(dir);
	if (d == NULL)
		return -1;
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		n += e->d_name[0] != '.' && strcmp(e->d_name, keep) != 0;
	closedir(d);
	return n;
}

enum { SNAP_KEYS = 3000 };

/* Every key back with its value; the odd ones with a TTL (an hour at the
 * save), the even ones with none (or the access default). */
static void check_loaded(larder *c, enum cfg from, enum cfg to)
{
	uint64_t missing = 0, bad = 0, bad_ttl = 0;
	char k[32], want[512], got[512];
	for (uint64_t id = 0; id < SNAP_KEYS; id++) {
		size_t kl = key_of(k, id), wl = value_of(want, id, 0), gl = 0;
		int rc = larder_peek(c, k, kl, got, sizeof(got), &gl);
		if (rc == LARDER_MISS) {
			missing++;
			continue;
		}
		if (rc != LARDER_OK || gl != wl || memcmp(got, want, wl) != 0) {
			bad++;
			continue;
		}
		uint64_t ttl = 0;
		CHECK_RC(larder_ttl_remaining(c, k, kl, &ttl), LARDER_OK);
		int timed = id % 2 == 1;
		if (timed ? ttl == LARDER_TTL_NEVER || ttl > 3600 * 1000 || ttl < 3000 * 1000
			  : ttl != LARDER_TTL_NEVER && to != CFG_ACCESS && from != CFG_ACCESS)
			bad_ttl++;
	}
	if (missing || bad || bad_ttl)
		th_fail(__FILE__, __LINE__, "%s -> %s: missing %llu, bad %llu, bad ttl %llu",
			cfg_name[from], cfg_name[to], (unsigned long long)missing,
			(unsigned long long)bad, (unsigned long long)bad_ttl);
}

static void test_snapshot_across_configs(void)
{
	make_dir();
	char path[128];
	snprintf(path, sizeof(path), "%s/cross.snap", dir);
	for (int from = 0; from < CFG_COUNT; from++) {
		larder_pool *pool;
		larder *src = open_cfg((enum cfg)from, 32 * MiB, &pool);
		REQUIRE(src != NULL);
		for (uint64_t id = 0; id < SNAP_KEYS; id++)
			put_id(src, id, 0, id % 2 ? 3600 * 1000 : LARDER_TTL_DEFAULT);
		CHECK_RC(larder_save(src, path), LARDER_OK);
		close_cfg(src, pool);
		for (int to = 0; to < CFG_COUNT; to++) {
			larder *dst = open_cfg((enum cfg)to, 32 * MiB, &pool);
			REQUIRE(dst != NULL);
			CHECK_RC(larder_load(dst, path), LARDER_OK);
			check_loaded(dst, (enum cfg)from, (enum cfg)to);
			close_cfg(dst, pool);
		}
	}
	unlink(path);
}

/* SNAP-L3 from outside, in every configuration: a snapshot four times a
 * small cache's capacity loads with LARDER_OK, fills it to its capacity and
 * no further, evicts nothing, and every entry it took is its key's. */
static void test_snapshot_into_smaller_every_config(void)
{
	make_dir();
	char path[128];
	snprintf(path, sizeof(path), "%s/big.snap", dir);
	enum { BIG_KEYS = 12000 };
	larder *src = th_open(th_config(64 * MiB));
	REQUIRE(src != NULL);
	for (uint64_t id = 0; id < BIG_KEYS; id++)
		put_id(src, id % ID_COUNT, id / ID_COUNT, LARDER_TTL_NEVER);
	CHECK_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);
	for (int k = 0; k < CFG_COUNT; k++) {
		larder_pool *pool;
		larder *c = open_cfg((enum cfg)k, MiB, &pool);
		REQUIRE(c != NULL);
		CHECK_RC(larder_load(c, path), LARDER_OK);
		REQUIRE_RC(th_flush(c, 60000), LARDER_OK);
		uint64_t cap = th_stat(c, LARDER_STAT_CAPACITY_BYTES);
		uint64_t used = th_stat(c, LARDER_STAT_USED_BYTES);
		uint64_t entries = th_stat(c, LARDER_STAT_ENTRIES);
		if (th_stat(c, LARDER_STAT_EVICTIONS) != 0 || used > cap || used < cap / 2 ||
		    entries == 0)
			th_fail(__FILE__, __LINE__,
				"%s: capacity %llu, used %llu, entries %llu, evictions %llu",
				cfg_name[k], (unsigned long long)cap, (unsigned long long)used,
				(unsigned long long)entries,
				(unsigned long long)th_stat(c, LARDER_STAT_EVICTIONS));
		struct walk *walk = calloc(1, sizeof(*walk));
		REQUIRE(walk != NULL);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		uint64_t n = 0;
		while (larder_iter_next(it, on_walk, walk) == LARDER_OK)
			n++;
		larder_iter_close(it);
		CHECK_EQ(n, entries);
		CHECK_EQ(walk->bad_value, 0);
		CHECK_EQ(walk->foreign, 0);
		free(walk);
		close_cfg(c, pool);
	}
	unlink(path);
}

/* SNAP-S2, SNAP-L7: a save to a FIFO (or a device such as /dev/null, when
 * run as root) is refused (LARDER_EINVAL) and leaves it as it was, writing
 * nothing beside it, where the rename used to replace it with a snapshot;
 * a directory fails at the rename (LARDER_ESYS). A load of either is
 * LARDER_EFORMAT at once, where a FIFO used to block the load until a
 * writer came. */
static void test_snapshot_path_not_a_file(void)
{
	make_dir();
	char fifo[128], sub[128];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	REQUIRE(mkfifo(fifo, 0600) == 0);
	REQUIRE(mkdir(sub, 0700) == 0);
	larder *c = th_open(th_config(4 * MiB));
	REQUIRE(c != NULL);
	put_id(c, 1, 0, LARDER_TTL_NEVER);
	CHECK_RC(larder_save(c, fifo), LARDER_EINVAL);
	CHECK_RC(larder_save(c, sub), LARDER_ESYS);
	struct stat st;
	CHECK(stat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
	CHECK(stat(sub, &st) == 0 && S_ISDIR(st.st_mode));
	CHECK_RC(larder_load(c, fifo), LARDER_EFORMAT);
	CHECK_RC(larder_load(c, sub), LARDER_EFORMAT);
	DIR *d = opendir(dir);
	REQUIRE(d != NULL);
	struct dirent *e;
	int others = 0;
	while ((e = readdir(d)) != NULL)
		others += e->d_name[0] != '.' && strcmp(e->d_name, "fifo") != 0 &&
			  strcmp(e->d_name, "sub") != 0;
	closedir(d);
	CHECK_EQ(others, 0);
	larder_close(c);
	unlink(fifo);
	rmdir(sub);
}

/* "Entries whose key or value exceed this cache's limits are skipped": a
 * snapshot with long keys and long values loads into a cache with lower
 * limits with LARDER_OK, every entry within them intact and no other. */
static void test_snapshot_into_lower_limits(void)
{
	make_dir();
	char path[128];
	snprintf(path, sizeof(path), "%s/limits.snap", dir);
	larder *src = th_open(th_config(64 * MiB));
	REQUIRE(src != NULL);
	enum { N = 400 };
	char k[300], v[5000];
	memset(v, 'v', sizeof(v));
	for (int i = 0; i < N; i++) {
		size_t kl = (size_t)snprintf(k, sizeof(k), "%04d", i);
		size_t long_kl = i % 2 ? 200 : kl; /* odd: a 200-byte key */
		memset(k + kl, 'k', sizeof(k) - kl);
		size_t vl = i % 3 == 0 ? 4000 : 10; /* every third: a 4000-byte value */
		CHECK_RC(larder_put(src, k, long_kl, v, vl, LARDER_TTL_NEVER), LARDER_OK);
	}
	CHECK_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);
	for (int k_ = 0; k_ < CFG_COUNT; k_++) {
		if (k_ == CFG_POOLED)
			continue; /* the limits are the config's, the same path */
		larder_config *config = th_config(64 * MiB);
		REQUIRE(config != NULL);
		REQUIRE_RC(larder_config_set_max_key_bytes(config, 100), LARDER_OK);
		REQUIRE_RC(larder_config_set_max_value_bytes(config, 1000), LARDER_OK);
		if (k_ == CFG_COMPRESS)
			REQUIRE_RC(larder_config_set_compression(config, 64, 10), LARDER_OK);
		larder *c = th_open(config);
		REQUIRE(c != NULL);
		CHECK_RC(larder_load(c, path), LARDER_OK);
		uint64_t wrong = 0;
		char got[5000];
		for (int i = 0; i < N; i++) {
			size_t kl = (size_t)snprintf(k, sizeof(k), "%04d", i);
			memset(k + kl, 'k', sizeof(k) - kl);
			size_t vl = i % 3 == 0 ? 4000 : 10, gl = 0;
			if (i % 2)
				continue; /* its key is over this cache's limit */
			int rc = larder_peek(c, k, kl, got, sizeof(got), &gl);
			if (vl <= 1000 ? rc != LARDER_OK || gl != vl || memcmp(got, v, vl) != 0
				       : rc != LARDER_MISS)
				wrong++;
		}
		CHECK_EQ(wrong, 0);
		REQUIRE_RC(th_flush(c, 60000), LARDER_OK);
		/* ids with a short key and a short value: even and not a multiple of 3 */
		uint64_t want = 0;
		for (int i = 0; i < N; i++)
			want += i % 2 == 0 && i % 3 != 0;
		CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), want);
		larder_close(c);
	}
	unlink(path);
}

struct order {
	uint64_t n;
	uint64_t id[ID_COUNT];
	uint64_t bytes[ID_COUNT];
};

static void on_order(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct order *o = ctx;
	(void)value;
	(void)value_len;
	(void)ttl_ms;
	uint64_t id = key_id(key, key_len);
	if (id != UINT64_MAX && o->n < ID_COUNT) {
		o->id[o->n] = id;
		o->bytes[o->n++] = entry_bytes;
	}
}

/* SNAP-L3 exactly: "into an empty one it is exact". The file holds the
 * saving cache's cursor order; a load into an empty cache of a quarter of
 * the bytes takes, in that order, each entry whose charge still fits under
 * the capacity and skips the rest, so the loaded set is computable from the
 * source's cursor (same configuration, so the same charges). */
static void test_snapshot_smaller_exact(void)
{
	make_dir();
	char path[128];
	snprintf(path, sizeof(path), "%s/exact.snap", dir);
	larder *src = th_open(th_config(64 * MiB));
	REQUIRE(src != NULL);
	for (uint64_t id = 0; id < ID_COUNT; id++)
		put_id(src, id, 0, LARDER_TTL_NEVER);
	struct order *o = calloc(1, sizeof(*o));
	REQUIRE(o != NULL);
	larder_iter *it;
	REQUIRE_RC(larder_iter_open(src, &it), LARDER_OK);
	while (larder_iter_next(it, on_order, o) == LARDER_OK)
		;
	larder_iter_close(it);
	CHECK_EQ(o->n, ID_COUNT);
	CHECK_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);

	const uint64_t cap = 1 * MiB;
	larder *c = th_open(th_config(cap));
	REQUIRE(c != NULL);
	CHECK_RC(larder_load(c, path), LARDER_OK);
	uint64_t used = 0, want = 0, wrong = 0;
	char k[32], got[512];
	for (uint64_t i = 0; i < o->n; i++) {
		int fits = used + o->bytes[i] <= cap;
		used += fits ? o->bytes[i] : 0;
		want += (uint64_t)fits;
		size_t gl;
		int rc = larder_peek(c, k, key_of(k, o->id[i]), got, sizeof(got), &gl);
		wrong += rc != (fits ? LARDER_OK : LARDER_MISS);
	}
	if (wrong)
		th_fail(__FILE__, __LINE__,
			"%llu of %llu entries loaded or skipped against the rule "
			"(%llu should fit, %llu bytes)",
			(unsigned long long)wrong, (unsigned long long)o->n,
			(unsigned long long)want, (unsigned long long)used);
	REQUIRE_RC(th_flush(c, 60000), LARDER_OK);
	CHECK_EQ(th_stat(c, LARDER_STAT_USED_BYTES), used);
	CHECK_EQ(th_stat(c, LARDER_STAT_EVICTIONS), 0);
	free(o);
	larder_close(c);
	unlink(path);
}

struct loader {
	larder *cache;
	const char *path;
	_Atomic int done;
};

static void *loader_main(void *arg)
{
	struct loader *l = arg;
	CHECK_RC(larder_load(l->cache, l->path), LARDER_OK);
	atomic_store_explicit(&l->done, 1, memory_order_release);
	return NULL;
}

/* A cursor walking while a load of a large snapshot (its parallel writers,
 * the index grown for it at once: SNAP-L4, SNAP-L6) fills the cache: each key
 * live throughout is handed out once, no key twice, every value its key's. */
static void test_iter_during_load(void)
{
	make_dir();
	char path[128];
	snprintf(path, sizeof(path), "%s/load.snap", dir);
	enum { LOADED = 100000 };
	larder *src = th_open(th_config(256 * MiB));
	REQUIRE(src != NULL);
	char k[32], v[512];
	for (uint64_t i = 0; i < LOADED; i++) {
		size_t kl = (size_t)snprintf(k, sizeof(k), "load:%06llu", (unsigned long long)i);
		CHECK_RC(larder_put(src, k, kl, v, value_of(v, i, 0), LARDER_TTL_NEVER), LARDER_OK);
	}
	CHECK_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);

	larder *c = th_open(th_config(256 * MiB));
	REQUIRE(c != NULL);
	for (uint64_t id = 0; id < STABLE; id++)
		put_id(c, id, 0, LARDER_TTL_NEVER);
	struct walk *walk = calloc(1, sizeof(*walk));
	REQUIRE(walk != NULL);
	larder_iter *it;
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	for (int i = 0; i < STABLE / 2; i++)
		CHECK_RC(larder_iter_next(it, on_walk, walk), LARDER_OK);
	uint64_t slots = th_stat(c, LARDER_STAT_INDEX_SLOTS);
	struct loader l = {c, path, 0};
	pthread_t t;
	REQUIRE(pthread_create(&t, NULL, loader_main, &l) == 0);
	/* The rest of the walk once the load has grown the index (or ended). */
	uint64_t until = th_now_ms() + 60000 * TH_SLOW;
	while (th_stat(c, LARDER_STAT_INDEX_SLOTS) == slots &&
	       !atomic_load_explicit(&l.done, memory_order_acquire) && th_now_ms() < until)
		sched_yield();
	CHECK_GT(th_stat(c, LARDER_STAT_INDEX_SLOTS), slots);
	int rc;
	while ((rc = larder_iter_next(it, on_walk, walk)) == LARDER_OK)
		;
	CHECK_RC(rc, LARDER_MISS);
	larder_iter_close(it);
	pthread_join(t, NULL);
	uint64_t stable_bad = 0, twice = 0;
	for (uint64_t id = 0; id < ID_COUNT; id++) {
		stable_bad += id < STABLE && walk->seen[id] != 1;
		twice += walk->seen[id] > 1;
	}
	CHECK_EQ(stable_bad, 0);
	CHECK_EQ(twice, 0);
	CHECK_EQ(walk->bad_value, 0);
	free(walk);
	larder_close(c);
	unlink(path);
}

/* Two loads of different snapshots into one cache at once (each a bulk
 * writer with its own threads and reserve), beside a writer of a third set
 * of keys: both return LARDER_OK, every entry of both files is there, and
 * the cache's totals match a walk of its index. */
static void test_two_loads_at_once(void)
{
	make_dir();
	enum { PER_FILE = 60000 };
	char path[2][128];
	char k[32], v[512];
	for (int f = 0; f < 2; f++) {
		snprintf(path[f], sizeof(path[f]), "%s/part%d.snap", dir, f);
		larder *src = th_open(th_config(256 * MiB));
		REQUIRE(src != NULL);
		for (uint64_t i = 0; i < PER_FILE; i++) {
			size_t kl = (size_t)snprintf(k, sizeof(k), "f%d:%06llu", f,
						     (unsigned long long)i);
			CHECK_RC(larder_put(src, k, kl, v, value_of(v, i, 0), LARDER_TTL_NEVER),
				 LARDER_OK);
		}
		CHECK_RC(larder_save(src, path[f]), LARDER_OK);
		larder_close(src);
	}
	larder *c = th_open(th_config(256 * MiB));
	REQUIRE(c != NULL);
	_Atomic int stop = 0;
	struct churn w = {c, &stop, 5};
	pthread_t writer, t[2];
	REQUIRE(pthread_create(&writer, NULL, churn_main, &w) == 0);
	struct loader l[2] = {{c, path[0], 0}, {c, path[1], 0}};
	for (int f = 0; f < 2; f++)
		REQUIRE(pthread_create(&t[f], NULL, loader_main, &l[f]) == 0);
	for (int f = 0; f < 2; f++)
		pthread_join(t[f], NULL);
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	pthread_join(writer, NULL);
	uint64_t missing = 0;
	char got[512];
	for (int f = 0; f < 2; f++)
		for (uint64_t i = 0; i < PER_FILE; i++) {
			size_t kl = (size_t)snprintf(k, sizeof(k), "f%d:%06llu", f,
						     (unsigned long long)i);
			size_t vl = value_of(v, i, 0), gl = 0;
			if (larder_peek(c, k, kl, got, sizeof(got), &gl) != LARDER_OK || gl != vl ||
			    memcmp(got, v, vl) != 0)
				missing++;
		}
	CHECK_EQ(missing, 0);
	CHECK(th_check_accounting(c, 60000, NULL, NULL));
	CHECK_EQ(th_stat(c, LARDER_STAT_EVICTIONS), 0);
	larder_close(c);
	unlink(path[0]);
	unlink(path[1]);
}

struct big_seen {
	int count[4];
	int bad;
};

/* Value i of the big ones: 3 MiB, compressible (i even) or not (odd). */
static void big_value(unsigned char *buf, size_t len, int i)
{
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1);
	for (size_t j = 0; j < len; j++)
		buf[j] = i % 2 ? (unsigned char)(th_mix64(x + j) >> 56)
			       : (unsigned char)('a' + (j / 4096 + (size_t)i) % 26);
}

static unsigned char *big_want;

static void on_big(void *ctx, const void *key, size_t key_len, const void *value, size_t value_len,
		   uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct big_seen *b = ctx;
	(void)ttl_ms;
	(void)entry_bytes;
	if (key_len != 4 || memcmp(key, "big", 3) != 0 || ((const char *)key)[3] < '0' ||
	    ((const char *)key)[3] > '3') {
		b->bad++;
		return;
	}
	int i = ((const char *)key)[3] - '0';
	b->count[i]++;
	big_value(big_want, 3 * MiB, i);
	if (value_len != 3 * MiB || memcmp(value, big_want, value_len) != 0)
		b->bad++;
}

/* Values of 3 MiB (past the threads' 1 MiB decompression buffers, in
 * private mappings), compressible and not, through a cursor and a
 * save/load between every pair of configurations. */
static void test_big_values_across_configs(void)
{
	make_dir();
	char path[128];
	snprintf(path, sizeof(path), "%s/bigv.snap", dir);
	unsigned char *v = malloc(3 * MiB);
	big_want = malloc(3 * MiB);
	REQUIRE(v != NULL && big_want != NULL);
	for (int from = 0; from < CFG_COUNT; from++) {
		larder_pool *pool;
		larder *src = open_cfg((enum cfg)from, 64 * MiB, &pool);
		REQUIRE(src != NULL);
		char k[8];
		for (int i = 0; i < 4; i++) {
			big_value(v, 3 * MiB, i);
			snprintf(k, sizeof(k), "big%d", i);
			CHECK_RC(larder_put(src, k, 4, v, 3 * MiB, LARDER_TTL_DEFAULT), LARDER_OK);
		}
		struct big_seen b = {{0}, 0};
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(src, &it), LARDER_OK);
		while (larder_iter_next(it, on_big, &b) == LARDER_OK)
			;
		larder_iter_close(it);
		CHECK(b.bad == 0 && b.count[0] == 1 && b.count[1] == 1 && b.count[2] == 1 &&
		      b.count[3] == 1);
		CHECK_RC(larder_save(src, path), LARDER_OK);
		close_cfg(src, pool);
		for (int to = 0; to < CFG_COUNT; to++) {
			larder *dst = open_cfg((enum cfg)to, 64 * MiB, &pool);
			REQUIRE(dst != NULL);
			CHECK_RC(larder_load(dst, path), LARDER_OK);
			memset(&b, 0, sizeof(b));
			REQUIRE_RC(larder_iter_open(dst, &it), LARDER_OK);
			while (larder_iter_next(it, on_big, &b) == LARDER_OK)
				;
			larder_iter_close(it);
			if (b.bad || b.count[0] != 1 || b.count[1] != 1 || b.count[2] != 1 ||
			    b.count[3] != 1)
				th_fail(__FILE__, __LINE__, "%s -> %s: bad %d, counts %d %d %d %d",
					cfg_name[from], cfg_name[to], b.bad, b.count[0], b.count[1],
					b.count[2], b.count[3]);
			close_cfg(dst, pool);
		}
	}
	free(v);
	free(big_want);
	unlink(path);
}

struct saver {
	larder *cache;
	const char *path;
	int rounds;
};

static void *saver_main(void *arg)
{
	struct saver *s = arg;
	for (int i = 0; i < s->rounds; i++)
		CHECK_RC(larder_save(s->cache, s->path), LARDER_OK);
	return NULL;
}

static void test_snapshot_concurrent_saves_one_path(void)
{
	make_dir();
	char path[128];
	snprintf(path, sizeof(path), "%s/same.snap", dir);
	larder *c = th_open(th_config(32 * MiB));
	REQUIRE(c != NULL);
	for (uint64_t id = 0; id < STABLE; id++)
		put_id(c, id, 0, LARDER_TTL_NEVER);
	_Atomic int stop = 0;
	struct churn w = {c, &stop, 99};
	pthread_t writer;
	REQUIRE(pthread_create(&writer, NULL, churn_main, &w) == 0);
	struct saver s[2] = {{c, path, 5}, {c, path, 5}};
	th_run_threads(2, saver_main, s, sizeof(s[0]));
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	pthread_join(writer, NULL);
	larder_close(c);
	CHECK_EQ(stray_files("same.snap"), 0);

	c = th_open(th_config(32 * MiB));
	REQUIRE(c != NULL);
	CHECK_RC(larder_load(c, path), LARDER_OK);
	struct walk *walk = calloc(1, sizeof(*walk));
	REQUIRE(walk != NULL);
	larder_iter *it;
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	while (larder_iter_next(it, on_walk, walk) == LARDER_OK)
		;
	larder_iter_close(it);
	uint64_t stable_bad = 0;
	for (uint64_t id = 0; id < STABLE; id++)
		stable_bad += walk->seen[id] != 1;
	CHECK_EQ(stable_bad, 0);
	CHECK_EQ(walk->bad_value, 0);
	CHECK_EQ(walk->foreign, 0);
	free(walk);
	larder_close(c);
	unlink(path);
}

/* ---- pools --------------------------------------------------------------- */

static larder_config *pooled_config(larder_pool *pool)
{
	larder_config *config = NULL;
	MUST(larder_config_create(&config));
	MUST(larder_config_set_pool(config, pool));
	MUST(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS));
	MUST(larder_config_set_shards(config, th_shards())); /* unit_outside_shards4: four */
	return config;
}

struct member {
	larder_pool *pool;
	_Atomic int *stop;
	uint64_t seed;
	_Atomic uint64_t opens; /* read by the test while it runs */
};

/* Opens a cache in the pool, fills it past its share, closes it; again. */
static void *member_main(void *arg)
{
	struct member *m = arg;
	struct th_rng rng = {m->seed};
	char k[32], v[4096];
	memset(v, 'x', sizeof(v));
	while (!atomic_load_explicit(m->stop, memory_order_relaxed)) {
		larder *c = NULL;
		larder_config *config = pooled_config(m->pool);
		int rc = larder_open(&c, config);
		larder_config_destroy(config);
		if (!CHECK_RC(rc, LARDER_OK))
			return NULL;
		atomic_fetch_add_explicit(&m->opens, 1, memory_order_relaxed);
		uint64_t n = 500 + th_rng_below(&rng, 3000);
		for (uint64_t i = 0; i < n; i++) {
			size_t kl = key_of(k, th_rng_below(&rng, ID_COUNT));
			rc = larder_put(c, k, kl, v, 256 + th_rng_below(&rng, 3800),
					LARDER_TTL_NEVER);
			CHECK(rc == LARDER_OK);
		}
		larder_close(c);
	}
	return NULL;
}

static uint64_t member_opens(struct member *m, int n)
{
	uint64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += atomic_load_explicit(&m[i].opens, memory_order_relaxed);
	return sum;
}

struct steady {
	larder_pool *pool;
	_Atomic int *stop;
	uint64_t seed;
};

/* A member open for the whole run, writing all along. */
static void *steady_main(void *arg)
{
	struct steady *s = arg;
	struct th_rng rng = {s->seed};
	char k[32], v[4096];
	memset(v, 'y', sizeof(v));
	larder *c = NULL;
	larder_config *config = pooled_config(s->pool);
	int rc = larder_open(&c, config);
	larder_config_destroy(config);
	if (!CHECK_RC(rc, LARDER_OK))
		return NULL;
	while (!atomic_load_explicit(s->stop, memory_order_relaxed)) {
		size_t kl = key_of(k, th_rng_below(&rng, ID_COUNT));
		CHECK_RC(larder_put(c, k, kl, v, 256 + th_rng_below(&rng, 3800), LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	larder_close(c);
	return NULL;
}

static void test_pool_members_come_and_go(void)
{
	const uint64_t budget = 8 * MiB;
	larder_pool_config *pc = NULL;
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	REQUIRE_RC(larder_pool_config_set_budget(pc, budget), LARDER_OK);
	REQUIRE_RC(larder_pool_config_set_interval_ms(pc, 5), LARDER_OK);
	larder_pool *pool = NULL;
	REQUIRE_RC(larder_pool_create(&pool, pc), LARDER_OK);
	larder_pool_config_destroy(pc);

	_Atomic int stop = 0;
	enum { MEMBERS = 3, STEADY = 2 };
	struct member m[MEMBERS];
	struct steady s[STEADY];
	pthread_t mt[MEMBERS], st[STEADY];
	for (int i = 0; i < STEADY; i++) {
		s[i] = (struct steady){pool, &stop, 77u + (uint64_t)i};
		REQUIRE(pthread_create(&st[i], NULL, steady_main, &s[i]) == 0);
	}
	for (int i = 0; i < MEMBERS; i++) {
		m[i] = (struct member){pool, &stop, 7u + (uint64_t)i, 0};
		REQUIRE(pthread_create(&mt[i], NULL, member_main, &m[i]) == 0);
	}
	/* Sample the bound (its own figure moves with the member count: take
	 * both in one call) for 1.5 s at least and until the members have come
	 * and gone a few times (a deadline turns a stall into a failure). */
	uint64_t over = 0, samples = 0, worst = 0;
	uint64_t least = th_now_ms() + 1500, until = th_now_ms() + 60000 * TH_SLOW;
	while (th_now_ms() < until &&
	       (th_now_ms() < least || member_opens(m, MEMBERS) <= 2 * MEMBERS)) {
		uint64_t v[LARDER_POOL_STAT_COUNT];
		REQUIRE_RC(larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT), LARDER_OK);
		uint64_t cap = v[LARDER_POOL_BUDGET_BYTES] + v[LARDER_POOL_OVERSHOOT_BOUND];
		samples++;
		if (v[LARDER_POOL_USED_BYTES] > cap) {
			over++;
			if (v[LARDER_POOL_USED_BYTES] - cap > worst)
				worst = v[LARDER_POOL_USED_BYTES] - cap;
		}
		usleep(200);
	}
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	for (int i = 0; i < MEMBERS; i++)
		pthread_join(mt[i], NULL);
	for (int i = 0; i < STEADY; i++)
		pthread_join(st[i], NULL);
	if (over)
		th_fail(__FILE__, __LINE__,
			"pool over its bound in %llu of %llu samples, by up to %llu bytes",
			(unsigned long long)over, (unsigned long long)samples,
			(unsigned long long)worst);
	CHECK_GT(member_opens(m, MEMBERS), 2 * MEMBERS);
	uint64_t v[LARDER_POOL_STAT_COUNT];
	REQUIRE_RC(larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT), LARDER_OK);
	CHECK_EQ(v[LARDER_POOL_CACHES], 0);
	CHECK_EQ(v[LARDER_POOL_ASSIGNED_BYTES], 0);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

struct hot {
	larder *cache;
	_Atomic int *stop;
	int reads; /* 1: reads a working set (misses filled); 0: writes new keys */
};

static void *hot_main(void *arg)
{
	struct hot *h = arg;
	struct th_rng rng = {h->reads ? 5u : 6u};
	char k[32], v[1024], got[1024];
	memset(v, 'h', sizeof(v));
	uint64_t n = 0;
	size_t gl;
	while (!atomic_load_explicit(h->stop, memory_order_relaxed)) {
		size_t kl = key_of(k, h->reads ? th_rng_below(&rng, 12000) : n++);
		if (h->reads && larder_get(h->cache, k, kl, got, sizeof(got), &gl) == LARDER_OK)
			continue;
		int rc = larder_put(h->cache, k, kl, v, 1000, LARDER_TTL_NEVER);
		CHECK(rc == LARDER_OK);
	}
	return NULL;
}

/* The controller moves capacity to the cache whose extra bytes earn hits:
 * of two caches in a 16 MiB pool, one reads a 12 MiB working set (a miss
 * fills it), the other writes keys it never reads. Polled with a generous
 * deadline: only a pool that never moves fails. With caches of four
 * shards, each probe sees its shard 0 alone (PROBE-P9 in pool/probe.c), a
 * quarter of the keys, and the split can settle short of 2x: an ASan CI
 * run stayed at 10.1 against 5.9 MiB (1.72x) for its whole 240 s, so there
 * the reader must hold 1.5x the writer's capacity and 9 MiB. */
static void pool_capacity_follows_hits(unsigned shards)
{
	const double ratio = shards > 1 ? 1.5 : 2.0;
	const double least = (shards > 1 ? 9.0 : 10.0) * (double)MiB;
	larder_pool_config *pc = NULL;
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	REQUIRE_RC(larder_pool_config_set_budget(pc, 16 * MiB), LARDER_OK);
	REQUIRE_RC(larder_pool_config_set_interval_ms(pc, 50), LARDER_OK);
	larder_pool *pool = NULL;
	REQUIRE_RC(larder_pool_create(&pool, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	larder *c[2];
	for (int i = 0; i < 2; i++) {
		larder_config *config = pooled_config(pool);
		MUST(larder_config_set_shards(config, shards));
		REQUIRE_RC(larder_open(&c[i], config), LARDER_OK);
		larder_config_destroy(config);
	}
	_Atomic int stop = 0;
	struct hot h[2] = {{c[0], &stop, 0}, {c[1], &stop, 1}};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&t[i], NULL, hot_main, &h[i]) == 0);
	double cap[2] = {0, 0};
	uint64_t until = th_now_ms() + 60000 * TH_SLOW;
	while (th_now_ms() < until) {
		for (int i = 0; i < 2; i++)
			REQUIRE_RC(larder_pool_cache_stats(pool, c[i], &cap[i], 1), LARDER_OK);
		if (cap[1] > ratio * cap[0] && cap[1] > least)
			break;
		usleep(20000);
	}
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	if (!(cap[1] > ratio * cap[0] && cap[1] > least))
		th_fail(__FILE__, __LINE__, "reader's capacity %.0f, writer's %.0f", cap[1],
			cap[0]);
	for (int i = 0; i < 2; i++)
		larder_close(c[i]);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

static void test_pool_capacity_follows_hits(void)
{
	pool_capacity_follows_hits(1);
}

static void test_pool_capacity_follows_hits_shards(void)
{
	pool_capacity_follows_hits(4);
}

struct opener {
	larder_config *config;
	_Atomic uint64_t opens; /* read by the test while it runs */
	int last_rc;
};

/* Opens and closes caches from one config until an open is refused. */
static void *opener_main(void *arg)
{
	struct opener *o = arg;
	char k[32], v[256];
	memset(v, 'o', sizeof(v));
	for (;;) {
		larder *c = NULL;
		int rc = larder_open(&c, o->config);
		if (rc != LARDER_OK) {
			o->last_rc = rc;
			return NULL;
		}
		atomic_fetch_add_explicit(&o->opens, 1, memory_order_relaxed);
		for (uint64_t i = 0; i < 50; i++)
			CHECK_RC(larder_put(c, k, key_of(k, i), v, sizeof(v), LARDER_TTL_NEVER),
				 LARDER_OK);
		larder_close(c);
		usleep(100); /* a gap in which the pool may have no cache open */
	}
}

static uint64_t opener_opens(struct opener *o, int n)
{
	uint64_t sum = 0;
	for (int i = 0; i < n; i++)
		sum += atomic_load_explicit(&o[i].opens, memory_order_relaxed);
	return sum;
}

/* larder_pool_close racing with opens and closes on other threads: it is
 * refused while a cache is open and succeeds between them; every open
 * after it fails with LARDER_ESTATE, and the configs naming the pool stay
 * usable until destroyed (ASan watches the pool's memory). */
static void test_pool_close_races_opens(void)
{
	larder_pool_config *pc = NULL;
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	REQUIRE_RC(larder_pool_config_set_interval_ms(pc, 1), LARDER_OK);
	larder_pool *pool = NULL;
	REQUIRE_RC(larder_pool_create(&pool, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	enum { OPENERS = 3 };
	struct opener o[OPENERS];
	pthread_t t[OPENERS];
	for (int i = 0; i < OPENERS; i++) {
		o[i] = (struct opener){pooled_config(pool), 0, LARDER_OK};
		REQUIRE(pthread_create(&t[i], NULL, opener_main, &o[i]) == 0);
	}
	/* Let them open a few times, then close the pool as soon as it lets us. */
	uint64_t until = th_now_ms() + 60000 * TH_SLOW;
	while (opener_opens(o, OPENERS) < 3 * OPENERS && th_now_ms() < until)
		usleep(1000);
	int rc;
	while ((rc = larder_pool_close(pool)) == LARDER_ESTATE && th_now_ms() < until)
		;
	CHECK_RC(rc, LARDER_OK);
	for (int i = 0; i < OPENERS; i++) {
		pthread_join(t[i], NULL);
		CHECK_RC(o[i].last_rc, LARDER_ESTATE);
		larder_config_destroy(o[i].config);
	}
}

static void test_pool_lifecycle_from_outside(void)
{
	larder_pool_config *pc = NULL;
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	CHECK_RC(larder_pool_config_set_budget(pc, 0), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, MiB - 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(NULL, 8 * MiB), LARDER_EINVAL);
	REQUIRE_RC(larder_pool_config_set_budget(pc, 8 * MiB), LARDER_OK);
	larder_pool *a = NULL, *b = NULL;
	CHECK_RC(larder_pool_create(NULL, pc), LARDER_EINVAL);
	CHECK_RC(larder_pool_create(&a, NULL), LARDER_EINVAL);
	CHECK(a == NULL);
	REQUIRE_RC(larder_pool_create(&a, pc), LARDER_OK);
	REQUIRE_RC(larder_pool_create(&b, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	CHECK_RC(larder_pool_close(NULL), LARDER_EINVAL);

	/* A config moved from pool a to pool b opens in b only: a closes with
	 * the cache open, b refuses to. */
	larder_config *config = pooled_config(a);
	REQUIRE_RC(larder_config_set_pool(config, b), LARDER_OK);
	larder *c = NULL;
	REQUIRE_RC(larder_open(&c, config), LARDER_OK);
	uint64_t v[LARDER_POOL_STAT_COUNT];
	REQUIRE_RC(larder_pool_stats(b, v, LARDER_POOL_STAT_COUNT), LARDER_OK);
	CHECK_EQ(v[LARDER_POOL_CACHES], 1);
	REQUIRE_RC(larder_pool_stats(a, v, LARDER_POOL_STAT_COUNT), LARDER_OK);
	CHECK_EQ(v[LARDER_POOL_CACHES], 0);
	CHECK_RC(larder_pool_close(b), LARDER_ESTATE);
	CHECK_RC(larder_set_capacity(c, 4 * MiB), LARDER_ESTATE);
	CHECK_RC(larder_pool_close(a), LARDER_OK);
	larder_close(c);
	CHECK_RC(larder_pool_close(b), LARDER_OK);
	/* The config still names b, now closed: refused, and its memory kept
	 * valid until the config goes (ASan/LSan watch both). */
	c = (larder *)(uintptr_t)1;
	CHECK_RC(larder_open(&c, config), LARDER_ESTATE);
	CHECK(c == NULL);
	larder_config_destroy(config);

	/* Refused opens leave nothing behind in the pool: a capacity of its
	 * own, min shares summing past 1. (More than one shard was refused
	 * too until pool27; PROBE-P9 in pool/probe.c.) */
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	REQUIRE_RC(larder_pool_create(&a, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	config = pooled_config(a);
	REQUIRE_RC(larder_config_set_shards(config, 4), LARDER_OK);
	REQUIRE_RC(larder_open(&c, config), LARDER_OK);
	larder_close(c);
	REQUIRE_RC(larder_config_set_capacity(config, 4 * MiB), LARDER_OK);
	CHECK_RC(larder_open(&c, config), LARDER_EINVAL);
	larder_config_destroy(config);
	config = pooled_config(a);
	REQUIRE_RC(larder_config_set_pool_shares(config, 0.6, 1), LARDER_OK);
	larder *first = NULL;
	REQUIRE_RC(larder_open(&first, config), LARDER_OK);
	CHECK_RC(larder_open(&c, config), LARDER_EINVAL);
	CHECK(c == NULL);
	REQUIRE_RC(larder_pool_stats(a, v, LARDER_POOL_STAT_COUNT), LARDER_OK);
	CHECK_EQ(v[LARDER_POOL_CACHES], 1);
	larder_close(first);
	larder_config_destroy(config);
	CHECK_RC(larder_pool_close(a), LARDER_OK);

	/* Unpooling a config: capacity may be set again. */
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	REQUIRE_RC(larder_pool_create(&a, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	config = pooled_config(a);
	REQUIRE_RC(larder_config_set_pool(config, NULL), LARDER_OK);
	REQUIRE_RC(larder_config_set_capacity(config, 4 * MiB), LARDER_OK);
	REQUIRE_RC(larder_open(&c, config), LARDER_OK);
	CHECK_RC(larder_set_capacity(c, 8 * MiB), LARDER_OK);
	larder_close(c);
	CHECK_RC(larder_pool_close(a), LARDER_OK);
	larder_config_destroy(config);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_iter_racing_every_config),
		TH_TEST(test_iter_across_shrink_and_clear),
		TH_TEST(test_iter_across_waves),
		TH_TEST(test_iter_extends_nothing),
		TH_TEST(test_snapshot_across_configs),
		TH_TEST(test_snapshot_into_smaller_every_config),
		TH_TEST(test_snapshot_smaller_exact),
		TH_TEST(test_snapshot_into_lower_limits),
		TH_TEST(test_iter_during_load),
		TH_TEST(test_two_loads_at_once),
		TH_TEST(test_big_values_across_configs),
		TH_TEST(test_snapshot_concurrent_saves_one_path),
		TH_TEST(test_snapshot_path_not_a_file),
		TH_TEST(test_pool_members_come_and_go),
		TH_TEST(test_pool_capacity_follows_hits),
		TH_TEST(test_pool_capacity_follows_hits_shards),
		TH_TEST(test_pool_close_races_opens),
		TH_TEST(test_pool_lifecycle_from_outside),
	};
	int rc = th_main(argc, argv, tests, TH_COUNT(tests));
	remove_dir();
	return rc;
}
