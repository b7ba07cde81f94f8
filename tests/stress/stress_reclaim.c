/*
 * tests/stress/stress_reclaim.c - grace periods polled without a lock while
 * threads start and exit (run it under ThreadSanitizer and AddressSanitizer).
 *
 * Usage: larder_stress_reclaim [--reclaimers N] [--churners N] [--readers N]
 *                              [--duration-ms N] [--seed N]
 * Defaults: 2 reclaimers, 3 churners, 2 readers, 2 s.
 *
 * sync/reclaim.h is driven directly. One shared pointer names a live
 * object. Each reclaimer, as a maintainer does, swaps in a new object,
 * covers the old one by a grace period (its own start, or a sealed token,
 * larder__gp_next, that some start covers: GP-G3), polls until it is over,
 * poisons the old object and frees it. Every thread's slot is the one in its
 * larder thread state (core/thread.h). Churners are short-lived threads, one
 * after another in each churner slot: each takes a state, runs a few read
 * sections and gives the state back as it exits, so states and their slots
 * are lent again while the reclaimers poll (GP-G4, THREAD-T4). Readers are
 * long-lived and nest their sections. Inside a section a thread loads the
 * object, yields (so that polls find it inside) and checks the object again.
 * The main thread registers slots of its own meanwhile, one per tick, and
 * reads through the newest: chunks are linked while polls walk, and the
 * last slot a poll reaches is one in use (thread records are lent again,
 * so the churners' slots stay among the first).
 *
 * Invariants asserted:
 *   SRECLAIM-R1. an object loaded inside a section is neither poisoned nor
 *       freed (AddressSanitizer) before the section's outermost exit;
 *   SRECLAIM-R2. a state lent again has its slot outside any section, and
 *       the states lent stay no more than the threads ever alive at once (an
 *       exited thread's state is lent again rather than a state made for
 *       every thread started: THREAD-T4);
 *   SRECLAIM-R3. every grace period ends: each reclaimer completes rounds while
 *       threads come and go (a hang guard of 60 s past the duration, not a
 *       timing assertion).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "core/thread.h"
#include "harness.h"
#include "sync/reclaim.h"

#define LIVE 0x11fe11fe11fe11feull
#define POISON 0xdeaddeaddeaddeadull
#define SECTIONS_PER_CHURNER 16u
#define MAX_THREADS 32u
#define HANG_GUARD_MS (60000u * TH_SLOW)
#define HELD_SLOTS 200u /* over three chunks of the registry */

struct object {
	larder__atomic_u64 magic; /* LIVE, then POISON just before the free */
	uint64_t payload[7];
};

static struct {
	uint64_t reclaimers, churners, readers, duration_ms, seed;
} opt;

static _Atomic(struct object *) current;
static atomic_int stop;
static _Atomic uint64_t sections, grace_periods, threads_started;

/* SRECLAIM-R2: the distinct slots ever lent, under slots_lock. */
static pthread_mutex_t slots_lock = PTHREAD_MUTEX_INITIALIZER;
static struct larder__reader *slots_seen[4 * MAX_THREADS];
static unsigned slots_seen_count, slots_overflow;

static struct object *object_new(void)
{
	struct object *o = malloc(sizeof(*o));
	if (o)
		atomic_store_explicit(&o->magic, LIVE, memory_order_relaxed);
	return o;
}

static void note_slot(struct larder__reader *r)
{
	pthread_mutex_lock(&slots_lock);
	unsigned i = 0;
	while (i < slots_seen_count && slots_seen[i] != r)
		i++;
	if (i == slots_seen_count) {
		if (i < TH_COUNT(slots_seen))
			slots_seen[slots_seen_count++] = r;
		else
			slots_overflow++;
	}
	pthread_mutex_unlock(&slots_lock);
}

/* The calling thread's slot, in the state it takes (given back at its exit). */
static struct larder__reader *lend(void)
{
	struct larder__thread *t = larder__thread_self();
	if (!CHECK(t != NULL))
		return NULL;
	CHECK(!larder__read_active(&t->reader)); /* SRECLAIM-R2 */
	note_slot(&t->reader);
	return &t->reader;
}

/* One section (nested once when depth > 1): SRECLAIM-R1. */
static void section(struct larder__reader *r, unsigned depth, unsigned yields)
{
	uint64_t outer = larder__read_enter(r);
	struct object *o = atomic_load_explicit(&current, memory_order_acquire);
	CHECK_EQ(atomic_load_explicit(&o->magic, memory_order_relaxed), LIVE);
	for (unsigned i = 0; i < yields; i++)
		sched_yield();
	if (depth > 1)
		section(r, depth - 1, 0);
	/* The enclosing section still holds o after a nested exit. */
	CHECK_EQ(atomic_load_explicit(&o->magic, memory_order_relaxed), LIVE);
	larder__read_exit(r, outer);
	atomic_fetch_add_explicit(&sections, 1, memory_order_relaxed);
}

static void *churn_one(void *arg)
{
	struct th_rng *rng = arg;
	struct larder__reader *r = lend();
	if (!r)
		return NULL;
	for (unsigned i = 0; i < SECTIONS_PER_CHURNER; i++)
		section(r, 1 + (unsigned)th_rng_below(rng, 2), (unsigned)th_rng_below(rng, 3));
	return NULL;
}

/* One churner slot: a short-lived thread after another. */
static void *churner_main(void *arg)
{
	struct th_rng rng = { *(uint64_t *)arg };
	while (!atomic_load(&stop)) {
		pthread_t t;
		if (!CHECK_EQ(pthread_create(&t, NULL, churn_one, &rng), 0))
			break;
		pthread_join(t, NULL);
		atomic_fetch_add_explicit(&threads_started, 1, memory_order_relaxed);
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct th_rng rng = { *(uint64_t *)arg };
	struct larder__reader *r = lend();
	if (!r)
		return NULL;
	while (!atomic_load(&stop))
		section(r, 1 + (unsigned)th_rng_below(&rng, 3), (unsigned)th_rng_below(&rng, 2));
	return NULL;
}

static void *reclaimer_main(void *arg)
{
	uint64_t round = *(uint64_t *)arg;
	uint64_t guard = th_now_ms() + opt.duration_ms + HANG_GUARD_MS;
	/* A maintainer owns a slot too (the registry's setup runs before any
	 * grace period starts); it never enters a section here. */
	if (!lend())
		return NULL;
	while (!atomic_load(&stop)) {
		struct object *fresh = object_new();
		if (!CHECK(fresh != NULL))
			break;
		/* The unlink: seq_cst, as the maintainer's index stores are ordered
		 * before its grace period by GP-M1 (which follows). */
		struct object *old = atomic_exchange(&current, fresh);
		uint64_t token;
		if (round++ % 2) {
			token = larder__gp_start();
		} else {
			token = larder__gp_next(); /* GP-G3: some start covers it */
			if (!larder__gp_begun(token))
				CHECK_GE(larder__gp_start(), token);
		}
		int over = 1;
		while (over && !larder__gp_poll(token)) {
			over = CHECK_LT(th_now_ms(), guard); /* SRECLAIM-R3: a hang guard */
			sched_yield();
		}
		if (!over) /* old may still be held: leave it */
			break;
		atomic_store_explicit(&old->magic, POISON, memory_order_relaxed);
		free(old);
		atomic_fetch_add_explicit(&grace_periods, 1, memory_order_relaxed);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	opt.reclaimers = th_arg_u64(argc, argv, "--reclaimers", 2);
	opt.churners = th_arg_u64(argc, argv, "--churners", 3);
	opt.readers = th_arg_u64(argc, argv, "--readers", 2);
	opt.duration_ms = th_arg_u64(argc, argv, "--duration-ms", 2000);
	opt.seed = th_arg_seed(argc, argv);
	uint64_t n = opt.reclaimers + opt.churners + opt.readers;
	if (opt.reclaimers < 1 || opt.churners + opt.readers < 1 || n > MAX_THREADS) {
		fprintf(stderr, "stress_reclaim: bad arguments\n");
		return 2;
	}
	printf("stress_reclaim: %" PRIu64 " reclaimers, %" PRIu64 " churners, %" PRIu64
	       " readers, %" PRIu64 " ms\n",
	       opt.reclaimers, opt.churners, opt.readers, opt.duration_ms);
	atomic_store(&current, object_new());
	if (!atomic_load(&current))
		return 1;
	pthread_t ts[MAX_THREADS];
	uint64_t seeds[MAX_THREADS];
	for (uint64_t i = 0; i < n; i++) {
		seeds[i] = th_mix64(opt.seed + i);
		void *(*fn)(void *) = i < opt.reclaimers			  ? reclaimer_main
				      : i < opt.reclaimers + opt.churners ? churner_main
									  : reader_main;
		if (pthread_create(&ts[i], NULL, fn, &seeds[i]) != 0) {
			fprintf(stderr, "stress_reclaim: pthread_create failed\n");
			return 1;
		}
	}
	/* Meanwhile the main thread registers slots, one per tick, so that the
	 * registry links new chunks while polls walk it, and reads through the
	 * newest, the last a poll reaches. Static: a registered slot is never
	 * freed (GP-G4). For the duration and, where a loaded machine started
	 * the others late, on until a grace period has ended and a churner's
	 * thread has come and gone (SRECLAIM-R3's hang guard past that). */
	static struct larder__reader held[HELD_SLOTS];
	unsigned nheld = 0;
	struct th_rng rng = { th_mix64(opt.seed + n) };
	uint64_t until = th_now_ms() + opt.duration_ms, guard = until + HANG_GUARD_MS;
	while ((th_now_ms() < until || !atomic_load(&grace_periods) ||
		(opt.churners && !atomic_load(&threads_started))) &&
	       th_now_ms() < guard && !th_failures()) {
		if (nheld < HELD_SLOTS && CHECK(larder__reader_register(&held[nheld])))
			nheld++;
		for (unsigned i = 0; nheld > 0 && i < SECTIONS_PER_CHURNER; i++)
			section(&held[nheld - 1], 1 + (unsigned)th_rng_below(&rng, 2),
				1 + (unsigned)th_rng_below(&rng, 3));
		usleep(5 * 1000);
	}
	atomic_store(&stop, 1);
	for (uint64_t i = 0; i < n; i++)
		pthread_join(ts[i], NULL);
	free(atomic_load(&current));

	/* SRECLAIM-R2: no more states than threads alive at once, however many
	 * threads started (an exited thread's destructor gives its state back
	 * before its join returns). */
	CHECK_EQ(slots_overflow, 0);
	CHECK_LE(slots_seen_count, n);
	/* SRECLAIM-R3, and the run did what it is for: polls beside thread churn. */
	CHECK_GT(atomic_load(&grace_periods), 0);
	CHECK_GT(atomic_load(&threads_started), 0);
	printf("stress_reclaim: %" PRIu64 " grace periods, %" PRIu64 " sections, %" PRIu64
	       " threads started, %u slots lent\n",
	       atomic_load(&grace_periods), atomic_load(&sections), atomic_load(&threads_started),
	       slots_seen_count);
	long f = th_failures();
	printf("%s (%ld failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
