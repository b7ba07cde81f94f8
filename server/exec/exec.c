/*
 * exec.c - the memcached text commands on top of larder (see exec.h for the
 * item format, CAS uniques and threads). Meta commands are in meta.c.
 *
 * Read-modify-write commands (cas, append, prepend, incr, decr) read the
 * whole item, compute the new bytes and publish them with
 * larder_replace_if_equals(old bytes, new bytes): the engine does the check
 * and the swap atomically, so a concurrent writer makes the swap fail with
 * LARDER_MISMATCH and the command retries on the fresh value. Since every
 * write gets a new CAS unique, "bytes equal" implies "no write in between".
 *
 * Not guaranteed: append/prepend/incr/decr keep the item's remaining TTL as
 * read by larder_ttl_remaining() just before the swap, to the millisecond.
 */
#include "exec.h"
#include "exec_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define RMW_TRIES 1000
#define GET_BATCH 16

int larder__exec_init(struct larder__exec *x, struct larder__shared *sh, unsigned id)
{
	memset(x, 0, sizeof(*x));
	x->sh = sh;
	x->id = id & 0xff;
	return 0;
}

void larder__exec_fini(struct larder__exec *x)
{
	free(x->a);
	free(x->b);
	x->a = x->b = NULL;
}

bool larder__grow(unsigned char **buf, size_t *cap, size_t need)
{
	unsigned char *nb;
	size_t c = *cap ? *cap : 4096;

	if (need <= *cap)
		return true;
	while (c < need)
		c *= 2;
	nb = realloc(*buf, c);
	if (nb == NULL)
		return false;
	*buf = nb;
	*cap = c;
	return true;
}

uint64_t larder__next_cas(struct larder__exec *x)
{
	return ++x->cas_seq << 8 | x->id;
}

void larder__hdr_put(unsigned char *p, uint64_t cas, uint32_t flags, uint8_t bits)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(cas >> (8 * i));
	for (int i = 0; i < 4; i++)
		p[8 + i] = (unsigned char)(flags >> (8 * i));
	p[12] = bits;
}

void larder__hdr_get(const unsigned char *p, uint64_t *cas, uint32_t *flags, uint8_t *bits)
{
	uint64_t c = 0;
	uint32_t f = 0;
	for (int i = 7; i >= 0; i--)
		c = c << 8 | p[i];
	for (int i = 3; i >= 0; i--)
		f = f << 8 | p[8 + i];
	*cas = c;
	*flags = f;
	*bits = p[12];
}

bool larder__exptime_to_ttl(int64_t exptime, uint64_t *ttl_ms)
{
	int64_t rel;

	if (exptime == 0) {
		*ttl_ms = LARDER_TTL_NEVER;
		return true;
	}
	if (exptime < 0)
		return false;
	rel = exptime;
	if (exptime > 60 * 60 * 24 * 30) /* memcached's REALTIME_MAXDELTA: absolute */
		rel = exptime - (int64_t)time(NULL);
	if (rel <= 0)
		return false;
	*ttl_ms = (uint64_t)rel * 1000;
	return true;
}

/* Reads the whole item into x->a. Returns a larder status or error. */
int larder__read_item(struct larder__exec *x, const void *key, size_t klen, size_t *len)
{
	for (;;) {
		int rc = larder_get(x->sh->cache, key, klen, x->a, x->a_cap, len);
		if (rc != LARDER_EBUFSIZE)
			return (rc == LARDER_OK && *len < LARDER__HDR) ? LARDER_MISS : rc;
		if (!larder__grow(&x->a, &x->a_cap, *len))
			return LARDER_ENOMEM;
	}
}

/* The engine's remaining TTL, for writes that keep it. */
uint64_t larder__keep_ttl(struct larder__exec *x, const void *key, size_t klen)
{
	uint64_t ttl;
	if (larder_ttl_remaining(x->sh->cache, key, klen, &ttl) != LARDER_OK)
		return LARDER_TTL_NEVER;
	return ttl;
}

const char *larder__store_error(struct larder__exec *x, int rc)
{
	if (rc == LARDER_EVALSIZE) {
		larder__stat_add(x, WS_STORE_TOO_LARGE, 1);
		return "SERVER_ERROR object too large for cache";
	}
	larder__stat_add(x, WS_STORE_NO_MEMORY, 1);
	if (rc == LARDER_ENOMEM || rc == LARDER_EBUSY)
		return "SERVER_ERROR out of memory storing object";
	return "SERVER_ERROR failure";
}

static void out_reply(struct larder__req *req, struct larder__obuf *out, const char *s)
{
	if (!req->noreply)
		larder__obuf_line(out, s);
}

/* ---- get family ---------------------------------------------------------- */

struct get_ctx {
	struct larder__obuf *out;
	const struct larder__tok *keys;
	bool with_cas;
};

static void get_one(void *ctx, size_t i, const void *value, size_t len)
{
	struct get_ctx *g = ctx;
	const unsigned char *v = value;
	const struct larder__tok *k = &g->keys[i];
	uint64_t cas;
	uint32_t flags;
	uint8_t bits;
	char *p;

	if (len < LARDER__HDR)
		return;
	larder__hdr_get(v, &cas, &flags, &bits);
	p = larder__obuf_reserve(g->out, k->n + len + 80);
	if (p == NULL)
		return;
	memcpy(p, "VALUE ", 6);
	p += 6;
	memcpy(p, k->p, k->n);
	p += k->n;
	*p++ = ' ';
	p += larder__fmt_u64(p, flags);
	*p++ = ' ';
	p += larder__fmt_u64(p, len - LARDER__HDR);
	if (g->with_cas) {
		*p++ = ' ';
		p += larder__fmt_u64(p, cas);
	}
	*p++ = '\r';
	*p++ = '\n';
	memcpy(p, v + LARDER__HDR, len - LARDER__HDR);
	p += len - LARDER__HDR;
	*p++ = '\r';
	*p++ = '\n';
	g->out->len = (size_t)(p - g->out->buf);
}

static int exec_get(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out,
		    size_t high_water)
{
	bool touch = req->cmd == LARDER__CMD_GAT || req->cmd == LARDER__CMD_GATS;
	struct larder__tok keys[GET_BATCH];
	const void *kp[GET_BATCH];
	size_t kl[GET_BATCH];
	struct get_ctx g = {out, keys,
			    req->cmd == LARDER__CMD_GETS || req->cmd == LARDER__CMD_GATS};
	uint64_t ttl = 0;
	bool live = !touch || larder__exptime_to_ttl(req->exptime, &ttl);

	for (;;) {
		size_t n = 0;
		long found;
		while (n < GET_BATCH && larder__next_token(&req->keys, req->keys_end, &keys[n])) {
			kp[n] = keys[n].p;
			kl[n] = keys[n].n;
			n++;
		}
		if (n == 0)
			break;
		if (touch) {
			for (size_t i = 0; i < n; i++) {
				int rc = live ? larder_touch(x->sh->cache, kp[i], kl[i], ttl)
					      : larder_contains(x->sh->cache, kp[i], kl[i]);
				larder__stat_add(x, rc == LARDER_OK ? WS_TOUCH_HITS : WS_TOUCH_MISSES, 1);
			}
			larder__stat_add(x, WS_CMD_TOUCH, n);
		}
		found = larder_get_batch(x->sh->cache, n, kp, kl, get_one, &g);
		if (found < 0)
			found = 0;
		if (touch && !live)
			for (size_t i = 0; i < n; i++)
				larder__ignore(larder_remove(x->sh->cache, kp[i], kl[i]));
		larder__stat_add(x, WS_CMD_GET, n);
		larder__stat_add(x, WS_GET_HITS, (uint64_t)found);
		larder__stat_add(x, WS_GET_MISSES, n - (uint64_t)found);
		if (out->len > high_water) {
			const char *peek = req->keys;
			struct larder__tok t;
			if (larder__next_token(&peek, req->keys_end, &t))
				return LARDER__EXEC_SUSPEND;
		}
	}
	larder__obuf_add(out, "END\r\n", 5);
	return LARDER__EXEC_DONE;
}

/* ---- storage ------------------------------------------------------------- */

static size_t build(struct larder__exec *x, uint64_t cas, uint32_t flags, const char *d1,
		    size_t n1, const char *d2, size_t n2)
{
	size_t len = LARDER__HDR + n1 + n2;
	if (!larder__grow(&x->b, &x->b_cap, len))
		return 0;
	larder__hdr_put(x->b, cas, flags, 0);
	if (n1)
		memcpy(x->b + LARDER__HDR, d1, n1);
	if (n2)
		memcpy(x->b + LARDER__HDR + n1, d2, n2);
	return len;
}

/* cas, append, prepend: read, check, swap; retried while another write interferes. */
static const char *store_rmw(struct larder__exec *x, struct larder__req *req, uint64_t ttl)
{
	larder *c = x->sh->cache;
	bool is_cas = req->cmd == LARDER__CMD_CAS;

	for (int tries = 0; tries < RMW_TRIES; tries++) {
		size_t old_len, new_len;
		uint64_t cas;
		uint32_t flags;
		uint8_t bits;
		int rc = larder__read_item(x, req->key.p, req->key.n, &old_len);

		if (rc == LARDER_MISS) {
			if (is_cas)
				larder__stat_add(x, WS_CAS_MISSES, 1);
			return is_cas ? "NOT_FOUND" : "NOT_STORED";
		}
		if (rc != LARDER_OK)
			return larder__store_error(x, rc);
		larder__hdr_get(x->a, &cas, &flags, &bits);
		if (is_cas) {
			if (cas != req->cas) {
				larder__stat_add(x, WS_CAS_BADVAL, 1);
				return "EXISTS";
			}
			new_len = build(x, larder__next_cas(x), req->flags, req->data, req->data_len,
					NULL, 0);
		} else {
			const char *old = (const char *)x->a + LARDER__HDR;
			size_t on = old_len - LARDER__HDR;
			if (on + req->data_len > x->sh->item_max)
				return "SERVER_ERROR out of memory storing object";
			ttl = larder__keep_ttl(x, req->key.p, req->key.n);
			if (req->cmd == LARDER__CMD_APPEND)
				new_len = build(x, larder__next_cas(x), flags, old, on, req->data,
						req->data_len);
			else
				new_len = build(x, larder__next_cas(x), flags, req->data,
						req->data_len, old, on);
		}
		if (new_len == 0)
			return "SERVER_ERROR out of memory storing object";
		if (is_cas && ttl == 0)
			rc = larder_remove_if_equals(c, req->key.p, req->key.n, x->a, old_len);
		else
			rc = larder_replace_if_equals(c, req->key.p, req->key.n, x->a, old_len,
						      x->b, new_len, ttl);
		if (rc == LARDER_OK) {
			if (is_cas)
				larder__stat_add(x, WS_CAS_HITS, 1);
			larder__stat_add(x, WS_TOTAL_ITEMS, 1);
			return "STORED";
		}
		if (rc == LARDER_MISS)
			return is_cas ? "NOT_FOUND" : "NOT_STORED";
		if (rc != LARDER_MISMATCH)
			return larder__store_error(x, rc);
	}
	return "SERVER_ERROR out of memory storing object";
}

/* A write whose exptime is already past: memcached stores an item that is dead on arrival. */
static const char *store_expired(struct larder__exec *x, struct larder__req *req)
{
	larder *c = x->sh->cache;
	bool present = larder_contains(c, req->key.p, req->key.n) == LARDER_OK;

	switch (req->cmd) {
	case LARDER__CMD_SET:
		larder__ignore(larder_remove(c, req->key.p, req->key.n));
		return "STORED";
	case LARDER__CMD_ADD:
		return present ? "NOT_STORED" : "STORED";
	default:
		if (!present)
			return "NOT_STORED";
		larder__ignore(larder_remove(c, req->key.p, req->key.n));
		return "STORED";
	}
}

const char *larder__exec_store_req(struct larder__exec *x, struct larder__req *req)
{
	larder *c = x->sh->cache;
	uint64_t ttl = 0;
	size_t len;
	int rc;

	larder__stat_add(x, WS_CMD_SET, 1);
	if (req->cmd == LARDER__CMD_CAS || req->cmd == LARDER__CMD_APPEND ||
	    req->cmd == LARDER__CMD_PREPEND) {
		if (req->cmd == LARDER__CMD_CAS && !larder__exptime_to_ttl(req->exptime, &ttl))
			ttl = 0; /* store_rmw: a matching cas with a past exptime deletes */
		return store_rmw(x, req, ttl);
	}
	if (!larder__exptime_to_ttl(req->exptime, &ttl))
		return store_expired(x, req);
	len = build(x, larder__next_cas(x), req->flags, req->data, req->data_len, NULL, 0);
	if (len == 0)
		return "SERVER_ERROR out of memory storing object";
	if (req->cmd == LARDER__CMD_SET)
		rc = larder_put(c, req->key.p, req->key.n, x->b, len, ttl);
	else if (req->cmd == LARDER__CMD_ADD)
		rc = larder_put_if_absent(c, req->key.p, req->key.n, x->b, len, ttl);
	else
		rc = larder_replace(c, req->key.p, req->key.n, x->b, len, ttl);
	if (rc == LARDER_OK) {
		larder__stat_add(x, WS_TOTAL_ITEMS, 1);
		return "STORED";
	}
	if (rc == LARDER_EXISTS || rc == LARDER_MISS)
		return "NOT_STORED";
	if (req->cmd == LARDER__CMD_SET) /* as memcached: a failed set leaves no stale value */
		larder__ignore(larder_remove(c, req->key.p, req->key.n));
	return larder__store_error(x, rc);
}

/* ---- incr/decr ------------------------------------------------------------ */

/* memcached's safe_strtoull on item data: spaces, digits, then a space or the end. */
static bool data_u64(const unsigned char *d, size_t n, uint64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;

	while (i < n && (d[i] == ' ' || d[i] == '\t' || d[i] == '\r' || d[i] == '\n'))
		i++;
	if (i < n && d[i] == '+')
		i++;
	if (i == n || d[i] < '0' || d[i] > '9')
		return false;
	for (; i < n && d[i] >= '0' && d[i] <= '9'; i++) {
		unsigned dig = d[i] - '0';
		if (v > (UINT64_MAX - dig) / 10)
			return false;
		v = v * 10 + dig;
	}
	if (i < n && d[i] != ' ' && d[i] != '\t' && d[i] != '\r' && d[i] != '\n')
		return false;
	*out = v;
	return true;
}

int larder__arith(struct larder__exec *x, const struct larder__tok *key, bool incr,
		  uint64_t delta, uint64_t *result, uint64_t *cas_out)
{
	for (int tries = 0; tries < RMW_TRIES; tries++) {
		size_t old_len, new_len, on, rn;
		uint64_t cas, v;
		uint32_t flags;
		uint8_t bits;
		char num[24];
		int rc = larder__read_item(x, key->p, key->n, &old_len);

		if (rc != LARDER_OK)
			return rc == LARDER_MISS ? LARDER__ARITH_MISS : LARDER__ARITH_FAIL;
		larder__hdr_get(x->a, &cas, &flags, &bits);
		on = old_len - LARDER__HDR;
		if (on == 0 || !data_u64(x->a + LARDER__HDR, on, &v))
			return LARDER__ARITH_NONNUMERIC;
		v = incr ? v + delta : (delta > v ? 0 : v - delta);
		rn = larder__fmt_u64(num, v);
		/* memcached rewrites in place when the number shrinks, padding with spaces */
		new_len = build(x, larder__next_cas(x), flags, num, rn, NULL, 0);
		if (new_len == 0 || !larder__grow(&x->b, &x->b_cap, LARDER__HDR + on))
			return LARDER__ARITH_FAIL;
		if (rn < on) {
			memset(x->b + LARDER__HDR + rn, ' ', on - rn);
			new_len = LARDER__HDR + on;
		}
		rc = larder_replace_if_equals(x->sh->cache, key->p, key->n, x->a, old_len, x->b,
					      new_len, larder__keep_ttl(x, key->p, key->n));
		if (rc == LARDER_OK) {
			*result = v;
			larder__hdr_get(x->b, cas_out, &flags, &bits);
			return LARDER__ARITH_OK;
		}
		if (rc == LARDER_MISS)
			return LARDER__ARITH_MISS;
		if (rc != LARDER_MISMATCH)
			return LARDER__ARITH_FAIL;
	}
	return LARDER__ARITH_FAIL;
}

static void exec_arith(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out)
{
	bool incr = req->cmd == LARDER__CMD_INCR;
	uint64_t v, cas;
	char num[24];
	size_t n;

	switch (larder__arith(x, &req->key, incr, req->delta, &v, &cas)) {
	case LARDER__ARITH_OK:
		larder__stat_add(x, incr ? WS_INCR_HITS : WS_DECR_HITS, 1);
		n = larder__fmt_u64(num, v);
		num[n] = '\0';
		out_reply(req, out, num);
		return;
	case LARDER__ARITH_MISS:
		larder__stat_add(x, incr ? WS_INCR_MISSES : WS_DECR_MISSES, 1);
		out_reply(req, out, "NOT_FOUND");
		return;
	case LARDER__ARITH_NONNUMERIC:
		out_reply(req, out, "CLIENT_ERROR cannot increment or decrement non-numeric value");
		return;
	default:
		out_reply(req, out, "SERVER_ERROR out of memory");
		return;
	}
}

/* ---- delete, touch, flush, misc -------------------------------------------- */

static void exec_delete(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out)
{
	int rc = larder_remove(x->sh->cache, req->key.p, req->key.n);
	larder__stat_add(x, rc == LARDER_OK ? WS_DELETE_HITS : WS_DELETE_MISSES, 1);
	out_reply(req, out, rc == LARDER_OK ? "DELETED" : "NOT_FOUND");
}

int larder__touch_key(struct larder__exec *x, const void *key, size_t klen, int64_t exptime)
{
	uint64_t ttl;
	if (!larder__exptime_to_ttl(exptime, &ttl))
		return larder_remove(x->sh->cache, key, klen);
	return larder_touch(x->sh->cache, key, klen, ttl);
}

static void exec_touch(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out)
{
	int rc = larder__touch_key(x, req->key.p, req->key.n, req->exptime);
	larder__stat_add(x, WS_CMD_TOUCH, 1);
	larder__stat_add(x, rc == LARDER_OK ? WS_TOUCH_HITS : WS_TOUCH_MISSES, 1);
	out_reply(req, out, rc == LARDER_OK ? "TOUCHED" : "NOT_FOUND");
}

static void exec_flush(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out)
{
	larder__stat_add(x, WS_CMD_FLUSH, 1);
	if (req->num > 0) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		/* Relaxed: the main thread polls it once a second; no data hangs off it. */
		atomic_store_explicit(&x->sh->flush_at_ms,
				      (uint64_t)ts.tv_sec * 1000 + (uint64_t)req->num * 1000,
				      memory_order_relaxed);
	} else if (larder_clear(x->sh->cache) != LARDER_OK) {
		out_reply(req, out, "SERVER_ERROR out of memory");
		return;
	}
	out_reply(req, out, "OK");
}

int larder__exec(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out,
		 size_t high_water)
{
	switch (req->cmd) {
	case LARDER__CMD_REPLY:
		out_reply(req, out, req->reply);
		break;
	case LARDER__CMD_GET: case LARDER__CMD_GETS: case LARDER__CMD_GAT: case LARDER__CMD_GATS:
		return exec_get(x, req, out, high_water);
	case LARDER__CMD_SET: case LARDER__CMD_ADD: case LARDER__CMD_REPLACE:
	case LARDER__CMD_APPEND: case LARDER__CMD_PREPEND: case LARDER__CMD_CAS:
		out_reply(req, out, larder__exec_store_req(x, req));
		break;
	case LARDER__CMD_DELETE:
		exec_delete(x, req, out);
		break;
	case LARDER__CMD_INCR: case LARDER__CMD_DECR:
		exec_arith(x, req, out);
		break;
	case LARDER__CMD_TOUCH:
		exec_touch(x, req, out);
		break;
	case LARDER__CMD_FLUSH_ALL:
		exec_flush(x, req, out);
		break;
	case LARDER__CMD_VERSION:
		larder__obuf_line(out, "VERSION " LARDER__VERSION_STR);
		break;
	case LARDER__CMD_VERBOSITY:
		out_reply(req, out, "OK");
		break;
	case LARDER__CMD_QUIT:
		return LARDER__EXEC_CLOSE;
	case LARDER__CMD_STATS:
		larder__exec_stats(x, req, out);
		break;
	case LARDER__CMD_METADUMP:
		return larder__exec_metadump(x, req, out, high_water);
	default:
		larder__exec_meta(x, req, out);
		break;
	}
	return out->failed ? LARDER__EXEC_NOMEM : LARDER__EXEC_DONE;
}
