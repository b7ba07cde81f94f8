/*
 * maint/seams.c - the test seams that look into or drive the maintainer
 * (declared in core/testing.h): quiescing, walking the index, checking the
 * policy's links, the TTL wheel's progress, the index's floor, the passes
 * of a flush.
 *
 * A seam that needs a pass waits for one as larder_flush does
 * (larder__maint_await_pass, maint/flush.c); each wait is bounded by the
 * caller's deadline, so a seam never hangs a test.
 */
#define _GNU_SOURCE
#include "core/cache.h"
#include "core/testing.h"
#include "core/thread.h"
#include "index/table.h"
#include "maint/maintainer.h"
#include "maint/state.h"
#include "mem/slab.h"
#include "sync/futex.h"
#include "sync/reclaim.h"

/* One pass of every shard that began after the call and found nothing to do,
 * with the pages it emptied unmapped; -1 past the deadline. */
static int quiesce_sweep(larder *c, uint64_t deadline_ns)
{
	for (unsigned i = 0; i < c->shard_count; i++) {
		struct larder__shard *s = &c->shard[i];
		atomic_thread_fence(LARDER__SEQ_CST); /* QUIESCE-Q1's partner */
		/* A pass numbered above the value read here drains all we posted. */
		uint64_t after = atomic_load_explicit(&s->maint->pass_seq, LARDER__RELAXED) + 1;
		/* QUIESCE-Q3: acquire, pairs with QUIESCE-Q2: that pass's frees are
		 * visible. Then the pages they emptied must be unmapped too (the
		 * slab's lock orders it). */
		while (atomic_load_explicit(&s->maint->idle_seq, LARDER__ACQUIRE) < after ||
		       larder__slab_returning(&s->slab)) {
			if (larder__monotonic_ns() >= deadline_ns)
				return -1;
			larder__maint_await_pass(s);
		}
	}
	return 0;
}

/* The shards' published live bytes (core/shard.h), over the capacity. */
static int shards_over_capacity(larder *c)
{
	uint64_t live = 0;
	for (unsigned i = 0; i < c->shard_count; i++) /* relaxed: hints, as the shards read them */
		live += atomic_load_explicit(&c->shard[i].live_bytes, LARDER__RELAXED);
	return live > atomic_load_explicit(&c->capacity, LARDER__RELAXED); /* relaxed: a setting */
}

/*
 * With several shards one sweep is not enough: a shard over capacity but
 * under the mean leaves the eviction to the largest (maint/evict.c,
 * takes_turn) and wakes it, maybe after the sweep has passed it. So the
 * sweeps go on until the published live bytes fit the capacity (at rest
 * they always come to: the largest shard always takes its turn), and then
 * one more, which waits out an eviction still in flight: a pass that starts
 * after they fit finds nothing to evict and wakes no one.
 */
int larder__test_quiesce(larder *c, uint64_t timeout_ms)
{
	uint64_t deadline_ns = larder__monotonic_ns() + timeout_ms * 1000000u;
	if (quiesce_sweep(c, deadline_ns) != 0)
		return -1;
	if (c->shard_count == 1)
		return 0;
	while (shards_over_capacity(c))
		if (quiesce_sweep(c, deadline_ns) != 0)
			return -1;
	return quiesce_sweep(c, deadline_ns);
}

struct walk_totals {
	uint64_t entries, bytes;
};

static void walk_count(void *ctx, struct larder__entry *e)
{
	struct walk_totals *w = ctx;
	w->entries++;
	w->bytes += larder__slab_charge(larder__entry_size(e));
}

void larder__test_walk(larder *c, uint64_t *entries, uint64_t *slot_bytes)
{
	struct walk_totals w = {0, 0};
	/* In a read section: an entry the maintainer unlinks meanwhile (a TTL
	 * on the real clock) is not freed under the walk. */
	struct larder__thread *t = larder__thread_self();
	uint64_t outer = t ? larder__read_enter(&t->reader) : 0;
	for (unsigned i = 0; i < c->shard_count; i++) {
		struct larder__table *root = /* A-ROOT */
			(struct larder__table *)atomic_load_explicit(c->shard[i].table,
								     LARDER__ACQUIRE);
		larder__table_walk(root, walk_count, &w);
	}
	if (t)
		larder__read_exit(&t->reader, outer);
	*entries = w.entries;
	*slot_bytes = w.bytes;
}

int larder__test_check_links(larder *c, uint64_t timeout_ms)
{
	uint64_t deadline_ns = larder__monotonic_ns() + timeout_ms * 1000000u;
	int ok = 1;
	for (unsigned i = 0; i < c->shard_count; i++) {
		struct larder__maint *m = c->shard[i].maint;
		/* R-CHKQ: release, pairs with A-CHKQ in check_links_if_asked(). */
		uint64_t asked =
			atomic_fetch_add_explicit(&m->check_asked, 1, LARDER__RELEASE) + 1;
		/* A-CHKA: acquire, pairs with R-CHKA: check_ok is the answer. */
		while (atomic_load_explicit(&m->check_answered, LARDER__ACQUIRE) < asked) {
			if (larder__monotonic_ns() >= deadline_ns)
				return -1;
			larder__maint_await_pass(&c->shard[i]);
		}
		/* Relaxed: A-CHKA above ordered the answer. */
		ok &= atomic_load_explicit(&m->check_ok, LARDER__RELAXED);
	}
	return ok ? 0 : -1;
}

void larder__test_wake(larder *c)
{
	larder__maint_wake_all(c);
}

/* The wheels' seams: the earliest of the shards' readings, the one a test
 * waiting for every shard needs. */
uint64_t larder__test_idle_until(larder *c)
{
	uint64_t until = UINT64_MAX;
	for (unsigned i = 0; i < c->shard_count; i++) {
		/* Relaxed: a reading for a test that polls it. */
		uint64_t u = atomic_load_explicit(&c->shard[i].maint->idle_until, LARDER__RELAXED);
		until = u < until ? u : until;
	}
	return until;
}

uint64_t larder__test_empty_followups(larder *c)
{
	uint64_t n = 0;
	for (unsigned i = 0; i < c->shard_count; i++) /* relaxed: a count for a test */
		n += atomic_load_explicit(&c->shard[i].maint->empty_followups, LARDER__RELAXED);
	return n;
}

int larder__test_flush(larder *c, uint64_t timeout_ms, unsigned *passes)
{
	return larder__maint_flush(c, timeout_ms, passes);
}

uint64_t larder__test_wheel_done(larder *c)
{
	uint64_t done = UINT64_MAX;
	for (unsigned i = 0; i < c->shard_count; i++) {
		/* A-WHEEL: acquire, pairs with R-WHEEL in larder__maint_expire(). */
		uint64_t d = atomic_load_explicit(&c->shard[i].maint->wheel_done, LARDER__ACQUIRE);
		done = d < done ? d : done;
	}
	return done;
}

void larder__test_index_floor(larder *c, uint64_t buckets)
{
	for (unsigned i = 0; i < c->shard_count; i++)
		/* Relaxed: the maintainer reads it at its next shrink decision. */
		atomic_store_explicit(&c->shard[i].maint->index_floor, buckets, LARDER__RELAXED);
}

void larder__test_poison_freed(int on)
{
	larder__slab_poison = on;
}
