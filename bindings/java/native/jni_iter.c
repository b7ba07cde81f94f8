/*
 * jni_iter.c - the native methods of org.larder.Native for cursors over a
 * cache's entries (larder_iter_*), behind org.larder.CacheIterator.
 *
 * The engine requires every cursor to be closed before its cache; a Java
 * caller may drop an iterator unclosed, or close the cache first. So each
 * cache's state keeps its open cursors on a list (struct lj_cache.iters),
 * and closing the cache frees those left (lj_iter_close_all), once no call
 * is in flight on it (JNI-J1). Every call on a cursor runs inside the cache's
 * guard section, so a cursor freed by the cache's close is never reached:
 * the call is refused first (LJ_RC_CLOSED).
 *
 * Invariants:
 *   JITER-I1. A cursor is on its cache's list from iterOpen until iterClose or
 *       the cache's close, and freed exactly once, by whichever comes
 *       first, under iters_lock.
 *   JITER-I2. Java serializes the calls on one cursor (CacheIterator's methods
 *       are synchronized), as larder_iter_next requires.
 */
#include <stdint.h>
#include <stdlib.h>

#include "jni_state.h"
#include "org_larder_Native.h"

struct lj_iter {
	larder_iter *it;
	struct lj_iter *prev, *next; /* the cache's list, under iters_lock */
};

static void unlink_iter(struct lj_cache *c, struct lj_iter *i)
{
	if (i->prev)
		i->prev->next = i->next;
	else
		c->iters = i->next;
	if (i->next)
		i->next->prev = i->prev;
}

void lj_iter_close_all(struct lj_cache *c)
{
	pthread_mutex_lock(&c->iters_lock);
	while (c->iters) {
		struct lj_iter *i = c->iters;
		unlink_iter(c, i);
		larder_iter_close(i->it);
		free(i);
	}
	pthread_mutex_unlock(&c->iters_lock);
}

/* A cursor's address (> 0), or a negative result code. */
JNIEXPORT jlong JNICALL Java_org_larder_Native_iterOpen(JNIEnv *env, jclass cls, jlong guard,
							jlong gen)
{
	(void)env;
	(void)cls;
	int rc = LARDER_OK;
	uint64_t outer;
	struct lj_cache *c = lj_enter(guard, gen, &outer, &rc);
	if (!c)
		return rc;
	struct lj_iter *i = calloc(1, sizeof *i);
	if (!i) {
		rc = LARDER_ENOMEM;
	} else if ((rc = larder_iter_open(c->cache, &i->it)) != LARDER_OK) {
		free(i);
	} else {
		pthread_mutex_lock(&c->iters_lock);
		i->next = c->iters;
		if (c->iters)
			c->iters->prev = i;
		c->iters = i;
		pthread_mutex_unlock(&c->iters_lock);
	}
	lj_guard_exit(outer);
	return rc == LARDER_OK ? (jlong)(uintptr_t)i : (jlong)rc;
}

struct next_call {
	JNIEnv *env;
	jobjectArray out;
	jboolean values;
};

static jbyteArray copy_out(JNIEnv *env, const void *bytes, size_t len)
{
	jbyteArray a = (*env)->NewByteArray(env, (jsize)len);
	if (a && len)
		(*env)->SetByteArrayRegion(env, a, 0, (jsize)len, bytes);
	return a;
}

/* Copies the entry into fresh arrays: out[0] = key, out[1] = value (when
 * asked for); on an allocation failure the OutOfMemoryError stays pending. */
static void next_callback(void *ctx, const void *key, size_t key_len, const void *value,
			  size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	(void)ttl_ms;
	(void)entry_bytes;
	struct next_call *n = ctx;
	JNIEnv *env = n->env;
	jbyteArray k = copy_out(env, key, key_len);
	if (!k)
		return;
	(*env)->SetObjectArrayElement(env, n->out, 0, k);
	(*env)->DeleteLocalRef(env, k);
	if (n->values) {
		jbyteArray v = copy_out(env, value, value_len);
		if (!v)
			return;
		(*env)->SetObjectArrayElement(env, n->out, 1, v);
		(*env)->DeleteLocalRef(env, v);
	}
}

/* The next entry into out: LARDER_OK, LARDER_MISS at the end, or an error. */
JNIEXPORT jint JNICALL Java_org_larder_Native_iterNext(JNIEnv *env, jclass cls, jlong guard,
						       jlong gen, jlong iter, jboolean values,
						       jobjectArray out)
{
	(void)cls;
	int rc = LARDER_OK;
	uint64_t outer;
	struct lj_cache *c = lj_enter(guard, gen, &outer, &rc);
	if (!c)
		return rc;
	struct lj_iter *i = (struct lj_iter *)(uintptr_t)iter;
	struct next_call n = { env, out, values };
	rc = larder_iter_next(i->it, next_callback, &n);
	lj_guard_exit(outer);
	return rc;
}

/* Frees the cursor; nothing to do when its cache is closed (it freed it: JITER-I1). */
JNIEXPORT void JNICALL Java_org_larder_Native_iterClose(JNIEnv *env, jclass cls, jlong guard,
							jlong gen, jlong iter)
{
	(void)env;
	(void)cls;
	int rc = LARDER_OK;
	uint64_t outer;
	struct lj_cache *c = lj_enter(guard, gen, &outer, &rc);
	if (!c)
		return;
	struct lj_iter *i = (struct lj_iter *)(uintptr_t)iter;
	pthread_mutex_lock(&c->iters_lock);
	unlink_iter(c, i);
	pthread_mutex_unlock(&c->iters_lock);
	larder_iter_close(i->it);
	free(i);
	lj_guard_exit(outer);
}
