/*
 * fuzz_snapshot.c - libFuzzer target for the snapshot loader
 * (larder__snapshot_load_mem, core/snapshot.c).
 *
 * Each input is loaded twice into one small cache: as it is (which mostly
 * tests the frame checks: magic, version, length, trailer, checksum), and
 * with its checksum made right, so the fuzzer reaches the record checks and
 * the writes behind them (lengths against the bytes left, the record count,
 * TTLs, keys and values over the cache's limits, the capacity rule). After a
 * successful load the cache is walked with a cursor. Checks: no crash, no
 * sanitizer report, no read outside the input, and only the loader's
 * documented results.
 *
 * Run: larder_fuzz_snapshot -max_total_time=600 <new corpus dir> tests/fuzz/snapshot_corpus
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/snapshot.h"
#include "larder.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static larder *cache;
static unsigned char g_sink; /* read by nothing: keeps the loads in visit() */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	larder_config *cfg;
	(void)argc;
	(void)argv;
	if (larder_config_create(&cfg) != LARDER_OK ||
	    larder_config_set_capacity(cfg, 1u << 20) != LARDER_OK ||
	    larder_config_set_max_key_bytes(cfg, 250) != LARDER_OK ||
	    larder_config_set_max_value_bytes(cfg, 4096) != LARDER_OK ||
	    larder_open(&cache, cfg) != LARDER_OK)
		abort();
	larder_config_destroy(cfg);
	return 0;
}

static void visit(void *ctx, const void *key, size_t key_len, const void *value,
		  size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	(void)ctx;
	(void)ttl_ms;
	/* Touch every byte handed out, so ASan sees any read past them. */
	unsigned char sink = 0;
	for (size_t i = 0; i < key_len; i++)
		sink ^= ((const unsigned char *)key)[i];
	for (size_t i = 0; i < value_len; i++)
		sink ^= ((const unsigned char *)value)[i];
	/* Relaxed: no reader; the store only keeps the loads above. */
	__atomic_store_n(&g_sink, sink, __ATOMIC_RELAXED);
	if (key_len == 0 || key_len > 250 || value_len > 4096 || entry_bytes < key_len + value_len)
		abort();
}

static void load(const unsigned char *d, size_t n)
{
	int rc = larder__snapshot_load_mem(cache, d, n, 1700000000000ull);
	if (rc != LARDER_OK && rc != LARDER_EFORMAT && rc != LARDER_ECORRUPT && rc != LARDER_EBUSY &&
	    rc != LARDER_ENOMEM)
		abort();
	if (rc == LARDER_OK) {
		larder_iter *it;
		if (larder_iter_open(cache, &it) != LARDER_OK)
			abort();
		while (larder_iter_next(it, visit, NULL) == LARDER_OK)
			;
		larder_iter_close(it);
	}
	if (larder_clear(cache) != LARDER_OK)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	load(data, size);
	if (size < LARDER__SNAP_HEADER_BYTES + LARDER__SNAP_TRAILER_BYTES)
		return 0;
	unsigned char *copy = malloc(size);
	if (!copy)
		return 0;
	memcpy(copy, data, size);
	size_t t = size - LARDER__SNAP_TRAILER_BYTES;
	uint64_t h = XXH3_64bits(copy, t + LARDER__SNAP_CHECKED_BYTES);
	for (int i = 0; i < 8; i++)
		copy[t + 16 + i] = (unsigned char)(h >> (8 * i));
	load(copy, size);
	free(copy);
	return 0;
}
