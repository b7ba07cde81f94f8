/*
 * scale.c - --scale: one cache filled with many small entries (10^8 of a
 * 16-byte key and a 64-byte value by default), then read at random; what
 * each entry costs in memory beyond its 80 bytes of key and value.
 *
 * Phases
 *   1. baseline: the process's RSS (/proc/self/statm) just before
 *      larder_open(), after the bench's own buffers and reader pool exist;
 *   2. load: LB_SCALE_WRITERS threads each put one half of keys 0..N-1
 *      (BENCH-W1 in bench.h; the value's first 8 bytes are the key's index) while
 *      the main thread prints progress on stderr once a second;
 *   3. settle: wait until the maintainer has counted every entry
 *      (LARDER_STAT_ENTRIES), so RSS includes everything the load caused;
 *   4. report: load rate, RSS, overhead per entry =
 *      (RSS - baseline - 80 B x N) / N, and where it goes (index table,
 *      slab pages, the rest);
 *   5. read: uniform random larder_get() on 1..CPUs threads (--threads),
 *      rounds interleaved as in the matrix (MATRIX-M1 in matrix.c), median and
 *      range; every hit's value is checked against its key's index.
 *
 * The capacity defaults to twice the bytes needed and the expected entry
 * count is N, as a user who knows the size of the set would configure it, so
 * nothing is evicted and the index is sized once (table.h, LOAD). Misses or
 * wrong values make the run fail.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "pool.h"

#define LB_SCALE_DEFAULT 100000000ull
#define LB_SCALE_WRITERS 2u
#define LB_SCALE_STEP 65536u /* puts between two updates of the shared count */

struct scale_load {
	larder *cache;
	const struct lb_config *cfg;
	atomic_uint_fast64_t done; /* relaxed: a progress figure only */
};

struct scale_writer {
	struct scale_load *load;
	uint64_t first, end;
	uint64_t failed;
	pthread_t th;
};

static void *writer_main(void *arg)
{
	struct scale_writer *w = arg;
	const struct lb_config *cfg = w->load->cfg;
	uint8_t key[64] = { 0 }, *val = calloc(1, cfg->value_size + 8);
	uint64_t i = w->first;

	if (!val)
		w->failed = w->end - w->first;
	for (; val && i < w->end; i++) {
		lb_key(key, cfg->key_size, i);
		memcpy(val, &i, 8);
		if (larder_put(w->load->cache, key, cfg->key_size, val, cfg->value_size,
			       LARDER_TTL_DEFAULT) != LARDER_OK)
			w->failed++;
		if ((i - w->first) % LB_SCALE_STEP == LB_SCALE_STEP - 1)
			atomic_fetch_add_explicit(&w->load->done, LB_SCALE_STEP,
						  memory_order_relaxed);
	}
	/* The tail short of a step (or everything, when val failed): the main
	 * thread waits for the count to reach N. */
	atomic_fetch_add_explicit(&w->load->done,
				  val ? (w->end - w->first) % LB_SCALE_STEP : w->end - w->first,
				  memory_order_relaxed);
	free(val);
	return NULL;
}

/* Phase 2; returns the seconds it took, or a negative value on failure. */
static double load(larder *cache, const struct lb_config *cfg, uint64_t *failed)
{
	struct scale_load ld = { .cache = cache, .cfg = cfg };
	struct scale_writer w[LB_SCALE_WRITERS];
	const uint64_t t0 = lb_now_ns();
	unsigned started = 0;

	atomic_init(&ld.done, 0);
	for (unsigned i = 0; i < LB_SCALE_WRITERS; i++) {
		w[i] = (struct scale_writer){ .load = &ld,
					      .first = cfg->entries * i / LB_SCALE_WRITERS,
					      .end = cfg->entries * (i + 1) / LB_SCALE_WRITERS };
		if (pthread_create(&w[i].th, NULL, writer_main, &w[i]) != 0)
			break;
		started++;
	}
	for (unsigned tick = 1; started == LB_SCALE_WRITERS; tick++) {
		lb_sleep_ms(100);
		uint64_t n = atomic_load_explicit(&ld.done, memory_order_relaxed);
		double s = (double)(lb_now_ns() - t0) / 1e9;
		if (n >= cfg->entries)
			break;
		if (tick % 10 == 0)
			lb_progress("scale: loaded %llu/%llu (%.0f%%), %.2f M puts/s, RSS %.2f GiB",
			    (unsigned long long)n, (unsigned long long)cfg->entries,
			    100.0 * (double)n / (double)cfg->entries, (double)n / s / 1e6,
				    (double)lb_rss_bytes() / (1u << 30));
	}
	*failed = 0;
	for (unsigned i = 0; i < started; i++) {
		pthread_join(w[i].th, NULL);
		*failed += w[i].failed;
	}
	if (started != LB_SCALE_WRITERS)
		return -1;
	return (double)(lb_now_ns() - t0) / 1e9;
}

/* Phase 3: waits (up to 60 s) until the maintainer has counted n entries. */
static void settle(larder *cache, uint64_t n, uint64_t *st)
{
	for (unsigned waited = 0;; waited += 100) {
		if (larder_stats(cache, st, LARDER_STAT_COUNT) != LARDER_OK)
			memset(st, 0, LARDER_STAT_COUNT * sizeof(*st));
		if (st[LARDER_STAT_ENTRIES] >= n || waited >= 60000)
			return;
		lb_sleep_ms(100);
	}
}

/* The process's AnonHugePages (transparent huge pages in use), in bytes. */
static uint64_t anon_huge_bytes(void)
{
	char line[256];
	unsigned long long kb = 0;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %llu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

static void report_memory(const struct lb_config *cfg, uint64_t base, uint64_t rss,
			  const uint64_t *st)
{
	const double n = (double)cfg->entries;
	const double data = (double)(cfg->key_size + cfg->value_size);
	const double index = (double)st[LARDER_STAT_INDEX_SLOTS] / 7.0 * 64.0;
	const double pages = (double)st[LARDER_STAT_PAGES_MAPPED];
	const double over = ((double)rss - (double)base - data * n) / n;

	printf("RSS: baseline %.1f MiB, after load %.1f MiB (+%.1f B/entry); "
	       "transparent huge pages %.1f MiB\n",
	       (double)base / (1 << 20), (double)rss / (1 << 20),
	       ((double)rss - (double)base) / n, (double)anon_huge_bytes() / (1 << 20));
	printf("overhead per entry = (RSS - baseline - %.0f B x entries) / entries = %.1f B "
	       "(target <= 32)\n",
	       data, over);
	printf("  index: %llu slots, load %.3f, %.1f B/entry\n",
	       (unsigned long long)st[LARDER_STAT_INDEX_SLOTS],
	       n / (double)st[LARDER_STAT_INDEX_SLOTS], index / n);
	printf("  slab pages: %.1f B/entry beyond key and value (used_bytes %.1f B/entry)\n",
	       pages / n - data, (double)st[LARDER_STAT_USED_BYTES] / n);
	printf("  the rest (thread state, event rings, policy): %.1f B/entry\n",
	       ((double)rss - (double)base - pages - index) / n);
}

struct scale_read {
	larder *cache;
	const struct lb_config *cfg;
};

/* Phase 5's task: uniform random gets; a wrong value counts as an error. */
static uint64_t read_task(void *arg, struct lb_tctx *t, const atomic_int *stop)
{
	const struct scale_read *rd = arg;
	const struct lb_config *cfg = rd->cfg;
	larder *cache = rd->cache;
	uint64_t done = 0;
	size_t len;

	do {
		for (unsigned i = 0; i < LB_CHUNK; i++) {
			uint64_t k = lb_pick(t, cfg->entries, lb_rand(t)), got;
			lb_key(t->key, cfg->key_size, k);
			if (larder_get(cache, t->key, cfg->key_size, t->val, cfg->value_size,
				       &len) != LARDER_OK) {
				t->misses++;
				continue;
			}
			memcpy(&got, t->val, 8);
			t->hits++;
			t->write_errors += got != k || len != cfg->value_size;
		}
		done += LB_CHUNK;
	} while (!atomic_load_explicit(stop, memory_order_relaxed)); /* BENCH-W3 */
	return done;
}

/* Phase 5; returns the wrong values and misses seen. */
static uint64_t read_rounds(larder *cache, const struct lb_config *cfg, struct lb_pool *pool)
{
	static double mops[64][200], cops[64][200];
	uint64_t bad = 0, hits = 0;
	struct lb_thread_result res[LB_MAX_THREADS];
	struct scale_read rd = { cache, cfg };

	for (unsigned r = 0; r < cfg->warmup_rounds + cfg->rounds; r++) {
		for (size_t k = 0; k < cfg->n_threads; k++) {
			size_t c = (k + r) % cfg->n_threads;
			unsigned nt = cfg->threads[c];
			lb_progress("scale: read round %u/%u, %u thread(s)", r + 1,
				    cfg->warmup_rounds + cfg->rounds, nt);
			struct lb_run_stats st;
			double v = lb_pool_run(pool, nt, cfg->duration_ms, read_task, &rd, res,
					       &st);
			for (unsigned i = 0; i < nt; i++) {
				bad += res[i].misses + res[i].write_errors;
				hits += res[i].hits;
			}
			if (r >= cfg->warmup_rounds) {
				mops[c][r - cfg->warmup_rounds] = v / 1e6;
				cops[c][r - cfg->warmup_rounds] = st.cpu_rate / 1e6;
			}
		}
	}
	printf("\n%-8s %15s  %-13s | %s\n", "threads", "median Mgets/s", "min..max",
	       "cpu Mgets/s");
	for (size_t c = 0; c < cfg->n_threads; c++) {
		double med = lb_median(mops[c], cfg->rounds);
		printf("%-8u %15.2f  %.2f..%.2f | %11.2f\n", cfg->threads[c], med, mops[c][0],
		       mops[c][cfg->rounds - 1], lb_median(cops[c], cfg->rounds));
	}
	printf("(cpu = gets over the readers' own CPU time; it survives a busy machine)\n");
	printf("reads: %llu hits, %llu misses or wrong values\n", (unsigned long long)hits,
	       (unsigned long long)bad);
	return bad;
}

int lb_scale_run(const struct lb_config *cfg_in)
{
	struct lb_config cfg = *cfg_in;
	uint64_t st[LARDER_STAT_COUNT], failed = 0;
	larder *cache = NULL;
	int rc = -1;

	if (!cfg.entries_given)
		cfg.entries = LB_SCALE_DEFAULT;
	if (cfg.key_size > 64 || cfg.value_size < 8 || cfg.rounds > 200 || cfg.n_threads > 64) {
		fprintf(stderr, "larder-bench: --scale takes keys up to 64 B, values of at least "
				"8 B, <= 200 rounds\n");
		return -1;
	}
	if (!cfg.capacity_given)
		cfg.capacity_bytes = cfg.entries * (cfg.key_size + cfg.value_size + 64) * 2;
	printf("larder-bench scale: %llu entries, key %zu B, value %zu B, capacity %.0f MiB, "
	       "%u writer threads; reads: uniform keys, %u rounds x %u ms after %u warm-up\n",
	       (unsigned long long)cfg.entries, cfg.key_size, cfg.value_size,
	       (double)cfg.capacity_bytes / (1 << 20), LB_SCALE_WRITERS, cfg.rounds,
	       cfg.duration_ms, cfg.warmup_rounds);
	unsigned most = 1;
	for (size_t i = 0; i < cfg.n_threads; i++)
		most = cfg.threads[i] > most ? cfg.threads[i] : most;
	struct lb_pool *pool = lb_pool_create(&cfg, most);
	if (!pool)
		return -1;
	const uint64_t base = lb_rss_bytes();
	if (lb_larder_open(&cache, &cfg, cfg.capacity_bytes, cfg.entries) != LARDER_OK) {
		fprintf(stderr, "larder-bench: larder_open failed\n");
		goto out;
	}
	double secs = load(cache, &cfg, &failed);
	if (secs < 0)
		goto out;
	settle(cache, cfg.entries - failed, st);
	const uint64_t rss = lb_rss_bytes();
	printf("load: %llu puts in %.2f s = %.2f M puts/s (%u threads), %llu failed, "
	       "%llu evicted, %llu index growths\n",
	       (unsigned long long)cfg.entries, secs, (double)cfg.entries / secs / 1e6,
	       LB_SCALE_WRITERS, (unsigned long long)failed,
	       (unsigned long long)st[LARDER_STAT_EVICTIONS],
	       (unsigned long long)st[LARDER_STAT_INDEX_RESIZES]);
	report_memory(&cfg, base, rss, st);
	fflush(stdout);
	rc = failed || st[LARDER_STAT_EVICTIONS] || read_rounds(cache, &cfg, pool) ? -1 : 0;
out:
	larder_close(cache);
	lb_pool_destroy(pool);
	return rc;
}
