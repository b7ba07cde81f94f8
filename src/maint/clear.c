/*
 * maint/clear.c - emptying the tables that larder_clear() swapped out: each
 * waits for a grace period, then the maintainer retires its entries as
 * CLEARED and frees them, a bounded chunk per pass, in address order (see
 * larder__maint_clear_walk for why and how).
 *
 * The cause is judged at the clear, not at the walk: an entry whose
 * deadline had passed by the cache clock's reading in larder_clear() (the
 * table's cleared_ms) leaves as EXPIRED, as Caffeine's invalidateAll
 * reports an expired entry, whichever reached it first; every other entry,
 * live at the clear, as CLEARED, however late the walk reaches it.
 *
 * A cleared table is the maintainer's alone once swapped out (no writer or
 * reader can reach it after its grace period), so the walk reads and
 * empties its slots with the index's bucket iterator and plain stores.
 */
#include "core/cache.h"
#include "index/table.h"
#include "maint/state.h"
#include "mem/pages.h"
#include "mem/slab.h"
#include "sync/reclaim.h"

#define WALK_PER_PASS 4096u  /* buckets, hash-order walk */
#define WALK_AHEAD 8u        /* buckets prefetched ahead, hash-order walk */
#define SCAN_PER_PASS 65536u /* buckets counted or moved per pass, sorted walk */
#define FREE_PER_PASS 16384u /* entries freed per pass, sorted walk */
#define FREE_AHEAD 16u       /* entries prefetched ahead, sorted walk */
#define SORT_SHIFT 23        /* sort key: 8 MiB of address space */
#define SUB_SHIFT 16         /* then within it by 64 KiB, the smallest page */
#define SUB_KEYS (1u << (SORT_SHIFT - SUB_SHIFT))
/*
 * Sort keys: 8 MiB each, the address modulo 4,096 of them (32 GiB). A
 * cache's pages lie side by side when the kernel grants mem/pages.c's
 * placement hint, but other mappings (other caches, thread stacks, the
 * runtime's heap) can push them apart, and two regions a multiple of the
 * keys' span apart share a key: their pages are then freed interleaved,
 * correct but out of order. With the keys sized by the live bytes (16
 * keys, 128 MiB, for a cache of 49 MiB) that happened in a test's process:
 * 2,657 changes of 64 KiB block for 6,000 entries where 544 is usual
 * (test_clear_walk_sorted, once in 32 runs).
 * The counts cost 16 KiB a clear; an empty key is skipped at once.
 */
#define SORT_KEYS 4096u

void larder__maint_clear_add(struct larder__maint *m, struct larder__table *t, uint64_t cleared_ms)
{
	t->retire_token = larder__gp_start();
	t->cleared_ms = cleared_ms;
	t->retire_next = NULL;
	struct larder__table **p = &m->gens;
	while (*p)
		p = &(*p)->retire_next;
	*p = t;
}

/* Prefetches entries (n of them) and, with neighbours, the policy
 * neighbours that larder__maint_retire_onto() will unlink them from: only
 * for entries already in cache, a hint only. */
static void walk_prefetch(const struct larder__pagedir *dir, struct larder__entry *const *e,
			  unsigned n, int neighbours)
{
	for (unsigned i = 0; i < n; i++) {
		if (!neighbours) {
			__builtin_prefetch(e[i], 1);
			continue;
		}
		/* Queue neighbours by id (ENTRY-E5; an entry in no queue names itself). */
		if (e[i]->prev)
			__builtin_prefetch(larder__entry_at(dir, e[i]->prev), 1);
		__builtin_prefetch(larder__entry_at(dir, e[i]->next), 1);
	}
}

/* Retires e, as EXPIRED when its deadline had passed at the clear, else as
 * CLEARED, and frees it at once (see larder__maint_clear_walk for why). A
 * deadline is at least 1 (a reading plus a TTL of 1 ms or more), so a
 * cleared_ms of 0 finds every entry live. */
static void clear_one(struct larder__maint *m, struct larder__entry *e, uint64_t *bytes)
{
	struct larder__entry *done = NULL;
	enum larder_cause cause = larder__entry_deadline(e) <= m->clear.cleared_ms
					  ? LARDER_CAUSE_EXPIRED
					  : LARDER_CAUSE_CLEARED;
	if (m->clear_left)
		m->clear_left--;
	larder__maint_retire_onto(m, e, cause, 1, &done, bytes);
	if (done)
		larder__slab_free_batched(&m->shard->slab, &m->clear.batch, e,
					  larder__entry_size(e));
}

/*
 * The fallback walk, in the table's (hash) order: up to WALK_PER_PASS
 * buckets, entries prefetched WALK_AHEAD buckets ahead, their policy
 * neighbours half as far. Every entry sits in a different page, so pages
 * only fall empty near the end. Used when the sorted walk has no memory for
 * its arrays. Returns whether the table is done.
 */
static int walk_hash_order(struct larder__maint *m, uint64_t *bytes, uint64_t *work)
{
	struct larder__table_iter *it = &m->clear.iter;
	const struct larder__pagedir *dir = &m->shard->slab.dir;
	struct larder__entry *e[LARDER__BUCKET_SLOTS];
	for (unsigned n = 0; n < WALK_PER_PASS && !larder__table_iter_done(it); n++, (*work)++) {
		walk_prefetch(dir, e, larder__table_iter_peek(it, WALK_AHEAD, e), 0);
		walk_prefetch(dir, e, larder__table_iter_peek(it, WALK_AHEAD / 2, e), 1);
		for (unsigned i = 0, k = larder__table_iter_next(it, e, 1); i < k; i++)
			clear_one(m, e[i], bytes);
	}
	return larder__table_iter_done(it);
}

/* The sort key of an entry: its 8 MiB of address space, modulo the keys. */
static uint64_t sort_key(const struct larder__entry *e)
{
	return ((uintptr_t)e >> SORT_SHIFT) & (SORT_KEYS - 1);
}

/* Maps the key counts. */
static int sorted_begin(struct larder__clear_walk *w)
{
	w->count_bytes = larder__pages_round(SORT_KEYS * sizeof(uint32_t));
	w->count = larder__pages_map(w->count_bytes, LARDER__OS_PAGE);
	if (!w->count)
		return -1;
	w->phase = LARDER__CLEAR_COUNT;
	return 0;
}

/* Counting done: maps the order array and turns counts into start offsets. */
static int sorted_place(struct larder__clear_walk *w)
{
	uint64_t n = 0, most = 0;
	for (uint64_t k = 0; k < SORT_KEYS; k++) {
		uint32_t c = w->count[k];
		w->count[k] = (uint32_t)n;
		n += c;
		most = c > most ? c : most;
	}
	w->n = n;
	/* One mapping: the order array, then room for the largest key's entries. */
	w->order_bytes = larder__pages_round((n + most + 1) * sizeof(*w->order));
	w->order = larder__pages_map(w->order_bytes, LARDER__OS_PAGE);
	if (!w->order)
		return -1;
	w->sub = w->order + n;
	w->phase = LARDER__CLEAR_SCATTER;
	return 0;
}

/* Moves the next key's entries from order into sub, sorted by 64 KiB (a
 * counting sort in cache: the key spans 8 MiB), so a page's slots go in a
 * row and larder__slab_free_batched() sets their bits together. */
static void sorted_take_key(struct larder__clear_walk *w)
{
	uint64_t lo = w->at, hi = w->count[w->key++];
	w->sub_at = w->sub_n = 0;
	if (lo == hi) /* most keys: a cache spans a few of them */
		return;
	uint32_t start[SUB_KEYS] = {0};
	for (uint64_t i = lo; i < hi; i++)
		start[((uintptr_t)w->order[i] >> SUB_SHIFT) % SUB_KEYS]++;
	for (uint32_t k = 0, n = 0; k < SUB_KEYS; k++) {
		uint32_t c = start[k];
		start[k] = n;
		n += c;
	}
	for (uint64_t i = lo; i < hi; i++)
		w->sub[start[((uintptr_t)w->order[i] >> SUB_SHIFT) % SUB_KEYS]++] = w->order[i];
	w->at = hi;
	w->sub_n = hi - lo;
}

static void sorted_end(struct larder__clear_walk *w)
{
	if (w->count)
		larder__pages_unmap(w->count, w->count_bytes);
	if (w->order)
		larder__pages_unmap(w->order, w->order_bytes);
	*w = (struct larder__clear_walk){0};
}

/*
 * One pass of the sorted walk (see larder__maint_clear_walk). COUNT and
 * SCATTER read the table in order, SCAN_PER_PASS buckets a pass; SCATTER
 * also empties each slot it moves into the order array, so that an entry is
 * in exactly one of them (larder__maint_clear_destroy frees both). FREE
 * takes one key at a time into sub (sorted_take_key) and retires and frees
 * up to FREE_PER_PASS entries a pass in that order. Returns whether the
 * table is done; -1 if the order array could not be mapped (then the table
 * is untouched).
 */
static int walk_sorted(struct larder__maint *m, struct larder__table *t, uint64_t *bytes,
		       uint64_t *work)
{
	struct larder__clear_walk *w = &m->clear;
	if (w->phase != LARDER__CLEAR_FREE) {
		int scatter = w->phase == LARDER__CLEAR_SCATTER;
		struct larder__entry *e[LARDER__BUCKET_SLOTS];
		for (unsigned n = 0; n < SCAN_PER_PASS && !larder__table_iter_done(&w->iter);
		     n++, (*work)++) {
			for (unsigned i = 0, k = larder__table_iter_next(&w->iter, e, scatter);
			     i < k; i++) {
				uint64_t key = sort_key(e[i]);
				if (scatter)
					w->order[w->count[key]++] = e[i];
				else
					w->count[key]++;
			}
		}
		if (!larder__table_iter_done(&w->iter))
			return 0;
		larder__table_iter_init(&w->iter, t);
		if (!scatter)
			return sorted_place(w) ? -1 : 0;
		w->phase = LARDER__CLEAR_FREE;
		return 0;
	}
	const struct larder__pagedir *dir = &m->shard->slab.dir;
	for (unsigned n = 0; n < FREE_PER_PASS; n++, (*work)++) {
		if (w->sub_at == w->sub_n) {
			if (w->key == SORT_KEYS)
				return 1;
			sorted_take_key(w);
			continue;
		}
		uint64_t at = w->sub_at++;
		if (at + FREE_AHEAD < w->sub_n)
			walk_prefetch(dir, &w->sub[at + FREE_AHEAD], 1, 0);
		if (at + FREE_AHEAD / 2 < w->sub_n)
			walk_prefetch(dir, &w->sub[at + FREE_AHEAD / 2], 1, 1);
		clear_one(m, w->sub[at], bytes);
	}
	return 0;
}

/*
 * Empties the oldest cleared table, once its grace period has ended (ready:
 * polled before this pass drained the rings). Its entries are freed here,
 * without the collect list's grace period: the table's own period began
 * after it was unpublished and ended before this pass drained every ring,
 * so no reader, event or hit sample can still name them (MAINT-M2), and each is
 * freed while still in cache.
 *
 * The order matters for memory going back. In the table's (hash) order
 * every entry lies in another page, so a page's last slot goes late and
 * pages only fall empty at the end of the walk: the returner thread then
 * unmaps everything after it (8 GiB of 1 KiB-median values: walk done at
 * about 1 s, memory back at 1.8-2.0 s). So the walk sorts the entries by
 * address first, with counting sorts that stay in cache: one pass over the
 * table counts entries per 8 MiB of address space (modulo a few thousand
 * keys), a second moves each into its key's range of an order array (8
 * bytes per entry, mapped for the walk); then, one key at a time, its
 * entries are sorted by 64 KiB (the smallest page) and freed in that order.
 * Pages fall empty one after another from the start, so the returner
 * unmaps while the walk goes on; a page's slots go in a row, so their bits
 * are set together (larder__slab_free_batched); and the entry headers, their
 * queue neighbours (allocated around the time they were inserted) and the
 * page headers are mostly in cache. Without memory for the arrays, the walk
 * goes in hash order. Returns the buckets or entries it went through, so
 * that a long walk runs pass after pass without the batching window's sleep
 * (which under load cost more than the walk: maint_sleep).
 */
uint64_t larder__maint_clear_walk(struct larder__maint *m, int ready)
{
	LARDER__MAINT_OWNER(m);
	struct larder__table *g = m->gens;
	if (!g || !ready)
		return 0;
	struct larder__table *t = g, *next = larder__table_next(g);
	if (next)
		t = next;
	if (m->clear.phase == LARDER__CLEAR_START) {
		if (next) {
			/* No writer can reach g any more: finish its growth at once. */
			larder__maint_migrate(m, g, SIZE_MAX);
			if (m->growing == g)
				m->growing = NULL;
		}
		if (sorted_begin(&m->clear) != 0)
			m->clear.phase = LARDER__CLEAR_HASH;
		larder__table_iter_init(&m->clear.iter, t);
	}
	uint64_t done_bytes = 0, work = 1;
	m->clear.cleared_ms = g->cleared_ms; /* sorted_end() zeroes the walk */
	int done = m->clear.phase == LARDER__CLEAR_HASH ? walk_hash_order(m, &done_bytes, &work)
							: walk_sorted(m, t, &done_bytes, &work);
	larder__slab_batch_flush(&m->shard->slab, &m->clear.batch);
	if (done < 0) {
		sorted_end(&m->clear);
		m->clear.phase = LARDER__CLEAR_HASH;
		larder__table_iter_init(&m->clear.iter, t);
		done = 0;
	}
	if (done_bytes) {
		larder__maint_count_freed(m, done_bytes);
		larder__maint_wake_writers(m->cache);
	}
	if (!done)
		return work;
	sorted_end(&m->clear);
	m->gens = g->retire_next;
	larder__table_destroy(next);
	larder__table_destroy(g);
	/* The cache was emptied: its kept big slots go back too (SLAB-S6),
	 * and the pages light writers shared, as they empty (SLAB-S8). */
	larder__slab_keep_trim(&m->shard->slab, 1);
	larder__slab_release_shared(&m->shard->slab);
	return work;
}

void larder__maint_clear_destroy(struct larder__maint *m,
				 void (*free_large)(void *ctx, struct larder__entry *e))
{
	struct larder__shard *s = m->shard;
	/* The head's sorted walk may hold some of its entries in its order
	 * array instead of the table (walk_sorted). */
	for (uint64_t i = m->clear.sub_at; i < m->clear.sub_n; i++)
		free_large(s, m->clear.sub[i]);
	for (uint64_t i = m->clear.at; m->clear.order && i < m->clear.n; i++)
		if (m->clear.order[i])
			free_large(s, m->clear.order[i]);
	sorted_end(&m->clear);
	while (m->gens) {
		struct larder__table *g = m->gens, *next = larder__table_next(g);
		m->gens = g->retire_next;
		larder__table_walk(g, free_large, s);
		larder__table_destroy(next);
		larder__table_destroy(g);
	}
}
