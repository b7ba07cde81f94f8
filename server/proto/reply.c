/*
 * reply.c - output buffer and reply formatting (see reply.h).
 *
 * The buffer doubles when it grows so a long pipelined burst costs amortised
 * O(1) per byte; larderd_obuf_consume() gives a buffer above 64 KiB back
 * when it drains, so a connection that once sent a 1 MiB value does not keep
 * 1 MiB while idle (the bounded per-connection cost in docs/server.md).
 */
#include "reply.h"

#include <stdlib.h>
#include <string.h>

#define OBUF_MIN 4096
#define OBUF_KEEP (64 * 1024)

char *larderd_obuf_reserve(struct larderd_obuf *o, size_t n)
{
	if (o->failed)
		return NULL;
	if (o->cap - o->len < n) {
		size_t cap = o->cap ? o->cap : OBUF_MIN;
		char *nb;
		while (cap - o->len < n)
			cap *= 2;
		nb = realloc(o->buf, cap);
		if (nb == NULL) {
			o->failed = true;
			return NULL;
		}
		o->buf = nb;
		o->cap = cap;
	}
	return o->buf + o->len;
}

void larderd_obuf_add(struct larderd_obuf *o, const void *p, size_t n)
{
	char *dst = larderd_obuf_reserve(o, n);
	if (dst == NULL)
		return;
	memcpy(dst, p, n);
	o->len += n;
}

void larderd_obuf_str(struct larderd_obuf *o, const char *s)
{
	larderd_obuf_add(o, s, strlen(s));
}

void larderd_obuf_line(struct larderd_obuf *o, const char *s)
{
	size_t n = strlen(s);
	char *dst = larderd_obuf_reserve(o, n + 2);
	if (dst == NULL)
		return;
	memcpy(dst, s, n);
	dst[n] = '\r';
	dst[n + 1] = '\n';
	o->len += n + 2;
}

size_t larderd_fmt_u64(char *out, uint64_t v)
{
	char tmp[24];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v != 0);
	for (i = 0; i < n; i++)
		out[i] = tmp[n - 1 - i];
	return n;
}

void larderd_obuf_u64(struct larderd_obuf *o, uint64_t v)
{
	char *dst = larderd_obuf_reserve(o, 24);
	if (dst != NULL)
		o->len += larderd_fmt_u64(dst, v);
}

void larderd_obuf_i64(struct larderd_obuf *o, int64_t v)
{
	if (v < 0) {
		larderd_obuf_add(o, "-", 1);
		larderd_obuf_u64(o, (uint64_t)0 - (uint64_t)v);
	} else {
		larderd_obuf_u64(o, (uint64_t)v);
	}
}

void larderd_obuf_consume(struct larderd_obuf *o, size_t n)
{
	if (n >= o->len) {
		o->len = 0;
		if (o->cap > OBUF_KEEP) {
			free(o->buf);
			o->buf = NULL;
			o->cap = 0;
		}
		return;
	}
	memmove(o->buf, o->buf + n, o->len - n);
	o->len -= n;
}

void larderd_obuf_free(struct larderd_obuf *o)
{
	free(o->buf);
	o->buf = NULL;
	o->len = o->cap = 0;
}

static const char k_b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_val(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	if (c == '=')
		return 0;
	return -1;
}

/*
 * memcached's base64_decode() (its base64.c), whose leniency clients see:
 * bytes outside the alphabet are skipped, '=' counts as a digit of value 0,
 * the digits must come in whole groups of four, and decoding stops after the
 * first group holding '=' (one drops a byte, two drop two, more is an error).
 */
long larderd_b64_decode(const char *in, size_t n, unsigned char *out, size_t out_cap)
{
	size_t count = 0, o = 0;
	int block[4], k = 0, pad = 0;

	for (size_t i = 0; i < n; i++)
		count += b64_val((unsigned char)in[i]) >= 0;
	if (count == 0 || count % 4 != 0 || count / 4 * 3 > out_cap)
		return -1;
	for (size_t i = 0; i < n; i++) {
		int v = b64_val((unsigned char)in[i]);
		if (v < 0)
			continue;
		pad += in[i] == '=';
		block[k++] = v;
		if (k < 4)
			continue;
		out[o++] = (unsigned char)(block[0] << 2 | block[1] >> 4);
		out[o++] = (unsigned char)(block[1] << 4 | block[2] >> 2);
		out[o++] = (unsigned char)(block[2] << 6 | block[3]);
		k = 0;
		if (pad > 2)
			return -1;
		if (pad > 0) {
			o -= (size_t)pad;
			break;
		}
	}
	return o > 0 ? (long)o : -1;
}

size_t larderd_b64_encode(const unsigned char *in, size_t n, char *out)
{
	size_t o = 0, i;

	for (i = 0; i + 3 <= n; i += 3) {
		uint32_t w = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
		out[o++] = k_b64[w >> 18];
		out[o++] = k_b64[(w >> 12) & 63];
		out[o++] = k_b64[(w >> 6) & 63];
		out[o++] = k_b64[w & 63];
	}
	if (i < n) {
		uint32_t w = (uint32_t)in[i] << 16 | (i + 1 < n ? (uint32_t)in[i + 1] << 8 : 0);
		out[o++] = k_b64[w >> 18];
		out[o++] = k_b64[(w >> 12) & 63];
		out[o++] = i + 1 < n ? k_b64[(w >> 6) & 63] : '=';
		out[o++] = '=';
	}
	return o;
}
