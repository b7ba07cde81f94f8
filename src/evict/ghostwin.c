/*
 * evict/ghostwin.c - a window of recently evicted fingerprints in buckets
 * of one cache line: S3-FIFO's ghost.
 *
 * What it answers: did this key leave the cache within the last `bound`
 * bytes of departures? S3-FIFO asks nothing else of its ghost (no order,
 * no weights back, no pops), so the ghost needs no FIFO ring and no table
 * beside it (evict/ghost.c's two arrays, three probes and a delete per
 * insert: docs/bench.md, "The ghost").
 *
 * Design. An array of buckets, each one 64-byte line of 8 (fingerprint,
 * stamp) slots; a fingerprint lives in the bucket its spread hash names.
 * `clock` sums the weights of all inserts; a slot's stamp is the clock
 * (in units of 2^unit_shift bytes) when its fingerprint was inserted, and
 * the fingerprint is live while clock - stamp <= window (the bound in
 * units): exactly the ghosts a FIFO bounded by weight would hold, were
 * removals not counted (a FIFO of weight `bound` keeps a ghost until
 * `bound` bytes of ghosts inserted after it and itself have passed it).
 * Expiry costs nothing: an expired slot is the first one an insert reuses,
 * and a sweep empties those no insert reuses before their stamps wrap.
 * An insert writes the fingerprint's own slot if the bucket holds it (a
 * key ghosted again moves to the newest end), else an empty or an expired
 * slot; a bucket whose eight are all live spills the fingerprint to its
 * neighbour (GHOSTWIN-W5). A remove (a ghost hit) empties the slot.
 * Lookup, insert and remove each read one line, its eight slots compared at
 * once (SSE2), and the neighbour's only after a spill. Stamps are kept
 * doubled, so that bit 0 of a bucket's first stamp can be its spill flag
 * without a byte more per bucket.
 *
 * Growth (GHOSTWIN-W3, GHOSTWIN-W4): when the inserts of one window pass
 * half the slots (so the live ghosts would fill buckets past half), the
 * array doubles. A bucket b of the old array splits into buckets 2b and
 * 2b+1 of the new one (the next bit of the spread hash), moved a pair of
 * neighbours at a time, GHOSTWIN_MIGRATE buckets per insert in index order;
 * until b is moved its fingerprints, old and new, stay in b and its
 * neighbour. The live fingerprints homed in b (at most 16, the pair's
 * slots) go to the new pair 2b, 2b+1, so a move never forgets one.
 *
 * Invariants (checked by tests/sim/test_ghostwin.c):
 *   GHOSTWIN-W1. contains(fp) iff fp was inserted, not removed nor inserted again
 *       since, no more than window units of clock ago, and its slot was not
 *       taken by a full pair of buckets (`forgotten` counts those); with
 *       unit_shift 0 and no pair ever holding 16 live, that is exactly the
 *       weight-bounded FIFO above.
 *   GHOSTWIN-W2. The live fingerprints weigh at most bound + 2^unit_shift
 *       (unit_shift is 0 unless bound passes 2^24 bytes, and then the slack
 *       is under 2^-24 of the bound).
 *   GHOSTWIN-W3. Memory: 8 bytes per slot, slots a power of two at least
 *       twice the hint; an array doubles only when one window's inserts pass
 *       half its slots, so it stays within the larger of 4 x the ghosts a
 *       window holds and 4 x the hint (x 1.5 while the old one is being
 *       emptied).
 *   GHOSTWIN-W4. Every call is O(1): one bucket, plus GHOSTWIN_MIGRATE old
 *       buckets moved per insert while growing, plus GHOSTWIN_SWEEP buckets
 *       swept at a sweep's step; a growth ends after
 *       old_n / GHOSTWIN_MIGRATE inserts, a sixteenth of those that
 *       trigger the next one.
 *   GHOSTWIN-W5. Buckets 2k and 2k+1 are neighbours. A fingerprint lives in
 *       its bucket b, or, if all eight of b were live at its insert, in b's
 *       neighbour n (`spilled` counts those); b's spill flag is set while n
 *       may hold a live fingerprint of b's: set by the spill, cleared by a
 *       remove that finds none left there. Lookups read n only while the
 *       flag is set. Both all live: the older of their two oldest goes.
 *       Only slot 0's stamp has bit 0 set, and only as the flag.
 *   GHOSTWIN-W6. No expired stamp is read as live again. Ages are doubled
 *       32-bit differences, so a stamp left 2^31 units would look new; an
 *       insert reuses the lowest expired slot, and an empty one first, so a
 *       bucket written every window can keep an expired slot for good. From
 *       the second window on, a sweep empties the expired slots of every
 *       bucket in turn, GHOSTWIN_SWEEP buckets a step, its steps spaced so
 *       that a sweep takes GHOSTWIN_SWEEP_WINDOWS (8) x the inserts a window
 *       holds at the rate since the last count began (one step an insert
 *       where the array is larger than that allows, slots over 512 x a
 *       window's inserts: a sweep then takes slots / 64 inserts, under 128
 *       windows up to 8,000 x). A slot is then emptied within 9 windows of
 *       its insert while the rate holds, far inside the 128 windows of 2^31
 *       units.
 * Not guaranteed: exactness. Two keys with the same fingerprint (31 bits
 * of the hash from S3-FIFO, larder__ghostwin_fp) are one ghost; a pair of buckets whose 16 slots are all live forgets its
 * oldest (at half load, on average 4 live a bucket, about 2% of buckets
 * hold more than 8 by the Poisson tail, and far fewer pairs more than 16;
 * a spilled fingerprint costs the lookups of its bucket a second line, and
 * its inserts the slow path, until a remove there finds none live); a removal does not lengthen
 * the others' lives (a FIFO bounded by live weight would keep older ghosts a
 * little longer); a window made smaller and then larger again
 * (set_bound) brings back the fingerprints of the gap whose slots were not
 * reused; GHOSTWIN-W6's margin where the windows' inserts change a lot (a
 * sweep paced on a window of many light inserts, then windows of few heavy
 * ones) or the bound is raised more than 14-fold after init (2^31 units are
 * then under 9 windows; 2 of a bound raised 64-fold).
 */
#include "evict/ghostwin.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

#define GHOSTWIN_MIN_BUCKETS 2u
#define GHOSTWIN_MIGRATE 2u      /* old buckets moved per insert: pairs of neighbours */
#define GHOSTWIN_UNITS (1u << 24) /* the largest window in units at init */
#define GHOSTWIN_MAX_WINDOW (1u << 30) /* ages are compared modulo 2^32 */
#define GHOSTWIN_SWEEP 8u         /* buckets swept per step (GHOSTWIN-W6) */
#define GHOSTWIN_SWEEP_WINDOWS 8u /* a sweep's length, in the last window's inserts */

_Static_assert(sizeof(struct larder__ghostwin_bucket) == 64, "a bucket is one cache line");
_Static_assert(GHOSTWIN_MIGRATE % 2 == 0, "a growth moves neighbours together");

static unsigned log2_of(uint64_t p)
{
	unsigned b = 0;
	while (((uint64_t)1 << b) < p)
		b++;
	return b;
}

static struct larder__ghostwin_bucket *new_array(uint64_t n)
{
	struct larder__ghostwin_bucket *b =
		larder__aligned_alloc(64, n * sizeof(struct larder__ghostwin_bucket));
	if (b)
		memset(b, 0, n * sizeof *b);
	return b;
}

static int live(const struct larder__ghostwin *g, uint32_t stamp)
{
	return (uint32_t)(larder__ghostwin_now(g) - stamp) <= g->window;
}

/*
 * The slot whose stamp is oldest at time t: only for a bucket whose eight
 * are all live, so it stays out of line (the matches, empties and expired
 * slots are in ghostwin.h). With SSE2 the eight are compared at once,
 * without a branch per slot (a scan of eight with an age each cost the
 * insert ~150 instructions, the oldest's reduction on every insert ~30:
 * docs/bench.md, "The ghost"). Elsewhere: slot by slot. Both pick the
 * lowest slot of a tie.
 */
#if defined(__SSE2__)
/* The larger of two vectors of ages, lane by lane (biased: signed compares). */
static __m128i max_biased(__m128i a, __m128i b)
{
	__m128i gt = _mm_cmpgt_epi32(a, b);
	return _mm_or_si128(_mm_and_si128(gt, a), _mm_andnot_si128(gt, b));
}

static unsigned oldest_slot(const struct larder__ghostwin_bucket *b, uint32_t t)
{
	__m128i lo, hi;
	larder__ghostwin_biased_ages(b, t, &lo, &hi);
	__m128i m = max_biased(lo, hi);
	m = max_biased(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
	m = max_biased(m, _mm_shuffle_epi32(m, _MM_SHUFFLE(2, 3, 0, 1)));
	unsigned bits = larder__ghostwin_mask(_mm_cmpeq_epi32(lo, m), _mm_cmpeq_epi32(hi, m));
	return (unsigned)__builtin_ctz(bits);
}
#else
static unsigned oldest_slot(const struct larder__ghostwin_bucket *b, uint32_t t)
{
	unsigned pick = 0;
	uint32_t oldest = t - b->stamp[0];
	for (unsigned i = 1; i < LARDER__GHOSTWIN_WAYS; i++) {
		if (t - b->stamp[i] > oldest) {
			oldest = t - b->stamp[i];
			pick = i;
		}
	}
	return pick;
}
#endif

/* fp's neighbour bucket (GHOSTWIN-W5): in the same array as its bucket,
 * since a growth moves neighbours together. */
static struct larder__ghostwin_bucket *neighbour(const struct larder__ghostwin *g, uint32_t fp)
{
	uint64_t h = larder__ghostwin_spread(fp);
	if (g->old) {
		uint64_t ob = h >> (g->shift + 1);
		if (ob >= g->moved)
			return &g->old[ob ^ 1];
	}
	return &g->b[(h >> g->shift) ^ 1];
}

static void set_spilled(struct larder__ghostwin_bucket *b, unsigned on)
{
	b->stamp[0] = (b->stamp[0] & ~LARDER__GHOSTWIN_SPILLED) | on;
}

/* Writes fp with stamp t into slot i, keeping slot 0's flag. */
static void put(struct larder__ghostwin_bucket *b, unsigned i, uint32_t fp, uint32_t t)
{
	b->fp[i] = fp;
	b->stamp[i] = t | (b->stamp[i] & LARDER__GHOSTWIN_SPILLED);
}

/* The slot of live fingerprint fp in b, or -1. */
static int find_live(const struct larder__ghostwin *g, const struct larder__ghostwin_bucket *b,
		     uint32_t fp)
{
	for (unsigned m = larder__ghostwin_match(b, fp); m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctz(m);
		if (live(g, b->stamp[i]))
			return (int)i;
	}
	return -1;
}

/* The inline insert tests one count for both of the slow path's counted
 * tasks: a growth due and a sweep step due. */
static void set_slow_at(struct larder__ghostwin *g)
{
	g->slow_at = g->grow_at < g->sweep_at ? g->grow_at : g->sweep_at;
}

static void set_window(struct larder__ghostwin *g, uint64_t bound)
{
	uint64_t w = bound >> g->unit_shift;
	g->bound = bound;
	g->window = (w > GHOSTWIN_MAX_WINDOW ? GHOSTWIN_MAX_WINDOW : (uint32_t)w) << 1;
}

/*
 * GHOSTWIN-W3: one window's inserts are counted from here (the slow path).
 * GHOSTWIN-W6: the sweep's pace follows the inserts since the last count
 * began, scaled to a window of the bound (set_bound() begins a count too,
 * and a pool may call it more often than a window passes), so that a sweep
 * takes GHOSTWIN_SWEEP_WINDOWS windows' inserts; before the first count
 * ends nothing is old enough to need one.
 */
static __attribute__((noinline)) void new_window(struct larder__ghostwin *g)
{
	uint64_t last = g->inserts - g->mark_inserts, moved = g->clock - g->mark_clock;
	if (last && moved) {
		double per_window = (double)last * (double)g->bound / (double)moved;
		double steps = (double)((g->nbuckets + GHOSTWIN_SWEEP - 1) / GHOSTWIN_SWEEP);
		double every = per_window * GHOSTWIN_SWEEP_WINDOWS / steps;
		g->sweep_every = every < 1 ? 1 : every > 1e18 ? (uint64_t)1e18 : (uint64_t)every;
		if (g->sweep_at > g->inserts + g->sweep_every)
			g->sweep_at = g->inserts + g->sweep_every;
	}
	g->window_end = g->clock + g->bound;
	g->mark_inserts = g->inserts;
	g->mark_clock = g->clock;
	g->grow_at = g->inserts + g->nbuckets * LARDER__GHOSTWIN_WAYS / 2;
	set_slow_at(g);
}

/*
 * GHOSTWIN-W6: empties the expired slots of the next GHOSTWIN_SWEEP buckets
 * of the array, so that no stamp stays in a slot long enough to wrap: an
 * insert reuses the lowest expired slot and prefers an empty one, so
 * without this an expired slot can outlive 2^31 units in a bucket that is
 * written every window. Slot 0 keeps its stamp, and with it the flag.
 */
static __attribute__((noinline)) void sweep(struct larder__ghostwin *g)
{
	uint32_t now = larder__ghostwin_now(g);
	for (unsigned k = 0; k < GHOSTWIN_SWEEP; k++) {
		struct larder__ghostwin_bucket *b = &g->b[g->sweep_next++ & (g->nbuckets - 1)];
		unsigned m =
			larder__ghostwin_expired(b, now, g->window) & ~larder__ghostwin_empties(b);
		for (; m; m &= m - 1) {
			b->fp[__builtin_ctz(m)] = 0;
			g->used--;
		}
	}
	g->sweep_at = g->inserts + g->sweep_every;
	set_slow_at(g);
}

int larder__ghostwin_init(struct larder__ghostwin *g, uint64_t bound, uint64_t slots_hint)
{
	memset(g, 0, sizeof *g);
	uint64_t n = GHOSTWIN_MIN_BUCKETS;
	while (n * LARDER__GHOSTWIN_WAYS < slots_hint * 2 && n < ((uint64_t)1 << 36))
		n <<= 1;
	g->b = new_array(n);
	if (!g->b)
		return -1;
	g->nbuckets = n;
	g->shift = 64 - log2_of(n);
	g->sweep_at = UINT64_MAX;
	while ((bound >> g->unit_shift) > GHOSTWIN_UNITS)
		g->unit_shift++;
	set_window(g, bound);
	new_window(g);
	return 0;
}

void larder__ghostwin_destroy(struct larder__ghostwin *g)
{
	free(g->b);
	free(g->old);
	memset(g, 0, sizeof *g);
}

/*
 * A slot of b for fp at time now, or -1 with all eight live: fp's own slot
 * (a key ghosted again), else an empty one, else any expired one.
 */
static int free_slot(struct larder__ghostwin *g, const struct larder__ghostwin_bucket *b,
		     uint32_t fp, uint32_t now)
{
	unsigned m;
	if ((m = larder__ghostwin_match(b, fp)) != 0 || (m = larder__ghostwin_empties(b)) != 0 ||
	    (m = larder__ghostwin_expired(b, now, g->window)) != 0)
		return (int)__builtin_ctz(m);
	return -1;
}

/*
 * GHOSTWIN-W5: stores fp, stamped t, in its bucket b, else in b's neighbour
 * n with b's flag set, else over the older of the two buckets' oldest. A
 * growth's move passes the stamp a fingerprint had (t may be older than now;
 * of two copies of one fingerprint the newer stays).
 */
static void place(struct larder__ghostwin *g, struct larder__ghostwin_bucket *b,
		  struct larder__ghostwin_bucket *n, uint32_t fp, uint32_t t)
{
	uint32_t now = larder__ghostwin_now(g);
	struct larder__ghostwin_bucket *to = b;
	int i = free_slot(g, b, fp, now);
	if (i < 0) {
		to = n;
		i = free_slot(g, n, fp, now);
		if (i < 0) { /* sixteen live: the oldest goes early */
			unsigned ob = oldest_slot(b, now), on = oldest_slot(n, now);
			g->forgotten++;
			if ((uint32_t)(now - b->stamp[ob]) >= (uint32_t)(now - n->stamp[on]))
				to = b, i = (int)ob;
			else
				i = (int)on;
		}
		if (to == n) {
			set_spilled(b, LARDER__GHOSTWIN_SPILLED);
			g->spilled++;
		}
	}
	if (to->fp[i] == fp && (uint32_t)(now - to->stamp[i]) < (uint32_t)(now - t))
		return; /* a move: this copy is newer */
	if (!to->fp[i])
		g->used++;
	put(to, (unsigned)i, fp, t);
}

/* Moves old pairs of buckets into their four in the new array, live slots
 * only: a fingerprint of old bucket b goes to 2b or 2b+1, whichever of the
 * old pair it was in. */
static __attribute__((noinline)) void migrate(struct larder__ghostwin *g)
{
	for (unsigned k = 0; k < GHOSTWIN_MIGRATE && g->moved < g->old_n; k++) {
		struct larder__ghostwin_bucket *ob = &g->old[g->moved++];
		for (unsigned i = 0; i < LARDER__GHOSTWIN_WAYS; i++) {
			uint32_t fp = ob->fp[i];
			if (!fp)
				continue;
			g->used--;
			if (!live(g, ob->stamp[i]))
				continue;
			uint64_t nb = larder__ghostwin_spread(fp) >> g->shift;
			place(g, &g->b[nb], &g->b[nb ^ 1], fp, ob->stamp[i] & ~LARDER__GHOSTWIN_SPILLED);
		}
	}
	if (g->moved >= g->old_n) {
		free(g->old);
		g->old = NULL;
	}
}

/* GHOSTWIN-W3: doubles the array, one window's inserts having passed half its
 * slots (the slow path; retried at the next insert while a growth is moved). */
static __attribute__((noinline)) void grow(struct larder__ghostwin *g)
{
	if (g->old)
		return;
	struct larder__ghostwin_bucket *b =
		g->nbuckets < ((uint64_t)1 << 36) ? new_array(g->nbuckets * 2) : NULL;
	if (!b) { /* no memory, or the largest: not asked again this window */
		g->grow_at = UINT64_MAX;
		set_slow_at(g);
		return;
	}
	g->old = g->b;
	g->old_n = g->nbuckets;
	g->moved = 0;
	g->b = b;
	g->nbuckets *= 2;
	g->shift--;
	g->grow_at = g->mark_inserts + g->nbuckets * LARDER__GHOSTWIN_WAYS / 2;
	set_slow_at(g);
}

int larder__ghostwin_contains(const struct larder__ghostwin *g, uint32_t fp)
{
	const struct larder__ghostwin_bucket *b = larder__ghostwin_bucket(g, fp);
	return find_live(g, b, fp) >= 0 ||
	       (larder__ghostwin_spilled(b) && find_live(g, neighbour(g, fp), fp) >= 0);
}

/* GHOSTWIN-W5: whether n holds a live fingerprint whose bucket is b. */
static int holds_spill(const struct larder__ghostwin *g, const struct larder__ghostwin_bucket *b,
		       const struct larder__ghostwin_bucket *n)
{
	for (unsigned i = 0; i < LARDER__GHOSTWIN_WAYS; i++)
		if (n->fp[i] && live(g, n->stamp[i]) && larder__ghostwin_bucket(g, n->fp[i]) == b)
			return 1;
	return 0;
}

int larder__ghostwin_remove_from(struct larder__ghostwin *g, struct larder__ghostwin_bucket *b,
				 uint32_t fp)
{
	int was = 0, i = find_live(g, b, fp);
	if (i >= 0) {
		b->fp[i] = 0;
		g->used--;
		was = 1;
	}
	if (!larder__ghostwin_spilled(b))
		return was;
	/* Every copy in the neighbour goes too (fp inserted again while one
	 * spilled copy lived went to b), expired ones with them. */
	struct larder__ghostwin_bucket *n = neighbour(g, fp);
	for (unsigned m = larder__ghostwin_match(n, fp); m; m &= m - 1) {
		unsigned j = (unsigned)__builtin_ctz(m);
		was |= live(g, n->stamp[j]);
		n->fp[j] = 0;
		g->used--;
	}
	if (!holds_spill(g, b, n))
		set_spilled(b, 0);
	return was;
}

void larder__ghostwin_insert_slow(struct larder__ghostwin *g, uint32_t fp, uint64_t weight)
{
	if (weight == 0)
		weight = 1;
	if (weight > g->bound) { /* never live: forget an older one too */
		larder__ghostwin_remove(g, fp);
		return;
	}
	if (g->old)
		migrate(g);
	if (g->clock > g->window_end)
		new_window(g);
	if (g->inserts > g->grow_at)
		grow(g);
	if (g->inserts > g->sweep_at)
		sweep(g);
	place(g, larder__ghostwin_bucket(g, fp), neighbour(g, fp), fp, larder__ghostwin_now(g));
	g->clock += weight;
	g->inserts++;
}

void larder__ghostwin_set_bound(struct larder__ghostwin *g, uint64_t bound)
{
	set_window(g, bound);
	new_window(g);
}
