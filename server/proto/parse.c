/*
 * parse.c - memcached text and meta protocol request parser (see parse.h).
 *
 * Design: the steps of memcached 1.6.18's try_read_command_ascii() and
 * process_command_ascii(), in the same order, so that every malformed input
 * gets the reply memcached gives:
 *   1. A line ends at "\n"; a "\r" before it is dropped when the line has
 *      more than one byte; the line then ends at its first NUL (memcached
 *      reads it as a C string).
 *   2. It splits on spaces into at most 23 tokens (tokenize_command());
 *      whatever follows the 23rd is only read again by the get family.
 *   3. Dispatch on the command name, with memcached's token-count rules and
 *      its branch structure (an unknown command whose last token starts with
 *      "HTTP/" closes the connection, unless its first letter is one of the
 *      letters memcached tests first).
 *   4. Numbers read as safe_strtol()/safe_strtoul()/safe_strtoull() do,
 *      including the silent 32-bit wrap of exptimes and client flags. The one
 *      exception is the value length: memcached wraps 4294967299 to 3 and
 *      reads 3 bytes, which desynchronises any proxy in front of it; larderd
 *      refuses a length outside the 32-bit range (docs/server.md).
 *   5. noreply: memcached sets it from the last token before the checks
 *      that follow, so a later error is suppressed as well (out_string());
 *      the meta commands send their errors regardless (out_errstring()).
 *
 * What is checked here and what is not: syntax, key length, numbers, meta
 * flags (memcached's _meta_flag_preparse(): duplicates, unknown letters,
 * arguments, base64 keys) and the item size limit. Everything that needs the
 * cache, and the meta checks memcached makes while it builds its reply (an
 * opaque over 32 bytes), are left to exec.
 */
#include "parse.h"
#include "reply.h"

#include <limits.h>
#include <string.h>

static const char k_error[] = "ERROR";
static const char k_bad_format[] = "CLIENT_ERROR bad command line format";
static const char k_bad_chunk[] = "CLIENT_ERROR bad data chunk";
static const char k_bad_exptime[] = "CLIENT_ERROR invalid exptime argument";
static const char k_bad_delta[] = "CLIENT_ERROR invalid numeric delta argument";
static const char k_bad_delete[] =
	"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";
static const char k_bad_token[] = "CLIENT_ERROR bad token in command line format";
static const char k_mg_too_long[] = "CLIENT_ERROR options flags are too long";
static const char k_too_long[] = "CLIENT_ERROR options flags too long";
static const char k_bad_flags_md[] = "CLIENT_ERROR invalid or duplicate flag";

/* memcached's MFLAG_MAX_OPT_LENGTH: more tokens than this is "too long". */
#define META_MAX_TOKENS 20

static bool c_isspace(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

/*
 * strtol()/strtoul() in base 10 on a 64-bit target, over one token: *neg and
 * *mag are the sign and magnitude. False when there are no digits, the
 * magnitude overflows (ERANGE; for a signed read, beyond the long range),
 * or the digits are followed by anything but white space or the token's end.
 */
static bool c_strto(const struct larderd_tok *t, bool is_signed, bool *neg, uint64_t *mag)
{
	size_t i = 0;
	uint64_t v = 0;
	bool any = false;

	while (i < t->n && c_isspace(t->p[i]))
		i++;
	*neg = false;
	if (i < t->n && (t->p[i] == '+' || t->p[i] == '-'))
		*neg = t->p[i++] == '-';
	for (; i < t->n && t->p[i] >= '0' && t->p[i] <= '9'; i++) {
		unsigned d = (unsigned)(t->p[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
		any = true;
	}
	if (!any || (i < t->n && !c_isspace(t->p[i])))
		return false;
	if (is_signed && v > (*neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX))
		return false;
	*mag = v;
	return true;
}

static bool tok_has_minus(const struct larderd_tok *t)
{
	return memchr(t->p, '-', t->n) != NULL;
}

/* strtol(), then the int64 result (before memcached's 32-bit truncation). */
static bool strtol64(const struct larderd_tok *t, int64_t *out)
{
	bool neg;
	uint64_t mag;

	if (!c_strto(t, true, &neg, &mag))
		return false;
	*out = neg ? (int64_t)(0 - mag) : (int64_t)mag;
	return true;
}

bool larderd_strtol32(const struct larderd_tok *t, int32_t *out)
{
	int64_t v;

	if (!strtol64(t, &v))
		return false;
	*out = (int32_t)(uint32_t)(uint64_t)v; /* memcached's long-to-int32 store */
	return true;
}

/* strtoul()/strtoull() with safe_strtoul's "no wrapped negative" rule. */
static bool strtou64(const struct larderd_tok *t, uint64_t *out)
{
	bool neg;
	uint64_t mag, v;

	if (!c_strto(t, false, &neg, &mag))
		return false;
	v = neg ? 0 - mag : mag;
	if ((int64_t)v < 0 && tok_has_minus(t))
		return false;
	*out = v;
	return true;
}

bool larderd_strtoul32(const struct larderd_tok *t, uint32_t *out)
{
	uint64_t v;

	if (!strtou64(t, &v))
		return false;
	*out = (uint32_t)v;
	return true;
}

bool larderd_strtoull(const struct larderd_tok *t, uint64_t *out)
{
	return strtou64(t, out);
}

bool larderd_item_fits(const struct larderd_limits *lim, size_t nkey, uint32_t flags,
		       uint64_t vlen)
{
	uint64_t total = 48 + 8 + (uint64_t)nkey + 1 + (flags != 0 ? 4 : 0) + vlen + 2;
	return total <= lim->item_max;
}

bool larderd_item_chunked(size_t nkey, uint32_t flags, uint64_t vlen)
{
	uint64_t total = 48 + 8 + (uint64_t)nkey + 1 + (flags != 0 ? 4 : 0) + vlen + 2;
	return total > LARDERD_SLAB_CHUNK_MAX;
}

bool larderd_next_token(const char **cursor, const char *end, struct larderd_tok *tok)
{
	const char *p = *cursor;

	while (p < end && *p == ' ')
		p++;
	if (p == end)
		return false;
	tok->p = p;
	while (p < end && *p != ' ')
		p++;
	tok->n = (size_t)(p - tok->p);
	*cursor = p;
	return true;
}

int larderd_meta_index(char c)
{
	if (c >= 'a' && c <= 'z')
		return c - 'a';
	if (c >= 'A' && c <= 'Z')
		return 26 + (c - 'A');
	return -1;
}

static bool tok_is(const struct larderd_tok *t, const char *s)
{
	size_t n = strlen(s);
	return t->n == n && memcmp(t->p, s, n) == 0;
}

/* Splits line[0..n) into req->tok; returns memcached's ntokens (terminator
 * counted, so at most 24). */
static int tokenize(const char *line, size_t n, struct larderd_req *req)
{
	const char *cur = line, *end = line + n;
	int nt = 0;

	while (nt < LARDERD_MAX_TOKENS - 1 && larderd_next_token(&cur, end, &req->tok[nt]))
		nt++;
	req->ntok = nt;
	return nt + 1;
}

/* memcached's set_noreply_maybe(): the last token. */
static void set_noreply(struct larderd_req *req)
{
	if (req->ntok > 0 && tok_is(&req->tok[req->ntok - 1], "noreply"))
		req->noreply = true;
}

static int reply(struct larderd_req *req, const char *text)
{
	req->cmd = LARDERD_CMD_REPLY;
	req->reply = text;
	return LARDERD_PARSE_DONE;
}

/* memcached's out_errstring(): sent even when noreply was asked for. */
static int reply_err(struct larderd_req *req, const char *text)
{
	req->noreply = false;
	return reply(req, text);
}

static bool key_ok(const struct larderd_tok *t)
{
	return t->n <= LARDERD_KEY_MAX;
}

/* The value after the line: needs data_len + 2 bytes, ending in \r\n. */
static int take_data(const char *buf, size_t len, struct larderd_req *req, size_t data_len,
		     bool is_meta)
{
	size_t need = req->consumed + data_len + 2;

	if (len < need) {
		req->need = need;
		return LARDERD_PARSE_MORE;
	}
	req->data = buf + req->consumed;
	req->data_len = data_len;
	req->consumed = need;
	if (buf[need - 2] != '\r' || buf[need - 1] != '\n')
		return is_meta ? reply_err(req, k_bad_chunk) : reply(req, k_bad_chunk);
	return LARDERD_PARSE_DONE;
}

/* A value length as memcached reads it, refusing what it would wrap. */
static bool value_length(const struct larderd_tok *t, int32_t *vlen)
{
	int64_t v;

	if (!strtol64(t, &v) || v < INT32_MIN || v > INT32_MAX)
		return false;
	*vlen = (int32_t)v;
	return true;
}

/* Storage refused for its size: the value is swallowed, the request still
 * runs (exec answers, and a set removes the old value, as memcached). */
static int refuse_size(struct larderd_req *req, int32_t vlen)
{
	req->too_large = true;
	req->swallow = (size_t)vlen + 2;
	return LARDERD_PARSE_DONE;
}

/* set add replace append prepend cas: process_update_command(). */
static int parse_storage(const char *buf, size_t len, const struct larderd_limits *lim,
			 struct larderd_req *req, int nt)
{
	bool is_cas = req->cmd == LARDERD_CMD_CAS;
	int32_t vlen;

	if (nt != (is_cas ? 7 : 6) && nt != (is_cas ? 8 : 7))
		return reply(req, k_error);
	set_noreply(req);
	req->key = req->tok[1];
	if (!key_ok(&req->key))
		return reply(req, k_bad_format);
	if (!larderd_strtoul32(&req->tok[2], &req->flags) ||
	    !larderd_strtol32(&req->tok[3], &req->exptime) || !value_length(&req->tok[4], &vlen))
		return reply(req, k_bad_format);
	if (is_cas && !larderd_strtoull(&req->tok[5], &req->cas))
		return reply(req, k_bad_format);
	if (vlen < 0 || vlen > INT_MAX - 2)
		return reply(req, k_bad_format);
	if (!larderd_item_fits(lim, req->key.n, req->flags, (uint64_t)vlen))
		return refuse_size(req, vlen);
	return take_data(buf, len, req, (size_t)vlen, false);
}

/* get gets gat gats bget: process_get_command(). Keys are walked lazily by
 * exec; this finds the first one over 250 bytes (memcached reads the keys
 * before it, then answers only the error) and reads the gat exptime. */
static int parse_get(struct larderd_req *req, const char *line, size_t line_len)
{
	const char *cur = line, *end = line + line_len;
	struct larderd_tok t = {line, 0};

	larderd_next_token(&cur, end, &t); /* the command */
	if (req->cmd == LARDERD_CMD_GAT || req->cmd == LARDERD_CMD_GATS) {
		larderd_next_token(&cur, end, &t);
		if (!larderd_strtol32(&t, &req->exptime))
			return reply(req, k_bad_exptime);
	}
	req->keys = cur;
	req->keys_end = end;
	while (larderd_next_token(&cur, end, &t)) {
		if (!key_ok(&t)) {
			req->bad_key = t.p;
			req->keys_end = t.p;
			break;
		}
	}
	return LARDERD_PARSE_DONE;
}

static int parse_delete(struct larderd_req *req, int nt)
{
	if (nt < 3 || nt > 5)
		return reply(req, k_error);
	if (nt > 3) {
		bool zero = tok_is(&req->tok[2], "0");
		bool valid;
		set_noreply(req);
		valid = (nt == 4 && (zero || req->noreply)) || (nt == 5 && zero && req->noreply);
		if (!valid)
			return reply(req, k_bad_delete);
	}
	req->key = req->tok[1];
	if (!key_ok(&req->key))
		return reply(req, k_bad_format);
	return LARDERD_PARSE_DONE;
}

static int parse_arith_touch(struct larderd_req *req, int nt)
{
	if (nt != 4 && nt != 5)
		return reply(req, k_error);
	set_noreply(req);
	req->key = req->tok[1];
	if (!key_ok(&req->key))
		return reply(req, k_bad_format);
	if (req->cmd == LARDERD_CMD_TOUCH) {
		if (!larderd_strtol32(&req->tok[2], &req->exptime))
			return reply(req, k_bad_exptime);
	} else if (!larderd_strtoull(&req->tok[2], &req->delta)) {
		return reply(req, k_bad_delta);
	}
	return LARDERD_PARSE_DONE;
}

static int parse_flush(const struct larderd_limits *lim, struct larderd_req *req, int nt)
{
	if (nt < 2 || nt > 4)
		return reply(req, k_error);
	set_noreply(req);
	if (lim->flush_disabled)
		return LARDERD_PARSE_DONE; /* refused by the server, whatever the exptime */
	if (nt != (req->noreply ? 3 : 2) && !larderd_strtol32(&req->tok[1], &req->num))
		return reply(req, k_bad_exptime);
	return LARDERD_PARSE_DONE;
}

static int parse_verbosity(struct larderd_req *req, int nt)
{
	uint32_t level;

	if (nt != 3 && nt != 4)
		return reply(req, k_error);
	set_noreply(req);
	if (!larderd_strtoul32(&req->tok[1], &level))
		return reply(req, k_bad_format);
	return LARDERD_PARSE_DONE;
}

static int parse_memlimit(struct larderd_req *req, int nt)
{
	if (nt != 3 && nt != 4)
		return reply(req, k_error);
	set_noreply(req);
	if (!larderd_strtoul32(&req->tok[1], &req->unum))
		return reply(req, k_error);
	return LARDERD_PARSE_DONE;
}

/* ---- meta commands ------------------------------------------------------- */

/* One flag's numeric argument (the token after its letter). */
static struct larderd_tok flag_arg(const struct larderd_tok *t)
{
	struct larderd_tok a = {t->p + 1, t->n - 1};
	return a;
}

/*
 * memcached's _meta_flag_preparse() from token `first` on: returns NULL, or
 * the error to send. A duplicate or unknown flag stops at once; an argument
 * error is remembered (the last one wins) and the scan goes on.
 */
static const char *meta_flags(struct larderd_req *req, int first)
{
	struct larderd_meta *m = &req->meta;
	const char *err = NULL;
	bool has_error = false, seen[128] = {false};

	for (int i = first; i < req->ntok; i++) {
		const struct larderd_tok *t = &req->tok[i];
		struct larderd_tok a = flag_arg(t);
		unsigned char o = (unsigned char)t->p[0];
		int f = larderd_meta_index((char)o);
		long n;

		if (o >= 127 || seen[o])
			return "CLIENT_ERROR duplicate flag";
		seen[o] = true;
		switch (o) {
		case 'b':
			n = larderd_b64_decode(req->key.p, req->key.n, m->key_raw, sizeof(m->key_raw));
			m->key_binary = true;
			if (n <= 0) {
				err = "CLIENT_ERROR error decoding key";
				has_error = true;
				n = 0;
			}
			req->key.p = (const char *)m->key_raw;
			req->key.n = (size_t)n;
			break;
		case 'N': case 'T': case 'R': {
			int32_t *v = o == 'N' ? &m->ttl_N : o == 'T' ? &m->ttl_T : &m->ttl_R;
			if (!larderd_strtol32(&a, v)) {
				err = k_bad_token;
				has_error = true;
			}
			break;
		}
		case 'l': case 'O': case 'P': case 'L': case 'k': case 's': case 't': case 'c':
		case 'f': case 'v': case 'h': case 'u': case 'I': case 'q':
			break; /* no argument to check; exec reads them */
		case 'F':
			if (!larderd_strtoul32(&a, &m->client_flags))
				has_error = true;
			break;
		case 'C':
			if (!larderd_strtoull(&a, &m->cas)) {
				err = k_bad_token;
				has_error = true;
			}
			break;
		case 'M':
			if (t->n != 2) {
				err = "CLIENT_ERROR incorrect length for M token";
				has_error = true;
			} else {
				m->mode = t->p[1];
			}
			break;
		case 'J':
			if (!larderd_strtoull(&a, &m->initial)) {
				err = "CLIENT_ERROR invalid numeric initial value";
				has_error = true;
			}
			break;
		case 'D':
			if (!larderd_strtoull(&a, &m->delta)) {
				err = "CLIENT_ERROR invalid numeric delta value";
				has_error = true;
			}
			break;
		default:
			return "CLIENT_ERROR invalid flag";
		}
		m->present |= (uint64_t)1 << f;
		m->at[f] = (int8_t)i;
	}
	if (!has_error)
		return NULL;
	return err != NULL ? err : k_bad_format;
}

static void meta_reset(struct larderd_meta *m)
{
	m->present = 0;
	memset(m->at, -1, sizeof(m->at));
	m->ttl_T = m->ttl_N = m->ttl_R = 0;
	m->client_flags = 0;
	m->cas = m->initial = 0;
	m->delta = 1;
	m->mode = 0;
	m->key_binary = false;
}

static void meta_noreply(struct larderd_req *req)
{
	req->noreply = (req->meta.present >> larderd_meta_index('q')) & 1;
}

static int parse_ms(const char *buf, size_t len, const struct larderd_limits *lim,
		    struct larderd_req *req, int nt)
{
	const char *err;
	int32_t vlen;

	if (nt == 3)
		return reply_err(req, k_bad_format);
	if (nt > META_MAX_TOKENS)
		return reply_err(req, k_too_long);
	if (!value_length(&req->tok[2], &vlen) || vlen < 0 || vlen > INT_MAX - 2)
		return reply_err(req, k_bad_format);
	/* From here on an error swallows the value, as memcached does. */
	req->swallow = (size_t)vlen + 2;
	err = meta_flags(req, 3);
	if (err != NULL)
		return reply_err(req, err);
	meta_noreply(req);
	switch (req->meta.mode) {
	case 0: case 'E': case 'A': case 'P': case 'R': case 'S':
		break;
	default:
		return reply_err(req, "CLIENT_ERROR invalid mode for ms M token");
	}
	for (int i = 3; i < req->ntok; i++)
		if (req->tok[i].p[0] == 'O' && req->tok[i].n > LARDERD_META_OPAQUE_MAX)
			return reply_err(req, "CLIENT_ERROR opaque token too long");
	if (!larderd_item_fits(lim, req->key.n, req->meta.client_flags, (uint64_t)vlen)) {
		req->too_large = true;
		return LARDERD_PARSE_DONE;
	}
	req->swallow = 0;
	return take_data(buf, len, req, (size_t)vlen, true);
}

static int parse_meta(const char *buf, size_t len, const struct larderd_limits *lim,
		      struct larderd_req *req, int nt)
{
	const char *err;

	switch (req->tok[0].p[1]) {
	case 'n':
		req->cmd = LARDERD_CMD_MN;
		return LARDERD_PARSE_DONE;
	case 'g': req->cmd = LARDERD_CMD_MG; break;
	case 's': req->cmd = LARDERD_CMD_MS; break;
	case 'd': req->cmd = LARDERD_CMD_MD; break;
	case 'a': req->cmd = LARDERD_CMD_MA; break;
	case 'e': req->cmd = LARDERD_CMD_ME; break;
	default:
		return reply(req, k_error);
	}
	if (req->cmd == LARDERD_CMD_ME) {
		/* process_meta_command(): a debug command with its own rules */
		if (nt < 3 || !key_ok(&req->tok[1]))
			return reply(req, k_bad_format);
		req->key = req->tok[1];
		if (nt >= 4 && tok_is(&req->tok[2], "b")) {
			long n = larderd_b64_decode(req->key.p, req->key.n, req->meta.key_raw,
						    sizeof(req->meta.key_raw));
			if (n <= 0)
				return reply(req, k_bad_format);
			req->key.p = (const char *)req->meta.key_raw;
			req->key.n = (size_t)n;
		}
		return LARDERD_PARSE_DONE;
	}
	if (nt < 3)
		return reply(req, k_error);
	req->key = req->tok[1];
	if (!key_ok(&req->key))
		return reply_err(req, k_bad_format);
	if (req->cmd == LARDERD_CMD_MS)
		return parse_ms(buf, len, lim, req, nt);
	if (nt > META_MAX_TOKENS)
		return reply_err(req, req->cmd == LARDERD_CMD_MG ? k_mg_too_long : k_too_long);
	err = meta_flags(req, 2);
	if (err != NULL)
		/* md and ma answer every flag error with the same text */
		return reply_err(req, req->cmd == LARDERD_CMD_MG ? err : k_bad_flags_md);
	meta_noreply(req);
	if (req->cmd == LARDERD_CMD_MA) {
		switch (req->meta.mode) {
		case 0: case 'I': case '+': case 'D': case '-':
			break;
		default:
			return reply_err(req, "CLIENT_ERROR invalid mode for ma M token");
		}
	}
	return LARDERD_PARSE_DONE;
}

/* ---- dispatch ---------------------------------------------------------------- */

/* The commands memcached answers with only ERROR without testing for HTTP:
 * those whose first letter has its own branch in process_command_ascii(). */
static bool has_branch(char first)
{
	return first == 'g' || first == 's' || first == 'a' || first == 'c' || first == 'i' ||
	       first == 'd' || first == 't';
}

static int unknown(struct larderd_req *req)
{
	const struct larderd_tok *last = &req->tok[req->ntok - 1];

	if (!has_branch(req->tok[0].p[0]) && last->n >= 5 && memcmp(last->p, "HTTP/", 5) == 0)
		return LARDERD_PARSE_CLOSE; /* a cross-protocol request: memcached hangs up */
	return reply(req, k_error);
}

struct name_cmd {
	const char *name;
	enum larderd_cmd cmd;
};

static const struct name_cmd k_names[] = {
	{"get", LARDERD_CMD_GET},         {"gets", LARDERD_CMD_GETS},
	{"gat", LARDERD_CMD_GAT},         {"gats", LARDERD_CMD_GATS},
	{"bget", LARDERD_CMD_GET},        {"set", LARDERD_CMD_SET},
	{"add", LARDERD_CMD_ADD},         {"replace", LARDERD_CMD_REPLACE},
	{"append", LARDERD_CMD_APPEND},   {"prepend", LARDERD_CMD_PREPEND},
	{"cas", LARDERD_CMD_CAS},         {"delete", LARDERD_CMD_DELETE},
	{"incr", LARDERD_CMD_INCR},       {"decr", LARDERD_CMD_DECR},
	{"touch", LARDERD_CMD_TOUCH},     {"flush_all", LARDERD_CMD_FLUSH_ALL},
	{"version", LARDERD_CMD_VERSION}, {"verbosity", LARDERD_CMD_VERBOSITY},
	{"quit", LARDERD_CMD_QUIT},       {"stats", LARDERD_CMD_STATS},
	{"cache_memlimit", LARDERD_CMD_MEMLIMIT},
	{"lru_crawler", LARDERD_CMD_METADUMP},
};

static int dispatch(const char *buf, size_t len, const struct larderd_limits *lim,
		    struct larderd_req *req, const char *line, size_t line_len, int nt)
{
	const struct larderd_tok *name = &req->tok[0];
	size_t i;

	if (name->n == 2 && name->p[0] == 'm')
		return parse_meta(buf, len, lim, req, nt);
	if (name->p[0] == 'g' && nt < 3)
		return reply(req, k_error);
	if (tok_is(name, "shutdown")) {
		req->cmd = LARDERD_CMD_SHUTDOWN;
		return LARDERD_PARSE_DONE;
	}
	for (i = 0; i < sizeof(k_names) / sizeof(k_names[0]); i++)
		if (tok_is(name, k_names[i].name))
			break;
	if (i == sizeof(k_names) / sizeof(k_names[0]))
		return unknown(req);
	req->cmd = k_names[i].cmd;
	switch (req->cmd) {
	case LARDERD_CMD_GET: case LARDERD_CMD_GETS: case LARDERD_CMD_GAT: case LARDERD_CMD_GATS:
		if (nt < 3) /* bget */
			return reply(req, k_error);
		return parse_get(req, line, line_len);
	case LARDERD_CMD_SET: case LARDERD_CMD_ADD: case LARDERD_CMD_REPLACE:
	case LARDERD_CMD_APPEND: case LARDERD_CMD_PREPEND: case LARDERD_CMD_CAS:
		return parse_storage(buf, len, lim, req, nt);
	case LARDERD_CMD_DELETE:
		return parse_delete(req, nt);
	case LARDERD_CMD_INCR: case LARDERD_CMD_DECR: case LARDERD_CMD_TOUCH:
		return parse_arith_touch(req, nt);
	case LARDERD_CMD_FLUSH_ALL:
		return parse_flush(lim, req, nt);
	case LARDERD_CMD_VERBOSITY:
		return parse_verbosity(req, nt);
	case LARDERD_CMD_MEMLIMIT:
		return parse_memlimit(req, nt);
	case LARDERD_CMD_METADUMP: /* only the metadump subcommand, as memcached: one argument */
		if (nt != 4 || !tok_is(&req->tok[1], "metadump"))
			return reply(req, k_error);
		return LARDERD_PARSE_DONE;
	default:
		return LARDERD_PARSE_DONE;
	}
}

/* memcached lets only a get/gets line grow past 2 KiB. */
int larderd_parse_no_newline(const char *buf, size_t len)
{
	size_t lead = 0;

	if (len <= LARDERD_LINE_MAX)
		return LARDERD_PARSE_MORE;
	while (lead < len && buf[lead] == ' ')
		lead++;
	if (lead > 100 || len > LARDERD_GET_LINE_MAX)
		return LARDERD_PARSE_CLOSE;
	if (len - lead >= 5 && memcmp(buf + lead, "gets ", 5) == 0)
		return LARDERD_PARSE_MORE;
	if (len - lead >= 4 && memcmp(buf + lead, "get ", 4) == 0)
		return LARDERD_PARSE_MORE;
	return LARDERD_PARSE_CLOSE;
}

static void req_reset(struct larderd_req *req)
{
	req->cmd = LARDERD_CMD_REPLY;
	req->reply = NULL;
	req->swallow = 0;
	req->need = 0;
	req->noreply = false;
	req->too_large = false;
	req->data = NULL;
	req->data_len = 0;
	req->keys = req->keys_end = req->bad_key = NULL;
	req->key.p = NULL;
	req->key.n = 0;
	req->ntok = 0;
	req->flags = 0;
	req->cas = 0;
	req->delta = 0;
	req->exptime = 0;
	req->num = 0;
	req->unum = 0;
	req->dump = NULL;
	meta_reset(&req->meta);
}

int larderd_parse(const char *buf, size_t len, const struct larderd_limits *lim,
		  struct larderd_req *req)
{
	const char *nl, *nul;
	size_t line_len;
	int nt;

	req_reset(req);
	nl = memchr(buf, '\n', len);
	if (nl == NULL)
		return larderd_parse_no_newline(buf, len);
	line_len = (size_t)(nl - buf);
	req->consumed = line_len + 1;
	if (line_len > 1 && buf[line_len - 1] == '\r')
		line_len--;
	nul = memchr(buf, '\0', line_len);
	if (nul != NULL)
		line_len = (size_t)(nul - buf);
	nt = tokenize(buf, line_len, req);
	if (nt < 2 || req->tok[0].n < 2)
		return reply(req, k_error);
	return dispatch(buf, len, lim, req, buf, line_len, nt);
}
