/*
 * evict/wtinylfu.h - W-TinyLFU with a chosen initial window and window
 * control, for the tuner's mini caches and the adaptive default.
 */
#ifndef LARDER_EVICT_WTINYLFU_H
#define LARDER_EVICT_WTINYLFU_H

#include "evict/policy.h"

enum larder__window_control {
	LARDER__WINDOW_FIXED = 0, /* the window stays where it is put */
	LARDER__WINDOW_CLIMB = 1, /* Caffeine's hill climber */
	LARDER__WINDOW_TUNED = 2, /* mini simulations pick it (evict/tuner.c) */
};

/* W-TinyLFU whose window the tuner picks; not (yet) behind an enum value. */
extern const struct larder__policy_ops larder__policy_wtinylfu_tuned;

int larder__wtinylfu_create(struct larder__policy **out, const struct larder__policy_host *host,
			    uint64_t capacity_bytes, uint64_t expected_entries,
			    unsigned window_permille, enum larder__window_control control);

#endif /* LARDER_EVICT_WTINYLFU_H */
