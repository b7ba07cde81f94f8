/*
 * tests/stress/stress_spill.c - writers whose event rings overflow into
 * their spills while the maintainer cannot run (run it under
 * ThreadSanitizer and AddressSanitizer too).
 *
 * Usage: larder_stress_spill [--writers N] [--rounds N] [--keys N] [--seed N]
 * Defaults: 4 writers, 12 rounds (6 under a sanitizer), 512 keys per writer.
 *
 * Each round stalls the maintainer inside its removal listener (the main
 * thread replaces the key "gate"; the listener's call for it blocks until
 * the round releases it), then starts fresh writer threads, so each has an
 * empty ring. Every writer owns its keys and overwrites or removes them,
 * each value carrying the key's version. Rounds come in three kinds:
 *   stalled   LARDER__EVENT_RING + LARDER__SPILL_WRITER_MAX / 2 events per
 *             writer while the maintainer is stalled: no write waits, and
 *             exactly LARDER__SPILL_WRITER_MAX / 2 of each writer's spill;
 *   bound     past ring + bound: each writer waits at the bound (the main
 *             thread polls maintainer_waits until every writer waits, then
 *             releases the listener) and all its writes succeed;
 *   released  the listener is released once every writer has spilled, and
 *             the writers go on for four bounds' worth while the maintainer
 *             drains: its drains meet spilled events and ring events posted
 *             after them, which it must apply in posting order.
 * Threads exit with spills the maintainer may not have read yet, so it
 * dismantles handles that spilled. In a cache of several shards
 * (LARDER_TEST_SHARDS, th_config) every writer key carries a salt that puts
 * it in the shard of "gate", whose maintainer the stall holds.
 *
 * Invariants asserted:
 *   SSPILL-P1. the spill takes exactly the events beyond the ring, and no write
 *       waits below the bound (stalled rounds);
 *   SSPILL-P2. at the bound a writer waits and then succeeds: no LARDER_EBUSY
 *       (busy_events 0), every writer counted in maintainer_waits;
 *   SSPILL-P3. one writer's events are applied in its order (EV-V4): the
 *       listener hears each key's superseded versions in increasing order,
 *       each exactly once (a replacement or a removal), nothing else;
 *   SSPILL-P4. last writer wins: each key reads its writer's last version, or
 *       misses when its last operation removed it;
 *   SSPILL-P5. the counters agree with a walk of the index, the policy's
 *       links hold, and the memory audit adds up (th_check_memory_audit).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "core/cache.h"
#include "core/hash.h"
#include "harness.h"
#include "maint/handle.h"

#define MAX_WRITERS 16u
#define VALUE_MAX 200u

static struct {
	uint64_t writers, rounds, keys, seed;
} opt;

/* The stall: the listener's call for "gate" signals `entered` and blocks
 * until `release`; both are re-armed per round. */
static struct th_event entered, release;

/* Per key, written by the owning writer only (between rounds, read by the
 * main thread after joining it). */
struct key_model {
	uint64_t version; /* last version put (0: never) */
	int present;
};

/* Per key, written by the listener (the maintainer thread) only, read by
 * the main thread after a quiesce; relaxed atomics, ordered by it. */
struct key_heard {
	_Atomic uint64_t last; /* highest superseded version heard */
	_Atomic uint64_t count;
};

static struct key_model *model;
static struct key_heard *heard;
static unsigned *salt; /* per key: puts it in the shard of "gate" */
static _Atomic uint64_t heard_bad; /* out of order, unknown key, other cause */

struct writer {
	pthread_t thread;
	larder *cache;
	unsigned id;
	uint64_t ops;
	struct th_rng rng;
	long failed;
};

static size_t key_of(char *buf, size_t cap, unsigned w, uint64_t k)
{
	return (size_t)snprintf(buf, cap, "w%u:k%" PRIu64 ":%u", w, k, salt[w * opt.keys + k]);
}

/* Out of line: inlined with a constant length, XXH3's branches for other
 * lengths make gcc warn about reads past the key (-Warray-bounds). */
static __attribute__((noinline)) unsigned shard_of_key(const larder *cache, const char *key,
							size_t len)
{
	return (unsigned)(larder__hash(cache->seed, key, len) & cache->shard_mask);
}

/* Each key's salt: the first that puts it in the shard of "gate". */
static void choose_salts(const larder *cache)
{
	char key[48];
	unsigned gate = shard_of_key(cache, "gate", 4);
	for (unsigned w = 0; w < opt.writers; w++) {
		for (uint64_t k = 0; k < opt.keys; k++) {
			unsigned *s = &salt[w * opt.keys + k];
			for (*s = 0; shard_of_key(cache, key, key_of(key, sizeof(key), w, k)) != gate;)
				++*s;
		}
	}
}

/* The value of version v of a key: the version, then filler of a length
 * the version picks. */
static size_t value_of(unsigned char *buf, uint64_t v)
{
	size_t len = 8 + (size_t)(th_mix64(v) % (VALUE_MAX - 8));
	memcpy(buf, &v, 8);
	memset(buf + 8, (int)(v & 0x7f), len - 8);
	return len;
}

static void listener(void *ctx, const void *key, size_t key_len, const void *value,
		     size_t value_len, enum larder_cause cause)
{
	unsigned w;
	uint64_t k, v;
	char name[48];

	(void)ctx;
	if (key_len == 4 && memcmp(key, "gate", 4) == 0) {
		th_event_signal(&entered);
		CHECK(th_event_wait(&release, 120000));
		return;
	}
	if (key_len >= sizeof(name) || value_len < 8 ||
	    (cause != LARDER_CAUSE_REPLACED && cause != LARDER_CAUSE_EXPLICIT)) {
		atomic_fetch_add_explicit(&heard_bad, 1, memory_order_relaxed);
		return;
	}
	memcpy(name, key, key_len);
	name[key_len] = '\0';
	if (sscanf(name, "w%u:k%" SCNu64, &w, &k) != 2 || w >= opt.writers || k >= opt.keys) {
		atomic_fetch_add_explicit(&heard_bad, 1, memory_order_relaxed);
		return;
	}
	memcpy(&v, value, 8);
	struct key_heard *h = &heard[w * opt.keys + k];
	/* Relaxed: this thread is the only writer; the main thread reads after a quiesce. */
	if (v <= atomic_load_explicit(&h->last, memory_order_relaxed))
		atomic_fetch_add_explicit(&heard_bad, 1, memory_order_relaxed); /* SSPILL-P3 */
	atomic_store_explicit(&h->last, v, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->count, 1, memory_order_relaxed);
}

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	char key[48];
	unsigned char value[VALUE_MAX];

	for (uint64_t i = 0; i < wr->ops; i++) {
		uint64_t k = th_rng_below(&wr->rng, opt.keys);
		struct key_model *m = &model[wr->id * opt.keys + k];
		size_t klen = key_of(key, sizeof(key), wr->id, k);
		int rc;
		if (m->present && th_rng_below(&wr->rng, 8) == 0) {
			rc = larder_remove(wr->cache, key, klen);
			if (rc == LARDER_OK)
				m->present = 0;
		} else {
			size_t vlen = value_of(value, m->version + 1);
			rc = larder_put(wr->cache, key, klen, value, vlen, LARDER_TTL_NEVER);
			if (rc == LARDER_OK) {
				m->version++;
				m->present = 1;
			}
		}
		if (rc != LARDER_OK) {
			wr->failed++;
			th_fail(__FILE__, __LINE__, "writer %u op %" PRIu64 ": %d", wr->id, i, rc);
		}
	}
	return NULL;
}

/* A statistic to poll until it reaches goal. */
struct stat_goal {
	larder *cache;
	enum larder_stat stat;
	uint64_t goal;
};

static int stat_reached(void *ctx)
{
	struct stat_goal *g = ctx;
	return th_stat(g->cache, g->stat) >= g->goal;
}

/* The kinds of round (module comment). */
enum round_kind { ROUND_STALLED, ROUND_BOUND, ROUND_RELEASED, ROUND_KINDS };

static void round_run(larder *cache, uint64_t round, struct writer *wr)
{
	enum round_kind kind = (enum round_kind)(round % ROUND_KINDS);
	uint64_t ops = LARDER__EVENT_RING + (kind == ROUND_BOUND ? LARDER__SPILL_WRITER_MAX + 256
								 : LARDER__SPILL_WRITER_MAX / 2);
	uint64_t spilled0 = th_stat(cache, LARDER_STAT_EVENTS_SPILLED);
	uint64_t waits0 = th_stat(cache, LARDER_STAT_MAINT_WAITS);
	char gate[24];

	if (kind == ROUND_RELEASED)
		ops += 4 * LARDER__SPILL_WRITER_MAX;
	th_event_init(&entered);
	th_event_init(&release);
	/* Replacing "gate" makes the listener block the maintainer. */
	snprintf(gate, sizeof(gate), "%" PRIu64, round);
	CHECK_RC(larder_put(cache, "gate", 4, gate, strlen(gate), LARDER_TTL_NEVER), LARDER_OK);
	if (!CHECK(th_event_wait(&entered, 60000)))
		return;
	for (unsigned w = 0; w < opt.writers; w++) {
		wr[w].ops = ops;
		if (pthread_create(&wr[w].thread, NULL, writer_main, &wr[w]) != 0) {
			th_fail(__FILE__, __LINE__, "pthread_create");
			exit(1);
		}
	}
	if (kind == ROUND_BOUND) {
		/* SSPILL-P2: every writer reaches the bound and waits. */
		struct stat_goal g = {cache, LARDER_STAT_MAINT_WAITS, waits0 + opt.writers};
		CHECK(th_wait_until(stat_reached, &g, 60000));
		th_event_signal(&release);
	} else if (kind == ROUND_RELEASED) {
		/* The maintainer drains while the writers go on spilling: its
		 * drains meet spills and ring events posted in between. */
		struct stat_goal g = {cache, LARDER_STAT_EVENTS_SPILLED, spilled0 + opt.writers * 256};
		CHECK(th_wait_until(stat_reached, &g, 60000));
		th_event_signal(&release);
	}
	for (unsigned w = 0; w < opt.writers; w++)
		pthread_join(wr[w].thread, NULL);
	uint64_t spilled = th_stat(cache, LARDER_STAT_EVENTS_SPILLED) - spilled0;
	if (kind == ROUND_STALLED) {
		/* SSPILL-P1: the maintainer stalled all along, the rings started
		 * empty: exactly the events past each ring spilled, none waited. */
		CHECK_EQ(spilled, opt.writers * (LARDER__SPILL_WRITER_MAX / 2));
		CHECK_EQ(th_stat(cache, LARDER_STAT_MAINT_WAITS), waits0);
		th_event_signal(&release);
	} else if (kind == ROUND_BOUND) {
		CHECK_GE(spilled, opt.writers * LARDER__SPILL_WRITER_MAX);
	}
	/* The listener has returned before the next round re-arms the events. */
	CHECK_EQ(th_quiesce(cache, 60000), 0);
	th_event_destroy(&entered);
	th_event_destroy(&release);
}

/* SSPILL-P3, SSPILL-P4 on a quiescent cache. */
static void check_keys(larder *cache)
{
	char key[48];
	unsigned char want[VALUE_MAX], got[VALUE_MAX];
	uint64_t wrong_value = 0, wrong_heard = 0;

	for (unsigned w = 0; w < opt.writers; w++) {
		for (uint64_t k = 0; k < opt.keys; k++) {
			struct key_model *m = &model[w * opt.keys + k];
			struct key_heard *h = &heard[w * opt.keys + k];
			size_t klen = key_of(key, sizeof(key), w, k), len = 0;
			int rc = larder_get(cache, key, klen, got, sizeof(got), &len);
			if (m->present) {
				size_t wlen = value_of(want, m->version);
				wrong_value += rc != LARDER_OK || len != wlen ||
					       memcmp(got, want, wlen) != 0;
			} else {
				wrong_value += rc != LARDER_MISS;
			}
			/* Every version but a present key's last one was superseded. */
			uint64_t left = m->version - (m->present ? 1 : 0);
			uint64_t last = m->present ? m->version - 1 : m->version;
			wrong_heard += atomic_load_explicit(&h->count, memory_order_relaxed) != left ||
				       atomic_load_explicit(&h->last, memory_order_relaxed) != last;
		}
	}
	CHECK_EQ(wrong_value, 0);
	CHECK_EQ(wrong_heard, 0);
	CHECK_EQ(atomic_load(&heard_bad), 0);
}

static void test_spill_rounds(void)
{
	larder_config *config = th_config(256 * MiB);
	struct writer wr[MAX_WRITERS];

	REQUIRE(config != NULL);
	CHECK_RC(larder_config_set_removal_listener(config, listener, NULL), LARDER_OK);
	larder *cache = th_open(config);
	REQUIRE(cache != NULL);
	model = calloc(opt.writers * opt.keys, sizeof(*model));
	heard = calloc(opt.writers * opt.keys, sizeof(*heard));
	salt = calloc(opt.writers * opt.keys, sizeof(*salt));
	REQUIRE(model != NULL && heard != NULL && salt != NULL);
	choose_salts(cache);
	CHECK_RC(larder_put(cache, "gate", 4, "-", 1, LARDER_TTL_NEVER), LARDER_OK);
	for (unsigned w = 0; w < opt.writers; w++) {
		wr[w].cache = cache;
		wr[w].id = w;
		wr[w].rng.s = th_mix64(opt.seed + w);
		wr[w].failed = 0;
	}
	for (uint64_t r = 0; r < opt.rounds && th_failures() == 0; r++)
		round_run(cache, r, wr);
	th_check_accounting(cache, 60000, NULL, NULL); /* SSPILL-P5 */
	th_check_memory_audit(cache);
	check_keys(cache);
	CHECK_EQ(th_stat(cache, LARDER_STAT_BUSY_EVENTS), 0); /* SSPILL-P2 */
	CHECK_EQ(th_stat(cache, LARDER_STAT_WRITE_BUSY), 0);
	printf("  %" PRIu64 " rounds x %" PRIu64 " writers: %" PRIu64 " events spilled, %" PRIu64
	       " maintainer waits\n",
	       opt.rounds, opt.writers, th_stat(cache, LARDER_STAT_EVENTS_SPILLED),
	       th_stat(cache, LARDER_STAT_MAINT_WAITS));
	larder_close(cache);
	free(model);
	free(heard);
	free(salt);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_spill_rounds),
	};
	opt.writers = th_arg_u64(argc, argv, "--writers", 4);
	opt.rounds = th_arg_u64(argc, argv, "--rounds", TH_TSAN || TH_ASAN ? 6 : 12);
	opt.keys = th_arg_u64(argc, argv, "--keys", 512);
	opt.seed = th_arg_seed(argc, argv);
	if (opt.writers < 1 || opt.writers > MAX_WRITERS || opt.keys < 1 || opt.rounds < 1) {
		fprintf(stderr, "stress_spill: 1..%u writers, at least 1 key and 1 round\n",
			MAX_WRITERS);
		return 2;
	}
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
