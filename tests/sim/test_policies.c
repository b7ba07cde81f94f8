/*
 * test_policies.c - the policy contract of evict/policy.h, for every policy,
 * under random inserts, hits, replacements, removals and evictions with
 * entries of different sizes (bytes), and a capacity change midway.
 *   P1  evict() only ever returns a linked entry, and unlinks it (it is never
 *       returned again unless re-inserted); remove/replace unlink.
 *   P2  evict() returns NULL only when nothing is linked; evicting until NULL
 *       drains exactly the linked set.
 *   P3  hit() on linked entries only (this driver never breaks that).
 *   mbits: a policy touches only its own bits (LARDER__MBITS_POLICY).
 *   Q1  check() (evict/list.h) finds every queue link consistent and exactly
 *       the linked entries, every 997 steps and at the end (S3-FIFO's also
 *       its skip zone, F2, which the tuned variant resizes).
 * Entries are slab slots with ids (mem/pagedir.h), as in the engine; each
 * one's value is the index of its item.
 *   P5  accessed bits (some hits mark the entry but their event is lost) never
 *       break P1-P2 and never change an entry's immutable flags; for LRU,
 *       S3-FIFO (plain and tuned) and ARC, an entry whose only hit is the bit
 *       is not the victim.
 * Seeded from argv[1] (printed).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "evict/policy.h"
#include "evict/wtinylfu.h"
#include "mem/slab.h"

#include "sim_check.h"


struct item {
	struct larder__entry *e;
	uint64_t hash;
	uint64_t size;
	int linked;
};

#define N_ITEMS 4000
static struct item items[N_ITEMS];
static struct larder__slab slab;

static struct item *of(const struct larder__entry *e)
{
	uint64_t i;
	memcpy(&i, larder__entry_value((struct larder__entry *)(uintptr_t)e), sizeof(i));
	return &items[i];
}

static void make_items(void)
{
	static struct larder__slab_cursor cursor;
	CHECK(larder__slab_init(&slab) == 0, "slab");
	for (uint64_t i = 0; i < N_ITEMS; i++) {
		/* Every item carries the TTL flag, an immutable bit (E1) that the
		 * policies must leave alone (E7); the value sits after its prefix. */
		size_t bytes = larder__entry_bytes(LARDER__ENTRY_TTL, 0, sizeof(i));
		struct larder__entry *e = larder__slab_alloc(&slab, &cursor, bytes);
		CHECK(e != NULL, "slab alloc");
		*e = (struct larder__entry){ .value_len = sizeof(i) };
		larder__entry_init_flags(e, LARDER__ENTRY_TTL);
		e->next = larder__pagedir_id(e, bytes); /* E6 */
		memcpy(larder__entry_value(e), &i, sizeof(i));
		items[i].e = e;
	}
}

static uint64_t h_hash(void *ctx, const struct larder__entry *e)
{
	(void)ctx;
	return of(e)->hash;
}

static size_t h_size(void *ctx, const struct larder__entry *e)
{
	(void)ctx;
	return (size_t)of(e)->size;
}

/* A maintainer-owned bit the policies must leave alone. */
#define FOREIGN_BIT 0x80

static void run_ops(const struct larder__policy_ops *ops, uint64_t seed, uint64_t capacity)
{
	struct larder__policy_host host = {h_hash, h_size, NULL, &slab.dir};
	struct larder__policy *p;
	uint64_t used = 0, linked = 0;
	CHECK(ops->create(&p, &host, capacity, 500) == LARDER_OK, "create");
	rng_state = seed | 1;
	for (int i = 0; i < N_ITEMS; i++) {
		items[i].linked = 0;
		items[i].hash = rnd();
	}
	for (int step = 0; step < 300000; step++) {
		struct item *it = &items[rnd() % N_ITEMS];
		unsigned op = (unsigned)(rnd() % 16);
		if (step == 150000) {
			capacity = capacity * 2 / 5;
			ops->set_capacity(p, capacity);
		}
		if (!it->linked) {
			/* a miss: insert (keys repeat, so ghosts and the sketch matter) */
			it->size = 1 + rnd() % 9;
			it->e->mbits = FOREIGN_BIT;
			larder__entry_init_flags(it->e, LARDER__ENTRY_TTL); /* ACCESSED clear */
			CHECK(it->e->prev == 0 && it->e->next == larder__entry_id(it->e),
			      "E6: %s left an unlinked entry without its id", ops->name);
			ops->insert(p, it->e, it->hash, it->size);
			it->linked = 1;
			linked++;
			used += it->size;
		} else if (op < 8) {
			larder__entry_mark_accessed(it->e);
			ops->hit(p, it->e);
		} else if (op < 11) {
			larder__entry_mark_accessed(it->e); /* its event lost, or late */
		} else if (op < 13) {
			ops->remove(p, it->e, it->size);
			it->linked = 0;
			linked--;
			used -= it->size;
		} else {
			/* replace by a fresh entry object of another size (an update) */
			struct item *nw = NULL;
			for (int tries = 0; tries < 8 && !nw; tries++) {
				struct item *c = &items[rnd() % N_ITEMS];
				if (!c->linked)
					nw = c;
			}
			if (!nw)
				continue;
			nw->hash = it->hash;
			nw->size = 1 + rnd() % 9;
			nw->e->mbits = FOREIGN_BIT;
			larder__entry_init_flags(nw->e, LARDER__ENTRY_TTL);
			ops->replace(p, it->e, nw->e, it->size, nw->size);
			it->linked = 0;
			nw->linked = 1;
			used = used - it->size + nw->size;
			it->hash = rnd(); /* the old slot becomes an unrelated key */
		}
		while (used > capacity) {
			struct larder__entry *v = ops->evict(p);
			CHECK(v != NULL, "P2: %s evict() NULL with %llu linked", ops->name,
			      (unsigned long long)linked);
			struct item *vi = of(v);
			CHECK(vi >= items && vi < items + N_ITEMS && vi->linked,
			      "P1: %s evicted an entry that is not linked", ops->name);
			CHECK(v->mbits & FOREIGN_BIT, "%s cleared a maintainer bit", ops->name);
			CHECK(larder__entry_flags(v) == LARDER__ENTRY_TTL,
			      "E7: %s changed an immutable flag", ops->name);
			vi->linked = 0;
			linked--;
			used -= vi->size;
		}
		if (step % 997 == 0)
			CHECK(ops->check(p) == (int64_t)linked, "Q1: %s queues broken at step %d",
			      ops->name, step);
	}
	CHECK(ops->check(p) == (int64_t)linked, "Q1: %s queues broken", ops->name);
	/* Drain: exactly the linked set comes back, then NULL. */
	while (linked) {
		struct larder__entry *v = ops->evict(p);
		CHECK(v != NULL, "P2: %s NULL while draining, %llu linked", ops->name,
		      (unsigned long long)linked);
		CHECK(of(v)->linked, "P1: %s returned an unlinked entry while draining", ops->name);
		of(v)->linked = 0;
		linked--;
	}
	CHECK(ops->evict(p) == NULL, "P2: %s evict() on empty returned an entry", ops->name);
	ops->destroy(p);
	printf("PASS %s\n", ops->name);
}

/*
 * P5 for the policies that use the bit: ten one-byte entries fill the cache,
 * the oldest is marked accessed but its hit event never comes, an eleventh
 * arrives: the victim must be another entry (and, unmarked, the oldest would
 * be the victim: the test can tell).
 */
static void accessed_saves(const struct larder__policy_ops *ops, int mark)
{
	struct item *it = items;
	struct larder__policy_host host = {h_hash, h_size, NULL, &slab.dir};
	struct larder__policy *p;
	CHECK(ops->create(&p, &host, 10, 10) == LARDER_OK, "create");
	for (int i = 0; i < 11; i++) {
		it[i].e->mbits = 0;
		it[i].e->prev = 0; /* E6: the last round's policy was destroyed, not drained */
		it[i].e->next = larder__entry_id(it[i].e);
		larder__entry_init_flags(it[i].e, LARDER__ENTRY_TTL);
		it[i].hash = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
		it[i].size = 1;
	}
	for (int i = 0; i < 10; i++)
		ops->insert(p, it[i].e, it[i].hash, 1);
	if (mark)
		larder__entry_mark_accessed(it[0].e);
	ops->insert(p, it[10].e, it[10].hash, 1);
	struct larder__entry *v = ops->evict(p);
	if (mark)
		CHECK(v && v != it[0].e && larder__entry_flags(it[0].e) == LARDER__ENTRY_TTL,
		      "P5: %s evicted the entry whose hit only its accessed bit told", ops->name);
	else
		CHECK(v == it[0].e, "%s: without the bit the oldest is the victim", ops->name);
	ops->destroy(p);
}

int main(int argc, char **argv)
{
	uint64_t seed = argc > 1 ? strtoull(argv[1], NULL, 10) : 42;
	printf("test_policies seed %llu\n", (unsigned long long)seed);
	make_items();
	const enum larder_policy all[] = {LARDER_POLICY_FIFO, LARDER_POLICY_LRU,
					  LARDER_POLICY_S3FIFO, LARDER_POLICY_WTINYLFU,
					  LARDER_POLICY_ARC, LARDER_POLICY_S3FIFO_TUNED,
					  LARDER_POLICY_DEFAULT};
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (!larder__policy_ops_for(all[i])) {
			fprintf(stderr, "FAIL: no ops for policy %d\n", (int)all[i]);
			failures++;
		} else {
			run_ops(larder__policy_ops_for(all[i]), seed + i, 3000);
		}
	run_ops(&larder__policy_wtinylfu_tuned, seed + 99, 3000);
	/* So small that the tuned S3-FIFO's 1% share leaves no skip zone (F2). */
	run_ops(larder__policy_ops_for(LARDER_POLICY_S3FIFO_TUNED), seed + 98, 150);
	const enum larder_policy with_bit[] = {LARDER_POLICY_LRU, LARDER_POLICY_S3FIFO,
					       LARDER_POLICY_ARC, LARDER_POLICY_S3FIFO_TUNED};
	for (size_t i = 0; i < sizeof with_bit / sizeof with_bit[0]; i++) {
		accessed_saves(larder__policy_ops_for(with_bit[i]), 0);
		accessed_saves(larder__policy_ops_for(with_bit[i]), 1);
	}
	larder__slab_destroy(&slab);
	return sim_check_result();
}
