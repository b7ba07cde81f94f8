/*
 * maint/resize.c - growing and shrinking the index (TABLE-L1 and TABLE-L3 in
 * index/table.h): a chunk of homes per pass moves into the next table,
 * whose root replaces the old one at the end (R-ROOT); the old table is
 * freed after a grace period. And a bulk writer's reserve (SNAP-L6 in
 * core/snapshot.c): the index grown for a load's records before they are
 * written, at once by 2^k, and never shrunk while a bulk writer runs.
 */
#include "core/cache.h"
#include "core/thread.h"
#include "index/table.h"
#include "maint/maintainer.h"
#include "maint/state.h"
#include "sync/futex.h"
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

/* t, unreachable from the root now, is destroyed once a grace period
 * started here ends (TABLE-X4; larder__maint_free_tables). */
static void retire_table(struct larder__maint *m, struct larder__table *t)
{
	t->retire_token = larder__gp_start();
	t->retire_next = m->tables;
	m->tables = t;
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
	return m->live_count > m->clear_left ? m->live_count - m->clear_left : 0;
}

/*
 * TABLE-L3: starts shrinking root if it is sparse. Only while the count is exact
 * (no cleared table left to walk, see root_entries()), final (while
 * evictions are still to come, a capacity cut, it falls further, and a
 * shrink then would call for another one soon after) and not about to grow:
 * no bulk writer runs (SNAP-L6). A load's writers outrun the maintainer
 * (EV-V7), so the count trails the index by up to (512 + 4,096) events of
 * 16 entries per loader thread, and a table grown for the load (at once by
 * its reserve, or by writers out of slots, whatever the count says) looked
 * sparse: the shrink, sized for the count, put the entries into a table of
 * too few slots, each copy probing further into a full table while the
 * loaders waited on their spills (a load of 10^6 entries into a cache
 * opened expecting 4,096 had not ended after 30 s), and dropped those that
 * found none (tests/unit/test_snapshot.c, without this rule: 42,656 and
 * 96,416 of 100,000 entries lost in two runs). Beside ordinary writers the
 * count trails too, by their rings' unread events, and a shrink while
 * entries arrive fills the smaller table as it moves homes: sized for a
 * count of 1 or 2 while one writer's 3,000 entries went in, four shards'
 * shrinks dropped up to 288 of them (test_shrink_beside_a_writer_keeps_entries
 * in tests/unit/test_audit_core.c). So no shrink begins while the count
 * grew since the last check, nor while an event waits in a ring (the count
 * is then short of the table by at most one insert per writer thread, the
 * one between its slot and its event). That was not enough alone: a
 * writer that paused for two passes (descheduled: ThreadSanitizer at a load
 * average of 15 lost 14 to 300 of the 3,000 in 3 runs of 3) came back to a
 * shrink and filled the small table. So no key is added while a table
 * shrinks (TABLE-X5): writers wait for the end, which their ask hurries
 * (chunk below). Nor was that enough: keys put between this decision and
 * the writers' sight of the target went uncounted (shrink_overfilled()), so
 * the homes move from the next pass on, after a count that includes them,
 * and a target they overfill is given up. The target then holds what was
 * counted at half load, so the migration finds a slot for every entry. A
 * maintainer thread's writes (a listener's, of this cache or another, of
 * this shard or another) may not wait: they add new keys while the quarter
 * of the target's slots set aside for them lasts, then fail with
 * LARDER_EBUSY (larder__table_room_take). Without that bound a listener
 * that put 16 new keys per expiry it heard filled a target of 896 slots
 * with 4,800 and the migration dropped 3,904 as EVICTED
 * (tests/unit/test_shrink.c). A room that grew with them (a bigger target)
 * would need a target chosen again after homes moved, and the homes of a
 * shrink cannot move back; a refusal is a result larder.h already gives a
 * listener's write, and the pass it hurries (the refused write's ask)
 * ends the shrink.
 */
static int shrink_begin(struct larder__maint *m, struct larder__table *root)
{
	uint64_t seen = m->shrink_seen_count;
	m->shrink_seen_count = m->live_count;
	if (m->gens || m->bulk_seen || m->live_bytes > m->policy_capacity || m->live_count > seen ||
	    !larder__maint_rings_empty(m->shard))
		return -1;
	/* Relaxed: ours, or a test's setting (larder__test_index_floor). */
	uint64_t floor = atomic_load_explicit(&m->index_floor, LARDER__RELAXED);
	unsigned k = larder__table_shrink_shift(root, m->live_count, floor);
	return k ? larder__table_shrink_begin(root, k) : -1;
}

/*
 * TABLE-X5: whether the shrink of t into next, begun a pass ago and with no
 * home moved yet, must be given up: the keys added between shrink_begin()'s
 * count and the writers' sight of next (a maintainer preempted in between
 * let two writers put 963 keys into a table it had counted empty, and the
 * target of 448 slots dropped 582 of them: test_shrink_beside_writers_keeps_entries)
 * were counted by this pass's drain, and next no longer holds them at half
 * load. Only while t is the root: a clear that swapped it out owns t and
 * next (maint/clear.c).
 */
static int shrink_overfilled(struct larder__maint *m, struct larder__table *root,
			     struct larder__table *t, struct larder__table *next)
{
	return t->moved == 0 && t == root && !m->gens &&
	       root_entries(m) * 2 > larder__table_slots(next);
}

/* Gives the shrink up: writers add keys to t again, and the empty target is
 * destroyed after a grace period, with the tables retired. */
static void shrink_abandon(struct larder__maint *m, struct larder__table *t)
{
	m->growing = NULL;
	retire_table(m, larder__table_resize_abandon(t));
	larder__maint_wake_writers(m->cache); /* those TABLE-X5 held */
}

/* SNAP-L6: the entries a bulk writer asked t to hold; 0 when none did, or
 * the ask names another table (a clear or a resize since made it stale). */
static uint64_t reserve_asked(struct larder__shard *s, struct larder__table *t)
{
	/* Relaxed: hints, as grow_wanted; a torn pair only sizes a table. */
	if (atomic_load_explicit(&s->reserve_table, LARDER__RELAXED) != (uintptr_t)t)
		return 0;
	return atomic_load_explicit(&s->reserve_entries, LARDER__RELAXED);
}

/* SNAP-L6: the ask about t is answered (a growth begun, refused, or not
 * needed); a newer ask about another table stays. */
static void reserve_answer(struct larder__shard *s, struct larder__table *t)
{
	uintptr_t expect = (uintptr_t)t;
	/* R-RESV: release, pairs with A-RESV in reserve_shard(): the growth
	 * begun here (R-NEXT) is seen by the writer that sees the answer. */
	atomic_compare_exchange_strong_explicit(&s->reserve_table, &expect, 0, LARDER__RELEASE,
						LARDER__RELAXED);
}

int larder__maint_resize(struct larder__maint *m)
{
	LARDER__MAINT_OWNER(m);
	struct larder__shard *s = m->shard;
	struct larder__table *root = (struct larder__table *)atomic_load_explicit(
		s->table, LARDER__ACQUIRE); /* A-ROOT */
	int hurry = 0;
	if (!m->growing) {
		/* Relaxed: a hint. An ask about a table resized out of since
		 * (a writer that failed during that resize) is stale. */
		uintptr_t asked = atomic_exchange_explicit(&s->grow_wanted, 0, LARDER__RELAXED);
		uint64_t entries = root_entries(m), reserve = reserve_asked(s, root);
		if (reserve > entries)
			entries = reserve;
		if (asked == (uintptr_t)root || larder__table_over_load(root, entries)) {
			unsigned k = larder__table_grow_shift(root, entries);
			int rc = k ? larder__table_grow_begin(root, k) : -1;
			if (reserve)
				reserve_answer(s, root);
			if (rc != 0)
				return 0; /* no memory: writers keep probing the current table */
			/* A bulk writer waits for this growth: move every home now. */
			hurry = reserve != 0;
		} else {
			if (reserve)
				reserve_answer(s, root); /* root holds them already */
			if (shrink_begin(m, root) != 0)
				return 0; /* nothing to do, or no memory: the table stays */
			/* TABLE-X5: the homes move from the next pass on, once its
			 * drain counted what came in before writers saw the target. */
			m->growing = root;
			return (int)LARDER__MAINT_BUSY_PASS;
		}
		m->growing = root;
	}
	struct larder__table *t = m->growing, *next = larder__table_next(t);
	int shrinking = larder__table_buckets(next) < larder__table_buckets(t);
	if (shrinking && shrink_overfilled(m, root, t, next)) {
		shrink_abandon(m, t);
		return 1;
	}
	size_t chunk = shrinking ? SHRINK_PER_PASS : MIGRATE_PER_PASS;
	/* If entries arrive faster than we move homes, move the rest now. A
	 * writer that asks for growth meanwhile found no free slot within reach
	 * in homes not moved yet (the old table keeps filling until they are):
	 * finishing this resize answers it; another would double a table that
	 * is not full (a writer still stuck asks again). So does a bulk
	 * writer's reserve (SNAP-L6): it waits for this table to be done. */
	if (hurry || root_entries(m) * 5 > larder__table_slots(next) * 3 ||
	    reserve_asked(s, t) != 0 ||
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
		retire_table(m, t);
		larder__maint_bump(
			m, shrinking ? LARDER_STAT_INDEX_SHRINKS : LARDER_STAT_INDEX_RESIZES, 1);
	}
	/* Writers that waited for this resize (a full table, or TABLE-X5's
	 * shrink) retry now rather than at their wait's next slice. */
	larder__maint_wake_writers(m->cache);
	return 1;
}

/* ---- A bulk writer's reserve (SNAP-L6) ------------------------------------ */

/* How long larder__bulk_begin() waits for its growth, and how many tables it
 * asks each shard about: a clear swaps the root for a fresh table, which needs asking
 * again, and a thread clearing without pause must not keep a load waiting. */
#define RESERVE_WAIT_MS 2000u
#define RESERVE_ASKS 4u

/*
 * Asks shard s's maintainer to grow its index to hold `entries`
 * (reserve_table and reserve_entries, which larder__maint_resize() reads as
 * it reads grow_wanted: at once by 2^k, every home moved in the pass that
 * begins it). Until deadline_ns (0: not at all), waits for the root to hold
 * them, for the answer to say the growth was refused (no memory), or for
 * RESERVE_ASKS tables asked about, whichever comes first. Only a hint
 * either way: whatever happens, the writes grow the index as any writes do.
 */
static void reserve_shard(struct larder__shard *s, struct larder__thread *self, uint64_t entries,
			  uint64_t deadline_ns)
{
	uintptr_t asked = 0;
	for (unsigned asks = 0;;) {
		/* In a read section: the table is not freed while we read it (TABLE-X4). */
		uint64_t outer = larder__read_enter(&self->reader);
		/* A-ROOT: acquire, pairs with R-ROOT; the table's size is seen. */
		struct larder__table *root =
			(struct larder__table *)atomic_load_explicit(s->table, LARDER__ACQUIRE);
		int over = larder__table_over_load(root, entries);
		/* A-RESV: acquire, pairs with R-RESV; an answered growth's next
		 * table (A-NEXT below) is seen. */
		int answered = asked == (uintptr_t)root &&
			       atomic_load_explicit(&s->reserve_table, LARDER__ACQUIRE) != asked;
		int growing = larder__table_next(root) != NULL;
		larder__read_exit(&self->reader, outer);
		if (!over)
			return;
		if (asked != (uintptr_t)root) {
			if (asks++ == RESERVE_ASKS)
				return;
			asked = (uintptr_t)root;
			/* Relaxed: hints (reserve_asked() reads them so). */
			atomic_store_explicit(&s->reserve_entries, entries, LARDER__RELAXED);
			atomic_store_explicit(&s->reserve_table, asked, LARDER__RELAXED);
			larder__maint_wake(s, NULL, 0);
		} else if (answered && !growing) {
			return; /* refused: no memory for the table */
		}
		if (larder__monotonic_ns() >= deadline_ns)
			return;
		larder__maint_await_pass(s);
	}
}

/*
 * Every shard asked for its share of `entries` (a key's shard is its hash's
 * low bits, so the shares are even up to chance; a shard that gets more
 * grows under the writes as usual), all asked before any is waited for, so
 * that their maintainers grow in parallel; with wait, for at most
 * RESERVE_WAIT_MS in all.
 */
static void reserve(struct larder *c, uint64_t entries, int wait)
{
	struct larder__thread *self = larder__thread_self();
	/* A maintainer thread waits for no pass (core/cache.c, wait_pass). */
	if (!self || self->maintainer || larder__read_active(&self->reader))
		return;
	uint64_t share = (entries + c->shard_count - 1) / c->shard_count;
	for (unsigned i = 0; i < c->shard_count; i++)
		reserve_shard(&c->shard[i], self, share, 0);
	if (!wait)
		return;
	uint64_t deadline_ns = larder__monotonic_ns() + RESERVE_WAIT_MS * 1000000ull;
	for (unsigned i = 0; i < c->shard_count; i++)
		reserve_shard(&c->shard[i], self, share, deadline_ns);
}

void larder__bulk_begin(struct larder *c, uint64_t entries)
{
	/* Relaxed: only the count matters (no maintainer shrinks while it is
	 * not 0), and the writes it covers have not begun. */
	atomic_fetch_add_explicit(&c->bulk_writers, 1, LARDER__RELAXED);
	reserve(c, entries, 1);
}

void larder__bulk_reserve(struct larder *c, uint64_t entries)
{
	reserve(c, entries, 0);
}

void larder__bulk_end(struct larder *c)
{
	/* R-BULK: release, pairs with A-BULK: a pass that sees the count fall
	 * drains every event the bulk writer posted before it, so the entry
	 * count its shrink decision reads includes them. */
	atomic_fetch_sub_explicit(&c->bulk_writers, 1, LARDER__RELEASE);
}
