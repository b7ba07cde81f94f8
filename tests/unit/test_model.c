/*
 * tests/unit/test_model.c - random operation sequences against a reference model.
 *
 * Usage: test_model [--ops N] [--seed N]
 *
 * One thread drives every public operation, in random order, on a cache big
 * enough never to evict, with an injected clock that the test advances by
 * random steps; a plain array of (present, value, deadline) per key predicts
 * every result code, every value, and every remaining TTL exactly. The
 * combinations (touch then replace, put_if_absent over an expired entry,
 * remove_if_equals at the deadline, clear between, ...) come from the seed
 * rather than from a list someone thought of.
 *
 * Invariants checked: M1. each call returns what the model predicts (larder.h
 * semantics, expiry at exactly the deadline); M2. every read returns the
 * model's bytes; M3. at checkpoints, counters agree with a full walk.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "harness.h"

#define NKEYS 48
#define MAXV 48
#define DEFAULT_TTL 50u
#define T0 1000000u

struct mkey {
	int present;
	size_t len;
	unsigned char v[MAXV];
	uint64_t deadline; /* UINT64_MAX: none */
};

static struct mkey model[NKEYS];
static struct th_clock clk;
static uint64_t seed_arg, ops_arg;
static long mismatches;

static uint64_t now(void)
{
	return atomic_load(&clk.now_ms);
}

static int live(int k)
{
	return model[k].present && now() < model[k].deadline;
}

static void key_of(int k, char *buf, size_t size)
{
	snprintf(buf, size, "m%d", k);
}

/* The deadline a write or touch with this ttl sets now. */
static uint64_t deadline_for(uint64_t ttl)
{
	if (ttl == LARDER_TTL_DEFAULT)
		ttl = DEFAULT_TTL;
	return ttl == LARDER_TTL_NEVER ? UINT64_MAX : now() + ttl;
}

static uint64_t pick_ttl(struct th_rng *r)
{
	switch (th_rng_below(r, 4)) {
	case 0:
		return LARDER_TTL_DEFAULT;
	case 1:
		return LARDER_TTL_NEVER;
	default:
		return 1 + th_rng_below(r, 100);
	}
}

static void store(int k, const unsigned char *v, size_t len, uint64_t ttl)
{
	model[k].present = 1;
	model[k].len = len;
	memcpy(model[k].v, v, len);
	model[k].deadline = deadline_for(ttl);
}

static int equal(int k, const unsigned char *v, size_t len)
{
	return model[k].len == len && memcmp(model[k].v, v, len) == 0;
}

#define EXPECT(op, got, want)                                                         \
	do {                                                                          \
		long g_ = (long)(got), w_ = (long)(want);                             \
		if (g_ != w_ && mismatches++ < 20)                                    \
			th_fail(__FILE__, __LINE__, "op %ld %s(key %d) at t+%" PRIu64     \
				": %ld (%s), model says %ld (%s)",                      \
				i, op, k, now() - T0, g_, larder_strerror((int)g_), w_,  \
				larder_strerror((int)w_));                              \
		else if (g_ != w_)                                                    \
			th_fail_quiet();                                              \
	} while (0)

struct got {
	int calls;
	size_t len;
	unsigned char v[MAXV];
};

static void got_fn(void *ctx, const void *value, size_t len)
{
	struct got *g = ctx;

	g->calls++;
	g->len = len;
	memcpy(g->v, value, len < MAXV ? len : MAXV);
}

struct batch_got {
	const int *ids;
	long calls, bad;
};

static void batch_got_fn(void *ctx, size_t index, const void *value, size_t len)
{
	struct batch_got *b = ctx;
	int k = b->ids[index];

	b->calls++;
	if (!live(k) || !equal(k, value, len))
		b->bad++;
}

static void check_reads(long i, int k, larder *c)
{
	char key[16];
	unsigned char buf[MAXV];
	size_t len = 0;
	struct got g = {0, 0, {0}};
	uint64_t ttl = 0;
	int rc, want = live(k) ? LARDER_OK : LARDER_MISS;

	key_of(k, key, sizeof(key));
	rc = larder_get(c, key, strlen(key), buf, sizeof(buf), &len);
	EXPECT("get", rc, want);
	if (rc == LARDER_OK && want == LARDER_OK && !equal(k, buf, len))
		EXPECT("get value", 1, 0);
	rc = larder_get_with(c, key, strlen(key), got_fn, &g);
	EXPECT("get_with", rc, want);
	EXPECT("get_with calls", g.calls, want == LARDER_OK);
	if (g.calls == 1 && want == LARDER_OK && !equal(k, g.v, g.len))
		EXPECT("get_with value", 1, 0);
	EXPECT("contains", larder_contains(c, key, strlen(key)), want);
	rc = larder_ttl_remaining(c, key, strlen(key), &ttl);
	EXPECT("ttl_remaining", rc, want);
	if (rc == LARDER_OK && want == LARDER_OK) {
		uint64_t d = model[k].deadline;
		uint64_t want_ttl = d == UINT64_MAX ? LARDER_TTL_NEVER : d - now();
		if (ttl != want_ttl && mismatches++ < 20)
			th_fail(__FILE__, __LINE__, "op %ld ttl_remaining(key %d) = %" PRIu64
				", model says %" PRIu64, i, k, ttl, want_ttl);
	}
}

static void do_batch(long i, larder *c, struct th_rng *r)
{
	int ids[6], k = -1;
	char names[6][16];
	const void *keys[6];
	size_t lens[6];
	struct batch_got b = {ids, 0, 0};
	long want = 0, n;

	for (int j = 0; j < 6; j++) {
		ids[j] = (int)th_rng_below(r, NKEYS);
		key_of(ids[j], names[j], sizeof(names[j]));
		keys[j] = names[j];
		lens[j] = strlen(names[j]);
		want += live(ids[j]);
	}
	n = larder_get_batch(c, 6, keys, lens, batch_got_fn, &b);
	EXPECT("get_batch", n, want);
	EXPECT("get_batch calls", b.calls, want);
	EXPECT("get_batch bad values", b.bad, 0);
}

static void do_write(long i, int k, larder *c, struct th_rng *r, uint64_t op)
{
	char key[16];
	unsigned char v[MAXV], ex[MAXV];
	size_t len = (size_t)th_rng_below(r, MAXV + 1), exlen;
	uint64_t ttl = pick_ttl(r);
	int rc, want;

	key_of(k, key, sizeof(key));
	for (size_t j = 0; j < len; j++)
		v[j] = (unsigned char)th_rng_next(r);
	/* an expected value: the model's current one or a random other */
	if (model[k].present && th_rng_below(r, 3) != 0) {
		exlen = model[k].len;
		memcpy(ex, model[k].v, exlen);
	} else {
		exlen = (size_t)th_rng_below(r, 4);
		for (size_t j = 0; j < exlen; j++)
			ex[j] = (unsigned char)th_rng_below(r, 2);
	}
	switch (op) {
	case 0:
		EXPECT("put", larder_put(c, key, strlen(key), v, len, ttl), LARDER_OK);
		store(k, v, len, ttl);
		break;
	case 1:
		want = live(k) ? LARDER_EXISTS : LARDER_OK;
		EXPECT("put_if_absent", larder_put_if_absent(c, key, strlen(key), v, len, ttl), want);
		if (want == LARDER_OK)
			store(k, v, len, ttl);
		break;
	case 2:
		want = live(k) ? LARDER_OK : LARDER_MISS;
		EXPECT("replace", larder_replace(c, key, strlen(key), v, len, ttl), want);
		if (want == LARDER_OK)
			store(k, v, len, ttl);
		break;
	case 3:
		want = !live(k) ? LARDER_MISS : equal(k, ex, exlen) ? LARDER_OK : LARDER_MISMATCH;
		rc = larder_replace_if_equals(c, key, strlen(key), ex, exlen, v, len, ttl);
		EXPECT("replace_if_equals", rc, want);
		if (want == LARDER_OK)
			store(k, v, len, ttl);
		break;
	case 4:
		want = live(k) ? LARDER_OK : LARDER_MISS;
		EXPECT("remove", larder_remove(c, key, strlen(key)), want);
		model[k].present = 0;
		break;
	case 5:
		want = !live(k) ? LARDER_MISS : equal(k, ex, exlen) ? LARDER_OK : LARDER_MISMATCH;
		EXPECT("remove_if_equals", larder_remove_if_equals(c, key, strlen(key), ex, exlen),
		       want);
		if (want != LARDER_MISMATCH)
			model[k].present = 0;
		break;
	default:
		want = live(k) ? LARDER_OK : LARDER_MISS;
		EXPECT("touch", larder_touch(c, key, strlen(key), ttl), want);
		if (want == LARDER_OK)
			model[k].deadline = deadline_for(ttl);
		break;
	}
	if (!live(k))
		model[k].present = 0; /* absent or expired: the same to every later call */
}

static void test_model(void)
{
	larder_config *config = th_config(64 * 1024 * 1024);
	struct th_rng r = {seed_arg};
	larder *c;

	memset(model, 0, sizeof(model));
	th_clock_init(&clk, T0);
	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_clock(config, th_clock_fn, &clk), LARDER_OK);
	CHECK_RC(larder_config_set_default_ttl_ms(config, DEFAULT_TTL), LARDER_OK);
	CHECK_RC(larder_config_set_max_value_bytes(config, MAXV), LARDER_OK);
	c = th_open(config);
	REQUIRE(c != NULL);
	for (long i = 0; i < (long)ops_arg && mismatches < 1000; i++) {
		int k = (int)th_rng_below(&r, NKEYS);
		uint64_t op = th_rng_below(&r, 1000);

		if (op < 350) {
			do_write(i, k, c, &r, th_rng_below(&r, 7));
		} else if (op < 700) {
			check_reads(i, k, c);
		} else if (op < 780) {
			do_batch(i, c, &r);
		} else if (op < 990) {
			/* time passes: often a little, sometimes right onto a deadline */
			if (model[k].present && model[k].deadline != UINT64_MAX &&
			    model[k].deadline > now() && th_rng_below(&r, 4) == 0)
				atomic_store(&clk.now_ms, model[k].deadline - th_rng_below(&r, 2));
			else
				th_clock_advance(&clk, th_rng_below(&r, 8));
		} else if (op < 993) {
			EXPECT("clear", larder_clear(c), LARDER_OK);
			memset(model, 0, sizeof(model));
		} else {
			th_check_accounting(c, 10000, NULL, NULL);
		}
	}
	for (int k = 0; k < NKEYS; k++)
		check_reads((long)ops_arg, k, c);
	th_check_accounting(c, 10000, NULL, NULL);
	larder_close(c);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_model),
	};

	ops_arg = th_arg_u64(argc, argv, "--ops", TH_TSAN ? 50000 : 300000);
	seed_arg = th_arg_seed(argc, argv);
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
