/*
 * common.c - larder-bench's small shared services: clocks, per-thread
 * workload state, the Zipf sample ring, preloading and result arithmetic.
 *
 * The Zipf sampler is the one of Gray et al., "Quickly generating
 * billion-record synthetic databases" (SIGMOD 1994), as YCSB uses it. Its
 * pow() per sample would cost more than a cache lookup, so LB_ZIPF_RING
 * samples are drawn once before any timing and every thread walks the shared,
 * read-only ring from its own offset. Ranks are scattered over the key space
 * with lb_mix(rank) % entries, so hot keys are not neighbours in any table.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"

const char *const lb_scenario_names[LB_SCENARIOS] = { "read", "write", "mix9:1", "insert" };

/* Written once by lb_tctx_init()'s first caller on the main thread. */
static uint32_t *zipf_ring;
static double zipf_ring_theta;
static uint64_t zipf_ring_entries;

uint64_t lb_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t lb_thread_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void lb_progress(const char *fmt, ...)
{
	static int tty = -1;
	va_list ap;
	if (tty < 0)
		tty = isatty(2);
	fputs(tty ? "\r" : "", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(tty ? "\033[K" : "\n", stderr);
}

void lb_sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L };
	while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) != 0)
		;
}

static double unit_rand(uint64_t *state)
{
	uint64_t x = *state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return (double)((x * 0x2545f4914f6cdd1dull) >> 11) * 0x1.0p-53;
}

static int zipf_ring_build(const struct lb_config *cfg)
{
	const double n = (double)cfg->entries, theta = cfg->zipf_theta;
	double zetan = 0, zeta2 = 1.0 + pow(0.5, theta);
	uint64_t state = cfg->seed ^ 0x9e3779b97f4a7c15ull;

	if (zipf_ring && zipf_ring_theta == theta && zipf_ring_entries == cfg->entries)
		return 0;
	free(zipf_ring);
	zipf_ring = malloc(sizeof(*zipf_ring) * LB_ZIPF_RING);
	if (!zipf_ring)
		return -1;
	for (uint64_t i = 1; i <= cfg->entries; i++)
		zetan += pow((double)i, -theta);
	const double alpha = 1.0 / (1.0 - theta);
	const double eta = (1.0 - pow(2.0 / n, 1.0 - theta)) / (1.0 - zeta2 / zetan);
	for (uint32_t i = 0; i < LB_ZIPF_RING; i++) {
		double u = unit_rand(&state), uz = u * zetan;
		uint64_t rank;
		if (uz < 1.0)
			rank = 0;
		else if (uz < zeta2)
			rank = 1;
		else
			rank = (uint64_t)(n * pow(eta * u - eta + 1.0, alpha));
		if (rank >= cfg->entries)
			rank = cfg->entries - 1;
		zipf_ring[i] = (uint32_t)(lb_mix(rank) % cfg->entries);
	}
	zipf_ring_theta = theta;
	zipf_ring_entries = cfg->entries;
	return 0;
}

int lb_tctx_init(struct lb_tctx *t, const struct lb_config *cfg, unsigned tid)
{
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->rng = lb_mix(cfg->seed + 0x1000 * (uint64_t)(tid + 1)) | 1;
	t->fresh = cfg->entries + ((uint64_t)tid << 40); /* BENCH-W4 */
	t->key = calloc(1, LB_KEY_MAX);
	t->val = calloc(1, cfg->value_size + 8);
	t->buf = calloc(1, cfg->value_size + 8);
	if (!t->key || !t->val || !t->buf)
		goto fail;
	/* BENCH-W1: the filler past byte 16 is fixed for the whole run. */
	for (size_t i = 16; i < cfg->key_size; i++)
		t->key[i] = (uint8_t)(i * 131u);
	for (size_t i = 0; i < cfg->value_size; i++)
		t->val[i] = (uint8_t)(i + tid);
	if (cfg->zipf_theta > 0) {
		if (zipf_ring_build(cfg) != 0)
			goto fail;
		t->zring = zipf_ring;
		t->zpos = (uint32_t)lb_mix(t->rng);
	}
	return 0;
fail:
	lb_tctx_fini(t);
	return -1;
}

void lb_tctx_fini(struct lb_tctx *t)
{
	free(t->key);
	free(t->val);
	free(t->buf);
	t->key = t->val = t->buf = NULL;
}

uint64_t lb_preload(const struct lb_engine *e, void *eng, const struct lb_config *cfg)
{
	uint8_t *key = calloc(1, LB_KEY_MAX), *val = calloc(1, cfg->value_size + 8);
	uint64_t failed = 0;

	if (!key || !val) {
		free(key);
		free(val);
		return cfg->entries;
	}
	for (size_t i = 16; i < cfg->key_size; i++)
		key[i] = (uint8_t)(i * 131u);
	for (uint64_t i = 0; i < cfg->entries; i++) {
		lb_key(key, cfg->key_size, i);
		if (cfg->value_size >= 8)
			memcpy(val, &i, 8);
		if (e->put(eng, key, cfg->key_size, val, cfg->value_size, cfg->ttl_ms) != 0)
			failed++;
	}
	free(key);
	free(val);
	return failed;
}

uint64_t lb_rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");
	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

double lb_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}
