/*
 * maint/handle.h - the per-(thread, shard) state: the event and hit rings
 * that carry the thread's changes to the shard's maintainer (their protocol:
 * maint/events.h), the thread's allocation cursor, its byte credit and its
 * statistics.
 *
 * Each part sits on cache lines of its own, so that the maintainer's reads
 * do not bounce the lines the owner writes per operation.
 *
 * The statistics are listed once, in LARDER__HANDLE_COUNTERS: the fields are
 * declared from the list, and larder__handle_stats_add() sums them from it,
 * both for larder_stats() and when the maintainer folds an exited thread's
 * counters into its own totals. The ring positions hit_head and spilled
 * double as the hit and spill counts and are summed the same way.
 *
 * Invariants:
 *   HANDLE-H1. credit is the owner's alone; the owner gives it back to the
 *       budget as its thread exits (core/cache.c, handle_orphan).
 *   HANDLE-H2. A counter has one writer, the owner (relaxed load + store, no RMW),
 *       and any number of readers, which sum them without a lock on the
 *       counters (each counter is exact on its own).
 */
#ifndef LARDER_MAINT_HANDLE_H
#define LARDER_MAINT_HANDLE_H

#include <stdint.h>

#include "larder.h"
#include "mem/slab.h"
#include "sync/atomic.h"

/* Events a thread may have posted and not yet seen taken. */
#define LARDER__EVENT_RING 512u
/* A reader at 5 M hits/s fills 1,024 samples in about one maintainer batching
 * window (200 us: with K shards each ring takes 1/K of the hits and the window
 * is K times as long, up to 1 ms); the maintainer polls more often than that
 * while hits flow.
 * tools/larder-sim --hit-ring measures what smaller rings cost in hit ratio. */
#define LARDER__HIT_RING 1024u

enum larder__event_kind {
	LARDER__EV_INSERT,   /* b published where the key was absent */
	LARDER__EV_REPLACE,  /* b replaced a (cause: REPLACED or EXPIRED) */
	LARDER__EV_RELOCATE, /* b is a copy of a with a new deadline (touch); no listener */
	LARDER__EV_REMOVE,   /* a unlinked (cause: EXPLICIT or EXPIRED) */
	LARDER__EV_CLEAR,    /* a is the table that larder_clear() swapped out; hash
			      * the cache clock then (0: not read) */
	LARDER__EV_TOUCH,    /* a's deadline moved earlier in place (larder_touch) */
	LARDER__EV_BATCH,    /* a is a struct larder__event_batch: a bulk writer's events */
};

/* An event's sclass when b is not a slab slot, or the kind names no b. */
#define LARDER__EV_NO_CLASS 0xffu

struct larder__event {
	/* One byte, as cause and sclass: a constant byte is one store, where
	 * gcc builds a 16-bit constant in a register first (x86's 16-bit
	 * immediates stall the decoder): 1 Ir per post. */
	uint8_t kind;
	uint8_t cause;  /* enum larder_cause, where the kind names one */
	/* INSERT, REPLACE: b's size class (mem/sizeclass.h) when b is a slab
	 * slot, which the writer computed for its charge, so that the
	 * maintainer's overwrite path (maint/apply.c) does not compute it
	 * again; else LARDER__EV_NO_CLASS. */
	uint8_t sclass;
	uint32_t seq; /* the owner's posting number, ring and spill together (EV-V4) */
	void *a;
	void *b;
	uint64_t hash; /* of the key of b (or a when b is NULL); EV_CLEAR: a time */
};

/*
 * A bulk writer's events (core/cache.c, larder__put_batch), posted as one
 * LARDER__EV_BATCH: the maintainer applies them in order, as if each had
 * been posted where the batch is, and frees the block (EV-V7 in
 * maint/events.h). seq is unused inside a block.
 */
#define LARDER__BATCH_EVENTS 16u
struct larder__event_batch {
	uint32_t n;
	struct larder__event ev[LARDER__BATCH_EVENTS];
};

/* Spill chunks: 8 KiB each (maint/events.h); a count of places in one
 * fits the handle's 16-bit fields. */
#define LARDER__SPILL_CHUNK 255u
_Static_assert(LARDER__SPILL_CHUNK <= UINT16_MAX, "spill_free is 16 bits");
/* A maintainer thread, which never waits: at most 64 Ki unread events
 * (2 MiB) per handle, then LARDER_EBUSY. */
#define LARDER__SPILL_MAX 65536u
/*
 * A writer that may wait: at most 4,096 unread spilled events (17 chunks,
 * 136 KiB) per handle, then it waits for the maintainer as before. With the
 * ring, 4,608 events: at 1 M writes/s (a thread of larderd pipelining sets,
 * or a binding's tight loop) about 4.6 ms, a CFS time slice or two on a
 * machine whose cores are busy with other work, where a woken maintainer was
 * measured waiting ~100 us for a CPU and a writer filled 512 slots first; at
 * a single connection's 20,000 round trips/s, a quarter of a second. A
 * writer still waits when its maintainer has been kept from running longer
 * than that, which bounds how far behind the policy and the byte totals can
 * fall, and the spill's memory.
 */
#define LARDER__SPILL_WRITER_MAX 4096u
/*
 * A sleeping maintainer's batch of overwrites (larder__events_wake_due in
 * maint/events.h): a writer whose latest event is an overwrite wakes it only
 * at this many unread events, ring and spill together, rather than at a
 * half-full ring. An overwrite adds nothing for the policy to evict against
 * (an insert does, and still wakes at half full), and what it retires waits
 * within the byte budget (2,048 retired copies per writer and shard, 192
 * KiB of the write cell's 96-byte slots, against an overshoot bound of 4
 * MiB or more), whose shortage wakes the maintainer on its own; so a pass
 * per 2,048 overwrites rather than per 256 delays only the policy's view,
 * statistics and listener calls, within the batching window or lazy sleep
 * the maintainer set. Each wake-up costs a sleep and a wake in
 * the kernel, and a busy pass followed by a trickle: with 2 writers and 4
 * shards that was 2.6 passes and 2.3 context switches per 1,000 puts, about
 * 7x one saturated maintainer's (docs/shards.md, "What grows with K").
 * Half the spill's bound, so that a woken maintainer has 2,560 more events'
 * time to get a CPU before the writer must wait for it.
 */
#define LARDER__WAKE_EVENTS (LARDER__SPILL_WRITER_MAX / 2)

struct larder__shard;

struct larder__spill {
	larder__atomic_uptr next; /* owner's next chunk (EV-V5: relaxed, published by R-SPILL) */
	struct larder__event ev[LARDER__SPILL_CHUNK];
};

/* The handle's plain counters and the statistic each adds to (HANDLE-H2). */
#define LARDER__HANDLE_COUNTERS(X)              \
	X(misses, LARDER_STAT_MISSES)           \
	X(writes, LARDER_STAT_WRITES)           \
	X(alloc_bytes, LARDER_STAT_USED_BYTES)  \
	X(write_waits, LARDER_STAT_WRITE_WAITS) \
	X(write_busy, LARDER_STAT_WRITE_BUSY)   \
	X(maint_waits, LARDER_STAT_MAINT_WAITS) \
	X(busy_memory, LARDER_STAT_BUSY_MEMORY) \
	X(busy_events, LARDER_STAT_BUSY_EVENTS) \
	X(busy_index, LARDER_STAT_BUSY_INDEX)

struct larder__handle {
	/* Owner thread's line: written per operation, read by the maintainer. */
	larder__atomic_u64 ev_head;       /* R-EV */
	larder__atomic_u64 hit_head;      /* R-HIT; every hit is sampled, so also the hit count */
	uint64_t ev_tail_seen;            /* owner only: last ev_tail read */
	int64_t credit;                   /* HANDLE-H1: budget bytes reserved */
	larder__atomic_u64 spilled;       /* events posted to the spill: R-SPILL / A-SPILL */
	struct larder__spill *spill_tail; /* owner only: the chunk it appends to */
	/* owner only: spill_tail's next free place (a pointer, not a count:
	 * the spilled post stores through it without an index's arithmetic) */
	struct larder__event *spill_at;
	/* owner only: spills that need no larder__events_spill_room() first
	 * (larder__events_spill_ready): at most the free places in spill_tail */
	uint16_t spill_free;
	uint32_t last_overwrite; /* owner only: its latest post was an overwrite */
	uint64_t wake_recheck; /* owner only: no overwrite wakes the maintainer before this
				  posting number (larder__events_wake_due) */
#define LARDER__DECLARE_COUNTER(field, stat) larder__atomic_u64 field;
	LARDER__HANDLE_COUNTERS(LARDER__DECLARE_COUNTER) /* HANDLE-H2 */
#undef LARDER__DECLARE_COUNTER

	/* Maintainer's line. */
	larder__atomic_u64 ev_tail __attribute__((aligned(64))); /* R-EVT */
	uint64_t hit_tail;                                       /* maintainer only */
	larder__atomic_int orphaned; /* set once when the thread exits (R-ORPHAN) */
	struct larder__handle
		*next; /* the shard's list: pushed by CAS, unlinked by the maintainer */
	struct larder__shard *shard; /* whose maintainer drains it: set at creation */
	larder__atomic_uptr spill_first;  /* first chunk (EV-V5: relaxed, published by R-SPILL) */
	struct larder__spill *spill_head; /* maintainer only: the chunk it reads */
	uint32_t spill_read;              /* maintainer only: events read in spill_head */
	larder__atomic_u64 spill_taken;   /* events the maintainer has read: its own count,
					     which the owner reads relaxed for its bound */

	struct larder__slab_cursor cursor __attribute__((aligned(64))); /* owner only */
	struct larder__event ev[LARDER__EVENT_RING];
	larder__atomic_uptr hit[LARDER__HIT_RING] __attribute__((aligned(64)));
};

static inline uint64_t larder__stat_bump(larder__atomic_u64 *counter, uint64_t by)
{
	/* Relaxed load+store, no RMW (HANDLE-H2): the owner is the only writer, and a
	 * statistic orders nothing. */
	uint64_t v = atomic_load_explicit(counter, LARDER__RELAXED) + by;
	atomic_store_explicit(counter, v, LARDER__RELAXED);
	return v;
}

/* Adds h's statistics to values[] (indexed by enum larder_stat). */
static inline void larder__handle_stats_add(const struct larder__handle *h, uint64_t *values)
{
	/* Relaxed: statistics, each exact on its own (HANDLE-H2). */
#define LARDER__ADD_COUNTER(field, stat) \
	values[stat] += atomic_load_explicit(&h->field, LARDER__RELAXED);
	LARDER__HANDLE_COUNTERS(LARDER__ADD_COUNTER)
	LARDER__ADD_COUNTER(hit_head, LARDER_STAT_HITS)
	LARDER__ADD_COUNTER(spilled, LARDER_STAT_EVENTS_SPILLED)
#undef LARDER__ADD_COUNTER
}

#endif /* LARDER_MAINT_HANDLE_H */
