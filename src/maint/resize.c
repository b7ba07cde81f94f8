/*
 * maint/resize.c - growing and shrinking the index (TABLE-L1 and TABLE-L3 in
 * index/table.h): a chunk of homes per pass moves into the next table,
 * whose root replaces the old one at the end (R-ROOT); the old table is
 * freed after a grace period.
 */
#include "core/cache.h"
#include "index/table.h"
#include "maint/state.h"
#include "sync/reclaim.h"

#define MIGRATE_PER_PASS 1024u
/* A shrinking table is under 1/8 full (TABLE-L3): 8x the homes hold about the
 * entries a growth's chunk moves. */
#define SHRINK_PER_PASS (8u * MIGRATE_PER_PASS)

void larder__maint_free_tables(struct larder__maint *m)
{
	struct larder__table **p = &m->tables;
	while (*p) {
		struct larder__table *t = *p;
		if (larder__gp_poll(t->retire_token)) {
			*p = t->retire_next;
			larder__table_destroy(t);
		} else {
			p = &t->retire_next;
		}
	}
}

/* The migration's callbacks (ctx: the maintainer). */
static uint64_t migrating_hash(void *ctx, const struct larder__entry *e)
{
	return larder__maint_entry_hash(((struct larder__maint *)ctx)->cache, e);
}

static void drop_migrating(void *ctx, struct larder__entry *e)
{
	larder__maint_retire(ctx, e, LARDER_CAUSE_EVICTED, 1);
}

/*
 * Moves up to `homes` homes of t into its next table (index/table.h); true
 * when t is done. An entry that finds no slot there (a table full to its
 * last bucket: not expected at the loads resizes aim for) is dropped as
 * EVICTED, and the listener hears of it only after the migration let go of
 * the bucket locks, so that the listener may write to this cache. The
 * dropped entries are the ones larder__maint_retire() put on the collect list meanwhile.
 */
int larder__maint_migrate(struct larder__maint *m, struct larder__table *t, size_t homes)
{
	struct larder *c = m->cache;
	struct larder__entry *before = m->collect;
	m->migrating = 1;
	int done = larder__table_migrate(t, homes, migrating_hash, drop_migrating, m);
	m->migrating = 0;
	for (struct larder__entry *e = m->collect; c->listener && e != before; e = e->retired_next)
		larder__maint_call_listener(m, e, LARDER_CAUSE_EVICTED);
	return done;
}

/* ---- Index growth and shrinking -------------------------------------------- */

/*
 * About how many entries the current table holds: live_count counts those
 * of cleared tables too until the walk retires them, and a fresh table
 * (the first table's size) must not grow for them. An estimate: inserts
 * posted around a clear may fall on either side of it.
 */
static uint64_t root_entries(struct larder__maint *m)
{
	if (!m->gens)
		return m->live_count;
	uint64_t cleared = larder__maint_stat(m, LARDER_STAT_CLEARED);
	uint64_t walking = m->cleared_goal > cleared ? m->cleared_goal - cleared : 0;
	return m->live_count > walking ? m->live_count - walking : 0;
}

/*
 * TABLE-L3: starts shrinking root if it is sparse. Only while the count is exact
 * (no cleared table left to walk, see root_entries()) and final: while
 * evictions are still to come (a capacity cut) it falls further, and a
 * shrink then would call for another one soon after.
 */
static int shrink_begin(struct larder__maint *m, struct larder__table *root)
{
	if (m->gens || m->live_bytes > m->policy_capacity)
		return -1;
	/* Relaxed: ours, or a test's setting (larder__test_index_floor). */
	uint64_t floor = atomic_load_explicit(&m->index_floor, LARDER__RELAXED);
	unsigned k = larder__table_shrink_shift(root, m->live_count, floor);
	return k ? larder__table_shrink_begin(root, k) : -1;
}

int larder__maint_resize(struct larder__maint *m)
{
	LARDER__MAINT_OWNER(m);
	struct larder__shard *s = m->shard;
	struct larder__table *root = (struct larder__table *)atomic_load_explicit(
		s->table, LARDER__ACQUIRE); /* A-ROOT */
	if (!m->growing) {
		/* Relaxed: a hint. An ask about a table resized out of since
		 * (a writer that failed during that resize) is stale. */
		uintptr_t asked = atomic_exchange_explicit(&s->grow_wanted, 0, LARDER__RELAXED);
		if (asked == (uintptr_t)root || larder__table_over_load(root, root_entries(m))) {
			if (larder__table_grow_begin(root) != 0)
				return 0; /* no memory: writers keep probing the current table */
		} else if (shrink_begin(m, root) != 0) {
			return 0; /* nothing to do, or no memory: the table stays */
		}
		m->growing = root;
	}
	struct larder__table *t = m->growing, *next = larder__table_next(t);
	int shrinking = larder__table_buckets(next) < larder__table_buckets(t);
	size_t chunk = shrinking ? SHRINK_PER_PASS : MIGRATE_PER_PASS;
	/* If entries arrive faster than we move homes, move the rest now. A
	 * writer that asks for growth meanwhile found no free slot within reach
	 * in homes not moved yet (the old table keeps filling until they are):
	 * finishing this resize answers it; another would double a table that
	 * is not full (a writer still stuck asks again). */
	if (root_entries(m) * 5 > larder__table_slots(next) * 3 ||
	    atomic_exchange_explicit(&s->grow_wanted, 0, LARDER__RELAXED) != 0) /* a hint */
		chunk = SIZE_MAX;
	if (!larder__maint_migrate(m, t, chunk))
		/* A shrink's passes follow one another at once (as busy as
		 * LARDER__MAINT_BUSY_PASS): nothing else hurries it, and the memory it
		 * frees waits for its end (at one batching window per 1,024
		 * homes, a 1,245,184-bucket table took over 1 s on a loaded
		 * machine, into the churn that followed a capacity cut). */
		return shrinking ? (int)LARDER__MAINT_BUSY_PASS : 1;
	uintptr_t expect = (uintptr_t)t;
	m->growing = NULL;
	/* R-ROOT: release, the new table's contents before readers that load
	 * the root (A-ROOT). Fails only if a clear swapped t out: then the
	 * cleared generation owns t and next. */
	if (atomic_compare_exchange_strong_explicit(s->table, &expect, (uintptr_t)next,
						    LARDER__RELEASE, LARDER__RELAXED)) {
		t->retire_token = larder__gp_start();
		t->retire_next = m->tables;
		m->tables = t;
		larder__maint_bump(
			m, shrinking ? LARDER_STAT_INDEX_SHRINKS : LARDER_STAT_INDEX_RESIZES, 1);
	}
	return 1;
}
