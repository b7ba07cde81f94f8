/*
 * tests/unit/test_contracts.c - the public API's documented contracts, across
 * the combinations of configuration that change them.
 *
 * The outside tester's view: only larder.h's promises, checked for each
 * combination of policy x shards (1, 4) x compression x default TTL x expiry
 * mode x removal listener x capacity (tiny, normal) x key/value limits
 * (small, default) x pool member. The eight binary dimensions run in full
 * (256 combinations); the policy rotates through them so each policy meets
 * each value of every other dimension (`test_contracts combinations --all
 * --seed N` runs all 2,048, with another sequence of operations per seed).
 *
 * For each combination, with an injected clock (so every deadline is exact):
 *   - a seeded sequence of every single-key operation, compared with a model
 *     (a table of keys: value bytes and deadline): return codes, values
 *     byte-exact through get / peek / get_with / get_batch / the cursor,
 *     ttl_remaining, never an expired value, the after-access extension;
 *     where the capacity may evict, a miss of a key the model holds is
 *     allowed only once LARDER_STAT_EVICTIONS has moved, and drops the key;
 *   - the bad inputs and their precedence (EINVAL, EKEYSIZE, EVALSIZE), keys
 *     and values at the limit and one over, an entry over 1/8 of capacity,
 *     huge TTLs (now + ttl overflowing), buffers too small;
 *   - save / clear / load round trip, set_capacity up and down (ESTATE in a
 *     pool), stats against the model (entries, writes, hits, misses);
 *   - the listener's causes: EXPLICIT counts the successful removes exactly,
 *     each cause's calls equal its counter, and once everything is cleared
 *     every entry ever written has left exactly once (listener calls ==
 *     successful writes == LARDER_STAT_WRITES).
 * Beside the combinations: damaged snapshots (every cut, every flipped
 * byte), lengths near SIZE_MAX, compressed values through the listener,
 * EBUFSIZE and nested callbacks, lifetimes and limits through a save and a
 * load into another configuration, a shrink below an entry's size, and the
 * default clock: no read at or past a deadline returns the value while the
 * kernel's coarse clock lags, nor through the TSC bound, fresh or seconds
 * old (the one test here that needs real time, 4 s).
 * Other tests own the concurrency of these paths; this one owns their
 * results.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "core/clockbound.h"
#include "harness.h"

#define NKEYS 16
#define T0 1000u
#define DTTL 40u /* the default TTL when on: slack 40 / 64 = 0 ms */
#define NONE UINT64_MAX
#define WAIT_MS 20000u
/* Operations per model run: fewer under a sanitizer, which runs the whole
 * test 10-20x slower. */
#define OPS (TH_SLOW > 1 ? 60 : 150)

struct combo {
	enum larder_policy policy;
	unsigned shards;
	int compress, dttl, access, listener, tiny, small, pooled;
};

struct listen {
	_Atomic uint64_t calls[5];
	_Atomic uint64_t bad; /* a call with bytes that cannot be right */
};

struct run {
	struct combo cb;
	larder *c;
	struct th_clock clk;
	struct listen ls;
	struct th_rng rng;
	size_t max_key, max_val;
	uint64_t capacity;
	/* the model */
	int present[NKEYS];
	unsigned char val[NKEYS][512];
	size_t len[NKEYS];
	uint64_t deadline[NKEYS];
	/* what the model expects of the counters */
	uint64_t writes, removes, hits, misses, evictions_seen;
	uint64_t replaced_live; /* writes over a live entry: cause REPLACED */
	int lenient; /* the capacity may evict */
};

static larder_pool *pool_tiny, *pool_normal;

static void on_removal(void *ctx, const void *key, size_t key_len, const void *value,
		       size_t value_len, enum larder_cause cause)
{
	struct listen *ls = ctx;
	if (!key || key_len == 0 || (value_len && !value) || (unsigned)cause > 4) {
		atomic_fetch_add_explicit(&ls->bad, 1, memory_order_relaxed);
		return;
	}
	atomic_fetch_add_explicit(&ls->calls[cause], 1, memory_order_relaxed);
}

/* "k07": 3 bytes, within the small limit (8). */
static size_t key_of(unsigned char *buf, int k)
{
	return (size_t)snprintf((char *)buf, 8, "k%02d", k);
}

/* A value of len bytes for (key, version): compressible runs when the cache
 * compresses (so both stored forms occur), varied bytes otherwise. */
static void value_of(struct run *r, unsigned char *out, size_t len, uint64_t seed)
{
	for (size_t i = 0; i < len; i++)
		out[i] = r->cb.compress && (seed & 1) ? (unsigned char)('a' + (i / 32 + seed) % 4)
						       : (unsigned char)th_mix64(seed * 1000003 + i);
}

static uint64_t now(struct run *r)
{
	return atomic_load_explicit(&r->clk.now_ms, memory_order_seq_cst);
}

static uint64_t deadline_for(struct run *r, uint64_t ttl)
{
	if (ttl == LARDER_TTL_DEFAULT)
		ttl = r->cb.dttl ? DTTL : NONE;
	if (ttl == NONE)
		return NONE;
	uint64_t t = now(r);
	return ttl >= UINT64_MAX - 1 - t ? UINT64_MAX - 1 : t + ttl;
}

static int live(struct run *r, int k)
{
	return r->present[k] && (r->deadline[k] == NONE || now(r) < r->deadline[k]);
}

/* A value read hit k: the after-access extension (larder_config_set_expiry). */
static void read_hit(struct run *r, int k)
{
	r->hits++;
	if (r->cb.access && r->cb.dttl && r->deadline[k] != NONE) {
		uint64_t want = now(r) + DTTL;
		if (r->deadline[k] < want)
			r->deadline[k] = want;
	}
}

static uint64_t stat_of(struct run *r, enum larder_stat s)
{
	return th_stat(r->c, s);
}

/*
 * The cache reported k absent where the model holds it: allowed only in a
 * cache that may evict and once evictions have moved; drops k. Returns 1
 * when the miss is explained.
 */
static int explain_miss(struct run *r, int k)
{
	if (!r->lenient)
		return 0;
	CHECK_RC(larder_flush(r->c, WAIT_MS * TH_SLOW), LARDER_OK);
	uint64_t ev = stat_of(r, LARDER_STAT_EVICTIONS);
	if (ev == r->evictions_seen)
		return 0;
	r->evictions_seen = ev;
	r->present[k] = 0;
	return 1;
}

struct got {
	int calls;
	unsigned char buf[512];
	size_t len;
};

static void got_fn(void *ctx, const void *value, size_t len)
{
	struct got *g = ctx;
	g->calls++;
	g->len = len;
	if (len <= sizeof(g->buf))
		memcpy(g->buf, value, len);
}

static void got_batch(void *ctx, size_t index, const void *value, size_t len)
{
	struct got *g = ctx;
	g[index].calls++;
	g[index].len = len;
	if (len <= sizeof(g->buf))
		memcpy(g[index].buf, value, len);
}

/* Reads k every way a value read exists, and checks against the model. */
static void check_read(struct run *r, int k, int how)
{
	unsigned char key[8], buf[512];
	size_t kl = key_of(key, k), vl = 12345;
	int want = live(r, k);
	int rc;
	struct got g = {0};

	switch (how) {
	case 0:
		rc = larder_get(r->c, key, kl, buf, sizeof(buf), &vl);
		break;
	case 1:
		rc = larder_peek(r->c, key, kl, buf, sizeof(buf), &vl);
		break;
	case 2:
		rc = larder_get_with(r->c, key, kl, got_fn, &g);
		if (rc == LARDER_OK) {
			CHECK_EQ(g.calls, 1);
			vl = g.len;
			memcpy(buf, g.buf, vl);
		} else {
			CHECK_EQ(g.calls, 0);
		}
		break;
	case 3: {
		const void *keys[1] = {key};
		size_t lens[1] = {kl};
		long n = larder_get_batch(r->c, 1, keys, lens, got_batch, &g);
		CHECK(n == 0 || n == 1);
		CHECK_EQ(g.calls, n);
		rc = n == 1 ? LARDER_OK : LARDER_MISS;
		vl = g.len;
		memcpy(buf, g.buf, vl);
		break;
	}
	default:
		rc = larder_contains(r->c, key, kl);
		break;
	}
	if (want && rc == LARDER_MISS && explain_miss(r, k)) {
		if (how != 1 && how != 4)
			r->misses++;
		return;
	}
	if (!CHECK_RC(rc, want ? LARDER_OK : LARDER_MISS)) {
		th_fail(__FILE__, __LINE__, "key %d how %d at t=%llu deadline %llu", k, how,
			(unsigned long long)now(r), (unsigned long long)r->deadline[k]);
		return;
	}
	if (rc == LARDER_OK && how != 4) {
		CHECK_EQ(vl, r->len[k]);
		if (vl == r->len[k])
			CHECK_MEM(buf, r->val[k], vl);
	}
	if (how == 1 || how == 4)
		return;
	if (rc == LARDER_OK)
		read_hit(r, k);
	else
		r->misses++;
}

static void check_ttl(struct run *r, int k)
{
	unsigned char key[8];
	size_t kl = key_of(key, k);
	uint64_t ttl = 0;
	int rc = larder_ttl_remaining(r->c, key, kl, &ttl);
	if (live(r, k) && rc == LARDER_MISS && explain_miss(r, k))
		return;
	if (!CHECK_RC(rc, live(r, k) ? LARDER_OK : LARDER_MISS) || rc != LARDER_OK)
		return;
	if (r->deadline[k] == NONE)
		CHECK_EQ(ttl, LARDER_TTL_NEVER);
	else
		CHECK_EQ(ttl, r->deadline[k] - now(r));
}

/* One write of k through mode 0..3 (put, put_if_absent, replace,
 * replace_if_equals with the right or a wrong expected value). */
static void do_write(struct run *r, int k, int mode)
{
	unsigned char key[8], v[512];
	size_t kl = key_of(key, k);
	size_t vl = th_rng_below(&r->rng, (r->max_val < 500 ? r->max_val : 500) + 1);
	uint64_t ttls[] = {LARDER_TTL_DEFAULT, LARDER_TTL_NEVER, 1 + th_rng_below(&r->rng, 20),
			   UINT64_MAX - 1};
	uint64_t ttl = ttls[th_rng_below(&r->rng, 4)];
	int was = live(r, k), want, rc;

	value_of(r, v, vl, th_rng_next(&r->rng));
	switch (mode) {
	case 0:
		rc = larder_put(r->c, key, kl, v, vl, ttl);
		want = LARDER_OK;
		break;
	case 1:
		rc = larder_put_if_absent(r->c, key, kl, v, vl, ttl);
		want = was ? LARDER_EXISTS : LARDER_OK;
		break;
	case 2:
		rc = larder_replace(r->c, key, kl, v, vl, ttl);
		want = was ? LARDER_OK : LARDER_MISS;
		break;
	default: {
		int right = th_rng_below(&r->rng, 2);
		unsigned char wrong[512];
		size_t wl = was ? r->len[k] : 5;
		if (right && was) {
			memcpy(wrong, r->val[k], wl);
		} else {
			value_of(r, wrong, wl, th_rng_next(&r->rng));
			if (was && wl && !memcmp(wrong, r->val[k], wl))
				wrong[0] ^= 1;
			if (was && wl == 0)
				wrong[wl++] = 'x';
		}
		rc = larder_replace_if_equals(r->c, key, kl, wrong, wl, v, vl, ttl);
		want = !was ? LARDER_MISS : right ? LARDER_OK : LARDER_MISMATCH;
		break;
	}
	}
	if (was && want != LARDER_EXISTS && rc == LARDER_MISS && explain_miss(r, k))
		want = LARDER_MISS, was = 0;
	if (was && mode == 1 && rc == LARDER_OK && explain_miss(r, k))
		want = LARDER_OK, was = 0;
	if (!CHECK_RC(rc, want)) {
		th_fail(__FILE__, __LINE__, "key %d mode %d ttl %llu at t=%llu", k, mode,
			(unsigned long long)ttl, (unsigned long long)now(r));
		return;
	}
	if (rc != LARDER_OK)
		return;
	r->writes++;
	r->replaced_live += was;
	r->present[k] = 1;
	memcpy(r->val[k], v, vl);
	r->len[k] = vl;
	r->deadline[k] = deadline_for(r, ttl);
}

static void do_remove(struct run *r, int k, int equals)
{
	unsigned char key[8], e[512];
	size_t kl = key_of(key, k);
	int was = live(r, k), rc, want;

	if (!equals) {
		rc = larder_remove(r->c, key, kl);
		want = was ? LARDER_OK : LARDER_MISS;
	} else {
		int right = th_rng_below(&r->rng, 2);
		size_t el = was ? r->len[k] : 3;
		if (right && was) {
			memcpy(e, r->val[k], el);
		} else {
			memset(e, 0xEE, el + 1);
			if (was)
				el++;
		}
		rc = larder_remove_if_equals(r->c, key, kl, e, el);
		want = !was ? LARDER_MISS : right ? LARDER_OK : LARDER_MISMATCH;
	}
	if (was && rc == LARDER_MISS && explain_miss(r, k))
		return;
	CHECK_RC(rc, want);
	if (rc == LARDER_OK) {
		r->removes++;
		r->present[k] = 0;
	}
}

static void do_touch(struct run *r, int k)
{
	unsigned char key[8];
	size_t kl = key_of(key, k);
	uint64_t ttls[] = {LARDER_TTL_DEFAULT, LARDER_TTL_NEVER, 1 + th_rng_below(&r->rng, 30),
			   UINT64_MAX - 1 - th_rng_below(&r->rng, 3)};
	uint64_t ttl = ttls[th_rng_below(&r->rng, 4)];
	int was = live(r, k);
	int rc = larder_touch(r->c, key, kl, ttl);
	if (was && rc == LARDER_MISS && explain_miss(r, k))
		return;
	if (CHECK_RC(rc, was ? LARDER_OK : LARDER_MISS) && rc == LARDER_OK)
		r->deadline[k] = deadline_for(r, ttl);
}

struct walk {
	struct run *r;
	int seen[NKEYS];
	int bad;
};

static void walk_fn(void *ctx, const void *key, size_t key_len, const void *value,
		    size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk *w = ctx;
	struct run *r = w->r;
	int k;
	if (key_len != 3 || sscanf((const char *)key, "k%2d", &k) != 1 || k < 0 ||
	    k >= NKEYS) {
		w->bad++;
		return;
	}
	w->seen[k]++;
	if (!live(r, k) || value_len != r->len[k] ||
	    (value_len && memcmp(value, r->val[k], value_len)) ||
	    (!r->cb.compress && entry_bytes < value_len) ||
	    ttl_ms != (r->deadline[k] == NONE ? LARDER_TTL_NEVER : r->deadline[k] - now(r)))
		w->bad++;
}

/* The cursor hands out exactly the model's live keys, with their bytes. */
static void check_iter(struct run *r)
{
	larder_iter *it = NULL;
	struct walk w = {.r = r};
	int rc;
	REQUIRE_RC(larder_iter_open(r->c, &it), LARDER_OK);
	CHECK_RC(larder_iter_next(it, NULL, &w), LARDER_EINVAL);
	while ((rc = larder_iter_next(it, walk_fn, &w)) == LARDER_OK)
		;
	CHECK_RC(rc, LARDER_MISS);
	CHECK_RC(larder_iter_next(it, walk_fn, &w), LARDER_MISS);
	larder_iter_close(it);
	CHECK_EQ(w.bad, 0);
	for (int k = 0; k < NKEYS; k++) {
		if (w.seen[k] == 0 && live(r, k) && explain_miss(r, k))
			continue;
		CHECK_EQ(w.seen[k], live(r, k));
	}
}

/* After a flush: the entry count is the model's (expired entries may still
 * be counted until the maintainer's wheel reaches them). */
static void check_counts(struct run *r)
{
	REQUIRE_RC(larder_flush(r->c, WAIT_MS * TH_SLOW), LARDER_OK);
	uint64_t live_n = 0, held = 0;
	for (int k = 0; k < NKEYS; k++) {
		live_n += live(r, k);
		held += r->present[k];
	}
	uint64_t entries = stat_of(r, LARDER_STAT_ENTRIES);
	if (!r->lenient)
		CHECK_GE(entries, live_n);
	CHECK_LE(entries, held);
	CHECK_EQ(stat_of(r, LARDER_STAT_WRITES), r->writes);
	CHECK_EQ(stat_of(r, LARDER_STAT_HITS), r->hits);
	CHECK_EQ(stat_of(r, LARDER_STAT_MISSES), r->misses);
	CHECK_LE(stat_of(r, LARDER_STAT_USED_BYTES),
		 stat_of(r, LARDER_STAT_CAPACITY_BYTES) +
			 stat_of(r, LARDER_STAT_OVERSHOOT_BOUND));
}

/* A batch of four keys (repeats allowed): each live one handed over once,
 * in index order, with its bytes; the count returned is theirs. */
static void check_batch(struct run *r)
{
	unsigned char kb[4][8];
	const void *keys[4];
	size_t lens[4];
	int ks[4];
	static struct got g[4];
	memset(g, 0, sizeof(g));
	for (int i = 0; i < 4; i++) {
		ks[i] = (int)th_rng_below(&r->rng, NKEYS);
		lens[i] = key_of(kb[i], ks[i]);
		keys[i] = kb[i];
	}
	long n = larder_get_batch(r->c, 4, keys, lens, got_batch, g), want = 0;
	for (int i = 0; i < 4; i++) {
		int k = ks[i];
		if (live(r, k) && g[i].calls == 0 && explain_miss(r, k)) {
			r->misses++;
			continue;
		}
		CHECK_EQ(g[i].calls, live(r, k));
		if (!live(r, k)) {
			r->misses++;
			continue;
		}
		want++;
		CHECK_EQ(g[i].len, r->len[k]);
		if (g[i].len == r->len[k])
			CHECK_MEM(g[i].buf, r->val[k], r->len[k]);
		read_hit(r, k);
	}
	CHECK_EQ(n, want);
}

static void run_ops(struct run *r, int n)
{
	for (int i = 0; i < n; i++) {
		int k = (int)th_rng_below(&r->rng, NKEYS);
		unsigned op = (unsigned)th_rng_below(&r->rng, 17);
		if (op < 4)
			do_write(r, k, (int)op);
		else if (op < 6)
			do_remove(r, k, op == 5);
		else if (op < 7)
			do_touch(r, k);
		else if (op < 12)
			check_read(r, k, (int)op - 7);
		else if (op < 14)
			check_ttl(r, k);
		else if (op == 16)
			check_batch(r);
		else
			th_clock_advance(&r->clk, th_rng_below(&r->rng, 8));
	}
}

/* ---- Bad input, limits ---------------------------------------------------- */

static void check_bad_input(struct run *r)
{
	larder *c = r->c;
	unsigned char buf[16];
	size_t vl;
	uint64_t ttl;
	struct got g = {0};
	size_t big = r->max_key + 1;
	unsigned char *key = malloc(big + 1);
	REQUIRE(key);
	memset(key, 'K', big + 1);

	/* NULL cache and key, empty key, NULL with a length: EINVAL first. */
	CHECK_RC(larder_put(NULL, "a", 1, "v", 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_put(c, NULL, 1, "v", 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_put(c, "a", 0, "v", 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_put(c, "a", 1, NULL, 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_put(c, NULL, big, NULL, r->max_val + 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_put_if_absent(c, NULL, 1, "v", 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_replace(c, "a", 0, "v", 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_replace_if_equals(c, "a", 1, NULL, 1, "v", 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_replace_if_equals(c, "a", 1, "v", 1, NULL, 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_remove(c, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_remove(NULL, "a", 1), LARDER_EINVAL);
	CHECK_RC(larder_remove_if_equals(c, "a", 1, NULL, 2), LARDER_EINVAL);
	CHECK_RC(larder_touch(c, "a", 0, 5), LARDER_EINVAL);
	CHECK_RC(larder_get(c, "a", 1, buf, sizeof(buf), NULL), LARDER_EINVAL);
	CHECK_RC(larder_get(c, "a", 1, NULL, 4, &vl), LARDER_EINVAL);
	CHECK_RC(larder_get(NULL, "a", 1, buf, sizeof(buf), &vl), LARDER_EINVAL);
	CHECK_RC(larder_peek(c, NULL, 1, buf, sizeof(buf), &vl), LARDER_EINVAL);
	CHECK_RC(larder_get_with(c, "a", 1, NULL, NULL), LARDER_EINVAL);
	CHECK_RC(larder_get_with(c, "", 0, got_fn, &g), LARDER_EINVAL);
	CHECK_RC(larder_contains(c, "a", 0), LARDER_EINVAL);
	CHECK_RC(larder_ttl_remaining(c, "a", 1, NULL), LARDER_EINVAL);
	CHECK_RC(larder_get_batch(c, 1, NULL, &vl, got_batch, &g), LARDER_EINVAL);
	CHECK_RC(larder_get_batch(c, 0, NULL, NULL, NULL, NULL), LARDER_EINVAL);
	{
		const void *keys[1] = {"a"};
		size_t lens[1] = {1};
		CHECK_RC(larder_get_batch(c, 1, keys, NULL, got_batch, &g), LARDER_EINVAL);
		CHECK_RC(larder_get_batch(c, 1, keys, lens, NULL, &g), LARDER_EINVAL);
		CHECK_EQ(larder_get_batch(c, 0, keys, lens, got_batch, &g), 0);
	}
	CHECK_RC(larder_flush(NULL, 0), LARDER_EINVAL);
	{
		/* 0 asks without waiting: done, or not yet. */
		int rc = larder_flush(c, 0);
		CHECK(rc == LARDER_OK || rc == LARDER_EBUSY);
	}
	CHECK_RC(larder_clear(NULL), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(NULL, MiB), LARDER_EINVAL);
	CHECK_RC(larder_stats(c, NULL, 3), LARDER_EINVAL);
	CHECK_RC(larder_stats(c, NULL, 0), LARDER_OK);
	CHECK_RC(larder_iter_open(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_save(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_save(c, ""), LARDER_EINVAL);
	CHECK_RC(larder_load(c, NULL), LARDER_EINVAL);
	CHECK_EQ(g.calls, 0);

	/* The key's length: at the limit, one over; EKEYSIZE before EVALSIZE. */
	CHECK_RC(larder_put(c, key, big, "v", 1, 0), LARDER_EKEYSIZE);
	CHECK_RC(larder_get(c, key, big, buf, sizeof(buf), &vl), LARDER_EKEYSIZE);
	CHECK_RC(larder_peek(c, key, big, buf, sizeof(buf), &vl), LARDER_EKEYSIZE);
	CHECK_RC(larder_contains(c, key, big), LARDER_EKEYSIZE);
	CHECK_RC(larder_remove(c, key, big), LARDER_EKEYSIZE);
	CHECK_RC(larder_touch(c, key, big, 0), LARDER_EKEYSIZE);
	CHECK_RC(larder_ttl_remaining(c, key, big, &ttl), LARDER_EKEYSIZE);
	CHECK_RC(larder_get_with(c, key, big, got_fn, &g), LARDER_EKEYSIZE);
	unsigned char *v = malloc(r->max_val + 2);
	if (v) {
		value_of(r, v, r->max_val + 1, 99);
		CHECK_RC(larder_put(c, key, big, v, r->max_val + 1, 0), LARDER_EKEYSIZE);
		CHECK_RC(larder_put(c, "a", 1, v, r->max_val + 1, 0), LARDER_EVALSIZE);
		CHECK_RC(larder_replace_if_equals(c, "a", 1, "x", 1, v, r->max_val + 1, 0),
			 LARDER_EVALSIZE);
		/* An expected value over the limit is no error: MISS, then MISMATCH. */
		CHECK_RC(larder_remove_if_equals(c, key, big - 1, v, r->max_val + 1), LARDER_MISS);
		free(v);
	}
	/* A key at the limit works, and an empty value with a NULL pointer. */
	CHECK_RC(larder_put(c, key, big - 1, NULL, 0, LARDER_TTL_NEVER), LARDER_OK);
	r->writes++;
	CHECK_RC(larder_remove_if_equals(c, key, big - 1, "xx", 2), LARDER_MISMATCH);
	vl = 77;
	CHECK_RC(larder_get(c, key, big - 1, NULL, 0, &vl), LARDER_OK);
	CHECK_EQ(vl, 0);
	r->hits++;
	CHECK_RC(larder_remove_if_equals(c, key, big - 1, NULL, 0), LARDER_OK);
	r->removes++;
	free(key);
}

/* A value at max_value_bytes: stored when its entry fits 1/8 of capacity,
 * else EVALSIZE; a buffer one byte short gives EBUFSIZE and the length. */
static void check_value_limits(struct run *r)
{
	larder *c = r->c;
	size_t n = r->max_val;
	unsigned char *v = malloc(n + 1), *out = malloc(n + 1);
	if (!CHECK(v && out)) {
		free(v);
		free(out);
		return;
	}
	value_of(r, v, n, 12345678); /* even seed: incompressible */
	int fits = n + 64 <= r->capacity / 8;
	int rc = larder_put(c, "lim", 3, v, n, LARDER_TTL_NEVER);
	if (!fits && n + 200 > r->capacity / 8) {
		CHECK_RC(rc, LARDER_EVALSIZE);
	} else if (fits) {
		CHECK_RC(rc, LARDER_OK);
	}
	if (rc == LARDER_OK) {
		r->writes++;
		size_t vl = 0;
		if (n > 0) {
			CHECK_RC(larder_get(c, "lim", 3, out, n - 1, &vl), LARDER_EBUFSIZE);
			CHECK_EQ(vl, n);
			CHECK_RC(larder_peek(c, "lim", 3, NULL, 0, &vl), LARDER_EBUFSIZE);
			CHECK_EQ(vl, n);
		}
		rc = larder_get(c, "lim", 3, out, n + 1, &vl);
		if (rc == LARDER_MISS && explain_miss(r, 0)) {
			r->misses++;
		} else if (CHECK_RC(rc, LARDER_OK)) {
			r->hits++;
			CHECK_EQ(vl, n);
			CHECK_MEM(out, v, n);
		}
		rc = larder_remove(c, "lim", 3);
		if (rc == LARDER_OK)
			r->removes++;
		else if (!(rc == LARDER_MISS && r->lenient))
			CHECK_RC(rc, LARDER_OK);
	}
	/* A compressible value over 1/8 of capacity fits when it is stored
	 * compressed (the limit applies to the stored size). */
	if (r->cb.compress && !r->cb.small) {
		size_t big = (size_t)(r->capacity / 8) + 4096;
		unsigned char *z = big <= r->max_val ? calloc(1, big) : NULL;
		if (z) {
			rc = larder_put(c, "zz", 2, z, big, LARDER_TTL_NEVER);
			if (CHECK_RC(rc, LARDER_OK)) {
				r->writes++;
				struct got g = {0};
				CHECK_RC(larder_get_with(c, "zz", 2, got_fn, &g), LARDER_OK);
				CHECK_EQ(g.len, big);
				r->hits++;
				CHECK_RC(larder_remove(c, "zz", 2), LARDER_OK);
				r->removes++;
			}
			free(z);
		}
	}
	free(v);
	free(out);
}

/* TTLs that carry now + ttl past the clock's range saturate (finite). */
static void check_huge_ttl(struct run *r)
{
	larder *c = r->c;
	uint64_t t = now(r), ttl = 0;
	uint64_t asks[] = {UINT64_MAX - 1, UINT64_MAX - t, UINT64_MAX - t + 1, UINT64_MAX / 2 + 1};
	for (size_t i = 0; i < TH_COUNT(asks); i++) {
		int rc = larder_put(c, "huge", 4, "h", 1, asks[i]);
		if (!CHECK_RC(rc, LARDER_OK))
			continue;
		r->writes++;
		CHECK_RC(larder_ttl_remaining(c, "huge", 4, &ttl), LARDER_OK);
		uint64_t want = asks[i] >= UINT64_MAX - 1 - t ? UINT64_MAX - 1 - t : asks[i];
		CHECK_EQ(ttl, want);
		CHECK_RC(larder_touch(c, "huge", 4, asks[i]), LARDER_OK);
		CHECK_RC(larder_ttl_remaining(c, "huge", 4, &ttl), LARDER_OK);
		CHECK_EQ(ttl, want);
	}
	/* TTL 1: gone once the clock moves 1 ms, never handed out after. */
	CHECK_RC(larder_put(c, "one", 3, "1", 1, 1), LARDER_OK);
	r->writes++;
	CHECK_RC(larder_ttl_remaining(c, "one", 3, &ttl), LARDER_OK);
	CHECK_EQ(ttl, 1);
	th_clock_advance(&r->clk, 1);
	CHECK_RC(larder_contains(c, "one", 3), LARDER_MISS);
	CHECK_RC(larder_ttl_remaining(c, "one", 3, &ttl), LARDER_MISS);
	CHECK_RC(larder_touch(c, "one", 3, LARDER_TTL_NEVER), LARDER_MISS);
	CHECK_RC(larder_replace(c, "one", 3, "2", 1, 0), LARDER_MISS);
	CHECK_RC(larder_remove(c, "one", 3), LARDER_MISS);
	CHECK_RC(larder_put_if_absent(c, "one", 3, "3", 1, LARDER_TTL_NEVER), LARDER_OK);
	r->writes++;
	CHECK_RC(larder_remove(c, "huge", 4), LARDER_OK);
	CHECK_RC(larder_remove(c, "one", 3), LARDER_OK);
	r->removes += 2;
}

/* ---- Save / load, capacity --------------------------------------------------- */

static void check_round_trip(struct run *r, const char *path)
{
	REQUIRE_RC(larder_save(r->c, path), LARDER_OK);
	REQUIRE_RC(larder_clear(r->c), LARDER_OK);
	for (int k = 0; k < NKEYS; k++) {
		unsigned char key[8];
		CHECK_RC(larder_contains(r->c, key, key_of(key, k)), LARDER_MISS);
	}
	REQUIRE_RC(larder_load(r->c, path), LARDER_OK);
	unlink(path);
	for (int k = 0; k < NKEYS; k++)
		if (!live(r, k))
			r->present[k] = 0;
	/* The loaded deadlines are the saved ones less the wall-clock time
	 * since: at most what the model holds. An entry whose last
	 * milliseconds ran out on the wall clock was dropped, not written. */
	for (int k = 0; k < NKEYS; k++) {
		unsigned char key[8];
		size_t kl = key_of(key, k);
		uint64_t ttl = 0;
		int rc = larder_ttl_remaining(r->c, key, kl, &ttl);
		if (!r->present[k]) {
			CHECK_RC(rc, LARDER_MISS);
			continue;
		}
		if (rc == LARDER_MISS && explain_miss(r, k)) {
			r->writes++;
			continue;
		}
		if (rc == LARDER_MISS && r->deadline[k] != NONE) {
			r->present[k] = 0;
			continue;
		}
		if (!CHECK_RC(rc, LARDER_OK))
			continue;
		r->writes++;
		if (r->deadline[k] == NONE) {
			CHECK_EQ(ttl, LARDER_TTL_NEVER);
		} else {
			CHECK_LE(ttl, r->deadline[k] - now(r));
			r->deadline[k] = now(r) + ttl;
		}
		check_read(r, k, 1);
	}
}

static void check_capacity(struct run *r)
{
	larder *c = r->c;
	CHECK_RC(larder_set_capacity(c, 0), r->cb.pooled ? LARDER_ESTATE : LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(c, 1), r->cb.pooled ? LARDER_ESTATE : LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(c, 64 * KiB - 1), r->cb.pooled ? LARDER_ESTATE : LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(c, (uint64_t)1 << 62),
		 r->cb.pooled ? LARDER_ESTATE : LARDER_EINVAL);
	if (r->cb.pooled) {
		CHECK_RC(larder_set_capacity(c, r->capacity), LARDER_ESTATE);
		return;
	}
	CHECK_RC(larder_set_capacity(c, r->capacity * 2), LARDER_OK);
	CHECK_EQ(stat_of(r, LARDER_STAT_CAPACITY_BYTES), r->capacity * 2);
	CHECK_RC(larder_set_capacity(c, r->capacity), LARDER_OK);
	CHECK_EQ(stat_of(r, LARDER_STAT_CAPACITY_BYTES), r->capacity);
}

struct used_ctx {
	larder *c;
};

static int under_bound(void *ctx)
{
	larder *c = ((struct used_ctx *)ctx)->c;
	uint64_t v[LARDER_STAT_COUNT];
	if (larder_flush(c, 1000) != LARDER_OK || larder_stats(c, v, LARDER_STAT_COUNT))
		return 0;
	return v[LARDER_STAT_USED_BYTES] <= v[LARDER_STAT_CAPACITY_BYTES];
}

/* Pressure: twice a tiny capacity written (the writes must all succeed, the
 * policy making room), every read a miss or the right bytes; then, outside a
 * pool, a shrink to 64 KiB is honoured (256 KiB written into a normal one). */
static void check_pressure(struct run *r)
{
	larder *c = r->c;
	uint64_t total = r->cb.tiny ? r->capacity * 2 : 256 * KiB, done = 0;
	unsigned char v[512], out[512];
	char key[24];
	size_t vl = r->max_val < 400 ? r->max_val : 400;
	uint64_t n = 0;
	while (done < total && n < 6000) {
		int kl = snprintf(key, sizeof(key), "p%llu", (unsigned long long)n);
		if ((size_t)kl > r->max_key)
			kl = (int)r->max_key;
		value_of(r, v, vl, n);
		if (!CHECK_RC(larder_put(c, key, (size_t)kl, v, vl, LARDER_TTL_NEVER), LARDER_OK))
			return;
		r->writes++;
		size_t got = 0;
		int rc = larder_get(c, key, (size_t)kl, out, sizeof(out), &got);
		if (rc == LARDER_OK) {
			r->hits++;
			CHECK_EQ(got, vl);
			CHECK_MEM(out, v, vl);
		} else {
			CHECK_RC(rc, LARDER_MISS);
			r->misses++;
		}
		done += vl + (size_t)kl;
		n++;
	}
	if (r->cb.pooled)
		return;
	CHECK_RC(larder_set_capacity(c, 64 * KiB), LARDER_OK);
	struct used_ctx u = {c};
	CHECK(th_wait_until(under_bound, &u, WAIT_MS));
}

/* Every entry ever written has left once the cache is cleared: the
 * listener's calls add up to the writes, cause by cause to the counters. */
struct settle {
	struct run *r;
};

static int settled(void *ctx)
{
	struct run *r = ((struct settle *)ctx)->r;
	uint64_t v[LARDER_STAT_COUNT];
	if (larder_flush(r->c, 1000) != LARDER_OK || larder_stats(r->c, v, LARDER_STAT_COUNT))
		return 0;
	uint64_t gone = v[LARDER_STAT_EVICTIONS] + v[LARDER_STAT_EXPIRATIONS] +
			v[LARDER_STAT_REMOVALS] + v[LARDER_STAT_REPLACEMENTS] +
			v[LARDER_STAT_CLEARED];
	if (v[LARDER_STAT_ENTRIES] != 0 || gone != r->writes)
		return 0;
	if (!r->cb.listener)
		return 1;
	uint64_t calls = 0;
	for (int i = 0; i < 5; i++)
		calls += atomic_load_explicit(&r->ls.calls[i], memory_order_relaxed);
	return calls == r->writes;
}

static void check_settled(struct run *r)
{
	REQUIRE_RC(larder_clear(r->c), LARDER_OK);
	struct settle s = {r};
	if (!CHECK(th_wait_until(settled, &s, WAIT_MS))) {
		uint64_t v[LARDER_STAT_COUNT];
		if (larder_stats(r->c, v, LARDER_STAT_COUNT) == LARDER_OK)
			th_fail(__FILE__, __LINE__,
				"writes %llu: entries %llu ev %llu exp %llu rem %llu repl %llu clr "
				"%llu stat writes %llu",
				(unsigned long long)r->writes,
				(unsigned long long)v[LARDER_STAT_ENTRIES],
				(unsigned long long)v[LARDER_STAT_EVICTIONS],
				(unsigned long long)v[LARDER_STAT_EXPIRATIONS],
				(unsigned long long)v[LARDER_STAT_REMOVALS],
				(unsigned long long)v[LARDER_STAT_REPLACEMENTS],
				(unsigned long long)v[LARDER_STAT_CLEARED],
				(unsigned long long)v[LARDER_STAT_WRITES]);
		return;
	}
	CHECK_EQ(stat_of(r, LARDER_STAT_WRITES), r->writes);
	CHECK_EQ(stat_of(r, LARDER_STAT_REMOVALS), r->removes);
	/* The busy causes add up to the busy writes; the memory audit adds up. */
	CHECK_EQ(stat_of(r, LARDER_STAT_WRITE_BUSY),
		 stat_of(r, LARDER_STAT_BUSY_MEMORY) + stat_of(r, LARDER_STAT_BUSY_EVENTS) +
			 stat_of(r, LARDER_STAT_BUSY_INDEX));
	CHECK(th_check_accounting(r->c, WAIT_MS, NULL, NULL));
	CHECK(th_check_memory_audit(r->c));
	/* A write over a live entry replaces it (one that expired meanwhile may
	 * have been reclaimed as EXPIRED or replaced: not counted here). */
	if (!r->lenient)
		CHECK_GE(stat_of(r, LARDER_STAT_REPLACEMENTS), r->replaced_live);
	if (!r->cb.listener)
		return;
	CHECK_EQ(atomic_load(&r->ls.bad), 0);
	static const enum larder_stat per_cause[5] = {
		LARDER_STAT_REMOVALS, LARDER_STAT_REPLACEMENTS, LARDER_STAT_EXPIRATIONS,
		LARDER_STAT_EVICTIONS, LARDER_STAT_CLEARED};
	for (int i = 0; i < 5; i++)
		CHECK_EQ(atomic_load(&r->ls.calls[i]), stat_of(r, per_cause[i]));
}

/* ---- One combination ------------------------------------------------------ */

static larder_config *combo_config(struct run *r)
{
	struct combo *cb = &r->cb;
	larder_config *cfg = NULL;
	if (!CHECK_RC(larder_config_create(&cfg), LARDER_OK))
		return NULL;
	int ok = CHECK_RC(larder_config_set_policy(cfg, cb->policy), LARDER_OK) &&
		 CHECK_RC(larder_config_set_hash_seed(cfg, TH_HASH_SEED), LARDER_OK) &&
		 CHECK_RC(larder_config_set_write_wait_ms(cfg, TH_WRITE_WAIT_MS), LARDER_OK) &&
		 CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, &r->clk), LARDER_OK) &&
		 CHECK_RC(larder_config_set_shards(cfg, cb->shards), LARDER_OK) &&
		 CHECK_RC(larder_config_set_default_ttl_ms(cfg, cb->dttl ? DTTL : 0), LARDER_OK) &&
		 CHECK_RC(larder_config_set_expiry(cfg, cb->access ? LARDER_EXPIRE_AFTER_ACCESS
								   : LARDER_EXPIRE_AFTER_WRITE),
			  LARDER_OK);
	if (ok && cb->compress)
		ok = CHECK_RC(larder_config_set_compression(cfg, 32, 10), LARDER_OK);
	if (ok && cb->listener)
		ok = CHECK_RC(larder_config_set_removal_listener(cfg, on_removal, &r->ls), LARDER_OK);
	if (ok && cb->small)
		ok = CHECK_RC(larder_config_set_max_key_bytes(cfg, 8), LARDER_OK) &&
		     CHECK_RC(larder_config_set_max_value_bytes(cfg, 64), LARDER_OK);
	if (ok && cb->pooled)
		ok = CHECK_RC(larder_config_set_pool(cfg, cb->tiny ? pool_tiny : pool_normal),
			      LARDER_OK);
	else if (ok)
		ok = CHECK_RC(larder_config_set_capacity(cfg, r->capacity), LARDER_OK);
	if (!ok) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return cfg;
}

/* --seed N: another sequence of operations per combination (0, the default,
 * is the sequence ctest runs). */
static uint64_t seed;

static void run_combo(const struct combo *cb, int index)
{
	static struct run r;
	char path[64];
	memset(&r, 0, sizeof(r));
	r.cb = *cb;
	th_clock_init(&r.clk, T0);
	r.rng.s = th_mix64(seed) + (uint64_t)index * 7919 + 1;
	r.max_key = cb->small ? 8 : 250;
	r.max_val = cb->small ? 64 : 1 * MiB;
	r.capacity = cb->pooled ? (cb->tiny ? MiB : 32 * MiB) : cb->tiny ? 64 * KiB : 32 * MiB;
	r.lenient = cb->tiny;

	larder_config *cfg = combo_config(&r);
	if (!cfg)
		return;
	int rc = larder_open(&r.c, cfg); /* pooled of several shards too (PROBE-P9) */
	larder_config_destroy(cfg);
	if (!CHECK_RC(rc, LARDER_OK)) {
		th_fail(__FILE__, __LINE__, "combination %d did not open", index);
		return;
	}
	larder__test_stuck_ms(r.c, TH_STUCK_MS);
	long before = th_failures();
	if (cb->pooled)
		CHECK_EQ(stat_of(&r, LARDER_STAT_CAPACITY_BYTES), r.capacity);

	check_bad_input(&r);
	run_ops(&r, OPS);
	check_counts(&r);
	check_iter(&r);
	check_value_limits(&r);
	check_huge_ttl(&r);
	run_ops(&r, OPS);
	snprintf(path, sizeof(path), "/tmp/larder-contracts-%d.snap", (int)getpid());
	check_round_trip(&r, path);
	check_counts(&r);
	check_capacity(&r);
	/* Past every deadline a short TTL set: nothing expired is handed out. */
	th_clock_advance(&r.clk, 100);
	for (int k = 0; k < NKEYS; k++) {
		if (r.deadline[k] != NONE && r.deadline[k] < UINT64_MAX / 2)
			CHECK(!live(&r, k));
		check_read(&r, k, k % 5);
	}
	check_pressure(&r);
	check_settled(&r);
	larder_close(r.c);
	if (th_failures() != before)
		th_fail(__FILE__, __LINE__,
			"combination %d: policy %d shards %u compress %d dttl %d access %d "
			"listener %d tiny %d small %d pooled %d",
			index, (int)cb->policy, cb->shards, cb->compress, cb->dttl, cb->access,
			cb->listener, cb->tiny, cb->small, cb->pooled);
}

static int all_policies;

/*
 * Under ThreadSanitizer (six times the CPU of the other builds: 53 s of its
 * stage), a quarter of the binary combinations, those with an even count
 * of settings among dimensions 0-4 and among 0, 1, 5, 6, 7 (bit i of
 * `bits` below): any four dimensions still meet in all 16 ways, the policy
 * meets both values of each, and every operation and check runs on each of
 * the 64. The other builds run all 256, and `--all` runs every one here too.
 */
static int combination_runs(unsigned bits)
{
	return !TH_TSAN || all_policies ||
	       (!__builtin_parity(bits & 0x1fu) && !__builtin_parity(bits & 0xe3u));
}

static void test_combinations(void)
{
	larder_pool_config *pc = NULL;
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, 0), LARDER_OK);
	CHECK_RC(larder_pool_config_set_budget(pc, MiB), LARDER_OK);
	CHECK_RC(larder_pool_create(&pool_tiny, pc), LARDER_OK);
	CHECK_RC(larder_pool_config_set_budget(pc, 32 * MiB), LARDER_OK);
	CHECK_RC(larder_pool_create(&pool_normal, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	REQUIRE(pool_tiny && pool_normal);

	int n = 0, ran = 0;
	for (unsigned bits = 0; bits < 256; bits++) {
		for (unsigned p = 0; p < 8; p++) {
			/* One policy per combination of the binary dimensions, rotating
			 * (every policy meets both values of every dimension), or all. */
			if (!all_policies && p != ((bits ^ (bits >> 3) ^ (bits >> 6)) & 7))
				continue;
			struct combo cb = {
				.policy = (enum larder_policy)p,
				.shards = bits & 1 ? 4 : 1,
				.compress = !!(bits & 2),
				.dttl = !!(bits & 4),
				.access = !!(bits & 8),
				.listener = !!(bits & 16),
				.tiny = !!(bits & 32),
				.small = !!(bits & 64),
				.pooled = !!(bits & 128),
			};
			int index = n++; /* the same sequence in every build */
			if (!combination_runs(bits))
				continue;
			run_combo(&cb, index);
			ran++;
			if (th_failures() > 40)
				goto out;
		}
	}
out:
	printf("  %d of %d combinations\n", ran, n);
	CHECK_RC(larder_pool_close(pool_tiny), LARDER_OK);
	CHECK_RC(larder_pool_close(pool_normal), LARDER_OK);
}

/* The lifecycle calls that accept NULL, and a closed pool. */
static void test_closed_handles(void)
{
	larder_close(NULL);
	larder_iter_close(NULL);
	larder_config_destroy(NULL);
	larder_pool_config_destroy(NULL);
	CHECK_RC(larder_pool_close(NULL), LARDER_EINVAL);

	larder_pool_config *pc = NULL;
	larder_pool *pool = NULL;
	larder_config *cfg = NULL;
	larder *c = NULL;
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	CHECK_RC(larder_pool_config_set_budget(pc, MiB - 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, 0), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, MiB), LARDER_OK);
	CHECK_RC(larder_pool_create(&pool, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	REQUIRE(pool);
	REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
	CHECK_RC(larder_config_set_pool(cfg, pool), LARDER_OK);
	CHECK_RC(larder_open(&c, cfg), LARDER_OK);
	CHECK_RC(larder_pool_close(pool), LARDER_ESTATE);
	larder_close(c);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
	c = (larder *)&cfg; /* *out is NULL on failure */
	CHECK_RC(larder_open(&c, cfg), LARDER_ESTATE);
	CHECK(c == NULL);
	larder_config_destroy(cfg);

	/* A pooled config with its own capacity is refused. */
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	CHECK_RC(larder_pool_create(&pool, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
	CHECK_RC(larder_config_set_pool(cfg, pool), LARDER_OK);
	CHECK_RC(larder_config_set_capacity(cfg, 4 * MiB), LARDER_OK);
	CHECK_RC(larder_open(&c, cfg), LARDER_EINVAL);
	larder_config_destroy(cfg);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/* Snapshots that are not whole: clear errors, the cache left as it was. */
static void test_load_bad_files(void)
{
	char path[64];
	larder *c = th_open(th_config(4 * MiB));
	REQUIRE(c);
	snprintf(path, sizeof(path), "/tmp/larder-contracts-bad-%d.snap", (int)getpid());
	CHECK_RC(larder_put(c, "keep", 4, "me", 2, LARDER_TTL_NEVER), LARDER_OK);
	unlink(path);
	CHECK_RC(larder_load(c, path), LARDER_ESYS);
	FILE *f = fopen(path, "wb");
	REQUIRE(f);
	fputs("this is not a larder snapshot, not at all; long enough to have a header", f);
	fclose(f);
	CHECK_RC(larder_load(c, path), LARDER_EFORMAT);
	f = fopen(path, "wb");
	REQUIRE(f);
	fclose(f);
	int rc = larder_load(c, path);
	CHECK(rc == LARDER_EFORMAT || rc == LARDER_ECORRUPT);

	/* A real snapshot cut short at every length: refused, never loaded in part. */
	larder *src = th_open(th_config(4 * MiB));
	if (CHECK(src)) {
		for (int i = 0; i < 20; i++) {
			char key[16];
			int kl = snprintf(key, sizeof(key), "s%d", i);
			CHECK_RC(larder_put(src, key, (size_t)kl, key, (size_t)kl, LARDER_TTL_NEVER),
				 LARDER_OK);
		}
		CHECK_RC(larder_save(src, path), LARDER_OK);
		larder_close(src);
		FILE *in = fopen(path, "rb");
		REQUIRE(in);
		unsigned char data[8192];
		size_t len = fread(data, 1, sizeof(data), in);
		fclose(in);
		CHECK_LT(len, sizeof(data));
		for (size_t cut = 0; cut < len; cut++) {
			f = fopen(path, "wb");
			REQUIRE(f);
			CHECK_EQ(fwrite(data, 1, cut, f), cut);
			fclose(f);
			rc = larder_load(c, path);
			if (!CHECK(rc == LARDER_EFORMAT || rc == LARDER_ECORRUPT))
				break;
		}
		/* One byte flipped anywhere: refused too. */
		for (size_t at = 0; at < len; at++) {
			data[at] ^= 0x40;
			f = fopen(path, "wb");
			REQUIRE(f);
			CHECK_EQ(fwrite(data, 1, len, f), len);
			fclose(f);
			data[at] ^= 0x40;
			rc = larder_load(c, path);
			if (!CHECK(rc == LARDER_EFORMAT || rc == LARDER_ECORRUPT)) {
				th_fail(__FILE__, __LINE__, "flip at %zu of %zu loaded", at, len);
				break;
			}
		}
		CHECK_RC(larder_contains(c, "s1", 2), LARDER_MISS);
	}
	unlink(path);
	size_t vl = 0;
	char buf[4];
	CHECK_RC(larder_get(c, "keep", 4, buf, sizeof(buf), &vl), LARDER_OK);
	CHECK_EQ(vl, 2);
	larder_close(c);
}

/* ---- Edges the combinations do not reach ---------------------------------- */

struct heard {
	_Atomic int calls;
	enum larder_cause cause;
	size_t len;
	unsigned char bytes[4096];
};

static void hear(void *ctx, const void *key, size_t key_len, const void *value,
		 size_t value_len, enum larder_cause cause)
{
	struct heard *h = ctx;
	(void)key;
	(void)key_len;
	h->cause = cause;
	h->len = value_len;
	if (value_len <= sizeof(h->bytes))
		memcpy(h->bytes, value, value_len);
	/* Release: publishes the fields above to heard_one's acquire. */
	atomic_fetch_add_explicit(&h->calls, 1, memory_order_release);
}

static int heard_one(void *ctx)
{
	/* Acquire: pairs with hear's release; the fields are then readable. */
	return atomic_load_explicit(&((struct heard *)ctx)->calls, memory_order_acquire) >= 1;
}

/* Lengths near SIZE_MAX are refused by their limits, never read or summed
 * into an overflow; an expected value over the limit is a MISMATCH. */
static void test_huge_lengths(void)
{
	larder *c = th_open(th_config(4 * MiB));
	REQUIRE(c);
	unsigned char buf[8];
	size_t vl = 0;
	CHECK_RC(larder_put(c, "k", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "k", SIZE_MAX, "v", 1, 0), LARDER_EKEYSIZE);
	CHECK_RC(larder_put(c, "k", 1, "v", SIZE_MAX, 0), LARDER_EVALSIZE);
	CHECK_RC(larder_put(c, "k", 1, "v", SIZE_MAX - 64, 0), LARDER_EVALSIZE);
	CHECK_RC(larder_get(c, "k", SIZE_MAX, buf, sizeof(buf), &vl), LARDER_EKEYSIZE);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, "v", SIZE_MAX, "w", 1, 0), LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, "v", (size_t)MiB + 1, "w", 1, 0),
		 LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, "v", SIZE_MAX), LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(c, "absent", 6, "v", SIZE_MAX), LARDER_MISS);
	{
		const void *keys[3] = {"k", NULL, "k"};
		size_t lens[3] = {SIZE_MAX, 1, 1};
		struct got g[3];
		memset(g, 0, sizeof(g));
		CHECK_EQ(larder_get_batch(c, 3, keys, lens, got_batch, g), 1);
		CHECK_EQ(g[0].calls + g[1].calls, 0);
		CHECK_EQ(g[2].calls, 1);
	}
	CHECK_RC(larder_get(c, "k", 1, buf, sizeof(buf), &vl), LARDER_OK);
	CHECK_EQ(vl, 1);
	CHECK_RC(larder_set_capacity(c, ((uint64_t)1 << 62) - 1), LARDER_OK);
	CHECK_RC(larder_set_capacity(c, UINT64_MAX), LARDER_EINVAL);
	/* Stats past the end are zero-filled; size classes past the end refused. */
	uint64_t v[LARDER_STAT_COUNT + 4];
	memset(v, 0xff, sizeof(v));
	CHECK_RC(larder_stats(c, v, LARDER_STAT_COUNT + 4), LARDER_OK);
	for (size_t i = LARDER_STAT_COUNT; i < LARDER_STAT_COUNT + 4; i++)
		CHECK_EQ(v[i], 0);
	CHECK_RC(larder_stats_size_class(c, larder_size_class_count(), v, 1), LARDER_EINVAL);
	CHECK_RC(larder_stats_size_class(c, 0, NULL, 1), LARDER_EINVAL);
	CHECK(larder_strerror(-12345) != NULL);
	CHECK(larder_strerror(12345) != NULL);
	CHECK_STR(larder_cause_name((enum larder_cause)77), "unknown");
	CHECK(larder_stat_name(LARDER_STAT_COUNT) == NULL);
	larder_close(c);
}

/* A compressed value reaches the listener, the cursor and a short buffer's
 * EBUFSIZE as its original bytes and length. */
static void test_compressed_views(void)
{
	static struct heard h;
	atomic_init(&h.calls, 0);
	larder_config *cfg = th_config(4 * MiB);
	REQUIRE(cfg);
	CHECK_RC(larder_config_set_compression(cfg, 16, 10), LARDER_OK);
	CHECK_RC(larder_config_set_removal_listener(cfg, hear, &h), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	unsigned char v[3000], out[3000];
	for (size_t i = 0; i < sizeof(v); i++)
		v[i] = (unsigned char)("abcabcabd"[i % 9]);
	size_t vl = 0;
	CHECK_RC(larder_put(c, "z", 1, v, sizeof(v), LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_get(c, "z", 1, out, sizeof(v) - 1, &vl), LARDER_EBUFSIZE);
	CHECK_EQ(vl, sizeof(v));
	CHECK_RC(larder_get(c, "z", 1, out, sizeof(out), &vl), LARDER_OK);
	CHECK_MEM(out, v, sizeof(v));
	CHECK_RC(larder_replace_if_equals(c, "z", 1, v, sizeof(v) - 1, "x", 1, 0),
		 LARDER_MISMATCH);
	CHECK_RC(larder_remove(c, "z", 1), LARDER_OK);
	CHECK(th_wait_until(heard_one, &h, WAIT_MS));
	CHECK_EQ(h.cause, LARDER_CAUSE_EXPLICIT);
	CHECK_EQ(h.len, sizeof(v));
	CHECK_MEM(h.bytes, v, sizeof(v));
	larder_close(c);
}

/* An entry with no deadline keeps none through a save and a load into a
 * cache with a default TTL; one with a deadline keeps at most what it had. */
static void test_load_keeps_lifetimes(void)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/larder-contracts-ttl-%d.snap", (int)getpid());
	larder_config *acfg = th_config(4 * MiB);
	REQUIRE(acfg);
	/* The saving cache compresses and has four shards; the loading one
	 * neither: snapshots hold plain values. */
	CHECK_RC(larder_config_set_compression(acfg, 1, 0), LARDER_OK);
	CHECK_RC(larder_config_set_shards(acfg, 4), LARDER_OK);
	larder *a = th_open(acfg);
	larder_config *cfg = th_config_one_shard(4 * MiB);
	REQUIRE(a && cfg);
	CHECK_RC(larder_config_set_default_ttl_ms(cfg, 50), LARDER_OK);
	CHECK_RC(larder_config_set_max_key_bytes(cfg, 4), LARDER_OK);
	CHECK_RC(larder_config_set_max_value_bytes(cfg, 64), LARDER_OK);
	larder *b = th_open(cfg);
	REQUIRE(b);
	char zip[72];
	unsigned char out[64];
	size_t vl = 0;
	memset(zip, 'z', sizeof(zip));
	CHECK_RC(larder_put(a, "never", 4, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(a, "long", 4, "v", 1, 3600 * 1000), LARDER_OK);
	CHECK_RC(larder_put(a, "too-long-key", 12, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(a, "bigv", 4, zip, 65, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(a, "zip", 3, zip, 60, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_save(a, path), LARDER_OK);
	CHECK_RC(larder_load(b, path), LARDER_OK);
	uint64_t ttl = 0;
	CHECK_RC(larder_ttl_remaining(b, "neve", 4, &ttl), LARDER_OK);
	CHECK_EQ(ttl, LARDER_TTL_NEVER);
	CHECK_RC(larder_ttl_remaining(b, "long", 4, &ttl), LARDER_OK);
	CHECK_LE(ttl, 3600 * 1000);
	CHECK_GT(ttl, 3000 * 1000);
	CHECK_RC(larder_get(b, "zip", 3, out, sizeof(out), &vl), LARDER_OK);
	CHECK_EQ(vl, 60);
	CHECK_MEM(out, zip, 60);
	/* Over this cache's limits: skipped, not refused. */
	CHECK_RC(larder_contains(b, "bigv", 4), LARDER_MISS);
	CHECK_RC(larder_flush(b, WAIT_MS * TH_SLOW), LARDER_OK);
	CHECK_EQ(th_stat(b, LARDER_STAT_ENTRIES), 3);
	unlink(path);
	larder_close(a);
	larder_close(b);
}

/* An entry larger than 1/8 of a shrunk capacity stays readable or goes:
 * never a wrong value; a new write of its size is EVALSIZE. */
static void test_shrink_below_entry(void)
{
	larder *c = th_open(th_config(8 * MiB));
	REQUIRE(c);
	static unsigned char v[200 * 1024], out[200 * 1024];
	for (size_t i = 0; i < sizeof(v); i++)
		v[i] = (unsigned char)th_mix64(i);
	size_t vl = 0;
	CHECK_RC(larder_put(c, "big", 3, v, sizeof(v), LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_set_capacity(c, 1 * MiB), LARDER_OK);
	CHECK_RC(larder_put(c, "big2", 4, v, sizeof(v), LARDER_TTL_NEVER), LARDER_EVALSIZE);
	int rc = larder_get(c, "big", 3, out, sizeof(out), &vl);
	CHECK(rc == LARDER_OK || rc == LARDER_MISS);
	if (rc == LARDER_OK)
		CHECK_MEM(out, v, sizeof(v));
	CHECK_RC(larder_put(c, "small", 5, "s", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_flush(c, WAIT_MS * TH_SLOW), LARDER_OK);
	CHECK_LE(th_stat(c, LARDER_STAT_USED_BYTES),
		 th_stat(c, LARDER_STAT_CAPACITY_BYTES) + th_stat(c, LARDER_STAT_OVERSHOOT_BOUND));
	larder_close(c);
}

/* Under EBUFSIZE nothing was read: no hit counted, no deadline extended
 * (expire-after-access), whichever way the value is stored. */
static void test_bufsize_reads_nothing(void)
{
	static struct th_clock clk;
	for (int compress = 0; compress < 2; compress++) {
		th_clock_init(&clk, T0);
		larder_config *cfg = th_config(4 * MiB);
		REQUIRE(cfg);
		CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
		CHECK_RC(larder_config_set_default_ttl_ms(cfg, 100), LARDER_OK);
		CHECK_RC(larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS), LARDER_OK);
		if (compress)
			CHECK_RC(larder_config_set_compression(cfg, 16, 10), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		unsigned char v[300], out[300];
		memset(v, 'q', sizeof(v));
		size_t vl = 0;
		uint64_t ttl = 0;
		CHECK_RC(larder_put(c, "k", 1, v, sizeof(v), LARDER_TTL_DEFAULT), LARDER_OK);
		th_clock_advance(&clk, 60);
		uint64_t hits = th_stat(c, LARDER_STAT_HITS);
		CHECK_RC(larder_get(c, "k", 1, out, sizeof(v) - 1, &vl), LARDER_EBUFSIZE);
		CHECK_EQ(vl, sizeof(v));
		CHECK_RC(larder_get(c, "k", 1, NULL, 0, &vl), LARDER_EBUFSIZE);
		CHECK_EQ(th_stat(c, LARDER_STAT_HITS), hits);
		CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl), LARDER_OK);
		CHECK_EQ(ttl, 40);
		/* A read that fits extends it to read time + 100. */
		CHECK_RC(larder_get(c, "k", 1, out, sizeof(out), &vl), LARDER_OK);
		CHECK_MEM(out, v, sizeof(v));
		CHECK_EQ(th_stat(c, LARDER_STAT_HITS), hits + 1);
		CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl), LARDER_OK);
		CHECK_EQ(ttl, 100);
		larder_close(c);
	}
}

/* Expire-after-access's slack (default TTL / 64, at most 1 s): a read
 * moves the deadline only when it is more than the slack short of read
 * time + TTL, and then to exactly that. */
static void test_access_slack(void)
{
	static struct th_clock clk;
	const uint64_t ttls[2] = {6400, 3600 * 1000}, slacks[2] = {100, 1000};
	for (int i = 0; i < 2; i++) {
		th_clock_init(&clk, T0);
		larder_config *cfg = th_config(4 * MiB);
		REQUIRE(cfg);
		CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
		CHECK_RC(larder_config_set_default_ttl_ms(cfg, ttls[i]), LARDER_OK);
		CHECK_RC(larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		char buf[4];
		size_t vl;
		uint64_t ttl = 0;
		CHECK_RC(larder_put(c, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
		/* Within the slack: the deadline stays. */
		th_clock_advance(&clk, slacks[i]);
		CHECK_RC(larder_get(c, "k", 1, buf, sizeof(buf), &vl), LARDER_OK);
		CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl), LARDER_OK);
		CHECK_EQ(ttl, ttls[i] - slacks[i]);
		/* One millisecond past it: moved to read time + TTL. */
		th_clock_advance(&clk, 1);
		CHECK_RC(larder_get(c, "k", 1, buf, sizeof(buf), &vl), LARDER_OK);
		CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl), LARDER_OK);
		CHECK_EQ(ttl, ttls[i]);
		larder_close(c);
	}
}

struct check_walk {
	int bad, n;
};

static void check_walk_fn(void *ctx, const void *key, size_t key_len, const void *value,
			  size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct check_walk *w = ctx;
	unsigned char want[600];
	char name[16] = {0};
	unsigned id = 0;
	(void)ttl_ms;
	(void)entry_bytes;
	w->n++;
	if (key_len >= sizeof(name)) {
		w->bad++;
		return;
	}
	memcpy(name, key, key_len); /* the key's bytes, not a string */
	if (sscanf(name, "s%u", &id) != 1 || value_len != 100 + id % 400) {
		w->bad++;
		return;
	}
	memset(want, (int)(id & 0xff), value_len);
	if (memcmp(value, want, value_len))
		w->bad++;
}

/* A snapshot larger than the cache: loading stops adding at capacity
 * (nothing evicted for it), every entry taken is whole, used bytes within
 * the bound. */
static void test_load_into_smaller(void)
{
	char path[64];
	snprintf(path, sizeof(path), "/tmp/larder-contracts-small-%d.snap", (int)getpid());
	larder *big = th_open(th_config(16 * MiB));
	larder *small = th_open(th_config(256 * KiB));
	REQUIRE(big && small);
	unsigned char v[600];
	for (unsigned id = 0; id < 8000; id++) {
		char key[16];
		int kl = snprintf(key, sizeof(key), "s%u", id);
		memset(v, (int)(id & 0xff), sizeof(v));
		CHECK_RC(larder_put(big, key, (size_t)kl, v, 100 + id % 400, LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	CHECK_RC(larder_save(big, path), LARDER_OK);
	CHECK_RC(larder_load(small, path), LARDER_OK);
	unlink(path);
	CHECK_RC(larder_flush(small, WAIT_MS * TH_SLOW), LARDER_OK);
	CHECK_EQ(th_stat(small, LARDER_STAT_EVICTIONS), 0);
	CHECK_LE(th_stat(small, LARDER_STAT_USED_BYTES),
		 th_stat(small, LARDER_STAT_CAPACITY_BYTES) +
			 th_stat(small, LARDER_STAT_OVERSHOOT_BOUND));
	larder_iter *it = NULL;
	struct check_walk w = {0};
	REQUIRE_RC(larder_iter_open(small, &it), LARDER_OK);
	while (larder_iter_next(it, check_walk_fn, &w) == LARDER_OK)
		;
	larder_iter_close(it);
	CHECK_EQ(w.bad, 0);
	CHECK_GT(w.n, 100);
	CHECK_EQ(w.n, th_stat(small, LARDER_STAT_ENTRIES));
	larder_close(big);
	larder_close(small);
}

struct nest {
	larder *c;
	int depth, bad;
	unsigned char want[3][2048];
};

static void nest_fn(void *ctx, const void *value, size_t len)
{
	struct nest *n = ctx;
	int d = n->depth++;
	if (len != sizeof(n->want[d]) || memcmp(value, n->want[d], len))
		n->bad++;
	if (d < 2) {
		char key[2] = {(char)('a' + d + 1), 0};
		if (larder_get_with(n->c, key, 1, nest_fn, n) != LARDER_OK)
			n->bad++;
	}
	/* The outer value is still whole after the nested reads. */
	if (len != sizeof(n->want[d]) || memcmp(value, n->want[d], len))
		n->bad++;
}

/* Compressed values read in callbacks nested three deep (past the thread's
 * two buffers) and in one batch: each callback sees its own value whole. */
static void test_nested_compressed_reads(void)
{
	static struct nest n;
	larder_config *cfg = th_config(4 * MiB);
	REQUIRE(cfg);
	CHECK_RC(larder_config_set_compression(cfg, 16, 10), LARDER_OK);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_NONE, NULL, 0),
		 LARDER_OK);
	n.c = th_open(cfg);
	REQUIRE(n.c);
	for (int d = 0; d < 3; d++) {
		for (size_t i = 0; i < sizeof(n.want[d]); i++)
			n.want[d][i] = (unsigned char)("xyz"[d] + (i / 100) % 3);
		char key[2] = {(char)('a' + d), 0};
		CHECK_RC(larder_put(n.c, key, 1, n.want[d], sizeof(n.want[d]), LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	CHECK_RC(larder_get_with(n.c, "a", 1, nest_fn, &n), LARDER_OK);
	CHECK_EQ(n.depth, 3);
	CHECK_EQ(n.bad, 0);
	const void *keys[4] = {"a", "b", "c", "a"};
	size_t lens[4] = {1, 1, 1, 1};
	static struct got g[4];
	memset(g, 0, sizeof(g));
	CHECK_EQ(larder_get_batch(n.c, 4, keys, lens, got_batch, g), 4);
	for (int i = 0; i < 4; i++) {
		CHECK_EQ(g[i].calls, 1);
		CHECK_EQ(g[i].len, 2048);
	}
	larder_close(n.c);
}

static uint64_t monotonic_ms(int coarse)
{
	struct timespec ts;
	clock_gettime(coarse ? CLOCK_MONOTONIC_COARSE : CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

struct expiry_run {
	uint64_t trials, lagged, late, bounded;
};

/*
 * One phase of test_default_clock_never_expired: for run_ms, puts "k" with
 * ttl_ms into c (expire-after-access) or w (after-write) in turn and reads
 * it every way until a miss, counting the after-write reads that started at
 * or after its deadline yet returned it (late), the reads for which the TSC
 * bound was below the deadline (bounded: those skip the clock), and those
 * that saw the coarse clock over 8 ms behind (lagged).
 */
static void expiry_phase(larder *c, larder *w, uint64_t ttl_ms, uint64_t run_ms,
			 struct expiry_run *r)
{
	uint64_t end = monotonic_ms(0) + run_ms;
	unsigned char buf[8];
	size_t vl;
	while (monotonic_ms(0) < end && r->late < 10) {
		larder *on = r->trials & 1 ? c : w;
		/* larder_get's fast path takes keys of 8 to 16 bytes (the bound
		 * checked inline), the general read the others */
		const char *key = r->trials & 2 ? "deadline-key" : "k";
		size_t kl = strlen(key);
		uint64_t put_start = monotonic_ms(0);
		CHECK_RC(larder_put(on, key, kl, "v", 1, ttl_ms), LARDER_OK);
		uint64_t put_done = monotonic_ms(0);
		for (unsigned how = 0;; how++) {
			uint64_t before = monotonic_ms(0);
			r->bounded += larder__clockbound_upper() < put_start + ttl_ms;
			int rc;
			struct got g = {0};
			const void *keys[1] = {key};
			size_t lens[1] = {kl};
			switch (how % 5) {
			case 0:
				rc = larder_get(on, key, kl, buf, sizeof(buf), &vl);
				break;
			case 1:
				rc = larder_contains(on, key, kl);
				break;
			case 2:
				rc = larder_get_with(on, key, kl, got_fn, &g);
				break;
			case 3:
				rc = larder_get_batch(on, 1, keys, lens, got_batch, &g) == 1
					     ? LARDER_OK
					     : LARDER_MISS;
				break;
			default:
				rc = larder_peek(on, key, kl, buf, sizeof(buf), &vl);
				break;
			}
			r->lagged += before > monotonic_ms(1) + 8;
			if (rc == LARDER_MISS)
				break;
			/* With after-access the deadline moves with each hit: only
			 * the expire-after-write cache is judged from the put. */
			if (on == w && before >= put_done + ttl_ms)
				r->late++;
			if (before > put_done + ttl_ms + 20)
				break;
		}
		r->trials++;
	}
}

/* CLOCK_MONOTONIC in ns, returned 5 ms after it was read: the maintainers'
 * samples of it must still bound the time from above. */
static uint64_t slow_monotonic_ns(void)
{
	struct timespec ts, pause = {0, 5000000};
	clock_gettime(CLOCK_MONOTONIC, &ts);
	nanosleep(&pause, NULL);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * The default clock (CLOCK_MONOTONIC): no read that starts at or after the
 * deadline returns the value, by any read path, however far the kernel's
 * coarse clock lags behind the precise one, and through the TSC bound
 * (core/clockbound.h, CLOCKBOUND-C1): first refreshed by the maintainers as
 * usual (2 ms TTLs: every read near the deadline, where a bound 1 ms too
 * low shows), then from a clock that returns 5 ms after its reading (10 ms
 * TTLs: a sample that took its TSC reading after the clock's shows), then
 * frozen (30 ms TTLs, the bound a second old: a rate too low shows). On a loaded VM the coarse clock was seen 7-15 ms behind (its
 * tick delayed), and reads that judged deadlines on it (coarse + two ticks)
 * returned values past their deadline. Real time passes here (the loop
 * reads the clock, it does not sleep); the lagging reads seen are printed,
 * as the bug needs them to show, and so are the reads the bound served.
 */
static void test_default_clock_never_expired(void)
{
	larder_config *cfg = th_config(4 * MiB);
	REQUIRE(cfg);
	CHECK_RC(larder_config_set_default_ttl_ms(cfg, 2), LARDER_OK);
	CHECK_RC(larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS), LARDER_OK);
	larder *c = th_open(cfg);
	larder *w = th_open(th_config(4 * MiB));
	REQUIRE(c && w);
	uint64_t failures = larder__test_clockbound_failures();
	int live = larder__test_clockbound(LARDER__CLOCKBOUND_ON);
	struct expiry_run fresh = {0}, slow = {0}, frozen = {0};
	expiry_phase(c, w, 2, 1500, &fresh);
	larder__test_clockbound_clock(slow_monotonic_ns);
	expiry_phase(c, w, 10, 1000, &slow);
	larder__test_clockbound_clock(NULL);
	if (live)
		CHECK(larder__test_clockbound(LARDER__CLOCKBOUND_FREEZE));
	expiry_phase(c, w, 30, 1500, &frozen);
	larder__test_clockbound(LARDER__CLOCKBOUND_ON);
	printf("  TSC bound %s; %llu + %llu + %llu trials, %llu + %llu + %llu reads under the "
	       "bound, %llu reads saw the coarse clock over 8 ms behind\n",
	       live ? "live" : "unavailable", (unsigned long long)fresh.trials,
	       (unsigned long long)slow.trials, (unsigned long long)frozen.trials,
	       (unsigned long long)fresh.bounded, (unsigned long long)slow.bounded,
	       (unsigned long long)frozen.bounded,
	       (unsigned long long)(fresh.lagged + slow.lagged + frozen.lagged));
	CHECK_EQ(fresh.late, 0);
	CHECK_EQ(slow.late, 0);
	CHECK_EQ(frozen.late, 0);
	CHECK_EQ(larder__test_clockbound_failures(), failures);
	/* The bound was there to be tested: the frozen one is fresh when
	 * frozen and loose by 1/256 of the phase, far less than 30 ms (the
	 * others' tightness depends on the maintainers' turns: printed). */
	if (live)
		CHECK(frozen.bounded > 0);
	larder_close(c);
	larder_close(w);
}

/*
 * Expire-after-access with the default clock: a read that the TSC bound
 * spares the clock still leaves the deadline at least read time + TTL -
 * slack of the clock (the extension skips only what the clock would skip
 * too), so a key read again and again never expires. Checked through
 * ttl_remaining after each read, against the clock read before it.
 */
static void test_default_clock_access_extends(void)
{
	/* A TTL long enough that a thread kept off the CPU does not see its
	 * keys expire between two reads; its slack (1/64) still shows a read
	 * that failed to extend within the loop's 600 ms. */
	const uint64_t ttl = 6400, slack = ttl / 64;
	larder_config *cfg = th_config(4 * MiB);
	REQUIRE(cfg);
	CHECK_RC(larder_config_set_default_ttl_ms(cfg, ttl), LARDER_OK);
	CHECK_RC(larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	int live = larder__test_clockbound(LARDER__CLOCKBOUND_ON);
	/* larder_get's fast path (8 to 16 bytes), and the general read */
	const char *keys[2] = {"deadline-key", "k"};
	uint64_t last_read[2];
	for (int i = 0; i < 2; i++) {
		CHECK_RC(larder_put(c, keys[i], strlen(keys[i]), "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
		last_read[i] = monotonic_ms(0);
	}
	unsigned char buf[8];
	size_t vl;
	uint64_t reads = 0, bounded = 0, short_deadlines = 0, end = monotonic_ms(0) + 600;
	while (monotonic_ms(0) < end && short_deadlines < 10) {
		unsigned i = reads & 1;
		size_t kl = strlen(keys[i]);
		uint64_t before = monotonic_ms(0), ttl_ms = 0;
		bounded += larder__clockbound_upper() != UINT64_MAX;
		int rc = larder_get(c, keys[i], kl, buf, sizeof(buf), &vl);
		if (rc == LARDER_MISS && before >= last_read[i] + ttl) {
			/* Off the CPU for a whole TTL: expired as it should. */
			CHECK_RC(larder_put(c, keys[i], kl, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
			last_read[i] = monotonic_ms(0);
			continue;
		}
		if (!CHECK_RC(rc, LARDER_OK))
			break;
		CHECK_RC(larder_ttl_remaining(c, keys[i], kl, &ttl_ms), LARDER_OK);
		/* deadline = ttl_remaining's clock reading + ttl_ms <= after + ttl_ms */
		uint64_t after = monotonic_ms(0);
		short_deadlines += after + ttl_ms < before + ttl - slack;
		last_read[i] = after;
		reads++;
	}
	printf("  %llu reads, %llu with a bound\n", (unsigned long long)reads,
	       (unsigned long long)bounded);
	CHECK_EQ(short_deadlines, 0);
	if (live)
		CHECK(bounded > 0);
	larder_close(c);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_closed_handles),
		TH_TEST(test_load_bad_files),
		TH_TEST(test_huge_lengths),
		TH_TEST(test_compressed_views),
		TH_TEST(test_load_keeps_lifetimes),
		TH_TEST(test_shrink_below_entry),
		TH_TEST(test_bufsize_reads_nothing),
		TH_TEST(test_access_slack),
		TH_TEST(test_load_into_smaller),
		TH_TEST(test_nested_compressed_reads),
		TH_TEST(test_default_clock_never_expired),
		TH_TEST(test_default_clock_access_extends),
		TH_TEST(test_combinations),
	};
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--all"))
			all_policies = 1;
	seed = th_arg_u64(argc, argv, "--seed", 0);
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
