/*
 * core/cache.c - the logical plane: every public operation on a cache.
 *
 * Reads: hash, enter a read section, look the key up in the lock-free index,
 * check its deadline (only entries with a TTL near it read the clock: the
 * TSC bounds the time from above for the rest, core/clockbound.h), copy or call
 * back, sample the hit into this thread's hit ring, leave. No lock, no
 * allocation (but a thread's first call on a cache: its state), no system
 * call, no store to a shared line but the entry's accessed bit, and that only
 * when it is clear (ENTRY-E7 in core/entry.h), and in an expire-after-access cache
 * its deadline, when it moved by more than the slack (extend_on_read, ENTRY-E4).
 *
 * Writes: reserve room (an event slot and byte credit: the only place a
 * writer may wait), build the new entry in a slot of this thread's own pages,
 * lock the key's home bucket, decide, publish with one atomic store, unlock,
 * post the event for the maintainer, leave the read section. The policy,
 * eviction, frees and index growth all happen on the maintainer.
 *
 * Byte budget (the overshoot bound, MAINT-M4 in maint/maintainer.c):
 *   CACHE-B1. budget + sum of thread credits + used bytes == capacity + bound,
 *       where used counts allocated slots until the maintainer frees them.
 *   CACHE-B2. A writer takes credit from budget (CAS, never below zero) before it
 *       allocates, so used bytes never exceed capacity + bound.
 *   CACHE-B3. When credit cannot be had, the writer waits for the maintainer
 *       (at most write_wait_ms) and then fails with LARDER_EBUSY, leaving
 *       the key's previous value intact. A writer inside a read section
 *       (a callback) never waits for memory, and a writer on any cache's
 *       maintainer thread (a removal listener) never waits at all; see
 *       wait_pass() for why, and for the waits on the event ring and index.
 *   CACHE-B4. A bulk writer's plain write (larder__put_batch in a cache of one
 *       shard that does not compress; plain_block) charges, allocates, indexes
 *       and posts each record as write_common does for a larder_put of it:
 *       only the order of the checks and the credit's top-up (once per block,
 *       before its read section) differ.
 */
#define _GNU_SOURCE
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/clockbound.h"
#include "core/compress.h"
#include "core/dict.h"
#include "core/hash.h"
#include "core/testing.h"
#include "core/thread.h"
#include "evict/policy.h"
#include "index/table.h"
#include "maint/maintainer.h"
#include "pool/pool.h"
#include "pool/probe.h"
#include "sync/futex.h"

#define CREDIT_CHUNK 16384
/* Expire-after-access slack: 1/64 of the default TTL, at most 1 s. */
#define ACCESS_SLACK_DIVISOR 64u
#define ACCESS_SLACK_MAX_MS 1000u
#define MIN_TABLE_BUCKETS 1024u
#define WAIT_SLICE_NS (10u * 1000u * 1000u)

/* ---- Common helpers ------------------------------------------------------- */

struct op {
	struct larder__thread *thread;
	/* The thread's, one per shard: its node's array (core/thread.h), which
	 * a nested call on another cache (a callback's) leaves in place. */
	struct larder__handle *const *handles;
	struct larder__handle *handle;         /* handles[] of the key's shard (op_route) */
	uint64_t now_ms; /* cache clock, read at most once per operation */
	int have_now;
	uint64_t outer; /* larder__read_enter()'s token, for op_exit() */
};
/* op_scalar: a write keeps its op's address to itself, so that gcc holds
 * the fields in registers rather than storing and reloading them in the
 * frame (with the tests that fold with it, 12.7 of the writer's
 * instructions per put: docs/bench.md, put17); a call out of line gets a
 * copy (reserve_room, op_entry_expired, write_common's index wait), given
 * back where the callee may change it (the clock read, the read section's
 * token). */

/*
 * The argument checks of a call on one key, in larder.h's precedence: every
 * LARDER_EINVAL (cache or key NULL, empty key, or the call's other pointer
 * arguments not ok) before LARDER_EKEYSIZE.
 */
static inline int check_args(const larder *c, const void *key, size_t key_len, int others_ok)
{
	if (!c || !key || key_len == 0 || !others_ok)
		return LARDER_EINVAL;
	return key_len > c->max_key_bytes ? LARDER_EKEYSIZE : LARDER_OK;
}

/* The largest entry a write may store now (1/8 of the capacity). Relaxed:
 * a setting; a racing set_capacity may go either way. */
static inline uint64_t entry_limit(const larder *c)
{
	return larder__entry_limit(atomic_load_explicit(&c->capacity, LARDER__RELAXED));
}

static inline int check_key(const larder *c, const void *key, size_t key_len)
{
	return check_args(c, key, key_len, 1);
}

static inline int op_begin(larder *c, struct op *op)
{
	op->thread = larder__thread_self();
	if (__builtin_expect(!op->thread, 0))
		return LARDER_ENOMEM;
	if (larder__thread_last_is(op->thread, c->id))
		op->handles = op->thread->last_handles; /* never NULL then: no test */
	else if (!(op->handles = larder__thread_handles_slow(op->thread, c, c->id)))
		return LARDER_ENOMEM;
	op->have_now = 0;
	op->now_ms = 0;
	return LARDER_OK;
}

/* The shard of a key of this hash (its index), and the thread's handle for it. */
static inline unsigned op_route(larder *c, struct op *op, uint64_t hash)
{
	unsigned k = larder__shard_index(c, hash);
	op->handle = op->handles[k];
	return k;
}

static inline void op_enter(struct op *op)
{
	op->outer = larder__read_enter(&op->thread->reader);
}

static inline void op_exit(struct op *op)
{
	larder__read_exit(&op->thread->reader, op->outer);
}

static inline uint64_t op_now(larder *c, struct op *op)
{
	if (!op->have_now) {
		op->now_ms = c->clock(c->clock_ctx);
		op->have_now = 1;
	}
	return op->now_ms;
}

/* The index root of shard k. */
static inline struct larder__table *root_at(larder *c, unsigned k)
{
	/* A-ROOT: acquire, pairs with R-ROOT (larder_clear, end of growth). */
	return (struct larder__table *)atomic_load_explicit(&c->root[k], LARDER__ACQUIRE);
}

/* The same through the shard (s->table is &c->root[s->index]): a writer,
 * which holds the shard's pointer from its handle, keeps no index live. */
static inline struct larder__table *shard_root(struct larder__shard *s)
{
	/* A-ROOT: acquire, pairs with R-ROOT (larder_clear, end of growth). */
	return (struct larder__table *)atomic_load_explicit(s->table, LARDER__ACQUIRE);
}

/* The index root of the shard that holds keys of this hash. */
static inline struct larder__table *root_rcu(larder *c, uint64_t hash)
{
	return root_at(c, larder__shard_index(c, hash));
}

/*
 * An upper bound on the cache clock's time now without reading it: the
 * TSC's (core/clockbound.h, CLOCKBOUND-C1) for the default clock, none
 * (UINT64_MAX) for an injected one or where the TSC gives none.
 */
static inline uint64_t clock_upper(const larder *c)
{
	return c->clock == larder__clock_default ? larder__clockbound_upper() : UINT64_MAX;
}

/*
 * Whether e (whose deadline flag is set) is live by the TSC bound alone, in
 * an expire-after-write cache: larder_get's inline check. It makes no call
 * (rdtsc takes two registers; a clock call would spill the lookup's), and
 * whatever it cannot settle (no bound, a deadline near, an after-access
 * cache, an injected clock) answers 0 and goes out of line. A deadline of
 * "none" (UINT64_MAX, after a touch) is past any bound: live.
 */
static inline int live_by_bound(const larder *c, struct larder__entry *e)
{
	/* Relaxed (ENTRY-E2): either deadline of a racing touch is an answer.
	 * The flag is known set: no test for "no deadline field". */
	return c->access_ttl_ms == 0 &&
	       clock_upper(c) < atomic_load_explicit(larder__entry_expire(e), LARDER__RELAXED);
}

/*
 * Whether e's deadline has passed, upper_ms an upper bound on the time now
 * (clock_upper, or UINT64_MAX). Out of line (deadline_passed, or a caller
 * that is): only entries with a deadline get here, and the clock call
 * would otherwise make every lookup spill its registers. op may be NULL (a
 * single read, which reads the clock at most once anyway). A deadline after
 * the upper bound has not passed, whatever the clock says; any other is
 * judged by the cache's own clock. Never the kernel's coarse clock:
 * compared first, with a two-tick margin, it lagged CLOCK_MONOTONIC by more
 * on a loaded VM (7-15 ms seen), and then returned values past their
 * deadline (test_default_clock_never_expired in tests/unit/test_contracts.c).
 */
static inline int deadline_passed_below(larder *c, struct op *op, struct larder__entry *e,
					 uint64_t upper_ms)
{
	uint64_t deadline_ms = larder__entry_deadline(e);
	if (deadline_ms == UINT64_MAX || upper_ms < deadline_ms)
		return 0;
	if (!op) /* a single read: each clock read at most once anyway */
		return c->clock(c->clock_ctx) >= deadline_ms;
	return op_now(c, op) >= deadline_ms;
}

/* deadline_passed_below() with the bound of now (clock_upper). */
static __attribute__((noinline)) int deadline_passed(larder *c, struct op *op,
						     struct larder__entry *e)
{
	return deadline_passed_below(c, op, e, clock_upper(c));
}

static inline int entry_expired(larder *c, struct op *op, struct larder__entry *e)
{
	return __builtin_expect(larder__entry_flags(e) & LARDER__ENTRY_TTL, 0) && deadline_passed(c, op, e);
}

/* entry_expired() in an operation that keeps its op in registers
 * (op_scalar): the out-of-line test gets a copy, and the clock it may have
 * read is copied back. */
static inline int op_entry_expired(larder *c, struct op *op, struct larder__entry *e)
{
	if (__builtin_expect(!(larder__entry_flags(e) & LARDER__ENTRY_TTL), 1))
		return 0;
	struct op copy = *op;
	int expired = deadline_passed(c, &copy, e);
	*op = copy;
	return expired;
}

/* The deadline now + ttl, saturated below UINT64_MAX (which means "none"). */
static inline uint64_t deadline_from(uint64_t now_ms, uint64_t ttl_ms)
{
	return ttl_ms >= UINT64_MAX - 1 - now_ms ? UINT64_MAX - 1 : now_ms + ttl_ms;
}

/*
 * Expire-after-access: a value read (get, get_with, get_batch) of the live
 * entry e, which has a deadline, moves that deadline to read time + the
 * default TTL, unless it is already within access_slack_ms of that (the
 * slack: a key read again and again stores once per slack, not per read).
 * Never moves a deadline earlier, and leaves "none" (a touch with
 * LARDER_TTL_NEVER) alone. The reader stores it itself, at the read, so an
 * entry read again before its deadline never expires, and a touch after
 * the read overrides it (ENTRY-E4 in core/entry.h). Out of line: only
 * after-access caches call it, for entries with a deadline. op is the read's
 * own, so a clock reading of its expiry check serves here too; without one,
 * upper_ms, the upper bound on the time its check used (clock_upper),
 * settles the common case, a deadline still within the slack, with no
 * clock read: the stored deadline is always read time + TTL of the clock
 * itself.
 */
static __attribute__((noinline)) void extend_on_read(larder *c, struct op *op,
						     struct larder__entry *e, uint64_t upper_ms)
{
	uint64_t ttl_ms = c->access_ttl_ms, slack_ms = c->access_slack_ms;
	/* Relaxed (ENTRY-E4): a deadline publishes nothing. */
	uint64_t old_ms = atomic_load_explicit(larder__entry_expire(e), LARDER__RELAXED);
	if (old_ms == UINT64_MAX)
		return;
	/* Within the slack of an upper bound on read time + TTL: then within it
	 * of the clock's too, and the clock would store nothing either. */
	if (!op->have_now && upper_ms != UINT64_MAX &&
	    old_ms >= deadline_from(upper_ms, ttl_ms) - slack_ms)
		return;
	uint64_t want_ms = deadline_from(op_now(c, op), ttl_ms);
	/* Relaxed CAS (ENTRY-E4): from the value read; a racing touch or reader that
	 * stored since makes it fail, and the loop judges their value anew
	 * ("none", UINT64_MAX, ends it: want_ms is below it). */
	while (old_ms < want_ms - slack_ms &&
	       !atomic_compare_exchange_weak_explicit(larder__entry_expire(e), &old_ms, want_ms,
						      LARDER__RELAXED, LARDER__RELAXED))
		;
}

/* A value read found e live: its after-access extension, if any (flags: e's
 * flags as the read loaded them). */
static inline void access_extend(larder *c, struct op *op, struct larder__entry *e,
				 unsigned flags)
{
	if (__builtin_expect((flags & LARDER__ENTRY_TTL) && c->access_ttl_ms, 0)) {
		struct op single = { .have_now = 0 };
		extend_on_read(c, op ? op : &single, e, clock_upper(c));
	}
}

/* The live entry for key, or NULL. Inside a read section; op may be NULL. */
static inline struct larder__entry *find_live_rcu(larder *c, struct op *op, uint64_t hash,
						  const void *key, size_t key_len)
{
	uint64_t w = larder__table_lookup_rcu(root_rcu(c, hash), hash, key, key_len);
	if (!w)
		return NULL;
	struct larder__entry *e = larder__slot_entry(w);
	return entry_expired(c, op, e) ? NULL : e;
}

/* Every hit is sampled for the policy; the sample count is the hit count.
 * The entry's accessed bit (ENTRY-E7) reaches the policy even when the sample is
 * late or lost. The one place where a read records a hit; flags is e's whole
 * flags byte as the read loaded it (larder__entry_flags_raw). */
static inline void count_hit(struct larder__handle *h, struct larder__entry *e, unsigned flags)
{
	larder__entry_mark_accessed_seen(e, flags);
	larder__events_hit(h, e);
}

static inline void count_miss(struct larder__handle *h)
{
	larder__stat_bump(&h->misses, 1);
}

/* ---- Reads ------------------------------------------------------------------ */

/*
 * Single-key reads start in one of two ways. The fast start, inline: the
 * arguments need no error, and the calling thread's state exists and last
 * served this cache, so its handle is a compare and a load away
 * (larder__thread_last_is). Anything else (an error to report, a thread's
 * first call, a thread that alternates between caches) takes the slow start,
 * out of line: the full checks and op_begin(). get_with and contains then run
 * one inline body (always_inline: one copy in each start), so each rule of a
 * read is written once.
 *
 * larder_get goes further, because every call it makes on its common path
 * costs it registers saved and restored: its fast path makes no call (a
 * value of 16 to 64 bytes is copied inline, copy_value, as a put copies it;
 * other sizes call memcpy). It takes keys of 8 to 16 bytes (inline hash and key
 * compare), asks only the home bucket (larder__table_lookup_home_rcu) and
 * hands an entry with a deadline that the TSC's bound on the time does not
 * settle inline (live_by_bound) to get_deadline_hit() (a tail call); the
 * home bucket's undecided cases (an overflowed key, a growing index) go on
 * in get_beyond_home() within the section; the rest starts over in
 * read_general(), the complete read, out of line (a key of another length,
 * an error, a first call). The hit itself (get_copy) is the same code in all.
 */
#define READ_BODY static inline __attribute__((always_inline))

/* The fast start's checks: NULLs, the key length, the thread's state. */
static inline int read_fast_ok(const larder *c, const void *key, size_t key_len,
			       const struct larder__thread *t)
{
	/* key_len - 1 wraps for 0: one compare for 1 <= key_len <= max. */
	return __builtin_expect(c && key && t && key_len - 1 < c->max_key_bytes, 1);
}

/* A hit: the length, the copy (the value's address first, before any store,
 * so the compiler keeps the key address the lookup computed), the sample.
 * flags: e's whole flags byte, loaded once by the caller for all of these. */
static __attribute__((noinline)) int get_unpack(larder *c, struct larder__handle *h,
						 struct larder__entry *e, unsigned flags,
						 void *buf, size_t buf_len, size_t *value_len);

/* The value's copy, inline for 16 to 64 bytes (defined with the writes). */
static inline __attribute__((always_inline)) void copy_value(unsigned char *dst, const void *src,
							    size_t len);

/* get_copy() of an entry known to be stored raw, whose value is at value. */
READ_BODY int get_copy_raw_at(struct larder__handle *h, struct larder__entry *e,
			      unsigned flags, const unsigned char *value, void *buf,
			      size_t buf_len, size_t *value_len)
{
	size_t len = e->value_len;
	*value_len = len;
	if (__builtin_expect(len > buf_len, 0))
		return LARDER_EBUFSIZE;
	count_hit(h, e, flags);
	copy_value(buf, value, len); /* copies nothing for 0: buf may be NULL */
	return LARDER_OK;
}

READ_BODY int get_copy_raw(struct larder__handle *h, struct larder__entry *e, unsigned flags,
			   void *buf, size_t buf_len, size_t *value_len)
{
	return get_copy_raw_at(h, e, flags, larder__entry_value_at(e, flags), buf, buf_len,
			       value_len);
}

READ_BODY int get_copy(larder *c, struct larder__handle *h, struct larder__entry *e,
		       unsigned flags, void *buf, size_t buf_len, size_t *value_len)
{
	if (__builtin_expect(flags & LARDER__ENTRY_COMPRESSED, 0))
		return get_unpack(c, h, e, flags, buf, buf_len, value_len);
	return get_copy_raw(h, e, flags, buf, buf_len, value_len);
}

/* get_copy() of a compressed entry: the same contract with the original
 * length, decompressed straight into the caller's buffer (COMPRESS-C3);
 * LARDER_ENOMEM when a zstd entry finds no decompression context. */
static __attribute__((noinline)) int get_unpack(larder *c, struct larder__handle *h,
						 struct larder__entry *e, unsigned flags,
						 void *buf, size_t buf_len, size_t *value_len)
{
	const unsigned char *stored = larder__entry_value(e);
	size_t len = larder__packed_len(stored);
	*value_len = len;
	if (len > buf_len)
		return LARDER_EBUFSIZE;
	if (larder__unpack(c, stored, e->value_len, buf) != 0)
		return LARDER_ENOMEM;
	count_hit(h, e, flags);
	return LARDER_OK;
}

/* larder_peek's copy: get_copy() without count_hit(). */
static int peek_copy(larder *c, struct larder__entry *e, void *buf, size_t buf_len,
		     size_t *value_len);

/* What read_general() does with the live entry it finds. */
enum read_mode {
	READ_GET,    /* larder_get: copy, count the hit (or the miss), extend */
	READ_PEEK,   /* larder_peek: copy; nothing counted, marked or extended */
	READ_ACCESS, /* larder_access: mark accessed and extend; no copy, nothing counted */
};

/* The complete read: errors, first calls, any key, any lookup, deadlines;
 * and larder_peek's and larder_access's lookups, which share its rules. */
static __attribute__((noinline)) int read_general(larder *c, const void *key, size_t key_len,
						  void *buf, size_t buf_len, size_t *value_len,
						  enum read_mode mode)
{
	struct op op;
	int rc = check_args(c, key, key_len, value_len && (buf || !buf_len));
	if (rc != LARDER_OK)
		return rc;
	if ((rc = op_begin(c, &op)) != LARDER_OK)
		return rc;
	uint64_t hash = larder__hash(c->seed, key, key_len);
	op_route(c, &op, hash);
	op_enter(&op);
	struct larder__entry *e = find_live_rcu(c, &op, hash, key, key_len);
	rc = LARDER_MISS;
	if (e && mode == READ_PEEK) {
		rc = peek_copy(c, e, buf, buf_len, value_len);
	} else if (e) {
		unsigned flags = larder__entry_flags_raw(e);
		if (mode == READ_ACCESS) {
			/* count_hit()'s mark without its sample: the sample is the hit count */
			larder__entry_mark_accessed_seen(e, flags);
			rc = LARDER_OK;
		} else {
			rc = get_copy(c, op.handle, e, flags, buf, buf_len, value_len);
		}
		if (rc == LARDER_OK) /* a too-small buffer read nothing */
			access_extend(c, &op, e, flags);
	}
	op_exit(&op);
	if (!e && mode == READ_GET)
		count_miss(op.handle);
	return rc;
}

/*
 * The rest of a fast-path get that found an entry with a deadline or a
 * compressed value (deadline_passed() says no for one without), out of
 * line (a tail call: six arguments, so the key's handle is passed and the
 * cache is found again through its shard).
 */
static __attribute__((noinline)) int get_access_hit(struct larder__handle *h,
						    struct larder__entry *e, void *buf,
						    size_t buf_len, size_t *value_len, uint64_t outer);

static __attribute__((noinline)) int get_deadline_hit(struct larder__handle *h,
						      struct larder__entry *e, void *buf,
						      size_t buf_len, size_t *value_len,
						      uint64_t outer)
{
	larder *c = h->shard->cache;
	if (__builtin_expect(c->access_ttl_ms != 0, 0))
		return get_access_hit(h, e, buf, buf_len, value_len, outer);
	struct larder__thread *t = larder__tls;
	int rc = deadline_passed(c, NULL, e) ? LARDER_MISS
					     : get_copy(c, h, e, larder__entry_flags_raw(e),
							buf, buf_len, value_len);
	larder__read_exit(&t->reader, outer);
	if (rc == LARDER_MISS)
		count_miss(h);
	return rc;
}

/* get_deadline_hit() in an expire-after-access cache: one bound on the time
 * (and one clock reading, if any) serves the expiry check and the extension. */
static __attribute__((noinline)) int get_access_hit(struct larder__handle *h,
						    struct larder__entry *e, void *buf,
						    size_t buf_len, size_t *value_len, uint64_t outer)
{
	larder *c = h->shard->cache;
	struct larder__thread *t = larder__tls;
	struct op op = { .have_now = 0 };
	int rc = LARDER_MISS;
	uint64_t upper_ms = clock_upper(c); /* one TSC read for both */
	if (!deadline_passed_below(c, &op, e, upper_ms)) {
		unsigned flags = larder__entry_flags_raw(e);
		rc = get_copy(c, h, e, flags, buf, buf_len, value_len);
		if (rc == LARDER_OK && (flags & LARDER__ENTRY_TTL))
			extend_on_read(c, &op, e, upper_ms);
	}
	larder__read_exit(&t->reader, outer);
	if (rc == LARDER_MISS)
		count_miss(h);
	return rc;
}

/*
 * The rest of a fast-path get whose key the home bucket alone could not
 * settle (displaced into later buckets, a home that moved, a tag collision),
 * out of line, still inside the caller's read section: the general lookup
 * with the hash already computed. At the index's fill of 4/5 about one key
 * in ten lives beyond its home bucket, so this must not start over.
 */
static __attribute__((noinline)) int get_beyond_home(larder *c, uint64_t hash, const void *key,
						     size_t key_len, void *buf, size_t buf_len,
						     size_t *value_len, uint64_t outer)
{
	struct larder__thread *t = larder__tls;
	unsigned k = larder__shard_index(c, hash);
	struct larder__handle *h = t->last_handle[k];
	uint64_t w = larder__table_lookup_slow_rcu(root_at(c, k), hash, key, key_len);
	struct larder__entry *e = w ? larder__slot_entry(w) : NULL;
	if (e && entry_expired(c, NULL, e))
		e = NULL;
	int rc = LARDER_MISS;
	if (e) {
		unsigned flags = larder__entry_flags_raw(e);
		rc = get_copy(c, h, e, flags, buf, buf_len, value_len);
		if (rc == LARDER_OK)
			access_extend(c, NULL, e, flags);
	}
	larder__read_exit(&t->reader, outer);
	if (!e)
		count_miss(h);
	return rc;
}

int larder_get(larder *c, const void *key, size_t key_len, void *buf, size_t buf_len,
	       size_t *value_len)
{
	struct larder__thread *t = larder__tls;
	if (__builtin_expect(!t || !c || !key || !value_len || (!buf && buf_len), 0) ||
	    __builtin_expect(key_len - 8 > 8 || key_len > c->max_key_bytes, 0) ||
	    !larder__thread_last_is(t, c->id))
		return read_general(c, key, key_len, buf, buf_len, value_len, READ_GET);
	uint64_t hash = larder__hash(c->seed, key, key_len);
	unsigned k = larder__shard_index(c, hash);
	struct larder__handle *h = t->last_handle[k];
	struct larder__reader *r = &t->reader;
	uint64_t outer = larder__read_enter(r);
	uint64_t w = larder__table_lookup_home_rcu(root_at(c, k), hash, key, key_len);
	if (__builtin_expect(w == LARDER__LOOKUP_AGAIN, 0))
		return get_beyond_home(c, hash, key, key_len, buf, buf_len, value_len, outer);
	int rc = LARDER_MISS;
	if (__builtin_expect(w != 0, 1)) {
		struct larder__entry *e = larder__slot_entry(w);
		unsigned flags = larder__entry_flags_raw(e);
		/* One test sends both kinds of entries that need more than a
		 * copy (a deadline, a compressed value) out of line, but for a
		 * deadline the TSC's bound on the time settles inline. The
		 * same test tells the key's offset, a constant without a
		 * deadline: gcc does not derive it from the flags' test. */
		const unsigned char *value = larder__entry_value_at(e, 0);
		if (__builtin_expect(flags & (LARDER__ENTRY_TTL | LARDER__ENTRY_COMPRESSED), 0)) {
			if ((flags & LARDER__ENTRY_COMPRESSED) || !live_by_bound(c, e))
				return get_deadline_hit(h, e, buf, buf_len, value_len, outer);
			value = larder__entry_value_at(e, LARDER__ENTRY_TTL);
		}
		rc = get_copy_raw_at(h, e, flags, value, buf, buf_len, value_len);
	}
	larder__read_exit(r, outer);
	if (rc == LARDER_MISS)
		count_miss(h);
	return rc;
}

/* A get_with hit on a compressed entry: the callback gets the value
 * decompressed into the thread's scratch buffer (COMPRESS-C3), or is not called
 * when that buffer cannot be had. Inside the caller's read section. */
static __attribute__((noinline)) int get_with_unpack(larder *c, struct larder__handle *h,
						      struct larder__entry *e, unsigned flags,
						      larder_read_fn *fn, void *ctx)
{
	unsigned char *scratch;
	const unsigned char *plain = larder__entry_plain_rcu(c, e, flags, &scratch);
	if (!plain)
		return LARDER_ENOMEM;
	count_hit(h, e, flags);
	access_extend(c, NULL, e, flags);
	fn(ctx, plain, larder__packed_len(larder__entry_value(e)));
	larder__scratch_give(scratch);
	return LARDER_OK;
}

READ_BODY int get_with_body(larder *c, struct larder__thread *t,
			    struct larder__handle *const *handles, const void *key, size_t key_len,
			    larder_read_fn *fn, void *ctx)
{
	uint64_t hash = larder__hash(c->seed, key, key_len);
	struct larder__handle *h = handles[larder__shard_index(c, hash)];
	uint64_t outer = larder__read_enter(&t->reader);
	struct larder__entry *e = find_live_rcu(c, NULL, hash, key, key_len);
	int rc = LARDER_MISS;
	if (__builtin_expect(e != NULL, 1)) {
		unsigned flags = larder__entry_flags_raw(e);
		if (__builtin_expect(flags & LARDER__ENTRY_COMPRESSED, 0)) {
			rc = get_with_unpack(c, h, e, flags, fn, ctx);
		} else {
			count_hit(h, e, flags);
			access_extend(c, NULL, e, flags);
			fn(ctx, larder__entry_value(e), e->value_len);
			rc = LARDER_OK;
		}
	}
	larder__read_exit(&t->reader, outer);
	if (!e)
		count_miss(h);
	return rc;
}

static __attribute__((noinline, cold)) int get_with_slow(larder *c, const void *key,
							  size_t key_len, larder_read_fn *fn,
							  void *ctx)
{
	struct op op;
	int rc = check_args(c, key, key_len, fn != NULL);
	if (rc != LARDER_OK)
		return rc;
	if ((rc = op_begin(c, &op)) != LARDER_OK)
		return rc;
	return get_with_body(c, op.thread, op.handles, key, key_len, fn, ctx);
}

int larder_get_with(larder *c, const void *key, size_t key_len, larder_read_fn *fn, void *ctx)
{
	struct larder__thread *t = larder__tls;
	if (read_fast_ok(c, key, key_len, t) && __builtin_expect(fn != NULL, 1) &&
	    larder__thread_last_is(t, c->id))
		return get_with_body(c, t, t->last_handle, key, key_len, fn, ctx);
	return get_with_slow(c, key, key_len, fn, ctx);
}

#define BATCH_STRIDE 16

long larder_get_batch(larder *c, size_t count, const void *const keys[], const size_t key_lens[],
		      larder_batch_fn *fn, void *ctx)
{
	struct op op;
	if (!c || !fn || !keys || !key_lens)
		return LARDER_EINVAL;
	int rc = op_begin(c, &op);
	if (rc != LARDER_OK)
		return rc;
	long found = 0;
	uint64_t hash[BATCH_STRIDE];
	/* Each key's index and home as its first pass saw them, for the
	 * prefetches of the next two: hints, so a root swapped meanwhile (a
	 * clear, a growth) costs only a useless prefetch, and the old table
	 * stays mapped while this read section lasts. The lookup itself
	 * loads the root again. */
	const struct larder__table *table[BATCH_STRIDE];
	uint64_t home[BATCH_STRIDE];
	size_t valid[BATCH_STRIDE]; /* indexes in the stride of the keys that pass check_key */
	op_enter(&op);
	for (size_t base = 0; base < count; base += BATCH_STRIDE) {
		size_t n = count - base < BATCH_STRIDE ? count - base : BATCH_STRIDE, nvalid = 0;
		for (size_t i = 0; i < n; i++) {
			size_t k = base + i;
			if (check_key(c, keys[k], key_lens[k]) != LARDER_OK)
				continue;
			valid[nvalid++] = i;
			hash[i] = larder__hash(c->seed, keys[k], key_lens[k]);
			table[i] = root_rcu(c, hash[i]);
			home[i] = larder__table_prefetch(table[i], hash[i]);
		}
		/* A second pass, so that the bucket loads of the whole stride
		 * overlap instead of stalling one after another; then the same
		 * for the keys that may live in the bucket after their home. */
		size_t beyond[BATCH_STRIDE], nbeyond = 0;
		for (size_t v = 0; v < nvalid; v++) {
			size_t i = valid[v];
			if (larder__table_prefetch_entry(table[i], home[i], hash[i]))
				beyond[nbeyond++] = i;
		}
		for (size_t v = 0; v < nbeyond; v++) {
			size_t i = beyond[v];
			larder__table_prefetch_beyond(table[i], home[i], hash[i]);
		}
		for (size_t v = 0; v < nvalid; v++) {
			size_t i = valid[v], k = base + i;
			op_route(c, &op, hash[i]);
			struct larder__entry *e = find_live_rcu(c, &op, hash[i], keys[k], key_lens[k]);
			if (!e) {
				count_miss(op.handle);
				continue;
			}
			unsigned flags = larder__entry_flags_raw(e);
			/* A value stored as it is goes to fn where it lies; only a
			 * compressed one takes the out-of-line unpacking into the
			 * thread's scratch (docs/node.md: the instructions saved). */
			if (__builtin_expect(!(flags & LARDER__ENTRY_COMPRESSED), 1)) {
				count_hit(op.handle, e, flags);
				access_extend(c, &op, e, flags);
				fn(ctx, k, larder__entry_value(e), e->value_len);
				found++;
				continue;
			}
			unsigned char *scratch;
			const unsigned char *plain = larder__entry_plain_rcu(c, e, flags, &scratch);
			if (!plain) {
				found = LARDER_ENOMEM;
				goto out;
			}
			count_hit(op.handle, e, flags);
			access_extend(c, &op, e, flags);
			fn(ctx, k, plain, larder__entry_plain_len(e, flags));
			larder__scratch_give(scratch);
			found++;
		}
	}
out:
	op_exit(&op);
	return found;
}

static int peek_copy(larder *c, struct larder__entry *e, void *buf, size_t buf_len,
		     size_t *value_len)
{
	unsigned flags = larder__entry_flags_raw(e);
	const unsigned char *stored = larder__entry_value(e);
	size_t len = flags & LARDER__ENTRY_COMPRESSED ? larder__packed_len(stored) : e->value_len;
	*value_len = len;
	if (len > buf_len)
		return LARDER_EBUFSIZE;
	if (flags & LARDER__ENTRY_COMPRESSED) {
		if (larder__unpack(c, stored, e->value_len, buf) != 0)
			return LARDER_ENOMEM; /* as get_unpack() */
	} else if (len) /* buf may be NULL for an empty value */
		memcpy(buf, stored, len);
	return LARDER_OK;
}

/* Out of line from the fast paths, so that larder_get's fast path is unchanged. */
int larder_peek(larder *c, const void *key, size_t key_len, void *buf, size_t buf_len,
		size_t *value_len)
{
	return read_general(c, key, key_len, buf, buf_len, value_len, READ_PEEK);
}

/* Out of line from the fast paths too. */
int larder_access(larder *c, const void *key, size_t key_len)
{
	size_t unused;
	return read_general(c, key, key_len, NULL, 0, &unused, READ_ACCESS);
}

READ_BODY int contains_body(larder *c, struct larder__thread *t, const void *key,
			    size_t key_len)
{
	uint64_t hash = larder__hash(c->seed, key, key_len);
	uint64_t outer = larder__read_enter(&t->reader);
	struct larder__entry *e = find_live_rcu(c, NULL, hash, key, key_len);
	larder__read_exit(&t->reader, outer);
	return e ? LARDER_OK : LARDER_MISS;
}

static __attribute__((noinline, cold)) int contains_slow(larder *c, const void *key,
							  size_t key_len)
{
	struct op op;
	int rc = check_key(c, key, key_len);
	if (rc != LARDER_OK || (rc = op_begin(c, &op)) != LARDER_OK)
		return rc;
	return contains_body(c, op.thread, key, key_len);
}

int larder_contains(larder *c, const void *key, size_t key_len)
{
	struct larder__thread *t = larder__tls;
	if (read_fast_ok(c, key, key_len, t) && larder__thread_last_is(t, c->id))
		return contains_body(c, t, key, key_len);
	return contains_slow(c, key, key_len);
}

int larder_ttl_remaining(larder *c, const void *key, size_t key_len, uint64_t *ttl_ms)
{
	struct op op;
	int rc = check_args(c, key, key_len, ttl_ms != NULL);
	if (rc != LARDER_OK)
		return rc;
	if ((rc = op_begin(c, &op)) != LARDER_OK)
		return rc;
	uint64_t hash = larder__hash(c->seed, key, key_len);
	op_enter(&op);
	struct larder__entry *e = find_live_rcu(c, &op, hash, key, key_len);
	if (e) {
		/* Read again: a touch may have moved the deadline since the
		 * lookup judged it (by this call's one clock reading); one
		 * moved to or before that reading is expired. */
		uint64_t deadline_ms = larder__entry_deadline(e);
		if (deadline_ms == UINT64_MAX)
			*ttl_ms = LARDER_TTL_NEVER;
		else if (op_now(c, &op) < deadline_ms)
			*ttl_ms = deadline_ms - op_now(c, &op);
		else
			e = NULL;
	}
	op_exit(&op);
	return e ? LARDER_OK : LARDER_MISS;
}

/* ---- Room for writers ------------------------------------------------------- */

/* Below this much budget, memory is short: the writer that takes a chunk
 * wakes the maintainer, whose lazy sleep would otherwise let retired
 * memory wait (maint/maintainer.c), and the maintainer sleeps no more than
 * a batching window while it stays short. */
int larder__budget_short(const larder *c, int64_t budget)
{
	/* Relaxed: a setting; a stale one only moves when memory counts as short. */
	return budget < (int64_t)(larder__overshoot_bound(
					  atomic_load_explicit(&c->capacity, LARDER__RELAXED)) /
				  2);
}

/* CACHE-B2: takes charge bytes of credit, topping up from the budget in chunks. */
static int take_credit(larder *c, struct larder__handle *h, size_t charge)
{
	if (h->credit >= (int64_t)charge) {
		h->credit -= (int64_t)charge;
		return 1;
	}
	int64_t need = (int64_t)charge - h->credit;
	int64_t chunk = need > CREDIT_CHUNK ? need : CREDIT_CHUNK;
	/* Relaxed: the budget is a count; memory itself is ordered by the slab. */
	int64_t b = atomic_load_explicit(&c->budget, LARDER__RELAXED);
	while (b >= need) {
		int64_t take = b >= chunk ? chunk : need;
		if (atomic_compare_exchange_weak_explicit(&c->budget, &b, b - take, LARDER__RELAXED,
							  LARDER__RELAXED)) { /* CACHE-B2 */
			h->credit += take - (int64_t)charge;
			if (larder__budget_short(c, b - take))
				larder__maint_wake_all(c);
			return 1;
		}
	}
	return 0;
}

/*
 * What a write did not use goes back to its thread's credit; past
 * CREDIT_CHUNK, the most take_credit() leaves there, it goes back to the
 * budget (CACHE-B1: from the credit to the budget, as handle_orphan() does).
 * Kept, it was spent for every other thread, and for this one's writes on
 * other shards, though nothing used it: after conditional writes of large
 * values that failed, or a load of compressed values (bulk_credit_return),
 * and a capacity cut, writes failed with LARDER_EBUSY with almost nothing
 * stored (test_contracts_api.c, test_unused_credit). Not inside a bulk
 * writer's block, whose top-up covers the block's later records: it trims
 * at its end. Relaxed, as in take_credit().
 */
static inline void credit_trim(larder *c, struct larder__handle *h)
{
	if (__builtin_expect(h->credit > CREDIT_CHUNK, 0)) {
		atomic_fetch_add_explicit(&c->budget, h->credit - CREDIT_CHUNK, LARDER__RELAXED);
		h->credit = CREDIT_CHUNK;
	}
}

static void want_bytes(larder *c, uint64_t bytes)
{
	uint64_t w = atomic_load_explicit(&c->wanted, LARDER__RELAXED); /* a hint */
	while (w < bytes && !atomic_compare_exchange_weak_explicit(&c->wanted, &w, bytes,
								   LARDER__RELAXED, LARDER__RELAXED))
		;
}

/*
 * What a writer may wait for (CACHE-B3), and the EBUSY counter of each:
 *   WAIT_MEMORY: byte credit, which comes back only after grace periods, so
 *     never from inside a read section (it could be the reader the grace
 *     period waits for), at most write_wait_ms (busy_memory);
 *   WAIT_EVENTS, WAIT_INDEX: room for an event (a free ring slot; a full
 *     ring spills first, up to LARDER__SPILL_WRITER_MAX unread events, so
 *     a writer does not wait for a maintainer merely waiting for a CPU:
 *     spill_room) or a grown index, which the maintainer provides without
 *     waiting for anyone: the writer waits as long as the maintainer
 *     works, however slowly (a long growth, a machine that gives it no
 *     CPU), and gives up only when the maintainer has been inside one
 *     removal listener call for MAINT_WAIT_MS, the one thing that can keep
 *     it from ever getting there (busy_events, busy_index). So the outcome
 *     does not depend on scheduling.
 * A maintainer thread (a removal listener's write, into any cache) waits for
 * nothing: were it to wait for another cache's maintainer while that one
 * waits for it (listeners writing into each other's caches), both would
 * stall. So maintainers never wait, and every wait above ends when a
 * maintainer that is not stuck in a listener finishes its pass. Instead, a
 * full event ring spills up to LARDER__SPILL_MAX (spill_room), an insert
 * probes the whole index rather than wait for a growth (write_common), and
 * memory or a full index fails at once with EBUSY.
 */
enum wait_kind { WAIT_MEMORY, WAIT_EVENTS, WAIT_INDEX };
#define MAINT_WAIT_MS 1000u

/* One wait of a writer: its deadline, and (events, index) the maintainer's
 * listener call count when the current stretch of waiting began. */
struct wait_state {
	uint64_t deadline_ns; /* 0: not begun */
	uint64_t listener_mark;
};

static void count_busy(struct larder__handle *h, enum wait_kind kind)
{
	larder__stat_bump(&h->write_busy, 1);
	larder__stat_bump(kind == WAIT_MEMORY   ? &h->busy_memory
			  : kind == WAIT_EVENTS ? &h->busy_events
						: &h->busy_index,
			  1);
}

static uint64_t stuck_ms(larder *c)
{
	return atomic_load_explicit(&c->stuck_ms, LARDER__RELAXED); /* a setting */
}

void larder__test_stuck_ms(larder *c, uint64_t ms)
{
	atomic_store_explicit(&c->stuck_ms, ms, LARDER__RELAXED); /* a setting */
}

/* Relaxed: compared only (core/shard.h); a stale value only extends a wait. */
static uint64_t listener_calls(struct larder__shard *s)
{
	return atomic_load_explicit(&s->listener_calls, LARDER__RELAXED);
}

/* Waits until a maintainer finishes a pass (room_seq moves past seq) or
 * the wait is over: for memory, any shard's (each gives bytes back to the
 * one budget); for events or the index, shard s's. Returns LARDER_OK to
 * retry, or LARDER_EBUSY. */
static int wait_pass(larder *c, struct larder__shard *s, struct op *op, enum wait_kind kind,
		     struct wait_state *w, uint32_t seq)
{
	struct larder__handle *h = op->handle;
	uint64_t now_ns = larder__monotonic_ns();
	if (!w->deadline_ns) {
		uint64_t ms = kind == WAIT_MEMORY ? c->write_wait_ms : stuck_ms(c);
		int allowed = !op->thread->maintainer &&
			      (kind != WAIT_MEMORY || !larder__read_active(&op->thread->reader));
		if (!allowed || ms == 0) {
			count_busy(h, kind);
			return LARDER_EBUSY;
		}
		larder__stat_bump(kind == WAIT_MEMORY ? &h->write_waits : &h->maint_waits, 1);
		w->deadline_ns = now_ns + ms * 1000000u;
		w->listener_mark = listener_calls(s);
	} else if (now_ns >= w->deadline_ns) {
		uint64_t calls = listener_calls(s);
		if (kind == WAIT_MEMORY || (calls == w->listener_mark && (calls & 1))) {
			count_busy(h, kind);
			return LARDER_EBUSY;
		}
		/* The maintainer is working, or in another listener call than
		 * a second ago: wait on. */
		w->deadline_ns = now_ns + stuck_ms(c) * 1000000u;
		w->listener_mark = calls;
	}
	/* Relaxed: a count, a hint (larder__room_wait sets the wake's flag). */
	atomic_fetch_add_explicit(&c->room_waiters, 1, LARDER__RELAXED);
	if (kind == WAIT_MEMORY)
		larder__maint_wake_all(c);
	else
		larder__maint_wake(s, NULL, 0);
	uint64_t left = w->deadline_ns - now_ns;
	larder__room_wait(c, seq, left < WAIT_SLICE_NS ? left : WAIT_SLICE_NS);
	atomic_fetch_sub_explicit(&c->room_waiters, 1, LARDER__RELAXED); /* a count */
	return LARDER_OK;
}

/* spill_room(): the writer waited for a pass and tries again. */
#define SPILL_RETRY 1

/* The thread's ring is full: room in its spill instead (maint/events.h,
 * EV-V4, EV-V6). A writer that may wait spills up to
 * LARDER__SPILL_WRITER_MAX unread events; beyond that (or without memory
 * for a chunk) it waits for a pass of the maintainer and returns
 * SPILL_RETRY. A maintainer thread spills up to LARDER__SPILL_MAX and then
 * fails. Otherwise LARDER_OK: room in the spill. */
static int spill_room(larder *c, struct op *op, struct wait_state *w, uint32_t seq)
{
	int maintainer = op->thread->maintainer;
	int rc = larder__events_spill_room(
		op->handle, maintainer ? LARDER__SPILL_MAX : LARDER__SPILL_WRITER_MAX);
	if (rc == 0)
		return LARDER_OK;
	if (!maintainer) {
		rc = wait_pass(c, op->handle->shard, op, WAIT_EVENTS, w, seq);
		return rc == LARDER_OK ? SPILL_RETRY : rc;
	}
	if (rc == -1)
		return LARDER_ENOMEM;
	count_busy(op->handle, WAIT_EVENTS);
	return LARDER_EBUSY;
}

/* reserve_room() when the ring is full or the credit short: spills or
 * waits, tops the credit up. */
static __attribute__((noinline)) int reserve_room_slow(larder *c, struct op *op, size_t charge)
{
	struct wait_state ring_wait = { 0, 0 }, memory_wait = { 0, 0 };
	for (;;) {
		/* A-ROOM: acquire, pairs with the release bump in wake_writers(). */
		uint32_t seq = atomic_load_explicit(&c->room_seq, LARDER__ACQUIRE);
		int rc;
		if (!larder__events_has_room(op->handle) &&
		    (rc = spill_room(c, op, &ring_wait, seq)) != LARDER_OK) {
			if (rc == SPILL_RETRY)
				continue;
			return rc;
		}
		if (take_credit(c, op->handle, charge))
			return LARDER_OK;
		want_bytes(c, charge);
		if ((rc = wait_pass(c, op->handle->shard, op, WAIT_MEMORY, &memory_wait, seq)) !=
		    LARDER_OK)
			return rc;
	}
}

/* Room for one write: a free event slot (or spill slot), then `charge`
 * bytes of credit. Inline for the common cases, credit in hand and a free
 * ring slot, or a full ring and a free place in the spill's chunk (a
 * maintainer that has not run for a while, spill_room's commonest
 * outcome), which need no ordering: nothing is waited for. */
static inline int reserve_room(larder *c, struct op *op, size_t charge)
{
	struct larder__handle *h = op->handle;
	if (__builtin_expect(h->credit >= (int64_t)charge, 1) &&
	    __builtin_expect(larder__events_has_room(h) || larder__events_spill_ready(h), 1)) {
		h->credit -= (int64_t)charge; /* CACHE-B2: the credit is the owner's (HANDLE-H1) */
		return LARDER_OK;
	}
	struct op copy = *op; /* op_scalar: the call gets a copy */
	return reserve_room_slow(c, &copy, charge);
}

/* ---- Writes ------------------------------------------------------------------ */

/* W_PUT_PLAIN: a put whose caller found it stored raw without a deadline,
 * with a value (not NULL) shorter than write_slow_from, so within
 * max_value_bytes (larder_put's common case), which write_common then need
 * not test. */
enum write_mode { W_PUT, W_IF_ABSENT, W_REPLACE, W_IF_EQUALS, W_PUT_PLAIN };

/* The lifetime a write asks for, resolved against the cache default. */
static uint64_t resolve_ttl(const larder *c, uint64_t ttl_ms)
{
	return ttl_ms == LARDER_TTL_DEFAULT ? c->default_ttl_ms : ttl_ms;
}

/* An entry's immutable flags from its resolved lifetime (ENTRY-E1). */
static inline unsigned ttl_flags(uint64_t ttl_ms)
{
	return ttl_ms == LARDER_TTL_NEVER ? 0 : LARDER__ENTRY_TTL;
}

/* The size class an event names for an entry of `bytes` (maint/handle.h). */
static inline unsigned event_class(size_t bytes)
{
	return bytes <= LARDER__SLAB_MAX_SLOT ? larder__sizeclass_of(bytes) : LARDER__EV_NO_CLASS;
}

static uint64_t deadline_after(larder *c, struct op *op, uint64_t ttl_ms)
{
	/* Relaxed, stored once: larder_clear() reads the clock from then on. */
	if (__builtin_expect(!atomic_load_explicit(&c->deadlines_seen, LARDER__RELAXED), 0))
		atomic_store_explicit(&c->deadlines_seen, 1, LARDER__RELAXED);
	return deadline_from(op_now(c, op), ttl_ms);
}

/* A value of 16 to 64 bytes (the common size) is copied as two or four
 * 16-byte words that may overlap, without a call: libc's memcpy and the
 * call's setup cost 23 of the writer's instructions per put of 64 bytes,
 * this about 14 (docs/bench.md). Other sizes go to memcpy. */
static inline __attribute__((always_inline)) void copy_value(unsigned char *dst, const void *src,
							    size_t len)
{
	const unsigned char *s = src;
	if (len >= 16 && len <= 64) {
		unsigned char w[4][16];
		memcpy(w[0], s, 16);
		memcpy(w[1], s + len - 16, 16);
		if (len > 32) {
			memcpy(w[2], s + 16, 16);
			memcpy(w[3], s + len - 32, 16);
			memcpy(dst + 16, w[2], 16);
			memcpy(dst + len - 32, w[3], 16);
		}
		memcpy(dst, w[0], 16);
		memcpy(dst + len - 16, w[1], 16);
	} else if (len) {
		memcpy(dst, s, len);
	}
}

/* Writes a fresh slot's entry (its id: id): the header, the deadline, the
 * key and the value. Inlined: the sizes are the caller's. */
static inline __attribute__((always_inline)) void
entry_fill(struct larder__entry *e, uint32_t id, const void *key, size_t key_len,
	   const void *value, size_t value_len, unsigned flags, uint64_t deadline_ms)
{
	e->prev = 0;
	e->next = id; /* ENTRY-E6 */
	e->value_len = (uint32_t)value_len;
	e->key_len = (uint16_t)key_len;
	larder__entry_init_flags(e, flags);
	e->mbits = 0;
	if (flags & LARDER__ENTRY_TTL) { /* not yet published: relaxed */
		atomic_store_explicit(larder__entry_expire(e), deadline_ms, LARDER__RELAXED);
		*larder__entry_wheel(e) = (struct larder__wheel_link){0, 0}; /* ENTRY-E3 */
	}
	/* The key's place from the flags in hand, not read back from e. A key
	 * of 8 to 16 bytes (the common size) is copied as two words that may
	 * overlap, as larder__entry_key_equals compares it, without a call. */
	unsigned char *k = (unsigned char *)e + larder__entry_prefix_bytes(flags);
	if (key_len >= 8 && key_len <= 16) {
		uint64_t k0, k1;
		memcpy(&k0, key, 8);
		memcpy(&k1, (const unsigned char *)key + key_len - 8, 8);
		memcpy(k, &k0, 8);
		memcpy(k + key_len - 8, &k1, 8);
	} else {
		memcpy(k, key, key_len);
	}
	copy_value(k + key_len, value, value_len);
}

/* Builds an entry of `bytes` (charging `charge`) in a fresh slot; NULL when
 * out of memory (credit kept). Inlined: the sizes are the caller's. */
static inline __attribute__((always_inline)) struct larder__entry *
entry_build(struct larder__shard *s, struct op *op, const void *key, size_t key_len,
	    const void *value, size_t value_len, unsigned flags, size_t bytes, size_t charge,
	    uint64_t deadline_ms)
{
	uint32_t id;
	struct larder__entry *e = larder__slab_alloc_id(&s->slab, &op->handle->cursor, bytes, &id);
	if (!e)
		return NULL;
	/* Counted from allocation, so a free never precedes its count. */
	larder__stat_bump(&op->handle->alloc_bytes, charge);
	entry_fill(e, id, key, key_len, value, value_len, flags, deadline_ms);
	return e;
}

static void entry_unbuild(struct larder__shard *s, struct op *op, struct larder__entry *e,
			  size_t charge)
{
	larder__slab_unalloc(&s->slab, &op->handle->cursor, e, larder__entry_size(e));
	larder__stat_bump(&op->handle->alloc_bytes, (uint64_t)0 - charge);
	op->handle->credit += (int64_t)charge;
}

/* The *_if_equals comparison, against the original bytes of a compressed
 * value (COMPRESS-C3). LARDER_OK, LARDER_MISMATCH, or LARDER_ENOMEM when the
 * decompression buffer could not be had. Under the key's bucket lock. */
static int value_check(const larder *c, struct larder__entry *e, const void *v, size_t len)
{
	int eq = larder__entry_value_equals(c, e, larder__entry_flags(e), v, len);
	return eq < 0 ? LARDER_ENOMEM : eq ? LARDER_OK : LARDER_MISMATCH;
}

/*
 * A value at least compress_min long, compressed into a scratch buffer of
 * the calling thread, which the caller gives back once the entry is built:
 * *value, *value_len and *flags then describe the stored form. NULL (and
 * nothing changed) when it is stored raw: too short, too little saving
 * (COMPRESS-C1), or no memory for the buffer (a write never fails for compression).
 */
static unsigned char *pack_value(larder *c, const void **value, size_t *value_len,
				 unsigned *flags)
{
	if (!c->compress_min || *value_len < c->compress_min)
		return NULL;
	size_t room = larder__pack_room(c, *value_len);
	if (!room)
		return NULL;
	unsigned char *buf = larder__scratch_take(room);
	if (!buf)
		return NULL;
	size_t n = larder__pack(c, *value, *value_len, buf, room);
	if (!n) {
		larder__scratch_give(buf);
		return NULL;
	}
	*value = buf;
	*value_len = n;
	*flags |= LARDER__ENTRY_COMPRESSED;
	return buf;
}

/* After a write posted its event (or a bulk writer its batch's, `writes`
 * of them): count them and nudge the maintainer, who must schedule the
 * earliest new deadline in time (WAKE-W4). */
static void write_done(struct larder__shard *s, struct op *op, uint64_t writes,
		       uint64_t deadline_ms)
{
	larder__stat_bump(&op->handle->writes, writes);
	larder__maint_wake(s, op->handle, deadline_ms);
}

/*
 * A bulk writer's batch (larder__put_batch): the operation is begun once,
 * the writes' events go into one block posted as one event (EV-V7 in
 * maint/events.h; batch NULL: each write posts its own, as without memory
 * for a block the writes still go on), and write_done() runs once, after
 * the post, with the batch's earliest deadline. Waking after the post
 * rather than after each write keeps WAKE-W1/WAKE-W2 (a wake follows every
 * post it covers); a ring that fills meanwhile wakes the maintainer from
 * reserve_room_slow as before. outer: the read section the block's writes
 * and its post share.
 */
struct bulk {
	struct op op;
	uint64_t writes;
	uint64_t first_deadline_ms;
	struct larder__event_batch *batch;
	uint64_t outer;
};

/* Posts a write's event: to the thread's ring, or into a bulk writer's
 * block (EV-V7). Inlined: without a bulk writer it is the ring's post. */
static inline __attribute__((always_inline)) void
write_post(struct op *op, struct bulk *bulk, enum larder__event_kind kind, uint32_t cause,
	   unsigned sclass, void *a, void *b, uint64_t hash)
{
	if (bulk && bulk->batch) {
		bulk->batch->ev[bulk->batch->n++] = (struct larder__event){
			(uint8_t)kind, (uint8_t)cause, (uint8_t)sclass, 0, a, b, hash };
		return;
	}
	larder__events_post(op->handle, kind, cause, sclass, a, b, hash);
}

/* write_index(): no free slot within reach of the key's home. Neither a
 * status nor an error of larder.h. */
#define WRITE_NO_SLOT INT_MIN

/* A write's index step, in op's read section: e takes the key's slot, or
 * one is found for it, as mode allows (LARDER_OK, and the event posted),
 * or the mode's failure, or WRITE_NO_SLOT with *full (unless full is
 * NULL) the table to grow. Inlined: mode and bulk are the caller's
 * constants. */
static inline __attribute__((always_inline)) int
write_index(larder *c, struct larder__shard *s, struct op *op, struct bulk *bulk,
	    enum write_mode mode, const void *key, size_t key_len, const void *expected,
	    size_t expected_len, uint64_t hash, struct larder__entry *e, unsigned sclass,
	    struct larder__table **full)
{
	struct larder__table *t, *root = shard_root(s);
	struct larder__bucket *home = larder__table_lock(root, hash, &t);
	larder__atomic_u64 *slot = larder__table_find_home_locked(t, home, hash, key, key_len);
	/* Relaxed: we hold the home lock, so the slot is stable (TABLE-X2). */
	struct larder__entry *old =
		slot ? larder__slot_entry(atomic_load_explicit(slot, LARDER__RELAXED)) : NULL;
	int live = old && !op_entry_expired(c, op, old);
	int rc = LARDER_OK;
	if (mode == W_IF_ABSENT && live)
		rc = LARDER_EXISTS;
	else if ((mode == W_REPLACE || mode == W_IF_EQUALS) && !live)
		rc = LARDER_MISS;
	else if (mode == W_IF_EQUALS)
		rc = value_check(c, old, expected, expected_len);
	if (rc != LARDER_OK) {
		larder__table_unlock(home);
		return rc;
	}
	if (slot) {
		larder__table_set_locked(slot, larder__slot_word(hash, e));
		larder__table_unlock(home);
		write_post(op, bulk, LARDER__EV_REPLACE,
			   live ? LARDER_CAUSE_REPLACED : LARDER_CAUSE_EXPIRED, sclass, old, e, hash);
		return LARDER_OK;
	}
	/* TABLE-X5: no new key while the index shrinks; we wait for its end,
	 * and the ask names root, which the finished shrink replaces, so it
	 * hurries this shrink and asks for no growth after it. A maintainer
	 * thread, which may not wait, adds its key while the target's room for
	 * such keys lasts, and then fails (LARDER_EBUSY, from wait_pass). */
	if (__builtin_expect(larder__table_shrinking(root), 0) &&
	    (!op->thread->maintainer || !larder__table_room_take(root))) {
		larder__table_unlock(home);
		if (full)
			*full = root;
		return WRITE_NO_SLOT;
	}
	/* TABLE-X6: our home moved into a growth's target (of root, or of a
	 * table after root when root went stale since we loaded it), which
	 * takes new keys only while the room its old table leaves lasts; then
	 * we wait for the growth's end, which the ask hurries. */
	if (__builtin_expect(t != root, 0) &&
	    !larder__table_room_take(larder__table_before(root, t))) {
		larder__table_unlock(home);
		if (full)
			*full = root;
		return WRITE_NO_SLOT;
	}
	/* A maintainer thread may not wait for a growth (wait_pass): it
	 * probes as far as it takes, which only costs lookups of these
	 * homes longer probes until the index grows (TABLE-L2 in index/table.h). */
	if (larder__table_insert_locked(t, hash, larder__slot_word(hash, e),
					op->thread->maintainer ? SIZE_MAX : LARDER__PROBE_LIMIT) == 0) {
		larder__table_unlock(home);
		write_post(op, bulk, LARDER__EV_INSERT, 0, sclass, NULL, e, hash);
		return LARDER_OK;
	}
	larder__table_unlock(home);
	if (full)
		*full = t;
	return WRITE_NO_SLOT;
}

/* write_index() found no free slot: the maintainer must grow the index,
 * and we wait for its passes (WAIT_INDEX). Each try is made after room_seq
 * was loaded (A-ROOM: a pass that ends after the load wakes the wait), so
 * the first try repeats the caller's, which needed no load. In and out of
 * op's read section, as the caller. */
static __attribute__((noinline)) int
write_index_wait(larder *c, struct larder__shard *s, struct op *op, struct bulk *bulk,
		 enum write_mode mode, const void *key, size_t key_len, const void *expected,
		 size_t expected_len, uint64_t hash, struct larder__entry *e, unsigned sclass)
{
	struct wait_state index_wait = { 0, 0 };
	struct larder__table *full = NULL;
	for (;;) {
		/* A-ROOM: acquire, pairs with the release bump in wake_writers(). */
		uint32_t seq = atomic_load_explicit(&c->room_seq, LARDER__ACQUIRE);
		int rc = write_index(c, s, op, bulk, mode, key, key_len, expected, expected_len,
				     hash, e, sclass, &full);
		if (rc != WRITE_NO_SLOT)
			return rc;
		op_exit(op);
		atomic_store_explicit(&s->grow_wanted, (uintptr_t)full, LARDER__RELAXED); /* a hint */
		rc = wait_pass(c, s, op, WAIT_INDEX, &index_wait, seq);
		op_enter(op);
		if (rc != LARDER_OK)
			return rc;
	}
}

/* A write's end, from its entry e built (charging `charge`) and op's read
 * section entered: the index step (and its waits), the section's exit, and
 * then e undone on failure, or the write counted. Inlined, as write_index(). */
static inline __attribute__((always_inline)) int
write_finish(larder *c, struct larder__shard *s, struct op *op, struct bulk *bulk,
	     enum write_mode mode, const void *key, size_t key_len, const void *expected,
	     size_t expected_len, uint64_t hash, struct larder__entry *e, unsigned sclass,
	     size_t charge, uint64_t deadline_ms, uint64_t *charged)
{
	/* No table to grow asked for: write_index_wait() tries again for its own. */
	int rc = write_index(c, s, op, bulk, mode, key, key_len, expected, expected_len, hash, e,
			     sclass, NULL);
	if (__builtin_expect(rc == WRITE_NO_SLOT, 0)) {
		struct op copy = *op; /* op_scalar: the call gets a copy, and gives it back */
		rc = write_index_wait(c, s, &copy, bulk, mode, key, key_len, expected,
				      expected_len, hash, e, sclass);
		*op = copy;
	}
	op_exit(op);
	if (rc != LARDER_OK) {
		entry_unbuild(s, op, e, charge);
		if (!bulk)
			credit_trim(c, op->handle);
		return rc;
	}
	if (bulk) {
		bulk->op = *op; /* the clock read, if any, serves the rest of the batch */
		bulk->writes++;
		if (deadline_ms < bulk->first_deadline_ms)
			bulk->first_deadline_ms = deadline_ms;
	} else {
		write_done(s, op, 1, deadline_ms);
	}
	if (charged)
		*charged = charge;
	return LARDER_OK;
}

/* charge_limit: LARDER_EVALSIZE when the entry would charge more (UINT64_MAX:
 * none); *charged (when not NULL) gets its charge on success. bulk: NULL, or
 * a bulk writer's batch, whose operation this write continues, with the
 * key's hash already computed (bulk_hash). Inlined into larder_put and
 * larder__put_batch, where the mode, the limits and bulk are constants that
 * fold away (with the call of eleven arguments, about 40 instructions per
 * put: docs/bench.md); every other write goes through write_general. */
static inline __attribute__((always_inline)) int
write_common(larder *c, enum write_mode mode, const void *key, size_t key_len,
	     const void *expected, size_t expected_len, const void *value, size_t value_len,
	     uint64_t ttl_ms, uint64_t charge_limit, uint64_t *charged, struct bulk *bulk,
	     uint64_t bulk_hash)
{
	struct op op;
	int rc = check_args(c, key, key_len,
			    mode == W_PUT_PLAIN ||
				    ((value || !value_len) &&
				     (mode != W_IF_EQUALS || expected || !expected_len)));
	if (rc != LARDER_OK)
		return rc;
	uint64_t hash = bulk ? bulk_hash : larder__hash(c->seed, key, key_len);
	if (mode != W_PUT_PLAIN && value_len > c->max_value_bytes)
		return LARDER_EVALSIZE;
	ttl_ms = mode == W_PUT_PLAIN ? LARDER_TTL_NEVER : resolve_ttl(c, ttl_ms);
	unsigned flags = ttl_flags(ttl_ms);
	unsigned char *packed = NULL;
	if (mode != W_PUT_PLAIN && __builtin_expect(value_len >= c->write_slow_from, 0)) {
		if (c->sample_marks)
			flags |= larder__probe_mark(hash, c->shard_mask);
		packed = pack_value(c, &value, &value_len, &flags);
	}
	size_t bytes = larder__entry_bytes(flags, key_len, value_len);
	/* The entry limit applies to the stored size. */
	rc = LARDER_EVALSIZE;
	if (bytes > entry_limit(c))
		goto fail_packed;
	size_t charge = larder__slab_charge(bytes);
	/* For the event (maint/handle.h); the charge's class, which folds. */
	unsigned sclass = event_class(bytes);
	if (charge > charge_limit)
		goto fail_packed; /* rc is LARDER_EVALSIZE */
	if (bulk)
		op = bulk->op;
	else if ((rc = op_begin(c, &op)) != LARDER_OK)
		goto fail_packed;
	op_route(c, &op, hash);
	struct larder__shard *s = op.handle->shard;
	if ((rc = reserve_room(c, &op, charge)) != LARDER_OK)
		goto fail_packed;
	uint64_t deadline_ms =
		(flags & LARDER__ENTRY_TTL) ? deadline_after(c, &op, ttl_ms) : UINT64_MAX;
	struct larder__entry *e =
		entry_build(s, &op, key, key_len, value, value_len, flags, bytes, charge, deadline_ms);
	if (packed) /* copied into e, or not needed; the test saves a call per raw put */
		larder__scratch_give(packed);
	if (!e) {
		op.handle->credit += (int64_t)charge;
		if (!bulk)
			credit_trim(c, op.handle);
		return LARDER_ENOMEM;
	}
	op_enter(&op);
	return write_finish(c, s, &op, bulk, mode, key, key_len, expected, expected_len, hash, e,
			    sclass, charge, deadline_ms, charged);

fail_packed:
	larder__scratch_give(packed);
	return rc;
}

static __attribute__((noinline)) int write_general(larder *c, enum write_mode mode,
						   const void *key, size_t key_len,
						   const void *expected, size_t expected_len,
						   const void *value, size_t value_len,
						   uint64_t ttl_ms, uint64_t charge_limit,
						   uint64_t *charged)
{
	return write_common(c, mode, key, key_len, expected, expected_len, value, value_len, ttl_ms,
			    charge_limit, charged, NULL, 0);
}

/* The complete put, out of line: larder_put's every case but its fast
 * path's. The common put, stored raw without a deadline, inlines
 * write_common with the lifetime's, compression's, deadline's, value
 * pointer's and value length's tests folded away (about 22 of the writer's
 * instructions per put, docs/bench.md); any other goes through
 * write_general. */
static __attribute__((noinline)) int put_general(larder *c, const void *key, size_t key_len,
						 const void *value, size_t value_len,
						 uint64_t ttl_ms)
{
	if (__builtin_expect(c && value && value_len < c->write_slow_from &&
				     (ttl_ms == LARDER_TTL_NEVER ||
				      (ttl_ms == LARDER_TTL_DEFAULT &&
				       c->default_ttl_ms == LARDER_TTL_NEVER)),
			     1))
		return write_common(c, W_PUT_PLAIN, key, key_len, NULL, 0, value, value_len,
				    ttl_ms, UINT64_MAX, NULL, NULL, 0);
	return write_general(c, W_PUT, key, key_len, NULL, 0, value, value_len, ttl_ms,
			     UINT64_MAX, NULL);
}

/* The rest of a fast-path put whose entry e is built and charged, inside
 * the read section that returned outer: write_common's end for it (a new
 * key its home did not take, a key beyond its home's first slot of its
 * tag, a locked home, an old entry with a deadline). The key is e's copy,
 * the sizes e's. */
static __attribute__((noinline)) int put_indexed(struct larder__handle *h, struct larder__entry *e,
						 uint64_t hash, uint64_t outer)
{
	struct larder__thread *t = larder__tls;
	struct op op = { t, t->last_handles, h, 0, 0, outer };
	size_t bytes = larder__entry_size(e);
	return write_finish(h->shard->cache, h->shard, &op, NULL, W_PUT_PLAIN, larder__entry_key(e),
			    e->key_len, NULL, 0, hash, e, event_class(bytes),
			    larder__slab_charge(bytes), UINT64_MAX, NULL);
}

/* The end of a fast-path put whose post found its maintainer asleep in
 * state st (larder__maint_wake_state): the wake. */
static __attribute__((noinline, cold)) int put_wake(struct larder__shard *s,
						    struct larder__handle *h, uint32_t st)
{
	larder__maint_wake_sleeper(s, h, UINT64_MAX, st);
	return LARDER_OK;
}

/*
 * larder_put's fast path makes no call: any call on it, however rare, had
 * gcc save and restore six callee-saved registers and keep a frame of 184
 * bytes on every put (32.8 of the writer's instructions per put,
 * docs/results/bench-history.md, "The writer's frame"). It takes the common put whole --
 * stored raw without a deadline, a key of 8 to 16 bytes and a value of 16
 * to 64 (copied inline), by a thread whose state last served this cache,
 * with credit and ring or spill room in hand, over a live key without a
 * deadline in its home's first slot of its tag, or as a new key (no slot
 * of its home has its tag, the index does not shrink), the home not locked
 * and locked once (an insert locked it twice, here and in write_index:
 * docs/results/bench-history.md, "Instructions per insert") -- and
 * leaves by a tail call for everything else: before it changes anything,
 * to put_general(), the complete put; for a slot when the cursor's run of
 * the class is empty (most of the rest), to put_refill(), which goes on as
 * it would; with its entry built and its read section entered, to
 * put_indexed(); with its home locked, for a key past its home (a new key
 * the home did not take, or one that lives beyond it), to put_probed();
 * after its post, with the maintainer asleep, to
 * put_wake(). The steps, and their order, are write_common's for a
 * W_PUT_PLAIN (CACHE-B2: the credit is tested before the slot is taken,
 * and taken before anything is published; both are the owner's,
 * HANDLE-H1).
 */
#define PUT_BODY static inline __attribute__((always_inline))

/* The fast path's sizes: what entry_fill() copies without a call. Its
 * largest entry is within the entry limit of any cache, so it does not
 * test it. */
#define PUT_FAST_KEY_MIN 8u
#define PUT_FAST_KEY_MAX 16u
#define PUT_FAST_VALUE_MIN 16u
#define PUT_FAST_VALUE_MAX 64u
_Static_assert(LARDER__ENTRY_HEADER_BYTES + PUT_FAST_KEY_MAX + PUT_FAST_VALUE_MAX <=
		       LARDER__CAPACITY_MIN / 8,
	       "the fast path's largest entry is within every cache's entry limit");
_Static_assert(LARDER_TTL_NEVER + 1 == 0 && LARDER_TTL_DEFAULT + 1 == 1,
	       "put_fast_ttls: ttl_ms + 1 is 0 for no lifetime, 1 for the default");

/* Cache c's bounds for the fast path (struct larder, put_fast_keys..): its
 * sizes within c's key limit and below write_slow_from (compression, the
 * probe's marks, the value limit), and the lifetimes that store no
 * deadline. At open, after write_slow_from. */
static void put_fast_bounds(larder *c)
{
	size_t key_max = c->max_key_bytes < PUT_FAST_KEY_MAX ? c->max_key_bytes : PUT_FAST_KEY_MAX;
	size_t value_end =
		c->write_slow_from <= PUT_FAST_VALUE_MAX ? c->write_slow_from : PUT_FAST_VALUE_MAX + 1;
	c->put_fast_keys = key_max >= PUT_FAST_KEY_MIN ? key_max - PUT_FAST_KEY_MIN + 1 : 0;
	c->put_fast_values = value_end > PUT_FAST_VALUE_MIN ? value_end - PUT_FAST_VALUE_MIN : 0;
	c->put_fast_ttls = c->default_ttl_ms == LARDER_TTL_NEVER ? 2 : 1;
}

/* The fast path's end, its index step done (e published, replacing old or
 * as a new key) and the home unlocked: the post, the section's exit, the
 * count, the wake's test. */
PUT_BODY int put_posted(struct larder__thread *t, struct larder__handle *h,
			enum larder__event_kind kind, uint32_t cause, unsigned sclass,
			struct larder__entry *old, struct larder__entry *e, uint64_t hash,
			uint64_t outer)
{
	struct larder__shard *s = h->shard;
	larder__events_post(h, kind, cause, sclass, old, e, hash);
	larder__read_exit(&t->reader, outer);
	larder__stat_bump(&h->writes, 1);
	uint32_t st = larder__maint_wake_state(s, h, UINT64_MAX);
	if (__builtin_expect(st != MAINT_AWAKE, 0))
		return put_wake(s, h, st);
	return LARDER_OK;
}

/* A fast-path put of a key that no slot of its home has the tag of, the
 * home locked (in root, not shrinking) but not taking it as a new key
 * (full, or keys overflowed it): the probe past the home, and under the
 * same lock the overwrite of the key found there (without a deadline) or
 * the new key's insert. An old entry with a deadline, or no free slot
 * within LARDER__PROBE_LIMIT buckets: write_common's end (put_indexed). */
static __attribute__((noinline)) int put_probed(struct larder__handle *h, struct larder__entry *e,
						uint64_t hash, uint64_t outer,
						struct larder__table *root,
						struct larder__bucket *home)
{
	unsigned sclass = event_class(larder__entry_size(e));
	uint64_t word = larder__slot_word(hash, e);
	larder__atomic_u64 *slot =
		larder__table_find_from_locked(root, home, hash, larder__entry_key(e), e->key_len);
	if (slot) {
		/* Relaxed: we hold the home lock, so the slot is stable (TABLE-X2). */
		struct larder__entry *old =
			larder__slot_entry(atomic_load_explicit(slot, LARDER__RELAXED));
		if (!(larder__entry_flags(old) & LARDER__ENTRY_TTL)) {
			larder__table_set_locked(slot, word);
			larder__table_unlock(home);
			return put_posted(larder__tls, h, LARDER__EV_REPLACE, LARDER_CAUSE_REPLACED,
					  sclass, old, e, hash, outer);
		}
	} else if (larder__table_insert_locked(root, hash, word, LARDER__PROBE_LIMIT) == 0) {
		larder__table_unlock(home);
		return put_posted(larder__tls, h, LARDER__EV_INSERT, 0, sclass, NULL, e, hash,
				  outer);
	}
	larder__table_unlock(home);
	return put_indexed(h, e, hash, outer);
}

/* The fast path from its slot e (id) on: the charge, the entry, the index
 * step (an overwrite of a live key without a deadline in its home's first
 * slot of its tag, or a new key into its home or, by put_probed(), past
 * it), the post, the wake's test. */
PUT_BODY int put_publish(struct larder__thread *t, struct larder__handle *h,
			 struct larder__entry *e, uint32_t id, const void *key, size_t key_len,
			 const void *value, size_t value_len, uint64_t hash, size_t charge,
			 unsigned sclass)
{
	h->credit -= (int64_t)charge; /* CACHE-B2 */
	/* Counted from allocation, so a free never precedes its count. */
	larder__stat_bump(&h->alloc_bytes, charge);
	entry_fill(e, id, key, key_len, value, value_len, 0, UINT64_MAX);
	uint64_t outer = larder__read_enter(&t->reader);
	struct larder__table *root = shard_root(h->shard);
	struct larder__bucket *home = larder__table_try_lock(root, hash);
	if (__builtin_expect(!home, 0))
		return put_indexed(h, e, hash, outer);
	unsigned m = larder__bucket_tag_bits(home, hash);
	if (__builtin_expect(m != 0, 1)) {
		/* The key compared is e's copy: the caller's is then dead. */
		larder__atomic_u64 *slot = larder__table_home_hit(
			home, m, (unsigned char *)e + larder__entry_prefix_bytes(0), key_len);
		/* Relaxed: we hold the home lock, so the slot is stable (TABLE-X2). */
		struct larder__entry *old =
			slot ? larder__slot_entry(atomic_load_explicit(slot, LARDER__RELAXED)) : NULL;
		if (__builtin_expect(old && !(larder__entry_flags(old) & LARDER__ENTRY_TTL), 1)) {
			larder__table_set_locked(slot, larder__slot_word(hash, e));
			larder__table_unlock(home);
			return put_posted(t, h, LARDER__EV_REPLACE, LARDER_CAUSE_REPLACED, sclass,
					  old, e, hash, outer);
		}
	} else if (__builtin_expect(!larder__table_shrinking(root), 1)) {
		/* A new key into its home, or (put_probed) a key past it, new
		 * or not, under this lock, where write_index() would lock the
		 * home again (TABLE-X5: no new key while the index shrinks). */
		if (__builtin_expect(larder__table_home_insert(home, larder__slot_word(hash, e)), 1)) {
			larder__table_unlock(home);
			return put_posted(t, h, LARDER__EV_INSERT, 0, sclass, NULL, e, hash, outer);
		}
		return put_probed(h, e, hash, outer, root, home);
	}
	larder__table_unlock(home);
	return put_indexed(h, e, hash, outer);
}

/* A fast-path put that found its cursor's run of the class empty: the
 * slab's slow allocation (which refills the run), then on as the fast path.
 * Out of memory: put_general(), which tries the allocation again and
 * reports it. */
static __attribute__((noinline)) int put_refill(struct larder__handle *h, const void *key,
						size_t key_len, const void *value,
						size_t value_len, uint64_t hash)
{
	struct larder__shard *s = h->shard;
	size_t bytes = larder__entry_bytes(0, key_len, value_len);
	uint32_t id;
	struct larder__entry *e = larder__slab_alloc_id_slow(&s->slab, &h->cursor, bytes, &id);
	if (!e)
		return put_general(s->cache, key, key_len, value, value_len, LARDER_TTL_NEVER);
	return put_publish(larder__tls, h, e, id, key, key_len, value, value_len, hash,
			   larder__slab_charge(bytes), event_class(bytes));
}

int larder_put(larder *c, const void *key, size_t key_len, const void *value, size_t value_len,
	       uint64_t ttl_ms)
{
	struct larder__thread *t = larder__tls;
	/* One compare per argument (put_fast_bounds), each NULL test beside a
	 * load that must follow it, so that gcc branches on each rather than
	 * computing them together without branches. */
	if (__builtin_expect(!c, 0) ||
	    __builtin_expect(key_len - PUT_FAST_KEY_MIN >= c->put_fast_keys, 0) ||
	    __builtin_expect(!key, 0) ||
	    __builtin_expect(value_len - PUT_FAST_VALUE_MIN >= c->put_fast_values, 0) ||
	    __builtin_expect(!value, 0) || __builtin_expect(ttl_ms + 1 >= c->put_fast_ttls, 0) ||
	    __builtin_expect(!t, 0) || !larder__thread_last_is(t, c->id))
		return put_general(c, key, key_len, value, value_len, ttl_ms);
	/* What the compares imply (put_fast_bounds), for the code below. */
	if (key_len - PUT_FAST_KEY_MIN > PUT_FAST_KEY_MAX - PUT_FAST_KEY_MIN ||
	    value_len - PUT_FAST_VALUE_MIN > PUT_FAST_VALUE_MAX - PUT_FAST_VALUE_MIN)
		__builtin_unreachable();
	uint64_t hash = larder__hash(c->seed, key, key_len);
	size_t bytes = larder__entry_bytes(0, key_len, value_len);
	size_t charge = larder__slab_charge(bytes);
	unsigned sclass = event_class(bytes);
	struct larder__handle *h = t->last_handle[larder__shard_index(c, hash)];
	if (__builtin_expect(h->credit < (int64_t)charge, 0) ||
	    __builtin_expect(!larder__events_has_room(h) && !larder__events_spill_ready(h), 0))
		return put_general(c, key, key_len, value, value_len, LARDER_TTL_NEVER);
	uint32_t id;
	struct larder__entry *e = larder__slab_run_try(&h->cursor, sclass, &id);
	if (__builtin_expect(!e, 0))
		return put_refill(h, key, key_len, value, value_len, hash);
	return put_publish(t, h, e, id, key, key_len, value, value_len, hash, charge, sclass);
}

int larder_put_if_absent(larder *c, const void *key, size_t key_len, const void *value,
			 size_t value_len, uint64_t ttl_ms)
{
	return write_general(c, W_IF_ABSENT, key, key_len, NULL, 0, value, value_len, ttl_ms,
			    UINT64_MAX, NULL);
}

int larder_replace(larder *c, const void *key, size_t key_len, const void *value,
		   size_t value_len, uint64_t ttl_ms)
{
	return write_general(c, W_REPLACE, key, key_len, NULL, 0, value, value_len, ttl_ms,
			    UINT64_MAX, NULL);
}

int larder_replace_if_equals(larder *c, const void *key, size_t key_len, const void *expected,
			     size_t expected_len, const void *value, size_t value_len,
			     uint64_t ttl_ms)
{
	return write_general(c, W_IF_EQUALS, key, key_len, expected, expected_len, value,
			    value_len, ttl_ms, UINT64_MAX, NULL);
}

/* What a bulk writer's records may still charge (UINT64_MAX: no bound). */
static uint64_t charge_left(uint64_t charge_limit, uint64_t charged)
{
	return charge_limit == UINT64_MAX ? UINT64_MAX
	       : charge_limit > charged   ? charge_limit - charged
					  : 0;
}

/*
 * CACHE-B3 for a bulk writer: its writes run inside one read section
 * (EV-V7), where a write may not wait for memory. So before the section
 * the thread's credit is topped up to cover the records' plain charges
 * (waiting for them as a write would), in the handle of each record's
 * shard; a compressed value is stored shorter than its plain bytes
 * (COMPRESS-C1), so it charges no more, and no write in the section finds
 * its credit short. A record over the entry limit plain that may be
 * compressed is written when its stored form fits: the limit's charge
 * covers it (without it, such records took the credit of the block's
 * others, and at the memory bound the block failed with LARDER_EBUSY:
 * tests/unit/test_contracts_docs.c).
 */
static int bulk_credit(larder *c, struct bulk *b, const struct larder__put_rec *rec, size_t n,
		       uint64_t left)
{
	uint64_t limit = entry_limit(c);
	uint64_t want[LARDER_SHARDS_MAX] = { 0 };
	for (size_t i = 0; i < n; i++) {
		uint64_t ttl_ms = resolve_ttl(c, rec[i].ttl_ms);
		unsigned flags = ttl_flags(ttl_ms);
		size_t bytes = larder__entry_bytes(flags, rec[i].key_len, rec[i].value_len);
		if (bytes > limit && c->compress_min && rec[i].value_len >= c->compress_min)
			bytes = (size_t)limit; /* stored within the limit, or skipped */
		/* Only what may be written: write_common skips the rest. */
		if (rec[i].key_len <= c->max_key_bytes && rec[i].value_len <= c->max_value_bytes &&
		    bytes <= limit)
			want[larder__shard_index(c, rec[i].hash)] += larder__slab_charge(bytes);
	}
	for (unsigned k = 0; k < c->shard_count; k++) {
		uint64_t w = want[k] > left ? left : want[k];
		struct larder__handle *h = b->op.handle = b->op.handles[k];
		if (h->credit >= (int64_t)w)
			continue;
		int rc = reserve_room(c, &b->op, w);
		if (rc != LARDER_OK)
			return rc;
		h->credit += (int64_t)w; /* kept for the writes (HANDLE-H1) */
	}
	return LARDER_OK;
}

/* EV-V7: a block for the next writes (without memory for one, or in a cache
 * of several shards, whose maintainers each take their own events, each
 * posts its own event), and the read section they and its post share. The
 * clock is read afresh for each block (bulk_credit may have waited). */
static void bulk_open(larder *c, struct bulk *b)
{
	b->op.have_now = 0;
	b->batch = c->shard_count == 1 ? larder__malloc(sizeof(*b->batch)) : NULL;
	if (b->batch)
		b->batch->n = 0;
	b->outer = larder__read_enter(&b->op.thread->reader);
}

/* Posts the block, into the event slot its last write reserved and did not
 * use (EV-V7), and leaves the section. */
static void bulk_close(struct bulk *b)
{
	if (b->batch && b->batch->n)
		larder__events_post(b->op.handles[0], LARDER__EV_BATCH, 0, LARDER__EV_NO_CLASS,
				    b->batch, NULL, 0);
	else
		free(b->batch);
	b->batch = NULL;
	larder__read_exit(&b->op.thread->reader, b->outer);
}

/*
 * CACHE-B4, the plain bulk write: in a cache of one shard that does not
 * compress, with a block for the events, a record's stored form is its
 * plain form, so its flags, size and charge are computed once, before the
 * block's read section (plain_size), and serve the credit, the limits and
 * the write. The write itself is write_common's for W_PUT, less what a
 * bulk writer has already done or needs only once: the argument checks of
 * the public call, the compression test, the copies of the operation in
 * and out, the room per write (the credit is topped up for the block by
 * plain_credit, and the block's one post needs one slot of the ring,
 * reserved before the section) and a nested read section (entered only
 * around a wait for the index, which leaves and re-enters it). The index
 * step is the same (write_index: the key's old entry is looked for, since
 * other writers may run during a load), and so is every rule of a write.
 * tests/unit/test_snapshot.c checks that the plain and the general bulk
 * writes leave the same entries, charges and counts.
 */
/* plain_block(): these records go the general way. Neither a status nor
 * an error of larder.h (nor WRITE_NO_SLOT). */
#define PLAIN_GENERAL (INT_MIN + 1)

struct plain {
	unsigned flags;
	unsigned sclass;
	size_t bytes;
	size_t charge; /* 0: skipped (limits) */
	uint64_t ttl_ms;
};

/* The block's records' sizes and their plain charges' sum; PLAIN_GENERAL
 * when a record is one larder_put would refuse with an error rather than
 * skip (the general way then writes the block, and reports it in its
 * place). */
static int plain_size(const larder *c, const struct larder__put_rec *rec, size_t n,
		      struct plain *z, uint64_t *sum)
{
	uint64_t limit = entry_limit(c);
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++) {
		const struct larder__put_rec *r = &rec[i];
		if (!r->key || !r->key_len || (!r->value && r->value_len) ||
		    r->key_len > c->max_key_bytes)
			return PLAIN_GENERAL;
		z[i].ttl_ms = resolve_ttl(c, r->ttl_ms);
		z[i].flags = ttl_flags(z[i].ttl_ms);
		if (c->sample_marks)
			z[i].flags |= larder__probe_mark(r->hash, c->shard_mask);
		z[i].bytes = larder__entry_bytes(z[i].flags, r->key_len, r->value_len);
		z[i].charge = 0;
		if (r->value_len > c->max_value_bytes || z[i].bytes > limit)
			continue; /* skipped, as write_common skips it */
		z[i].charge = larder__slab_charge(z[i].bytes);
		z[i].sclass = event_class(z[i].bytes);
		total += z[i].charge;
	}
	*sum = total;
	return LARDER_OK;
}

/* CACHE-B3 for the plain bulk write: the credit for `want` bytes and a
 * ring slot for the block's post, waited for before the section. */
static int plain_credit(larder *c, struct bulk *b, uint64_t want)
{
	struct larder__handle *h = b->op.handle = b->op.handles[0];
	if (h->credit < (int64_t)want) {
		int rc = reserve_room(c, &b->op, want);
		if (rc != LARDER_OK)
			return rc;
		h->credit += (int64_t)want; /* kept for the writes (HANDLE-H1) */
	}
	return reserve_room(c, &b->op, 0);
}

/* One record of the plain bulk write, in the block's read section. */
static inline __attribute__((always_inline)) int
plain_write(larder *c, struct bulk *b, const struct larder__put_rec *r, const struct plain *z)
{
	struct op *op = &b->op;
	struct larder__shard *s = op->handle->shard;
	op->handle->credit -= (int64_t)z->charge; /* CACHE-B2 (HANDLE-H1) */
	uint64_t deadline_ms =
		(z->flags & LARDER__ENTRY_TTL) ? deadline_after(c, op, z->ttl_ms) : UINT64_MAX;
	struct larder__entry *e = entry_build(s, op, r->key, r->key_len, r->value, r->value_len,
					      z->flags, z->bytes, z->charge, deadline_ms);
	if (!e) {
		op->handle->credit += (int64_t)z->charge;
		return LARDER_ENOMEM;
	}
	int rc = write_index(c, s, op, b, W_PUT, r->key, r->key_len, NULL, 0, r->hash, e,
			     z->sclass, NULL);
	if (__builtin_expect(rc == WRITE_NO_SLOT, 0)) {
		op_enter(op); /* write_index_wait leaves and re-enters a section of its own */
		rc = write_index_wait(c, s, op, b, W_PUT, r->key, r->key_len, NULL, 0, r->hash,
				      e, z->sclass);
		op_exit(op);
	}
	if (rc != LARDER_OK) {
		entry_unbuild(s, op, e, z->charge);
		return rc;
	}
	b->writes++;
	if (deadline_ms < b->first_deadline_ms)
		b->first_deadline_ms = deadline_ms;
	return LARDER_OK;
}

/* CACHE-B4: records [from, to) as one block, or PLAIN_GENERAL when the
 * block could not be had or a record needs the general way (the caller
 * writes them so; nothing was written). */
static int plain_block(larder *c, struct bulk *b, const struct larder__put_rec *rec, size_t n,
		       uint64_t charge_limit, uint64_t *charged)
{
	struct plain z[LARDER__BATCH_EVENTS];
	uint64_t want;
	int rc = plain_size(c, rec, n, z, &want);
	uint64_t left = charge_left(charge_limit, *charged);
	if (rc != LARDER_OK || (rc = plain_credit(c, b, want > left ? left : want)) != LARDER_OK)
		return rc;
	bulk_open(c, b);
	if (!b->batch) {
		bulk_close(b);
		return PLAIN_GENERAL;
	}
	for (size_t i = 0; i < n && rc == LARDER_OK; i++) {
		if (!z[i].charge || z[i].charge > charge_left(charge_limit, *charged))
			continue; /* skipped: over a limit, or over what may be charged */
		if ((rc = plain_write(c, b, &rec[i], &z[i])) == LARDER_OK)
			*charged += z[i].charge;
	}
	bulk_close(b);
	return rc;
}

/* The end of a bulk write: its top-ups (bulk_credit, plain_credit) covered
 * the records' plain charges, and a record stored compressed, skipped or
 * refused charged less: credit_trim() on every shard's handle. */
static void bulk_credit_return(larder *c, struct larder__handle *const *handles)
{
	for (unsigned k = 0; k < c->shard_count; k++)
		credit_trim(c, handles[k]);
}

int larder__put_batch(larder *c, const struct larder__put_rec *rec, size_t n,
		      uint64_t charge_limit, uint64_t *charged)
{
	struct bulk b = { .writes = 0, .first_deadline_ms = UINT64_MAX, .batch = NULL };
	int rc = n ? op_begin(c, &b.op) : LARDER_OK;
	int plain = c->shard_count == 1 && !c->compress_min; /* CACHE-B4 */
	for (size_t from = 0; from < n && rc == LARDER_OK; from += LARDER__BATCH_EVENTS) {
		size_t to = n - from > LARDER__BATCH_EVENTS ? from + LARDER__BATCH_EVENTS : n;
		if (plain && (rc = plain_block(c, &b, rec + from, to - from, charge_limit,
					       charged)) != PLAIN_GENERAL)
			continue;
		if ((rc = bulk_credit(c, &b, rec + from, to - from,
				      charge_left(charge_limit, *charged))) != LARDER_OK)
			break;
		bulk_open(c, &b);
		for (size_t i = from; i < to && rc == LARDER_OK; i++) {
			const struct larder__put_rec *r = &rec[i];
			uint64_t charge = 0;
			rc = write_common(c, W_PUT, r->key, r->key_len, NULL, 0, r->value,
					  r->value_len, r->ttl_ms, charge_left(charge_limit, *charged),
					  &charge, &b, r->hash);
			if (rc == LARDER_EVALSIZE)
				rc = LARDER_OK; /* skipped: over the limit, or the entry limit */
			else if (rc == LARDER_OK)
				*charged += charge;
		}
		bulk_close(&b);
	}
	if (b.op.handles) /* NULL: op_begin() failed, or n == 0 */
		bulk_credit_return(c, b.op.handles);
	if (b.writes) {
		/* Counted once; every shard's maintainer nudged, through the
		 * handle its events went to. */
		b.op.handle = b.op.handles[0];
		write_done(&c->shard[0], &b.op, b.writes, b.first_deadline_ms);
		for (unsigned k = 1; k < c->shard_count; k++)
			larder__maint_wake(&c->shard[k], b.op.handles[k], b.first_deadline_ms);
	}
	return rc;
}

void larder__prefetch_homes(larder *c, const struct larder__put_rec *rec, size_t n)
{
	struct op op;
	if (!n || op_begin(c, &op) != LARDER_OK)
		return; /* a hint: without a thread state, the writes will say why */
	op_enter(&op);
	for (size_t i = 0; i < n; i++)
		larder__table_prefetch(root_rcu(c, rec[i].hash), rec[i].hash);
	op_exit(&op);
}

static int remove_common(larder *c, const void *key, size_t key_len, const void *expected,
			 size_t expected_len, int if_equals)
{
	struct op op;
	int rc = check_args(c, key, key_len, !if_equals || expected || !expected_len);
	if (rc != LARDER_OK)
		return rc;
	if ((rc = op_begin(c, &op)) != LARDER_OK)
		return rc;
	uint64_t hash = larder__hash(c->seed, key, key_len);
	struct larder__shard *s = &c->shard[op_route(c, &op, hash)];
	if ((rc = reserve_room(c, &op, 0)) != LARDER_OK)
		return rc;
	op_enter(&op);
	struct larder__table *t;
	struct larder__bucket *home = larder__table_lock(root_rcu(c, hash), hash, &t);
	larder__atomic_u64 *slot = larder__table_find_from_locked(t, home, hash, key, key_len);
	/* Relaxed: we hold the home lock, so the slot is stable (TABLE-X2). */
	struct larder__entry *old =
		slot ? larder__slot_entry(atomic_load_explicit(slot, LARDER__RELAXED)) : NULL;
	enum larder_cause cause = LARDER_CAUSE_EXPLICIT;
	rc = LARDER_OK;
	if (!old) {
		rc = LARDER_MISS;
	} else if (entry_expired(c, &op, old)) {
		rc = LARDER_MISS; /* already gone for readers: unlink it now all the same */
		cause = LARDER_CAUSE_EXPIRED;
	} else if (if_equals) {
		rc = value_check(c, old, expected, expected_len);
	}
	int unlink = old && (rc == LARDER_OK || cause == LARDER_CAUSE_EXPIRED);
	if (unlink)
		larder__table_erase_locked(t, hash, slot);
	larder__table_unlock(home);
	if (unlink)
		larder__events_post(op.handle, LARDER__EV_REMOVE, cause, LARDER__EV_NO_CLASS, old, NULL,
				    hash);
	op_exit(&op);
	if (unlink) /* no deadline to schedule: the removal may wait for a pass */
		larder__maint_wake(s, op.handle, UINT64_MAX);
	return rc;
}

int larder_remove(larder *c, const void *key, size_t key_len)
{
	return remove_common(c, key, key_len, NULL, 0, 0);
}

int larder_remove_if_equals(larder *c, const void *key, size_t key_len, const void *expected,
			    size_t expected_len)
{
	return remove_common(c, key, key_len, expected, expected_len, 1);
}

/*
 * Touch: an entry that has a deadline field gets the new deadline in place
 * (ENTRY-E2); one without gets a copy with a deadline field, published like a
 * replacement but reported to no listener (RELOCATE).
 *
 * The maintainer's timing wheel learns of an in-place change only when the
 * deadline moved earlier (EV_TOUCH): a later deadline (or none) needs no
 * event, because the wheel re-reads the deadline when the old one comes due
 * and schedules the entry again (maint/maintainer.c, on_due). The event slot
 * is reserved before the bucket is locked, as for every write.
 */
int larder_touch(larder *c, const void *key, size_t key_len, uint64_t ttl_ms)
{
	struct op op;
	int rc = check_key(c, key, key_len);
	if (rc != LARDER_OK || (rc = op_begin(c, &op)) != LARDER_OK)
		return rc;
	ttl_ms = resolve_ttl(c, ttl_ms);
	uint64_t deadline_ms =
		ttl_ms == LARDER_TTL_NEVER ? UINT64_MAX : deadline_after(c, &op, ttl_ms);
	uint64_t hash = larder__hash(c->seed, key, key_len);
	struct larder__shard *s = &c->shard[op_route(c, &op, hash)];
	struct larder__entry *copy = NULL, *copied_from = NULL;
	if ((rc = reserve_room(c, &op, 0)) != LARDER_OK) /* for EV_TOUCH */
		return rc;
	size_t charge = 0;
	for (;;) {
		op_enter(&op);
		struct larder__table *t;
		struct larder__bucket *home = larder__table_lock(root_rcu(c, hash), hash, &t);
		larder__atomic_u64 *slot = larder__table_find_from_locked(t, home, hash, key, key_len);
		struct larder__entry *old =
			slot ? larder__slot_entry(atomic_load_explicit(slot, LARDER__RELAXED)) : NULL;
		if (!old || entry_expired(c, &op, old)) {
			rc = LARDER_MISS;
		} else if (larder__entry_flags(old) & LARDER__ENTRY_TTL) {
			/* In place (ENTRY-E2): relaxed, either deadline is right for a racing
			 * read. Exchange: only we (under the lock) and the maintainer's
			 * CAS (ENTRY-E4) store it, and we need the old value. */
			uint64_t was = atomic_exchange_explicit(larder__entry_expire(old),
								deadline_ms, LARDER__RELAXED);
			larder__table_unlock(home);
			if (deadline_ms < was)
				larder__events_post(op.handle, LARDER__EV_TOUCH, 0, LARDER__EV_NO_CLASS,
						    old, NULL, hash);
			op_exit(&op);
			if (deadline_ms < was)
				larder__maint_wake(s, op.handle, deadline_ms);
			break;
		} else if (deadline_ms == UINT64_MAX) {
			; /* no deadline before, none after */
		} else if (copy && copied_from == old) {
			larder__table_set_locked(slot, larder__slot_word(hash, copy));
			larder__table_unlock(home);
			larder__events_post(op.handle, LARDER__EV_RELOCATE, 0, LARDER__EV_NO_CLASS, old,
					    copy, hash);
			op_exit(&op);
			larder__maint_wake(s, op.handle, deadline_ms);
			return LARDER_OK;
		} else {
			/* Build the copy outside the lock, then check nothing changed. */
			larder__table_unlock(home);
			if (copy)
				entry_unbuild(s, &op, copy, charge);
			copied_from = old;
			/* The stored bytes as they are: a compressed value stays so;
			 * the same key, so the same probe's mark (PROBE-P6). */
			unsigned copy_flags = LARDER__ENTRY_TTL |
					      (larder__entry_flags(old) &
					       (LARDER__ENTRY_COMPRESSED | LARDER__ENTRY_SAMPLED));
			size_t bytes = larder__entry_bytes(copy_flags, old->key_len,
							   old->value_len);
			op_exit(&op);
			/* The deadline field makes the copy longer: over the entry
			 * limit, refused as larder_put refuses it, the entry kept
			 * as it is. */
			if (bytes > entry_limit(c)) {
				copy = NULL;
				rc = LARDER_EVALSIZE;
				break;
			}
			charge = larder__slab_charge(bytes);
			/* Room first (we may wait), then re-find: old may be gone. */
			if ((rc = reserve_room(c, &op, charge)) != LARDER_OK)
				return rc;
			op_enter(&op);
			struct larder__entry *now_e = find_live_rcu(c, &op, hash, key, key_len);
			copy = now_e == old
				       ? entry_build(s, &op, key, key_len, larder__entry_value(old),
						     old->value_len, copy_flags, bytes, charge,
						     deadline_ms)
				       : NULL;
			op_exit(&op);
			if (!copy) {
				op.handle->credit += (int64_t)charge;
				credit_trim(c, op.handle);
				if (now_e == old)
					return LARDER_ENOMEM;
				copied_from = NULL;
			}
			continue;
		}
		larder__table_unlock(home);
		op_exit(&op);
		break;
	}
	if (copy)
		entry_unbuild(s, &op, copy, charge);
	credit_trim(c, op.handle);
	return rc;
}

/* The cache's reserve of empty pages per page size: 1/64 of the capacity,
 * at most LARDER__SLAB_RESERVE_MAX (4 MiB), so that a small cache does not
 * keep six times 4 MiB of empty pages (a 64 MiB cache: 1 MiB each); split
 * among the shards' slabs, so that K slabs keep what one would (SLAB-S10
 * in mem/slab.c). */
static void slab_reserve_set(struct larder__shard *s, uint64_t capacity)
{
	uint64_t r = capacity / 64;
	larder__slab_set_reserve(&s->slab, r < LARDER__SLAB_RESERVE_MAX ? r : LARDER__SLAB_RESERVE_MAX,
				 s->index, s->cache->shard_count);
}

/* A table sized for the expected entries (TABLE-L1 in index/table.h); growth takes it
 * from there. */
static struct larder__table *first_table(const struct larder *c)
{
	uint64_t buckets = larder__table_buckets_for(c->expected_entries / c->shard_count);
	return larder__table_create(buckets < MIN_TABLE_BUCKETS ? MIN_TABLE_BUCKETS : buckets);
}

/*
 * The empty table starts at the first table's size, as a new cache's does,
 * not at the old table's: a refill grows it again, and a cache cleared for
 * good does not keep an index sized for what it held (which the maintainer
 * would otherwise have to shrink, touching every page of it to do so).
 * Shard by shard: each root is swapped, and its old table handed to its
 * maintainer through the thread's handle for that shard. A write that
 * races with the clear survives it if it lands in a shard already swapped,
 * as one made just after a clear would. The clock is read once, before the
 * swaps, in a cache that has given an entry a deadline (deadlines_seen):
 * each maintainer reports the entries already past their deadline then as
 * EXPIRED, the others as CLEARED (maint/clear.c).
 */
int larder_clear(larder *c)
{
	struct op op;
	struct larder__table *fresh[LARDER_SHARDS_MAX];
	unsigned made = 0;
	if (!c)
		return LARDER_EINVAL;
	int rc = op_begin(c, &op);
	/* Every shard's event room and empty table before any swap: an error
	 * leaves every shard as it was (larder.h: nothing was cleared). The
	 * room stays reserved: only this thread posts to its handles. */
	for (; rc == LARDER_OK && made < c->shard_count; made++) {
		op.handle = op.handles[made];
		if ((rc = reserve_room(c, &op, 0)) != LARDER_OK)
			break;
		if (!(fresh[made] = first_table(c))) {
			rc = LARDER_ENOMEM;
			break;
		}
	}
	if (rc != LARDER_OK) {
		while (made-- > 0)
			larder__table_destroy(fresh[made]);
		return rc;
	}
	/* Relaxed: a write that returned before the clear set it before. */
	uint64_t now_ms =
		atomic_load_explicit(&c->deadlines_seen, LARDER__RELAXED) ? op_now(c, &op) : 0;
	for (unsigned k = 0; k < c->shard_count; k++) {
		struct larder__shard *s = &c->shard[k];
		op.handle = op.handles[k];
		op_enter(&op);
		/* R-ROOT: acq_rel; the release publishes the empty table, the
		 * acquire makes the old root we hand to the maintainer the one we
		 * replaced. */
		struct larder__table *old = (struct larder__table *)atomic_exchange_explicit(
			s->table, (uintptr_t)fresh[k], LARDER__ACQ_REL);
		larder__events_post(op.handle, LARDER__EV_CLEAR, LARDER_CAUSE_CLEARED,
				    LARDER__EV_NO_CLASS, old, NULL, now_ms);
		op_exit(&op);
		larder__maint_wake(s, op.handle, 0); /* the old table's walk starts at once */
	}
	return LARDER_OK;
}

int larder_set_capacity(larder *c, uint64_t bytes)
{
	if (c && c->pool)
		return LARDER_ESTATE; /* its pool sets it (pool/pool.c) */
	return larder__cache_set_capacity(c, bytes);
}

int larder__cache_set_capacity(larder *c, uint64_t bytes)
{
	if (!c || bytes < LARDER__CAPACITY_MIN || bytes > (UINT64_MAX >> 2))
		return LARDER_EINVAL;
	pthread_mutex_lock(&c->admin_lock);
	uint64_t old = atomic_load_explicit(&c->capacity, LARDER__RELAXED); /* under admin_lock */
	int64_t delta = (int64_t)(bytes + larder__overshoot_bound(bytes)) -
			(int64_t)(old + larder__overshoot_bound(old));
	/* Relaxed: CACHE-B1 holds after both stores; writers re-check on the next chunk. */
	atomic_store_explicit(&c->capacity, bytes, LARDER__RELAXED);
	atomic_fetch_add_explicit(&c->budget, delta, LARDER__RELAXED);
	for (unsigned i = 0; i < c->shard_count; i++) {
		slab_reserve_set(&c->shard[i], bytes);
		/* The pages light writers share go back as the cut empties
		 * them (SLAB-S8), as after a clear. */
		if (bytes < old)
			larder__slab_release_shared_later(&c->shard[i].slab);
	}
	pthread_mutex_unlock(&c->admin_lock);
	larder__maint_wake_all(c);
	return LARDER_OK;
}

/* ---- Handles -------------------------------------------------------------------- */

/* A new handle on shard s's list, NULL on ENOMEM. */
static struct larder__handle *handle_create(struct larder__shard *s)
{
	struct larder__handle *h = larder__aligned_alloc(64, sizeof(*h));
	if (!h)
		return NULL;
	memset(h, 0, sizeof(*h));
	h->shard = s;
	/* Relaxed: the CAS below re-reads it; R-HANDLES publishes. */
	uintptr_t head = atomic_load_explicit(&s->handles, LARDER__RELAXED);
	do {
		h->next = (struct larder__handle *)head;
		/* R-HANDLES: release publishes the zeroed handle (pairs with A-HANDLES). */
	} while (!atomic_compare_exchange_weak_explicit(&s->handles, &head, (uintptr_t)h,
							LARDER__RELEASE, LARDER__RELAXED));
	return h;
}

/* The thread's exit (or a failed handles_create), for one handle, on the
 * owner's thread: its pages (SLAB-S7) and its credit go back at once, so the
 * threads that start next allocate from them; its maintainer dismantles the
 * rest. */
static void handle_orphan(struct larder__handle *h)
{
	struct larder__shard *s = h->shard; /* read before h may be freed */
	larder__slab_release_cursor_at_exit(&s->slab, &h->cursor);
	/* CACHE-B1 holds: the bytes move from the credit to the budget. Relaxed,
	 * as in take_credit(); the credit is ours until R-ORPHAN (HANDLE-H1). */
	atomic_fetch_add_explicit(&s->cache->budget, h->credit, LARDER__RELAXED);
	h->credit = 0;
	/* R-ORPHAN: release; the thread's last posts before the maintainer's A-ORPHAN. */
	atomic_store_explicit(&h->orphaned, 1, LARDER__RELEASE);
	/* h may be freed by the maintainer from here on: do not pass it. */
	larder__maint_wake(s, NULL, 0);
}

int larder__cache_handles_create(larder *c, struct larder__handle **out)
{
	for (unsigned k = 0; k < c->shard_count; k++) {
		out[k] = handle_create(&c->shard[k]);
		if (!out[k]) {
			/* Those made are listed already: their maintainers free them. */
			while (k-- > 0)
				handle_orphan(out[k]);
			return -1;
		}
	}
	return 0;
}

void larder__cache_orphan_handles(larder *c, struct larder__handle *const *handles)
{
	for (unsigned k = 0; k < c->shard_count; k++)
		handle_orphan(handles[k]);
}

/* ---- Statistics ------------------------------------------------------------------ */

/* Every shard's handles_lock, in shard order: an exiting thread's counters
 * move from its handle to its maintainer's totals under its shard's lock,
 * so with them all held they are counted exactly once. */
static void lock_handles(larder *c)
{
	for (unsigned i = 0; i < c->shard_count; i++)
		pthread_mutex_lock(&c->shard[i].handles_lock);
}

static void unlock_handles(larder *c)
{
	for (unsigned i = c->shard_count; i-- > 0;)
		pthread_mutex_unlock(&c->shard[i].handles_lock);
}

/* Under lock_handles(). */
static void sum_handles(larder *c, uint64_t *v)
{
	for (unsigned i = 0; i < c->shard_count; i++)
		for (struct larder__handle *h = (struct larder__handle *)atomic_load_explicit(
			     &c->shard[i].handles, LARDER__ACQUIRE); /* A-HANDLES */
		     h; h = h->next)
			larder__handle_stats_add(h, v);
}

/*
 * Used bytes = bytes allocated (per thread, counted at allocation) - bytes
 * freed (by the maintainer). Both only grow; if freed is the same before and
 * after the allocation sum, the difference was the true figure at some
 * instant of the call. Retried a few times otherwise.
 */
int larder_stats(larder *c, uint64_t *values, size_t count)
{
	uint64_t v[LARDER_STAT_COUNT];
	if (!c || (!values && count))
		return LARDER_EINVAL;
	lock_handles(c);
	for (int attempt = 0; attempt < 8; attempt++) {
		memset(v, 0, sizeof(v));
		uint64_t freed = larder__maint_freed_bytes(c);
		sum_handles(c, v);
		larder__maint_stats(c, v);
		if (larder__maint_freed_bytes(c) == freed)
			break;
	}
	unlock_handles(c);
	uint64_t cap = atomic_load_explicit(&c->capacity, LARDER__RELAXED); /* statistics */

	v[LARDER_STAT_CAPACITY_BYTES] = cap;
	v[LARDER_STAT_OVERSHOOT_BOUND] = larder__overshoot_bound(cap);
	const struct larder__dict *dict = larder__dict_get(c);
	v[LARDER_STAT_DICT_BYTES] = dict ? dict->bytes : 0;
	for (unsigned i = 0; i < c->shard_count; i++) {
		larder__slab_stats(&c->shard[i].slab, v);
		/* Published by the maintainer at each pass's end (maint/evict.c),
		 * so after larder_flush it counts the flushed writes. */
		v[LARDER_STAT_LIVE_BYTES] +=
			atomic_load_explicit(&c->shard[i].live_bytes, LARDER__RELAXED);
	}
	struct larder__thread *t = larder__thread_self();
	if (t) {
		/* A root may be freed after a resize: look at them inside a section. */
		uint64_t outer = larder__read_enter(&t->reader);
		for (unsigned i = 0; i < c->shard_count; i++) {
			/* A-ROOT: acquire, pairs with R-ROOT (larder_clear, end of growth). */
			struct larder__table *root = (struct larder__table *)atomic_load_explicit(
				c->shard[i].table, LARDER__ACQUIRE);
			struct larder__table *next = larder__table_next(root);
			v[LARDER_STAT_INDEX_SLOTS] += larder__table_slots(root);
			v[LARDER_STAT_INDEX_BYTES] += larder__table_map_bytes(root) +
							 (next ? larder__table_map_bytes(next) : 0);
		}
		larder__read_exit(&t->reader, outer);
	}
	if (count) /* values may be NULL with count 0 */
		memcpy(values, v,
		       (count < LARDER_STAT_COUNT ? count : LARDER_STAT_COUNT) * sizeof(*v));
	for (size_t i = LARDER_STAT_COUNT; i < count; i++)
		values[i] = 0;
	return LARDER_OK;
}

/* Test seam (core/testing.h): a lower bound on the bytes allocated so far,
 * so that a sampler can bound used bytes from below across several caches:
 * under the handles' locks (no handle folds meanwhile), the live handles' counts
 * plus the folded ones, less what was freed between the two reads of it. */
uint64_t larder__test_allocated_bytes(larder *c)
{
	uint64_t v[LARDER_STAT_COUNT] = { 0 };
	lock_handles(c);
	uint64_t freed_before = larder__maint_freed_bytes(c);
	sum_handles(c, v);
	larder__maint_stats(c, v); /* adds the folded counts, less freed (>= freed_before) */
	unlock_handles(c);
	return v[LARDER_STAT_USED_BYTES] + freed_before;
}

/* ---- Open and close --------------------------------------------------------------- */

static uint64_t random_seed(const void *salt)
{
	uint64_t seed;
	if (getrandom(&seed, sizeof(seed), GRND_NONBLOCK) == (ssize_t)sizeof(seed))
		return seed;
	/* No entropy yet (early boot): still different per cache and run. */
	return larder__monotonic_ns() ^ (uint64_t)(uintptr_t)salt ^ ((uint64_t)getpid() << 32);
}

/* A shard's plane (core/shard.h) up to its maintainer's state; not started. */
static int shard_open(larder *c, struct larder__shard *s, uint64_t capacity)
{
	int rc = LARDER_ENOMEM;
	s->cache = c;
	s->index = (unsigned)(s - c->shard);
	s->table = &c->root[s->index];
	if (pthread_mutex_init(&s->handles_lock, NULL) != 0)
		return rc;
	if (larder__slab_init(&s->slab) != 0)
		goto fail_slab;
	s->slab.share_first = 1; /* many writer threads (SLAB-S8) */
	slab_reserve_set(s, capacity);
	struct larder__table *t = first_table(c);
	if (!t)
		goto fail_table;
	atomic_store_explicit(s->table, (uintptr_t)t, LARDER__RELAXED); /* published by pthread_create */
	if ((rc = larder__maint_create(s)) != LARDER_OK)
		goto fail_maint;
	return LARDER_OK;

fail_maint:
	larder__table_destroy(t);
fail_table:
	larder__slab_destroy(&s->slab);
fail_slab:
	pthread_mutex_destroy(&s->handles_lock);
	return rc;
}

/* shard_open() undone, the maintainer stopped (or never started). The
 * maintainer owns the index from larder__maint_create() on. */
static void shard_close(struct larder__shard *s)
{
	larder__maint_destroy(s);
	larder__slab_destroy(&s->slab);
	pthread_mutex_destroy(&s->handles_lock);
}

int larder_open(larder **out, const larder_config *cfg)
{
	if (!out)
		return LARDER_EINVAL;
	*out = NULL;
	if (!cfg || !larder__policy_ops_for(cfg->policy))
		return LARDER_EINVAL;
	unsigned shards = cfg->shards;
	larder *c = larder__aligned_alloc(64, sizeof(*c) + shards * sizeof(c->shard[0]));
	if (!c)
		return LARDER_ENOMEM;
	memset(c, 0, sizeof(*c) + shards * sizeof(c->shard[0]));
	int rc = LARDER_ENOMEM;
	unsigned opened = 0, started = 0;
	c->shard_count = shards;
	c->shard_mask = shards - 1;
	c->seed = cfg->seed_set ? cfg->seed : random_seed(c);
	c->max_key_bytes = cfg->max_key_bytes;
	c->max_value_bytes = cfg->max_value_bytes;
	c->default_ttl_ms = cfg->default_ttl_ms;
	c->clock = cfg->clock;
	c->clock_ctx = cfg->clock_ctx;
	c->write_wait_ms = cfg->write_wait_ms;
	c->compress_min = cfg->compress_min;
	c->compress_saving_pct = cfg->compress_saving_pct;
	if ((rc = larder__dict_open(c, cfg)) != LARDER_OK)
		goto fail_dict;
	rc = LARDER_ENOMEM;
	atomic_store_explicit(&c->stuck_ms, MAINT_WAIT_MS, LARDER__RELAXED); /* not shared yet */
	if (cfg->expiry == LARDER_EXPIRE_AFTER_ACCESS && cfg->default_ttl_ms != LARDER_TTL_NEVER) {
		c->access_ttl_ms = cfg->default_ttl_ms;
		c->access_slack_ms = cfg->default_ttl_ms / ACCESS_SLACK_DIVISOR;
		if (c->access_slack_ms > ACCESS_SLACK_MAX_MS)
			c->access_slack_ms = ACCESS_SLACK_MAX_MS;
	}
	c->listener = cfg->listener;
	c->listener_ctx = cfg->listener_ctx;
	c->policy = cfg->policy;
	c->expected_entries = cfg->expected_entries;
	uint64_t capacity = cfg->capacity;
	/* A pooled cache's first capacity comes from its pool (and may wait). */
	if (cfg->pool && (rc = larder__pool_join(c, cfg, &capacity)) != LARDER_OK)
		goto fail_pool;
	rc = LARDER_ENOMEM;
	/* Not yet shared: relaxed. */
	atomic_store_explicit(&c->capacity, capacity, LARDER__RELAXED);
	atomic_store_explicit(&c->budget,
			      (int64_t)(capacity + larder__overshoot_bound(capacity)),
			      LARDER__RELAXED);
	if (pthread_mutex_init(&c->admin_lock, NULL) != 0)
		goto fail_admin_lock;
	for (; opened < shards; opened++)
		if ((rc = shard_open(c, &c->shard[opened], cfg->capacity)) != LARDER_OK)
			goto fail_shards;
	c->write_slow_from = c->sample_marks ? 0 : c->compress_min ? c->compress_min : SIZE_MAX;
	if (c->write_slow_from > c->max_value_bytes) /* W_PUT_PLAIN's length test */
		c->write_slow_from = c->max_value_bytes + 1;
	put_fast_bounds(c);
	c->id = larder__cache_id_register(c);
	if (!c->id) {
		rc = LARDER_ENOMEM;
		goto fail_shards;
	}
	for (; started < shards; started++)
		if ((rc = larder__maint_start(&c->shard[started])) != LARDER_OK)
			goto fail_start;
	if (c->pool)
		larder__pool_activate(c);
	*out = c;
	return LARDER_OK;

fail_start:
	larder__maint_stop(c, started);
	larder__cache_id_unregister(c->id);
fail_shards:
	while (opened-- > 0)
		shard_close(&c->shard[opened]);
	pthread_mutex_destroy(&c->admin_lock);
fail_admin_lock:
	larder__pool_release(c->pool);
fail_pool:
	larder__dict_close(c);
fail_dict:
	free(c);
	return rc;
}

void larder_close(larder *c)
{
	if (!c)
		return;
	/* Its pool stops resizing it, but counts its bytes until they are freed. */
	if (c->pool)
		larder__pool_detach(c);
	/* First: no exiting thread may hand us a handle from now on (THREAD-T1). */
	larder__cache_id_unregister(c->id);
	larder__maint_stop(c, c->shard_count);
	for (unsigned i = 0; i < c->shard_count; i++)
		larder__maint_destroy(&c->shard[i]);
	larder__dict_close(c); /* DICT-D1: nothing can read it any more */
	for (unsigned i = 0; i < c->shard_count; i++) {
		larder__slab_destroy(&c->shard[i].slab);
		pthread_mutex_destroy(&c->shard[i].handles_lock);
	}
	larder__pool_release(c->pool);
	pthread_mutex_destroy(&c->admin_lock);
	free(c);
}
