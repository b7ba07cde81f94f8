/*
 * dispose_queue.h - a bounded buffer of removal records, filled by a cache's
 * maintainer thread (through the removal listener) and emptied by one
 * JavaScript thread. Pure C: no Node-API here, so the stress test in
 * test/registry_stress.c runs it under ThreadSanitizer and ASan.
 *
 * A record is laid out as: u32 key_len, u32 value_len, u8 cause, key bytes,
 * value bytes (no padding; read with memcpy). The bytes are copies: the
 * listener's key and value are valid only during its call.
 */
#ifndef LARDER_NODE_DISPOSE_QUEUE_H
#define LARDER_NODE_DISPOSE_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define LNODE_DQ_RECORD_HEADER 9u

struct lnode_dq {
	pthread_mutex_t lock;
	/* All fields below are written under lock, by both sides. */
	uint8_t *bytes;   /* records appended by the producer */
	size_t used;      /* bytes of records in bytes[] */
	size_t cap;       /* allocated bytes of bytes[] */
	size_t records;   /* records in bytes[] */
	size_t bound;     /* most bytes held at once; past it records are dropped */
	uint64_t dropped; /* records refused since creation (bound or out of memory) */
};

/* The result of lnode_dq_push(). */
enum lnode_dq_push_result {
	LNODE_DQ_DROPPED = -1, /* over the bound or out of memory: counted in dropped */
	LNODE_DQ_QUEUED = 0,   /* appended behind records the consumer has not taken */
	LNODE_DQ_FIRST = 1,    /* appended to an empty queue: the consumer needs a wake-up */
};

/* Initialises an empty queue holding at most bound bytes. 0 or an errno value. */
int lnode_dq_init(struct lnode_dq *q, size_t bound);
/* Frees the records still queued. No thread may use q during or after. */
void lnode_dq_destroy(struct lnode_dq *q);

/*
 * Appends one record (copying key and value). Called by the producer thread;
 * takes the lock for a copy and, when the buffer must grow, one realloc, so
 * it never waits for the consumer beyond its O(1) take.
 */
enum lnode_dq_push_result lnode_dq_push(struct lnode_dq *q, const void *key, size_t key_len,
					const void *value, size_t value_len, uint8_t cause);

/*
 * Takes every queued record: swaps the queue's buffer with *buf (the
 * consumer's previous buffer, reused; *buf and *cap may be NULL/0), so the
 * producer never waits for the consumer to read. On return *buf holds *used
 * bytes making up *records records. Returns the drop count so far.
 */
uint64_t lnode_dq_take(struct lnode_dq *q, uint8_t **buf, size_t *cap, size_t *used,
		       size_t *records);

/* The drop count so far. */
uint64_t lnode_dq_dropped(struct lnode_dq *q);

#endif /* LARDER_NODE_DISPOSE_QUEUE_H */
