/*
 * tests/unit/test_clockbound.c - the TSC bound on the default clock
 * (src/core/clockbound.[ch]).
 *
 * Checked:
 *   - the rate: at least the measured rate times 257/256 (rounded up) and
 *     not much more, from 2 ticks per ms to 10^9, over spans up to 2^63
 *     ticks; none for a TSC slower than a tick per ms or an empty span;
 *   - the arithmetic of CLOCKBOUND-C1 on a model clock: from a sample taken
 *     at any point of its millisecond, U at every later tick is above the
 *     clock's value 1 ms later, up to 2^64 - 1 ticks (the 128-bit product),
 *     and at most 3 ms + 1/256 of the distance above it; before the sample
 *     there is a bound only at or above its floor; B is refused where it
 *     would lie before tick 0 (with the origin 0; the sample's own ms as
 *     the origin, as a calibration sets it, needs only 2 ms of ticks);
 *   - the sample's order on the real TSC: a clock that is slow to return
 *     (5 ms after its reading) still gives a bound above the clock;
 *   - CLOCKBOUND-C2: a bound made too low is caught by the next refresh,
 *     which withdraws it and counts the failure;
 *   - refreshes, switches and readers racing (threads): every bound a
 *     reader gets is at least the clock it read just before.
 * Where the machine has no bound (not x86, a clock source other than the
 * TSC) the tests on the real TSC say so and check only that none is given.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>

#include "core/clockbound.h"
#include "harness.h"

#define NS_PER_MS 1000000u

static void test_rate(void)
{
	static const uint64_t per_ms[] = {2, 3, 1000, 2100000, 2999999, 3000000, 1000000000};
	static const uint64_t span_ms[] = {1, 50, 1000, 3600000, 1ull << 40};
	for (size_t i = 0; i < TH_COUNT(per_ms); i++) {
		for (size_t j = 0; j < TH_COUNT(span_ms); j++) {
			uint64_t ticks = per_ms[i] * span_ms[j], ns = span_ms[j] * NS_PER_MS;
			if (ticks / per_ms[i] != span_ms[j] || ns / NS_PER_MS != span_ms[j])
				continue; /* beyond 64 bits */
			uint64_t mul = larder__clockbound_rate(ns, ticks);
			if (ns > UINT64_MAX / 257) { /* over 2.2 years: refused */
				CHECK_EQ(mul, 0);
				continue;
			}
			long double want = 18446744073709551616.0L / per_ms[i] * 257 / 256;
			if (!CHECK_NE(mul, 0))
				continue;
			CHECK((long double)mul >= want * (1 - 1e-15L));
			CHECK((long double)mul <= want * (1 + 1e-12L) + 1);
		}
	}
	/* The widest span: 2^63 ticks, and the longest: 2^55 ns (1.1 years). */
	uint64_t mul = larder__clockbound_rate(1ull << 55, 1ull << 63);
	CHECK((long double)mul >= 18446744073709551616.0L * (1ull << 55) / 1e6L / (1ull << 63) *
					  257 / 256 * (1 - 1e-15L));
	CHECK_EQ(larder__clockbound_rate(NS_PER_MS, 1), 0);     /* 1 tick per ms: 257/256 ms per tick */
	CHECK_EQ(larder__clockbound_rate(0, 1000), 0);
	CHECK_EQ(larder__clockbound_rate(1000, 0), 0);
	CHECK_EQ(larder__clockbound_rate(UINT64_MAX, 1ull << 63), 0); /* the numerator's limit */
}

/* The model clock: per_ms ticks per ms exactly, and at tick `at` it read
 * ns_at. Its value in whole ms at tick t >= at. */
static uint64_t model_ms(uint64_t per_ms, uint64_t at, uint64_t ns_at, uint64_t t)
{
	unsigned __int128 ns = (unsigned __int128)ns_at +
			       (unsigned __int128)(t - at) * NS_PER_MS / per_ms;
	return (uint64_t)(ns / NS_PER_MS);
}

/* The bound of a sample at tick `at` that read ns_at (ms whole), with the
 * origin origin_ms, against the model clock of per_ms ticks per ms. */
static unsigned check_sample(uint64_t per_ms, uint64_t mul, uint64_t at, uint64_t ns_at,
			     uint64_t origin_ms)
{
	uint64_t ms = ns_at / NS_PER_MS, floor_ms = ms + 1;
	uint64_t base = larder__clockbound_base(at, ms - origin_ms, mul);
	unsigned checked = 0;
	if (base == UINT64_MAX) { /* refused: B before tick 0 */
		CHECK((unsigned __int128)(ms - origin_ms + 2) * per_ms > at);
		return 0;
	}
	for (uint64_t d = 0; d < 3 * per_ms + 7; d += per_ms / 3 + 1) {
		/* The ticks just after the sample, ... */
		uint64_t t = at + d;
		uint64_t u = larder__clockbound_eval(t, base, floor_ms, mul, origin_ms);
		uint64_t later = model_ms(per_ms, at, ns_at, t + per_ms);
		CHECK_GE(u, later);
		CHECK_LE(u, later + 3);
		checked++;
		/* ... and before it: no bound, or one at least the sample's
		 * clock + 1. */
		if (at >= d + 1) {
			u = larder__clockbound_eval(at - d - 1, base, floor_ms, mul, origin_ms);
			CHECK(u == UINT64_MAX || u >= ms + 1);
		}
	}
	/* ... and far later, up to the last tick. */
	for (uint64_t d = per_ms * 1000; d && d <= UINT64_MAX - at - per_ms;
	     d = d > UINT64_MAX / 7 ? 0 : d * 7) {
		uint64_t t = at + d;
		uint64_t u = larder__clockbound_eval(t, base, floor_ms, mul, origin_ms);
		uint64_t later = model_ms(per_ms, at, ns_at, t + per_ms);
		CHECK_GE(u, later);
		CHECK((long double)u <= later + 3 + (later - ms) / 255.0L);
		checked++;
	}
	uint64_t last = larder__clockbound_eval(UINT64_MAX, base, floor_ms, mul, origin_ms);
	CHECK_GE(last, model_ms(per_ms, at, ns_at, UINT64_MAX));
	return checked;
}

static void test_bound_arithmetic(void)
{
	static const uint64_t per_ms[] = {2, 1000, 2100000, 3000000, 1000000000};
	static const uint64_t at_ticks[] = {1ull << 30, 1ull << 40, 1ull << 62, 1ull << 63,
					    UINT64_MAX - (1ull << 40)};
	static const uint64_t ms_at[] = {0, 5, 1000, 86400000, 1ull << 36};
	static const uint64_t frac_ns[] = {0, 1, 500000, 999999};
	unsigned checked = 0;
	for (size_t i = 0; i < TH_COUNT(per_ms); i++) {
		/* Calibrated on this clock over a second (exact brackets). */
		uint64_t mul = larder__clockbound_rate(1000 * NS_PER_MS, per_ms[i] * 1000);
		REQUIRE(mul != 0);
		for (size_t j = 0; j < TH_COUNT(at_ticks); j++)
			for (size_t k = 0; k < TH_COUNT(ms_at); k++)
				for (size_t f = 0; f < TH_COUNT(frac_ns); f++) {
					uint64_t ns_at = ms_at[k] * NS_PER_MS + frac_ns[f];
					/* Origins: none, and the sample's own ms. */
					checked += check_sample(per_ms[i], mul, at_ticks[j], ns_at, 0);
					checked += check_sample(per_ms[i], mul, at_ticks[j], ns_at,
								ms_at[k]);
				}
	}
	printf("  %u bounds checked\n", checked);
	/* Refusals and the limits of the product. */
	CHECK_EQ(larder__clockbound_base(1000, UINT64_MAX - 1, 1ull << 40), UINT64_MAX);
	CHECK_EQ(larder__clockbound_base(1000, 5, 0), UINT64_MAX);
	CHECK_EQ(larder__clockbound_eval(UINT64_MAX, 0, 0, UINT64_MAX, 0), UINT64_MAX - 1);
	CHECK_EQ(larder__clockbound_eval(UINT64_MAX, 0, 0, UINT64_MAX, 1), UINT64_MAX); /* 2^64 - 1 */
	CHECK_EQ(larder__clockbound_eval(UINT64_MAX, 0, 0, UINT64_MAX, 2), UINT64_MAX); /* over */
	CHECK_EQ(larder__clockbound_eval(5, 6, 0, 1ull << 40, 0), UINT64_MAX);
	CHECK_EQ(larder__clockbound_eval(7, 6, 1, 1ull << 40, 0), UINT64_MAX); /* below the floor */
	CHECK_EQ(larder__clockbound_eval(7, 6, 1, 1ull << 40, 1), 1);
}

/* A clock that returns 5 ms after its reading. */
static uint64_t slow_ns(void)
{
	uint64_t ns = th_now_ns();
	while (th_now_ns() < ns + 5 * NS_PER_MS)
		;
	return ns;
}

static void test_sample_order(void)
{
	if (!larder__test_clockbound(LARDER__CLOCKBOUND_ON)) {
		printf("  no TSC bound here: skipped\n");
		CHECK_EQ(larder__clockbound_upper(), UINT64_MAX);
		return;
	}
	/* Relaxed: published by the seam's call on this thread. */
	uint64_t mul = atomic_load_explicit(&larder__clockbound.mul, LARDER__RELAXED);
	for (int i = 0; i < 20; i++) {
		struct larder__clock_sample s;
		larder__clockbound_sample(&s, slow_ns);
		uint64_t ms = s.ns / NS_PER_MS;
		uint64_t base = larder__clockbound_base(s.before, 0, mul); /* the origin: ms */
		/* A TSC read after a clock reading (that of a sample). */
		struct larder__clock_sample now;
		larder__clockbound_sample(&now, th_now_ns);
		uint64_t u = larder__clockbound_eval(now.after, base, ms + 1, mul, ms);
		CHECK_GE(u, now.ns / NS_PER_MS);
		CHECK_LE(s.before, s.after);
	}
}

static int bound_given(void *ctx)
{
	(void)ctx;
	return larder__clockbound_upper() != UINT64_MAX;
}

static void test_self_check(void)
{
	if (!larder__test_clockbound(LARDER__CLOCKBOUND_ON)) {
		printf("  no TSC bound here: skipped\n");
		return;
	}
	uint64_t failures = larder__test_clockbound_failures();
	/* A refresh of a sound bound finds nothing. */
	larder__clockbound_refresh();
	CHECK_EQ(larder__test_clockbound_failures(), failures);
	/* Frozen and made 50 ms too low: once past its floor it is below the
	 * clock, and the next refresh (frozen or not, it checks) withdraws it. */
	CHECK(larder__test_clockbound(LARDER__CLOCKBOUND_FREEZE));
	larder__test_clockbound_skew(50);
	REQUIRE(th_wait_until(bound_given, NULL, 10000));
	CHECK_LT(larder__clockbound_upper(), th_now_ms());
	larder__clockbound_refresh();
	CHECK_EQ(larder__test_clockbound_failures(), failures + 1);
	CHECK_EQ(larder__clockbound_upper(), UINT64_MAX);
	larder__clockbound_refresh(); /* off for good: no new bound */
	CHECK_EQ(larder__clockbound_upper(), UINT64_MAX);
	CHECK(larder__test_clockbound(LARDER__CLOCKBOUND_ON));
	CHECK_NE(larder__clockbound_upper(), UINT64_MAX);
}

struct race {
	atomic_int stop;
	atomic_ulong reads, bounded, wrong;
};

static void *race_refresh(void *arg)
{
	struct race *r = arg;
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed))
		larder__clockbound_refresh();
	return NULL;
}

static void *race_read(void *arg)
{
	struct race *r = arg;
	while (!atomic_load_explicit(&r->stop, memory_order_relaxed)) {
		uint64_t clock_ms = th_now_ms();
		uint64_t u = larder__clockbound_upper();
		atomic_fetch_add_explicit(&r->reads, 1, memory_order_relaxed);
		if (u != UINT64_MAX) {
			atomic_fetch_add_explicit(&r->bounded, 1, memory_order_relaxed);
			if (u < clock_ms)
				atomic_fetch_add_explicit(&r->wrong, 1, memory_order_relaxed);
		}
	}
	return NULL;
}

static void test_race(void)
{
	int live = larder__test_clockbound(LARDER__CLOCKBOUND_ON);
	uint64_t failures = larder__test_clockbound_failures();
	static struct race r;
	pthread_t th[4];
	for (int i = 0; i < 4; i++)
		REQUIRE(pthread_create(&th[i], NULL, i < 2 ? race_refresh : race_read, &r) == 0);
	/* Switch the bound while they run: frozen, off, on again, for 1 s and,
	 * where there is a bound, until a reader has got one (a loaded machine
	 * may start the readers after the second; a minute is the hang guard). */
	uint64_t end = th_now_ms() + 1000, until = th_now_ms() + 60000 * TH_SLOW;
	for (unsigned i = 0;
	     th_now_ms() < end ||
	     (live && !atomic_load_explicit(&r.bounded, memory_order_relaxed) && th_now_ms() < until);
	     i++)
		larder__test_clockbound(i % 3 == 0   ? LARDER__CLOCKBOUND_FREEZE
					: i % 3 == 1 ? LARDER__CLOCKBOUND_OFF
						     : LARDER__CLOCKBOUND_ON);
	atomic_store(&r.stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	larder__test_clockbound(LARDER__CLOCKBOUND_ON);
	printf("  %lu reads, %lu with a bound\n", (unsigned long)r.reads,
	       (unsigned long)r.bounded);
	CHECK_EQ(r.wrong, 0);
	CHECK_EQ(larder__test_clockbound_failures(), failures);
	CHECK(live ? r.bounded > 0 : r.bounded == 0);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_rate),
		TH_TEST(test_bound_arithmetic),
		TH_TEST(test_sample_order),
		TH_TEST(test_self_check),
		TH_TEST(test_race),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
