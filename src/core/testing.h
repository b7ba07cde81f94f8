/*
 * core/testing.h - seams for tests, linked from the static library.
 *
 * These functions are internal (hidden in the shared library): the unit and
 * stress tests link liblarder.a and use them to observe and steer the engine
 * without sleeping. None of them is needed, or safe to rely on, in production.
 */
#ifndef LARDER_CORE_TESTING_H
#define LARDER_CORE_TESTING_H

#include <stdint.h>

#include "larder.h"

/*
 * Waits until the maintainer has applied every event posted before the call,
 * finished the index growth and evictions they called for, freed every
 * retired entry (grace periods included) and unmapped the slab pages that
 * fell empty beyond the reserve. Does not stop other threads from
 * posting more. Returns 0, or -1 when timeout_ms passed first.
 */
int larder__test_quiesce(larder *cache, uint64_t timeout_ms);

/*
 * Walks the whole index and counts its entries and their slot bytes, inside
 * a read section (entries unlinked meanwhile are not freed under it). The
 * counts match the counters only when no thread writes and the maintainer
 * is quiesced.
 */
void larder__test_walk(larder *cache, uint64_t *entries, uint64_t *slot_bytes);

/*
 * Has the maintainer walk its eviction policy's queues at the end of its next
 * pass, checking every link (evict/list.h QUEUE-Q1) and that they hold exactly its
 * live entries; waits for the answer. Meaningful once quiesced with no thread
 * writing. Returns 0, or -1 when a link or the count is wrong or no answer
 * came within timeout_ms.
 */
int larder__test_check_links(larder *cache, uint64_t timeout_ms);

/* Sets the fewest buckets an index shrink may leave (TABLE-L3 in index/table.h;
 * normally at least LARDER__TABLE_SMALL_BUCKETS, 4 MiB), so that tests can
 * shrink small tables. */
void larder__test_index_floor(larder *cache, uint64_t buckets);

/* Makes the n-th next page mapping fail (0 = the next one); -1 turns it off. */
void larder__test_fail_mmap_after(long n);

/*
 * Makes the allocation after the next n fail (0: the next one): heap
 * allocations (core/alloc.h), page mappings and id-directory growth alike,
 * on any thread; the one that fails disarms it. -1 disarms it. Returns the
 * countdown left before the call (-1 when it was unarmed), so arming with a
 * large n and disarming later counts the allocations made in between.
 */
long larder__test_fail_alloc_after(long n);

/* Bytes currently mapped by larder, all caches together (leak checks). */
uint64_t larder__test_mapped_bytes(void);

/* When on, freed entry memory is filled with LARDER__POISON_BYTE. */
void larder__test_poison_freed(int on);

/* Wakes the maintainer if it sleeps, and returns at once (an injected clock
 * moved: a real clock needs no wake-up, the maintainer sleeps until the
 * wheel's next deadline). */
void larder__test_wake(larder *cache);

/*
 * larder_flush(), also saying in *passes how many passes of the shards'
 * maintainers it waited for, one shard's at a time (maint/flush.c): the
 * work a flush waited through, counted without a clock.
 */
int larder__test_flush(larder *cache, uint64_t timeout_ms, unsigned *passes);

/*
 * The cache-clock time up to which the maintainer's timing wheel has
 * expired everything (every entry due at or before it has been unlinked and
 * reported to the listener; release/acquire: the listener's writes are
 * visible once the caller sees the value). 0 before the first advance; not
 * moved while the wheel is empty (an idle wheel does not read the clock).
 */
uint64_t larder__test_wheel_done(larder *cache);

/*
 * The cache-clock time the maintainer meant to sleep until when it last
 * went idle: the timing wheel's next event (UINT64_MAX: none; 0: it has not
 * slept idle yet). It sleeps that long, at most 100 ms, on the cache clock.
 */
uint64_t larder__test_idle_until(larder *cache);

/* The passes that every shard's maintainer ran at once after a busy pass
 * and that found no event and nothing else to do (MAINT-M5 in
 * maint/maintainer.c says when that cannot happen). */
uint64_t larder__test_empty_followups(larder *cache);

/* Sets how long a removal listener call may run before writers waiting
 * for the maintainer give up with LARDER_EBUSY (1000 ms; core/cache.c). */
void larder__test_stuck_ms(larder *cache, uint64_t ms);

/*
 * A lower bound on the slot bytes ever allocated by the cache (monotone but
 * for a writer undoing its one unpublished allocation), for samplers that
 * bound used bytes across caches: allocated read first, then freed
 * (larder__maint_freed_bytes, maint/maintainer.h), bound used bytes from
 * below at every instant between the two reads, give or take one entry per
 * writer thread.
 */
uint64_t larder__test_allocated_bytes(larder *cache);

/*
 * The TSC bound on the default clock (core/clockbound.h), process-wide.
 * LARDER__CLOCKBOUND_ON calibrates now if it is not yet (blocks ~50 ms),
 * undoes OFF, FREEZE and a CLOCKBOUND-C2 failure, and publishes a bound;
 * OFF withdraws it (reads read the clock) until ON; FREEZE publishes a
 * fresh one (once calibrated), which the maintainers then stop refreshing
 * (it grows looser, as with a starved maintainer; CLOCKBOUND-C2 still
 * checks). Returns whether a
 * bound is published after the call (0 where there is none to have: not
 * x86, a clock source other than the TSC).
 */
enum { LARDER__CLOCKBOUND_OFF, LARDER__CLOCKBOUND_ON, LARDER__CLOCKBOUND_FREEZE };
int larder__test_clockbound(int mode);

/* Moves the published bound's B by ms of ticks (positive: later, a bound
 * too low, for CLOCKBOUND-C2 to catch). */
void larder__test_clockbound_skew(int64_t ms);

/* Makes the maintainers' refreshes of that bound sample now_ns (ns on
 * CLOCK_MONOTONIC) instead of the clock itself; NULL: the clock again. */
void larder__test_clockbound_clock(uint64_t (*now_ns)(void));

/* How many times CLOCKBOUND-C2 found the bound below the clock. */
uint64_t larder__test_clockbound_failures(void);

#define LARDER__POISON_BYTE 0xdb

#endif /* LARDER_CORE_TESTING_H */
