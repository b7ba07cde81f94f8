/*
 * dispose_queue.c - the bounded copy buffer between a cache's removal
 * listener (the maintainer thread) and one JavaScript thread.
 *
 * Design: one mutex, two buffers. The producer appends records under the
 * lock; the consumer swaps its own (empty) buffer in and reads the full one
 * outside the lock. Either side holds the lock for O(1) work plus one copy of
 * a record, so the maintainer never waits on JavaScript.
 *
 * Invariants (asserted by test/registry_stress.c):
 *   DQUEUE-Q1. used <= bound whenever the lock is free: a record that does not fit
 *       is dropped and counted, never truncated.
 *   DQUEUE-Q2. Every record pushed is either taken exactly once, in push order, or
 *       counted in dropped exactly once.
 *   DQUEUE-Q3. lnode_dq_push() returns LNODE_DQ_FIRST exactly when the queue was
 *       empty, so a consumer woken once per FIRST sees every record.
 *
 * Not guaranteed: records still queued when the consumer stops are freed
 * with the queue, undelivered.
 */
#include "dispose_queue.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

int lnode_dq_init(struct lnode_dq *q, size_t bound)
{
	int rc = pthread_mutex_init(&q->lock, NULL);

	if (rc != 0)
		return rc;
	q->bytes = NULL;
	q->used = 0;
	q->cap = 0;
	q->records = 0;
	q->bound = bound;
	q->dropped = 0;
	return 0;
}

void lnode_dq_destroy(struct lnode_dq *q)
{
	free(q->bytes);
	q->bytes = NULL;
	pthread_mutex_destroy(&q->lock);
}

/* Makes room for need bytes in total; called with the lock held. */
static int dq_reserve_locked(struct lnode_dq *q, size_t need)
{
	size_t cap = q->cap ? q->cap : 4096;
	uint8_t *grown;

	if (need <= q->cap)
		return 0;
	while (cap < need)
		cap *= 2;
	if (cap > q->bound)
		cap = q->bound;
	grown = realloc(q->bytes, cap);
	if (grown == NULL)
		return ENOMEM;
	q->bytes = grown;
	q->cap = cap;
	return 0;
}

enum lnode_dq_push_result lnode_dq_push(struct lnode_dq *q, const void *key, size_t key_len,
					const void *value, size_t value_len, uint8_t cause)
{
	size_t size = LNODE_DQ_RECORD_HEADER + key_len + value_len;
	enum lnode_dq_push_result result;
	uint32_t k32 = (uint32_t)key_len, v32 = (uint32_t)value_len;
	uint8_t *rec;

	pthread_mutex_lock(&q->lock);
	if (key_len > UINT32_MAX || value_len > UINT32_MAX || size > q->bound - q->used ||
	    dq_reserve_locked(q, q->used + size) != 0) {
		q->dropped++;
		pthread_mutex_unlock(&q->lock);
		return LNODE_DQ_DROPPED;
	}
	rec = q->bytes + q->used;
	memcpy(rec, &k32, 4);
	memcpy(rec + 4, &v32, 4);
	rec[8] = cause;
	memcpy(rec + LNODE_DQ_RECORD_HEADER, key, key_len);
	if (value_len)
		memcpy(rec + LNODE_DQ_RECORD_HEADER + key_len, value, value_len);
	result = q->records == 0 ? LNODE_DQ_FIRST : LNODE_DQ_QUEUED;
	q->used += size;
	q->records++;
	pthread_mutex_unlock(&q->lock);
	return result;
}

uint64_t lnode_dq_take(struct lnode_dq *q, uint8_t **buf, size_t *cap, size_t *used,
		       size_t *records)
{
	uint8_t *mine = *buf;
	size_t mine_cap = *cap;
	uint64_t dropped;

	pthread_mutex_lock(&q->lock);
	*buf = q->bytes;
	*cap = q->cap;
	*used = q->used;
	*records = q->records;
	q->bytes = mine;
	q->cap = mine_cap;
	q->used = 0;
	q->records = 0;
	dropped = q->dropped;
	pthread_mutex_unlock(&q->lock);
	return dropped;
}

uint64_t lnode_dq_dropped(struct lnode_dq *q)
{
	uint64_t dropped;

	pthread_mutex_lock(&q->lock);
	dropped = q->dropped;
	pthread_mutex_unlock(&q->lock);
	return dropped;
}
