/*
 * pool/pool.c - several caches, one byte budget: capacity goes where it
 * earns the most weighted hits, and the budget bounds the caches' memory at
 * every instant.
 *
 * The shape: a pool is a list of members (one per cache opened in it), a
 * lock, and one thread. Caches keep running as they always do; the pool
 * only calls larder__cache_set_capacity() (larder_set_capacity's path: the
 * cache's own maintainer evicts and returns pages) and reads each cache's
 * byte budget and statistics. Its thread runs the controller every
 * interval and, between passes, finishes the grows that wait for bytes.
 *
 * The bound. A cache's writers take byte credit from its budget before they
 * allocate (CACHE-B1..B3 in core/cache.c): used + credits + budget == capacity +
 * overshoot. Hence used <= committed, where
 *     committed = capacity + overshoot(capacity) + max(0, -budget):
 * the budget goes negative only when a capacity cut leaves more allocated
 * than the new capacity allows; then writers take nothing (they never take
 * credit below zero) and only the maintainer's frees raise it, so
 * committed, read now, bounds used from now until the pool next changes
 * that cache's capacity. The pool keeps
 *     POOL-K1. sum over members of committed <= limit
 *            = budget + budget / 100 + 4 MiB x members
 *   (each cache's overshoot bound is max(capacity / 100, 4 MiB)), at every
 *   instant: a cut never raises committed; a
 *   grow raises a cache's capacity only by what the limit leaves after the
 *   other members' committed bytes as read under the lock (which can only
 *   fall until the pool acts again), so capacity moves only after the
 *   shrinking cache has given the bytes back. A member that is opening
 *   counts its first capacity; one that is closing counts what it had
 *   committed when it detached, until every byte is freed.
 *   POOL-K2. sum over members of target <= budget, and capacity < target for a
 *   member waiting to grow, capacity > target for one waiting to shrink
 *   (POOL-K4), capacity == target otherwise; so the grows
 *   always complete once the shrinks have been paid back (POOL-K1's limit holds
 *   sum(capacity + overshoot) for capacities summing to the budget).
 *   POOL-K3. min_bytes <= target <= max_bytes for every open member once it
 *   has joined (the sum of the min shares is at most 1, checked at open).
 *   POOL-K4. A shrink is cut in slices (apply_shrinks): a cut leaves the
 *   cache's budget at -slice at most (slice = budget / SLICE_DIVISOR, at
 *   least 4 MiB), and the next cut waits until that debt is paid back.
 *   While a cache's budget is negative its writers get no credit (CACHE-B3:
 *   they wait, then fail with EBUSY after write_wait_ms); a whole move cut
 *   at once (up to a quarter of the budget a pass, POOL-S1) kept them
 *   waiting until its maintainer had evicted all of it, which on a loaded
 *   machine outlasted the 1 s write wait: the phases' failed puts
 *   (docs/pool.md). The pool's thread (and an open waiting for bytes,
 *   first_capacity) cuts the next slice once the last is paid back and no
 *   writer of that cache waits for room, or its maintainer has passed once
 *   since the pool saw them waiting (hold_for_writers): the writers that
 *   waited through one slice get a pass to take their credit before the
 *   next cut, so a writer waits for about one slice's evictions, not a
 *   whole move's.
 *   The grows follow the same give-back as before.
 *   POOL-K5. sum over members not closing of capacity <= budget
 *   (LARDER_POOL_ASSIGNED_BYTES): a grow or a newcomer's first capacity
 *   takes at most what the others' capacities leave of the budget, on top
 *   of POOL-K1's room. POOL-K1 alone let them take the limit's slack for
 *   the overshoot while a cache above its target was still being cut
 *   (capacities at budget + 1% seen: test_pool_capacities_fit_budget).
 *
 * The controller (every interval_ms; docs/pool.md has the measurements):
 *   1. For each open cache, a window over its probe's readings (pool/probe.c:
 *      LARDER__PROBE_POINTS mini caches of sizes top x 2^(-k/3) on a sample
 *      of 1 key in S) with a half-life of HALF_LIFE_S (stretched up to
 *      MAX_HALF_LIFE_S so that it holds about WINDOW_SAMPLES sampled
 *      requests: the probe samples a bounded number a second): mini k's hits per
 *      second x S are H(size_k), the full cache's hits per second at that
 *      size (SHARDS' scaling). The points are centred on the cache: top is
 *      4 x its target (at most its max share), re-centred when the target
 *      has halved or doubled since (recentre_tops; the mini caches restart,
 *      cold). Only the points that count are used (POOL-M1). A cache of
 *      K shards has one probe, its shard 0's, whose readings are the
 *      cache's (S is the cache's: PROBE-P9 in pool/probe.c), so nothing
 *      here knows K but larder__pool_probe_create.
 *      Points are made non-decreasing and the upper concave hull is taken
 *      (a cliff is priced at its average slope, so a step across it is seen
 *      as worth it), with H(0) = 0 and H flat beyond the largest point.
 *   2. Budget no cache holds (a cache closed) goes, a step at a time, to
 *      the highest weighted slope above its target (w x H'+), or evenly
 *      when no cache gains.
 *   3. Up to MAX_STEPS moves of `step` bytes (or a stride of steps: POOL-S1)
 *      go from the cache whose
 *      last step down is worth least (w x (H(t) - H(t - step)) / step) to
 *      the one whose next step up is worth most (w x (H(t + step) - H(t))
 *      / step), while the receiver's value exceeds the donor's by
 *      HYSTERESIS and the gain is worth MIN_GAIN of the pool's weighted
 *      read rate. Values are secants over the step, not slopes at the
 *      target: then every move raises the sum of w x H(target) over the
 *      pool by at least the gain threshold, on the curves it was decided
 *      on, so no sequence of moves can come back to where it started, and
 *      with curves that stay put the moves stop (slopes at a hull corner
 *      would value a step across it at the steeper side and send it back:
 *      measured, 8 steps out and 8 back every pass). Noise must beat the
 *      hysteresis to move anything.
 *   POOL-S1. A move is `step` bytes, or `stride` steps: the stride doubles
 *   (up to MAX_STRIDE) after a pass that used all MAX_STEPS moves with no
 *   member's target reversing its direction, and falls back to 1 after a
 *   reversal or a pass without moves; a stride move is tried first and
 *   must pass every test on its own secants, and its last step the
 *   hysteresis test on its own (stride_end_pays), else a single step is
 *   tried.
 *   So a large gap after a phase change closes in a few passes, and the
 *   end point is the single-step one (a stride move that overshoots fails
 *   its tests).
 *   A move must also beat the estimates' noise: NOISE_Z standard errors,
 *   from the sampled hits each value rests on (value_noise). A cache whose
 *   points do not reach past its target may not take yet; it may give once
 *   it has one point, valued at the upper bound a concave curve allows past
 *   its points (hull_at_most), or when it has no reads at all (then its
 *   hits are worth nothing). Each point is scaled by the cache's read rate
 *   lately over its read rate in the point's window (the drift:
 *   point_drift), so a change of load moves capacity within the reads'
 *   half-life, while what the curve looks like rests on the longer window.
 *   POOL-W1. A pass in which the probe saw under half the sampled requests
 *   the cache's reads should have brought it (its maintainer asleep in a
 *   read-only phase) is left out of the probe's window (starved).
 *   POOL-M1. A curve rests only on points that count, judged point by
 *   point (mature_points): a point's level is the entries its mini cache
 *   has seen since the mini caches restarted over the entries it holds;
 *   its window starts at FILL_TURNS (its fill left out), it counts from
 *   USE_TURNS, and its estimate is as good as it gets at MATURE_TURNS.
 *   A point is the segment below it: what its mini cache hit that the next
 *   smaller one did not, over the point's window, both counted on the
 *   same requests (points_update; the readings as of one flush, PROBE-Q1
 *   in pool/probe.h); the curve is the segments summed from 0. So a
 *   working set that two points both hold reads flat between them in any
 *   window, however the windows of the points differ.
 *   A restart keeps the points that counted, with their levels, and the
 *   kept ones above them (keep_counted); a point of the new generation
 *   replaces a kept one at its size only once it has reached that one's
 *   level, and above the largest point that counts, the kept segments
 *   stand in (on top of it: they say what the bytes past it add; one of
 *   another grid that straddles it, at most what it has left over the
 *   points below: curve_add). A point
 *   still maturing is neither used to move capacity nor to reverse a
 *   move, and a restart drops it: its warm-up starts over. Why: a
 *   restarted mini cache reads low until it has turned over, and a
 *   generation's first points that count (twice their entries seen) near
 *   a working set's size read flat (645 and 813 MiB in the phases: the
 *   heavy cache gave 164 MiB and took it back 2 s later); holding the
 *   whole last curve until the largest point had seen 8 times its entries
 *   kept it stale for seconds where the mini caches restart often (the
 *   ten caches: docs/pool.md). Tests: test_controller_point_maturity,
 *   test_controller_segments_cancel_warmup,
 *   test_controller_keeps_mature_points,
 *   test_controller_point_window_skips_fill,
 *   test_controller_fitting_reads_flat,
 *   test_controller_kept_straddle_flat.
 *   POOL-D1. A member is steady after CALM_PASSES passes in a row in which
 *   its target did not move and its load showed no change:
 *   its hit ratio over the reads' window (half-life HALF_LIFE_S) within
 *   CHANGE_HIT_RATIO of the long window's (LONG_HALF_LIFE_S), and its share of the pool's
 *   reads within CHANGE_RATE of the long window's share (shares, not rates:
 *   a driver slowed by the machine's load slows every cache alike), each
 *   beyond three standard errors of the counts. Its probe is asked for the
 *   low rate while it is steady (want_steady; PROBE-P8 in pool/probe.c) and
 *   for the full rate at the first change, so the estimates are at their
 *   best while capacity moves, and cost a fraction of that while it does
 *   not. A change shows for up to about the long window's life, then
 *   CALM_PASSES more are needed.
 * With the controller off (interval 0) the targets are an equal split of the
 * budget clamped to each cache's shares, recomputed at every open and close.
 *
 * Threads and locks: every field of the pool and its members is under
 * pool->lock, except the members' probe readings (written by the caches'
 * maintainers: pool/probe.h) and the reference count. Lock order: the pool
 * lock, then a cache's admin_lock (set_capacity) or handles_lock (stats);
 * the engine never calls the pool while holding those. Waiting for bytes
 * (an open, the thread's grows) happens in slices of GIVEBACK_SLICE_NS on a
 * shrinking cache's room word, as a writer waits for room (WAKE-W3 in
 * maint/maintainer.c), with the lock dropped and the member pinned: a cache
 * whose maintainer is stuck (in a removal listener) must not stall the
 * pool, and a pinned member's cache is not closed until the waiter is back.
 * An open that needs bytes a closing cache still holds waits on `released`
 * instead (a closing cache's committed bytes only come back all at once,
 * when larder_close has freed everything), in the same slices and within
 * the same deadline: a cache closing on another thread does not make the
 * open fail at once. So does one whose bytes another member holds while its
 * own larder_open is still starting its threads (M_OPENING with its first
 * capacity: the pool cannot cut it before larder__pool_activate, which
 * broadcasts `released`); before, such an open failed with LARDER_EBUSY at
 * once whatever its write wait (test_pool_members_come_and_go in
 * tests/unit/test_outside.c: three members' first opens beside two others
 * opening).
 */
#define _GNU_SOURCE
#include "pool/pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "maint/maintainer.h"
#include "pool/probe.h"
#include "sync/futex.h"

#define MIB (1024.0 * 1024.0)
#define MIN_BUDGET (1u << 20)
#define MIN_CACHE_BYTES (64u * 1024u)
#define BOUND_FLOOR ((uint64_t)4 << 20) /* larder__overshoot_bound()'s floor */
#define DEFAULT_BUDGET ((uint64_t)256 << 20)
#define DEFAULT_INTERVAL_MS 100u
#define MAX_INTERVAL_MS 60000u
#define STEP_DIVISOR 256u      /* a step is budget / 256 */
#define SLICE_DIVISOR 64u      /* a cut's debt is budget / 64, at least 4 MiB (POOL-K4) */
#define MAX_STEPS 16u          /* moves per pass */
#define MAX_STRIDE 4u          /* steps per move at most (POOL-S1): 1/4 of the budget a pass */
#define HYSTERESIS 0.10        /* receiver's value over the donor's, at least */
#define MIN_GAIN 0.00005       /* a step's gain over the pool's weighted reads per s */
#define HALF_LIFE_S 1.0        /* the reads', and the probe's at least */
#define MAX_HALF_LIFE_S 8.0
#define WINDOW_SAMPLES 1024.0  /* the probe's half-life holds this many sampled requests */
#define NOISE_Z 2.0            /* a move must beat this many standard errors */
#define SEQ_TRIES 64u          /* PROBE-Q1: reads of a probe's readings a pass tries */
#define FILL_TURNS 1.0         /* POOL-M1: a point's window starts at this x its entries seen, */
#define USE_TURNS 2.0          /* it may count from this x, */
#define MATURE_TURNS 8.0       /* and it is as good as it gets at this x */
#define LONG_HALF_LIFE_S 8.0   /* POOL-D1: the reads' long window */
#define STARVE_MIN 16.0        /* POOL-W1: sampled requests a pass must have brought */
#define STARVE_HALF_LIFE_S 30.0 /* POOL-W1: the ratio of sampled requests to reads */
#define CALM_PASSES 30u        /* POOL-D1: passes without a change before steady */
#define CHANGE_READS 1000.0    /* POOL-D1: reads a window needs to show a change */
#define CHANGE_HIT_RATIO 0.02  /* POOL-D1: hit ratio, short window against long, at least */
#define CHANGE_RATE 0.20       /* POOL-D1: read rate, short against long, at least */
#define GHOST_DIVISOR 64u      /* the probe's ghost remembers budget / 64 */
#define GIVEBACK_SLICE_NS (2u * 1000u * 1000u)
#define IDLE_WAIT_NS (1000u * 1000u * 1000u)

enum member_state { M_OPENING, M_ACTIVE, M_CLOSING };

struct larder_pool_config {
	uint64_t budget;
	uint64_t interval_ms;
};

/* The controller's window over one member's readings. */
struct window {
	int primed;
	uint64_t gen, at_ns, every, top; /* the sample's S and top in this window */
	uint64_t fresh;        /* sampled requests since the mini caches restarted */
	uint64_t top_room;     /* entries the largest mini cache holds when full */
	uint64_t hits[LARDER__PROBE_POINTS], ghost, reads, sampled; /* last readings */
	double w_ghost, w_probe_secs, w_sampled;
	double w_preads; /* the cache's reads over the probe's window (its rate there) */
	/* POOL-M1: each point's own window, from when its mini cache had seen
	 * FILL_TURNS x its entries: its segment's hits (its mini cache's hits
	 * less the next smaller one's, over the same requests: seg_hits), the
	 * seconds, the cache's reads, and the sampled requests that came and
	 * that went through (PROBE-P8's thinning within it). */
	double w_hits[LARDER__PROBE_POINTS], w_psecs[LARDER__PROBE_POINTS];
	double w_ppreads[LARDER__PROBE_POINTS], w_pseen[LARDER__PROBE_POINTS];
	double w_psampled[LARDER__PROBE_POINTS];
	double w_reads, w_secs; /* the cache's reads: not restarted with the probe */
	/* The probe's sampled requests that came (through or skipped: POOL-M1's
	 * thinning); POOL-D1: the cache's hits over the reads' window, and the
	 * reads and hits over a long one. */
	uint64_t seen, chits;
	double w_chits, w_lreads, w_lhits, w_lsecs;
	/* POOL-W1: sampled requests as they came, and the reads, over the
	 * passes that had reads (STARVE_HALF_LIFE_S). */
	uint64_t arrived;
	double w_arrived, w_areads;
};

/* Points a curve rests on at most: a generation's points that count and
 * the kept ones of earlier generations above them (POOL-M1). */
#define MAX_POINTS (2 * LARDER__PROBE_POINTS)

/*
 * One point of a member's curve (POOL-M1), as the segment below it: from lo
 * bytes (the next smaller point of its generation, or 0) to x, the full
 * cache's hits per second rose by dy0 while the cache read ref times a
 * second, resting on `count` sampled hits of one window (the difference of
 * the two mini caches' hits over the same requests), each of which stood
 * for pc0 hits per second; gen is the generation of the mini caches it was
 * measured in. A point kept from an earlier generation follows the
 * cache's load since (point_drift).
 */
struct point {
	double lo, x, dy0, ref, count, pc0;
	double level; /* entries seen over entries held, at most MATURE_TURNS (POOL-M1) */
	uint64_t gen;
};

/* A member's curve as the controller sees it: the hull's corners. */
struct curve {
	int valid;   /* its points reach past the target: it may take */
	int known;   /* it has a point: it may give (value_down) */
	double rate; /* reads per second */
	unsigned n;
	double x[MAX_POINTS + 1], y[MAX_POINTS + 1]; /* bytes, hits/s */
	/* The points it rests on, smallest first: their sizes, their hits per
	 * second (the segments below them summed), and the standard error of
	 * the slope of the segment that ends at each (value_noise). */
	unsigned np;
	double px[MAX_POINTS], py[MAX_POINTS], perr[MAX_POINTS];
};

/*
 * A point's hits scale with the cache's load since it was measured: its
 * read rate now (the reads' short window, counted in full) over its read
 * rate in the point's window (1 where either is unknown). What a cache's
 * keys look like changes slower than its load: a load that doubles doubles
 * the curve within a half-life of the reads, not of the probe's window
 * (which stretches to hold enough sampled requests) nor of a kept point's.
 */
static double point_drift(const struct curve *cv, const struct point *pt)
{
	return pt->ref > 0 && cv->rate > 0 ? cv->rate / pt->ref : 1;
}

/* What a point's segment adds to the full cache's hits per second, now. */
static double seg_hits(const struct curve *cv, const struct point *pt)
{
	return pt->dy0 * point_drift(cv, pt);
}

struct larder__pool_member {
	/* Written by the cache's maintainer through the probe (relaxed counts). */
	struct larder__probe_readings readings __attribute__((aligned(64)));
	/* The rest: under pool->lock (its own cache lines). */
	larder_pool *pool __attribute__((aligned(64)));
	struct larder *cache;
	enum member_state state;
	uint64_t cap, target, min_bytes, max_bytes;
	uint64_t top; /* the curve's top that the probe was asked for (want_top) */
	uint64_t frozen; /* committed when it detached (M_CLOSING) */
	unsigned pins;   /* waiters on its cache outside the lock (wait_giveback) */
	int held;        /* POOL-K4: a cut waits for its writers since room_seq held_seq */
	uint32_t held_seq;
	double min_share, max_share, cost;
	enum larder_policy policy;
	struct window win;
	struct curve curve;
	/* POOL-M1: the points that counted in generation `gen` at the last
	 * pass, and those kept from earlier generations (sizes ascending). */
	uint64_t gen;
	unsigned n_last, n_kept;
	struct point last[LARDER__PROBE_POINTS], kept[MAX_POINTS];
	uint64_t pass_start; /* its target when the pass's moves began (POOL-S1) */
	int last_dir;        /* +1 or -1: the way its target last moved in a pass */
	uint64_t pass_from;  /* POOL-D1: its target when the pass began */
	unsigned calm;       /* POOL-D1: passes since its last change */
	int steady;          /* POOL-D1: what its probe was last asked */
	int force_steady;    /* test seam: 0 detect, 1 steady, 2 not */
	int fake; /* test seam: curve is given, not estimated */
	double fake_hits[LARDER__PROBE_POINTS], fake_rate;
	uint64_t fake_reach; /* test seam: its points above do not count yet (0: all do) */
	uint64_t fake_gen;   /* test seam: restarts of the given curve's mini caches */
	struct larder__pool_member *next;
};

struct larder_pool {
	pthread_mutex_t lock;
	pthread_cond_t wake;     /* the pool's thread: work, or stop */
	pthread_cond_t unpinned; /* a member's last pin went (wait_giveback) */
	pthread_cond_t released; /* a member left: its bytes are back (first_capacity) */
	pthread_t thread;
	/* Configs and members holding the pool, plus its creator until close.
	 * R-PREF / A-PREF: the last release frees it. */
	larder__atomic_u64 refs;
	uint64_t budget, step, interval_ns;
	uint64_t slice;  /* a cut's debt at most (POOL-K4) */
	uint64_t stride; /* steps per move in the next pass (POOL-S1) */
	int closed, stop;
	struct larder__pool_member *members;
	unsigned members_n; /* every member, opening and closing included (POOL-K1) */
	uint64_t next_pass_ns;
	uint64_t moves, moved_bytes, passes;
};

/* ---- Configuration ------------------------------------------------------- */

int larder_pool_config_create(larder_pool_config **out)
{
	if (!out)
		return LARDER_EINVAL;
	larder_pool_config *c = larder__calloc(1, sizeof *c);
	*out = c;
	if (!c)
		return LARDER_ENOMEM;
	c->budget = DEFAULT_BUDGET;
	c->interval_ms = DEFAULT_INTERVAL_MS;
	return LARDER_OK;
}

void larder_pool_config_destroy(larder_pool_config *config)
{
	free(config);
}

int larder_pool_config_set_budget(larder_pool_config *config, uint64_t bytes)
{
	if (!config || bytes < MIN_BUDGET || bytes > (UINT64_MAX >> 4))
		return LARDER_EINVAL;
	config->budget = bytes;
	return LARDER_OK;
}

int larder_pool_config_set_interval_ms(larder_pool_config *config, uint64_t ms)
{
	if (!config || ms > MAX_INTERVAL_MS)
		return LARDER_EINVAL;
	config->interval_ms = ms;
	return LARDER_OK;
}

/* ---- Bytes: POOL-K1 and POOL-K2 ---------------------------------------------------- */

static uint64_t limit_of(const larder_pool *p)
{
	return p->budget + p->budget / 100 + (uint64_t)p->members_n * BOUND_FLOOR;
}

/* What a member holds against POOL-K1 now (see the header). */
static uint64_t committed(const struct larder__pool_member *m)
{
	if (m->state == M_CLOSING)
		return m->frozen;
	uint64_t level = m->cap + larder__overshoot_bound(m->cap);
	if (m->state == M_OPENING)
		return level;
	/* Relaxed: a count; a stale value is larger (only frees raise it while
	 * it is negative), so the sum stays an upper bound (POOL-K1). */
	int64_t budget = atomic_load_explicit(&m->cache->budget, LARDER__RELAXED);
	return level + (budget < 0 ? (uint64_t)-budget : 0);
}

static uint64_t committed_sum(const larder_pool *p, const struct larder__pool_member *skip)
{
	uint64_t sum = 0;
	for (const struct larder__pool_member *m = p->members; m; m = m->next)
		if (m != skip)
			sum += committed(m);
	return sum;
}

/* The budget that the capacities of the members not closing, but skip,
 * leave (POOL-K5). */
static uint64_t unassigned(const larder_pool *p, const struct larder__pool_member *skip)
{
	uint64_t sum = 0;
	for (const struct larder__pool_member *m = p->members; m; m = m->next)
		if (m != skip && m->state != M_CLOSING)
			sum += m->cap;
	return sum < p->budget ? p->budget - sum : 0;
}

/* The largest x <= cap_max with x + overshoot(x) <= room (0 if none). */
static uint64_t fit_capacity(uint64_t room, uint64_t cap_max)
{
	uint64_t lo = 0, hi = cap_max;
	if (hi + larder__overshoot_bound(hi) <= room)
		return hi;
	while (lo < hi) {
		uint64_t mid = lo + (hi - lo + 1) / 2;
		if (mid + larder__overshoot_bound(mid) <= room)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo + larder__overshoot_bound(lo) <= room ? lo : 0;
}

/*
 * Whether a writer waits for room in m's cache: its waiters beyond the
 * pool's own (wait_giveback pins m while it waits there). Relaxed: a count,
 * a hint; a stale reading only cuts before or after a writer's retry.
 */
static int writers_wait(const struct larder__pool_member *m)
{
	return atomic_load_explicit(&m->cache->room_waiters, LARDER__RELAXED) > m->pins;
}

/*
 * Whether m's next cut must wait for its writers (POOL-K4): they wait for
 * room, and its maintainer has not passed since the pool first saw them
 * waiting with the last cut paid back (one pass: they are woken at it and
 * retry; a pool that waited until none waits would not shrink a cache
 * whose writers always want room).
 */
static int hold_for_writers(struct larder__pool_member *m)
{
	if (!writers_wait(m)) {
		m->held = 0;
		return 0;
	}
	/* Relaxed: compared only; a stale value only holds one pass more. */
	uint32_t seq = atomic_load_explicit(&m->cache->room_seq, LARDER__RELAXED);
	if (!m->held) {
		m->held = 1;
		m->held_seq = seq;
	}
	if (seq == m->held_seq)
		return 1;
	m->held = 0;
	return 0;
}

/*
 * Cuts capacities toward targets a slice at a time (POOL-K4; a cut never
 * raises committed: POOL-K1): a member whose budget is not negative is cut
 * so that its budget falls to -slice at most, unless its writers wait
 * (hold_for_writers); one still paying a cut back is left alone. Returns
 * whether a member still waits to shrink.
 */
static int apply_shrinks(larder_pool *p)
{
	int pending = 0;
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		if (m->state != M_ACTIVE || m->target >= m->cap)
			continue;
		/* Relaxed: a count; a stale value only cuts a writer's credit
		 * chunks more (it only falls while writers take). */
		int64_t budget = atomic_load_explicit(&m->cache->budget, LARDER__RELAXED);
		if (budget >= 0 && !hold_for_writers(m)) {
			uint64_t cut = (uint64_t)budget + p->slice;
			uint64_t x = m->cap - m->target > cut ? m->cap - cut : m->target;
			if (larder__cache_set_capacity(m->cache, x) == LARDER_OK)
				m->cap = x;
		}
		pending |= m->cap > m->target;
	}
	return pending;
}

/* Raises capacities toward targets as far as POOL-K1 allows; returns whether a
 * member still waits to grow. */
static int complete_grows(larder_pool *p)
{
	int pending = 0;
	uint64_t limit = limit_of(p), sum = committed_sum(p, NULL);
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		if (m->state != M_ACTIVE || m->cap >= m->target)
			continue;
		uint64_t mine = committed(m);
		uint64_t room = limit > sum ? limit - sum + mine : mine;
		uint64_t left = unassigned(p, m);
		uint64_t x = fit_capacity(room, m->target < left ? m->target : left);
		if (x > m->cap && larder__cache_set_capacity(m->cache, x) == LARDER_OK) {
			m->cap = x;
			sum = sum - mine + committed(m);
		}
		pending |= m->cap < m->target;
	}
	return pending;
}

/* The member still paying back the most after a shrink, or NULL. */
static struct larder__pool_member *largest_debtor(larder_pool *p)
{
	struct larder__pool_member *best = NULL;
	int64_t worst = 0;
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		if (m->state != M_ACTIVE)
			continue;
		/* Relaxed: a count; only the choice of whom to wait on. */
		int64_t b = atomic_load_explicit(&m->cache->budget, LARDER__RELAXED);
		if (b < worst) {
			worst = b;
			best = m;
		}
	}
	return best;
}

/*
 * Waits up to one slice for m's maintainer to free bytes, as a writer
 * waiting for room does (larder__room_wait, A-ROOM in core/cache.c; the waiter count also
 * makes the maintainer start its grace periods at once). Called and
 * returns with the lock held, but drops it meanwhile (a cache stuck in its
 * removal listener must not stall the pool): the pin keeps m's cache from
 * being closed under us (larder__pool_detach waits for it).
 */
static void wait_giveback(larder_pool *p, struct larder__pool_member *m)
{
	struct larder *c = m->cache;
	/* A-ROOM: acquire, pairs with the release bump in wake_writers(). */
	uint32_t seq = atomic_load_explicit(&c->room_seq, LARDER__ACQUIRE);
	/* Relaxed: re-checked after the seq load; a stale reading only waits a slice. */
	if (atomic_load_explicit(&c->budget, LARDER__RELAXED) >= 0)
		return;
	m->pins++;
	pthread_mutex_unlock(&p->lock);
	/* Relaxed: a count, a hint (larder__room_wait sets the wake's flag). */
	atomic_fetch_add_explicit(&c->room_waiters, 1, LARDER__RELAXED);
	for (unsigned i = 0; i < c->shard_count; i++) {
		/* Relaxed: the futex word of each shard's maintainer. */
		atomic_store_explicit(&c->shard[i].maint_sleeping, 0, LARDER__RELAXED);
		larder__futex_wake(&c->shard[i].maint_sleeping, 1);
	}
	larder__room_wait(c, seq, GIVEBACK_SLICE_NS);
	atomic_fetch_sub_explicit(&c->room_waiters, 1, LARDER__RELAXED); /* a count */
	pthread_mutex_lock(&p->lock);
	if (--m->pins == 0)
		pthread_cond_broadcast(&p->unpinned);
}

/* ---- Targets ------------------------------------------------------------- */

static uint64_t clamp_u64(uint64_t v, uint64_t lo, uint64_t hi)
{
	return v < lo ? lo : v > hi ? hi : v;
}

static int counts(const struct larder__pool_member *m)
{
	return m->state != M_CLOSING;
}

static uint64_t free_budget(const larder_pool *p)
{
	uint64_t sum = 0;
	for (const struct larder__pool_member *m = p->members; m; m = m->next)
		if (counts(m))
			sum += m->target;
	return sum < p->budget ? p->budget - sum : 0;
}

/* The static split: targets = clamp(level, min, max), the largest level
 * whose targets fit the budget (POOL-K2, POOL-K3). */
static void equal_split(larder_pool *p)
{
	uint64_t lo = 0, hi = p->budget;
	while (lo < hi) {
		uint64_t level = lo + (hi - lo + 1) / 2, sum = 0;
		for (struct larder__pool_member *m = p->members; m; m = m->next)
			if (counts(m))
				sum += clamp_u64(level, m->min_bytes, m->max_bytes);
		if (sum <= p->budget)
			lo = level;
		else
			hi = level - 1;
	}
	uint64_t left = p->budget;
	for (struct larder__pool_member *m = p->members; m; m = m->next)
		if (counts(m)) {
			m->target = clamp_u64(lo, m->min_bytes, m->max_bytes);
			left -= m->target;
		}
	/* Level + 1 would not fit: fewer bytes are left than members below their
	 * max; one each, so that the whole budget is assigned. */
	for (struct larder__pool_member *m = p->members; m && left; m = m->next)
		if (counts(m) && m->target < m->max_bytes) {
			m->target++;
			left--;
		}
}

/* A new member's first target with the controller on: its equal part of the
 * budget (within its shares), from free budget first, then cut from the
 * members furthest above that part (then above their min). */
static void make_room_for(larder_pool *p, struct larder__pool_member *nm)
{
	unsigned n = 0;
	for (struct larder__pool_member *m = p->members; m; m = m->next)
		n += counts(m);
	uint64_t fair = p->budget / (n ? n : 1);
	uint64_t want = clamp_u64(fair, nm->min_bytes, nm->max_bytes);
	uint64_t have = free_budget(p);
	uint64_t need = want > have ? want - have : 0;
	for (int pass = 0; pass < 2 && need; pass++) {
		while (need) {
			struct larder__pool_member *best = NULL;
			uint64_t most = 0;
			for (struct larder__pool_member *m = p->members; m; m = m->next) {
				if (m == nm || !counts(m))
					continue;
				uint64_t keep = pass == 0 && fair > m->min_bytes ? fair : m->min_bytes;
				uint64_t over = m->target > keep ? m->target - keep : 0;
				if (over > most) {
					most = over;
					best = m;
				}
			}
			if (!best)
				break;
			uint64_t take = most < need ? most : need;
			take = take < p->step ? take : p->step;
			best->target -= take;
			need -= take;
		}
	}
	nm->target = want - need;
}

/* Recomputes targets after a member came or went. */
static void replan(larder_pool *p, struct larder__pool_member *joining)
{
	if (!p->interval_ns)
		equal_split(p);
	else if (joining)
		make_room_for(p, joining);
	/* else: the controller's next pass hands the free budget out */
}

/* ---- The controller ------------------------------------------------------- */

/* What the probe's ghost remembers (pool/probe.c). */
static uint64_t ghost_bytes(const larder_pool *p)
{
	uint64_t g = p->budget / GHOST_DIVISOR;
	return g < MIN_CACHE_BYTES ? MIN_CACHE_BYTES : g;
}

/* Point k of the curve: of the probe's top in this window, or of the max
 * share for a curve given through the test seam. */
static uint64_t point_bytes(const struct larder__pool_member *m, unsigned k)
{
	uint64_t top = m->fake ? m->max_bytes : m->win.top ? m->win.top : m->top;
	return top / 1024 * larder__probe_scale[k] + top % 1024 * larder__probe_scale[k] / 1024;
}

/* The top to ask the probe for: 4 x target (at most its max, at least
 * 64 KiB), so that the points span target / 8 .. 4 x target. */
static uint64_t top_for(const struct larder__pool_member *m)
{
	uint64_t top = m->target > m->max_bytes / 4 ? m->max_bytes : 4 * m->target;
	return top < MIN_CACHE_BYTES ? MIN_CACHE_BYTES : top;
}

/* After the moves: a target that left top / 8 .. top / 2 (halved or doubled
 * since the last centring) gets its points re-centred (the probe restarts
 * its mini caches, and the window its part with them). */
static void recentre_tops(larder_pool *p)
{
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		if (m->state != M_ACTIVE || m->fake)
			continue;
		uint64_t want = top_for(m);
		if (want == m->top || (m->target <= m->top / 2 && m->target >= m->top / 8))
			continue;
		m->top = want;
		/* Relaxed: a request to the probe (pool/probe.h). */
		atomic_store_explicit(&m->readings.want_top, want, LARDER__RELAXED);
	}
}

/* One reading of a member's probe (and of its cache's reads). */
struct reading {
	uint64_t gen, every, top, room, fresh, ghost, reads, hits_real, sampled, seen, arrived;
	uint64_t hits[LARDER__PROBE_POINTS];
};

/*
 * The mini caches' readings as of one flush (PROBE-Q1 in pool/probe.h);
 * false when a flush was writing them at every try (its maintainer
 * preempted in the middle).
 */
static int read_minis(const struct larder__probe_readings *p, struct reading *r)
{
	for (unsigned tries = 0; tries < SEQ_TRIES; tries++) {
		/* A-PSEQ (1/2), with R-PSEQ (2/2) in pool/probe.c publish: the
		 * readings of the flush that made the sequence even. */
		uint64_t seq = atomic_load_explicit(&p->seq, LARDER__ACQUIRE);
		if (seq & 1) {
			larder__cpu_relax();
			continue;
		}
		/* Relaxed: ordered by A-PSEQ's load above and fence below. */
		r->gen = atomic_load_explicit(&p->generation, LARDER__RELAXED);
		r->every = atomic_load_explicit(&p->sample_every, LARDER__RELAXED);
		r->top = atomic_load_explicit(&p->top_bytes, LARDER__RELAXED);
		r->room = atomic_load_explicit(&p->top_room, LARDER__RELAXED);
		r->fresh = atomic_load_explicit(&p->fresh, LARDER__RELAXED);
		for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
			r->hits[k] = atomic_load_explicit(&p->hits[k], LARDER__RELAXED);
		r->sampled = atomic_load_explicit(&p->sampled, LARDER__RELAXED);
		r->seen = atomic_load_explicit(&p->seen, LARDER__RELAXED);
		/* A-PSEQ (2/2), with R-PSEQ (1/2): a reading of a later flush
		 * above means the sequence below has moved on. */
		atomic_thread_fence(LARDER__ACQUIRE);
		if (atomic_load_explicit(&p->seq, LARDER__RELAXED) == seq)
			return 1;
	}
	return 0;
}

static void read_probe(struct larder__pool_member *m, struct reading *r)
{
	const struct larder__probe_readings *p = &m->readings;
	const struct window *w = &m->win;
	if (!read_minis(p, r)) {
		/* Nothing new from the mini caches this pass: the last reading. */
		r->gen = w->gen;
		r->every = w->every;
		r->top = w->top;
		r->room = w->top_room;
		r->fresh = w->fresh;
		memcpy(r->hits, w->hits, sizeof r->hits);
		r->sampled = w->sampled;
		r->seen = w->seen;
	}
	/* Relaxed: counts (pool/probe.h), each on its own. */
	r->ghost = atomic_load_explicit(&p->ghost_hits, LARDER__RELAXED);
	r->arrived = atomic_load_explicit(&p->arrived, LARDER__RELAXED);
	uint64_t v[LARDER_STAT_MISSES + 1];
	int ok = larder_stats(m->cache, v, LARDER_STAT_MISSES + 1) == LARDER_OK;
	r->reads = ok ? v[LARDER_STAT_HITS] + v[LARDER_STAT_MISSES] : m->win.reads;
	r->hits_real = ok ? v[LARDER_STAT_HITS] : m->win.chits;
}

/* sqrt(v) for v >= 1, without libm: Newton's iteration from above. */
static double sqrt_pos(double v)
{
	double r = v;
	for (int i = 0; i < 64 && r * r > v * (1 + 1e-12); i++)
		r = (r + v / r) / 2;
	return r;
}

/* 2^-t for t >= 0, without libm (the library links only libc and pthreads):
 * halvings for the whole part, a Taylor series of e^(-f ln 2) for the rest. */
static double half_power(double t)
{
	double whole = 1.0, x = -(t - (double)(uint64_t)t) * 0.6931471805599453, term = 1.0,
	       frac = 1.0;
	for (uint64_t i = 0; i < (uint64_t)t && whole > 0; i++)
		whole *= 0.5;
	for (int n = 1; n <= 12; n++) {
		term *= x / n;
		frac += term;
	}
	return whole * frac;
}

/*
 * POOL-W1: did the probe see under half the sampled requests the cache's
 * reads since the last pass should have brought it (at their ratio over a
 * long window, STARVE_HALF_LIFE_S, of the passes that had reads: the
 * sample's skew does not change it from pass to pass, a write-only phase
 * does not count, and it goes on following a lasting change, so that no
 * window stays frozen for good)? Then the pass is left out of the probe's
 * window: its time, its hits and its requests. Why: a cache whose reads
 * nearly all hit has no writes to wake its maintainer, which then sleeps
 * and keeps only each thread's latest hit samples (maint/maintainer.c,
 * maint_pass; the default policy does not need them on time), so its
 * probe sees a trickle, and a window that went on counting the seconds
 * would read its curve as falling (the ten caches' c4, uniform and held
 * whole, no longer lost its working set in any round with this; it was
 * first written for the phases' excursions, which it did not remove:
 * docs/pool.md). Only where the pass
 * should have brought STARVE_MIN sampled requests, so that a cache with
 * few reads is not taken for starved by chance.
 */
static int starved(const struct window *w, const struct reading *r)
{
	if (w->w_areads <= 0 || w->w_arrived <= 0)
		return 0;
	double expect = (double)(r->reads - w->reads) * w->w_arrived / w->w_areads;
	return expect >= STARVE_MIN && 2.0 * (double)(r->arrived - w->arrived) < expect;
}

/* Entries mini k holds when full, top_room being the largest's. */
static uint64_t point_entries(uint64_t top_room, unsigned k)
{
	return top_room / 1024 * larder__probe_scale[k] +
	       top_room % 1024 * larder__probe_scale[k] / 1024;
}

/*
 * POOL-M1: each point's window. A mini cache fresh from a restart fills
 * first, and the hits it misses then would stay in a window that started
 * with the generation; so point k's window starts only once its mini cache
 * has seen FILL_TURNS x its entries by the last reading (w->fresh: this
 * pass's requests all came after it; until then it is kept empty), and
 * decays as the probe's from then on (pkeep over secs). Within one
 * generation (the caller's test).
 * What it holds is the point's segment: its mini cache's hits less the
 * next smaller one's (whose window started earlier: it is smaller), both
 * over the same requests, so that what a segment says is what the bytes
 * between the two sizes added on one stream. Why: the points' windows
 * start at different passes, and a point's own hits over its window, put
 * next to another's over a longer one, differ by whatever the two windows'
 * streams did (a burst of reads in one, the maintainer lagging behind the
 * reads at the other's start): under CPU contention a cache whose working
 * set fits read a positive marginal value in 2 of 8 runs of
 * test_probe_steady_rate. Two mini caches that both hold the whole working
 * set hit on the same requests: their segment is 0 in any window.
 */
static void points_update(struct window *w, const struct reading *r, double pkeep, double secs)
{
	for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++) {
		if ((double)w->fresh < FILL_TURNS * (double)point_entries(r->room, k)) {
			w->w_hits[k] = w->w_psecs[k] = w->w_ppreads[k] = 0;
			w->w_pseen[k] = w->w_psampled[k] = 0;
			continue;
		}
		double seg = (double)(r->hits[k] - w->hits[k]);
		if (k + 1 < LARDER__PROBE_POINTS)
			seg -= (double)(r->hits[k + 1] - w->hits[k + 1]);
		w->w_hits[k] = w->w_hits[k] * pkeep + seg;
		w->w_psecs[k] = w->w_psecs[k] * pkeep + secs;
		w->w_ppreads[k] = w->w_ppreads[k] * pkeep + (double)(r->reads - w->reads);
		w->w_pseen[k] = w->w_pseen[k] * pkeep + (double)(r->seen - w->seen);
		w->w_psampled[k] = w->w_psampled[k] * pkeep + (double)(r->sampled - w->sampled);
	}
}

/* Folds the readings since the last pass into the decaying window. */
static void window_update(struct larder__pool_member *m, uint64_t now_ns)
{
	struct window *w = &m->win;
	struct reading r;
	read_probe(m, &r);
	if (w->primed && now_ns > w->at_ns) {
		double secs = (double)(now_ns - w->at_ns) / 1e9;
		double keep = half_power(secs / HALF_LIFE_S);
		w->w_reads = w->w_reads * keep + (double)(r.reads - w->reads);
		w->w_chits = w->w_chits * keep + (double)(r.hits_real - w->chits);
		w->w_secs = w->w_secs * keep + secs;
		double lkeep = half_power(secs / LONG_HALF_LIFE_S);
		w->w_lreads = w->w_lreads * lkeep + (double)(r.reads - w->reads);
		w->w_lhits = w->w_lhits * lkeep + (double)(r.hits_real - w->chits);
		w->w_lsecs = w->w_lsecs * lkeep + secs;
		int starving = r.gen == w->gen && starved(w, &r);
		if (r.reads > w->reads) {
			double akeep = half_power(secs / STARVE_HALF_LIFE_S);
			w->w_arrived = w->w_arrived * akeep + (double)(r.arrived - w->arrived);
			w->w_areads = w->w_areads * akeep + (double)(r.reads - w->reads);
		}
		if (r.gen == w->gen && !starving) {
			/* The probe samples at most so many requests a second (pool/probe.c
			 * PROBE-P7): its half-life stretches so that the window still
			 * rests on about WINDOW_SAMPLES of them. */
			double rate = w->w_probe_secs > 0 ? w->w_sampled / w->w_probe_secs : 0;
			double life = rate > 0 ? WINDOW_SAMPLES / rate : HALF_LIFE_S;
			life = life < HALF_LIFE_S	  ? HALF_LIFE_S
			       : life > MAX_HALF_LIFE_S ? MAX_HALF_LIFE_S
							: life;
			double pkeep = half_power(secs / life);
			points_update(w, &r, pkeep, secs);
			w->w_ghost = w->w_ghost * pkeep + (double)(r.ghost - w->ghost);
			w->w_sampled = w->w_sampled * pkeep + (double)(r.sampled - w->sampled);
			w->w_preads = w->w_preads * pkeep + (double)(r.reads - w->reads);
			w->w_probe_secs = w->w_probe_secs * pkeep + secs;
		}
	}
	if (!w->primed || r.gen != w->gen) {
		/* The mini caches restarted cold (pool/probe.c PROBE-P2): their part of the
		 * window starts over; the reads (the cache's own) go on. */
		w->w_ghost = w->w_probe_secs = w->w_sampled = w->w_preads = 0;
		/* POOL-W1: a new S brings sampled requests at a new ratio. */
		if (w->primed && r.every)
			w->w_arrived *= (double)w->every / (double)r.every;
		memset(w->w_hits, 0, sizeof w->w_hits);
		memset(w->w_psecs, 0, sizeof w->w_psecs);
		memset(w->w_ppreads, 0, sizeof w->w_ppreads);
		memset(w->w_pseen, 0, sizeof w->w_pseen);
		memset(w->w_psampled, 0, sizeof w->w_psampled);
		w->primed = 1;
		w->gen = r.gen;
	}
	w->every = r.every;
	w->top = r.top;
	w->top_room = r.room;
	w->fresh = r.fresh;
	w->at_ns = now_ns;
	memcpy(w->hits, r.hits, sizeof r.hits);
	w->ghost = r.ghost;
	w->sampled = r.sampled;
	w->seen = r.seen;
	w->arrived = r.arrived;
	w->reads = r.reads;
	w->chits = r.hits_real;
}

/* The upper concave hull of (0,0) and the curve's points (smallest first),
 * left to right. */
static void hull_of(struct curve *cv)
{
	double px[MAX_POINTS + 1], py[MAX_POINTS + 1], best = 0;
	px[0] = 0;
	py[0] = 0;
	for (unsigned i = 0; i < cv->np; i++) {
		best = cv->py[i] > best ? cv->py[i] : best; /* more memory never loses hits */
		px[i + 1] = cv->px[i];
		py[i + 1] = best;
	}
	cv->n = 0;
	for (unsigned i = 0; i <= cv->np; i++) {
		if (cv->n && px[i] <= cv->x[cv->n - 1])
			continue;
		while (cv->n >= 2) {
			double x0 = cv->x[cv->n - 2], y0 = cv->y[cv->n - 2];
			double x1 = cv->x[cv->n - 1], y1 = cv->y[cv->n - 1];
			/* Drop the middle corner when it lies on or under the chord. */
			if ((y1 - y0) * (px[i] - x0) <= (py[i] - y0) * (x1 - x0))
				cv->n--;
			else
				break;
		}
		cv->x[cv->n] = px[i];
		cv->y[cv->n] = py[i];
		cv->n++;
	}
}

/*
 * POOL-M1: the level of the kept point at x or the nearest above it (0 if
 * none): a point of the current generation replaces it only at that level.
 */
static double kept_level(const struct larder__pool_member *m, double x)
{
	for (unsigned i = 0; i < m->n_kept; i++)
		if (m->kept[i].x >= x * 0.99)
			return m->kept[i].level;
	return 0;
}

/*
 * POOL-M1: the current generation's points that count, into m->last,
 * smallest first. Point k's level is the entries its mini cache has seen
 * since the mini caches restarted over the entries it holds (its own
 * window, points_update, holds what came after its fill); it counts from
 * USE_TURNS, and where a point kept from an earlier generation stands at
 * its size, only once it has reached that one's level (up to
 * MATURE_TURNS): an estimate is replaced by one at least as mature, never
 * by a fresher, less settled one. The mini caches see one stream, so the
 * smaller ones mature first and the points that count are the smallest
 * ones, each segment's lower end a point that counts. A curve given through
 * the test seam counts up to its reach, at level MATURE_TURNS.
 */
static void mature_points(struct larder__pool_member *m, const uint64_t *bytes)
{
	const struct window *w = &m->win;
	m->n_last = 0;
	if (m->fake) {
		for (unsigned i = 0; i < LARDER__PROBE_POINTS; i++) {
			unsigned k = LARDER__PROBE_POINTS - 1 - i;
			if (m->fake_reach && bytes[k] > m->fake_reach)
				break;
			double below = i ? m->fake_hits[k + 1] : 0;
			m->last[m->n_last++] = (struct point){.lo = i ? (double)bytes[k + 1] : 0,
							      .x = (double)bytes[k],
							      .dy0 = m->fake_hits[k] - below,
							      .ref = m->fake_rate,
							      .level = MATURE_TURNS,
							      .gen = m->gen};
		}
		return;
	}
	if (w->w_probe_secs <= 0)
		return;
	for (unsigned i = 0; i < LARDER__PROBE_POINTS; i++) {
		unsigned k = LARDER__PROBE_POINTS - 1 - i;
		uint64_t entries = point_entries(w->top_room, k);
		double level = entries ? (double)w->fresh / (double)entries : MATURE_TURNS;
		level = level < MATURE_TURNS ? level : MATURE_TURNS;
		if (level < USE_TURNS || level < kept_level(m, (double)bytes[k]) ||
		    w->w_psecs[k] <= 0)
			break;
		/* SHARDS' scaling: a mini cache's hits x S are the full cache's.
		 * Not its hit ratio x the cache's reads: under skew a few hot keys
		 * in or out of the sample move the sampled request count, and the
		 * ratio with it, at every size (measured: up to 1.6x the exact
		 * slope). While steady the mini caches see one block of the
		 * sample's requests in a few (PROBE-P8 in pool/probe.c): their hits
		 * stand for seen / sampled as many, over the point's window. */
		double thin = w->w_psampled[k] > 0 && w->w_pseen[k] > w->w_psampled[k]
				      ? w->w_pseen[k] / w->w_psampled[k]
				      : 1;
		double per_count = thin * (double)w->every / w->w_psecs[k];
		m->last[m->n_last++] = (struct point){.lo = i ? (double)bytes[k + 1] : 0,
						      .x = (double)bytes[k],
						      .dy0 = w->w_hits[k] * per_count,
						      .ref = w->w_ppreads[k] / w->w_psecs[k],
						      .count = w->w_hits[k],
						      .pc0 = per_count,
						      .level = level,
						      .gen = m->gen};
	}
}

/*
 * POOL-M1: the mini caches restarted (a new generation): the points that
 * counted in the one that ended are kept, with their levels, and the
 * points kept before above them. Points that were still maturing are
 * dropped: a restart cancels their warm-up, and they never count. The
 * kept segments cover 0 to the largest kept point without a gap: the
 * ending generation's from 0 to its reach, and above it the earlier kept
 * ones, the first of which reaches below it (they covered it too).
 */
static void keep_counted(struct larder__pool_member *m)
{
	struct point keep[MAX_POINTS];
	unsigned n = 0;
	double reach = m->n_last ? m->last[m->n_last - 1].x : 0;
	for (unsigned i = 0; i < m->n_last; i++)
		keep[n++] = m->last[i];
	for (unsigned i = 0; i < m->n_kept && n < MAX_POINTS; i++)
		if (m->kept[i].x > reach)
			keep[n++] = m->kept[i];
	memcpy(m->kept, keep, n * sizeof *keep);
	m->n_kept = n;
	m->n_last = 0;
}

/* A point's sampled hits as a standard error of its segment's hits per
 * second: a count, known to within its square root and never to better
 * than one hit (a segment that saw none is not known to be flat: a sparse
 * sample, PROBE-P7 in pool/probe.c, sees few). 0 for a curve given through
 * the test seam. */
static double point_error(const struct curve *cv, const struct point *pt)
{
	return pt->pc0 * point_drift(cv, pt) * sqrt_pos(pt->count > 1 ? pt->count : 1);
}

/* The curve's hits per second at x bytes, between its points (from (0, 0);
 * x at most its last point). */
static double curve_at(const struct curve *cv, double x)
{
	double x0 = 0, y0 = 0;
	for (unsigned i = 0; i < cv->np; i++) {
		if (x <= cv->px[i])
			return y0 + (cv->py[i] - y0) * (x - x0) / (cv->px[i] - x0);
		x0 = cv->px[i];
		y0 = cv->py[i];
	}
	return y0;
}

/*
 * Appends pt to the curve, its segment counted from `from` bytes: its lo,
 * or above it where the curve's last point already covers part of it (a
 * kept point of another grid that straddles the largest point that
 * counts). Then what the segment adds above `from` is not known: it is
 * taken as the least of the segment's share of the bytes (the segment read
 * as even within itself) and what the segment has left over the points
 * that count between its lo and `from` (0 at least). The share alone would
 * count a working set's cliff below `from`, already in the points that
 * count, again above them (a cache that needs no memory would read a
 * positive marginal value: test_controller_kept_straddle_flat); the left
 * over alone reads what the points below `from` saw, on another stretch of
 * the stream, against it. On a concave curve the left over is at most what
 * the bytes past `from` add (the share at least: the points below `from`
 * are joined by chords, which lie under the curve), so the least of the
 * two, noise aside, never overstates it.
 */
static void curve_add(struct curve *cv, const struct point *pt, double from)
{
	double y = cv->np ? cv->py[cv->np - 1] : 0, add = seg_hits(cv, pt);
	if (from > pt->lo) {
		double share = add * (pt->x - from) / (pt->x - pt->lo);
		double left = add - (y - curve_at(cv, pt->lo));
		add = share < left ? share : left;
		add = add > 0 ? add : 0;
	}
	cv->px[cv->np] = pt->x;
	cv->py[cv->np] = y + add;
	cv->perr[cv->np] = point_error(cv, pt) / (pt->x - pt->lo);
	cv->np++;
}

static void curve_update(struct larder__pool_member *m)
{
	struct curve *cv = &m->curve;
	const struct window *w = &m->win;
	uint64_t bytes[LARDER__PROBE_POINTS];
	for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
		bytes[k] = point_bytes(m, k);
	cv->rate = m->fake ? m->fake_rate : w->w_secs > 0 ? w->w_reads / w->w_secs : 0;
	uint64_t gen = m->fake ? m->fake_gen : w->gen;
	if (gen != m->gen) {
		keep_counted(m);
		m->gen = gen;
	}
	mature_points(m, bytes);
	/* The curve: the points that count, then the kept ones above them, up
	 * to the current top (a point past it would bend the hull where the
	 * current points cannot correct it): the kept segments add what the
	 * bytes past the largest point that counts add, on top of what the
	 * cache's hits are now. */
	cv->np = 0;
	for (unsigned i = 0; i < m->n_last; i++)
		curve_add(cv, &m->last[i], m->last[i].lo);
	double top = (double)bytes[0] * 1.01;
	/* At most MAX_POINTS: kept points of re-centrings downwards may lie
	 * above the current ones (the largest are left out first). */
	for (unsigned i = 0; i < m->n_kept && cv->np < MAX_POINTS; i++) {
		double reach = cv->np ? cv->px[cv->np - 1] : 0;
		if (m->kept[i].x > reach && m->kept[i].x <= top)
			curve_add(cv, &m->kept[i], reach);
	}
	/* Valid once a point reaches past the target (it may take); known as
	 * soon as there is one (it may give, value_down). */
	cv->known = cv->np > 0;
	cv->valid = cv->known && cv->px[cv->np - 1] > (double)m->target;
	hull_of(cv);
}

/*
 * The noise of a slope measured at x, in hits per second per byte: that of
 * the segment around x (the last one past the largest point).
 */
static double value_noise(const struct curve *cv, double x)
{
	for (unsigned i = 0; i < cv->np; i++)
		if (x <= cv->px[i] || i + 1 == cv->np)
			return cv->perr[i];
	return 0;
}

/* Slope of the hull just above (up) or just below (!up) x, hits/s per byte. */
static double slope_at(const struct curve *cv, uint64_t bytes, int up)
{
	double x = (double)bytes;
	for (unsigned i = 0; i + 1 < cv->n; i++) {
		int inside = up ? (cv->x[i] <= x && x < cv->x[i + 1])
				: (cv->x[i] < x && x <= cv->x[i + 1]);
		if (inside)
			return (cv->y[i + 1] - cv->y[i]) / (cv->x[i + 1] - cv->x[i]);
	}
	return 0;
}

/* Bytes a member may still take (under its max) or give (over its min). */
static uint64_t room_up(const struct larder__pool_member *m)
{
	return m->state == M_ACTIVE && m->target < m->max_bytes ? m->max_bytes - m->target : 0;
}

static uint64_t room_down(const struct larder__pool_member *m)
{
	return m->state == M_ACTIVE && m->target > m->min_bytes ? m->target - m->min_bytes : 0;
}

/* The hull's hits per second at x bytes (flat past its last corner). */
static double hull_at(const struct curve *cv, double x)
{
	for (unsigned i = 0; i + 1 < cv->n; i++)
		if (x <= cv->x[i + 1])
			return cv->y[i] + (cv->y[i + 1] - cv->y[i]) * (x - cv->x[i]) /
						  (cv->x[i + 1] - cv->x[i]);
	return cv->n ? cv->y[cv->n - 1] : 0;
}

/*
 * The hull at x, continued past its last corner along its last segment.
 * Where a cache's points end below x (its estimate not yet valid, the
 * mini caches above still maturing), a concave curve's hits there are at
 * most that: an upper bound, so that what a donor would lose is never
 * underestimated, and a donor need not wait for its largest mini caches
 * to mature before it can give (a light cache's take longest).
 */
static double hull_at_most(const struct curve *cv, double x)
{
	if (cv->n < 2 || x <= cv->x[cv->n - 1])
		return hull_at(cv, x);
	double x0 = cv->x[cv->n - 2], y0 = cv->y[cv->n - 2];
	double x1 = cv->x[cv->n - 1], y1 = cv->y[cv->n - 1];
	return y1 + (y1 - y0) * (x - x1) / (x1 - x0);
}

/*
 * Weighted hits per second per byte of the next step up, or of the last
 * step down: secants over the step, not slopes at the target, so that a
 * step's value is exactly what the same step back would lose and every
 * move raises the pool's weighted hits on the curves it was decided on
 * (no cycle; see the header). A step down is valued on hull_at_most: the
 * same as hull_at on a valid curve, an upper bound on one only known.
 */
static double value_up(const struct larder__pool_member *m, uint64_t step)
{
	double t = (double)m->target, d = (double)(room_up(m) < step ? room_up(m) : step);
	return d > 0 ? m->cost * (hull_at(&m->curve, t + d) - hull_at(&m->curve, t)) / d : 0;
}

static double value_down(const struct larder__pool_member *m, uint64_t step)
{
	double t = (double)m->target, d = (double)(room_down(m) < step ? room_down(m) : step);
	return d > 0 ? m->cost * (hull_at_most(&m->curve, t) - hull_at_most(&m->curve, t - d)) / d
		     : 0;
}

/* May take? Needs an estimate past its target. May give? Some estimate (its
 * upper bound past its points: value_down), or no reads at all. */
static int may_take(const struct larder__pool_member *m)
{
	return m->curve.valid && room_up(m) > 0;
}

static int may_give(const struct larder__pool_member *m)
{
	return (m->curve.known || m->curve.rate < 1.0) && room_down(m) > 0;
}

static struct larder__pool_member *best_taker(larder_pool *p, uint64_t step, double *value)
{
	struct larder__pool_member *best = NULL;
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		if (!may_take(m))
			continue;
		double v = value_up(m, step);
		if (!best || v > *value) {
			best = m;
			*value = v;
		}
	}
	return best;
}

static struct larder__pool_member *best_giver(larder_pool *p, const struct larder__pool_member *not,
					      uint64_t step, double *value)
{
	struct larder__pool_member *best = NULL;
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		if (m == not || !may_give(m))
			continue;
		double v = m->curve.known ? value_down(m, step) : 0;
		if (!best || v < *value) {
			best = m;
			*value = v;
		}
	}
	return best;
}

/* Free budget with nobody gaining from it: to the member with the least,
 * below its max share. */
static struct larder__pool_member *smallest_taker(larder_pool *p)
{
	struct larder__pool_member *best = NULL;
	for (struct larder__pool_member *m = p->members; m; m = m->next)
		if (room_up(m) > 0 && (!best || m->target < best->target))
			best = m;
	return best;
}

static uint64_t min3(uint64_t a, uint64_t b, uint64_t c)
{
	uint64_t m = a < b ? a : b;
	return m < c ? m : c;
}

static void note_move(larder_pool *p, uint64_t bytes)
{
	p->moves++;
	p->moved_bytes += bytes;
}

/*
 * POOL-S1: is a stride of `bytes` from `from` to `to` worth it to its last
 * step too? Otherwise the same curves would send that step back at the
 * next pass: a stride that crosses a hull corner (a working set's cliff)
 * passes on its secant, which averages the steep part before the corner
 * with the flat part after it, and then the flat steps come back one by
 * one, each a reversal. The last step must pass the hysteresis test a
 * single step would.
 */
static int stride_end_pays(const larder_pool *p, const struct larder__pool_member *to,
			   const struct larder__pool_member *from, uint64_t bytes)
{
	if (bytes <= p->step)
		return 1;
	double u = (double)p->step, t = (double)to->target + (double)bytes;
	double f = (double)from->target - (double)bytes;
	double up = to->cost * (hull_at(&to->curve, t) - hull_at(&to->curve, t - u)) / u;
	double down = from->curve.known ? from->cost *
						  (hull_at_most(&from->curve, f + u) -
						   hull_at_most(&from->curve, f)) /
						  u
					: 0;
	return up > down * (1 + HYSTERESIS);
}

/* One move of step 3 (header) of `step` bytes, if it passes every test;
 * returns whether it moved. */
static int try_move(larder_pool *p, uint64_t step, double min_gain)
{
	double up = 0, down = 0;
	struct larder__pool_member *to = best_taker(p, step, &up);
	struct larder__pool_member *from = to ? best_giver(p, to, step, &down) : NULL;
	if (!from || up <= down * (1 + HYSTERESIS) || (up - down) * (double)step <= min_gain)
		return 0;
	/* And beyond the estimates' noise: NOISE_Z standard errors. */
	double su = to->cost * value_noise(&to->curve, (double)to->target + (double)step / 2);
	double sd = from->curve.known
			    ? from->cost * value_noise(&from->curve, (double)from->target - (double)step / 2)
			    : 0;
	if ((up - down) * (up - down) <= NOISE_Z * NOISE_Z * (su * su + sd * sd))
		return 0;
	/* The last step to a max or a min share is a partial one. */
	uint64_t bytes = min3(step, room_up(to), room_down(from));
	if (!stride_end_pays(p, to, from, bytes))
		return 0;
	from->target -= bytes;
	to->target += bytes;
	note_move(p, bytes);
	return 1;
}

/* POOL-S1: the stride after a pass. A pass that used all its steps with no
 * member reversing its direction doubles it (up to MAX_STRIDE); a reversal,
 * or a pass that found nothing to move, sets it back to 1. */
static void update_stride(larder_pool *p, unsigned moves)
{
	int reversed = 0;
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		int dir = m->target > m->pass_start ? 1 : m->target < m->pass_start ? -1 : 0;
		if (dir && m->last_dir && dir != m->last_dir)
			reversed = 1;
		if (dir)
			m->last_dir = dir;
	}
	if (reversed || !moves)
		p->stride = 1;
	else if (moves == MAX_STEPS && p->stride < MAX_STRIDE)
		p->stride *= 2;
}

/* Steps 2 and 3 of the header; returns the steps taken. */
static uint64_t decide(larder_pool *p)
{
	uint64_t steps = 0;
	double pool_rate = 0;
	for (struct larder__pool_member *m = p->members; m; m = m->next)
		if (m->state == M_ACTIVE && m->curve.valid)
			pool_rate += m->cost * m->curve.rate;
	double min_gain = MIN_GAIN * pool_rate;
	uint64_t left;
	while ((left = free_budget(p)) >= MIN_CACHE_BYTES) { /* not a rounding's crumbs */
		double up = 0;
		struct larder__pool_member *to = best_taker(p, p->step, &up);
		if (!to || up <= 0)
			to = smallest_taker(p);
		if (!to)
			break;
		uint64_t bytes = min3(p->step, left, room_up(to));
		to->target += bytes;
		note_move(p, bytes);
		steps++;
	}
	for (struct larder__pool_member *m = p->members; m; m = m->next)
		m->pass_start = m->target;
	/* POOL-S1: a stride of steps first; where that fails a test, one step. */
	unsigned moved = 0;
	while (moved < MAX_STEPS && ((p->stride > 1 && try_move(p, p->step * p->stride, min_gain)) ||
				     try_move(p, p->step, min_gain)))
		moved++;
	update_stride(p, moved);
	return steps + moved;
}

/* POOL-D1: does the count `got` differ from `expect` by more than the
 * fraction `tol` of it and three standard errors (a count's: its root)? */
static int differs(double got, double expect, double tol)
{
	double d = got > expect ? got - expect : expect - got;
	return d > tol * expect && d * d > 9.0 * (got > 1 ? got : 1);
}

/* POOL-D1: has m's load changed lately (its hit ratio, or its share of the
 * pool's reads: reads_s and reads_l, the short and long windows' sums)? */
static int load_changed(const struct larder__pool_member *m, double reads_s, double reads_l)
{
	const struct window *w = &m->win;
	if (w->w_reads < CHANGE_READS || w->w_lreads < CHANGE_READS)
		return 0;
	double ratio_l = w->w_lhits / w->w_lreads;
	double d = w->w_chits - ratio_l * w->w_reads, spread = ratio_l * (1 - ratio_l) * w->w_reads;
	d = d < 0 ? -d : d;
	if (d > CHANGE_HIT_RATIO * w->w_reads && d * d > 9.0 * (spread > 1 ? spread : 1))
		return 1;
	return reads_s > 0 && reads_l > 0 &&
	       differs(w->w_reads, w->w_lreads / reads_l * reads_s, CHANGE_RATE);
}

/* POOL-D1: after a pass's moves, who is steady; their probes are told. */
static void update_steady(larder_pool *p)
{
	double reads_s = 0, reads_l = 0;
	for (const struct larder__pool_member *m = p->members; m; m = m->next)
		if (m->state == M_ACTIVE) {
			reads_s += m->win.w_reads;
			reads_l += m->win.w_lreads;
		}
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		if (m->state != M_ACTIVE)
			continue;
		int changed = m->target != m->pass_from || load_changed(m, reads_s, reads_l);
		m->calm = changed ? 0 : m->calm < CALM_PASSES ? m->calm + 1 : CALM_PASSES;
		int steady = m->force_steady ? m->force_steady == 1 : m->calm >= CALM_PASSES;
		if (steady == m->steady)
			continue;
		m->steady = steady;
		/* Relaxed: a request to the probe (pool/probe.h). */
		atomic_store_explicit(&m->readings.want_steady, (uint64_t)steady, LARDER__RELAXED);
	}
}

/* One pass: estimates, decisions, the shrinks at once, the grows that fit. */
static uint64_t control_pass(larder_pool *p, uint64_t now_ns)
{
	p->passes++;
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		m->pass_from = m->target;
		if (m->state != M_ACTIVE)
			continue;
		window_update(m, now_ns);
		curve_update(m);
	}
	uint64_t steps = decide(p);
	update_steady(p);
	recentre_tops(p);
	apply_shrinks(p);
	complete_grows(p);
	return steps;
}

/* ---- The pool's thread ----------------------------------------------------- */

/* Waits on cv (a CLOCK_MONOTONIC one) for at most ns, with the lock held. */
static void timed_wait(larder_pool *p, pthread_cond_t *cv, uint64_t ns)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	uint64_t at = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec + ns;
	ts.tv_sec = (time_t)(at / 1000000000u);
	ts.tv_nsec = (long)(at % 1000000000u);
	pthread_cond_timedwait(cv, &p->lock, &ts);
}

static void *pool_main(void *arg)
{
	larder_pool *p = arg;
	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		uint64_t now_ns = larder__monotonic_ns();
		if (p->interval_ns && now_ns >= p->next_pass_ns) {
			control_pass(p, now_ns);
			p->next_pass_ns = now_ns + p->interval_ns;
		}
		int pending = apply_shrinks(p);
		pending |= complete_grows(p);
		struct larder__pool_member *debtor = pending ? largest_debtor(p) : NULL;
		if (debtor) {
			wait_giveback(p, debtor);
			continue;
		}
		uint64_t until_ns = p->interval_ns ? p->next_pass_ns - now_ns : IDLE_WAIT_NS;
		if (pending && until_ns > GIVEBACK_SLICE_NS)
			until_ns = GIVEBACK_SLICE_NS;
		timed_wait(p, &p->wake, until_ns);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* ---- Life cycle ------------------------------------------------------------ */

void larder__pool_ref(larder_pool *p)
{
	atomic_fetch_add_explicit(&p->refs, 1, LARDER__RELAXED); /* a count; A-PREF orders the end */
}

void larder__pool_unref(larder_pool *p)
{
	if (!p)
		return;
	/* R-PREF: release, every use of the pool before the count drops. */
	if (atomic_fetch_sub_explicit(&p->refs, 1, LARDER__RELEASE) != 1)
		return;
	/* A-PREF: pairs with R-PREF; no fence weaker than acquire orders the
	 * other holders' last uses before the free. */
	atomic_thread_fence(LARDER__ACQUIRE);
	pthread_cond_destroy(&p->released);
	pthread_cond_destroy(&p->unpinned);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

int larder_pool_create(larder_pool **out, const larder_pool_config *config)
{
	if (!out)
		return LARDER_EINVAL;
	*out = NULL;
	if (!config)
		return LARDER_EINVAL;
	larder_pool *p = larder__calloc(1, sizeof *p);
	if (!p)
		return LARDER_ENOMEM;
	p->budget = config->budget;
	p->step = p->budget / STEP_DIVISOR;
	p->stride = 1;
	p->slice = p->budget / SLICE_DIVISOR > BOUND_FLOOR ? p->budget / SLICE_DIVISOR : BOUND_FLOOR;
	if (p->step < MIN_CACHE_BYTES)
		p->step = MIN_CACHE_BYTES;
	p->interval_ns = config->interval_ms * 1000000u;
	atomic_store_explicit(&p->refs, 1, LARDER__RELAXED); /* not shared yet */
	int rc = LARDER_ENOMEM;
	pthread_condattr_t attr;
	if (pthread_mutex_init(&p->lock, NULL) != 0)
		goto fail_lock;
	if (pthread_condattr_init(&attr) != 0)
		goto fail_attr;
	if (pthread_condattr_setclock(&attr, CLOCK_MONOTONIC) != 0 ||
	    pthread_cond_init(&p->wake, &attr) != 0) {
		pthread_condattr_destroy(&attr);
		goto fail_attr;
	}
	if (pthread_cond_init(&p->released, &attr) != 0) {
		pthread_condattr_destroy(&attr);
		goto fail_released;
	}
	pthread_condattr_destroy(&attr);
	if (pthread_cond_init(&p->unpinned, NULL) != 0)
		goto fail_unpinned;
	if (pthread_create(&p->thread, NULL, pool_main, p) != 0) {
		rc = LARDER_ETHREAD;
		goto fail_thread;
	}
	*out = p;
	return LARDER_OK;

fail_thread:
	pthread_cond_destroy(&p->unpinned);
fail_unpinned:
	pthread_cond_destroy(&p->released);
fail_released:
	pthread_cond_destroy(&p->wake);
fail_attr:
	pthread_mutex_destroy(&p->lock);
fail_lock:
	free(p);
	return rc;
}

int larder_pool_close(larder_pool *p)
{
	if (!p)
		return LARDER_EINVAL;
	pthread_mutex_lock(&p->lock);
	if (p->closed || p->members) {
		pthread_mutex_unlock(&p->lock);
		return LARDER_ESTATE;
	}
	p->closed = 1;
	p->stop = 1;
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	pthread_join(p->thread, NULL);
	larder__pool_unref(p);
	return LARDER_OK;
}

/* ---- Members ------------------------------------------------------------------ */

static uint64_t share_bytes(const larder_pool *p, double share)
{
	uint64_t b = (uint64_t)(share * (double)p->budget);
	b = b > p->budget ? p->budget : b;
	return b < MIN_CACHE_BYTES ? MIN_CACHE_BYTES : b;
}

static void unlink_member(larder_pool *p, struct larder__pool_member *nm)
{
	struct larder__pool_member **at = &p->members;
	while (*at != nm)
		at = &(*at)->next;
	*at = nm->next;
	p->members_n--;
}

/* POOL-K3 for a newcomer: its min on top of the others' fits the budget. */
static int mins_fit(const larder_pool *p, uint64_t min_bytes)
{
	uint64_t sum = min_bytes;
	for (const struct larder__pool_member *m = p->members; m; m = m->next)
		if (counts(m))
			sum += m->min_bytes;
	return sum <= p->budget;
}

static int has_closing(const larder_pool *p)
{
	for (const struct larder__pool_member *m = p->members; m; m = m->next)
		if (m->state == M_CLOSING)
			return 1;
	return 0;
}

/* Whether another member has its first capacity but is not active yet (its
 * larder_open is starting its threads): it cannot be cut before it is, so
 * an open that needs its bytes waits for larder__pool_activate. A member
 * still in first_capacity has cap 0 (two of those never wait on each other). */
static int has_starting(const larder_pool *p, const struct larder__pool_member *nm)
{
	for (const struct larder__pool_member *m = p->members; m; m = m->next)
		if (m != nm && m->state == M_OPENING && m->cap)
			return 1;
	return 0;
}

/* The first capacity: as much of the target as POOL-K1 allows now, at least
 * MIN_CACHE_BYTES, waiting until deadline_ns for the others' give-back (a
 * member still to be cut counts: POOL-K4 may hold its next slice for its
 * writers) or for a closing cache's bytes. Nothing to wait for is
 * LARDER_EBUSY at once. */
static int first_capacity(larder_pool *p, struct larder__pool_member *nm, uint64_t deadline_ns,
			  uint64_t *cap)
{
	for (;;) {
		int shrinking = apply_shrinks(p);
		uint64_t limit = limit_of(p), others = committed_sum(p, nm);
		uint64_t left = unassigned(p, nm);
		uint64_t want = nm->target < left ? nm->target : left;
		uint64_t x = limit > others ? fit_capacity(limit - others, want) : 0;
		if (x >= MIN_CACHE_BYTES) {
			*cap = x;
			return LARDER_OK;
		}
		uint64_t now_ns = larder__monotonic_ns();
		struct larder__pool_member *debtor = largest_debtor(p);
		if (now_ns >= deadline_ns ||
		    (!debtor && !has_closing(p) && !has_starting(p, nm) && !shrinking))
			return LARDER_EBUSY;
		if (debtor) {
			wait_giveback(p, debtor);
		} else {
			uint64_t left_ns = deadline_ns - now_ns;
			timed_wait(p, &p->released,
				   left_ns < GIVEBACK_SLICE_NS ? left_ns : GIVEBACK_SLICE_NS);
		}
	}
}

int larder__pool_join(struct larder *c, const larder_config *cfg, uint64_t *capacity)
{
	larder_pool *p = cfg->pool;
	if (cfg->capacity_set)
		return LARDER_EINVAL;
	struct larder__pool_member *nm = larder__aligned_alloc(64, sizeof *nm);
	if (!nm)
		return LARDER_ENOMEM;
	memset(nm, 0, sizeof *nm);
	uint64_t deadline_ns = larder__monotonic_ns() + cfg->write_wait_ms * 1000000u;
	pthread_mutex_lock(&p->lock);
	int rc = LARDER_ESTATE;
	if (p->closed)
		goto fail;
	nm->pool = p;
	nm->cache = c;
	nm->state = M_OPENING;
	nm->min_share = cfg->pool_min_share;
	nm->max_share = cfg->pool_max_share;
	nm->cost = cfg->miss_cost;
	nm->policy = cfg->policy;
	nm->min_bytes = share_bytes(p, cfg->pool_min_share);
	nm->max_bytes = share_bytes(p, cfg->pool_max_share);
	rc = LARDER_EINVAL;
	if (!mins_fit(p, nm->min_bytes))
		goto fail;
	nm->next = p->members;
	p->members = nm;
	p->members_n++;
	replan(p, nm);
	rc = first_capacity(p, nm, deadline_ns, &nm->cap);
	nm->top = top_for(nm);
	/* Relaxed: the probe does not exist yet (larder__pool_probe_create). */
	atomic_store_explicit(&nm->readings.want_top, nm->top, LARDER__RELAXED);
	if (rc != LARDER_OK) {
		unlink_member(p, nm);
		replan(p, NULL);
		goto fail;
	}
	larder__pool_ref(p);
	c->pool = nm;
	*capacity = nm->cap;
	pthread_mutex_unlock(&p->lock);
	return LARDER_OK;

fail:
	pthread_mutex_unlock(&p->lock);
	free(nm);
	return rc;
}

void larder__pool_activate(struct larder *c)
{
	larder_pool *p = c->pool->pool;
	pthread_mutex_lock(&p->lock);
	c->pool->state = M_ACTIVE;
	pthread_cond_signal(&p->wake); /* its grow, if its first capacity fell short */
	pthread_cond_broadcast(&p->released); /* opens waiting to cut it (has_starting) */
	pthread_mutex_unlock(&p->lock);
}

void larder__pool_detach(struct larder *c)
{
	struct larder__pool_member *m = c->pool;
	larder_pool *p = m->pool;
	pthread_mutex_lock(&p->lock);
	while (m->pins)
		pthread_cond_wait(&p->unpinned, &p->lock);
	m->frozen = committed(m);
	m->state = M_CLOSING;
	m->target = 0;
	replan(p, NULL);
	apply_shrinks(p);
	pthread_mutex_unlock(&p->lock);
}

void larder__pool_release(struct larder__pool_member *m)
{
	if (!m)
		return;
	larder_pool *p = m->pool;
	pthread_mutex_lock(&p->lock);
	unlink_member(p, m);
	replan(p, NULL);
	apply_shrinks(p);
	pthread_cond_signal(&p->wake); /* its bytes are back: grows may go on */
	pthread_cond_broadcast(&p->released); /* and opens (first_capacity) */
	pthread_mutex_unlock(&p->lock);
	free(m);
	larder__pool_unref(p);
}

int larder__pool_probe_create(struct larder *c, unsigned shard,
			      const struct larder__policy_host *host, struct larder__probe **probe)
{
	struct larder__pool_member *m = c->pool;
	*probe = NULL;
	/* Estimates are for the controller: none without it, none for a cache
	 * whose size is fixed (min share = max share); one per cache, on shard
	 * 0, whose keys are a sample of the cache's (PROBE-P9 in probe.c). */
	if (!m || !m->pool->interval_ns || m->min_bytes >= m->max_bytes || shard != 0)
		return LARDER_OK;
	struct larder__probe_setup setup = {
		.out = &m->readings,
		.policy = m->policy,
		.top_bytes = m->top,
		.ghost_bytes = ghost_bytes(m->pool),
		.shards = c->shard_count,
	};
	int rc = larder__probe_create(&setup, host, probe);
	if (rc == LARDER_OK)
		c->sample_marks = 1; /* PROBE-P6: before any write (the cache is opening) */
	return rc;
}

/* ---- Statistics ---------------------------------------------------------------- */

static const char *const pool_stat_names[LARDER_POOL_STAT_COUNT] = {
	[LARDER_POOL_BUDGET_BYTES] = "budget_bytes",
	[LARDER_POOL_OVERSHOOT_BOUND] = "overshoot_bound",
	[LARDER_POOL_CACHES] = "caches",
	[LARDER_POOL_ASSIGNED_BYTES] = "assigned_bytes",
	[LARDER_POOL_USED_BYTES] = "used_bytes",
	[LARDER_POOL_MOVES] = "moves",
	[LARDER_POOL_MOVED_BYTES] = "moved_bytes",
	[LARDER_POOL_PASSES] = "passes",
	[LARDER_POOL_CONTROLLER_CPU_NS] = "controller_cpu_ns",
};

static const char *const cache_stat_names[LARDER_POOL_CACHE_STAT_COUNT] = {
	[LARDER_POOL_CACHE_CAPACITY_BYTES] = "capacity_bytes",
	[LARDER_POOL_CACHE_TARGET_BYTES] = "target_bytes",
	[LARDER_POOL_CACHE_USED_BYTES] = "used_bytes",
	[LARDER_POOL_CACHE_HITS] = "hits",
	[LARDER_POOL_CACHE_MISSES] = "misses",
	[LARDER_POOL_CACHE_REQUESTS_PER_S] = "requests_per_s",
	[LARDER_POOL_CACHE_MARGINAL_HITS_PER_MIB] = "marginal_hits_per_mib",
	[LARDER_POOL_CACHE_GHOST_HITS_PER_MIB] = "ghost_hits_per_mib",
	[LARDER_POOL_CACHE_MISS_COST] = "miss_cost",
	[LARDER_POOL_CACHE_MIN_SHARE] = "min_share",
	[LARDER_POOL_CACHE_MAX_SHARE] = "max_share",
	[LARDER_POOL_CACHE_SAMPLE_EVERY] = "sample_every",
	[LARDER_POOL_CACHE_PROBE_NS] = "probe_ns",
	[LARDER_POOL_CACHE_PROBE_SIM_NS] = "probe_sim_ns",
	[LARDER_POOL_CACHE_SAMPLED_REQUESTS] = "sampled_requests",
};

const char *larder_pool_stat_name(enum larder_pool_stat stat)
{
	return (unsigned)stat < LARDER_POOL_STAT_COUNT ? pool_stat_names[stat] : NULL;
}

const char *larder_pool_cache_stat_name(enum larder_pool_cache_stat stat)
{
	return (unsigned)stat < LARDER_POOL_CACHE_STAT_COUNT ? cache_stat_names[stat] : NULL;
}

static uint64_t used_of(struct larder *c)
{
	uint64_t v[LARDER_STAT_USED_BYTES + 1];
	return larder_stats(c, v, LARDER_STAT_USED_BYTES + 1) == LARDER_OK
		       ? v[LARDER_STAT_USED_BYTES]
		       : 0;
}

static uint64_t thread_cpu_ns(pthread_t thread)
{
	clockid_t clock;
	struct timespec ts;
	if (pthread_getcpuclockid(thread, &clock) != 0 || clock_gettime(clock, &ts) != 0)
		return 0;
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int larder_pool_stats(larder_pool *p, uint64_t *values, size_t count)
{
	uint64_t v[LARDER_POOL_STAT_COUNT] = { 0 };
	if (!p || (!values && count))
		return LARDER_EINVAL;
	pthread_mutex_lock(&p->lock);
	v[LARDER_POOL_BUDGET_BYTES] = p->budget;
	v[LARDER_POOL_OVERSHOOT_BOUND] = limit_of(p) - p->budget;
	for (struct larder__pool_member *m = p->members; m; m = m->next) {
		v[LARDER_POOL_CACHES]++;
		if (m->state == M_CLOSING)
			continue;
		v[LARDER_POOL_ASSIGNED_BYTES] += m->cap;
		if (m->state == M_ACTIVE)
			v[LARDER_POOL_USED_BYTES] += used_of(m->cache);
	}
	v[LARDER_POOL_MOVES] = p->moves;
	v[LARDER_POOL_MOVED_BYTES] = p->moved_bytes;
	v[LARDER_POOL_PASSES] = p->passes;
	v[LARDER_POOL_CONTROLLER_CPU_NS] = p->closed ? 0 : thread_cpu_ns(p->thread);
	pthread_mutex_unlock(&p->lock);
	size_t n = count < LARDER_POOL_STAT_COUNT ? count : LARDER_POOL_STAT_COUNT;
	if (n) /* values is NULL in an empty request; memcpy must not see it */
		memcpy(values, v, n * sizeof *v);
	for (size_t i = LARDER_POOL_STAT_COUNT; i < count; i++)
		values[i] = 0;
	return LARDER_OK;
}

static struct larder__pool_member *find_active(larder_pool *p, larder *c)
{
	for (struct larder__pool_member *m = p->members; m; m = m->next)
		if (m->cache == c && m->state == M_ACTIVE)
			return m;
	return NULL;
}

int larder_pool_cache_stats(larder_pool *p, larder *c, double *values, size_t count)
{
	double v[LARDER_POOL_CACHE_STAT_COUNT] = { 0 };
	if (!p || !c || (!values && count))
		return LARDER_EINVAL;
	pthread_mutex_lock(&p->lock);
	struct larder__pool_member *m = find_active(p, c);
	if (!m) {
		pthread_mutex_unlock(&p->lock);
		return LARDER_EINVAL;
	}
	uint64_t s[LARDER_STAT_USED_BYTES + 1];
	if (larder_stats(c, s, LARDER_STAT_USED_BYTES + 1) == LARDER_OK) {
		v[LARDER_POOL_CACHE_USED_BYTES] = (double)s[LARDER_STAT_USED_BYTES];
		v[LARDER_POOL_CACHE_HITS] = (double)s[LARDER_STAT_HITS];
		v[LARDER_POOL_CACHE_MISSES] = (double)s[LARDER_STAT_MISSES];
	}
	v[LARDER_POOL_CACHE_CAPACITY_BYTES] = (double)m->cap;
	v[LARDER_POOL_CACHE_TARGET_BYTES] = (double)m->target;
	v[LARDER_POOL_CACHE_REQUESTS_PER_S] = m->curve.rate;
	/* At its most (the curve's last point) only the slope below is known. */
	v[LARDER_POOL_CACHE_MARGINAL_HITS_PER_MIB] =
		slope_at(&m->curve, m->cap, m->cap < m->max_bytes) * MIB;
	if (m->win.w_probe_secs > 0) /* the ghost holds the sample's share (x S) */
		v[LARDER_POOL_CACHE_GHOST_HITS_PER_MIB] = m->win.w_ghost * (double)m->win.every /
							  m->win.w_probe_secs /
							  ((double)ghost_bytes(p) / MIB);
	v[LARDER_POOL_CACHE_MISS_COST] = m->cost;
	v[LARDER_POOL_CACHE_MIN_SHARE] = m->min_share;
	v[LARDER_POOL_CACHE_MAX_SHARE] = m->max_share;
	/* Relaxed: a count (pool/probe.h). */
	v[LARDER_POOL_CACHE_SAMPLE_EVERY] =
		(double)atomic_load_explicit(&m->readings.sample_every, LARDER__RELAXED);
	v[LARDER_POOL_CACHE_PROBE_NS] =
		(double)atomic_load_explicit(&m->readings.own_ns, LARDER__RELAXED);
	v[LARDER_POOL_CACHE_PROBE_SIM_NS] =
		(double)atomic_load_explicit(&m->readings.sim_ns, LARDER__RELAXED);
	v[LARDER_POOL_CACHE_SAMPLED_REQUESTS] =
		(double)atomic_load_explicit(&m->readings.sampled, LARDER__RELAXED);
	pthread_mutex_unlock(&p->lock);
	size_t n = count < LARDER_POOL_CACHE_STAT_COUNT ? count : LARDER_POOL_CACHE_STAT_COUNT;
	if (n) /* values is NULL in an empty request; memcpy must not see it */
		memcpy(values, v, n * sizeof *v);
	for (size_t i = LARDER_POOL_CACHE_STAT_COUNT; i < count; i++)
		values[i] = 0;
	return LARDER_OK;
}

/* ---- Test seams ------------------------------------------------------------------ */

int larder__test_pool_set_curve(larder_pool *p, larder *c, const double *hits_per_s,
				double requests_per_s)
{
	pthread_mutex_lock(&p->lock);
	struct larder__pool_member *m = find_active(p, c);
	if (m) {
		m->fake = hits_per_s != NULL;
		if (hits_per_s)
			memcpy(m->fake_hits, hits_per_s, sizeof m->fake_hits);
		m->fake_rate = requests_per_s;
		curve_update(m);
	}
	pthread_mutex_unlock(&p->lock);
	return m ? 0 : -1;
}

int larder__test_pool_set_reach(larder_pool *p, larder *c, uint64_t bytes, int restart)
{
	pthread_mutex_lock(&p->lock);
	struct larder__pool_member *m = find_active(p, c);
	if (m) {
		m->fake_reach = bytes;
		m->fake_gen += restart != 0;
		curve_update(m);
	}
	pthread_mutex_unlock(&p->lock);
	return m ? 0 : -1;
}

int larder__test_pool_feed(larder_pool *p, larder *c, const struct larder__test_pool_feed *f)
{
	pthread_mutex_lock(&p->lock);
	struct larder__pool_member *m = find_active(p, c);
	if (m) {
		struct larder__probe_readings *r = &m->readings;
		uint64_t seq = larder__probe_write_begin(r);
		/* Relaxed: counts, as the probe stores them (pool/probe.h). */
		atomic_store_explicit(&r->generation, f->generation, LARDER__RELAXED);
		atomic_store_explicit(&r->sample_every, f->sample_every, LARDER__RELAXED);
		atomic_store_explicit(&r->top_bytes, f->top_bytes, LARDER__RELAXED);
		atomic_store_explicit(&r->top_room, f->top_room, LARDER__RELAXED);
		atomic_store_explicit(&r->fresh, f->fresh, LARDER__RELAXED);
		atomic_store_explicit(&r->sampled, f->sampled, LARDER__RELAXED);
		atomic_store_explicit(&r->seen, f->sampled, LARDER__RELAXED);
		atomic_store_explicit(&r->arrived, f->sampled, LARDER__RELAXED);
		for (unsigned k = 0; k < LARDER__PROBE_POINTS; k++)
			atomic_store_explicit(&r->hits[k], f->hits[k], LARDER__RELAXED);
		larder__probe_write_end(r, seq);
	}
	pthread_mutex_unlock(&p->lock);
	return m ? 0 : -1;
}

int larder__test_pool_read_minis(const struct larder__probe_readings *p, uint64_t *fresh,
				 uint64_t *hits)
{
	struct reading r;
	if (!read_minis(p, &r))
		return 0;
	*fresh = r.fresh;
	memcpy(hits, r.hits, sizeof r.hits);
	return 1;
}

uint64_t larder__test_pool_step_at(larder_pool *p, uint64_t now_ns)
{
	pthread_mutex_lock(&p->lock);
	uint64_t steps = control_pass(p, now_ns);
	pthread_cond_signal(&p->wake);
	pthread_mutex_unlock(&p->lock);
	return steps;
}

uint64_t larder__test_pool_step(larder_pool *p)
{
	return larder__test_pool_step_at(p, larder__monotonic_ns());
}

int larder__test_pool_steady(larder_pool *p, larder *c)
{
	pthread_mutex_lock(&p->lock);
	struct larder__pool_member *m = find_active(p, c);
	int steady = m ? m->steady : -1;
	pthread_mutex_unlock(&p->lock);
	return steady;
}

int larder__test_pool_force_steady(larder_pool *p, larder *c, int mode, uint64_t *seen,
				   uint64_t *through)
{
	pthread_mutex_lock(&p->lock);
	struct larder__pool_member *m = find_active(p, c);
	if (m) {
		m->force_steady = mode;
		if (mode) {
			m->steady = mode == 1;
			/* Relaxed: a request to the probe (pool/probe.h). */
			atomic_store_explicit(&m->readings.want_steady, (uint64_t)m->steady,
					      LARDER__RELAXED);
		}
		/* Relaxed: counts (pool/probe.h). */
		*seen = atomic_load_explicit(&m->readings.seen, LARDER__RELAXED);
		*through = atomic_load_explicit(&m->readings.sampled, LARDER__RELAXED);
	}
	pthread_mutex_unlock(&p->lock);
	return m ? 0 : -1;
}

int larder__test_pool_arrived(larder_pool *p, larder *c, uint64_t *arrived,
			      uint64_t *sample_every)
{
	pthread_mutex_lock(&p->lock);
	struct larder__pool_member *m = find_active(p, c);
	if (m) {
		/* Relaxed: counts and a setting (pool/probe.h). */
		*arrived = atomic_load_explicit(&m->readings.arrived, LARDER__RELAXED);
		*sample_every = atomic_load_explicit(&m->readings.sample_every, LARDER__RELAXED);
	}
	pthread_mutex_unlock(&p->lock);
	return m && c->sample_marks ? 0 : -1;
}

int larder__test_pool_ghost_hits(larder_pool *p, larder *c, uint64_t *ghost_hits)
{
	pthread_mutex_lock(&p->lock);
	struct larder__pool_member *m = find_active(p, c);
	if (m) /* Relaxed: a count (pool/probe.h). */
		*ghost_hits = atomic_load_explicit(&m->readings.ghost_hits, LARDER__RELAXED);
	pthread_mutex_unlock(&p->lock);
	return m && c->sample_marks ? 0 : -1;
}

uint64_t larder__test_pool_point_bytes(larder_pool *p, larder *c, unsigned k)
{
	pthread_mutex_lock(&p->lock);
	struct larder__pool_member *m = find_active(p, c);
	uint64_t b = 0;
	if (m && k < LARDER__PROBE_POINTS) /* the sizes of a curve given by the seam */
		b = m->max_bytes / 1024 * larder__probe_scale[k] +
		    m->max_bytes % 1024 * larder__probe_scale[k] / 1024;
	pthread_mutex_unlock(&p->lock);
	return b;
}
