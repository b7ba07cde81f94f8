/*
 * ttl/wheel.c - hierarchical timing wheel (6 levels x 64 slots) + min-heap.
 *
 * Algorithm: Varghese & Lauck, "Hashed and Hierarchical Timing Wheels"
 * (SOSP 1987), scheme 7, in the absolute-time form of the Linux kernel's
 * timer wheel (kernel/time/timer.c) and W. Ahern's timeout.c: a timer's
 * level is the group of 6 bits in which its deadline first differs from
 * the wheel's current tick, its slot is its deadline's 6 bits in that group.
 * Level l slots are 64^l ticks wide; a timer is re-placed ("cascades") when
 * the wheel's time reaches the start of its slot, and so reaches level 0,
 * where each slot is one tick, at most LEVELS times in its life. Unlike the
 * kernel's wheel (which rounds far timers to their slot's granularity), each
 * timer is delivered at its exact tick: cascading costs at most 6 moves per
 * timer, and the TTL contract wants deadlines to the millisecond.
 *
 * Each level keeps a 64-bit occupancy bitmap, so finding the next thing to
 * do is one count-trailing-zeros per level: an idle wheel costs nothing and
 * advance() jumps over any stretch of empty slots, however long the clock
 * jumped. Deadlines that differ from the current tick above bit 36 (the
 * span, 2^36 ms = 2.2 years) wait in a binary min-heap keyed by a copy of
 * their deadline and enter the wheel when time reaches the start of their
 * 2^36-tick block.
 *
 * Lists are intrusive hlists (Linux's hlist: next + pprev), so unlinking is
 * O(1) without knowing the list; a link whose pprev points into slot[][] is
 * a slot's first element, which tells cancel() which bitmap bit may clear.
 *
 * Invariants (tests/unit/test_wheel.c checks them against a reference model):
 *   W1. cur is the first tick not yet processed: every timer placed at
 *       deadline d < cur was delivered, or waits on `due` (scheduled at a
 *       deadline already behind cur) for the next advance, whatever its now.
 *   W2. A timer in slot[l][s] was placed at d with d >> 6(l+1) equal to
 *       cur >> 6(l+1) and (d >> 6l) & 63 == s; for l > 0, s is above cur's
 *       level-l digit, or equal to it only while cur is the slot's first tick
 *       (it cascades then). Hence no occupied slot lies behind cur.
 *   W3. Bit s of occupied[l] is set iff slot[l][s] is non-empty.
 *   W4. Heap items were placed with a deadline in a later 2^36 block than
 *       cur's; they form a binary min-heap on their copied deadline, and
 *       each link's heap_index is its position.
 *   W5. A timer is in exactly one of: a slot, the heap, `due`, `far`, or
 *       nowhere (pprev NULL); count is the number scheduled.
 *   W6. advance(now) delivers every timer whose placed deadline is <= now
 *       (unless it stops at `max`), each at its exact tick, in tick order.
 *       Where the caller moved a deadline without rescheduling, cascades and
 *       heap moves read the current deadline (deadline callback), and the
 *       expire callback decides: a later deadline is simply scheduled again.
 *
 * Not guaranteed: order among timers of the same tick; fairness of `max`
 * (it is checked between ticks, so one tick's slot is delivered whole, and
 * a cascade moves a whole slot at once: a level-l slot holds the timers of
 * 64^l ticks, which makes a burst of work when it comes due; docs/ttl.md).
 */
#include "ttl/wheel.h"

#include <stdlib.h>

#define SPAN_MASK (((uint64_t)1 << LARDER__WHEEL_SPAN_BITS) - 1)

/* ---- Lists ------------------------------------------------------------------- */

static void list_push(struct larder__wheel_link **head, struct larder__wheel_link *n)
{
	n->next = *head;
	if (n->next)
		n->next->pprev = &n->next;
	*head = n;
	n->pprev = head;
}

static int in_slots(const struct larder__wheel *w, struct larder__wheel_link **p)
{
	uintptr_t a = (uintptr_t)p, lo = (uintptr_t)&w->slot[0][0];
	return a >= lo && a < lo + sizeof(w->slot);
}

static void list_unlink(struct larder__wheel *w, struct larder__wheel_link *n)
{
	struct larder__wheel_link **pprev = n->pprev;
	*pprev = n->next;
	if (n->next)
		n->next->pprev = pprev;
	if (!*pprev && in_slots(w, pprev)) { /* W3: the slot became empty */
		size_t i = (size_t)(pprev - &w->slot[0][0]);
		w->occupied[i / LARDER__WHEEL_SLOTS] &= ~((uint64_t)1 << (i % LARDER__WHEEL_SLOTS));
	}
}

/* Moves slot[l][s] (non-empty) onto *to, which must be empty; clears its bit. */
static void slot_take(struct larder__wheel *w, unsigned l, unsigned s,
		      struct larder__wheel_link **to)
{
	*to = w->slot[l][s];
	(*to)->pprev = to;
	w->slot[l][s] = NULL;
	w->occupied[l] &= ~((uint64_t)1 << s);
}

/* ---- Heap (W4) ------------------------------------------------------------------ */

static void heap_set(struct larder__wheel *w, size_t i, struct larder__wheel_heap_item it)
{
	w->heap[i] = it;
	it.link->heap_index = i;
}

static void heap_up(struct larder__wheel *w, size_t i)
{
	struct larder__wheel_heap_item it = w->heap[i];
	while (i > 0) {
		size_t p = (i - 1) / 2;
		if (w->heap[p].deadline <= it.deadline)
			break;
		heap_set(w, i, w->heap[p]);
		i = p;
	}
	heap_set(w, i, it);
}

static void heap_down(struct larder__wheel *w, size_t i)
{
	struct larder__wheel_heap_item it = w->heap[i];
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= w->heap_len)
			break;
		if (c + 1 < w->heap_len && w->heap[c + 1].deadline < w->heap[c].deadline)
			c++;
		if (it.deadline <= w->heap[c].deadline)
			break;
		heap_set(w, i, w->heap[c]);
		i = c;
	}
	heap_set(w, i, it);
}

static int heap_push(struct larder__wheel *w, struct larder__wheel_link *n, uint64_t deadline)
{
	if (w->heap_len == w->heap_cap) {
		size_t cap = w->heap_cap ? w->heap_cap * 2 : 64;
		struct larder__wheel_heap_item *h = realloc(w->heap, cap * sizeof(*h));
		if (!h)
			return -1;
		w->heap = h;
		w->heap_cap = cap;
	}
	w->heap[w->heap_len] = (struct larder__wheel_heap_item){ deadline, n };
	n->pprev = &w->heap_marker;
	heap_up(w, w->heap_len++);
	return 0;
}

static void heap_remove(struct larder__wheel *w, size_t i)
{
	size_t last = --w->heap_len;
	if (i == last)
		return;
	uint64_t old = w->heap[i].deadline;
	heap_set(w, i, w->heap[last]);
	if (w->heap[i].deadline < old)
		heap_up(w, i);
	else
		heap_down(w, i);
}

/* ---- Placement (W2) ----------------------------------------------------------- */

static void place(struct larder__wheel *w, struct larder__wheel_link *n, uint64_t d)
{
	if (d < w->cur) { /* already due: delivered by the next advance */
		list_push(&w->due, n);
		return;
	}
	uint64_t diff = d ^ w->cur;
	if (diff >> LARDER__WHEEL_SPAN_BITS) {
		if (heap_push(w, n, d) != 0)
			list_push(&w->far, n); /* no memory: re-placed at each block start */
		return;
	}
	unsigned l = diff ? (unsigned)(63 - __builtin_clzll(diff)) / LARDER__WHEEL_BITS : 0;
	unsigned s = (unsigned)(d >> (l * LARDER__WHEEL_BITS)) & (LARDER__WHEEL_SLOTS - 1);
	list_push(&w->slot[l][s], n);
	w->occupied[l] |= (uint64_t)1 << s;
}

/* Places every timer of a detached list again, at its current deadline. */
static void replace_list(struct larder__wheel *w, struct larder__wheel_link *n)
{
	while (n) {
		struct larder__wheel_link *next = n->next;
		place(w, n, w->deadline(w->ctx, n));
		n = next;
	}
}

/* ---- Public calls --------------------------------------------------------------- */

void larder__wheel_init(struct larder__wheel *w, uint64_t now, larder__wheel_deadline_fn *fn,
			void *ctx)
{
	*w = (struct larder__wheel){ 0 };
	w->cur = now;
	w->deadline = fn;
	w->ctx = ctx;
}

void larder__wheel_destroy(struct larder__wheel *w)
{
	free(w->heap);
	w->heap = NULL;
	w->heap_len = w->heap_cap = 0;
}

void larder__wheel_schedule(struct larder__wheel *w, struct larder__wheel_link *link,
			    uint64_t deadline)
{
	w->count++;
	place(w, link, deadline);
}

void larder__wheel_cancel(struct larder__wheel *w, struct larder__wheel_link *link)
{
	if (!link->pprev)
		return;
	if (link->pprev == &w->heap_marker)
		heap_remove(w, link->heap_index);
	else
		list_unlink(w, link);
	link->pprev = NULL;
	link->next = NULL;
	w->count--;
}

void larder__wheel_reschedule(struct larder__wheel *w, struct larder__wheel_link *link,
			      uint64_t deadline)
{
	larder__wheel_cancel(w, link);
	larder__wheel_schedule(w, link, deadline);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

uint64_t larder__wheel_next(const struct larder__wheel *w)
{
	if (!w->count)
		return UINT64_MAX;
	if (w->due)
		return w->cur;
	uint64_t best = UINT64_MAX;
	for (unsigned l = 0; l < LARDER__WHEEL_LEVELS; l++) {
		unsigned shift = l * LARDER__WHEEL_BITS;
		unsigned digit = (unsigned)(w->cur >> shift) & (LARDER__WHEEL_SLOTS - 1);
		uint64_t m = w->occupied[l] & (~(uint64_t)0 << digit);
		if (!m)
			continue;
		uint64_t block = w->cur & ~(((uint64_t)1 << (shift + LARDER__WHEEL_BITS)) - 1);
		uint64_t t = block | ((uint64_t)__builtin_ctzll(m) << shift);
		best = min_u64(best, t < w->cur ? w->cur : t); /* W2: its first tick is now */
	}
	if (w->heap_len) {
		uint64_t t = w->heap[0].deadline & ~SPAN_MASK;
		best = min_u64(best, t < w->cur ? w->cur : t);
	}
	if (w->far && (w->cur | SPAN_MASK) != UINT64_MAX)
		best = min_u64(best, (w->cur | SPAN_MASK) + 1);
	return best;
}

/* Delivers the `due` list: timers of the tick just processed, and timers
 * scheduled at a deadline already behind cur. A callback may cancel any of
 * them or schedule anything (a deadline <= the tick lands on `due` again). */
static uint64_t drain_due(struct larder__wheel *w, larder__wheel_expire_fn *expire, void *ctx)
{
	uint64_t n = 0;
	while (w->due) {
		struct larder__wheel_link *link = w->due;
		list_unlink(w, link);
		link->pprev = NULL;
		link->next = NULL;
		w->count--;
		n++;
		expire(ctx, link);
	}
	return n;
}

/* Processes tick t = cur (the next tick with work): heap and far timers
 * whose block began, cascades top-down, then the level-0 slot. */
static uint64_t process_tick(struct larder__wheel *w, larder__wheel_expire_fn *expire, void *ctx)
{
	uint64_t t = w->cur;
	while (w->heap_len && (w->heap[0].deadline >> LARDER__WHEEL_SPAN_BITS) <=
				      (t >> LARDER__WHEEL_SPAN_BITS)) {
		struct larder__wheel_link *link = w->heap[0].link;
		heap_remove(w, 0);
		place(w, link, w->deadline(w->ctx, link));
	}
	if (w->far && (t & SPAN_MASK) == 0) {
		struct larder__wheel_link *list = w->far;
		w->far = NULL;
		replace_list(w, list);
	}
	for (unsigned l = LARDER__WHEEL_LEVELS - 1; l > 0; l--) {
		unsigned s = (unsigned)(t >> (l * LARDER__WHEEL_BITS)) & (LARDER__WHEEL_SLOTS - 1);
		if (!(w->occupied[l] >> s & 1))
			continue;
		struct larder__wheel_link *list;
		slot_take(w, l, s, &list);
		replace_list(w, list);
	}
	unsigned s0 = (unsigned)t & (LARDER__WHEEL_SLOTS - 1);
	if (w->occupied[0] >> s0 & 1) {
		struct larder__wheel_link *list;
		slot_take(w, 0, s0, &list);
		while (list) { /* onto `due`, which cascades above may have fed */
			struct larder__wheel_link *next = list->next;
			list_push(&w->due, list);
			list = next;
		}
	}
	w->cur = t + 1; /* W1 */
	return drain_due(w, expire, ctx);
}

uint64_t larder__wheel_advance(struct larder__wheel *w, uint64_t now, uint64_t max,
			       larder__wheel_expire_fn *expire, void *ctx)
{
	if (now == UINT64_MAX)
		now--; /* cur = now + 1 must not wrap */
	uint64_t delivered = drain_due(w, expire, ctx);
	if (now < w->cur)
		return delivered;
	while (delivered < max) {
		uint64_t t = larder__wheel_next(w);
		if (t > now) {
			/* Nothing before now + 1: jumping there keeps W2. */
			w->cur = now + 1;
			break;
		}
		w->cur = t; /* every occupied slot's tick is >= t (W2) */
		delivered += process_tick(w, expire, ctx);
	}
	return delivered;
}
