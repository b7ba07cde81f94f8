/*
 * binexec.c - the memcached binary protocol's commands on top of larder: a
 * request parsed by proto/binparse.c in, its response frames out, as
 * memcached 1.6.18's proto_bin.c answers them.
 *
 * Uses the text path's item helpers (exec.c, store.c, stats.c), so an item
 * is the same engine entry whichever protocol wrote it, and a CAS unique
 * from one protocol works in the other.
 *
 * Replies, as memcached sends them:
 *   - a quiet opcode (SETQ, GETQ, ...) suppresses its success response and,
 *     for the get family, its miss; errors are always sent;
 *   - an error carries memcached's text as its value; a GETK/GATK miss
 *     carries the key instead;
 *   - GET, GAT and TOUCH hits carry the flags as 4 bytes of extras (TOUCH no
 *     value), and the item's CAS unique; a store, INCR and DECR carry the
 *     new unique; everything else a unique of 0;
 *   - a refused request with close_after (binparse.h, steps 2-4) and QUIT
 *     close the connection once the response is out.
 * Storage statuses: NOT_STORED is "Data exists" for ADD, "Not found" for
 * REPLACE and "Not stored." otherwise; a SET, ADD or REPLACE with a CAS
 * unique is a CAS (memcached turns them all into NREAD_CAS); a value over
 * the item limit, or over the engine's limit on an entry, is "Too large."
 * and a SET's old value is dropped; any other refusal by the engine is "Out
 * of memory", never an ADD's "Data exists" or a REPLACE's "Not found".
 * A TOUCH or GAT the engine refuses (the deadline would take the item over
 * its entry limit, or memory ran short; the item kept as it was) is "Too
 * large." or "Out of memory", never "Not found" (docs/server.md,
 * touch-over-eighth). Under -F a FLUSH is "Auth failure.", and not
 * counted, as memcached refuses it.
 */
#include "exec_internal.h"
#include "../proto/binparse.h"

#include <string.h>

/* Appends one response frame: header, extras, key, value. */
static void frame(struct larderd_obuf *out, const struct larderd_binreq *req, uint16_t status,
		  const void *ext, uint8_t extlen, const void *key, uint16_t keylen,
		  const void *val, size_t vlen, uint64_t cas)
{
	size_t body = (size_t)extlen + keylen + vlen;
	unsigned char *p = (unsigned char *)larderd_obuf_reserve(out, LARDERD_BIN_HDR + body);

	if (p == NULL)
		return;
	larderd_bin_header(p, req, status, extlen, keylen, (uint32_t)body, cas);
	p += LARDERD_BIN_HDR;
	if (extlen)
		memcpy(p, ext, extlen);
	if (keylen)
		memcpy(p + extlen, key, keylen);
	if (vlen)
		memcpy(p + extlen + keylen, val, vlen);
	out->len += LARDERD_BIN_HDR + body;
}

static void send_error(struct larderd_obuf *out, const struct larderd_binreq *req, uint16_t status)
{
	const char *text = larderd_bin_status_text(status);
	frame(out, req, status, NULL, 0, NULL, 0, text, strlen(text), 0);
}

/* A success: not sent for a quiet opcode. */
static void send_ok(struct larderd_obuf *out, const struct larderd_binreq *req, const void *val,
		    size_t vlen, uint64_t cas)
{
	if (!req->quiet)
		frame(out, req, LARDERD_BIN_OK, NULL, 0, NULL, 0, val, vlen, cas);
}

static void be_put(unsigned char *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

/* A hit of the get family, answered from the stored bytes in place. */
struct bin_hit {
	struct larderd_obuf *out;
	const struct larderd_binreq *req;
	bool with_key, with_value;
	bool hit;
	uint8_t bits;
};

/*
 * Builds a hit's frame inside the engine's read section, so the value is
 * copied once, into the reply; reading it into the worker's scratch buffer
 * first (larderd_read_item) copied it twice. An entry too short for the item
 * header is not an item: a miss, as larderd_read_item reads it.
 */
static void hit_frame(void *ctx, const void *value, size_t len)
{
	struct bin_hit *h = ctx;
	const unsigned char *v = value;
	unsigned char ext[4];
	uint64_t cas;
	uint32_t flags;

	if (len < LARDERD_HDR)
		return;
	larderd_hdr_get(v, &cas, &flags, &h->bits);
	be_put(ext, flags, 4);
	frame(h->out, h->req, LARDERD_BIN_OK, ext, 4, h->req->key,
	      h->with_key ? h->req->keylen : 0, v + LARDERD_HDR,
	      h->with_value ? len - LARDERD_HDR : 0, cas);
	h->hit = true;
}

static int read_hit(struct larderd_exec *x, struct bin_hit *h)
{
	int rc = larder_get_with(x->sh->cache, h->req->key, h->req->keylen, hit_frame, h);
	return rc == LARDER_OK && !h->hit ? LARDER_MISS : rc;
}

/* GET GETK GAT GATK TOUCH and their quiet forms. */
static void bin_get(struct larderd_exec *x, const struct larderd_binreq *req,
		    struct larderd_obuf *out)
{
	bool touch = req->cmd != LARDERD_BIN_GET && req->cmd != LARDERD_BIN_GETK;
	struct bin_hit h = {
		.out = out,
		.req = req,
		.with_key = req->cmd == LARDERD_BIN_GETK || req->cmd == LARDERD_BIN_GATK,
		.with_value = req->cmd != LARDERD_BIN_TOUCH,
	};
	uint64_t ttl;
	int rc;

	if (touch && !larderd_exptime_to_ttl(req->exptime, &ttl)) {
		/* memcached returns the item it has just made dead, once */
		rc = read_hit(x, &h);
		if (rc == LARDER_OK)
			larderd_ignore(larder_remove(x->sh->cache, req->key, req->keylen));
	} else if (touch) {
		rc = larderd_touch_key(x, req->key, req->keylen, req->exptime, true);
		if (rc == LARDER_OK)
			rc = read_hit(x, &h);
	} else {
		rc = read_hit(x, &h);
	}
	larderd_stat_add(x, touch ? WS_CMD_TOUCH : WS_CMD_GET, 1);
	if (larderd_detail_on(&x->sh->detail))
		larderd_detail_count(&x->sh->detail, req->key, req->keylen, LARDERD_DETAIL_GET,
				     rc == LARDER_OK);
	if (touch && rc != LARDER_OK && rc != LARDER_MISS) {
		/* a touch that failed, the item kept as it was: memcached's status
		 * for an item too large, or for memory it lacks (sent even when quiet) */
		send_error(out, req, rc == LARDER_EVALSIZE ? LARDERD_BIN_E2BIG : LARDERD_BIN_ENOMEM);
		return;
	}
	if (rc != LARDER_OK) {
		larderd_stat_add(x, touch ? WS_TOUCH_MISSES : WS_GET_MISSES, 1);
		if (req->quiet)
			return;
		if (h.with_key)
			frame(out, req, LARDERD_BIN_KEY_ENOENT, NULL, 0, req->key, req->keylen,
			      NULL, 0, 0);
		else
			send_error(out, req, LARDERD_BIN_KEY_ENOENT);
		return;
	}
	larderd_stat_add(x, touch ? WS_TOUCH_HITS : WS_GET_HITS, 1);
	/* a get marks the item fetched, as memcached's bump does (touch did) */
	if (!touch && !(h.bits & LARDERD_BIT_FETCHED))
		larderd_mark_fetched(x, req->key, req->keylen);
}

/* SET ADD REPLACE APPEND PREPEND and their quiet forms. */
static void bin_store(struct larderd_exec *x, const struct larderd_binreq *req,
		      struct larderd_obuf *out)
{
	struct larderd_store s = {
		.key = req->key,
		.klen = req->keylen,
		.flags = req->flags,
		.exptime = req->exptime,
		.cas = req->cas,
		.data = req->value,
		.len = req->vlen,
	};
	const char *err = NULL;
	uint64_t cas;
	enum larderd_store_res r;

	switch (req->cmd) {
	case LARDERD_BIN_SET:
		s.comm = LARDERD_CMD_SET;
		break;
	case LARDERD_BIN_ADD:
		s.comm = LARDERD_CMD_ADD;
		break;
	case LARDERD_BIN_REPLACE:
		s.comm = LARDERD_CMD_REPLACE;
		break;
	case LARDERD_BIN_APPEND:
		s.comm = LARDERD_CMD_APPEND;
		break;
	default:
		s.comm = LARDERD_CMD_PREPEND;
		break;
	}
	if (larderd_detail_on(&x->sh->detail))
		larderd_detail_count(&x->sh->detail, req->key, req->keylen, LARDERD_DETAIL_SET, false);
	if (req->too_large) {
		larderd_store_too_large(x, req->key, req->keylen, s.comm == LARDERD_CMD_SET);
		send_error(out, req, LARDERD_BIN_E2BIG);
		return;
	}
	if (req->cas != 0 && s.comm != LARDERD_CMD_APPEND && s.comm != LARDERD_CMD_PREPEND)
		s.comm = LARDERD_CMD_CAS;
	r = larderd_store_item(x, &s, &cas, &err);
	switch (r) {
	case LARDERD_STORED:
		send_ok(out, req, NULL, 0, cas);
		return;
	case LARDERD_EXISTS:
		send_error(out, req, LARDERD_BIN_KEY_EEXISTS);
		return;
	case LARDERD_NOT_FOUND:
		send_error(out, req, LARDERD_BIN_KEY_ENOENT);
		return;
	case LARDERD_STORE_FAILED:
		/* memcached's process_bin_update(): an item it cannot allocate is
		 * "Too large." when over its size limit, else "Out of memory". */
		send_error(out, req, err == larderd_too_large_reply ? LARDERD_BIN_E2BIG :
				     LARDERD_BIN_ENOMEM);
		return;
	default:
		if (s.comm == LARDERD_CMD_ADD)
			send_error(out, req, LARDERD_BIN_KEY_EEXISTS);
		else if (s.comm == LARDERD_CMD_REPLACE)
			send_error(out, req, LARDERD_BIN_KEY_ENOENT);
		else
			send_error(out, req, LARDERD_BIN_NOT_STORED);
		return;
	}
}

/* INCREMENT DECREMENT: a miss creates the item from `initial` unless the
 * exptime is 0xffffffff; the reply is the new value, 8 bytes. */
static void bin_arith(struct larderd_exec *x, const struct larderd_binreq *req,
		      struct larderd_obuf *out)
{
	bool incr = req->cmd == LARDERD_BIN_INCREMENT;
	struct larderd_tok key = {req->key, req->keylen};
	struct larderd_arith_op op = {.key = &key, .incr = incr, .delta = req->delta,
				      .want_cas = req->cas};
	uint64_t v = 0, cas = 0;
	unsigned char num[8];

	switch (larderd_arith(x, &op)) {
	case LARDERD_ARITH_OK:
		larderd_stat_add(x, incr ? WS_INCR_HITS : WS_DECR_HITS, 1);
		v = op.result;
		cas = op.cas;
		break;
	case LARDERD_ARITH_MISS:
		if (req->exptime == 0xffffffffu) {
			larderd_stat_add(x, incr ? WS_INCR_MISSES : WS_DECR_MISSES, 1);
			send_error(out, req, LARDERD_BIN_KEY_ENOENT);
			return;
		} else {
			char text[24];
			const char *err;
			struct larderd_store s = {
				.key = req->key,
				.klen = req->keylen,
				.comm = LARDERD_CMD_ADD,
				.exptime = req->exptime,
				.not_a_set = true,
				.data = text,
				.len = larderd_fmt_u64(text, req->initial),
			};
			if (larderd_store_item(x, &s, &cas, &err) != LARDERD_STORED) {
				send_error(out, req, LARDERD_BIN_NOT_STORED);
				return;
			}
			v = req->initial;
		}
		break;
	case LARDERD_ARITH_NONNUMERIC:
		send_error(out, req, LARDERD_BIN_DELTA_BADVAL);
		return;
	case LARDERD_ARITH_CAS_MISMATCH:
		send_error(out, req, LARDERD_BIN_KEY_EEXISTS);
		return;
	default:
		send_error(out, req, LARDERD_BIN_ENOMEM);
		return;
	}
	be_put(num, v, 8);
	send_ok(out, req, num, 8, cas);
}

/* STAT: the text command's lines, each as a frame (key = name, value =
 * value), then an empty frame; memcached reads "reset" and "settings" as
 * prefixes. An unknown group is "Not found", and so are "conns" and
 * "extstore", which memcached's text stats answers but its binary STAT does
 * not know. */
static void bin_stat(struct larderd_exec *x, const struct larderd_binreq *req,
		     struct larderd_obuf *out)
{
	struct larderd_req treq;
	struct larderd_obuf text = {0};
	const char *p, *end;

	memset(&treq, 0, sizeof(treq));
	treq.cmd = LARDERD_CMD_STATS;
	treq.ntok = req->keylen > 0 ? 2 : 1;
	treq.tok[1].p = req->key;
	treq.tok[1].n = req->keylen;
	if (req->keylen >= 5 && memcmp(req->key, "reset", 5) == 0)
		treq.tok[1].n = 5;
	else if (req->keylen >= 8 && memcmp(req->key, "settings", 8) == 0)
		treq.tok[1].n = 8;
	if ((req->keylen == 5 && memcmp(req->key, "conns", 5) == 0) ||
	    (req->keylen == 8 && memcmp(req->key, "extstore", 8) == 0)) {
		send_error(out, req, LARDERD_BIN_KEY_ENOENT);
		return;
	}
	larderd_exec_stats(x, &treq, &text);
	if (text.failed) {
		out->failed = true;
		larderd_obuf_free(&text);
		return;
	}
	if (text.len >= 5 && memcmp(text.buf, "ERROR", 5) == 0) {
		send_error(out, req, LARDERD_BIN_KEY_ENOENT);
		larderd_obuf_free(&text);
		return;
	}
	for (p = text.buf, end = text.buf + text.len; p < end;) {
		const char *nl = memchr(p, '\r', (size_t)(end - p)), *name, *sp;

		if (nl == NULL || (size_t)(nl - p) < 5 || memcmp(p, "STAT ", 5) != 0)
			break;
		name = p + 5;
		sp = memchr(name, ' ', (size_t)(nl - name));
		if (sp == NULL)
			break;
		frame(out, req, LARDERD_BIN_OK, NULL, 0, name, (uint16_t)(sp - name), sp + 1,
		      (size_t)(nl - sp - 1), 0);
		p = nl + 2;
	}
	frame(out, req, LARDERD_BIN_OK, NULL, 0, NULL, 0, NULL, 0, 0);
	larderd_obuf_free(&text);
}

int larderd_binexec(struct larderd_exec *x, const struct larderd_binreq *req,
		    struct larderd_obuf *out)
{
	uint64_t cas_seq = x->cas_seq;

	larderd_flush_due(x->sh);
	if (req->error != 0) {
		send_error(out, req, req->error);
		return req->close_after ? LARDERD_EXEC_CLOSE : LARDERD_EXEC_DONE;
	}
	switch (req->cmd) {
	case LARDERD_BIN_GET:
	case LARDERD_BIN_GETK:
	case LARDERD_BIN_GAT:
	case LARDERD_BIN_GATK:
	case LARDERD_BIN_TOUCH:
		bin_get(x, req, out);
		break;
	case LARDERD_BIN_SET:
	case LARDERD_BIN_ADD:
	case LARDERD_BIN_REPLACE:
	case LARDERD_BIN_APPEND:
	case LARDERD_BIN_PREPEND:
		bin_store(x, req, out);
		break;
	case LARDERD_BIN_DELETE:
		if (larderd_detail_on(&x->sh->detail))
			larderd_detail_count(&x->sh->detail, req->key, req->keylen,
					     LARDERD_DETAIL_DEL, false);
		switch (larderd_delete_key(x, req->key, req->keylen, req->cas)) {
		case LARDER_OK:
			send_ok(out, req, NULL, 0, 0);
			break;
		case LARDER_EXISTS:
			send_error(out, req, LARDERD_BIN_KEY_EEXISTS);
			break;
		default:
			send_error(out, req, LARDERD_BIN_KEY_ENOENT);
			break;
		}
		break;
	case LARDERD_BIN_INCREMENT:
	case LARDERD_BIN_DECREMENT:
		bin_arith(x, req, out);
		break;
	case LARDERD_BIN_FLUSH:
		if (x->sh->flush_disabled) /* -F: memcached refuses it, uncounted */
			send_error(out, req, LARDERD_BIN_AUTH_ERROR);
		else if (larderd_flush(x, req->exptime) != LARDER_OK)
			send_error(out, req, LARDERD_BIN_ENOMEM);
		else
			send_ok(out, req, NULL, 0, 0);
		break;
	case LARDERD_BIN_NOOP:
		send_ok(out, req, NULL, 0, 0);
		break;
	case LARDERD_BIN_VERSION:
		send_ok(out, req, LARDERD_VERSION_STR, strlen(LARDERD_VERSION_STR), 0);
		break;
	case LARDERD_BIN_QUIT:
		send_ok(out, req, NULL, 0, 0);
		return LARDERD_EXEC_CLOSE;
	case LARDERD_BIN_STAT:
		bin_stat(x, req, out);
		break;
	default: /* binparse refuses every other opcode */
		send_error(out, req, LARDERD_BIN_UNKNOWN_COMMAND);
		break;
	}
	larderd_flush_window(x, req->key, req->keylen, cas_seq);
	return out->failed ? LARDERD_EXEC_NOMEM : LARDERD_EXEC_DONE;
}
