/*
 * tests/unit/test_reentry.c - calls into larder from inside larder: removal
 * listeners and read callbacks that use their own cache and other caches,
 * in cycles (larder.h, "Re-entrant calls").
 *
 * Invariants checked:
 *   TREENTRY-R1. listeners that write into each other's caches (two caches, and a
 *       cycle of three) never stall and never fail: every write succeeds,
 *       and the number of listener writes is exactly what the chain of
 *       replacements calls for (each replacement of a key of depth d < DEPTH
 *       writes its value under a key of depth d + 1 into the next cache);
 *   TREENTRY-R2. a listener may write its own cache, also more writes in one
 *       maintainer pass than its event ring holds (they spill: counted in
 *       LARDER_STAT_EVENTS_SPILLED), and every one of them lands;
 *   TREENTRY-R3. a listener may call every operation on its own cache and on
 *       another, with the documented results;
 *   TREENTRY-R4. read callbacks that write into each other's caches while listeners
 *       do too: every write succeeds;
 *   TREENTRY-R5. a listener's write never waits, also where another thread's would:
 *       at the memory bound it fails at once with LARDER_EBUSY (counted as
 *       LARDER_STAT_BUSY_MEMORY), though the cache's write wait is an hour;
 *   TREENTRY-R6. afterwards the caches' counters agree with a walk of their index.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "harness.h"

#define DEPTH 3         /* keys "k..", "Lk..", "LLk..", "LLLk.." */
#define BASE_KEYS 300
#define ROUNDS 30
#define MAX_CACHES 3

static _Atomic long writes_ok, writes_failed;
static _Atomic int first_failure;

static void note_write(int rc)
{
	if (rc == LARDER_OK) {
		atomic_fetch_add(&writes_ok, 1);
		return;
	}
	if (atomic_fetch_add(&writes_failed, 1) == 0)
		atomic_store(&first_failure, rc);
}

static void reset_counts(void)
{
	atomic_store(&writes_ok, 0);
	atomic_store(&writes_failed, 0);
	atomic_store(&first_failure, LARDER_OK);
}

static size_t depth_of(const char *key, size_t len)
{
	size_t d = 0;
	while (d < len && key[d] == 'L')
		d++;
	return d;
}

/* ---- TREENTRY-R1: a cycle of caches whose listeners write into the next one ------ */

struct cycle {
	larder *cache[MAX_CACHES];
	int n;
};

struct link {
	struct cycle *cycle;
	int at;
};

/* Each replacement of a key of depth < DEPTH writes the replaced value under
 * "L" + key into the next cache of the cycle. */
static void chain_listener(void *ctx, const void *key, size_t key_len, const void *value,
			   size_t value_len, enum larder_cause cause)
{
	struct link *l = ctx;
	char next_key[64];

	if (cause != LARDER_CAUSE_REPLACED || depth_of(key, key_len) >= DEPTH ||
	    key_len + 1 > sizeof(next_key))
		return;
	next_key[0] = 'L';
	memcpy(next_key + 1, key, key_len);
	note_write(larder_put(l->cycle->cache[(l->at + 1) % l->cycle->n], next_key, key_len + 1,
			      value, value_len, LARDER_TTL_NEVER));
}

/* Quiesces every cache until none of them has anything left to do: a
 * listener of one may post to the others. */
static void quiesce_all(larder *const *caches, int n)
{
	uint64_t before = 0, after = 1;

	for (int round = 0; before != after && round < 100; round++) {
		before = after;
		after = 0;
		for (int i = 0; i < n; i++) {
			CHECK_EQ(th_quiesce(caches[i], 60000), 0);
			after += th_stat(caches[i], LARDER_STAT_WRITES);
		}
	}
	CHECK_EQ(before, after);
}

static void run_cycle(int n)
{
	struct cycle cy = {{NULL}, n};
	struct link links[MAX_CACHES];
	long main_failed = 0;
	char value[64];

	reset_counts();
	for (int i = 0; i < n; i++) {
		larder_config *config = th_config(64 * MiB);
		links[i] = (struct link){&cy, i};
		REQUIRE(config != NULL);
		CHECK_RC(larder_config_set_expected_entries(config, 1u << 16), LARDER_OK);
		CHECK_RC(larder_config_set_removal_listener(config, chain_listener, &links[i]),
			 LARDER_OK);
		cy.cache[i] = th_open(config);
		REQUIRE(cy.cache[i] != NULL);
	}
	/* The caller's writes stop at the first failure: on an engine that
	 * stalls, each later write would wait a second more. */
	for (int r = 0; r < ROUNDS && main_failed == 0; r++) {
		for (int k = 0; k < BASE_KEYS && main_failed == 0; k++) {
			char key[16];
			int len = snprintf(key, sizeof(key), "k%d", k);
			int vlen = snprintf(value, sizeof(value), "round %d of key %d", r, k);
			for (int i = 0; i < n; i++) {
				int rc = larder_put(cy.cache[i], key, (size_t)len, value, (size_t)vlen,
						    LARDER_TTL_NEVER);
				if (!CHECK_RC(rc, LARDER_OK))
					main_failed++;
			}
		}
	}
	quiesce_all(cy.cache, n);
	/* A key of depth d is put ROUNDS - d times, so replaced ROUNDS - d - 1
	 * times, each of which writes one key of depth d + 1. */
	long want = 0;
	for (int d = 0; d < DEPTH; d++)
		want += ROUNDS - d - 1;
	want *= (long)n * BASE_KEYS;
	printf("  %d caches: %ld listener writes (want %ld), %ld failed (first %s)\n", n,
	       atomic_load(&writes_ok), want, atomic_load(&writes_failed),
	       larder_strerror(atomic_load(&first_failure)));
	CHECK_EQ(main_failed, 0);
	CHECK_EQ(atomic_load(&writes_failed), 0);
	CHECK_EQ(atomic_load(&writes_ok), want);
	for (int i = 0; i < n; i++) {
		uint64_t entries = 0;
		CHECK_EQ(th_stat(cy.cache[i], LARDER_STAT_WRITE_BUSY), 0);
		/* each cache holds the keys of every depth that land there: for
		 * each depth, the chain of exactly one cache of the cycle */
		th_check_accounting(cy.cache[i], 60000, &entries, NULL);
		CHECK_EQ(entries, (uint64_t)(DEPTH + 1) * BASE_KEYS);
	}
	for (int i = 0; i < n; i++)
		larder_close(cy.cache[i]);
}

static void test_listeners_write_each_other(void)
{
	run_cycle(2);
}

static void test_listener_cycle_of_three(void)
{
	run_cycle(3);
}

/* ---- TREENTRY-R2: a listener that writes its own cache --------------------------- */

struct self_writer {
	_Atomic(larder *) cache;
};

/* Each cleared or replaced key of depth 0 is written back as "L" + key. */
static void self_listener(void *ctx, const void *key, size_t key_len, const void *value,
			  size_t value_len, enum larder_cause cause)
{
	struct self_writer *s = ctx;
	larder *cache = atomic_load(&s->cache);
	char next_key[64];

	if (!cache || depth_of(key, key_len) > 0 || key_len + 1 > sizeof(next_key) ||
	    (cause != LARDER_CAUSE_CLEARED && cause != LARDER_CAUSE_REPLACED))
		return;
	next_key[0] = 'L';
	memcpy(next_key + 1, key, key_len);
	note_write(larder_put(cache, next_key, key_len + 1, value, value_len, LARDER_TTL_NEVER));
}

static void test_listener_writes_own_cache(void)
{
	enum { N = 5000 };
	struct self_writer s = {NULL};
	/* One shard: over several, the clear's walk and the listener's writes
	 * are spread over as many maintainers, and no ring need overflow. */
	larder_config *config = th_config_one_shard(64 * MiB);
	larder *cache;
	uint64_t entries = 0;

	reset_counts();
	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_expected_entries(config, 4 * N), LARDER_OK);
	CHECK_RC(larder_config_set_removal_listener(config, self_listener, &s), LARDER_OK);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	atomic_store(&s.cache, cache);
	for (int k = 0; k < N; k++) {
		char key[16];
		int len = snprintf(key, sizeof(key), "k%d", k);
		CHECK_RC(larder_put(cache, key, (size_t)len, key, (size_t)len, LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	/* The clear's walk retires thousands of entries in one pass, and the
	 * listener writes one key for each: more than its ring holds. */
	CHECK_RC(larder_clear(cache), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_EQ(atomic_load(&writes_failed), 0);
	CHECK_EQ(atomic_load(&writes_ok), N);
	CHECK_GT(th_stat(cache, LARDER_STAT_EVENTS_SPILLED), 0);
	for (int k = 0; k < N; k++) {
		char key[16], buf[16];
		size_t len = 0;
		int klen = snprintf(key, sizeof(key), "Lk%d", k);
		CHECK_RC(larder_get(cache, key, (size_t)klen, buf, sizeof(buf), &len), LARDER_OK);
		CHECK_EQ(len, (size_t)klen - 1);
		CHECK_MEM(buf, key + 1, len);
	}
	/* Replacements write back too, interleaved with the caller's writes. */
	for (int k = 0; k < N; k++) {
		char key[16];
		int len = snprintf(key, sizeof(key), "Lk%d", k);
		CHECK_RC(larder_put(cache, key + 1, (size_t)len - 1, "again", 5, LARDER_TTL_NEVER),
			 LARDER_OK);
		CHECK_RC(larder_put(cache, key + 1, (size_t)len - 1, "twice", 5, LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_EQ(atomic_load(&writes_failed), 0);
	CHECK_EQ(atomic_load(&writes_ok), 2 * N);
	for (int k = 0; k < N; k += 97) {
		char key[16], buf[16];
		size_t len = 0;
		int klen = snprintf(key, sizeof(key), "Lk%d", k);
		CHECK_RC(larder_get(cache, key, (size_t)klen, buf, sizeof(buf), &len), LARDER_OK);
		CHECK_EQ(len, 5);
		CHECK_MEM(buf, "again", 5);
	}
	CHECK_EQ(th_stat(cache, LARDER_STAT_WRITE_BUSY), 0);
	th_check_accounting(cache, 60000, &entries, NULL);
	CHECK_EQ(entries, 2 * N);
	larder_close(cache);
}

/* ---- TREENTRY-R3: every operation from inside a listener ------------------------- */

struct all_ops {
	_Atomic(larder *) self;
	larder *other;
	_Atomic int calls;
};

static void count_fn(void *ctx, const void *value, size_t value_len)
{
	(void)value;
	(void)value_len;
	(*(int *)ctx)++;
}

static void count_batch_fn(void *ctx, size_t index, const void *value, size_t value_len)
{
	(void)index;
	(void)value;
	(void)value_len;
	(*(int *)ctx)++;
}

/* On each explicit removal of "trigger": every operation on both caches,
 * on keys only this listener uses, each checked against larder.h. */
static void ops_on(larder *c, const char *tag)
{
	char k[32], v[8];
	size_t len = 0;
	uint64_t ttl = 0, stats[LARDER_STAT_COUNT];
	int calls = 0;
	const void *keys[2];
	size_t lens[2];

	snprintf(k, sizeof(k), "%s-a", tag);
	CHECK_RC(larder_put(c, k, strlen(k), "1", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put_if_absent(c, k, strlen(k), "2", 1, LARDER_TTL_NEVER), LARDER_EXISTS);
	CHECK_RC(larder_replace(c, k, strlen(k), "3", 1, 60000), LARDER_OK);
	CHECK_RC(larder_replace_if_equals(c, k, strlen(k), "3", 1, "4", 1, 60000), LARDER_OK);
	CHECK_RC(larder_replace_if_equals(c, k, strlen(k), "3", 1, "5", 1, 60000), LARDER_MISMATCH);
	CHECK_RC(larder_touch(c, k, strlen(k), LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, k, strlen(k), &ttl), LARDER_OK);
	CHECK_EQ(ttl, LARDER_TTL_NEVER);
	CHECK_RC(larder_get(c, k, strlen(k), v, sizeof(v), &len), LARDER_OK);
	CHECK_EQ(len, 1);
	CHECK_EQ(v[0], '4');
	CHECK_RC(larder_get_with(c, k, strlen(k), count_fn, &calls), LARDER_OK);
	keys[0] = k;
	lens[0] = strlen(k);
	keys[1] = "absent";
	lens[1] = 6;
	CHECK_EQ(larder_get_batch(c, 2, keys, lens, count_batch_fn, &calls), 1);
	CHECK_EQ(calls, 2);
	CHECK_RC(larder_contains(c, k, strlen(k)), LARDER_OK);
	CHECK_RC(larder_remove_if_equals(c, k, strlen(k), "9", 1), LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(c, k, strlen(k), "4", 1), LARDER_OK);
	CHECK_RC(larder_remove(c, k, strlen(k)), LARDER_MISS);
	CHECK_RC(larder_contains(c, k, strlen(k)), LARDER_MISS);
	CHECK_RC(larder_stats(c, stats, LARDER_STAT_COUNT), LARDER_OK);
	CHECK_RC(larder_set_capacity(c, stats[LARDER_STAT_CAPACITY_BYTES]), LARDER_OK);
}

static void all_ops_listener(void *ctx, const void *key, size_t key_len, const void *value,
			     size_t value_len, enum larder_cause cause)
{
	struct all_ops *a = ctx;
	larder *self = atomic_load(&a->self);

	(void)value;
	(void)value_len;
	if (!self || cause != LARDER_CAUSE_EXPLICIT || key_len != 7 || memcmp(key, "trigger", 7))
		return;
	ops_on(self, "self");
	ops_on(a->other, "other");
	/* a clear of the other cache, and of our own, from here */
	CHECK_RC(larder_clear(a->other), LARDER_OK);
	CHECK_RC(larder_clear(self), LARDER_OK);
	atomic_fetch_add(&a->calls, 1);
}

static void test_listener_every_operation(void)
{
	struct all_ops a = {NULL, NULL, 0};
	larder_config *config = th_config(16 * MiB);
	larder *cache;

	REQUIRE(config != NULL);
	a.other = th_open(th_config(16 * MiB));
	REQUIRE(a.other != NULL);
	CHECK_RC(larder_config_set_removal_listener(config, all_ops_listener, &a), LARDER_OK);
	cache = th_open(config);
	REQUIRE(cache != NULL);
	atomic_store(&a.self, cache);
	for (int i = 0; i < 20; i++) {
		CHECK_RC(larder_put(cache, "trigger", 7, "t", 1, LARDER_TTL_NEVER), LARDER_OK);
		CHECK_RC(larder_put(a.other, "other-x", 7, "x", 1, LARDER_TTL_NEVER), LARDER_OK);
		CHECK_RC(larder_remove(cache, "trigger", 7), LARDER_OK);
		CHECK_EQ(th_quiesce(cache, 60000), 0);
		CHECK_EQ(th_quiesce(a.other, 60000), 0);
		CHECK_EQ(atomic_load(&a.calls), i + 1);
		/* the listener's clear emptied the other cache */
		CHECK_RC(larder_contains(a.other, "other-x", 7), LARDER_MISS);
	}
	th_check_accounting(cache, 60000, NULL, NULL);
	th_check_accounting(a.other, 60000, NULL, NULL);
	larder_close(cache);
	larder_close(a.other);
}

/* ---- TREENTRY-R4: read callbacks writing into each other's caches ---------------- */

struct cb_writer {
	larder *from, *to;
	int id;
	long puts;
};

struct cb_ctx {
	struct cb_writer *w;
	int round;
};

/* Inside a read section of `from`: a write into `to`, and a nested read of it. */
static void cb_write_fn(void *ctx, const void *value, size_t value_len)
{
	struct cb_ctx *c = ctx;
	char key[32], buf[64];
	size_t len;

	snprintf(key, sizeof(key), "cb%d-%d", c->w->id, c->round % 200);
	note_write(larder_put(c->w->to, key, strlen(key), value, value_len, LARDER_TTL_NEVER));
	CHECK_RC(larder_get(c->w->to, key, strlen(key), buf, sizeof(buf), &len), LARDER_OK);
}

static void *cb_writer_main(void *arg)
{
	struct cb_writer *w = arg;

	for (int r = 0; r < 4000; r++) {
		struct cb_ctx c = {w, r};
		char key[16];
		int len = snprintf(key, sizeof(key), "k%d", r % BASE_KEYS);
		int rc = larder_get_with(w->from, key, (size_t)len, cb_write_fn, &c);
		CHECK(rc == LARDER_OK || rc == LARDER_MISS);
		/* keep the listeners busy too: each put replaces */
		note_write(larder_put(w->from, key, (size_t)len, key, (size_t)len, LARDER_TTL_NEVER));
	}
	return NULL;
}

static void test_callbacks_write_each_other(void)
{
	struct cycle cy = {{NULL}, 2};
	struct link links[2];
	struct cb_writer w[2];

	reset_counts();
	for (int i = 0; i < 2; i++) {
		larder_config *config = th_config(64 * MiB);
		links[i] = (struct link){&cy, i};
		REQUIRE(config != NULL);
		CHECK_RC(larder_config_set_expected_entries(config, 1u << 16), LARDER_OK);
		CHECK_RC(larder_config_set_removal_listener(config, chain_listener, &links[i]),
			 LARDER_OK);
		cy.cache[i] = th_open(config);
		REQUIRE(cy.cache[i] != NULL);
	}
	for (int i = 0; i < 2; i++)
		w[i] = (struct cb_writer){cy.cache[i], cy.cache[1 - i], i, 0};
	th_run_threads(2, cb_writer_main, w, sizeof(w[0]));
	quiesce_all(cy.cache, 2);
	printf("  %ld writes from callbacks, callers and listeners; %ld failed (first %s)\n",
	       atomic_load(&writes_ok), atomic_load(&writes_failed),
	       larder_strerror(atomic_load(&first_failure)));
	CHECK_EQ(atomic_load(&writes_failed), 0);
	for (int i = 0; i < 2; i++) {
		CHECK_EQ(th_stat(cy.cache[i], LARDER_STAT_WRITE_BUSY), 0);
		th_check_accounting(cy.cache[i], 60000, NULL, NULL);
	}
	for (int i = 0; i < 2; i++)
		larder_close(cy.cache[i]);
}

/* ---- TREENTRY-R5: a listener's write at the memory bound ------------------------- */

struct bound {
	larder *full;
	struct th_event parked, release, listened;
	_Atomic int listener_rc;
	long fills;
};

static void bound_listener(void *ctx, const void *key, size_t key_len, const void *value,
			   size_t value_len, enum larder_cause cause)
{
	struct bound *b = ctx;
	unsigned char v[1000];

	(void)key;
	(void)key_len;
	(void)value;
	(void)value_len;
	if (cause != LARDER_CAUSE_EXPLICIT)
		return;
	memset(v, 0x5a, sizeof(v));
	atomic_store(&b->listener_rc, larder_put(b->full, "from-listener", 13, v, sizeof(v),
						 LARDER_TTL_NEVER));
	th_event_signal(&b->listened);
}

static void hold_fn(void *ctx, const void *value, size_t value_len)
{
	struct bound *b = ctx;

	(void)value;
	(void)value_len;
	th_event_signal(&b->parked);
	CHECK(th_event_wait(&b->release, 120000));
}

static void *holder_main(void *arg)
{
	struct bound *b = arg;

	CHECK_RC(larder_get_with(b->full, "K", 1, hold_fn, b), LARDER_OK);
	return NULL;
}

/* Inside a read section of `full`, where no write waits for memory: writes
 * until the bound refuses one. */
static void fill_fn(void *ctx, const void *value, size_t value_len)
{
	struct bound *b = ctx;
	unsigned char v[1000];
	int rc = LARDER_OK;

	(void)value;
	(void)value_len;
	memset(v, 0x33, sizeof(v));
	for (b->fills = 0; rc == LARDER_OK && b->fills < 100000; b->fills++) {
		char key[32];
		snprintf(key, sizeof(key), "fill-%ld", b->fills);
		rc = larder_put(b->full, key, strlen(key), v, sizeof(v), LARDER_TTL_NEVER);
	}
	CHECK_RC(rc, LARDER_EBUSY);
}

static void test_listener_never_waits_for_memory(void)
{
	struct bound b;
	larder_config *config = th_config(64 * KiB);
	larder *listening;
	pthread_t holder;

	memset(&b, 0, sizeof(b));
	th_event_init(&b.parked);
	th_event_init(&b.release);
	th_event_init(&b.listened);
	atomic_init(&b.listener_rc, 1000);
	REQUIRE(config != NULL);
	/* An hour: a listener that waited would not report back in time. */
	CHECK_RC(larder_config_set_write_wait_ms(config, 3600u * 1000u), LARDER_OK);
	b.full = th_open(config);
	REQUIRE(b.full != NULL);
	config = th_config(MiB);
	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_removal_listener(config, bound_listener, &b), LARDER_OK);
	listening = th_open(config);
	REQUIRE(listening != NULL);
	CHECK_RC(larder_put(b.full, "K", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	/* A reader parked in `full` keeps anything from being freed there. */
	REQUIRE(pthread_create(&holder, NULL, holder_main, &b) == 0);
	CHECK(th_event_wait(&b.parked, 60000));
	CHECK_RC(larder_get_with(b.full, "K", 1, fill_fn, &b), LARDER_OK);
	CHECK_EQ(th_stat(b.full, LARDER_STAT_BUSY_MEMORY), 1);
	CHECK_RC(larder_put(listening, "x", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_remove(listening, "x", 1), LARDER_OK);
	CHECK(th_event_wait(&b.listened, 60000));
	CHECK_RC(atomic_load(&b.listener_rc), LARDER_EBUSY);
	CHECK_EQ(th_stat(b.full, LARDER_STAT_BUSY_MEMORY), 2);
	CHECK_EQ(th_stat(b.full, LARDER_STAT_WRITE_BUSY), 2);
	CHECK_EQ(th_stat(b.full, LARDER_STAT_WRITE_WAITS), 0);
	th_event_signal(&b.release);
	pthread_join(holder, NULL);
	/* once the reader left, room comes back and writes succeed again */
	CHECK_RC(larder_put(b.full, "after", 5, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	th_check_accounting(b.full, 60000, NULL, NULL);
	larder_close(listening);
	larder_close(b.full);
	th_event_destroy(&b.parked);
	th_event_destroy(&b.release);
	th_event_destroy(&b.listened);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_listeners_write_each_other),
		TH_TEST(test_listener_cycle_of_three),
		TH_TEST(test_listener_writes_own_cache),
		TH_TEST(test_listener_every_operation),
		TH_TEST(test_callbacks_write_each_other),
		TH_TEST(test_listener_never_waits_for_memory),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
