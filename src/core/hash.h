/*
 * core/hash.h - the keyed 64-bit hash of a cache.
 *
 * XXH3-64 with a per-cache seed (random unless the config fixes it), so an
 * attacker who does not know the seed cannot aim keys at one bucket
 * (hash-flooding resistance). xxhash.h comes from Debian's libxxhash-dev and
 * is inlined (XXH_INLINE_ALL): the hash is on every operation's path and a
 * call through the shared library would cost more than hashing a short key.
 * Keys of up to 16 bytes go straight to XXH3's own short-input code (the
 * branch XXH3_64bits_withSeed takes for them, same result), which the
 * compiler inlines whole; the general entry point is too big to inline and
 * costs a call and a length dispatch per key (tests/unit/test_api.c checks
 * that both give the same hash).
 *
 * How the 64 bits are used (index/table.h): bits 16..47, scaled to the bucket
 * count (multiply-shift), pick the home bucket; the top 16 bits are the tag
 * stored beside the entry pointer.
 */
#ifndef LARDER_CORE_HASH_H
#define LARDER_CORE_HASH_H

#include <stddef.h>
#include <stdint.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static inline uint64_t larder__hash(uint64_t seed, const void *key, size_t key_len)
{
	if (__builtin_expect(key_len <= 16, 1))
		return XXH3_len_0to16_64b(key, key_len, XXH3_kSecret, seed);
	return XXH3_64bits_withSeed(key, key_len, seed);
}

#endif /* LARDER_CORE_HASH_H */
