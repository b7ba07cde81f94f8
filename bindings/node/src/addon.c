/*
 * addon.c - the Node-API glue of larder's Node.js binding: turns JavaScript
 * calls into larder.h calls, one handle per JavaScript cache object.
 *
 * The crossing is designed for few Node-API calls per operation:
 *   - Each handle's operations are native functions created with the handle
 *     as their data pointer, so napi_get_cb_info() yields the arguments and
 *     the handle in one call (no unwrap, no handle argument).
 *   - A string key's UTF-16 units are read in one call into a per-environment
 *     buffer of max_key_bytes + 2 units (a longer key shows as too long
 *     without a second call) and encoded to UTF-8 here, which perf showed
 *     costs far less than V8's WriteUtf8. A Buffer or TypedArray key is read
 *     in place.
 *   - A value is copied by larder_get() into the environment's scratch Buffer
 *     (allocated by index.js and registered with setScratch), never into a new
 *     Buffer: a string value comes back as a string made here; other values
 *     come back as their length and index.js decodes them from the scratch.
 *   - mget() hashes and looks up the whole batch in one larder_get_batch(),
 *     packing the values back to back in the scratch with their lengths in
 *     the registered Int32Array.
 * A stored value is one tag byte (enum value_tag, chosen by index.js) and
 * the value's bytes.
 *
 * Lifetime (each rule keeps a JavaScript mistake from becoming a crash):
 *   H1. A handle holds one registry reference from open until close(), the
 *       garbage collection of all its functions, or its environment's
 *       teardown, whichever is first (handle_release is idempotent). Every
 *       operation checks h->cache, so calls after close throw.
 *   H2. A handle is used by the one JavaScript thread of its environment;
 *       other workers hold their own handles and references (registry.c), so
 *       a close in one worker never frees memory another is reading.
 *   H3. The maintainer reaches a handle only through its subscription, and
 *       only between subscribe and unsubscribe; unsubscribe comes before the
 *       thread-safe function is released or finalised.
 *   H4. A handle's memory is freed once its functions are collected, its
 *       reference is released and its thread-safe function is finalised, in
 *       whatever order Node runs those finalisers.
 *   H5. No operation starts while an mget or mset of this thread reads array
 *       elements (a getter could run JavaScript that reuses the buffers being
 *       filled): it throws ERR_LARDER_REENTRANT instead.
 *
 * Two operations exist for benchmarks only: probe() (the crossing without
 * the engine) and engineLoop() (the engine in a C loop in this process).
 *
 * Never done here: a Node-API call inside a larder read section (values are
 * copied out first), so a garbage collection cannot run JavaScript while a
 * read section delays the maintainer.
 */
#include <math.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <node_api.h>

#include "dispose_queue.h"
#include "larder.h"
#include "registry.h"

/* The first byte of every stored value (index.js mirrors these). */
enum value_tag {
	TAG_BYTES = 0,  /* a Buffer, TypedArray or DataView: raw bytes */
	TAG_STRING = 1, /* a string, UTF-8 */
	TAG_JSON = 2,   /* the JSON serializer's string, UTF-8 */
	TAG_CUSTOM = 3, /* bytes from the handle's serializer (v8 or the caller's) */
	TAG_COUNT
};

/* Grown on demand; the initial sizes cover the common case without a realloc. */
#define IN_INITIAL (64u * 1024u)
#define TRUNCATION_SLACK 4u /* UTF-8 truncation drops at most 3 bytes, plus the NUL */
#define EXPECTED_DEFAULT 4096u /* the index's sizing hint without `max` (the engine's default) */
#define K16_VALUES 4096u /* string values up to this many units go the UTF-16 way */
#define IN_PLACE SIZE_MAX /* batch_offs: a Buffer key, read where it is */

struct handle;

/* Per JavaScript environment (the main thread or one worker). */
struct env_data {
	struct handle *handles; /* handles not yet freed */
	int reading_elements;   /* mget/mset are reading array elements (getters may run) */
	char *keys;             /* encoded keys: one for single ops, packed for mget */
	size_t keys_cap;
	uint16_t *k16; /* a string key's (or short value's) UTF-16 units, before encoding */
	size_t k16_cap;
	uint8_t *in; /* a value being written: tag, then bytes */
	size_t in_cap;
	uint8_t *out; /* the scratch Buffer's bytes (index.js owns it) */
	size_t out_cap;
	napi_ref out_ref;
	int32_t *meta; /* mget: the value length per key, 0 for a miss */
	size_t meta_cap;
	napi_ref meta_ref;
	const void **batch_keys; /* mget: each key's bytes */
	size_t *batch_lens;
	size_t *batch_offs; /* mget: a string key's offset in keys, or IN_PLACE */
	size_t batch_cap;
};

struct handle {
	struct env_data *ed;         /* NULL once the environment is torn down */
	struct lnode_shared *shared; /* NULL once released (H1) */
	larder *cache;               /* NULL once closed: the check every op makes */
	size_t max_key;              /* the cache's max_key_bytes */
	size_t max_value;            /* the engine's max_value_bytes (tag byte included) */
	uint64_t capacity;           /* for messages about the 1/8 entry limit */
	unsigned fns;                /* live functions carrying this handle (H4) */
	int subscribed;              /* in the cache's listener fan-out (H3) */
	int has_queue;               /* sub.queue initialised */
	int tsfn_released;           /* napi_release_threadsafe_function done */
	napi_threadsafe_function tsfn; /* dispose delivery; NULL when none or finalised */
	struct lnode_sub sub;
	uint8_t *taken; /* the consumer's half of the dispose queue */
	size_t taken_cap;
	struct handle *prev, *next; /* ed->handles */
};

/* ---- Errors ------------------------------------------------------------- */

enum err_kind { ERR_PLAIN, ERR_TYPE, ERR_RANGE };

static napi_value throw_fmt(napi_env env, enum err_kind kind, const char *code, const char *fmt,
			    ...) __attribute__((format(printf, 4, 5)));

/* Throws an Error, TypeError or RangeError; returns NULL for the caller to return. */
static napi_value throw_fmt(napi_env env, enum err_kind kind, const char *code, const char *fmt,
			    ...)
{
	char msg[256];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (kind == ERR_TYPE)
		napi_throw_type_error(env, code, msg);
	else if (kind == ERR_RANGE)
		napi_throw_range_error(env, code, msg);
	else
		napi_throw_error(env, code, msg);
	return NULL;
}

/* Throws for a larder error code returned by a write. */
static napi_value throw_larder(napi_env env, const struct handle *h, int rc, size_t value_len)
{
	switch (rc) {
	case LARDER_EKEYSIZE:
		return throw_fmt(env, ERR_RANGE, "ERR_OUT_OF_RANGE", "key is longer than maxKeyBytes (%zu)",
				 h->max_key);
	case LARDER_EVALSIZE:
		return throw_fmt(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
				 "value of %zu bytes does not fit: maxValueBytes is %zu and an entry "
				 "may take at most 1/8 of maxSize (%llu bytes)",
				 value_len, h->max_value - 1, (unsigned long long)h->capacity);
	case LARDER_EBUSY:
		return throw_fmt(env, ERR_PLAIN, "ERR_LARDER_BUSY",
				 "larder: the cache is at its memory bound and no room was freed in "
				 "time (EBUSY)");
	case LARDER_ENOMEM:
		return throw_fmt(env, ERR_PLAIN, "ERR_LARDER_NOMEM", "larder: out of memory (ENOMEM)");
	default:
		return throw_fmt(env, ERR_PLAIN, "ERR_LARDER", "larder: %s (%d)", larder_strerror(rc), rc);
	}
}

/*
 * The check every operation starts with: the handle is open, and no mget or
 * mset of this thread is reading array elements (an element's getter that
 * called back into larder would reuse the buffers that call is filling).
 */
static int handle_open(napi_env env, const struct handle *h)
{
	if (h->cache == NULL) {
		throw_fmt(env, ERR_PLAIN, "ERR_LARDER_CLOSED", "larder: the cache is closed");
		return 0;
	}
	if (h->ed->reading_elements) {
		throw_fmt(env, ERR_PLAIN, "ERR_LARDER_REENTRANT",
			  "larder: an array element's getter called back into larder during mget/mset");
		return 0;
	}
	return 1;
}

/* ---- Buffers ------------------------------------------------------------ */

/* Grows *buf to at least need bytes (doubling); 0 on out of memory. */
static int grow(void *bufp, size_t *cap, size_t need, size_t elem)
{
	void **buf = bufp;
	size_t n = *cap ? *cap : 64;
	void *p;

	if (need <= *cap)
		return 1;
	while (n < need)
		n *= 2;
	p = realloc(*buf, n * elem);
	if (p == NULL)
		return 0;
	*buf = p;
	*cap = n;
	return 1;
}

static napi_value throw_nomem(napi_env env)
{
	return throw_fmt(env, ERR_PLAIN, "ERR_LARDER_NOMEM", "larder: out of memory");
}

/* ---- Arguments ---------------------------------------------------------- */

static size_t typedarray_elem_bytes(napi_typedarray_type type)
{
	switch (type) {
	case napi_int16_array:
	case napi_uint16_array:
		return 2;
	case napi_int32_array:
	case napi_uint32_array:
	case napi_float32_array:
		return 4;
	case napi_float64_array:
	case napi_bigint64_array:
	case napi_biguint64_array:
		return 8;
	default:
		return 1;
	}
}

/*
 * The bytes of a Buffer, TypedArray or DataView; 0 for anything else.
 * Checks the type first: napi_get_buffer_info() on another value aborts the
 * process in Node 18.
 */
static int view_bytes(napi_env env, napi_value v, void **data, size_t *len)
{
	napi_typedarray_type type;
	napi_value ab;
	size_t count, off;
	bool is;

	if (napi_is_typedarray(env, v, &is) == napi_ok && is) {
		if (napi_get_typedarray_info(env, v, &type, &count, data, &ab, &off) != napi_ok)
			return 0;
		*len = count * typedarray_elem_bytes(type);
		return 1;
	}
	if (napi_is_dataview(env, v, &is) == napi_ok && is)
		return napi_get_dataview_info(env, v, len, data, &ab, &off) == napi_ok;
	return 0;
}

/*
 * Encodes n UTF-16 units as UTF-8 into out (room for 3 bytes per unit), the
 * way V8's String::WriteUtf8 does for napi_get_value_string_utf8 (a lone
 * surrogate becomes U+FFFD), so a key has the same bytes on every path.
 * Returns the bytes written. Reading the units and encoding them here costs
 * less than WriteUtf8 (a third of a get's time when profiled).
 */
static size_t utf16_to_utf8(const uint16_t *u, size_t n, uint8_t *out)
{
	uint8_t *o = out;
	size_t i = 0;

	while (i < n) {
		uint32_t c = u[i++];

		if (c < 0x80) {
			*o++ = (uint8_t)c;
			continue;
		}
		if (c < 0x800) {
			*o++ = (uint8_t)(0xc0 | (c >> 6));
			*o++ = (uint8_t)(0x80 | (c & 0x3f));
			continue;
		}
		if (c >= 0xd800 && c <= 0xdbff && i < n && u[i] >= 0xdc00 && u[i] <= 0xdfff) {
			c = 0x10000 + ((c - 0xd800) << 10) + (u[i++] - 0xdc00);
			*o++ = (uint8_t)(0xf0 | (c >> 18));
			*o++ = (uint8_t)(0x80 | ((c >> 12) & 0x3f));
			*o++ = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
			*o++ = (uint8_t)(0x80 | (c & 0x3f));
			continue;
		}
		if (c >= 0xd800 && c <= 0xdfff)
			c = 0xfffd;
		*o++ = (uint8_t)(0xe0 | (c >> 12));
		*o++ = (uint8_t)(0x80 | ((c >> 6) & 0x3f));
		*o++ = (uint8_t)(0x80 | (c & 0x3f));
	}
	return (size_t)(o - out);
}

/*
 * Reads a key: a string (UTF-8 into ed->keys + at) or an ArrayBufferView
 * (in place). Throws TypeError or RangeError and returns 0 when it is not a
 * key of 1..max_key bytes. The caller ensured keys_cap >= at + 3 * max_key
 * + 8 and k16_cap >= max_key + 2.
 */
static int key_arg(napi_env env, const struct handle *h, napi_value v, size_t at,
		   const void **key, size_t *len)
{
	struct env_data *ed = h->ed;
	napi_status st;
	size_t units;
	void *data;

	/* max_key + 1 units fit: more units than max_key means more bytes too. */
	st = napi_get_value_string_utf16(env, v, (char16_t *)ed->k16, h->max_key + 2, &units);
	if (st == napi_ok) {
		if (units > h->max_key)
			goto fail_long;
		*len = utf16_to_utf8(ed->k16, units, (uint8_t *)ed->keys + at);
		*key = ed->keys + at;
	} else if (st == napi_string_expected && view_bytes(env, v, &data, len)) {
		*key = data;
	} else {
		throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
			  "key must be a string, a Buffer or a TypedArray");
		return 0;
	}
	if (*len == 0) {
		throw_fmt(env, ERR_RANGE, "ERR_OUT_OF_RANGE", "key is empty: keys are 1..%zu bytes",
			  h->max_key);
		return 0;
	}
	if (*len > h->max_key)
		goto fail_long;
	return 1;

fail_long:
	throw_fmt(env, ERR_RANGE, "ERR_OUT_OF_RANGE", "key is longer than maxKeyBytes (%zu)", h->max_key);
	return 0;
}

/* The single-key prologue: the handle, its key, and argv[1..]. */
static int single_key(napi_env env, napi_callback_info info, size_t want, napi_value *argv,
		      struct handle **hp, const void **key, size_t *len)
{
	size_t argc = want;
	struct handle *h;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&h) != napi_ok)
		return 0;
	*hp = h;
	return handle_open(env, h) && key_arg(env, h, argv[0], 0, key, len);
}

/*
 * Reads a value into ed->in + at as tag + bytes; *len includes the tag.
 * The caller ensured in_cap > at.
 */
static int value_arg(napi_env env, const struct handle *h, napi_value v, napi_value tagv,
		     size_t at, size_t *len)
{
	struct env_data *ed = h->ed;
	uint32_t tag;
	size_t n;
	void *data;

	if (napi_get_value_uint32(env, tagv, &tag) != napi_ok || tag >= TAG_COUNT) {
		throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "larder: bad value tag");
		return 0;
	}
	if (tag == TAG_STRING || tag == TAG_JSON) {
		size_t units;

		/* Short strings: through UTF-16 units, as keys are (see key_arg). */
		if (napi_get_value_string_utf16(env, v, (char16_t *)ed->k16, ed->k16_cap, &units) !=
		    napi_ok)
			goto fail_type;
		if (units + 1 < ed->k16_cap && at + 1 + 3 * units <= ed->in_cap) {
			n = utf16_to_utf8(ed->k16, units, ed->in + at + 1);
		} else if (napi_get_value_string_utf8(env, v, (char *)ed->in + at + 1,
						      ed->in_cap - at - 1, &n) != napi_ok) {
			goto fail_type;
		}
		if (n + TRUNCATION_SLACK >= ed->in_cap - at - 1) {
			/* Possibly truncated: measure, make room, encode again. */
			if (napi_get_value_string_utf8(env, v, NULL, 0, &n) != napi_ok)
				goto fail_type;
			if (n + 1 > h->max_value)
				goto fail_range;
			if (!grow(&ed->in, &ed->in_cap, at + n + 2 + TRUNCATION_SLACK, 1)) {
				throw_nomem(env);
				return 0;
			}
			if (napi_get_value_string_utf8(env, v, (char *)ed->in + at + 1,
						       ed->in_cap - at - 1, &n) != napi_ok)
				goto fail_type;
		}
	} else {
		if (!view_bytes(env, v, &data, &n))
			goto fail_type;
		if (n + 1 > h->max_value)
			goto fail_range;
		if (!grow(&ed->in, &ed->in_cap, at + n + 1, 1)) {
			throw_nomem(env);
			return 0;
		}
		if (n)
			memcpy(ed->in + at + 1, data, n);
	}
	if (n + 1 > h->max_value)
		goto fail_range;
	ed->in[at] = (uint8_t)tag;
	*len = n + 1;
	return 1;

fail_type:
	throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "value does not match its type tag");
	return 0;
fail_range:
	throw_fmt(env, ERR_RANGE, "ERR_OUT_OF_RANGE", "value of %zu bytes is over maxValueBytes (%zu)", n,
		  h->max_value - 1);
	return 0;
}

/* ttl argument: -1 the cache's default, 0 never, otherwise milliseconds. */
static int ttl_arg(napi_env env, napi_value v, uint64_t *ttl_ms)
{
	double d;

	if (napi_get_value_double(env, v, &d) != napi_ok || isnan(d) || d < -1) {
		throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "ttl must be a number of milliseconds");
		return 0;
	}
	if (d < 0)
		*ttl_ms = LARDER_TTL_DEFAULT;
	else if (d == 0 || d >= 1.8e19)
		*ttl_ms = LARDER_TTL_NEVER;
	else
		*ttl_ms = d < 1 ? 1 : (uint64_t)d;
	return 1;
}

static napi_value make_bool(napi_env env, int b)
{
	napi_value r;

	napi_get_boolean(env, b, &r);
	return r;
}

static napi_value make_double(napi_env env, double d)
{
	napi_value r;

	napi_create_double(env, d, &r);
	return r;
}

/* Whether every byte is below 0x80: such bytes are the same text in Latin-1. */
static int is_ascii(const uint8_t *p, size_t n)
{
	uint64_t acc = 0, w;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		acc |= w;
	}
	for (; i < n; i++)
		acc |= p[i];
	return (acc & 0x8080808080808080ull) == 0;
}

/* A string from UTF-8 bytes; ASCII takes V8's cheaper one-byte path. */
static napi_value make_string(napi_env env, const uint8_t *p, size_t n)
{
	napi_value r;

	if (is_ascii(p, n))
		napi_create_string_latin1(env, (const char *)p, n, &r);
	else
		napi_create_string_utf8(env, (const char *)p, n, &r);
	return r;
}

/* ---- Operations ----------------------------------------------------------- */

/*
 * get(key): undefined on a miss; a string for a string value; otherwise the
 * stored length (tag included) with the bytes in the scratch, or minus the
 * length needed when the scratch is too small (index.js grows it, retries).
 */
static napi_value op_get(napi_env env, napi_callback_info info)
{
	napi_value argv[1], r;
	struct handle *h;
	const void *key;
	size_t key_len, len;
	int rc;

	if (!single_key(env, info, 1, argv, &h, &key, &key_len))
		return NULL;
	rc = larder_get(h->cache, key, key_len, h->ed->out, h->ed->out_cap, &len);
	if (rc == LARDER_MISS)
		return NULL;
	if (rc == LARDER_EBUFSIZE)
		return make_double(env, -(double)len);
	if (rc != LARDER_OK)
		return throw_larder(env, h, rc, 0);
	if (len > 0 && h->ed->out[0] == TAG_STRING)
		return make_string(env, h->ed->out + 1, len - 1);
	napi_create_uint32(env, (uint32_t)len, &r);
	return r;
}

/*
 * probe(key): the crossing alone, for benchmarks: everything get() does
 * (arguments, handle check, key encoding, making the result string from the
 * scratch) except the engine call. The string is whatever the scratch holds
 * after a get of a string value of the same length (index.js's caller
 * arranges that), so the result costs what get's does.
 */
static napi_value op_probe(napi_env env, napi_callback_info info)
{
	napi_value argv[2];
	struct handle *h;
	const void *key;
	size_t key_len;
	uint32_t len;

	if (!single_key(env, info, 2, argv, &h, &key, &key_len) ||
	    napi_get_value_uint32(env, argv[1], &len) != napi_ok)
		return NULL;
	if (len == 0 || len > h->ed->out_cap)
		return NULL;
	return make_string(env, h->ed->out + 1, len - 1);
}

/* set(key, value, tag, ttl): undefined, or throws. */
static napi_value op_set(napi_env env, napi_callback_info info)
{
	napi_value argv[4];
	struct handle *h;
	const void *key;
	size_t key_len, len;
	uint64_t ttl;
	int rc;

	if (!single_key(env, info, 4, argv, &h, &key, &key_len) ||
	    !value_arg(env, h, argv[1], argv[2], 0, &len) || !ttl_arg(env, argv[3], &ttl))
		return NULL;
	rc = larder_put(h->cache, key, key_len, h->ed->in, len, ttl);
	if (rc != LARDER_OK)
		return throw_larder(env, h, rc, len - 1);
	return NULL;
}

static napi_value op_has(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	struct handle *h;
	const void *key;
	size_t key_len;

	if (!single_key(env, info, 1, argv, &h, &key, &key_len))
		return NULL;
	return make_bool(env, larder_contains(h->cache, key, key_len) == LARDER_OK);
}

static napi_value op_delete(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	struct handle *h;
	const void *key;
	size_t key_len;
	int rc;

	if (!single_key(env, info, 1, argv, &h, &key, &key_len))
		return NULL;
	rc = larder_remove(h->cache, key, key_len);
	if (rc < 0)
		return throw_larder(env, h, rc, 0);
	return make_bool(env, rc == LARDER_OK);
}

/* ttl(key): 0 on a miss, Infinity for no deadline, else milliseconds left. */
static napi_value op_ttl(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	struct handle *h;
	const void *key;
	size_t key_len;
	uint64_t ttl;
	int rc;

	if (!single_key(env, info, 1, argv, &h, &key, &key_len))
		return NULL;
	rc = larder_ttl_remaining(h->cache, key, key_len, &ttl);
	if (rc != LARDER_OK)
		return make_double(env, 0);
	return make_double(env, ttl == LARDER_TTL_NEVER ? INFINITY : (double)ttl);
}

static struct handle *bare_handle(napi_env env, napi_callback_info info, size_t *argc,
				  napi_value *argv)
{
	struct handle *h;

	if (napi_get_cb_info(env, info, argc, argv, NULL, (void **)&h) != napi_ok)
		return NULL;
	return handle_open(env, h) ? h : NULL;
}

/*
 * engineLoop(keys, order): for benchmarks, the engine alone inside this
 * process: encodes the string keys once, then times larder_get() in a C
 * loop over keys[order[i]] (values copied into the scratch, as get does).
 * Returns nanoseconds per get. Beside get() and probe() it splits a get's
 * time into crossing, engine, and what V8's traffic between gets adds.
 */
static napi_value op_engine_loop(napi_env env, napi_callback_info info)
{
	napi_value argv[2], v;
	size_t argc = 2, i, at = 0, len, count;
	struct handle *h = bare_handle(env, info, &argc, argv);
	struct env_data *ed;
	napi_typedarray_type type;
	struct timespec t0, t1;
	uint32_t n, *order;
	size_t *offs = NULL;
	char *arena = NULL;
	napi_value ab;
	long misses = 0;
	int ok = 0, bad_key = 0;

	if (h == NULL)
		return NULL;
	ed = h->ed;
	if (napi_get_array_length(env, argv[0], &n) != napi_ok || n == 0 ||
	    napi_get_typedarray_info(env, argv[1], &type, &count, (void **)&order, &ab, &at) !=
		    napi_ok ||
	    type != napi_uint32_array)
		return throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "engineLoop(keys, Uint32Array)");
	offs = malloc((n + 1) * sizeof(*offs));
	arena = malloc((size_t)n * (h->max_key + 1));
	if (offs == NULL || arena == NULL)
		goto out;
	at = 0;
	for (i = 0; i < n; i++) {
		if (napi_get_element(env, argv[0], (uint32_t)i, &v) != napi_ok ||
		    napi_get_value_string_utf8(env, v, arena + at, h->max_key + 1, &len) != napi_ok) {
			bad_key = 1;
			goto out;
		}
		offs[i] = at;
		at += len;
	}
	offs[n] = at;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < count; i++) {
		uint32_t k = order[i] % n;

		if (larder_get(h->cache, arena + offs[k], offs[k + 1] - offs[k], ed->out, ed->out_cap,
			       &len) != LARDER_OK)
			misses++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ok = 1;
out:
	free(offs);
	free(arena);
	if (!ok)
		return bad_key ? throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "engineLoop: string keys only")
			       : throw_nomem(env);
	if (misses)
		return throw_fmt(env, ERR_PLAIN, "ERR_LARDER", "engineLoop: %ld misses", misses);
	return make_double(env, ((double)(t1.tv_sec - t0.tv_sec) * 1e9 +
				 (double)(t1.tv_nsec - t0.tv_nsec)) /
					(double)(count ? count : 1));
}

static napi_value op_clear(napi_env env, napi_callback_info info)
{
	size_t argc = 0;
	struct handle *h = bare_handle(env, info, &argc, NULL);
	int rc;

	if (h == NULL)
		return NULL;
	rc = larder_clear(h->cache);
	if (rc != LARDER_OK)
		return throw_larder(env, h, rc, 0);
	return NULL;
}

/*
 * mget(keys, joined): looks the keys up in one larder_get_batch(). When
 * joined is a string, it is keys.join('') and meta[i] holds keys[i].length
 * (index.js checked every key is a string): if it encodes to exactly that
 * many bytes the keys are ASCII and are cut from it without touching the
 * array; otherwise each key is read from the array. Values are packed back
 * to back into the scratch with meta[i] = length (0: a miss). Returns minus
 * the scratch bytes needed when they do not fit; otherwise, when every
 * value byte is ASCII, the whole packed region as one string (index.js
 * takes substrings, which V8 makes without copying), else the number found.
 */
struct batch_out {
	uint8_t *out;
	size_t cap;
	size_t used;
	int32_t *meta;
};

static void batch_copy(void *ctx, size_t index, const void *value, size_t value_len)
{
	struct batch_out *b = ctx;

	b->meta[index] = (int32_t)value_len;
	if (b->used + value_len <= b->cap)
		memcpy(b->out + b->used, value, value_len);
	b->used += value_len;
}

/* Makes the mget arrays hold n keys. */
static int batch_reserve(struct env_data *ed, size_t n)
{
	size_t cap = ed->batch_cap, lens_cap = ed->batch_cap, offs_cap = ed->batch_cap;

	return grow(&ed->batch_keys, &cap, n, sizeof(*ed->batch_keys)) &&
	       grow(&ed->batch_lens, &lens_cap, cap, sizeof(*ed->batch_lens)) &&
	       grow(&ed->batch_offs, &offs_cap, cap, sizeof(*ed->batch_offs)) &&
	       (ed->batch_cap = cap, 1);
}

/* The ASCII fast path: cuts the keys from the joined string. 1 done, 0 not ASCII, -1 threw. */
static int batch_keys_joined(napi_env env, const struct handle *h, napi_value joined, size_t n)
{
	struct env_data *ed = h->ed;
	size_t total = 0, got, i, at = 0;

	for (i = 0; i < n; i++) {
		if (ed->meta[i] <= 0 || (size_t)ed->meta[i] > h->max_key)
			return 0; /* the slow path names the bad key */
		total += (size_t)ed->meta[i];
	}
	if (!grow(&ed->keys, &ed->keys_cap, total + 8, 1)) {
		throw_nomem(env);
		return -1;
	}
	if (napi_get_value_string_utf8(env, joined, ed->keys, ed->keys_cap, &got) != napi_ok ||
	    got != total)
		return 0;
	for (i = 0; i < n; i++) {
		ed->batch_keys[i] = ed->keys + at;
		ed->batch_lens[i] = (size_t)ed->meta[i];
		at += ed->batch_lens[i];
	}
	return 1;
}

/* Any keys: each read from the array. 1 done, -1 threw. */
static int batch_keys_each(napi_env env, const struct handle *h, napi_value arr, size_t n)
{
	struct env_data *ed = h->ed;
	size_t i, at = 0;
	napi_value v;
	napi_status st;

	for (i = 0; i < n; i++) {
		const void *key;

		if (!grow(&ed->keys, &ed->keys_cap, at + 3 * h->max_key + 8, 1)) {
			throw_nomem(env);
			return -1;
		}
		ed->reading_elements = 1;
		st = napi_get_element(env, arr, (uint32_t)i, &v);
		ed->reading_elements = 0;
		if (st != napi_ok || !key_arg(env, h, v, at, &key, &ed->batch_lens[i]))
			return -1;
		/* The arena may move while it grows: string keys are offsets until the end. */
		ed->batch_keys[i] = key;
		ed->batch_offs[i] = key == ed->keys + at ? at : IN_PLACE;
		if (ed->batch_offs[i] != IN_PLACE)
			at += ed->batch_lens[i];
	}
	for (i = 0; i < n; i++) {
		if (ed->batch_offs[i] != IN_PLACE)
			ed->batch_keys[i] = ed->keys + ed->batch_offs[i];
	}
	return 1;
}

static napi_value op_mget(napi_env env, napi_callback_info info)
{
	napi_value argv[2], r;
	size_t argc = 2;
	struct handle *h = bare_handle(env, info, &argc, argv);
	struct batch_out b;
	struct env_data *ed;
	napi_valuetype type;
	uint32_t n;
	long found;
	int rc = 0;

	if (h == NULL)
		return NULL;
	ed = h->ed;
	if (napi_get_array_length(env, argv[0], &n) != napi_ok)
		return throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "keys must be an array");
	if (n > ed->meta_cap)
		return throw_fmt(env, ERR_PLAIN, "ERR_LARDER", "larder: mget scratch not registered");
	if (n == 0)
		return make_double(env, 0);
	if (!batch_reserve(ed, n))
		return throw_nomem(env);
	napi_typeof(env, argv[1], &type);
	if (type == napi_string)
		rc = batch_keys_joined(env, h, argv[1], n);
	if (rc == 0)
		rc = batch_keys_each(env, h, argv[0], n);
	if (rc < 0)
		return NULL;
	if (h->cache == NULL) /* an element's getter closed the handle */
		return throw_fmt(env, ERR_PLAIN, "ERR_LARDER_CLOSED", "larder: the cache is closed");
	memset(ed->meta, 0, n * sizeof(*ed->meta));
	b = (struct batch_out){ .out = ed->out, .cap = ed->out_cap, .used = 0, .meta = ed->meta };
	found = larder_get_batch(h->cache, n, ed->batch_keys, ed->batch_lens, batch_copy, &b);
	if (found < 0)
		return throw_larder(env, h, (int)found, 0);
	if (b.used > b.cap)
		return make_double(env, -(double)b.used);
	if (b.used > 0 && is_ascii(b.out, b.used)) {
		napi_create_string_latin1(env, (const char *)b.out, b.used, &r);
		return r;
	}
	return make_double(env, (double)found);
}

/* mset(keys, values, tags, ttl): stores in order; throws at the first failure. */
static napi_value op_mset(napi_env env, napi_callback_info info)
{
	napi_value argv[4], k, v, t;
	size_t argc = 4;
	struct handle *h = bare_handle(env, info, &argc, argv);
	const void *key;
	size_t key_len, len;
	uint32_t n, i;
	uint64_t ttl;
	int rc;

	if (h == NULL)
		return NULL;
	if (napi_get_array_length(env, argv[0], &n) != napi_ok || !ttl_arg(env, argv[3], &ttl))
		return throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "entries must be an array");
	for (i = 0; i < n; i++) {
		napi_status st;

		h->ed->reading_elements = 1;
		st = napi_get_element(env, argv[0], i, &k);
		if (st == napi_ok)
			st = napi_get_element(env, argv[1], i, &v);
		if (st == napi_ok)
			st = napi_get_element(env, argv[2], i, &t);
		h->ed->reading_elements = 0;
		if (st != napi_ok)
			return NULL;
		if (h->cache == NULL) /* a getter closed the handle */
			return throw_fmt(env, ERR_PLAIN, "ERR_LARDER_CLOSED", "larder: the cache is closed");
		if (!key_arg(env, h, k, 0, &key, &key_len) || !value_arg(env, h, v, t, 0, &len))
			return NULL;
		rc = larder_put(h->cache, key, key_len, h->ed->in, len, ttl);
		if (rc != LARDER_OK)
			return throw_larder(env, h, rc, len - 1);
	}
	return NULL;
}

/* stats(): the engine's counters as an object of numbers. */
static napi_value op_stats(napi_env env, napi_callback_info info)
{
	uint64_t values[LARDER_STAT_COUNT];
	size_t argc = 0, i;
	struct handle *h = bare_handle(env, info, &argc, NULL);
	napi_value obj;

	if (h == NULL)
		return NULL;
	if (larder_stats(h->cache, values, LARDER_STAT_COUNT) != LARDER_OK)
		return throw_fmt(env, ERR_PLAIN, "ERR_LARDER", "larder: stats failed");
	napi_create_object(env, &obj);
	for (i = 0; i < LARDER_STAT_COUNT; i++)
		napi_set_named_property(env, obj, larder_stat_name((enum larder_stat)i),
					make_double(env, (double)values[i]));
	if (h->has_queue)
		napi_set_named_property(env, obj, "dispose_dropped",
					make_double(env, (double)lnode_dq_dropped(&h->sub.queue)));
	return obj;
}

static void set_number(napi_env env, napi_value obj, const char *name, double d)
{
	napi_set_named_property(env, obj, name, make_double(env, d));
}

/* settings(): the settings the cache was opened with (a joined cache's, not the caller's). */
static napi_value op_settings(napi_env env, napi_callback_info info)
{
	size_t argc = 0;
	struct handle *h = bare_handle(env, info, &argc, NULL);
	const struct lnode_settings *s;
	napi_value obj;

	if (h == NULL)
		return NULL;
	s = lnode_shared_settings(h->shared);
	napi_create_object(env, &obj);
	set_number(env, obj, "maxSize", (double)s->capacity_bytes);
	set_number(env, obj, "max", (double)s->max_entries);
	set_number(env, obj, "ttl", s->default_ttl_ms == LARDER_TTL_NEVER ? 0 : (double)s->default_ttl_ms);
	set_number(env, obj, "maxKeyBytes", (double)s->max_key_bytes);
	set_number(env, obj, "maxValueBytes", (double)(s->max_value_bytes - 1));
	set_number(env, obj, "policy", (double)s->policy);
	napi_set_named_property(env, obj, "updateAgeOnGet",
				make_bool(env, s->expiry == LARDER_EXPIRE_AFTER_ACCESS));
	return obj;
}

static napi_value op_set_capacity(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	size_t argc = 1;
	struct handle *h = bare_handle(env, info, &argc, argv);
	double d;

	if (h == NULL)
		return NULL;
	if (napi_get_value_double(env, argv[0], &d) != napi_ok || !(d >= 65536) || d > 1.8e19)
		return throw_fmt(env, ERR_RANGE, "ERR_OUT_OF_RANGE", "maxSize must be at least 65536 bytes");
	if (larder_set_capacity(h->cache, (uint64_t)d) != LARDER_OK)
		return throw_fmt(env, ERR_RANGE, "ERR_OUT_OF_RANGE", "larder: capacity refused");
	h->capacity = (uint64_t)d;
	return NULL;
}

/* ---- Handle lifetime (H1-H4) ------------------------------------------- */

static void handle_release(struct handle *h)
{
	if (h->shared == NULL)
		return;
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
	napi_value argv[2], undef;

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
	/* An exception from dispose surfaces as Node reports any callback's. */
	napi_call_function(env, undef, js_cb, 2, argv, NULL);
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

static void env_finalize(napi_env env, void *data, void *hint)
{
	struct env_data *ed = data;
	struct handle *h, *next;

	(void)env;
	(void)hint;
	for (h = ed->handles; h != NULL; h = next) {
		next = h->next;
		handle_release(h);
		h->ed = NULL;
		h->prev = h->next = NULL;
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

static int add_fn(napi_env env, napi_value obj, const char *name, napi_callback cb,
		  struct handle *h)
{
	napi_value fn;

	if (napi_create_function(env, name, NAPI_AUTO_LENGTH, cb, h, &fn) != napi_ok)
		return 0;
	if (napi_add_finalizer(env, fn, h, fn_finalize, NULL, NULL) != napi_ok)
		return 0;
	h->fns++;
	return napi_set_named_property(env, obj, name, fn) == napi_ok;
}

static const struct {
	const char *name;
	napi_callback cb;
} handle_ops[] = {
	{ "get", op_get },	   { "set", op_set },	  { "has", op_has },
	{ "delete", op_delete },   { "ttl", op_ttl },	  { "clear", op_clear },
	{ "mget", op_mget },	   { "mset", op_mset },	  { "stats", op_stats },
	{ "setCapacity", op_set_capacity }, { "close", op_close }, { "probe", op_probe },
	{ "settings", op_settings },
	{ "engineLoop", op_engine_loop },
};

/*
 * open(name | null, capacity, maxEntries, ttl, maxKey, maxValue, policy, expiry,
 *      given, deliver | null, queueBytes) -> { get, set, ... }
 */
static napi_value mod_open(napi_env env, napi_callback_info info)
{
	napi_value argv[11], obj, resource;
	size_t argc = 11, i, name_len;
	struct env_data *ed;
	struct lnode_settings s;
	struct handle *h;
	uint64_t u[8];
	char name[256];
	const char *mismatch;
	napi_valuetype type;
	int rc, has_name;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok ||
	    napi_get_instance_data(env, (void **)&ed) != napi_ok)
		return NULL;
	napi_typeof(env, argv[0], &type);
	has_name = type == napi_string;
	if (has_name && (napi_get_value_string_utf8(env, argv[0], name, sizeof name, &name_len) !=
				 napi_ok ||
			 name_len == 0 || name_len >= sizeof name - 1))
		return throw_fmt(env, ERR_RANGE, "ERR_OUT_OF_RANGE", "name must be 1..254 bytes");
	for (i = 0; i < 8; i++) {
		if (!arg_u64(env, argv[1 + i], &u[i]))
			return throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "larder: bad open argument %zu",
					 i + 1);
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
	};
	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return throw_nomem(env);
	rc = lnode_registry_open(&h->shared, has_name ? name : NULL, &s, (unsigned)u[7], &mismatch);
	if (rc != LARDER_OK) {
		free(h);
		if (rc == LNODE_EMISMATCH)
			return throw_fmt(env, ERR_PLAIN, "ERR_LARDER_MISMATCH",
					 "larder: cache '%s' is already open with another %s", name,
					 mismatch);
		if (rc == LARDER_EINVAL)
			return throw_fmt(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
					 "larder: an option is out of range (maxSize >= 65536, "
					 "maxKeyBytes 1..65535, maxValueBytes < 1 GiB)");
		return throw_fmt(env, ERR_PLAIN, "ERR_LARDER", "larder: cannot open the cache: %s (%d)",
				 larder_strerror(rc), rc);
	}
	h->cache = lnode_shared_cache(h->shared);
	h->max_key = lnode_shared_settings(h->shared)->max_key_bytes;
	h->max_value = lnode_shared_settings(h->shared)->max_value_bytes;
	h->capacity = lnode_shared_settings(h->shared)->capacity_bytes;
	h->ed = ed;
	h->next = ed->handles;
	if (ed->handles != NULL)
		ed->handles->prev = h;
	ed->handles = h;
	if (!grow(&ed->keys, &ed->keys_cap, 3 * h->max_key + 8, 1) ||
	    !grow(&ed->k16, &ed->k16_cap, (h->max_key > K16_VALUES ? h->max_key : K16_VALUES) + 2,
		  sizeof(*ed->k16)) ||
	    !grow(&ed->in, &ed->in_cap, IN_INITIAL, 1))
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
	if (napi_create_object(env, &obj) != napi_ok)
		goto fail;
	for (i = 0; i < sizeof handle_ops / sizeof handle_ops[0]; i++) {
		if (!add_fn(env, obj, handle_ops[i].name, handle_ops[i].cb, h))
			goto fail;
	}
	return obj;

fail:
	/* Functions already made keep h until they are collected (H4). */
	handle_release(h);
	handle_maybe_free(h);
	return throw_nomem(env);
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
	if (!view_bytes(env, argv[0], &data, &len))
		return throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "scratch must be a Buffer");
	if (napi_get_typedarray_info(env, argv[1], &type, &ed->meta_cap, (void **)&ed->meta, &ab,
				     &off) != napi_ok ||
	    type != napi_int32_array)
		return throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "meta must be an Int32Array");
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

static napi_value mod_open_caches(napi_env env, napi_callback_info info)
{
	(void)info;
	return make_double(env, (double)lnode_registry_open_count());
}

static napi_value mod_refs(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	size_t argc = 1, len;
	char name[256];

	if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok)
		return NULL;
	if (napi_get_value_string_utf8(env, argv[0], name, sizeof name, &len) != napi_ok)
		return throw_fmt(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "name must be a string");
	return make_double(env, (double)lnode_registry_refs(name));
}

/* The engine's figures index.js needs for its limits and messages. */
static napi_value mod_limits(napi_env env, napi_callback_info info)
{
	napi_value obj;

	(void)info;
	napi_create_object(env, &obj);
	napi_set_named_property(env, obj, "keyLimit", make_double(env, LARDER_KEY_LIMIT));
	napi_set_named_property(env, obj, "valueLimit", make_double(env, (double)LARDER_VALUE_LIMIT));
	return obj;
}

static napi_value init(napi_env env, napi_value exports)
{
	static const struct {
		const char *name;
		napi_callback cb;
	} fns[] = {
		{ "open", mod_open },
		{ "setScratch", mod_set_scratch },
		{ "openCaches", mod_open_caches },
		{ "refs", mod_refs },
		{ "limits", mod_limits },
	};
	struct env_data *ed = calloc(1, sizeof(*ed));
	napi_value fn;
	size_t i;

	if (ed == NULL || napi_set_instance_data(env, ed, env_finalize, NULL) != napi_ok) {
		free(ed);
		throw_nomem(env);
		return NULL;
	}
	for (i = 0; i < sizeof fns / sizeof fns[0]; i++) {
		if (napi_create_function(env, fns[i].name, NAPI_AUTO_LENGTH, fns[i].cb, NULL, &fn) !=
			    napi_ok ||
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
