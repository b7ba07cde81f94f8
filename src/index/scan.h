/*
 * index/scan.h - reading the index in hash order, for cursors (core/iter.c).
 *
 * A key's home bucket is (home key * buckets) >> 32 with home key = bits
 * 16..47 of its hash (larder__table_home): monotonic in the home key, for
 * every table size. So a range of home keys is a run of buckets in any
 * table, before and after a resize, and a cursor that walks home keys in
 * order visits each key in exactly one range, however the index changes
 * between ranges.
 */
#ifndef LARDER_INDEX_SCAN_H
#define LARDER_INDEX_SCAN_H

#include <stdint.h>

#include "index/table.h"

/* One past the largest home key. */
#define LARDER__HOME_KEY_END ((uint64_t)1 << 32)

static inline uint64_t larder__home_key(uint64_t hash)
{
	return (hash >> 16) & 0xffffffffu;
}

/*
 * Called for each entry found; hash is its key's hash. Returns 0 to go on,
 * nonzero to stop the scan (which then returns that value).
 */
typedef int larder__scan_fn(void *ctx, struct larder__entry *e, uint64_t hash);

/*
 * Inside a read section: calls fn for every entry of t, and of the tables
 * it is being resized into, whose home key lies in [lo, hi) (lo < hi <=
 * LARDER__HOME_KEY_END). hash computes an entry's hash (the cache's keyed
 * hash). Every entry present in the index for the whole scan is reported at
 * least once (index/scan.c has why); one that a resize moves during the scan
 * may be reported twice, and entries inserted or removed during it may or
 * may not be. Returns 0, or fn's nonzero result.
 */
int larder__table_scan_homes_rcu(struct larder__table *t, uint64_t lo, uint64_t hi,
				 larder__entry_hash_fn *hash, void *hash_ctx, larder__scan_fn *fn,
				 void *ctx);

#endif /* LARDER_INDEX_SCAN_H */
