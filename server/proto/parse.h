/*
 * parse.h - the memcached text and meta protocol request parser of larderd.
 *
 * Owns: turning bytes received on one connection into one request at a time.
 * It is pure: no I/O, no allocation, no global state, so it can be unit-tested
 * byte by byte and fuzzed. The caller owns the buffer; every pointer in a
 * request points into it and stays valid until the caller moves those bytes.
 *
 * Incremental: larder__parse() is called with all bytes received and not yet
 * consumed. It returns LARDER__PARSE_MORE when the request is not complete,
 * with req->need set to the total byte count it needs (0: "a newline"), so
 * the caller waits for that much before calling again instead of rescanning.
 *
 * Invariants (asserted by tests/protocol/test_parse.c):
 *   P1. DONE consumes req->consumed > 0 bytes, never more than it was given.
 *   P2. Feeding a request split at any byte boundary gives the same result as
 *       feeding it whole.
 *   P3. A line without '\n' is never accepted past LARDER__LINE_MAX bytes
 *       (LARDER__GET_LINE_MAX for get/gets, as memcached allows long
 *       multigets): PARSE_CLOSE, so a peer cannot grow the buffer unbounded.
 *   P4. A declared value length over the item limit is never buffered: the
 *       request is answered with an error and req->swallow bytes are
 *       discarded by the caller as they arrive.
 */
#ifndef LARDER_SERVER_PARSE_H
#define LARDER_SERVER_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define LARDER__KEY_MAX 250
#define LARDER__MAX_TOKENS 24 /* memcached's MAX_TOKENS, terminator included */
#define LARDER__LINE_MAX 2048
#define LARDER__GET_LINE_MAX (128 * 1024)

enum larder__cmd {
	LARDER__CMD_REPLY = 0, /* malformed: send req->reply (no \r\n) and go on */
	LARDER__CMD_GET,
	LARDER__CMD_GETS,
	LARDER__CMD_GAT,
	LARDER__CMD_GATS,
	LARDER__CMD_SET,
	LARDER__CMD_ADD,
	LARDER__CMD_REPLACE,
	LARDER__CMD_APPEND,
	LARDER__CMD_PREPEND,
	LARDER__CMD_CAS,
	LARDER__CMD_DELETE,
	LARDER__CMD_INCR,
	LARDER__CMD_DECR,
	LARDER__CMD_TOUCH,
	LARDER__CMD_FLUSH_ALL,
	LARDER__CMD_VERSION,
	LARDER__CMD_VERBOSITY,
	LARDER__CMD_QUIT,
	LARDER__CMD_STATS,
	LARDER__CMD_MG,
	LARDER__CMD_MS,
	LARDER__CMD_MD,
	LARDER__CMD_MA,
	LARDER__CMD_MN,
	LARDER__CMD_ME,
	LARDER__CMD_METADUMP, /* lru_crawler metadump <all|hash|ids>: tok[2] is the argument */
	LARDER__CMD_COUNT
};

enum larder__parse_result {
	LARDER__PARSE_MORE = 0,
	LARDER__PARSE_DONE = 1,
	LARDER__PARSE_CLOSE = 2, /* close the connection without a reply */
};

struct larder__tok {
	const char *p;
	size_t n;
};

/* Meta flags: one bit per letter; arg[] holds the token's text after the letter. */
#define LARDER__META_FLAGS 52
struct larder__meta {
	uint64_t present;
	int8_t at[LARDER__META_FLAGS]; /* index into req->tok, -1 when absent */
};

struct larder__req {
	enum larder__cmd cmd;
	const char *reply;  /* CMD_REPLY: the text to send */
	size_t consumed;    /* bytes taken from the buffer, value included */
	size_t swallow;     /* bytes to discard after consumed (value too large) */
	size_t need;        /* PARSE_MORE: total bytes needed, 0 when unknown */
	bool noreply;
	int ntok;           /* tokens of the line, terminator excluded */
	struct larder__tok tok[LARDER__MAX_TOKENS];
	struct larder__tok key;
	/* get/gets/gat/gats: the keys, parsed lazily from here to keys_end. */
	const char *keys;
	const char *keys_end;
	uint32_t flags;
	int64_t exptime;
	uint64_t cas;
	uint64_t delta;
	int64_t num;        /* flush_all delay, verbosity level */
	const char *data;   /* set family, ms: the value, data_len bytes */
	size_t data_len;
	struct larder__meta meta;
	/* CMD_METADUMP: the dump's cursor (a larder_iter) while it is suspended;
	 * the executor owns it, larder__exec_abandon() frees it. */
	void *dump;
};

struct larder__limits {
	size_t item_max; /* the largest value accepted (-I) */
};

/*
 * Parses one request from buf[0..len). Never reads outside it, never writes
 * to it. Returns a larder__parse_result; on DONE, *req describes the request.
 */
int larder__parse(const char *buf, size_t len, const struct larder__limits *lim,
		  struct larder__req *req);

/*
 * Next space-separated token at or after *cursor, below end. Returns false
 * when there is none. Used to walk multiget keys.
 */
bool larder__next_token(const char **cursor, const char *end, struct larder__tok *tok);

/* Numbers as memcached's safe_strto*: the whole token, decimal. */
bool larder__parse_u64(const struct larder__tok *t, uint64_t *out);
bool larder__parse_i64(const struct larder__tok *t, int64_t *out);

/* Meta flag letter to index 0..51, or -1. */
int larder__meta_index(char c);

#endif
