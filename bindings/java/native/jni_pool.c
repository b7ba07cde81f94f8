/*
 * jni_pool.c - the native methods of org.larder.Native for pools
 * (org.larder.LarderPool): create, close, the pool-wide figures and the
 * names of the figures. A pooled cache's own figures are read in
 * jni_cache.c, inside its guard section.
 *
 * A pool has no guard: Java makes every call on a pool's address while
 * holding that pool's lock, and never again once poolClose() has returned
 * LARDER_OK, so a pool is never used after it is freed (JPOOL-P1). Caches opened
 * in it need no lock: larder_pool_close() refuses while any is open.
 */
#include <stdint.h>

#include "jni_state.h"
#include "org_larder_Native.h"

/*
 * Creates a pool: out[0] = the result code. Returns the pool's address, or
 * 0 on failure (nothing is left allocated).
 */
JNIEXPORT jlong JNICALL Java_org_larder_Native_poolCreate(JNIEnv *env, jclass cls, jlong budget,
							  jlong interval_ms, jintArray out)
{
	(void)cls;
	larder_pool_config *cfg = NULL;
	larder_pool *pool = NULL;
	jint rc = larder_pool_config_create(&cfg);
	if (rc == LARDER_OK)
		rc = larder_pool_config_set_budget(cfg, (uint64_t)budget);
	if (rc == LARDER_OK)
		rc = larder_pool_config_set_interval_ms(cfg, (uint64_t)interval_ms);
	if (rc == LARDER_OK)
		rc = larder_pool_create(&pool, cfg);
	larder_pool_config_destroy(cfg);
	(*env)->SetIntArrayRegion(env, out, 0, 1, &rc);
	return (jlong)(uintptr_t)pool;
}

/* LARDER_OK (the pool is freed: JPOOL-P1), or LARDER_ESTATE while a cache is open in it. */
JNIEXPORT jint JNICALL Java_org_larder_Native_poolClose(JNIEnv *env, jclass cls, jlong pool)
{
	(void)env;
	(void)cls;
	return larder_pool_close((larder_pool *)(uintptr_t)pool);
}

/* Fills out with the pool-wide figures (larder_pool_stats). */
JNIEXPORT jint JNICALL Java_org_larder_Native_poolStats(JNIEnv *env, jclass cls, jlong pool,
							jlongArray out)
{
	(void)cls;
	uint64_t v[LARDER_POOL_STAT_COUNT];
	int rc = larder_pool_stats((larder_pool *)(uintptr_t)pool, v, LARDER_POOL_STAT_COUNT);
	jsize n = (*env)->GetArrayLength(env, out);
	if (rc == LARDER_OK)
		(*env)->SetLongArrayRegion(env, out, 0,
					   n < LARDER_POOL_STAT_COUNT ? n : LARDER_POOL_STAT_COUNT,
					   (const jlong *)v);
	return rc;
}

static const char *pool_stat_name(int i)
{
	return larder_pool_stat_name((enum larder_pool_stat)i);
}

static const char *pool_cache_stat_name(int i)
{
	return larder_pool_cache_stat_name((enum larder_pool_cache_stat)i);
}

JNIEXPORT jobjectArray JNICALL Java_org_larder_Native_poolStatNames(JNIEnv *env, jclass cls)
{
	(void)cls;
	return lj_names(env, LARDER_POOL_STAT_COUNT, pool_stat_name);
}

JNIEXPORT jobjectArray JNICALL Java_org_larder_Native_poolCacheStatNames(JNIEnv *env,
									 jclass cls)
{
	(void)cls;
	return lj_names(env, LARDER_POOL_CACHE_STAT_COUNT, pool_cache_stat_name);
}
