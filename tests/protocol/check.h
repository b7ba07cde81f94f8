/*
 * check.h - the CHECK macro of the protocol parsers' unit tests
 * (test_parse.c, test_binparse.c): a failed check is printed with its
 * place and a message and counted in the including file's `failures`; the
 * test goes on, so one run reports every failed check.
 */
#ifndef LARDERD_TEST_CHECK_H
#define LARDERD_TEST_CHECK_H

#include <stdio.h>

static int failures;

#define CHECK(cond, ...)                                                                     \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			failures++;                                                          \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, __LINE__, #cond); \
			fprintf(stderr, __VA_ARGS__);                                        \
			fputc('\n', stderr);                                                 \
		}                                                                            \
	} while (0)

#endif
