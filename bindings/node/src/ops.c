/*
 * ops.c - the cache operations of the Node binding, one native function
 * each, created per handle with the handle as their data pointer (addon.c),
 * so napi_get_cb_info() yields the arguments and the handle in one call.
 *
 * get() copies the value with larder_get() into the environment's scratch
 * Buffer (allocated by index.js and registered with setScratch), never into
 * a new Buffer: a string value comes back as a string made here, other
 * values as their length for index.js to decode from the scratch. mget()
 * hashes and looks up a whole batch in one larder_get_batch(), packing the
 * values into the scratch. No Node-API call is made inside a larder read
 * section: values are copied out first, so a garbage collection cannot run
 * JavaScript while a read section delays the maintainer.
 *
 * probe() and engineLoop() exist for the benchmarks only (the crossing
 * without the engine; the engine in a C loop in this process).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "binding.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

/* ---- Operations ----------------------------------------------------------- */

/*
 * get(key): undefined on a miss; a string for a string value; otherwise the
 * stored length (tag included) with the bytes in the scratch, or minus the
 * length needed when the scratch is too small (index.js grows it, retries).
 * peek(key) is the same with larder_peek(): no hit counted, no deadline
 * extended. One body, inlined into both with the read a constant.
 */
static inline __attribute__((always_inline)) napi_value
read_op(napi_env env, napi_callback_info info, int peek)
{
	napi_value argv[1], r;
	struct handle *h;
	const void *key;
	size_t key_len, len;
	int rc;

	if (!lnode_single_key(env, info, 1, argv, &h, &key, &key_len))
		return NULL;
	rc = (peek ? larder_peek : larder_get)(h->cache, key, key_len, h->ed->out,
					       h->ed->out_cap, &len);
	if (rc == LARDER_MISS)
		return NULL;
	if (rc == LARDER_EBUFSIZE)
		return lnode_make_double(env, -(double)len);
	if (rc != LARDER_OK)
		return lnode_throw_larder(env, h, rc, 0);
	if (len > 0 && TAG_KIND(h->ed->out[0]) == TAG_STRING)
		return lnode_make_tagged_string(env, h->ed->out, len);
	napi_create_uint32(env, (uint32_t)len, &r);
	return r;
}

napi_value lnode_op_get(napi_env env, napi_callback_info info)
{
	return read_op(env, info, 0);
}

napi_value lnode_op_peek(napi_env env, napi_callback_info info)
{
	return read_op(env, info, 1);
}

/*
 * probe(key): the crossing alone, for benchmarks: everything get() does
 * (arguments, handle check, key encoding, making the result string from the
 * scratch) except the engine call. The string is whatever the scratch holds
 * after a get of a string value of the same length (index.js's caller
 * arranges that), so the result costs what get's does.
 */
napi_value lnode_op_probe(napi_env env, napi_callback_info info)
{
	napi_value argv[2];
	struct handle *h;
	const void *key;
	size_t key_len;
	uint32_t len;

	if (!lnode_single_key(env, info, 2, argv, &h, &key, &key_len) ||
	    napi_get_value_uint32(env, argv[1], &len) != napi_ok)
		return NULL;
	if (len == 0 || len > h->ed->out_cap)
		return NULL;
	return lnode_make_tagged_string(env, h->ed->out, len);
}

/*
 * A set refused for its value (over maxValueBytes or the entry limit, or no
 * room for it) removes the key's previous value, as lru-cache and memcached
 * do: a caller whose write failed must not go on reading the value it meant
 * to replace. A bad argument (type, key, TTL) leaves it. The removal is an
 * explicit one for the engine, so dispose hears 'delete' (lru-cache: 'set').
 */
static void drop_if_refused(const struct handle *h, int rc, const void *key, size_t key_len)
{
	int removed;

	if (rc != LARDER_EVALSIZE && rc != LARDER_ENOMEM && rc != LARDER_EBUSY)
		return;
	/* It fails on a closed cache, which holds no value to drop, or with
	 * LARDER_EBUSY where the maintainer has spent a second in one listener
	 * call, which this binding's listener never does (it only queues). */
	removed = larder_remove(h->cache, key, key_len);
	(void)removed;
}

/* set(key, value, tag, ttl): undefined, or throws. */
napi_value lnode_op_set(napi_env env, napi_callback_info info)
{
	napi_value argv[4];
	struct handle *h;
	const void *key;
	size_t key_len, len;
	uint64_t ttl;
	int rc;

	if (!lnode_single_key(env, info, 4, argv, &h, &key, &key_len))
		return NULL;
	rc = lnode_value_arg(env, h, argv[1], argv[2], 0, &len);
	if (rc != 1) {
		drop_if_refused(h, rc, key, key_len);
		return NULL;
	}
	if (!lnode_ttl_arg(env, argv[3], &ttl))
		return NULL;
	rc = larder_put(h->cache, key, key_len, h->ed->in, len, ttl);
	if (rc != LARDER_OK) {
		drop_if_refused(h, rc, key, key_len);
		return lnode_throw_larder(env, h, rc, len - 1);
	}
	return NULL;
}

napi_value lnode_op_has(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	struct handle *h;
	const void *key;
	size_t key_len;

	if (!lnode_single_key(env, info, 1, argv, &h, &key, &key_len))
		return NULL;
	return lnode_make_bool(env, larder_contains(h->cache, key, key_len) == LARDER_OK);
}

napi_value lnode_op_delete(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	struct handle *h;
	const void *key;
	size_t key_len;
	int rc;

	if (!lnode_single_key(env, info, 1, argv, &h, &key, &key_len))
		return NULL;
	rc = larder_remove(h->cache, key, key_len);
	if (rc < 0)
		return lnode_throw_larder(env, h, rc, 0);
	return lnode_make_bool(env, rc == LARDER_OK);
}

/* ttl(key): 0 on a miss, Infinity for no deadline, else milliseconds left. */
napi_value lnode_op_ttl(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	struct handle *h;
	const void *key;
	size_t key_len;
	uint64_t ttl;
	int rc;

	if (!lnode_single_key(env, info, 1, argv, &h, &key, &key_len))
		return NULL;
	rc = larder_ttl_remaining(h->cache, key, key_len, &ttl);
	if (rc != LARDER_OK)
		return lnode_make_double(env, 0);
	return lnode_make_double(env, ttl == LARDER_TTL_NEVER ? INFINITY : (double)ttl);
}

/*
 * What a value's tag byte says about returning its batch as one string, as
 * bits: all of them and'ed over the batch say whether every value carries
 * TAG_ASCII (BATCH_ASCII) and whether every one is a string or JSON value
 * (BATCH_TEXT); or'ed, whether some is JSON (BATCH_JSON). A table lookup and
 * two logic operations per value instead of three tests and their branches
 * (docs/node.md: the instructions saved). Writers set TAG_ASCII on string
 * and JSON values only (args.c), so every other tag byte, and an empty value
 * (no tag: BATCH_EMPTY indexes a zero), has no bits.
 */
enum { BATCH_ASCII = 1, BATCH_TEXT = 2, BATCH_JSON = 4, BATCH_EMPTY = 0x80 };
static const uint8_t batch_tag_bits[256] = {
	[TAG_STRING] = BATCH_TEXT,
	[TAG_STRING | TAG_ASCII] = BATCH_TEXT | BATCH_ASCII,
	[TAG_JSON] = BATCH_TEXT | BATCH_JSON,
	[TAG_JSON | TAG_ASCII] = BATCH_TEXT | BATCH_JSON | BATCH_ASCII,
};

struct batch_out {
	uint8_t *out;
	size_t cap;
	size_t used;
	int32_t *meta;
	unsigned all; /* batch_tag_bits of every value so far, and'ed */
	unsigned any; /* the same, or'ed */
};

static void batch_copy(void *ctx, size_t index, const void *value, size_t value_len)
{
	struct batch_out *b = ctx;
	unsigned bits = batch_tag_bits[value_len ? *(const uint8_t *)value : BATCH_EMPTY];

	size_t at = b->used;

	b->meta[index] = (int32_t)value_len;
	b->all &= bits;
	b->any |= bits;
	b->used = at + value_len;
	/* Last, so that the compiler makes it a tail call. */
	if (at + value_len <= b->cap)
		memcpy(b->out + at, value, value_len);
}

/*
 * engineLoop(keys, order, batch): for benchmarks, the engine alone inside
 * this process: encodes the string keys once, then times larder_get() in a
 * C loop over keys[order[i]] (values copied into the scratch, as get does),
 * or with batch > 0 larder_get_batch() over consecutive batches of that many
 * of them (values packed into the scratch, as mget does). Returns
 * nanoseconds per key. Beside get() and probe() it splits a get's time into
 * crossing, engine, and what V8's traffic between gets adds; beside mget()
 * it splits a batch's time into the engine's and the binding's.
 */
napi_value lnode_op_engine_loop(napi_env env, napi_callback_info info)
{
	napi_value argv[3], v;
	size_t argc = 3, i, at = 0, len, count;
	struct handle *h = lnode_bare_handle(env, info, &argc, argv);
	struct env_data *ed;
	napi_typedarray_type type;
	struct timespec t0, t1;
	uint32_t n, *order, batch = 0;
	size_t *offs = NULL, *blens = NULL;
	const void **bkeys = NULL;
	int32_t *bmeta = NULL;
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
	    type != napi_uint32_array ||
	    (argc > 2 && napi_get_value_uint32(env, argv[2], &batch) != napi_ok))
		return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
				   "engineLoop(keys, Uint32Array, batch)");
	offs = malloc((n + 1) * sizeof(*offs));
	arena = malloc((size_t)n * (h->max_key + 1));
	if (batch > 0) {
		bkeys = malloc(batch * sizeof(*bkeys));
		blens = malloc(batch * sizeof(*blens));
		bmeta = malloc(batch * sizeof(*bmeta));
	}
	if (offs == NULL || arena == NULL || (batch > 0 && (!bkeys || !blens || !bmeta)))
		goto out;
	at = 0;
	for (i = 0; i < n; i++) {
		if (napi_get_element(env, argv[0], (uint32_t)i, &v) != napi_ok ||
		    napi_get_value_string_utf8(env, v, arena + at, h->max_key + 1, &len) !=
			    napi_ok) {
			bad_key = 1;
			goto out;
		}
		offs[i] = at;
		at += len;
	}
	offs[n] = at;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (i = 0; i < count && batch == 0; i++) {
		uint32_t k = order[i] % n;

		if (larder_get(h->cache, arena + offs[k], offs[k + 1] - offs[k], ed->out,
			       ed->out_cap, &len) != LARDER_OK)
			misses++;
	}
	for (i = 0; i < count && batch > 0; i += batch) {
		size_t m = count - i < batch ? count - i : batch, j;
		struct batch_out b = {.out = ed->out,
				      .cap = ed->out_cap,
				      .used = 0,
				      .meta = bmeta,
				      .all = BATCH_ASCII | BATCH_TEXT,
				      .any = 0};

		for (j = 0; j < m; j++) {
			uint32_t k = order[i + j] % n;

			bkeys[j] = arena + offs[k];
			blens[j] = offs[k + 1] - offs[k];
		}
		/* Misses, or values that did not fit the scratch (so were not copied). */
		misses += (long)m - larder_get_batch(h->cache, m, bkeys, blens, batch_copy, &b);
		if (b.used > b.cap)
			misses += (long)m;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	ok = 1;
out:
	free(offs);
	free(arena);
	free(bkeys);
	free(blens);
	free(bmeta);
	if (!ok)
		return bad_key ? lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
					     "engineLoop: string keys only")
			       : lnode_throw_nomem(env);
	if (misses)
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER", "engineLoop: %ld misses or values over the scratch", misses);
	return lnode_make_double(
		env, ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec)) /
			     (double)(count ? count : 1));
}

napi_value lnode_op_clear(napi_env env, napi_callback_info info)
{
	size_t argc = 0;
	struct handle *h = lnode_bare_handle(env, info, &argc, NULL);
	int rc;

	if (h == NULL)
		return NULL;
	rc = larder_clear(h->cache);
	if (rc != LARDER_OK)
		return lnode_throw_larder(env, h, rc, 0);
	return NULL;
}

/*
 * UTF-16 units of valid UTF-8: one per byte that starts a character (not
 * 10xxxxxx), one more per 4-byte lead (11110xxx, which needs a surrogate
 * pair). With SSE2, sixteen bytes at a time: as signed bytes a continuation
 * byte is below -64 and a 4-byte lead is -16..-1; the 0/1 bytes of each test
 * are summed with psadbw (no popcount instruction is assumed: without
 * -mpopcnt it is a library call). Then eight at a time in a word: bit 7 of
 * each byte of `cont` is set for a continuation byte, of `four` for a byte
 * at or above 0xf0, summed by a multiply into the top byte.
 */
static size_t utf16_units(const uint8_t *p, size_t n)
{
	const uint64_t high = 0x8080808080808080ull;
	size_t units = n, i = 0;
	uint64_t w, cont, four;

#ifdef __SSE2__
	if (n >= 16) {
		const __m128i one = _mm_set1_epi8(1), zero = _mm_setzero_si128();
		__m128i conts = zero, fours = zero;

		for (; i + 16 <= n; i += 16) {
			__m128i v = _mm_loadu_si128((const __m128i *)(const void *)(p + i));
			__m128i c = _mm_cmplt_epi8(v, _mm_set1_epi8(-64));
			__m128i f = _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8(-17)),
						  _mm_cmplt_epi8(v, zero));

			conts = _mm_add_epi64(conts, _mm_sad_epu8(_mm_and_si128(c, one), zero));
			fours = _mm_add_epi64(fours, _mm_sad_epu8(_mm_and_si128(f, one), zero));
		}
		units -= (size_t)_mm_cvtsi128_si64(conts) +
			 (size_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(conts, conts));
		units += (size_t)_mm_cvtsi128_si64(fours) +
			 (size_t)_mm_cvtsi128_si64(_mm_unpackhi_epi64(fours, fours));
	}
#endif
	for (; i + 8 <= n; i += 8) {
		memcpy(&w, p + i, 8);
		cont = w & ~(w << 1) & high;
		four = w & (w << 1) & (w << 2) & (w << 3) & high;
		units -= (size_t)(((cont >> 7) * 0x0101010101010101ull) >> 56);
		units += (size_t)(((four >> 7) * 0x0101010101010101ull) >> 56);
	}
	for (; i < n; i++)
		units += (size_t)(p[i] >= 0xf0) - (size_t)((p[i] & 0xc0) == 0x80);
	return units;
}

/*
 * The batch as one string when every value found is a string or JSON value
 * and some are not ASCII: their bytes are UTF-8 (index.js's writers encode
 * them, lone surrogates as U+FFFD), so the packed region is one UTF-8 text,
 * tag bytes included (they are ASCII). meta[i] becomes value i's length in
 * UTF-16 units, where index.js cuts its substring. Only when V8's string has
 * exactly the units counted (so no byte was invalid and replaced) is meta
 * rewritten: otherwise 0, and meta still holds byte lengths for the
 * per-value decoding. 1 with *r set, 0 to fall back.
 */
static int batch_text_utf8(napi_env env, const struct batch_out *b, size_t n, napi_value *r)
{
	size_t total = 0, len16, i, off = 0;

	for (i = 0; i < n; i++) {
		total += utf16_units(b->out + off, (size_t)b->meta[i]);
		off += (size_t)b->meta[i];
	}
	if (napi_create_string_utf8(env, (const char *)b->out, b->used, r) != napi_ok ||
	    napi_get_value_string_utf16(env, *r, NULL, 0, &len16) != napi_ok || len16 != total)
		return 0;
	for (i = 0, off = 0; i < n; i++) {
		size_t bytes = (size_t)b->meta[i];

		b->meta[i] = (int32_t)utf16_units(b->out + off, bytes);
		off += bytes;
	}
	return 1;
}

/* Makes the mget arrays hold n keys. */
static int batch_reserve(struct env_data *ed, size_t n)
{
	size_t cap = ed->batch_cap, lens_cap = ed->batch_cap, offs_cap = ed->batch_cap;

	return lnode_grow(&ed->batch_keys, &cap, n, sizeof(*ed->batch_keys)) &&
	       lnode_grow(&ed->batch_lens, &lens_cap, cap, sizeof(*ed->batch_lens)) &&
	       lnode_grow(&ed->batch_offs, &offs_cap, cap, sizeof(*ed->batch_offs)) &&
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
	if (!lnode_grow(&ed->keys, &ed->keys_cap, total + 8, 1)) {
		lnode_throw_nomem(env);
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

		if (!lnode_grow(&ed->keys, &ed->keys_cap, at + KEY_ROOM(h->max_key), 1)) {
			lnode_throw_nomem(env);
			return -1;
		}
		ed->reading_elements = 1;
		st = napi_get_element(env, arr, (uint32_t)i, &v);
		ed->reading_elements = 0;
		if (st != napi_ok || !lnode_key_arg(env, h, v, at, &key, &ed->batch_lens[i]))
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

/*
 * mget(keys, joined): looks the keys up in one larder_get_batch(). When
 * joined is a string, it is the keys concatenated (a rope, flattened by the
 * read here) and meta[i] holds keys[i].length
 * (index.js checked every key is a string): if it encodes to exactly that
 * many bytes the keys are ASCII and are cut from it without touching the
 * array; otherwise each key is read from the array. Values are packed back
 * to back into the scratch with meta[i] = length (0: a miss). Returns minus
 * the scratch bytes needed when they do not fit; otherwise, when every
 * value found is a string or JSON value, the whole packed region as one
 * string (index.js takes substrings, which V8 makes without copying): made
 * as Latin-1 when every writer tagged its value TAG_ASCII, else as UTF-8
 * with meta[i] in UTF-16 units (batch_text_utf8), and meta[n] = 1 when some
 * of them is a JSON value, 0 when all are strings (index.js then cuts them
 * without looking at their tags); else the number found.
 */
napi_value lnode_op_mget(napi_env env, napi_callback_info info)
{
	napi_value argv[2], r;
	size_t argc = 2;
	struct handle *h = lnode_bare_handle(env, info, &argc, argv);
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
		return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE", "keys must be an array");
	if (n >= ed->meta_cap) /* meta[n] too: index.js grows it first */
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER",
				   "larder: mget scratch not registered");
	if (n == 0)
		return lnode_make_double(env, 0);
	if (!batch_reserve(ed, n))
		return lnode_throw_nomem(env);
	napi_typeof(env, argv[1], &type);
	if (type == napi_string)
		rc = batch_keys_joined(env, h, argv[1], n);
	if (rc == 0)
		rc = batch_keys_each(env, h, argv[0], n);
	if (rc < 0)
		return NULL;
	if (h->cache == NULL) /* an element's getter closed the handle */
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER_CLOSED",
				   "larder: the cache is closed");
	memset(ed->meta, 0, n * sizeof(*ed->meta));
	b = (struct batch_out){.out = ed->out,
			       .cap = ed->out_cap,
			       .used = 0,
			       .meta = ed->meta,
			       .all = BATCH_ASCII | BATCH_TEXT,
			       .any = 0};
	found = larder_get_batch(h->cache, n, ed->batch_keys, ed->batch_lens, batch_copy, &b);
	if (found < 0)
		return lnode_throw_larder(env, h, (int)found, 0);
	if (b.used > b.cap)
		return lnode_make_double(env, -(double)b.used);
	ed->meta[n] = (b.any & BATCH_JSON) != 0;
	if (b.used > 0 && (b.all & BATCH_ASCII)) {
		napi_create_string_latin1(env, (const char *)b.out, b.used, &r);
		return r;
	}
	if (b.used > 0 && (b.all & BATCH_TEXT) && batch_text_utf8(env, &b, n, &r))
		return r;
	return lnode_make_double(env, (double)found);
}

/* mset(keys, values, tags, ttl): stores in order; throws at the first failure. */
napi_value lnode_op_mset(napi_env env, napi_callback_info info)
{
	napi_value argv[4], k, v, t;
	size_t argc = 4;
	struct handle *h = lnode_bare_handle(env, info, &argc, argv);
	const void *key;
	size_t key_len, len;
	uint32_t n, i;
	uint64_t ttl;
	int rc;

	if (h == NULL)
		return NULL;
	if (napi_get_array_length(env, argv[0], &n) != napi_ok ||
	    !lnode_ttl_arg(env, argv[3], &ttl))
		return lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
				   "entries must be an array");
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
			return lnode_throw(env, ERR_PLAIN, "ERR_LARDER_CLOSED",
					   "larder: the cache is closed");
		if (!lnode_key_arg(env, h, k, 0, &key, &key_len))
			return NULL;
		rc = lnode_value_arg(env, h, v, t, 0, &len);
		if (rc != 1) {
			drop_if_refused(h, rc, key, key_len);
			return NULL;
		}
		rc = larder_put(h->cache, key, key_len, h->ed->in, len, ttl);
		if (rc != LARDER_OK) {
			drop_if_refused(h, rc, key, key_len);
			return lnode_throw_larder(env, h, rc, len - 1);
		}
	}
	return NULL;
}

/* flush(): larder_flush() with FLUSH_WAIT_MS; true when every earlier write
 * is counted, false when the maintainer did not get there in time. */
#define FLUSH_WAIT_MS 1000u
napi_value lnode_op_flush(napi_env env, napi_callback_info info)
{
	size_t argc = 0;
	struct handle *h = lnode_bare_handle(env, info, &argc, NULL);
	napi_value result;

	if (h == NULL)
		return NULL;
	napi_get_boolean(env, larder_flush(h->cache, FLUSH_WAIT_MS) == LARDER_OK, &result);
	return result;
}

/* stats(): the engine's counters as an object of numbers. */
napi_value lnode_op_stats(napi_env env, napi_callback_info info)
{
	uint64_t values[LARDER_STAT_COUNT];
	size_t argc = 0, i;
	struct handle *h = lnode_bare_handle(env, info, &argc, NULL);
	napi_value obj;

	if (h == NULL)
		return NULL;
	if (larder_stats(h->cache, values, LARDER_STAT_COUNT) != LARDER_OK)
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER", "larder: stats failed");
	napi_create_object(env, &obj);
	for (i = 0; i < LARDER_STAT_COUNT; i++)
		napi_set_named_property(env, obj, larder_stat_name((enum larder_stat)i),
					lnode_make_double(env, (double)values[i]));
	if (h->has_queue)
		napi_set_named_property(
			env, obj, "dispose_dropped",
			lnode_make_double(env, (double)lnode_dq_dropped(&h->sub.queue)));
	return obj;
}

static void set_number(napi_env env, napi_value obj, const char *name, double d)
{
	napi_set_named_property(env, obj, name, lnode_make_double(env, d));
}

/* settings(): the settings the cache was opened with (a joined cache's, not the caller's). */
napi_value lnode_op_settings(napi_env env, napi_callback_info info)
{
	size_t argc = 0;
	struct handle *h = lnode_bare_handle(env, info, &argc, NULL);
	const struct lnode_settings *s;
	napi_value obj;

	if (h == NULL)
		return NULL;
	s = lnode_shared_settings(h->shared);
	napi_create_object(env, &obj);
	set_number(env, obj, "maxSize", (double)s->capacity_bytes);
	set_number(env, obj, "max", (double)s->max_entries);
	set_number(env, obj, "ttl",
		   s->default_ttl_ms == LARDER_TTL_NEVER ? 0 : (double)s->default_ttl_ms);
	set_number(env, obj, "maxKeyBytes", (double)s->max_key_bytes);
	set_number(env, obj, "maxValueBytes", (double)(s->max_value_bytes - 1));
	set_number(env, obj, "policy", (double)s->policy);
	napi_set_named_property(env, obj, "updateAgeOnGet",
				lnode_make_bool(env, s->expiry == LARDER_EXPIRE_AFTER_ACCESS));
	/* The engine counts the tag byte; index.js's minSize does not. */
	set_number(env, obj, "compressMinSize", s->compress_min ? (double)s->compress_min - 1 : 0);
	set_number(env, obj, "compressMinSaving", (double)s->compress_saving);
	napi_set_named_property(env, obj, "pooled", lnode_make_bool(env, s->pool != NULL));
	set_number(env, obj, "writeWaitMs", (double)s->write_wait_ms);
	return obj;
}

napi_value lnode_op_set_capacity(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	size_t argc = 1;
	struct handle *h = lnode_bare_handle(env, info, &argc, argv);
	double d;

	if (h == NULL)
		return NULL;
	if (napi_get_value_double(env, argv[0], &d) != napi_ok || !(d >= 65536) || d > 1.8e19)
		return lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE",
				   "maxSize must be at least 65536 bytes");
	if (larder_set_capacity(h->cache, (uint64_t)d) != LARDER_OK)
		return lnode_throw(env, ERR_RANGE, "ERR_OUT_OF_RANGE", "larder: capacity refused");
	return NULL;
}

/* poolStats(): the cache's figures in its pool (larder_pool_cache_stats), or undefined. */
napi_value lnode_op_pool_stats(napi_env env, napi_callback_info info)
{
	double values[LARDER_POOL_CACHE_STAT_COUNT];
	size_t argc = 0, i;
	struct handle *h = lnode_bare_handle(env, info, &argc, NULL);
	const struct lnode_settings *s;
	napi_value obj;

	if (h == NULL)
		return NULL;
	s = lnode_shared_settings(h->shared);
	if (s->pool == NULL)
		return NULL;
	/* The cache's own reference keeps the pool open (REGISTRY-P1). */
	if (larder_pool_cache_stats(lnode_pool_engine(s->pool), h->cache, values,
				    LARDER_POOL_CACHE_STAT_COUNT) != LARDER_OK)
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER", "larder: pool stats failed");
	napi_create_object(env, &obj);
	for (i = 0; i < LARDER_POOL_CACHE_STAT_COUNT; i++)
		napi_set_named_property(
			env, obj, larder_pool_cache_stat_name((enum larder_pool_cache_stat)i),
			lnode_make_double(env, values[i]));
	return obj;
}
