/*
 * tests/stress/stress_matrix.c - every operation, concurrently, across the
 * configuration matrix.
 *
 * Usage: larder_stress_matrix [--slice-ms N] [--workers N] [--config N] [--seed N]
 *   --config N runs only the N-th configuration of the list (a failure
 *   prints its number), with its own seed as in the full run.
 *
 * The matrix: policy (LRU, FIFO, S3-FIFO, tuned S3-FIFO, W-TinyLFU, tuned
 * W-TinyLFU, ARC) x shards (1, 2, 4) x compression (off, LZ4 alone, a
 * trained dictionary, a given one) x expiry (none, after write, after
 * access; both on an injected clock) x removal listener (none, counting,
 * with re-entrant calls) x capacity (tiny: 256 KiB, constant eviction;
 * small: 4 MiB, the working set fits) x pool (none, or in a pool with a
 * companion cache that opens and closes while the workers run, with the
 * pool's controller on or a static split; one shard only, as pools
 * required until pool27, kept so that the covering set stays) x clock (monotonic, or stepping back now and then). The full
 * product is 4,032 configurations of which 2,688 are valid; the test runs a
 * pairwise covering subset, chosen greedily at start (every valid pair of
 * two parameters' levels appears in at least one configuration; about
 * thirty).
 *
 * Each configuration gets one slice of work (a duration, not a pass/fail
 * criterion): workers do every operation on NKEYS keys - put,
 * put_if_absent, replace, replace_if_equals, remove, remove_if_equals,
 * touch, get, get_with, get_batch, peek, contains, ttl_remaining, a whole
 * iteration, flush, stats, reads into a buffer too small, bad input (an
 * empty or too long key, a value too long, NULL with a length) - and
 * advance the injected clock; an admin thread
 * clears, moves the capacity (set_capacity), opens and closes the pool's
 * companion, and saves a snapshot that it loads into a cache of its own;
 * a monitor samples the used bytes. Values are up to 6,000
 * bytes, and 1 write in 200 of a 4 MiB cache is past the largest slab slot
 * (300 KiB: a large mapping, or LARDER_EVALSIZE when the capacity moved
 * below 8 times it). Values are self-checking
 * (key id, length, version, deadline, checksum of the payload; half the
 * payload is a pattern, so the compressing caches compress it).
 *
 * The injected clock: a global millisecond counter the workers advance, and
 * a thread-local freeze, so every call a worker makes reads one fixed
 * instant (the maintainer reads the global counter, which is never behind):
 * a write's deadline is that instant + its TTL, exactly, and is stored in
 * the value. Keys of class A (id % 4 == 0) are never read by an extending
 * read (get, get_with, get_batch) nor touched, so their deadline stays the
 * one in their value even with expiry after access.
 *
 * Invariants:
 *   SMATRIX-M1. every value read (get, get_with, get_batch, peek, the
 *       iteration, the removal listener, the cas reads) is whole and its
 *       key's: key id, length, version and a checksum of the payload agree;
 *   SMATRIX-M2. every call returns one of its documented results; the only
 *       LARDER_EBUSY is for memory (busy_events and busy_index stay 0), a
 *       pooled cache's set_capacity is LARDER_ESTATE; get_with calls its
 *       callback once on LARDER_OK and never on LARDER_MISS, get_batch as
 *       often as it returns, never for a duplicate's twin's sake nor for
 *       an invalid key; an iteration returns no key twice; inside a read
 *       callback or the listener, a read works and a flush is refused
 *       (LARDER_ESTATE);
 *   SMATRIX-M3. used bytes never exceed the largest capacity of the slice
 *       plus the overshoot bound (sampled); in a pool, the pool's used bytes
 *       never exceed its budget plus its bound;
 *   SMATRIX-M4. no value is returned at or past its deadline: a class-A
 *       value read at instant r has deadline > r, and the iteration's ttl_ms
 *       of it is exactly deadline - r; ttl_remaining is >= 1 and at most the
 *       longest TTL given (plus how far the clock stepped back); once the quiesced clock is moved past every
 *       deadline, only entries without one are found;
 *   SMATRIX-M5. quiesced (flush): the counters agree with a walk of each
 *       index, the policies' queues are well linked and the slab's audit
 *       adds up;
 *   SMATRIX-M6. conservation: writes - removals of every cause == entries,
 *       and a counting listener heard exactly as many removals of each cause
 *       as the counters say (before and after the clock jump);
 *   SMATRIX-M7. quiesced, an iteration finds exactly the live entries: each
 *       once, as many as LARDER_STAT_ENTRIES, and the keys for which
 *       larder_contains() says LARDER_OK;
 *   SMATRIX-M8. at close (the cache, its companion and its pool) every
 *       mapped byte is returned;
 *   SMATRIX-M9. a snapshot saved beside the workers loads whole into a
 *       cache of the same configuration: every value whole and its key's,
 *       no key twice, an entry saved without a deadline loaded without one.
 * Not checked: hit ratios, and the deadlines of class-B keys (extended by
 * reads and touched: their values cannot carry them).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define NKEYS 1024u
#define SMALL_VALUE 6000u /* most values are at most this long */
#define BIG_VALUE (300u * 1024u) /* 1 write in 200 of a 4 MiB cache: past the largest slot */
#define MAX_VALUE (BIG_VALUE + 16u * 1024u)
#define MAX_WORKERS 8
#define MAX_TTL 400u     /* explicit TTLs: 1..MAX_TTL ms of the injected clock */
#define DEFAULT_TTL 200u /* the default TTL of the caches that expire */
#define HANG_MS 120000u  /* hang guards only */
#define NO_DEADLINE UINT64_MAX
#define KEY_MAX 128u /* key_name()'s longest, with its NUL */

/* ---- The matrix ----------------------------------------------------------- */

enum { P_POLICY, P_SHARDS, P_COMP, P_EXPIRY, P_LISTENER, P_CAPACITY, P_POOL, P_CLOCK, NPARAMS };
static const unsigned levels[NPARAMS] = { 7, 3, 4, 3, 2, 2, 2, 2 };
static const enum larder_policy policies[7] = {
	LARDER_POLICY_LRU,      LARDER_POLICY_FIFO,          LARDER_POLICY_S3FIFO,
	LARDER_POLICY_S3FIFO_TUNED, LARDER_POLICY_WTINYLFU, LARDER_POLICY_WTINYLFU_TUNED,
	LARDER_POLICY_ARC,
};
static const char *const policy_names[7] = { "lru",      "fifo",         "s3fifo", "s3fifo-tuned",
					     "wtinylfu", "wtinylfu-tuned", "arc" };
static const unsigned shard_counts[3] = { 1, 2, 4 };
static const char *const comp_names[4] = { "off", "lz4", "trained", "given" };
static const char *const expiry_names[3] = { "none", "after-write", "after-access" };

struct combo {
	unsigned v[NPARAMS];
};

#define MAX_COMBOS 64
static struct combo combos[MAX_COMBOS];
static unsigned ncombos;

static int combo_valid(const struct combo *c)
{
	return !c->v[P_POOL] || c->v[P_SHARDS] == 0; /* pooled: one shard (see the header) */
}

/* Index of the pair (a = la, b = lb) for parameters a < b in a flat table. */
static unsigned pair_index(unsigned a, unsigned la, unsigned b, unsigned lb)
{
	return ((a * NPARAMS + b) * 8 + la) * 8 + lb;
}

#define NPAIRS (NPARAMS * NPARAMS * 64)

/* The pairs c covers that are still uncovered (marked when mark is set). */
static unsigned cover(const struct combo *c, unsigned char *covered, int mark)
{
	unsigned n = 0;
	for (unsigned a = 0; a < NPARAMS; a++)
		for (unsigned b = a + 1; b < NPARAMS; b++) {
			unsigned i = pair_index(a, c->v[a], b, c->v[b]);
			if (!covered[i]) {
				n++;
				if (mark)
					covered[i] = 1;
			}
		}
	return n;
}

static void decode(unsigned k, struct combo *c)
{
	for (unsigned p = 0; p < NPARAMS; p++) {
		c->v[p] = k % levels[p];
		k /= levels[p];
	}
}

/* Greedy pairwise covering: repeatedly the valid combination (first in
 * enumeration order among equals) covering the most uncovered pairs. Pairs
 * no valid combination has (a pool with 2 or 4 shards) start covered. */
static void build_matrix(void)
{
	static unsigned char covered[NPAIRS];
	unsigned total = 1;
	for (unsigned p = 0; p < NPARAMS; p++)
		total *= levels[p];
	memset(covered, 1, sizeof(covered));
	for (unsigned k = 0; k < total; k++) {
		struct combo c;
		decode(k, &c);
		if (!combo_valid(&c))
			continue;
		for (unsigned a = 0; a < NPARAMS; a++)
			for (unsigned b = a + 1; b < NPARAMS; b++)
				covered[pair_index(a, c.v[a], b, c.v[b])] = 0;
	}
	for (;;) {
		unsigned best_n = 0, best_k = 0;
		for (unsigned k = 0; k < total; k++) {
			struct combo c;
			decode(k, &c);
			if (!combo_valid(&c))
				continue;
			unsigned n = cover(&c, covered, 0);
			if (n > best_n) {
				best_n = n;
				best_k = k;
			}
		}
		if (best_n == 0 || !CHECK(ncombos < MAX_COMBOS))
			return;
		decode(best_k, &combos[ncombos]);
		cover(&combos[ncombos++], covered, 1);
	}
}

/* ---- Run state --------------------------------------------------------------- */

static struct {
	uint64_t slice_ms, workers, config, seed;
} opt;

static const struct combo *cur;      /* the configuration running */
static larder *cache;                /* the cache under test */
static larder_pool *pool;            /* its pool, or NULL */
static larder *companion;            /* the pool's other cache (admin thread only) */
static uint64_t cap_max;             /* the largest capacity the slice may give it */
static _Atomic int stop;
static struct th_freeze_clock clock_; /* the injected clock */
static _Atomic uint64_t clock_max;   /* its highest reading */
static _Atomic uint64_t heard[5];    /* the counting listener, per cause */
static _Atomic uint64_t busy_seen, reads_checked, deadline_checks;
static _Atomic uint64_t ops_done, iterations, clears, cap_changes, companion_opens, snapshots;
static _Atomic uint64_t listener_null_values;

#define MFAIL(...) TH_FAIL_CAPPED(30, __VA_ARGS__)

/* The injected clock moves on by 1 ms; with P_CLOCK, 1 time in 64 it steps
 * back by up to 20 ms instead (tolerated, larder_clock_fn: every call
 * judges deadlines by its own reading). clock_max: its highest reading. */
static void advance_clock(struct th_rng *r)
{
	if (cur->v[P_CLOCK] && th_rng_below(r, 64) == 0) {
		atomic_fetch_sub_explicit(&clock_.now_ms, 1 + th_rng_below(r, 20), memory_order_release);
		return;
	}
	uint64_t t = atomic_fetch_add_explicit(&clock_.now_ms, 1, memory_order_release) + 1;
	uint64_t m = atomic_load_explicit(&clock_max, memory_order_relaxed);
	while (m < t && !atomic_compare_exchange_weak_explicit(&clock_max, &m, t,
							      memory_order_relaxed,
							      memory_order_relaxed))
		;
}

static int expiring(void)
{
	return cur->v[P_EXPIRY] != 0;
}

static int class_a(uint32_t key)
{
	return key % 4 == 0;
}

/* SMATRIX-M1, and SMATRIX-M4 for a class-A value read at instant at
 * (NO_DEADLINE: not a checked read). Returns the value's deadline, or 0
 * when the value is bad. */
static uint64_t value_ok(const char *where, uint32_t key, const void *value, size_t len,
			 uint64_t at)
{
	struct th_value_header h;
	if (!th_value_check(where, key, value, len, &h))
		return 0;
	if (at != NO_DEADLINE && class_a(key)) {
		atomic_fetch_add_explicit(&deadline_checks, 1, memory_order_relaxed);
		if (h.deadline <= at) /* SMATRIX-M4 */
			MFAIL("%s: key %u returned at %" PRIu64 ", its deadline %" PRIu64,
			      where, key, at, h.deadline);
	}
	atomic_fetch_add_explicit(&reads_checked, 1, memory_order_relaxed);
	return h.deadline ? h.deadline : 1;
}

/* Key id's name: "k<id>", and for a third of the ids a tail of up to 119
 * more bytes, so that keys of many lengths share the index. */
static size_t key_name(char *key, size_t n, uint32_t id)
{
	size_t len = (size_t)snprintf(key, n, "k%u", id);
	if (id % 3 == 2)
		for (size_t tail = (id * 37u) % 120; tail-- > 0 && len + 1 < n; len++)
			key[len] = (char)('a' + (id + len) % 26);
	key[len] = 0;
	return len;
}

/* The id of a key the cache handed back, if it is exactly one of ours. */
static int key_id(const void *key, size_t len, uint32_t *id)
{
	char s[KEY_MAX];
	if (len < 2 || len >= sizeof(s) || ((const char *)key)[0] != 'k')
		return 0;
	memcpy(s, key, len);
	s[len] = 0;
	*id = (uint32_t)strtoul(s + 1, NULL, 10);
	return *id < NKEYS && key_name(s, sizeof(s), *id) == len && memcmp(s, key, len) == 0;
}

/* A set of results: R(LARDER_OK) | R(LARDER_MISS) ... */
#define R(code) (1u << ((code) + 16))

/* SMATRIX-M2: rc is in the set allowed, or LARDER_EBUSY (memory: checked
 * later). Returns 1 when it is in allowed. */
static int result_ok(const char *op, int rc, unsigned allowed)
{
	if (rc >= -16 && rc < 16 && (allowed & R(rc)))
		return 1;
	if (rc == LARDER_EBUSY) {
		atomic_fetch_add_explicit(&busy_seen, 1, memory_order_relaxed);
		return 0;
	}
	MFAIL("%s returned %d (%s)", op, rc, larder_strerror(rc));
	return 0;
}

/* ---- The counting listener ---------------------------------------------------- */

static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	uint32_t id;
	(void)ctx;
	if ((unsigned)cause >= 5) {
		MFAIL("listener: cause %d", (int)cause);
		return;
	}
	atomic_fetch_add_explicit(&heard[cause], 1, memory_order_relaxed);
	if (!key_id(key, key_len, &id)) {
		MFAIL("listener: a key of %zu bytes that was never written", key_len);
		return;
	}
	if (value == NULL && value_len == 0) /* a decompression buffer refused (documented) */
		atomic_fetch_add_explicit(&listener_null_values, 1, memory_order_relaxed);
	else
		value_ok("listener", id, value, value_len, NO_DEADLINE);
	/* re-entrant calls on the maintainer thread: a read, and a flush, which
	 * would wait for this very thread */
	result_ok("contains (in the listener)", larder_contains(cache, key, key_len),
		  R(LARDER_OK) | R(LARDER_MISS));
	result_ok("flush (in the listener)", larder_flush(cache, 0), R(LARDER_ESTATE));
}

/* ---- Workers ---------------------------------------------------------------------- */


/* A TTL for a write, and the deadline it gives at instant t. */
static uint64_t pick_ttl(struct th_rng *r, uint64_t t, uint64_t *deadline)
{
	uint64_t x = th_rng_below(r, 100), ttl;
	if (!expiring() || x < 30)
		ttl = x < 15 ? LARDER_TTL_DEFAULT : LARDER_TTL_NEVER;
	else if (x < 50)
		ttl = LARDER_TTL_DEFAULT;
	else
		ttl = 1 + th_rng_below(r, MAX_TTL);
	if (ttl == LARDER_TTL_NEVER || (ttl == LARDER_TTL_DEFAULT && !expiring()))
		*deadline = NO_DEADLINE;
	else
		*deadline = t + (ttl == LARDER_TTL_DEFAULT ? DEFAULT_TTL : ttl);
	return ttl;
}

/* A value's length; *evalsize is R(LARDER_EVALSIZE) for a big one, which a
 * capacity moved below 8 times its entry refuses (and a pooled cache's
 * share may be that small). */
static size_t pick_len(struct th_rng *r, unsigned *evalsize)
{
	*evalsize = 0;
	if (cur->v[P_CAPACITY] && th_rng_below(r, 200) == 0) {
		*evalsize = R(LARDER_EVALSIZE);
		return BIG_VALUE + th_rng_below(r, MAX_VALUE - BIG_VALUE);
	}
	return 32 + th_rng_below(r, th_rng_below(r, 8) ? 600 : SMALL_VALUE - 32);
}

struct read_ctx {
	uint32_t key;
	uint64_t at;
	int calls;
};

static void read_fn(void *ctx, const void *value, size_t len)
{
	struct read_ctx *r = ctx;
	r->calls++;
	value_ok("get_with", r->key, value, len, r->at);
	/* re-entrant calls: a read of the same key, and a flush, which would
	 * wait for memory this read section holds */
	char key[KEY_MAX];
	size_t klen = key_name(key, sizeof(key), r->key);
	result_ok("contains (in a callback)", larder_contains(cache, key, klen),
		  R(LARDER_OK) | R(LARDER_MISS));
	result_ok("flush (in a callback)", larder_flush(cache, 0), R(LARDER_ESTATE));
}

struct batch_ctx {
	const uint32_t *ids;
	size_t count;
	uint64_t at;
	long calls;
};

static void batch_fn(void *ctx, size_t i, const void *value, size_t len)
{
	struct batch_ctx *b = ctx;
	b->calls++;
	if (i >= b->count || b->ids[i] >= NKEYS)
		MFAIL("get_batch: index %zu of %zu (an invalid key's?)", i, b->count);
	else
		value_ok("get_batch", b->ids[i], value, len, b->at);
}

struct walk {
	unsigned char seen[NKEYS];
	uint64_t at, found, with_deadline;
};

static void iter_fn(void *ctx, const void *key, size_t key_len, const void *value,
		    size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk *w = ctx;
	uint32_t id;
	(void)entry_bytes;
	if (!key_id(key, key_len, &id)) {
		MFAIL("iteration: a key of %zu bytes that was never written", key_len);
		return;
	}
	if (w->seen[id]++) /* SMATRIX-M2 */
		MFAIL("iteration: key %u returned twice", id);
	w->found++;
	uint64_t d = value_ok("iteration", id, value, value_len, w->at);
	if (ttl_ms != LARDER_TTL_NEVER)
		w->with_deadline++;
	if (ttl_ms == 0) /* SMATRIX-M4 */
		MFAIL("iteration: key %u with ttl_ms 0", id);
	if (class_a(id) && d && (d == NO_DEADLINE ? ttl_ms != LARDER_TTL_NEVER
						  : d > w->at && ttl_ms != d - w->at))
		MFAIL("iteration: key %u: ttl_ms %" PRIu64 " at %" PRIu64 ", deadline %" PRIu64,
		      id, ttl_ms, w->at, d);
}

/* One walk of the whole of c at the frozen instant; returns how many it
 * found. Without deadlines, the values' deadlines are not checked against
 * the instant (a loaded snapshot's entries have new ones). */
static uint64_t walk_all(larder *c, struct walk *w, int deadlines)
{
	larder_iter *it;
	int rc;
	memset(w, 0, sizeof(*w));
	w->at = th_freeze(&clock_);
	if (!deadlines)
		w->at = NO_DEADLINE;
	if (!CHECK_RC(larder_iter_open(c, &it), LARDER_OK)) {
		th_thaw();
		return 0;
	}
	for (unsigned steps = 0; (rc = larder_iter_next(it, iter_fn, w)) == LARDER_OK; steps++)
		if (steps > NKEYS) {
			MFAIL("iteration: more entries than keys");
			break;
		}
	if (rc != LARDER_OK && rc != LARDER_MISS)
		MFAIL("iter_next returned %d (%s)", rc, larder_strerror(rc));
	larder_iter_close(it);
	th_thaw();
	atomic_fetch_add_explicit(&iterations, 1, memory_order_relaxed);
	return w->found;
}

/* A class-B key for the extending reads (a class-A id + 1..3). */
static uint32_t pick_b(struct th_rng *r)
{
	return (uint32_t)(th_rng_below(r, NKEYS / 4) * 4 + 1 + th_rng_below(r, 3));
}

/* Bad input, each with its one documented result (SMATRIX-M2). */
static void bad_input(struct th_rng *r, const char *key, size_t klen, unsigned char *v)
{
	static const char long_key[251] = { 'k' }; /* over the default max_key_bytes, 250 */
	size_t len;
	uint64_t ttl;
	int rc, want;
	switch (th_rng_below(r, 6)) {
	case 0:
		rc = larder_put(cache, key, 0, v, 64, LARDER_TTL_NEVER), want = LARDER_EINVAL;
		break;
	case 1:
		rc = larder_put(cache, long_key, sizeof(long_key), v, 64, LARDER_TTL_NEVER);
		want = LARDER_EKEYSIZE;
		break;
	case 2: /* the key's value, if any, stays */
		rc = larder_put(cache, key, klen, v, MAX_VALUE + 1, LARDER_TTL_NEVER);
		want = LARDER_EVALSIZE;
		break;
	case 3:
		rc = larder_replace(cache, key, klen, NULL, 64, LARDER_TTL_NEVER), want = LARDER_EINVAL;
		break;
	case 4:
		rc = larder_get(cache, key, klen, NULL, 64, &len), want = LARDER_EINVAL;
		break;
	default:
		rc = larder_ttl_remaining(cache, long_key, sizeof(long_key), &ttl);
		want = LARDER_EKEYSIZE;
		break;
	}
	if (rc != want)
		MFAIL("bad input: %d (%s), not %d", rc, larder_strerror(rc), want);
}

static void one_op(struct th_rng *r, unsigned char *v, unsigned char *buf, struct walk *w)
{
	uint32_t k = (uint32_t)th_rng_below(r, NKEYS);
	char key[KEY_MAX];
	size_t len = 0, vlen, klen;
	uint64_t x = th_rng_below(r, 1000), t = th_freeze(&clock_), deadline, ttl;
	unsigned big;
	int rc;

	if (x < 400 && class_a(k))
		k = pick_b(r); /* extending reads and touch: class B only */
	klen = key_name(key, sizeof(key), k);
	if (x < 240) {
		rc = larder_get(cache, key, klen, buf, MAX_VALUE, &len);
		if (result_ok("get", rc, R(LARDER_OK) | R(LARDER_MISS)) && rc == LARDER_OK)
			value_ok("get", k, buf, len, t);
	} else if (x < 245) {
		/* a buffer too small for any value: nothing copied, the length told */
		int peek = x & 1;
		len = 0;
		rc = peek ? larder_peek(cache, key, klen, buf, 16, &len)
			  : larder_get(cache, key, klen, buf, 16, &len);
		if (result_ok(peek ? "peek (16 bytes)" : "get (16 bytes)", rc,
			      R(LARDER_EBUFSIZE) | R(LARDER_MISS)) &&
		    rc == LARDER_EBUFSIZE && (len < sizeof(struct th_value_header) || len > MAX_VALUE))
			MFAIL("key %u: LARDER_EBUFSIZE with value_len %zu", k, len);
	} else if (x < 250) {
		bad_input(r, key, klen, v);
	} else if (x < 300) {
		struct read_ctx ctx = { k, t, 0 };
		rc = larder_get_with(cache, key, klen, read_fn, &ctx);
		if (result_ok("get_with", rc, R(LARDER_OK) | R(LARDER_MISS)) &&
		    ctx.calls != (rc == LARDER_OK))
			MFAIL("get_with returned %d after %d callbacks", rc, ctx.calls);
	} else if (x < 330) {
		char names[8][256];
		const void *keys[8];
		size_t lens[8];
		uint32_t ids[8];
		struct batch_ctx b = { ids, 8, t, 0 };
		for (int i = 0; i < 8; i++) {
			ids[i] = pick_b(r);
			lens[i] = key_name(names[i], sizeof(names[i]), ids[i]);
			keys[i] = names[i];
		}
		/* a duplicate, and an invalid key (empty, NULL, too long): skipped */
		memset(names[7], 'x', sizeof(names[7]));
		unsigned bad = (unsigned)th_rng_below(r, 7);
		ids[7] = ids[0];
		keys[7] = keys[0];
		lens[7] = lens[0];
		ids[bad] = NKEYS; /* batch_fn fails it if called */
		if (x % 3 == 0)
			lens[bad] = 0;
		else if (x % 3 == 1)
			keys[bad] = NULL;
		else
			lens[bad] = 251; /* over the default max_key_bytes; names[bad] has the room */
		long n = larder_get_batch(cache, 8, keys, lens, batch_fn, &b);
		if (n < 0 || n > 8 || n != b.calls)
			MFAIL("get_batch returned %ld after %ld callbacks", n, b.calls);
	} else if (x < 400) {
		rc = larder_touch(cache, key, klen, pick_ttl(r, t, &deadline));
		result_ok("touch", rc, R(LARDER_OK) | R(LARDER_MISS));
	} else if (x < 460) {
		rc = larder_peek(cache, key, klen, buf, MAX_VALUE, &len);
		if (result_ok("peek", rc, R(LARDER_OK) | R(LARDER_MISS)) && rc == LARDER_OK)
			value_ok("peek", k, buf, len, t);
	} else if (x < 490) {
		rc = larder_contains(cache, key, klen);
		result_ok("contains", rc, R(LARDER_OK) | R(LARDER_MISS));
	} else if (x < 520) {
		rc = larder_ttl_remaining(cache, key, klen, &ttl);
		if (result_ok("ttl_remaining", rc, R(LARDER_OK) | R(LARDER_MISS)) &&
		    rc == LARDER_OK &&
		    (ttl == 0 || (ttl != LARDER_TTL_NEVER && ttl > MAX_TTL + (clock_max - t))))
			MFAIL("ttl_remaining of key %u: %" PRIu64, k, ttl); /* SMATRIX-M4 */
	} else if (x < 700) {
		ttl = pick_ttl(r, t, &deadline);
		vlen = th_value_make(v, k, pick_len(r, &big), deadline);
		rc = larder_put(cache, key, klen, v, vlen, ttl);
		result_ok("put", rc, R(LARDER_OK) | big);
	} else if (x < 760) {
		ttl = pick_ttl(r, t, &deadline);
		vlen = th_value_make(v, k, pick_len(r, &big), deadline);
		rc = larder_put_if_absent(cache, key, klen, v, vlen, ttl);
		result_ok("put_if_absent", rc, R(LARDER_OK) | R(LARDER_EXISTS) | big);
	} else if (x < 810) {
		ttl = pick_ttl(r, t, &deadline);
		vlen = th_value_make(v, k, pick_len(r, &big), deadline);
		rc = larder_replace(cache, key, klen, v, vlen, ttl);
		result_ok("replace", rc, R(LARDER_OK) | R(LARDER_MISS) | big);
	} else if (x < 900) {
		/* the cas calls, with the value a peek (no extension) just read */
		int cas_remove = x >= 860;
		rc = larder_peek(cache, key, klen, buf, MAX_VALUE, &len);
		if (rc != LARDER_OK) {
			result_ok("peek (cas)", rc, R(LARDER_MISS));
			th_thaw();
			return;
		}
		if (!value_ok("peek (cas)", k, buf, len, t)) {
			th_thaw();
			return;
		}
		if (cas_remove) {
			rc = larder_remove_if_equals(cache, key, klen, buf, len);
			result_ok("remove_if_equals", rc,
				  R(LARDER_OK) | R(LARDER_MISMATCH) | R(LARDER_MISS));
		} else {
			ttl = pick_ttl(r, t, &deadline);
			vlen = th_value_make(v, k, pick_len(r, &big), deadline);
			rc = larder_replace_if_equals(cache, key, klen, buf, len, v, vlen, ttl);
			result_ok("replace_if_equals", rc,
				  R(LARDER_OK) | R(LARDER_MISMATCH) | R(LARDER_MISS) | big);
		}
	} else if (x < 970) {
		rc = larder_remove(cache, key, klen);
		result_ok("remove", rc, R(LARDER_OK) | R(LARDER_MISS));
	} else if (x < 985) {
		uint64_t s[LARDER_STAT_COUNT];
		CHECK_RC(larder_stats(cache, s, LARDER_STAT_COUNT), LARDER_OK);
	} else if (x < 995) {
		th_thaw();
		walk_all(cache, w, 1);
	} else {
		th_thaw();
		CHECK_RC(larder_flush(cache, HANG_MS * TH_SLOW), LARDER_OK);
	}
	th_thaw();
}

static void *worker_main(void *arg)
{
	struct th_rng r = { *(uint64_t *)arg };
	unsigned char *v = malloc(MAX_VALUE + 1), *buf = malloc(MAX_VALUE);
	struct walk *w = malloc(sizeof(*w));

	if (CHECK(v && buf && w))
		while (!atomic_load_explicit(&stop, memory_order_relaxed) && th_failures() == 0) {
			one_op(&r, v, buf, w);
			if (th_rng_below(&r, 8) == 0)
				advance_clock(&r);
			atomic_fetch_add_explicit(&ops_done, 1, memory_order_relaxed);
		}
	free(v);
	free(buf);
	free(w);
	return NULL;
}

/* ---- Admin and monitor ---------------------------------------------------------- */

static larder_config *make_config(uint64_t capacity, int with_listener);

static void companion_toggle(void)
{
	if (companion) {
		larder_close(companion);
		companion = NULL;
		return;
	}
	larder_config *cfg = make_config(0, 0);
	if (cfg && (companion = th_open(cfg)) != NULL) {
		atomic_fetch_add(&companion_opens, 1);
		for (uint32_t i = 0; i < 64; i++) {
			unsigned char v[256];
			char key[KEY_MAX];
			size_t klen = key_name(key, sizeof(key), i);
			size_t n = th_value_make(v, i, sizeof(v), NO_DEADLINE);
			int rc = larder_put(companion, key, klen, v, n, LARDER_TTL_NEVER);
			result_ok("companion put", rc, R(LARDER_OK));
		}
	}
}

static char snapshot_path[256];

/*
 * SMATRIX-M9: a save beside the workers succeeds, and the snapshot loads
 * whole into a cache of the same configuration (its own, twice the largest
 * capacity): every value whole and its key's, no key twice, and an entry
 * saved without a deadline loaded without one.
 */
static void snapshot_round_trip(void)
{
	int rc = larder_save(cache, snapshot_path);
	if (!CHECK_RC(rc, LARDER_OK))
		return;
	larder_config *cfg = make_config(2 * cap_max, 0);
	larder *copy = cfg ? th_open(cfg) : NULL;
	if (!copy)
		return;
	rc = larder_load(copy, snapshot_path);
	result_ok("load", rc, R(LARDER_OK));
	struct walk *w = malloc(sizeof(*w));
	if (CHECK(w != NULL))
		walk_all(copy, w, 0);
	free(w);
	larder_close(copy);
	atomic_fetch_add(&snapshots, 1);
}

static void *admin_main(void *arg)
{
	struct th_rng r = { *(uint64_t *)arg };
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		th_pause_ms(2 + th_rng_below(&r, 15)); /* a pause, not a sync */
		uint64_t x = th_rng_below(&r, 10);
		if (x == 9) {
			snapshot_round_trip();
		} else if (x == 0) {
			CHECK_RC(larder_clear(cache), LARDER_OK);
			atomic_fetch_add(&clears, 1);
		} else if (x < 3 && pool) {
			companion_toggle();
		} else {
			uint64_t cap = cap_max / 2 + th_rng_below(&r, cap_max / 2 + 1);
			CHECK_RC(larder_set_capacity(cache, cap), pool ? LARDER_ESTATE : LARDER_OK);
			atomic_fetch_add(&cap_changes, 1);
		}
	}
	return NULL;
}

static _Atomic uint64_t max_used, samples;

/* SMATRIX-M3 */
static void sample_bound(void)
{
	uint64_t v[LARDER_STAT_COUNT];
	if (!CHECK_RC(larder_stats(cache, v, LARDER_STAT_COUNT), LARDER_OK))
		return;
	if (v[LARDER_STAT_USED_BYTES] > cap_max + v[LARDER_STAT_OVERSHOOT_BOUND])
		MFAIL("used %" PRIu64 " over %" PRIu64 " + %" PRIu64, v[LARDER_STAT_USED_BYTES],
		      cap_max, v[LARDER_STAT_OVERSHOOT_BOUND]);
	if (v[LARDER_STAT_USED_BYTES] > max_used)
		max_used = v[LARDER_STAT_USED_BYTES];
	if (pool) {
		uint64_t p[LARDER_POOL_STAT_COUNT];
		if (CHECK_RC(larder_pool_stats(pool, p, LARDER_POOL_STAT_COUNT), LARDER_OK) &&
		    p[LARDER_POOL_USED_BYTES] >
			    p[LARDER_POOL_BUDGET_BYTES] + p[LARDER_POOL_OVERSHOOT_BOUND])
			MFAIL("pool used %" PRIu64 " over %" PRIu64 " + %" PRIu64,
			      p[LARDER_POOL_USED_BYTES], p[LARDER_POOL_BUDGET_BYTES],
			      p[LARDER_POOL_OVERSHOOT_BOUND]);
	}
	samples++;
}

static void *monitor_main(void *arg)
{
	(void)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		sample_bound();
		th_pause_ms(1); /* a sampling period, not a sync */
	}
	return NULL;
}

/* ---- Quiesced checks ------------------------------------------------------------------ */

static const enum larder_stat by_cause[5] = {
	LARDER_STAT_REMOVALS, LARDER_STAT_REPLACEMENTS, LARDER_STAT_EXPIRATIONS,
	LARDER_STAT_EVICTIONS, LARDER_STAT_CLEARED,
};

/* SMATRIX-M5, SMATRIX-M6 on the quiesced cache (nothing runs: the clock
 * stands still, and a pool's controller has only this cache, whose capacity
 * it can only grow, so nothing leaves). */
static void check_counts(const char *when)
{
	uint64_t v[LARDER_STAT_COUNT], removed = 0;
	CHECK_RC(larder_flush(cache, HANG_MS * TH_SLOW), LARDER_OK);
	th_check_accounting(cache, HANG_MS, NULL, NULL);
	th_check_memory_audit(cache);
	CHECK_EQ(th_quiesce(cache, HANG_MS), 0);
	if (!CHECK_RC(larder_stats(cache, v, LARDER_STAT_COUNT), LARDER_OK))
		return;
	for (int cause = 0; cause < 5; cause++) {
		removed += v[by_cause[cause]];
		if (cur->v[P_LISTENER] && !CHECK_EQ(atomic_load(&heard[cause]), v[by_cause[cause]]))
			printf("  %s: the listener heard %s %" PRIu64 " times, counted %" PRIu64 "\n",
			       when, larder_cause_name((enum larder_cause)cause),
			       atomic_load(&heard[cause]), v[by_cause[cause]]);
	}
	if (!CHECK_EQ(v[LARDER_STAT_WRITES] - removed, v[LARDER_STAT_ENTRIES]))
		printf("  %s: writes %" PRIu64 ", removals %" PRIu64 ", entries %" PRIu64 "\n",
		       when, v[LARDER_STAT_WRITES], removed, v[LARDER_STAT_ENTRIES]);
	CHECK_EQ(v[LARDER_STAT_BUSY_EVENTS], 0); /* SMATRIX-M2 */
	CHECK_EQ(v[LARDER_STAT_BUSY_INDEX], 0);
}

/* SMATRIX-M7; returns the entries found. */
static uint64_t check_iteration(struct walk *w)
{
	uint64_t found = walk_all(cache, w, 1), present = 0;
	for (uint32_t k = 0; k < NKEYS; k++) {
		char key[KEY_MAX];
		size_t klen = key_name(key, sizeof(key), k);
		th_freeze(&clock_);
		int rc = larder_contains(cache, key, klen);
		th_thaw();
		if (rc == LARDER_OK)
			present++;
		if ((rc == LARDER_OK) != (w->seen[k] == 1))
			MFAIL("key %u: contains %d, the iteration found it %u times", k, rc, w->seen[k]);
	}
	CHECK_EQ(found, present);
	CHECK_EQ(found, th_stat(cache, LARDER_STAT_ENTRIES));
	return found;
}

/* ---- One configuration ------------------------------------------------------------------ */

/* The configuration under test; a capacity of 0 makes a member of the pool. */
static larder_config *make_config(uint64_t capacity, int with_listener)
{
	larder_config *cfg = NULL;
	const struct combo *c = cur;
	if (!CHECK_RC(larder_config_create(&cfg), LARDER_OK))
		return NULL;
	int ok = (capacity ? larder_config_set_capacity(cfg, capacity) == LARDER_OK
			   : larder_config_set_pool(cfg, pool) == LARDER_OK) &&
		 larder_config_set_hash_seed(cfg, TH_HASH_SEED) == LARDER_OK &&
		 larder_config_set_write_wait_ms(cfg, TH_WRITE_WAIT_MS) == LARDER_OK &&
		 larder_config_set_shards(cfg, shard_counts[c->v[P_SHARDS]]) == LARDER_OK &&
		 larder_config_set_policy(cfg, policies[c->v[P_POLICY]]) == LARDER_OK &&
		 larder_config_set_max_value_bytes(cfg, MAX_VALUE) == LARDER_OK &&
		 larder_config_set_clock(cfg, th_freeze_clock_fn, &clock_) == LARDER_OK &&
		 (!with_listener || larder_config_set_removal_listener(cfg, listener, NULL) == LARDER_OK);
	if (ok && c->v[P_COMP] == 3) {
		/* given: raw sample content, a few values' bytes */
		unsigned char dict[4096];
		for (size_t at = 0; at + 512 <= sizeof(dict); at += 512)
			th_value_make(dict + at, (uint32_t)at, 512, NO_DEADLINE);
		ok = larder_config_set_compression(cfg, 64, 10) == LARDER_OK &&
		     larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, dict,
							      sizeof(dict)) == LARDER_OK;
	} else if (ok && c->v[P_COMP]) {
		ok = larder_config_set_compression(cfg, 64, 10) == LARDER_OK &&
		     larder_config_set_compression_dictionary(
			     cfg, c->v[P_COMP] == 1 ? LARDER_DICTIONARY_NONE : LARDER_DICTIONARY_TRAIN,
			     NULL, 0) == LARDER_OK;
	}
	if (ok && c->v[P_EXPIRY])
		ok = larder_config_set_default_ttl_ms(cfg, DEFAULT_TTL) == LARDER_OK &&
		     larder_config_set_expiry(cfg, c->v[P_EXPIRY] == 1 ? LARDER_EXPIRE_AFTER_WRITE
								      : LARDER_EXPIRE_AFTER_ACCESS) ==
			     LARDER_OK;
	if (!CHECK(ok)) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return cfg;
}

static void run_combo(unsigned index, uint64_t seed)
{
	const struct combo *c = &combos[index];
	uint64_t mapped0 = larder__test_mapped_bytes(), t0 = th_now_ms();
	uint64_t capacity = c->v[P_CAPACITY] ? 4 * MiB : 256 * KiB;
	struct th_rng r = { seed };

	printf("matrix %2u: %s, %u shard(s), compression %s, expiry %s, listener %s, %s%s%s\n",
	       index, policy_names[c->v[P_POLICY]], shard_counts[c->v[P_SHARDS]],
	       comp_names[c->v[P_COMP]], expiry_names[c->v[P_EXPIRY]],
	       c->v[P_LISTENER] ? "counting" : "none", c->v[P_CAPACITY] ? "4 MiB" : "256 KiB",
	       c->v[P_POOL] ? ", pooled" : "", c->v[P_CLOCK] ? ", clock steps back" : "");
	cur = c;
	cap_max = capacity;
	atomic_store(&stop, 0);
	atomic_store(&clock_.now_ms, 1000000);
	atomic_store(&clock_max, 1000000);
	for (int i = 0; i < 5; i++)
		atomic_store(&heard[i], 0);
	max_used = 0;
	pool = NULL;
	companion = NULL;
	if (c->v[P_POOL]) {
		/* the budget is split between the cache and its companion while that is open */
		larder_pool_config *pc = NULL;
		cap_max = capacity * 2 < MiB ? MiB : capacity * 2;
		if (!CHECK_RC(larder_pool_config_create(&pc), LARDER_OK))
			return;
		CHECK_RC(larder_pool_config_set_budget(pc, cap_max), LARDER_OK);
		/* odd configurations: the controller moves capacity; even: a static
		 * split, recomputed as the companion opens and closes */
		CHECK_RC(larder_pool_config_set_interval_ms(pc, index % 2 ? 5 : 0), LARDER_OK);
		CHECK_RC(larder_pool_create(&pool, pc), LARDER_OK);
		larder_pool_config_destroy(pc);
		if (!pool)
			return;
	}
	larder_config *cfg = make_config(pool ? 0 : capacity, (int)c->v[P_LISTENER]);
	cache = cfg ? th_open(cfg) : NULL;
	if (!cache)
		return;

	uint64_t seeds[MAX_WORKERS + 1];
	pthread_t workers[MAX_WORKERS], admin, monitor;
	for (unsigned i = 0; i <= opt.workers; i++)
		seeds[i] = th_rng_next(&r);
	for (unsigned i = 0; i < opt.workers; i++)
		CHECK_EQ(pthread_create(&workers[i], NULL, worker_main, &seeds[i]), 0);
	CHECK_EQ(pthread_create(&admin, NULL, admin_main, &seeds[opt.workers]), 0);
	CHECK_EQ(pthread_create(&monitor, NULL, monitor_main, NULL), 0);
	th_pause_ms(opt.slice_ms); /* the slice: a duration of work */
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < opt.workers; i++)
		pthread_join(workers[i], NULL);
	pthread_join(admin, NULL);
	pthread_join(monitor, NULL);
	sample_bound();
	if (companion) /* alone in its pool, the cache holds the whole budget: nothing moves */
		larder_close(companion);
	companion = NULL;

	struct walk *w = malloc(sizeof(*w));
	uint64_t live = 0, after = 0, with_deadline = 0;
	if (CHECK(w != NULL)) {
		check_counts("quiesced");
		live = check_iteration(w);
		with_deadline = w->with_deadline;
		/* SMATRIX-M4: past every deadline, only the entries without one remain */
		atomic_fetch_add(&clock_.now_ms, 100 * (MAX_TTL + DEFAULT_TTL));
		check_counts("after the clock jump");
		after = check_iteration(w);
		if (!CHECK_EQ(w->with_deadline, 0))
			printf("  %" PRIu64 " entries with a deadline outlived it\n", w->with_deadline);
		if (!expiring())
			CHECK_EQ(after, live);
		free(w);
	}
	uint64_t v[LARDER_STAT_COUNT];
	CHECK_RC(larder_stats(cache, v, LARDER_STAT_COUNT), LARDER_OK);
	larder_close(cache);
	if (pool)
		CHECK_RC(larder_pool_close(pool), LARDER_OK);
	CHECK_EQ(larder__test_mapped_bytes(), mapped0); /* SMATRIX-M8 */

	printf("  %" PRIu64 " ms, %" PRIu64 " ops, %" PRIu64 " writes, %" PRIu64 " evicted, %" PRIu64
	       " expired, %" PRIu64 " live (%" PRIu64 " with deadlines, %" PRIu64
	       " after the jump), max used %" PRIu64 " KiB\n",
	       th_now_ms() - t0, atomic_load(&ops_done),
	       v[LARDER_STAT_WRITES], v[LARDER_STAT_EVICTIONS], v[LARDER_STAT_EXPIRATIONS], live,
	       with_deadline, after, max_used / KiB);
	atomic_store(&ops_done, 0);
}

int main(int argc, char **argv)
{
	opt.slice_ms = th_arg_u64(argc, argv, "--slice-ms", TH_TSAN || TH_ASAN ? 1000 : 1200);
	opt.workers = th_arg_u64(argc, argv, "--workers", 3);
	opt.config = th_arg_u64(argc, argv, "--config", UINT64_MAX);
	opt.seed = th_arg_seed(argc, argv);
	if (opt.workers < 1 || opt.workers > MAX_WORKERS || opt.slice_ms < 1) {
		fprintf(stderr, "stress_matrix: bad arguments\n");
		return 2;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);
	larder__test_poison_freed(1);
	build_matrix();
	printf("stress_matrix: %u configurations (pairwise), slice %" PRIu64 " ms, %" PRIu64
	       " workers, seed %" PRIu64 "\n", ncombos, opt.slice_ms, opt.workers, opt.seed);
	if (opt.config != UINT64_MAX && opt.config >= ncombos) {
		fprintf(stderr, "stress_matrix: --config out of range (0..%u)\n", ncombos - 1);
		return 2;
	}
	const char *tmp = getenv("TMPDIR");
	char dir[200];
	snprintf(dir, sizeof(dir), "%s/larder-matrix-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(dir)) {
		perror("stress_matrix: mkdtemp");
		return 2;
	}
	snprintf(snapshot_path, sizeof(snapshot_path), "%s/snapshot", dir);
	uint64_t t0 = th_now_ms();
	for (unsigned i = 0; i < ncombos && th_failures() == 0; i++)
		if (opt.config == UINT64_MAX || opt.config == i)
			run_combo(i, th_mix64(opt.seed + i));
	printf("stress_matrix: %" PRIu64 " s, %" PRIu64 " values checked (%" PRIu64
	       " against their deadline), %" PRIu64 " iterations, %" PRIu64 " clears, %" PRIu64
	       " capacity changes, %" PRIu64 " companion opens, %" PRIu64
	       " snapshots saved and loaded, EBUSY (memory) %" PRIu64
	       ", listener values refused %" PRIu64 "\n",
	       (th_now_ms() - t0) / 1000, atomic_load(&reads_checked),
	       atomic_load(&deadline_checks), atomic_load(&iterations), atomic_load(&clears),
	       atomic_load(&cap_changes), atomic_load(&companion_opens), atomic_load(&snapshots),
	       atomic_load(&busy_seen),
	       atomic_load(&listener_null_values));
	larder__test_poison_freed(0);
	unlink(snapshot_path);
	rmdir(dir);
	long f = th_failures();
	printf("%s (%ld failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
