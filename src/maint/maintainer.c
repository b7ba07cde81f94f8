/*
 * maint/maintainer.c - the background thread of one shard of a cache
 * (core/shard.h): its pass, its sleep, the one way to wake it, and its
 * life cycle.
 *
 * Callers only change the index and post events (maint/events.h); this
 * thread does everything that spans entries: it applies events to the
 * eviction policy and the byte totals, evicts down to capacity, frees retired
 * memory after grace periods, grows the index, empties cleared tables and
 * expires entries on the TTL timing wheel (ttl/wheel.h). Each of those jobs
 * has its own file (maint/state.h lists them); this one calls them in turn.
 *
 * One pass (maint_pass):
 *   1. poll the grace period of the waiting batch and of cleared tables;
 *   2. drain every handle's event ring, then its hit ring;
 *   3. free the waiting batch if its grace period had ended in step 1 (after
 *      step 2, so that no event or hit sample still names its entries);
 *   4. empty cleared tables whose grace period ended (a chunk per pass);
 *   5. dismantle handles of exited threads;
 *   6. with the default clock and deadlines held, refresh the TSC's bound on
 *      the time that spares reads the clock (core/clockbound.h); then
 *      advance the timing wheel to the cache clock: due entries whose
 *      deadline (re-read: touch or after-access may have moved it later in
 *      place) has passed are unlinked and retired as EXPIRED, the others
 *      are scheduled again (at most EXPIRE_PER_PASS per pass); then
 *      cascade a bounded number of timers ahead of time;
 *   7. evict while live bytes + what waiting writers want > capacity;
 *   8. grow or shrink the index (a chunk of homes per pass; TABLE-L1 and TABLE-L3 in
 *      index/table.h);
 *   9. hand what was retired to a grace period, when none is running: one
 *      that another thread started since this shard sealed its batch
 *      (GP-G3 in sync/reclaim.c), or one of its own when due (gp_due: 256
 *      KiB retired, a writer waiting, or 1 ms); then seal what is left.
 * Then it sleeps: about 200 us per shard when work is pending (the
 * batching window, window_ns(), cut short by a writer whose event ring is
 * half full, or whose unread overwrites reach LARDER__WAKE_EVENTS:
 * larder__events_wake_due), until
 * woken (or 100 ms, or the wheel's next deadline) when idle. A pass that
 * drained many events, or walked a cleared table, runs the next one at
 * once, unless it drained the rings to empty and has nothing else left: it
 * sleeps lazily then (MAINT-M5). A pass that found only a trickle (at most
 * LAZY_EVENTS events, no walk left, memory not short, nobody waiting)
 * sleeps lazily instead: up to lazy_ms() (LAZY_MS per shard, at most
 * LAZY_MAX_MS) or the wheel's next deadline, woken by a writer only when
 * its ring is half full (its
 * overwrites: LARDER__WAKE_EVENTS unread), its entry is due before then
 * (WAKE-W4), memory runs short, or it waits for room. A window's polling,
 * or a wake per write, costs a context switch per request to a client
 * doing one write per round trip on a busy machine; the lazy
 * sleep costs one per lazy_ms(), and delays only what no caller waits for:
 * the policy's view, statistics, listener calls for removals (by at most
 * lazy_ms() plus a pass) and retired memory, which the budget bounds.
 *
 * TTL (the wheel, maint/evict.c). Bound on lateness
 * (tests/unit/test_ttl.c checks it with the injected clock): with the
 * maintainer not saturated, an entry is unlinked and reported EXPIRED by the
 * first pass whose clock reading is >= its deadline; passes run at least one
 * batching window apart while there is work, and a lazy or idle maintainer
 * sleeps only until the next wheel event (the next occupied slot, bank swap
 * or heap block, read from the bitmaps) measured on the cache clock, capped
 * at lazy_ms() or IDLE_NS; a writer whose entry is due before a lazy sleep
 * ends wakes it (WAKE-W4). So removal is at most one tick (1 ms, the
 * clock's resolution) + one batching window (window_ns(), at most 1 ms)
 * late: the wheel's cascades are done ahead of time, STAGE_PER_PASS timers
 * per pass plus STAGE_PER_EXPIRY per expiry (larder__wheel_prepare), so
 * reaching a higher-level slot costs a swap, not a re-placement of its
 * timers (a level-3 slot holds ~730,000 with 10^7 deadlines over an hour).
 * The cap is what an injected clock costs: the maintainer cannot know when a
 * test's clock will jump, so a jump while it sleeps is seen at most IDLE_NS
 * later (larder__test_quiesce wakes it at once).
 *
 * Expire-after-access (larder_config_set_expiry): readers move deadlines
 * later themselves, at the read (core/cache.c, extend_on_read; ENTRY-E4 in
 * core/entry.h); to the wheel such a deadline is one more that moved later
 * in place.
 *
 * Invariants (checked by tests/stress via the quiesce and walk seams):
 *   MAINT-M1. live_count/live_bytes equal the entries (and slot bytes) in the index
 *       once every event has been applied (quiescent).
 *   MAINT-M2. An entry is freed only after a grace period that began after it was
 *       unlinked, and after every ring was drained following that period.
 *   MAINT-M3. Every entry leaves through retire_sized() (maint/apply.c), or for an
 *       overwrite of a queued entry through its end, retire_unqueued(), or for
 *       an overwrite of the same sizes with no deadline and no listener
 *       through apply_overwrite(), which does what those would there,
 *       exactly once, with its cause;
 *       the listener sees every cause except RELOCATE's internal copies.
 *   MAINT-M4. Evictions stop once the cache's live bytes (every shard's) +
 *       wanted <= capacity, so with writers limited by the one budget, used
 *       bytes <= capacity + overshoot bound. With several shards a
 *       maintainer evicts only while its own live bytes are at least the
 *       mean of the published ones less an eighth, and wakes the largest
 *       shard otherwise (maint/evict.c).
 *   MAINT-M5. A pass of at least LARDER__MAINT_BUSY_PASS work runs the next one
 *       at once, unless its work was its events alone and nothing else is
 *       left (no walk, no expiry behind, memory not short, nobody waiting,
 *       no retired batch whose grace period has ended) and it left the
 *       rings empty: then it sleeps lazily, whose re-check of the rings
 *       after announcing the sleep (WAKE-W2) sends it to a pass at once
 *       instead if anything came. So a pass run at once after a busy pass
 *       of events finds an event, or a batch to free.
 *       Until 2026-12-06 that pass ran anyway, found the rings empty and
 *       slept the same lazy sleep: with K shards each keeping up, about a
 *       pass in three (docs/shards.md, "Passes that find nothing", kflat24).
 */
#define _GNU_SOURCE
#include "maint/maintainer.h"

#include <stdio.h>
#include <stdlib.h>

#include "core/alloc.h"
#include "core/cache.h"
#include "core/clockbound.h"
#include "core/dict.h"
#include "core/thread.h"
#include "evict/policy.h"
#include "index/table.h"
#include "maint/events.h"
#include "maint/state.h"
#include "mem/slab.h"
#include "pool/pool.h"
#include "sync/futex.h"
#include "sync/reclaim.h"
#include "ttl/wheel.h"

#define WINDOW_NS (200u * 1000u)
#define WINDOW_MAX_NS (1000u * 1000u)
#define LAZY_MS 2u
#define LAZY_MAX_MS 8u
#define LAZY_EVENTS 64u
#define IDLE_NS (100u * 1000u * 1000u)
#define GP_BATCH_BYTES (256u * 1024u)
#define GP_INTERVAL_NS (1000u * 1000u)

/*
 * The wait for a pass (writers short of room, ring or index; the pool's
 * give-back; larder_flush) and its wake-up, one per arming. Until
 * 2026-12-06 every pass of every maintainer made a futex wake while
 * room_waiters was non-zero, and a woken waiter counts itself out only
 * once it runs: K maintainers' passes woke the same sleepers again and
 * again (0.42 wakes per 1,000 puts against 0.06 waits at K = 4). Now a
 * waiter sets room_sleeping before its futex wait, and the first bump that
 * finds it set clears it and wakes every sleeper; later passes find it
 * clear and make no call, until a waiter that still lacks room sets it again.
 * No wake-up is lost (WAKE-W3): waiter and waker each store then load (the
 * flag then the futex word's compare; the bump then the flag), seq_cst on
 * both sides, so either the waker sees the flag or the waiter's compare
 * sees the bump and it does not sleep. The flag the exchange clears may be
 * a waiter's that loaded room_seq after this pass's bump (its compare
 * cannot see that bump, and the wake may come before it sleeps), so the
 * waker that clears the flag bumps again before its wake: every waiter
 * whose flag it cleared set it, and so loaded the seq, before the
 * exchange; its compare sees the second bump, or it is queued before the
 * wake. Until that second bump (found by tests/stress/stress_room.c under
 * TSan, ci76) such a waiter slept on with the flag clear until its wait's
 * slice ended. A waker that sees the flag but loses the exchange leaves
 * the wake to the one that won it.
 */
int larder__maint_wake_writers(struct larder *c)
{
	/* R-ROOM: seq_cst (its release half pairs with A-ROOM: the room this
	 * pass freed before a writer re-checks the budget). The seq is also
	 * the futex word waiters sleep on; seq_cst for WAKE-W3 (the flag's
	 * load must not pass the bump, on weak CPUs). */
	atomic_fetch_add_explicit(&c->room_seq, 1, LARDER__SEQ_CST);
	/* WAKE-W3: seq_cst load, then an exchange only when set, so that a pass
	 * with nobody to wake writes no shared line. */
	if (!atomic_load_explicit(&c->room_sleeping, LARDER__SEQ_CST) ||
	    !atomic_exchange_explicit(&c->room_sleeping, 0, LARDER__SEQ_CST)) /* WAKE-W3 */
		return 0;
	/* WAKE-W3: seq_cst, after the exchange: the waiters whose flag it
	 * cleared loaded room_seq before this bump. */
	atomic_fetch_add_explicit(&c->room_seq, 1, LARDER__SEQ_CST);
	larder__futex_wake(&c->room_seq, INT32_MAX);
	return 1;
}

void larder__room_wait(struct larder *c, uint32_t seq, uint64_t timeout_ns)
{
	/* WAKE-W3: seq_cst, Dekker with the load in wake_writers(): it sees the
	 * flag, or our futex compare sees its bump of room_seq. */
	atomic_store_explicit(&c->room_sleeping, 1, LARDER__SEQ_CST);
	larder__futex_wait(&c->room_seq, seq, timeout_ns);
}

/*
 * A grace period costs two membarrier calls, each of which interrupts every
 * CPU running one of our threads: start one only for a batch worth it (256
 * KiB), when a writer (or a test seam) waits, or when the last one is 1 ms old,
 * so that retired memory waits at most about 1 ms plus the grace period
 * itself. The last one is anyone's (larder__gp_started_ns): a start covers
 * every shard's sealed batch (GP-G3), and with each shard timing its own,
 * K shards started up to K a millisecond where one shard started one.
 * The batch was 64 KiB until 2026-12-05: with the writer on another core
 * (a KVM guest, where each interrupt is a trip through the hypervisor)
 * the maintainer spent 55% of its time in the kernel; at 256 KiB, 23%, and
 * 0.83x the CPU per put (tools/larder-bench/pin.sh, docs/bench.md).
 */
static int gp_due(struct larder__maint *m)
{
	struct larder *c = m->cache;
	return m->collect_bytes + m->sealed_bytes >= GP_BATCH_BYTES ||
	       atomic_load_explicit(&c->room_waiters, LARDER__RELAXED) || /* a hint */
	       atomic_load_explicit(&m->pass_waiters, LARDER__RELAXED) || /* a hint (flush) */
	       atomic_load_explicit(&c->stop, LARDER__RELAXED) ||
	       larder__monotonic_ns() - larder__gp_started_ns() >= GP_INTERVAL_NS;
}

/*
 * Step 9 of the pass. With K shards each maintainer's batch reached 256 KiB
 * K times slower, so most of their grace periods began by the 1 ms age
 * limit: K starts (each a membarrier that interrupts every CPU running one
 * of our threads; off x86, a second at its end, GP-M2) where one shard
 * needed one.
 * A sealed batch rides on any start after its seal, ours, another shard's,
 * a clear's or a resize's; a maintainer starts one itself only when gp_due
 * says so. Returns the work done (0 or 1).
 */
static uint64_t gp_hand_over(struct larder__maint *m)
{
	uint64_t work = 0;
	int running = m->waiting || m->waiting_sealed; /* one batch waits at a time */
	if (!running && m->sealed && larder__gp_begun(m->sealed_token)) {
		m->waiting = m->sealed;
		m->waiting_bytes = m->sealed_bytes;
		m->waiting_token = m->sealed_token;
		m->sealed = NULL;
		m->sealed_bytes = 0;
		work = 1;
	} else if (!running && (m->collect || m->sealed) && gp_due(m)) {
		m->waiting = m->collect;
		m->waiting_bytes = m->collect_bytes;
		m->waiting_sealed = m->sealed;
		m->waiting_sealed_bytes = m->sealed_bytes;
		m->waiting_token = larder__gp_start();
		m->collect = m->sealed = NULL;
		m->collect_bytes = m->sealed_bytes = 0;
		work = 1;
	}
	if (!m->sealed && m->collect) {
		m->sealed_token = larder__gp_next();
		m->sealed = m->collect;
		m->sealed_bytes = m->collect_bytes;
		m->collect = NULL;
		m->collect_bytes = 0;
	}
	return work;
}

/* Test seam: the queues are ours (ENTRY-E3), so the check runs here, on request. */
static void check_links_if_asked(struct larder__maint *m)
{
	/* A-CHKQ: acquire, pairs with R-CHKQ: the asker's earlier operations. */
	uint64_t asked = atomic_load_explicit(&m->check_asked, LARDER__ACQUIRE);
	if (asked == atomic_load_explicit(&m->check_answered, LARDER__RELAXED)) /* ours */
		return;
	int64_t linked = m->ops->check(m->policy);
	/* Relaxed: published by R-CHKA below. */
	atomic_store_explicit(&m->check_ok, linked >= 0 && (uint64_t)linked == m->live_count,
			      LARDER__RELAXED);
	/* R-CHKA: release, pairs with A-CHKA in larder__test_check_links(). */
	atomic_store_explicit(&m->check_answered, asked, LARDER__RELEASE);
}

/* One pass; returns how much it did (0 = idle). */
static uint64_t maint_pass(struct larder__maint *m)
{
	LARDER__MAINT_OWNER(m);
	struct larder *c = m->cache;
	uint64_t work = 0;
	larder__stat_bump(&m->pass_seq, 1);
	m->have_now = 0;
	m->behind = 0;
	/* QUIESCE-Q1: orders the pass number before this pass's ring reads; with the
	 * fence in larder_flush() and larder__test_quiesce(), a pass numbered
	 * after the caller read pass_seq sees everything posted before the call. */
	atomic_thread_fence(LARDER__SEQ_CST);
	larder__maint_bump(m, LARDER_STAT_MAINT_PASSES, 1);
	/* A-BULK: acquire, pairs with R-BULK in larder__bulk_end(): a count
	 * seen fallen means this pass's drain sees the bulk writer's events. */
	m->bulk_seen = atomic_load_explicit(&c->bulk_writers, LARDER__ACQUIRE);

	int batch_ready = (m->waiting || m->waiting_sealed) && larder__gp_poll(m->waiting_token);
	int gen_ready = m->gens && larder__gp_poll(m->gens->retire_token);
	uint64_t hits;
	uint64_t events = larder__maint_drain_all(m, &hits);
	/* Hit samples alone keep the maintainer polling at the batching window
	 * only where they must come on time: a policy that counts them
	 * (hits_keep_awake, evict/policy.h) or expire-after-access, whose
	 * deadlines they extend. Otherwise a read-only phase lets it sleep: the
	 * rings keep each thread's latest samples, the accessed mark (ENTRY-E7) the
	 * rest, and no maintainer write invalidates lines the readers share
	 * (2 reader threads: 1.80x one thread's reads with polling, 2.0x without). */
	work += events + (hits != 0 && m->hits_keep_awake);
	/* A trickle: few events (and few hits a policy counts) since the last pass. */
	m->trickle = events + (m->hits_keep_awake ? hits : 0) <= LAZY_EVENTS;
	if (m->at_once && !events) /* MAINT-M5 says it cannot be: a test seam */
		larder__stat_bump(&m->empty_followups, 1);
	m->at_once = 0;
	if (batch_ready) {
		larder__maint_free_entries(m, m->waiting, m->waiting_bytes);
		larder__maint_free_entries(m, m->waiting_sealed, m->waiting_sealed_bytes);
		m->waiting = m->waiting_sealed = NULL;
		m->waiting_bytes = m->waiting_sealed_bytes = 0;
		larder__maint_wake_writers(c);
		work++;
	}
	if (m->tables) {
		larder__maint_free_tables(m);
		work++;
	}
	larder__slab_keep_trim(&m->shard->slab, 0); /* a lowered capacity's limit (SLAB-S6) */
	larder__slab_shared_trim(&m->shard->slab); /* a cut's shared pages (SLAB-S8) */
	work += larder__maint_clear_walk(m, gen_ready);
	work += (uint64_t)larder__maint_reap_orphans(m);
	/* While it holds deadlines, each pass refreshes the TSC bound that
	 * spares reads the clock (core/clockbound.h; the default clock only). */
	if (m->wheel.count && c->clock == larder__clock_default)
		larder__clockbound_refresh();
	work += larder__maint_expire(m);
	work += larder__maint_evict(m);
	work += (uint64_t)larder__maint_resize(m);
	if (m->shard == &c->shard[0]) /* the dictionary's sample is shard 0's job */
		work += larder__dict_maint(c);
	if (m->growing || events)
		larder__maint_wake_writers(c); /* writers waiting for the index or the ring */
	work += gp_hand_over(m);
	/* Relaxed: read by a statistics snapshot only. */
	atomic_store_explicit(&m->stat[LARDER_STAT_ENTRIES], m->live_count, LARDER__RELAXED);
	check_links_if_asked(m);
	int pending = m->collect || m->sealed || m->waiting || m->waiting_sealed || m->gens ||
		      m->tables || m->growing;
	/* Walks (clear, growth, freed tables, the wheel's staging) go a chunk
	 * per pass: no lazy sleep while one is left, nor while memory is short
	 * or anyone waits for us. */
	int quiet = !m->gens && !m->tables && !m->growing && !m->staging &&
		    !larder__budget_short(c, atomic_load_explicit(&c->budget,
								  LARDER__RELAXED)) && /* a hint */
		    !atomic_load_explicit(&c->room_waiters, LARDER__RELAXED) &&   /* a hint */
		    !atomic_load_explicit(&m->pass_waiters, LARDER__RELAXED);     /* a hint */
	m->trickle = m->trickle && quiet;
	/* MAINT-M5: busy with its events alone (hits a policy counts keep it
	 * polling, as for a trickle), all due expired. */
	m->caught_up = quiet && !m->behind && !(hits && m->hits_keep_awake) &&
		       work - events < LARDER__MAINT_BUSY_PASS;
	if (!work && !pending) {
		/* A quiesce point: the retired lists are empty, so are their byte
		 * counts, and the live totals agree on emptiness (MAINT-M1). */
		LARDER__ASSERT(m->collect_bytes == 0 && m->sealed_bytes == 0 &&
			       m->waiting_bytes == 0 && m->waiting_sealed_bytes == 0);
		LARDER__ASSERT((m->live_count == 0) == (m->live_bytes == 0));
		/* QUIESCE-Q2: release; the quiesce seam acquires it (QUIESCE-Q3). */
		atomic_store_explicit(&m->idle_seq,
				      atomic_load_explicit(&m->pass_seq, LARDER__RELAXED),
				      LARDER__RELEASE);
	}
	/* What larder_flush reads of this pass (maint/flush.c), after the entry
	 * count above. */
	uint64_t seq = atomic_load_explicit(&m->pass_seq, LARDER__RELAXED); /* ours */
	atomic_store_explicit(&m->removed_bytes, m->removed, LARDER__RELAXED); /* by QUIESCE-Q7 */
	/* QUIESCE-Q7: release; larder_flush acquires it (QUIESCE-Q8): the
	 * removed bytes stored above are seen with it. */
	atomic_store_explicit(&m->ended_live, m->live_bytes, LARDER__RELEASE);
	if (!m->gens && !m->behind) /* every cleared table walked, all due expired */
		atomic_store_explicit(&m->settled_seq, seq, LARDER__RELAXED); /* by QUIESCE-Q4 */
	/* QUIESCE-Q4: release; larder_flush acquires it (QUIESCE-Q5): this
	 * pass's counters, entry count and the stores above are seen. */
	atomic_store_explicit(&m->ended_seq, seq, LARDER__RELEASE);
	/* larder_flush or a test seam waits for this pass: an idle one bumps
	 * nothing else. Relaxed: a hint; their waits are bounded anyway. */
	if (atomic_load_explicit(&m->pass_waiters, LARDER__RELAXED))
		larder__maint_wake_writers(c);
	return work + (uint64_t)pending;
}

/*
 * How long the sleeps that end by themselves last: the batching window
 * WINDOW_NS per shard, at most WINDOW_MAX_NS, and the lazy sleep LAZY_MS
 * per shard, at most LAZY_MAX_MS. A shard's rings get 1/K of the cache's
 * events, so sleeps of one shard's length left each of K maintainers 1/K
 * of a batch per pass, and K maintainers together ran K times the passes
 * (each a sleep and a wake-up in the kernel) of one: with 2 writers,
 * 2.25-3.5x the passes per put at K = 4 (docs/shards.md, "Sleeps per
 * shard"). Scaled, K shards together wake about as often as one, and each
 * pass takes K times the batch. What the longer sleeps delay is what no
 * caller waits for (the lazy sleep's comment below): a writer's half-full
 * ring (or LARDER__WAKE_EVENTS unread overwrites) still cuts either short,
 * and an entry due sooner, memory short or a waiting writer a lazy one
 * (WAKE-W4, larder__budget_short, room_waiters). The window's cap keeps
 * the TTL's lateness bound (above) within a tick and a millisecond.
 */
static uint64_t window_ns(const struct larder__maint *m)
{
	uint64_t ns = (uint64_t)WINDOW_NS * m->shards;
	return ns < WINDOW_MAX_NS ? ns : WINDOW_MAX_NS;
}

static uint64_t lazy_ms(const struct larder__maint *m)
{
	uint64_t ms = (uint64_t)LAZY_MS * m->shards;
	return ms < LAZY_MAX_MS ? ms : LAZY_MAX_MS;
}

/*
 * The lazy sleep, after a pass that found a trickle of work: up to lazy_ms()
 * (LAZY_MS with one shard), or to the wheel's next event if sooner. A
 * writer wakes it only where a batching window would not do: its ring half
 * full (larder__events_wake_due), an entry due before wake_at (WAKE-W4),
 * memory short (larder__budget_short), or a wait for room. So a trickle of
 * writes costs a pass per lazy_ms() rather than one (or a window's worth
 * of polling) per write. Returns 1 after the sleep; without sleeping, -1
 * when a timer is due, and 0 when an event came after the drain (its
 * writer may have seen us awake, and its deadline is unknown) or the cache
 * closes: the caller sleeps a window instead, or after a busy pass runs
 * the next one at once (MAINT-M5).
 */
static int lazy_sleep(struct larder__maint *m)
{
	struct larder *c = m->cache;
	struct larder__shard *s = m->shard;
	uint64_t now_ms = c->clock(c->clock_ctx);
	uint64_t wake_at_ms = now_ms + lazy_ms(m);
	if (m->next_due < wake_at_ms)
		wake_at_ms = m->next_due;
	if (wake_at_ms <= now_ms)
		return -1; /* a timer is due: a window, as before there was a lazy sleep */
	/* Relaxed: published by WAKE-W4's release below. */
	atomic_store_explicit(&s->maint_wake_at, wake_at_ms, LARDER__RELAXED);
	/* WAKE-W2 and WAKE-W4: seq_cst (its release half publishes wake_at_ms to
	 * the writer's acquire in larder__maint_wake), then re-check the rings:
	 * an event that arrived since the drain (its writer may have seen us
	 * awake) sends us to a window instead. */
	atomic_store_explicit(&s->maint_sleeping, MAINT_LAZY, LARDER__SEQ_CST);
	if (!larder__maint_rings_empty(s) || atomic_load_explicit(&c->stop, LARDER__SEQ_CST)) {
		atomic_store_explicit(&s->maint_sleeping, 0, LARDER__RELAXED); /* awake; as below */
		return 0;
	}
	larder__futex_wait(&s->maint_sleeping, MAINT_LAZY, (wake_at_ms - now_ms) * 1000000u);
	/* Relaxed: awake again; the next pass's reads are ordered by QUIESCE-Q1. */
	atomic_store_explicit(&s->maint_sleeping, 0, LARDER__RELAXED);
	return 1;
}

static void maint_sleep(struct larder__maint *m, uint64_t work)
{
	struct larder *c = m->cache;
	struct larder__shard *s = m->shard;
	if (work >= LARDER__MAINT_BUSY_PASS) {
		/* MAINT-M5: a pass at once drains what came meanwhile, and frees
		 * the batch whose grace period has ended; with neither (the rings
		 * empty: a hint, re-checked inside), it would do nothing and then
		 * sleep lazily, so sleep now. */
		if (!m->caught_up ||
		    ((m->waiting || m->waiting_sealed) && larder__gp_poll(m->waiting_token)))
			return;
		int slept = larder__maint_rings_empty(s) ? lazy_sleep(m) : 0;
		m->at_once = slept == 0; /* the next pass finds an event */
		return;
	}
	if (work) {
		if (m->trickle && lazy_sleep(m) > 0)
			return;
		/* The batching window: a writer whose ring is half full cuts it
		 * short (larder__events_wake_due; WAKE-W1); relaxed, the futex word
		 * needs no ordering here. */
		atomic_store_explicit(&s->maint_sleeping, MAINT_WINDOW, LARDER__RELAXED);
		larder__futex_wait(&s->maint_sleeping, MAINT_WINDOW, window_ns(m));
		atomic_store_explicit(&s->maint_sleeping, 0, LARDER__RELAXED); /* awake; as above */
		return;
	}
	/* Sleep until the wheel's next event at most (on the cache clock; see
	 * the lateness bound above), never longer than IDLE_NS. */
	atomic_store_explicit(&m->idle_until, m->next_due, LARDER__RELAXED); /* a test seam */
	uint64_t sleep_ns = IDLE_NS;
	if (m->next_due != UINT64_MAX) {
		uint64_t now_ms = c->clock(c->clock_ctx);
		if (m->next_due <= now_ms)
			return;
		if (m->next_due - now_ms < IDLE_NS / 1000000u)
			sleep_ns = (m->next_due - now_ms) * 1000000u;
	}
	/* WAKE-W2: announce sleep, then re-check the rings (Dekker with WAKE-W1 in
	 * larder__maint_wake(): one of us sees the other). */
	atomic_store_explicit(&s->maint_sleeping, MAINT_IDLE, LARDER__SEQ_CST);
	if (larder__maint_rings_empty(s) && !atomic_load_explicit(&c->stop, LARDER__SEQ_CST))
		larder__futex_wait(&s->maint_sleeping, MAINT_IDLE, sleep_ns);
	/* Relaxed: awake again; the next pass's reads are ordered by QUIESCE-Q1. */
	atomic_store_explicit(&s->maint_sleeping, 0, LARDER__RELAXED);
}

static void *maint_main(void *arg)
{
	struct larder__shard *s = arg;
	struct larder *c = s->cache;
	/* Named for the operator's tools (top -H, perf, gdb, /proc/PID/task/TID/comm):
	 * "larder-maint/K", K its shard. A failure only leaves the name inherited. */
	char name[16];
	snprintf(name, sizeof(name), "larder-maint/%u", s->index);
	(void)pthread_setname_np(pthread_self(), name);
	/* Before any listener runs: this thread's writes must never wait
	 * (core/cache.c, wait_pass). Without its state it cannot run at all. */
	struct larder__thread *self = larder__thread_self();
	if (self)
		self->maintainer = 1;
	/* R-START: release, pairs with A-START in larder__maint_start(). */
	atomic_store_explicit(&s->maint_started, self ? MAINT_RUNNING : MAINT_NO_STATE,
			      LARDER__RELEASE);
	larder__futex_wake(&s->maint_started, 1);
	if (!self)
		return NULL;
	/* A-STOP: acquire, pairs with R-STOP in larder__maint_stop(). */
	while (!atomic_load_explicit(&c->stop, LARDER__ACQUIRE))
		maint_sleep(s->maint, maint_pass(s->maint));
	/* What callers posted before close: applied here, so that the
	 * listener hears of those removals on this thread, not the closer's. */
	uint64_t hits;
	larder__maint_drain_all(s->maint, &hits);
	return NULL;
}

void larder__maint_wake_sleeper(struct larder__shard *s, struct larder__handle *posted,
				uint64_t due_ms, uint32_t st)
{
	if (posted && (st == MAINT_WINDOW || st == MAINT_LAZY) &&
	    !larder__events_wake_due(posted) &&
	    (st == MAINT_WINDOW ||
	     due_ms >= atomic_load_explicit(&s->maint_wake_at, LARDER__RELAXED))) /* WAKE-W4 */
		return;
	/* Relaxed: the futex word; WAKE-W1 already ordered the caller's change before it. */
	if (atomic_exchange_explicit(&s->maint_sleeping, MAINT_AWAKE, LARDER__RELAXED))
		larder__futex_wake(&s->maint_sleeping, 1);
}

void larder__maint_wake_all(struct larder *c)
{
	for (unsigned i = 0; i < c->shard_count; i++)
		larder__maint_wake(&c->shard[i], NULL, 0);
}

/* ---- Life cycle --------------------------------------------------------------- */

int larder__maint_create(struct larder__shard *s)
{
	struct larder *c = s->cache;
	struct larder__maint *m = larder__calloc(1, sizeof(*m));
	if (!m)
		return LARDER_ENOMEM;
	m->cache = c;
	m->shard = s;
	m->shard_index = s->index;
	m->shards = c->shard_count;
	m->next_due = UINT64_MAX;
	larder__maint_classes_init(m);
	/* Wheel time starts at 0: no clock call at open; the first advance
	 * jumps to the clock over empty slots. */
	larder__wheel_init(&m->wheel, 0, &s->slab.dir, LARDER__ENTRY_WHEEL_OFFSET,
			   larder__maint_wheel_deadline, m);
	m->ops = larder__policy_ops_for(c->policy);
	m->hits_keep_awake = m->ops->hits_keep_awake;
	m->policy_capacity = larder__maint_policy_share(
		m, atomic_load_explicit(&c->capacity, LARDER__RELAXED)); /* not shared yet */
	struct larder__table *first = /* the open's own table, not shared yet */
		(struct larder__table *)atomic_load_explicit(s->table, LARDER__RELAXED);
	uint64_t floor = larder__table_buckets(first);
	if (floor < LARDER__TABLE_SMALL_BUCKETS)
		floor = LARDER__TABLE_SMALL_BUCKETS;
	atomic_store_explicit(&m->index_floor, floor, LARDER__RELAXED); /* not shared yet */
	struct larder__policy_host host = {larder__maint_entry_hash, larder__maint_entry_charge, c,
					   &s->slab.dir};
	int rc = m->ops->create(&m->policy, &host, m->policy_capacity,
				c->expected_entries / c->shard_count);
	if (rc != LARDER_OK)
		goto fail_policy;
	rc = larder__pool_probe_create(c, s->index, &host, &m->probe); /* a pooled cache's (or NULL) */
	if (rc != LARDER_OK)
		goto fail_probe;
	s->maint = m;
	return LARDER_OK;

fail_probe:
	m->ops->destroy(m->policy);
fail_policy:
	free(m);
	return rc;
}

int larder__maint_start(struct larder__shard *s)
{
	if (pthread_create(&s->thread, NULL, maint_main, s) != 0)
		return LARDER_ETHREAD;
	/* A-START: acquire, pairs with R-START: the thread's verdict. */
	uint32_t st;
	while ((st = atomic_load_explicit(&s->maint_started, LARDER__ACQUIRE)) == MAINT_STARTING)
		larder__futex_wait(&s->maint_started, MAINT_STARTING, 10u * 1000u * 1000u);
	if (st == MAINT_RUNNING)
		return LARDER_OK;
	pthread_join(s->thread, NULL);
	return LARDER_ENOMEM;
}

static void free_large(void *ctx, struct larder__entry *e)
{
	struct larder__shard *s = ctx;
	size_t bytes = larder__entry_size(e);
	if (bytes > LARDER__SLAB_MAX_SLOT)
		larder__slab_free(&s->slab, e, bytes);
}

static void free_large_list(struct larder__shard *s, struct larder__entry *e)
{
	while (e) {
		struct larder__entry *next = e->retired_next; /* free_large may unmap e */
		free_large(s, e);
		e = next;
	}
}

void larder__maint_destroy(struct larder__shard *s)
{
	struct larder__maint *m = s->maint;
	/* Apply what threads posted last, so that every entry is in the index or
	 * on a retire list; then slab pages go back whole, and only private
	 * mappings need a walk. The maintainer's last drain (maint_main) left
	 * only what its listener wrote meanwhile; no listener runs here, on the
	 * closing thread (larder.h: removals at close are not reported). */
	uint64_t hits;
	m->closing = 1;
	larder__maint_drain_all(m, &hits);
	struct larder__table *root = /* A-ROOT */
		(struct larder__table *)atomic_load_explicit(s->table, LARDER__ACQUIRE);
	larder__table_walk(root, free_large, s);
	larder__table_destroy(larder__table_next(root));
	larder__table_destroy(root);
	larder__maint_clear_destroy(m, free_large);
	while (m->tables) {
		struct larder__table *t = m->tables;
		m->tables = t->retire_next;
		larder__table_destroy(t);
	}
	free_large_list(s, m->collect);
	free_large_list(s, m->sealed);
	free_large_list(s, m->waiting);
	free_large_list(s, m->waiting_sealed);
	struct larder__handle *h = larder__maint_handles(s);
	while (h) {
		struct larder__handle *next = h->next;
		larder__maint_spill_free(h);
		free(h);
		h = next;
	}
	m->ops->destroy(m->policy);
	larder__probe_destroy(m->probe);
	larder__wheel_destroy(&m->wheel);
	free(m);
}

void larder__maint_stop(struct larder *c, unsigned started)
{
	/* R-STOP: seq_cst (a release would do for A-STOP, which it pairs with;
	 * larder__maint_wake() then orders it before its sleeper check, WAKE-W1). */
	atomic_store_explicit(&c->stop, 1, LARDER__SEQ_CST);
	for (unsigned i = 0; i < started; i++)
		larder__maint_wake(&c->shard[i], NULL, 0);
	for (unsigned i = 0; i < started; i++)
		pthread_join(c->shard[i].thread, NULL);
}

uint64_t larder__maint_freed_bytes(struct larder *c)
{
	uint64_t freed = 0;
	for (unsigned i = 0; i < c->shard_count; i++)
		/* Acquire: pairs with R-FREED; frees counted here happened before. */
		freed += atomic_load_explicit(&c->shard[i].maint->freed_bytes, LARDER__ACQUIRE);
	return freed;
}

void larder__maint_stats(struct larder *c, uint64_t *values)
{
	for (unsigned k = 0; k < c->shard_count; k++) {
		struct larder__maint *m = c->shard[k].maint;
		for (unsigned i = 0; i < LARDER_STAT_COUNT; i++) /* statistics: relaxed */
			values[i] += atomic_load_explicit(&m->stat[i], LARDER__RELAXED);
		values[LARDER_STAT_USED_BYTES] -=
			atomic_load_explicit(&m->freed_bytes, LARDER__RELAXED);
	}
}
