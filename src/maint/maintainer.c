/*
 * maint/maintainer.c - the background thread of one cache.
 *
 * Callers only change the index and post events (maint/events.h); this
 * thread does everything that spans entries: it applies events to the
 * eviction policy and the byte totals, evicts down to capacity, frees retired
 * memory after grace periods, grows the index, empties cleared tables and
 * expires entries on the TTL timing wheel (ttl/wheel.h).
 *
 * One pass (maint_pass):
 *   1. poll the grace period of the waiting batch and of cleared tables;
 *   2. drain every handle's event ring, then its hit ring;
 *   3. free the waiting batch if its grace period had ended in step 1 (after
 *      step 2, so that no event or hit sample still names its entries);
 *   4. empty cleared tables whose grace period ended (a chunk per pass);
 *   5. dismantle handles of exited threads;
 *   6. advance the timing wheel to the cache clock: due entries whose
 *      deadline (re-read: touch or after-access may have moved it later in
 *      place) has passed are unlinked and retired as EXPIRED, the others
 *      are scheduled again (at most EXPIRE_PER_PASS per pass); then
 *      cascade a bounded number of timers ahead of time;
 *   7. evict while live bytes + what waiting writers want > capacity;
 *   8. grow or shrink the index (a chunk of homes per pass; L1 and L3 in
 *      index/table.h);
 *   9. start a grace period for what was retired, when none is running and
 *      one is due (gp_due: 64 KiB retired, a writer waiting, or 1 ms).
 * Then it sleeps: about 200 us when work is pending (the batching window,
 * cut short by a writer whose event ring is half full), until woken (or
 * 100 ms, or the wheel's next deadline) when idle. A pass that drained many
 * events, or walked a cleared table, runs the next one at once.
 *
 * TTL (the wheel): every counted entry that has a deadline is scheduled in
 * account(), cancelled in retire(), and scheduled again when a touch moved
 * its deadline earlier (EV_TOUCH). A deadline moved later in place (touch,
 * after-access extension) is not rescheduled eagerly: the wheel delivers
 * the entry at its old deadline, on_due() re-reads it and schedules it
 * again, which costs the same O(1) and needs no event. Bound on lateness
 * (tests/unit/test_ttl.c checks it with the injected clock): with the
 * maintainer not saturated, an entry is unlinked and reported EXPIRED by the
 * first pass whose clock reading is >= its deadline; passes run at least one
 * batching window apart while there is work, and an idle maintainer sleeps
 * only until the next wheel event (the next occupied slot, bank swap or heap
 * block, read from the bitmaps) measured on the cache clock, capped at
 * IDLE_NS. So
 * removal is at most one tick (1 ms, the clock's resolution) + one batching
 * window late: the wheel's cascades are done ahead of time, STAGE_PER_PASS
 * timers per pass plus STAGE_PER_EXPIRY per expiry (larder__wheel_prepare),
 * so reaching a higher-level slot costs a swap, not a re-placement of its
 * timers (a level-3 slot holds ~730,000 with 10^7 deadlines over an hour).
 * The cap is what an injected clock costs: the maintainer cannot know when a
 * test's clock will jump, so a jump while it sleeps is seen at most IDLE_NS
 * later (larder__test_quiesce wakes it at once).
 * Readers never depend on any of this: they check the deadline themselves.
 *
 * Expire-after-access (larder_config_set_expiry): readers move deadlines
 * later themselves, at the read (core/cache.c, extend_on_read; E4 in
 * core/entry.h); to the wheel such a deadline is one more that moved later
 * in place.
 *
 * Invariants (checked by tests/stress via the quiesce and walk seams):
 *   M1. live_count/live_bytes equal the entries (and slot bytes) in the index
 *       once every event has been applied (quiescent).
 *   M2. An entry is freed only after a grace period that began after it was
 *       unlinked, and after every ring was drained following that period.
 *   M3. Every entry leaves through retire(), exactly once, with its cause;
 *       the listener sees every cause except RELOCATE's internal copies.
 *   M4. Evictions stop once live_bytes + wanted <= capacity, so with writers
 *       limited by the budget, used bytes <= capacity + overshoot bound.
 */
#define _GNU_SOURCE
#include "maint/maintainer.h"

#include <stdlib.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/hash.h"
#include "core/thread.h"
#include "core/testing.h"
#include "evict/policy.h"
#include "index/table.h"
#include "mem/pages.h"
#include "mem/slab.h"
#include "pool/pool.h"
#include "sync/futex.h"
#include "sync/reclaim.h"
#include "ttl/wheel.h"

#define WINDOW_NS (200u * 1000u)
#define IDLE_NS (100u * 1000u * 1000u)
#define EVICT_PER_PASS 4096u
#define MIGRATE_PER_PASS 1024u
/* A shrinking table is under 1/8 full (L3): 8x the homes hold about the
 * entries a growth's chunk moves. */
#define SHRINK_PER_PASS (8u * MIGRATE_PER_PASS)
#define WALK_PER_PASS 4096u /* buckets, hash-order walk */
#define WALK_AHEAD 8u        /* buckets prefetched ahead, hash-order walk */
#define SCAN_PER_PASS 65536u /* buckets counted or moved per pass, sorted walk */
#define FREE_PER_PASS 16384u /* entries freed per pass, sorted walk */
#define FREE_AHEAD 16u       /* entries prefetched ahead, sorted walk */
#define SORT_SHIFT 23        /* sort key: 8 MiB of address space */
#define SUB_SHIFT 16         /* then within it by 64 KiB, the smallest page */
#define SUB_KEYS (1u << (SORT_SHIFT - SUB_SHIFT))
#define SORT_KEYS_MIN 16u
#define SORT_KEYS_MAX 4096u
#define EXPIRE_PER_PASS 8192u
#define STAGE_PER_PASS 256u /* timers cascaded ahead of time: ~50-100 us of misses */
#define STAGE_PER_EXPIRY 4u /* ... and more per expiry of the pass (expire_due) */
#define BUSY_PASS_EVENTS 256u
#define GP_BATCH_BYTES (64u * 1024u)
#define GP_INTERVAL_NS (1000u * 1000u)

/* The sorted walk of the oldest cleared table (walk_gens). */
enum clear_phase { CLEAR_START, CLEAR_COUNT, CLEAR_SCATTER, CLEAR_FREE, CLEAR_HASH };

struct larder__clear_walk {
	enum clear_phase phase;
	uint64_t keys;  /* a power of two */
	uint32_t *count; /* per key: entries (COUNT), then the end of its range (SCATTER on) */
	struct larder__entry **order; /* by key; [at, n) not yet taken into sub */
	struct larder__entry **sub;   /* one key's entries, by 64 KiB; [sub_at, sub_n) to free */
	size_t count_bytes, order_bytes;
	uint64_t n, at, key, sub_n, sub_at;
	struct larder__slab_batch batch; /* flushed at the end of every pass */
};

struct larder__maint {
	struct larder *cache;
	const struct larder__policy_ops *ops;
	struct larder__policy *policy;
	int hits_keep_awake; /* hit samples alone are work (maint_pass) */
	uint64_t live_count, live_bytes;
	struct larder__entry *collect; /* retired, grace period not started */
	uint64_t collect_bytes;
	struct larder__entry *waiting; /* retired, grace period `waiting_token` running */
	uint64_t waiting_bytes, waiting_token;
	uint64_t gp_started_ns; /* when the last grace period for entries began */
	struct larder__table *tables; /* resized out of, freed after retire_token */
	struct larder__table *gens;   /* swapped out by clear, oldest first */
	struct larder__clear_walk clear; /* of gens, the head */
	struct larder__table *growing; /* being resized into its next, either way */
	uint64_t cleared_goal; /* the CLEARED count once the cleared tables are walked */
	/* L3: the fewest buckets a shrink leaves: SMALL_BUCKETS or the first
	 * table's size if larger. Ours; relaxed, only the test seam
	 * larder__test_index_floor() writes it from another thread. */
	larder__atomic_u64 index_floor;
	uint64_t policy_capacity; /* the capacity last given to the policy */
	int migrating; /* inside migrate(): the listener waits for its end */
	int closing;   /* larder__maint_destroy(): no listener calls (on the closer's thread) */
	struct larder__wheel wheel; /* counted entries with a deadline (E3: ours) */
	uint64_t next_due;          /* larder__wheel_next() after the last advance */
	uint64_t now_ms;            /* the cache clock, read once per pass when needed;
				     * never moves back (pass_now) */
	int have_now;
	/* Counters: written by this thread only (relaxed load+store), read by
	 * larder_stats() and the quiesce seam from any thread. */
	larder__atomic_u64 stat[LARDER_STAT_COUNT];
	larder__atomic_u64 freed_bytes;
	larder__atomic_u64 pass_seq;  /* passes started */
	larder__atomic_u64 idle_seq;  /* number of the last pass that found nothing to do */
	larder__atomic_u32 seam_waiters; /* test seams waiting for a pass (seam_wake_and_wait) */
	larder__atomic_u64 idle_until;   /* test seam: next_due when it last slept idle */
	larder__atomic_u64 wheel_done; /* R-WHEEL: expired through this clock time */
	/* Test seam larder__test_check_links: requests counted by the tester
	 * (R-CHKQ), answered by a pass (R-CHKA); check_ok is written before. */
	larder__atomic_u64 check_asked, check_answered;
	larder__atomic_int check_ok;
};

static void bump(struct larder__maint *m, enum larder_stat s, uint64_t by)
{
	larder__stat_bump(&m->stat[s], by);
}

static uint64_t stat_of(struct larder__maint *m, enum larder_stat s)
{
	return atomic_load_explicit(&m->stat[s], LARDER__RELAXED); /* ours */
}

static uint64_t entry_hash(void *ctx, const struct larder__entry *e)
{
	struct larder *c = ctx;
	return larder__hash(c->seed, larder__entry_key((struct larder__entry *)e), e->key_len);
}

static size_t entry_charge(void *ctx, const struct larder__entry *e)
{
	(void)ctx;
	return larder__slab_charge(larder__entry_size(e));
}

static int entry_expired(struct larder *c, struct larder__entry *e)
{
	if (!(larder__entry_flags(e) & LARDER__ENTRY_TTL))
		return 0;
	/* Relaxed: E2 in core/entry.h. */
	uint64_t exp = atomic_load_explicit(larder__entry_expire(e), LARDER__RELAXED);
	return exp != UINT64_MAX && c->clock(c->clock_ctx) >= exp;
}

/*
 * The cache clock, read at most once per pass (and only for TTL work), and
 * never earlier than in a previous pass: a clock that steps back (larder.h
 * tolerates it) must not take the wheel back, whose time only moves on
 * (W1 in ttl/wheel.c). on_due() compares deadlines with it; with the raw
 * reading, an entry due between the stepped-back clock and the wheel's time
 * was scheduled again behind the wheel, into its due list, which delivered
 * it again at once: the maintainer spun there for good.
 */
static uint64_t pass_now(struct larder__maint *m)
{
	if (!m->have_now) {
		uint64_t now = m->cache->clock(m->cache->clock_ctx);
		if (now > m->now_ms)
			m->now_ms = now;
		m->have_now = 1;
	}
	return m->now_ms;
}

static uint64_t entry_deadline(struct larder__entry *e)
{
	/* Relaxed: E2 in core/entry.h; a stale value is corrected by on_due()
	 * or by the EV_TOUCH that follows a shortening. */
	return atomic_load_explicit(larder__entry_expire(e), LARDER__RELAXED);
}

static uint64_t wheel_deadline(void *ctx, struct larder__wheel_link *link)
{
	(void)ctx;
	return entry_deadline(larder__wheel_entry(link));
}

/* (Re)schedules a counted entry with a deadline at its current deadline. */
static void wheel_track(struct larder__maint *m, struct larder__entry *e)
{
	uint64_t d = entry_deadline(e);
	struct larder__wheel_link *link = larder__entry_wheel(e);
	if (d == UINT64_MAX) {
		larder__wheel_cancel(&m->wheel, link);
		return;
	}
	/* E6: an entry in no queue carries its id; a queued one (a touch) asks
	 * its page header. */
	uint32_t id = (e->mbits & LARDER__MBITS_QUEUED) ? larder__entry_id(e) : e->next;
	larder__wheel_reschedule(&m->wheel, link, id, d);
}

/* ---- Entry accounting ---------------------------------------------------- */

/* Counts e in the live totals the first time the maintainer meets it. */
static void account(struct larder__maint *m, struct larder__entry *e)
{
	if (e->mbits & (LARDER__MBITS_COUNTED | LARDER__MBITS_DEAD))
		return;
	e->mbits |= LARDER__MBITS_COUNTED;
	if (larder__entry_flags(e) & LARDER__ENTRY_TTL)
		wheel_track(m, e);
	size_t bytes = larder__entry_size(e);
	larder__slab_note_live(&m->cache->slab, e, bytes);
	m->live_count++;
	m->live_bytes += larder__slab_charge(bytes);
}

static void admit(struct larder__maint *m, struct larder__entry *e, uint64_t hash)
{
	if (e->mbits & LARDER__MBITS_DEAD)
		return; /* already replaced through another thread's ring */
	account(m, e);
	if (!(e->mbits & LARDER__MBITS_QUEUED)) {
		m->ops->insert(m->policy, e, hash, entry_charge(m->cache, e));
		e->mbits |= LARDER__MBITS_QUEUED;
	}
}

/*
 * Calls the removal listener. listener_calls is odd while a call runs: a
 * writer waiting for this maintainer (core/cache.c, wait_pass) gives up
 * only if it sees the same odd value for a whole second, i.e. when the
 * listener, the one thing here that can block, has not returned.
 */
static void call_listener(struct larder__maint *m, struct larder__entry *e,
			  enum larder_cause cause)
{
	struct larder *c = m->cache;
	/* Relaxed: we are the only writer; readers only compare values. */
	uint64_t n = atomic_load_explicit(&c->listener_calls, LARDER__RELAXED);
	atomic_store_explicit(&c->listener_calls, n + 1, LARDER__RELAXED);
	c->listener(c->listener_ctx, larder__entry_key(e), e->key_len, larder__entry_value(e),
		    e->value_len, cause);
	atomic_store_explicit(&c->listener_calls, n + 2, LARDER__RELAXED); /* as above */
}

static const enum larder_stat cause_stat[] = {
	[LARDER_CAUSE_EXPLICIT] = LARDER_STAT_REMOVALS,
	[LARDER_CAUSE_REPLACED] = LARDER_STAT_REPLACEMENTS,
	[LARDER_CAUSE_EXPIRED] = LARDER_STAT_EXPIRATIONS,
	[LARDER_CAUSE_EVICTED] = LARDER_STAT_EVICTIONS,
	[LARDER_CAUSE_CLEARED] = LARDER_STAT_CLEARED,
};

/*
 * M3: the one way out. notify = 0 for a touch's superseded copy. The entry
 * goes onto *list (the collect list, or a cleared table's: see walk_gens).
 */
static void retire_onto(struct larder__maint *m, struct larder__entry *e, enum larder_cause cause,
			int notify, struct larder__entry **list, uint64_t *list_bytes)
{
	struct larder *c = m->cache;
	if (e->mbits & LARDER__MBITS_DEAD)
		return;
	account(m, e);
	size_t charge = entry_charge(c, e);
	if (e->mbits & LARDER__MBITS_QUEUED)
		m->ops->remove(m->policy, e, charge);
	e->mbits = (uint8_t)((e->mbits & ~LARDER__MBITS_QUEUED) | LARDER__MBITS_DEAD);
	m->live_count--;
	m->live_bytes -= charge;
	if (larder__entry_flags(e) & LARDER__ENTRY_TTL)
		larder__wheel_cancel(&m->wheel, larder__entry_wheel(e));
	if (notify) {
		bump(m, cause_stat[cause], 1);
		if (c->listener && !m->migrating && !m->closing)
			call_listener(m, e, cause);
	}
	e->retired_next = *list; /* E5: unlinked from every queue above */
	*list = e;
	*list_bytes += charge;
}

static void retire(struct larder__maint *m, struct larder__entry *e, enum larder_cause cause,
		   int notify)
{
	retire_onto(m, e, cause, notify, &m->collect, &m->collect_bytes);
}

/* ---- Events ---------------------------------------------------------------- */

static void gen_add(struct larder__maint *m, struct larder__table *t);

static void apply(struct larder__maint *m, const struct larder__event *ev)
{
	struct larder__entry *a = ev->a, *b = ev->b;
	switch (ev->kind) {
	case LARDER__EV_INSERT:
		admit(m, b, ev->hash);
		break;
	case LARDER__EV_REPLACE:
	case LARDER__EV_RELOCATE:
		if ((a->mbits & LARDER__MBITS_QUEUED) && !(b->mbits & LARDER__MBITS_DEAD)) {
			account(m, b);
			m->ops->replace(m->policy, a, b, entry_charge(m->cache, a),
					entry_charge(m->cache, b));
			a->mbits &= (uint8_t)~LARDER__MBITS_QUEUED;
			b->mbits |= LARDER__MBITS_QUEUED;
		} else {
			admit(m, b, ev->hash);
		}
		retire(m, a, (enum larder_cause)ev->cause, ev->kind == LARDER__EV_REPLACE);
		break;
	case LARDER__EV_REMOVE:
		retire(m, a, (enum larder_cause)ev->cause, 1);
		break;
	case LARDER__EV_CLEAR:
		gen_add(m, ev->a);
		/* Every entry counted so far is in a cleared table (give or
		 * take inserts whose events are in other rings): the walk
		 * retires them as CLEARED (root_entries()). */
		m->cleared_goal = stat_of(m, LARDER_STAT_CLEARED) + m->live_count;
		break;
	case LARDER__EV_TOUCH: /* the deadline moved earlier: schedule it there */
		if (a->mbits & LARDER__MBITS_DEAD)
			break;
		if (a->mbits & LARDER__MBITS_COUNTED)
			wheel_track(m, a);
		else
			account(m, a); /* its insert is still in another ring */
		break;
	}
}

/* The spill chunk the maintainer reads (maint/events.h), or NULL while the
 * owner has made none. */
static struct larder__spill *spill_at(struct larder__handle *h)
{
	if (!h->spill_head) /* relaxed (V5): published by R-SPILL, acquired by A-SPILL */
		h->spill_head = (struct larder__spill *)atomic_load_explicit(&h->spill_first,
									    LARDER__RELAXED);
	return h->spill_head;
}

/* The next unread spilled event (one exists: the caller's A-SPILL saw it);
 * frees a chunk read through, whose successor the owner has linked (V5). */
static const struct larder__event *spill_next(struct larder__handle *h)
{
	struct larder__spill *s = spill_at(h);
	if (h->spill_read == LARDER__SPILL_CHUNK) {
		/* Relaxed (V5): the owner linked it before the R-SPILL we acquired. */
		struct larder__spill *next =
			(struct larder__spill *)atomic_load_explicit(&s->next, LARDER__RELAXED);
		free(s);
		h->spill_head = s = next;
		h->spill_read = 0;
	}
	return &s->ev[h->spill_read++];
}

/* Whether h's spill holds events not yet applied (a hint, like rings_empty). */
static int spill_pending(const struct larder__handle *h)
{
	/* Relaxed: a hint whether to sleep; W1/W2 catch what it misses. */
	return atomic_load_explicit(&h->spilled, LARDER__RELAXED) !=
	       atomic_load_explicit(&h->spill_taken, LARDER__RELAXED);
}

/* Frees h's spill chunks; every event in them was applied. */
static void spill_free(struct larder__handle *h)
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
 * spill's (V4 in maint/events.h). */
static uint64_t drain_events(struct larder__maint *m, struct larder__handle *h)
{
	/* A-SPILL before A-EV (V4): acquire, pairs with R-SPILL; the spilled
	 * events, and the ring events posted before them. */
	uint64_t spilled = atomic_load_explicit(&h->spilled, LARDER__ACQUIRE);
	/* A-EV: acquire, pairs with R-EV in larder__events_post(). */
	uint64_t head = atomic_load_explicit(&h->ev_head, LARDER__ACQUIRE);
	uint64_t tail = atomic_load_explicit(&h->ev_tail, LARDER__RELAXED); /* ours */
	uint64_t taken0 = atomic_load_explicit(&h->spill_taken, LARDER__RELAXED); /* ours */
	uint64_t taken = taken0;
	const struct larder__event *sp = taken != spilled ? spill_next(h) : NULL;
	for (uint64_t i = tail; i != head; i++) {
		const struct larder__event *ev = &h->ev[i % LARDER__EVENT_RING];
		while (sp && (int32_t)(sp->seq - ev->seq) < 0) {
			apply(m, sp);
			sp = ++taken != spilled ? spill_next(h) : NULL;
		}
		apply(m, ev);
	}
	for (; sp; sp = ++taken != spilled ? spill_next(h) : NULL)
		apply(m, sp);
	if (head != tail) /* R-EVT: release; we are done reading those slots. */
		atomic_store_explicit(&h->ev_tail, head, LARDER__RELEASE);
	/* Relaxed: our own count, which the owner reads for its bound only. */
	if (spilled != taken0)
		atomic_store_explicit(&h->spill_taken, spilled, LARDER__RELAXED);
	return head - tail + spilled - taken0;
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
		 * named here is not yet freed (M2). */
		struct larder__entry *e = (struct larder__entry *)atomic_load_explicit(
			&h->hit[i % LARDER__HIT_RING], LARDER__ACQUIRE);
		if ((e->mbits & (LARDER__MBITS_QUEUED | LARDER__MBITS_DEAD)) ==
		    LARDER__MBITS_QUEUED) {
			m->ops->hit(m->policy, e);
			bump(m, LARDER_STAT_HIT_SAMPLES, 1);
		}
	}
	uint64_t n = head - h->hit_tail;
	h->hit_tail = head;
	return n;
}

static struct larder__handle *handles_first(struct larder *c)
{
	/* A-HANDLES: acquire, pairs with R-HANDLES in larder__cache_handle_create(). */
	return (struct larder__handle *)atomic_load_explicit(&c->handles, LARDER__ACQUIRE);
}

/* Drains every ring; returns the events applied, and in *hits the samples seen. */
static uint64_t drain_all(struct larder__maint *m, uint64_t *hits)
{
	uint64_t n = 0;
	*hits = 0;
	for (struct larder__handle *h = handles_first(m->cache); h; h = h->next)
		n += drain_events(m, h);
	for (struct larder__handle *h = handles_first(m->cache); h; h = h->next)
		*hits += drain_hits(m, h);
	return n;
}

/* ---- Freeing after grace periods ----------------------------------------- */

static void free_list(struct larder *c, struct larder__entry *e)
{
	while (e) {
		struct larder__entry *next = e->retired_next;
		larder__slab_free(&c->slab, e, larder__entry_size(e));
		e = next;
	}
}

/* Counts bytes freed by free_list() and gives them back to the writers. */
static void count_freed(struct larder__maint *m, uint64_t bytes)
{
	struct larder *c = m->cache;
	/* R-FREED: release (pairs with larder__maint_freed_bytes()). */
	atomic_store_explicit(&m->freed_bytes,
			      atomic_load_explicit(&m->freed_bytes, LARDER__RELAXED) + bytes,
			      LARDER__RELEASE);
	/* Relaxed: the budget is a count; the memory it stands for was handed
	 * back through the slab's own ordering (SL1/SL2). */
	atomic_fetch_add_explicit(&c->budget, (int64_t)bytes, LARDER__RELAXED);
}

static void free_entries(struct larder__maint *m, struct larder__entry *e, uint64_t bytes)
{
	free_list(m->cache, e);
	count_freed(m, bytes);
}

static void wake_writers(struct larder *c)
{
	/* Relaxed: the seq bump is the futex word; waiters re-check the budget. */
	atomic_fetch_add_explicit(&c->room_seq, 1, LARDER__RELEASE);
	if (atomic_load_explicit(&c->room_waiters, LARDER__RELAXED))
		larder__futex_wake(&c->room_seq, INT32_MAX);
}

static void free_tables(struct larder__maint *m)
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

/* ---- Cleared tables -------------------------------------------------------- */

static void gen_add(struct larder__maint *m, struct larder__table *t)
{
	t->retire_token = larder__gp_start();
	t->retire_next = NULL;
	t->walk_cursor = 0;
	struct larder__table **p = &m->gens;
	while (*p)
		p = &(*p)->retire_next;
	*p = t;
}

static void drop_migrating(void *ctx, struct larder__entry *e)
{
	retire(((struct larder *)ctx)->maint, e, LARDER_CAUSE_EVICTED, 1);
}

/*
 * Moves up to `homes` homes of t into its next table (index/table.h); true
 * when t is done. An entry that finds no slot there (a table full to its
 * last bucket: not expected at the loads resizes aim for) is dropped as
 * EVICTED, and the listener hears of it only after the migration let go of
 * the bucket locks, so that the listener may write to this cache. The
 * dropped entries are the ones retire() put on the collect list meanwhile.
 */
static int migrate(struct larder__maint *m, struct larder__table *t, size_t homes)
{
	struct larder *c = m->cache;
	struct larder__entry *before = m->collect;
	m->migrating = 1;
	int done = larder__table_migrate(t, homes, entry_hash, drop_migrating, c);
	m->migrating = 0;
	for (struct larder__entry *e = m->collect; c->listener && e != before; e = e->retired_next)
		call_listener(m, e, LARDER_CAUSE_EVICTED);
	return done;
}

/* Prefetches the entries in bucket b and, for those already in cache, the
 * policy neighbours that retire() will unlink them from (a hint only). */
static void walk_prefetch(const struct larder__pagedir *dir, struct larder__bucket *b,
			  int neighbours)
{
	for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
		/* Relaxed: the table is private to us now; this only warms lines. */
		uint64_t w = atomic_load_explicit(&b->slot[i], LARDER__RELAXED);
		uint64_t p = w & LARDER__SLOT_PTR_MASK;
		if (p == 0 || p == LARDER__SLOT_MARKER)
			continue;
		struct larder__entry *e = larder__slot_entry(w);
		if (!neighbours) {
			__builtin_prefetch(e, 1);
			continue;
		}
		/* Queue neighbours by id (E5; an entry in no queue names itself). */
		if (e->prev)
			__builtin_prefetch(larder__entry_at(dir, e->prev), 1);
		__builtin_prefetch(larder__entry_at(dir, e->next), 1);
	}
}

/* The entry in a slot word, or NULL for an empty or moved slot. */
static struct larder__entry *slot_live(uint64_t w)
{
	uint64_t p = w & LARDER__SLOT_PTR_MASK;
	return p == 0 || p == LARDER__SLOT_MARKER ? NULL : larder__slot_entry(w);
}

/* Retires e as CLEARED and frees it at once (see walk_gens for why). */
static void clear_one(struct larder__maint *m, struct larder__entry *e, uint64_t *bytes)
{
	struct larder__entry *done = NULL;
	retire_onto(m, e, LARDER_CAUSE_CLEARED, 1, &done, bytes);
	if (done)
		larder__slab_free_batched(&m->cache->slab, &m->clear.batch, e,
					  larder__entry_size(e));
}

/*
 * The fallback walk, in the table's (hash) order: up to WALK_PER_PASS
 * buckets, entries prefetched WALK_AHEAD buckets ahead, their policy
 * neighbours half as far. Every entry sits in a different page, so pages
 * only fall empty near the end. Used when the sorted walk has no memory for
 * its arrays. Returns whether the table is done.
 */
static int walk_hash_order(struct larder__maint *m, struct larder__table *g,
			   struct larder__table *t, uint64_t *bytes, uint64_t *work)
{
	for (unsigned n = 0; n < WALK_PER_PASS && g->walk_cursor <= t->last; n++, (*work)++) {
		uint64_t at = g->walk_cursor++;
		if (at + WALK_AHEAD <= t->last)
			walk_prefetch(&m->cache->slab.dir, &t->buckets[at + WALK_AHEAD], 0);
		if (at + WALK_AHEAD / 2 <= t->last)
			walk_prefetch(&m->cache->slab.dir, &t->buckets[at + WALK_AHEAD / 2], 1);
		struct larder__bucket *b = &t->buckets[at];
		for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
			/* Relaxed: the table is private to us now. */
			struct larder__entry *e =
				slot_live(atomic_load_explicit(&b->slot[i], LARDER__RELAXED));
			if (!e)
				continue;
			atomic_store_explicit(&b->slot[i], 0, LARDER__RELAXED); /* private */
			clear_one(m, e, bytes);
		}
	}
	return g->walk_cursor > t->last;
}

/* The sort key of an entry: its 8 MiB of address space, modulo the keys. */
static uint64_t sort_key(const struct larder__clear_walk *w, const struct larder__entry *e)
{
	return ((uintptr_t)e >> SORT_SHIFT) & (w->keys - 1);
}

/* Maps the key counts: a power of two, twice the keys the live bytes span
 * (address space beyond that only makes far regions share a key). */
static int sorted_begin(struct larder__clear_walk *w, uint64_t live_bytes)
{
	uint64_t keys = SORT_KEYS_MIN;
	while (keys < SORT_KEYS_MAX && (keys << SORT_SHIFT) < 2 * live_bytes)
		keys *= 2;
	w->count_bytes = larder__pages_round(keys * sizeof(uint32_t));
	w->count = larder__pages_map(w->count_bytes, LARDER__OS_PAGE);
	if (!w->count)
		return -1;
	w->keys = keys;
	w->phase = CLEAR_COUNT;
	return 0;
}

/* Counting done: maps the order array and turns counts into start offsets. */
static int sorted_place(struct larder__clear_walk *w)
{
	uint64_t n = 0, most = 0;
	for (uint64_t k = 0; k < w->keys; k++) {
		uint32_t c = w->count[k];
		w->count[k] = (uint32_t)n;
		n += c;
		most = c > most ? c : most;
	}
	w->n = n;
	/* One mapping: the order array, then room for the largest key's entries. */
	w->order_bytes = larder__pages_round((n + most + 1) * sizeof(*w->order));
	w->order = larder__pages_map(w->order_bytes, LARDER__OS_PAGE);
	if (!w->order)
		return -1;
	w->sub = w->order + n;
	w->phase = CLEAR_SCATTER;
	return 0;
}

/* Moves the next key's entries from order into sub, sorted by 64 KiB (a
 * counting sort in cache: the key spans 8 MiB), so a page's slots go in a
 * row and larder__slab_free_batched() sets their bits together. */
static void sorted_take_key(struct larder__clear_walk *w)
{
	uint32_t start[SUB_KEYS] = { 0 };
	uint64_t lo = w->at, hi = w->count[w->key++];
	for (uint64_t i = lo; i < hi; i++)
		start[((uintptr_t)w->order[i] >> SUB_SHIFT) % SUB_KEYS]++;
	for (uint32_t k = 0, n = 0; k < SUB_KEYS; k++) {
		uint32_t c = start[k];
		start[k] = n;
		n += c;
	}
	for (uint64_t i = lo; i < hi; i++)
		w->sub[start[((uintptr_t)w->order[i] >> SUB_SHIFT) % SUB_KEYS]++] = w->order[i];
	w->at = hi;
	w->sub_n = hi - lo;
	w->sub_at = 0;
}

static void sorted_end(struct larder__clear_walk *w)
{
	if (w->count)
		larder__pages_unmap(w->count, w->count_bytes);
	if (w->order)
		larder__pages_unmap(w->order, w->order_bytes);
	*w = (struct larder__clear_walk){ 0 };
}

/*
 * One pass of the sorted walk (see walk_gens). COUNT and SCATTER read the
 * table in order, SCAN_PER_PASS buckets a pass; SCATTER also empties each
 * slot it moves into the order array, so that an entry is in exactly one of
 * them (larder__maint_destroy frees both). FREE takes one key at a time
 * into sub (sorted_take_key) and retires and frees up to FREE_PER_PASS
 * entries a pass in that order. Returns whether the table is done;
 * -1 if the order array could not be mapped (then the table is untouched).
 */
static int walk_sorted(struct larder__maint *m, struct larder__table *g, struct larder__table *t,
		       uint64_t *bytes, uint64_t *work)
{
	struct larder__clear_walk *w = &m->clear;
	if (w->phase != CLEAR_FREE) {
		for (unsigned n = 0; n < SCAN_PER_PASS && g->walk_cursor <= t->last; n++, (*work)++) {
			struct larder__bucket *b = &t->buckets[g->walk_cursor++];
			for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
				/* Relaxed: the table is private to us now. */
				struct larder__entry *e = slot_live(
					atomic_load_explicit(&b->slot[i], LARDER__RELAXED));
				if (!e)
					continue;
				uint64_t k = sort_key(w, e);
				if (w->phase == CLEAR_COUNT) {
					w->count[k]++;
					continue;
				}
				w->order[w->count[k]++] = e;
				atomic_store_explicit(&b->slot[i], 0, LARDER__RELAXED); /* private */
			}
		}
		if (g->walk_cursor <= t->last)
			return 0;
		g->walk_cursor = 0;
		if (w->phase == CLEAR_COUNT)
			return sorted_place(w) ? -1 : 0;
		w->phase = CLEAR_FREE;
		return 0;
	}
	const struct larder__pagedir *dir = &m->cache->slab.dir;
	for (unsigned n = 0; n < FREE_PER_PASS; n++, (*work)++) {
		if (w->sub_at == w->sub_n) {
			if (w->key == w->keys)
				return 1;
			sorted_take_key(w);
			continue;
		}
		uint64_t at = w->sub_at++;
		if (at + FREE_AHEAD < w->sub_n)
			__builtin_prefetch(w->sub[at + FREE_AHEAD], 1);
		if (at + FREE_AHEAD / 2 < w->sub_n) {
			/* Queue neighbours by id (E5), as walk_prefetch does. */
			struct larder__entry *e = w->sub[at + FREE_AHEAD / 2];
			if (e->prev)
				__builtin_prefetch(larder__entry_at(dir, e->prev), 1);
			__builtin_prefetch(larder__entry_at(dir, e->next), 1);
		}
		clear_one(m, w->sub[at], bytes);
	}
	return 0;
}

/*
 * Empties the oldest cleared table, once its grace period has ended (ready:
 * polled before this pass drained the rings). Its entries are freed here,
 * without the collect list's grace period: the table's own period began
 * after it was unpublished and ended before this pass drained every ring,
 * so no reader, event or hit sample can still name them (M2), and each is
 * freed while still in cache.
 *
 * The order matters for memory going back. In the table's (hash) order
 * every entry lies in another page, so a page's last slot goes late and
 * pages only fall empty at the end of the walk: the returner thread then
 * unmaps everything after it (8 GiB of 1 KiB-median values: walk done at
 * about 1 s, memory back at 1.8-2.0 s). So the walk sorts the entries by
 * address first, with counting sorts that stay in cache: one pass over the
 * table counts entries per 8 MiB of address space (modulo a few thousand
 * keys), a second moves each into its key's range of an order array (8
 * bytes per entry, mapped for the walk); then, one key at a time, its
 * entries are sorted by 64 KiB (the smallest page) and freed in that order.
 * Pages fall empty one after another from the start, so the returner
 * unmaps while the walk goes on; a page's slots go in a row, so their bits
 * are set together (larder__slab_free_batched); and the entry headers, their
 * queue neighbours (allocated around the time they were inserted) and the
 * page headers are mostly in cache. Without memory for the arrays, the walk
 * goes in hash order. Returns the buckets or entries it went through, so
 * that a long walk runs pass after pass without the batching window's sleep
 * (which under load cost more than the walk: maint_sleep).
 */
static uint64_t walk_gens(struct larder__maint *m, int ready)
{
	struct larder__table *g = m->gens;
	if (!g || !ready)
		return 0;
	struct larder__table *t = g, *next = larder__table_next(g);
	if (next)
		t = next;
	if (m->clear.phase == CLEAR_START) {
		if (next) {
			/* No writer can reach g any more: finish its growth at once. */
			migrate(m, g, SIZE_MAX);
			if (m->growing == g)
				m->growing = NULL;
		}
		g->walk_cursor = 0;
		if (sorted_begin(&m->clear, m->live_bytes) != 0)
			m->clear.phase = CLEAR_HASH;
	}
	uint64_t done_bytes = 0, work = 1;
	int done = m->clear.phase == CLEAR_HASH ? walk_hash_order(m, g, t, &done_bytes, &work)
						: walk_sorted(m, g, t, &done_bytes, &work);
	larder__slab_batch_flush(&m->cache->slab, &m->clear.batch);
	if (done < 0) {
		sorted_end(&m->clear);
		m->clear.phase = CLEAR_HASH;
		done = 0;
	}
	if (done_bytes) {
		count_freed(m, done_bytes);
		wake_writers(m->cache);
	}
	if (!done)
		return work;
	sorted_end(&m->clear);
	m->gens = g->retire_next;
	larder__table_destroy(next);
	larder__table_destroy(g);
	return work;
}

/* ---- Eviction -------------------------------------------------------------- */

/* Unlinks e from the current index if it is still there; 0 if it was not. */
static int unlink_current(struct larder *c, struct larder__entry *e)
{
	uint64_t hash = entry_hash(c, e);
	struct larder__table *t;
	/* A-ROOT: acquire, pairs with R-ROOT (clear, growth end). */
	struct larder__table *root =
		(struct larder__table *)atomic_load_explicit(&c->table, LARDER__ACQUIRE);
	struct larder__bucket *home = larder__table_lock(root, hash, &t);
	larder__atomic_u64 *slot =
		larder__table_find_locked(t, hash, larder__entry_key(e), e->key_len);
	/* Relaxed: we hold the home lock, so the slot is stable (X2). */
	int found = slot && larder__slot_entry(atomic_load_explicit(slot, LARDER__RELAXED)) == e;
	if (found)
		larder__table_erase_locked(t, hash, slot);
	larder__table_unlock(home);
	return found;
}

static uint64_t evict(struct larder__maint *m)
{
	struct larder *c = m->cache;
	uint64_t cap = atomic_load_explicit(&c->capacity, LARDER__RELAXED); /* a stale value only delays */
	if (cap != m->policy_capacity) {
		m->ops->set_capacity(m->policy, cap);
		m->policy_capacity = cap;
	}
	uint64_t want = atomic_load_explicit(&c->wanted, LARDER__RELAXED); /* a hint */
	uint64_t n = 0;
	while (m->live_bytes + want > cap && n < EVICT_PER_PASS) {
		struct larder__entry *e = m->ops->evict(m->policy);
		if (!e)
			break;
		e->mbits &= (uint8_t)~LARDER__MBITS_QUEUED;
		n++;
		/* Not found: a pending event or a cleared table will retire it. */
		if (unlink_current(c, e))
			retire(m, e, entry_expired(c, e) ? LARDER_CAUSE_EXPIRED : LARDER_CAUSE_EVICTED,
			       1);
	}
	if (n && want)
		atomic_store_explicit(&c->wanted, 0, LARDER__RELAXED); /* waiters re-assert */
	return n;
}

/*
 * A wheel timer came due (its slot's tick <= now). The deadline is read
 * again: touch or after-access may have moved it later in place, and then
 * the entry is scheduled again; otherwise it is unlinked and retired.
 */
static void on_due(void *ctx, struct larder__wheel_link *link, uint32_t id)
{
	struct larder__maint *m = ctx;
	struct larder__entry *e = larder__wheel_entry(link);
	uint64_t d = entry_deadline(e);
	if (d == UINT64_MAX)
		return; /* touch took its deadline away */
	if (d > m->now_ms) {
		larder__wheel_schedule(&m->wheel, link, id, d);
		return;
	}
	/* Not found: replaced or removed meanwhile; that event retires it. */
	if (unlink_current(m->cache, e))
		retire(m, e, LARDER_CAUSE_EXPIRED, 1);
}

static uint64_t expire_due(struct larder__maint *m)
{
	if (!m->wheel.count) { /* an idle wheel costs no clock read */
		m->next_due = UINT64_MAX;
		return 0;
	}
	uint64_t now = pass_now(m);
	uint64_t n = larder__wheel_advance(&m->wheel, now, EXPIRE_PER_PASS, on_due, m);
	if (n < EXPIRE_PER_PASS) /* R-WHEEL: release; the listener calls before it */
		atomic_store_explicit(&m->wheel_done, now, LARDER__RELEASE);
	/* Cascades ahead of time, a bounded chunk per pass (after the expiries:
	 * it delays the next pass, not this one's). Counted as one unit of
	 * work: the maintainer keeps passing at the batching window until done,
	 * which is ample with a real clock (a level-l slot has 64^l ms of lead)
	 * without spinning. The share per expiry keeps staging level with
	 * expiry when the clock outruns the passes (an injected clock stepping
	 * by seconds): a timer is staged about 3 times (at most 5) for each
	 * time it expires. */
	uint64_t staged = larder__wheel_prepare(&m->wheel, STAGE_PER_PASS + STAGE_PER_EXPIRY * n);
	m->next_due = larder__wheel_next(&m->wheel);
	return n + (staged != 0);
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
	uint64_t cleared = stat_of(m, LARDER_STAT_CLEARED);
	uint64_t walking = m->cleared_goal > cleared ? m->cleared_goal - cleared : 0;
	return m->live_count > walking ? m->live_count - walking : 0;
}

/*
 * L3: starts shrinking root if it is sparse. Only while the count is exact
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

static int grow(struct larder__maint *m)
{
	struct larder *c = m->cache;
	struct larder__table *root =
		(struct larder__table *)atomic_load_explicit(&c->table, LARDER__ACQUIRE); /* A-ROOT */
	if (!m->growing) {
		/* Relaxed: a hint. An ask about a table resized out of since
		 * (a writer that failed during that resize) is stale. */
		uintptr_t asked = atomic_exchange_explicit(&c->grow_wanted, 0, LARDER__RELAXED);
		if (asked == (uintptr_t)root || larder__table_over_load(root, root_entries(m))) {
			if (larder__table_grow_begin(root) != 0)
				return 0; /* no memory: writers keep probing the current table */
		} else if (shrink_begin(m, root) != 0) {
			return 0; /* nothing to do, or no memory: the table stays */
		}
		m->growing = root;
	}
	struct larder__table *t = m->growing, *next = larder__table_next(t);
	int shrinking = next->last < t->last;
	size_t chunk = shrinking ? SHRINK_PER_PASS : MIGRATE_PER_PASS;
	/* If entries arrive faster than we move homes, move the rest now. A
	 * writer that asks for growth meanwhile found no free slot within reach
	 * in homes not moved yet (the old table keeps filling until they are):
	 * finishing this resize answers it; another would double a table that
	 * is not full (a writer still stuck asks again). */
	if (root_entries(m) * 5 > larder__table_slots(next) * 3 ||
	    atomic_exchange_explicit(&c->grow_wanted, 0, LARDER__RELAXED) != 0) /* a hint */
		chunk = SIZE_MAX;
	if (!migrate(m, t, chunk))
		/* A shrink's passes follow one another at once (as busy as
		 * BUSY_PASS_EVENTS): nothing else hurries it, and the memory it
		 * frees waits for its end (at one batching window per 1,024
		 * homes, a 1,245,184-bucket table took over 1 s on a loaded
		 * machine, into the churn that followed a capacity cut). */
		return shrinking ? (int)BUSY_PASS_EVENTS : 1;
	uintptr_t expect = (uintptr_t)t;
	m->growing = NULL;
	/* R-ROOT: release, the new table's contents before readers that load
	 * the root (A-ROOT). Fails only if a clear swapped t out: then the
	 * cleared generation owns t and next. */
	if (atomic_compare_exchange_strong_explicit(&c->table, &expect, (uintptr_t)next,
						    LARDER__RELEASE, LARDER__RELAXED)) {
		t->retire_token = larder__gp_start();
		t->retire_next = m->tables;
		m->tables = t;
		bump(m, shrinking ? LARDER_STAT_INDEX_SHRINKS : LARDER_STAT_INDEX_RESIZES, 1);
	}
	return 1;
}

/* ---- Handles of exited threads ----------------------------------------------- */

static void handle_unlink(struct larder *c, struct larder__handle *h)
{
	uintptr_t expect = (uintptr_t)h;
	/* Acquire on failure: we walk the newer head's links. */
	if (atomic_compare_exchange_strong_explicit(&c->handles, &expect, (uintptr_t)h->next,
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
	/* Relaxed: statistics; the thread is gone (A-ORPHAN). */
	bump(m, LARDER_STAT_HITS, atomic_load_explicit(&h->hit_head, LARDER__RELAXED));
	bump(m, LARDER_STAT_MISSES, atomic_load_explicit(&h->misses, LARDER__RELAXED));
	bump(m, LARDER_STAT_WRITES, atomic_load_explicit(&h->writes, LARDER__RELAXED));
	bump(m, LARDER_STAT_WRITE_WAITS, atomic_load_explicit(&h->write_waits, LARDER__RELAXED));
	bump(m, LARDER_STAT_WRITE_BUSY, atomic_load_explicit(&h->write_busy, LARDER__RELAXED));
	bump(m, LARDER_STAT_MAINT_WAITS, atomic_load_explicit(&h->maint_waits, LARDER__RELAXED));
	bump(m, LARDER_STAT_BUSY_MEMORY, atomic_load_explicit(&h->busy_memory, LARDER__RELAXED));
	bump(m, LARDER_STAT_BUSY_EVENTS, atomic_load_explicit(&h->busy_events, LARDER__RELAXED));
	bump(m, LARDER_STAT_BUSY_INDEX, atomic_load_explicit(&h->busy_index, LARDER__RELAXED));
	bump(m, LARDER_STAT_EVENTS_SPILLED, atomic_load_explicit(&h->spilled, LARDER__RELAXED));
	bump(m, LARDER_STAT_USED_BYTES, atomic_load_explicit(&h->alloc_bytes, LARDER__RELAXED));
}

/* Final drain of an exited thread's handle, then it is freed. */
static void dismantle(struct larder__maint *m, struct larder__handle *h)
{
	struct larder *c = m->cache;
	drain_events(m, h);
	drain_hits(m, h);
	larder__slab_release_cursor(&c->slab, &h->cursor);
	atomic_fetch_add_explicit(&c->budget, h->credit, LARDER__RELAXED); /* a count */
	pthread_mutex_lock(&c->handles_lock);
	fold_handle_stats(m, h);
	handle_unlink(c, h);
	pthread_mutex_unlock(&c->handles_lock);
	spill_free(h);
	free(h);
}

static int reap_orphans(struct larder__maint *m)
{
	int n = 0;
	struct larder__handle *h = handles_first(m->cache);
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

/* ---- The loop ------------------------------------------------------------------- */

static int rings_empty(struct larder *c)
{
	for (struct larder__handle *h = handles_first(c); h; h = h->next) {
		/* Relaxed: only a hint whether to sleep; a missed event is caught by
		 * the writer's wake-up (W1) or the idle timeout. */
		if (atomic_load_explicit(&h->ev_head, LARDER__RELAXED) !=
			    atomic_load_explicit(&h->ev_tail, LARDER__RELAXED) ||
		    spill_pending(h))
			return 0;
	}
	return 1;
}

/*
 * A grace period costs two membarrier calls, each of which interrupts every
 * CPU running one of our threads: start one only for a batch worth it (64 KiB),
 * when a writer (or a test seam) waits, or when the last one is 1 ms old, so that
 * retired memory waits at most about 1 ms plus the grace period itself.
 */
static int gp_due(struct larder__maint *m)
{
	struct larder *c = m->cache;
	return m->collect_bytes >= GP_BATCH_BYTES ||
	       atomic_load_explicit(&c->room_waiters, LARDER__RELAXED) || /* a hint */
	       atomic_load_explicit(&m->seam_waiters, LARDER__RELAXED) || /* a hint (quiesce) */
	       atomic_load_explicit(&c->stop, LARDER__RELAXED) ||
	       larder__monotonic_ns() - m->gp_started_ns >= GP_INTERVAL_NS;
}

/* Test seam: the queues are ours (E3), so the check runs here, on request. */
static void check_links_if_asked(struct larder__maint *m)
{
	/* A-CHKQ: acquire, pairs with R-CHKQ: the asker's earlier operations. */
	uint64_t asked = atomic_load_explicit(&m->check_asked, LARDER__ACQUIRE);
	if (asked == atomic_load_explicit(&m->check_answered, LARDER__RELAXED)) /* ours */
		return;
	int64_t linked = m->ops->check(m->policy);
	/* Relaxed: published by R-CHKA below. */
	atomic_store_explicit(&m->check_ok, linked >= 0 && (uint64_t)linked == m->live_count,
			      LARDER__RELAXED);
	/* R-CHKA: release, pairs with A-CHKA in larder__test_check_links(). */
	atomic_store_explicit(&m->check_answered, asked, LARDER__RELEASE);
}

/* One pass; returns how much it did (0 = idle). */
static uint64_t maint_pass(struct larder__maint *m)
{
	struct larder *c = m->cache;
	uint64_t work = 0;
	larder__stat_bump(&m->pass_seq, 1);
	m->have_now = 0;
	/* Q1: orders the pass number before this pass's ring reads; with the
	 * fence in larder__test_quiesce(), a pass numbered after the quiescer
	 * read pass_seq sees everything the quiescer posted before. */
	atomic_thread_fence(LARDER__SEQ_CST);
	bump(m, LARDER_STAT_MAINT_PASSES, 1);

	int batch_ready = m->waiting && larder__gp_poll(m->waiting_token);
	int gen_ready = m->gens && larder__gp_poll(m->gens->retire_token);
	uint64_t hits;
	uint64_t events = drain_all(m, &hits);
	/* Hit samples alone keep the maintainer polling at the batching window
	 * only where they must come on time: a policy that counts them
	 * (hits_keep_awake, evict/policy.h) or expire-after-access, whose
	 * deadlines they extend. Otherwise a read-only phase lets it sleep: the
	 * rings keep each thread's latest samples, the accessed mark (E7) the
	 * rest, and no maintainer write invalidates lines the readers share
	 * (2 reader threads: 1.80x one thread's reads with polling, 2.0x without). */
	work += events + (hits != 0 && m->hits_keep_awake);
	if (batch_ready) {
		free_entries(m, m->waiting, m->waiting_bytes);
		m->waiting = NULL;
		m->waiting_bytes = 0;
		wake_writers(c);
		work++;
	}
	if (m->tables) {
		free_tables(m);
		work++;
	}
	work += walk_gens(m, gen_ready);
	work += (uint64_t)reap_orphans(m);
	work += expire_due(m);
	work += evict(m);
	work += (uint64_t)grow(m);
	if (m->growing || events)
		wake_writers(c); /* writers waiting for the index or the ring */
	if (!m->waiting && m->collect && gp_due(m)) {
		m->gp_started_ns = larder__monotonic_ns();
		m->waiting = m->collect;
		m->waiting_bytes = m->collect_bytes;
		m->waiting_token = larder__gp_start();
		m->collect = NULL;
		m->collect_bytes = 0;
		work++;
	}
	/* Relaxed: read by a statistics snapshot only. */
	atomic_store_explicit(&m->stat[LARDER_STAT_ENTRIES], m->live_count, LARDER__RELAXED);
	check_links_if_asked(m);
	int pending = m->collect || m->waiting || m->gens || m->tables || m->growing;
	if (!work && !pending)
		/* Q2: release; the quiesce seam acquires it (Q3). */
		atomic_store_explicit(&m->idle_seq,
				      atomic_load_explicit(&m->pass_seq, LARDER__RELAXED),
				      LARDER__RELEASE);
	/* A test seam waits for this pass: an idle one bumps nothing else.
	 * Relaxed: a hint; the seam's wait is bounded anyway. */
	if (atomic_load_explicit(&m->seam_waiters, LARDER__RELAXED))
		wake_writers(c);
	return work + (uint64_t)pending;
}

static void maint_sleep(struct larder__maint *m, uint64_t work)
{
	struct larder *c = m->cache;
	if (work >= BUSY_PASS_EVENTS)
		return;
	if (work) {
		/* The batching window: a writer whose ring is half full cuts it
		 * short (W1); relaxed, the futex word needs no ordering here. */
		atomic_store_explicit(&c->maint_sleeping, MAINT_WINDOW, LARDER__RELAXED);
		larder__futex_wait(&c->maint_sleeping, MAINT_WINDOW, WINDOW_NS);
		atomic_store_explicit(&c->maint_sleeping, 0, LARDER__RELAXED); /* awake; as above */
		return;
	}
	/* Sleep until the wheel's next event at most (on the cache clock; see
	 * the lateness bound above), never longer than IDLE_NS. */
	atomic_store_explicit(&m->idle_until, m->next_due, LARDER__RELAXED); /* a test seam */
	uint64_t sleep_ns = IDLE_NS;
	if (m->next_due != UINT64_MAX) {
		uint64_t now = c->clock(c->clock_ctx);
		if (m->next_due <= now)
			return;
		if (m->next_due - now < IDLE_NS / 1000000u)
			sleep_ns = (m->next_due - now) * 1000000u;
	}
	/* W2: announce sleep, then re-check the rings (Dekker with W1 in
	 * larder__cache_wake_maintainer(): one of us sees the other). */
	atomic_store_explicit(&c->maint_sleeping, MAINT_IDLE, LARDER__SEQ_CST);
	if (rings_empty(c) && !atomic_load_explicit(&c->stop, LARDER__SEQ_CST))
		larder__futex_wait(&c->maint_sleeping, MAINT_IDLE, sleep_ns);
	/* Relaxed: awake again; the next pass's reads are ordered by Q1. */
	atomic_store_explicit(&c->maint_sleeping, 0, LARDER__RELAXED);
}

static void *maint_main(void *arg)
{
	struct larder *c = arg;
	/* Before any listener runs: this thread's writes must never wait
	 * (core/cache.c, wait_pass). Without its state it cannot run at all. */
	struct larder__thread *self = larder__thread_self();
	if (self)
		self->maintainer = 1;
	/* R-START: release, pairs with A-START in larder__maint_start(). */
	atomic_store_explicit(&c->maint_started, self ? MAINT_RUNNING : MAINT_NO_STATE,
			      LARDER__RELEASE);
	larder__futex_wake(&c->maint_started, 1);
	if (!self)
		return NULL;
	/* A-STOP: acquire, pairs with R-STOP in larder__maint_stop(). */
	while (!atomic_load_explicit(&c->stop, LARDER__ACQUIRE))
		maint_sleep(c->maint, maint_pass(c->maint));
	/* What callers posted before close: applied here, so that the
	 * listener hears of those removals on this thread, not the closer's. */
	uint64_t hits;
	drain_all(c->maint, &hits);
	return NULL;
}

void larder__cache_wake_maintainer(struct larder *c, const struct larder__handle *h)
{
	/* W1: seq_cst fence between the caller's event post (R-EV) and this
	 * load; pairs with W2 in maint_sleep(). */
	atomic_thread_fence(LARDER__SEQ_CST);
	uint32_t s = atomic_load_explicit(&c->maint_sleeping, LARDER__RELAXED); /* after W1 */
	if (s == MAINT_AWAKE || (s == MAINT_WINDOW && (!h || !larder__events_half_full(h))))
		return;
	/* Relaxed: the futex word; W1 already ordered our event before it. */
	if (atomic_exchange_explicit(&c->maint_sleeping, MAINT_AWAKE, LARDER__RELAXED))
		larder__futex_wake(&c->maint_sleeping, 1);
}

/* ---- Life cycle --------------------------------------------------------------- */

int larder__maint_create(struct larder *c)
{
	struct larder__maint *m = larder__calloc(1, sizeof(*m));
	if (!m)
		return LARDER_ENOMEM;
	m->cache = c;
	m->next_due = UINT64_MAX;
	/* Wheel time starts at 0: no clock call at open; the first advance
	 * jumps to the clock over empty slots. */
	larder__wheel_init(&m->wheel, 0, &c->slab.dir, LARDER__ENTRY_WHEEL_OFFSET, wheel_deadline,
			   m);
	m->ops = larder__policy_ops_for(c->policy);
	m->hits_keep_awake = m->ops->hits_keep_awake;
	m->policy_capacity = atomic_load_explicit(&c->capacity, LARDER__RELAXED); /* not shared yet */
	struct larder__table *first = /* the open's own table, not shared yet */
		(struct larder__table *)atomic_load_explicit(&c->table, LARDER__RELAXED);
	uint64_t floor = first->last + 1;
	if (floor < LARDER__TABLE_SMALL_BUCKETS)
		floor = LARDER__TABLE_SMALL_BUCKETS;
	atomic_store_explicit(&m->index_floor, floor, LARDER__RELAXED); /* not shared yet */
	struct larder__policy_host host = { entry_hash, entry_charge, c, &c->slab.dir };
	int rc = m->ops->create(&m->policy, &host, m->policy_capacity, c->expected_entries);
	if (rc == LARDER_OK) /* a pooled cache's policy reports to its pool (after hits_keep_awake) */
		rc = larder__pool_wrap_policy(c, &host, &m->ops, &m->policy);
	if (rc != LARDER_OK) {
		free(m);
		return rc;
	}
	c->maint = m;
	return LARDER_OK;
}

int larder__maint_start(struct larder *c)
{
	if (pthread_create(&c->thread, NULL, maint_main, c) != 0)
		return LARDER_ETHREAD;
	/* A-START: acquire, pairs with R-START: the thread's verdict. */
	uint32_t st;
	while ((st = atomic_load_explicit(&c->maint_started, LARDER__ACQUIRE)) == MAINT_STARTING)
		larder__futex_wait(&c->maint_started, MAINT_STARTING, 10u * 1000u * 1000u);
	if (st == MAINT_RUNNING)
		return LARDER_OK;
	pthread_join(c->thread, NULL);
	return LARDER_ENOMEM;
}

static void free_large(void *ctx, struct larder__entry *e)
{
	struct larder *c = ctx;
	size_t bytes = larder__entry_size(e);
	if (bytes > LARDER__SLAB_MAX_SLOT)
		larder__slab_free(&c->slab, e, bytes);
}

static void free_large_list(struct larder *c, struct larder__entry *e)
{
	while (e) {
		struct larder__entry *next = e->retired_next; /* free_large may unmap e */
		free_large(c, e);
		e = next;
	}
}

void larder__maint_destroy(struct larder *c)
{
	struct larder__maint *m = c->maint;
	/* Apply what threads posted last, so that every entry is in the index or
	 * on a retire list; then slab pages go back whole, and only private
	 * mappings need a walk. The maintainer's last drain (maint_main) left
	 * only what its listener wrote meanwhile; no listener runs here, on the
	 * closing thread (larder.h: removals at close are not reported). */
	uint64_t hits;
	m->closing = 1;
	drain_all(m, &hits);
	struct larder__table *root = /* A-ROOT */
		(struct larder__table *)atomic_load_explicit(&c->table, LARDER__ACQUIRE);
	larder__table_walk(root, free_large, c);
	larder__table_destroy(larder__table_next(root));
	larder__table_destroy(root);
	/* The head's sorted walk may hold some of its entries in its order
	 * array instead of the table (walk_sorted). */
	for (uint64_t i = m->clear.sub_at; i < m->clear.sub_n; i++)
		free_large(c, m->clear.sub[i]);
	for (uint64_t i = m->clear.at; m->clear.order && i < m->clear.n; i++)
		if (m->clear.order[i])
			free_large(c, m->clear.order[i]);
	sorted_end(&m->clear);
	while (m->gens) {
		struct larder__table *g = m->gens, *next = larder__table_next(g);
		m->gens = g->retire_next;
		larder__table_walk(g, free_large, c);
		larder__table_destroy(next);
		larder__table_destroy(g);
	}
	while (m->tables) {
		struct larder__table *t = m->tables;
		m->tables = t->retire_next;
		larder__table_destroy(t);
	}
	free_large_list(c, m->collect);
	free_large_list(c, m->waiting);
	struct larder__handle *h = handles_first(c);
	while (h) {
		struct larder__handle *next = h->next;
		spill_free(h);
		free(h);
		h = next;
	}
	larder__slab_destroy(&c->slab);
	m->ops->destroy(m->policy);
	larder__wheel_destroy(&m->wheel);
	free(m);
}

void larder__maint_stop(struct larder *c)
{
	/* R-STOP: release, pairs with A-STOP. */
	atomic_store_explicit(&c->stop, 1, LARDER__SEQ_CST);
	atomic_store_explicit(&c->maint_sleeping, 0, LARDER__RELAXED); /* the futex word */
	larder__futex_wake(&c->maint_sleeping, 1);
	pthread_join(c->thread, NULL);
}

uint64_t larder__maint_freed_bytes(struct larder *c)
{
	/* Acquire: pairs with R-FREED; frees counted here happened before. */
	return atomic_load_explicit(&c->maint->freed_bytes, LARDER__ACQUIRE);
}

void larder__maint_stats(struct larder *c, uint64_t *values)
{
	struct larder__maint *m = c->maint;
	for (unsigned i = 0; i < LARDER_STAT_COUNT; i++)
		values[i] += atomic_load_explicit(&m->stat[i], LARDER__RELAXED); /* statistics */
	values[LARDER_STAT_USED_BYTES] -= atomic_load_explicit(&m->freed_bytes, LARDER__RELAXED);
}

/* ---- Test seams --------------------------------------------------------------- */

/* Test seams: wakes the maintainer and waits up to 1 ms for one of its
 * passes (which bump the writers' room word while a seam waits). */
static void seam_wake_and_wait(struct larder *c)
{
	struct larder__maint *m = c->maint;
	atomic_fetch_add_explicit(&m->seam_waiters, 1, LARDER__RELAXED); /* a count */
	uint32_t seq = atomic_load_explicit(&c->room_seq, LARDER__ACQUIRE);
	atomic_store_explicit(&c->maint_sleeping, 0, LARDER__SEQ_CST); /* the futex word */
	larder__futex_wake(&c->maint_sleeping, 1);
	larder__futex_wait(&c->room_seq, seq, 1000000u);
	atomic_fetch_sub_explicit(&m->seam_waiters, 1, LARDER__RELAXED); /* a count */
}

int larder__test_quiesce(larder *c, uint64_t timeout_ms)
{
	struct larder__maint *m = c->maint;
	uint64_t deadline = larder__monotonic_ns() + timeout_ms * 1000000u;
	atomic_thread_fence(LARDER__SEQ_CST); /* Q1's partner */
	/* A pass numbered above the value read here drains all we posted. */
	uint64_t after = atomic_load_explicit(&m->pass_seq, LARDER__RELAXED) + 1;
	/* Q3: acquire, pairs with Q2: that pass's frees are visible. Then the
	 * pages they emptied must be unmapped too (the slab's lock orders it). */
	while (atomic_load_explicit(&m->idle_seq, LARDER__ACQUIRE) < after ||
	       larder__slab_returning(&c->slab)) {
		if (larder__monotonic_ns() >= deadline)
			return -1;
		seam_wake_and_wait(c);
	}
	return 0;
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
	struct walk_totals w = { 0, 0 };
	/* In a read section: an entry the maintainer unlinks meanwhile (a TTL
	 * on the real clock) is not freed under the walk. */
	struct larder__thread *t = larder__thread_self();
	uint64_t outer = t ? larder__read_enter(&t->reader) : 0;
	struct larder__table *root = /* A-ROOT */
		(struct larder__table *)atomic_load_explicit(&c->table, LARDER__ACQUIRE);
	larder__table_walk(root, walk_count, &w);
	if (t)
		larder__read_exit(&t->reader, outer);
	*entries = w.entries;
	*slot_bytes = w.bytes;
}

int larder__test_check_links(larder *c, uint64_t timeout_ms)
{
	struct larder__maint *m = c->maint;
	uint64_t deadline = larder__monotonic_ns() + timeout_ms * 1000000u;
	/* R-CHKQ: release, pairs with A-CHKQ in check_links_if_asked(). */
	uint64_t asked = atomic_fetch_add_explicit(&m->check_asked, 1, LARDER__RELEASE) + 1;
	/* A-CHKA: acquire, pairs with R-CHKA: check_ok is the answer. */
	while (atomic_load_explicit(&m->check_answered, LARDER__ACQUIRE) < asked) {
		if (larder__monotonic_ns() >= deadline)
			return -1;
		seam_wake_and_wait(c);
	}
	/* Relaxed: A-CHKA above ordered the answer. */
	return atomic_load_explicit(&m->check_ok, LARDER__RELAXED) ? 0 : -1;
}

void larder__test_wake(larder *c)
{
	atomic_store_explicit(&c->maint_sleeping, 0, LARDER__RELAXED); /* the futex word */
	larder__futex_wake(&c->maint_sleeping, 1);
}

uint64_t larder__test_idle_until(larder *c)
{
	/* Relaxed: a reading for a test that polls it. */
	return atomic_load_explicit(&c->maint->idle_until, LARDER__RELAXED);
}

uint64_t larder__test_wheel_done(larder *c)
{
	/* A-WHEEL: acquire, pairs with R-WHEEL in expire_due(). */
	return atomic_load_explicit(&c->maint->wheel_done, LARDER__ACQUIRE);
}

void larder__test_index_floor(larder *c, uint64_t buckets)
{
	/* Relaxed: the maintainer reads it at its next shrink decision. */
	atomic_store_explicit(&c->maint->index_floor, buckets, LARDER__RELAXED);
}

void larder__test_poison_freed(int on)
{
	larder__slab_poison = on;
}
