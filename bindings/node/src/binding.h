/*
 * binding.h - what the Node binding's C files share (private to
 * bindings/node): the per-environment and per-handle state, the value tags,
 * and the functions args.c and ops.c give addon.c and each other, with the
 * inline halves of a single-key operation's crossing (the handle check, the
 * common key's read, the result string: a get calls no function of the
 * binding's own; callgrind figures in docs/node.md).
 *
 * Who writes what: an env_data and its handles are touched only by their
 * environment's JavaScript thread (and by Node's finalisers, which run on
 * it); the maintainer thread reaches a handle only through its lnode_sub
 * (registry.c, dispose_queue.c), never through these fields.
 */
#ifndef LARDER_NODE_BINDING_H
#define LARDER_NODE_BINDING_H

#include <stddef.h>
#include <stdint.h>

#include <node_api.h>

#ifdef __SSE2__
#include <emmintrin.h>
#endif

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

/*
 * Or'ed into the tag of a string or JSON value whose bytes after the tag are
 * all ASCII. The writer knows it for free (its UTF-8 has one byte per UTF-16
 * unit), so a get makes the string with V8's one-byte path without scanning
 * the value, and an mget batch of such values goes back as one string.
 * 0x40 keeps the tag byte itself ASCII. index.js mirrors it.
 */
#define TAG_ASCII 0x40u
#define TAG_KIND(t) ((unsigned)(t) & ~TAG_ASCII)

/* Grown on demand; the initial sizes cover the common case without a realloc. */
#define IN_INITIAL (64u * 1024u)
#define TRUNCATION_SLACK 4u    /* UTF-8 truncation drops at most 3 bytes, plus the NUL */
#define EXPECTED_DEFAULT 4096u /* the index's sizing hint without `max` (the engine's default) */
#define K16_VALUES 4096u       /* string values up to this many units go the UTF-16 way */
#define IN_PLACE SIZE_MAX      /* batch_offs: a Buffer key, read where it is */
/* Room for one encoded key in ed->keys: 3 bytes per unit, or the 16-byte store of
 * the short ASCII path (lnode_ascii16), whichever is more, and the slack. */
#define KEY_ROOM(max_key) (3u * (max_key) + 16u)

struct handle;
struct cursor;
struct pool_ref;

/* Per JavaScript environment (the main thread or one worker). */
struct env_data {
	struct handle *handles; /* handles not yet freed */
	struct pool_ref *pools; /* pool objects not yet collected (addon.c, ADDON-H6) */
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
	struct env_data *ed;           /* NULL once the environment is torn down */
	struct lnode_shared *shared;   /* NULL once released (ADDON-H1) */
	larder *cache;                 /* NULL once closed: the check every op makes */
	size_t max_key;                /* the cache's max_key_bytes */
	size_t max_value;              /* the engine's max_value_bytes (tag byte included) */
	unsigned fns;                  /* live functions carrying this handle (ADDON-H4) */
	int subscribed;                /* in the cache's listener fan-out (ADDON-H3) */
	int has_queue;                 /* sub.queue initialised */
	int tsfn_released;             /* napi_release_threadsafe_function done */
	napi_threadsafe_function tsfn; /* dispose delivery; NULL when none or finalised */
	struct lnode_sub sub;
	uint8_t *taken; /* the consumer's half of the dispose queue */
	size_t taken_cap;
	struct cursor *cursors;     /* open cursors (iter.c, NITER-I1) */
	struct handle *prev, *next; /* ed->handles */
};

enum err_kind { ERR_PLAIN, ERR_TYPE, ERR_RANGE };

/* args.c: errors. Each throws and returns NULL (for the caller to return). */
napi_value lnode_throw(napi_env env, enum err_kind kind, const char *code, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* Throws for a larder error code returned by a write of value_len bytes. */
napi_value lnode_throw_larder(napi_env env, const struct handle *h, int rc, size_t value_len);
napi_value lnode_throw_nomem(napi_env env);

/* args.c: buffers, arguments, results. Those returning int return 0 after throwing. */
int lnode_grow(void *bufp, size_t *cap, size_t need, size_t elem);
/* Throws ERR_LARDER_CLOSED or ERR_LARDER_REENTRANT for a handle lnode_handle_open refuses. */
int lnode_handle_unusable(napi_env env, const struct handle *h);
struct handle *lnode_bare_handle(napi_env env, napi_callback_info info, size_t *argc,
				 napi_value *argv);
int lnode_key_finish(napi_env env, const struct handle *h, napi_value v, napi_status st,
		     size_t units, size_t at, const void **key, size_t *len);

/*
 * A key of 1..16 units that is all ASCII, the common key, encoded with one
 * test and one 16-byte store (the general encoder in args.c takes two rounds
 * of eight and its loop for a 16-unit key). u must be readable for 16 units
 * (k16 holds at least K16_VALUES) and out writable for 16 bytes (KEY_ROOM);
 * the units past n are whatever an earlier read left there, masked out of
 * the test, and their bytes past the key are never read. 0: not this case.
 */
static inline int lnode_ascii16(const uint16_t *u, size_t n, uint8_t *out)
{
#ifdef __SSE2__
	__m128i a, b, ascii, hi = _mm_set1_epi16((short)0xff80), zero = _mm_setzero_si128();
	unsigned want;

	if (n > 16)
		return 0;
	a = _mm_loadu_si128((const __m128i *)(const void *)u);
	b = _mm_loadu_si128((const __m128i *)(const void *)(u + 8));
	/* One byte per unit, 0xff where the unit is below 0x80. */
	ascii = _mm_packs_epi16(_mm_cmpeq_epi16(_mm_and_si128(a, hi), zero),
				_mm_cmpeq_epi16(_mm_and_si128(b, hi), zero));
	want = (1u << n) - 1;
	if (((unsigned)_mm_movemask_epi8(ascii) & want) != want)
		return 0;
	_mm_storeu_si128((__m128i *)(void *)out, _mm_packus_epi16(a, b));
	return 1;
#else
	(void)u;
	(void)n;
	(void)out;
	return 0;
#endif
}

/*
 * Reads a key: a string (UTF-8 into ed->keys + at) or an ArrayBufferView
 * (in place). Throws TypeError or RangeError and returns 0 when it is not a
 * key of 1..max_key bytes. The caller ensured keys_cap >= at +
 * KEY_ROOM(max_key) and k16_cap >= max_key + 2 (and >= 16). Inline for the
 * common key, a string of 1..16 ASCII units: one Node-API call, one test,
 * one store; everything else goes on in lnode_key_finish (args.c) without
 * reading the key again.
 */
static inline int lnode_key_arg(napi_env env, const struct handle *h, napi_value v, size_t at,
				const void **key, size_t *len)
{
	struct env_data *ed = h->ed;
	size_t units = 0;
	napi_status st = napi_get_value_string_utf16(env, v, (char16_t *)ed->k16, h->max_key + 2,
						     &units);

	if (__builtin_expect(st == napi_ok && units - 1 < 16 && units <= h->max_key, 1) &&
	    lnode_ascii16(ed->k16, units, (uint8_t *)ed->keys + at)) {
		*key = ed->keys + at;
		*len = units;
		return 1;
	}
	return lnode_key_finish(env, h, v, st, units, at, key, len);
}

/*
 * The check every operation starts with: the handle is open, and no mget or
 * mset of this thread is reading array elements (an element's getter that
 * called back into larder would reuse the buffers that call is filling).
 * Inline, as is the single-key prologue below: a get crosses one call of
 * the binding's fewer (callgrind: docs/node.md).
 */
static inline int lnode_handle_open(napi_env env, const struct handle *h)
{
	if (__builtin_expect(h->cache != NULL && !h->ed->reading_elements, 1))
		return 1;
	return lnode_handle_unusable(env, h);
}

/* The single-key prologue: the handle, its key, and argv[1..]. */
static inline int lnode_single_key(napi_env env, napi_callback_info info, size_t want,
				   napi_value *argv, struct handle **hp, const void **key,
				   size_t *len)
{
	size_t argc = want;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, (void **)hp) != napi_ok)
		return 0;
	return lnode_handle_open(env, *hp) && lnode_key_arg(env, *hp, argv[0], 0, key, len);
}
int lnode_value_arg(napi_env env, const struct handle *h, napi_value v, napi_value tagv, size_t at,
		    size_t *len);
int lnode_ttl_arg(napi_env env, napi_value v, uint64_t *ttl_ms);
/* The bytes of a Buffer, TypedArray or DataView; 0 (nothing thrown) for anything else. */
int lnode_view_bytes(napi_env env, napi_value v, void **data, size_t *len);
int lnode_is_ascii(const uint8_t *p, size_t n);
napi_value lnode_make_bool(napi_env env, int b);
napi_value lnode_make_double(napi_env env, double d);
/*
 * The string of a stored string value: tagged[0] is its tag, len counts the
 * tag. ASCII (the writer's TAG_ASCII) takes V8's cheaper one-byte path, with
 * no scan here. Inline: a get's result costs no call of the binding's.
 */
static inline napi_value lnode_make_tagged_string(napi_env env, const uint8_t *tagged, size_t len)
{
	napi_value r;

	if (tagged[0] & TAG_ASCII)
		napi_create_string_latin1(env, (const char *)tagged + 1, len - 1, &r);
	else
		napi_create_string_utf8(env, (const char *)tagged + 1, len - 1, &r);
	return r;
}

/* ops.c: the operations a handle's functions run (addon.c makes the functions). */
napi_value lnode_op_get(napi_env env, napi_callback_info info);
napi_value lnode_op_peek(napi_env env, napi_callback_info info);
napi_value lnode_op_probe(napi_env env, napi_callback_info info);
napi_value lnode_op_set(napi_env env, napi_callback_info info);
napi_value lnode_op_has(napi_env env, napi_callback_info info);
napi_value lnode_op_delete(napi_env env, napi_callback_info info);
napi_value lnode_op_ttl(napi_env env, napi_callback_info info);
napi_value lnode_op_engine_loop(napi_env env, napi_callback_info info);
napi_value lnode_op_clear(napi_env env, napi_callback_info info);
napi_value lnode_op_mget(napi_env env, napi_callback_info info);
napi_value lnode_op_mset(napi_env env, napi_callback_info info);
napi_value lnode_op_flush(napi_env env, napi_callback_info info);
napi_value lnode_op_stats(napi_env env, napi_callback_info info);
napi_value lnode_op_settings(napi_env env, napi_callback_info info);
napi_value lnode_op_set_capacity(napi_env env, napi_callback_info info);
napi_value lnode_op_pool_stats(napi_env env, napi_callback_info info);

/* iter.c: cursors (keys(), values(), entries()). */
napi_value lnode_op_iter_open(napi_env env, napi_callback_info info);
napi_value lnode_op_iter_next(napi_env env, napi_callback_info info);
napi_value lnode_op_iter_close(napi_env env, napi_callback_info info);
/* Closes every cursor of h; before h's cache reference goes (NITER-I1). */
void lnode_cursors_release(struct handle *h);

#endif /* LARDER_NODE_BINDING_H */
