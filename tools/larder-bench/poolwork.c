/*
 * poolwork.c - workloads and offline answers for `larder-bench --pool`
 * (see poolwork.h).
 *
 * Zipf keys are drawn as YCSB does (Gray et al., "Quickly generating
 * billion-record synthetic databases", SIGMOD 1994): one pow() per sample,
 * no table, so each cache's stream is an endless deterministic sequence.
 */
#include "poolwork.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double pw_unit(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (double)((x * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
}

static uint64_t mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

void pw_stream_init(struct pw_stream *s, uint64_t keys, double theta, uint64_t seed)
{
	memset(s, 0, sizeof *s);
	s->keys = keys ? keys : 1;
	s->theta = theta;
	s->rng = mix(seed) | 1;
	if (theta <= 0)
		return;
	for (uint64_t i = 1; i <= s->keys; i++)
		s->zetan += pow((double)i, -theta);
	s->zeta2 = 1.0 + pow(0.5, theta);
	s->alpha = 1.0 / (1.0 - theta);
	s->eta = (1.0 - pow(2.0 / (double)s->keys, 1.0 - theta)) / (1.0 - s->zeta2 / s->zetan);
}

uint64_t pw_next(struct pw_stream *s)
{
	double u = pw_unit(&s->rng);
	if (s->theta <= 0)
		return (uint64_t)(u * (double)s->keys);
	double uz = u * s->zetan;
	if (uz < 1.0)
		return 0;
	if (uz < s->zeta2)
		return 1;
	uint64_t r = (uint64_t)((double)s->keys * pow(s->eta * u - s->eta + 1.0, s->alpha));
	return r < s->keys ? r : s->keys - 1;
}

void pw_key(uint8_t key[PW_KEY_BYTES], unsigned cache, uint64_t rank)
{
	uint64_t a = mix(((uint64_t)cache << 48) ^ rank), b = ((uint64_t)cache << 48) | rank;
	memcpy(key, &a, 8);
	memcpy(key + 8, &b, 8);
}

uint64_t pw_slot_bytes(larder *any_cache, size_t value_len)
{
	uint64_t need = 16 + PW_KEY_BYTES + value_len; /* the entry's header, key, value */
	for (size_t c = 0; c < larder_size_class_count(); c++) {
		uint64_t slot;
		if (larder_stats_size_class(any_cache, c, &slot, 1) != LARDER_OK)
			return 0;
		if (slot >= need)
			return slot;
	}
	return 0;
}

int pw_mrc(enum larder_policy policy, const struct pw_stream *proto, uint64_t slot,
	   const uint64_t *sizes, unsigned n, uint64_t warm, uint64_t count, uint64_t *hits)
{
	larder_sim **sims = calloc(n, sizeof *sims);
	int rc = -1;
	if (!sims)
		return -1;
	/* In entries, not bytes: every entry of a stream has the same slot, and
	 * the simulator sizes its tables for `capacity` entries. */
	for (unsigned k = 0; k < n; k++)
		if (larder_sim_create(&sims[k], policy, sizes[k] / slot ? sizes[k] / slot : 1, 0) !=
		    LARDER_OK)
			goto done;
	struct pw_stream s = *proto;
	memset(hits, 0, n * sizeof *hits);
	for (uint64_t i = 0; i < warm + count; i++) {
		uint64_t key = pw_next(&s);
		for (unsigned k = 0; k < n; k++) {
			int r = larder_sim_access(sims[k], key, 1);
			if (r < 0)
				goto done;
			if (i >= warm)
				hits[k] += (uint64_t)r;
		}
	}
	rc = 0;
done:
	for (unsigned k = 0; k < n; k++)
		larder_sim_destroy(sims[k]);
	free(sims);
	return rc;
}

double pw_curve_at(const uint64_t *sizes, const uint64_t *hits, unsigned n, double bytes)
{
	double x0 = 0, y0 = 0;
	for (unsigned k = 0; k < n; k++) {
		double x1 = (double)sizes[k], y1 = (double)hits[k];
		if (bytes <= x1)
			return x1 > x0 ? y0 + (y1 - y0) * (bytes - x0) / (x1 - x0) : y1;
		x0 = x1;
		y0 = y1;
	}
	return y0;
}

double pw_best_split(unsigned caches, const double *weight, uint64_t *const *sizes,
		     uint64_t *const *hits, unsigned n, uint64_t budget, unsigned grid,
		     uint64_t *alloc)
{
	const double unit = (double)budget / grid;
	size_t cols = (size_t)grid + 1;
	double *best = malloc(sizeof(double) * cols * (caches + 1));
	unsigned *pick = malloc(sizeof(unsigned) * cols * (caches + 1));
	double result = 0;
	if (!best || !pick)
		goto done;
	/* best[i][b]: caches 0..i-1 in b units; -inf where impossible. */
	for (size_t b = 0; b < cols; b++)
		best[b] = b == 0 ? 0 : -INFINITY;
	for (unsigned i = 0; i < caches; i++) {
		double *prev = best + cols * i, *cur = best + cols * (i + 1);
		unsigned *pk = pick + cols * (i + 1);
		for (size_t b = 0; b < cols; b++) {
			cur[b] = -INFINITY;
			for (size_t g = 1; g <= b; g++) {
				if (prev[b - g] == -INFINITY)
					continue;
				double v = prev[b - g] +
					   weight[i] * pw_curve_at(sizes[i], hits[i], n, (double)g * unit);
				if (v > cur[b]) {
					cur[b] = v;
					pk[b] = (unsigned)g;
				}
			}
		}
	}
	size_t b = 0;
	for (size_t k = 0; k < cols; k++)
		if (best[cols * caches + k] > best[cols * caches + b])
			b = k;
	result = best[cols * caches + b];
	for (unsigned i = caches; i-- > 0;) {
		unsigned g = pick[cols * (i + 1) + b];
		alloc[i] = (uint64_t)((double)g * unit);
		b -= g;
	}
done:
	free(best);
	free(pick);
	return result;
}
