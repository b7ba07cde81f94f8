/*
 * maint/flush.c - larder_flush(): waiting until the maintainers have applied
 * every write made before the call and made the expiries and evictions then
 * due, and no longer; and the wait for one of their passes that larder_flush
 * and the test seams (maint/seams.c) share.
 *
 * A waiter counts itself in pass_waiters, wakes the maintainer and sleeps on
 * the writers' room word, which every pass bumps while anyone waits
 * (maint_pass); each sleep is at most 1 ms, so a wait is bounded by its
 * caller's deadline and never hangs.
 *
 * Design. The flush goes by rounds: a round waits, shard by shard, for a
 * pass of each shard's maintainer numbered after a seq_cst fence taken at
 * the round's start to end (ended_seq); then the flush reads what those
 * passes published at their end and decides whether it is done. It waits
 * for the work due at the call, which writers after it cannot add to:
 *   1. the events posted before the call, and the expiries due then: every
 *      shard has a settled pass (settled_seq) numbered after the first
 *      round's fence;
 *   2. the evictions needed to bring the cache within its capacity as of
 *      those writes: from those passes' published live bytes, the excess
 *      X = sum(live) - capacity; from their published removed_bytes (the
 *      charges each maintainer evicted or expired, cumulative), removed0. Then
 *      rounds until sum(removed) >= removed0 + X, or until sum(live) <= capacity
 *      (a capacity raised meanwhile, or deletes, take the excess away);
 *   3. with K > 1 shards, when anything was evicted or expired meanwhile,
 *      the end of each shard's pass running then, if any: a shard that
 *      evicts by a stale view of the others' bytes (maint/evict.c) may
 *      still be doing so, and must end before the counters are final; a
 *      pass begun after this step's fence reads the others' bytes as the
 *      last round's acquires saw them, or later.
 * Each round costs each shard about one pass: a pass evicts the whole
 * excess it sees, up to EVICT_PER_PASS victims, and wakes the largest shard
 * when it is not the one to evict (maint/evict.c, wake_largest), so the
 * rounds are about 2 + X / (EVICT_PER_PASS victims) (step 3 counted as
 * one, at most a pass per shard, usually less), whatever the writers
 * do meanwhile. The old rule, a pass with nothing left to evict, waited for
 * as long as writers kept the cache evicting (75 ms at K = 1, 1.6 s at 4).
 * Not bounded by the work at the call (the caller's deadline bounds it): a
 * shard whose every pass stops at EXPIRE_PER_PASS with more due (writers
 * making more than that come due per pass) never settles, nor one whose
 * cleared tables clears keep adding to.
 *
 * QUIESCE-Q1 (maint_pass) and its partner here: with a seq_cst fence on
 * both sides, a pass numbered after the value of pass_seq the caller reads
 * drains every event posted to that shard before the call, on any thread
 * whose write returned before it, and reads the clock after the call.
 *
 * QUIESCE-Q4 / QUIESCE-Q5 (edges, docs/memory-model.md): a pass publishes
 * at its end removed_bytes, ended_live, settled_seq (when it walked every
 * cleared table and expired all that was due at its clock reading) and
 * then, with release, its number in ended_seq, after its counters and entry
 * count: a round's acquire of ended_seq sees all of them, and larder_stats()
 * after the flush counts that pass's work.
 *
 * QUIESCE-Q9. The excess is never under-estimated. Per shard the flush reads
 * ended_live with acquire (QUIESCE-Q8), then removed_bytes: the release on
 * ended_live (QUIESCE-Q7) orders the same pass's removed_bytes before it, so
 * the removed value read is that pass's or a later one's. Bytes removed
 * after the live value was published are thus counted as progress only
 * when they were in it; a later removed value only makes removed0 larger, a later
 * live value (writes after the call) only makes X larger: either way the
 * flush waits longer, for at most the overshoot the writers' budget allows
 * (core/cache.h). The capacity is read after the live values; one raised
 * meanwhile ends the wait through sum(live) <= capacity.
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

/* One round: each shard in turn, a pass numbered after a fence taken now has
 * ended (fresh), or the pass running at the fence, if any (!fresh). after[i]
 * gets that number. */
static int await_round(larder *c, uint64_t deadline_ns, uint64_t *after, int fresh)
{
	for (unsigned i = 0; i < c->shard_count; i++) {
		struct larder__maint *m = c->shard[i].maint;
		atomic_thread_fence(LARDER__SEQ_CST); /* QUIESCE-Q1's partner */
		after[i] = atomic_load_explicit(&m->pass_seq, LARDER__RELAXED) + (fresh != 0);
		/* QUIESCE-Q5: acquire, pairs with QUIESCE-Q4. */
		while (atomic_load_explicit(&m->ended_seq, LARDER__ACQUIRE) < after[i]) {
			if (larder__monotonic_ns() >= deadline_ns)
				return LARDER_EBUSY;
			larder__maint_await_pass(&c->shard[i]);
		}
	}
	return LARDER_OK;
}

/* What the passes a round waited for published, summed over the shards. */
struct ended {
	uint64_t live, removed;
	int settled; /* every shard settled after its drained[] number */
};

static struct ended read_ended(larder *c, const uint64_t *drained)
{
	struct ended e = {0, 0, 1};
	for (unsigned i = 0; i < c->shard_count; i++) {
		struct larder__maint *m = c->shard[i].maint;
		/* QUIESCE-Q8: acquire, pairs with QUIESCE-Q7: the removed bytes
		 * read next are that pass's or a later one's (QUIESCE-Q9). */
		e.live += atomic_load_explicit(&m->ended_live, LARDER__ACQUIRE);
		e.removed += atomic_load_explicit(&m->removed_bytes, LARDER__RELAXED);
		/* Relaxed: ordered by the round's acquire (QUIESCE-Q5). */
		e.settled &= atomic_load_explicit(&m->settled_seq, LARDER__RELAXED) >= drained[i];
	}
	return e;
}

int larder__maint_flush(larder *c, uint64_t timeout_ms, unsigned *rounds)
{
	*rounds = 0;
	if (!c)
		return LARDER_EINVAL;
	struct larder__thread *t = larder__thread_self();
	/* A maintainer waits for nothing (core/cache.c, wait_pass), and a pass
	 * may wait for the grace period a read section holds. */
	if (t && (t->maintainer || larder__read_active(&t->reader)))
		return LARDER_ESTATE;
	uint64_t ms = timeout_ms < UINT64_MAX / 1000000u ? timeout_ms : UINT64_MAX / 1000000u;
	uint64_t deadline_ns = larder__monotonic_ns() + ms * 1000000u;
	uint64_t drained[LARDER_SHARDS_MAX], after[LARDER_SHARDS_MAX];
	struct ended start = {0, 0, 0};
	for (unsigned i = 0; i < c->shard_count; i++) /* relaxed: only a hint of activity */
		start.removed += atomic_load_explicit(&c->shard[i].maint->removed_bytes,
						      LARDER__RELAXED);
	/* Step 1: the first round's passes drain what was posted before the call. */
	int rc = await_round(c, deadline_ns, drained, 1);
	++*rounds;
	struct ended e = read_ended(c, drained);
	for (; rc == LARDER_OK && !e.settled; ++*rounds) {
		rc = await_round(c, deadline_ns, after, 1);
		e = read_ended(c, drained);
	}
	if (rc != LARDER_OK)
		return rc;
	/* Step 2: the excess as of those writes, read after the live bytes. */
	uint64_t cap = atomic_load_explicit(&c->capacity, LARDER__RELAXED); /* a setting */
	uint64_t excess = e.live > cap ? e.live - cap : 0;
	uint64_t removed0 = e.removed;
	int moved = e.removed != start.removed;
	while (excess && e.removed - removed0 < excess) {
		rc = await_round(c, deadline_ns, after, 1);
		++*rounds;
		if (rc != LARDER_OK)
			return rc;
		e = read_ended(c, drained);
		moved = 1;
		if (e.live <= atomic_load_explicit(&c->capacity, LARDER__RELAXED))
			break;
	}
	/* Step 3: a shard evicting by a stale view ends its pass. A pass that
	 * begins after the fence sees, by it, what the last round acquired. */
	if (c->shard_count > 1 && moved) {
		rc = await_round(c, deadline_ns, after, 0);
		++*rounds;
	}
	return rc;
}

int larder_flush(larder *c, uint64_t timeout_ms)
{
	unsigned rounds;
	return larder__maint_flush(c, timeout_ms, &rounds);
}
