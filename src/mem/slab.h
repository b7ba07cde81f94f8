/*
 * mem/slab.h - size-class slots carved from pages, one slab per cache.
 *
 * Writers allocate; only the maintainer frees. Each page has two free
 * bitmaps so the two never write the same word without an atomic:
 *   - owner_free: the free slots the owning writer may hand out. Plain memory,
 *     touched only by the thread whose cursor holds the page.
 *   - maint_free: slots the maintainer freed since. The maintainer sets bits
 *     with atomic OR; the owner takes them all at once with atomic exchange.
 * A page is owned by at most one cursor (state OWNED), or sits on its class's
 * available list (state LISTED) when it has free slots, or is full and on no
 * list. Empty pages go to a small reserve, beyond which a returner thread
 * (one per slab, started with the first page to unmap) unmaps them. Freed
 * slots of 64 KiB or more go back to the kernel, except a bounded number
 * kept resident for the next writer of their size (SLAB-S6). See slab.c for
 * the state machine and its invariants.
 */
#ifndef LARDER_MEM_SLAB_H
#define LARDER_MEM_SLAB_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "core/assert.h"
#include "larder.h"
#include "mem/pagedir.h"
#include "mem/sizeclass.h"
#include "sync/atomic.h"

#define LARDER__PAGE_ORDERS 6 /* 64 KiB << 0..5 */

/* A slab page's header (slab.c has the page layout and the state machine),
 * here for the writer's inline allocation, larder__slab_alloc_id(). */
struct larder__page {
	struct larder__pageid id; /* first: mem/pagedir.h finds it by masking */
	uint32_t size_class;
	uint32_t nslots;
	uint32_t slot_bytes;
	uint32_t nwords;
	uint32_t page_bytes;
	uint32_t slots_offset;
	uint32_t maint_offset; /* of maint_free; owner_free follows this header */
	uint32_t owner_hint;   /* owner only: first word that may have a free bit (SLAB-S9) */
	larder__atomic_u32 state;
	/* Published slots the maintainer knows of: written by the maintainer only,
	 * read under the lock by writers releasing a page; relaxed, because
	 * retirement re-checks the bitmap (SLAB-S4) and only uses this as a hint.
	 * On the first line, with what the maintainer's free reads of the page
	 * (recip, slots_offset, maint_offset, state), so that a free touches two
	 * of the header's lines, not three: pages are aligned to 64 KiB, so every
	 * header's lines fall in the same few cache sets and miss in most frees
	 * (docs/results/bench-history.md, "The maintainer's share and the mix"). The owning
	 * writer reads and writes this line once per run of 64 slots (SLAB-S9);
	 * before runs it did for every slot, and live sat on the second line
	 * ("The writer's and the maintainer's lines"). */
	larder__atomic_u32 live;
	/* The second line: the lists, changed under the lock only. */
	struct larder__page *avail_prev __attribute__((aligned(64)));
	struct larder__page *avail_next, *all_prev, *all_next;
} __attribute__((aligned(64)));

_Static_assert(sizeof(struct larder__page) == 128, "a page header is two lines");
_Static_assert(offsetof(struct larder__page, live) < 64 &&
		       offsetof(struct larder__page, id.recip) < 64,
	       "live is on the line the free reads");

/* The owner's free bitmap, which follows the page header. */
static inline uint64_t *larder__slab_owner_free(struct larder__page *pg)
{
	return (uint64_t *)(void *)(pg + 1);
}

/*
 * A writer's run of free slots (SLAB-S9 in slab.c): the free bits of one
 * word of its page's owner_free, taken out of the bitmap at once, with what
 * turns a bit into a slot and an id. A put takes the lowest bit: no page
 * header, hint or bitmap is read per slot (the allocation's part of a put
 * fell from about 46 to 35 instructions, docs/bench.md). Zeroed: empty.
 */
struct larder__slab_run {
	uint64_t bits;        /* free slots not yet handed out; 0: empty */
	unsigned char *base;  /* the slot of the word's bit 0 */
	uint32_t first_id;    /* its id (mem/pagedir.h) */
	uint32_t word;        /* the owner_free word the bits came from */
};

/* Takes the run's lowest slot (bits not 0) of slot_bytes, its id in *id. */
static inline void *larder__slab_run_take(struct larder__slab_run *r, size_t slot_bytes,
					  uint32_t *id)
{
	uint64_t bits = r->bits;
	unsigned i = (unsigned)__builtin_ctzll(bits);
	r->bits = bits & (bits - 1);
	*id = r->first_id + i;
	/* A run with bits lies in a page, never at NULL: say it, so that the
	 * caller's test for a failed allocation folds away (2 Ir per put). */
	if (!r->base)
		__builtin_unreachable();
	return r->base + (size_t)i * slot_bytes;
}

/* The largest entry whose slot is below 64 KiB (slab.c's RELEASE_SLOT_BYTES):
 * the 56 KiB class's slot (mem/sizeclass.h; tests/unit/test_memory.c checks
 * it). Entries above it go through slab.c's big_alloc(), which takes a kept
 * slot first. */
#define LARDER__SLAB_BIG_FROM (57344u)

/* In a slab that shares first (a cache's; not the simulators', whose one
 * cursor would gain nothing), a thread allocates its first
 * LARDER__SLAB_OWN_AFTER slots of a class from the slab's shared pages, and
 * owns a page of the class only after (SLAB-S8). */
#define LARDER__SLAB_OWN_AFTER 32u

struct larder__slab_cursor {
	/* Each class's run, from that class's page below (SLAB-S9). */
	struct larder__slab_run run[LARDER__SIZECLASS_COUNT];
	struct larder__page *page[LARDER__SIZECLASS_COUNT]; /* owned pages, one per class */
	uint8_t shared_allocs[LARDER__SIZECLASS_COUNT]; /* up to LARDER__SLAB_OWN_AFTER */
};

struct larder__slab {
	pthread_mutex_t lock; /* guards every list below; taken once per page, not per slot */
	struct larder__pagedir dir; /* ids of the slots (mem/pagedir.h); grown under lock */
	/* Pages with free slots and no owner, per class, oldest listed first: a
	 * writer takes the page whose frees have had longest to gather. */
	struct larder__page *avail[LARDER__SIZECLASS_COUNT];
	struct larder__page *avail_tail[LARDER__SIZECLASS_COUNT];
	struct larder__page *all;
	/* The pages light writers share (SLAB-S8): a cursor whose owner_free is
	 * touched only under shared_lock, which is taken before lock, never
	 * after it. */
	pthread_mutex_t shared_lock;
	struct larder__slab_cursor shared;
	/* A capacity cut's request that the maintainer hand the shared pages
	 * back (larder__slab_release_shared_later): set by the cutter, taken
	 * by the maintainer's next pass. */
	larder__atomic_int shared_release_due;
	int share_first; /* SLAB-S8 applies: set before the first allocation */
	struct larder__page *reserve[LARDER__PAGE_ORDERS];
	unsigned reserve_count[LARDER__PAGE_ORDERS];
	/* Under lock: bytes of empty pages kept per page size by the slabs that
	 * share one reserve (a cache's shards), and which of them this is. */
	uint64_t reserve_limit;
	unsigned reserve_part, reserve_parts;
	/* Freed big slots kept resident, per class (SLAB-S6): linked through
	 * their first bytes, under lock. kept_count is their number (written
	 * under lock, read without it as a hint whether to take the lock). */
	void *kept[LARDER__SIZECLASS_COUNT];
	larder__atomic_u32 kept_count[LARDER__SIZECLASS_COUNT];
	/* Their bytes, and the most kept (4 x reserve_limit, at most
	 * LARDER__SLAB_RESERVE_MAX, split among the reserve's parts): written
	 * under lock, read without it by the maintainer's trim as a hint. */
	larder__atomic_u64 kept_bytes;
	larder__atomic_u64 kept_limit;
	/* Empty pages beyond the reserve, waiting for the returner thread to
	 * unmap them (under lock; linked through all_next). */
	struct larder__page *to_unmap;
	pthread_cond_t returner_wake; /* signalled when to_unmap fills or at stop */
	pthread_t returner;
	int returner_state;   /* under lock: 0 not started (started by the first
			       * page to unmap), 1 running, -1 could not start:
			       * unmap inline */
	int returner_stop;    /* under lock */
	int returner_busy;    /* under lock: pages taken off to_unmap, not yet unmapped */
	/* Statistics; relaxed: nothing is ordered by them. */
	larder__atomic_u64 mapped_bytes;   /* slab pages and large entries held now */
	larder__atomic_u64 returned_bytes; /* unmapped so far */
	larder__atomic_u64 large_bytes;    /* large entries' mappings held now */
	larder__atomic_u64 reserve_pages;  /* written under lock: pages in reserve[] */
	larder__atomic_u64 reserve_bytes;  /* written under lock: their bytes */
	larder__atomic_u64 returning_bytes; /* on to_unmap or being unmapped */
	/* Audit per size class (larder_stats_size_class): pages held (written
	 * under lock) and live slots: entries the maintainer counted and has
	 * not retired (written by the maintainer only, in note_live and
	 * note_gone; not at the free, so that an overwrite, which retires an
	 * entry of the class it counts, moves neither, docs/bench.md). */
	larder__atomic_u64 class_pages[LARDER__SIZECLASS_COUNT];
	larder__atomic_u64 class_live[LARDER__SIZECLASS_COUNT];
};

/* The most empty pages a slab keeps, per page size, for reuse. */
#define LARDER__SLAB_RESERVE_MAX (4u * 1024u * 1024u)

int larder__slab_init(struct larder__slab *s);
/* Sets how many bytes of empty pages the slab keeps per page size (at least
 * one page each), and of freed big slots (SLAB-S6), when it is part `part`
 * of `parts` slabs that share that reserve (a cache's shards): each keeps
 * its share, so that together they keep what one slab would (SLAB-S10).
 * Pages over a lower limit go back to the OS at once, kept slots at the
 * maintainer's next larder__slab_keep_trim(). */
void larder__slab_set_reserve(struct larder__slab *s, uint64_t bytes, unsigned part,
			      unsigned parts);
/* Maintainer: gives kept big slots back to the kernel and frees them, down
 * to the reserve's limit, or all of them when `all` (a clear emptied the
 * cache). */
void larder__slab_keep_trim(struct larder__slab *s, int all);
/* Bytes of freed big slots kept resident (a reading, for tests). */
uint64_t larder__slab_kept_bytes(struct larder__slab *s);
/* Stops the returner and unmaps every slab page. Large entries are the
 * caller's to free first. */
void larder__slab_destroy(struct larder__slab *s);
/* Whether empty pages are still waiting to be unmapped (test seam: quiesce). */
int larder__slab_returning(struct larder__slab *s);

/* Bytes charged for an entry of this size: its slot, or its mapping (whose
 * first 64 bytes are its page header, mem/pagedir.h). The class is computed
 * whatever the size (any size has one; a mapping's is not used), so that a
 * writer's inline larder__slab_alloc_id() of the same size reuses it. */
static inline size_t larder__slab_charge(size_t bytes)
{
	size_t slot = larder__sizeclass_slot(larder__sizeclass_of(bytes));
	if (bytes > LARDER__SLAB_MAX_SLOT)
		return (bytes + LARDER__PAGEDIR_LARGE_PREFIX + 4095) & ~(size_t)4095;
	return slot;
}

/* larder__slab_alloc_id()'s inline case alone, for a slot of class k
 * (larder__sizeclass_of() of at most LARDER__SLAB_BIG_FROM bytes): the
 * run's slot, or NULL (nothing taken) where larder__slab_alloc_id() would
 * call larder__slab_alloc_id_slow() (the plain put's fast path, core/cache.c). */
static inline void *larder__slab_run_try(struct larder__slab_cursor *c, unsigned k, uint32_t *id)
{
	if (__builtin_expect(c->run[k].bits == 0, 0))
		return NULL;
	return larder__slab_run_take(&c->run[k], larder__sizeclass_slot(k), id);
}
/* Writer: a slot of at least bytes, 8-byte aligned, with an id (mem/pagedir.h).
 * NULL when out of memory or out of ids. */
void *larder__slab_alloc(struct larder__slab *s, struct larder__slab_cursor *c, size_t bytes);
/* larder__slab_alloc_id() beyond its inline case. */
void *larder__slab_alloc_id_slow(struct larder__slab *s, struct larder__slab_cursor *c,
				 size_t bytes, uint32_t *id);
/*
 * The same, with the slot's id in *id: what larder__pagedir_id() would
 * compute. Inline for the common case, a slot left in the cursor's run of
 * the size class (SLAB-S9 in slab.c; the run is the cursor's alone): no
 * call, no page header read, and the class and slot size are the ones the
 * caller computed for the charge (larder__slab_charge), not computed again
 * (docs/bench.md).
 */
static inline void *larder__slab_alloc_id(struct larder__slab *s, struct larder__slab_cursor *c,
					  size_t bytes, uint32_t *id)
{
	if (__builtin_expect(bytes <= LARDER__SLAB_BIG_FROM, 1)) {
		void *p = larder__slab_run_try(c, larder__sizeclass_of(bytes), id);
		if (__builtin_expect(p != NULL, 1))
			return p;
	}
	/* Through a copy: the caller's id stays in a register (2 Ir per put). */
	uint32_t slow_id;
	void *p = larder__slab_alloc_id_slow(s, c, bytes, &slow_id);
	*id = slow_id;
	return p;
}
/* Writer: gives back a slot this cursor allocated and never published. */
void larder__slab_unalloc(struct larder__slab *s, struct larder__slab_cursor *c, void *p,
			  size_t bytes);
/* Maintainer (or close): hands every page of the cursor back (thread exit, close). */
void larder__slab_release_cursor(struct larder__slab *s, struct larder__slab_cursor *c);
/* Maintainer, once a clear has emptied the cache: hands back the shared
 * cursor's pages (SLAB-S8), so that they are retired as their last slots
 * are freed instead of staying mapped, empty, for light writers. */
void larder__slab_release_shared(struct larder__slab *s);
/* Any thread, at a capacity cut: asks the maintainer to do the same at its
 * next pass (larder__slab_shared_trim), so that the pages the cut's
 * evictions empty are retired like every other page (SLAB-S8). */
void larder__slab_release_shared_later(struct larder__slab *s);
/* Maintainer, every pass: larder__slab_release_shared() if a cut asked. */
void larder__slab_shared_trim(struct larder__slab *s);
/* The cursor's owner, as its thread exits: hands back every page but the
 * empty ones, which stay in the cursor for larder__slab_release_cursor()
 * (SLAB-S7 in slab.c). */
void larder__slab_release_cursor_at_exit(struct larder__slab *s, struct larder__slab_cursor *c);

/* Bitmap words of the fullest page: 64 KiB of 32-byte slots (sizeclass.h). */
#define LARDER__SLAB_BATCH_WORDS ((LARDER__PAGE_MIN / LARDER__SLAB_MIN_SLOT + 63) / 64)

/*
 * Maintainer: frees gathered per page, for a caller that frees many slots
 * of one page in a row (the clear walk, in address order). The slots' bits
 * are set with one atomic OR per bitmap word, and the page's counts and
 * state are settled once, when the next slot is on another page or at
 * larder__slab_batch_flush(); until then the slots stay allocated. Flush
 * before anything else may free on those pages' behalf (end of the pass).
 */
struct larder__slab_batch {
	struct larder__page *page; /* NULL: empty */
	uint32_t slots;
	uint64_t bits[LARDER__SLAB_BATCH_WORDS];
};
void larder__slab_free_batched(struct larder__slab *s, struct larder__slab_batch *b, void *p,
			       size_t bytes);
void larder__slab_batch_flush(struct larder__slab *s, struct larder__slab_batch *b);
/* The page of slot p of class c: pages are aligned to their size, so a mask. */
static inline struct larder__page *larder__slab_page_of_class(void *p, unsigned c)
{
	return (struct larder__page *)((uintptr_t)p &
				       ~(uintptr_t)(larder__sizeclass_page(c) - 1));
}

/* The page of slot p, of an entry of `bytes` in a slab page (up to
 * LARDER__SLAB_MAX_SLOT). */
static inline struct larder__page *larder__slab_page_of(void *p, size_t bytes)
{
	return larder__slab_page_of_class(p, larder__sizeclass_of(bytes));
}

/* Maintainer: its count of live slots in class c moves by delta. */
static inline void larder__slab_class_live_add(struct larder__slab *s, unsigned c, int64_t delta)
{
	uint64_t n = atomic_load_explicit(&s->class_live[c], LARDER__RELAXED); /* ours */
	atomic_store_explicit(&s->class_live[c], n + (uint64_t)delta,
			      LARDER__RELAXED); /* single writer */
}

/* Maintainer: a slot of page pg holds a published entry until it is freed:
 * the page's live count (the slots not free, which decides when the page is
 * empty) rises. Inline: the maintainer's overwrite path calls it once per
 * put, with the page found by the mask it keeps per size class
 * (maint/state.h, docs/bench.md). */
static inline void larder__slab_note_page_live(struct larder__page *pg)
{
	uint32_t live = atomic_load_explicit(&pg->live, LARDER__RELAXED); /* ours */
	atomic_store_explicit(&pg->live, live + 1, LARDER__RELAXED);        /* single writer */
}

/* The same for slot p of size class c (a slab slot, not a large entry's
 * mapping). */
static inline void larder__slab_note_slot_live(void *p, unsigned c)
{
	larder__slab_note_page_live(larder__slab_page_of_class(p, c));
}

/* Maintainer: an entry in slot p of size class c was published and counted
 * (its page's live slots and its class's live entries). */
static inline void larder__slab_note_live_class(struct larder__slab *s, void *p, unsigned c)
{
	larder__slab_note_slot_live(p, c);
	larder__slab_class_live_add(s, c, 1);
}

/* Maintainer: an entry of `bytes` in p was published. */
static inline void larder__slab_note_live(struct larder__slab *s, void *p, size_t bytes)
{
	if (bytes <= LARDER__SLAB_MAX_SLOT)
		larder__slab_note_live_class(s, p, larder__sizeclass_of(bytes));
}

/* Maintainer: an entry of `bytes` that note_live counted was retired: its
 * class's live count drops now (c its size class, or any c from
 * LARDER__SIZECLASS_COUNT up: the class of `bytes`), its page's when the
 * slot is freed. */
static inline void larder__slab_note_gone(struct larder__slab *s, size_t bytes, unsigned c)
{
	if (c < LARDER__SIZECLASS_COUNT)
		larder__slab_class_live_add(s, c, -1);
	else if (bytes <= LARDER__SLAB_MAX_SLOT)
		larder__slab_class_live_add(s, larder__sizeclass_of(bytes), -1);
}

/* Page states (bits of struct larder__page's state; slab.c has the state
 * machine): held by a writer's cursor, or on its class's available list. */
enum { LARDER__SLAB_PAGE_OWNED = 1u, LARDER__SLAB_PAGE_LISTED = 2u };

/* The maintainer's free bitmap of pg (slab.c, SLAB-S2). */
static inline larder__atomic_u64 *larder__slab_maint_free(struct larder__page *pg)
{
	return (larder__atomic_u64 *)(void *)((unsigned char *)pg + pg->maint_offset);
}

/* The index of slot p in pg: the page's reciprocal multiply (mem/pagedir.h),
 * exact for every slot offset, instead of a division. */
static inline size_t larder__slab_slot_index(const struct larder__page *pg, const void *p)
{
	uint32_t off = (uint32_t)((const unsigned char *)p - (const unsigned char *)pg) -
		       pg->slots_offset;
	return (size_t)(((uint64_t)off * pg->id.recip) >> 32);
}

/* Maintainer: sets the free bit of slot p of pg (SLAB-SL1). */
static inline void larder__slab_slot_bit_set(struct larder__page *pg, void *p)
{
	size_t i = larder__slab_slot_index(pg, p);
	uint64_t bit = (uint64_t)1 << (i % 64);
	/* SLAB-SL1: seq_cst (release for SLAB-SL2, and the store half of the Dekker pair
	 * SLAB-SL3/SLAB-SL4 with slab.c's page_release()). */
	uint64_t was = atomic_fetch_or_explicit(&larder__slab_maint_free(pg)[i / 64], bit,
						LARDER__SEQ_CST);
	LARDER__ASSERT(!(was & bit)); /* SLAB-S1: freed twice */
	(void)was;
}

/* Maintainer: n slots of pg are free again; returns its live count (the
 * class's dropped when their entries were retired, note_gone). */
static inline uint32_t larder__slab_page_live_drop(struct larder__page *pg, uint32_t n)
{
	LARDER__ASSERT(atomic_load_explicit(&pg->live, LARDER__RELAXED) >= n); /* ours */
	uint32_t live = atomic_load_explicit(&pg->live, LARDER__RELAXED) - n; /* ours */
	atomic_store_explicit(&pg->live, live, LARDER__RELAXED); /* single writer */
	return live;
}

/* Maintainer, under no lock: lists or retires pg under the slab lock
 * (SLAB-S3, SLAB-S4). */
void larder__slab_page_settle(struct larder__slab *s, struct larder__page *pg);

/* Maintainer: slots of pg had their maint_free bits set (SLAB-SL1), leaving
 * `live` live slots: the page is listed or retired if it has to be. The
 * lock is taken only then: not when a writer owns the page, nor when it is
 * listed and not empty. */
static inline void larder__slab_page_bits_freed(struct larder__slab *s, struct larder__page *pg,
						uint32_t live)
{
	/* SLAB-SL3 side: seq_cst, after our SLAB-SL1 OR: a release racing with
	 * this free either sees our bits or is seen here (SLAB-S3). */
	uint32_t st = atomic_load_explicit(&pg->state, LARDER__SEQ_CST);
	if (st & LARDER__SLAB_PAGE_OWNED)
		return;
	if ((st & LARDER__SLAB_PAGE_LISTED) && live != 0)
		return; /* already findable; not empty */
	larder__slab_page_settle(s, pg);
}

/* Test seam (core/testing.h): fill freed slots with a poison byte. */
extern int larder__slab_poison;

/* larder__slab_free() beyond its inline case: a poisoned slot, a big one
 * (SLAB-S6) or a large entry's mapping. */
void larder__slab_free_slow(struct larder__slab *s, void *p, size_t bytes);

/* Maintainer: slot p of page pg, of an entry up to LARDER__SLAB_BIG_FROM
 * (published, then retired after a grace period), is free again, the
 * poison seam being off: its bit set, its page's live count dropped. */
static inline void larder__slab_free_small(struct larder__slab *s, struct larder__page *pg,
					   void *p)
{
	larder__slab_slot_bit_set(pg, p);
	larder__slab_page_bits_freed(s, pg, larder__slab_page_live_drop(pg, 1));
}

/* The page of slot p in a page of LARDER__PAGE_MIN << (code - 1) bytes
 * (pages are aligned to their size; code 1 to LARDER__PAGE_ORDERS). */
static inline struct larder__page *larder__slab_page_of_code(void *p, unsigned code)
{
	return (struct larder__page *)((uintptr_t)p &
				       -((uintptr_t)(LARDER__PAGE_MIN / 2) << code));
}

/* The order of size class c's pages: larder__sizeclass_page(c) is
 * LARDER__PAGE_MIN << it. */
static inline unsigned larder__slab_page_order(unsigned c)
{
	return (unsigned)(__builtin_ctzll(larder__sizeclass_page(c)) - __builtin_ctz(LARDER__PAGE_MIN));
}

/*
 * Maintainer: p (published, then retired after a grace period) is free
 * again, the poison seam being off (the caller read larder__slab_poison:
 * once for a whole list of frees, maint/apply.c's free_list, where its
 * load and test per entry were 4 of the maintainer's 183 instructions per
 * put, docs/bench.md). Inline for the common case, an entry up to
 * LARDER__SLAB_BIG_FROM, which only sets its bit and drops the live counts:
 * the maintainer frees one entry per put, and the call with its own size
 * class computation cost 11 of its 216 instructions per put.
 */
static inline void larder__slab_free_unpoisoned(struct larder__slab *s, void *p, size_t bytes)
{
	if (__builtin_expect(bytes <= LARDER__SLAB_BIG_FROM, 1)) {
		larder__slab_free_small(s, larder__slab_page_of(p, bytes), p);
		return;
	}
	larder__slab_free_slow(s, p, bytes);
}

/* Maintainer: p is free again (larder__slab_free_unpoisoned, or poisoned
 * first when the seam asks). */
static inline void larder__slab_free(struct larder__slab *s, void *p, size_t bytes)
{
	if (__builtin_expect(!larder__slab_poison, 1))
		larder__slab_free_unpoisoned(s, p, bytes);
	else
		larder__slab_free_slow(s, p, bytes);
}

/* Adds the slab's counters to values (indexed by enum larder_stat):
 * PAGES_MAPPED, PAGES_RETURNED, RESERVE_*, RETURNING_BYTES, LARGE_BYTES. */
void larder__slab_stats(struct larder__slab *s, uint64_t *values);
/* Adds the slab's counts for size class c to v (indexed by enum
 * larder_class_stat), and sets its slot and page sizes there. */
void larder__slab_class_stats(struct larder__slab *s, unsigned c,
			      uint64_t v[LARDER_CLASS_STAT_COUNT]);

#endif /* LARDER_MEM_SLAB_H */
