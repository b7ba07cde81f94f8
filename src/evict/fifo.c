/*
 * evict/fifo.c - first in, first out.
 *
 * The simplest policy, and the yardstick the others must beat: one queue in
 * insertion order, hits ignored, the oldest entry is the victim. A
 * replacement keeps the old entry's position. O(1) everything, no metadata
 * beyond the entry's own links (one evict/list.h queue).
 */
#include <stdlib.h>

#include "core/alloc.h"
#include "evict/list.h"
#include "evict/policy.h"

struct larder__policy {
	struct larder__queue q;
	struct larder__policy_host host;
};

static int fifo_create(struct larder__policy **out, const struct larder__policy_host *host,
		       uint64_t capacity_bytes, uint64_t expected_entries)
{
	(void)capacity_bytes;
	(void)expected_entries;
	struct larder__policy *p = larder__calloc(1, sizeof(*p));
	if (!p)
		return LARDER_ENOMEM;
	larder__queue_init(&p->q, host->dir);
	p->host = *host;
	*out = p;
	return LARDER_OK;
}

static void fifo_destroy(struct larder__policy *p)
{
	free(p);
}

static void fifo_insert(struct larder__policy *p, struct larder__entry *e, uint64_t hash,
			size_t bytes)
{
	(void)hash;
	larder__queue_push(&p->q, e, bytes);
}

/* POLICY-P6: the entries as one run, spliced at once. */
static void fifo_insert_batch(struct larder__policy *p, const struct larder__policy_new *in,
			      size_t n)
{
	struct larder__run run;
	larder__run_init(&run);
	for (size_t i = 0; i < n; i++)
		larder__run_push(&run, in[i].e, in[i].bytes);
	larder__queue_splice(&p->q, &run);
}

static void fifo_replace(struct larder__policy *p, struct larder__entry *old,
			 struct larder__entry *e, size_t old_bytes, size_t bytes)
{
	larder__queue_swap(&p->q, old, e, old_bytes, bytes);
}

static void fifo_hit(struct larder__policy *p, struct larder__entry *e)
{
	(void)p;
	(void)e;
}

static void fifo_remove(struct larder__policy *p, struct larder__entry *e, size_t bytes)
{
	larder__queue_unlink(&p->q, e, bytes);
}

static struct larder__entry *fifo_evict(struct larder__policy *p, uint64_t *hash)
{
	struct larder__entry *e = larder__queue_oldest(&p->q);
	if (e) {
		larder__queue_unlink(&p->q, e, p->host.size(p->host.ctx, e));
		larder__policy_victim_hash(&p->host, e, hash);
	}
	return e;
}

static int64_t fifo_check(struct larder__policy *p)
{
	return larder__queue_check(&p->q, p->host.size, p->host.ctx);
}

static void fifo_set_capacity(struct larder__policy *p, uint64_t capacity_bytes)
{
	(void)p;
	(void)capacity_bytes;
}

const struct larder__policy_ops larder__policy_fifo = {
	.name = "fifo",
	.hits_keep_awake = 0,
	.create = fifo_create,
	.destroy = fifo_destroy,
	.insert = fifo_insert,
	.insert_batch = fifo_insert_batch,
	.replace = fifo_replace,
	.hit = fifo_hit,
	.remove = fifo_remove,
	.evict = fifo_evict,
	.set_capacity = fifo_set_capacity,
	.check = fifo_check,
};
