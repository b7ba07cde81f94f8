/*
 * mem/slab.c - slots in pages, allocated by writers, freed by the maintainer.
 *
 * Page layout (page size aligned, so larder__slab_page_of() is a mask):
 *     struct larder__page (starting with its ids, mem/pagedir.h), owner_free
 *     bitmap, maint_free bitmap (each starting on its own cache line), then
 *     the slots. A page takes its ids when formatted and gives them back when
 *     retired; a large entry's mapping starts with the same 64-byte header.
 *
 * Page states (bits of state; changed under the slab lock, read without it):
 *     OWNED   a writer's cursor holds it and allocates from owner_free
 *     LISTED  it is on its class's available list
 * A page is never both: taking it from the list clears LISTED and sets OWNED.
 *
 * Invariants (checked where they could break by LARDER__ASSERT, core/assert.h,
 * which tests/unit/test_assert.c shows firing for SLAB-S1; and by
 * tests/unit/test_memory.c, tests/unit/test_pagedir.c and the stress tests'
 * walks):
 *   SLAB-S1. A free slot has its bit set in exactly one of owner_free, maint_free
 *       and its owner's run (SLAB-S9); an allocated slot in none.
 *   SLAB-S2. owner_free is touched only by the owning cursor's thread. maint_free
 *       is set by the maintainer (atomic OR, release) and emptied by the owner
 *       (atomic exchange, acquire), so a slot's last reads by the maintainer
 *       (listener, poisoning) happen before its reuse (SLAB-SL1/SLAB-SL2).
 *   SLAB-S3. A page with a free slot and no owner is on the available list. Both
 *       sides check the other's flag after their own store (seq_cst; a Dekker
 *       pair SLAB-SL3/SLAB-SL4): a free racing with a release lists the page at least
 *       once, and the lock makes it exactly once.
 *   SLAB-S4. A page is unmapped only when unowned and every bit of maint_free is
 *       set, under the lock, so no writer can be taking it.
 *   SLAB-S5. An empty page beyond the reserve leaves every list under the lock
 *       and goes onto to_unmap; from then on only the returner thread
 *       touches it (to unmap it), so giving memory back never blocks the
 *       maintainer on the kernel (0.1-0.2 s of CPU per GiB here: docs/memory.md).
 *   SLAB-S6. A freed slot of 64 KiB or more (RELEASE_SLOT_BYTES) is either kept
 *       or released. Kept: resident, on its class's kept list, its bit in
 *       neither bitmap (allocated, as far as SLAB-S1 goes) and not in its
 *       page's live count, so its page is never retired under it; at most
 *       kept_limit bytes of them, the limit checked under the lock as
 *       the maintainer keeps one (a writer's unpublished kept slot goes back
 *       to the list and may pass it by one slot until the next trim).
 *       Released: its whole OS pages go back to the kernel before
 *       its bit is set (SLAB-SL1). A writer of that class takes a kept slot
 *       first, under the lock, which also orders the maintainer's last reads
 *       of it (listener, poisoning) before the reuse, as SLAB-SL2 does for
 *       bitmaps. The maintainer releases kept slots beyond a lowered limit
 *       (larder__slab_keep_trim, every pass) and all of them once a clear
 *       has emptied the cache.
 *   SLAB-S7. A writer thread's pages go back as it exits, not when the
 *       maintainer gets round to its handle: every page of its cursor that
 *       holds a live slot is released (listed if it has a free slot), so the
 *       next threads allocate from them. An empty one stays owned by the dead
 *       cursor until the maintainer releases it (SLAB-S4: only the maintainer
 *       retires). Before this, a process that started and ended threads
 *       faster than the maintainer reaped them mapped one page per size
 *       class per thread in flight: 186 MiB for 22 MiB of entries, 16 threads
 *       a round (tests/unit/test_listener.c, test_exited_threads_give_back).
 *   SLAB-S8. In a cache's slab (share_first), a thread's first
 *       LARDER__SLAB_OWN_AFTER slots of a class come
 *       from the slab's shared cursor, one page per class, under
 *       shared_lock (whose holder is that cursor's owner for SLAB-S2); only
 *       then does the thread take a page of its own. A writer that writes
 *       a few entries of many classes held a page of each: 256 such
 *       threads mapped 326 MiB of pages for 5 MiB of entries in a 16 MiB
 *       cache. A failed write gives its shared slot back to the shared page
 *       while that page is still the shared one; else as a free (its bit
 *       into maint_free, the page listed if unowned), and then an unowned
 *       page it empties stays listed, for the next writer of its class,
 *       instead of being retired (only the maintainer retires: SLAB-S4).
 *       Once a clear has emptied the cache the maintainer releases the
 *       shared cursor's pages (larder__slab_release_shared), which then go
 *       as their slots are freed: kept, a cache of K shards held K shared
 *       pages of every class light writers had written, empty, after the
 *       clear (70 MiB for a 4 MiB cache at K = 16;
 *       test_clear_releases_shared_pages in tests/unit/test_audit_limits.c).
 *       After a capacity cut (larder__slab_release_shared_later) it does
 *       the same at its next pass, so the pages the cut's evictions empty
 *       are retired: kept, a cut of a 4 MiB cache to 64 KiB left 4.3 MiB
 *       of empty shared pages mapped at K = 1 and 67 MiB at K = 16
 *       (test_cut_releases_shared_pages in tests/unit/test_audit_capi.c).
 *   SLAB-S9. A cursor's run of class k (struct larder__slab_run in slab.h)
 *       holds free slots of the cursor's page of class k only: the bits of
 *       one owner_free word, taken out of the bitmap together (the word
 *       left 0) when the run is empty and a slot is wanted, and handed out
 *       lowest first by the inline allocation. They go back into their word
 *       (run_return) before the page leaves the cursor, so a page leaves
 *       its owner with every free slot in its bitmaps, as before runs; a
 *       slot given back while its word is the run's goes back to the run.
 *       owner_hint is then the first word after the run's that may hold a
 *       free bit (the run's own is 0 in the bitmap). Nothing but the owner
 *       reads a run: the maintainer counts slots by its live counts, never
 *       by an owned page's bitmaps.
 *   SLAB-S10. Slabs that share one reserve (a cache's K shards, parts
 *       0..K-1 of larder__slab_set_reserve) keep together what one slab
 *       would: of the P = max(reserve_limit / page, 1) empty pages of a page
 *       size, part i keeps P / K, plus one when i < P % K; and 1/K of the
 *       kept big slots' limit each. Each keeping at least one page of every
 *       size held 17 MiB of empty pages for a 64 MiB cache at K = 4 and 54
 *       MiB at K = 16, where the documented reserve is 7 MiB
 *       (test_reserve_split_among_shards in tests/unit/test_audit_limits.c).
 *
 * Audit (larder_stats_size_class): pages per class and the reserve move
 * under the lock; live slots per class move when the maintainer counts an
 * entry and when it retires one (not at the free: an overwrite moves
 * neither), by the maintainer alone. So when the maintainer is idle
 * (every retired slot freed), mapped bytes =
 * class pages + reserve + pages queued for the returner + large mappings,
 * and live slots x slot size + large mappings = used bytes (tests/unit/
 * test_memory.c, TMEMORY-M7).
 */
#define _GNU_SOURCE /* pthread_setname_np */
#include "mem/slab.h"

#include <stdlib.h>
#include <string.h>

#include "core/assert.h"
#include "mem/pages.h"

int larder__slab_poison;


/* A page above 64 KiB is the smallest power of two >= 8 slots, so it holds
 * fewer than 16 (mem/sizeclass.h): the fullest bitmap is a 64 KiB page's. */
_Static_assert(LARDER__PAGE_MIN / LARDER__SLAB_MIN_SLOT <= 64 * LARDER__SLAB_BATCH_WORDS,
	       "a batch holds the bitmap of any page");

static unsigned page_order(size_t page_bytes)
{
	return (unsigned)__builtin_ctzll(page_bytes / LARDER__PAGE_MIN);
}

static size_t round64(size_t n)
{
	return (n + 63) & ~(size_t)63;
}

struct page_layout {
	size_t nslots, words, maint_off, slots_off;
};

/* The most slots of class c that fit a page beside the header and bitmaps. */
static struct page_layout class_layout(unsigned c)
{
	size_t page = larder__sizeclass_page(c), slot = larder__sizeclass_slot(c);
	struct page_layout l = { .nslots = page / slot };
	for (;;) {
		l.words = (l.nslots + 63) / 64;
		l.maint_off = sizeof(struct larder__page) + round64(l.words * 8);
		l.slots_off = l.maint_off + round64(l.words * 8);
		if (l.slots_off + l.nslots * slot <= page)
			return l;
		l.nslots--;
	}
}

/*
 * Slots this big (their pages hold 8 to 32 of them, 512 KiB to 2 MiB) give
 * their memory back to the kernel when freed, keeping only the mapping. In
 * a cache small next to such pages, churn leaves live entries scattered one
 * or two to a page, and every page that holds one kept all its freed slots
 * resident: 6 writers of 1 B to 8 MiB values in a 64 MiB cache held 111 MiB
 * of class pages. The cost is a madvise per free of an entry of 64 KiB or
 * more, and a page fault per 4 KiB when the slot is written again (~25 per
 * 100 KB write); smaller slots stay resident. So up to KEPT_SHARE times
 * the reserve's share (a capacity's 1/16, at most 4 MiB) of freed big slots
 * stay resident for the next writer of their size (SLAB-S6): a cache
 * churning same-size big items reuses them without faults, and scattered
 * leftovers stay bounded. Freed slots come in grace-period batches, at
 * 20,000 sets of 100 KB a second a few dozen 112 KiB slots each: kept
 * within the reserve's share alone (1 MiB at 64 MiB, 9 such slots), the
 * rest of a batch was faulted in again, 10 faults per set in larderd
 * (server/bench/rss.py); with four times that, 0.0-0.1 (docs/server.md).
 */
#define RELEASE_SLOT_BYTES (65536u)
#define KEPT_SHARE 4u

/* The most bytes of freed big slots kept, for a reserve of `reserve` bytes
 * per page size (SLAB-S6). */
static uint64_t kept_limit(uint64_t reserve)
{
	return reserve < LARDER__SLAB_RESERVE_MAX / KEPT_SHARE ? reserve * KEPT_SHARE
							       : LARDER__SLAB_RESERVE_MAX;
}

/* SLAB-S10: how many empty pages of `page` bytes this slab keeps. */
static unsigned reserve_pages_locked(struct larder__slab *s, size_t page)
{
	LARDER__ASSERT_HELD(&s->lock);
	uint64_t all = s->reserve_limit / page;
	if (all == 0)
		all = 1;
	return (unsigned)(all / s->reserve_parts) + (s->reserve_part < all % s->reserve_parts);
}

/* Relaxed add to an audit counter (statistics order nothing). */
static void audit_add(larder__atomic_u64 *counter, int64_t delta)
{
	atomic_fetch_add_explicit(counter, (uint64_t)delta, LARDER__RELAXED);
}

/* Lays out an empty page for class c: every slot free, in owner_free. */
static void page_format(struct larder__page *pg, unsigned c)
{
	struct page_layout l = class_layout(c);
	size_t page = larder__sizeclass_page(c), slot = larder__sizeclass_slot(c);
	size_t n = l.nslots, words = l.words, maint_off = l.maint_off, slots_off = l.slots_off;
	pg->size_class = c;
	pg->nslots = (uint32_t)n;
	pg->slot_bytes = (uint32_t)slot;
	pg->nwords = (uint32_t)words;
	pg->page_bytes = (uint32_t)page;
	pg->slots_offset = (uint32_t)slots_off;
	pg->maint_offset = (uint32_t)maint_off;
	atomic_store_explicit(&pg->live, 0, LARDER__RELAXED); /* not yet shared */
	pg->owner_hint = 0;
	for (size_t w = 0; w < words; w++) {
		size_t left = n - w * 64;
		larder__slab_owner_free(pg)[w] = left >= 64 ? ~(uint64_t)0 : (((uint64_t)1 << left) - 1);
		atomic_store_explicit(&larder__slab_maint_free(pg)[w], 0, LARDER__RELAXED); /* not yet shared */
	}
}

/* Gives bytes at p (whole pages or a large entry's mapping) back to the OS. */
static void unmap_range(struct larder__slab *s, void *p, size_t bytes)
{
	larder__pages_unmap(p, bytes);
	audit_add(&s->mapped_bytes, -(int64_t)bytes);
	audit_add(&s->returned_bytes, (int64_t)bytes);
}

static void page_unmap(struct larder__slab *s, struct larder__page *pg)
{
	unmap_range(s, pg, pg->page_bytes);
}

/* Pages the returner sorts and merges at once (32 KiB of its stack). */
#define RETURN_BATCH 4096u

static int page_addr_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (struct larder__page *const *)a;
	uintptr_t y = (uintptr_t) * (struct larder__page *const *)b;
	return (x > y) - (x < y);
}

/*
 * Unmaps up to RETURN_BATCH pages of the list at pg, in address order, one
 * munmap per run of adjacent pages: the kernel's cost per call (a VMA split,
 * a TLB shootdown) is paid per run, not per page. Returns the rest of the list.
 */
static struct larder__page *unmap_batch(struct larder__slab *s, struct larder__page *pg)
{
	struct larder__page *batch[RETURN_BATCH];
	unsigned n = 0;
	for (; pg && n < RETURN_BATCH; pg = pg->all_next)
		batch[n++] = pg;
	qsort(batch, n, sizeof(batch[0]), page_addr_cmp);
	for (unsigned i = 0; i < n;) {
		unsigned char *start = (unsigned char *)batch[i];
		size_t bytes = 0;
		for (; i < n && (unsigned char *)batch[i] == start + bytes; i++)
			bytes += batch[i]->page_bytes;
		unmap_range(s, start, bytes);
		audit_add(&s->returning_bytes, -(int64_t)bytes);
	}
	return pg;
}

/*
 * The returner thread: unmaps the pages the maintainer retired beyond the
 * reserve. The kernel's share of giving memory back (zapping page tables,
 * freeing every 4 KiB page, TLB shootdowns) costs about as much as the
 * maintainer's walk that empties the pages (docs/memory.md), so the two run
 * in parallel; the lock is held only to take the whole list at once.
 */
static void *returner_main(void *arg)
{
	struct larder__slab *s = arg;
	(void)pthread_setname_np(pthread_self(), "larder-return"); /* for top -H, perf */
	pthread_mutex_lock(&s->lock);
	while (!s->returner_stop || s->to_unmap) {
		if (!s->to_unmap) {
			pthread_cond_wait(&s->returner_wake, &s->lock);
			continue;
		}
		struct larder__page *pg = s->to_unmap;
		s->to_unmap = NULL;
		s->returner_busy = 1;
		pthread_mutex_unlock(&s->lock);
		while (pg)
			pg = unmap_batch(s, pg);
		pthread_mutex_lock(&s->lock);
		s->returner_busy = 0;
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

int larder__slab_init(struct larder__slab *s)
{
	memset(s, 0, sizeof(*s));
	s->reserve_limit = LARDER__SLAB_RESERVE_MAX;
	s->reserve_parts = 1;
	atomic_init(&s->kept_limit, kept_limit(LARDER__SLAB_RESERVE_MAX));
	if (larder__pagedir_init(&s->dir) != 0)
		return -1;
	if (pthread_mutex_init(&s->lock, NULL) != 0) {
		larder__pagedir_destroy(&s->dir);
		return -1;
	}
	if (pthread_mutex_init(&s->shared_lock, NULL) != 0) {
		pthread_mutex_destroy(&s->lock);
		larder__pagedir_destroy(&s->dir);
		return -1;
	}
	if (pthread_cond_init(&s->returner_wake, NULL) != 0) {
		pthread_mutex_destroy(&s->shared_lock);
		pthread_mutex_destroy(&s->lock);
		larder__pagedir_destroy(&s->dir);
		return -1;
	}
	return 0;
}

int larder__slab_returning(struct larder__slab *s)
{
	pthread_mutex_lock(&s->lock);
	int busy = s->to_unmap != NULL || s->returner_busy;
	pthread_mutex_unlock(&s->lock);
	return busy;
}

void larder__slab_destroy(struct larder__slab *s)
{
	if (s->returner_state == 1) {
		pthread_mutex_lock(&s->lock);
		s->returner_stop = 1;
		pthread_cond_signal(&s->returner_wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->returner, NULL); /* it unmaps what is queued first */
	}
	while (s->all) {
		struct larder__page *pg = s->all;
		s->all = pg->all_next;
		page_unmap(s, pg);
	}
	for (unsigned o = 0; o < LARDER__PAGE_ORDERS; o++) {
		while (s->reserve[o]) {
			struct larder__page *pg = s->reserve[o];
			s->reserve[o] = pg->all_next;
			page_unmap(s, pg);
		}
	}
	pthread_cond_destroy(&s->returner_wake);
	pthread_mutex_destroy(&s->shared_lock);
	pthread_mutex_destroy(&s->lock);
	larder__pagedir_destroy(&s->dir);
}

static void avail_push_locked(struct larder__slab *s, struct larder__page *pg)
{
	LARDER__ASSERT_HELD(&s->lock);
	/* At the tail: a page is listed at its first free, and the maintainer
	 * goes on freeing into it, so the oldest listed page has the most free
	 * slots. Taking the newest made a writer of overwrites change pages
	 * every ~17 puts (two lock round trips and two bitmap scans each). */
	struct larder__page **tail = &s->avail_tail[pg->size_class];
	pg->avail_next = NULL;
	pg->avail_prev = *tail;
	if (*tail)
		(*tail)->avail_next = pg;
	else
		s->avail[pg->size_class] = pg;
	*tail = pg;
}

static void avail_unlink_locked(struct larder__slab *s, struct larder__page *pg)
{
	LARDER__ASSERT_HELD(&s->lock);
	/* Only a listed page is on the list; relaxed: state changes under the lock. */
	LARDER__ASSERT(atomic_load_explicit(&pg->state, LARDER__RELAXED) == LARDER__SLAB_PAGE_LISTED);
	LARDER__ASSERT(pg->avail_prev ? pg->avail_prev->avail_next == pg
				      : s->avail[pg->size_class] == pg);
	if (pg->avail_prev)
		pg->avail_prev->avail_next = pg->avail_next;
	else
		s->avail[pg->size_class] = pg->avail_next;
	if (pg->avail_next)
		pg->avail_next->avail_prev = pg->avail_prev;
	else
		s->avail_tail[pg->size_class] = pg->avail_prev;
}

/* Moves maint_free into owner_free; returns whether anything came. */
static int steal_maint(struct larder__page *pg)
{
	uint64_t got = 0;
	for (uint32_t w = 0; w < pg->nwords; w++) {
		/* SLAB-SL2: acquire, pairs with SLAB-SL1 in larder__slab_free(): the
		 * maintainer's last use of these slots happens before our reuse. */
		uint64_t bits = atomic_exchange_explicit(&larder__slab_maint_free(pg)[w], 0, LARDER__ACQUIRE);
		larder__slab_owner_free(pg)[w] |= bits;
		got |= bits;
	}
	pg->owner_hint = 0;
	return got != 0;
}

/* A free slot of the cursor's page of class k, and (*id) its id, or NULL:
 * from the run, or the run refilled from the next word of the page's
 * owner_free that has a free bit (SLAB-S9). */
static void *cursor_take(struct larder__slab_cursor *c, unsigned k, uint32_t *id)
{
	struct larder__slab_run *r = &c->run[k];
	struct larder__page *pg = c->page[k];
	if (!r->bits) {
		if (!pg)
			return NULL;
		uint64_t *bm = larder__slab_owner_free(pg);
		uint32_t w = pg->owner_hint;
		while (w < pg->nwords && !bm[w])
			w++;
		if (w == pg->nwords) {
			pg->owner_hint = w;
			return NULL;
		}
		r->bits = bm[w];
		bm[w] = 0;
		r->word = w;
		r->first_id = pg->id.first_id + w * 64;
		r->base = (unsigned char *)pg + pg->slots_offset + (size_t)w * 64 * pg->slot_bytes;
		pg->owner_hint = w + 1;
	}
	return larder__slab_run_take(r, pg->slot_bytes, id);
}

/* The run of class k goes back into its page's owner_free (SLAB-S9), before
 * the page leaves the cursor. */
static void run_return(struct larder__slab_cursor *c, unsigned k)
{
	struct larder__slab_run *r = &c->run[k];
	if (!r->bits)
		return;
	struct larder__page *pg = c->page[k];
	LARDER__ASSERT(!(larder__slab_owner_free(pg)[r->word] & r->bits)); /* SLAB-S1 */
	larder__slab_owner_free(pg)[r->word] |= r->bits;
	if (r->word < pg->owner_hint)
		pg->owner_hint = r->word;
	r->bits = 0;
}

/* Takes a page for class c: a listed one, a reserved one, or a new mapping. */
static struct larder__page *page_acquire(struct larder__slab *s, unsigned c)
{
	struct larder__page *pg;
	pthread_mutex_lock(&s->lock);
	pg = s->avail[c];
	if (pg) {
		LARDER__ASSERT(pg->size_class == c);
		avail_unlink_locked(s, pg);
		/* SLAB-SL4 side: the page changes hands under the lock. */
		atomic_store_explicit(&pg->state, LARDER__SLAB_PAGE_OWNED, LARDER__SEQ_CST);
		pthread_mutex_unlock(&s->lock);
		steal_maint(pg);
		return pg;
	}
	size_t bytes = larder__sizeclass_page(c);
	unsigned o = page_order(bytes);
	pg = s->reserve[o];
	if (pg) {
		s->reserve[o] = pg->all_next;
		s->reserve_count[o]--;
		audit_add(&s->reserve_pages, -1);
		audit_add(&s->reserve_bytes, -(int64_t)bytes);
	} else {
		pthread_mutex_unlock(&s->lock);
		pg = larder__pages_map_slab(bytes);
		if (!pg)
			return NULL;
		audit_add(&s->mapped_bytes, (int64_t)bytes);
		pthread_mutex_lock(&s->lock);
	}
	page_format(pg, c);
	if (larder__pagedir_add_locked(&s->dir, &pg->id, (unsigned char *)pg + pg->slots_offset,
				       pg->nslots, pg->slot_bytes) != 0) {
		pthread_mutex_unlock(&s->lock);
		page_unmap(s, pg); /* out of ids (mem/pagedir.h): this put fails */
		return NULL;
	}
	audit_add(&s->class_pages[c], 1);
	/* SLAB-SL4 side, under the lock like every state change. */
	atomic_store_explicit(&pg->state, LARDER__SLAB_PAGE_OWNED, LARDER__SEQ_CST);
	pg->all_prev = NULL;
	pg->all_next = s->all;
	if (s->all)
		s->all->all_prev = pg;
	s->all = pg;
	pthread_mutex_unlock(&s->lock);
	return pg;
}

static int maint_any(struct larder__page *pg)
{
	for (uint32_t w = 0; w < pg->nwords; w++) {
		/* SLAB-SL3: seq_cst, the load half of the Dekker pair with SLAB-SL4. */
		if (atomic_load_explicit(&larder__slab_maint_free(pg)[w], LARDER__SEQ_CST))
			return 1;
	}
	return 0;
}

/* Whether every slot of pg is in maint_free. Relaxed where the caller holds
 * the lock and only needs a lower bound (only the maintainer adds bits, and
 * more bits only make the page emptier: SLAB-S4); seq_cst where it is the
 * load half of SLAB-SL3 (page_release_unless_empty). */
static int maint_full(struct larder__page *pg, memory_order order)
{
	uint32_t count = 0;
	for (uint32_t w = 0; w < pg->nwords; w++)
		count += (uint32_t)__builtin_popcountll(
			atomic_load_explicit(&larder__slab_maint_free(pg)[w], order));
	return count == pg->nslots;
}

static void page_return_locked(struct larder__slab *s, struct larder__page *pg);

/* Removes an empty, unowned page from the slab: to the reserve or the OS. */
static void page_retire_locked(struct larder__slab *s, struct larder__page *pg)
{
	LARDER__ASSERT_HELD(&s->lock);
	/* SLAB-S4: unowned, every slot in maint_free (relaxed: under the lock). */
	LARDER__ASSERT(!(atomic_load_explicit(&pg->state, LARDER__RELAXED) & LARDER__SLAB_PAGE_OWNED));
	LARDER__ASSERT(maint_full(pg, LARDER__RELAXED));
	if (atomic_load_explicit(&pg->state, LARDER__RELAXED) & LARDER__SLAB_PAGE_LISTED)
		avail_unlink_locked(s, pg);
	atomic_store_explicit(&pg->state, 0, LARDER__RELAXED); /* no one else can see it now */
	larder__pagedir_remove_locked(&s->dir, &pg->id);
	if (pg->all_prev)
		pg->all_prev->all_next = pg->all_next;
	else
		s->all = pg->all_next;
	if (pg->all_next)
		pg->all_next->all_prev = pg->all_prev;
	audit_add(&s->class_pages[pg->size_class], -1);
	unsigned o = page_order(pg->page_bytes);
	/* A reserve of reserve_limit bytes per page size (at least one page,
	 * SLAB-S10) saves mmap calls when a cache churns around one size. */
	if (s->reserve_count[o] < reserve_pages_locked(s, pg->page_bytes)) {
		pg->all_next = s->reserve[o];
		s->reserve[o] = pg;
		s->reserve_count[o]++;
		audit_add(&s->reserve_pages, 1);
		audit_add(&s->reserve_bytes, pg->page_bytes);
		return;
	}
	page_return_locked(s, pg);
}

/* Hands pg (empty, on no list) to the returner thread, to unmap. */
static void page_return_locked(struct larder__slab *s, struct larder__page *pg)
{
	LARDER__ASSERT_HELD(&s->lock);
	/* Started here, not at init: a slab that never gives a page back (the
	 * simulator's, a small cache's) costs no thread. */
	if (s->returner_state == 0)
		s->returner_state =
			pthread_create(&s->returner, NULL, returner_main, s) == 0 ? 1 : -1;
	if (s->returner_state < 0) {
		page_unmap(s, pg);
		return;
	}
	if (!s->to_unmap)
		pthread_cond_signal(&s->returner_wake);
	audit_add(&s->returning_bytes, pg->page_bytes);
	pg->all_next = s->to_unmap;
	s->to_unmap = pg;
}

/*
 * Unowned page with free slots: list it (once). Empty, and we are the
 * maintainer: retire it. Only the maintainer retires, because it may be
 * between its bit-set and its own settle for this very page (SLAB-S4).
 */
static void page_settle_locked(struct larder__slab *s, struct larder__page *pg, int maintainer)
{
	LARDER__ASSERT_HELD(&s->lock);
	/* SLAB-SL3 side: seq_cst, against a release racing with a free. */
	uint32_t st = atomic_load_explicit(&pg->state, LARDER__SEQ_CST);
	LARDER__ASSERT(st != (LARDER__SLAB_PAGE_OWNED | LARDER__SLAB_PAGE_LISTED)); /* never both */
	if (st & LARDER__SLAB_PAGE_OWNED)
		return;
	if (maintainer && atomic_load_explicit(&pg->live, LARDER__RELAXED) == 0 &&
	    maint_full(pg, LARDER__RELAXED)) {
		page_retire_locked(s, pg);
		return;
	}
	if (!(st & LARDER__SLAB_PAGE_LISTED) && maint_any(pg)) {
		/* SLAB-SL4 side: seq_cst, under the lock like every state change. */
		atomic_store_explicit(&pg->state, LARDER__SLAB_PAGE_LISTED, LARDER__SEQ_CST);
		avail_push_locked(s, pg);
	}
}

/* The owner's free slots of pg move into maint_free, for whoever takes the
 * page next; under the lock, still owned. */
static void owner_free_hand_over_locked(struct larder__slab *s, struct larder__page *pg)
{
	LARDER__ASSERT_HELD(&s->lock);
	(void)s;
	for (uint32_t w = 0; w < pg->nwords; w++) {
		if (larder__slab_owner_free(pg)[w]) {
			/* SLAB-SL1 (owner side): release, like the maintainer's frees. */
			uint64_t was = atomic_fetch_or_explicit(&larder__slab_maint_free(pg)[w],
								larder__slab_owner_free(pg)[w], LARDER__RELEASE);
			LARDER__ASSERT(!(was & larder__slab_owner_free(pg)[w])); /* SLAB-S1: in both bitmaps */
			(void)was;
			larder__slab_owner_free(pg)[w] = 0;
		}
	}
}

static void page_release(struct larder__slab *s, struct larder__page *pg, int maintainer)
{
	pthread_mutex_lock(&s->lock);
	owner_free_hand_over_locked(s, pg);
	/* SLAB-SL4: seq_cst store before reading maint_free in page_settle_locked(). */
	atomic_store_explicit(&pg->state, 0, LARDER__SEQ_CST);
	page_settle_locked(s, pg, maintainer);
	pthread_mutex_unlock(&s->lock);
}

/*
 * The owner's page_release() at its thread's exit (SLAB-S7): returns 0 when
 * pg went back (listed if it has a free slot), 1 when pg is empty and stays
 * owned, for the maintainer to retire. The emptiness is read after the
 * ownership is dropped (SLAB-SL4, then seq_cst loads: SLAB-SL3's pair from
 * this side), so a free racing with the release is either seen here or sees
 * the page unowned and settles it itself, under the lock, after us: it then
 * finds the page owned again and leaves it. Either way no empty page ends
 * listed, where nothing would retire it.
 */
static int page_release_unless_empty(struct larder__slab *s, struct larder__page *pg)
{
	pthread_mutex_lock(&s->lock);
	owner_free_hand_over_locked(s, pg);
	atomic_store_explicit(&pg->state, 0, LARDER__SEQ_CST); /* SLAB-SL4 */
	int empty = maint_full(pg, LARDER__SEQ_CST);           /* SLAB-SL3 */
	if (empty)
		atomic_store_explicit(&pg->state, LARDER__SLAB_PAGE_OWNED, LARDER__SEQ_CST);
	else
		page_settle_locked(s, pg, 0);
	pthread_mutex_unlock(&s->lock);
	return empty;
}

/* ---- Kept big slots (SLAB-S6) ---- */

/* A kept slot's first bytes: the next on its class's list. */
struct kept_link {
	void *next;
};

static void kept_count_add(struct larder__slab *s, unsigned c, int delta)
{
	/* Relaxed: written under the lock; read without it only as a hint. */
	uint32_t n = atomic_load_explicit(&s->kept_count[c], LARDER__RELAXED);
	atomic_store_explicit(&s->kept_count[c], n + (uint32_t)delta, LARDER__RELAXED);
}

/* Puts big slot p of pg (allocated, not live) on its class's kept list. */
static void keep_push_locked(struct larder__slab *s, struct larder__page *pg, void *p)
{
	LARDER__ASSERT_HELD(&s->lock);
	unsigned c = pg->size_class;
	((struct kept_link *)p)->next = s->kept[c];
	s->kept[c] = p;
	kept_count_add(s, c, 1);
	audit_add(&s->kept_bytes, pg->slot_bytes);
}

/* Takes the first kept slot of class c (there is one). */
static void *keep_pop_locked(struct larder__slab *s, unsigned c)
{
	LARDER__ASSERT_HELD(&s->lock);
	void *p = s->kept[c];
	s->kept[c] = ((struct kept_link *)p)->next;
	kept_count_add(s, c, -1);
	audit_add(&s->kept_bytes, -(int64_t)larder__sizeclass_slot(c));
	return p;
}

/* Takes a kept slot of any class, with its page in *pg; NULL when none. */
static void *keep_pop_any_locked(struct larder__slab *s, struct larder__page **pg)
{
	for (unsigned c = 0; c < LARDER__SIZECLASS_COUNT; c++) {
		if (s->kept[c]) {
			void *p = keep_pop_locked(s, c);
			*pg = larder__slab_page_of_class(p, c);
			return p;
		}
	}
	return NULL;
}

/* Writer: a kept slot of class c with its id, or NULL. */
static void *keep_take(struct larder__slab *s, unsigned c, uint32_t *id)
{
	/* Relaxed: a hint whether to take the lock, which decides. */
	if (!atomic_load_explicit(&s->kept_count[c], LARDER__RELAXED))
		return NULL;
	void *p = NULL;
	pthread_mutex_lock(&s->lock);
	if (s->kept[c])
		p = keep_pop_locked(s, c);
	pthread_mutex_unlock(&s->lock);
	if (p) {
		struct larder__page *pg = larder__slab_page_of_class(p, c);
		*id = pg->id.first_id + (uint32_t)larder__slab_slot_index(pg, p); /* mem/pagedir.h */
	}
	return p;
}

/* A private mapping: its page header (one id, mem/pagedir.h), then the entry. */
static __attribute__((noinline)) void *large_alloc(struct larder__slab *s, size_t bytes,
						   uint32_t *id)
{
	size_t len = larder__slab_charge(bytes);
	struct larder__pageid *pg = larder__pages_map(len, LARDER__OS_PAGE);
	if (!pg)
		return NULL;
	unsigned char *p = (unsigned char *)pg + LARDER__PAGEDIR_LARGE_PREFIX;
	pthread_mutex_lock(&s->lock);
	int rc = larder__pagedir_add_locked(&s->dir, pg, p, 1, 0);
	pthread_mutex_unlock(&s->lock);
	if (rc != 0) {
		larder__pages_unmap(pg, len);
		return NULL;
	}
	audit_add(&s->mapped_bytes, (int64_t)len);
	audit_add(&s->large_bytes, (int64_t)len);
	*id = pg->first_id;
	return p;
}

static void large_free(struct larder__slab *s, void *p, size_t bytes)
{
	size_t len = larder__slab_charge(bytes);
	struct larder__pageid *pg =
		(void *)((unsigned char *)p - LARDER__PAGEDIR_LARGE_PREFIX);
	pthread_mutex_lock(&s->lock);
	larder__pagedir_remove_locked(&s->dir, pg);
	pthread_mutex_unlock(&s->lock);
	unmap_range(s, pg, len);
	audit_add(&s->large_bytes, -(int64_t)len);
}

/* The cursor's page of class k has no free slot of its own (or there is
 * none): the maintainer's frees, else another page. */
static void *cursor_refill(struct larder__slab *s, struct larder__slab_cursor *c, unsigned k,
			   uint32_t *id)
{
	struct larder__page *pg = c->page[k];
	if (pg) {
		void *p;
		/* The run is empty: cursor_take() found no slot. */
		if (steal_maint(pg) && (p = cursor_take(c, k, id)))
			return p;
		c->page[k] = NULL;
		page_release(s, pg, 0);
	}
	pg = page_acquire(s, k);
	if (!pg)
		return NULL;
	c->page[k] = pg;
	return cursor_take(c, k, id);
}

/* A slot of class k from the shared cursor (SLAB-S8). */
static void *shared_alloc(struct larder__slab *s, unsigned k, uint32_t *id)
{
	pthread_mutex_lock(&s->shared_lock);
	void *p = cursor_take(&s->shared, k, id);
	if (!p)
		p = cursor_refill(s, &s->shared, k, id);
	pthread_mutex_unlock(&s->shared_lock);
	return p;
}

/* larder__slab_alloc_id() when the cursor's page of class k has no free
 * slot of its own, or the cursor has none: from the shared cursor while
 * the thread has taken few slots of the class (SLAB-S8), else a refill.
 * Out of line, so that the common case saves and restores few registers. */
static __attribute__((noinline)) void *alloc_refill(struct larder__slab *s,
						    struct larder__slab_cursor *c, unsigned k,
						    uint32_t *id)
{
	if (s->share_first && !c->page[k] && c->shared_allocs[k] < LARDER__SLAB_OWN_AFTER) {
		c->shared_allocs[k]++;
		return shared_alloc(s, k, id);
	}
	return cursor_refill(s, c, k, id);
}

/* larder__slab_alloc_id() for entries above LARDER__SLAB_BIG_FROM: a private
 * mapping, or a slot of a big class, kept (SLAB-S6) or from the cursor. */
static __attribute__((noinline)) void *big_alloc(struct larder__slab *s,
						 struct larder__slab_cursor *c, size_t bytes,
						 uint32_t *id)
{
	if (bytes > LARDER__SLAB_MAX_SLOT)
		return large_alloc(s, bytes, id);
	unsigned k = larder__sizeclass_of(bytes);
	void *p = keep_take(s, k, id);
	if (p)
		return p;
	p = cursor_take(c, k, id);
	return p ? p : alloc_refill(s, c, k, id);
}

void *larder__slab_alloc_id_slow(struct larder__slab *s, struct larder__slab_cursor *c,
				 size_t bytes, uint32_t *id)
{
	if (bytes > LARDER__SLAB_BIG_FROM)
		return big_alloc(s, c, bytes, id);
	unsigned k = larder__sizeclass_of(bytes);
	void *p = cursor_take(c, k, id);
	return p ? p : alloc_refill(s, c, k, id);
}

void *larder__slab_alloc(struct larder__slab *s, struct larder__slab_cursor *c, size_t bytes)
{
	uint32_t id;
	return larder__slab_alloc_id(s, c, bytes, &id);
}

/* Slot p of pg, which cursor c owns, is free for it again: back into the
 * run when it came from the run's word, else into owner_free (SLAB-S9). */
static void owner_give_back(struct larder__slab_cursor *c, struct larder__page *pg, void *p)
{
	size_t i = larder__slab_slot_index(pg, p);
	uint64_t bit = (uint64_t)1 << (i % 64);
	struct larder__slab_run *r = &c->run[pg->size_class];
	if (r->bits && r->word == i / 64) {
		r->bits |= bit;
		return;
	}
	larder__slab_owner_free(pg)[i / 64] |= bit;
	if (i / 64 < pg->owner_hint)
		pg->owner_hint = (uint32_t)(i / 64);
}

void larder__slab_unalloc(struct larder__slab *s, struct larder__slab_cursor *c, void *p,
			  size_t bytes)
{
	if (bytes > LARDER__SLAB_MAX_SLOT) {
		large_free(s, p, bytes);
		return;
	}
	struct larder__page *pg = larder__slab_page_of(p, bytes);
	if (bytes > LARDER__SLAB_BIG_FROM && c->page[pg->size_class] != pg) {
		/* A kept slot of another page (big_alloc), or a shared one: kept
		 * (again). It may take the kept bytes past the limit, by one slot
		 * per writer, until the maintainer's next larder__slab_keep_trim(). */
		pthread_mutex_lock(&s->lock);
		keep_push_locked(s, pg, p);
		pthread_mutex_unlock(&s->lock);
		return;
	}
	if (c->page[pg->size_class] == pg) {
		owner_give_back(c, pg, p); /* the page this cursor still owns */
		return;
	}
	/* From the shared cursor (SLAB-S8). */
	pthread_mutex_lock(&s->shared_lock);
	if (s->shared.page[pg->size_class] == pg) {
		owner_give_back(&s->shared, pg, p);
	} else {
		size_t i = larder__slab_slot_index(pg, p);
		pthread_mutex_lock(&s->lock);
		/* SLAB-SL1 (owner side), as page_release() does for its slots. */
		atomic_fetch_or_explicit(&larder__slab_maint_free(pg)[i / 64],
					 (uint64_t)1 << (i % 64), LARDER__RELEASE);
		page_settle_locked(s, pg, 0);
		pthread_mutex_unlock(&s->lock);
	}
	pthread_mutex_unlock(&s->shared_lock);
}

void larder__slab_release_cursor(struct larder__slab *s, struct larder__slab_cursor *c)
{
	for (unsigned k = 0; k < LARDER__SIZECLASS_COUNT; k++) {
		if (c->page[k]) {
			run_return(c, k);
			page_release(s, c->page[k], 1);
			c->page[k] = NULL;
		}
	}
}

void larder__slab_release_shared(struct larder__slab *s)
{
	pthread_mutex_lock(&s->shared_lock); /* its owner now (SLAB-S8) */
	larder__slab_release_cursor(s, &s->shared);
	pthread_mutex_unlock(&s->shared_lock);
}

void larder__slab_release_shared_later(struct larder__slab *s)
{
	/* Relaxed: a request, ordering nothing; the pages it concerns are read
	 * under shared_lock. The cutter's wake (larder__maint_wake_all) or at
	 * worst a later pass of the maintainer sees it. */
	atomic_store_explicit(&s->shared_release_due, 1, LARDER__RELAXED);
}

void larder__slab_shared_trim(struct larder__slab *s)
{
	/* Relaxed: see larder__slab_release_shared_later(). */
	if (atomic_load_explicit(&s->shared_release_due, LARDER__RELAXED) &&
	    atomic_exchange_explicit(&s->shared_release_due, 0, LARDER__RELAXED))
		larder__slab_release_shared(s);
}

void larder__slab_release_cursor_at_exit(struct larder__slab *s, struct larder__slab_cursor *c)
{
	for (unsigned k = 0; k < LARDER__SIZECLASS_COUNT; k++) {
		if (!c->page[k])
			continue;
		run_return(c, k);
		if (!page_release_unless_empty(s, c->page[k]))
			c->page[k] = NULL;
	}
}

void larder__slab_page_settle(struct larder__slab *s, struct larder__page *pg)
{
	pthread_mutex_lock(&s->lock);
	page_settle_locked(s, pg, 1);
	pthread_mutex_unlock(&s->lock);
}

/* n slots of pg had their maint_free bits set (SLAB-SL1): the live counts drop,
 * and the page is listed or retired if it has to be. */
static inline void page_slots_freed(struct larder__slab *s, struct larder__page *pg, uint32_t n)
{
	larder__slab_page_bits_freed(s, pg, larder__slab_page_live_drop(pg, n));
}

/* Gives the whole OS pages of big slot p back to the kernel (SLAB-S6). */
static void slot_release(const struct larder__page *pg, void *p)
{
	uintptr_t from = ((uintptr_t)p + LARDER__OS_PAGE - 1) & ~(uintptr_t)(LARDER__OS_PAGE - 1);
	uintptr_t to = ((uintptr_t)p + pg->slot_bytes) & ~(uintptr_t)(LARDER__OS_PAGE - 1);
	if (to > from)
		larder__pages_release((void *)from, to - from);
}

/* Maintainer: keeps freed big slot p when the limit allows (SLAB-S6).
 * Returns 1 when it did (its page's live count dropped), else 0. */
static int keep_freed(struct larder__slab *s, struct larder__page *pg, void *p)
{
	pthread_mutex_lock(&s->lock);
	/* Relaxed: written under the lock we hold. */
	int room = atomic_load_explicit(&s->kept_bytes, LARDER__RELAXED) + pg->slot_bytes <=
		   atomic_load_explicit(&s->kept_limit, LARDER__RELAXED);
	if (room)
		keep_push_locked(s, pg, p);
	pthread_mutex_unlock(&s->lock);
	if (!room)
		return 0;
	larder__slab_page_live_drop(pg, 1);
	return 1;
}

/* slot_freeing() for a poisoned or big slot. */
static __attribute__((noinline)) int slot_freeing_rare(struct larder__slab *s,
							struct larder__page *pg, void *p)
{
	if (larder__slab_poison)
		memset(p, 0xdb, pg->slot_bytes);
	if (pg->slot_bytes < RELEASE_SLOT_BYTES)
		return 0;
	if (keep_freed(s, pg, p))
		return 1;
	slot_release(pg, p);
	return 0;
}

/* Maintainer: slot p of pg, of an entry of `bytes`, is freed, poisoned
 * first if asked. Returns 1 when a big slot was kept (SLAB-S6); else 0, a
 * big slot's pages having gone back to the kernel, and the caller sets its
 * free bit. Inline for the common case, an unpoisoned slot below
 * RELEASE_SLOT_BYTES (an entry up to LARDER__SLAB_BIG_FROM), which has nothing to
 * do: the call it saves was 17 of the maintainer's 257 instructions per
 * put (docs/bench.md). */
static inline int slot_freeing(struct larder__slab *s, struct larder__page *pg, void *p,
			       size_t bytes)
{
	if (__builtin_expect(bytes <= LARDER__SLAB_BIG_FROM && !larder__slab_poison, 1))
		return 0;
	return slot_freeing_rare(s, pg, p);
}

void larder__slab_free_slow(struct larder__slab *s, void *p, size_t bytes)
{
	if (bytes > LARDER__SLAB_MAX_SLOT) {
		larder__slab_unalloc(s, NULL, p, bytes);
		return;
	}
	struct larder__page *pg = larder__slab_page_of(p, bytes);
	if (slot_freeing(s, pg, p, bytes))
		return;
	larder__slab_slot_bit_set(pg, p);
	page_slots_freed(s, pg, 1);
}

void larder__slab_keep_trim(struct larder__slab *s, int all)
{
	/* Relaxed: hints; the lock below decides. */
	if (!all && atomic_load_explicit(&s->kept_bytes, LARDER__RELAXED) <=
			    atomic_load_explicit(&s->kept_limit, LARDER__RELAXED))
		return;
	for (;;) {
		struct larder__page *pg = NULL;
		void *p = NULL;
		pthread_mutex_lock(&s->lock);
		/* Relaxed: written under the lock we hold. */
		if (atomic_load_explicit(&s->kept_bytes, LARDER__RELAXED) >
		    (all ? 0 : atomic_load_explicit(&s->kept_limit, LARDER__RELAXED)))
			p = keep_pop_any_locked(s, &pg);
		pthread_mutex_unlock(&s->lock);
		if (!p)
			return;
		/* Not live (SLAB-S6): released and set free like a freed slot,
		 * without the live counts, which dropped when it was kept. */
		slot_release(pg, p);
		larder__slab_slot_bit_set(pg, p);
		larder__slab_page_bits_freed(s, pg, atomic_load_explicit(&pg->live, LARDER__RELAXED)); /* ours */
	}
}

uint64_t larder__slab_kept_bytes(struct larder__slab *s)
{
	return atomic_load_explicit(&s->kept_bytes, LARDER__RELAXED); /* a reading */
}

void larder__slab_batch_flush(struct larder__slab *s, struct larder__slab_batch *b)
{
	struct larder__page *pg = b->page;
	if (!pg)
		return;
	for (uint32_t w = 0; w < pg->nwords; w++) {
		if (b->bits[w]) {
			/* SLAB-SL1, as in larder__slab_free(): the batch's reads of
			 * these slots (listener, poisoning) came before. */
			uint64_t was = atomic_fetch_or_explicit(&larder__slab_maint_free(pg)[w], b->bits[w],
								LARDER__SEQ_CST);
			LARDER__ASSERT(!(was & b->bits[w])); /* SLAB-S1: freed twice */
			(void)was;
			b->bits[w] = 0;
		}
	}
	page_slots_freed(s, pg, b->slots);
	b->page = NULL;
	b->slots = 0;
}

void larder__slab_free_batched(struct larder__slab *s, struct larder__slab_batch *b, void *p,
			       size_t bytes)
{
	if (bytes > LARDER__SLAB_MAX_SLOT) {
		larder__slab_free(s, p, bytes);
		return;
	}
	struct larder__page *pg = larder__slab_page_of(p, bytes);
	if (slot_freeing(s, pg, p, bytes))
		return;
	if (pg != b->page) {
		larder__slab_batch_flush(s, b);
		b->page = pg;
	}
	size_t i = larder__slab_slot_index(pg, p);
	b->bits[i / 64] |= (uint64_t)1 << (i % 64);
	b->slots++;
}

void larder__slab_set_reserve(struct larder__slab *s, uint64_t bytes, unsigned part,
			      unsigned parts)
{
	LARDER__ASSERT(parts > 0 && part < parts);
	pthread_mutex_lock(&s->lock);
	s->reserve_limit = bytes;
	s->reserve_part = part;
	s->reserve_parts = parts;
	/* Relaxed: written under the lock; read as a hint by
	 * larder__slab_keep_trim(), which the maintainer runs every pass, there
	 * to give back what is over it. */
	atomic_store_explicit(&s->kept_limit, kept_limit(bytes) / parts, LARDER__RELAXED);
	/* What a smaller limit leaves over goes back at once (SLAB-S10's
	 * share, as page_retire_locked() keeps it). */
	for (unsigned o = 0; o < LARDER__PAGE_ORDERS; o++) {
		size_t page = (size_t)LARDER__PAGE_MIN << o;
		while (s->reserve_count[o] > reserve_pages_locked(s, page)) {
			struct larder__page *pg = s->reserve[o];
			s->reserve[o] = pg->all_next;
			s->reserve_count[o]--;
			audit_add(&s->reserve_pages, -1);
			audit_add(&s->reserve_bytes, -(int64_t)page);
			page_return_locked(s, pg);
		}
	}
	pthread_mutex_unlock(&s->lock);
}

void larder__slab_stats(struct larder__slab *s, uint64_t *v)
{
	/* Relaxed: statistics, each exact on its own. */
	v[LARDER_STAT_PAGES_MAPPED] += atomic_load_explicit(&s->mapped_bytes, LARDER__RELAXED);
	v[LARDER_STAT_PAGES_RETURNED] += atomic_load_explicit(&s->returned_bytes, LARDER__RELAXED);
	v[LARDER_STAT_RESERVE_BYTES] += atomic_load_explicit(&s->reserve_bytes, LARDER__RELAXED);
	v[LARDER_STAT_RESERVE_PAGES] += atomic_load_explicit(&s->reserve_pages, LARDER__RELAXED);
	v[LARDER_STAT_LARGE_BYTES] += atomic_load_explicit(&s->large_bytes, LARDER__RELAXED);
	v[LARDER_STAT_RETURNING_BYTES] += atomic_load_explicit(&s->returning_bytes, LARDER__RELAXED);
}

void larder__slab_class_stats(struct larder__slab *s, unsigned c,
			      uint64_t v[LARDER_CLASS_STAT_COUNT])
{
	/* Relaxed: statistics. A page counted before its first slot is (or
	 * after its last) makes used <= pages x slots per page still hold. */
	uint64_t pages = atomic_load_explicit(&s->class_pages[c], LARDER__RELAXED);
	uint64_t used = atomic_load_explicit(&s->class_live[c], LARDER__RELAXED);
	uint64_t slots = pages * class_layout(c).nslots;
	v[LARDER_CLASS_SLOT_BYTES] = larder__sizeclass_slot(c);
	v[LARDER_CLASS_PAGE_BYTES] = larder__sizeclass_page(c);
	v[LARDER_CLASS_PAGES] += pages;
	v[LARDER_CLASS_SLOTS_USED] += used;
	v[LARDER_CLASS_SLOTS_FREE] += slots > used ? slots - used : 0;
	v[LARDER_CLASS_BYTES] += pages * larder__sizeclass_page(c);
	v[LARDER_CLASS_USED_BYTES] += used * larder__sizeclass_slot(c);
}
