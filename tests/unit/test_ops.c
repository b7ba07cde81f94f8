/*
 * tests/unit/test_ops.c - the semantics and error paths of every operation.
 *
 * One cache per test, single-threaded, default clock, no TTLs (test_ttl.c owns
 * time). Each error path checks the code larder.h documents and, for writes,
 * that the key's previous value is left intact ("On any error the key's
 * previous value is left intact"). Tests end with the accounting check
 * (quiesce, then counters == walk) so that every path is also audited.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "core/hash.h"
#include "harness.h"

/* Checks that key holds exactly value[0..len) via get, get_with and contains. */
#define EXPECT_VALUE(c, k, klen, v, vlen) expect_value(__FILE__, __LINE__, c, k, klen, v, vlen)
#define EXPECT_MISS(c, k, klen) expect_miss(__FILE__, __LINE__, c, k, klen)

struct capture {
	int calls;
	size_t len;
	unsigned char *bytes;
};

static void capture_fn(void *ctx, const void *value, size_t value_len)
{
	struct capture *cap = ctx;

	cap->calls++;
	cap->len = value_len;
	free(cap->bytes);
	cap->bytes = malloc(value_len ? value_len : 1);
	if (cap->bytes && value_len)
		memcpy(cap->bytes, value, value_len);
}

static void expect_value(const char *file, int line, larder *c, const void *k, size_t klen,
			 const void *v, size_t vlen)
{
	unsigned char *buf = malloc(vlen + 16);
	size_t got = 12345;
	struct capture cap = {0, 0, NULL};
	int rc;

	if (buf == NULL) {
		th_fail(file, line, "malloc");
		return;
	}
	rc = larder_get(c, k, klen, buf, vlen + 16, &got);
	if (rc != LARDER_OK)
		th_fail(file, line, "get: %d (%s), expected a value of %zu bytes", rc,
			larder_strerror(rc), vlen);
	else if (got != vlen || (vlen && memcmp(buf, v, vlen) != 0))
		th_fail(file, line, "get: wrong value (len %zu, expected %zu)", got, vlen);
	rc = larder_get_with(c, k, klen, capture_fn, &cap);
	if (rc != LARDER_OK || cap.calls != 1)
		th_fail(file, line, "get_with: %d (%s), %d calls", rc, larder_strerror(rc), cap.calls);
	else if (cap.len != vlen || (vlen && memcmp(cap.bytes, v, vlen) != 0))
		th_fail(file, line, "get_with: wrong value (len %zu, expected %zu)", cap.len, vlen);
	rc = larder_contains(c, k, klen);
	if (rc != LARDER_OK)
		th_fail(file, line, "contains: %d (%s)", rc, larder_strerror(rc));
	free(cap.bytes);
	free(buf);
}

static void expect_miss(const char *file, int line, larder *c, const void *k, size_t klen)
{
	unsigned char buf[8];
	size_t got = 0;
	struct capture cap = {0, 0, NULL};
	uint64_t ttl;
	int rc;

	if ((rc = larder_get(c, k, klen, buf, sizeof(buf), &got)) != LARDER_MISS)
		th_fail(file, line, "get: %d (%s), expected a miss", rc, larder_strerror(rc));
	rc = larder_get_with(c, k, klen, capture_fn, &cap);
	if (rc != LARDER_MISS || cap.calls != 0)
		th_fail(file, line, "get_with: %d (%s) with %d calls, expected a miss", rc,
			larder_strerror(rc), cap.calls);
	if ((rc = larder_contains(c, k, klen)) != LARDER_MISS)
		th_fail(file, line, "contains: %d (%s), expected a miss", rc, larder_strerror(rc));
	if ((rc = larder_ttl_remaining(c, k, klen, &ttl)) != LARDER_MISS)
		th_fail(file, line, "ttl_remaining: %d (%s), expected a miss", rc,
			larder_strerror(rc));
	free(cap.bytes);
}

static larder *open_cache(uint64_t capacity, size_t max_key, size_t max_value)
{
	larder_config *config = th_config(capacity);

	if (config == NULL)
		return NULL;
	CHECK_RC(larder_config_set_max_key_bytes(config, max_key), LARDER_OK);
	CHECK_RC(larder_config_set_max_value_bytes(config, max_value), LARDER_OK);
	return th_open(config);
}

static void fill(unsigned char *p, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)(seed * 31u + i * 7u + (i >> 8));
}

/* ---- Round trips -------------------------------------------------------- */

static void test_roundtrip_sizes(void)
{
	static const size_t sizes[] = {0,    1,	   2,	  7,	 8,	9,     15,    16,
				       17,   23,   24,	  25,	 31,	32,    33,    63,
				       64,   65,   100,	  127,	 128,	129,   255,   256,
				       1000, 4095, 4096,  4097,	 8191,	16384, 65535, 65536,
				       65537, 100000, 500000, 1048576};
	larder *cache = open_cache(64 * MiB, 250, MiB);
	unsigned char *value = malloc(MiB);

	REQUIRE(cache != NULL && value != NULL);
	for (size_t i = 0; i < TH_COUNT(sizes); i++) {
		char key[32];
		snprintf(key, sizeof(key), "size-%zu", sizes[i]);
		fill(value, sizes[i], (unsigned)i);
		CHECK_RC(larder_put(cache, key, strlen(key), value, sizes[i], LARDER_TTL_DEFAULT),
			 LARDER_OK);
	}
	for (size_t i = 0; i < TH_COUNT(sizes); i++) {
		char key[32];
		snprintf(key, sizeof(key), "size-%zu", sizes[i]);
		fill(value, sizes[i], (unsigned)i);
		EXPECT_VALUE(cache, key, strlen(key), value, sizes[i]);
	}
	th_check_accounting(cache, 60000, NULL, NULL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), TH_COUNT(sizes));
	free(value);
	larder_close(cache);
}

/* Keys are byte strings: NULs count, prefixes are other keys. */
static void test_binary_keys(void)
{
	larder *cache = open_cache(MiB, 64, 1024);
	const char k1[] = {'a', 0, 'b'};
	const char k2[] = {'a', 0, 'c'};

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, k1, 3, "one", 3, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, k2, 3, "two", 3, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, "a", 1, "pre", 3, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, k1, 2, "mid", 3, LARDER_TTL_DEFAULT), LARDER_OK);
	EXPECT_VALUE(cache, k1, 3, "one", 3);
	EXPECT_VALUE(cache, k2, 3, "two", 3);
	EXPECT_VALUE(cache, "a", 1, "pre", 3);
	EXPECT_VALUE(cache, k1, 2, "mid", 3);
	EXPECT_MISS(cache, "ab", 2);
	larder_close(cache);
}

/*
 * larder__hash takes XXH3's short-input code directly for keys of up to 16
 * bytes (core/hash.h): it must give what XXH3_64bits_withSeed gives, at every
 * length on both sides of the switch and for several seeds.
 */
static void test_hash_matches_xxh3(void)
{
	static const uint64_t seeds[] = {0, 1, 42, 0x9e3779b97f4a7c15ull, UINT64_MAX};
	unsigned char key[40];

	for (size_t i = 0; i < sizeof(key); i++)
		key[i] = (unsigned char)(i * 37 + 11);
	for (size_t s = 0; s < sizeof(seeds) / sizeof(seeds[0]); s++) {
		for (size_t len = 0; len <= sizeof(key); len++) {
			uint64_t want = XXH3_64bits_withSeed(key, len, seeds[s]);
			if (!CHECK_EQ(larder__hash(seeds[s], key, len), want))
				return;
		}
	}
}

/* The key length is stored in 16 bits: the limit itself must work. */
static void test_key_limit(void)
{
	larder *cache = open_cache(64 * MiB, LARDER_KEY_LIMIT, 1024);
	char *key = malloc(LARDER_KEY_LIMIT + 1);

	REQUIRE(cache != NULL && key != NULL);
	memset(key, 'q', LARDER_KEY_LIMIT + 1);
	CHECK_RC(larder_put(cache, key, LARDER_KEY_LIMIT, "max", 3, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, key, LARDER_KEY_LIMIT - 1, "max-1", 5, LARDER_TTL_DEFAULT),
		 LARDER_OK);
	CHECK_RC(larder_put(cache, key, (size_t)LARDER_KEY_LIMIT + 1, "x", 1, LARDER_TTL_DEFAULT),
		 LARDER_EKEYSIZE);
	EXPECT_VALUE(cache, key, LARDER_KEY_LIMIT, "max", 3);
	EXPECT_VALUE(cache, key, LARDER_KEY_LIMIT - 1, "max-1", 5);
	CHECK_RC(larder_contains(cache, key, (size_t)LARDER_KEY_LIMIT + 1), LARDER_EKEYSIZE);
	/* 65536 must not wrap to a 0-length key */
	CHECK_RC(larder_contains(cache, key, 65536 + 3), LARDER_EKEYSIZE);
	th_check_accounting(cache, 60000, NULL, NULL);
	free(key);
	larder_close(cache);
}

/* Overwrites of one size, no deadline, no listener: the maintainer's short
 * overwrite path (maint/apply.c), which counts its replacements once per
 * drain; every one of them is counted. */
static void test_overwrite_same_size(void)
{
	larder *cache = open_cache(4 * MiB, 64, 8192);
	unsigned char value[64];
	uint64_t repl0, entries;

	REQUIRE(cache != NULL);
	repl0 = th_stat(cache, LARDER_STAT_REPLACEMENTS);
	for (unsigned i = 0; i < 10000; i++) {
		fill(value, sizeof(value), i);
		if (!CHECK_RC(larder_put(cache, "k", 1, value, sizeof(value), LARDER_TTL_DEFAULT),
			      LARDER_OK))
			break;
	}
	EXPECT_VALUE(cache, "k", 1, value, sizeof(value));
	th_check_accounting(cache, 60000, &entries, NULL);
	CHECK_EQ(entries, 1);
	CHECK_EQ(th_stat(cache, LARDER_STAT_REPLACEMENTS) - repl0, 9999);
	larder_close(cache);
}

static void test_overwrite_many(void)
{
	larder *cache = open_cache(4 * MiB, 64, 8192);
	unsigned char value[8192];
	uint64_t repl0, entries;
	size_t last = 0;

	REQUIRE(cache != NULL);
	repl0 = th_stat(cache, LARDER_STAT_REPLACEMENTS);
	for (unsigned i = 0; i < 10000; i++) {
		last = (i * 37u) % sizeof(value);
		fill(value, last, i);
		if (!CHECK_RC(larder_put(cache, "k", 1, value, last, LARDER_TTL_DEFAULT), LARDER_OK))
			break;
	}
	fill(value, last, 9999);
	EXPECT_VALUE(cache, "k", 1, value, last);
	th_check_accounting(cache, 60000, &entries, NULL);
	CHECK_EQ(entries, 1);
	CHECK_EQ(th_stat(cache, LARDER_STAT_REPLACEMENTS) - repl0, 9999);
	larder_close(cache);
}

/* Values bigger than the largest size class (private mappings). */
static void test_large_values(void)
{
	larder *cache = open_cache(64 * MiB, 64, 4 * MiB);
	unsigned char *value = malloc(4 * MiB);
	static const size_t sizes[] = {2 * MiB - 1, 2 * MiB + 3, 3 * MiB + 17, 4 * MiB};

	REQUIRE(cache != NULL && value != NULL);
	for (size_t i = 0; i < TH_COUNT(sizes); i++) {
		fill(value, sizes[i], (unsigned)i);
		CHECK_RC(larder_put(cache, "big", 3, value, sizes[i], LARDER_TTL_DEFAULT), LARDER_OK);
		EXPECT_VALUE(cache, "big", 3, value, sizes[i]);
	}
	th_check_accounting(cache, 60000, NULL, NULL);
	CHECK_GE(th_stat(cache, LARDER_STAT_USED_BYTES), 4 * MiB);
	CHECK_RC(larder_remove(cache, "big", 3), LARDER_OK);
	th_check_accounting(cache, 60000, NULL, NULL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_USED_BYTES), 0);
	free(value);
	larder_close(cache);
}

/* ---- get ---------------------------------------------------------------- */

static void test_get_errors(void)
{
	larder *cache = open_cache(MiB, 8, 1024);
	char buf[16];
	size_t len = 0;

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "value", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_get(NULL, "k", 1, buf, sizeof(buf), &len), LARDER_EINVAL);
	CHECK_RC(larder_get(cache, NULL, 1, buf, sizeof(buf), &len), LARDER_EINVAL);
	CHECK_RC(larder_get(cache, "k", 0, buf, sizeof(buf), &len), LARDER_EINVAL);
	CHECK_RC(larder_get(cache, NULL, 0, buf, sizeof(buf), &len), LARDER_EINVAL);
	CHECK_RC(larder_get(cache, "k", 1, buf, sizeof(buf), NULL), LARDER_EINVAL);
	CHECK_RC(larder_get(cache, "k", 1, NULL, 16, &len), LARDER_EINVAL);
	CHECK_RC(larder_get(cache, "123456789", 9, buf, sizeof(buf), &len), LARDER_EKEYSIZE);
	CHECK_RC(larder_get(cache, "12345678", 8, buf, sizeof(buf), &len), LARDER_MISS);
	CHECK_RC(larder_get(cache, "x", 1, NULL, 0, &len), LARDER_MISS);
	EXPECT_VALUE(cache, "k", 1, "value", 5);
	larder_close(cache);
}

static void test_get_bufsize(void)
{
	larder *cache = open_cache(MiB, 8, 1024);
	unsigned char value[100], buf[128], canary[128];
	size_t len;

	REQUIRE(cache != NULL);
	fill(value, sizeof(value), 3);
	memset(canary, 0xa5, sizeof(canary));
	CHECK_RC(larder_put(cache, "k", 1, value, 100, LARDER_TTL_DEFAULT), LARDER_OK);
	/* one byte short: nothing copied, needed length reported */
	memcpy(buf, canary, sizeof(buf));
	len = 0;
	CHECK_RC(larder_get(cache, "k", 1, buf, 99, &len), LARDER_EBUFSIZE);
	CHECK_EQ(len, 100);
	CHECK_MEM(buf, canary, sizeof(buf));
	/* the size query idiom: NULL buffer of length 0 */
	len = 0;
	CHECK_RC(larder_get(cache, "k", 1, NULL, 0, &len), LARDER_EBUFSIZE);
	CHECK_EQ(len, 100);
	/* exactly enough, and more than enough: bytes past the value untouched */
	memcpy(buf, canary, sizeof(buf));
	CHECK_RC(larder_get(cache, "k", 1, buf, 100, &len), LARDER_OK);
	CHECK_EQ(len, 100);
	CHECK_MEM(buf, value, 100);
	memcpy(buf, canary, sizeof(buf));
	CHECK_RC(larder_get(cache, "k", 1, buf, sizeof(buf), &len), LARDER_OK);
	CHECK_MEM(buf, value, 100);
	CHECK_MEM(buf + 100, canary + 100, sizeof(buf) - 100);
	/* an empty value fits any buffer, even NULL/0 */
	CHECK_RC(larder_put(cache, "e", 1, "", 0, LARDER_TTL_DEFAULT), LARDER_OK);
	len = 77;
	CHECK_RC(larder_get(cache, "e", 1, NULL, 0, &len), LARDER_OK);
	CHECK_EQ(len, 0);
	larder_close(cache);
}

/* The copy-out of every value size around the inline copy (16 to 64 bytes,
 * overlapping 16-byte words) and the memcpy on either side of it, through
 * larder_get's fast path (a 12-byte key) and its general read (a 1-byte
 * key): exactly the value's bytes, none past them, into a buffer of exactly
 * the value's length and into a larger one. */
static void test_get_copy_sizes(void)
{
	larder *cache = open_cache(MiB, 16, 1024);
	static const char *const keys[] = {"fast-key-012", "g"};
	unsigned char value[80], buf[80 + 32], canary[80 + 32];
	size_t len;

	REQUIRE(cache != NULL);
	memset(canary, 0xa5, sizeof(canary));
	for (size_t n = 0; n <= sizeof(value); n++) {
		for (size_t k = 0; k < TH_COUNT(keys); k++) {
			fill(value, n, (unsigned)(n + 7 * k));
			CHECK_RC(larder_put(cache, keys[k], strlen(keys[k]), value, n,
					    LARDER_TTL_DEFAULT),
				 LARDER_OK);
			for (size_t extra = 0; extra <= 32; extra += 32) {
				memcpy(buf, canary, sizeof(buf));
				len = 12345;
				CHECK_RC(larder_get(cache, keys[k], strlen(keys[k]), buf, n + extra, &len),
					 LARDER_OK);
				CHECK_EQ(len, n);
				CHECK_MEM(buf, value, n);
				CHECK_MEM(buf + n, canary + n, sizeof(buf) - n);
			}
		}
	}
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/* ---- get_with ----------------------------------------------------------- */

static void test_get_with(void)
{
	larder *cache = open_cache(MiB, 8, 1024);
	struct capture cap = {0, 0, NULL};

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "hello", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_get_with(cache, "k", 1, capture_fn, &cap), LARDER_OK);
	CHECK_EQ(cap.calls, 1);
	CHECK_EQ(cap.len, 5);
	if (cap.bytes && cap.len == 5)
		CHECK_MEM(cap.bytes, "hello", 5);
	/* fn is not called on a miss or on an error */
	CHECK_RC(larder_get_with(cache, "nope", 4, capture_fn, &cap), LARDER_MISS);
	CHECK_RC(larder_get_with(NULL, "k", 1, capture_fn, &cap), LARDER_EINVAL);
	CHECK_RC(larder_get_with(cache, NULL, 1, capture_fn, &cap), LARDER_EINVAL);
	CHECK_RC(larder_get_with(cache, "k", 0, capture_fn, &cap), LARDER_EINVAL);
	CHECK_RC(larder_get_with(cache, "k", 1, NULL, &cap), LARDER_EINVAL);
	CHECK_RC(larder_get_with(cache, "123456789", 9, capture_fn, &cap), LARDER_EKEYSIZE);
	CHECK_EQ(cap.calls, 1);
	/* an empty value is found and passed with length 0 */
	CHECK_RC(larder_put(cache, "e", 1, NULL, 0, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_get_with(cache, "e", 1, capture_fn, &cap), LARDER_OK);
	CHECK_EQ(cap.calls, 2);
	CHECK_EQ(cap.len, 0);
	free(cap.bytes);
	larder_close(cache);
}

struct nested {
	larder *same, *other;
	int inner_ok;
};

static void nested_inner_fn(void *ctx, const void *value, size_t value_len)
{
	struct nested *n = ctx;

	if (value_len == 5 && memcmp(value, "other", 5) == 0)
		n->inner_ok++;
}

static void nested_batch_fn(void *ctx, size_t index, const void *value, size_t value_len)
{
	(void)index;
	nested_inner_fn(ctx, value, value_len);
}

/* A callback may call larder_get*() and larder_contains() on any cache. */
static void nested_outer_fn(void *ctx, const void *value, size_t value_len)
{
	struct nested *n = ctx;
	char buf[16];
	size_t len = 0;
	const void *keys[] = {"o"};
	const size_t lens[] = {1};

	CHECK(value_len == 5 && memcmp(value, "outer", 5) == 0);
	CHECK_RC(larder_get(n->same, "o", 1, buf, sizeof(buf), &len), LARDER_OK);
	CHECK(len == 5 && memcmp(buf, "other", 5) == 0);
	CHECK_RC(larder_contains(n->same, "k", 1), LARDER_OK);
	CHECK_RC(larder_get_with(n->same, "o", 1, nested_inner_fn, n), LARDER_OK);
	CHECK_RC(larder_get_with(n->other, "o", 1, nested_inner_fn, n), LARDER_OK);
	CHECK_EQ(larder_get_batch(n->other, 1, keys, lens, nested_batch_fn, n), 1);
	CHECK_RC(larder_contains(n->other, "k", 1), LARDER_MISS);
}

static void test_get_with_nested(void)
{
	struct nested n = {open_cache(MiB, 8, 64), open_cache(MiB, 8, 64), 0};

	REQUIRE(n.same != NULL && n.other != NULL);
	CHECK_RC(larder_put(n.same, "k", 1, "outer", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(n.same, "o", 1, "other", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(n.other, "o", 1, "other", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_get_with(n.same, "k", 1, nested_outer_fn, &n), LARDER_OK);
	CHECK_EQ(n.inner_ok, 3);
	larder_close(n.same);
	larder_close(n.other);
}

/* ---- get_batch ---------------------------------------------------------- */

struct batch_log {
	size_t n;
	size_t index[64];
	char value[64][16];
	size_t len[64];
};

static void batch_fn(void *ctx, size_t index, const void *value, size_t value_len)
{
	struct batch_log *log = ctx;

	if (!CHECK_LT(log->n, 64))
		return;
	log->index[log->n] = index;
	log->len[log->n] = value_len;
	memcpy(log->value[log->n], value, value_len < 16 ? value_len : 16);
	log->n++;
}

static void test_get_batch(void)
{
	larder *cache = open_cache(MiB, 8, 64);
	struct batch_log log;
	const void *keys[] = {"a", "absent", "b", "", "123456789", NULL, "a", "e"};
	const size_t lens[] = {1, 6, 1, 0, 9, 3, 1, 1};
	static const size_t want_index[] = {0, 2, 6, 7};
	static const char *const want_value[] = {"va", "vb", "va", ""};

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "a", 1, "va", 2, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, "b", 1, "vb", 2, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, "e", 1, "", 0, LARDER_TTL_DEFAULT), LARDER_OK);
	memset(&log, 0, sizeof(log));
	/* absent, empty, too long and NULL keys are skipped; found ones come in order */
	CHECK_EQ(larder_get_batch(cache, TH_COUNT(keys), keys, lens, batch_fn, &log), 4);
	REQUIRE_EQ(log.n, 4);
	for (size_t i = 0; i < 4; i++) {
		CHECK_EQ(log.index[i], want_index[i]);
		CHECK_EQ(log.len[i], strlen(want_value[i]));
		CHECK_MEM(log.value[i], want_value[i], strlen(want_value[i]));
	}
	/* argument errors: fn never called */
	memset(&log, 0, sizeof(log));
	CHECK_EQ(larder_get_batch(NULL, 1, keys, lens, batch_fn, &log), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(cache, 1, NULL, lens, batch_fn, &log), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(cache, 1, keys, NULL, batch_fn, &log), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(cache, 1, keys, lens, NULL, &log), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(cache, 0, keys, lens, batch_fn, &log), 0);
	/* NULL arrays are refused whatever the count (larder.h), 0 included. */
	CHECK_EQ(larder_get_batch(cache, 0, NULL, lens, batch_fn, &log), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(cache, 0, keys, NULL, batch_fn, &log), LARDER_EINVAL);
	CHECK_EQ(larder_get_batch(cache, 0, NULL, NULL, batch_fn, &log), LARDER_EINVAL);
	CHECK_EQ(log.n, 0);
	larder_close(cache);
}

struct big_batch {
	size_t calls, bad;
	long last;
};

static void big_batch_fn(void *ctx, size_t index, const void *value, size_t value_len)
{
	struct big_batch *b = ctx;
	char want[16];

	snprintf(want, sizeof(want), "v%zu", index);
	if ((long)index <= b->last || index % 2 != 0 || value_len != strlen(want) ||
	    memcmp(value, want, value_len) != 0)
		b->bad++;
	b->last = (long)index;
	b->calls++;
}

/* Names n keys "<prefix><i>" in keybuf, keys and lens, and puts "v<i>" for
 * each except every skip-th (i % skip == skip - 1), which stays absent.
 * Returns how many were put. */
static size_t put_batch_keys(larder *cache, size_t n, const char *prefix, size_t skip,
			     char (*keybuf)[16], const void **keys, size_t *lens)
{
	size_t put = 0;

	for (size_t i = 0; i < n; i++) {
		char v[16];
		snprintf(keybuf[i], sizeof(keybuf[i]), "%s%zu", prefix, i);
		keys[i] = keybuf[i];
		lens[i] = strlen(keybuf[i]);
		snprintf(v, sizeof(v), "v%zu", i);
		if (i % skip != skip - 1) {
			CHECK_RC(larder_put(cache, keys[i], lens[i], v, strlen(v), LARDER_TTL_DEFAULT),
				 LARDER_OK);
			put++;
		}
	}
	return put;
}

static void test_get_batch_large(void)
{
	enum { N = 1000 };
	larder *cache = open_cache(4 * MiB, 16, 64);
	static char keybuf[N][16];
	const void *keys[N];
	size_t lens[N];
	struct big_batch b = {0, 0, -1};

	REQUIRE(cache != NULL);
	put_batch_keys(cache, N, "key", 2, keybuf, keys, lens);
	CHECK_EQ(larder_get_batch(cache, N, keys, lens, big_batch_fn, &b), N / 2);
	CHECK_EQ(b.calls, N / 2);
	CHECK_EQ(b.bad, 0);
	larder_close(cache);
}

/* Batches over a table near its growth load, where about one key in ten
 * lives beyond its home bucket (the batch prefetches those in a step of
 * their own), with absent keys whose probes pass the same buckets: every
 * present key is found with its own value, once, and no absent one. */
struct dense_batch {
	size_t first, calls, bad;
};

static void dense_batch_fn(void *ctx, size_t index, const void *value, size_t value_len)
{
	struct dense_batch *b = ctx;
	size_t key = b->first + index;
	char want[16];

	snprintf(want, sizeof(want), "v%zu", key);
	if (key % 4 == 3 || value_len != strlen(want) || memcmp(value, want, value_len) != 0)
		b->bad++;
	b->calls++;
}

static void test_get_batch_displaced(void)
{
	enum { N = 480000, BATCH = 16 };
	larder *cache = open_cache(256 * MiB, 16, 16);
	static char keybuf[N][16];
	static const void *keys[N];
	static size_t lens[N];
	struct dense_batch b = {0, 0, 0};
	size_t present;

	REQUIRE(cache != NULL);
	present = put_batch_keys(cache, N, "dense", 4, keybuf, keys, lens);
	long found = 0;
	for (b.first = 0; b.first < N; b.first += BATCH) {
		long got = larder_get_batch(cache, BATCH, keys + b.first, lens + b.first,
					    dense_batch_fn, &b);
		CHECK_GE(got, 0);
		found += got;
	}
	CHECK_EQ((size_t)found, present);
	CHECK_EQ(b.calls, present);
	CHECK_EQ(b.bad, 0);
	larder_close(cache);
}

/* ---- contains, ttl_remaining -------------------------------------------- */

static void test_contains(void)
{
	larder *cache = open_cache(MiB, 8, 64);
	uint64_t ttl = 0;

	REQUIRE(cache != NULL);
	CHECK_RC(larder_contains(cache, "k", 1), LARDER_MISS);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_contains(cache, "k", 1), LARDER_OK);
	CHECK_RC(larder_contains(NULL, "k", 1), LARDER_EINVAL);
	CHECK_RC(larder_contains(cache, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_contains(cache, "k", 0), LARDER_EINVAL);
	CHECK_RC(larder_contains(cache, "123456789", 9), LARDER_EKEYSIZE);
	CHECK_RC(larder_ttl_remaining(cache, "k", 1, &ttl), LARDER_OK);
	CHECK_EQ(ttl, LARDER_TTL_NEVER);
	CHECK_RC(larder_ttl_remaining(cache, "x", 1, &ttl), LARDER_MISS);
	CHECK_RC(larder_ttl_remaining(NULL, "k", 1, &ttl), LARDER_EINVAL);
	CHECK_RC(larder_ttl_remaining(cache, NULL, 1, &ttl), LARDER_EINVAL);
	CHECK_RC(larder_ttl_remaining(cache, "k", 0, &ttl), LARDER_EINVAL);
	CHECK_RC(larder_ttl_remaining(cache, "k", 1, NULL), LARDER_EINVAL);
	CHECK_RC(larder_ttl_remaining(cache, "123456789", 9, &ttl), LARDER_EKEYSIZE);
	larder_close(cache);
}

/* ---- Writes: errors common to all --------------------------------------- */

enum write_op { W_PUT, W_PUT_IF_ABSENT, W_REPLACE, W_CAS, W_COUNT };
static const char *const write_op_name[] = {"put", "put_if_absent", "replace",
					    "replace_if_equals"};

/* Runs one write; for CAS the expected value is the key's current one ("old"). */
static int do_write(enum write_op op, larder *c, const void *k, size_t klen, const void *v,
		    size_t vlen)
{
	switch (op) {
	case W_PUT:
		return larder_put(c, k, klen, v, vlen, LARDER_TTL_DEFAULT);
	case W_PUT_IF_ABSENT:
		return larder_put_if_absent(c, k, klen, v, vlen, LARDER_TTL_DEFAULT);
	case W_REPLACE:
		return larder_replace(c, k, klen, v, vlen, LARDER_TTL_DEFAULT);
	default:
		return larder_replace_if_equals(c, k, klen, "old", 3, v, vlen, LARDER_TTL_DEFAULT);
	}
}

/*
 * Capacity 1 MiB, max key 16, max value 512 KiB: an entry over 128 KiB (1/8)
 * is refused even though the value is under max_value_bytes.
 */
static void test_write_errors_keep_previous(void)
{
	larder *cache = open_cache(MiB, 16, 512 * KiB);
	unsigned char *big = calloc(1, 2 * MiB);
	uint64_t writes0;

	REQUIRE(cache != NULL && big != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "old", 3, LARDER_TTL_DEFAULT), LARDER_OK);
	writes0 = th_stat(cache, LARDER_STAT_WRITES);
	for (int op = 0; op < W_COUNT; op++) {
		printf("  %s\n", write_op_name[op]);
		CHECK_RC(do_write(op, NULL, "k", 1, "new", 3), LARDER_EINVAL);
		CHECK_RC(do_write(op, cache, NULL, 1, "new", 3), LARDER_EINVAL);
		CHECK_RC(do_write(op, cache, "k", 0, "new", 3), LARDER_EINVAL);
		CHECK_RC(do_write(op, cache, "k", 1, NULL, 3), LARDER_EINVAL);
		CHECK_RC(do_write(op, cache, "12345678901234567", 17, "new", 3), LARDER_EKEYSIZE);
		/* over max_value_bytes */
		CHECK_RC(do_write(op, cache, "k", 1, big, 512 * KiB + 1), LARDER_EVALSIZE);
		/* under max_value_bytes, but the entry is over 1/8 of capacity */
		CHECK_RC(do_write(op, cache, "k", 1, big, 128 * KiB), LARDER_EVALSIZE);
		CHECK_RC(do_write(op, cache, "k", 1, big, 300 * KiB), LARDER_EVALSIZE);
		/* larger than the whole cache */
		CHECK_RC(do_write(op, cache, "k", 1, big, 2 * MiB), LARDER_EVALSIZE);
		EXPECT_VALUE(cache, "k", 1, "old", 3);
		CHECK_RC(larder_contains(cache, "12345678901234567", 17), LARDER_EKEYSIZE);
	}
	CHECK_EQ(th_stat(cache, LARDER_STAT_WRITES), writes0);
	/* an entry well under 1/8 of capacity is fine */
	CHECK_RC(larder_put(cache, "k", 1, big, 64 * KiB, LARDER_TTL_DEFAULT), LARDER_OK);
	EXPECT_VALUE(cache, "k", 1, big, 64 * KiB);
	th_check_accounting(cache, 60000, NULL, NULL);
	free(big);
	larder_close(cache);
}

/*
 * Which result wins when several apply (larder.h, "Return values"): every
 * EINVAL before EKEYSIZE before EVALSIZE, all before the key's status; an
 * expected value longer than max_value_bytes is no error (the two cases an
 * outside torture test asked about: put_if_absent of an over-long value on
 * a present key, and replace_if_equals with an over-long expected value).
 */
static void test_error_precedence(void)
{
	larder *cache = open_cache(MiB, 16, 512 * KiB);
	unsigned char *big = calloc(1, 600 * KiB);
	const char *longkey = "12345678901234567";
	char buf[8];
	size_t len = 0;
	uint64_t ttl = 0;

	REQUIRE(cache != NULL && big != NULL);
	CHECK_RC(larder_put(cache, "k", 1, "old", 3, LARDER_TTL_NEVER), LARDER_OK);
	/* EVALSIZE before EXISTS */
	CHECK_RC(larder_put_if_absent(cache, "k", 1, big, 512 * KiB + 1, LARDER_TTL_NEVER),
		 LARDER_EVALSIZE);
	/* EKEYSIZE before EVALSIZE; EINVAL (NULL value) before EKEYSIZE */
	CHECK_RC(larder_put(cache, longkey, 17, big, 512 * KiB + 1, LARDER_TTL_NEVER),
		 LARDER_EKEYSIZE);
	CHECK_RC(larder_put(cache, longkey, 17, NULL, 3, LARDER_TTL_NEVER), LARDER_EINVAL);
	CHECK_RC(larder_replace_if_equals(cache, longkey, 17, NULL, 2, "v", 1, LARDER_TTL_NEVER),
		 LARDER_EINVAL);
	CHECK_RC(larder_remove_if_equals(cache, longkey, 17, NULL, 2), LARDER_EINVAL);
	CHECK_RC(larder_get(cache, longkey, 17, buf, sizeof(buf), NULL), LARDER_EINVAL);
	CHECK_RC(larder_get(cache, longkey, 17, NULL, 4, &len), LARDER_EINVAL);
	CHECK_RC(larder_get_with(cache, longkey, 17, NULL, NULL), LARDER_EINVAL);
	CHECK_RC(larder_ttl_remaining(cache, longkey, 17, NULL), LARDER_EINVAL);
	/* an over-long expected value: no error, it equals nothing */
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, big, 512 * KiB + 1, "new", 3,
					  LARDER_TTL_NEVER),
		 LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(cache, "absent", 6, big, 512 * KiB + 1, "new", 3,
					  LARDER_TTL_NEVER),
		 LARDER_MISS);
	CHECK_RC(larder_remove_if_equals(cache, "k", 1, big, 512 * KiB + 1), LARDER_MISMATCH);
	/* EBUFSIZE is a status of the key: after the argument checks */
	CHECK_RC(larder_get(cache, "k", 1, buf, 2, &len), LARDER_EBUFSIZE);
	CHECK_EQ(len, 3);
	CHECK_RC(larder_ttl_remaining(cache, "k", 1, &ttl), LARDER_OK);
	EXPECT_VALUE(cache, "k", 1, "old", 3);
	free(big);
	larder_close(cache);
}

/* Oversized writes to an absent key store nothing. */
static void test_write_errors_absent_key(void)
{
	larder *cache = open_cache(MiB, 16, 512 * KiB);
	unsigned char *big = calloc(1, 600 * KiB);

	REQUIRE(cache != NULL && big != NULL);
	CHECK_RC(larder_put(cache, "a", 1, big, 600 * KiB, LARDER_TTL_DEFAULT), LARDER_EVALSIZE);
	CHECK_RC(larder_put_if_absent(cache, "a", 1, big, 200 * KiB, LARDER_TTL_DEFAULT),
		 LARDER_EVALSIZE);
	EXPECT_MISS(cache, "a", 1);
	th_check_accounting(cache, 60000, NULL, NULL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_USED_BYTES), 0);
	free(big);
	larder_close(cache);
}

/* Zero-length values are values; a NULL pointer with length 0 is allowed. */
static void test_empty_values(void)
{
	larder *cache = open_cache(MiB, 16, 0); /* max_value_bytes 0: only empty values */

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put(cache, "a", 1, NULL, 0, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, "b", 1, "", 0, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, "c", 1, "x", 1, LARDER_TTL_DEFAULT), LARDER_EVALSIZE);
	EXPECT_VALUE(cache, "a", 1, "", 0);
	EXPECT_VALUE(cache, "b", 1, "", 0);
	EXPECT_MISS(cache, "c", 1);
	CHECK_RC(larder_put_if_absent(cache, "a", 1, NULL, 0, LARDER_TTL_DEFAULT), LARDER_EXISTS);
	CHECK_RC(larder_replace(cache, "a", 1, NULL, 0, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_replace_if_equals(cache, "a", 1, NULL, 0, NULL, 0, LARDER_TTL_DEFAULT),
		 LARDER_OK);
	CHECK_RC(larder_remove_if_equals(cache, "b", 1, NULL, 0), LARDER_OK);
	EXPECT_MISS(cache, "b", 1);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/* ---- Conditional writes -------------------------------------------------- */

static void test_put_if_absent(void)
{
	larder *cache = open_cache(MiB, 16, 64);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_put_if_absent(cache, "k", 1, "first", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put_if_absent(cache, "k", 1, "second", 6, LARDER_TTL_DEFAULT),
		 LARDER_EXISTS);
	EXPECT_VALUE(cache, "k", 1, "first", 5);
	CHECK_RC(larder_remove(cache, "k", 1), LARDER_OK);
	CHECK_RC(larder_put_if_absent(cache, "k", 1, "third", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	EXPECT_VALUE(cache, "k", 1, "third", 5);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

static void test_replace(void)
{
	larder *cache = open_cache(MiB, 16, 64);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_replace(cache, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_MISS);
	EXPECT_MISS(cache, "k", 1);
	CHECK_RC(larder_put(cache, "k", 1, "v1", 2, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_replace(cache, "k", 1, "v2-longer", 9, LARDER_TTL_DEFAULT), LARDER_OK);
	EXPECT_VALUE(cache, "k", 1, "v2-longer", 9);
	CHECK_RC(larder_remove(cache, "k", 1), LARDER_OK);
	CHECK_RC(larder_replace(cache, "k", 1, "v3", 2, LARDER_TTL_DEFAULT), LARDER_MISS);
	EXPECT_MISS(cache, "k", 1);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

static void test_replace_if_equals(void)
{
	larder *cache = open_cache(MiB, 16, 64);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, "a", 1, "b", 1, LARDER_TTL_DEFAULT),
		 LARDER_MISS);
	EXPECT_MISS(cache, "k", 1);
	CHECK_RC(larder_put(cache, "k", 1, "abc", 3, LARDER_TTL_DEFAULT), LARDER_OK);
	/* same length, other bytes; a prefix; a longer value; empty */
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, "abd", 3, "x", 1, LARDER_TTL_DEFAULT),
		 LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, "ab", 2, "x", 1, LARDER_TTL_DEFAULT),
		 LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, "abcd", 4, "x", 1, LARDER_TTL_DEFAULT),
		 LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, NULL, 0, "x", 1, LARDER_TTL_DEFAULT),
		 LARDER_MISMATCH);
	EXPECT_VALUE(cache, "k", 1, "abc", 3);
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, NULL, 3, "x", 1, LARDER_TTL_DEFAULT),
		 LARDER_EINVAL);
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, "abc", 3, NULL, 1, LARDER_TTL_DEFAULT),
		 LARDER_EINVAL);
	EXPECT_VALUE(cache, "k", 1, "abc", 3);
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, "abc", 3, "new", 3, LARDER_TTL_DEFAULT),
		 LARDER_OK);
	EXPECT_VALUE(cache, "k", 1, "new", 3);
	/* the old expected value no longer matches */
	CHECK_RC(larder_replace_if_equals(cache, "k", 1, "abc", 3, "z", 1, LARDER_TTL_DEFAULT),
		 LARDER_MISMATCH);
	EXPECT_VALUE(cache, "k", 1, "new", 3);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

/* ---- Removal ------------------------------------------------------------ */

static void test_remove(void)
{
	larder *cache = open_cache(MiB, 8, 64);
	uint64_t removals0;

	REQUIRE(cache != NULL);
	removals0 = th_stat(cache, LARDER_STAT_REMOVALS);
	CHECK_RC(larder_remove(cache, "k", 1), LARDER_MISS);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_put(cache, "j", 1, "w", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_remove(NULL, "k", 1), LARDER_EINVAL);
	CHECK_RC(larder_remove(cache, NULL, 1), LARDER_EINVAL);
	CHECK_RC(larder_remove(cache, "k", 0), LARDER_EINVAL);
	CHECK_RC(larder_remove(cache, "123456789", 9), LARDER_EKEYSIZE);
	EXPECT_VALUE(cache, "k", 1, "v", 1);
	CHECK_RC(larder_remove(cache, "k", 1), LARDER_OK);
	EXPECT_MISS(cache, "k", 1);
	CHECK_RC(larder_remove(cache, "k", 1), LARDER_MISS);
	EXPECT_VALUE(cache, "j", 1, "w", 1);
	th_check_accounting(cache, 60000, NULL, NULL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_REMOVALS) - removals0, 1);
	CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), 1);
	larder_close(cache);
}

static void test_remove_if_equals(void)
{
	larder *cache = open_cache(MiB, 8, 64);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_remove_if_equals(cache, "k", 1, "v", 1), LARDER_MISS);
	CHECK_RC(larder_put(cache, "k", 1, "value", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_remove_if_equals(cache, "k", 1, "valuf", 5), LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(cache, "k", 1, "valu", 4), LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(cache, "k", 1, "values", 6), LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(cache, "k", 1, NULL, 5), LARDER_EINVAL);
	CHECK_RC(larder_remove_if_equals(NULL, "k", 1, "value", 5), LARDER_EINVAL);
	CHECK_RC(larder_remove_if_equals(cache, NULL, 1, "value", 5), LARDER_EINVAL);
	CHECK_RC(larder_remove_if_equals(cache, "k", 0, "value", 5), LARDER_EINVAL);
	CHECK_RC(larder_remove_if_equals(cache, "123456789", 9, "value", 5), LARDER_EKEYSIZE);
	EXPECT_VALUE(cache, "k", 1, "value", 5);
	CHECK_RC(larder_remove_if_equals(cache, "k", 1, "value", 5), LARDER_OK);
	EXPECT_MISS(cache, "k", 1);
	CHECK_RC(larder_remove_if_equals(cache, "k", 1, "value", 5), LARDER_MISS);
	th_check_accounting(cache, 60000, NULL, NULL);
	larder_close(cache);
}

static void test_touch_errors(void)
{
	larder *cache = open_cache(MiB, 8, 64);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_touch(cache, "k", 1, 1000), LARDER_MISS);
	CHECK_RC(larder_put(cache, "k", 1, "v", 1, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_RC(larder_touch(cache, "k", 1, 100000), LARDER_OK);
	CHECK_RC(larder_touch(NULL, "k", 1, 1000), LARDER_EINVAL);
	CHECK_RC(larder_touch(cache, NULL, 1, 1000), LARDER_EINVAL);
	CHECK_RC(larder_touch(cache, "k", 0, 1000), LARDER_EINVAL);
	CHECK_RC(larder_touch(cache, "123456789", 9, 1000), LARDER_EKEYSIZE);
	EXPECT_VALUE(cache, "k", 1, "v", 1);
	larder_close(cache);
}

/* ---- clear, set_capacity ------------------------------------------------ */

static void test_clear(void)
{
	larder *cache = open_cache(8 * MiB, 16, 256);
	uint64_t entries, bytes, cleared0;
	char key[16];

	REQUIRE(cache != NULL);
	CHECK_RC(larder_clear(NULL), LARDER_EINVAL);
	CHECK_RC(larder_clear(cache), LARDER_OK); /* empty: fine */
	/* stat-exact: the clear above found nothing to count */
	cleared0 = th_stat(cache, LARDER_STAT_CLEARED);
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		CHECK_RC(larder_put(cache, key, strlen(key), key, strlen(key), LARDER_TTL_DEFAULT),
			 LARDER_OK);
	}
	CHECK_RC(larder_clear(cache), LARDER_OK);
	/* logically empty as soon as clear returns, before any quiesce */
	for (int i = 0; i < 1000; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		EXPECT_MISS(cache, key, strlen(key));
	}
	th_check_accounting(cache, 60000, &entries, &bytes);
	CHECK_EQ(entries, 0);
	CHECK_EQ(bytes, 0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_USED_BYTES), 0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_CLEARED) - cleared0, 1000);
	/* the cache works as before */
	CHECK_RC(larder_put(cache, "k1", 2, "again", 5, LARDER_TTL_DEFAULT), LARDER_OK);
	EXPECT_VALUE(cache, "k1", 2, "again", 5);
	th_check_accounting(cache, 60000, &entries, NULL);
	CHECK_EQ(entries, 1);
	larder_close(cache);
}

/* Writes right after a clear (before the maintainer freed the old entries). */
static void test_clear_then_write(void)
{
	larder *cache = open_cache(8 * MiB, 16, 256);
	uint64_t entries;
	char key[16];

	REQUIRE(cache != NULL);
	for (int round = 0; round < 20; round++) {
		for (int i = 0; i < 200; i++) {
			snprintf(key, sizeof(key), "k%d", i);
			CHECK_RC(larder_put(cache, key, strlen(key), &round, sizeof(round),
					    LARDER_TTL_DEFAULT),
				 LARDER_OK);
		}
		CHECK_RC(larder_clear(cache), LARDER_OK);
		CHECK_RC(larder_put(cache, "k0", 2, &round, sizeof(round), LARDER_TTL_DEFAULT),
			 LARDER_OK);
	}
	int last = 19;
	EXPECT_VALUE(cache, "k0", 2, &last, sizeof(last));
	EXPECT_MISS(cache, "k1", 2);
	th_check_accounting(cache, 60000, &entries, NULL);
	CHECK_EQ(entries, 1);
	larder_close(cache);
}

static void test_set_capacity_args(void)
{
	larder *cache = open_cache(MiB, 8, 64);

	REQUIRE(cache != NULL);
	CHECK_RC(larder_set_capacity(NULL, MiB), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(cache, 64 * KiB - 1), LARDER_EINVAL);
	CHECK_RC(larder_set_capacity(cache, 0), LARDER_EINVAL);
	CHECK_EQ(th_stat(cache, LARDER_STAT_CAPACITY_BYTES), MiB);
	CHECK_RC(larder_set_capacity(cache, 64 * KiB), LARDER_OK);
	CHECK_EQ(th_stat(cache, LARDER_STAT_CAPACITY_BYTES), 64 * KiB);
	CHECK_RC(larder_set_capacity(cache, 3 * MiB), LARDER_OK);
	CHECK_EQ(th_stat(cache, LARDER_STAT_CAPACITY_BYTES), 3 * MiB);
	larder_close(cache);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_roundtrip_sizes),
		TH_TEST(test_binary_keys),
		TH_TEST(test_hash_matches_xxh3),
		TH_TEST(test_key_limit),
		TH_TEST(test_overwrite_same_size),
		TH_TEST(test_overwrite_many),
		TH_TEST(test_large_values),
		TH_TEST(test_get_errors),
		TH_TEST(test_get_bufsize),
		TH_TEST(test_get_copy_sizes),
		TH_TEST(test_get_with),
		TH_TEST(test_get_with_nested),
		TH_TEST(test_get_batch),
		TH_TEST(test_get_batch_large),
		TH_TEST(test_get_batch_displaced),
		TH_TEST(test_contains),
		TH_TEST(test_write_errors_keep_previous),
		TH_TEST(test_error_precedence),
		TH_TEST(test_write_errors_absent_key),
		TH_TEST(test_empty_values),
		TH_TEST(test_put_if_absent),
		TH_TEST(test_replace),
		TH_TEST(test_replace_if_equals),
		TH_TEST(test_remove),
		TH_TEST(test_remove_if_equals),
		TH_TEST(test_touch_errors),
		TH_TEST(test_clear),
		TH_TEST(test_clear_then_write),
		TH_TEST(test_set_capacity_args),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
