/*
 * mem/pagedir.c - the id directory: runs of id blocks handed to pages.
 *
 * Allocation of runs (under the owner's lock, once per page, never per slot):
 * a freed run of the same length first (a stack per length, PAGEDIR-D3), else fresh
 * blocks from the top, else the first longer freed run, split. A workload that
 * moves between size classes leaves runs of other lengths behind; splitting
 * reuses them once the top is exhausted, so the ids run out only when nearly
 * all are in use. Runs are not merged back.
 *
 * The directory is mapped here with mmap rather than larder__pages_map(): it
 * is a reservation of address space (PROT_NONE), not memory; only the part
 * made writable and touched costs RSS (8 bytes per 64 ids, 0.1 B per entry
 * at 96-byte slots).
 */
#define _GNU_SOURCE
#include "mem/pagedir.h"

#include <string.h>
#include <sys/mman.h>

#include "core/alloc.h"

#define RESERVE_BYTES ((size_t)1 << 29)    /* 2^26 words: every block fits */
#define GROW_BLOCKS (64u * 1024u / 8u)      /* 64 KiB of directory at a time */

int larder__pagedir_init(struct larder__pagedir *d)
{
	memset(d, 0, sizeof(*d));
	if (larder__alloc_fault())
		return -1;
	void *p = mmap(NULL, RESERVE_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0);
	if (p == MAP_FAILED)
		return -1;
	d->dir = p;
	d->top = 1; /* PAGEDIR-D1: block 0 holds the null id */
	return 0;
}

void larder__pagedir_destroy(struct larder__pagedir *d)
{
	if (d->dir)
		munmap(d->dir, RESERVE_BYTES);
	d->dir = NULL;
}

/* Makes blocks below `need` writable. */
static int grow_locked(struct larder__pagedir *d, uint32_t need)
{
	if (need <= d->writable)
		return 0;
	uint64_t to = ((uint64_t)need + GROW_BLOCKS - 1) / GROW_BLOCKS * GROW_BLOCKS;
	if (to > RESERVE_BYTES / 8)
		to = RESERVE_BYTES / 8;
	if (larder__alloc_fault() ||
	    mprotect(d->dir + d->writable, (size_t)(to - d->writable) * 8,
		     PROT_READ | PROT_WRITE) != 0)
		return -1;
	d->writable = (uint32_t)to;
	return 0;
}

static void push_run_locked(struct larder__pagedir *d, uint32_t block, uint32_t len)
{
	d->dir[block] = d->free_run[len]; /* PAGEDIR-D3: no one translates a free block's ids */
	d->free_run[len] = block;
}

static uint32_t pop_run_locked(struct larder__pagedir *d, uint32_t len)
{
	uint32_t b = d->free_run[len];
	d->free_run[len] = (uint32_t)d->dir[b]; /* PAGEDIR-D3: the link push_run_locked() left */
	return b;
}

/* A run of len blocks (PAGEDIR-D3), or 0 when there is none. */
static uint32_t take_run_locked(struct larder__pagedir *d, uint32_t len)
{
	if (d->free_run[len])
		return pop_run_locked(d, len);
	if (d->top + len <= LARDER__PAGEDIR_BLOCKS && grow_locked(d, d->top + len) == 0) {
		uint32_t b = d->top;
		d->top += len;
		return b;
	}
	for (uint32_t l = len + 1; l <= LARDER__PAGEDIR_RUN_MAX; l++) {
		if (d->free_run[l]) {
			uint32_t b = pop_run_locked(d, l);
			push_run_locked(d, b + len, l - len);
			return b;
		}
	}
	return 0;
}

int larder__pagedir_add_locked(struct larder__pagedir *d, struct larder__pageid *pg,
			       void *slots, uint32_t nslots, uint32_t slot_bytes)
{
	uint32_t len = (nslots + LARDER__PAGEDIR_BLOCK - 1) / LARDER__PAGEDIR_BLOCK;
	uintptr_t base = (uintptr_t)slots;
	if (len == 0 || len > LARDER__PAGEDIR_RUN_MAX || (slot_bytes % 8) != 0 ||
	    slot_bytes > LARDER__SLAB_MAX_SLOT || (nslots > 1 && slot_bytes == 0) ||
	    ((uint64_t)base + (uint64_t)nslots * slot_bytes) >> 48)
		return -1;
	uint32_t b = take_run_locked(d, len);
	if (!b)
		return -1;
	for (uint32_t i = 0; i < len; i++) {
		uint64_t at = base + (uint64_t)i * LARDER__PAGEDIR_BLOCK * slot_bytes;
		d->dir[b + i] = (uint64_t)at << 16 | slot_bytes / 8; /* PAGEDIR-D2 */
	}
	pg->first_id = b << LARDER__PAGEDIR_BLOCK_BITS;
	pg->slots_offset = (uint32_t)(base - (uintptr_t)pg);
	pg->recip = slot_bytes ? (uint32_t)((UINT64_C(1) << 32) / slot_bytes + 1) : 0;
	pg->nslots = nslots;
	atomic_fetch_add_explicit(&d->ids_in_use, nslots, LARDER__RELAXED); /* a statistic */
	return 0;
}

void larder__pagedir_remove_locked(struct larder__pagedir *d, struct larder__pageid *pg)
{
	if (!pg->first_id)
		return;
	uint32_t len = (pg->nslots + LARDER__PAGEDIR_BLOCK - 1) / LARDER__PAGEDIR_BLOCK;
	push_run_locked(d, pg->first_id >> LARDER__PAGEDIR_BLOCK_BITS, len);
	atomic_fetch_sub_explicit(&d->ids_in_use, pg->nslots, LARDER__RELAXED); /* a statistic */
	pg->first_id = 0;
}
