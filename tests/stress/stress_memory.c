/*
 * tests/stress/stress_memory.c - memory going back to the OS while writers
 * and readers run (run it under ThreadSanitizer and AddressSanitizer).
 *
 * Usage: larder_stress_memory [--writers N] [--readers N] [--keys N]
 *                             [--duration-ms N] [--seed N]
 * Defaults: 2 writers, 2 readers, 16384 keys, 5 s (3 s under a sanitizer).
 *
 * Writers put values of 512 B..16 KiB (many size classes, pages of 64 KiB
 * to 256 KiB) into a 48 MiB cache; readers read them back; the main thread
 * clears the cache or moves its capacity between 8 and 48 MiB every 20 ms,
 * so pages keep falling empty beyond the 24 MiB reserve and the slab's
 * returner thread unmaps them while writers take new pages and the
 * maintainer frees and evicts. The index's shrink floor is lowered to 64
 * buckets, so each clear and each cut also shrinks the index and the
 * writers grow it again (TABLE-L3 in index/table.h). Freed slots are poisoned.
 *
 * Invariants asserted:
 *   SMEMORY-Y1. every value read is whole and belongs to its key: its key id, its
 *       length (a function of its seed) and its payload (a function of the
 *       seed) agree; a poisoned, reused or unmapped slot fails this or
 *       faults;
 *   SMEMORY-Y2. no write fails (the write wait is generous);
 *   SMEMORY-Y3. once every thread stopped and the maintainer is quiescent, nothing
 *       is waiting to be unmapped, the memory audit adds up (mapped = class
 *       pages + reserve + large) and the counters agree with a walk (MAINT-M1);
 *   SMEMORY-Y4. close returns every mapped byte;
 *   SMEMORY-Y5. the index shrinks and grows;
 *   SMEMORY-Y6. emptied pages beyond the reserve go back to the OS.
 *       SMEMORY-Y5..Y6 are driven at the end (drive()), so that the test does
 *       not depend on how much the timed phase got done on a loaded machine
 *       (it once saw no page returned under TSan).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "harness.h"

#define VALUE_MIN 512u
#define VALUE_SPAN (16u * 1024u - VALUE_MIN)
#define HEADER_BYTES 16u

static struct {
	uint64_t writers, readers, keys, duration_ms, seed;
} opt;

static _Atomic int stop;
static _Atomic uint64_t puts_ok, reads_hit, admin_ops;

struct worker {
	pthread_t thread;
	larder *cache;
	unsigned id;
};

static size_t value_len(uint64_t seed)
{
	return VALUE_MIN + (size_t)(th_mix64(seed) % VALUE_SPAN);
}

static uint8_t payload_byte(uint64_t seed, size_t i)
{
	return (uint8_t)(seed * 31u + i * 7u);
}

static void make_value(uint8_t *v, uint64_t key, uint64_t seed)
{
	size_t len = value_len(seed);
	memcpy(v, &key, 8);
	memcpy(v + 8, &seed, 8);
	for (size_t i = HEADER_BYTES; i < len; i++)
		v[i] = payload_byte(seed, i);
}

/* SMEMORY-Y1: returns 1 when the value is whole and belongs to key. */
static int value_ok(const uint8_t *v, size_t len, uint64_t key)
{
	uint64_t k, seed;
	if (len < HEADER_BYTES)
		return 0;
	memcpy(&k, v, 8);
	memcpy(&seed, v + 8, 8);
	if (k != key || len != value_len(seed))
		return 0;
	for (size_t i = HEADER_BYTES; i < len; i++)
		if (v[i] != payload_byte(seed, i))
			return 0;
	return 1;
}

static void *writer_main(void *arg)
{
	struct worker *w = arg;
	struct th_rng rng = { opt.seed + 1000u * (w->id + 1) };
	uint8_t *v = malloc(VALUE_MIN + VALUE_SPAN);
	char key[24];

	if (!CHECK(v != NULL))
		return NULL;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t k = th_rng_below(&rng, opt.keys), seed = th_rng_next(&rng);
		snprintf(key, sizeof(key), "k%" PRIu64, k);
		make_value(v, k, seed);
		int rc = larder_put(w->cache, key, strlen(key), v, value_len(seed),
				    LARDER_TTL_NEVER);
		if (!CHECK_RC(rc, LARDER_OK)) /* SMEMORY-Y2 */
			break;
		atomic_fetch_add_explicit(&puts_ok, 1, memory_order_relaxed);
	}
	free(v);
	return NULL;
}

static void *reader_main(void *arg)
{
	struct worker *w = arg;
	struct th_rng rng = { opt.seed + 7777u * (w->id + 1) };
	uint8_t *buf = malloc(VALUE_MIN + VALUE_SPAN);
	char key[24];
	size_t len;

	if (!CHECK(buf != NULL))
		return NULL;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint64_t k = th_rng_below(&rng, opt.keys);
		snprintf(key, sizeof(key), "k%" PRIu64, k);
		int rc = larder_get(w->cache, key, strlen(key), buf, VALUE_MIN + VALUE_SPAN, &len);
		if (rc == LARDER_MISS)
			continue;
		if (!CHECK_RC(rc, LARDER_OK) || !CHECK(value_ok(buf, len, k))) /* SMEMORY-Y1 */
			break;
		atomic_fetch_add_explicit(&reads_hit, 1, memory_order_relaxed);
	}
	free(buf);
	return NULL;
}

/* The main thread's part: clear, or a new capacity, every 20 ms. */
static void administer(larder *cache)
{
	static const uint64_t caps[] = { 48 * MiB, 8 * MiB, 32 * MiB, 12 * MiB };
	uint64_t until = th_now_ms() + opt.duration_ms;

	for (unsigned n = 0; th_now_ms() < until; n++) {
		th_pause_ms(20); /* a pause, not a sync */
		if (n % 3 == 0)
			CHECK_RC(larder_clear(cache), LARDER_OK);
		else
			CHECK_RC(larder_set_capacity(cache, caps[n % TH_COUNT(caps)]), LARDER_OK);
		atomic_fetch_add_explicit(&admin_ops, 1, memory_order_relaxed);
	}
	CHECK_RC(larder_set_capacity(cache, 48 * MiB), LARDER_OK);
}

/*
 * SMEMORY-Y5, SMEMORY-Y6: what the timed phase may or may not have reached on a loaded
 * machine (a growth of the index, pages beyond the reserve), driven here,
 * with the other threads stopped: a clear leaves the index sparse, so it
 * shrinks to the lowered floor; 40 MiB of 8 KiB values (64 KiB pages) grow
 * it again; a clear then empties 640 pages, of which the 4 MiB reserve of
 * that page size keeps 64, and the rest go back to the OS.
 */
static void drive(larder *cache)
{
	enum { VLEN = 8000, N = 40 * MiB / 8192 };
	uint8_t *v = malloc(VLEN);
	uint64_t returned0 = th_stat(cache, LARDER_STAT_PAGES_RETURNED);
	uint64_t grown0 = th_stat(cache, LARDER_STAT_INDEX_RESIZES);
	uint64_t shrunk0 = th_stat(cache, LARDER_STAT_INDEX_SHRINKS);

	if (!CHECK(v != NULL))
		return;
	memset(v, 0x5d, VLEN);
	CHECK_RC(larder_clear(cache), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	for (unsigned i = 0; i < N; i++) {
		char key[24];
		snprintf(key, sizeof(key), "drive%u", i);
		CHECK_RC(larder_put(cache, key, strlen(key), v, VLEN, LARDER_TTL_NEVER), LARDER_OK);
	}
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	CHECK_RC(larder_clear(cache), LARDER_OK);
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	printf("stress_memory: driven: %" PRIu64 " MiB returned, index grown %" PRIu64
	       " and shrunk %" PRIu64 " times\n",
	       (th_stat(cache, LARDER_STAT_PAGES_RETURNED) - returned0) / MiB,
	       th_stat(cache, LARDER_STAT_INDEX_RESIZES) - grown0,
	       th_stat(cache, LARDER_STAT_INDEX_SHRINKS) - shrunk0);
	CHECK_GE(th_stat(cache, LARDER_STAT_PAGES_RETURNED) - returned0, 32 * MiB);
	CHECK_GT(th_stat(cache, LARDER_STAT_INDEX_RESIZES), grown0); /* SMEMORY-Y5 */
	CHECK_GT(th_stat(cache, LARDER_STAT_INDEX_SHRINKS), shrunk0);
	free(v);
}

/* SMEMORY-Y3 (mapped = class pages + reserve + large, with nothing being unmapped). */
static void check_audit(larder *cache)
{
	uint64_t v[LARDER_CLASS_STAT_COUNT], class_bytes = 0;
	CHECK_EQ(th_quiesce(cache, 30000), 0);
	for (size_t c = 0; c < larder_size_class_count(); c++) {
		CHECK_RC(larder_stats_size_class(cache, c, v, LARDER_CLASS_STAT_COUNT), LARDER_OK);
		class_bytes += v[LARDER_CLASS_BYTES];
	}
	CHECK_EQ(th_stat(cache, LARDER_STAT_RETURNING_BYTES), 0);
	CHECK_EQ(class_bytes + th_stat(cache, LARDER_STAT_RESERVE_BYTES) +
			 th_stat(cache, LARDER_STAT_LARGE_BYTES),
		 th_stat(cache, LARDER_STAT_PAGES_MAPPED));
	th_check_accounting(cache, 30000, NULL, NULL);
}

int main(int argc, char **argv)
{
	opt.writers = th_arg_u64(argc, argv, "--writers", 2);
	opt.readers = th_arg_u64(argc, argv, "--readers", 2);
	opt.keys = th_arg_u64(argc, argv, "--keys", 16384);
	opt.duration_ms = th_arg_u64(argc, argv, "--duration-ms", TH_TSAN || TH_ASAN ? 3000 : 5000);
	opt.seed = th_arg_seed(argc, argv);
	if (opt.writers < 1 || opt.writers > 64 || opt.readers > 64 || opt.keys < 1) {
		fprintf(stderr, "stress_memory: bad arguments\n");
		return 2;
	}
	printf("stress_memory: %" PRIu64 " writers, %" PRIu64 " readers, %" PRIu64
	       " keys, %" PRIu64 " ms\n",
	       opt.writers, opt.readers, opt.keys, opt.duration_ms);
	larder__test_poison_freed(1);
	uint64_t mapped0 = larder__test_mapped_bytes();
	larder_config *config = th_config(48 * MiB);
	/* 16 expected entries: the first table (1,024 buckets) halves down to
	 * the lowered floor, which a table sized for more (an odd multiple of
	 * 64 buckets) could not. */
	if (!config || larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS) != LARDER_OK ||
	    larder_config_set_expected_entries(config, 16) != LARDER_OK)
		return 1;
	larder *cache = th_open(config);
	if (!cache)
		return 1;
	larder__test_index_floor(cache, 64);

	struct worker ws[128];
	unsigned n = (unsigned)(opt.writers + opt.readers);
	for (unsigned i = 0; i < n; i++) {
		ws[i] = (struct worker){ .cache = cache, .id = i };
		if (pthread_create(&ws[i].thread, NULL, i < opt.writers ? writer_main : reader_main,
				   &ws[i]) != 0) {
			fprintf(stderr, "stress_memory: pthread_create failed\n");
			return 1;
		}
	}
	administer(cache);
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < n; i++)
		pthread_join(ws[i].thread, NULL);
	printf("stress_memory: %" PRIu64 " puts, %" PRIu64 " hits, %" PRIu64
	       " clears/resizes, %" PRIu64 " MiB returned to the OS, index grown %" PRIu64
	       " and shrunk %" PRIu64 " times\n",
	       atomic_load(&puts_ok), atomic_load(&reads_hit), atomic_load(&admin_ops),
	       th_stat(cache, LARDER_STAT_PAGES_RETURNED) / MiB,
	       th_stat(cache, LARDER_STAT_INDEX_RESIZES),
	       th_stat(cache, LARDER_STAT_INDEX_SHRINKS));
	drive(cache);
	check_audit(cache);
	larder_close(cache);
	CHECK_EQ(larder__test_mapped_bytes(), mapped0); /* SMEMORY-Y4 */
	larder__test_poison_freed(0);
	long f = th_failures();
	printf("%s (%ld failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
