/*
 * iter.c - the Node binding's cursors over a cache (keys(), values(),
 * entries(), forEach() in index.js), over the engine's larder_iter_*: weakly
 * consistent, in the index's order, counting no hit and extending nothing.
 *
 * A cursor is a JavaScript object wrapping a struct cursor; each call of
 * iterNext() hands back the next chunk of entries as one Buffer of records
 * (u32 key length, u32 value length, key, value; values only when the cursor
 * was opened for them), so a walk of a large cache costs one crossing per
 * chunk, and never holds more than a chunk beside the cache.
 *
 * Lifetime (the engine's cursor must be closed before its cache is):
 *   NITER-I1. A cursor is on its handle's list from open until it is closed:
 *       by iterClose(), by the handle's release (close(), collection,
 *       environment teardown: lnode_cursors_release), or by the wrapper's
 *       finalizer, whichever is first; each sets c->it to NULL once closed.
 *   NITER-I2. c->h is NULL once the handle let go of the cursor, so a finalizer
 *       that runs after the handle is freed touches nothing of it.
 * Only the handle's JavaScript thread uses a cursor (ADDON-H2 in addon.c).
 */
#include <stdlib.h>
#include <string.h>

#include "binding.h"

#define CHUNK_BYTES (64u * 1024u) /* a chunk ends after the entry that crosses this */
#define CHUNK_RECORDS 1024u
#define RECORD_HEAD 8u

struct cursor {
	larder_iter *it;  /* NULL once closed (NITER-I1) */
	struct handle *h; /* NULL once the handle let go (NITER-I2) */
	int with_values;
	int nomem;    /* the chunk could not hold an entry: it is lost */
	uint8_t *buf; /* the chunk being filled */
	size_t used, cap;
	struct cursor *prev, *next; /* h->cursors */
};

static void cursor_unlink_close(struct cursor *c)
{
	struct handle *h = c->h;

	if (h != NULL) {
		if (c->prev != NULL)
			c->prev->next = c->next;
		else
			h->cursors = c->next;
		if (c->next != NULL)
			c->next->prev = c->prev;
		c->h = NULL;
		c->prev = c->next = NULL;
	}
	larder_iter_close(c->it);
	c->it = NULL;
}

void lnode_cursors_release(struct handle *h)
{
	while (h->cursors != NULL)
		cursor_unlink_close(h->cursors);
}

static void cursor_finalize(napi_env env, void *data, void *hint)
{
	struct cursor *c = data;

	(void)env;
	(void)hint;
	cursor_unlink_close(c);
	free(c->buf);
	free(c);
}

/* Inside the engine's read section: copies one entry to the chunk (no Node-API here). */
static void cursor_take(void *ctx, const void *key, size_t key_len, const void *value,
			size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct cursor *c = ctx;
	size_t vlen = c->with_values ? value_len : 0;
	uint32_t lens[2] = {(uint32_t)key_len, (uint32_t)vlen};

	(void)ttl_ms;
	(void)entry_bytes;
	if (!lnode_grow(&c->buf, &c->cap, c->used + RECORD_HEAD + key_len + vlen, 1)) {
		c->nomem = 1;
		return;
	}
	memcpy(c->buf + c->used, lens, RECORD_HEAD);
	memcpy(c->buf + c->used + RECORD_HEAD, key, key_len);
	if (vlen)
		memcpy(c->buf + c->used + RECORD_HEAD + key_len, value, vlen);
	c->used += RECORD_HEAD + key_len + vlen;
}

/* iterOpen(withValues): a cursor at the start of the cache. */
napi_value lnode_op_iter_open(napi_env env, napi_callback_info info)
{
	napi_value argv[1], obj;
	size_t argc = 1;
	struct handle *h = lnode_bare_handle(env, info, &argc, argv);
	struct cursor *c;
	bool with_values = false;
	int rc;

	if (h == NULL)
		return NULL;
	napi_get_value_bool(env, argv[0], &with_values);
	c = calloc(1, sizeof(*c));
	if (c == NULL)
		return lnode_throw_nomem(env);
	c->with_values = with_values;
	rc = larder_iter_open(h->cache, &c->it);
	if (rc != LARDER_OK || napi_create_object(env, &obj) != napi_ok ||
	    napi_wrap(env, obj, c, cursor_finalize, NULL, NULL) != napi_ok) {
		larder_iter_close(c->it);
		free(c);
		return lnode_throw_nomem(env);
	}
	c->h = h;
	c->next = h->cursors;
	if (h->cursors != NULL)
		h->cursors->prev = c;
	h->cursors = c;
	return obj;
}

static struct cursor *cursor_arg(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	size_t argc = 1;
	struct handle *h;
	struct cursor *c;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&h) != napi_ok ||
	    !lnode_handle_open(env, h))
		return NULL;
	/* A closed cursor has let go of its handle: it reads as the end. */
	if (argc < 1 || napi_unwrap(env, argv[0], (void **)&c) != napi_ok ||
	    (c->h != h && c->it != NULL)) {
		lnode_throw(env, ERR_TYPE, "ERR_INVALID_ARG_TYPE",
			    "larder: not a cursor of this cache");
		return NULL;
	}
	return c;
}

/* iterNext(cursor): a Buffer of the next chunk's records, or undefined at the end. */
napi_value lnode_op_iter_next(napi_env env, napi_callback_info info)
{
	struct cursor *c = cursor_arg(env, info);
	unsigned records = 0;
	napi_value out;
	int rc = LARDER_OK;

	if (c == NULL)
		return NULL;
	if (c->it == NULL)
		return NULL; /* closed: the end */
	c->used = 0;
	while (records < CHUNK_RECORDS && c->used < CHUNK_BYTES) {
		rc = larder_iter_next(c->it, cursor_take, c);
		if (rc != LARDER_OK || c->nomem)
			break;
		records++;
	}
	if (c->nomem || (rc != LARDER_OK && rc != LARDER_MISS)) {
		cursor_unlink_close(c);
		if (c->nomem || rc == LARDER_ENOMEM)
			return lnode_throw_nomem(env);
		return lnode_throw(env, ERR_PLAIN, "ERR_LARDER", "larder: %s (%d)",
				   larder_strerror(rc), rc);
	}
	if (rc == LARDER_MISS)
		cursor_unlink_close(c); /* the engine's end: nothing more to hold */
	if (records == 0)
		return NULL;
	if (napi_create_buffer_copy(env, c->used, c->buf, NULL, &out) != napi_ok)
		return lnode_throw_nomem(env);
	return out;
}

/* iterClose(cursor): ends the walk early (a loop's break). Idempotent. */
napi_value lnode_op_iter_close(napi_env env, napi_callback_info info)
{
	napi_value argv[1];
	size_t argc = 1;
	struct handle *h;
	struct cursor *c;

	if (napi_get_cb_info(env, info, &argc, argv, NULL, (void **)&h) != napi_ok)
		return NULL;
	if (argc >= 1 && napi_unwrap(env, argv[0], (void **)&c) == napi_ok && c->h == h)
		cursor_unlink_close(c);
	return NULL;
}
