/*
 * tests/stress/stress_index.c - the index resized both ways while writers,
 * removers and readers hammer it (run it under ThreadSanitizer and
 * AddressSanitizer).
 *
 * Usage: larder_stress_index [--writers N] [--readers N] [--keys N]
 *                            [--duration-ms N] [--seed N]
 * Defaults: 2 writers, 2 readers, 4096 keys, rounds for 3 s (and at least
 * 8).
 *
 * The table is driven directly (index/table.h), the main thread acting as
 * the maintainer: each round it grows the root (x2 or x4) or shrinks it (by 2^k,
 * k = 1..3, never below 1024 buckets), moving homes in chunks of random size
 * with writers and readers running, then swaps the root. Half of the
 * workers' operations aim at keys whose homes are next to be moved (homes
 * are monotonic in the hash's bits 16..47, so such keys are a run of the
 * keys sorted by those bits), where the races are. Keys come in four
 * classes by id % 4: 0 stable (inserted before the start, never touched),
 * 1 and 2 churned by the one writer that owns them (insert, replace by the
 * key's other entry, remove), 3 never inserted. Half the inserts try the
 * plain put's fast insert first (larder__table_home_insert, into the home
 * under its lock, racing other homes' writers for its empty slots). Entries are never freed and
 * old tables are kept until the round's pause, so no grace period is needed.
 *
 * Invariants asserted:
 *   SINDEX-Z1. a reader finds every stable key, never a key of class 3, and any
 *       word it finds is an entry of the key it asked for;
 *   SINDEX-Z2. after each of its operations, a writer finds its key present or
 *       absent (and which entry) exactly as it left it, through the lock-free
 *       lookup and under the home lock;
 *   SINDEX-Z3. at the end of each round (every thread paused), a walk of the root
 *       finds each present key exactly once, with the entry its writer left,
 *       and no absent key; the root has no next;
 *   SINDEX-Z4. no insert needs more than LARDER__PROBE_LIMIT buckets (TABLE-L2) and no
 *       migration drops an entry (the tables stay under half load).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <sched.h>
#include <stdlib.h>

#include "harness.h"
#include "index/table.h"

#define KEY_BYTES 16u
#define MIN_BUCKETS 1024u
#define MAX_SHIFT 3u /* tables of 1024 to 8192 buckets */

static struct {
	uint64_t writers, readers, keys, duration_ms, seed;
} opt;

/* Per key: its hash, its two entries, and (churned keys) which entry its
 * writer left in the index: 0 none, 1 or 2. */
static uint64_t *key_hash;
static struct larder__entry **key_entry; /* [2 * id + 0/1] */
static _Atomic uint8_t *key_state;       /* written by the owner only; read at pauses */

static uint64_t *by_pos; /* key ids sorted by their hash's bits 16..47 */
static _Atomic uint64_t hot_pos; /* bits 16..47 of the next homes to move */

static _Atomic(struct larder__table *) root;
static _Atomic int stop, pause_asked;
static pthread_barrier_t paused, resumed; /* workers + the main thread */
static _Atomic uint64_t reads, writes, fast_inserts, dropped;

struct worker {
	pthread_t thread;
	unsigned id;
};

static struct larder__entry *make_entry(uint64_t id, unsigned which)
{
	struct larder__entry *e = calloc(1, sizeof(*e) + KEY_BYTES);
	if (!e)
		return NULL;
	unsigned char *key = (unsigned char *)(e + 1); /* flags 0: the key follows the header */
	e->key_len = KEY_BYTES;
	memcpy(key, &id, sizeof(id));
	memcpy(key + 8, which ? "index-k2" : "index-k1", 8);
	return e;
}

static uint64_t entry_id(const struct larder__entry *e)
{
	uint64_t id;
	memcpy(&id, larder__entry_key((struct larder__entry *)e), sizeof(id));
	return id;
}

/* The key of id's entry `which`. The two differ in their last 8 bytes: two
 * keys with one hash (same home, same tag), which a lookup tells apart only
 * by comparing keys. */
static const void *key_of(uint64_t id, unsigned which)
{
	return larder__entry_key(key_entry[2 * id + which]);
}

/* The migration's hash callback; it runs while the mover holds the home's
 * lock (and, shrinking, the new home's), so yielding here now and then
 * lets the workers run into that moment. */
static uint64_t hash_of_entry(void *ctx, const struct larder__entry *e)
{
	struct th_rng *rng = ctx;
	if (th_rng_below(rng, 128) == 0)
		sched_yield();
	return key_hash[entry_id(e)];
}

static void drop_entry(void *ctx, struct larder__entry *e)
{
	(void)ctx;
	(void)e;
	atomic_fetch_add_explicit(&dropped, 1, memory_order_relaxed); /* SINDEX-Z4 */
}

static struct larder__table *load_root(void)
{
	/* Acquire: pairs with the release store that published a new root. */
	return atomic_load_explicit(&root, memory_order_acquire);
}

/* Between operations: park while the main thread checks a round (SINDEX-Z3); the
 * barriers order our index changes before its walk, and its frees before
 * our next operation. */
static void pause_point(void)
{
	/* Relaxed: only says when to meet at the barrier, which orders the rest. */
	if (!atomic_load_explicit(&pause_asked, memory_order_relaxed))
		return;
	pthread_barrier_wait(&paused);
	pthread_barrier_wait(&resumed);
}

/*
 * One operation on id by its owner, who keeps at most one of id's two keys
 * in the index: insert one, or replace it by the other in its slot
 * (larder__table_set_locked: same hash, so the slot suits either), or remove
 * it.
 */
static void writer_step(struct th_rng *rng, uint64_t id)
{
	unsigned state = atomic_load_explicit(&key_state[id], memory_order_relaxed); /* ours */
	uint64_t hash = key_hash[id];
	struct larder__table *t;
	struct larder__bucket *home = larder__table_lock(load_root(), hash, &t);
	unsigned next_state;
	if (state == 0) {
		next_state = 1 + (unsigned)th_rng_below(rng, 2);
		CHECK(larder__table_find_locked(t, hash, key_of(id, 0), KEY_BYTES) == NULL);
		CHECK(larder__table_find_locked(t, hash, key_of(id, 1), KEY_BYTES) == NULL);
		struct larder__entry *e = key_entry[2 * id + next_state - 1];
		if (th_rng_below(rng, 2) && !larder__bucket_tag_bits(home, hash) &&
		    larder__table_home_insert(home, larder__slot_word(hash, e)))
			atomic_fetch_add_explicit(&fast_inserts, 1, memory_order_relaxed);
		else
			CHECK_EQ(larder__table_insert_locked(t, hash, larder__slot_word(hash, e),
							     LARDER__PROBE_LIMIT),
				 0); /* SINDEX-Z4 */
	} else {
		larder__atomic_u64 *slot =
			larder__table_find_locked(t, hash, key_of(id, state - 1), KEY_BYTES);
		if (!CHECK(slot != NULL)) { /* SINDEX-Z2 */
			larder__table_unlock(home);
			return;
		}
		if (th_rng_below(rng, 3) == 0) { /* replace by the other entry */
			next_state = 3 - state;
			larder__table_set_locked(
				slot, larder__slot_word(hash, key_entry[2 * id + next_state - 1]));
		} else {
			next_state = 0;
			larder__table_erase_locked(t, hash, slot);
		}
	}
	larder__table_unlock(home);
	atomic_store_explicit(&key_state[id], (uint8_t)next_state, memory_order_relaxed); /* ours */
	/* SINDEX-Z2 through the lock-free lookup, from the root as a reader sees it. */
	for (unsigned which = 0; which < 2; which++) {
		uint64_t w =
			larder__table_lookup_rcu(load_root(), hash, key_of(id, which), KEY_BYTES);
		struct larder__entry *want =
			next_state == which + 1 ? key_entry[2 * id + which] : NULL;
		CHECK(larder__slot_entry(w) == want);
	}
	atomic_fetch_add_explicit(&writes, 1, memory_order_relaxed);
}

static uint64_t hash_pos(uint64_t id)
{
	return (key_hash[id] >> 16) & 0xffffffffu;
}

/* A key id: at random, or (half the time) among the 16 keys whose homes
 * follow the next home to move. */
static uint64_t pick_key(struct th_rng *rng)
{
	if (th_rng_below(rng, 2))
		return th_rng_below(rng, opt.keys);
	/* Relaxed: a hint of where the mover is. */
	uint64_t pos = atomic_load_explicit(&hot_pos, memory_order_relaxed), lo = 0, hi = opt.keys;
	while (lo < hi) {
		uint64_t mid = (lo + hi) / 2;
		if (hash_pos(by_pos[mid]) < pos)
			lo = mid + 1;
		else
			hi = mid;
	}
	return by_pos[(lo + th_rng_below(rng, 16)) % opt.keys];
}

/* Churned keys (class 1 and 2) belong to writer id / 4 % writers. */
static int owns(const struct worker *w, uint64_t id)
{
	return (id % 4 == 1 || id % 4 == 2) && id / 4 % opt.writers == w->id;
}

static void *writer_main(void *arg)
{
	struct worker *w = arg;
	struct th_rng rng = { opt.seed + 1000u * (w->id + 1) };
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pause_point();
		uint64_t id = pick_key(&rng);
		if (owns(w, id))
			writer_step(&rng, id);
	}
	return NULL;
}

static void *reader_main(void *arg)
{
	struct worker *w = arg;
	struct th_rng rng = { opt.seed + 7777u * (w->id + 1) };
	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		pause_point();
		uint64_t id = pick_key(&rng);
		unsigned which = (unsigned)th_rng_below(&rng, 2);
		uint64_t word = larder__table_lookup_rcu(load_root(), key_hash[id],
							 key_of(id, which), KEY_BYTES);
		struct larder__entry *e = larder__slot_entry(word);
		switch (id % 4) { /* SINDEX-Z1 */
		case 0: /* stable: entry 0 only */
			CHECK(e == (which == 0 ? key_entry[2 * id] : NULL));
			break;
		case 3:
			CHECK(e == NULL);
			break;
		default:
			CHECK(e == NULL || e == key_entry[2 * id + which]);
		}
		atomic_fetch_add_explicit(&reads, 1, memory_order_relaxed);
	}
	return NULL;
}

/* One resize of the root with everyone running; returns the old root, or
 * NULL when there was no memory for the new one. */
static struct larder__table *resize(struct th_rng *rng, int grow)
{
	struct larder__table *t = load_root();
	unsigned most = 0;
	while (((t->last + 1) >> (most + 1)) >= MIN_BUCKETS)
		most++;
	/* Growths by 2 and by 4 (TABLE-X3's 2^k: a bulk writer's reserve). */
	int rc = grow ? larder__table_grow_begin(t, 1 + (unsigned)th_rng_below(rng, 2))
		      : larder__table_shrink_begin(t, 1 + (unsigned)th_rng_below(rng, most));
	if (!CHECK_EQ(rc, 0))
		return NULL;
	/* Small chunks: writers and readers meet a half-moved table. */
	do /* Relaxed: a hint for pick_key(). */
		atomic_store_explicit(&hot_pos, (t->moved << 32) / (t->last + 1),
				      memory_order_relaxed);
	while (!larder__table_migrate(t, 1 + th_rng_below(rng, 8), hash_of_entry, drop_entry,
				      rng));
	/* Release: the new table's contents before anyone who loads the root. */
	atomic_store_explicit(&root, larder__table_next(t), memory_order_release);
	return t;
}

struct walk_count {
	uint8_t *seen; /* [2 * id + which] */
	uint64_t foreign;
};

static void count_entry(void *ctx, struct larder__entry *e)
{
	struct walk_count *w = ctx;
	uint64_t id = entry_id(e);
	unsigned which = key_entry[2 * id + 1] == e;
	if (id >= opt.keys || key_entry[2 * id + which] != e)
		w->foreign++;
	else if (w->seen[2 * id + which] < 255)
		w->seen[2 * id + which]++;
}

/* SINDEX-Z3, with every worker parked. */
static void check_round(uint8_t *seen)
{
	struct walk_count w = { seen, 0 };
	struct larder__table *t = load_root();
	memset(seen, 0, 2 * opt.keys);
	CHECK(larder__table_next(t) == NULL);
	larder__table_walk(t, count_entry, &w);
	CHECK_EQ(w.foreign, 0);
	for (uint64_t id = 0; id < opt.keys; id++) {
		/* Relaxed: the barrier ordered the writers' stores before. */
		unsigned state = atomic_load_explicit(&key_state[id], memory_order_relaxed);
		if (id % 4 != 1 && id % 4 != 2)
			state = id % 4 == 0; /* stable: entry 0; never inserted */
		for (unsigned which = 0; which < 2; which++)
			if (!CHECK_EQ(seen[2 * id + which], state == which + 1))
				return;
	}
}

static void run(unsigned n, struct worker *ws)
{
	struct th_rng rng = { opt.seed };
	unsigned grows = 0, shrinks = 0;
	uint8_t *seen = malloc(2 * opt.keys);
	REQUIRE(seen != NULL);
	uint64_t until = th_now_ms() + opt.duration_ms;
	for (uint64_t r = 0; r < 8 || th_now_ms() < until; r++) {
		uint64_t buckets = load_root()->last + 1;
		/* The first 8 rounds alternate, so that both a growth and a
		 * shrink happen however few rounds a loaded machine runs. */
		int grow = buckets == MIN_BUCKETS ||
			   (buckets < (MIN_BUCKETS << MAX_SHIFT) &&
			    (r < 8 ? r % 2 == 0 : th_rng_below(&rng, 2) != 0));
		struct larder__table *old = resize(&rng, grow);
		if (!old)
			break;
		grows += (unsigned)grow;
		shrinks += (unsigned)!grow;
		/* Relaxed: the barriers order everything else. */
		atomic_store_explicit(&pause_asked, 1, memory_order_relaxed);
		pthread_barrier_wait(&paused);
		check_round(seen);
		larder__table_destroy(old); /* nobody can be inside it now */
		atomic_store_explicit(&pause_asked, 0, memory_order_relaxed);
		int failed = th_failures() != 0;
		if (failed)
			atomic_store(&stop, 1);
		pthread_barrier_wait(&resumed);
		if (failed)
			break;
	}
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < n; i++)
		pthread_join(ws[i].thread, NULL);
	printf("stress_index: %u grows, %u shrinks; %" PRIu64 " writes (%" PRIu64
	       " fast inserts), %" PRIu64 " reads\n",
	       grows, shrinks, atomic_load(&writes), atomic_load(&fast_inserts),
	       atomic_load(&reads));
	CHECK_GT(atomic_load(&fast_inserts), 0);
	CHECK_GT(grows, 0);
	CHECK_GT(shrinks, 0);
	CHECK_EQ(atomic_load(&dropped), 0); /* SINDEX-Z4 */
	free(seen);
}

static int by_hash_pos(const void *a, const void *b)
{
	uint64_t x = hash_pos(*(const uint64_t *)a), y = hash_pos(*(const uint64_t *)b);
	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	opt.writers = th_arg_u64(argc, argv, "--writers", 2);
	opt.readers = th_arg_u64(argc, argv, "--readers", 2);
	opt.keys = th_arg_u64(argc, argv, "--keys", 4096);
	opt.duration_ms = th_arg_u64(argc, argv, "--duration-ms", 3000);
	opt.seed = th_arg_seed(argc, argv);
	/* At most 3/4 of the keys present: under half of 1024 buckets' slots. */
	if (opt.writers < 1 || opt.writers > 32 || opt.readers > 32 || opt.keys < 4 * opt.writers ||
	    opt.keys * 3 / 4 > MIN_BUCKETS * LARDER__BUCKET_SLOTS / 2) {
		fprintf(stderr, "stress_index: bad arguments\n");
		return 2;
	}
	printf("stress_index: %" PRIu64 " writers, %" PRIu64 " readers, %" PRIu64
	       " keys, %" PRIu64 " ms\n",
	       opt.writers, opt.readers, opt.keys, opt.duration_ms);
	key_hash = calloc(opt.keys, sizeof(*key_hash));
	key_entry = calloc(2 * opt.keys, sizeof(*key_entry));
	key_state = calloc(opt.keys, sizeof(*key_state));
	struct larder__table *t = larder__table_create(MIN_BUCKETS);
	if (!key_hash || !key_entry || !key_state || !t)
		return 1;
	for (uint64_t id = 0; id < opt.keys; id++) {
		key_hash[id] = th_mix64(opt.seed ^ (id * 0x9e3779b97f4a7c15ull));
		key_entry[2 * id] = make_entry(id, 0);
		key_entry[2 * id + 1] = make_entry(id, 1);
		if (!key_entry[2 * id] || !key_entry[2 * id + 1])
			return 1;
		uint64_t word = larder__slot_word(key_hash[id], key_entry[2 * id]);
		int rc = id % 4 ? 0
				: larder__table_insert_locked(t, key_hash[id], word, LARDER__PROBE_LIMIT);
		if (!CHECK_EQ(rc, 0))
			return 1;
	}
	by_pos = calloc(opt.keys, sizeof(*by_pos));
	if (!by_pos)
		return 1;
	for (uint64_t id = 0; id < opt.keys; id++)
		by_pos[id] = id;
	qsort(by_pos, opt.keys, sizeof(*by_pos), by_hash_pos);
	atomic_store(&root, t);
	unsigned n = (unsigned)(opt.writers + opt.readers);
	if (pthread_barrier_init(&paused, NULL, n + 1) != 0 ||
	    pthread_barrier_init(&resumed, NULL, n + 1) != 0)
		return 1;

	struct worker ws[64];
	for (unsigned i = 0; i < n; i++) {
		ws[i] = (struct worker){ .id = i < opt.writers ? i : i - (unsigned)opt.writers };
		if (pthread_create(&ws[i].thread, NULL, i < opt.writers ? writer_main : reader_main,
				   &ws[i]) != 0) {
			fprintf(stderr, "stress_index: pthread_create failed\n");
			return 1;
		}
	}
	run(n, ws);
	larder__table_destroy(load_root());
	pthread_barrier_destroy(&paused);
	pthread_barrier_destroy(&resumed);
	for (uint64_t id = 0; id < 2 * opt.keys; id++)
		free(key_entry[id]);
	free(key_entry);
	free(key_hash);
	free(by_pos);
	free((void *)key_state);
	long f = th_failures();
	printf("%s (%ld failures)\n", f ? "FAIL" : "PASS", f);
	return f ? 1 : 0;
}
