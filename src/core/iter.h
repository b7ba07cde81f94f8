/*
 * core/iter.h - the engine's own use of cursors (core/iter.c): the range mode.
 */
#ifndef LARDER_CORE_ITER_H
#define LARDER_CORE_ITER_H

#include "larder.h"

/* Whether the range mode may hand out one more entry in this call (called
 * inside the read section: it must only look at ctx). */
typedef int larder__iter_more_fn(void *ctx);

/*
 * Hands the live entries of the cursor's next range to fn, inside one read
 * section (fn must only copy), and moves past the range; after the first
 * entry of a call, only as long as more(ctx) says yes: the range's others
 * wait, and the next calls hand them out (each looked up again), then go
 * on to the next range (ITER-I5 in core/iter.c). Returns LARDER_OK (zero or
 * more calls were made), LARDER_MISS once the whole cache has been
 * covered, or LARDER_ENOMEM (the range's keys could not be collected, or
 * a compressed value found no decompression buffer: a retry goes on from
 * there, that key looked up again, and hands out no entry twice).
 * Not to be mixed with larder_iter_next() on the same cursor. The promises
 * are core/iter.c's, with ITER-I3 as the range mode states it.
 */
int larder__iter_next_range(larder_iter *it, larder_iter_fn *fn, larder__iter_more_fn *more,
			    void *ctx);

#endif /* LARDER_CORE_ITER_H */
