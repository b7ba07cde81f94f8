/*
 * bench.h - what every part of larder-bench shares: the run configuration,
 * the per-thread workload state, the engine interface and the timed loop.
 *
 * Design
 *   Every engine (larder and the baselines) is driven by the same loop,
 *   lb_run_loop(), instantiated once per engine with that engine's get and
 *   put as compile-time constants (the loop is always_inline and each engine
 *   wraps it in its own run function), so a baseline's get is inlined into
 *   its loop exactly as a user's code would inline it, and no engine pays an
 *   indirect call the others do not. larder's get is a call into the static
 *   library, as it is for every user.
 *
 * Invariants
 *   BENCH-W1. The key of index i is the same bytes for every engine and thread:
 *       bytes 0..7 are mix(i) (a bijection, so keys are unique), bytes 8..15
 *       are i, bytes past 16 are a fixed filler written once.
 *   BENCH-W2. Each thread has its own xorshift64* state; no shared RNG, no shared
 *       write in the loop except the engine's own.
 *   BENCH-W3. The stop flag is the only shared variable the loop reads; it is read
 *       relaxed once per LB_CHUNK operations (a late stop costs at most a
 *       chunk, and each thread measures its own time, so it does not bias).
 *   BENCH-W4. An insert's key is new: thread t's LB_INSERT keys are indexes
 *       entries + t x 2^40 + 0, 1, 2, ..., beyond the working set and each
 *       other's (BENCH-W1 keeps them unique as bytes too).
 */
#ifndef LARDER_BENCH_H
#define LARDER_BENCH_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "larder.h"

#define LB_KEY_MAX 4096u
#define LB_VALUE_MAX ((size_t)1 << 24)
#define LB_MAX_THREADS 256u
#define LB_MAX_ENGINES 8u
#define LB_CHUNK 64u
#define LB_NO_LIMIT UINT64_MAX
#define LB_ZIPF_RING (1u << 20) /* pre-drawn Zipf samples per thread */

/* LB_INSERT (--ops only, profile.sh insert): puts of keys never seen before,
 * lb_tctx.fresh on from the working set's end; the matrix has no such cell. */
enum lb_scenario { LB_READ = 0, LB_WRITE = 1, LB_MIX = 2, LB_INSERT = 3, LB_SCENARIOS = 4 };

extern const char *const lb_scenario_names[LB_SCENARIOS];

enum lb_timer { LB_TIMER_AUTO = 0, LB_TIMER_TSC, LB_TIMER_CLOCK };

/* LB_PIN=same|split (with --pin's worker i on CPU i): larder's maintainer
 * threads on worker 0's CPU, or on every other CPU (eng_larder.c). */
enum lb_pin_maint { LB_PIN_OFF = 0, LB_PIN_SAME, LB_PIN_SPLIT };

struct lb_engine;

/* The whole run's settings; read-only once main() has parsed the options. */
struct lb_config {
	size_t key_size;
	size_t value_size;
	uint64_t entries;
	double zipf_theta; /* 0: uniform */
	uint64_t capacity_bytes;
	int capacity_given;
	uint64_t ttl_ms; /* 0: no TTL */
	unsigned duration_ms;
	unsigned rounds;
	unsigned warmup_rounds;
	unsigned threads[64];
	size_t n_threads;
	const struct lb_engine *engines[LB_MAX_ENGINES];
	size_t n_engines;
	unsigned scenarios; /* bit mask of 1 << lb_scenario */
	const char *out_path;
	int quick;
	int latency;
	uint64_t bigset; /* 0: off */
	uint64_t ops;    /* LB_NO_LIMIT: time-based cells */
	uint64_t seed;
	enum lb_timer timer;
	int entries_given;
	int pin; /* --pin: worker i runs on CPU i mod CPUs online */
	enum lb_pin_maint pin_maint; /* LB_PIN (main.c): where larder's maintainers run */
	int scale; /* --scale (scale.c) */
	int compress; /* --compress (compress.c) */
	int codecs;   /* --codecs (codecs.c) */
	uint64_t memory;      /* --memory: capacity of the memory-return run; 0: off */
	unsigned churn_factor; /* --churn N: the memory run's churn writes N x capacity (10) */
	int value_size_given; /* --value-size was on the command line */
	int clear_only;       /* --clear-only: the memory run stops after its clear phase */
	int pool;             /* --pool[=PARTS] (poolbench.c) */
	const char *pool_parts; /* NULL: every part */
	unsigned pool_unit_ms;  /* --pool-unit-ms: the phases' unit (2000) */
	unsigned shards;        /* --shards K: larder's shard count (1) */
};

/* One worker thread's state; owned by that thread while a job runs. */
struct lb_tctx {
	uint64_t rng;
	const uint32_t *zring; /* NULL for uniform keys */
	uint32_t zpos;
	unsigned tid;
	uint8_t *key;
	uint8_t *val;
	uint8_t *buf;
	uint64_t hits;
	uint64_t misses;
	uint64_t write_errors;
	uint64_t sink; /* folds read bytes so the copy-out cannot be elided */
	uint64_t fresh; /* LB_INSERT: the next key's index, never put before (BENCH-W4) */
} __attribute__((aligned(64)));

/* What the loop is asked to do; read-only while it runs. */
struct lb_job {
	enum lb_scenario scenario;
	uint64_t op_limit; /* LB_NO_LIMIT: run until *stop */
	const atomic_int *stop;
	const struct lb_config *cfg;
};

typedef int lb_get_fn(void *eng, const uint8_t *key, size_t key_len, uint8_t *buf,
		      size_t buf_len);
typedef int lb_put_fn(void *eng, const uint8_t *key, size_t key_len, const uint8_t *val,
		      size_t val_len, uint64_t ttl_ms);
typedef uint64_t lb_run_fn(void *eng, struct lb_tctx *t, const struct lb_job *job);

/*
 * An engine. get returns 1 on a hit (value copied into buf), 0 on a miss;
 * put returns 0 on success. max_threads[s] limits scenario s (0: any).
 */
struct lb_engine {
	const char *name;
	const char *about;
	unsigned max_threads[LB_SCENARIOS];
	int (*open)(void **out, const struct lb_config *cfg);
	lb_put_fn *put;
	lb_run_fn *run;
	void (*close)(void *eng);
};

extern const struct lb_engine lb_engine_larder;
extern const struct lb_engine lb_engine_bare;
extern const struct lb_engine lb_engine_urcu;
extern const struct lb_engine lb_engine_ck;
extern const struct lb_engine lb_engine_null;

/* ---- workload ----------------------------------------------------------- */

/* splitmix64's finalizer: a bijection on 64-bit words. */
static inline uint64_t lb_mix(uint64_t x)
{
	x ^= x >> 30;
	x *= 0xbf58476d1ce4e5b9ull;
	x ^= x >> 27;
	x *= 0x94d049bb133111ebull;
	x ^= x >> 31;
	return x;
}

/* xorshift64* (Vigna); the high bits are the good ones. */
static inline uint64_t lb_rand(struct lb_tctx *t)
{
	uint64_t x = t->rng;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	t->rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

/* BENCH-W1: only the first 16 bytes change from key to key. */
static inline void lb_key(uint8_t *key, size_t key_size, uint64_t index)
{
	uint64_t w0 = lb_mix(index + 1);
	memcpy(key, &w0, 8);
	if (key_size >= 16)
		memcpy(key + 8, &index, 8);
	else
		memcpy(key + 8, &index, key_size - 8);
}

/* The index of the next key: the top 32 bits of r scaled to entries, or Zipf. */
static inline uint64_t lb_pick(struct lb_tctx *t, uint64_t entries, uint64_t r)
{
	if (t->zring)
		return t->zring[t->zpos++ & (LB_ZIPF_RING - 1)];
	return ((r >> 32) * entries) >> 32;
}

/* 9:1 mix: low 16 bits of r, scaled to [0,10), are 0 about one time in ten. */
static inline int lb_is_write(enum lb_scenario s, uint64_t r)
{
	if (s == LB_READ)
		return 0;
	if (s == LB_WRITE || s == LB_INSERT)
		return 1;
	return (((r & 0xffff) * 10) >> 16) == 0;
}

/* The timed loop (see the file comment); returns operations done. */
static inline __attribute__((always_inline)) uint64_t
lb_run_loop(void *eng, struct lb_tctx *t, const struct lb_job *job, lb_get_fn *get,
	    lb_put_fn *put)
{
	const struct lb_config *c = job->cfg;
	const size_t ks = c->key_size, vs = c->value_size;
	const uint64_t entries = c->entries, ttl = c->ttl_ms;
	const enum lb_scenario s = job->scenario;
	uint64_t done = 0;

	for (;;) {
		uint64_t n = LB_CHUNK;
		if (job->op_limit != LB_NO_LIMIT) {
			if (done >= job->op_limit)
				break;
			if (job->op_limit - done < n)
				n = job->op_limit - done;
		} else if (done && atomic_load_explicit(job->stop, memory_order_relaxed)) {
			break; /* BENCH-W3; one chunk at least: a stalled thread never reports 0 */
		}
		for (uint64_t i = 0; i < n; i++) {
			uint64_t r = lb_rand(t);
			lb_key(t->key, ks, s == LB_INSERT ? t->fresh++ : lb_pick(t, entries, r));
			if (lb_is_write(s, r)) {
				if (vs >= 8)
					memcpy(t->val, &r, 8);
				if (put(eng, t->key, ks, t->val, vs, ttl) != 0)
					t->write_errors++;
			} else if (get(eng, t->key, ks, t->buf, vs)) {
				t->hits++;
				t->sink += t->buf[0];
			} else {
				t->misses++;
			}
		}
		done += n;
	}
	return done;
}

/* ---- shared helpers (common.c) ------------------------------------------ */

uint64_t lb_now_ns(void);
uint64_t lb_thread_cpu_ns(void); /* CLOCK_THREAD_CPUTIME_ID */
/* A progress line on stderr: rewritten in place on a terminal, else one line each. */
void lb_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void lb_sleep_ms(unsigned ms);
/* Seeds a thread's state and allocates its buffers; 0 or -1 (ENOMEM). */
int lb_tctx_init(struct lb_tctx *t, const struct lb_config *cfg, unsigned tid);
void lb_tctx_fini(struct lb_tctx *t);
/* Puts keys 0..entries-1 with a deterministic value; returns failed puts. */
uint64_t lb_preload(const struct lb_engine *e, void *eng, const struct lb_config *cfg);
/* Resident set size of the process in bytes (0 if unknown). */
uint64_t lb_rss_bytes(void);
double lb_median(double *v, size_t n); /* sorts v */

/* Opens a larder cache with the run's settings (eng_larder.c); a LARDER_* code. */
int lb_larder_open(larder **out, const struct lb_config *cfg, uint64_t capacity,
		   uint64_t expected);

/* ---- modes -------------------------------------------------------------- */

int lb_matrix_run(const struct lb_config *cfg);
int lb_ops_run(const struct lb_config *cfg);
int lb_latency_run(const struct lb_config *cfg);
int lb_bigset_run(const struct lb_config *cfg);
int lb_scale_run(const struct lb_config *cfg);
int lb_memory_run(const struct lb_config *cfg);
int lb_compress_run(const struct lb_config *cfg); /* compress.c */
int lb_codecs_run(const struct lb_config *cfg);   /* --codecs (codecs.c) */

/* jsongen.c: a realistic JSON-like document of exactly len bytes (len >= 64),
 * and len random bytes; both deterministic in seed. */
void lb_json_value(uint8_t *out, size_t len, uint64_t seed);
void lb_random_value(uint8_t *out, size_t len, uint64_t seed);
int lb_budget_run(const struct lb_config *cfg); /* --pool (poolbench.c) */

#endif /* LARDER_BENCH_H */
