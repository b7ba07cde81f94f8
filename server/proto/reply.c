/*
 * reply.c - output buffer and reply formatting (see reply.h).
 *
 * The buffer doubles when it grows so a long pipelined burst costs amortised
 * O(1) per byte; larder__obuf_consume() gives a buffer above 64 KiB back
 * when it drains, so a connection that once sent a 1 MiB value does not keep
 * 1 MiB while idle (the bounded per-connection cost in docs/server.md).
 */
#include "reply.h"

#include <stdlib.h>
#include <string.h>

#define OBUF_MIN 4096
#define OBUF_KEEP (64 * 1024)

char *larder__obuf_reserve(struct larder__obuf *o, size_t n)
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

void larder__obuf_add(struct larder__obuf *o, const void *p, size_t n)
{
	char *dst = larder__obuf_reserve(o, n);
	if (dst == NULL)
		return;
	memcpy(dst, p, n);
	o->len += n;
}

void larder__obuf_str(struct larder__obuf *o, const char *s)
{
	larder__obuf_add(o, s, strlen(s));
}

void larder__obuf_line(struct larder__obuf *o, const char *s)
{
	size_t n = strlen(s);
	char *dst = larder__obuf_reserve(o, n + 2);
	if (dst == NULL)
		return;
	memcpy(dst, s, n);
	dst[n] = '\r';
	dst[n + 1] = '\n';
	o->len += n + 2;
}

size_t larder__fmt_u64(char *out, uint64_t v)
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

void larder__obuf_u64(struct larder__obuf *o, uint64_t v)
{
	char *dst = larder__obuf_reserve(o, 24);
	if (dst != NULL)
		o->len += larder__fmt_u64(dst, v);
}

void larder__obuf_i64(struct larder__obuf *o, int64_t v)
{
	if (v < 0) {
		larder__obuf_add(o, "-", 1);
		larder__obuf_u64(o, (uint64_t)0 - (uint64_t)v);
	} else {
		larder__obuf_u64(o, (uint64_t)v);
	}
}

void larder__obuf_consume(struct larder__obuf *o, size_t n)
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

void larder__obuf_free(struct larder__obuf *o)
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
	return -1;
}

long larder__b64_decode(const char *in, size_t n, unsigned char *out, size_t out_cap)
{
	size_t o = 0;

	if (n == 0 || n % 4 != 0)
		return -1;
	for (size_t i = 0; i < n; i += 4) {
		int v[4], pad = 0;
		for (int j = 0; j < 4; j++) {
			unsigned char c = (unsigned char)in[i + j];
			if (c == '=' && i + 4 == n && j >= 2) {
				v[j] = 0;
				pad++;
			} else if (pad > 0 || (v[j] = b64_val(c)) < 0) {
				return -1;
			}
		}
		uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 |
			     (uint32_t)v[3];
		if (o + 3 - (size_t)pad > out_cap)
			return -1;
		out[o++] = (unsigned char)(w >> 16);
		if (pad < 2)
			out[o++] = (unsigned char)(w >> 8);
		if (pad < 1)
			out[o++] = (unsigned char)w;
	}
	return (long)o;
}

size_t larder__b64_encode(const unsigned char *in, size_t n, char *out)
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
