/*
 * memory.c - --memory[=BYTES]: memory handed back to the OS (docs/memory.md).
 *
 * One cache of capacity BYTES (default 8 GiB) goes through four phases; the
 * process RSS is read from /proc/self/statm throughout:
 *   a. fill to 97% of capacity, then larder_clear(): RSS must fall to within
 *      64 MiB of its value before the fill and stay there;
 *   b. fill again, then larder_set_capacity(BYTES / 10): RSS must settle at
 *      no more than 115% of the new capacity;
 *   c. churn at that capacity: random keys (a key space about 4x what
 *      fits), a fresh size drawn for every write, until 10x the capacity
 *      (--churn N: N x) has been written: RSS must never exceed 115% of
 *      capacity;
 *   d. the audit counters (larder_stats, larder_stats_size_class) after
 *      each phase.
 * --clear-only stops after a (to time the clear alone, in a third of the time).
 * a and b are judged on the samples from 2 s to 3 s after the call (the
 * bound is "within 2 s": settled by then and staying there); the timeline
 * is sampled every 10 ms and printed every 100 ms, past 3 s until the bound
 * is reached (at most 60 s), so that a failing phase's time is known too. c is judged on its
 * maximum over samples every 10 ms.
 *
 * Sizes: values are lognormal (median 1 KiB, sigma 1.5) clamped to
 * 64 B..64 KiB, keys 16 bytes, so the fill is a mix of every size class;
 * --value-size B fixes the value size instead (16/64 needs ~10^8 entries
 * for 8 GiB and an index that does not shrink; see docs/memory.md).
 * Writers: the largest --threads count (default: the CPUs online).
 * Every figure printed is measured in this run; nothing is assumed.
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"

#define MIB (1024.0 * 1024.0)
#define FILL_FRACTION 0.97
#define SAMPLE_MS 10u
#define PRINT_EVERY 10u    /* samples per printed row (100 ms) */
#define SETTLE_FROM_MS 2000u
#define SETTLE_TO_MS 3000u
#define SETTLE_MAX_MS 60000u
#define CLEAR_SLACK (64ull << 20)
#define BOUND_PCT 115u
#define SIZE_MIN 64u
#define SIZE_MAX_VALUE 65536u
#define LOGN_MU 6.931471805599453 /* ln(1024): median 1 KiB */
#define LOGN_SIGMA 1.5
#define CHURN_KEYSPACE_FACTOR 4u

enum mem_work { WORK_FILL, WORK_CHURN };

/* One writer thread; fields above `puts` are read-only while it runs. */
struct mem_writer {
	pthread_t thread;
	larder *cache;
	const struct lb_config *cfg;
	enum mem_work work;
	unsigned id, count;
	uint64_t keyspace;   /* churn: keys drawn from [0, keyspace) */
	uint64_t goal_bytes; /* churn: key + value bytes to write */
	const atomic_int *stop;
	atomic_uint *finished; /* bumped (release) when the writer is done */
	uint64_t puts, failed, bytes;
};

struct sample {
	uint64_t t_ms, rss, mapped, used, index;
};

static uint64_t stat_of(larder *cache, enum larder_stat which)
{
	uint64_t v[LARDER_STAT_COUNT];
	if (larder_stats(cache, v, LARDER_STAT_COUNT) != LARDER_OK)
		return 0;
	return v[which];
}

/* A value length: lognormal (Box-Muller on two xorshift draws) or fixed. */
static size_t draw_size(struct lb_tctx *t, const struct lb_config *cfg)
{
	if (cfg->value_size_given)
		return cfg->value_size;
	double u1 = ((double)(lb_rand(t) >> 11) + 1.0) * 0x1.0p-53;
	double u2 = (double)(lb_rand(t) >> 11) * 0x1.0p-53;
	double z = sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
	double v = exp(LOGN_MU + LOGN_SIGMA * z);
	if (v < SIZE_MIN)
		return SIZE_MIN;
	return v > SIZE_MAX_VALUE ? SIZE_MAX_VALUE : (size_t)v;
}

static void *writer_main(void *arg)
{
	struct mem_writer *w = arg;
	struct lb_tctx t;
	uint8_t key[16], *val = calloc(1, SIZE_MAX_VALUE > w->cfg->value_size ? SIZE_MAX_VALUE
									     : w->cfg->value_size);
	if (!val) {
		w->failed = w->puts = 1;
		atomic_fetch_add_explicit(w->finished, 1, memory_order_release);
		return NULL;
	}
	memset(&t, 0, sizeof(t));
	t.rng = lb_mix(w->cfg->seed + 0x9e37u * (w->id + 1) + w->work) | 1;
	for (size_t i = 0; i < SIZE_MAX_VALUE; i++)
		val[i] = (uint8_t)(i * 7u + w->id);
	for (uint64_t n = 0;; n++) {
		if ((n & 63) == 0 && atomic_load_explicit(w->stop, memory_order_relaxed))
			break;
		uint64_t k = w->work == WORK_FILL ? n * w->count + w->id
						  : ((lb_rand(&t) >> 32) * w->keyspace) >> 32;
		size_t len = draw_size(&t, w->cfg);
		lb_key(key, sizeof(key), k);
		memcpy(val, &n, sizeof(n));
		if (larder_put(w->cache, key, sizeof(key), val, len, LARDER_TTL_NEVER) != LARDER_OK)
			w->failed++;
		w->puts++;
		w->bytes += sizeof(key) + len;
		if (w->work == WORK_CHURN && w->bytes >= w->goal_bytes)
			break;
	}
	free(val);
	atomic_fetch_add_explicit(w->finished, 1, memory_order_release);
	return NULL;
}

static unsigned writer_count(const struct lb_config *cfg)
{
	unsigned n = 1;
	for (size_t i = 0; i < cfg->n_threads; i++)
		if (cfg->threads[i] > n)
			n = cfg->threads[i];
	return n;
}

static int start_writers(struct mem_writer *w, unsigned n, larder *cache,
			 const struct lb_config *cfg, enum mem_work work, uint64_t keyspace,
			 uint64_t goal_bytes, const atomic_int *stop, atomic_uint *finished)
{
	for (unsigned i = 0; i < n; i++) {
		w[i] = (struct mem_writer){ .cache = cache, .cfg = cfg, .work = work, .id = i,
					    .count = n, .keyspace = keyspace,
					    .goal_bytes = goal_bytes / n, .stop = stop,
					    .finished = finished };
		if (pthread_create(&w[i].thread, NULL, writer_main, &w[i]) != 0) {
			for (unsigned j = 0; j < i; j++)
				pthread_join(w[j].thread, NULL);
			return -1;
		}
	}
	return 0;
}

static void join_writers(struct mem_writer *w, unsigned n, uint64_t *puts, uint64_t *failed,
			 uint64_t *bytes)
{
	*puts = *failed = *bytes = 0;
	for (unsigned i = 0; i < n; i++) {
		pthread_join(w[i].thread, NULL);
		*puts += w[i].puts;
		*failed += w[i].failed;
		*bytes += w[i].bytes;
	}
}

static void print_audit(larder *cache, const char *phase)
{
	uint64_t v[LARDER_STAT_COUNT], cv[LARDER_CLASS_STAT_COUNT], sum_bytes = 0, sum_used = 0;
	if (larder_stats(cache, v, LARDER_STAT_COUNT) != LARDER_OK)
		return;
	printf("audit %s: entries %llu, used %.1f MiB, capacity %.1f MiB, mapped %.1f MiB "
	       "(reserve %.1f MiB in %llu pages, being unmapped %.1f MiB, large entries %.1f MiB), "
	       "returned %.1f MiB, evictions %llu, cleared %llu; index %.1f MiB (%llu growths, "
	       "%llu shrinks)\n",
	       phase, (unsigned long long)v[LARDER_STAT_ENTRIES], v[LARDER_STAT_USED_BYTES] / MIB,
	       v[LARDER_STAT_CAPACITY_BYTES] / MIB, v[LARDER_STAT_PAGES_MAPPED] / MIB,
	       v[LARDER_STAT_RESERVE_BYTES] / MIB, (unsigned long long)v[LARDER_STAT_RESERVE_PAGES],
	       v[LARDER_STAT_RETURNING_BYTES] / MIB, v[LARDER_STAT_LARGE_BYTES] / MIB, v[LARDER_STAT_PAGES_RETURNED] / MIB,
	       (unsigned long long)v[LARDER_STAT_EVICTIONS],
	       (unsigned long long)v[LARDER_STAT_CLEARED], v[LARDER_STAT_INDEX_BYTES] / MIB,
	       (unsigned long long)v[LARDER_STAT_INDEX_RESIZES],
	       (unsigned long long)v[LARDER_STAT_INDEX_SHRINKS]);
	printf("  %5s %7s %8s %8s %10s %10s %6s %9s\n", "class", "slot", "page", "pages", "used",
	       "free", "fill%", "MiB");
	for (size_t c = 0; c < larder_size_class_count(); c++) {
		if (larder_stats_size_class(cache, c, cv, LARDER_CLASS_STAT_COUNT) != LARDER_OK)
			return;
		sum_bytes += cv[LARDER_CLASS_BYTES];
		sum_used += cv[LARDER_CLASS_USED_BYTES];
		if (!cv[LARDER_CLASS_PAGES])
			continue;
		uint64_t slots = cv[LARDER_CLASS_SLOTS_USED] + cv[LARDER_CLASS_SLOTS_FREE];
		printf("  %5zu %7llu %8llu %8llu %10llu %10llu %6.1f %9.1f\n", c,
		       (unsigned long long)cv[LARDER_CLASS_SLOT_BYTES],
		       (unsigned long long)cv[LARDER_CLASS_PAGE_BYTES],
		       (unsigned long long)cv[LARDER_CLASS_PAGES],
		       (unsigned long long)cv[LARDER_CLASS_SLOTS_USED],
		       (unsigned long long)cv[LARDER_CLASS_SLOTS_FREE],
		       slots ? 100.0 * (double)cv[LARDER_CLASS_SLOTS_USED] / (double)slots : 0.0,
		       cv[LARDER_CLASS_BYTES] / MIB);
	}
	uint64_t parts = sum_bytes + v[LARDER_STAT_RESERVE_BYTES] + v[LARDER_STAT_RETURNING_BYTES] +
			 v[LARDER_STAT_LARGE_BYTES];
	printf("  all classes: %.1f MiB of pages, %.1f MiB in used slots (%.1f%%); classes + reserve "
	       "+ being unmapped + large = %.1f MiB (%s mapped)\n",
	       sum_bytes / MIB, sum_used / MIB,
	       sum_bytes ? 100.0 * (double)sum_used / (double)sum_bytes : 0.0, parts / MIB,
	       parts == v[LARDER_STAT_PAGES_MAPPED] ? "equals" : "differs from");
}

static struct sample take_sample(larder *cache, uint64_t t0)
{
	uint64_t v[LARDER_STAT_COUNT] = { 0 };
	struct sample s = { (lb_now_ns() - t0) / 1000000u, lb_rss_bytes(), 0, 0, 0 };
	if (larder_stats(cache, v, LARDER_STAT_COUNT) == LARDER_OK) {
		s.mapped = v[LARDER_STAT_PAGES_MAPPED];
		s.used = v[LARDER_STAT_USED_BYTES];
		s.index = v[LARDER_STAT_INDEX_BYTES];
	}
	return s;
}

static void sleep_until(uint64_t t_ns)
{
	struct timespec ts = { .tv_sec = (time_t)(t_ns / 1000000000u),
			       .tv_nsec = (long)(t_ns % 1000000000u) };
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
		;
}

static void print_sample_head(void)
{
	printf("  %7s %10s %11s %9s %10s\n", "t_ms", "rss_MiB", "mapped_MiB", "used_MiB",
	       "index_MiB");
}

static void print_sample(const struct sample *s)
{
	printf("  %7llu %10.1f %11.1f %9.1f %10.1f\n", (unsigned long long)s->t_ms, s->rss / MIB,
	       s->mapped / MIB, s->used / MIB, s->index / MIB);
}

/*
 * Samples from t0 until SETTLE_TO_MS, printing a row every 100 ms; returns
 * the largest RSS from SETTLE_FROM_MS on and the first time RSS was <= bound.
 */
static uint64_t settle_timeline(larder *cache, uint64_t t0, uint64_t bound, uint64_t *reach_ms)
{
	uint64_t settled_max = 0;
	*reach_ms = UINT64_MAX;
	print_sample_head();
	for (unsigned i = 0;; i++) {
		struct sample s = take_sample(cache, t0);
		if (s.rss <= bound && *reach_ms == UINT64_MAX)
			*reach_ms = s.t_ms;
		if (s.rss > bound)
			*reach_ms = UINT64_MAX; /* it rose again: not settled yet */
		if (s.t_ms >= SETTLE_FROM_MS && s.t_ms <= SETTLE_TO_MS && s.rss > settled_max)
			settled_max = s.rss;
		if (i % PRINT_EVERY == 0 || (s.t_ms >= SETTLE_TO_MS && *reach_ms != UINT64_MAX))
			print_sample(&s);
		/* Past the judged window, sampling goes on until the bound is
		 * reached (at most SETTLE_MAX_MS), so that a slow phase's time is
		 * measured too. */
		if (s.t_ms >= SETTLE_TO_MS && (*reach_ms != UINT64_MAX || s.t_ms >= SETTLE_MAX_MS))
			return settled_max;
		sleep_until(t0 + (uint64_t)(i + 1) * SAMPLE_MS * 1000000u);
	}
}

/* Fills to FILL_FRACTION of capacity with the writers; returns 0 or -1. */
static int fill(larder *cache, const struct lb_config *cfg, uint64_t capacity, const char *what)
{
	struct mem_writer w[LB_MAX_THREADS];
	unsigned n = writer_count(cfg);
	atomic_int stop = 0;
	atomic_uint finished = 0;
	uint64_t t0 = lb_now_ns(), goal = (uint64_t)((double)capacity * FILL_FRACTION), used = 0;
	uint64_t puts, failed, bytes;

	if (start_writers(w, n, cache, cfg, WORK_FILL, 0, 0, &stop, &finished) != 0)
		return -1;
	for (unsigned i = 0; used < goal && atomic_load(&finished) < n; i++) {
		lb_sleep_ms(2);
		used = stat_of(cache, LARDER_STAT_USED_BYTES);
		if (i % 250 == 0)
			lb_progress("%s: %.0f / %.0f MiB", what, used / MIB, goal / MIB);
	}
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	join_writers(w, n, &puts, &failed, &bytes);
	double s = (double)(lb_now_ns() - t0) / 1e9;
	printf("%s: %llu puts (%llu failed) by %u writers, %.0f MiB of keys+values in %.1f s "
	       "(%.0f MiB/s); RSS %.1f MiB\n",
	       what, (unsigned long long)puts, (unsigned long long)failed, n, bytes / MIB, s,
	       bytes / MIB / s, lb_rss_bytes() / MIB);
	return failed == puts ? -1 : 0;
}

static int verdict(const char *phase, int pass, const char *fmt, double measured, double bound)
{
	printf("%s: %s (", phase, pass ? "PASS" : "FAIL");
	printf(fmt, measured, bound);
	printf(")\n");
	return pass ? 0 : 1;
}

static int phase_clear(larder *cache, uint64_t rss0)
{
	uint64_t reach, bound = rss0 + CLEAR_SLACK;
	printf("\n== a. larder_clear(): RSS must fall to <= %.1f MiB (pre-fill %.1f + 64) within 2 s\n",
	       bound / MIB, rss0 / MIB);
	uint64_t t0 = lb_now_ns();
	int rc = larder_clear(cache);
	uint64_t call_us = (lb_now_ns() - t0) / 1000u;
	if (rc != LARDER_OK) {
		printf("larder_clear: %s\n", larder_strerror(rc));
		return 1;
	}
	printf("larder_clear() returned in %llu us\n", (unsigned long long)call_us);
	uint64_t worst = settle_timeline(cache, t0, bound, &reach);
	if (reach != UINT64_MAX)
		printf("RSS within the bound from %llu ms on\n", (unsigned long long)reach);
	print_audit(cache, "after clear");
	return verdict("phase a (clear)", worst <= bound,
		       "max RSS in 2..3 s %.1f MiB, bound %.1f MiB", worst / MIB, bound / MIB);
}

static int phase_shrink(larder *cache, uint64_t small)
{
	uint64_t reach, bound = small / 100u * BOUND_PCT;
	printf("\n== b. larder_set_capacity(%.1f MiB): RSS must settle at <= %.1f MiB within 2 s\n",
	       small / MIB, bound / MIB);
	uint64_t t0 = lb_now_ns();
	int rc = larder_set_capacity(cache, small);
	if (rc != LARDER_OK) {
		printf("larder_set_capacity: %s\n", larder_strerror(rc));
		return 1;
	}
	uint64_t worst = settle_timeline(cache, t0, bound, &reach);
	if (reach != UINT64_MAX)
		printf("RSS within the bound from %llu ms on\n", (unsigned long long)reach);
	print_audit(cache, "after shrink");
	return verdict("phase b (shrink)", worst <= bound,
		       "max RSS in 2..3 s %.1f MiB, bound %.1f MiB", worst / MIB, bound / MIB);
}

static int phase_churn(larder *cache, const struct lb_config *cfg, uint64_t capacity)
{
	struct mem_writer w[LB_MAX_THREADS];
	unsigned n = writer_count(cfg);
	atomic_int stop = 0;
	atomic_uint finished = 0;
	uint64_t bound = capacity / 100u * BOUND_PCT, goal = capacity * cfg->churn_factor;
	/* Mean entry ~ 3.3 KiB for the lognormal mix; the key space holds ~4x capacity. */
	uint64_t mean = cfg->value_size_given ? cfg->value_size + 16 + 24 : 3300;
	uint64_t keyspace = capacity / mean * CHURN_KEYSPACE_FACTOR;
	struct sample worst = { 0, 0, 0, 0, 0 };
	uint64_t puts, failed, bytes;

	/* Churn starts from a settled cache: its bound is about churn alone. */
	for (unsigned i = 0; i < 2000 && (stat_of(cache, LARDER_STAT_USED_BYTES) > capacity ||
					  stat_of(cache, LARDER_STAT_RETURNING_BYTES) > 0); i++)
		lb_sleep_ms(10);
	printf("\n== c. churn: %.0f MiB written at capacity %.1f MiB over %llu keys; RSS must stay "
	       "<= %.1f MiB\n",
	       goal / MIB, capacity / MIB, (unsigned long long)keyspace, bound / MIB);
	uint64_t t0 = lb_now_ns();
	if (start_writers(w, n, cache, cfg, WORK_CHURN, keyspace, goal, &stop, &finished) != 0)
		return 1;
	print_sample_head();
	for (unsigned i = 0;; i++) {
		struct sample s = take_sample(cache, t0);
		int done = atomic_load_explicit(&finished, memory_order_acquire) == n;
		if (s.rss > worst.rss)
			worst = s;
		if (i % (PRINT_EVERY * 10) == 0 || done)
			print_sample(&s);
		if (done)
			break;
		sleep_until(t0 + (uint64_t)(i + 1) * SAMPLE_MS * 1000000u);
	}
	join_writers(w, n, &puts, &failed, &bytes);
	double s = (double)(lb_now_ns() - t0) / 1e9;
	printf("churn: %llu puts (%llu failed), %.0f MiB in %.1f s; max RSS %.1f MiB at %llu ms "
	       "(mapped %.1f MiB, used %.1f MiB then)\n",
	       (unsigned long long)puts, (unsigned long long)failed, bytes / MIB, s,
	       worst.rss / MIB, (unsigned long long)worst.t_ms, worst.mapped / MIB,
	       worst.used / MIB);
	print_audit(cache, "after churn");
	return verdict("phase c (churn)", worst.rss <= bound, "max RSS %.1f MiB, bound %.1f MiB",
		       worst.rss / MIB, bound / MIB);
}

int lb_memory_run(const struct lb_config *cfg)
{
	larder *cache = NULL;
	uint64_t capacity = cfg->memory, small = capacity / 10;
	int fails = 0;

	printf("memory: capacity %.0f MiB, values %s, 16-byte keys, %u writers\n",
	       capacity / MIB,
	       cfg->value_size_given ? "fixed (--value-size)"
				     : "lognormal 64 B..64 KiB (median 1 KiB, sigma 1.5)",
	       writer_count(cfg));
	if (lb_larder_open(&cache, cfg, capacity, 4096) != LARDER_OK) {
		fprintf(stderr, "larder-bench: cannot open a %.0f MiB cache\n", capacity / MIB);
		return -1;
	}
	uint64_t rss0 = lb_rss_bytes();
	printf("RSS before the fill: %.1f MiB\n", rss0 / MIB);
	if (fill(cache, cfg, capacity, "fill 1") != 0)
		goto fail;
	print_audit(cache, "after fill 1");
	fails += phase_clear(cache, rss0);
	if (cfg->clear_only) {
		printf("\nmemory: clear phase %s (--clear-only)\n", fails ? "failed" : "passed");
		larder_close(cache);
		return fails ? -1 : 0;
	}
	if (fill(cache, cfg, capacity, "fill 2") != 0)
		goto fail;
	print_audit(cache, "after fill 2");
	fails += phase_shrink(cache, small);
	fails += phase_churn(cache, cfg, small);
	printf("\nmemory: %d of 3 phases failed\n", fails);
	larder_close(cache);
	return fails ? -1 : 0;
fail:
	printf("memory: a fill failed (every put refused)\n");
	larder_close(cache);
	return -1;
}
