/*
 * binparse.h - the memcached binary protocol request parser of larderd.
 *
 * Owns: turning the bytes of a binary-protocol connection into one request
 * at a time, with memcached 1.6.18's rules (proto_bin.c): the 24-byte
 * header, which opcodes exist, which extras, key and body lengths each one
 * accepts, what is refused before its body is read, and which status each
 * mistake gets. Pure, like parse.h: no I/O, no allocation, no global state;
 * every pointer in a request points into the caller's buffer.
 *
 * The request header (network byte order):
 *   [0] magic 0x80  [1] opcode  [2..4) key length  [4] extras length
 *   [5] data type   [6..8) vbucket  [8..12) body length (extras + key + value)
 *   [12..16) opaque (echoed)  [16..24) CAS
 *
 * Steps, as memcached takes them: a request is looked at once its header,
 * extras and key have arrived (the value is not needed to refuse it):
 *   1. a magic other than 0x80 closes the connection without a reply;
 *   2. a key or key + extras longer than the body: "Unknown command", close;
 *   3. a key over 250 bytes: "Invalid arguments", close;
 *   4. lengths an opcode does not accept (VERSION with a body, SET without
 *      its 8 bytes of extras, ...): "Invalid arguments", close;
 *   5. an unknown opcode, and the SASL opcodes (larderd has no SASL, as
 *      memcached without -S): "Unknown command", the body after the key
 *      discarded;
 *   6. a storage command whose value is over the item limit: too_large,
 *      the value discarded as it arrives (the executor answers "Too large."
 *      and, for SET, drops the key's old value), never buffered.
 * Opcodes without a value consume the header, extras and key only: body
 * bytes past them are read as the next request, as memcached reads them.
 *
 * Invariants (asserted by tests/protocol/test_binparse.c):
 *   BINPARSE-B1. DONE consumes req->consumed >= 24 bytes, never more than it
 *       was given; MORE sets need > len, the total needed.
 *   BINPARSE-B2. Feeding a request split at any byte boundary gives the same
 *       result as feeding it whole.
 *   BINPARSE-B3. At most 24 + 255 + 65535 bytes (header, extras, key) or
 *       24 + body for a value that fits the item limit are ever needed: a
 *       value over the limit is never buffered (swallow > 0 instead).
 */
#ifndef LARDERD_BINPARSE_H
#define LARDERD_BINPARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "parse.h"

#define LARDERD_BIN_HDR 24
#define LARDERD_BIN_REQ_MAGIC 0x80
#define LARDERD_BIN_RES_MAGIC 0x81

/* Opcodes (memcached's protocol_binary.h). */
enum larderd_bin_op {
	LARDERD_BIN_GET = 0x00,
	LARDERD_BIN_SET = 0x01,
	LARDERD_BIN_ADD = 0x02,
	LARDERD_BIN_REPLACE = 0x03,
	LARDERD_BIN_DELETE = 0x04,
	LARDERD_BIN_INCREMENT = 0x05,
	LARDERD_BIN_DECREMENT = 0x06,
	LARDERD_BIN_QUIT = 0x07,
	LARDERD_BIN_FLUSH = 0x08,
	LARDERD_BIN_GETQ = 0x09,
	LARDERD_BIN_NOOP = 0x0a,
	LARDERD_BIN_VERSION = 0x0b,
	LARDERD_BIN_GETK = 0x0c,
	LARDERD_BIN_GETKQ = 0x0d,
	LARDERD_BIN_APPEND = 0x0e,
	LARDERD_BIN_PREPEND = 0x0f,
	LARDERD_BIN_STAT = 0x10,
	LARDERD_BIN_SETQ = 0x11,
	LARDERD_BIN_ADDQ = 0x12,
	LARDERD_BIN_REPLACEQ = 0x13,
	LARDERD_BIN_DELETEQ = 0x14,
	LARDERD_BIN_INCREMENTQ = 0x15,
	LARDERD_BIN_DECREMENTQ = 0x16,
	LARDERD_BIN_QUITQ = 0x17,
	LARDERD_BIN_FLUSHQ = 0x18,
	LARDERD_BIN_APPENDQ = 0x19,
	LARDERD_BIN_PREPENDQ = 0x1a,
	LARDERD_BIN_TOUCH = 0x1c,
	LARDERD_BIN_GAT = 0x1d,
	LARDERD_BIN_GATQ = 0x1e,
	LARDERD_BIN_SASL_LIST_MECHS = 0x20,
	LARDERD_BIN_SASL_AUTH = 0x21,
	LARDERD_BIN_SASL_STEP = 0x22,
	LARDERD_BIN_GATK = 0x23,
	LARDERD_BIN_GATKQ = 0x24,
};

/* Response statuses. */
enum larderd_bin_status {
	LARDERD_BIN_OK = 0x00,
	LARDERD_BIN_KEY_ENOENT = 0x01,
	LARDERD_BIN_KEY_EEXISTS = 0x02,
	LARDERD_BIN_E2BIG = 0x03,
	LARDERD_BIN_EINVAL = 0x04,
	LARDERD_BIN_NOT_STORED = 0x05,
	LARDERD_BIN_DELTA_BADVAL = 0x06,
	LARDERD_BIN_AUTH_ERROR = 0x20,
	LARDERD_BIN_UNKNOWN_COMMAND = 0x81,
	LARDERD_BIN_ENOMEM = 0x82,
};

struct larderd_binreq {
	uint8_t opcode; /* as sent, echoed in the response */
	uint8_t cmd;    /* the opcode with its quiet form mapped to the loud one */
	bool quiet;     /* a quiet opcode: successes (and get misses) are not sent */
	uint8_t extlen;
	uint16_t keylen;
	uint32_t bodylen;
	unsigned char opaque[4]; /* echoed as sent */
	uint64_t cas;
	const unsigned char *ext;
	const char *key;
	const char *value; /* storage commands: vlen bytes, NULL when too_large */
	size_t vlen;
	/* Refused by the parser: error != 0 is the status to send (steps 2-5
	 * of the header comment), then close when close_after. */
	uint16_t error;
	bool close_after;
	bool too_large;  /* step 6: swallow holds the value's length */
	size_t consumed; /* DONE: bytes taken from the buffer */
	size_t swallow;  /* DONE: bytes to discard after consumed */
	size_t need;     /* MORE: total bytes needed */
	/* Extras, decoded: SET family flags and exptime; INCR/DECR delta,
	 * initial and exptime; FLUSH, TOUCH and GAT exptime (0 when absent). */
	uint32_t flags;
	uint32_t exptime;
	uint64_t delta, initial;
};

/*
 * Parses one binary request from buf[0..len). Returns LARDERD_PARSE_MORE
 * (req->need set), LARDERD_PARSE_DONE, or LARDERD_PARSE_CLOSE (bad magic).
 */
int larderd_binparse(const unsigned char *buf, size_t len, const struct larderd_limits *lim,
		     struct larderd_binreq *req);

/* memcached's text for an error status ("Not found", ...). */
const char *larderd_bin_status_text(uint16_t status);

/*
 * Writes a response header to p[0..24): status, the lengths, the request's
 * opcode and opaque, and cas.
 */
void larderd_bin_header(unsigned char *p, const struct larderd_binreq *req, uint16_t status,
			uint8_t extlen, uint16_t keylen, uint32_t bodylen, uint64_t cas);

#endif
