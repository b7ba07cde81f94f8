/*
 * tests/unit/test_wheel.c - the timing wheel alone (src/ttl/wheel.c).
 *
 * Timers are small structs with a link and a deadline, named by ids from a
 * directory (mem/pagedir.h) as entries are; the expire callback records when
 * each was delivered and checks the id it is given. Checked, against the invariants WHEEL-W1..W6 of
 * wheel.c:
 *   - each timer is delivered by the first advance(now) with now >= its
 *     deadline, and never before (exact to the tick), across every level
 *     boundary (63/64, 4095/4096, ... 2^36) and from unaligned start times;
 *   - deadlines beyond the span go to the heap and are handed over on time;
 *     cancel works from every place (slot, heap middle, far future);
 *   - a random mix of schedule/cancel/reschedule/advance agrees with a
 *     reference model (a plain array scanned each step);
 *   - the bitmaps are all clear when the wheel is empty; next() is a lower
 *     bound of the first deadline;
 *   - the deadline callback is used when a deadline moved without a
 *     reschedule, and an expire callback may schedule again;
 *   - staged cascades (WHEEL-W2b): a slot staged in chunks while its timers are
 *     cancelled, rescheduled, scheduled anew or have their deadline moved,
 *     on both sides of the staging; with prepare() called before each
 *     advance, advance() makes no cascade at all (no deadline callback),
 *     and without it, or with too little, it cascades the rest, still exact;
 *   - a random mix with random prepare() budgets and jumps over whole slots
 *     against a sorted reference (a min-heap): each advance delivers exactly
 *     the timers the reference pops at its now, once each, in tick order,
 *     and a walk of every list finds WHEEL-W2, WHEEL-W2b, WHEEL-W3, WHEEL-W4 and WHEEL-W5 intact.
 */
#include <stdlib.h>

#include "harness.h"
#include "ttl/wheel.h"

struct timer {
	struct larder__wheel_link link;
	uint64_t deadline;  /* what the deadline callback returns */
	uint64_t placed;    /* what the test scheduled it at (the model) */
	int scheduled;      /* model: 1 while scheduled */
	uint32_t id;        /* its id (give_ids) */
	uint64_t delivered; /* times delivered */
	uint64_t at;        /* `now` of the advance that delivered it */
};

#define TIMER(l) ((struct timer *)(void *)(l))

static uint64_t deadline_fn(void *ctx, struct larder__wheel_link *l);
static uint64_t cur_now; /* the now of the advance in progress */
static struct larder__pagedir dir; /* the timers' ids, as a slab gives entries theirs */

/* Gives t[0..n) ids, a directory run of up to 2048 at a time. */
static void give_ids(struct timer *t, size_t n)
{
	static struct larder__pageid pg; /* only its first_id is read back */
	for (size_t i = 0; i < n; i += 2048) {
		uint32_t k = (uint32_t)(n - i < 2048 ? n - i : 2048);
		REQUIRE(larder__pagedir_add_locked(&dir, &pg, &t[i], k, sizeof(*t)) == 0);
		for (uint32_t j = 0; j < k; j++)
			t[i + j].id = pg.first_id + j;
	}
}

static void wheel_init(struct larder__wheel *w, uint64_t now)
{
	larder__wheel_init(w, now, &dir, offsetof(struct timer, link), deadline_fn, NULL);
}

static uint64_t deadline_calls; /* cascades, stagings and heap moves (re-placements) */

static uint64_t deadline_fn(void *ctx, struct larder__wheel_link *l)
{
	(void)ctx;
	deadline_calls++;
	return TIMER(l)->deadline;
}

static void expire_fn(void *ctx, struct larder__wheel_link *l, uint32_t id)
{
	struct timer *t = TIMER(l);
	(void)ctx;
	CHECK(!larder__wheel_scheduled(l));
	CHECK_EQ(id, t->id);
	t->delivered++;
	t->at = cur_now;
	t->scheduled = 0;
}

static uint64_t advance(struct larder__wheel *w, uint64_t now)
{
	cur_now = now;
	return larder__wheel_advance(w, now, UINT64_MAX, expire_fn, NULL);
}

static void sched(struct larder__wheel *w, struct timer *t, uint64_t d)
{
	t->deadline = t->placed = d;
	t->scheduled = 1;
	larder__wheel_reschedule(w, &t->link, t->id, d);
}

static int bitmaps_clear(const struct larder__wheel *w)
{
	for (unsigned r = 0; r < LARDER__WHEEL_ROWS; r++)
		if (w->occupied[r])
			return 0;
	return w->heap_len == 0 && w->list[LARDER__WHEEL_LIST_FAR] == 0 &&
	       w->list[LARDER__WHEEL_LIST_DUE] == 0;
}

/* Every boundary: a timer at base + off is not delivered at base + off - 1,
 * and is at base + off, alone; with `stage`, every cascade is done ahead by
 * prepare() between the advances. */
static void check_boundaries(uint64_t base, int stage)
{
	static const uint64_t offs[] = {
		1, 2, 62, 63, 64, 65, 127, 128, 4095, 4096, 4097, 262143, 262144, 262145,
		((uint64_t)1 << 24) - 1, (uint64_t)1 << 24, ((uint64_t)1 << 30) - 1,
		(uint64_t)1 << 30, ((uint64_t)1 << 30) + 1, ((uint64_t)1 << 36) - 1,
		(uint64_t)1 << 36, ((uint64_t)1 << 36) + 1, ((uint64_t)1 << 40) + 3,
	};
	enum { N = sizeof(offs) / sizeof(offs[0]) };
	struct timer t[N];
	struct larder__wheel w;

	memset(t, 0, sizeof(t));
	give_ids(t, sizeof(t) / sizeof(t[0]));
	wheel_init(&w, base);
	for (int i = N - 1; i >= 0; i--) /* reverse order: placement must not care */
		sched(&w, &t[i], base + offs[i]);
	CHECK_EQ(w.count, N);
	CHECK_LE(larder__wheel_next(&w), base + offs[0]);
	for (int i = 0; i < N; i++) {
		uint64_t d = base + offs[i];
		if (stage)
			larder__wheel_prepare(&w, UINT64_MAX);
		CHECK_EQ(advance(&w, d - 1), 0);
		if (stage)
			larder__wheel_prepare(&w, UINT64_MAX);
		if (!CHECK_EQ(t[i].delivered, 0))
			th_fail(__FILE__, __LINE__, "base %" PRIu64 " offset %" PRIu64 " early", base,
				offs[i]);
		CHECK_EQ(advance(&w, d), 1);
		if (!CHECK_EQ(t[i].delivered, 1))
			th_fail(__FILE__, __LINE__, "base %" PRIu64 " offset %" PRIu64 " missed", base,
				offs[i]);
		CHECK_EQ(w.count, (uint64_t)(N - 1 - i));
		if (i + 1 < N)
			CHECK_LE(larder__wheel_next(&w), base + offs[i + 1]);
	}
	CHECK_EQ(larder__wheel_next(&w), UINT64_MAX);
	CHECK(bitmaps_clear(&w));
	larder__wheel_destroy(&w);
}

static void test_level_boundaries(void)
{
	for (int stage = 0; stage < 2; stage++) {
		check_boundaries(0, stage);
		check_boundaries(1, stage);
		check_boundaries(12345, stage);
		check_boundaries(((uint64_t)1 << 36) - 7, stage); /* the span's block boundary */
		check_boundaries(((uint64_t)1 << 42) + 4095, stage);
		/* the next level-1 slot is the next level-4 slot */
		check_boundaries(((uint64_t)1 << 24) - 64, stage);
	}
}

/* One advance over a long stretch delivers everything due, in one call. */
static void test_jump(void)
{
	struct timer t[64];
	struct larder__wheel w;

	memset(t, 0, sizeof(t));
	give_ids(t, sizeof(t) / sizeof(t[0]));
	wheel_init(&w, 1000);
	for (int i = 0; i < 64; i++)
		sched(&w, &t[i], 1000 + ((uint64_t)1 << (i % 40)) + (uint64_t)i);
	uint64_t due = 0;
	for (int i = 0; i < 64; i++)
		due += t[i].placed <= 1000 + ((uint64_t)1 << 30);
	CHECK_EQ(advance(&w, 1000 + ((uint64_t)1 << 30)), due);
	for (int i = 0; i < 64; i++)
		CHECK_EQ(t[i].delivered, t[i].placed <= 1000 + ((uint64_t)1 << 30));
	/* A deadline already passed is delivered by the next advance. */
	CHECK_EQ(t[0].delivered, 1);
	sched(&w, &t[0], 5);
	CHECK_EQ(advance(&w, 1000 + ((uint64_t)1 << 30)), 1);
	CHECK_EQ(t[0].delivered, 2);
	CHECK_EQ(advance(&w, UINT64_MAX), 64 - due);
	CHECK(bitmaps_clear(&w));
	larder__wheel_destroy(&w);
}

/* Far deadlines: the heap, its hand-over, and cancel from its middle. */
static void test_heap_handover(void)
{
	enum { N = 300 };
	static struct timer t[N];
	struct larder__wheel w;
	struct th_rng rng = { 7 };
	uint64_t base = 5000, span = (uint64_t)1 << LARDER__WHEEL_SPAN_BITS;

	memset(t, 0, sizeof(t));
	give_ids(t, sizeof(t) / sizeof(t[0]));
	wheel_init(&w, base);
	for (int i = 0; i < N; i++)
		sched(&w, &t[i], base + span + th_rng_below(&rng, 3 * span));
	CHECK_EQ(w.heap_len, N);
	for (int i = 0; i < N; i += 3) { /* cancel a third, from anywhere in the heap */
		larder__wheel_cancel(&w, &t[i].link);
		t[i].scheduled = 0;
	}
	CHECK_EQ(w.count, N - (N + 2) / 3);
	for (size_t i = 1; i < w.heap_len; i++) {
		CHECK_LE(w.heap[(i - 1) / 2].deadline, w.heap[i].deadline);
		const struct larder__wheel_link *l =
			(const void *)larder__pagedir_slot(&dir, w.heap[i].id);
		CHECK_EQ(l->next, i);
		CHECK_EQ(l->prev, LARDER__WHEEL_TAG_HEAP);
	}
	/* Walk time forward in uneven steps; each timer fires exactly on time. */
	uint64_t now = base;
	while (w.count) {
		uint64_t next = larder__wheel_next(&w);
		REQUIRE(next != UINT64_MAX);
		uint64_t step = 1 + th_rng_below(&rng, span / 7);
		now = now + step;
		advance(&w, now);
		for (int i = 0; i < N; i++) {
			if (!t[i].scheduled)
				continue;
			if (t[i].placed <= now) {
				th_fail(__FILE__, __LINE__, "timer %d at %" PRIu64 " not delivered by %" PRIu64, i,
					t[i].placed, now);
				t[i].scheduled = 0;
			}
		}
	}
	for (int i = 0; i < N; i++) {
		CHECK_EQ(t[i].delivered, i % 3 != 0);
		if (t[i].delivered)
			CHECK_GE(t[i].at, t[i].placed);
	}
	CHECK(bitmaps_clear(&w));
	larder__wheel_destroy(&w);
}

/* Random operations against the model. */
static void test_random_model(void)
{
	enum { N = 4000, STEPS = 3000 };
	static struct timer t[N];
	struct larder__wheel w;
	struct th_rng rng = { 99 };
	uint64_t now = 777, last = 777;

	memset(t, 0, sizeof(t));
	give_ids(t, sizeof(t) / sizeof(t[0]));
	wheel_init(&w, now + 1);
	for (int step = 0; step < STEPS; step++) {
		for (int k = 0; k < 8; k++) {
			struct timer *x = &t[th_rng_below(&rng, N)];
			unsigned op = (unsigned)th_rng_below(&rng, 10);
			/* log-uniform distances: every level gets traffic */
			uint64_t dist = th_rng_below(&rng, (uint64_t)1 << th_rng_below(&rng, 40));
			if (op < 7) {
				sched(&w, x, now + 1 + dist);
			} else {
				larder__wheel_cancel(&w, &x->link);
				x->scheduled = 0;
			}
		}
		uint64_t before[N];
		for (int i = 0; i < N; i++)
			before[i] = t[i].delivered;
		last = now;
		now += th_rng_below(&rng, 4) == 0 ? th_rng_below(&rng, (uint64_t)1 << 20)
						   : th_rng_below(&rng, 200);
		advance(&w, now);
		uint64_t count = 0;
		for (int i = 0; i < N; i++) {
			struct timer *x = &t[i];
			if (x->delivered != before[i]) {
				CHECK_EQ(x->delivered, before[i] + 1);
				if (x->placed <= last || x->placed > now)
					th_fail(__FILE__, __LINE__,
						"timer %d at %" PRIu64 " delivered in (%" PRIu64 ", %" PRIu64 "]",
						i, x->placed, last, now);
			} else if (x->scheduled && x->placed <= now) {
				th_fail(__FILE__, __LINE__, "timer %d at %" PRIu64 " missed by %" PRIu64, i,
					x->placed, now);
				x->scheduled = 0;
				larder__wheel_cancel(&w, &x->link);
			}
			count += x->scheduled;
			CHECK_EQ(larder__wheel_scheduled(&x->link), x->scheduled);
		}
		CHECK_EQ(w.count, count);
		if (th_failures())
			break;
	}
	for (int i = 0; i < N; i++) {
		larder__wheel_cancel(&w, &t[i].link);
		t[i].scheduled = 0;
	}
	CHECK_EQ(w.count, 0);
	CHECK(bitmaps_clear(&w));
	larder__wheel_destroy(&w);
}

/* A deadline moved later without a reschedule: cascades read the new one;
 * an expire callback may schedule again. */
static struct larder__wheel *again_wheel;

static void expire_again(void *ctx, struct larder__wheel_link *l, uint32_t id)
{
	struct timer *t = TIMER(l);
	(void)ctx;
	CHECK_EQ(id, t->id);
	t->delivered++;
	t->at = cur_now;
	if (t->deadline > cur_now) /* as the maintainer does (on_due) */
		larder__wheel_schedule(again_wheel, l, id, t->deadline);
}

static void test_moved_deadline(void)
{
	struct timer a, b;
	struct larder__wheel w;

	memset(&a, 0, sizeof(a));
	memset(&b, 0, sizeof(b));
	again_wheel = &w;
	give_ids(&a, 1);
	give_ids(&b, 1);
	wheel_init(&w, 0);
	sched(&w, &a, 10);     /* level 0 */
	sched(&w, &b, 100000); /* level 2 */
	a.deadline = 500;      /* moved later in place */
	b.deadline = 200000;
	cur_now = 10;
	CHECK_EQ(larder__wheel_advance(&w, 10, 100, expire_again, NULL), 1);
	CHECK_EQ(a.delivered, 1);
	CHECK(larder__wheel_scheduled(&a.link)); /* scheduled again at 500 */
	cur_now = 499;
	CHECK_EQ(larder__wheel_advance(&w, 499, 100, expire_again, NULL), 0);
	cur_now = 500;
	CHECK_EQ(larder__wheel_advance(&w, 500, 100, expire_again, NULL), 1);
	CHECK(!larder__wheel_scheduled(&a.link));
	/* b cascades at 98304 (its level-2 slot's start) with the new deadline */
	cur_now = 199999;
	CHECK_EQ(larder__wheel_advance(&w, 199999, 100, expire_again, NULL), 0);
	CHECK_EQ(b.delivered, 0);
	cur_now = 200000;
	CHECK_EQ(larder__wheel_advance(&w, 200000, 100, expire_again, NULL), 1);
	CHECK_EQ(b.delivered, 1);
	CHECK_EQ(w.count, 0);
	CHECK(bitmaps_clear(&w));
	larder__wheel_destroy(&w);
}

/* advance() stops between ticks once max timers were delivered. */
static void test_max_per_call(void)
{
	enum { N = 100 };
	struct timer t[N];
	struct larder__wheel w;

	memset(t, 0, sizeof(t));
	give_ids(t, sizeof(t) / sizeof(t[0]));
	wheel_init(&w, 0);
	for (int i = 0; i < N; i++)
		sched(&w, &t[i], 1 + (uint64_t)i); /* one per tick */
	cur_now = 1000;
	uint64_t total = 0, calls = 0, n;
	while ((n = larder__wheel_advance(&w, 1000, 7, expire_fn, NULL)) != 0) {
		CHECK_LE(n, 7);
		total += n;
		calls++;
	}
	CHECK_EQ(total, N);
	CHECK_EQ(calls, (N + 6) / 7);
	/* and in tick order */
	for (int i = 1; i < N; i++)
		CHECK_EQ(t[i].delivered, 1);
	larder__wheel_destroy(&w);
}

/* ---- Staged cascades (WHEEL-W2b) ------------------------------------------------------ */

static unsigned level_of(uint64_t diff)
{
	return diff ? (unsigned)(63 - __builtin_clzll(diff)) / LARDER__WHEEL_BITS : 0;
}

static unsigned digit_of(uint64_t t, unsigned l)
{
	return (unsigned)(t >> (l * LARDER__WHEEL_BITS)) & (LARDER__WHEEL_SLOTS - 1);
}

static struct timer *timer_of(uint32_t id)
{
	return (struct timer *)larder__pagedir_slot(&dir, id);
}

/* Where a timer is: its bank (0: live) and level, found from its list's tag;
 * -1 when it is in no slot (heap, due, far, unscheduled). */
static int where(const struct larder__wheel *w, const struct timer *t, unsigned *level)
{
	if (!t->link.prev || t->link.prev == LARDER__WHEEL_TAG_HEAP)
		return -1;
	const struct larder__wheel_link *l = &t->link;
	while (l->prev < LARDER__PAGEDIR_ID_LIMIT)
		l = &timer_of(l->prev)->link;
	unsigned list = l->prev - LARDER__WHEEL_TAG(0);
	if (list >= LARDER__WHEEL_LIST_DUE)
		return -1;
	for (unsigned b = 0; b < LARDER__WHEEL_LEVELS; b++)
		for (unsigned lv = 0; lv < (b ? b : LARDER__WHEEL_LEVELS); lv++)
			if (w->row[b][lv] == list / LARDER__WHEEL_SLOTS) {
				*level = lv;
				return (int)b;
			}
	return -1;
}

/* Whether a timer with deadline d belongs in slot s of level l of bank b
 * (0: the live wheel) while the wheel's time is cur: WHEEL-W2 and WHEEL-W2b. */
static int placed_right(uint64_t cur, unsigned b, unsigned l, unsigned s, uint64_t d)
{
	if (digit_of(d, l) != s)
		return 0;
	if (b == 0) {
		unsigned up = LARDER__WHEEL_BITS * (l + 1);
		return d >> up == cur >> up && (l ? s > digit_of(cur, l) : s >= digit_of(cur, 0));
	}
	unsigned sh = LARDER__WHEEL_BITS * b;
	return l < b && digit_of(cur, b) != 63 && d >> sh == (cur >> sh) + 1 &&
	       level_of(d & (((uint64_t)1 << sh) - 1)) == l;
}

/* Walks the list of slot s at level l of bank b; returns its length, or -1
 * at a broken link (WHEEL-W3: the bit matches emptiness) or a misplaced timer. */
static int64_t check_slot(const struct larder__wheel *w, unsigned b, unsigned l, unsigned s)
{
	unsigned r = w->row[b][l], list = r * LARDER__WHEEL_SLOTS + s;
	uint32_t prev = LARDER__WHEEL_TAG(list);
	int64_t n = 0;
	if (!CHECK_EQ(w->occupied[r] >> s & 1, w->list[list] != 0))
		return -1;
	for (uint32_t id = w->list[list]; id; id = timer_of(id)->link.next, n++) {
		const struct timer *t = timer_of(id);
		if (t->link.prev != prev || !placed_right(w->cur, b, l, s, t->deadline)) {
			th_fail(__FILE__, __LINE__,
				"timer %" PRIu32 " at %" PRIu64
				" in bank %u level %u slot %u, cur %" PRIu64,
				id, t->deadline, b, l, s, w->cur);
			return -1;
		}
		prev = id;
	}
	return n;
}

/* Walks every list and checks WHEEL-W2, WHEEL-W2b and WHEEL-W3..W5 against
 * the timers' deadlines (callback values). Returns 0 at the first violation. */
static int check_structure(const struct larder__wheel *w)
{
	uint64_t seen = 0, block = w->cur >> LARDER__WHEEL_SPAN_BITS;
	int rows_used[LARDER__WHEEL_ROWS] = { 0 };
	for (unsigned b = 0; b < LARDER__WHEEL_LEVELS; b++) {
		for (unsigned l = 0; l < (b ? b : LARDER__WHEEL_LEVELS); l++) {
			unsigned r = w->row[b][l];
			if (!CHECK_LT(r, LARDER__WHEEL_ROWS) || !CHECK_EQ(rows_used[r]++, 0))
				return 0;
			for (unsigned s = 0; s < LARDER__WHEEL_SLOTS; s++) {
				int64_t n = check_slot(w, b, l, s);
				if (n < 0)
					return 0;
				seen += (uint64_t)n;
			}
		}
	}
	for (unsigned list = LARDER__WHEEL_LIST_DUE; list < LARDER__WHEEL_LISTS; list++)
		for (uint32_t id = w->list[list]; id; id = timer_of(id)->link.next)
			seen++;
	for (size_t i = 0; i < w->heap_len; i++) { /* WHEEL-W4 */
		if (!CHECK_EQ(timer_of(w->heap[i].id)->link.next, i) ||
		    (i && !CHECK_LE(w->heap[(i - 1) / 2].deadline, w->heap[i].deadline)) ||
		    !CHECK_GT(w->heap[i].deadline >> LARDER__WHEEL_SPAN_BITS, block))
			return 0;
		seen++;
	}
	return CHECK_EQ(seen, w->count); /* WHEEL-W5 */
}

/* Timers in bank b (0: the live wheel) at level l. */
static uint64_t count_at(const struct larder__wheel *w, const struct timer *t, size_t n, int b,
			 unsigned l)
{
	uint64_t c = 0;
	for (size_t i = 0; i < n; i++) {
		unsigned lv;
		c += where(w, &t[i], &lv) == b && lv == l;
	}
	return c;
}

/* Exactness for the staged tests: each timer is delivered by the first
 * advance whose now is >= its deadline, once, in tick order. */
static uint64_t exact_last_now, exact_last_tick;

static void expire_exact(void *ctx, struct larder__wheel_link *l, uint32_t id)
{
	struct timer *t = TIMER(l);
	(void)ctx;
	CHECK_EQ(id, t->id);
	if (!t->scheduled || t->placed <= exact_last_now || t->placed > cur_now ||
	    t->placed < exact_last_tick)
		th_fail(__FILE__, __LINE__,
			"timer at %" PRIu64 " (scheduled %d) delivered in (%" PRIu64 ", %" PRIu64
			"] after tick %" PRIu64,
			t->placed, t->scheduled, exact_last_now, cur_now, exact_last_tick);
	exact_last_tick = t->placed;
	t->delivered++;
	t->at = cur_now;
	t->scheduled = 0;
}

/* Advances to now; returns the deadline callbacks it made (its cascades). */
static uint64_t advance_exact(struct larder__wheel *w, uint64_t now)
{
	uint64_t calls = deadline_calls;
	exact_last_tick = 0;
	cur_now = now;
	larder__wheel_advance(w, now, UINT64_MAX, expire_exact, NULL);
	exact_last_now = now;
	return deadline_calls - calls;
}

/*
 * A level-2 slot staged in chunks while timers of it are cancelled,
 * rescheduled (within the slot, earlier, later), scheduled anew and have
 * their deadline moved without a reschedule, both in the live slot still
 * being staged and in the bank; then time crosses it and everything fires
 * exactly, with no cascade left for advance().
 */
static void test_staged_cascade(void)
{
	enum { N = 2000, EXTRA = 50 };
	static struct timer t[N + EXTRA];
	struct larder__wheel w;
	struct th_rng rng = { 31 };
	const uint64_t S = 4 * 4096; /* the level-2 slot [S, S + 4096) */

	memset(t, 0, sizeof(t));
	give_ids(t, N + EXTRA);
	wheel_init(&w, 2 * 4096 + 100);
	for (int i = 0; i < N; i++) /* not the next level-2 slot yet: the live wheel */
		sched(&w, &t[i], S + th_rng_below(&rng, 4096));
	CHECK_EQ(count_at(&w, t, N, 0, 2), N);
	exact_last_now = w.cur - 1;
	advance_exact(&w, 3 * 4096 + 5); /* now it is the next slot */
	CHECK(check_structure(&w));
	CHECK_EQ(count_at(&w, t, N, 0, 2), N); /* still to be staged */
	CHECK_EQ(larder__wheel_prepare(&w, 100), 100);
	CHECK(check_structure(&w));
	CHECK_EQ(count_at(&w, t, N, 0, 2), N - 100);
	CHECK_LE(larder__wheel_next(&w), S); /* the bank's swap */

	/* Operations on both sides of the staging. */
	int src_cancel = 0, bank_cancel = 0, src_move = 0, bank_early = 0, bank_late = 0;
	for (int i = 0; i < N; i++) {
		unsigned lv;
		int b = where(&w, &t[i], &lv);
		if (b == 0 && src_cancel < 10) {
			larder__wheel_cancel(&w, &t[i].link);
			t[i].scheduled = 0;
			t[i].placed = 0; /* never to be delivered */
			src_cancel++;
		} else if (b == 0 && src_move < 10) {
			sched(&w, &t[i], S + 4000 + (uint64_t)src_move); /* within: to the bank */
			CHECK_EQ(where(&w, &t[i], &lv), 2);
			src_move++;
		} else if (b == 2 && bank_cancel < 10) {
			larder__wheel_cancel(&w, &t[i].link);
			t[i].scheduled = 0;
			t[i].placed = 0;
			bank_cancel++;
		} else if (b == 2 && bank_early < 10) {
			sched(&w, &t[i], 3 * 4096 + 200 + (uint64_t)bank_early); /* cur's slot */
			CHECK_EQ(where(&w, &t[i], &lv), 0);
			CHECK_LT(lv, 2);
			bank_early++;
		} else if (b == 2 && bank_late < 10) {
			sched(&w, &t[i], S + 2 * 4096 + (uint64_t)bank_late); /* a later slot */
			CHECK_EQ(where(&w, &t[i], &lv), 0);
			CHECK_EQ(lv, 2);
			bank_late++;
		}
	}
	CHECK_EQ(src_cancel + src_move + bank_cancel + bank_early + bank_late, 50);
	for (int i = N; i < N + EXTRA; i++) { /* new timers of the staged slot */
		unsigned lv;
		sched(&w, &t[i], S + th_rng_below(&rng, 4096));
		CHECK_EQ(where(&w, &t[i], &lv), 2);
	}
	CHECK(check_structure(&w));
	/* Deadlines moved later in place, while still in the live slot: the
	 * staging reads the new deadline (the test expects delivery there). */
	int moved = 0;
	for (int i = 0; i < N && moved < 5; i++) {
		unsigned lv;
		if (where(&w, &t[i], &lv) == 0 && lv == 2) {
			t[i].deadline = t[i].placed = S + 4096 + 7 + (uint64_t)moved;
			moved++;
		}
	}
	CHECK_EQ(moved, 5);
	uint64_t n, chunks = 0;
	while ((n = larder__wheel_prepare(&w, 37)) != 0) {
		CHECK_LE(n, 37);
		chunks++;
	}
	CHECK_GE(chunks, (N - 100 - 20) / 37);
	CHECK(check_structure(&w));
	CHECK_EQ(count_at(&w, t, N + EXTRA, 0, 2), 10 + 5); /* bank_late + moved: slots 5, 6 */

	/* Cross the slot: prepare() before each advance leaves advance() no
	 * cascade (no deadline callback), and every timer fires on time. */
	uint64_t now = 3 * 4096 + 5, cascades = 0;
	long failed = th_failures();
	while (now < S + 3 * 4096) {
		larder__wheel_prepare(&w, UINT64_MAX);
		now += 1 + th_rng_below(&rng, 40);
		cascades += advance_exact(&w, now);
		if (th_failures() != failed)
			break;
	}
	CHECK_EQ(cascades, 0);
	CHECK(check_structure(&w));
	for (int i = 0; i < N + EXTRA; i++)
		if (!CHECK_EQ(t[i].delivered, t[i].placed != 0))
			break;
	uint64_t cancelled = 0;
	for (int i = 0; i < N + EXTRA; i++)
		cancelled += !t[i].delivered;
	CHECK_EQ(cancelled, 20);
	CHECK_EQ(w.count, 0);
	CHECK(bitmaps_clear(&w));
	larder__wheel_destroy(&w);
}

/*
 * The same slot crossed with prepare() never called, or stopped half way:
 * advance() cascades what is left when time reaches the slot, still exact.
 */
static void test_unstaged_remainder(void)
{
	enum { N = 3000 };
	static struct timer t[N];
	struct th_rng rng = { 5 };
	const uint64_t S = (uint64_t)1 << 24; /* level-4 boundary: levels 1-3 start anew */

	for (int mode = 0; mode < 3; mode++) { /* no staging, too little, all */
		struct larder__wheel w;
		memset(t, 0, sizeof(t));
		give_ids(t, N);
		wheel_init(&w, S - 300000);
		for (int i = 0; i < N; i++)
			sched(&w, &t[i], S - 290000 + th_rng_below(&rng, 600000));
		exact_last_now = w.cur - 1;
		uint64_t now = w.cur, cascades = 0;
		long failed = th_failures();
		for (uint64_t step = 0; now < S + 310000; step++) {
			if (mode == 1 && step % 64 == 0) /* 1 timer per ~2000 ticks */
				larder__wheel_prepare(&w, 1);
			else if (mode == 2)
				larder__wheel_prepare(&w, UINT64_MAX);
			now += 1 + th_rng_below(&rng, 60);
			cascades += advance_exact(&w, now);
			if (th_failures() != failed)
				break;
		}
		if (mode == 2)
			CHECK_EQ(cascades, 0);
		else
			CHECK_GT(cascades, 0);
		for (int i = 0; i < N; i++)
			if (!CHECK_EQ(t[i].delivered, 1))
				break;
		CHECK_EQ(w.count, 0);
		CHECK(bitmaps_clear(&w));
		larder__wheel_destroy(&w);
	}
}

/* The sorted reference: a binary min-heap of (deadline, timer, generation);
 * an item is stale once its timer was scheduled again or cancelled. */
struct ref_item {
	uint64_t deadline;
	uint32_t idx, gen;
};

struct ref_heap {
	struct ref_item *a;
	size_t n, cap;
};

static void ref_push(struct ref_heap *h, struct ref_item it)
{
	if (h->n == h->cap) {
		h->cap = h->cap ? 2 * h->cap : 1024;
		h->a = realloc(h->a, h->cap * sizeof(*h->a));
		REQUIRE(h->a);
	}
	size_t i = h->n++;
	while (i && h->a[(i - 1) / 2].deadline > it.deadline) {
		h->a[i] = h->a[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h->a[i] = it;
}

static struct ref_item ref_pop(struct ref_heap *h)
{
	struct ref_item top = h->a[0], it = h->a[--h->n];
	size_t i = 0;
	for (;;) {
		size_t c = 2 * i + 1;
		if (c >= h->n)
			break;
		if (c + 1 < h->n && h->a[c + 1].deadline < h->a[c].deadline)
			c++;
		if (it.deadline <= h->a[c].deadline)
			break;
		h->a[i] = h->a[c];
		i = c;
	}
	if (h->n)
		h->a[i] = it;
	return top;
}

/*
 * Random schedule/reschedule/cancel (a fifth aimed at the next slot of a
 * random level, i.e. at a bank), prepare() with random budgets (0 to all),
 * advances by small steps, big steps and jumps over whole slots, against the
 * sorted reference: the timers an advance delivers are exactly those the
 * reference pops at its now (every timer once, at the first advance whose
 * now is >= its deadline), in tick order; the structure is walked each step.
 */
static void test_staged_model(void)
{
	enum { N = 3000, STEPS = 4000 };
	static struct timer t[N];
	static uint32_t gen[N];
	struct ref_heap ref = { 0 };
	struct larder__wheel w;
	struct th_rng rng = { 2024 };
	uint64_t now = ((uint64_t)1 << 24) - 5000; /* near a level-4 boundary */
	static const uint64_t budgets[] = { 0, 1, 5, 64, 1000, UINT64_MAX };
	uint64_t staged_steps = 0, remainder_steps = 0; /* both paths were taken */

	memset(t, 0, sizeof(t));
	memset(gen, 0, sizeof(gen));
	give_ids(t, N);
	wheel_init(&w, now + 1);
	exact_last_now = now;
	long failed = th_failures();
	for (int step = 0; step < STEPS && th_failures() == failed; step++) {
		for (int k = 0; k < 10; k++) {
			uint32_t i = (uint32_t)th_rng_below(&rng, N);
			unsigned op = (unsigned)th_rng_below(&rng, 10);
			uint64_t d;
			if (op < 2) {
				larder__wheel_cancel(&w, &t[i].link);
				t[i].scheduled = 0;
				gen[i]++;
				continue;
			}
			if (op < 4) { /* the next slot of level l: bank l's range */
				uint64_t sh = LARDER__WHEEL_BITS *
					      (1 + th_rng_below(&rng, LARDER__WHEEL_LEVELS - 1));
				d = (((w.cur >> sh) + 1) << sh) + th_rng_below(&rng, 1ull << sh);
			} else {
				d = now + 1 + th_rng_below(&rng, 1ull << th_rng_below(&rng, 38));
			}
			sched(&w, &t[i], d);
			gen[i]++;
			ref_push(&ref, (struct ref_item){ d, i, gen[i] });
		}
		larder__wheel_prepare(&w, budgets[th_rng_below(&rng, 6)]);
		if (!check_structure(&w))
			break;
		for (unsigned b = 1; b < LARDER__WHEEL_LEVELS; b++)
			for (unsigned l = 0; l < b; l++)
				staged_steps += w.occupied[w.row[b][l]] != 0;
		unsigned kind = (unsigned)th_rng_below(&rng, 20);
		now += kind == 0 ? th_rng_below(&rng, (uint64_t)1 << 26)
		       : kind < 4 ? th_rng_below(&rng, 20000)
				  : th_rng_below(&rng, 100);
		remainder_steps += advance_exact(&w, now) != 0;
		while (ref.n && ref.a[0].deadline <= now) {
			struct ref_item it = ref_pop(&ref);
			if (it.gen != gen[it.idx])
				continue; /* rescheduled or cancelled since */
			if (!CHECK_EQ(t[it.idx].at, now) || !CHECK(!t[it.idx].scheduled))
				break;
			gen[it.idx]++; /* delivered: later items of it are stale */
		}
		uint64_t count = 0;
		for (int i = 0; i < N; i++)
			count += t[i].scheduled;
		CHECK_EQ(w.count, count);
	}
	CHECK_GT(staged_steps, STEPS / 4); /* bank rows found occupied */
	CHECK_GT(remainder_steps, STEPS / 100);
	for (int i = 0; i < N; i++)
		larder__wheel_cancel(&w, &t[i].link);
	CHECK_EQ(w.count, 0);
	CHECK(bitmaps_clear(&w));
	free(ref.a);
	larder__wheel_destroy(&w);
}

int main(int argc, char **argv)
{
	if (larder__pagedir_init(&dir) != 0)
		return 1;
	static const struct th_test tests[] = {
		TH_TEST(test_level_boundaries), TH_TEST(test_jump),
		TH_TEST(test_heap_handover),    TH_TEST(test_random_model),
		TH_TEST(test_moved_deadline),   TH_TEST(test_max_per_call),
		TH_TEST(test_staged_cascade),   TH_TEST(test_unstaged_remainder),
		TH_TEST(test_staged_model),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
