/*
 * pool/pool.h - several caches sharing one byte budget: the hooks the
 * engine calls (core/config.c, core/cache.c, maint/maintainer.c) and the
 * test seams. The public half is the pool section of larder.h; the design
 * is in pool.c.
 */
#ifndef LARDER_POOL_POOL_H
#define LARDER_POOL_POOL_H

#include <stdint.h>

#include "evict/policy.h"
#include "larder.h"
#include "pool/probe.h"

struct larder;
struct larder__pool_member;

/* A config's reference on a pool (larder_config_set_pool / _destroy). */
void larder__pool_ref(larder_pool *pool);
void larder__pool_unref(larder_pool *pool);

/*
 * larder_open(): joins cfg's pool with cache c (c->pool is set on success)
 * and gives it its first capacity in *capacity, waiting up to the config's
 * write wait for the pool's other caches to give it back. The member is
 * not yet touched by the controller (larder__pool_activate).
 * Returns LARDER_OK, LARDER_ESTATE (pool closed), LARDER_EINVAL (an explicit
 * capacity, min shares over 1, no room for 64 KiB), LARDER_EBUSY (not given
 * back in time) or LARDER_ENOMEM.
 */
int larder__pool_join(struct larder *c, const larder_config *cfg, uint64_t *capacity);
/* larder_open() succeeded: the controller may read and resize c from now on. */
void larder__pool_activate(struct larder *c);
/* larder_close(), first: the controller stops touching c, whose bytes stay
 * counted against the budget until larder__pool_release(). */
void larder__pool_detach(struct larder *c);
/* Every byte c held is freed (closed, or its open failed): its share goes
 * back to the pool and the member is freed. NULL is a no-op. */
void larder__pool_release(struct larder__pool_member *member);

/*
 * maint/maintainer.c, as the cache opens, for each shard's maintainer: for
 * shard 0 of a pooled cache whose pool runs a controller and whose share
 * may move, the probe that feeds the controller (pool/probe.h) in *probe,
 * and its writers mark the entries of the probe's widest sample from then
 * on (PROBE-P6; shard 0's keys only, PROBE-P9); NULL for any other shard
 * or cache. Returns LARDER_OK or LARDER_ENOMEM (*probe NULL).
 */
int larder__pool_probe_create(struct larder *c, unsigned shard,
			      const struct larder__policy_host *host, struct larder__probe **probe);

/* ---- Test seams (hidden; tests link the static library) ------------------ */

/*
 * Replaces cache's estimates with a known curve: hits_per_s[k] hits per
 * second at larder__test_pool_point_bytes(pool, cache, k), and
 * requests_per_s. NULL hits_per_s goes back to the probe's estimates.
 * Returns 0, or -1 when cache is not open in pool.
 */
int larder__test_pool_set_curve(larder_pool *pool, larder *cache, const double *hits_per_s,
				double requests_per_s);
/* A curve given through the seam is mature only up to `bytes`: its points
 * above are treated as mini caches still maturing (0: all mature); with
 * `restart`, as mini caches that restarted (a new generation: POOL-M1 in
 * pool.c, the mature points before it kept). Returns 0, or -1 when cache
 * is not open in pool. */
int larder__test_pool_set_reach(larder_pool *pool, larder *cache, uint64_t bytes, int restart);
/* What a probe publishes (pool/probe.h), for a test to write as the
 * probe would: hits are its mini caches' hits so far, fresh the sampled
 * requests through them since they restarted (generation), sampled the
 * sampled requests so far (through them, and all that came). */
struct larder__test_pool_feed {
	uint64_t generation, sample_every, top_bytes, top_room, fresh, sampled;
	uint64_t hits[LARDER__PROBE_POINTS];
};
/* Stores `f` in cache's probe readings, as its probe would; the cache must
 * see no write or hit meanwhile (its own probe writes there too). Returns
 * 0, or -1 when cache is not open in pool. */
int larder__test_pool_feed(larder_pool *pool, larder *cache,
			   const struct larder__test_pool_feed *f);
/* The pool's read of the mini caches' part of a probe's readings
 * (PROBE-Q1 in pool/probe.h): 1 with fresh and the points' hits of one
 * flush, 0 when a writer was storing them at every try. */
int larder__test_pool_read_minis(const struct larder__probe_readings *readings, uint64_t *fresh,
				 uint64_t *hits);
/* larder__test_pool_step at a given time of the monotonic clock (now_ns;
 * a test moves it on by the interval it wants, so that the windows fold
 * known seconds). */
uint64_t larder__test_pool_step_at(larder_pool *pool, uint64_t now_ns);
/* Runs one controller pass now, synchronously (whatever the interval):
 * decides the moves and applies the shrinks; the grows follow as the
 * shrinking caches give bytes back. Returns the steps moved. */
uint64_t larder__test_pool_step(larder_pool *pool);
/* Whether the controller asks cache's probe for the low rate (POOL-D1 in
 * pool.c): 1 steady, 0 not, -1 when cache is not open in pool. */
int larder__test_pool_steady(larder_pool *pool, larder *cache);
/* Pins what cache's probe is asked (mode 1 the low rate, 2 the full rate;
 * 0 back to the controller's detection) and tells it at once; *seen and
 * *through are the probe's sampled requests so far, all that came and
 * those through its mini caches (PROBE-P8 in probe.c). Returns 0, or -1
 * when cache is not open in pool. */
int larder__test_pool_force_steady(larder_pool *pool, larder *cache, int mode, uint64_t *seen,
				   uint64_t *through);
/* The sampled requests cache's probe has seen so far, each counted as it
 * came (before any batch's flush), and its S (one key in S is sampled);
 * returns 0, or -1 when cache is not open in pool or has no probe. */
int larder__test_pool_arrived(larder_pool *pool, larder *cache, uint64_t *arrived,
			      uint64_t *sample_every);
/* The inserts of sampled keys that cache's probe found in its ghost of
 * recent sampled victims so far (pool/probe.c); returns 0, or -1 when
 * cache is not open in pool or has no probe. */
int larder__test_pool_ghost_hits(larder_pool *pool, larder *cache, uint64_t *ghost_hits);
/* The size of point k of a curve given through the seam: the cache's max
 * share x 2^(-k/3) (a probe's points follow its target instead). 0 if cache
 * is not open in pool. */
uint64_t larder__test_pool_point_bytes(larder_pool *pool, larder *cache, unsigned k);

#endif /* LARDER_POOL_POOL_H */
