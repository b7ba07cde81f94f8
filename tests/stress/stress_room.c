/*
 * tests/stress/stress_room.c - the wait for a pass: woken once per arming,
 * never lost (run it under ThreadSanitizer and AddressSanitizer).
 *
 * Usage: larder_stress_room [--waiters N] [--wakers N] [--rounds N]
 *                           [--duration-ms N] [--seed N]
 * Defaults: 3 waiters, 3 wakers, 8,000 rounds or 20 s, whichever ends
 * first, and MIN_ROUNDS however long they take. A round is a chain of
 * wake-ups from thread to thread, so its time is the scheduler's latency:
 * 8,000 rounds take about 2 s on an idle machine and went past ctest's
 * 300 s at load 40; the duration bounds the run, never the verdict.
 *
 * larder__room_wait and larder__maint_wake_writers (maint/maintainer.c,
 * WAKE-W3) are driven directly on a zeroed struct larder, of which they use
 * room_seq and room_sleeping only. The wakers play K maintainers. Each round
 * some of them make passes that free nothing (a bump each, which wakes a
 * sleeper as any pass does); then one frees room (stores the round's number
 * in `room`) and every waker makes one pass more, all at once. The waiters
 * play writers short of room: each loads room_seq (A-ROOM), checks `room`,
 * and sleeps with no timeout short of a hang guard until the round's room
 * is there, then counts itself; the next round starts only when every
 * waiter has seen this one. So after the round's last passes nothing else
 * can wake a sleeper: a lost wake-up leaves a waiter asleep until the hang
 * guard, which fails the run (a hang guard, not a timing assertion).
 * Between rounds, with every waiter awake and waiting for the next round
 * to start, the main thread makes a few passes more.
 *
 * Invariants asserted:
 *   SROOM-W1. every waiter sees every round's room: no wake-up is lost (the
 *       hang guard: 60 s for one round);
 *   SROOM-W2. a wake is made once per arming, not by every pass while someone
 *       waits (before 2026-12-06 a count of waiters made every pass wake
 *       until the woken ran): of the passes between rounds, while nobody
 *       sleeps, at most one makes a futex wake; and over the run the futex
 *       wakes are at most the waits.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdlib.h>

#include "core/cache.h"
#include "harness.h"
#include "maint/maintainer.h"
#include "maint/state.h"

#define MAX_THREADS 32u
#define HANG_GUARD_MS (60000u * TH_SLOW)
#define GUARD_NS ((uint64_t)HANG_GUARD_MS * 1000000u)
#define IDLE_PASSES 3u
#define MIN_ROUNDS 500u

static struct {
	uint64_t waiters, wakers, rounds, duration_ms, seed;
} opt;

static struct larder *cache;
static _Atomic uint64_t room;      /* the latest round whose room was freed */
static _Atomic uint64_t round_go;  /* the round the wakers play */
static _Atomic uint64_t last_round; /* the main thread's last; lowered at the duration's end */
static _Atomic uint64_t passes_in; /* wakers that made the round's last pass */
static _Atomic uint64_t seen;      /* waiter-rounds seen */
static _Atomic uint64_t waits, wakes;
static atomic_int failed;

/* Spins (yielding) until *v >= want or the hang guard ends; 0 on the guard. */
static int await_at_least(_Atomic uint64_t *v, uint64_t want, uint64_t guard_ms)
{
	while (atomic_load(v) < want) {
		if (atomic_load(&failed) || th_now_ms() >= guard_ms)
			return 0;
		sched_yield();
	}
	return 1;
}

/* Awaits round r's start; 0 on the hang guard, or when the run ended before r. */
static int await_round(uint64_t r, uint64_t guard_ms)
{
	while (atomic_load(&round_go) < r) {
		if (atomic_load(&last_round) < r || atomic_load(&failed) ||
		    th_now_ms() >= guard_ms)
			return 0;
		sched_yield();
	}
	return 1;
}

static void pass(void)
{
	if (larder__maint_wake_writers(cache))
		atomic_fetch_add_explicit(&wakes, 1, memory_order_relaxed);
}

static void *waiter_main(void *arg)
{
	(void)arg;
	for (uint64_t r = 1; r <= atomic_load(&last_round) && !atomic_load(&failed); r++) {
		uint64_t guard = th_now_ms() + HANG_GUARD_MS;
		if (!await_round(r, guard))
			return NULL;
		for (;;) {
			/* A-ROOM: acquire, as a writer loads it before re-checking. */
			uint32_t seq = atomic_load_explicit(&cache->room_seq, memory_order_acquire);
			if (atomic_load(&room) >= r)
				break;
			if (!CHECK_LT(th_now_ms(), guard)) { /* SROOM-W1: a lost wake-up */
				atomic_store(&failed, 1);
				return NULL;
			}
			atomic_fetch_add_explicit(&waits, 1, memory_order_relaxed);
			larder__room_wait(cache, seq, GUARD_NS);
		}
		atomic_fetch_add(&seen, 1);
	}
	return NULL;
}

static void *waker_main(void *arg)
{
	uint64_t id = *(uint64_t *)arg;
	struct th_rng rng = { th_mix64(opt.seed + id) };
	for (uint64_t r = 1; r <= atomic_load(&last_round); r++) {
		if (!await_round(r, th_now_ms() + HANG_GUARD_MS))
			return NULL;
		/* Passes that free nothing, while the waiters go to sleep. */
		for (uint64_t i = th_rng_below(&rng, 3); i > 0; i--) {
			pass();
			if (th_rng_below(&rng, 2))
				sched_yield();
		}
		if (id == 0)
			atomic_store(&room, r);
		else if (!await_at_least(&room, r, th_now_ms() + HANG_GUARD_MS))
			return NULL;
		pass(); /* the round's last passes, all at once */
		atomic_fetch_add(&passes_in, 1);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	opt.waiters = th_arg_u64(argc, argv, "--waiters", 3);
	opt.wakers = th_arg_u64(argc, argv, "--wakers", 3);
	opt.rounds = th_arg_u64(argc, argv, "--rounds", 8000);
	opt.duration_ms = th_arg_u64(argc, argv, "--duration-ms", 20000);
	opt.seed = th_arg_seed(argc, argv);
	uint64_t n = opt.waiters + opt.wakers;
	if (opt.waiters < 1 || opt.wakers < 1 || n > MAX_THREADS) {
		fprintf(stderr, "stress_room: bad arguments\n");
		return 2;
	}
	printf("stress_room: %" PRIu64 " waiters, %" PRIu64 " wakers, %" PRIu64 " rounds\n",
	       opt.waiters, opt.wakers, opt.rounds);
	cache = calloc(1, sizeof(*cache));
	if (!cache)
		return 1;
	atomic_store(&last_round, opt.rounds);
	pthread_t ts[MAX_THREADS];
	uint64_t ids[MAX_THREADS];
	for (uint64_t i = 0; i < n; i++) {
		ids[i] = i < opt.wakers ? i : i - opt.wakers;
		if (pthread_create(&ts[i], NULL, i < opt.wakers ? waker_main : waiter_main,
				   &ids[i]) != 0) {
			fprintf(stderr, "stress_room: pthread_create failed\n");
			return 1;
		}
	}
	/* The rounds, one after another: a round starts when every waiter has
	 * seen the last one and every waker made its last pass. Past the
	 * duration (and MIN_ROUNDS) the round just played is the last: the
	 * others, awaiting the next, see last_round below it and stop. */
	uint64_t end = th_now_ms() + opt.duration_ms;
	for (uint64_t r = 1; r <= opt.rounds; r++) {
		uint64_t guard = th_now_ms() + HANG_GUARD_MS;
		atomic_store(&round_go, r);
		if (!CHECK(await_at_least(&passes_in, r * opt.wakers, guard)) ||
		    !CHECK(await_at_least(&seen, r * opt.waiters, guard))) { /* SROOM-W1 */
			atomic_store(&failed, 1);
			/* Wake whoever still sleeps, so that the threads can be joined. */
			atomic_store(&room, opt.rounds);
			atomic_store(&round_go, opt.rounds);
			atomic_store_explicit(&cache->room_sleeping, 1, memory_order_seq_cst);
			larder__maint_wake_writers(cache);
			break;
		}
		/* Passes while nobody sleeps (every waiter awaits the next
		 * round), as when K maintainers pass before the woken writers
		 * run: only the first may find an arming left by a waiter that
		 * never slept (its futex compare saw the seq move). */
		unsigned woke = 0;
		for (unsigned i = 0; i < IDLE_PASSES; i++)
			woke += (unsigned)larder__maint_wake_writers(cache);
		if (!CHECK_LE(woke, 1)) { /* SROOM-W2 */
			atomic_store(&failed, 1);
			break;
		}
		if (r >= MIN_ROUNDS && r < opt.rounds && th_now_ms() >= end) {
			atomic_store(&last_round, r);
			break;
		}
	}
	for (uint64_t i = 0; i < n; i++)
		pthread_join(ts[i], NULL);
	CHECK_LE(atomic_load(&wakes), atomic_load(&waits)); /* SROOM-W2 */
	printf("stress_room: %" PRIu64 " waits, %" PRIu64 " futex wakes, %" PRIu64
	       " rounds seen by every waiter\n",
	       atomic_load(&waits), atomic_load(&wakes), atomic_load(&seen) / opt.waiters);
	free(cache);
	long f = th_failures();
	printf("%s (%ld failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
