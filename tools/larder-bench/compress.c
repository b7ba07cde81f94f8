/*
 * compress.c - --compress: what value compression saves and costs
 * (docs/compression.md), LZ4 alone and zstd with the cache's trained
 * dictionary, each against plain in the same run.
 *
 * Four value sets, each of --entries distinct values (default 50,000; a
 * third of that for 4 KiB): JSON-like documents of 200 B, 500 B and 4 KiB,
 * and random bytes of 500 B (jsongen.c makes them).
 *
 * For each set three caches are filled with the same keys and values: plain,
 * LZ4 (larder_config_set_compression(64, 10) with LARDER_DICTIONARY_NONE)
 * and dict (the same with the default LARDER_DICTIONARY_TRAIN: the cache
 * trains its dictionary from its first values, the set's own, during the
 * warm-up round; the run waits for LARDER_STAT_DICT_BYTES before it
 * measures). They are measured in the same run, interleaved (the order
 * rotates per round), for --rounds rounds after --warmup rounds (at least 1):
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
 *
 * Then the Node add-on's scenario: 10 x --entries keys (500,000 by default)
 * of ~500 B JSON (400 to
 * 600 bytes, generated on the fly, so no copy of them is resident) put into
 * a fresh cache of each kind in turn; the process RSS after the fill (the
 * maintainer idle) minus before the open, per cache, for --rounds rounds
 * (the order rotates), and the ratio to plain per round.
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
#define CB_NODE_PER_ENTRY 10u /* the Node scenario: 10 keys per --entries (500,000) */
#define CB_KINDS 3 /* plain, lz4, dict */

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

static const char *const kind_names[CB_KINDS] = { "plain", "lz4", "dict" };

static void key_of(uint8_t *key, uint64_t i)
{
	uint64_t a = lb_mix(i), b = i;
	memcpy(key, &a, 8);
	memcpy(key + 8, &b, 8);
}

/* kind: 0 plain, 1 LZ4 alone, 2 zstd with a trained dictionary. */
static larder *open_cache(int kind, size_t value_bytes, uint64_t expected)
{
	larder_config *cfg;
	larder *c = NULL;
	if (larder_config_create(&cfg) != LARDER_OK)
		return NULL;
	if (larder_config_set_capacity(cfg, 4ull << 30) == LARDER_OK &&
	    larder_config_set_max_value_bytes(cfg, value_bytes) == LARDER_OK &&
	    larder_config_set_expected_entries(cfg, expected) == LARDER_OK &&
	    (kind == 0 ||
	     larder_config_set_compression(cfg, CB_MIN_BYTES, CB_SAVING_PCT) == LARDER_OK) &&
	    (kind != 1 || larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_NONE,
								    NULL, 0) == LARDER_OK) &&
	    larder_open(&c, cfg) != LARDER_OK)
		c = NULL;
	larder_config_destroy(cfg);
	return c;
}

static uint64_t stat_of(larder *c, enum larder_stat which)
{
	uint64_t v[LARDER_STAT_COUNT];
	return larder_stats(c, v, LARDER_STAT_COUNT) == LARDER_OK ? v[which] : 0;
}

/* Waits (polling every 2 ms, at most 10 s) until c has n entries and its
 * used bytes held still for 20 ms: the maintainer freed what was overwritten.
 * Returns the used bytes. */
static uint64_t settle(larder *c, uint64_t n)
{
	uint64_t used = 0, last = UINT64_MAX;
	for (int i = 0, still = 0; i < 5000 && still < 10; i++) {
		uint64_t v[LARDER_STAT_COUNT];
		if (larder_stats(c, v, LARDER_STAT_COUNT) != LARDER_OK)
			return 0;
		used = v[LARDER_STAT_USED_BYTES];
		still = v[LARDER_STAT_ENTRIES] == n && used == last ? still + 1 : 0;
		last = used;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	return used;
}

/* Waits (at most 10 s) for c's dictionary; its bytes, 0 if none came. */
static uint64_t wait_dict(larder *c)
{
	for (int i = 0; i < 5000; i++) {
		uint64_t b = stat_of(c, LARDER_STAT_DICT_BYTES);
		if (b)
			return b;
		struct timespec ts = { 0, 2000000 };
		nanosleep(&ts, NULL);
	}
	return 0;
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
	f->bytes = (double)settle(c, n) / (double)n;
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

static void print_row(const char *what, const char *unit, double (*fig)[64],
		      double (*ratio)[64], unsigned rounds)
{
	printf("  %-12s", what);
	for (int k = 0; k < CB_KINDS; k++) {
		double m = lb_median(fig[k], rounds); /* sorts */
		printf(" %9.1f %-2s (%.1f..%.1f)", m, unit, fig[k][0], fig[k][rounds - 1]);
	}
	for (int k = 1; k < CB_KINDS; k++) {
		double m = lb_median(ratio[k], rounds);
		printf("  %s/plain %.3fx (%.3f..%.3f)", kind_names[k], m, ratio[k][0],
		       ratio[k][rounds - 1]);
	}
	printf("\n");
}

static int run_set(const struct lb_config *cfg, const struct cb_set *set, uint64_t base,
		   unsigned rounds)
{
	uint64_t n = base / set->entries_div;
	size_t vb = set->value_bytes;
	uint8_t *values = malloc(n * vb);
	uint64_t *order = malloc(n * sizeof(*order));
	larder *c[CB_KINDS];
	for (int k = 0; k < CB_KINDS; k++)
		c[k] = open_cache(k, vb, 2 * CB_DEFAULT_ENTRIES);
	if (!values || !order || !c[0] || !c[1] || !c[2]) {
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
	/* [what][kind][round]: bytes, put, get, get_with. */
	double fig[4][CB_KINDS][64], ratio[4][CB_KINDS][64];
	uint64_t rss0 = lb_rss_bytes(), dict_bytes = 0;
	unsigned warmup = cfg->warmup_rounds ? cfg->warmup_rounds : 1;
	for (unsigned r = 0; r < warmup + rounds; r++) {
		uint64_t rng = lb_mix(cfg->seed + r);
		for (uint64_t i = n - 1; i > 0; i--) { /* a fresh shuffle per round */
			rng = lb_mix(rng + i);
			uint64_t j = rng % (i + 1), t = order[i];
			order[i] = order[j];
			order[j] = t;
		}
		struct cb_fig f[CB_KINDS];
		for (int k = 0; k < CB_KINDS; k++) { /* the order rotates per round */
			int which = (int)((r + (unsigned)k) % CB_KINDS);
			if (measure(c[which], values, vb, order, n, &f[which]) < 0)
				return -1;
		}
		if (r + 1 == warmup && set->json && !(dict_bytes = wait_dict(c[2]))) {
			fprintf(stderr, "larder-bench --compress: no dictionary was trained\n");
			return -1;
		}
		if (r < warmup)
			continue;
		unsigned m = r - warmup;
		for (int k = 0; k < CB_KINDS; k++) {
			double v[4] = { f[k].bytes, f[k].put_ns, f[k].get_ns, f[k].with_ns };
			double p[4] = { f[0].bytes, f[0].put_ns, f[0].get_ns, f[0].with_ns };
			for (int w = 0; w < 4; w++) {
				fig[w][k][m] = v[w];
				ratio[w][k][m] = v[w] / p[w];
			}
		}
	}
	if (!set->json) /* incompressible values are not sampled: no dictionary */
		dict_bytes = stat_of(c[2], LARDER_STAT_DICT_BYTES);
	uint64_t rss1 = lb_rss_bytes();
	printf("\n%s: %llu entries; dictionary %llu B of memory; RSS of the three caches and"
	       " the source values: %.1f MiB\n",
	       set->name, (unsigned long long)n, (unsigned long long)dict_bytes,
	       (double)(rss1 - rss0) / 1048576.0);
	printf("  %-12s %-27s %-27s %-27s\n", "", kind_names[0], kind_names[1], kind_names[2]);
	static const char *const what[4] = { "bytes/entry", "put", "get", "get_with" };
	static const char *const unit[4] = { "B", "ns", "ns", "ns" };
	for (int w = 0; w < 4; w++)
		print_row(what[w], unit[w], fig[w], ratio[w], rounds);
	for (int k = 1; k < CB_KINDS; k++) {
		double fewer = 1.0 / lb_median(ratio[0][k], rounds); /* sorts: min, max next */
		printf("  %s: %.2fx fewer bytes per entry (%.2f..%.2f)\n", kind_names[k], fewer,
		       1.0 / ratio[0][k][rounds - 1], 1.0 / ratio[0][k][0]);
	}
	for (int k = 0; k < CB_KINDS; k++)
		larder_close(c[k]);
	free(values);
	free(order);
	return 0;
}

/* One cache of the Node scenario: RSS after the fill minus before the open. */
static int node_fill(int kind, uint64_t keys, uint64_t seed, double *rss_mib, double *bytes)
{
	uint8_t key[CB_KEY_BYTES], v[600];
	uint64_t rss0 = lb_rss_bytes();
	larder *c = open_cache(kind, sizeof(v), keys);
	if (!c)
		return -1;
	for (uint64_t i = 0; i < keys; i++) {
		size_t len = 400 + (size_t)(lb_mix(seed + i) % 201);
		lb_json_value(v, len, seed * 1000003 + i);
		key_of(key, i);
		if (larder_put(c, key, sizeof(key), v, len, LARDER_TTL_NEVER) != LARDER_OK) {
			larder_close(c);
			return -1;
		}
	}
	*bytes = (double)settle(c, keys) / (double)keys;
	*rss_mib = (double)(lb_rss_bytes() - rss0) / 1048576.0;
	larder_close(c);
	return 0;
}

static int run_node(const struct lb_config *cfg, uint64_t keys, unsigned rounds)
{
	double rss[CB_KINDS][64], bytes[CB_KINDS][64], ratio[CB_KINDS][64];
	for (unsigned r = 0; r < rounds; r++) {
		double mib[CB_KINDS], b[CB_KINDS];
		for (int k = 0; k < CB_KINDS; k++) {
			int which = (int)((r + (unsigned)k) % CB_KINDS);
			if (node_fill(which, keys, cfg->seed + r, &mib[which], &b[which]) != 0) {
				fprintf(stderr, "larder-bench --compress: the Node scenario failed\n");
				return -1;
			}
		}
		for (int k = 0; k < CB_KINDS; k++) {
			rss[k][r] = mib[k];
			bytes[k][r] = b[k];
			ratio[k][r] = mib[k] / mib[0];
		}
	}
	printf("\nNode add-on scenario: %llu keys of 400-600 B JSON (~500 B), one cache at a time;"
	       " RSS after the fill - before the open\n",
	       (unsigned long long)keys);
	for (int k = 0; k < CB_KINDS; k++) {
		double m = lb_median(rss[k], rounds), lo = rss[k][0], hi = rss[k][rounds - 1];
		double bm = lb_median(bytes[k], rounds);
		double rm = lb_median(ratio[k], rounds);
		printf("  %-6s RSS delta %7.1f MiB (%.1f..%.1f)  used bytes/entry %6.1f  RSS %s/plain"
		       " %.3fx (%.3f..%.3f)\n",
		       kind_names[k], m, lo, hi, bm, kind_names[k], rm, ratio[k][0],
		       ratio[k][rounds - 1]);
	}
	return 0;
}

int lb_compress_run(const struct lb_config *cfg)
{
	uint64_t base = cfg->entries_given ? cfg->entries : CB_DEFAULT_ENTRIES;
	unsigned rounds = cfg->rounds < 64 ? cfg->rounds : 64;
	printf("larder-bench --compress: plain vs LZ4 alone vs zstd with a trained dictionary"
	       " (min %u B, saving >= %u%%), %u rounds after %u warm-up; keys %u B; one thread;"
	       " medians (min..max); ratios per round against plain\n",
	       CB_MIN_BYTES, CB_SAVING_PCT, rounds,
	       cfg->warmup_rounds ? cfg->warmup_rounds : 1, CB_KEY_BYTES);
	for (size_t s = 0; s < COUNT(sets); s++)
		if (run_set(cfg, &sets[s], base, rounds) != 0)
			return -1;
	return run_node(cfg, CB_NODE_PER_ENTRY * base, rounds);
}
