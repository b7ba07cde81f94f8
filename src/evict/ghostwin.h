/*
 * evict/ghostwin.h - S3-FIFO's ghost: the fingerprints of keys that left the
 * cache within the last `bound` bytes of departures, one cache line per
 * lookup or insert. See ghostwin.c; ARC, which needs its ghosts' exact LRU
 * order and weights, keeps evict/ghost.c.
 */
#ifndef LARDER_EVICT_GHOSTWIN_H
#define LARDER_EVICT_GHOSTWIN_H

#include <stdint.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#define LARDER__GHOSTWIN_WAYS 8

/* One 64-byte line: fp 0 = an empty slot. A stamp is twice the clock in
 * units before its insert (ghostwin.c), so bit 0 is free: bit 0 of stamp[0]
 * is the bucket's spill flag (GHOSTWIN-W5), 0 in every other stamp. */
struct larder__ghostwin_bucket {
	uint32_t fp[LARDER__GHOSTWIN_WAYS];
	uint32_t stamp[LARDER__GHOSTWIN_WAYS];
};

#define LARDER__GHOSTWIN_SPILLED 1u

struct larder__ghostwin {
	struct larder__ghostwin_bucket *b;
	uint64_t nbuckets;
	unsigned shift; /* a fingerprint's bucket: its spread hash >> shift */
	/* While growing (GHOSTWIN-W4): the previous array, buckets [moved, old_n) not yet moved. */
	struct larder__ghostwin_bucket *old;
	uint64_t old_n, moved;
	uint64_t clock;      /* summed weight of every insert so far */
	unsigned unit_shift; /* stamps count clock in units of 2^unit_shift bytes */
	uint32_t window;     /* a stamp at most this many units old is live, doubled */
	uint64_t bound;
	uint64_t used;    /* slots holding a fingerprint, live or expired */
	uint64_t inserts;      /* all inserts, counted for GHOSTWIN-W3 */
	uint64_t mark_inserts; /* inserts when this window's count began */
	uint64_t mark_clock;   /* the clock then */
	uint64_t window_end;   /* the clock at which the next count begins */
	uint64_t grow_at;      /* inserts past which the array doubles */
	/* GHOSTWIN-W6: the sweep, which empties expired slots before their
	 * stamps can wrap: the next bucket, inserts past which it takes its next
	 * step (UINT64_MAX in the first window: off), and inserts between steps. */
	uint64_t sweep_next, sweep_at, sweep_every;
	uint64_t slow_at;      /* the lesser of grow_at and sweep_at: the inline insert's test */
	uint64_t forgotten; /* live fingerprints overwritten by a full pair of buckets */
	uint64_t spilled;   /* fingerprints placed in their neighbour bucket */
};

/* The fingerprint the window keeps for a 64-bit key hash: 31 bits of it
 * and bit 0 set, so never 0 (an empty slot), with one instruction where
 * ghost.h's test for 0 takes three, on every lookup and insert. */
static inline uint32_t larder__ghostwin_fp(uint64_t hash)
{
	return (uint32_t)(hash >> 20) | 1u;
}

/* The bits that pick a fingerprint's bucket, at the top: fp is already a
 * hash, and the multiply carries all its bits up. */
static inline uint64_t larder__ghostwin_spread(uint32_t fp)
{
	return (uint64_t)fp * 0x9E3779B97F4A7C15ull;
}

/* fp's bucket: in the old array until its bucket there is moved (GHOSTWIN-W4). */
static inline struct larder__ghostwin_bucket *
larder__ghostwin_bucket(const struct larder__ghostwin *g, uint32_t fp)
{
	uint64_t h = larder__ghostwin_spread(fp);
	if (g->old) {
		uint64_t ob = h >> (g->shift + 1);
		if (ob >= g->moved)
			return &g->old[ob];
	}
	return &g->b[h >> g->shift];
}

/* The slots of b holding fp, live or expired (bit i for slot i): with SSE2
 * the eight compared at once, elsewhere one by one. */
#if defined(__SSE2__)
/* Two compares' results (slots 0-3 in lo, 4-7 in hi) as a mask of slots. */
static inline unsigned larder__ghostwin_mask(__m128i lo, __m128i hi)
{
	return (unsigned)_mm_movemask_ps(_mm_castsi128_ps(lo)) |
	       (unsigned)_mm_movemask_ps(_mm_castsi128_ps(hi)) << 4;
}

static inline unsigned larder__ghostwin_match(const struct larder__ghostwin_bucket *b, uint32_t fp)
{
	__m128i v = _mm_set1_epi32((int)fp);
	return larder__ghostwin_mask(
		_mm_cmpeq_epi32(_mm_load_si128((const __m128i *)(const void *)b->fp), v),
		_mm_cmpeq_epi32(_mm_load_si128((const __m128i *)(const void *)b->fp + 1), v));
}

/* The empty slots of b (fp 0). */
static inline unsigned larder__ghostwin_empties(const struct larder__ghostwin_bucket *b)
{
	return larder__ghostwin_match(b, 0);
}

/* A bucket's ages at time t, biased by 2^31 (t + 2^31 - stamp): signed
 * order is then the ages' unsigned order. Doubled ages, less the spill flag
 * for slot 0: 2a - f > 2w exactly when a > w, and distinct ages keep their
 * order. */
static inline void larder__ghostwin_biased_ages(const struct larder__ghostwin_bucket *b,
						uint32_t t, __m128i *lo, __m128i *hi)
{
	__m128i bias = _mm_set1_epi32((int)(t ^ 0x80000000u));
	*lo = _mm_sub_epi32(bias, _mm_load_si128((const __m128i *)(const void *)b->stamp));
	*hi = _mm_sub_epi32(bias, _mm_load_si128((const __m128i *)(const void *)b->stamp + 1));
}

/* The slots of b expired at time t (older than window units). */
static inline unsigned larder__ghostwin_expired(const struct larder__ghostwin_bucket *b,
						uint32_t t, uint32_t window)
{
	__m128i lo, hi, w = _mm_set1_epi32((int)(window ^ 0x80000000u));
	larder__ghostwin_biased_ages(b, t, &lo, &hi);
	return larder__ghostwin_mask(_mm_cmpgt_epi32(lo, w), _mm_cmpgt_epi32(hi, w));
}
#else
static inline unsigned larder__ghostwin_match(const struct larder__ghostwin_bucket *b, uint32_t fp)
{
	unsigned m = 0;
	for (unsigned i = 0; i < LARDER__GHOSTWIN_WAYS; i++)
		m |= (unsigned)(b->fp[i] == fp) << i;
	return m;
}

static inline unsigned larder__ghostwin_empties(const struct larder__ghostwin_bucket *b)
{
	return larder__ghostwin_match(b, 0);
}

static inline unsigned larder__ghostwin_expired(const struct larder__ghostwin_bucket *b,
						uint32_t t, uint32_t window)
{
	unsigned m = 0;
	for (unsigned i = 0; i < LARDER__GHOSTWIN_WAYS; i++)
		m |= (unsigned)(t - b->stamp[i] > window) << i;
	return m;
}
#endif

/* Returns 0 or -1 (out of memory). bound: the window in bytes; slots_hint: sizing. */
int larder__ghostwin_init(struct larder__ghostwin *g, uint64_t bound, uint64_t slots_hint);
void larder__ghostwin_destroy(struct larder__ghostwin *g);
/* larder__ghostwin_insert() whatever the case: the weight over the bound, a
 * window's count to begin, a growth to begin or move, a bucket all live. */
void larder__ghostwin_insert_slow(struct larder__ghostwin *g, uint32_t fp, uint64_t weight);
int larder__ghostwin_contains(const struct larder__ghostwin *g, uint32_t fp);
/* larder__ghostwin_remove() once fp's bucket b holds fp, live or expired, or spilled. */
int larder__ghostwin_remove_from(struct larder__ghostwin *g, struct larder__ghostwin_bucket *b,
				 uint32_t fp);
/* Changes the window; fingerprints older than it stop counting at once. */
void larder__ghostwin_set_bound(struct larder__ghostwin *g, uint64_t bound);

/* Whether no fingerprint is held at all (remove() then finds none). */
static inline int larder__ghostwin_empty(const struct larder__ghostwin *g)
{
	return g->used == 0;
}

/* Whether fingerprints of b's may live in its neighbour (GHOSTWIN-W5). */
static inline unsigned larder__ghostwin_spilled(const struct larder__ghostwin_bucket *b)
{
	return b->stamp[0] & LARDER__GHOSTWIN_SPILLED;
}

/* Forgets fp; returns whether it was there (live). Every insert of S3-FIFO
 * asks, and nearly every answer is no, so that answer is inline: the call
 * cost the insert 13 instructions (docs/bench.md, "The insert"); a bucket
 * that spilled (rare) is asked out of line, its neighbour too.
 * Until the first eviction (a cache filling up, or loading a snapshot)
 * nothing is held, and the line would be a cache miss per insert. */
static inline int larder__ghostwin_remove(struct larder__ghostwin *g, uint32_t fp)
{
	if (larder__ghostwin_empty(g))
		return 0;
	struct larder__ghostwin_bucket *b = larder__ghostwin_bucket(g, fp);
	return larder__ghostwin_match(b, fp) || larder__ghostwin_spilled(b)
		       ? larder__ghostwin_remove_from(g, b, fp)
		       : 0;
}

/* The clock in stamp units, doubled (bit 0 clear). */
static inline uint32_t larder__ghostwin_now(const struct larder__ghostwin *g)
{
	return (uint32_t)(g->clock >> g->unit_shift) << 1;
}

/* Remembers fp, which left with `weight` bytes. Never fails: with no memory
 * to grow, a pair of full buckets forgets its oldest. Every eviction from S3-FIFO's
 * small queue inserts, so the common case is inline (the call, prologue and
 * epilogue were about 10 of its 81 instructions: docs/bench.md, "The
 * insert"): no growth under way or due, no sweep step due, no window to
 * begin, a bucket that has not spilled (so no slot's write need keep a
 * flag), fp's own slot or an empty or expired one. The rest, and weight 0 or over the bound
 * (`weight - 1` wraps for 0), take larder__ghostwin_insert_slow(), which
 * places fp exactly as this does. */
static inline void larder__ghostwin_insert(struct larder__ghostwin *g, uint32_t fp, uint64_t weight)
{
	if (weight - 1 >= g->bound || g->old || g->clock > g->window_end ||
	    g->inserts > g->slow_at) {
		larder__ghostwin_insert_slow(g, fp, weight);
		return;
	}
	struct larder__ghostwin_bucket *b = &g->b[larder__ghostwin_spread(fp) >> g->shift];
	if (larder__ghostwin_spilled(b)) {
		larder__ghostwin_insert_slow(g, fp, weight);
		return;
	}
	uint32_t t = larder__ghostwin_now(g);
	unsigned m;
	if ((m = larder__ghostwin_match(b, fp)) == 0) { /* else its own slot, live or expired */
		if ((m = larder__ghostwin_empties(b)) != 0)
			g->used++;
		else if ((m = larder__ghostwin_expired(b, t, g->window)) == 0) {
			larder__ghostwin_insert_slow(g, fp, weight); /* every slot live: spill */
			return;
		}
	}
	unsigned pick = (unsigned)__builtin_ctz(m);
	b->fp[pick] = fp;
	b->stamp[pick] = t;
	g->clock += weight;
	g->inserts++;
}

#endif /* LARDER_EVICT_GHOSTWIN_H */
