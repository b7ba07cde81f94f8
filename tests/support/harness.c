/*
 * tests/support/harness.c - the test harness (see harness.h for what it owns).
 *
 * The failure counter is a process-wide atomic so that worker threads can
 * CHECK too; th_main() attributes failures to a test by the difference of the
 * counter before and after it runs (tests run one at a time, and a test joins
 * every thread it starts before it returns).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "harness.h"

#include <errno.h>
#include <sched.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

static _Atomic long th_fail_count;
static pthread_mutex_t th_print_mu = PTHREAD_MUTEX_INITIALIZER;

void th_fail(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	atomic_fetch_add_explicit(&th_fail_count, 1, memory_order_relaxed);
	pthread_mutex_lock(&th_print_mu);
	fprintf(stderr, "%s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
	pthread_mutex_unlock(&th_print_mu);
}

void th_fail_quiet(void)
{
	atomic_fetch_add_explicit(&th_fail_count, 1, memory_order_relaxed);
}

int th_fail_print_slot(long limit)
{
	static _Atomic long printed;
	long n = atomic_fetch_add_explicit(&printed, 1, memory_order_relaxed);
	if (n == limit) {
		pthread_mutex_lock(&th_print_mu);
		fputs("(further failures counted, not shown)\n", stderr);
		pthread_mutex_unlock(&th_print_mu);
	}
	return n < limit;
}

long th_failures(void)
{
	return atomic_load_explicit(&th_fail_count, memory_order_relaxed);
}

int th_check_eq(const char *file, int line, const char *as, const char *bs, intmax_t a,
		intmax_t b)
{
	if (a == b)
		return 1;
	th_fail(file, line, "CHECK_EQ(%s, %s) failed: %jd (0x%jx) != %jd (0x%jx)", as, bs, a,
		(uintmax_t)a, b, (uintmax_t)b);
	return 0;
}

int th_check_ne(const char *file, int line, const char *as, const char *bs, intmax_t a,
		intmax_t b)
{
	if (a != b)
		return 1;
	th_fail(file, line, "CHECK_NE(%s, %s) failed: both are %jd (0x%jx)", as, bs, a,
		(uintmax_t)a);
	return 0;
}

int th_check_cmp(const char *file, int line, const char *as, const char *op, const char *bs,
		 uintmax_t a, uintmax_t b)
{
	int ok = op[1] == '=' ? a <= b : a < b;

	if (ok)
		return 1;
	th_fail(file, line, "CHECK(%s %s %s) failed: %ju %s %ju is false", as, op, bs, a, op, b);
	return 0;
}

int th_check_rc(const char *file, int line, const char *expr, long got, long want)
{
	if (got == want)
		return 1;
	th_fail(file, line, "%s returned %ld (%s), expected %ld (%s)", expr, got,
		larder_strerror((int)got), want, larder_strerror((int)want));
	return 0;
}

int th_check_mem(const char *file, int line, const char *as, const char *bs, const void *a,
		 const void *b, size_t n)
{
	const unsigned char *pa = a, *pb = b;
	size_t i;

	if (a == NULL || b == NULL) {
		th_fail(file, line, "CHECK_MEM(%s, %s): NULL pointer", as, bs);
		return 0;
	}
	for (i = 0; i < n; i++)
		if (pa[i] != pb[i])
			break;
	if (i == n)
		return 1;
	th_fail(file, line, "CHECK_MEM(%s, %s, %zu) failed: first difference at byte %zu: 0x%02x != 0x%02x",
		as, bs, n, i, pa[i], pb[i]);
	return 0;
}

int th_check_str(const char *file, int line, const char *as, const char *bs, const char *a,
		 const char *b)
{
	if (a != NULL && b != NULL && strcmp(a, b) == 0)
		return 1;
	th_fail(file, line, "CHECK_STR(%s, %s) failed: \"%s\" != \"%s\"", as, bs,
		a ? a : "(null)", b ? b : "(null)");
	return 0;
}

static int th_selected(int argc, char **argv, const char *name)
{
	int filters = 0, chosen = 0;

	for (int i = 1; i < argc; i++) {
		if (argv[i][0] == '-') {
			/* "--name value": the value is not a filter */
			if (strchr(argv[i], '=') == NULL && i + 1 < argc && argv[i + 1][0] != '-')
				i++;
			continue;
		}
		if (argv[i][0] == '~') { /* "~fragment": none of the tests it names */
			if (strstr(name, argv[i] + 1) != NULL)
				return 0;
			continue;
		}
		filters++;
		chosen |= strstr(name, argv[i]) != NULL;
	}
	return filters == 0 || chosen;
}

/* CPU time of the whole process (every thread, the maintainers' too), in
 * ms: what a test costs on a loaded machine, where its wall time says little. */
static uint64_t cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (uint64_t)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000u +
	       (uint64_t)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1000u;
}

int th_main(int argc, char **argv, const struct th_test *tests, size_t count)
{
	size_t passed = 0, failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	for (size_t i = 0; i < count; i++) {
		if (!th_selected(argc, argv, tests[i].name))
			continue;
		long before = th_failures();
		uint64_t t0 = th_now_ms(), cpu0 = cpu_ms();

		printf("RUN  %s\n", tests[i].name);
		tests[i].fn();
		if (th_failures() == before) {
			passed++;
			printf("PASS %s (%" PRIu64 " ms, %" PRIu64 " ms of CPU)\n", tests[i].name,
			       th_now_ms() - t0, cpu_ms() - cpu0);
		} else {
			failed++;
			printf("FAIL %s (%ld failed checks)\n", tests[i].name, th_failures() - before);
		}
	}
	printf("%zu passed, %zu failed\n", passed, failed);
	return failed == 0 && passed > 0 ? 0 : 1;
}

uint64_t th_arg_u64(int argc, char **argv, const char *name, uint64_t def)
{
	size_t len = strlen(name);

	for (int i = 1; i < argc; i++) {
		const char *text = NULL;

		if (strncmp(argv[i], name, len) != 0)
			continue;
		if (argv[i][len] == '=')
			text = argv[i] + len + 1;
		else if (argv[i][len] == '\0' && i + 1 < argc)
			text = argv[i + 1];
		if (text == NULL)
			continue;
		char *end;
		errno = 0;
		unsigned long long v = strtoull(text, &end, 0);
		if (errno != 0 || end == text || *end != '\0') {
			fprintf(stderr, "bad number for %s: '%s'; using %" PRIu64 "\n", name, text,
				def);
			return def;
		}
		return (uint64_t)v;
	}
	return def;
}

uint64_t th_arg_seed(int argc, char **argv)
{
	uint64_t def = th_mix64(th_now_ns() ^ ((uint64_t)getpid() << 32));
	uint64_t seed = th_arg_u64(argc, argv, "--seed", def);

	printf("seed %" PRIu64 " (rerun with --seed %" PRIu64 ")\n", seed, seed);
	return seed;
}

uint64_t th_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t th_now_ms(void)
{
	return th_now_ns() / 1000000ull;
}

int th_wait_until(int (*pred)(void *ctx), void *ctx, uint64_t timeout_ms)
{
	return th_poll_for(pred, ctx, timeout_ms * TH_SLOW);
}

int th_poll_for(int (*pred)(void *ctx), void *ctx, uint64_t duration_ms)
{
	uint64_t deadline = th_now_ms() + duration_ms;
	struct timespec pause = {0, 100000};

	for (;;) {
		if (pred(ctx))
			return 1;
		if (th_now_ms() >= deadline)
			return pred(ctx);
		nanosleep(&pause, NULL);
	}
}

void th_pause_ms(uint64_t ms)
{
	struct timespec left = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000L};

	while (nanosleep(&left, &left) != 0 && errno == EINTR)
		;
}

void th_event_init(struct th_event *e)
{
	pthread_condattr_t attr;

	pthread_mutex_init(&e->mu, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&e->cv, &attr);
	pthread_condattr_destroy(&attr);
	e->set = 0;
}

void th_event_destroy(struct th_event *e)
{
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
}

void th_event_signal(struct th_event *e)
{
	pthread_mutex_lock(&e->mu);
	e->set = 1;
	pthread_cond_broadcast(&e->cv);
	pthread_mutex_unlock(&e->mu);
}

int th_event_wait(struct th_event *e, uint64_t timeout_ms)
{
	uint64_t deadline_ns = th_now_ns() + timeout_ms * TH_SLOW * 1000000ull;
	struct timespec ts = {(time_t)(deadline_ns / 1000000000ull),
			      (long)(deadline_ns % 1000000000ull)};
	int set;

	pthread_mutex_lock(&e->mu);
	while (!e->set) {
		if (pthread_cond_timedwait(&e->cv, &e->mu, &ts) == ETIMEDOUT)
			break;
	}
	set = e->set;
	pthread_mutex_unlock(&e->mu);
	return set;
}

int th_run_threads(size_t n, void *(*fn)(void *), void *arg_base, size_t arg_size)
{
	pthread_t *ids = calloc(n ? n : 1, sizeof(*ids));
	size_t started = 0;
	int rc = 0;

	if (!CHECK(ids != NULL))
		return -1;
	for (; started < n; started++) {
		void *arg = arg_base ? (char *)arg_base + started * arg_size : NULL;
		int err = pthread_create(&ids[started], NULL, fn, arg);

		if (err != 0) {
			th_fail(__FILE__, __LINE__, "pthread_create: %s", strerror(err));
			rc = -1;
			break;
		}
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(ids[i], NULL);
	free(ids);
	return rc;
}

void th_clock_init(struct th_clock *c, uint64_t start_ms)
{
	atomic_init(&c->now_ms, start_ms);
	atomic_init(&c->calls, 0);
	atomic_init(&c->owner_calls, 0);
	atomic_init(&c->has_owner, 0);
}

void th_clock_set_owner(struct th_clock *c)
{
	c->owner = pthread_self();
	/* Release: pairs with the acquire in th_clock_fn(); publishes owner. */
	atomic_store_explicit(&c->has_owner, 1, memory_order_release);
}

void th_clock_advance(struct th_clock *c, uint64_t ms)
{
	/* seq_cst: every clock read that starts after this returns sees the new time. */
	atomic_fetch_add_explicit(&c->now_ms, ms, memory_order_seq_cst);
}

uint64_t th_clock_fn(void *ctx)
{
	struct th_clock *c = ctx;

	atomic_fetch_add_explicit(&c->calls, 1, memory_order_relaxed);
	if (atomic_load_explicit(&c->has_owner, memory_order_acquire) &&
	    pthread_equal(c->owner, pthread_self()))
		atomic_fetch_add_explicit(&c->owner_calls, 1, memory_order_relaxed);
	return atomic_load_explicit(&c->now_ms, memory_order_seq_cst);
}

static _Thread_local int frozen;
static _Thread_local uint64_t frozen_at;

uint64_t th_freeze_clock_fn(void *ctx)
{
	struct th_freeze_clock *c = ctx;
	/* Acquire: pairs with the test's release of a later time. */
	return frozen ? frozen_at : atomic_load_explicit(&c->now_ms, memory_order_acquire);
}

uint64_t th_freeze(struct th_freeze_clock *c)
{
	frozen_at = atomic_load_explicit(&c->now_ms, memory_order_acquire);
	frozen = 1;
	return frozen_at;
}

void th_thaw(void)
{
	frozen = 0;
}

static _Atomic uint64_t value_versions;

static uint8_t payload_byte(uint64_t version, size_t i)
{
	if ((i >> 3) & 1)
		return (uint8_t)(version + (i % 61) * 131u);
	return (uint8_t)(((uint32_t)(version + i) * 2654435761u) >> 24);
}

static uint64_t payload_sum(uint64_t version, size_t n)
{
	uint64_t h = version * 0x9e3779b97f4a7c15ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ payload_byte(version, i)) * 0x100000001b3ull;
	return h;
}

size_t th_value_make(unsigned char *v, uint32_t key, size_t len, uint64_t deadline)
{
	struct th_value_header h;
	if (len < sizeof(h))
		len = sizeof(h);
	h.key = key;
	h.len = (uint32_t)len;
	/* Relaxed: a unique number, ordering nothing. */
	h.version = atomic_fetch_add_explicit(&value_versions, 1, memory_order_relaxed) + 1;
	h.deadline = deadline;
	for (size_t i = sizeof(h); i < len; i++)
		v[i] = payload_byte(h.version, i - sizeof(h));
	h.sum = payload_sum(h.version, len - sizeof(h));
	memcpy(v, &h, sizeof(h));
	return len;
}

int th_value_check(const char *where, uint32_t key, const void *value, size_t len,
		   struct th_value_header *out)
{
	struct th_value_header h;
	if (len < sizeof(h)) {
		TH_FAIL_CAPPED(30, "%s: key %u: a value of %zu bytes", where, key, len);
		return 0;
	}
	memcpy(&h, value, sizeof(h));
	if (h.key != key || h.len != len || h.sum != payload_sum(h.version, len - sizeof(h))) {
		TH_FAIL_CAPPED(30, "%s: key %u: value of %zu bytes is not whole or not its own "
			       "(key %u, length %u)", where, key, len, h.key, h.len);
		return 0;
	}
	for (size_t i = sizeof(h); i < len; i++)
		if (((const uint8_t *)value)[i] != payload_byte(h.version, i - sizeof(h))) {
			TH_FAIL_CAPPED(30, "%s: key %u: payload differs at byte %zu", where, key, i);
			return 0;
		}
	if (out)
		*out = h;
	return 1;
}

uint64_t th_stat(larder *cache, enum larder_stat stat)
{
	uint64_t values[LARDER_STAT_COUNT];

	memset(values, 0, sizeof(values));
	if (!CHECK_RC(larder_stats(cache, values, LARDER_STAT_COUNT), LARDER_OK))
		return 0;
	return values[stat];
}

/* Writes and removals of every cause so far: moves with every change. */
static uint64_t th_changes(const uint64_t *v)
{
	return v[LARDER_STAT_WRITES] + v[LARDER_STAT_EXPIRATIONS] + v[LARDER_STAT_EVICTIONS] +
	       v[LARDER_STAT_REMOVALS] + v[LARDER_STAT_REPLACEMENTS] + v[LARDER_STAT_CLEARED];
}

int th_quiesce(larder *cache, uint64_t timeout_ms)
{
	return larder__test_quiesce(cache, timeout_ms * TH_SLOW);
}

int th_flush(larder *cache, uint64_t timeout_ms)
{
	return larder_flush(cache, timeout_ms * TH_SLOW);
}

int th_check_accounting(larder *cache, uint64_t timeout_ms, uint64_t *entries,
			uint64_t *bytes)
{
	uint64_t walk_entries = 0, walk_bytes = 0;
	uint64_t values[LARDER_STAT_COUNT];
	uint64_t until = th_now_ms() + timeout_ms * TH_SLOW;
	int ok = 1, quiet = 0;

	/*
	 * With the real clock, an entry may expire between the walk and the
	 * counters (the maintainer's wheel runs on its own), and another
	 * cache's removal listener may write into this one: then the two
	 * describe different instants. So the walk is taken again until no
	 * write or removal happened around it (a finite TTL expires once). The
	 * counters are read after a second quiesce, which frees what the
	 * removals just before the walk retired (used bytes count it until
	 * then, the walk no longer does). Rounds go on until one is quiet, for
	 * the whole deadline rather than a number of rounds: fast rounds on an
	 * idle machine could all fall among a burst of real-clock expiries,
	 * which end once the TTLs have run out.
	 */
	while (!quiet) {
		uint64_t changes0, changes1;
		ok &= CHECK_EQ(th_quiesce(cache, timeout_ms), 0);
		memset(values, 0, sizeof(values));
		ok &= CHECK_RC(larder_stats(cache, values, LARDER_STAT_COUNT), LARDER_OK);
		changes0 = th_changes(values);
		larder__test_walk(cache, &walk_entries, &walk_bytes);
		ok &= CHECK_EQ(th_quiesce(cache, timeout_ms), 0);
		memset(values, 0, sizeof(values));
		ok &= CHECK_RC(larder_stats(cache, values, LARDER_STAT_COUNT), LARDER_OK);
		changes1 = th_changes(values);
		quiet = changes0 == changes1;
		if (!quiet && th_now_ms() >= until)
			break;
	}
	ok &= CHECK(quiet); /* else: writes or removals never stopped */
	ok &= CHECK_EQ(values[LARDER_STAT_ENTRIES], walk_entries);
	ok &= CHECK_EQ(values[LARDER_STAT_USED_BYTES], walk_bytes);
	ok &= CHECK_EQ(larder__test_check_links(cache, timeout_ms * TH_SLOW), 0);
	if (entries)
		*entries = walk_entries;
	if (bytes)
		*bytes = walk_bytes;
	return ok;
}

int th_check_memory_audit(larder *cache)
{
	uint64_t v[LARDER_CLASS_STAT_COUNT], class_bytes = 0, class_used = 0;
	int ok = CHECK_EQ(th_quiesce(cache, 60000), 0);
	for (size_t c = 0; c < larder_size_class_count(); c++) {
		ok &= CHECK_RC(larder_stats_size_class(cache, c, v, LARDER_CLASS_STAT_COUNT),
			       LARDER_OK);
		class_bytes += v[LARDER_CLASS_BYTES];
		class_used += v[LARDER_CLASS_USED_BYTES];
	}
	uint64_t large = th_stat(cache, LARDER_STAT_LARGE_BYTES);
	ok &= CHECK_EQ(th_stat(cache, LARDER_STAT_RETURNING_BYTES), 0);
	ok &= CHECK_EQ(class_bytes + th_stat(cache, LARDER_STAT_RESERVE_BYTES) + large,
		       th_stat(cache, LARDER_STAT_PAGES_MAPPED));
	ok &= CHECK_EQ(class_used + large, th_stat(cache, LARDER_STAT_USED_BYTES));
	return ok;
}

unsigned th_shards(void)
{
	const char *text = getenv("LARDER_TEST_SHARDS");
	unsigned long k = text ? strtoul(text, NULL, 10) : 1;

	if (k == 0 || k > LARDER_SHARDS_MAX || (k & (k - 1))) {
		fprintf(stderr, "LARDER_TEST_SHARDS=%s: not a power of two up to %u\n", text,
			LARDER_SHARDS_MAX);
		exit(2);
	}
	return (unsigned)k;
}

larder_config *th_config(uint64_t capacity_bytes)
{
	larder_config *config = NULL;

	if (!CHECK_RC(larder_config_create(&config), LARDER_OK))
		return NULL;
	if (!CHECK_RC(larder_config_set_capacity(config, capacity_bytes), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_hash_seed(config, TH_HASH_SEED), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS), LARDER_OK) ||
	    !CHECK_RC(larder_config_set_shards(config, th_shards()), LARDER_OK)) {
		larder_config_destroy(config);
		return NULL;
	}
	return config;
}

larder_config *th_config_one_shard(uint64_t capacity_bytes)
{
	larder_config *config = th_config(capacity_bytes);

	if (config != NULL && !CHECK_RC(larder_config_set_shards(config, 1), LARDER_OK)) {
		larder_config_destroy(config);
		return NULL;
	}
	return config;
}

larder *th_open(larder_config *config)
{
	larder *cache = NULL;

	if (config == NULL)
		return NULL;
	if (!CHECK_RC(larder_open(&cache, config), LARDER_OK))
		cache = NULL;
	if (cache)
		larder__test_stuck_ms(cache, TH_STUCK_MS);
	larder_config_destroy(config);
	return cache;
}
