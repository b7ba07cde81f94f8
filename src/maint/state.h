/*
 * maint/state.h - the maintainer's state, shared by the files of the
 * maintainer (and only by them: the rest of the engine goes through
 * maint/maintainer.h).
 *
 * Files of the maintainer, one job each, all on one struct larder__maint
 * (one per shard of a cache, core/shard.h):
 *   maint/maintainer.c  the thread: the pass, sleeping and waking, life cycle
 *   maint/apply.c       draining the rings, accounting, retiring, freeing
 *                       after grace periods, dismantling exited threads' handles
 *   maint/evict.c       evicting to capacity, and the TTL timing wheel
 *   maint/resize.c      growing and shrinking the index
 *   maint/clear.c       emptying cleared tables in address order
 *   maint/seams.c       the test seams (core/testing.h)
 *
 * Field ownership: everything here is written by the maintainer thread
 * alone (or by the closing thread once it has stopped), except the counters
 * that larder_stats() and the test seams read, and the test seams' request
 * words; each says how it is shared.
 */
#ifndef LARDER_MAINT_STATE_H
#define LARDER_MAINT_STATE_H

#include <stddef.h>
#include <stdint.h>

#include "core/assert.h"
#include "core/entry.h"
#include "core/thread.h"
#include "evict/policy.h"
#include "index/table.h"
#include "larder.h"
#include "maint/handle.h"
#include "mem/slab.h"
#include "pool/probe.h"
#include "sync/atomic.h"
#include "ttl/wheel.h"

struct larder;
struct larder__shard;

/* The owner-only fields below may be touched here: the caller is a
 * maintainer thread (core/thread.h), or the closing thread once the
 * maintainer has stopped (larder__maint_destroy sets closing first). */
#define LARDER__MAINT_OWNER(m) \
	LARDER__ASSERT((m)->closing || (larder__tls && larder__tls->maintainer))

/* A pass that did this much work runs the next one at once (no window). */
#define LARDER__MAINT_BUSY_PASS 256u

/* The sorted walk of the oldest cleared table (maint/clear.c). */
enum larder__clear_phase {
	LARDER__CLEAR_START,
	LARDER__CLEAR_COUNT,
	LARDER__CLEAR_SCATTER,
	LARDER__CLEAR_FREE,
	LARDER__CLEAR_HASH,
};

struct larder__clear_walk {
	enum larder__clear_phase phase;
	struct larder__table_iter iter; /* COUNT, SCATTER, HASH: the buckets not yet read */
	uint32_t *count; /* per key: entries (COUNT), then the end of its range (SCATTER on) */
	struct larder__entry **order; /* by key; [at, n) not yet taken into sub */
	struct larder__entry **sub;   /* one key's entries, by 64 KiB; [sub_at, sub_n) to free */
	size_t count_bytes, order_bytes;
	uint64_t n, at, key, sub_n, sub_at;
	struct larder__slab_batch batch; /* flushed at the end of every pass */
	uint64_t cleared_ms;             /* the head table's, for clear_one() */
};

/* What the overwrite path needs of an event's size class (maint/apply.c,
 * larder__maint_classes_init): a load each, where working them out from the
 * class per event (the slot size's branch and arithmetic, the page size's
 * loop, the free code's test) cost about 4 more of the maintainer's 129
 * instructions per put (docs/bench.md). */
struct larder__maint_class {
	uintptr_t page_mask; /* ~(larder__sizeclass_page(c) - 1): a slot's page */
	uint32_t slot;       /* larder__sizeclass_slot(c): an entry's charge */
	uint8_t dead_mbits;  /* a retired entry's mbits: COUNTED, DEAD, its free code */
};

struct larder__maint {
	struct larder *cache;
	struct larder__shard *shard; /* the one this maintainer serves (core/shard.h) */
	unsigned shard_index, shards; /* its index, and the cache's shard count */
	const struct larder__policy_ops *ops;
	struct larder__policy *policy;
	/* A pooled cache's probe, called beside the policy for the marked
	 * entries (pool/probe.h PROBE-P4), or NULL. */
	struct larder__probe *probe;
	int hits_keep_awake; /* hit samples alone are work (maint_pass) */
	int trickle;         /* the last pass may be followed by a lazy sleep (maint_pass) */
	int caught_up;       /* the last pass's work was its events, nothing else left (MAINT-M5) */
	int at_once;         /* this pass follows a busy one without a sleep (MAINT-M5) */
	uint32_t bulk_seen;  /* bulk writers running at the pass's start (A-BULK; SNAP-L6) */
	int staging;         /* the last pass staged wheel timers ahead (maint/evict.c) */
	/* live_count and live_bytes apart, as a queue's count and bytes
	 * (evict/list.h): updated together, but not as one vector. */
	uint64_t live_count;
	struct larder__entry *collect; /* retired, not sealed */
	uint64_t live_bytes;
	uint64_t collect_bytes;
	struct larder__maint_class classes[LARDER__SIZECLASS_COUNT]; /* set at create, then read */
	/* Retired before larder__gp_next() returned sealed_token: freed after the
	 * next grace period anyone starts (GP-G3 in sync/reclaim.c). */
	struct larder__entry *sealed;
	uint64_t sealed_bytes, sealed_token;
	/* Retired, grace period `waiting_token` running; waiting_sealed is the
	 * sealed batch that a start of our own took along (maint_pass). */
	struct larder__entry *waiting, *waiting_sealed;
	uint64_t waiting_bytes, waiting_sealed_bytes, waiting_token;
	struct larder__table *tables;    /* resized out of, freed after retire_token */
	struct larder__table *gens;      /* swapped out by clear, oldest first */
	struct larder__clear_walk clear; /* of gens, the head */
	struct larder__table *growing;   /* being resized into its next, either way */
	uint64_t clear_left;             /* entries the cleared tables held, not yet walked */
	/* TABLE-L3: the fewest buckets a shrink leaves: SMALL_BUCKETS or the first
	 * table's size if larger. Ours; relaxed, only the test seam
	 * larder__test_index_floor() writes it from another thread. */
	larder__atomic_u64 index_floor;
	uint64_t shrink_seen_count; /* live_count at the last shrink check (maint/resize.c) */
	uint64_t policy_capacity; /* the capacity share last given to the policy */
	int migrating; /* inside larder__maint_migrate(): the listener waits for its end */
	int closing;   /* larder__maint_destroy(): no listener calls (on the closer's thread) */
	struct larder__wheel wheel; /* counted entries with a deadline (ENTRY-E3: ours) */
	uint64_t next_due;          /* larder__wheel_next() after the last advance */
	uint64_t now_ms;            /* the cache clock, read once per pass when needed;
				     * never moves back (maint/evict.c, pass_now) */
	int have_now;
	/* This pass stopped its expiries at their bound per pass with more
	 * due: it settles nothing (QUIESCE-Q4). */
	int behind;
	/* Charges this maintainer evicted or expired since open (maint/evict.c);
	 * published at each pass's end as removed_bytes (larder_flush). */
	uint64_t removed;
	/* Counters: written by this thread only (relaxed load+store), read by
	 * larder_stats() and the quiesce seam from any thread. */
	larder__atomic_u64 stat[LARDER_STAT_COUNT];
	larder__atomic_u64 freed_bytes;
	larder__atomic_u64 pass_seq;     /* passes started */
	larder__atomic_u64 idle_seq;     /* number of the last pass that found nothing to do */
	/* larder_flush (maint/flush.c, QUIESCE-Q4): at each pass's end, its
	 * number (ended_seq), its live bytes and `removed`; settled_seq: the
	 * number of the last pass that ended with no cleared table left to
	 * walk and no expiry left over. */
	larder__atomic_u64 ended_seq, settled_seq, ended_live, removed_bytes;
	larder__atomic_u32 pass_waiters; /* threads waiting for a pass: larder_flush and the
					    test seams (maint/flush.c) */
	larder__atomic_u64 idle_until;   /* test seam: next_due when it last slept idle */
	/* Test seam: passes run at once after a busy one that found no event
	 * and nothing else to do (MAINT-M5; larder__test_empty_followups). */
	larder__atomic_u64 empty_followups;
	larder__atomic_u64 wheel_done;   /* R-WHEEL: expired through this clock time */
	/* Test seam larder__test_check_links: requests counted by the tester
	 * (R-CHKQ), answered by a pass (R-CHKA); check_ok is written before. */
	larder__atomic_u64 check_asked, check_answered;
	larder__atomic_int check_ok;
};

/* Adds by to the maintainer's counter s (HANDLE-H2's rule: one writer). */
static inline void larder__maint_bump(struct larder__maint *m, enum larder_stat s, uint64_t by)
{
	larder__stat_bump(&m->stat[s], by);
}

/* The maintainer's counter s. */
static inline uint64_t larder__maint_stat(struct larder__maint *m, enum larder_stat s)
{
	return atomic_load_explicit(&m->stat[s], LARDER__RELAXED); /* ours */
}

/* This maintainer's share of the capacity, for its policy: 1/K of it, the
 * remainder spread over the first shards, so that the shares sum to the
 * capacity (as larder-sim --shards splits it, docs/shards.md). */
static inline uint64_t larder__maint_policy_share(const struct larder__maint *m, uint64_t capacity)
{
	unsigned k = m->shards;
	return capacity / k + (m->shard_index < capacity % k);
}

/* The policy host's charge of e: its slot's bytes (ctx unused). */
static inline size_t larder__maint_entry_charge(void *ctx, const struct larder__entry *e)
{
	(void)ctx;
	return larder__slab_charge(larder__entry_size(e));
}

/* ---- maint/apply.c ---------------------------------------------------------- */

/* The policy host's hash of e (ctx: the cache). */
uint64_t larder__maint_entry_hash(void *ctx, const struct larder__entry *e);
/* Calls the removal listener (which may take as long as it likes). */
void larder__maint_call_listener(struct larder__maint *m, struct larder__entry *e,
				 enum larder_cause cause);
/* MAINT-M3: the one way out of the live totals and the policy, onto *list
 * (counting its charge into *list_bytes). notify = 0 for a touch's
 * superseded copy. */
void larder__maint_retire_onto(struct larder__maint *m, struct larder__entry *e,
			       enum larder_cause cause, int notify, struct larder__entry **list,
			       uint64_t *list_bytes);
/* The same onto the collect list (freed after a grace period). */
void larder__maint_retire(struct larder__maint *m, struct larder__entry *e, enum larder_cause cause,
			  int notify);
/* larder__maint_retire(), notified, of an entry the maintainer itself took
 * out of the index (a victim, an expiry: maint/evict.c), its charge also
 * counted in removed (larder_flush) from the same sizes. */
void larder__maint_retire_unlinked(struct larder__maint *m, struct larder__entry *e,
				   enum larder_cause cause);
/* The shard's handles' list head (A-HANDLES). */
struct larder__handle *larder__maint_handles(struct larder__shard *s);
/* Drains every ring; returns the events applied, and in *hits the samples seen. */
uint64_t larder__maint_drain_all(struct larder__maint *m, uint64_t *hits);
/* True when no ring of the shard has an event waiting (a hint whether to
 * sleep). The shard's maintainer's call: it alone frees an exited thread's
 * rings, so another thread may walk them only while no thread that wrote
 * can exit (stress_busy's seam). */
int larder__maint_rings_empty(struct larder__shard *s);
/* Sets m->classes (at create). */
void larder__maint_classes_init(struct larder__maint *m);
/* Frees the list e (bytes charged in all) and counts the bytes freed. */
void larder__maint_free_entries(struct larder__maint *m, struct larder__entry *e, uint64_t bytes);
/* Counts bytes freed and gives them back to the writers' budget. */
void larder__maint_count_freed(struct larder__maint *m, uint64_t bytes);
/* Dismantles the handles of exited threads; returns how many. */
int larder__maint_reap_orphans(struct larder__maint *m);
/* Frees h's spill chunks; every event in them was applied. */
void larder__maint_spill_free(struct larder__handle *h);

/* ---- maint/evict.c ---------------------------------------------------------- */

/* Evicts while live bytes + what writers want exceed the capacity; returns how many. */
uint64_t larder__maint_evict(struct larder__maint *m);
/* Advances the timing wheel: expires what is due, stages cascades. */
uint64_t larder__maint_expire(struct larder__maint *m);
/* (Re)schedules a counted entry with a deadline at its current deadline. */
void larder__maint_wheel_track(struct larder__maint *m, struct larder__entry *e);
/* The wheel's deadline callback (ttl/wheel.h). */
uint64_t larder__maint_wheel_deadline(void *ctx, struct larder__wheel_link *link);

/* ---- maint/resize.c --------------------------------------------------------- */

/* Grows or shrinks the index a chunk of homes per pass; returns the work. */
int larder__maint_resize(struct larder__maint *m);
/* Moves up to homes homes of t into its next table; true when t is done. */
int larder__maint_migrate(struct larder__maint *m, struct larder__table *t, size_t homes);
/* Frees the tables resized out of whose grace period has ended. */
void larder__maint_free_tables(struct larder__maint *m);

/* ---- maint/clear.c ---------------------------------------------------------- */

/* EV_CLEAR: t joins the cleared tables (its grace period starts); cleared_ms
 * is the cache clock at the clear, 0 when no entry had a deadline. */
void larder__maint_clear_add(struct larder__maint *m, struct larder__table *t, uint64_t cleared_ms);
/* One pass's share of the walk of the oldest cleared table; ready: its grace
 * period had ended before this pass drained the rings. Returns the work done. */
uint64_t larder__maint_clear_walk(struct larder__maint *m, int ready);
/* Close: frees the entries of cleared tables and of the walk's arrays that
 * have mappings of their own (free_large; the slab frees the rest whole),
 * and every cleared table. */
void larder__maint_clear_destroy(struct larder__maint *m,
				 void (*free_large)(void *ctx, struct larder__entry *e));

/* ---- maint/maintainer.c ----------------------------------------------------- */

/* Bumps the writers' wait word (core/cache.h, room_seq) and wakes them, if
 * any sleeps (WAKE-W3: one futex wake per arming, maint/maintainer.c).
 * Returns 1 when it made the futex wake (tests/stress/stress_room.c counts
 * them), else 0. */
int larder__maint_wake_writers(struct larder *c);

#endif /* LARDER_MAINT_STATE_H */
