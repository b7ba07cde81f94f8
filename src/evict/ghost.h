/*
 * evict/ghost.h - a compact, bounded set of fingerprints of evicted keys.
 *
 * S3-FIFO's ghost queue and ARC's B1/B2 lists remember keys that left the
 * cache, not the entries: a 32-bit fingerprint and a weight (charged bytes)
 * each, 12-16 bytes per ghost instead of a whole entry. See ghost.c.
 */
#ifndef LARDER_EVICT_GHOST_H
#define LARDER_EVICT_GHOST_H

#include <stdint.h>

struct larder__ghost_slot {
	uint32_t fp;  /* 0 = empty (seq 0) or, in old_tab only, a tombstone (seq 1) */
	uint32_t seq; /* low 32 bits of the ring sequence of fp's latest insert */
};

struct larder__ghost {
	uint32_t *ring_fp; /* fingerprints in insertion order, by seq & ring_mask */
	uint32_t *ring_w;  /* their weights */
	uint64_t ring_mask;
	uint64_t head, tail; /* ring sequences: [head, tail) are in the ring */
	struct larder__ghost_slot *tab;
	uint64_t tab_mask;
	unsigned tab_shift;
	/* While growing (GHOST-G4): the previous arrays, emptied a few slots per insert. */
	uint32_t *old_fp, *old_w; /* sequences [ring_moved, ring_split) still live here */
	uint64_t old_ring_mask, ring_moved, ring_split;
	struct larder__ghost_slot *old_tab; /* slots [tab_moved, old_tab_mask] not yet moved */
	uint64_t old_tab_mask, tab_moved;
	unsigned old_tab_shift;
	uint64_t live_count;  /* fingerprints that contains() answers yes for */
	uint64_t live_weight; /* their weights summed */
	uint64_t bound;       /* live_weight never exceeds this after insert() */
};

/* The fingerprint a ghost keeps for a 64-bit key hash; never 0. */
static inline uint32_t larder__ghost_fp(uint64_t hash)
{
	uint32_t fp = (uint32_t)(hash >> 20);
	return fp ? fp : 1;
}

/* Whether no fingerprint is remembered (remove() then finds none): a
 * caller with many removes to ask, and none to insert, asks this once. */
static inline int larder__ghost_empty(const struct larder__ghost *g)
{
	return g->live_count == 0;
}

/* Returns 0 or -1 (out of memory). bound: most weight kept; slots_hint: sizing. */
int larder__ghost_init(struct larder__ghost *g, uint64_t bound, uint64_t slots_hint);
void larder__ghost_destroy(struct larder__ghost *g);
/* Remembers fp with its weight, expiring the oldest ghosts past the bound.
 * Never fails: when memory to grow is refused it forgets the oldest instead. */
void larder__ghost_insert(struct larder__ghost *g, uint32_t fp, uint32_t weight);
int larder__ghost_contains(const struct larder__ghost *g, uint32_t fp);
/* Forgets fp; returns its weight, or 0 when it was not there. */
uint32_t larder__ghost_remove(struct larder__ghost *g, uint32_t fp);
/* Forgets the oldest live ghost; returns its weight, or 0 when empty. */
uint32_t larder__ghost_pop_oldest(struct larder__ghost *g);
/* Changes the bound, expiring the oldest ghosts past it. */
void larder__ghost_set_bound(struct larder__ghost *g, uint64_t bound);

#endif /* LARDER_EVICT_GHOST_H */
