/*
 * tests/unit/test_contracts_api.c - larder.h's claims at their edges, one
 * claim at a time, across the options that could change them.
 *
 * What it owns: the claims the model-driven tests (test_contracts.c, the
 * model tester) exercise only in passing, checked here at their exact
 * boundaries:
 *   - every setter at its bounds and one past (0, the maximum, maximum + 1,
 *     NaN and infinities for the doubles), a refused value leaving the
 *     previous one in force;
 *   - larder_get() / larder_peek() into a buffer of exactly the value's
 *     length, one byte less (LARDER_EBUFSIZE, *value_len the length, nothing
 *     copied, no hit counted, no deadline extended) and NULL with length 0,
 *     for empty, short, compressible and incompressible values;
 *   - the entry limit (1/8 of capacity, on the stored size): a value that
 *     does not compress has the same largest accepted length with
 *     compression on as off, and a compressible value past the raw limit is
 *     accepted only when compressed;
 *   - keys of 0 bytes and NULL keys refused by every call, keys of
 *     max_key_bytes accepted and one more refused;
 *   - lifetimes of 1 ms (live at the write's reading, gone one ms later)
 *     and of the maximum (saturating at UINT64_MAX - 1, never "none");
 *   - each counter moved by exactly the operations its comment names (hits,
 *     misses, writes, and after larder_flush the entries and the removals
 *     by cause);
 *   - get_batch, cursor, stats and size-class arguments, and each name
 *     table's ends.
 * Table-driven over policy (FIFO, LRU, W-TinyLFU, ARC) x shards (1, 4) x
 * compression (off, LZ4, zstd with a given dictionary) x expiry mode x
 * capacity (64 KiB, 1 MiB), with an injected clock: every verdict is exact
 * and none depends on timing.
 *
 * Not here: concurrency (the stress tests), snapshots and cursors under
 * load (test_audit_warm.c), listeners' re-entry (test_reentry.c).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <math.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/entry.h"
#include "harness.h"

#define T0 1000u
#define DTTL 1000u /* the default TTL of the after-access caches */
#define FLUSH_WAIT_MS (60000u * TH_SLOW)

/* ---- Setters at their bounds ------------------------------------------------ */

enum setter { S_CAPACITY, S_EXPECTED, S_MAX_KEY, S_MAX_VALUE, S_WRITE_WAIT, S_SHARDS, S_EXPIRY,
	      S_POLICY, S_COMPRESS_MIN, S_COMPRESS_PCT, S_MISS_COST, S_SHARE_MIN, S_SHARE_MAX };

struct bound_case {
	enum setter setter;
	double value;
	int want;
};

static int apply_setter(larder_config *cfg, enum setter s, double v)
{
	uint64_t u = (uint64_t)v;
	switch (s) {
	case S_CAPACITY:
		return larder_config_set_capacity(cfg, u);
	case S_EXPECTED:
		return larder_config_set_expected_entries(cfg, u);
	case S_MAX_KEY:
		return larder_config_set_max_key_bytes(cfg, (size_t)u);
	case S_MAX_VALUE:
		return larder_config_set_max_value_bytes(cfg, (size_t)u);
	case S_WRITE_WAIT:
		return larder_config_set_write_wait_ms(cfg, u);
	case S_SHARDS:
		return larder_config_set_shards(cfg, (unsigned)u);
	case S_EXPIRY:
		return larder_config_set_expiry(cfg, (enum larder_expiry)u);
	case S_POLICY:
		return larder_config_set_policy(cfg, (enum larder_policy)u);
	case S_COMPRESS_MIN:
		return larder_config_set_compression(cfg, (size_t)u, 10);
	case S_COMPRESS_PCT:
		return larder_config_set_compression(cfg, 64, (unsigned)u);
	case S_MISS_COST:
		return larder_config_set_miss_cost(cfg, v);
	case S_SHARE_MIN:
		return larder_config_set_pool_shares(cfg, v, 1.0);
	case S_SHARE_MAX:
		return larder_config_set_pool_shares(cfg, 0.0, v);
	}
	return LARDER_EINVAL;
}

/* Each documented range at 0, its ends and one past them (doubles hold every
 * integer used here exactly: 2^62 - 1 is given through its own case below). */
static void test_setter_bounds(void)
{
	static const struct bound_case cases[] = {
		{ S_CAPACITY, 0, LARDER_EINVAL },
		{ S_CAPACITY, 65535, LARDER_EINVAL },
		{ S_CAPACITY, 65536, LARDER_OK },
		{ S_CAPACITY, 4611686018427387904.0 /* 2^62 */, LARDER_EINVAL },
		{ S_EXPECTED, 0, LARDER_OK },
		{ S_EXPECTED, 1099511627776.0 /* 2^40 */, LARDER_OK },
		{ S_EXPECTED, 1099511627777.0, LARDER_EINVAL },
		{ S_MAX_KEY, 0, LARDER_EINVAL },
		{ S_MAX_KEY, 1, LARDER_OK },
		{ S_MAX_KEY, LARDER_KEY_LIMIT, LARDER_OK },
		{ S_MAX_KEY, LARDER_KEY_LIMIT + 1.0, LARDER_EINVAL },
		{ S_MAX_VALUE, 0, LARDER_OK },
		{ S_MAX_VALUE, (double)LARDER_VALUE_LIMIT, LARDER_OK },
		{ S_MAX_VALUE, (double)LARDER_VALUE_LIMIT + 1, LARDER_EINVAL },
		{ S_WRITE_WAIT, 0, LARDER_OK },
		{ S_WRITE_WAIT, 3600000, LARDER_OK },
		{ S_WRITE_WAIT, 3600001, LARDER_EINVAL },
		{ S_SHARDS, 0, LARDER_EINVAL },
		{ S_SHARDS, 1, LARDER_OK },
		{ S_SHARDS, 3, LARDER_EINVAL },
		{ S_SHARDS, LARDER_SHARDS_MAX, LARDER_OK },
		{ S_SHARDS, LARDER_SHARDS_MAX + 1.0, LARDER_EINVAL },
		{ S_SHARDS, 2.0 * LARDER_SHARDS_MAX, LARDER_EINVAL },
		{ S_EXPIRY, LARDER_EXPIRE_AFTER_WRITE, LARDER_OK },
		{ S_EXPIRY, LARDER_EXPIRE_AFTER_ACCESS, LARDER_OK },
		{ S_EXPIRY, 2, LARDER_EINVAL },
		{ S_POLICY, LARDER_POLICY_DEFAULT, LARDER_OK },
		{ S_POLICY, LARDER_POLICY_S3FIFO_TUNED, LARDER_OK },
		{ S_POLICY, LARDER_POLICY_S3FIFO_TUNED + 1.0, LARDER_EINVAL },
		{ S_COMPRESS_MIN, 0, LARDER_OK },
		{ S_COMPRESS_MIN, (double)LARDER_VALUE_LIMIT, LARDER_OK },
		{ S_COMPRESS_MIN, (double)LARDER_VALUE_LIMIT + 1, LARDER_EINVAL },
		{ S_COMPRESS_PCT, 0, LARDER_OK },
		{ S_COMPRESS_PCT, 99, LARDER_OK },
		{ S_COMPRESS_PCT, 100, LARDER_EINVAL },
		{ S_MISS_COST, 0, LARDER_EINVAL },
		{ S_MISS_COST, -1, LARDER_EINVAL },
		{ S_MISS_COST, 1e-300, LARDER_OK },
		{ S_MISS_COST, 1e9, LARDER_OK },
		{ S_MISS_COST, 1000000000.0001, LARDER_EINVAL },
		{ S_MISS_COST, INFINITY, LARDER_EINVAL },
		{ S_MISS_COST, NAN, LARDER_EINVAL },
		{ S_SHARE_MIN, 0, LARDER_OK },
		{ S_SHARE_MIN, 1, LARDER_OK },
		{ S_SHARE_MIN, -0.0001, LARDER_EINVAL },
		{ S_SHARE_MIN, 1.0001, LARDER_EINVAL },
		{ S_SHARE_MIN, NAN, LARDER_EINVAL },
		{ S_SHARE_MAX, 0, LARDER_EINVAL },
		{ S_SHARE_MAX, 1e-9, LARDER_OK },
		{ S_SHARE_MAX, 1.0001, LARDER_EINVAL },
		{ S_SHARE_MAX, INFINITY, LARDER_EINVAL },
		{ S_SHARE_MAX, NAN, LARDER_EINVAL },
	};
	larder_config *cfg = NULL;
	REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
	for (size_t i = 0; i < TH_COUNT(cases); i++) {
		int rc = apply_setter(cfg, cases[i].setter, cases[i].value);
		if (rc != cases[i].want)
			th_fail(__FILE__, __LINE__, "setter %d at %g: %s, want %s",
				(int)cases[i].setter, cases[i].value, larder_strerror(rc),
				larder_strerror(cases[i].want));
		/* Every setter refuses NULL whatever the value. */
		CHECK_RC(apply_setter(NULL, cases[i].setter, cases[i].value), LARDER_EINVAL);
	}
	CHECK_RC(larder_config_set_capacity(cfg, ((uint64_t)1 << 62) - 1), LARDER_OK);
	CHECK_RC(larder_config_set_expiry(cfg, (enum larder_expiry)-1), LARDER_EINVAL);
	CHECK_RC(larder_config_set_shards(cfg, UINT32_MAX), LARDER_EINVAL);
	CHECK_RC(larder_config_set_pool_shares(cfg, 0.6, 0.5), LARDER_EINVAL); /* min > max */
	CHECK_RC(larder_config_set_pool_shares(cfg, 0.5, 0.5), LARDER_OK);
	larder_config_destroy(cfg);
}

/* The dictionary's lengths: 1..1 MiB given, none for the other modes. */
static void test_dictionary_bounds(void)
{
	static unsigned char dict[LARDER_DICTIONARY_MAX_BYTES + 1];
	larder_config *cfg = NULL;
	REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
	memset(dict, 'd', sizeof(dict));
	CHECK_RC(larder_config_set_compression_dictionary(NULL, LARDER_DICTIONARY_NONE, NULL, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, dict, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, NULL, 1),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, dict, 1),
		 LARDER_OK);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, dict,
							  LARDER_DICTIONARY_MAX_BYTES),
		 LARDER_OK);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, dict,
							  LARDER_DICTIONARY_MAX_BYTES + 1),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_TRAIN, dict, 1),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_TRAIN, NULL, 1),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_NONE, dict, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, (enum larder_dictionary)3, NULL, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_TRAIN, NULL, 0),
		 LARDER_OK);
	larder_config_destroy(cfg);
}

/* The pool configuration's ranges: budget 1 MiB .. 2^60 - 1, interval 0..60000. */
static void test_pool_config_bounds(void)
{
	larder_pool_config *pc = NULL;
	CHECK_RC(larder_pool_config_create(NULL), LARDER_EINVAL);
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	CHECK_RC(larder_pool_config_set_budget(pc, MiB - 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, MiB), LARDER_OK);
	CHECK_RC(larder_pool_config_set_budget(pc, ((uint64_t)1 << 60) - 1), LARDER_OK);
	CHECK_RC(larder_pool_config_set_budget(pc, (uint64_t)1 << 60), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, UINT64_MAX), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, 0), LARDER_OK);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, 1), LARDER_OK);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, 60000), LARDER_OK);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, 60001), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, UINT64_MAX), LARDER_EINVAL);
	larder_pool_config_destroy(pc);
	larder_pool_config_destroy(NULL); /* as every destroy: NULL is no-op */
}

/* ---- The option table -------------------------------------------------------- */

enum compression { C_OFF, C_LZ4, C_DICT };

struct options {
	enum larder_policy policy;
	unsigned shards;
	enum compression compression;
	enum larder_expiry expiry;
	uint64_t capacity;
};

static const enum larder_policy policies[] = { LARDER_POLICY_FIFO, LARDER_POLICY_LRU,
					       LARDER_POLICY_WTINYLFU, LARDER_POLICY_ARC };
static const unsigned shard_counts[] = { 1, 4 };
static const uint64_t capacities[] = { 64 * KiB, MiB };
#define NOPTIONS (TH_COUNT(policies) * TH_COUNT(shard_counts) * 3 * 2 * TH_COUNT(capacities))

static struct options options_at(size_t i)
{
	struct options o;
	o.policy = policies[i % TH_COUNT(policies)];
	i /= TH_COUNT(policies);
	o.shards = shard_counts[i % TH_COUNT(shard_counts)];
	i /= TH_COUNT(shard_counts);
	o.compression = (enum compression)(i % 3);
	i /= 3;
	o.expiry = i % 2 ? LARDER_EXPIRE_AFTER_ACCESS : LARDER_EXPIRE_AFTER_WRITE;
	i /= 2;
	o.capacity = capacities[i % TH_COUNT(capacities)];
	return o;
}

static void options_print(const struct options *o)
{
	static const char *const comp[] = { "off", "lz4", "dict" };
	fprintf(stderr, "  options: policy %d, %u shards, compression %s, %s, capacity %" PRIu64 "\n",
		(int)o->policy, o->shards, comp[o->compression],
		o->expiry == LARDER_EXPIRE_AFTER_ACCESS ? "after access" : "after write",
		o->capacity);
}

/* Shared sample content, the given dictionary: what the compressible values
 * repeat, so zstd finds it and LZ4 finds the repeats. */
static const char dict_text[] =
	"{\"user\":{\"id\":12345,\"name\":\"larder\",\"tags\":[\"cache\",\"engine\"],"
	"\"active\":true,\"score\":0.75}}";

/* A value of len bytes that compresses (a JSON-like text repeated, from
 * its byte salt on; copied a run at a time, as the values reach 1 MiB). */
static void fill_compressible(unsigned char *v, size_t len, unsigned salt)
{
	const size_t text = sizeof(dict_text) - 1;
	size_t from = salt % text;
	for (size_t i = 0; i < len;) {
		size_t run = text - from < len - i ? text - from : len - i;
		memcpy(v + i, dict_text + from, run);
		i += run;
		from = 0;
	}
}

/* A value of len bytes that neither codec can shrink (8 bytes a step: the
 * entry limit's bisection fills half a megabyte at a time). */
static void fill_random(unsigned char *v, size_t len, uint64_t seed)
{
	struct th_rng r = { seed };
	for (size_t i = 0; i < len; i += 8) {
		uint64_t x = th_rng_next(&r);
		memcpy(v + i, &x, len - i < 8 ? len - i : 8);
	}
}

/* Opens a cache of these options with an injected clock (at T0) and a
 * default TTL of DTTL for the after-access ones. max_value caps
 * max_value_bytes (0: the default). */
static larder *open_options(const struct options *o, struct th_clock *clock, size_t max_value)
{
	larder_config *cfg = th_config(o->capacity);
	if (!cfg)
		return NULL;
	th_clock_init(clock, T0);
	int ok = CHECK_RC(larder_config_set_policy(cfg, o->policy), LARDER_OK) &&
		 CHECK_RC(larder_config_set_shards(cfg, o->shards), LARDER_OK) &&
		 CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, clock), LARDER_OK) &&
		 CHECK_RC(larder_config_set_expiry(cfg, o->expiry), LARDER_OK);
	if (ok && o->expiry == LARDER_EXPIRE_AFTER_ACCESS)
		ok = CHECK_RC(larder_config_set_default_ttl_ms(cfg, DTTL), LARDER_OK);
	if (ok && max_value)
		ok = CHECK_RC(larder_config_set_max_value_bytes(cfg, max_value), LARDER_OK);
	if (ok && o->compression != C_OFF) {
		ok = CHECK_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
		if (ok && o->compression == C_LZ4)
			ok = CHECK_RC(larder_config_set_compression_dictionary(
					      cfg, LARDER_DICTIONARY_NONE, NULL, 0),
				      LARDER_OK);
		if (ok && o->compression == C_DICT)
			ok = CHECK_RC(larder_config_set_compression_dictionary(
					      cfg, LARDER_DICTIONARY_GIVEN, dict_text,
					      sizeof(dict_text) - 1),
				      LARDER_OK);
	}
	if (!ok) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return th_open(cfg);
}

/* ---- Reads into buffers of every size ---------------------------------------- */

typedef int read_call(larder *, const void *, size_t, void *, size_t, size_t *);

/*
 * One read (get or peek) of key, whose value is want (len bytes): exactly len
 * copies it, len - 1 and NULL/0 return LARDER_EBUFSIZE with *value_len ==
 * len and the buffer untouched (or OK for an empty value), and neither a
 * short read nor peek counts a hit. A NULL buffer with a length, and a NULL
 * value_len, are LARDER_EINVAL.
 */
static void check_read_sizes(larder *c, read_call *read, int counts, const char *key,
			     const unsigned char *want, size_t len, unsigned char *buf)
{
	size_t klen = strlen(key), got = 0;
	uint64_t hits = th_stat(c, LARDER_STAT_HITS);

	memset(buf, 0xee, len + 1);
	CHECK_RC(read(c, key, klen, buf, len + 1, &got), LARDER_OK);
	CHECK_EQ(got, len);
	CHECK_MEM(buf, want, len);
	CHECK_EQ(buf[len], 0xee); /* nothing written past the value */
	/* A buffer of exactly the length, on the heap: AddressSanitizer
	 * catches a byte written past it (a decompression's, say). */
	unsigned char *exact = malloc(len ? len : 1);
	if (!CHECK(exact != NULL))
		return;
	got = 0;
	CHECK_RC(read(c, key, klen, exact, len, &got), LARDER_OK);
	CHECK_EQ(got, len);
	CHECK_MEM(exact, want, len);
	free(exact);
	CHECK_EQ(th_stat(c, LARDER_STAT_HITS) - hits, counts ? 2 : 0);

	hits = th_stat(c, LARDER_STAT_HITS);
	uint64_t misses = th_stat(c, LARDER_STAT_MISSES);
	if (len > 0) {
		memset(buf, 0xee, len);
		got = 0;
		CHECK_RC(read(c, key, klen, buf, len - 1, &got), LARDER_EBUFSIZE);
		CHECK_EQ(got, len);
		for (size_t i = 0; i < len; i++)
			if (!CHECK_EQ(buf[i], 0xee))
				break;
	}
	got = 12345;
	CHECK_RC(read(c, key, klen, NULL, 0, &got), len ? LARDER_EBUFSIZE : LARDER_OK);
	CHECK_EQ(got, len);
	CHECK_EQ(th_stat(c, LARDER_STAT_HITS) - hits, len ? 0 : (counts ? 1 : 0));
	CHECK_EQ(th_stat(c, LARDER_STAT_MISSES), misses);
	CHECK_RC(read(c, key, klen, NULL, 1, &got), LARDER_EINVAL);
	CHECK_RC(read(c, key, klen, buf, len + 1, NULL), LARDER_EINVAL);
}

static void run_read_sizes(const struct options *o)
{
	struct th_clock clock;
	larder *c = open_options(o, &clock, 0);
	/* Values within the tiny cache's entry limit (8 KiB) less a key and a header. */
	enum { BIG = 6000 };
	static unsigned char value[BIG + 1], buf[BIG + 2];
	static const size_t lens[] = { 0, 1, 63, 64, 200, BIG };
	if (!c)
		return;
	for (size_t i = 0; i < TH_COUNT(lens); i++) {
		for (int compressible = 0; compressible < 2; compressible++) {
			char key[32];
			size_t len = lens[i];
			uint64_t ttl = 0, ttl_after = 0;
			snprintf(key, sizeof(key), "key-%zu-%d", len, compressible);
			if (compressible)
				fill_compressible(value, len, (unsigned)i);
			else
				fill_random(value, len, len + 1);
			if (!CHECK_RC(larder_put(c, key, strlen(key), value, len, LARDER_TTL_DEFAULT),
				      LARDER_OK))
				continue;
			check_read_sizes(c, larder_peek, 0, key, value, len, buf);
			/* A short read extends no deadline (after access): the TTL
			 * left is what the last full read set, as the clock moves. */
			th_clock_advance(&clock, 5);
			CHECK_RC(larder_ttl_remaining(c, key, strlen(key), &ttl), LARDER_OK);
			check_read_sizes(c, larder_get, 1, key, value, len, buf);
			if (o->expiry != LARDER_EXPIRE_AFTER_ACCESS)
				continue;
			/* The full reads moved the deadline to now + DTTL (the slack
			 * is DTTL / 64 = 15 ms, so the 5 ms above may not have moved
			 * it: it is between the two). */
			CHECK_RC(larder_ttl_remaining(c, key, strlen(key), &ttl_after), LARDER_OK);
			CHECK_GE(ttl_after, ttl);
			CHECK_LE(ttl_after, DTTL);
			th_clock_advance(&clock, 100);
			size_t got;
			if (len)
				CHECK_RC(larder_get(c, key, strlen(key), buf, len - 1, &got),
					 LARDER_EBUFSIZE);
			CHECK_RC(larder_ttl_remaining(c, key, strlen(key), &ttl), LARDER_OK);
			CHECK_EQ(ttl, ttl_after - 100);
		}
	}
	larder_close(c);
}

/* ---- The entry limit on the stored size ------------------------------------------ */

/* The largest value key may take, a prefix of the random bytes at value
 * (stored raw): found by bisection between lo (accepted) and hi (refused
 * with EVALSIZE). */
static size_t largest_raw_value(larder *c, const char *key, const unsigned char *value,
				size_t lo, size_t hi)
{
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		int rc = larder_put(c, key, strlen(key), value, mid, LARDER_TTL_NEVER);
		if (rc == LARDER_OK)
			lo = mid;
		else if (CHECK_RC(rc, LARDER_EVALSIZE))
			hi = mid;
		else
			return 0;
	}
	return lo;
}

/*
 * The entry limit applies to the stored size: with compression on, a value
 * that would grow if compressed is stored raw, so its largest accepted
 * length is the raw one, and refused one byte past it; a compressible value
 * twice the raw limit is accepted when compressed (and read back whole) and
 * refused without compression.
 */
static void run_entry_limit(const struct options *o)
{
	struct th_clock clock;
	larder *c = open_options(o, &clock, 0);
	struct options off = *o;
	unsigned char *value = malloc(o->capacity / 4), *buf = malloc(o->capacity / 4);
	size_t got = 0;
	if (!c || !CHECK(value != NULL && buf != NULL))
		goto out;
	off.compression = C_OFF;
	struct th_clock off_clock;
	larder *raw = open_options(&off, &off_clock, 0);
	if (!raw)
		goto out;
	size_t limit = (size_t)(o->capacity / 8);
	/* A header and a key take less than 256 bytes: the answer lies above
	 * limit - 256 (the bisection fails the test otherwise). */
	fill_random(value, limit, o->capacity);
	size_t here = largest_raw_value(c, "limit-key", value, limit - 256, limit);
	size_t plain = largest_raw_value(raw, "limit-key", value, limit - 256, limit);
	CHECK_EQ(here, plain);
	/* Exactly 1/8 of the capacity: the header (none of the optional
	 * fields: no deadline, stored raw), the key and the value. */
	CHECK_EQ(larder__entry_bytes(0, 9, here), limit);
	CHECK_RC(larder_put(c, "limit-key", 9, value, here, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_get(c, "limit-key", 9, buf, here, &got), LARDER_OK);
	CHECK_EQ(got, here);
	CHECK_MEM(buf, value, here);
	value[0] ^= 1; /* another value: the refused write must not land */
	CHECK_RC(larder_put(c, "limit-key", 9, value, here + 1, LARDER_TTL_NEVER), LARDER_EVALSIZE);
	value[0] ^= 1;
	CHECK_RC(larder_get(c, "limit-key", 9, buf, here, &got), LARDER_OK);
	CHECK_MEM(buf, value, here);

	size_t twice = 2 * limit;
	fill_compressible(value, twice, 7);
	CHECK_RC(larder_put(raw, "big", 3, value, twice, LARDER_TTL_NEVER), LARDER_EVALSIZE);
	CHECK_RC(larder_put(c, "big", 3, value, twice, LARDER_TTL_NEVER),
		 o->compression == C_OFF ? LARDER_EVALSIZE : LARDER_OK);
	if (o->compression != C_OFF) {
		CHECK_RC(larder_get(c, "big", 3, buf, twice, &got), LARDER_OK);
		CHECK_EQ(got, twice);
		CHECK_MEM(buf, value, twice);
	}
	larder_close(raw);
out:
	larder_close(c);
	free(value);
	free(buf);
}

/* Values at max_value_bytes and one over, compression on or off: the limit
 * is on the value's own length, whatever it stores. */
static void run_value_limit(const struct options *o)
{
	enum { MAXV = 3000 };
	struct th_clock clock;
	larder *c = open_options(o, &clock, MAXV);
	static unsigned char value[MAXV + 1], buf[MAXV + 1];
	size_t got;
	if (!c)
		return;
	for (int compressible = 0; compressible < 2; compressible++) {
		if (compressible)
			fill_compressible(value, MAXV + 1, 3);
		else
			fill_random(value, MAXV + 1, 99);
		CHECK_RC(larder_put(c, "v", 1, value, MAXV, LARDER_TTL_DEFAULT), LARDER_OK);
		CHECK_RC(larder_put(c, "v", 1, value, MAXV + 1, LARDER_TTL_DEFAULT),
			 LARDER_EVALSIZE);
		CHECK_RC(larder_put_if_absent(c, "w", 1, value, MAXV + 1, LARDER_TTL_DEFAULT),
			 LARDER_EVALSIZE);
		CHECK_RC(larder_replace(c, "v", 1, value, MAXV + 1, LARDER_TTL_DEFAULT),
			 LARDER_EVALSIZE);
		/* An expected value longer than the limit is no error: a mismatch. */
		CHECK_RC(larder_replace_if_equals(c, "v", 1, value, MAXV + 1, "x", 1,
						  LARDER_TTL_DEFAULT),
			 LARDER_MISMATCH);
		CHECK_RC(larder_remove_if_equals(c, "v", 1, value, MAXV + 1), LARDER_MISMATCH);
		CHECK_RC(larder_remove_if_equals(c, "absent", 6, value, MAXV + 1), LARDER_MISS);
		CHECK_RC(larder_get(c, "v", 1, buf, sizeof(buf), &got), LARDER_OK);
		CHECK_EQ(got, MAXV);
		CHECK_MEM(buf, value, MAXV);
		CHECK_RC(larder_replace_if_equals(c, "v", 1, value, MAXV, value, MAXV,
						  LARDER_TTL_DEFAULT),
			 LARDER_OK);
		CHECK_RC(larder_remove_if_equals(c, "v", 1, value, MAXV), LARDER_OK);
	}
	larder_close(c);
}

/* ---- Keys: empty, NULL, at the limit ---------------------------------------------- */

static void ignore_read(void *ctx, const void *v, size_t n)
{
	(void)v;
	(void)n;
	++*(int *)ctx;
}

/* Each single-key call with (key, key_len): its result. */
static void check_every_call(larder *c, const void *key, size_t key_len, int want_read,
			     int want_write)
{
	char buf[8];
	size_t got;
	uint64_t ttl;
	int called = 0;
	CHECK_RC(larder_get(c, key, key_len, buf, sizeof(buf), &got), want_read);
	CHECK_RC(larder_peek(c, key, key_len, buf, sizeof(buf), &got), want_read);
	CHECK_RC(larder_get_with(c, key, key_len, ignore_read, &called), want_read);
	CHECK_RC(larder_contains(c, key, key_len), want_read);
	CHECK_RC(larder_ttl_remaining(c, key, key_len, &ttl), want_read);
	CHECK_RC(larder_put(c, key, key_len, "v", 1, LARDER_TTL_DEFAULT), want_write);
	CHECK_RC(larder_put_if_absent(c, key, key_len, "v", 1, LARDER_TTL_DEFAULT), want_write);
	CHECK_RC(larder_replace(c, key, key_len, "v", 1, LARDER_TTL_DEFAULT), want_write);
	CHECK_RC(larder_replace_if_equals(c, key, key_len, "v", 1, "w", 1, LARDER_TTL_DEFAULT),
		 want_write);
	CHECK_RC(larder_touch(c, key, key_len, LARDER_TTL_DEFAULT), want_write);
	CHECK_RC(larder_remove_if_equals(c, key, key_len, "w", 1), want_write);
	CHECK_RC(larder_remove(c, key, key_len), want_write);
	CHECK_EQ(called, 0);
}

static void run_keys(const struct options *o)
{
	struct th_clock clock;
	larder *c = open_options(o, &clock, 0);
	static char key[251];
	if (!c)
		return;
	uint64_t writes = th_stat(c, LARDER_STAT_WRITES);
	check_every_call(c, "", 0, LARDER_EINVAL, LARDER_EINVAL);
	check_every_call(c, "k", 0, LARDER_EINVAL, LARDER_EINVAL);
	check_every_call(c, NULL, 0, LARDER_EINVAL, LARDER_EINVAL);
	check_every_call(c, NULL, 1, LARDER_EINVAL, LARDER_EINVAL);
	memset(key, 'k', sizeof(key));
	check_every_call(c, key, 251, LARDER_EKEYSIZE, LARDER_EKEYSIZE);
	check_every_call(c, key, SIZE_MAX, LARDER_EKEYSIZE, LARDER_EKEYSIZE);
	CHECK_EQ(th_stat(c, LARDER_STAT_WRITES), writes);
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 0);
	/* A key of max_key_bytes (differing from its neighbours only in its
	 * last byte), and a one-byte key: both stored and apart. */
	key[249] = 'a';
	CHECK_RC(larder_put(c, key, 250, "A", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	key[249] = 'b';
	CHECK_RC(larder_put(c, key, 250, "B", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(c, "\0", 1, "Z", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	char buf[4];
	size_t got;
	key[249] = 'a';
	CHECK_RC(larder_get(c, key, 250, buf, sizeof(buf), &got), LARDER_OK);
	CHECK(got == 1 && buf[0] == 'A');
	CHECK_RC(larder_get(c, key, 249, buf, sizeof(buf), &got), LARDER_MISS);
	CHECK_RC(larder_get(c, "\0", 1, buf, sizeof(buf), &got), LARDER_OK);
	CHECK(got == 1 && buf[0] == 'Z');
	larder_close(c);
}

/* ---- Lifetimes: 1 ms and the maximum ------------------------------------------ */

static void run_ttl_ends(const struct options *o)
{
	struct th_clock clock;
	larder *c = open_options(o, &clock, 0);
	char buf[8];
	size_t got;
	uint64_t ttl = 0;
	if (!c)
		return;
	uint64_t now = atomic_load(&clock.now_ms);
	/* 1 ms: live at the write's own reading, with 1 ms left; gone 1 ms later. */
	CHECK_RC(larder_put(c, "one", 3, "1", 1, 1), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "one", 3, &ttl), LARDER_OK);
	CHECK_EQ(ttl, 1);
	CHECK_RC(larder_peek(c, "one", 3, buf, sizeof(buf), &got), LARDER_OK);
	CHECK_RC(larder_get(c, "one", 3, buf, sizeof(buf), &got), LARDER_OK);
	/* Touched to 1 ms again at the same reading: same deadline. */
	CHECK_RC(larder_touch(c, "one", 3, 1), LARDER_OK);
	/* The maximum lifetimes saturate: a finite deadline at UINT64_MAX - 1. */
	CHECK_RC(larder_put(c, "max", 3, "m", 1, UINT64_MAX - 1), LARDER_OK);
	CHECK_RC(larder_put(c, "big", 3, "b", 1, UINT64_MAX - now), LARDER_OK);
	CHECK_RC(larder_put(c, "never", 5, "n", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "max", 3, &ttl), LARDER_OK);
	CHECK_EQ(ttl, UINT64_MAX - 1 - now);
	CHECK_RC(larder_ttl_remaining(c, "big", 3, &ttl), LARDER_OK);
	CHECK_EQ(ttl, UINT64_MAX - 1 - now);
	CHECK_RC(larder_ttl_remaining(c, "never", 5, &ttl), LARDER_OK);
	CHECK_EQ(ttl, LARDER_TTL_NEVER);
	/* Touch with the maximum too; and touch to NEVER makes it "none". */
	CHECK_RC(larder_touch(c, "never", 5, UINT64_MAX - 1), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "never", 5, &ttl), LARDER_OK);
	CHECK_EQ(ttl, UINT64_MAX - 1 - now);
	CHECK_RC(larder_touch(c, "never", 5, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "never", 5, &ttl), LARDER_OK);
	CHECK_EQ(ttl, LARDER_TTL_NEVER);

	th_clock_advance(&clock, 1);
	CHECK_RC(larder_get(c, "one", 3, buf, sizeof(buf), &got), LARDER_MISS);
	CHECK_RC(larder_peek(c, "one", 3, buf, sizeof(buf), &got), LARDER_MISS);
	CHECK_RC(larder_contains(c, "one", 3), LARDER_MISS);
	CHECK_RC(larder_ttl_remaining(c, "one", 3, &ttl), LARDER_MISS);
	CHECK_RC(larder_touch(c, "one", 3, 100), LARDER_MISS);
	CHECK_RC(larder_replace(c, "one", 3, "x", 1, 100), LARDER_MISS);
	CHECK_RC(larder_put_if_absent(c, "one", 3, "2", 1, 1), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "max", 3, &ttl), LARDER_OK);
	CHECK_EQ(ttl, UINT64_MAX - 2 - now);
	/* The expired entry is reported EXPIRED once the maintainer meets it:
	 * after a flush, exactly one expiry (the 1 ms entry's first version was
	 * replaced by put_if_absent's, or reclaimed: either way it left). */
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	CHECK_EQ(th_stat(c, LARDER_STAT_EXPIRATIONS) + th_stat(c, LARDER_STAT_REPLACEMENTS), 1);
	CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 4);
	larder_close(c);
}

/* ---- A clock that steps back ------------------------------------------------------- */

/* ttl_remaining of key at this reading: want, or (early) absent once the
 * maintainer, keeping the latest time it saw, reclaimed it. */
static void check_left_or_gone(larder *c, const char *key, uint64_t want)
{
	uint64_t left = 0;
	int rc = larder_ttl_remaining(c, key, strlen(key), &left);
	if (rc == LARDER_OK)
		CHECK_EQ(left, want);
	else
		CHECK_RC(rc, LARDER_MISS);
}

/*
 * "One that does [go backwards] is tolerated, not honoured: ... every call
 * judges deadlines by its own reading (a read never returns a value at or
 * past the deadline by that reading, and a deadline set is that reading
 * plus the TTL), but ... entries may leave sooner than their deadlines say
 * by the current reading" (larder.h, the clock). With after-access: "A read
 * never moves a deadline earlier".
 */
static void run_clock_back(const struct options *o)
{
	struct th_clock clock;
	larder *c = open_options(o, &clock, 0);
	char buf[8];
	size_t got;
	uint64_t left = 0;
	int access = o->expiry == LARDER_EXPIRE_AFTER_ACCESS;
	if (!c)
		return;
	atomic_store(&clock.now_ms, 6000);
	CHECK_RC(larder_put(c, "a", 1, "1", 1, 3000), LARDER_OK); /* deadline 9000 */
	CHECK_RC(larder_put(c, "n", 1, "1", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "d", 1, "1", 1, LARDER_TTL_DEFAULT), LARDER_OK); /* 7000 or none */
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	atomic_store(&clock.now_ms, 5000); /* back by a second */
	CHECK_RC(larder_ttl_remaining(c, "a", 1, &left), LARDER_OK);
	CHECK_EQ(left, 4000);
	CHECK_RC(larder_get(c, "a", 1, buf, sizeof(buf), &got), LARDER_OK);
	CHECK_RC(larder_get(c, "d", 1, buf, sizeof(buf), &got), LARDER_OK);
	/* The reads at 5000 asked for 6000 at most: no deadline moved. */
	CHECK_RC(larder_ttl_remaining(c, "a", 1, &left), LARDER_OK);
	CHECK_EQ(left, 4000);
	CHECK_RC(larder_ttl_remaining(c, "d", 1, &left), LARDER_OK);
	CHECK_EQ(left, access ? 2000 : LARDER_TTL_NEVER);
	/* Deadlines set now are this reading plus the TTL, below the latest
	 * time the maintainer may have seen: they may leave early. */
	CHECK_RC(larder_put(c, "b", 1, "1", 1, 100), LARDER_OK); /* 5100 */
	check_left_or_gone(c, "b", 100);
	CHECK_RC(larder_touch(c, "a", 1, 10), LARDER_OK); /* 5010: shorter, as asked */
	check_left_or_gone(c, "a", 10);
	th_clock_advance(&clock, 10);
	CHECK_RC(larder_get(c, "a", 1, buf, sizeof(buf), &got), LARDER_MISS);
	CHECK_RC(larder_peek(c, "a", 1, buf, sizeof(buf), &got), LARDER_MISS);
	check_left_or_gone(c, "b", 90);
	atomic_store(&clock.now_ms, 9000);
	CHECK_RC(larder_get(c, "b", 1, buf, sizeof(buf), &got), LARDER_MISS);
	CHECK_RC(larder_get(c, "d", 1, buf, sizeof(buf), &got), access ? LARDER_MISS : LARDER_OK);
	CHECK_RC(larder_get(c, "n", 1, buf, sizeof(buf), &got), LARDER_OK);
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), access ? 1 : 2);
	CHECK_EQ(th_stat(c, LARDER_STAT_EXPIRATIONS), access ? 3 : 2);
	larder_close(c);
}

/* ---- Counters after every operation ---------------------------------------------- */

struct counts {
	uint64_t v[LARDER_STAT_COUNT];
};

static void snap(larder *c, struct counts *s)
{
	CHECK_RC(larder_stats(c, s->v, LARDER_STAT_COUNT), LARDER_OK);
}

/* The counters named in want (pairs of stat, delta; -1 ends) moved by
 * exactly that since before; hits, misses and writes by 0 unless named. */
static void check_moved(larder *c, const struct counts *before, int line, const int *want)
{
	struct counts now;
	int64_t d[LARDER_STAT_COUNT] = { 0 };
	static const int watched[] = { LARDER_STAT_HITS, LARDER_STAT_MISSES, LARDER_STAT_WRITES };
	snap(c, &now);
	for (const int *w = want; *w >= 0; w += 2)
		d[w[0]] = w[1];
	for (int i = 0; i < LARDER_STAT_COUNT; i++) {
		int named = 0;
		for (const int *w = want; *w >= 0; w += 2)
			named |= w[0] == i;
		for (size_t k = 0; k < TH_COUNT(watched); k++)
			named |= watched[k] == i;
		if (named && (int64_t)(now.v[i] - before->v[i]) != d[i])
			th_fail(__FILE__, line, "%s moved by %" PRId64 ", want %" PRId64,
				larder_stat_name((enum larder_stat)i),
				(int64_t)(now.v[i] - before->v[i]), d[i]);
	}
}

#define MOVED(c, before, ...)                                                  \
	do {                                                                   \
		static const int want_[] = { __VA_ARGS__, -1 };                \
		check_moved(c, before, __LINE__, want_);                       \
		snap(c, before);                                               \
	} while (0)
#define UNMOVED(c, before)                                                     \
	do {                                                                   \
		static const int want_[] = { -1 };                             \
		check_moved(c, before, __LINE__, want_);                       \
		snap(c, before);                                               \
	} while (0)

/* After a flush, the maintainer's counters are exact totals: the entries and
 * each cause's removals since open (no eviction in these small workloads). */
static void check_totals(larder *c, int line, uint64_t entries, uint64_t removals,
			 uint64_t replacements, uint64_t expirations, uint64_t cleared)
{
	static const enum larder_stat stat[] = { LARDER_STAT_ENTRIES, LARDER_STAT_REMOVALS,
						 LARDER_STAT_REPLACEMENTS,
						 LARDER_STAT_EXPIRATIONS, LARDER_STAT_CLEARED,
						 LARDER_STAT_EVICTIONS };
	uint64_t want[] = { entries, removals, replacements, expirations, cleared, 0 };
	for (size_t i = 0; i < TH_COUNT(stat); i++) {
		uint64_t got = th_stat(c, stat[i]);
		if (got != want[i])
			th_fail(__FILE__, line, "%s is %" PRIu64 ", want %" PRIu64,
				larder_stat_name(stat[i]), got, want[i]);
	}
}
#define TOTALS(c, ...) check_totals(c, __LINE__, __VA_ARGS__)

static void count_batch(void *ctx, size_t i, const void *v, size_t n)
{
	(void)v;
	(void)n;
	*(uint64_t *)ctx |= (uint64_t)1 << i;
}

/*
 * Hits: reads (get, get_with, get_batch) that found a live value; misses:
 * those that found nothing or an expired value (a batch's invalid keys are
 * skipped, not missed); peek counts neither. Writes: successful writes of a
 * new value, not the refused ones. After a flush: the entries, and each
 * removal under its cause; a second flush moves nothing.
 */
static void run_counters(const struct options *o)
{
	struct th_clock clock;
	larder *c = open_options(o, &clock, 0);
	struct counts s;
	char buf[16];
	size_t got;
	int called = 0;
	if (!c)
		return;
	snap(c, &s);
	CHECK_EQ(s.v[LARDER_STAT_CAPACITY_BYTES], o->capacity);
	CHECK_EQ(s.v[LARDER_STAT_ENTRIES], 0);
	CHECK_EQ(s.v[LARDER_STAT_USED_BYTES], 0);
	CHECK_RC(larder_put(c, "a", 1, "1", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	MOVED(c, &s, LARDER_STAT_WRITES, 1);
	TOTALS(c, 1, 0, 0, 0, 0);
	CHECK_RC(larder_get(c, "a", 1, buf, sizeof(buf), &got), LARDER_OK);
	MOVED(c, &s, LARDER_STAT_HITS, 1);
	CHECK_RC(larder_get(c, "b", 1, buf, sizeof(buf), &got), LARDER_MISS);
	MOVED(c, &s, LARDER_STAT_MISSES, 1);
	CHECK_RC(larder_get_with(c, "a", 1, ignore_read, &called), LARDER_OK);
	MOVED(c, &s, LARDER_STAT_HITS, 1);
	CHECK_RC(larder_get_with(c, "b", 1, ignore_read, &called), LARDER_MISS);
	MOVED(c, &s, LARDER_STAT_MISSES, 1);
	CHECK_EQ(called, 1);
	CHECK_RC(larder_peek(c, "a", 1, buf, sizeof(buf), &got), LARDER_OK);
	CHECK_RC(larder_peek(c, "b", 1, buf, sizeof(buf), &got), LARDER_MISS);
	UNMOVED(c, &s);
	/* A batch: one hit per key found, one miss per valid key absent, the
	 * invalid ones (empty, too long, NULL) skipped. */
	{
		static char long_key[251];
		const void *keys[6] = { "a", "b", "", long_key, NULL, "a" };
		size_t lens[6] = { 1, 1, 0, sizeof(long_key), 1, 1 };
		uint64_t seen = 0;
		memset(long_key, 'l', sizeof(long_key));
		CHECK_EQ(larder_get_batch(c, 6, keys, lens, count_batch, &seen), 2);
		CHECK_EQ(seen, (uint64_t)1 << 0 | (uint64_t)1 << 5);
		MOVED(c, &s, LARDER_STAT_HITS, 2, LARDER_STAT_MISSES, 1);
	}
	/* Writes that do not write: no count. */
	CHECK_RC(larder_put_if_absent(c, "a", 1, "2", 1, LARDER_TTL_DEFAULT), LARDER_EXISTS);
	CHECK_RC(larder_replace(c, "b", 1, "2", 1, LARDER_TTL_DEFAULT), LARDER_MISS);
	CHECK_RC(larder_replace_if_equals(c, "a", 1, "x", 1, "2", 1, LARDER_TTL_DEFAULT),
		 LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(c, "b", 1, "x", 1, "2", 1, LARDER_TTL_DEFAULT),
		 LARDER_MISS);
	CHECK_RC(larder_remove(c, "b", 1), LARDER_MISS);
	CHECK_RC(larder_remove_if_equals(c, "a", 1, "x", 1), LARDER_MISMATCH);
	CHECK_RC(larder_put(c, "", 0, "2", 1, LARDER_TTL_DEFAULT), LARDER_EINVAL);
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	UNMOVED(c, &s);
	TOTALS(c, 1, 0, 0, 0, 0);
	/* Writes that do. */
	CHECK_RC(larder_put_if_absent(c, "b", 1, "2", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_replace(c, "b", 1, "3", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_replace_if_equals(c, "b", 1, "3", 1, "4", 1, LARDER_TTL_DEFAULT),
		 LARDER_OK);
	CHECK_RC(larder_put(c, "b", 1, "5", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	MOVED(c, &s, LARDER_STAT_WRITES, 4);
	TOTALS(c, 2, 0, 3, 0, 0);
	CHECK_RC(larder_remove_if_equals(c, "b", 1, "5", 1), LARDER_OK);
	CHECK_RC(larder_remove(c, "a", 1), LARDER_OK);
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	UNMOVED(c, &s);
	TOTALS(c, 0, 2, 3, 0, 0);
	/* Expired: a miss for the reads, and one expiration. */
	CHECK_RC(larder_put(c, "e", 1, "1", 1, 10), LARDER_OK);
	CHECK_RC(larder_put(c, "f", 1, "1", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "g", 1, "1", 1, 10), LARDER_OK);
	MOVED(c, &s, LARDER_STAT_WRITES, 3);
	th_clock_advance(&clock, 10);
	CHECK_RC(larder_get(c, "e", 1, buf, sizeof(buf), &got), LARDER_MISS);
	CHECK_RC(larder_get_with(c, "e", 1, ignore_read, &called), LARDER_MISS);
	MOVED(c, &s, LARDER_STAT_MISSES, 2);
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	UNMOVED(c, &s);
	TOTALS(c, 1, 2, 3, 2, 0);
	/* Clear: CLEARED for the live ones. */
	CHECK_RC(larder_put(c, "h", 1, "1", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_clear(c), LARDER_OK);
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	MOVED(c, &s, LARDER_STAT_WRITES, 1);
	TOTALS(c, 0, 2, 3, 2, 2);
	CHECK_EQ(s.v[LARDER_STAT_USED_BYTES], 0);
	/* A second flush with nothing in between moves no counter. */
	{
		struct counts again;
		CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
		snap(c, &again);
		static const int fixed[] = { LARDER_STAT_HITS, LARDER_STAT_MISSES,
					     LARDER_STAT_WRITES, LARDER_STAT_ENTRIES,
					     LARDER_STAT_USED_BYTES, LARDER_STAT_EVICTIONS,
					     LARDER_STAT_EXPIRATIONS, LARDER_STAT_REMOVALS,
					     LARDER_STAT_REPLACEMENTS, LARDER_STAT_CLEARED };
		for (size_t i = 0; i < TH_COUNT(fixed); i++)
			CHECK_EQ(again.v[fixed[i]], s.v[fixed[i]]);
	}
	larder_close(c);
}

static void run_matrix(void (*run)(const struct options *))
{
	for (size_t i = 0; i < NOPTIONS; i++) {
		struct options o = options_at(i);
		long before = th_failures();
		run(&o);
		if (th_failures() != before) {
			options_print(&o);
			return;
		}
	}
}

static void test_read_sizes(void)
{
	run_matrix(run_read_sizes);
}
static void test_entry_limit(void)
{
	run_matrix(run_entry_limit);
}
static void test_value_limit(void)
{
	run_matrix(run_value_limit);
}
static void test_keys(void)
{
	run_matrix(run_keys);
}
static void test_ttl_ends(void)
{
	run_matrix(run_ttl_ends);
}
static void test_counters(void)
{
	run_matrix(run_counters);
}
static void test_clock_back(void)
{
	run_matrix(run_clock_back);
}

/* ---- Arguments of the other calls ------------------------------------------------ */

static void batch_never(void *ctx, size_t i, const void *v, size_t n)
{
	(void)ctx;
	(void)i;
	(void)v;
	(void)n;
	th_fail(__FILE__, __LINE__, "batch callback called");
}

static void iter_count(void *ctx, const void *k, size_t kl, const void *v, size_t vl,
		       uint64_t ttl, uint64_t bytes)
{
	(void)k;
	(void)kl;
	(void)v;
	(void)vl;
	(void)ttl;
	(void)bytes;
	++*(int *)ctx;
}

static void test_call_arguments(void)
{
	larder *c = th_open(th_config(MiB));
	const void *keys[1] = { "k" };
	size_t lens[1] = { 1 };
	larder_iter *it = (larder_iter *)&it;
	uint64_t values[LARDER_STAT_COUNT + 4];
	int n = 0;
	REQUIRE(c != NULL);
	/* get_batch: EINVAL for any NULL array or fn whatever count; 0 for count 0. */
	CHECK_EQ(larder_get_batch(NULL, 1, keys, lens, batch_never, NULL), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(c, 1, NULL, lens, batch_never, NULL), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(c, 1, keys, NULL, batch_never, NULL), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(c, 1, keys, lens, NULL, NULL), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(c, 0, NULL, NULL, batch_never, NULL), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(c, 0, keys, lens, NULL, NULL), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(c, 0, keys, lens, batch_never, NULL), 0);
	CHECK_EQ(larder_get_batch(c, 1, keys, lens, batch_never, NULL), 0);
	/* get_with and ttl_remaining: their required pointers. */
	CHECK_RC(larder_get_with(c, "k", 1, NULL, NULL), LARDER_EINVAL);
	CHECK_RC(larder_ttl_remaining(c, "k", 1, NULL), LARDER_EINVAL);
	/* A value or expected NULL with a length; NULL with 0 is an empty one. */
	CHECK_RC(larder_put(c, "k", 1, NULL, 1, LARDER_TTL_NEVER), LARDER_EINVAL);
	CHECK_RC(larder_put(c, "k", 1, NULL, 0, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, NULL, 1, "v", 1, LARDER_TTL_NEVER),
		 LARDER_EINVAL);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, NULL, 0, NULL, 0, LARDER_TTL_NEVER),
		 LARDER_OK);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, NULL, 0), LARDER_OK);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, NULL, 0), LARDER_MISS);
	/* The write-side calls on a NULL cache. */
	CHECK_RC(larder_clear(NULL), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(NULL, MiB), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(c, 0), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(c, 64 * KiB), LARDER_OK);
	CHECK_RC(larder_set_capacity(c, MiB), LARDER_OK);
	CHECK_RC(larder_save(NULL, "/tmp/x"), LARDER_EINVAL);
	CHECK_RC(larder_save(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_save(c, ""), LARDER_EINVAL);
	CHECK_RC(larder_save(c, "/dev/null"), LARDER_EINVAL);
	CHECK_RC(larder_load(NULL, "/tmp/x"), LARDER_EINVAL);
	CHECK_RC(larder_load(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_load(c, "/dev/null"), LARDER_EFORMAT);
	CHECK_RC(larder_load(c, "/"), LARDER_EFORMAT);
	/* The cursor: *out NULL on failure, MISS for ever after the end. */
	CHECK_RC(larder_iter_open(NULL, &it), LARDER_EINVAL);
	CHECK(it == NULL);
	CHECK_RC(larder_iter_open(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_iter_next(NULL, iter_count, &n), LARDER_EINVAL);
	REQUIRE_RC(larder_put(c, "k", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	CHECK_RC(larder_iter_next(it, NULL, NULL), LARDER_EINVAL);
	CHECK_RC(larder_iter_next(it, iter_count, &n), LARDER_OK);
	CHECK_RC(larder_iter_next(it, iter_count, &n), LARDER_MISS);
	REQUIRE_RC(larder_put(c, "k2", 2, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_iter_next(it, iter_count, &n), LARDER_MISS);
	CHECK_EQ(n, 1);
	larder_iter_close(it);
	larder_iter_close(NULL);
	/* Stats: a count past the end zero-filled; size classes' ranges. */
	for (size_t i = 0; i < TH_COUNT(values); i++)
		values[i] = UINT64_MAX;
	CHECK_RC(larder_stats(c, values, TH_COUNT(values)), LARDER_OK);
	for (size_t i = LARDER_STAT_COUNT; i < TH_COUNT(values); i++)
		CHECK_EQ(values[i], 0);
	size_t classes = larder_size_class_count();
	CHECK_GT(classes, 0);
	CHECK_EQ(larder_size_class_count(), classes);
	for (size_t i = 0; i < LARDER_CLASS_STAT_COUNT + 4; i++)
		values[i] = UINT64_MAX;
	CHECK_RC(larder_stats_size_class(c, classes - 1, values, LARDER_CLASS_STAT_COUNT + 4),
		 LARDER_OK);
	for (size_t i = LARDER_CLASS_STAT_COUNT; i < LARDER_CLASS_STAT_COUNT + 4; i++)
		CHECK_EQ(values[i], 0);
	CHECK_EQ(values[LARDER_CLASS_BYTES], values[LARDER_CLASS_PAGES] * values[LARDER_CLASS_PAGE_BYTES]);
	CHECK_RC(larder_stats_size_class(c, classes, values, 1), LARDER_EINVAL);
	CHECK_RC(larder_stats_size_class(NULL, 0, values, 1), LARDER_EINVAL);
	CHECK_RC(larder_stats_size_class(c, 0, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_stats_size_class(c, 0, NULL, 0), LARDER_OK);
	/* Flush: 0 asks without waiting. */
	int rc = larder_flush(c, 0);
	CHECK(rc == LARDER_OK || rc == LARDER_EBUSY);
	larder_close(c);
}

/* Each name table: a name for every index, unique, and NULL (or "unknown")
 * one past the end. */
static void test_name_tables(void)
{
	for (int i = 0; i < LARDER_CLASS_STAT_COUNT; i++)
		CHECK(larder_class_stat_name((enum larder_class_stat)i) != NULL);
	CHECK(larder_class_stat_name(LARDER_CLASS_STAT_COUNT) == NULL);
	CHECK(larder_class_stat_name((enum larder_class_stat)-1) == NULL);
	for (int i = 0; i < LARDER_POOL_STAT_COUNT; i++)
		CHECK(larder_pool_stat_name((enum larder_pool_stat)i) != NULL);
	CHECK(larder_pool_stat_name(LARDER_POOL_STAT_COUNT) == NULL);
	CHECK(larder_pool_stat_name((enum larder_pool_stat)-1) == NULL);
	for (int i = 0; i < LARDER_POOL_CACHE_STAT_COUNT; i++)
		CHECK(larder_pool_cache_stat_name((enum larder_pool_cache_stat)i) != NULL);
	CHECK(larder_pool_cache_stat_name(LARDER_POOL_CACHE_STAT_COUNT) == NULL);
	CHECK(larder_pool_cache_stat_name((enum larder_pool_cache_stat)-1) == NULL);
	CHECK(larder_stat_name(LARDER_STAT_COUNT) == NULL);
	CHECK(larder_stat_name((enum larder_stat)-1) == NULL);
	CHECK_STR(larder_cause_name((enum larder_cause)5), "unknown");
	CHECK_STR(larder_cause_name((enum larder_cause)-1), "unknown");
	for (int i = 0; i <= LARDER_CAUSE_CLEARED; i++)
		CHECK(strcmp(larder_cause_name((enum larder_cause)i), "unknown") != 0);
	for (int code = -20; code <= 20; code++)
		CHECK(larder_strerror(code) != NULL);
	CHECK(larder_strerror(INT32_MIN) != NULL);
	CHECK(larder_strerror(INT32_MAX) != NULL);
}

/* ---- Credit a write did not use -------------------------------------------------- */

struct put_once {
	larder *cache;
	int rc;
};

static void *put_from_another_thread(void *arg)
{
	struct put_once *p = arg;
	p->rc = larder_put(p->cache, "after", 5, "v", 1, LARDER_TTL_NEVER);
	return NULL;
}

/* Cuts c to the smallest capacity, whose bound (4 MiB) is far above what it
 * holds, and checks that another thread's write finds room at once. */
static void check_room_after_cut(larder *c)
{
	CHECK_RC(larder_set_capacity(c, 64 * KiB), LARDER_OK);
	CHECK_RC(larder_flush(c, FLUSH_WAIT_MS), LARDER_OK);
	CHECK_LT(th_stat(c, LARDER_STAT_USED_BYTES), 64 * KiB);
	struct put_once other = { c, 1 };
	th_run_threads(1, put_from_another_thread, &other, sizeof(other));
	CHECK_RC(other.rc, LARDER_OK);
	CHECK_EQ(th_stat(c, LARDER_STAT_BUSY_MEMORY), 0);
}

/* A cache of 64 MiB (values up to 8 MiB, its entry limit) that fails a
 * write at the bound after 100 ms. */
static larder *open_credit_cache(unsigned shards, int compress)
{
	larder_config *cfg = th_config(64 * MiB);
	if (cfg && CHECK_RC(larder_config_set_shards(cfg, shards), LARDER_OK) &&
	    CHECK_RC(larder_config_set_max_value_bytes(cfg, 8 * MiB), LARDER_OK) &&
	    CHECK_RC(larder_config_set_write_wait_ms(cfg, 100), LARDER_OK) &&
	    (!compress ||
	     (CHECK_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK) &&
	      CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_NONE, NULL,
								0),
		       LARDER_OK))))
		return th_open(cfg);
	larder_config_destroy(cfg);
	return NULL;
}

/*
 * "At the bound a writer waits up to write_wait_ms and then fails with
 * LARDER_EBUSY" (README, Limits): never far below it. larder_load takes
 * byte credit for its records' plain sizes before it writes them (a
 * compressed value charges less); what it did not use must not stay with
 * the loading thread (docs/limits.md: a thread holds up to 16 KiB of credit
 * per cache), or, once the capacity is cut, the other threads' writes find
 * the budget spent with nearly nothing stored. Compressible values, one
 * shard and four, the load's file under 16 MiB (written by the caller).
 */
static void run_load_credit(unsigned shards)
{
	enum { N = 96, VLEN = 64 * 1024 };
	char path[64];
	unsigned char *value = malloc(VLEN);
	larder *c[2] = { NULL, NULL };
	snprintf(path, sizeof(path), "/tmp/larder-api-credit-%d.snap", (int)getpid());
	if (!CHECK(value != NULL))
		return;
	for (int i = 0; i < 2; i++)
		if (!(c[i] = open_credit_cache(shards, 1)))
			goto out;
	for (int i = 0; i < N; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		fill_compressible(value, VLEN, (unsigned)i);
		CHECK_RC(larder_put(c[0], key, strlen(key), value, VLEN, LARDER_TTL_NEVER), LARDER_OK);
	}
	if (!CHECK_RC(larder_save(c[0], path), LARDER_OK))
		goto out;
	CHECK_RC(larder_load(c[1], path), LARDER_OK);
	CHECK_RC(larder_flush(c[1], FLUSH_WAIT_MS), LARDER_OK);
	CHECK_EQ(th_stat(c[1], LARDER_STAT_ENTRIES), N);
	check_room_after_cut(c[1]);
out:
	unlink(path);
	larder_close(c[0]);
	larder_close(c[1]);
	free(value);
}

/* The same for the credit of writes that failed on the key's status (a
 * conditional write of a large value: EXISTS, MISS, MISMATCH) and touches
 * that gave a deadline to a large entry: each gave its charge back to the
 * thread's credit. */
static void run_failed_write_credit(unsigned shards)
{
	enum { VLEN = 6 * 1024 * 1024 }; /* more than the bound (4 MiB) */
	unsigned char *value = calloc(1, VLEN);
	larder *c = open_credit_cache(shards, 0);
	if (!CHECK(value != NULL) || !c)
		goto out;
	CHECK_RC(larder_put(c, "k", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put_if_absent(c, "k", 1, value, VLEN, LARDER_TTL_NEVER), LARDER_EXISTS);
	CHECK_RC(larder_replace(c, "absent", 6, value, VLEN, LARDER_TTL_NEVER), LARDER_MISS);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, "x", 1, value, VLEN, LARDER_TTL_NEVER),
		 LARDER_MISMATCH);
	CHECK_RC(larder_remove(c, "k", 1), LARDER_OK);
	check_room_after_cut(c);
out:
	larder_close(c);
	free(value);
}

static void test_unused_credit(void)
{
	run_load_credit(1);
	run_load_credit(4);
	run_failed_write_credit(1);
	run_failed_write_credit(4);
}

/* ---- The policy simulator's capacity ------------------------------------------ */

/* The summed sizes a simulator holds (larder_sim_shard_info over its shards). */
static uint64_t sim_used(const larder_sim *sim, uint32_t shards)
{
	uint64_t total = 0;
	for (uint32_t k = 0; k < shards; k++) {
		uint64_t cap, used;
		if (CHECK_RC(larder_sim_shard_info(sim, k, &cap, &used), LARDER_OK))
			total += used;
	}
	return total;
}

/*
 * larder_sim_access: "a key absent is a miss and is inserted, then entries
 * are evicted while the summed sizes exceed capacity"; "a present key with
 * a different size is an update ... and counts as a hit". So after every
 * access of the strict model (no flags) the summed sizes are within the
 * capacity, for every policy and shard count: also when an update makes an
 * entry larger than its shard's share, or than the whole capacity (a key
 * alone over capacity is evicted at once: the next access misses).
 */
static void test_sim_capacity(void)
{
	enum { CAP = 64, STEPS = 3000 };
	for (int policy = LARDER_POLICY_DEFAULT; policy <= LARDER_POLICY_S3FIFO_TUNED; policy++) {
		for (uint32_t shards = 1; shards <= 16; shards *= 2) {
			larder_sim *sim = NULL;
			struct th_rng r = { (uint64_t)policy * 131 + shards };
			long before = th_failures();
			if (!CHECK_RC(larder_sim_create(&sim, (enum larder_policy)policy, CAP, 0),
				      LARDER_OK))
				continue;
			CHECK_RC(larder_sim_set_shards(sim, shards), LARDER_OK);
			for (int i = 0; i < STEPS && th_failures() == before; i++) {
				uint64_t key = th_rng_below(&r, 40);
				/* Mostly small, sometimes over a shard's share, now and
				 * then over the whole capacity. */
				uint64_t roll = th_rng_below(&r, 100);
				uint64_t size = roll < 80   ? 1 + th_rng_below(&r, 4)
						: roll < 97 ? 1 + th_rng_below(&r, CAP)
							    : CAP + 1 + th_rng_below(&r, CAP);
				int rc = larder_sim_access(sim, key, size);
				CHECK(rc == 0 || rc == 1);
				uint64_t used = sim_used(sim, shards);
				if (used > CAP)
					th_fail(__FILE__, __LINE__,
						"policy %d, %u shards, step %d (key %" PRIu64
						", size %" PRIu64 "): %" PRIu64 " held, capacity %d",
						policy, shards, i, key, size, used, CAP);
				if (size > CAP)
					CHECK_RC(larder_sim_access(sim, key, size), 0);
			}
			larder_sim_destroy(sim);
		}
	}
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_setter_bounds), TH_TEST(test_dictionary_bounds),
		TH_TEST(test_pool_config_bounds), TH_TEST(test_read_sizes),
		TH_TEST(test_entry_limit), TH_TEST(test_value_limit),
		TH_TEST(test_keys), TH_TEST(test_ttl_ends),
		TH_TEST(test_counters), TH_TEST(test_clock_back),
		TH_TEST(test_call_arguments),
		TH_TEST(test_name_tables), TH_TEST(test_sim_capacity),
		TH_TEST(test_unused_credit),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
