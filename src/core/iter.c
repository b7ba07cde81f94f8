/*
 * core/iter.c - cursors over the live entries of a cache (larder_iter_*).
 *
 * Design. The cursor walks each shard's index in turn (core/shard.h), and
 * in each the space of home keys (bits 16..47 of the keyed
 * hash, index/scan.h) in ranges of about CHUNK_BUCKETS buckets of the
 * current index. For each range it collects, in one read section, the keys
 * of every entry homed there (larder__table_scan_homes_rcu) and drops the
 * keys it saw twice (a key moved by a resize during the scan, or removed
 * and written again into a later slot), with a small hash set of the
 * range's keys; then each larder_iter_next() looks one
 * key up again, in its own read section, and hands the entry it finds to
 * the callback if it is live. The cursor holds keys, never entry pointers,
 * across read sections, so no memory is held past a grace period and
 * nothing of the cache is locked or pinned.
 *
 * Invariants (tests/unit/test_iter.c and tests/stress/stress_iter.c check
 * them):
 *   ITER-I1. A key is handed out at most once per cursor: its home key lies in
 *       exactly one range, ranges are disjoint and visited once in order,
 *       and duplicates within a range are dropped.
 *   ITER-I2. A key whose entry is live from larder_iter_open() to the end is
 *       handed out: its range is scanned after the open, the scan reports
 *       every entry present throughout (SCAN-S1, index/scan.c), and the lookup
 *       before the callback finds it.
 *   ITER-I3. Nothing expired or absent at the lookup is handed out: the lookup
 *       is the read path's (index, then the deadline against the clock).
 *   ITER-I4. Memory is bounded by the keys homed in one range: about
 *       CHUNK_BUCKETS x 7 keys at the index's design load (index/table.h
 *       TABLE-L1), whatever the cache's size; a range is sized from the root
 *       table when it is collected, so a growing index gets narrower ranges.
 * Not guaranteed: a point-in-time view (keys written during the walk may or
 * may not appear, with the value they have when handed out).
 *
 * The range mode (larder__iter_next_range, core/iter.h), for larder_save:
 * each range's entries go to the callback inside the read section that
 * found them, without the second lookup: half the cache misses per entry.
 * ITER-I1, ITER-I2 and ITER-I4 hold as above; ITER-I3 weakens to "present in the index during
 * the range's scan, and not expired at the callback" (an entry removed
 * between the scan and the callback may still be handed out).
 *   ITER-I5. The range mode hands out no more than the caller's `more`
 *       allows in one call (at least one entry, so each call progresses):
 *       the rest of the range waits as keys, each looked up again in a
 *       later call as larder_iter_next does (ITER-I3 whole for them). So a
 *       saver's buffer holds what it asked for, not a whole range (64
 *       buckets of 1 MiB values: hundreds of MiB).
 */
#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/compress.h"
#include "core/hash.h"
#include "core/iter.h"
#include "core/thread.h"
#include "index/scan.h"
#include "index/table.h"
#include "mem/slab.h"

/* Buckets of the root table one range covers (ITER-I4). */
#define CHUNK_BUCKETS 64u

struct key_ref {
	uint64_t hash;
	size_t offset; /* into the cursor's key bytes */
	size_t len;
	struct larder__entry *entry; /* valid only inside the collecting read section */
};

struct larder_iter {
	larder *cache;
	unsigned shard;  /* the shard whose index is walked (core/shard.h), in order */
	uint64_t cursor; /* its first home key not yet collected; HOME_KEY_END at the end
			  * of the last shard */
	struct key_ref *refs;
	size_t count, next, refs_cap;
	unsigned char *bytes;
	size_t bytes_used, bytes_cap;
	uint32_t *set; /* drop_duplicates' hash set */
	size_t set_cap;
	int failed; /* set by collect_entry on ENOMEM */
};

int larder_iter_open(larder *cache, larder_iter **out)
{
	if (out)
		*out = NULL;
	if (!cache || !out)
		return LARDER_EINVAL;
	larder_iter *it = larder__calloc(1, sizeof(*it));
	if (!it)
		return LARDER_ENOMEM;
	it->cache = cache;
	*out = it;
	return LARDER_OK;
}

void larder_iter_close(larder_iter *it)
{
	if (!it)
		return;
	free(it->refs);
	free(it->bytes);
	free(it->set);
	free(it);
}

static uint64_t entry_hash(void *ctx, const struct larder__entry *e)
{
	const larder *c = ctx;
	return larder__hash(c->seed, larder__entry_key((struct larder__entry *)e), e->key_len);
}

static int grow(void **p, size_t *cap, size_t need, size_t unit)
{
	if (need <= *cap)
		return 0;
	size_t n = *cap ? *cap : 64;
	while (n < need)
		n *= 2;
	void *q = larder__realloc(*p, n * unit);
	if (!q)
		return -1;
	*p = q;
	*cap = n;
	return 0;
}

/* Inside the scan's read section: keeps e's key (ITER-I1's duplicates go later). */
static int collect_entry(void *ctx, struct larder__entry *e, uint64_t hash)
{
	larder_iter *it = ctx;
	size_t len = e->key_len;
	if (grow((void **)&it->refs, &it->refs_cap, it->count + 1, sizeof(*it->refs)) ||
	    grow((void **)&it->bytes, &it->bytes_cap, it->bytes_used + len, 1)) {
		it->failed = 1;
		return 1;
	}
	memcpy(it->bytes + it->bytes_used, larder__entry_key(e), len);
	it->refs[it->count++] = (struct key_ref){ hash, it->bytes_used, len, e };
	it->bytes_used += len;
	return 0;
}

static int ref_equal(const larder_iter *it, const struct key_ref *a, const struct key_ref *b)
{
	return a->hash == b->hash && a->len == b->len &&
	       memcmp(it->bytes + a->offset, it->bytes + b->offset, a->len) == 0;
}

/* ITER-I1: keeps the first of each key, in a set of ref indexes + 1 (0: empty)
 * at least twice the range's size, open addressing on the hash. */
static int drop_duplicates(larder_iter *it)
{
	size_t want = 16;
	while (want < 2 * it->count)
		want *= 2;
	if (want > it->set_cap) {
		uint32_t *s = larder__realloc(it->set, want * sizeof(*s));
		if (!s)
			return -1;
		it->set = s;
		it->set_cap = want;
	}
	memset(it->set, 0, want * sizeof(*it->set));
	size_t kept = 0;
	for (size_t i = 0; i < it->count; i++) {
		const struct key_ref *r = &it->refs[i];
		size_t at = (size_t)r->hash & (want - 1);
		int dup = 0;
		for (; it->set[at]; at = (at + 1) & (want - 1)) {
			if (ref_equal(it, &it->refs[it->set[at] - 1], r)) {
				dup = 1;
				break;
			}
		}
		if (dup)
			continue;
		it->refs[kept] = *r;
		it->set[at] = (uint32_t)++kept;
	}
	it->count = kept;
	return 0;
}

/* ITER-I3: the deadline judged as a read judges it; *ttl_ms gets what is left. */
static int entry_live(larder *c, struct larder__entry *e, uint64_t *ttl_ms)
{
	*ttl_ms = LARDER_TTL_NEVER;
	uint64_t deadline_ms = larder__entry_deadline(e);
	if (deadline_ms == UINT64_MAX)
		return 1;
	uint64_t now_ms = c->clock(c->clock_ctx);
	if (now_ms >= deadline_ms)
		return 0;
	*ttl_ms = deadline_ms - now_ms;
	return 1;
}

/*
 * Hands e to fn if it is live, with its value's plain bytes (a compressed
 * one decompressed into the thread's scratch buffer, core/compress.h COMPRESS-C3):
 * LARDER_OK when handed out, LARDER_MISS when not live, LARDER_ENOMEM when
 * that buffer could not be had (fn not called).
 */
static int hand_out(larder *c, struct larder__entry *e, larder_iter_fn *fn, void *ctx)
{
	uint64_t ttl_ms;
	if (!entry_live(c, e, &ttl_ms))
		return LARDER_MISS;
	unsigned f = larder__entry_flags(e);
	unsigned char *scratch;
	const unsigned char *value = larder__entry_plain_rcu(c, e, f, &scratch);
	if (!value)
		return LARDER_ENOMEM;
	fn(ctx, larder__entry_key(e), e->key_len, value, larder__entry_plain_len(e, f), ttl_ms,
	   larder__slab_charge(larder__entry_size(e)));
	larder__scratch_give(scratch);
	return LARDER_OK;
}

/*
 * Collects the next range's keys in one read section. With fn, also hands
 * the live entries found to fn inside that same section (the range mode),
 * as long as more(ctx) allows after the first (ITER-I5); those left wait
 * in the cursor.
 */
static int collect_range(larder_iter *it, struct larder__thread *th, larder_iter_fn *fn,
			 larder__iter_more_fn *more, void *ctx)
{
	larder *c = it->cache;
	it->count = it->next = it->bytes_used = 0;
	it->failed = 0;
	uint64_t outer = larder__read_enter(&th->reader);
	/* A-ROOT: acquire, pairs with R-ROOT (larder_clear, end of growth). */
	struct larder__table *t = (struct larder__table *)atomic_load_explicit(
		c->shard[it->shard].table, LARDER__ACQUIRE);
	uint64_t width = (LARDER__HOME_KEY_END * CHUNK_BUCKETS) / (t->last + 1);
	uint64_t lo = it->cursor;
	uint64_t hi = width >= LARDER__HOME_KEY_END - lo ? LARDER__HOME_KEY_END : lo + width;
	(void)larder__table_scan_homes_rcu(t, lo, hi, entry_hash, c, collect_entry, it);
	int rc = it->failed || drop_duplicates(it) != 0 ? LARDER_ENOMEM : LARDER_OK;
	int handed = LARDER_OK;
	if (rc == LARDER_OK && fn) {
		size_t i = 0;
		for (; i < it->count && (i == 0 || more(ctx)); i++) {
			if (hand_out(c, it->refs[i].entry, fn, ctx) == LARDER_ENOMEM) {
				handed = LARDER_ENOMEM;
				break;
			}
		}
		/* ITER-I5: the rest wait as keys; ITER-I1: so does the one that
		 * found no buffer, so a retry hands out only what is left. */
		it->next = i;
	}
	larder__read_exit(&th->reader, outer);
	if (rc != LARDER_OK) {
		it->count = it->next = 0;
		return rc; /* nothing handed out, the cursor at lo: a retry rescans it */
	}
	it->cursor = hi;
	if (hi == LARDER__HOME_KEY_END && it->shard + 1 < c->shard_count) {
		it->shard++; /* ITER-I1: a key lives in its hash's shard only */
		it->cursor = 0;
	}
	return handed;
}

/* Collects ranges until one holds a key or the space is done. */
static int collect(larder_iter *it, struct larder__thread *th)
{
	while (it->count == it->next && it->cursor < LARDER__HOME_KEY_END) {
		int rc = collect_range(it, th, NULL, NULL, NULL);
		if (rc != LARDER_OK)
			return rc;
	}
	return LARDER_OK;
}

/* Looks the key of r up again and hands its entry to fn if it is live
 * (ITER-I3), in the caller's read section: hand_out()'s results. */
static int hand_out_key(larder_iter *it, const struct key_ref *r, larder_iter_fn *fn, void *ctx)
{
	larder *c = it->cache;
	/* A-ROOT: acquire, pairs with R-ROOT (larder_clear, end of growth). */
	struct larder__table *t = (struct larder__table *)atomic_load_explicit(
		larder__shard_of(c, r->hash)->table, LARDER__ACQUIRE);
	uint64_t w = larder__table_lookup_rcu(t, r->hash, it->bytes + r->offset, r->len);
	struct larder__entry *e = w ? larder__slot_entry(w) : NULL;
	return e ? hand_out(c, e, fn, ctx) : LARDER_MISS;
}

/* ITER-I5: the keys a range left waiting, in one read section, as long as
 * more(ctx) allows after the first. */
static int hand_out_waiting(larder_iter *it, struct larder__thread *th, larder_iter_fn *fn,
			    larder__iter_more_fn *more, void *ctx)
{
	int rc = LARDER_OK;
	uint64_t outer = larder__read_enter(&th->reader);
	for (size_t i = 0; it->next < it->count && (i == 0 || more(ctx)); i++) {
		if (hand_out_key(it, &it->refs[it->next], fn, ctx) == LARDER_ENOMEM) {
			rc = LARDER_ENOMEM; /* this key again on the retry */
			break;
		}
		it->next++;
	}
	larder__read_exit(&th->reader, outer);
	return rc;
}

int larder__iter_next_range(larder_iter *it, larder_iter_fn *fn, larder__iter_more_fn *more,
			    void *ctx)
{
	struct larder__thread *th = larder__thread_self();
	if (!th)
		return LARDER_ENOMEM;
	if (it->next < it->count)
		return hand_out_waiting(it, th, fn, more, ctx);
	if (it->cursor >= LARDER__HOME_KEY_END)
		return LARDER_MISS;
	return collect_range(it, th, fn, more, ctx);
}

int larder_iter_next(larder_iter *it, larder_iter_fn *fn, void *ctx)
{
	if (!it || !fn)
		return LARDER_EINVAL;
	struct larder__thread *th = larder__thread_self();
	if (!th)
		return LARDER_ENOMEM;
	for (;;) {
		int rc = collect(it, th);
		if (rc != LARDER_OK)
			return rc;
		if (it->next == it->count)
			return LARDER_MISS;
		const struct key_ref *r = &it->refs[it->next++];
		uint64_t outer = larder__read_enter(&th->reader);
		rc = hand_out_key(it, r, fn, ctx);
		larder__read_exit(&th->reader, outer);
		if (rc == LARDER_ENOMEM)
			it->next--; /* the cursor unchanged: a retry looks this key up again */
		if (rc != LARDER_MISS)
			return rc;
	}
}
