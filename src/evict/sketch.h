/*
 * evict/sketch.h - a 4-bit count-min sketch with periodic halving (TinyLFU).
 * See sketch.c.
 */
#ifndef LARDER_EVICT_SKETCH_H
#define LARDER_EVICT_SKETCH_H

#include <stddef.h>
#include <stdint.h>

struct larder__sketch {
	uint64_t *table;      /* 16 four-bit counters per word */
	uint64_t mask;        /* words - 1 */
	uint64_t *old;        /* while a resize is in progress: the previous table */
	uint64_t old_mask;    /* its words - 1 */
	uint64_t moved;       /* old words [0, moved) are already split into table */
	int halving;          /* a halving is being spread over increments */
	uint64_t halved;      /* while halving: words [0, halved) are done */
	uint64_t halve_odd;   /* odd counters met by this halving so far */
	uint64_t additions;   /* increments since the last halving */
	uint64_t sample_size; /* halve when additions reach this */
	uint64_t resets;      /* halvings so far (tests, diagnostics) */
};

/* Sized for about `entries` distinct hot keys. Returns 0 or -1 (no memory). */
int larder__sketch_init(struct larder__sketch *s, uint64_t entries);
void larder__sketch_destroy(struct larder__sketch *s);
/* Grows the table for more entries, keeping every count (see sketch.c); the
 * copying is spread over the following increments. Returns 0, or -1 when there
 * is no memory or a previous resize is still being spread (try again later). */
int larder__sketch_resize(struct larder__sketch *s, uint64_t entries);
/* Whether a resize is still being spread over increments (tests, diagnostics). */
static inline int larder__sketch_resizing(const struct larder__sketch *s)
{
	return s->old != NULL;
}
void larder__sketch_increment(struct larder__sketch *s, uint64_t hash);
/* The estimated frequency, 0..15. */
unsigned larder__sketch_estimate(const struct larder__sketch *s, uint64_t hash);
/* Halves every counter at once, finishing a halving being spread (increment
 * spreads one over the increments after every sample_size additions). */
void larder__sketch_halve(struct larder__sketch *s);

#endif /* LARDER_EVICT_SKETCH_H */
