/*
 * evict/tuner.h - picks one parameter of a policy (W-TinyLFU's window,
 * S3-FIFO's small queue) by simulating several values of it on a sample of
 * the keys (see tuner.c). Used by the tuned W-TinyLFU and the adaptive
 * S3-FIFO. With LARDER__TUNER_CURVE the same mini caches have different
 * sizes instead and estimate a miss-ratio curve (the pool's probe,
 * pool/probe.c).
 */
#ifndef LARDER_EVICT_TUNER_H
#define LARDER_EVICT_TUNER_H

#include <stdint.h>

#include "evict/policy.h"

#define LARDER__TUNER_MAX_K 16

/* What the tuner simulates: `count` variants of one policy, told apart by
 * the parameter passed to create. */
struct larder__tuner_kind {
	const struct larder__policy_ops *ops;
	int (*create)(struct larder__policy **out, const struct larder__policy_host *host,
		      uint64_t capacity_bytes, uint64_t expected_entries, unsigned param);
	unsigned count;				  /* <= LARDER__TUNER_MAX_K */
	unsigned params[LARDER__TUNER_MAX_K]; /* in increasing order */
	unsigned first;				  /* index of the answer until the first verdict */
	uint64_t mini_entries;	/* a mini cache's size, in entries, on large caches */
	uint64_t min_sample;	/* sample at most 1 key in min_sample (a power of two) */
	unsigned period_factor; /* decide every period_factor x mini entries sampled requests */
	double hysteresis;	/* switch only for a score this many times the current one */
	unsigned flags;		/* LARDER__TUNER_CURVE or 0 */
	/* CURVE: mini k holds scale[k] / 1024 of the capacity (largest first). */
	unsigned scale[LARDER__TUNER_MAX_K];
};

/*
 * A miss-ratio curve instead of a choice: the mini caches differ in size
 * (scale), all run ops->create (create and params are unused), none is
 * chosen (no periods, hits are counted from creation), and TUNER-T3 is the
 * owner's: it reads larder__tuner_mini_entries() and rebuilds the tuner with
 * a sparser sample, where a choice tuner would shrink its mini caches.
 */
#define LARDER__TUNER_CURVE 1u

/* The kinds the policies use (tuner.c). */
extern const struct larder__tuner_kind larder__tuner_windows;      /* W-TinyLFU's window */
extern const struct larder__tuner_kind larder__tuner_small_queues; /* S3-FIFO's small queue */

struct larder__tuner;

/* Returns 0, or -1 when memory was refused (the caller then runs untuned). */
int larder__tuner_create(struct larder__tuner **out, const struct larder__tuner_kind *kind,
			 uint64_t capacity_bytes, uint64_t expected_entries);
void larder__tuner_destroy(struct larder__tuner *t);
/* The mix of a key's hash whose low bits decide the sample: a key is in a
 * sample of 1 in S (a power of two) iff mix & (S - 1) is 0. Independent of the
 * bits the index, ghosts and sketch favour. Inline for the pool's probe,
 * which tests every insert on the request path. */
static inline uint64_t larder__tuner_mix(uint64_t h)
{
	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	return h ^ (h >> 32);
}

/* Whether a key is in the sample, given the tuner's sample mask
 * (larder__tuner_sample_every() - 1, fixed at its creation): only these
 * need larder__tuner_access. Inline, and on a mask the caller keeps beside
 * its own fields: every insert of a tuned policy asks, and the call and
 * the tuner's line cost the insert 7 instructions (docs/bench.md, "The
 * insert"). */
static inline int larder__tuner_in_sample(uint64_t sample_mask, uint64_t hash)
{
	return !(larder__tuner_mix(hash) & sample_mask);
}
/* One request of a key (a miss or a delivered hit of the real cache). */
void larder__tuner_access(struct larder__tuner *t, uint64_t hash, uint64_t bytes);
/* The parameter that wins lately. */
unsigned larder__tuner_choice(const struct larder__tuner *t);
void larder__tuner_set_capacity(struct larder__tuner *t, uint64_t capacity_bytes);

/* Curve readings (any kind; meaningful for LARDER__TUNER_CURVE): */
/* Sampled requests so far. */
uint64_t larder__tuner_requests(const struct larder__tuner *t);
/* Hits of mini cache k so far (a choice tuner counts the current period only). */
uint64_t larder__tuner_hits(const struct larder__tuner *t, unsigned k);
/* Entries mini cache k holds now. */
uint64_t larder__tuner_mini_entries(const struct larder__tuner *t, unsigned k);
/* S: one key in S is sampled (a power of two). */
uint64_t larder__tuner_sample_every(const struct larder__tuner *t);

#endif /* LARDER_EVICT_TUNER_H */
