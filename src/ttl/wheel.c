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
 * Each row of slots keeps a 64-bit occupancy bitmap, so finding the next
 * thing to do is one count-trailing-zeros per level (and a test per bank of
 * rows, below): an idle wheel costs nothing and
 * advance() jumps over any stretch of empty slots, however long the clock
 * jumped. Deadlines that differ from the current tick above bit 36 (the
 * span, 2^36 ms = 2.2 years) wait in a binary min-heap keyed by a copy of
 * their deadline and enter the wheel when time reaches the start of their
 * 2^36-tick block.
 *
 * Lists are intrusive and doubly linked by 32-bit ids (8 bytes a link, where
 * pointers and Linux's hlist pprev would take 16), so unlinking is O(1)
 * without knowing the list: a first element's prev is its list's tag, which
 * tells cancel() which list head to update and which bitmap bit may clear.
 * Every neighbour is reached through the directory (mem/pagedir.h): one load.
 *
 * Cascading ahead of time (the "staged" banks): a level-l slot holds the
 * timers of 64^l ticks (with 10^7 deadlines over an hour, a level-3 slot
 * holds ~730,000), and re-placing it in one go at its first tick would make
 * the timers due in that tick wait for all of it. So each level M >= 1 has a
 * bank: rows for levels 0..M-1 holding the timers of the next level-M slot
 * (the one after cur's), placed as they will be when time reaches it.
 * prepare() fills it in bounded chunks, once per maintainer pass, from the
 * live slot; schedule() sends a timer for that range straight to the bank.
 * When time reaches the slot, the live rows 0..M-1 are empty (they held the
 * slot just ended) and swap with the bank's, O(M); only what prepare() had
 * not moved yet is cascaded then. A level-M slot has the 64^M ticks of
 * the slot before it to be staged, and the work is the cascade's own: each
 * timer is still moved at most once per level. The rows are physical and
 * named by the map row[][], so a list's tag stays valid across swaps.
 *
 * Invariants (tests/unit/test_wheel.c checks them against a reference model
 * and walks every list, check_structure()):
 *   WHEEL-W1. cur is the first tick not yet processed, and its cascades are done
 *       (enter()): every timer placed at deadline d < cur was delivered, or
 *       waits on `due` (scheduled at a deadline already behind cur) for the
 *       next advance, whatever its now.
 *   WHEEL-W2. A timer in live slot (l, s) (row row[0][l]) was placed at d with
 *       d >> 6(l+1) equal to cur >> 6(l+1) and (d >> 6l) & 63 == s, and s is
 *       above cur's level-l digit (l > 0) or equal to it or above (l = 0).
 *       Hence no occupied slot lies behind cur, and a level-l slot cascades
 *       (swap, and the rest of it re-placed) as cur enters its first tick.
 *   WHEEL-W2b. A timer in bank M (rows row[M][0..M-1]) was placed at d with
 *       d >> 6M == (cur >> 6M) + 1 and cur's level-M digit below 63 (the
 *       next level-M slot, within cur's level-(M+1) block; let T be its
 *       first tick): it is in row row[M][l], slot (d >> 6l) & 63, where l is
 *       the level of d's highest bit that differs from T (0 when d == T).
 *       schedule() sends such d to the bank; the live slot (M, digit + 1)
 *       keeps only timers placed there (or swapped in with a higher bank)
 *       before it became the next slot, and prepare() moves them into the
 *       bank. The banks' ranges are disjoint, and none holds a timer of
 *       cur's own level-M slot.
 *   WHEEL-W3. Bit s of occupied[r] is set iff slot s of physical row r is non-empty.
 *   WHEEL-W4. Heap items were placed with a deadline in a later 2^36 block than
 *       cur's; they form a binary min-heap on their copied deadline, and
 *       each link's next is its position (prev: the heap tag).
 *   WHEEL-W5. A timer is in exactly one of: a live slot, a bank's slot, the heap,
 *       `due`, `far`, or nowhere (prev 0); count is the number scheduled.
 *   WHEEL-W6. advance(now) delivers every timer whose placed deadline is <= now
 *       (unless it stops at `max`), each at its exact tick, in tick order.
 *       Where the caller moved a deadline without rescheduling, cascades
 *       (in prepare() or advance()) and heap moves read the current deadline
 *       (deadline callback), and the expire callback decides: a later
 *       deadline is simply scheduled again.
 *
 * Not guaranteed: order among timers of the same tick; fairness of `max`
 * (it is checked between ticks, so one tick's slot is delivered whole); a
 * bounded advance() when prepare() did not keep up, or when one advance()
 * crosses the start of more than one slot of a level (only the first was
 * staged; the others cascade in one go, as without banks: a 1 s clock step
 * does so at level 1); the heap's hand-over at a 2^36-tick block start is
 * not staged either (once in 2.2 years).
 */
#include "ttl/wheel.h"

#include <stdlib.h>

#include "core/alloc.h"

#define SPAN_MASK (((uint64_t)1 << LARDER__WHEEL_SPAN_BITS) - 1)

/* ---- Lists ------------------------------------------------------------------- */

static struct larder__wheel_link *link_at(const struct larder__wheel *w, uint32_t id)
{
	return (struct larder__wheel_link *)(void *)((unsigned char *)larder__pagedir_slot(w->dir, id) +
						   w->link_offset);
}

static unsigned digit(uint64_t t, unsigned l)
{
	return (unsigned)(t >> (l * LARDER__WHEEL_BITS)) & (LARDER__WHEEL_SLOTS - 1);
}

/* The level of diff's highest set bit (0 for 0). */
static unsigned top_level(uint64_t diff)
{
	return diff ? (unsigned)(63 - __builtin_clzll(diff)) / LARDER__WHEEL_BITS : 0;
}

/* The list of slot s at level l of bank b (0: the live wheel). */
static unsigned slot_list(const struct larder__wheel *w, unsigned b, unsigned l, unsigned s)
{
	return (unsigned)w->row[b][l] * LARDER__WHEEL_SLOTS + s;
}

static void list_push(struct larder__wheel *w, unsigned list, struct larder__wheel_link *n,
		      uint32_t id)
{
	n->next = w->list[list];
	if (n->next)
		link_at(w, n->next)->prev = id;
	w->list[list] = id;
	n->prev = LARDER__WHEEL_TAG(list);
	if (list < LARDER__WHEEL_LIST_DUE) /* WHEEL-W3 */
		w->occupied[list / LARDER__WHEEL_SLOTS] |= (uint64_t)1
							   << (list % LARDER__WHEEL_SLOTS);
}

static void list_unlink(struct larder__wheel *w, struct larder__wheel_link *n)
{
	if (n->next)
		link_at(w, n->next)->prev = n->prev;
	if (n->prev < LARDER__PAGEDIR_ID_LIMIT) {
		link_at(w, n->prev)->next = n->next;
		return;
	}
	unsigned list = n->prev - LARDER__WHEEL_TAG(0);
	w->list[list] = n->next;
	if (!n->next && list < LARDER__WHEEL_LIST_DUE) /* WHEEL-W3: the slot became empty */
		w->occupied[list / LARDER__WHEEL_SLOTS] &= ~((uint64_t)1 << (list % LARDER__WHEEL_SLOTS));
}

/* Detaches a slot's list (non-empty), clears its bit; returns its first id.
 * The caller re-places every timer of it at once (their prev links go
 * stale). */
static uint32_t slot_take(struct larder__wheel *w, unsigned list)
{
	uint32_t first = w->list[list];
	w->list[list] = 0;
	w->occupied[list / LARDER__WHEEL_SLOTS] &= ~((uint64_t)1 << (list % LARDER__WHEEL_SLOTS));
	return first;
}

/* ---- Heap (WHEEL-W4) ------------------------------------------------------------------ */

static void heap_set(struct larder__wheel *w, size_t i, struct larder__wheel_heap_item it)
{
	w->heap[i] = it;
	link_at(w, it.id)->next = (uint32_t)i;
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

static int heap_push(struct larder__wheel *w, struct larder__wheel_link *n, uint32_t id,
		     uint64_t deadline)
{
	if (w->heap_len == w->heap_cap) {
		size_t cap = w->heap_cap ? w->heap_cap * 2 : 64;
		struct larder__wheel_heap_item *h = larder__realloc(w->heap, cap * sizeof(*h));
		if (!h)
			return -1;
		w->heap = h;
		w->heap_cap = cap;
	}
	w->heap[w->heap_len] = (struct larder__wheel_heap_item){ deadline, id };
	n->prev = LARDER__WHEEL_TAG_HEAP;
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

/* ---- Placement (WHEEL-W2, WHEEL-W2b) ------------------------------------------------------ */

static void place(struct larder__wheel *w, struct larder__wheel_link *n, uint32_t id, uint64_t d)
{
	if (d < w->cur) { /* already due: delivered by the next advance */
		list_push(w, LARDER__WHEEL_LIST_DUE, n, id);
		return;
	}
	uint64_t diff = d ^ w->cur;
	if (diff >> LARDER__WHEEL_SPAN_BITS) {
		if (heap_push(w, n, id, d) != 0) /* no memory: re-placed at each block start */
			list_push(w, LARDER__WHEEL_LIST_FAR, n, id);
		return;
	}
	unsigned l = top_level(diff), b = 0;
	if (l > 0 && digit(d, l) == digit(w->cur, l) + 1) {
		/* WHEEL-W2b: the next level-l slot, placed as at its first tick T (d ^ T
		 * is d's offset in the slot). */
		b = l;
		l = top_level(d & (((uint64_t)1 << (l * LARDER__WHEEL_BITS)) - 1));
	}
	list_push(w, slot_list(w, b, l, digit(d, l)), n, id);
}

/* Places every timer of a detached list (first id `id`) again, at its
 * current deadline. The next node's link is fetched one step ahead: the
 * list is in scheduling order, i.e. random addresses. */
static void replace_list(struct larder__wheel *w, uint32_t id)
{
	while (id) {
		struct larder__wheel_link *n = link_at(w, id);
		uint32_t next = n->next;
		if (next)
			__builtin_prefetch(link_at(w, next));
		place(w, n, id, w->deadline(w->ctx, n));
		id = next;
	}
}

/* ---- Public calls --------------------------------------------------------------- */

void larder__wheel_init(struct larder__wheel *w, uint64_t now, const struct larder__pagedir *dir,
			size_t link_offset, larder__wheel_deadline_fn *fn, void *ctx)
{
	*w = (struct larder__wheel){ 0 };
	w->cur = now;
	unsigned r = 0;
	for (unsigned b = 0; b < LARDER__WHEEL_LEVELS; b++)
		for (unsigned l = 0; l < (b ? b : LARDER__WHEEL_LEVELS); l++)
			w->row[b][l] = (uint8_t)r++;
	w->dir = dir;
	w->link_offset = link_offset;
	w->deadline = fn;
	w->ctx = ctx;
}

void larder__wheel_destroy(struct larder__wheel *w)
{
	free(w->heap);
	w->heap = NULL;
	w->heap_len = w->heap_cap = 0;
}

void larder__wheel_schedule(struct larder__wheel *w, struct larder__wheel_link *link, uint32_t id,
			    uint64_t deadline)
{
	w->count++;
	place(w, link, id, deadline);
}

void larder__wheel_cancel(struct larder__wheel *w, struct larder__wheel_link *link)
{
	if (!link->prev)
		return;
	if (link->prev == LARDER__WHEEL_TAG_HEAP)
		heap_remove(w, link->next);
	else
		list_unlink(w, link);
	link->prev = link->next = 0;
	w->count--;
}

void larder__wheel_reschedule(struct larder__wheel *w, struct larder__wheel_link *link,
			      uint32_t id, uint64_t deadline)
{
	larder__wheel_cancel(w, link);
	larder__wheel_schedule(w, link, id, deadline);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* Whether bank M holds any timer. */
static int bank_occupied(const struct larder__wheel *w, unsigned m)
{
	uint64_t any = 0;
	for (unsigned l = 0; l < m; l++)
		any |= w->occupied[w->row[m][l]];
	return any != 0;
}

uint64_t larder__wheel_next(const struct larder__wheel *w)
{
	if (!w->count)
		return UINT64_MAX;
	if (w->list[LARDER__WHEEL_LIST_DUE])
		return w->cur;
	uint64_t best = UINT64_MAX;
	for (unsigned l = 0; l < LARDER__WHEEL_LEVELS; l++) {
		unsigned shift = l * LARDER__WHEEL_BITS;
		uint64_t m = w->occupied[w->row[0][l]] & (~(uint64_t)0 << digit(w->cur, l));
		if (m) { /* WHEEL-W2: the slot's first tick is not behind cur */
			uint64_t block =
				w->cur & ~(((uint64_t)1 << (shift + LARDER__WHEEL_BITS)) - 1);
			best = min_u64(best, block | ((uint64_t)__builtin_ctzll(m) << shift));
		}
		if (l > 0 && bank_occupied(w, l)) /* WHEEL-W2b: swapped in at its first tick */
			best = min_u64(best, ((w->cur >> shift) + 1) << shift);
	}
	if (w->heap_len) {
		uint64_t t = w->heap[0].deadline & ~SPAN_MASK;
		best = min_u64(best, t < w->cur ? w->cur : t);
	}
	if (w->list[LARDER__WHEEL_LIST_FAR] && (w->cur | SPAN_MASK) != UINT64_MAX)
		best = min_u64(best, (w->cur | SPAN_MASK) + 1);
	return best;
}

/* Delivers the `due` list: timers of the tick just processed, and timers
 * scheduled at a deadline already behind cur. A callback may cancel any of
 * them or schedule anything (a deadline <= the tick lands on `due` again). */
static uint64_t drain_due(struct larder__wheel *w, larder__wheel_expire_fn *expire, void *ctx)
{
	uint64_t n = 0;
	uint32_t id;
	while ((id = w->list[LARDER__WHEEL_LIST_DUE]) != 0) {
		struct larder__wheel_link *link = link_at(w, id);
		list_unlink(w, link);
		link->prev = link->next = 0;
		w->count--;
		n++;
		expire(ctx, link, id);
	}
	return n;
}

/*
 * Moves time to t (> cur; nothing is due before t) and does t's cascades
 * (WHEEL-W1). t is the first tick of a slot at each level up to a; only the
 * level-a slot can hold timers (below a, slot 0 is never used when placing
 * relative to such a tick; above a, any slot starting by t would have been
 * an earlier event). Its staged rows come in by a swap with the live ones,
 * which are empty: they held the level-a slot just ended (or, after a jump,
 * nothing due before t), and bank a is empty unless t was its slot. At a
 * 2^36 block start no bank is in use (WHEEL-W2b: digit 63 below), and the heap
 * and `far` come in.
 */
static void enter(struct larder__wheel *w, uint64_t t)
{
	w->cur = t;
	unsigned a = (unsigned)__builtin_ctzll(t) / LARDER__WHEEL_BITS; /* t > 0 */
	if (a == 0)
		return;
	if (a < LARDER__WHEEL_LEVELS) {
		for (unsigned l = 0; l < a; l++) {
			uint8_t r = w->row[0][l];
			w->row[0][l] = w->row[a][l];
			w->row[a][l] = r;
		}
		unsigned list = slot_list(w, 0, a, digit(t, a));
		if (w->list[list]) /* what prepare() did not stage in time */
			replace_list(w, slot_take(w, list));
		return;
	}
	while (w->heap_len && (w->heap[0].deadline >> LARDER__WHEEL_SPAN_BITS) <=
				      (t >> LARDER__WHEEL_SPAN_BITS)) {
		uint32_t id = w->heap[0].id;
		struct larder__wheel_link *link = link_at(w, id);
		heap_remove(w, 0);
		place(w, link, id, w->deadline(w->ctx, link));
	}
	if (w->list[LARDER__WHEEL_LIST_FAR]) {
		uint32_t first = w->list[LARDER__WHEEL_LIST_FAR];
		w->list[LARDER__WHEEL_LIST_FAR] = 0;
		replace_list(w, first);
	}
}

/* Processes tick cur (entered: its cascades are done): delivers its level-0
 * slot, then enters the next tick, so that the expire callbacks schedule
 * against a settled wheel. */
static uint64_t process_tick(struct larder__wheel *w, larder__wheel_expire_fn *expire, void *ctx)
{
	uint64_t t = w->cur;
	unsigned list = slot_list(w, 0, 0, digit(t, 0));
	if (w->list[list]) {
		uint32_t id = slot_take(w, list);
		if (!w->list[LARDER__WHEEL_LIST_DUE]) { /* the slot becomes `due` whole */
			w->list[LARDER__WHEEL_LIST_DUE] = id;
			link_at(w, id)->prev = LARDER__WHEEL_TAG(LARDER__WHEEL_LIST_DUE);
		} else { /* enter() re-placed a deadline moved earlier onto `due` */
			while (id) {
				struct larder__wheel_link *n = link_at(w, id);
				uint32_t next = n->next;
				list_push(w, LARDER__WHEEL_LIST_DUE, n, id);
				id = next;
			}
		}
	}
	enter(w, t + 1);
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
			/* Nothing before now + 1: jumping there keeps WHEEL-W2. */
			if (w->cur <= now)
				enter(w, now + 1);
			break;
		}
		if (t > w->cur)
			enter(w, t); /* every occupied slot's tick is >= t (WHEEL-W2) */
		delivered += process_tick(w, expire, ctx);
	}
	return delivered;
}

uint64_t larder__wheel_prepare(struct larder__wheel *w, uint64_t max)
{
	uint64_t moved = 0;
	for (unsigned m = 1; m < LARDER__WHEEL_LEVELS && moved < max; m++) {
		unsigned s = digit(w->cur, m) + 1;
		if (s == LARDER__WHEEL_SLOTS)
			continue; /* the next slot is a higher level's: its bank stages it */
		unsigned list = slot_list(w, 0, m, s);
		uint32_t id;
		while (moved < max && (id = w->list[list]) != 0) {
			struct larder__wheel_link *n = link_at(w, id);
			list_unlink(w, n); /* writes the next node: it is in cache now */
			if (n->next) {
				uint32_t after = link_at(w, n->next)->next;
				if (after)
					__builtin_prefetch(link_at(w, after));
			}
			place(w, n, id, w->deadline(w->ctx, n)); /* WHEEL-W2b: into bank m */
			moved++;
		}
	}
	return moved;
}
