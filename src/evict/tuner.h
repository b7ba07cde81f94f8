/*
 * evict/tuner.h - picks one parameter of a policy (W-TinyLFU's window,
 * S3-FIFO's small queue) by simulating several values of it on a sample of
 * the keys (see tuner.c). Used by the tuned W-TinyLFU and the adaptive
 * S3-FIFO.
 */
#ifndef LARDER_EVICT_TUNER_H
#define LARDER_EVICT_TUNER_H

#include <stdint.h>

#include "evict/policy.h"

#define LARDER__TUNER_MAX_K 8

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
};

/* The kinds the policies use (tuner.c). */
extern const struct larder__tuner_kind larder__tuner_windows;      /* W-TinyLFU's window */
extern const struct larder__tuner_kind larder__tuner_small_queues; /* S3-FIFO's small queue */

struct larder__tuner;

/* Returns 0, or -1 when memory was refused (the caller then runs untuned). */
int larder__tuner_create(struct larder__tuner **out, const struct larder__tuner_kind *kind,
			 uint64_t capacity_bytes, uint64_t expected_entries);
void larder__tuner_destroy(struct larder__tuner *t);
/* Whether a key is in the sample: only these need larder__tuner_access. */
int larder__tuner_samples(const struct larder__tuner *t, uint64_t hash);
/* One request of a key (a miss or a delivered hit of the real cache). */
void larder__tuner_access(struct larder__tuner *t, uint64_t hash, uint64_t bytes);
/* The parameter that wins lately. */
unsigned larder__tuner_choice(const struct larder__tuner *t);
void larder__tuner_set_capacity(struct larder__tuner *t, uint64_t capacity_bytes);

#endif /* LARDER_EVICT_TUNER_H */
