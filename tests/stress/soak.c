/*
 * tests/stress/soak.c - a long soak: mixed load with TTLs, clears, capacity
 * changes and thread churn, invariants checked throughout.
 *
 * Usage: larder_soak [--duration-s N] [--threads N] [--checkpoint-s N] [--seed N]
 * The documented run is ten minutes:  build/release/tests/larder_soak --duration-s 600
 * ctest runs it for 5 s (label soak, default stage only).
 *
 * Two caches: A (64 MiB, the default policy, expire after access, default
 * TTL 2 s) and B (8 MiB, W-TinyLFU, expire after write, read through
 * larder_get_batch too), whose removal listener writes each value it loses
 * into A under a key of its own (listener writes across caches, with their
 * spill). Worker threads do every operation with TTLs from 1 ms to none on
 * the real clock, self-checking values; each lives for a random number of
 * operations, then exits and a new one takes its place (thread churn: state
 * created and orphaned again and again). An admin thread clears a cache or
 * moves its capacity (between 1/8 and the whole) every few ms. A monitor
 * samples used bytes and RSS.
 *
 * Invariants, checked all the time (SOAK-Q1..Q3) and at every checkpoint (SOAK-Q4..Q6),
 * where the workers and admin pause and the maintainers are quiesced:
 *   SOAK-Q1. every value read is whole and belongs to its key: key id, length,
 *       version and a checksum of the payload agree (torn, foreign, freed and
 *       poisoned bytes fail);
 *   SOAK-Q2. every call returns one of its documented results; LARDER_EBUSY only
 *       for memory (busy_events and busy_index stay 0: no maintainer is ever
 *       stuck);
 *   SOAK-Q3. used bytes never exceed the largest capacity of the run plus its
 *       overshoot bound;
 *   SOAK-Q4. the counters agree with a walk of each index, and the policies'
 *       queues are well linked;
 *   SOAK-Q5. conservation: per cache, writes - removals of every cause == entries,
 *       and the listener heard exactly as many removals of each cause as the
 *       counters say;
 *   SOAK-Q6. the slab's audit adds up (mapped = class pages + reserve + large).
 * At the end both caches close and every mapped byte is returned.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "harness.h"

#define NKEYS 4096
#define MAX_VALUE (24 * 1024)
#define MAX_THREADS 64

static struct {
	uint64_t duration_s, threads, checkpoint_s, seed;
} opt;

static larder *cache_a, *cache_b;
static _Atomic int stop, pause_asked, listener_quiet;
static _Atomic unsigned paused_count, workers_running;
static _Atomic uint64_t ops_done, reads_checked, threads_started, clears, cap_changes;
static _Atomic uint64_t busy_seen, lost_listener_writes;
static _Atomic uint64_t heard[2][5]; /* per cache, per cause */

#define QFAIL(...) TH_FAIL_CAPPED(30, __VA_ARGS__)

/* SOAK-Q1 */
static int value_ok(const char *where, uint32_t key, const void *value, size_t len)
{
	if (!th_value_check(where, key, value, len, NULL))
		return 0;
	atomic_fetch_add_explicit(&reads_checked, 1, memory_order_relaxed);
	return 1;
}

/* ---- The listener: B's losses are written into A ---------------------------- */

static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	int which = (int)(intptr_t)ctx;
	atomic_fetch_add_explicit(&heard[which][cause], 1, memory_order_relaxed);
	/* quiet during a checkpoint: B's TTLs expire on the real clock, and
	 * its writes into A would change A while A is being checked */
	if (which != 1 || key_len < 2 || ((const char *)key)[0] != 'k' ||
	    atomic_load_explicit(&listener_quiet, memory_order_acquire))
		return;
	/* "k<n>" of B becomes "b<n>" of A, the same value: A's key ids are
	 * n + NKEYS, so the value (whose key id is n) is stored under its own
	 * id-preserving key "b<n>" and checked as n. */
	char akey[24];
	if (key_len + 1 > sizeof(akey))
		return;
	memcpy(akey, key, key_len);
	akey[0] = 'b';
	int rc = larder_put(cache_a, akey, key_len, value, value_len, LARDER_TTL_DEFAULT);
	if (rc == LARDER_EBUSY || rc == LARDER_ENOMEM)
		atomic_fetch_add_explicit(&lost_listener_writes, 1, memory_order_relaxed);
	else if (rc != LARDER_OK)
		QFAIL("listener put into A: %d (%s)", rc, larder_strerror(rc));
}

/* ---- Workers ------------------------------------------------------------------ */

struct worker {
	pthread_t thread;
	int live;
	uint64_t seed;
};

static uint64_t pick_ttl(struct th_rng *r)
{
	uint64_t x = th_rng_below(r, 100);
	return x < 40 ? LARDER_TTL_NEVER : x < 60 ? LARDER_TTL_DEFAULT : x < 80 ? 1 + th_rng_below(r, 30)
										: 50 + th_rng_below(r, 5000);
}

static int result_ok(const char *op, int rc, int a, int b, int c)
{
	if (rc == a || rc == b || rc == c)
		return 1;
	if (rc == LARDER_EBUSY) { /* memory only: SOAK-Q2 checks the causes at checkpoints */
		atomic_fetch_add_explicit(&busy_seen, 1, memory_order_relaxed);
		return 1;
	}
	QFAIL("%s returned %d (%s)", op, rc, larder_strerror(rc));
	return 0;
}

struct read_ctx {
	uint32_t key;
	int calls;
};

static void read_fn(void *ctx, const void *value, size_t len)
{
	struct read_ctx *r = ctx;
	r->calls++;
	value_ok("get_with", r->key, value, len);
}

static void batch_fn(void *ctx, size_t i, const void *value, size_t len)
{
	const uint32_t *ids = ctx;
	value_ok("get_batch", ids[i], value, len);
}

/* Waits while a checkpoint runs (the pause barrier of the workers). */
static void maybe_pause(void)
{
	if (!atomic_load_explicit(&pause_asked, memory_order_acquire))
		return;
	atomic_fetch_add(&paused_count, 1);
	while (atomic_load_explicit(&pause_asked, memory_order_acquire))
		sched_yield();
	atomic_fetch_sub(&paused_count, 1);
}

static void one_op(struct th_rng *r, unsigned char *v, unsigned char *buf)
{
	larder *c = th_rng_below(r, 3) ? cache_a : cache_b;
	uint32_t k = (uint32_t)th_rng_below(r, NKEYS);
	char key[24];
	size_t len = 0, vlen;
	uint64_t x = th_rng_below(r, 100), ttl = 0;
	int rc;

	snprintf(key, sizeof(key), "k%u", k);
	if (x < 40) {
		rc = larder_get(c, key, strlen(key), buf, MAX_VALUE, &len);
		if (result_ok("get", rc, LARDER_OK, LARDER_MISS, LARDER_MISS) && rc == LARDER_OK)
			value_ok("get", k, buf, len);
	} else if (x < 48) {
		struct read_ctx ctx = { k, 0 };
		rc = larder_get_with(c, key, strlen(key), read_fn, &ctx);
		result_ok("get_with", rc, LARDER_OK, LARDER_MISS, LARDER_MISS);
	} else if (x < 52) {
		char names[8][24];
		const void *keys[8];
		size_t lens[8];
		uint32_t ids[8];
		for (int i = 0; i < 8; i++) {
			ids[i] = (uint32_t)th_rng_below(r, NKEYS);
			snprintf(names[i], sizeof(names[i]), "k%u", ids[i]);
			keys[i] = names[i];
			lens[i] = strlen(names[i]);
		}
		long n = larder_get_batch(c, 8, keys, lens, batch_fn, ids);
		if (n < 0 || n > 8)
			QFAIL("get_batch returned %ld", n);
	} else if (x < 54) {
		rc = larder_ttl_remaining(c, key, strlen(key), &ttl);
		result_ok("ttl_remaining", rc, LARDER_OK, LARDER_MISS, LARDER_MISS);
	} else if (x < 75) {
		vlen = th_value_make(v, k, 16 + th_rng_below(r, th_rng_below(r, 8) ? 600 : MAX_VALUE - 16), 0);
		rc = larder_put(c, key, strlen(key), v, vlen, pick_ttl(r));
		result_ok("put", rc, LARDER_OK, LARDER_OK, LARDER_OK);
	} else if (x < 80) {
		vlen = th_value_make(v, k, 16 + th_rng_below(r, 400), 0);
		rc = larder_put_if_absent(c, key, strlen(key), v, vlen, pick_ttl(r));
		result_ok("put_if_absent", rc, LARDER_OK, LARDER_EXISTS, LARDER_EXISTS);
	} else if (x < 86) {
		rc = larder_get(c, key, strlen(key), buf, MAX_VALUE, &len);
		if (rc != LARDER_OK)
			return;
		if (!value_ok("get (cas)", k, buf, len))
			return;
		vlen = th_value_make(v, k, 16 + th_rng_below(r, 400), 0);
		rc = larder_replace_if_equals(c, key, strlen(key), buf, len, v, vlen, pick_ttl(r));
		result_ok("replace_if_equals", rc, LARDER_OK, LARDER_MISMATCH, LARDER_MISS);
	} else if (x < 92) {
		rc = larder_remove(c, key, strlen(key));
		result_ok("remove", rc, LARDER_OK, LARDER_MISS, LARDER_MISS);
	} else if (x < 97) {
		rc = larder_touch(c, key, strlen(key), pick_ttl(r));
		result_ok("touch", rc, LARDER_OK, LARDER_MISS, LARDER_MISS);
	} else {
		rc = larder_contains(c, key, strlen(key));
		result_ok("contains", rc, LARDER_OK, LARDER_MISS, LARDER_MISS);
	}
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct th_rng r = { w->seed };
	unsigned char *v = malloc(MAX_VALUE), *buf = malloc(MAX_VALUE);
	uint64_t life = 2000 + th_rng_below(&r, 200000);

	if (!CHECK(v && buf))
		return NULL;
	atomic_fetch_add(&workers_running, 1);
	for (uint64_t i = 0; i < life && !atomic_load_explicit(&stop, memory_order_relaxed); i++) {
		if ((i & 63) == 0)
			maybe_pause();
		one_op(&r, v, buf);
		atomic_fetch_add_explicit(&ops_done, 1, memory_order_relaxed);
	}
	atomic_fetch_sub(&workers_running, 1);
	free(v);
	free(buf);
	return NULL; /* the thread exits: its state is orphaned, its handles dismantled */
}

/* ---- Admin and monitor ---------------------------------------------------------- */

static const uint64_t cap_a_max = 64 * MiB, cap_b_max = 8 * MiB;

static void *admin_main(void *arg)
{
	struct th_rng r = { opt.seed ^ 0xad };
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		th_pause_ms(5 + th_rng_below(&r, 30)); /* a pause, not a sync */
		maybe_pause();
		larder *c = th_rng_below(&r, 2) ? cache_a : cache_b;
		uint64_t max = c == cache_a ? cap_a_max : cap_b_max;
		if (th_rng_below(&r, 6) == 0) {
			CHECK_RC(larder_clear(c), LARDER_OK);
			atomic_fetch_add(&clears, 1);
		} else {
			uint64_t cap = max / 8 + th_rng_below(&r, max - max / 8);
			CHECK_RC(larder_set_capacity(c, cap), LARDER_OK);
			atomic_fetch_add(&cap_changes, 1);
		}
	}
	return NULL;
}

static _Atomic uint64_t max_used[2], samples, peak_rss_kib;

static uint64_t rss_kib(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, res = 0;
	if (f) {
		if (fscanf(f, "%lu %lu", &size, &res) != 2)
			res = 0;
		fclose(f);
	}
	return (uint64_t)res * 4;
}

static void *monitor_main(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		for (int i = 0; i < 2; i++) {
			uint64_t v[LARDER_STAT_COUNT];
			larder *c = i ? cache_b : cache_a;
			uint64_t max = i ? cap_b_max : cap_a_max;
			if (!CHECK_RC(larder_stats(c, v, LARDER_STAT_COUNT), LARDER_OK))
				continue;
			uint64_t bound = max + (max / 100 > 4 * MiB ? max / 100 : 4 * MiB);
			if (v[LARDER_STAT_USED_BYTES] > bound) /* SOAK-Q3 */
				QFAIL("cache %c: used %" PRIu64 " over %" PRIu64, 'A' + i,
				      v[LARDER_STAT_USED_BYTES], bound);
			if (v[LARDER_STAT_USED_BYTES] > max_used[i])
				max_used[i] = v[LARDER_STAT_USED_BYTES];
		}
		uint64_t rss = rss_kib();
		if (rss > peak_rss_kib)
			peak_rss_kib = rss;
		samples++;
		th_pause_ms(2); /* a sampling period, not a sync */
	}
	return NULL;
}

/* ---- Checkpoints ------------------------------------------------------------------ */

static const enum larder_stat by_cause[5] = {
	LARDER_STAT_REMOVALS, LARDER_STAT_REPLACEMENTS, LARDER_STAT_EXPIRATIONS,
	LARDER_STAT_EVICTIONS, LARDER_STAT_CLEARED,
};

/* The listener's counts of cache which, and its counters (larder_stats). */
struct tally {
	uint64_t heard[5], v[LARDER_STAT_COUNT];
};

static void take_tally(larder *c, int which, struct tally *t)
{
	for (int cause = 0; cause < 5; cause++)
		t->heard[cause] = atomic_load(&heard[which][cause]);
	CHECK_RC(larder_stats(c, t->v, LARDER_STAT_COUNT), LARDER_OK);
}

/* Whether two tallies agree on everything SOAK-Q5 compares. */
static int same_tally(const struct tally *a, const struct tally *b)
{
	for (int cause = 0; cause < 5; cause++)
		if (a->heard[cause] != b->heard[cause] ||
		    a->v[by_cause[cause]] != b->v[by_cause[cause]])
			return 0;
	return a->v[LARDER_STAT_ENTRIES] == b->v[LARDER_STAT_ENTRIES] &&
	       a->v[LARDER_STAT_WRITES] == b->v[LARDER_STAT_WRITES];
}

static void check_cache(larder *c, int which)
{
	uint64_t entries = 0, class_bytes = 0;
	struct tally t, again;
	/* SOAK-Q4, with the walk retaken while TTLs expire beside it */
	th_check_accounting(c, 120000, &entries, NULL);
	/* SOAK-Q5: the listener's counts and the counters of a quiescent cache,
	 * each tally taken after a quiesce, again until two in a row agree. TTLs
	 * of up to 5 s (real clock) outlive the paused workers, and an expiry
	 * between the listener's counts and the counters (the counter is bumped
	 * before the call), or between two counters, would make one tally describe
	 * two instants; two equal tallies with a quiesce between them saw no
	 * removal at all (each removal's call ends before the maintainer idles),
	 * so either one is exact. Every TTL has run out within seconds: two rounds
	 * then agree, whatever the load (120 s at most, else a failure). */
	uint64_t until = th_now_ms() + 120000;
	int agreed = 0;
	CHECK_EQ(th_quiesce(c, 120000), 0);
	take_tally(c, which, &t);
	while (!agreed && th_now_ms() < until) {
		CHECK_EQ(th_quiesce(c, 120000), 0);
		take_tally(c, which, &again);
		agreed = same_tally(&t, &again);
		t = again;
	}
	CHECK(agreed);
	const uint64_t *v = t.v;
	uint64_t removed = 0;
	for (int cause = 0; cause < 5; cause++) {
		removed += v[by_cause[cause]];
		if (!CHECK_EQ(t.heard[cause], v[by_cause[cause]]))
			printf("  cache %c: the listener heard %s %" PRIu64 " times, counted %" PRIu64
			       "\n", 'A' + which, larder_cause_name((enum larder_cause)cause),
			       t.heard[cause], v[by_cause[cause]]);
	}
	CHECK_EQ(v[LARDER_STAT_WRITES] - removed, v[LARDER_STAT_ENTRIES]);
	CHECK_EQ(v[LARDER_STAT_BUSY_EVENTS], 0); /* SOAK-Q2 */
	CHECK_EQ(v[LARDER_STAT_BUSY_INDEX], 0);
	/* SOAK-Q6 */
	for (size_t s = 0; s < larder_size_class_count(); s++) {
		uint64_t cv[LARDER_CLASS_STAT_COUNT];
		CHECK_RC(larder_stats_size_class(c, s, cv, LARDER_CLASS_STAT_COUNT), LARDER_OK);
		class_bytes += cv[LARDER_CLASS_BYTES];
	}
	CHECK_EQ(v[LARDER_STAT_RETURNING_BYTES], 0);
	CHECK_EQ(class_bytes + v[LARDER_STAT_RESERVE_BYTES] + v[LARDER_STAT_LARGE_BYTES],
		 v[LARDER_STAT_PAGES_MAPPED]);
}

/* admin: 1 while the admin thread runs. Workers are started only by the
 * caller, so while it is here their number only falls (some finish). */
static void checkpoint(unsigned admin)
{
	atomic_store_explicit(&pause_asked, 1, memory_order_release);
	while (atomic_load(&paused_count) < atomic_load(&workers_running) + admin)
		sched_yield();
	atomic_store_explicit(&listener_quiet, 1, memory_order_release);
	/* B's listener may be writing into A: a pass of B after the flag
	 * writes nothing more, and then A's quiesce takes what it wrote */
	CHECK_EQ(th_quiesce(cache_b, 120000), 0);
	CHECK_EQ(th_quiesce(cache_a, 120000), 0);
	check_cache(cache_b, 1);
	check_cache(cache_a, 0);
	atomic_store_explicit(&listener_quiet, 0, memory_order_release);
	atomic_store_explicit(&pause_asked, 0, memory_order_release);
}

int main(int argc, char **argv)
{
	opt.duration_s = th_arg_u64(argc, argv, "--duration-s", 5);
	opt.threads = th_arg_u64(argc, argv, "--threads", 6);
	opt.checkpoint_s = th_arg_u64(argc, argv, "--checkpoint-s", opt.duration_s < 60 ? 2 : 30);
	opt.seed = th_arg_seed(argc, argv);
	if (opt.threads < 1 || opt.threads > MAX_THREADS || opt.checkpoint_s < 1) {
		fprintf(stderr, "soak: bad arguments\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	larder__test_poison_freed(1);
	uint64_t mapped0 = larder__test_mapped_bytes(), t0 = th_now_ms();

	larder_config *ca = th_config(cap_a_max), *cb = th_config(cap_b_max);
	if (!ca || !cb ||
	    larder_config_set_expiry(ca, LARDER_EXPIRE_AFTER_ACCESS) != LARDER_OK ||
	    larder_config_set_default_ttl_ms(ca, 2000) != LARDER_OK ||
	    larder_config_set_max_value_bytes(ca, MAX_VALUE) != LARDER_OK ||
	    larder_config_set_removal_listener(ca, listener, (void *)0) != LARDER_OK ||
	    larder_config_set_write_wait_ms(ca, 10000) != LARDER_OK ||
	    larder_config_set_policy(cb, LARDER_POLICY_WTINYLFU) != LARDER_OK ||
	    larder_config_set_max_value_bytes(cb, MAX_VALUE) != LARDER_OK ||
	    larder_config_set_removal_listener(cb, listener, (void *)1) != LARDER_OK ||
	    larder_config_set_write_wait_ms(cb, 10000) != LARDER_OK)
		return 1;
	cache_a = th_open(ca);
	cache_b = th_open(cb);
	if (!cache_a || !cache_b)
		return 1;

	struct worker w[MAX_THREADS];
	memset(w, 0, sizeof(w));
	pthread_t admin, monitor;
	if (pthread_create(&admin, NULL, admin_main, NULL) != 0 ||
	    pthread_create(&monitor, NULL, monitor_main, NULL) != 0)
		return 1;
	uint64_t end = t0 + opt.duration_s * 1000, next_checkpoint = t0 + opt.checkpoint_s * 1000;
	unsigned checkpoints = 0;
	struct th_rng r = { opt.seed };
	while (th_now_ms() < end && th_failures() == 0) {
		/* thread churn: every slot whose worker finished gets a new one */
		for (unsigned i = 0; i < opt.threads; i++) {
			if (w[i].live && pthread_tryjoin_np(w[i].thread, NULL) == 0)
				w[i].live = 0;
			if (!w[i].live) {
				w[i].seed = th_rng_next(&r);
				if (pthread_create(&w[i].thread, NULL, worker_main, &w[i]) == 0) {
					w[i].live = 1;
					atomic_fetch_add(&threads_started, 1);
				}
			}
		}
		if (th_now_ms() >= next_checkpoint) {
			checkpoint(1);
			checkpoints++;
			next_checkpoint = th_now_ms() + opt.checkpoint_s * 1000;
			printf("soak: %" PRIu64 " s: %" PRIu64 " ops, %" PRIu64 " threads started, "
			       "peak RSS %" PRIu64 " MiB, checkpoint %u passed\n",
			       (th_now_ms() - t0) / 1000, atomic_load(&ops_done),
			       atomic_load(&threads_started), peak_rss_kib / 1024, checkpoints);
		}
		th_pause_ms(20); /* the spawner's period, not a sync */
	}
	atomic_store(&stop, 1);
	atomic_store_explicit(&pause_asked, 0, memory_order_release);
	for (unsigned i = 0; i < opt.threads; i++)
		if (w[i].live)
			pthread_join(w[i].thread, NULL);
	pthread_join(admin, NULL);
	pthread_join(monitor, NULL);
	CHECK_RC(larder_set_capacity(cache_a, cap_a_max), LARDER_OK);
	CHECK_RC(larder_set_capacity(cache_b, cap_b_max), LARDER_OK);
	checkpoint(0);
	checkpoints++;
	uint64_t elapsed = th_now_ms() - t0;
	printf("soak: %" PRIu64 " s, %" PRIu64 " operations (%.0f/s) in %" PRIu64
	       " worker threads (up to %" PRIu64 " at once), %" PRIu64 " values checked, %" PRIu64
	       " clears, %" PRIu64 " capacity changes, %u checkpoints\n",
	       elapsed / 1000, atomic_load(&ops_done), atomic_load(&ops_done) * 1000.0 / (double)elapsed,
	       atomic_load(&threads_started), opt.threads, atomic_load(&reads_checked),
	       atomic_load(&clears), atomic_load(&cap_changes), checkpoints);
	printf("soak: removals heard by the listener, A / B: explicit %" PRIu64 "/%" PRIu64
	       ", replaced %" PRIu64 "/%" PRIu64 ", expired %" PRIu64 "/%" PRIu64
	       ", evicted %" PRIu64 "/%" PRIu64 ", cleared %" PRIu64 "/%" PRIu64 "\n",
	       heard[0][0], heard[1][0], heard[0][1], heard[1][1], heard[0][2], heard[1][2],
	       heard[0][3], heard[1][3], heard[0][4], heard[1][4]);
	printf("soak: EBUSY (memory) %" PRIu64 ", listener writes into A refused %" PRIu64
	       ", A spilled %" PRIu64 "; max used A %" PRIu64 " MiB (bound %" PRIu64
	       "), B %" PRIu64 " MiB (bound %" PRIu64 "); peak RSS %" PRIu64 " MiB; %" PRIu64
	       " monitor samples\n",
	       atomic_load(&busy_seen), atomic_load(&lost_listener_writes),
	       th_stat(cache_a, LARDER_STAT_EVENTS_SPILLED), max_used[0] / MiB,
	       (cap_a_max + 4 * MiB) / MiB, max_used[1] / MiB, (cap_b_max + 4 * MiB) / MiB,
	       peak_rss_kib / 1024, samples);
	larder_close(cache_b);
	larder_close(cache_a);
	CHECK_EQ(larder__test_mapped_bytes(), mapped0);
	larder__test_poison_freed(0);
	long f = th_failures();
	printf("%s (%ld failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
