/*
 * tests/unit/test_audit_core.c - the fourth outside audit: the documented
 * contracts of larder.h's compression, iteration, snapshot and pool calls
 * (larder_config_set_compression*, larder_iter_*, larder_save/larder_load,
 * larder_pool_* and a pooled cache), each edge and error code as the
 * header states it (this file also runs as unit_audit_core_shards4).
 *
 * Checked, from outside (larder.h, the harness's injected clock, and for a
 * snapshot's age the load's in-memory seam):
 *   - compressed values through every read API, the listener and the
 *     conditional writes, at max_value_bytes and one over, values that
 *     compress to more than themselves, and the entry limit applied to the
 *     stored size;
 *   - cursors: argument errors, the end is sticky, each unchanged key
 *     exactly once across a clear of other keys, growth and a capacity
 *     cut, entries expiring mid-walk never handed out;
 *   - snapshots: a round trip through every configuration, damaged and
 *     foreign files refused with the live cache untouched, a smaller or
 *     narrower cache skipping what it cannot hold, TTLs that ran out while
 *     saved dropped;
 *   - pools: argument and state errors, members' figures against the
 *     pool's, members opened and closed while others write.
 * Found wrong and fixed here: larder_pool_stats and larder_pool_cache_stats
 * passed NULL to memcpy for an empty request (test_pool_stats_empty_request,
 * under UBSan); larder_save copied a whole stretch of the walk into its
 * buffer, 30 MiB more at its peak for 400 values of 256 KiB
 * (test_snapshot_save_memory_bounded, ITER-I5 in core/iter.c).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/snapshot.h"
#include "core/testing.h"
#include "harness.h"

#define T0 1000u

static size_t key_of(char *buf, const char *kind, unsigned i)
{
	return (size_t)snprintf(buf, 32, "%s:%05u", kind, i);
}

/* A value that compresses well: a short phrase repeated, with i in it. */
static void fill_text(unsigned char *v, size_t len, unsigned i)
{
	char word[48];
	int n = snprintf(word, sizeof word, "{\"id\":%u,\"name\":\"larder\"},", i);
	for (size_t k = 0; k < len; k++)
		v[k] = (unsigned char)word[k % (size_t)n];
}

/* A value that does not compress: splitmix64 bytes. */
static void fill_noise(unsigned char *v, size_t len, uint64_t seed)
{
	struct th_rng r = {seed};
	for (size_t k = 0; k < len; k++)
		v[k] = (unsigned char)th_rng_next(&r);
}

static char tmp_dir[64];

/* path[128] gets name's place in the test's own directory; 0 without one. */
static int snap_path(char path[128], const char *name)
{
	if (!tmp_dir[0]) {
		snprintf(tmp_dir, sizeof tmp_dir, "/tmp/larder-audit-core-XXXXXX");
		if (!mkdtemp(tmp_dir))
			return 0;
	}
	snprintf(path, 128, "%s/%s", tmp_dir, name);
	return 1;
}

static void count_nothing(void *ctx, const void *key, size_t key_len, const void *value,
			  size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	(void)key;
	(void)key_len;
	(void)value;
	(void)value_len;
	(void)ttl_ms;
	(void)entry_bytes;
	(*(int *)ctx)++;
}

/* ---- compression ------------------------------------------------------------ */

struct seen {
	unsigned char buf[4096];
	size_t len;
	int calls;
};

static void read_into(void *ctx, const void *value, size_t value_len)
{
	struct seen *s = ctx;
	s->len = value_len;
	if (value_len <= sizeof s->buf)
		memcpy(s->buf, value, value_len);
	s->calls++;
}

static void batch_into(void *ctx, size_t index, const void *value, size_t value_len)
{
	(void)index;
	read_into(ctx, value, value_len);
}

static void iter_into(void *ctx, const void *key, size_t key_len, const void *value,
		      size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	(void)key;
	(void)key_len;
	(void)ttl_ms;
	(void)entry_bytes;
	read_into(ctx, value, value_len);
}

/* Every read API hands the original bytes of a compressed value back. */
static void test_compressed_value_through_every_read(void)
{
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	unsigned char v[3000], buf[4096];
	fill_text(v, sizeof v, 7);
	REQUIRE_RC(larder_put(c, "k", 1, v, sizeof v, LARDER_TTL_NEVER), LARDER_OK);
	CHECK(th_check_accounting(c, 10000, NULL, NULL));
	/* It is stored compressed: it charges far less than its length. */
	CHECK_LT(th_stat(c, LARDER_STAT_USED_BYTES), sizeof v / 2);
	size_t len = 0;
	CHECK_RC(larder_get(c, "k", 1, buf, sizeof v - 1, &len), LARDER_EBUFSIZE);
	CHECK_EQ(len, sizeof v);
	CHECK_RC(larder_get(c, "k", 1, NULL, 0, &len), LARDER_EBUFSIZE);
	CHECK_EQ(len, sizeof v);
	CHECK_RC(larder_get(c, "k", 1, buf, sizeof v, &len), LARDER_OK);
	CHECK_EQ(len, sizeof v);
	CHECK_MEM(buf, v, sizeof v);
	memset(buf, 0, sizeof buf);
	CHECK_RC(larder_peek(c, "k", 1, buf, sizeof buf, &len), LARDER_OK);
	CHECK_EQ(len, sizeof v);
	CHECK_MEM(buf, v, sizeof v);
	struct seen s = {0};
	CHECK_RC(larder_get_with(c, "k", 1, read_into, &s), LARDER_OK);
	CHECK_EQ(s.len, sizeof v);
	CHECK_MEM(s.buf, v, sizeof v);
	memset(&s, 0, sizeof s);
	const void *keys[2] = {"k", "nope"};
	size_t lens[2] = {1, 4};
	CHECK_EQ(larder_get_batch(c, 2, keys, lens, batch_into, &s), 1);
	CHECK_EQ(s.len, sizeof v);
	CHECK_MEM(s.buf, v, sizeof v);
	memset(&s, 0, sizeof s);
	larder_iter *it;
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	CHECK_RC(larder_iter_next(it, iter_into, &s), LARDER_OK);
	CHECK_RC(larder_iter_next(it, iter_into, &s), LARDER_MISS);
	larder_iter_close(it);
	CHECK_EQ(s.calls, 1);
	CHECK_EQ(s.len, sizeof v);
	CHECK_MEM(s.buf, v, sizeof v);
	/* The conditional writes compare the original bytes. */
	unsigned char other[3000];
	memcpy(other, v, sizeof other);
	other[sizeof other - 1] ^= 1;
	CHECK_RC(larder_replace_if_equals(c, "k", 1, other, sizeof other, v, sizeof v,
					  LARDER_TTL_NEVER),
		 LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, v, sizeof v - 1, v, sizeof v,
					  LARDER_TTL_NEVER),
		 LARDER_MISMATCH);
	CHECK_RC(larder_replace_if_equals(c, "k", 1, v, sizeof v, other, sizeof other,
					  LARDER_TTL_NEVER),
		 LARDER_OK);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, v, sizeof v), LARDER_MISMATCH);
	CHECK_RC(larder_remove_if_equals(c, "k", 1, other, sizeof other), LARDER_OK);
	CHECK_RC(larder_contains(c, "k", 1), LARDER_MISS);
	larder_close(c);
}

/* Expire-after-access on compressed values: every value read extends the
 * deadline, a read refused with LARDER_EBUFSIZE neither extends nor
 * counts, peek and a cursor extend nothing. */
static void test_compressed_expire_after_access(void)
{
	static struct th_clock clk;
	th_clock_init(&clk, T0);
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
	REQUIRE_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
	REQUIRE_RC(larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS), LARDER_OK);
	REQUIRE_RC(larder_config_set_default_ttl_ms(cfg, 6400), LARDER_OK); /* slack 100 */
	larder *c = th_open(cfg);
	REQUIRE(c);
	unsigned char v[3000], buf[3000];
	fill_text(v, sizeof v, 4);
	REQUIRE_RC(larder_put(c, "k", 1, v, sizeof v, LARDER_TTL_DEFAULT), LARDER_OK);
	CHECK_LT(th_stat(c, LARDER_STAT_USED_BYTES), sizeof v); /* compressed */
	uint64_t ttl = 0, hits = th_stat(c, LARDER_STAT_HITS);
	size_t len = 0;
	th_clock_advance(&clk, 1000);
	CHECK_RC(larder_get(c, "k", 1, buf, sizeof v - 1, &len), LARDER_EBUFSIZE);
	CHECK_RC(larder_peek(c, "k", 1, buf, sizeof buf, &len), LARDER_OK);
	int n = 0;
	larder_iter *it;
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	CHECK_RC(larder_iter_next(it, count_nothing, &n), LARDER_OK);
	larder_iter_close(it);
	CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl), LARDER_OK);
	CHECK_EQ(ttl, 5400);
	CHECK_EQ(th_stat(c, LARDER_STAT_HITS), hits);
	CHECK_RC(larder_get(c, "k", 1, buf, sizeof buf, &len), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl), LARDER_OK);
	CHECK_EQ(ttl, 6400);
	th_clock_advance(&clk, 1000);
	struct seen s = {0};
	CHECK_RC(larder_get_with(c, "k", 1, read_into, &s), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl), LARDER_OK);
	CHECK_EQ(ttl, 6400);
	th_clock_advance(&clk, 1000);
	const void *keys[1] = {"k"};
	size_t lens[1] = {1};
	CHECK_EQ(larder_get_batch(c, 1, keys, lens, batch_into, &s), 1);
	CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl), LARDER_OK);
	CHECK_EQ(ttl, 6400);
	CHECK_EQ(th_stat(c, LARDER_STAT_HITS), hits + 3);
	larder_close(c);
}

/* The removal listener's view of a compressed value: its original bytes. */
struct heard {
	_Atomic int calls;
	_Atomic int good;
	size_t want_len;
	unsigned char want[3000];
};

static void on_heard(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	struct heard *h = ctx;
	(void)key;
	(void)key_len;
	(void)cause;
	if (value_len == h->want_len && value && memcmp(value, h->want, value_len) == 0)
		atomic_fetch_add(&h->good, 1);
	atomic_fetch_add(&h->calls, 1);
}

static void test_compressed_value_to_listener(void)
{
	static struct heard h;
	memset(&h, 0, sizeof h);
	h.want_len = sizeof h.want;
	fill_text(h.want, sizeof h.want, 3);
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
	REQUIRE_RC(larder_config_set_removal_listener(cfg, on_heard, &h), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	/* explicit, replaced, cleared */
	CHECK_RC(larder_put(c, "a", 1, h.want, sizeof h.want, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_remove(c, "a", 1), LARDER_OK);
	CHECK_RC(larder_put(c, "b", 1, h.want, sizeof h.want, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "b", 1, "x", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "c", 1, h.want, sizeof h.want, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_clear(c), LARDER_OK);
	CHECK_RC(th_flush(c, 60000), LARDER_OK);
	CHECK_EQ(atomic_load(&h.calls), 4);
	CHECK_EQ(atomic_load(&h.good), 3);
	larder_close(c);
}

/* At max_value_bytes and one over, compressed or not; a value that
 * compresses to more than itself is stored raw and read back whole. */
static void test_compression_value_limits(void)
{
	const size_t max = 200 * KiB;
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK);
	REQUIRE_RC(larder_config_set_max_value_bytes(cfg, max), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	unsigned char *v = malloc(max + 1), *buf = malloc(max + 1);
	REQUIRE(v && buf);
	fill_text(v, max + 1, 1);
	CHECK_RC(larder_put(c, "max", 3, v, max, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "over", 4, v, max + 1, LARDER_TTL_NEVER), LARDER_EVALSIZE);
	size_t len = 0;
	CHECK_RC(larder_get(c, "max", 3, buf, max, &len), LARDER_OK);
	CHECK_EQ(len, max);
	CHECK_MEM(buf, v, max);
	CHECK_RC(larder_contains(c, "over", 4), LARDER_MISS);
	fill_noise(v, max + 1, 5);
	CHECK_RC(larder_put(c, "noise", 5, v, max, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "noise1", 6, v, max + 1, LARDER_TTL_NEVER), LARDER_EVALSIZE);
	CHECK_RC(larder_get(c, "noise", 5, buf, max, &len), LARDER_OK);
	CHECK_EQ(len, max);
	CHECK_MEM(buf, v, max);
	/* Short values: 0, 1, 2, 3, 4, 5 bytes, each in its own key. */
	for (unsigned n = 0; n <= 5; n++) {
		char k[32];
		size_t kl = key_of(k, "short", n);
		CHECK_RC(larder_put(c, k, kl, v, n, LARDER_TTL_NEVER), LARDER_OK);
		CHECK_RC(larder_get(c, k, kl, buf, n, &len), LARDER_OK);
		CHECK_EQ(len, n);
		CHECK_MEM(buf, v, n);
	}
	CHECK(th_check_accounting(c, 10000, NULL, NULL));
	free(v);
	free(buf);
	larder_close(c);
}

/* The entry limit (1/8 of capacity) applies to the stored size: a value
 * longer than it that compresses below it is taken, one that does not is
 * LARDER_EVALSIZE. */
static void test_compression_entry_limit_on_stored_size(void)
{
	larder_config *cfg = th_config(1 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	size_t n = 200 * KiB; /* over 1/8 of 1 MiB (128 KiB) */
	unsigned char *v = malloc(n), *buf = malloc(n);
	REQUIRE(v && buf);
	fill_text(v, n, 2);
	CHECK_RC(larder_put(c, "big", 3, v, n, LARDER_TTL_NEVER), LARDER_OK);
	size_t len = 0;
	CHECK_RC(larder_get(c, "big", 3, buf, n, &len), LARDER_OK);
	CHECK_EQ(len, n);
	CHECK_MEM(buf, v, n);
	fill_noise(v, n, 9);
	CHECK_RC(larder_put(c, "noise", 5, v, n, LARDER_TTL_NEVER), LARDER_EVALSIZE);
	free(v);
	free(buf);
	larder_close(c);
}

/* The dictionary's setter's errors, and its modes on an open cache. */
static void test_dictionary_modes(void)
{
	larder_config *cfg = NULL;
	REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
	CHECK_RC(larder_config_set_compression_dictionary(NULL, LARDER_DICTIONARY_NONE, NULL, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_TRAIN, "x", 1),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_NONE, NULL, 1),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, NULL, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, "x", 0),
		 LARDER_EINVAL);
	static unsigned char big[LARDER_DICTIONARY_MAX_BYTES + 1];
	CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, big,
							  sizeof big),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression_dictionary(cfg, (enum larder_dictionary)3, NULL, 0),
		 LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression(cfg, LARDER_VALUE_LIMIT + 1, 10), LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression(cfg, 64, 100), LARDER_EINVAL);
	CHECK_RC(larder_config_set_compression(NULL, 64, 10), LARDER_EINVAL);
	larder_config_destroy(cfg);

	/* Each mode, with a raw-content dictionary of one byte and of the
	 * values' own text; the config destroyed before the cache is used. */
	unsigned char sample[2048];
	fill_text(sample, sizeof sample, 0);
	const struct {
		enum larder_dictionary mode;
		const void *dict;
		size_t len;
	} modes[] = {
		{LARDER_DICTIONARY_TRAIN, NULL, 0},
		{LARDER_DICTIONARY_NONE, NULL, 0},
		{LARDER_DICTIONARY_GIVEN, "a", 1},
		{LARDER_DICTIONARY_GIVEN, sample, sizeof sample},
		{LARDER_DICTIONARY_GIVEN, big, sizeof big - 1}, /* the largest */
	};
	fill_text(big, sizeof big, 0);
	for (size_t m = 0; m < TH_COUNT(modes); m++) {
		cfg = th_config(64 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
		REQUIRE_RC(larder_config_set_compression_dictionary(cfg, modes[m].mode,
								    modes[m].dict, modes[m].len),
			   LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		unsigned char v[700], buf[700];
		for (unsigned i = 0; i < 2000; i++) {
			char k[32];
			size_t kl = key_of(k, "d", i);
			fill_text(v, sizeof v, i);
			REQUIRE_RC(larder_put(c, k, kl, v, sizeof v, LARDER_TTL_NEVER), LARDER_OK);
		}
		CHECK_RC(th_flush(c, 60000), LARDER_OK);
		for (unsigned i = 0; i < 2000; i++) {
			char k[32];
			size_t kl = key_of(k, "d", i), len = 0;
			fill_text(v, sizeof v, i);
			if (!CHECK_RC(larder_get(c, k, kl, buf, sizeof buf, &len), LARDER_OK) ||
			    !CHECK_EQ(len, sizeof v) || !CHECK_MEM(buf, v, sizeof v)) {
				fprintf(stderr, "  mode %zu key %u\n", m, i);
				break;
			}
		}
		CHECK_EQ(th_stat(c, LARDER_STAT_DICT_BYTES) != 0,
			 modes[m].mode == LARDER_DICTIONARY_GIVEN ||
				 th_stat(c, LARDER_STAT_DICT_BYTES) != 0);
		CHECK(th_check_accounting(c, 10000, NULL, NULL));
		larder_close(c);
	}
}

/* Training from a sample too small or of odd values (empty, one byte, all
 * equal, noise) never breaks a read. */
static void test_dictionary_training_odd_samples(void)
{
	for (int kind = 0; kind < 4; kind++) {
		larder_config *cfg = th_config(64 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		unsigned count = kind == 0 ? 3 : 3000;
		unsigned char v[300], buf[300];
		for (unsigned i = 0; i < count; i++) {
			char k[32];
			size_t kl = key_of(k, "t", i), n = sizeof v;
			if (kind == 1)
				memset(v, 'z', n);
			else if (kind == 2)
				fill_noise(v, n, i);
			else if (kind == 3)
				n = 1 + i % 3, memset(v, 'q', n);
			else
				fill_text(v, n, i);
			REQUIRE_RC(larder_put(c, k, kl, v, n, LARDER_TTL_NEVER), LARDER_OK);
		}
		CHECK_RC(th_flush(c, 60000), LARDER_OK);
		for (unsigned i = 0; i < count; i++) {
			char k[32];
			size_t kl = key_of(k, "t", i), n = sizeof v, len = 0;
			if (kind == 1)
				memset(v, 'z', n);
			else if (kind == 2)
				fill_noise(v, n, i);
			else if (kind == 3)
				n = 1 + i % 3, memset(v, 'q', n);
			else
				fill_text(v, n, i);
			if (!CHECK_RC(larder_get(c, k, kl, buf, sizeof buf, &len), LARDER_OK) ||
			    !CHECK_EQ(len, n) || !CHECK_MEM(buf, v, n)) {
				fprintf(stderr, "  kind %d key %u\n", kind, i);
				break;
			}
		}
		larder_close(c);
	}
}

/* Reads of compressed values nested in each other's callbacks, deeper
 * than the thread's kept buffers: each level sees its own value whole. */
struct nest {
	larder *c;
	int depth, bad;
};

static void nest_fn(void *ctx, const void *value, size_t value_len)
{
	struct nest *n = ctx;
	unsigned char want[3000];
	int d = n->depth;
	fill_text(want, sizeof want, (unsigned)d);
	if (d < 5) {
		char k[32];
		size_t kl = key_of(k, "nest", (unsigned)d + 1);
		n->depth++;
		if (larder_get_with(n->c, k, kl, nest_fn, n) != LARDER_OK)
			n->bad++;
		n->depth--;
	}
	/* After the inner reads: this level's bytes are still its own. */
	if (value_len != sizeof want || memcmp(value, want, sizeof want) != 0)
		n->bad++;
}

static void test_compressed_reads_nested(void)
{
	larder_config *cfg = th_config(64 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	for (unsigned d = 0; d <= 5; d++) {
		unsigned char v[3000];
		char k[32];
		size_t kl = key_of(k, "nest", d);
		fill_text(v, sizeof v, d);
		REQUIRE_RC(larder_put(c, k, kl, v, sizeof v, LARDER_TTL_NEVER), LARDER_OK);
	}
	struct nest n = {c, 0, 0};
	char k[32];
	size_t kl = key_of(k, "nest", 0);
	CHECK_RC(larder_get_with(c, k, kl, nest_fn, &n), LARDER_OK);
	CHECK_EQ(n.bad, 0);
	larder_close(c);
}

/* The longest key (LARDER_KEY_LIMIT) and the cursor's entry_bytes: every
 * read, the cursor and a snapshot take it; the charges the cursor reports
 * add up to the used bytes, compressed or not. */
struct charges {
	uint64_t bytes, count;
	int big_keys;
};

static void charge_fn(void *ctx, const void *key, size_t key_len, const void *value,
		      size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct charges *ch = ctx;
	(void)key;
	(void)value;
	(void)value_len;
	(void)ttl_ms;
	ch->bytes += entry_bytes;
	ch->count++;
	ch->big_keys += key_len == LARDER_KEY_LIMIT;
}

static void test_longest_key_and_charges(void)
{
	char path[128];
	REQUIRE(snap_path(path, "bigkey.snap"));
	unsigned char *key = malloc(LARDER_KEY_LIMIT + 1);
	REQUIRE(key);
	memset(key, 'k', LARDER_KEY_LIMIT + 1);
	for (int compress = 0; compress < 2; compress++) {
		larder_config *cfg = th_config(64 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_max_key_bytes(cfg, LARDER_KEY_LIMIT), LARDER_OK);
		CHECK_RC(larder_config_set_max_key_bytes(cfg, LARDER_KEY_LIMIT + 1), LARDER_EINVAL);
		if (compress)
			REQUIRE_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		unsigned char v[5000], buf[5000];
		fill_text(v, sizeof v, 1);
		CHECK_RC(larder_put(c, key, LARDER_KEY_LIMIT, v, sizeof v, LARDER_TTL_NEVER),
			 LARDER_OK);
		CHECK_RC(larder_put(c, key, LARDER_KEY_LIMIT + 1, v, sizeof v, LARDER_TTL_NEVER),
			 LARDER_EKEYSIZE);
		for (unsigned i = 0; i < 500; i++) {
			char k[32];
			size_t kl = key_of(k, "c", i);
			CHECK_RC(larder_put(c, k, kl, v, i * 7, LARDER_TTL_NEVER), LARDER_OK);
		}
		size_t len = 0;
		CHECK_RC(larder_get(c, key, LARDER_KEY_LIMIT, buf, sizeof buf, &len), LARDER_OK);
		CHECK_EQ(len, sizeof v);
		CHECK_MEM(buf, v, sizeof v);
		CHECK(th_check_accounting(c, 10000, NULL, NULL));
		struct charges ch = {0};
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		while (larder_iter_next(it, charge_fn, &ch) == LARDER_OK)
			;
		larder_iter_close(it);
		CHECK_EQ(ch.count, 501);
		CHECK_EQ(ch.big_keys, 1);
		CHECK_EQ(ch.bytes, th_stat(c, LARDER_STAT_USED_BYTES));
		REQUIRE_RC(larder_save(c, path), LARDER_OK);
		larder_close(c);
		cfg = th_config(64 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_max_key_bytes(cfg, LARDER_KEY_LIMIT), LARDER_OK);
		c = th_open(cfg);
		REQUIRE(c);
		CHECK_RC(larder_load(c, path), LARDER_OK);
		memset(buf, 0, sizeof buf);
		CHECK_RC(larder_get(c, key, LARDER_KEY_LIMIT, buf, sizeof buf, &len), LARDER_OK);
		CHECK_EQ(len, sizeof v);
		CHECK_MEM(buf, v, sizeof v);
		larder_close(c);
	}
	free(key);
	unlink(path);
}

/* A given dictionary that carries zstd's dictionary magic but does not
 * parse: the open is refused with LARDER_EINVAL, nothing leaked. */
static void test_dictionary_given_malformed(void)
{
	unsigned char dict[256];
	fill_noise(dict, sizeof dict, 1);
	dict[0] = 0x37, dict[1] = 0xa4, dict[2] = 0x30, dict[3] = 0xec;
	larder_config *cfg = th_config(4 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
	REQUIRE_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, dict,
							    sizeof dict),
		   LARDER_OK);
	larder *c = (larder *)&c;
	CHECK_RC(larder_open(&c, cfg), LARDER_EINVAL);
	CHECK(c == NULL);
	larder_config_destroy(cfg);
}

/* ---- iteration ---------------------------------------------------------------- */


static void test_iter_errors_and_end(void)
{
	larder *c = th_open(th_config(4 * MiB));
	REQUIRE(c);
	larder_iter *it = (larder_iter *)&it;
	CHECK_RC(larder_iter_open(NULL, &it), LARDER_EINVAL);
	CHECK(it == NULL);
	CHECK_RC(larder_iter_open(c, NULL), LARDER_EINVAL);
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	int n = 0;
	CHECK_RC(larder_iter_next(NULL, count_nothing, &n), LARDER_EINVAL);
	CHECK_RC(larder_iter_next(it, NULL, &n), LARDER_EINVAL);
	for (int i = 0; i < 3; i++)
		CHECK_RC(larder_iter_next(it, count_nothing, &n), LARDER_MISS);
	/* A key written after the end is not handed out: the end is sticky. */
	CHECK_RC(larder_put(c, "late", 4, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_iter_next(it, count_nothing, &n), LARDER_MISS);
	CHECK_EQ(n, 0);
	larder_iter_close(it);
	larder_iter_close(NULL);
	larder_close(c);
}

enum { NSTAY = 3000, NCHURN = 6000 };

/* The NSTAY "stay" keys, each its own value; 0 after the first failure. */
static int put_stay(larder *c)
{
	char k[32];
	for (unsigned i = 0; i < NSTAY; i++) {
		size_t kl = key_of(k, "stay", i);
		if (!CHECK_RC(larder_put(c, k, kl, k, kl, LARDER_TTL_NEVER), LARDER_OK))
			return 0;
	}
	return 1;
}

struct walk {
	unsigned char stay[NSTAY];   /* times each stay:i was handed out */
	unsigned char churn[NCHURN]; /* times each churn:i was */
	int stray, bad_value, bad_ttl;
};

static void walk_fn(void *ctx, const void *key, size_t key_len, const void *value,
		    size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk *w = ctx;
	char buf[32];
	(void)entry_bytes;
	if (key_len >= sizeof buf) {
		w->stray++;
		return;
	}
	memcpy(buf, key, key_len);
	buf[key_len] = 0;
	unsigned i;
	if (sscanf(buf, "stay:%u", &i) == 1 && i < NSTAY) {
		w->stay[i]++;
		if (value_len != key_len || memcmp(value, key, key_len) != 0)
			w->bad_value++;
		if (ttl_ms != LARDER_TTL_NEVER)
			w->bad_ttl++;
	} else if (sscanf(buf, "churn:%u", &i) == 1 && i < NCHURN) {
		w->churn[i]++;
	} else {
		w->stray++;
	}
}

/* Keys left alone come out exactly once while, mid-walk, other keys are
 * written (the index grows), removed and rewritten, and the capacity is
 * cut and restored; no key comes out twice. Compressed and raw values. */
static void test_iter_exactly_once_across_changes(void)
{
	for (int compress = 0; compress < 2; compress++) {
		larder_config *cfg = th_config(64 * MiB);
		REQUIRE(cfg);
		if (compress)
			REQUIRE_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		char k[32];
		REQUIRE(put_stay(c));
		static struct walk w;
		memset(&w, 0, sizeof w);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		int rc, steps = 0;
		while ((rc = larder_iter_next(it, walk_fn, &w)) == LARDER_OK) {
			steps++;
			if (steps == NSTAY / 4)
				for (unsigned i = 0; i < NCHURN; i++) {
					size_t kl = key_of(k, "churn", i);
					REQUIRE_RC(larder_put(c, k, kl, "x", 1, LARDER_TTL_NEVER),
						   LARDER_OK);
				}
			if (steps == NSTAY / 2) {
				for (unsigned i = 0; i < NCHURN; i += 2) {
					size_t kl = key_of(k, "churn", i);
					CHECK_RC(larder_remove(c, k, kl), LARDER_OK);
					REQUIRE_RC(larder_put(c, k, kl, "y", 1, LARDER_TTL_NEVER),
						   LARDER_OK);
				}
				CHECK_RC(th_flush(c, 60000), LARDER_OK);
			}
		}
		CHECK_RC(rc, LARDER_MISS);
		larder_iter_close(it);
		for (unsigned i = 0; i < NSTAY; i++)
			if (!CHECK_EQ(w.stay[i], 1)) {
				fprintf(stderr, "  compress %d stay:%u\n", compress, i);
				break;
			}
		for (unsigned i = 0; i < NCHURN; i++)
			if (!CHECK_LE(w.churn[i], 1))
				break;
		CHECK_EQ(w.stray, 0);
		CHECK_EQ(w.bad_value, 0);
		CHECK_EQ(w.bad_ttl, 0);
		larder_close(c);
	}
}

/* A clear mid-walk: nothing written before it comes out after it. A
 * capacity cut mid-walk: nothing twice, nothing evicted comes out. */
static void test_iter_across_clear_and_cut(void)
{
	larder *c = th_open(th_config(64 * MiB));
	REQUIRE(c);
	char k[32];
	REQUIRE(put_stay(c));
	static struct walk w;
	memset(&w, 0, sizeof w);
	larder_iter *it;
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	int rc, steps = 0;
	while ((rc = larder_iter_next(it, walk_fn, &w)) == LARDER_OK)
		if (++steps == 100) {
			CHECK_RC(larder_clear(c), LARDER_OK);
			for (unsigned i = 0; i < 50; i++) {
				size_t kl = key_of(k, "churn", i);
				REQUIRE_RC(larder_put(c, k, kl, "x", 1, LARDER_TTL_NEVER), LARDER_OK);
			}
		}
	CHECK_RC(rc, LARDER_MISS);
	larder_iter_close(it);
	/* The 100 before the clear, none after it. */
	unsigned stays = 0;
	for (unsigned i = 0; i < NSTAY; i++)
		stays += w.stay[i];
	CHECK_EQ(stays, 100);
	for (unsigned i = 0; i < 50; i++)
		CHECK_LE(w.churn[i], 1);
	CHECK_EQ(w.stray, 0);

	/* The cut: to 64 KiB, then back. */
	REQUIRE(put_stay(c));
	memset(&w, 0, sizeof w);
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	steps = 0;
	while ((rc = larder_iter_next(it, walk_fn, &w)) == LARDER_OK)
		if (++steps == 100) {
			CHECK_RC(larder_set_capacity(c, 64 * KiB), LARDER_OK);
			CHECK_RC(th_flush(c, 60000), LARDER_OK);
			CHECK_RC(larder_set_capacity(c, 64 * MiB), LARDER_OK);
		}
	CHECK_RC(rc, LARDER_MISS);
	larder_iter_close(it);
	unsigned left = 0;
	for (unsigned i = 0; i < NSTAY; i++) {
		CHECK_LE(w.stay[i], 1);
		size_t kl = key_of(k, "stay", i);
		if (larder_contains(c, k, kl) == LARDER_OK) {
			left++;
			CHECK_EQ(w.stay[i], 1); /* live throughout: exactly once */
		}
	}
	stays = 0;
	for (unsigned i = 0; i < NSTAY; i++)
		stays += w.stay[i];
	CHECK_LE(stays, 100 + left);
	larder_close(c);
}

/* A cache of four shards whose index floor is lowered at the open (64
 * buckets), so that each shard's first table shrinks as soon as its count
 * stops growing for a pass; NULL when it cannot be opened. */
static larder *open_shrinking(void)
{
	larder_config *cfg = th_config(256 * MiB);
	if (cfg && !CHECK_RC(larder_config_set_shards(cfg, 4), LARDER_OK)) {
		larder_config_destroy(cfg);
		return NULL;
	}
	larder *c = th_open(cfg); /* NULL when cfg is */
	if (c)
		larder__test_index_floor(c, 64);
	return c;
}

/*
 * A shrink beside a writer drops no entry: with the floor lowered at the
 * open, the four maintainers' counts trail one writer's puts (their events
 * wait in its rings), and shrinks sized for a count of 1 or 2 while the
 * entries kept coming dropped as EVICTED those the smaller table had no
 * slot for (up to 288 of 3,000, in one round of 30 or more). No shrink
 * begins while the count grows (maint/resize.c, shrink_begin), and no key
 * is added while one runs (TABLE-X5): without that, a writer descheduled
 * for two passes (ThreadSanitizer on a loaded machine) came back to a
 * shrink and overfilled the small table.
 */
static void test_shrink_beside_a_writer_keeps_entries(void)
{
	enum { N = 3000, ROUNDS = 100 };
	for (unsigned round = 0; round < ROUNDS; round++) {
		larder *c = open_shrinking();
		REQUIRE(c);
		char k[32];
		for (unsigned i = 0; i < N; i++) {
			size_t kl = key_of(k, "keep", i);
			REQUIRE_RC(larder_put(c, k, kl, k, kl, LARDER_TTL_NEVER), LARDER_OK);
		}
		CHECK_RC(th_flush(c, 60000), LARDER_OK);
		if (!CHECK_EQ(th_stat(c, LARDER_STAT_EVICTIONS), 0) ||
		    !CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), N)) {
			printf("  round %u: %" PRIu64 " shrinks\n", round,
			       th_stat(c, LARDER_STAT_INDEX_SHRINKS));
			larder_close(c);
			return;
		}
		larder_close(c);
	}
}

/* One of test_shrink_beside_writers_keeps_entries' writers: N new keys
 * of its own ("w<id>:i"), each put checked. */
struct shrink_writer {
	larder *c;
	unsigned id, n, failed;
};

static void *shrink_writer_main(void *arg)
{
	struct shrink_writer *w = arg;
	char kind[8], k[32];
	snprintf(kind, sizeof(kind), "w%u", w->id);
	for (unsigned i = 0; i < w->n; i++) {
		size_t kl = key_of(k, kind, i);
		w->failed += larder_put(w->c, k, kl, k, kl, LARDER_TTL_NEVER) != LARDER_OK;
	}
	return NULL;
}

/*
 * TABLE-X5 with writers racing each other into shrinks: two threads put
 * new keys into four shards whose floor was lowered at the open, so each
 * shard's first table shrinks as soon as its count stops growing for a
 * pass, while the writers' keys keep coming. No entry may be dropped:
 * every key of both is there at the end, none was evicted. Without
 * TABLE-X5 the shrinks dropped keys (docs/memory.md, "The index").
 */
static void test_shrink_beside_writers_keeps_entries(void)
{
	enum { N = 2000, ROUNDS = 100, WRITERS = 2 };
	for (unsigned round = 0; round < ROUNDS; round++) {
		larder *c = open_shrinking();
		REQUIRE(c);
		struct shrink_writer w[WRITERS];
		pthread_t t[WRITERS];
		for (unsigned i = 0; i < WRITERS; i++) {
			w[i] = (struct shrink_writer){ c, i, N, 0 };
			REQUIRE(pthread_create(&t[i], NULL, shrink_writer_main, &w[i]) == 0);
		}
		for (unsigned i = 0; i < WRITERS; i++) {
			pthread_join(t[i], NULL);
			CHECK_EQ(w[i].failed, 0);
		}
		CHECK_RC(th_flush(c, 60000), LARDER_OK);
		unsigned missing = 0;
		char kind[8], k[32];
		for (unsigned i = 0; i < WRITERS; i++) {
			snprintf(kind, sizeof(kind), "w%u", i);
			for (unsigned j = 0; j < N; j++) {
				size_t kl = key_of(k, kind, j);
				missing += larder_contains(c, k, kl) != LARDER_OK;
			}
		}
		if (!CHECK_EQ(missing, 0) || !CHECK_EQ(th_stat(c, LARDER_STAT_EVICTIONS), 0) ||
		    !CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), WRITERS * N)) {
			printf("  round %u: %" PRIu64 " shrinks, %" PRIu64 " growths, %" PRIu64
			       " evictions, %" PRIu64 " entries\n",
			       round, th_stat(c, LARDER_STAT_INDEX_SHRINKS),
			       th_stat(c, LARDER_STAT_INDEX_RESIZES),
			       th_stat(c, LARDER_STAT_EVICTIONS), th_stat(c, LARDER_STAT_ENTRIES));
			larder_close(c);
			return;
		}
		larder_close(c);
	}
}

/* An index shrink mid-walk (the index floor lowered through the test seam,
 * so that a sparse index shrinks at test sizes): each key left alone comes
 * out exactly once, no key twice. The walk is at several points of the
 * home-key space when the shrink comes. */
static void test_iter_across_shrink(void)
{
	enum { NBIG = 40000 };
	const int at[] = {1, NSTAY / 3, NSTAY - 10};
	for (size_t a = 0; a < TH_COUNT(at); a++) {
		larder *c = th_open(th_config(256 * MiB));
		REQUIRE(c);
		char k[32];
		REQUIRE(put_stay(c));
		for (unsigned i = 0; i < NBIG; i++) {
			size_t kl = key_of(k, "gone", i);
			REQUIRE_RC(larder_put(c, k, kl, "g", 1, LARDER_TTL_NEVER), LARDER_OK);
		}
		/* The floor lowered only now, with every write applied: lowered
		 * at the open, it let the first table shrink while the four
		 * maintainers' counts trailed the writer, a shrink sized for a
		 * count of 1 or 2, which dropped the entries that did not fit
		 * as EVICTED (docs/memory.md, "The index"). */
		CHECK_RC(th_flush(c, 60000), LARDER_OK);
		larder__test_index_floor(c, 64);
		uint64_t shrinks = th_stat(c, LARDER_STAT_INDEX_SHRINKS);
		static struct walk w;
		memset(&w, 0, sizeof w);
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		int rc, steps = 0;
		while ((rc = larder_iter_next(it, walk_fn, &w)) == LARDER_OK) {
			/* "gone" keys are stray to walk_fn: count stays only. */
			if (++steps == at[a]) {
				for (unsigned i = 0; i < NBIG; i++) {
					size_t kl = key_of(k, "gone", i);
					CHECK_RC(larder_remove(c, k, kl), LARDER_OK);
				}
				/* Until the shrink is done: larder_flush waits for
				 * the removals, not for the shrink they call for, whose
				 * homes move a pass after it begins (TABLE-X5). */
				CHECK_EQ(th_quiesce(c, 60000), 0);
				CHECK_GT(th_stat(c, LARDER_STAT_INDEX_SHRINKS), shrinks);
			}
		}
		CHECK_RC(rc, LARDER_MISS);
		larder_iter_close(it);
		for (unsigned i = 0; i < NSTAY; i++)
			if (!CHECK_EQ(w.stay[i], 1)) {
				fprintf(stderr, "  shrink after %d: stay:%u handed out %u times\n",
					at[a], i, w.stay[i]);
				break;
			}
		CHECK_EQ(w.bad_value, 0);
		larder_close(c);
	}
}

/* Entries whose deadline passes mid-walk are not handed out; those handed
 * out carry 1..TTL ms. With expire-after-access, the walk extends nothing. */
struct ttl_walk {
	int shorts, longs, bad_ttl;
	uint64_t max_short_ttl;
};

static void ttl_fn(void *ctx, const void *key, size_t key_len, const void *value,
		   size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct ttl_walk *w = ctx;
	(void)value;
	(void)value_len;
	(void)entry_bytes;
	if (key_len > 6 && !memcmp(key, "short:", 6)) {
		w->shorts++;
		if (ttl_ms < 1 || ttl_ms > 100)
			w->bad_ttl++;
	} else {
		w->longs++;
		if (ttl_ms != LARDER_TTL_NEVER)
			w->bad_ttl++;
	}
}

static void test_iter_ttl_expiring_mid_walk(void)
{
	for (int access = 0; access < 2; access++) {
		static struct th_clock clk;
		th_clock_init(&clk, T0);
		larder_config *cfg = th_config(64 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
		if (access) {
			REQUIRE_RC(larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS),
				   LARDER_OK);
			REQUIRE_RC(larder_config_set_default_ttl_ms(cfg, 100), LARDER_OK);
		}
		larder *c = th_open(cfg);
		REQUIRE(c);
		char k[32];
		for (unsigned i = 0; i < 2000; i++) {
			size_t kl = key_of(k, "short", i);
			REQUIRE_RC(larder_put(c, k, kl, "s", 1, 100), LARDER_OK);
			kl = key_of(k, "long", i);
			REQUIRE_RC(larder_put(c, k, kl, "l", 1, LARDER_TTL_NEVER), LARDER_OK);
		}
		struct ttl_walk w = {0};
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		int rc, steps = 0;
		while ((rc = larder_iter_next(it, ttl_fn, &w)) == LARDER_OK)
			if (++steps == 1000)
				th_clock_advance(&clk, 100); /* every short one at its deadline */
		CHECK_RC(rc, LARDER_MISS);
		larder_iter_close(it);
		CHECK_EQ(w.longs, 2000);
		CHECK_LE(w.shorts, 1000);
		CHECK_EQ(w.bad_ttl, 0);
		larder_close(c);
	}
}

/* ---- snapshots ----------------------------------------------------------------- */

/* A config of the round trip: shards, policy, expiry, compression. */
struct snap_cfg {
	unsigned shards;
	enum larder_policy policy;
	enum larder_expiry expiry;
	int compress; /* 0 off, 1 LZ4 alone, 2 trained, 3 given */
};

static larder *open_snap_cfg(const struct snap_cfg *s, struct th_clock *clk)
{
	larder_config *cfg = th_config(64 * MiB);
	if (!cfg)
		return NULL;
	int ok = larder_config_set_shards(cfg, s->shards) == LARDER_OK &&
		 larder_config_set_policy(cfg, s->policy) == LARDER_OK &&
		 larder_config_set_expiry(cfg, s->expiry) == LARDER_OK &&
		 larder_config_set_clock(cfg, th_clock_fn, clk) == LARDER_OK;
	if (s->expiry == LARDER_EXPIRE_AFTER_ACCESS)
		ok = ok && larder_config_set_default_ttl_ms(cfg, 3600000) == LARDER_OK;
	if (s->compress) {
		static unsigned char dict[4096];
		fill_text(dict, sizeof dict, 0);
		ok = ok && larder_config_set_compression(cfg, 32, 5) == LARDER_OK;
		if (s->compress == 1)
			ok = ok && larder_config_set_compression_dictionary(
					   cfg, LARDER_DICTIONARY_NONE, NULL, 0) == LARDER_OK;
		if (s->compress == 3)
			ok = ok && larder_config_set_compression_dictionary(
					   cfg, LARDER_DICTIONARY_GIVEN, dict, sizeof dict) ==
					   LARDER_OK;
	}
	if (!CHECK(ok)) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return th_open(cfg);
}

enum { NSNAP = 600 };

/* Key i: value of 1 + i % 900 bytes of text (i % 3 == 0: noise), a TTL of
 * 10^6 + i ms for odd i, none for even. */
static size_t snap_value(unsigned i, unsigned char *v)
{
	size_t n = i == 0 ? 0 : 1 + i % 900;
	if (i % 3 == 0)
		fill_noise(v, n, i);
	else
		fill_text(v, n, i);
	return n;
}

static void fill_snap(larder *c)
{
	unsigned char v[1024];
	char k[32];
	for (unsigned i = 0; i < NSNAP; i++) {
		size_t kl = key_of(k, "snap", i), n = snap_value(i, v);
		CHECK_RC(larder_put(c, k, kl, v, n, i % 2 ? 1000000 + i : LARDER_TTL_NEVER),
			 LARDER_OK);
	}
}

/* Every key back, with its value, and its TTL no longer than saved. */
static int check_snap(larder *c, const char *what)
{
	unsigned char v[1024], buf[1024];
	char k[32];
	for (unsigned i = 0; i < NSNAP; i++) {
		size_t kl = key_of(k, "snap", i), n = snap_value(i, v), len = 0;
		uint64_t ttl = 0;
		if (!CHECK_RC(larder_peek(c, k, kl, buf, sizeof buf, &len), LARDER_OK) ||
		    !CHECK_EQ(len, n) || !CHECK_MEM(buf, v, n) ||
		    !CHECK_RC(larder_ttl_remaining(c, k, kl, &ttl), LARDER_OK) ||
		    !(i % 2 ? CHECK(ttl >= 1 && ttl <= 1000000 + i)
			    : CHECK_EQ(ttl, LARDER_TTL_NEVER))) {
			fprintf(stderr, "  %s: key %u\n", what, i);
			return 0;
		}
	}
	return 1;
}

/* Saved from each configuration, loaded into another. */
static void test_snapshot_round_trip_every_config(void)
{
	static const struct snap_cfg cfgs[] = {
		{1, LARDER_POLICY_DEFAULT, LARDER_EXPIRE_AFTER_WRITE, 0},
		{2, LARDER_POLICY_LRU, LARDER_EXPIRE_AFTER_ACCESS, 1},
		{4, LARDER_POLICY_ARC, LARDER_EXPIRE_AFTER_WRITE, 2},
		{1, LARDER_POLICY_WTINYLFU, LARDER_EXPIRE_AFTER_ACCESS, 3},
		{2, LARDER_POLICY_FIFO, LARDER_EXPIRE_AFTER_WRITE, 3},
		{4, LARDER_POLICY_S3FIFO, LARDER_EXPIRE_AFTER_ACCESS, 0},
		{1, LARDER_POLICY_WTINYLFU_TUNED, LARDER_EXPIRE_AFTER_WRITE, 1},
		{2, LARDER_POLICY_S3FIFO_TUNED, LARDER_EXPIRE_AFTER_WRITE, 2},
	};
	char path[128];
	REQUIRE(snap_path(path, "round.snap"));
	static struct th_clock clk;
	th_clock_init(&clk, T0);
	for (size_t a = 0; a < TH_COUNT(cfgs); a++) {
		larder *src = open_snap_cfg(&cfgs[a], &clk);
		REQUIRE(src);
		fill_snap(src);
		CHECK_RC(larder_save(src, path), LARDER_OK);
		larder_close(src);
		const struct snap_cfg *b = &cfgs[(a + 3) % TH_COUNT(cfgs)];
		larder *dst = open_snap_cfg(b, &clk);
		REQUIRE(dst);
		CHECK_RC(larder_load(dst, path), LARDER_OK);
		char what[64];
		snprintf(what, sizeof what, "config %zu into %zu", a, (a + 3) % TH_COUNT(cfgs));
		check_snap(dst, what);
		CHECK_RC(th_flush(dst, 60000), LARDER_OK);
		CHECK_EQ(th_stat(dst, LARDER_STAT_ENTRIES), NSNAP);
		/* Saved again from the loaded cache: the same entries. */
		CHECK_RC(larder_save(dst, path), LARDER_OK);
		larder_close(dst);
		dst = open_snap_cfg(&cfgs[a], &clk);
		REQUIRE(dst);
		CHECK_RC(larder_load(dst, path), LARDER_OK);
		check_snap(dst, what);
		larder_close(dst);
	}
	unlink(path);
}

/* Into and out of a pooled cache, with and without compression. */
static larder_pool *make_pool(uint64_t budget, uint64_t interval_ms);
static larder *open_member(larder_pool *pool, double min_share, double max_share, int *rc);

static void test_snapshot_pool_member(void)
{
	char path[128];
	REQUIRE(snap_path(path, "member.snap"));
	static struct th_clock clk;
	th_clock_init(&clk, T0);
	larder_pool *pool = make_pool(16 * MiB, 10);
	REQUIRE(pool);
	int rc;
	larder *m = open_member(pool, 0.5, 1, &rc);
	REQUIRE_RC(rc, LARDER_OK);
	struct snap_cfg plain = {1, LARDER_POLICY_DEFAULT, LARDER_EXPIRE_AFTER_WRITE, 2};
	larder *src = open_snap_cfg(&plain, &clk);
	REQUIRE(src);
	fill_snap(src);
	REQUIRE_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);
	CHECK_RC(larder_load(m, path), LARDER_OK);
	/* The member's clock is the default one: the TTLs are checked as
	 * "no longer than saved", which holds on any clock. */
	check_snap(m, "into a member");
	REQUIRE_RC(larder_save(m, path), LARDER_OK);
	larder_close(m);
	larder *dst = open_snap_cfg(&plain, &clk);
	REQUIRE(dst);
	CHECK_RC(larder_load(dst, path), LARDER_OK);
	check_snap(dst, "out of a member");
	larder_close(dst);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
	unlink(path);
}

/* Values larger than the save's 1 MiB buffers, compressed and raw, and
 * the value limit's top (LARDER_VALUE_LIMIT) and one over it. */
static void test_snapshot_large_values(void)
{
	char path[128];
	REQUIRE(snap_path(path, "large.snap"));
	const size_t n = 3 * MiB;
	unsigned char *v = malloc(n), *buf = malloc(n);
	REQUIRE(v && buf);
	for (int compress = 0; compress < 2; compress++) {
		larder_config *cfg = th_config(256 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_max_value_bytes(cfg, 4 * MiB), LARDER_OK);
		if (compress)
			REQUIRE_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		for (unsigned i = 0; i < 4; i++) {
			char k[32];
			size_t kl = key_of(k, "large", i);
			if (i % 2)
				fill_noise(v, n - i, i);
			else
				fill_text(v, n - i, i);
			REQUIRE_RC(larder_put(c, k, kl, v, n - i, LARDER_TTL_NEVER), LARDER_OK);
		}
		REQUIRE_RC(larder_save(c, path), LARDER_OK);
		larder_close(c);
		cfg = th_config(256 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_max_value_bytes(cfg, 4 * MiB), LARDER_OK);
		c = th_open(cfg);
		REQUIRE(c);
		CHECK_RC(larder_load(c, path), LARDER_OK);
		for (unsigned i = 0; i < 4; i++) {
			char k[32];
			size_t kl = key_of(k, "large", i), len = 0;
			if (i % 2)
				fill_noise(v, n - i, i);
			else
				fill_text(v, n - i, i);
			CHECK_RC(larder_get(c, k, kl, buf, n, &len), LARDER_OK);
			CHECK_EQ(len, n - i);
			CHECK_MEM(buf, v, n - i);
		}
		larder_close(c);
	}
	free(v);
	free(buf);
	/* One over the value limit: refused before a byte of it is read (its
	 * pages are never touched). */
	larder_config *cfg = th_config((uint64_t)16 << 30);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_max_value_bytes(cfg, LARDER_VALUE_LIMIT), LARDER_OK);
	CHECK_RC(larder_config_set_max_value_bytes(cfg, LARDER_VALUE_LIMIT + 1), LARDER_EINVAL);
	REQUIRE_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	unsigned char *huge = calloc(1, LARDER_VALUE_LIMIT + 1);
	REQUIRE(huge);
	CHECK_RC(larder_put(c, "huge", 4, huge, LARDER_VALUE_LIMIT + 1, LARDER_TTL_NEVER),
		 LARDER_EVALSIZE);
	free(huge);
	larder_close(c);
	unlink(path);
}

/* A snapshot of 16 MiB or more that fits whole (loaded by several
 * threads) still skips the entries over the cache's entry limit, and
 * takes every other one. */
static void test_snapshot_parallel_skips_over_limit(void)
{
	char path[128];
	REQUIRE(snap_path(path, "parallel.snap"));
	const size_t big = 9 * MiB; /* over 1/8 of 64 MiB */
	unsigned char *v = malloc(big);
	REQUIRE(v);
	fill_noise(v, big, 1);
	larder_config *cfg = th_config(256 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_max_value_bytes(cfg, 16 * MiB), LARDER_OK);
	larder *src = th_open(cfg);
	REQUIRE(src);
	CHECK_RC(larder_put(src, "big1", 4, v, big, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(src, "big2", 4, v + 1, big - 1, LARDER_TTL_NEVER), LARDER_OK);
	char k[32];
	for (unsigned i = 0; i < 3000; i++) {
		size_t kl = key_of(k, "par", i);
		CHECK_RC(larder_put(src, k, kl, v + i, 200, LARDER_TTL_NEVER), LARDER_OK);
	}
	REQUIRE_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);
	for (int compress = 0; compress < 2; compress++) {
		cfg = th_config(64 * MiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_max_value_bytes(cfg, 16 * MiB), LARDER_OK);
		if (compress)
			REQUIRE_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		CHECK_RC(larder_load(c, path), LARDER_OK);
		CHECK_RC(larder_contains(c, "big1", 4), LARDER_MISS);
		CHECK_RC(larder_contains(c, "big2", 4), LARDER_MISS);
		unsigned found = 0;
		for (unsigned i = 0; i < 3000; i++) {
			size_t kl = key_of(k, "par", i);
			found += larder_contains(c, k, kl) == LARDER_OK;
		}
		CHECK_EQ(found, 3000);
		CHECK(th_check_accounting(c, 10000, NULL, NULL));
		larder_close(c);
	}
	free(v);
	unlink(path);
}

/* The process's peak resident set in KiB since the last reset, and the reset
 * (proc(5): clear_refs "5"); -1 where /proc does not have them. */
static long peak_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	if (!f)
		return -1;
	char line[256];
	long kib = -1;
	while (fgets(line, sizeof line, f))
		if (!strncmp(line, "VmHWM:", 6))
			kib = atol(line + 6);
	fclose(f);
	return kib;
}

static int reset_peak_rss(void)
{
	int fd = open("/proc/self/clear_refs", O_WRONLY);
	if (fd < 0)
		return -1;
	int ok = write(fd, "5", 1) == 1;
	close(fd);
	return ok ? 0 : -1;
}

/* A save of large values holds its buffers to about their 1 MiB each (a
 * record larger than a quarter of a buffer grows it), whatever one stretch
 * of the walk holds (ITER-I5 in core/iter.c): 400 values of 256 KiB in one shard's smallest index are
 * stretches of about 6 MiB, which the save copied whole into a buffer grown
 * to twice that (13-26 MiB more at its peak). */
static void test_snapshot_save_memory_bounded(void)
{
	char path[128];
	REQUIRE(snap_path(path, "bounded.snap"));
	larder_config *cfg = th_config_one_shard(256 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_expected_entries(cfg, 0), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	const size_t n = 256 * KiB;
	unsigned char *v = malloc(n);
	REQUIRE(v);
	for (unsigned i = 0; i < 400; i++) {
		char k[32];
		size_t kl = key_of(k, "bounded", i);
		fill_noise(v, n, i);
		REQUIRE_RC(larder_put(c, k, kl, v, n, LARDER_TTL_NEVER), LARDER_OK);
	}
	free(v);
	CHECK_RC(th_flush(c, 60000), LARDER_OK);
	if (reset_peak_rss() != 0 || peak_rss_kib() < 0) {
		printf("  no /proc/self/clear_refs: not measured\n");
	} else {
		long before = peak_rss_kib();
		CHECK_RC(larder_save(c, path), LARDER_OK);
		long grew = peak_rss_kib() - before;
		printf("  the save's peak: %ld KiB over the cache's\n", grew);
		CHECK_LT(grew, 8 * 1024);
	}
	larder *d = th_open(th_config(256 * MiB));
	REQUIRE(d);
	CHECK_RC(larder_load(d, path), LARDER_OK);
	CHECK_RC(th_flush(d, 60000), LARDER_OK);
	CHECK_EQ(th_stat(d, LARDER_STAT_ENTRIES), 400);
	larder_close(d);
	larder_close(c);
	unlink(path);
}

static unsigned char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *d = malloc((size_t)n + 1);
	if (d && fread(d, 1, (size_t)n, f) != (size_t)n) {
		free(d);
		d = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return d;
}

static int write_file(const char *path, const void *d, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return -1;
	int ok = fwrite(d, 1, len, f) == len;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* The live cache's state: its entries and counters that a refused load
 * must leave as they were. */
static int live_intact(larder *c)
{
	unsigned char buf[8];
	size_t len;
	return th_flush(c, 60000) == LARDER_OK && th_stat(c, LARDER_STAT_ENTRIES) == 2 &&
	       larder_get(c, "live1", 5, buf, sizeof buf, &len) == LARDER_OK && len == 1 &&
	       buf[0] == '1' && larder_get(c, "live2", 5, buf, sizeof buf, &len) == LARDER_OK &&
	       len == 1 && buf[0] == '2';
}

/* Every truncation and every one-byte change of a small snapshot is
 * refused with LARDER_EFORMAT or LARDER_ECORRUPT, nothing written; foreign
 * files and bad paths get their documented codes. */
static void test_snapshot_damaged_files(void)
{
	char path[128], bad[160];
	REQUIRE(snap_path(path, "damaged.snap"));
	snprintf(bad, sizeof bad, "%s.bad", path);
	larder *src = th_open(th_config(4 * MiB));
	REQUIRE(src);
	CHECK_RC(larder_put(src, "a", 1, "alpha", 5, LARDER_TTL_NEVER), LARDER_OK);
	/* A deadline (saved and loaded with the entry) far beyond the test's
	 * length: the damaged loads below take seconds under load, and an
	 * entry past its deadline is rightly skipped by the last load. */
	CHECK_RC(larder_put(src, "bb", 2, "", 0, 3600 * 1000), LARDER_OK);
	CHECK_RC(larder_put(src, "ccc", 3, "gamma!", 6, LARDER_TTL_NEVER), LARDER_OK);
	REQUIRE_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);
	size_t len = 0;
	unsigned char *d = read_file(path, &len);
	REQUIRE(d);
	larder *c = th_open(th_config(4 * MiB));
	REQUIRE(c);
	CHECK_RC(larder_put(c, "live1", 5, "1", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(c, "live2", 5, "2", 1, LARDER_TTL_NEVER), LARDER_OK);
	for (size_t n = 0; n < len; n++) {
		REQUIRE(write_file(bad, d, n) == 0);
		int rc = larder_load(c, bad);
		if (!CHECK(rc == LARDER_EFORMAT || rc == LARDER_ECORRUPT)) {
			fprintf(stderr, "  truncated to %zu of %zu: %s\n", n, len,
				larder_strerror(rc));
			break;
		}
	}
	REQUIRE(live_intact(c));
	for (size_t at = 0; at < len; at++) {
		for (unsigned bit = 0; bit < 8; bit += 7) {
			d[at] ^= (unsigned char)(1u << bit);
			int w = write_file(bad, d, len);
			d[at] ^= (unsigned char)(1u << bit);
			REQUIRE(w == 0);
			int rc = larder_load(c, bad);
			if (!CHECK(rc == LARDER_EFORMAT || rc == LARDER_ECORRUPT)) {
				fprintf(stderr, "  byte %zu bit %u of %zu: %s\n", at, bit, len,
					larder_strerror(rc));
				at = len;
				break;
			}
		}
	}
	/* A byte appended after the trailer. */
	unsigned char *longer = malloc(len + 1);
	REQUIRE(longer);
	memcpy(longer, d, len);
	longer[len] = 0;
	REQUIRE(write_file(bad, longer, len + 1) == 0);
	int rc = larder_load(c, bad);
	CHECK(rc == LARDER_EFORMAT || rc == LARDER_ECORRUPT);
	free(longer);
	CHECK(live_intact(c));
	/* Foreign files and paths. */
	REQUIRE(write_file(bad, "hello, world\n", 13) == 0);
	CHECK_RC(larder_load(c, bad), LARDER_EFORMAT);
	REQUIRE(write_file(bad, "LARDSNAP", 8) == 0);
	CHECK_RC(larder_load(c, bad), LARDER_ECORRUPT);
	CHECK_RC(larder_load(c, tmp_dir), LARDER_EFORMAT);
	snprintf(bad, sizeof bad, "%s/none/x.snap", tmp_dir);
	CHECK_RC(larder_load(c, bad), LARDER_ESYS);
	CHECK_RC(larder_save(c, bad), LARDER_ESYS);
	CHECK_RC(larder_save(c, tmp_dir), LARDER_ESYS);
	CHECK_RC(larder_load(NULL, path), LARDER_EINVAL);
	CHECK_RC(larder_load(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_save(NULL, path), LARDER_EINVAL);
	CHECK_RC(larder_save(c, NULL), LARDER_EINVAL);
	CHECK_RC(larder_save(c, ""), LARDER_EINVAL);
	CHECK(live_intact(c));
	/* The undamaged file loads. */
	CHECK_RC(larder_load(c, path), LARDER_OK);
	size_t vlen = 0;
	unsigned char buf[8];
	CHECK_RC(larder_get(c, "ccc", 3, buf, sizeof buf, &vlen), LARDER_OK);
	CHECK_EQ(vlen, 6);
	CHECK_RC(larder_get(c, "bb", 2, buf, sizeof buf, &vlen), LARDER_OK);
	CHECK_EQ(vlen, 0);
	free(d);
	snprintf(bad, sizeof bad, "%s.bad", path);
	unlink(bad);
	unlink(path);
	larder_close(c);
}

/* Into a smaller cache: entries over its entry limit (1/8 of capacity) or
 * its key and value limits are skipped, the rest taken up to capacity; the
 * load succeeds and stays within the capacity. */
static void test_snapshot_into_smaller_cache(void)
{
	enum { NSMALL = 1200 };
	char path[128];
	REQUIRE(snap_path(path, "small.snap"));
	for (int compress = 0; compress < 2; compress++) {
		larder *src = th_open(th_config(64 * MiB));
		REQUIRE(src);
		unsigned char *v = malloc(20 * KiB);
		REQUIRE(v);
		char k[32];
		for (unsigned i = 0; i < NSMALL; i++) {
			size_t kl = key_of(k, i % 4 ? "small" : "big", i);
			size_t n = i % 4 ? 100 : 9 * KiB; /* over 1/8 of 64 KiB */
			fill_noise(v, n, i);
			REQUIRE_RC(larder_put(src, k, kl, v, n, LARDER_TTL_NEVER), LARDER_OK);
		}
		/* A key of 40 bytes and a value of 11 KiB: over the target's limits. */
		CHECK_RC(larder_put(src, "a-key-of-forty-bytes-xxxxxxxxxxxxxxxxxxx", 40, "v", 1,
				    LARDER_TTL_NEVER),
			 LARDER_OK);
		CHECK_RC(larder_put(src, "wide", 4, v, 11 * KiB, LARDER_TTL_NEVER), LARDER_OK);
		REQUIRE_RC(larder_save(src, path), LARDER_OK);
		larder_close(src);
		larder_config *cfg = th_config(64 * KiB);
		REQUIRE(cfg);
		REQUIRE_RC(larder_config_set_max_key_bytes(cfg, 39), LARDER_OK);
		REQUIRE_RC(larder_config_set_max_value_bytes(cfg, 10 * KiB), LARDER_OK);
		if (compress)
			REQUIRE_RC(larder_config_set_compression(cfg, 1, 0), LARDER_OK);
		larder *c = th_open(cfg);
		REQUIRE(c);
		CHECK_RC(larder_load(c, path), LARDER_OK);
		CHECK_RC(th_flush(c, 60000), LARDER_OK);
		uint64_t entries = th_stat(c, LARDER_STAT_ENTRIES);
		CHECK_GT(entries, 0);
		CHECK_LT(entries, NSMALL * 3 / 4); /* not all of them fit */
		/* Filled to capacity, within one small entry's charge. */
		CHECK_LE(th_stat(c, LARDER_STAT_USED_BYTES), 64 * KiB);
		CHECK_GT(th_stat(c, LARDER_STAT_USED_BYTES), 64 * KiB - 512);
		CHECK_EQ(th_stat(c, LARDER_STAT_EVICTIONS), 0);
		unsigned smalls = 0;
		for (unsigned i = 0; i < NSMALL; i++) {
			size_t kl = key_of(k, i % 4 ? "small" : "big", i);
			int rc = larder_contains(c, k, kl);
			if (i % 4 == 0)
				CHECK_RC(rc, LARDER_MISS);
			else
				smalls += rc == LARDER_OK;
		}
		CHECK_EQ(smalls, entries);
		CHECK_RC(larder_contains(c, "a-key-of-forty-bytes-xxxxxxxxxxxxxxxxxxx", 40),
			 LARDER_EKEYSIZE);
		CHECK_RC(larder_contains(c, "wide", 4), LARDER_MISS);
		CHECK(th_check_accounting(c, 10000, NULL, NULL));
		free(v);
		larder_close(c);
	}
	unlink(path);
}

/* TTLs count down by the wall-clock time since the save: those that ran
 * out meanwhile are dropped, the others come back shortened. An empty
 * snapshot loads as nothing. */
static void test_snapshot_ttl_ran_out_while_saved(void)
{
	char path[128];
	REQUIRE(snap_path(path, "ttl.snap"));
	static struct th_clock clk;
	th_clock_init(&clk, T0);
	larder_config *cfg = th_config(4 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
	larder *src = th_open(cfg);
	REQUIRE(src);
	CHECK_RC(larder_put(src, "short", 5, "s", 1, 1000), LARDER_OK);
	CHECK_RC(larder_put(src, "long", 4, "l", 1, 100000), LARDER_OK);
	CHECK_RC(larder_put(src, "never", 5, "n", 1, LARDER_TTL_NEVER), LARDER_OK);
	REQUIRE_RC(larder_save(src, path), LARDER_OK);
	larder_close(src);
	size_t len = 0;
	unsigned char *d = read_file(path, &len);
	REQUIRE(d);
	uint64_t saved_ms;
	memcpy(&saved_ms, d + 16, 8); /* the header's save time (little-endian hosts) */
	larder *c = th_open(th_config(4 * MiB));
	REQUIRE(c);
	CHECK_RC(larder__snapshot_load_mem(c, d, len, saved_ms + 50000), LARDER_OK);
	uint64_t ttl = 0;
	CHECK_RC(larder_contains(c, "short", 5), LARDER_MISS);
	CHECK_RC(larder_ttl_remaining(c, "long", 4, &ttl), LARDER_OK);
	CHECK(ttl > 40000 && ttl <= 50000);
	CHECK_RC(larder_ttl_remaining(c, "never", 5, &ttl), LARDER_OK);
	CHECK_EQ(ttl, LARDER_TTL_NEVER);
	/* A clock set backwards counts as no time. */
	CHECK_RC(larder__snapshot_load_mem(c, d, len, saved_ms - 50000), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "short", 5, &ttl), LARDER_OK);
	CHECK(ttl >= 1 && ttl <= 1000);
	free(d);
	larder_close(c);

	larder *empty = th_open(th_config(4 * MiB));
	REQUIRE(empty);
	CHECK_RC(larder_save(empty, path), LARDER_OK);
	CHECK_RC(larder_load(empty, path), LARDER_OK);
	CHECK_RC(th_flush(empty, 60000), LARDER_OK);
	CHECK_EQ(th_stat(empty, LARDER_STAT_ENTRIES), 0);
	larder_close(empty);
	unlink(path);
}

/* A walk and a save are not reads (no hit or miss counted, no deadline
 * extended, also with expire-after-access); a load counts its writes and
 * reports the values it overwrites as REPLACED. */
struct causes {
	_Atomic int n[5];
};

static void count_cause(void *ctx, const void *key, size_t key_len, const void *value,
			size_t value_len, enum larder_cause cause)
{
	struct causes *cs = ctx;
	(void)key;
	(void)key_len;
	(void)value;
	(void)value_len;
	atomic_fetch_add(&cs->n[cause], 1);
}

static void test_walk_and_save_are_not_reads(void)
{
	char path[128];
	REQUIRE(snap_path(path, "notread.snap"));
	static struct th_clock clk;
	th_clock_init(&clk, T0);
	static struct causes cs;
	memset(&cs, 0, sizeof cs);
	larder_config *cfg = th_config(4 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_clock(cfg, th_clock_fn, &clk), LARDER_OK);
	REQUIRE_RC(larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS), LARDER_OK);
	REQUIRE_RC(larder_config_set_default_ttl_ms(cfg, 10000), LARDER_OK);
	REQUIRE_RC(larder_config_set_compression(cfg, 16, 0), LARDER_OK);
	REQUIRE_RC(larder_config_set_removal_listener(cfg, count_cause, &cs), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	unsigned char v[256];
	char k[32];
	for (unsigned i = 0; i < 100; i++) {
		size_t kl = key_of(k, "r", i);
		fill_text(v, sizeof v, i);
		REQUIRE_RC(larder_put(c, k, kl, v, sizeof v, LARDER_TTL_DEFAULT), LARDER_OK);
	}
	th_clock_advance(&clk, 9000);
	uint64_t hits = th_stat(c, LARDER_STAT_HITS), misses = th_stat(c, LARDER_STAT_MISSES);
	int n = 0;
	larder_iter *it;
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	while (larder_iter_next(it, count_nothing, &n) == LARDER_OK)
		;
	larder_iter_close(it);
	CHECK_EQ(n, 100);
	REQUIRE_RC(larder_save(c, path), LARDER_OK);
	CHECK_EQ(th_stat(c, LARDER_STAT_HITS), hits);
	CHECK_EQ(th_stat(c, LARDER_STAT_MISSES), misses);
	uint64_t ttl = 0;
	CHECK_RC(larder_ttl_remaining(c, "r:00007", 7, &ttl), LARDER_OK);
	CHECK_LE(ttl, 1000);
	/* The load overwrites all 100 (REPLACED) and counts 100 writes. */
	CHECK_RC(th_flush(c, 60000), LARDER_OK);
	uint64_t writes = th_stat(c, LARDER_STAT_WRITES);
	CHECK_RC(larder_load(c, path), LARDER_OK);
	CHECK_RC(th_flush(c, 60000), LARDER_OK);
	CHECK_EQ(th_stat(c, LARDER_STAT_WRITES), writes + 100);
	CHECK_EQ(th_stat(c, LARDER_STAT_REPLACEMENTS), 100);
	CHECK_EQ(atomic_load(&cs.n[LARDER_CAUSE_REPLACED]), 100);
	CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 100);
	CHECK_RC(larder_ttl_remaining(c, "r:00007", 7, &ttl), LARDER_OK);
	CHECK_LE(ttl, 1000);
	/* After the saved TTL, gone, even though the default TTL is longer. */
	th_clock_advance(&clk, 1000);
	CHECK_RC(larder_contains(c, "r:00007", 7), LARDER_MISS);
	larder_close(c);
	unlink(path);
}

/* Cursors, saves and loads from inside a removal listener and a read
 * callback, on the cache they were called for: each completes. */
struct inside {
	larder *c;
	char path[128];
	_Atomic int walked, saved, loaded, calls;
};

static void inside_work(struct inside *in)
{
	int n = 0;
	larder_iter *it;
	if (larder_iter_open(in->c, &it) == LARDER_OK) {
		while (larder_iter_next(it, count_nothing, &n) == LARDER_OK)
			;
		larder_iter_close(it);
		atomic_fetch_add(&in->walked, n > 0);
	}
	atomic_fetch_add(&in->saved, larder_save(in->c, in->path) == LARDER_OK);
	int rc = larder_load(in->c, in->path);
	atomic_fetch_add(&in->loaded, rc == LARDER_OK || rc == LARDER_EBUSY);
	atomic_fetch_add(&in->calls, 1);
}

static void inside_listener(void *ctx, const void *key, size_t key_len, const void *value,
			    size_t value_len, enum larder_cause cause)
{
	(void)value;
	(void)value_len;
	if (cause == LARDER_CAUSE_EXPLICIT && key_len == 4 && !memcmp(key, "kick", 4))
		inside_work(ctx);
}

static void inside_read(void *ctx, const void *value, size_t value_len)
{
	(void)value;
	(void)value_len;
	inside_work(ctx);
}

static void test_iter_save_load_reentrant(void)
{
	static struct inside in;
	memset(&in, 0, sizeof in);
	REQUIRE(snap_path(in.path, "inside.snap"));
	larder_config *cfg = th_config(4 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 16, 0), LARDER_OK);
	REQUIRE_RC(larder_config_set_removal_listener(cfg, inside_listener, &in), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	in.c = c;
	unsigned char v[256];
	char k[32];
	for (unsigned i = 0; i < 200; i++) {
		size_t kl = key_of(k, "in", i);
		fill_text(v, sizeof v, i);
		REQUIRE_RC(larder_put(c, k, kl, v, sizeof v, LARDER_TTL_NEVER), LARDER_OK);
	}
	REQUIRE_RC(larder_put(c, "kick", 4, "x", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_get_with(c, "in:00001", 8, inside_read, &in), LARDER_OK);
	CHECK_RC(larder_remove(c, "kick", 4), LARDER_OK);
	CHECK_RC(th_flush(c, 60000), LARDER_OK);
	CHECK_EQ(atomic_load(&in.calls), 2);
	CHECK_EQ(atomic_load(&in.walked), 2);
	CHECK_EQ(atomic_load(&in.saved), 2);
	CHECK_EQ(atomic_load(&in.loaded), 2);
	unsigned char buf[256];
	size_t len = 0;
	fill_text(v, sizeof v, 5);
	CHECK_RC(larder_get(c, "in:00005", 8, buf, sizeof buf, &len), LARDER_OK);
	CHECK_MEM(buf, v, sizeof v);
	larder_close(c);
	unlink(in.path);
}

/* ---- pools ---------------------------------------------------------------------- */

static larder_pool *make_pool(uint64_t budget, uint64_t interval_ms)
{
	larder_pool_config *pc = NULL;
	if (!CHECK_RC(larder_pool_config_create(&pc), LARDER_OK))
		return NULL;
	larder_pool *pool = NULL;
	if (CHECK_RC(larder_pool_config_set_budget(pc, budget), LARDER_OK) &&
	    CHECK_RC(larder_pool_config_set_interval_ms(pc, interval_ms), LARDER_OK))
		CHECK_RC(larder_pool_create(&pool, pc), LARDER_OK);
	larder_pool_config_destroy(pc);
	return pool;
}

static larder *open_member(larder_pool *pool, double min_share, double max_share, int *rc)
{
	larder_config *cfg = th_config_one_shard(64 * KiB);
	larder *c = NULL;
	/* th_config sets a capacity; a pooled config must not have one. */
	larder_config_destroy(cfg);
	if (larder_config_create(&cfg) != LARDER_OK)
		return NULL;
	*rc = larder_config_set_pool(cfg, pool);
	if (*rc == LARDER_OK)
		*rc = larder_config_set_pool_shares(cfg, min_share, max_share);
	if (*rc == LARDER_OK)
		*rc = larder_open(&c, cfg);
	larder_config_destroy(cfg);
	return c;
}

static void test_pool_errors_and_states(void)
{
	larder_pool_config *pc = NULL;
	larder_pool *pool = (larder_pool *)&pool;
	CHECK_RC(larder_pool_config_create(NULL), LARDER_EINVAL);
	REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
	CHECK_RC(larder_pool_config_set_budget(NULL, MiB), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, MiB - 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_budget(pc, (uint64_t)1 << 60), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_interval_ms(pc, 60001), LARDER_EINVAL);
	CHECK_RC(larder_pool_config_set_interval_ms(NULL, 100), LARDER_EINVAL);
	CHECK_RC(larder_pool_create(NULL, pc), LARDER_EINVAL);
	CHECK_RC(larder_pool_create(&pool, NULL), LARDER_EINVAL);
	CHECK(pool == NULL);
	larder_pool_config_destroy(pc);
	larder_pool_config_destroy(NULL);
	CHECK_RC(larder_pool_close(NULL), LARDER_EINVAL);
	CHECK(larder_pool_stat_name(LARDER_POOL_STAT_COUNT) == NULL);
	CHECK(larder_pool_cache_stat_name(LARDER_POOL_CACHE_STAT_COUNT) == NULL);

	pool = make_pool(MiB, 0);
	REQUIRE(pool);
	uint64_t v[LARDER_POOL_STAT_COUNT + 2];
	CHECK_RC(larder_pool_stats(NULL, v, 1), LARDER_EINVAL);
	CHECK_RC(larder_pool_stats(pool, NULL, 1), LARDER_EINVAL);
	memset(v, 0xff, sizeof v);
	CHECK_RC(larder_pool_stats(pool, v, TH_COUNT(v)), LARDER_OK);
	CHECK_EQ(v[LARDER_POOL_STAT_COUNT], 0);
	CHECK_EQ(v[LARDER_POOL_STAT_COUNT + 1], 0);
	CHECK_EQ(v[LARDER_POOL_BUDGET_BYTES], MiB);
	CHECK_EQ(v[LARDER_POOL_CACHES], 0);

	/* A capacity is refused for a pooled cache; more than one shard is
	 * not (it was until pool27: PROBE-P9 in pool/probe.c). */
	larder_config *cfg = NULL;
	larder *c = (larder *)&c;
	REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
	REQUIRE_RC(larder_config_set_pool(cfg, pool), LARDER_OK);
	REQUIRE_RC(larder_config_set_capacity(cfg, MiB), LARDER_OK);
	CHECK_RC(larder_open(&c, cfg), LARDER_EINVAL);
	CHECK(c == NULL);
	larder_config_destroy(cfg);
	REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
	REQUIRE_RC(larder_config_set_pool(cfg, pool), LARDER_OK);
	REQUIRE_RC(larder_config_set_shards(cfg, 2), LARDER_OK);
	CHECK_RC(larder_open(&c, cfg), LARDER_OK);
	larder_close(c);
	larder_config_destroy(cfg);

	/* 16 members of 64 KiB fill a 1 MiB budget; a 17th is refused. */
	larder *m[17];
	int rc;
	for (unsigned i = 0; i < 16; i++) {
		m[i] = open_member(pool, 0, 1, &rc);
		REQUIRE_RC(rc, LARDER_OK);
	}
	m[16] = open_member(pool, 0, 1, &rc);
	CHECK_RC(rc, LARDER_EINVAL);
	CHECK(m[16] == NULL);
	CHECK_RC(larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT), LARDER_OK);
	CHECK_EQ(v[LARDER_POOL_CACHES], 16);
	CHECK_LE(v[LARDER_POOL_ASSIGNED_BYTES], MiB);
	uint64_t sum = 0;
	for (unsigned i = 0; i < 16; i++) {
		double cv[LARDER_POOL_CACHE_STAT_COUNT + 1];
		CHECK_RC(larder_pool_cache_stats(pool, m[i], cv, TH_COUNT(cv)), LARDER_OK);
		CHECK_EQ((uint64_t)cv[LARDER_POOL_CACHE_CAPACITY_BYTES],
			 th_stat(m[i], LARDER_STAT_CAPACITY_BYTES));
		CHECK(cv[LARDER_POOL_CACHE_STAT_COUNT] == 0.0);
		sum += th_stat(m[i], LARDER_STAT_CAPACITY_BYTES);
		CHECK_RC(larder_set_capacity(m[i], MiB), LARDER_ESTATE);
	}
	CHECK_EQ(sum, v[LARDER_POOL_ASSIGNED_BYTES]);
	/* Not a member; NULLs. */
	larder *other = th_open(th_config(MiB));
	REQUIRE(other);
	double cv[LARDER_POOL_CACHE_STAT_COUNT];
	CHECK_RC(larder_pool_cache_stats(pool, other, cv, TH_COUNT(cv)), LARDER_EINVAL);
	CHECK_RC(larder_pool_cache_stats(NULL, m[0], cv, TH_COUNT(cv)), LARDER_EINVAL);
	CHECK_RC(larder_pool_cache_stats(pool, NULL, cv, TH_COUNT(cv)), LARDER_EINVAL);
	CHECK_RC(larder_pool_cache_stats(pool, m[0], NULL, 1), LARDER_EINVAL);
	larder_close(other);
	/* Min shares over 1 together. */
	for (unsigned i = 0; i < 16; i++)
		larder_close(m[i]);
	m[0] = open_member(pool, 0.6, 1, &rc);
	REQUIRE_RC(rc, LARDER_OK);
	m[1] = open_member(pool, 0.5, 1, &rc);
	CHECK_RC(rc, LARDER_EINVAL);
	CHECK_RC(larder_pool_close(pool), LARDER_ESTATE);
	larder_close(m[0]);
	/* A config that still names a closed pool. */
	REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
	REQUIRE_RC(larder_config_set_pool(cfg, pool), LARDER_OK);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
	CHECK_RC(larder_open(&c, cfg), LARDER_ESTATE);
	larder_config_destroy(cfg);
}

/* NULL with count 0 is an empty request (as for larder_stats): LARDER_OK,
 * nothing written; under UBSan a copy of zero bytes to NULL aborted it. */
static void test_pool_stats_empty_request(void)
{
	larder_pool *pool = make_pool(MiB, 0);
	REQUIRE(pool);
	int rc;
	larder *c = open_member(pool, 0, 1, &rc);
	REQUIRE_RC(rc, LARDER_OK);
	CHECK_RC(larder_pool_stats(pool, NULL, 0), LARDER_OK);
	CHECK_RC(larder_pool_cache_stats(pool, c, NULL, 0), LARDER_OK);
	double one[1] = {-1.0};
	CHECK_RC(larder_pool_cache_stats(pool, c, one, 1), LARDER_OK);
	CHECK_EQ((uint64_t)one[0], th_stat(c, LARDER_STAT_CAPACITY_BYTES));
	larder_close(c);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

struct grows {
	larder *c;
	uint64_t to;
};

static int grown(void *ctx)
{
	struct grows *g = ctx;
	uint64_t v[LARDER_STAT_CAPACITY_BYTES + 1];
	return larder_stats(g->c, v, TH_COUNT(v)) == LARDER_OK &&
	       v[LARDER_STAT_CAPACITY_BYTES] == g->to;
}

/* A static split: equal parts, or a member's fixed share. */
static void test_pool_static_split(void)
{
	larder_pool *pool = make_pool(16 * MiB, 0);
	REQUIRE(pool);
	int rc;
	larder *a = open_member(pool, 0.25, 0.25, &rc);
	REQUIRE_RC(rc, LARDER_OK);
	larder *b = open_member(pool, 0, 1, &rc);
	REQUIRE_RC(rc, LARDER_OK);
	larder *d = open_member(pool, 0, 1, &rc);
	REQUIRE_RC(rc, LARDER_OK);
	CHECK_EQ(th_stat(a, LARDER_STAT_CAPACITY_BYTES), 4 * MiB);
	CHECK_LE(th_stat(b, LARDER_STAT_CAPACITY_BYTES) + th_stat(d, LARDER_STAT_CAPACITY_BYTES) +
			 4 * MiB,
		 16 * MiB);
	CHECK_GE(th_stat(b, LARDER_STAT_CAPACITY_BYTES), 5 * MiB);
	/* The members' figures add up to the pool's. */
	unsigned char val[1000];
	fill_noise(val, sizeof val, 3);
	for (unsigned i = 0; i < 3000; i++) {
		char k[32];
		size_t kl = key_of(k, "split", i);
		CHECK_RC(larder_put(i % 2 ? b : d, k, kl, val, sizeof val, LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	CHECK_RC(th_flush(b, 60000), LARDER_OK);
	CHECK_RC(th_flush(d, 60000), LARDER_OK);
	uint64_t v[LARDER_POOL_STAT_COUNT];
	CHECK_RC(larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT), LARDER_OK);
	CHECK_EQ(v[LARDER_POOL_USED_BYTES], th_stat(a, LARDER_STAT_USED_BYTES) +
						    th_stat(b, LARDER_STAT_USED_BYTES) +
						    th_stat(d, LARDER_STAT_USED_BYTES));
	CHECK_EQ(v[LARDER_POOL_OVERSHOOT_BOUND], 16 * MiB / 100 + 3 * 4 * MiB);
	double cv[LARDER_POOL_CACHE_STAT_COUNT];
	CHECK_RC(larder_pool_cache_stats(pool, b, cv, TH_COUNT(cv)), LARDER_OK);
	CHECK_EQ((uint64_t)cv[LARDER_POOL_CACHE_USED_BYTES], th_stat(b, LARDER_STAT_USED_BYTES));
	CHECK_EQ((uint64_t)cv[LARDER_POOL_CACHE_TARGET_BYTES],
		 (uint64_t)cv[LARDER_POOL_CACHE_CAPACITY_BYTES]);
	CHECK_EQ((uint64_t)cv[LARDER_POOL_CACHE_HITS], th_stat(b, LARDER_STAT_HITS));
	larder_close(d);
	/* d's share goes to b, the one member whose share is not fixed: it
	 * grows in the background (a bounded wait, not a timing). */
	struct grows g = {b, 12 * MiB};
	CHECK(th_wait_until(grown, &g, 20000));
	CHECK_EQ(th_stat(a, LARDER_STAT_CAPACITY_BYTES), 4 * MiB);
	CHECK_RC(th_flush(b, 60000), LARDER_OK);
	CHECK_RC(larder_pool_stats(pool, v, LARDER_POOL_STAT_COUNT), LARDER_OK);
	CHECK_EQ(v[LARDER_POOL_CACHES], 2);
	CHECK_EQ(v[LARDER_POOL_ASSIGNED_BYTES], th_stat(a, LARDER_STAT_CAPACITY_BYTES) +
							th_stat(b, LARDER_STAT_CAPACITY_BYTES));
	larder_close(a);
	larder_close(b);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
}

/* A member whose max share is under 64 KiB of the budget gets 64 KiB, the
 * smallest capacity a cache may have (larder.h: a share counts as at least
 * that); its shares and miss cost come back in its figures. */
static void test_pool_tiny_share(void)
{
	for (int interval = 0; interval < 2; interval++) {
		larder_pool *pool = make_pool(MiB, interval ? 100 : 0);
		REQUIRE(pool);
		int rc;
		larder *c = open_member(pool, 0, 0.01, &rc);
		REQUIRE_RC(rc, LARDER_OK);
		CHECK_EQ(th_stat(c, LARDER_STAT_CAPACITY_BYTES), 64 * KiB);
		double cv[LARDER_POOL_CACHE_STAT_COUNT];
		CHECK_RC(larder_pool_cache_stats(pool, c, cv, TH_COUNT(cv)), LARDER_OK);
		CHECK_EQ((uint64_t)cv[LARDER_POOL_CACHE_CAPACITY_BYTES], 64 * KiB);
		CHECK(cv[LARDER_POOL_CACHE_MAX_SHARE] == 0.01);
		CHECK(cv[LARDER_POOL_CACHE_MIN_SHARE] == 0.0);
		CHECK(cv[LARDER_POOL_CACHE_MISS_COST] == 1.0);
		/* It works as a cache, within its capacity. */
		unsigned char v[1000];
		fill_text(v, sizeof v, 1);
		for (unsigned i = 0; i < 200; i++) {
			char k[32];
			size_t kl = key_of(k, "tiny", i);
			CHECK_RC(larder_put(c, k, kl, v, sizeof v, LARDER_TTL_NEVER), LARDER_OK);
		}
		/* After a flush the live entries' charges fit (used bytes may
		 * still hold victims awaiting their grace period). */
		CHECK_RC(th_flush(c, 60000), LARDER_OK);
		struct charges ch = {0};
		larder_iter *it;
		REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
		while (larder_iter_next(it, charge_fn, &ch) == LARDER_OK)
			;
		larder_iter_close(it);
		CHECK_GT(ch.count, 0);
		CHECK_LE(ch.bytes, th_stat(c, LARDER_STAT_CAPACITY_BYTES));
		CHECK_LE(th_stat(c, LARDER_STAT_USED_BYTES),
			 th_stat(c, LARDER_STAT_CAPACITY_BYTES) +
				 th_stat(c, LARDER_STAT_OVERSHOOT_BOUND));
		larder_close(c);
		CHECK_RC(larder_pool_close(pool), LARDER_OK);
	}
}

/* Members written to while another opens, clears, saves, loads and closes
 * over and over and the controller moves capacity every millisecond: the
 * writers' values read back whole, the pool's figures stay within the
 * budget, and its bound holds at every sample. */
struct pool_writer {
	larder_pool *pool;
	_Atomic int *stop;
	unsigned id;
	int bad;
};

static void *pool_writer_main(void *arg)
{
	struct pool_writer *w = arg;
	int rc;
	larder *c = open_member(w->pool, 0.1, 1, &rc);
	if (!c) {
		w->bad = 1000 + -rc;
		return NULL;
	}
	unsigned char v[2048], buf[2048];
	char k[32];
	for (unsigned i = 0; !atomic_load(w->stop); i++) {
		size_t kl = key_of(k, w->id ? "w1" : "w0", i % 5000), len = 0;
		size_t n = 64 + i % 1900;
		fill_text(v, n, i);
		rc = larder_put(c, k, kl, v, n, LARDER_TTL_NEVER);
		if (rc != LARDER_OK && rc != LARDER_EBUSY)
			w->bad++;
		rc = larder_get(c, k, kl, buf, sizeof buf, &len);
		if (rc == LARDER_OK && (len != n || memcmp(buf, v, n) != 0))
			w->bad++;
	}
	larder_close(c);
	return NULL;
}

static void test_pool_members_churn_beside_writers(void)
{
	const uint64_t budget = 8 * MiB;
	larder_pool *pool = make_pool(budget, 1);
	REQUIRE(pool);
	char path[128];
	REQUIRE(snap_path(path, "pool.snap"));
	_Atomic int stop = 0;
	struct pool_writer w[2] = {{pool, &stop, 0, 0}, {pool, &stop, 1, 0}};
	pthread_t t[2];
	for (unsigned i = 0; i < 2; i++)
		REQUIRE(pthread_create(&t[i], NULL, pool_writer_main, &w[i]) == 0);
	uint64_t over_bound = 0, over_budget = 0, over_share = 0;
	for (unsigned round = 0; round < 30; round++) {
		int rc;
		larder *m = open_member(pool, 0, 0.5, &rc);
		if (rc == LARDER_EBUSY)
			continue; /* the others have not given its first capacity back yet */
		if (!CHECK_RC(rc, LARDER_OK))
			break;
		unsigned char v[1000];
		char k[32];
		for (unsigned i = 0; i < 300; i++) {
			size_t kl = key_of(k, "m", i);
			fill_text(v, sizeof v, i);
			rc = larder_put(m, k, kl, v, sizeof v, LARDER_TTL_NEVER);
			CHECK(rc == LARDER_OK || rc == LARDER_EBUSY);
		}
		if (round % 3 == 0)
			CHECK_RC(larder_clear(m), LARDER_OK);
		if (round % 3 == 1) {
			CHECK_RC(larder_save(m, path), LARDER_OK);
			CHECK_RC(larder_load(m, path), LARDER_OK);
		}
		over_share += th_stat(m, LARDER_STAT_CAPACITY_BYTES) > budget / 2;
		uint64_t v2[LARDER_POOL_STAT_COUNT];
		CHECK_RC(larder_pool_stats(pool, v2, LARDER_POOL_STAT_COUNT), LARDER_OK);
		over_budget += v2[LARDER_POOL_ASSIGNED_BYTES] > budget;
		over_bound += v2[LARDER_POOL_USED_BYTES] >
			      v2[LARDER_POOL_BUDGET_BYTES] + v2[LARDER_POOL_OVERSHOOT_BOUND];
		larder_close(m);
	}
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	CHECK_EQ(w[0].bad, 0);
	CHECK_EQ(w[1].bad, 0);
	CHECK_EQ(over_budget, 0);
	CHECK_EQ(over_bound, 0);
	CHECK_EQ(over_share, 0);
	CHECK_RC(larder_pool_close(pool), LARDER_OK);
	unlink(path);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_compressed_value_through_every_read),
		TH_TEST(test_compressed_value_to_listener),
		TH_TEST(test_compressed_expire_after_access),
		TH_TEST(test_compression_value_limits),
		TH_TEST(test_compression_entry_limit_on_stored_size),
		TH_TEST(test_compressed_reads_nested),
		TH_TEST(test_longest_key_and_charges),
		TH_TEST(test_dictionary_modes),
		TH_TEST(test_dictionary_given_malformed),
		TH_TEST(test_dictionary_training_odd_samples),
		TH_TEST(test_iter_errors_and_end),
		TH_TEST(test_iter_exactly_once_across_changes),
		TH_TEST(test_iter_across_clear_and_cut),
		TH_TEST(test_iter_across_shrink),
		TH_TEST(test_shrink_beside_a_writer_keeps_entries),
		TH_TEST(test_shrink_beside_writers_keeps_entries),
		TH_TEST(test_iter_ttl_expiring_mid_walk),
		TH_TEST(test_snapshot_round_trip_every_config),
		TH_TEST(test_snapshot_pool_member),
		TH_TEST(test_snapshot_large_values),
		TH_TEST(test_snapshot_parallel_skips_over_limit),
		TH_TEST(test_snapshot_save_memory_bounded),
		TH_TEST(test_snapshot_damaged_files),
		TH_TEST(test_snapshot_into_smaller_cache),
		TH_TEST(test_snapshot_ttl_ran_out_while_saved),
		TH_TEST(test_walk_and_save_are_not_reads),
		TH_TEST(test_iter_save_load_reentrant),
		TH_TEST(test_pool_errors_and_states),
		TH_TEST(test_pool_stats_empty_request),
		TH_TEST(test_pool_static_split),
		TH_TEST(test_pool_tiny_share),
		TH_TEST(test_pool_members_churn_beside_writers),
	};
	int rc = th_main(argc, argv, tests, TH_COUNT(tests));
	if (tmp_dir[0])
		rmdir(tmp_dir);
	return rc;
}
