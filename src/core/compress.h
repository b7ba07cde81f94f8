/*
 * core/compress.h - compression of stored values (larder_config_set_compression):
 * LZ4 alone, or zstd against the cache's dictionary (core/dict.h).
 *
 * A value of at least the cache's compress_min bytes is compressed once, by
 * its writer, before the entry is sized: the entry then charges its stored
 * (compressed) bytes, so the memory bound counts what is really held. The
 * stored form of a compressed value (LARDER__ENTRY_COMPRESSED, core/entry.h):
 *
 *     length word   4 bytes, little-endian: bits 0..30 the original length
 *                   (what every read reports; at most LARDER_VALUE_LIMIT,
 *                   2^30), bit 31 set when the block is zstd's
 *     block         the rest of e->value_len: an LZ4 block, or a zstd frame
 *                   against the cache's dictionary, without magic number,
 *                   content size, dictionary id or checksum
 *
 * A cache compresses with LZ4 until it has a dictionary, with zstd from then
 * on; both kinds coexist (DICT-D2 in core/dict.h says why a zstd entry always
 * finds the dictionary).
 *
 * e->value_len stays the stored length, so every slot computation
 * (larder__entry_size, the slab's charge, the maintainer's frees) is the
 * same code for both forms.
 *
 * Invariants (tests/unit/test_compress.c checks them):
 *   COMPRESS-C1. An entry is compressed only when its stored form (header and block)
 *       is at most (100 - min_saving_percent)% of the value's length and
 *       strictly shorter than it; otherwise it is stored raw, byte for byte.
 *   COMPRESS-C2. The stored original length is the value's length, and the block
 *       decompresses to exactly that many bytes (entries are immutable, ENTRY-E1).
 *   COMPRESS-C3. A read never hands out the stored form of a compressed entry: it
 *       decompresses into the caller's buffer (larder_get) or into a
 *       per-thread scratch buffer (core/thread.h) for callbacks.
 */
#ifndef LARDER_CORE_COMPRESS_H
#define LARDER_CORE_COMPRESS_H

#include <stddef.h>
#include <stdint.h>

#include "core/entry.h"

struct larder;

struct larder__thread;

#define LARDER__PACKED_HEADER_BYTES 4u
#define LARDER__PACKED_ZSTD 0x80000000u /* the length word's codec bit */

static inline uint32_t larder__packed_word(const unsigned char *stored)
{
	return (uint32_t)stored[0] | (uint32_t)stored[1] << 8 | (uint32_t)stored[2] << 16 |
	       (uint32_t)stored[3] << 24;
}

/* COMPRESS-C2: the original length of a compressed entry's value. */
static inline size_t larder__packed_len(const unsigned char *stored)
{
	return larder__packed_word(stored) & ~LARDER__PACKED_ZSTD;
}

/* The value length a read reports for e, whose flags are f. */
static inline size_t larder__entry_plain_len(struct larder__entry *e, unsigned f)
{
	return (f & LARDER__ENTRY_COMPRESSED) ? larder__packed_len(larder__entry_value(e))
					      : e->value_len;
}

/* The most stored bytes COMPRESS-C1 accepts for a value of len bytes (0: none). */
size_t larder__pack_room(const struct larder *c, size_t len);

/*
 * Compresses value (len bytes, at least compress_min) into out, which has
 * room bytes (larder__pack_room): with zstd when c has a dictionary, else
 * with LZ4 after offering the value to the dictionary's sample. Returns the
 * stored length (COMPRESS-C1 met), or 0 when the value must be stored raw
 * (too little saving, or no memory for the thread's codec state).
 */
size_t larder__pack(struct larder *c, const void *value, size_t len, unsigned char *out,
		    size_t room);

/* larder__pack() with zstd against d, published or not (core/dict.c tries
 * a new dictionary on its sample with it). */
struct larder__dict;
size_t larder__pack_with(const struct larder__dict *d, const void *value, size_t len,
			 unsigned char *out, size_t room);

/* Decompresses a compressed entry's stored bytes (stored_len of them) into
 * out, which holds larder__packed_len(stored) bytes (COMPRESS-C2). 0, or -1
 * when the thread's zstd context could not be allocated (LARDER_ENOMEM). */
int larder__unpack(const struct larder *c, const unsigned char *stored, size_t stored_len,
		   void *out);

/* Frees a thread's codec state (THREAD-T3), at its exit. */
void larder__codec_thread_free(struct larder__thread *t);

/*
 * The value of the live entry e (flags f) as plain bytes: its stored bytes
 * when raw; else decompressed into a scratch buffer of the calling thread,
 * which *scratch receives and the caller hands back with
 * larder__scratch_give() once the bytes are used. NULL when that buffer
 * (or the thread's zstd context) could not be allocated (LARDER_ENOMEM).
 * e must stay valid meanwhile: a reader's read section, or the
 * maintainer's hold on an entry it unlinked.
 */
const unsigned char *larder__entry_plain_rcu(const struct larder *c, struct larder__entry *e,
					     unsigned f, unsigned char **scratch);

/* Whether e's value (flags f) equals v, len bytes: the lengths first, then
 * the bytes, decompressed into a scratch buffer when compressed. -1 when
 * that buffer could not be allocated. */
int larder__entry_value_equals(const struct larder *c, struct larder__entry *e, unsigned f,
			       const void *v, size_t len);

#endif /* LARDER_CORE_COMPRESS_H */
