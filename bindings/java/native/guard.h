/*
 * guard.h - a cache handle that any thread may close while other threads are
 * inside calls on it.
 *
 * larder_close() requires that no other thread uses the cache during or after
 * the call; a Java caller cannot promise that (a close() racing with gets on
 * other threads, or a Cleaner closing a cache the JIT considers unreachable
 * while a call on it is still running). This module gives the binding that
 * promise by construction, for the price of two plain stores per call.
 *
 * Handles. A guard is a small record that is never freed: once closed it is
 * recycled for a later open with a new generation number, taken from a 64-bit
 * counter that never wraps. Java holds the pair (guard address, generation);
 * a call whose generation is not the guard's current one is refused, so a
 * stale pair can never reach another cache's state, however late it comes.
 * The guard points at the binding's per-cache state (the payload), which the
 * closer frees only after the grace period below.
 *
 * Read side (every call): enter a section (one plain store to this thread's
 * slot and a compiler barrier), check the generation, use the payload, leave
 * (one release store). Sections nest (a callback calling into a cache): the
 * enclosing section's value stays in the slot.
 *
 * Close: mark the guard closed (the generation becomes 0), start a grace
 * period (membarrier, then a counter bump: liburcu's "memb" scheme, the same
 * as the engine's sync/reclaim.c, reimplemented here because the binding sees
 * only larder.h), wait until every thread that was inside a section when it
 * started has left it, and hand the payload back to the caller to free.
 * Without membarrier(2), readers add a full fence (the symmetric scheme).
 *
 * Invariants (asserted by test/guard_stress.c under TSan and ASan):
 *   JGUARD-G1. A call that returned LJ_OK from lj_guard_enter() for (g, gen) runs to
 *       its lj_guard_exit() before lj_guard_close(g, gen) returns the
 *       payload; a call that enters after close started gets LJ_CLOSED.
 *   JGUARD-G2. A pair (g, gen) closed once is refused forever, also after g is
 *       reused for another cache.
 *   JGUARD-G3. The closer waits only for sections that were running when it started
 *       (new sections are refused), so close() finishes once every call in
 *       flight on any guard has returned. A thread inside a section cannot
 *       close (it would wait for itself): LJ_IN_SECTION.
 */
#ifndef LARDER_JNI_GUARD_H
#define LARDER_JNI_GUARD_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#if defined(__SANITIZE_THREAD__)
#define LJ_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LJ_TSAN 1
#endif
#endif

#define LJ_HIDDEN __attribute__((visibility("hidden")))

enum lj_guard_status {
	LJ_OK = 0,
	LJ_CLOSED = 1,     /* the generation is not (or no longer) the guard's */
	LJ_NOMEM = 2,      /* the thread's slot could not be allocated */
	LJ_IN_SECTION = 3, /* close from inside a section: it would wait for itself */
};

struct lj_guard {
	/*
	 * The open cache's generation, 0 while closed or recycled. Written by
	 * open (R-GEN release) and close (the CAS in lj_guard_close); read by
	 * every call (A-GEN).
	 */
	_Atomic uint64_t gen;
	/* The open cache's payload: written by open before R-GEN publishes it,
	 * read by calls after A-GEN (plain: it never changes while gen does not). */
	void *payload;
	struct lj_guard *next_free; /* freelist link, under the pool lock */
} __attribute__((aligned(64)));

/* One per thread that ever called in; on its own cache line. */
struct lj_slot {
	/*
	 * 0 outside a section, else the grace-period counter read when the
	 * outermost section began. Written by the owner (S-ENTER, S-EXIT), read
	 * by closers (A-SLOT).
	 */
	_Atomic uint64_t ctr;
	struct lj_slot *next; /* registry link, under the registry lock */
} __attribute__((aligned(64)));

/* The grace-period counter (starts at 1, only grows); its own cache line so
 * that the readers' copy stays valid between closes. */
struct lj_gp_state {
	_Atomic uint64_t counter;
} __attribute__((aligned(64)));

extern __thread struct lj_slot *lj_self __attribute__((tls_model("initial-exec"))) LJ_HIDDEN;
extern struct lj_gp_state lj_gp LJ_HIDDEN;
/* True when membarrier is unavailable: readers fence. Set once, before the
 * first slot exists, never changed after. */
extern bool lj_fences LJ_HIDDEN;

/* Creates the calling thread's slot (slow path, once per thread); NULL when
 * out of memory. The slot is freed when the thread exits. */
LJ_HIDDEN struct lj_slot *lj_slot_create(void);

/*
 * Opens a guard for payload (never NULL). Returns the guard and sets *gen,
 * or returns NULL when out of memory. Allocates only when no closed guard is
 * free for reuse.
 */
LJ_HIDDEN struct lj_guard *lj_guard_open(void *payload, uint64_t *gen);

/* Returns a guard whose pair was never handed to anyone (a failed open): no
 * grace period is needed. Never blocks. */
LJ_HIDDEN void lj_guard_cancel(struct lj_guard *g);

/*
 * Closes (g, gen): refuses new calls at once, waits for the calls in flight
 * (JGUARD-G3) and returns LJ_OK with *payload set; the caller then owns the payload
 * and g may already serve another cache. LJ_CLOSED when (g, gen) is closed
 * already or being closed by another thread (that thread frees the payload);
 * LJ_IN_SECTION when the calling thread is inside a section (nothing done).
 * Blocks; never allocates.
 */
LJ_HIDDEN int lj_guard_close(struct lj_guard *g, uint64_t gen, void **payload);

/* True when the calling thread is inside a section. */
static inline bool lj_in_section(void)
{
	struct lj_slot *s = lj_self;
	/* Relaxed: the owner reads its own variable. */
	return s && atomic_load_explicit(&s->ctr, memory_order_relaxed) != 0;
}

/*
 * Enters a section on (g, gen). On LJ_OK, *payload is the cache's payload
 * and *outer must be passed to lj_guard_exit(); on LJ_CLOSED or LJ_NOMEM
 * nothing is held (do not call exit). Never blocks; allocates only on the
 * thread's first call.
 */
static inline int lj_guard_enter(struct lj_guard *g, uint64_t gen, void **payload,
				 uint64_t *outer)
{
	struct lj_slot *s = lj_self;
	if (__builtin_expect(s == NULL, 0) && (s = lj_slot_create()) == NULL)
		return LJ_NOMEM;
	/* Relaxed: the owner reads its own variable. */
	uint64_t prev = atomic_load_explicit(&s->ctr, memory_order_relaxed);
	/* Relaxed: a stale counter only makes a closer wait longer. */
	uint64_t ctr = prev ? prev : atomic_load_explicit(&lj_gp.counter, memory_order_relaxed);
	uint64_t cur;
#ifdef LJ_TSAN
	/* S-ENTER (TSan): seq_cst store and load, the Dekker pair with the
	 * closer's seq_cst CAS and scan, because TSan models neither
	 * membarrier nor stand-alone fences. */
	atomic_store_explicit(&s->ctr, ctr, memory_order_seq_cst);
	cur = atomic_load_explicit(&g->gen, memory_order_seq_cst);
#else
	/* S-ENTER: relaxed store, ordered before the generation load below by
	 * the closer's membarrier (JGUARD-M1 in lj_guard_close) or by the fence. */
	atomic_store_explicit(&s->ctr, ctr, memory_order_relaxed);
	if (__builtin_expect(lj_fences, 0))
		atomic_thread_fence(memory_order_seq_cst); /* store-load, with JGUARD-M1's fence */
	else
		atomic_signal_fence(memory_order_seq_cst);
	/* A-GEN: acquire, pairs with R-GEN in lj_guard_open(): the payload
	 * written before the generation is visible. */
	cur = atomic_load_explicit(&g->gen, memory_order_acquire);
#endif
	if (__builtin_expect(cur != gen || gen == 0, 0)) {
		/* S-EXIT (refused): nothing was read under the section. */
		atomic_store_explicit(&s->ctr, prev, memory_order_release);
		return LJ_CLOSED;
	}
	*payload = g->payload;
	*outer = prev;
	return LJ_OK;
}

/* Leaves the section entered with LJ_OK (back to the enclosing one, or out). */
static inline void lj_guard_exit(uint64_t outer)
{
	/* S-EXIT: release, so the section's accesses happen before a closer's
	 * A-SLOT load sees the slot leave (JGUARD-M2 covers weaker orders too). */
	atomic_store_explicit(&lj_self->ctr, outer, memory_order_release);
}

#endif /* LARDER_JNI_GUARD_H */
