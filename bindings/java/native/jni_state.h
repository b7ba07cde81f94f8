/*
 * jni_state.h - what the JNI modules of the Java binding share: the per-cache
 * state behind a guard (the payload) and the call that enters its section
 * (lj_enter), the JVM's handles, and the result codes the Java side decodes
 * (org.larder.Native keeps the same numbers).
 *
 * Invariants:
 *   JNI-J1. A struct lj_cache is reached only inside a guard section of its
 *       guard (guard.h), or by the thread that opens or closes it; so it is
 *       freed, with its cache and listener reference, only after every call
 *       that could reach it has returned.
 *   JNI-J2. The listener reference lives until larder_close() has stopped the
 *       maintainer, the only thread that calls it.
 */
#ifndef LARDER_JNI_STATE_H
#define LARDER_JNI_STATE_H

#include <jni.h>
#include <larder.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "guard.h"

/* Results beyond larder's own codes (org.larder.Native mirrors them). */
#define LJ_RC_CLOSED (-100)      /* the cache is closed */
#define LJ_RC_IN_CALLBACK (-101) /* close() inside a read callback */
#define LJ_RC_IN_LISTENER (-102) /* close() from the cache's own removal listener */

/* get(): >= 0 is the value's length; these encode everything else. */
#define LJ_GET_MISS ((jlong)-1)
#define LJ_GET_ERR_BASE ((jlong)-1000)          /* -1000 + a negative rc */
#define LJ_GET_BUFSIZE_BASE (-((jlong)1 << 32)) /* minus the length needed */

struct lj_cache {
	larder *cache;
	struct lj_guard *guard; /* the guard and generation that own this state */
	uint64_t gen;
	jobject listener; /* global ref to an org.larder.ListenerDispatcher, or NULL */
	/* The pool the cache draws its capacity from, or NULL. It outlives the
	 * cache: larder_pool_close() refuses while the cache is open. */
	larder_pool *pool;
	/* The cursors open on the cache, freed at its close (JITER-I1 in jni_iter.c). */
	pthread_mutex_t iters_lock;
	struct lj_iter *iters;
	/* Listener calls that failed in native code (no JNIEnv, no memory for
	 * the key or value arrays, an exception that escaped the dispatcher).
	 * Written by the maintainer, read by stats (relaxed: a count). */
	_Atomic uint64_t listener_failures;
};

extern JavaVM *lj_vm LJ_HIDDEN;

/* Enters a section on (guard, gen): the cache's state, or NULL with *rc set
 * (LJ_RC_CLOSED, or LARDER_ENOMEM when the thread's slot cannot be made). */
static inline struct lj_cache *lj_enter(jlong guard, jlong gen, uint64_t *outer, int *rc)
{
	void *payload;
	int s = lj_guard_enter((struct lj_guard *)(uintptr_t)guard, (uint64_t)gen, &payload, outer);
	if (__builtin_expect(s == LJ_OK, 1))
		return payload;
	*rc = s == LJ_CLOSED ? LJ_RC_CLOSED : LARDER_ENOMEM;
	return NULL;
}

/* The removal listener the engine calls on the maintainer (jni_listener.c). */
LJ_HIDDEN void lj_on_removal(void *ctx, const void *key, size_t key_len, const void *value,
			     size_t value_len, enum larder_cause cause);
/* Caches the dispatcher's method; at load time. Returns JNI_OK or JNI_ERR. */
LJ_HIDDEN jint lj_listener_init(JNIEnv *env);
/* True when the calling thread is inside the removal listener of the cache
 * that (g, gen) names. */
LJ_HIDDEN int lj_listener_running_on(const struct lj_guard *g, uint64_t gen);

/* A String[] of count names from name(i); NULL with an exception pending
 * (jni_cache.c). */
LJ_HIDDEN jobjectArray lj_names(JNIEnv *env, int count, const char *(*name)(int));

/* Frees the cursors still open on c; by close, after the guard (jni_iter.c). */
LJ_HIDDEN void lj_iter_close_all(struct lj_cache *c);

/* The manual clock's larder_clock_fn (jni_clock.c); ctx is its cell. */
LJ_HIDDEN uint64_t lj_manual_clock(void *ctx);

#endif /* LARDER_JNI_STATE_H */
