/*
 * test_engine_replay.c - a trace through the real engine lands within 1 point
 * of the simulator's miss ratio for the same policy and size.
 *
 * Each request of the trace is a larder_get() of an 8-byte key; a miss is
 * followed by a larder_put() of an 8-byte value (the cache-aside pattern),
 * with the maintainer thread running and applying the policy. All entries
 * charge the same slot, so a capacity of B bytes is B / slot objects, which
 * is the size the simulator (larder_sim_*, the same policy code) runs at.
 *
 * Two modes per policy:
 *   paced   after every PACE_PUTS puts the test waits until the maintainer
 *           has applied them (larder__test_quiesce): the maintainer's
 *           evictions keep up with the writer to within PACE_PUTS entries
 *           (2% of this cache), as they do when requests arrive slower than
 *           the maintainer works. Asserted: |engine - simulator| <= 0.01.
 *   free    no waiting: the replay runs as fast as one thread can, and the
 *           engine may hold up to its overshoot bound (max(4 MiB, 1%) of
 *           capacity) beyond capacity until the maintainer catches up, and
 *           may drop hit samples. Printed for information, not asserted:
 *           on a 64 KiB cache the overshoot bound is 64 times the capacity.
 *
 *   test_sim_engine_replay TRACES_DIR [TRACE]   (default cache2k_web12)
 * Exit 0 pass, 1 fail, 77 skipped (no trace).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/testing.h"
#include "larder.h"

#define CAPACITY_BYTES (64u << 10)
#define PACE_PUTS 32

static uint64_t *ids;
static size_t n_ids;

static int load(const char *dir, const char *name)
{
	char path[1024], line[256];
	snprintf(path, sizeof path, "%s/%s.txt.gz", dir, name);
	gzFile f = gzopen(path, "rb");
	if (!f)
		return 77;
	size_t cap = 0;
	while (gzgets(f, line, sizeof line)) {
		if (n_ids == cap) {
			cap = cap ? cap * 2 : 1 << 16;
			uint64_t *p = realloc(ids, cap * sizeof *p);
			if (!p) {
				gzclose(f);
				return 1;
			}
			ids = p;
		}
		ids[n_ids++] = strtoull(line, NULL, 10);
	}
	gzclose(f);
	return n_ids ? 0 : 1;
}

/* Miss ratio of the engine; *slot gets the bytes one entry charges. */
static double engine_run(enum larder_policy pol, int paced, uint64_t *slot, int *err)
{
	larder_config *cfg;
	larder *c;
	*err = 1;
	if (larder_config_create(&cfg) != LARDER_OK)
		return 0;
	int rc = larder_config_set_capacity(cfg, CAPACITY_BYTES) |
		 larder_config_set_policy(cfg, pol) | larder_config_set_hash_seed(cfg, 7) |
		 larder_config_set_write_wait_ms(cfg, 10000);
	if (rc != LARDER_OK || larder_open(&c, cfg) != LARDER_OK) {
		larder_config_destroy(cfg);
		return 0;
	}
	larder_config_destroy(cfg);
	uint64_t misses = 0;
	for (size_t i = 0; i < n_ids; i++) {
		uint64_t v;
		size_t len;
		rc = larder_get(c, &ids[i], sizeof ids[i], &v, sizeof v, &len);
		if (rc == LARDER_MISS) {
			misses++;
			if (larder_put(c, &ids[i], sizeof ids[i], &ids[i], sizeof ids[i],
				       LARDER_TTL_NEVER) != LARDER_OK) {
				fprintf(stderr, "FAIL: larder_put at request %zu\n", i);
				larder_close(c);
				return 0;
			}
			if (paced && misses % PACE_PUTS == 0 && larder__test_quiesce(c, 10000) != 0) {
				fprintf(stderr, "FAIL: maintainer did not quiesce\n");
				larder_close(c);
				return 0;
			}
		} else if (rc != LARDER_OK) {
			fprintf(stderr, "FAIL: larder_get returned %d\n", rc);
			larder_close(c);
			return 0;
		}
	}
	uint64_t st[LARDER_STAT_COUNT];
	if (larder__test_quiesce(c, 10000) != 0 ||
	    larder_stats(c, st, LARDER_STAT_COUNT) != LARDER_OK || st[LARDER_STAT_ENTRIES] == 0) {
		larder_close(c);
		return 0;
	}
	*slot = st[LARDER_STAT_USED_BYTES] / st[LARDER_STAT_ENTRIES];
	larder_close(c);
	*err = 0;
	return (double)misses / (double)n_ids;
}

static double sim_run(enum larder_policy pol, uint64_t objects, int *err)
{
	larder_sim *s;
	*err = 1;
	if (larder_sim_create(&s, pol, objects, 0) != LARDER_OK)
		return 0;
	uint64_t misses = 0;
	for (size_t i = 0; i < n_ids; i++) {
		int rc = larder_sim_access(s, ids[i], 1);
		if (rc < 0) {
			larder_sim_destroy(s);
			return 0;
		}
		misses += (rc == 0);
	}
	larder_sim_destroy(s);
	*err = 0;
	return (double)misses / (double)n_ids;
}

int main(int argc, char **argv)
{
	const char *trace = argc > 2 ? argv[2] : "cache2k_web12";
	if (argc < 2)
		return 1;
	int rc = load(argv[1], trace);
	if (rc == 77) {
		printf("SKIPPED: no %s in %s\n", trace, argv[1]);
		return 77;
	}
	if (rc)
		return 1;
	const enum larder_policy pols[] = {LARDER_POLICY_LRU, LARDER_POLICY_S3FIFO,
					   LARDER_POLICY_WTINYLFU, LARDER_POLICY_ARC,
					   LARDER_POLICY_DEFAULT};
	const char *names[] = {"lru", "s3fifo", "wtinylfu", "arc", "default"};
	int bad = 0;
	for (size_t k = 0; k < sizeof pols / sizeof pols[0]; k++) {
		uint64_t slot = 0, slot2 = 0;
		int e1, e2, e3;
		double paced = engine_run(pols[k], 1, &slot, &e1);
		double freerun = engine_run(pols[k], 0, &slot2, &e2);
		if (e1 || e2 || slot == 0) {
			fprintf(stderr, "FAIL %s: engine run failed\n", names[k]);
			bad++;
			continue;
		}
		uint64_t objects = CAPACITY_BYTES / slot;
		double sim = sim_run(pols[k], objects, &e3);
		double d = paced - sim;
		int ok = !e3 && d <= 0.01 && d >= -0.01;
		printf("%s %-8s %s: %llu B slots, %llu objects: engine paced %.4f, simulator %.4f "
		       "(diff %+.4f); free-running %.4f\n",
		       ok ? "PASS" : "FAIL", names[k], trace, (unsigned long long)slot,
		       (unsigned long long)objects, paced, sim, d, freerun);
		bad += !ok;
	}
	free(ids);
	printf("%s\n", bad ? "FAILED" : "all passed");
	return bad ? 1 : 0;
}
