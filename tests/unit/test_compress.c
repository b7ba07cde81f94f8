/*
 * tests/unit/test_compress.c - value compression (larder_config_set_compression)
 * and its dictionary (larder_config_set_compression_dictionary).
 *
 * Invariants checked (core/compress.h COMPRESS-C1..C3, larder.h):
 *   - the setter's ranges and errors;
 *   - round trips at every size boundary (0, 1, min - 1, min, min + 1, the
 *     64 KiB and scratch-buffer boundaries, max_value_bytes) through every
 *     read: larder_get (its LARDER_EBUFSIZE and *value_len with the original
 *     length), larder_get_with, larder_get_batch, larder_iter_next; values
 *     at or over the minimum that compress are stored compressed (the
 *     entry's charge is below the raw charge), those under it raw (COMPRESS-C1);
 *   - incompressible bytes are stored raw, byte for byte, and read back;
 *   - the conditional writes compare against the original bytes, touch's
 *     relocation keeps a value compressed, a listener gets original bytes;
 *   - the memory bound holds with compressed values, and counts their
 *     stored size (more entries fit than raw ones would);
 *   - a failed decompression-buffer allocation (the fault seam) gives
 *     LARDER_ENOMEM from get_with, get_batch and iter_next without calling
 *     back and without a crash, and the next call succeeds; a failed
 *     compression buffer stores the value raw;
 *   - a snapshot of a compressing cache loads into compressing and plain
 *     caches alike;
 *   - readers (get, get_with, get_batch, cursors, compare-and-set) racing
 *     with writers of compressed values see only whole, correct values,
 *     while the cache trains and publishes its dictionary under them (run
 *     under ThreadSanitizer and ASan/UBSan too: core/dict.h DICT-D1..D3);
 *   - the dictionary (core/dict.h): the setter's modes and errors; a trained
 *     one appears (LARDER_STAT_DICT_BYTES) after enough compressible writes,
 *     never after incompressible ones, never with LARDER_DICTIONARY_NONE; a given one from the start;
 *     with it every size boundary round-trips through every read, short
 *     values are stored smaller than LZ4 alone stores them, values written
 *     before it still read back, incompressible values stay raw and do not
 *     stop the next value from compressing; a failed allocation of a
 *     thread's zstd context makes larder_get return LARDER_ENOMEM, then
 *     work; snapshots of dictionary-compressed values load into plain, LZ4
 *     and dictionary caches alike; several writers filling the sample at
 *     once while a reader checks values (DICT-D2, DICT-D3); a value of
 *     300 KiB is compressed with the strategy the dictionary's tables were
 *     prepared for (not zstd's far slower pick for a static CDict).
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <unistd.h>

#define ZSTD_STATIC_LINKING_ONLY /* the magicless format, as core/compress.c writes it */
#include <zstd.h>

#include "core/compress.h"
#include "core/dict.h"
#include "core/entry.h"
#include "harness.h"
#include "mem/slab.h"

#define MIN_BYTES 256u
#define SAVING_PCT 10u
#define MAX_VALUE (2 * MiB) /* over LARDER__SCRATCH_KEEP_BYTES: a one-off buffer */

/* JSON-like text that compresses (field names repeat, values vary), exactly
 * len bytes, its content depending on seed. */
static void json_fill(unsigned char *buf, size_t len, uint64_t seed)
{
	static const char *const names[] = { "id", "name", "email", "score", "tags", "active" };
	size_t at = 0;
	uint64_t r = seed;
	while (at < len) {
		char rec[128];
		r = th_mix64(r + 1);
		int n = snprintf(rec, sizeof(rec), "{\"%s\":%llu,\"%s\":\"user-%llu\",\"%s\":%s},",
				 names[r % 6], (unsigned long long)(r % 100000), names[(r >> 8) % 6],
				 (unsigned long long)(r >> 40) % 1000, names[(r >> 16) % 6],
				 (r >> 24) & 1 ? "true" : "false");
		size_t take = (size_t)n < len - at ? (size_t)n : len - at;
		memcpy(buf + at, rec, take);
		at += take;
	}
}

static void random_fill(unsigned char *buf, size_t len, uint64_t seed)
{
	struct th_rng r = { th_mix64(seed) | 1 };
	for (size_t i = 0; i < len; i++)
		buf[i] = (unsigned char)th_rng_next(&r);
}

/* A cache compressing values of min_bytes or more (0: plain) with the
 * dictionary mode given (dict, len for LARDER_DICTIONARY_GIVEN). */
static larder *open_dict(uint64_t capacity, size_t min_bytes, enum larder_dictionary mode,
			 const void *dict, size_t len)
{
	larder_config *config = th_config(capacity);
	if (!config)
		return NULL;
	if (!CHECK_RC(larder_config_set_max_value_bytes(config, MAX_VALUE), LARDER_OK) ||
	    (min_bytes && !CHECK_RC(larder_config_set_compression(config, min_bytes, SAVING_PCT),
				    LARDER_OK)) ||
	    !CHECK_RC(larder_config_set_compression_dictionary(config, mode, dict, len),
		      LARDER_OK)) {
		larder_config_destroy(config);
		return NULL;
	}
	return th_open(config);
}

/* The default mode: the cache trains its dictionary. */
static larder *open_compressing(uint64_t capacity, size_t min_bytes)
{
	return open_dict(capacity, min_bytes, LARDER_DICTIONARY_TRAIN, NULL, 0);
}

/* What an entry of key_len and value_len bytes charges stored raw. */
static uint64_t raw_charge(size_t key_len, size_t value_len)
{
	return larder__slab_charge(larder__entry_bytes(0, key_len, value_len));
}

struct found {
	const void *key;
	size_t key_len;
	const unsigned char *want;
	size_t want_len;
	int seen, ok;
	uint64_t charge;
};

static void iter_find(void *ctx, const void *key, size_t key_len, const void *value,
		      size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct found *f = ctx;
	(void)ttl_ms;
	if (key_len != f->key_len || memcmp(key, f->key, key_len) != 0)
		return;
	f->seen++;
	f->charge = entry_bytes;
	f->ok = value_len == f->want_len && (value_len == 0 || memcmp(value, f->want, value_len) == 0);
}

/* Walks the cache with a cursor: the key's value and its charge. */
static struct found iter_lookup(larder *c, const void *key, size_t key_len,
				const unsigned char *want, size_t want_len)
{
	struct found f = { key, key_len, want, want_len, 0, 0, 0 };
	larder_iter *it;
	if (!CHECK_RC(larder_iter_open(c, &it), LARDER_OK))
		return f;
	int rc;
	while ((rc = larder_iter_next(it, iter_find, &f)) == LARDER_OK)
		;
	CHECK_RC(rc, LARDER_MISS);
	larder_iter_close(it);
	return f;
}

struct seen {
	const unsigned char *want;
	size_t want_len;
	int calls, ok;
};

static void read_check(void *ctx, const void *value, size_t value_len)
{
	struct seen *s = ctx;
	s->calls++;
	s->ok = value_len == s->want_len && (value_len == 0 || memcmp(value, s->want, value_len) == 0);
}

static void batch_check(void *ctx, size_t index, const void *value, size_t value_len)
{
	(void)index;
	read_check(ctx, value, value_len);
}

/* Every read of key (larder_peek's too) returns want (len bytes). */
static void check_reads(larder *c, const char *key, const unsigned char *want, size_t len)
{
	size_t klen = strlen(key), got_len = 0;
	unsigned char *buf = malloc(len + 1);
	REQUIRE(buf);
	CHECK_RC(larder_get(c, key, klen, buf, len, &got_len), LARDER_OK);
	CHECK_EQ(got_len, len);
	CHECK(len == 0 || memcmp(buf, want, len) == 0);
	if (len) {
		got_len = 0;
		CHECK_RC(larder_get(c, key, klen, buf, len - 1, &got_len), LARDER_EBUFSIZE);
		CHECK_EQ(got_len, len); /* the original length, not the stored one */
		CHECK_RC(larder_get(c, key, klen, NULL, 0, &got_len), LARDER_EBUFSIZE);
		CHECK_EQ(got_len, len);
	}
	memset(buf, 0, len + 1);
	CHECK_RC(larder_peek(c, key, klen, buf, len, &got_len), LARDER_OK);
	CHECK_EQ(got_len, len);
	CHECK(len == 0 || memcmp(buf, want, len) == 0);
	if (len) {
		CHECK_RC(larder_peek(c, key, klen, buf, len - 1, &got_len), LARDER_EBUFSIZE);
		CHECK_EQ(got_len, len);
	}
	struct seen s = { want, len, 0, 0 };
	CHECK_RC(larder_get_with(c, key, klen, read_check, &s), LARDER_OK);
	CHECK_EQ(s.calls, 1);
	CHECK(s.ok);
	const void *keys[2] = { key, "absent-key" };
	size_t lens[2] = { klen, 10 };
	s = (struct seen){ want, len, 0, 0 };
	CHECK_EQ(larder_get_batch(c, 2, keys, lens, batch_check, &s), 1);
	CHECK_EQ(s.calls, 1);
	CHECK(s.ok);
	free(buf);
}

static void test_compress_args(void)
{
	larder_config *config = NULL;
	REQUIRE_RC(larder_config_create(&config), LARDER_OK);
	CHECK_RC(larder_config_set_compression(NULL, 64, 10), LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression(config, LARDER_VALUE_LIMIT + 1, 10), LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression(config, 64, 100), LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression(config, LARDER_VALUE_LIMIT, 99), LARDER_OK);
	CHECK_RC(larder_config_set_compression(config, 0, 0), LARDER_OK); /* off */
	larder_config_destroy(config);
}

static void test_compress_round_trips(void)
{
	larder *c = open_compressing(256 * MiB, MIN_BYTES);
	REQUIRE(c);
	static const size_t sizes[] = {
		0, 1, MIN_BYTES - 1, MIN_BYTES, MIN_BYTES + 1, 4 * KiB, 64 * KiB - 1, 64 * KiB,
		64 * KiB + 1, MiB - 1, MiB, MiB + 1, MAX_VALUE - 1, MAX_VALUE,
	};
	unsigned char *v = malloc(MAX_VALUE);
	REQUIRE(v);
	for (size_t i = 0; i < TH_COUNT(sizes); i++) {
		size_t len = sizes[i];
		char key[32];
		snprintf(key, sizeof(key), "json-%zu", len);
		json_fill(v, len, len);
		REQUIRE_RC(larder_put(c, key, strlen(key), v, len, LARDER_TTL_NEVER), LARDER_OK);
		check_reads(c, key, v, len);
		struct found f = iter_lookup(c, key, strlen(key), v, len);
		CHECK_EQ(f.seen, 1);
		CHECK(f.ok);
		uint64_t raw = raw_charge(strlen(key), len);
		if (len >= MIN_BYTES) {
			CHECK_LT(f.charge, raw); /* COMPRESS-C1: stored compressed */
		} else {
			CHECK_EQ(f.charge, raw); /* under the minimum: raw */
		}
	}
	/* Too long for the cache: the original length counts. */
	CHECK_RC(larder_put(c, "big", 3, v, MAX_VALUE + 1, LARDER_TTL_NEVER), LARDER_EVALSIZE);
	free(v);
	CHECK(th_check_accounting(c, 30000, NULL, NULL));
	larder_close(c);
}

static void test_compress_incompressible_raw(void)
{
	larder *c = open_compressing(256 * MiB, MIN_BYTES);
	REQUIRE(c);
	static const size_t sizes[] = { MIN_BYTES, 500, 4 * KiB, 64 * KiB + 1, MiB + 1 };
	unsigned char *v = malloc(MiB + 1);
	REQUIRE(v);
	for (size_t i = 0; i < TH_COUNT(sizes); i++) {
		size_t len = sizes[i];
		char key[32];
		snprintf(key, sizeof(key), "rand-%zu", len);
		random_fill(v, len, len);
		REQUIRE_RC(larder_put(c, key, strlen(key), v, len, LARDER_TTL_NEVER), LARDER_OK);
		check_reads(c, key, v, len);
		struct found f = iter_lookup(c, key, strlen(key), v, len);
		CHECK(f.ok);
		CHECK_EQ(f.charge, raw_charge(strlen(key), len)); /* COMPRESS-C1: raw */
	}
	/* A value that compresses, but by less than the minimum saving, is raw:
	 * a random half and a zero half saves ~50%, so demand 60%. */
	larder_config *config = th_config(64 * MiB);
	REQUIRE(config);
	REQUIRE_RC(larder_config_set_compression(config, 64, 60), LARDER_OK);
	larder *strict = th_open(config);
	REQUIRE(strict);
	random_fill(v, 2048, 7);
	memset(v + 2048, 0, 2048);
	REQUIRE_RC(larder_put(strict, "half", 4, v, 4096, LARDER_TTL_NEVER), LARDER_OK);
	struct found f = iter_lookup(strict, "half", 4, v, 4096);
	CHECK(f.ok);
	CHECK_EQ(f.charge, raw_charge(4, 4096));
	REQUIRE_RC(larder_put(c, "half", 4, v, 4096, LARDER_TTL_NEVER), LARDER_OK); /* 10% */
	f = iter_lookup(c, "half", 4, v, 4096);
	CHECK(f.ok);
	CHECK_LT(f.charge, raw_charge(4, 4096));
	larder_close(strict);
	free(v);
	larder_close(c);
}

struct heard {
	unsigned char want[600];
	int calls, ok;
};

static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	struct heard *h = ctx;
	(void)key;
	(void)key_len;
	if (cause != LARDER_CAUSE_REPLACED)
		return;
	h->ok = value_len == 600 && memcmp(value, h->want, 600) == 0;
	h->calls++;
}

static void test_compress_conditional_ops(void)
{
	static struct heard heard;
	larder_config *config = th_config(64 * MiB);
	REQUIRE(config);
	REQUIRE_RC(larder_config_set_compression(config, MIN_BYTES, SAVING_PCT), LARDER_OK);
	REQUIRE_RC(larder_config_set_removal_listener(config, listener, &heard), LARDER_OK);
	larder *c = th_open(config);
	REQUIRE(c);
	unsigned char a[600], b[600], other[600];
	json_fill(a, sizeof(a), 1);
	json_fill(b, sizeof(b), 2);
	memcpy(other, a, sizeof(a));
	other[300] ^= 1; /* same length, one byte apart */
	memcpy(heard.want, a, sizeof(a));
	REQUIRE_RC(larder_put(c, "k", 1, a, sizeof(a), LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put_if_absent(c, "k", 1, b, sizeof(b), LARDER_TTL_NEVER), LARDER_EXISTS);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, other, sizeof(other), b, sizeof(b),
					  LARDER_TTL_NEVER),
		 LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, a, 599, b, sizeof(b), LARDER_TTL_NEVER),
		 LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, other, sizeof(other)), LARDER_MISMATCH);
	check_reads(c, "k", a, sizeof(a));
	CHECK_RC(larder_replace_if_equals(c, "k", 1, a, sizeof(a), b, sizeof(b), LARDER_TTL_NEVER),
		 LARDER_OK);
	check_reads(c, "k", b, sizeof(b));
	/* The listener heard of a's replacement with a's original bytes. */
	CHECK(th_quiesce(c, 30000) == 0);
	CHECK_EQ(heard.calls, 1);
	CHECK(heard.ok);
	/* touch moves a deadline-less entry to a copy with a deadline: still
	 * compressed, still b. */
	CHECK_RC(larder_touch(c, "k", 1, 3600 * 1000), LARDER_OK);
	check_reads(c, "k", b, sizeof(b));
	struct found f = iter_lookup(c, "k", 1, b, sizeof(b));
	CHECK(f.ok);
	CHECK_LT(f.charge, larder__slab_charge(larder__entry_bytes(LARDER__ENTRY_TTL, 1, 600)));
	CHECK_RC(larder_replace(c, "k", 1, a, sizeof(a), LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, b, sizeof(b)), LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, a, sizeof(a)), LARDER_OK);
	CHECK_RC(larder_contains(c, "k", 1), LARDER_MISS);
	CHECK(th_check_accounting(c, 30000, NULL, NULL));
	larder_close(c);
}

static void test_compress_memory_bound(void)
{
	const uint64_t capacity = MiB;
	const size_t vlen = 500;
	larder *c = open_compressing(capacity, MIN_BYTES);
	REQUIRE(c);
	unsigned char v[500];
	const uint64_t n = 20 * capacity / vlen; /* twenty times the capacity, raw */
	for (uint64_t i = 0; i < n; i++) {
		char key[32];
		size_t klen = (size_t)snprintf(key, sizeof(key), "k%llu", (unsigned long long)i);
		json_fill(v, vlen, i);
		REQUIRE_RC(larder_put(c, key, klen, v, vlen, LARDER_TTL_NEVER), LARDER_OK);
		CHECK_LE(th_stat(c, LARDER_STAT_USED_BYTES),
			 capacity + th_stat(c, LARDER_STAT_OVERSHOOT_BOUND));
	}
	uint64_t entries = 0, bytes = 0;
	CHECK(th_check_accounting(c, 30000, &entries, &bytes));
	CHECK_LE(bytes, capacity);
	/* The stored size is what counts: more entries fit than raw ones would. */
	CHECK_GT(entries, capacity / raw_charge(8, vlen));
	/* Whatever stayed reads back whole. */
	uint64_t present = 0;
	for (uint64_t i = 0; i < n; i++) {
		char key[32];
		size_t klen = (size_t)snprintf(key, sizeof(key), "k%llu", (unsigned long long)i);
		unsigned char got[500];
		size_t got_len;
		if (larder_get(c, key, klen, got, sizeof(got), &got_len) != LARDER_OK)
			continue;
		present++;
		json_fill(v, vlen, i);
		CHECK_EQ(got_len, vlen);
		CHECK(memcmp(got, v, vlen) == 0);
	}
	CHECK_EQ(present, entries);
	larder_close(c);
}

/*
 * Arms the fault seam for the next allocation and runs op until the fault
 * lands on it (an idle maintainer allocates nothing, so the first try
 * does; the loop only guards against a stray allocation elsewhere).
 * Values over 1 MiB take a fresh buffer per read, so each try allocates.
 */
#define UNTIL_FAULT(expr, rc_var)                                                     \
	for (int try_ = 0; try_ < 100; try_++) {                                          \
		larder__test_fail_alloc_after(0);                                            \
		rc_var = (expr);                                                             \
		larder__test_fail_alloc_after(-1);                                           \
		if (rc_var == LARDER_ENOMEM)                                                 \
			break;                                                               \
	}

static void test_compress_enomem(void)
{
	larder *c = open_compressing(64 * MiB, MIN_BYTES);
	REQUIRE(c);
	const size_t len = MiB + 100;
	unsigned char *v = malloc(len);
	REQUIRE(v);
	json_fill(v, len, 3);
	REQUIRE_RC(larder_put(c, "big", 3, v, len, LARDER_TTL_NEVER), LARDER_OK);
	CHECK(th_quiesce(c, 30000) == 0);

	struct seen s = { v, len, 0, 0 };
	int rc = LARDER_OK;
	UNTIL_FAULT(larder_get_with(c, "big", 3, read_check, &s), rc);
	CHECK_RC(rc, LARDER_ENOMEM);
	CHECK_EQ(s.calls, 0);
	CHECK_RC(larder_get_with(c, "big", 3, read_check, &s), LARDER_OK);
	CHECK_EQ(s.calls, 1);
	CHECK(s.ok);

	const void *keys[1] = { "big" };
	size_t lens[1] = { 3 };
	long found = 0;
	s = (struct seen){ v, len, 0, 0 };
	UNTIL_FAULT(larder_get_batch(c, 1, keys, lens, batch_check, &s), found);
	CHECK_EQ(found, LARDER_ENOMEM);
	CHECK_EQ(s.calls, 0);
	CHECK_EQ(larder_get_batch(c, 1, keys, lens, batch_check, &s), 1);
	CHECK(s.ok);

	/* larder_get decompresses into the caller's buffer: nothing to allocate. */
	unsigned char *buf = malloc(len);
	REQUIRE(buf);
	size_t got_len = 0;
	larder__test_fail_alloc_after(0);
	CHECK_RC(larder_get(c, "big", 3, buf, len, &got_len), LARDER_OK);
	larder__test_fail_alloc_after(-1);
	CHECK(memcmp(buf, v, len) == 0);

	/* No buffer to compress into (a value over 1 MiB compressed takes a
	 * fresh one): the value is stored raw, and reads the same. */
	unsigned char *w = malloc(MAX_VALUE);
	REQUIRE(w);
	json_fill(w, MAX_VALUE, 5);
	larder__test_fail_alloc_after(0);
	CHECK_RC(larder_put(c, "raw", 3, w, MAX_VALUE, LARDER_TTL_NEVER), LARDER_OK);
	larder__test_fail_alloc_after(-1);
	check_reads(c, "raw", w, MAX_VALUE);
	struct found f = iter_lookup(c, "raw", 3, w, MAX_VALUE);
	CHECK(f.ok);
	CHECK_EQ(f.charge, raw_charge(3, MAX_VALUE));
	free(w);
	free(buf);
	free(v);
	CHECK(th_check_accounting(c, 30000, NULL, NULL));
	larder_close(c);
}

/*
 * The cursor's ENOMEM: a sweep that fails the cursor's n-th allocation
 * through the seam (the value's decompression buffer among them), for
 * growing n;
 * each failure leaves the cursor where it was, so the retry hands the key
 * out exactly once, and a large enough n goes through without a fault.
 */
static void test_compress_iter_enomem(void)
{
	larder *c = open_compressing(64 * MiB, MIN_BYTES);
	REQUIRE(c);
	const size_t len = MiB + 100;
	unsigned char *v = malloc(len);
	REQUIRE(v);
	json_fill(v, len, 4);
	REQUIRE_RC(larder_put(c, "big", 3, v, len, LARDER_TTL_NEVER), LARDER_OK);
	CHECK(th_quiesce(c, 30000) == 0);
	int failures = 0, clean = 0;
	for (long n = 0; n < 16 && !clean; n++) {
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		struct found f = { "big", 3, v, len, 0, 0, 0 };
		larder__test_fail_alloc_after(n);
		int rc = larder_iter_next(it, iter_find, &f);
		larder__test_fail_alloc_after(-1);
		if (rc == LARDER_ENOMEM) {
			failures++;
			CHECK_EQ(f.seen, 0);
			CHECK_RC(larder_iter_next(it, iter_find, &f), LARDER_OK);
		} else {
			CHECK_RC(rc, LARDER_OK);
			clean = 1;
		}
		CHECK_RC(larder_iter_next(it, iter_find, &f), LARDER_MISS);
		CHECK_EQ(f.seen, 1);
		CHECK(f.ok);
		larder_iter_close(it);
	}
	CHECK(clean);
	CHECK_GE(failures, 1); /* the value's decompression buffer at least */
	free(v);
	larder_close(c);
}

/* A temporary file for a snapshot; the caller unlinks it. */
static int temp_snapshot(char *path)
{
	int fd = mkstemp(path);
	if (fd < 0)
		return 0;
	close(fd);
	return 1;
}

/*
 * The snapshot tests' i-th entry: key "<prefix><i>", and a value of a length
 * drawn from i under cap, JSON or (mixed, every third) random bytes.
 * Returns the value's length.
 */
static size_t numbered_entry(char key[32], size_t *klen, const char *prefix, int i,
			     unsigned char *v, size_t cap, int mixed)
{
	*klen = (size_t)snprintf(key, 32, "%s%d", prefix, i);
	size_t len = (size_t)(th_mix64((uint64_t)i) % cap);
	if (mixed && i % 3 == 0)
		random_fill(v, len, (uint64_t)i);
	else
		json_fill(v, len, (uint64_t)i);
	return len;
}

static void test_compress_snapshot(void)
{
	char path[] = "/tmp/larder-compress-XXXXXX";
	REQUIRE(temp_snapshot(path));
	larder *c = open_compressing(64 * MiB, MIN_BYTES);
	REQUIRE(c);
	unsigned char v[4096];
	char key[32];
	size_t klen;
	const int n = 500;
	for (int i = 0; i < n; i++) {
		size_t len = numbered_entry(key, &klen, "s", i, v, sizeof(v), 1);
		REQUIRE_RC(larder_put(c, key, klen, v, len, LARDER_TTL_NEVER), LARDER_OK);
	}
	REQUIRE_RC(larder_save(c, path), LARDER_OK);
	larder_close(c);
	for (int compressing = 0; compressing < 2; compressing++) {
		larder *d = open_compressing(64 * MiB, compressing ? MIN_BYTES : 0);
		REQUIRE(d);
		CHECK_RC(larder_load(d, path), LARDER_OK);
		for (int i = 0; i < n; i++) {
			size_t len = numbered_entry(key, &klen, "s", i, v, sizeof(v), 1);
			check_reads(d, key, v, len);
		}
		larder_close(d);
	}
	unlink(path);
}

/*
 * A snapshot whose plain values exceed a small compressing cache, though
 * they fit in it compressed: the load takes every entry (SNAP-L3 counts the
 * charge as stored), and the memory bound holds.
 */
static void test_compress_snapshot_into_smaller(void)
{
	char path[] = "/tmp/larder-compress-XXXXXX";
	REQUIRE(temp_snapshot(path));
	larder *c = open_compressing(64 * MiB, 0); /* plain */
	REQUIRE(c);
	unsigned char v[4096];
	const int n = 1000; /* ~5 MiB plain, ~3 MiB compressed */
	for (int i = 0; i < n; i++) {
		char key[32];
		size_t klen = (size_t)snprintf(key, sizeof(key), "z%d", i);
		json_fill(v, sizeof(v), (uint64_t)i);
		REQUIRE_RC(larder_put(c, key, klen, v, sizeof(v), LARDER_TTL_NEVER), LARDER_OK);
	}
	uint64_t plain_bytes = 0;
	CHECK(th_check_accounting(c, 30000, NULL, &plain_bytes));
	REQUIRE_RC(larder_save(c, path), LARDER_OK);
	larder_close(c);
	larder_config *config = th_config(plain_bytes / 4 * 3); /* under the plain size */
	REQUIRE(config);
	REQUIRE_RC(larder_config_set_compression(config, MIN_BYTES, SAVING_PCT), LARDER_OK);
	larder *d = th_open(config);
	REQUIRE(d);
	CHECK_RC(larder_load(d, path), LARDER_OK);
	uint64_t entries = 0, bytes = 0;
	CHECK(th_check_accounting(d, 30000, &entries, &bytes));
	CHECK_EQ(entries, n);
	CHECK_LE(bytes, plain_bytes / 4 * 3);
	for (int i = 0; i < n; i++) {
		char key[32];
		snprintf(key, sizeof(key), "z%d", i);
		json_fill(v, sizeof(v), (uint64_t)i);
		check_reads(d, key, v, sizeof(v));
	}
	larder_close(d);
	unlink(path);
}

/* ---- Readers racing with writers of compressed values --------------------- */

#define RACE_KEYS 64

struct race {
	larder *c;
	_Atomic int stop;
	_Atomic long bad;
	_Atomic long reads;
};

struct race_arg {
	struct race *r;
	int id;
};

/* The value of key k at version ver: its length and bytes both depend on
 * (k, ver), and its first 8 bytes say which, so a reader can check it. */
static size_t race_value(unsigned char *buf, uint64_t k, uint64_t ver)
{
	size_t len = 300 + (size_t)(th_mix64(k * 1000003 + ver) % 3000);
	uint64_t tag = k << 32 | ver;
	json_fill(buf, len, tag);
	memcpy(buf, &tag, 8);
	return len;
}

static void race_check(void *ctx, const void *value, size_t value_len)
{
	struct race *r = ctx;
	if (value_len == 3 && memcmp(value, "cas", 3) == 0) { /* race_cas's mark */
		atomic_fetch_add(&r->reads, 1);
		return;
	}
	unsigned char want[4096];
	uint64_t tag;
	if (value_len < 8) {
		atomic_fetch_add(&r->bad, 1);
		return;
	}
	memcpy(&tag, value, 8);
	size_t len = race_value(want, tag >> 32, tag & 0xffffffffu);
	if (len != value_len || memcmp(want, value, len) != 0)
		atomic_fetch_add(&r->bad, 1);
	atomic_fetch_add(&r->reads, 1);
}

static void *race_writer(void *p)
{
	struct race_arg *a = p;
	unsigned char buf[4096];
	for (uint64_t ver = 0; ver < (TH_TSAN ? 3000u : 20000u); ver++) {
		uint64_t k = th_mix64(ver * 7 + (uint64_t)a->id) % RACE_KEYS;
		char key[16];
		size_t klen = (size_t)snprintf(key, sizeof(key), "r%llu", (unsigned long long)k);
		size_t len = race_value(buf, k, ver);
		CHECK_RC(larder_put(a->r->c, key, klen, buf, len, LARDER_TTL_NEVER), LARDER_OK);
	}
	return NULL;
}

static void race_batch(void *ctx, size_t index, const void *value, size_t value_len)
{
	(void)index;
	race_check(ctx, value, value_len);
}

static void race_iter(void *ctx, const void *key, size_t key_len, const void *value,
		      size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	(void)key;
	(void)key_len;
	(void)ttl_ms;
	(void)entry_bytes;
	race_check(ctx, value, value_len);
}

/*
 * A reader: get, get_with, get_batch and a cursor in turn; and, on thread
 * 2, compare-and-set: read a value, then replace it by "cas" only if it is
 * still that value, and put the value back the same way, so that the CAS
 * compares against compressed values that writers replace meanwhile.
 */
static void race_cas(struct race *r, const char *key, size_t klen)
{
	unsigned char buf[4096];
	size_t len;
	if (larder_get(r->c, key, klen, buf, sizeof(buf), &len) != LARDER_OK || len == 3)
		return;
	int rc = larder_replace_if_equals(r->c, key, klen, buf, len, "cas", 3, LARDER_TTL_NEVER);
	CHECK(rc == LARDER_OK || rc == LARDER_MISMATCH || rc == LARDER_MISS);
	if (rc == LARDER_OK) {
		rc = larder_replace_if_equals(r->c, key, klen, "cas", 3, buf, len, LARDER_TTL_NEVER);
		CHECK(rc == LARDER_OK || rc == LARDER_MISMATCH || rc == LARDER_MISS);
	}
}

static void *race_reader(void *p)
{
	struct race_arg *a = p;
	unsigned char buf[4096];
	uint64_t i = (uint64_t)a->id;
	while (!atomic_load(&a->r->stop)) {
		char key[16];
		size_t klen = (size_t)snprintf(key, sizeof(key), "r%llu",
					       (unsigned long long)(i++ % RACE_KEYS));
		size_t len;
		switch (i % 8) {
		case 0: {
			const void *keys[1] = { key };
			size_t lens[1] = { klen };
			CHECK(larder_get_batch(a->r->c, 1, keys, lens, race_batch, a->r) >= 0);
			break;
		}
		case 1:
			if (i % 64 == 1) { /* a whole walk now and then */
				larder_iter *it;
				if (CHECK_RC(larder_iter_open(a->r->c, &it), LARDER_OK)) {
					while (larder_iter_next(it, race_iter, a->r) == LARDER_OK)
						;
					larder_iter_close(it);
				}
			}
			break;
		case 2:
			if (a->id == 2)
				race_cas(a->r, key, klen);
			break;
		case 3:
		case 4: {
			int rc = larder_get_with(a->r->c, key, klen, race_check, a->r);
			CHECK(rc == LARDER_OK || rc == LARDER_MISS);
			break;
		}
		default:
			if (larder_get(a->r->c, key, klen, buf, sizeof(buf), &len) == LARDER_OK)
				race_check(a->r, buf, len);
		}
	}
	/* The writer is done: every key is there, so this pass reads for sure. */
	for (uint64_t k = 0; k < RACE_KEYS; k++) {
		char key[16];
		size_t klen = (size_t)snprintf(key, sizeof(key), "r%llu", (unsigned long long)k);
		CHECK_RC(larder_get_with(a->r->c, key, klen, race_check, a->r), LARDER_OK);
	}
	return NULL;
}

static void *race_thread(void *p)
{
	struct race_arg *a = p;
	if (a->id == 0) {
		race_writer(p);
		atomic_store(&a->r->stop, 1);
		return NULL;
	}
	return race_reader(p);
}

static void test_compress_readers_race_writers(void)
{
	struct race r = { .c = open_compressing(64 * MiB, MIN_BYTES) };
	REQUIRE(r.c);
	struct race_arg args[3] = { { &r, 0 }, { &r, 1 }, { &r, 2 } };
	CHECK_EQ(th_run_threads(3, race_thread, args, sizeof(args[0])), 0);
	CHECK_EQ(atomic_load(&r.bad), 0);
	CHECK_GE(atomic_load(&r.reads), 2 * RACE_KEYS);
	CHECK(th_check_accounting(r.c, 30000, NULL, NULL));
	/* The dictionary was trained and published while the readers ran. */
	CHECK_GT(th_stat(r.c, LARDER_STAT_DICT_BYTES), 0);
	larder_close(r.c);
}


/* ---- the dictionary ------------------------------------------------------ */

static void test_dict_args(void)
{
	larder_config *config = NULL;
	REQUIRE_RC(larder_config_create(&config), LARDER_OK);
	char d[64] = "{\"id\":1,\"name\":\"x\"}";
	CHECK_RC(larder_config_set_compression_dictionary(NULL, LARDER_DICTIONARY_TRAIN, NULL, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(config, (enum larder_dictionary)7, NULL,
							   0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_TRAIN, d, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_NONE, NULL, 8),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_GIVEN, NULL, 8),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_GIVEN, d, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_GIVEN, d,
							   LARDER_DICTIONARY_MAX_BYTES + 1),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_GIVEN, d,
							   sizeof(d)),
		 LARDER_OK);
	/* A second call replaces the first (and frees its copy: ASan). */
	CHECK_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_GIVEN, d, 20),
		 LARDER_OK);
	CHECK_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_NONE, NULL, 0),
		 LARDER_OK);
	CHECK_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_GIVEN, d, 20),
		 LARDER_OK);
	larder_config_destroy(config); /* with a copy held: freed */
}

/* Writes 500-byte JSON values under "warm-N" until the cache has its
 * dictionary (polling, 60 s x TH_SLOW at most). Returns the values written. */
static int warm_until_dict(larder *c)
{
	unsigned char v[500];
	uint64_t deadline = th_now_ms() + 60000 * TH_SLOW;
	int n = 0;
	while (!th_stat(c, LARDER_STAT_DICT_BYTES)) {
		if (th_now_ms() > deadline) {
			th_fail(__FILE__, __LINE__, "no dictionary within %u s", 60 * TH_SLOW);
			return n;
		}
		for (int i = 0; i < 64; i++, n++) {
			char key[32];
			size_t klen = (size_t)snprintf(key, sizeof(key), "warm-%d", n);
			json_fill(v, sizeof(v), (uint64_t)n * 7919);
			CHECK_RC(larder_put(c, key, klen, v, sizeof(v), LARDER_TTL_NEVER), LARDER_OK);
		}
		larder__test_quiesce(c, 10000); /* a pass that trains once the sample is full */
	}
	return n;
}

/* Every "warm-N" value of warm_until_dict reads back (LZ4 ones from before
 * the dictionary, zstd ones after). */
static void check_warm(larder *c, int n)
{
	unsigned char v[500];
	for (int i = 0; i < n; i++) {
		char key[32];
		snprintf(key, sizeof(key), "warm-%d", i);
		json_fill(v, sizeof(v), (uint64_t)i * 7919);
		check_reads(c, key, v, sizeof(v));
	}
}

/* The charge of a key's entry (by a cursor walk). */
static uint64_t charge_of(larder *c, const char *key, const unsigned char *v, size_t len)
{
	struct found f = iter_lookup(c, key, strlen(key), v, len);
	CHECK_EQ(f.seen, 1);
	CHECK(f.ok);
	return f.charge;
}

static void test_dict_trained_round_trips(void)
{
	larder *c = open_compressing(256 * MiB, MIN_BYTES);
	larder *lz4 = open_dict(256 * MiB, MIN_BYTES, LARDER_DICTIONARY_NONE, NULL, 0);
	REQUIRE(c && lz4);
	CHECK_EQ(th_stat(c, LARDER_STAT_DICT_BYTES), 0);
	int warm = warm_until_dict(c);
	CHECK_GT(th_stat(c, LARDER_STAT_DICT_BYTES), 0);
	static const size_t sizes[] = {
		0, 1, MIN_BYTES - 1, MIN_BYTES, MIN_BYTES + 1, 500, 4 * KiB, 64 * KiB - 1,
		64 * KiB, 64 * KiB + 1, MiB - 1, MiB, MiB + 1, MAX_VALUE - 1, MAX_VALUE,
	};
	unsigned char *v = malloc(MAX_VALUE);
	REQUIRE(v);
	for (size_t i = 0; i < TH_COUNT(sizes); i++) {
		size_t len = sizes[i];
		char key[32];
		snprintf(key, sizeof(key), "dict-%zu", len);
		json_fill(v, len, len + 1);
		REQUIRE_RC(larder_put(c, key, strlen(key), v, len, LARDER_TTL_NEVER), LARDER_OK);
		check_reads(c, key, v, len);
		uint64_t raw = raw_charge(strlen(key), len), got = charge_of(c, key, v, len);
		if (len >= MIN_BYTES) {
			CHECK_LT(got, raw); /* COMPRESS-C1: stored compressed */
		} else {
			CHECK_EQ(got, raw);
		}
	}
	/* Short values: smaller against the dictionary than LZ4 alone makes them. */
	uint64_t with_dict = 0, alone = 0;
	for (int i = 0; i < 64; i++) {
		char key[32];
		snprintf(key, sizeof(key), "short-%d", i);
		json_fill(v, 300, (uint64_t)i + 1000000);
		REQUIRE_RC(larder_put(c, key, strlen(key), v, 300, LARDER_TTL_NEVER), LARDER_OK);
		REQUIRE_RC(larder_put(lz4, key, strlen(key), v, 300, LARDER_TTL_NEVER), LARDER_OK);
		with_dict += charge_of(c, key, v, 300);
		alone += charge_of(lz4, key, v, 300);
	}
	CHECK_LT(with_dict, alone);
	/* Incompressible values stay raw, and the next value still compresses
	 * (a failed zstd frame must not leave the thread's context stuck). */
	for (int round = 0; round < 3; round++) {
		random_fill(v, 4096, (uint64_t)round);
		REQUIRE_RC(larder_put(c, "rand", 4, v, 4096, LARDER_TTL_NEVER), LARDER_OK);
		CHECK_EQ(charge_of(c, "rand", v, 4096), raw_charge(4, 4096));
		check_reads(c, "rand", v, 4096);
		json_fill(v, 4096, (uint64_t)round);
		REQUIRE_RC(larder_put(c, "after", 5, v, 4096, LARDER_TTL_NEVER), LARDER_OK);
		CHECK_LT(charge_of(c, "after", v, 4096), raw_charge(5, 4096));
		check_reads(c, "after", v, 4096);
	}
	check_warm(c, warm); /* the values from before the dictionary */
	free(v);
	CHECK(th_check_accounting(c, 30000, NULL, NULL));
	larder_close(c);
	larder_close(lz4);
}

static void test_dict_given_and_none(void)
{
	/* Raw content is a dictionary too: what the values share. */
	static const char given[] = "{\"id\":0,\"name\":\"user-0\",\"email\":\"\",\"score\":0,"
				    "\"tags\":[],\"active\":true},{\"id\":\"name\":\"user-\","
				    "\"email\":\"score\":\"tags\":\"active\":false}";
	larder *c = open_dict(64 * MiB, MIN_BYTES, LARDER_DICTIONARY_GIVEN, given, sizeof(given));
	larder *none = open_dict(64 * MiB, MIN_BYTES, LARDER_DICTIONARY_NONE, NULL, 0);
	larder *plain = open_dict(64 * MiB, 0, LARDER_DICTIONARY_GIVEN, given, sizeof(given));
	REQUIRE(c && none && plain);
	CHECK_GT(th_stat(c, LARDER_STAT_DICT_BYTES), sizeof(given)); /* from the start */
	CHECK_EQ(th_stat(plain, LARDER_STAT_DICT_BYTES), 0);         /* no compression, no use */
	unsigned char v[2048];
	for (int i = 0; i < 2000; i++) { /* far more than a sample */
		char key[32];
		size_t klen = (size_t)snprintf(key, sizeof(key), "g%d", i);
		size_t len = MIN_BYTES + (size_t)(th_mix64((uint64_t)i) % (sizeof(v) - MIN_BYTES));
		json_fill(v, len, (uint64_t)i);
		REQUIRE_RC(larder_put(c, key, klen, v, len, LARDER_TTL_NEVER), LARDER_OK);
		REQUIRE_RC(larder_put(none, key, klen, v, len, LARDER_TTL_NEVER), LARDER_OK);
		REQUIRE_RC(larder_put(plain, key, klen, v, len, LARDER_TTL_NEVER), LARDER_OK);
	}
	for (int i = 0; i < 2000; i += 7) {
		char key[32];
		snprintf(key, sizeof(key), "g%d", i);
		size_t len = MIN_BYTES + (size_t)(th_mix64((uint64_t)i) % (sizeof(v) - MIN_BYTES));
		json_fill(v, len, (uint64_t)i);
		check_reads(c, key, v, len);
		check_reads(none, key, v, len);
		check_reads(plain, key, v, len);
	}
	CHECK(th_check_accounting(none, 30000, NULL, NULL));
	CHECK_EQ(th_stat(none, LARDER_STAT_DICT_BYTES), 0); /* never trains */
	/* Incompressible values are not sampled: four samples' worth of them
	 * trains nothing. */
	larder *noise = open_compressing(64 * MiB, MIN_BYTES);
	REQUIRE(noise);
	for (int i = 0; i < 2048; i++) {
		char key[32];
		size_t klen = (size_t)snprintf(key, sizeof(key), "n%d", i);
		random_fill(v, 512, (uint64_t)i);
		REQUIRE_RC(larder_put(noise, key, klen, v, 512, LARDER_TTL_NEVER), LARDER_OK);
	}
	CHECK(th_check_accounting(noise, 30000, NULL, NULL));
	CHECK_EQ(th_stat(noise, LARDER_STAT_DICT_BYTES), 0);
	larder_close(noise);
	CHECK(th_check_accounting(c, 30000, NULL, NULL));
	larder_close(c);
	larder_close(none);
	larder_close(plain);
}

struct dctx_fault {
	larder *c;
	const unsigned char *want;
	size_t len;
};

/* On a fresh thread, whose zstd decompression context does not exist yet. */
static void *dctx_fault_thread(void *p)
{
	struct dctx_fault *f = p;
	unsigned char got[500];
	size_t got_len = 0;
	/* The thread's state and handle first, through a read that needs no codec. */
	CHECK_RC(larder_get(f->c, "absent", 6, got, sizeof(got), &got_len), LARDER_MISS);
	int rc = LARDER_OK;
	UNTIL_FAULT(larder_get(f->c, "zstd", 4, got, sizeof(got), &got_len), rc);
	CHECK_RC(rc, LARDER_ENOMEM);
	CHECK_RC(larder_get(f->c, "zstd", 4, got, sizeof(got), &got_len), LARDER_OK);
	CHECK_EQ(got_len, f->len);
	CHECK(memcmp(got, f->want, f->len) == 0);
	return NULL;
}

static void test_dict_enomem(void)
{
	larder *c = open_compressing(64 * MiB, MIN_BYTES);
	REQUIRE(c);
	warm_until_dict(c);
	unsigned char v[500];
	json_fill(v, sizeof(v), 42);
	REQUIRE_RC(larder_put(c, "zstd", 4, v, sizeof(v), LARDER_TTL_NEVER), LARDER_OK);
	CHECK_LT(charge_of(c, "zstd", v, sizeof(v)), raw_charge(4, sizeof(v)));
	REQUIRE_RC(th_quiesce(c, 10000), 0); /* an idle maintainer allocates nothing */
	struct dctx_fault f = { c, v, sizeof(v) };
	CHECK_EQ(th_run_threads(1, dctx_fault_thread, &f, sizeof(f)), 0);
	/* A given dictionary whose preparation finds no memory: open fails cleanly. */
	static const char given[] = "{\"id\":0,\"name\":\"user-0\"}";
	larder_config *config = th_config(64 * MiB);
	REQUIRE(config);
	REQUIRE_RC(larder_config_set_compression(config, MIN_BYTES, SAVING_PCT), LARDER_OK);
	REQUIRE_RC(larder_config_set_compression_dictionary(config, LARDER_DICTIONARY_GIVEN, given,
							     sizeof(given)),
		   LARDER_OK);
	int failed = 0;
	for (long n = 0; n < 64; n++) { /* every allocation of open in turn */
		larder *d = NULL;
		larder__test_fail_alloc_after(n);
		int rc = larder_open(&d, config);
		larder__test_fail_alloc_after(-1);
		if (rc == LARDER_OK) {
			CHECK_GT(th_stat(d, LARDER_STAT_DICT_BYTES), 0);
			larder_close(d);
			break;
		}
		CHECK_RC(rc, LARDER_ENOMEM);
		CHECK(d == NULL);
		failed++;
	}
	CHECK_GT(failed, 0);
	larder_config_destroy(config);
	larder_close(c);
}

static void test_dict_snapshot(void)
{
	char path[] = "/tmp/larder-dict-XXXXXX";
	REQUIRE(temp_snapshot(path));
	larder *c = open_compressing(64 * MiB, MIN_BYTES);
	REQUIRE(c);
	int warm = warm_until_dict(c);
	unsigned char v[4096];
	char key[32];
	size_t klen;
	const int n = 300;
	for (int i = 0; i < n; i++) {
		size_t len = numbered_entry(key, &klen, "s", i, v, sizeof(v), 0);
		REQUIRE_RC(larder_put(c, key, klen, v, len, LARDER_TTL_NEVER), LARDER_OK);
	}
	REQUIRE_RC(larder_save(c, path), LARDER_OK);
	larder_close(c);
	static const enum larder_dictionary modes[] = { LARDER_DICTIONARY_TRAIN,
							LARDER_DICTIONARY_NONE };
	for (int kind = 0; kind < 3; kind++) { /* plain, training, LZ4 alone */
		larder *d = open_dict(64 * MiB, kind ? MIN_BYTES : 0, modes[kind == 2], NULL, 0);
		REQUIRE(d);
		CHECK_RC(larder_load(d, path), LARDER_OK);
		for (int i = 0; i < n; i++) {
			size_t len = numbered_entry(key, &klen, "s", i, v, sizeof(v), 0);
			check_reads(d, key, v, len);
		}
		check_warm(d, warm);
		CHECK(th_check_accounting(d, 30000, NULL, NULL));
		larder_close(d);
	}
	unlink(path);
}

/*
 * Several writers fill the sample at once (DICT-D3: concurrent reservations,
 * the maintainer closing it while copies are in flight), each writing its
 * own keys, while a reader checks every value it finds (DICT-D2: a zstd
 * entry always finds the dictionary). Afterwards the dictionary is there and
 * every key holds its writer's last value. Run under ThreadSanitizer and
 * ASan/UBSan too.
 */
#define SAMPLERS 4
#define SAMPLER_KEYS 200

struct sampler_arg {
	struct race *r;
	_Atomic int *writers_done;
	int id;
};

static void *sampler_thread(void *p)
{
	struct sampler_arg *a = p;
	unsigned char buf[4096];
	if (a->id == SAMPLERS) { /* the reader */
		uint64_t i = 0;
		while (!atomic_load(&a->r->stop)) {
			char key[16];
			uint64_t k = th_mix64(i++) % (SAMPLERS * SAMPLER_KEYS);
			size_t klen = (size_t)snprintf(key, sizeof(key), "r%llu", (unsigned long long)k);
			int rc = larder_get_with(a->r->c, key, klen, race_check, a->r);
			CHECK(rc == LARDER_OK || rc == LARDER_MISS);
		}
		return NULL;
	}
	unsigned rounds = TH_TSAN ? 3u : 10u;
	for (unsigned ver = 0; ver < rounds; ver++) {
		for (uint64_t j = 0; j < SAMPLER_KEYS; j++) {
			uint64_t k = (uint64_t)a->id * SAMPLER_KEYS + j;
			char key[16];
			size_t klen = (size_t)snprintf(key, sizeof(key), "r%llu", (unsigned long long)k);
			size_t len = race_value(buf, k, ver);
			CHECK_RC(larder_put(a->r->c, key, klen, buf, len, LARDER_TTL_NEVER), LARDER_OK);
		}
	}
	return NULL;
}

static void *sampler_main(void *p)
{
	struct sampler_arg *a = p;
	if (a->id == SAMPLERS)
		return sampler_thread(p);
	sampler_thread(p);
	/* The last writer to finish stops the reader. */
	if (atomic_fetch_add(a->writers_done, 1) == SAMPLERS - 1)
		atomic_store(&a->r->stop, 1);
	return NULL;
}

static void test_dict_concurrent_sample(void)
{
	struct race r = { .c = open_compressing(64 * MiB, MIN_BYTES) };
	REQUIRE(r.c);
	_Atomic int writers_done = 0;
	struct sampler_arg args[SAMPLERS + 1];
	for (int i = 0; i <= SAMPLERS; i++)
		args[i] = (struct sampler_arg){ &r, &writers_done, i };
	CHECK_EQ(th_run_threads(SAMPLERS + 1, sampler_main, args, sizeof(args[0])), 0);
	CHECK_EQ(atomic_load(&r.bad), 0);
	CHECK(th_check_accounting(r.c, 30000, NULL, NULL));
	CHECK_GT(th_stat(r.c, LARDER_STAT_DICT_BYTES), 0);
	unsigned last = (TH_TSAN ? 3u : 10u) - 1;
	unsigned char want[4096];
	for (uint64_t k = 0; k < SAMPLERS * SAMPLER_KEYS; k++) {
		char key[16];
		snprintf(key, sizeof(key), "r%llu", (unsigned long long)k);
		size_t len = race_value(want, k, last);
		check_reads(r.c, key, want, len);
	}
	larder_close(r.c);
}

/* Groups of 8 bytes alternating between a pattern and bytes that look
 * random (as stress_matrix writes them). */
static void half_pattern_fill(unsigned char *v, size_t n, unsigned seed)
{
	for (size_t i = 0; i < n; i++)
		v[i] = (i >> 3) & 1 ? (unsigned char)(seed + (i % 61) * 131u)
				    : (unsigned char)(((unsigned)(seed + i) * 2654435761u) >> 24);
}

/*
 * A value of 128 KiB or more compressed with the dictionary is the frame zstd
 * makes with the strategy the dictionary's tables were prepared for
 * (core/compress.c pins it): a static CDict has no compression level, and
 * unpinned, zstd 1.5.4 picks a far slower strategy of its own at that size
 * (300 KiB took about 100 ms instead of 1-2, found by stress_matrix). The
 * speed itself is not asserted (no timed assertions); the frame is.
 */
static void test_dict_big_value_strategy(void)
{
	const size_t len = 300 * KiB, room = len - len / 10; /* room: a 10% saving */
	larder *c = open_dict(64 * MiB, MIN_BYTES, LARDER_DICTIONARY_TRAIN, NULL, 0);
	unsigned char *v = malloc(len), *got = malloc(room), *want = malloc(room);
	REQUIRE(c && v && got && want);
	/* a trained dictionary, of values like stress_matrix's */
	for (int n = 0; !th_stat(c, LARDER_STAT_DICT_BYTES); n++) {
		char key[32];
		size_t klen = (size_t)snprintf(key, sizeof(key), "w%d", n);
		size_t vlen = MIN_BYTES + (size_t)(th_mix64((uint64_t)n) % 4096);
		half_pattern_fill(v, vlen, (unsigned)n);
		REQUIRE_RC(larder_put(c, key, klen, v, vlen, LARDER_TTL_NEVER), LARDER_OK);
		if (n % 64 == 63)
			larder__test_quiesce(c, 10000); /* a pass that trains once the sample is full */
		REQUIRE(n < 100000);
	}
	half_pattern_fill(v, len, 7);
	const struct larder__dict *d = larder__dict_get(c);
	REQUIRE(d != NULL);
	size_t n = larder__pack_with(d, v, len, got, room);
	REQUIRE(n > LARDER__PACKED_HEADER_BYTES);
	ZSTD_CCtx *z = ZSTD_createCCtx();
	REQUIRE(z != NULL);
	CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_format, ZSTD_f_zstd1_magicless)));
	CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_contentSizeFlag, 0)));
	CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_checksumFlag, 0)));
	CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_dictIDFlag, 0)));
	CHECK(!ZSTD_isError(ZSTD_CCtx_setParameter(z, ZSTD_c_strategy, d->strategy)));
	CHECK(!ZSTD_isError(ZSTD_CCtx_refCDict(z, d->cdict)));
	size_t m = ZSTD_compress2(z, want, room, v, len);
	REQUIRE(!ZSTD_isError(m));
	CHECK_EQ(n - LARDER__PACKED_HEADER_BYTES, m);
	CHECK(memcmp(got + LARDER__PACKED_HEADER_BYTES, want, m) == 0);
	ZSTD_freeCCtx(z);
	free(v);
	free(got);
	free(want);
	larder_close(c);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_compress_args),
		TH_TEST(test_compress_round_trips),
		TH_TEST(test_compress_incompressible_raw),
		TH_TEST(test_compress_conditional_ops),
		TH_TEST(test_compress_memory_bound),
		TH_TEST(test_compress_enomem),
		TH_TEST(test_compress_iter_enomem),
		TH_TEST(test_compress_snapshot),
		TH_TEST(test_compress_snapshot_into_smaller),
		TH_TEST(test_compress_readers_race_writers),
		TH_TEST(test_dict_args),
		TH_TEST(test_dict_trained_round_trips),
		TH_TEST(test_dict_given_and_none),
		TH_TEST(test_dict_enomem),
		TH_TEST(test_dict_snapshot),
		TH_TEST(test_dict_concurrent_sample),
		TH_TEST(test_dict_big_value_strategy),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
