/*
 * tests/unit/test_contracts_docs.c - the bugs earlier audits noticed and
 * left alone, each reproduced here before its fix, and the claims of
 * docs/pool.md, docs/persistence.md, docs/compression.md and larder.h's
 * iteration section that no other test checked, table-driven across the
 * options (this file also runs as unit_contracts_docs_shards4).
 *
 * Found wrong and fixed here:
 *   - larder_touch giving a deadline to an entry without one built a copy
 *     8 bytes longer, never checked against the entry limit: an entry at
 *     the limit became one over it (test_touch_keeps_entry_limit);
 *   - the save's range mode (core/iter.h), retried after LARDER_ENOMEM,
 *     handed out again the entries its range had handed out before the
 *     failure (test_range_mode_retry_no_duplicates);
 *   - a bulk write (larder_load's) in a compressing cache gave no credit up
 *     front to a record whose plain size is over the entry limit but whose
 *     compressed size fits: written inside the block's read section, where
 *     a write may not wait for memory, it took the credit of the records
 *     after it, which then failed with LARDER_EBUSY at the memory bound
 *     (test_bulk_credit_for_compressible_over_limit).
 * Measured, nothing to fix: the dictionary's sample is fed by the writers
 * of every shard (test_dictionary_sample_across_shards).
 * The docs' claims, table-driven: larder.h's iteration section and
 * larder_save/larder_load across 72 configs
 * (test_iter_and_snapshot_claims_across_options), docs/pool.md's split,
 * bound and refusals across 12 (test_pool_claims_across_options).
 * docs/persistence.md's paths: a save through a symbolic link replaces the
 * link, not its target; a socket is refused as a FIFO is; no temporary
 * file is left (test_save_paths_link_socket). docs/compression.md's one
 * dictionary in a cache's life: not retrained after a clear and values of
 * another shape (test_dictionary_once_per_life).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/cache.h"
#include "core/hash.h"
#include "core/iter.h"
#include "core/testing.h"
#include "harness.h"

/* The longest value larder_put stores for key under ttl_ms in cache. */
static size_t longest_value(larder *cache, const char *key, uint64_t ttl_ms, size_t hi)
{
	unsigned char *v = calloc(1, hi);
	size_t lo = 0;
	while (v && lo < hi) { /* lo fits; find the last length that does */
		size_t mid = lo + (hi - lo + 1) / 2;
		if (larder_put(cache, key, strlen(key), v, mid, ttl_ms) == LARDER_OK)
			lo = mid;
		else
			hi = mid - 1;
	}
	free(v);
	return lo;
}

/*
 * larder.h's LARDER_EVALSIZE: no entry over 1/8 of the capacity. A touch
 * that gives an entry without a deadline one rebuilds it with a deadline
 * field (8 bytes more); at the limit that copy is refused with
 * LARDER_EVALSIZE and the entry kept as it was, as larder_put refuses the
 * same entry with a TTL.
 */
static void test_touch_keeps_entry_limit(void)
{
	larder *c = th_open(th_config(64 * KiB));
	REQUIRE(c);
	size_t plain = longest_value(c, "k", LARDER_TTL_NEVER, 16 * KiB);
	size_t timed = longest_value(c, "t", 60000, 16 * KiB);
	CHECK_GT(plain, timed); /* the deadline field takes room */
	unsigned char *v = calloc(1, plain);
	REQUIRE(v);
	memset(v, 'x', plain);
	REQUIRE_RC(larder_put(c, "k", 1, v, plain, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_touch(c, "k", 1, 60000), LARDER_EVALSIZE);
	uint64_t ttl_left = 0;
	CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl_left), LARDER_OK);
	CHECK_EQ(ttl_left, LARDER_TTL_NEVER);
	CHECK_RC(larder_touch(c, "k", 1, LARDER_TTL_NEVER), LARDER_OK);
	/* The longest value a timed put stores: a touch may give it a deadline. */
	REQUIRE_RC(larder_put(c, "k", 1, v, timed, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_touch(c, "k", 1, 60000), LARDER_OK);
	CHECK_RC(larder_ttl_remaining(c, "k", 1, &ttl_left), LARDER_OK);
	CHECK_LE(ttl_left, 60000);
	free(v);
	larder_close(c);
}

/* A value that compresses well: a short phrase repeated, with i in it. */
static void fill_text(unsigned char *v, size_t len, unsigned i)
{
	char word[48];
	int n = snprintf(word, sizeof word, "{\"id\":%u,\"name\":\"larder\"},", i);
	for (size_t k = 0; k < len; k++)
		v[k] = (unsigned char)word[k % (size_t)n];
}

/* Enough keys that ranges of the smallest index (1,024 buckets per shard,
 * 64 a range) hold several; values over the thread's kept scratch buffer
 * (1 MiB, core/thread.h), so that each compressed value's hand-out
 * allocates, and can be made to fail. */
#define RANGE_KEYS 40u
#define RANGE_VALUE (1088 * KiB)

struct seen {
	unsigned count[RANGE_KEYS];
	unsigned bad;
};

static void count_key(void *ctx, const void *key, size_t key_len, const void *value,
		      size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct seen *s = ctx;
	unsigned i;
	(void)value;
	(void)ttl_ms;
	(void)entry_bytes;
	if (key_len == 4 && sscanf((const char *)key, "r%03u", &i) == 1 && i < RANGE_KEYS &&
	    value_len == RANGE_VALUE)
		s->count[i]++;
	else
		s->bad++;
}

static int always_more(void *ctx)
{
	(void)ctx;
	return 1;
}

/* A cache of cfg's that compresses values of 1 KiB or more (when that saves
 * 10%; no dictionary) and takes values up to max_value; NULL, a check
 * failed, when it cannot be set up. */
static larder *open_compressing(larder_config *cfg, size_t max_value)
{
	if (!CHECK(cfg) ||
	    !CHECK_RC(larder_config_set_max_value_bytes(cfg, max_value), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_compression(cfg, 1024, 10), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_NONE, NULL,
							       0),
		      LARDER_OK))
		return NULL;
	return th_open(cfg);
}

/*
 * ITER-I1 for the range mode (larder_save's): a call that fails with
 * LARDER_ENOMEM (a compressed value's decompression buffer) may be retried
 * and still hands each key out once. Allocations are made to fail one
 * after another, at every point of the walk in turn.
 */
static void test_range_mode_retry_no_duplicates(void)
{
	larder *c = open_compressing(th_config(64 * MiB), 2 * MiB);
	REQUIRE(c);
	unsigned char *v = malloc(RANGE_VALUE);
	REQUIRE(v);
	char key[8];
	for (unsigned i = 0; i < RANGE_KEYS; i++) {
		fill_text(v, RANGE_VALUE, i);
		snprintf(key, sizeof key, "r%03u", i);
		CHECK_RC(larder_put(c, key, 4, v, RANGE_VALUE, LARDER_TTL_NEVER), LARDER_OK);
	}
	free(v);
	REQUIRE_EQ(th_quiesce(c, 10000), 0);
	struct seen s = { { 0 }, 0 };
	larder_iter *it;
	REQUIRE_RC(larder_iter_open(c, &it), LARDER_OK);
	unsigned failures = 0, calls = 0;
	int rc = LARDER_OK;
	for (long fail_after = 0; calls < 1000; calls++) {
		larder__test_fail_alloc_after(fail_after);
		rc = larder__iter_next_range(it, count_key, always_more, &s);
		long left = larder__test_fail_alloc_after(-1);
		if (rc == LARDER_MISS)
			break;
		if (rc == LARDER_ENOMEM) {
			failures++;
			fail_after++; /* the next try gets one allocation further */
		} else if (!CHECK_RC(rc, LARDER_OK)) {
			break;
		} else if (left >= 0) {
			fail_after = 0; /* that call did not reach the failure */
		}
	}
	larder_iter_close(it);
	CHECK_RC(rc, LARDER_MISS);
	CHECK_GT(failures, 0);
	CHECK_EQ(s.bad, 0);
	for (unsigned i = 0; i < RANGE_KEYS; i++)
		CHECK_EQ(s.count[i], 1);
	larder_close(c);
}

/* A value that does not compress: splitmix64 bytes. */
static void fill_noise(unsigned char *v, size_t len, uint64_t seed)
{
	struct th_rng r = { seed };
	for (size_t k = 0; k < len; k++)
		v[k] = (unsigned char)th_rng_next(&r);
}

/*
 * CACHE-B3 (core/cache.c): a bulk writer's block is credited up front, so
 * that no write inside it, where it may not wait for memory, finds its
 * credit short. A cache of 16 MiB (entry limit 2 MiB, overshoot bound
 * 4 MiB) written to its bound with values that do not compress; then one
 * block of BULK_BIG values of 2.25 MiB, a quarter of which compresses:
 * each is over the limit plain, within it stored (about 1.7 MiB), and
 * together they are more than the overshoot bound. All are written (the
 * load's own bound, SNAP-L3, is not asked for here: UINT64_MAX). One
 * shard: with K, the block's credit is taken shard by shard, and a
 * maintainer evicts for a writer's wait, not for credit other shards'
 * handles already hold, so a block credited more than the overshoot bound
 * may fail with LARDER_EBUSY, compressing or not (a limit, not this bug).
 */
#define BULK_BIG 4u
static void test_bulk_credit_for_compressible_over_limit(void)
{
	larder *c = open_compressing(th_config_one_shard(16 * MiB), 4 * MiB);
	REQUIRE(c);
	size_t big = 2304 * KiB, noise = big * 3 / 4;
	unsigned char *v = malloc(big), *got = malloc(big);
	REQUIRE(v && got);
	char keys[BULK_BIG][16];
	fill_noise(v, noise, 1);
	for (unsigned i = 0; i < 12; i++) { /* 1.5 MiB that do not compress, 12 times */
		snprintf(keys[0], sizeof keys[0], "fill%02u", i);
		v[0] = (unsigned char)i;
		CHECK_RC(larder_put(c, keys[0], strlen(keys[0]), v, 1536 * KiB, LARDER_TTL_NEVER),
			 LARDER_OK);
	}
	REQUIRE_EQ(th_quiesce(c, 10000), 0);
	fill_text(v + noise, big - noise, 7);
	struct larder__put_rec rec[BULK_BIG];
	for (unsigned i = 0; i < BULK_BIG; i++) {
		size_t n = (size_t)snprintf(keys[i], sizeof keys[i], "big%02u", i);
		rec[i] = (struct larder__put_rec){ keys[i], n, v, big, LARDER_TTL_NEVER,
						   larder__hash(TH_HASH_SEED, keys[i], n) };
	}
	uint64_t charged = 0;
	CHECK_RC(larder__put_batch(c, rec, BULK_BIG, UINT64_MAX, &charged), LARDER_OK);
	CHECK_GT(charged, larder__overshoot_bound(16 * MiB)); /* more than the bound */
	CHECK_LE(charged, BULK_BIG * larder__entry_limit(16 * MiB)); /* each stored compressed */
	size_t len = 0;
	int rc = larder_get(c, keys[BULK_BIG - 1], strlen(keys[BULK_BIG - 1]), got, big, &len);
	CHECK(rc == LARDER_OK || rc == LARDER_MISS); /* written, maybe evicted since */
	if (rc == LARDER_OK)
		CHECK(len == big && memcmp(got, v, big) == 0);
	REQUIRE_EQ(th_quiesce(c, 10000), 0);
	CHECK_LE(th_stat(c, LARDER_STAT_USED_BYTES), 16 * MiB);
	free(got);
	free(v);
	larder_close(c);
}

/* A JSON record of about 300-400 bytes, as a web cache holds: the same
 * fields in each, their values varied by the random stream r. */
static size_t json_record(char *out, size_t cap, unsigned id, struct th_rng *r)
{
	static const char *countries[] = { "DE", "FR", "US", "JP", "BR", "IN", "NG", "SE" };
	static const char *tags[] = { "new", "vip", "beta", "trial", "churned", "admin" };
	unsigned long long x = (unsigned long long)th_rng_next(r);
	int n = snprintf(out, cap,
			 "{\"id\":%u,\"name\":\"user_%llx\",\"email\":\"u%llu@example.org\","
			 "\"country\":\"%s\",\"tags\":[\"%s\",\"%s\"],\"score\":%llu.%02llu,"
			 "\"active\":%s,\"created\":\"2026-%02llu-%02lluT%02llu:%02llu:00Z\","
			 "\"address\":{\"street\":\"%llu Main Street\",\"city\":\"City%llu\","
			 "\"zip\":\"%05llu\"},\"prefs\":{\"lang\":\"en\",\"theme\":\"%s\","
			 "\"newsletter\":%s}}",
			 id, x & 0xffffff, (x >> 24) & 0xfffff, countries[x % 8], tags[(x >> 3) % 6],
			 tags[(x >> 7) % 6], (x >> 11) % 1000, (x >> 21) % 100,
			 (x >> 27) & 1 ? "true" : "false", 1 + (x >> 28) % 12, 1 + (x >> 32) % 28,
			 (x >> 37) % 24, (x >> 42) % 60, (x >> 48) % 999, (x >> 50) % 300,
			 (x >> 40) % 100000, (x >> 33) & 1 ? "dark" : "light",
			 (x >> 34) & 1 ? "true" : "false");
	return (size_t)n;
}

/*
 * docs/compression.md, "The dictionary": the sample is the cache's first
 * compressible values, whichever shard their keys hash to (core/dict.c:
 * writers of every shard offer to the one sample; shard 0's maintainer
 * only trains it). The same records, written into a cache of 1 shard and
 * of 4, are stored in about the same bytes once the dictionary exists.
 */
#define DICT_RECORDS 4000u
static uint64_t dict_stored_bytes(unsigned shards, uint64_t *plain)
{
	larder_config *cfg = th_config(64 * MiB);
	if (!cfg || !CHECK_RC(larder_config_set_shards(cfg, shards), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK)) {
		larder_config_destroy(cfg);
		return 0;
	}
	larder *c = th_open(cfg);
	if (!c)
		return 0;
	char v[512], k[16];
	*plain = 0;
	for (int round = 0; round < 2; round++) { /* the second, with the dictionary */
		struct th_rng r = { 42 };
		for (unsigned i = 0; i < DICT_RECORDS; i++) {
			size_t n = json_record(v, sizeof v, i, &r);
			size_t kl = (size_t)snprintf(k, sizeof k, "u%05u", i);
			CHECK_RC(larder_put(c, k, kl, v, n, LARDER_TTL_NEVER), LARDER_OK);
			if (round)
				*plain += n;
		}
		CHECK_RC(th_flush(c, 60000), LARDER_OK);
		CHECK_RC(th_flush(c, 60000), LARDER_OK); /* the pass after the sample closed */
	}
	CHECK_GT(th_stat(c, LARDER_STAT_DICT_BYTES), 0);
	CHECK_EQ(th_quiesce(c, 10000), 0); /* the replaced entries freed */
	uint64_t live = th_stat(c, LARDER_STAT_LIVE_BYTES);
	larder_close(c);
	return live;
}

static void test_dictionary_sample_across_shards(void)
{
	uint64_t plain1 = 0, plain4 = 0;
	uint64_t one = dict_stored_bytes(1, &plain1), four = dict_stored_bytes(4, &plain4);
	REQUIRE(one && four);
	CHECK_EQ(plain1, plain4);
	printf("  %u JSON records, %llu bytes: stored in %llu bytes with 1 shard (%.2fx), "
	       "%llu with 4 (%.2fx)\n",
	       DICT_RECORDS, (unsigned long long)plain1, (unsigned long long)one,
	       (double)plain1 / (double)one, (unsigned long long)four,
	       (double)plain4 / (double)four);
	CHECK_LE(four * 100, one * 105); /* within 5% of one shard's */
}

/* ---- larder.h's iteration and snapshot claims, across the options ------- */

enum ttl_mode { TTL_NONE, TTL_WRITE, TTL_ACCESS };
struct opts {
	enum larder_policy policy;
	unsigned shards;
	int compress; /* 0 off, 1 LZ4 alone, 2 zstd with a given dictionary */
	enum ttl_mode ttl;
};

#define CLAIM_KEYS 240u
#define CLAIM_T0 5000u
#define CLAIM_TTL_MS 60000u
static unsigned char claim_dict[4096];

static larder *open_opts(const struct opts *o, struct th_clock *clk)
{
	larder_config *cfg = th_config(8 * MiB);
	if (!cfg)
		return NULL;
	int ok = larder_config_set_shards(cfg, o->shards) == LARDER_OK &&
		 larder_config_set_policy(cfg, o->policy) == LARDER_OK &&
		 larder_config_set_clock(cfg, th_clock_fn, clk) == LARDER_OK;
	if (o->ttl == TTL_ACCESS)
		ok = ok && larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS) == LARDER_OK &&
		     larder_config_set_default_ttl_ms(cfg, CLAIM_TTL_MS) == LARDER_OK;
	if (o->compress)
		ok = ok && larder_config_set_compression(cfg, 64, 5) == LARDER_OK &&
		     larder_config_set_compression_dictionary(
			     cfg, o->compress == 1 ? LARDER_DICTIONARY_NONE : LARDER_DICTIONARY_GIVEN,
			     o->compress == 1 ? NULL : claim_dict,
			     o->compress == 1 ? 0 : sizeof claim_dict) == LARDER_OK;
	if (!CHECK(ok)) {
		larder_config_destroy(cfg);
		return NULL;
	}
	return th_open(cfg);
}

/* Key i's value (a JSON record from a stream seeded by i) and its ttl_ms
 * argument in mode m. */
static size_t claim_value(char *v, size_t cap, unsigned i)
{
	struct th_rng r = { 1000 + i };
	return json_record(v, cap, i, &r);
}
static uint64_t claim_ttl(enum ttl_mode m, unsigned i)
{
	return m == TTL_NONE ? LARDER_TTL_NEVER : m == TTL_WRITE ? 10000 + i : LARDER_TTL_DEFAULT;
}

struct walk {
	larder *cache;
	const struct opts *o;
	unsigned seen[CLAIM_KEYS];
	unsigned other, wrong_value, wrong_ttl;
	uint64_t bytes, elapsed; /* clock time since the writes */
};

static void walk_fn(void *ctx, const void *key, size_t key_len, const void *value,
		    size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct walk *w = ctx;
	unsigned i;
	char v[512];
	w->bytes += entry_bytes;
	if (key_len != 6 || sscanf((const char *)key, "c%05u", &i) != 1 || i >= CLAIM_KEYS) {
		w->other++; /* a key written during the walk */
		return;
	}
	w->seen[i]++;
	size_t n = claim_value(v, sizeof v, i);
	if (value_len != n || memcmp(value, v, n) != 0)
		w->wrong_value++;
	uint64_t want = w->o->ttl == TTL_NONE    ? LARDER_TTL_NEVER
			: w->o->ttl == TTL_WRITE ? 10000 + i
						 : CLAIM_TTL_MS;
	if (want != LARDER_TTL_NEVER)
		want -= w->elapsed;
	if (ttl_ms != want)
		w->wrong_ttl++;
}

static int claim_walk(larder *c, struct walk *w, int churn)
{
	larder_iter *it;
	if (!CHECK_RC(larder_iter_open(c, &it), LARDER_OK))
		return 0;
	int rc, calls = 0;
	while ((rc = larder_iter_next(it, walk_fn, w)) == LARDER_OK) {
		if (churn && ++calls == CLAIM_KEYS / 4) {
			/* Keys i % 10 == 1 removed, new ones written: either may
			 * or may not be handed out. */
			for (unsigned i = 1; i < CLAIM_KEYS; i += 10) {
				char k[16];
				snprintf(k, sizeof k, "c%05u", i);
				CHECK_RC(larder_remove(c, k, 6), LARDER_OK);
				snprintf(k, sizeof k, "n%05u", i);
				CHECK_RC(larder_put(c, k, 6, "x", 1, LARDER_TTL_NEVER), LARDER_OK);
			}
		}
	}
	CHECK_RC(rc, LARDER_MISS);
	CHECK_RC(larder_iter_next(it, walk_fn, w), LARDER_MISS); /* the end is sticky */
	larder_iter_close(it);
	return 1;
}

/*
 * The claims of larder.h's iteration section and of larder_save/larder_load,
 * each config of policy x4, shards 1/4, compression off/LZ4/zstd with a
 * dictionary, TTL none/after write/after access (72), on an injected clock:
 *   - a key live from the open to the end is handed out exactly once, with
 *     its plain value; a key removed before the open never; none twice,
 *     whatever is removed and written during the walk;
 *   - ttl_ms is the remaining lifetime (LARDER_TTL_NEVER for none);
 *   - entry_bytes is what the entry charges: their sum over a walk of a
 *     quiet cache is LARDER_STAT_LIVE_BYTES;
 *   - the end is sticky (LARDER_MISS again);
 *   - iteration is not a read: no hit counted, no deadline extended (after
 *     access: the remaining lifetime falls with the clock across a walk);
 *   - a save and a load into a fresh cache of the same config keep each
 *     key's value and its remaining TTL (less the wall-clock time between).
 */
static void test_iter_and_snapshot_claims_across_options(void)
{
	static const enum larder_policy policies[] = { LARDER_POLICY_S3FIFO, LARDER_POLICY_LRU,
						       LARDER_POLICY_WTINYLFU, LARDER_POLICY_ARC };
	fill_text(claim_dict, sizeof claim_dict, 3);
	char path[64];
	/* tmpfs where there is one: 144 fsyncs of a disk took seconds */
	snprintf(path, sizeof path, "%s/larder-claims-%d.snap",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp", (int)getpid());
	static struct th_clock clk;
	unsigned configs = 0;
	for (unsigned at = 0; at < 4 * 2 * 3 * 3; at++) { /* policy x shards x codec x TTL */
		int m = (int)(at % 3);
		struct opts o = { policies[at / 18], at / 9 % 2 ? 4 : 1, (int)(at / 3 % 3),
				  (enum ttl_mode)m };
		th_clock_init(&clk, CLAIM_T0);
		larder *c = open_opts(&o, &clk);
		REQUIRE(c);
		configs++;
		char k[16], v[512];
		for (unsigned i = 0; i < CLAIM_KEYS; i++) {
			snprintf(k, sizeof k, "c%05u", i);
			size_t n = claim_value(v, sizeof v, i);
			CHECK_RC(larder_put(c, k, 6, v, n, claim_ttl(o.ttl, i)), LARDER_OK);
		}
		for (unsigned i = 0; i < CLAIM_KEYS; i += 10) { /* removed before the open */
			snprintf(k, sizeof k, "c%05u", i);
			CHECK_RC(larder_remove(c, k, 6), LARDER_OK);
		}
		uint64_t hits = th_stat(c, LARDER_STAT_HITS);
		struct walk w = { .cache = c, .o = &o };
		if (!claim_walk(c, &w, 1))
			break;
		unsigned twice = 0, missing = 0, removed = 0;
		for (unsigned i = 0; i < CLAIM_KEYS; i++) {
			twice += w.seen[i] > 1;
			removed += i % 10 == 0 && w.seen[i];
			missing += i % 10 > 1 && w.seen[i] != 1;
		}
		if (!CHECK(twice == 0 && missing == 0 && removed == 0 && !w.wrong_value &&
			   !w.wrong_ttl))
			printf("  config policy %d shards %u compress %d ttl %d: twice %u missing %u "
			       "removed %u wrong value %u ttl %u\n",
			       o.policy, o.shards, o.compress, m, twice, missing, removed,
			       w.wrong_value, w.wrong_ttl);
		CHECK_EQ(th_stat(c, LARDER_STAT_HITS), hits);
		/* A quiet walk: the charges add up to the live bytes. */
		CHECK_EQ(th_quiesce(c, 10000), 0);
		struct walk q = { .cache = c, .o = &o };
		th_clock_advance(&clk, 1000);
		q.elapsed = 1000;
		claim_walk(c, &q, 0);
		/* The clock move made nothing due (TTLs of 10 s and more), the walk
		 * had no churn: stat-exact: nothing changed since the quiesce. */
		CHECK_EQ(q.bytes, th_stat(c, LARDER_STAT_LIVE_BYTES));
		CHECK_EQ(q.wrong_ttl, 0);
		uint64_t left = 0;
		snprintf(k, sizeof k, "c%05u", 5u);
		CHECK_RC(larder_ttl_remaining(c, k, 6, &left), LARDER_OK);
		CHECK_EQ(left, o.ttl == TTL_NONE    ? LARDER_TTL_NEVER
			       : o.ttl == TTL_WRITE ? 10000 + 5 - 1000
						    : CLAIM_TTL_MS - 1000);
		/* The snapshot round trip into a fresh cache of the same config. */
		CHECK_RC(larder_save(c, path), LARDER_OK);
		larder_close(c);
		larder *d = open_opts(&o, &clk);
		REQUIRE(d);
		CHECK_RC(larder_load(d, path), LARDER_OK);
		for (unsigned i = 2; i < CLAIM_KEYS; i += 5) {
			snprintf(k, sizeof k, "c%05u", i);
			size_t n = claim_value(v, sizeof v, i), len = 0;
			char got[512];
			CHECK_RC(larder_peek(d, k, 6, got, sizeof got, &len), LARDER_OK);
			CHECK(len == n && memcmp(got, v, n) == 0);
			CHECK_RC(larder_ttl_remaining(d, k, 6, &left), LARDER_OK);
			uint64_t saved = o.ttl == TTL_NONE    ? LARDER_TTL_NEVER
					 : o.ttl == TTL_WRITE ? 10000 + i - 1000
							      : CLAIM_TTL_MS - 1000;
			if (saved == LARDER_TTL_NEVER)
				CHECK_EQ(left, LARDER_TTL_NEVER);
			else
				CHECK(left <= saved && left + 60000 * TH_SLOW >= saved); /* a hang guard */
		}
		larder_close(d);
	}
	unlink(path);
	CHECK_EQ(configs, 72);
}

/* ---- docs/pool.md's claims, across the options -------------------------- */

/* A pool member (one shard, no capacity: the pool assigns it) with o's
 * policy, compression and TTL mode, and th_config()'s write wait (its
 * writers evict: the default second is no bound on a loaded machine's
 * maintainer); *rc gets larder_open's result. */
static larder *open_pool_member(larder_pool *pool, const struct opts *o, int *rc)
{
	larder_config *cfg = NULL;
	larder *c = NULL;
	if ((*rc = larder_config_create(&cfg)) != LARDER_OK)
		return NULL;
	*rc = larder_config_set_pool(cfg, pool);
	if (*rc == LARDER_OK)
		*rc = larder_config_set_write_wait_ms(cfg, TH_WRITE_WAIT_MS);
	if (*rc == LARDER_OK)
		*rc = larder_config_set_policy(cfg, o->policy);
	if (*rc == LARDER_OK && o->ttl == TTL_ACCESS)
		*rc = larder_config_set_expiry(cfg, LARDER_EXPIRE_AFTER_ACCESS);
	if (*rc == LARDER_OK && o->ttl == TTL_ACCESS)
		*rc = larder_config_set_default_ttl_ms(cfg, CLAIM_TTL_MS);
	if (*rc == LARDER_OK && o->compress)
		*rc = larder_config_set_compression(cfg, 64, 5);
	if (*rc == LARDER_OK && o->compress)
		*rc = larder_config_set_compression_dictionary(
			cfg, o->compress == 1 ? LARDER_DICTIONARY_NONE : LARDER_DICTIONARY_GIVEN,
			o->compress == 1 ? NULL : claim_dict, o->compress == 1 ? 0 : sizeof claim_dict);
	if (*rc == LARDER_OK)
		*rc = larder_open(&c, cfg);
	larder_config_destroy(cfg);
	return c;
}

static int has_budget(void *ctx)
{
	return th_stat(ctx, LARDER_STAT_CAPACITY_BYTES) == 8 * MiB;
}

static int has_half(void *ctx)
{
	return th_stat(ctx, LARDER_STAT_CAPACITY_BYTES) == 4 * MiB;
}

/*
 * docs/pool.md, "Using it" and "The bound", for members of every policy x
 * compression (TTL modes in turn), the controller off: two members split
 * the budget equally; written 3x past the budget with values half of
 * which compress, their used bytes stay under budget + the pool's
 * overshoot bound (budget / 100 + 4 MiB per cache) and their capacities
 * within the budget; a config with a capacity and a pool is refused
 * (LARDER_EINVAL), larder_set_capacity on a member too (LARDER_ESTATE),
 * and closing the pool while a member is open (LARDER_ESTATE); a member
 * closed gives its share back (the equal split recomputed: the other one
 * gets the whole budget).
 */
static void test_pool_claims_across_options(void)
{
	static const enum larder_policy policies[] = { LARDER_POLICY_S3FIFO, LARDER_POLICY_LRU,
						       LARDER_POLICY_WTINYLFU, LARDER_POLICY_ARC };
	const uint64_t budget = 8 * MiB;
	fill_text(claim_dict, sizeof claim_dict, 3);
	unsigned char v[4096];
	unsigned configs = 0;
	for (unsigned at = 0; at < 4 * 3; at++) { /* policy x codec, the TTL modes in turn */
		struct opts o = { policies[at / 3], 1, (int)(at % 3),
				  (enum ttl_mode)((at % 3 + at / 3) % 3) };
		larder_pool_config *pc = NULL;
		larder_pool *pool = NULL;
		REQUIRE_RC(larder_pool_config_create(&pc), LARDER_OK);
		CHECK_RC(larder_pool_config_set_budget(pc, budget), LARDER_OK);
		CHECK_RC(larder_pool_config_set_interval_ms(pc, 0), LARDER_OK);
		CHECK_RC(larder_pool_create(&pool, pc), LARDER_OK);
		larder_pool_config_destroy(pc);
		REQUIRE(pool);
		int rc;
		larder *m[2];
		m[0] = open_pool_member(pool, &o, &rc);
		CHECK_RC(rc, LARDER_OK);
		m[1] = open_pool_member(pool, &o, &rc);
		CHECK_RC(rc, LARDER_OK);
		REQUIRE(m[0] && m[1]);
		configs++;
		larder_config *cfg = NULL;
		larder *bad = NULL;
		REQUIRE_RC(larder_config_create(&cfg), LARDER_OK);
		CHECK_RC(larder_config_set_capacity(cfg, budget), LARDER_OK);
		CHECK_RC(larder_config_set_pool(cfg, pool), LARDER_OK);
		CHECK_RC(larder_open(&bad, cfg), LARDER_EINVAL);
		CHECK(bad == NULL);
		larder_config_destroy(cfg);
		CHECK_RC(larder_set_capacity(m[0], budget), LARDER_ESTATE);
		/* The newcomer grows to its half as the first gives bytes back. */
		CHECK(th_wait_until(has_half, m[1], 20000));
		CHECK_EQ(th_stat(m[0], LARDER_STAT_CAPACITY_BYTES), budget / 2);
		uint64_t written = 0;
		for (unsigned i = 0; written < 3 * budget; i++) {
			char k[16];
			size_t kl = (size_t)snprintf(k, sizeof k, "p%06u", i);
			fill_noise(v, sizeof v / 2, i);
			fill_text(v + sizeof v / 2, sizeof v / 2, i);
			CHECK_RC(larder_put(m[i % 2], k, kl, v, sizeof v, claim_ttl(o.ttl, i)),
				 LARDER_OK);
			written += sizeof v;
		}
		/* The counters lag the writes by a batching window: flushed. */
		CHECK_RC(th_flush(m[0], 60000), LARDER_OK);
		uint64_t st[LARDER_POOL_STAT_COUNT];
		CHECK_RC(larder_pool_stats(pool, st, LARDER_POOL_STAT_COUNT), LARDER_OK);
		CHECK_EQ(st[LARDER_POOL_OVERSHOOT_BOUND], budget / 100 + 2 * 4 * MiB);
		CHECK_LE(st[LARDER_POOL_USED_BYTES], budget + st[LARDER_POOL_OVERSHOOT_BOUND]);
		CHECK_LE(st[LARDER_POOL_ASSIGNED_BYTES], budget);
		CHECK_GT(th_stat(m[0], LARDER_STAT_EVICTIONS), 0);
		CHECK_RC(larder_pool_close(pool), LARDER_ESTATE);
		larder_close(m[1]);
		/* It grows in the background: a bounded wait, not a timing. */
		CHECK(th_wait_until(has_budget, m[0], 20000));
		larder_close(m[0]);
		CHECK_RC(larder_pool_close(pool), LARDER_OK);
	}
	CHECK_EQ(configs, 12);
}

static int read_back(const char *path, char *buf, size_t len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return -1;
	size_t n = fread(buf, 1, len - 1, f);
	buf[n] = 0;
	fclose(f);
	return (int)n;
}

/*
 * docs/persistence.md "Snapshots": a path that is a symbolic link is itself
 * replaced by the snapshot (the rename acts on the link, not its target); a save
 * over a snapshot replaces it whole; a device, FIFO or socket is refused
 * by a save (LARDER_EINVAL, nothing written) and a load (LARDER_EFORMAT)
 * and left as it was (SNAP-S2, SNAP-L7: the FIFO and /dev/null have their
 * tests, the socket had none); the temporary file (path.tmp.<pid>.<n>)
 * never outlives the save.
 */
static void test_save_paths_link_socket(void)
{
	char dir[] = "/tmp/larder-paths-XXXXXX";
	REQUIRE(mkdtemp(dir) != NULL);
	char target[64], link_path[64], sock_path[64], buf[64];
	snprintf(target, sizeof target, "%s/target", dir);
	snprintf(link_path, sizeof link_path, "%s/link", dir);
	snprintf(sock_path, sizeof sock_path, "%s/sock", dir);
	FILE *f = fopen(target, "wb");
	REQUIRE(f != NULL);
	fputs("not a snapshot", f);
	fclose(f);
	REQUIRE(symlink(target, link_path) == 0);
	larder *c = th_open(th_config(4 * MiB));
	REQUIRE(c);
	CHECK_RC(larder_put(c, "first", 5, "1", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_save(c, link_path), LARDER_OK);
	struct stat st;
	CHECK(lstat(link_path, &st) == 0 && S_ISREG(st.st_mode));
	CHECK_EQ(read_back(target, buf, sizeof buf), 14);
	CHECK_STR(buf, "not a snapshot");
	larder *d = th_open(th_config(4 * MiB));
	REQUIRE(d);
	CHECK_RC(larder_load(d, target), LARDER_EFORMAT);
	CHECK_RC(larder_load(d, link_path), LARDER_OK);
	CHECK_RC(larder_contains(d, "first", 5), LARDER_OK);
	/* A second save replaces the first whole. */
	CHECK_RC(larder_remove(c, "first", 5), LARDER_OK);
	CHECK_RC(larder_put(c, "second", 6, "2", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_save(c, link_path), LARDER_OK);
	CHECK_RC(larder_clear(d), LARDER_OK);
	CHECK_RC(larder_load(d, link_path), LARDER_OK);
	CHECK_RC(larder_contains(d, "first", 5), LARDER_MISS);
	CHECK_RC(larder_contains(d, "second", 6), LARDER_OK);
	/* A socket: refused, and still a socket. */
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	REQUIRE(fd >= 0);
	snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock_path);
	if (CHECK(bind(fd, (struct sockaddr *)&sa, sizeof sa) == 0)) {
		CHECK_RC(larder_save(c, sock_path), LARDER_EINVAL);
		CHECK_RC(larder_load(d, sock_path), LARDER_EFORMAT);
		CHECK(lstat(sock_path, &st) == 0 && S_ISSOCK(st.st_mode));
	}
	close(fd);
	/* Nothing but the three names: no temporary file left. */
	DIR *dh = opendir(dir);
	REQUIRE(dh != NULL);
	struct dirent *e;
	unsigned others = 0;
	while ((e = readdir(dh)) != NULL)
		if (e->d_name[0] != '.' && strcmp(e->d_name, "target") &&
		    strcmp(e->d_name, "link") && strcmp(e->d_name, "sock")) {
			fprintf(stderr, "  left behind: %s\n", e->d_name);
			others++;
		}
	closedir(dh);
	CHECK_EQ(others, 0);
	larder_close(d);
	larder_close(c);
	unlink(sock_path);
	unlink(link_path);
	unlink(target);
	rmdir(dir);
}

/* The charge of key's entry, from a cursor (0: not found). */
struct charge_of {
	const char *key;
	uint64_t bytes;
};

static void find_charge(void *ctx, const void *key, size_t key_len, const void *value,
			size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct charge_of *ch = ctx;
	(void)value;
	(void)value_len;
	(void)ttl_ms;
	if (key_len == strlen(ch->key) && memcmp(key, ch->key, key_len) == 0)
		ch->bytes = entry_bytes;
}

static uint64_t charge(larder *c, const char *key)
{
	struct charge_of ch = {key, 0};
	larder_iter *it = NULL;
	if (!CHECK_RC(larder_iter_open(c, &it), LARDER_OK))
		return 0;
	while (larder_iter_next(it, find_charge, &ch) == LARDER_OK)
		;
	larder_iter_close(it);
	return ch.bytes;
}

/* A value of another shape than fill_text's: CSV rows. */
static void fill_rows(unsigned char *v, size_t len, unsigned i)
{
	char row[64];
	int n = snprintf(row, sizeof row, "%u;alpha;%u.5;beta-gamma;%x\n", i, i * 7, i * 13);
	for (size_t k = 0; k < len; k++)
		v[k] = (unsigned char)row[k % (size_t)n];
}

/*
 * Writes up to n values of one shape, 100 at a time, each hundred flushed
 * (the maintainer trains between them); stops at the first hundred after
 * which the cache has a dictionary when until_dict. Returns whether it has
 * one.
 */
static int write_shape(larder *c, void (*fill)(unsigned char *, size_t, unsigned), unsigned n,
		       int until_dict)
{
	unsigned char v[600];
	char k[16];
	for (unsigned i = 0; i < n; i++) {
		fill(v, sizeof v, i);
		size_t kl = (size_t)snprintf(k, sizeof k, "t%05u", i);
		if (!CHECK_RC(larder_put(c, k, kl, v, sizeof v, LARDER_TTL_NEVER), LARDER_OK))
			break;
		if (i % 100 == 99 && CHECK_RC(larder_flush(c, 60000 * TH_SLOW), LARDER_OK) &&
		    until_dict && th_stat(c, LARDER_STAT_DICT_BYTES) > 0)
			break;
	}
	return th_stat(c, LARDER_STAT_DICT_BYTES) > 0;
}

/*
 * docs/compression.md "The dictionary": a cache has at most one dictionary
 * in its life, and is not retrained when the values change shape. A trained
 * dictionary stays after a clear and after as many values of another
 * shape as trained it: a probe value's stored size (its entry's charge)
 * and LARDER_STAT_DICT_BYTES are what they were. A given dictionary is
 * there from the open and stays the same through writes, a clear and a
 * capacity change.
 */
static void test_dictionary_once_per_life(void)
{
	unsigned char probe[600];
	fill_text(probe, sizeof probe, 7);
	larder_config *cfg = th_config(16 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
	larder *c = th_open(cfg);
	REQUIRE(c);
	REQUIRE(write_shape(c, fill_text, 4000, 1));
	uint64_t dict = th_stat(c, LARDER_STAT_DICT_BYTES);
	CHECK_RC(larder_put(c, "probe", 5, probe, sizeof probe, LARDER_TTL_NEVER), LARDER_OK);
	uint64_t trained = charge(c, "probe");
	CHECK_GT(trained, 0);
	CHECK_RC(larder_clear(c), LARDER_OK);
	write_shape(c, fill_rows, 4000, 0); /* more than trained the first */
	CHECK_EQ(th_stat(c, LARDER_STAT_DICT_BYTES), dict);
	CHECK_RC(larder_put(c, "probe", 5, probe, sizeof probe, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_EQ(charge(c, "probe"), trained);
	larder_close(c);

	cfg = th_config(16 * MiB);
	REQUIRE(cfg);
	REQUIRE_RC(larder_config_set_compression(cfg, 64, 10), LARDER_OK);
	REQUIRE_RC(larder_config_set_compression_dictionary(cfg, LARDER_DICTIONARY_GIVEN, probe,
							    sizeof probe),
		   LARDER_OK);
	c = th_open(cfg);
	REQUIRE(c);
	dict = th_stat(c, LARDER_STAT_DICT_BYTES);
	CHECK_GT(dict, 0);
	CHECK_RC(larder_put(c, "probe", 5, probe, sizeof probe, LARDER_TTL_NEVER), LARDER_OK);
	uint64_t given = charge(c, "probe");
	write_shape(c, fill_rows, 4000, 0);
	CHECK_EQ(th_stat(c, LARDER_STAT_DICT_BYTES), dict);
	CHECK_RC(larder_clear(c), LARDER_OK);
	CHECK_RC(larder_set_capacity(c, 8 * MiB), LARDER_OK);
	CHECK_RC(larder_flush(c, 60000 * TH_SLOW), LARDER_OK);
	CHECK_EQ(th_stat(c, LARDER_STAT_DICT_BYTES), dict);
	CHECK_RC(larder_put(c, "probe", 5, probe, sizeof probe, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_EQ(charge(c, "probe"), given);
	larder_close(c);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_touch_keeps_entry_limit),
		TH_TEST(test_range_mode_retry_no_duplicates),
		TH_TEST(test_bulk_credit_for_compressible_over_limit),
		TH_TEST(test_dictionary_sample_across_shards),
		TH_TEST(test_iter_and_snapshot_claims_across_options),
		TH_TEST(test_pool_claims_across_options),
		TH_TEST(test_save_paths_link_socket),
		TH_TEST(test_dictionary_once_per_life),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
