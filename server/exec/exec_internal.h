/*
 * exec_internal.h - helpers shared by exec.c, meta.c and stats.c; not used
 * outside server/exec/.
 */
#ifndef LARDER_SERVER_EXEC_INTERNAL_H
#define LARDER_SERVER_EXEC_INTERNAL_H

#include "exec.h"

#define LARDER__BIT_STALE 1u
#define LARDER__BIT_WON 2u

enum {
	LARDER__ARITH_OK = 0,
	LARDER__ARITH_MISS,
	LARDER__ARITH_NONNUMERIC,
	LARDER__ARITH_FAIL,
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
const char *larder__store_error(struct larder__exec *x, int rc);
int larder__arith(struct larder__exec *x, const struct larder__tok *key, bool incr,
		  uint64_t delta, uint64_t *result, uint64_t *cas_out);
int larder__touch_key(struct larder__exec *x, const void *key, size_t klen, int64_t exptime);
/* The storage commands (also ms): returns memcached's reply line. */
const char *larder__exec_store_req(struct larder__exec *x, struct larder__req *req);
void larder__exec_stats(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out);
void larder__exec_meta(struct larder__exec *x, struct larder__req *req, struct larder__obuf *out);
/* lru_crawler metadump (dump.c): a larder__exec() result; may SUSPEND. */
int larder__exec_metadump(struct larder__exec *x, struct larder__req *req,
			  struct larder__obuf *out, size_t high_water);

#endif
