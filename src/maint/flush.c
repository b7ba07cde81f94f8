/*
 * maint/flush.c - larder_flush(): waiting until the maintainer has applied
 * every write made before the call; and the wait for one of its passes that
 * larder_flush and the test seams (maint/seams.c) share.
 *
 * A waiter counts itself in pass_waiters, wakes the maintainer and sleeps on
 * the writers' room word, which every pass bumps while anyone waits
 * (maint_pass); each sleep is at most 1 ms, so a wait is bounded by its
 * caller's deadline and never hangs.
 *
 * The flush's guarantee (QUIESCE-Q1, QUIESCE-Q4, QUIESCE-Q5), for each
 * shard's maintainer: with a seq_cst fence on both sides, a pass numbered
 * after the value of pass_seq the caller reads drains every event posted
 * to that shard before the call, on any thread whose write returned before
 * it; a pass that ends with no cleared
 * table left to walk publishes its number in settled_seq after the entry
 * count, having expired and evicted all that was due (a pass that stops at
 * its bound per pass settles nothing). So once settled_seq reaches that
 * number, larder_stats() counts those writes, their removals and the
 * evictions they caused.
 *
 * QUIESCE-Q6. With K shards, a shard under its share of an over-full cache
 * hands eviction to the largest shard (maint/evict.c, wake_largest), whose
 * settled pass the sweep over the shards may already have waited for: a
 * sweep during which a handoff was counted (counted before the handing
 * pass's settled_seq, so the sweep's acquire sees it) is followed by
 * another, so that the largest evicts after its wake-up. Shards of about
 * equal size hand a large cut back and forth, each taking the total down
 * by about an eighth of the mean (maint/evict.c, takes_turn): a cut from
 * 7 MiB to 64 KiB over two shards took some 40 handoffs, more sweeps than
 * one per shard gave (seen under ThreadSanitizer, where the maintainers
 * make fewer passes of their own meanwhile). At most FLUSH_SWEEPS sweeps:
 * beside writers that keep the cache over its capacity the handoffs never
 * stop, and a flush must still end.
 */
#define _GNU_SOURCE
#include "core/cache.h"
#include "core/thread.h"
#include "maint/maintainer.h"
#include "maint/state.h"
#include "sync/futex.h"
#include "sync/reclaim.h"

void larder__maint_await_pass(struct larder__shard *s)
{
	struct larder *c = s->cache;
	struct larder__maint *m = s->maint;
	atomic_fetch_add_explicit(&m->pass_waiters, 1, LARDER__RELAXED); /* a count */
	/* A-ROOM: acquire, pairs with R-ROOM: a pass that moved it is seen. */
	uint32_t seq = atomic_load_explicit(&c->room_seq, LARDER__ACQUIRE);
	larder__maint_wake(s, NULL, 0);
	larder__futex_wait(&c->room_seq, seq, 1000000u);
	atomic_fetch_sub_explicit(&m->pass_waiters, 1, LARDER__RELAXED); /* a count */
}

#define FLUSH_SWEEPS 256u

/* Each shard's maintainer in turn, through a settled pass numbered after a
 * fence that follows the call's start: a later fence covers as much. */
static int sweep_shards(larder *c, uint64_t deadline_ns)
{
	for (unsigned i = 0; i < c->shard_count; i++) {
		struct larder__maint *m = c->shard[i].maint;
		atomic_thread_fence(LARDER__SEQ_CST); /* QUIESCE-Q1's partner */
		uint64_t after = atomic_load_explicit(&m->pass_seq, LARDER__RELAXED) + 1;
		/* QUIESCE-Q5: acquire, pairs with QUIESCE-Q4: that pass's entry count is seen. */
		while (atomic_load_explicit(&m->settled_seq, LARDER__ACQUIRE) < after) {
			if (larder__monotonic_ns() >= deadline_ns)
				return LARDER_EBUSY;
			larder__maint_await_pass(&c->shard[i]);
		}
	}
	return LARDER_OK;
}

int larder_flush(larder *c, uint64_t timeout_ms)
{
	if (!c)
		return LARDER_EINVAL;
	struct larder__thread *t = larder__thread_self();
	/* A maintainer waits for nothing (core/cache.c, wait_pass), and a pass
	 * may wait for the grace period a read section holds. */
	if (t && (t->maintainer || larder__read_active(&t->reader)))
		return LARDER_ESTATE;
	uint64_t ms = timeout_ms < UINT64_MAX / 1000000u ? timeout_ms : UINT64_MAX / 1000000u;
	uint64_t deadline_ns = larder__monotonic_ns() + ms * 1000000u;
	for (unsigned sweep = 0; sweep < FLUSH_SWEEPS; sweep++) {
		/* Relaxed: QUIESCE-Q6 orders the handoffs it must see. */
		uint64_t handoffs = atomic_load_explicit(&c->evict_handoffs, LARDER__RELAXED);
		int rc = sweep_shards(c, deadline_ns);
		if (rc != LARDER_OK)
			return rc;
		if (atomic_load_explicit(&c->evict_handoffs, LARDER__RELAXED) == handoffs)
			break;
	}
	return LARDER_OK;
}
