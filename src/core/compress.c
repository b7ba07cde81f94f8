/*
 * core/compress.c - LZ4 compression of stored values. Design: core/compress.h.
 *
 * The codec is liblz4's block format at its default (fastest) level: a
 * cache trades a little CPU on writes and on reads of compressed values for
 * memory, and the read side must stay within a few times a memcpy. The
 * writer compresses into a destination only as large as COMPRESS-C1 allows
 * (larder__pack_room), so LZ4 gives up as soon as the output would be too
 * long: an incompressible value costs about one pass over the part of it
 * that fits, and is then stored raw.
 */
#include "core/compress.h"

#include <lz4.h>
#include <string.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "core/cache.h"
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
 * The calling thread's compression state (THREAD-T3 in core/thread.h), NULL when
 * it cannot be allocated. LZ4_compress_default() would clear a 16 KiB
 * state on every call, which costs more than compressing a 200-byte value;
 * a kept state is reset with LZ4_resetStream_fast(), and the first block of
 * a fresh stream depends on nothing, so it decodes with
 * LZ4_decompress_safe() like any block.
 */
static LZ4_stream_t *thread_stream(void)
{
	struct larder__thread *t = larder__thread_self();
	if (!t)
		return NULL;
	if (!t->pack_stream) {
		void *s = larder__malloc(sizeof(LZ4_stream_t));
		if (!s)
			return NULL;
		t->pack_stream = LZ4_initStream(s, sizeof(LZ4_stream_t));
	}
	return t->pack_stream;
}

size_t larder__pack(const void *value, size_t len, unsigned char *out, size_t room)
{
	LZ4_stream_t *stream = thread_stream();
	if (!stream)
		return 0; /* stored raw */
	LZ4_resetStream_fast(stream);
	/* len <= LARDER_VALUE_LIMIT (2^30) < LZ4_MAX_INPUT_SIZE: an int holds it. */
	int n = LZ4_compress_fast_continue(stream, value, (char *)out + LARDER__PACKED_HEADER_BYTES,
					   (int)len, (int)(room - LARDER__PACKED_HEADER_BYTES), 1);
	if (n <= 0)
		return 0; /* it would not fit in room: stored raw (COMPRESS-C1) */
	out[0] = (unsigned char)len;
	out[1] = (unsigned char)(len >> 8);
	out[2] = (unsigned char)(len >> 16);
	out[3] = (unsigned char)(len >> 24);
	return LARDER__PACKED_HEADER_BYTES + (size_t)n;
}

void larder__unpack(const unsigned char *stored, size_t stored_len, void *out)
{
	size_t len = larder__packed_len(stored);
	int n = LZ4_decompress_safe((const char *)stored + LARDER__PACKED_HEADER_BYTES, out,
				    (int)(stored_len - LARDER__PACKED_HEADER_BYTES), (int)len);
	/* COMPRESS-C2: the writer checked the block; only a corrupted slot fails here. */
	LARDER__ASSERT(n >= 0 && (size_t)n == len);
}

const unsigned char *larder__entry_plain_rcu(struct larder__entry *e, unsigned f,
					     unsigned char **scratch)
{
	*scratch = NULL;
	const unsigned char *stored = larder__entry_value(e);
	if (!(f & LARDER__ENTRY_COMPRESSED))
		return stored;
	unsigned char *buf = larder__scratch_take(larder__packed_len(stored));
	if (!buf)
		return NULL;
	larder__unpack(stored, e->value_len, buf);
	*scratch = buf;
	return buf;
}

int larder__entry_value_equals(struct larder__entry *e, unsigned f, const void *v, size_t len)
{
	if (larder__entry_plain_len(e, f) != len)
		return 0;
	if (len == 0)
		return 1;
	unsigned char *scratch;
	const unsigned char *plain = larder__entry_plain_rcu(e, f, &scratch);
	if (!plain)
		return -1;
	int equal = memcmp(plain, v, len) == 0;
	larder__scratch_give(scratch);
	return equal;
}
