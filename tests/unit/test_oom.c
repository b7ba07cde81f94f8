/*
 * tests/unit/test_oom.c - out of memory at every allocation site.
 *
 * The seam larder__test_fail_alloc_after(n) (core/testing.h) makes the n-th
 * allocation from now fail: a heap allocation (core/alloc.h), a page
 * mapping or a growth of the id directory, on any thread. A workload that
 * reaches every site - open (the cache, its slab and directory, index,
 * policy with its tuner and ghosts, the maintainer's per-thread state), a
 * thread's first call (its state, its handle), puts into new size classes
 * and a large entry, an index growth and a shrink, the policies' ghost
 * tables, sketch and tuner under evictions, a clear (new index; the
 * maintainer's sorted walk), set_capacity, a removal listener's writes into
 * another cache (their overflow past a full event ring), close - is first
 * run with the seam counting only, giving K allocations; then once for
 * every n in 0..K, the n-th allocation failing (SQLite's fault-injection
 * sweep). The maintainer is quiesced after each step, so the n-th
 * allocation falls at about the same place each time.
 *
 * Invariants checked, for every n:
 *   TOOM-O1. each call returns success or its documented error: LARDER_ENOMEM
 *       (LARDER_EBUSY never: no cache is near its memory bound);
 *   TOOM-O2. a failed call changes nothing, and the cache stays usable: every
 *       value written before (and every value of the other steps, once the
 *       seam has fired) reads back exactly, also the listener's writes;
 *   TOOM-O3. a failure inside the maintainer (growth, shrink, ghosts, sketch,
 *       tuner, the clear's walk) is invisible: nothing is lost, counters
 *       agree with a walk of the index afterwards;
 *   TOOM-O4. close returns every mapped byte; under AddressSanitizer,
 *       LeakSanitizer checks at exit that no heap block leaked (the
 *       asan-ubsan stage runs with detect_leaks=1).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <limits.h>
#include <stdlib.h>

#include "harness.h"

#define NKEYS 1200   /* A's keys: past 7/8 of a 128-bucket index, which then grows */
#define NL 1200      /* listener keys (B's listener writes them into D) */
#define ND 600       /* D's own keys, cleared: its listener writes them back */
#define BIG (300 * KiB)

static const char *const step_names[] = {
	"config", "open",      "first call", "puts",  "large entry",  "growth", "shrink",
	"evictions", "spill", "listener",   "clear", "set_capacity", "close",
};
enum { S_CONFIG, S_OPEN, S_FIRST, S_PUTS, S_LARGE, S_GROWTH, S_SHRINK, S_EVICT, S_SPILL,
       S_LISTENER, S_CLEAR, S_SETCAP, S_CLOSE, S_COUNT };

/* What the big cache must hold: for each key, the version of its last
 * accepted write (0: absent). Listener keys are written on B's
 * maintainer, under mu. */
struct world {
	larder *a, *b, *c, *d; /* B's listener writes into D */
	unsigned char ver[NKEYS];
	pthread_mutex_t mu;
	unsigned char lver[NL], mver[ND];
	_Atomic long listener_enomem, listener_bad;
	long enomem[S_COUNT];
	int step, fired_in; /* the step running; the one in which the seam fired */
	unsigned char *buf, *val;
};

static size_t value_len(unsigned k)
{
	return k == 0 ? BIG : 8 + (k % 7) * 150;
}

/* Value bytes: the key, the version, then a pattern of both. */
static const unsigned char *make_value(struct world *w, unsigned k, unsigned v, size_t len)
{
	for (size_t i = 0; i < len; i++)
		w->val[i] = (unsigned char)(k * 7u + v * 13u + i);
	if (len >= 8) {
		memcpy(w->val, &k, 4);
		memcpy(w->val + 4, &v, 4);
	}
	return w->val;
}

/* The seam's countdown, left as it was (-1: it has fired). The maintainer
 * is quiescent when this is called, so no allocation slips between the
 * two exchanges. */
static long countdown_peek(void)
{
	long left = larder__test_fail_alloc_after(-1);
	larder__test_fail_alloc_after(left);
	return left;
}

/* Moves to the next step, noting in which step the seam fired. */
static void enter_step(struct world *w, int step)
{
	if (w->fired_in < 0 && w->step >= 0 && countdown_peek() == -1)
		w->fired_in = w->step;
	w->step = step;
}

static void key_name(char *out, size_t size, char prefix, unsigned k)
{
	snprintf(out, size, "%c%u", prefix, k);
}

/* TOOM-O1: a call's result is success or ENOMEM; counts ENOMEM per step. */
static int accepted(struct world *w, int rc)
{
	if (rc == LARDER_ENOMEM) {
		w->enomem[w->step]++;
		return 0;
	}
	if (!CHECK_RC(rc, LARDER_OK))
		printf("  in step %s\n", step_names[w->step]);
	return rc == LARDER_OK;
}

static void put_a(struct world *w, unsigned k, unsigned v)
{
	char key[16];
	size_t len = value_len(k);
	key_name(key, sizeof(key), 'k', k);
	if (accepted(w, larder_put(w->a, key, strlen(key), make_value(w, k, v, len), len,
				   LARDER_TTL_NEVER)))
		w->ver[k] = (unsigned char)v;
}

/* A read; a thread's first call on a cache allocates its handle and may
 * fail with ENOMEM (larder.h), once: then it is read again. */
static int get_again(struct world *w, larder *c, const char *key, size_t *len)
{
	int rc = larder_get(c, key, strlen(key), w->buf, BIG, len);
	if (rc == LARDER_ENOMEM) {
		w->enomem[w->step]++;
		rc = larder_get(c, key, strlen(key), w->buf, BIG, len);
	}
	return rc;
}

/* TOOM-O2: A and D hold exactly the model's values. */
static void verify_a(struct world *w)
{
	long wrong = 0;
	for (unsigned k = 0; k < NKEYS; k++) {
		char key[16];
		size_t len = 0;
		key_name(key, sizeof(key), 'k', k);
		int rc = get_again(w, w->a, key, &len);
		int bad = w->ver[k] ? rc != LARDER_OK || len != value_len(k) ||
					      memcmp(w->buf, make_value(w, k, w->ver[k], len), len) != 0
				    : rc != LARDER_MISS;
		if (bad && wrong < 3)
			printf("  key %u: version %u, get %d (%zu bytes)\n", k, w->ver[k], rc, len);
		wrong += bad;
	}
	pthread_mutex_lock(&w->mu);
	for (unsigned k = 0; k < NL; k++) {
		char key[16];
		size_t len = 0;
		key_name(key, sizeof(key), 'L', k);
		int rc = get_again(w, w->d, key, &len);
		if (!w->lver[k])
			wrong += rc != LARDER_MISS;
		else
			wrong += rc != LARDER_OK || len != 8 || memcmp(w->buf, &k, 4) != 0;
	}
	for (unsigned k = 0; k < ND; k++) {
		char key[16];
		size_t len = 0;
		key_name(key, sizeof(key), 'M', k);
		int rc = get_again(w, w->d, key, &len);
		wrong += w->mver[k] ? rc != LARDER_OK || len != 4 || memcmp(w->buf, &k, 4) != 0
				    : rc != LARDER_MISS;
	}
	pthread_mutex_unlock(&w->mu);
	if (!CHECK_EQ(wrong, 0))
		printf("  %ld keys differ from the model after step %s\n", wrong,
		       step_names[w->step]);
}

/* B's listener: every evicted key of B is written into D as "L<n>". */
static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len_, enum larder_cause cause)
{
	struct world *w = ctx;
	unsigned n = 0;
	char lkey[16];
	unsigned char v[8];

	(void)value;
	(void)value_len_;
	(void)cause;
	for (size_t i = 1; i < key_len; i++)
		n = n * 10 + (unsigned)(((const char *)key)[i] - '0');
	n %= NL;
	key_name(lkey, sizeof(lkey), 'L', n);
	memcpy(v, &n, 4);
	memset(v + 4, 0x4c, 4);
	pthread_mutex_lock(&w->mu);
	int rc = larder_put(w->d, lkey, strlen(lkey), v, sizeof(v), LARDER_TTL_NEVER);
	if (rc == LARDER_OK)
		w->lver[n] = 1;
	else if (rc == LARDER_ENOMEM)
		atomic_fetch_add(&w->listener_enomem, 1);
	else
		atomic_fetch_add(&w->listener_bad, 1);
	pthread_mutex_unlock(&w->mu);
}

/* D's listener: each of its own "d<n>" keys that a clear removes is
 * written back into D as "M<n>": from its own maintainer, in the clear's
 * walk, hundreds in one pass, more than its event ring holds. */
static void self_listener(void *ctx, const void *key, size_t key_len, const void *value,
			  size_t value_len_, enum larder_cause cause)
{
	struct world *w = ctx;
	unsigned n = 0;
	char mkey[16];

	(void)value;
	(void)value_len_;
	if (cause != LARDER_CAUSE_CLEARED || ((const char *)key)[0] != 'd')
		return;
	for (size_t i = 1; i < key_len; i++)
		n = n * 10 + (unsigned)(((const char *)key)[i] - '0');
	key_name(mkey, sizeof(mkey), 'M', n);
	pthread_mutex_lock(&w->mu);
	int rc = larder_put(w->d, mkey, strlen(mkey), &n, 4, LARDER_TTL_NEVER);
	if (rc == LARDER_OK)
		w->mver[n] = 1;
	else if (rc == LARDER_ENOMEM)
		atomic_fetch_add(&w->listener_enomem, 1);
	else
		atomic_fetch_add(&w->listener_bad, 1);
	pthread_mutex_unlock(&w->mu);
}

/* B first: its listener writes into D, whose own listener writes into D. */
static void quiesce_all(struct world *w)
{
	CHECK_EQ(th_quiesce(w->b, 60000), 0);
	CHECK_EQ(th_quiesce(w->c, 60000), 0);
	for (int round = 0; round < 2; round++)
		CHECK_EQ(th_quiesce(w->d, 60000), 0);
	CHECK_EQ(th_quiesce(w->a, 60000), 0);
}

/* Opens a cache, retrying with the seam off if the injected failure hit
 * it: a failed open must leave *out NULL and nothing behind. */
static larder *open_retry(struct world *w, enum larder_policy policy, uint64_t capacity,
			  uint64_t expected, larder_removal_fn *fn)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		larder_config *cfg = NULL;
		larder *c = (larder *)&cfg; /* garbage: a failed open resets it */
		enter_step(w, S_CONFIG);
		int rc = larder_config_create(&cfg);
		if (!accepted(w, rc))
			continue;
		CHECK_RC(larder_config_set_capacity(cfg, capacity), LARDER_OK);
		CHECK_RC(larder_config_set_policy(cfg, policy), LARDER_OK);
		CHECK_RC(larder_config_set_expected_entries(cfg, expected), LARDER_OK);
		CHECK_RC(larder_config_set_write_wait_ms(cfg, 60000), LARDER_OK);
		CHECK_RC(larder_config_set_hash_seed(cfg, TH_HASH_SEED), LARDER_OK);
		if (fn)
			CHECK_RC(larder_config_set_removal_listener(cfg, fn, w), LARDER_OK);
		enter_step(w, S_OPEN);
		rc = larder_open(&c, cfg);
		larder_config_destroy(cfg);
		if (accepted(w, rc)) {
			larder__test_stuck_ms(c, TH_STUCK_MS); /* a loaded machine: harness.h */
			return c;
		}
		CHECK(c == NULL);
	}
	return NULL;
}

struct first {
	struct world *w;
	int rc[3];
};

/* A new thread's first calls: its state and handles are allocated. */
static void *first_call_main(void *arg)
{
	struct first *f = arg;
	unsigned char v[16];
	memset(v, 0x3f, sizeof(v));
	f->rc[0] = larder_put(f->w->b, "t0", 2, v, sizeof(v), LARDER_TTL_NEVER);
	f->rc[1] = larder_put(f->w->b, "t1", 2, v, sizeof(v), LARDER_TTL_NEVER);
	f->rc[2] = larder_contains(f->w->a, "k1", 2);
	return NULL;
}

/* Writes in a small cache, which evicts: ghosts (ARC), the sketch and the
 * tuner (tuned W-TinyLFU), hits for them; keys cycle through `distinct`. */
static void churn(struct world *w, larder *c, unsigned n, unsigned distinct, size_t vlen,
		  unsigned salt)
{
	unsigned char v[1024];
	memset(v, (int)salt, vlen);
	for (unsigned i = 0; i < n; i++) {
		char key[16];
		key_name(key, sizeof(key), 'e', i * 7919u % distinct + salt * 100000u);
		accepted(w, larder_put(c, key, strlen(key), v, vlen, LARDER_TTL_NEVER));
		if (i % 3 == 0) { /* hits feed the sketch and the tuner */
			size_t len = 0;
			int rc = larder_get(c, key, strlen(key), w->buf, vlen, &len);
			CHECK(rc == LARDER_MISS || (rc == LARDER_OK && len == vlen));
		}
	}
}

/* The whole workload, with the seam armed by the caller. */
static void workload(struct world *w)
{
	memset(w->ver, 0, sizeof(w->ver));
	memset(w->lver, 0, sizeof(w->lver));
	memset(w->mver, 0, sizeof(w->mver));
	w->step = -1;
	w->fired_in = -1;
	atomic_store(&w->listener_enomem, 0);
	atomic_store(&w->listener_bad, 0);
	w->a = open_retry(w, LARDER_POLICY_S3FIFO, 64 * MiB, 16, NULL);
	w->b = open_retry(w, LARDER_POLICY_ARC, 256 * KiB, 64, listener);
	w->c = open_retry(w, LARDER_POLICY_WTINYLFU_TUNED, 64 * KiB, 64, NULL);
	w->d = open_retry(w, LARDER_POLICY_S3FIFO, 16 * MiB, 4096, self_listener);
	if (!w->a || !w->b || !w->c || !w->d)
		goto close;
	/* A shrink may leave A's index as small as 64 buckets (a test seam),
	 * so that a shrink and a growth take a few hundred keys. */
	larder__test_index_floor(w->a, 64);

	enter_step(w, S_FIRST);
	struct first f = { w, { 0 } };
	pthread_t t;
	if (CHECK(pthread_create(&t, NULL, first_call_main, &f) == 0))
		pthread_join(t, NULL);
	accepted(w, f.rc[0]);
	accepted(w, f.rc[1]);
	CHECK(f.rc[2] == LARDER_MISS || f.rc[2] == LARDER_ENOMEM);
	quiesce_all(w);

	enter_step(w, S_PUTS);
	for (unsigned k = 1; k < 400; k++)
		put_a(w, k, 1);
	enter_step(w, S_SHRINK); /* 400 keys in 1024 buckets: sparse, it shrinks */
	quiesce_all(w);
	verify_a(w);
	enter_step(w, S_LARGE);
	put_a(w, 0, 1);
	quiesce_all(w);
	enter_step(w, S_GROWTH); /* 1200 keys: past 7/8 of the shrunk index */
	for (unsigned k = 400; k < NKEYS; k++)
		put_a(w, k, 1);
	quiesce_all(w);
	verify_a(w);
	enter_step(w, S_EVICT);
	churn(w, w->c, 300, 90, 1000, 1); /* about 60 fit in 64 KiB */
	quiesce_all(w);
	enter_step(w, S_SPILL);
	for (unsigned k = 0; k < ND; k++) {
		char key[16];
		key_name(key, sizeof(key), 'd', k);
		accepted(w, larder_put(w->d, key, strlen(key), "d", 1, LARDER_TTL_NEVER));
	}
	quiesce_all(w);
	int d_cleared = accepted(w, larder_clear(w->d));
	quiesce_all(w);
	verify_a(w);
	enter_step(w, S_LISTENER);
	churn(w, w->b, 1200, 100000, 200, 2); /* B evicts: its listener writes into D */
	/* a cut evicts hundreds in one pass: more writes than a ring holds */
	accepted(w, larder_set_capacity(w->b, 64 * KiB));
	quiesce_all(w);
	verify_a(w);
	enter_step(w, S_CLEAR);
	if (accepted(w, larder_clear(w->a)))
		memset(w->ver, 0, sizeof(w->ver));
	for (unsigned k = 0; k < 300; k++)
		put_a(w, k, 2);
	quiesce_all(w);
	verify_a(w);
	enter_step(w, S_SETCAP);
	accepted(w, larder_set_capacity(w->a, 32 * MiB));
	accepted(w, larder_set_capacity(w->c, 128 * KiB));
	churn(w, w->c, 100, 90, 1000, 3);
	quiesce_all(w);
	verify_a(w);
	CHECK_EQ(atomic_load(&w->listener_bad), 0);
	if (d_cleared) /* its listener wrote more than a ring holds */
		CHECK_GT(th_stat(w->d, LARDER_STAT_EVENTS_SPILLED), 0);
	th_check_accounting(w->a, 60000, NULL, NULL);
	th_check_accounting(w->d, 60000, NULL, NULL);
	th_check_accounting(w->b, 60000, NULL, NULL);
	th_check_accounting(w->c, 60000, NULL, NULL);
close:
	enter_step(w, S_CLOSE);
	larder_close(w->b); /* first: its listener writes into D */
	larder_close(w->c);
	larder_close(w->d);
	larder_close(w->a);
	w->a = w->b = w->c = w->d = NULL;
}

static void test_every_allocation_fails_once(void)
{
	struct world *w = calloc(1, sizeof(*w));
	uint64_t mapped = larder__test_mapped_bytes();
	long fired[S_COUNT] = { 0 }, enomem[S_COUNT] = { 0 }, runs = 0;

	REQUIRE(w != NULL);
	w->buf = malloc(BIG);
	w->val = malloc(BIG);
	pthread_mutex_init(&w->mu, NULL);
	REQUIRE(w->buf && w->val);

	/* Counting run: how many allocations the workload makes. */
	larder__test_fail_alloc_after(LONG_MAX);
	workload(w);
	long total = LONG_MAX - larder__test_fail_alloc_after(-1);
	printf("  the workload makes %ld allocations\n", total);
	CHECK_GT(total, 100);
	CHECK_EQ(larder__test_mapped_bytes(), mapped);
	/* Under ThreadSanitizer, every third n (each run costs 10x there): it
	 * looks for races on the failure paths; the other stages check that
	 * every site was reached. */
	long stride = TH_TSAN ? 3 : 1;

	for (long n = 0; n <= total + 5; n += stride, runs++) {
		memset(w->enomem, 0, sizeof(w->enomem));
		larder__test_fail_alloc_after(n);
		workload(w);
		long left = larder__test_fail_alloc_after(-1);
		for (int s = 0; s < S_COUNT; s++)
			enomem[s] += w->enomem[s];
		if (left == -1)
			fired[w->fired_in >= 0 ? w->fired_in : S_CLOSE]++;
		enomem[S_LISTENER] += atomic_load(&w->listener_enomem);
		if (!CHECK_EQ(larder__test_mapped_bytes(), mapped)) /* TOOM-O4 */
			printf("  n = %ld leaked mappings\n", n);
		if (th_failures() > 20)
			break;
	}
	printf("  %ld runs; failures injected / ENOMEM returned, per step:", runs);
	for (int s = 0; s < S_COUNT; s++)
		printf(" %s %ld/%ld", step_names[s], fired[s], enomem[s]);
	printf("\n");
	if (stride == 1) { /* with every n run, every step's sites were reached */
		/* The maintainer's own sites (growth, shrink, ghosts, sketch,
		 * tuner, the clear's walk), with nothing for a caller to see. */
		CHECK_GT(fired[S_GROWTH], 0);
		CHECK_GT(fired[S_SHRINK], 0);
		CHECK_GT(fired[S_EVICT], 0);
		/* Every kind of caller-visible site refused at least once. */
		CHECK_GT(enomem[S_CONFIG], 0);
		CHECK_GT(enomem[S_OPEN], 0);
		CHECK_GT(enomem[S_FIRST], 0);
		CHECK_GT(enomem[S_PUTS], 0);
		CHECK_GT(enomem[S_LARGE], 0);
		CHECK_GT(enomem[S_SPILL], 0);
		/* Not enomem[S_CLEAR]: whether the sweep's failure lands on the
		 * clear's table or on a maintainer's allocation around it depends
		 * on timing; test_clear_refused_keeps_entries aims at it. */
	}
	pthread_mutex_destroy(&w->mu);
	free(w->buf);
	free(w->val);
	free(w);
}

/*
 * A clear whose new table cannot be allocated returns LARDER_ENOMEM and
 * leaves every entry in place. The seam fails the next allocation of any
 * thread; with the maintainer quiesced that is the clear's table, and an
 * attempt where it was not (the clear succeeded) is refilled and repeated.
 */
static void test_clear_refused_keeps_entries(void)
{
	larder_config *cfg = th_config(4 * MiB);
	larder *c = cfg ? th_open(cfg) : NULL;
	int refused = 0;
	char key[16], out[16];
	size_t len;

	REQUIRE(c != NULL);
	for (int attempt = 0; attempt < 100 && !refused; attempt++) {
		for (unsigned k = 0; k < 200; k++) {
			key_name(key, sizeof(key), 'k', k);
			REQUIRE(larder_put(c, key, strlen(key), key, strlen(key), LARDER_TTL_NEVER) ==
				LARDER_OK);
		}
		REQUIRE(th_quiesce(c, 60000) == 0);
		larder__test_fail_alloc_after(0);
		int rc = larder_clear(c);
		larder__test_fail_alloc_after(-1);
		if (!CHECK(rc == LARDER_OK || rc == LARDER_ENOMEM) || rc != LARDER_ENOMEM)
			continue;
		refused = 1;
		for (unsigned k = 0; k < 200; k++) {
			key_name(key, sizeof(key), 'k', k);
			CHECK_EQ(larder_get(c, key, strlen(key), out, sizeof(out), &len), LARDER_OK);
			CHECK(len == strlen(key) && memcmp(out, key, len) == 0);
		}
	}
	CHECK(refused);
	CHECK_EQ(larder_clear(c), LARDER_OK);
	larder_close(c);
}

/*
 * Each allocation of a lone larder_open fails in turn, from the cache's own
 * block to the maintainer thread's state (the last, after the index, the
 * policy and the cache's id are made), until an n past its allocations
 * opens with the seam unfired. An open either refuses with LARDER_ENOMEM,
 * leaving *out NULL and every mapped byte returned (TOOM-O4), or opens when the
 * failed allocation was one it can do without (a policy's optional part).
 * Every failure path of the open is taken, those that undo the maintainer's
 * state included; under AddressSanitizer LeakSanitizer checks that each
 * freed exactly what it made.
 */
static void test_open_fails_cleanly_at_every_allocation(void)
{
	larder_config *cfg = th_config(4 * MiB);
	uint64_t mapped = larder__test_mapped_bytes();
	long n, refused = 0;

	REQUIRE(cfg != NULL);
	for (n = 0; n < 1000; n++) {
		larder *c = (larder *)&cfg; /* garbage: a failed open resets it */
		larder__test_fail_alloc_after(n);
		int rc = larder_open(&c, cfg);
		long left = larder__test_fail_alloc_after(-1);
		if (rc == LARDER_OK) {
			larder_close(c);
			if (left != -1)
				break; /* every allocation of the open went through */
		} else {
			CHECK_RC(rc, LARDER_ENOMEM);
			CHECK(c == NULL);
			refused++;
		}
		CHECK_EQ(larder__test_mapped_bytes(), mapped);
	}
	/* The others: parts the open does without, or the maintainer's first
	 * allocations after it returned. */
	printf("  open refused with ENOMEM at %ld of the first %ld allocations\n", refused, n);
	/* The cache, its table, its maintainer with the policy, its id and the
	 * maintainer thread's state at least. */
	CHECK_GT(refused, 5);
	CHECK(n < 1000);
	larder_config_destroy(cfg);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_every_allocation_fails_once),
		TH_TEST(test_clear_refused_keeps_entries),
		TH_TEST(test_open_fails_cleanly_at_every_allocation),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
