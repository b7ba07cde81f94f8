/*
 * evict/list.h - the intrusive queue every policy builds on.
 *
 * A queue threads entries through their own prev/next fields (core/entry.h,
 * E3: the maintainer's alone), so a policy allocates nothing per entry.
 * Direction: head is the oldest end (FIFO front, LRU end), tail the newest;
 * e->prev points toward the head, e->next toward the tail.
 *
 * Invariants:
 *   Q1. count and bytes are the number and charged bytes of the entries
 *       linked in the queue; head->prev and tail->next are NULL.
 *   Q2. Every operation is O(1); nothing here walks the queue.
 * The queue does not know which queue an entry is in; policies record that
 * in their mbits bits.
 */
#ifndef LARDER_EVICT_LIST_H
#define LARDER_EVICT_LIST_H

#include <stddef.h>
#include <stdint.h>

#include "core/entry.h"

struct larder__queue {
	struct larder__entry *head; /* oldest */
	struct larder__entry *tail; /* newest */
	uint64_t count;
	uint64_t bytes;
};

static inline void larder__queue_init(struct larder__queue *q)
{
	q->head = q->tail = NULL;
	q->count = q->bytes = 0;
}

static inline void larder__queue_push(struct larder__queue *q, struct larder__entry *e,
				      uint64_t bytes)
{
	e->next = NULL;
	e->prev = q->tail;
	if (q->tail)
		q->tail->next = e;
	else
		q->head = e;
	q->tail = e;
	q->count++;
	q->bytes += bytes;
}

static inline void larder__queue_unlink(struct larder__queue *q, struct larder__entry *e,
					uint64_t bytes)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		q->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		q->tail = e->prev;
	e->prev = e->next = NULL;
	q->count--;
	q->bytes -= bytes;
}

/* Moves e to the newest end of the same queue (an LRU touch). */
static inline void larder__queue_touch(struct larder__queue *q, struct larder__entry *e)
{
	if (q->tail == e)
		return;
	if (e->prev)
		e->prev->next = e->next;
	else
		q->head = e->next;
	e->next->prev = e->prev;
	e->next = NULL;
	e->prev = q->tail;
	q->tail->next = e;
	q->tail = e;
}

/* Puts e where old is (same neighbours), unlinking old; bytes adjusted. */
static inline void larder__queue_swap(struct larder__queue *q, struct larder__entry *old,
				      struct larder__entry *e, uint64_t old_bytes,
				      uint64_t bytes)
{
	e->prev = old->prev;
	e->next = old->next;
	if (e->prev)
		e->prev->next = e;
	else
		q->head = e;
	if (e->next)
		e->next->prev = e;
	else
		q->tail = e;
	old->prev = old->next = NULL;
	q->bytes = q->bytes - old_bytes + bytes;
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

#endif /* LARDER_EVICT_LIST_H */
