/*
 * evict/sketch.c - TinyLFU's frequency sketch (Einziger, Friedman, Manes,
 * "TinyLFU: A Highly Efficient Cache Admission Policy", ACM ToS 2017), laid
 * out as in Caffeine's FrequencySketch: 4-bit counters packed 16 to a 64-bit
 * word, depth 4, a table of the next power of two >= the entries it sizes for.
 *
 * The key's hash arrives already keyed with the cache's random seed
 * (core/hash.h), so an attacker cannot aim keys at chosen counters; each row
 * re-mixes it with its own odd constant to get independent positions.
 *
 * Aging: after sample_size = 10 x entries increments every counter is halved
 * (Caffeine's reset), so the sketch tracks recent popularity. The halving is
 * one pass over the table: O(words) once per 10 x entries increments, i.e. O(1)
 * amortised per event; for a million-entry cache it touches 512 KiB once per
 * ten million events.
 *
 * Invariants (tests/sim/test_sketch.c):
 *   K1. estimate() never underestimates the increments since the last halving
 *       (count-min), saturating at 15.
 *   K2. A key's estimate after halving is at most half of what it was, rounded down.
 *   K3. additions never exceeds sample_size after an increment returns.
 */
#include "evict/sketch.h"

#include <stdlib.h>

#ifndef SKETCH_ENTRIES_PER_WORD
#define SKETCH_ENTRIES_PER_WORD 1
#endif
#ifndef SKETCH_SAMPLE_FACTOR
#define SKETCH_SAMPLE_FACTOR 10
#endif

static const uint64_t row_seed[4] = {
	0xc3a5c85c97cb3127ull, 0xb492b66fbe98f273ull,
	0x9ae16a3b2f90404full, 0xcbf29ce484222325ull,
};

static uint64_t words_for(uint64_t entries)
{
	/* 16 counters a word, depth 4: entries/4 words gives 4 counters per key per row. */
	uint64_t w = 8;
	while (w < entries / SKETCH_ENTRIES_PER_WORD && w < ((uint64_t)1 << 36))
		w <<= 1;
	return w;
}

static int alloc_table(struct larder__sketch *s, uint64_t entries)
{
	uint64_t words = words_for(entries);
	uint64_t *t = calloc(words, sizeof *t);
	if (!t)
		return -1;
	free(s->table);
	s->table = t;
	s->mask = words - 1;
	s->additions = 0;
	s->sample_size = SKETCH_SAMPLE_FACTOR * (entries ? entries : 1);
	return 0;
}

int larder__sketch_init(struct larder__sketch *s, uint64_t entries)
{
	s->table = NULL;
	s->resets = 0;
	return alloc_table(s, entries);
}

void larder__sketch_destroy(struct larder__sketch *s)
{
	free(s->table);
	s->table = NULL;
}

int larder__sketch_resize(struct larder__sketch *s, uint64_t entries)
{
	return alloc_table(s, entries);
}

static inline uint64_t row_hash(uint64_t hash, int row)
{
	uint64_t h = (hash ^ row_seed[row]) * 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 29);
}

/* Word index and nibble shift of the key's counter in a row. */
static inline void locate(const struct larder__sketch *s, uint64_t hash, int row,
			  uint64_t *word, unsigned *shift)
{
	uint64_t h = row_hash(hash, row);
	*word = h & s->mask;
	*shift = (unsigned)(h >> 60) << 2;
}

void larder__sketch_increment(struct larder__sketch *s, uint64_t hash)
{
	int added = 0;
	for (int r = 0; r < 4; r++) {
		uint64_t w;
		unsigned sh;
		locate(s, hash, r, &w, &sh);
		if (((s->table[w] >> sh) & 0xf) != 0xf) {
			s->table[w] += (uint64_t)1 << sh;
			added = 1;
		}
	}
	if (added && ++s->additions >= s->sample_size)
		larder__sketch_halve(s);
}

unsigned larder__sketch_estimate(const struct larder__sketch *s, uint64_t hash)
{
	unsigned m = 15;
	for (int r = 0; r < 4; r++) {
		uint64_t w;
		unsigned sh;
		locate(s, hash, r, &w, &sh);
		unsigned c = (unsigned)(s->table[w] >> sh) & 0xf;
		if (c < m)
			m = c;
	}
	return m;
}

void larder__sketch_halve(struct larder__sketch *s)
{
	uint64_t odd = 0;
	for (uint64_t i = 0; i <= s->mask; i++) {
		odd += (uint64_t)__builtin_popcountll(s->table[i] & 0x1111111111111111ull);
		s->table[i] = (s->table[i] >> 1) & 0x7777777777777777ull;
	}
	/* As Caffeine: the halving truncates about odd/4 keys' worth of counts. */
	s->additions = s->additions > (odd >> 2) ? (s->additions - (odd >> 2)) >> 1 : 0;
	s->resets++;
}
