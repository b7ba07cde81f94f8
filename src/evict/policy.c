/*
 * evict/policy.c - the table from enum larder_policy to a policy's ops.
 * Adding a policy: its .c file defines larder__policy_<name>; list it here.
 *
 * LARDER_POLICY_DEFAULT is the policy with the smallest mean gap to Belady's
 * optimum over the 55 cells of shared/traces/REFERENCE.tsv, measured with
 * larder-sim on the policies' own code (docs/policies.md has the table).
 */
#include "evict/policy.h"

extern const struct larder__policy_ops larder__policy_fifo;
extern const struct larder__policy_ops larder__policy_lru;
extern const struct larder__policy_ops larder__policy_s3fifo;
extern const struct larder__policy_ops larder__policy_wtinylfu;
extern const struct larder__policy_ops larder__policy_arc;

const struct larder__policy_ops *larder__policy_ops_for(enum larder_policy policy)
{
	switch (policy) {
	case LARDER_POLICY_DEFAULT:
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
