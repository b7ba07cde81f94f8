/*
 * tests/unit/test_grace.c - grace periods: what a reader holds is never freed.
 *
 * A reader parks inside a zero-copy callback (it signals that it is in, then
 * waits until the test releases it) while writer threads overwrite and remove
 * that key thousands of times and churn other keys. Freed memory is poisoned
 * (larder__test_poison_freed), so a premature free shows up as 0xdb bytes.
 * Invariants checked (docs/architecture.md invariants 1 and 3, larder.h):
 *   TGRACE-G1. the parked reader's bytes stay equal to the value it found, however
 *       many times the key is overwritten or removed meanwhile;
 *   TGRACE-G2. quiesce cannot complete while the reader is parked (retired memory
 *       waits for it), and does complete after it leaves, with the memory
 *       freed: used bytes equal the walk again;
 *   TGRACE-G3. a write inside a callback never waits for memory: with nothing
 *       freeable it fails with LARDER_EBUSY promptly instead of waiting out the
 *       configured write wait, and the cache works normally afterwards.
 *   TGRACE-G4. read sections nest: a read made inside a callback (its own section
 *       entered and left) does not end the enclosing section, so TGRACE-G1 and TGRACE-G2
 *       hold for a reader that parks after nested reads; and at the level of
 *       sync/reclaim.h, a grace period that starts inside a nested section
 *       completes only after the outermost exit.
 *   TGRACE-G5. a sealed token (larder__gp_next, GP-G3 in sync/reclaim.c) has not
 *       begun until the next start, which returns it; polled with it, that
 *       start's grace period waits for a section entered before the seal
 *       and not for one entered after the start.
 *   TGRACE-G6. larder__gp_started_ns() is the time of the latest start, by any
 *       thread (what the maintainers time their grace periods' age from).
 *   TGRACE-G7. a token sealed before the process's first start has not begun:
 *       it waits for that start, as any other seal waits for the next one.
 *   TGRACE-G8. every registered slot is polled: a section on the newest slot
 *       (past a chunk's end of the registry) holds a grace period, and so does
 *       one on a thread record lent again (an exited thread's record, which
 *       the next thread to start takes: THREAD-T4 in core/thread.h).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "core/thread.h"
#include "harness.h"
#include "sync/futex.h"

#define VLEN 4000

static unsigned char original[VLEN];

enum park_mode { PARK_GET_WITH, PARK_GET_BATCH, PARK_AFTER_NESTED };

struct park {
	larder *cache;
	enum park_mode mode;
	struct th_event in, release;
	const unsigned char *ptr; /* the bytes the reader holds, valid while parked */
	size_t len;
	int intact_on_entry, intact_on_exit, released, calls;
	long rc;
};

static void park_here(struct park *p, const void *value, size_t value_len)
{
	p->calls++;
	p->ptr = value;
	p->len = value_len;
	p->intact_on_entry = value_len == VLEN && memcmp(value, original, VLEN) == 0;
	th_event_signal(&p->in);
	p->released = th_event_wait(&p->release, 120000);
	p->intact_on_exit = value_len == VLEN && memcmp(value, original, VLEN) == 0;
}

static void ignore_fn(void *ctx, const void *value, size_t value_len)
{
	(void)ctx;
	(void)value;
	(void)value_len;
}

static void park_fn(void *ctx, const void *value, size_t value_len)
{
	struct park *p = ctx;

	if (p->mode == PARK_AFTER_NESTED) {
		/* TGRACE-G4: each of these enters and leaves a section of its own. */
		unsigned char buf[16];
		size_t len;
		CHECK_RC(larder_get(p->cache, "other", 5, buf, sizeof(buf), &len), LARDER_OK);
		CHECK_RC(larder_contains(p->cache, "other", 5), LARDER_OK);
		CHECK_RC(larder_get_with(p->cache, "other", 5, ignore_fn, NULL), LARDER_OK);
		CHECK_RC(larder_get(p->cache, "absent", 6, buf, sizeof(buf), &len), LARDER_MISS);
	}
	park_here(p, value, value_len);
}

static void park_batch_fn(void *ctx, size_t index, const void *value, size_t value_len)
{
	struct park *p = ctx;

	if (index == 0)
		park_here(p, value, value_len);
}

static void *reader_thread(void *arg)
{
	struct park *p = arg;

	if (p->mode == PARK_GET_BATCH) {
		const void *keys[2] = {"K", "other"};
		const size_t lens[2] = {1, 5};
		p->rc = larder_get_batch(p->cache, 2, keys, lens, park_batch_fn, p);
	} else {
		p->rc = larder_get_with(p->cache, "K", 1, park_fn, p);
	}
	return NULL;
}

struct writer {
	larder *cache;
	int id, rounds;
	long bad;
};

static void *writer_thread(void *arg)
{
	struct writer *w = arg;
	unsigned char *v = malloc(8192);
	struct th_rng rng = {(uint64_t)w->id * 7919 + 1};

	if (!CHECK(v != NULL))
		return NULL;
	for (int i = 0; i < w->rounds; i++) {
		size_t len = i % 3 == 0 ? VLEN : (size_t)th_rng_below(&rng, 1024);
		char key[32];
		int rc;

		/* same size as the parked value, so a premature free would be reused */
		memset(v, 0x40 + (w->id * 16 + i) % 64, len);
		rc = larder_put(w->cache, "K", 1, v, len, LARDER_TTL_NEVER);
		w->bad += !CHECK_RC(rc, LARDER_OK);
		rc = larder_remove(w->cache, "K", 1);
		w->bad += !CHECK(rc == LARDER_OK || rc == LARDER_MISS);
		rc = larder_put_if_absent(w->cache, "K", 1, v, len / 2, LARDER_TTL_NEVER);
		w->bad += !CHECK(rc == LARDER_OK || rc == LARDER_EXISTS);
		snprintf(key, sizeof(key), "w%d-%d", w->id, i % 200);
		rc = larder_put(w->cache, key, strlen(key), v, len, LARDER_TTL_NEVER);
		w->bad += !CHECK_RC(rc, LARDER_OK);
		if (w->bad > 10)
			break;
	}
	free(v);
	return NULL;
}

static void run_parked(enum park_mode mode)
{
	enum { WRITERS = 3 };
	/*
	 * Nothing retired after the reader parked can be freed until it leaves, so
	 * the capacity must hold everything the writers write meanwhile (~40 MB).
	 */
	larder_config *config = th_config(128 * MiB);
	struct park p;
	struct writer w[WRITERS];
	pthread_t reader;
	uint64_t used_parked, bytes_after = 0;
	unsigned char buf[8192];
	size_t len = 0;
	int rc;

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS), LARDER_OK);
	memset(&p, 0, sizeof(p));
	p.cache = th_open(config);
	p.mode = mode;
	REQUIRE(p.cache != NULL);
	th_event_init(&p.in);
	th_event_init(&p.release);
	larder__test_poison_freed(1);
	for (size_t i = 0; i < VLEN; i++)
		original[i] = (unsigned char)(i * 13 + 5);
	CHECK_RC(larder_put(p.cache, "K", 1, original, VLEN, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(p.cache, "other", 5, "o", 1, LARDER_TTL_NEVER), LARDER_OK);
	REQUIRE(pthread_create(&reader, NULL, reader_thread, &p) == 0);
	if (!CHECK(th_event_wait(&p.in, 60000))) {
		th_event_signal(&p.release);
		pthread_join(reader, NULL);
		goto out;
	}

	for (int i = 0; i < WRITERS; i++)
		w[i] = (struct writer){p.cache, i, TH_TSAN ? 600 : 2000, 0};
	th_run_threads(WRITERS, writer_thread, w, sizeof(w[0]));

	/* TGRACE-G1, seen from outside while the reader is still parked */
	CHECK(p.ptr != NULL && p.len == VLEN);
	if (p.ptr != NULL && p.len == VLEN)
		CHECK_MEM(p.ptr, original, VLEN);
	/* readers outside see only the writers' values now */
	rc = larder_get(p.cache, "K", 1, buf, sizeof(buf), &len);
	CHECK(rc == LARDER_OK || rc == LARDER_MISS);
	if (rc == LARDER_OK)
		CHECK(len != VLEN || memcmp(buf, original, VLEN) != 0);
	/* TGRACE-G2: the retired entries wait for the parked reader */
	CHECK_EQ(larder__test_quiesce(p.cache, 300), -1);
	used_parked = th_stat(p.cache, LARDER_STAT_USED_BYTES);

	th_event_signal(&p.release);
	pthread_join(reader, NULL);
	CHECK(p.released);
	CHECK_EQ(p.calls, 1);
	CHECK_EQ(p.rc, mode == PARK_GET_BATCH ? 2 : LARDER_OK);
	CHECK(p.intact_on_entry);
	CHECK(p.intact_on_exit);

	/* TGRACE-G2: after the reader left, everything retired is freed */
	th_check_accounting(p.cache, 60000, NULL, &bytes_after);
	CHECK_LT(bytes_after, used_parked);
out:
	larder__test_poison_freed(0);
	larder_close(p.cache);
	th_event_destroy(&p.in);
	th_event_destroy(&p.release);
}

static void test_parked_get_with(void)
{
	run_parked(PARK_GET_WITH);
}

static void test_parked_get_batch(void)
{
	run_parked(PARK_GET_BATCH);
}

static void test_parked_after_nested_reads(void)
{
	run_parked(PARK_AFTER_NESTED);
}

/*
 * TGRACE-G4 on the reader slot itself, one thread: a grace period started inside a
 * nested section (and one started after the nested exit) stays open until the
 * outermost exit. No other reader is inside a section here (the earlier
 * tests' threads have left theirs), so every poll's answer is this thread's.
 */
static void test_nested_sections_hold_grace(void)
{
	struct larder__thread *t = larder__thread_self();
	REQUIRE(t != NULL);
	struct larder__reader *r = &t->reader;

	CHECK(!larder__read_active(r));
	uint64_t outer = larder__read_enter(r);
	CHECK_EQ(outer, 0);
	uint64_t inner = larder__read_enter(r);
	CHECK_NE(inner, 0);
	uint64_t during = larder__gp_start();
	CHECK(!larder__gp_poll(during));
	larder__read_exit(r, inner);
	CHECK(larder__read_active(r));
	uint64_t after_inner = larder__gp_start();
	CHECK(!larder__gp_poll(during));
	CHECK(!larder__gp_poll(after_inner));
	larder__read_exit(r, outer);
	CHECK(!larder__read_active(r));
	CHECK(larder__gp_poll(during));
	CHECK(larder__gp_poll(after_inner));
	/* A section entered after a grace period started does not hold it. */
	uint64_t before = larder__gp_start();
	outer = larder__read_enter(r);
	CHECK(larder__gp_poll(before));
	larder__read_exit(r, outer);
}

/* One section on r, with a grace period started inside it: held until the exit. */
static void check_section_holds(struct larder__reader *r)
{
	uint64_t outer = larder__read_enter(r);
	uint64_t during = larder__gp_start();
	CHECK(!larder__gp_poll(during));
	larder__read_exit(r, outer);
	CHECK(larder__gp_poll(during));
}

static void *take_record(void *arg)
{
	*(struct larder__thread **)arg = larder__thread_self();
	return NULL;
}

/* The record the next thread to start takes, after one that exited. */
static void *section_on_lent_record(void *arg)
{
	struct larder__thread *t = larder__thread_self();
	if (CHECK(t != NULL) && CHECK(t == *(struct larder__thread **)arg))
		check_section_holds(&t->reader);
	return NULL;
}

/*
 * TGRACE-G8, as TGRACE-G4: no other reader is inside a section (the caches
 * of the earlier tests are closed, their threads gone), so every poll's
 * answer is this test's slot's.
 */
static void test_every_slot_polled(void)
{
	/* Static: a registered slot is never freed (GP-G4). 70 > one chunk. */
	static struct larder__reader slots[70];
	for (size_t i = 0; i < TH_COUNT(slots); i++)
		REQUIRE(larder__reader_register(&slots[i]));
	check_section_holds(&slots[TH_COUNT(slots) - 1]);
	check_section_holds(&slots[0]);

	struct larder__thread *first = NULL;
	pthread_t a, b;
	REQUIRE(pthread_create(&a, NULL, take_record, &first) == 0);
	pthread_join(a, NULL); /* its record given back by its exit */
	REQUIRE(first != NULL);
	REQUIRE(pthread_create(&b, NULL, section_on_lent_record, &first) == 0);
	pthread_join(b, NULL);
}

/*
 * TGRACE-G7: must run first in the process, before any cache is open and
 * any grace period has started (th_main runs the table in order).
 */
static void test_first_seal_waits_for_first_start(void)
{
	uint64_t sealed = larder__gp_next();
	CHECK(!larder__gp_begun(sealed));
	CHECK_EQ(larder__gp_start(), sealed);
	CHECK(larder__gp_begun(sealed));
}

/*
 * TGRACE-G5, one thread, no cache open (no maintainer starts grace periods
 * meanwhile): what a maintainer that seals its batch relies on to free it
 * after another shard's start.
 */
static void test_sealed_token_rides_next_start(void)
{
	struct larder__thread *t = larder__thread_self();
	REQUIRE(t != NULL);
	struct larder__reader *r = &t->reader;

	uint64_t outer = larder__read_enter(r); /* entered before the seal */
	uint64_t sealed = larder__gp_next();
	CHECK(!larder__gp_begun(sealed));
	CHECK_EQ(larder__gp_next(), sealed); /* no start between */
	uint64_t started = larder__gp_start(); /* "another shard's" start */
	CHECK_EQ(started, sealed);
	CHECK(larder__gp_begun(sealed));
	CHECK(!larder__gp_poll(sealed));
	larder__read_exit(r, outer);
	CHECK(larder__gp_poll(sealed));
	/* A section entered after the start does not hold it; a newer seal waits
	 * for a newer start. */
	outer = larder__read_enter(r);
	CHECK(larder__gp_poll(sealed));
	uint64_t next = larder__gp_next();
	CHECK(!larder__gp_begun(next));
	CHECK(!larder__gp_poll(next));
	larder__read_exit(r, outer);
}

/* TGRACE-G6, one thread, no cache open: no other thread starts one meanwhile. */
static void test_started_ns_is_latest_start(void)
{
	uint64_t before = larder__monotonic_ns();
	larder__gp_start();
	uint64_t after = larder__monotonic_ns();
	uint64_t started = larder__gp_started_ns();
	CHECK(started >= before);
	CHECK(started <= after);
}

struct inside {
	larder *cache;
	uint64_t bound;
	int first_failure, failures_ok, puts_ok;
	uint64_t slowest_ms;
};

/* Writes from inside a read section until one is refused. */
static void write_inside_fn(void *ctx, const void *value, size_t value_len)
{
	struct inside *in = ctx;
	unsigned char v[1000];
	uint64_t limit = 4 * in->bound / sizeof(v) + 1000;

	(void)value;
	(void)value_len;
	memset(v, 0x77, sizeof(v));
	in->first_failure = 0;
	for (uint64_t i = 0; i < limit; i++) {
		char key[32];
		uint64_t t0 = th_now_ms(), dt;
		int rc;

		snprintf(key, sizeof(key), "in-%" PRIu64, i);
		rc = larder_put(in->cache, key, strlen(key), v, sizeof(v), LARDER_TTL_NEVER);
		dt = th_now_ms() - t0;
		if (dt > in->slowest_ms)
			in->slowest_ms = dt;
		if (rc != LARDER_OK) {
			in->first_failure = rc;
			break;
		}
		in->puts_ok++;
	}
}

/* TGRACE-G3: a write in a callback fails with EBUSY instead of waiting for room. */
static void test_write_inside_callback(void)
{
	larder_config *config = th_config(64 * KiB);
	struct inside in;
	uint64_t waits0, busy0, bytes = 0;

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_write_wait_ms(config, 10000), LARDER_OK);
	memset(&in, 0, sizeof(in));
	in.cache = th_open(config);
	REQUIRE(in.cache != NULL);
	in.bound = th_stat(in.cache, LARDER_STAT_CAPACITY_BYTES) +
		   th_stat(in.cache, LARDER_STAT_OVERSHOOT_BOUND);
	CHECK_RC(larder_put(in.cache, "K", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	waits0 = th_stat(in.cache, LARDER_STAT_WRITE_WAITS);
	busy0 = th_stat(in.cache, LARDER_STAT_WRITE_BUSY);
	CHECK_RC(larder_get_with(in.cache, "K", 1, write_inside_fn, &in), LARDER_OK);
	printf("  %d writes inside the callback, then %d (%s); slowest %" PRIu64 " ms\n",
	       in.puts_ok, in.first_failure, larder_strerror(in.first_failure), in.slowest_ms);
	CHECK_RC(in.first_failure, LARDER_EBUSY);
	/*
	 * EBUSY means "over the memory bound" (larder.h): nothing written inside
	 * the callback could be freed, so the refusal must come only once those
	 * writes filled capacity + bound (a 1000-byte value takes under 2 KiB; 64 KiB
	 * of slack for per-thread credit).
	 */
	if (!CHECK_GE((uint64_t)in.puts_ok * 2048 + 64 * KiB, in.bound))
		printf("  EBUSY after only %d writes (< %" PRIu64 " bytes): not at the memory bound\n",
		       in.puts_ok, (uint64_t)in.puts_ok * 2048);
	/* It did not wait (the write wait is 10 s): no wait was counted. */
	CHECK_EQ(th_stat(in.cache, LARDER_STAT_WRITE_WAITS), waits0);
	CHECK_GE(th_stat(in.cache, LARDER_STAT_WRITE_BUSY), busy0 + 1);
	CHECK_LE(th_stat(in.cache, LARDER_STAT_USED_BYTES), in.bound);
	/* outside the callback, writes succeed again (waiting if they must) */
	CHECK_RC(larder_put(in.cache, "after", 5, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	th_check_accounting(in.cache, 60000, NULL, &bytes);
	CHECK_LE(bytes, 64 * KiB);
	larder_close(in.cache);
}

struct roomy {
	larder *cache;
	int writes, first_failure;
};

static void write_roomy_fn(void *ctx, const void *value, size_t value_len)
{
	struct roomy *r = ctx;
	unsigned char v[100];

	(void)value;
	(void)value_len;
	memset(v, 0x21, sizeof(v));
	for (; r->writes < 5000; r->writes++) {
		char key[32];
		snprintf(key, sizeof(key), "roomy-%d", r->writes);
		r->first_failure = larder_put(r->cache, key, strlen(key), v, sizeof(v),
					      LARDER_TTL_NEVER);
		if (r->first_failure != LARDER_OK)
			return;
	}
}

/*
 * TGRACE-G3's other half: a write inside a callback fails only where it would wait
 * for memory. 5000 writes of 100 bytes (under 1 MiB) into a 64 MiB cache are
 * nowhere near the bound, so all of them succeed.
 */
static void test_write_inside_callback_roomy(void)
{
	struct roomy r = {th_open(th_config(64 * MiB)), 0, LARDER_OK};

	REQUIRE(r.cache != NULL);
	CHECK_RC(larder_put(r.cache, "K", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_get_with(r.cache, "K", 1, write_roomy_fn, &r), LARDER_OK);
	if (!CHECK_RC(r.first_failure, LARDER_OK))
		printf("  write #%d inside the callback refused with %" PRIu64 " bytes used of %" PRIu64
		       "\n", r.writes, th_stat(r.cache, LARDER_STAT_USED_BYTES),
		       th_stat(r.cache, LARDER_STAT_CAPACITY_BYTES));
	CHECK_EQ(r.writes, 5000);
	th_check_accounting(r.cache, 60000, NULL, NULL);
	larder_close(r.cache);
}

struct waiter {
	larder *cache;
	struct th_event parked, release;
	int parked_rc, first_failure;
	_Atomic long puts_ok;
	long target;
	_Atomic int stop;
};

static void hold_fn(void *ctx, const void *value, size_t value_len)
{
	struct waiter *w = ctx;

	(void)value;
	(void)value_len;
	th_event_signal(&w->parked);
	CHECK(th_event_wait(&w->release, 60000));
}

static void *holder_thread(void *arg)
{
	struct waiter *w = arg;

	w->parked_rc = larder_get_with(w->cache, "K", 1, hold_fn, w);
	return NULL;
}

/* Writes fresh keys until told to stop or one fails. */
static void *busy_writer_thread(void *arg)
{
	struct waiter *w = arg;
	unsigned char v[1000];

	memset(v, 0x66, sizeof(v));
	for (long i = 0; !atomic_load(&w->stop); i++) {
		char key[32];
		int rc;

		snprintf(key, sizeof(key), "wait-%ld", i);
		rc = larder_put(w->cache, key, strlen(key), v, sizeof(v), LARDER_TTL_NEVER);
		if (rc != LARDER_OK) {
			w->first_failure = rc;
			break;
		}
		atomic_fetch_add(&w->puts_ok, 1);
	}
	return NULL;
}

static int writer_progressed(void *p)
{
	struct waiter *w = p;

	return atomic_load(&w->puts_ok) >= w->target || atomic_load(&w->stop);
}

static int some_writer_waits(void *p)
{
	return th_stat(p, LARDER_STAT_WRITE_WAITS) > 0;
}

/*
 * At the overshoot bound a writer (outside any callback) waits for room
 * instead of overshooting, and succeeds once room is freed: here a parked
 * reader keeps anything from being freed until the test releases it.
 */
static void test_writer_waits_for_room(void)
{
	larder_config *config = th_config(64 * KiB);
	struct waiter w;
	pthread_t holder, writer;
	uint64_t bound;

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_write_wait_ms(config, TH_WRITE_WAIT_MS), LARDER_OK);
	memset(&w, 0, sizeof(w));
	w.cache = th_open(config);
	REQUIRE(w.cache != NULL);
	bound = th_stat(w.cache, LARDER_STAT_CAPACITY_BYTES) +
		th_stat(w.cache, LARDER_STAT_OVERSHOOT_BOUND);
	th_event_init(&w.parked);
	th_event_init(&w.release);
	atomic_init(&w.stop, 0);
	CHECK_RC(larder_put(w.cache, "K", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	REQUIRE(pthread_create(&holder, NULL, holder_thread, &w) == 0);
	CHECK(th_event_wait(&w.parked, 60000));
	REQUIRE(pthread_create(&writer, NULL, busy_writer_thread, &w) == 0);
	/* the writer fills capacity + bound, then has to wait */
	CHECK(th_wait_until(some_writer_waits, w.cache, 60000));
	CHECK_LE(th_stat(w.cache, LARDER_STAT_USED_BYTES), bound);
	th_event_signal(&w.release);
	pthread_join(holder, NULL);
	/* once room is freed the waiting write goes through, and more follow */
	w.target = atomic_load(&w.puts_ok) + 200;
	CHECK(th_wait_until(writer_progressed, &w, 60000));
	atomic_store(&w.stop, 1);
	pthread_join(writer, NULL);
	CHECK_RC(w.parked_rc, LARDER_OK);
	CHECK_RC(w.first_failure, LARDER_OK); /* no EBUSY: the wait (30 s) was long enough */
	CHECK_EQ(th_stat(w.cache, LARDER_STAT_WRITE_BUSY), 0);
	CHECK_GE(atomic_load(&w.puts_ok), w.target);
	CHECK_LE(th_stat(w.cache, LARDER_STAT_USED_BYTES), bound);
	th_check_accounting(w.cache, 60000, NULL, NULL);
	larder_close(w.cache);
	th_event_destroy(&w.parked);
	th_event_destroy(&w.release);
}

/*
 * The configured write wait bounds the wait: with a parked reader nothing can
 * be freed, so a write at the bound fails with EBUSY after about write_wait_ms
 * (immediately for 0), leaving the key's previous value intact.
 */
static void run_write_wait(uint64_t wait_ms)
{
	/* One shard: the room a refused fill leaves is its shard's, and
	 * another shard may still have room for the overwrite below. */
	larder_config *config = th_config_one_shard(64 * KiB);
	struct waiter w;
	pthread_t holder;
	unsigned char v[1200]; /* fills use 1000 bytes; the overwrite below all of it */
	uint64_t t0 = 0, elapsed = 0;
	long fills;
	char buf[8];
	size_t len = 0;
	int rc = LARDER_OK;

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_write_wait_ms(config, wait_ms), LARDER_OK);
	memset(&w, 0, sizeof(w));
	w.cache = th_open(config);
	REQUIRE(w.cache != NULL);
	th_event_init(&w.parked);
	th_event_init(&w.release);
	CHECK_RC(larder_put(w.cache, "K", 1, "v", 1, LARDER_TTL_NEVER), LARDER_OK);
	CHECK_RC(larder_put(w.cache, "old", 3, "kept", 4, LARDER_TTL_NEVER), LARDER_OK);
	REQUIRE(pthread_create(&holder, NULL, holder_thread, &w) == 0);
	CHECK(th_event_wait(&w.parked, 60000));
	memset(v, 0x55, sizeof(v));
	for (fills = 0; fills < 100000 && rc == LARDER_OK; fills++) {
		char key[32];
		snprintf(key, sizeof(key), "fill-%ld", fills);
		t0 = th_now_ms();
		rc = larder_put(w.cache, key, strlen(key), v, 1000, LARDER_TTL_NEVER);
		elapsed = th_now_ms() - t0;
	}
	CHECK_RC(rc, LARDER_EBUSY);
	/* refused only at the memory bound (see test_write_inside_callback) */
	CHECK_GE((uint64_t)(fills - 1) * 2048 + 64 * KiB,
		 th_stat(w.cache, LARDER_STAT_CAPACITY_BYTES) +
			 th_stat(w.cache, LARDER_STAT_OVERSHOOT_BOUND));
	printf("  write wait %" PRIu64 " ms: EBUSY after %" PRIu64 " ms, used %" PRIu64
	       " of capacity + bound %" PRIu64 "\n",
	       wait_ms, elapsed, th_stat(w.cache, LARDER_STAT_USED_BYTES),
	       th_stat(w.cache, LARDER_STAT_CAPACITY_BYTES) +
		       th_stat(w.cache, LARDER_STAT_OVERSHOOT_BOUND));
	if (wait_ms > 0) {
		CHECK_GE(elapsed + 5, wait_ms); /* it did wait (5 ms for clock granularity) */
		CHECK_GE(th_stat(w.cache, LARDER_STAT_WRITE_WAITS), 1);
	} else {
		CHECK_EQ(th_stat(w.cache, LARDER_STAT_WRITE_WAITS), 0);
	}
	/* (That the wait ends at all needs no clock: a wait that did not would
	 * hang this test until ctest's timeout.) */
	CHECK_GE(th_stat(w.cache, LARDER_STAT_WRITE_BUSY), 1);
	CHECK_GE(th_stat(w.cache, LARDER_STAT_BUSY_MEMORY), 1);
	/*
	 * An overwrite refused for room stores nothing. (The maintainer may have
	 * evicted "old" meanwhile, trying to get under capacity, so a miss is fine;
	 * the refused value must never appear. It is larger than any fill, so
	 * that it needs more room than the refused fill did, whatever the
	 * header and slot rounding.)
	 */
	CHECK_RC(larder_put(w.cache, "old", 3, v, sizeof(v), LARDER_TTL_NEVER), LARDER_EBUSY);
	rc = larder_get(w.cache, "old", 3, buf, sizeof(buf), &len);
	CHECK(rc == LARDER_MISS || (rc == LARDER_OK && len == 4 && memcmp(buf, "kept", 4) == 0));
	th_event_signal(&w.release);
	pthread_join(holder, NULL);
	th_check_accounting(w.cache, 60000, NULL, NULL);
	larder_close(w.cache);
	th_event_destroy(&w.parked);
	th_event_destroy(&w.release);
}

static void test_write_wait_expires(void)
{
	run_write_wait(200);
}

static void test_write_wait_zero(void)
{
	run_write_wait(0);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_first_seal_waits_for_first_start), /* first: TGRACE-G7 */
		TH_TEST(test_parked_get_with),
		TH_TEST(test_parked_get_batch),
		TH_TEST(test_parked_after_nested_reads),
		TH_TEST(test_nested_sections_hold_grace),
		TH_TEST(test_every_slot_polled),
		TH_TEST(test_sealed_token_rides_next_start),
		TH_TEST(test_started_ns_is_latest_start),
		TH_TEST(test_write_inside_callback),
		TH_TEST(test_write_inside_callback_roomy),
		TH_TEST(test_writer_waits_for_room),
		TH_TEST(test_write_wait_expires),
		TH_TEST(test_write_wait_zero),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
