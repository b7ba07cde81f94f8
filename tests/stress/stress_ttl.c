/*
 * tests/stress/stress_ttl.c - TTL puts, touches and removes racing with reads
 * and with the maintainer's timing wheel (run it under ThreadSanitizer).
 *
 * Usage: larder_stress_ttl [--writers N] [--readers N] [--keys N]
 *                          [--duration-ms N] [--seed N] [--after-access 1]
 * Defaults: 2 writers, 2 readers, 4096 keys, 10 s (3 s under TSan, 5 s under
 * ASan). The seed is printed; thread schedules make runs differ anyway.
 * --after-access 1 runs the cache with LARDER_EXPIRE_AFTER_ACCESS and a
 * default TTL of 100 ms: reads extend deadlines (readers' CASes racing
 * with touches and with each other), so STTL-X2 is not checked then; STTL-X1, STTL-X3
 * and STTL-X4 are.
 *
 * The injected clock is a global millisecond counter that writers advance as
 * they go. A thread may "freeze" its own view of it for one call (a
 * thread-local override read by the clock function), so the test knows the
 * exact clock reading the engine used inside that call: a put's deadline is
 * exactly frozen + ttl, and a read's expiry check used exactly frozen.
 *
 * Each key belongs to one writer (key % writers), which alone puts, touches
 * and removes it, so the owner knows each key's deadline. Keys with
 * key % 4 == 3 are "extended" keys: their touches move deadlines later; all
 * other keys' touches only move deadlines earlier (EV_TOUCH), so a value's
 * embedded deadline is an upper bound of its entry's deadline.
 *
 * Invariants asserted:
 *   STTL-X1. every value read is whole and belongs to its key (key id, version,
 *       deadline, checksum and payload; freed memory is poisoned and fails);
 *   STTL-X2. no read returns a value at or after its deadline: the reader's
 *       frozen clock < the value's deadline (for non-extended keys);
 *   STTL-X3. the listener sees whole values (a value's deadline is only an upper
 *       bound once a touch shortened it, so EXPIRED times are checked by
 *       tests/unit/test_ttl.c, not here);
 *   STTL-X4. once every thread stopped and the clock is moved past every
 *       deadline, the maintainer expires everything: no entries remain, and
 *       puts == explicit + replaced + expired + evicted removals (each entry
 *       left exactly once, MAINT-M3); counters agree with a walk (MAINT-M1).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "harness.h"

#define MAX_TTL 400u
#define PAYLOAD_MAX 48u

static struct {
	uint64_t writers, readers, keys, duration_ms, seed, after_access;
} opt;

static struct th_freeze_clock clock_; /* the injected clock */
static _Atomic int stop;
static _Atomic uint64_t puts_ok, reads_hit, reads_checked, touches, removes, listener_seen;
static _Atomic uint64_t expired_seen;

#define XFAIL(...) TH_FAIL_CAPPED(40, __VA_ARGS__)

#define VALUE_MAX (sizeof(struct th_value_header) + PAYLOAD_MAX)

/* STTL-X1; returns the value's deadline, or 0 when the value is not whole. */
static uint64_t value_ok(const char *what, uint32_t key, const void *p, size_t n)
{
	struct th_value_header h;
	return th_value_check(what, key, p, n, &h) ? h.deadline : 0;
}

static int extended_key(uint32_t key)
{
	return key % 4 == 3;
}

static void key_name(char *buf, uint32_t key)
{
	snprintf(buf, 16, "ttl%08u", key);
}

static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	(void)ctx;
	char name[16];
	if (key_len != 11) {
		XFAIL("listener: key length %zu", key_len);
		return;
	}
	memcpy(name, key, 11);
	name[11] = 0;
	uint32_t id = (uint32_t)strtoul(name + 3, NULL, 10);
	atomic_fetch_add_explicit(&listener_seen, 1, memory_order_relaxed);
	if (!value_ok("listener", id, value, value_len))
		return;
	if (cause == LARDER_CAUSE_EXPIRED)
		atomic_fetch_add_explicit(&expired_seen, 1, memory_order_relaxed);
}

struct worker {
	larder *cache;
	unsigned id;
	pthread_t thread;
	uint64_t *deadline; /* writers: per owned key, the entry's deadline (0: absent) */
};

static void *writer_main(void *arg)
{
	struct worker *w = arg;
	struct th_rng rng = { opt.seed ^ th_mix64(w->id + 1) };
	unsigned char v[VALUE_MAX];
	char name[16];
	uint64_t ops = 0;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint32_t key = (uint32_t)(th_rng_below(&rng, opt.keys / opt.writers) * opt.writers +
					  w->id);
		if (key >= opt.keys)
			continue;
		key_name(name, key);
		unsigned op = (unsigned)th_rng_below(&rng, 100);
		uint64_t now = th_freeze(&clock_);
		if (op < 55) {
			uint64_t ttl = 1 + th_rng_below(&rng, MAX_TTL);
			size_t n = th_value_make(v, key, sizeof(struct th_value_header) +
							  th_rng_below(&rng, PAYLOAD_MAX + 1),
						  now + ttl);
			int rc = larder_put(w->cache, name, 11, v, n, ttl);
			if (rc == LARDER_OK) {
				w->deadline[key] = now + ttl;
				atomic_fetch_add_explicit(&puts_ok, 1, memory_order_relaxed);
			} else if (rc != LARDER_EBUSY) {
				XFAIL("put: %s", larder_strerror(rc));
			}
		} else if (op < 80) {
			/* touch: earlier for ordinary keys, anything for extended ones */
			uint64_t d = w->deadline[key], ttl;
			if (extended_key(key))
				ttl = 1 + th_rng_below(&rng, 2 * MAX_TTL);
			else if (d > now + 1)
				ttl = 1 + th_rng_below(&rng, d - now - 1);
			else
				ttl = 0;
			if (ttl) {
				int rc = larder_touch(w->cache, name, 11, ttl);
				if (rc == LARDER_OK)
					w->deadline[key] = now + ttl;
				else if (rc != LARDER_MISS && rc != LARDER_EBUSY)
					XFAIL("touch: %s", larder_strerror(rc));
				atomic_fetch_add_explicit(&touches, 1, memory_order_relaxed);
			}
		} else if (op < 92) {
			int rc = larder_remove(w->cache, name, 11);
			if (rc != LARDER_OK && rc != LARDER_MISS && rc != LARDER_EBUSY)
				XFAIL("remove: %s", larder_strerror(rc));
			w->deadline[key] = 0;
			atomic_fetch_add_explicit(&removes, 1, memory_order_relaxed);
		} else {
			unsigned char buf[VALUE_MAX];
			size_t n = 0;
			int rc = larder_get(w->cache, name, 11, buf, sizeof(buf), &n);
			if (rc == LARDER_OK && value_ok("writer get", key, buf, n) &&
			    !opt.after_access && w->deadline[key] && now >= w->deadline[key])
				XFAIL("get key %u at %" PRIu64 ": owner's deadline %" PRIu64, key, now,
				      w->deadline[key]);
		}
		th_thaw();
		if ((++ops & 7) == 0)
			atomic_fetch_add_explicit(&clock_.now_ms, 1, memory_order_release);
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct worker *w = arg;
	struct th_rng rng = { opt.seed ^ th_mix64(1000 + w->id) };
	unsigned char buf[VALUE_MAX];
	char name[16];
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		uint32_t key = (uint32_t)th_rng_below(&rng, opt.keys);
		size_t n = 0;
		key_name(name, key);
		uint64_t now = th_freeze(&clock_);
		int rc = larder_get(w->cache, name, 11, buf, sizeof(buf), &n);
		th_thaw();
		if (rc == LARDER_MISS)
			continue;
		if (rc != LARDER_OK) {
			XFAIL("get: %s", larder_strerror(rc));
			continue;
		}
		atomic_fetch_add_explicit(&reads_hit, 1, memory_order_relaxed);
		uint64_t deadline = value_ok("reader", key, buf, n);
		if (!deadline || extended_key(key) || opt.after_access)
			continue;
		atomic_fetch_add_explicit(&reads_checked, 1, memory_order_relaxed);
		if (now >= deadline) /* STTL-X2 */
			XFAIL("get key %u at %" PRIu64 " returned a value whose deadline is %" PRIu64,
			      key, now, deadline);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	opt.writers = th_arg_u64(argc, argv, "--writers", 2);
	opt.readers = th_arg_u64(argc, argv, "--readers", 2);
	opt.keys = th_arg_u64(argc, argv, "--keys", 4096);
	opt.duration_ms =
		th_arg_u64(argc, argv, "--duration-ms", TH_TSAN ? 3000 : TH_ASAN ? 5000 : 10000);
	opt.seed = th_arg_seed(argc, argv);
	opt.after_access = th_arg_u64(argc, argv, "--after-access", 0);
	if (opt.writers < 1 || opt.writers > 64 || opt.readers > 64 || opt.keys < opt.writers) {
		fprintf(stderr, "stress_ttl: bad arguments\n");
		return 2;
	}
	printf("stress_ttl: %" PRIu64 " writers, %" PRIu64 " readers, %" PRIu64
	       " keys, %" PRIu64 " ms%s\n",
	       opt.writers, opt.readers, opt.keys, opt.duration_ms,
	       opt.after_access ? ", expire after access" : "");
	larder__test_poison_freed(1);
	atomic_store(&clock_.now_ms, 1000000);

	larder_config *config = th_config(32 * MiB);
	if (!config)
		return 1;
	if (larder_config_set_clock(config, th_freeze_clock_fn, &clock_) != LARDER_OK ||
	    larder_config_set_removal_listener(config, listener, NULL) != LARDER_OK ||
	    larder_config_set_write_wait_ms(config, 5000) != LARDER_OK)
		return 1;
	if (opt.after_access &&
	    (larder_config_set_expiry(config, LARDER_EXPIRE_AFTER_ACCESS) != LARDER_OK ||
	     larder_config_set_default_ttl_ms(config, 100) != LARDER_OK))
		return 1;
	larder *cache = th_open(config);
	if (!cache)
		return 1;

	struct worker *ws = calloc(opt.writers + opt.readers, sizeof(*ws));
	uint64_t *deadline = calloc(opt.keys, sizeof(uint64_t));
	if (!ws || !deadline)
		return 1;
	for (unsigned i = 0; i < opt.writers + opt.readers; i++) {
		ws[i] = (struct worker){ cache, i, 0, deadline };
		if (pthread_create(&ws[i].thread, NULL, i < opt.writers ? writer_main : reader_main,
				   &ws[i]) != 0) {
			fprintf(stderr, "stress_ttl: pthread_create failed\n");
			return 1;
		}
	}
	/* The main thread only keeps time: a pause, not a synchronisation. */
	th_pause_ms(opt.duration_ms);
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < opt.writers + opt.readers; i++)
		pthread_join(ws[i].thread, NULL);

	/* STTL-X4: past every deadline, the wheel empties the cache by itself. */
	CHECK_EQ(th_quiesce(cache, 30000), 0);
	atomic_fetch_add(&clock_.now_ms, 4 * MAX_TTL); /* > 2 MAX_TTL and > 100 ms after the last read */
	CHECK_EQ(th_quiesce(cache, 30000), 0);
	uint64_t entries = 0, bytes = 0;
	th_check_accounting(cache, 30000, &entries, &bytes);
	CHECK_EQ(entries, 0);
	CHECK_EQ(th_stat(cache, LARDER_STAT_ENTRIES), 0);
	uint64_t left = th_stat(cache, LARDER_STAT_REMOVALS) +
			th_stat(cache, LARDER_STAT_REPLACEMENTS) +
			th_stat(cache, LARDER_STAT_EXPIRATIONS) + th_stat(cache, LARDER_STAT_EVICTIONS);
	CHECK_EQ(left, atomic_load(&puts_ok));
	CHECK_EQ(atomic_load(&listener_seen), left);
	CHECK_EQ(th_stat(cache, LARDER_STAT_EXPIRATIONS), atomic_load(&expired_seen));
	printf("stress_ttl: %" PRIu64 " puts, %" PRIu64 " touches, %" PRIu64 " removes, %" PRIu64
	       " read hits (%" PRIu64 " deadline-checked), %" PRIu64 " expired, clock +%" PRIu64
	       " ms\n",
	       atomic_load(&puts_ok), atomic_load(&touches), atomic_load(&removes),
	       atomic_load(&reads_hit), atomic_load(&reads_checked), atomic_load(&expired_seen),
	       atomic_load(&clock_.now_ms) - 1000000);
	larder_close(cache);
	larder__test_poison_freed(0);
	free(ws);
	free(deadline);
	long f = th_failures();
	printf("%s (%ld failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
