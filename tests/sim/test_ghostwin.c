/*
 * test_ghostwin.c - evict/ghostwin.c (S3-FIFO's ghost) against a window model:
 * a fingerprint is live iff it was inserted, not removed nor inserted again
 * since, and at most `bound` bytes of inserts (its own included) ago.
 *
 * Checks the invariants of ghostwin.c:
 *   GHOSTWIN-W1  with no pair of buckets ever full (at most 8, then 15 live
 *       fingerprints, the latter in a pair of buckets, so that they spill)
 *       the set is exactly the model at every step: contains(), remove()'s
 *       answer, a key ghosted again, an insert heavier than the bound,
 *       expired slots reused before live ones (`forgotten` stays 0); with
 *       many ghosts and
 *       growth, no phantom (contains() => the model holds it) and at least
 *       99% of the model's ghosts held;
 *       empty() again once every ghost is removed;
 *   GHOSTWIN-W2  a window in units (unit_shift > 0): live within bound + 2^unit_shift;
 *   GHOSTWIN-W3  slots within 4 x the live ghosts of a window (and twice the hint);
 *   GHOSTWIN-W4  growth spread over inserts: at most GHOSTWIN_MIGRATE (2) old buckets
 *       moved per insert, answers right while ghosts are in both arrays, the
 *       old array gone before the next growth;
 *   GHOSTWIN-W5  a bucket's ninth live fingerprint spills to its neighbour, is
 *       found and removed there, and the flag clears once none is left; a
 *       full pair forgets its oldest;
 *   GHOSTWIN-W6  an expired fingerprint never passes for young again, 2^31
 *       units of clock later, neither in a bucket written every window (whose
 *       inserts take its lower slots) nor in one never written again.
 * Seeded from argv[1] (printed), so a failure can be replayed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evict/ghostwin.h"

#include "sim_check.h"

#define POOL 200000

/* The model: fingerprint i + 1's start (the clock before its insert), or -1. */
static int64_t start[POOL];
static uint64_t clock_now;

static uint32_t fp_of(uint32_t i)
{
	return i * 2654435761u + 1; /* distinct and never 0 for i < POOL */
}

static void model_reset(void)
{
	for (uint32_t i = 0; i < POOL; i++)
		start[i] = -1;
	clock_now = 0;
}

static int model_live(uint32_t i, uint64_t bound)
{
	return start[i] >= 0 && clock_now - (uint64_t)start[i] <= bound;
}

static void model_insert(uint32_t i, uint32_t w, uint64_t bound)
{
	if (w > bound) {
		start[i] = -1;
		return;
	}
	start[i] = (int64_t)clock_now;
	clock_now += w;
}

/*
 * GHOSTWIN-W1 exactly: at most `bound` ghosts live (weights >= 1; an
 * insert sees at most bound - 1 others live). Bound 8 fits a bucket; bound
 * 15 needs both buckets of the hint's pair, never grown, so a bucket's
 * ninth spills (GHOSTWIN-W5; before the spill, a full bucket forgot its
 * oldest here).
 */
static void test_window_exact(uint64_t bound)
{
	struct larder__ghostwin g;
	const uint32_t keys = 64;
	CHECK(larder__ghostwin_init(&g, bound, 4) == 0, "init");
	if (bound > 8) /* growth held off: one pair holds them all */
		g.window_end = g.grow_at = UINT64_MAX;
	model_reset();
	CHECK(larder__ghostwin_empty(&g), "empty at first");
	for (int step = 0; step < 200000; step++) {
		uint32_t i = (uint32_t)(rnd() % keys);
		unsigned op = (unsigned)(rnd() % 10);
		if (op < 6) {
			uint32_t w = op == 0 ? (uint32_t)(rnd() % 10) : 1 + (uint32_t)(rnd() % 3);
			if (op == 0)
				w = w == 9 ? (uint32_t)bound + 1 : w; /* over the bound */
			larder__ghostwin_insert(&g, fp_of(i), w);
			model_insert(i, w ? w : 1, bound);
		} else {
			int had = larder__ghostwin_remove(&g, fp_of(i));
			CHECK(had == model_live(i, bound), "step %d: remove(%u) said %d", step, i,
			      had);
			start[i] = -1;
		}
		if (step % 7 == 0)
			for (uint32_t q = 0; q < keys; q++)
				CHECK(larder__ghostwin_contains(&g, fp_of(q)) == model_live(q, bound),
				      "GHOSTWIN-W1: step %d: contains(%u) disagrees", step, q);
	}
	CHECK(g.forgotten == 0, "GHOSTWIN-W1: %llu live ghosts forgotten with at most %llu live",
	      (unsigned long long)g.forgotten, (unsigned long long)bound);
	CHECK(bound <= 8 || g.spilled > 0, "bound %llu: no bucket spilled",
	      (unsigned long long)bound);
	larder__ghostwin_set_bound(&g, 0);
	for (uint32_t q = 0; q < keys; q++)
		CHECK(!larder__ghostwin_contains(&g, fp_of(q)), "set_bound(0) left %u", q);
	larder__ghostwin_destroy(&g);
}

/*
 * Many ghosts from a tiny hint: growths, each checked mid-way (GHOSTWIN-W4),
 * with removals; no phantom, recall of the model's ghosts at least 99%,
 * slots within 4 x the live ghosts (GHOSTWIN-W3).
 */
static void test_growth(void)
{
	struct larder__ghostwin g;
	const uint64_t bound = 40000;
	CHECK(larder__ghostwin_init(&g, bound, 4) == 0, "init");
	model_reset();
	uint64_t growths = 0, mid_checks = 0, last_n = g.nbuckets;
	for (uint32_t step = 0; step < 600000; step++) {
		uint32_t i = (uint32_t)(rnd() % POOL);
		int had_old = g.old != NULL;
		uint64_t moved = g.moved;
		if (rnd() % 8) {
			larder__ghostwin_insert(&g, fp_of(i), 1);
			model_insert(i, 1, bound);
		} else {
			int had = larder__ghostwin_remove(&g, fp_of(i));
			CHECK(!had || model_live(i, bound), "phantom: removed %u", i);
			start[i] = -1;
		}
		if (g.nbuckets != last_n) {
			CHECK(!had_old, "GHOSTWIN-W4: step %u grew before the last growth was moved",
			      step);
			growths++;
			last_n = g.nbuckets;
		} else if (had_old && g.old) {
			CHECK(g.moved - moved <= 2, "GHOSTWIN-W4: %llu buckets moved at once",
			      (unsigned long long)(g.moved - moved));
		}
		if (g.old && step % 97 == 0) { /* both arrays hold ghosts: sample both */
			mid_checks++;
			for (uint32_t q = 0; q < POOL; q += 101)
				CHECK(larder__ghostwin_contains(&g, fp_of(q)) == model_live(q, bound) ||
					      (model_live(q, bound) && g.forgotten),
				      "GHOSTWIN-W4: step %u, contains(%u) wrong mid-growth", step, q);
		}
		if (step % 50000 != 49999)
			continue;
		uint64_t want = 0, have = 0;
		for (uint32_t q = 0; q < POOL; q++) {
			int in = larder__ghostwin_contains(&g, fp_of(q)), m = model_live(q, bound);
			CHECK(!in || m, "GHOSTWIN-W1: phantom %u at step %u", q, step);
			want += (uint64_t)m;
			have += (uint64_t)in;
		}
		CHECK(have * 100 >= want * 99, "GHOSTWIN-W1: recall %llu of %llu at step %u",
		      (unsigned long long)have, (unsigned long long)want, step);
		CHECK(g.nbuckets * 8 <= 4 * want, "GHOSTWIN-W3: %llu slots for %llu ghosts",
		      (unsigned long long)g.nbuckets * 8, (unsigned long long)want);
	}
	CHECK(growths >= 8 && mid_checks >= 20, "growths %llu, mid-growth checks %llu",
	      (unsigned long long)growths, (unsigned long long)mid_checks);
	larder__ghostwin_destroy(&g);
}

/* GHOSTWIN-W2: a bound over 2^24 bytes is counted in units; the edge moves by under one. */
static void test_units(void)
{
	struct larder__ghostwin g;
	const uint64_t bound = (uint64_t)1 << 34;
	const uint32_t w = 1u << 20;
	CHECK(larder__ghostwin_init(&g, bound, 16) == 0, "init");
	CHECK(g.unit_shift > 0, "no units for a bound of 2^34");
	larder__ghostwin_insert(&g, 7, w);
	uint64_t after = 0; /* bytes inserted after fp 7 */
	while (w + after + w <= bound - ((uint64_t)1 << g.unit_shift)) {
		larder__ghostwin_insert(&g, 1000 + (uint32_t)after / w, w);
		after += w;
	}
	CHECK(larder__ghostwin_contains(&g, 7), "GHOSTWIN-W2: 7 gone within the bound");
	while (w + after <= bound + ((uint64_t)1 << g.unit_shift)) {
		larder__ghostwin_insert(&g, 1000 + (uint32_t)after / w, w);
		after += w;
	}
	CHECK(!larder__ghostwin_contains(&g, 7), "GHOSTWIN-W2: 7 live past bound + a unit");
	larder__ghostwin_destroy(&g);
}

/* fp's bucket, recomputed here as ghostwin.c's spread() picks it. */
static unsigned bucket_of(const struct larder__ghostwin *g, uint32_t fp)
{
	return (unsigned)(((uint64_t)fp * 0x9E3779B97F4A7C15ull) >> g->shift);
}

/*
 * A full pair forgets its oldest (GHOSTWIN-W1's exception): growth held
 * off, 64 fingerprints into one pair of buckets, which keeps the newest 16.
 */
static void test_full_pair(void)
{
	struct larder__ghostwin g;
	CHECK(larder__ghostwin_init(&g, 1000, 4) == 0, "init");
	CHECK(g.nbuckets == 2, "hint 4: %llu buckets", (unsigned long long)g.nbuckets);
	g.grow_at = UINT64_MAX;
	for (uint32_t fp = 1; fp <= 64; fp++)
		larder__ghostwin_insert(&g, fp, 1);
	for (uint32_t fp = 1; fp <= 64; fp++)
		CHECK(larder__ghostwin_contains(&g, fp) == (fp > 64 - 16), "fp %u: contains() %d",
		      fp, larder__ghostwin_contains(&g, fp));
	CHECK(g.forgotten == 64 - 16, "forgotten %llu", (unsigned long long)g.forgotten);
	larder__ghostwin_destroy(&g);
}

/*
 * GHOSTWIN-W5 step by step: nine fingerprints of one bucket (of 8, so its
 * neighbour has room) are all held, the ninth in the neighbour, under the
 * bucket's flag; removing it clears the flag; a spilled one that expires
 * is cleared by the next remove that asks the bucket.
 */
static void test_spill(void)
{
	struct larder__ghostwin g;
	uint32_t fps[10];
	unsigned n = 0;
	CHECK(larder__ghostwin_init(&g, 1000, 32) == 0, "init");
	CHECK(g.nbuckets == 8, "hint 32: %llu buckets", (unsigned long long)g.nbuckets);
	for (uint32_t fp = 1; n < 10; fp++)
		if (bucket_of(&g, fp) == 2)
			fps[n++] = fp;
	const struct larder__ghostwin_bucket *home = &g.b[2], *next = &g.b[3];
	for (unsigned i = 0; i < 9; i++)
		larder__ghostwin_insert(&g, fps[i], 1);
	for (unsigned i = 0; i < 9; i++)
		CHECK(larder__ghostwin_contains(&g, fps[i]), "GHOSTWIN-W5: %u of 9 forgotten", i);
	CHECK(g.forgotten == 0 && g.spilled == 1, "forgotten %llu, spilled %llu",
	      (unsigned long long)g.forgotten, (unsigned long long)g.spilled);
	CHECK(larder__ghostwin_spilled(home) && !larder__ghostwin_spilled(next), "flags %u, %u",
	      larder__ghostwin_spilled(home), larder__ghostwin_spilled(next));
	CHECK(larder__ghostwin_match(next, fps[8]), "the ninth is not in the neighbour");
	CHECK(!larder__ghostwin_remove(&g, fps[9]), "remove() of an absent fingerprint said yes");
	CHECK(larder__ghostwin_spilled(home), "flag cleared with the ninth still there");
	CHECK(larder__ghostwin_remove(&g, fps[8]), "the spilled ninth not removed");
	CHECK(!larder__ghostwin_contains(&g, fps[8]), "the ninth still there after remove()");
	CHECK(!larder__ghostwin_spilled(home), "flag set with nothing spilled");
	CHECK(g.used == 8, "used %llu", (unsigned long long)g.used);

	larder__ghostwin_insert(&g, fps[9], 1); /* spills again, then expires */
	CHECK(larder__ghostwin_spilled(home), "no flag after the second spill");
	larder__ghostwin_set_bound(&g, 0);
	CHECK(!larder__ghostwin_contains(&g, fps[9]), "expired but held");
	CHECK(!larder__ghostwin_remove(&g, fps[0]), "remove() found an expired one");
	CHECK(!larder__ghostwin_spilled(home), "flag kept after every spill expired");
	larder__ghostwin_destroy(&g);
}

/*
 * GHOSTWIN-W6: bound 2^24 (one unit a byte), weights of half the bound, so
 * 2^31 units (when a stamp's age, doubled in 32 bits, wraps) pass in 256
 * inserts, 2^32 (where it wrapped before stamps were doubled) in 512.
 * `stale` sits in slot 7 of a bucket whose slots 0-6 are filled
 * first and whose own inserts, two live at most, then take the lowest
 * expired slots; `idle` in a bucket never written again. Neither may be
 * live once expired: before the sweep, both were again after 2^31 units.
 * With set_bound_each the bound is set again before every insert, as a
 * pool's resizes may, so that every window's count is cut short.
 */
static void test_no_wrap(int set_bound_each)
{
	struct larder__ghostwin g;
	const uint64_t bound = (uint64_t)1 << 24;
	uint32_t busy[600], stale = 0, idle = 0;
	unsigned n = 0;
	CHECK(larder__ghostwin_init(&g, bound, 16) == 0, "init");
	CHECK(g.unit_shift == 0 && g.nbuckets == 4, "unit_shift %u, %llu buckets", g.unit_shift,
	      (unsigned long long)g.nbuckets);
	for (uint32_t fp = 1; n < 600 || !stale || !idle; fp += 2) {
		unsigned b = bucket_of(&g, fp);
		if (b == 0 && n < 600)
			busy[n++] = fp;
		else if (b == 0)
			stale = stale ? stale : fp;
		else if (b == 2)
			idle = idle ? idle : fp;
	}
	for (unsigned i = 0; i < 7; i++)
		larder__ghostwin_insert(&g, busy[i], 1);
	larder__ghostwin_insert(&g, stale, 1);
	larder__ghostwin_insert(&g, idle, 1);
	CHECK(g.b[0].fp[7] == stale, "stale is not in slot 7");
	for (unsigned i = 7; i < 600; i++) {
		if (set_bound_each) /* a pool's resizes: no window ever ends by the clock */
			larder__ghostwin_set_bound(&g, bound);
		larder__ghostwin_insert(&g, busy[i], bound / 2);
		/* stale and idle: the last two of the first 9 inserts, of weight 1 */
		int expired = g.clock - 9 > bound;
		CHECK(!expired || !larder__ghostwin_contains(&g, stale),
		      "GHOSTWIN-W6: insert %u, clock 2^24 x %.2f: the expired stale ghost is live",
		      i, (double)g.clock / (double)bound);
		CHECK(!expired || !larder__ghostwin_contains(&g, idle),
		      "GHOSTWIN-W6: insert %u, clock 2^24 x %.2f: the expired idle ghost is live",
		      i, (double)g.clock / (double)bound);
		CHECK(larder__ghostwin_contains(&g, busy[i]), "insert %u not held", i);
	}
	CHECK(g.forgotten == 0, "forgotten %llu", (unsigned long long)g.forgotten);
	larder__ghostwin_destroy(&g);
}

/* empty() (S3-FIFO's batch skips its lookups on it): true again once all are removed. */
static void test_empty(void)
{
	struct larder__ghostwin g;
	CHECK(larder__ghostwin_init(&g, 100, 4) == 0, "init");
	for (uint32_t i = 1; i <= 3; i++)
		larder__ghostwin_insert(&g, i, 10);
	CHECK(!larder__ghostwin_empty(&g), "empty() with three ghosts");
	for (uint32_t i = 1; i <= 3; i++)
		CHECK(larder__ghostwin_remove(&g, i), "remove(%u)", i);
	CHECK(larder__ghostwin_empty(&g), "not empty() after removing all");
	larder__ghostwin_destroy(&g);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261206;
	printf("test_ghostwin seed %llu\n", (unsigned long long)seed);
	rng_state = seed | 1;
	test_empty();
	test_full_pair();
	test_spill();
	test_window_exact(8);
	test_window_exact(15);
	test_units();
	test_no_wrap(0);
	test_no_wrap(1);
	test_growth();
	return sim_check_result();
}
