/*
 * ttl/wheel.h - a hierarchical timing wheel with a min-heap for the far future.
 *
 * Owned by one thread (the maintainer); nothing here is atomic or locked.
 * Timers are intrusive: each carries a struct larder__wheel_link (16 bytes),
 * which the wheel alone reads and writes while the timer is scheduled.
 * The algorithm and its invariants are in ttl/wheel.c.
 *
 * Time is counted in ticks (the cache clock's milliseconds: 1 tick = 1 ms).
 * The wheel never reads a clock: the caller passes `now` to advance().
 */
#ifndef LARDER_TTL_WHEEL_H
#define LARDER_TTL_WHEEL_H

#include <stddef.h>
#include <stdint.h>

#define LARDER__WHEEL_BITS 6u
#define LARDER__WHEEL_SLOTS (1u << LARDER__WHEEL_BITS) /* 64: one bitmap word */
#define LARDER__WHEEL_LEVELS 6u                        /* 64^6 = 2^36 ticks, ~2.2 years */
#define LARDER__WHEEL_SPAN_BITS (LARDER__WHEEL_BITS * LARDER__WHEEL_LEVELS)

/*
 * The per-timer link. In a wheel slot (or the wheel's due/far lists) it is an
 * hlist node: next, and pprev = the address of the pointer that points at it.
 * In the heap, heap_index is its position and pprev is the wheel's heap
 * marker. pprev == NULL means "not scheduled" (a zeroed link is unscheduled).
 */
struct larder__wheel_link {
	union {
		struct larder__wheel_link *next; /* in a list */
		size_t heap_index;               /* in the heap */
	};
	struct larder__wheel_link **pprev;
};

/* The timer's current deadline in ticks; called during advance() to place a
 * timer again when its level cascades or it leaves the heap. */
typedef uint64_t larder__wheel_deadline_fn(void *ctx, struct larder__wheel_link *link);
/* A timer came due: it is already unscheduled and may be scheduled again. */
typedef void larder__wheel_expire_fn(void *ctx, struct larder__wheel_link *link);

struct larder__wheel_heap_item {
	uint64_t deadline; /* a copy: the heap's order never changes under it */
	struct larder__wheel_link *link;
};

struct larder__wheel {
	uint64_t cur;   /* the next tick not yet processed (W1 in wheel.c) */
	uint64_t count; /* scheduled timers, all places together */
	uint64_t occupied[LARDER__WHEEL_LEVELS];
	struct larder__wheel_link *slot[LARDER__WHEEL_LEVELS][LARDER__WHEEL_SLOTS];
	struct larder__wheel_link *due; /* detached from a level-0 slot, being delivered */
	struct larder__wheel_link *far; /* beyond the span when the heap could not grow */
	struct larder__wheel_heap_item *heap;
	size_t heap_len, heap_cap;
	struct larder__wheel_link *heap_marker; /* its address marks "in the heap" */
	larder__wheel_deadline_fn *deadline;
	void *ctx;
};

/* Sets up an empty wheel whose time starts at `now`. Never allocates. */
void larder__wheel_init(struct larder__wheel *w, uint64_t now, larder__wheel_deadline_fn *fn,
			void *ctx);
/* Frees the heap; the timers themselves belong to the caller. */
void larder__wheel_destroy(struct larder__wheel *w);

/*
 * Schedules an unscheduled timer for `deadline` (a deadline already passed
 * comes due at the next advance). O(1) within the span, O(log n) in the heap.
 * May allocate (heap growth); if that fails the timer waits on an unsorted
 * list that is re-placed once per span, so scheduling never fails.
 */
void larder__wheel_schedule(struct larder__wheel *w, struct larder__wheel_link *link,
			    uint64_t deadline);
/* Unschedules link; a no-op when it is not scheduled. O(1) (heap: O(log n)). */
void larder__wheel_cancel(struct larder__wheel *w, struct larder__wheel_link *link);
/* cancel + schedule. */
void larder__wheel_reschedule(struct larder__wheel *w, struct larder__wheel_link *link,
			      uint64_t deadline);

static inline int larder__wheel_scheduled(const struct larder__wheel_link *link)
{
	return link->pprev != NULL;
}

/*
 * Processes every tick up to and including now: cascades higher levels,
 * moves heap timers into the wheel as their span comes, and calls
 * expire(ctx, link) for each timer whose slot came due (the slot's tick is
 * <= now). Skips empty slots with the bitmaps: cost is O(levels) per
 * occupied slot, never per elapsed tick. Stops early, between ticks, once
 * `max` timers were delivered. Returns the number delivered; when it equals
 * max, more may be due (call again).
 */
uint64_t larder__wheel_advance(struct larder__wheel *w, uint64_t now, uint64_t max,
			       larder__wheel_expire_fn *expire, void *ctx);

/*
 * The first tick at which advance() has something to do (a slot to deliver
 * or cascade, a heap timer to move in), or UINT64_MAX when the wheel is empty.
 * The first timer is due no earlier than this. O(levels).
 */
uint64_t larder__wheel_next(const struct larder__wheel *w);

#endif /* LARDER_TTL_WHEEL_H */
