/*
 * test_ghost.c - evict/ghost.c against a plain model (an array in FIFO order).
 *
 * Checks the invariants of ghost.c:
 *   GHOST-G1  live_count / live_weight equal what contains() says over the model;
 *   GHOST-G2  live_weight <= bound after every insert;
 *       exact FIFO expiry when nothing is removed (no stale ring slots);
 *       with removals, no phantom (contains() => the model holds it) and the
 *       newest ghosts are never lost early (recall of the newest half);
 *   GHOST-G4  growth spread over inserts: correct answers with ghosts in both the
 *       old and the new arrays, a bounded move per insert.
 *   GHOST-G5  insert()'s one-probe path and its general path (growth moving,
 *       a full ring, a table due to grow, a fingerprint already there)
 *       interleave in test_fifo_exact and test_random_ops, whose model is
 *       the remove-then-store of every insert: the set matches it exactly.
 * Seeded from argv[1] (printed), so a failure can be replayed.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "evict/ghost.h"

#include "sim_check.h"



/* The model: live ghosts oldest first. */
struct model {
	uint32_t fp[1 << 16];
	uint32_t w[1 << 16];
	int n;
	uint64_t weight;
};

static void model_remove_at(struct model *m, int i)
{
	m->weight -= m->w[i];
	memmove(&m->fp[i], &m->fp[i + 1], (size_t)(m->n - i - 1) * sizeof m->fp[0]);
	memmove(&m->w[i], &m->w[i + 1], (size_t)(m->n - i - 1) * sizeof m->w[0]);
	m->n--;
}

static int model_find(const struct model *m, uint32_t fp)
{
	for (int i = 0; i < m->n; i++)
		if (m->fp[i] == fp)
			return i;
	return -1;
}

static void model_insert(struct model *m, uint32_t fp, uint32_t w, uint64_t bound)
{
	int i = model_find(m, fp);
	if (i >= 0)
		model_remove_at(m, i);
	if (w > bound)
		return;
	m->fp[m->n] = fp;
	m->w[m->n++] = w;
	m->weight += w;
	while (m->weight > bound)
		model_remove_at(m, 0);
}

static struct model model;

/* No removals: the ghost must be exactly the model. */
static void test_fifo_exact(void)
{
	struct larder__ghost g;
	const uint64_t bound = 500;
	CHECK(larder__ghost_init(&g, bound, 4) == 0, "init");
	memset(&model, 0, sizeof model);
	for (int step = 0; step < 20000; step++) {
		uint32_t fp = (uint32_t)(rnd() % 2000) + 1; /* repeats: re-inserts */
		uint32_t w = (uint32_t)(rnd() % 8) + 1;
		larder__ghost_insert(&g, fp, w);
		model_insert(&model, fp, w, bound);
		CHECK(g.live_weight <= bound, "GHOST-G2: live_weight %llu > bound",
		      (unsigned long long)g.live_weight);
		CHECK(g.live_weight == model.weight && g.live_count == (uint64_t)model.n,
		      "step %d: ghost %llu/%llu, model %d/%llu", step,
		      (unsigned long long)g.live_count, (unsigned long long)g.live_weight,
		      model.n, (unsigned long long)model.weight);
		if (step % 97 == 0) {
			for (uint32_t q = 1; q <= 2000; q++)
				CHECK(larder__ghost_contains(&g, q) == (model_find(&model, q) >= 0),
				      "step %d: contains(%u) disagrees", step, q);
		}
	}
	/* pop_oldest hands back the model's oldest first. */
	while (model.n) {
		uint32_t w = larder__ghost_pop_oldest(&g);
		CHECK(w == model.w[0], "pop_oldest weight %u, model %u", w, model.w[0]);
		CHECK(!larder__ghost_contains(&g, model.fp[0]) ||
			      model_find(&model, model.fp[0]) != 0,
		      "popped fp still there");
		model_remove_at(&model, 0);
	}
	CHECK(g.live_count == 0 && g.live_weight == 0, "not empty after popping all");
	CHECK(larder__ghost_pop_oldest(&g) == 0, "pop on empty");
	larder__ghost_destroy(&g);
}

/* Random inserts, removes (ghost hits) and pops. */
static void test_random_ops(void)
{
	struct larder__ghost g;
	const uint64_t bound = 3000;
	CHECK(larder__ghost_init(&g, bound, 16) == 0, "init");
	memset(&model, 0, sizeof model);
	for (int step = 0; step < 200000; step++) {
		uint32_t fp = (uint32_t)(rnd() % 5000) + 1;
		unsigned op = (unsigned)(rnd() % 10);
		if (op < 6) {
			larder__ghost_insert(&g, fp, 1);
			model_insert(&model, fp, 1, bound);
		} else if (op < 9) {
			uint32_t w = larder__ghost_remove(&g, fp);
			int i = model_find(&model, fp);
			CHECK(!w || i >= 0, "phantom: removed %u that the model lacks", fp);
			if (i >= 0)
				model_remove_at(&model, i);
		} else {
			uint32_t w = larder__ghost_pop_oldest(&g);
			CHECK(!model.n || w == model.w[0], "pop_oldest: weight %u, model %u", w,
			      model.w[0]);
			CHECK(!model.n || !larder__ghost_contains(&g, model.fp[0]),
			      "pop_oldest left the oldest");
			if (model.n)
				model_remove_at(&model, 0);
		}
		CHECK(g.live_weight <= bound, "GHOST-G2");
		/* Early forgetting (ghost.c: ring full of stale slots) only ever
		 * takes the oldest: follow it in the model. */
		while (model.n && !larder__ghost_contains(&g, model.fp[0]))
			model_remove_at(&model, 0);
		if (step % 1009 == 0) {
			uint64_t have = 0;
			for (int i = 0; i < model.n; i++)
				have += (uint64_t)larder__ghost_contains(&g, model.fp[i]);
			CHECK(have == g.live_count,
			      "GHOST-G1: %llu of the model held, live_count %llu",
			      (unsigned long long)have, (unsigned long long)g.live_count);
			for (int i = model.n / 2; i < model.n; i++)
				CHECK(larder__ghost_contains(&g, model.fp[i]),
				      "recall: newer ghost %u lost (pos %d of %d)", model.fp[i], i,
				      model.n);
			for (uint32_t q = 1; q <= 5000; q += 7)
				CHECK(!larder__ghost_contains(&g, q) || model_find(&model, q) >= 0,
				      "phantom %u", q);
		}
		/* GHOST-G3: memory stays within a constant factor of the bound. */
		CHECK(g.ring_mask + 1 <= 8 * bound && g.tab_mask + 1 <= 8 * bound,
		      "GHOST-G3: ring %llu table %llu", (unsigned long long)g.ring_mask + 1,
		      (unsigned long long)g.tab_mask + 1);
	}
	larder__ghost_set_bound(&g, 10);
	CHECK(g.live_weight <= 10, "set_bound did not expire");
	larder__ghost_destroy(&g);
}

/* Which array of a growing ghost holds fp: 1 = the old table, 0 = the new, -1 = none. */
static int in_old_table(const struct larder__ghost *g, uint32_t fp)
{
	if (g->old_tab)
		for (uint64_t i = 0; i <= g->old_tab_mask; i++)
			if (g->old_tab[i].fp == fp)
				return 1;
	for (uint64_t i = 0; i <= g->tab_mask; i++)
		if (g->tab[i].fp == fp)
			return 0;
	return -1;
}

/*
 * Growth spread over inserts (GHOST-G4): at every step of every growth, lookups,
 * removals (with their weights) and pops agree with the model while some
 * ghosts are still in the old table and ring and others already in the new;
 * the old arrays are gone before the next growth; each insert moves at most
 * GHOST_MIGRATE (4) old ring slots.
 */
static void test_growth(void)
{
	struct larder__ghost g;
	const uint64_t bound = 1u << 30;
	CHECK(larder__ghost_init(&g, bound, 4) == 0, "init");
	memset(&model, 0, sizeof model);
	uint64_t both_halves = 0, growths = 0, last_tab = g.tab_mask, last_ring = g.ring_mask;
	for (uint32_t step = 0; step < 30000; step++) {
		int had_old_tab = g.old_tab != NULL, had_old_ring = g.old_fp != NULL;
		uint64_t moved_before = g.ring_moved > g.head ? g.ring_moved : g.head;
		uint32_t fp = step * 2654435761u + 1, w = (uint32_t)(rnd() % 9) + 1;
		if (!fp)
			fp = 1;
		larder__ghost_insert(&g, fp, w);
		model_insert(&model, fp, w, bound);
		if (g.tab_mask != last_tab || g.ring_mask != last_ring) {
			CHECK(!(g.tab_mask != last_tab && had_old_tab) &&
				      !(g.ring_mask != last_ring && had_old_ring),
			      "GHOST-G4: step %u grew again before the last growth was moved",
			      step);
			growths++;
			last_tab = g.tab_mask;
			last_ring = g.ring_mask;
		}
		if (had_old_ring && g.old_fp)
			CHECK(g.ring_moved - moved_before <= 4,
			      "GHOST-G4: %llu ring slots moved at once",
			      (unsigned long long)(g.ring_moved - moved_before));
		if (!g.old_tab || !g.old_fp || (rnd() % 4) != 0 || model.n < 4)
			continue;
		/* Mid-growth: one ghost from each table, and from each ring. */
		int o = -1, n = -1;
		for (int i = 0; i < model.n && (o < 0 || n < 0); i++) {
			int where = in_old_table(&g, model.fp[i]);
			CHECK(where >= 0, "GHOST-G1: model ghost %u in neither table", model.fp[i]);
			if (where == 1 && o < 0)
				o = i;
			if (where == 0 && n < 0 && i > 0)
				n = i;
		}
		if (o < 0 || n < 0)
			continue;
		both_halves++;
		CHECK(larder__ghost_contains(&g, model.fp[o]) &&
			      larder__ghost_contains(&g, model.fp[n]),
		      "lookups during growth (step %u)", step);
		uint32_t fo = model.fp[o], wo = model.w[o];
		CHECK(larder__ghost_remove(&g, fo) == wo && !larder__ghost_contains(&g, fo),
		      "remove from the old table: weight");
		model_remove_at(&model, o);
		n -= n > o;
		uint32_t fn = model.fp[n], wn = model.w[n];
		CHECK(larder__ghost_remove(&g, fn) == wn && !larder__ghost_contains(&g, fn),
		      "remove from the new table: weight");
		model_remove_at(&model, n);
		uint32_t w0 = larder__ghost_pop_oldest(&g);
		CHECK(w0 == model.w[0] && !larder__ghost_contains(&g, model.fp[0]),
		      "pop_oldest during growth: weight %u, model %u", w0, model.w[0]);
		model_remove_at(&model, 0);
		CHECK(g.live_count == (uint64_t)model.n && g.live_weight == model.weight,
		      "GHOST-G1 counts");
	}
	CHECK(growths >= 8 && both_halves >= 20, "growths %llu, checks with both halves live %llu",
	      (unsigned long long)growths, (unsigned long long)both_halves);
	for (int i = 0; i < model.n; i++)
		CHECK(larder__ghost_contains(&g, model.fp[i]), "ghost %u lost", model.fp[i]);
	CHECK(g.live_count == (uint64_t)model.n && g.live_weight == model.weight,
	      "GHOST-G1 at the end");
	larder__ghost_destroy(&g);
}

static void test_oversize(void)
{
	struct larder__ghost g;
	CHECK(larder__ghost_init(&g, 100, 0) == 0, "init");
	larder__ghost_insert(&g, 7, 50);
	larder__ghost_insert(&g, 8, 101); /* heavier than the bound: not kept */
	CHECK(larder__ghost_contains(&g, 7) && !larder__ghost_contains(&g, 8), "oversize");
	larder__ghost_insert(&g, 9, 60); /* pushes 7 out */
	CHECK(!larder__ghost_contains(&g, 7) && larder__ghost_contains(&g, 9), "expiry by weight");
	CHECK(larder__ghost_remove(&g, 9) == 60 && g.live_weight == 0, "remove weight");
	CHECK(larder__ghost_fp(0) != 0 && larder__ghost_fp(~0ull) != 0, "fp never 0");
	larder__ghost_destroy(&g);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 20261202;
	printf("test_ghost seed %llu\n", (unsigned long long)seed);
	rng_state = seed | 1;
	test_oversize();
	test_fifo_exact();
	test_random_ops();
	test_growth();
	return sim_check_result();
}
