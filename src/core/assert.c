/*
 * core/assert.c - what a failed LARDER__ASSERT does (core/assert.h).
 *
 * Built in every flavour so that the library's symbols do not depend on the
 * option; only a build with LARDER_ASSERTS calls it.
 */
#include "core/assert.h"

#include <stdio.h>
#include <stdlib.h>

_Noreturn void larder__assert_fail(const char *file, int line, const char *cond)
{
	/* One fprintf: the line reaches stderr whole even if threads race here. */
	fprintf(stderr, "larder: %s:%d: assertion failed: %s\n", file, line, cond);
	abort();
}
