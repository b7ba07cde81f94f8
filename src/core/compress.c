/*
 * core/compress.c - compression of stored values: LZ4 alone, or zstd
 * against the cache's dictionary. Design: core/compress.h; the dictionary:
 * core/dict.h.
 *
 * LZ4 is liblz4's block format at its default (fastest) level; zstd runs at
 * LARDER__DICT_LEVEL against the dictionary's prepared tables, in frames
 * stripped of what the length word already says. Either writes into a
 * destination only as large as COMPRESS-C1 allows (larder__pack_room), so
 * it gives up once the output would be too long: an incompressible value
 * costs about one pass over it, and is then stored raw.
 *
 * Each thread keeps its codec state (THREAD-T3): an LZ4 stream and zstd's
 * compression and decompression contexts, each allocated on first use
 * through the engine's allocation door and freed at the thread's exit.
 */
#include "core/compress.h"

#include <lz4.h>
#include <stdlib.h>
#include <string.h>

#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_c_format, ZSTD_customMem */
#include <zstd.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/cache.h"
#include "core/dict.h"
#include "core/thread.h"

size_t larder__pack_room(const struct larder *c, size_t len)
{
	/* COMPRESS-C1: at most (100 - pct)% of len, and strictly less than len. */
	size_t keep = (size_t)((uint64_t)len * (100u - c->compress_saving_pct) / 100u);
	if (keep >= len)
		keep = len - 1;
	return keep > LARDER__PACKED_HEADER_BYTES ? keep : 0;
}

/*
 * The calling thread's LZ4 state, NULL when it cannot be allocated.
 * LZ4_compress_default() would clear a 16 KiB state on every call, which
 * costs more than compressing a 200-byte value; a kept state is reset with
 * LZ4_resetStream_fast(), and the first block of a fresh stream depends on
 * nothing, so it decodes with LZ4_decompress_safe() like any block.
 */
static LZ4_stream_t *thread_stream(struct larder__thread *t)
{
	if (!t->pack_stream) {
		void *s = larder__malloc(sizeof(LZ4_stream_t));
		if (!s)
			return NULL;
		t->pack_stream = LZ4_initStream(s, sizeof(LZ4_stream_t));
	}
	return t->pack_stream;
}

static const ZSTD_customMem zstd_mem = { larder__malloc_cb, larder__free_cb, NULL };

/* The calling thread's zstd compression context, set once for frames with
 * nothing but the blocks (the length word says the rest). */
static ZSTD_CCtx *thread_cctx(struct larder__thread *t)
{
	if (!t->zstd_cctx) {
		ZSTD_CCtx *z = ZSTD_createCCtx_advanced(zstd_mem);
		if (!z)
			return NULL;
		if (ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_format, ZSTD_f_zstd1_magicless)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_contentSizeFlag, 0)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 0)) ||
		    ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_dictIDFlag, 0))) {
			ZSTD_freeCCtx(z);
			return NULL;
		}
		t->zstd_cctx = z;
	}
	return t->zstd_cctx;
}

static ZSTD_DCtx *thread_dctx(struct larder__thread *t)
{
	if (!t->zstd_dctx) {
		ZSTD_DCtx *z = ZSTD_createDCtx_advanced(zstd_mem);
		if (!z)
			return NULL;
		if (ZSTD_isError(ZSTD_DCtx_setParameter(z, ZSTD_d_format, ZSTD_f_zstd1_magicless))) {
			ZSTD_freeDCtx(z);
			return NULL;
		}
		t->zstd_dctx = z;
	}
	return t->zstd_dctx;
}

void larder__codec_thread_free(struct larder__thread *t)
{
	free(t->pack_stream);
	ZSTD_freeCCtx(t->zstd_cctx);
	ZSTD_freeDCtx(t->zstd_dctx);
}

static void put_word(unsigned char *out, uint32_t w)
{
	out[0] = (unsigned char)w;
	out[1] = (unsigned char)(w >> 8);
	out[2] = (unsigned char)(w >> 16);
	out[3] = (unsigned char)(w >> 24);
}

static size_t pack_zstd(struct larder__thread *t, const struct larder__dict *d,
			const void *value, size_t len, unsigned char *out, size_t room)
{
	ZSTD_CCtx *z = thread_cctx(t);
	/* The strategy pinned to the one the tables were prepared for: a
	 * static CDict has no compression level, and for a value of 128 KiB or
	 * more zstd 1.5.4 then picks a far slower strategy of its own (300 KiB:
	 * about 100 ms instead of 1-2; docs/compression.md). */
	if (!z || ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_strategy, d->strategy)) ||
	    ZSTD_isError(ZSTD_CCtx_refCDict(z, d->cdict)))
		return 0; /* stored raw */
	size_t n = ZSTD_compress2(z, out + LARDER__PACKED_HEADER_BYTES,
				  room - LARDER__PACKED_HEADER_BYTES, value, len);
	/* A failed frame leaves the context mid-stream, where it would refuse
	 * the next dictionary; resetting the session (not the parameters)
	 * also drops its reference to this cache's tables. */
	(void)ZSTD_CCtx_reset(z, ZSTD_reset_session_only);
	(void)ZSTD_CCtx_refCDict(z, NULL);
	if (ZSTD_isError(n))
		return 0; /* it would not fit in room: stored raw (COMPRESS-C1) */
	put_word(out, (uint32_t)len | LARDER__PACKED_ZSTD);
	return LARDER__PACKED_HEADER_BYTES + n;
}

size_t larder__pack_with(const struct larder__dict *d, const void *value, size_t len,
			 unsigned char *out, size_t room)
{
	struct larder__thread *t = larder__thread_self();
	return t ? pack_zstd(t, d, value, len, out, room) : 0;
}

size_t larder__pack(struct larder *c, const void *value, size_t len, unsigned char *out,
		    size_t room)
{
	struct larder__thread *t = larder__thread_self();
	if (!t)
		return 0; /* stored raw */
	const struct larder__dict *d = larder__dict_get(c);
	if (d)
		return pack_zstd(t, d, value, len, out, room);
	larder__dict_offer(c, value, len);
	LZ4_stream_t *stream = thread_stream(t);
	if (!stream)
		return 0; /* stored raw */
	LZ4_resetStream_fast(stream);
	/* len <= LARDER_VALUE_LIMIT (2^30) < LZ4_MAX_INPUT_SIZE: an int holds it. */
	int n = LZ4_compress_fast_continue(stream, value, (char *)out + LARDER__PACKED_HEADER_BYTES,
					   (int)len, (int)(room - LARDER__PACKED_HEADER_BYTES), 1);
	if (n <= 0)
		return 0; /* it would not fit in room: stored raw (COMPRESS-C1) */
	put_word(out, (uint32_t)len);
	return LARDER__PACKED_HEADER_BYTES + (size_t)n;
}

int larder__unpack(const struct larder *c, const unsigned char *stored, size_t stored_len,
		   void *out)
{
	size_t len = larder__packed_len(stored);
	const unsigned char *block = stored + LARDER__PACKED_HEADER_BYTES;
	size_t block_len = stored_len - LARDER__PACKED_HEADER_BYTES;
	if (!(larder__packed_word(stored) & LARDER__PACKED_ZSTD)) {
		int n = LZ4_decompress_safe((const char *)block, out, (int)block_len, (int)len);
		/* COMPRESS-C2: the writer checked the block; only a corrupted slot fails. */
		LARDER__ASSERT(n >= 0 && (size_t)n == len);
		(void)n;
		return 0;
	}
	struct larder__thread *t = larder__thread_self();
	ZSTD_DCtx *z = t ? thread_dctx(t) : NULL;
	if (!z)
		return -1;
	const struct larder__dict *d = larder__dict_get(c);
	LARDER__ASSERT(d != NULL); /* DICT-D2 */
	size_t n = ZSTD_decompress_usingDDict(z, out, len, block, block_len, d->ddict);
	LARDER__ASSERT(!ZSTD_isError(n) && n == len); /* COMPRESS-C2 */
	(void)n;
	return 0;
}

const unsigned char *larder__entry_plain_rcu(const struct larder *c, struct larder__entry *e,
					     unsigned f, unsigned char **scratch)
{
	*scratch = NULL;
	const unsigned char *stored = larder__entry_value(e);
	if (!(f & LARDER__ENTRY_COMPRESSED))
		return stored;
	unsigned char *buf = larder__scratch_take(larder__packed_len(stored));
	if (!buf)
		return NULL;
	if (larder__unpack(c, stored, e->value_len, buf) != 0) {
		larder__scratch_give(buf);
		return NULL;
	}
	*scratch = buf;
	return buf;
}

int larder__entry_value_equals(const struct larder *c, struct larder__entry *e, unsigned f,
			       const void *v, size_t len)
{
	if (larder__entry_plain_len(e, f) != len)
		return 0;
	if (len == 0)
		return 1;
	unsigned char *scratch;
	const unsigned char *plain = larder__entry_plain_rcu(c, e, f, &scratch);
	if (!plain)
		return -1;
	int equal = memcmp(plain, v, len) == 0;
	larder__scratch_give(scratch);
	return equal;
}
