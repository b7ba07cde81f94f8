/*
 * bench_jni.c - native baselines for the Java benchmark (org.larder.bench.
 * BenchNative), measured in the same JVM as the binding:
 *   - the crossing alone: an empty native method with the arguments of
 *     org.larder.Native.getShort, the copy-out get of a 16-byte key (so
 *     only the JNI transition is timed);
 *   - the C get: larder_get in a C loop over the same keys, on a cache of
 *     its own opened through larder.h (the engine without the binding),
 *     also with a full fence after each get (one get at a time, as the JNI
 *     return makes them), and one get per crossing (getOne: the crossing
 *     plus the engine, without the binding's Java side);
 *   - the guard: enter and leave a section of the binding's close guard;
 *   - the hash: seeded XXH3-64 of a key, the engine's key hash;
 *   - the other ways to land a value in a byte[]: the engine's get into a
 *     stack buffer, then SetByteArrayRegion (getOneRegion); the engine's get
 *     straight into the array's elements under GetPrimitiveArrayCritical
 *     (getOneCritical);
 *   - the engine handle behind one of the binding's caches, so that the C
 *     loop and the bare JNI get can also run on the very cache the binding's
 *     get reads (its entries placed by its own history of writes);
 *   - the process's CPU time (every thread's, native ones such as the
 *     engine's maintainer included), for the harness's per-CPU-second rates.
 * Loops time themselves in the calling thread's CPU time
 * (CLOCK_THREAD_CPUTIME_ID, as the Java side's loops do: on a shared machine
 * wall time also counts the time the thread waits for a core) and return
 * nanoseconds, so no crossing is counted in them. Not part of the binding; never installed.
 */
#define _GNU_SOURCE
#include <jni.h>
#include <larder.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "jni_state.h"
#include "org_larder_bench_BenchNative.h"

/* CPU time of the whole process, in ns, at the clock's resolution (the
 * JDK's getProcessCpuTime() ticks in 10 ms steps here, too coarse for a
 * 200 ms round). */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_processCpuNanos(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (jlong)ts.tv_sec * 1000000000 + (jlong)ts.tv_nsec;
}

/* The larder handle of the binding's cache whose guard address Java passes
 * (LarderCache's guard field): its payload, a struct lj_cache (jni_state.h).
 * No guard section: the benchmark keeps that cache open while it uses the
 * handle, and never closes it through the handle. */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_bindingEngine(JNIEnv *env, jclass cls,
									jlong guard)
{
	(void)env;
	(void)cls;
	const struct lj_guard *g = (const struct lj_guard *)(uintptr_t)guard;
	const struct lj_cache *c = g->payload;
	return (jlong)(uintptr_t)c->cache;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A key index in [0, n) from a xorshift stream, as the Java workers pick. */
static inline uint32_t pick(uint64_t *rng, uint32_t n)
{
	*rng ^= *rng << 13;
	*rng ^= *rng >> 7;
	*rng ^= *rng << 17;
	return (uint32_t)(((*rng >> 32) * n) >> 32);
}

JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_noop(JNIEnv *env, jclass cls,
							       jlong guard, jlong gen, jlong k0,
							       jlong k1, jint key_len, jlong buf,
							       jint buf_len)
{
	(void)env;
	(void)cls;
	(void)guard;
	(void)gen;
	(void)k0;
	(void)k1;
	(void)buf;
	return (jlong)key_len + buf_len;
}

JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_open(JNIEnv *env, jclass cls,
							       jlong capacity, jlong entries)
{
	(void)env;
	(void)cls;
	larder_config *cfg;
	larder *cache = NULL;
	if (larder_config_create(&cfg) != LARDER_OK)
		return 0;
	if (larder_config_set_capacity(cfg, (uint64_t)capacity) == LARDER_OK &&
	    larder_config_set_expected_entries(cfg, (uint64_t)entries) == LARDER_OK &&
	    larder_open(&cache, cfg) != LARDER_OK)
		cache = NULL;
	larder_config_destroy(cfg);
	return (jlong)(uintptr_t)cache;
}

JNIEXPORT void JNICALL Java_org_larder_bench_BenchNative_close(JNIEnv *env, jclass cls,
							       jlong cache)
{
	(void)env;
	(void)cls;
	larder_close((larder *)(uintptr_t)cache);
}

/* Puts count entries: key i at keys + i * key_len, every value the same. */
JNIEXPORT jint JNICALL Java_org_larder_bench_BenchNative_load(JNIEnv *env, jclass cls,
							      jlong cache, jobject keys,
							      jint key_len, jint count,
							      jint value_len)
{
	(void)cls;
	const unsigned char *k = (*env)->GetDirectBufferAddress(env, keys);
	unsigned char *value = calloc(1, (size_t)value_len + sizeof(jint));
	int rc = value ? LARDER_OK : LARDER_ENOMEM;
	for (jint i = 0; i < count && rc == LARDER_OK; i++) {
		memcpy(value, &i, sizeof i);
		rc = larder_put((larder *)(uintptr_t)cache, k + (size_t)i * (size_t)key_len,
				(size_t)key_len, value, (size_t)value_len, LARDER_TTL_DEFAULT);
	}
	free(value);
	return rc;
}

/* Nanoseconds for `iterations` larder_get calls on uniformly chosen keys. */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_getLoop(JNIEnv *env, jclass cls,
								  jlong cache, jobject keys,
								  jint key_len, jint count,
								  jlong iterations, jlong seed)
{
	(void)cls;
	const unsigned char *k = (*env)->GetDirectBufferAddress(env, keys);
	larder *c = (larder *)(uintptr_t)cache;
	unsigned char buf[1024];
	uint64_t rng = (uint64_t)seed | 1, misses = 0;
	size_t len;
	uint64_t t0 = now_ns();
	for (jlong i = 0; i < iterations; i++) {
		const unsigned char *key = k + (size_t)pick(&rng, (uint32_t)count) * (size_t)key_len;
		misses += larder_get(c, key, (size_t)key_len, buf, sizeof buf, &len) != LARDER_OK;
	}
	uint64_t t = now_ns() - t0;
	return misses ? -1 : (jlong)t;
}

/* Nanoseconds for `iterations` larder_get calls as getLoop, with a full
 * fence after each: the next get's loads cannot start before this one's
 * finished, as after the fence of a JNI call's return. */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_getLoopFenced(JNIEnv *env, jclass cls,
									jlong cache, jobject keys,
									jint key_len, jint count,
									jlong iterations,
									jlong seed)
{
	(void)cls;
	const unsigned char *k = (*env)->GetDirectBufferAddress(env, keys);
	larder *c = (larder *)(uintptr_t)cache;
	unsigned char buf[1024];
	uint64_t rng = (uint64_t)seed | 1, misses = 0;
	size_t len;
	uint64_t t0 = now_ns();
	for (jlong i = 0; i < iterations; i++) {
		const unsigned char *key = k + (size_t)pick(&rng, (uint32_t)count) * (size_t)key_len;
		misses += larder_get(c, key, (size_t)key_len, buf, sizeof buf, &len) != LARDER_OK;
		atomic_thread_fence(memory_order_seq_cst); /* no partner: it only serializes */
	}
	uint64_t t = now_ns() - t0;
	return misses ? -1 : (jlong)t;
}

JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_address(JNIEnv *env, jclass cls,
								  jobject buffer)
{
	(void)cls;
	return (jlong)(uintptr_t)(*env)->GetDirectBufferAddress(env, buffer);
}

/* A 16-byte key rebuilt from the two longs Java read it as (native order). */
static void key_of(unsigned char key[16], jlong k0, jlong k1)
{
	memcpy(key, &k0, 8);
	memcpy(key + 8, &k1, 8);
}

/* One larder_get per call, the key (16 bytes) in two longs as the binding's
 * getShort takes it, the value copied to buf: the value's length, or -1. */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_getOne(JNIEnv *env, jclass cls,
								 jlong cache, jlong k0, jlong k1,
								 jlong buf, jint buf_len)
{
	(void)env;
	(void)cls;
	unsigned char key[16];
	key_of(key, k0, k1);
	size_t len;
	int rc = larder_get((larder *)(uintptr_t)cache, key, sizeof key, (void *)(uintptr_t)buf,
			    (size_t)buf_len, &len);
	return rc == LARDER_OK ? (jlong)len : -1;
}

/* One larder_get into a stack buffer, then SetByteArrayRegion into dst (a
 * JNI function: a transition into the VM and back): the length, or -1. */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_getOneRegion(JNIEnv *env, jclass cls,
								       jlong cache, jlong k0,
								       jlong k1, jbyteArray dst)
{
	(void)cls;
	unsigned char key[16], buf[256];
	key_of(key, k0, k1);
	size_t len;
	jsize cap = (*env)->GetArrayLength(env, dst);
	int rc = larder_get((larder *)(uintptr_t)cache, key, sizeof key, buf,
			    cap < (jsize)sizeof buf ? (size_t)cap : sizeof buf, &len);
	if (rc != LARDER_OK)
		return -1;
	(*env)->SetByteArrayRegion(env, dst, 0, (jsize)len, (const jbyte *)buf);
	return (jlong)len;
}

/* One larder_get straight into dst's elements, between
 * GetPrimitiveArrayCritical and its release (no copy back: the elements are
 * the array's own, or JNI copies them back on release): the length, or -1. */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_getOneCritical(JNIEnv *env, jclass cls,
									 jlong cache, jlong k0,
									 jlong k1, jbyteArray dst)
{
	(void)cls;
	unsigned char key[16];
	key_of(key, k0, k1);
	jsize cap = (*env)->GetArrayLength(env, dst);
	void *elems = (*env)->GetPrimitiveArrayCritical(env, dst, NULL);
	if (!elems)
		return -1;
	size_t len;
	int rc = larder_get((larder *)(uintptr_t)cache, key, sizeof key, elems, (size_t)cap, &len);
	(*env)->ReleasePrimitiveArrayCritical(env, dst, elems, 0);
	return rc == LARDER_OK ? (jlong)len : -1;
}

/* Nanoseconds for `iterations` seeded XXH3-64 hashes of the keys. */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_hashLoop(JNIEnv *env, jclass cls,
								   jobject keys, jint key_len,
								   jint count, jlong iterations)
{
	(void)cls;
	const unsigned char *k = (*env)->GetDirectBufferAddress(env, keys);
	uint64_t rng = 7, sum = 0;
	uint64_t t0 = now_ns();
	for (jlong i = 0; i < iterations; i++) {
		const unsigned char *key = k + (size_t)pick(&rng, (uint32_t)count) * (size_t)key_len;
		sum += XXH3_64bits_withSeed(key, (size_t)key_len, sum);
	}
	uint64_t t = now_ns() - t0;
	return sum == 42 ? 0 : (jlong)t; /* sum keeps the loop */
}

/* Nanoseconds for `iterations` pick() calls alone (the loops' own cost). */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_pickLoop(JNIEnv *env, jclass cls,
								   jint count, jlong iterations)
{
	(void)env;
	(void)cls;
	uint64_t rng = 7, sum = 0;
	uint64_t t0 = now_ns();
	for (jlong i = 0; i < iterations; i++) {
		sum += pick(&rng, (uint32_t)count);
		__asm__ __volatile__("" : "+r"(sum));
	}
	return (jlong)(now_ns() - t0);
}

/* Nanoseconds for `iterations` sections of a guard of this library's own. */
JNIEXPORT jlong JNICALL Java_org_larder_bench_BenchNative_guardLoop(JNIEnv *env, jclass cls,
								    jlong iterations)
{
	(void)env;
	(void)cls;
	static int payload;
	uint64_t gen;
	struct lj_guard *g = lj_guard_open(&payload, &gen);
	if (!g)
		return -1;
	void *p;
	uint64_t outer, refused = 0;
	uint64_t t0 = now_ns();
	for (jlong i = 0; i < iterations; i++) {
		if (lj_guard_enter(g, gen, &p, &outer) == LJ_OK)
			lj_guard_exit(outer);
		else
			refused++;
	}
	uint64_t t = now_ns() - t0;
	if (lj_guard_close(g, gen, &p) != LJ_OK || refused)
		return -1;
	return (jlong)t;
}
