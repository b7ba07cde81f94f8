/*
 * tests/model/model.h - the model-based random tester of larder's whole API.
 *
 * A run opens one cache with a configuration drawn from a seed (policy,
 * expiry mode, default TTL, tiny or large capacity, key and value limits,
 * write wait, index size, compression and its dictionary, shards, pool
 * membership), then applies a
 * sequence of operations drawn from the same seed to the cache and to a
 * reference model at once, on one thread, with an injected clock. Every result is compared with the model's
 * prediction at once; at sync points (the quiesce seam) the removal
 * listener's reports, the counters and a full walk of the index are too.
 *
 * Where the engine may legitimately differ from the model, the model is
 * exact about what is decidable and tolerant only where larder.h allows:
 *   - eviction (a cache over its capacity): a key the model holds may be
 *     missing only if the listener reported that very value EVICTED (the
 *     tester quiesces and reads the reports before it accepts a miss), and
 *     only in a run whose capacity was ever small enough to evict;
 *   - a clock that went backwards: a value may be missing only if the
 *     listener reported it EXPIRED at a deadline the clock had reached;
 *   - the listener is asynchronous: its reports are checked at sync points,
 *     where every removal made before must have been reported exactly once,
 *     with a cause from the set the model allows for it (REPLACED for a
 *     live value overwritten, EXPIRED for one overwritten after its
 *     deadline, and so on), and every value due by the clock must have been
 *     reported EXPIRED by the timing wheel;
 *   - LARDER_EBUSY is accepted only from a write that may not wait (write
 *     wait 0) in a cache that can be full;
 *   - a compressing cache charges an entry its stored size, which the model
 *     does not compute: a compressible value whose raw entry is over the
 *     entry limit may be stored (it compressed enough) or refused with
 *     LARDER_EVALSIZE (it did not), and nothing else.
 * Anything else that differs is a failure: the sequence is shrunk to a
 * minimal one that still fails and printed as a C program (model_repro.c).
 *
 * Files: model_gen.c draws configurations and operations; model_run.c
 * runs a sequence against the engine and the model; model_repro.c shrinks
 * and prints; model_main.c is the command line.
 */
#ifndef LARDER_TESTS_MODEL_H
#define LARDER_TESTS_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "harness.h"

#define MK_KEYS 24     /* the key space of one run */
#define MK_BATCH 8     /* keys per get_batch */
#define MK_KEY_MAX 300 /* longest key bytes the tester builds */
#define MK_T0 1000000u /* the injected clock's start */
#define MK_DICT_BYTES 1024/* a LARDER_DICTIONARY_GIVEN run's dictionary */

enum mop_kind {
	MOP_PUT,
	MOP_PUT_IF_ABSENT,
	MOP_REPLACE,
	MOP_REPLACE_IF_EQUALS,
	MOP_REMOVE,
	MOP_REMOVE_IF_EQUALS,
	MOP_TOUCH,
	MOP_GET,
	MOP_GET_WITH,
	MOP_GET_BATCH,
	MOP_CONTAINS,
	MOP_TTL_REMAINING,
	MOP_CLEAR,
	MOP_SET_CAPACITY,
	MOP_STATS,
	MOP_CLOCK, /* arg: the new clock time */
	MOP_SYNC,  /* quiesce, then check reports, counters and the index */
	MOP_PEEK,  /* larder_peek: a get that counts nothing and extends nothing */
	MOP_ITER,  /* a whole walk with larder_iter_open/next/close */
	MOP_SNAPSHOT, /* larder_save, then larder_load into a fresh cache, walked */
	MOP_FLUSH, /* larder_flush: then the entry count is exact */
	MOP_ACCESS, /* larder_access: a get's access and extension; no copy, nothing counted */
	MOP_KINDS
};

/* Bad input a call may carry (several at once: the precedence of larder.h
 * decides which error comes back). */
enum mop_fault {
	MF_NULL_CACHE = 1 << 0,
	MF_NULL_KEY = 1 << 1,    /* key NULL with its length > 0 */
	MF_EMPTY_KEY = 1 << 2,   /* key length 0 */
	MF_LONG_KEY = 1 << 3,    /* max_key_bytes + 1 */
	MF_NULL_VALUE = 1 << 4,  /* value NULL with length > 0 */
	MF_LONG_VALUE = 1 << 5,  /* max_value_bytes + 1 */
	MF_NULL_OUT = 1 << 6,    /* value_len, ttl_ms or fn NULL (iter: one next without fn;
				    snapshot: path NULL) */
	MF_NULL_BUF = 1 << 7,    /* get: buf NULL with buf_len > 0 */
	MF_NULL_EXPECT = 1 << 8, /* expected NULL with length > 0 */
	MF_NULL_ARRAY = 1 << 9,  /* get_batch: keys or key_lens NULL */
};

/* A batch slot that is not a key of the key space (skipped by the engine). */
enum { MB_NULL = 200, MB_EMPTY, MB_LONG };

struct mop {
	uint8_t kind;
	uint8_t key;         /* 0..MK_KEYS-1 */
	uint16_t faults;     /* enum mop_fault */
	uint32_t vlen;       /* value length (writes) */
	uint32_t vseed;      /* the value's bytes come from it (mk_value_byte) */
	uint32_t exlen;      /* *_if_equals: the expected value's length ... */
	uint32_t exseed;     /* ... and bytes, unless ex_current */
	uint8_t ex_current;  /* *_if_equals: expect the model's current value */
	uint8_t nbatch;
	uint8_t batch[MK_BATCH]; /* key indexes, or MB_* */
	uint64_t ttl;        /* writes and touch */
	uint64_t arg;        /* get: buffer length; set_capacity: bytes; clock: time */
};

struct mcfg {
	uint64_t seed;
	uint64_t capacity;
	int tiny; /* a capacity that evicts */
	enum larder_policy policy;
	enum larder_expiry expiry;
	uint64_t default_ttl; /* as given to the setter; 0 = none */
	size_t max_key, max_value;
	uint64_t write_wait_ms;
	uint64_t expected_entries;
	int backwards; /* the clock may step back */
	size_t compress_min; /* larder_config_set_compression; 0 = off */
	unsigned compress_saving;
	enum larder_dictionary dictionary; /* used when compress_min > 0 */
	unsigned shards; /* larder_config_set_shards */
	int pooled; /* the cache's capacity comes from a pool of its own (one shard) */
};

/* What went wrong, for the report and the shrinker. */
struct mfail {
	long op;        /* index of the failing operation, -1 = at the end */
	char what[512]; /* one line */
};

/* model_gen.c */
void mk_config(struct mcfg *cfg, uint64_t seed);
/* Fills ops[0..n-1]; ops drawn for cfg, with the clock moving as they go. */
void mk_ops(const struct mcfg *cfg, uint64_t seed, struct mop *ops, size_t n);
/* The bytes of key i of a run whose keys are at most max_key long (its
 * length in *len); long keys are max_key + 1 bytes. */
const unsigned char *mk_key(size_t max_key, unsigned i, int long_key, size_t *len);
/* A value's byte i. A seed with its low two bits clear repeats a 16-byte
 * pattern drawn from the seed, so that a compressing cache stores such
 * values compressed; every other seed gives noise, which stays raw. */
static inline unsigned char mk_value_byte(uint32_t seed, size_t i)
{
	uint32_t j = (seed & 3) == 0 ? (uint32_t)(i & 15) : (uint32_t)i;
	uint32_t x = seed * 2654435761u + j * 40503u;
	return (unsigned char)(x ^ (x >> 13) ^ (x >> 21));
}
const char *mk_kind_name(unsigned kind);
const char *mk_policy_name(enum larder_policy p);

/* What a run saw of each operation, for the printed reproducer. */
struct mtrace {
	int rc;             /* the result the model predicted */
	uint32_t ex_seed;   /* *_if_equals: the expected value's seed and length */
	uint32_t ex_len;
};

/* model_run.c: runs ops against a fresh cache and the model. Returns 1 when
 * all agreed, 0 with *f filled. Prints nothing. trace (optional, n long)
 * receives what the run saw of each operation. */
int mk_run(const struct mcfg *cfg, const struct mop *ops, size_t n, struct mfail *f,
	   struct mtrace *trace);

/* model_repro.c: shrinks a failing sequence (in place; returns its new
 * length; stops after budget_ms) and prints it as a C program. */
size_t mk_shrink(const struct mcfg *cfg, struct mop *ops, size_t n, struct mfail *f,
		 uint64_t budget_ms);
void mk_print_repro(FILE *out, const struct mcfg *cfg, const struct mop *ops, size_t n,
		    const struct mfail *f);

#endif /* LARDER_TESTS_MODEL_H */
