/*
 * tests/unit/test_races.c - conditional operations racing on one key.
 *
 * Threads released together by a barrier race the same conditional call on
 * the same key, many rounds over. Each call is atomic (larder.h: "publish
 * atomically"; the decision and the store happen under the key's lock), so:
 *   TRACES-R1. put_if_absent on an absent key: exactly one OK, the rest EXISTS, and
 *       the stored value is the winner's;
 *   TRACES-R2. remove of a present key: exactly one OK, the rest MISS;
 *   TRACES-R3. replace_if_equals from the same expected value: exactly one OK, the
 *       rest MISMATCH, and the stored value is the winner's;
 *   TRACES-R4. remove_if_equals with the current value: exactly one OK, the rest
 *       MISS;
 *   TRACES-R5. replace on a present key: all OK, and the final value is one of them;
 *   TRACES-R6. touch giving a TTL to an entry that had none (the entry is copied)
 *       racing with puts: a touch never brings back the value a put replaced.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <stdlib.h>

#include "harness.h"

#define THREADS 4
#define ROUNDS_DEFAULT 10000

enum race_op { RACE_PIA, RACE_REMOVE, RACE_CAS, RACE_RIE, RACE_REPLACE, RACE_TOUCH_PUT };

struct race {
	larder *cache;
	pthread_barrier_t start, done;
	enum race_op op;
	int rounds;
	int rc[THREADS];
};

struct racer {
	struct race *race;
	int id;
};

static int race_call(struct race *r, int id, int round)
{
	char mine[32], expected[32];

	snprintf(mine, sizeof(mine), "r%d-t%d", round, id);
	snprintf(expected, sizeof(expected), "r%d-base", round);
	switch (r->op) {
	case RACE_PIA:
		return larder_put_if_absent(r->cache, "k", 1, mine, strlen(mine), LARDER_TTL_NEVER);
	case RACE_REMOVE:
		return larder_remove(r->cache, "k", 1);
	case RACE_CAS:
		return larder_replace_if_equals(r->cache, "k", 1, expected, strlen(expected), mine,
						strlen(mine), LARDER_TTL_NEVER);
	case RACE_RIE:
		return larder_remove_if_equals(r->cache, "k", 1, expected, strlen(expected));
	case RACE_TOUCH_PUT:
		if (id < THREADS / 2)
			return larder_touch(r->cache, "k", 1, 100000);
		return larder_put(r->cache, "k", 1, mine, strlen(mine), LARDER_TTL_NEVER);
	default:
		return larder_replace(r->cache, "k", 1, mine, strlen(mine), LARDER_TTL_NEVER);
	}
}

static void *racer_thread(void *arg)
{
	struct racer *me = arg;
	struct race *r = me->race;

	for (int round = 0; round < r->rounds; round++) {
		pthread_barrier_wait(&r->start); /* the main thread set the key up */
		r->rc[me->id] = race_call(r, me->id, round);
		pthread_barrier_wait(&r->done);
		pthread_barrier_wait(&r->start); /* the main thread checked the round */
	}
	return NULL;
}

/* Sets the key up for a round: absent for put_if_absent, "rN-base" otherwise. */
static void setup_round(struct race *r, int round)
{
	char base[32];

	snprintf(base, sizeof(base), "r%d-base", round);
	if (r->op == RACE_PIA) {
		int rc = larder_remove(r->cache, "k", 1);
		CHECK(rc == LARDER_OK || rc == LARDER_MISS);
	} else {
		CHECK_RC(larder_put(r->cache, "k", 1, base, strlen(base), LARDER_TTL_NEVER),
			 LARDER_OK);
	}
}

/* Checks a round's results; returns 0 after a failure (to stop the flood). */
static int check_round(struct race *r, int round)
{
	int ok = 0, other = 0, winner = -1, want_other;
	char buf[32], mine[32];
	size_t len = 0;
	int rc;

	/* the losers of a removal find the key gone; of a CAS, the winner's value */
	want_other = r->op == RACE_PIA			       ? LARDER_EXISTS
		     : r->op == RACE_REMOVE || r->op == RACE_RIE ? LARDER_MISS
		     : r->op == RACE_REPLACE || r->op == RACE_TOUCH_PUT ? LARDER_OK
								       : LARDER_MISMATCH;
	for (int i = 0; i < THREADS; i++) {
		if (r->rc[i] == LARDER_OK) {
			ok++;
			winner = i;
		} else if (r->rc[i] == want_other) {
			other++;
		} else {
			th_fail(__FILE__, __LINE__, "round %d thread %d: %d (%s)", round, i, r->rc[i],
				larder_strerror(r->rc[i]));
			return 0;
		}
	}
	if (r->op != RACE_REPLACE && r->op != RACE_TOUCH_PUT && !CHECK_EQ(ok, 1)) {
		printf("  round %d: %d winners\n", round, ok);
		return 0;
	}
	rc = larder_get(r->cache, "k", 1, buf, sizeof(buf), &len);
	if (r->op == RACE_REMOVE || r->op == RACE_RIE)
		return CHECK_RC(rc, LARDER_MISS);
	if (!CHECK_RC(rc, LARDER_OK))
		return 0;
	if (r->op == RACE_REPLACE || r->op == RACE_TOUCH_PUT) {
		/* the last writer's value, whoever that was; never the base value */
		int found = 0;
		for (int i = r->op == RACE_TOUCH_PUT ? THREADS / 2 : 0; i < THREADS; i++) {
			snprintf(mine, sizeof(mine), "r%d-t%d", round, i);
			found |= len == strlen(mine) && memcmp(buf, mine, len) == 0;
		}
		return CHECK(found);
	}
	snprintf(mine, sizeof(mine), "r%d-t%d", round, winner);
	return CHECK(len == strlen(mine) && memcmp(buf, mine, len) == 0);
}

static void run_race(enum race_op op)
{
	struct race r;
	struct racer racers[THREADS];
	pthread_t ids[THREADS];
	int healthy = 1;

	memset(&r, 0, sizeof(r));
	r.cache = th_open(th_config(1024 * 1024));
	REQUIRE(r.cache != NULL);
	r.op = op;
	r.rounds = TH_TSAN ? ROUNDS_DEFAULT / 10 : ROUNDS_DEFAULT;
	pthread_barrier_init(&r.start, NULL, THREADS + 1);
	pthread_barrier_init(&r.done, NULL, THREADS + 1);
	for (int i = 0; i < THREADS; i++) {
		racers[i] = (struct racer){&r, i};
		REQUIRE(pthread_create(&ids[i], NULL, racer_thread, &racers[i]) == 0);
	}
	for (int round = 0; round < r.rounds; round++) {
		setup_round(&r, round);
		pthread_barrier_wait(&r.start);
		pthread_barrier_wait(&r.done);
		if (healthy)
			healthy = check_round(&r, round);
		pthread_barrier_wait(&r.start);
	}
	for (int i = 0; i < THREADS; i++)
		pthread_join(ids[i], NULL);
	th_check_accounting(r.cache, 60000, NULL, NULL);
	pthread_barrier_destroy(&r.start);
	pthread_barrier_destroy(&r.done);
	larder_close(r.cache);
}

static void test_race_put_if_absent(void)
{
	run_race(RACE_PIA);
}

static void test_race_remove(void)
{
	run_race(RACE_REMOVE);
}

static void test_race_replace_if_equals(void)
{
	run_race(RACE_CAS);
}

static void test_race_remove_if_equals(void)
{
	run_race(RACE_RIE);
}

static void test_race_replace(void)
{
	run_race(RACE_REPLACE);
}

static void test_race_touch_put(void)
{
	run_race(RACE_TOUCH_PUT);
}

int main(int argc, char **argv)
{
	static const struct th_test tests[] = {
		TH_TEST(test_race_put_if_absent),
		TH_TEST(test_race_remove),
		TH_TEST(test_race_replace_if_equals),
		TH_TEST(test_race_remove_if_equals),
		TH_TEST(test_race_replace),
		TH_TEST(test_race_touch_put),
	};
	return th_main(argc, argv, tests, TH_COUNT(tests));
}
