/*
 * maint/flush.c - larder_flush(): waiting until the maintainers have applied
 * every write made before the call and made the expiries and evictions then
 * due, and no longer; and the wait for one of their passes that larder_flush
 * and the test seams (maint/seams.c) share.
 *
 * A waiter counts itself in pass_waiters, wakes the maintainer and sleeps on
 * the writers' room word (larder__room_wait), which every pass bumps while
 * anyone waits (maint_pass); each sleep is at most 1 ms, so a wait is bounded by its
 * caller's deadline and never hangs.
 *
 * Design. The flush waits for passes of the shards' maintainers to end
 * (ended_seq), and reads what the passes published at their end to decide
 * whether it is done. It waits for the work due at the call, which writers
 * after it cannot add to:
 *   1. the events posted before the call, and the expiries due then: a
 *      round (a pass of every shard, in turn, each numbered after a seq_cst
 *      fence taken when the wait for it begins), repeated until every
 *      shard has a settled pass (settled_seq) numbered after the first
 *      round's fence;
 *   2. the evictions needed to bring the cache within its capacity as of
 *      those writes: from the published live bytes, the excess
 *      X = sum(live) - capacity; from the published removed_bytes (the
 *      charges each maintainer evicted or expired, cumulative), removed0.
 *      Then the next pass end of one shard at a time, the largest
 *      shard's first, in turn, until sum(removed) >= removed0 + X, or until
 *      sum(live) <= capacity (a capacity raised meanwhile, or deletes, take
 *      the excess away);
 *   3. with K > 1 shards, when anything was evicted or expired meanwhile,
 *      the end of each shard's pass running then, if any: a shard that
 *      evicts by a stale view of the others' bytes (maint/evict.c) may
 *      still be doing so, and must end before the counters are final; a
 *      pass begun after this step's fence reads the others' bytes as the
 *      flush's last acquires saw them, or later.
 * A pass evicts the whole excess it sees, up to EVICT_PER_PASS victims, and
 * wakes the largest shard when it is not the one to evict (maint/evict.c,
 * wake_largest), so a flush waits for about K x (2 + X / (EVICT_PER_PASS
 * victims)) passes at most (step 3's at most K, usually fewer), whatever
 * the writers do meanwhile. The old rule, a pass with nothing left to
 * evict, waited for as long as writers kept the cache evicting (75 ms at
 * K = 1, 1.6 s at 4).
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
 * count: the flush's acquire of ended_seq sees all of them, and
 * larder_stats() after the flush counts that pass's work.
 *
 * QUIESCE-Q9. The excess is never under-estimated. Per shard the flush reads
 * ended_live with acquire (QUIESCE-Q8), then removed_bytes: the release on
 * ended_live (QUIESCE-Q7) orders the same pass's removed_bytes before it, so
 * the removed value read is that pass's or a later one's. Bytes removed
 * after the live value was published are thus counted as progress only
 * when they were in it; a later removed value only makes removed0 larger,
 * a later live value (writes after the call) only makes X larger: either way the
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
	larder__room_wait(c, seq, 1000000u);
	atomic_fetch_sub_explicit(&m->pass_waiters, 1, LARDER__RELAXED); /* a count */
}

/* Which pass of a shard to wait for. */
enum pass_wanted {
	PASS_FRESH,   /* one numbered after a fence taken now */
	PASS_RUNNING, /* the one running at a fence taken now, if any */
	PASS_NEXT,    /* the next to end */
};

/* Shard i's maintainer has ended the pass wanted; *after gets its number. */
static int await_shard(larder *c, unsigned i, uint64_t deadline_ns, enum pass_wanted want,
		       uint64_t *after)
{
	struct larder__maint *m = c->shard[i].maint;
	if (want != PASS_NEXT)
		atomic_thread_fence(LARDER__SEQ_CST); /* QUIESCE-Q1's partner */
	if (want == PASS_NEXT) /* relaxed: a number to wait past; the acquire below orders */
		*after = atomic_load_explicit(&m->ended_seq, LARDER__RELAXED) + 1;
	else
		*after = atomic_load_explicit(&m->pass_seq, LARDER__RELAXED) + (want == PASS_FRESH);
	/* QUIESCE-Q5: acquire, pairs with QUIESCE-Q4. */
	while (atomic_load_explicit(&m->ended_seq, LARDER__ACQUIRE) < *after) {
		if (larder__monotonic_ns() >= deadline_ns)
			return LARDER_EBUSY;
		larder__maint_await_pass(&c->shard[i]);
	}
	return LARDER_OK;
}

/* One round: await_shard() for each shard in turn; after[i] gets the numbers. */
static int await_round(larder *c, uint64_t deadline_ns, enum pass_wanted want, uint64_t *after,
		       unsigned *passes)
{
	for (unsigned i = 0; i < c->shard_count; i++) {
		int rc = await_shard(c, i, deadline_ns, want, &after[i]);
		if (rc != LARDER_OK)
			return rc;
		++*passes;
	}
	return LARDER_OK;
}

/* What the shards' passes published at their ends, summed. */
struct ended {
	uint64_t live, removed;
	int settled;      /* every shard settled after its drained[] number */
	unsigned largest; /* the shard of the most live bytes */
};

static struct ended read_ended(larder *c, const uint64_t *drained)
{
	struct ended e = {0, 0, 1, 0};
	uint64_t most = 0;
	for (unsigned i = 0; i < c->shard_count; i++) {
		struct larder__maint *m = c->shard[i].maint;
		/* QUIESCE-Q8: acquire, pairs with QUIESCE-Q7: the removed bytes
		 * read next are that pass's or a later one's (QUIESCE-Q9), and so
		 * are its counters. */
		uint64_t live = atomic_load_explicit(&m->ended_live, LARDER__ACQUIRE);
		e.live += live;
		e.removed += atomic_load_explicit(&m->removed_bytes, LARDER__RELAXED);
		/* Relaxed: ordered by the acquire of ended_seq (QUIESCE-Q5). */
		e.settled &= atomic_load_explicit(&m->settled_seq, LARDER__RELAXED) >= drained[i];
		if (live > most) {
			most = live;
			e.largest = i;
		}
	}
	return e;
}

int larder__maint_flush(larder *c, uint64_t timeout_ms, unsigned *passes)
{
	*passes = 0;
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
	uint64_t removed_before = 0;
	for (unsigned i = 0; i < c->shard_count; i++) /* relaxed: only a hint of activity */
		removed_before += atomic_load_explicit(&c->shard[i].maint->removed_bytes,
						       LARDER__RELAXED);
	/* Step 1: a round whose passes drain what was posted before the call. */
	int rc = await_round(c, deadline_ns, PASS_FRESH, drained, passes);
	if (rc != LARDER_OK)
		return rc;
	struct ended e = read_ended(c, drained);
	while (!e.settled) {
		rc = await_round(c, deadline_ns, PASS_FRESH, after, passes);
		if (rc != LARDER_OK)
			return rc;
		e = read_ended(c, drained);
	}
	/* Step 2: the excess as of those writes, the capacity read after the
	 * live bytes; then the next pass end of one shard at a time, the
	 * largest shard's first (any pass end publishes its progress). */
	uint64_t cap = atomic_load_explicit(&c->capacity, LARDER__RELAXED); /* a setting */
	uint64_t excess = e.live > cap ? e.live - cap : 0;
	uint64_t removed0 = e.removed;
	int moved = e.removed != removed_before;
	for (unsigned i = e.largest; excess && e.removed - removed0 < excess;
	     i = (i + 1) % c->shard_count) {
		rc = await_shard(c, i, deadline_ns, PASS_NEXT, &after[i]);
		if (rc != LARDER_OK)
			return rc;
		++*passes;
		e = read_ended(c, drained);
		moved = 1;
		if (e.live <= atomic_load_explicit(&c->capacity, LARDER__RELAXED))
			break;
	}
	/* Step 3: a shard evicting by a stale view ends its pass. A pass that
	 * begins after the fence sees, by it, what the last acquires saw. */
	if (c->shard_count > 1 && moved)
		rc = await_round(c, deadline_ns, PASS_RUNNING, after, passes);
	return rc;
}

int larder_flush(larder *c, uint64_t timeout_ms)
{
	unsigned passes;
	return larder__maint_flush(c, timeout_ms, &passes);
}
