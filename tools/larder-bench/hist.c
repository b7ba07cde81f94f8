/*
 * hist.c - reading a log-linear histogram (see hist.h for the layout and the
 * error bound).
 */
#include <math.h>

#include "hist.h"

/* The largest value that maps to bucket i: bucket i covers [lo, lo + width). */
static uint64_t bucket_high(unsigned i)
{
	if (i < 2 * LB_HIST_SUB)
		return i; /* one value per bucket below 2^(SUB_BITS+1) */
	unsigned shift = i / LB_HIST_SUB - 1;
	uint64_t top = i - (uint64_t)shift * LB_HIST_SUB;
	return (top << shift) + ((uint64_t)1 << shift) - 1;
}

void lb_hist_merge(struct lb_hist *into, const struct lb_hist *from)
{
	for (unsigned i = 0; i < LB_HIST_BUCKETS; i++)
		into->c[i] += from->c[i];
	into->count += from->count;
	if (from->max > into->max)
		into->max = from->max;
}

uint64_t lb_hist_percentile(const struct lb_hist *h, double p)
{
	uint64_t rank = (uint64_t)ceil(p / 100.0 * (double)h->count), seen = 0;

	if (h->count == 0)
		return 0;
	if (rank == 0)
		rank = 1;
	for (unsigned i = 0; i < LB_HIST_BUCKETS; i++) {
		seen += h->c[i];
		if (seen >= rank) {
			uint64_t v = bucket_high(i);
			return v < h->max ? v : h->max;
		}
	}
	return h->max;
}
