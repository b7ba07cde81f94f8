/*
 * maint/maintainer.h - the background thread of one shard of a cache (its
 * physical plane, core/shard.h).
 */
#ifndef LARDER_MAINT_MAINTAINER_H
#define LARDER_MAINT_MAINTAINER_H

#include <stdint.h>

#include "core/cache.h"
#include "larder.h"
#include "maint/handle.h"
#include "sync/atomic.h"

struct larder;
struct larder__handle;
struct larder__shard;

/* Creates the maintainer's state of a shard (policy included), which takes
 * over the shard's index root. LARDER_OK or LARDER_ENOMEM. */
int larder__maint_create(struct larder__shard *shard);
/* Starts the shard's thread and waits until it runs: LARDER_OK,
 * LARDER_ETHREAD, or LARDER_ENOMEM (it could not allocate its per-thread
 * state; joined). */
int larder__maint_start(struct larder__shard *shard);
/* Stops and joins the threads of the cache's first `started` shards. */
void larder__maint_stop(struct larder *cache, unsigned started);
/* With the thread stopped (or never started): frees every table (the index
 * it was given at create and every later one), the entries with mappings of
 * their own, and every handle. Slab pages are left to the slab, which the
 * cache destroys after this (whoever creates it destroys it). */
void larder__maint_destroy(struct larder__shard *shard);
/* The rest of larder__maint_wake() when the maintainer sleeps: st is the
 * sleep state it loaded (not MAINT_AWAKE). */
void larder__maint_wake_sleeper(struct larder__shard *shard, struct larder__handle *posted,
				uint64_t due_ms, uint32_t st);
/* After a post through h, with the maintainer asleep in state st: true when
 * larder__maint_wake() need not look further. Only an overwrite without a
 * deadline (so a lazy sleep's end does not matter, WAKE-W4), with the
 * maintainer in a window or a lazy sleep, posted before h->wake_recheck
 * (larder__events_wake_due in maint/events.h). */
static inline int larder__maint_wake_skip(const struct larder__handle *h, uint32_t st,
					  uint64_t due_ms)
{
	/* Relaxed: the owner's own variables. */
	return h && (st == MAINT_WINDOW || st == MAINT_LAZY) && due_ms == UINT64_MAX &&
	       h->last_overwrite &&
	       atomic_load_explicit(&h->ev_head, LARDER__RELAXED) +
			       atomic_load_explicit(&h->spilled, LARDER__RELAXED) <
		       h->wake_recheck;
}

/*
 * The one way to wake a shard's maintainer. After posting an event through
 * `posted`, whose entry's deadline is `due_ms` (cache clock; UINT64_MAX:
 * none, 0: apply it at once): wakes it if it sleeps idle, if that handle's
 * ring is half full (for an overwrite, LARDER__WAKE_EVENTS unread:
 * larder__events_wake_due), or if it sleeps lazily past `due_ms` (WAKE-W1,
 * a Dekker with WAKE-W2 in its sleep; WAKE-W4). With posted NULL: wakes it
 * if it sleeps at all (the caller changed something no ring shows: a
 * thread's exit, a writer waiting for room in its ring or index, a test
 * seam).
 * Inline up to the sleep state's load, and the test that a post of an
 * overwrite needs no more (wake_skip): a writer calls it after every post.
 * larder__maint_wake_state() is that inline part: the sleep state to hand
 * larder__maint_wake_sleeper(), or MAINT_AWAKE when nothing is to be done
 * (the plain put's fast path ends in a tail call on it, core/cache.c).
 */
static inline uint32_t larder__maint_wake_state(struct larder__shard *shard,
						struct larder__handle *posted, uint64_t due_ms)
{
	/* WAKE-W1: seq_cst fence between what the caller changed (its event post,
	 * R-EV, or a flag) and this load; pairs with WAKE-W2 in maint_sleep() and
	 * lazy_sleep(). */
	atomic_thread_fence(LARDER__SEQ_CST);
	/* WAKE-W4: acquire, pairs with lazy_sleep()'s seq_cst store of
	 * MAINT_LAZY: the wake_at published before it. */
	uint32_t st = atomic_load_explicit(&shard->maint_sleeping, LARDER__ACQUIRE);
	return st != MAINT_AWAKE && !larder__maint_wake_skip(posted, st, due_ms) ? st
										 : MAINT_AWAKE;
}

static inline void larder__maint_wake(struct larder__shard *shard,
				      struct larder__handle *posted, uint64_t due_ms)
{
	uint32_t st = larder__maint_wake_state(shard, posted, due_ms);
	if (st != MAINT_AWAKE)
		larder__maint_wake_sleeper(shard, posted, due_ms, st);
}
/* larder__maint_wake(shard, NULL, 0) for every shard: the caller changed
 * something all maintainers share (the capacity, the stop flag, the budget
 * a writer waits for or is short of). */
void larder__maint_wake_all(struct larder *cache);
/* Sleeps until a maintainer's pass moves the cache's room_seq past seq (an
 * A-ROOM load by the caller), or timeout_ns: the one wait for a pass of
 * writers, the pool and larder_flush, woken once per arming (WAKE-W3). */
void larder__room_wait(struct larder *cache, uint32_t seq, uint64_t timeout_ns);
/* Wakes a shard's maintainer and waits up to 1 ms for one of its passes
 * (larder_flush and the test seams; maint/flush.c). */
void larder__maint_await_pass(struct larder__shard *shard);
/* larder_flush(), also saying in *passes how many of the shards' passes it
 * waited for (maint/flush.c; the test seam larder__test_flush). */
int larder__maint_flush(struct larder *cache, uint64_t timeout_ms, unsigned *passes);
/*
 * A bulk writer (larder_load; SNAP-L6 in core/snapshot.c, maint/resize.c):
 * larder__bulk_begin() counts it (no index shrinks while any runs) and asks
 * every shard for an index that holds its share of `entries`, waiting a
 * bounded time for the growth; larder__bulk_reserve() asks again without
 * waiting (after a clear, the fresh tables need it); larder__bulk_end()
 * ends the count. Caller thread, outside read sections (inside one, or on
 * a maintainer's thread, only the count is kept).
 */
void larder__bulk_begin(struct larder *cache, uint64_t entries);
void larder__bulk_reserve(struct larder *cache, uint64_t entries);
void larder__bulk_end(struct larder *cache);
/* Bytes freed so far by every maintainer (only grows). */
uint64_t larder__maint_freed_bytes(struct larder *cache);
/* Adds every maintainer's counters to values[] (larder_stats). */
void larder__maint_stats(struct larder *cache, uint64_t *values);

#endif /* LARDER_MAINT_MAINTAINER_H */
