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
 *                 and spill together, less what the maintainer took; after
 *                 a no it looks again only when that many could be unread,
 *                 and then wakes it;
 *   lazy length   with a maintainer thread and an injected clock that does
 *                 not move: after one put, the lazy sleep of the key's
 *                 shard publishes its end (maint_wake_at) 2 ms per shard
 *                 ahead of the clock, at most 8 ms (K shards together wake
 *                 about as often as one, maint/maintainer.c: lazy_ms).
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

/* `spilled` events went to the spill and the maintainer took `taken` of them. */
static void set_spill(struct larder__handle *h, uint64_t spilled, uint64_t taken)
{
	atomic_store_explicit(&h->spilled, spilled, LARDER__RELAXED);
	atomic_store_explicit(&h->spill_taken, taken, LARDER__RELAXED);
}

static void test_overwrites_wait(void)
{
	struct larder__shard *c = zeroed(sizeof(*c));
	struct larder__handle *h = zeroed(sizeof(*h));
	REQUIRE(c != NULL && h != NULL);
	const uint64_t none = UINT64_MAX, at = 5000;
	const uint64_t full = LARDER__EVENT_RING, posted = 10000;

	/* The post notes whether it was an overwrite. */
	larder__events_post(h, LARDER__EV_REPLACE, LARDER_CAUSE_REPLACED, LARDER__EV_NO_CLASS, NULL,
			    NULL, 0);
	CHECK_EQ(h->last_overwrite, 1);
	larder__events_post(h, LARDER__EV_INSERT, 0, LARDER__EV_NO_CLASS, NULL, NULL, 0);
	CHECK_EQ(h->last_overwrite, 0);

	set_ring(h, posted, full / 2, 0);
	h->last_overwrite = 0; /* an insert: half full wakes */
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 1);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 1);
	h->last_overwrite = 1; /* an overwrite: it waits */
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, at - 1), 1); /* WAKE-W4 still */
	CHECK_EQ(wakes(c, MAINT_IDLE, at, h, none), 1);
	h->wake_recheck = 0;
	set_ring(h, posted, full, 0); /* full, nothing spilled yet */
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 0);

	/* The ring full and overwrites in the spill: the count reaches the
	 * bound with the spill's unread events, not with those taken. */
	uint64_t spilled = 5000, below = LARDER__WAKE_EVENTS - full - 1;
	h->wake_recheck = 0;
	set_spill(h, spilled, spilled - below);
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 0);
	h->wake_recheck = 0;
	set_spill(h, spilled, spilled - below - 1);
	CHECK_EQ(wakes(c, MAINT_WINDOW, at, h, none), 1);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 1);
	/* Below the bound, an insert as the latest post wakes. */
	set_spill(h, spilled, spilled - below);
	h->last_overwrite = 0;
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 1);

	/* A no at 300 unread, then one post at a time, to the ring and once
	 * it is full to the spill (nothing taken meanwhile): the post that
	 * makes LARDER__WAKE_EVENTS unread is the first that wakes it. */
	h->last_overwrite = 1;
	h->wake_recheck = 0;
	set_ring(h, posted, 300, 0);
	set_spill(h, 0, 0);
	CHECK_EQ(wakes(c, MAINT_LAZY, at, h, none), 0);
	uint64_t head = posted, tail = posted - 300, spills = 0, first_wake = 0;
	for (uint64_t n = 1; n <= LARDER__WAKE_EVENTS && !first_wake; n++) {
		if (head - tail < full)
			head++;
		else
			spills++;
		set_ring(h, head, head - tail, 0);
		set_spill(h, spills, 0);
		if (wakes(c, MAINT_LAZY, at, h, none))
			first_wake = 300 + n;
	}
	CHECK_EQ(first_wake, LARDER__WAKE_EVENTS);
	free(h);
	free(c);
}

static struct th_clock lazy_clock;
static larder *lazy_cache;

/* Some shard has published the end of a lazy sleep. */
static int lazy_published(void *ctx)
{
	(void)ctx;
	for (unsigned i = 0; i < lazy_cache->shard_count; i++)
		/* Relaxed: the value is re-read by the check; the wait is a hang guard. */
		if (atomic_load_explicit(&lazy_cache->shard[i].maint_wake_at, LARDER__RELAXED))
			return 1;
	return 0;
}

static void test_lazy_sleep_length(void)
{
	static const struct {
		unsigned shards;
		uint64_t lazy_ms;
	} cases[] = { { 1, 2 }, { 4, 8 }, { 8, 8 } };
	const uint64_t t0 = 1000000;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		larder_config *config = th_config(4u << 20);
		REQUIRE(config != NULL);
		th_clock_init(&lazy_clock, t0);
		CHECK_RC(larder_config_set_clock(config, th_clock_fn, &lazy_clock), LARDER_OK);
		CHECK_RC(larder_config_set_shards(config, cases[i].shards), LARDER_OK);
		lazy_cache = th_open(config);
		REQUIRE(lazy_cache != NULL);
		/* One insert: a trickle, so its shard's next pass sleeps lazily. */
		CHECK_RC(larder_put(lazy_cache, "k", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
		CHECK(th_wait_until(lazy_published, NULL, 10000u));
		uint64_t latest = 0;
		for (unsigned k = 0; k < lazy_cache->shard_count; k++) {
			uint64_t at = atomic_load_explicit(&lazy_cache->shard[k].maint_wake_at,
							   LARDER__RELAXED);
			latest = at > latest ? at : latest;
		}
		CHECK_EQ(latest, t0 + cases[i].lazy_ms);
		larder_close(lazy_cache);
	}
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_half_full_refreshes_tail),
		TH_TEST(test_wake_decisions),
		TH_TEST(test_overwrites_wait),
		TH_TEST(test_lazy_sleep_length),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
