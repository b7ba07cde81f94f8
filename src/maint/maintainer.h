/*
 * maint/maintainer.h - the background thread of one cache (the physical plane).
 */
#ifndef LARDER_MAINT_MAINTAINER_H
#define LARDER_MAINT_MAINTAINER_H

#include <stdint.h>

#include "larder.h"

struct larder;
struct larder__handle;

/* Creates the maintainer's state (policy included). LARDER_OK or LARDER_ENOMEM. */
int larder__maint_create(struct larder *cache);
/* Starts the thread and waits until it runs: LARDER_OK, LARDER_ETHREAD, or
 * LARDER_ENOMEM (it could not allocate its per-thread state; joined). */
int larder__maint_start(struct larder *cache);
/* Stops and joins the thread. */
void larder__maint_stop(struct larder *cache);
/* With the thread stopped (or never started): frees every table (the index
 * it was given at create and every later one), the entries with mappings of
 * their own, and every handle. Slab pages are left to the slab, which the
 * cache destroys after this (whoever creates it destroys it). */
void larder__maint_destroy(struct larder *cache);
/*
 * The one way to wake the maintainer. After posting an event through
 * `posted`, whose entry's deadline is `due_ms` (cache clock; UINT64_MAX:
 * none, 0: apply it at once): wakes it if it sleeps idle, if that handle's
 * ring is half full, or if it sleeps lazily past `due_ms` (WAKE-W1, a Dekker
 * with WAKE-W2 in its sleep; WAKE-W4). With posted NULL: wakes it if it
 * sleeps at all (the caller changed something no ring shows: the capacity,
 * the stop flag, a thread's exit, a writer waiting for room or short of
 * it, a test seam).
 */
void larder__maint_wake(struct larder *cache, struct larder__handle *posted, uint64_t due_ms);
/* Wakes the maintainer and waits up to 1 ms for one of its passes
 * (larder_flush and the test seams; maint/flush.c). */
void larder__maint_await_pass(struct larder *cache);
/*
 * A bulk writer (larder_load; SNAP-L6 in core/snapshot.c, maint/resize.c):
 * larder__bulk_begin() counts it (no index shrinks while any runs) and asks
 * for an index that holds `entries`, waiting a bounded time for the growth;
 * larder__bulk_reserve() asks again without waiting (after a clear, the
 * fresh table needs it); larder__bulk_end() ends the count. Caller thread,
 * outside read sections (inside one, or on the maintainer's thread, only
 * the count is kept).
 */
void larder__bulk_begin(struct larder *cache, uint64_t entries);
void larder__bulk_reserve(struct larder *cache, uint64_t entries);
void larder__bulk_end(struct larder *cache);
/* Bytes freed so far (only grows). */
uint64_t larder__maint_freed_bytes(struct larder *cache);
/* Adds the maintainer's counters to values[] (larder_stats). */
void larder__maint_stats(struct larder *cache, uint64_t *values);

#endif /* LARDER_MAINT_MAINTAINER_H */
