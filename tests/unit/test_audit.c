/*
 * tests/unit/test_audit.c - the second outside audit: documented contracts
 * of larder.h that the per-area tests and test_outside.c / test_contracts.c
 * left unchecked, each found wrong once and fixed (this file also runs as
 * unit_audit_shards4).
 *
 * Checked, from outside (larder.h and the harness's injected clock only):
 *   - larder_clear()'s causes, as Caffeine's invalidateAll reports them: an
 *     entry already past its deadline at the clear (not yet reaped by its
 *     maintainer) leaves as EXPIRED, every entry live at the clear as
 *     CLEARED, even when its deadline passes before the background walk
 *     reaches it; each exactly once, and the counters agree; a cache that
 *     never had a deadline does not read its clock for a clear (the clock
 *     is called "only for operations that involve a TTL");
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>

#include "harness.h"

#define KiB ((uint64_t)1024)
#define MiB (1024 * KiB)
#define T0 1000u
#define WAIT_MS 20000u

static size_t key_of(char *buf, const char *kind, unsigned i)
{
	return (size_t)snprintf(buf, 32, "%s:%05u", kind, i);
}

/* ---- clear's causes --------------------------------------------------------- */

enum { NCLEAR = 1500 };

/* The listener's record: each key's cause, and how often it was told. */
struct causes {
	_Atomic int cause[3][NCLEAR];
	_Atomic int calls[3][NCLEAR];
	_Atomic uint64_t per_cause[5];
	_Atomic uint64_t stray; /* a key this test did not write */
};

static const char *const KINDS[3] = { "short", "long", "none" };

static void on_removal(void *ctx, const void *key, size_t key_len, const void *value,
		       size_t value_len, enum larder_cause cause)
{
	struct causes *r = ctx;
	(void)value;
	(void)value_len;
	char buf[32];
	if (key_len >= sizeof buf)
		goto stray;
	memcpy(buf, key, key_len);
	buf[key_len] = 0;
	atomic_fetch_add(&r->per_cause[cause], 1);
	for (int k = 0; k < 3; k++) {
		size_t n = strlen(KINDS[k]);
		if (key_len > n && !memcmp(buf, KINDS[k], n) && buf[n] == ':') {
			unsigned i = (unsigned)strtoul(buf + n + 1, NULL, 10);
			if (i >= NCLEAR)
				goto stray;
			atomic_store(&r->cause[k][i], (int)cause);
			atomic_fetch_add(&r->calls[k][i], 1);
			return;
		}
	}
stray:
	atomic_fetch_add(&r->stray, 1);
}

static larder *open_listening(struct th_clock *clk, struct causes *r, unsigned shards)
{
	larder_config *cfg = th_config(64 * MiB);
	if (!cfg)
		return NULL;
	CHECK_RC(larder_config_set_shards(cfg, shards), LARDER_OK);
	CHECK_RC(larder_config_set_clock(cfg, th_clock_fn, clk), LARDER_OK);
	CHECK_RC(larder_config_set_removal_listener(cfg, on_removal, r), LARDER_OK);
	return th_open(cfg);
}

/* Writes NCLEAR keys of each kind: short (10 ms), long (1 h), none. */
static void write_kinds(larder *c)
{
	static const uint64_t ttl[3] = { 10, 3600000, LARDER_TTL_NEVER };
	char key[32];
	for (int k = 0; k < 3; k++)
		for (unsigned i = 0; i < NCLEAR; i++)
			CHECK_RC(larder_put(c, key, key_of(key, KINDS[k], i), "v", 1, ttl[k]),
				 LARDER_OK);
}

/* Every key of kind k told exactly once, with cause want. */
static void check_kind(struct causes *r, int k, enum larder_cause want)
{
	unsigned wrong = 0, first = NCLEAR;
	for (unsigned i = 0; i < NCLEAR; i++)
		if (atomic_load(&r->calls[k][i]) != 1 || atomic_load(&r->cause[k][i]) != (int)want) {
			wrong++;
			first = first < i ? first : i;
		}
	if (!CHECK_EQ(wrong, 0))
		fprintf(stderr, "  %s keys: %u not told once as %s (first %s:%05u: %d calls, cause %s)\n",
			KINDS[k], wrong, larder_cause_name(want), KINDS[k], first,
			atomic_load(&r->calls[k][first]),
			larder_cause_name((enum larder_cause)atomic_load(&r->cause[k][first])));
}

/*
 * An entry past its deadline at the clear leaves as EXPIRED, whoever reaches
 * it first (its maintainer's expiry or the clear's walk: the clock moves and
 * the clear follows at once, so the walk reaches most of them first); the
 * entries live at the clear leave as CLEARED. Then the other edge: entries
 * live at a clear whose deadlines pass right after it, before the walk, are
 * CLEARED (the cause is judged at the clear, as Caffeine judges it at
 * invalidateAll).
 */
static void test_clear_reports_expired_as_expired(void)
{
	static const unsigned shards[] = { 1, 2, 4 };
	for (size_t s = 0; s < TH_COUNT(shards); s++) {
		struct th_clock clk;
		th_clock_init(&clk, T0);
		struct causes *r = calloc(1, sizeof *r);
		REQUIRE(r);
		larder *c = open_listening(&clk, r, shards[s]);
		if (!c) {
			free(r);
			return;
		}
		write_kinds(c);
		CHECK_RC(larder_flush(c, WAIT_MS), LARDER_OK);
		th_clock_advance(&clk, 20); /* the short ones are past their deadline */
		CHECK_RC(larder_clear(c), LARDER_OK);
		CHECK_RC(larder_flush(c, WAIT_MS), LARDER_OK);
		check_kind(r, 0, LARDER_CAUSE_EXPIRED);
		check_kind(r, 1, LARDER_CAUSE_CLEARED);
		check_kind(r, 2, LARDER_CAUSE_CLEARED);
		CHECK_EQ(th_stat(c, LARDER_STAT_EXPIRATIONS), NCLEAR);
		CHECK_EQ(th_stat(c, LARDER_STAT_CLEARED), 2 * NCLEAR);
		CHECK_EQ(th_stat(c, LARDER_STAT_ENTRIES), 0);
		CHECK_EQ(atomic_load(&r->stray), 0);

		/* Live at the clear, past the deadline before the walk. */
		memset(r, 0, sizeof *r);
		write_kinds(c);
		CHECK_RC(larder_flush(c, WAIT_MS), LARDER_OK);
		CHECK_RC(larder_clear(c), LARDER_OK);
		th_clock_advance(&clk, 20);
		CHECK_RC(larder_flush(c, WAIT_MS), LARDER_OK);
		for (int k = 0; k < 3; k++)
			check_kind(r, k, LARDER_CAUSE_CLEARED);
		CHECK_EQ(th_stat(c, LARDER_STAT_EXPIRATIONS), NCLEAR);
		CHECK_EQ(th_stat(c, LARDER_STAT_CLEARED), 5 * NCLEAR);
		CHECK_EQ(atomic_load(&r->per_cause[LARDER_CAUSE_CLEARED]), 3 * NCLEAR);
		larder_close(c);
		free(r);
	}
}

/* A cache that never gave an entry a deadline: no clock call for a clear. */
static void test_clear_without_deadlines_reads_no_clock(void)
{
	struct th_clock clk;
	th_clock_init(&clk, T0);
	struct causes *r = calloc(1, sizeof *r);
	REQUIRE(r);
	larder *c = open_listening(&clk, r, th_shards());
	if (!c) {
		free(r);
		return;
	}
	char key[32];
	for (unsigned i = 0; i < NCLEAR; i++)
		CHECK_RC(larder_put(c, key, key_of(key, "none", i), "v", 1, LARDER_TTL_NEVER),
			 LARDER_OK);
	uint64_t before = atomic_load(&clk.calls);
	CHECK_RC(larder_clear(c), LARDER_OK);
	CHECK_RC(larder_flush(c, WAIT_MS), LARDER_OK);
	CHECK_EQ(atomic_load(&clk.calls), before);
	check_kind(r, 2, LARDER_CAUSE_CLEARED);
	larder_close(c);
	free(r);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_clear_reports_expired_as_expired),
		TH_TEST(test_clear_without_deadlines_reads_no_clock),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
