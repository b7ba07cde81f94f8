/*
 * core/alloc.h - the engine's heap allocations, through one door.
 *
 * Every malloc-family call of the engine goes through these wrappers, and
 * every page mapping (mem/pages.c) and id-directory growth (mem/pagedir.c)
 * asks larder__alloc_fault() first, so that a test can make the N-th
 * allocation of any kind fail (larder__test_fail_alloc_after() in
 * core/testing.h) and check that each site returns its documented error,
 * keeps the cache usable and leaks nothing. Unarmed, the seam costs one
 * relaxed load and a branch per allocation; no allocation is on a read path.
 * Memory from these wrappers is released with free().
 */
#ifndef LARDER_CORE_ALLOC_H
#define LARDER_CORE_ALLOC_H

#include <stddef.h>

/* True when the fault seam says this allocation must fail. */
int larder__alloc_fault(void);

void *larder__malloc(size_t bytes);
void *larder__calloc(size_t n, size_t size);
/* align is a power of two; bytes is rounded up to a multiple of it. */
void *larder__aligned_alloc(size_t align, size_t bytes);
/* On failure p is left as it was. */
void *larder__realloc(void *p, size_t bytes);
/* larder__malloc and free in the (opaque, ...) shape a library's custom
 * allocator takes (zstd's ZSTD_customMem, core/compress.c and core/dict.c). */
void *larder__malloc_cb(void *opaque, size_t bytes);
void larder__free_cb(void *opaque, void *p);

#endif /* LARDER_CORE_ALLOC_H */
