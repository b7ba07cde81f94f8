/*
 * evict/policy.c - the table from enum larder_policy to a policy's ops.
 * Adding a policy: its .c file defines larder__policy_<name>; list it here.
 *
 * LARDER_POLICY_DEFAULT is S3-FIFO with its small queue's share tuned by
 * mini simulations (evict/s3fifo.c, evict/tuner.c): measured with larder-sim
 * on the policies' own code over the 55 cells of the public traces' reference table (docs/policies.md),
 * it has the smallest mean gap to Belady's optimum of larder's policies,
 * over all cells and over the nine real traces alone, both with every hit
 * delivered and with the engine's lossy hit ring (docs/policies.md), and it
 * keeps S3-FIFO's cheap hits: a hit bumps a counter, and one key in S (the
 * tuner's sample) also feeds the mini caches.
 */
#include "evict/policy.h"

extern const struct larder__policy_ops larder__policy_fifo;
extern const struct larder__policy_ops larder__policy_lru;
extern const struct larder__policy_ops larder__policy_s3fifo;
extern const struct larder__policy_ops larder__policy_wtinylfu;
extern const struct larder__policy_ops larder__policy_arc;
extern const struct larder__policy_ops larder__policy_wtinylfu_tuned;
extern const struct larder__policy_ops larder__policy_s3fifo_tuned;

const struct larder__policy_ops *larder__policy_ops_for(enum larder_policy policy)
{
	switch (policy) {
	case LARDER_POLICY_S3FIFO:
		return &larder__policy_s3fifo;
	case LARDER_POLICY_FIFO:
		return &larder__policy_fifo;
	case LARDER_POLICY_LRU:
		return &larder__policy_lru;
	case LARDER_POLICY_WTINYLFU:
		return &larder__policy_wtinylfu;
	case LARDER_POLICY_ARC:
		return &larder__policy_arc;
	case LARDER_POLICY_WTINYLFU_TUNED:
		return &larder__policy_wtinylfu_tuned;
	case LARDER_POLICY_DEFAULT:
	case LARDER_POLICY_S3FIFO_TUNED:
		return &larder__policy_s3fifo_tuned;
	}
	return NULL;
}
