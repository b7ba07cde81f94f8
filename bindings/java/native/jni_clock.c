/*
 * jni_clock.c - org.larder.ManualClock: a clock that Java sets, for tests of
 * expiry that must not depend on the machine's timing.
 *
 * A clock is one 64-bit cell of milliseconds in native memory; the engine
 * reads it through lj_manual_clock() from any thread, including the
 * maintainer. Java owns the cell: ManualClock frees it with a Cleaner once
 * neither it nor any cache using it can be reached (a cache's cleanup keeps
 * its clock reachable), so the engine never reads a freed cell.
 *
 *   JCLOCK-C1. The cell never goes backwards (the engine's clock contract):
 *   a set that would move it back is refused.
 *   JCLOCK-C2. The cell never passes INT64_MAX (Java reads it as a long): an
 *   advance that would is refused, checked and made in one atomic step.
 */
#include <stdlib.h>

#include "jni_state.h"
#include "org_larder_Native.h"

struct clock_cell {
	/* Written by Java threads (set/advance), read by any thread. Relaxed
	 * everywhere: a time value; nothing else is published through it. */
	_Atomic uint64_t ms;
};

uint64_t lj_manual_clock(void *ctx)
{
	struct clock_cell *cell = ctx;
	return atomic_load_explicit(&cell->ms, memory_order_relaxed);
}

JNIEXPORT jlong JNICALL Java_org_larder_Native_clockCreate(JNIEnv *env, jclass cls, jlong start)
{
	(void)env;
	(void)cls;
	struct clock_cell *cell = malloc(sizeof *cell);
	if (cell)
		atomic_store_explicit(&cell->ms, (uint64_t)start, memory_order_relaxed);
	return (jlong)(uintptr_t)cell;
}

/* Sets the clock to ms; false (and no change) when that is in its past (JCLOCK-C1). */
JNIEXPORT jboolean JNICALL Java_org_larder_Native_clockSet(JNIEnv *env, jclass cls, jlong cell,
							   jlong ms)
{
	(void)env;
	(void)cls;
	struct clock_cell *c = (struct clock_cell *)(uintptr_t)cell;
	uint64_t cur = atomic_load_explicit(&c->ms, memory_order_relaxed);
	do {
		if ((uint64_t)ms < cur)
			return JNI_FALSE;
	} while (!atomic_compare_exchange_weak_explicit(&c->ms, &cur, (uint64_t)ms,
							memory_order_relaxed,
							memory_order_relaxed));
	return JNI_TRUE;
}

/*
 * Moves the clock forward by ms (>= 0, checked by Java); returns the new
 * time, or -1 (and no change) when that would pass INT64_MAX, Java's range.
 * One compare-and-swap checks and moves: a check before a separate add let
 * two threads near the top both pass it and carry the cell past INT64_MAX.
 */
JNIEXPORT jlong JNICALL Java_org_larder_Native_clockAdvance(JNIEnv *env, jclass cls, jlong cell,
							    jlong ms)
{
	(void)env;
	(void)cls;
	struct clock_cell *c = (struct clock_cell *)(uintptr_t)cell;
	uint64_t cur = atomic_load_explicit(&c->ms, memory_order_relaxed);
	do {
		if ((uint64_t)ms > (uint64_t)INT64_MAX - cur)
			return -1;
	} while (!atomic_compare_exchange_weak_explicit(&c->ms, &cur, cur + (uint64_t)ms,
							memory_order_relaxed,
							memory_order_relaxed));
	return (jlong)(cur + (uint64_t)ms);
}

JNIEXPORT jlong JNICALL Java_org_larder_Native_clockGet(JNIEnv *env, jclass cls, jlong cell)
{
	(void)env;
	(void)cls;
	return (jlong)lj_manual_clock((void *)(uintptr_t)cell);
}

JNIEXPORT void JNICALL Java_org_larder_Native_clockFree(JNIEnv *env, jclass cls, jlong cell)
{
	(void)env;
	(void)cls;
	free((void *)(uintptr_t)cell);
}
