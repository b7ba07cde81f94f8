/*
 * tests/support/harness.h - the tiny test harness shared by unit and stress tests.
 *
 * What it owns:
 *   - CHECK-style assertions that print file:line and both values and count the
 *     failure, from any thread (the counter is atomic), without stopping the test
 *     (REQUIRE* return from the calling void function instead);
 *   - a per-test runner: th_main() runs a table of tests (optionally filtered by
 *     name from argv), prints PASS/FAIL for each and ends with the exact line
 *     "N passed, N failed"; the exit status is 0 only when no test failed;
 *   - helpers: threads, a seeded PRNG, arguments and seeds from argv, a
 *     deadline-based wait on a condition (tests never sleep to synchronise),
 *     injectable clocks (one counting its calls, one a thread can freeze),
 *     self-checking values (whole, their key's, not torn), and the accounting
 *     check that every test ends with (quiesce, then counters == full walk).
 *
 * Invariant: a test passes iff no CHECK failed while it ran. A test that cannot
 * fail is a bug; every helper that waits has a deadline and fails the test when
 * the deadline passes, so a hung engine shows up as a failure, not a hang.
 */
#ifndef LARDER_TESTS_HARNESS_H
#define LARDER_TESTS_HARNESS_H

#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "larder.h"
#include "core/testing.h"

/* ---- ThreadSanitizer detection: stress defaults shrink under it ---------- */
#if defined(__SANITIZE_THREAD__)
#define TH_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define TH_TSAN 1
#endif
#endif
#ifndef TH_TSAN
#define TH_TSAN 0
#endif

#if defined(__SANITIZE_ADDRESS__)
#define TH_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TH_ASAN 1
#endif
#endif
#ifndef TH_ASAN
#define TH_ASAN 0
#endif

/* Sizes, as 64-bit byte counts (a capacity, a budget). */
#define KiB ((uint64_t)1024)
#define MiB (1024 * KiB)

/* ---- Failure reporting --------------------------------------------------- */

void th_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Counts a failure without printing (after enough has been printed). */
void th_fail_quiet(void);
/*
 * A failure from threads that may see one fault many times: printed while
 * fewer than `limit` have been printed through TH_FAIL_CAPPED in the process,
 * then counted only (one line says so), so a stress test's log stays short.
 */
#define TH_FAIL_CAPPED(limit, ...)                                  \
	do {                                                        \
		if (th_fail_print_slot(limit))                      \
			th_fail(__FILE__, __LINE__, __VA_ARGS__);   \
		else                                                \
			th_fail_quiet();                            \
	} while (0)
int th_fail_print_slot(long limit);
/* Failures recorded so far, process-wide (all threads). */
long th_failures(void);

#define CHECK(cond)                                                                   \
	((cond) ? 1 : (th_fail(__FILE__, __LINE__, "CHECK(%s) failed", #cond), 0))

/* Integer equality; both sides are shown signed and in hex. */
#define CHECK_EQ(a, b)                                                                \
	th_check_eq(__FILE__, __LINE__, #a, #b, (intmax_t)(a), (intmax_t)(b))
#define CHECK_NE(a, b)                                                                \
	th_check_ne(__FILE__, __LINE__, #a, #b, (intmax_t)(a), (intmax_t)(b))
/* Unsigned ordering: a <= b, a < b, a >= b, a > b. */
#define CHECK_LE(a, b)                                                                \
	th_check_cmp(__FILE__, __LINE__, #a, "<=", #b, (uintmax_t)(a), (uintmax_t)(b))
#define CHECK_LT(a, b)                                                                \
	th_check_cmp(__FILE__, __LINE__, #a, "<", #b, (uintmax_t)(a), (uintmax_t)(b))
#define CHECK_GE(a, b)                                                                \
	th_check_cmp(__FILE__, __LINE__, #b, "<=", #a, (uintmax_t)(b), (uintmax_t)(a))
#define CHECK_GT(a, b)                                                                \
	th_check_cmp(__FILE__, __LINE__, #b, "<", #a, (uintmax_t)(b), (uintmax_t)(a))
/* A larder result code; failures name both codes with larder_strerror(). */
#define CHECK_RC(expr, want)                                                          \
	th_check_rc(__FILE__, __LINE__, #expr, (long)(expr), (long)(want))
/* n bytes at a equal n bytes at b; shows the first difference. */
#define CHECK_MEM(a, b, n) th_check_mem(__FILE__, __LINE__, #a, #b, (a), (b), (n))
#define CHECK_STR(a, b) th_check_str(__FILE__, __LINE__, #a, #b, (a), (b))

/* As CHECK*, but return from the enclosing void function on failure. */
#define REQUIRE(cond)                                                                 \
	do {                                                                          \
		if (!CHECK(cond))                                                     \
			return;                                                       \
	} while (0)
#define REQUIRE_RC(expr, want)                                                        \
	do {                                                                          \
		if (!CHECK_RC(expr, want))                                            \
			return;                                                       \
	} while (0)
#define REQUIRE_EQ(a, b)                                                              \
	do {                                                                          \
		if (!CHECK_EQ(a, b))                                                  \
			return;                                                       \
	} while (0)

int th_check_eq(const char *file, int line, const char *as, const char *bs, intmax_t a,
		intmax_t b);
int th_check_ne(const char *file, int line, const char *as, const char *bs, intmax_t a,
		intmax_t b);
int th_check_cmp(const char *file, int line, const char *as, const char *op, const char *bs,
		 uintmax_t a, uintmax_t b);
int th_check_rc(const char *file, int line, const char *expr, long got, long want);
int th_check_mem(const char *file, int line, const char *as, const char *bs, const void *a,
		 const void *b, size_t n);
int th_check_str(const char *file, int line, const char *as, const char *bs, const char *a,
		 const char *b);

/* ---- Runner -------------------------------------------------------------- */

struct th_test {
	const char *name;
	void (*fn)(void);
};
#define TH_TEST(fn) { #fn, fn }
#define TH_COUNT(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Runs every test whose name contains one of the non-option arguments (all of
 * them when there is none) and none of the "~fragment" ones (ctest runs a
 * long executable's groups of tests as tests of their own that way: tests/
 * CMakeLists.txt), prints "PASS name (ms, ms of CPU)" or "FAIL name", then
 * "N passed, N failed". Returns the process exit status (failure also when
 * no test ran).
 */
int th_main(int argc, char **argv, const struct th_test *tests, size_t count);

/* ---- Arguments ----------------------------------------------------------- */

/*
 * The value of "--name N" or "--name=N" in argv, or def. Accepts decimal or
 * 0x-hex. A malformed number prints an error and returns def.
 */
uint64_t th_arg_u64(int argc, char **argv, const char *name, uint64_t def);
/* A seed: --seed if given, else one from the clock and the pid. Printed. */
uint64_t th_arg_seed(int argc, char **argv);

/* ---- Random numbers (splitmix64: small, seedable, good enough) ------------ */

struct th_rng {
	uint64_t s;
};
static inline uint64_t th_rng_next(struct th_rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}
/* Uniform in [0, n) (n > 0); the bias is irrelevant for tests. */
static inline uint64_t th_rng_below(struct th_rng *r, uint64_t n)
{
	return th_rng_next(r) % n;
}
static inline uint64_t th_mix64(uint64_t x)
{
	struct th_rng r = {x};
	return th_rng_next(&r);
}

/* ---- Time, waiting, threads ----------------------------------------------- */

uint64_t th_now_ms(void);
uint64_t th_now_ns(void);

/*
 * Polls pred(ctx) until it returns non-zero or timeout_ms x TH_SLOW passes;
 * returns the last result. Between polls it yields for about 100 us: this is
 * a bounded wait on a condition, not a sleep that hopes the other side is
 * done, and its deadline is a hang guard, scaled as th_quiesce's is.
 */
int th_wait_until(int (*pred)(void *ctx), void *ctx, uint64_t timeout_ms);
/*
 * As th_wait_until, for exactly duration_ms of real time (not scaled): a run
 * of work that a condition (a failure) may end early.
 */
int th_poll_for(int (*pred)(void *ctx), void *ctx, uint64_t duration_ms);
/* Lets ms of real time pass: a sampling period, a pause between steps or a
 * duration of work, never a synchronisation. */
void th_pause_ms(uint64_t ms);

/* A one-shot flag with a condition variable: signal once, wait with deadline. */
struct th_event {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int set;
};
void th_event_init(struct th_event *e);
void th_event_destroy(struct th_event *e);
void th_event_signal(struct th_event *e);
/* Returns 1 once signalled, 0 when timeout_ms x TH_SLOW passed first (a
 * hang guard, scaled as th_wait_until's is). */
int th_event_wait(struct th_event *e, uint64_t timeout_ms);

/*
 * Starts n threads running fn(arg_base + i * arg_size) and joins them all.
 * Fails the test (and returns -1) if a thread cannot be created.
 */
int th_run_threads(size_t n, void *(*fn)(void *), void *arg_base, size_t arg_size);

/* ---- An injected clock ---------------------------------------------------- */

struct th_clock {
	_Atomic uint64_t now_ms;      /* advanced by the test */
	_Atomic uint64_t calls;       /* every call */
	_Atomic uint64_t owner_calls; /* calls from the thread named owner */
	pthread_t owner;
	_Atomic int has_owner;
};
void th_clock_init(struct th_clock *c, uint64_t start_ms);
/* Counts calls made on the calling thread in owner_calls from now on. */
void th_clock_set_owner(struct th_clock *c);
void th_clock_advance(struct th_clock *c, uint64_t ms);
uint64_t th_clock_fn(void *ctx); /* a larder_clock_fn */

/*
 * A clock a thread can freeze: a global millisecond counter the test
 * advances (its now_ms, with release), which a thread may freeze for the
 * calls it makes until it thaws, so that it knows the exact reading the
 * engine used inside each of them (a put's deadline, a read's expiry
 * check). A thread freezes one such clock at a time.
 */
struct th_freeze_clock {
	_Atomic uint64_t now_ms;
};
uint64_t th_freeze_clock_fn(void *ctx); /* a larder_clock_fn; ctx: the clock */
/* Fixes the calling thread's reading of c at its current time, returned. */
uint64_t th_freeze(struct th_freeze_clock *c);
void th_thaw(void);

/* ---- Self-checking values ------------------------------------------------ */

/*
 * A value that says whose it is: a header (key id, length, a process-wide
 * version, a deadline the writer chose, a checksum of the payload) and a
 * payload derived from the version whose 8-byte groups alternate between a
 * pattern (which LZ4 and zstd compress) and bytes that look random to them,
 * so that a compressing cache stores about half.
 */
struct th_value_header {
	uint32_t key, len;
	uint64_t version, deadline, sum;
};
/* Writes key's value of len bytes (at least the header's) into v; returns its length. */
size_t th_value_make(unsigned char *v, uint32_t key, size_t len, uint64_t deadline);
/*
 * Whether value is a whole value of key's (not torn, not another key's, not
 * freed memory): otherwise a failure names where, through
 * TH_FAIL_CAPPED(30, ...), and it returns 0. The header goes to *h when h
 * is not NULL.
 */
int th_value_check(const char *where, uint32_t key, const void *value, size_t len,
		   struct th_value_header *h);

/* ---- Engine helpers ------------------------------------------------------ */

/*
 * In-test deadlines (th_wait_until, th_event_wait, th_quiesce,
 * th_check_accounting) are multiplied by this in sanitizer builds, as ctest's TIMEOUTs are
 * (larder_scale_timeouts in tests/CMakeLists.txt): TSan and ASan run 5-20x
 * slower, and a loaded machine multiplies that again. A deadline only turns a
 * hang into a failure; it never judges speed.
 */
#define TH_SLOW ((TH_TSAN || TH_ASAN) ? 4u : 1u)

/* larder__test_quiesce() with its deadline multiplied by TH_SLOW. */
int th_quiesce(larder *cache, uint64_t timeout_ms);
/* larder_flush() with its deadline multiplied by TH_SLOW. */
int th_flush(larder *cache, uint64_t timeout_ms);

/* One counter from larder_stats(); fails the test on error. */
uint64_t th_stat(larder *cache, enum larder_stat stat);

/*
 * Quiesces (failing the test if that takes longer than timeout_ms x TH_SLOW), walks the
 * index and checks LARDER_STAT_ENTRIES and LARDER_STAT_USED_BYTES against the
 * walk (taken again while a write or removal lands beside it, an expiry or
 * another cache's listener writing, so that both describe one instant), and
 * the eviction policy's queue links
 * (larder__test_check_links).
 * Returns 1 when everything agreed. Writes the walk into the optional
 * out-parameters.
 */
int th_check_accounting(larder *cache, uint64_t timeout_ms, uint64_t *entries,
			uint64_t *bytes);

/*
 * Quiesces and checks the memory audit: every byte larder holds is in a size
 * class's pages, the page reserve or a large entry's mapping (PAGES_MAPPED
 * is their sum, with nothing left to unmap), and the live slots of the
 * classes plus the large mappings are the used bytes. Returns 1 when it
 * adds up.
 */
int th_check_memory_audit(larder *cache);

/* The hash seed th_config() fixes (tests that aim keys at one bucket use it). */
#define TH_HASH_SEED 0x5eed5eed12345678ull

/* The write wait th_config() sets: a writer at the memory bound waits this
 * long for the maintainer before LARDER_EBUSY, so that no test fails because
 * a loaded machine made the maintainer slow (the default, 1 s, did under
 * ThreadSanitizer). Tests of the wait itself set their own. */
#define TH_WRITE_WAIT_MS 60000u

/* How long th_open() lets one removal listener call run before waiting
 * writers give up (larder__test_stuck_ms; the engine's is 1 s): a loaded
 * machine can stop a maintainer mid-call for a second. Tests of the limit
 * set their own. */
#define TH_STUCK_MS 60000u

/* The shard count th_config() sets: LARDER_TEST_SHARDS from the
 * environment (a power of two; ctest runs the stress tests with 1 and 4),
 * else 1. */
unsigned th_shards(void);

/* Creates a config with a fixed hash seed, TH_WRITE_WAIT_MS and th_shards()
 * shards; fails the test and returns NULL on error. */
larder_config *th_config(uint64_t capacity_bytes);
/* th_config() with one shard whatever LARDER_TEST_SHARDS says: for the tests
 * that look at one shard's parts (its index's size and resizes, its slab, the
 * order of its mappings for failure injection, a stalled maintainer). */
larder_config *th_config_one_shard(uint64_t capacity_bytes);
/* Opens a cache from config (with TH_STUCK_MS) and destroys config; fails the
 * test and returns NULL on error. */
larder *th_open(larder_config *config);

#endif /* LARDER_TESTS_HARNESS_H */
