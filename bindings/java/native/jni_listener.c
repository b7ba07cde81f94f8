/*
 * jni_listener.c - the engine's removal listener, forwarded to Java.
 *
 * The engine calls lj_on_removal() on the cache's maintainer thread, which
 * is not a Java thread: on its first call the thread attaches itself to the
 * JVM as a daemon named "larder-maintainer" (so it never keeps the JVM from
 * exiting), and a pthread key destructor detaches it when the maintainer
 * ends (larder_close). Key and value are copied into fresh Java arrays, so
 * nothing a listener or serializer keeps can point at the engine's memory
 * after the call. Local references are freed per call: an attached native
 * thread never returns to Java, so nothing else would free them.
 *
 * Invariants:
 *   JLISTENER-L1. An exception from Java never stays pending on the maintainer: it is
 *       cleared and counted (the Java dispatcher catches the listener's own
 *       exceptions first; what reaches here escaped it).
 *   JLISTENER-L2. While the thread runs the listener of a cache, `running` names that
 *       cache, so a close() of it from the listener is refused instead of
 *       joining its own thread (lj_listener_running_on).
 */
#include <pthread.h>
#include <stdlib.h>

#include "jni_state.h"

static jmethodID dispatch_removal;
static pthread_key_t attach_key;

/* The cache whose listener this thread is running, or NULL (JLISTENER-L2). */
static __thread const struct lj_cache *running;

static void detach(void *unused)
{
	(void)unused;
	(*lj_vm)->DetachCurrentThread(lj_vm);
}

jint lj_listener_init(JNIEnv *env)
{
	jclass dispatcher = (*env)->FindClass(env, "org/larder/ListenerDispatcher");
	if (!dispatcher)
		return JNI_ERR;
	dispatch_removal = (*env)->GetMethodID(env, dispatcher, "onRemoval", "([B[BI)V");
	if (!dispatch_removal || pthread_key_create(&attach_key, detach) != 0)
		return JNI_ERR;
	return JNI_OK;
}

int lj_listener_running_on(const struct lj_guard *g, uint64_t gen)
{
	return running && running->guard == g && running->gen == gen;
}

/* The calling thread's JNIEnv, attaching it as a daemon first; NULL if the
 * JVM refuses (it is shutting down). */
static JNIEnv *attached_env(void)
{
	JNIEnv *env;
	if ((*lj_vm)->GetEnv(lj_vm, (void **)&env, JNI_VERSION_1_8) == JNI_OK)
		return env;
	JavaVMAttachArgs args = { JNI_VERSION_1_8, "larder-maintainer", NULL };
	if ((*lj_vm)->AttachCurrentThreadAsDaemon(lj_vm, (void **)&env, &args) != JNI_OK)
		return NULL;
	/* Any non-NULL value makes the destructor run at thread exit. */
	if (pthread_setspecific(attach_key, lj_vm) != 0) {
		(*lj_vm)->DetachCurrentThread(lj_vm);
		return NULL;
	}
	return env;
}

static jbyteArray copy_bytes(JNIEnv *env, const void *bytes, size_t len)
{
	jbyteArray a = (*env)->NewByteArray(env, (jsize)len);
	if (a && len)
		(*env)->SetByteArrayRegion(env, a, 0, (jsize)len, bytes);
	return a;
}

void lj_on_removal(void *ctx, const void *key, size_t key_len, const void *value,
		   size_t value_len, enum larder_cause cause)
{
	struct lj_cache *c = ctx;
	JNIEnv *env = attached_env();
	int failed = 1;
	if (env && (*env)->PushLocalFrame(env, 4) == JNI_OK) {
		jbyteArray k = copy_bytes(env, key, key_len);
		jbyteArray v = k ? copy_bytes(env, value, value_len) : NULL;
		if (v) {
			running = c;
			(*env)->CallVoidMethod(env, c->listener, dispatch_removal, k, v, (jint)cause);
			running = NULL;
		}
		failed = (*env)->ExceptionCheck(env) || !v;
		(*env)->ExceptionClear(env); /* JLISTENER-L1 */
		(*env)->PopLocalFrame(env, NULL);
	} else if (env) {
		(*env)->ExceptionClear(env);
	}
	if (failed) /* Relaxed: a count, read by stats. */
		atomic_fetch_add_explicit(&c->listener_failures, 1, memory_order_relaxed);
}
