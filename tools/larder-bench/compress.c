/*
 * compress.c - --compress: what LZ4 value compression saves and costs
 * (docs/compression.md).
 *
 * Four value sets, each of --entries distinct values (default 50,000; a
 * third of that for 4 KiB): JSON-like documents of 200 B, 500 B and 4 KiB,
 * and random bytes of 500 B (jsongen.c makes them).
 *
 * For each set two caches are filled with the same keys and values, one
 * plain and one compressing (larder_config_set_compression(64, 10)), and
 * measured in the same run, interleaved, for --rounds rounds after
 * --warmup rounds:
 *   - stored bytes per entry: LARDER_STAT_USED_BYTES / entries once the
 *     maintainer is idle (headers, keys, values as stored, slot rounding);
 *   - put ns: overwriting every key with its own value, in a shuffled order;
 *   - get ns: larder_get of every key, shuffled (a copy into the caller's
 *     buffer; the compressed cache decompresses into it), and get_with ns
 *     (the callback reads the value's first and last byte).
 * After the timed passes every value is read back and compared (untimed);
 * a failed operation or a wrong value ends the run with an error.
 * Printed: medians and min..max of every figure, and the ratios compressed
 * / plain per round (their median and range). The RSS is read before and
 * after each fill, as a cross-check of the byte counts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench.h"

#define CB_KEY_BYTES 16u
#define CB_MIN_BYTES 64u
#define CB_SAVING_PCT 10u
#define CB_DEFAULT_ENTRIES 50000u

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

struct cb_set {
	const char *name;
	size_t value_bytes;
	int json;
	unsigned entries_div;
};

static const struct cb_set sets[] = {
	{ "json 200 B", 200, 1, 1 },
	{ "json 500 B", 500, 1, 1 },
	{ "json 4 KiB", 4096, 1, 3 },
	{ "random 500 B", 500, 0, 1 },
};

/* The figures of one cache in one round. */
struct cb_fig {
	double bytes, put_ns, get_ns, with_ns;
};

static void key_of(uint8_t *key, uint64_t i)
{
	uint64_t a = lb_mix(i), b = i;
	memcpy(key, &a, 8);
	memcpy(key + 8, &b, 8);
}

static larder *open_cache(int compressing, size_t value_bytes)
{
	larder_config *cfg;
	larder *c = NULL;
	if (larder_config_create(&cfg) != LARDER_OK)
		return NULL;
	if (larder_config_set_capacity(cfg, 4ull << 30) == LARDER_OK &&
	    larder_config_set_max_value_bytes(cfg, value_bytes) == LARDER_OK &&
	    larder_config_set_expected_entries(cfg, 2 * CB_DEFAULT_ENTRIES) == LARDER_OK &&
	    (!compressing ||
	     larder_config_set_compression(cfg, CB_MIN_BYTES, CB_SAVING_PCT) == LARDER_OK) &&
	    larder_open(&c, cfg) != LARDER_OK)
		c = NULL;
	larder_config_destroy(cfg);
	return c;
}

static void with_fn(void *ctx, const void *value, size_t len)
{
	const uint8_t *v = value;
	*(uint64_t *)ctx += len ? (uint64_t)v[0] + v[len - 1] : 0;
}

/* One pass of puts, gets and get_withs over every key, in the order given. */
static int measure(larder *c, const uint8_t *values, size_t vbytes, const uint64_t *order,
		   uint64_t n, struct cb_fig *f)
{
	uint8_t key[CB_KEY_BYTES], *buf = malloc(vbytes);
	uint64_t sink = 0;
	if (!buf)
		return -1;
	uint64_t t0 = lb_now_ns();
	for (uint64_t j = 0; j < n; j++) {
		key_of(key, order[j]);
		if (larder_put(c, key, sizeof(key), values + order[j] * vbytes, vbytes,
			       LARDER_TTL_NEVER) != LARDER_OK)
			goto fail;
	}
	uint64_t t1 = lb_now_ns();
	for (uint64_t j = 0; j < n; j++) {
		size_t len;
		key_of(key, order[n - 1 - j]);
		if (larder_get(c, key, sizeof(key), buf, vbytes, &len) != LARDER_OK)
			goto fail;
		sink += buf[len - 1];
	}
	uint64_t t2 = lb_now_ns();
	for (uint64_t j = 0; j < n; j++) {
		key_of(key, order[j]);
		if (larder_get_with(c, key, sizeof(key), with_fn, &sink) != LARDER_OK)
			goto fail;
	}
	uint64_t t3 = lb_now_ns();
	f->put_ns = (double)(t1 - t0) / (double)n;
	f->get_ns = (double)(t2 - t1) / (double)n;
	f->with_ns = (double)(t3 - t2) / (double)n;
	/* The maintainer frees the overwritten slots after a grace period:
	 * poll (every 2 ms, for at most 5 s) until every entry is counted and
	 * the used bytes held still for 20 ms. */
	uint64_t used = 0, last = UINT64_MAX;
	for (int i = 0, still = 0; i < 2500 && still < 10; i++) {
		uint64_t v[LARDER_STAT_USED_BYTES + 1];
		if (larder_stats(c, v, LARDER_STAT_USED_BYTES + 1) < 0)
			goto fail;
		used = v[LARDER_STAT_USED_BYTES];
		still = v[LARDER_STAT_ENTRIES] == n && used == last ? still + 1 : 0;
		last = used;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	f->bytes = (double)used / (double)n;
	for (uint64_t i = 0; i < n; i++) { /* untimed: every value reads back whole */
		size_t len;
		key_of(key, i);
		if (larder_get(c, key, sizeof(key), buf, vbytes, &len) != LARDER_OK ||
		    len != vbytes || memcmp(buf, values + i * vbytes, vbytes) != 0)
			goto fail;
	}
	free(buf);
	return sink == 0xffffffffffffffffull; /* never: keeps sink alive */
fail:
	free(buf);
	fprintf(stderr, "larder-bench --compress: an operation failed or read a wrong value\n");
	return -1;
}

static void print_row(const char *what, const char *unit, double *plain, double *packed,
		      double *ratio, unsigned rounds)
{
	double pm = lb_median(plain, rounds), cm = lb_median(packed, rounds),
	       rm = lb_median(ratio, rounds);
	printf("  %-16s %9.1f %-3s (%.1f..%.1f)   %9.1f %-3s (%.1f..%.1f)   %6.3fx (%.3f..%.3f)\n",
	       what, pm, unit, plain[0], plain[rounds - 1], cm, unit, packed[0],
	       packed[rounds - 1], rm, ratio[0], ratio[rounds - 1]);
}

int lb_compress_run(const struct lb_config *cfg)
{
	uint64_t base = cfg->entries_given ? cfg->entries : CB_DEFAULT_ENTRIES;
	unsigned rounds = cfg->rounds < 64 ? cfg->rounds : 64;
	printf("larder-bench --compress: LZ4 (min %u B, saving >= %u%%) vs plain, %u rounds after"
	       " %u warm-up; keys %u B; one thread; medians (min..max); ratio = compressed/plain"
	       " per round\n",
	       CB_MIN_BYTES, CB_SAVING_PCT, rounds, cfg->warmup_rounds, CB_KEY_BYTES);
	for (size_t s = 0; s < COUNT(sets); s++) {
		const struct cb_set *set = &sets[s];
		uint64_t n = base / set->entries_div;
		size_t vb = set->value_bytes;
		uint8_t *values = malloc(n * vb);
		uint64_t *order = malloc(n * sizeof(*order));
		larder *c[2] = { open_cache(0, vb), open_cache(1, vb) };
		if (!values || !order || !c[0] || !c[1]) {
			fprintf(stderr, "larder-bench --compress: out of memory\n");
			return -1;
		}
		for (uint64_t i = 0; i < n; i++) {
			if (set->json)
				lb_json_value(values + i * vb, vb, cfg->seed * 1000003 + i);
			else
				lb_random_value(values + i * vb, vb, cfg->seed * 1000003 + i);
			order[i] = i;
		}
		double fig[2][4][64], ratio[4][64];
		uint64_t rss0 = lb_rss_bytes();
		for (unsigned r = 0; r < cfg->warmup_rounds + rounds; r++) {
			uint64_t rng = lb_mix(cfg->seed + r);
			for (uint64_t i = n - 1; i > 0; i--) { /* a fresh shuffle per round */
				rng = lb_mix(rng + i);
				uint64_t j = rng % (i + 1), t = order[i];
				order[i] = order[j];
				order[j] = t;
			}
			struct cb_fig f[2] = { { 0, 0, 0, 0 }, { 0, 0, 0, 0 } };
			for (int k = 0; k < 2; k++) { /* plain first on even rounds */
				int which = (int)(r & 1) ^ k;
				if (measure(c[which], values, vb, order, n, &f[which]) < 0)
					return -1;
			}
			if (r < cfg->warmup_rounds)
				continue;
			unsigned m = r - cfg->warmup_rounds;
			for (int w = 0; w < 2; w++) {
				fig[w][0][m] = f[w].bytes;
				fig[w][1][m] = f[w].put_ns;
				fig[w][2][m] = f[w].get_ns;
				fig[w][3][m] = f[w].with_ns;
			}
			ratio[0][m] = f[1].bytes / f[0].bytes;
			ratio[1][m] = f[1].put_ns / f[0].put_ns;
			ratio[2][m] = f[1].get_ns / f[0].get_ns;
			ratio[3][m] = f[1].with_ns / f[0].with_ns;
		}
		uint64_t rss1 = lb_rss_bytes();
		printf("\n%s: %llu entries; RSS of both caches and the source values: %.1f MiB\n",
		       set->name, (unsigned long long)n, (double)(rss1 - rss0) / 1048576.0);
		printf("  %-16s %-27s   %-27s   %s\n", "", "plain", "compressed", "ratio");
		static const char *const what[4] = { "bytes/entry", "put", "get", "get_with" };
		static const char *const unit[4] = { "B", "ns", "ns", "ns" };
		for (int k = 0; k < 4; k++)
			print_row(what[k], unit[k], fig[0][k], fig[1][k], ratio[k], rounds);
		printf("  value payload %zu B; saving %.2fx fewer bytes per entry\n", vb,
		       1.0 / lb_median(ratio[0], rounds));
		larder_close(c[0]);
		larder_close(c[1]);
		free(values);
		free(order);
	}
	return 0;
}
