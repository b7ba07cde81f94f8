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
 * Invariants (checked by tests/sim/test_ghost.c):
 *   G1. live_count / live_weight are the number / summed weight of the table's
 *       fingerprints; each has exactly one ring slot in [head, tail) whose
 *       sequence the table records.
 *   G2. After insert() and set_bound(), live_weight <= bound (a single ghost
 *       heavier than the bound is not kept).
 *   G3. Memory: the table is at most half full after growth; the ring grows
 *       only while at least half its slots are live, so both stay within a
 *       constant factor of the live fingerprints, which G2 bounds.
 *   G4. Every call is O(1) amortised: growth doubles (amortised over the
 *       inserts that filled it), and each ring slot is popped once.
 * Not guaranteed: exactness. Two keys with the same 32-bit fingerprint are
 * one ghost (a false positive rate of about live_count / 2^32 per lookup),
 * and when the ring cannot grow (out of memory, or mostly stale) the oldest
 * live ghost may be forgotten a little early.
 */
#include "evict/ghost.h"

#include <stdlib.h>
#include <string.h>

#define GHOST_MIN_SLOTS 16u

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

static uint64_t tab_home(const struct larder__ghost *g, uint32_t fp)
{
	/* fp is already a hash; the multiply spreads its low bits over the top. */
	return ((uint64_t)fp * 0x9E3779B97F4A7C15ull) >> g->tab_shift;
}

/* The table index holding fp, or -1. */
static int64_t tab_find(const struct larder__ghost *g, uint32_t fp)
{
	uint64_t i = tab_home(g, fp);
	for (;;) {
		uint32_t f = g->tab[i].fp;
		if (f == fp)
			return (int64_t)i;
		if (f == 0)
			return -1;
		i = (i + 1) & g->tab_mask;
	}
}

/* Backward-shift deletion keeps probe chains intact without tombstones. */
static void tab_delete_at(struct larder__ghost *g, uint64_t i)
{
	uint64_t j = i;
	for (;;) {
		j = (j + 1) & g->tab_mask;
		if (g->tab[j].fp == 0)
			break;
		uint64_t home = tab_home(g, g->tab[j].fp);
		/* Move j back to i unless its home lies cyclically in (i, j]. */
		int in_range = (i <= j) ? (home > i && home <= j) : (home > i || home <= j);
		if (!in_range) {
			g->tab[i] = g->tab[j];
			i = j;
		}
	}
	g->tab[i].fp = 0;
}

static void tab_store(struct larder__ghost_slot *tab, uint64_t mask, unsigned shift,
		      uint32_t fp, uint32_t seq)
{
	uint64_t i = ((uint64_t)fp * 0x9E3779B97F4A7C15ull) >> shift;
	while (tab[i].fp != 0)
		i = (i + 1) & mask;
	tab[i].fp = fp;
	tab[i].seq = seq;
}

static int tab_grow(struct larder__ghost *g)
{
	uint64_t n = (g->tab_mask + 1) * 2;
	struct larder__ghost_slot *t = calloc(n, sizeof *t);
	if (!t)
		return -1;
	unsigned shift = 64 - log2_of(n);
	for (uint64_t i = 0; i <= g->tab_mask; i++)
		if (g->tab[i].fp)
			tab_store(t, n - 1, shift, g->tab[i].fp, g->tab[i].seq);
	free(g->tab);
	g->tab = t;
	g->tab_mask = n - 1;
	g->tab_shift = shift;
	return 0;
}

static int ring_grow(struct larder__ghost *g)
{
	uint64_t n = (g->ring_mask + 1) * 2;
	uint32_t *fp = malloc(n * sizeof *fp);
	uint32_t *w = malloc(n * sizeof *w);
	if (!fp || !w) {
		free(fp);
		free(w);
		return -1;
	}
	for (uint64_t s = g->head; s != g->tail; s++) {
		fp[s & (n - 1)] = g->ring_fp[s & g->ring_mask];
		w[s & (n - 1)] = g->ring_w[s & g->ring_mask];
	}
	free(g->ring_fp);
	free(g->ring_w);
	g->ring_fp = fp;
	g->ring_w = w;
	g->ring_mask = n - 1;
	return 0;
}

int larder__ghost_init(struct larder__ghost *g, uint64_t bound, uint64_t slots_hint)
{
	memset(g, 0, sizeof *g);
	uint64_t rn = pow2_at_least(slots_hint);
	uint64_t tn = pow2_at_least(slots_hint * 2);
	g->ring_fp = malloc(rn * sizeof *g->ring_fp);
	g->ring_w = malloc(rn * sizeof *g->ring_w);
	g->tab = calloc(tn, sizeof *g->tab);
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
	memset(g, 0, sizeof *g);
}

/* Pops the head slot; returns the weight it took out of the live set (0 if stale). */
static uint32_t pop_head(struct larder__ghost *g)
{
	uint64_t s = g->head++;
	uint32_t fp = g->ring_fp[s & g->ring_mask];
	int64_t i = tab_find(g, fp);
	if (i < 0 || g->tab[i].seq != (uint32_t)s)
		return 0; /* removed or re-inserted since: a stale slot */
	uint32_t w = g->ring_w[s & g->ring_mask];
	tab_delete_at(g, (uint64_t)i);
	g->live_count--;
	g->live_weight -= w;
	return w;
}

int larder__ghost_contains(const struct larder__ghost *g, uint32_t fp)
{
	return tab_find(g, fp) >= 0;
}

uint32_t larder__ghost_remove(struct larder__ghost *g, uint32_t fp)
{
	int64_t i = tab_find(g, fp);
	if (i < 0)
		return 0;
	uint32_t w = g->ring_w[g->tab[i].seq & g->ring_mask];
	/* tab seq holds 32 bits; the ring is < 2^32 slots so seq & mask is exact. */
	tab_delete_at(g, (uint64_t)i);
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

/* Makes room for one more ring slot and one more table entry. */
static void make_room(struct larder__ghost *g)
{
	uint64_t ring_n = g->ring_mask + 1;
	if (g->tail - g->head == ring_n) {
		if (g->live_count * 2 < ring_n || ring_grow(g) != 0)
			pop_head(g); /* mostly stale (or no memory): recycle the oldest */
	}
	if ((g->live_count + 1) * 2 > g->tab_mask + 1 && tab_grow(g) != 0) {
		/* No memory: keep the table under 3/4 full by forgetting the oldest. */
		while ((g->live_count + 1) * 4 > (g->tab_mask + 1) * 3 && g->live_count)
			larder__ghost_pop_oldest(g);
	}
}

void larder__ghost_insert(struct larder__ghost *g, uint32_t fp, uint32_t weight)
{
	if (weight == 0)
		weight = 1;
	larder__ghost_remove(g, fp); /* a key ghosted again moves to the newest end */
	if (weight > g->bound)
		return;
	make_room(g);
	uint64_t s = g->tail++;
	g->ring_fp[s & g->ring_mask] = fp;
	g->ring_w[s & g->ring_mask] = weight;
	tab_store(g->tab, g->tab_mask, g->tab_shift, fp, (uint32_t)s);
	g->live_count++;
	g->live_weight += weight;
	expire_to(g, g->bound);
}
