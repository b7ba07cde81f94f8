/*
 * guard_stress.c - the Java binding's close guard (native/guard.h) under
 * threads, without a JVM, so ThreadSanitizer and ASan can watch it.
 *
 * Readers enter sections on random (guard, generation) pairs taken from the
 * whole history of opens, stale ones included, and sometimes nest a second
 * section inside the first. Closers open new guards (each with a freshly
 * allocated payload) and close old ones, racing each other on the same pair;
 * a closed payload is poisoned and freed at once. Checked:
 *   JGUARD-G1: a section that entered never sees a poisoned or foreign payload (and
 *       ASan sees no use after free); a pair whose close had returned before
 *       the enter began is refused;
 *   JGUARD-G2: the payload a section sees belongs to its own generation, also after
 *       the guard was recycled for another one;
 *   exactly one closer wins each pair; close from inside a section is
 *       refused with LJ_IN_SECTION.
 *
 *   java_guard_stress [--readers N] [--duration-ms MS] [--seed S]
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "guard.h"

#define MAX_OPENS (1u << 16)
#define ALIVE 0x600dcafe600dcafeull
#define DEAD 0xdeaddeaddeaddeadull

struct payload {
	uint64_t magic; /* plain: written before open publishes it, and after close */
	uint64_t gen;
};

struct opened {
	struct lj_guard *g;
	uint64_t gen;
	struct payload *payload;
	_Atomic int closed; /* 1 once some closer's lj_guard_close returned LJ_OK */
	_Atomic int winners;
};

static struct opened history[MAX_OPENS];
static _Atomic unsigned published; /* release by the opener, acquire by users */
static _Atomic int stop;
static _Atomic uint64_t failures, entered, refused, nested, closes, lost_races;

static void fail(const char *what, uint64_t a, uint64_t b)
{
	fprintf(stderr, "FAIL: %s (%llu, %llu)\n", what, (unsigned long long)a,
		(unsigned long long)b);
	atomic_fetch_add_explicit(&failures, 1, memory_order_relaxed);
}

static uint64_t next_rand(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static struct opened *pick(uint64_t *rng)
{
	unsigned n = atomic_load_explicit(&published, memory_order_acquire);
	return n ? &history[next_rand(rng) % n] : NULL;
}

/* One section on o; nests one more when depth allows. */
static void use(struct opened *o, uint64_t *rng, int depth)
{
	int closed_before = atomic_load_explicit(&o->closed, memory_order_acquire);
	void *p;
	uint64_t outer;
	int rc = lj_guard_enter(o->g, o->gen, &p, &outer);
	if (rc == LJ_CLOSED) {
		atomic_fetch_add_explicit(&refused, 1, memory_order_relaxed);
		return;
	}
	if (rc != LJ_OK) {
		fail("enter failed", (uint64_t)rc, 0);
		return;
	}
	struct payload *pl = p;
	if (closed_before)
		fail("entered a pair closed before the enter began", o->gen, 0);
	if (pl->magic != ALIVE)
		fail("section saw a poisoned payload", o->gen, pl->magic);
	if (pl->gen != o->gen)
		fail("section saw another generation's payload", o->gen, pl->gen);
	atomic_fetch_add_explicit(&entered, 1, memory_order_relaxed);
	if (depth == 0 && next_rand(rng) % 4 == 0) {
		struct opened *inner = pick(rng);
		void *unused;
		if (lj_guard_close(inner->g, inner->gen, &unused) != LJ_IN_SECTION)
			fail("close inside a section was not refused", inner->gen, 0);
		atomic_fetch_add_explicit(&nested, 1, memory_order_relaxed);
		use(inner, rng, 1);
	}
	if (pl->magic != ALIVE || pl->gen != o->gen)
		fail("payload changed under the section", o->gen, pl->magic);
	lj_guard_exit(outer);
}

static void *reader(void *arg)
{
	uint64_t rng = (uint64_t)(uintptr_t)arg;
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		struct opened *o = pick(&rng);
		if (o)
			use(o, &rng, 0);
	}
	return NULL;
}

static void open_one(unsigned i)
{
	struct payload *pl = malloc(sizeof *pl);
	if (!pl) {
		fail("malloc", 0, 0);
		return;
	}
	struct opened *o = &history[i];
	o->g = lj_guard_open(pl, &o->gen);
	if (!o->g) {
		fail("lj_guard_open", 0, 0);
		free(pl);
		return;
	}
	pl->magic = ALIVE;
	pl->gen = o->gen;
	o->payload = pl;
	/* Release: the entry is complete before any user can pick it. */
	atomic_store_explicit(&published, i + 1, memory_order_release);
}

static void close_one(struct opened *o)
{
	void *p;
	int rc = lj_guard_close(o->g, o->gen, &p);
	if (rc == LJ_CLOSED) {
		atomic_fetch_add_explicit(&lost_races, 1, memory_order_relaxed);
		return;
	}
	if (rc != LJ_OK || p != o->payload) {
		fail("close", (uint64_t)rc, o->gen);
		return;
	}
	if (atomic_fetch_add_explicit(&o->winners, 1, memory_order_relaxed) != 0)
		fail("two closers won one pair", o->gen, 0);
	atomic_store_explicit(&o->closed, 1, memory_order_release);
	struct payload *pl = p;
	pl->magic = DEAD;
	free(pl);
	atomic_fetch_add_explicit(&closes, 1, memory_order_relaxed);
}

struct closer_arg {
	uint64_t seed;
	int opener;
	uint64_t deadline;
};

/* The opener opens a guard, lets readers use it a little (or a short while
 * passes), then closes an older one; the other closer races it on random
 * pairs. Neither sleeps: pacing only, no condition depends on it. */
static void *closer(void *arg)
{
	struct closer_arg *a = arg;
	uint64_t rng = a->seed;
	unsigned i = 0;
	while (now_ms() < a->deadline) {
		if (a->opener) {
			if (i == MAX_OPENS)
				break;
			uint64_t seen = atomic_load_explicit(&entered, memory_order_relaxed);
			uint64_t until = now_ms() + 2;
			open_one(i);
			while (atomic_load_explicit(&entered, memory_order_relaxed) < seen + 50 &&
			       now_ms() < until)
				sched_yield();
			if (i >= 4)
				close_one(&history[i - 4 + next_rand(&rng) % 4]);
			i++;
		} else {
			struct opened *o = pick(&rng);
			if (o)
				close_one(o);
			sched_yield();
		}
	}
	atomic_store_explicit(&stop, 1, memory_order_relaxed);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned readers = 4;
	uint64_t duration_ms = 2000, seed = (uint64_t)time(NULL) * 2654435761u | 1;
#if defined(LJ_TSAN) || defined(__SANITIZE_ADDRESS__)
	duration_ms = 1000;
#endif
	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--readers"))
			readers = (unsigned)strtoul(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--duration-ms"))
			duration_ms = strtoull(argv[i + 1], NULL, 10);
		else if (!strcmp(argv[i], "--seed"))
			seed = strtoull(argv[i + 1], NULL, 10) | 1;
	}
	printf("java_guard_stress: readers %u, duration %llu ms, seed %llu\n", readers,
	       (unsigned long long)duration_ms, (unsigned long long)seed);
	pthread_t t[64], c[2];
	if (readers > 64)
		readers = 64;
	uint64_t deadline = now_ms() + duration_ms;
	struct closer_arg args[2] = { { seed * 3, 1, deadline }, { seed * 5, 0, deadline } };
	for (unsigned i = 0; i < readers; i++)
		pthread_create(&t[i], NULL, reader, (void *)(uintptr_t)(seed * (i + 7)));
	for (int i = 0; i < 2; i++)
		pthread_create(&c[i], NULL, closer, &args[i]);
	for (int i = 0; i < 2; i++)
		pthread_join(c[i], NULL);
	for (unsigned i = 0; i < readers; i++)
		pthread_join(t[i], NULL);
	/* Close what is still open, as a cache's owner would. */
	unsigned n = atomic_load_explicit(&published, memory_order_acquire);
	for (unsigned i = 0; i < n; i++)
		if (!atomic_load_explicit(&history[i].closed, memory_order_acquire))
			close_one(&history[i]);
	uint64_t f = atomic_load(&failures);
	printf("opens %u, closes %llu, lost close races %llu, sections %llu (nested %llu), "
	       "refused %llu\n",
	       n, (unsigned long long)atomic_load(&closes),
	       (unsigned long long)atomic_load(&lost_races),
	       (unsigned long long)atomic_load(&entered), (unsigned long long)atomic_load(&nested),
	       (unsigned long long)atomic_load(&refused));
	if (n < 10 || atomic_load(&entered) == 0 || atomic_load(&refused) == 0)
		fail("the run exercised too little", n, atomic_load(&entered));
	printf("%s\n", f ? "FAIL" : "PASS");
	return f ? 1 : 0;
}
