/*
 * binparse.c - the memcached binary protocol request parser (binparse.h
 * says what it owns, its steps and its invariants).
 */
#include "binparse.h"

#include <string.h>

static uint16_t be16(const unsigned char *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static uint32_t be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const unsigned char *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

static void put_be(unsigned char *p, uint64_t v, int n)
{
	for (int i = n - 1; i >= 0; i--, v >>= 8)
		p[i] = (unsigned char)v;
}

/* The loud opcode of a quiet one, or the opcode itself. */
static uint8_t loud(uint8_t op, bool *quiet)
{
	static const uint8_t map[][2] = {
		{LARDERD_BIN_SETQ, LARDERD_BIN_SET},
		{LARDERD_BIN_ADDQ, LARDERD_BIN_ADD},
		{LARDERD_BIN_REPLACEQ, LARDERD_BIN_REPLACE},
		{LARDERD_BIN_DELETEQ, LARDERD_BIN_DELETE},
		{LARDERD_BIN_INCREMENTQ, LARDERD_BIN_INCREMENT},
		{LARDERD_BIN_DECREMENTQ, LARDERD_BIN_DECREMENT},
		{LARDERD_BIN_QUITQ, LARDERD_BIN_QUIT},
		{LARDERD_BIN_FLUSHQ, LARDERD_BIN_FLUSH},
		{LARDERD_BIN_APPENDQ, LARDERD_BIN_APPEND},
		{LARDERD_BIN_PREPENDQ, LARDERD_BIN_PREPEND},
		{LARDERD_BIN_GETQ, LARDERD_BIN_GET},
		{LARDERD_BIN_GETKQ, LARDERD_BIN_GETK},
		{LARDERD_BIN_GATQ, LARDERD_BIN_GAT},
		{LARDERD_BIN_GATKQ, LARDERD_BIN_GATK},
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
		if (map[i][0] == op) {
			*quiet = true;
			return map[i][1];
		}
	}
	*quiet = false;
	return op;
}

enum check { CHECK_OK, CHECK_INVALID, CHECK_UNKNOWN };

/* Step 4 and 5: whether the opcode accepts these lengths (dispatch_bin_command). */
static enum check check_lengths(const struct larderd_binreq *r)
{
	unsigned e = r->extlen, k = r->keylen;
	uint32_t b = r->bodylen;

	switch (r->cmd) {
	case LARDERD_BIN_VERSION:
	case LARDERD_BIN_NOOP:
	case LARDERD_BIN_QUIT:
	case LARDERD_BIN_SASL_LIST_MECHS:
		return e == 0 && k == 0 && b == 0 ? CHECK_OK : CHECK_INVALID;
	case LARDERD_BIN_FLUSH:
		return k == 0 && b == e && (e == 0 || e == 4) ? CHECK_OK : CHECK_INVALID;
	case LARDERD_BIN_SET:
	case LARDERD_BIN_ADD:
	case LARDERD_BIN_REPLACE:
		return e == 8 && k != 0 && b >= k + 8u ? CHECK_OK : CHECK_INVALID;
	case LARDERD_BIN_GET:
	case LARDERD_BIN_GETK:
	case LARDERD_BIN_DELETE:
		return e == 0 && k > 0 && b == k ? CHECK_OK : CHECK_INVALID;
	case LARDERD_BIN_INCREMENT:
	case LARDERD_BIN_DECREMENT:
		return e == 20 && k > 0 && b == k + e ? CHECK_OK : CHECK_INVALID;
	case LARDERD_BIN_APPEND:
	case LARDERD_BIN_PREPEND:
		return e == 0 && k > 0 ? CHECK_OK : CHECK_INVALID;
	case LARDERD_BIN_STAT:
		return e == 0 ? CHECK_OK : CHECK_INVALID;
	case LARDERD_BIN_SASL_AUTH:
	case LARDERD_BIN_SASL_STEP:
		return e == 0 && k != 0 ? CHECK_OK : CHECK_INVALID;
	case LARDERD_BIN_TOUCH:
	case LARDERD_BIN_GAT:
	case LARDERD_BIN_GATK:
		return e == 4 && k != 0 ? CHECK_OK : CHECK_INVALID;
	default:
		return CHECK_UNKNOWN;
	}
}

static int refuse(struct larderd_binreq *r, uint16_t status, bool close_after, size_t swallow)
{
	r->error = status;
	r->close_after = close_after;
	r->swallow = swallow;
	return LARDERD_PARSE_DONE;
}

int larderd_binparse(const unsigned char *buf, size_t len, const struct larderd_limits *lim,
		     struct larderd_binreq *r)
{
	size_t head;

	memset(r, 0, sizeof(*r));
	if (len < LARDERD_BIN_HDR) {
		r->need = LARDERD_BIN_HDR;
		return LARDERD_PARSE_MORE;
	}
	if (buf[0] != LARDERD_BIN_REQ_MAGIC)
		return LARDERD_PARSE_CLOSE;
	r->opcode = buf[1];
	r->keylen = be16(buf + 2);
	r->extlen = buf[4];
	r->bodylen = be32(buf + 8);
	memcpy(r->opaque, buf + 12, 4);
	r->cas = be64(buf + 16);
	/* memcached looks at a request once its extras and key are in */
	head = LARDERD_BIN_HDR + (size_t)r->extlen + r->keylen;
	if (len < head) {
		r->need = head;
		return LARDERD_PARSE_MORE;
	}
	r->ext = buf + LARDERD_BIN_HDR;
	r->key = (const char *)buf + LARDERD_BIN_HDR + r->extlen;
	r->consumed = head;
	r->cmd = loud(r->opcode, &r->quiet);
	if (r->keylen > r->bodylen || (uint32_t)r->keylen + r->extlen > r->bodylen)
		return refuse(r, LARDERD_BIN_UNKNOWN_COMMAND, true, 0);
	if (r->keylen > LARDERD_KEY_MAX)
		return refuse(r, LARDERD_BIN_EINVAL, true, 0);
	switch (check_lengths(r)) {
	case CHECK_INVALID:
		return refuse(r, LARDERD_BIN_EINVAL, true, 0);
	case CHECK_UNKNOWN:
		return refuse(r, LARDERD_BIN_UNKNOWN_COMMAND, false,
			      r->bodylen - (head - LARDERD_BIN_HDR));
	case CHECK_OK:
		break;
	}
	switch (r->cmd) {
	case LARDERD_BIN_SASL_LIST_MECHS:
	case LARDERD_BIN_SASL_AUTH:
	case LARDERD_BIN_SASL_STEP:
		return refuse(r, LARDERD_BIN_UNKNOWN_COMMAND, false, r->bodylen - r->keylen);
	case LARDERD_BIN_SET:
	case LARDERD_BIN_ADD:
	case LARDERD_BIN_REPLACE:
		r->flags = be32(r->ext);
		r->exptime = be32(r->ext + 4);
		break;
	case LARDERD_BIN_INCREMENT:
	case LARDERD_BIN_DECREMENT:
		r->delta = be64(r->ext);
		r->initial = be64(r->ext + 8);
		r->exptime = be32(r->ext + 16);
		return LARDERD_PARSE_DONE;
	case LARDERD_BIN_FLUSH:
	case LARDERD_BIN_TOUCH:
	case LARDERD_BIN_GAT:
	case LARDERD_BIN_GATK:
		r->exptime = r->extlen == 4 ? be32(r->ext) : 0;
		return LARDERD_PARSE_DONE;
	case LARDERD_BIN_APPEND:
	case LARDERD_BIN_PREPEND:
		break;
	default:
		return LARDERD_PARSE_DONE;
	}
	/* the storage commands: the value follows the key */
	r->vlen = r->bodylen - (head - LARDERD_BIN_HDR);
	if (!larderd_item_fits(lim, r->keylen, r->flags, r->vlen)) {
		r->too_large = true;
		r->swallow = r->vlen;
		return LARDERD_PARSE_DONE;
	}
	if (len - head < r->vlen) {
		r->need = head + r->vlen;
		return LARDERD_PARSE_MORE;
	}
	r->value = (const char *)buf + head;
	r->consumed = head + r->vlen;
	return LARDERD_PARSE_DONE;
}

const char *larderd_bin_status_text(uint16_t status)
{
	switch (status) {
	case LARDERD_BIN_KEY_ENOENT:
		return "Not found";
	case LARDERD_BIN_KEY_EEXISTS:
		return "Data exists for key.";
	case LARDERD_BIN_E2BIG:
		return "Too large.";
	case LARDERD_BIN_EINVAL:
		return "Invalid arguments";
	case LARDERD_BIN_NOT_STORED:
		return "Not stored.";
	case LARDERD_BIN_DELTA_BADVAL:
		return "Non-numeric server-side value for incr or decr";
	case LARDERD_BIN_AUTH_ERROR:
		return "Auth failure.";
	case LARDERD_BIN_UNKNOWN_COMMAND:
		return "Unknown command";
	case LARDERD_BIN_ENOMEM:
		return "Out of memory";
	default:
		return "";
	}
}

void larderd_bin_header(unsigned char *p, const struct larderd_binreq *req, uint16_t status,
			uint8_t extlen, uint16_t keylen, uint32_t bodylen, uint64_t cas)
{
	p[0] = LARDERD_BIN_RES_MAGIC;
	p[1] = req->opcode;
	put_be(p + 2, keylen, 2);
	p[4] = extlen;
	p[5] = 0;
	put_be(p + 6, status, 2);
	put_be(p + 8, bodylen, 4);
	memcpy(p + 12, req->opaque, 4);
	put_be(p + 16, cas, 8);
}
