/*
 * mem/pagedir.h - 32-bit entry ids: a slab slot named by a number.
 *
 * The maintainer links entries into its queues (evict/list.h) and the TTL
 * wheel (ttl/wheel.h) by 4-byte ids instead of 8-byte pointers, which is what
 * keeps the entry header at 16 bytes (core/entry.h). An id names one slot:
 *
 *     id = first id of the slot's page + the slot's index in the page
 *
 * Every page (and every large entry, a page of one slot) takes a run of whole
 * blocks of 64 ids when it is formatted and gives them back when it is
 * retired. The directory maps each block to where its 64 slots start:
 *
 *     dir[id >> 6] = address of the block's slot 0 << 16 | slot_bytes / 8
 *
 * so id -> address is one load, a shift, a zero-extension and a
 * multiply-add (no page header is read; with the address in the low bits
 * it took a 64-bit mask constant, a mask and a shift more: 3 of the
 * maintainer's instructions per link it follows, docs/bench.md).
 * address -> id reads the page header (struct larder__pageid, the first
 * bytes of every slab page and of every large mapping): first_id plus the
 * slot index by a reciprocal multiply, no division.
 *
 * The directory is one flat array reserved at its largest (2^26 blocks,
 * 512 MiB of address space, PROT_NONE) and made writable as it grows, so it
 * never moves: the maintainer reads it without a lock while writers add pages
 * under the slab lock.
 *
 * Invariants (tests/unit/test_pagedir.c):
 *   PAGEDIR-D1. Id 0 is the null link: block 0 is never handed out. Ids at or above
 *       LARDER__PAGEDIR_ID_LIMIT are never handed out either (the TTL wheel
 *       uses them as list tags, ttl/wheel.h).
 *   PAGEDIR-D2. dir[b] of a block in use is written (under the owner's lock) before
 *       any slot of its page is handed out; an id is translated only while
 *       its slot holds an entry, which was published after its page's blocks
 *       were written (the index's R-SLOT/A-SLOT or an event's R-EV/A-EV carry
 *       the order), and a word is rewritten only when its page is formatted
 *       or retired, with no entry in it. So the words are plain memory, as
 *       an entry's ENTRY-E1 fields are: every read happens after the write it
 *       reads, and no write races with it. (Plain, not relaxed atomics, so
 *       that the compiler keeps the directory's address in a register
 *       across the links it rewrites.)
 *   PAGEDIR-D3. A block is in at most one page's run; a freed run keeps the index of
 *       the next free run of its length in dir[first block].
 * Limit: at most 2^32 - 2^12 ids in use at once; a page uses its slot count
 * rounded up to 64 ids (a large entry 64), so about 4 * 10^9 small entries.
 * Past it, formatting a page fails and the allocation reports no memory
 * (LARDER_ENOMEM from the put), never a crash. Pointers must fit 48 bits (x86-64
 * and AArch64 user space without 5-level opt-in mappings); a page above that
 * is refused the same way.
 */
#ifndef LARDER_MEM_PAGEDIR_H
#define LARDER_MEM_PAGEDIR_H

#include <stddef.h>
#include <stdint.h>

#include "mem/sizeclass.h"
#include "sync/atomic.h"

#define LARDER__PAGEDIR_BLOCK_BITS 6u
#define LARDER__PAGEDIR_BLOCK (1u << LARDER__PAGEDIR_BLOCK_BITS)
#define LARDER__PAGEDIR_ID_LIMIT (UINT32_C(0xFFFFF000))
#define LARDER__PAGEDIR_BLOCKS (LARDER__PAGEDIR_ID_LIMIT >> LARDER__PAGEDIR_BLOCK_BITS)
/* The longest run: a page of 2048 slots (64 KiB of 32-byte slots). */
#define LARDER__PAGEDIR_RUN_MAX 32u
/* A large entry's mapping starts with its page header; the entry follows. */
#define LARDER__PAGEDIR_LARGE_PREFIX 64u

/* The start of every slab page and large mapping. Written by the page's
 * formatter under the slab lock, read by the maintainer (PAGEDIR-D2). */
struct larder__pageid {
	uint32_t first_id;     /* id of slot 0; 0 while the page has no ids */
	uint32_t slots_offset; /* from the page start to slot 0 */
	uint32_t recip;        /* floor(2^32 / slot_bytes) + 1 */
	uint32_t nslots;
};

struct larder__pagedir {
	uint64_t *dir; /* LARDER__PAGEDIR_BLOCKS words, reserved; PAGEDIR-D2 */
	/* Under the owner's lock (the slab lock): */
	uint32_t top;       /* blocks below were handed out at least once */
	uint32_t writable;  /* blocks below are mapped read-write */
	uint32_t free_run[LARDER__PAGEDIR_RUN_MAX + 1]; /* PAGEDIR-D3: by run length; 0 = none */
	/* Statistics; relaxed: nothing is ordered by them. */
	larder__atomic_u64 ids_in_use; /* slot ids of pages holding ids now */
};

/* Reserves the directory (address space only). 0, or -1 when mmap fails. */
int larder__pagedir_init(struct larder__pagedir *d);
void larder__pagedir_destroy(struct larder__pagedir *d);

/*
 * Owner's lock held: gives the nslots slots of slot_bytes each, starting at
 * slots, ids, and records them in *pg (first_id, recip, slots_offset from
 * pg). Returns 0, or -1 when the ids are used up, the directory cannot grow,
 * or slots lies above 2^48 (PAGEDIR-D1, limit above). Never blocks otherwise.
 */
int larder__pagedir_add_locked(struct larder__pagedir *d, struct larder__pageid *pg,
			       void *slots, uint32_t nslots, uint32_t slot_bytes);
/* Owner's lock held: gives pg's ids back (no slot of it may be linked). */
void larder__pagedir_remove_locked(struct larder__pagedir *d, struct larder__pageid *pg);

/* The directory's words, for a user that translates many ids (a policy's
 * queues, evict/list.h): the array is reserved once, at init, and never
 * moves, so keeping it saves the load of d->dir per translation, 2 of the
 * maintainer's instructions per overwrite (docs/bench.md). Valid from
 * larder__pagedir_init() to larder__pagedir_destroy(). */
static inline const uint64_t *larder__pagedir_words(const struct larder__pagedir *d)
{
	return d->dir;
}

/* The address of slot id (in use: PAGEDIR-D2) in the directory whose words
 * are dir. One load from the directory. */
static inline void *larder__pagedir_slot_in(const uint64_t *dir, uint32_t id)
{
	uint64_t v = dir[id >> LARDER__PAGEDIR_BLOCK_BITS]; /* PAGEDIR-D2 */
	uintptr_t base = (uintptr_t)(v >> 16);
	return (void *)(base + (uintptr_t)(id & (LARDER__PAGEDIR_BLOCK - 1)) *
				       (uintptr_t)(uint16_t)v * 8);
}

/* The address of slot id (in use: PAGEDIR-D2). */
static inline void *larder__pagedir_slot(const struct larder__pagedir *d, uint32_t id)
{
	return larder__pagedir_slot_in(d->dir, id);
}

/* The id of the slot at p, which holds bytes (as allocated by the slab). */
static inline uint32_t larder__pagedir_id(const void *p, size_t bytes)
{
	const struct larder__pageid *pg;
	if (bytes > LARDER__SLAB_MAX_SLOT) {
		pg = (const void *)((const unsigned char *)p - LARDER__PAGEDIR_LARGE_PREFIX);
		return pg->first_id;
	}
	size_t page = larder__sizeclass_page(larder__sizeclass_of(bytes));
	pg = (const void *)((uintptr_t)p & ~(uintptr_t)(page - 1));
	uint32_t off = (uint32_t)((uintptr_t)p - (uintptr_t)pg) - pg->slots_offset;
	return pg->first_id + (uint32_t)(((uint64_t)off * pg->recip) >> 32);
}

#endif /* LARDER_MEM_PAGEDIR_H */
