/*
 * latency.c - --latency: per-operation latency of the 9:1 mix while larder's
 * maintainer is busy evicting.
 *
 * Setup: capacity C (--capacity, default 16 MiB) and a working set of
 * 4 C / (key + value) keys (--entries overrides), so the keys' bytes alone
 * are four times the capacity and every miss-then-put pushes an eviction.
 * All keys are put once before timing, which fills the cache and starts the
 * eviction; a warm-up round follows.
 *
 * Timing: each operation is bracketed by two timer reads and its duration,
 * in timer ticks, goes into the thread's log-linear histogram (hist.h,
 * relative error <= 0.8%). The timer is the TSC when the CPU reports an
 * invariant one (constant_tsc and nonstop_tsc), read as lfence;rdtsc;lfence
 * before and rdtscp;lfence after, and calibrated against CLOCK_MONOTONIC;
 * otherwise clock_gettime(CLOCK_MONOTONIC). The cost of an empty bracket is
 * measured and printed; it is included in every figure, not subtracted.
 * Default: 1 worker thread, so that on a 2-core machine the maintainer has a
 * core of its own (--threads N overrides; more threads than cores measure
 * the scheduler).
 */
#define _GNU_SOURCE /* RUSAGE_THREAD */
#include <stdio.h>
#include <sys/resource.h>
#include <unistd.h>
#include <stdlib.h>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#define LB_HAVE_TSC 1
#else
#define LB_HAVE_TSC 0
#endif

#include "hist.h"
#include "pool.h"

static int use_tsc;
static double ns_per_tick = 1.0;

static inline uint64_t timer_begin(void)
{
#if LB_HAVE_TSC
	if (use_tsc) {
		_mm_lfence();
		uint64_t t = __rdtsc();
		_mm_lfence();
		return t;
	}
#endif
	return lb_now_ns();
}

static inline uint64_t timer_end(void)
{
#if LB_HAVE_TSC
	if (use_tsc) {
		unsigned aux;
		uint64_t t = __rdtscp(&aux);
		_mm_lfence();
		return t;
	}
#endif
	return lb_now_ns();
}

static int cpu_has_invariant_tsc(void)
{
	char line[4096];
	int c = 0, n = 0;
	FILE *f = fopen("/proc/cpuinfo", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "flags", 5) == 0) {
			c = strstr(line, " constant_tsc") != NULL;
			n = strstr(line, " nonstop_tsc") != NULL;
			break;
		}
	fclose(f);
	return c && n;
}

static void timer_setup(enum lb_timer want)
{
	use_tsc = LB_HAVE_TSC && want != LB_TIMER_CLOCK &&
		  (want == LB_TIMER_TSC || cpu_has_invariant_tsc());
	if (use_tsc) {
		uint64_t n0 = lb_now_ns(), t0 = timer_begin();
		lb_sleep_ms(100);
		uint64_t n1 = lb_now_ns(), t1 = timer_end();
		ns_per_tick = (double)(n1 - n0) / (double)(t1 - t0);
	}
}

struct lat_arg {
	larder *cache;
	const struct lb_config *cfg;
	struct lb_hist *get_h; /* [tid] */
	struct lb_hist *put_h;
	long *nivcsw; /* [tid]: involuntary context switches while recording */
	int record;
};

static long thread_nivcsw(void)
{
	struct rusage ru;
	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

static uint64_t lat_task(void *argp, struct lb_tctx *t, const atomic_int *stop)
{
	struct lat_arg *a = argp;
	const struct lb_config *c = a->cfg;
	struct lb_hist *gh = &a->get_h[t->tid], *ph = &a->put_h[t->tid];
	uint64_t done = 0;
	size_t len;
	long csw0 = thread_nivcsw();

	while (!atomic_load_explicit(stop, memory_order_relaxed)) {
		for (unsigned i = 0; i < LB_CHUNK; i++) {
			uint64_t r = lb_rand(t);
			lb_key(t->key, c->key_size, lb_pick(t, c->entries, r));
			if (lb_is_write(LB_MIX, r)) {
				uint64_t t0 = timer_begin();
				int rc = larder_put(a->cache, t->key, c->key_size, t->val,
						    c->value_size, c->ttl_ms);
				uint64_t t1 = timer_end();
				if (rc != LARDER_OK)
					t->write_errors++;
				if (a->record)
					lb_hist_add(ph, t1 - t0);
			} else {
				uint64_t t0 = timer_begin();
				int rc = larder_get(a->cache, t->key, c->key_size, t->buf,
						    c->value_size, &len);
				uint64_t t1 = timer_end();
				if (rc == LARDER_OK)
					t->hits++;
				else
					t->misses++;
				if (a->record)
					lb_hist_add(gh, t1 - t0);
			}
		}
		done += LB_CHUNK;
	}
	if (a->record)
		a->nivcsw[t->tid] += thread_nivcsw() - csw0;
	return done;
}

static void print_row(FILE *f, const char *op, const struct lb_hist *h, int csv)
{
	double p50 = (double)lb_hist_percentile(h, 50) * ns_per_tick;
	double p99 = (double)lb_hist_percentile(h, 99) * ns_per_tick;
	double p999 = (double)lb_hist_percentile(h, 99.9) * ns_per_tick;
	double mx = (double)h->max * ns_per_tick;
	if (csv)
		fprintf(f, "%s,%llu,%.1f,%.1f,%.1f,%.1f\n", op, (unsigned long long)h->count, p50,
			p99, p999, mx);
	else
		fprintf(f, "%-6s %12llu %9.0f %9.0f %10.0f %11.0f\n", op,
			(unsigned long long)h->count, p50, p99, p999, mx);
}

/* The empty bracket's cost: p50 and min of 10^6 back-to-back pairs, in ns. */
static void timer_overhead(double *p50, double *min)
{
	struct lb_hist *h = calloc(1, sizeof(*h));
	uint64_t lo = UINT64_MAX;
	if (!h) {
		*p50 = *min = 0;
		return;
	}
	for (int i = 0; i < 1000000; i++) {
		uint64_t t0 = timer_begin(), t1 = timer_end();
		lb_hist_add(h, t1 - t0);
		if (t1 - t0 < lo)
			lo = t1 - t0;
	}
	*p50 = (double)lb_hist_percentile(h, 50) * ns_per_tick;
	*min = (double)lo * ns_per_tick;
	free(h);
}

static void stats_now(larder *c, uint64_t *v)
{
	if (larder_stats(c, v, LARDER_STAT_COUNT) != LARDER_OK)
		memset(v, 0, sizeof(uint64_t) * LARDER_STAT_COUNT);
}

/* What one latency run measured besides the histograms. */
struct lat_result {
	unsigned threads;
	uint64_t s0[LARDER_STAT_COUNT], s1[LARDER_STAT_COUNT]; /* stats around the rounds */
	double secs;                                           /* wall time of the rounds */
	double rates[200];                                     /* Mops/s per round */
	double ovh50, ovhmin;                                  /* empty timer bracket, ns */
	long csw;                                              /* involuntary switches */
};

/* Warm-up, then the recorded rounds; merges the per-thread histograms into [0]. */
static void lat_measure(struct lat_arg *a, struct lb_pool *pool, struct lat_result *r)
{
	const struct lb_config *cfg = a->cfg;
	struct lb_thread_result res[LB_MAX_THREADS];

	for (unsigned i = 0; i < cfg->warmup_rounds; i++)
		lb_pool_run(pool, r->threads, cfg->duration_ms, lat_task, a, res, NULL);
	a->record = 1;
	stats_now(a->cache, r->s0);
	uint64_t m0 = lb_now_ns();
	for (unsigned i = 0; i < cfg->rounds; i++) {
		lb_progress("latency: round %u/%u", i + 1, cfg->rounds);
		r->rates[i] = lb_pool_run(pool, r->threads, cfg->duration_ms, lat_task, a, res,
					  NULL) / 1e6;
	}
	r->secs = (double)(lb_now_ns() - m0) / 1e9;
	stats_now(a->cache, r->s1);
	if (isatty(2))
		fprintf(stderr, "\n");
	r->csw = a->nivcsw[0];
	for (unsigned i = 1; i < r->threads; i++) {
		lb_hist_merge(&a->get_h[0], &a->get_h[i]);
		lb_hist_merge(&a->put_h[0], &a->put_h[i]);
		r->csw += a->nivcsw[i];
	}
}

static void lat_report(const struct lat_arg *a, struct lat_result *r)
{
	const struct lb_config *cfg = a->cfg;
	const uint64_t *s0 = r->s0, *s1 = r->s1;
	double kv_bytes = (double)cfg->entries * (double)(cfg->key_size + cfg->value_size);
	uint64_t hits = s1[LARDER_STAT_HITS] - s0[LARDER_STAT_HITS];
	uint64_t gets = hits + s1[LARDER_STAT_MISSES] - s0[LARDER_STAT_MISSES];
	uint64_t ev = s1[LARDER_STAT_EVICTIONS] - s0[LARDER_STAT_EVICTIONS];

	printf("larder-bench latency: 9:1 mix, %u worker thread(s), key %zu B, value %zu B, "
	       "%llu keys (%.1f MiB of key+value) over capacity %.1f MiB (%.1fx), %s keys\n",
	       r->threads, cfg->key_size, cfg->value_size, (unsigned long long)cfg->entries,
	       kv_bytes / (1 << 20), (double)cfg->capacity_bytes / (1 << 20),
	       kv_bytes / (double)cfg->capacity_bytes, cfg->zipf_theta > 0 ? "zipf" : "uniform");
	printf("timer: %s, empty bracket p50 %.1f ns, min %.1f ns (included in every figure)\n",
	       use_tsc ? "TSC (lfence;rdtsc / rdtscp;lfence), invariant"
		       : "clock_gettime(CLOCK_MONOTONIC)",
	       r->ovh50, r->ovhmin);
	printf("measured %u rounds x %u ms after %u warm-up round(s); throughput median %.2f "
	       "Mops/s\n",
	       cfg->rounds, cfg->duration_ms, cfg->warmup_rounds, lb_median(r->rates, cfg->rounds));
	printf("\n%-6s %12s %9s %9s %10s %11s\n", "op", "count", "p50 ns", "p99 ns", "p99.9 ns",
	       "max ns");
	print_row(stdout, "get", &a->get_h[0], 0);
	print_row(stdout, "put", &a->put_h[0], 0);
	printf("\nwhile measuring: %llu evictions (%.0f/s), get hit ratio %.1f%%, "
	       "write waits %llu, writes busy %llu, used/capacity %.2f\n",
	       (unsigned long long)ev, (double)ev / r->secs,
	       gets ? 100.0 * (double)hits / (double)gets : 0,
	       (unsigned long long)(s1[LARDER_STAT_WRITE_WAITS] - s0[LARDER_STAT_WRITE_WAITS]),
	       (unsigned long long)(s1[LARDER_STAT_WRITE_BUSY] - s0[LARDER_STAT_WRITE_BUSY]),
	       (double)s1[LARDER_STAT_USED_BYTES] / (double)cfg->capacity_bytes);
	/* A preemption lands on a get 9 times in 10; it moves p99.9 only if more
	 * than 0.1% of the gets were hit. */
	printf("the workers were preempted %ld times while measuring (involuntary context "
	       "switches; 0.1%% of gets = %.0f):\n  %s\n",
	       r->csw, 0.001 * (double)a->get_h[0].count,
	       0.9 * (double)r->csw > 0.001 * (double)a->get_h[0].count
		       ? "enough to reach get p99.9 -- rerun on a quieter machine"
		       : "too few to reach get p99.9; they set max");
	if (ev == 0)
		printf("WARNING: no evictions while measuring; the maintainer was not evicting\n");
	printf("p99.9 of get under 5 us: %s\n",
	       (double)lb_hist_percentile(&a->get_h[0], 99.9) * ns_per_tick < 5000 ? "yes" : "NO");
}

static int lat_write(const struct lat_arg *a, const char *path)
{
	FILE *f = fopen(path, "w");
	if (!f) {
		perror(path);
		return -1;
	}
	fprintf(f, "op,count,p50_ns,p99_ns,p999_ns,max_ns\n");
	print_row(f, "get", &a->get_h[0], 1);
	print_row(f, "put", &a->put_h[0], 1);
	return fclose(f) == 0 ? 0 : -1;
}

int lb_latency_run(const struct lb_config *cfg_in)
{
	struct lb_config cfg = *cfg_in;
	static struct lat_result r;
	struct lat_arg a = { 0 };
	struct lb_pool *pool = NULL;
	int rc = -1;

	r.threads = cfg.n_threads ? cfg.threads[0] : 1;
	if (!cfg.capacity_given)
		cfg.capacity_bytes = 16u << 20;
	if (!cfg.entries_given)
		cfg.entries = 4 * cfg.capacity_bytes / (cfg.key_size + cfg.value_size);
	timer_setup(cfg.timer);
	timer_overhead(&r.ovh50, &r.ovhmin);
	if (lb_larder_open(&a.cache, &cfg, cfg.capacity_bytes,
			   cfg.capacity_bytes / (cfg.key_size + cfg.value_size + 32)) != LARDER_OK) {
		fprintf(stderr, "larder-bench: larder_open failed\n");
		return -1;
	}
	a.cfg = &cfg;
	a.get_h = calloc(r.threads, sizeof(struct lb_hist));
	a.put_h = calloc(r.threads, sizeof(struct lb_hist));
	a.nivcsw = calloc(r.threads, sizeof(long));
	pool = lb_pool_create(&cfg, r.threads);
	if (!a.get_h || !a.put_h || !a.nivcsw || !pool || cfg.rounds > 200)
		goto out;
	uint64_t t0 = lb_now_ns(), failed = lb_preload(&lb_engine_larder, a.cache, &cfg);
	fprintf(stderr, "latency: put %llu keys in %.0f ms (%llu failed)\n",
		(unsigned long long)cfg.entries, (double)(lb_now_ns() - t0) / 1e6,
		(unsigned long long)failed);
	lat_measure(&a, pool, &r);
	lat_report(&a, &r);
	rc = cfg.out_path ? lat_write(&a, cfg.out_path) : 0;
out:
	lb_pool_destroy(pool);
	free(a.get_h);
	free(a.put_h);
	free(a.nivcsw);
	larder_close(a.cache);
	return rc;
}
