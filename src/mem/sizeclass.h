/*
 * mem/sizeclass.h - slot sizes and the page size that holds each.
 *
 * Classes: every multiple of 8 bytes from 32 to 256 (an entry of a 16-byte
 * key and a 64-byte value, 96 bytes with its header, wastes nothing), then
 * four classes per power of two up to 256 KiB (at most 25% rounding). Each
 * class lives in pages of the smallest power of two that holds about eight
 * slots, between 64 KiB and 2 MiB. Entries above LARDER__SLAB_MAX_SLOT get a
 * private mapping rounded to 4 KiB.
 */
#ifndef LARDER_MEM_SIZECLASS_H
#define LARDER_MEM_SIZECLASS_H

#include <stddef.h>

#define LARDER__SLAB_MIN_SLOT 32u
#define LARDER__SLAB_MAX_SLOT (256u * 1024u)
#define LARDER__SIZECLASS_COUNT 69u
#define LARDER__PAGE_MIN (64u * 1024u)
#define LARDER__PAGE_MAX (2u * 1024u * 1024u)

static inline unsigned larder__sizeclass_of(size_t bytes)
{
	if (bytes <= 256) {
		if (bytes < LARDER__SLAB_MIN_SLOT)
			bytes = LARDER__SLAB_MIN_SLOT;
		return (unsigned)((bytes + 7) / 8 - 4);
	}
	unsigned k = 63u - (unsigned)__builtin_clzll((unsigned long long)(bytes - 1));
	size_t step = (size_t)1 << (k - 2);
	unsigned j = (unsigned)((bytes - ((size_t)1 << k) + step - 1) / step);
	return 29u + (k - 8u) * 4u + (j - 1u);
}

static inline size_t larder__sizeclass_slot(unsigned c)
{
	if (c < 29)
		return LARDER__SLAB_MIN_SLOT + 8u * c;
	unsigned i = c - 29, k = 8 + i / 4, j = i % 4 + 1;
	return ((size_t)1 << k) + j * ((size_t)1 << (k - 2));
}

static inline size_t larder__sizeclass_page(unsigned c)
{
	size_t want = 8 * larder__sizeclass_slot(c), page = LARDER__PAGE_MIN;
	while (page < want && page < LARDER__PAGE_MAX)
		page <<= 1;
	return page;
}

#endif /* LARDER_MEM_SIZECLASS_H */
