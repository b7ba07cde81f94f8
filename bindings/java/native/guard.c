/*
 * guard.c - the slow side of guard.h: slots, the guard pool, close.
 *
 * Grace period (close):
 *   1. CAS the guard's generation from gen to 0: from here on, every call
 *      that loads it is refused (and only one closer wins).
 *   2. JGUARD-M1: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED), a full barrier on
 *      every CPU running a thread of this process; then token = ++counter.
 *      A reader whose slot store was not yet visible to us has its
 *      generation load ordered after step 1, so it is refused; a reader we
 *      can see holds a counter below token until it leaves.
 *   3. Wait until every slot is 0 or >= token (entered after JGUARD-M1).
 *   4. JGUARD-M2: a second membarrier, so the readers' accesses are ordered before
 *      the caller frees the payload on weakly ordered CPUs (on x86 the
 *      release store of S-EXIT already does).
 * Without membarrier, JGUARD-M1 and JGUARD-M2 are seq_cst fences and readers fence after
 * their slot store (the classic Dekker handshake).
 *
 * Waiting: the closer polls, yielding at first and then sleeping 50 us at a
 * time; it never holds the registry lock while it sleeps, so new threads can
 * register. Calls are short (a write waits at most its cache's write wait),
 * so close is bounded by the longest call in flight.
 */
#define _GNU_SOURCE
#include "guard.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define SPINS_BEFORE_SLEEP 64
#define SLEEP_NS 50000L

__thread struct lj_slot *lj_self __attribute__((tls_model("initial-exec")));
struct lj_gp_state lj_gp = { 1 };
bool lj_fences;

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lj_slot *registry;
static pthread_once_t setup_once = PTHREAD_ONCE_INIT;
static pthread_key_t slot_key;
static int setup_failed;

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;
static struct lj_guard *pool;
static uint64_t next_gen = 1; /* under pool_lock; 64 bits never wrap */

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

static void slot_destroy(void *arg)
{
	struct lj_slot *s = arg;
	pthread_mutex_lock(&registry_lock);
	for (struct lj_slot **p = &registry; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	lj_self = NULL;
	free(s);
}

static void setup(void)
{
	setup_failed = pthread_key_create(&slot_key, slot_destroy) != 0;
#ifdef LJ_TSAN
	lj_fences = true;
#else
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);
	lj_fences = cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
		    membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0;
#endif
}

/* Decides the read-side mode once, before the first slot or guard exists. */
static bool set_up(void)
{
	return pthread_once(&setup_once, setup) == 0 && !setup_failed;
}

struct lj_slot *lj_slot_create(void)
{
	if (!set_up())
		return NULL;
	struct lj_slot *s = aligned_alloc(64, sizeof *s);
	if (!s)
		return NULL;
	/* Relaxed: not yet visible to any closer (published by the lock). */
	atomic_store_explicit(&s->ctr, 0, memory_order_relaxed);
	if (pthread_setspecific(slot_key, s) != 0) {
		free(s);
		return NULL;
	}
	pthread_mutex_lock(&registry_lock);
	s->next = registry;
	registry = s;
	pthread_mutex_unlock(&registry_lock);
	lj_self = s;
	return s;
}

/* JGUARD-M1, JGUARD-M2: a full barrier on every thread of the process (or,
 * with lj_fences, a seq_cst fence on this one). */
static void barrier_all_threads(void)
{
	if (lj_fences || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
		atomic_thread_fence(memory_order_seq_cst);
}

struct lj_guard *lj_guard_open(void *payload, uint64_t *gen)
{
	/* Its closer reads the mode: settle it first (pthread_once orders it). */
	if (!set_up())
		return NULL;
	pthread_mutex_lock(&pool_lock);
	struct lj_guard *g = pool;
	if (g)
		pool = g->next_free;
	uint64_t my_gen = next_gen++;
	pthread_mutex_unlock(&pool_lock);
	if (!g) {
		g = aligned_alloc(64, sizeof *g);
		if (!g)
			return NULL;
	}
	g->payload = payload;
	g->next_free = NULL;
	/* R-GEN: release, pairs with A-GEN in lj_guard_enter(): the payload is
	 * visible to whoever sees this generation. */
	atomic_store_explicit(&g->gen, my_gen, memory_order_release);
	*gen = my_gen;
	return g;
}

static void recycle(struct lj_guard *g)
{
	g->payload = NULL;
	pthread_mutex_lock(&pool_lock);
	g->next_free = pool;
	pool = g;
	pthread_mutex_unlock(&pool_lock);
}

void lj_guard_cancel(struct lj_guard *g)
{
	/* Relaxed: no thread holds this generation, so no call can load it
	 * expecting a match; the pool lock publishes the guard to the next open. */
	atomic_store_explicit(&g->gen, 0, memory_order_relaxed);
	recycle(g);
}

/* True once no slot holds a counter below token (step 3). */
static bool readers_gone(uint64_t token)
{
	bool gone = true;
	pthread_mutex_lock(&registry_lock);
	for (struct lj_slot *s = registry; s; s = s->next) {
		/* A-SLOT: acquire, pairs with S-EXIT (and S-ENTER under TSan). */
		uint64_t c = atomic_load_explicit(&s->ctr, memory_order_acquire);
		if (c != 0 && c < token) {
			gone = false;
			break;
		}
	}
	pthread_mutex_unlock(&registry_lock);
	return gone;
}

int lj_guard_close(struct lj_guard *g, uint64_t gen, void **payload)
{
	if (lj_in_section())
		return LJ_IN_SECTION;
	uint64_t expected = gen;
	/* Step 1, seq_cst: the Dekker partner of S-ENTER/A-GEN (with JGUARD-M1). */
	if (gen == 0 || !atomic_compare_exchange_strong_explicit(&g->gen, &expected, 0,
								 memory_order_seq_cst,
								 memory_order_relaxed))
		return LJ_CLOSED;
	barrier_all_threads(); /* JGUARD-M1 */
	/* Seq_cst: under TSan it is part of the Dekker pair with S-ENTER;
	 * elsewhere JGUARD-M1 already orders it, and the cost is nothing next to JGUARD-M1. */
	uint64_t token = atomic_fetch_add_explicit(&lj_gp.counter, 1, memory_order_seq_cst) + 1;
	for (unsigned spins = 0; !readers_gone(token); spins++) {
		if (spins < SPINS_BEFORE_SLEEP) {
			sched_yield();
		} else {
			struct timespec ts = { 0, SLEEP_NS };
			nanosleep(&ts, NULL);
		}
	}
	barrier_all_threads(); /* JGUARD-M2 */
	*payload = g->payload;
	recycle(g);
	return LJ_OK;
}
