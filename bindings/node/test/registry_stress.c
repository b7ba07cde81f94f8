/*
 * registry_stress.c - the Node binding's pure-C core under many threads:
 * the registry (registry.c, invariants REGISTRY-R1..R3) and the dispose queue
 * (dispose_queue.c, DQUEUE-Q1..Q3). Runs in every preset, so ThreadSanitizer and
 * ASan see the locking and the lifetimes that addon.c relies on.
 *
 *   test_node_registry [threads] [rounds] [seed]
 *
 * Checks:
 *   1. Threads open and release two named caches in random order while
 *      reading and writing self-checking values (the value is a function of
 *      the key), some with a subscription: every value read checks, every
 *      open of a name sees the one cache open under it (REGISTRY-R2: a value written
 *      through one reference is read through another while both are held),
 *      and when all threads are done no cache is open (REGISTRY-R1).
 *   2. Settings given to a second open must match; settings not given are
 *      taken from the open cache.
 *   3. Threads open a named pool and caches in it (a shared one and a
 *      private one), write and read, and release pool and caches in random
 *      order (the pool's reference first half the time): no open fails, no
 *      value read is wrong, and at the end no pool or cache is open (REGISTRY-P1:
 *      the engine never refused the last pool release, or the run aborted).
 *      A named pool opened again with another budget is refused, naming it.
 *   4. One producer pushes numbered records into a small queue while a
 *      consumer takes them: the taken numbers rise strictly, and taken +
 *      dropped == pushed (DQUEUE-Q1, DQUEUE-Q2); a consumer woken only on LNODE_DQ_FIRST
 *      sees every record (DQUEUE-Q3).
 * Prints "N passed, N failed" and exits non-zero on any failure.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispose_queue.h"
#include "larder.h"
#include "registry.h"

static int passed, failed;
static atomic_long errors; /* relaxed: summed after the threads are joined */

static void check(int ok, const char *what)
{
	if (ok) {
		passed++;
		printf("PASS %s\n", what);
	} else {
		failed++;
		printf("FAIL %s\n", what);
	}
}

static void error(const char *what, long detail)
{
	fprintf(stderr, "registry_stress: %s (%ld)\n", what, detail);
	atomic_fetch_add_explicit(&errors, 1, memory_order_relaxed); /* counter only */
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static struct lnode_settings small_settings(void)
{
	return (struct lnode_settings){
		.capacity_bytes = 4u << 20,
		.max_entries = 0,
		.expected_entries = 1024,
		.default_ttl_ms = LARDER_TTL_NEVER,
		.max_key_bytes = 64,
		.max_value_bytes = 256,
		.policy = LARDER_POLICY_DEFAULT,
		.expiry = LARDER_EXPIRE_AFTER_WRITE,
		.shards = 1,
		.write_wait_ms = 1000,
	};
}

/* A value that is a function of its key, so any reader can check it. */
static size_t value_for(uint64_t k, uint8_t *out)
{
	size_t n = 8 + (size_t)(k % 64), i;

	for (i = 0; i < n; i++)
		out[i] = (uint8_t)(k * 31 + i);
	return n;
}

static void count_notify(void *ctx)
{
	atomic_fetch_add_explicit((atomic_long *)ctx, 1, memory_order_relaxed); /* counter only */
}

struct worker {
	pthread_t tid;
	uint64_t seed;
	int rounds;
};

static void *worker_main(void *arg)
{
	static const char *const names[] = {"alpha", "beta"};
	struct worker *w = arg;
	struct lnode_settings s = small_settings();
	atomic_long notified = 0;
	int r;

	for (r = 0; r < w->rounds; r++) {
		struct lnode_shared *a, *b;
		struct lnode_sub sub = {.notify = count_notify, .notify_ctx = &notified};
		const char *name = names[xorshift(&w->seed) & 1], *mismatch;
		uint8_t val[128], got[128];
		size_t len, got_len;
		int i, rc, subscribed = (int)(xorshift(&w->seed) & 1);

		rc = lnode_registry_open(&a, name, &s, LNODE_SET_CAPACITY, &mismatch);
		if (rc != LARDER_OK) {
			error("open", rc);
			continue;
		}
		/* A second reference to the same name is the same cache (REGISTRY-R2). */
		rc = lnode_registry_open(&b, name, &s, 0, &mismatch);
		if (rc != LARDER_OK || b != a)
			error("second open is not the same cache", rc);
		if (subscribed) {
			if (lnode_dq_init(&sub.queue, 4096) != 0)
				error("dq_init", 0);
			lnode_shared_subscribe(a, &sub);
		}
		for (i = 0; i < 200; i++) {
			uint64_t k = xorshift(&w->seed) % 500;

			len = value_for(k, val);
			if (xorshift(&w->seed) % 4 == 0) {
				rc = larder_put(lnode_shared_cache(a), &k, sizeof k, val, len,
						LARDER_TTL_DEFAULT);
				if (rc != LARDER_OK && rc != LARDER_EBUSY)
					error("put", rc);
				continue;
			}
			rc = larder_get(lnode_shared_cache(b), &k, sizeof k, got, sizeof got,
					&got_len);
			if (rc == LARDER_OK && (got_len != len || memcmp(got, val, len) != 0))
				error("a value read does not match its key", (long)k);
			else if (rc != LARDER_OK && rc != LARDER_MISS)
				error("get", rc);
		}
		if (subscribed) {
			uint8_t *buf = NULL;
			size_t cap = 0, used, records;

			lnode_shared_unsubscribe(a, &sub);
			lnode_dq_take(&sub.queue, &buf, &cap, &used, &records);
			free(buf);
			lnode_dq_destroy(&sub.queue);
		}
		lnode_registry_release(b);
		lnode_registry_release(a);
	}
	return NULL;
}

static void test_registry(int threads, int rounds, uint64_t seed)
{
	struct worker *w = calloc((size_t)threads, sizeof(*w));
	int i;

	for (i = 0; i < threads; i++) {
		w[i].seed = seed + (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
		w[i].rounds = rounds;
		pthread_create(&w[i].tid, NULL, worker_main, &w[i]);
	}
	for (i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	free(w);
	check(atomic_load_explicit(&errors, memory_order_relaxed) == 0,
	      "shared caches: every value read checks, one cache per name");
	check(lnode_registry_open_count() == 0 && lnode_registry_refs("alpha") == 0,
	      "every cache closed once its last reference went (REGISTRY-R1)");
}

static void test_mismatch(void)
{
	struct lnode_settings s = small_settings(), other = s;
	struct lnode_shared *a, *b;
	const char *mismatch;
	int rc;

	rc = lnode_registry_open(&a, "m", &s, LNODE_SET_CAPACITY | LNODE_SET_POLICY, &mismatch);
	check(rc == LARDER_OK && lnode_registry_refs("m") == 1, "open a named cache");
	other.capacity_bytes *= 2;
	rc = lnode_registry_open(&b, "m", &other, LNODE_SET_CAPACITY, &mismatch);
	check(rc == LNODE_EMISMATCH && b == NULL && strcmp(mismatch, "maxSize") == 0,
	      "a different capacity given is refused, naming it");
	other.shards = 2;
	rc = lnode_registry_open(&b, "m", &other, LNODE_SET_SHARDS, &mismatch);
	check(rc == LNODE_EMISMATCH && b == NULL && strcmp(mismatch, "shards") == 0,
	      "a different shard count given is refused, naming it");
	other.shards = 1;
	other.write_wait_ms = 0;
	rc = lnode_registry_open(&b, "m", &other, LNODE_SET_WRITE_WAIT, &mismatch);
	check(rc == LNODE_EMISMATCH && b == NULL && strcmp(mismatch, "writeWaitMs") == 0,
	      "a different write wait given is refused, naming it");
	rc = lnode_registry_open(&b, "m", &other, LNODE_SET_POLICY, &mismatch);
	check(rc == LARDER_OK && b == a &&
		      lnode_shared_settings(b)->capacity_bytes == s.capacity_bytes &&
		      lnode_shared_settings(b)->write_wait_ms == s.write_wait_ms &&
		      lnode_registry_refs("m") == 2,
	      "settings not given come from the open cache");
	lnode_registry_release(b);
	lnode_registry_release(a);
	check(lnode_registry_refs("m") == 0, "released twice: closed");
	other.max_key_bytes = 0;
	rc = lnode_registry_open(&b, "bad", &other, 0, &mismatch);
	check(rc == LARDER_EINVAL && b == NULL && lnode_registry_open_count() == 0,
	      "a bad setting is refused and leaks nothing");
}

static void *pool_worker_main(void *arg)
{
	struct worker *w = arg;
	struct lnode_settings s = small_settings();
	int r;

	for (r = 0; r < w->rounds; r++) {
		struct lnode_pool *pool;
		struct lnode_shared *c[2];
		const char *mismatch;
		uint8_t val[128], got[128];
		size_t len, got_len;
		int i, rc;

		rc = lnode_pool_open(&pool, "pool", 8u << 20, 10, 1u, &mismatch);
		if (rc != LARDER_OK) {
			error("pool open", rc);
			continue;
		}
		s.pool = pool;
		s.min_share = 0;
		s.max_share = 1;
		s.miss_cost = 1 + (double)(xorshift(&w->seed) % 4);
		rc = lnode_registry_open(&c[0], "pooled", &s, LNODE_SET_POOL, &mismatch);
		if (rc == LARDER_OK)
			rc = lnode_registry_open(&c[1], NULL, &s, 0, &mismatch);
		else
			c[1] = NULL;
		if (xorshift(&w->seed) & 1) {
			lnode_pool_release(pool); /* the caches hold it (REGISTRY-P1) */
			pool = NULL;
		}
		if (rc != LARDER_OK) {
			if (rc != LARDER_EBUSY) /* the pool may not free a first share in time */
				error("pooled open", rc);
		}
		for (i = 0; rc == LARDER_OK && i < 200; i++) {
			uint64_t k = xorshift(&w->seed) % 500;
			larder *cache = lnode_shared_cache(c[i & 1]);

			len = value_for(k, val);
			rc = larder_put(cache, &k, sizeof k, val, len, LARDER_TTL_DEFAULT);
			if (rc == LARDER_EBUSY)
				rc = LARDER_OK;
			else if (rc != LARDER_OK)
				error("pooled put", rc);
			if (rc == LARDER_OK &&
			    larder_get(cache, &k, sizeof k, got, sizeof got, &got_len) == LARDER_OK &&
			    (got_len != len || memcmp(got, val, len) != 0))
				error("a pooled value read does not match its key", (long)k);
		}
		for (i = 0; i < 2; i++) {
			if (c[i] != NULL)
				lnode_registry_release(c[i]);
		}
		if (pool != NULL)
			lnode_pool_release(pool);
	}
	return NULL;
}

static void test_pools(int threads, int rounds, uint64_t seed)
{
	struct worker *w = calloc((size_t)threads, sizeof(*w));
	struct lnode_pool *p, *q;
	const char *mismatch;
	long before = atomic_load_explicit(&errors, memory_order_relaxed);
	int i, rc;

	rc = lnode_pool_open(&p, "m", 4u << 20, 100, 3u, &mismatch);
	check(rc == LARDER_OK, "open a named pool");
	rc = lnode_pool_open(&q, "m", 8u << 20, 100, 1u, &mismatch);
	check(rc == LNODE_EMISMATCH && q == NULL && strcmp(mismatch, "maxSize") == 0,
	      "a named pool with another budget is refused, naming it");
	rc = lnode_pool_open(&q, "m", 8u << 20, 100, 0, &mismatch);
	check(rc == LARDER_OK && q == p, "a named pool joined without settings is the same pool");
	lnode_pool_release(q);
	lnode_pool_release(p);
	rc = lnode_pool_open(&q, NULL, 1000, 100, 0, &mismatch);
	check(rc == LARDER_EINVAL && q == NULL && lnode_pool_open_count() == 0,
	      "a budget under 1 MiB is refused and leaks nothing");
	for (i = 0; i < threads; i++) {
		w[i].seed = seed * 7 + (uint64_t)i * 0x9e3779b97f4a7c15ull + 1;
		w[i].rounds = rounds;
		pthread_create(&w[i].tid, NULL, pool_worker_main, &w[i]);
	}
	for (i = 0; i < threads; i++)
		pthread_join(w[i].tid, NULL);
	free(w);
	check(atomic_load_explicit(&errors, memory_order_relaxed) == before,
	      "pooled caches: every open and value checks");
	check(lnode_pool_open_count() == 0 && lnode_registry_open_count() == 0,
	      "every pool and cache closed once its last reference went (REGISTRY-P1)");
}

struct queue_test {
	struct lnode_dq q;
	long pushes;
	atomic_int done;   /* R: pairs with the producer's release store */
	atomic_long wakes; /* wake-ups the producer sent (LNODE_DQ_FIRST) */
};

static void *producer_main(void *arg)
{
	struct queue_test *t = arg;
	long i;

	for (i = 0; i < t->pushes; i++) {
		char key[16];
		int n = snprintf(key, sizeof key, "%ld", i);

		if (lnode_dq_push(&t->q, key, (size_t)n, &i, sizeof i, 3) == LNODE_DQ_FIRST)
			atomic_fetch_add_explicit(&t->wakes, 1, memory_order_relaxed); /* counter */
	}
	/* Release: pairs with the consumer's acquire load; the pushes are done. */
	atomic_store_explicit(&t->done, 1, memory_order_release);
	return NULL;
}

static void test_queue(void)
{
	struct queue_test t = {.pushes = 200000};
	pthread_t tid;
	uint8_t *buf = NULL;
	size_t cap = 0, used, records, off;
	long taken = 0, last = -1, bad = 0;
	uint64_t dropped = 0;
	int finished = 0;

	lnode_dq_init(&t.q, 2048);
	pthread_create(&tid, NULL, producer_main, &t);
	while (!finished) {
		/* Acquire: pairs with the producer's release; after it, one last take sees all. */
		finished = atomic_load_explicit(&t.done, memory_order_acquire);
		dropped = lnode_dq_take(&t.q, &buf, &cap, &used, &records);
		if (used > 2048)
			bad++;
		for (off = 0; records > 0; records--) {
			uint32_t kl, vl;
			long seq;

			memcpy(&kl, buf + off, 4);
			memcpy(&vl, buf + off + 4, 4);
			memcpy(&seq, buf + off + LNODE_DQ_RECORD_HEADER + kl, sizeof seq);
			if (vl != sizeof seq || buf[off + 8] != 3 || seq <= last)
				bad++;
			last = seq;
			taken++;
			off += LNODE_DQ_RECORD_HEADER + kl + vl;
		}
		if (off != used)
			bad++;
	}
	pthread_join(tid, NULL);
	printf("queue: pushed %ld, taken %ld, dropped %llu, wake-ups %ld\n", t.pushes, taken,
	       (unsigned long long)dropped, atomic_load_explicit(&t.wakes, memory_order_relaxed));
	check(bad == 0, "records taken in push order, whole, within the bound (DQUEUE-Q1)");
	check(taken + (long)dropped == t.pushes, "taken + dropped == pushed (DQUEUE-Q2)");
	check(lnode_dq_push(&t.q, "k", 1, "v", 1, 0) == LNODE_DQ_FIRST &&
		      lnode_dq_push(&t.q, "k", 1, "v", 1, 0) == LNODE_DQ_QUEUED,
	      "FIRST only on an empty queue (DQUEUE-Q3)");
	check(lnode_dq_push(&t.q, "k", 1, buf, 4096, 0) == LNODE_DQ_DROPPED,
	      "a record over the bound is dropped, not truncated");
	free(buf);
	lnode_dq_destroy(&t.q);
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 4;
	int rounds = argc > 2 ? atoi(argv[2]) : 40;
	uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 0) : 0x5eed;

	printf("test_node_registry: threads %d, rounds %d, seed %llu\n", threads, rounds,
	       (unsigned long long)seed);
	test_mismatch();
	test_registry(threads, rounds, seed);
	test_pools(threads, rounds, seed);
	test_queue();
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
