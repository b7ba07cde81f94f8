/*
 * evict/s3fifo.h - S3-FIFO with a chosen small-queue share, for the tuner's
 * mini caches (evict/tuner.c).
 */
#ifndef LARDER_EVICT_S3FIFO_H
#define LARDER_EVICT_S3FIFO_H

#include "evict/policy.h"

/* S3-FIFO whose small queue holds small_permille thousandths of capacity. */
int larder__s3fifo_create(struct larder__policy **out, const struct larder__policy_host *host,
			  uint64_t capacity_bytes, uint64_t expected_entries,
			  unsigned small_permille);

#endif /* LARDER_EVICT_S3FIFO_H */
