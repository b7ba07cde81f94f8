/*
 * sync/reclaim.h - grace periods for memory unlinked from shared structures.
 *
 * One process-wide domain. Every thread that calls into larder owns one
 * reader slot (struct larder__reader), which its owner registers once and
 * never frees: the registry in reclaim.c keeps every slot ever registered,
 * and a slot's memory is only ever lent to another thread, outside any
 * section (GP-G4; core/thread.c keeps the slot in the thread's state and
 * keeps that state for the next thread). A read section
 * is bracketed by larder__read_enter()/larder__read_exit(); sections nest:
 * enter returns the slot's previous value (0, or the counter of an enclosing
 * section, which then stays in the slot) and exit stores it back, so nesting
 * needs no depth counter and neither call branches on the depth.
 * The reclaimer (a cache's maintainer) starts a grace period after unlinking
 * memory and frees that memory once larder__gp_poll() says every reader that
 * could still hold it has left its section.
 *
 * The read side is near free: with membarrier(2) available, enter and exit
 * are a plain store each plus a compiler barrier; the reclaimer pays for the
 * ordering with MEMBARRIER_CMD_PRIVATE_EXPEDITED (the scheme of liburcu's
 * "memb" flavour). Without membarrier, enter adds a full fence and the
 * reclaimer uses full fences (the symmetric scheme). See reclaim.c for the
 * algorithm and docs/memory-model.md for the edges.
 */
#ifndef LARDER_SYNC_RECLAIM_H
#define LARDER_SYNC_RECLAIM_H

#include <stdbool.h>
#include <stdint.h>

#include "sync/atomic.h"

#if defined(__SANITIZE_THREAD__)
#define LARDER__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define LARDER__TSAN 1
#endif
#endif

struct larder__reader {
	/*
	 * 0 outside a read section, else the grace-period counter read when the
	 * outermost section began. Written by the owner thread (GP-R1, GP-R2), read by
	 * the reclaimer in larder__gp_poll() (GP-A1). Not on a line of its own:
	 * the owner writes it twice per read, where a poll reads it about once a
	 * millisecond, so the owner keeps it beside the fields its reads load
	 * anyway (core/thread.h) and a read touches one line fewer.
	 */
	larder__atomic_u64 ctr;
};

/*
 * The grace-period counter; starts at 1, only ever increases. Every read
 * section loads it, and only grace-period starts write it, so it has a cache
 * line to itself: no other write may invalidate the readers' copy.
 */
struct larder__gp_state {
	larder__atomic_u64 counter;
} __attribute__((aligned(64)));
/* Hidden: the library's own symbols, read without a GOT load on every read. */
extern struct larder__gp_state larder__gp __attribute__((visibility("hidden")));
/* True when membarrier is not available: readers must fence. Set once, before
 * any reader registers, and never changed. */
extern bool larder__reclaim_fences __attribute__((visibility("hidden")));

/*
 * Adds a slot to the registry for good (slow path, once per slot), so that
 * every later poll reads it (GP-G4). Its counter must be 0, and its memory
 * must never be freed or reused for anything but a reader slot: a poll may
 * read it at any time. The owner may lend it to another thread outside any
 * section, without telling the registry. Returns false when out of memory
 * (the slot is then not registered and must not enter a section).
 */
bool larder__reader_register(struct larder__reader *r);

/* Enters a read section; pass the returned token to larder__read_exit(). */
static inline uint64_t larder__read_enter(struct larder__reader *r)
{
	/* Relaxed: the owner's own variable; nonzero inside an enclosing section. */
	uint64_t outer = atomic_load_explicit(&r->ctr, LARDER__RELAXED);
	/* Relaxed: any counter value is safe; a stale one only makes the
	 * reclaimer wait longer (see reclaim.c, "why one phase suffices"). */
	uint64_t gp = atomic_load_explicit(&larder__gp.counter, LARDER__RELAXED);
	/* A nested section keeps the outermost section's counter. */
	uint64_t ctr = outer ? outer : gp;
#ifdef LARDER__TSAN
	/* GP-R1 (TSan build): seq_cst, because TSan does not model membarrier or
	 * stand-alone fences; pairs with GP-A1 in larder__gp_poll(). */
	atomic_store_explicit(&r->ctr, ctr, LARDER__SEQ_CST);
#else
	/* GP-R1: relaxed store; ordered before the section's loads by membarrier
	 * (GP-M1 in larder__gp_start()) or by the fence below. Pairs with GP-A1. */
	atomic_store_explicit(&r->ctr, ctr, LARDER__RELAXED);
	if (__builtin_expect(larder__reclaim_fences, 0))
		atomic_thread_fence(LARDER__SEQ_CST); /* store-load: Dekker with GP-F1 */
	else
		larder__compiler_barrier();
#endif
	return outer;
}

/* Leaves the section that returned `outer`: back to the enclosing one, or out. */
static inline void larder__read_exit(struct larder__reader *r, uint64_t outer)
{
	/* GP-R2: release, so the section's loads happen before the reclaimer's
	 * acquire GP-A1 sees 0 and frees (GP-M2 covers weaker orders too). Storing an
	 * enclosing section's counter back changes nothing the reclaimer sees. */
	atomic_store_explicit(&r->ctr, outer, LARDER__RELEASE);
}

/* True inside a read section (owner thread only). */
static inline bool larder__read_active(struct larder__reader *r)
{
	return atomic_load_explicit(&r->ctr, LARDER__RELAXED) != 0; /* own variable */
}

/*
 * Starts a grace period covering everything unlinked before the call and
 * returns its token. Never blocks on readers (one membarrier syscall).
 */
uint64_t larder__gp_start(void);

/*
 * The token of the next grace period to start, by any thread (GP-G3 in
 * reclaim.c): memory unlinked before the call may be freed once
 * larder__gp_begun(token) and then larder__gp_poll(token) are true, without a
 * start of the caller's own. Takes no lock (GP-N1); never waits for a reader.
 */
uint64_t larder__gp_next(void);

/*
 * When the latest grace period began, by any thread (CLOCK_MONOTONIC ns, as
 * larder__monotonic_ns(); 0 before the first). A hint, read relaxed: the
 * maintainers of every shard and cache time their age limit from it, so
 * that K of them together start about as many as one (maint/maintainer.c,
 * gp_due), since one start covers every batch sealed before it (GP-G3).
 */
uint64_t larder__gp_started_ns(void);

/* True once a grace period with this token (or a later one) has started. */
bool larder__gp_begun(uint64_t token);

/*
 * True once every reader that was inside a section when the grace period
 * `token` started has left it: memory unlinked before larder__gp_start()
 * may then be freed. Never blocks on readers, and takes no lock: many
 * maintainers poll at once without serialising on each other or on threads
 * starting and exiting (GP-G4).
 */
bool larder__gp_poll(uint64_t token);

#endif /* LARDER_SYNC_RECLAIM_H */
