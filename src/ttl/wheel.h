/*
 * ttl/wheel.h - a hierarchical timing wheel with a min-heap for the far future.
 *
 * Owned by one thread (the maintainer); nothing here is atomic or locked.
 * Timers are intrusive: each carries a struct larder__wheel_link (8 bytes),
 * which the wheel alone reads and writes while the timer is scheduled.
 * Links name timers by 32-bit ids (mem/pagedir.h): a timer is the slot its
 * id names, its link at a fixed offset in the slot (core/entry.h: after the
 * header and the deadline). The algorithm and its invariants are in
 * ttl/wheel.c.
 *
 * Time is counted in ticks (the cache clock's milliseconds: 1 tick = 1 ms).
 * The wheel never reads a clock: the caller passes `now` to advance().
 */
#ifndef LARDER_TTL_WHEEL_H
#define LARDER_TTL_WHEEL_H

#include <stddef.h>
#include <stdint.h>

#include "mem/pagedir.h"

#define LARDER__WHEEL_BITS 6u
#define LARDER__WHEEL_SLOTS (1u << LARDER__WHEEL_BITS) /* 64: one bitmap word */
#define LARDER__WHEEL_LEVELS 6u                        /* 64^6 = 2^36 ticks, ~2.2 years */
#define LARDER__WHEEL_SPAN_BITS (LARDER__WHEEL_BITS * LARDER__WHEEL_LEVELS)

/*
 * Rows of 64 slots: the live wheel has one per level (64^l ticks a slot at
 * level l); "bank" M (1..LEVELS-1) stages the next level-M slot ahead of its
 * cascade in rows of its own for levels 0..M-1 (wheel.c, WHEEL-W2b). 6 + 15 rows.
 */
#define LARDER__WHEEL_ROWS (LARDER__WHEEL_LEVELS * (LARDER__WHEEL_LEVELS + 1) / 2)
/* The wheel's lists: the slots, row by row, then `due` and `far`. */
#define LARDER__WHEEL_LIST_DUE (LARDER__WHEEL_ROWS * LARDER__WHEEL_SLOTS)
#define LARDER__WHEEL_LIST_FAR (LARDER__WHEEL_LIST_DUE + 1)
#define LARDER__WHEEL_LISTS (LARDER__WHEEL_LIST_FAR + 1)
/* prev values that are not ids (pagedir PAGEDIR-D1: ids stay below the limit). */
#define LARDER__WHEEL_TAG(list) (LARDER__PAGEDIR_ID_LIMIT + (uint32_t)(list))
#define LARDER__WHEEL_TAG_HEAP LARDER__WHEEL_TAG(LARDER__WHEEL_LISTS)

/*
 * The per-timer link. In a list (a slot, `due` or `far`) it is a doubly
 * linked node: next is the next timer's id (0 at the end), prev the previous
 * one's, or the list's tag when it is the first. In the heap, prev is
 * LARDER__WHEEL_TAG_HEAP and next its position. prev == 0 means "not
 * scheduled" (a zeroed link is unscheduled).
 */
struct larder__wheel_link {
	uint32_t next; /* in a list; the heap index in the heap */
	uint32_t prev;
};

/* The timer's current deadline in ticks; called during advance() to place a
 * timer again when its level cascades or it leaves the heap. */
typedef uint64_t larder__wheel_deadline_fn(void *ctx, struct larder__wheel_link *link);
/* A timer (link, whose id is id) came due: it is already unscheduled and
 * may be scheduled again. */
typedef void larder__wheel_expire_fn(void *ctx, struct larder__wheel_link *link, uint32_t id);

struct larder__wheel_heap_item {
	uint64_t deadline; /* a copy: the heap's order never changes under it */
	uint32_t id;
};

struct larder__wheel {
	uint64_t cur;   /* the next tick not yet processed (WHEEL-W1 in wheel.c) */
	uint64_t count; /* scheduled timers, all places together */
	/* A bit per slot, by physical row. */
	uint64_t occupied[LARDER__WHEEL_ROWS];
	/* The physical row of level l: row[0][l] in the live wheel, row[M][l]
	 * (l < M) in bank M. A cascade swaps live rows with a bank's (O(1)). */
	uint8_t row[LARDER__WHEEL_LEVELS][LARDER__WHEEL_LEVELS];
	/* First ids: slot s of physical row r is list[r * SLOTS + s]; then due
	 * (timers detached from a level-0 slot, being delivered) and far (beyond
	 * the span when the heap could not grow). */
	uint32_t list[LARDER__WHEEL_LISTS];
	struct larder__wheel_heap_item *heap;
	size_t heap_len, heap_cap;
	const struct larder__pagedir *dir; /* the timers' ids */
	size_t link_offset;                /* of the link in a timer's slot */
	larder__wheel_deadline_fn *deadline;
	void *ctx;
};

/* Sets up an empty wheel whose time starts at `now`, for timers whose ids dir
 * translates, each with its link link_offset bytes into its slot. Never
 * allocates. */
void larder__wheel_init(struct larder__wheel *w, uint64_t now, const struct larder__pagedir *dir,
			size_t link_offset, larder__wheel_deadline_fn *fn, void *ctx);
/* Frees the heap; the timers themselves belong to the caller. */
void larder__wheel_destroy(struct larder__wheel *w);

/*
 * Schedules an unscheduled timer (link, whose id is id) for `deadline` (a
 * deadline already passed comes due at the next advance). O(1) within the
 * span, O(log n) in the heap. May allocate (heap growth); if that fails the
 * timer waits on an unsorted list that is re-placed once per span, so
 * scheduling never fails.
 */
void larder__wheel_schedule(struct larder__wheel *w, struct larder__wheel_link *link, uint32_t id,
			    uint64_t deadline);
/* Unschedules link; a no-op when it is not scheduled. O(1) (heap: O(log n)). */
void larder__wheel_cancel(struct larder__wheel *w, struct larder__wheel_link *link);
/* cancel + schedule. */
void larder__wheel_reschedule(struct larder__wheel *w, struct larder__wheel_link *link,
			      uint32_t id, uint64_t deadline);

static inline int larder__wheel_scheduled(const struct larder__wheel_link *link)
{
	return link->prev != 0;
}

/*
 * Processes every tick up to and including now: swaps in the staged rows
 * of each level-l slot whose first tick came (and cascades what prepare()
 * had not staged yet), moves heap timers into the wheel as their span
 * comes, and calls expire(ctx, link, id) for each timer whose slot came due
 * (the slot's tick is <= now). Skips empty slots with the bitmaps: cost is
 * O(levels) per occupied slot, never per elapsed tick, plus the cascades
 * prepare() did not do in time. Stops early, between ticks, once `max`
 * timers were delivered. Returns the number delivered; when it equals max,
 * more may be due (call again).
 */
uint64_t larder__wheel_advance(struct larder__wheel *w, uint64_t now, uint64_t max,
			       larder__wheel_expire_fn *expire, void *ctx);

/*
 * Cascades ahead of time: moves up to `max` timers out of the next slot of
 * each level (lowest level first: its cascade comes soonest) into that
 * level's bank, so that advance() finds the work done when time reaches the
 * slot. Returns the number moved; 0 means nothing is left to stage until
 * time enters a new slot of some level. Never allocates; O(levels) when
 * there is nothing to move. Calls the deadline callback once per timer.
 */
uint64_t larder__wheel_prepare(struct larder__wheel *w, uint64_t max);

/*
 * The first tick at which advance() has something to do (a slot to deliver
 * or cascade, a staged bank to swap in, a heap timer to move in), or
 * UINT64_MAX when the wheel is empty. The first timer is due no earlier than
 * this. O(levels^2) bitmap words.
 */
uint64_t larder__wheel_next(const struct larder__wheel *w);

#endif /* LARDER_TTL_WHEEL_H */
