/*
 * pool/probe.c - what estimates a pooled cache's miss-ratio curve, for the
 * pool's controller (pool/pool.c), from the requests its policy sees.
 *
 * Why: the pool gives memory where one more byte buys the most hits, so it
 * needs, for every cache, its hits as a function of its size near the size
 * it has: the slope of its miss-ratio curve. Two estimators run here, so
 * that both can be measured against the exact curve (docs/pool.md):
 *   - Mini caches (SHARDS, Waldspurger et al., FAST 2015): the requests of a
 *     hash sample of 1 key in S go through LARDER__PROBE_POINTS mini caches
 *     of the cache's own (base) policy, sized top x 2^(-k/3) / S; mini k's
 *     hits x S estimate the hits of a full cache of top x 2^(-k/3). The
 *     pool sets top to a few times the cache's size (want_top), so that the
 *     points cover its neighbourhood (top/32 .. top) with the same number of
 *     sampled keys at any size; when it moves top, the mini caches restart
 *     with S scaled alike (the sample's density per byte is kept).
 *     This is evict/tuner.c in its curve mode: the same code that picks
 *     S3-FIFO's small queue. The controller uses these points.
 *   - A ghost (as in ARC's or Cliffhanger's shadow queues): the sampled keys
 *     of the last ghost_bytes of victims (ghost_bytes / S of sampled ones);
 *     an insert of one of them is a hit the cache would have had with
 *     ghost_bytes more, S times over. Only the slope just above the current
 *     size, and only for an LRU-like order of victims. Not used by the
 *     controller (docs/pool.md has why); kept for the comparison.
 *
 * Where: the maintainer calls the policy for every request it learns of (an
 * insert after a miss, a hit sample) and every victim, on its own thread,
 * and, at the same call sites (maint/apply.c, maint/evict.c), the probe for
 * the entries their writers marked (PROBE-P6), after a test of that mark in
 * the entry it has in hand. So the mini caches see the stream the real
 * policy sees, lossy hit samples included, and the other calls, 63 in 64,
 * cost the probe that one test. (Until pool12 the probe wrapped the policy
 * and every call went through it: one more indirect call and a counter on
 * every call, 13-14 instructions, docs/pool.md.) pool.c's
 * larder__pool_probe_create makes it when the cache opens.
 *
 * Invariants:
 *   PROBE-P1. The probe never touches the cache's policy, and its own work
 *       never changes what the policy decides: the maintainer calls the
 *       policy for every entry, marked or not, as for a cache outside a
 *       pool.
 *   PROBE-P2. The readings only grow (probe.h); after a rebuild the mini caches
 *       start cold and `generation` says so.
 *   PROBE-P3. Memory: the ghost holds at most ghost_bytes of weight; the largest
 *       mini cache holds at most 4 x TARGET_ENTRIES entries: past that the
 *       tuner is rebuilt with a 4x sparser sample (TUNER-T3 in evict/tuner.c),
 *       and it is rebuilt 4x denser when it holds under TARGET_ENTRIES / 4
 *       after TARGET_ENTRIES sampled requests (a working set smaller than
 *       the first guess, or larger entries), so that the curve rests on
 *       enough keys.
 *   PROBE-P4. Cost per policy call: the maintainer's test of the entry's
 *       mark (PROBE-P6), inlined at its call site; for a marked key only (1
 *       in LARDER__PROBE_MIN_EVERY), a call into the probe, the timing's
 *       counter (PROBE-P5), a hash of its key (a hit or a victim) and
 *       the test of the sample (1 in S, S >= LARDER__PROBE_MIN_EVERY
 *       whatever the cache's size: a small cache's smallest mini caches hold
 *       few entries then, and read noisier); for a sampled key only, a
 *       ghost operation and a place in the batch (PROBE-P7). (Hashing every
 *       hit sample's key instead cost about 15 ns a request, a fifth of a
 *       core at the bench's rates; a set of the sampled entries with a bit
 *       filter in front, until pool11, 30-45 instructions a call.)
 *   PROBE-P7. The mini caches' work is bounded per second, not per request: the
 *       sampled requests wait in a batch of BATCH (or BATCH_AGE_NS), and a
 *       flush runs them through the LARDER__PROBE_POINTS mini caches. Every
 *       RATE_EPOCH_NS a flush compares the sampled requests per second with
 *       RATE_CAP; over it, S is multiplied by the power of two that brings
 *       the rate under it, and the tuner restarts with the sparser sample
 *       (its mini caches scaled to it: SHARDS' estimate stays unbiased, it
 *       only rests on fewer keys). A denser sample (PROBE-P3) is taken only
 *       while the rate, 4x, stays under RATE_CAP. So the mini caches see at
 *       most about RATE_CAP requests a second (a burst may exceed it for
 *       one epoch), whatever the cache's request rate.
 *   PROBE-P8. While the pool says the cache is steady (want_steady: its hit
 *       ratio and share of the reads have held still and no capacity moved for
 *       a while; pool/pool.c POOL-D1) and the mini caches are warm, only one
 *       block of DUTY_BLOCK sampled requests in DUTY goes through them; the
 *       others are counted (`seen`) and skipped. The controller scales the
 *       mini caches' hits by seen / sampled. The skipped blocks are whole runs
 *       of the sample's requests, so the mini caches see a stream cut into
 *       pieces of DUTY_BLOCK requests: for a stationary stream of independent
 *       references the pieces, joined, are the same stream (its curve is
 *       unchanged); a stream with temporal locality has some reuses
 *       shortened (those across a skipped block) and some lost (a burst cut
 *       by one), so its curve may read off while steady (docs/pool.md,
 *       Limits). Any change the pool detects, or a
 *       restart of the mini caches (until they are warm again), puts every
 *       sampled request back through them at once. The rate (PROBE-P7) is of
 *       the requests that came, so a change of duty never changes S.
 *   PROBE-P6. A hit or a victim comes without its key's hash: the entry's
 *       writer marked it (LARDER__ENTRY_SAMPLED, an immutable flag:
 *       probe.h larder__probe_mark) when its key is in the widest sample
 *       the probe may take, 1 in LARDER__PROBE_MIN_EVERY, which holds every
 *       sample of 1 in S (S a power of two, at least that). So an unmarked
 *       entry is outside the sample, whatever S is now or was when it came
 *       in, and only a marked one is hashed and tested against S. A change
 *       of S needs nothing more (a denser sample finds the entries already
 *       in the cache marked), and the probe keeps no state per entry.
 *   PROBE-P5. own_ns accounts for the probe's time on the maintainer, in two
 *       parts. The marked calls' part (PROBE-P4: the calls into the probe,
 *       from the timing's counter on; not the maintainer's test of the mark
 *       on every policy call, nor the call's own jump and frame, which no
 *       timing can resolve at a few instructions: docs/pool.md counts them
 *       with callgrind): 1 marked call in TIME_EVERY is timed
 *       (two monotonic clock reads, from the vDSO; the thread's CPU clock is
 *       a system call of ~0.7 us in a VM, longer than what it would time)
 *       and counted TIME_EVERY times, unless it took over OUTLIER_NS (the
 *       thread was interrupted or preempted: counted TIME_EVERY times, one
 *       such pause would outweigh thousands of calls; the most a timed call
 *       does, a hash, a ghost operation and a place in the batch, takes
 *       well under 1 us, and a loaded VM's pauses of a few us, counted until
 *       pool11, outweighed the calls' own time: docs/pool.md). The
 *       clock reads' own cost is
 *       taken off by timing, on the same calls, as many empty regions (two
 *       reads with nothing between, the same outlier rule), whose sum is
 *       subtracted: a fixed calibration (the fastest of a few pairs) left
 *       the reads' average excess in every timing, a few ns a call. The
 *       four clock reads per TIME_EVERY marked calls are the probe's cost too and
 *       are counted. The batch part (PROBE-P7: flushes and
 *       restarts of the mini caches, which run outside the timed calls):
 *       the thread's CPU clock around each, its cost shared by a batch;
 *       sim_ns is this part alone. An estimate of what the pool costs its
 *       caches (docs/pool.md), not a guarantee.
 *   PROBE-P9. A cache of K shards has one probe, on shard 0's maintainer
 *       (pool.c larder__pool_probe_create), which sees shard 0's requests
 *       alone: a key's shard is hash & (K - 1), and the sample's test looks
 *       at larder__tuner_mix(hash), which mixes every bit of the hash, so
 *       shard 0's keys are a hash sample of 1 in K of the cache's and its
 *       sampled keys one in K x S. So `sample_every` (S here, and what the
 *       probe publishes) is the cache's: K times the tuner's own sample;
 *       the mini caches are sized top x 2^(-k/3) / S as at K = 1, and the
 *       tuner samples 1 in S / K of shard 0's keys, at least
 *       MIN_EVERY (the marks, PROBE-P6, which only shard 0's keys get).
 *       SHARDS composes: two independent hash samples are one of the
 *       product's rate. At K = 1 nothing changes. Why not a probe per
 *       shard, their readings merged: K sets of mini caches (K times the
 *       memory and the work for the same estimate, or each K times
 *       sparser), K generations, rates and samples that restart apart, and
 *       a pool that would have to merge points of K grids; one probe on a
 *       sample of shard 0 is the same estimator at the same cost, and the
 *       rate cap (PROBE-P7) makes its sample as dense as a one-shard
 *       cache's wherever the cache is busy enough to need shards.
 *       (docs/pool.md, "A pooled cache of several shards").
 * Not guaranteed: a prediction. The tuned policies' mini caches run the
 * untuned base policy (S3-FIFO with a 10% small queue, W-TinyLFU with its
 * hill climber); hit samples the engine's lossy ring dropped are missing
 * from both the cache's policy and the mini caches.
 */
#include "pool/probe.h"

#include <stdlib.h>
#include <time.h>

#include "core/alloc.h"
#include "core/assert.h"
#include "evict/ghost.h"
#include "evict/tuner.h"
#include "sync/futex.h"

/* Entries the largest mini cache should hold (PROBE-P3). */
#define TARGET_ENTRIES 2048u
/* A first guess of an entry's charge, before the probe has seen any. */
#define GUESS_ENTRY_BYTES 1024u /* large: a sample too dense corrects itself soonest (PROBE-P3) */
/* PROBE-P4: S is at least this, so that a sampled request's mini-cache work (16
 * operations, 1-5 us with their cache misses) costs at most 20-80 ns per
 * request on average (docs/pool.md has what it costs measured); the
 * writers' marks cover it (PROBE-P6). */
#define MIN_EVERY LARDER__PROBE_MIN_EVERY
/* PROBE-P5: 1 marked call in TIME_EVERY is timed, and 1 empty region (a
 * power of two, at least 2); longer ones are dropped. 16: the four clock
 * reads per TIME_EVERY marked calls (about 25 ns each on this VM) cost
 * about 6 ns a marked call, a tenth of a ns a policy call (1 in 64 is
 * marked: the same clock reads per policy call as the 1 call in 1,024
 * timed until pool12), and a counted run still times thousands of calls. */
#define TIME_EVERY 16u
#define OUTLIER_NS 2000u
/* PROBE-P7: sampled requests per flush, the longest a batch waits, the
 * mini caches' sampled requests per second at most, and how often that is
 * checked. */
#define BATCH 32u
#define BATCH_AGE_NS (100u * 1000u * 1000u)
#define RATE_CAP 1024u
#define RATE_EPOCH_NS (1000u * 1000u * 1000u)
/* PROBE-P8: while steady, one block of DUTY_BLOCK sampled requests in DUTY
 * goes through the mini caches. */
#define DUTY LARDER__PROBE_DUTY
#define DUTY_BLOCK 128u
/* After a refused tuner, marked inserts until the next try (PROBE-P6: about
 * 64 x this many inserts). */
#define RETRY_MASK 0x3ffu

const unsigned larder__probe_scale[LARDER__PROBE_POINTS] = {
	1024, 813, 645, 512, 406, 323, 256, 203, 161, 128, 102, 81, 64, 51, 40, 32,
};

extern const struct larder__policy_ops larder__policy_s3fifo;
extern const struct larder__policy_ops larder__policy_wtinylfu;

struct larder__probe {
	/* What every marked call reads (PROBE-P4), first: one cache line. */
	uint64_t calls;              /* PROBE-P5: marked calls */
	struct larder__tuner *tuner; /* NULL while memory is refused */
	uint64_t sample_mask;        /* the tuner's: S - 1 */
	uint8_t has_ghost;
	uint8_t minis_ready; /* PROBE-P8: warm (minis_warm) at the last flush */
	struct larder__policy_host host;
	struct larder__probe_setup setup;
	struct larder__tuner_kind kind;  /* the tuner keeps a pointer to it */
	struct larder__ghost ghost;
	uint64_t base_hits[LARDER__PROBE_POINTS]; /* of rebuilt tuners */
	uint64_t ghost_hits;
	uint64_t generation;
	uint64_t sample_every;
	uint64_t top;           /* the tuner's top size, bytes */
	uint64_t sampled_bytes; /* sizes of the sampled requests, summed (this tuner) */
	uint64_t since_rebuild; /* sampled requests */
	uint64_t own_ns, sim_ns;    /* PROBE-P5: own_ns as last published */
	uint64_t call_ns, empty_ns; /* PROBE-P5: the timed calls and empty regions, summed */
	/* PROBE-P7: sampled requests not yet through the mini caches. */
	struct {
		uint64_t hash, bytes;
	} batch[BATCH];
	unsigned pending;
	unsigned pending_seen;       /* sampled requests since the last flush, skipped included */
	uint64_t batch_at;           /* when the batch's first came (PROBE-P8: or was skipped) */
	uint64_t duty_at;            /* PROBE-P8: sampled requests counted for the blocks */
	uint64_t seen;               /* PROBE-P8: sampled requests that came, all tuners */
	uint64_t arrived;            /* the same, as each comes (pool/pool.c POOL-W1) */
	uint64_t epoch_at, epoch_n;  /* the rate's epoch: its start (0: none), requests */
	uint64_t rate;               /* sampled requests per second, last epoch (0: unknown) */
	uint64_t sampled;            /* sampled requests through the mini caches, all tuners */
};

/* PROBE-P5: the probe's time so far, to the controller. */
static void publish_own(struct larder__probe *p)
{
	uint64_t calls = p->call_ns > p->empty_ns ? p->call_ns - p->empty_ns : 0;
	/* The clock reads themselves: four per TIME_EVERY calls, each about half
	 * an empty region. */
	calls += 2 * p->empty_ns / TIME_EVERY;
	/* The difference may fall back by a few ns when an empty region outweighs
	 * a call: the reading only grows (PROBE-P2), so it waits for the sum to
	 * pass it again. */
	if (calls + p->sim_ns <= p->own_ns)
		return;
	p->own_ns = calls + p->sim_ns;
	/* Relaxed: a count (probe.h). */
	atomic_store_explicit(&p->setup.out->own_ns, p->own_ns, LARDER__RELAXED);
}

/* PROBE-P5: the start of a timed call, or an empty region timed (then 0). */
static uint64_t time_begin_slow(struct larder__probe *p)
{
	if (!(p->calls & (TIME_EVERY / 2)))
		return larder__monotonic_ns();
	uint64_t a = larder__monotonic_ns(), d = larder__monotonic_ns() - a;
	if (d <= OUTLIER_NS)
		p->empty_ns += d * TIME_EVERY;
	return 0;
}

/* PROBE-P5: whether this call is one of the timed ones (or an empty
 * region's), counting it; then time_begin_slow() starts it. */
static inline int time_due(struct larder__probe *p)
{
	return (++p->calls & (TIME_EVERY / 2 - 1)) == 0;
}

static void time_end(struct larder__probe *p, uint64_t t0)
{
	if (!t0)
		return;
	uint64_t d = larder__monotonic_ns() - t0;
	if (d > OUTLIER_NS)
		return;
	p->call_ns += d * TIME_EVERY;
	publish_own(p);
}

/* PROBE-P5: the thread's CPU clock, for the batch part. */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void batch_time(struct larder__probe *p, uint64_t t0)
{
	p->sim_ns += cpu_ns() - t0;
	/* Relaxed: a count (probe.h). */
	atomic_store_explicit(&p->setup.out->sim_ns, p->sim_ns, LARDER__RELAXED);
	publish_own(p);
}

/* The mini caches' policy: the cache's without its own tuner. */
static const struct larder__policy_ops *base_ops(enum larder_policy policy)
{
	switch (policy) {
	case LARDER_POLICY_DEFAULT:
	case LARDER_POLICY_S3FIFO_TUNED:
		return &larder__policy_s3fifo;
	case LARDER_POLICY_WTINYLFU_TUNED:
		return &larder__policy_wtinylfu;
	default:
		return larder__policy_ops_for(policy);
	}
}

/* The mini caches' readings, as of now, under PROBE-Q1 (probe.h). */
static void publish(struct larder__probe *p)
{
	struct larder__probe_readings *out = p->setup.out;
	uint64_t seq = larder__probe_write_begin(out);
	/* Relaxed, here and below: counts and settings, ordered by R-PSEQ
	 * around them (probe.h). */
	atomic_store_explicit(&out->sample_every, p->sample_every, LARDER__RELAXED);
	atomic_store_explicit(&out->top_bytes, p->top, LARDER__RELAXED);
	atomic_store_explicit(&out->generation, p->generation, LARDER__RELAXED);
	for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
		atomic_store_explicit(&out->hits[k],
				      p->base_hits[k] + (p->tuner ? larder__tuner_hits(p->tuner, k) : 0),
				      LARDER__RELAXED);
	uint64_t n = p->tuner ? larder__tuner_requests(p->tuner) : 0;
	atomic_store_explicit(&out->fresh, n, LARDER__RELAXED);
	atomic_store_explicit(&out->sampled, p->sampled, LARDER__RELAXED);
	atomic_store_explicit(&out->seen, p->seen, LARDER__RELAXED);
	uint64_t mean = n && p->sampled_bytes ? p->sampled_bytes / n : 1;
	atomic_store_explicit(&out->top_room, p->top / p->sample_every / (mean ? mean : 1),
			      LARDER__RELAXED);
	larder__probe_write_end(out, seq);
}

/* PROBE-P7: the batch through the mini caches (not timed here); the rate
 * counts every sampled request that came (PROBE-P8). */
static void apply_pending(struct larder__probe *p)
{
	for (unsigned i = 0; i < p->pending; i++) {
		larder__tuner_access(p->tuner, p->batch[i].hash, p->batch[i].bytes);
		p->sampled_bytes += p->batch[i].bytes;
	}
	p->since_rebuild += p->pending;
	p->sampled += p->pending;
	p->seen += p->pending_seen;
	p->epoch_n += p->pending_seen;
	p->pending = 0;
	p->pending_seen = 0;
}

/* A tuner sampling 1 key of the cache's in `every` (a power of two; 1 in
 * every / K of shard 0's, PROBE-P9); PROBE-P3, PROBE-P7. The caller times
 * it (PROBE-P5). */
static void tuner_start(struct larder__probe *p, uint64_t every)
{
	uint64_t shards = p->setup.shards;
	/* PROBE-P9: `every` is the cache's S; the tuner's is S / K, and the
	 * marks' (PROBE-P6) at least. */
	every = every < MIN_EVERY * shards ? MIN_EVERY * shards : every;
	if (p->tuner)
		apply_pending(p); /* sampled under the old S: they count there */
	if (p->tuner) {
		for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
			p->base_hits[k] += larder__tuner_hits(p->tuner, k);
		larder__tuner_destroy(p->tuner);
		p->tuner = NULL;
	}
	/* The tuner picks S as the largest power of two that leaves at least
	 * mini_entries of the expected entries: ask for exactly `every`. */
	if (larder__tuner_create(&p->tuner, &p->kind, p->top / shards,
				 every / shards * TARGET_ENTRIES) != 0)
		p->tuner = NULL; /* no memory: no curve until the next try */
	if (p->tuner && larder__tuner_sample_every(p->tuner) < MIN_EVERY) {
		/* A top under 2 x MIN_EVERY bytes (never the pool's): a sample
		 * wider than the marks would read low (PROBE-P6). No curve. */
		larder__tuner_destroy(p->tuner);
		p->tuner = NULL;
	}
	p->sample_every = p->tuner ? larder__tuner_sample_every(p->tuner) * shards : every;
	p->sample_mask = p->sample_every / shards - 1;
	p->since_rebuild = 0;
	/* The ghost holds the sample's share of ghost_bytes (its hits count x S). */
	if (p->has_ghost)
		larder__ghost_set_bound(&p->ghost, p->setup.ghost_bytes / p->sample_every
							   ? p->setup.ghost_bytes / p->sample_every
							   : 1);
	p->sampled_bytes = 0;
	p->pending = 0;
	p->pending_seen = 0;
	p->minis_ready = 0; /* PROBE-P8: every sampled request, until warm */
	p->epoch_at = p->epoch_n = p->rate = 0; /* the new sample's rate is measured anew */
	p->generation++;
	publish(p);
}

static uint64_t first_sample_every(uint64_t top_bytes)
{
	uint64_t entries = top_bytes / GUESS_ENTRY_BYTES, s = 1;
	while (entries / (s * 2) >= TARGET_ENTRIES)
		s *= 2;
	return s;
}

/* PROBE-P7: at the end of an epoch, a rate over RATE_CAP makes the sample
 * sparser; returns whether the tuner restarted. */
static int rate_check(struct larder__probe *p)
{
	uint64_t now = larder__monotonic_ns();
	if (!p->epoch_at) {
		p->epoch_at = now;
		p->epoch_n = 0;
		return 0;
	}
	if (now - p->epoch_at < RATE_EPOCH_NS)
		return 0;
	uint64_t rate = (uint64_t)((double)p->epoch_n * 1e9 / (double)(now - p->epoch_at));
	p->epoch_at = now;
	p->epoch_n = 0;
	p->rate = rate ? rate : 1;
	if (rate <= RATE_CAP)
		return 0;
	uint64_t every = p->sample_every;
	for (; rate > RATE_CAP && every < ((uint64_t)1 << 40); rate /= 2)
		every *= 2;
	tuner_start(p, every);
	return 1;
}

/* PROBE-P3: after a flush, is the sample too dense or too sparse? Denser
 * only while 4x the rate stays under RATE_CAP (PROBE-P7). */
static void resample_if_needed(struct larder__probe *p)
{
	if (!p->tuner)
		return;
	uint64_t top = larder__tuner_mini_entries(p->tuner, 0);
	if (top > 4 * TARGET_ENTRIES)
		tuner_start(p, p->sample_every * 4);
	else if (p->since_rebuild >= TARGET_ENTRIES && top < TARGET_ENTRIES / 4 &&
		 p->sample_every >= 4 * MIN_EVERY * p->setup.shards && p->rate &&
		 p->rate * 4 <= RATE_CAP)
		tuner_start(p, p->sample_every / 4);
}

/* The pool asks for another top: the same sampled keys per byte, so S
 * scales with it (a power of two, at least 1). */
static void recentre(struct larder__probe *p, uint64_t top)
{
	uint64_t every = p->sample_every;
	for (uint64_t t = p->top; t < top && every < ((uint64_t)1 << 40); t *= 2)
		every *= 2;
	for (uint64_t t = p->top; t >= 2 * top && every > 1; t /= 2)
		every /= 2;
	/* PROBE-P7: no denser than the last epoch's rate allows. */
	for (uint64_t r = p->rate ? p->rate * p->sample_every / every : 0; r > RATE_CAP; r /= 2)
		every *= 2;
	p->top = top;
	tuner_start(p, every);
}

/* In the sample (the mini caches' and the ghost's)? Not without a tuner. */
static inline int sampled(const struct larder__probe *p, uint64_t hash)
{
	return p->tuner && p->has_ghost && larder__tuner_in_sample(p->sample_mask, hash);
}

/* Warm (pool/pool.c): the mini caches have seen twice what the largest holds. */
static int minis_warm(const struct larder__probe *p)
{
	uint64_t n = larder__tuner_requests(p->tuner);
	uint64_t mean = n && p->sampled_bytes ? p->sampled_bytes / n : GUESS_ENTRY_BYTES;
	return n >= 2 * (p->top / p->sample_every / (mean ? mean : 1));
}

/* The pool's requests, and a tuner after memory was refused: on the marked
 * inserts (PROBE-P4), 1 in 64, which is soon enough for a request the pool
 * makes at most once a pass. */
static void follow_pool(struct larder__probe *p)
{
	/* Relaxed: the pool's request (probe.h). */
	uint64_t want = atomic_load_explicit(&p->setup.out->want_top, LARDER__RELAXED);
	int retry = !p->tuner && (++p->since_rebuild & RETRY_MASK) == 0; /* refused: retry */
	if ((!want || want == p->top) && !retry)
		return;
	uint64_t t0 = cpu_ns();
	if (want && want != p->top)
		recentre(p, want);
	else
		tuner_start(p, p->sample_every);
	batch_time(p, t0);
}

/* PROBE-P8: does this sampled request go through the mini caches? All do
 * unless the pool says steady and the mini caches are warm; then one block
 * in DUTY. */
static int goes_through(struct larder__probe *p)
{
	uint64_t at = p->duty_at++;
	/* Relaxed: the pool's request (probe.h). */
	if (!p->minis_ready || !atomic_load_explicit(&p->setup.out->want_steady, LARDER__RELAXED))
		return 1;
	return at % (DUTY * DUTY_BLOCK) < DUTY_BLOCK;
}

/* One request of a sampled key, as the policy sees it, into the batch (or
 * counted and skipped: PROBE-P8); returns whether the batch is due
 * (PROBE-P7). */
static int probe_request(struct larder__probe *p, uint64_t hash, uint64_t bytes)
{
	uint64_t now = larder__monotonic_ns();
	if (!p->pending_seen)
		p->batch_at = now;
	p->pending_seen++;
	/* Relaxed: a count (probe.h); pool/pool.c POOL-W1 reads it every pass. */
	atomic_store_explicit(&p->setup.out->arrived, ++p->arrived, LARDER__RELAXED);
	if (goes_through(p)) {
		p->batch[p->pending].hash = hash;
		p->batch[p->pending].bytes = bytes;
		p->pending++;
	}
	return p->pending == BATCH || p->pending_seen >= DUTY * BATCH ||
	       now - p->batch_at >= BATCH_AGE_NS;
}

/* PROBE-P7: the batch through the mini caches, then the rate and the
 * sample's density; timed by the thread's CPU clock (PROBE-P5). */
static void flush(struct larder__probe *p)
{
	uint64_t t0 = cpu_ns();
	apply_pending(p);
	if (!p->minis_ready && minis_warm(p))
		p->minis_ready = 1; /* PROBE-P8 */
	publish(p);
	if (!rate_check(p))
		resample_if_needed(p);
	batch_time(p, t0);
}

/*
 * PROBE-P4: the maintainer's calls for a marked entry (PROBE-P6), after or
 * before its policy's own call for it (PROBE-P1: neither reads what the
 * other writes). Each is timed 1 in TIME_EVERY (PROBE-P5) from the first
 * test of its work to its last, the flush excepted (timed by the CPU clock).
 */
void larder__probe_insert(struct larder__probe *p, const struct larder__entry *e, uint64_t hash,
			  size_t bytes)
{
	LARDER__ASSERT(larder__probe_marked(e));
	follow_pool(p);
	uint64_t t0 = time_due(p) ? time_begin_slow(p) : 0;
	int due = 0;
	if (sampled(p, hash)) {
		if (larder__ghost_remove(&p->ghost, larder__ghost_fp(hash))) {
			p->ghost_hits++;
			/* Relaxed: a count (probe.h). */
			atomic_store_explicit(&p->setup.out->ghost_hits, p->ghost_hits,
					      LARDER__RELAXED);
		}
		due = probe_request(p, hash, bytes);
	}
	time_end(p, t0);
	if (due)
		flush(p);
}

void larder__probe_hit(struct larder__probe *p, const struct larder__entry *e)
{
	LARDER__ASSERT(larder__probe_marked(e));
	uint64_t t0 = time_due(p) ? time_begin_slow(p) : 0;
	int due = 0;
	if (p->tuner) {
		uint64_t hash = p->host.hash(p->host.ctx, e);
		if (sampled(p, hash))
			due = probe_request(p, hash, p->host.size(p->host.ctx, e));
	}
	time_end(p, t0);
	if (due)
		flush(p);
}

/* A marked victim: into the ghost if in the sample. */
void larder__probe_victim(struct larder__probe *p, const struct larder__entry *v)
{
	LARDER__ASSERT(larder__probe_marked(v));
	uint64_t t0 = time_due(p) ? time_begin_slow(p) : 0;
	if (p->tuner) {
		uint64_t hash = p->host.hash(p->host.ctx, v);
		if (sampled(p, hash)) {
			size_t bytes = p->host.size(p->host.ctx, v);
			larder__ghost_insert(&p->ghost, larder__ghost_fp(hash),
					     bytes > UINT32_MAX ? UINT32_MAX : (uint32_t)bytes);
		}
	}
	time_end(p, t0);
}

void larder__probe_destroy(struct larder__probe *p)
{
	if (!p)
		return;
	if (p->tuner)
		larder__tuner_destroy(p->tuner);
	if (p->has_ghost)
		larder__ghost_destroy(&p->ghost);
	free(p);
}

int larder__probe_create(const struct larder__probe_setup *setup,
			 const struct larder__policy_host *host, struct larder__probe **out)
{
	struct larder__probe *p = larder__calloc(1, sizeof *p);
	*out = NULL;
	if (!p)
		return LARDER_ENOMEM;
	p->host = *host;
	p->setup = *setup;
	p->kind = (struct larder__tuner_kind){
		.ops = base_ops(setup->policy),
		.count = LARDER__PROBE_POINTS,
		.mini_entries = TARGET_ENTRIES,
		.min_sample = 1,
		.flags = LARDER__TUNER_CURVE,
	};
	for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
		p->kind.scale[k] = larder__probe_scale[k];
	p->has_ghost = larder__ghost_init(&p->ghost, 1, 16) == 0;
	p->top = setup->top_bytes;
	tuner_start(p, first_sample_every(p->top));
	*out = p;
	return LARDER_OK;
}
