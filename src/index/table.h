/*
 * index/table.h - the lock-free index: hash -> entry.
 *
 * An array of 64-byte buckets, of any count (a multiple of 64). Each bucket
 * is one control word and seven slots; a slot is one 8-byte word holding an
 * entry pointer (low 48 bits) and a 16-bit tag (the hash's top 16 bits), so a
 * probe compares tags without touching entries. Keys live in their home
 * bucket (larder__table_home: hash bits 16..47 scaled to the bucket count) or,
 * when it is full, in the next buckets (linear probing of buckets, wrapping).
 * Any count, not only powers of two, lets a table be sized to its expected
 * entries (TABLE-L1) instead of up to twice that.
 *
 * Control word: bit 0 LOCK (the home bucket's writer lock), bit 1 MOVED (this
 * home's keys now live in the next table), bits 32..63 the overflow count: how
 * many keys whose probe path passes this bucket live beyond it. A lookup stops
 * at the first bucket whose count is 0, so deletions need no tombstones.
 *
 * Concurrency (invariants asserted by tests/stress: stress.c through the
 * cache, stress_index.c on the table through growths and shrinks):
 *   TABLE-X1. Readers take no lock: they load slots with acquire (A-SLOT) and see an
 *       entry whole (its publishing store is release, R-SLOT).
 *   TABLE-X2. Every change to the keys of one home happens under that home's LOCK,
 *       so a key appears at most once in a table. Writers of other homes only
 *       claim empty slots (CAS) and adjust overflow counts (atomic add).
 *   TABLE-X3. Resizing is incremental (table.c) and goes either way, by a factor
 *       2^k: the next table has buckets n x 2^k (growth: k = 1, or more when
 *       a bulk writer reserved room, SNAP-L6) or n / 2^k (shrinking), still
 *       a multiple of 64. Homes are multiply-shift, so a key's home in the
 *       next table follows from its old home h alone: one of h x 2^k ..
 *       h x 2^k + 2^k - 1 when growing (each new home takes keys of one old home),
 *       h >> k when shrinking (each new home takes the keys of 2^k
 *       consecutive old homes). The maintainer moves one old home at a time
 *       under its lock into table->next, sets MOVED, then turns the old slots
 *       of that home into MARKERs. When shrinking, writers of the group's
 *       homes moved earlier already write the new home, so the maintainer
 *       also holds the new home's lock while it copies (TABLE-X2 holds in both
 *       tables; lock order old then new, and a writer never holds two). A
 *       marker never matches a key; a reader that meets a marker carrying its
 *       tag re-checks its home's MOVED bit and follows it. No stale entry
 *       pointer is ever left behind. A table is never grown and shrunk at
 *       once: it has one next.
 *   TABLE-X4. Tables and entries unlinked here are freed only after a grace period.
 *   TABLE-X5. A shrink's target holds the keys the shrink found (sized for them at
 *       no more than half load), not new ones: while a table shrinks, a writer
 *       adds no key to it or to its next (larder__table_shrinking(); in
 *       core/cache.c, write_index: it waits for the shrink to end, which its
 *       ask hurries; larder_put's fast insert leaves the key to it), so the
 *       migration, which has nowhere to put an entry the smaller table
 *       cannot take, finds room for every one. The keys the
 *       maintainer did not count when it sized the target are bounded: no
 *       event was waiting in its rings (maint/resize.c, shrink_begin), and
 *       the maintainer counts again one pass after it published the target,
 *       before it moves a home: keys added between its decision and the
 *       writers' sight of the target are counted then, and a target they
 *       overfill is given up (larder__table_resize_abandon); so at most one
 *       insert per writer thread (between its test and its slot) goes
 *       uncounted. A maintainer thread (a listener that writes) may not wait:
 *       it adds its key while a quarter of the target's slots, set aside at
 *       larder__table_shrink_begin, lasts (larder__table_room_take), and
 *       fails with LARDER_EBUSY after that. So the target never holds more
 *       than half + a quarter of its slots + one key per writer thread, and
 *       the migration drops no entry while fewer writer threads than a
 *       quarter of its slots (112 at the least) race it (without that
 *       bound, a listener that put 16 keys per expiry it heard during a
 *       shrink had 3,904 of its 4,800 acknowledged keys dropped as EVICTED
 *       from a cache far below its capacity: tests/unit/test_shrink.c).
 *   TABLE-X6. A growth's target keeps room for every entry the old table may
 *       still hand it: new keys go into it (through homes already MOVED)
 *       only while larder__table_room_take(t) says yes, which
 *       larder__table_grow_begin sets to the target's slots less the old
 *       table's. The migration puts each entry of t into the target, and t
 *       never holds more entries than slots (a moved entry leaves a MARKER
 *       behind, which nothing reuses), so the target always has a free slot
 *       for it. Without the bound, writers filled a target that its
 *       migration had not finished (a maintainer preempted mid-pass: a table
 *       of up to 256 buckets is probed whole, so writers may fill every slot)
 *       and the homes still to move lost their entries as EVICTED (33 of
 *       4,000 in one TSan run of test_shrink_beside_writers_keeps_entries;
 *       test_table.c's test_grow_keeps_room shows the mechanism). A writer
 *       refused waits for the growth's end, which its ask hurries; a
 *       maintainer thread fails with LARDER_EBUSY, as in TABLE-X5.
 *
 * Load (docs/scale.md has the measurements behind the numbers):
 *   TABLE-L1. A new table is sized so its expected entries fill FILL_NUM/FILL_DEN
 *       (4/5) of its slots (larder__table_buckets_for): 10^8 entries take
 *       17.9 M buckets, 11.4 B/entry, and a hit reads 1.18 buckets on
 *       average, a miss 2.0. Small tables are the exception: when filling
 *       only half the slots costs at most SMALL_BUCKETS (4 MiB), that is the
 *       size (and between the two rules, SMALL_BUCKETS). A table that stays
 *       in the CPU caches pays for a displaced key in instructions, not
 *       misses (about one key in ten lives beyond its home at 4/5, and a get
 *       costs 197 instructions instead of 175 on the 24,000-entry matrix
 *       cell: docs/bench.md), while 4 MiB is nothing in a cache's memory.
 *       A table grows (doubles) once its entries exceed GROW_NUM/GROW_DEN
 *       (7/8) of its slots (larder__table_over_load).
 *   TABLE-L2. Up to the growth load the longest insert probe stays far below
 *       LARDER__PROBE_LIMIT (about 200 buckets at 2^26 buckets and 7/8, by
 *       simulation; tests/unit/test_table.c checks 40,000 buckets): writers
 *       ask for growth only when the table is past TABLE-L1.
 *   TABLE-L3. A table shrinks once its entries are below SHRINK_NUM/SHRINK_DEN
 *       (1/8) of its slots and it is bigger than a floor (the maintainer's:
 *       the first table's size or SMALL_BUCKETS, whichever is larger), by
 *       the largest 2^k that leaves a multiple of 64 no smaller than the
 *       floor holding the entries at no more than half load
 *       (larder__table_shrink_shift). Hysteresis: after a shrink the load is
 *       at most 1/2 and, unless the floor or the multiple of 64 stopped it,
 *       above 1/4 (else one more halving would have been chosen), so the
 *       entries must grow 7/4x to reach the growth load (7/8) or halve to
 *       fall under 1/8 again; after a growth the load is about 7/16, 3.5x
 *       the shrink load. At half load TABLE-L2's probes stay short.
 *   TABLE-H1. Tables of 2 MiB or more ask for transparent huge pages (table.c).
 */
#ifndef LARDER_INDEX_TABLE_H
#define LARDER_INDEX_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "core/entry.h"
#include "sync/atomic.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define LARDER__BUCKET_SLOTS 7
#define LARDER__CTL_LOCK 1ull
#define LARDER__CTL_MOVED 2ull
#define LARDER__CTL_OVERFLOW_ONE (1ull << 32)
#define LARDER__SLOT_PTR_MASK ((1ull << 48) - 1)
#define LARDER__SLOT_TAG_MASK (~LARDER__SLOT_PTR_MASK)
#define LARDER__SLOT_MARKER 1ull /* pointer field of a moved slot; never a real entry */
/* Buckets a writer's insert may probe before it asks the maintainer to grow
 * (TABLE-L2: far beyond the longest probe at the growth load). */
#define LARDER__PROBE_LIMIT 256
/* TABLE-L1: a build may set them (-D) to measure other loads; nothing else does. */
#ifndef LARDER__TABLE_FILL_NUM
#define LARDER__TABLE_FILL_NUM 4u
#define LARDER__TABLE_FILL_DEN 5u
#endif
/* TABLE-L1: 4 MiB of buckets, below which a table is sized at half load. */
#define LARDER__TABLE_SMALL_BUCKETS (1u << 16)
#ifndef LARDER__TABLE_GROW_NUM
#define LARDER__TABLE_GROW_NUM 7u
#define LARDER__TABLE_GROW_DEN 8u
#endif
/* TABLE-L3: a table whose entries fill less than this shrinks. */
#define LARDER__TABLE_SHRINK_NUM 1u
#define LARDER__TABLE_SHRINK_DEN 8u
/* The most buckets a table may have (larder__table_home scales 32 bits). */
#define LARDER__TABLE_MAX_BUCKETS (1ull << 32)

struct larder__bucket {
	larder__atomic_u64 ctl;
	larder__atomic_u64 slot[LARDER__BUCKET_SLOTS];
} __attribute__((aligned(64)));

struct larder__table {
	uint64_t last;            /* buckets - 1; immutable */
	/* buckets; immutable: the home's multiply takes it from memory, where
	 * last + 1 cost a load and an add per lookup and per put. */
	uint64_t count;
	larder__atomic_uptr next; /* resize target, set by the maintainer (R-NEXT; TABLE-X5 may undo it) */
	uint64_t moved;           /* maintainer only: homes moved so far */
	/* While t resizes, the new keys that may still go in (TABLE-X5:
	 * maintainer threads' into a shrink; TABLE-X6: anyone's into a
	 * growth's target); set before next is published, counted down. */
	larder__atomic_i64 room;
	/* Maintainer only: the table's place in its retire or cleared list. */
	struct larder__table *retire_next;
	uint64_t retire_token;
	/* Maintainer only, a cleared table's: the cache clock at larder_clear()
	 * (0: no entry had a deadline), which names each entry's cause (maint/clear.c). */
	uint64_t cleared_ms;
	struct larder__bucket buckets[] __attribute__((aligned(64)));
};

_Static_assert(offsetof(struct larder__table, buckets) == 64, "a table's header is one line");

static inline uint64_t larder__slot_word(uint64_t hash, const struct larder__entry *e)
{
	return (hash & LARDER__SLOT_TAG_MASK) | (uint64_t)(uintptr_t)e;
}

static inline struct larder__entry *larder__slot_entry(uint64_t word)
{
	return (struct larder__entry *)(uintptr_t)(word & LARDER__SLOT_PTR_MASK);
}

/* The home bucket of hash (Lemire's multiply-shift; TABLE-X3 relies on it). */
static inline uint64_t larder__table_home(const struct larder__table *t, uint64_t hash)
{
	return (((hash >> 16) & 0xffffffffu) * t->count) >> 32;
}

static inline struct larder__table *larder__table_next(struct larder__table *t)
{
	/* A-NEXT: pairs with R-NEXT in resize_begin() (table.c). */
	return (struct larder__table *)atomic_load_explicit(&t->next, LARDER__ACQUIRE);
}

/* Whether t is being shrunk: its next table has fewer buckets (TABLE-X5). */
static inline int larder__table_shrinking(struct larder__table *t)
{
	struct larder__table *next = larder__table_next(t);
	return next && next->last < t->last;
}

/* The table whose next is t, on the chain that starts at from (t is a table
 * after from: larder__table_lock() followed MOVED homes there). */
static inline struct larder__table *larder__table_before(struct larder__table *from,
							 struct larder__table *t)
{
	while (larder__table_next(from) != t)
		from = larder__table_next(from);
	return from;
}

/* Batch lookups, step 1: start loading the home bucket; returns the home,
 * for steps 2 and 2b. */
static inline uint64_t larder__table_prefetch(const struct larder__table *t, uint64_t hash)
{
	uint64_t home = larder__table_home(t, hash);
	__builtin_prefetch(&t->buckets[home]);
	return home;
}

/* The bucket after home, wrapping (where a displaced key's probe goes on). */
static inline uint64_t larder__table_after(const struct larder__table *t, uint64_t home)
{
	return home == t->last ? 0 : home + 1;
}

/* The general lookup: any bucket, MOVED homes and markers (table.c). */
uint64_t larder__table_lookup_slow_rcu(struct larder__table *t, uint64_t hash, const void *key,
				       size_t key_len);

/*
 * The slots of b whose tag equals hash's, as a mask in which slot i is bit
 * 2i + 3 (the layout the vector compare yields; iterate with
 * larder__tag_bits_slot() and m &= m - 1): hints that pick the slots to load.
 *
 * With SSE2 the seven tags are compared at once, without a branch per slot:
 * where a key sits in its bucket is random, so a slot-by-slot scan
 * mispredicts about once per lookup, and the pipeline flush also throws away
 * the next lookup's work already in flight (measured: ~19% more gets per CPU
 * second, docs/bench.md). The four 16-byte loads are inline asm, outside the
 * C memory model: each 8-byte slot is read whole (aligned), possibly while a
 * writer changes it, and nothing is concluded from it but slot indexes; the
 * caller then loads each slot it picks with acquire (A-SLOT) and checks the
 * key. An insert the hint missed raced with the read, which may then miss it;
 * a key's slot never changes within a table (TABLE-X2, TABLE-X3: removal empties it,
 * migration turns it into a marker with the same tag), so a key present
 * throughout the read is always among the hints.
 * Elsewhere: the same compare with relaxed loads, slot by slot.
 */
static inline unsigned larder__bucket_tag_bits(const struct larder__bucket *b, uint64_t hash)
{
#if defined(__SSE2__)
	__m128i q[4];
	for (unsigned k = 0; k < 4; k++)
		__asm__("movdqa %1, %0" : "=x"(q[k]) : "m"(((const __m128i *)(const void *)b)[k]));
	/* Word j's top 16 bits are its tag: after the compare, the sign of its
	 * upper 32-bit half says whether it matched, and the packs keep signs.
	 * So only each word's top 16-bit lane of the compare counts, and the
	 * hash itself, in both 64-bit halves, serves as the tag vector: its top
	 * lanes hold hash >> 48 (two instructions, where a broadcast of the
	 * 16-bit tag took five with its shift: 3 Ir per put and per get,
	 * docs/bench.md). */
	__m128i tag = _mm_set1_epi64x((long long)hash);
	__m128i lo = _mm_packs_epi32(_mm_cmpeq_epi16(q[0], tag), _mm_cmpeq_epi16(q[1], tag));
	__m128i hi = _mm_packs_epi32(_mm_cmpeq_epi16(q[2], tag), _mm_cmpeq_epi16(q[3], tag));
	/* Bit 2j+1 for word j; word 0 is the control word, not a slot. */
	return (unsigned)_mm_movemask_epi8(_mm_packs_epi16(lo, hi)) & 0xaaa8u;
#else
	unsigned m = 0;
	for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
		/* Relaxed: a hint; the caller loads the slots it picks with acquire. */
		uint64_t w = atomic_load_explicit(&b->slot[i], LARDER__RELAXED);
		if (((w ^ hash) & LARDER__SLOT_TAG_MASK) == 0)
			m |= 1u << (2 * i + 3);
	}
	return m;
#endif
}

/* The lowest slot of a nonzero larder__bucket_tag_bits() mask. */
static inline unsigned larder__tag_bits_slot(unsigned m)
{
	return ((unsigned)__builtin_ctz(m) >> 1) - 1;
}

/* Batch lookups: prefetches the first entry of bucket b whose tag matches
 * hash's, three lines from its start; 0 when no slot matches. An entry starts
 * anywhere in a line (slots are not line-aligned), so one of about 100 bytes
 * (a 16-byte key and a 65-byte value) reaches a third line about half the
 * time, and with two lines the value's copy waited on that miss: three made
 * a batch of 16 at 10^6 entries 1.6x faster with such values (16.0-16.8 ->
 * 26.3-26.9 M keys/s, larder-bench --bigset=1000000 --value-size 65), and
 * changed nothing measurable with 16- or 200-byte values. The tags are
 * compared at once (larder__bucket_tag_bits): a slot-by-slot scan cost a
 * batch 27 instructions a key, a third of what it spent beyond a single
 * get's lookup. */
static inline int larder__table_prefetch_match(const struct larder__bucket *b, uint64_t hash)
{
	for (unsigned m = larder__bucket_tag_bits(b, hash); m; m &= m - 1) {
		/* Relaxed: only a prefetch hint; step 3 loads the slot properly. */
		uint64_t w = atomic_load_explicit(&b->slot[larder__tag_bits_slot(m)],
						  LARDER__RELAXED);
		if ((w & LARDER__SLOT_PTR_MASK) > LARDER__SLOT_MARKER) {
			const char *e = (const char *)larder__slot_entry(w);
			__builtin_prefetch(e);
			__builtin_prefetch(e + 64);
			__builtin_prefetch(e + 128);
			return 1;
		}
	}
	return 0;
}

/*
 * Batch lookups, step 2 (bucket now cached): start loading the first entry
 * whose tag matches, so that step 3's key compare does not stall. Returns 1
 * when none matches and keys of this home live beyond it (its overflow
 * count): the key may be displaced, and the next bucket's load is started
 * for step 2b (larder__table_prefetch_beyond), so that a batch's displaced
 * keys (about one in ten at the fill of TABLE-L1) overlap their two misses
 * too instead of meeting them one after another in step 3.
 */
static inline int larder__table_prefetch_entry(const struct larder__table *t, uint64_t home,
						uint64_t hash)
{
	const struct larder__bucket *b = &t->buckets[home];
	if (larder__table_prefetch_match(b, hash))
		return 0;
	/* Relaxed: only a prefetch hint; step 3 loads the control word properly. */
	if (!(atomic_load_explicit(&b->ctl, LARDER__RELAXED) >> 32))
		return 0;
	__builtin_prefetch(&t->buckets[larder__table_after(t, home)]);
	return 1;
}

/* Batch lookups, step 2b, for a key step 2 found maybe displaced: the
 * matching entry of the bucket after its home, if any. Keys displaced
 * further are left to step 3. */
static inline void larder__table_prefetch_beyond(const struct larder__table *t, uint64_t home,
						 uint64_t hash)
{
	larder__table_prefetch_match(&t->buckets[larder__table_after(t, home)], hash);
}

/* larder__table_lookup_home_rcu(): only the general lookup can tell. Never a
 * live slot word (its pointer field is the marker's). */
#define LARDER__LOOKUP_AGAIN LARDER__SLOT_MARKER

/*
 * The common case of a lookup, inline: the home bucket's first slot with the
 * key's tag (larder__bucket_tag_bits), and its key compare. Returns the live slot word, 0 when the key
 * is absent, or LARDER__LOOKUP_AGAIN for everything rarer, which the general
 * lookup decides from scratch: a home that MOVED, a key that may have
 * overflowed into later buckets, a matching tag that is not the key (1 in
 * 2^16 per occupied slot), a marker, an empty slot when the tag is 0.
 * Inside a read section.
 */
static inline uint64_t larder__table_lookup_home_rcu(struct larder__table *t, uint64_t hash,
						     const void *key, size_t key_len)
{
	struct larder__bucket *b = &t->buckets[larder__table_home(t, hash)];
	/* A-CTL: pairs with R-MOVED in larder__table_migrate(). */
	uint64_t ctl = atomic_load_explicit(&b->ctl, LARDER__ACQUIRE);
	if (__builtin_expect(ctl & LARDER__CTL_MOVED, 0))
		return LARDER__LOOKUP_AGAIN;
	unsigned m = larder__bucket_tag_bits(b, hash);
	if (!m)
		return (ctl >> 32) == 0 ? 0 : LARDER__LOOKUP_AGAIN;
	/* A-SLOT: pairs with R-SLOT; the entry's fields are visible. */
	uint64_t w = atomic_load_explicit(&b->slot[larder__tag_bits_slot(m)], LARDER__ACQUIRE);
	if (__builtin_expect((w & LARDER__SLOT_PTR_MASK) > LARDER__SLOT_MARKER, 1) &&
	    __builtin_expect(larder__entry_key_equals(larder__slot_entry(w), key, key_len), 1))
		return w;
	return LARDER__LOOKUP_AGAIN;
}

/*
 * Finds the live slot word of key in t, following MOVED homes into later
 * tables; 0 when absent. Inside a read section.
 */
static inline uint64_t larder__table_lookup_rcu(struct larder__table *t, uint64_t hash,
						const void *key, size_t key_len)
{
	uint64_t w = larder__table_lookup_home_rcu(t, hash, key, key_len);
	if (__builtin_expect(w != LARDER__LOOKUP_AGAIN, 1))
		return w;
	return larder__table_lookup_slow_rcu(t, hash, key, key_len);
}

/* A new empty table of at least `buckets` buckets (rounded up to a multiple of
 * 64). NULL: no memory, or more than LARDER__TABLE_MAX_BUCKETS. */
struct larder__table *larder__table_create(uint64_t buckets);
void larder__table_destroy(struct larder__table *t);

/* A locked home and the table it is in. */
struct larder__table_held {
	struct larder__bucket *home;
	struct larder__table *t;
};

/* larder__table_lock() when the home was locked or MOVED at first sight.
 * Both results come back in registers: with the table through a pointer,
 * the caller's table variable had its address taken, and so lived in the
 * frame on the fast path too (a store per put). */
struct larder__table_held larder__table_lock_wait(struct larder__table *t, uint64_t hash);

/* Locks the key's home bucket, following MOVED; *tp gets the table it is in.
 * Inline for the common case, a home neither locked nor moved: the load is
 * only the CAS's expected value, and the CAS, which sees the same word,
 * decides (a put's lock fell from 25 to about 10 instructions,
 * docs/bench.md). larder__table_try_lock() is that case alone: the home in
 * t locked, or NULL (nothing done) where larder__table_lock() would wait or
 * follow MOVED, for a caller whose other cases are all out of line (the
 * plain put's fast path, core/cache.c). */
static inline struct larder__bucket *larder__table_try_lock(struct larder__table *t,
							    uint64_t hash)
{
	struct larder__bucket *b = &t->buckets[larder__table_home(t, hash)];
	/* Relaxed: the CAS below rechecks the word it compares. */
	uint64_t ctl = atomic_load_explicit(&b->ctl, LARDER__RELAXED);
	/* L-ACQ: acquire; pairs with L-REL of the previous holder. */
	if (__builtin_expect(!(ctl & (LARDER__CTL_LOCK | LARDER__CTL_MOVED)), 1) &&
	    __builtin_expect(atomic_compare_exchange_weak_explicit(&b->ctl, &ctl,
								   ctl | LARDER__CTL_LOCK,
								   LARDER__ACQUIRE,
								   LARDER__RELAXED),
			     1))
		return b;
	return NULL;
}

static inline struct larder__bucket *larder__table_lock(struct larder__table *t, uint64_t hash,
							struct larder__table **tp)
{
	struct larder__bucket *b = larder__table_try_lock(t, hash);
	if (__builtin_expect(b != NULL, 1)) {
		*tp = t;
		return b;
	}
	struct larder__table_held held = larder__table_lock_wait(t, hash);
	*tp = held.t;
	return held.home;
}

static inline void larder__table_unlock(struct larder__bucket *home)
{
	/* L-REL: release; the holder's slot changes happen before the next holder. */
	atomic_fetch_and_explicit(&home->ctl, ~LARDER__CTL_LOCK, LARDER__RELEASE);
}

/* Under the lock of home, the key's home bucket in t as larder__table_lock()
 * returned it: the slot holding key in t, or NULL. A put's probe starts from
 * the home its lock found rather than computing it again (docs/bench.md). */
larder__atomic_u64 *larder__table_find_from_locked(struct larder__table *t,
						   struct larder__bucket *home, uint64_t hash,
						   const void *key, size_t key_len);

/* Under the lock of home: the slot holding key when it is the home's first
 * slot of the key's tag (m: larder__bucket_tag_bits(home, hash), not 0),
 * else NULL, which says nothing: larder__table_find_home_locked()'s overwrite
 * case, alone for the plain put's fast path (core/cache.c). */
static inline larder__atomic_u64 *larder__table_home_hit(struct larder__bucket *home, unsigned m,
							  const void *key, size_t key_len)
{
	larder__atomic_u64 *slot = &home->slot[larder__tag_bits_slot(m)];
	/* Acquire: another home's slot may have just been published
	 * (R-SLOT), as in larder__table_find_from_locked(). Its tag is not
	 * tested again: the slot may have changed since the hint (an empty
	 * slot, tag 0, claimed by another home's key), but an entry with our
	 * key has our hash, so the key compare alone decides (4 Ir per put,
	 * docs/bench.md). */
	uint64_t w = atomic_load_explicit(slot, LARDER__ACQUIRE);
	if (__builtin_expect((w & LARDER__SLOT_PTR_MASK) > LARDER__SLOT_MARKER, 1) &&
	    __builtin_expect(larder__entry_key_equals(larder__slot_entry(w), key, key_len), 1))
		return slot;
	return NULL;
}

/*
 * Under the lock of home, not MOVED (as larder__table_try_lock() gives it):
 * the plain put's fast insert (core/cache.c), for a key that no slot of home
 * has the tag of (m, larder__bucket_tag_bits(home, hash), is 0), so it is
 * absent when nothing overflowed the home. Then the first empty slot of
 * home takes word, as larder__table_insert_locked() would give it, and the
 * result is 1. 0 (nothing changed) in every other case: keys overflowed the
 * home (ours may be among them), no slot is empty, or the one that looked
 * empty was taken meanwhile by another home's key (TABLE-X2: writers of
 * other homes claim empty slots too). The empty slots are found as the
 * slots of tag 0 (larder__bucket_tag_bits(home, 0): empty slots, and an
 * entry whose tag is 0, which the CAS then refuses), seven at once, without
 * the call and the slot-by-slot loop of larder__table_insert_locked(); the
 * fast path makes no call (core/cache.c, docs/results/bench-history.md "Instructions per
 * insert").
 */
static inline int larder__table_home_insert(struct larder__bucket *home, uint64_t word)
{
	/* Relaxed: as in larder__table_find_from_locked(). */
	if ((atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32) != 0)
		return 0;
	unsigned empty = larder__bucket_tag_bits(home, 0);
	if (!empty)
		return 0;
	uint64_t expect = 0;
	/* R-SLOT: release publishes the entry (pairs with A-SLOT). */
	return atomic_compare_exchange_strong_explicit(&home->slot[larder__tag_bits_slot(empty)],
						       &expect, word, LARDER__RELEASE,
						       LARDER__RELAXED);
}

/*
 * larder__table_find_from_locked() for a put, its common case inline: the
 * home's first slot with the key's tag holds the key (an overwrite), or no
 * slot has the tag and nothing overflowed the home (an insert). Anything
 * else (a second matching tag, a displaced key, a marker) goes to
 * larder__table_find_from_locked(), which starts over at the home. The call
 * with its prologue and epilogue was about a fifth of a put's index
 * instructions (docs/results/bench-history.md, "The writer's side of a put"). Under the
 * lock of home, as there: our key's slot cannot change (TABLE-X2).
 */
static inline larder__atomic_u64 *larder__table_find_home_locked(struct larder__table *t,
								 struct larder__bucket *home,
								 uint64_t hash, const void *key,
								 size_t key_len)
{
	unsigned m = larder__bucket_tag_bits(home, hash);
	if (m) {
		larder__atomic_u64 *slot = larder__table_home_hit(home, m, key, key_len);
		if (__builtin_expect(slot != NULL, 1))
			return slot;
	} else if ((atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32) == 0) {
		return NULL; /* relaxed, as in larder__table_find_from_locked() */
	}
	return larder__table_find_from_locked(t, home, hash, key, key_len);
}

/* Under the home lock: the slot holding key in t, or NULL. */
static inline larder__atomic_u64 *larder__table_find_locked(struct larder__table *t, uint64_t hash,
							     const void *key, size_t key_len)
{
	return larder__table_find_from_locked(t, &t->buckets[larder__table_home(t, hash)], hash,
					      key, key_len);
}
larder__atomic_u64 *larder__table_find_word_from(struct larder__table *t,
						  struct larder__bucket *home, uint64_t word);

/*
 * Under the lock of home, the home bucket of hash in t as larder__table_lock()
 * returned it: the slot holding word (larder__slot_word(hash, e): the entry
 * e itself), or NULL. The maintainer's unlink of a victim or an expired
 * entry (maint/evict.c) knows the entry, so it compares slot words where
 * larder__table_find_from_locked() compares keys: no key is read. Relaxed
 * loads: under the home lock e's slot cannot change (TABLE-X2), and a word
 * equal to ours is e's whatever else changes around it. Past the home
 * (something overflowed it), larder__table_find_word_from() probes on.
 */
static inline larder__atomic_u64 *larder__table_find_word_locked(struct larder__table *t,
								  struct larder__bucket *home,
								  uint64_t hash, uint64_t word)
{
	for (unsigned m = larder__bucket_tag_bits(home, hash); m; m &= m - 1) {
		larder__atomic_u64 *slot = &home->slot[larder__tag_bits_slot(m)];
		if (atomic_load_explicit(slot, LARDER__RELAXED) == word)
			return slot;
	}
	/* Relaxed, as in larder__table_find_from_locked(). */
	if ((atomic_load_explicit(&home->ctl, LARDER__RELAXED) >> 32) == 0)
		return NULL;
	return larder__table_find_word_from(t, home, word);
}

/* Under the home lock: claims an empty slot for word within `limit` buckets.
 * Returns 0, or -1 when none was free (nothing changed). */
int larder__table_insert_locked(struct larder__table *t, uint64_t hash, uint64_t word,
				size_t limit);
/* Under the home lock: publishes a replacement word in an existing slot. */
static inline void larder__table_set_locked(larder__atomic_u64 *slot, uint64_t word)
{
	/* R-SLOT: release; publishes the new entry's fields (pairs with A-SLOT). */
	atomic_store_explicit(slot, word, LARDER__RELEASE);
}
/* Under the home lock: empties slot and undoes the overflow counts of its path. */
void larder__table_erase_locked(struct larder__table *t, uint64_t hash, larder__atomic_u64 *slot);

/* larder__table_erase_locked() with the home bucket at hand (the lock's): a
 * slot of the home itself, the common case, has no overflow counts on its
 * path, so it is only emptied, inline (relaxed, as there). */
static inline void larder__table_erase_from_locked(struct larder__table *t,
						   struct larder__bucket *home, uint64_t hash,
						   larder__atomic_u64 *slot)
{
	if (slot >= &home->slot[0] && slot < &home->slot[LARDER__BUCKET_SLOTS]) {
		atomic_store_explicit(slot, 0, LARDER__RELAXED);
		return;
	}
	larder__table_erase_locked(t, hash, slot);
}

/* ---- Maintainer only ---- */

typedef uint64_t larder__entry_hash_fn(void *ctx, const struct larder__entry *e);

/* Starts growing t into a table of 2^k its buckets (k >= 1, from
 * larder__table_grow_shift). Returns 0 or -1 (no memory, or more buckets than
 * a table may have). */
int larder__table_grow_begin(struct larder__table *t, unsigned k);
/* Starts shrinking t into a table of 1/2^k its buckets (k from
 * larder__table_shrink_shift), with a quarter of the target's slots left to
 * maintainer threads' new keys (TABLE-X5). Returns 0 or -1 (no memory). */
int larder__table_shrink_begin(struct larder__table *t, unsigned k);
/* Whether a new key may go in while t resizes: a maintainer thread's
 * into a shrink (TABLE-X5: the target's quarter), anyone's into a growth's
 * target (TABLE-X6). Each yes takes one slot of that room. */
int larder__table_room_take(struct larder__table *t);
/* The bytes t maps (its header and buckets, rounded to pages). */
size_t larder__table_map_bytes(const struct larder__table *t);
/* TABLE-X5: undoes a resize before any home of t moved (t->moved == 0): t has
 * no next again. Returns the next table, empty, for the caller to destroy
 * after a grace period (a writer's TABLE-X5 test or a scan may hold it). */
struct larder__table *larder__table_resize_abandon(struct larder__table *t);
/*
 * Moves up to `homes` more homes of t into t->next (growing or shrinking);
 * returns 1 when all are moved. An entry that finds no free slot in the
 * whole of t->next (writers filled it faster than the maintainer moved
 * homes) is dropped from the index and handed to drop(), which retires it as
 * evicted: a cache may always evict.
 */
int larder__table_migrate(struct larder__table *t, size_t homes, larder__entry_hash_fn *hash,
			  void (*drop)(void *ctx, struct larder__entry *e), void *ctx);
/*
 * A walk of t's buckets in order, for the maintainer's own unreachable
 * tables (a cleared table, which it empties: maint/clear.c) and for
 * quiescent callers, so that they need not know a bucket's layout. Slots are loaded with acquire
 * (A-SLOT): an entry seen is seen whole.
 */
struct larder__table_iter {
	struct larder__table *t;
	uint64_t at; /* the next bucket */
};

static inline void larder__table_iter_init(struct larder__table_iter *it, struct larder__table *t)
{
	it->t = t;
	it->at = 0;
}

/* True once every bucket has been read. */
static inline int larder__table_iter_done(const struct larder__table_iter *it)
{
	return it->at > it->t->last;
}

/* The entries of bucket at + ahead into out[], without moving on (a
 * prefetcher's look ahead); 0 beyond the last bucket. */
static inline unsigned larder__table_iter_peek(const struct larder__table_iter *it, uint64_t ahead,
					       struct larder__entry *out[LARDER__BUCKET_SLOTS])
{
	if (it->at + ahead > it->t->last)
		return 0;
	const struct larder__bucket *b = &it->t->buckets[it->at + ahead];
	unsigned n = 0;
	for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
		/* A-SLOT: pairs with R-SLOT. */
		uint64_t w = atomic_load_explicit(&b->slot[i], LARDER__ACQUIRE);
		uint64_t p = w & LARDER__SLOT_PTR_MASK;
		if (p != 0 && p != LARDER__SLOT_MARKER)
			out[n++] = larder__slot_entry(w);
	}
	return n;
}

/* The entries of the next bucket into out[], moving on. With take, their
 * slots are emptied (relaxed: only for a table no one else can reach). */
static inline unsigned larder__table_iter_next(struct larder__table_iter *it,
					       struct larder__entry *out[LARDER__BUCKET_SLOTS],
					       int take)
{
	struct larder__bucket *b = &it->t->buckets[it->at++];
	unsigned n = 0;
	for (unsigned i = 0; i < LARDER__BUCKET_SLOTS; i++) {
		/* A-SLOT: pairs with R-SLOT. */
		uint64_t w = atomic_load_explicit(&b->slot[i], LARDER__ACQUIRE);
		uint64_t p = w & LARDER__SLOT_PTR_MASK;
		if (p == 0 || p == LARDER__SLOT_MARKER)
			continue;
		out[n++] = larder__slot_entry(w);
		if (take)
			atomic_store_explicit(&b->slot[i], 0, LARDER__RELAXED); /* private */
	}
	return n;
}

/* Calls fn for every entry of t and, if t is being resized, of t->next
 * (quiescent callers only, or t unreachable by writers). */
void larder__table_walk(struct larder__table *t, void (*fn)(void *ctx, struct larder__entry *e),
			void *ctx);
/* The number of buckets of t. */
static inline uint64_t larder__table_buckets(const struct larder__table *t)
{
	return t->last + 1;
}

/* Slots in t (buckets x 7). */
static inline uint64_t larder__table_slots(const struct larder__table *t)
{
	return (t->last + 1) * LARDER__BUCKET_SLOTS;
}

/* TABLE-L1: should a table holding `entries` grow? */
static inline int larder__table_over_load(const struct larder__table *t, uint64_t entries)
{
	return entries * LARDER__TABLE_GROW_DEN > larder__table_slots(t) * LARDER__TABLE_GROW_NUM;
}

/*
 * TABLE-L3: the k by which a table holding `entries` should shrink (to 1/2^k of
 * its buckets), or 0 to keep it: only below the shrink load, and only as far
 * as leaves at least `floor` buckets, a multiple of 64, at half load or less.
 */
static inline unsigned larder__table_shrink_shift(const struct larder__table *t, uint64_t entries,
						  uint64_t floor)
{
	const uint64_t n = t->last + 1;
	if (entries * LARDER__TABLE_SHRINK_DEN >= larder__table_slots(t) * LARDER__TABLE_SHRINK_NUM)
		return 0;
	unsigned k = 0;
	while ((n >> (k + 1)) % 64 == 0 && (n >> (k + 1)) << (k + 1) == n &&
	       (n >> (k + 1)) >= floor && entries * 2 <= (n >> (k + 1)) * LARDER__BUCKET_SLOTS)
		k++;
	return k;
}

/* TABLE-L1: the buckets that hold `entries` at the fill load, or at half load when
 * that is small (before the rounding of larder__table_create). */
static inline uint64_t larder__table_buckets_for(uint64_t entries)
{
	const uint64_t half = (entries * 2 + LARDER__BUCKET_SLOTS - 1) / LARDER__BUCKET_SLOTS;
	if (half <= LARDER__TABLE_SMALL_BUCKETS)
		return half;
	const uint64_t per = (uint64_t)LARDER__BUCKET_SLOTS * LARDER__TABLE_FILL_NUM;
	const uint64_t fill = (entries * LARDER__TABLE_FILL_DEN + per - 1) / per;
	return fill > LARDER__TABLE_SMALL_BUCKETS ? fill : LARDER__TABLE_SMALL_BUCKETS;
}

/* TABLE-X3: the k by which t grows to hold `entries`: the smallest k >= 1 that
 * gives at least their TABLE-L1 buckets, but no more than a table may have
 * (0 when even one doubling would exceed that). A growth at the growth
 * load takes k = 1 (its entries need about 1.1 x t's buckets). */
static inline unsigned larder__table_grow_shift(const struct larder__table *t, uint64_t entries)
{
	const uint64_t n = t->last + 1, want = larder__table_buckets_for(entries);
	unsigned k = 1;
	if (n * 2 > LARDER__TABLE_MAX_BUCKETS)
		return 0;
	while ((n << k) < want && (n << (k + 1)) <= LARDER__TABLE_MAX_BUCKETS)
		k++;
	return k;
}

#endif /* LARDER_INDEX_TABLE_H */
