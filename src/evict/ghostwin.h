/*
 * evict/ghostwin.h - S3-FIFO's ghost: the fingerprints of keys that left the
 * cache within the last `bound` bytes of departures, one cache line per
 * lookup or insert. See ghostwin.c; ARC, which needs its ghosts' exact LRU
 * order and weights, keeps evict/ghost.c.
 */
#ifndef LARDER_EVICT_GHOSTWIN_H
#define LARDER_EVICT_GHOSTWIN_H

#include <stdint.h>

#define LARDER__GHOSTWIN_WAYS 8

/* One 64-byte line: fp 0 = an empty slot. */
struct larder__ghostwin_bucket {
	uint32_t fp[LARDER__GHOSTWIN_WAYS];
	uint32_t stamp[LARDER__GHOSTWIN_WAYS]; /* clock >> unit_shift before its insert */
};

struct larder__ghostwin {
	struct larder__ghostwin_bucket *b;
	uint64_t nbuckets;
	unsigned shift; /* a fingerprint's bucket: its spread hash >> shift */
	/* While growing (GHOSTWIN-W4): the previous array, buckets [moved, old_n) not yet moved. */
	struct larder__ghostwin_bucket *old;
	uint64_t old_n, moved;
	uint64_t clock;      /* summed weight of every insert so far */
	unsigned unit_shift; /* stamps count clock in units of 2^unit_shift bytes */
	uint32_t window;     /* a stamp at most this many units old is live */
	uint64_t bound;
	uint64_t used;    /* slots holding a fingerprint, live or expired */
	uint64_t inserts;      /* all inserts, counted for GHOSTWIN-W3 */
	uint64_t mark_inserts; /* inserts when this window's count began */
	uint64_t window_end;   /* the clock at which the next count begins */
	uint64_t grow_at;      /* inserts past which the array doubles */
	uint64_t forgotten; /* live fingerprints overwritten by a full bucket */
};

/* Returns 0 or -1 (out of memory). bound: the window in bytes; slots_hint: sizing. */
int larder__ghostwin_init(struct larder__ghostwin *g, uint64_t bound, uint64_t slots_hint);
void larder__ghostwin_destroy(struct larder__ghostwin *g);
/* Remembers fp, which left with `weight` bytes. Never fails: with no memory
 * to grow, a full bucket forgets its oldest. */
void larder__ghostwin_insert(struct larder__ghostwin *g, uint32_t fp, uint32_t weight);
int larder__ghostwin_contains(const struct larder__ghostwin *g, uint32_t fp);
/* Forgets fp; returns whether it was there (live). */
int larder__ghostwin_remove(struct larder__ghostwin *g, uint32_t fp);
/* Changes the window; fingerprints older than it stop counting at once. */
void larder__ghostwin_set_bound(struct larder__ghostwin *g, uint64_t bound);

/* Whether no fingerprint is held at all (remove() then finds none). */
static inline int larder__ghostwin_empty(const struct larder__ghostwin *g)
{
	return g->used == 0;
}

#endif /* LARDER_EVICT_GHOSTWIN_H */
