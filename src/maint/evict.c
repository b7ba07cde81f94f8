/*
 * maint/evict.c - the maintainer's removals on its own initiative: evicting
 * down to capacity (the policy picks the victims) and expiring entries on the
 * TTL timing wheel (ttl/wheel.h).
 *
 * TTL (the wheel): every counted entry that has a deadline is scheduled when
 * it is accounted (maint/apply.c), cancelled when it is retired, and
 * scheduled again when a touch moved its deadline earlier (EV_TOUCH). A
 * deadline moved later in place (touch, after-access extension) is not
 * rescheduled eagerly: the wheel delivers the entry at its old deadline,
 * on_due() re-reads it and schedules it again, which costs the same O(1)
 * and needs no event. The bound on lateness is in maint/maintainer.c.
 * Readers never depend on any of this: they check the deadline themselves.
 *
 * A victim is unlinked from the current index under its home lock; one not
 * found there was replaced, removed or cleared meanwhile, and the event or
 * cleared table that says so retires it.
 */
#include "core/cache.h"
#include "index/table.h"
#include "maint/maintainer.h"
#include "maint/state.h"
#include "pool/probe.h"
#include "ttl/wheel.h"

#define EVICT_PER_PASS 4096u
#define SHARE_REFRESH 64u /* victims between two looks at the other shards' bytes */
#define EXPIRE_PER_PASS 8192u
#define STAGE_PER_PASS 256u /* timers cascaded ahead of time: ~50-100 us of misses */
#define STAGE_PER_EXPIRY 4u /* ... and more per expiry of the pass (larder__maint_expire) */

/* Whether an evicted victim had expired, to name its cause: on the cache's
 * clock, as the read path's entry_expired in core/cache.c judges it. */
static int victim_expired(struct larder *c, struct larder__entry *e)
{
	uint64_t exp = larder__entry_deadline(e);
	return exp != UINT64_MAX && c->clock(c->clock_ctx) >= exp;
}

/*
 * The expiry's clock, read at most once per pass (and only for TTL work), and
 * never earlier than in a previous pass (eviction reads the clock itself,
 * once per victim with a TTL, only to name the cause: victim_expired): a
 * clock that steps back (larder.h tolerates it) must not take the wheel
 * back, whose time only moves on
 * (WHEEL-W1 in ttl/wheel.c). on_due() compares deadlines with it; with the raw
 * reading, an entry due between the stepped-back clock and the wheel's time
 * was scheduled again behind the wheel, into its due list, which delivered
 * it again at once: the maintainer spun there for good.
 */
static uint64_t pass_now(struct larder__maint *m)
{
	if (!m->have_now) {
		uint64_t clock_ms = m->cache->clock(m->cache->clock_ctx);
		if (clock_ms > m->now_ms)
			m->now_ms = clock_ms;
		m->have_now = 1;
	}
	return m->now_ms;
}

uint64_t larder__maint_wheel_deadline(void *ctx, struct larder__wheel_link *link)
{
	(void)ctx;
	/* A stale deadline is corrected by on_due() or by the EV_TOUCH that
	 * follows a shortening. */
	return larder__entry_deadline(larder__wheel_entry(link));
}

/* (Re)schedules a counted entry with a deadline at its current deadline. */
void larder__maint_wheel_track(struct larder__maint *m, struct larder__entry *e)
{
	uint64_t d = larder__entry_deadline(e);
	struct larder__wheel_link *link = larder__entry_wheel(e);
	if (d == UINT64_MAX) {
		larder__wheel_cancel(&m->wheel, link);
		return;
	}
	/* ENTRY-E6: an entry in no queue carries its id; a queued one (a touch) asks
	 * its page header. */
	uint32_t id = (e->mbits & LARDER__MBITS_QUEUED) ? larder__entry_id(e) : e->next;
	larder__wheel_reschedule(&m->wheel, link, id, d);
}

/* ---- Eviction -------------------------------------------------------------- */

/* Unlinks e, whose key's hash is hash, from the current index if it is
 * still there; 0 if it was not. Its slot is found by its word (the entry
 * itself), not by a key compare: larder__table_find_word_locked. Inlined
 * into the eviction loop: the call and its prologue were about 18 of the
 * maintainer's 721 instructions per insert (docs/bench.md). */
static inline __attribute__((always_inline)) int
unlink_current(struct larder__maint *m, struct larder__entry *e, uint64_t hash)
{
	struct larder__table *t;
	/* A-ROOT: acquire, pairs with R-ROOT (clear, growth end). */
	struct larder__table *root =
		(struct larder__table *)atomic_load_explicit(m->shard->table, LARDER__ACQUIRE);
	struct larder__bucket *home = larder__table_lock(root, hash, &t);
	larder__atomic_u64 *slot =
		larder__table_find_word_locked(t, home, hash, larder__slot_word(hash, e));
	if (slot)
		larder__table_erase_from_locked(t, home, hash, slot);
	larder__table_unlock(home);
	return slot != NULL;
}

/* The other shards' live bytes as their maintainers last published them
 * (0 in a cache of one shard). */
static uint64_t others_live_bytes(const struct larder__maint *m)
{
	uint64_t sum = 0;
	for (unsigned i = 0; i < m->shards; i++)
		if (i != m->shard_index) /* relaxed: a hint (core/shard.h) */
			sum += atomic_load_explicit(&m->cache->shard[i].live_bytes, LARDER__RELAXED);
	return sum;
}

/* Publishes this shard's live bytes for the other shards' maintainers.
 * Relaxed: a hint (core/shard.h); readers take it as others_live_bytes(). */
static void publish_live_bytes(struct larder__maint *m)
{
	atomic_store_explicit(&m->shard->live_bytes, m->live_bytes, LARDER__RELAXED);
}

/* The cache is over capacity but this shard holds less than the mean: the
 * largest shard by the published counts evicts instead, woken if asleep. */
static void wake_largest(struct larder__maint *m)
{
	struct larder__shard *largest = NULL;
	uint64_t most = 0;
	for (unsigned i = 0; i < m->shards; i++) {
		struct larder__shard *s = &m->cache->shard[i];
		uint64_t b = atomic_load_explicit(&s->live_bytes, LARDER__RELAXED); /* a hint */
		if (i != m->shard_index && b > most) {
			most = b;
			largest = s;
		}
	}
	if (largest)
		larder__maint_wake(largest, NULL, 0);
}

/*
 * Whether this shard, one of several, takes its turn at eviction (one shard
 * always does: larder__maint_evict asks only when sharded): its own bytes
 * are at least the mean of the published ones, less an eighth. Shards of
 * about equal size then evict side by side, each down to an eighth under the
 * mean per pass; with the bare mean the first victim put a shard under it,
 * and equal shards handed the work to one another an entry per pass and
 * wake-up (a cut from 56 to 8 MiB over four shards took over 2 s for 36,000
 * victims, where one shard took under 0.5 s for 49,000).
 */
static int takes_turn(const struct larder__maint *m, uint64_t others)
{
	uint64_t mean = (m->live_bytes + others) / m->shards;
	return m->live_bytes >= mean - mean / 8;
}

/*
 * MAINT-M4 over shards: evicts from this shard's policy while the cache's
 * live bytes (its own, exact, and the others' published ones) plus what
 * writers want exceed the capacity, and while this shard's own bytes are
 * near the mean or above (takes_turn), so that the largest shards evict
 * first and a shard of big values is not starved by the others' overshoot
 * (docs/shards.md).
 */
uint64_t larder__maint_evict(struct larder__maint *m)
{
	LARDER__MAINT_OWNER(m);
	struct larder *c = m->cache;
	uint64_t cap =
		atomic_load_explicit(&c->capacity, LARDER__RELAXED); /* a stale value only delays */
	uint64_t share = larder__maint_policy_share(m, cap);
	if (share != m->policy_capacity) {
		m->ops->set_capacity(m->policy, share);
		m->policy_capacity = share;
	}
	uint64_t want = atomic_load_explicit(&c->wanted, LARDER__RELAXED); /* a hint */
	/* Read once: the loop's byte stores (a victim's flags) may alias m. One
	 * shard's bytes are the mean: it always takes its turn, with no
	 * division per victim. */
	int sharded = m->shards > 1;
	uint64_t others = sharded ? others_live_bytes(m) : 0;
	uint64_t n = 0;
	while (m->live_bytes + others + want > cap && n < EVICT_PER_PASS) {
		if (sharded && !takes_turn(m, others)) {
			wake_largest(m);
			break;
		}
		uint64_t hash;
		struct larder__entry *e = m->ops->evict(m->policy, &hash); /* POLICY-P7 */
		if (!e)
			break;
		if (__builtin_expect(larder__probe_marked(e), 0)) /* PROBE-P4 */
			larder__probe_victim(m->probe, e);
		e->mbits &= (uint8_t)~LARDER__MBITS_QUEUED;
		n++;
		/* Not found: a pending event or a cleared table will retire it. */
		if (unlink_current(m, e, hash))
			larder__maint_retire_unlinked(m, e,
						      victim_expired(c, e) ? LARDER_CAUSE_EXPIRED
									  : LARDER_CAUSE_EVICTED);
		/* Shards evicting side by side see one another's progress every
		 * SHARE_REFRESH victims, not once a pass: each would otherwise
		 * evict up to a pass's worth past the capacity (4,096 entries;
		 * 5% of an 8 MiB cache of two shards). */
		if (sharded && n % SHARE_REFRESH == 0) {
			publish_live_bytes(m);
			others = others_live_bytes(m);
		}
	}
	if (n && want)
		atomic_store_explicit(&c->wanted, 0, LARDER__RELAXED); /* waiters re-assert */
	publish_live_bytes(m);
	return n;
}

/*
 * A wheel timer came due (its slot's tick <= now). The deadline is read
 * again: touch or after-access may have moved it later in place, and then
 * the entry is scheduled again; otherwise it is unlinked and retired.
 */
static void on_due(void *ctx, struct larder__wheel_link *link, uint32_t id)
{
	struct larder__maint *m = ctx;
	struct larder__entry *e = larder__wheel_entry(link);
	uint64_t d = larder__entry_deadline(e);
	if (d == UINT64_MAX)
		return; /* touch took its deadline away */
	if (d > m->now_ms) {
		larder__wheel_schedule(&m->wheel, link, id, d);
		return;
	}
	/* Not found: replaced or removed meanwhile; that event retires it. */
	if (unlink_current(m, e, larder__maint_entry_hash(m->cache, e)))
		larder__maint_retire_unlinked(m, e, LARDER_CAUSE_EXPIRED);
}

uint64_t larder__maint_expire(struct larder__maint *m)
{
	LARDER__MAINT_OWNER(m);
	if (!m->wheel.count) { /* an idle wheel costs no clock read */
		m->next_due = UINT64_MAX;
		m->staging = 0;
		return 0;
	}
	uint64_t now_ms = pass_now(m);
	uint64_t n = larder__wheel_advance(&m->wheel, now_ms, EXPIRE_PER_PASS, on_due, m);
	if (n < EXPIRE_PER_PASS) /* R-WHEEL: release; the listener calls before it */
		atomic_store_explicit(&m->wheel_done, now_ms, LARDER__RELEASE);
	else
		m->behind = 1;
	/* Cascades ahead of time, a bounded chunk per pass (after the expiries:
	 * it delays the next pass, not this one's). Counted as one unit of
	 * work, and as a walk (no lazy sleep, maint/maintainer.c): the
	 * maintainer keeps passing at the batching window until done, which is
	 * ample with a real clock (a level-l slot has 64^l ms of lead) without
	 * spinning. The share per expiry keeps staging level with
	 * expiry when the clock outruns the passes (an injected clock stepping
	 * by seconds): a timer is staged about 3 times (at most 5) for each
	 * time it expires. */
	uint64_t staged = larder__wheel_prepare(&m->wheel, STAGE_PER_PASS + STAGE_PER_EXPIRY * n);
	m->staging = staged != 0;
	m->next_due = larder__wheel_next(&m->wheel);
	return n + (staged != 0);
}
