/*
 * fuzz_exec.c - libFuzzer target for larderd's request path: the parser and
 * the command layer (server/exec) against a real larder cache, with no
 * sockets. The input is one connection's byte stream; every request is
 * parsed and executed, and replies are built and dropped. An input whose
 * first byte is 0x80 speaks the binary protocol (binparse.c, binexec.c), as
 * larderd decides it.
 *
 * Checks: no crash, no sanitizer report, no read outside the input, and
 * that a reply never contains a hole (obuf never fails here; a failed obuf
 * traps). The cache persists across inputs, as a long-lived server's does,
 * so sequences of inputs exercise CAS, append and incr on existing items.
 *
 * Run: larderd_fuzz_exec -max_total_time=600 build/server/fuzz_exec_corpus tests/fuzz/corpus
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "larder.h"
#include "exec/exec.h"
#include "proto/binparse.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct larderd_shared g_sh;
static struct larderd_exec g_x;
static struct larderd_exec *g_workers[1];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	larder_config *cfg;
	(void)argc;
	(void)argv;
	if (larder_config_create(&cfg) != LARDER_OK ||
	    larder_config_set_capacity(cfg, 8u << 20) != LARDER_OK ||
	    larder_config_set_max_key_bytes(cfg, LARDERD_KEY_MAX) != LARDER_OK ||
	    larder_config_set_max_value_bytes(cfg, 4096 + LARDERD_HDR) != LARDER_OK ||
	    larder_open(&g_sh.cache, cfg) != LARDER_OK)
		abort();
	larder_config_destroy(cfg);
	g_sh.item_max = 4096;
	atomic_store_explicit(&g_sh.maxbytes, 8u << 20, memory_order_relaxed);
	g_sh.threads = 1;
	g_sh.maxconns = 10;
	g_sh.port = 11211;
	g_sh.started = time(NULL);
	g_sh.workers = g_workers;
	larderd_shared_init(&g_sh, ':');
	g_workers[0] = &g_x;
	if (larderd_exec_init(&g_x, &g_sh, 0) != 0)
		abort();
	return 0;
}

static void run_binary(const uint8_t *data, size_t size, const struct larderd_limits *lim,
		       struct larderd_obuf *out)
{
	size_t off = 0;

	while (off < size) {
		struct larderd_binreq r;
		int e;

		if (larderd_binparse(data + off, size - off, lim, &r) != LARDERD_PARSE_DONE)
			break;
		e = larderd_binexec(&g_x, &r, out);
		if (out->failed)
			__builtin_trap();
		out->len = 0; /* the client read everything */
		if (e != LARDERD_EXEC_DONE)
			break;
		off += r.consumed;
		off += r.swallow < size - off ? r.swallow : size - off;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct larderd_limits lim = {.item_max = 4096};
	struct larderd_obuf out = {0};
	const char *buf = (const char *)data;
	size_t off = 0;

	if (size > 0 && data[0] == LARDERD_BIN_REQ_MAGIC) {
		run_binary(data, size, &lim, &out);
		larderd_obuf_free(&out);
		return 0;
	}
	while (off < size) {
		struct larderd_req r;
		int rc = larderd_parse(buf + off, size - off, &lim, &r);
		if (rc != LARDERD_PARSE_DONE)
			break;
		for (;;) {
			int e = larderd_exec(&g_x, &r, &out, 1024);
			if (out.failed)
				__builtin_trap();
			out.len = 0; /* the client read everything */
			if (e != LARDERD_EXEC_SUSPEND)
				break;
		}
		if (r.cmd == LARDERD_CMD_QUIT)
			break;
		off += r.consumed;
		off += r.swallow < size - off ? r.swallow : size - off;
	}
	larderd_obuf_free(&out);
	return 0;
}
