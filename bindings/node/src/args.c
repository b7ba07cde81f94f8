/*
 * args.c - the Node binding's side of the crossing that every operation
 * shares: reading a handle, a key, a value and a ttl out of JavaScript
 * arguments, making numbers and strings to return, and throwing the errors
 * the API documents (TypeError, RangeError naming the limit, Error with a
 * code).
 *
 * Keys cost one Node-API call: a string's UTF-16 units are copied out into a
 * per-environment buffer of max_key_bytes + 2 units (a longer key shows as
 * too long without a second call) and encoded to UTF-8: an ASCII key of up
 * to 16 units with one test and one store, inline in each operation
 * (lnode_key_arg, binding.h), any other here (lnode_key_finish: eight units
 * at a time with SSE2), which perf showed costs far less than V8's
 * String::WriteUtf8; the encoding matches
 * WriteUtf8's (a lone surrogate becomes U+FFFD), so a key has the same
 * bytes on every path. A Buffer, TypedArray or DataView key is read in place,
 * after its type is checked (Node 18's napi_get_buffer_info aborts on other
 * values). A string or JSON value written here gets TAG_ASCII in its tag
 * when its UTF-8 is all ASCII, which reads then trust instead of scanning.
 */
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "binding.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ---- Errors ------------------------------------------------------------- */

/* Throws an Error, TypeError or RangeError; returns NULL for the caller to return. */
napi_value lnode_throw(napi_env env, enum err_kind kind, const char *code, const char *fmt, ...)
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
napi_value lnode_throw_larder(napi_env env, const struct handle *h, int rc, size_t value_len)
{
	uint64_t stats[LARDER_STAT_CAPACITY_BYTES + 1] = {0};

	switch (rc) {
	case LARDER_EKEYSIZE:
		return lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
				   "key is longer than maxKeyBytes (%zu)", h->max_key);
	case LARDER_EVALSIZE:
		/* The capacity now: `max`, a pool or another worker may have moved it. */
		if (larder_stats(h->cache, stats, LARDER_STAT_CAPACITY_BYTES + 1) != LARDER_OK)
			stats[LARDER_STAT_CAPACITY_BYTES] = 0;
		return lnode_throw(
			env, ERR_RANGE, "ERR_OUT_OF_RANGE",
			"value of %zu bytes does not fit: maxValueBytes is %zu and an entry "
			"may take at most 1/8 of the capacity (%llu bytes)",
			value_len, h->max_value - 1,
			(unsigned long long)stats[LARDER_STAT_CAPACITY_BYTES]);
	case LARDER_EBUSY:
		return lnode_throw(
			env, ERR_PLAIN, "ERR_LARDER_BUSY",
			"larder: the cache is at its memory bound and no room was freed within "
			"writeWaitMs (%llu ms; EBUSY)",
			(unsigned long long)lnode_shared_settings(h->shared)->write_wait_ms);
	case LARDER_ENOMEM:
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER_NOMEM",
				   "larder: out of memory (ENOMEM)");
	default:
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER", "larder: %s (%d)",
				   larder_strerror(rc), rc);
	}
}

/* The errors of lnode_handle_open (binding.h), out of line. */
int lnode_handle_unusable(napi_env env, const struct handle *h)
{
	if (h->cache == NULL) {
		lnode_throw(env, ERR_PLAIN, "ERR_LARDER_CLOSED", "larder: the cache is closed");
		return 0;
	}
	lnode_throw(env, ERR_PLAIN, "ERR_LARDER_REENTRANT",
		    "larder: an array element's getter called back into larder during mget/mset");
	return 0;
}

/* ---- Buffers ------------------------------------------------------------ */

/* Grows *buf to at least need bytes (doubling); 0 on out of memory. */
int lnode_grow(void *bufp, size_t *cap, size_t need, size_t elem)
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

napi_value lnode_throw_nomem(napi_env env)
{
	return lnode_throw(env, ERR_PLAIN, "ERR_LARDER_NOMEM", "larder: out of memory");
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
int lnode_view_bytes(napi_env env, napi_value v, void **data, size_t *len)
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
		uint32_t c;
		uint64_t w;

#ifdef __SSE2__
		/* Eight ASCII units at a time where SSE2 is there (every x86-64):
		 * one test and one pack for what takes the word loop below two
		 * rounds and eight shifts. */
		if (i + 8 <= n) {
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(u + i));
			__m128i high = _mm_and_si128(v, _mm_set1_epi16((short)0xff80));

			if (_mm_movemask_epi8(_mm_cmpeq_epi8(high, _mm_setzero_si128())) ==
			    0xffff) {
				_mm_storel_epi64((__m128i *)(void *)o, _mm_packus_epi16(v, v));
				o += 8;
				i += 8;
				continue;
			}
		}
#endif
		/* Four ASCII units at a time: keys are mostly ASCII (a third of the
		 * instructions of this function per key, measured with callgrind). */
		if (i + 4 <= n) {
			memcpy(&w, u + i, 8);
			if ((w & 0xff80ff80ff80ff80ull) == 0) {
				o[0] = (uint8_t)w;
				o[1] = (uint8_t)(w >> 16);
				o[2] = (uint8_t)(w >> 32);
				o[3] = (uint8_t)(w >> 48);
				o += 4;
				i += 4;
				continue;
			}
		}
		c = u[i++];
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
 * The rest of a key's read once napi_get_value_string_utf16 has answered st
 * with units (lnode_key_arg, binding.h, takes the common key inline): a
 * string that is not a short ASCII key is encoded here, an ArrayBufferView
 * is read in place, and anything else, an empty key or one over max_key
 * throws TypeError or RangeError and returns 0.
 */
int lnode_key_finish(napi_env env, const struct handle *h, napi_value v, napi_status st,
		     size_t units, size_t at, const void **key, size_t *len)
{
	struct env_data *ed = h->ed;
	void *data;

	if (st == napi_ok) {
		/* max_key + 1 units fit: more units than max_key means more bytes too. */
		if (units > h->max_key)
			goto fail_long;
		*len = lnode_ascii16(ed->k16, units, (uint8_t *)ed->keys + at)
			       ? units
			       : utf16_to_utf8(ed->k16, units, (uint8_t *)ed->keys + at);
		*key = ed->keys + at;
	} else if (st == napi_string_expected && lnode_view_bytes(env, v, &data, len)) {
		*key = data;
	} else {
		lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
			    "key must be a string, a Buffer or a TypedArray");
		return 0;
	}
	if (*len == 0) {
		lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
			    "key is empty: keys are 1..%zu bytes", h->max_key);
		return 0;
	}
	if (*len > h->max_key)
		goto fail_long;
	return 1;

fail_long:
	lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE", "key is longer than maxKeyBytes (%zu)",
		    h->max_key);
	return 0;
}

/*
 * Reads a value into ed->in + at as tag + bytes; *len includes the tag.
 * The caller ensured in_cap > at. Returns 1, or after throwing 0, or
 * LARDER_EVALSIZE after the RangeError for a value over maxValueBytes (a
 * refused write, which set and mset treat as the engine's EVALSIZE).
 */
int lnode_value_arg(napi_env env, const struct handle *h, napi_value v, napi_value tagv, size_t at,
		    size_t *len)
{
	struct env_data *ed = h->ed;
	uint32_t tag;
	size_t n;
	void *data;

	if (napi_get_value_uint32(env, tagv, &tag) != napi_ok || tag >= TAG_COUNT) {
		lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "larder: bad value tag");
		return 0;
	}
	if (tag == TAG_STRING || tag == TAG_JSON) {
		size_t units;
		int short_path;

		/* Short strings: through UTF-16 units, as keys are (see lnode_key_arg). */
		if (napi_get_value_string_utf16(env, v, (char16_t *)ed->k16, ed->k16_cap, &units) !=
		    napi_ok)
			goto fail_type;
		short_path = units + 1 < ed->k16_cap && at + 1 + 3 * units <= ed->in_cap;
		if (short_path) {
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
			if (!lnode_grow(&ed->in, &ed->in_cap, at + n + 2 + TRUNCATION_SLACK, 1)) {
				lnode_throw_nomem(env);
				return 0;
			}
			if (napi_get_value_string_utf8(env, v, (char *)ed->in + at + 1,
						       ed->in_cap - at - 1, &n) != napi_ok)
				goto fail_type;
			short_path = 0;
		}
		/* Every unit that is not ASCII takes two or more bytes of UTF-8. */
		if (short_path ? n == units : lnode_is_ascii(ed->in + at + 1, n))
			tag |= TAG_ASCII;
	} else {
		if (!lnode_view_bytes(env, v, &data, &n))
			goto fail_type;
		if (n + 1 > h->max_value)
			goto fail_range;
		if (!lnode_grow(&ed->in, &ed->in_cap, at + n + 1, 1)) {
			lnode_throw_nomem(env);
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
	lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "value does not match its type tag");
	return 0;
fail_range:
	lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
		    "value of %zu bytes is over maxValueBytes (%zu)", n, h->max_value - 1);
	return LARDER_EVALSIZE;
}

/* ttl argument: -1 the cache's default, 0 never, otherwise milliseconds. */
int lnode_ttl_arg(napi_env env, napi_value v, uint64_t *ttl_ms)
{
	double d;

	if (napi_get_value_double(env, v, &d) != napi_ok || isnan(d) || d < -1) {
		lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
			    "ttl must be a number of milliseconds");
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

napi_value lnode_make_bool(napi_env env, int b)
{
	napi_value r;

	napi_get_boolean(env, b, &r);
	return r;
}

napi_value lnode_make_double(napi_env env, double d)
{
	napi_value r;

	napi_create_double(env, d, &r);
	return r;
}

/* Whether every byte is below 0x80: such bytes are the same text in Latin-1. */
int lnode_is_ascii(const uint8_t *p, size_t n)
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

/* ---- Handles ------------------------------------------------------------ */

struct handle *lnode_bare_handle(napi_env env, napi_callback_info info, size_t *argc,
				 napi_value *argv)
{
	struct handle *h;

	if (napi_get_cb_info(env, info, argc, argv, NULL, (void **)&h) != napi_ok)
		return NULL;
	return lnode_handle_open(env, h) ? h : NULL;
}
