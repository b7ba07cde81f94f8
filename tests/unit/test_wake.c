/*
 * test_wake.c - when a writer wakes the maintainer (larder__maint_wake).
 *
 * The decision is judged on its own, without a maintainer thread: a cache
 * object whose sleep word the test sets, and a handle whose ring positions
 * the test sets, so nothing depends on timing.
 *
 *   half full     the owner's half-full check refreshes a stale copy of the
 *                 maintainer's tail before it says yes: a ring the
 *                 maintainer has drained is not half full, however many
 *                 events went through it (a stale tail used to make every
 *                 other post wake the maintainer);
 *   decisions     awake: nobody wakes it; idle: every post wakes it; window:
 *                 only a half-full ring; lazy: a half-full ring, or an entry
 *                 due before the lazy sleep ends (WAKE-W4), not one due then
 *                 or later, nor one without a deadline; without a post
 *                 (a waiting writer, memory short, a setting): any sleep;
 *   overwrites    a half-full ring whose latest event is an overwrite wakes
 *                 neither sleep until LARDER__WAKE_EVENTS are unread, ring
 *                 and spill together, less what the maintainer took; the
 *                 latest event is found in the spill when it went there.
 */
#include <stdlib.h>
#include <string.h>

#include "core/cache.h"
#include "harness.h"
#include "maint/events.h"
#include "maint/maintainer.h"

static void *zeroed(size_t size)
{
	size_t rounded = (size + 63) / 64 * 64;
	void *p = aligned_alloc(64, rounded);
	if (p)
		memset(p, 0, rounded);
	return p;
}

/* The ring holds `unread` events: `posted` in all, the maintainer's tail at
 * posted - unread, and the owner's copy of that tail `stale_by` behind. */
static void set_ring(struct larder__handle *h, uint64_t posted, uint64_t unread,
		     uint64_t stale_by)
{
	atomic_store_explicit(&h->ev_head, posted, LARDER__RELAXED);
	atomic_store_explicit(&h->ev_tail, posted - unread, LARDER__RELAXED);
	h->ev_tail_seen = posted - unread - stale_by;
}

static void test_half_full_refreshes_tail(void)
{
	struct larder__handle *h = zeroed(sizeof(*h));
	REQUIRE(h != NULL);
	set_ring(h, 1000, 0, 1000); /* all drained; the owner last looked at 0 */
	CHECK(!larder__events_half_full(h));
	CHECK_EQ(h->ev_tail_seen, 1000);
	set_ring(h, 1000, LARDER__EVENT_RING / 2 - 1, 300);
	CHECK(!larder__events_half_full(h));
	set_ring(h, 1000, LARDER__EVENT_RING / 2, 0);
	CHECK(larder__events_half_full(h));
	set_ring(h, 1000, LARDER__EVENT_RING / 2, 200);
	CHECK(larder__events_half_full(h));
	CHECK_EQ(h->ev_tail_seen, 1000 - LARDER__EVENT_RING / 2);
	free(h);
}

/* The latest of the `posted` events in the ring is of this kind. */
static void set_last_kind(struct larder__handle *h, uint64_t posted, unsigned kind)
{
	h->ev[(posted - 1) % LARDER__EVENT_RING].kind = (uint16_t)kind;
}

/* `spilled` events went to the spill, the maintainer took `taken` of them,
 * and the latest post (posting number seq) went there too, of this kind. */
static void set_spill(struct larder__handle *h, struct larder__spill *chunk, uint64_t spilled,
		      uint64_t taken, uint32_t seq, unsigned kind)
{
	atomic_store_explicit(&h->spilled, spilled, LARDER__RELAXED);
	atomic_store_explicit(&h->spill_taken, taken, LARDER__RELAXED);
	h->spill_tail = chunk;
	h->spill_tail_n = 1;
	chunk->ev[0].seq = seq;
	chunk->ev[0].kind = (uint16_t)kind;
}

/* Whether a wake from this state, for this post, wakes the maintainer. */
static int wakes(struct larder__shard *c, uint32_t state, uint64_t wake_at,
		 struct larder__handle *h, uint64_t due)
{
	atomic_store_explicit(&c->maint_wake_at, wake_at, LARDER__RELAXED);
	atomic_store_explicit(&c->maint_sleeping, state, LARDER__RELAXED);
	larder__maint_wake(c, h, due);
	uint32_t after = atomic_load_explicit(&c->maint_sleeping, LARDER__RELAXED);
	if (after != MAINT_AWAKE && after != state)
		return -1; /* neither woken nor left alone */
	return state != MAINT_AWAKE && after == MAINT_AWAKE;
}

static void test_wake_decisions(void)
{
	struct larder__shard *c = zeroed(sizeof(*c));
	struct larder__handle *h = zeroed(sizeof(*h));
	REQUIRE(c != NULL && h != NULL);
	const uint64_t none = UINT64_MAX, at = 5000;

	set_ring(h, 100, 1, 0); /* a trickle: the event just posted */
	CHECK_EQ(wakes(c, MAINT_AWAKE, at, h, 0), 0);
	CHECK_EQ(wakes(c, MAINT_IDLE, at, h, none), 1);
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 0);
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, 10), 0); /* the window bounds lateness */
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, at), 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, at + 1), 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, at - 1), 1); /* WAKE-W4 */
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, 0), 1);      /* apply at once (a clear) */

	set_ring(h, 1000, LARDER__EVENT_RING / 2, 0); /* half full */
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 1);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 1);

	set_ring(h, 1000, 3, 900); /* drained long ago, the owner's copy stale */
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 0);

	/* Without a post: from any sleep. */
	CHECK_EQ(wakes(c, MAINT_IDLE, at, NULL, 0), 1);
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, NULL, 0), 1);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, NULL, 0), 1);
	CHECK_EQ(wakes(c, MAINT_AWAKE, at, NULL, 0), 0);
	free(h);
	free(c);
}

static void test_overwrites_wait(void)
{
	struct larder__shard *c = zeroed(sizeof(*c));
	struct larder__handle *h = zeroed(sizeof(*h));
	struct larder__spill *chunk = zeroed(sizeof(*chunk));
	REQUIRE(c != NULL && h != NULL && chunk != NULL);
	const uint64_t none = UINT64_MAX, at = 5000;
	const uint64_t full = LARDER__EVENT_RING, posted = 10000;

	set_ring(h, posted, full / 2, 0);
	set_last_kind(h, posted, LARDER__EV_INSERT); /* an insert: half full wakes */
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 1);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 1);
	set_last_kind(h, posted, LARDER__EV_REPLACE); /* an overwrite: it waits */
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, at - 1), 1); /* WAKE-W4 still */
	CHECK_EQ(wakes(c, MAINT_IDLE, at, h, none), 1);
	set_ring(h, posted, full, 0); /* full, nothing spilled yet */
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 0);

	/* The ring full and the latest overwrites in the spill: the count
	 * reaches the bound with the spill's unread events. */
	uint64_t spilled = 5000, below = LARDER__WAKE_EVENTS - full - 1;
	set_spill(h, chunk, spilled, spilled - below, (uint32_t)(posted + spilled - 1),
		  LARDER__EV_REPLACE);
	set_last_kind(h, posted, LARDER__EV_INSERT); /* an older post, in the ring */
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 0);
	set_spill(h, chunk, spilled, spilled - below - 1, (uint32_t)(posted + spilled - 1),
		  LARDER__EV_REPLACE);
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 1);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 1);
	/* Below the bound, an insert as the latest post (in the spill) wakes. */
	set_spill(h, chunk, spilled, spilled - below, (uint32_t)(posted + spilled - 1),
		  LARDER__EV_INSERT);
	set_last_kind(h, posted, LARDER__EV_REPLACE);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 1);
	/* The spill's chunk holds an older event: the ring's latest counts. */
	set_spill(h, chunk, spilled, spilled - below, (uint32_t)(posted + spilled - 2),
		  LARDER__EV_INSERT);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 0);
	free(chunk);
	free(h);
	free(c);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_half_full_refreshes_tail),
		TH_TEST(test_wake_decisions),
		TH_TEST(test_overwrites_wait),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
