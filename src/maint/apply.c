/*
 * maint/apply.c - what the maintainer does with what caller threads post:
 * it drains every handle's event ring (and spill) and hit ring, keeps the
 * live totals and the eviction policy in step with the index (accounting,
 * retiring), frees retired entries after their grace period, and dismantles
 * the handles of threads that exited.
 *
 * An entry is met first through its insert event, or through any later one
 * when threads' rings are drained out of order: account() counts it the
 * first time (mbits COUNTED), admit() queues it in the policy, and
 * retire_onto() takes it out of both, once (mbits DEAD), with the listener
 * call; MAINT-M1..M4 in maint/maintainer.c. The commonest event, an
 * overwrite of the same sizes, takes a shorter inlined path
 * (apply_overwrite, from the ring or the spill) with the same effects, and
 * an insert is admitted there too, without apply()'s call and dispatch. A
 * bulk writer's block (a load's 16 writes, EV-V7) has its stretches of
 * first-time inserts queued in the policy as one run (apply_batch,
 * POLICY-P6): about 242 -> 155 instructions per loaded entry
 * (docs/persistence.md).
 */
#define _GNU_SOURCE
#include <stdlib.h>

#include "core/cache.h"
#include "core/compress.h"
#include "core/hash.h"
#include "core/thread.h"
#include "evict/s3fifo.h"
#include "maint/events.h"
#include "maint/state.h"
#include "mem/slab.h"
#include "pool/probe.h"

uint64_t larder__maint_entry_hash(void *ctx, const struct larder__entry *e)
{
	struct larder *c = ctx;
	return larder__hash(c->seed, larder__entry_key((struct larder__entry *)e), e->key_len);
}

/* ---- Entry accounting ---------------------------------------------------- */

/* An entry's flags and sizes, read from its header once per event and
 * passed down (ENTRY-E1: they never change): accounting, the policy and retiring
 * each need them, and computing them at each step cost about 10 of the
 * maintainer's 400 instructions per put (docs/bench.md). */
struct sized {
	struct larder__entry *e;
	unsigned flags;
	unsigned sclass; /* the slot's size class, or LARDER__EV_NO_CLASS: a mapping */
	size_t bytes, charge;
};

static inline __attribute__((always_inline)) struct sized sized_of(struct larder__entry *e)
{
	unsigned flags = larder__entry_flags(e);
	size_t bytes = larder__entry_bytes(flags, e->key_len, e->value_len);
	if (bytes > LARDER__SLAB_MAX_SLOT) /* a mapping: no class */
		return (struct sized){ e, flags, LARDER__EV_NO_CLASS, bytes,
				       larder__slab_charge(bytes) };
	/* The class once, for the charge, the slab's live counts and the
	 * free code (retire_unqueued), each of which derived it again. */
	unsigned sclass = larder__sizeclass_of(bytes);
	return (struct sized){ e, flags, sclass, bytes, larder__sizeclass_slot(sclass) };
}

/* sized_of() with the size class an insert's event carries (the writer
 * computed it for the charge), as apply_overwrite() takes it: the class
 * is not derived from the sizes twice more (for the charge and for the
 * slab's live count). */
static inline __attribute__((always_inline)) struct sized sized_of_class(struct larder__entry *e,
									 unsigned sclass)
{
	if (sclass == LARDER__EV_NO_CLASS)
		return sized_of(e);
	unsigned flags = larder__entry_flags(e);
	return (struct sized){ e, flags, sclass,
			       larder__entry_bytes(flags, e->key_len, e->value_len),
			       larder__sizeclass_slot(sclass) };
}

/* Counts e, neither counted nor dead, in the live totals. */
static inline void account_new(struct larder__maint *m, const struct sized *s)
{
	struct larder__entry *e = s->e;
	e->mbits |= LARDER__MBITS_COUNTED;
	if (s->flags & LARDER__ENTRY_TTL)
		larder__maint_wheel_track(m, e);
	if (s->sclass != LARDER__EV_NO_CLASS)
		larder__slab_note_live_class(&m->shard->slab, e, s->sclass);
	else
		larder__slab_note_live(&m->shard->slab, e, s->bytes);
	m->live_count++;
	m->live_bytes += s->charge;
}

/* Counts e in the live totals the first time the maintainer meets it. */
static void account(struct larder__maint *m, const struct sized *s)
{
	if (!(s->e->mbits & (LARDER__MBITS_COUNTED | LARDER__MBITS_DEAD)))
		account_new(m, s);
}

static inline __attribute__((always_inline)) void admit(struct larder__maint *m,
							  const struct sized *s, uint64_t hash)
{
	struct larder__entry *e = s->e;
	if (e->mbits & LARDER__MBITS_DEAD)
		return; /* already replaced through another thread's ring */
	account(m, s);
	if (!(e->mbits & LARDER__MBITS_QUEUED)) {
		m->ops->insert(m->policy, e, hash, s->charge);
		if (__builtin_expect(s->flags & LARDER__ENTRY_SAMPLED, 0)) /* PROBE-P4 */
			larder__probe_insert(m->probe, e, hash, s->charge);
		e->mbits |= LARDER__MBITS_QUEUED;
	}
}

/*
 * Calls the removal listener. listener_calls is odd while a call runs: a
 * writer waiting for this maintainer (core/cache.c, wait_pass) gives up
 * only if it sees the same odd value for a whole second, i.e. when the
 * listener, the one thing here that can block, has not returned.
 */
void larder__maint_call_listener(struct larder__maint *m, struct larder__entry *e,
				 enum larder_cause cause)
{
	struct larder *c = m->cache;
	/* Relaxed: we are the only writer; readers only compare values. */
	uint64_t n = atomic_load_explicit(&m->shard->listener_calls, LARDER__RELAXED);
	atomic_store_explicit(&m->shard->listener_calls, n + 1, LARDER__RELAXED);
	/* A compressed value is decompressed for the listener; without memory
	 * for that it gets no value (larder_config_set_compression). */
	unsigned f = larder__entry_flags(e);
	unsigned char *scratch;
	const unsigned char *value = larder__entry_plain_rcu(c, e, f, &scratch);
	c->listener(c->listener_ctx, larder__entry_key(e), e->key_len, value,
		    value ? larder__entry_plain_len(e, f) : 0, cause);
	larder__scratch_give(scratch);
	atomic_store_explicit(&m->shard->listener_calls, n + 2, LARDER__RELAXED); /* as above */
}

static const enum larder_stat cause_stat[] = {
	[LARDER_CAUSE_EXPLICIT] = LARDER_STAT_REMOVALS,
	[LARDER_CAUSE_REPLACED] = LARDER_STAT_REPLACEMENTS,
	[LARDER_CAUSE_EXPIRED] = LARDER_STAT_EXPIRATIONS,
	[LARDER_CAUSE_EVICTED] = LARDER_STAT_EVICTIONS,
	[LARDER_CAUSE_CLEARED] = LARDER_STAT_CLEARED,
};

/*
 * A retired entry's policy bits, its queues behind it (POLICY-P1), tell
 * free_list what the free of its slot needs of its sizes: 0, work it out
 * from the entry's header; k > 0, a slot up to LARDER__SLAB_BIG_FROM in a
 * page of LARDER__PAGE_MIN << (k - 1) bytes, whose free is a mask and the
 * bit (larder__slab_free_small). Retiring writes k wherever the size class
 * is known (every slab slot: struct sized carries it); the entry's flags
 * and sizes, its size class and page size cost the free about 11 of the
 * maintainer's 133 instructions per put (docs/bench.md).
 */
static inline unsigned free_code(unsigned sclass)
{
	if (larder__sizeclass_slot(sclass) > LARDER__SLAB_BIG_FROM)
		return 0;
	return larder__slab_page_order(sclass) + 1;
}
_Static_assert(LARDER__PAGE_ORDERS <= LARDER__MBITS_POLICY, "a free code fits the policy bits");

/* The overwrite path's per-class constants (maint/state.h), from the same
 * functions it called per event before. */
void larder__maint_classes_init(struct larder__maint *m)
{
	for (unsigned c = 0; c < LARDER__SIZECLASS_COUNT; c++)
		m->classes[c] = (struct larder__maint_class){
			~(uintptr_t)(larder__sizeclass_page(c) - 1),
			(uint32_t)larder__sizeclass_slot(c),
			(uint8_t)(LARDER__MBITS_COUNTED | LARDER__MBITS_DEAD | free_code(c)),
		};
}

/* The end of retire_sized(), for an entry counted and out of the policy's
 * queues: inlined where the event says that much (apply). Its free code
 * is its class's, 0 for a mapping (free_code). */
static inline void retire_unqueued(struct larder__maint *m, const struct sized *s,
				   enum larder_cause cause, int notify,
				   struct larder__entry **list, uint64_t *list_bytes)
{
	struct larder *c = m->cache;
	struct larder__entry *e = s->e;
	unsigned code = s->sclass != LARDER__EV_NO_CLASS
				? m->classes[s->sclass].dead_mbits & LARDER__MBITS_POLICY
				: 0;
	e->mbits = (uint8_t)((e->mbits & LARDER__MBITS_COUNTED) | LARDER__MBITS_DEAD | code);
	m->live_count--;
	m->live_bytes -= s->charge;
	larder__slab_note_gone(&m->shard->slab, s->bytes, s->sclass);
	if (s->flags & LARDER__ENTRY_TTL)
		larder__wheel_cancel(&m->wheel, larder__entry_wheel(e));
	if (notify) {
		larder__maint_bump(m, cause_stat[cause], 1);
		if (c->listener && !m->migrating && !m->closing)
			larder__maint_call_listener(m, e, cause);
	}
	e->retired_next = *list; /* ENTRY-E5: unlinked from every queue above */
	*list = e;
	*list_bytes += s->charge;
}

/*
 * MAINT-M3: the one way out. notify = 0 for a touch's superseded copy. The entry
 * goes onto *list (the collect list, or a cleared table's: see
 * larder__maint_clear_walk).
 */
static inline __attribute__((always_inline)) void
retire_sized(struct larder__maint *m, const struct sized *s, enum larder_cause cause,
	     int notify, struct larder__entry **list, uint64_t *list_bytes)
{
	struct larder__entry *e = s->e;
	if (e->mbits & LARDER__MBITS_DEAD)
		return;
	account(m, s);
	if (e->mbits & LARDER__MBITS_QUEUED)
		m->ops->remove(m->policy, e, s->charge);
	retire_unqueued(m, s, cause, notify, list, list_bytes);
}

void larder__maint_retire_onto(struct larder__maint *m, struct larder__entry *e,
			       enum larder_cause cause, int notify, struct larder__entry **list,
			       uint64_t *list_bytes)
{
	struct sized s = sized_of(e);
	retire_sized(m, &s, cause, notify, list, list_bytes);
}

void larder__maint_retire(struct larder__maint *m, struct larder__entry *e, enum larder_cause cause,
			  int notify)
{
	LARDER__MAINT_OWNER(m);
	larder__maint_retire_onto(m, e, cause, notify, &m->collect, &m->collect_bytes);
}

void larder__maint_retire_unlinked(struct larder__maint *m, struct larder__entry *e,
				   enum larder_cause cause)
{
	LARDER__MAINT_OWNER(m);
	struct sized s = sized_of(e);
	m->removed += s.charge; /* larder_flush */
	retire_sized(m, &s, cause, 1, &m->collect, &m->collect_bytes);
}

static void apply(struct larder__maint *m, const struct larder__event *ev);

/* Queues the run's entries, counted and neither queued nor dead, in the
 * policy: what admit() would do to each in turn (POLICY-P6; the probe's
 * calls for the marked ones after the policy's, PROBE-P1). */
static void admit_run(struct larder__maint *m, const struct larder__policy_new *run, size_t n)
{
	if (!n)
		return;
	larder__policy_insert_batch(m->ops, m->policy, run, n);
	for (size_t i = 0; i < n; i++) {
		if (__builtin_expect(larder__probe_marked(run[i].e), 0)) /* PROBE-P4 */
			larder__probe_insert(m->probe, run[i].e, run[i].hash, run[i].bytes);
		run[i].e->mbits |= LARDER__MBITS_QUEUED;
	}
}

/*
 * EV-V7: a bulk writer's events, applied in order. A stretch of inserts of
 * entries met for the first time (a load's common case) is counted entry
 * by entry and queued in the policy as one run (POLICY-P6: as admit() of
 * each in turn would); any other event first queues the run before it, so
 * it finds every earlier entry where the one-by-one order would have put
 * it (a key written twice in one block: its replace finds the insert's
 * entry queued).
 */
static void apply_batch(struct larder__maint *m, struct larder__event_batch *batch)
{
	struct larder__policy_new run[LARDER__BATCH_EVENTS];
	size_t n = 0;
	for (uint32_t i = 0; i < batch->n; i++) {
		const struct larder__event *ev = &batch->ev[i];
		struct larder__entry *b = ev->b;
		if (ev->kind == LARDER__EV_INSERT &&
		    !(b->mbits & (LARDER__MBITS_QUEUED | LARDER__MBITS_DEAD))) {
			struct sized s = sized_of_class(b, ev->sclass);
			account(m, &s);
			run[n++] = (struct larder__policy_new){ b, ev->hash, s.charge };
			continue;
		}
		admit_run(m, run, n);
		n = 0;
		apply(m, ev);
	}
	admit_run(m, run, n);
	free(batch);
}

static void apply(struct larder__maint *m, const struct larder__event *ev)
{
	struct larder__entry *a = ev->a, *b = ev->b;
	switch (ev->kind) {
	case LARDER__EV_INSERT: {
		struct sized sb = sized_of_class(b, ev->sclass);
		admit(m, &sb, ev->hash);
		break;
	}
	case LARDER__EV_REPLACE:
	case LARDER__EV_RELOCATE: {
		struct sized sa = sized_of(a), sb = sa;
		/* An overwrite mostly keeps the sizes: then b's are a's. */
		if (b->key_len != a->key_len || b->value_len != a->value_len ||
		    larder__entry_flags(b) != sa.flags)
			sb = sized_of(b);
		sb.e = b;
		enum larder_cause cause = (enum larder_cause)ev->cause;
		int notify = ev->kind == LARDER__EV_REPLACE;
		/* The common overwrite: b takes queued a's place (a queued
		 * entry is counted and not dead), and a leaves. */
		if ((a->mbits & LARDER__MBITS_QUEUED) && !(b->mbits & LARDER__MBITS_DEAD)) {
			account(m, &sb);
			m->ops->replace(m->policy, a, b, sa.charge, sb.charge);
			b->mbits |= LARDER__MBITS_QUEUED;
			retire_unqueued(m, &sa, cause, notify, &m->collect, &m->collect_bytes);
		} else {
			admit(m, &sb, ev->hash);
			retire_sized(m, &sa, cause, notify, &m->collect, &m->collect_bytes);
		}
		break;
	}
	case LARDER__EV_REMOVE:
		larder__maint_retire(m, a, (enum larder_cause)ev->cause, 1);
		break;
	case LARDER__EV_CLEAR:
		larder__maint_clear_add(m, ev->a, ev->hash);
		/* Every entry counted so far is in a cleared table (give or
		 * take inserts whose events are in other rings): the walk
		 * retires them (root_entries()). */
		m->clear_left = m->live_count;
		break;
	case LARDER__EV_BATCH:
		apply_batch(m, ev->a);
		break;
	case LARDER__EV_TOUCH: /* the deadline moved earlier: schedule it there */
		if (a->mbits & LARDER__MBITS_DEAD)
			break;
		if (a->mbits & LARDER__MBITS_COUNTED) {
			larder__maint_wheel_track(m, a);
		} else {
			struct sized sa = sized_of(a);
			account(m, &sa); /* its insert is still in another ring */
		}
		break;
	}
}

/* What the overwrite path tests of the cache and its policy, read once per
 * drain rather than per event. */
struct drain {
	int listener; /* the cache has a removal listener (set at open) */
	/* The policy's queues when it is S3-FIFO (the default), whose swap is
	 * inlined: through ops->replace the call, its argument moves and the
	 * byte counts' updates cost about 9 of the maintainer's 168 instructions
	 * per overwrite (docs/bench.md); NULL for any other policy. */
	struct larder__s3fifo_queues *s3;
};

static inline struct drain drain_of(struct larder__maint *m)
{
	return (struct drain){
		m->cache->listener != NULL,
		m->ops->replace == larder__s3fifo_replace ? larder__s3fifo_queues(m->policy) : NULL,
	};
}

/*
 * The common event, an overwrite that keeps the sizes (REPLACE: a queued, so
 * counted and live; b met for the first time; the same value length (the
 * key, and so its length, is the same) and no deadline on either, so one
 * slot size; a slab slot whose size class the event carries; no listener to
 * call), applied with what apply() would do there and nothing else: b
 * counted and put in a's place in the policy, a retired. Their other flags
 * (compression, a probe's mark) change nothing apply() does for a replace,
 * so they are not compared. The live totals do not move (one entry of the
 * same charge in, one out), and the replacement is counted by the caller,
 * once per drain (a statistic's load and store per put saved). Returns 0,
 * having changed nothing, for any other event; apply() takes those.
 * Inlined into the ring's loop: about one event in two is one of these
 * under writes, and the call, the dispatch and the general path's checks
 * were a fifth of its cost; the size class from the event rather than from
 * the sizes saved 12 more of the maintainer's 205 instructions per put
 * (docs/bench.md).
 */
_Static_assert(LARDER__SIZECLASS_COUNT <= LARDER__EV_NO_CLASS, "a size class fits an event's sclass");

static inline __attribute__((always_inline)) int
apply_overwrite(struct larder__maint *m, const struct drain *d, const struct larder__event *ev)
{
	struct larder__entry *a = ev->a, *b = ev->b;
	if (ev->kind != LARDER__EV_REPLACE || ev->sclass == LARDER__EV_NO_CLASS)
		return 0; /* a and b are entries from here on */
	unsigned am = a->mbits;
	/* b met for the first time has no maintainer bit and, not yet queued,
	 * policy bits 0 (POLICY-P1): its whole byte is 0. */
	if (!(am & LARDER__MBITS_QUEUED) || b->mbits ||
	    a->value_len != b->value_len ||
	    ((larder__entry_flags_raw(a) | larder__entry_flags_raw(b)) & LARDER__ENTRY_TTL) ||
	    d->listener)
		return 0;
	/* No deadline, so a was live when b replaced it (core/cache.c,
	 * write_index): the cause the caller counts. */
	LARDER__ASSERT(ev->cause == LARDER_CAUSE_REPLACED);
	LARDER__ASSERT(ev->sclass < LARDER__SIZECLASS_COUNT);
	const struct larder__maint_class *cl = &m->classes[ev->sclass];
	size_t charge = cl->slot; /* larder__slab_charge() of a slot */
	/* b's slot is live; the class's live count does not move: b counted,
	 * a of the same class retired (larder__slab_note_gone, 10 of the
	 * maintainer's 148 instructions per put with both moves and the
	 * free's, docs/bench.md). */
	larder__slab_note_page_live((struct larder__page *)((uintptr_t)b & cl->page_mask));
	/* a is queued, so counted and not dead (retiring sets DEAD as it
	 * clears QUEUED). */
	LARDER__ASSERT((am & (LARDER__MBITS_QUEUED | LARDER__MBITS_COUNTED | LARDER__MBITS_DEAD)) ==
		       (LARDER__MBITS_QUEUED | LARDER__MBITS_COUNTED));
	if (d->s3) {
		/* b takes a's byte whole, policy bits, COUNTED and QUEUED, and
		 * a's is COUNTED, DEAD and its free code: two stores, where the
		 * swap's setting of b's policy bits, the or of b's maintainer
		 * bits and the flip of a's in memory each loaded and stored (6
		 * of the maintainer's 138 instructions per put, docs/bench.md). */
		larder__s3fifo_relink(d->s3, a, b, am & LARDER__MBITS_POLICY, charge, charge);
		b->mbits = (uint8_t)am;
		a->mbits = cl->dead_mbits;
	} else {
		m->ops->replace(m->policy, a, b, charge, charge);
		b->mbits |= LARDER__MBITS_COUNTED | LARDER__MBITS_QUEUED;
		a->mbits = cl->dead_mbits;
	}
	a->retired_next = m->collect; /* ENTRY-E5: replace() unlinked it */
	m->collect = a;
	m->collect_bytes += charge;
	return 1;
}

/* One event, the ring's or the spill's: a spilled overwrite (a writer whose
 * maintainer lagged) takes the short path too. Returns 1 for an overwrite
 * the short path took, for the caller to count (LARDER_STAT_REPLACEMENTS).
 * An insert, the other event of a cache that evicts (one per eviction), is
 * admitted inline as apply() would: the calls to apply() and admit(), the
 * switch and their prologues cost about 40 of the maintainer's 761
 * instructions per insert (docs/bench.md). */
static inline __attribute__((always_inline)) unsigned
apply_event(struct larder__maint *m, const struct drain *d, const struct larder__event *ev)
{
	if (apply_overwrite(m, d, ev))
		return 1;
	if (ev->kind == LARDER__EV_INSERT) {
		struct sized sb = sized_of_class(ev->b, ev->sclass);
		admit(m, &sb, ev->hash);
		return 0;
	}
	apply(m, ev);
	return 0;
}

/* The spill chunk the maintainer reads (maint/events.h), or NULL while the
 * owner has made none. */
static struct larder__spill *spill_at(struct larder__handle *h)
{
	if (!h->spill_head) /* relaxed (EV-V5): published by R-SPILL, acquired by A-SPILL */
		h->spill_head = (struct larder__spill *)atomic_load_explicit(&h->spill_first,
									     LARDER__RELAXED);
	return h->spill_head;
}

/* The drain's place in h's spill: the chunk, the events read of it, and
 * the spilled events left to apply. Kept in locals through a drain and
 * stored back into the handle after: through the handle, about 5 of the
 * maintainer's instructions more per spilled event (docs/bench.md). */
struct spill_pos {
	struct larder__spill *chunk;
	uint32_t read;
	uint64_t left;
};

/* The next unread spilled event (left > 0: the caller's A-SPILL saw it),
 * not yet taken; frees a chunk read through, whose successor the owner has
 * linked (EV-V5). */
static inline const struct larder__event *spill_peek(struct spill_pos *s)
{
	if (s->read == LARDER__SPILL_CHUNK) {
		/* Relaxed (EV-V5): the owner linked it before the R-SPILL we acquired. */
		struct larder__spill *next = (struct larder__spill *)atomic_load_explicit(
			&s->chunk->next, LARDER__RELAXED);
		free(s->chunk);
		s->chunk = next;
		s->read = 0;
	}
	return &s->chunk->ev[s->read];
}

/* How many ring events ahead drain_events() prefetches the two entries an
 * event names. The overwrite path writes both headers (mbits) and reads
 * their sizes: b was written a moment ago by the writer on another core,
 * a long ago anywhere in the heap. With it the maintainer's CPU per writer
 * CPU in the write cell fell by about 9 points in both holds that measured
 * it apart (docs/bench.md); 4 is a guess, not tuned. */
#define PREFETCH_AHEAD 4u

/* Prefetches, for writing, the entries event ev names (a or b may be NULL
 * or not an entry: a prefetch never faults). */
static inline void prefetch_event(const struct larder__event *ev)
{
	__builtin_prefetch(ev->a, 1);
	__builtin_prefetch(ev->b, 1);
}

/* Applies the spilled events left, which no ring event follows, a chunk's
 * run at a time: per event a pointer's step and compare, where taking them
 * one by one tested the chunk's end and the count (about 8 of the
 * maintainer's instructions per spilled event, docs/bench.md). Returns the
 * overwrites the short path took, as apply_event(). */
static inline __attribute__((always_inline)) uint64_t
apply_spill_rest(struct larder__maint *m, const struct drain *d, struct spill_pos *s)
{
	uint64_t replaced = 0;
	while (s->left) {
		const struct larder__event *ev = spill_peek(s);
		uint32_t n = LARDER__SPILL_CHUNK - s->read;
		if (n > s->left)
			n = (uint32_t)s->left;
		const struct larder__event *end = ev + n;
		/* Each event but the run's last PREFETCH_AHEAD prefetches the
		 * old entry (a) of the event that many ahead: a line written long
		 * ago, out of this core's caches, whose header the overwrite path
		 * reads and writes. Three events in four come from the spill in
		 * the write cell, which prefetched nothing: 0.94x the
		 * maintainer's ns per put on the writer's core, 0.97x on its own
		 * (docs/bench.md); b's prefetch as well measured the same, for 2
		 * instructions more per event. The run's end bounds the
		 * look-ahead, so the loop's test is the one it had. */
		const struct larder__event *fetched = n > PREFETCH_AHEAD ? end - PREFETCH_AHEAD : ev;
		for (const struct larder__event *p = ev; p != end && p != ev + PREFETCH_AHEAD; p++)
			__builtin_prefetch(p->a, 1);
		for (; ev != fetched; ev++) {
			__builtin_prefetch(ev[PREFETCH_AHEAD].a, 1);
			replaced += apply_event(m, d, ev);
		}
		for (; ev != end; ev++)
			replaced += apply_event(m, d, ev);
		s->read += n;
		s->left -= n;
	}
	return replaced;
}

/* Whether h's spill holds events not yet applied (a hint, like larder__maint_rings_empty). */
static int spill_pending(const struct larder__handle *h)
{
	/* Relaxed: a hint whether to sleep; WAKE-W1/WAKE-W2 catch what it misses. */
	return atomic_load_explicit(&h->spilled, LARDER__RELAXED) !=
	       atomic_load_explicit(&h->spill_taken, LARDER__RELAXED);
}

/* Frees h's spill chunks; every event in them was applied. */
void larder__maint_spill_free(struct larder__handle *h)
{
	struct larder__spill *s = spill_at(h);
	while (s) {
		/* Relaxed: the owner is gone (A-ORPHAN, or the cache closes). */
		struct larder__spill *next =
			(struct larder__spill *)atomic_load_explicit(&s->next, LARDER__RELAXED);
		free(s);
		s = next;
	}
	h->spill_head = NULL;
}

/* Applies h's posted events: the ring's and, merged in posting order, the
 * spill's (EV-V4 in maint/events.h), with d's tests. */
static inline __attribute__((always_inline)) uint64_t
drain_with(struct larder__maint *m, struct larder__handle *h, struct drain d)
{
	/* A-SPILL before A-EV (EV-V4): acquire, pairs with R-SPILL; the spilled
	 * events, and the ring events posted before them. */
	uint64_t spilled = atomic_load_explicit(&h->spilled, LARDER__ACQUIRE);
	/* A-EV: acquire, pairs with R-EV in larder__events_post(). */
	uint64_t head = atomic_load_explicit(&h->ev_head, LARDER__ACQUIRE);
	uint64_t tail = atomic_load_explicit(&h->ev_tail, LARDER__RELAXED);       /* ours */
	/* The last ring event's seq less its position counts the spilled events
	 * posted before it (EV-V4). More than we saw: they were spilled after
	 * our A-SPILL, before that event's R-EV, which A-EV acquired. */
	if (head != tail) {
		uint32_t before = h->ev[(head - 1) % LARDER__EVENT_RING].seq - (uint32_t)(head - 1);
		if ((int32_t)(before - (uint32_t)spilled) > 0)
			spilled += before - (uint32_t)spilled;
	}
	uint64_t taken0 = atomic_load_explicit(&h->spill_taken, LARDER__RELAXED); /* ours */
	uint64_t replaced = 0;
	struct spill_pos sp = { spilled != taken0 ? spill_at(h) : NULL, h->spill_read,
				spilled - taken0 };
	for (uint64_t i = tail; i != head && i - tail < PREFETCH_AHEAD; i++)
		prefetch_event(&h->ev[i % LARDER__EVENT_RING]);
	for (uint64_t i = tail; i != head;) {
		/* The ring events up to the next spilled event (EV-V4), as a run:
		 * a spilled event's seq less its number in the spill (spilled -
		 * sp.left) is the ring's head when it was posted, so it follows
		 * the ring events below that and precedes the rest. Found once
		 * per spilled event met, where a test of the spill's next event
		 * per ring event cost about 16 instructions each (docs/bench.md). */
		uint64_t stop = head;
		if (sp.left) {
			const struct larder__event *s = spill_peek(&sp);
			uint32_t at = s->seq - (uint32_t)(spilled - sp.left);
			if ((int32_t)(at - (uint32_t)i) <= 0) {
				replaced += apply_event(m, &d, s);
				sp.read++;
				sp.left--;
				continue;
			}
			if ((int32_t)(at - (uint32_t)head) < 0)
				stop = i + (at - (uint32_t)i);
		}
		for (; i != stop; i++) {
			if (head - i > PREFETCH_AHEAD)
				prefetch_event(&h->ev[(i + PREFETCH_AHEAD) % LARDER__EVENT_RING]);
			replaced += apply_event(m, &d, &h->ev[i % LARDER__EVENT_RING]);
		}
	}
	replaced += apply_spill_rest(m, &d, &sp);
	larder__maint_bump(m, LARDER_STAT_REPLACEMENTS, replaced);
	if (head != tail) /* R-EVT: release; we are done reading those slots. */
		atomic_store_explicit(&h->ev_tail, head, LARDER__RELEASE);
	/* Relaxed: our own count, which the owner reads for its bound only. */
	if (spilled != taken0) {
		h->spill_head = sp.chunk;
		h->spill_read = sp.read;
		atomic_store_explicit(&h->spill_taken, spilled, LARDER__RELAXED);
	}
	return head - tail + spilled - taken0;
}

/* drain_with(), in a copy for the default case (S3-FIFO, no listener) in
 * which d's tests are constants and fold away: the listener's and the
 * policy's, per overwrite (about 5 of the maintainer's instructions per
 * put, docs/bench.md). */
static uint64_t drain_events(struct larder__maint *m, struct larder__handle *h)
{
	struct drain d = drain_of(m);
	if (d.s3 && !d.listener)
		return drain_with(m, h, (struct drain){ 0, d.s3 });
	return drain_with(m, h, d);
}

static uint64_t drain_hits(struct larder__maint *m, struct larder__handle *h)
{
	/* A-HIT: acquire, pairs with R-HIT in larder__events_hit(). */
	uint64_t head = atomic_load_explicit(&h->hit_head, LARDER__ACQUIRE);
	uint64_t from = h->hit_tail;
	if (head - from > LARDER__HIT_RING)
		from = head - LARDER__HIT_RING; /* lossy: the oldest samples were overwritten */
	for (uint64_t i = from; i != head; i++) {
		/* A-HIT: the sample may be newer than `head`; its own release
		 * store still makes the entry's initialisation visible. Any entry
		 * named here is not yet freed (MAINT-M2). */
		struct larder__entry *e = (struct larder__entry *)atomic_load_explicit(
			&h->hit[i % LARDER__HIT_RING], LARDER__ACQUIRE);
		if ((e->mbits & (LARDER__MBITS_QUEUED | LARDER__MBITS_DEAD)) ==
		    LARDER__MBITS_QUEUED) {
			m->ops->hit(m->policy, e);
			if (__builtin_expect(larder__probe_marked(e), 0)) /* PROBE-P4 */
				larder__probe_hit(m->probe, e);
			larder__maint_bump(m, LARDER_STAT_HIT_SAMPLES, 1);
		}
	}
	uint64_t n = head - h->hit_tail;
	h->hit_tail = head;
	return n;
}

struct larder__handle *larder__maint_handles(struct larder__shard *s)
{
	/* A-HANDLES: acquire, pairs with R-HANDLES in larder__cache_handle_create(). */
	return (struct larder__handle *)atomic_load_explicit(&s->handles, LARDER__ACQUIRE);
}

/* Drains every ring; returns the events applied, and in *hits the samples seen. */
uint64_t larder__maint_drain_all(struct larder__maint *m, uint64_t *hits)
{
	LARDER__MAINT_OWNER(m);
	uint64_t n = 0;
	*hits = 0;
	for (struct larder__handle *h = larder__maint_handles(m->shard); h; h = h->next)
		n += drain_events(m, h);
	for (struct larder__handle *h = larder__maint_handles(m->shard); h; h = h->next)
		*hits += drain_hits(m, h);
	return n;
}

/* ---- Freeing after grace periods ----------------------------------------- */

/* Counts bytes freed and gives them back to the writers. */
void larder__maint_count_freed(struct larder__maint *m, uint64_t bytes)
{
	struct larder *c = m->cache;
	/* R-FREED: release (pairs with larder__maint_freed_bytes()). */
	atomic_store_explicit(&m->freed_bytes,
			      atomic_load_explicit(&m->freed_bytes, LARDER__RELAXED) + bytes,
			      LARDER__RELEASE);
	/* Relaxed: the budget is a count; the memory it stands for was handed
	 * back through the slab's own ordering (SLAB-SL1/SLAB-SL2). */
	atomic_fetch_add_explicit(&c->budget, (int64_t)bytes, LARDER__RELAXED);
}

/* The poison seam is read once for the list (mem/slab.h): a test that
 * turns it on while a list is freed sees the next list's slots poisoned. */
static void free_list(struct larder__shard *s, struct larder__entry *e)
{
	if (__builtin_expect(larder__slab_poison, 0)) {
		for (struct larder__entry *next; e; e = next) {
			next = e->retired_next;
			larder__slab_free_slow(&s->slab, e, larder__entry_size(e));
		}
		return;
	}
	for (struct larder__entry *next; e; e = next) {
		next = e->retired_next;
		unsigned code = e->mbits & LARDER__MBITS_POLICY; /* free_code() */
		if (code)
			larder__slab_free_small(&s->slab, larder__slab_page_of_code(e, code), e);
		else
			larder__slab_free_unpoisoned(&s->slab, e, larder__entry_size(e));
	}
}

void larder__maint_free_entries(struct larder__maint *m, struct larder__entry *e, uint64_t bytes)
{
	LARDER__MAINT_OWNER(m);
	free_list(m->shard, e);
	larder__maint_count_freed(m, bytes);
}

/* ---- Handles of exited threads ----------------------------------------------- */

static void handle_unlink(struct larder__shard *s, struct larder__handle *h)
{
	uintptr_t expect = (uintptr_t)h;
	/* A-HANDLES on failure: we walk the newer head's links. */
	if (atomic_compare_exchange_strong_explicit(&s->handles, &expect, (uintptr_t)h->next,
						    LARDER__ACQUIRE, LARDER__ACQUIRE))
		return;
	/* Not the head: only we unlink, and pushes only change the head. */
	struct larder__handle *p = (struct larder__handle *)expect;
	while (p->next != h)
		p = p->next;
	p->next = h->next;
}

/* An exiting thread's counters live on in stat[]; its alloc_bytes go into
 * stat[USED_BYTES], from which larder__maint_stats() subtracts freed bytes. */
static void fold_handle_stats(struct larder__maint *m, struct larder__handle *h)
{
	uint64_t v[LARDER_STAT_COUNT] = {0};
	larder__handle_stats_add(h, v); /* the thread is gone (A-ORPHAN) */
	for (unsigned i = 0; i < LARDER_STAT_COUNT; i++)
		if (v[i])
			larder__maint_bump(m, (enum larder_stat)i, v[i]);
}

/* Final drain of an exited thread's handle, then it is freed. */
static void dismantle(struct larder__maint *m, struct larder__handle *h)
{
	struct larder__shard *s = m->shard;
	drain_events(m, h);
	drain_hits(m, h);
	larder__slab_release_cursor(&s->slab, &h->cursor); /* the empty pages the owner left */
	pthread_mutex_lock(&s->handles_lock);
	fold_handle_stats(m, h);
	handle_unlink(s, h);
	pthread_mutex_unlock(&s->handles_lock);
	larder__maint_spill_free(h);
	free(h);
}

int larder__maint_reap_orphans(struct larder__maint *m)
{
	int n = 0;
	struct larder__handle *h = larder__maint_handles(m->shard);
	while (h) {
		struct larder__handle *next = h->next;
		/* A-ORPHAN: pairs with R-ORPHAN; the thread's last writes are visible. */
		if (atomic_load_explicit(&h->orphaned, LARDER__ACQUIRE)) {
			dismantle(m, h);
			n++;
		}
		h = next;
	}
	return n;
}

int larder__maint_rings_empty(struct larder__shard *s)
{
	for (struct larder__handle *h = larder__maint_handles(s); h; h = h->next) {
		/* Relaxed: only a hint whether to sleep; a missed event is caught by
		 * the writer's wake-up (WAKE-W1) or the idle timeout. */
		if (atomic_load_explicit(&h->ev_head, LARDER__RELAXED) !=
			    atomic_load_explicit(&h->ev_tail, LARDER__RELAXED) ||
		    spill_pending(h))
			return 0;
	}
	return 1;
}
