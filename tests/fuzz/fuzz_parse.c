/*
 * fuzz_parse.c - libFuzzer target for larderd's request parsers
 * (server/proto/parse.c, server/proto/binparse.c) and the base64 key codec.
 *
 * An input whose first byte is 0x80 is a binary-protocol connection, as
 * larderd decides it (-B auto), and is walked with larderd_binparse(),
 * checking BINPARSE-B1 and BINPARSE-B2 of binparse.h: DONE consumes at least a header
 * and at most what it was given, MORE asks for more than it was given, and
 * the bytes cut right after the request give the same request.
 *
 * Feeds the input as one connection's byte stream and walks it request by
 * request, checking the invariants of parse.h on every step:
 *   PARSE-P1 DONE consumes > 0 bytes, at most what it was given;
 *   PARSE-P2 the same bytes, cut right after the request, give the same request
 *      (a request is decided by its own bytes, so splits cannot change it);
 *   MORE's `need` is 0 or more than it was given, and 0 only when the bytes
 *      hold no newline (the server then searches only the bytes it adds);
 *   on bytes without a newline, larderd_parse_no_newline() decides as
 *      larderd_parse() does.
 * Any violation traps, which libFuzzer reports as a crash. ASan/UBSan catch
 * reads outside the buffer.
 *
 * Build: cmake -DLARDER_FUZZ=ON -DCMAKE_C_COMPILER=clang-14 ...; run:
 *   larderd_fuzz_parse -max_total_time=600 tests/fuzz/corpus
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "binparse.h"
#include "parse.h"
#include "reply.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void walk_binary(const uint8_t *data, size_t size, const struct larderd_limits *lim)
{
	size_t off = 0;

	while (off < size) {
		struct larderd_binreq r, again;
		size_t avail = size - off;
		int rc = larderd_binparse(data + off, avail, lim, &r);

		if (rc == LARDERD_PARSE_CLOSE)
			break;
		if (rc == LARDERD_PARSE_MORE) {
			if (r.need <= avail)
				__builtin_trap();
			break;
		}
		if (r.consumed < LARDERD_BIN_HDR || r.consumed > avail)
			__builtin_trap();
		if (larderd_binparse(data + off, r.consumed, lim, &again) != LARDERD_PARSE_DONE ||
		    again.consumed != r.consumed || again.cmd != r.cmd ||
		    again.swallow != r.swallow || again.error != r.error)
			__builtin_trap();
		if (r.value != NULL && (r.value + r.vlen > (const char *)data + off + r.consumed))
			__builtin_trap();
		off += r.consumed;
		off += r.swallow < size - off ? r.swallow : size - off;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const struct larderd_limits lim = {.item_max = 4096};
	const char *buf = (const char *)data;
	size_t off = 0;
	unsigned char key[LARDERD_KEY_MAX];
	char enc[4 * LARDERD_KEY_MAX];

	if (size > 0 && data[0] == LARDERD_BIN_REQ_MAGIC) {
		walk_binary(data, size, &lim);
		return 0;
	}
	while (off < size) {
		struct larderd_req r, again;
		size_t avail = size - off;
		int rc = larderd_parse(buf + off, avail, &lim, &r);
		bool no_nl = memchr(buf + off, '\n', avail) == NULL;

		if (no_nl && larderd_parse_no_newline(buf + off, avail) != rc)
			__builtin_trap();
		if (rc == LARDERD_PARSE_CLOSE)
			break;
		if (rc == LARDERD_PARSE_MORE) {
			if (r.need != 0 && r.need <= avail)
				__builtin_trap();
			if (r.need == 0 && !no_nl)
				__builtin_trap();
			break;
		}
		if (r.consumed == 0 || r.consumed > avail)
			__builtin_trap();
		if (larderd_parse(buf + off, r.consumed, &lim, &again) != LARDERD_PARSE_DONE ||
		    again.consumed != r.consumed || again.cmd != r.cmd || again.swallow != r.swallow)
			__builtin_trap();
		if (r.cmd == LARDERD_CMD_GET || r.cmd == LARDERD_CMD_GETS) {
			struct larderd_tok t;
			while (larderd_next_token(&r.keys, r.keys_end, &t))
				if (t.n == 0 || t.n > LARDERD_KEY_MAX)
					__builtin_trap();
		}
		if (r.key.n > 0 && r.cmd != LARDERD_CMD_REPLY) {
			long n = larderd_b64_decode(r.key.p, r.key.n, key, sizeof(key));
			if (n > 0) {
				size_t m = larderd_b64_encode(key, (size_t)n, enc);
				if (m != r.key.n || memcmp(enc, r.key.p, m) != 0)
					; /* non-canonical padding bits decode too; not an error */
			}
		}
		off += r.consumed;
		off += r.swallow < size - off ? r.swallow : size - off;
	}
	return 0;
}
