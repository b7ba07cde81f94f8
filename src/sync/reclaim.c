/*
 * sync/reclaim.c - grace periods with an asymmetric read side.
 *
 * Algorithm (liburcu's urcu-memb, with a 64-bit counter instead of a parity
 * bit, and polled rather than blocking):
 *
 *   reader enter:  outer = ctr; ctr = outer ? outer : gp_counter
 *                                              (plain store, compiler barrier)
 *   reader exit:   ctr = outer                 (release store; 0 when outermost)
 *   gp_start:      lock; starting = gp_counter + 1; GP-M1 = membarrier();
 *                  token = ++gp_counter; unlock
 *   gp_next:       token = starting + 1  (no lock: GP-N1)
 *   gp_begun(T):   gp_counter >= T
 *   gp_poll:       done when every lent slot's ctr is 0 or >= token; then GP-M2
 *                  (no lock: GP-G4)
 *
 * Why one phase suffices: the counter is 64 bits and never wraps, so a
 * reader whose ctr is >= token entered after the increment, which came after
 * GP-M1; GP-M1 ran a full barrier on every CPU running one of our threads, so that
 * reader's section is ordered after the unlink and cannot reach the memory. A
 * reader whose ctr is below token may have entered before the unlink: we wait
 * until it leaves (0) or re-enters (>= token). A reader that stored a stale
 * counter value only makes us wait longer.
 *
 * Sharing a grace period (GP-G3). The maintainers of a cache's shards each
 * retire entries; each starting a grace period of its own for its batch costs
 * K times the membarriers (and, with the batch's 1 ms age limit, K times the
 * interrupts of every CPU running our threads) of one maintainer. So a
 * maintainer may instead seal its batch with larder__gp_next() and free it
 * after whichever grace period starts next, by any thread. Starts are
 * serialized by start_lock, and each announces its token in `starting`
 * (a seq_cst store) before its GP-M1. gp_next returns the token after the
 * latest announced, without the lock (GP-N1): the start that takes it
 * announces it only after gp_next's seq_cst load of `starting` (which did
 * not see it), so its GP-M1 runs after that load. If GP-M1's barrier on
 * the sealing thread came before the load, the load would have seen the
 * announcement (stored, and visible, before the membarrier); so it came
 * after, and after every unlink made before gp_next: as if the sealing
 * thread had called larder__gp_start() itself. A start in flight (its
 * token announced, its counter not yet stored) is not waited for: the
 * batch rides on the one after it. In fence mode gp_next fences first
 * (GP-F1's fence, on the sealing side: its unlinks before its polls'
 * loads of the readers' slots). Until 2026-12-06 gp_next read the
 * counter under start_lock, a process-wide mutex taken by every
 * maintainer's every pass that sealed a batch.
 * A reader with ctr >= that token loaded the counter after the start's
 * increment (R-GPSTART), so after its GP-M1; gp_poll(token) then decides
 * as for the start's own token. start_lock costs the starts nothing they
 * did not pay already (a syscall each, a few thousand a second at most),
 * and neither gp_next nor gp_poll takes it.
 *
 * GP-M2 (a second membarrier, after the readers are seen to have left) orders
 * their sections' loads before the frees that follow on weakly ordered CPUs.
 * On x86 it is left out: there a load is never reordered with a later
 * store, so a reader's section loads are done before its exit store (GP-R2),
 * or a later enter's store, can be seen by GP-A1's acquire, which keeps the
 * frees after it. Each GP-M2 was a second syscall and interrupt of every
 * CPU per grace period, paid per batch: with shards sharing one start
 * (GP-G3) each shard's poll still paid its own.
 *
 * The registry of reader slots (GP-G4). Every pass of every maintainer
 * polls, so a poll takes no lock: with K maintainers per cache and many
 * caches on many cores, a registry mutex held for the walk serialised them
 * all, and thread starts and exits with them. The registry holds the
 * address of every slot ever registered, in chunks of SLOTS_PER_CHUNK that
 * it never frees; a chunk list only grows, under registry_lock, and
 * slot_count, the number of slots ever registered, is published with a
 * release store (R-REG) after the slot's address is stored in its chunk,
 * so a poll that loads it with acquire (A-REG) walks only addresses that
 * are there. The slots' memory is their owners', who never free it
 * (core/thread.c keeps a thread's state, which holds its slot, for the
 * next thread to start): a poll that reads a slot while it is lent again
 * reads 0 or a section of the new owner, which at worst makes it wait for
 * that section. So a thread's exit waits for no poll, and the slot sits in
 * the thread's state, beside the fields a read loads anyway. Until
 * 2026-12-07 the registry owned the slots and lent them, and a thread held
 * a pointer to its own: one load more on each read section (docs/shards.md,
 * "Polls without a lock").
 * Which slots must a poll see? Every slot registered before the start it
 * polls for: its A-REG load follows that start's GP-M1, which orders the
 * registrar's R-REG store before it (a full barrier on every running
 * thread; GP-F1's fences do the same in fence mode). A slot registered, or
 * lent to a new thread, after GP-M1 holds only sections that begin after
 * it, which cannot reach memory unlinked before it, as for a slot that
 * enters again (>= token).
 *
 * Without membarrier (old kernels, or seccomp forbids it), readers fence after
 * the enter store and GP-M1/GP-M2 are plain seq_cst fences: the classic Dekker
 * handshake (GP-F1). Under ThreadSanitizer the reader uses seq_cst stores instead,
 * because TSan models neither membarrier nor stand-alone fences.
 *
 * Invariants (asserted by tests/stress and tests/unit/test_grace.c):
 *   GP-G1. Memory unlinked before larder__gp_start() returned token T is never
 *       reached by a section still running when larder__gp_poll(T) is true.
 *   GP-G2. gp_start and gp_poll never wait for a reader; a parked reader only
 *       delays the polls that cover it.
 *   GP-G3. Memory unlinked before larder__gp_next() returned token T is, once
 *       larder__gp_begun(T) is true, covered by larder__gp_poll(T) as by GP-G1:
 *       some larder__gp_start() that announced T after the gp_next call loaded
 *       the latest announcement (GP-N1).
 *   GP-G4. A reader slot, once registered, is never freed: a poll reads only
 *       the slots whose addresses were stored before its A-REG load, every
 *       slot registered before the start it polls for among them, without a
 *       lock (tests/stress/stress_reclaim.c).
 */
#define _GNU_SOURCE
#include "sync/reclaim.h"

#include <linux/membarrier.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "sync/futex.h"

struct larder__gp_state larder__gp = { 1 };
bool larder__reclaim_fences;

#define SLOTS_PER_CHUNK 64u

struct slot_chunk {
	/* Each written once, under registry_lock, before R-REG counts it. */
	struct larder__reader *slot[SLOTS_PER_CHUNK];
	struct slot_chunk *next; /* written once, under registry_lock, before R-REG */
};

static pthread_mutex_t registry_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER; /* GP-G3 */
static larder__atomic_u64 started_ns; /* larder__gp_started_ns */
/* The latest start's token, announced (GP-N1); before any start the
 * counter's first value, so that a seal then waits for the first start. */
static larder__atomic_u64 starting = 1;
static struct slot_chunk first_chunk;      /* GP-G4: the chunks are never freed */
static struct slot_chunk *last_chunk = &first_chunk; /* under registry_lock */
static larder__atomic_u32 slot_count;      /* slots ever registered; R-REG / A-REG */
static pthread_once_t membarrier_once = PTHREAD_ONCE_INIT;

static int membarrier(int cmd)
{
	return (int)syscall(__NR_membarrier, cmd, 0, 0);
}

static void membarrier_setup(void)
{
#ifdef LARDER__TSAN
	larder__reclaim_fences = true;
#else
	int cmds = membarrier(MEMBARRIER_CMD_QUERY);
	larder__reclaim_fences =
		cmds < 0 || !(cmds & MEMBARRIER_CMD_PRIVATE_EXPEDITED) ||
		membarrier(MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED) != 0;
#endif
}

/* A full barrier on every thread of this process (GP-M1, GP-M2), or on this one (GP-F1). */
static void barrier_all_threads(void)
{
	if (larder__reclaim_fences || membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) != 0)
		atomic_thread_fence(LARDER__SEQ_CST);
}

bool larder__reader_register(struct larder__reader *r)
{
	/* Decides the read-side mode before the first reader can enter. */
	if (pthread_once(&membarrier_once, membarrier_setup) != 0)
		return false;
	pthread_mutex_lock(&registry_lock);
	/* Relaxed: only registrars write it, and they hold registry_lock. */
	uint32_t n = atomic_load_explicit(&slot_count, LARDER__RELAXED);
	if (n > 0 && n % SLOTS_PER_CHUNK == 0) {
		struct slot_chunk *ch = calloc(1, sizeof(*ch));
		if (!ch) {
			pthread_mutex_unlock(&registry_lock);
			return false;
		}
		last_chunk->next = ch;
		last_chunk = ch;
	}
	last_chunk->slot[n % SLOTS_PER_CHUNK] = r;
	/* R-REG: release, pairs with A-REG in larder__gp_poll(): the slot's
	 * address (and its chunk's link) stored before a poll reads it. */
	atomic_store_explicit(&slot_count, n + 1, LARDER__RELEASE);
	pthread_mutex_unlock(&registry_lock);
	return true;
}

uint64_t larder__gp_start(void)
{
	pthread_mutex_lock(&start_lock);
	/* Relaxed: only starts write the counter, and they hold start_lock. */
	uint64_t token = atomic_load_explicit(&larder__gp.counter, LARDER__RELAXED) + 1;
	/* GP-N1: seq_cst, announced before GP-M1; pairs with gp_next's load. */
	atomic_store_explicit(&starting, token, LARDER__SEQ_CST);
	barrier_all_threads(); /* GP-M1: unlinks before, readers' later loads after */
	/* R-GPSTART: release, pairs with A-GPSTART in larder__gp_begun(): a
	 * sealed batch seen covered was covered by this GP-M1. Readers load the
	 * counter relaxed (GP-R1): GP-M1 orders them. */
	atomic_store_explicit(&larder__gp.counter, token, LARDER__RELEASE);
	pthread_mutex_unlock(&start_lock);
	/* Relaxed: a hint for when to start the next one (reclaim.h). */
	atomic_store_explicit(&started_ns, larder__monotonic_ns(), LARDER__RELAXED);
	return token;
}

uint64_t larder__gp_started_ns(void)
{
	return atomic_load_explicit(&started_ns, LARDER__RELAXED); /* a hint */
}

uint64_t larder__gp_next(void)
{
	if (larder__reclaim_fences)
		atomic_thread_fence(LARDER__SEQ_CST); /* GP-F1: the unlinks before our polls */
	/* GP-N1: seq_cst; a start not yet announced runs its GP-M1 after this. */
	return atomic_load_explicit(&starting, LARDER__SEQ_CST) + 1;
}

bool larder__gp_begun(uint64_t token)
{
	/* A-GPSTART: acquire, pairs with R-GPSTART. */
	return atomic_load_explicit(&larder__gp.counter, LARDER__ACQUIRE) >= token;
}

bool larder__gp_poll(uint64_t token)
{
	bool done = true;
	/* A-REG: acquire, pairs with R-REG: the first n slots' addresses are
	 * stored. GP-G4: no slot is ever freed, so no lock is needed to read them. */
	uint32_t n = atomic_load_explicit(&slot_count, LARDER__ACQUIRE);
	const struct slot_chunk *ch = &first_chunk;
	for (uint32_t i = 0; i < n; i++) {
		if (i > 0 && i % SLOTS_PER_CHUNK == 0)
			ch = ch->next;
		/* GP-A1: pairs with GP-R2 (and GP-R1 under TSan): a 0 seen here means the
		 * section's loads are complete. */
		uint64_t c = atomic_load_explicit(&ch->slot[i % SLOTS_PER_CHUNK]->ctr,
						  LARDER__ACQUIRE);
		if (c != 0 && c < token) {
			done = false;
			break;
		}
	}
#if !defined(__x86_64__) && !defined(__i386__)
	if (done)
		barrier_all_threads(); /* GP-M2 */
#endif
	return done;
}
