/*
 * tests/unit/test_audit_warm.c - the fifth outside audit: warm restart and
 * cursors across the options, with the cache busy (this file also runs as
 * unit_audit_warm_shards4).
 *
 * Checked, from larder.h's promises only (the harness's injected clock and
 * self-checking values; no engine internals):
 *   - larder_save beside writers, on caches of every policy (FIFO, LRU,
 *     W-TinyLFU, ARC) x one or four shards x compression (off, LZ4, a
 *     given dictionary) x expiry mode, each snapshot loaded into three
 *     other caches (a larger one of another policy, shard count, expiry
 *     mode and compression; a smaller one; a pool's member): every key
 *     live for the whole save is in the larger one with its exact value
 *     (a value of 0 bytes, one at max_value_bytes and a key at
 *     max_key_bytes included), no key twice, every value whole and its
 *     key's, no entry expired before the save, no TTL longer than saved,
 *     LARDER_TTL_NEVER kept beside a default TTL; the smaller caches
 *     filled to their capacity and no further, nothing evicted by a load;
 *   - a save while another thread moves the clock through the entries'
 *     deadlines: nothing expired when it began is in the file, nothing is
 *     loaded with more time than it had then;
 *   - the threaded load (a 20 MiB file) into a cache of four shards
 *     that trains its dictionary from the values loaded, extends deadlines
 *     on access and has a listener, beside two readers: every read whole,
 *     every value and TTL as saved, nothing evicted or reported;
 *   - larder_load into a cache that already holds keys: the overwritten
 *     keys reach the listener once each, as REPLACED, or as EXPIRED where
 *     their TTL had run out; nothing else does;
 *   - a cursor while another thread loads a snapshot of new keys into
 *     the cache (its index grown by 2^k at once): every key there before
 *     handed out exactly once, no key twice;
 *   - snapshots loaded into a pool's member while the controller moves
 *     capacity every millisecond, beside another member's writer and a
 *     third member opened and closed: the capacities within the budget and
 *     the used bytes within its bound at every sample, the pool's used
 *     bytes its members' summed once quiet;
 *   - a cursor whose walker writes two new keys per step (the index
 *     grows under it) while another thread writes, reads, moves the
 *     capacity down and up (evicting) and clears: a key that the listener
 *     never heard of leaving during the walk is handed out exactly once,
 *     no key twice, every value whole.
 * Mutation-checked: a cursor that ignores deadlines (the busy save and the
 * save while deadlines pass), a load that ignores the capacity or drops
 * TTLs, a scan that skips the table a growth copies into (index/scan.c
 * SCAN-S1b) each fail here.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define T0 1000u

#define STABLE 400u       /* ids [0, STABLE): no TTL; [STABLE, 2 STABLE): LIVE_TTL */
#define DOOMED 200u       /* ids [2 STABLE, 2 STABLE + DOOMED): expired before the save */
#define CHURN_BASE 10000u /* the writers' ids: [CHURN_BASE, CHURN_BASE + CHURN) */
#define CHURN 2000u
#define IDS (CHURN_BASE + CHURN)
#define LIVE_TTL 1000000u
#define DOOMED_TTL 10u
#define MAX_VALUE (64 * KiB)
#define MAX_KEY 64u

static char tmp_dir[64];

/* path[128] gets name's place in the test's own directory; 0 without one. */
static int snap_path(char path[128], const char *name)
{
	if (!tmp_dir[0]) {
		snprintf(tmp_dir, sizeof tmp_dir, "/tmp/larder-audit-warm-XXXXXX");
		if (!mkdtemp(tmp_dir))
			return 0;
	}
	snprintf(path, 128, "%s/%s", tmp_dir, name);
	return 1;
}

static size_t key_of(char *buf, unsigned id)
{
	return (size_t)snprintf(buf, 16, "w%06u", id);
}

/* The id of a key made by key_of, or UINT32_MAX for another key. */
static uint32_t id_of(const void *key, size_t key_len)
{
	char k[16];
	if (key_len != 7 || ((const char *)key)[0] != 'w')
		return UINT32_MAX;
	memcpy(k, key, key_len);
	k[key_len] = 0;
	return (uint32_t)strtoul(k + 1, NULL, 10);
}

/* The two keys at the limits: a value of 0 bytes, and a key of MAX_KEY bytes
 * whose value is MAX_VALUE bytes long. */
static const char zero_key[] = "zero";
static char long_key[MAX_KEY];

static size_t stable_len(unsigned id)
{
	return 32 + (id * 37u) % 900u;
}

/* ---- Save beside writers, load elsewhere ---------------------------------- */

struct source_cfg {
	enum larder_policy policy;
	unsigned shards;
	int compression; /* 0 off, 1 LZ4 alone, 2 a given dictionary */
	enum larder_expiry expiry;
};

static uint64_t stable_version[2 * STABLE], long_version;
static unsigned char dict[4 * KiB];

static larder *open_source(const struct source_cfg *s, struct th_clock *clk)
{
	larder_config *cfg = th_config(8 * MiB);
	if (!cfg)
		return NULL;
	int ok = CHECK_RC(larder_config_set_policy(cfg, s->policy), LARDER_OK) &&
		 CHECK_RC(larder_config_set_shards(cfg, s->shards), LARDER_OK) &&
		 CHECK_RC(larder_config_set_expiry(cfg, s->expiry), LARDER_OK) &&
		 CHECK_RC(larder_config_set_default_ttl_ms(cfg, LIVE_TTL), LARDER_OK) &&
		 CHECK_RC(larder_config_set_max_value_bytes(cfg, MAX_VALUE), LARDER_OK) &&
		 CHECK_RC(larder_config_set_max_key_bytes(cfg, MAX_KEY), LARDER_OK) &&
		 CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, clk), LARDER_OK);
	if (ok && s->compression)
		ok = CHECK_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK) &&
		     CHECK_RC(larder_config_set_compression_dictionary(
				      cfg,
				      s->compression == 2 ? LARDER_DICTIONARY_GIVEN
							  : LARDER_DICTIONARY_NONE,
				      s->compression == 2 ? dict : NULL,
				      s->compression == 2 ? sizeof dict : 0),
			      LARDER_OK);
	if (!ok) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return th_open(cfg);
}

/* The keys no writer touches: stable ones (half with a TTL), doomed ones
 * (expired by the clock's step before the save), and the two at the limits. */
static int fill_source(larder *c, struct th_clock *clk)
{
	unsigned char *v = malloc(MAX_VALUE);
	char k[16];
	int ok = v != NULL;
	for (unsigned id = 0; ok && id < 2 * STABLE + DOOMED; id++) {
		uint64_t ttl = id < STABLE       ? LARDER_TTL_NEVER
			       : id < 2 * STABLE ? LIVE_TTL
						 : DOOMED_TTL;
		size_t n = th_value_make(v, id, stable_len(id), 0);
		if (id < 2 * STABLE)
			memcpy(&stable_version[id], v + offsetof(struct th_value_header, version),
			       sizeof(uint64_t));
		ok = CHECK_RC(larder_put(c, k, key_of(k, id), v, n, ttl), LARDER_OK);
	}
	if (ok) {
		size_t n = th_value_make(v, UINT32_MAX, MAX_VALUE, 0);
		memcpy(&long_version, v + offsetof(struct th_value_header, version),
		       sizeof(uint64_t));
		ok = CHECK_RC(larder_put(c, zero_key, sizeof zero_key - 1, NULL, 0,
					 LARDER_TTL_NEVER),
			      LARDER_OK) &&
		     CHECK_RC(larder_put(c, long_key, MAX_KEY, v, n, LARDER_TTL_NEVER), LARDER_OK);
	}
	th_clock_advance(clk, DOOMED_TTL * 2);
	free(v);
	return ok;
}

struct writer_arg {
	larder *cache;
	_Atomic int *stop;
	uint64_t seed;
};

/* Puts (no TTL or LIVE_TTL), removes and reads churn keys until told to
 * stop, checking every result and value; at least 200 operations however
 * late it starts. */
static void *writer_main(void *arg)
{
	struct writer_arg *a = arg;
	struct th_rng r = {a->seed};
	unsigned char v[1024], buf[1024];
	char k[16];
	for (unsigned n = 0; n < 200 || !atomic_load(a->stop); n++) {
		unsigned id = CHURN_BASE + (unsigned)th_rng_below(&r, CHURN);
		size_t kl = key_of(k, id), len;
		uint64_t op = th_rng_below(&r, 10);
		if (op < 6) {
			size_t vl = th_value_make(v, id, 32 + th_rng_below(&r, 900), 0);
			CHECK_RC(larder_put(a->cache, k, kl, v, vl,
					    op < 3 ? LARDER_TTL_NEVER : LIVE_TTL),
				 LARDER_OK);
		} else if (op < 8) {
			int rc = larder_remove(a->cache, k, kl);
			CHECK(rc == LARDER_OK || rc == LARDER_MISS);
		} else {
			int rc = larder_get(a->cache, k, kl, buf, sizeof buf, &len);
			if (CHECK(rc == LARDER_OK || rc == LARDER_MISS) && rc == LARDER_OK)
				th_value_check("writer's read", id, buf, len, NULL);
		}
	}
	return NULL;
}

enum target_kind { T_LARGER, T_SMALLER, T_POOLED, T_KINDS };
static const char *const target_name[T_KINDS] = {"larger", "smaller", "pooled"};

struct walk {
	const char *where;
	uint8_t seen[IDS];
	unsigned zero, longk, foreign, count;
};

/* The loaded cache's cursor: each entry against what was saved. */
static void check_loaded(void *ctx, const void *key, size_t key_len, const void *value,
			 size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk *w = ctx;
	struct th_value_header h;
	(void)entry_bytes;
	w->count++;
	if (key_len == sizeof zero_key - 1 && !memcmp(key, zero_key, key_len)) {
		w->zero++;
		if (value_len != 0 || ttl_ms != LARDER_TTL_NEVER)
			TH_FAIL_CAPPED(30, "%s: the empty value has %zu bytes, TTL %llu", w->where,
				       value_len, (unsigned long long)ttl_ms);
		return;
	}
	if (key_len == MAX_KEY && !memcmp(key, long_key, MAX_KEY)) {
		w->longk++;
		if (th_value_check(w->where, UINT32_MAX, value, value_len, &h) &&
		    (value_len != MAX_VALUE || h.version != long_version))
			TH_FAIL_CAPPED(30, "%s: the longest key's value is not the one saved",
				       w->where);
		return;
	}
	uint32_t id = id_of(key, key_len);
	if (id >= IDS || (id >= 2 * STABLE + DOOMED && id < CHURN_BASE)) {
		w->foreign++;
		return;
	}
	if (w->seen[id]++)
		TH_FAIL_CAPPED(30, "%s: key %u handed out twice", w->where, id);
	if (!th_value_check(w->where, id, value, value_len, &h))
		return;
	if (id >= 2 * STABLE && id < CHURN_BASE)
		TH_FAIL_CAPPED(30, "%s: key %u, expired before the save, was loaded", w->where, id);
	else if (id < STABLE && ttl_ms != LARDER_TTL_NEVER)
		TH_FAIL_CAPPED(30, "%s: key %u saved with no TTL has %llu ms", w->where, id,
			       (unsigned long long)ttl_ms);
	else if (ttl_ms != LARDER_TTL_NEVER &&
		 ttl_ms > (id < CHURN_BASE ? LIVE_TTL - 2 * DOOMED_TTL : LIVE_TTL))
		TH_FAIL_CAPPED(30, "%s: key %u has %llu ms, more than it had at the save", w->where,
			       id, (unsigned long long)ttl_ms);
	else if (id >= STABLE && id < 2 * STABLE && ttl_ms == LARDER_TTL_NEVER)
		TH_FAIL_CAPPED(30, "%s: key %u lost its TTL", w->where, id);
	if (id < 2 * STABLE && (value_len != stable_len(id) || h.version != stable_version[id]))
		TH_FAIL_CAPPED(30, "%s: key %u's value is not the one saved", w->where, id);
}

static larder *open_target(enum target_kind kind, const struct source_cfg *s, struct th_clock *clk,
			   larder_pool **pool)
{
	larder_config *cfg = NULL;
	int ok;
	if (kind == T_POOLED) {
		larder_pool_config *pc = NULL;
		if (!CHECK_RC(larder_pool_config_create(&pc), LARDER_OK))
			return NULL;
		ok = CHECK_RC(larder_pool_config_set_budget(pc, MiB), LARDER_OK) &&
		     CHECK_RC(larder_pool_config_set_interval_ms(pc, 0), LARDER_OK) &&
		     CHECK_RC(larder_pool_create(pool, pc), LARDER_OK);
		larder_pool_config_destroy(pc);
		if (!ok || !CHECK_RC(larder_config_create(&cfg), LARDER_OK))
			return NULL;
		ok = CHECK_RC(larder_config_set_pool(cfg, *pool), LARDER_OK) &&
		     CHECK_RC(larder_config_set_write_wait_ms(cfg, TH_WRITE_WAIT_MS), LARDER_OK);
	} else {
		cfg = th_config(kind == T_LARGER ? 32 * MiB : 256 * KiB);
		if (!cfg)
			return NULL;
		/* The larger one differs from its source in everything it can. */
		ok = kind == T_SMALLER ||
		     (CHECK_RC(larder_config_set_policy(cfg, s->policy == LARDER_POLICY_LRU
								     ? LARDER_POLICY_S3FIFO_TUNED
								     : LARDER_POLICY_LRU),
			       LARDER_OK) &&
		      CHECK_RC(larder_config_set_shards(cfg, 5 - s->shards), LARDER_OK) &&
		      CHECK_RC(larder_config_set_expiry(cfg, 1 - s->expiry), LARDER_OK) &&
		      CHECK_RC(larder_config_set_default_ttl_ms(cfg, 5000), LARDER_OK) &&
		      CHECK_RC(larder_config_set_compression(cfg, s->compression ? 0 : 1, 0),
			       LARDER_OK));
		ok = ok && CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, clk), LARDER_OK);
	}
	ok = ok && CHECK_RC(larder_config_set_max_value_bytes(cfg, MAX_VALUE), LARDER_OK) &&
	     CHECK_RC(larder_config_set_max_key_bytes(cfg, MAX_KEY), LARDER_OK);
	if (!ok) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return th_open(cfg);
}

static int has_budget(void *ctx)
{
	return th_stat(ctx, LARDER_STAT_CAPACITY_BYTES) == MiB;
}

/* Loads path into a cache of kind and checks it against the source's keys. */
static void load_and_check(const char *path, enum target_kind kind, const struct source_cfg *s,
			   const char *where)
{
	static struct walk w;
	static struct th_clock clk;
	larder_pool *pool = NULL;
	th_clock_init(&clk, T0);
	larder *c = open_target(kind, s, &clk, &pool);
	/* A member grows to its share (the whole budget) in the background. */
	if (c && kind == T_POOLED)
		CHECK(th_wait_until(has_budget, c, 60000));
	if (c) {
		memset(&w, 0, sizeof w);
		w.where = where;
		CHECK_RC(larder_load(c, path), LARDER_OK);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		int rc;
		while ((rc = larder_iter_next(it, check_loaded, &w)) == LARDER_OK)
			;
		CHECK_RC(rc, LARDER_MISS);
		larder_iter_close(it);
		CHECK_EQ(w.foreign, 0);
		CHECK_LE(w.zero, 1);
		CHECK_LE(w.longk, 1);
		CHECK_RC(larder_flush(c, 60000 * TH_SLOW), LARDER_OK);
		if (kind == T_LARGER) {
			/* Everything live for the whole save fits, so it is there. */
			CHECK_EQ(w.zero, 1);
			CHECK_EQ(w.longk, 1);
			unsigned stable = 0;
			for (unsigned id = 0; id < 2 * STABLE; id++)
				stable += w.seen[id];
			CHECK_EQ(stable, 2 * STABLE);
		} else {
			/* Filled to its capacity and no further; a value over the
			 * entry limit (1/8 of 256 KiB) skipped. */
			CHECK_LE(th_stat(c, LARDER_STAT_USED_BYTES),
				 th_stat(c, LARDER_STAT_CAPACITY_BYTES));
			CHECK_GT(th_stat(c, LARDER_STAT_USED_BYTES),
				 th_stat(c, LARDER_STAT_CAPACITY_BYTES) / 2);
			if (kind == T_SMALLER)
				CHECK_EQ(w.longk, 0);
		}
		CHECK_EQ(th_stat(c, LARDER_STAT_EVICTIONS), 0);
		CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), w.count);
		CHECK(th_check_accounting(c, 10000, NULL, NULL));
		larder_close(c);
	}
	if (pool)
		CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

static void test_save_beside_writers_load_elsewhere(void)
{
	static const enum larder_policy policies[] = {LARDER_POLICY_FIFO, LARDER_POLICY_LRU,
						      LARDER_POLICY_WTINYLFU, LARDER_POLICY_ARC};
	char path[128];
	REQUIRE(snap_path(path, "busy.snap"));
	static const char sample[] = "{\"id\":0,\"name\":\"larder\",\"tags\":[]}";
	for (size_t i = 0; i < sizeof dict; i++)
		dict[i] = (unsigned char)sample[i % (sizeof sample - 1)];
	memset(long_key, 'L', sizeof long_key);
	for (unsigned round = 0; round < 8; round++) {
		struct source_cfg s = {policies[round % 4], round < 4 ? 1 : 4, round % 3,
				       (enum larder_expiry)(round / 2 % 2)};
		static struct th_clock clk;
		th_clock_init(&clk, T0);
		larder *src = open_source(&s, &clk);
		REQUIRE(src);
		REQUIRE(fill_source(src, &clk));
		_Atomic int stop = 0;
		struct writer_arg wa[2] = {{src, &stop, 2 * round + 1},
					   {src, &stop, 2 * round + 2}};
		pthread_t t[2];
		for (int i = 0; i < 2; i++)
			REQUIRE(pthread_create(&t[i], NULL, writer_main, &wa[i]) == 0);
		CHECK_RC(larder_save(src, path), LARDER_OK);
		atomic_store(&stop, 1);
		for (int i = 0; i < 2; i++)
			pthread_join(t[i], NULL);
		char where[96];
		for (int kind = 0; kind < T_KINDS; kind++) {
			snprintf(where, sizeof where,
				 "policy %d, %u shard(s), compression %d, expiry %d into the %s",
				 s.policy, s.shards, s.compression, s.expiry, target_name[kind]);
			load_and_check(path, (enum target_kind)kind, &s, where);
		}
		larder_close(src);
	}
	unlink(path);
}

/* ---- Load into a cache that holds keys ------------------------------------ */

static _Atomic unsigned heard[300][5];

static void count_removal(void *ctx, const void *key, size_t key_len, const void *value,
			  size_t value_len, enum larder_cause cause)
{
	(void)ctx;
	(void)value;
	(void)value_len;
	uint32_t id = id_of(key, key_len);
	if (id < 300 && cause <= LARDER_CAUSE_CLEARED)
		atomic_fetch_add(&heard[id][cause], 1);
	else
		TH_FAIL_CAPPED(30, "the listener heard of key %u, cause %d", id, cause);
}

static void test_load_over_present_keys(void)
{
	char path[128], k[16];
	unsigned char v[256], buf[256];
	REQUIRE(snap_path(path, "over.snap"));
	memset(heard, 0, sizeof heard);
	larder *src = th_open(th_config(4 * MiB));
	REQUIRE(src);
	uint64_t saved[100], kept[100];
	for (unsigned id = 0; id < 100; id++) {
		size_t n = th_value_make(v, id, 40 + id, 0);
		memcpy(&saved[id], v + offsetof(struct th_value_header, version), 8);
		REQUIRE_RC(larder_put(src, k, key_of(k, id), v, n, LARDER_TTL_NEVER), LARDER_OK);
	}
	REQUIRE_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);
	static struct th_clock clk;
	th_clock_init(&clk, T0);
	larder_config *cfg = th_config(4 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_removal_listener(cfg, count_removal, NULL), LARDER_OK);
	REQUIRE_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	/* Keys 50..149 before the load: 50..99 are in the snapshot too, and
	 * 50..74 have expired (whether reclaimed yet or not) when it loads. */
	for (unsigned id = 50; id < 150; id++) {
		size_t n = th_value_make(v, id, 100, 0);
		if (id >= 100)
			memcpy(&kept[id - 100], v + offsetof(struct th_value_header, version), 8);
		REQUIRE_RC(larder_put(c, k, key_of(k, id), v, n,
				      id < 75 ? DOOMED_TTL : LARDER_TTL_NEVER),
			   LARDER_OK);
	}
	th_clock_advance(&clk, 2 * DOOMED_TTL);
	CHECK_RC(larder_load(c, path), LARDER_OK);
	REQUIRE_RC(larder_flush(c, 60000 * TH_SLOW), LARDER_OK);
	for (unsigned id = 0; id < 150; id++) {
		size_t len;
		uint64_t ttl = 0;
		struct th_value_header h;
		int rc = larder_get(c, k, key_of(k, id), buf, sizeof buf, &len);
		if (!CHECK_RC(rc, LARDER_OK) || !th_value_check("after the load", id, buf, len, &h))
			continue;
		CHECK_EQ(h.version, id < 100 ? saved[id] : kept[id - 100]);
		CHECK_RC(larder_ttl_remaining(c, k, key_of(k, id), &ttl), LARDER_OK);
		CHECK_EQ(ttl, LARDER_TTL_NEVER);
		int expired = id >= 50 && id < 75, replaced = id >= 75 && id < 100;
		for (int cause = 0; cause < 5; cause++)
			CHECK_EQ(atomic_load(&heard[id][cause]),
				 (expired && cause == LARDER_CAUSE_EXPIRED) ||
					 (replaced && cause == LARDER_CAUSE_REPLACED));
	}
	CHECK_EQ(th_stat(c, LARDER_STAT_REPLACEMENTS), 25);
	CHECK_EQ(th_stat(c, LARDER_STAT_EXPIRATIONS), 25);
	CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 150);
	CHECK(th_check_accounting(c, 10000, NULL, NULL));
	larder_close(c);
	unlink(path);
}

/* ---- Deadlines passing while a save runs --------------------------------- */

#define DUE 4000u /* key id i is due at T0 + 1 + i / 2 on the saving cache's clock */

struct ticker_arg {
	struct th_clock *clk;
	_Atomic int *stop;
};

/* Moves the clock 1 ms at a time until told to stop or every key is due. */
static void *ticker_main(void *arg)
{
	struct ticker_arg *a = arg;
	while (!atomic_load(a->stop) && atomic_load(&a->clk->now_ms) < T0 + 1 + DUE / 2) {
		th_clock_advance(a->clk, 1);
		sched_yield();
	}
	return NULL;
}

struct due_walk {
	uint64_t start; /* the saving clock before the save began */
	uint8_t seen[DUE];
};

static void check_due(void *ctx, const void *key, size_t key_len, const void *value,
		      size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct due_walk *w = ctx;
	(void)entry_bytes;
	uint32_t id = id_of(key, key_len);
	if (!CHECK(id < DUE) || !th_value_check("a loaded snapshot", id, value, value_len, NULL))
		return;
	uint64_t deadline = T0 + 1 + id / 2;
	if (w->seen[id]++)
		TH_FAIL_CAPPED(30, "key %u loaded twice", id);
	if (deadline <= w->start)
		TH_FAIL_CAPPED(30,
			       "key %u, due at %llu, expired before the save (clock %llu), "
			       "was loaded",
			       id, (unsigned long long)deadline, (unsigned long long)w->start);
	else if (ttl_ms == LARDER_TTL_NEVER || ttl_ms > deadline - w->start)
		TH_FAIL_CAPPED(30, "key %u loaded with %llu ms, more than the %llu it had", id,
			       (unsigned long long)ttl_ms,
			       (unsigned long long)(deadline - w->start));
}

/* A save while another thread moves the saving cache's clock through its
 * entries' deadlines: an entry already expired when the save began is never
 * in the file, and none is loaded with more time than it had then. */
static void test_save_while_deadlines_pass(void)
{
	char path[128], k[16];
	unsigned char v[128];
	static struct due_walk w;
	REQUIRE(snap_path(path, "due.snap"));
	for (int compress = 0; compress < 2; compress++) {
		static struct th_clock clk, lclk;
		th_clock_init(&clk, T0);
		larder_config *cfg = th_config(8 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
		if (compress)
			REQUIRE_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK);
		larder *src = th_open(cfg);
		REQUIRE(src);
		for (unsigned id = 0; id < DUE; id++) {
			size_t n = th_value_make(v, id, 32 + id % 90, 0);
			REQUIRE_RC(larder_put(src, k, key_of(k, id), v, n, 1 + id / 2), LARDER_OK);
		}
		/* A third of them due before the save begins. */
		th_clock_advance(&clk, DUE / 6);
		_Atomic int stop = 0;
		struct ticker_arg ta = {&clk, &stop};
		pthread_t t;
		memset(&w, 0, sizeof w);
		w.start = atomic_load(&clk.now_ms);
		REQUIRE(pthread_create(&t, NULL, ticker_main, &ta) == 0);
		CHECK_RC(larder_save(src, path), LARDER_OK);
		atomic_store(&stop, 1);
		pthread_join(t, NULL);
		larder_close(src);
		th_clock_init(&lclk, T0);
		cfg = th_config(8 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_clock(cfg, th_clock_fn, &lclk), LARDER_OK);
		larder *dst = th_open(cfg);
		REQUIRE(dst);
		CHECK_RC(larder_load(dst, path), LARDER_OK);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(dst, &it), LARDER_OK);
		int rc;
		while ((rc = larder_iter_next(it, check_due, &w)) == LARDER_OK)
			;
		CHECK_RC(rc, LARDER_MISS);
		larder_iter_close(it);
		larder_close(dst);
	}
	unlink(path);
}

/* ---- A threaded load into a training cache beside readers ------------------ */

#define BULK 16000u /* about 20 MiB of records: the threaded load (16 MiB or more) */

static uint64_t bulk_version[BULK];
static _Atomic unsigned bulk_heard;

static void count_any(void *ctx, const void *key, size_t key_len, const void *value,
		      size_t value_len, enum larder_cause cause)
{
	(void)ctx;
	(void)key;
	(void)key_len;
	(void)value;
	(void)value_len;
	(void)cause;
	atomic_fetch_add(&bulk_heard, 1);
}

struct reader_arg {
	larder *cache;
	_Atomic int *stop;
	uint64_t seed, found;
};

/* Reads random keys while the load runs: each value found whole and its
 * key's (get_with: the decompressed bytes in place). */
static void check_read(void *ctx, const void *value, size_t value_len)
{
	const uint32_t *id = ctx;
	th_value_check("a read beside the load", *id, value, value_len, NULL);
}

static void *reader_main(void *arg)
{
	struct reader_arg *a = arg;
	struct th_rng r = {a->seed};
	char k[16];
	for (unsigned n = 0; n < 1000 || !atomic_load(a->stop); n++) {
		uint32_t id = (uint32_t)th_rng_below(&r, BULK);
		int rc = larder_get_with(a->cache, k, key_of(k, id), check_read, &id);
		if (CHECK(rc == LARDER_OK || rc == LARDER_MISS))
			a->found += rc == LARDER_OK;
	}
	return NULL;
}

/* A snapshot of 20 MiB loaded by the threaded load into a cache of four
 * shards that trains its compression dictionary from what the load writes,
 * extends deadlines on access and has a listener, while two threads read:
 * every read whole, then every entry there with the value saved and its
 * TTL, nothing evicted or reported. */
static void test_threaded_load_into_training_cache(void)
{
	char path[128], k[16];
	static unsigned char v[2048], buf[2048];
	REQUIRE(snap_path(path, "bulk.snap"));
	larder *src = th_open(th_config(64 * MiB));
	REQUIRE(src);
	for (unsigned id = 0; id < BULK; id++) {
		size_t n = th_value_make(v, id, 1200 + id % 200, 0);
		memcpy(&bulk_version[id], v + offsetof(struct th_value_header, version), 8);
		REQUIRE_RC(larder_put(src, k, key_of(k, id), v, n,
				      id % 2 ? LARDER_TTL_NEVER : LIVE_TTL),
			   LARDER_OK);
	}
	REQUIRE_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);
	static struct th_clock clk;
	th_clock_init(&clk, T0);
	atomic_store(&bulk_heard, 0);
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_shards(cfg, 4), LARDER_OK);
	REQUIRE_RC(larder_config_set_compression(cfg, 64, 0), LARDER_OK);
	REQUIRE_RC(larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS), LARDER_OK);
	REQUIRE_RC(larder_config_set_default_ttl_ms(cfg, LIVE_TTL / 2), LARDER_OK);
	REQUIRE_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
	REQUIRE_RC(larder_config_set_removal_listener(cfg, count_any, NULL), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	_Atomic int stop = 0;
	struct reader_arg ra[2] = {{c, &stop, 11, 0}, {c, &stop, 12, 0}};
	pthread_t t[2];
	for (int i = 0; i < 2; i++)
		REQUIRE(pthread_create(&t[i], NULL, reader_main, &ra[i]) == 0);
	CHECK_RC(larder_load(c, path), LARDER_OK);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_RC(larder_flush(c, 60000 * TH_SLOW), LARDER_OK);
	for (unsigned id = 0; id < BULK; id++) {
		size_t len, kl = key_of(k, id);
		uint64_t ttl = 0;
		struct th_value_header h;
		if (!CHECK_RC(larder_peek(c, k, kl, buf, sizeof buf, &len), LARDER_OK) ||
		    !th_value_check("after the load", id, buf, len, &h))
			continue;
		if (h.version != bulk_version[id])
			TH_FAIL_CAPPED(30, "key %u: not the value saved", id);
		CHECK_RC(larder_ttl_remaining(c, k, kl, &ttl), LARDER_OK);
		if (id % 2 ? ttl != LARDER_TTL_NEVER : ttl == LARDER_TTL_NEVER || ttl > LIVE_TTL)
			TH_FAIL_CAPPED(30, "key %u: TTL %llu after the load", id,
				       (unsigned long long)ttl);
	}
	CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), BULK);
	CHECK_EQ(th_stat(c, LARDER_STAT_EVICTIONS), 0);
	CHECK_EQ(atomic_load(&bulk_heard), 0);
	CHECK(th_check_accounting(c, 10000, NULL, NULL));
	larder_close(c);
	unlink(path);
}

/* ---- A cursor beside capacity moves and clears ----------------------------- */

#define CUR_STABLE 3000u
#define CUR_CHURN_BASE 100000u
#define CUR_CHURN 20000u

static _Atomic uint32_t left[CUR_STABLE]; /* removals heard per stable key */

static void count_left(void *ctx, const void *key, size_t key_len, const void *value,
		       size_t value_len, enum larder_cause cause)
{
	(void)ctx;
	(void)value;
	(void)value_len;
	(void)cause;
	uint32_t id = id_of(key, key_len);
	if (id < CUR_STABLE)
		atomic_fetch_add(&left[id], 1);
}

struct mover_arg {
	larder *cache;
	_Atomic int *stop;
	int clears;
	uint64_t seed;
};

/* Grows the index with new keys and moves the capacity from 4 MiB to
 * 1 MiB and back (evicting), and clears the cache if asked, until told to
 * stop. */
static void *mover_main(void *arg)
{
	struct mover_arg *a = arg;
	struct th_rng r = {a->seed};
	unsigned char v[256];
	char k[16];
	for (unsigned n = 0; n < 2000 || !atomic_load(a->stop); n++) {
		unsigned id = CUR_CHURN_BASE + (unsigned)th_rng_below(&r, CUR_CHURN);
		size_t vl = th_value_make(v, id, 32 + th_rng_below(&r, 200), 0);
		CHECK_RC(larder_put(a->cache, k, key_of(k, id), v, vl, LARDER_TTL_NEVER),
			 LARDER_OK);
		/* Reads keep half of the stable keys hot, so that some of them
		 * outlive the evictions. */
		size_t kl = key_of(k, (unsigned)th_rng_below(&r, CUR_STABLE / 2)), len;
		int rc = larder_get(a->cache, k, kl, v, sizeof v, &len);
		CHECK(rc == LARDER_OK || rc == LARDER_MISS);
		if (n % 500 == 250)
			CHECK_RC(larder_set_capacity(a->cache, MiB), LARDER_OK);
		else if (n % 500 == 0)
			CHECK_RC(larder_set_capacity(a->cache, 4 * MiB), LARDER_OK);
		if (a->clears && n % 1500 == 700)
			CHECK_RC(larder_clear(a->cache), LARDER_OK);
	}
	return NULL;
}

#define CUR_FRESH_BASE 200000u /* keys the walker writes, never twice */
#define CUR_FRESH 6000u        /* per walk */
#define CUR_FRESH_END (CUR_FRESH_BASE + 4 * CUR_FRESH)

struct cursor_walk {
	uint8_t seen[CUR_FRESH_END];
};

static void note_key(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct cursor_walk *w = ctx;
	(void)ttl_ms;
	(void)entry_bytes;
	uint32_t id = id_of(key, key_len);
	if (!CHECK(id < CUR_STABLE || (id >= CUR_CHURN_BASE && id < CUR_CHURN_BASE + CUR_CHURN) ||
		   (id >= CUR_FRESH_BASE && id < CUR_FRESH_END)))
		return;
	if (w->seen[id]++)
		TH_FAIL_CAPPED(30, "the cursor handed key %u out twice", id);
	th_value_check("the cursor", id, value, value_len, NULL);
}

static void test_cursor_beside_capacity_moves(void)
{
	static struct cursor_walk w;
	static uint32_t before[CUR_STABLE];
	unsigned char v[256];
	char k[16];
	for (int clears = 0; clears < 2; clears++) {
		memset(left, 0, sizeof left);
		larder_config *cfg = th_config(4 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_policy(cfg,
						    clears ? LARDER_POLICY_ARC : LARDER_POLICY_LRU),
			   LARDER_OK);
		REQUIRE_RC(larder_config_set_removal_listener(cfg, count_left, NULL), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		unsigned checked = 0, fresh = CUR_FRESH_BASE;
		for (unsigned round = 0; round < 4; round++) {
			/* Every stable key present before the cursor opens. */
			for (unsigned id = 0; id < CUR_STABLE; id++) {
				size_t kl = key_of(k, id);
				if (larder_contains(c, k, kl) == LARDER_OK)
					continue;
				size_t vl = th_value_make(v, id, 48 + id % 64, 0);
				REQUIRE_RC(larder_put(c, k, kl, v, vl, LARDER_TTL_NEVER),
					   LARDER_OK);
			}
			REQUIRE_EQ(th_quiesce(c, 60000), 0);
			for (unsigned id = 0; id < CUR_STABLE; id++)
				before[id] = atomic_load(&left[id]);
			memset(&w, 0, sizeof w);
			_Atomic int stop = 0;
			struct mover_arg ma = {c, &stop, clears && round % 2, round + 1};
			pthread_t t;
			REQUIRE(pthread_create(&t, NULL, mover_main, &ma) == 0);
			larder_iter *it;
			REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
			int rc;
			/* Two new keys per step, CUR_FRESH of them at most: the index
			 * grows under the cursor. */
			unsigned fresh_end = fresh + CUR_FRESH;
			while ((rc = larder_iter_next(it, note_key, &w)) == LARDER_OK) {
				for (int i = 0; i < 2 && fresh < fresh_end; i++, fresh++) {
					size_t vl = th_value_make(v, fresh, 40, 0);
					CHECK_RC(larder_put(c, k, key_of(k, fresh), v, vl,
							    LARDER_TTL_NEVER),
						 LARDER_OK);
				}
			}
			CHECK_RC(rc, LARDER_MISS);
			larder_iter_close(it);
			atomic_store(&stop, 1);
			pthread_join(t, NULL);
			/* Every removal made during the walk has reached the listener. */
			REQUIRE_EQ(th_quiesce(c, 60000), 0);
			for (unsigned id = 0; id < CUR_STABLE; id++) {
				if (atomic_load(&left[id]) != before[id])
					continue;
				checked++;
				if (w.seen[id] != 1)
					TH_FAIL_CAPPED(30,
						       "stable key %u, live throughout, handed out "
						       "%u times",
						       id, w.seen[id]);
			}
			CHECK_RC(larder_set_capacity(c, 4 * MiB), LARDER_OK);
		}
		CHECK_GT(checked, 0);
		CHECK(th_check_accounting(c, 10000, NULL, NULL));
		larder_close(c);
	}
}

struct loader_arg {
	larder *cache;
	const char *path;
	int rc;
};

static void *loader_main(void *arg)
{
	struct loader_arg *a = arg;
	a->rc = larder_load(a->cache, a->path);
	return NULL;
}

static int load_began(void *ctx)
{
	return th_stat(ctx, LARDER_STAT_WRITES) > CUR_STABLE;
}

/* A cursor walked while another thread loads a snapshot of new keys into
 * the cache, which grows its index at once to hold them (docs/persistence.md,
 * SNAP-L6): every key there before and untouched handed out exactly once,
 * no loaded key twice. */
static void test_cursor_beside_a_load(void)
{
	static struct cursor_walk w;
	char path[128], k[16];
	unsigned char v[256];
	REQUIRE(snap_path(path, "fresh.snap"));
	larder *src = th_open(th_config(64 * MiB));
	REQUIRE(src);
	for (unsigned id = CUR_FRESH_BASE; id < CUR_FRESH_BASE + 3 * CUR_FRESH; id++) {
		size_t vl = th_value_make(v, id, 40 + id % 100, 0);
		REQUIRE_RC(larder_put(src, k, key_of(k, id), v, vl, LARDER_TTL_NEVER), LARDER_OK);
	}
	REQUIRE_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);
	for (int round = 0; round < 4; round++) {
		larder *c = th_open(th_config(64 * MiB));
		REQUIRE(c);
		for (unsigned id = 0; id < CUR_STABLE; id++) {
			size_t vl = th_value_make(v, id, 48 + id % 64, 0);
			REQUIRE_RC(larder_put(c, k, key_of(k, id), v, vl, LARDER_TTL_NEVER),
				   LARDER_OK);
		}
		memset(&w, 0, sizeof w);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		/* The load starts at a later step each round; in the first two
		 * the walk waits for it to end (so the rest of the walk meets
		 * the grown index), in the others they run side by side. */
		struct loader_arg la = {c, path, LARDER_OK};
		pthread_t t;
		int rc, started = 0, joined = 0;
		for (unsigned step = 0; (rc = larder_iter_next(it, note_key, &w)) == LARDER_OK;
		     step++) {
			if (started || step != (unsigned)(round % 2 + 1) * CUR_STABLE / 3)
				continue;
			started = CHECK(pthread_create(&t, NULL, loader_main, &la) == 0);
			if (started && round < 2)
				joined = !pthread_join(t, NULL);
			else if (started) /* the index grown, the load's writes going on */
				CHECK(th_wait_until(load_began, c, 60000));
		}
		CHECK_RC(rc, LARDER_MISS);
		larder_iter_close(it);
		CHECK(started);
		if (started && !joined)
			pthread_join(t, NULL);
		CHECK_RC(la.rc, LARDER_OK);
		for (unsigned id = 0; id < CUR_STABLE; id++)
			if (w.seen[id] != 1)
				TH_FAIL_CAPPED(30,
					       "round %d: key %u, untouched, handed out %u times",
					       round, id, w.seen[id]);
		/* ENTRIES lags the load's writes by a batching window (the
		 * maintainer counts them); a flush makes the count exact. */
		CHECK_RC(larder_flush(c, 60000 * TH_SLOW), LARDER_OK);
		CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES) >= CUR_STABLE, 1);
		larder_close(c);
	}
	unlink(path);
}

/* ---- Loads into a pool's member while capacity moves ----------------------- */

struct pool_run {
	larder_pool *pool;
	larder *member; /* the writer's cache */
	_Atomic int stop;
	uint64_t samples, over_budget, over_bound;
};

/* Writes into its member until told to stop (at least 2,000 puts). */
static void *pool_writer_main(void *arg)
{
	struct pool_run *r = arg;
	unsigned char v[1024];
	char k[16];
	for (unsigned n = 0; n < 2000 || !atomic_load(&r->stop); n++) {
		unsigned id = n % 20000;
		size_t vl = th_value_make(v, id, 200 + n % 800, 0);
		int rc = larder_put(r->member, k, key_of(k, id), v, vl, LARDER_TTL_NEVER);
		CHECK(rc == LARDER_OK || rc == LARDER_EBUSY);
	}
	return NULL;
}

/* Samples the pool's figures (each read under its lock) until told to stop:
 * the capacities within the budget, the used bytes within its bound. */
static void *pool_monitor_main(void *arg)
{
	struct pool_run *r = arg;
	while (!atomic_load(&r->stop) || r->samples < 100) {
		uint64_t v[LARDER_POOL_STAT_COUNT];
		if (!CHECK_RC(larder_pool_stats(r->pool, v, LARDER_POOL_STAT_COUNT), LARDER_OK))
			break;
		r->samples++;
		r->over_budget += v[LARDER_POOL_ASSIGNED_BYTES] > v[LARDER_POOL_BUDGET_BYTES];
		r->over_bound += v[LARDER_POOL_USED_BYTES] >
				 v[LARDER_POOL_BUDGET_BYTES] + v[LARDER_POOL_OVERSHOOT_BOUND];
		sched_yield();
	}
	return NULL;
}

static larder *open_pooled(larder_pool *pool)
{
	larder_config *cfg = NULL;
	larder *c = NULL;
	if (CHECK_RC(larder_config_create(&cfg), LARDER_OK) &&
	    CHECK_RC(larder_config_set_pool(cfg, pool), LARDER_OK) &&
	    CHECK_RC(larder_config_set_write_wait_ms(cfg, TH_WRITE_WAIT_MS), LARDER_OK))
		CHECK_RC(larder_open(&c, cfg), LARDER_OK);
	larder_config_destroy(cfg);
	return c;
}

/* Snapshots larger than its share loaded into one member of a pool whose
 * controller moves capacity every millisecond, beside a member written by
 * another thread and a third opened and closed: the capacities never sum
 * past the budget nor the used bytes past its bound (sampled), every walk
 * of the member hands out whole values, no key twice, the member refuses
 * larder_set_capacity, and once quiet the pool's used bytes are its
 * members' summed. */
static void test_loads_into_a_pool_member(void)
{
	char path[128], k[16];
	unsigned char v[1024];
	REQUIRE(snap_path(path, "pool.snap"));
	larder *src = th_open(th_config(64 * MiB));
	REQUIRE(src);
	for (unsigned id = CUR_FRESH_BASE; id < CUR_FRESH_BASE + 2 * CUR_FRESH; id++) {
		size_t vl = th_value_make(v, id, 300 + id % 700, 0);
		REQUIRE_RC(larder_put(src, k, key_of(k, id), v, vl, LARDER_TTL_NEVER), LARDER_OK);
	}
	REQUIRE_RC(larder_save(src, path), LARDER_OK); /* about 8 MiB */
	larder_close(src);
	larder_pool_config *pc = NULL;
	static struct pool_run r;
	memset(&r, 0, sizeof r);
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	int ok = CHECK_RC(larder_pool_config_set_budget(pc, 8 * MiB), LARDER_OK) &&
		 CHECK_RC(larder_pool_config_set_interval_ms(pc, 1), LARDER_OK) &&
		 CHECK_RC(larder_pool_create(&r.pool, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	REQUIRE(ok);
	larder *a = open_pooled(r.pool);
	r.member = open_pooled(r.pool);
	REQUIRE(a && r.member);
	CHECK_RC(larder_set_capacity(a, 4 * MiB), LARDER_ESTATE);
	pthread_t tw, tm;
	REQUIRE(pthread_create(&tw, NULL, pool_writer_main, &r) == 0);
	REQUIRE(pthread_create(&tm, NULL, pool_monitor_main, &r) == 0);
	for (int round = 0; round < 6; round++) {
		larder *third = round % 2 ? NULL : open_pooled(r.pool);
		int rc = larder_load(a, path);
		CHECK(rc == LARDER_OK || rc == LARDER_EBUSY);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(a, &it), LARDER_OK);
		static struct cursor_walk w;
		memset(&w, 0, sizeof w);
		while ((rc = larder_iter_next(it, note_key, &w)) == LARDER_OK)
			;
		CHECK_RC(rc, LARDER_MISS);
		larder_iter_close(it);
		larder_close(third);
		CHECK_RC(larder_clear(a), LARDER_OK);
	}
	atomic_store(&r.stop, 1);
	pthread_join(tw, NULL);
	pthread_join(tm, NULL);
	CHECK_EQ(r.over_budget, 0);
	CHECK_EQ(r.over_bound, 0);
	CHECK_EQ(th_quiesce(a, 60000), 0);
	CHECK_EQ(th_quiesce(r.member, 60000), 0);
	uint64_t pv[LARDER_POOL_STAT_COUNT];
	CHECK_RC(larder_pool_stats(r.pool, pv, LARDER_POOL_STAT_COUNT), LARDER_OK);
	CHECK_EQ(pv[LARDER_POOL_CACHES], 2);
	CHECK_EQ(pv[LARDER_POOL_USED_BYTES],
		 th_stat(a, LARDER_STAT_USED_BYTES) + th_stat(r.member, LARDER_STAT_USED_BYTES));
	CHECK_LE(pv[LARDER_POOL_ASSIGNED_BYTES], pv[LARDER_POOL_BUDGET_BYTES]);
	larder_close(a);
	larder_close(r.member);
	CHECK_RC(larder_pool_close(r.pool), LARDER_OK);
	unlink(path);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_save_beside_writers_load_elsewhere),
		TH_TEST(test_load_over_present_keys),
		TH_TEST(test_save_while_deadlines_pass),
		TH_TEST(test_threaded_load_into_training_cache),
		TH_TEST(test_cursor_beside_capacity_moves),
		TH_TEST(test_cursor_beside_a_load),
		TH_TEST(test_loads_into_a_pool_member),
	};
	int rc = th_main(argc, argv, tests, TH_COUNT(tests));
	if (tmp_dir[0])
		rmdir(tmp_dir);
	return rc;
}
