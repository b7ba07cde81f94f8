/*
 * tests/unit/test_contracts_ops.c - every public operation against every
 * option, with the counters held exact: each entry a write made leaves the
 * cache once, by one counted cause (this file also runs as
 * unit_contracts_ops_shards4).
 *
 * What it owns: a table of 48 configurations, compression (off, LZ4 alone,
 * a given dictionary, a trained one) x lifetime (none, a default TTL
 * counted from the write, one counted from the last read) x capacity (64
 * KiB, where writes evict; 4 MiB, where nothing does) x pool member, the
 * policy rotating through all seven (the default, S3-FIFO, FIFO, LRU,
 * W-TinyLFU plain and tuned, ARC) and a removal listener in two of three,
 * each run through one script of every operation with an injected clock
 * and a model of its keys. After each step and a larder_flush (the
 * counters are exact only after one):
 *   - LARDER_STAT_WRITES == ENTRIES + EVICTIONS + EXPIRATIONS + REMOVALS +
 *     REPLACEMENTS + CLEARED (larder.h: every successful write of a new value
 *     makes an entry, and every entry that leaves is counted once, under its
 *     cause), in every configuration, also after a touch, a load over
 *     present keys, a clear and a capacity cut;
 *   - HITS, MISSES, WRITES and REMOVALS equal the calls that returned a hit,
 *     a miss, a stored value and a removal; where nothing evicts, ENTRIES,
 *     REPLACEMENTS and EXPIRATIONS equal the model's, and every key the model
 *     holds reads back byte-exact with its exact remaining lifetime;
 *   - the listener is called once per entry gone, under the cause counted,
 *     an explicit removal's call with the bytes removed;
 *   - a cursor hands out ENTRIES entries whose entry_bytes sum to
 *     LARDER_STAT_LIVE_BYTES, each value byte-exact;
 *   - a save loaded into a twin gives the values back byte-exact, lifetimes
 *     never longer; a load over the same keys counts them REPLACED;
 *   - a clear counts the live entries CLEARED and a past-deadline one
 *     EXPIRED; a capacity cut brings the live bytes within it (a pooled
 *     cache refuses it with LARDER_ESTATE, its capacity the pool's split);
 *   - the entry limit: the longest value accepted, one byte more refused
 *     with the key's old value intact;
 *   - the bad inputs of every operation and their precedence (EINVAL, then
 *     EKEYSIZE, then EVALSIZE), none counted as a read or write.
 *
 * Not here: concurrency (the stress tests), damaged snapshots
 * (test_audit_core.c), the single-claim edges (test_contracts_api.c), the
 * model's random sequences (test_contracts.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"

#define T0 1000u
#define DTTL 60u /* the default TTL: an after-access slack of 60 / 64 = 0 ms */
#define NONE UINT64_MAX
#define NK 32
#define MAXV 3000 /* the longest value of the script's keys */
#define MAX_KEY 32
#define FLUSH_MS (60000u * TH_SLOW)
/* Rounds of the script per configuration: one under a sanitizer, which
 * runs it 5-20x slower. */
#define ROUNDS (TH_SLOW > 1 ? 1u : 2u)

enum codec { C_OFF, C_LZ4, C_GIVEN, C_TRAIN };
enum life { L_NONE, L_WRITE, L_ACCESS };

struct cfgrow {
	enum larder_policy policy;
	enum codec codec;
	enum life life;
	int tiny, pooled, listener;
};

/* What the removal listener heard: calls by cause, and for each script
 * key the checksum of the last value removed explicitly (the listener
 * must hand over the original bytes, compressed or not). */
struct heard {
	_Atomic uint64_t calls[5];
	_Atomic uint64_t explicit_sum[NK];
	_Atomic uint64_t bad;
};

struct model {
	int present;
	unsigned char val[MAXV];
	size_t len;
	uint64_t deadline;
};

struct run {
	struct cfgrow row;
	larder *c;
	larder_pool *pool;
	struct th_clock clk;
	struct heard heard;
	uint64_t explicit_sum[NK]; /* what the listener should have heard */
	uint64_t capacity;
	size_t max_value;
	struct model m[NK];
	/* the calls' results, which the counters must equal */
	uint64_t hits, misses, writes, removals;
	/* the model's removals by cause (exact where nothing evicts) */
	uint64_t replaced, expired, cleared;
	int limit; /* the entry limit's key is held (counted in ENTRIES) */
	/* the counters when the script began (the bad inputs ran before) */
	uint64_t base[LARDER_STAT_COUNT];
};

static const char given_dict[] =
	"{\"id\":0,\"name\":\"larder\",\"kind\":\"cache\",\"tags\":[\"fast\",\"small\"]},";

/* A value of len bytes for (k, version): compressible for odd versions. */
static void value_of(unsigned char *out, size_t len, unsigned k, unsigned version)
{
	for (size_t i = 0; i < len; i++)
		out[i] = version & 1 ? (unsigned char)given_dict[(i + k) % (sizeof given_dict - 1)]
				     : (unsigned char)th_mix64(((uint64_t)k << 32) ^ version * 7919u ^ i);
}

static size_t key_of(char *buf, unsigned k)
{
	return (size_t)snprintf(buf, 16, "key%02u", k);
}

/* A checksum of a value that tells lengths and bytes apart (never 0). */
static uint64_t sum_of(const void *value, size_t len)
{
	uint64_t h = th_mix64(len + 1);
	for (size_t i = 0; i < len; i++)
		h = th_mix64(h ^ ((const unsigned char *)value)[i]);
	return h | 1;
}

static void on_removal(void *ctx, const void *key, size_t key_len, const void *value,
		       size_t value_len, enum larder_cause cause)
{
	struct heard *h = ctx;
	unsigned k;
	if (!key || !key_len || (value_len && !value) || (unsigned)cause > 4) {
		atomic_fetch_add(&h->bad, 1);
		return;
	}
	atomic_fetch_add(&h->calls[cause], 1);
	if (cause == LARDER_CAUSE_EXPLICIT && key_len == 5 &&
	    sscanf((const char *)key, "key%02u", &k) == 1 && k < NK)
		atomic_store(&h->explicit_sum[k], sum_of(value, value_len));
}

static uint64_t now(struct run *r)
{
	return atomic_load(&r->clk.now_ms);
}

static uint64_t deadline_for(struct run *r, uint64_t ttl)
{
	if (ttl == LARDER_TTL_DEFAULT)
		ttl = r->row.life == L_NONE ? NONE : DTTL;
	return ttl == NONE ? NONE : now(r) + ttl;
}

static int live(struct run *r, unsigned k)
{
	return r->m[k].present && (r->m[k].deadline == NONE || now(r) < r->m[k].deadline);
}

static uint64_t stat(struct run *r, enum larder_stat s)
{
	return th_stat(r->c, s) - r->base[s];
}

/* Drops from the model the keys whose deadlines passed, counting them. */
static void model_expire(struct run *r)
{
	for (unsigned k = 0; k < NK; k++)
		if (r->m[k].present && !live(r, k)) {
			r->m[k].present = 0;
			r->expired++;
		}
}

/* ---- Counters ------------------------------------------------------------------- */

struct walk {
	struct run *r;
	uint64_t entries, bytes;
};

static void walk_entry(void *ctx, const void *key, size_t key_len, const void *value,
		       size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk *w = ctx;
	struct run *r = w->r;
	unsigned k;
	w->entries++;
	w->bytes += entry_bytes;
	CHECK_GE(entry_bytes, key_len);
	if (key_len != 5 || sscanf((const char *)key, "key%02u", &k) != 1 || k >= NK)
		return; /* the fill's and the limit's keys */
	if (!CHECK(r->m[k].present) || !CHECK_EQ(value_len, r->m[k].len))
		return;
	CHECK_MEM(value, r->m[k].val, value_len);
	CHECK_EQ(ttl_ms, r->m[k].deadline == NONE ? NONE : r->m[k].deadline - now(r));
}

static const enum larder_stat cause_stat[5] = {
	[LARDER_CAUSE_EXPLICIT] = LARDER_STAT_REMOVALS,
	[LARDER_CAUSE_REPLACED] = LARDER_STAT_REPLACEMENTS,
	[LARDER_CAUSE_EXPIRED] = LARDER_STAT_EXPIRATIONS,
	[LARDER_CAUSE_EVICTED] = LARDER_STAT_EVICTIONS,
	[LARDER_CAUSE_CLEARED] = LARDER_STAT_CLEARED,
};

static int heard_all(void *ctx)
{
	struct run *r = ctx;
	for (int i = 0; i < 5; i++)
		if (atomic_load(&r->heard.calls[i]) != th_stat(r->c, cause_stat[i]))
			return 0;
	return 1;
}

/* The listener is called once per entry that left, under the counted
 * cause (some time after: waited for), with the bytes removed. */
static int check_heard(struct run *r)
{
	int ok = CHECK(th_wait_until(heard_all, r, FLUSH_MS));
	for (int i = 0; i < 5; i++)
		ok &= CHECK_EQ(atomic_load(&r->heard.calls[i]), th_stat(r->c, cause_stat[i]));
	ok &= CHECK_EQ(atomic_load(&r->heard.bad), 0);
	for (unsigned k = 0; k < NK; k++)
		ok &= CHECK_EQ(atomic_load(&r->heard.explicit_sum[k]), r->explicit_sum[k]);
	return ok;
}

/*
 * Flushes and checks the counters: the conservation of entries in every
 * configuration, the calls' counts, and where nothing evicts the model's
 * counts; then a cursor's walk against ENTRIES and LIVE_BYTES.
 */
static void check_counts(struct run *r, const char *step)
{
	if (!CHECK_RC(larder_flush(r->c, FLUSH_MS), LARDER_OK))
		return;
	uint64_t entries = stat(r, LARDER_STAT_ENTRIES) + r->base[LARDER_STAT_ENTRIES];
	uint64_t gone = stat(r, LARDER_STAT_EVICTIONS) + stat(r, LARDER_STAT_EXPIRATIONS) +
			stat(r, LARDER_STAT_REMOVALS) + stat(r, LARDER_STAT_REPLACEMENTS) +
			stat(r, LARDER_STAT_CLEARED);
	int ok = 1;
	ok &= CHECK_EQ(stat(r, LARDER_STAT_WRITES) + r->base[LARDER_STAT_ENTRIES], entries + gone);
	ok &= CHECK_EQ(stat(r, LARDER_STAT_WRITES), r->writes);
	ok &= CHECK_EQ(stat(r, LARDER_STAT_HITS), r->hits);
	ok &= CHECK_EQ(stat(r, LARDER_STAT_MISSES), r->misses);
	ok &= CHECK_EQ(stat(r, LARDER_STAT_REMOVALS), r->removals);
	if (!r->row.tiny) {
		uint64_t held = 0;
		for (unsigned k = 0; k < NK; k++)
			held += r->m[k].present;
		ok &= CHECK_EQ(stat(r, LARDER_STAT_EVICTIONS), 0);
		ok &= CHECK_EQ(stat(r, LARDER_STAT_REPLACEMENTS), r->replaced);
		ok &= CHECK_EQ(stat(r, LARDER_STAT_EXPIRATIONS), r->expired);
		ok &= CHECK_EQ(stat(r, LARDER_STAT_CLEARED), r->cleared);
		ok &= CHECK_EQ(entries, r->base[LARDER_STAT_ENTRIES] + held + (uint64_t)r->limit);
	}
	ok &= CHECK_LE(th_stat(r->c, LARDER_STAT_LIVE_BYTES),
		       th_stat(r->c, LARDER_STAT_CAPACITY_BYTES));
	if (r->row.listener)
		ok &= check_heard(r);
	struct walk w = {.r = r};
	larder_iter *it = NULL;
	if (CHECK_RC(larder_iter_open(r->c, &it), LARDER_OK)) {
		while (larder_iter_next(it, walk_entry, &w) == LARDER_OK)
			;
		larder_iter_close(it);
	}
	ok &= CHECK_EQ(w.entries, entries);
	ok &= CHECK_EQ(w.bytes, th_stat(r->c, LARDER_STAT_LIVE_BYTES));
	if (!ok)
		th_fail(__FILE__, __LINE__, "after %s at t=%llu", step,
			(unsigned long long)now(r));
}

/* ---- Reads and writes against the model --------------------------------------- */

static void got_fn(void *ctx, const void *value, size_t len)
{
	struct model *g = ctx;
	g->present++;
	g->len = len;
	if (len <= MAXV)
		memcpy(g->val, value, len);
}

static void got_batch(void *ctx, size_t index, const void *value, size_t len)
{
	got_fn((struct model *)ctx + index, value, len);
}

/* A read that found k: the after-access extension. */
static void read_hit(struct run *r, unsigned k)
{
	if (r->row.life == L_ACCESS && r->m[k].deadline != NONE &&
	    r->m[k].deadline < now(r) + DTTL)
		r->m[k].deadline = now(r) + DTTL;
}

/* Reads k one way (get, peek, get_with, get_batch, contains, ttl_remaining,
 * access) and checks the result against the model. */
static void check_read(struct run *r, unsigned k, unsigned how)
{
	enum { READS = 7 };
	char key[16];
	size_t kl = key_of(key, k), vl = 0;
	static struct model g[2];
	uint64_t ttl = 0;
	int rc;
	memset(g, 0, sizeof g);
	switch (how % READS) {
	case 0:
		rc = larder_get(r->c, key, kl, g[0].val, MAXV, &vl);
		break;
	case 1:
		rc = larder_peek(r->c, key, kl, g[0].val, MAXV, &vl);
		break;
	case 2:
		rc = larder_get_with(r->c, key, kl, got_fn, &g[0]);
		CHECK_EQ(g[0].present, rc == LARDER_OK);
		vl = g[0].len;
		break;
	case 3: {
		const void *keys[2] = {key, "absent"};
		size_t lens[2] = {kl, 6};
		long n = larder_get_batch(r->c, 2, keys, lens, got_batch, g);
		CHECK(n == 0 || n == 1);
		CHECK_EQ(g[0].present, n);
		CHECK_EQ(g[1].present, 0);
		r->misses++; /* "absent" */
		rc = n == 1 ? LARDER_OK : LARDER_MISS;
		vl = g[0].len;
		break;
	}
	case 4:
		rc = larder_contains(r->c, key, kl);
		break;
	case 5:
		rc = larder_ttl_remaining(r->c, key, kl, &ttl);
		break;
	default:
		rc = larder_access(r->c, key, kl);
		break;
	}
	int counted = how % READS == 0 || how % READS == 2 || how % READS == 3;
	if (counted)
		rc == LARDER_OK ? r->hits++ : r->misses++;
	if (r->row.tiny && rc == LARDER_MISS) {
		r->m[k].present = 0; /* evicted (the conservation check counts it) */
		return;
	}
	if (!CHECK_RC(rc, live(r, k) ? LARDER_OK : LARDER_MISS)) {
		th_fail(__FILE__, __LINE__, "key %u read %u at t=%llu deadline %llu", k, how % READS,
			(unsigned long long)now(r), (unsigned long long)r->m[k].deadline);
		return;
	}
	if (rc != LARDER_OK)
		return;
	if (how % READS < 4 && CHECK_EQ(vl, r->m[k].len))
		CHECK_MEM(g[0].val, r->m[k].val, vl);
	if (how % READS == 5)
		CHECK_EQ(ttl, r->m[k].deadline == NONE ? NONE : r->m[k].deadline - now(r));
	if (counted || how % READS == 6) /* access extends as a get does */
		read_hit(r, k);
}

/* The model's side of a stored value. */
static void stored(struct run *r, unsigned k, const unsigned char *v, size_t len, uint64_t ttl)
{
	if (live(r, k))
		r->replaced++;
	else if (r->m[k].present)
		r->expired++;
	r->m[k].present = 1;
	memcpy(r->m[k].val, v, len);
	r->m[k].len = len;
	r->m[k].deadline = deadline_for(r, ttl);
	r->writes++;
}

static void put(struct run *r, unsigned k, unsigned version, size_t len, uint64_t ttl)
{
	char key[16];
	unsigned char v[MAXV];
	size_t kl = key_of(key, k);
	value_of(v, len, k, version);
	if (CHECK_RC(larder_put(r->c, key, kl, v, len, ttl), LARDER_OK))
		stored(r, k, v, len, ttl);
}

/* One of each conditional write on k, the expected result from the model
 * (in a tiny cache, a miss may be an eviction: the model follows). */
static void conditional_writes(struct run *r, unsigned k, unsigned version)
{
	char key[16];
	unsigned char v[MAXV], old[MAXV];
	size_t kl = key_of(key, k), len = (version * 37u) % MAXV;
	value_of(v, len, k, version);
	int was = live(r, k);
	size_t oldlen = r->m[k].len;
	memcpy(old, r->m[k].val, oldlen);
	int rc = larder_put_if_absent(r->c, key, kl, v, len, LARDER_TTL_DEFAULT);
	if (rc == LARDER_OK && was && r->row.tiny)
		was = 0, r->m[k].present = 0;
	if (CHECK_RC(rc, was ? LARDER_EXISTS : LARDER_OK) && rc == LARDER_OK)
		stored(r, k, v, len, LARDER_TTL_DEFAULT);
	was = live(r, k);
	value_of(v, len, k, version + 2);
	rc = larder_replace(r->c, key, kl, v, len, LARDER_TTL_DEFAULT);
	if (rc == LARDER_MISS && was && r->row.tiny)
		was = 0, r->m[k].present = 0;
	if (CHECK_RC(rc, was ? LARDER_OK : LARDER_MISS) && rc == LARDER_OK)
		stored(r, k, v, len, LARDER_TTL_DEFAULT);
	if (!live(r, k))
		return;
	/* A wrong expected value, one over max_value_bytes, then the right one. */
	memcpy(old, r->m[k].val, r->m[k].len);
	oldlen = r->m[k].len;
	unsigned char *huge = calloc(1, r->max_value + 1);
	REQUIRE(huge);
	rc = larder_replace_if_equals(r->c, key, kl, huge, r->max_value + 1, v, 1, 500);
	free(huge);
	if (r->row.tiny && rc == LARDER_MISS) {
		r->m[k].present = 0;
		return;
	}
	CHECK_RC(rc, LARDER_MISMATCH);
	old[0] ^= 1;
	CHECK_RC(larder_replace_if_equals(r->c, key, kl, old, oldlen ? oldlen : 1, v, 1, 500),
		 LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(r->c, key, kl, old, oldlen ? oldlen : 1),
		 LARDER_MISMATCH);
	old[0] ^= 1;
	value_of(v, len, k, version + 4);
	rc = larder_replace_if_equals(r->c, key, kl, old, oldlen, v, len, 500);
	if (r->row.tiny && rc == LARDER_MISS) {
		r->m[k].present = 0;
		return;
	}
	if (CHECK_RC(rc, LARDER_OK))
		stored(r, k, v, len, 500);
}

static void remove_key(struct run *r, unsigned k, int if_equals)
{
	char key[16];
	size_t kl = key_of(key, k);
	int was = live(r, k);
	int rc = if_equals ? larder_remove_if_equals(r->c, key, kl, r->m[k].val, r->m[k].len)
			   : larder_remove(r->c, key, kl);
	if (rc == LARDER_MISS && was && r->row.tiny)
		was = 0, r->m[k].present = 0;
	if (!CHECK_RC(rc, was ? LARDER_OK : LARDER_MISS))
		return;
	if (rc == LARDER_OK) {
		r->removals++;
		r->m[k].present = 0;
		r->explicit_sum[k] = sum_of(r->m[k].val, r->m[k].len);
	} else if (r->m[k].present) {
		r->m[k].present = 0;
		r->expired++;
	}
}

static void touch(struct run *r, unsigned k, uint64_t ttl)
{
	char key[16];
	size_t kl = key_of(key, k);
	int was = live(r, k);
	int rc = larder_touch(r->c, key, kl, ttl);
	if (rc == LARDER_MISS && was && r->row.tiny)
		was = 0, r->m[k].present = 0;
	if (CHECK_RC(rc, was ? LARDER_OK : LARDER_MISS) && rc == LARDER_OK)
		r->m[k].deadline = deadline_for(r, ttl);
}

/* ---- Bad inputs ------------------------------------------------------------------- */

static void noop_read(void *ctx, const void *value, size_t len)
{
	(void)ctx;
	(void)value;
	(void)len;
}

static void noop_batch(void *ctx, size_t index, const void *value, size_t len)
{
	(void)ctx;
	(void)index;
	(void)value;
	(void)len;
}

static void noop_iter(void *ctx, const void *key, size_t key_len, const void *value,
		      size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	(void)ctx;
	(void)key;
	(void)key_len;
	(void)value;
	(void)value_len;
	(void)ttl_ms;
	(void)entry_bytes;
}

/*
 * Every operation's bad inputs, in larder.h's order of precedence: a NULL
 * pointer (EINVAL) before a long key (EKEYSIZE) before a long value
 * (EVALSIZE) before the key's status; none stores, removes or reads.
 */
static void bad_inputs(struct run *r)
{
	larder *c = r->c;
	char lk[MAX_KEY + 2];
	memset(lk, 'q', sizeof lk);
	size_t big = r->max_value + 1;
	unsigned char *bv = calloc(1, big);
	unsigned char buf[8];
	size_t vl = 77;
	uint64_t ttl = 0;
	REQUIRE(bv);
	REQUIRE_RC(larder_put(c, "p", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	/* A NULL cache, key or required pointer first, whatever else is wrong. */
	CHECK_RC(larder_put(NULL, lk, MAX_KEY + 1, bv, big, 0), LARDER_EINVAL);
	CHECK_RC(larder_put(c, NULL, 1, "v", 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_put(c, "p", 0, "v", 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_put(c, lk, MAX_KEY + 1, NULL, 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_put_if_absent(c, lk, MAX_KEY + 1, NULL, big, 0), LARDER_EINVAL);
	CHECK_RC(larder_replace(c, NULL, 0, bv, big, 0), LARDER_EINVAL);
	CHECK_RC(larder_replace_if_equals(c, lk, MAX_KEY + 1, NULL, 1, "v", 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_replace_if_equals(c, "p", 1, "v", 1, NULL, 1, 0), LARDER_EINVAL);
	CHECK_RC(larder_remove_if_equals(c, lk, MAX_KEY + 1, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_get(c, lk, MAX_KEY + 1, NULL, 1, &vl), LARDER_EINVAL);
	CHECK_RC(larder_get(c, "p", 1, buf, sizeof buf, NULL), LARDER_EINVAL);
	CHECK_RC(larder_peek(c, lk, MAX_KEY + 1, buf, sizeof buf, NULL), LARDER_EINVAL);
	CHECK_RC(larder_get_with(c, lk, MAX_KEY + 1, NULL, NULL), LARDER_EINVAL);
	CHECK_RC(larder_ttl_remaining(c, lk, MAX_KEY + 1, NULL), LARDER_EINVAL);
	CHECK_RC(larder_get_batch(c, 1, NULL, &vl, noop_batch, NULL), LARDER_EINVAL);
	CHECK_RC(larder_get_batch(NULL, 0, NULL, NULL, NULL, NULL), LARDER_EINVAL);
	CHECK_RC(larder_contains(NULL, "p", 1), LARDER_EINVAL);
	CHECK_RC(larder_access(NULL, "p", 1), LARDER_EINVAL);
	CHECK_RC(larder_access(c, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_access(c, "p", 0), LARDER_EINVAL);
	CHECK_RC(larder_remove(c, "", 0), LARDER_EINVAL);
	CHECK_RC(larder_touch(c, NULL, 1, 5), LARDER_EINVAL);
	CHECK_RC(larder_clear(NULL), LARDER_EINVAL);
	CHECK_RC(larder_flush(NULL, 0), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(NULL, MiB), LARDER_EINVAL);
	CHECK_RC(larder_stats(c, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_save(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_load(NULL, "x"), LARDER_EINVAL);
	larder_iter *it = (larder_iter *)&vl;
	CHECK_RC(larder_iter_open(NULL, &it), LARDER_EINVAL);
	CHECK(it == NULL);
	CHECK_RC(larder_iter_open(c, NULL), LARDER_EINVAL);
	if (CHECK_RC(larder_iter_open(c, &it), LARDER_OK)) {
		CHECK_RC(larder_iter_next(it, NULL, NULL), LARDER_EINVAL);
		CHECK_RC(larder_iter_next(NULL, noop_iter, NULL), LARDER_EINVAL);
		larder_iter_close(it);
	}
	/* Then a key over max_key_bytes, before a bad value. */
	CHECK_RC(larder_put(c, lk, MAX_KEY + 1, bv, big, 0), LARDER_EKEYSIZE);
	CHECK_RC(larder_put_if_absent(c, lk, MAX_KEY + 1, "v", 1, 0), LARDER_EKEYSIZE);
	CHECK_RC(larder_replace(c, lk, MAX_KEY + 1, bv, big, 0), LARDER_EKEYSIZE);
	CHECK_RC(larder_replace_if_equals(c, lk, MAX_KEY + 1, "v", 1, bv, big, 0),
		 LARDER_EKEYSIZE);
	CHECK_RC(larder_remove_if_equals(c, lk, MAX_KEY + 1, "v", 1), LARDER_EKEYSIZE);
	CHECK_RC(larder_remove(c, lk, MAX_KEY + 1), LARDER_EKEYSIZE);
	CHECK_RC(larder_touch(c, lk, MAX_KEY + 1, 5), LARDER_EKEYSIZE);
	CHECK_RC(larder_get(c, lk, MAX_KEY + 1, buf, sizeof buf, &vl), LARDER_EKEYSIZE);
	CHECK_RC(larder_peek(c, lk, MAX_KEY + 1, buf, sizeof buf, &vl), LARDER_EKEYSIZE);
	CHECK_RC(larder_get_with(c, lk, MAX_KEY + 1, noop_read, NULL), LARDER_EKEYSIZE);
	CHECK_RC(larder_contains(c, lk, MAX_KEY + 1), LARDER_EKEYSIZE);
	CHECK_RC(larder_access(c, lk, MAX_KEY + 1), LARDER_EKEYSIZE);
	CHECK_RC(larder_ttl_remaining(c, lk, MAX_KEY + 1, &ttl), LARDER_EKEYSIZE);
	/* Then a value over max_value_bytes, before the key's status: p keeps "v". */
	CHECK_RC(larder_put(c, "p", 1, bv, big, 0), LARDER_EVALSIZE);
	CHECK_RC(larder_put_if_absent(c, "p", 1, bv, big, 0), LARDER_EVALSIZE);
	CHECK_RC(larder_replace(c, "absent", 6, bv, big, 0), LARDER_EVALSIZE);
	CHECK_RC(larder_replace_if_equals(c, "absent", 6, "x", 1, bv, big, 0), LARDER_EVALSIZE);
	CHECK_RC(larder_replace_if_equals(c, "p", 1, "x", 1, bv, big, 0), LARDER_EVALSIZE);
	/* A batch skips its invalid keys (NULL, empty, too long) and reads the rest. */
	struct model got[4];
	memset(got, 0, sizeof got);
	const void *keys[4] = {NULL, "p", lk, "p"};
	size_t lens[4] = {1, 0, MAX_KEY + 1, 1};
	CHECK_RC(larder_get_batch(c, 4, keys, lens, got_batch, got), 1);
	CHECK_EQ(got[0].present + got[1].present + got[2].present, 0);
	CHECK_EQ(got[3].present, 1);
	CHECK_EQ(got[3].len, 1);
	/* A buffer too small reads nothing; an empty value needs no buffer. */
	CHECK_RC(larder_get(c, "p", 1, NULL, 0, &vl), LARDER_EBUFSIZE);
	CHECK_EQ(vl, 1);
	CHECK_RC(larder_put(c, "e", 1, NULL, 0, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_get(c, "e", 1, NULL, 0, &vl), LARDER_OK);
	CHECK_EQ(vl, 0);
	CHECK_RC(larder_peek(c, "p", 1, buf, sizeof buf, &vl), LARDER_OK);
	CHECK_EQ(vl, 1);
	CHECK_EQ(buf[0], 'v');
	CHECK_RC(larder_remove(c, "e", 1), LARDER_OK);
	CHECK_RC(larder_remove(c, "p", 1), LARDER_OK);
	free(bv);
}

/* ---- The script ------------------------------------------------------------------ */

/* The longest value larder_put stores under key with ttl; one more byte is
 * refused with LARDER_EVALSIZE and leaves the key's value intact. */
static void entry_limit(struct run *r)
{
	size_t hi = r->capacity / 8, lo = 0;
	unsigned char *v = malloc(hi + 1);
	REQUIRE(v);
	value_of(v, hi + 1, 99, 0); /* incompressible: stored as it is */
	uint64_t ttl = r->row.life == L_NONE ? LARDER_TTL_NEVER : 100000;
	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;
		int rc = larder_put(r->c, "limit", 5, v, mid, ttl);
		if (rc == LARDER_OK) {
			lo = mid;
			r->writes++;
			r->replaced += (uint64_t)r->limit;
			r->limit = 1;
		} else if (CHECK_RC(rc, LARDER_EVALSIZE)) {
			hi = mid - 1;
		} else {
			break;
		}
	}
	CHECK_GT(lo, r->capacity / 8 * 3 / 4); /* the header, key, deadline and slot take the rest */
	REQUIRE_RC(larder_put(r->c, "limit", 5, v, lo, ttl), LARDER_OK);
	r->writes++;
	r->replaced += (uint64_t)r->limit;
	r->limit = 1;
	CHECK_RC(larder_put(r->c, "limit", 5, v, lo + 1, ttl), LARDER_EVALSIZE);
	CHECK_RC(larder_replace(r->c, "limit", 5, v, lo + 1, ttl), LARDER_EVALSIZE);
	unsigned char *back = malloc(lo);
	size_t vl = 0;
	REQUIRE(back);
	int rc = larder_peek(r->c, "limit", 5, back, lo, &vl);
	if (!r->row.tiny || rc == LARDER_OK) {
		CHECK_RC(rc, LARDER_OK);
		CHECK_EQ(vl, lo);
		CHECK_MEM(back, v, lo);
	}
	free(back);
	free(v);
	check_counts(r, "the entry limit");
}

/* Fills a tiny cache past its capacity with incompressible values. */
static void overfill(struct run *r)
{
	unsigned char v[4096];
	char key[16];
	for (unsigned i = 0; i < 64; i++) {
		value_of(v, sizeof v, 1000 + i, 0);
		int n = snprintf(key, sizeof key, "fill%u", i);
		if (CHECK_RC(larder_put(r->c, key, (size_t)n, v, sizeof v, LARDER_TTL_NEVER),
			     LARDER_OK))
			r->writes++;
	}
	check_counts(r, "the overfill");
	CHECK_GT(stat(r, LARDER_STAT_EVICTIONS), 0);
}

static void round_of_ops(struct run *r, unsigned round)
{
	for (unsigned k = 0; k < NK; k++)
		put(r, k, round + k, (k * 97u + round * 13u) % MAXV, LARDER_TTL_DEFAULT);
	check_counts(r, "the puts");
	for (unsigned k = 0; k < NK; k++)
		check_read(r, k, k + round);
	for (unsigned k = 0; k < NK; k += 3)
		conditional_writes(r, k, round * 8 + k);
	check_counts(r, "the conditional writes");
	/* Touches: none, a long one, the default; an absent key. */
	touch(r, 1, LARDER_TTL_NEVER);
	touch(r, 2, 5000);
	touch(r, 4, LARDER_TTL_DEFAULT);
	CHECK_RC(larder_touch(r->c, "absent", 6, 5), LARDER_MISS);
	check_counts(r, "the touches");
	remove_key(r, 5, 0);
	remove_key(r, 5, 0);
	remove_key(r, 7, 1);
	check_counts(r, "the removals");
	/* Half the default TTL on, read the odd keys (after access: they live
	 * on), then the other half: the keys not read expire. */
	th_clock_advance(&r->clk, DTTL / 2);
	for (unsigned k = 1; k < NK; k += 2)
		check_read(r, k, 2 * k + round);
	th_clock_advance(&r->clk, DTTL / 2);
	model_expire(r);
	check_counts(r, "the expiry");
	for (unsigned k = 0; k < NK; k++)
		check_read(r, k, k + round + 1);
}

/* Opens a cache of r's configuration (in a pool of its own for a member). */
static int open_config(struct run *r, larder **out, larder_pool **pool);

/* An entry of the twin's: one of the model's, byte-exact, its lifetime no
 * longer than the model's. */
struct twin_check {
	struct run *r;
	uint64_t entries;
};

static void twin_entry(void *ctx, const void *key, size_t key_len, const void *value,
		       size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct twin_check *t = ctx;
	struct run *r = t->r;
	unsigned k;
	(void)entry_bytes;
	t->entries++;
	if (key_len != 5 || sscanf((const char *)key, "key%02u", &k) != 1 || k >= NK)
		return;
	if (!CHECK(r->m[k].present) || !CHECK_EQ(value_len, r->m[k].len))
		return;
	CHECK_MEM(value, r->m[k].val, value_len);
	if (r->m[k].deadline == NONE)
		CHECK_EQ(ttl_ms, NONE);
	else
		CHECK_LE(ttl_ms, r->m[k].deadline - now(r));
}

/* The snapshot: a twin of the same configuration loads it (values
 * byte-exact, lifetimes never longer), and the cache loads it over its own
 * keys (each counted REPLACED). */
static void snapshot(struct run *r, unsigned index)
{
	char path[96];
	/* tmpfs where there is one: a disk's fsyncs are slow */
	snprintf(path, sizeof path, "%s/larder_contracts_ops_%d_%u.snap",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid(), index);
	REQUIRE_RC(larder_save(r->c, path), LARDER_OK);
	larder *twin = NULL;
	larder_pool *pool = NULL;
	if (open_config(r, &twin, &pool)) { /* its clock is r's */
		CHECK_RC(larder_load(twin, path), LARDER_OK);
		CHECK_RC(larder_flush(twin, FLUSH_MS), LARDER_OK);
		struct twin_check t = {.r = r};
		larder_iter *it = NULL;
		if (CHECK_RC(larder_iter_open(twin, &it), LARDER_OK)) {
			while (larder_iter_next(it, twin_entry, &t) == LARDER_OK)
				;
			larder_iter_close(it);
		}
		CHECK_EQ(t.entries, th_stat(twin, LARDER_STAT_ENTRIES));
		/* Loaded up to its capacity, nothing evicted, nothing expired (its
		 * clock stands still): each record written is an entry. */
		CHECK_EQ(th_stat(twin, LARDER_STAT_WRITES), t.entries);
		CHECK_EQ(th_stat(twin, LARDER_STAT_EVICTIONS), 0);
		if (!r->row.tiny) /* the keys without a deadline all come back */
			for (unsigned k = 0; k < NK; k++)
				if (live(r, k) && r->m[k].deadline == NONE) {
					char key[16];
					CHECK_RC(larder_contains(twin, key, key_of(key, k)), LARDER_OK);
				}
		larder_close(twin);
		if (pool)
			CHECK_RC(larder_pool_close(pool), LARDER_OK);
	}
	/* Over its own keys: every record loaded counts a write; those over a
	 * live key REPLACED. */
	if (CHECK_RC(larder_flush(r->c, FLUSH_MS), LARDER_OK)) {
		uint64_t w0 = th_stat(r->c, LARDER_STAT_WRITES);
		CHECK_RC(larder_load(r->c, path), LARDER_OK);
		CHECK_RC(larder_flush(r->c, FLUSH_MS), LARDER_OK);
		uint64_t loaded = th_stat(r->c, LARDER_STAT_WRITES) - w0;
		r->writes += loaded;
		/* Each record written replaced a live key of the file's (the
		 * cache clock stands still); records whose time ran out on the
		 * wall clock since the save were dropped, and the others came
		 * back with their lifetimes shortened by it: the model takes the
		 * deadlines the cache now reports. */
		r->replaced += loaded;
		CHECK_LE(loaded, th_stat(r->c, LARDER_STAT_ENTRIES));
		for (unsigned k = 0; k < NK; k++)
			if (live(r, k) && r->m[k].deadline != NONE) {
				char key[16];
				uint64_t ttl = 0;
				if (larder_ttl_remaining(r->c, key, key_of(key, k), &ttl) == LARDER_OK)
					r->m[k].deadline = now(r) + ttl;
			}
	}
	unlink(path);
	check_counts(r, "the loads");
}

/* A clear: the entries live at the call leave CLEARED, one past its
 * deadline at the call (its expiry not yet applied) EXPIRED. */
static void clear_step(struct run *r)
{
	CHECK_RC(larder_put(r->c, "soon", 4, "s", 1, 5), LARDER_OK);
	r->writes++;
	REQUIRE_RC(larder_flush(r->c, FLUSH_MS), LARDER_OK);
	uint64_t entries = th_stat(r->c, LARDER_STAT_ENTRIES);
	uint64_t cleared0 = th_stat(r->c, LARDER_STAT_CLEARED);
	uint64_t expired0 = th_stat(r->c, LARDER_STAT_EXPIRATIONS);
	uint64_t model_expired = r->expired;
	th_clock_advance(&r->clk, 10);
	model_expire(r);
	r->expired++; /* "soon" */
	CHECK_RC(larder_clear(r->c), LARDER_OK);
	uint64_t live_keys = 0;
	for (unsigned k = 0; k < NK; k++)
		if (r->m[k].present) {
			r->m[k].present = 0;
			live_keys++;
		}
	uint64_t limit = (uint64_t)r->limit;
	r->cleared += live_keys + limit;
	r->limit = 0;
	check_counts(r, "the clear");
	CHECK_EQ(th_stat(r->c, LARDER_STAT_ENTRIES), 0);
	uint64_t cleared = th_stat(r->c, LARDER_STAT_CLEARED) - cleared0;
	CHECK_EQ(cleared + th_stat(r->c, LARDER_STAT_EXPIRATIONS) - expired0, entries);
	if (!r->row.tiny) {
		CHECK_EQ(cleared, live_keys + limit);
		CHECK_EQ(th_stat(r->c, LARDER_STAT_EXPIRATIONS) - expired0, r->expired - model_expired);
	}
}

static void capacity_step(struct run *r, unsigned round)
{
	if (r->row.pooled) {
		CHECK_RC(larder_set_capacity(r->c, 64 * KiB), LARDER_ESTATE);
		CHECK_EQ(th_stat(r->c, LARDER_STAT_CAPACITY_BYTES), r->capacity);
		return;
	}
	CHECK_RC(larder_set_capacity(r->c, 64 * KiB - 1), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(r->c, (uint64_t)1 << 62), LARDER_EINVAL);
	for (unsigned k = 0; k < NK; k++)
		put(r, k, round + k, MAXV, LARDER_TTL_NEVER);
	CHECK_RC(larder_set_capacity(r->c, 64 * KiB), LARDER_OK);
	r->row.tiny = 1; /* from here it may evict */
	check_counts(r, "the cut");
	CHECK_EQ(th_stat(r->c, LARDER_STAT_CAPACITY_BYTES), 64 * KiB);
	for (unsigned k = 0; k < NK; k++)
		check_read(r, k, 0);
	CHECK_RC(larder_set_capacity(r->c, r->capacity), LARDER_OK);
	CHECK_EQ(th_stat(r->c, LARDER_STAT_CAPACITY_BYTES), r->capacity);
}

/* ---- Configurations -------------------------------------------------------------- */

static int open_config(struct run *r, larder **out, larder_pool **pool)
{
	const struct cfgrow *row = &r->row;
	larder_config *cfg = NULL;
	int ok = 1;
	*out = NULL;
	*pool = NULL;
	if (row->pooled) {
		larder_pool_config *pc = NULL;
		if (!CHECK_RC(larder_pool_config_create(&pc), LARDER_OK))
			return 0;
		ok &= CHECK_RC(larder_pool_config_set_interval_ms(pc, 0), LARDER_OK);
		ok &= CHECK_RC(larder_pool_config_set_budget(pc, row->tiny ? MiB : 4 * MiB),
			       LARDER_OK);
		ok = ok && CHECK_RC(larder_pool_create(pool, pc), LARDER_OK);
		larder_pool_config_destroy(pc);
		if (!ok)
			return 0;
		ok = CHECK_RC(larder_config_create(&cfg), LARDER_OK);
		ok = ok && CHECK_RC(larder_config_set_pool(cfg, *pool), LARDER_OK);
		/* a tiny member: 1/16 of 1 MiB */
		ok = ok && CHECK_RC(larder_config_set_pool_shares(cfg, 0, row->tiny ? 1.0 / 16 : 1),
				    LARDER_OK);
		ok = ok && CHECK_RC(larder_config_set_hash_seed(cfg, TH_HASH_SEED), LARDER_OK);
		ok = ok && CHECK_RC(larder_config_set_write_wait_ms(cfg, TH_WRITE_WAIT_MS),
				    LARDER_OK);
	} else {
		cfg = th_config(r->capacity);
		ok = cfg != NULL;
	}
	ok = ok && CHECK_RC(larder_config_set_policy(cfg, row->policy), LARDER_OK);
	ok = ok && CHECK_RC(larder_config_set_max_key_bytes(cfg, MAX_KEY), LARDER_OK);
	ok = ok && CHECK_RC(larder_config_set_max_value_bytes(cfg, r->max_value), LARDER_OK);
	ok = ok && CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, &r->clk), LARDER_OK);
	if (row->listener && out == &r->c)
		ok = ok && CHECK_RC(larder_config_set_removal_listener(cfg, on_removal, &r->heard),
				    LARDER_OK);
	if (row->life != L_NONE)
		ok = ok && CHECK_RC(larder_config_set_default_ttl_ms(cfg, DTTL), LARDER_OK);
	if (row->life == L_ACCESS)
		ok = ok && CHECK_RC(larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS),
				    LARDER_OK);
	if (row->codec != C_OFF)
		ok = ok && CHECK_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
	if (row->codec == C_LZ4)
		ok = ok && CHECK_RC(larder_config_set_compression_dictionary(
					    cfg, LARDER_DICTIONARY_NONE, NULL, 0),
				    LARDER_OK);
	if (row->codec == C_GIVEN)
		ok = ok && CHECK_RC(larder_config_set_compression_dictionary(
					    cfg, LARDER_DICTIONARY_GIVEN, given_dict,
					    sizeof given_dict - 1),
				    LARDER_OK);
	if (ok)
		*out = th_open(cfg);
	else
		larder_config_destroy(cfg);
	if (!*out && *pool) {
		CHECK_RC(larder_pool_close(*pool), LARDER_OK);
		*pool = NULL;
	}
	return *out != NULL;
}

static int capacity_reached(void *ctx)
{
	struct run *r = ctx;
	return th_stat(r->c, LARDER_STAT_CAPACITY_BYTES) == r->capacity;
}

static void run_config(const struct cfgrow *row, unsigned index)
{
	static struct run r;
	memset(&r, 0, sizeof r);
	r.row = *row;
	r.capacity = row->tiny ? 64 * KiB : 4 * MiB;
	r.max_value = r.capacity / 4;
	th_clock_init(&r.clk, T0);
	if (!open_config(&r, &r.c, &r.pool))
		return;
	long failures = th_failures();
	/* A pool member grows to its share in the background. */
	CHECK(th_wait_until(capacity_reached, &r, FLUSH_MS));
	bad_inputs(&r);
	if (CHECK_RC(larder_flush(r.c, FLUSH_MS), LARDER_OK))
		CHECK_RC(larder_stats(r.c, r.base, LARDER_STAT_COUNT), LARDER_OK);
	entry_limit(&r);
	for (unsigned round = 0; round < ROUNDS; round++)
		round_of_ops(&r, round * 100);
	if (row->tiny)
		overfill(&r);
	snapshot(&r, index);
	clear_step(&r);
	capacity_step(&r, 300);
	if (th_failures() != failures)
		th_fail(__FILE__, __LINE__,
			"configuration %u: policy %d codec %d life %d tiny %d pooled %d listener %d "
			"shards %u",
			index, (int)row->policy, (int)row->codec, (int)row->life, row->tiny,
			row->pooled, row->listener, row->pooled ? 1 : th_shards());
	larder_close(r.c);
	if (r.pool)
		CHECK_RC(larder_pool_close(r.pool), LARDER_OK);
}

static void test_every_operation_every_option(void)
{
	/* Seven, prime to the other dimensions' sizes: each policy meets
	 * every capacity and pool membership. */
	static const enum larder_policy policies[] = {
		LARDER_POLICY_DEFAULT, LARDER_POLICY_S3FIFO,   LARDER_POLICY_FIFO,
		LARDER_POLICY_LRU,     LARDER_POLICY_WTINYLFU, LARDER_POLICY_ARC,
		LARDER_POLICY_WTINYLFU_TUNED,
	};
	unsigned index = 0;
	for (unsigned codec = C_OFF; codec <= C_TRAIN; codec++)
		for (unsigned life = L_NONE; life <= L_ACCESS; life++)
			for (int tiny = 0; tiny < 2; tiny++)
				for (int pooled = 0; pooled < 2; pooled++, index++) {
					struct cfgrow row = {
						.policy = policies[index % 7],
						.listener = index % 3 != 0,
						.codec = (enum codec)codec,
						.life = (enum life)life,
						.tiny = tiny,
						.pooled = pooled,
					};
					run_config(&row, index);
				}
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_every_operation_every_option),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
