/*
 * core/iter.h - the engine's own use of cursors (core/iter.c): the range mode.
 */
#ifndef LARDER_CORE_ITER_H
#define LARDER_CORE_ITER_H

#include "larder.h"

/*
 * Hands every live entry of the cursor's next range to fn, inside one read
 * section (fn must only copy), and moves past the range. Returns LARDER_OK
 * (zero or more calls were made), LARDER_MISS once the whole cache has been
 * covered, or LARDER_ENOMEM (the cursor stays: a retry repeats the range,
 * whose entries before the failure - a compressed value that found no
 * decompression buffer - were handed out already).
 * Not to be mixed with larder_iter_next() on the same cursor. The promises
 * are core/iter.c's, with ITER-I3 as the range mode states it.
 */
int larder__iter_next_range(larder_iter *it, larder_iter_fn *fn, void *ctx);

#endif /* LARDER_CORE_ITER_H */
