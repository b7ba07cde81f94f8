/*
 * exec_internal.h - helpers shared by exec.c, store.c, meta.c and stats.c;
 * not used outside server/exec/.
 */
#ifndef LARDERD_EXEC_INTERNAL_H
#define LARDERD_EXEC_INTERNAL_H

#include "exec.h"

/* Meta bits, item header byte 12 (exec.h). */
#define LARDERD_BIT_STALE 1u   /* md I: invalidated, the next reader may recache */
#define LARDERD_BIT_WON 2u     /* a win token (W) was handed out */
#define LARDERD_BIT_BINKEY 4u  /* stored by ms with b: k echoes the key in base64 */
#define LARDERD_BIT_FETCHED 8u /* read by a get, gat, touch or mg since written */

enum {
	LARDERD_ARITH_OK = 0,
	LARDERD_ARITH_MISS,
	LARDERD_ARITH_NONNUMERIC,
	LARDERD_ARITH_CAS_MISMATCH,
	LARDERD_ARITH_FAIL,
};

/* The outcomes of memcached's do_store_item(), plus a failure. */
enum larderd_store_res {
	LARDERD_STORED = 0,
	LARDERD_NOT_STORED,
	LARDERD_EXISTS,
	LARDERD_NOT_FOUND,
	LARDERD_STORE_FAILED, /* the engine refused: *err is the reply */
};

/* The reply to a value over the item limit or the engine's entry limit; a
 * failed store's *err is this very pointer when that was the reason (the
 * binary protocol answers it "Too large.", any other failure "Out of
 * memory"). */
extern const char larderd_too_large_reply[];

/* One store, as memcached's complete_nread_ascii() runs it. */
struct larderd_store {
	const char *key;
	size_t klen;
	enum larderd_cmd comm;   /* SET ADD REPLACE APPEND PREPEND CAS */
	uint32_t flags;
	int64_t exptime;         /* larderd_exptime_to_ttl() */
	uint64_t cas;            /* CAS given (cas, ms C), 0 for none */
	bool set_stale;          /* ms I with C: a lower CAS stores a stale value */
	uint8_t bits;            /* meta bits of the new item (BINKEY) */
	bool not_a_set;          /* binary INCR/DECR creating its item: no cmd_set (memcached) */
	const char *data;
	size_t len;
};

/* Results the caller has nothing to do with (already counted or best effort). */
static inline void larderd_ignore(long rc)
{
	(void)rc;
}

bool larderd_grow(unsigned char **buf, size_t *cap, size_t need);
uint64_t larderd_next_cas(struct larderd_exec *x);
void larderd_hdr_put(unsigned char *p, uint64_t cas, uint32_t flags, uint8_t bits);
void larderd_hdr_get(const unsigned char *p, uint64_t *cas, uint32_t *flags, uint8_t *bits);
int larderd_read_item(struct larderd_exec *x, const void *key, size_t klen, size_t *len);
uint64_t larderd_keep_ttl(struct larderd_exec *x, const void *key, size_t klen);
/* Replaces the item in x->a (old_len bytes) by the same bytes with bits set
 * to `bits`; keeps its TTL. Returns the larder status of the swap. */
int larderd_set_bits(struct larderd_exec *x, const void *key, size_t klen, size_t old_len,
		     uint8_t bits);
/* Marks the key fetched (memcached's bump on a read), best effort, once
 * fetches are tracked; larderd_track_fetched() turns that on for good. */
void larderd_mark_fetched(struct larderd_exec *x, const void *key, size_t klen);
void larderd_track_fetched(struct larderd_exec *x);
/* A new exptime (one in the past removes the key); touch and gat also mark
 * the item fetched, mg and ma's T do not. LARDER_OK, LARDER_MISS, or the
 * engine's error with the item kept as it was: LARDER_EVALSIZE (its deadline
 * would take it over the entry limit), LARDER_ENOMEM, LARDER_EBUSY. */
int larderd_touch_key(struct larderd_exec *x, const void *key, size_t klen, int64_t exptime,
		      bool fetch);
/* The text protocol's line for such an error: memcached's words for an item
 * too large and for memory it lacks (docs/server.md, touch-over-eighth). */
const char *larderd_touch_error(int rc);
/* memcached's remaining-TTL figure ("t" flag, "me" exp) in seconds, -1 for
 * none. */
long long larderd_ttl_seconds(struct larderd_exec *x, const void *key, size_t klen);
/* The "t" memcached prints right after a T in the past made the item dead:
 * the unsigned wrap of a negative time. */
int64_t larderd_dead_ttl_seconds(struct larderd_exec *x, int32_t exptime);
/* Seconds since the item was written, from its CAS unique's time stamp. */
uint64_t larderd_age_seconds(uint64_t cas);
const char *larderd_store_error(struct larderd_exec *x, int rc);
/* delete and the binary DELETE: a cas of 0 deletes any item, another only
 * the item with that unique. LARDER_OK, LARDER_MISS, or LARDER_EXISTS for a
 * unique that differs; counts delete_hits and delete_misses. */
int larderd_delete_key(struct larderd_exec *x, const void *key, size_t klen, uint64_t cas);
/* flush_all and the binary FLUSH (exec.c says how the delay reads), which
 * each refuse it themselves under -F; counts cmd_flush. LARDER_OK or the
 * engine's error. */
int larderd_flush(struct larderd_exec *x, int64_t delay);
void larderd_flush_due(struct larderd_shared *sh);
/* After a command that may have written key: removes what it wrote there
 * if that was during a flush's second (exec.c). cas_seq_before: the
 * worker's cas_seq before the command. */
void larderd_flush_window(struct larderd_exec *x, const void *key, size_t klen,
			  uint64_t cas_seq_before);
/* One incr/decr (text, binary, ma): the request, then what it did. */
struct larderd_arith_op {
	const struct larderd_tok *key;
	bool incr;
	uint64_t delta;
	uint64_t want_cas;   /* 0: any item */
	/* ma's T: the TTL (ms) the item gets in the same swap as its new
	 * number, so a deadline the engine refuses leaves the number too;
	 * NULL keeps the item's TTL. Not applied when the number grows:
	 * memcached wrote a new item, and the T went to the old one (is lost). */
	const uint64_t *ttl_ms;
	uint64_t result, cas; /* the new number and unique */
	uint64_t ttl_before;  /* the TTL the item had (ms, LARDER_TTL_NEVER for none) */
	bool grew;            /* the number got longer */
	int engine_rc;        /* LARDERD_ARITH_FAIL's cause: a larder status */
};
/* LARDERD_ARITH_*; fills op's results. */
int larderd_arith(struct larderd_exec *x, struct larderd_arith_op *op);

/* store.c: the storage commands and ms. *cas_out is the new unique when
 * STORED; *err the reply text when STORE_FAILED. */
enum larderd_store_res larderd_store_item(struct larderd_exec *x, const struct larderd_store *s,
					  uint64_t *cas_out, const char **err);
/* Refused for its size (set, ms, binary SET): memcached also drops the old value. */
void larderd_store_too_large(struct larderd_exec *x, const void *key, size_t klen, bool drop_old);
void larderd_exec_store(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out);

void larderd_exec_stats(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out);
void larderd_exec_meta(struct larderd_exec *x, struct larderd_req *req, struct larderd_obuf *out);
/* lru_crawler metadump (dump.c): a larderd_exec() result; may SUSPEND. */
int larderd_exec_metadump(struct larderd_exec *x, struct larderd_req *req,
			  struct larderd_obuf *out, size_t high_water);

#endif
