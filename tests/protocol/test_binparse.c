/*
 * test_binparse.c - unit tests of the larderd binary protocol parser
 * (server/proto/binparse.c).
 *
 * Asserts the invariants of binparse.h:
 *   BINPARSE-B1 a DONE request consumes >= 24 bytes and no more than it was
 *      given; a MORE asks for more than it was given;
 *   BINPARSE-B2 every request gives the same result when fed split at any
 *      byte boundary;
 *   BINPARSE-B3 an oversize value is refused from its header (swallow), not
 *      buffered.
 * It also checks each opcode's length rules and the refusal each mistake
 * gets (memcached 1.6.18's dispatch_bin_command), the quiet mapping, the
 * extras decoding, the response header, and a seeded random-junk pass (seed
 * printed; argv[1] overrides). tests/protocol/difftest.py compares the
 * server's binary replies with memcached's byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "binparse.h"
#include "check.h"

static const struct larderd_limits k_lim = {.item_max = 1024 * 1024};

/* A request: header fields, then extras, key and value bytes. */
static size_t frame(unsigned char *out, uint8_t magic, uint8_t op, const void *ext, uint8_t extlen,
		    const char *key, uint16_t keylen, const void *val, uint32_t vlen, uint64_t cas)
{
	uint32_t body = (uint32_t)extlen + keylen + vlen;

	memset(out, 0, 24);
	out[0] = magic;
	out[1] = op;
	out[2] = (unsigned char)(keylen >> 8);
	out[3] = (unsigned char)keylen;
	out[4] = extlen;
	for (int i = 0; i < 4; i++)
		out[8 + i] = (unsigned char)(body >> (24 - 8 * i));
	memcpy(out + 12, "\x01\x02\x03\x04", 4);
	for (int i = 0; i < 8; i++)
		out[16 + i] = (unsigned char)(cas >> (56 - 8 * i));
	if (extlen)
		memcpy(out + 24, ext, extlen);
	if (keylen)
		memcpy(out + 24 + extlen, key, keylen);
	if (vlen)
		memcpy(out + 24 + extlen + keylen, val, vlen);
	return 24 + body;
}

static void set_body_len(unsigned char *f, uint32_t body)
{
	for (int i = 0; i < 4; i++)
		f[8 + i] = (unsigned char)(body >> (24 - 8 * i));
}

/* BINPARSE-B1, BINPARSE-B2: every prefix is MORE with a need past it, the whole is `want`. */
static void check_splits(const char *name, const unsigned char *f, size_t n, int want,
			 const struct larderd_binreq *whole)
{
	struct larderd_binreq r;

	for (size_t cut = 0; cut < n; cut++) {
		int rc = larderd_binparse(f, cut, &k_lim, &r);
		if (rc != LARDERD_PARSE_MORE) {
			/* only a request decided before its value is DONE early */
			CHECK(rc == want && r.consumed == whole->consumed && r.consumed <= cut &&
				      r.swallow == whole->swallow && r.error == whole->error,
			      "[%s] cut %zu: %d", name, cut, rc);
			continue;
		}
		CHECK(r.need > cut, "[%s] cut %zu: need %zu", name, cut, r.need);
	}
	if (want == LARDERD_PARSE_DONE)
		CHECK(whole->consumed >= 24 && whole->consumed <= n, "[%s] consumed %zu of %zu", name,
		      whole->consumed, n);
}

static struct larderd_binreq parse_all(const char *name, const unsigned char *f, size_t n, int want)
{
	struct larderd_binreq r;
	int rc = larderd_binparse(f, n, &k_lim, &r);

	CHECK(rc == want, "[%s] result %d, want %d", name, rc, want);
	check_splits(name, f, n, want, &r);
	return r;
}

static void test_commands(void)
{
	unsigned char f[4096];
	unsigned char ext[20] = {0, 0, 0, 5, 0, 0, 0x0e, 0x10}; /* flags 5, exptime 3600 */
	struct larderd_binreq r;
	size_t n;

	n = frame(f, 0x80, LARDERD_BIN_GET, NULL, 0, "foo", 3, NULL, 0, 0);
	r = parse_all("get", f, n, LARDERD_PARSE_DONE);
	CHECK(r.cmd == LARDERD_BIN_GET && !r.quiet && r.error == 0 && r.keylen == 3 &&
		      memcmp(r.key, "foo", 3) == 0 && r.consumed == n,
	      "get: cmd %d err %d", r.cmd, r.error);
	CHECK(memcmp(r.opaque, "\x01\x02\x03\x04", 4) == 0, "opaque");

	n = frame(f, 0x80, LARDERD_BIN_GETKQ, NULL, 0, "k", 1, NULL, 0, 0);
	r = parse_all("getkq", f, n, LARDERD_PARSE_DONE);
	CHECK(r.cmd == LARDERD_BIN_GETK && r.quiet && r.opcode == LARDERD_BIN_GETKQ, "getkq");

	n = frame(f, 0x80, LARDERD_BIN_SETQ, ext, 8, "key", 3, "value", 5, 77);
	r = parse_all("setq", f, n, LARDERD_PARSE_DONE);
	CHECK(r.cmd == LARDERD_BIN_SET && r.quiet && r.flags == 5 && r.exptime == 3600 &&
		      r.cas == 77 && r.vlen == 5 && memcmp(r.value, "value", 5) == 0 &&
		      r.consumed == n,
	      "setq: flags %u exp %u cas %llu vlen %zu", r.flags, r.exptime,
	      (unsigned long long)r.cas, r.vlen);

	n = frame(f, 0x80, LARDERD_BIN_APPEND, NULL, 0, "key", 3, "xy", 2, 0);
	r = parse_all("append", f, n, LARDERD_PARSE_DONE);
	CHECK(r.cmd == LARDERD_BIN_APPEND && r.vlen == 2 && memcmp(r.value, "xy", 2) == 0, "append");

	{
		unsigned char inc[20] = {0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 0, 0, 0, 1, 0,
					 0xff, 0xff, 0xff, 0xff};
		n = frame(f, 0x80, LARDERD_BIN_DECREMENTQ, inc, 20, "n", 1, NULL, 0, 0);
		r = parse_all("decrq", f, n, LARDERD_PARSE_DONE);
		CHECK(r.cmd == LARDERD_BIN_DECREMENT && r.quiet && r.delta == 9 && r.initial == 256 &&
			      r.exptime == 0xffffffffu,
		      "decrq: delta %llu initial %llu", (unsigned long long)r.delta,
		      (unsigned long long)r.initial);
	}

	n = frame(f, 0x80, LARDERD_BIN_FLUSH, "\x00\x00\x00\x0a", 4, NULL, 0, NULL, 0, 0);
	r = parse_all("flush 10", f, n, LARDERD_PARSE_DONE);
	CHECK(r.cmd == LARDERD_BIN_FLUSH && r.exptime == 10 && r.error == 0, "flush");

	n = frame(f, 0x80, LARDERD_BIN_GATKQ, "\x00\x00\x00\x20", 4, "k", 1, NULL, 0, 0);
	r = parse_all("gatkq", f, n, LARDERD_PARSE_DONE);
	CHECK(r.cmd == LARDERD_BIN_GATK && r.quiet && r.exptime == 32, "gatkq");

	n = frame(f, 0x80, LARDERD_BIN_STAT, NULL, 0, "settings", 8, NULL, 0, 0);
	r = parse_all("stat", f, n, LARDERD_PARSE_DONE);
	CHECK(r.cmd == LARDERD_BIN_STAT && r.error == 0, "stat");

	n = frame(f, 0x80, LARDERD_BIN_NOOP, NULL, 0, NULL, 0, NULL, 0, 0);
	r = parse_all("noop", f, n, LARDERD_PARSE_DONE);
	CHECK(r.cmd == LARDERD_BIN_NOOP && r.consumed == 24, "noop");

	/* a touch's body past its key is read as the next request, as memcached does */
	n = frame(f, 0x80, LARDERD_BIN_TOUCH, "\x00\x00\x00\x01", 4, "k", 1, "zz", 2, 0);
	r = parse_all("touch with a value", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == 0 && r.consumed == 29, "touch consumed %zu", r.consumed);
}

static void test_refusals(void)
{
	unsigned char f[70000], key[300];
	struct larderd_binreq r;
	size_t n;

	memset(key, 'k', sizeof(key));
	n = frame(f, 0x81, LARDERD_BIN_GET, NULL, 0, "k", 1, NULL, 0, 0);
	r = parse_all("bad magic", f, n, LARDERD_PARSE_CLOSE);

	n = frame(f, 0x80, LARDERD_BIN_GET, NULL, 0, "abc", 3, NULL, 0, 0);
	set_body_len(f, 2);
	r = parse_all("key longer than body", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_UNKNOWN_COMMAND && r.close_after, "err %d", r.error);

	n = frame(f, 0x80, LARDERD_BIN_GET, NULL, 0, (const char *)key, 251, NULL, 0, 0);
	r = parse_all("key 251", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_EINVAL && r.close_after, "err %d", r.error);
	n = frame(f, 0x80, LARDERD_BIN_GET, NULL, 0, (const char *)key, 250, NULL, 0, 0);
	r = parse_all("key 250", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == 0, "err %d", r.error);

	n = frame(f, 0x80, LARDERD_BIN_VERSION, NULL, 0, "k", 1, NULL, 0, 0);
	r = parse_all("version with key", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_EINVAL && r.close_after, "err %d", r.error);

	n = frame(f, 0x80, LARDERD_BIN_SET, "\0\0\0\0", 4, "k", 1, "v", 1, 0);
	r = parse_all("set with 4 bytes of extras", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_EINVAL && r.close_after, "err %d", r.error);

	n = frame(f, 0x80, LARDERD_BIN_INCREMENT, "\0\0\0\0\0\0\0\0", 8, "k", 1, NULL, 0, 0);
	r = parse_all("incr with 8 bytes of extras", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_EINVAL, "err %d", r.error);

	n = frame(f, 0x80, LARDERD_BIN_DELETE, NULL, 0, "k", 1, "v", 1, 0);
	r = parse_all("delete with a value", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_EINVAL, "err %d", r.error);

	n = frame(f, 0x80, LARDERD_BIN_FLUSH, "\0\0", 2, NULL, 0, NULL, 0, 0);
	r = parse_all("flush with 2 bytes of extras", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_EINVAL, "err %d", r.error);

	/* unknown: the body after the extras and key is discarded */
	n = frame(f, 0x80, 0x45, "\0\0", 2, "ab", 2, "value", 5, 0);
	r = parse_all("unknown opcode", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_UNKNOWN_COMMAND && !r.close_after && r.consumed == 28 &&
		      r.swallow == 5,
	      "err %d consumed %zu swallow %zu", r.error, r.consumed, r.swallow);

	n = frame(f, 0x80, LARDERD_BIN_SASL_AUTH, NULL, 0, "PLAIN", 5, "\0u\0p", 4, 0);
	r = parse_all("sasl auth", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_UNKNOWN_COMMAND && !r.close_after && r.swallow == 4,
	      "err %d swallow %zu", r.error, r.swallow);
	n = frame(f, 0x80, LARDERD_BIN_SASL_LIST_MECHS, NULL, 0, NULL, 0, NULL, 0, 0);
	r = parse_all("sasl list", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == LARDERD_BIN_UNKNOWN_COMMAND && r.swallow == 0, "err %d", r.error);

	/* BINPARSE-B3: a value over the limit is refused from its header alone */
	n = frame(f, 0x80, LARDERD_BIN_SET, "\0\0\0\0\0\0\0\0", 8, "k", 1, NULL, 0, 0);
	set_body_len(f, 9 + 2000000);
	r = parse_all("set 2 MB", f, n, LARDERD_PARSE_DONE);
	CHECK(r.error == 0 && r.too_large && r.swallow == 2000000 && r.consumed == n &&
		      r.value == NULL,
	      "too_large %d swallow %zu", r.too_large, r.swallow);
	{
		/* the limit as memcached's item_size_ok: 59 + key + 4 with flags */
		size_t max0 = 1024 * 1024 - 59 - 1;
		n = frame(f, 0x80, LARDERD_BIN_SET, "\0\0\0\0\0\0\0\0", 8, "k", 1, NULL, 0, 0);
		set_body_len(f, (uint32_t)(9 + max0));
		CHECK(larderd_binparse(f, n, &k_lim, &r) == LARDERD_PARSE_MORE &&
			      r.need == 33 + max0,
		      "largest value: need %zu", r.need);
		n = frame(f, 0x80, LARDERD_BIN_SET, "\0\0\0\1\0\0\0\0", 8, "k", 1, NULL, 0, 0);
		set_body_len(f, (uint32_t)(9 + max0));
		CHECK(larderd_binparse(f, n, &k_lim, &r) == LARDERD_PARSE_DONE && r.too_large,
		      "the same value with flags is too large");
	}

	/* a key of 65535 bytes is read before it is refused, as memcached does */
	memset(f + 24, 'x', 65535);
	n = frame(f, 0x80, LARDERD_BIN_GET, NULL, 0, NULL, 0, NULL, 0, 0);
	f[2] = 0xff;
	f[3] = 0xff;
	set_body_len(f, 65535);
	CHECK(larderd_binparse(f, 1000, &k_lim, &r) == LARDERD_PARSE_MORE && r.need == 24 + 65535,
	      "need %zu", r.need);
	CHECK(larderd_binparse(f, 24 + 65535, &k_lim, &r) == LARDERD_PARSE_DONE &&
		      r.error == LARDERD_BIN_EINVAL,
	      "long key");
}

static void test_header(void)
{
	unsigned char f[64], h[24];
	struct larderd_binreq r;
	size_t n = frame(f, 0x80, LARDERD_BIN_GETK, NULL, 0, "k", 1, NULL, 0, 0);

	CHECK(larderd_binparse(f, n, &k_lim, &r) == LARDERD_PARSE_DONE, "getk");
	larderd_bin_header(h, &r, LARDERD_BIN_KEY_ENOENT, 4, 0x102, 0x01020304, 0x1122334455667788ull);
	CHECK(memcmp(h, "\x81\x0c\x01\x02\x04\x00\x00\x01\x01\x02\x03\x04\x01\x02\x03\x04"
			"\x11\x22\x33\x44\x55\x66\x77\x88", 24) == 0,
	      "response header");
	CHECK(strcmp(larderd_bin_status_text(LARDERD_BIN_E2BIG), "Too large.") == 0, "E2BIG text");
}

/* BINPARSE-B1 on junk: a valid magic with random fields, random bodies. */
static void test_junk(unsigned seed)
{
	static unsigned char f[1 << 17];

	srand(seed);
	for (int i = 0; i < 50000; i++) {
		size_t n = (size_t)(rand() % 400);
		struct larderd_binreq r;
		int rc;

		for (size_t j = 0; j < n; j++)
			f[j] = (unsigned char)rand();
		if (n > 0 && rand() % 4 != 0)
			f[0] = 0x80;
		if (n > 4 && rand() % 2)
			f[2] = 0; /* short keys more often */
		rc = larderd_binparse(f, n, &k_lim, &r);
		if (rc == LARDERD_PARSE_MORE)
			CHECK(r.need > n, "junk %d: need %zu of %zu", i, r.need, n);
		else if (rc == LARDERD_PARSE_DONE)
			CHECK(r.consumed >= 24 && r.consumed <= n, "junk %d: consumed %zu of %zu", i,
			      r.consumed, n);
		else
			CHECK(f[0] != 0x80, "junk %d: closed on a valid magic", i);
	}
}

int main(int argc, char **argv)
{
	unsigned seed = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : (unsigned)time(NULL);

	printf("test_binparse: seed %u\n", seed);
	test_commands();
	test_refusals();
	test_header();
	test_junk(seed);
	if (failures) {
		printf("test_binparse: %d FAILED\n", failures);
		return 1;
	}
	printf("test_binparse: all passed\n");
	return 0;
}
