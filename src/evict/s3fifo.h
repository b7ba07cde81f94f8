/*
 * evict/s3fifo.h - S3-FIFO with a chosen small-queue share, for the tuner's
 * mini caches (evict/tuner.c), and S3-FIFO's replace() as an inline swap,
 * for the maintainer's overwrite path (maint/apply.c).
 *
 * The overwrite path is the maintainer's commonest event, and S3-FIFO
 * (plain or tuned) the default policy. Through ops->replace its swap cost
 * the call, the argument moves and reloads of what the caller had in
 * registers, and the byte counts' subtract-and-add, which fold away when
 * the caller knows both charges are one (docs/results/bench-history.md, "The maintainer's
 * dispatch and replace"). So the state the swap changes is here, first in
 * S3-FIFO's policy (S3FIFO-F5 in evict/s3fifo.c), and the swap is one
 * inline function that the ops' replace and the maintainer both call: the
 * same code, so the two cannot disagree.
 */
#ifndef LARDER_EVICT_S3FIFO_H
#define LARDER_EVICT_S3FIFO_H

#include "evict/list.h"
#include "evict/policy.h"

/* The policy bits (mbits' LARDER__MBITS_POLICY) the swap reads. */
enum {
	LARDER__S3FIFO_MAIN = 1 << 0,  /* in main, else in small (S3FIFO-F1) */
	LARDER__S3FIFO_YOUNG = 1 << 3, /* in small's skip zone (S3FIFO-F2) */
};

/* What replace() changes: the queues, the skip zone's boundary and bytes,
 * and the latest insert (evict/s3fifo.c says what each means). */
struct larder__s3fifo_queues {
	struct larder__queue small, main;
	struct larder__entry *young_oldest;
	uint64_t young_bytes;
	/* The latest insert, not yet counted when choosing a queue to evict
	 * from (see s3_evict); NULL once it has left. */
	struct larder__entry *fresh;
	uint64_t fresh_bytes;
};

/* S3-FIFO with its small queue holding small_permille thousandths of capacity. */
int larder__s3fifo_create(struct larder__policy **out, const struct larder__policy_host *host,
			  uint64_t capacity_bytes, uint64_t expected_entries,
			  unsigned small_permille);

/* replace() of both S3-FIFO policies (plain and tuned): a caller that finds
 * it in a policy's ops may call larder__s3fifo_swap() in its place. */
void larder__s3fifo_replace(struct larder__policy *p, struct larder__entry *old,
			    struct larder__entry *e, size_t old_bytes, size_t bytes);

/* The queues of p, whose ops' replace is larder__s3fifo_replace (S3FIFO-F5). */
static inline struct larder__s3fifo_queues *larder__s3fifo_queues(struct larder__policy *p)
{
	return (struct larder__s3fifo_queues *)(void *)p;
}

/* The queue an entry with policy bits pbits is linked in (S3FIFO-F1). */
static inline struct larder__queue *larder__s3fifo_queue_of(struct larder__s3fifo_queues *q,
							    unsigned pbits)
{
	return (pbits & LARDER__S3FIFO_MAIN) ? &q->main : &q->small;
}

/* replace()'s relinking (POLICY-P1) of old, whose policy bits are bits: e
 * takes old's place in its queue. Neither entry's mbits are written: the
 * caller gives e old's bits (larder__s3fifo_swap; the maintainer's
 * overwrite path, maint/apply.c, writes e's whole mbits byte at once). */
static inline __attribute__((always_inline)) void
larder__s3fifo_relink(struct larder__s3fifo_queues *q, struct larder__entry *old,
		      struct larder__entry *e, unsigned bits, size_t old_bytes, size_t bytes)
{
	if (q->fresh == old) {
		q->fresh = e;
		q->fresh_bytes = bytes;
	}
	if (bits & LARDER__S3FIFO_YOUNG) {
		if (q->young_oldest == old)
			q->young_oldest = e;
		q->young_bytes = q->young_bytes - old_bytes + bytes;
	}
	larder__queue_swap(larder__s3fifo_queue_of(q, bits), old, e, old_bytes, bytes);
}

/* replace() (POLICY-P1): e takes old's place, queue and bits. */
static inline __attribute__((always_inline)) void
larder__s3fifo_swap(struct larder__s3fifo_queues *q, struct larder__entry *old,
		    struct larder__entry *e, size_t old_bytes, size_t bytes)
{
	unsigned bits = larder__pbits(old);
	larder__init_pbits(e, bits);
	larder__s3fifo_relink(q, old, e, bits, old_bytes, bytes);
}

#endif /* LARDER_EVICT_S3FIFO_H */
