/*
 * sync/atomic.h - the one door to <stdatomic.h>.
 *
 * Every other module includes this header instead of <stdatomic.h>, so the
 * set of atomic types in use stays small and greppable. The rules of the house
 * (docs/style.md, docs/memory-model.md): every access names its memory order, and
 * every acquire/release carries a label naming its partner.
 */
#ifndef LARDER_SYNC_ATOMIC_H
#define LARDER_SYNC_ATOMIC_H

#include <stdatomic.h>
#include <stdint.h>

typedef _Atomic uint64_t larder__atomic_u64;
typedef _Atomic int64_t larder__atomic_i64;
typedef _Atomic uint32_t larder__atomic_u32;
typedef _Atomic uint8_t larder__atomic_u8;
typedef _Atomic uintptr_t larder__atomic_uptr;
typedef _Atomic int larder__atomic_int;

#define LARDER__RELAXED memory_order_relaxed
#define LARDER__ACQUIRE memory_order_acquire
#define LARDER__RELEASE memory_order_release
#define LARDER__ACQ_REL memory_order_acq_rel
#define LARDER__SEQ_CST memory_order_seq_cst

/* Compiler-only barrier: orders this thread's accesses against a signal (or a
 * membarrier IPI), costs no instruction. */
#define larder__compiler_barrier() atomic_signal_fence(memory_order_seq_cst)

static inline void larder__cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield" ::: "memory");
#endif
}

#endif /* LARDER_SYNC_ATOMIC_H */
