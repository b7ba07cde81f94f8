/*
 * reply.h - the reply writer of larderd: an output buffer and the memcached
 * reply formats appended to it, plus base64 for meta keys.
 *
 * Owns: struct larderd_obuf, a growable byte buffer. Pure apart from
 * allocation: no I/O. Invariant: len <= cap; bytes [0, len) are the pending
 * reply stream; `sent` (kept by the connection) is <= len.
 * Allocation failure is sticky: `failed` is set, later appends are dropped,
 * and the connection is closed by its owner (a reply stream with a hole in it
 * must never reach a client).
 */
#ifndef LARDERD_REPLY_H
#define LARDERD_REPLY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct larderd_obuf {
	char *buf;
	size_t len;
	size_t cap;
	bool failed;
};

/* Makes room for n more bytes and returns where they go, or NULL (failed set). */
char *larderd_obuf_reserve(struct larderd_obuf *o, size_t n);
void larderd_obuf_add(struct larderd_obuf *o, const void *p, size_t n);
void larderd_obuf_str(struct larderd_obuf *o, const char *s);
/* s followed by "\r\n". */
void larderd_obuf_line(struct larderd_obuf *o, const char *s);
void larderd_obuf_u64(struct larderd_obuf *o, uint64_t v);
void larderd_obuf_i64(struct larderd_obuf *o, int64_t v);
/* Drops bytes [0, n) and keeps the rest; shrinks a large idle buffer. */
void larderd_obuf_consume(struct larderd_obuf *o, size_t n);
void larderd_obuf_free(struct larderd_obuf *o);

/* Formats v in decimal into out (>= 21 bytes); returns the length. */
size_t larderd_fmt_u64(char *out, uint64_t v);

/* base64 (RFC 4648, with padding). decode returns -1 on bad input or overflow. */
long larderd_b64_decode(const char *in, size_t n, unsigned char *out, size_t out_cap);
size_t larderd_b64_encode(const unsigned char *in, size_t n, char *out);

#endif
