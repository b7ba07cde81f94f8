/*
 * mem/pages.h - memory straight from the kernel, counted.
 *
 * Every byte larder holds (slab pages, large entries, index tables) comes
 * from larder__pages_map() and goes back through larder__pages_unmap(), so a
 * process-wide counter of mapped bytes proves that close leaks nothing.
 * The test seam larder__test_fail_mmap_after() makes a chosen mapping fail.
 */
#ifndef LARDER_MEM_PAGES_H
#define LARDER_MEM_PAGES_H

#include <stddef.h>

#define LARDER__OS_PAGE 4096u

/* Maps bytes (a multiple of 4096) aligned to align (a power of two >= 4096),
 * zero-filled. NULL when the kernel refuses or a fault is injected. */
void *larder__pages_map(size_t bytes, size_t align);
/* The same for a slab page (a power of two from 64 KiB to 2 MiB, aligned to
 * its size), carved from a chunk in transparent huge pages (pages.c). */
void *larder__pages_map_slab(size_t bytes);
void larder__pages_unmap(void *p, size_t bytes);
/* Gives the memory of whole OS pages inside a mapping back to the kernel;
 * they stay mapped and read as zero bytes when touched again. */
void larder__pages_release(void *p, size_t bytes);

static inline size_t larder__pages_round(size_t bytes)
{
	return (bytes + LARDER__OS_PAGE - 1) & ~(size_t)(LARDER__OS_PAGE - 1);
}

#endif /* LARDER_MEM_PAGES_H */
