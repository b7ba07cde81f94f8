/*
 * evict/policy.c - the table from enum larder_policy to a policy's ops.
 * Adding a policy: its .c file defines larder__policy_<name>; list it here.
 *
 * LARDER_POLICY_DEFAULT is the policy with the smallest mean gap to Belady's
 * optimum over the 55 cells of shared/traces/REFERENCE.tsv, measured with
 * larder-sim on the policies' own code (docs/policies.md has the table):
 * W-TinyLFU whose window is picked by mini simulations on a key sample
 * (evict/tuner.c), mean gap 0.072, against 0.076 for S3-FIFO, 0.083 for
 * W-TinyLFU with Caffeine's hill climber, 0.106 for ARC and 0.127 for LRU.
 */
#include "evict/policy.h"

extern const struct larder__policy_ops larder__policy_fifo;
extern const struct larder__policy_ops larder__policy_lru;
extern const struct larder__policy_ops larder__policy_s3fifo;
extern const struct larder__policy_ops larder__policy_wtinylfu;
extern const struct larder__policy_ops larder__policy_wtinylfu_tuned;
extern const struct larder__policy_ops larder__policy_arc;

const struct larder__policy_ops *larder__policy_ops_for(enum larder_policy policy)
{
	switch (policy) {
	case LARDER_POLICY_DEFAULT:
		return &larder__policy_wtinylfu_tuned;
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
	}
	return NULL;
}
