/*
 * exec_internal.h - helpers shared by exec.c, store.c, meta.c and stats.c;
 * not used outside server/exec/.
 */
#ifndef LARDER_SERVER_EXEC_INTERNAL_H
#define LARDER_SERVER_EXEC_INTERNAL_H

#include "exec.h"

/* Meta bits, item header byte 12 (exec.h). */
#define LARDER__BIT_STALE 1u   /* md I: invalidated, the next reader may recache */
#define LARDER__BIT_WON 2u     /* a win token (W) was handed out */
#define LARDER__BIT_BINKEY 4u  /* stored by ms with b: k echoes the key in base64 */
#define LARDER__BIT_FETCHED 8u /* read by a get, gat, touch or mg since written */

enum {
	LARDER__ARITH_OK = 0,
	LARDER__ARITH_MISS,
	LARDER__ARITH_NONNUMERIC,
	LARDER__ARITH_CAS_MISMATCH,
	LARDER__ARITH_FAIL,
};

/* The outcomes of memcached's do_store_item(), plus a failure. */
enum larder__store_res {
	LARDER__STORED = 0,
	LARDER__NOT_STORED,
	LARDER__EXISTS,
	LARDER__NOT_FOUND,
	LARDER__STORE_FAILED, /* the engine refused: *err is the reply */
};

/* One store, as memcached's complete_nread_ascii() runs it. */
struct larder__store {
	const char *key;
	size_t klen;
	enum larder__cmd comm;   /* SET ADD REPLACE APPEND PREPEND CAS */
	uint32_t flags;
	int32_t exptime;
	uint64_t cas;            /* CAS given (cas, ms C), 0 for none */
	bool set_stale;          /* ms I with C: a lower CAS stores a stale value */
	uint8_t bits;            /* meta bits of the new item (BINKEY) */
	const char *data;
	size_t len;
};

/* Results the caller has nothing to do with (already counted or best effort). */
static inline void larder__ignore(long rc)
{
	(void)rc;
}

bool larder__grow(unsigned char **buf, size_t *cap, size_t need);
uint64_t larder__next_cas(struct larder__exec *x);
void larder__hdr_put(unsigned char *p, uint64_t cas, uint32_t flags, uint8_t bits);
void larder__hdr_get(const unsigned char *p, uint64_t *cas, uint32_t *flags, uint8_t *bits);
int larder__read_item(struct larder__exec *x, const void *key, size_t klen, size_t *len);
uint64_t larder__keep_ttl(struct larder__exec *x, const void *key, size_t klen);
/* Replaces the item in x->a (old_len bytes) by the same bytes with bits set
 * to `bits`; keeps its TTL. Returns the larder status of the swap. */
int larder__set_bits(struct larder__exec *x, const void *key, size_t klen, size_t old_len,
		     uint8_t bits);
/* Marks the key fetched (memcached's bump on a read), best effort, once
 * fetches are tracked; larder__track_fetched() turns that on for good. */
void larder__mark_fetched(struct larder__exec *x, const void *key, size_t klen);
void larder__track_fetched(struct larder__exec *x);
/* A new exptime (one in the past removes the key); touch and gat also mark
 * the item fetched, mg and ma's T do not. LARDER_OK or LARDER_MISS. */
int larder__touch_key(struct larder__exec *x, const void *key, size_t klen, int32_t exptime,
		      bool fetch);
/* memcached's remaining-TTL figure ("t" flag, "me" exp) in seconds, -1 for
 * none. */
long long larder__ttl_seconds(struct larder__exec *x, const void *key, size_t klen);
/* The "t" memcached prints right after a T in the past made the item dead:
 * the unsigned wrap of a negative time. */
int64_t larder__dead_ttl_seconds(struct larder__exec *x, int32_t exptime);
/* Seconds since the item was written, from its CAS unique's time stamp. */
uint64_t larder__age_seconds(uint64_t cas);
const char *larder__store_error(struct larder__exec *x, int rc);
/* incr/decr (and ma). *grew: the number got longer, so memcached wrote a
 * new item, and a T of the same ma went to the old one (is lost). */
int larder__arith(struct larder__exec *x, const struct larder__tok *key, bool incr,
		  uint64_t delta, uint64_t want_cas, uint64_t *result, uint64_t *cas_out,
		  bool *grew);

/* store.c: the storage commands and ms. *cas_out is the new unique when
 * STORED; *err the reply text when STORE_FAILED. */
enum larder__store_res larder__store_item(struct larder__exec *x, const struct larder__store *s,
					  uint64_t *cas_out, const char **err);
/* Refused for its size (set, ms): memcached also drops the old value. */
void larder__store_too_large(struct larder__exec *x, const struct larder__req *req,
			     bool drop_old);
void larder__exec_store(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out);

void larder__exec_stats(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out);
void larder__exec_meta(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out);
/* lru_crawler metadump (dump.c): a larder__exec() result; may SUSPEND. */
int larder__exec_metadump(struct larder__exec *x, struct larder__req *req,
			  struct larder__obuf *out, size_t high_water);

#endif
