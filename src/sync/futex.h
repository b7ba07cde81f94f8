/*
 * sync/futex.h - waiting for a 32-bit word to change, with a deadline.
 *
 * Used only off the fast paths: the maintainer sleeping when idle, and a
 * writer waiting for room. Linux futexes: no lock, no allocation, and a wake
 * with nobody waiting is one cheap system call that callers avoid by checking
 * a flag first.
 */
#ifndef LARDER_SYNC_FUTEX_H
#define LARDER_SYNC_FUTEX_H

#include <linux/futex.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "sync/atomic.h"

/* Sleeps while *word == expected, at most timeout_ns; spurious returns are fine. */
static inline void larder__futex_wait(larder__atomic_u32 *word, uint32_t expected,
				      uint64_t timeout_ns)
{
	struct timespec ts = { (time_t)(timeout_ns / 1000000000u), (long)(timeout_ns % 1000000000u) };
	syscall(SYS_futex, (void *)word, FUTEX_WAIT_PRIVATE, expected, &ts, NULL, 0);
}

static inline void larder__futex_wake(larder__atomic_u32 *word, int count)
{
	syscall(SYS_futex, (void *)word, FUTEX_WAKE_PRIVATE, count, NULL, NULL, 0);
}

static inline uint64_t larder__monotonic_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#endif /* LARDER_SYNC_FUTEX_H */
