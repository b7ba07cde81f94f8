/*
 * index/table.c - writers' and the maintainer's side of the index.
 * Layout, concurrency rules and labels: index/table.h.
 *
 * Resizing (TABLE-X3), one home h of the old table t at a time, by the maintainer:
 *   1. lock h (writers of h now wait; readers go on);
 *   2. copy every entry whose home is h (found on h's probe path, by
 *      re-hashing the key) into t->next. Growing by 2^k, its new home is
 *      one of h x 2^k .. h x 2^k + 2^k - 1, which no other old home feeds,
 *      and no writer can reach it while h is locked, so no lock is needed
 *      there. Shrinking, its new home
 *      is h >> k, shared with the 2^k - 1 other homes of its group, whose
 *      writers are there already if those homes moved before h: the new home
 *      is locked for the copy (after h: writers hold one lock at a time, so
 *      the order cannot deadlock), and taken only when h has an entry to
 *      copy. Either way slots are claimed by CAS against writers of other
 *      homes;
 *   3. set MOVED on h (R-MOVED, release) with LOCK left set forever: writers
 *      that were waiting see MOVED and go to t->next;
 *   4. replace h's old slots by markers (R-SLOT), so the old table never
 *      holds a pointer that could go stale: a reader of another home that
 *      probes through h's buckets skips them, a reader of h that passed the
 *      MOVED test before step 3 meets a marker with its tag, re-reads MOVED
 *      and restarts in t->next.
 * When every home is moved, the cache's root pointer is switched to t->next
 * and t is freed after a grace period (maint/maintainer.c).
 */
#define _GNU_SOURCE /* MADV_HUGEPAGE */
#include "index/table.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/assert.h"
#include "mem/pages.h"

/* A transparent huge page (x86-64, arm64 with 4 KiB pages). */
#define HUGE_PAGE_BYTES (2u << 20)

int larder__key_equals_other(const unsigned char *a, const unsigned char *b, size_t len)
{
	return memcmp(a, b, len) == 0;
}

static inline struct larder__bucket *bucket_after(struct larder__table *t, struct larder__bucket *b)
{
	return &t->buckets[larder__table_after(t, (uint64_t)(b - t->buckets))];
}

uint64_t larder__table_lookup_slow_rcu(struct larder__table *t, uint64_t hash, const void *key,
				       size_t key_len)
{
	uint64_t tag = hash & LARDER__SLOT_TAG_MASK;
restart:;
	struct larder__bucket *home = &t->buckets[larder__table_home(t, hash)];
	/* A-CTL: pairs with R-MOVED in migrate_home(). */
	uint64_t ctl = atomic_load_explicit(&home->ctl, LARDER__ACQUIRE);
	if (ctl & LARDER__CTL_MOVED) {
		t = larder__table_next(t);
		goto restart;
	}
	struct larder__bucket *b = home;
	for (uint64_t probed = 0; probed <= t->last; probed++) {
		for (unsigned m = larder__bucket_tag_bits(b, hash); m; m &= m - 1) {
			/* A-SLOT: pairs with R-SLOT; the entry's fields are visible. */
			uint64_t w = atomic_load_explicit(&b->slot[larder__tag_bits_slot(m)],
							  LARDER__ACQUIRE);
			if (((w ^ tag) & LARDER__SLOT_TAG_MASK) != 0)
				continue; /* changed since the hint */
			uint64_t p = w & LARDER__SLOT_PTR_MASK;
			if (p > LARDER__SLOT_MARKER) {
				if (larder__entry_key_equals(larder__slot_entry(w), key, key_len))
					return w;
			} else if (p == LARDER__SLOT_MARKER &&
				   /* A-CTL again: a marker is stored after MOVED (TABLE-X3). */
				   (atomic_load_explicit(&home->ctl, LARDER__ACQUIRE) &
				    LARDER__CTL_MOVED)) {
				t = larder__table_next(t);
				goto restart;
			} /* else empty, or another home's moved key */
		}
		if ((ctl >> 32) == 0)
			return 0;
		b = bucket_after(t, b);
		/* A-CTL: the overflow count; its increments precede R-SLOT. */
		ctl = atomic_load_explicit(&b->ctl, LARDER__ACQUIRE);
	}
	return 0;
}

/*
 * TABLE-H1 (index/table.h): a table of a huge page or more is aligned to one and asked to live in
 * transparent huge pages: a random lookup's bucket load then costs no page
 * walk of its own (docs/scale.md has the measurement). The kernel may refuse
 * (THP "never", no huge page free): the table works the same in small pages.
 * LARDER_INDEX_HUGEPAGE=0 in the environment turns it off, to measure it.
 */
static size_t table_align(size_t bytes)
{
	const char *off = getenv("LARDER_INDEX_HUGEPAGE");
	if (bytes < HUGE_PAGE_BYTES || (off && strcmp(off, "0") == 0))
		return LARDER__OS_PAGE;
	return HUGE_PAGE_BYTES;
}

/* A table of n buckets maps its header and buckets, rounded to pages. */
static size_t map_bytes(uint64_t n)
{
	return larder__pages_round(sizeof(struct larder__table) +
				   n * sizeof(struct larder__bucket));
}

size_t larder__table_map_bytes(const struct larder__table *t)
{
	return map_bytes(t->count);
}

struct larder__table *larder__table_create(uint64_t buckets)
{
	uint64_t n = buckets < 64 ? 64 : (buckets + 63) & ~(uint64_t)63;
	if (n > LARDER__TABLE_MAX_BUCKETS)
		return NULL;
	size_t bytes = map_bytes(n);
	size_t align = table_align(bytes);
	struct larder__table *t = larder__pages_map(bytes, align);
	if (!t)
		return NULL;
	if (align == HUGE_PAGE_BYTES)
		(void)madvise(t, bytes, MADV_HUGEPAGE); /* TABLE-H1: a hint; refusal is fine */
	t->last = n - 1;
	t->count = n;
	t->moved = 0;
	atomic_store_explicit(&t->room, 0, LARDER__RELAXED); /* not yet shared */
	t->retire_next = NULL;
	t->retire_token = 0;
	atomic_store_explicit(&t->next, 0, LARDER__RELAXED); /* not yet shared */
	return t;
}

void larder__table_destroy(struct larder__table *t)
{
	if (t)
		larder__pages_unmap(t, larder__table_map_bytes(t));
}

/* Spins until b is locked by us (0) or found MOVED (-1). */
static int bucket_lock(struct larder__bucket *b)
{
	for (;;) {
		/* A-CTL: acquire, so that after MOVED we see t->next's contents. */
		uint64_t ctl = atomic_load_explicit(&b->ctl, LARDER__ACQUIRE);
		if (ctl & LARDER__CTL_MOVED)
			return -1;
		if (ctl & LARDER__CTL_LOCK) {
			larder__cpu_relax();
			continue;
		}
		/* L-ACQ: acquire; pairs with L-REL of the previous holder. */
		if (atomic_compare_exchange_weak_explicit(&b->ctl, &ctl, ctl | LARDER__CTL_LOCK,
							  LARDER__ACQUIRE, LARDER__RELAXED))
			return 0;
	}
}

struct larder__table_held larder__table_lock_wait(struct larder__table *t, uint64_t hash)
{
	for (;; t = larder__table_next(t)) {
		struct larder__bucket *b = &t->buckets[larder__table_home(t, hash)];
		if (bucket_lock(b) == 0)
			return (struct larder__table_held){ b, t };
	}
}

/* larder__table_find_from_locked() in general: any key length, and past the
 * home when something overflowed it. */
static __attribute__((noinline)) larder__atomic_u64 *
probe_from(struct larder__table *t, struct larder__bucket *home, uint64_t hash, const void *key,
	   size_t key_len)
{
	uint64_t tag = hash & LARDER__SLOT_TAG_MASK;
	struct larder__bucket *b = home;
	for (uint64_t probed = 0; probed <= t->last; probed++) {
		for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
			/* Acquire: a slot of another home may have just been
			 * published (R-SLOT) and we read its entry's key. */
			uint64_t w = atomic_load_explicit(&b->slot[i], LARDER__ACQUIRE);
			uint64_t p = w & LARDER__SLOT_PTR_MASK;
			if ((w & LARDER__SLOT_TAG_MASK) != tag || p == 0 || p == LARDER__SLOT_MARKER)
				continue;
			if (larder__entry_key_equals(larder__slot_entry(w), key, key_len))
				return &b->slot[i];
		}
		/* Relaxed: the count only bounds the probe; keys of our home
		 * cannot change under us (TABLE-X2). */
		if ((atomic_load_explicit(&b->ctl, LARDER__RELAXED) >> 32) == 0)
			return NULL;
		b = bucket_after(t, b);
	}
	return NULL;
}

/*
 * The common case decided here, a key of 8 to 16 bytes looked up in its
 * home bucket alone (found there, or absent and nothing overflowed the
 * home), in a function that calls nothing, so it saves fewer registers
 * and spills nothing (the general probe's prologue, epilogue and spills
 * around its memcmp were 15 of a put's 108 instructions in the index,
 * docs/bench.md). The home's seven tags are compared at once, as a
 * lookup's are (larder__bucket_tag_bits): the slots it names are hints,
 * each loaded again with acquire and its key compared. Under the home
 * lock our key's slot cannot change (TABLE-X2), so a key present is
 * always among them. Anything else goes to probe_from(), which starts
 * over at the home.
 */
larder__atomic_u64 *larder__table_find_from_locked(struct larder__table *t,
						   struct larder__bucket *home, uint64_t hash,
						   const void *key, size_t key_len)
{
	LARDER__ASSERT(home == &t->buckets[larder__table_home(t, hash)]);
	if (key_len < 8 || key_len > 16)
		return probe_from(t, home, hash, key, key_len);
	uint64_t tag = hash & LARDER__SLOT_TAG_MASK;
	for (unsigned m = larder__bucket_tag_bits(home, hash); m; m &= m - 1) {
		larder__atomic_u64 *slot = &home->slot[larder__tag_bits_slot(m)];
		/* Acquire: another home's slot may have just been published
		 * (R-SLOT), as in probe_from(). */
		uint64_t w = atomic_load_explicit(slot, LARDER__ACQUIRE);
		if ((w & LARDER__SLOT_TAG_MASK) != tag ||
		    (w & LARDER__SLOT_PTR_MASK) <= LARDER__SLOT_MARKER)
			continue; /* empty, a marker, or changed since the hint */
		if (larder__entry_key_equals(larder__slot_entry(w), key, key_len))
			return slot;
	}
	/* Relaxed, as in probe_from(). */
	if ((atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32) == 0)
		return NULL;
	return probe_from(t, home, hash, key, key_len);
}

/* larder__table_find_word_locked() past the home: probe_from()'s walk,
 * comparing words (the home is scanned again: the rare case). */
larder__atomic_u64 *larder__table_find_word_from(struct larder__table *t,
						  struct larder__bucket *home, uint64_t word)
{
	struct larder__bucket *b = home;
	for (uint64_t probed = 0; probed <= t->last; probed++) {
		for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++)
			if (atomic_load_explicit(&b->slot[i], LARDER__RELAXED) == word)
				return &b->slot[i]; /* relaxed: see the header */
		/* Relaxed, as in probe_from(). */
		if ((atomic_load_explicit(&b->ctl, LARDER__RELAXED) >> 32) == 0)
			return NULL;
		b = bucket_after(t, b);
	}
	return NULL;
}

int larder__table_insert_locked(struct larder__table *t, uint64_t hash, uint64_t word,
				size_t limit)
{
	struct larder__bucket *home = &t->buckets[larder__table_home(t, hash)], *b = home;
	if (limit > t->last + 1)
		limit = t->last + 1;
	for (size_t n = 0; n < limit; n++) {
		for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
			uint64_t expect = 0;
			/* Relaxed pre-check: skip occupied slots without a CAS. */
			if (atomic_load_explicit(&b->slot[i], LARDER__RELAXED) != 0)
				continue;
			/* R-SLOT: release publishes the entry (pairs with A-SLOT);
			 * the overflow increments below were sequenced before it. */
			if (atomic_compare_exchange_strong_explicit(&b->slot[i], &expect, word,
								    LARDER__RELEASE,
								    LARDER__RELAXED))
				return 0;
		}
		/* Relaxed: ordered before the publishing CAS by its release. */
		atomic_fetch_add_explicit(&b->ctl, LARDER__CTL_OVERFLOW_ONE, LARDER__RELAXED);
		b = bucket_after(t, b);
	}
	for (b = home; limit--; b = bucket_after(t, b))
		atomic_fetch_sub_explicit(&b->ctl, LARDER__CTL_OVERFLOW_ONE, LARDER__RELAXED); /* undo */
	return -1;
}

void larder__table_erase_locked(struct larder__table *t, uint64_t hash, larder__atomic_u64 *slot)
{
	/* Relaxed: emptying publishes nothing; readers that still see the old
	 * word see a valid entry (freed only after a grace period, TABLE-X4). */
	atomic_store_explicit(slot, 0, LARDER__RELAXED);
	struct larder__bucket *b = &t->buckets[larder__table_home(t, hash)];
	size_t last = (size_t)((unsigned char *)slot - (unsigned char *)t->buckets) /
		      sizeof(struct larder__bucket);
	while ((size_t)(b - t->buckets) != last) {
		/* Relaxed: a reader that sees the old count probes one bucket
		 * too many, which is harmless. */
		atomic_fetch_sub_explicit(&b->ctl, LARDER__CTL_OVERFLOW_ONE, LARDER__RELAXED);
		b = bucket_after(t, b);
	}
}

static int resize_begin(struct larder__table *t, uint64_t buckets)
{
	struct larder__table *next = larder__table_create(buckets);
	if (!next)
		return -1;
	t->moved = 0;
	/* R-NEXT: release; the new table's zeroed buckets are visible to anyone
	 * who follows a MOVED home (pairs with A-NEXT). */
	atomic_store_explicit(&t->next, (uintptr_t)next, LARDER__RELEASE);
	return 0;
}

int larder__table_grow_begin(struct larder__table *t, unsigned k)
{
	/* TABLE-X3 holds: a multiple of 64 times 2^k is not rounded again. */
	uint64_t buckets = (t->last + 1) << k;
	/* TABLE-X6: what t may still hand over is left free. Relaxed, as
	 * TABLE-X5's room below. */
	atomic_store_explicit(&t->room,
			      (int64_t)((buckets - (t->last + 1)) * LARDER__BUCKET_SLOTS),
			      LARDER__RELAXED);
	return resize_begin(t, buckets);
}

int larder__table_shrink_begin(struct larder__table *t, unsigned k)
{
	/* TABLE-X3 holds: larder__table_shrink_shift() picks k so that the quotient
	 * is exact and a multiple of 64, which create() does not round. */
	uint64_t buckets = (t->last + 1) >> k;
	/* TABLE-X5: the shrink counted keys for half of the target at most;
	 * a quarter more is left to maintainer threads' new keys. Relaxed:
	 * published with next (R-NEXT in resize_begin); a writer reads it only
	 * after it saw next (A-NEXT). */
	atomic_store_explicit(&t->room, (int64_t)(buckets * LARDER__BUCKET_SLOTS / 4),
			      LARDER__RELAXED);
	return resize_begin(t, buckets);
}

int larder__table_room_take(struct larder__table *t)
{
	/* Relaxed: a count; below 0 it only keeps saying no. */
	return atomic_fetch_sub_explicit(&t->room, 1, LARDER__RELAXED) > 0;
}

struct larder__table *larder__table_resize_abandon(struct larder__table *t)
{
	struct larder__table *next = larder__table_next(t);
	LARDER__ASSERT(t->moved == 0 && next); /* no home followed next yet */
	/* Relaxed: no home is MOVED, so no reader or writer goes into next for
	 * a key (TABLE-X3); those that loaded it only test its size or find it
	 * empty, and it is destroyed after a grace period (TABLE-X4). */
	atomic_store_explicit(&t->next, 0, LARDER__RELAXED);
	return next;
}

/* Steps 1-4 of the resize protocol for home h. */
static void migrate_home(struct larder__table *t, struct larder__table *next, uint64_t h,
			 larder__entry_hash_fn *hash, void (*drop)(void *, struct larder__entry *),
			 void *ctx)
{
	struct larder__bucket *home = &t->buckets[h], *b = home, *dest = NULL;
	/* Never MOVED yet: only we set MOVED, on homes below t->moved. */
	(void)bucket_lock(home);
	for (uint64_t probed = 0; probed <= t->last; probed++) {
		for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
			/* A-SLOT: acquire; another home's writer may have just published. */
			uint64_t w = atomic_load_explicit(&b->slot[i], LARDER__ACQUIRE);
			uint64_t p = w & LARDER__SLOT_PTR_MASK;
			if (p == 0 || p == LARDER__SLOT_MARKER)
				continue;
			uint64_t hh = hash(ctx, larder__slot_entry(w));
			if (larder__table_home(t, hh) != h)
				continue;
			/* Shrinking: step 2's lock on the shared new home (never
			 * MOVED: next is not resized before t is done). */
			if (!dest && next->last < t->last) {
				dest = &next->buckets[larder__table_home(next, hh)];
				(void)bucket_lock(dest);
			}
			if (larder__table_insert_locked(next, hh, w, next->last + 1) != 0)
				drop(ctx, larder__slot_entry(w));
		}
		/* Relaxed: the count only bounds the walk (TABLE-X2). */
		if ((atomic_load_explicit(&b->ctl, LARDER__RELAXED) >> 32) == 0)
			break;
		b = bucket_after(t, b);
	}
	if (dest)
		larder__table_unlock(dest); /* h's writers still wait for MOVED */
	/* R-MOVED: release; the copies in next happen before anyone who sees
	 * MOVED (pairs with A-CTL). LOCK stays set: h is never written here again. */
	atomic_fetch_or_explicit(&home->ctl, LARDER__CTL_MOVED, LARDER__RELEASE);
	b = home;
	for (uint64_t probed = 0; probed <= t->last; probed++, b = bucket_after(t, b)) {
		for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
			/* A-SLOT: acquire; the slot may hold another home's new entry. */
			uint64_t w = atomic_load_explicit(&b->slot[i], LARDER__ACQUIRE);
			uint64_t p = w & LARDER__SLOT_PTR_MASK;
			if (p == 0 || p == LARDER__SLOT_MARKER)
				continue;
			if (larder__table_home(t, hash(ctx, larder__slot_entry(w))) != h)
				continue;
			/* R-SLOT (marker): release, after R-MOVED (TABLE-X3). Only we
			 * write h's slots, so a plain store cannot lose an update. */
			atomic_store_explicit(&b->slot[i],
					      (w & LARDER__SLOT_TAG_MASK) | LARDER__SLOT_MARKER,
					      LARDER__RELEASE);
		}
		if ((atomic_load_explicit(&b->ctl, LARDER__RELAXED) >> 32) == 0) /* bounds the walk */
			break;
	}
}

int larder__table_migrate(struct larder__table *t, size_t homes, larder__entry_hash_fn *hash,
			  void (*drop)(void *ctx, struct larder__entry *e), void *ctx)
{
	struct larder__table *next = larder__table_next(t);
	while (homes-- && t->moved <= t->last)
		migrate_home(t, next, t->moved++, hash, drop, ctx);
	return t->moved > t->last;
}

static void walk_one(struct larder__table *t, void (*fn)(void *, struct larder__entry *), void *ctx)
{
	struct larder__table_iter it;
	struct larder__entry *e[LARDER__BUCKET_SLOTS];
	for (larder__table_iter_init(&it, t); !larder__table_iter_done(&it);) {
		for (unsigned i = 0, n = larder__table_iter_next(&it, e, 0); i < n; i++)
			fn(ctx, e[i]);
	}
}

void larder__table_walk(struct larder__table *t, void (*fn)(void *ctx, struct larder__entry *e),
			void *ctx)
{
	walk_one(t, fn, ctx);
	struct larder__table *next = larder__table_next(t);
	if (next)
		walk_one(next, fn, ctx);
}
