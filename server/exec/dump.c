/*
 * dump.c - "lru_crawler metadump <all|hash|ids>": one line per live item, as
 * memcached 1.6.18 writes them, then "END".
 *
 *     key=<uri-encoded key> exp=<unix time, -1: none> la=<unix time>
 *         cas=<unique> fetch=<yes|no> cls=<class> size=<bytes>\n
 *
 * Lines end in a bare "\n" and the last in "END\r\n", as memcached's do, so
 * tools written for it (memcached-tool's dump, lru_crawler consumers) read
 * ours. Differences, all in values and not in shape (docs/persistence.md):
 *   - cls is the engine's size class + 1 (1 .. classes + 1, the last one for
 *     entries in private mappings), not a memcached slab class; a list of
 *     ids filters by it, "all" and "hash" take everything (larder's cursor
 *     walks in hash order either way);
 *   - size is what the entry charges against -m (header, key, item header,
 *     data, slot rounding);
 *   - la is not tracked: it is the time of the dump; fetch is the item's
 *     fetched bit, exact once a client has asked about fetches (mg h, me:
 *     docs/server.md) and "no" for reads before that.
 * The dump walks a larder_iter (weakly consistent: every item live for the
 * whole dump appears exactly once) and suspends at the output's high water
 * like a multiget, keeping its cursor in the request; a connection closed
 * mid-dump frees it through larderd_exec_abandon().
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec.h"
#include "exec_internal.h"

/* Class ids a dump can name: the engine has far fewer (69 + 1). */
#define MAX_CLASSES 127

/* The class ids a dump takes: bit i = cls i (0 unused). */
struct dump_filter {
	uint64_t bits[2];
};

static size_t class_count(void)
{
	return larder_size_class_count() + 1; /* + private mappings */
}

/* "all", "hash", or comma-separated ids 1..class_count(); false when bad. */
static bool parse_classes(const struct larderd_tok *t, struct dump_filter *f)
{
	memset(f, 0, sizeof(*f));
	if ((t->n == 3 && memcmp(t->p, "all", 3) == 0) || (t->n == 4 && memcmp(t->p, "hash", 4) == 0)) {
		memset(f->bits, 0xff, sizeof(f->bits));
		return true;
	}
	const char *p = t->p, *end = t->p + t->n;
	while (p < end) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		struct larderd_tok id = {p, (size_t)((comma ? comma : end) - p)};
		uint64_t v;
		if (!larderd_strtoull(&id, &v) || v < 1 || v > class_count() || v > MAX_CLASSES)
			return false;
		f->bits[v / 64] |= 1ull << (v % 64);
		p = comma ? comma + 1 : end;
	}
	return true;
}

struct dump_line {
	struct larderd_obuf *out;
	const struct dump_filter *filter;
	time_t now;
	size_t classes;
	uint64_t slot[MAX_CLASSES]; /* slot bytes of each size class, ascending */
};

/* The cls of an entry charging `bytes`: its slot's class + 1, or the last
 * (a private mapping). Binary search of the ascending slot sizes. */
static unsigned class_of(const struct dump_line *d, uint64_t bytes)
{
	size_t lo = 0, hi = d->classes;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (d->slot[mid] < bytes)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < d->classes && d->slot[lo] == bytes ? (unsigned)lo + 1 : (unsigned)d->classes + 1;
}

/* memcached's uriencode: unreserved characters stay, the rest are %XX. */
static void add_key(struct larderd_obuf *out, const unsigned char *k, size_t n)
{
	static const char hex[] = "0123456789ABCDEF";
	char *p = larderd_obuf_reserve(out, 3 * n);
	if (!p)
		return;
	char *start = p;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = k[i];
		if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		    c == '-' || c == '.' || c == '_' || c == '~') {
			*p++ = (char)c;
		} else {
			*p++ = '%';
			*p++ = hex[c >> 4];
			*p++ = hex[c & 15];
		}
	}
	out->len += (size_t)(p - start);
}

static void dump_entry(void *ctx, const void *key, size_t key_len, const void *value,
		       size_t value_len, uint64_t ttl_ms, uint64_t entry_bytes)
{
	struct dump_line *d = ctx;
	unsigned cls = class_of(d, entry_bytes);
	if (!(d->filter->bits[cls / 64] & (1ull << (cls % 64))) || value_len < LARDERD_HDR)
		return;
	uint64_t cas;
	uint32_t flags;
	uint8_t bits;
	larderd_hdr_get(value, &cas, &flags, &bits);
	larderd_obuf_str(d->out, "key=");
	add_key(d->out, key, key_len);
	larderd_obuf_str(d->out, " exp=");
	if (ttl_ms == LARDER_TTL_NEVER)
		larderd_obuf_str(d->out, "-1");
	else
		larderd_obuf_i64(d->out, (int64_t)d->now + (int64_t)((ttl_ms + 999) / 1000));
	larderd_obuf_str(d->out, " la=");
	larderd_obuf_i64(d->out, (int64_t)d->now);
	larderd_obuf_str(d->out, " cas=");
	larderd_obuf_u64(d->out, cas);
	larderd_obuf_str(d->out, (bits & LARDERD_BIT_FETCHED) ? " fetch=yes" : " fetch=no");
	larderd_obuf_str(d->out, " cls=");
	larderd_obuf_u64(d->out, cls);
	larderd_obuf_str(d->out, " size=");
	larderd_obuf_u64(d->out, entry_bytes);
	larderd_obuf_add(d->out, "\n", 1);
}

int larderd_exec_metadump(struct larderd_exec *x, struct larderd_req *req,
			  struct larderd_obuf *out, size_t high_water)
{
	struct dump_filter filter;
	if (x->sh->dump_disabled) { /* -X */
		larderd_obuf_line(out, "ERROR metadump not allowed");
		return LARDERD_EXEC_DONE;
	}
	if (!parse_classes(&req->tok[2], &filter)) {
		larderd_obuf_line(out, "BADCLASS invalid class id");
		return LARDERD_EXEC_DONE;
	}
	larder_iter *it = req->dump;
	if (!it && larder_iter_open(x->sh->cache, &it) != LARDER_OK) {
		larderd_obuf_line(out, "SERVER_ERROR out of memory");
		return LARDERD_EXEC_DONE;
	}
	struct dump_line d = {out, &filter, time(NULL), larder_size_class_count(), {0}};
	if (d.classes >= MAX_CLASSES)
		d.classes = MAX_CLASSES - 1;
	for (size_t i = 0; i < d.classes; i++)
		if (larder_stats_size_class(x->sh->cache, i, &d.slot[i], 1) != LARDER_OK)
			d.classes = i; /* cannot happen for i < the count; stay consistent */
	for (;;) {
		if (out->len > high_water) {
			req->dump = it;
			return LARDERD_EXEC_SUSPEND;
		}
		int rc = larder_iter_next(it, dump_entry, &d);
		if (rc == LARDER_OK)
			continue;
		larder_iter_close(it);
		req->dump = NULL;
		if (rc != LARDER_MISS)
			return LARDERD_EXEC_NOMEM; /* a partial dump: close the connection */
		larderd_obuf_line(out, "END");
		return out->failed ? LARDERD_EXEC_NOMEM : LARDERD_EXEC_DONE;
	}
}

void larderd_exec_abandon(struct larderd_req *req)
{
	larder_iter_close(req->dump);
	req->dump = NULL;
}
