/*
 * tests/bench/ttl_bench.c - the TTL benchmark: the timing wheel under 10^7
 * deadlines, with the injected clock.
 *
 * Usage: larder_ttl_bench [--entries N] [--step MS] [--reads N] [--seed N]
 *   --entries  entries loaded (default 10^7)
 *   --step     cache-clock milliseconds per clock step (default 1)
 *   --reads    sampled larder_get calls after each step (default 2)
 *
 * What it does:
 *   1. loads N entries (8-byte keys, 8-byte values holding the deadline) with
 *      TTLs uniform over 1 s .. 1 h, the clock standing still at T0, from two
 *      writer threads;
 *   2. moves the clock from T0 to T0 + 1 h in steps. After each step it wakes
 *      the maintainer (larder__test_wake: an injected clock cannot wake it,
 *      a real one needs no wake-up) and waits until the maintainer's wheel
 *      has expired everything due (larder__test_wheel_done), then reads
 *      --reads random keys: a hit must carry a deadline later than the clock
 *      (no expired value is ever returned), a miss must be a key whose
 *      deadline has passed (nothing was lost early);
 *   3. prints: load rate; the maintainer's CPU time per expiry (its thread
 *      CPU clock, read from inside the listener, which runs on it) and the
 *      wall time of the expiry phase per expiry; lateness p50/p99/max in
 *      cache-clock ms (listener's clock - deadline) and in wall microseconds
 *      (listener's wall time - wall time at which the clock was first set at
 *      or past the deadline) and in the maintainer's thread CPU time over
 *      that same interval (what it worked on before the removal: a cascade
 *      burst counts, being descheduled on a shared machine does not), and
 *      the counts of wrong reads (must be 0);
 *   4. for comparison, the wheel alone (ttl/wheel.c on bare 24-byte timers
 *      with the same deadlines, advance then prepare(256 + 4 per expiry) per
 *      step, as the maintainer's pass does): ns per schedule and per expiry, and the
 *      longest single advance and prepare call in thread CPU time (a
 *      cascade burst shows there).
 * Exits non-zero when a wrong read was seen or an entry was not expired.
 * About 1-2 minutes for 10^7 entries on 2 cores (larger --step: faster).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "harness.h"
#include "ttl/wheel.h"

#define T0 1000000ull
#define TTL_MIN 1000ull
#define TTL_MAX 3600000ull
#define CACHE_HIST 4096u          /* cache-ms lateness buckets */
#define WALL_HIST (1u << 20)      /* wall-us lateness buckets */

static struct {
	uint64_t entries, step, reads, seed;
} opt;

static _Atomic uint64_t clock_now = T0;
static uint64_t *wall_at;   /* wall ns at which step i was set (driver writes) */
static uint64_t *cpu_at;    /* the maintainer's thread CPU ns then (0: unknown) */
static uint64_t nsteps;

/* Listener state: written only on the maintainer thread. */
static uint64_t hist_cache[CACHE_HIST + 1], hist_wall[WALL_HIST + 1], hist_cpu[WALL_HIST + 1];
static uint64_t max_cache, max_wall_ns, max_cpu_ns, expired, other_removals;
static _Atomic int have_cpu_clock;
static clockid_t maint_cpu_clock;

static uint64_t bench_clock(void *ctx)
{
	(void)ctx;
	/* Acquire: pairs with the driver's release store, so wall_at[] for the
	 * step is visible to the listener that reads this clock. */
	return atomic_load_explicit(&clock_now, memory_order_acquire);
}

static uint64_t wall_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	(void)ctx;
	(void)key;
	(void)key_len;
	if (!atomic_load_explicit(&have_cpu_clock, memory_order_relaxed)) {
		if (pthread_getcpuclockid(pthread_self(), &maint_cpu_clock) == 0)
			atomic_store_explicit(&have_cpu_clock, 1, memory_order_release);
	}
	if (cause != LARDER_CAUSE_EXPIRED || value_len != 8) {
		other_removals++;
		return;
	}
	uint64_t deadline, now = bench_clock(NULL), w = wall_ns();
	memcpy(&deadline, value, 8);
	expired++;
	uint64_t late = now - deadline;
	hist_cache[late < CACHE_HIST ? late : CACHE_HIST]++;
	max_cache = late > max_cache ? late : max_cache;
	/* The first step whose clock reached the deadline. */
	uint64_t i = (deadline - T0 + opt.step - 1) / opt.step;
	if (i < nsteps && wall_at[i] && w >= wall_at[i]) {
		uint64_t ns = w - wall_at[i];
		uint64_t us = ns / 1000;
		hist_wall[us < WALL_HIST ? us : WALL_HIST]++;
		max_wall_ns = ns > max_wall_ns ? ns : max_wall_ns;
	}
	if (i < nsteps && cpu_at[i]) { /* the same, in the maintainer's CPU time */
		uint64_t c = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		uint64_t ns = c > cpu_at[i] ? c - cpu_at[i] : 0;
		uint64_t us = ns / 1000;
		hist_cpu[us < WALL_HIST ? us : WALL_HIST]++;
		max_cpu_ns = ns > max_cpu_ns ? ns : max_cpu_ns;
	}
}

static uint64_t key_deadline(uint64_t i)
{
	return T0 + TTL_MIN + th_mix64(opt.seed ^ i) % (TTL_MAX - TTL_MIN + 1);
}

struct loader {
	larder *cache;
	uint64_t from, to, failed;
};

static void *load_main(void *arg)
{
	struct loader *l = arg;
	for (uint64_t i = l->from; i < l->to; i++) {
		uint64_t d = key_deadline(i);
		if (larder_put(l->cache, &i, 8, &d, 8, d - T0) != LARDER_OK)
			l->failed++;
	}
	return NULL;
}

/* ---- The wheel alone: the same deadlines on bare intrusive timers ---------- */

struct bare_timer {
	struct larder__wheel_link link;
	uint64_t deadline;
	uint32_t id; /* from a directory of its own (mem/pagedir.h), as entries have */
};

static uint64_t bare_deadline(void *ctx, struct larder__wheel_link *l)
{
	(void)ctx;
	return ((struct bare_timer *)(void *)l)->deadline;
}

static uint64_t bare_fired;

static void bare_expire(void *ctx, struct larder__wheel_link *l, uint32_t id)
{
	(void)ctx;
	(void)l;
	(void)id;
	bare_fired++;
}

/* Prints ns per schedule and per expiry (advance in opt.step steps). */
static void wheel_alone(void)
{
	struct bare_timer *t = malloc(opt.entries * sizeof(*t));
	struct larder__wheel w;
	struct larder__pagedir dir;
	struct larder__pageid pg;
	if (!t || larder__pagedir_init(&dir) != 0) {
		printf("wheel alone: no memory\n");
		free(t);
		return;
	}
	for (uint64_t i = 0; i < opt.entries; i += 2048) {
		uint32_t n = (uint32_t)(opt.entries - i < 2048 ? opt.entries - i : 2048);
		if (larder__pagedir_add_locked(&dir, &pg, &t[i], n, sizeof(*t)) != 0) {
			printf("wheel alone: out of ids\n");
			goto out;
		}
		for (uint32_t j = 0; j < n; j++)
			t[i + j].id = pg.first_id + j;
	}
	larder__wheel_init(&w, T0, &dir, offsetof(struct bare_timer, link), bare_deadline, NULL);
	uint64_t t0 = wall_ns();
	for (uint64_t i = 0; i < opt.entries; i++) {
		t[i].link = (struct larder__wheel_link){ 0, 0 };
		t[i].deadline = key_deadline(i);
		larder__wheel_schedule(&w, &t[i].link, t[i].id, t[i].deadline);
	}
	uint64_t t1 = wall_ns(), longest_advance = 0, longest_prepare = 0;
	for (uint64_t now = T0 + opt.step; bare_fired < opt.entries; now += opt.step) {
		/* Thread CPU time: a preemption on a shared machine is no burst. */
		uint64_t a = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		uint64_t n = larder__wheel_advance(&w, now, UINT64_MAX, bare_expire, NULL);
		uint64_t b = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		larder__wheel_prepare(&w, 256 + 4 * n); /* as the maintainer's expire_due() */
		uint64_t c = cpu_ns(CLOCK_THREAD_CPUTIME_ID);
		longest_advance = b - a > longest_advance ? b - a : longest_advance;
		longest_prepare = c - b > longest_prepare ? c - b : longest_prepare;
	}
	uint64_t t2 = wall_ns();
	printf("wheel alone (no cache): schedule %.0f ns, advance+expire %.0f ns per timer "
	       "(%" PRIu64 " timers, %" PRIu64 " ms steps, cascades included); longest call "
	       "(thread CPU): advance %.1f us, prepare %.1f us\n",
	       (double)(t1 - t0) / (double)opt.entries, (double)(t2 - t1) / (double)opt.entries,
	       bare_fired, opt.step, (double)longest_advance / 1e3, (double)longest_prepare / 1e3);
	larder__wheel_destroy(&w);
out:
	larder__pagedir_destroy(&dir);
	free(t);
}

static uint64_t percentile(const uint64_t *hist, size_t buckets, uint64_t total, double p)
{
	uint64_t want = (uint64_t)(p * (double)total), seen = 0;
	for (size_t i = 0; i <= buckets; i++) {
		seen += hist[i];
		if (seen > want)
			return i;
	}
	return buckets;
}

int main(int argc, char **argv)
{
	opt.entries = th_arg_u64(argc, argv, "--entries", 10000000);
	opt.step = th_arg_u64(argc, argv, "--step", 1);
	opt.reads = th_arg_u64(argc, argv, "--reads", 2);
	opt.seed = th_arg_seed(argc, argv);
	if (!opt.entries || !opt.step)
		return 2;
	nsteps = TTL_MAX / opt.step + 2;
	wall_at = calloc(nsteps, sizeof(*wall_at));
	cpu_at = calloc(nsteps, sizeof(*cpu_at));
	if (!wall_at || !cpu_at)
		return 1;

	larder_config *config = th_config((uint64_t)opt.entries * 96 + (64ull << 20));
	if (!config || larder_config_set_clock(config, bench_clock, NULL) != LARDER_OK ||
	    larder_config_set_removal_listener(config, listener, NULL) != LARDER_OK ||
	    larder_config_set_expected_entries(config, opt.entries) != LARDER_OK)
		return 1;
	larder *cache = th_open(config);
	if (!cache)
		return 1;

	/* 1. Load. */
	struct loader ld[2] = { { cache, 0, opt.entries / 2, 0 },
				{ cache, opt.entries / 2, opt.entries, 0 } };
	pthread_t th[2];
	uint64_t t0 = wall_ns();
	for (int i = 0; i < 2; i++)
		if (pthread_create(&th[i], NULL, load_main, &ld[i]) != 0)
			return 1;
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	if (larder__test_quiesce(cache, 120000) != 0)
		fprintf(stderr, "ttl_bench: the maintainer did not settle after the load\n");
	uint64_t load_ns = wall_ns() - t0;
	printf("load: %" PRIu64 " entries (%" PRIu64 " failed) in %.2f s: %.2f M puts/s "
	       "(2 writer threads; TTL uniform over 1 s .. 1 h)\n",
	       opt.entries, ld[0].failed + ld[1].failed, (double)load_ns / 1e9,
	       (double)opt.entries / ((double)load_ns / 1e3));

	/* One removal now, so that the listener learns the maintainer's CPU clock. */
	uint64_t probe = UINT64_MAX;
	if (larder_put(cache, "cpu-clock", 9, &probe, 8, LARDER_TTL_NEVER) != LARDER_OK ||
	    larder_remove(cache, "cpu-clock", 9) != LARDER_OK ||
	    larder__test_quiesce(cache, 10000) != 0)
		fprintf(stderr, "ttl_bench: the CPU clock probe failed\n");

	/* 2. Move the clock. */
	struct th_rng rng = { opt.seed };
	uint64_t wrong_hits = 0, wrong_misses = 0, reads = 0, hits = 0, waits = 0;
	uint64_t cpu0 = 0, cpu1 = 0;
	int cpu_ok = atomic_load_explicit(&have_cpu_clock, memory_order_acquire);
	if (cpu_ok)
		cpu0 = cpu_ns(maint_cpu_clock);
	t0 = wall_ns();
	for (uint64_t s = 1; s < nsteps; s++) {
		uint64_t t = T0 + s * opt.step;
		wall_at[s] = wall_ns();
		if (cpu_ok)
			cpu_at[s] = cpu_ns(maint_cpu_clock);
		atomic_store_explicit(&clock_now, t, memory_order_release);
		/* The maintainer's wheel reached t, or there is nothing left. */
		for (;;) {
			larder__test_wake(cache);
			if (larder__test_wheel_done(cache) >= t)
				break;
			if (th_stat(cache, LARDER_STAT_ENTRIES) == 0)
				break; /* an empty wheel does not read the clock */
			waits++;
			sched_yield();
		}
		for (uint64_t r = 0; r < opt.reads; r++) {
			uint64_t i = th_rng_below(&rng, opt.entries), v = 0;
			size_t len = 0;
			int rc = larder_get(cache, &i, 8, &v, 8, &len);
			uint64_t d = key_deadline(i);
			reads++;
			if (rc == LARDER_OK) {
				hits++;
				if (v != d || t >= d)
					wrong_hits++;
			} else if (t < d) {
				wrong_misses++;
			}
		}
		if (t >= T0 + TTL_MAX)
			break;
	}
	uint64_t expire_ns = wall_ns() - t0;
	if (larder__test_quiesce(cache, 60000) != 0)
		fprintf(stderr, "ttl_bench: the maintainer did not settle at the end\n");
	if (cpu_ok || atomic_load_explicit(&have_cpu_clock, memory_order_acquire))
		cpu1 = cpu_ns(maint_cpu_clock);
	uint64_t ex = expired; /* after quiesce (QUIESCE-Q3): the listener is done */
	uint64_t entries_left = th_stat(cache, LARDER_STAT_ENTRIES);
	uint64_t expirations = th_stat(cache, LARDER_STAT_EXPIRATIONS);

	printf("expiry: clock T0 -> T0 + 1 h in %" PRIu64 " ms steps (%" PRIu64
	       " steps) in %.2f s wall\n",
	       opt.step, nsteps - 1, (double)expire_ns / 1e9);
	printf("expired: %" PRIu64 " (stat %" PRIu64 "), other removals %" PRIu64
	       ", entries left %" PRIu64 "\n",
	       ex, expirations, other_removals, entries_left);
	if (ex) {
		if (cpu_ok)
			printf("maintainer CPU per expiry: %.0f ns (thread CPU time over the phase, "
			       "all its work: wheel, index unlink, listener, frees, passes)\n",
			       (double)(cpu1 - cpu0) / (double)ex);
		printf("wall time per expiry: %.0f ns (whole phase, driver waits included)\n",
		       (double)expire_ns / (double)ex);
		printf("lateness, cache clock (removal clock - deadline): p50 %" PRIu64
		       " ms, p99 %" PRIu64 " ms, max %" PRIu64 " ms\n",
		       percentile(hist_cache, CACHE_HIST, ex, 0.50),
		       percentile(hist_cache, CACHE_HIST, ex, 0.99), max_cache);
		uint64_t wall_n = 0;
		for (size_t i = 0; i <= WALL_HIST; i++)
			wall_n += hist_wall[i];
		uint64_t over_ms = 0;
		for (size_t i = 1000; i <= WALL_HIST; i++)
			over_ms += hist_wall[i];
		printf("lateness, wall (removal - moment the clock reached the deadline): p50 %" PRIu64
		       " us, p99 %" PRIu64 " us, p99.9 %" PRIu64 " us, p99.99 %" PRIu64
		       " us, max %.1f us; %" PRIu64 " of %" PRIu64 " over 1 ms\n",
		       percentile(hist_wall, WALL_HIST, wall_n, 0.50),
		       percentile(hist_wall, WALL_HIST, wall_n, 0.99),
		       percentile(hist_wall, WALL_HIST, wall_n, 0.999),
		       percentile(hist_wall, WALL_HIST, wall_n, 0.9999), (double)max_wall_ns / 1e3,
		       over_ms, wall_n);
		uint64_t cpu_n = 0, cpu_over_ms = 0;
		for (size_t i = 0; i <= WALL_HIST; i++) {
			cpu_n += hist_cpu[i];
			cpu_over_ms += i >= 1000 ? hist_cpu[i] : 0;
		}
		printf("lateness, maintainer CPU (its thread CPU time over the same interval: the "
		       "work it did first, without preemption): p50 %" PRIu64 " us, p99 %" PRIu64
		       " us, p99.9 %" PRIu64 " us, p99.99 %" PRIu64 " us, max %.1f us; %" PRIu64
		       " of %" PRIu64 " over 1 ms\n",
		       percentile(hist_cpu, WALL_HIST, cpu_n, 0.50),
		       percentile(hist_cpu, WALL_HIST, cpu_n, 0.99),
		       percentile(hist_cpu, WALL_HIST, cpu_n, 0.999),
		       percentile(hist_cpu, WALL_HIST, cpu_n, 0.9999), (double)max_cpu_ns / 1e3,
		       cpu_over_ms, cpu_n);
	}
	printf("reads after each step: %" PRIu64 " (%" PRIu64 " hits); expired values returned: %" PRIu64
	       "; live keys missing: %" PRIu64 "; driver waits %" PRIu64 "\n",
	       reads, hits, wrong_hits, wrong_misses, waits);
	larder_close(cache);
	free(wall_at);
	free(cpu_at);
	wheel_alone();
	int ok = wrong_hits == 0 && wrong_misses == 0 && ex == opt.entries && entries_left == 0;
	printf("%s\n", ok ? "OK" : "FAILED");
	return ok ? 0 : 1;
}
