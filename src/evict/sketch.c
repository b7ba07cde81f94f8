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
 * spread too: the increments that follow each halve SKETCH_HALVE_WORDS words
 * (words [0, halved) are done), so it ends after words / 16 increments,
 * under 1% of the period, and no call does more; meanwhile a counter not yet
 * halved reads a little high. Halving and resizing never overlap: a resize
 * asked for during a halving is refused (the caller asks again later), and a
 * halving due during a resize waits for its copying to end.
 *
 * Growing (resize) keeps every count, incrementally. A key's counter in a row
 * is nibble (h >> 60) of word h & mask, so in a table of 2^k times the words
 * it is the same nibble of one of the 2^k "images" of its old word (the words
 * congruent to it modulo the old size). Copying each old word into all its
 * images therefore gives every key exactly the estimate it had: nothing is
 * forgotten, and the extra words dilute collisions from then on (the next
 * halvings age the inherited ones out). Caffeine instead starts an empty
 * table, and the alternative of an empty table consulted beside the old one
 * until the next halving would double the work of every estimate; the split
 * costs nothing per lookup. The copy is spread: each increment copies
 * SKETCH_MIGRATE_WORDS words (old words [0, moved) are done); until then a
 * counter whose old word is not yet moved is read and written in the old table.
 * Measured on the traces (docs/policies.md, "Growth of ghosts and the sketch").
 *
 * Invariants (tests/sim/test_sketch.c):
 *   SKETCH-K1. estimate() never underestimates the increments since the last halving
 *       (count-min), saturating at 15, also across and during a resize.
 *   SKETCH-K2. A key's estimate after halving is at most half of what it was, rounded down.
 *   SKETCH-K3. additions never exceeds sample_size after an increment returns, except
 *       while a resize is being copied (by at most the increments that takes).
 *   SKETCH-K4. A resize changes no estimate, and no increment does more than a
 *       constant amount of work: SKETCH_MIGRATE_WORDS words copied (plus the
 *       growth factor, at most SKETCH_MAX_GROWTH) or SKETCH_HALVE_WORDS halved.
 *       larder__sketch_halve() (tests) halves at once.
 */
#include "evict/sketch.h"

#include <stdlib.h>

#include "core/alloc.h"

#ifndef SKETCH_ENTRIES_PER_WORD
#define SKETCH_ENTRIES_PER_WORD 1
#endif
#ifndef SKETCH_SAMPLE_FACTOR
#define SKETCH_SAMPLE_FACTOR 10
#endif
#define SKETCH_MIGRATE_WORDS 8
#define SKETCH_HALVE_WORDS 16
#define SKETCH_MAX_GROWTH 8 /* one resize at most multiplies the words by this */

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

int larder__sketch_init(struct larder__sketch *s, uint64_t entries)
{
	uint64_t words = words_for(entries);
	s->table = larder__calloc(words, sizeof *s->table);
	if (!s->table)
		return -1;
	s->mask = words - 1;
	s->old = NULL;
	s->old_mask = 0;
	s->moved = 0;
	s->halving = 0;
	s->halved = 0;
	s->halve_odd = 0;
	s->additions = 0;
	s->sample_size = SKETCH_SAMPLE_FACTOR * (entries ? entries : 1);
	s->resets = 0;
	return 0;
}

void larder__sketch_destroy(struct larder__sketch *s)
{
	free(s->table);
	free(s->old);
	s->table = s->old = NULL;
}

int larder__sketch_resize(struct larder__sketch *s, uint64_t entries)
{
	if (s->old || s->halving)
		return -1;
	uint64_t words = words_for(entries);
	if (words > (s->mask + 1) * SKETCH_MAX_GROWTH)
		words = (s->mask + 1) * SKETCH_MAX_GROWTH;
	if (words > s->mask + 1) {
		uint64_t *t = larder__calloc(words, sizeof *t);
		if (!t)
			return -1;
		s->old = s->table;
		s->old_mask = s->mask;
		s->moved = 0;
		s->table = t;
		s->mask = words - 1;
	}
	s->sample_size = SKETCH_SAMPLE_FACTOR * (entries ? entries : 1);
	return 0;
}

/* Copies the next old words into all their images; frees the old table after the last. */
static void migrate(struct larder__sketch *s)
{
	uint64_t old_words = s->old_mask + 1, images = (s->mask + 1) / old_words;
	for (uint64_t done = 0; done < SKETCH_MIGRATE_WORDS && s->moved < old_words;
	     done += images) {
		for (uint64_t k = 0; k < images; k++)
			s->table[s->moved + k * old_words] = s->old[s->moved];
		s->moved++;
	}
	if (s->moved == old_words) {
		free(s->old);
		s->old = NULL;
	}
}

static inline uint64_t row_hash(uint64_t hash, int row)
{
	uint64_t h = (hash ^ row_seed[row]) * 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 29);
}

/* The word holding the key's counter in a row (in the old table while its old
 * word is not yet moved), and the counter's shift in it. */
static inline uint64_t *locate(const struct larder__sketch *s, uint64_t hash, int row,
			       unsigned *shift)
{
	uint64_t h = row_hash(hash, row);
	uint64_t w = h & s->mask;
	*shift = (unsigned)(h >> 60) << 2;
	if (s->old && (w & s->old_mask) >= s->moved)
		return &s->old[w & s->old_mask];
	return &s->table[w];
}

static void halve_begin(struct larder__sketch *s);
static void halve_step(struct larder__sketch *s, uint64_t words);

void larder__sketch_increment(struct larder__sketch *s, uint64_t hash)
{
	if (s->old)
		migrate(s);
	else if (s->halving)
		halve_step(s, SKETCH_HALVE_WORDS);
	int added = 0;
	for (int r = 0; r < 4; r++) {
		unsigned sh;
		uint64_t *w = locate(s, hash, r, &sh);
		if (((*w >> sh) & 0xf) != 0xf) {
			*w += (uint64_t)1 << sh;
			added = 1;
		}
	}
	s->additions += (uint64_t)added;
	if (s->additions >= s->sample_size && !s->halving && !s->old)
		halve_begin(s);
}

unsigned larder__sketch_estimate(const struct larder__sketch *s, uint64_t hash)
{
	unsigned m = 15;
	for (int r = 0; r < 4; r++) {
		unsigned sh;
		const uint64_t *w = locate(s, hash, r, &sh); /* sets sh: read it after */
		unsigned c = (unsigned)(*w >> sh) & 0xf;
		if (c < m)
			m = c;
	}
	return m;
}

/* Halves words [from, to) of t; returns how many counters were odd. */
static uint64_t halve_words(uint64_t *t, uint64_t from, uint64_t to)
{
	uint64_t odd = 0;
	for (uint64_t i = from; i < to; i++) {
		odd += (uint64_t)__builtin_popcountll(t[i] & 0x1111111111111111ull);
		t[i] = (t[i] >> 1) & 0x7777777777777777ull;
	}
	return odd;
}

static void halve_begin(struct larder__sketch *s)
{
	s->halving = 1;
	s->halved = 0;
	s->halve_odd = 0;
	s->additions >>= 1;
}

/* Halves the next `words` words; ends the halving after the last. */
static void halve_step(struct larder__sketch *s, uint64_t words)
{
	uint64_t n = s->mask + 1;
	uint64_t end = words < n - s->halved ? s->halved + words : n;
	s->halve_odd += halve_words(s->table, s->halved, end);
	s->halved = end;
	if (end < n)
		return;
	/* As Caffeine: the halving truncates about odd/4 keys' worth of counts
	 * (additions was halved when it began, so subtract half of that). */
	uint64_t lost = s->halve_odd >> 3;
	s->additions = s->additions > lost ? s->additions - lost : 0;
	s->halving = 0;
	s->resets++;
}

void larder__sketch_halve(struct larder__sketch *s)
{
	if (!s->halving)
		halve_begin(s);
	/* During a resize the table's unmoved images are still zero: halving them
	 * is harmless; their values are in the old table. */
	if (s->old)
		s->halve_odd += halve_words(s->old, s->moved, s->old_mask + 1);
	halve_step(s, s->mask + 1);
}
