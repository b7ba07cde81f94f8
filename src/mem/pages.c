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
 * The audit counter is touched only here, on the rare map/unmap path, never
 * per operation.
 */
#define _GNU_SOURCE
#include "mem/pages.h"

#include <stdint.h>
#include <sys/mman.h>

#include "core/alloc.h"
#include "core/testing.h"
#include "sync/atomic.h"

static larder__atomic_u64 mapped_bytes;      /* audit; relaxed: a statistic */
static larder__atomic_uptr last_map; /* start of the last mapping: a hint; relaxed */
static _Atomic long fail_countdown = -1;    /* test seam; relaxed: tests set it between calls */

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

/* Counts a new mapping and remembers where it starts (the next hint). */
static void *mapped(unsigned char *p, size_t bytes)
{
	atomic_store_explicit(&last_map, (uintptr_t)p, LARDER__RELAXED); /* a hint */
	atomic_fetch_add_explicit(&mapped_bytes, bytes, LARDER__RELAXED); /* a statistic */
	return p;
}

void *larder__pages_map(size_t bytes, size_t align)
{
	if (fault_injected() || larder__alloc_fault())
		return NULL;
	uintptr_t below = atomic_load_explicit(&last_map, LARDER__RELAXED); /* a hint */
	if (below > bytes + align) {
		void *want = (void *)((below - bytes) & ~(uintptr_t)(align - 1));
		unsigned char *p = mmap(want, bytes, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p != MAP_FAILED && ((uintptr_t)p & (align - 1)) == 0)
			return mapped(p, bytes);
		if (p != MAP_FAILED)
			munmap(p, bytes);
	}
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
