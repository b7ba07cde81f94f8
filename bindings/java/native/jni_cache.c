/*
 * jni_cache.c - the native methods of org.larder.Native: open and close a
 * cache, and every operation, as thin calls into larder.h.
 *
 * The crossing carries primitives only: Java writes keys and values into a
 * per-thread direct buffer (org.larder.Scratch) and passes its addresses and
 * lengths (a raw key of up to 16 bytes comes in two longs instead: getShort),
 * so no call uses a JNI array or string function on the read path, and the
 * engine copies values straight into that buffer. Every call on a
 * cache runs inside a guard section (guard.h) on the (guard, generation)
 * pair Java holds, so a concurrent close() can only refuse it, never free
 * memory under it (JNI-J1 in jni_state.h).
 *
 * The Java side owns validation and exceptions: these functions return the
 * engine's codes (or the encodings in jni_state.h), and Java decodes them.
 * Addresses and lengths come from the binding's own Java code, never from a
 * user: a user cannot name an address through the public API.
 */
#include <stdlib.h>
#include <string.h>

#include "jni_state.h"
#include "org_larder_Native.h"

JavaVM *lj_vm;

/* ValueView.dispatch; valid while org.larder's classes are loaded, which they
 * are as long as this library is (the same class loader loaded both). */
static jmethodID view_dispatch;

/* The order of org.larder.Native's settings array. */
enum setting {
	S_CAPACITY,
	S_EXPECTED_ENTRIES,
	S_MAX_KEY_BYTES,
	S_MAX_VALUE_BYTES,
	S_DEFAULT_TTL_MS,
	S_POLICY,
	S_EXPIRY,
	S_HASH_SEED,
	S_HAS_HASH_SEED,
	S_WRITE_WAIT_MS,
	S_POOL,              /* a larder_pool address, or 0 */
	S_MIN_SHARE,         /* the pool shares and miss cost: a double's bits */
	S_MAX_SHARE,
	S_MISS_COST,
	S_COMPRESS_MIN,      /* larder_config_set_compression's two arguments */
	S_COMPRESS_SAVING,
	S_SHARDS,            /* larder_config_set_shards */
	S_COUNT
};

/* The order of Native's write operations. */
enum write_op {
	OP_PUT,
	OP_PUT_IF_ABSENT,
	OP_REPLACE,
	OP_REPLACE_IF_EQUALS,
	OP_REMOVE,
	OP_REMOVE_IF_EQUALS,
	OP_TOUCH,
	OP_ACCESS
};

#define BATCH_CHUNK 64

JNIEXPORT jint JNICALL JNI_OnLoad(JavaVM *vm, void *reserved)
{
	(void)reserved;
	JNIEnv *env;
	lj_vm = vm;
	if ((*vm)->GetEnv(vm, (void **)&env, JNI_VERSION_1_8) != JNI_OK)
		return JNI_ERR;
	jclass local = (*env)->FindClass(env, "org/larder/ValueView");
	if (!local)
		return JNI_ERR;
	view_dispatch = (*env)->GetMethodID(env, local, "dispatch", "(JI)V");
	if (!view_dispatch || lj_listener_init(env) != JNI_OK)
		return JNI_ERR;
	return JNI_VERSION_1_8;
}

static inline void *ptr(jlong address)
{
	return (void *)(uintptr_t)address;
}

JNIEXPORT jlong JNICALL Java_org_larder_Native_bufferAddress(JNIEnv *env, jclass cls,
							     jobject buffer)
{
	(void)cls;
	return (jlong)(uintptr_t)(*env)->GetDirectBufferAddress(env, buffer);
}

static double bits_to_double(jlong bits)
{
	double d;
	memcpy(&d, &bits, sizeof d);
	return d;
}

/* Applies the settings to cfg; returns the index of the one refused, or -1.
 * Java passes every setting (its defaults are the engine's). A pooled cache
 * gets no capacity: the pool sets it (larder_config_set_pool). */
static int configure(larder_config *cfg, const jlong *s, struct lj_cache *c, jlong clock_cell)
{
	jlong ttl = s[S_DEFAULT_TTL_MS];
	if (c->pool) {
		if (larder_config_set_pool(cfg, c->pool))
			return S_POOL;
		if (larder_config_set_pool_shares(cfg, bits_to_double(s[S_MIN_SHARE]),
						  bits_to_double(s[S_MAX_SHARE])))
			return S_MIN_SHARE;
		if (larder_config_set_miss_cost(cfg, bits_to_double(s[S_MISS_COST])))
			return S_MISS_COST;
	} else if (larder_config_set_capacity(cfg, (uint64_t)s[S_CAPACITY])) {
		return S_CAPACITY;
	}
	if (larder_config_set_compression(cfg, (size_t)s[S_COMPRESS_MIN],
					  (unsigned)s[S_COMPRESS_SAVING]))
		return S_COMPRESS_MIN;
	if (larder_config_set_expected_entries(cfg, (uint64_t)s[S_EXPECTED_ENTRIES]))
		return S_EXPECTED_ENTRIES;
	if (larder_config_set_shards(cfg, (unsigned)s[S_SHARDS]))
		return S_SHARDS;
	if (larder_config_set_max_key_bytes(cfg, (size_t)s[S_MAX_KEY_BYTES]))
		return S_MAX_KEY_BYTES;
	if (larder_config_set_max_value_bytes(cfg, (size_t)s[S_MAX_VALUE_BYTES]))
		return S_MAX_VALUE_BYTES;
	if (larder_config_set_default_ttl_ms(cfg, ttl == 0 ? LARDER_TTL_NEVER : (uint64_t)ttl))
		return S_DEFAULT_TTL_MS;
	if (larder_config_set_policy(cfg, (enum larder_policy)s[S_POLICY]))
		return S_POLICY;
	if (larder_config_set_expiry(cfg, (enum larder_expiry)s[S_EXPIRY]))
		return S_EXPIRY;
	if (s[S_HAS_HASH_SEED] && larder_config_set_hash_seed(cfg, (uint64_t)s[S_HASH_SEED]))
		return S_HASH_SEED;
	if (larder_config_set_write_wait_ms(cfg, (uint64_t)s[S_WRITE_WAIT_MS]))
		return S_WRITE_WAIT_MS;
	if (clock_cell && larder_config_set_clock(cfg, lj_manual_clock, ptr(clock_cell)))
		return S_COUNT;
	if (c->listener && larder_config_set_removal_listener(cfg, lj_on_removal, c))
		return S_COUNT;
	return -1;
}

/*
 * Opens a cache. out[0] = generation, out[1] = result code, out[2] = the
 * index of a setting the engine refused (-1 if none). Returns the guard's
 * address, or 0 on failure (nothing is left allocated).
 */
JNIEXPORT jlong JNICALL Java_org_larder_Native_open(JNIEnv *env, jclass cls,
						    jlongArray settings, jobject listener,
						    jlong clock_cell, jlongArray out)
{
	(void)cls;
	jlong s[S_COUNT], result[3] = { 0, LARDER_OK, -1 };
	struct lj_cache *c = NULL;
	larder_config *cfg = NULL;
	struct lj_guard *g = NULL;
	uint64_t gen = 0;
	int rc, refused;

	if ((*env)->GetArrayLength(env, settings) != S_COUNT) {
		result[1] = LARDER_EINVAL;
		goto done;
	}
	(*env)->GetLongArrayRegion(env, settings, 0, S_COUNT, s);
	if (!(c = calloc(1, sizeof *c))) {
		result[1] = LARDER_ENOMEM;
		goto done;
	}
	c->pool = ptr(s[S_POOL]);
	if (pthread_mutex_init(&c->iters_lock, NULL) != 0) {
		free(c);
		c = NULL;
		result[1] = LARDER_ENOMEM;
		goto done;
	}
	if (listener && !(c->listener = (*env)->NewGlobalRef(env, listener))) {
		result[1] = LARDER_ENOMEM;
		goto fail_state;
	}
	if ((rc = larder_config_create(&cfg)) != LARDER_OK) {
		result[1] = rc;
		goto fail_state;
	}
	if ((refused = configure(cfg, s, c, clock_cell)) >= 0) {
		result[1] = LARDER_EINVAL;
		result[2] = refused;
		goto fail_config;
	}
	/* The guard first, so that c is complete before the maintainer starts
	 * (pthread_create orders these stores before anything it runs). No
	 * other thread can hold (g, gen) before Java has it: after we return. */
	if (!(g = lj_guard_open(c, &gen))) {
		result[1] = LARDER_ENOMEM;
		goto fail_config;
	}
	c->guard = g;
	c->gen = gen;
	if ((rc = larder_open(&c->cache, cfg)) != LARDER_OK) {
		result[1] = rc;
		lj_guard_cancel(g);
		g = NULL;
		goto fail_config;
	}
	larder_config_destroy(cfg);
	result[0] = (jlong)gen;
	goto done;

fail_config:
	larder_config_destroy(cfg);
fail_state:
	if (c->listener)
		(*env)->DeleteGlobalRef(env, c->listener);
	pthread_mutex_destroy(&c->iters_lock);
	free(c);
done:
	(*env)->SetLongArrayRegion(env, out, 0, 3, result);
	return (jlong)(uintptr_t)g;
}

/*
 * Why the calling thread may not close (g, gen), or LARDER_OK: inside the
 * cache's own removal listener larder_close would join the thread it runs
 * on (LJ_RC_IN_LISTENER), inside a section of any cache the grace period
 * would wait for it (LJ_RC_IN_CALLBACK). Reads only the thread's own state
 * and compares the pair: safe on a pair closed long ago.
 */
static int close_refusal(const struct lj_guard *g, uint64_t gen)
{
	if (lj_listener_running_on(g, gen))
		return LJ_RC_IN_LISTENER;
	return lj_in_section() ? LJ_RC_IN_CALLBACK : LARDER_OK;
}

/* close_refusal for Java, which asks before it takes the cache's close lock:
 * a refused thread waiting there for a close in progress on another thread,
 * which waits for this one, would never be refused. */
JNIEXPORT jint JNICALL Java_org_larder_Native_closeRefusal(JNIEnv *env, jclass cls, jlong guard,
							   jlong gen)
{
	(void)env;
	(void)cls;
	return close_refusal(ptr(guard), (uint64_t)gen);
}

/*
 * Closes (guard, gen) once every call in flight has returned. Returns
 * LARDER_OK (also when it was closed already), LJ_RC_IN_CALLBACK or
 * LJ_RC_IN_LISTENER (refused, nothing done: close_refusal).
 */
JNIEXPORT jint JNICALL Java_org_larder_Native_close(JNIEnv *env, jclass cls, jlong guard,
						    jlong gen)
{
	(void)cls;
	struct lj_guard *g = ptr(guard);
	int refused = close_refusal(g, (uint64_t)gen);
	if (refused != LARDER_OK)
		return refused;
	void *payload;
	switch (lj_guard_close(g, (uint64_t)gen, &payload)) {
	case LJ_IN_SECTION:
		return LJ_RC_IN_CALLBACK;
	case LJ_CLOSED:
		return LARDER_OK;
	default:
		break;
	}
	struct lj_cache *c = payload;
	lj_iter_close_all(c); /* the engine's cursors go before their cache */
	larder_close(c->cache); /* stops the maintainer: no listener call after (JNI-J2) */
	if (c->listener)
		(*env)->DeleteGlobalRef(env, c->listener);
	pthread_mutex_destroy(&c->iters_lock);
	free(c);
	return LARDER_OK;
}

/* larder_get or larder_peek: same arguments, same results. */
typedef int read_fn(larder *cache, const void *key, size_t key_len, void *buf, size_t buf_len,
		    size_t *value_len);

/* The body of the gets and the peek: read inside a section, its result
 * encoded. Every caller passes a constant read, which inlining turns into a
 * direct call: the get path keeps its two calls. */
static inline jlong get_common(read_fn *read, jlong guard, jlong gen, const void *key,
			       jint key_len, jlong buf, jint buf_len)
{
	if (key_len < 0 || buf_len < 0) /* Java's bug; never a size_t wrap */
		return LJ_GET_ERR_BASE + LARDER_EINVAL;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return LJ_GET_ERR_BASE + s.rc;
	size_t len;
	int rc = read(s.c->cache, key, (size_t)key_len, ptr(buf), (size_t)buf_len, &len);
	lj_exit(&s);
	if (__builtin_expect(rc == LARDER_OK, 1))
		return (jlong)len;
	if (rc == LARDER_MISS)
		return LJ_GET_MISS;
	if (rc == LARDER_EBUFSIZE)
		return LJ_GET_BUFSIZE_BASE - (jlong)len;
	return LJ_GET_ERR_BASE + rc;
}

JNIEXPORT jlong JNICALL Java_org_larder_Native_get(JNIEnv *env, jclass cls, jlong guard,
						   jlong gen, jlong key, jint key_len, jlong buf,
						   jint buf_len)
{
	(void)env;
	(void)cls;
	return get_common(larder_get, guard, gen, ptr(key), key_len, buf, buf_len);
}

/* get() without a read's effects (larder_peek): no hit or miss counted, no
 * deadline extended; for a batch's value re-read after the batch counted it. */
JNIEXPORT jlong JNICALL Java_org_larder_Native_peek(JNIEnv *env, jclass cls, jlong guard,
						    jlong gen, jlong key, jint key_len, jlong buf,
						    jint buf_len)
{
	(void)env;
	(void)cls;
	return get_common(larder_peek, guard, gen, ptr(key), key_len, buf, buf_len);
}

/*
 * A get whose key (1 to 16 bytes) comes in two registers instead of
 * memory: k0 holds its first 8 bytes (fewer when shorter), k1 its last 8
 * (overlapping k0 when shorter than 16), as Java read them in native byte
 * order. Saves the key's round trip through the scratch buffer: Java's
 * stores, then the engine's loads of them right after the crossing (about
 * 7 ns per get, measured).
 */
JNIEXPORT jlong JNICALL Java_org_larder_Native_getShort(JNIEnv *env, jclass cls, jlong guard,
							jlong gen, jlong k0, jlong k1,
							jint key_len, jlong buf, jint buf_len)
{
	(void)env;
	(void)cls;
	unsigned char key[16];
	if (key_len < 1 || key_len > 16)
		return LJ_GET_ERR_BASE + LARDER_EINVAL;
	if (key_len >= 8) {
		memcpy(key, &k0, 8);
		memcpy(key + key_len - 8, &k1, 8);
	} else {
		memcpy(key, &k0, (size_t)key_len);
	}
	return get_common(larder_get, guard, gen, key, key_len, buf, buf_len);
}

struct view_call {
	JNIEnv *env;
	jobject view;
};

/* Runs the Java consumer on the stored bytes, inside the engine's read
 * section; an exception it throws stays pending and reaches the caller when
 * the native method returns. */
static void view_callback(void *ctx, const void *value, size_t value_len)
{
	struct view_call *vc = ctx;
	(*vc->env)->CallVoidMethod(vc->env, vc->view, view_dispatch, (jlong)(uintptr_t)value,
				   (jint)value_len);
}

JNIEXPORT jint JNICALL Java_org_larder_Native_getDirect(JNIEnv *env, jclass cls, jlong guard,
							jlong gen, jlong key, jint key_len,
							jobject view)
{
	(void)cls;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	struct view_call vc = { env, view };
	int rc = larder_get_with(s.c->cache, ptr(key), (size_t)key_len, view_callback, &vc);
	lj_exit(&s);
	return rc;
}

/* One batch: where its values go (see Native.getBatch). */
struct batch_call {
	unsigned char *base;
	jint *out;       /* (offset, length) per key of the whole batch */
	size_t first;    /* the chunk's first key in the batch */
	size_t next;     /* next free byte of the values area, from base */
	size_t end;      /* end of the values area, from base */
};

static void batch_callback(void *ctx, size_t index, const void *value, size_t value_len)
{
	struct batch_call *b = ctx;
	jint *slot = b->out + 2 * (b->first + index);
	if (value_len <= b->end - b->next) {
		memcpy(b->base + b->next, value, value_len);
		slot[0] = (jint)b->next;
		b->next += value_len;
	} else {
		slot[0] = -1; /* did not fit: Java reads it alone */
	}
	slot[1] = (jint)value_len;
}

/*
 * Looks up count keys whose (offset, length) pairs are at base + key_table,
 * with the engine's batch get, BATCH_CHUNK keys per engine call. Writes an
 * (offset, length) pair per key at base + out_table: length -1 for a miss;
 * offset -1 when the value did not fit in [values, values + values_cap).
 * Returns the number found or a negative code.
 */
JNIEXPORT jint JNICALL Java_org_larder_Native_getBatch(JNIEnv *env, jclass cls, jlong guard,
						       jlong gen, jlong base, jint count,
						       jint key_table, jint out_table, jint values,
						       jint values_cap)
{
	(void)env;
	(void)cls;
	if (count < 0 || values < 0 || values_cap < 0)
		return LARDER_EINVAL;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	unsigned char *b = ptr(base);
	const jint *keys = (const jint *)(b + key_table);
	struct batch_call call = {
		.base = b,
		.out = (jint *)(b + out_table),
		.next = (size_t)values,
		.end = (size_t)values + (size_t)values_cap,
	};
	const void *ptrs[BATCH_CHUNK];
	size_t lens[BATCH_CHUNK];
	long found = 0;
	for (jint i = 0; i < count; i++) {
		call.out[2 * i] = 0;
		call.out[2 * i + 1] = -1;
	}
	for (jint first = 0; first < count && found >= 0; first += BATCH_CHUNK) {
		jint n = count - first < BATCH_CHUNK ? count - first : BATCH_CHUNK;
		for (jint i = 0; i < n; i++) {
			ptrs[i] = b + keys[2 * (first + i)];
			lens[i] = (size_t)keys[2 * (first + i) + 1];
		}
		call.first = (size_t)first;
		long got = larder_get_batch(s.c->cache, (size_t)n, ptrs, lens, batch_callback, &call);
		found = got < 0 ? got : found + got;
	}
	lj_exit(&s);
	return (jint)found;
}

JNIEXPORT jint JNICALL Java_org_larder_Native_contains(JNIEnv *env, jclass cls, jlong guard,
						       jlong gen, jlong key, jint key_len)
{
	(void)env;
	(void)cls;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	int rc = larder_contains(s.c->cache, ptr(key), (size_t)key_len);
	lj_exit(&s);
	return rc;
}

/* >= 0: milliseconds left (Long.MAX_VALUE: no TTL); LJ_GET_MISS; or an error
 * as LJ_GET_ERR_BASE + rc. */
JNIEXPORT jlong JNICALL Java_org_larder_Native_ttlRemaining(JNIEnv *env, jclass cls,
							    jlong guard, jlong gen, jlong key,
							    jint key_len)
{
	(void)env;
	(void)cls;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return LJ_GET_ERR_BASE + s.rc;
	uint64_t ms;
	int rc = larder_ttl_remaining(s.c->cache, ptr(key), (size_t)key_len, &ms);
	lj_exit(&s);
	if (rc == LARDER_OK)
		return ms >= (uint64_t)INT64_MAX ? (jlong)INT64_MAX : (jlong)ms;
	return rc == LARDER_MISS ? LJ_GET_MISS : LJ_GET_ERR_BASE + rc;
}

JNIEXPORT jint JNICALL Java_org_larder_Native_write(JNIEnv *env, jclass cls, jlong guard,
						    jlong gen, jint op, jlong key, jint key_len,
						    jlong value, jint value_len, jlong expected,
						    jint expected_len, jlong ttl)
{
	(void)env;
	(void)cls;
	if (key_len < 0 || value_len < 0 || expected_len < 0)
		return LARDER_EINVAL;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	larder *l = s.c->cache;
	int rc;
	const void *k = ptr(key), *v = ptr(value), *e = ptr(expected);
	size_t kl = (size_t)key_len, vl = (size_t)value_len, el = (size_t)expected_len;
	uint64_t t = (uint64_t)ttl;
	switch (op) {
	case OP_PUT:
		rc = larder_put(l, k, kl, v, vl, t);
		break;
	case OP_PUT_IF_ABSENT:
		rc = larder_put_if_absent(l, k, kl, v, vl, t);
		break;
	case OP_REPLACE:
		rc = larder_replace(l, k, kl, v, vl, t);
		break;
	case OP_REPLACE_IF_EQUALS:
		rc = larder_replace_if_equals(l, k, kl, e, el, v, vl, t);
		break;
	case OP_REMOVE:
		rc = larder_remove(l, k, kl);
		break;
	case OP_REMOVE_IF_EQUALS:
		rc = larder_remove_if_equals(l, k, kl, e, el);
		break;
	case OP_TOUCH:
		rc = larder_touch(l, k, kl, t);
		break;
	case OP_ACCESS: /* a putIfAbsent that found the key: Caffeine's access without a hit */
		rc = larder_access(l, k, kl);
		break;
	default:
		rc = LARDER_EINVAL;
		break;
	}
	lj_exit(&s);
	return rc;
}

JNIEXPORT jint JNICALL Java_org_larder_Native_clear(JNIEnv *env, jclass cls, jlong guard,
						    jlong gen)
{
	(void)env;
	(void)cls;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	int rc = larder_clear(s.c->cache);
	lj_exit(&s);
	return rc;
}

JNIEXPORT jint JNICALL Java_org_larder_Native_flush(JNIEnv *env, jclass cls, jlong guard,
						    jlong gen, jlong timeout_ms)
{
	(void)env;
	(void)cls;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	int rc = larder_flush(s.c->cache, timeout_ms < 0 ? 0 : (uint64_t)timeout_ms);
	lj_exit(&s);
	return rc;
}

JNIEXPORT jint JNICALL Java_org_larder_Native_setCapacity(JNIEnv *env, jclass cls, jlong guard,
							  jlong gen, jlong bytes)
{
	(void)env;
	(void)cls;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	int rc = larder_set_capacity(s.c->cache, (uint64_t)bytes);
	lj_exit(&s);
	return rc;
}

/* Fills out with the engine's counters, then the native listener failures. */
JNIEXPORT jint JNICALL Java_org_larder_Native_stats(JNIEnv *env, jclass cls, jlong guard,
						    jlong gen, jlongArray out)
{
	(void)cls;
	uint64_t v[LARDER_STAT_COUNT + 1];
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	int rc = larder_stats(s.c->cache, v, LARDER_STAT_COUNT);
	/* Relaxed: a count. */
	v[LARDER_STAT_COUNT] = atomic_load_explicit(&s.c->listener_failures, memory_order_relaxed);
	lj_exit(&s);
	return lj_put_longs(env, out, v, LARDER_STAT_COUNT + 1, rc);
}

/* Fills out with every size class's figures, one class after another. */
JNIEXPORT jint JNICALL Java_org_larder_Native_classStats(JNIEnv *env, jclass cls, jlong guard,
							 jlong gen, jlongArray out)
{
	(void)cls;
	size_t classes = larder_size_class_count();
	jsize n = (*env)->GetArrayLength(env, out);
	if ((size_t)n < classes * LARDER_CLASS_STAT_COUNT)
		return LARDER_EINVAL;
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	int rc = LARDER_OK;
	for (size_t i = 0; i < classes && rc == LARDER_OK; i++) {
		uint64_t v[LARDER_CLASS_STAT_COUNT];
		rc = larder_stats_size_class(s.c->cache, i, v, LARDER_CLASS_STAT_COUNT);
		if (rc == LARDER_OK)
			(*env)->SetLongArrayRegion(env, out, (jsize)(i * LARDER_CLASS_STAT_COUNT),
						   LARDER_CLASS_STAT_COUNT, (const jlong *)v);
	}
	lj_exit(&s);
	return rc;
}

JNIEXPORT jint JNICALL Java_org_larder_Native_classCount(JNIEnv *env, jclass cls)
{
	(void)env;
	(void)cls;
	return (jint)larder_size_class_count();
}

int lj_put_longs(JNIEnv *env, jlongArray out, const uint64_t *v, jsize count, int rc)
{
	jsize n = (*env)->GetArrayLength(env, out);
	if (rc == LARDER_OK)
		(*env)->SetLongArrayRegion(env, out, 0, n < count ? n : count, (const jlong *)v);
	return rc;
}

/* A String[] of names from a name function; NULL with an exception pending. */
jobjectArray lj_names(JNIEnv *env, int count, const char *(*name)(int))
{
	jclass string = (*env)->FindClass(env, "java/lang/String");
	if (!string)
		return NULL;
	jobjectArray a = (*env)->NewObjectArray(env, count, string, NULL);
	for (int i = 0; a && i < count; i++) {
		jstring s = (*env)->NewStringUTF(env, name(i));
		if (!s)
			return NULL;
		(*env)->SetObjectArrayElement(env, a, i, s);
		(*env)->DeleteLocalRef(env, s);
	}
	return a;
}

static const char *stat_name(int i)
{
	return larder_stat_name((enum larder_stat)i);
}

static const char *class_stat_name(int i)
{
	return larder_class_stat_name((enum larder_class_stat)i);
}

JNIEXPORT jobjectArray JNICALL Java_org_larder_Native_statNames(JNIEnv *env, jclass cls)
{
	(void)cls;
	return lj_names(env, LARDER_STAT_COUNT, stat_name);
}

JNIEXPORT jobjectArray JNICALL Java_org_larder_Native_classStatNames(JNIEnv *env, jclass cls)
{
	(void)cls;
	return lj_names(env, LARDER_CLASS_STAT_COUNT, class_stat_name);
}

JNIEXPORT jstring JNICALL Java_org_larder_Native_strerror(JNIEnv *env, jclass cls, jint rc)
{
	(void)cls;
	return (*env)->NewStringUTF(env, larder_strerror(rc));
}

/* Fills out with the cache's figures in its pool (larder_pool_cache_stats);
 * LARDER_EINVAL for a cache in no pool. */
JNIEXPORT jint JNICALL Java_org_larder_Native_poolCacheStats(JNIEnv *env, jclass cls,
							     jlong guard, jlong gen,
							     jdoubleArray out)
{
	(void)cls;
	double v[LARDER_POOL_CACHE_STAT_COUNT];
	struct lj_section s;
	if (!lj_enter(&s, guard, gen))
		return s.rc;
	int rc = s.c->pool ? larder_pool_cache_stats(s.c->pool, s.c->cache, v,
						     LARDER_POOL_CACHE_STAT_COUNT)
			   : LARDER_EINVAL;
	lj_exit(&s);
	jsize n = (*env)->GetArrayLength(env, out);
	if (rc == LARDER_OK)
		(*env)->SetDoubleArrayRegion(env, out, 0,
					     n < LARDER_POOL_CACHE_STAT_COUNT ? n
									  : LARDER_POOL_CACHE_STAT_COUNT,
					     v);
	return rc;
}
