/*
 * core/alloc.c - heap allocation wrappers and the allocation fault seam.
 * Design: core/alloc.h.
 *
 * The countdown is process-wide: every thread's allocations (callers', the
 * maintainers', the returner threads') consume it, in whatever order they
 * happen. A test that wants a repeatable N quiesces the maintainer around
 * the operations it counts.
 */
#include "core/alloc.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/testing.h"
#include "sync/atomic.h"

/* -1: unarmed; N >= 0: allocations to let through before one fails. Relaxed:
 * tests arm it between calls, and the CAS below serialises the countdown. */
static _Atomic long countdown = -1;

long larder__test_fail_alloc_after(long n)
{
	return atomic_exchange_explicit(&countdown, n, LARDER__RELAXED); /* see countdown */
}

int larder__alloc_fault(void)
{
	long n = atomic_load_explicit(&countdown, LARDER__RELAXED); /* see countdown */
	while (n >= 0) {
		/* Relaxed: only the count matters (see countdown). The failing
		 * allocation disarms the seam: one fault per arming. */
		if (atomic_compare_exchange_weak_explicit(&countdown, &n, n - 1, LARDER__RELAXED,
							  LARDER__RELAXED))
			return n == 0;
	}
	return 0;
}

void *larder__malloc(size_t bytes)
{
	return larder__alloc_fault() ? NULL : malloc(bytes);
}

void *larder__calloc(size_t n, size_t size)
{
	return larder__alloc_fault() ? NULL : calloc(n, size);
}

void *larder__aligned_alloc(size_t align, size_t bytes)
{
	if (larder__alloc_fault())
		return NULL;
	return aligned_alloc(align, (bytes + align - 1) & ~(align - 1));
}

void *larder__realloc(void *p, size_t bytes)
{
	return larder__alloc_fault() ? NULL : realloc(p, bytes);
}

void *larder__malloc_cb(void *opaque, size_t bytes)
{
	(void)opaque;
	return larder__malloc(bytes);
}

void larder__free_cb(void *opaque, void *p)
{
	(void)opaque;
	free(p);
}
