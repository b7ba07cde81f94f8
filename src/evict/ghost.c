/*
 * evict/ghost.c - a bounded FIFO of 32-bit fingerprints with O(1) membership.
 *
 * Design. Two arrays:
 *   - a ring of (fingerprint, weight) in insertion order, addressed by a
 *     64-bit sequence number (slot = seq & ring_mask), oldest at head;
 *   - an open-addressing table (linear probing, backward-shift deletion) that
 *     maps a live fingerprint to the sequence of its latest ring slot.
 * A fingerprint is live iff the table holds it. Removing one (a ghost hit)
 * deletes only its table slot; its ring slot goes stale and is skipped when it
 * reaches the head, which is what makes removal O(1) without a linked list.
 * When the head slot expires, the table entry is deleted only if it still
 * points at that very slot (the key may have been re-inserted since).
 *
 * Growth is incremental: a full array gets a successor twice its size and the
 * old one is emptied GHOST_MIGRATE slots per insert, so no call copies more
 * than a constant number of slots.
 *   - Ring: sequences from ring_split (the tail when it grew) on live in the
 *     new ring; those in [ring_moved, ring_split) are still in the old one and
 *     are copied oldest first. Either ring is addressed by seq & its mask.
 *   - Table: lookups probe the new table, then the old. Slots of the old table
 *     are moved in index order; a moved or deleted old slot becomes a
 *     tombstone (nothing in the old table ever shifts, so the move cursor
 *     cannot be overtaken), and the old table's probe runs keep their ends.
 *     Inserts go to the new table only; a fingerprint is in one table at most.
 *
 * Invariants (checked by tests/sim/test_ghost.c):
 *   GHOST-G1. live_count / live_weight are the number / summed weight of the tables'
 *       fingerprints; each has exactly one ring slot in [head, tail) whose
 *       sequence the table records.
 *   GHOST-G2. After insert() and set_bound(), live_weight <= bound (a single ghost
 *       heavier than the bound is not kept).
 *   GHOST-G3. Memory: the table is at most half full after growth; the ring grows
 *       only while at least half its slots are live, so both stay within a
 *       constant factor of the live fingerprints, which GHOST-G2 bounds (times 1.5
 *       while an old array is being emptied).
 *   GHOST-G4. Every call does O(1) work apart from the probes of the tables: an
 *       insert moves at most GHOST_MIGRATE ring slots and scans at most
 *       GHOST_MIGRATE old table slots; expiry pops at most as many ring slots
 *       as earlier inserts pushed (amortised O(1)). A growth is finished long
 *       before the new array fills (after a quarter of its slots' inserts).
 *   GHOST-G5. insert() leaves the set as remove(), then the store would,
 *       whichever path it takes: its one-probe path (store_slot) is taken only
 *       where the remove and make_room() change nothing, so the ghosts, their
 *       order and which of them expire are the same (S3-FIFO's and ARC's hits
 *       do not move; docs/results/bench-history.md, "The maintainer's eviction").
 * Not guaranteed: exactness. Two keys with the same 32-bit fingerprint are
 * one ghost (a false positive rate of about live_count / 2^32 per lookup),
 * and when the ring cannot grow (out of memory, or mostly stale) the oldest
 * live ghost may be forgotten a little early.
 */
#include "evict/ghost.h"

#include <stdlib.h>
#include <string.h>

#include "core/alloc.h"

#define GHOST_MIN_SLOTS 16u
#define GHOST_MIGRATE 4u /* old slots moved (ring) and scanned (table) per insert */

static uint64_t pow2_at_least(uint64_t n)
{
	uint64_t p = GHOST_MIN_SLOTS;
	while (p < n && p < ((uint64_t)1 << 40))
		p <<= 1;
	return p;
}

static unsigned log2_of(uint64_t p)
{
	unsigned b = 0;
	while (((uint64_t)1 << b) < p)
		b++;
	return b;
}

/* ---- ring ------------------------------------------------------------------ */

static int in_old_ring(const struct larder__ghost *g, uint64_t seq)
{
	return g->old_fp && seq >= g->ring_moved && seq < g->ring_split;
}

static uint32_t ring_fp_at(const struct larder__ghost *g, uint64_t seq)
{
	return in_old_ring(g, seq) ? g->old_fp[seq & g->old_ring_mask]
				   : g->ring_fp[seq & g->ring_mask];
}

static uint32_t ring_w_at(const struct larder__ghost *g, uint64_t seq)
{
	return in_old_ring(g, seq) ? g->old_w[seq & g->old_ring_mask]
				   : g->ring_w[seq & g->ring_mask];
}

/* The full sequence of a live slot from the 32 bits the table keeps
 * (tail - head < 2^32 always, the ring being smaller than that). */
static uint64_t full_seq(const struct larder__ghost *g, uint32_t seq)
{
	return g->head + (uint32_t)(seq - (uint32_t)g->head);
}

static int ring_grow(struct larder__ghost *g)
{
	if (g->old_fp)
		return -1; /* the last growth is still being copied (never, by GHOST-G4) */
	uint64_t n = (g->ring_mask + 1) * 2;
	uint32_t *fp = larder__malloc(n * sizeof *fp);
	uint32_t *w = larder__malloc(n * sizeof *w);
	if (!fp || !w) {
		free(fp);
		free(w);
		return -1;
	}
	g->old_fp = g->ring_fp;
	g->old_w = g->ring_w;
	g->old_ring_mask = g->ring_mask;
	g->ring_moved = g->head;
	g->ring_split = g->tail;
	g->ring_fp = fp;
	g->ring_w = w;
	g->ring_mask = n - 1;
	return 0;
}

static void ring_migrate(struct larder__ghost *g)
{
	if (g->ring_moved < g->head)
		g->ring_moved = g->head; /* popped while still in the old ring */
	for (unsigned k = 0; k < GHOST_MIGRATE && g->ring_moved < g->ring_split; k++) {
		uint64_t s = g->ring_moved++;
		g->ring_fp[s & g->ring_mask] = g->old_fp[s & g->old_ring_mask];
		g->ring_w[s & g->ring_mask] = g->old_w[s & g->old_ring_mask];
	}
	if (g->ring_moved >= g->ring_split) {
		free(g->old_fp);
		free(g->old_w);
		g->old_fp = g->old_w = NULL;
	}
}

/* ---- table ----------------------------------------------------------------- */

static uint64_t home_of(uint32_t fp, unsigned shift)
{
	/* fp is already a hash; the multiply spreads its low bits over the top. */
	return ((uint64_t)fp * 0x9E3779B97F4A7C15ull) >> shift;
}

/* fp's slot in the new table, or NULL. */
static struct larder__ghost_slot *new_find(const struct larder__ghost *g, uint32_t fp)
{
	for (uint64_t i = home_of(fp, g->tab_shift);; i = (i + 1) & g->tab_mask) {
		uint32_t f = g->tab[i].fp;
		if (f == fp)
			return &g->tab[i];
		if (f == 0)
			return NULL;
	}
}

/* fp's slot in the old table, or NULL; tombstones (fp 0, seq 1) do not end a probe. */
static struct larder__ghost_slot *old_find(const struct larder__ghost *g, uint32_t fp)
{
	for (uint64_t i = home_of(fp, g->old_tab_shift);; i = (i + 1) & g->old_tab_mask) {
		const struct larder__ghost_slot *t = &g->old_tab[i];
		if (t->fp == fp)
			return &g->old_tab[i];
		if (t->fp == 0 && t->seq == 0)
			return NULL;
	}
}

static struct larder__ghost_slot *tab_find(const struct larder__ghost *g, uint32_t fp)
{
	struct larder__ghost_slot *t = new_find(g, fp);
	return (!t && g->old_tab) ? old_find(g, fp) : t;
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void new_delete_at(struct larder__ghost *g, uint64_t i)
{
	uint64_t j = i;
	for (;;) {
		j = (j + 1) & g->tab_mask;
		if (g->tab[j].fp == 0)
			break;
		uint64_t home = home_of(g->tab[j].fp, g->tab_shift);
		/* Move j back to i unless its home lies cyclically in (i, j]. */
		int in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
		if (!in_range) {
			g->tab[i] = g->tab[j];
			i = j;
		}
	}
	g->tab[i].fp = 0;
	g->tab[i].seq = 0;
}

static void tab_delete(struct larder__ghost *g, struct larder__ghost_slot *t)
{
	if (g->old_tab && t >= g->old_tab && t <= g->old_tab + g->old_tab_mask) {
		t->fp = 0;
		t->seq = 1; /* a tombstone */
	} else {
		new_delete_at(g, (uint64_t)(t - g->tab));
	}
}

static void tab_store(struct larder__ghost *g, uint32_t fp, uint32_t seq)
{
	uint64_t i = home_of(fp, g->tab_shift);
	while (g->tab[i].fp != 0)
		i = (i + 1) & g->tab_mask;
	g->tab[i].fp = fp;
	g->tab[i].seq = seq;
}

static int tab_grow(struct larder__ghost *g)
{
	if (g->old_tab)
		return -1; /* the last growth is still being moved (never, by GHOST-G4) */
	uint64_t n = (g->tab_mask + 1) * 2;
	struct larder__ghost_slot *t = larder__calloc(n, sizeof *t);
	if (!t)
		return -1;
	g->old_tab = g->tab;
	g->old_tab_mask = g->tab_mask;
	g->old_tab_shift = g->tab_shift;
	g->tab_moved = 0;
	g->tab = t;
	g->tab_mask = n - 1;
	g->tab_shift = 64 - log2_of(n);
	return 0;
}

static void tab_migrate(struct larder__ghost *g)
{
	for (unsigned k = 0; k < GHOST_MIGRATE && g->tab_moved <= g->old_tab_mask; k++) {
		struct larder__ghost_slot *t = &g->old_tab[g->tab_moved++];
		if (t->fp) {
			tab_store(g, t->fp, t->seq);
			t->fp = 0;
			t->seq = 1;
		}
	}
	if (g->tab_moved > g->old_tab_mask) {
		free(g->old_tab);
		g->old_tab = NULL;
	}
}

/* ---- the set --------------------------------------------------------------- */

int larder__ghost_init(struct larder__ghost *g, uint64_t bound, uint64_t slots_hint)
{
	memset(g, 0, sizeof *g);
	uint64_t rn = pow2_at_least(slots_hint);
	uint64_t tn = pow2_at_least(slots_hint * 2);
	g->ring_fp = larder__malloc(rn * sizeof *g->ring_fp);
	g->ring_w = larder__malloc(rn * sizeof *g->ring_w);
	g->tab = larder__calloc(tn, sizeof *g->tab);
	if (!g->ring_fp || !g->ring_w || !g->tab) {
		larder__ghost_destroy(g);
		return -1;
	}
	g->ring_mask = rn - 1;
	g->tab_mask = tn - 1;
	g->tab_shift = 64 - log2_of(tn);
	g->bound = bound;
	return 0;
}

void larder__ghost_destroy(struct larder__ghost *g)
{
	free(g->ring_fp);
	free(g->ring_w);
	free(g->tab);
	free(g->old_fp);
	free(g->old_w);
	free(g->old_tab);
	memset(g, 0, sizeof *g);
}

/* Pops the head slot; returns the weight it took out of the live set (0 if stale). */
static uint32_t pop_head(struct larder__ghost *g)
{
	uint64_t s = g->head;
	uint32_t fp = ring_fp_at(g, s), w = ring_w_at(g, s);
	g->head++;
	struct larder__ghost_slot *t = tab_find(g, fp);
	if (!t || t->seq != (uint32_t)s)
		return 0; /* removed or re-inserted since: a stale slot */
	tab_delete(g, t);
	g->live_count--;
	g->live_weight -= w;
	return w;
}

int larder__ghost_contains(const struct larder__ghost *g, uint32_t fp)
{
	return tab_find(g, fp) != NULL;
}

uint32_t larder__ghost_remove(struct larder__ghost *g, uint32_t fp)
{
	/* Every insert of S3-FIFO asks; until the first eviction (a cache
	 * filling up, or loading a snapshot) the set is empty (GHOST-G1), and
	 * the probe of a table sized for the expected entries is a cache miss
	 * per insert (a load's profile: docs/persistence.md). */
	if (!g->live_count)
		return 0;
	struct larder__ghost_slot *t = tab_find(g, fp);
	if (!t)
		return 0;
	uint32_t w = ring_w_at(g, full_seq(g, t->seq));
	tab_delete(g, t);
	g->live_count--;
	g->live_weight -= w;
	return w;
}
uint32_t larder__ghost_pop_oldest(struct larder__ghost *g)
{
	while (g->head != g->tail) {
		uint32_t w = pop_head(g);
		if (w)
			return w;
	}
	return 0;
}

static void expire_to(struct larder__ghost *g, uint64_t bound)
{
	while (g->live_weight > bound && g->head != g->tail)
		pop_head(g);
}

void larder__ghost_set_bound(struct larder__ghost *g, uint64_t bound)
{
	g->bound = bound;
	expire_to(g, bound);
}

/* make_room()'s triggers, one each (GHOST-G5 reads them all at once). */
static int ring_full(const struct larder__ghost *g)
{
	return g->tail - g->head == g->ring_mask + 1;
}

static int tab_due(const struct larder__ghost *g)
{
	return (g->live_count + 1) * 2 > g->tab_mask + 1;
}

/* Whether make_room() would do anything: a growth being moved, the ring
 * full or the table due to grow. */
static int make_room_needed(const struct larder__ghost *g)
{
	return g->old_fp || g->old_tab || ring_full(g) || tab_due(g);
}

/* Makes room for one more ring slot and one more table entry, and moves on any growth. */
static void make_room(struct larder__ghost *g)
{
	if (g->old_fp)
		ring_migrate(g);
	if (g->old_tab)
		tab_migrate(g);
	if (ring_full(g)) {
		if (g->live_count * 2 < g->ring_mask + 1 || ring_grow(g) != 0)
			pop_head(g); /* mostly stale (or no memory): recycle the oldest */
	}
	if (tab_due(g) && tab_grow(g) != 0) {
		/* No memory: keep the table under 3/4 full by forgetting the oldest. */
		while ((g->live_count + 1) * 4 > (g->tab_mask + 1) * 3 && g->live_count)
			larder__ghost_pop_oldest(g);
	}
}

/*
 * The slot where insert() would store fp, when the whole insert before the
 * store would change nothing but the store: make_room() would do nothing
 * (make_room_needed(), the triggers make_room() itself tests) and fp is
 * absent (the remove finds nothing). Then that slot is the first
 * empty one of fp's probe, which the probe for fp has just reached, so one
 * probe serves both the remove and the store (GHOST-G5). NULL otherwise:
 * insert() takes the general path.
 */
static struct larder__ghost_slot *store_slot(const struct larder__ghost *g, uint32_t fp)
{
	if (make_room_needed(g))
		return NULL;
	for (uint64_t i = home_of(fp, g->tab_shift);; i = (i + 1) & g->tab_mask) {
		uint32_t f = g->tab[i].fp;
		if (f == 0)
			return &g->tab[i];
		if (f == fp)
			return NULL;
	}
}

void larder__ghost_insert(struct larder__ghost *g, uint32_t fp, uint32_t weight)
{
	if (weight == 0)
		weight = 1;
	struct larder__ghost_slot *t = weight <= g->bound ? store_slot(g, fp) : NULL;
	if (!t) {
		larder__ghost_remove(g, fp); /* a key ghosted again moves to the newest end */
		if (weight > g->bound)
			return;
		make_room(g);
	}
	uint64_t s = g->tail++; /* >= ring_split: in the new ring */
	g->ring_fp[s & g->ring_mask] = fp;
	g->ring_w[s & g->ring_mask] = weight;
	if (t) {
		t->fp = fp;
		t->seq = (uint32_t)s;
	} else {
		tab_store(g, fp, (uint32_t)s);
	}
	g->live_count++;
	g->live_weight += weight;
	expire_to(g, g->bound);
}
