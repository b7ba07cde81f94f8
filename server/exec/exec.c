/*
 * exec.c - the memcached text commands on top of larder (see exec.h for the
 * item format, CAS uniques and threads), except storage (store.c), meta
 * commands (meta.c) and stats (stats.c), plus the item helpers they share.
 *
 * Read-modify-write commands (incr, decr, and in store.c cas, append,
 * prepend) read the whole item, compute the new bytes and publish them with
 * larder_replace_if_equals(old bytes, new bytes): the engine does the check
 * and the swap atomically, so a concurrent writer makes the swap fail with
 * LARDER_MISMATCH and the command retries on the fresh value. Since every
 * write gets a new CAS unique, "bytes equal" implies "no write in between".
 *
 * Fetched: memcached marks an item fetched on its first read (get, gets,
 * gat, touch, mg without u), and mg h / me report it. larderd keeps that
 * bit in the item header, so the first read of each written value costs one
 * more engine write (larderd_mark_fetched()): a cache-aside client's
 * set-then-get would pay a second write, and the maintainer a second
 * wake-up, per round trip, for a flag few clients ask about. So reads mark
 * nothing until the first request that asks (mg with h, me); from then on
 * the process tracks every first read exactly. Reads before that are not
 * counted (docs/server.md).
 *
 * Not guaranteed: writes that keep an item's TTL (incr, append, the meta
 * bits) read it with larder_ttl_remaining() just before the swap, to the
 * millisecond, not atomically with it.
 */
#include "exec.h"
#include "exec_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RMW_TRIES 1000
#define GET_BATCH 16
#define REALTIME_MAXDELTA (60 * 60 * 24 * 30) /* memcached: larger exptimes are Unix times */
/* memcached's process_started is its start time minus 62 s: an absolute
 * exptime or flush time at or before it counts as "the distant past". */
#define MC_STARTED_SLACK 62
#define MAX_VERBOSITY 2

void larderd_shared_init(struct larderd_shared *sh, char prefix_delimiter)
{
	pthread_mutex_init(&sh->reset_lock, NULL);
	pthread_mutex_init(&sh->flush_lock, NULL);
	larderd_detail_init(&sh->detail, prefix_delimiter);
}

int larderd_exec_init(struct larderd_exec *x, struct larderd_shared *sh, unsigned id)
{
	memset(x, 0, sizeof(*x));
	x->sh = sh;
	x->id = id & 0xff;
	return 0;
}

void larderd_exec_fini(struct larderd_exec *x)
{
	free(x->a);
	free(x->b);
	free(x->c);
	x->a = x->b = x->c = NULL;
}

bool larderd_grow(unsigned char **buf, size_t *cap, size_t need)
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

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* CLOCK_MONOTONIC in 16 ns units: the time stamp of CAS uniques (exec.h). */
static uint64_t stamp_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) >> 4;
}

uint64_t larderd_next_cas(struct larderd_exec *x)
{
	uint64_t t = stamp_now();

	x->cas_seq = t > x->cas_seq ? t : x->cas_seq + 1;
	return x->cas_seq << 8 | x->id;
}

uint64_t larderd_age_seconds(uint64_t cas)
{
	uint64_t then = cas >> 8, now = stamp_now();
	return now > then ? ((now - then) << 4) / 1000000000u : 0;
}

void larderd_hdr_put(unsigned char *p, uint64_t cas, uint32_t flags, uint8_t bits)
{
	for (int i = 0; i < 8; i++)
		p[i] = (unsigned char)(cas >> (8 * i));
	for (int i = 0; i < 4; i++)
		p[8 + i] = (unsigned char)(flags >> (8 * i));
	p[12] = bits;
}

void larderd_hdr_get(const unsigned char *p, uint64_t *cas, uint32_t *flags, uint8_t *bits)
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

bool larderd_exptime_to_ttl(int64_t exptime, uint64_t *ttl_ms)
{
	int64_t ms;

	if (exptime == 0) {
		*ttl_ms = LARDER_TTL_NEVER;
		return true;
	}
	if (exptime < 0)
		return false;
	if (exptime <= REALTIME_MAXDELTA) {
		*ttl_ms = (uint64_t)exptime * 1000;
		return true;
	}
	ms = (int64_t)exptime * 1000 - (int64_t)now_ms();
	if (ms <= 0)
		return false;
	*ttl_ms = (uint64_t)ms;
	return true;
}

/* memcached's "current_time": seconds since its process_started. */
static int64_t mc_current_time(const struct larderd_shared *sh)
{
	return (int64_t)(now_ms() / 1000) - ((int64_t)sh->started - MC_STARTED_SLACK);
}

int64_t larderd_dead_ttl_seconds(struct larderd_exec *x, int32_t exptime)
{
	int64_t started = (int64_t)x->sh->started - MC_STARTED_SLACK, rel = 1;

	if (exptime > REALTIME_MAXDELTA && exptime > started)
		rel = exptime - started;
	return (int64_t)(uint32_t)(rel - mc_current_time(x->sh));
}

long long larderd_ttl_seconds(struct larderd_exec *x, const void *key, size_t klen)
{
	uint64_t ms;

	if (larder_ttl_remaining(x->sh->cache, key, klen, &ms) != LARDER_OK ||
	    ms == LARDER_TTL_NEVER)
		return -1;
	return (long long)((ms + 999) / 1000);
}

/* Reads the whole item into x->a. Returns a larder status or error. */
int larderd_read_item(struct larderd_exec *x, const void *key, size_t klen, size_t *len)
{
	for (;;) {
		int rc = larder_get(x->sh->cache, key, klen, x->a, x->a_cap, len);
		if (rc != LARDER_EBUFSIZE)
			return (rc == LARDER_OK && *len < LARDERD_HDR) ? LARDER_MISS : rc;
		if (!larderd_grow(&x->a, &x->a_cap, *len))
			return LARDER_ENOMEM;
	}
}

/* The engine's remaining TTL, for writes that keep it. */
uint64_t larderd_keep_ttl(struct larderd_exec *x, const void *key, size_t klen)
{
	uint64_t ttl;
	if (larder_ttl_remaining(x->sh->cache, key, klen, &ttl) != LARDER_OK)
		return LARDER_TTL_NEVER;
	return ttl;
}

int larderd_set_bits(struct larderd_exec *x, const void *key, size_t klen, size_t old_len,
		     uint8_t bits)
{
	if (!larderd_grow(&x->b, &x->b_cap, old_len))
		return LARDER_ENOMEM;
	memcpy(x->b, x->a, old_len);
	x->b[12] = bits;
	return larder_replace_if_equals(x->sh->cache, key, klen, x->a, old_len, x->b, old_len,
					larderd_keep_ttl(x, key, klen));
}

void larderd_track_fetched(struct larderd_exec *x)
{
	/* Relaxed: a switch (exec.h); written once, re-writing it is harmless. */
	if (!atomic_load_explicit(&x->sh->track_fetched, memory_order_relaxed))
		atomic_store_explicit(&x->sh->track_fetched, true, memory_order_relaxed);
}

static bool tracking(const struct larderd_exec *x)
{
	/* Relaxed: see track_fetched in exec.h. */
	return atomic_load_explicit(&x->sh->track_fetched, memory_order_relaxed);
}

void larderd_mark_fetched(struct larderd_exec *x, const void *key, size_t klen)
{
	if (!tracking(x))
		return;
	for (int tries = 0; tries < RMW_TRIES; tries++) {
		size_t len;
		uint64_t cas;
		uint32_t flags;
		uint8_t bits;

		if (larderd_read_item(x, key, klen, &len) != LARDER_OK)
			return;
		larderd_hdr_get(x->a, &cas, &flags, &bits);
		if ((bits & LARDERD_BIT_FETCHED) ||
		    larderd_set_bits(x, key, klen, len, bits | LARDERD_BIT_FETCHED) != LARDER_MISMATCH)
			return;
	}
}

int larderd_touch_key(struct larderd_exec *x, const void *key, size_t klen, int64_t exptime,
		      bool fetch)
{
	larder *c = x->sh->cache;
	uint64_t ttl;

	if (!larderd_exptime_to_ttl(exptime, &ttl))
		return larder_remove(c, key, klen);
	if (!fetch || !tracking(x))
		return larder_touch(c, key, klen, ttl);
	for (int tries = 0; tries < RMW_TRIES; tries++) {
		size_t len;
		uint64_t cas;
		uint32_t flags;
		uint8_t bits;
		int rc = larderd_read_item(x, key, klen, &len);

		if (rc != LARDER_OK)
			return rc;
		larderd_hdr_get(x->a, &cas, &flags, &bits);
		if (bits & LARDERD_BIT_FETCHED)
			return larder_touch(c, key, klen, ttl);
		if (!larderd_grow(&x->b, &x->b_cap, len))
			return LARDER_ENOMEM;
		memcpy(x->b, x->a, len);
		x->b[12] = bits | LARDERD_BIT_FETCHED;
		/* the swap adds the deadline as larder_touch would: the same
		 * LARDER_EVALSIZE at the entry limit, the item kept as it was */
		rc = larder_replace_if_equals(c, key, klen, x->a, len, x->b, len, ttl);
		if (rc != LARDER_MISMATCH)
			return rc;
	}
	return LARDER_MISS;
}

const char larderd_too_large_reply[] = "SERVER_ERROR object too large for cache";

const char *larderd_store_error(struct larderd_exec *x, int rc)
{
	if (rc == LARDER_EVALSIZE) {
		larderd_stat_add(x, WS_STORE_TOO_LARGE, 1);
		return larderd_too_large_reply;
	}
	larderd_stat_add(x, WS_STORE_NO_MEMORY, 1);
	if (rc == LARDER_ENOMEM) /* the engine could not allocate: memcached's malloc_fails */
		larderd_stat_add(x, WS_MALLOC_FAILS, 1);
	if (rc == LARDER_ENOMEM || rc == LARDER_EBUSY)
		return "SERVER_ERROR out of memory storing object";
	return "SERVER_ERROR failure";
}

const char *larderd_touch_error(int rc)
{
	if (rc == LARDER_EVALSIZE)
		return larderd_too_large_reply;
	if (rc == LARDER_ENOMEM || rc == LARDER_EBUSY)
		return "SERVER_ERROR out of memory";
	return "SERVER_ERROR failure";
}

static void out_reply(struct larderd_req *req, struct larderd_obuf *out, const char *s)
{
	if (!req->noreply)
		larderd_obuf_line(out, s);
}

/* ---- get family ---------------------------------------------------------- */

struct get_ctx {
	struct larderd_obuf *out;
	const struct larderd_tok *keys;
	bool with_cas;
	bool unfetched[GET_BATCH];
	bool hit[GET_BATCH];
};

static void get_one(void *ctx, size_t i, const void *value, size_t len)
{
	struct get_ctx *g = ctx;
	const unsigned char *v = value;
	const struct larderd_tok *k = &g->keys[i];
	uint64_t cas;
	uint32_t flags;
	uint8_t bits;
	char *p;

	if (len < LARDERD_HDR)
		return;
	g->hit[i] = true;
	larderd_hdr_get(v, &cas, &flags, &bits);
	g->unfetched[i] = !(bits & LARDERD_BIT_FETCHED);
	p = larderd_obuf_reserve(g->out, k->n + len + 80);
	if (p == NULL)
		return;
	memcpy(p, "VALUE ", 6);
	p += 6;
	memcpy(p, k->p, k->n);
	p += k->n;
	*p++ = ' ';
	p += larderd_fmt_u64(p, flags);
	*p++ = ' ';
	p += larderd_fmt_u64(p, len - LARDERD_HDR);
	if (g->with_cas) {
		*p++ = ' ';
		p += larderd_fmt_u64(p, cas);
	}
	*p++ = '\r';
	*p++ = '\n';
	memcpy(p, v + LARDERD_HDR, len - LARDERD_HDR);
	p += len - LARDERD_HDR;
	*p++ = '\r';
	*p++ = '\n';
	g->out->len = (size_t)(p - g->out->buf);
}

/* gat/gats: touch each key first (memcached touches, then returns the item;
 * an exptime in the past still returns it once). Returns how many keys were
 * touched before one whose touch failed (larderd_touch_key's error in *err),
 * n when none failed; the keys after a failure are left alone. */
static size_t gat_touch(struct larderd_exec *x, struct larderd_req *req, const void *const kp[],
			const size_t kl[], size_t n, bool dead, int *err)
{
	size_t i;

	for (i = 0; i < n; i++) {
		int rc = dead ? larder_contains(x->sh->cache, kp[i], kl[i])
			      : larderd_touch_key(x, kp[i], kl[i], req->exptime, true);
		larderd_stat_add(x, WS_CMD_TOUCH, 1);
		if (rc != LARDER_OK && rc != LARDER_MISS) {
			*err = rc;
			break;
		}
		larderd_stat_add(x, rc == LARDER_OK ? WS_TOUCH_HITS : WS_TOUCH_MISSES, 1);
	}
	return i;
}

static int exec_get(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out,
		    size_t high_water)
{
	bool touch = req->cmd == LARDERD_CMD_GAT || req->cmd == LARDERD_CMD_GATS;
	struct larderd_tok keys[GET_BATCH];
	const void *kp[GET_BATCH];
	size_t kl[GET_BATCH];
	struct get_ctx g = {out, keys,
			    req->cmd == LARDERD_CMD_GETS || req->cmd == LARDERD_CMD_GATS, {false}, {false}};
	uint64_t ttl;
	bool dead = touch && !larderd_exptime_to_ttl(req->exptime, &ttl);
	int touch_err = LARDER_OK;

	/* A gat that kills its items: one key at a time, since memcached's
	 * second mention of a key finds it gone. */
	size_t batch = dead ? 1 : GET_BATCH;

	while (touch_err == LARDER_OK) {
		size_t n = 0;
		long found;
		while (n < batch && larderd_next_token(&req->keys, req->keys_end, &keys[n])) {
			kp[n] = keys[n].p;
			kl[n] = keys[n].n;
			g.unfetched[n] = false;
			g.hit[n] = false;
			n++;
		}
		if (n == 0)
			break;
		if (touch)
			n = gat_touch(x, req, kp, kl, n, dead, &touch_err);
		if (n == 0) /* the batch's first touch failed */
			break;
		if (req->bad_key != NULL) {
			/* memcached reads (and bumps) the keys before the bad one,
			 * then drops their replies */
			for (size_t i = 0; i < n; i++) {
				if (larderd_detail_on(&x->sh->detail))
					larderd_detail_count(&x->sh->detail, kp[i], kl[i],
							     LARDERD_DETAIL_GET, larder_contains(
								     x->sh->cache, kp[i], kl[i]) == LARDER_OK);
				if (dead)
					larderd_ignore(larder_remove(x->sh->cache, kp[i], kl[i]));
				else
					larderd_mark_fetched(x, kp[i], kl[i]);
			}
			continue;
		}
		found = larder_get_batch(x->sh->cache, n, kp, kl, get_one, &g);
		if (found < 0)
			found = 0;
		for (size_t i = 0; i < n; i++) {
			if (larderd_detail_on(&x->sh->detail))
				larderd_detail_count(&x->sh->detail, kp[i], kl[i], LARDERD_DETAIL_GET,
						     g.hit[i]);
			if (dead)
				larderd_ignore(larder_remove(x->sh->cache, kp[i], kl[i]));
			else if (g.unfetched[i])
				larderd_mark_fetched(x, kp[i], kl[i]);
		}
		/* memcached counts gat and gats as touches only (gat_touch) */
		if (!touch) {
			larderd_stat_add(x, WS_CMD_GET, n);
			larderd_stat_add(x, WS_GET_HITS, (uint64_t)found);
			larderd_stat_add(x, WS_GET_MISSES, n - (uint64_t)found);
		}
		if (touch_err != LARDER_OK)
			break;
		if (out->len > high_water) {
			const char *peek = req->keys;
			struct larderd_tok t;
			if (larderd_next_token(&peek, req->keys_end, &t))
				return LARDERD_EXEC_SUSPEND;
		}
	}
	if (touch_err != LARDER_OK) /* the keys before it answered, then the error */
		larderd_obuf_line(out, larderd_touch_error(touch_err));
	else if (req->bad_key != NULL)
		larderd_obuf_line(out, "CLIENT_ERROR bad command line format");
	else
		larderd_obuf_add(out, "END\r\n", 5);
	return LARDERD_EXEC_DONE;
}

/* ---- incr/decr ------------------------------------------------------------ */

static bool c_isspace(unsigned char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/*
 * memcached's safe_strtoull() on item data (followed in memcached's item by
 * "\r\n"): white space, a sign, digits, then white space, a NUL or the end;
 * a value that only a minus sign made "negative" is not a number.
 */
static bool data_u64(const unsigned char *d, size_t n, uint64_t *out)
{
	size_t i = 0;
	uint64_t v = 0;
	bool neg = false, any = false;

	while (i < n && c_isspace(d[i]))
		i++;
	if (i < n && (d[i] == '+' || d[i] == '-'))
		neg = d[i++] == '-';
	for (; i < n && d[i] >= '0' && d[i] <= '9'; i++) {
		unsigned dig = d[i] - '0';
		if (v > (UINT64_MAX - dig) / 10)
			return false;
		v = v * 10 + dig;
		any = true;
	}
	if (!any || (i < n && d[i] != '\0' && !c_isspace(d[i])))
		return false;
	if (neg)
		v = 0 - v;
	if ((int64_t)v < 0) {
		size_t end = 0;
		while (end < n && d[end] != '\0')
			end++;
		if (memchr(d, '-', end) != NULL)
			return false;
	}
	*out = v;
	return true;
}

int larderd_arith(struct larderd_exec *x, struct larderd_arith_op *op)
{
	const struct larderd_tok *key = op->key;

	op->engine_rc = LARDER_ENOMEM; /* the scratch buffer could not grow */
	for (int tries = 0; tries < RMW_TRIES; tries++) {
		size_t old_len, new_len, on, rn;
		uint64_t cas, v;
		uint32_t flags;
		uint8_t bits;
		char num[24];
		int rc = larderd_read_item(x, key->p, key->n, &old_len);

		if (rc == LARDER_MISS)
			return LARDERD_ARITH_MISS;
		if (rc != LARDER_OK) {
			op->engine_rc = rc;
			return LARDERD_ARITH_FAIL;
		}
		larderd_hdr_get(x->a, &cas, &flags, &bits);
		on = old_len - LARDERD_HDR;
		/* memcached refuses an empty or chunked item before the CAS check */
		if (on == 0 || larderd_item_chunked(key->n, flags, on))
			return LARDERD_ARITH_NONNUMERIC;
		if (op->want_cas != 0 && cas != op->want_cas)
			return LARDERD_ARITH_CAS_MISMATCH;
		if (!data_u64(x->a + LARDERD_HDR, on, &v))
			return LARDERD_ARITH_NONNUMERIC;
		v = op->incr ? v + op->delta : (op->delta > v ? 0 : v - op->delta);
		rn = larderd_fmt_u64(num, v);
		/* memcached rewrites in place when the number fits, padding with
		 * spaces and keeping the item's bits; a longer number is a new item */
		if (!larderd_grow(&x->b, &x->b_cap, LARDERD_HDR + (rn > on ? rn : on)))
			return LARDERD_ARITH_FAIL;
		op->cas = larderd_next_cas(x);
		larderd_hdr_put(x->b, op->cas, flags, rn <= on ? bits : 0);
		memcpy(x->b + LARDERD_HDR, num, rn);
		new_len = LARDERD_HDR + rn;
		if (rn < on) {
			memset(x->b + LARDERD_HDR + rn, ' ', on - rn);
			new_len = LARDERD_HDR + on;
		}
		op->ttl_before = larderd_keep_ttl(x, key->p, key->n);
		rc = larder_replace_if_equals(x->sh->cache, key->p, key->n, x->a, old_len, x->b,
					      new_len,
					      op->ttl_ms != NULL && rn <= on ? *op->ttl_ms
									     : op->ttl_before);
		if (rc == LARDER_OK) {
			op->result = v;
			op->grew = rn > on;
			return LARDERD_ARITH_OK;
		}
		if (rc == LARDER_MISS)
			return LARDERD_ARITH_MISS;
		if (rc != LARDER_MISMATCH) {
			op->engine_rc = rc;
			return LARDERD_ARITH_FAIL;
		}
	}
	op->engine_rc = LARDER_EBUSY;
	return LARDERD_ARITH_FAIL;
}

static void exec_arith(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	bool incr = req->cmd == LARDERD_CMD_INCR;
	struct larderd_arith_op op = {.key = &req->key, .incr = incr, .delta = req->delta};
	char num[24];
	size_t n;

	switch (larderd_arith(x, &op)) {
	case LARDERD_ARITH_OK:
		larderd_stat_add(x, incr ? WS_INCR_HITS : WS_DECR_HITS, 1);
		n = larderd_fmt_u64(num, op.result);
		num[n] = '\0';
		out_reply(req, out, num);
		return;
	case LARDERD_ARITH_MISS:
		larderd_stat_add(x, incr ? WS_INCR_MISSES : WS_DECR_MISSES, 1);
		out_reply(req, out, "NOT_FOUND");
		return;
	case LARDERD_ARITH_NONNUMERIC:
		out_reply(req, out, "CLIENT_ERROR cannot increment or decrement non-numeric value");
		return;
	default:
		out_reply(req, out, "SERVER_ERROR out of memory");
		return;
	}
}

/* ---- delete, touch, flush, misc -------------------------------------------- */

/* Removes the item only while its unique is cas: read, compare, remove if
 * the bytes are still those read (again when another write came in). */
static int remove_if_cas(struct larderd_exec *x, const void *key, size_t klen, uint64_t cas)
{
	for (int tries = 0; tries < RMW_TRIES; tries++) {
		size_t len;
		uint64_t item_cas;
		uint32_t flags;
		uint8_t bits;
		int rc = larderd_read_item(x, key, klen, &len);

		if (rc != LARDER_OK)
			return rc;
		larderd_hdr_get(x->a, &item_cas, &flags, &bits);
		if (item_cas != cas)
			return LARDER_EXISTS;
		rc = larder_remove_if_equals(x->sh->cache, key, klen, x->a, len);
		if (rc != LARDER_MISMATCH)
			return rc;
	}
	return LARDER_MISS;
}

int larderd_delete_key(struct larderd_exec *x, const void *key, size_t klen, uint64_t cas)
{
	int rc = cas == 0 ? larder_remove(x->sh->cache, key, klen) : remove_if_cas(x, key, klen, cas);

	if (rc == LARDER_EXISTS)
		return rc;
	if (rc == LARDER_OK)
		larderd_stat_add(x, WS_DELETE_HITS, 1);
	else if (rc == LARDER_MISS)
		larderd_stat_add(x, WS_DELETE_MISSES, 1);
	return rc == LARDER_OK ? LARDER_OK : LARDER_MISS;
}

static void exec_delete(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	int rc;

	if (larderd_detail_on(&x->sh->detail))
		larderd_detail_count(&x->sh->detail, req->key.p, req->key.n, LARDERD_DETAIL_DEL, false);
	rc = larderd_delete_key(x, req->key.p, req->key.n, 0);
	out_reply(req, out, rc == LARDER_OK ? "DELETED" : "NOT_FOUND");
}

static void exec_touch(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	int rc = larderd_touch_key(x, req->key.p, req->key.n, req->exptime, true);
	larderd_stat_add(x, WS_CMD_TOUCH, 1);
	if (rc != LARDER_OK && rc != LARDER_MISS) { /* found, not touched: neither counter */
		out_reply(req, out, larderd_touch_error(rc));
		return;
	}
	larderd_stat_add(x, rc == LARDER_OK ? WS_TOUCH_HITS : WS_TOUCH_MISSES, 1);
	out_reply(req, out, rc == LARDER_OK ? "TOUCHED" : "NOT_FOUND");
}

static uint64_t flush_clock_ms(const struct larderd_shared *sh)
{
	return sh->flush_clock_ms ? sh->flush_clock_ms() : now_ms();
}

/*
 * flush_all [delay] and the binary FLUSH: memcached keeps one flush time,
 * oldest_live, which each flush replaces: the second asked for less one
 * (realtime(delay) - 1), on its clock of whole seconds. From that second
 * on, an item is flushed when it was written (linked) in that second or
 * before (item_is_flushed: it->time <= oldest_live), so what is written
 * during the due second is flushed as well; from the next second on,
 * writes are kept. A delay of 0 or less flushes now (oldest_live is the
 * second before the current one: the rest of this second's writes are
 * kept). 1..30 days is relative: the due second is the command's plus
 * d - 1, so a delay of 1 is due now and flushes the rest of this second's
 * writes too. More is a Unix time t: due second t - 1, in the past a
 * flush now; at or before the server started (memcached's realtime()
 * gives 1, so oldest_live is 0), no flush time at all, which cancels a
 * pending one. larderd_flush_due() runs a due flush; larderd_flush_window()
 * flushes the due second's writes.
 */
int larderd_flush(struct larderd_exec *x, int64_t delay)
{
	struct larderd_shared *sh = x->sh;
	uint64_t at = 0, now = flush_clock_ms(sh);
	bool now_flush = delay <= 0;
	int rc;

	larderd_stat_add(x, WS_CMD_FLUSH, 1);
	if (delay > REALTIME_MAXDELTA) {
		if (delay > (int64_t)sh->started - MC_STARTED_SLACK) {
			at = (uint64_t)(delay - 1) * 1000;
			if (at + 1000 <= now) { /* the due second is over */
				at = 0;
				now_flush = true;
			}
		}
	} else if (delay > 0) {
		at = (now / 1000 + (uint64_t)(delay - 1)) * 1000;
	}
	/* Under flush_lock: a due flush being run stores 0 after its clear,
	 * which must not overwrite this time. Relaxed: a command's acquire load
	 * in larderd_flush_due pairs only with that 0's release (it orders the
	 * command after a clear); a new time publishes no data, and a command
	 * that reads the old one a moment longer is one this flush_all raced.
	 * The window of an earlier flush ends: memcached's new oldest_live
	 * replaces the old one. */
	pthread_mutex_lock(&sh->flush_lock);
	atomic_store_explicit(&sh->flush_end_ms, 0, memory_order_relaxed);
	atomic_store_explicit(&sh->flush_at_ms, at, memory_order_relaxed);
	rc = now_flush ? larder_clear(sh->cache) : LARDER_OK;
	pthread_mutex_unlock(&sh->flush_lock);
	if (at != 0 && at <= now) /* due in this second: flush_all 1 */
		larderd_flush_due(sh);
	return rc;
}

/*
 * Runs a delayed flush_all once it is due. Every command calls it first
 * (text, meta and binary), as memcached compares its flush time at each
 * read, so a command read after the due time never sees a flushed item,
 * however late the main thread runs; the main thread calls it once a
 * second for a server without traffic. Its cost on the command path: one
 * acquire load (a plain load on x86).
 *
 * The time goes back to 0 only after the clear, under flush_lock, by a
 * store with release that the load's acquire reads: a command that finds the
 * flush due waits on the lock for the caller running the clear, and one
 * that finds 0 is ordered after that clear. So no command that starts past
 * the due time reads an item the flush removes, nor has an item it wrote
 * removed by a clear still to come. (Clearing the time first and the items
 * after, as this did before, let a command on another connection find 0
 * and read a flushed item until the clear ran; test_flushdue.c in
 * tests/protocol.) The end of the due second is stored before that 0, so
 * a command ordered after the clear sees it (larderd_flush_window).
 */
void larderd_flush_due(struct larderd_shared *sh)
{
	/* Acquire: a 0 stored after a clear orders this command after it. */
	uint64_t at = atomic_load_explicit(&sh->flush_at_ms, memory_order_acquire);

	if (at == 0 || flush_clock_ms(sh) < at)
		return;
	pthread_mutex_lock(&sh->flush_lock);
	/* Relaxed: written only under the lock; a flush_all may have replaced it. */
	at = atomic_load_explicit(&sh->flush_at_ms, memory_order_relaxed);
	/* A refused clear (out of memory, or its event not queued in time)
	 * leaves the flush due: the next command, or the main thread's next
	 * second, runs it again, rather than the items it must remove staying
	 * readable with nothing pending (test_flushdue.c, part 3). */
	if (at != 0 && flush_clock_ms(sh) >= at && larder_clear(sh->cache) == LARDER_OK) {
		/* Relaxed: published by the release below. */
		atomic_store_explicit(&sh->flush_end_ms, at + 1000, memory_order_relaxed);
		/* Release: after the clear and the window, for the acquire load above. */
		atomic_store_explicit(&sh->flush_at_ms, 0, memory_order_release);
	}
	pthread_mutex_unlock(&sh->flush_lock);
}

/*
 * The rest of a flush's due second: memcached flushes what is written in
 * it too (its link time is not after oldest_live), so a set then answers
 * STORED and the next get misses, an add of the same key succeeds again,
 * an incr finds nothing. larderd removes such a write right after the
 * command made it, and only while the item is still the one it wrote (its
 * CAS unique, the worker's last), so a later write of the key, after the
 * second, is never taken with it. Every command that may write one key
 * calls this after it ran; its cost outside such a second is one relaxed
 * load (a command that wrote nothing returns before even that).
 *
 * Not guaranteed: a command on another connection that runs between such
 * a write and its removal reads the item, which memcached would not show;
 * the two commands are concurrent, and the item is gone once the writing
 * command has answered.
 */
void larderd_flush_window(struct larderd_exec *x, const void *key, size_t klen,
			  uint64_t cas_seq_before)
{
	struct larderd_shared *sh = x->sh;
	uint64_t end;

	if (x->cas_seq == cas_seq_before || klen == 0)
		return;
	/* Relaxed: the acquire in this command's larderd_flush_due ordered it
	 * after the store of a window it must see; a newer one it misses is
	 * one a flush_all racing with this command set. */
	end = atomic_load_explicit(&sh->flush_end_ms, memory_order_relaxed);
	if (end == 0)
		return;
	if (flush_clock_ms(sh) >= end) {
		/* Relaxed: only spares later writes the clock reading; a new
		 * window stored meanwhile is kept by the exchange's compare. */
		atomic_compare_exchange_strong_explicit(&sh->flush_end_ms, &end, 0,
							memory_order_relaxed, memory_order_relaxed);
		return;
	}
	larderd_ignore(remove_if_cas(x, key, klen, x->cas_seq << 8 | x->id));
}

static void exec_flush(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	if (x->sh->flush_disabled) { /* -F; memcached counts the command all the same */
		larderd_stat_add(x, WS_CMD_FLUSH, 1);
		out_reply(req, out, "CLIENT_ERROR flush_all not allowed");
		return;
	}
	if (larderd_flush(x, req->num) != LARDER_OK)
		out_reply(req, out, "SERVER_ERROR out of memory");
	else
		out_reply(req, out, "OK");
}

static void exec_verbosity(struct larderd_exec *x, struct larderd_req *req,
			   struct larderd_obuf *out)
{
	uint32_t level = 0;

	larderd_ignore(larderd_strtoul32(&req->tok[1], &level));
	/* Relaxed: a setting read on its own by "stats settings". */
	atomic_store_explicit(&x->sh->verbosity, level > MAX_VERBOSITY ? MAX_VERBOSITY : (int)level,
			      memory_order_relaxed);
	out_reply(req, out, "OK");
}

/*
 * shutdown [graceful], allowed by -A as in memcached: the connection closes
 * and the main thread stops the server as on SIGINT (no snapshot saved), or
 * with "graceful" as on SIGUSR1 (the snapshot saved). The signal goes to the
 * process: every thread but the main one's sigtimedwait() blocks it. The
 * refusals are sent even with noreply, as memcached sends them.
 */
static int exec_shutdown(struct larderd_exec *x, struct larderd_req *req,
			 struct larderd_obuf *out)
{
	int sig;

	if (!x->sh->shutdown_enabled) {
		larderd_obuf_line(out, "ERROR: shutdown not enabled");
		return LARDERD_EXEC_DONE;
	}
	if (req->ntok == 1) {
		sig = SIGINT;
	} else if (req->ntok == 2 && req->tok[1].n == 8 && memcmp(req->tok[1].p, "graceful", 8) == 0) {
		sig = SIGUSR1;
	} else {
		larderd_obuf_line(out, "CLIENT_ERROR invalid shutdown mode");
		return LARDERD_EXEC_DONE;
	}
	kill(getpid(), sig);
	return LARDERD_EXEC_CLOSE;
}

/* cache_memlimit <MiB>: the engine's capacity, with memcached's bounds. */
static void exec_memlimit(struct larderd_exec *x, struct larderd_req *req,
			  struct larderd_obuf *out)
{
	if (req->unum < 8) {
		out_reply(req, out, "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m");
	} else if (req->unum > 1000000000) {
		out_reply(req, out, "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes");
	} else if (larder_set_capacity(x->sh->cache, (uint64_t)req->unum << 20) != LARDER_OK) {
		out_reply(req, out, "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust");
	} else {
		/* Relaxed: a setting reported by "stats"; nothing hangs off it. */
		atomic_store_explicit(&x->sh->maxbytes, (uint64_t)req->unum << 20,
				      memory_order_relaxed);
		out_reply(req, out, "OK");
	}
}

int larderd_exec(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out,
		 size_t high_water)
{
	uint64_t cas_seq = x->cas_seq;

	larderd_flush_due(x->sh);
	switch (req->cmd) {
	case LARDERD_CMD_REPLY:
		out_reply(req, out, req->reply);
		break;
	case LARDERD_CMD_GET: case LARDERD_CMD_GETS: case LARDERD_CMD_GAT: case LARDERD_CMD_GATS:
		return exec_get(x, req, out, high_water);
	case LARDERD_CMD_SET: case LARDERD_CMD_ADD: case LARDERD_CMD_REPLACE:
	case LARDERD_CMD_APPEND: case LARDERD_CMD_PREPEND: case LARDERD_CMD_CAS:
		larderd_exec_store(x, req, out);
		break;
	case LARDERD_CMD_DELETE:
		exec_delete(x, req, out);
		break;
	case LARDERD_CMD_INCR: case LARDERD_CMD_DECR:
		exec_arith(x, req, out);
		break;
	case LARDERD_CMD_TOUCH:
		exec_touch(x, req, out);
		break;
	case LARDERD_CMD_FLUSH_ALL:
		exec_flush(x, req, out);
		break;
	case LARDERD_CMD_VERSION:
		larderd_obuf_line(out, "VERSION " LARDERD_VERSION_STR);
		break;
	case LARDERD_CMD_VERBOSITY:
		exec_verbosity(x, req, out);
		break;
	case LARDERD_CMD_MEMLIMIT:
		exec_memlimit(x, req, out);
		break;
	case LARDERD_CMD_QUIT:
		return LARDERD_EXEC_CLOSE;
	case LARDERD_CMD_STATS:
		larderd_exec_stats(x, req, out);
		break;
	case LARDERD_CMD_METADUMP:
		return larderd_exec_metadump(x, req, out, high_water);
	case LARDERD_CMD_SHUTDOWN:
		return exec_shutdown(x, req, out);
	default:
		larderd_exec_meta(x, req, out);
		break;
	}
	larderd_flush_window(x, req->key.p, req->key.n, cas_seq);
	return out->failed ? LARDERD_EXEC_NOMEM : LARDERD_EXEC_DONE;
}
