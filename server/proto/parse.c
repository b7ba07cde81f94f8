/*
 * parse.c - memcached text and meta protocol request parser (see parse.h).
 *
 * Design: a request is a line ending in "\n" (an optional "\r" before it is
 * dropped), split on spaces into at most LARDER__MAX_TOKENS - 1 tokens the way
 * memcached 1.6's tokenize_command() does, then dispatched on the command
 * name with memcached's token-count rules, so that malformed input gets the
 * same reply memcached gives (ERROR for an unknown command or a wrong token
 * count, CLIENT_ERROR ... for bad arguments). Storage commands then need
 * data_len + 2 more bytes, which must end in "\r\n".
 *
 * What is checked here and what is not: the parser checks syntax, key
 * length, number syntax and the value size limit. Everything that needs the
 * cache (does the key exist, does the CAS match) and the meaning of meta
 * flags is left to exec.c, which keeps this file pure and fuzzable.
 */
#include "parse.h"

#include <limits.h>
#include <string.h>

static const char k_error[] = "ERROR";
static const char k_bad_format[] = "CLIENT_ERROR bad command line format";
static const char k_bad_chunk[] = "CLIENT_ERROR bad data chunk";
static const char k_too_large[] = "SERVER_ERROR object too large for cache";
static const char k_bad_exptime[] = "CLIENT_ERROR invalid exptime argument";
static const char k_bad_delta[] = "CLIENT_ERROR invalid numeric delta argument";
static const char k_bad_delete[] =
	"CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]";
static const char k_bad_flag[] = "CLIENT_ERROR invalid flag";
static const char k_dup_flag[] = "CLIENT_ERROR duplicate flag";
static const char k_bad_flag_md[] = "CLIENT_ERROR invalid or duplicate flag";
/* Every flag memcached 1.6.18 knows, for any meta command; others are invalid. */
static const char k_meta_valid[] = "bNTRlOPLkstcfvhuqFCMJDIx";

bool larder__next_token(const char **cursor, const char *end, struct larder__tok *tok)
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

bool larder__parse_u64(const struct larder__tok *t, uint64_t *out)
{
	uint64_t v = 0;
	size_t i = 0;

	if (t->n > 0 && t->p[0] == '+')
		i = 1;
	if (i == t->n)
		return false;
	for (; i < t->n; i++) {
		unsigned d = (unsigned char)t->p[i] - '0';
		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return false;
		v = v * 10 + d;
	}
	*out = v;
	return true;
}

bool larder__parse_i64(const struct larder__tok *t, int64_t *out)
{
	struct larder__tok rest = *t;
	bool neg = false;
	uint64_t v;

	if (rest.n > 0 && rest.p[0] == '-') {
		neg = true;
		rest.p++;
		rest.n--;
		if (rest.n > 0 && rest.p[0] == '+')
			return false;
	}
	if (!larder__parse_u64(&rest, &v) || v > (uint64_t)INT64_MAX)
		return false;
	*out = neg ? -(int64_t)v : (int64_t)v;
	return true;
}

/* memcached's safe_strtol on a 32-bit destination. */
static bool parse_i32(const struct larder__tok *t, int64_t *out)
{
	return larder__parse_i64(t, out) && *out >= INT32_MIN && *out <= INT32_MAX;
}

int larder__meta_index(char c)
{
	if (c >= 'a' && c <= 'z')
		return c - 'a';
	if (c >= 'A' && c <= 'Z')
		return 26 + (c - 'A');
	return -1;
}

static bool tok_is(const struct larder__tok *t, const char *s)
{
	size_t n = strlen(s);
	return t->n == n && memcmp(t->p, s, n) == 0;
}

/* Splits line[0..n) into req->tok; returns memcached's ntokens (terminator counted). */
static int tokenize(const char *line, size_t n, struct larder__req *req)
{
	const char *cur = line, *end = line + n;
	int nt = 0;

	while (nt < LARDER__MAX_TOKENS - 1 && larder__next_token(&cur, end, &req->tok[nt]))
		nt++;
	req->ntok = nt;
	if (nt == LARDER__MAX_TOKENS - 1) {
		while (cur < end && *cur == ' ')
			cur++;
		if (cur < end)
			return nt + 2; /* more text: memcached counts a non-empty terminator */
	}
	return nt + 1;
}

static void set_noreply(struct larder__req *req)
{
	req->noreply = req->ntok > 0 && tok_is(&req->tok[req->ntok - 1], "noreply");
}

static int reply(struct larder__req *req, const char *text)
{
	req->cmd = LARDER__CMD_REPLY;
	req->reply = text;
	return LARDER__PARSE_DONE;
}

static bool key_ok(const struct larder__tok *t)
{
	return t->n <= LARDER__KEY_MAX;
}

/* The value after the line: needs data_len + 2 bytes, ending in \r\n. */
static int take_data(const char *buf, size_t len, struct larder__req *req, size_t data_len)
{
	size_t need = req->consumed + data_len + 2;

	if (len < need) {
		req->need = need;
		return LARDER__PARSE_MORE;
	}
	req->data = buf + req->consumed;
	req->data_len = data_len;
	req->consumed = need;
	if (buf[need - 2] != '\r' || buf[need - 1] != '\n')
		return reply(req, k_bad_chunk);
	return LARDER__PARSE_DONE;
}

static int parse_storage(const char *buf, size_t len, const struct larder__limits *lim,
			 struct larder__req *req, int nt)
{
	bool is_cas = req->cmd == LARDER__CMD_CAS;
	uint64_t flags;
	int64_t vlen;

	if (nt != (is_cas ? 7 : 6) && nt != (is_cas ? 8 : 7))
		return reply(req, k_error);
	set_noreply(req);
	req->key = req->tok[1];
	if (!key_ok(&req->key))
		return reply(req, k_bad_format);
	if (!larder__parse_u64(&req->tok[2], &flags) || !parse_i32(&req->tok[3], &req->exptime) ||
	    !parse_i32(&req->tok[4], &vlen))
		return reply(req, k_bad_format);
	req->flags = (uint32_t)flags; /* memcached truncates the same way */
	if (is_cas && !larder__parse_u64(&req->tok[5], &req->cas))
		return reply(req, k_bad_format);
	if (vlen < 0 || vlen > INT_MAX - 2)
		return reply(req, k_bad_format);
	if ((uint64_t)vlen > lim->item_max) {
		req->swallow = (size_t)vlen + 2;
		return reply(req, k_too_large);
	}
	return take_data(buf, len, req, (size_t)vlen);
}

static int parse_get(struct larder__req *req, const char *line, size_t line_len, int nt)
{
	const char *cur = line, *end = line + line_len;
	struct larder__tok t;

	if (nt < 3)
		return reply(req, k_error);
	larder__next_token(&cur, end, &t); /* the command */
	if (req->cmd == LARDER__CMD_GAT || req->cmd == LARDER__CMD_GATS) {
		larder__next_token(&cur, end, &t);
		if (!parse_i32(&t, &req->exptime))
			return reply(req, k_bad_exptime);
	}
	req->keys = cur;
	req->keys_end = end;
	while (larder__next_token(&cur, end, &t))
		if (!key_ok(&t))
			return reply(req, k_bad_format);
	return LARDER__PARSE_DONE;
}

static int parse_delete(struct larder__req *req, int nt)
{
	if (nt < 3 || nt > 5)
		return reply(req, k_error);
	if (nt > 3) {
		bool zero = tok_is(&req->tok[2], "0");
		bool valid;
		set_noreply(req);
		valid = (nt == 4 && (zero || req->noreply)) || (nt == 5 && zero && req->noreply);
		if (!valid) {
			req->noreply = false;
			return reply(req, k_bad_delete);
		}
	}
	req->key = req->tok[1];
	if (!key_ok(&req->key))
		return reply(req, k_bad_format);
	return LARDER__PARSE_DONE;
}

static int parse_arith_touch(struct larder__req *req, int nt)
{
	if (nt != 4 && nt != 5)
		return reply(req, k_error);
	set_noreply(req);
	req->key = req->tok[1];
	if (!key_ok(&req->key))
		return reply(req, k_bad_format);
	if (req->cmd == LARDER__CMD_TOUCH) {
		if (!parse_i32(&req->tok[2], &req->exptime))
			return reply(req, k_bad_exptime);
	} else if (!larder__parse_u64(&req->tok[2], &req->delta)) {
		return reply(req, k_bad_delta);
	}
	return LARDER__PARSE_DONE;
}

static int parse_flush(struct larder__req *req, int nt)
{
	if (nt < 2 || nt > 4)
		return reply(req, k_error);
	set_noreply(req);
	if (nt == (req->noreply ? 3 : 2))
		return LARDER__PARSE_DONE;
	if (!parse_i32(&req->tok[1], &req->num))
		return reply(req, k_bad_exptime);
	return LARDER__PARSE_DONE;
}

/* Meta flags from token `first` on: one letter each, no duplicates. */
static const char *parse_meta_flags(struct larder__req *req, int first)
{
	memset(req->meta.at, -1, sizeof(req->meta.at));
	for (int i = first; i < req->ntok; i++) {
		int f = larder__meta_index(req->tok[i].p[0]);
		if (f < 0 || strchr(k_meta_valid, req->tok[i].p[0]) == NULL)
			return k_bad_flag;
		if (req->meta.present & ((uint64_t)1 << f))
			return k_dup_flag;
		req->meta.present |= (uint64_t)1 << f;
		req->meta.at[f] = (int8_t)i;
	}
	if (req->meta.present & ((uint64_t)1 << larder__meta_index('q')))
		req->noreply = true;
	return NULL;
}

static int parse_ms(const char *buf, size_t len, const struct larder__limits *lim,
		    struct larder__req *req)
{
	const char *err;
	int64_t vlen;

	if (req->ntok < 3 || !parse_i32(&req->tok[2], &vlen) || vlen < 0)
		return reply(req, k_bad_format);
	err = parse_meta_flags(req, 3);
	if (err != NULL || (uint64_t)vlen > lim->item_max) {
		req->noreply = false;
		req->swallow = (size_t)vlen + 2;
		return reply(req, err != NULL ? err : k_too_large);
	}
	return take_data(buf, len, req, (size_t)vlen);
}

static int parse_meta(const char *buf, size_t len, const struct larder__limits *lim,
		      struct larder__req *req, int nt)
{
	const char *err;

	switch (req->tok[0].p[1]) {
	case 'n':
		req->cmd = LARDER__CMD_MN;
		return LARDER__PARSE_DONE;
	case 'g': req->cmd = LARDER__CMD_MG; break;
	case 's': req->cmd = LARDER__CMD_MS; break;
	case 'd': req->cmd = LARDER__CMD_MD; break;
	case 'a': req->cmd = LARDER__CMD_MA; break;
	case 'e': req->cmd = LARDER__CMD_ME; break;
	default:
		return reply(req, k_error);
	}
	if (nt < 3)
		return reply(req, k_error);
	req->key = req->tok[1];
	if (!key_ok(&req->key))
		return reply(req, k_bad_format);
	if (req->cmd == LARDER__CMD_MS)
		return parse_ms(buf, len, lim, req);
	if (req->cmd == LARDER__CMD_ME)
		return LARDER__PARSE_DONE;
	err = parse_meta_flags(req, 2);
	if (err != NULL) {
		req->noreply = false;
		/* memcached 1.6.18 words it differently for md and ma */
		if (req->cmd == LARDER__CMD_MD || req->cmd == LARDER__CMD_MA)
			err = k_bad_flag_md;
		return reply(req, err);
	}
	return LARDER__PARSE_DONE;
}

struct name_cmd {
	const char *name;
	enum larder__cmd cmd;
};

static const struct name_cmd k_names[] = {
	{"get", LARDER__CMD_GET},         {"gets", LARDER__CMD_GETS},
	{"gat", LARDER__CMD_GAT},         {"gats", LARDER__CMD_GATS},
	{"mget", LARDER__CMD_GET},        {"set", LARDER__CMD_SET},
	{"add", LARDER__CMD_ADD},         {"replace", LARDER__CMD_REPLACE},
	{"append", LARDER__CMD_APPEND},   {"prepend", LARDER__CMD_PREPEND},
	{"cas", LARDER__CMD_CAS},         {"delete", LARDER__CMD_DELETE},
	{"incr", LARDER__CMD_INCR},       {"decr", LARDER__CMD_DECR},
	{"touch", LARDER__CMD_TOUCH},     {"flush_all", LARDER__CMD_FLUSH_ALL},
	{"version", LARDER__CMD_VERSION}, {"verbosity", LARDER__CMD_VERBOSITY},
	{"quit", LARDER__CMD_QUIT},       {"stats", LARDER__CMD_STATS},
	{"lru_crawler", LARDER__CMD_METADUMP},
};

static int dispatch(const char *buf, size_t len, const struct larder__limits *lim,
		    struct larder__req *req, const char *line, size_t line_len, int nt)
{
	const struct larder__tok *name = &req->tok[0];
	size_t i;

	if (name->n == 2 && name->p[0] == 'm')
		return parse_meta(buf, len, lim, req, nt);
	for (i = 0; i < sizeof(k_names) / sizeof(k_names[0]); i++)
		if (tok_is(name, k_names[i].name))
			break;
	if (i == sizeof(k_names) / sizeof(k_names[0]))
		return reply(req, k_error);
	req->cmd = k_names[i].cmd;
	switch (req->cmd) {
	case LARDER__CMD_GET: case LARDER__CMD_GETS: case LARDER__CMD_GAT: case LARDER__CMD_GATS:
		return parse_get(req, line, line_len, nt);
	case LARDER__CMD_SET: case LARDER__CMD_ADD: case LARDER__CMD_REPLACE:
	case LARDER__CMD_APPEND: case LARDER__CMD_PREPEND: case LARDER__CMD_CAS:
		return parse_storage(buf, len, lim, req, nt);
	case LARDER__CMD_DELETE:
		return parse_delete(req, nt);
	case LARDER__CMD_INCR: case LARDER__CMD_DECR: case LARDER__CMD_TOUCH:
		return parse_arith_touch(req, nt);
	case LARDER__CMD_FLUSH_ALL:
		return parse_flush(req, nt);
	case LARDER__CMD_VERBOSITY:
		if (nt != 3 && nt != 4)
			return reply(req, k_error);
		set_noreply(req);
		return LARDER__PARSE_DONE;
	case LARDER__CMD_METADUMP: /* only the metadump subcommand, as memcached: one argument */
		if (nt != 4 || !tok_is(&req->tok[1], "metadump"))
			return reply(req, k_error);
		return LARDER__PARSE_DONE;
	default:
		return LARDER__PARSE_DONE;
	}
}

/* No newline yet: memcached lets only a long get/gets line grow past 2 KiB. */
static int no_line_yet(const char *buf, size_t len)
{
	size_t lead = 0;

	if (len <= LARDER__LINE_MAX)
		return LARDER__PARSE_MORE;
	while (lead < len && buf[lead] == ' ')
		lead++;
	if (lead > 100 || len > LARDER__GET_LINE_MAX)
		return LARDER__PARSE_CLOSE;
	if (len - lead >= 5 && memcmp(buf + lead, "gets ", 5) == 0)
		return LARDER__PARSE_MORE;
	if (len - lead >= 4 && memcmp(buf + lead, "get ", 4) == 0)
		return LARDER__PARSE_MORE;
	return LARDER__PARSE_CLOSE;
}

int larder__parse(const char *buf, size_t len, const struct larder__limits *lim,
		  struct larder__req *req)
{
	const char *nl;
	size_t line_len;
	int nt;

	req->cmd = LARDER__CMD_REPLY;
	req->reply = NULL;
	req->swallow = 0;
	req->need = 0;
	req->noreply = false;
	req->data = NULL;
	req->data_len = 0;
	req->keys = req->keys_end = NULL;
	req->key.p = NULL;
	req->key.n = 0;
	req->ntok = 0;
	req->flags = 0;
	req->cas = 0;
	req->delta = 0;
	req->meta.present = 0;
	req->exptime = 0;
	req->num = 0;
	req->dump = NULL;
	nl = memchr(buf, '\n', len);
	if (nl == NULL)
		return no_line_yet(buf, len);
	line_len = (size_t)(nl - buf);
	req->consumed = line_len + 1;
	if (line_len > 0 && buf[line_len - 1] == '\r')
		line_len--;
	nt = tokenize(buf, line_len, req);
	if (nt < 2 || req->tok[0].n < 2)
		return reply(req, k_error);
	return dispatch(buf, len, lim, req, buf, line_len, nt);
}
