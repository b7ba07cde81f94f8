/*
 * evict/list.h - the intrusive queue every policy builds on.
 *
 * A queue threads entries through their own prev/next fields (core/entry.h,
 * ENTRY-E3: the maintainer's alone), so a policy allocates nothing per entry.
 * Direction: head is the oldest end (FIFO front, LRU end), tail the newest;
 * e->prev points toward the head, e->next toward the tail.
 *
 * Links are 32-bit entry ids (core/entry.h ENTRY-E5, mem/pagedir.h), 0 for none;
 * the queue translates them through its directory, one load per neighbour
 * it touches. An entry's own id is needed when it joins a queue: an entry
 * in no queue carries it in its next field (ENTRY-E6: the creating writer puts it
 * there, and unlink puts it back, reading it from a neighbour or the queue's
 * head, which it touches anyway), so no operation reads a page header or
 * computes an id. swap leaves the entry it unlinks as it was: its caller
 * retires it at once (POLICY-P1 in evict/policy.h).
 *
 * Invariants:
 *   QUEUE-Q1. count and bytes are the number and charged bytes of the entries
 *       linked in the queue; head's prev and tail's next are 0; for linked
 *       neighbours a, b: a->next == id(b) iff b->prev == id(a).
 *   QUEUE-Q2. Every operation is O(1); nothing here walks the queue (except
 *       larder__queue_check, a test seam).
 *   QUEUE-Q3. A run (struct larder__run) links new entries to each other
 *       only: a policy builds it within one insert_batch() call and splices
 *       it whole onto one queue's newest end before it returns, leaving the
 *       queue as pushing the run's entries one by one in order would. Until
 *       then no other operation meets its entries (they are in no queue).
 * The queue does not know which queue an entry is in; policies record that
 * in their mbits bits.
 */
#ifndef LARDER_EVICT_LIST_H
#define LARDER_EVICT_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/assert.h"
#include "core/entry.h"
#include "mem/pagedir.h"

/* count and bytes are not adjacent: gcc's straight-line vectoriser joined
 * their updates in a push or an unlink (count +/- 1 and bytes +/- b) into
 * a 16-byte load, a vector add and a store, 10 instructions for 2 (and a
 * load that spans two scalar stores of the last update); docs/bench.md. */
struct larder__queue {
	uint32_t head; /* oldest */
	uint32_t tail; /* newest */
	uint64_t count;
	const uint64_t *dir; /* the directory's words (larder__pagedir_words) */
	uint64_t bytes;
};

static inline void larder__queue_init(struct larder__queue *q, const struct larder__pagedir *dir)
{
	q->head = q->tail = 0;
	q->dir = larder__pagedir_words(dir);
	q->count = q->bytes = 0;
}

/* The entry with id (linked, or being linked, in q). */
static inline struct larder__entry *larder__queue_entry(const struct larder__queue *q, uint32_t id)
{
	return larder__pagedir_slot_in(q->dir, id);
}

static inline struct larder__entry *larder__queue_at(const struct larder__queue *q, uint32_t id)
{
	return id ? larder__queue_entry(q, id) : NULL;
}

/* The oldest entry, or NULL. */
static inline struct larder__entry *larder__queue_oldest(const struct larder__queue *q)
{
	return larder__queue_at(q, q->head);
}

/* The entry after e toward the newest end, or NULL; e is linked in q. */
static inline struct larder__entry *larder__queue_newer(const struct larder__queue *q,
						       const struct larder__entry *e)
{
	return larder__queue_at(q, e->next);
}

/* Links e (in no queue: ENTRY-E6) at the newest end. */
static inline void larder__queue_push(struct larder__queue *q, struct larder__entry *e,
				      uint64_t bytes)
{
	uint32_t id = e->next; /* ENTRY-E6 */
	e->next = 0;
	e->prev = q->tail;
	if (q->tail)
		larder__queue_entry(q, q->tail)->next = id;
	else
		q->head = id;
	q->tail = id;
	q->count++;
	q->bytes += bytes;
}

/*
 * QUEUE-Q3: entries linked in insertion order, waiting to be spliced onto a
 * queue. The run keeps the pointers and ids of its ends, so linking an
 * entry reads no neighbour through the directory (a push reads the tail's)
 * and the queue's tail is read once per run.
 */
struct larder__run {
	struct larder__entry *first, *last;
	uint32_t first_id, last_id;
	uint64_t count;
	uint64_t bytes;
};

static inline void larder__run_init(struct larder__run *r)
{
	r->first = r->last = NULL;
	r->first_id = r->last_id = 0;
	r->count = r->bytes = 0;
}

/* Links e (in no queue: ENTRY-E6) at the run's newest end. */
static inline void larder__run_push(struct larder__run *r, struct larder__entry *e,
				    uint64_t bytes)
{
	uint32_t id = e->next; /* ENTRY-E6 */
	e->prev = r->last_id;
	e->next = 0;
	if (r->last) {
		r->last->next = id;
	} else {
		r->first = e;
		r->first_id = id;
	}
	r->last = e;
	r->last_id = id;
	r->count++;
	r->bytes += bytes;
}

/* QUEUE-Q3: links the run at q's newest end, as pushing its entries in order
 * would, and leaves the run empty. */
static inline void larder__queue_splice(struct larder__queue *q, struct larder__run *r)
{
	if (!r->count)
		return;
	r->first->prev = q->tail;
	if (q->tail)
		larder__queue_entry(q, q->tail)->next = r->first_id;
	else
		q->head = r->first_id;
	q->tail = r->last_id;
	q->count += r->count;
	q->bytes += r->bytes;
	larder__run_init(r);
}

/* Links e (in no queue: ENTRY-E6) just older than at, which is linked in q. */
static inline void larder__queue_push_before(struct larder__queue *q, struct larder__entry *e,
					     struct larder__entry *at, uint64_t bytes)
{
	uint32_t id = e->next; /* ENTRY-E6 */
	uint32_t at_id;
	if (at->prev) {
		struct larder__entry *p = larder__queue_entry(q, at->prev);
		at_id = p->next;
		p->next = id;
	} else {
		at_id = q->head;
		q->head = id;
	}
	e->prev = at->prev;
	e->next = at_id;
	at->prev = id;
	q->count++;
	q->bytes += bytes;
}

/* Unlinks e, leaving its own id in its next field (ENTRY-E6). */
static inline void larder__queue_unlink(struct larder__queue *q, struct larder__entry *e,
					uint64_t bytes)
{
	uint32_t id;
	LARDER__ASSERT(q->count > 0 && q->bytes >= bytes); /* QUEUE-Q1 */
	if (e->prev) {
		struct larder__entry *p = larder__queue_entry(q, e->prev);
		id = p->next;
		p->next = e->next;
	} else {
		id = q->head;
		q->head = e->next;
	}
	if (e->next) {
		struct larder__entry *n = larder__queue_entry(q, e->next);
		LARDER__ASSERT(n->prev == id); /* QUEUE-Q1: both neighbours name e */
		n->prev = e->prev;
	} else {
		LARDER__ASSERT(q->tail == id); /* QUEUE-Q1 */
		q->tail = e->prev;
	}
	e->prev = 0;
	e->next = id; /* ENTRY-E6 */
	q->count--;
	q->bytes -= bytes;
}

/* Moves e to the newest end of the same queue (an LRU touch). */
static inline void larder__queue_touch(struct larder__queue *q, struct larder__entry *e)
{
	if (!e->next)
		return; /* already the newest */
	struct larder__entry *n = larder__queue_entry(q, e->next);
	uint32_t id = n->prev;
	if (e->prev)
		larder__queue_entry(q, e->prev)->next = e->next;
	else
		q->head = e->next;
	n->prev = e->prev;
	larder__queue_entry(q, q->tail)->next = id;
	e->prev = q->tail;
	e->next = 0;
	q->tail = id;
}

/* Puts e (in no queue: ENTRY-E6) where old is (same neighbours), unlinking old;
 * bytes adjusted. old's links are left stale, not reset to ENTRY-E6's: the
 * caller retires old, whose link bytes then hold retired_next (ENTRY-E5), so
 * a reset was two dead stores and a load per overwrite (docs/bench.md). */
static inline void larder__queue_swap(struct larder__queue *q, struct larder__entry *old,
				      struct larder__entry *e, uint64_t old_bytes,
				      uint64_t bytes)
{
	uint32_t id = e->next; /* ENTRY-E6 */
	e->prev = old->prev;
	e->next = old->next;
	if (e->prev)
		larder__queue_entry(q, e->prev)->next = id;
	else
		q->head = id;
	if (e->next)
		larder__queue_entry(q, e->next)->prev = id;
	else
		q->tail = id;
	q->bytes = q->bytes - old_bytes + bytes;
}

/*
 * Test seam (O(n)): walks q from head to tail checking QUEUE-Q1 (every back link,
 * the ends, count, and bytes as size() reports them). Returns the number of
 * entries walked, or -1 at the first broken link.
 */
static inline int64_t larder__queue_check(const struct larder__queue *q,
					  size_t (*size)(void *ctx, const struct larder__entry *e),
					  void *ctx)
{
	uint64_t n = 0, bytes = 0;
	uint32_t prev = 0;
	for (uint32_t id = q->head; id; n++) {
		const struct larder__entry *e = larder__queue_entry(q, id);
		if (e->prev != prev || n >= q->count)
			return -1;
		bytes += size(ctx, e);
		prev = id;
		id = e->next;
	}
	return prev == q->tail && n == q->count && bytes == q->bytes ? (int64_t)n : -1;
}

/* The policy bits of mbits (bits 0-5), leaving the maintainer's bits alone. */
static inline unsigned larder__pbits(const struct larder__entry *e)
{
	return e->mbits & LARDER__MBITS_POLICY;
}

static inline void larder__set_pbits(struct larder__entry *e, unsigned bits)
{
	e->mbits = (uint8_t)((e->mbits & ~LARDER__MBITS_POLICY) | (bits & LARDER__MBITS_POLICY));
}

/* larder__set_pbits() for an entry whose policy bits are 0 (replace()'s new
 * entry, POLICY-P1): one or, without masking its bits first. */
static inline void larder__init_pbits(struct larder__entry *e, unsigned bits)
{
	LARDER__ASSERT(larder__pbits(e) == 0);
	e->mbits |= (uint8_t)(bits & LARDER__MBITS_POLICY);
}

#endif /* LARDER_EVICT_LIST_H */
