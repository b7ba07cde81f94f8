/*
 * mem/pages.c - aligned mappings and the process-wide mapped-bytes audit.
 *
 * Alignment: slab pages are aligned to their own size, so the maintainer finds
 * a slot's page header by masking the slot's address. mmap only promises 4 KiB
 * alignment, so we map size + align and trim both ends.
 *
 * Placement: each mapping is first asked for (as a hint, never MAP_FIXED)
 * right below the previous one, aligned. The kernel places mappings top
 * down, so the hint is usually free and granted: pages mapped one after
 * another are adjacent, one mmap call each instead of three, and the kernel
 * merges them into one area. Without the hint the trimmed ends leave a gap
 * beside every page, and giving 8 GiB of 64 KiB pages back took one munmap
 * (one page-table walk setup, one TLB shootdown) per page or two; adjacent
 * pages freed in address order go back in runs (mem/slab.c, the returner).
 * A gap beside every page also made every page an area of its own, and at
 * vm.max_map_count (65,530 areas: 4 GiB of 64 KiB pages) mmap failed.
 * A hint refused or granted unaligned costs one more mmap/munmap pair.
 *
 * Slab pages in huge pages (larder__pages_map_slab): a random get at 10^7
 * entries touches an entry on one of 240,000 small pages, so nearly every get
 * also missed the TLB and walked the page tables (docs/scale.md measures
 * it). Slab pages are therefore carved, top down, from 2 MiB-aligned chunks
 * advised MADV_HUGEPAGE: the first touch of a chunk faults one transparent
 * huge page, and the slab's pages in it share one TLB entry. A page mapped
 * alone could not get one: the kernel backs a fault with a huge page only
 * when the whole aligned 2 MiB around it is mapped and still empty, and
 * pages placed one below the other are faulted in small pages one by one.
 * Pieces are handed out once and unmapped one by one as before (munmap of a
 * piece splits the huge page; the rest stays mapped), so a piece is zero-filled
 * and the audit counts exactly the pieces handed out. Not counted: the
 * chunk's part not yet handed out, one chunk for the whole process (under
 * 2 MiB of address space, resident once a piece of it was touched); a piece
 * skipped to align a larger page is unmapped at once. THP "never" or a
 * refused hint leaves the chunks in small pages, working the same.
 * LARDER_SLAB_HUGEPAGE=0 in the environment maps each slab page alone, as
 * before, to measure the difference.
 *
 * The audit counter is touched only here, on the rare map/unmap path, never
 * per operation.
 */
#define _GNU_SOURCE
#include "mem/pages.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/testing.h"
#include "sync/atomic.h"

static larder__atomic_u64 mapped_bytes;      /* audit; relaxed: a statistic */
static larder__atomic_uptr last_map; /* start of the last mapping: a hint; relaxed */
static _Atomic long fail_countdown = -1;    /* test seam; relaxed: tests set it between calls */

#define CHUNK_BYTES ((size_t)2 << 20) /* one x86-64 transparent huge page */

/* The slab chunk: [chunk_lo, chunk_top) is mapped and not yet handed out.
 * Both under chunk_lock (a page is carved once per 64 KiB or more of slab,
 * never per operation). */
static pthread_mutex_t chunk_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned char *chunk_lo, *chunk_top;

void larder__test_fail_mmap_after(long n)
{
	atomic_store_explicit(&fail_countdown, n, LARDER__RELAXED); /* see its declaration */
}

uint64_t larder__test_mapped_bytes(void)
{
	return atomic_load_explicit(&mapped_bytes, LARDER__RELAXED); /* a statistic */
}

static int fault_injected(void)
{
	long n = atomic_load_explicit(&fail_countdown, LARDER__RELAXED); /* the CAS re-checks */
	while (n >= 0) {
		/* Relaxed: only the countdown value matters, not ordering. */
		if (atomic_compare_exchange_weak_explicit(&fail_countdown, &n, n - 1,
							  LARDER__RELAXED, LARDER__RELAXED))
			return n == 0;
	}
	return 0;
}

/* Counts bytes handed out. */
static void *mapped(unsigned char *p, size_t bytes)
{
	atomic_fetch_add_explicit(&mapped_bytes, bytes, LARDER__RELAXED); /* a statistic */
	return p;
}

/* Maps bytes aligned to align at the hint, or NULL (not granted there). */
static unsigned char *map_at_hint(size_t bytes, size_t align)
{
	uintptr_t below = atomic_load_explicit(&last_map, LARDER__RELAXED); /* a hint */
	if (below <= bytes + align)
		return NULL;
	void *want = (void *)((below - bytes) & ~(uintptr_t)(align - 1));
	unsigned char *p = mmap(want, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (((uintptr_t)p & (align - 1)) == 0)
		return p;
	munmap(p, bytes);
	return NULL;
}

/* Maps bytes aligned to align anywhere (over-map and trim), or NULL. */
static unsigned char *map_anywhere(size_t bytes, size_t align)
{
	size_t span = align > LARDER__OS_PAGE ? bytes + align : bytes;
	unsigned char *p = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
				-1, 0);
	if (p == MAP_FAILED)
		return NULL;
	if (span != bytes) {
		uintptr_t start = ((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1);
		size_t head = start - (uintptr_t)p;
		if (head)
			munmap(p, head);
		if (span - head - bytes)
			munmap((unsigned char *)start + bytes, span - head - bytes);
		p = (unsigned char *)start;
	}
	return p;
}

/* Maps bytes aligned to align, not counted, and remembers where the mapping
 * starts (the next hint). NULL when the kernel refuses. */
static unsigned char *map_aligned(size_t bytes, size_t align)
{
	unsigned char *p = map_at_hint(bytes, align);
	if (!p)
		p = map_anywhere(bytes, align);
	if (p)
		atomic_store_explicit(&last_map, (uintptr_t)p, LARDER__RELAXED); /* a hint */
	return p;
}

void *larder__pages_map(size_t bytes, size_t align)
{
	if (fault_injected() || larder__alloc_fault())
		return NULL;
	unsigned char *p = map_aligned(bytes, align);
	return p ? mapped(p, bytes) : NULL;
}

static int slab_hugepages(void)
{
	const char *off = getenv("LARDER_SLAB_HUGEPAGE");
	return !(off && strcmp(off, "0") == 0);
}

void *larder__pages_map_slab(size_t bytes)
{
	LARDER__ASSERT(bytes <= CHUNK_BYTES && (bytes & (bytes - 1)) == 0);
	if (!slab_hugepages())
		return larder__pages_map(bytes, bytes);
	if (bytes == CHUNK_BYTES) {
		void *p = larder__pages_map(bytes, bytes);
		if (p)
			(void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint; refusal is fine */
		return p;
	}
	if (fault_injected() || larder__alloc_fault())
		return NULL;
	pthread_mutex_lock(&chunk_lock);
	uintptr_t top = (uintptr_t)chunk_top & ~(uintptr_t)(bytes - 1);
	if (!chunk_lo || top < (uintptr_t)chunk_lo + bytes) {
		unsigned char *c = map_aligned(CHUNK_BYTES, CHUNK_BYTES);
		if (!c) {
			pthread_mutex_unlock(&chunk_lock);
			return NULL;
		}
		(void)madvise(c, CHUNK_BYTES, MADV_HUGEPAGE); /* a hint; refusal is fine */
		if (chunk_lo && chunk_top > chunk_lo)
			munmap(chunk_lo, (size_t)(chunk_top - chunk_lo)); /* too small a rest */
		chunk_lo = c;
		chunk_top = c + CHUNK_BYTES;
		top = (uintptr_t)chunk_top;
	}
	if ((unsigned char *)top != chunk_top)
		munmap((void *)top, (size_t)(chunk_top - (unsigned char *)top)); /* alignment gap */
	unsigned char *p = (unsigned char *)top - bytes;
	chunk_top = p;
	pthread_mutex_unlock(&chunk_lock);
	return mapped(p, bytes);
}

void larder__pages_unmap(void *p, size_t bytes)
{
	if (!p)
		return;
	munmap(p, bytes);
	atomic_fetch_sub_explicit(&mapped_bytes, bytes, LARDER__RELAXED); /* a statistic */
}

void larder__pages_release(void *p, size_t bytes)
{
	/* A hint: if the kernel refuses, the memory stays resident, as before. */
	(void)madvise(p, bytes, MADV_DONTNEED);
}
