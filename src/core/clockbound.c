/*
 * core/clockbound.c - calibration, refresh and self-check of the TSC bound
 * on the default clock (the design, its proof and its limits: clockbound.h,
 * CLOCKBOUND-C1..C2).
 *
 * State: the published line (larder__clockbound) and, under `lock`, the
 * calibration's first sample, the rate, the clock source check and the
 * switches. The lock serialises publishers (so a reader's floor is that of
 * its B's sample or a later one); maintainers only try it, and a test seam
 * holds it while it calibrates.
 */
#define _GNU_SOURCE
#include "core/clockbound.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/testing.h"

/* The calibration span: long enough that the brackets' width (tens of ns)
 * is noise, short enough to start soon after the first deadline. */
#define CALIBRATE_MIN_NS (50u * 1000u * 1000u)
/* A span whose two brackets are wider than 1/4096 of it (a preemption inside
 * one) waits for a longer span: the rate stays an upper bound either way,
 * but a loose one. */
#define BRACKET_SHARE 4096u
#define SOURCE_CHECK_NS (1000u * 1000u * 1000u)
#define NS_PER_MS 1000000u

struct larder__clockbound larder__clockbound = {
	.base = UINT64_MAX, .floor_ms = UINT64_MAX, .mul = 0};

enum { CAL_NONE, CAL_SAMPLING, CAL_READY, CAL_OFF };

static struct {
	pthread_mutex_t lock;
	int state;                         /* CAL_*; CAL_OFF: for good (but for the test seam) */
	int frozen;                        /* test seam: refreshes check but publish nothing */
	int withdrawn;                     /* test seam: no bound until switched on again */
	struct larder__clock_sample first; /* CAL_SAMPLING: the span's start */
	uint64_t mul;                      /* CAL_READY: the rate */
	uint64_t origin_ms;                /* CAL_READY: O, the clock when calibrated */
	uint64_t source_ns;                /* when the clock source was last checked */
	uint64_t (*now_ns)(void);          /* test seam: the refreshes' clock, or NULL */
	larder__atomic_u64 failures;       /* CLOCKBOUND-C2 failures (a test seam reads them) */
} cal = {.lock = PTHREAD_MUTEX_INITIALIZER};

uint64_t larder__clockbound_rate(uint64_t span_ns, uint64_t span_ticks)
{
	if (span_ns == 0 || span_ticks == 0 || span_ns > UINT64_MAX / 257u)
		return 0;
	/* ceil(span_ns * 257/256 / 10^6 / span_ticks * 2^64): the numerator
	 * fits in 128 bits (span_ns * 257 < 2^64), the divisor too. */
	unsigned __int128 num = (unsigned __int128)(span_ns * 257u) << 64;
	unsigned __int128 div = (unsigned __int128)span_ticks * (256u * NS_PER_MS);
	unsigned __int128 mul = (num + div - 1) / div;
	return mul >> 64 ? 0 : (uint64_t)mul; /* >= 1 ms per tick: out of range */
}

uint64_t larder__clockbound_base(uint64_t tsc, uint64_t ms, uint64_t mul)
{
	if (mul == 0 || ms > UINT64_MAX - 2)
		return UINT64_MAX;
	/* ceil((ms + 2) * 2^64 / mul) ticks hold at least ms + 2 ms. */
	unsigned __int128 ticks = (((unsigned __int128)(ms + 2) << 64) + mul - 1) / mul;
	return ticks > tsc ? UINT64_MAX : tsc - (uint64_t)ticks;
}

#if LARDER__CLOCKBOUND

static uint64_t monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

void larder__clockbound_sample(struct larder__clock_sample *s, uint64_t (*now_ns)(void))
{
	/* The lfence keeps each rdtsc from running before what precedes it:
	 * `before` before the clock's own (ordered) TSC read, `after` after
	 * the clock call returned. */
	_mm_lfence();
	s->before = __rdtsc();
	s->ns = now_ns();
	_mm_lfence();
	s->after = __rdtsc();
}

/* Whether the kernel keeps CLOCK_MONOTONIC by the TSC (then the vDSO
 * derives it from the same counter, and the kernel has checked that the
 * counter is invariant and synchronised across CPUs). Plain system calls:
 * no allocation outside core/alloc.h. */
static int source_is_tsc(void)
{
	char name[8];
	int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource",
		      O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, name, sizeof(name));
	close(fd);
	return n == 4 && memcmp(name, "tsc\n", 4) == 0;
}

/* Under the lock: readers see no bound. */
static void withdraw_locked(void)
{
	/* Relaxed: a reader that loads this with an older B gets a higher
	 * floor, still sound (clockbound.h); R-BOUND below orders the rest. */
	atomic_store_explicit(&larder__clockbound.floor_ms, UINT64_MAX, LARDER__RELAXED);
	/* R-BOUND: release, pairs with A-BOUND in larder__clockbound_upper(). */
	atomic_store_explicit(&larder__clockbound.base, UINT64_MAX, LARDER__RELEASE);
}

/* Under the lock: publishes the bound of sample s (CAL_READY). */
static void publish_locked(const struct larder__clock_sample *s)
{
	uint64_t ms = s->ns / NS_PER_MS;
	uint64_t base = ms < cal.origin_ms
				? UINT64_MAX
				: larder__clockbound_base(s->before, ms - cal.origin_ms, cal.mul);
	if (base == UINT64_MAX) {
		withdraw_locked();
		return;
	}
	/* Relaxed: mul and the origin are written once, before the first
	 * R-BOUND that publishes a B; they only repeat their values after. */
	atomic_store_explicit(&larder__clockbound.mul, cal.mul, LARDER__RELAXED);
	/* Relaxed: as mul. */
	atomic_store_explicit(&larder__clockbound.origin_ms, cal.origin_ms, LARDER__RELAXED);
	/* Relaxed: published by R-BOUND below (F before B). */
	atomic_store_explicit(&larder__clockbound.floor_ms, ms + 1, LARDER__RELAXED);
	/* R-BOUND: release, pairs with A-BOUND in larder__clockbound_upper(). */
	atomic_store_explicit(&larder__clockbound.base, base, LARDER__RELEASE);
}

/* Under the lock, CAL_SAMPLING: the rate from the span first .. s once it
 * is long enough, when its brackets are narrow; else s starts the span
 * again if its own bracket is the narrower (the wide one was first's). */
static void calibrate_locked(const struct larder__clock_sample *s)
{
	const struct larder__clock_sample *f = &cal.first;
	if (s->ns - f->ns < CALIBRATE_MIN_NS || s->before <= f->after)
		return;
	uint64_t brackets = (f->after - f->before) + (s->after - s->before);
	if (brackets <= (s->before - f->after) / BRACKET_SHARE) {
		cal.mul = larder__clockbound_rate(s->ns - f->ns, s->before - f->after);
		cal.origin_ms = s->ns / NS_PER_MS;
		cal.state = cal.mul ? CAL_READY : CAL_OFF;
	} else if (s->after - s->before < f->after - f->before) {
		cal.first = *s;
	}
}

/* Under the lock: one refresh from sample s (CLOCKBOUND-C2 first). */
static void refresh_locked(const struct larder__clock_sample *s)
{
	if (cal.state == CAL_OFF)
		return;
	uint64_t ms = s->ns / NS_PER_MS;
	/* CLOCKBOUND-C2: the bound readers use now, at a TSC read after the
	 * clock read. Relaxed: the loads of the publisher, which holds the lock. */
	uint64_t upper_ms = larder__clockbound_eval(
		s->after, atomic_load_explicit(&larder__clockbound.base, LARDER__RELAXED),
		atomic_load_explicit(&larder__clockbound.floor_ms, LARDER__RELAXED),
		atomic_load_explicit(&larder__clockbound.mul, LARDER__RELAXED),
		atomic_load_explicit(&larder__clockbound.origin_ms, LARDER__RELAXED));
	if (upper_ms < ms) {
		/* Relaxed: a statistic. */
		atomic_fetch_add_explicit(&cal.failures, 1, LARDER__RELAXED);
		cal.state = CAL_OFF;
		withdraw_locked();
		return;
	}
	if (cal.state == CAL_NONE || s->ns - cal.source_ns >= SOURCE_CHECK_NS) {
		cal.source_ns = s->ns;
		if (!source_is_tsc()) {
			cal.state = CAL_OFF;
			withdraw_locked();
			return;
		}
	}
	if (cal.state == CAL_NONE) {
		cal.first = *s;
		cal.state = CAL_SAMPLING;
		return;
	}
	if (cal.state == CAL_SAMPLING)
		calibrate_locked(s);
	if (cal.state == CAL_READY && !cal.frozen && !cal.withdrawn)
		publish_locked(s);
}

void larder__clockbound_refresh(void)
{
	if (pthread_mutex_trylock(&cal.lock) != 0)
		return; /* another thread refreshes: its B serves */
	struct larder__clock_sample s;
	larder__clockbound_sample(&s, cal.now_ns ? cal.now_ns : monotonic_ns);
	refresh_locked(&s);
	pthread_mutex_unlock(&cal.lock);
}

void larder__test_clockbound_clock(uint64_t (*now_ns)(void))
{
	pthread_mutex_lock(&cal.lock);
	cal.now_ns = now_ns;
	pthread_mutex_unlock(&cal.lock);
}

int larder__test_clockbound(int mode)
{
	pthread_mutex_lock(&cal.lock);
	struct larder__clock_sample s;
	cal.frozen = 0;
	cal.withdrawn = mode == LARDER__CLOCKBOUND_OFF;
	if (mode == LARDER__CLOCKBOUND_OFF) {
		withdraw_locked();
	} else if (mode == LARDER__CLOCKBOUND_ON) {
		if (cal.state == CAL_OFF && cal.mul && source_is_tsc())
			cal.state = CAL_READY; /* after a CLOCKBOUND-C2 failure a test provoked */
		/* Calibrate now (a test must not wait for the maintainers). */
		for (int tries = 0; tries < 100 && cal.state != CAL_READY && cal.state != CAL_OFF;
		     tries++) {
			larder__clockbound_sample(&s, monotonic_ns);
			refresh_locked(&s);
			if (cal.state == CAL_SAMPLING) {
				struct timespec ts = {0, CALIBRATE_MIN_NS / 4};
				nanosleep(&ts, NULL);
			}
		}
	}
	if (mode != LARDER__CLOCKBOUND_OFF) { /* a fresh bound, also the one to freeze */
		larder__clockbound_sample(&s, monotonic_ns);
		refresh_locked(&s);
	}
	cal.frozen = mode == LARDER__CLOCKBOUND_FREEZE;
	/* Relaxed: the lock holder's own. */
	int live = atomic_load_explicit(&larder__clockbound.base, LARDER__RELAXED) != UINT64_MAX;
	pthread_mutex_unlock(&cal.lock);
	return live;
}

void larder__test_clockbound_skew(int64_t ms)
{
	pthread_mutex_lock(&cal.lock);
	/* Relaxed: the lock holder's own (the seam's caller reads the result
	 * on this thread; readers elsewhere may see either B). */
	uint64_t base = atomic_load_explicit(&larder__clockbound.base, LARDER__RELAXED);
	if (base != UINT64_MAX && cal.mul) {
		uint64_t ticks =
			(uint64_t)((((unsigned __int128)(ms < 0 ? -ms : ms)) << 64) / cal.mul);
		/* Relaxed: as above. */
		atomic_store_explicit(&larder__clockbound.base,
				      ms < 0 ? base - ticks : base + ticks, LARDER__RELAXED);
	}
	pthread_mutex_unlock(&cal.lock);
}

#else /* !LARDER__CLOCKBOUND: no TSC, no bound; the clock is read as ever */

void larder__clockbound_sample(struct larder__clock_sample *s, uint64_t (*now_ns)(void))
{
	(void)now_ns;
	s->before = s->ns = s->after = 0;
}

void larder__clockbound_refresh(void)
{
}

int larder__test_clockbound(int mode)
{
	(void)mode;
	return 0;
}

void larder__test_clockbound_skew(int64_t ms)
{
	(void)ms;
}

void larder__test_clockbound_clock(uint64_t (*now_ns)(void))
{
	(void)now_ns;
}

#endif

uint64_t larder__test_clockbound_failures(void)
{
	/* Relaxed: a statistic. */
	return atomic_load_explicit(&cal.failures, LARDER__RELAXED);
}
