/*
 * maint/events.h - the channel from caller threads to the maintainer.
 *
 * Each (thread, cache) pair has one handle. The handle carries two rings from
 * its thread to the cache's maintainer:
 *
 *   events  bounded SPSC ring of inserts, replacements, removals, clears
 *           and touches that moved a deadline earlier.
 *           Lossless: a writer reserves room before it changes the index
 *           (larder__events_has_room, via reserve_room in core/cache.c) and
 *           posts after, inside its read section, so every event about memory in a table is visible to the
 *           maintainer once a grace period has passed (the maintainer drains
 *           all rings after each grace period, before freeing).
 *   hits    lossy ring of entry pointers that readers hit: the policy's
 *           access signal. A reader overwrites old samples rather than wait;
 *           it never writes a shared cache line.
 *
 * The handle also holds the thread's allocation cursor, its byte credit and
 * its statistics, each on cache lines of their own so that the maintainer's
 * reads do not bounce the writer's lines.
 *
 * Invariants:
 *   V1. ev_head and hit_head are written only by the owner thread (R-EV,
 *       R-HIT: release), ev_tail and hit_tail only by the maintainer (R-EVT).
 *   V2. 0 <= ev_head - ev_tail <= LARDER__EVENT_RING at all times.
 *   V3. An event is posted inside the read section in which its index change
 *       was made.
 */
#ifndef LARDER_MAINT_EVENTS_H
#define LARDER_MAINT_EVENTS_H

#include <stdint.h>

#include "core/entry.h"
#include "mem/slab.h"
#include "sync/atomic.h"

#define LARDER__EVENT_RING 512u
/* A reader at 5 M hits/s fills 1,024 samples in about one maintainer batching
 * window (200 us); the maintainer polls more often than that while hits flow.
 * tools/larder-sim --hit-ring measures what smaller rings cost in hit ratio. */
#define LARDER__HIT_RING 1024u

enum larder__event_kind {
	LARDER__EV_INSERT,   /* b published where the key was absent */
	LARDER__EV_REPLACE,  /* b replaced a (cause: REPLACED or EXPIRED) */
	LARDER__EV_RELOCATE, /* b is a copy of a with a new deadline (touch); no listener */
	LARDER__EV_REMOVE,   /* a unlinked (cause: EXPLICIT or EXPIRED) */
	LARDER__EV_CLEAR,    /* a is the table that larder_clear() swapped out */
	LARDER__EV_TOUCH,    /* a's deadline moved earlier in place (larder_touch) */
};

struct larder__event {
	uint32_t kind;
	uint32_t cause;
	void *a;
	void *b;
	uint64_t hash; /* of the key of b (or a when b is NULL) */
};

struct larder__handle {
	/* Owner thread's line: written per operation, read by the maintainer. */
	larder__atomic_u64 ev_head;  /* R-EV */
	larder__atomic_u64 hit_head; /* R-HIT; every hit is sampled, so also the hit count */
	uint64_t ev_tail_seen;      /* owner only: last ev_tail read */
	int64_t credit;             /* owner only: budget bytes reserved */
	/* Statistics: owner writes (relaxed load+store, one writer), anyone sums. */
	larder__atomic_u64 misses, writes, alloc_bytes, write_waits, write_busy, maint_waits;

	/* Maintainer's line. */
	larder__atomic_u64 ev_tail __attribute__((aligned(64))); /* R-EVT */
	uint64_t hit_tail;                                      /* maintainer only */
	larder__atomic_int orphaned; /* set once when the thread exits (R-ORPHAN) */
	struct larder__handle *next; /* the cache's list: pushed by CAS, unlinked by the maintainer */

	struct larder__slab_cursor cursor __attribute__((aligned(64))); /* owner only */
	struct larder__event ev[LARDER__EVENT_RING];
	larder__atomic_uptr hit[LARDER__HIT_RING] __attribute__((aligned(64)));
};

static inline uint64_t larder__stat_bump(larder__atomic_u64 *counter, uint64_t by)
{
	/* Relaxed load+store, no RMW: the owner is the only writer, and a
	 * statistic orders nothing. */
	uint64_t v = atomic_load_explicit(counter, LARDER__RELAXED) + by;
	atomic_store_explicit(counter, v, LARDER__RELAXED);
	return v;
}

/* Owner: true when one more event fits. */
static inline int larder__events_has_room(struct larder__handle *h)
{
	uint64_t head = atomic_load_explicit(&h->ev_head, LARDER__RELAXED); /* own variable */
	if (head - h->ev_tail_seen < LARDER__EVENT_RING)
		return 1;
	/* A-EVT: acquire, pairs with R-EVT: the maintainer is done with the
	 * slots it released. */
	h->ev_tail_seen = atomic_load_explicit(&h->ev_tail, LARDER__ACQUIRE);
	return head - h->ev_tail_seen < LARDER__EVENT_RING;
}

/* Owner: more than half of the ring is (or may still be) unread. */
static inline int larder__events_half_full(const struct larder__handle *h)
{
	uint64_t head = atomic_load_explicit(&h->ev_head, LARDER__RELAXED); /* own variable */
	return head - h->ev_tail_seen >= LARDER__EVENT_RING / 2;
}

/* Owner: posts an event; room was checked with larder__events_has_room(). */
static inline void larder__events_post(struct larder__handle *h, enum larder__event_kind kind,
				       uint32_t cause, void *a, void *b, uint64_t hash)
{
	uint64_t head = atomic_load_explicit(&h->ev_head, LARDER__RELAXED); /* own variable */
	struct larder__event *ev = &h->ev[head % LARDER__EVENT_RING];
	ev->kind = (uint32_t)kind;
	ev->cause = cause;
	ev->a = a;
	ev->b = b;
	ev->hash = hash;
	/* R-EV: release; the event's fields before the maintainer's A-EV. */
	atomic_store_explicit(&h->ev_head, head + 1, LARDER__RELEASE);
}

/* Reader: samples a hit for the policy. */
static inline void larder__events_hit(struct larder__handle *h, struct larder__entry *e)
{
	uint64_t pos = atomic_load_explicit(&h->hit_head, LARDER__RELAXED); /* own variable */
	/* R-HIT: release, so the maintainer that loads e (A-HIT) also sees
	 * the entry's initialisation, which we acquired from the index. */
	atomic_store_explicit(&h->hit[pos % LARDER__HIT_RING], (uintptr_t)e, LARDER__RELEASE);
	atomic_store_explicit(&h->hit_head, pos + 1, LARDER__RELEASE);
}

#endif /* LARDER_MAINT_EVENTS_H */
