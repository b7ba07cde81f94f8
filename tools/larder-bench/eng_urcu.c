/*
 * eng_urcu.c - baseline: liburcu's RCU lock-free hash table (cds_lfht), the
 * urcu-memb flavour (membarrier-based, no signals, no quiescent-state calls
 * needed from readers).
 *
 * Layout: one malloc'd node per key: { lfht node, rcu head, key, value }.
 * get:  rcu_read_lock; cds_lfht_lookup; copy the value out; rcu_read_unlock.
 * put:  a new node; cds_lfht_add_replace under rcu_read_lock; the replaced
 *       node goes to call_rcu(), whose worker thread frees it after a grace
 *       period (liburcu batches callbacks per grace period).
 * The table is created with the working set's size (a power of two) and
 * automatic resize on, so no resize happens while the matrix runs.
 *
 * _LGPL_SOURCE inlines the read-side primitives, as a performance-minded user
 * would; this gives cds_lfht its best showing.
 *
 * Every pool thread (and the main thread) must be registered with
 * urcu-memb: lb_urcu_thread_online()/_offline() are called by the pool.
 */
#define _LGPL_SOURCE
#include <stdlib.h>

#include <urcu/urcu-memb.h>
#include <urcu/rculfhash.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include "bench.h"
#include "pool.h"

struct unode {
	struct cds_lfht_node node;
	struct rcu_head rcu;
	uint8_t data[]; /* key, then value */
};

struct urcu_eng {
	struct cds_lfht *ht;
	size_t key_size;
	size_t value_size;
	uint64_t seed;
};

/* container_of through void *, so no cast raises the alignment (-Wcast-align). */
#define UNODE_OF(ptr, member) \
	((struct unode *)(void *)((char *)(ptr) - offsetof(struct unode, member)))

struct ukey {
	const uint8_t *key;
	size_t len;
};

void lb_urcu_thread_online(void)
{
	urcu_memb_register_thread();
}

void lb_urcu_thread_offline(void)
{
	urcu_memb_unregister_thread();
}

static int umatch(struct cds_lfht_node *node, const void *arg)
{
	const struct ukey *k = arg;
	const struct unode *n = UNODE_OF(node, node);
	return memcmp(n->data, k->key, k->len) == 0;
}

static void ufree(struct rcu_head *head)
{
	free(UNODE_OF(head, rcu));
}

static int urcu_open(void **out, const struct lb_config *cfg)
{
	struct urcu_eng *u = calloc(1, sizeof(*u));
	unsigned long n = 1;

	if (!u)
		return -1;
	while (n < cfg->entries)
		n <<= 1;
	u->key_size = cfg->key_size;
	u->value_size = cfg->value_size;
	u->seed = cfg->seed;
	u->ht = cds_lfht_new_flavor(n, 1, 0, CDS_LFHT_AUTO_RESIZE | CDS_LFHT_ACCOUNTING,
				    &urcu_memb_flavor, NULL);
	if (!u->ht) {
		free(u);
		return -1;
	}
	*out = u;
	return 0;
}

static void urcu_close(void *eng)
{
	struct urcu_eng *u = eng;
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;

	urcu_memb_barrier(); /* run every pending free */
	urcu_memb_read_lock();
	cds_lfht_for_each(u->ht, &iter, node) {
		if (cds_lfht_del(u->ht, node) == 0)
			urcu_memb_call_rcu(&UNODE_OF(node, node)->rcu, ufree);
	}
	urcu_memb_read_unlock();
	urcu_memb_barrier();
	cds_lfht_destroy(u->ht, NULL);
	free(u);
}

static inline int urcu_get(void *eng, const uint8_t *key, size_t key_len, uint8_t *buf,
			   size_t buf_len)
{
	struct urcu_eng *u = eng;
	struct ukey k = { key, key_len };
	struct cds_lfht_iter iter;
	struct cds_lfht_node *node;
	int hit = 0;
	unsigned long h = XXH3_64bits_withSeed(key, key_len, u->seed);

	urcu_memb_read_lock();
	cds_lfht_lookup(u->ht, h, umatch, &k, &iter);
	node = cds_lfht_iter_get_node(&iter);
	if (node && buf_len >= u->value_size) {
		memcpy(buf, UNODE_OF(node, node)->data + key_len,
		       u->value_size);
		hit = 1;
	}
	urcu_memb_read_unlock();
	return hit;
}

static inline int urcu_put(void *eng, const uint8_t *key, size_t key_len, const uint8_t *val,
			   size_t val_len, uint64_t ttl_ms)
{
	struct urcu_eng *u = eng;
	struct ukey k = { key, key_len };
	struct cds_lfht_node *old;
	struct unode *n = malloc(sizeof(*n) + key_len + val_len);
	unsigned long h = XXH3_64bits_withSeed(key, key_len, u->seed);

	(void)ttl_ms; /* cds_lfht has no TTL */
	if (!n)
		return -1;
	cds_lfht_node_init(&n->node);
	memcpy(n->data, key, key_len);
	memcpy(n->data + key_len, val, val_len);
	urcu_memb_read_lock();
	old = cds_lfht_add_replace(u->ht, h, umatch, &k, &n->node);
	urcu_memb_read_unlock();
	if (old)
		urcu_memb_call_rcu(&UNODE_OF(old, node)->rcu, ufree);
	return 0;
}

static uint64_t urcu_run(void *eng, struct lb_tctx *t, const struct lb_job *job)
{
	return lb_run_loop(eng, t, job, urcu_get, urcu_put);
}

const struct lb_engine lb_engine_urcu = {
	.name = "urcu",
	.about = "liburcu cds_lfht (urcu-memb), copy-out under rcu_read_lock, add_replace + call_rcu",
	.max_threads = { 0, 0, 0 },
	.open = urcu_open,
	.put = urcu_put,
	.run = urcu_run,
	.close = urcu_close,
};
