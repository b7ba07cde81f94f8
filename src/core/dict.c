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
#include "core/compress.h"

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

static void dict_free(struct larder__dict *d)
{
	if (d) { /* static objects: their blocks are all there is to free */
		free(d->cmem);
		free(d->dmem);
		free(d);
	}
}

/* Prepares zstd's tables for dict (len bytes, copied) into *out.
 * LARDER_OK, LARDER_ENOMEM, or LARDER_EINVAL (bytes that carry a zstd
 * dictionary's magic number but do not parse as one). */
static int prepare(const void *dict, size_t len, struct larder__dict **out)
{
	/* Tables sized for values of a few KiB, not for zstd's unknown-size
	 * default (about 1 MiB at level 3). Each set of tables lives in one
	 * block of ours (zstd's "static" objects): one allocation each through
	 * the fault seam, and no allocation inside libzstd, whose 1.5.4 does
	 * not survive a failed one while it builds a CDict. The CDict's block
	 * is zeroed: libzstd leaves part of its match tables as it finds them
	 * (a tag's stale value is a hint, each match is checked), and its
	 * compression read those bytes, uninitialised in a malloc'd block
	 * (valgrind: thousands of reports from ZSTD_compress2, every value
	 * written with the dictionary). Zeroed once here, as zstd's later
	 * versions do for their own tables, every read is of defined bytes. */
	ZSTD_compressionParameters cp = ZSTD_getCParams(LARDER__DICT_LEVEL, 4096, len);
	size_t csize = ZSTD_estimateCDictSize_advanced(len, cp, ZSTD_dlm_byCopy);
	size_t dsize = ZSTD_estimateDDictSize(len, ZSTD_dlm_byCopy);
	struct larder__dict *d = larder__calloc(1, sizeof(*d));
	if (!d)
		return LARDER_ENOMEM;
	d->cmem = larder__calloc(1, csize);
	d->dmem = larder__malloc(dsize);
	if (!d->cmem || !d->dmem) {
		dict_free(d);
		return LARDER_ENOMEM;
	}
	d->cdict = ZSTD_initStaticCDict(d->cmem, csize, dict, len, ZSTD_dlm_byCopy, ZSTD_dct_auto,
					cp);
	d->ddict = ZSTD_initStaticDDict(d->dmem, dsize, dict, len, ZSTD_dlm_byCopy, ZSTD_dct_auto);
	if (!d->cdict || !d->ddict) {
		dict_free(d);
		return LARDER_EINVAL;
	}
	d->bytes = sizeof(*d) + csize + dsize;
	d->strategy = (int)cp.strategy;
	*out = d;
	return LARDER_OK;
}

static void publish(struct larder *c, struct larder__dict *d)
{
	/* R-DICT: release, pairs with A-DICT in larder__dict_get(): the tables
	 * are written before any thread can load the pointer. */
	atomic_store_explicit(&c->dict, (uintptr_t)d, LARDER__RELEASE);
}

int larder__dict_open(struct larder *c, const struct larder_config *cfg)
{
	c->sample_phase = SAMPLE_NONE;
	/* Not shared yet: relaxed. A cache that does not train keeps its sample
	 * closed from the start, so no writer ever copies (DICT-D3). */
	atomic_store_explicit(&c->sample_word, SAMPLE_CLOSED, LARDER__RELAXED);
	if (!cfg->compress_min)
		return LARDER_OK;
	if (cfg->dict_mode == LARDER_DICTIONARY_GIVEN) {
		struct larder__dict *d;
		int rc = prepare(cfg->dict, cfg->dict_len, &d);
		if (rc == LARDER_OK)
			publish(c, d);
		return rc;
	}
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
	dict_free(d);
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

/*
 * Whether d earns its keep: the sample's pieces, each compressed with it as
 * a writer would store it (raw when the cache's saving rule refuses), take
 * no more than the rule allows of the whole. Incompressible values make a
 * dictionary ZDICT accepts but that saves nothing; publishing it would only
 * turn each write's failed LZ4 attempt into a dearer failed zstd one.
 */
static int worth_keeping(const struct larder *c, const struct larder__dict *d)
{
	unsigned char *out = larder__malloc(LARDER__DICT_PIECE_BYTES);
	if (!out)
		return 0;
	uint64_t plain = 0, stored = 0;
	const unsigned char *piece = c->sample_buf;
	for (uint64_t i = 0; i < WORD_COUNT(c->sample_taken); i++) {
		size_t len = c->sample_sizes[i], room = larder__pack_room(c, len);
		size_t got = room ? larder__pack_with(d, piece, len, out, room) : 0;
		plain += len;
		stored += got ? got : len;
		piece += len;
	}
	free(out);
	return stored < plain && stored * 100 <= plain * (100 - c->compress_saving_pct);
}

/* Trains on the closed sample's pieces and publishes what earns its keep;
 * otherwise the cache stays without a dictionary (core/dict.h). */
static void train(struct larder *c)
{
	unsigned char *bytes = larder__malloc(LARDER__DICT_BYTES);
	if (!bytes)
		return;
	size_t len = ZDICT_trainFromBuffer(bytes, LARDER__DICT_BYTES, c->sample_buf,
					   c->sample_sizes, (unsigned)WORD_COUNT(c->sample_taken));
	struct larder__dict *d = NULL;
	if (!ZDICT_isError(len) && prepare(bytes, len, &d) == LARDER_OK) {
		if (worth_keeping(c, d))
			publish(c, d);
		else
			dict_free(d);
	}
	free(bytes);
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
