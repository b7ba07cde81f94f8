/*
 * core/entry.h - the native layout of one cache entry.
 *
 * An entry is one slab slot (or, for big values, one private mapping):
 *
 *     struct larder__entry   16 bytes, below
 *     expire_ms              8 bytes, only when LARDER__ENTRY_TTL is set
 *     wheel link             8 bytes, only when LARDER__ENTRY_TTL is set
 *     key bytes              key_len
 *     value bytes            value_len
 *
 * Ownership of the fields (the invariants the stress test relies on):
 *   ENTRY-E1. key_len, value_len, the immutable flags (LARDER__ENTRY_TTL), the key
 *       and the value are written by the creating writer before the entry is
 *       published in the index (release) and are never written again; readers
 *       may read them once they have loaded the entry from the index (acquire).
 *       LARDER__ENTRY_COMPRESSED is immutable too: value_len then counts the
 *       stored bytes, whose first 4 hold the value's own length.
 *   ENTRY-E2. expire_ms is atomic: touch() rewrites it in place under the key's
 *       bucket lock; readers load it relaxed, because either deadline is a
 *       correct answer for a read that races with the touch.
 *   ENTRY-E3. prev, next, mbits and the wheel link belong to the maintainer thread
 *       alone (policy queue links and state; the TTL wheel's list links or
 *       heap index, ttl/wheel.h), except that the creating writer initialises
 *       them before publication (ENTRY-E6). Readers never read them, so they share
 *       the line with reader-visible fields without a data race. Entries without a
 *       deadline have no wheel link and pay nothing for it.
 *   ENTRY-E4. Besides touch (ENTRY-E2), a reader of an expire-after-access cache may
 *       store expire_ms, relaxed, by a compare-and-swap from the value it
 *       read, only to move it later (core/cache.c, extend_on_read): a touch
 *       or another reader that stored meanwhile makes the CAS fail, and the
 *       reader judges the new value afresh. A read and a touch that race are
 *       ordered by the deadline word itself: the later store wins, as if
 *       that call came last.
 *   ENTRY-E5. prev and next, and the wheel link's, are 32-bit entry ids
 *       (mem/pagedir.h; 0 is null), not pointers: each pair of links costs
 *       8 bytes instead of 16. The maintainer
 *       translates an id with larder__entry_at() (one directory load) and
 *       finds an entry's own id with larder__entry_id() (its page header).
 *       Once an entry is retired (unlinked from every queue, DEAD) the same
 *       8 bytes hold retired_next, the maintainer's list of entries waiting
 *       for a grace period.
 *   ENTRY-E6. An entry in no policy queue has prev 0 and next its own id: the
 *       creating writer stores it (it has the page header at hand), and
 *       every unlink puts it back (evict/list.h), so the maintainer never
 *       computes an id to link an entry; except replace()'s of the entry
 *       it replaces, which is retired at once (POLICY-P1, ENTRY-E5). The wheel link starts zeroed.
 *   ENTRY-E7. flags is an atomic byte, every access relaxed. Its immutable bits
 *       (ENTRY-E1) never change after publication; its ACCESSED bit is set by
 *       readers on a hit, only when clear (a load, a test, a store: no shared
 *       write on the common hit of an entry already marked), and cleared by
 *       the maintainer's policy when it folds the bit into its state
 *       (evict/policy.h POLICY-P5). Every store writes back the immutable bits it
 *       read, so they stay exact; racing stores of ACCESSED may lose a set or
 *       a clear, which only loses or repeats one access signal (the bit is
 *       lossy, like the hit ring). A reader stores it inside its read
 *       section, so the grace period (GP-R2/GP-A1) orders the store before the
 *       slot is freed and reused (docs/memory-model.md, "Accessed bit").
 */
#ifndef LARDER_CORE_ENTRY_H
#define LARDER_CORE_ENTRY_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mem/pagedir.h"
#include "sync/atomic.h"
#include "ttl/wheel.h"

enum {
	LARDER__ENTRY_TTL = 1,         /* ENTRY-E1: an expire_ms field follows the header */
	LARDER__ENTRY_COMPRESSED = 2,  /* ENTRY-E1: the value is stored LZ4-compressed (core/compress.h) */
	LARDER__ENTRY_SAMPLED = 4,     /* ENTRY-E1: its key is in its pool probe's widest sample (pool/probe.h) */
	LARDER__ENTRY_ACCESSED = 0x80, /* ENTRY-E7: hit since the policy last looked */
};

/* mbits: bits 0-4 belong to the eviction policy (once DEAD, to the free:
 * maint/apply.c, free_code), 5-7 to the maintainer. */
enum {
	LARDER__MBITS_POLICY = 0x1f,
	LARDER__MBITS_QUEUED = 0x20,  /* linked in the policy's queues */
	LARDER__MBITS_COUNTED = 0x40, /* counted in the maintainer's live totals */
	LARDER__MBITS_DEAD = 0x80,    /* unlinked from the index; awaiting free */
};

struct larder__entry {
	union {
		struct {
			uint32_t prev; /* ENTRY-E3, ENTRY-E5: toward the queue's head */
			uint32_t next; /* ENTRY-E3, ENTRY-E5: toward the queue's tail */
		};
		struct larder__entry *retired_next; /* ENTRY-E3, ENTRY-E5: once DEAD */
	};
	uint32_t value_len;      /* ENTRY-E1 */
	uint16_t key_len;        /* ENTRY-E1 */
	larder__atomic_u8 flags; /* ENTRY-E1 and ENTRY-E7: read with larder__entry_flags() */
	uint8_t mbits;           /* ENTRY-E3 */
};

_Static_assert(sizeof(struct larder__entry) == 16, "the entry header is 16 bytes (ENTRY-E5)");

#define LARDER__ENTRY_HEADER_BYTES sizeof(struct larder__entry)
/* expire_ms and the wheel link (ENTRY-E2, ENTRY-E3). */
#define LARDER__ENTRY_TTL_BYTES (sizeof(uint64_t) + sizeof(struct larder__wheel_link))
/* Where the wheel link sits in a TTL entry's slot (ttl/wheel.h). */
#define LARDER__ENTRY_WHEEL_OFFSET (LARDER__ENTRY_HEADER_BYTES + sizeof(uint64_t))

static inline size_t larder__entry_prefix_bytes(unsigned flags)
{
	return LARDER__ENTRY_HEADER_BYTES + ((flags & LARDER__ENTRY_TTL) ? LARDER__ENTRY_TTL_BYTES : 0);
}

/* Bytes the entry occupies before slot rounding. */
static inline size_t larder__entry_bytes(unsigned flags, size_t key_len, size_t value_len)
{
	return larder__entry_prefix_bytes(flags) + key_len + value_len;
}

/* The whole flags byte, ACCESSED included (ENTRY-E7), for a reader that goes on to
 * mark the entry: one load serves its TTL test, its offsets and the mark. */
static inline unsigned larder__entry_flags_raw(const struct larder__entry *e)
{
	/* gcc infers e != NULL from a plain load but not from an atomic one;
	 * say it, so that callers' NULL checks after this read fold away. */
	if (!e)
		__builtin_unreachable();
	/* Relaxed (ENTRY-E7): the immutable bits were published with the entry. */
	return atomic_load_explicit(&e->flags, LARDER__RELAXED);
}

/* The immutable flags (ENTRY-E1), without ACCESSED. */
static inline unsigned larder__entry_flags(const struct larder__entry *e)
{
	return larder__entry_flags_raw(e) & ~(unsigned)LARDER__ENTRY_ACCESSED;
}

/* The creating writer, before publication (ENTRY-E1). */
static inline void larder__entry_init_flags(struct larder__entry *e, unsigned flags)
{
	atomic_store_explicit(&e->flags, (uint8_t)flags, LARDER__RELAXED);
}

/* Reader, on a hit: marks e accessed, writing only when the bit is clear in
 * f, its flags as loaded by larder__entry_flags_raw() (ENTRY-E7; X-SET:
 * relaxed, a hint that orders nothing). */
static inline void larder__entry_mark_accessed_seen(struct larder__entry *e, unsigned f)
{
	if (!(f & LARDER__ENTRY_ACCESSED))
		atomic_store_explicit(&e->flags, (uint8_t)(f | LARDER__ENTRY_ACCESSED),
				      LARDER__RELAXED);
}

/* The same, loading the flags itself. */
static inline void larder__entry_mark_accessed(struct larder__entry *e)
{
	larder__entry_mark_accessed_seen(e, larder__entry_flags_raw(e));
}

/* Maintainer (policy): whether e was marked accessed, clearing the mark
 * (ENTRY-E7; X-TAKE: relaxed, a hint that orders nothing). */
static inline int larder__entry_take_accessed(struct larder__entry *e)
{
	unsigned f = atomic_load_explicit(&e->flags, LARDER__RELAXED);
	if (!(f & LARDER__ENTRY_ACCESSED))
		return 0;
	atomic_store_explicit(&e->flags, (uint8_t)(f & ~(unsigned)LARDER__ENTRY_ACCESSED),
			      LARDER__RELAXED);
	return 1;
}

static inline size_t larder__entry_size(const struct larder__entry *e)
{
	return larder__entry_bytes(larder__entry_flags(e), e->key_len, e->value_len);
}

static inline larder__atomic_u64 *larder__entry_expire(struct larder__entry *e)
{
	return (larder__atomic_u64 *)(void *)(e + 1);
}

/*
 * e's deadline on the cache clock, UINT64_MAX when it has none (no TTL, or
 * a touch took it away). Relaxed: ENTRY-E2, either deadline of a racing
 * touch is a correct answer.
 */
static inline uint64_t larder__entry_deadline(struct larder__entry *e)
{
	if (!(larder__entry_flags(e) & LARDER__ENTRY_TTL))
		return UINT64_MAX;
	return atomic_load_explicit(larder__entry_expire(e), LARDER__RELAXED);
}

/* Only for entries with LARDER__ENTRY_TTL (ENTRY-E3: the maintainer's). */
static inline struct larder__wheel_link *larder__entry_wheel(struct larder__entry *e)
{
	return (struct larder__wheel_link *)(void *)((unsigned char *)e + LARDER__ENTRY_WHEEL_OFFSET);
}

static inline struct larder__entry *larder__wheel_entry(struct larder__wheel_link *link)
{
	return (struct larder__entry *)(void *)((unsigned char *)link - LARDER__ENTRY_WHEEL_OFFSET);
}

/* ENTRY-E5: the entry whose id is id (not 0). Maintainer only. */
static inline struct larder__entry *larder__entry_at(const struct larder__pagedir *d, uint32_t id)
{
	return larder__pagedir_slot(d, id);
}

/* ENTRY-E5: e's own id, from its page header. Maintainer only. */
static inline uint32_t larder__entry_id(const struct larder__entry *e)
{
	return larder__pagedir_id(e, larder__entry_size(e));
}

static inline unsigned char *larder__entry_key(struct larder__entry *e)
{
	return (unsigned char *)e + larder__entry_prefix_bytes(larder__entry_flags(e));
}

/* e's value, where flags f put it (any load of e's flags, or the constant
 * bits a caller's test of them established: the bit that places the value
 * never changes). */
static inline unsigned char *larder__entry_value_at(struct larder__entry *e, unsigned f)
{
	return (unsigned char *)e + larder__entry_prefix_bytes(f) + e->key_len;
}

static inline unsigned char *larder__entry_value(struct larder__entry *e)
{
	return larder__entry_key(e) + e->key_len;
}

/* Keys of other lengths (out of line, to keep lookups small). */
int larder__key_equals_other(const unsigned char *a, const unsigned char *b, size_t len);

/*
 * Keys of 8 to 16 bytes (the common case) compare as two overlapping 8-byte
 * words, without a call to memcmp.
 */
static inline int larder__entry_key_equals(struct larder__entry *e, const void *key,
					   size_t key_len)
{
	if (e->key_len != key_len)
		return 0;
	const unsigned char *a = larder__entry_key(e), *b = key;
	if (key_len >= 8 && key_len <= 16) {
		uint64_t a0, a1, b0, b1;
		memcpy(&a0, a, 8);
		memcpy(&b0, b, 8);
		memcpy(&a1, a + key_len - 8, 8);
		memcpy(&b1, b + key_len - 8, 8);
		return ((a0 ^ b0) | (a1 ^ b1)) == 0;
	}
	return larder__key_equals_other(a, b, key_len);
}

#endif /* LARDER_CORE_ENTRY_H */
