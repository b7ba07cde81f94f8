/*
 * evict/lru.c - least recently used.
 *
 * One queue (evict/list.h): insert and hit move the entry to the newest end,
 * evict takes the oldest. With every hit delivered, this is exact LRU and
 * reproduces the reference simulator's LRU miss ratios (tests/sim). With hits
 * sampled (maint/events.h: the lossy hit ring), an entry's recency is that of its last sampled
 * hit: the lossiness is what the simulator's sampling mode measures.
 * Accessed bit (policy.h POLICY-P5): hit() takes it, so a set bit means a hit whose
 * event has not arrived (late, or lost); evict() gives the oldest entry with
 * a set bit the move its hit would have made, marks it LRU_FOLDED, and looks
 * again. The late sample of that hit, when it comes with no new bit set, is
 * skipped: moving the entry a second time, to where the sample arrives,
 * kept entries hit once for two lifetimes (cloudphysics_w106 at 275 objects,
 * --hit-ring 1024:1024: +1.06 points against every hit delivered; +0.95
 * with the skip). With every hit delivered at once no bit is ever set at
 * evict(): exact LRU still.
 *
 * Invariants:
 *   LRU-L1. Every linked entry is in the one queue; q.bytes is their
 *       charged bytes.
 *   LRU-L2. Every operation is O(1), except that evict() moves one entry per
 *       bit it takes (amortised O(1): each bit was set by a hit).
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "evict/list.h"
#include "evict/policy.h"

enum {
	LRU_FOLDED = 1, /* evict() applied a hit whose sample had not come */
};

struct larder__policy {
	struct larder__queue q;
	struct larder__policy_host host;
};

static int lru_create(struct larder__policy **out, const struct larder__policy_host *host,
		      uint64_t capacity_bytes, uint64_t expected_entries)
{
	(void)capacity_bytes;
	(void)expected_entries;
	struct larder__policy *p = larder__malloc(sizeof *p);
	if (!p)
		return LARDER_ENOMEM;
	larder__queue_init(&p->q, host->dir);
	p->host = *host;
	*out = p;
	return LARDER_OK;
}

static void lru_destroy(struct larder__policy *p)
{
	free(p);
}

static void lru_insert(struct larder__policy *p, struct larder__entry *e, uint64_t hash,
		       size_t bytes)
{
	(void)hash;
	larder__set_pbits(e, 0);
	larder__queue_push(&p->q, e, bytes);
}

/* POLICY-P6: the entries as one run, spliced at once. */
static void lru_insert_batch(struct larder__policy *p, const struct larder__policy_new *in,
			     size_t n)
{
	struct larder__run run;
	larder__run_init(&run);
	for (size_t i = 0; i < n; i++) {
		larder__set_pbits(in[i].e, 0);
		larder__run_push(&run, in[i].e, in[i].bytes);
	}
	larder__queue_splice(&p->q, &run);
}

static void lru_replace(struct larder__policy *p, struct larder__entry *old,
			struct larder__entry *e, size_t old_bytes, size_t bytes)
{
	larder__init_pbits(e, larder__pbits(old));
	larder__queue_swap(&p->q, old, e, old_bytes, bytes);
	/* A write is an access: the new value is the most recently used. */
	larder__queue_touch(&p->q, e);
}

static void lru_hit(struct larder__policy *p, struct larder__entry *e)
{
	int marked = larder__entry_take_accessed(e);
	if (larder__pbits(e) & LRU_FOLDED) {
		larder__set_pbits(e, 0);
		if (!marked)
			return; /* the sample of the hit evict() already applied */
	}
	larder__queue_touch(&p->q, e);
}

static void lru_remove(struct larder__policy *p, struct larder__entry *e, size_t bytes)
{
	larder__queue_unlink(&p->q, e, bytes);
}

static struct larder__entry *lru_evict(struct larder__policy *p, uint64_t *hash)
{
	struct larder__entry *e;
	while ((e = larder__queue_oldest(&p->q)) != NULL && p->q.count > 1 &&
	       larder__entry_take_accessed(e)) {
		larder__set_pbits(e, LRU_FOLDED);
		larder__queue_touch(&p->q, e);
	}
	if (!e)
		return NULL;
	larder__queue_unlink(&p->q, e, p->host.size(p->host.ctx, e));
	larder__policy_victim_hash(&p->host, e, hash);
	return e;
}

static void lru_set_capacity(struct larder__policy *p, uint64_t capacity_bytes)
{
	(void)p;
	(void)capacity_bytes;
}

static int64_t lru_check(struct larder__policy *p)
{
	return larder__queue_check(&p->q, p->host.size, p->host.ctx);
}

const struct larder__policy_ops larder__policy_lru = {
	.name = "lru",
	.hits_keep_awake = 0,
	.create = lru_create,
	.destroy = lru_destroy,
	.insert = lru_insert,
	.insert_batch = lru_insert_batch,
	.replace = lru_replace,
	.hit = lru_hit,
	.remove = lru_remove,
	.evict = lru_evict,
	.set_capacity = lru_set_capacity,
	.check = lru_check,
};
