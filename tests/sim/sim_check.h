/*
 * tests/sim/sim_check.h - the few helpers the policy unit tests share: a
 * CHECK that prints file:line and a message and ends the calling test, a
 * seeded xorshift generator, and the exit status.
 */
#ifndef LARDER_TESTS_SIM_CHECK_H
#define LARDER_TESTS_SIM_CHECK_H

#include <stdint.h>
#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                  \
	do {                                                                              \
		if (!(cond)) {                                                            \
			fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);              \
			fprintf(stderr, __VA_ARGS__);                                     \
			fprintf(stderr, "\n");                                            \
			failures++;                                                       \
			return;                                                           \
		}                                                                         \
	} while (0)

static uint64_t rng_state;

static inline uint64_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* Prints the verdict; the process's exit status. */
static inline int sim_check_result(void)
{
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}

#endif /* LARDER_TESTS_SIM_CHECK_H */
