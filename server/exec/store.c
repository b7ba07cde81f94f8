/*
 * store.c - the storage commands (set add replace append prepend cas) and
 * the store step of ms: memcached 1.6.18's do_store_item() on larder.
 *
 * Semantics kept from memcached:
 *   - an exptime in the past stores an item that is dead on arrival: set
 *     answers STORED and leaves no value, add answers STORED only when the
 *     key is absent, replace and a matching cas remove the key;
 *   - a set that fails (value too large, out of memory) removes the old
 *     value, so a client never reads back what it failed to overwrite; add,
 *     replace, append, prepend and cas leave it;
 *   - append and prepend keep the old item's flags and TTL and ignore their
 *     own; a combined value over the item limit is NOT_STORED;
 *   - cas with a unique of 0, or different from the item's, is EXISTS; with
 *     ms I, a unique lower than the item's stores the value as stale,
 *     keeping the old TTL and win-token state (a recache racing an
 *     invalidation); CAS uniques grow with time across workers (exec.h);
 *   - every new value is a new item: fetched, stale and win bits start clear.
 * The read-compare-swap steps use larder_replace_if_equals() and retry when
 * another write came in between (exec.c).
 */
#include "exec_internal.h"

#include <string.h>

#define RMW_TRIES 1000

/* The new item's bytes in x->b: header, then d1 and d2. Returns its length. */
static size_t build(struct larderd_exec *x, uint64_t cas, uint32_t flags, uint8_t bits,
		    const void *d1, size_t n1, const void *d2, size_t n2)
{
	size_t len = LARDERD_HDR + n1 + n2;
	if (!larderd_grow(&x->b, &x->b_cap, len))
		return 0;
	larderd_hdr_put(x->b, cas, flags, bits);
	if (n1)
		memcpy(x->b + LARDERD_HDR, d1, n1);
	if (n2)
		memcpy(x->b + LARDERD_HDR + n1, d2, n2);
	return len;
}

static const char k_oom[] = "SERVER_ERROR out of memory storing object";

/* set, add, replace: no read needed. */
static enum larderd_store_res store_plain(struct larderd_exec *x, const struct larderd_store *s,
					  uint64_t *cas_out, const char **err)
{
	larder *c = x->sh->cache;
	uint64_t ttl, cas;
	size_t len;
	int rc;

	if (!larderd_exptime_to_ttl(s->exptime, &ttl)) {
		/* stored dead: no value is left, but the store happened (with a
		 * unique of its own, which ms c shows) */
		bool stored;
		if (s->comm == LARDERD_CMD_SET) {
			larderd_ignore(larder_remove(c, s->key, s->klen));
			stored = true;
		} else if (s->comm == LARDERD_CMD_ADD) {
			stored = larder_contains(c, s->key, s->klen) != LARDER_OK;
		} else {
			stored = larder_remove(c, s->key, s->klen) == LARDER_OK;
		}
		if (!stored)
			return LARDERD_NOT_STORED;
		*cas_out = larderd_next_cas(x);
		return LARDERD_STORED;
	}
	cas = larderd_next_cas(x);
	len = build(x, cas, s->flags, s->bits, s->data, s->len, NULL, 0);
	if (len == 0) {
		*err = k_oom;
		return LARDERD_STORE_FAILED;
	}
	if (s->comm == LARDERD_CMD_SET)
		rc = larder_put(c, s->key, s->klen, x->b, len, ttl);
	else if (s->comm == LARDERD_CMD_ADD)
		rc = larder_put_if_absent(c, s->key, s->klen, x->b, len, ttl);
	else
		rc = larder_replace(c, s->key, s->klen, x->b, len, ttl);
	if (rc == LARDER_OK) {
		*cas_out = cas;
		return LARDERD_STORED;
	}
	if (rc == LARDER_EXISTS || rc == LARDER_MISS)
		return LARDERD_NOT_STORED;
	if (s->comm == LARDERD_CMD_SET)
		larderd_ignore(larder_remove(c, s->key, s->klen));
	*err = larderd_store_error(x, rc);
	return LARDERD_STORE_FAILED;
}

enum cas_res { CAS_NONE, CAS_MATCH, CAS_STALE, CAS_BADVAL };

/* cas, append, prepend: read, decide, swap; again if another write came in. */
static enum larderd_store_res store_rmw(struct larderd_exec *x, const struct larderd_store *s,
					uint64_t *cas_out, const char **err)
{
	larder *c = x->sh->cache;
	bool is_cas = s->comm == LARDERD_CMD_CAS;
	uint64_t new_ttl;
	bool alive = larderd_exptime_to_ttl(s->exptime, &new_ttl);

	for (int tries = 0; tries < RMW_TRIES; tries++) {
		size_t old_len, len;
		uint64_t old_cas, cas, ttl = new_ttl;
		uint32_t old_flags;
		uint8_t old_bits;
		enum cas_res cr;
		int rc = larderd_read_item(x, s->key, s->klen, &old_len);

		if (rc == LARDER_MISS) {
			if (is_cas)
				larderd_stat_add(x, WS_CAS_MISSES, 1);
			return is_cas ? LARDERD_NOT_FOUND : LARDERD_NOT_STORED;
		}
		if (rc != LARDER_OK) {
			*err = larderd_store_error(x, rc);
			return LARDERD_STORE_FAILED;
		}
		larderd_hdr_get(x->a, &old_cas, &old_flags, &old_bits);
		cr = s->cas == 0 ? CAS_NONE
		     : s->cas == old_cas ? CAS_MATCH
		     : (s->set_stale && s->cas < old_cas) ? CAS_STALE : CAS_BADVAL;
		cas = larderd_next_cas(x);
		if (is_cas) {
			if (cr != CAS_MATCH && cr != CAS_STALE) {
				larderd_stat_add(x, WS_CAS_BADVAL, 1);
				return LARDERD_EXISTS;
			}
			if (cr == CAS_MATCH && !alive) {
				rc = larder_remove_if_equals(c, s->key, s->klen, x->a, old_len);
				if (rc == LARDER_MISMATCH)
					continue;
				if (rc != LARDER_OK)
					return LARDERD_NOT_FOUND;
				larderd_stat_add(x, WS_CAS_HITS, 1);
				*cas_out = cas;
				return LARDERD_STORED;
			}
			if (cr == CAS_STALE) {
				ttl = larderd_keep_ttl(x, s->key, s->klen);
				len = build(x, cas, s->flags,
					    (uint8_t)(s->bits | LARDERD_BIT_STALE | (old_bits & LARDERD_BIT_WON)),
					    s->data, s->len, NULL, 0);
			} else {
				len = build(x, cas, s->flags, s->bits, s->data, s->len, NULL, 0);
			}
		} else {
			const unsigned char *old = x->a + LARDERD_HDR;
			size_t on = old_len - LARDERD_HDR;
			struct larderd_limits lim = {.item_max = x->sh->item_max};
			if (cr != CAS_NONE && cr != CAS_MATCH)
				return LARDERD_EXISTS;
			if (!larderd_item_fits(&lim, s->klen, old_flags, (uint64_t)on + s->len))
				return LARDERD_NOT_STORED;
			ttl = larderd_keep_ttl(x, s->key, s->klen);
			if (s->comm == LARDERD_CMD_APPEND)
				len = build(x, cas, old_flags, 0, old, on, s->data, s->len);
			else
				len = build(x, cas, old_flags, 0, s->data, s->len, old, on);
		}
		if (len == 0) {
			*err = k_oom;
			return LARDERD_STORE_FAILED;
		}
		rc = larder_replace_if_equals(c, s->key, s->klen, x->a, old_len, x->b, len, ttl);
		if (rc == LARDER_MISMATCH)
			continue;
		if (rc == LARDER_OK) {
			if (is_cas)
				larderd_stat_add(x, WS_CAS_HITS, 1);
			*cas_out = cas;
			return LARDERD_STORED;
		}
		if (rc == LARDER_MISS)
			return is_cas ? LARDERD_NOT_FOUND : LARDERD_NOT_STORED;
		*err = larderd_store_error(x, rc);
		return LARDERD_STORE_FAILED;
	}
	*err = k_oom;
	return LARDERD_STORE_FAILED;
}

enum larderd_store_res larderd_store_item(struct larderd_exec *x, const struct larderd_store *s,
					  uint64_t *cas_out, const char **err)
{
	enum larderd_store_res r;

	*cas_out = 0;
	if (!s->not_a_set)
		larderd_stat_add(x, WS_CMD_SET, 1);
	if (s->comm == LARDERD_CMD_SET || s->comm == LARDERD_CMD_ADD ||
	    s->comm == LARDERD_CMD_REPLACE)
		r = store_plain(x, s, cas_out, err);
	else
		r = store_rmw(x, s, cas_out, err);
	if (r == LARDERD_STORED)
		larderd_stat_add(x, WS_TOTAL_ITEMS, 1);
	return r;
}

void larderd_store_too_large(struct larderd_exec *x, const void *key, size_t klen, bool drop_old)
{
	larderd_stat_add(x, WS_STORE_TOO_LARGE, 1);
	if (drop_old)
		larderd_ignore(larder_remove(x->sh->cache, key, klen));
}

void larderd_exec_store(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	static const char *const k_text[] = {"STORED", "NOT_STORED", "EXISTS", "NOT_FOUND"};
	struct larderd_store s = {
		.key = req->key.p, .klen = req->key.n, .comm = req->cmd, .flags = req->flags,
		.exptime = req->exptime, .cas = req->cmd == LARDERD_CMD_CAS ? req->cas : 0,
		.data = req->data, .len = req->data_len,
	};
	const char *err = NULL;
	uint64_t cas;
	enum larderd_store_res r;

	if (larderd_detail_on(&x->sh->detail))
		larderd_detail_count(&x->sh->detail, req->key.p, req->key.n, LARDERD_DETAIL_SET, false);
	if (req->too_large) {
		larderd_store_too_large(x, req->key.p, req->key.n, req->cmd == LARDERD_CMD_SET);
		if (!req->noreply)
			larderd_obuf_line(out, larderd_too_large_reply);
		return;
	}
	r = larderd_store_item(x, &s, &cas, &err);
	if (!req->noreply)
		larderd_obuf_line(out, r == LARDERD_STORE_FAILED ? err : k_text[r]);
}
