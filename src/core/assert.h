/*
 * core/assert.h - the engine's internal assertion, LARDER__ASSERT(cond).
 *
 * Active when LARDER_ASSERTS is defined (the CMake option of the same name:
 * on in the default, debug, sanitizer and clang presets, off in release):
 * a false cond prints "larder: file:line: assertion failed: cond" on stderr
 * and aborts. Otherwise it compiles to nothing and cond is not evaluated, so
 * a check may cost what it likes in a test build and nothing in a release
 * one; cond must therefore have no side effect the code relies on.
 *
 * It is separate from <assert.h> (NDEBUG) so that the build, not the build
 * type, decides: the test presets are optimised RelWithDebInfo builds.
 *
 * Used where a numbered invariant is cheap to check at the point that could
 * break it: slab page states and bitmaps (mem/slab.c SLAB-*), queue links
 * (evict/list.h QUEUE-Q1), `_locked` functions whose lock is observable, the
 * maintainer's owner-only state (maint/state.h). tests/unit/test_assert.c
 * breaks one on purpose and checks the abort.
 */
#ifndef LARDER_CORE_ASSERT_H
#define LARDER_CORE_ASSERT_H

#include <pthread.h>

/* Prints the failed condition with its place and aborts (core/assert.c). */
_Noreturn void larder__assert_fail(const char *file, int line, const char *cond);

#ifdef LARDER_ASSERTS

#define LARDER__ASSERT(cond) ((cond) ? (void)0 : larder__assert_fail(__FILE__, __LINE__, #cond))

/*
 * Whether m is locked by someone. A pthread mutex does not say by whom, so
 * LARDER__ASSERT_HELD(m) is necessary, not sufficient: it never fails for a
 * caller that holds m, and catches a caller that forgot to lock it unless
 * another thread holds it at that moment. A probe that takes m gives it back.
 */
static inline int larder__mutex_busy(pthread_mutex_t *m)
{
	if (pthread_mutex_trylock(m) != 0)
		return 1;
	pthread_mutex_unlock(m);
	return 0;
}
#define LARDER__ASSERT_HELD(m) LARDER__ASSERT(larder__mutex_busy(m))

#else

/* sizeof keeps cond type-checked (and its variables used) without
 * evaluating it. */
#define LARDER__ASSERT(cond) ((void)sizeof(!(cond)))
#define LARDER__ASSERT_HELD(m) ((void)sizeof(m))

#endif

#endif /* LARDER_CORE_ASSERT_H */
