/*
 * detail.c - memcached's per-prefix statistics ("stats detail on|off|dump").
 *
 * While on, every text get, gets, gat and gats key, every set, add,
 * replace, append, prepend and cas, and every delete (and the binary
 * protocol's gets, stores and deletes) counts under the key's prefix: the
 * bytes before its first delimiter (-D, ':' by default; an empty prefix
 * when the key starts with it); a key without the delimiter is not
 * counted. Meta commands, touch and incr/decr are not counted, as in
 * memcached 1.6.18. "stats detail dump" lists each prefix as memcached
 * does, in this table's order (memcached's is its own hash's); "stats
 * reset" forgets them; "off" stops counting and keeps them.
 *
 * Design: one mutex over a chained hash table, as memcached's, taken only
 * while counting is on. At most LARDERD_DETAIL_MAX prefixes are kept, so a
 * client cycling prefixes cannot grow the server without bound (memcached
 * has no bound); a key under another prefix past it is not counted.
 *
 * Invariants:
 *   DETAIL-P1. Each prefix is in the table once; its counts only grow until
 *      larderd_detail_clear() frees it, both under the lock.
 *
 * Not guaranteed: a request racing with "stats detail on" or "off" may or
 * may not be counted; a set refused by the parser before it reaches the
 * store (a bad data chunk) is not counted, where memcached counts it.
 */
#include "detail.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct larderd_prefix {
	struct larderd_prefix *next;
	uint64_t n[4]; /* by enum larderd_detail_op */
	size_t len;
	char name[]; /* len bytes */
};

void larderd_detail_init(struct larderd_detail *d, char delimiter)
{
	memset(d, 0, sizeof(*d));
	d->delimiter = delimiter;
	pthread_mutex_init(&d->lock, NULL);
}

void larderd_detail_clear(struct larderd_detail *d)
{
	pthread_mutex_lock(&d->lock);
	for (size_t b = 0; b < LARDERD_DETAIL_BUCKETS; b++) {
		struct larderd_prefix *p = d->bucket[b];
		while (p != NULL) {
			struct larderd_prefix *next = p->next;
			free(p);
			p = next;
		}
		d->bucket[b] = NULL;
	}
	d->count = 0;
	pthread_mutex_unlock(&d->lock);
}

void larderd_detail_fini(struct larderd_detail *d)
{
	larderd_detail_clear(d);
	pthread_mutex_destroy(&d->lock);
}

/* FNV-1a of the prefix. */
static size_t bucket_of(const char *s, size_t len)
{
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < len; i++)
		h = (h ^ (unsigned char)s[i]) * 16777619u;
	return h % LARDERD_DETAIL_BUCKETS;
}

/* The prefix's record, made if there is room; NULL past the bound (or when
 * out of memory). Under the lock. */
static struct larderd_prefix *find(struct larderd_detail *d, const char *s, size_t len)
{
	size_t b = bucket_of(s, len);
	struct larderd_prefix *p;

	for (p = d->bucket[b]; p != NULL; p = p->next)
		if (p->len == len && memcmp(p->name, s, len) == 0)
			return p;
	if (d->count >= LARDERD_DETAIL_MAX || (p = calloc(1, sizeof(*p) + len)) == NULL)
		return NULL;
	memcpy(p->name, s, len);
	p->len = len;
	p->next = d->bucket[b];
	d->bucket[b] = p;
	d->count++;
	return p;
}

void larderd_detail_count(struct larderd_detail *d, const void *key, size_t klen,
			  enum larderd_detail_op op, bool hit)
{
	const char *end = memchr(key, d->delimiter, klen);
	struct larderd_prefix *p;

	if (end == NULL)
		return;
	pthread_mutex_lock(&d->lock);
	p = find(d, key, (size_t)(end - (const char *)key));
	if (p != NULL) {
		p->n[op]++;
		if (op == LARDERD_DETAIL_GET && hit)
			p->n[LARDERD_DETAIL_HIT]++;
	}
	pthread_mutex_unlock(&d->lock);
}

void larderd_detail_dump(struct larderd_detail *d, struct larderd_obuf *out)
{
	static const char *const names[] = {" get ", " hit ", " set ", " del "};

	pthread_mutex_lock(&d->lock);
	for (size_t b = 0; b < LARDERD_DETAIL_BUCKETS; b++) {
		for (const struct larderd_prefix *p = d->bucket[b]; p != NULL; p = p->next) {
			larderd_obuf_str(out, "PREFIX ");
			larderd_obuf_add(out, p->name, p->len);
			for (int i = 0; i < 4; i++) {
				larderd_obuf_str(out, names[i]);
				larderd_obuf_u64(out, p->n[i]);
			}
			larderd_obuf_add(out, "\r\n", 2);
		}
	}
	pthread_mutex_unlock(&d->lock);
	larderd_obuf_add(out, "END\r\n", 5);
}
