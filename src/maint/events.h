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
 *   spill   the events ring's overflow: a chain of chunks (an unbounded
 *           SPSC queue, capped): the owner appends, the maintainer reads
 *           and frees the chunks the owner has moved past. Room in it is
 *           reserved before the index changes, like room in the ring. A
 *           writer whose ring is full spills rather than wait for a
 *           maintainer that was woken but has no CPU yet (on a busy
 *           machine that takes ~100 us, while a writer fills 512 slots in
 *           less); it waits only when LARDER__SPILL_WRITER_MAX events are
 *           unread, so the maintainer is never unboundedly behind. A
 *           maintainer thread (a removal listener's writes, into any cache)
 *           must never wait: it spills up to LARDER__SPILL_MAX and then
 *           fails (maint/handle.h gives both bounds and their reasons).
 *
 * The handle itself, the event record and the spill chunk are in
 * maint/handle.h.
 *
 * Invariants:
 *   EV-V1. ev_head and hit_head are written only by the owner thread (R-EV,
 *       R-HIT: release), ev_tail and hit_tail only by the maintainer (R-EVT).
 *   EV-V2. 0 <= ev_head - ev_tail <= LARDER__EVENT_RING at all times.
 *   EV-V3. An event is posted inside the read section in which its index change
 *       was made.
 *   EV-V4. An event goes to the spill only when the ring was full at the
 *       owner's reservation. Every event carries the owner's posting number
 *       (seq = ring head + spilled count at posting), and the maintainer
 *       applies the ring's and the spill's events merged in that order, so
 *       spilling never reorders one thread's events. It reads the spill's
 *       count (A-SPILL) before the ring's head (A-EV): every ring event
 *       posted before a spilled event it sees is then seen too. A ring
 *       event it sees may follow spilled events it has not seen yet (the
 *       owner spilled them after A-SPILL, and the ring had room again
 *       after them); the last ring event's seq less its ring position
 *       counts the spilled events posted before it, and the maintainer
 *       takes that many when it is more than it read: their R-SPILL came
 *       before that ring event's R-EV, which A-EV acquired. So what one
 *       drain applies is always a prefix of the owner's posts. It reads
 *       the whole spill in every pass that drains the ring, so EV-V3's
 *       grace-period argument covers both.
 *   EV-V5. A spill chunk is freed by the maintainer only once it has read all
 *       of it and the owner has linked its successor, so the owner never
 *       touches a freed chunk. Chunk links and the first chunk are
 *       published by the spill count's R-SPILL that follows them.
 *   EV-V6. Unread spilled events (spilled - spill_taken) are at most
 *       LARDER__SPILL_WRITER_MAX for a writer that may wait, at most
 *       LARDER__SPILL_MAX for a maintainer thread: room in the spill is
 *       refused at the bound.
 *   EV-V7. A bulk writer (larder__put_batch in core/cache.c) gathers the
 *       events of up to LARDER__BATCH_EVENTS writes in a heap block and
 *       posts it as one LARDER__EV_BATCH, whose block the maintainer
 *       applies in order and frees. EV-V3 holds for every event in it: the
 *       writes and the post happen inside one read section, so no entry
 *       the block names can be freed before the maintainer reads it. Room:
 *       each write reserves a slot as usual and posts nothing, so the last
 *       reservation is still free for the block.
 */
#ifndef LARDER_MAINT_EVENTS_H
#define LARDER_MAINT_EVENTS_H

#include <stdint.h>

#include "core/alloc.h"
#include "core/entry.h"
#include "maint/handle.h"
#include "sync/atomic.h"

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

/* Owner: more than half of the ring is unread. The tail seen last is
 * refreshed first when it says so: a stale one would keep saying so for
 * half a ring of posts, each waking a maintainer that need not wake. */
static inline int larder__events_half_full(struct larder__handle *h)
{
	uint64_t head = atomic_load_explicit(&h->ev_head, LARDER__RELAXED); /* own variable */
	if (head - h->ev_tail_seen < LARDER__EVENT_RING / 2)
		return 0;
	/* A-EVT: acquire, pairs with R-EVT, as in larder__events_has_room. */
	h->ev_tail_seen = atomic_load_explicit(&h->ev_tail, LARDER__ACQUIRE);
	return head - h->ev_tail_seen >= LARDER__EVENT_RING / 2;
}

/* Owner, after a post, with the maintainer asleep in a batching window or a
 * lazy sleep: whether its unread events call for a pass now. A half-full
 * ring does, unless the latest event is an overwrite: overwrites wait for
 * LARDER__WAKE_EVENTS unread, ring and spill together (maint/handle.h says
 * why). An overwrite that finds fewer unread notes in wake_recheck the
 * posting number before which no overwrite can find enough (unread only
 * falls as the maintainer reads), which larder__maint_wake() tests inline
 * (maint/maintainer.h): a writer may post thousands while it sleeps. */
static inline int larder__events_wake_due(struct larder__handle *h)
{
	if (!h->last_overwrite)
		return larder__events_half_full(h);
	/* Relaxed: own variables, and a count the maintainer writes (as in
	 * larder__events_spill_room). A stale ev_tail_seen only says more. */
	uint64_t posted = atomic_load_explicit(&h->ev_head, LARDER__RELAXED) +
			  atomic_load_explicit(&h->spilled, LARDER__RELAXED);
	uint64_t unread =
		posted - h->ev_tail_seen - atomic_load_explicit(&h->spill_taken, LARDER__RELAXED);
	if (unread >= LARDER__WAKE_EVENTS) {
		/* A-EVT: acquire, pairs with R-EVT, as in larder__events_has_room. */
		h->ev_tail_seen = atomic_load_explicit(&h->ev_tail, LARDER__ACQUIRE);
		unread = posted - h->ev_tail_seen -
			 atomic_load_explicit(&h->spill_taken, LARDER__RELAXED);
		if (unread >= LARDER__WAKE_EVENTS)
			return 1;
	}
	h->wake_recheck = posted + LARDER__WAKE_EVENTS - unread;
	return 0;
}

/*
 * Owner, whose ring is full: makes room for one event in the spill, where
 * fewer than `bound` events are unread (EV-V6). Returns 0, -1 when a chunk
 * cannot be allocated, or -2 at the bound (the maintainer is that far
 * behind). On 0 it also sets spill_free, the spills that
 * larder__events_spill_ready() then allows without coming here: the
 * chunk's free places, and no more than the bound less the unread events
 * counted now. The maintainer only takes events, so until spill_free runs
 * out each spill still finds fewer than `bound` unread and a free place.
 */
static inline int larder__events_spill_room(struct larder__handle *h, uint64_t bound)
{
	/* Relaxed: counts; the events themselves are ordered by R-SPILL. */
	uint64_t unread = atomic_load_explicit(&h->spilled, LARDER__RELAXED) -
			  atomic_load_explicit(&h->spill_taken, LARDER__RELAXED);
	if (unread >= bound)
		return -2;
	struct larder__spill *t = h->spill_tail;
	if (!t || h->spill_at == t->ev + LARDER__SPILL_CHUNK) {
		struct larder__spill *n = larder__malloc(sizeof(*n));
		if (!n)
			return -1;
		atomic_init(&n->next, 0);
		/* Relaxed (EV-V5): the maintainer follows a link only to read an
		 * event that R-SPILL published after it. */
		if (t)
			atomic_store_explicit(&t->next, (uintptr_t)n, LARDER__RELAXED);
		else
			atomic_store_explicit(&h->spill_first, (uintptr_t)n, LARDER__RELAXED);
		h->spill_tail = t = n;
		h->spill_at = n->ev;
	}
	uint64_t places = (uint64_t)(t->ev + LARDER__SPILL_CHUNK - h->spill_at);
	h->spill_free = (uint16_t)(places < bound - unread ? places : bound - unread);
	return 0;
}

/* Owner, whose ring is full: whether one more event may be spilled without
 * larder__events_spill_room(), which allowed spill_free more when it last
 * ran (with the bound of the thread's kind, EV-V6): one test, where the
 * unread count, the chunk and its fill took three (6 Ir per spilled put,
 * docs/bench.md). */
static inline int larder__events_spill_ready(const struct larder__handle *h)
{
	return h->spill_free != 0;
}

/* Owner: posts an event; room was checked with larder__events_has_room(),
 * or, where that failed, reserved by larder__events_spill_room(). sclass:
 * b's size class or LARDER__EV_NO_CLASS (maint/handle.h). */
static inline void larder__events_post(struct larder__handle *h, enum larder__event_kind kind,
				       uint32_t cause, unsigned sclass, void *a, void *b,
				       uint64_t hash)
{
	uint64_t head = atomic_load_explicit(&h->ev_head, LARDER__RELAXED);    /* own variable */
	uint64_t spilled = atomic_load_explicit(&h->spilled, LARDER__RELAXED); /* own variable */
	struct larder__event e = { (uint8_t)kind, (uint8_t)cause, (uint8_t)sclass,
				   (uint32_t)(head + spilled), a, b, hash };
	h->last_overwrite = kind == LARDER__EV_REPLACE; /* larder__events_wake_due */
	if (__builtin_expect(head - h->ev_tail_seen >= LARDER__EVENT_RING, 0)) {
		/* EV-V4: the ring was full when room was reserved. */
		*h->spill_at++ = e;
		h->spill_free--; /* larder__events_spill_room() allowed it */
		/* R-SPILL: release; the event, and the chunk links before it,
		 * before the maintainer's A-SPILL. */
		atomic_store_explicit(&h->spilled, spilled + 1, LARDER__RELEASE);
		return;
	}
	h->ev[head % LARDER__EVENT_RING] = e;
	/* R-EV: release; the event's fields before the maintainer's A-EV. */
	atomic_store_explicit(&h->ev_head, head + 1, LARDER__RELEASE);
}

/* Reader: samples a hit for the policy. */
static inline void larder__events_hit(struct larder__handle *h, struct larder__entry *e)
{
	uint64_t pos = atomic_load_explicit(&h->hit_head, LARDER__RELAXED); /* own variable */
	/* Indexed from a pointer to the ring, not as &h->hit[i]: gcc 12 then
	 * folds the ring's offset into the store's address (an add less). */
	larder__atomic_uptr *ring = h->hit;
	/* R-HIT: release, so the maintainer that loads e (A-HIT) also sees
	 * the entry's initialisation, which we acquired from the index. */
	atomic_store_explicit(ring + (pos % LARDER__HIT_RING), (uintptr_t)e, LARDER__RELEASE);
	atomic_store_explicit(&h->hit_head, pos + 1, LARDER__RELEASE);
}

#endif /* LARDER_MAINT_EVENTS_H */
