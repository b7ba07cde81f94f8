/*
 * hist.h - a log-linear latency histogram in the manner of HdrHistogram.
 *
 * Values below 2^SUB_BITS get a bucket each; above, every power-of-two range
 * [2^k, 2^(k+1)) is cut into 2^SUB_BITS equal buckets. A value is therefore
 * reported with a relative error of at most 2^-SUB_BITS (0.8% with 7 bits),
 * over the whole 64-bit range, in 58 x 128 counters. Recording is a count
 * of leading zeros, a shift and an increment; no allocation, no locking (one
 * histogram per thread, merged after the run).
 */
#ifndef LARDER_BENCH_HIST_H
#define LARDER_BENCH_HIST_H

#include <stdint.h>

#define LB_HIST_SUB_BITS 7u
#define LB_HIST_SUB (1u << LB_HIST_SUB_BITS)
#define LB_HIST_BUCKETS ((64u - LB_HIST_SUB_BITS + 1u) * LB_HIST_SUB)

struct lb_hist {
	uint64_t count;
	uint64_t max;
	uint64_t c[LB_HIST_BUCKETS];
};

static inline unsigned lb_hist_index(uint64_t v)
{
	if (v < LB_HIST_SUB)
		return (unsigned)v;
	unsigned shift = (unsigned)(63 - __builtin_clzll(v)) - LB_HIST_SUB_BITS;
	return shift * LB_HIST_SUB + (unsigned)(v >> shift); /* v >> shift in [SUB, 2 SUB) */
}

static inline void lb_hist_add(struct lb_hist *h, uint64_t v)
{
	h->c[lb_hist_index(v)]++;
	h->count++;
	if (v > h->max)
		h->max = v;
}

void lb_hist_merge(struct lb_hist *into, const struct lb_hist *from);
/* The highest value in the bucket holding the p-th percentile (0 < p <= 100). */
uint64_t lb_hist_percentile(const struct lb_hist *h, double p);

#endif /* LARDER_BENCH_HIST_H */
