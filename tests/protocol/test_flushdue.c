/*
 * test_flushdue.c - a delayed flush_all, once due, as memcached runs it
 * (larderd_flush_due and larderd_flush_window, server/exec/exec.c).
 *
 * Part 1, the race: a delayed flush_all that has come due is run by the
 * first command of any connection; a command on another connection at the
 * same moment must not act as if the flush were behind it before its clear
 * has run:
 *   - a get must not read an item the flush removes,
 *   - a set must not be removed by the clear, which comes after it.
 *
 * The command layer (server/exec) against a real cache, no sockets, two
 * workers' states on two threads. The flush time is set at Unix ms 1, due
 * long ago, so nothing depends on the wall clock. The race is made certain,
 * not waited for: the cache's clock, which larder_clear reads once before it
 * swaps the index (the cache has an item with a TTL), holds thread A inside
 * its clear until thread B's commands are done, or for HOLD_MS. B sends its
 * get and set while A is held. With the fix B waits for A's clear (flush_lock)
 * and the hold runs out; before it, B found the flush time already 0 and read
 * the flushed item, and its set was removed by A's clear (both failed so,
 * checked). No timed assertion: HOLD_MS bounds how long A is held; a B too
 * slow to finish within it can only let a broken server pass, never fail a
 * correct one.
 *
 * Part 2, the due second: memcached flushes what is written during the
 * flush's due second too (its flush time is that second; an item linked in
 * it is not newer), and keeps what is written from the next second on.
 * The flush's wall clock is the seam (flush_clock_ms), set by the test to
 * whole and part seconds, so nothing depends on how fast the machine is:
 * flush_all 1, flush_all 3, a Unix time (this second, and a second already
 * over), flush_all 0 ending a due second, and the binary SET. Before
 * larderd_flush_window, a set in the due second read back (checked).
 *
 * Part 3, a refused clear: a due flush whose larder_clear fails (out of
 * memory, by the engine's allocation-failure seam) stays due, so the next
 * command runs it again; before, the flush time went back to 0 and the
 * items it should have removed stayed readable (checked).
 * Exit status 0 when all hold.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "larder.h"
#include "core/testing.h"
#include "exec/exec.h"
#include "proto/binparse.h"

#define HOLD_MS 1000
#define HANG_MS 60000 /* a hang guard: thread A never reached the clear */

static struct larderd_shared g_sh;
static _Atomic uint64_t g_wall_ms; /* part 2's wall clock; 0: the real one */
static struct larderd_exec g_xa, g_xb;
static struct larderd_exec *g_workers[2] = {&g_xa, &g_xb};
static pthread_t g_clearer;
static atomic_bool g_armed, g_held, g_b_done;

static uint64_t mono_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void nap(void)
{
	struct timespec ts = {0, 1000000};
	nanosleep(&ts, NULL);
}

/* The cache's clock; on thread A, the first reading once armed holds it. */
static uint64_t held_clock(void *ctx)
{
	(void)ctx;
	if (atomic_load(&g_armed) && pthread_equal(pthread_self(), g_clearer) &&
	    atomic_exchange(&g_armed, false)) {
		uint64_t until = mono_ms() + HOLD_MS;
		atomic_store(&g_held, true);
		while (!atomic_load(&g_b_done) && mono_ms() < until)
			nap();
	}
	return mono_ms();
}

static uint64_t wall_clock(void)
{
	struct timespec ts;
	uint64_t fake = atomic_load(&g_wall_ms);

	if (fake != 0)
		return fake;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Runs one text request on x; the reply in out (cleared first). */
static void run(struct larderd_exec *x, const char *req, struct larderd_obuf *out)
{
	static const struct larderd_limits lim = {.item_max = 4096};
	struct larderd_req r;

	out->len = 0;
	if (larderd_parse(req, strlen(req), &lim, &r) != LARDERD_PARSE_DONE ||
	    larderd_exec(x, &r, out, 1 << 20) != LARDERD_EXEC_DONE || out->failed) {
		fprintf(stderr, "FAIL: could not run %s", req);
		exit(1);
	}
}

static bool replied(const struct larderd_obuf *out, const char *want)
{
	return out->len == strlen(want) && memcmp(out->buf, want, out->len) == 0;
}

static void *thread_a(void *arg)
{
	struct larderd_obuf out = {0};
	(void)arg;
	run(&g_xa, "mn\r\n", &out); /* its larderd_flush_due runs the clear */
	larderd_obuf_free(&out);
	return NULL;
}

static void setup(void)
{
	larder_config *cfg;

	if (larder_config_create(&cfg) != LARDER_OK ||
	    larder_config_set_capacity(cfg, 8u << 20) != LARDER_OK ||
	    larder_config_set_max_key_bytes(cfg, LARDERD_KEY_MAX) != LARDER_OK ||
	    larder_config_set_max_value_bytes(cfg, 4096 + LARDERD_HDR) != LARDER_OK ||
	    larder_config_set_clock(cfg, held_clock, NULL) != LARDER_OK ||
	    larder_open(&g_sh.cache, cfg) != LARDER_OK) {
		fprintf(stderr, "FAIL: cannot open the cache\n");
		exit(1);
	}
	larder_config_destroy(cfg);
	g_sh.item_max = 4096;
	g_sh.threads = 2;
	g_sh.started = time(NULL);
	g_sh.workers = g_workers;
	g_sh.flush_clock_ms = wall_clock;
	larderd_shared_init(&g_sh, ':');
	if (larderd_exec_init(&g_xa, &g_sh, 0) != 0 || larderd_exec_init(&g_xb, &g_sh, 1) != 0) {
		fprintf(stderr, "FAIL: cannot set up the workers\n");
		exit(1);
	}
}

/* Runs req on worker B at wall time ms; fails the test unless it answers want. */
static int expect(uint64_t ms, const char *req, const char *want)
{
	struct larderd_obuf out = {0};
	int fail = 0;

	atomic_store(&g_wall_ms, ms);
	run(&g_xb, req, &out);
	if (!replied(&out, want)) {
		fprintf(stderr, "FAIL: at %llu.%03llu s, %s answered %.*s instead of %s",
			(unsigned long long)(ms / 1000), (unsigned long long)(ms % 1000), req,
			(int)out.len, out.buf, want);
		fail = 1;
	}
	larderd_obuf_free(&out);
	return fail;
}

/* A binary SET of key "bin" (value "v") on worker B at wall time ms. */
static int expect_bin_set(uint64_t ms)
{
	static const struct larderd_limits lim = {.item_max = 4096};
	unsigned char f[24 + 8 + 3 + 1] = {0x80, 0x01, 0, 3, 8};
	struct larderd_obuf out = {0};
	struct larderd_binreq r;
	int fail = 0;

	f[11] = 8 + 3 + 1; /* body: extras, key, value */
	memcpy(f + 32, "binv", 4);
	atomic_store(&g_wall_ms, ms);
	if (larderd_binparse(f, sizeof(f), &lim, &r) != LARDERD_PARSE_DONE ||
	    larderd_binexec(&g_xb, &r, &out) != LARDERD_EXEC_DONE || out.len < 24 ||
	    out.buf[6] != 0 || out.buf[7] != 0) {
		fprintf(stderr, "FAIL: the binary SET was not stored\n");
		fail = 1;
	}
	larderd_obuf_free(&out);
	return fail;
}

/* Part 2 (header comment). B is a whole second of the fake wall clock,
 * after the server's start, so that Unix times read as times. */
static int due_second(void)
{
	uint64_t b = ((uint64_t)time(NULL) + 100) * 1000, s = b / 1000;
	char line[64];
	int fail = 0;

	/* flush_all 1: due in the command's second, flushes at once and what
	 * the rest of the second writes */
	fail |= expect(b + 500, "set a 0 0 1\r\nx\r\n", "STORED\r\n");
	fail |= expect(b + 500, "flush_all 1\r\n", "OK\r\n");
	fail |= expect(b + 500, "get a\r\n", "END\r\n");
	fail |= expect(b + 600, "set b 0 0 1\r\ny\r\n", "STORED\r\n");
	fail |= expect(b + 600, "get b\r\n", "END\r\n");
	fail |= expect(b + 700, "add b 0 0 1\r\ny\r\n", "STORED\r\n");
	fail |= expect(b + 700, "add b 0 0 1\r\ny\r\n", "STORED\r\n");
	fail |= expect(b + 800, "incr b 1\r\n", "NOT_FOUND\r\n");
	fail |= expect(b + 800, "ms c 1\r\nz\r\n", "HD\r\n");
	fail |= expect(b + 800, "mg c v\r\n", "EN\r\n");
	fail |= expect(b + 900, "ma n N0 J7 v\r\n", "VA 1\r\n7\r\n");
	fail |= expect(b + 900, "ma n N0 J7 v\r\n", "VA 1\r\n7\r\n");
	fail |= expect_bin_set(b + 999);
	fail |= expect(b + 999, "get bin\r\n", "END\r\n");
	/* the next second keeps its writes */
	fail |= expect(b + 1000, "set d 0 0 1\r\nw\r\n", "STORED\r\n");
	fail |= expect(b + 1000, "get d b\r\n", "VALUE d 0 1\r\nw\r\nEND\r\n");
	fail |= expect_bin_set(b + 1001);
	fail |= expect(b + 1001, "get bin\r\n", "VALUE bin 0 1\r\nv\r\nEND\r\n");

	/* flush_all 3 at s + 1.2: due at s + 3, flushes what was written before
	 * and during that second, not after */
	fail |= expect(b + 1200, "flush_all 3\r\n", "OK\r\n");
	fail |= expect(b + 2999, "set e 0 0 1\r\ne\r\n", "STORED\r\n");
	fail |= expect(b + 2999, "get e\r\n", "VALUE e 0 1\r\ne\r\nEND\r\n");
	fail |= expect(b + 3000, "get e d\r\n", "END\r\n");
	fail |= expect(b + 3500, "set f 0 0 1\r\nf\r\n", "STORED\r\n");
	fail |= expect(b + 3999, "get f\r\n", "END\r\n");
	fail |= expect(b + 4000, "set g 0 0 1\r\ng\r\n", "STORED\r\n");
	fail |= expect(b + 4000, "get g\r\n", "VALUE g 0 1\r\ng\r\nEND\r\n");

	/* a Unix time: s + 6 at s + 5.5 is due now (second s + 5), s + 5 at
	 * s + 6.5 names a second already over: a flush now, nothing after */
	snprintf(line, sizeof(line), "flush_all %llu\r\n", (unsigned long long)(s + 6));
	fail |= expect(b + 5500, line, "OK\r\n");
	fail |= expect(b + 5600, "get g\r\n", "END\r\n");
	fail |= expect(b + 5600, "set h 0 0 1\r\nh\r\n", "STORED\r\n");
	fail |= expect(b + 5600, "get h\r\n", "END\r\n");
	fail |= expect(b + 6500, "set h 0 0 1\r\nh\r\n", "STORED\r\n");
	snprintf(line, sizeof(line), "flush_all %llu\r\n", (unsigned long long)(s + 5));
	fail |= expect(b + 6500, line, "OK\r\n");
	fail |= expect(b + 6500, "get h\r\n", "END\r\n");
	fail |= expect(b + 6600, "set i 0 0 1\r\ni\r\n", "STORED\r\n");
	fail |= expect(b + 6600, "get i\r\n", "VALUE i 0 1\r\ni\r\nEND\r\n");

	/* flush_all 0 in a due second replaces its flush time: kept after it */
	fail |= expect(b + 7200, "flush_all 1\r\n", "OK\r\n");
	fail |= expect(b + 7300, "flush_all 0\r\n", "OK\r\n");
	fail |= expect(b + 7400, "set j 0 0 1\r\nj\r\n", "STORED\r\n");
	fail |= expect(b + 7400, "get j\r\n", "VALUE j 0 1\r\nj\r\nEND\r\n");
	atomic_store(&g_wall_ms, 0);
	return fail;
}

/* Part 3 (header comment). The seam fails the next allocation of any
 * thread, so the maintainer may take it instead of the clear: then the
 * clear succeeds and the round proves nothing, and the next round tries
 * again; a round where the clear failed is the check. */
static int refused_clear(void)
{
	struct larderd_obuf out = {0};
	int fail = 0;

	for (int round = 0; round < 100; round++) {
		run(&g_xb, "set kept 0 0 1\r\nk\r\n", &out);
		atomic_store(&g_sh.flush_at_ms, 1); /* due long ago */
		larder__test_fail_alloc_after(0);
		run(&g_xb, "mn\r\n", &out); /* its larderd_flush_due runs the clear */
		larder__test_fail_alloc_after(-1);
		if (larder_contains(g_sh.cache, "kept", 4) != LARDER_OK) {
			if (atomic_load(&g_sh.flush_at_ms) != 0) {
				fprintf(stderr, "FAIL: a flush that cleared is still due\n");
				fail = 1;
				break;
			}
			continue; /* the clear ran: another thread took the failure */
		}
		if (atomic_load(&g_sh.flush_at_ms) == 0) {
			fprintf(stderr, "FAIL: a flush whose clear was refused is no longer due, "
					"and its items stay\n");
			fail = 1;
		}
		run(&g_xb, "get kept\r\n", &out); /* runs the flush again */
		if (!replied(&out, "END\r\n") || atomic_load(&g_sh.flush_at_ms) != 0) {
			fprintf(stderr, "FAIL: the next command did not run the refused flush: %.*s",
				(int)out.len, out.buf);
			fail = 1;
		}
		larderd_obuf_free(&out);
		return fail;
	}
	larderd_obuf_free(&out);
	if (!fail)
		fprintf(stderr, "FAIL: no clear was refused in 100 rounds\n");
	return 1;
}

int main(void)
{
	struct larderd_obuf out = {0};
	uint64_t give_up;
	int fail = 0;

	setup();
	run(&g_xa, "set old 0 0 1\r\nx\r\n", &out);
	/* a TTL: from now on larder_clear reads the clock */
	run(&g_xa, "set ttl 0 1000 1\r\ny\r\n", &out);
	atomic_store(&g_sh.flush_at_ms, 1); /* a delayed flush, due long ago */

	atomic_store(&g_armed, true);
	if (pthread_create(&g_clearer, NULL, thread_a, NULL) != 0) {
		fprintf(stderr, "FAIL: pthread_create\n");
		return 1;
	}
	give_up = mono_ms() + HANG_MS;
	while (!atomic_load(&g_held) && mono_ms() < give_up)
		sched_yield();
	if (!atomic_load(&g_held)) {
		fprintf(stderr, "FAIL: thread A's clear never read the clock\n");
		return 1;
	}
	/* B, while A is held in the clear it runs */
	run(&g_xb, "get old\r\n", &out);
	if (!replied(&out, "END\r\n")) {
		fprintf(stderr, "FAIL: a get after the flush's due time read a flushed item: %.*s\n",
			(int)out.len, out.buf);
		fail = 1;
	}
	run(&g_xb, "set new 0 0 1\r\nz\r\n", &out);
	atomic_store(&g_b_done, true);
	pthread_join(g_clearer, NULL);

	run(&g_xb, "get new\r\n", &out);
	if (!replied(&out, "VALUE new 0 1\r\nz\r\nEND\r\n")) {
		fprintf(stderr, "FAIL: a set after the flush's due time was flushed: %.*s\n",
			(int)out.len, out.buf);
		fail = 1;
	}
	if (atomic_load(&g_sh.flush_at_ms) != 0) {
		fprintf(stderr, "FAIL: the flush time is still set\n");
		fail = 1;
	}
	fail |= due_second();
	fail |= refused_clear();
	larderd_obuf_free(&out);
	larderd_exec_fini(&g_xa);
	larderd_exec_fini(&g_xb);
	larder_close(g_sh.cache);
	if (!fail)
		printf("ok: a command beside the one running a due flush_all's clear waits for it; "
		       "the due second's writes are flushed, the next second's kept; a refused "
		       "clear stays due\n");
	return fail;
}
