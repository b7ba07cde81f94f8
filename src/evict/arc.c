/*
 * evict/arc.c - ARC, the Adaptive Replacement Cache (Megiddo and Modha,
 * "ARC: A Self-Tuning, Low Overhead Replacement Cache", FAST 2003), in bytes.
 *
 * Four lists, as in the paper's Figure 4:
 *   T1  entries seen once recently (LRU, in the entries' own links);
 *   T2  entries seen at least twice recently;
 *   B1  ghosts of keys evicted from T1, B2 ghosts of keys evicted from T2:
 *       fingerprints and weights only (evict/ghost.c), in eviction order,
 *       which is exactly their LRU order since ghosts are never touched.
 * p is the target size of T1 in bytes. A ghost hit in B1 (a key evicted from
 * T1 too soon) grows p by the request's bytes, times |B2|/|B1| when B2 is
 * larger; a hit in B2 shrinks it symmetrically. The paper counts pages; with
 * unit sizes this is exactly the paper's algorithm.
 *
 * Mapping onto the maintainer's insert-then-evict: insert() does the paper's
 * "case II/III/IV" bookkeeping (p, ghost trimming) and links the entry;
 * evict() does REPLACE. REPLACE looks at |T1| without the latest insert, as the
 * paper (which replaces before fetching) does; `fresh` remembers it.
 *
 * Invariants:
 *   ARC-A1. Each linked entry is in T1 or T2 (its T2 bit); bytes add up per list.
 *   ARC-A2. 0 <= p <= capacity.
 *   ARC-A3. Ghost weight: B1 <= capacity and B1 + B2 <= 2 x capacity after an
 *       insert (paper: |T1|+|B1| <= c, |T1|+|T2|+|B1|+|B2| <= 2c), so ghosts
 *       stay within a constant factor of the entries that fit (policy.h POLICY-P4).
 *   ARC-A4. Every call is O(1) amortised (each ghost is popped at most once, and
 *       each accessed bit taken costs one move).
 *   ARC-A5. T1's LRU leaves without a ghost (case IV.A, |T1| = c) only in the
 *       first evict() after a case-IV insert, and only if T1 and that key
 *       still overflow the capacity with B1 empty then; never for a request
 *       older than the latest insert.
 *
 * Accessed bit (policy.h POLICY-P5): hit() takes it, so a set bit means a hit whose
 * event has not arrived. Before REPLACE, evict() applies those hits to the
 * LRU ends of T1 and T2 (to T2's MRU end, as hit() would), until both ends
 * are entries not hit since; the latest insert is left alone. With every hit
 * delivered at once no bit is set there, and this is the paper's ARC.
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "evict/ghost.h"
#include "evict/list.h"
#include "evict/policy.h"

enum { ARC_T2 = 1 };

struct larder__policy {
	struct larder__policy_host host;
	struct larder__queue t1, t2;
	struct larder__ghost b1, b2;
	uint64_t capacity;
	uint64_t p;
	int hit_b2;           /* the latest insert was a B2 ghost hit */
	int case_iv;          /* the latest insert was case IV, its REPLACE not yet run */
	struct larder__entry *fresh; /* the latest insert, until it leaves */
	uint64_t fresh_bytes;
};

static uint64_t bytes_of(struct larder__policy *p, const struct larder__entry *e)
{
	return p->host.size(p->host.ctx, e);
}

static int arc_create(struct larder__policy **out, const struct larder__policy_host *host,
		      uint64_t capacity_bytes, uint64_t expected_entries)
{
	struct larder__policy *p = larder__calloc(1, sizeof *p);
	if (!p)
		return LARDER_ENOMEM;
	p->host = *host;
	p->capacity = capacity_bytes ? capacity_bytes : 1;
	larder__queue_init(&p->t1, host->dir);
	larder__queue_init(&p->t2, host->dir);
	/* Bounds are enforced here by hand (ARC-A3); the ghosts' own bounds are a backstop. */
	if (larder__ghost_init(&p->b1, p->capacity, expected_entries) != 0)
		goto fail_b1;
	if (larder__ghost_init(&p->b2, 2 * p->capacity, expected_entries) != 0)
		goto fail_b2;
	*out = p;
	return LARDER_OK;
fail_b2:
	larder__ghost_destroy(&p->b1);
fail_b1:
	free(p);
	return LARDER_ENOMEM;
}

static void arc_destroy(struct larder__policy *p)
{
	larder__ghost_destroy(&p->b1);
	larder__ghost_destroy(&p->b2);
	free(p);
}

static struct larder__queue *list_of(struct larder__policy *p, const struct larder__entry *e)
{
	return (larder__pbits(e) & ARC_T2) ? &p->t2 : &p->t1;
}

static uint64_t ratio_step(uint64_t bytes, uint64_t num, uint64_t den)
{
	/* bytes x max(1, num/den), integer as the paper's page counts are */
	if (den == 0 || num <= den)
		return bytes;
	return bytes * (num / den);
}

/* Case IV of the paper: a key in no list; trims the ghosts before it is
 * fetched. Case IV.A's other arm (|T1| = c, B1 empty: drop T1's LRU) is
 * evict()'s, which judges it when it runs (l1_full). */
static void make_ghost_room(struct larder__policy *p, uint64_t bytes)
{
	uint64_t c = p->capacity;
	if (p->t1.bytes + p->b1.live_weight + bytes > c) {
		while (p->b1.live_weight && p->t1.bytes + p->b1.live_weight + bytes > c)
			larder__ghost_pop_oldest(&p->b1);
	} else {
		uint64_t total = p->t1.bytes + p->t2.bytes + p->b1.live_weight + p->b2.live_weight;
		while (p->b2.live_weight && total + bytes > 2 * c) {
			total -= larder__ghost_pop_oldest(&p->b2);
		}
	}
}

static void arc_insert(struct larder__policy *p, struct larder__entry *e, uint64_t hash,
		       size_t bytes)
{
	uint32_t fp = larder__ghost_fp(hash);
	uint64_t w1 = p->b1.live_weight, w2 = p->b2.live_weight;
	p->hit_b2 = 0;
	p->case_iv = 0;
	if (larder__ghost_remove(&p->b1, fp)) {
		uint64_t d = ratio_step(bytes, w2, w1);
		p->p = (p->p + d > p->capacity) ? p->capacity : p->p + d;
		larder__set_pbits(e, ARC_T2);
		larder__queue_push(&p->t2, e, bytes);
	} else if (larder__ghost_remove(&p->b2, fp)) {
		uint64_t d = ratio_step(bytes, w1, w2);
		p->p = (d > p->p) ? 0 : p->p - d;
		p->hit_b2 = 1;
		larder__set_pbits(e, ARC_T2);
		larder__queue_push(&p->t2, e, bytes);
	} else {
		make_ghost_room(p, bytes);
		p->case_iv = 1;
		larder__set_pbits(e, 0);
		larder__queue_push(&p->t1, e, bytes);
	}
	p->fresh = e;
	p->fresh_bytes = bytes;
}

static void arc_replace(struct larder__policy *p, struct larder__entry *old,
			struct larder__entry *e, size_t old_bytes, size_t bytes)
{
	larder__init_pbits(e, larder__pbits(old));
	larder__queue_swap(list_of(p, old), old, e, old_bytes, bytes);
	if (p->fresh == old) {
		p->fresh = e;
		p->fresh_bytes = bytes;
	}
	/* A write is a request: move to T2's MRU end, as a hit would. */
	larder__queue_unlink(list_of(p, e), e, bytes);
	larder__set_pbits(e, ARC_T2);
	larder__queue_push(&p->t2, e, bytes);
}

static void arc_hit(struct larder__policy *p, struct larder__entry *e)
{
	larder__entry_take_accessed(e);
	if (larder__pbits(e) & ARC_T2) {
		larder__queue_touch(&p->t2, e);
		return;
	}
	uint64_t bytes = bytes_of(p, e);
	larder__queue_unlink(&p->t1, e, bytes);
	larder__set_pbits(e, ARC_T2);
	larder__queue_push(&p->t2, e, bytes);
}

static void arc_remove(struct larder__policy *p, struct larder__entry *e, size_t bytes)
{
	if (p->fresh == e)
		p->fresh = NULL;
	larder__queue_unlink(list_of(p, e), e, bytes);
}

/* Unlinks the LRU of q, remembering it in ghost g (NULL: no ghost); its
 * hash goes to *hash unless hash is NULL (POLICY-P7). */
static struct larder__entry *take_lru(struct larder__policy *p, struct larder__queue *q,
				      struct larder__ghost *g, uint64_t *hash)
{
	struct larder__entry *e = larder__queue_oldest(q);
	if (!e)
		return NULL;
	uint64_t bytes = bytes_of(p, e);
	larder__queue_unlink(q, e, bytes);
	if (!g) {
		larder__policy_victim_hash(&p->host, e, hash);
		return e;
	}
	uint64_t h = p->host.hash(p->host.ctx, e);
	larder__ghost_insert(g, larder__ghost_fp(h),
			     bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes);
	if (hash)
		*hash = h;
	return e;
}

/* Applies the hits still in flight (accessed bits) to the LRU ends of T1 and T2. */
static void settle_lru_ends(struct larder__policy *p)
{
	struct larder__entry *e;
	for (;;) {
		if ((e = larder__queue_oldest(&p->t1)) != NULL && e != p->fresh &&
		    larder__entry_take_accessed(e))
			arc_hit(p, e);
		else if ((e = larder__queue_oldest(&p->t2)) != NULL && p->t2.count > 1 &&
			 larder__entry_take_accessed(e))
			larder__queue_touch(&p->t2, e);
		else
			return;
	}
}

/*
 * Case IV.A's drop (ARC-A5): the latest insert missed every list, B1 is
 * empty and T1 with the missed key does not fit, |T1| = c in the paper's
 * pages. Judged on the lists as they are when REPLACE runs (hits in flight
 * applied, entries removed since), and only for the first eviction after
 * that insert: the paper drops one page per miss, at the miss.
 */
static int l1_full(struct larder__policy *p, uint64_t t1)
{
	struct larder__entry *t1_lru = larder__queue_oldest(&p->t1);
	return p->fresh && p->b1.live_weight == 0 && t1 + p->fresh_bytes > p->capacity &&
	       t1_lru && t1_lru != p->fresh;
}

static struct larder__entry *arc_evict(struct larder__policy *p, uint64_t *hash)
{
	struct larder__entry *e = NULL;
	settle_lru_ends(p);
	uint64_t t1 = p->t1.bytes;
	if (p->fresh && !(larder__pbits(p->fresh) & ARC_T2))
		t1 -= p->fresh_bytes; /* REPLACE runs before the fetch in the paper */
	int drop = p->case_iv && l1_full(p, t1);
	p->case_iv = 0;
	if (drop) {
		e = take_lru(p, &p->t1, NULL, hash);
	} else if (t1 > 0 && ((p->hit_b2 && t1 == p->p) || t1 > p->p)) {
		e = take_lru(p, &p->t1, &p->b1, hash);
	} else {
		e = take_lru(p, &p->t2, &p->b2, hash);
		if (!e)
			e = take_lru(p, &p->t1, &p->b1, hash);
	}
	if (e && e == p->fresh)
		p->fresh = NULL;
	return e;
}

static void arc_set_capacity(struct larder__policy *p, uint64_t capacity_bytes)
{
	p->capacity = capacity_bytes ? capacity_bytes : 1;
	if (p->p > p->capacity)
		p->p = p->capacity;
	larder__ghost_set_bound(&p->b1, p->capacity);
	larder__ghost_set_bound(&p->b2, 2 * p->capacity);
}

static int64_t arc_check(struct larder__policy *p)
{
	int64_t a = larder__queue_check(&p->t1, p->host.size, p->host.ctx);
	int64_t b = larder__queue_check(&p->t2, p->host.size, p->host.ctx);
	return a < 0 || b < 0 ? -1 : a + b;
}

const struct larder__policy_ops larder__policy_arc = {
	.name = "arc",
	.hits_keep_awake = 0,
	.create = arc_create,
	.destroy = arc_destroy,
	.insert = arc_insert,
	.replace = arc_replace,
	.hit = arc_hit,
	.remove = arc_remove,
	.evict = arc_evict,
	.set_capacity = arc_set_capacity,
	.check = arc_check,
};
