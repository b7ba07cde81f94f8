/*
 * bigset.c - --bigset N: a working set far larger than the CPU caches, where
 * each lookup's index bucket and entry are DRAM misses, comparing
 * larder_get() in a loop with larder_get_batch() of 8, 16 and 32 keys.
 *
 * Both forms draw the same uniform (or Zipf) keys, generate them the same way
 * and copy every found value into the same buffer, so the only difference is
 * the engine's: the batch hashes all keys and prefetches buckets and entries
 * before touching them, overlapping the misses that a loop of single gets
 * takes one after another. Throughput is keys looked up per second on one
 * thread (the main one). The capacity defaults to twice the bytes needed, so
 * nothing is evicted; the hit ratio is printed to prove it.
 * Rounds interleave the four forms as the matrix does (MATRIX-M1 in matrix.c).
 */
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

#define FORMS 4
static const unsigned batch_of[FORMS] = { 1, 8, 16, 32 };

struct copy_ctx {
	uint8_t *buf;
	size_t cap;
	uint64_t found;
	uint64_t sink;
};

static void copy_out(void *ctxp, size_t index, const void *value, size_t value_len)
{
	struct copy_ctx *c = ctxp;
	(void)index;
	memcpy(c->buf, value, value_len < c->cap ? value_len : c->cap);
	c->found++;
	c->sink += c->buf[0];
}

/*
 * One timed run of one form; returns keys per second of wall time, sets
 * *cpu_rate to keys per second of the thread's CPU time, adds hits/lookups.
 */
static double run_form(larder *cache, const struct lb_config *cfg, struct lb_tctx *t,
		       unsigned batch, uint64_t *hits, uint64_t *lookups, double *cpu_rate)
{
	uint8_t keys[32][64];
	const void *kp[32];
	size_t kl[32];
	struct copy_ctx cc = { t->buf, cfg->value_size, 0, 0 };
	const uint64_t c0 = lb_thread_cpu_ns(), t0 = lb_now_ns();
	const uint64_t until = t0 + (uint64_t)cfg->duration_ms * 1000000u;
	uint64_t n = 0, now;
	size_t len;

	for (unsigned i = 0; i < 32; i++) {
		kp[i] = keys[i];
		kl[i] = cfg->key_size;
	}
	do {
		for (unsigned rep = 0; rep < 64; rep++) {
			if (batch == 1) {
				lb_key(t->key, cfg->key_size, lb_pick(t, cfg->entries, lb_rand(t)));
				if (larder_get(cache, t->key, cfg->key_size, t->buf, cfg->value_size,
					       &len) == LARDER_OK) {
					cc.found++;
					cc.sink += t->buf[0];
				}
			} else {
				for (unsigned i = 0; i < batch; i++)
					lb_key(keys[i], cfg->key_size,
					       lb_pick(t, cfg->entries, lb_rand(t)));
				long got = larder_get_batch(cache, batch, kp, kl, copy_out, &cc);
				if (got < 0)
					t->write_errors++; /* counted as an error below */
			}
			n += batch;
		}
		now = lb_now_ns();
	} while (now < until);
	*hits += cc.found;
	*lookups += n;
	t->sink += cc.sink;
	*cpu_rate = (double)n * 1e9 / (double)(lb_thread_cpu_ns() - c0);
	return (double)n * 1e9 / (double)(now - t0);
}

static int load(larder *cache, const struct lb_config *cfg)
{
	uint8_t key[64] = { 0 }, *val = calloc(1, cfg->value_size + 8);
	uint64_t t0 = lb_now_ns(), rss0 = lb_rss_bytes(), failed = 0;

	if (!val)
		return -1;
	for (uint64_t i = 0; i < cfg->entries; i++) {
		lb_key(key, cfg->key_size, i);
		if (cfg->value_size >= 8)
			memcpy(val, &i, 8);
		if (larder_put(cache, key, cfg->key_size, val, cfg->value_size,
			       cfg->ttl_ms ? cfg->ttl_ms : LARDER_TTL_DEFAULT) != LARDER_OK)
			failed++;
		if ((i & 0xfffff) == 0)
			lb_progress("bigset: loading %llu/%llu", (unsigned long long)i,
				    (unsigned long long)cfg->entries);
	}
	double secs = (double)(lb_now_ns() - t0) / 1e9;
	uint64_t rss = lb_rss_bytes() - rss0, st[LARDER_STAT_COUNT] = { 0 };
	if (larder_stats(cache, st, LARDER_STAT_COUNT) != LARDER_OK)
		memset(st, 0, sizeof(st));
	printf("load: %llu puts in %.2f s (%.2f M/s), %llu failed; RSS +%.1f MiB = %.1f B/entry; "
	       "used_bytes %.1f B/entry; index slots %llu\n",
	       (unsigned long long)cfg->entries, secs, (double)cfg->entries / secs / 1e6,
	       (unsigned long long)failed, (double)rss / (1 << 20),
	       (double)rss / (double)cfg->entries,
	       (double)st[LARDER_STAT_USED_BYTES] / (double)cfg->entries,
	       (unsigned long long)st[LARDER_STAT_INDEX_SLOTS]);
	free(val);
	return failed == cfg->entries ? -1 : 0;
}

/* Per form: Mkeys/s per measured round (wall, cpu), hits and lookups. */
struct forms {
	double mk[FORMS][200];
	double ck[FORMS][200];
	uint64_t hits[FORMS];
	uint64_t lookups[FORMS];
};

/* MATRIX-M1 (matrix.c) for the four forms: the form that goes first rotates. */
static void measure_forms(larder *cache, const struct lb_config *cfg, struct lb_tctx *t,
			  struct forms *fs)
{
	for (unsigned r = 0; r < cfg->warmup_rounds + cfg->rounds; r++) {
		int warm = r < cfg->warmup_rounds;
		unsigned rr = warm ? r : r - cfg->warmup_rounds;
		uint64_t h = 0, l = 0;
		for (unsigned k = 0; k < FORMS; k++) {
			unsigned f = (k + r) % FORMS;
			lb_progress("bigset: %s round %u, batch %2u", warm ? "warm-up" : "measure",
				    rr + 1, batch_of[f]);
			double cv, v = run_form(cache, cfg, t, batch_of[f], warm ? &h : &fs->hits[f],
						warm ? &l : &fs->lookups[f], &cv);
			if (!warm) {
				fs->mk[f][rr] = v / 1e6;
				fs->ck[f][rr] = cv / 1e6;
			}
		}
	}
}

static void report_forms(const struct lb_config *cfg, struct forms *fs)
{
	double med[FORMS], cmed[FORMS];

	printf("\n%-10s %15s  %-15s %10s | %11s %10s | %7s\n", "form", "median Mkeys/s",
	       "min..max", "vs single", "cpu Mkeys/s", "vs single", "hit%");
	for (unsigned f = 0; f < FORMS; f++) {
		char name[16], range[40];
		med[f] = lb_median(fs->mk[f], cfg->rounds); /* sorts mk[f] */
		cmed[f] = lb_median(fs->ck[f], cfg->rounds);
		snprintf(name, sizeof(name), f ? "batch %u" : "single", batch_of[f]);
		snprintf(range, sizeof(range), "%.2f..%.2f", fs->mk[f][0],
			 fs->mk[f][cfg->rounds - 1]);
		printf("%-10s %15.2f  %-15s %9.2fx | %11.2f %9.2fx | %7.1f\n", name, med[f], range,
		       med[f] / med[0], cmed[f], cmed[f] / cmed[0],
		       fs->lookups[f] ? 100.0 * (double)fs->hits[f] / (double)fs->lookups[f] : 0);
	}
	printf("(cpu = keys over the thread's own CPU time; it survives a busy machine)\n");
	printf("check: batch 16 / single: wall %.2f %s, cpu %.2f %s (bar >= 2.00)\n",
	       med[2] / med[0], med[2] / med[0] >= 2.0 ? "PASS" : "FAIL", cmed[2] / cmed[0],
	       cmed[2] / cmed[0] >= 2.0 ? "PASS" : "FAIL");
}

int lb_bigset_run(const struct lb_config *cfg_in)
{
	struct lb_config cfg = *cfg_in;
	static struct forms fs;
	larder *cache = NULL;
	struct lb_tctx t;
	int rc = -1;

	cfg.entries = cfg.bigset;
	if (cfg.key_size > 64 || cfg.rounds > 200) {
		fprintf(stderr, "larder-bench: --bigset takes keys up to 64 B and <= 200 rounds\n");
		return -1;
	}
	if (!cfg.capacity_given)
		cfg.capacity_bytes = cfg.entries * (cfg.key_size + cfg.value_size + 64) * 2;
	printf("larder-bench bigset: %llu entries, key %zu B, value %zu B, capacity %.0f MiB, "
	       "%s keys, 1 thread, %u rounds x %u ms after %u warm-up round(s)\n",
	       (unsigned long long)cfg.entries, cfg.key_size, cfg.value_size,
	       (double)cfg.capacity_bytes / (1 << 20), cfg.zipf_theta > 0 ? "zipf" : "uniform",
	       cfg.rounds, cfg.duration_ms, cfg.warmup_rounds);
	fflush(stdout);
	if (lb_larder_open(&cache, &cfg, cfg.capacity_bytes, cfg.entries) != LARDER_OK) {
		fprintf(stderr, "larder-bench: larder_open failed\n");
		return -1;
	}
	if (lb_tctx_init(&t, &cfg, 0) != 0 || load(cache, &cfg) != 0)
		goto out;
	measure_forms(cache, &cfg, &t, &fs);
	report_forms(&cfg, &fs);
	if (t.write_errors)
		printf("WARNING: larder_get_batch returned an error %llu times\n",
		       (unsigned long long)t.write_errors);
	rc = t.write_errors ? -1 : 0;
out:
	lb_tctx_fini(&t);
	larder_close(cache);
	return rc;
}
