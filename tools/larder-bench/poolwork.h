/*
 * poolwork.h - the workloads of `larder-bench --pool` and what is computed
 * offline about them: per-cache key streams (uniform or Zipf), the slot
 * bytes an entry is charged, exact miss-ratio curves by simulation
 * (larder_sim, the engine's own policy code), and the best static split of
 * a budget for known curves.
 *
 * A stream is deterministic: the same seed gives the same keys, so the
 * engine and the simulator see exactly the same requests per cache, however
 * the caches' requests are interleaved.
 */
#ifndef LARDER_BENCH_POOLWORK_H
#define LARDER_BENCH_POOLWORK_H

#include <stddef.h>
#include <stdint.h>

#include "larder.h"

#define PW_KEY_BYTES 16u

/* Keys 0..keys-1, uniform (theta 0) or Zipf(theta), 0 < theta < 1 (Gray et al.). */
struct pw_stream {
	uint64_t keys;
	double theta;
	uint64_t rng;
	double zetan, zeta2, alpha, eta;
};

/* Sets s up (O(keys) for Zipf, once). */
void pw_stream_init(struct pw_stream *s, uint64_t keys, double theta, uint64_t seed);
/* The next key's rank, 0..keys-1 (rank 0 is the most popular). */
uint64_t pw_next(struct pw_stream *s);
/* A 16-byte key for (cache, rank): distinct across caches and ranks. */
void pw_key(uint8_t key[PW_KEY_BYTES], unsigned cache, uint64_t rank);
/* Uniform in [0, 1) from a private xorshift state. */
double pw_unit(uint64_t *state);

/* The slot bytes the engine charges an entry of this value length (with a
 * 16-byte key, no TTL), read from a cache's size classes; 0 on error. */
uint64_t pw_slot_bytes(larder *any_cache, size_t value_len);

/*
 * Exact miss-ratio curve: replays `warm` then `count` requests of a copy of
 * *proto through larder_sim (policy, every hit delivered) at each of n
 * capacities sizes[] (bytes, each entry charged `slot` bytes: simulated as
 * sizes[k] / slot entries), in one pass, and stores the hits among the
 * counted requests in hits[]. Returns 0, or -1 on error.
 */
int pw_mrc(enum larder_policy policy, const struct pw_stream *proto, uint64_t slot,
	   const uint64_t *sizes, unsigned n, uint64_t warm, uint64_t count, uint64_t *hits);

/* Hits at `bytes` on a curve of n points (sizes ascending, with H(0) = 0),
 * linear between points, flat past the last. */
double pw_curve_at(const uint64_t *sizes, const uint64_t *hits, unsigned n, double bytes);

/*
 * The static split of `budget` that maximises sum of weight[i] x H_i(c_i)
 * over caches, c_i multiples of budget / grid, each at least one unit,
 * by dynamic programming over the curves (sizes[i][], hits[i][], n points
 * each). Writes alloc[]; returns the weighted hits it expects.
 */
double pw_best_split(unsigned caches, const double *weight, uint64_t *const *sizes,
		     uint64_t *const *hits, unsigned n, uint64_t budget, unsigned grid,
		     uint64_t *alloc);

#endif /* LARDER_BENCH_POOLWORK_H */
