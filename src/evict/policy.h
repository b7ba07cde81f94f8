/*
 * evict/policy.h - the interface between the maintainer and an eviction policy.
 *
 * A policy orders the entries the maintainer knows about and names the next
 * victim. It runs only on the maintainer thread (or in the simulator), so it
 * needs no synchronisation; every call is O(1) amortised and never scans.
 *
 * The policy keeps its queues in the entries themselves: prev, next (entry
 * ids, translated through the host's directory: core/entry.h ENTRY-E5) and the
 * policy bits of mbits (LARDER__MBITS_POLICY) are its to use while the entry is
 * linked. It learns an entry's hash and size through the host callbacks, so
 * the engine (which recomputes them from the key) and the simulator (which
 * stores them) drive the very same code.
 *
 * Contract, for every policy:
 *   POLICY-P1. insert() links e; remove() and evict() unlink it; replace() moves
 *       old's position (and history) to new and unlinks old. replace()'s new
 *       entry comes with policy bits 0, and its old one is left with stale
 *       links, not ENTRY-E6's: the caller retires it at once (ENTRY-E5), and
 *       must reset its links itself to link it again (a test, a simulator).
 *   POLICY-P2. evict() returns NULL only when nothing is linked.
 *   POLICY-P3. hit() is only called for linked entries; it may be lossy (sampled).
 *   POLICY-P4. Ghost/history state is bounded by a constant factor of the entries
 *       that fit in capacity.
 *   POLICY-P5. Readers also mark every hit in the entry itself (LARDER__ENTRY_ACCESSED,
 *       ENTRY-E7 in core/entry.h), at once, where the hit() event may come late or
 *       never. A policy reads and clears the mark only with
 *       larder__entry_take_accessed() and counts a taken mark as at most one
 *       access; at an eviction decision it takes the mark of the entry it is
 *       about to evict, so a hit still in flight saves it (W-TinyLFU takes
 *       it where entries leave its window instead: evict/wtinylfu.c). The
 *       simulator sets the mark at hit time, as the engine's readers do.
 *   POLICY-P6. insert_batch(in, n) leaves the policy in the state that
 *       insert() of in[0], ..., in[n-1] in that order would (the same queues,
 *       order, bits and counts); NULL in a policy's ops means that loop
 *       (larder__policy_insert_batch). The maintainer calls it for a run
 *       of a bulk writer's inserts (maint/apply.c, EV-V7).
 *   POLICY-P7. evict(p, hash) with hash not NULL also stores the victim's hash
 *       (the host's hash callback's value) at *hash: the maintainer needs it to
 *       unlink the victim from the index, and a policy that hashed the victim
 *       to decide (S3-FIFO and ARC, for their ghosts) passes that value on
 *       rather than have the key hashed twice (docs/results/bench-history.md, "The
 *       maintainer's eviction"). With NULL (the simulator, the tuner's mini
 *       caches) nothing more is computed.
 * Adding a policy touches one file: the policy's own .c, which defines a
 * const struct larder__policy_ops and is listed in policy.c's table.
 */
#ifndef LARDER_EVICT_POLICY_H
#define LARDER_EVICT_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "core/entry.h"
#include "larder.h"

struct larder__policy_host {
	uint64_t (*hash)(void *ctx, const struct larder__entry *e);
	size_t (*size)(void *ctx, const struct larder__entry *e); /* bytes charged */
	void *ctx;
	const struct larder__pagedir *dir; /* the entries' ids (mem/pagedir.h) */
};

struct larder__policy; /* each policy defines its own */

/* One entry of insert_batch(): insert()'s arguments. */
struct larder__policy_new {
	struct larder__entry *e;
	uint64_t hash;
	size_t bytes;
};

struct larder__policy_ops {
	const char *name;
	/* 1 when the policy needs hit samples on time (it counts frequencies
	 * from them: W-TinyLFU), so samples alone keep the maintainer draining
	 * the rings at its batching window; 0 when the accessed mark (POLICY-P5) carries
	 * what late or lost samples miss, or hits do not matter (FIFO): then a
	 * read-only phase lets the maintainer sleep, and it never writes to the
	 * lines readers are reading (maint/maintainer.c, maint_pass). */
	int hits_keep_awake;
	/* Returns LARDER_OK or LARDER_ENOMEM. */
	int (*create)(struct larder__policy **out, const struct larder__policy_host *host,
		      uint64_t capacity_bytes, uint64_t expected_entries);
	void (*destroy)(struct larder__policy *p);
	void (*insert)(struct larder__policy *p, struct larder__entry *e, uint64_t hash,
		       size_t bytes);
	/* POLICY-P6; NULL: insert() for each, in order. */
	void (*insert_batch)(struct larder__policy *p, const struct larder__policy_new *in,
			     size_t n);
	void (*replace)(struct larder__policy *p, struct larder__entry *old,
			struct larder__entry *e, size_t old_bytes, size_t bytes);
	void (*hit)(struct larder__policy *p, struct larder__entry *e);
	void (*remove)(struct larder__policy *p, struct larder__entry *e, size_t bytes);
	/* POLICY-P2; POLICY-P7 for hash (may be NULL). */
	struct larder__entry *(*evict)(struct larder__policy *p, uint64_t *hash);
	void (*set_capacity)(struct larder__policy *p, uint64_t capacity_bytes);
	/* Test seam, O(n): checks every queue's links (evict/list.h QUEUE-Q1); returns
	 * the number of linked entries, or -1 when a queue is broken. */
	int64_t (*check)(struct larder__policy *p);
};

/* POLICY-P6: the policy's batch insert, or its insert() for each entry in order. */
static inline void larder__policy_insert_batch(const struct larder__policy_ops *ops,
					       struct larder__policy *p,
					       const struct larder__policy_new *in, size_t n)
{
	if (ops->insert_batch) {
		ops->insert_batch(p, in, n);
		return;
	}
	for (size_t i = 0; i < n; i++)
		ops->insert(p, in[i].e, in[i].hash, in[i].bytes);
}

/* POLICY-P7 for a policy that did not hash its victim e: stores e's hash at
 * *hash when hash is not NULL. */
static inline void larder__policy_victim_hash(const struct larder__policy_host *host,
					      const struct larder__entry *e, uint64_t *hash)
{
	if (hash)
		*hash = host->hash(host->ctx, e);
}

/* The ops for a policy enum (DEFAULT resolved), or NULL if unknown. */
const struct larder__policy_ops *larder__policy_ops_for(enum larder_policy policy);

#endif /* LARDER_EVICT_POLICY_H */
