/*
 * poolbench.c - `larder-bench --pool[=PARTS]`: several caches in one
 * memory budget (the pool of larder.h) against fixed splits.
 *
 * PARTS, comma-separated (all by default):
 *   estimators  how well each cache's marginal value is estimated: one
 *               cache pinned at 32 MiB of a 64 MiB pool, driven with a
 *               uniform or Zipf stream; the pool's two estimates (mini
 *               simulations, ghost hits) of the hits one more MiB brings,
 *               per request, against the exact value from larder_sim on the
 *               same stream (default policy and LRU);
 *   phases      Ehcache's ARC demonstration at this machine's scale: two
 *               caches whose working sets (uniform keys) are each 0.75 of a
 *               1 GiB pool; phases both (2 units), cache_0 heavy (10), both
 *               (2), cache_1 heavy (10), twice (a unit is 2 s: 96 s a run,
 *               after a 10 s warm-up with both used, not counted); a heavy
 *               phase sends 90% of the reads to one cache; a miss waits
 *               20 us (a simulated back-end fetch: clock_nanosleep, timer
 *               slack 1 us; the waits measured are printed) and then puts
 *               the value. 8 worker threads. The controller against a fixed
 *               50/50 split and a sweep of static splits (20/80, 35/65,
 *               65/35, 80/20: the best one after the fact);
 *               per phase: hit ratio per cache, throughput, capacity per
 *               cache; SVG charts of capacity and throughput over time;
 *   ten         ten caches of different working sets, skews, value sizes,
 *               request shares and miss costs in a 256 MiB pool, one driver
 *               thread, no waiting: weighted misses (sum of miss cost x
 *               misses) of an equal split, a split proportional to each
 *               cache's requests (Ehcache's usage rule), the controller, and
 *               the best static split computed offline from each cache's
 *               exact miss-ratio curve (larder_sim on the same streams,
 *               dynamic programming over 1/256 of the budget); plus caches
 *               outside any pool at the equal split (pooling alone must
 *               change nothing); the controller's cost: its thread's CPU
 *               and its probes' sampled time on the maintainers;
 *               --rounds rounds, medians and min..max;
 *   ten-controller  the controller's rounds of `ten` alone (not in the
 *               default set), with their cost round by round;
 *   phases-controller  the controller's run of `phases` alone (not in the
 *               default set): its per-phase figures and settling, no charts;
 *   phases-rounds  the controller and the fixed 50/50 split of `phases`,
 *               --rounds rounds (not in the default set): reads and misses
 *               per read against the fixed split, settling; medians;
 *   shift       the ten caches under the controller, then one cache's
 *               working set grows 4x: how long until its capacity settles
 *               and its hit ratio recovers; SVG chart.
 * Every sample of every run also sums the caches' used bytes (each read
 * on its own, so only a sampled view; tests/stress/stress_pool.c checks the
 * bound soundly) against budget + the pool's overshoot bound.
 * --pool-unit-ms sets the phases' unit (default 2000). Charts go to the
 * current directory: pool-capacity.svg, pool-throughput.svg, pool-shift.svg.
 */
#define _GNU_SOURCE
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <time.h>

#include "bench.h"
#include "poolwork.h"
#include "svgchart.h"

#define MIB (1024.0 * 1024.0)
#define GIB (1024.0 * MIB)

/* ---- Common -------------------------------------------------------------- */

struct spec {
	const char *name;
	uint64_t keys;
	double theta; /* 0: uniform */
	size_t value;  /* bytes; with a 16-byte key and header, a whole slot */
	double share;  /* of the requests */
	double cost;   /* of a miss */
};

static double bound_worst; /* the largest sampled used sum over budget + bound */
static _Atomic uint64_t put_failures; /* puts after a miss that failed (printed) */
static _Atomic int put_failure_rc;     /* the last one's result */

static void count_put(int rc)
{
	if (rc == LARDER_OK)
		return;
	atomic_fetch_add_explicit(&put_failures, 1, memory_order_relaxed);
	atomic_store_explicit(&put_failure_rc, rc, memory_order_relaxed);
}

static void close_pool(larder_pool *pool)
{
	int rc = larder_pool_close(pool);
	if (rc != LARDER_OK)
		fprintf(stderr, "larder-bench: larder_pool_close: %s\n", larder_strerror(rc));
}

static int make_pool(larder_pool **out, uint64_t budget, uint64_t interval_ms)
{
	larder_pool_config *pc = NULL;
	int rc = larder_pool_config_create(&pc);
	if (rc == LARDER_OK && (rc = larder_pool_config_set_budget(pc, budget)) == LARDER_OK &&
	    (rc = larder_pool_config_set_interval_ms(pc, interval_ms)) == LARDER_OK)
		rc = larder_pool_create(out, pc);
	larder_pool_config_destroy(pc);
	if (rc != LARDER_OK)
		fprintf(stderr, "larder-bench: pool: %s\n", larder_strerror(rc));
	return rc;
}

/* A cache in pool (shares, cost), or alone with `capacity` when pool is NULL. */
static larder *make_cache(larder_pool *pool, double min_share, double max_share, double cost,
			  uint64_t capacity, enum larder_policy policy, uint64_t expected,
			  uint64_t seed)
{
	larder_config *cfg = NULL;
	larder *c = NULL;
	int rc = larder_config_create(&cfg);
	if (rc == LARDER_OK)
		rc = pool ? larder_config_set_pool(cfg, pool) : larder_config_set_capacity(cfg, capacity);
	if (rc == LARDER_OK && pool)
		rc = larder_config_set_pool_shares(cfg, min_share, max_share);
	if (rc == LARDER_OK && pool)
		rc = larder_config_set_miss_cost(cfg, cost);
	if (rc == LARDER_OK)
		rc = larder_config_set_policy(cfg, policy);
	if (rc == LARDER_OK)
		rc = larder_config_set_expected_entries(cfg, expected);
	if (rc == LARDER_OK)
		rc = larder_config_set_hash_seed(cfg, seed);
	if (rc == LARDER_OK)
		rc = larder_open(&c, cfg);
	larder_config_destroy(cfg);
	if (rc != LARDER_OK)
		fprintf(stderr, "larder-bench: open: %s\n", larder_strerror(rc));
	return c;
}

static void pool_figures(larder_pool *pool, larder *c, double *v)
{
	if (larder_pool_cache_stats(pool, c, v, LARDER_POOL_CACHE_STAT_COUNT) != LARDER_OK)
		memset(v, 0, sizeof(double) * LARDER_POOL_CACHE_STAT_COUNT);
}

static uint64_t cache_stat(larder *c, enum larder_stat s)
{
	uint64_t v[LARDER_STAT_COUNT];
	return larder_stats(c, v, LARDER_STAT_COUNT) == LARDER_OK ? v[s] : 0;
}

/* A sampled view of the bound: the caches' used bytes, summed. */
static void check_bound(larder_pool *pool)
{
	uint64_t v[LARDER_POOL_STAT_COUNT];
	if (!pool || larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT) != LARDER_OK)
		return;
	double r = (double)v[LARDER_POOL_USED_BYTES] /
		   (double)(v[LARDER_POOL_BUDGET_BYTES] + v[LARDER_POOL_OVERSHOOT_BOUND]);
	bound_worst = r > bound_worst ? r : bound_worst;
}

static double peak_rss_gib(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_SELF, &ru) == 0 ? (double)ru.ru_maxrss * 1024.0 / GIB : 0;
}

static double seconds_since(uint64_t t0_ns)
{
	return (double)(lb_now_ns() - t0_ns) / 1e9;
}

/* Get, and on a miss put: one request of a look-aside cache. Returns 1 on a hit. */
static int request(larder *c, const uint8_t *key, const uint8_t *value, size_t value_len,
		   uint8_t *buf, size_t buf_len)
{
	size_t len;
	if (larder_get(c, key, PW_KEY_BYTES, buf, buf_len, &len) == LARDER_OK)
		return 1;
	count_put(larder_put(c, key, PW_KEY_BYTES, value, value_len, LARDER_TTL_DEFAULT));
	return 0;
}

/* ---- estimators ------------------------------------------------------------ */

#define EST_BUDGET ((uint64_t)64 << 20)
#define EST_VALUE 480u /* a 512-byte slot */
#define EST_WARM 3000000u
#define EST_COUNT 3000000u

static const struct {
	const char *name;
	uint64_t keys;
	double theta;
} est_loads[] = {
	{ "uniform, 2x", 131072, 0 },
	{ "zipf 0.6, 4x", 262144, 0.6 },
	{ "zipf 0.8, 4x", 262144, 0.8 },
	{ "zipf 0.9, 1.5x", 98304, 0.9 },
	{ "zipf 0.99, 8x", 524288, 0.99 },
};

static void estimators(const struct lb_config *cfg)
{
	static const enum larder_policy policies[] = { LARDER_POLICY_DEFAULT, LARDER_POLICY_LRU };
	uint8_t key[PW_KEY_BYTES], value[EST_VALUE] = { 0 }, buf[EST_VALUE];
	printf("\n## Estimators: extra hits per request per MiB at 32 MiB of a 64 MiB pool\n\n");
	printf("exact: larder_sim on the same stream (same requests, same policy code), "
	       "(H(c + 4 MiB) - H(c - 4 MiB)) / 8 MiB at c = 32 MiB; segment: the exact slope "
	       "over the mini caches' grid segment above c, (H(40.3 MiB) - H(32 MiB)) / 8.3 MiB, "
	       "what the mini caches estimate; ghost exact: (H(c + 1 MiB) - H(c)) / 1 MiB, "
	       "the span its ghost covers\n\n");
	printf("| workload (working set / cache) | policy | exact | segment | mini simulations | "
	       "/ exact | / segment | ghost exact | ghost hits | / ghost exact |\n"
	       "|---|---|---|---|---|---|---|---|---|---|\n");
	double err_mini = 0, err_seg = 0, err_ghost = 0;
	unsigned cells = 0;
	for (size_t w = 0; w < sizeof est_loads / sizeof est_loads[0]; w++) {
		for (size_t pi = 0; pi < 2; pi++) {
			larder_pool *pool;
			if (make_pool(&pool, EST_BUDGET, 100) != LARDER_OK)
				return;
			/* c may grow (max 1) but d's min holds it at half: its curve goes
			 * past its capacity, and nothing moves. */
			larder *c = make_cache(pool, 0.5, 1, 1, 0, policies[pi], 65536, cfg->seed);
			larder *d = make_cache(pool, 0.5, 0.5, 1, 0, LARDER_POLICY_DEFAULT, 1024,
					       cfg->seed);
			if (!c || !d)
				return;
			uint64_t cap = EST_BUDGET / 2, slot = pw_slot_bytes(c, EST_VALUE);
			struct pw_stream proto, s;
			pw_stream_init(&proto, est_loads[w].keys, est_loads[w].theta, cfg->seed + w);
			s = proto;
			for (uint64_t i = 0; i < EST_WARM + EST_COUNT; i++) {
				pw_key(key, 0, pw_next(&s));
				(void)request(c, key, value, EST_VALUE, buf, sizeof buf);
			}
			lb_sleep_ms(150); /* one more controller pass over the last requests */
			double v[LARDER_POOL_CACHE_STAT_COUNT];
			pool_figures(pool, c, v);
			double rps = v[LARDER_POOL_CACHE_REQUESTS_PER_S];
			double mini = rps > 0 ? v[LARDER_POOL_CACHE_MARGINAL_HITS_PER_MIB] / rps : 0;
			double ghost = rps > 0 ? v[LARDER_POOL_CACHE_GHOST_HITS_PER_MIB] / rps : 0;
			larder_close(c);
			larder_close(d);
			close_pool(pool);
			/* The grid point above c: EST_BUDGET x 645 / 1024 (pool/probe.c). */
			const uint64_t seg_end = EST_BUDGET / 1024 * 645;
			const uint64_t sizes[5] = { cap - (4u << 20), cap, cap + (1u << 20),
						    cap + (4u << 20), seg_end };
			uint64_t hits[5];
			if (pw_mrc(policies[pi], &proto, slot, sizes, 5, EST_WARM, EST_COUNT, hits) != 0)
				return;
			double exact = (double)(hits[3] - hits[0]) / 8.0 / EST_COUNT;
			double seg = (double)(hits[4] - hits[1]) / ((double)(seg_end - cap) / MIB) /
				     EST_COUNT;
			double gexact = (double)(hits[2] - hits[1]) / 1.0 / EST_COUNT;
			printf("| %s | %s | %.5f | %.5f | %.5f | %.2f | %.2f | %.5f | %.5f | %.2f |\n",
			       est_loads[w].name, pi ? "LRU" : "default", exact, seg, mini,
			       exact > 0 ? mini / exact : 0, seg > 0 ? mini / seg : 0, gexact, ghost,
			       gexact > 0 ? ghost / gexact : 0);
			if (exact > 0 && gexact > 0 && seg > 0) {
				err_mini += fabs(mini / exact - 1);
				err_seg += fabs(mini / seg - 1);
				err_ghost += fabs(ghost / gexact - 1);
				cells++;
			}
		}
	}
	if (cells)
		printf("\nmean |ratio - 1|: mini simulations %.2f against the exact slope, %.2f "
		       "against their segment's; ghost %.2f (%u cells)\n",
		       err_mini / cells, err_seg / cells, err_ghost / cells, cells);
}

/* ---- phases (Ehcache's demonstration) ------------------------------------------ */

#define PH_BUDGET ((uint64_t)1 << 30)
#define PH_VALUE 992u /* a 1 KiB slot */
#define PH_KEYS 786432u /* 0.75 GiB of 1 KiB slots */
#define PH_THREADS 8u
#define PH_MISS_NS 20000u
#define PH_SAMPLE_MS 250u
#define PH_HEAVY 0.9
#define PH_UNITS 48u
#define PH_WARM_MS 10000u /* both caches used, before the phases: not counted */
#define PH_MAX_SAMPLES 4096u

static const struct {
	const char *name;
	unsigned from, to; /* in units */
	double to_cache0;  /* share of reads to cache 0 */
} phases[] = {
	{ "both", 0, 2, 0.5 },      { "heavy0", 2, 12, PH_HEAVY },  { "both", 12, 14, 0.5 },
	{ "heavy1", 14, 24, 1 - PH_HEAVY }, { "both", 24, 26, 0.5 }, { "heavy0", 26, 36, PH_HEAVY },
	{ "both", 36, 38, 0.5 },    { "heavy1", 38, 48, 1 - PH_HEAVY },
};
#define PH_PHASES (sizeof phases / sizeof phases[0])

struct ph_counts {
	_Atomic uint64_t ops, hits[2], misses[2], wait_ns, waits;
} __attribute__((aligned(64)));

struct ph_run {
	larder *c[2];
	uint64_t t0_ns, unit_ns;
	atomic_int stop;
	struct ph_counts counts[PH_THREADS];
	uint64_t seed;
};

struct ph_worker {
	pthread_t thread;
	struct ph_run *run;
	unsigned id;
};

static double phase_share(const struct ph_run *r)
{
	uint64_t now = lb_now_ns();
	if (now < r->t0_ns)
		return 0.5; /* the warm-up: both used */
	uint64_t unit = (now - r->t0_ns) / r->unit_ns;
	for (size_t i = 0; i < PH_PHASES; i++)
		if (unit < phases[i].to)
			return phases[i].to_cache0;
	return 0.5;
}

static void *ph_worker_main(void *arg)
{
	struct ph_worker *w = arg;
	struct ph_run *r = w->run;
	struct ph_counts *n = &r->counts[w->id];
	uint64_t rng = lb_mix(r->seed + 77u * (w->id + 1)) | 1;
	uint8_t key[PW_KEY_BYTES], value[PH_VALUE] = { 0 }, buf[PH_VALUE];
	prctl(PR_SET_TIMERSLACK, 1000UL); /* the simulated fetch waits 20 us, not 70 */
	const struct timespec fetch = { 0, PH_MISS_NS };
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		double share = phase_share(r);
		for (unsigned i = 0; i < 64; i++) {
			unsigned which = pw_unit(&rng) < share ? 0 : 1;
			pw_key(key, which, (uint64_t)(pw_unit(&rng) * PH_KEYS));
			size_t len;
			/* Relaxed: counts of this thread, summed by the sampler. */
			if (larder_get(r->c[which], key, PW_KEY_BYTES, buf, sizeof buf, &len) ==
			    LARDER_OK) {
				atomic_fetch_add_explicit(&n->hits[which], 1, memory_order_relaxed);
			} else {
				uint64_t t = lb_now_ns();
				clock_nanosleep(CLOCK_MONOTONIC, 0, &fetch, NULL);
				atomic_fetch_add_explicit(&n->wait_ns, lb_now_ns() - t,
							  memory_order_relaxed);
				atomic_fetch_add_explicit(&n->waits, 1, memory_order_relaxed);
				count_put(larder_put(r->c[which], key, PW_KEY_BYTES, value, PH_VALUE,
						 LARDER_TTL_DEFAULT));
				atomic_fetch_add_explicit(&n->misses[which], 1, memory_order_relaxed);
			}
			atomic_fetch_add_explicit(&n->ops, 1, memory_order_relaxed);
		}
	}
	return NULL;
}

/* One sample: cumulative counts and the capacities. */
struct ph_sample {
	double t, ops, hits[2], misses[2], cap[2];
	double sampled[2], every[2]; /* the controller's probes: sampled requests, S */
	double busy[2]; /* puts failed at the memory bound so far (LARDER_STAT_BUSY_MEMORY) */
};

struct ph_result {
	const char *name;
	double split; /* cache 0's share; < 0: the controller */
	size_t n;
	struct ph_sample s[PH_MAX_SAMPLES];
	double ops, wait_ns, waits;
};

static void ph_sum(struct ph_run *r, struct ph_sample *s)
{
	memset(s, 0, sizeof *s);
	for (unsigned i = 0; i < PH_THREADS; i++) {
		struct ph_counts *n = &r->counts[i];
		s->ops += (double)atomic_load_explicit(&n->ops, memory_order_relaxed);
		for (unsigned c = 0; c < 2; c++) {
			s->hits[c] += (double)atomic_load_explicit(&n->hits[c], memory_order_relaxed);
			s->misses[c] += (double)atomic_load_explicit(&n->misses[c], memory_order_relaxed);
		}
	}
}

/* Fills a cache with random keys of its working set up to its capacity. */
static void prefill(larder *c, unsigned which, uint64_t keys, size_t value_len, uint64_t seed)
{
	uint8_t key[PW_KEY_BYTES], *value = calloc(1, value_len);
	uint64_t rng = lb_mix(seed) | 1, cap = cache_stat(c, LARDER_STAT_CAPACITY_BYTES);
	if (!value)
		return;
	for (uint64_t i = 0; i < 4 * keys && cache_stat(c, LARDER_STAT_USED_BYTES) < cap / 100 * 97;
	     i += 4096)
		for (unsigned j = 0; j < 4096; j++) {
			pw_key(key, which, (uint64_t)(pw_unit(&rng) * (double)keys));
			count_put(larder_put(c, key, PW_KEY_BYTES, value, value_len, LARDER_TTL_DEFAULT));
		}
	free(value);
}

static int ph_one(const struct lb_config *cfg, unsigned unit_ms, struct ph_result *res)
{
	larder_pool *pool;
	struct ph_run *r = calloc(1, sizeof *r);
	if (!r || make_pool(&pool, PH_BUDGET, res->split < 0 ? 100 : 0) != LARDER_OK) {
		free(r);
		return -1;
	}
	for (unsigned c = 0; c < 2; c++) {
		double share = res->split < 0 ? -1 : c == 0 ? res->split : 1 - res->split;
		r->c[c] = share < 0 ? make_cache(pool, 0, 1, 1, 0, LARDER_POLICY_DEFAULT, PH_KEYS,
						 cfg->seed)
				    : make_cache(pool, share, share, 1, 0, LARDER_POLICY_DEFAULT,
						 PH_KEYS, cfg->seed);
		if (!r->c[c])
			return -1;
	}
	for (unsigned c = 0; c < 2; c++)
		prefill(r->c[c], c, PH_KEYS, PH_VALUE, cfg->seed + c);
	r->seed = cfg->seed;
	r->unit_ns = (uint64_t)unit_ms * 1000000u;
	struct ph_worker w[PH_THREADS];
	r->t0_ns = lb_now_ns() + (uint64_t)PH_WARM_MS * 1000000u;
	for (unsigned i = 0; i < PH_THREADS; i++) {
		w[i] = (struct ph_worker){ .run = r, .id = i };
		if (pthread_create(&w[i].thread, NULL, ph_worker_main, &w[i]) != 0)
			return -1;
	}
	lb_sleep_ms(PH_WARM_MS);
	struct ph_sample base;
	ph_sum(r, &base); /* what the warm-up did is not counted */
	for (unsigned c = 0; c < 2; c++) {
		double v[LARDER_POOL_CACHE_STAT_COUNT];
		pool_figures(pool, r->c[c], v);
		base.sampled[c] = v[LARDER_POOL_CACHE_SAMPLED_REQUESTS];
		base.busy[c] = (double)cache_stat(r->c[c], LARDER_STAT_BUSY_MEMORY);
	}
	uint64_t end_ns = r->t0_ns + PH_UNITS * r->unit_ns;
	res->n = 0;
	while (lb_now_ns() < end_ns && res->n < PH_MAX_SAMPLES) {
		lb_sleep_ms(PH_SAMPLE_MS);
		struct ph_sample *s = &res->s[res->n++];
		ph_sum(r, s);
		s->ops -= base.ops;
		for (unsigned c = 0; c < 2; c++) {
			s->hits[c] -= base.hits[c];
			s->misses[c] -= base.misses[c];
		}
		s->t = seconds_since(r->t0_ns);
		for (unsigned c = 0; c < 2; c++) {
			s->cap[c] = (double)cache_stat(r->c[c], LARDER_STAT_CAPACITY_BYTES);
			s->busy[c] = (double)cache_stat(r->c[c], LARDER_STAT_BUSY_MEMORY) - base.busy[c];
			double v[LARDER_POOL_CACHE_STAT_COUNT];
			pool_figures(pool, r->c[c], v);
			s->sampled[c] = v[LARDER_POOL_CACHE_SAMPLED_REQUESTS] - base.sampled[c];
			s->every[c] = v[LARDER_POOL_CACHE_SAMPLE_EVERY];
		}
		check_bound(pool);
		lb_progress("  %s: %.0f s of %.0f", res->name, s->t, PH_UNITS * unit_ms / 1000.0);
	}
	atomic_store(&r->stop, 1);
	for (unsigned i = 0; i < PH_THREADS; i++)
		pthread_join(w[i].thread, NULL);
	res->ops = res->s[res->n - 1].ops;
	for (unsigned i = 0; i < PH_THREADS; i++) {
		res->wait_ns += (double)atomic_load(&r->counts[i].wait_ns);
		res->waits += (double)atomic_load(&r->counts[i].waits);
	}
	for (unsigned c = 0; c < 2; c++)
		larder_close(r->c[c]);
	close_pool(pool);
	free(r);
	return 0;
}

/* Per phase of res: throughput, hit ratio per cache, mean capacity per cache. */
static void ph_phase(const struct ph_result *res, size_t p, unsigned unit_ms, double *tput,
		     double *hit, double *cap)
{
	double from = phases[p].from * unit_ms / 1000.0, to = phases[p].to * unit_ms / 1000.0;
	const struct ph_sample *a = NULL, *b = NULL;
	double caps[2] = { 0, 0 }, n = 0;
	for (size_t i = 0; i < res->n; i++) {
		const struct ph_sample *s = &res->s[i];
		if (s->t <= from)
			a = s;
		if (s->t <= to + 1e-9)
			b = s;
		if (s->t > from && s->t <= to) {
			caps[0] += s->cap[0];
			caps[1] += s->cap[1];
			n++;
		}
	}
	static const struct ph_sample zero;
	if (!a)
		a = &zero;
	if (!b || b->t <= a->t) {
		*tput = 0;
		hit[0] = hit[1] = cap[0] = cap[1] = 0;
		return;
	}
	*tput = (b->ops - a->ops) / (b->t - a->t);
	for (unsigned c = 0; c < 2; c++) {
		double h = b->hits[c] - a->hits[c], m = b->misses[c] - a->misses[c];
		hit[c] = h + m > 0 ? h / (h + m) : 0;
		cap[c] = n ? caps[c] / n : 0;
	}
}

/*
 * How the controller's capacity behaved in phase p: seconds from the phase's
 * start until cache_0's capacity last differed from its value at the phase's
 * end by more than one step (settled), and how often it changed direction
 * after that (reversals; 0 is no oscillation).
 */
static void ph_settle(const struct ph_result *res, size_t p, unsigned unit_ms, double step,
		      double *settled_s, unsigned *reversals)
{
	double from = phases[p].from * unit_ms / 1000.0, to = phases[p].to * unit_ms / 1000.0;
	size_t first = res->n, last = 0;
	for (size_t i = 0; i < res->n; i++)
		if (res->s[i].t > from && res->s[i].t <= to) {
			first = i < first ? i : first;
			last = i;
		}
	*settled_s = 0;
	*reversals = 0;
	if (first >= res->n)
		return;
	double end = res->s[last].cap[0], at = from;
	for (size_t i = first; i <= last; i++)
		if (fabs(res->s[i].cap[0] - end) > step)
			at = res->s[i].t;
	*settled_s = at - from;
	int dir = 0;
	for (size_t i = first + 1; i <= last; i++) {
		if (res->s[i].t <= at)
			continue;
		double d = res->s[i].cap[0] - res->s[i - 1].cap[0];
		int sign = d > 0 ? 1 : d < 0 ? -1 : 0;
		if (sign && dir && sign != dir)
			(*reversals)++;
		if (sign)
			dir = sign;
	}
}

static void ph_chart_series(const struct ph_result *res, double *x, double *y, int what)
{
	for (size_t i = 0; i < res->n; i++) {
		x[i] = res->s[i].t;
		if (what < 2) {
			y[i] = res->s[i].cap[what] / MIB;
		} else {
			double dt = res->s[i].t - (i ? res->s[i - 1].t : 0);
			y[i] = dt > 0 ? (res->s[i].ops - (i ? res->s[i - 1].ops : 0)) / dt / 1000 : 0;
		}
	}
}

static void ph_charts(struct ph_result *const *show, size_t n_show, unsigned unit_ms)
{
	static const char *const colors[] = { "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e" };
	double mx[PH_PHASES];
	const char *ml[PH_PHASES];
	for (size_t p = 0; p < PH_PHASES; p++) {
		mx[p] = phases[p].from * unit_ms / 1000.0;
		ml[p] = phases[p].name;
	}
	struct svg_marks marks = { mx, ml, PH_PHASES };
	double *x = malloc(sizeof(double) * PH_MAX_SAMPLES * 6), *y = x + PH_MAX_SAMPLES * 3;
	if (!x)
		return;
	const struct ph_result *ctl = show[0];
	struct svg_series cap[2];
	static const char *const cap_names[2] = { "cache_0", "cache_1" };
	for (int c = 0; c < 2; c++) {
		ph_chart_series(ctl, x + PH_MAX_SAMPLES * c, y + PH_MAX_SAMPLES * c, c);
		cap[c] = (struct svg_series){ cap_names[c], colors[c], x + PH_MAX_SAMPLES * c,
					      y + PH_MAX_SAMPLES * c, ctl->n };
	}
	if (svg_line_chart("pool-capacity.svg", "Capacity per cache under the controller (1 GiB pool)",
			   "seconds", "MiB", 1024, cap, 2, &marks) == 0)
		printf("chart: pool-capacity.svg\n");
	struct svg_series tp[3];
	for (size_t k = 0; k < n_show && k < 3; k++) {
		ph_chart_series(show[k], x + PH_MAX_SAMPLES * k, y + PH_MAX_SAMPLES * k, 2);
		tp[k] = (struct svg_series){ show[k]->name, colors[k + 1], x + PH_MAX_SAMPLES * k,
					     y + PH_MAX_SAMPLES * k, show[k]->n };
	}
	if (svg_line_chart("pool-throughput.svg", "Throughput (reads/s, 20 us per miss, 8 threads)",
			   "seconds", "thousand reads per second", 0, tp, n_show < 3 ? n_show : 3,
			   &marks) == 0)
		printf("chart: pool-throughput.svg\n");
	free(x);
}

/* The controller's run, sample by sample (every PH_SAMPLE_MS), for a look
 * at how its capacity moved within a phase: pool-phases-series.csv. */
static void ph_series(const struct ph_result *res)
{
	FILE *f = fopen("pool-phases-series.csv", "w");
	if (!f)
		return;
	fprintf(f, "seconds,capacity_0_mib,capacity_1_mib,hits_0,misses_0,hits_1,misses_1,"
		   "sampled_0,sampled_1\n");
	for (size_t i = 0; i < res->n; i++) {
		const struct ph_sample *s = &res->s[i];
		fprintf(f, "%.2f,%.1f,%.1f,%.0f,%.0f,%.0f,%.0f,%.0f,%.0f\n", s->t, s->cap[0] / MIB,
			s->cap[1] / MIB, s->hits[0], s->misses[0], s->hits[1], s->misses[1],
			s->sampled[0], s->sampled[1]);
	}
	fclose(f);
	printf("series: pool-phases-series.csv\n");
}

/* `phases`, or with controller_only (`phases-controller`) the controller's
 * run alone, for a change that touches only the controller: no ratio to
 * the fixed split then, and no charts. */
static void phases_part(const struct lb_config *cfg, unsigned unit_ms, int controller_only)
{
	static const double sweep[] = { 0.2, 0.35, 0.65, 0.8 };
	enum { N_RUNS = 2 + sizeof sweep / sizeof sweep[0] };
	struct ph_result *res[N_RUNS];
	char names[N_RUNS][32];
	size_t n_runs = controller_only ? 1 : N_RUNS;
	printf("\n## Phases: two caches, working sets 0.75 GiB each, one 1 GiB pool "
	       "(unit %u ms)%s\n\n", unit_ms, controller_only ? ", the controller alone" : "");
	for (size_t i = 0; i < n_runs; i++) {
		res[i] = calloc(1, sizeof **res);
		if (!res[i])
			return;
		res[i]->split = i == 0 ? -1 : i == 1 ? 0.5 : sweep[i - 2];
		if (i == 0)
			snprintf(names[i], sizeof names[i], "controller");
		else
			snprintf(names[i], sizeof names[i], "static %.0f/%.0f", res[i]->split * 100,
				 100 - res[i]->split * 100);
		res[i]->name = names[i];
		if (ph_one(cfg, unit_ms, res[i]) != 0)
			return;
	}
	size_t best = 0;
	for (size_t i = 1; i < n_runs; i++)
		if (best == 0 || res[i]->ops > res[best]->ops)
			best = i;
	printf("\n| run | reads, all phases | / fixed 50/50 | misses per read | "
	       "mean wait per miss |\n|---|---|---|---|---|\n");
	for (size_t i = 0; i < n_runs; i++) {
		const struct ph_sample *e = &res[i]->s[res[i]->n - 1];
		double miss = e->misses[0] + e->misses[1], all = miss + e->hits[0] + e->hits[1];
		printf("| %s%s | %.3g | ", res[i]->name, i && i == best ? " (best static)" : "",
		       res[i]->ops);
		if (n_runs > 1)
			printf("%.2fx", res[i]->ops / res[1]->ops);
		else
			printf("-");
		printf(" | %.3f | %.1f us |\n", all > 0 ? miss / all : 0,
		       res[i]->waits > 0 ? res[i]->wait_ns / res[i]->waits / 1000 : 0);
	}
	const size_t show[3] = { 0, 1, best };
	size_t n_show = n_runs == 1 ? 1 : best == 1 ? 2 : 3;
	printf("\n| phase | run | reads/s | hit ratio cache_0 | hit ratio cache_1 | "
	       "capacity cache_0 (MiB) | capacity cache_1 (MiB) |\n|---|---|---|---|---|---|---|\n");
	for (size_t p = 0; p < PH_PHASES; p++)
		for (size_t k = 0; k < n_show; k++) {
			double tput, hit[2], cap[2];
			ph_phase(res[show[k]], p, unit_ms, &tput, hit, cap);
			printf("| %zu %s | %s | %.0f | %.3f | %.3f | %.0f | %.0f |\n", p + 1,
			       phases[p].name, res[show[k]]->name, tput, hit[0], hit[1], cap[0] / MIB,
			       cap[1] / MIB);
		}
	printf("\n| phase | controller: cache_0's capacity settled after (s) | "
	       "reversals after settling | capacity cache_0 at the end (MiB) | "
	       "sampled requests/s cache_0 / cache_1 | S at the end | "
	       "puts failed at the memory bound cache_0 / cache_1 |\n|---|---|---|---|---|---|---|\n");
	for (size_t p = 0; p < PH_PHASES; p++) {
		double settled;
		unsigned rev;
		ph_settle(res[0], p, unit_ms, (double)(PH_BUDGET / 256), &settled, &rev);
		static const struct ph_sample zero;
		const struct ph_sample *a = &zero, *b = NULL;
		for (size_t i = 0; i < res[0]->n; i++) {
			if (res[0]->s[i].t <= phases[p].from * unit_ms / 1000.0)
				a = &res[0]->s[i];
			if (res[0]->s[i].t <= phases[p].to * unit_ms / 1000.0)
				b = &res[0]->s[i];
		}
		double dt = b && b->t > a->t ? b->t - a->t : 0;
		printf("| %zu %s | %.2f (of %.0f) | %u | %.0f | %.0f / %.0f | %.0f / %.0f | %.0f / %.0f |\n",
		       p + 1,
		       phases[p].name, settled, (phases[p].to - phases[p].from) * unit_ms / 1000.0, rev,
		       b ? b->cap[0] / MIB : 0, dt > 0 ? (b->sampled[0] - a->sampled[0]) / dt : 0,
		       dt > 0 ? (b->sampled[1] - a->sampled[1]) / dt : 0, b ? b->every[0] : 0,
		       b ? b->every[1] : 0, b ? b->busy[0] - a->busy[0] : 0,
		       b ? b->busy[1] - a->busy[1] : 0);
	}
	ph_series(res[0]);
	if (!controller_only) {
		struct ph_result *chart[3] = { res[0], res[1], res[best] };
		ph_charts(chart, n_show, unit_ms);
	}
	for (size_t i = 0; i < n_runs; i++)
		free(res[i]);
}

/* A run's misses per read over all phases. */
static double ph_miss_ratio(const struct ph_result *res)
{
	const struct ph_sample *e = &res->s[res->n - 1];
	double miss = e->misses[0] + e->misses[1], all = miss + e->hits[0] + e->hits[1];
	return all > 0 ? miss / all : 0;
}

static void min_max(const double *v, unsigned n, double *lo, double *hi)
{
	*lo = *hi = v[0];
	for (unsigned i = 1; i < n; i++) {
		*lo = v[i] < *lo ? v[i] : *lo;
		*hi = v[i] > *hi ? v[i] : *hi;
	}
}

/* `phases-rounds`: the controller and the fixed 50/50 split, one after the
 * other in each of --rounds rounds (the static sweep left out, so that
 * several rounds fit): reads and misses per read, their ratios, and the
 * controller's settling in the heavy phases; medians and min..max. */
static void phases_rounds(const struct lb_config *cfg, unsigned unit_ms)
{
	unsigned rounds = cfg->rounds ? cfg->rounds : 1;
	rounds = rounds > 64 ? 64 : rounds;
	double ratio[64], miss_ratio[64], settle_max[64], settle_med[64], rev[64];
	struct ph_result *ctl = calloc(1, sizeof *ctl), *fix = calloc(1, sizeof *fix);
	if (!ctl || !fix) {
		free(ctl);
		free(fix);
		return;
	}
	ctl->split = -1;
	ctl->name = "controller";
	fix->split = 0.5;
	fix->name = "static 50/50";
	printf("\n## Phases, the controller against the fixed 50/50 split, %u rounds (unit %u ms)"
	       "\n\n| round | reads, controller | reads, 50/50 | / 50/50 | misses per read, "
	       "controller | misses per read, 50/50 | / 50/50 | settled in heavy phases (s), "
	       "median / max | reversals after settling | mean wait per miss |\n"
	       "|---|---|---|---|---|---|---|---|---|---|\n", rounds, unit_ms);
	for (unsigned r = 0; r < rounds; r++) {
		ctl->wait_ns = ctl->waits = fix->wait_ns = fix->waits = 0;
		if (ph_one(cfg, unit_ms, ctl) != 0 || ph_one(cfg, unit_ms, fix) != 0)
			break;
		double st[PH_PHASES];
		unsigned n_heavy = 0, rv = 0;
		for (size_t p = 0; p < PH_PHASES; p++) {
			double settled;
			unsigned rev_p;
			ph_settle(ctl, p, unit_ms, (double)(PH_BUDGET / 256), &settled, &rev_p);
			rv += rev_p;
			if (phases[p].to_cache0 != 0.5)
				st[n_heavy++] = settled;
		}
		ratio[r] = ctl->ops / fix->ops;
		double mc = ph_miss_ratio(ctl), mf = ph_miss_ratio(fix);
		miss_ratio[r] = mf > 0 ? mc / mf : 0;
		double lo, hi;
		min_max(st, n_heavy, &lo, &hi);
		settle_max[r] = hi;
		settle_med[r] = lb_median(st, n_heavy);
		rev[r] = rv;
		printf("| %u | %.3g | %.3g | %.2fx | %.3f | %.3f | %.2fx | %.2f / %.2f | %u | "
		       "%.0f / %.0f us |\n", r + 1, ctl->ops, fix->ops, ratio[r], mc, mf,
		       miss_ratio[r], settle_med[r], settle_max[r], rv,
		       ctl->waits > 0 ? ctl->wait_ns / ctl->waits / 1000 : 0,
		       fix->waits > 0 ? fix->wait_ns / fix->waits / 1000 : 0);
		fflush(stdout);
	}
	double lo[4], hi[4];
	min_max(ratio, rounds, &lo[0], &hi[0]);
	min_max(miss_ratio, rounds, &lo[1], &hi[1]);
	min_max(settle_max, rounds, &lo[2], &hi[2]);
	min_max(rev, rounds, &lo[3], &hi[3]);
	printf("\nphases (unit %u ms), medians of %u rounds: reads %.2fx the fixed split's "
	       "(%.2f..%.2f), misses per read %.2fx (%.2f..%.2f), slowest heavy phase settled after "
	       "%.2f s (%.2f..%.2f), reversals after settling %.0f (%.0f..%.0f)\n", unit_ms, rounds,
	       lb_median(ratio, rounds), lo[0], hi[0], lb_median(miss_ratio, rounds), lo[1], hi[1],
	       lb_median(settle_max, rounds), lo[2], hi[2], lb_median(rev, rounds), lo[3], hi[3]);
	free(ctl);
	free(fix);
}

/* ---- ten caches ------------------------------------------------------------------ */

#define TEN 10u
#define TEN_BUDGET ((uint64_t)256 << 20)
#define TEN_WARM 12000000u
#define TEN_COUNT 4000000u
/* The controller's runs warm up for at least this long too: its probes
 * sample a bounded number of requests per second (pool/probe.c PROBE-P7),
 * so its estimates converge in time, not in requests. */
#define TEN_WARM_MIN_S 30.0
#define TEN_GRID 256u
#define TEN_POINTS 21u
#define SHIFT_SECONDS 15u
#define SHIFT_CACHE 1u
#define SHIFT_SAMPLE_MS 100u

static const struct spec ten_specs[TEN] = {
	{ "c0", 40000, 0.99, 480, 0.20, 1 },    { "c1", 200000, 0.80, 992, 0.15, 1 },
	{ "c2", 300000, 0.60, 1504, 0.10, 5 },  { "c3", 80000, 0.90, 224, 0.10, 1 },
	{ "c4", 100000, 0.00, 992, 0.05, 20 },  { "c5", 250000, 0.95, 992, 0.15, 2 },
	{ "c6", 150000, 0.70, 480, 0.05, 10 },  { "c7", 400000, 0.85, 224, 0.10, 1 },
	{ "c8", 60000, 0.50, 2016, 0.05, 3 },   { "c9", 120000, 0.99, 992, 0.05, 1 },
};

/* The grid the exact curves are simulated at: 1..256 / 256 of the budget. */
static const unsigned ten_points[TEN_POINTS] = { 1,  2,  3,  4,   6,   8,   12,  16,  24,  32, 40,
						 48, 64, 80, 96, 112, 128, 160, 192, 224, 256 };

enum ten_mode { T_ALONE, T_EQUAL, T_USAGE, T_CONTROLLER, T_BEST, T_MODES };
static const char *const ten_mode_names[T_MODES] = {
	"equal split, no pool", "equal split", "proportional to requests (usage)",
	"controller", "best static (offline, exact curves)",
};

struct ten_out {
	double weighted, hits, reads, seconds, probe_cpu, ctl_cpu;
	double sim_cpu, sampled_rate; /* the probes' mini simulations; their requests per s per cache */
	uint64_t misses[TEN], requests[TEN], cap[TEN];
};

/* The selection of caches: which cache each request goes to. */
static unsigned pick_cache(uint64_t *rng)
{
	double u = pw_unit(rng), acc = 0;
	for (unsigned i = 0; i < TEN; i++) {
		acc += ten_specs[i].share;
		if (u < acc)
			return i;
	}
	return TEN - 1;
}

struct ten_shift {
	double t[1024], cap[1024], hit[1024];
	size_t n;
	double settle_s, recover_s, final_hit;
	unsigned reversals;
};

/* CPU seconds of the pool's thread so far (0 without a pool). */
static double controller_s(larder_pool *pool)
{
	uint64_t v[LARDER_POOL_STAT_COUNT];
	if (!pool || larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT) != LARDER_OK)
		return 0;
	return (double)v[LARDER_POOL_CONTROLLER_CPU_NS] / 1e9;
}

/* The caches' probes so far: seconds their maintainers spent in them
 * (sampled), the mini simulations' part of it (CPU clock), and the
 * requests the mini simulations saw. */
struct probes {
	double own_s, sim_s, sampled;
};

static struct probes probes_now(larder_pool *pool, larder *const *c)
{
	struct probes s = { 0, 0, 0 };
	for (unsigned i = 0; pool && i < TEN; i++) {
		double v[LARDER_POOL_CACHE_STAT_COUNT];
		pool_figures(pool, c[i], v);
		s.own_s += v[LARDER_POOL_CACHE_PROBE_NS] / 1e9;
		s.sim_s += v[LARDER_POOL_CACHE_PROBE_SIM_NS] / 1e9;
		s.sampled += v[LARDER_POOL_CACHE_SAMPLED_REQUESTS];
	}
	return s;
}

/* Runs the ten caches through warm + count requests (and the shift). */
static int ten_run(const struct lb_config *cfg, enum ten_mode mode, const uint64_t *alloc,
		   struct ten_out *out, struct ten_shift *shift)
{
	larder_pool *pool = NULL;
	larder *c[TEN];
	struct pw_stream st[TEN];
	uint8_t key[PW_KEY_BYTES], value[2048] = { 0 }, buf[2048];
	memset(out, 0, sizeof *out);
	if (mode != T_ALONE && make_pool(&pool, TEN_BUDGET, mode == T_CONTROLLER ? 100 : 0) != LARDER_OK)
		return -1;
	for (unsigned i = 0; i < TEN; i++) {
		const struct spec *sp = &ten_specs[i];
		double share = mode == T_EQUAL ? 1.0 / TEN
			       : mode == T_USAGE ? sp->share
			       : mode == T_BEST ? (double)alloc[i] / (double)TEN_BUDGET
						: -1;
		c[i] = mode == T_ALONE ? make_cache(NULL, 0, 0, 0, TEN_BUDGET / TEN,
						    LARDER_POLICY_DEFAULT, sp->keys / 4, cfg->seed)
		       : share < 0 ? make_cache(pool, 0, 1, sp->cost, 0, LARDER_POLICY_DEFAULT,
						sp->keys / 4, cfg->seed)
				   : make_cache(pool, share, share, sp->cost, 0, LARDER_POLICY_DEFAULT,
						sp->keys / 4, cfg->seed);
		if (!c[i])
			return -1;
		pw_stream_init(&st[i], sp->keys, sp->theta, cfg->seed + 100 + i);
	}
	uint64_t sel = lb_mix(cfg->seed + 7) | 1;
	uint64_t hits0 = 0, measured_from = 0, started = lb_now_ns();
	double ctl0 = 0;
	struct probes probe0 = { 0, 0, 0 };
	for (uint64_t n = 0; n < TEN_WARM + TEN_COUNT; n++) {
		if (n == TEN_WARM - 1 && mode == T_CONTROLLER &&
		    seconds_since(started) < TEN_WARM_MIN_S)
			n--; /* the same request stream, longer */
		if (n == TEN_WARM) {
			measured_from = lb_now_ns();
			ctl0 = controller_s(pool);
			probe0 = probes_now(pool, c);
		}
		unsigned i = pick_cache(&sel);
		const struct spec *sp = &ten_specs[i];
		pw_key(key, i, pw_next(&st[i]));
		int hit = request(c[i], key, value, sp->value, buf, sizeof buf);
		if (n >= TEN_WARM) {
			out->requests[i]++;
			out->misses[i] += !hit;
			hits0 += (uint64_t)hit;
		}
		if ((n & 0xfffff) == 0) {
			check_bound(pool);
			lb_progress("  %s: %.0f%%", ten_mode_names[mode],
				    100.0 * (double)n / (TEN_WARM + TEN_COUNT));
		}
	}
	out->seconds = seconds_since(measured_from);
	out->ctl_cpu = (controller_s(pool) - ctl0) / out->seconds;
	struct probes probe1 = probes_now(pool, c);
	out->probe_cpu = (probe1.own_s - probe0.own_s) / out->seconds;
	out->sim_cpu = (probe1.sim_s - probe0.sim_s) / out->seconds;
	out->sampled_rate = (probe1.sampled - probe0.sampled) / out->seconds / TEN;
	for (unsigned i = 0; i < TEN; i++) {
		out->weighted += ten_specs[i].cost * (double)out->misses[i];
		out->reads += (double)out->requests[i];
		out->cap[i] = cache_stat(c[i], LARDER_STAT_CAPACITY_BYTES);
	}
	out->hits = (double)hits0;
	if (shift) {
		/* One cache's working set grows 4x; the others go on as before. */
		const struct spec *sp = &ten_specs[SHIFT_CACHE];
		pw_stream_init(&st[SHIFT_CACHE], sp->keys * 4, sp->theta, cfg->seed + 999);
		uint64_t start = lb_now_ns(), next = start, win_hits = 0, win_reads = 0;
		shift->n = 0;
		while (seconds_since(start) < SHIFT_SECONDS && shift->n < 1024) {
			unsigned i = pick_cache(&sel);
			pw_key(key, i, pw_next(&st[i]));
			int hit = request(c[i], key, value, ten_specs[i].value, buf, sizeof buf);
			if (i == SHIFT_CACHE) {
				win_hits += (uint64_t)hit;
				win_reads++;
			}
			if (lb_now_ns() >= next) {
				shift->t[shift->n] = seconds_since(start);
				shift->cap[shift->n] =
					(double)cache_stat(c[SHIFT_CACHE], LARDER_STAT_CAPACITY_BYTES);
				shift->hit[shift->n] = win_reads ? (double)win_hits / (double)win_reads : 0;
				shift->n++;
				win_hits = win_reads = 0;
				next += SHIFT_SAMPLE_MS * 1000000u;
				check_bound(pool);
			}
		}
	}
	for (unsigned i = 0; i < TEN; i++)
		larder_close(c[i]);
	if (pool)
		close_pool(pool);
	return 0;
}

/* Exact curves of the ten streams (the counted part after the warm-up). */
static int ten_curves(const struct lb_config *cfg, uint64_t **sizes, uint64_t **hits,
		      uint64_t *slot)
{
	uint64_t warm[TEN] = { 0 }, count[TEN] = { 0 }, sel = lb_mix(cfg->seed + 7) | 1;
	for (uint64_t n = 0; n < TEN_WARM + TEN_COUNT; n++) {
		unsigned i = pick_cache(&sel);
		if (n < TEN_WARM)
			warm[i]++;
		else
			count[i]++;
	}
	for (unsigned i = 0; i < TEN; i++) {
		const struct spec *sp = &ten_specs[i];
		struct pw_stream proto;
		pw_stream_init(&proto, sp->keys, sp->theta, cfg->seed + 100 + i);
		unsigned n = 0;
		uint64_t ws = sp->keys * slot[i];
		for (unsigned k = 0; k < TEN_POINTS; k++) {
			sizes[i][k] = TEN_BUDGET / 256 * ten_points[k];
			if (sizes[i][k] < ws + ws / 8)
				n = k + 1; /* past the working set the curve is flat */
		}
		lb_progress("  exact curve of %s (%u sizes)", sp->name, n);
		if (pw_mrc(LARDER_POLICY_DEFAULT, &proto, slot[i], sizes[i], n, warm[i], count[i],
			   hits[i]) != 0)
			return -1;
		for (unsigned k = n; k < TEN_POINTS; k++)
			hits[i][k] = hits[i][n - 1];
	}
	return 0;
}

static double predicted(uint64_t *const *sizes, uint64_t *const *hits, const uint64_t *count,
			const uint64_t *alloc)
{
	double w = 0;
	for (unsigned i = 0; i < TEN; i++)
		w += ten_specs[i].cost *
		     ((double)count[i] - pw_curve_at(sizes[i], hits[i], TEN_POINTS, (double)alloc[i]));
	return w;
}

static void shift_analyse(struct ten_shift *s, uint64_t step)
{
	/* Settled: the last sample whose capacity differs from the end's by
	 * more than one controller step; recovered: the first sample after
	 * which the hit ratio stays within 2 points of its final 3 s mean. */
	size_t n = s->n, tail = n > 30 ? 30 : n;
	double end_cap = s->cap[n - 1], fin = 0;
	for (size_t i = n - tail; i < n; i++)
		fin += s->hit[i];
	s->final_hit = fin / (double)tail;
	s->settle_s = 0;
	for (size_t i = 0; i < n; i++)
		if (fabs(s->cap[i] - end_cap) > (double)step)
			s->settle_s = s->t[i];
	s->recover_s = 0;
	for (size_t i = 0; i < n; i++)
		if (fabs(s->hit[i] - s->final_hit) > 0.02)
			s->recover_s = s->t[i];
	s->reversals = 0;
	int dir = 0;
	for (size_t i = 1; i < n; i++) {
		if (s->t[i] <= s->settle_s)
			continue;
		int d = s->cap[i] > s->cap[i - 1] ? 1 : s->cap[i] < s->cap[i - 1] ? -1 : 0;
		if (d && dir && d != dir)
			s->reversals++;
		if (d)
			dir = d;
	}
}

static void shift_chart(const struct ten_shift *s)
{
	double y[1024], yh[1024];
	for (size_t i = 0; i < s->n; i++) {
		y[i] = s->cap[i] / MIB;
		yh[i] = s->hit[i] * 100;
	}
	struct svg_series series[2] = {
		{ "capacity of c1 (MiB)", "#1f77b4", s->t, y, s->n },
		{ "hit ratio of c1 (%)", "#d62728", s->t, yh, s->n },
	};
	if (svg_line_chart("pool-shift.svg", "c1's working set grows 4x at t = 0 (ten caches, 256 MiB)",
			   "seconds", "MiB / %", 0, series, 2, NULL) == 0)
		printf("chart: pool-shift.svg\n");
}

/* `ten-controller`: the controller's rounds alone (weighted misses, its
 * cost), for a change that touches only the controller: the static splits
 * do not depend on it. */
static void ten_controller_only(const struct lb_config *cfg)
{
	unsigned rounds = cfg->rounds ? cfg->rounds : 1;
	double w[64], prb[64], ctl[64], sim[64], srate[64], rps[64];
	double cap[64][TEN], wc[64][TEN]; /* each round's split (MiB) and weighted misses per cache */
	uint64_t best[TEN] = { 0 };
	printf("\n## Ten caches, the controller alone, %u rounds\n\n| round | weighted misses | "
	       "requests/s | pool thread %% | mini simulations %% | marked calls %% | "
	       "sampled requests/s per cache |\n|---|---|---|---|---|---|---|\n", rounds);
	for (unsigned r = 0; r < rounds && r < 64; r++) {
		struct ten_out out;
		if (ten_run(cfg, T_CONTROLLER, best, &out, NULL) != 0)
			return;
		w[r] = out.weighted;
		prb[r] = out.probe_cpu;
		ctl[r] = out.ctl_cpu;
		sim[r] = out.sim_cpu;
		srate[r] = out.sampled_rate;
		rps[r] = (double)TEN_COUNT / out.seconds;
		for (unsigned i = 0; i < TEN; i++) {
			cap[r][i] = (double)out.cap[i] / MIB;
			wc[r][i] = ten_specs[i].cost * (double)out.misses[i];
		}
		printf("| %u | %.4g | %.3g | %.3f | %.3f | %.3f | %.0f |\n", r + 1, w[r], rps[r],
		       100 * ctl[r], 100 * sim[r], 100 * (prb[r] - sim[r]), srate[r]);
		fflush(stdout);
	}
	/* Where each round ended: an outlier round shows which cache it misjudged. */
	printf("\n| round | capacity per cache at the end, MiB (weighted misses, 10^3), c0 .. c9 |\n"
	       "|---|---|\n");
	for (unsigned r = 0; r < rounds && r < 64; r++) {
		printf("| %u |", r + 1);
		for (unsigned i = 0; i < TEN; i++)
			printf(" %.1f (%.0f)", cap[r][i], wc[r][i] / 1e3);
		printf(" |\n");
	}
	double wl, wh, all[64];
	min_max(w, rounds, &wl, &wh);
	for (unsigned r = 0; r < rounds && r < 64; r++)
		all[r] = prb[r] + ctl[r];
	printf("\ncontroller: weighted misses %.4g (%.4g..%.4g), medians: %.3g requests/s, pool "
	       "thread %.3f%%, mini simulations %.3f%%, probes in all %.3f%% of a core; the "
	       "controller in all (probes + pool thread, round by round) %.3f%%\n",
	       lb_median(w, rounds), wl, wh, lb_median(rps, rounds), 100 * lb_median(ctl, rounds),
	       100 * lb_median(sim, rounds), 100 * lb_median(prb, rounds),
	       100 * lb_median(all, rounds));
	printf("(probes: the marked calls, timed, and the mini simulations, CPU clock; not "
	       "timed: the maintainers' test of the mark on every policy call and the writers' "
	       "mark, counted by callgrind in docs/pool.md)\n");
}

static void ten_part(const struct lb_config *cfg, int with_shift, int with_ten)
{
	uint64_t slot[TEN], *sizes[TEN], *hits[TEN], best[TEN], count[TEN] = { 0 };
	uint64_t store[2][TEN][TEN_POINTS];
	larder *probe = make_cache(NULL, 0, 0, 0, 1 << 20, LARDER_POLICY_DEFAULT, 16, cfg->seed);
	if (!probe)
		return;
	for (unsigned i = 0; i < TEN; i++) {
		slot[i] = pw_slot_bytes(probe, ten_specs[i].value);
		sizes[i] = store[0][i];
		hits[i] = store[1][i];
	}
	larder_close(probe);
	printf("\n## Ten caches in a 256 MiB pool, %u reads warm-up then %u counted\n\n",
	       TEN_WARM, TEN_COUNT);
	printf("| cache | keys | working set (MiB) | skew | slot (B) | share of reads | miss cost |\n"
	       "|---|---|---|---|---|---|---|\n");
	for (unsigned i = 0; i < TEN; i++)
		printf("| %s | %llu | %.0f | %s%.2f | %llu | %.0f%% | %.0f |\n", ten_specs[i].name,
		       (unsigned long long)ten_specs[i].keys,
		       (double)(ten_specs[i].keys * slot[i]) / MIB,
		       ten_specs[i].theta > 0 ? "zipf " : "uniform ", ten_specs[i].theta,
		       (unsigned long long)slot[i], ten_specs[i].share * 100, ten_specs[i].cost);
	/* The exact curves and the best split are for the table; the shift
	 * alone runs the controller only. */
	if (with_ten && ten_curves(cfg, sizes, hits, slot) != 0)
		return;
	double weight[TEN];
	for (unsigned i = 0; i < TEN; i++)
		weight[i] = ten_specs[i].cost;
	if (with_ten)
		pw_best_split(TEN, weight, sizes, hits, TEN_POINTS, TEN_BUDGET, TEN_GRID, best);
	{
		uint64_t sel = lb_mix(cfg->seed + 7) | 1;
		for (uint64_t n = 0; n < TEN_WARM + TEN_COUNT; n++) {
			unsigned i = pick_cache(&sel);
			count[i] += n >= TEN_WARM;
		}
	}
	if (with_ten) {
		unsigned rounds = cfg->rounds ? cfg->rounds : 1;
		double w[T_MODES][64], prb[T_MODES][64], ctl[T_MODES][64], sim[64], srate[64], rps[64];
		uint64_t last_cap[T_MODES][TEN];
		for (unsigned r = 0; r < rounds && r < 64; r++)
			for (unsigned m = 0; m < T_MODES; m++) {
				struct ten_out out;
				if (ten_run(cfg, (enum ten_mode)m, best, &out, NULL) != 0)
					return;
				w[m][r] = out.weighted;
				prb[m][r] = out.probe_cpu;
				ctl[m][r] = out.ctl_cpu;
				if (m == T_CONTROLLER) {
					sim[r] = out.sim_cpu;
					srate[r] = out.sampled_rate;
					rps[r] = (double)TEN_COUNT / out.seconds;
				}
				memcpy(last_cap[m], out.cap, sizeof out.cap);
			}
		double med[T_MODES], lo[T_MODES], hi[T_MODES];
		for (unsigned m = 0; m < T_MODES; m++) {
			double sorted[64];
			lo[m] = hi[m] = w[m][0];
			for (unsigned r = 0; r < rounds; r++) {
				sorted[r] = w[m][r];
				lo[m] = w[m][r] < lo[m] ? w[m][r] : lo[m];
				hi[m] = w[m][r] > hi[m] ? w[m][r] : hi[m];
			}
			med[m] = lb_median(sorted, rounds);
		}
		printf("\n| split | weighted misses, median (min..max) of %u | / best static | "
		       "predicted by the exact curves | pool thread + probes, %% of a core |\n"
		       "|---|---|---|---|---|\n", rounds);
		for (unsigned m = 0; m < T_MODES; m++) {
			double b[64];
			for (unsigned r = 0; r < rounds; r++)
				b[r] = 100 * (prb[m][r] + ctl[m][r]);
			uint64_t alloc[TEN];
			for (unsigned i = 0; i < TEN; i++)
				alloc[i] = m == T_BEST ? best[i] : last_cap[m][i];
			printf("| %s | %.4g (%.4g..%.4g) | %.3f | %.4g | %.2f |\n", ten_mode_names[m],
			       med[m], lo[m], hi[m], med[m] / med[T_BEST],
			       predicted(sizes, hits, count, alloc), lb_median(b, rounds));
		}
		printf("\nratios of medians to the best static split: equal %.3f, usage %.3f, "
		       "controller %.3f; controller / usage %.3f\n",
		       med[T_EQUAL] / med[T_BEST], med[T_USAGE] / med[T_BEST],
		       med[T_CONTROLLER] / med[T_BEST], med[T_CONTROLLER] / med[T_USAGE]);
		double c[64], pc[64];
		memcpy(c, ctl[T_CONTROLLER], sizeof(double) * rounds);
		memcpy(pc, prb[T_CONTROLLER], sizeof(double) * rounds);
		printf("controller's cost with ten caches: its thread %.3f%% of a core, the probes on "
		       "the maintainers %.3f%% (medians; the probes' time is sampled, pool/probe.c PROBE-P5)\n",
		       100 * lb_median(c, rounds), 100 * lb_median(pc, rounds));
		printf("  at %.3g requests/s (median): the mini simulations %.3f%% of a core (their "
		       "CPU clock; %.0f sampled requests/s per cache), the marked calls %.3f%%\n",
		       lb_median(rps, rounds), 100 * lb_median(sim, rounds), lb_median(srate, rounds),
		       100 * (lb_median(pc, rounds) - lb_median(sim, rounds)));
		printf("\n| cache | best static (MiB) | usage (MiB) | controller, last round (MiB) |\n"
		       "|---|---|---|---|\n");
		for (unsigned i = 0; i < TEN; i++)
			printf("| %s | %.1f | %.1f | %.1f |\n", ten_specs[i].name, (double)best[i] / MIB,
			       (double)last_cap[T_USAGE][i] / MIB,
			       (double)last_cap[T_CONTROLLER][i] / MIB);
	}
	if (with_shift) {
		static struct ten_shift s;
		struct ten_out out;
		if (ten_run(cfg, T_CONTROLLER, best, &out, &s) != 0 || s.n < 2)
			return;
		shift_analyse(&s, TEN_BUDGET / 256);
		printf("\n## Shift: %s's working set grows 4x (%llu -> %llu keys)\n\n"
		       "capacity of %s: %.1f MiB before, %.1f MiB at the end; settled (within one "
		       "step, %.0f MiB, of its end) %.1f s after the shift (%.0f controller "
		       "periods); hit ratio back within 2 points of its final %.3f after %.1f s; "
		       "%u reversals of its capacity after settling\n",
		       ten_specs[SHIFT_CACHE].name, (unsigned long long)ten_specs[SHIFT_CACHE].keys,
		       (unsigned long long)ten_specs[SHIFT_CACHE].keys * 4, ten_specs[SHIFT_CACHE].name,
		       (double)out.cap[SHIFT_CACHE] / MIB, s.cap[s.n - 1] / MIB,
		       (double)(TEN_BUDGET / 256) / MIB, s.settle_s, s.settle_s * 10, s.final_hit,
		       s.recover_s, s.reversals);
		shift_chart(&s);
	}
}

/* ---- The mode ----------------------------------------------------------------------- */

static int has_part(const char *parts, const char *name)
{
	if (!parts || !*parts)
		return 1;
	size_t len = strlen(name);
	for (const char *p = parts; (p = strstr(p, name)) != NULL; p += len)
		if ((p == parts || p[-1] == ',') && (p[len] == ',' || p[len] == 0))
			return 1;
	return 0;
}

int lb_budget_run(const struct lb_config *cfg)
{
	const char *parts = cfg->pool_parts;
	unsigned unit_ms = cfg->pool_unit_ms ? cfg->pool_unit_ms : 2000;
	printf("# larder-bench --pool (seed %llu)\n", (unsigned long long)cfg->seed);
	if (has_part(parts, "estimators"))
		estimators(cfg);
	if (has_part(parts, "phases"))
		phases_part(cfg, unit_ms, 0);
	if (parts && *parts && has_part(parts, "phases-controller"))
		phases_part(cfg, unit_ms, 1);
	if (parts && *parts && has_part(parts, "phases-rounds"))
		phases_rounds(cfg, unit_ms);
	if (has_part(parts, "ten") || has_part(parts, "shift"))
		ten_part(cfg, has_part(parts, "shift"), has_part(parts, "ten"));
	if (parts && *parts && has_part(parts, "ten-controller"))
		ten_controller_only(cfg);
	printf("\nbound: the largest sampled sum of used bytes was %.3f of budget + overshoot "
	       "bound; peak RSS %.2f GiB; failed puts %llu%s%s\n", bound_worst, peak_rss_gib(),
	       (unsigned long long)atomic_load(&put_failures),
	       atomic_load(&put_failures) ? ", the last: " : "",
	       atomic_load(&put_failures) ? larder_strerror(atomic_load(&put_failure_rc)) : "");
	return bound_worst <= 1.0 ? 0 : 1;
}
