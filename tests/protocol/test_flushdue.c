/*
 * test_flushdue.c - a delayed flush_all that has come due is run by the first
 * command of any connection (larderd_flush_due, server/exec/exec.c); a
 * command on another connection at the same moment must not act as if the
 * flush were behind it before its clear has run:
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
 * correct one. Exit status 0 when both hold.
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
#include "exec/exec.h"

#define HOLD_MS 1000
#define HANG_MS 60000 /* a hang guard: thread A never reached the clear */

static struct larderd_shared g_sh;
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
	larderd_shared_init(&g_sh, ':');
	if (larderd_exec_init(&g_xa, &g_sh, 0) != 0 || larderd_exec_init(&g_xb, &g_sh, 1) != 0) {
		fprintf(stderr, "FAIL: cannot set up the workers\n");
		exit(1);
	}
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
	larderd_obuf_free(&out);
	larderd_exec_fini(&g_xa);
	larderd_exec_fini(&g_xb);
	larder_close(g_sh.cache);
	if (!fail)
		printf("ok: a command beside the one running a due flush_all's clear waits for it\n");
	return fail;
}
