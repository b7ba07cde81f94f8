/*
 * core/clockbound.h - an upper bound on the default clock's time from the
 * TSC, so that a read of an entry whose deadline is not near needs no clock
 * read (core/cache.c, clock_upper; docs/ttl.md, "Reads and the TSC bound").
 *
 * The default clock is CLOCK_MONOTONIC in whole milliseconds
 * (larder__clock_default). Reading it costs a vDSO call whose ordered rdtsc
 * stalls the pipeline (~40 ns per get in a VM); a plain rdtsc costs a few.
 * A read may skip the clock only when an UPPER bound U on the clock's
 * current time lies before the entry's deadline: then the deadline has not
 * passed, whatever the clock says. Otherwise it reads the clock as before.
 *
 * Design. One process-wide word B, refreshed by the maintainers (each pass
 * of a cache that uses the default clock and holds deadlines:
 * larder__clockbound_refresh), and a rate mul fixed once per process:
 *
 *     U(tsc) = O + (((tsc - B) * mul) >> 64)     (128-bit product, tsc >= B)
 *
 * accepted only when U >= F, a floor published with B; else no bound. O
 * is an origin in ms, fixed with mul (the clock at calibration), so that B
 * stays a tick after 0 also where the TSC started after CLOCK_MONOTONIC.
 *   - mul: milliseconds per TSC tick times 2^64, rounded up, from two
 *     samples at least CALIBRATE_MIN_NS apart: (lfence; rdtsc = a,
 *     clock_gettime(CLOCK_MONOTONIC) in ns = n, lfence; rdtsc = b). The
 *     clock's own TSC read lies in [a, b], so the clock's mean rate over
 *     the span is at most (n2 - n1) / (a2 - b1) ns per tick; times 257/256
 *     (NTP slews CLOCK_MONOTONIC by at most 500 ppm either way, 1/256 is
 *     3,900 ppm) and rounded up.
 *   - B and F from one sample (a, n), ms = n / 10^6 (the clock's own floor):
 *     B = a - ceil((ms - O + 2) * 2^64 / mul), F = ms + 1.
 *
 * Invariant, and its proof:
 *   CLOCKBOUND-C1. A bound U given at a TSC reading tau is at least the
 *       clock's value at tau and for 1 ms after it.
 * Let x = (tau - a) * mul / 2^64.
 *   - tau >= a: the clock read ms at a tick v >= a, its ns value was below
 *     (ms + 1) * 10^6, and it grows at most mul ms per tick (the rounded-up
 *     rate), so at tau + 1 ms of ticks its value is below ms + 2 + x ms:
 *     as an integer, at most ms + 1 + floor(x). And U = floor((tau - B) *
 *     mul / 2^64) + O >= ms + 2 + floor(x), as (a - B) * mul >= (ms - O + 2) * 2^64.
 *     The "+ 2" is 1 ms for the clock's floor and 1 ms for where the
 *     reader's rdtsc ran: a plain rdtsc may execute early, out of order
 *     (by a reorder buffer's depth, nanoseconds), and the TSCs of two CPUs
 *     may differ slightly (the kernel refuses the TSC as its clock on any
 *     warp it sees between CPUs), both far below 1 ms.
 *   - tau < a (the reader's rdtsc before the sample's): the clock is
 *     monotonic and read ms after a, so its value at tau, and 1 ms later,
 *     is at most ms + 1 = F <= U (the floor check).
 *   - B and F of different samples: the maintainers publish under one lock,
 *     F before B (R-BOUND), and a reader loads B (A-BOUND) then F, so its F
 *     is that of B's sample or of a later one: a higher floor, still sound.
 *   - Any B ever published stays valid (a sample of the past bounds the
 *     future), so B needs no ordering of its own; the release/acquire is
 *     for mul and O (written once, before the first B) and F.
 * A TSC that goes back (a reset on resume from suspend) gives tau < B
 * (no bound) or U below F (no bound) until the next refresh.
 *
 * When there is no bound (readers read the clock): before calibration
 * (the first CALIBRATE_MIN_NS of a process's first cache with deadlines),
 * an injected clock (core/cache.c checks), a kernel clock source other than
 * "tsc" (sysfs, read at the first refresh and once a second after: a
 * switch turns the bound off for good), a rate out of range, non-x86
 * builds, and after a self-check failure:
 *   CLOCKBOUND-C2. Each refresh, before publishing, computes U from the
 *       bound readers use now, at a TSC read after its clock read, and
 *       compares it with that clock reading; U below it turns the bound off
 *       for the process (counted: larder__test_clockbound_failures).
 * Not guaranteed: tightness. U exceeds the clock by 1-2 ms plus 1/256 (and
 * the rate's excess) of the time since B's sample; a maintainer that sleeps
 * (up to 100 ms while it has deadlines) or is starved lets U grow looser,
 * and reads of entries closer than that to their deadline read the clock.
 * tests/unit/test_clockbound.c checks the arithmetic and CLOCKBOUND-C1..C2;
 * tests/unit/test_contracts.c (test_default_clock_never_expired) reads
 * entries across their deadlines through it.
 */
#ifndef LARDER_CORE_CLOCKBOUND_H
#define LARDER_CORE_CLOCKBOUND_H

#include <stdint.h>

#include "sync/atomic.h"

#if defined(__x86_64__)
#include <x86intrin.h>
#define LARDER__CLOCKBOUND 1
#else
#define LARDER__CLOCKBOUND 0
#endif

/* What readers load: one line, written by the refresh that holds the lock. */
struct larder__clockbound {
	larder__atomic_u64 base;      /* B; UINT64_MAX: no bound */
	larder__atomic_u64 floor_ms;  /* F; UINT64_MAX: no bound */
	larder__atomic_u64 mul;       /* ms per tick * 2^64; written once */
	larder__atomic_u64 origin_ms; /* O; written once, with mul */
} __attribute__((aligned(64)));

extern struct larder__clockbound larder__clockbound;

/* U for a TSC reading tsc, or UINT64_MAX when (base, floor_ms, mul,
 * origin_ms) give no bound there: tsc < base, or U < floor_ms (or past
 * 64 bits). */
static inline uint64_t larder__clockbound_eval(uint64_t tsc, uint64_t base, uint64_t floor_ms,
					       uint64_t mul, uint64_t origin_ms)
{
	if (tsc < base)
		return UINT64_MAX;
	uint64_t upper_ms = (uint64_t)(((unsigned __int128)(tsc - base) * mul) >> 64);
	/* Saturated: UINT64_MAX is "no bound" too (an add and a cmov). */
	upper_ms = upper_ms > UINT64_MAX - origin_ms ? UINT64_MAX : upper_ms + origin_ms;
	return upper_ms < floor_ms ? UINT64_MAX : upper_ms;
}

/* An upper bound on the default clock's time now (CLOCKBOUND-C1), or
 * UINT64_MAX when there is none. No clock read, no store. */
static inline uint64_t larder__clockbound_upper(void)
{
#if LARDER__CLOCKBOUND
	/* A-BOUND: acquire, pairs with R-BOUND: mul and this B's floor. */
	uint64_t base = atomic_load_explicit(&larder__clockbound.base, LARDER__ACQUIRE);
	/* Relaxed: ordered by A-BOUND above. */
	uint64_t floor_ms = atomic_load_explicit(&larder__clockbound.floor_ms, LARDER__RELAXED);
	/* Relaxed: ordered by A-BOUND above (zero only while base is UINT64_MAX). */
	uint64_t mul = atomic_load_explicit(&larder__clockbound.mul, LARDER__RELAXED);
	/* Relaxed: ordered by A-BOUND above, as mul. */
	uint64_t origin_ms = atomic_load_explicit(&larder__clockbound.origin_ms, LARDER__RELAXED);
	return larder__clockbound_eval(__rdtsc(), base, floor_ms, mul, origin_ms);
#else
	return UINT64_MAX;
#endif
}

/* One sample: a TSC read, then a clock reading in ns, then a TSC read,
 * each TSC read after an lfence (before <= the clock's own TSC read <= after). */
struct larder__clock_sample {
	uint64_t before, ns, after;
};

/* Takes a sample of now_ns (CLOCK_MONOTONIC in production; tests pass
 * their own). Non-x86: all zero. */
void larder__clockbound_sample(struct larder__clock_sample *s, uint64_t (*now_ns)(void));

/* mul from a span of span_ns on the clock over at least span_ticks ticks:
 * the rate rounded up, times 257/256; 0 when out of range (no span, or a
 * TSC slower than 1 tick per ms). */
uint64_t larder__clockbound_rate(uint64_t span_ns, uint64_t span_ticks);

/* B for a sample whose first TSC read was tsc and whose clock read ms (in
 * whole ms, since the origin O): U >= O + ms + 2 from tsc on; UINT64_MAX
 * when tsc is too small. */
uint64_t larder__clockbound_base(uint64_t tsc, uint64_t ms, uint64_t mul);

/* The maintainers' hook (maint/maintainer.c, each pass of a cache with the
 * default clock that holds deadlines): samples the clock, checks the bound
 * (CLOCKBOUND-C2), calibrates, publishes. Never waits: when another thread
 * holds the lock, it does nothing. */
void larder__clockbound_refresh(void);

#endif /* LARDER_CORE_CLOCKBOUND_H */
