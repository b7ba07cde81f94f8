/*
 * parse.h - the memcached text and meta protocol request parser of larderd.
 *
 * Owns: turning bytes received on one connection into one request at a time,
 * with every syntax rule of memcached 1.6.18 (proto_text.c): what is a line,
 * how it splits into tokens, how numbers read, which token counts and flags
 * are valid, and which error text each mistake gets. It is pure: no I/O, no
 * allocation, no global state, so it can be unit-tested byte by byte and
 * fuzzed. The caller owns the buffer; every pointer in a request points into
 * it (or into the request itself) and stays valid until those bytes move.
 *
 * Incremental: larderd_parse() is called with all bytes received and not yet
 * consumed. It returns LARDERD_PARSE_MORE when the request is not complete,
 * with req->need set to the total byte count it needs (0: "a newline", and
 * only when the bytes hold none), so the caller waits for that much before
 * calling again instead of rescanning.
 *
 * Invariants (asserted by tests/protocol/test_parse.c):
 *   PARSE-P1. DONE consumes req->consumed > 0 bytes, never more than it was given.
 *   PARSE-P2. Feeding a request split at any byte boundary gives the same result as
 *       feeding it whole.
 *   PARSE-P3. A line without '\n' is never accepted past LARDERD_LINE_MAX bytes
 *       (LARDERD_GET_LINE_MAX for get/gets, whose long multigets memcached
 *       serves): PARSE_CLOSE, so a peer cannot grow the buffer unbounded.
 *   PARSE-P4. A value over the item limit is never buffered: the request comes
 *       back with req->swallow > 0 bytes for the caller to discard as they
 *       arrive; it is executed (an error reply, and for set the removal of
 *       the old value) when its line is parsed, and memcached sends that
 *       reply only after the value was swallowed, so the caller holds its
 *       output until then.
 */
#ifndef LARDERD_PARSE_H
#define LARDERD_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LARDERD_KEY_MAX 250
#define LARDERD_MAX_TOKENS 24 /* memcached's MAX_TOKENS, terminator included */
#define LARDERD_LINE_MAX 2048
/* memcached reads a get/gets line of any length; larderd stops at 4 MiB. */
#define LARDERD_GET_LINE_MAX (4u << 20)
#define LARDERD_META_OPAQUE_MAX 32 /* longest O token, its letter included */

enum larderd_cmd {
	LARDERD_CMD_REPLY = 0, /* send req->reply (no \r\n) unless req->noreply, go on */
	LARDERD_CMD_GET,
	LARDERD_CMD_GETS,
	LARDERD_CMD_GAT,
	LARDERD_CMD_GATS,
	LARDERD_CMD_SET,
	LARDERD_CMD_ADD,
	LARDERD_CMD_REPLACE,
	LARDERD_CMD_APPEND,
	LARDERD_CMD_PREPEND,
	LARDERD_CMD_CAS,
	LARDERD_CMD_DELETE,
	LARDERD_CMD_INCR,
	LARDERD_CMD_DECR,
	LARDERD_CMD_TOUCH,
	LARDERD_CMD_FLUSH_ALL,
	LARDERD_CMD_VERSION,
	LARDERD_CMD_VERBOSITY,
	LARDERD_CMD_QUIT,
	LARDERD_CMD_STATS,
	LARDERD_CMD_MEMLIMIT, /* cache_memlimit */
	LARDERD_CMD_MG,
	LARDERD_CMD_MS,
	LARDERD_CMD_MD,
	LARDERD_CMD_MA,
	LARDERD_CMD_MN,
	LARDERD_CMD_ME,
	LARDERD_CMD_METADUMP, /* lru_crawler metadump <all|hash|ids>: tok[2] is the argument */
	LARDERD_CMD_SHUTDOWN, /* shutdown [graceful]: whether -A allows it is the server's call */
	LARDERD_CMD_COUNT
};

enum larderd_parse_result {
	LARDERD_PARSE_MORE = 0,
	LARDERD_PARSE_DONE = 1,
	LARDERD_PARSE_CLOSE = 2, /* close the connection without a reply */
};

struct larderd_tok {
	const char *p;
	size_t n;
};

/* Meta flags: one bit per letter (a-z, A-Z), the token index of each, and
 * the parsed arguments memcached's _meta_flag_preparse() reads. */
#define LARDERD_META_FLAGS 52
struct larderd_meta {
	uint64_t present;
	int8_t at[LARDERD_META_FLAGS]; /* index into req->tok, -1 when absent */
	int32_t ttl_T, ttl_N, ttl_R;   /* exptimes of T, N and R, as memcached's int32 */
	uint32_t client_flags;         /* F */
	uint64_t cas;                  /* C */
	uint64_t initial, delta;       /* J, D (delta 1 when absent) */
	char mode;                     /* M's letter, 0 when absent */
	bool key_binary;               /* b: req->key holds the decoded bytes */
	unsigned char key_raw[LARDERD_KEY_MAX];
};

struct larderd_req {
	enum larderd_cmd cmd;
	const char *reply;  /* CMD_REPLY: the text to send */
	size_t consumed;    /* bytes taken from the buffer, value included */
	size_t swallow;     /* bytes to discard after consumed (value refused) */
	size_t need;        /* PARSE_MORE: total bytes needed, 0 when unknown */
	bool noreply;       /* the reply is suppressed (memcached's c->noreply) */
	bool too_large;     /* storage, ms: refused for its size; swallow > 0 */
	int ntok;           /* tokens of the line, terminator excluded (<= 23) */
	struct larderd_tok tok[LARDERD_MAX_TOKENS];
	struct larderd_tok key;
	/* get/gets/gat/gats: the keys, parsed lazily from here to keys_end. */
	const char *keys;
	const char *keys_end;
	/* The first key over 250 bytes, NULL when none: the keys before it
	 * are read (and gat touches them) without a reply, then the command
	 * fails; keys_end stops there. */
	const char *bad_key;
	uint32_t flags;
	int32_t exptime;    /* memcached's exptime, after its 32-bit wrap */
	uint64_t cas;
	uint64_t delta;
	int32_t num;        /* flush_all delay */
	uint32_t unum;      /* cache_memlimit megabytes */
	const char *data;   /* set family, ms: the value, data_len bytes */
	size_t data_len;
	struct larderd_meta meta;
	/* CMD_METADUMP: the dump's cursor (a larder_iter) while it is suspended;
	 * the executor owns it, larderd_exec_abandon() frees it. */
	void *dump;
};

struct larderd_limits {
	size_t item_max;     /* -I: memcached's item_size_max */
	bool flush_disabled; /* -F: flush_all's exptime is not read (memcached refuses first) */
};

/*
 * Parses one request from buf[0..len). Never reads outside it, never writes
 * to it. Returns a larderd_parse_result; on DONE, *req describes the request.
 */
int larderd_parse(const char *buf, size_t len, const struct larderd_limits *lim,
		  struct larderd_req *req);

/*
 * What larderd_parse() returns for buf[0..len) when it holds no '\n':
 * PARSE_MORE, or PARSE_CLOSE once the line is too long (PARSE-P3). A caller that
 * already knows the first bytes hold no newline searches only the new ones
 * and asks this, so a long line arriving in many reads is searched once.
 */
int larderd_parse_no_newline(const char *buf, size_t len);

/*
 * Next space-separated token at or after *cursor, below end. Returns false
 * when there is none. Used to walk multiget keys.
 */
bool larderd_next_token(const char **cursor, const char *end, struct larderd_tok *tok);

/*
 * Numbers as memcached's safe_strto*() read them (util.c): leading white
 * space, a sign, decimal digits, then the end of the token or white space;
 * strtol's and strtoul's 64-bit range; a negative number refused only where
 * it wraps to a "negative" unsigned value. strtol32 and strtoul32 then keep
 * the low 32 bits, as memcached's int32/uint32 destinations do.
 */
bool larderd_strtol32(const struct larderd_tok *t, int32_t *out);
bool larderd_strtoul32(const struct larderd_tok *t, uint32_t *out);
bool larderd_strtoull(const struct larderd_tok *t, uint64_t *out);

/* Meta flag letter to index 0..51, or -1. */
int larderd_meta_index(char c);

/*
 * The largest value memcached 1.6.18 stores for a key of nkey bytes: its
 * item (48-byte header, 8-byte CAS, key and NUL, 4 bytes of client flags
 * unless they are 0, the value and "\r\n") must fit in item_max.
 */
bool larderd_item_fits(const struct larderd_limits *lim, size_t nkey, uint32_t flags,
		       uint64_t vlen);

/*
 * Whether memcached 1.6.18 stores such an item in chunks (over its default
 * slab_chunk_max, half of a 1 MiB slab page): incr and decr refuse a chunked
 * item as non-numeric, before they check a CAS unique.
 */
#define LARDERD_SLAB_CHUNK_MAX (512u * 1024u)
bool larderd_item_chunked(size_t nkey, uint32_t flags, uint64_t vlen);

#endif
