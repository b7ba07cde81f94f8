/*
 * test_policies.c - the policy contract of evict/policy.h, for every policy,
 * under random inserts, hits, replacements, removals and evictions with
 * entries of different sizes (bytes), and a capacity change midway.
 *   POLICY-P1  evict() only ever returns a linked entry, and unlinks it (it is never
 *       returned again unless re-inserted); remove/replace unlink.
 *   POLICY-P2  evict() returns NULL only when nothing is linked; evicting until NULL
 *       drains exactly the linked set.
 *   POLICY-P3  hit() on linked entries only (this driver never breaks that).
 *   mbits: a policy touches only its own bits (LARDER__MBITS_POLICY).
 *   QUEUE-Q1  check() (evict/list.h) finds every queue link consistent and exactly
 *       the linked entries, every 997 steps and at the end (S3-FIFO's also
 *       its skip zone, S3FIFO-F2, which the tuned variant resizes).
 * Entries are slab slots with ids (mem/pagedir.h), as in the engine; each
 * one's value is the index of its item.
 *   POLICY-P5  accessed bits (some hits mark the entry but their event is lost) never
 *       break POLICY-P1..P2 and never change an entry's immutable flags; for LRU,
 *       S3-FIFO (plain and tuned) and ARC, an entry whose only hit is the bit
 *       is not the victim; LRU does not apply a hit twice (the bit at
 *       evict(), then its late sample); W-TinyLFU counts a window leaver's bit
 *       in its sketch, so it wins an admission it would otherwise lose.
 *   ARC-A5 (evict/arc.c) an entry leaves without a ghost only for the latest
 *       insert's case IV.A, not for an older request at a later eviction.
 *   WTLFU-W2 (evict/wtinylfu.c) an entry demoted from protected while a candidate
 *       waits for its judgement is not judged as a candidate.
 *   POLICY-P7  evict(p, &hash) stores the victim's hash (every other eviction
 *       asks), whichever queue it left.
 *   POLICY-P6  insert_batch() of a run of new entries equals insert() of each in
 *       turn: twin policies, one fed runs one by one and one as batches, evict
 *       the same entries, keep the same bits and drain in the same order.
 *   LARDER_SIM_PASSES (sim/sim.c): a missed key hits on the next request
 *       though its insert waits for the drain; with a drain before every
 *       request the pass model gives the strict model's misses exactly.
 * Seeded from argv[1] (printed).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <string.h>

#include "evict/list.h"
#include "evict/policy.h"
#include "evict/wtinylfu.h"
#include "maint/handle.h"
#include "mem/slab.h"

#include "sim_check.h"


struct item {
	struct larder__entry *e;
	uint64_t hash;
	uint64_t size;
	int linked;
};

#define N_ITEMS 4000
/* items[N_ITEMS + i] is items[i]'s twin, for batch_equals_loop. */
static struct item items[2 * N_ITEMS];
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
	for (uint64_t i = 0; i < 2 * N_ITEMS; i++) {
		/* Every item carries the TTL flag, an immutable bit (ENTRY-E1) that the
		 * policies must leave alone (ENTRY-E7); the value sits after its prefix. */
		size_t bytes = larder__entry_bytes(LARDER__ENTRY_TTL, 0, sizeof(i));
		struct larder__entry *e = larder__slab_alloc(&slab, &cursor, bytes);
		CHECK(e != NULL, "slab alloc");
		*e = (struct larder__entry){ .value_len = sizeof(i) };
		larder__entry_init_flags(e, LARDER__ENTRY_TTL);
		e->next = larder__pagedir_id(e, bytes); /* ENTRY-E6 */
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
			      "ENTRY-E6: %s left an unlinked entry without its id", ops->name);
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
			/* POLICY-P1: replace() leaves the old entry's links to its
			 * caller, which here links it again later (ENTRY-E6). */
			it->e->prev = 0;
			it->e->next = larder__entry_id(it->e);
			it->linked = 0;
			nw->linked = 1;
			used = used - it->size + nw->size;
			it->hash = rnd(); /* the old slot becomes an unrelated key */
		}
		while (used > capacity) {
			/* POLICY-P7: every other victim's hash asked for. */
			uint64_t vhash = 0, *want = step % 2 ? &vhash : NULL;
			struct larder__entry *v = ops->evict(p, want);
			CHECK(v != NULL, "POLICY-P2: %s evict() NULL with %llu linked", ops->name,
			      (unsigned long long)linked);
			struct item *vi = of(v);
			CHECK(vi >= items && vi < items + N_ITEMS && vi->linked,
			      "POLICY-P1: %s evicted an entry that is not linked", ops->name);
			CHECK(!want || vhash == vi->hash,
			      "POLICY-P7: %s gave the victim's hash as %llx, not %llx", ops->name,
			      (unsigned long long)vhash, (unsigned long long)vi->hash);
			CHECK(v->mbits & FOREIGN_BIT, "%s cleared a maintainer bit", ops->name);
			CHECK(larder__entry_flags(v) == LARDER__ENTRY_TTL,
			      "ENTRY-E7: %s changed an immutable flag", ops->name);
			vi->linked = 0;
			linked--;
			used -= vi->size;
		}
		if (step % 997 == 0)
			CHECK(ops->check(p) == (int64_t)linked,
			      "QUEUE-Q1: %s queues broken at step %d", ops->name, step);
	}
	CHECK(ops->check(p) == (int64_t)linked, "QUEUE-Q1: %s queues broken", ops->name);
	/* Drain: exactly the linked set comes back, then NULL. */
	while (linked) {
		struct larder__entry *v = ops->evict(p, NULL);
		CHECK(v != NULL, "POLICY-P2: %s NULL while draining, %llu linked", ops->name,
		      (unsigned long long)linked);
		CHECK(of(v)->linked, "POLICY-P1: %s returned an unlinked entry while draining",
		      ops->name);
		of(v)->linked = 0;
		linked--;
	}
	CHECK(ops->evict(p, NULL) == NULL, "POLICY-P2: %s evict() on empty returned an entry", ops->name);
	ops->destroy(p);
	printf("PASS %s\n", ops->name);
}

/* An item and its twin made new (ENTRY-E6), of one size, with the foreign bit. */
static void twin_fresh(struct item *it, uint64_t size)
{
	for (struct item *x = it; x <= it + N_ITEMS; x += N_ITEMS) {
		x->e->mbits = FOREIGN_BIT;
		x->e->prev = 0;
		x->e->next = larder__entry_id(x->e);
		larder__entry_init_flags(x->e, LARDER__ENTRY_TTL);
		x->size = size;
		x->linked = 1;
	}
	it[N_ITEMS].hash = it->hash;
}

/* An item's entry and its twin's have the same bits (the policy's, the
 * maintainer's, the accessed mark). */
static int twins_agree(const struct item *a)
{
	return a->e->mbits == a[N_ITEMS].e->mbits &&
	       larder__entry_flags_raw(a->e) == larder__entry_flags_raw(a[N_ITEMS].e);
}

/*
 * POLICY-P6: insert_batch() of a run of new entries leaves the policy as
 * insert() of each in turn. Two policies of one kind get the same random
 * operations, one on items[0..N_ITEMS), the other on their twins, except
 * that runs of 1-16 inserts (a bulk writer's block) go to the first one
 * entry by entry and to the second as one insert_batch(); hits, lost hits
 * (accessed bits), removals and evictions between them. Every victim must
 * be the twin of the first one's, every entry's bits its twin's, and the
 * drain at the end must return the twins in the same order (the queues'
 * order, the skip zone, the ghosts, the tuner's sample and choices).
 */
static void batch_equals_loop(const struct larder__policy_ops *ops, uint64_t seed,
			      uint64_t capacity)
{
	struct larder__policy_host host = {h_hash, h_size, NULL, &slab.dir};
	struct larder__policy *one, *batch;
	uint64_t used = 0, linked = 0, victims = 0;
	CHECK(ops->create(&one, &host, capacity, 500) == LARDER_OK, "create");
	CHECK(ops->create(&batch, &host, capacity, 500) == LARDER_OK, "create");
	rng_state = seed | 1;
	for (int i = 0; i < N_ITEMS; i++) {
		items[i].linked = 0;
		items[i].hash = rnd(); /* kept: a key evicted and inserted again meets its ghost */
	}
	for (int step = 0; step < 100000; step++) {
		unsigned op = (unsigned)(rnd() % 16);
		if (op < 5) {
			struct larder__policy_new run[LARDER__BATCH_EVENTS];
			size_t n = 0, want = 1 + rnd() % LARDER__BATCH_EVENTS;
			for (size_t tries = 0; n < want && tries < 64; tries++) {
				struct item *it = &items[rnd() % N_ITEMS];
				if (it->linked)
					continue;
				twin_fresh(it, 1 + rnd() % 9);
				ops->insert(one, it->e, it->hash, it->size);
				run[n++] = (struct larder__policy_new){ it[N_ITEMS].e, it->hash,
									it->size };
				linked++;
				used += it->size;
			}
			larder__policy_insert_batch(ops, batch, run, n);
		} else {
			struct item *it = &items[rnd() % N_ITEMS];
			if (!it->linked)
				continue;
			if (op < 10) {
				larder__entry_mark_accessed(it->e);
				larder__entry_mark_accessed(it[N_ITEMS].e);
				ops->hit(one, it->e);
				ops->hit(batch, it[N_ITEMS].e);
			} else if (op < 13) {
				larder__entry_mark_accessed(it->e);
				larder__entry_mark_accessed(it[N_ITEMS].e);
			} else {
				ops->remove(one, it->e, it->size);
				ops->remove(batch, it[N_ITEMS].e, it->size);
				it->linked = it[N_ITEMS].linked = 0;
				linked--;
				used -= it->size;
			}
		}
		while (used > capacity) {
			struct larder__entry *v = ops->evict(one, NULL), *w = ops->evict(batch, NULL);
			CHECK(v != NULL && w != NULL, "POLICY-P2: %s evict() NULL", ops->name);
			struct item *vi = of(v);
			CHECK(of(w) == vi + N_ITEMS, "POLICY-P6: %s evicted item %d, one by one %d",
			      ops->name, (int)(of(w) - items - N_ITEMS), (int)(vi - items));
			vi->linked = vi[N_ITEMS].linked = 0;
			linked--;
			used -= vi->size;
			victims++;
		}
		if (step % 97 == 0) {
			CHECK(ops->check(one) == (int64_t)linked && ops->check(batch) == (int64_t)linked,
			      "QUEUE-Q1: %s queues broken at step %d", ops->name, step);
			for (int i = 0; i < N_ITEMS; i++)
				CHECK(!items[i].linked || twins_agree(&items[i]),
				      "POLICY-P6: %s: item %d's bits differ from its twin's", ops->name,
				      i);
		}
	}
	for (struct larder__entry *v; (v = ops->evict(one, NULL)) != NULL;) {
		struct larder__entry *w = ops->evict(batch, NULL);
		CHECK(w != NULL, "POLICY-P6: %s drains fewer in a batch", ops->name);
		CHECK(of(w) == of(v) + N_ITEMS, "POLICY-P6: %s drains in another order", ops->name);
		of(v)->linked = 0;
		linked--;
	}
	CHECK(ops->evict(batch, NULL) == NULL && linked == 0, "POLICY-P6: %s drains another set",
	      ops->name);
	CHECK(victims > 1000, "%s: only %llu evictions", ops->name, (unsigned long long)victims);
	ops->destroy(one);
	ops->destroy(batch);
	printf("PASS %s batch\n", ops->name);
}

/* Fresh one-byte entries it[0..n-1] with spread hashes, for a new policy. */
static void fresh_items(struct item *it, int n)
{
	for (int i = 0; i < n; i++) {
		it[i].e->mbits = 0;
		it[i].e->prev =
			0; /* ENTRY-E6: the last round's policy was destroyed, not drained */
		it[i].e->next = larder__entry_id(it[i].e);
		larder__entry_init_flags(it[i].e, LARDER__ENTRY_TTL);
		it[i].hash = (uint64_t)(i + 1) * 0x9E3779B97F4A7C15ull;
		it[i].size = 1;
	}
}

/*
 * POLICY-P5 for the policies that use the bit: ten one-byte entries fill the cache,
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
	fresh_items(it, 11);
	for (int i = 0; i < 10; i++)
		ops->insert(p, it[i].e, it[i].hash, 1);
	if (mark)
		larder__entry_mark_accessed(it[0].e);
	ops->insert(p, it[10].e, it[10].hash, 1);
	struct larder__entry *v = ops->evict(p, NULL);
	if (mark)
		CHECK(v && v != it[0].e && larder__entry_flags(it[0].e) == LARDER__ENTRY_TTL,
		      "POLICY-P5: %s evicted the entry whose hit only its accessed bit told",
		      ops->name);
	else
		CHECK(v == it[0].e, "%s: without the bit the oldest is the victim", ops->name);
	ops->destroy(p);
}

/*
 * LRU: it[0]'s hit is told by its bit only when evict() looks (it moves to
 * the newest end), then it[2] is hit on time, then it[0]'s late sample
 * comes. Applied again it would move it[0] past it[2]; skipped, it[0] stays
 * the older of the two and leaves first.
 */
static void lru_late_sample_once(void)
{
	const struct larder__policy_ops *ops = larder__policy_ops_for(LARDER_POLICY_LRU);
	struct item *it = items;
	struct larder__policy_host host = {h_hash, h_size, NULL, &slab.dir};
	struct larder__policy *p;
	CHECK(ops->create(&p, &host, 10, 10) == LARDER_OK, "create");
	fresh_items(it, 11);
	for (int i = 0; i < 10; i++)
		ops->insert(p, it[i].e, it[i].hash, 1);
	larder__entry_mark_accessed(it[0].e);
	ops->insert(p, it[10].e, it[10].hash, 1);
	CHECK(ops->evict(p, NULL) == it[1].e, "lru: the bit did not save it[0]");
	larder__entry_mark_accessed(it[2].e);
	ops->hit(p, it[2].e);
	ops->hit(p, it[0].e); /* the late sample of the hit the bit told */
	int seen0 = 0;
	struct larder__entry *v;
	while ((v = ops->evict(p, NULL)) != NULL && v != it[2].e)
		seen0 |= v == it[0].e;
	CHECK(seen0, "lru: a late sample moved the entry its bit had already moved");
	ops->destroy(p);
}

/*
 * ARC-A5: the drop of case IV.A (the recency list holds the capacity and
 * its ghosts are empty: its LRU leaves with no ghost) is for the insert
 * that asked for it, judged when REPLACE runs. Ten one-byte entries fill
 * the recency list; an eleventh asks for the drop; two deletes then make
 * room, so no eviction follows; an update of it[3] to 3 bytes later
 * overflows the capacity. Its eviction is a plain REPLACE: it[0], the
 * recency list's LRU, leaves with its ghost, so when it comes back it is a
 * ghost hit and goes to the frequency list (arc.c's ARC_T2, policy bit 1).
 * A stale drop would leave no ghost, and it[0] would come back as new.
 */
static void arc_stale_drop(void)
{
	const struct larder__policy_ops *ops = larder__policy_ops_for(LARDER_POLICY_ARC);
	struct item *it = items;
	struct larder__policy_host host = {h_hash, h_size, NULL, &slab.dir};
	struct larder__policy *p;
	CHECK(ops->create(&p, &host, 10, 10) == LARDER_OK, "create");
	fresh_items(it, 12);
	for (int i = 0; i < 11; i++)
		ops->insert(p, it[i].e, it[i].hash, 1); /* the 11th: case IV.A, the list full */
	ops->remove(p, it[1].e, 1);
	ops->remove(p, it[2].e, 1); /* 9 bytes: no eviction */
	it[11].hash = it[3].hash;
	it[11].size = 3;
	ops->replace(p, it[3].e, it[11].e, 1, 3); /* 11 bytes */
	CHECK(ops->evict(p, NULL) == it[0].e, "arc: the victim is not the oldest entry");
	it[0].e->mbits = 0;
	ops->insert(p, it[0].e, it[0].hash, 1);
	CHECK(larder__pbits(it[0].e) & 1,
	      "ARC-A5: a stale case IV.A drop evicted it[0] without a ghost");
	ops->destroy(p);
}

/*
 * W-TinyLFU: 100 one-byte entries fill the cache (each seen once); a 101st
 * pushes it[99] out of the one-entry window as a candidate against it[0],
 * probation's oldest: a tie, so the candidate leaves. If it[99] was hit but
 * its sample has not come, its bit must reach the sketch as it leaves the
 * window: then it wins, and it[0] leaves.
 */
static void wtinylfu_bit_counts(int mark)
{
	const struct larder__policy_ops *ops = larder__policy_ops_for(LARDER_POLICY_WTINYLFU);
	struct item *it = items;
	struct larder__policy_host host = {h_hash, h_size, NULL, &slab.dir};
	struct larder__policy *p;
	CHECK(ops->create(&p, &host, 100, 100) == LARDER_OK, "create");
	fresh_items(it, 101);
	for (int i = 0; i < 100; i++)
		ops->insert(p, it[i].e, it[i].hash, 1);
	if (mark)
		larder__entry_mark_accessed(it[99].e);
	ops->insert(p, it[100].e, it[100].hash, 1);
	struct larder__entry *v = ops->evict(p, NULL);
	if (mark)
		CHECK(v == it[0].e && larder__entry_flags_raw(it[99].e) == LARDER__ENTRY_TTL,
		      "POLICY-P5: wtinylfu did not count a window leaver's bit (or left it set)");
	else
		CHECK(v == it[99].e, "wtinylfu: without the bit the candidate loses the tie");
	ops->destroy(p);
}

/*
 * W-TinyLFU, capacity 100 (window 1, protected 79): it[0..99] fill it, hits
 * on it[0..79] promote them (it[0] is demoted again). it[100] pushes it[99]
 * out of the window as a candidate; before the eviction that judges it (the
 * engine's pass applies hit samples after its inserts) a hit on it[80]
 * demotes it[1] (seen twice). Judged as a candidate, it[1] would beat the
 * victim it[81] (seen once) at the next eviction; it is no candidate, so
 * that eviction judges it[101]'s leaver it[100] against it[81]: a tie, and
 * the candidate leaves.
 */
static void wtinylfu_demoted_not_candidate(void)
{
	const struct larder__policy_ops *ops = larder__policy_ops_for(LARDER_POLICY_WTINYLFU);
	struct item *it = items;
	struct larder__policy_host host = {h_hash, h_size, NULL, &slab.dir};
	struct larder__policy *p;
	CHECK(ops->create(&p, &host, 100, 100) == LARDER_OK, "create");
	fresh_items(it, 102);
	for (int i = 0; i < 100; i++)
		ops->insert(p, it[i].e, it[i].hash, 1);
	for (int i = 0; i < 80; i++) {
		larder__entry_mark_accessed(it[i].e);
		ops->hit(p, it[i].e);
	}
	ops->insert(p, it[100].e, it[100].hash, 1);
	larder__entry_mark_accessed(it[80].e);
	ops->hit(p, it[80].e);
	CHECK(ops->evict(p, NULL) == it[99].e, "wtinylfu: the first candidate loses its tie");
	ops->insert(p, it[101].e, it[101].hash, 1);
	struct larder__entry *v = ops->evict(p, NULL);
	CHECK(v == it[100].e,
	      "WTLFU-W2: wtinylfu judged a demoted entry as a candidate (evicted item %d)",
	      v ? (int)(of(v) - items) : -1);
	ops->destroy(p);
}

/* The pass model against the strict one, through the public simulator. */
static void sim_passes(enum larder_policy policy, uint64_t seed)
{
	larder_sim *strict, *passes, *late;
	CHECK(larder_sim_create(&strict, policy, 300, 0) == LARDER_OK, "sim");
	CHECK(larder_sim_create(&passes, policy, 300, LARDER_SIM_PASSES) == LARDER_OK, "sim");
	CHECK(larder_sim_set_hit_ring(passes, 1, 1) == LARDER_OK, "ring");
	CHECK(larder_sim_create(&late, policy, 300, LARDER_SIM_PASSES | LARDER_SIM_HIT_RING) ==
		      LARDER_OK, "sim");
	CHECK(larder_sim_set_hit_ring(late, 1024, 1024) == LARDER_OK, "ring");
	/* The ring model's defaults are the engine's ring, 1024 slots, drained
	 * every 1024 requests: the same misses as those set explicitly. */
	larder_sim *ring_default, *ring_set;
	CHECK(larder_sim_create(&ring_default, policy, 300, LARDER_SIM_HIT_RING) == LARDER_OK,
	      "sim");
	CHECK(larder_sim_create(&ring_set, policy, 300, LARDER_SIM_HIT_RING) == LARDER_OK, "sim");
	CHECK(larder_sim_set_hit_ring(ring_set, LARDER__HIT_RING, 1024) == LARDER_OK, "ring");
	uint64_t n_default = 0, n_set = 0;
	uint64_t rng = seed | 1, n_strict = 0, n_passes = 0;
	for (int i = 0; i < 200000; i++) {
		rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
		/* skewed: a hot set of 200 keys half the time, else 3000 keys */
		uint64_t key = (rng & 1) ? (rng >> 8) % 200 : (rng >> 8) % 3000;
		n_strict += larder_sim_access(strict, key, 1) == 0;
		n_passes += larder_sim_access(passes, key, 1) == 0;
		CHECK(larder_sim_access(late, key, 1) >= 0, "access");
		n_default += larder_sim_access(ring_default, key, 1) == 0;
		n_set += larder_sim_access(ring_set, key, 1) == 0;
	}
	CHECK(n_default == n_set, "%s: default ring %llu misses, 1024 slots set %llu",
	      larder_sim_policy_name(strict), (unsigned long long)n_default,
	      (unsigned long long)n_set);
	larder_sim_destroy(ring_default);
	larder_sim_destroy(ring_set);
	CHECK(n_strict == n_passes, "%s: a pass before every request gave %llu misses, strict %llu",
	      larder_sim_policy_name(strict), (unsigned long long)n_passes,
	      (unsigned long long)n_strict);
	uint64_t fresh = 1ull << 40; /* a key never seen: a miss, then a hit though not yet linked */
	CHECK(larder_sim_access(late, fresh, 1) == 0 && larder_sim_access(late, fresh, 1) == 1,
	      "%s: a waiting insert is not visible", larder_sim_policy_name(late));
	larder_sim_destroy(strict);
	larder_sim_destroy(passes);
	larder_sim_destroy(late);
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
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		if (larder__policy_ops_for(all[i])) {
			batch_equals_loop(larder__policy_ops_for(all[i]), seed + 50 + i, 3000);
			/* The tuned S3-FIFO with no skip zone (its 1% share), as below. */
			batch_equals_loop(larder__policy_ops_for(all[i]), seed + 60 + i, 150);
		}
	/* So small that the tuned S3-FIFO's 1% share leaves no skip zone (S3FIFO-F2). */
	run_ops(larder__policy_ops_for(LARDER_POLICY_S3FIFO_TUNED), seed + 98, 150);
	const enum larder_policy with_bit[] = {LARDER_POLICY_LRU, LARDER_POLICY_S3FIFO,
					       LARDER_POLICY_ARC, LARDER_POLICY_S3FIFO_TUNED};
	for (size_t i = 0; i < sizeof with_bit / sizeof with_bit[0]; i++) {
		accessed_saves(larder__policy_ops_for(with_bit[i]), 0);
		accessed_saves(larder__policy_ops_for(with_bit[i]), 1);
	}
	lru_late_sample_once();
	arc_stale_drop();
	wtinylfu_bit_counts(0);
	wtinylfu_bit_counts(1);
	wtinylfu_demoted_not_candidate();
	for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
		sim_passes(all[i], seed + i);
	larder__slab_destroy(&slab);
	return sim_check_result();
}
