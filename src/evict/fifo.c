/*
 * evict/fifo.c - first in, first out.
 *
 * The simplest policy, and the yardstick the others must beat: one queue in
 * insertion order, hits ignored, the oldest entry is the victim. A
 * replacement keeps the old entry's position. O(1) everything, no metadata
 * beyond the entry's own links.
 */
#include <stdlib.h>

#include "evict/policy.h"

struct larder__policy {
	struct larder__entry head; /* sentinel: head.next is the oldest */
	struct larder__policy_host host;
};

static int fifo_create(struct larder__policy **out, const struct larder__policy_host *host,
		       uint64_t capacity_bytes, uint64_t expected_entries)
{
	(void)capacity_bytes;
	(void)expected_entries;
	struct larder__policy *p = calloc(1, sizeof(*p));
	if (!p)
		return LARDER_ENOMEM;
	p->head.next = p->head.prev = &p->head;
	p->host = *host;
	*out = p;
	return LARDER_OK;
}

static void fifo_destroy(struct larder__policy *p)
{
	free(p);
}

static void link_before(struct larder__entry *at, struct larder__entry *e)
{
	e->next = at;
	e->prev = at->prev;
	at->prev->next = e;
	at->prev = e;
}

static void unlink_entry(struct larder__entry *e)
{
	e->prev->next = e->next;
	e->next->prev = e->prev;
	e->next = e->prev = NULL;
}

static void fifo_insert(struct larder__policy *p, struct larder__entry *e, uint64_t hash,
			size_t bytes)
{
	(void)hash;
	(void)bytes;
	link_before(&p->head, e);
}

static void fifo_replace(struct larder__policy *p, struct larder__entry *old,
			 struct larder__entry *e, size_t old_bytes, size_t bytes)
{
	(void)p;
	(void)old_bytes;
	(void)bytes;
	link_before(old, e);
	unlink_entry(old);
}

static void fifo_hit(struct larder__policy *p, struct larder__entry *e)
{
	(void)p;
	(void)e;
}

static void fifo_remove(struct larder__policy *p, struct larder__entry *e, size_t bytes)
{
	(void)p;
	(void)bytes;
	unlink_entry(e);
}

static struct larder__entry *fifo_evict(struct larder__policy *p)
{
	struct larder__entry *e = p->head.next;
	if (e == &p->head)
		return NULL;
	unlink_entry(e);
	return e;
}

static void fifo_set_capacity(struct larder__policy *p, uint64_t capacity_bytes)
{
	(void)p;
	(void)capacity_bytes;
}

const struct larder__policy_ops larder__policy_fifo = {
	.name = "fifo",
	.create = fifo_create,
	.destroy = fifo_destroy,
	.insert = fifo_insert,
	.replace = fifo_replace,
	.hit = fifo_hit,
	.remove = fifo_remove,
	.evict = fifo_evict,
	.set_capacity = fifo_set_capacity,
};
