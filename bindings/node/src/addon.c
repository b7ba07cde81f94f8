/*
 * addon.c - the Node-API module of larder's Node.js binding: module init,
 * opening a handle (one per JavaScript cache object) on a registry cache,
 * the handle's lifetime, and dispose delivery. The operations are in ops.c,
 * cursors in iter.c, argument reading in args.c, the process-wide registry
 * in registry.c.
 *
 * Lifetime (each rule keeps a JavaScript mistake from becoming a crash):
 *   ADDON-H1. A handle holds one registry reference from open until close(), the
 *       garbage collection of all its functions, or its environment's
 *       teardown, whichever is first (handle_release is idempotent). Every
 *       operation checks h->cache, so calls after close throw.
 *   ADDON-H2. A handle is used by the one JavaScript thread of its environment;
 *       other workers hold their own handles and references (registry.c), so
 *       a close in one worker never frees memory another is reading.
 *   ADDON-H3. The maintainer reaches a handle only through its subscription, and
 *       only between subscribe and unsubscribe; unsubscribe comes before the
 *       thread-safe function is released or finalised.
 *   ADDON-H4. A handle's memory is freed once its functions are collected, its
 *       reference is released and its thread-safe function is finalised, in
 *       whatever order Node runs those finalisers.
 *   ADDON-H5. No operation starts while an mget or mset of this thread reads array
 *       elements (a getter could run JavaScript that reuses the buffers being
 *       filled): it throws ERR_LARDER_REENTRANT instead.
 *
 * Pools: poolOpen() wraps a struct pool_ref (one registry reference on a
 * pool) in a JavaScript object that open() takes as its pool argument.
 *   ADDON-H6. A pool_ref holds its reference until poolClose(), its object's
 *       collection or its environment's teardown, whichever is first; a
 *       cache opened with it holds its own reference (registry.c, REGISTRY-P1), so
 *       releasing a pool_ref never strands a cache.
 *
 * Dispose: the engine's listener (registry.c) copies each removal into the
 * handle's bounded queue (dispose_queue.c) and, when it turns non-empty,
 * calls the handle's thread-safe function without blocking; on the
 * JavaScript thread tsfn_call_js() takes the whole queue and hands it to
 * index.js in one call.
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"
#include "dispose_queue.h"

/* ---- Handle lifetime (ADDON-H1..H4) ------------------------------------------- */

static void handle_release(struct handle *h)
{
	if (h->shared == NULL)
		return;
	lnode_cursors_release(h);
	if (h->subscribed) {
		lnode_shared_unsubscribe(h->shared, &h->sub);
		h->subscribed = 0;
	}
	if (h->tsfn != NULL && !h->tsfn_released) {
		h->tsfn_released = 1;
		napi_release_threadsafe_function(h->tsfn, napi_tsfn_release);
	}
	h->cache = NULL;
	lnode_registry_release(h->shared);
	h->shared = NULL;
}

/* Handle structs allocated and not yet freed, in every environment (a leak check for tests). */
static pthread_mutex_t handles_lock = PTHREAD_MUTEX_INITIALIZER;
static size_t handles_alive; /* under handles_lock */

static void handles_count(int delta)
{
	pthread_mutex_lock(&handles_lock);
	handles_alive += (size_t)delta;
	pthread_mutex_unlock(&handles_lock);
}

static void handle_maybe_free(struct handle *h)
{
	if (h->fns != 0 || h->shared != NULL || h->tsfn != NULL)
		return;
	if (h->ed != NULL) {
		if (h->prev != NULL)
			h->prev->next = h->next;
		else
			h->ed->handles = h->next;
		if (h->next != NULL)
			h->next->prev = h->prev;
	}
	if (h->has_queue)
		lnode_dq_destroy(&h->sub.queue);
	free(h->taken);
	free(h);
	handles_count(-1);
}

static napi_value op_close(napi_env env, napi_callback_info info)
{
	struct handle *h;
	size_t argc = 0;

	if (napi_get_cb_info(env, info, &argc, NULL, NULL, (void **)&h) != napi_ok)
		return NULL;
	handle_release(h);
	return NULL;
}

static void fn_finalize(napi_env env, void *data, void *hint)
{
	struct handle *h = data;

	(void)env;
	(void)hint;
	if (--h->fns == 0) {
		handle_release(h);
		handle_maybe_free(h);
	}
}

/* The maintainer's wake-up for a subscriber (called under the cache's sub_lock). */
static void handle_notify(void *ctx)
{
	struct handle *h = ctx;

	/* Non-blocking: the queue of calls holds at most one per empty->non-empty turn. */
	napi_call_threadsafe_function(h->tsfn, NULL, napi_tsfn_nonblocking);
}

/* On the JavaScript thread: hands every queued record to index.js in one call. */
static void tsfn_call_js(napi_env env, napi_value js_cb, void *context, void *data)
{
	struct handle *h = context;
	size_t used, records;
	napi_value argv[2], undef, err;
	bool pending = false;

	(void)data;
	if (env == NULL || js_cb == NULL)
		return;
	lnode_dq_take(&h->sub.queue, &h->taken, &h->taken_cap, &used, &records);
	if (records == 0)
		return;
	if (napi_create_buffer_copy(env, used, h->taken, NULL, &argv[0]) != napi_ok)
		return;
	napi_create_double(env, (double)records, &argv[1]);
	napi_get_undefined(env, &undef);
	/*
	 * An exception from dispose (index.js rethrows the batch's first) must
	 * surface as any callback's does, as process's uncaughtException. Left
	 * pending, Node-API 8 drops it with only a deprecation warning (DEP0168)
	 * unless node runs with --force-node-api-uncaught-exceptions-policy.
	 */
	napi_call_function(env, undef, js_cb, 2, argv, NULL);
	if (napi_is_exception_pending(env, &pending) == napi_ok && pending &&
	    napi_get_and_clear_last_exception(env, &err) == napi_ok)
		napi_fatal_exception(env, err);
}

static void tsfn_finalize(napi_env env, void *data, void *hint)
{
	struct handle *h = data;

	(void)env;
	(void)hint;
	if (h->subscribed) {
		lnode_shared_unsubscribe(h->shared, &h->sub);
		h->subscribed = 0;
	}
	h->tsfn = NULL;
	handle_maybe_free(h);
}

/* ---- Pools (ADDON-H6) ------------------------------------------------------------ */

struct pool_ref {
	struct lnode_pool *pool; /* NULL once released */
	struct env_data *ed;     /* NULL once the environment is torn down */
	struct pool_ref *prev, *next; /* ed->pools */
};

static void pool_ref_release(struct pool_ref *r)
{
	if (r->pool != NULL)
		lnode_pool_release(r->pool);
	r->pool = NULL;
}

static void pool_ref_finalize(napi_env env, void *data, void *hint)
{
	struct pool_ref *r = data;

	(void)env;
	(void)hint;
	pool_ref_release(r);
	if (r->ed != NULL) {
		if (r->prev != NULL)
			r->prev->next = r->next;
		else
			r->ed->pools = r->next;
		if (r->next != NULL)
			r->next->prev = r->prev;
	}
	free(r);
}

/* The pool_ref a JavaScript pool object wraps, or NULL after throwing. */
static struct pool_ref *pool_ref_arg(napi_env env, napi_value v)
{
	struct pool_ref *r;

	if (napi_unwrap(env, v, (void **)&r) != napi_ok) {
		lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "larder: not a pool");
		return NULL;
	}
	if (r->pool == NULL) {
		lnode_throw(env, ERR_PLAIN, "ERR_LARDER_CLOSED", "larder: the pool is closed");
		return NULL;
	}
	return r;
}

static void env_finalize(napi_env env, void *data, void *hint)
{
	struct env_data *ed = data;
	struct handle *h, *next;

	(void)env;
	(void)hint;
	struct pool_ref *r;

	for (h = ed->handles; h != NULL; h = next) {
		next = h->next;
		handle_release(h);
		h->ed = NULL;
		h->prev = h->next = NULL;
	}
	/* After the caches: theirs are the references that keep a pool open. */
	for (r = ed->pools; r != NULL; r = r->next) {
		pool_ref_release(r);
		r->ed = NULL;
	}
	free(ed->keys);
	free(ed->k16);
	free(ed->in);
	free(ed->batch_keys);
	free(ed->batch_lens);
	free(ed->batch_offs);
	free(ed);
}

/* ---- Module functions --------------------------------------------------- */

static int arg_u64(napi_env env, napi_value v, uint64_t *out)
{
	double d;

	if (napi_get_value_double(env, v, &d) != napi_ok || !(d >= 0) || d > 1.8e19)
		return 0;
	*out = (uint64_t)d;
	return 1;
}

/*
 * Copies a registry name (a string of 1..254 bytes of UTF-8 without NUL) into
 * name[256]. Returns 0 for anything else. The length is asked first and a NUL
 * refused: a copy into name[] would stop short of a longer name without
 * saying so, and the registry compares C strings, so either would make two
 * names one.
 */
static int name_arg(napi_env env, napi_value v, char name[static 256])
{
	size_t len;

	return napi_get_value_string_utf8(env, v, NULL, 0, &len) == napi_ok && len >= 1 &&
	       len <= 254 && napi_get_value_string_utf8(env, v, name, 256, &len) == napi_ok &&
	       memchr(name, '\0', len) == NULL;
}

/*
 * The arguments open() and poolOpen() begin with: a registry name or null
 * (*has_name says which), then n numbers into u. Returns 1, or 0 with a
 * TypeError or RangeError thrown.
 */
static int lead_args(napi_env env, const napi_value *argv, char name[static 256], int *has_name,
		     uint64_t *u, size_t n, const char *what)
{
	napi_valuetype type;
	size_t i;

	napi_typeof(env, argv[0], &type);
	*has_name = type == napi_string;
	if (*has_name && !name_arg(env, argv[0], name)) {
		lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
			    "name must be 1..254 bytes of UTF-8 without NUL");
		return 0;
	}
	for (i = 0; i < n; i++) {
		if (!arg_u64(env, argv[1 + i], &u[i])) {
			lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
				    "larder: bad %s argument %zu", what, i + 1);
			return 0;
		}
	}
	return 1;
}

/* One of the handle's functions, with h as its data; h counts it until it is collected. */
static int make_fn(napi_env env, const char *name, napi_callback cb, struct handle *h,
		   napi_value *fn)
{
	if (napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, h, fn) != napi_ok)
		return 0;
	if (napi_add_finalizer(env, *fn, h, fn_finalize, NULL, NULL) != napi_ok)
		return 0;
	h->fns++;
	return 1;
}

static const struct {
	const char *name;
	napi_callback cb;
} handle_ops[] = {
	{"get", lnode_op_get},
	{"peek", lnode_op_peek},
	{"set", lnode_op_set},
	{"has", lnode_op_has},
	{"delete", lnode_op_delete},
	{"ttl", lnode_op_ttl},
	{"clear", lnode_op_clear},
	{"mget", lnode_op_mget},
	{"mset", lnode_op_mset},
	{"flush", lnode_op_flush},
	{"stats", lnode_op_stats},
	{"setCapacity", lnode_op_set_capacity},
	{"close", op_close},
	{"probe", lnode_op_probe},
	{"settings", lnode_op_settings},
	{"poolStats", lnode_op_pool_stats},
	{"engineLoop", lnode_op_engine_loop},
	{"iterOpen", lnode_op_iter_open},
	{"iterNext", lnode_op_iter_next},
	{"iterClose", lnode_op_iter_close},
};
#define HANDLE_OPS (sizeof handle_ops / sizeof handle_ops[0])

/*
 * open(name | null, capacity, maxEntries, ttl, maxKey, maxValue, policy, expiry,
 *      given, deliver | null, queueBytes, compressMin, compressSaving,
 *      pool | null, minShare, maxShare, missCost, shards, writeWaitMs) -> { get, set, ... }
 */
static napi_value mod_open(napi_env env, napi_callback_info info)
{
	napi_value argv[19], obj, resource;
	napi_property_descriptor props[HANDLE_OPS];
	size_t argc = 19, i;
	struct env_data *ed;
	struct lnode_settings s;
	struct handle *h;
	uint64_t u[8], cmin, csaving, shards, write_wait;
	struct pool_ref *pool = NULL;
	double shares[3];
	char name[256];
	const char *mismatch;
	napi_valuetype type;
	int rc, has_name;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok ||
	    napi_get_instance_data(env, (void **)&ed) != napi_ok)
		return NULL;
	if (!lead_args(env, argv, name, &has_name, u, 8, "open"))
		return NULL;
	if (!arg_u64(env, argv[11], &cmin) || !arg_u64(env, argv[12], &csaving))
		return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
				   "larder: bad compression arguments");
	if (!arg_u64(env, argv[17], &shards))
		return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "larder: bad shards argument");
	if (!arg_u64(env, argv[18], &write_wait))
		return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
				   "larder: bad writeWaitMs argument");
	napi_typeof(env, argv[13], &type);
	if (type != napi_null && (pool = pool_ref_arg(env, argv[13])) == NULL)
		return NULL;
	for (i = 0; i < 3; i++) {
		if (napi_get_value_double(env, argv[14 + i], &shares[i]) != napi_ok)
			return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
					   "larder: bad pool arguments");
	}
	s = (struct lnode_settings){
		.capacity_bytes = u[0],
		.max_entries = u[1],
		.expected_entries = u[1] != 0 ? u[1] : EXPECTED_DEFAULT,
		.default_ttl_ms = u[2] == 0 ? LARDER_TTL_NEVER : u[2],
		.max_key_bytes = (size_t)u[3],
		.max_value_bytes = (size_t)u[4],
		.policy = (enum larder_policy)u[5],
		.expiry = (enum larder_expiry)u[6],
		.compress_min = (size_t)cmin,
		.compress_saving = (unsigned)csaving,
		.pool = pool != NULL ? pool->pool : NULL,
		.min_share = shares[0],
		.max_share = shares[1],
		.miss_cost = shares[2],
		.shards = (unsigned)shards,
		.write_wait_ms = write_wait,
	};
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return lnode_throw_nomem(env);
	handles_count(1);
	rc = lnode_registry_open(&h->shared, has_name ? name : NULL, &s, (unsigned)u[7], &mismatch);
	if (rc != LARDER_OK) {
		free(h);
		handles_count(-1);
		if (rc == LNODE_EMISMATCH)
			return lnode_throw(env, ERR_PLAIN, "ERR_LARDER_MISMATCH",
					   "larder: cache '%s' is already open with another %s",
					   name, mismatch);
		if (rc == LARDER_EINVAL && pool != NULL)
			return lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
					   "larder: the pool cannot take this cache (the minShare "
					   "of its caches would sum to over 1, or it cannot give "
					   "64 KiB), or an option is out of range");
		if (rc == LARDER_EINVAL)
			return lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
					   "larder: an option is out of range (maxSize >= 65536, "
					   "maxKeyBytes 1..65535, maxValueBytes < 1 GiB, "
					   "writeWaitMs 0..3600000)");
		if (rc == LARDER_EBUSY)
			return lnode_throw(env, ERR_PLAIN, "ERR_LARDER_BUSY",
					   "larder: the pool did not free this cache's first "
					   "capacity within writeWaitMs (%llu ms; EBUSY)",
					   (unsigned long long)s.write_wait_ms);
		if (rc == LARDER_ENOMEM)
			return lnode_throw(env, ERR_PLAIN, "ERR_LARDER_NOMEM",
					   "larder: cannot open the cache: out of memory (ENOMEM; "
					   "max sizes its index)");
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER",
				   "larder: cannot open the cache: %s (%d)", larder_strerror(rc),
				   rc);
	}
	h->cache = lnode_shared_cache(h->shared);
	h->max_key = lnode_shared_settings(h->shared)->max_key_bytes;
	h->max_value = lnode_shared_settings(h->shared)->max_value_bytes;
	h->ed = ed;
	h->next = ed->handles;
	if (ed->handles != NULL)
		ed->handles->prev = h;
	ed->handles = h;
	if (!lnode_grow(&ed->keys, &ed->keys_cap, KEY_ROOM(h->max_key), 1) ||
	    !lnode_grow(&ed->k16, &ed->k16_cap,
			(h->max_key > K16_VALUES ? h->max_key : K16_VALUES) + 2,
			sizeof(*ed->k16)) ||
	    !lnode_grow(&ed->in, &ed->in_cap, IN_INITIAL, 1))
		goto fail;

	napi_typeof(env, argv[9], &type);
	if (type == napi_function) {
		if (!arg_u64(env, argv[10], &u[0]) ||
		    lnode_dq_init(&h->sub.queue, (size_t)u[0]) != 0)
			goto fail;
		h->has_queue = 1;
		napi_create_string_utf8(env, "larder dispose", NAPI_AUTO_LENGTH, &resource);
		if (napi_create_threadsafe_function(env, argv[9], NULL, resource, 0, 1, h,
						    tsfn_finalize, h, tsfn_call_js,
						    &h->tsfn) != napi_ok)
			goto fail;
		/* Pending dispose events do not keep the process alive. */
		napi_unref_threadsafe_function(env, h->tsfn);
		h->sub.notify = handle_notify;
		h->sub.notify_ctx = h;
		lnode_shared_subscribe(h->shared, &h->sub);
		h->subscribed = 1;
	}
	/*
	 * All properties in one napi_define_properties: set one by one (as keyed
	 * stores), V8 turns an object past a dozen of them into a dictionary, and
	 * every this.#n.get in index.js would then be a dictionary lookup.
	 */
	for (i = 0; i < HANDLE_OPS; i++) {
		props[i] = (napi_property_descriptor){.utf8name = handle_ops[i].name,
						      .attributes = napi_enumerable};
		if (!make_fn(env, handle_ops[i].name, handle_ops[i].cb, h, &props[i].value))
			goto fail;
	}
	if (napi_create_object(env, &obj) != napi_ok ||
	    napi_define_properties(env, obj, HANDLE_OPS, props) != napi_ok)
		goto fail;
	return obj;

fail:
	/* Functions already made keep h until they are collected (ADDON-H4). */
	handle_release(h);
	handle_maybe_free(h);
	return lnode_throw_nomem(env);
}

/* setScratch(out: Buffer, meta: Int32Array): the buffers gets and mget fill. */
static napi_value mod_set_scratch(napi_env env, napi_callback_info info)
{
	napi_value argv[2], ab;
	size_t argc = 2, len, off;
	struct env_data *ed;
	napi_typedarray_type type;
	void *data;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok ||
	    napi_get_instance_data(env, (void **)&ed) != napi_ok)
		return NULL;
	if (!lnode_view_bytes(env, argv[0], &data, &len))
		return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
				   "scratch must be a Buffer");
	if (napi_get_typedarray_info(env, argv[1], &type, &ed->meta_cap, (void **)&ed->meta, &ab,
				     &off) != napi_ok ||
	    type != napi_int32_array)
		return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
				   "meta must be an Int32Array");
	if (ed->out_ref != NULL)
		napi_delete_reference(env, ed->out_ref);
	if (ed->meta_ref != NULL)
		napi_delete_reference(env, ed->meta_ref);
	napi_create_reference(env, argv[0], 1, &ed->out_ref);
	napi_create_reference(env, argv[1], 1, &ed->meta_ref);
	ed->out = data;
	ed->out_cap = len;
	return NULL;
}

/* poolOpen(name | null, budget, intervalMs, given) -> a pool object for open(). */
static napi_value mod_pool_open(napi_env env, napi_callback_info info)
{
	napi_value argv[4], obj;
	size_t argc = 4;
	struct env_data *ed;
	struct pool_ref *r;
	uint64_t u[3];
	char name[256];
	const char *mismatch;
	int rc, has_name;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok ||
	    napi_get_instance_data(env, (void **)&ed) != napi_ok)
		return NULL;
	if (!lead_args(env, argv, name, &has_name, u, 3, "pool"))
		return NULL;
	r = calloc(1, sizeof(*r));
	if (r == NULL)
		return lnode_throw_nomem(env);
	rc = lnode_pool_open(&r->pool, has_name ? name : NULL, u[0], u[1], (unsigned)u[2],
			     &mismatch);
	if (rc != LARDER_OK) {
		free(r);
		if (rc == LNODE_EMISMATCH)
			return lnode_throw(env, ERR_PLAIN, "ERR_LARDER_MISMATCH",
					   "larder: pool '%s' is already open with another %s",
					   name, mismatch);
		if (rc == LARDER_EINVAL)
			return lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
					   "larder: pool maxSize must be >= 1 MiB and interval "
					   "0..60000 ms");
		if (rc == LARDER_ENOMEM)
			return lnode_throw(env, ERR_PLAIN, "ERR_LARDER_NOMEM",
					   "larder: cannot open the pool: out of memory (ENOMEM)");
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER",
				   "larder: cannot open the pool: %s (%d)", larder_strerror(rc),
				   rc);
	}
	if (napi_create_object(env, &obj) != napi_ok ||
	    napi_wrap(env, obj, r, pool_ref_finalize, NULL, NULL) != napi_ok) {
		pool_ref_release(r);
		free(r);
		return lnode_throw_nomem(env);
	}
	r->ed = ed;
	r->next = ed->pools;
	if (ed->pools != NULL)
		ed->pools->prev = r;
	ed->pools = r;
	return obj;
}

/* poolClose(pool): drops this object's reference (ADDON-H6). Idempotent. */
static napi_value mod_pool_close(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	size_t argc = 1;
	struct pool_ref *r;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok)
		return NULL;
	if (napi_unwrap(env, argv[0], (void **)&r) == napi_ok)
		pool_ref_release(r);
	return NULL;
}

/* poolStats(pool): larder_pool_stats() as an object of numbers. */
static napi_value mod_pool_stats(napi_env env, napi_callback_info info)
{
	uint64_t values[LARDER_POOL_STAT_COUNT];
	napi_value argv[1], obj;
	size_t argc = 1, i;
	struct pool_ref *r;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok ||
	    (r = pool_ref_arg(env, argv[0])) == NULL)
		return NULL;
	if (larder_pool_stats(lnode_pool_engine(r->pool), values, LARDER_POOL_STAT_COUNT) !=
	    LARDER_OK)
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER", "larder: pool stats failed");
	napi_create_object(env, &obj);
	for (i = 0; i < LARDER_POOL_STAT_COUNT; i++)
		napi_set_named_property(env, obj, larder_pool_stat_name((enum larder_pool_stat)i),
					lnode_make_double(env, (double)values[i]));
	return obj;
}

static napi_value mod_open_pools(napi_env env, napi_callback_info info)
{
	(void)info;
	return lnode_make_double(env, (double)lnode_pool_open_count());
}

static napi_value mod_open_caches(napi_env env, napi_callback_info info)
{
	(void)info;
	return lnode_make_double(env, (double)lnode_registry_open_count());
}

static napi_value mod_refs(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	size_t argc = 1;
	napi_valuetype type;
	char name[256];

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok)
		return NULL;
	napi_typeof(env, argv[0], &type);
	if (type != napi_string)
		return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "name must be a string");
	/* No cache can be open under a name open() refuses. */
	return lnode_make_double(env, name_arg(env, argv[0], name)
					      ? (double)lnode_registry_refs(name)
					      : 0);
}

static napi_value mod_live_handles(napi_env env, napi_callback_info info)
{
	size_t n;

	(void)info;
	pthread_mutex_lock(&handles_lock);
	n = handles_alive;
	pthread_mutex_unlock(&handles_lock);
	return lnode_make_double(env, (double)n);
}

/* The engine's figures index.js needs for its limits and messages. */
static napi_value mod_limits(napi_env env, napi_callback_info info)
{
	napi_value obj;

	(void)info;
	napi_create_object(env, &obj);
	napi_set_named_property(env, obj, "keyLimit", lnode_make_double(env, LARDER_KEY_LIMIT));
	napi_set_named_property(env, obj, "valueLimit",
				lnode_make_double(env, (double)LARDER_VALUE_LIMIT));
	return obj;
}

static napi_value init(napi_env env, napi_value exports)
{
	static const struct {
		const char *name;
		napi_callback cb;
	} fns[] = {
		{"open", mod_open},
		{"setScratch", mod_set_scratch},
		{"openCaches", mod_open_caches},
		{"refs", mod_refs},
		{"liveHandles", mod_live_handles},
		{"limits", mod_limits},
		{"poolOpen", mod_pool_open},
		{"poolClose", mod_pool_close},
		{"poolStats", mod_pool_stats},
		{"openPools", mod_open_pools},
	};
	struct env_data *ed = calloc(1, sizeof(*ed));
	napi_value fn;
	size_t i;

	if (ed == NULL || napi_set_instance_data(env, ed, env_finalize, NULL) != napi_ok) {
		free(ed);
		lnode_throw_nomem(env);
		return NULL;
	}
	for (i = 0; i < sizeof fns / sizeof fns[0]; i++) {
		if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL,
					 &fn) != napi_ok ||
		    napi_set_named_property(env, exports, fns[i].name, fn) != napi_ok)
			return NULL;
	}
	return exports;
}

/* Newer headers' NAPI_MODULE_INIT defines this without a prototype (-Wmissing-prototypes). */
#ifdef NODE_API_MODULE_GET_API_VERSION
NAPI_MODULE_EXPORT int32_t NODE_API_MODULE_GET_API_VERSION(void);
#endif

NAPI_MODULE_INIT()
{
	return init(env, exports);
}
