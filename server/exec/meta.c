/*
 * meta.c - memcached's meta commands (mg, ms, md, ma, mn, me) on larder.
 *
 * Supported flags:
 *   mg: b c f k O q s t v T<ttl> N<ttl> R<ttl>, and the stale-while-revalidate
 *       replies W (you won the right to recache), X (stale), Z (a win token was
 *       already handed out). h, l and u are accepted and ignored (the engine
 *       keeps no per-item access history).
 *   ms: b c k O q F<flags> T<ttl> C<cas> M<mode: S E A P R>; I is accepted
 *       and ignored
 *   md: b k O q C<cas> I T<ttl> x
 *   ma: b c k O q t v N<ttl> J<initial> D<delta> T<ttl> C<cas> M<mode: I + D ->
 *   mn, me (me reports exp, cas, size; la and fetch are not tracked).
 * Flag validity and error texts are those of memcached 1.6.18 (Debian's), which
 * does not know E (explicit CAS): it is refused as an invalid flag.
 * The stale and win-token state lives in the item header's meta bits and is
 * changed with larder_replace_if_equals(), so exactly one client gets W.
 */
#include "exec_internal.h"

#include <string.h>

#define MBIT(c) ((uint64_t)1 << larder__meta_index(c))

struct meta_key {
	const char *p; /* bytes for the engine */
	size_t n;
	unsigned char raw[LARDER__KEY_MAX];
};

static bool has(const struct larder__req *req, char c)
{
	return (req->meta.present & MBIT(c)) != 0;
}

static const struct larder__tok *arg(const struct larder__req *req, char c, struct larder__tok *t)
{
	int at = req->meta.at[larder__meta_index(c)];
	if (at < 0)
		return NULL;
	t->p = req->tok[at].p + 1;
	t->n = req->tok[at].n - 1;
	return t;
}

static bool arg_u64(const struct larder__req *req, char c, uint64_t *v)
{
	struct larder__tok t;
	return arg(req, c, &t) != NULL && larder__parse_u64(&t, v);
}

static bool arg_i64(const struct larder__req *req, char c, int64_t *v)
{
	struct larder__tok t;
	return arg(req, c, &t) != NULL && larder__parse_i64(&t, v);
}

static bool decode_key(const struct larder__req *req, struct meta_key *k)
{
	long n;
	if (!has(req, 'b')) {
		k->p = req->key.p;
		k->n = req->key.n;
		return true;
	}
	n = larder__b64_decode(req->key.p, req->key.n, k->raw, sizeof(k->raw));
	if (n <= 0)
		return false;
	k->p = (const char *)k->raw;
	k->n = (size_t)n;
	return true;
}

/* Echo flags that need no item: O and k (and b with k). */
static void echo_flag(struct larder__obuf *out, const struct larder__req *req, char c)
{
	struct larder__tok t;
	if (c == 'O' && arg(req, 'O', &t) != NULL) {
		larder__obuf_add(out, " O", 2);
		larder__obuf_add(out, t.p, t.n);
	} else if (c == 'k') {
		/* as memcached: a base64 key is echoed as sent, followed by b */
		larder__obuf_add(out, " k", 2);
		larder__obuf_add(out, req->key.p, req->key.n);
		if (has(req, 'b'))
			larder__obuf_add(out, " b", 2);
	}
}

static void status_line(struct larder__obuf *out, const struct larder__req *req, const char *code)
{
	larder__obuf_str(out, code);
	for (int i = 2; i < req->ntok; i++)
		echo_flag(out, req, req->tok[i].p[0]);
	larder__obuf_add(out, "\r\n", 2);
}

static void ttl_flag(struct larder__exec *x, struct larder__obuf *out, const struct meta_key *k)
{
	uint64_t ms;
	larder__obuf_add(out, " t", 2);
	if (larder_ttl_remaining(x->sh->cache, k->p, k->n, &ms) != LARDER_OK ||
	    ms == LARDER_TTL_NEVER)
		larder__obuf_add(out, "-1", 2);
	else
		larder__obuf_u64(out, (ms + 999) / 1000);
}

/* Sets the win-token bit on the item in x->a; true if this caller set it. */
static bool take_token(struct larder__exec *x, const struct meta_key *k, size_t len)
{
	unsigned char *b;
	if (!larder__grow(&x->b, &x->b_cap, len))
		return false;
	b = x->b;
	memcpy(b, x->a, len);
	b[12] |= LARDER__BIT_WON;
	return larder_replace_if_equals(x->sh->cache, k->p, k->n, x->a, len, b, len,
					larder__keep_ttl(x, k->p, k->n)) == LARDER_OK;
}

/* mg miss with N: create an empty item whose win token goes to this caller. */
static bool vivify(struct larder__exec *x, const struct larder__req *req, const struct meta_key *k)
{
	int64_t exptime;
	uint64_t ttl;
	unsigned char h[LARDER__HDR];
	if (!arg_i64(req, 'N', &exptime) || !larder__exptime_to_ttl(exptime, &ttl))
		return false;
	larder__hdr_put(h, larder__next_cas(x), 0, LARDER__BIT_WON);
	if (!larder__grow(&x->b, &x->b_cap, sizeof(h)))
		return false;
	memcpy(x->b, h, sizeof(h));
	return larder_put_if_absent(x->sh->cache, k->p, k->n, h, sizeof(h), ttl) == LARDER_OK;
}

/* mg on a hit: does this read earn the recache token (stale, or R and TTL low)? */
static bool mg_should_win(struct larder__exec *x, const struct larder__req *req,
			  const struct meta_key *k, uint8_t bits)
{
	uint64_t r, ms;

	if (bits & LARDER__BIT_STALE)
		return true;
	return arg_u64(req, 'R', &r) &&
	       larder_ttl_remaining(x->sh->cache, k->p, k->n, &ms) == LARDER_OK &&
	       ms != LARDER_TTL_NEVER && ms < r * 1000;
}

static void exec_mg(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out,
		    const struct meta_key *k)
{
	size_t len;
	uint64_t cas;
	uint32_t flags;
	uint8_t bits;
	int64_t t;
	bool won = false;
	int rc;

	larder__stat_add(x, WS_CMD_GET, 1);
	if (has(req, 'T') && arg_i64(req, 'T', &t)) {
		larder__stat_add(x, WS_CMD_TOUCH, 1);
		(void)larder__touch_key(x, k->p, k->n, t);
	}
	rc = larder__read_item(x, k->p, k->n, &len);
	if (rc != LARDER_OK) {
		larder__stat_add(x, WS_GET_MISSES, 1);
		if (!has(req, 'N') || !vivify(x, req, k)) {
			if (!req->noreply)
				status_line(out, req, "EN");
			return;
		}
		/* as memcached: the new empty item is returned, with the win token */
		len = LARDER__HDR;
		larder__hdr_get(x->b, &cas, &flags, &bits);
		bits = 0;
		won = true;
	} else {
		larder__stat_add(x, WS_GET_HITS, 1);
		larder__hdr_get(x->a, &cas, &flags, &bits);
	}
	if (!won && !(bits & LARDER__BIT_WON))
		won = mg_should_win(x, req, k, bits) && take_token(x, k, len);
	if (has(req, 'v')) {
		larder__obuf_add(out, "VA ", 3);
		larder__obuf_u64(out, len - LARDER__HDR);
	} else {
		larder__obuf_add(out, "HD", 2);
	}
	for (int i = 2; i < req->ntok; i++) {
		char c = req->tok[i].p[0];
		switch (c) {
		case 'c': larder__obuf_add(out, " c", 2); larder__obuf_u64(out, cas); break;
		case 'f': larder__obuf_add(out, " f", 2); larder__obuf_u64(out, flags); break;
		case 's': larder__obuf_add(out, " s", 2); larder__obuf_u64(out, len - LARDER__HDR); break;
		case 't': ttl_flag(x, out, k); break;
		default: echo_flag(out, req, c); break;
		}
	}
	if (bits & LARDER__BIT_WON)
		larder__obuf_add(out, " Z", 2);
	if (bits & LARDER__BIT_STALE)
		larder__obuf_add(out, " X", 2);
	if (won)
		larder__obuf_add(out, " W", 2);
	larder__obuf_add(out, "\r\n", 2);
	if (has(req, 'v')) {
		if (len > LARDER__HDR)
			larder__obuf_add(out, x->a + LARDER__HDR, len - LARDER__HDR);
		larder__obuf_add(out, "\r\n", 2);
	}
}

static const char *classic_to_meta(const char *r)
{
	if (strcmp(r, "STORED") == 0)
		return "HD";
	if (strcmp(r, "NOT_STORED") == 0)
		return "NS";
	if (strcmp(r, "EXISTS") == 0)
		return "EX";
	if (strcmp(r, "NOT_FOUND") == 0)
		return "NF";
	return NULL;
}

/* Shared end of ms, md, ma: a status with O, k, b and optionally c echoed. */
static void meta_status(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out,
			const char *code, bool ok, uint64_t cas)
{
	(void)x;
	if (req->noreply && strcmp(code, "HD") == 0)
		return;
	larder__obuf_str(out, code);
	for (int i = 2; i < req->ntok; i++) {
		char c = req->tok[i].p[0];
		if (c == 'c' && ok) {
			larder__obuf_add(out, " c", 2);
			larder__obuf_u64(out, cas);
		} else {
			echo_flag(out, req, c);
		}
	}
	larder__obuf_add(out, "\r\n", 2);
}

static void exec_ms(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out,
		    const struct meta_key *k)
{
	struct larder__tok t;
	uint64_t v = 0;
	const char *r, *code;

	struct larder__tok sent = req->key;

	req->key.p = k->p;
	req->key.n = k->n;
	req->flags = 0;
	req->exptime = 0;
	req->cmd = LARDER__CMD_SET;
	if ((has(req, 'F') && !arg_u64(req, 'F', &v)) ||
	    (has(req, 'T') && !arg_i64(req, 'T', &req->exptime)) ||
	    (has(req, 'C') && !arg_u64(req, 'C', &req->cas))) {
		larder__obuf_line(out, "CLIENT_ERROR bad token in command line format");
		return;
	}
	req->flags = (uint32_t)v;
	if (arg(req, 'M', &t) != NULL && t.n == 1) {
		switch (t.p[0]) {
		case 'E': case 'e': req->cmd = LARDER__CMD_ADD; break;
		case 'A': case 'a': req->cmd = LARDER__CMD_APPEND; break;
		case 'P': case 'p': req->cmd = LARDER__CMD_PREPEND; break;
		case 'R': case 'r': req->cmd = LARDER__CMD_REPLACE; break;
		case 'S': case 's': break;
		default:
			larder__obuf_line(out, "CLIENT_ERROR invalid mode for ms STORE");
			return;
		}
	}
	if (has(req, 'C'))
		req->cmd = LARDER__CMD_CAS;
	r = larder__exec_store_req(x, req);
	req->key = sent; /* k echoes the key as the client sent it */
	code = classic_to_meta(r);
	if (code == NULL) {
		larder__obuf_line(out, r);
		return;
	}
	{
		/* The stored value's header (CAS) is in x->b only when the store
		 * succeeded: a failed one may have built nothing on this worker yet. */
		bool stored = code[0] == 'H';
		uint64_t cas = 0;
		uint32_t f;
		uint8_t bits;
		if (stored)
			larder__hdr_get(x->b, &cas, &f, &bits);
		meta_status(x, req, out, code, stored, cas);
	}
}

static void exec_md(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out,
		    const struct meta_key *k)
{
	larder *c = x->sh->cache;
	uint64_t want = 0;
	int64_t t = 0;

	if ((has(req, 'C') && !arg_u64(req, 'C', &want)) ||
	    (has(req, 'T') && !arg_i64(req, 'T', &t))) {
		larder__obuf_line(out, "CLIENT_ERROR bad token in command line format");
		return;
	}
	for (int tries = 0; tries < 1000; tries++) {
		size_t len;
		uint64_t cas, ttl = LARDER_TTL_NEVER;
		uint32_t flags;
		uint8_t bits;
		int rc = larder__read_item(x, k->p, k->n, &len);

		if (rc != LARDER_OK) {
			larder__stat_add(x, WS_DELETE_MISSES, 1);
			meta_status(x, req, out, "NF", false, 0);
			return;
		}
		larder__hdr_get(x->a, &cas, &flags, &bits);
		if (has(req, 'C') && cas != want) {
			meta_status(x, req, out, "EX", false, 0);
			return;
		}
		if (has(req, 'I') || has(req, 'x')) {
			size_t nl = has(req, 'x') ? LARDER__HDR : len;
			if (!larder__grow(&x->b, &x->b_cap, len))
				break;
			memcpy(x->b, x->a, nl);
			larder__hdr_put(x->b, cas, has(req, 'x') ? 0 : flags,
					has(req, 'I') ? (uint8_t)((bits | LARDER__BIT_STALE) &
								  ~LARDER__BIT_WON)
						      : bits);
			if (has(req, 'T') && !larder__exptime_to_ttl(t, &ttl))
				ttl = 1;
			else if (!has(req, 'T'))
				ttl = larder__keep_ttl(x, k->p, k->n);
			rc = larder_replace_if_equals(c, k->p, k->n, x->a, len, x->b, nl, ttl);
		} else {
			rc = larder_remove_if_equals(c, k->p, k->n, x->a, len);
		}
		if (rc == LARDER_OK) {
			larder__stat_add(x, WS_DELETE_HITS, 1);
			meta_status(x, req, out, "HD", false, 0);
			return;
		}
		if (rc != LARDER_MISMATCH)
			break;
	}
	larder__obuf_line(out, "SERVER_ERROR failure");
}

/* ma miss with N: create the counter at J (its initial value); ARITH_* result. */
static int ma_vivify(struct larder__exec *x, const struct larder__req *req,
		     const struct meta_key *k, uint64_t init, uint64_t *v, uint64_t *cas)
{
	int64_t e = 0;
	uint64_t ttl = LARDER_TTL_NEVER;
	unsigned char buf[LARDER__HDR + 24];
	size_t n = larder__fmt_u64((char *)buf + LARDER__HDR, init);

	if (arg_i64(req, 'N', &e) && !larder__exptime_to_ttl(e, &ttl))
		ttl = 1;
	*cas = larder__next_cas(x);
	larder__hdr_put(buf, *cas, 0, 0);
	if (larder_put_if_absent(x->sh->cache, k->p, k->n, buf, LARDER__HDR + n, ttl) != LARDER_OK)
		return LARDER__ARITH_MISS; /* someone else created it: the caller retries */
	*v = init;
	return LARDER__ARITH_OK;
}

/* ma success: HD or VA with the number, and the requested return flags. */
static void ma_reply(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out,
		     const struct meta_key *k, uint64_t v, uint64_t cas)
{
	char num[24];
	size_t n = larder__fmt_u64(num, v);

	if (!has(req, 'v')) {
		if (req->noreply)
			return;
		larder__obuf_add(out, "HD", 2);
	} else {
		larder__obuf_add(out, "VA ", 3);
		larder__obuf_u64(out, n);
	}
	for (int i = 2; i < req->ntok; i++) {
		char c = req->tok[i].p[0];
		if (c == 'c') {
			larder__obuf_add(out, " c", 2);
			larder__obuf_u64(out, cas);
		} else if (c == 't') {
			ttl_flag(x, out, k);
		} else {
			echo_flag(out, req, c);
		}
	}
	larder__obuf_add(out, "\r\n", 2);
	if (has(req, 'v')) {
		larder__obuf_add(out, num, n);
		larder__obuf_add(out, "\r\n", 2);
	}
}

/* ma with C<cas>: false (and EX sent) when the item's unique differs. */
static bool ma_cas_ok(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out,
		      const struct meta_key *k, uint64_t want)
{
	size_t len;
	uint64_t cas;
	uint32_t f;
	uint8_t bits;

	if (!has(req, 'C') || larder__read_item(x, k->p, k->n, &len) != LARDER_OK)
		return true;
	larder__hdr_get(x->a, &cas, &f, &bits);
	if (cas == want)
		return true;
	meta_status(x, req, out, "EX", false, 0);
	return false;
}

static void exec_ma(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out,
		    const struct meta_key *k)
{
	struct larder__tok t, key = {k->p, k->n};
	uint64_t delta = 1, init = 0, v = 0, cas = 0, want = 0;
	bool incr = true;
	int64_t e;
	int rc;

	if ((has(req, 'D') && !arg_u64(req, 'D', &delta)) ||
	    (has(req, 'J') && !arg_u64(req, 'J', &init)) ||
	    (has(req, 'C') && !arg_u64(req, 'C', &want))) {
		larder__obuf_line(out, "CLIENT_ERROR bad token in command line format");
		return;
	}
	if (arg(req, 'M', &t) != NULL) {
		char m = t.n == 1 ? t.p[0] : '?';
		if (m == 'D' || m == 'd' || m == '-')
			incr = false;
		else if (m != 'I' && m != 'i' && m != '+') {
			larder__obuf_line(out, "CLIENT_ERROR invalid mode for ma MODE");
			return;
		}
	}
	if (!ma_cas_ok(x, req, out, k, want))
		return;
	rc = larder__arith(x, &key, incr, delta, &v, &cas);
	if (rc == LARDER__ARITH_MISS && has(req, 'N')) {
		rc = ma_vivify(x, req, k, init, &v, &cas);
		if (rc != LARDER__ARITH_OK) /* created meanwhile by another client */
			rc = larder__arith(x, &key, incr, delta, &v, &cas);
	}
	if (rc == LARDER__ARITH_MISS) {
		larder__stat_add(x, incr ? WS_INCR_MISSES : WS_DECR_MISSES, 1);
		meta_status(x, req, out, "NF", false, 0);
	} else if (rc == LARDER__ARITH_NONNUMERIC) {
		larder__obuf_line(out, "CLIENT_ERROR cannot increment or decrement non-numeric value");
	} else if (rc != LARDER__ARITH_OK) {
		larder__obuf_line(out, "SERVER_ERROR out of memory");
	} else {
		larder__stat_add(x, incr ? WS_INCR_HITS : WS_DECR_HITS, 1);
		if (arg_i64(req, 'T', &e))
			larder__ignore(larder__touch_key(x, k->p, k->n, e));
		ma_reply(x, req, out, k, v, cas);
	}
}

static void exec_me(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out)
{
	size_t len;
	uint64_t cas, ms;
	uint32_t flags;
	uint8_t bits;

	if (larder__read_item(x, req->key.p, req->key.n, &len) != LARDER_OK) {
		larder__obuf_add(out, "EN\r\n", 4);
		return;
	}
	larder__hdr_get(x->a, &cas, &flags, &bits);
	larder__obuf_add(out, "ME ", 3);
	larder__obuf_add(out, req->key.p, req->key.n);
	larder__obuf_str(out, " exp=");
	if (larder_ttl_remaining(x->sh->cache, req->key.p, req->key.n, &ms) != LARDER_OK ||
	    ms == LARDER_TTL_NEVER)
		larder__obuf_str(out, "-1");
	else
		larder__obuf_u64(out, (ms + 999) / 1000);
	larder__obuf_str(out, " la=0 cas=");
	larder__obuf_u64(out, cas);
	larder__obuf_str(out, " fetch=no cls=1 size=");
	larder__obuf_u64(out, len - LARDER__HDR + req->key.n);
	larder__obuf_add(out, "\r\n", 2);
}

void larder__exec_meta(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out)
{
	struct meta_key k;

	larder__stat_add(x, WS_CMD_META, 1);
	if (req->cmd == LARDER__CMD_MN) {
		larder__obuf_add(out, "MN\r\n", 4);
		return;
	}
	if (req->cmd == LARDER__CMD_ME) {
		exec_me(x, req, out);
		return;
	}
	if (!decode_key(req, &k)) {
		larder__obuf_line(out, "CLIENT_ERROR error decoding key");
		return;
	}
	switch (req->cmd) {
	case LARDER__CMD_MG: exec_mg(x, req, out, &k); break;
	case LARDER__CMD_MS: exec_ms(x, req, out, &k); break;
	case LARDER__CMD_MD: exec_md(x, req, out, &k); break;
	case LARDER__CMD_MA: exec_ma(x, req, out, &k); break;
	default: larder__obuf_line(out, "ERROR"); break;
	}
}
