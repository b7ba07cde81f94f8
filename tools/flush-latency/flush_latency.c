/*
 * tools/flush-latency/flush_latency.c - how long larder_flush() takes beside
 * writers that keep a small cache evicting (docs/bench.md, "Flush beside
 * writers"). A measurement, not a test: the public larder.h only, so that
 * the same source builds against an older tree's library (compare.sh).
 *
 *   flush-latency [runs] [flushes] [capacity KiB] [K...]
 *   (defaults: 5 runs, 100 flushes, 256 KiB, K = 1 2 4)
 *
 * Per run and K: opens a cache of K shards, starts two writer threads that
 * put new keys (100 to 299-byte values) without pause, waits until 20,000
 * evictions have been counted, then calls larder_flush `flushes` times on a
 * fixed schedule, one every 20 ms (CLOCK_MONOTONIC), and takes each call's
 * latency from its scheduled time, not from when the previous call let it
 * start: a flush that outlasts the schedule delays the ones due meanwhile,
 * and they count that wait, as callers arriving at those times would
 * (timing back-to-back calls instead counts one long flush once and the
 * many quick ones after it, when the writers have stalled at the memory
 * bound and there is nothing left to do, each). Prints their median, 90th
 * percentile and maximum in microseconds; at the end, per K, the median
 * over the runs of the runs' medians. Nothing here is asserted: the figures
 * depend on the machine and its load (the writers, K maintainers and the
 * flushing thread share whatever cores there are).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "larder.h"

#define MAX_RUNS 64
#define MAX_K 8
#define WRITERS 2
#define PERIOD_US 20000.0 /* the schedule: a flush due every 20 ms */

struct writer {
	larder *c;
	atomic_int *stop;
	char kind;
	int failed;
};

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	char key[32], value[300];
	memset(value, 'w', sizeof value);
	for (unsigned long long i = 0; !atomic_load_explicit(w->stop, memory_order_relaxed); i++) {
		int n = snprintf(key, sizeof key, "%c%llu", w->kind, i);
		int rc = larder_put(w->c, key, (size_t)n, value, 100 + i % 200, LARDER_TTL_NEVER);
		if (rc != LARDER_OK && rc != LARDER_EBUSY) {
			w->failed = rc;
			break;
		}
	}
	return NULL;
}

static double now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static uint64_t evictions(larder *c)
{
	uint64_t v[LARDER_STAT_EVICTIONS + 1];
	if (larder_stats(c, v, LARDER_STAT_EVICTIONS + 1) != LARDER_OK)
		return 0;
	return v[LARDER_STAT_EVICTIONS];
}

/* One run at K shards: the flushes' median (us), or a negative value on error. */
static double run_one(unsigned k, unsigned flushes, uint64_t capacity)
{
	larder_config *cfg = NULL;
	if (larder_config_create(&cfg) != LARDER_OK)
		return -1;
	if (larder_config_set_capacity(cfg, capacity) != LARDER_OK ||
	    larder_config_set_shards(cfg, k) != LARDER_OK) {
		larder_config_destroy(cfg);
		return -1;
	}
	larder *c = NULL;
	int rc = larder_open(&c, cfg);
	larder_config_destroy(cfg);
	if (rc != LARDER_OK)
		return -1;
	atomic_int stop = 0;
	struct writer w[WRITERS];
	pthread_t t[WRITERS];
	for (int i = 0; i < WRITERS; i++) {
		w[i] = (struct writer){c, &stop, (char)('a' + i), 0};
		if (pthread_create(&t[i], NULL, writer_main, &w[i]) != 0)
			abort();
	}
	while (evictions(c) < 20000)
		nanosleep(&(struct timespec){0, 1000000}, NULL);
	double *lat = malloc(flushes * sizeof *lat);
	if (!lat)
		abort();
	unsigned failed = 0;
	double due = now_us();
	for (unsigned i = 0; i < flushes; i++, due += PERIOD_US) {
		double wait_us = due - now_us();
		if (wait_us > 0)
			nanosleep(&(struct timespec){0, (long)(wait_us * 1000)}, NULL);
		failed += larder_flush(c, 10000) != LARDER_OK;
		lat[i] = now_us() - due;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < WRITERS; i++)
		pthread_join(t[i], NULL);
	larder_close(c);
	qsort(lat, flushes, sizeof *lat, cmp_double);
	double median = lat[flushes / 2];
	printf("K=%u median_us=%.1f p90_us=%.1f max_us=%.1f flushes=%u not_ok=%u writer_errors=%d\n",
	       k, median, lat[flushes * 9 / 10], lat[flushes - 1], flushes, failed,
	       w[0].failed ? w[0].failed : w[1].failed);
	fflush(stdout);
	free(lat);
	return failed || w[0].failed || w[1].failed ? -1 : median;
}

int main(int argc, char **argv)
{
	unsigned runs = argc > 1 ? (unsigned)atoi(argv[1]) : 5;
	unsigned flushes = argc > 2 ? (unsigned)atoi(argv[2]) : 100;
	uint64_t capacity = (argc > 3 ? (uint64_t)atoll(argv[3]) : 256) * 1024;
	unsigned ks[MAX_K] = {1, 2, 4}, nk = 3;
	if (argc > 4)
		for (nk = 0; nk < MAX_K && (int)nk + 4 < argc; nk++)
			ks[nk] = (unsigned)atoi(argv[nk + 4]);
	if (!runs || runs > MAX_RUNS || !flushes || !nk) {
		fprintf(stderr, "usage: flush-latency [runs<=%d] [flushes] [capacity KiB] [K...]\n",
			MAX_RUNS);
		return 2;
	}
	static double med[MAX_K][MAX_RUNS];
	for (unsigned r = 0; r < runs; r++)
		for (unsigned j = 0; j < nk; j++) {
			printf("run=%u ", r);
			med[j][r] = run_one(ks[j], flushes, capacity);
			if (med[j][r] < 0) {
				fprintf(stderr, "flush-latency: K=%u failed\n", ks[j]);
				return 1;
			}
		}
	for (unsigned j = 0; j < nk; j++) {
		qsort(med[j], runs, sizeof med[j][0], cmp_double);
		printf("summary K=%u median_of_medians_us=%.1f min_us=%.1f max_us=%.1f runs=%u\n",
		       ks[j], med[j][runs / 2], med[j][0], med[j][runs - 1], runs);
	}
	return 0;
}
