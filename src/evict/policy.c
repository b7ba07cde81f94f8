/*
 * evict/policy.c - the table from enum larder_policy to a policy's ops.
 * Adding a policy: its .c file defines larder__policy_<name>; list it here.
 *
 * LARDER_POLICY_DEFAULT is S3-FIFO: the policy with the smallest mean gap to
 * Belady's optimum on the nine real traces of shared/traces (REFERENCE.tsv
 * sizes), measured with larder-sim on the policies' own code, with every hit
 * delivered (0.073) and with the engine's lossy hit ring (0.073-0.087), and
 * the least hurt by lossy hits, since a hit only bumps a counter.
 * W-TinyLFU with a window tuned by mini simulations (evict/tuner.c,
 * larder__policy_wtinylfu_tuned) has the better mean over all 55 cells with
 * every hit delivered (0.072 against 0.076), but only through the synthetic
 * lirs_loop trace, and falls behind as soon as hits are lossy: it is an
 * option (LARDER_POLICY_WTINYLFU_TUNED), not the default (docs/policies.md).
 */
#include "evict/policy.h"

extern const struct larder__policy_ops larder__policy_fifo;
extern const struct larder__policy_ops larder__policy_lru;
extern const struct larder__policy_ops larder__policy_s3fifo;
extern const struct larder__policy_ops larder__policy_wtinylfu;
extern const struct larder__policy_ops larder__policy_arc;
extern const struct larder__policy_ops larder__policy_wtinylfu_tuned;

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
	case LARDER_POLICY_WTINYLFU_TUNED:
		return &larder__policy_wtinylfu_tuned;
	}
	return NULL;
}
