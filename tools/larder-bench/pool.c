/*
 * pool.c - the worker pool (see pool.h).
 *
 * Protocol, all under mu:
 *   BPOOL-P1. main publishes a task (fn, arg, nthreads), bumps gen, broadcasts.
 *   BPOOL-P2. each worker with tid < nthreads counts itself in (ready++), then runs
 *       fn outside the lock until stop is raised; workers with a higher tid
 *       go back to sleep.
 *   BPOOL-P3. main waits for ready == nthreads before it starts the duration, so
 *       every thread runs for the whole measured window; each worker times
 *       itself, so the skew of the start does not bias the rate.
 *   BPOOL-P4. each worker stores its result and counts itself out (done++); main
 *       waits for done == nthreads before reading results.
 * stop is an atomic on its own cache line: workers poll it relaxed (BENCH-W3 in
 * bench.h); it is written only by main, outside any timed loop's line.
 *
 * With --pin, worker i is bound to CPU i mod (CPUs online) before it starts
 * work, so on a quiet many-core machine the threads of a cell never share a
 * core and do not migrate between rounds. Unpinned is the default: on a
 * shared machine pinning only stops the scheduler from dodging other load.
 */
#define _GNU_SOURCE /* pthread_setaffinity_np, CPU_SET */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "pool.h"

struct lb_worker {
	struct lb_pool *pool;
	int pin;
	pthread_t tid_handle;
	unsigned tid;
	struct lb_tctx t;
};

struct lb_pool {
	pthread_mutex_t mu;
	pthread_cond_t cv_work;
	pthread_cond_t cv_main;
	uint64_t gen;
	unsigned nthreads;
	unsigned ready;
	unsigned done;
	int quit;
	lb_task_fn *fn;
	void *arg;
	struct lb_thread_result *res;
	unsigned n;
	struct lb_worker *w;
	_Alignas(64) atomic_int stop;
	char pad[64 - sizeof(atomic_int)];
};

static uint64_t process_cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void *worker_main(void *p)
{
	struct lb_worker *w = p;
	struct lb_pool *pl = w->pool;
	uint64_t seen = 0;

	if (w->pin) {
		long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
		cpu_set_t set;
		CPU_ZERO(&set);
		CPU_SET((int)(w->tid % (unsigned)(ncpu > 0 ? ncpu : 1)), &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set) != 0)
			fprintf(stderr, "larder-bench: cannot pin worker %u\n", w->tid);
	}
	lb_urcu_thread_online();
	pthread_mutex_lock(&pl->mu);
	for (;;) {
		while (pl->gen == seen && !pl->quit)
			pthread_cond_wait(&pl->cv_work, &pl->mu);
		if (pl->quit)
			break;
		seen = pl->gen;
		if (w->tid >= pl->nthreads)
			continue;
		lb_task_fn *fn = pl->fn;
		void *arg = pl->arg;
		pl->ready++; /* BPOOL-P2 */
		pthread_cond_signal(&pl->cv_main);
		pthread_mutex_unlock(&pl->mu);

		struct lb_tctx *t = &w->t;
		uint64_t h0 = t->hits, m0 = t->misses, e0 = t->write_errors;
		uint64_t c0 = lb_thread_cpu_ns(), t0 = lb_now_ns();
		uint64_t ops = fn(arg, t, &pl->stop);
		uint64_t t1 = lb_now_ns(), c1 = lb_thread_cpu_ns();

		pthread_mutex_lock(&pl->mu);
		pl->res[w->tid] = (struct lb_thread_result){
			.ops = ops,
			.ns = t1 - t0,
			.cpu_ns = c1 - c0,
			.hits = t->hits - h0,
			.misses = t->misses - m0,
			.write_errors = t->write_errors - e0,
		};
		pl->done++; /* BPOOL-P4 */
		pthread_cond_signal(&pl->cv_main);
	}
	pthread_mutex_unlock(&pl->mu);
	lb_urcu_thread_offline();
	return NULL;
}

struct lb_pool *lb_pool_create(const struct lb_config *cfg, unsigned n)
{
	struct lb_pool *p = calloc(1, sizeof(*p));
	unsigned started = 0;

	if (!p)
		return NULL;
	p->w = calloc(n, sizeof(*p->w));
	if (!p->w)
		goto fail_alloc;
	pthread_mutex_init(&p->mu, NULL);
	pthread_cond_init(&p->cv_work, NULL);
	pthread_cond_init(&p->cv_main, NULL);
	for (; started < n; started++) {
		struct lb_worker *w = &p->w[started];
		w->pool = p;
		w->tid = started;
		w->pin = cfg->pin;
		if (lb_tctx_init(&w->t, cfg, started) != 0)
			goto fail_threads;
		if (pthread_create(&w->tid_handle, NULL, worker_main, w) != 0) {
			lb_tctx_fini(&w->t);
			goto fail_threads;
		}
	}
	p->n = n;
	return p;
fail_threads:
	p->n = started;
	lb_pool_destroy(p);
	return NULL;
fail_alloc:
	free(p);
	return NULL;
}

double lb_pool_run(struct lb_pool *p, unsigned nthreads, unsigned duration_ms, lb_task_fn *fn,
		   void *arg, struct lb_thread_result *res, struct lb_run_stats *st)
{
	double rate = 0, crate = 0, wall = 0, cpu = 0;
	uint64_t p0, p1;

	if (nthreads > p->n)
		return -1;
	atomic_store_explicit(&p->stop, 0, memory_order_relaxed);
	pthread_mutex_lock(&p->mu);
	p->fn = fn; /* BPOOL-P1 */
	p->arg = arg;
	p->res = res;
	p->nthreads = nthreads;
	p->ready = p->done = 0;
	p->gen++;
	pthread_cond_broadcast(&p->cv_work);
	while (p->ready < nthreads) /* BPOOL-P3 */
		pthread_cond_wait(&p->cv_main, &p->mu);
	pthread_mutex_unlock(&p->mu);

	p0 = process_cpu_ns();
	lb_sleep_ms(duration_ms);
	atomic_store_explicit(&p->stop, 1, memory_order_relaxed);

	pthread_mutex_lock(&p->mu);
	while (p->done < nthreads)
		pthread_cond_wait(&p->cv_main, &p->mu);
	pthread_mutex_unlock(&p->mu);
	p1 = process_cpu_ns();
	for (unsigned i = 0; i < nthreads; i++) {
		if (res[i].ns)
			rate += (double)res[i].ops * 1e9 / (double)res[i].ns;
		if (res[i].cpu_ns)
			crate += (double)res[i].ops * 1e9 / (double)res[i].cpu_ns;
		wall += (double)res[i].ns;
		cpu += (double)res[i].cpu_ns;
	}
	if (st) {
		/* The process clock spans from all-ready to all-done, a little less
		 * than the workers' own spans: helper is a slight underestimate. */
		double helper = (double)(p1 - p0) - cpu;
		st->cpu_rate = crate;
		st->on_cpu = wall > 0 ? cpu / wall : 0;
		st->helper = cpu > 0 && helper > 0 ? helper / cpu : 0;
	}
	return rate;
}

struct lb_tctx *lb_pool_tctx(struct lb_pool *p, unsigned tid)
{
	return &p->w[tid].t;
}

void lb_pool_destroy(struct lb_pool *p)
{
	if (!p)
		return;
	pthread_mutex_lock(&p->mu);
	p->quit = 1;
	pthread_cond_broadcast(&p->cv_work);
	pthread_mutex_unlock(&p->mu);
	for (unsigned i = 0; i < p->n; i++) {
		pthread_join(p->w[i].tid_handle, NULL);
		lb_tctx_fini(&p->w[i].t);
	}
	pthread_cond_destroy(&p->cv_work);
	pthread_cond_destroy(&p->cv_main);
	pthread_mutex_destroy(&p->mu);
	free(p->w);
	free(p);
}
