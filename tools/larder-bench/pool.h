/*
 * pool.h - larder-bench's worker threads: created once per run, parked on a
 * condition variable between cells, so thread start-up and per-thread engine
 * state (larder's, liburcu's registration) stay out of every timed cell.
 */
#ifndef LARDER_BENCH_POOL_H
#define LARDER_BENCH_POOL_H

#include "bench.h"

/* One cell's work for one thread; returns operations done. */
typedef uint64_t lb_task_fn(void *arg, struct lb_tctx *t, const atomic_int *stop);

struct lb_pool;

struct lb_thread_result {
	uint64_t ops;
	uint64_t ns;     /* the thread's own start-to-stop time (CLOCK_MONOTONIC) */
	uint64_t cpu_ns; /* its CPU time over the same span (CLOCK_THREAD_CPUTIME_ID) */
	uint64_t hits;
	uint64_t misses;
	uint64_t write_errors;
};

/* Starts n workers (each registered with liburcu); NULL on failure. */
struct lb_pool *lb_pool_create(const struct lb_config *cfg, unsigned n);
/*
 * Runs fn(arg) on workers 0..nthreads-1 at once for duration_ms (every worker
 * starts before the clock does; the main thread then sleeps and raises the
 * stop flag) and fills res[0..nthreads-1]. Returns the summed throughput in
 * operations per second, each thread's ops over its own wall time; fills st
 * when it is not NULL.
 */
struct lb_run_stats {
	double cpu_rate; /* sum of each thread's ops over its own CPU time */
	double on_cpu;   /* the workers' CPU time over their wall time (1.0: cores to spare) */
	double helper;   /* CPU time of every other thread of the process (an engine's
			    maintainer, liburcu's call_rcu worker) over the workers' */
};
double lb_pool_run(struct lb_pool *p, unsigned nthreads, unsigned duration_ms, lb_task_fn *fn,
		   void *arg, struct lb_thread_result *res, struct lb_run_stats *st);
void lb_pool_destroy(struct lb_pool *p);
/* A worker's state, for modes that keep per-thread data beside it. */
struct lb_tctx *lb_pool_tctx(struct lb_pool *p, unsigned tid);

/* liburcu registration (eng_urcu.c); the pool calls them on each worker. */
void lb_urcu_thread_online(void);
void lb_urcu_thread_offline(void);

#endif /* LARDER_BENCH_POOL_H */
