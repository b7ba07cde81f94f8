/*
 * core/dict.c - the compression dictionary's sample, training and
 * publication. Design and invariants: core/dict.h.
 *
 * The dictionary's tables live in blocks from the engine's allocation door
 * (core/alloc.h), so the fault seam reaches them.
 */
#include "core/dict.h"

#include <stdlib.h>
#include <string.h>

#define ZSTD_STATIC_LINKING_ONLY /* static CDict and DDict in our own blocks */
#include <zdict.h>
#include <zstd.h>

#include "core/alloc.h"
#include "core/cache.h"

/* sample_word: pieces in the high half, bytes in the low half; all ones
 * once the maintainer closed it (DICT-D3). */
#define SAMPLE_CLOSED UINT64_MAX
#define WORD_COUNT(w) ((w) >> 32)
#define WORD_BYTES(w) ((w) & 0xffffffffu)

enum { SAMPLE_NONE = 0, SAMPLE_OPEN, SAMPLE_CLOSING };

const struct larder__dict *larder__dict_get(const struct larder *c)
{
	/* A-DICT: acquire, pairs with R-DICT in publish(). */
	return (const struct larder__dict *)atomic_load_explicit(&c->dict, LARDER__ACQUIRE);
}

/* Prepares zstd's tables for dict (len bytes, copied) and publishes them
 * (DICT-D1). LARDER_OK, LARDER_ENOMEM, or LARDER_EINVAL (bytes that carry a
 * zstd dictionary's magic number but do not parse as one). */
static int publish(struct larder *c, const void *dict, size_t len)
{
	/* Tables sized for values of a few KiB, not for zstd's unknown-size
	 * default (about 1 MiB at level 3). Each set of tables lives in one
	 * block of ours (zstd's "static" objects): one allocation each through
	 * the fault seam, and no allocation inside libzstd, whose 1.5.4 does
	 * not survive a failed one while it builds a CDict. */
	ZSTD_compressionParameters cp = ZSTD_getCParams(LARDER__DICT_LEVEL, 4096, len);
	size_t csize = ZSTD_estimateCDictSize_advanced(len, cp, ZSTD_dlm_byCopy);
	size_t dsize = ZSTD_estimateDDictSize(len, ZSTD_dlm_byCopy);
	struct larder__dict *d = larder__malloc(sizeof(*d));
	void *cmem = larder__malloc(csize), *dmem = larder__malloc(dsize);
	if (!d || !cmem || !dmem) {
		free(d);
		free(cmem);
		free(dmem);
		return LARDER_ENOMEM;
	}
	d->cdict = (void *)ZSTD_initStaticCDict(cmem, csize, dict, len, ZSTD_dlm_byCopy,
						 ZSTD_dct_auto, cp);
	d->ddict = (void *)ZSTD_initStaticDDict(dmem, dsize, dict, len, ZSTD_dlm_byCopy,
						 ZSTD_dct_auto);
	if (!d->cdict || !d->ddict) {
		free(d);
		free(cmem);
		free(dmem);
		return LARDER_EINVAL;
	}
	d->cmem = cmem;
	d->dmem = dmem;
	d->bytes = sizeof(*d) + csize + dsize;
	/* R-DICT: release, pairs with A-DICT in larder__dict_get(): the tables
	 * are written before any thread can load the pointer. */
	atomic_store_explicit(&c->dict, (uintptr_t)d, LARDER__RELEASE);
	return LARDER_OK;
}

int larder__dict_open(struct larder *c, const struct larder_config *cfg)
{
	c->sample_phase = SAMPLE_NONE;
	/* Not shared yet: relaxed. A cache that does not train keeps its sample
	 * closed from the start, so no writer ever copies (DICT-D3). */
	atomic_store_explicit(&c->sample_word, SAMPLE_CLOSED, LARDER__RELAXED);
	if (!cfg->compress_min)
		return LARDER_OK;
	if (cfg->dict_mode == LARDER_DICTIONARY_GIVEN)
		return publish(c, cfg->dict, cfg->dict_len);
	if (cfg->dict_mode != LARDER_DICTIONARY_TRAIN)
		return LARDER_OK;
	c->sample_buf = larder__malloc(LARDER__DICT_SAMPLE_BYTES);
	c->sample_sizes = larder__malloc(LARDER__DICT_SAMPLE_COUNT * sizeof(size_t));
	if (!c->sample_buf || !c->sample_sizes) {
		free(c->sample_buf);
		free(c->sample_sizes);
		c->sample_buf = NULL;
		c->sample_sizes = NULL;
		return LARDER_ENOMEM;
	}
	atomic_store_explicit(&c->sample_word, 0, LARDER__RELAXED); /* not shared yet */
	c->sample_phase = SAMPLE_OPEN;
	return LARDER_OK;
}

static void free_sample(struct larder *c)
{
	free(c->sample_buf);
	free(c->sample_sizes);
	c->sample_buf = NULL;
	c->sample_sizes = NULL;
	c->sample_phase = SAMPLE_NONE;
}

void larder__dict_close(struct larder *c)
{
	struct larder__dict *d =
		(struct larder__dict *)atomic_load_explicit(&c->dict, LARDER__RELAXED); /* alone */
	if (d) { /* static objects: their blocks are all there is to free */
		free(d->cmem);
		free(d->dmem);
		free(d);
	}
	free_sample(c);
}

void larder__dict_offer(struct larder *c, const void *value, size_t len)
{
	size_t piece = len < LARDER__DICT_PIECE_BYTES ? len : LARDER__DICT_PIECE_BYTES;
	/* Relaxed throughout the reservation: it only splits the buffer between
	 * writers (one modification order); what the maintainer reads is
	 * published by R-SAMPLE. */
	uint64_t w = atomic_load_explicit(&c->sample_word, LARDER__RELAXED);
	do {
		if (w == SAMPLE_CLOSED || WORD_COUNT(w) >= LARDER__DICT_SAMPLE_COUNT ||
		    WORD_BYTES(w) + piece > LARDER__DICT_SAMPLE_BYTES)
			return;
	} while (!atomic_compare_exchange_weak_explicit(&c->sample_word, &w,
							 w + ((uint64_t)1 << 32) + piece,
							 LARDER__RELAXED, LARDER__RELAXED));
	memcpy(c->sample_buf + WORD_BYTES(w), value, piece);
	c->sample_sizes[WORD_COUNT(w)] = piece;
	/* R-SAMPLE: release, pairs with A-SAMPLE in larder__dict_maint(): the
	 * copy is complete before it is counted. */
	atomic_fetch_add_explicit(&c->sample_done, 1, LARDER__RELEASE);
}

/* Trains on the closed sample's pieces and publishes; on any failure the
 * cache stays without a dictionary (core/dict.h). */
static void train(struct larder *c)
{
	unsigned char *dict = larder__malloc(LARDER__DICT_BYTES);
	if (!dict)
		return;
	size_t len = ZDICT_trainFromBuffer(dict, LARDER__DICT_BYTES, c->sample_buf,
					   c->sample_sizes, (unsigned)WORD_COUNT(c->sample_taken));
	if (!ZDICT_isError(len))
		(void)publish(c, dict, len); /* failing, the cache keeps LZ4 alone */
	free(dict);
}

uint64_t larder__dict_maint(struct larder *c)
{
	if (c->sample_phase == SAMPLE_OPEN) {
		/* Relaxed: a hint; the exchange below takes the real count. */
		uint64_t w = atomic_load_explicit(&c->sample_word, LARDER__RELAXED);
		if (WORD_BYTES(w) < LARDER__DICT_TRAIN_BYTES &&
		    WORD_COUNT(w) < LARDER__DICT_SAMPLE_COUNT)
			return 0;
		/* Relaxed: the same modification order as the writers' CASes; the
		 * copies are published by R-SAMPLE. */
		c->sample_taken = atomic_exchange_explicit(&c->sample_word, SAMPLE_CLOSED,
							   LARDER__RELAXED);
		c->sample_phase = SAMPLE_CLOSING;
	}
	if (c->sample_phase != SAMPLE_CLOSING)
		return 0;
	/* A-SAMPLE: acquire, pairs with R-SAMPLE in larder__dict_offer(). */
	if (atomic_load_explicit(&c->sample_done, LARDER__ACQUIRE) < WORD_COUNT(c->sample_taken))
		return 1; /* a copy in flight: look again next pass */
	train(c);
	free_sample(c);
	return 1;
}
