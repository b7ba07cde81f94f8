/*
 * tests/unit/test_wheel.c - the timing wheel alone (src/ttl/wheel.c).
 *
 * Timers are small structs with a link and a deadline, named by ids from a
 * directory (mem/pagedir.h) as entries are; the expire callback records when
 * each was delivered and checks the id it is given. Checked, against the invariants W1-W6 of
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
 *     reschedule, and an expire callback may schedule again.
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

static uint64_t deadline_fn(void *ctx, struct larder__wheel_link *l)
{
	(void)ctx;
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
	for (unsigned l = 0; l < LARDER__WHEEL_LEVELS; l++)
		if (w->occupied[l])
			return 0;
	return w->heap_len == 0 && w->list[LARDER__WHEEL_LIST_FAR] == 0 &&
	       w->list[LARDER__WHEEL_LIST_DUE] == 0;
}

/* Every boundary: a timer at base + off is not delivered at base + off - 1,
 * and is at base + off, alone. */
static void check_boundaries(uint64_t base)
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
		CHECK_EQ(advance(&w, d - 1), 0);
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
	check_boundaries(0);
	check_boundaries(1);
	check_boundaries(12345);
	check_boundaries(((uint64_t)1 << 36) - 7); /* the span's block boundary is near */
	check_boundaries(((uint64_t)1 << 42) + 4095);
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

int main(int argc, char **argv)
{
	if (larder__pagedir_init(&dir) != 0)
		return 1;
	static const struct th_test tests[] = {
		TH_TEST(test_level_boundaries), TH_TEST(test_jump),
		TH_TEST(test_heap_handover),    TH_TEST(test_random_model),
		TH_TEST(test_moved_deadline),   TH_TEST(test_max_per_call),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
