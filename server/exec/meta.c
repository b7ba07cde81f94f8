/*
 * meta.c - memcached's meta commands (mg, ms, md, ma, mn, me) on larder,
 * following memcached 1.6.18 (proto_text.c) step by step; the parser has
 * already checked the flags (parse.c) and decoded a base64 key.
 *
 * Flags (E, explicit CAS, is newer than 1.6.18 and refused as memcached does):
 *   mg: b c f h k l O q s t u v T<ttl> N<ttl> R<ttl>; replies W (you won the
 *       right to recache), X (stale), Z (a win token was already handed out)
 *   ms: b c C<cas> F<flags> I k M<S E A P R> O q T<ttl>
 *   md: b C<cas> I k O q T<ttl>
 *   ma: b c C<cas> D<delta> J<initial> k M<I + D -> N<ttl> O q t T<ttl> v
 *   me: b (only as the first flag); mn.
 * Order matters as in memcached: an mg or ma reply lists the flags in the
 * order they came, T takes effect where it stands (a "t" before it shows the
 * old TTL), and an O over 32 bytes fails the command where memcached finds
 * it (after mg's T or ma's arithmetic took effect). An mg whose T the engine
 * refuses (the deadline would take the item over its entry limit, or memory
 * ran short; the item kept as it was) answers SERVER_ERROR instead of its
 * reply, as touch does (docs/server.md, touch-over-eighth), and takes no win
 * token; ma's T is written with the new number, so a refusal leaves both.
 *
 * State kept in the item header's meta bits (exec_internal.h) and changed
 * with larder_replace_if_equals(), so exactly one client gets W: stale (md
 * I), win token sent, base64 key (ms b; k echoes such a key in base64), and
 * fetched (mg h, me fetch).
 *
 * Not kept: memcached's last-access time. "l" and me's "la" report the
 * seconds since the item was written (from its CAS unique), where memcached
 * counts from its last access at a one-minute granularity (docs/server.md).
 */
#include "exec_internal.h"

#include <string.h>

#define MBIT(c) ((uint64_t)1 << larderd_meta_index(c))
#define RMW_TRIES 1000

static const char k_opaque_long[] = "CLIENT_ERROR opaque token too long";

static bool has(const struct larderd_req *req, char c)
{
	return (req->meta.present & MBIT(c)) != 0;
}

/* " k<key>", in base64 followed by " b" when the key is binary. */
static void echo_key(struct larderd_obuf *out, const struct larderd_req *req, bool binary)
{
	larderd_obuf_add(out, " k", 2);
	if (!binary) {
		larderd_obuf_add(out, req->key.p, req->key.n);
		return;
	}
	char *p = larderd_obuf_reserve(out, (req->key.n + 2) / 3 * 4 + 2);
	if (p == NULL)
		return;
	out->len += larderd_b64_encode((const unsigned char *)req->key.p, req->key.n, p);
	larderd_obuf_add(out, " b", 2);
}

/* The O and k echoes of a reply without an item; false if an O is too long. */
static bool echo_plain(struct larderd_obuf *out, const struct larderd_req *req, int first)
{
	for (int i = first; i < req->ntok; i++) {
		const struct larderd_tok *t = &req->tok[i];
		if (t->p[0] == 'O') {
			if (t->n > LARDERD_META_OPAQUE_MAX)
				return false;
			larderd_obuf_add(out, " ", 1);
			larderd_obuf_add(out, t->p, t->n);
		} else if (t->p[0] == 'k') {
			echo_key(out, req, req->meta.key_binary);
		}
	}
	return true;
}

/* Drops what this command appended and sends memcached's errstring instead. */
static void fail_at(struct larderd_obuf *out, size_t mark, const char *err)
{
	out->len = mark;
	larderd_obuf_line(out, err);
}

/*
 * A TTL that T (or N, for an item this command created) sets takes effect
 * where the flag stands in memcached, which later flags (t, R) see; the item
 * itself changes once, at the end of the command, so that a T in the past
 * followed by an N does not lose the item on the way.
 */
struct pending_ttl {
	bool set;
	/* nothing left to apply: ma's arithmetic wrote it with the number, or
	 * the number grew (memcached's old item got it) */
	bool applied;
	int32_t exptime;
	/* ma: the TTL the item had before its arithmetic wrote a new one (a
	 * "t" before the T shows it), valid when `before_known` */
	bool before_known;
	uint64_t before_ms;
};

/* The item's remaining lifetime in ms (LARDER_TTL_NEVER for none); false
 * when it is dead (a pending exptime in the past). */
static bool item_ttl_ms(struct larderd_exec *x, const struct larderd_req *req,
			const struct pending_ttl *p, uint64_t *ms)
{
	if (p->set)
		return larderd_exptime_to_ttl(p->exptime, ms);
	if (p->before_known) {
		*ms = p->before_ms;
		return true;
	}
	if (larder_ttl_remaining(x->sh->cache, req->key.p, req->key.n, ms) != LARDER_OK)
		*ms = LARDER_TTL_NEVER;
	return true;
}

/* " t<seconds>": -1 without a TTL; after a T in the past, memcached's
 * unsigned wrap of the negative time it computes. */
static void ttl_flag(struct larderd_exec *x, struct larderd_obuf *out, const struct larderd_req *req,
		     const struct pending_ttl *p)
{
	uint64_t ms;
	larderd_obuf_add(out, " t", 2);
	if (!item_ttl_ms(x, req, p, &ms))
		larderd_obuf_u64(out, (uint64_t)larderd_dead_ttl_seconds(x, p->exptime));
	else if (ms == LARDER_TTL_NEVER)
		larderd_obuf_add(out, "-1", 2);
	else
		larderd_obuf_u64(out, (ms + 999) / 1000);
}

/* Applies a pending TTL at the end of the command: LARDER_OK when there is
 * none, else larderd_touch_key's result (LARDER_MISS after a T that killed
 * the item, or when another client removed it meanwhile). */
static int settle_ttl(struct larderd_exec *x, const struct larderd_req *req,
		      const struct pending_ttl *p)
{
	if (!p->set || p->applied)
		return LARDER_OK;
	return larderd_touch_key(x, req->key.p, req->key.n, p->exptime, false);
}

/* ---- mg ------------------------------------------------------------------ */

/* mg miss with N: create an empty item; its win token goes to this caller
 * at the end of the reply. As in memcached it has no TTL until the N
 * flag's turn in the reply. */
static bool vivify(struct larderd_exec *x, const struct larderd_req *req, uint64_t *cas)
{
	unsigned char h[LARDERD_HDR];

	*cas = larderd_next_cas(x);
	larderd_hdr_put(h, *cas, 0, 0);
	return larder_put_if_absent(x->sh->cache, req->key.p, req->key.n, h, sizeof(h),
				    LARDER_TTL_NEVER) == LARDER_OK;
}

/* R: does the item's deadline come before the R deadline? */
static bool recache_due(struct larderd_exec *x, const struct larderd_req *req,
			const struct pending_ttl *p)
{
	uint64_t r_ms, ms;

	if (req->meta.ttl_R == 0 || !larderd_exptime_to_ttl(req->meta.ttl_R, &r_ms))
		return false;
	/* an item dead by a T of this command has memcached's deadline 1: before
	 * any; else memcached compares whole seconds */
	return !item_ttl_ms(x, req, p, &ms) ||
	       (ms != LARDER_TTL_NEVER && (ms + 999) / 1000 < (r_ms + 999) / 1000);
}

/* Sets the win-token bit; true for the one caller whose swap set it. Reads
 * into x->c, since x->a holds the value this reply sends. */
static bool take_token(struct larderd_exec *x, const struct larderd_req *req)
{
	for (int tries = 0; tries < RMW_TRIES; tries++) {
		size_t len;
		int rc = larder_get(x->sh->cache, req->key.p, req->key.n, x->c, x->c_cap, &len);

		if (rc == LARDER_EBUFSIZE) {
			if (!larderd_grow(&x->c, &x->c_cap, len))
				return false;
			continue;
		}
		if (rc != LARDER_OK || len < LARDERD_HDR || (x->c[12] & LARDERD_BIT_WON) ||
		    !larderd_grow(&x->b, &x->b_cap, len))
			return false;
		memcpy(x->b, x->c, len);
		x->b[12] |= LARDERD_BIT_WON;
		rc = larder_replace_if_equals(x->sh->cache, req->key.p, req->key.n, x->c, len, x->b,
					      len, larderd_keep_ttl(x, req->key.p, req->key.n));
		if (rc != LARDER_MISMATCH)
			return rc == LARDER_OK;
	}
	return false;
}

/*
 * One mg, its reply built as the item is read. The value goes from the
 * stored bytes to the reply in one copy, inside the read callback (mg_hit),
 * unless a write must come between: a win token to take (W) or an O over
 * 32 bytes (the reply is dropped); then the callback copies the item into
 * x->a and exec_mg finishes the reply from there.
 */
struct mg_state {
	struct larderd_exec *x;
	const struct larderd_req *req;
	struct larderd_obuf *out;
	size_t len; /* the item's, header included */
	uint64_t cas;
	uint32_t flags;
	uint8_t bits;
	bool hit, created, won;
	bool o_long; /* an O over 32 bytes: the reply fails */
	bool done;   /* the reply is complete, value included */
	struct pending_ttl ttl;
};

/* The reply line up to its last requested flag; false at an O over 32 bytes. */
static bool mg_line(struct mg_state *m)
{
	struct larderd_exec *x = m->x;
	const struct larderd_req *req = m->req;
	struct larderd_obuf *out = m->out;

	if (has(req, 'v')) {
		larderd_obuf_add(out, "VA ", 3);
		larderd_obuf_u64(out, m->len - LARDERD_HDR);
	} else {
		larderd_obuf_add(out, "HD", 2);
	}
	for (int i = 2; i < req->ntok; i++) {
		const struct larderd_tok *t = &req->tok[i];
		switch (t->p[0]) {
		case 'T':
			larderd_stat_add(x, WS_CMD_TOUCH, 1);
			m->ttl = (struct pending_ttl){.set = true, .exptime = req->meta.ttl_T};
			break;
		case 'N':
			if (m->created) {
				m->ttl = (struct pending_ttl){.set = true, .exptime = req->meta.ttl_N};
				m->won = true;
			}
			break;
		case 'R':
			if (!(m->bits & LARDERD_BIT_WON) && !m->created &&
			    recache_due(x, req, &m->ttl))
				m->won = true;
			break;
		case 's':
			larderd_obuf_add(out, " s", 2);
			larderd_obuf_u64(out, m->len - LARDERD_HDR);
			break;
		case 't': ttl_flag(x, out, req, &m->ttl); break;
		case 'c': larderd_obuf_add(out, " c", 2); larderd_obuf_u64(out, m->cas); break;
		case 'f': larderd_obuf_add(out, " f", 2); larderd_obuf_u64(out, m->flags); break;
		case 'l':
			larderd_obuf_add(out, " l", 2);
			larderd_obuf_u64(out, larderd_age_seconds(m->cas));
			break;
		case 'h':
			larderd_obuf_add(out, (m->bits & LARDERD_BIT_FETCHED) ? " h1" : " h0", 3);
			break;
		case 'O':
			if (t->n > LARDERD_META_OPAQUE_MAX)
				return false;
			larderd_obuf_add(out, " ", 1);
			larderd_obuf_add(out, t->p, t->n);
			break;
		case 'k':
			echo_key(out, req, (m->bits & LARDERD_BIT_BINKEY) != 0);
			break;
		default:
			break;
		}
	}
	if (m->bits & LARDERD_BIT_WON)
		larderd_obuf_add(out, " Z", 2);
	if (m->bits & LARDERD_BIT_STALE) {
		larderd_obuf_add(out, " X", 2);
		if (!(m->bits & LARDERD_BIT_WON))
			m->won = true;
	}
	return true;
}

/* larder_get_with's callback: a hit's reply, from the stored bytes in place
 * (only reads of the engine in here: a write waits for exec_mg). */
static void mg_hit(void *ctx, const void *value, size_t len)
{
	struct mg_state *m = ctx;
	struct larderd_exec *x = m->x;
	const unsigned char *v = value;

	if (len < LARDERD_HDR) /* not an item: a miss, as larderd_read_item reads it */
		return;
	m->hit = true;
	m->len = len;
	larderd_hdr_get(v, &m->cas, &m->flags, &m->bits);
	if (!mg_line(m)) {
		m->o_long = true;
		return;
	}
	if (m->won) {
		/* take_token writes before the line ends: keep the value read */
		if (!larderd_grow(&x->a, &x->a_cap, len))
			m->out->failed = true;
		else
			memcpy(x->a, v, len);
		return;
	}
	larderd_obuf_add(m->out, "\r\n", 2);
	if (has(m->req, 'v')) {
		larderd_obuf_add(m->out, v + LARDERD_HDR, len - LARDERD_HDR);
		larderd_obuf_add(m->out, "\r\n", 2);
	}
	m->done = true;
}

static void exec_mg(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	size_t mark = out->len;
	bool locked = has(req, 'N') || has(req, 'T') || has(req, 'R') || has(req, 'l') || has(req, 'h');
	struct mg_state m = {.x = x, .req = req, .out = out, .ttl = {.set = false}};
	int rc;
	uint64_t ms;
	bool alive;

	if (has(req, 'h'))
		larderd_track_fetched(x);
	larderd_ignore(larder_get_with(x->sh->cache, req->key.p, req->key.n, mg_hit, &m));
	/* memcached's counting: a hit with T is a touch (cmd_touch counted at
	 * the flag), not a get; an item N created is stored and a get hit */
	if (!m.hit || !has(req, 'T'))
		larderd_stat_add(x, WS_CMD_GET, 1);
	if (!m.hit && has(req, 'N') && vivify(x, req, &m.cas)) {
		larderd_stat_add(x, WS_TOTAL_ITEMS, 1);
		larderd_stat_add(x, WS_GET_HITS, 1);
		m.created = true;
		m.len = LARDERD_HDR;
		m.o_long = !mg_line(&m);
	} else if (!m.hit) {
		larderd_stat_add(x, WS_GET_MISSES, 1);
		larderd_obuf_add(out, "EN", 2);
		if (!echo_plain(out, req, 2))
			return fail_at(out, mark, k_opaque_long); /* sent even with q */
		if (req->noreply)
			out->len = mark;
		else
			larderd_obuf_add(out, "\r\n", 2);
		return;
	} else {
		larderd_stat_add(x, has(req, 'T') ? WS_TOUCH_HITS : WS_GET_HITS, 1);
	}
	if (m.o_long) {
		/* memcached read the item with its bump unless a flag made it
		 * hold the item to bump at the end */
		if (!has(req, 'u') && !locked && !(m.bits & LARDERD_BIT_FETCHED))
			larderd_mark_fetched(x, req->key.p, req->key.n);
		larderd_ignore(settle_ttl(x, req, &m.ttl));
		return fail_at(out, mark, k_opaque_long);
	}
	/* A T that gives a deadline runs before the win token is taken: when
	 * the engine refuses it the reply is the SERVER_ERROR alone, and a
	 * token nobody received would keep every client from the recache (the
	 * next R answers Z). A T that kills the item runs after, as memcached
	 * hands out the token of the item it holds. */
	alive = !m.ttl.set || larderd_exptime_to_ttl(m.ttl.exptime, &ms);
	rc = alive ? settle_ttl(x, req, &m.ttl) : LARDER_OK;
	if (rc != LARDER_OK && rc != LARDER_MISS) /* the item kept as it was */
		return fail_at(out, mark, larderd_touch_error(rc));
	if (!m.done) {
		if (m.won)
			m.won = take_token(x, req) || m.created;
		if (m.won)
			larderd_obuf_add(out, " W", 2);
		larderd_obuf_add(out, "\r\n", 2);
		if (has(req, 'v')) {
			if (m.len > LARDERD_HDR && !m.created)
				larderd_obuf_add(out, x->a + LARDERD_HDR, m.len - LARDERD_HDR);
			larderd_obuf_add(out, "\r\n", 2);
		}
	}
	if (!alive)
		larderd_ignore(settle_ttl(x, req, &m.ttl)); /* a removal: LARDER_OK or LARDER_MISS */
	/* memcached bumps the item at the end (a created one too), unless u */
	if (rc == LARDER_OK && alive && !has(req, 'u') && !(m.bits & LARDERD_BIT_FETCHED))
		larderd_mark_fetched(x, req->key.p, req->key.n);
}

/* ---- ms ------------------------------------------------------------------ */

static void exec_ms(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	static const char *const k_code[] = {"HD", "NS", "EX", "NF"};
	const struct larderd_meta *m = &req->meta;
	struct larderd_store s = {
		.key = req->key.p, .klen = req->key.n, .comm = LARDERD_CMD_SET,
		.flags = m->client_flags, .exptime = m->ttl_T, .cas = has(req, 'C') ? m->cas : 0,
		.bits = m->key_binary ? LARDERD_BIT_BINKEY : 0, .data = req->data, .len = req->data_len,
	};
	const char *err = NULL;
	uint64_t cas;
	enum larderd_store_res r;

	if (req->too_large) {
		larderd_store_too_large(x, req->key.p, req->key.n, true);
		larderd_obuf_line(out, larderd_too_large_reply);
		return;
	}
	switch (m->mode) {
	case 'E': s.comm = LARDERD_CMD_ADD; break;
	case 'A': s.comm = LARDERD_CMD_APPEND; break;
	case 'P': s.comm = LARDERD_CMD_PREPEND; break;
	case 'R': s.comm = LARDERD_CMD_REPLACE; break;
	default: break;
	}
	if (has(req, 'C') && (s.comm == LARDERD_CMD_SET || s.comm == LARDERD_CMD_REPLACE))
		s.comm = LARDERD_CMD_CAS;
	s.set_stale = has(req, 'I') && s.comm == LARDERD_CMD_CAS;
	r = larderd_store_item(x, &s, &cas, &err);
	if (r == LARDERD_STORE_FAILED) {
		larderd_obuf_line(out, err);
		return;
	}
	if (r == LARDERD_STORED && req->noreply)
		return;
	larderd_obuf_str(out, k_code[r]);
	for (int i = 3; i < req->ntok; i++) {
		const struct larderd_tok *t = &req->tok[i];
		if (t->p[0] == 'O') {
			larderd_obuf_add(out, " ", 1);
			larderd_obuf_add(out, t->p, t->n);
		} else if (t->p[0] == 'k') {
			echo_key(out, req, m->key_binary);
		} else if (t->p[0] == 'c') {
			larderd_obuf_add(out, " c", 2);
			larderd_obuf_u64(out, cas);
		}
	}
	larderd_obuf_add(out, "\r\n", 2);
}

/* ---- md ------------------------------------------------------------------ */

static void exec_md(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	larder *c = x->sh->cache;
	const char *code = "SERVER_ERROR failure";

	/* memcached checks the opaque before it looks the key up */
	for (int i = 2; i < req->ntok; i++)
		if (req->tok[i].p[0] == 'O' && req->tok[i].n > LARDERD_META_OPAQUE_MAX) {
			larderd_obuf_line(out, k_opaque_long);
			return;
		}

	for (int tries = 0; tries < RMW_TRIES; tries++) {
		size_t len;
		uint64_t cas, ttl;
		uint32_t flags;
		uint8_t bits;
		int rc = larderd_read_item(x, req->key.p, req->key.n, &len);

		if (rc != LARDER_OK) {
			larderd_stat_add(x, WS_DELETE_MISSES, 1);
			code = "NF";
			break;
		}
		larderd_hdr_get(x->a, &cas, &flags, &bits);
		if (has(req, 'C') && cas != req->meta.cas) {
			larderd_stat_add(x, WS_DELETE_MISSES, 1);
			code = "EX";
			break;
		}
		if (has(req, 'I')) {
			/* invalidate: keep the item, mark it stale, new unique */
			if (!larderd_grow(&x->b, &x->b_cap, len))
				break;
			memcpy(x->b, x->a, len);
			larderd_hdr_put(x->b, larderd_next_cas(x), flags,
					(uint8_t)((bits | LARDERD_BIT_STALE) & ~LARDERD_BIT_WON));
			ttl = larderd_keep_ttl(x, req->key.p, req->key.n);
			if (has(req, 'T') && !larderd_exptime_to_ttl(req->meta.ttl_T, &ttl))
				rc = larder_remove_if_equals(c, req->key.p, req->key.n, x->a, len);
			else
				rc = larder_replace_if_equals(c, req->key.p, req->key.n, x->a, len,
							      x->b, len, ttl);
		} else {
			rc = larder_remove_if_equals(c, req->key.p, req->key.n, x->a, len);
			if (rc == LARDER_OK)
				larderd_stat_add(x, WS_DELETE_HITS, 1);
		}
		if (rc == LARDER_MISMATCH)
			continue;
		code = rc == LARDER_OK ? "HD" : rc == LARDER_MISS ? "NF" : code;
		break;
	}
	if (code[0] == 'S') {
		larderd_obuf_line(out, code);
		return;
	}
	if (code[0] == 'H' && req->noreply)
		return;
	larderd_obuf_str(out, code);
	larderd_ignore(echo_plain(out, req, 2)); /* opaques were checked above */
	larderd_obuf_add(out, "\r\n", 2);
}

/* ---- ma ------------------------------------------------------------------ */

/* ma miss with N: create the counter at J; ARITH_OK, or ARITH_MISS if
 * another client created it first. */
static int ma_vivify(struct larderd_exec *x, const struct larderd_req *req, uint64_t *v,
		     uint64_t *cas)
{
	unsigned char buf[LARDERD_HDR + 24];
	size_t n = larderd_fmt_u64((char *)buf + LARDERD_HDR, req->meta.initial);

	*cas = larderd_next_cas(x);
	larderd_hdr_put(buf, *cas, 0, 0);
	if (larder_put_if_absent(x->sh->cache, req->key.p, req->key.n, buf, LARDERD_HDR + n,
				 LARDER_TTL_NEVER) != LARDER_OK)
		return LARDERD_ARITH_MISS;
	*v = req->meta.initial;
	return LARDERD_ARITH_OK;
}

static void exec_ma(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	const struct larderd_meta *m = &req->meta;
	bool incr = m->mode != 'D' && m->mode != '-', created = false;
	uint64_t t_ms;
	/* A T that gives a deadline goes into the arithmetic's own swap: a
	 * deadline the engine refuses (the entry limit, memory) then leaves the
	 * number as it was too, and the reply says so as touch's does. A T in
	 * the past removes the item at the end, as memcached's dead item. */
	bool t_alive = has(req, 'T') && larderd_exptime_to_ttl(m->ttl_T, &t_ms);
	struct larderd_arith_op op = {.key = &req->key, .incr = incr, .delta = m->delta,
				      .want_cas = has(req, 'C') ? m->cas : 0,
				      .ttl_ms = t_alive ? &t_ms : NULL};
	struct pending_ttl ttl = {.set = false};
	uint64_t v = 0, cas = 0;
	size_t mark = out->len, n;
	char num[24];
	int rc = larderd_arith(x, &op);

	if (rc == LARDERD_ARITH_MISS && has(req, 'N')) {
		rc = ma_vivify(x, req, &v, &cas);
		created = rc == LARDERD_ARITH_OK;
		if (!created) /* created meanwhile by another client */
			rc = larderd_arith(x, &op);
	}
	switch (rc) {
	case LARDERD_ARITH_OK:
		/* memcached counts a counter N created as a stored item, not a hit */
		larderd_stat_add(x, created ? WS_TOTAL_ITEMS : incr ? WS_INCR_HITS : WS_DECR_HITS,
				 1);
		if (!created) {
			v = op.result;
			cas = op.cas;
			ttl = (struct pending_ttl){.before_known = true, .before_ms = op.ttl_before};
		}
		break;
	case LARDERD_ARITH_NONNUMERIC:
		larderd_obuf_line(out, "CLIENT_ERROR cannot increment or decrement non-numeric value");
		return;
	case LARDERD_ARITH_MISS: case LARDERD_ARITH_CAS_MISMATCH:
		if (rc == LARDERD_ARITH_MISS)
			larderd_stat_add(x, incr ? WS_INCR_MISSES : WS_DECR_MISSES, 1);
		larderd_obuf_str(out, rc == LARDERD_ARITH_MISS ? "NF" : "EX");
		if (!echo_plain(out, req, 2))
			return fail_at(out, mark, k_opaque_long);
		larderd_obuf_add(out, "\r\n", 2);
		return;
	default: /* the item kept as it was, number and TTL */
		larderd_obuf_line(out, larderd_touch_error(op.engine_rc));
		return;
	}
	n = larderd_fmt_u64(num, v);
	if (has(req, 'v')) {
		larderd_obuf_add(out, "VA ", 3);
		larderd_obuf_u64(out, n);
	} else {
		larderd_obuf_add(out, "HD", 2);
	}
	for (int i = 2; i < req->ntok; i++) {
		const struct larderd_tok *t = &req->tok[i];
		switch (t->p[0]) {
		case 'c': larderd_obuf_add(out, " c", 2); larderd_obuf_u64(out, cas); break;
		case 't': ttl_flag(x, out, req, &ttl); break;
		case 'T':
			/* memcached sets it on the item it holds, which a longer
			 * number has already replaced: a later t shows it, the
			 * stored item keeps its TTL */
			ttl = (struct pending_ttl){.set = true,
						   .applied = !created && (op.grew || t_alive),
						   .exptime = m->ttl_T};
			break;
		case 'N':
			if (created)
				ttl = (struct pending_ttl){.set = true, .exptime = m->ttl_N};
			break;
		case 'O':
			if (t->n > LARDERD_META_OPAQUE_MAX) {
				larderd_ignore(settle_ttl(x, req, &ttl));
				return fail_at(out, mark, k_opaque_long);
			}
			larderd_obuf_add(out, " ", 1);
			larderd_obuf_add(out, t->p, t->n);
			break;
		case 'k':
			echo_key(out, req, m->key_binary);
			break;
		default:
			break;
		}
	}
	/* Left here: a T in the past, and the TTL of a counter this command
	 * created (N, or T after it), which the engine may refuse only for
	 * memory (a counter is far below the entry limit): the counter exists,
	 * without that TTL, and the reply says so. */
	rc = settle_ttl(x, req, &ttl);
	if (rc != LARDER_OK && rc != LARDER_MISS)
		return fail_at(out, mark, larderd_touch_error(rc));
	if (req->noreply && !created) { /* memcached answers a created counter even with q */
		out->len = mark;
		return;
	}
	larderd_obuf_add(out, "\r\n", 2);
	if (has(req, 'v')) {
		larderd_obuf_add(out, num, n);
		larderd_obuf_add(out, "\r\n", 2);
	}
}

/* ---- me ------------------------------------------------------------------ */

static void exec_me(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	size_t len;
	uint64_t cas;
	uint32_t flags;
	uint8_t bits;
	long long ttl;
	char *p;

	/* memcached's cmd_meta counts this command alone, hit or miss (the other
	 * meta commands count as gets, sets, deletes and incrs). */
	larderd_stat_add(x, WS_CMD_META, 1);
	larderd_track_fetched(x);
	if (larderd_read_item(x, req->key.p, req->key.n, &len) != LARDER_OK) {
		larderd_obuf_add(out, "EN\r\n", 4);
		return;
	}
	larderd_hdr_get(x->a, &cas, &flags, &bits);
	larderd_obuf_add(out, "ME ", 3);
	if (bits & LARDERD_BIT_BINKEY) {
		p = larderd_obuf_reserve(out, (req->key.n + 2) / 3 * 4);
		if (p != NULL)
			out->len += larderd_b64_encode((const unsigned char *)req->key.p, req->key.n, p);
	} else {
		larderd_obuf_add(out, req->key.p, req->key.n);
	}
	/* memcached prints "current time - expiry", minus the seconds left, in
	 * 32 bits: an expiry over 2^31 s away (a binary exptime up to 2^32 - 1)
	 * wraps to a positive number */
	ttl = larderd_ttl_seconds(x, req->key.p, req->key.n);
	larderd_obuf_str(out, " exp=");
	larderd_obuf_i64(out, ttl < 0 ? -1 : (int64_t)(int32_t)(uint32_t)(0 - (uint64_t)ttl));
	larderd_obuf_str(out, " la=");
	larderd_obuf_u64(out, larderd_age_seconds(cas));
	larderd_obuf_str(out, " cas=");
	larderd_obuf_u64(out, cas);
	larderd_obuf_str(out, (bits & LARDERD_BIT_FETCHED) ? " fetch=yes" : " fetch=no");
	larderd_obuf_str(out, " cls=1 size=");
	larderd_obuf_u64(out, len - LARDERD_HDR + req->key.n);
	larderd_obuf_add(out, "\r\n", 2);
}

void larderd_exec_meta(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out)
{
	switch (req->cmd) {
	case LARDERD_CMD_MN: larderd_obuf_add(out, "MN\r\n", 4); break;
	case LARDERD_CMD_ME: exec_me(x, req, out); break;
	case LARDERD_CMD_MG: exec_mg(x, req, out); break;
	case LARDERD_CMD_MS: exec_ms(x, req, out); break;
	case LARDERD_CMD_MD: exec_md(x, req, out); break;
	case LARDERD_CMD_MA: exec_ma(x, req, out); break;
	default: larderd_obuf_line(out, "ERROR"); break;
	}
}
