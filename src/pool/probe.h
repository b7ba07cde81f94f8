/*
 * pool/probe.h - what a pooled cache's maintainer learns for its pool: the
 * requests its policy sees, replayed through mini caches of several sizes
 * (points of a miss-ratio curve), and the hits a ghost of recent victims
 * would have turned into (see probe.c). The maintainer calls it beside its
 * policy, for the marked entries only (larder__probe_marked).
 */
#ifndef LARDER_POOL_PROBE_H
#define LARDER_POOL_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "core/entry.h"
#include "evict/policy.h"
#include "evict/tuner.h"
#include "sync/atomic.h"

/* Points of the curve: sizes top x 2^(-k/3), k = 0..POINTS-1 (top/32 last);
 * the pool picks top around the cache's size (want_top) and the probe
 * follows, restarting its mini caches. Each point is a mini cache that every
 * sampled request goes through, so the points are most of the probe's cost;
 * but 8 points a factor 1.59 apart priced the bytes past a working set's
 * cliff too high (the phases' heavy cache took the whole pool and the
 * settling went from 2-3 s to 8-9 s: docs/pool.md), so there are 16. */
#define LARDER__PROBE_POINTS 16

/* While its cache is steady, one block of sampled requests in this many
 * goes through the mini caches (PROBE-P8 in probe.c). 16 since pool11 (8
 * before): half the mini caches' work while steady; the ten caches'
 * weighted misses 1.007x the optimum in the median of eleven rounds, one
 * round of them at 1.071x (docs/pool.md, "What the controller costs"). */
#define LARDER__PROBE_DUTY 16u

/* The probe samples 1 key in S, S a power of two and at least this
 * (PROBE-P4 in probe.c): a key is in the sample iff the low log2(S) bits of
 * larder__tuner_mix(hash) are 0, so every such sample lies inside the one
 * of 1 in LARDER__PROBE_MIN_EVERY. */
#define LARDER__PROBE_MIN_EVERY 64u

/*
 * PROBE-P6: the mark a writer gives an entry of a probed cache
 * (core/cache.h sample_marks) whose key is in that widest sample:
 * LARDER__ENTRY_SAMPLED, or 0. An immutable flag (core/entry.h ENTRY-E1),
 * so the maintainer tells an insert, a hit or a victim outside every
 * sample the probe may take by one bit of the entry it has in hand at its
 * policy call, without its hash (larder__probe_marked below).
 * PROBE-P9: a cache of several shards has one probe, on shard 0's
 * maintainer (probe.c), so only shard 0's keys (hash & shard_mask == 0,
 * core/cache.h larder__shard_index) are marked: no other shard's
 * maintainer ever meets a marked entry, and it has no probe to call.
 */
static inline unsigned larder__probe_mark(uint64_t hash, uint32_t shard_mask)
{
	return ((hash & shard_mask) ||
		(larder__tuner_mix(hash) & (LARDER__PROBE_MIN_EVERY - 1)))
		       ? 0u
		       : LARDER__ENTRY_SAMPLED;
}

/* Point k's size in 1/1024 of the top size (larder__probe_scale[0] == 1024). */
extern const unsigned larder__probe_scale[LARDER__PROBE_POINTS];

/*
 * The probe's counters. Written only by the cache's maintainer (the probe
 * runs inside its policy calls), with relaxed stores: each is a count that
 * only grows (or a setting that changes with `generation`), read by the
 * pool's controller with relaxed loads. Nothing else is published through
 * them.
 * PROBE-Q1. The mini caches' part (from hits to seen below) is written
 *   under `seq`, a sequence lock (odd while a flush writes it; its orders:
 *   R-PSEQ / A-PSEQ, larder__probe_write_begin/_end below), so that the
 *   pool reads all of it as of one flush: the pool compares the points'
 *   hits with each other (segments of the curve, POOL-M1 in pool/pool.c),
 *   and a reading that mixed two flushes would put one batch's hits
 *   between two points.
 */
struct larder__probe_readings {
	larder__atomic_u64 seq; /* PROBE-Q1: even between flushes */
	larder__atomic_u64 hits[LARDER__PROBE_POINTS]; /* each mini cache's hits */
	larder__atomic_u64 generation;  /* bumped when the mini caches restart cold */
	larder__atomic_u64 sample_every; /* S: one key of the cache's in S is sampled (PROBE-P9) */
	larder__atomic_u64 top_bytes;   /* the largest mini cache's full size, bytes */
	larder__atomic_u64 top_room;    /* entries it holds when full (mean sampled size) */
	larder__atomic_u64 fresh;       /* sampled requests since the mini caches restarted */
	larder__atomic_u64 sampled;     /* sampled requests through the mini caches */
	larder__atomic_u64 seen;        /* sampled requests that came, skipped too (PROBE-P8) */
	/* Outside PROBE-Q1: */
	larder__atomic_u64 ghost_hits;  /* inserts of keys found in the ghost */
	larder__atomic_u64 own_ns;      /* the probe's own time so far (PROBE-P5 in probe.c) */
	larder__atomic_u64 sim_ns;      /* its batch part alone: the mini caches (PROBE-P5) */
	larder__atomic_u64 arrived;     /* sampled requests as each comes, not at a flush */
	/* Written by the pool (relaxed: requests; a late one only delays a
	 * re-centring or a change of rate), read by the probe at every sampled
	 * request it sees. */
	larder__atomic_u64 want_top;
	larder__atomic_u64 want_steady; /* 1: the low rate will do (PROBE-P8) */
};

/*
 * PROBE-Q1, the writer's side (one writer: the probe, or a test in its
 * place): begin makes the sequence odd before any reading stored after
 * it, end makes it even after them; returns what end takes.
 */
static inline uint64_t larder__probe_write_begin(struct larder__probe_readings *out)
{
	/* Relaxed: only the writer stores it. */
	uint64_t seq = atomic_load_explicit(&out->seq, LARDER__RELAXED);
	atomic_store_explicit(&out->seq, seq + 1, LARDER__RELAXED);
	/* R-PSEQ (1/2): the odd sequence before the readings stored next, for
	 * a reader whose A-PSEQ fence sees one of them (pool/pool.c
	 * read_minis). */
	atomic_thread_fence(LARDER__RELEASE);
	return seq + 2;
}

static inline void larder__probe_write_end(struct larder__probe_readings *out, uint64_t seq)
{
	/* R-PSEQ (2/2): the readings stored since begin before the even
	 * sequence, for a reader whose A-PSEQ load sees it. */
	atomic_store_explicit(&out->seq, seq, LARDER__RELEASE);
}

struct larder__probe_setup {
	struct larder__probe_readings *out;
	enum larder_policy policy; /* the cache's; the mini caches run its base policy */
	uint64_t top_bytes;        /* the largest size the curve starts with (then want_top) */
	uint64_t ghost_bytes;      /* what the ghost remembers of recent victims */
	unsigned shards;           /* the cache's shard count K (PROBE-P9): its keys are 1 in K */
};

/* The probe of one pooled cache (probe.c): its maintainer's alone. */
struct larder__probe;

/*
 * Makes the probe of a cache that is opening; host is its policy's (the
 * probe hashes and sizes marked entries through it). Returns LARDER_OK
 * with *out set, or LARDER_ENOMEM with *out NULL.
 */
int larder__probe_create(const struct larder__probe_setup *setup,
			 const struct larder__policy_host *host, struct larder__probe **out);
/* Frees p (NULL: nothing). */
void larder__probe_destroy(struct larder__probe *p);

/*
 * PROBE-P4 at the maintainer's policy call sites (maint/apply.c,
 * maint/evict.c): whether e's writer marked it (PROBE-P6), the one test
 * every policy call pays; the probe is called for a marked entry only. A
 * cache outside a pool, or pooled without a probe, has no marked entry
 * (core/cache.h sample_marks), so its maintainer never calls the probe.
 */
static inline int larder__probe_marked(const struct larder__entry *e)
{
	return (larder__entry_flags_raw(e) & LARDER__ENTRY_SAMPLED) != 0;
}

/* The maintainer told its policy of a marked entry: inserted (a miss's
 * write; hash and bytes as the policy had them), hit (a hit sample), or
 * evicted (the victim, before it is retired). */
void larder__probe_insert(struct larder__probe *p, const struct larder__entry *e, uint64_t hash,
			  size_t bytes);
void larder__probe_hit(struct larder__probe *p, const struct larder__entry *e);
void larder__probe_victim(struct larder__probe *p, const struct larder__entry *v);

#endif /* LARDER_POOL_PROBE_H */
