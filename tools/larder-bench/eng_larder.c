/*
 * eng_larder.c - larder itself, through its public API only (larder.h).
 *
 * The cache is opened with the run's capacity, the working set as the
 * expected entry count, a fixed hash seed (so instruction counts repeat from
 * run to run) and otherwise the defaults a user gets. get is larder_get()
 * (copy-out into the caller's buffer), put is larder_put() with the run's TTL
 * (--ttl-ms; none by default). --shards K opens it with K shards.
 * LB_LARDER_STATS=1 prints its maintainers' passes at close (lgr_close).
 * LB_PIN=same|split places its maintainer threads (open_pinned).
 */
#define _GNU_SOURCE /* pthread_setaffinity_np, CPU_SET */
#include <dirent.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "larder.h"

#include "bench.h"

/* larder_open(), its maintainer threads placed as LB_PIN asks: a thread
 * starts with its creator's CPU mask, so the opening thread takes the
 * maintainers' mask for the call and its own back after. Worker 0 runs on
 * CPU 0 (--pin, pool.c): same puts them there, split on every other CPU. */
static int open_pinned(larder **out, const larder_config *lc, enum lb_pin_maint pin)
{
	cpu_set_t mine, maint;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);

	if (pin == LB_PIN_OFF)
		return larder_open(out, lc);
	CPU_ZERO(&maint);
	if (pin == LB_PIN_SAME)
		CPU_SET(0, &maint);
	for (long i = 1; pin == LB_PIN_SPLIT && i < ncpu && i < CPU_SETSIZE; i++)
		CPU_SET((int)i, &maint);
	if (pthread_getaffinity_np(pthread_self(), sizeof(mine), &mine) != 0 ||
	    pthread_setaffinity_np(pthread_self(), sizeof(maint), &maint) != 0) {
		fprintf(stderr, "larder-bench: LB_PIN: cannot set the CPU mask\n");
		return LARDER_EINVAL;
	}
	int rc = larder_open(out, lc);
	if (pthread_setaffinity_np(pthread_self(), sizeof(mine), &mine) != 0)
		fprintf(stderr, "larder-bench: LB_PIN: cannot restore the CPU mask\n");
	return rc;
}

int lb_larder_open(larder **out, const struct lb_config *cfg, uint64_t capacity,
		   uint64_t expected)
{
	larder_config *lc = NULL;
	int rc = larder_config_create(&lc);

	if (rc != LARDER_OK)
		return rc;
	if ((rc = larder_config_set_capacity(lc, capacity)) != LARDER_OK ||
	    (rc = larder_config_set_expected_entries(lc, expected)) != LARDER_OK ||
	    (rc = larder_config_set_hash_seed(lc, cfg->seed)) != LARDER_OK)
		goto done;
	if (cfg->shards > 1 && (rc = larder_config_set_shards(lc, cfg->shards)) != LARDER_OK)
		goto done;
	if (cfg->key_size > 250 &&
	    (rc = larder_config_set_max_key_bytes(lc, cfg->key_size)) != LARDER_OK)
		goto done;
	if (cfg->value_size > ((size_t)1 << 20) &&
	    (rc = larder_config_set_max_value_bytes(lc, cfg->value_size)) != LARDER_OK)
		goto done;
	rc = open_pinned(out, lc, cfg->pin_maint);
done:
	larder_config_destroy(lc);
	return rc;
}

static int lgr_open(void **out, const struct lb_config *cfg)
{
	larder *c = NULL;
	int rc = lb_larder_open(&c, cfg, cfg->capacity_bytes, cfg->entries);
	if (rc != LARDER_OK)
		fprintf(stderr, "larder-bench: larder_open: %s\n", larder_strerror(rc));
	*out = c;
	return rc == LARDER_OK ? 0 : -1;
}

/* The CPU time of the process's larder-maint/K threads so far, user and
 * system, in clock ticks (/proc/self/task/TID/stat, fields 14 and 15; the
 * name is the engine's, docs/shards.md). 0 when /proc cannot be read. */
static int maint_ticks(unsigned long long *user, unsigned long long *sys)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *t;

	*user = *sys = 0;
	if (!d)
		return 0;
	while ((t = readdir(d)) != NULL) {
		char path[64], buf[512];
		FILE *f;
		size_t n = 0;
		if (t->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%.16s/stat", t->d_name);
		if ((f = fopen(path, "r")) != NULL) {
			n = fread(buf, 1, sizeof(buf) - 1, f);
			fclose(f);
		}
		buf[n] = 0;
		/* pid (comm) state ...: the name is between the first '(' and
		 * the last ')'; utime and stime are the 12th and 13th fields
		 * after it. */
		char *open = strchr(buf, '('), *close = strrchr(buf, ')');
		unsigned long long u, k;
		if (!open || !close || strncmp(open + 1, "larder-maint", 12) != 0 ||
		    sscanf(close + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &u,
			   &k) != 2)
			continue;
		*user += u;
		*sys += k;
	}
	closedir(d);
	return 1;
}

/* LB_LARDER_STATS=1 (tools/larder-bench/shards.sh, pin.sh, which read the
 * fields by position; profile.sh insert): the cache's writes, its
 * maintainers' passes, the events that overflowed into the spill, the
 * writes that waited for memory and for the maintainer (a spill at its
 * bound), its evictions, and its maintainers' user and system CPU time, over
 * the whole run (preload and warm-up included), and its entries at the end,
 * on stderr at close. */
static void lgr_close(void *eng)
{
	uint64_t v[LARDER_STAT_COUNT];
	unsigned long long user, sys;
	if (getenv("LB_LARDER_STATS") && larder_stats(eng, v, LARDER_STAT_COUNT) == LARDER_OK)
		fprintf(stderr,
			"larder-bench: larder stats: writes %llu passes %llu spilled %llu "
			"memory-waits %llu maint-waits %llu evictions %llu entries %llu\n",
			(unsigned long long)v[LARDER_STAT_WRITES],
			(unsigned long long)v[LARDER_STAT_MAINT_PASSES],
			(unsigned long long)v[LARDER_STAT_EVENTS_SPILLED],
			(unsigned long long)v[LARDER_STAT_WRITE_WAITS],
			(unsigned long long)v[LARDER_STAT_MAINT_WAITS],
			(unsigned long long)v[LARDER_STAT_EVICTIONS],
			(unsigned long long)v[LARDER_STAT_ENTRIES]);
	if (getenv("LB_LARDER_STATS") && maint_ticks(&user, &sys))
		fprintf(stderr, "larder-bench: maintainer ticks: user %llu system %llu\n", user, sys);
	larder_close(eng);
}

static inline int lgr_get(void *eng, const uint8_t *key, size_t key_len, uint8_t *buf,
			  size_t buf_len)
{
	size_t len;
	return larder_get(eng, key, key_len, buf, buf_len, &len) == LARDER_OK;
}

static inline int lgr_put(void *eng, const uint8_t *key, size_t key_len, const uint8_t *val,
			  size_t val_len, uint64_t ttl_ms)
{
	return larder_put(eng, key, key_len, val, val_len,
			  ttl_ms ? ttl_ms : LARDER_TTL_DEFAULT) == LARDER_OK ? 0 : -1;
}

static uint64_t lgr_run(void *eng, struct lb_tctx *t, const struct lb_job *job)
{
	return lb_run_loop(eng, t, job, lgr_get, lgr_put);
}

const struct lb_engine lb_engine_larder = {
	.name = "larder",
	.about = "larder_get (copy-out) / larder_put",
	.max_threads = { 0, 0, 0 },
	.open = lgr_open,
	.put = lgr_put,
	.run = lgr_run,
	.close = lgr_close,
};
