/*
 * test_parse.c - unit tests of the larderd request parser (server/proto).
 *
 * Asserts the invariants of parse.h:
 *   PARSE-P1 a DONE request consumes > 0 bytes and no more than it was given;
 *   PARSE-P2 every request gives the same result when fed split at any byte
 *      boundary (every prefix shorter than the request is PARSE_MORE, and a
 *      MORE's `need` never asks for less than it was given);
 *   PARSE-P3 a line without newline is refused past its limit;
 *   PARSE-P4 an oversize value is answered and swallowed, not buffered.
 * It also checks every command, the replies to malformed lines, memcached's
 * number reading, line and token rules, and a seeded random-junk pass (seed
 * printed; argv[1] overrides). tests/protocol/difftest.py compares the
 * whole server with memcached; these are the parser's own rules.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "parse.h"
#include "reply.h"

static const struct larderd_limits k_lim = {.item_max = 1024 * 1024};

struct expect {
	const char *in;       /* one request (maybe followed by more bytes) */
	int result;           /* PARSE_DONE or PARSE_CLOSE */
	enum larderd_cmd cmd;
	const char *key;      /* NULL: not checked */
	const char *reply;    /* for CMD_REPLY */
	const char *data;     /* NULL: not checked */
	size_t consumed;      /* 0: strlen(in) */
	int noreply;
	size_t swallow;
};

static const struct expect k_cases[] = {
	{"get foo\r\n", 1, LARDERD_CMD_GET, NULL, NULL, NULL, 0, 0, 0},
	{"gets a b c\r\n", 1, LARDERD_CMD_GETS, NULL, NULL, NULL, 0, 0, 0},
	{"gat 100 a b\r\n", 1, LARDERD_CMD_GAT, NULL, NULL, NULL, 0, 0, 0},
	{"gats -1 a\r\n", 1, LARDERD_CMD_GATS, NULL, NULL, NULL, 0, 0, 0},
	{"gat x a\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid exptime argument", NULL, 0, 0, 0},
	{"get\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"set k 5 10 3\r\nabc\r\n", 1, LARDERD_CMD_SET, "k", NULL, "abc", 0, 0, 0},
	{"set k 5 10 3 noreply\r\nabc\r\n", 1, LARDERD_CMD_SET, "k", NULL, "abc", 0, 1, 0},
	{"set k 0 0 0\r\n\r\n", 1, LARDERD_CMD_SET, "k", NULL, "", 0, 0, 0},
	{"add k 0 0 1\r\nx\r\n", 1, LARDERD_CMD_ADD, "k", NULL, "x", 0, 0, 0},
	{"replace k 0 0 1\r\nx\r\n", 1, LARDERD_CMD_REPLACE, "k", NULL, "x", 0, 0, 0},
	{"append k 0 0 1\r\nx\r\n", 1, LARDERD_CMD_APPEND, "k", NULL, "x", 0, 0, 0},
	{"prepend k 0 0 1\r\nx\r\n", 1, LARDERD_CMD_PREPEND, "k", NULL, "x", 0, 0, 0},
	{"cas k 0 0 1 77\r\nx\r\n", 1, LARDERD_CMD_CAS, "k", NULL, "x", 0, 0, 0},
	{"cas k 0 0 1\r\nx\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 13, 0, 0},
	{"set k 0 0 1\r\nxx\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad data chunk", NULL, 16, 0, 0},
	{"set k 0 0 -1\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad command line format", NULL, 0, 0, 0},
	{"set k x 0 1\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad command line format", NULL, 0, 0, 0},
	{"set k 0 0\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"set k 0 0 2000000\r\n", 1, LARDERD_CMD_SET, "k", NULL, NULL, 0, 0, 2000002},
	{"set k 0 0 4294967299\r\nabc\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad command line format", NULL, 22, 0, 0},
	{"set k 4294967296 2147483648 1\r\nx\r\n", 1, LARDERD_CMD_SET, "k", NULL, "x", 0, 0, 0},
	{"set k \t5 +0 1\r\nx\r\n", 1, LARDERD_CMD_SET, "k", NULL, "x", 0, 0, 0},
	{"set k -1 0 1\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad command line format", NULL, 0, 0, 0},
	{"delete k\r\n", 1, LARDERD_CMD_DELETE, "k", NULL, NULL, 0, 0, 0},
	{"delete k 0\r\n", 1, LARDERD_CMD_DELETE, "k", NULL, NULL, 0, 0, 0},
	{"delete k noreply\r\n", 1, LARDERD_CMD_DELETE, "k", NULL, NULL, 0, 1, 0},
	{"delete k 5\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]", NULL, 0, 0, 0},
	{"delete k 10 noreply\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad command line format.  Usage: delete <key> [noreply]", NULL, 0, 1, 0},
	{"incr k 5\r\n", 1, LARDERD_CMD_INCR, "k", NULL, NULL, 0, 0, 0},
	{"decr k 5 noreply\r\n", 1, LARDERD_CMD_DECR, "k", NULL, NULL, 0, 1, 0},
	{"incr k -1\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid numeric delta argument", NULL, 0, 0, 0},
	{"incr k 18446744073709551616\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid numeric delta argument", NULL, 0, 0, 0},
	{"touch k 10\r\n", 1, LARDERD_CMD_TOUCH, "k", NULL, NULL, 0, 0, 0},
	{"touch k\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"touch k x\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid exptime argument", NULL, 0, 0, 0},
	{"flush_all\r\n", 1, LARDERD_CMD_FLUSH_ALL, NULL, NULL, NULL, 0, 0, 0},
	{"flush_all 10 noreply\r\n", 1, LARDERD_CMD_FLUSH_ALL, NULL, NULL, NULL, 0, 1, 0},
	{"flush_all abc\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid exptime argument", NULL, 0, 0, 0},
	{"version\r\n", 1, LARDERD_CMD_VERSION, NULL, NULL, NULL, 0, 0, 0},
	{"verbosity 1\r\n", 1, LARDERD_CMD_VERBOSITY, NULL, NULL, NULL, 0, 0, 0},
	{"verbosity\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"verbosity -1\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad command line format", NULL, 0, 0, 0},
	{"verbosity -0\r\n", 1, LARDERD_CMD_VERBOSITY, NULL, NULL, NULL, 0, 0, 0},
	{"touch k 2147483648\r\n", 1, LARDERD_CMD_TOUCH, "k", NULL, NULL, 0, 0, 0},
	{"incr k \t7\r\n", 1, LARDERD_CMD_INCR, "k", NULL, NULL, 0, 0, 0},
	{"incr k 7x\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid numeric delta argument", NULL, 0, 0, 0},
	{"mget a b\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"bget a b\r\n", 1, LARDERD_CMD_GET, NULL, NULL, NULL, 0, 0, 0},
	{"shutdown\r\n", 1, LARDERD_CMD_SHUTDOWN, NULL, NULL, NULL, 0, 0, 0},
	{"shutdown graceful\r\n", 1, LARDERD_CMD_SHUTDOWN, NULL, NULL, NULL, 0, 0, 0},
	{"cache_memlimit 100\r\n", 1, LARDERD_CMD_MEMLIMIT, NULL, NULL, NULL, 0, 0, 0},
	{"GET / HTTP/1.0\r\n", 2, LARDERD_CMD_REPLY, NULL, NULL, NULL, 0, 0, 0},
	{"sET / HTTP/1.0\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"quit\r\n", 1, LARDERD_CMD_QUIT, NULL, NULL, NULL, 0, 0, 0},
	{"stats\r\n", 1, LARDERD_CMD_STATS, NULL, NULL, NULL, 0, 0, 0},
	{"stats settings\n", 1, LARDERD_CMD_STATS, NULL, NULL, NULL, 0, 0, 0},
	{"mn\r\n", 1, LARDERD_CMD_MN, NULL, NULL, NULL, 0, 0, 0},
	{"mg k v f c t k O123\r\n", 1, LARDERD_CMD_MG, "k", NULL, NULL, 0, 0, 0},
	{"mg k v q\r\n", 1, LARDERD_CMD_MG, "k", NULL, NULL, 0, 1, 0},
	{"mg k v v\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR duplicate flag", NULL, 0, 0, 0},
	{"mg k Z\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid flag", NULL, 0, 0, 0},
	{"mg k \xff\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR duplicate flag", NULL, 0, 0, 0},
	{"mg k T\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad token in command line format", NULL, 0, 0, 0},
	{"mg !!! b T\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad token in command line format", NULL, 0, 0, 0},
	{"mg k a b c d e f g h i j k l m n o p q r s\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR options flags are too long", NULL, 0, 0, 0},
	{"md k x\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid or duplicate flag", NULL, 0, 0, 0},
	{"ma k Mx\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid mode for ma M token", NULL, 0, 0, 0},
	{"ms k 2 Ms\r\nhi\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid mode for ms M token", NULL, 11, 0, 4},
	{"ms k 2000000 T0\r\n", 1, LARDERD_CMD_MS, "k", NULL, NULL, 0, 0, 2000002},
	{"mg\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"ms k 2 T0 F5\r\nhi\r\n", 1, LARDERD_CMD_MS, "k", NULL, "hi", 0, 0, 0},
	{"ms k 2 Zz\r\nhi\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR invalid flag", NULL, 11, 0, 4},
	{"ms k x\r\n", 1, LARDERD_CMD_REPLY, NULL, "CLIENT_ERROR bad command line format", NULL, 0, 0, 0},
	{"md k q\r\n", 1, LARDERD_CMD_MD, "k", NULL, NULL, 0, 1, 0},
	{"ma k N0 J7 v\r\n", 1, LARDERD_CMD_MA, "k", NULL, NULL, 0, 0, 0},
	{"me k\r\n", 1, LARDERD_CMD_ME, "k", NULL, NULL, 0, 0, 0},
	{"mz k\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"x\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"SET k 0 0 1\r\n", 1, LARDERD_CMD_REPLY, NULL, "ERROR", NULL, 0, 0, 0},
	{"  set   k  0 0 1 \nx\r\n", 1, LARDERD_CMD_SET, "k", NULL, "x", 0, 0, 0},
	{"get k\n", 1, LARDERD_CMD_GET, NULL, NULL, NULL, 0, 0, 0},
};

static void check_one(const struct expect *e, const char *in, size_t len)
{
	struct larderd_req r;
	size_t want = e->consumed ? e->consumed : strlen(e->in);
	int rc = larderd_parse(in, len, &k_lim, &r);

	CHECK(rc == e->result, "[%s] result %d", e->in, rc);
	if (rc != LARDERD_PARSE_DONE)
		return;
	CHECK(r.consumed == want && r.consumed > 0 && r.consumed <= len,
	      "[%s] consumed %zu want %zu", e->in, r.consumed, want);
	CHECK(r.cmd == e->cmd, "[%s] cmd %d want %d", e->in, r.cmd, e->cmd);
	if (e->key)
		CHECK(r.key.n == strlen(e->key) && memcmp(r.key.p, e->key, r.key.n) == 0,
		      "[%s] key", e->in);
	if (e->reply)
		CHECK(r.reply && strcmp(r.reply, e->reply) == 0, "[%s] reply %s", e->in,
		      r.reply ? r.reply : "(null)");
	if (e->data)
		CHECK(r.data_len == strlen(e->data) && memcmp(r.data, e->data, r.data_len) == 0,
		      "[%s] data", e->in);
	CHECK((int)r.noreply == e->noreply, "[%s] noreply %d", e->in, r.noreply);
	CHECK(r.swallow == e->swallow, "[%s] swallow %zu", e->in, r.swallow);
}

/* PARSE-P2: every prefix shorter than the request is MORE; every longer one gives the same. */
static void check_splits(const struct expect *e)
{
	size_t len = strlen(e->in), want = e->consumed ? e->consumed : len;
	char *buf = malloc(len + 16);

	for (size_t k = 0; k < want; k++) {
		struct larderd_req r;
		memcpy(buf, e->in, k);
		int rc = larderd_parse(buf, k, &k_lim, &r);
		CHECK(rc == LARDERD_PARSE_MORE, "[%s] prefix %zu gave %d", e->in, k, rc);
		CHECK(r.need == 0 || r.need > k, "[%s] prefix %zu need %zu", e->in, k, r.need);
	}
	/* followed by another request: the first parse must not look past its end */
	memcpy(buf, e->in, len);
	memcpy(buf + len, "get zz\r\n", 8);
	check_one(e, buf, len + 8);
	free(buf);
}

static void test_table(void)
{
	for (size_t i = 0; i < sizeof(k_cases) / sizeof(k_cases[0]); i++) {
		const struct expect *e = &k_cases[i];
		if (e->consumed == 0)
			check_one(e, e->in, strlen(e->in));
		check_splits(e);
	}
}

static void test_get_keys(void)
{
	struct larderd_req r;
	const char *in = "gets  a bb  ccc\r\n";
	const char *names[] = {"a", "bb", "ccc"};
	struct larderd_tok t;
	int n = 0;

	CHECK(larderd_parse(in, strlen(in), &k_lim, &r) == LARDERD_PARSE_DONE, "gets");
	while (larderd_next_token(&r.keys, r.keys_end, &t)) {
		CHECK(n < 3 && t.n == strlen(names[n]) && memcmp(t.p, names[n], t.n) == 0, "key %d", n);
		n++;
	}
	CHECK(n == 3, "got %d keys", n);
}

/* -F: flush_all is refused by the server whatever its exptime, so the parser reads none. */
static void test_flush_disabled(void)
{
	static const struct larderd_limits no_flush = {.item_max = 1024 * 1024,
						       .flush_disabled = true};
	struct larderd_req r;
	const char *in = "flush_all abc noreply\r\n";

	CHECK(larderd_parse(in, strlen(in), &no_flush, &r) == LARDERD_PARSE_DONE &&
		      r.cmd == LARDERD_CMD_FLUSH_ALL && r.noreply,
	      "-F: a bad exptime is not reported");
}

static void test_limits(void)
{
	struct larderd_req r;
	size_t big = LARDERD_GET_LINE_MAX + 10;
	char *buf = malloc(big);
	char key[300];

	/* PARSE-P3: a non-get line without a newline is closed past 2 KiB */
	memset(buf, 'a', big);
	memcpy(buf, "set ", 4);
	CHECK(larderd_parse(buf, 2048, &k_lim, &r) == LARDERD_PARSE_MORE, "2048 is fine");
	CHECK(larderd_parse(buf, 2049, &k_lim, &r) == LARDERD_PARSE_CLOSE, "2049 set closes");
	memcpy(buf, "get ", 4);
	CHECK(larderd_parse(buf, 60000, &k_lim, &r) == LARDERD_PARSE_MORE, "long get waits");
	CHECK(larderd_parse(buf, big, &k_lim, &r) == LARDERD_PARSE_CLOSE, "huge get closes");
	memset(buf, 0, 3000);
	CHECK(larderd_parse(buf, 3000, &k_lim, &r) == LARDERD_PARSE_CLOSE, "binary junk closes");
	/* the server's shortcut for bytes it already searched decides the same */
	memcpy(buf, "set ", 4);
	CHECK(larderd_parse_no_newline(buf, 2048) == LARDERD_PARSE_MORE &&
		      larderd_parse_no_newline(buf, 2049) == LARDERD_PARSE_CLOSE,
	      "no_newline: set at 2048 and 2049");
	memset(buf, 'a', big);
	memcpy(buf, "get ", 4);
	CHECK(larderd_parse_no_newline(buf, 60000) == LARDERD_PARSE_MORE &&
		      larderd_parse_no_newline(buf, big) == LARDERD_PARSE_CLOSE,
	      "no_newline: long get waits, huge get closes");
	CHECK(larderd_parse(buf, 60000, &k_lim, &r) == LARDERD_PARSE_MORE && r.need == 0,
	      "a line without newline needs 0 (a newline)");

	/* key length: 250 is accepted, 251 refused */
	memset(key, 'k', sizeof(key));
	snprintf(buf, big, "get %.250s\r\n", key);
	CHECK(larderd_parse(buf, strlen(buf), &k_lim, &r) == LARDERD_PARSE_DONE &&
	      r.cmd == LARDERD_CMD_GET, "250-byte key");
	snprintf(buf, big, "get a %.251s b\r\n", key);
	CHECK(larderd_parse(buf, strlen(buf), &k_lim, &r) == LARDERD_PARSE_DONE &&
	      r.cmd == LARDERD_CMD_GET && r.bad_key == buf + 6 && r.keys_end == buf + 6,
	      "251-byte key: the keys before it, then the error");
	snprintf(buf, big, "set %.251s 0 0 1\r\nx\r\n", key);
	CHECK(larderd_parse(buf, strlen(buf), &k_lim, &r) == LARDERD_PARSE_DONE &&
	      r.cmd == LARDERD_CMD_REPLY && r.consumed == 4 + 251 + 6 + 2, "set 251-byte key");
	/* PARSE-P4: a value at memcached's limit (item_max less its 59-byte item
	 * overhead, the key, and 4 bytes for non-zero flags) needs its bytes;
	 * one over is refused and swallowed */
	snprintf(buf, big, "set k 0 0 %zu\r\n", k_lim.item_max - 60);
	CHECK(larderd_parse(buf, strlen(buf), &k_lim, &r) == LARDERD_PARSE_MORE &&
	      r.need == strlen(buf) + k_lim.item_max - 60 + 2, "the largest value needs its bytes");
	snprintf(buf, big, "set k 0 0 %zu\r\n", k_lim.item_max - 59);
	CHECK(larderd_parse(buf, strlen(buf), &k_lim, &r) == LARDERD_PARSE_DONE && r.too_large &&
	      r.swallow == k_lim.item_max - 57, "one byte more is swallowed");
	snprintf(buf, big, "set k 1 0 %zu\r\n", k_lim.item_max - 63);
	CHECK(larderd_parse(buf, strlen(buf), &k_lim, &r) == LARDERD_PARSE_DONE && r.too_large,
	      "flags take 4 bytes of the item");
	snprintf(buf, big, "set k 0 0 99999999999\r\n");
	CHECK(larderd_parse(buf, strlen(buf), &k_lim, &r) == LARDERD_PARSE_DONE &&
	      r.cmd == LARDERD_CMD_REPLY && r.swallow == 0, "absurd length refused");
	free(buf);
}

/* A line ends at its first NUL, as memcached reads it as a C string. */
static void test_nul(void)
{
	static const char in[] = "get a\0 b\r\nset k 0 0 1\0x\r\ny\r\n";
	struct larderd_req r;
	struct larderd_tok t;
	int n = 0;

	CHECK(larderd_parse(in, sizeof(in) - 1, &k_lim, &r) == LARDERD_PARSE_DONE &&
	      r.cmd == LARDERD_CMD_GET && r.consumed == 10, "get cut at NUL");
	while (larderd_next_token(&r.keys, r.keys_end, &t))
		n++;
	CHECK(n == 1, "one key before the NUL, %d", n);
	CHECK(larderd_parse(in + 10, sizeof(in) - 11, &k_lim, &r) == LARDERD_PARSE_DONE &&
	      r.cmd == LARDERD_CMD_SET && r.data_len == 1 && r.data[0] == 'y', "set cut at NUL");
	CHECK(larderd_parse("\0get a\r\n", 9, &k_lim, &r) == LARDERD_PARSE_DONE &&
	      r.cmd == LARDERD_CMD_REPLY && strcmp(r.reply, "ERROR") == 0, "empty before NUL");
}

/* memcached's safe_strto*() rules, which clients can see. */
static void test_numbers(void)
{
	struct larderd_tok t;
	int32_t i;
	uint32_t u;
	uint64_t ull;
#define TOK(s) (t.p = (s), t.n = strlen(s), &t)
	CHECK(larderd_strtol32(TOK("4294967299"), &i) && i == 3, "strtol wraps to 32 bits");
	CHECK(larderd_strtol32(TOK("2147483648"), &i) && i == INT32_MIN, "2^31 wraps negative");
	CHECK(larderd_strtol32(TOK("\t-5"), &i) && i == -5, "leading white space");
	CHECK(larderd_strtol32(TOK("5\v"), &i) && i == 5, "trailing white space");
	CHECK(!larderd_strtol32(TOK("5x"), &i), "trailing junk");
	CHECK(!larderd_strtol32(TOK("9223372036854775808"), &i), "beyond long: ERANGE");
	CHECK(!larderd_strtol32(TOK(""), &i) && !larderd_strtol32(TOK("-"), &i), "no digits");
	CHECK(larderd_strtoul32(TOK("4294967296"), &u) && u == 0, "strtoul wraps to 32 bits");
	CHECK(!larderd_strtoul32(TOK("-1"), &u), "negative refused");
	CHECK(larderd_strtoul32(TOK("-0"), &u) && u == 0, "minus zero");
	CHECK(larderd_strtoull(TOK("-18446744073709551615"), &ull) && ull == 1,
	      "a negative that wraps positive is accepted, as strtoull does");
	CHECK(!larderd_strtoull(TOK("18446744073709551616"), &ull), "2^64: ERANGE");
	CHECK(larderd_strtoull(TOK("+18446744073709551615"), &ull) && ull == UINT64_MAX, "max");
#undef TOK
}

static void test_pipeline(void)
{
	const char *in = "set a 0 0 1\r\n1\r\nget a\r\nbogus\r\ndelete a noreply\r\nmn\r\n";
	enum larderd_cmd want[] = {LARDERD_CMD_SET, LARDERD_CMD_GET, LARDERD_CMD_REPLY,
				   LARDERD_CMD_DELETE, LARDERD_CMD_MN};
	size_t off = 0, len = strlen(in);
	int i = 0;

	while (off < len) {
		struct larderd_req r;
		CHECK(larderd_parse(in + off, len - off, &k_lim, &r) == LARDERD_PARSE_DONE, "step %d", i);
		CHECK(i < 5 && r.cmd == want[i], "step %d cmd %d", i, r.cmd);
		off += r.consumed;
		i++;
	}
	CHECK(i == 5 && off == len, "pipeline %d %zu", i, off);
}

/* PARSE-P1 on random bytes biased toward protocol tokens. */
static void test_junk(unsigned seed)
{
	static const char *frag[] = {"get ", "set ", "ms ", "mg ", " ", "\r\n", "\n", "0 ", "1 ",
				     "-1 ", "99999999999 ", "k", "noreply", "v ", "q ", "cas ", "\0"};
	char buf[512];

	srand(seed);
	for (int it = 0; it < 200000; it++) {
		size_t len = 0;
		while (len < sizeof(buf) - 16 && rand() % 12) {
			if (rand() % 2) {
				const char *f = frag[rand() % (sizeof(frag) / sizeof(frag[0]))];
				size_t n = strlen(f);
				memcpy(buf + len, f, n);
				len += n;
			} else {
				buf[len++] = (char)(rand() % 256);
			}
		}
		struct larderd_req r;
		int rc = larderd_parse(buf, len, &k_lim, &r);
		if (rc == LARDERD_PARSE_DONE)
			CHECK(r.consumed > 0 && r.consumed <= len, "junk consumed %zu of %zu", r.consumed, len);
		else if (rc == LARDERD_PARSE_MORE)
			CHECK(r.need == 0 || r.need > len, "junk need %zu len %zu", r.need, len);
	}
}

/* The reply writer's codecs: RFC 4648 base64 vectors and decimal formatting. */
static void test_reply_codecs(void)
{
	static const char *plain[] = {"", "f", "fo", "foo", "foob", "fooba", "foobar"};
	static const char *b64[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
	unsigned char dec[16];
	char enc[16], num[24];
	struct larderd_obuf o = {0};

	for (int i = 1; i < 7; i++) {
		size_t n = larderd_b64_encode((const unsigned char *)plain[i], strlen(plain[i]), enc);
		CHECK(n == strlen(b64[i]) && memcmp(enc, b64[i], n) == 0, "encode %s", plain[i]);
		long m = larderd_b64_decode(b64[i], strlen(b64[i]), dec, sizeof(dec));
		CHECK(m == (long)strlen(plain[i]) && memcmp(dec, plain[i], (size_t)m) == 0,
		      "decode %s", b64[i]);
	}
	CHECK(larderd_b64_decode("Zm9", 3, dec, sizeof(dec)) < 0, "short base64 refused");
	CHECK(larderd_b64_decode("Z!9v", 4, dec, sizeof(dec)) < 0, "three digits refused");
	CHECK(larderd_b64_decode("Z*m9v", 5, dec, sizeof(dec)) == 3 && memcmp(dec, "foo", 3) == 0,
	      "bytes outside the alphabet skipped, as memcached does");
	CHECK(larderd_b64_decode("====", 4, dec, sizeof(dec)) < 0, "all padding refused");
	CHECK(larderd_b64_decode("Zg==Zg==", 8, dec, sizeof(dec)) == 1, "stops after padding");
	CHECK(larderd_b64_decode("Zm9vYmFy", 8, dec, 5) < 0, "base64 overflow refused");
	CHECK(larderd_fmt_u64(num, 0) == 1 && num[0] == '0', "fmt 0");
	num[larderd_fmt_u64(num, UINT64_MAX)] = '\0';
	CHECK(strcmp(num, "18446744073709551615") == 0, "fmt max %s", num);
	for (int i = 0; i < 10000; i++)
		larderd_obuf_str(&o, "0123456789");
	CHECK(!o.failed && o.len == 100000 && memcmp(o.buf + 99990, "0123456789", 10) == 0, "obuf grows");
	larderd_obuf_consume(&o, 99995);
	CHECK(o.len == 5 && memcmp(o.buf, "56789", 5) == 0, "obuf consume");
	larderd_obuf_free(&o);
}

int main(int argc, char **argv)
{
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 12345u;

	printf("test_parse seed %u\n", seed);
	test_table();
	test_get_keys();
	test_limits();
	test_flush_disabled();
	test_numbers();
	test_nul();
	test_pipeline();
	test_junk(seed);
	test_reply_codecs();
	if (failures) {
		printf("FAILED: %d checks\n", failures);
		return 1;
	}
	printf("all parser checks passed\n");
	return 0;
}
