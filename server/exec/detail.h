/*
 * detail.h - "stats detail": memcached's per-prefix statistics (gets, hits,
 * sets and deletes counted per key prefix while "stats detail on").
 *
 * Owns the switch, the prefix delimiter (-D) and the table of prefixes
 * (server/exec/detail.c). Counting happens only while the switch is on:
 * the workers' check of it is one relaxed load.
 */
#ifndef LARDERD_DETAIL_H
#define LARDERD_DETAIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#include "../proto/reply.h"

#define LARDERD_DETAIL_BUCKETS 256
/* Prefixes counted at most; a key with another prefix past it is not counted. */
#define LARDERD_DETAIL_MAX 10000

struct larderd_prefix;

struct larderd_detail {
	/* "stats detail on|off"; relaxed: a switch, a request racing with it
	 * may or may not be counted. */
	_Atomic bool on;
	char delimiter; /* -D, memcached's default ':'; set before the workers start */
	pthread_mutex_t lock; /* guards the table */
	struct larderd_prefix *bucket[LARDERD_DETAIL_BUCKETS];
	size_t count;
};

void larderd_detail_init(struct larderd_detail *d, char delimiter);
void larderd_detail_fini(struct larderd_detail *d);

enum larderd_detail_op { LARDERD_DETAIL_GET, LARDERD_DETAIL_HIT, LARDERD_DETAIL_SET,
			 LARDERD_DETAIL_DEL };

/* Counts op (a get that hit: GET and HIT) under key's prefix, the bytes
 * before the first delimiter; a key without one is not counted. */
void larderd_detail_count(struct larderd_detail *d, const void *key, size_t klen,
			  enum larderd_detail_op op, bool hit);

static inline bool larderd_detail_on(struct larderd_detail *d)
{
	return atomic_load_explicit(&d->on, memory_order_relaxed);
}

/* memcached's "PREFIX <p> get <n> hit <n> set <n> del <n>" lines, then END. */
void larderd_detail_dump(struct larderd_detail *d, struct larderd_obuf *out);

/* Forgets every prefix ("stats reset"). */
void larderd_detail_clear(struct larderd_detail *d);

#endif
