/*
 * core/dict.h - a compressing cache's dictionary: where it comes from, when
 * it is published, how long it lives (larder_config_set_compression_dictionary).
 *
 * Short values barely compress alone: a 500-byte JSON document names each
 * field once. Against a dictionary of what such values share (field names,
 * common words, punctuation), zstd stores them 2-3x smaller. A compressing
 * cache has at most one dictionary in its life:
 *   - given: the caller's bytes, prepared at open and published before
 *     larder_open returns;
 *   - trained (the default): writers copy their first compressible values
 *     into a bounded sample (at most LARDER__DICT_SAMPLE_BYTES in at most
 *     LARDER__DICT_SAMPLE_COUNT pieces, each at most a value's first
 *     LARDER__DICT_PIECE_BYTES); once it holds LARDER__DICT_TRAIN_BYTES or
 *     LARDER__DICT_SAMPLE_COUNT pieces, the maintainer closes it, waits for
 *     the copies in flight, trains a LARDER__DICT_BYTES dictionary with
 *     ZDICT (libzstd), prepares zstd's tables for it, and publishes it if
 *     it compresses the sample by the cache's saving rule; then it frees
 *     the sample. A training that fails (too few or too alike pieces, or a
 *     sample it cannot compress: incompressible values) leaves the cache on
 *     LZ4 alone, for good;
 *   - none: LZ4 alone.
 * Values written before the dictionary exists keep their LZ4 form until
 * they are rewritten; the stored form says which (core/compress.h).
 *
 * Invariants:
 *   DICT-D1. c->dict goes from 0 to a dictionary at most once (R-DICT) and
 *       keeps it until larder_close frees it, after the maintainer stopped,
 *       when no caller may run: whoever loaded it may use it for as long as
 *       it likes, with no grace period.
 *   DICT-D2. An entry stored with the dictionary was compressed by a writer
 *       that loaded c->dict (A-DICT) before it published the entry, so a
 *       reader that finds the entry finds c->dict set (it loads it with
 *       A-DICT too, which also makes the prepared tables visible to it).
 *   DICT-D3. The sample: a writer reserves a (count, bytes) range with one
 *       CAS on c->sample_word, copies into it, then counts the copy in
 *       c->sample_done (R-SAMPLE). The maintainer closes the sample by
 *       exchanging sample_word for a closed mark (a writer's CAS then fails
 *       and it copies nothing), and reads the buffer only once sample_done
 *       (A-SAMPLE) reaches the count it took: every byte it trains on was
 *       written before, and none is written after, so it may free it.
 */
#ifndef LARDER_CORE_DICT_H
#define LARDER_CORE_DICT_H

#include <stddef.h>
#include <stdint.h>

struct larder;
struct larder_config;

#define LARDER__DICT_BYTES ((size_t)16 << 10)
#define LARDER__DICT_SAMPLE_BYTES ((size_t)256 << 10)
#define LARDER__DICT_TRAIN_BYTES ((size_t)192 << 10)
#define LARDER__DICT_SAMPLE_COUNT 4096u
#define LARDER__DICT_PIECE_BYTES ((size_t)8 << 10)
/* zstd's level for values compressed with the dictionary (docs/compression.md
 * has the measurement that chose it). */
#define LARDER__DICT_LEVEL 3

/* A published dictionary: zstd's prepared compression and decompression
 * tables (opaque here: core/dict.c), and what they take in memory. */
struct larder__dict {
	const void *cdict; /* ZSTD_CDict, inside cmem */
	const void *ddict; /* ZSTD_DDict, inside dmem */
	void *cmem, *dmem;
	size_t bytes; /* all of it: LARDER_STAT_DICT_BYTES */
	int strategy; /* ZSTD_strategy the tables were prepared for; every frame pins it */
};

/*
 * At open, before the cache is shared: prepares the given dictionary, or
 * allocates the sample of a training cache (nothing for a plain cache or
 * LARDER_DICTIONARY_NONE). LARDER_OK, LARDER_ENOMEM, or LARDER_EINVAL
 * (given bytes zstd refuses).
 */
int larder__dict_open(struct larder *c, const struct larder_config *cfg);

/* At close, once nothing else runs (DICT-D1): frees the dictionary and the sample. */
void larder__dict_close(struct larder *c);

/* The cache's dictionary, NULL while it has none (A-DICT: its prepared
 * tables are visible to the caller). */
const struct larder__dict *larder__dict_get(const struct larder *c);

/* A writer's offer of a compressible value to the sample (DICT-D3): copied
 * when the sample is open and has room, else ignored. */
void larder__dict_offer(struct larder *c, const void *value, size_t len);

/* The maintainer's part, once per pass: closes a full sample, trains and
 * publishes. Returns nonzero while it has work in hand (copies in flight). */
uint64_t larder__dict_maint(struct larder *c);

#endif /* LARDER_CORE_DICT_H */
